"""``kafkacompat inspect`` as plain text: Kafka's formats first, then what they leave out.

Per broker, the block ``kafka-broker-api-versions`` prints::

    host:port (id: 1 rack: null) -> (
    <TAB>Produce(0): 0 to 11 [usable: 11],
    ...
    <TAB>Vote(52): UNSUPPORTED
    )

where this client adds, after Kafka's bracket, what narrowed a pick
(``{policy: cap <= 9}``) and the advertised versions a Kafka 4.x broker
refuses (``{4.x refuses 0-3: removed in 4.0 (KIP-896)}``; not the specs'
deprecation marks, many of which 4.x still serves); an API it cannot use says why inside the bracket
(``[unusable: node too old]``).  Then the broker's features in
``kafka-features describe`` lines, the release guess with its evidence, and the
handshake transcript.  With several brokers, a cluster section follows: the
version of each API every broker accepts, the skew between brokers, the
release groups and the finalized features' epochs.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafkacompat.cli.feature_text import feature_lines
from kafkacompat.cli.inspect_model import (
    BrokerProbe,
    ClusterSummary,
    ProbeReport,
    api_entries,
    cluster_summary,
    identity_status,
)
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake.transcript import HandshakeTranscript
from kafkacompat.negotiation.version_policy import VersionPolicy

__all__ = [
    "broker_block",
    "broker_header",
    "cluster_lines",
    "details_lines",
    "handshake_lines",
    "render_report",
]

INDENT = "\t"


def broker_header(probe: BrokerProbe) -> str:
    """Kafka's ``Node.toString`` for the release shown: ``host:port (id: N rack: R)``, rack ``null`` if none.

    From Kafka 4.0 on, ``Node`` also prints ``isFenced`` (KIP-1073); a broker
    that answered is not fenced.
    """
    rack = probe.rack if probe.rack else "null"
    fenced = " isFenced: false" if _shown_release_major(probe) >= 4 else ""
    return f"{probe.host}:{probe.port} (id: {probe.node_id} rack: {rack}{fenced})"


def _shown_release_major(probe: BrokerProbe) -> int:
    """The major version of the oldest release the broker's guess names (0 when there is no guess)."""
    if probe.capabilities is None or not probe.capabilities.release_guess.releases:
        return 0
    majors = [release.split(".", 1)[0] for release in probe.capabilities.release_guess.releases]
    return min(int(major) for major in majors if major.isdigit()) if any(m.isdigit() for m in majors) else 0


def broker_block(probe: BrokerProbe, policy: VersionPolicy | None = None, *, marks: bool = True) -> list[str]:
    """The ``-> (...)`` block of one broker, or its ``-> ERROR: ...`` line; ``marks``: add ours."""
    if probe.capabilities is None:
        return [f"{broker_header(probe)} -> ERROR: {probe.error or 'no answer'}"]
    entries = api_entries(probe.capabilities, policy)
    lines = [f"{broker_header(probe)} -> ("]
    for n, entry in enumerate(entries):
        comma = "," if n < len(entries) - 1 else ""
        lines.append(f"{INDENT}{entry.kafka_text()}{entry.marks() if marks else ''}{comma}")
    lines.append(")")
    return lines


def _nodes(ids: Iterable[int | str]) -> str:
    listed = list(ids)
    word = "node" if len(listed) == 1 else "nodes"
    return f"{word} {', '.join(str(i) for i in listed)}"


def handshake_lines(transcript: HandshakeTranscript | None) -> list[str]:
    """One summary line, then one line per ApiVersions attempt."""
    if transcript is None:
        return ["Handshake: no transcript"]
    accepted = (
        f"ApiVersions v{transcript.api_versions_version} accepted"
        if transcript.api_versions_version is not None
        else f"no ApiVersions answer; the {transcript.fallback_release} table stands in"
        if transcript.fallback_release
        else "no ApiVersions answer accepted"
    )
    lines = [
        f"Handshake: {accepted}; {len(transcript.attempts)} attempt(s), "
        f"{transcript.round_trips} round trip(s), {transcript.connections} connection(s)"
    ]
    for n, attempt in enumerate(transcript.attempts, 1):
        text = f"{INDENT}{n}. ApiVersions v{attempt.version} on connection {attempt.connection}: "
        text += attempt.outcome
        if attempt.detail:
            text += f" ({attempt.detail})"
        if attempt.next_step:
            text += f" -> {attempt.next_step}"
        if attempt.flags:
            text += f" [{', '.join(attempt.flags)}]"
        lines.append(text)
    lines += [f"{INDENT}note: {note}" for note in transcript.notes]
    return lines


def details_lines(
    capabilities: BrokerCapabilities, *, client_checked_cluster: str | None = None
) -> list[str]:
    """Features, release guess, identity and handshake of one broker."""
    lines = ["Features:"]
    features = feature_lines(
        capabilities.supported_features,
        capabilities.finalized_features,
        capabilities.finalized_features_epoch,
    )
    lines += features or [f"{INDENT}none advertised"]
    if capabilities.features_partial:
        lines.append(f"{INDENT}supported features {capabilities.features_partial}")
    guess = capabilities.release_guess
    lines.append(f"Release guess: {guess.text}" + (" (exact)" if guess.relation == "exact" else ""))
    lines += [f"{INDENT}{evidence}" for evidence in guess.evidence]
    detected = capabilities.transcript.detected_release if capabilities.transcript else None
    if capabilities.fallback_release:
        how = "was configured to stand in" if capabilities.fallback_release != detected else "stands in"
        lines.append(
            f"{INDENT}the broker sent no ApiVersions answer: the {capabilities.fallback_release} "
            f"table {how}"
        )
    identity = identity_status(capabilities, client_checked_cluster=client_checked_cluster)
    lines.append(f"Identity: {identity[1]}")
    lines += handshake_lines(capabilities.transcript)
    if capabilities.throttle_time_ms:
        lines.append(f"{INDENT}the broker asked to be left alone for {capabilities.throttle_time_ms} ms")
    return lines


def _version_lines(summary: ClusterSummary) -> list[str]:
    lines = ["Versions every broker accepts:"]
    for agreement in summary.view.apis.values():
        label = f"{agreement.api_name}({agreement.api_key})"
        if agreement.everywhere is not None:
            lines.append(f"{INDENT}{label}: {agreement.everywhere}")
        elif agreement.lacking:
            lacking = [summary.node_id(node) for node in agreement.lacking]
            lines.append(f"{INDENT}{label}: none (unusable on {_nodes(lacking)})")
        else:
            lines.append(f"{INDENT}{label}: none (no version is common to every broker)")
    return lines


def _skew_lines(summary: ClusterSummary) -> list[str]:
    skewed = summary.view.version_skew
    if not skewed:
        return ["Skew between brokers: none, every broker would be sent the same versions"]
    lines = ["Skew between brokers:"]
    for agreement in skewed:
        groups: dict[int | None, list[int | str]] = {}
        for node, version in agreement.by_node.items():
            groups.setdefault(version, []).append(summary.node_id(node))
        parts = [
            f"{'unusable' if version is None else version} on {_nodes(sorted(ids, key=str))}"
            for version, ids in sorted(groups.items(), key=lambda item: (item[0] is None, -(item[0] or 0)))
        ]
        everywhere = agreement.everywhere
        tail = f"{everywhere} everywhere" if everywhere is not None else "no version everywhere"
        lines.append(f"{INDENT}{agreement.api_name}({agreement.api_key}): {'; '.join(parts)} -> {tail}")
    return lines


def _in_id_order(node: int | str) -> tuple[int, int, str]:
    """Node ids in numeric order, labels of nodes without an id after them: one order every run."""
    return (1, 0, node) if isinstance(node, str) else (0, node, "")


def _release_lines(summary: ClusterSummary) -> list[str]:
    lines = ["Releases:" + ("" if summary.view.release_skew else " every broker looks the same")]
    for group in summary.view.releases:
        ids = sorted((summary.node_id(n) for n in group.nodes), key=_in_id_order)
        lines.append(f"{INDENT}{group.guess}: {_nodes(ids)}")
    return lines


def _epoch_lines(summary: ClusterSummary) -> list[str]:
    view = summary.finalized
    if view.epoch < 0:
        return ["Finalized features: no broker knows a finalized epoch"]
    lines = [f"Finalized features: epoch {view.epoch} from {_nodes(view.sources)}"]
    lines += [f"{INDENT}node {s.node} is behind: it answered epoch {s.epoch}" for s in view.stale]
    if view.conflicts:
        lines.append(f"{INDENT}{_nodes(view.conflicts)} answered other levels at epoch {view.epoch}")
    if view.unknown_epoch:
        lines.append(f"{INDENT}{_nodes(view.unknown_epoch)} answered no finalized epoch")
    if not (view.stale or view.conflicts or view.unknown_epoch):
        lines.append(f"{INDENT}every broker agrees")
    return lines


def cluster_lines(report: ProbeReport, summary: ClusterSummary | None) -> list[str]:
    """The cross-broker section (for more than one broker)."""
    answered = len(report.capabilities)
    controller = report.controller_id if report.controller_id is not None else "unknown"
    active = "active controller" if report.node_kind == "controller" else "controller"
    lines = [
        f"Cluster {report.cluster_id or '(no id)'}: {answered} of {len(report.brokers)} "
        f"{report.node_kind}(s) answered, {active} {controller}"
    ]
    if summary is None:
        return lines
    lines += _version_lines(summary)
    lines += _skew_lines(summary)
    lines += _release_lines(summary)
    lines += _epoch_lines(summary)
    return lines


def render_report(report: ProbeReport, *, details: bool = True) -> list[str]:
    """The whole text output of ``inspect``."""
    lines: list[str] = []
    for probe in report.brokers:
        lines += broker_block(probe, report.policy)
        if details and probe.capabilities is not None:
            lines += details_lines(probe.capabilities, client_checked_cluster=probe.client_checked_cluster)
        lines.append("")
    if len(report.brokers) > 1:
        lines += cluster_lines(report, cluster_summary(report))
    elif lines and lines[-1] == "":
        lines.pop()
    if report.note:
        lines.append(f"Note: {report.note}")
    if report.expected_cluster_id is not None:
        lines.append(f"Cluster: {report.cluster_id}, as expected")
    return lines
