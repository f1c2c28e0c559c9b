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
"""

from __future__ import annotations

from kafkacompat.negotiation.measured_runs import MeasuredRun
from kafkacompat.negotiation.silent_broker import API_VERSIONS as _API_VERSIONS
from kafkacompat.negotiation.verdict_types import BrokerSide, ClientSide, Finding, Rule, Severity
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.api_names import API_NAMES

__all__ = ["before_kip_35", "measured_on_lookalike"]


def measured_on_lookalike(
    client: ClientSide, broker: BrokerSide, run: MeasuredRun, chosen: dict[int, int | None]
) -> list[Finding]:
    """A look-alike this client release was measured against: the measurement is the verdict."""
    if run.ok:
        return []
    key, version, why = run.stop()
    if version is not None:
        chosen[key] = version
    entry = client.entries.get(key)
    text = f"measured against {run.against}, {why}"
    return [
        Finding(
            key,
            API_NAMES.get(key, f"UnknownApi{key}"),
            broker.label,
            entry.versions if entry is not None else VersionRange(version or 0, version or 0),
            broker.apis.get(key),
            version,
            "measured-on-lookalike",
            "breaks",
            f"measured against {run.against}",
            text,
        )
    ]


def before_kip_35(client: ClientSide, broker: BrokerSide, chosen: dict[int, int | None]) -> list[Finding]:
    """A broker without ApiVersions: the client's measurement there, or "could not tell" (no guess)."""
    measured = client.silent_broker
    entry = client.entries.get(_API_VERSIONS)
    asked = entry.versions if entry is not None else VersionRange(0, 0)

    def found(
        key: int, version: int | None, rule: Rule, severity: Severity, source: str, text: str
    ) -> Finding:
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
