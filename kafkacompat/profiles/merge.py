"""One client profile from several recordings of that client: how it picks, what it needs.

Theory.  One recording (``kafkacompat record``) sees the versions a client
sent to one broker; it cannot tell how the client picks, nor its minimum.
Recordings of the same client release against brokers that offer different
ranges can.  Per API, with the highest version the client sent to each broker
(``sent``) and that broker's offer (``offered``, from the ApiVersions answer
the recorder saw):

- ``highest``: wherever it was sent, it was the highest version in common
  with the offer (capped by the most the client sent anywhere);
- ``fixed``: the same version to every broker although the offers differ
  (or, seen by one broker only, a version sent without asking: the
  recorder's own ``fixed``);
- ``release-table``: neither: the client inferred each broker's release and
  sent what its own table says for it; the per-release picks are kept
  (``by_release``), keyed by the Apache release of the broker, for
  ``verdicts`` to bracket releases in between.

``min`` stays a bound (``min_exact`` false: a broker older than every
recording might have shown a lower one); ``max_exact`` holds where some
broker offered more than the client ever sent.  An API is ``required`` when
the client sent it in every recording whose traffic got through (one it does
without somewhere is used only when offered), or, for a release that got
through nowhere, in every recording that got furthest; telemetry never is
(``verdicts.NEVER_REQUIRED``).

``merge_recorded`` does the same for what ``kafkacompat record`` wrote in
front of several brokers (``record --merge``, and ``check`` given several
recordings of one client): each recording of a client is one run, against
the broker whose ApiVersions answer it recorded (its release guessed from
that answer, for ``by_release``); a recorder does not see whether the
application's work got through, so every run counts as one that did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafkacompat.negotiation.measured_runs import STEP_APIS
from kafkacompat.negotiation.release_guess import guess_release
from kafkacompat.negotiation.silent_broker import API_VERSIONS
from kafkacompat.negotiation.verdicts import NEVER_REQUIRED
from kafkacompat.protocol.removals import release_order
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.testing.client_traffic import STEPS

__all__ = ["Recording", "merge_recorded", "merge_recordings", "offered_ranges"]


@dataclass(frozen=True, slots=True)
class Recording:
    """What ``record`` wrote for one client's run against one broker, and whether its traffic got through."""

    broker: str  # a label: the Apache release ("3.9") or the software ("tansu 0.6.0")
    apache_release: str | None  # the broker's Apache release, for ``by_release``; None for a look-alike
    profiles: Sequence[Mapping[str, Any]]  # every profile the recording wrote (one per client id)
    ok: bool = True
    passed: int = 0  # steps of the traffic that passed
    failed_step: str | None = None  # the step of the traffic it failed in


def offered_ranges(profiles: Sequence[Mapping[str, Any]]) -> dict[int, tuple[int, int]]:
    """The broker's ranges as its ApiVersions answers showed them to the recorder (widest seen)."""
    ranges: dict[int, tuple[int, int]] = {}
    for profile in profiles:
        for offer in profile.get("recorded", {}).get("offered", ()):
            for api in offer["apis"]:
                low, high = ranges.get(api["api_key"], (api["min"], api["max"]))
                ranges[api["api_key"]] = (min(low, api["min"]), max(high, api["max"]))
    return ranges


def merge_recordings(client: str, version: str, recordings: Sequence[Recording]) -> dict[str, Any]:
    """The merged client profile (``pipeline.client_format``, with ``pick`` and ``by_release``)."""
    sent: dict[int, dict[str, int]] = {}  # api -> broker -> highest version sent there
    lowest: dict[int, int] = {}
    fixed_seen: set[int] = set()
    offers = {r.broker: offered_ranges(r.profiles) for r in recordings}
    for recording in recordings:
        for profile in recording.profiles:
            for e in profile["api_versions"]:
                key = e["api_key"]
                here = sent.setdefault(key, {})
                here[recording.broker] = max(here.get(recording.broker, e["max"]), e["max"])
                lowest[key] = min(lowest.get(key, e["min"]), e["min"])
                if e.get("pick") == "fixed":
                    fixed_seen.add(key)
    # The runs that got through; for a release that got through nowhere, the runs that got furthest.
    furthest = max((r.passed for r in recordings), default=0)
    best = [r for r in recordings if r.ok] or [r for r in recordings if r.passed == furthest]
    through = [{e["api_key"] for p in r.profiles for e in p["api_versions"]} for r in best]
    apache = {r.broker: r.apache_release for r in recordings}
    entries = []
    for key in sorted(sent):
        per_broker = sent[key]
        top = max(per_broker.values())
        entry: dict[str, Any] = {
            "api_key": key,
            "min": lowest[key],
            "max": top,
            "min_exact": False,
            "max_exact": any(offers[b].get(key, (0, -1))[1] > top for b in per_broker),
            "required": key not in NEVER_REQUIRED and bool(through) and all(key in s for s in through),
        }
        entry.update(_pick(key, per_broker, offers, apache, fixed_seen))
        entries.append(entry)
    for key in _refused_by_the_client(recordings, set(sent)):
        # min above max: it cannot write the API at all (``pipeline.client_format``).
        entries.append(
            {"api_key": key, "min": 1, "max": 0, "min_exact": True, "max_exact": True, "required": True}
        )
    return {"client": client, "version": version, "api_versions": sorted(entries, key=lambda e: e["api_key"])}


def _refused_by_the_client(recordings: Sequence[Recording], sent: set[int]) -> list[int]:
    """The APIs of a step no run got past, failed without the client ever sending the step's API.

    The client refused the step itself, whatever the broker offered (sarama
    1.40.1's default protocol version has no DeleteGroups: it fails the step
    with UNSUPPORTED_VERSION of its own making, sending nothing): it cannot
    send that API, and the traffic needs it.
    """
    failed = [STEPS.index(r.failed_step) for r in recordings if r.failed_step in STEPS]
    if not failed or any(r.ok for r in recordings):
        return []
    step = STEPS[max(failed)]  # the furthest any run got
    api = STEP_APIS[step][0]
    reached = sum(1 for r in recordings if r.failed_step == step)  # against brokers that differ
    return [api] if reached >= 2 and api not in sent else []


def merge_recorded(profiles: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Profiles with the recordings of each client merged into one, in the order first met.

    A client met once is kept as it is.  Several profiles of one (client,
    version) must all be recordings (``recorded.offered``: the ApiVersions
    answers the recorder saw); otherwise the same profile is given twice, a
    ``ValueError`` naming it.
    """
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for profile in profiles:
        groups.setdefault((str(profile["client"]), str(profile["version"])), []).append(profile)
    merged: list[dict[str, Any]] = []
    for (client, version), group in groups.items():
        if len(group) == 1:
            merged.append(dict(group[0]))
            continue
        if not all(p.get("recorded", {}).get("offered") for p in group):
            raise ValueError(
                f"{client} {version or '(no version)'} is given {len(group)} times and not every one is a "
                "recording (kafkacompat record) to merge"
            )
        recordings = [
            Recording(f"recording {number}", _release_of(offered_ranges([p])), [p])
            for number, p in enumerate(group, 1)
        ]
        profile = merge_recordings(client, version, recordings)
        profile["recorded"] = {
            "source": "kafkacompat record, merged",
            "merged": [{"recording": r.broker, "release": r.apache_release} for r in recordings],
        }
        merged.append(profile)
    return merged


def _release_of(offered: Mapping[int, tuple[int, int]]) -> str | None:
    """The Apache release an ApiVersions answer names, when it names one (the oldest of a tie)."""
    guess = guess_release({key: VersionRange(low, high) for key, (low, high) in offered.items()})
    return min(guess.releases, key=release_order) if guess.releases else None


def _pick(
    key: int,
    per_broker: Mapping[str, int],
    offers: Mapping[str, Mapping[int, tuple[int, int]]],
    apache: Mapping[str, str | None],
    fixed_seen: set[int],
) -> dict[str, Any]:
    if key == API_VERSIONS:
        return {"pick": "highest"}  # its own negotiation (KIP-511's fallback), not an offer
    top = max(per_broker.values())
    offered = {b: offers[b].get(key) for b in per_broker}
    followed = all(o is not None and v == min(top, o[1]) for b, v in per_broker.items() if (o := offered[b]))
    differ = len({o for o in offered.values() if o is not None}) > 1
    if len(set(per_broker.values())) == 1 and (differ or key in fixed_seen) and not (followed and differ):
        return {"pick": "fixed"}
    if followed:  # a request sent unasked on one connection used what another negotiated
        return {"pick": "highest"}
    table = sorted(
        ((apache[b], v) for b, v in per_broker.items() if apache[b] is not None),
        key=lambda pair: release_order(str(pair[0])),
    )
    if not table:
        return {"pick": "fixed"}
    return {"pick": "release-table", "by_release": [{"release": r, "version": v} for r, v in table]}
