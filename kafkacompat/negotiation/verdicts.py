"""Will this client work with that broker?  Verdicts from a client profile and broker ranges.

Theory.  A client works with a cluster when, for every API it uses, the
version it would send is one every broker accepts and the cluster lets it
use.  The rules, in the order they are tried for each API and each broker:

1. ``api-missing``: the broker does not list the API at all (KIP-35: what is
   not advertised cannot be sent).
2. ``no-common-version``: a client that picks the highest version in common
   has none in common with the broker; ``removed-in-4``: the same, when the
   versions the client can write were removed by Kafka 4.0 (KIP-896).
3. ``fixed-version-not-accepted``: a client that sends a fixed version (it
   ignores ApiVersions for that API) sends one outside the broker's range;
   ``removed-in-4`` again when 4.x removed it.
4. ``advertised-but-refused``: the broker advertises the version but refuses
   it (Produce v0-2 on 4.x: advertised for the sake of old clients'
   ApiVersions checks, refused when sent; KAFKA-18659).
5. ``feature-gated``: the version needs a finalized feature level the cluster
   does not have (``feature_gates``: transaction.version >= 2 for Produce v12+
   in a transaction, TxnOffsetCommit v5+ and EndTxn v5+; group.version >= 1
   for ConsumerGroupHeartbeat/Describe; share.version >= 1 for the Share
   APIs).  A client that obeys the gates (``obeys_feature_gates``: kafkacompat
   itself) is judged with kafkacompat's own picker,
   ``capabilities.pick_version``, so its verdict and its connections pick
   the same version; it breaks here only when the gates leave it none.  Where
   a gated API has a classic fallback the client also uses (DescribeGroups
   for ConsumerGroupDescribe, JoinGroup for ConsumerGroupHeartbeat), the
   finding is a warning.

0. ApiVersions is the negotiation itself, not an API a client can break on
   while the broker has it: a client that asks a version the broker lacks
   is answered UNSUPPORTED_VERSION with the broker's range and steps down
   (KIP-35, KIP-511), as every measured client does; unless the broker is
   look-alike software whose answer to that version is not Kafka's (rule 6:
   librdkafka 2.0.2's mock answers ApiVersions v3 and above in a layout no
   client reads).

6. ``lookalike-deviation``: the broker is identified as look-alike software
   (``lookalikes.identify``: its ApiVersions answer is one measured from that
   software) that answers the version the client would send otherwise than
   Kafka does (Tansu answers JoinGroup v0-v3 with MEMBER_ID_REQUIRED, which
   Kafka sends only from v4, KIP-394): the client fails there.

   Where the client release was itself measured against that software
   (its profile's ``recorded.against``; ``measured_runs``), the measurement
   is the verdict: it got through, or it breaks where it stopped
   (``measured-on-lookalike``), since a look-alike's deviations are not all
   foreseeable from a table; the findings of the rules above come with it,
   since a run that gets further another time (a look-alike's quirk need not
   bite every time) stops at those.

7. A broker without ApiVersions (before KIP-35: 0.9 and older) gets no
   guess from ranges: what a client does there is its own choice (give up,
   or infer an old release and go on), so only a measurement says.  Without
   one for this client the verdict is "could not tell" (``pre-kip-35``),
   with that reason.  With one (``without_api_versions``: its traffic
   against a real 0.9.0.1) the measurement is the verdict for that broker:
   it got through (``api-versions-fallback``, a warning), gave up waiting on
   ApiVersions (``api-missing``), or went on and stopped at its last
   request: ``client-refuses-era`` when the broker answered it and the
   client sent nothing more (an admin client refusing the 0.9 era),
   ``fallback-not-answered`` when the broker left it unanswered, closed on
   it or returned an error.

8. ``client-cannot-send``: the profile says the client cannot write the API
   at all (``min`` above ``max``): measured, it failed the step that needs
   it against every broker, without sending it (sarama 1.40.1's default
   protocol version has no DeleteGroups).  It breaks wherever that API is
   required, whatever the broker offers.

9. ``unsupported-client-release`` (a warning, ``verdict_evidence``): Apache
   Kafka's Java client before 2.1 against Kafka 4.x, outside the releases
   KIP-1124 says 4.x supports; the versions it sends are judged as above.

How a client picks a version (``pick``), as measured against brokers that
offer different ranges: ``highest`` (the highest in common with the
broker's offer), ``fixed`` (one version whatever it is offered) or
``release-table`` (it infers the broker's release from ApiVersions and
sends what its own table says for that release: kafka-python, for one).  A
release-table client's measured picks (``by_release``) bracket what it
sends to a release between two measured ones (its table only grows with the
release); beyond the last measured release it may send up to its max.

A profile's required APIs are those the client cannot proceed without;
telemetry (GetTelemetrySubscriptions, PushTelemetry, KIP-714) never is: a
client uses it only where the broker offers it (``NEVER_REQUIRED``).

A finding on an API the profile marks required breaks the client; otherwise
it is a warning.  A recorded profile knows only the versions it saw: its
``min`` is a bound (``min_exact`` false) and so, where the client sent the
broker's max, is its ``max`` (``max_exact`` false); a verdict that hangs on
versions beyond them is "could not tell", never a guess.  When the answer depends on something unknown (the
cluster's finalized features were not reported, or a recorded profile's max
is only a lower bound on a gated API), the finding is ``unknown``: the verdict
is "could not tell" unless something else breaks.  Every finding names the
API, the client's and the broker's ranges, the rule and its source.

Removal facts are read in ``removed_in_4`` alone, from the codec's generated
KIP-896 data (``kafkacompat.reference.removals``): versions 4.0 removed, the
one exception 4.x advertises but refuses (Produce v0-2, KAFKA-18659), and the
Share APIs' early-access v0 dropped in 4.1 (KAFKA-19057).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.feature_gates import gates_for, level_of
from kafkacompat.negotiation.measured_runs import measured_runs
from kafkacompat.negotiation.silent_broker import API_VERSIONS as _API_VERSIONS
from kafkacompat.negotiation.silent_broker import SilentBrokerRun, silent_broker_run
from kafkacompat.negotiation.verdict_evidence import before_kip_35, measured_on_lookalike, outside_kip_1124
from kafkacompat.negotiation.verdict_types import (
    NEVER_REQUIRED,
    BrokerSide,
    ClientEntry,
    ClientSide,
    Finding,
    Pick,
    Rule,
    Severity,
    Verdict,
)
from kafkacompat.protocol.removals import describe_removal, follows_kip_896, refused_by, release_order
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.api_names import API_NAMES

__all__ = [
    "NEVER_REQUIRED",
    "BrokerSide",
    "ClientEntry",
    "ClientSide",
    "Finding",
    "SilentBrokerRun",
    "Verdict",
    "client_side",
    "judge",
    "removed_in_4",
    "worst",
]

_FALLBACKS = {69: 15, 68: 11}  # KIP-848 API -> the classic one clients fall back to


# -- facts ---------------------------------------------------------------------------------


_SOURCES = {
    "kip-896": "KIP-896",
    "advertised-rejected": "KIP-896, KAFKA-18659",
    "early-access": "KAFKA-19057",
    "retired": "KIP-896",
}


def removed_in_4(broker: BrokerSide, api_key: int, version: int) -> tuple[str, bool, str] | None:
    """Whether Kafka 4.x removed this version for this broker: ``(what, still advertised, source)``.

    The one place removal facts are read: the codec's generated KIP-896 data
    (``kafkacompat.reference.removals``, through ``protocol.removals.refused_by``),
    for a broker whose release is known, or, when it is not, that follows
    KIP-896 by what it advertises.
    """
    if broker.release is None and not follows_kip_896(broker.apis):
        return None
    fact = refused_by(broker.release, api_key, version)
    if fact is None:
        return None
    return describe_removal(fact, version), fact.kind == "advertised-rejected", _SOURCES[fact.kind]


# -- judging -------------------------------------------------------------------------------


def client_side(profile: Mapping[str, Any]) -> ClientSide:
    """A client-format profile (``pipeline.client_format``) as verdicts read it."""
    entries = {}
    for e in profile["api_versions"]:
        picked = e.get("pick")
        pick: Pick = picked if picked in ("fixed", "release-table") else "highest"
        table = tuple((str(t["release"]), int(t["version"])) for t in e.get("by_release") or ())
        if pick == "release-table" and not table:
            raise ValueError(f"api key {e['api_key']}: a release-table pick without by_release")
        entries[e["api_key"]] = ClientEntry(
            e["api_key"],
            VersionRange(e["min"], e["max"]),
            pick,
            bool(e.get("max_exact", True)),
            bool(e.get("required", False)) and e["api_key"] not in NEVER_REQUIRED,
            bool(e.get("min_exact", True)),
            table,
        )
    return ClientSide(
        str(profile["client"]),
        str(profile["version"]),
        entries,
        bool(profile.get("obeys_feature_gates", False)),
        silent_broker_run(profile.get("without_api_versions")),
        measured_runs(profile.get("recorded")),
    )



def judge(client: ClientSide, brokers: Sequence[BrokerSide], target: str | None = None) -> Verdict:
    """The verdict for ``client`` against every broker of a cluster (all must accept it)."""
    findings: list[Finding] = []
    picks: dict[str, dict[int, int | None]] = {}
    for broker in brokers:
        chosen = picks.setdefault(broker.label, {})
        if not broker.has_api_versions:
            findings.extend(before_kip_35(client, broker, chosen))
            continue
        run = client.measured_on.get(broker.software.label) if broker.software is not None else None
        if run is not None and run.ok:
            continue  # measured getting through on that very software
        by_ranges: list[Finding] = []
        for key, entry in sorted(client.entries.items()):
            version, found = _judge_api(client, entry, broker)
            chosen[key] = version
            by_ranges.extend(found)
        if run is not None:  # where it stopped, measured; and what the ranges say would stop it later
            findings.extend(measured_on_lookalike(client, broker, run, chosen))
        findings.extend(by_ranges)
        too_old = outside_kip_1124(client, broker)
        if too_old is not None:
            findings.append(too_old)
    return Verdict(client.label, target or ", ".join(b.label for b in brokers), tuple(findings), picks)


def _judge_api(
    client: ClientSide, entry: ClientEntry, broker: BrokerSide
) -> tuple[int | None, list[Finding]]:
    key = entry.api_key
    offered = broker.apis.get(key)

    def finding(rule: Rule, version: int | None, source: str, message: str, severe: bool = True) -> Finding:
        severity: Severity = "breaks" if severe and entry.required else "warns"
        return Finding(
            key,
            API_NAMES.get(key, f"UnknownApi{key}"),
            broker.label,
            entry.versions,
            offered,
            version,
            rule,
            severity,
            source,
            message,
        )

    name = API_NAMES.get(key, f"api key {key}")
    fallback = _FALLBACKS.get(key)
    has_fallback = fallback is not None and fallback in client.entries
    if offered is None or offered.empty:
        message = f"{broker.label} does not have {name}"
        if has_fallback:
            message += f" (the client also uses {API_NAMES.get(fallback or 0)}, its fallback)"
        return None, [finding("api-missing", None, "KIP-35", message, not has_fallback)]
    if entry.versions.empty:  # measured refusing it itself, whatever the broker offers
        text = (
            f"the client does not send {name} at all: measured, it failed the step that needs it "
            "without sending it, against every broker"
        )
        return None, [finding("client-cannot-send", None, "measured (kafkacompat.profiles)", text)]
    if key == _API_VERSIONS:  # the negotiation itself: the client steps down to what it is offered
        asked = entry.versions.highest
        deviation = broker.software.deviation(key, asked) if broker.software is not None else None
        if deviation is not None and asked > offered.highest:  # the answer to step down by is not Kafka's
            text = (
                f"{broker.label} is {broker.software.label if broker.software else ''}: it answers {name} "
                f"v{asked} with {deviation.answer}; {deviation.kafka_does}"
            )
            return asked, [finding("lookalike-deviation", asked, deviation.source, text)]
        return min(asked, offered.highest), []
    if entry.pick == "release-table":
        return _release_table(client, entry, broker, finding)
    if entry.pick == "fixed":
        # A fixed client sends what it was recorded sending: both ends of its range were sent.
        refused = [v for v in (entry.versions.lowest, entry.versions.highest) if v not in offered]
        version = refused[0] if refused else entry.versions.highest
        removed = removed_in_4(broker, key, version) if refused else None
        if removed is not None:
            text = f"{removed[0]}; {broker.label} accepts {offered}"
            return version, [finding("removed-in-4", version, removed[2], text)]
        if refused and version > offered.highest and not entry.min_exact:
            text = (
                f"the client was recorded sending {name} v{version} to newer brokers only; whether it "
                f"goes down to {offered} for {broker.label} was not recorded"
            )
            return version, [_as_unknown(finding("fixed-version-not-accepted", version, "KIP-35", text))]
        if refused:
            text = (
                f"the client sends {name} v{version} whatever it is offered; {broker.label} accepts {offered}"
            )
            return version, [finding("fixed-version-not-accepted", version, "KIP-35", text)]
    else:
        common = entry.versions & offered
        if common.empty:
            removed = removed_in_4(broker, key, entry.versions.highest)
            if removed is not None:
                what = removed[0].partition(": ")[2]
                text = f"{name} {entry.versions}: {what}; {broker.label} accepts {offered}"
                return None, [finding("removed-in-4", None, removed[2], text)]
            too_new = entry.versions.lowest > offered.highest and not entry.min_exact
            too_old = entry.versions.highest < offered.lowest and not entry.max_exact
            if too_new or too_old:
                text = (
                    f"the client was recorded writing {name} {entry.versions}; {broker.label} accepts "
                    f"{offered}, beyond what the recording can tell"
                )
                return None, [_as_unknown(finding("no-common-version", None, "KIP-35", text))]
            text = f"the client writes {name} {entry.versions}, {broker.label} accepts {offered}"
            return None, [finding("no-common-version", None, "KIP-35", text)]
        version = common.highest
        if client.obeys_feature_gates:
            return _picked_by_policy(client, entry, broker, finding)
    return _accepted(client, entry, broker, version, finding)


def _picked_by_policy(
    client: ClientSide, entry: ClientEntry, broker: BrokerSide, finding: Any
) -> tuple[int | None, list[Finding]]:
    """A client that picks as kafkacompat does: ``version_policy`` itself, feature gates obeyed.

    The version is the one ``capabilities.pick_version`` gives this broker's
    ranges and finalized levels (levels not reported count as 0, as they do
    when kafkacompat connects); when the gates leave none, that is the finding.
    """
    key = entry.api_key
    capabilities = BrokerCapabilities.from_ranges(
        broker.label,
        broker.apis,
        finalized_features={name: (level, level) for name, level in (broker.finalized or {}).items()},
    )
    choice = capabilities.explain(
        key,
        client_ranges={key: entry.versions},
        in_transaction=client.transactional,
        feature_gates=True,
    )
    if choice.chosen is not None:
        return _accepted(client, entry, broker, choice.chosen, finding)
    gate = next(iter(gates_for(key, in_transaction=client.transactional)), None)
    source = gate.source if gate is not None else "KIP-584"
    return None, [finding("feature-gated", None, source, f"{API_NAMES.get(key, key)}: {choice.reason}")]


def _accepted(
    client: ClientSide, entry: ClientEntry, broker: BrokerSide, version: int, finding: Any
) -> tuple[int | None, list[Finding]]:
    """The rules after a version is picked: refused though advertised, a look-alike's deviation, gates."""
    key, offered = entry.api_key, broker.apis[entry.api_key]
    name = API_NAMES.get(key, f"api key {key}")
    refusal = removed_in_4(broker, key, version)
    if refusal is not None and refusal[1]:
        return version, [
            finding(
                "advertised-but-refused",
                version,
                refusal[2],
                f"{broker.label} advertises {name} {offered} but refuses v{version}",
            )
        ]
    deviation = broker.software.deviation(key, version) if broker.software is not None else None
    if deviation is not None:
        text = (
            f"{broker.label} is {broker.software.label if broker.software else ''}: it answers {name} "
            f"v{version} with {deviation.answer}; {deviation.kafka_does}"
        )
        return version, [finding("lookalike-deviation", version, deviation.source, text)]
    return _gated(client, entry, broker, version, finding)


def _release_table(
    client: ClientSide, entry: ClientEntry, broker: BrokerSide, finding: Any
) -> tuple[int | None, list[Finding]]:
    """A client that sends what its own table says for the release it infers (see the theory)."""
    key, offered = entry.api_key, broker.apis[entry.api_key]
    name = API_NAMES.get(key, f"api key {key}")
    measured = dict(entry.by_release)
    if broker.release is None:
        text = (
            f"the client picks {name} from its table of releases and {broker.label}'s release is unknown; "
            f"it was measured sending {', '.join(f'v{v} to {r}' for r, v in entry.by_release)}"
        )
        return None, [_as_unknown(finding("release-table-not-accepted", None, "KIP-35", text))]
    at = release_order(broker.release)
    below = [r for r in measured if release_order(r) <= at]
    above = [r for r in measured if release_order(r) > at]
    low = measured[max(below, key=release_order)] if below else entry.versions.lowest
    high = measured[min(above, key=release_order)] if above else entry.versions.highest
    if broker.release in measured:
        low = high = measured[broker.release]
    low, high = min(low, high), max(low, high)
    if low in offered and high in offered:
        return _accepted(client, entry, broker, high, finding)
    where = (
        f"v{low}" if low == high else f"between v{low} and v{high} (measured: "
        + ", ".join(f"v{v} to {r}" for r, v in entry.by_release) + ")"
    )
    text = f"the client's table sends {name} {where} to {broker.release}; {broker.label} accepts {offered}"
    version = low if low not in offered else high
    removed = removed_in_4(broker, key, version)
    if removed is not None and (low == high or not (low in offered or high in offered)):
        return version, [finding("removed-in-4", version, removed[2], f"{removed[0]}; {text}")]
    if low == high or not (low in offered or high in offered):
        return version, [finding("release-table-not-accepted", version, "KIP-35", text)]
    return version, [_as_unknown(finding("release-table-not-accepted", version, "KIP-35", text))]


def _gated(
    client: ClientSide, entry: ClientEntry, broker: BrokerSide, version: int, finding: Any
) -> tuple[int | None, list[Finding]]:
    name = API_NAMES.get(entry.api_key, f"api key {entry.api_key}")
    for gate in gates_for(entry.api_key, in_transaction=client.transactional):
        level = None if broker.finalized is None else level_of(broker.finalized, gate.feature)
        if level is not None and level >= gate.min_level:
            continue
        could_send_gated = version in gate.versions or (
            not entry.max_exact
            and entry.pick == "highest"
            and broker.apis[entry.api_key].highest in gate.versions
        )
        if not could_send_gated:
            continue
        fallback = _FALLBACKS.get(entry.api_key)
        severe = fallback is None or fallback not in client.entries
        if level is None:
            found = finding(
                "feature-gated",
                version,
                gate.source,
                f"{name} {gate.describe(0)} — but the cluster's finalized features are unknown",
                severe,
            )
            return version, [_as_unknown(found)] if severe else [found]
        if version not in gate.versions:  # only the recorded max is a lower bound
            found = finding(
                "feature-gated",
                version,
                gate.source,
                f"{name}: the client sent up to v{version} and may send higher; {gate.describe(level)}",
                severe,
            )
            return version, [_as_unknown(found)] if severe else [found]
        return version, [
            finding("feature-gated", version, gate.source, f"{name} {gate.describe(level)}", severe)
        ]
    return version, []


def _as_unknown(found: Finding) -> Finding:
    return found if found.severity != "breaks" else dataclasses.replace(found, severity="unknown")


def worst(verdicts: Iterable[Verdict]) -> int:
    """The exit status of several verdicts: breaks over could-not-tell over works."""
    codes = [v.exit_code for v in verdicts]
    if 1 in codes:
        return 1
    return 2 if 2 in codes else 0

