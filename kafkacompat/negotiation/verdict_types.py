"""What a verdict is made of: the client's side, the broker's side, findings and the verdict.

``verdicts`` judges (``judge``) with these; ``verdict_evidence`` holds the
rules that read measurements instead of ranges.  A client side is a profile
as verdicts read it (``verdicts.client_side``); a broker side is one broker's
ApiVersions ranges with its release when known, the cluster's finalized
feature levels and the look-alike software it was identified as.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kafkacompat.negotiation.lookalikes import Lookalike
from kafkacompat.negotiation.measured_runs import MeasuredRun
from kafkacompat.negotiation.silent_broker import API_VERSIONS as _API_VERSIONS
from kafkacompat.negotiation.silent_broker import SilentBrokerRun
from kafkacompat.protocol.versions import VersionRange

__all__ = [
    "EXIT_CODES",
    "NEVER_REQUIRED",
    "TRANSACTIONAL_APIS",
    "BrokerSide",
    "ClientEntry",
    "ClientSide",
    "Finding",
    "Pick",
    "Rule",
    "Severity",
    "Status",
    "Verdict",
]

Rule = Literal[
    "api-missing",
    "measured-on-lookalike",
    "pre-kip-35",
    "release-table-not-accepted",
    "lookalike-deviation",
    "no-common-version",
    "removed-in-4",
    "fixed-version-not-accepted",
    "advertised-but-refused",
    "feature-gated",
    "api-versions-fallback",
    "client-refuses-era",
    "fallback-not-answered",
    "unsupported-client-release",
    "client-cannot-send",
]
Severity = Literal["breaks", "warns", "unknown"]
Status = Literal["works", "breaks", "unknown"]
EXIT_CODES: Mapping[Status, int] = {"works": 0, "breaks": 1, "unknown": 2}
# AddPartitionsToTxn, EndTxn, TxnOffsetCommit: a client that sends one runs transactions.
TRANSACTIONAL_APIS: tuple[int, ...] = (24, 26, 28)
# GetTelemetrySubscriptions, PushTelemetry (KIP-714): used where offered, never needed.
NEVER_REQUIRED: frozenset[int] = frozenset({71, 72})
Pick = Literal["highest", "fixed", "release-table"]


@dataclass(frozen=True, slots=True)
class ClientEntry:
    """What a client does with one API: the versions it can send and how it picks."""

    api_key: int
    versions: VersionRange
    pick: Pick = "highest"
    max_exact: bool = True
    required: bool = False
    min_exact: bool = True
    # release-table pickers: (broker release, version sent to it), as measured
    by_release: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class ClientSide:
    name: str
    version: str
    entries: Mapping[int, ClientEntry] = field(hash=False)
    obeys_feature_gates: bool = False
    silent_broker: SilentBrokerRun | None = None  # measured without ApiVersions, when it was
    measured_on: Mapping[str, MeasuredRun] = field(default_factory=dict, hash=False)  # by broker name

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}".strip()

    @property
    def transactional(self) -> bool:
        return any(key in self.entries for key in TRANSACTIONAL_APIS)


@dataclass(frozen=True, slots=True)
class BrokerSide:
    """One broker as a verdict sees it: its ranges, its release if known, the cluster's features."""

    label: str
    apis: Mapping[int, VersionRange] = field(hash=False)
    release: str | None = None
    finalized: Mapping[str, int] | None = field(default=None, hash=False)  # None: not reported
    software: Lookalike | None = None  # look-alike software it was identified as (``lookalikes``)

    @property
    def has_api_versions(self) -> bool:
        offered = self.apis.get(_API_VERSIONS)
        return offered is not None and not offered.empty


@dataclass(frozen=True, slots=True)
class Finding:
    api_key: int
    api_name: str
    broker: str
    client_range: VersionRange
    broker_range: VersionRange | None
    version: int | None  # the version the client would send, when there is one
    rule: Rule
    severity: Severity
    source: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        def pair(r: VersionRange | None) -> list[int] | None:
            return None if r is None or r.empty else [r.lowest, r.highest]

        return {
            "api_key": self.api_key,
            "api": self.api_name,
            "broker": self.broker,
            "client_range": pair(self.client_range),
            "broker_range": pair(self.broker_range),
            "version": self.version,
            "rule": self.rule,
            "severity": self.severity,
            "source": self.source,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    client: str
    target: str
    findings: tuple[Finding, ...]
    picks: Mapping[str, Mapping[int, int | None]] = field(hash=False)  # broker -> api -> version

    @property
    def status(self) -> Status:
        severities = {f.severity for f in self.findings}
        return "breaks" if "breaks" in severities else "unknown" if "unknown" in severities else "works"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]
