"""Verdicts read from measurements, where ranges cannot tell: no ApiVersions, a look-alike broker.

Theory.  Two kinds of broker are judged from what a client release was
measured doing, not from ranges.  A broker without ApiVersions (before
KIP-35, Kafka 0.9 and older) leaves the client to its own choice: give up,
or infer an old release and go on (``before_kip_35``; the measurement is the
profile's ``without_api_versions``, its traffic against the real 0.9.0.1).
Look-alike software that this client release was measured against
(``measured_on_lookalike``; the profile's ``recorded.against``) may deviate
from Kafka in ways no table foresees.  Either way the verdict names the API
where the measured client stopped, and the evidence.

One more rule reads who the client is: KIP-1124 makes Apache Kafka's Java
client 2.1 (KIP-896's baseline) the oldest release Kafka 4.x supports
(``outside_kip_1124``).  Older releases are not refused for being old: the
broker sees only versions, and the range rules judge those (kafka-clients
0.10.2 sends Produce v2, which 4.x refuses; 1.1 and 2.0 send only versions
4.x keeps, and were measured getting through against the real 4.0 and 4.4).
So this is a warning that names the promise the client is outside of, and
what its measurement against a real 4.x showed.
"""

from __future__ import annotations

from kafkacompat.negotiation.measured_runs import MeasuredRun
from kafkacompat.negotiation.silent_broker import API_VERSIONS as _API_VERSIONS
from kafkacompat.negotiation.verdict_types import BrokerSide, ClientSide, Finding, Rule, Severity
from kafkacompat.protocol.removals import follows_kip_896, release_order
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.api_names import API_NAMES

__all__ = ["before_kip_35", "measured_on_lookalike", "outside_kip_1124"]

# Apache Kafka's Java client, as measured profiles name it and as it names itself (KIP-511).
_APACHE_JAVA_CLIENT = frozenset({"kafka-clients", "apache-kafka-java"})
_OLDEST_SUPPORTED_BY_4X = (2, 1)  # KIP-1124 (the baseline of KIP-896)


def measured_on_lookalike(
    client: ClientSide, broker: BrokerSide, run: MeasuredRun, chosen: dict[int, int | None]
) -> list[Finding]:
    """A look-alike this client release was measured against: the measurement is the verdict."""
    if run.ok:
        return []
    key, version, why = run.stop()
    if version is not None:
        chosen[key] = version
    text = f"measured against {run.against}, {why}"
    return [
        _finding(
            client,
            broker,
            key,
            version,
            "measured-on-lookalike",
            "breaks",
            f"measured against {run.against}",
            text,
        )
    ]


def _finding(
    client: ClientSide,
    broker: BrokerSide,
    key: int,
    version: int | None,
    rule: Rule,
    severity: Severity,
    source: str,
    text: str,
) -> Finding:
    """A finding on ``key`` that a measurement or the client's identity makes, not the ranges."""
    known = client.entries.get(key)
    return Finding(
        key,
        API_NAMES.get(key, f"UnknownApi{key}"),
        broker.label,
        known.versions if known is not None else VersionRange(version or 0, version or 0),
        broker.apis.get(key),
        version,
        rule,
        severity,
        source,
        text,
    )


def before_kip_35(client: ClientSide, broker: BrokerSide, chosen: dict[int, int | None]) -> list[Finding]:
    """A broker without ApiVersions: the client's measurement there, or "could not tell" (no guess)."""
    measured = client.silent_broker
    entry = client.entries.get(_API_VERSIONS)
    asked = entry.versions if entry is not None else VersionRange(0, 0)

    def found(
        key: int, version: int | None, rule: Rule, severity: Severity, source: str, text: str
    ) -> Finding:
        return _finding(client, broker, key, version, rule, severity, source, text)

    if measured is None or not measured.applies_to(broker.apis, broker.release):
        why = (
            "this client was not measured against one"
            if measured is None
            else f"this client was measured against {measured.measured_against} only"
        )
        text = (
            f"{broker.label} has no ApiVersions (before KIP-35, Kafka 0.10.0): whether a client gives up or "
            f"infers an old release and goes on is its own choice, and {why}"
        )
        return [found(_API_VERSIONS, None, "pre-kip-35", "unknown", "KIP-35", text)]
    source = f"KIP-35; measured against {measured.measured_against}"
    evidence = measured.evidence()
    if not measured.falls_back:
        text = f"{broker.label} does not have ApiVersions and the client gives up ({evidence})"
        return [found(_API_VERSIONS, asked.highest, "api-missing", "breaks", source, text)]
    text = f"{broker.label} does not have ApiVersions; the client goes on without it ({evidence})"
    fallback = found(_API_VERSIONS, None, "api-versions-fallback", "warns", source, text)
    if measured.ok or measured.last_request is None:
        return [fallback]
    key, version, outcome = measured.last_request
    chosen[key] = version  # the version it was measured sending there, before it stopped
    name = API_NAMES.get(key, f"api key {key}")
    if outcome == "answered":
        rule: Rule = "client-refuses-era"
        said = f"the client was answered {name} v{version} by a broker of this era and sent nothing more"
    else:
        rule = "fallback-not-answered"
        said = f"{name} v{version}, sent after the ApiVersions fallback, was {outcome}"
    return [fallback, found(key, version, rule, "breaks", source, f"{said} ({evidence})")]


def outside_kip_1124(client: ClientSide, broker: BrokerSide) -> Finding | None:
    """A warning for Apache's Java client older than 2.1 against Kafka 4.x (see the theory)."""
    if client.name not in _APACHE_JAVA_CLIENT or broker.software is not None:
        return None
    client_release = _numbers(client.version)
    if client_release is None or client_release >= _OLDEST_SUPPORTED_BY_4X:
        return None
    if broker.release is not None:
        if release_order(broker.release) < release_order("4.0"):
            return None
    elif not follows_kip_896(broker.apis):
        return None
    measured = []
    for name, run in sorted(client.measured_on.items()):
        release = name.partition("/")[0]  # "4.4.0/kraft-combined"; look-alikes are not numbers
        numbers = _numbers(release)
        if numbers is not None and numbers >= (4,):
            outcome = "its traffic got through" if run.ok else f"it stopped in step {run.stopped_in}"
            measured.append(f"against the real {release} {outcome}")
    text = (
        f"{broker.label} is Kafka 4.x, which supports Apache Kafka's Java clients from 2.1 on (KIP-1124); "
        f"{client.label} is older, and is judged by the versions it sends"
        + (f" (measured {'; '.join(measured)})" if measured else "")
    )
    return _finding(
        client, broker, _API_VERSIONS, None, "unsupported-client-release", "warns", "KIP-1124", text
    )


def _numbers(version: str) -> tuple[int, ...] | None:
    """``"2.0.1"`` -> (2, 0, 1); None when it is not dotted numbers."""
    parts = version.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None
