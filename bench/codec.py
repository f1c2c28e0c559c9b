"""Codec benchmarks: kafkacompat's generated codec against the Python peers, on the same bytes.

Peers:

* ``kafka-python``: kafka-python 3.x's schema-driven codec (``kafka.protocol.metadata``:
  classes built from the JSON specs, with encoders and decoders compiled at run
  time).  The targets are set against this one.
* ``kafka-python (old)``: kafka-python's legacy hand-written ``Struct`` codec
  (``kafka.protocol.old``), where it defines the version.
* ``aiokafka``: aiokafka's ``Struct`` codec (``aiokafka.protocol``), where it
  defines the version.

Every payload is built once with kafkacompat.  Before timing, each peer must
decode it to the same content (compared field by field after normalising each
library's representation), and for encode workloads must encode its own copy
of the message to the same bytes (or, failing that, to bytes kafkacompat reads
back as the same content); a peer that does not is reported as ``ERROR`` and
not timed.  Peers' message objects are built with their public constructors,
outside the timed code.

The ``i.`` workloads are informational (no target): they run at the newest
version the legacy codecs know, so that aiokafka gets a number too.
"""

from __future__ import annotations

import importlib
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.common import BenchConfig, Row, measure_many
from kafkacompat.protocol.messages import (
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataResponse,
)

__all__ = ["TITLE", "run"]

TITLE = "message codec: CPU time per operation; ratio = peer time / kafkacompat time (higher is better)"

# Codec work is pure computation in this process: CPU time leaves out the time the
# machine's other processes hold the CPU, which wall time on a busy machine does not.
CLOCK = time.process_time

KAFKACOMPAT = "kafkacompat"
KAFKA_PYTHON = "kafka-python"
KAFKA_PYTHON_OLD = "kafka-python (old)"
AIOKAFKA = "aiokafka"

# The "not requested" value of Kafka's authorized-operations bit fields.
UNSET_OPERATIONS = -(2**31)

Digest = Any  # nested tuples of plain values: what a decoded message says


# --------------------------------------------------------------------------- payloads


def api_versions_message(n_keys: int = 60) -> ApiVersionsResponse:
    """A broker's ApiVersions reply: ``n_keys`` APIs and KIP-584 features (all in tagged fields at v3+)."""
    rnd = random.Random(18)
    cls = ApiVersionsResponse
    supported = [
        ("metadata.version", 1, 25),
        ("kraft.version", 0, 1),
        ("group.version", 0, 1),
        ("transaction.version", 0, 2),
    ]
    finalized = [("metadata.version", 25, 25), ("kraft.version", 1, 1), ("group.version", 1, 1)]
    return cls(
        error_code=0,
        api_keys=[
            cls.ApiVersion(api_key=key, min_version=rnd.randint(0, 3), max_version=rnd.randint(3, 17))
            for key in range(n_keys)
        ],
        throttle_time_ms=0,
        supported_features=[
            cls.SupportedFeatureKey(name=name, min_version=lo, max_version=hi) for name, lo, hi in supported
        ],
        finalized_features_epoch=4_221_337,
        finalized_features=[
            cls.FinalizedFeatureKey(name=name, max_version_level=hi, min_version_level=lo)
            for name, hi, lo in finalized
        ],
    )


def metadata_message(n_topics: int = 100, n_partitions: int = 10, n_brokers: int = 5) -> MetadataResponse:
    """A cluster of ``n_brokers`` racked brokers; every partition has 3 replicas, all in sync."""
    rnd = random.Random(3)
    cls = MetadataResponse
    topics = []
    for t in range(n_topics):
        partitions = []
        for p in range(n_partitions):
            replicas = [(t + p + r) % n_brokers for r in range(3)]
            partitions.append(
                cls.MetadataResponsePartition(
                    error_code=0,
                    partition_index=p,
                    leader_id=replicas[0],
                    leader_epoch=rnd.randint(0, 40),
                    replica_nodes=replicas,
                    isr_nodes=list(replicas),
                    offline_replicas=[],
                )
            )
        topics.append(
            cls.MetadataResponseTopic(
                error_code=0,
                name=f"app.events.topic-{t:03d}",
                topic_id=uuid.UUID(int=rnd.getrandbits(128)),
                is_internal=False,
                partitions=partitions,
                topic_authorized_operations=UNSET_OPERATIONS,
            )
        )
    return cls(
        throttle_time_ms=0,
        brokers=[
            cls.MetadataResponseBroker(
                node_id=b, host=f"broker-{b}.kafka.internal", port=9092, rack=f"rack-{b % 3}"
            )
            for b in range(n_brokers)
        ],
        cluster_id="MkU3OEVBNTcwNTJENDM2Qk",
        controller_id=1,
        topics=topics,
        cluster_authorized_operations=UNSET_OPERATIONS,
    )


def find_coordinator_request(n_keys: int = 1000) -> FindCoordinatorRequest:
    return FindCoordinatorRequest(
        key_type=0, coordinator_keys=[f"consumer-group-{i:05d}" for i in range(n_keys)]
    )


def find_coordinator_response(n_keys: int = 1000, n_brokers: int = 5) -> FindCoordinatorResponse:
    cls = FindCoordinatorResponse
    return cls(
        throttle_time_ms=0,
        coordinators=[
            cls.Coordinator(
                key=f"consumer-group-{i:05d}",
                node_id=i % n_brokers,
                host=f"broker-{i % n_brokers}.kafka.internal",
                port=9092,
                error_code=0,
                error_message=None,
            )
            for i in range(n_keys)
        ],
    )


# --------------------------------------------------------------------------- digests
# One function per message and representation, each returning the same nested
# tuples for the same content.  kafkacompat and kafka-python 3.x use the same
# field names (kafka-python renames the authorized-operations fields and reads
# them as sets); the legacy Struct codecs give nested tuples in schema order.


def ops_from_bits(value: set[int] | None) -> int:
    """kafka-python's authorized-operations set (None when unset) as Kafka's int32."""
    if value is None:
        return UNSET_OPERATIONS
    bits = sum(1 << bit for bit in value)
    return bits - (1 << 32) if bits >= 1 << 31 else bits


def bits_from_ops(value: int) -> set[int] | None:
    if value == UNSET_OPERATIONS:
        return None
    return {bit for bit in range(32) if (value >> bit) & 1}


def throttle_ms(m: Any) -> int:
    """The throttle time in ms: kio holds it as a ``timedelta`` named ``throttle_time``."""
    value = getattr(m, "throttle_time_ms", None)
    if value is None:
        return round(float(m.throttle_time.total_seconds()) * 1000)
    return int(value)


def digest_api_versions(m: Any) -> Digest:
    return (
        m.error_code,
        tuple((k.api_key, k.min_version, k.max_version) for k in m.api_keys),
        throttle_ms(m),
        tuple((f.name, f.min_version, f.max_version) for f in m.supported_features),
        m.finalized_features_epoch,
        tuple((f.name, f.max_version_level, f.min_version_level) for f in m.finalized_features),
        m.zk_migration_ready,
    )


def digest_api_versions_untagged(m: Any) -> Digest:
    """The part of ApiVersions the legacy codecs decode (they leave tagged fields as raw bytes)."""
    return (
        m.error_code,
        tuple((k.api_key, k.min_version, k.max_version) for k in m.api_keys),
        m.throttle_time_ms,
    )


def digest_api_versions_legacy(m: Any) -> Digest:
    # Positional (aiokafka calls the array api_versions); entries are (api_key, min, max)
    # or, at v3, (api_key, min, max, tags).  v0 has no throttle time.
    values = [getattr(m, name) for name in type(m).SCHEMA.names]
    throttle = values[2] if len(values) > 2 else 0
    return (values[0], tuple(tuple(k[:3]) for k in values[1]), throttle)


def api_versions_tags(m: ApiVersionsResponse) -> Digest:
    """Which tags kafkacompat writes for ``m`` at v3+, and the epoch's value."""
    tags = [
        tag
        for tag, present in enumerate(
            (
                bool(m.supported_features),
                m.finalized_features_epoch != -1,
                bool(m.finalized_features),
                m.zk_migration_ready,
            )
        )
        if present
    ]
    return (tuple(tags), m.finalized_features_epoch)


def digest_api_versions_old_v3(m: Any) -> Digest:
    tags: dict[int, bytes] = m.tags
    epoch = int.from_bytes(tags[1], "big", signed=True) if 1 in tags else -1
    return (digest_api_versions_legacy(m), (tuple(sorted(tags)), epoch))


def _digest_metadata(m: Any, *, topic_ops: Callable[[Any], int], cluster_ops: Callable[[Any], int]) -> Digest:
    return (
        throttle_ms(m),
        tuple((b.node_id, b.host, b.port, b.rack) for b in m.brokers),
        m.cluster_id,
        m.controller_id,
        tuple(
            (
                t.error_code,
                t.name,
                t.topic_id,
                t.is_internal,
                tuple(
                    (
                        p.error_code,
                        p.partition_index,
                        p.leader_id,
                        p.leader_epoch,
                        tuple(p.replica_nodes),
                        tuple(p.isr_nodes),
                        tuple(p.offline_replicas),
                    )
                    for p in t.partitions
                ),
                topic_ops(t),
            )
            for t in m.topics
        ),
        cluster_ops(m),
    )


def digest_metadata(m: Any) -> Digest:
    return _digest_metadata(
        m,
        topic_ops=lambda t: t.topic_authorized_operations,
        cluster_ops=lambda m: m.cluster_authorized_operations,
    )


def digest_metadata_kafka_python(m: Any) -> Digest:
    return _digest_metadata(
        m,
        topic_ops=lambda t: ops_from_bits(t.authorized_operations),
        cluster_ops=lambda m: ops_from_bits(m.authorized_operations),
    )


def digest_metadata_v5(m: Any) -> Digest:
    """What MetadataResponse v5 carries (no epochs, topic ids or authorized operations)."""
    return (
        m.throttle_time_ms,
        tuple((b.node_id, b.host, b.port, b.rack) for b in m.brokers),
        m.cluster_id,
        m.controller_id,
        tuple(
            (
                t.error_code,
                t.name,
                t.is_internal,
                tuple(
                    (
                        p.error_code,
                        p.partition_index,
                        p.leader_id,
                        tuple(p.replica_nodes),
                        tuple(p.isr_nodes),
                        tuple(p.offline_replicas),
                    )
                    for p in t.partitions
                ),
            )
            for t in m.topics
        ),
    )


def digest_metadata_v5_legacy(m: Any) -> Digest:
    # Positional: the two legacy codecs name the fields differently (topic/name, partition/...).
    brokers, topics = m.brokers, m.topics
    return (
        m.throttle_time_ms,
        tuple(tuple(b) for b in brokers),
        m.cluster_id,
        m.controller_id,
        tuple(
            (
                err,
                name,
                internal,
                tuple((pe, pi, ld, tuple(rs), tuple(isr), tuple(off)) for pe, pi, ld, rs, isr, off in parts),
            )
            for err, name, internal, parts in topics
        ),
    )


def digest_find_coordinator_request(m: Any) -> Digest:
    return (m.key_type, tuple(m.coordinator_keys))


def digest_find_coordinator_response(m: Any) -> Digest:
    return (
        throttle_ms(m),
        tuple((c.key, c.node_id, c.host, c.port, c.error_code, c.error_message) for c in m.coordinators),
    )


def first_difference(got: Digest, want: Digest, path: str = "") -> str:
    """Where two digests first differ, for the error message."""
    if isinstance(got, tuple) and isinstance(want, tuple):
        for i, (g, w) in enumerate(zip(got, want, strict=False)):
            if g != w:
                return first_difference(g, w, f"{path}[{i}]")
        return f"{path or 'top'}: {len(got)} items, expected {len(want)}"
    return f"{path or 'top'}: {got!r:.80} != expected {want!r:.80}"


# --------------------------------------------------------------------------- peers


def _dist_version(name: str) -> str:
    try:
        return importlib_metadata.version(name)
    except importlib_metadata.PackageNotFoundError:
        return "?"


@dataclass(frozen=True)
class Legacy:
    """A Struct codec with one class per version, ``<Prefix>_v<N>`` in one module."""

    label: str
    module: ModuleType | None
    import_error: str = ""

    @classmethod
    def load(cls, label: str, dist: str, module: str) -> Legacy:
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            return cls(label, None, f"{dist} is not installed ({exc})")
        return cls(f"{label} {_dist_version(dist)}", mod)

    def versions(self, prefix: str) -> list[int]:
        if self.module is None:
            return []
        found = []
        for name in dir(self.module):
            head, sep, tail = name.rpartition("_v")
            if sep and head == prefix and tail.isdigit():
                found.append(int(tail))
        return sorted(found)

    def lookup(self, prefix: str, version: int) -> tuple[Any, str]:
        """The class for ``version``, or None and why not."""
        if self.module is None:
            return None, self.import_error
        known = self.versions(prefix)
        if version not in known:
            have = f"v{known[0]}-v{known[-1]}" if known else "no versions"
            return None, f"{self.label} defines {prefix} {have} only, not v{version}"
        return getattr(self.module, f"{prefix}_v{version}"), ""


def _load_kafka_python() -> tuple[ModuleType | None, str]:
    try:
        return importlib.import_module("kafka.protocol.metadata"), ""
    except ImportError as exc:
        return None, f"kafka-python 3.x is not installed ({exc})"


# kafka-python 3.x: build its message objects with its own constructors.


def kafka_python_metadata(kp: ModuleType, m: MetadataResponse, version: int) -> Any:
    cls = kp.MetadataResponse
    topic_cls = cls.MetadataResponseTopic
    return cls(
        version=version,
        throttle_time_ms=m.throttle_time_ms,
        brokers=[
            cls.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in m.brokers
        ],
        cluster_id=m.cluster_id,
        controller_id=m.controller_id,
        topics=[
            topic_cls(
                error_code=t.error_code,
                name=t.name,
                topic_id=t.topic_id,
                is_internal=t.is_internal,
                partitions=[
                    topic_cls.MetadataResponsePartition(
                        error_code=p.error_code,
                        partition_index=p.partition_index,
                        leader_id=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replica_nodes=list(p.replica_nodes),
                        isr_nodes=list(p.isr_nodes),
                        offline_replicas=list(p.offline_replicas),
                    )
                    for p in t.partitions
                ],
                authorized_operations=bits_from_ops(t.topic_authorized_operations),
            )
            for t in m.topics
        ],
        authorized_operations=bits_from_ops(m.cluster_authorized_operations),
    )


def kafka_python_find_coordinator_request(kp: ModuleType, m: FindCoordinatorRequest, version: int) -> Any:
    return kp.FindCoordinatorRequest(
        version=version, key_type=m.key_type, coordinator_keys=list(m.coordinator_keys)
    )


def kafka_python_find_coordinator_response(kp: ModuleType, m: FindCoordinatorResponse, version: int) -> Any:
    cls = kp.FindCoordinatorResponse
    return cls(
        version=version,
        throttle_time_ms=m.throttle_time_ms,
        coordinators=[
            cls.Coordinator(
                key=c.key,
                node_id=c.node_id,
                host=c.host,
                port=c.port,
                error_code=c.error_code,
                error_message=c.error_message,
            )
            for c in m.coordinators
        ],
    )


def legacy_metadata_v5(cls: Any, m: MetadataResponse) -> Any:
    # Positional, in schema order (the legacy codecs disagree on field names).
    return cls(
        m.throttle_time_ms,
        [(b.node_id, b.host, b.port, b.rack) for b in m.brokers],
        m.cluster_id,
        m.controller_id,
        [
            (
                t.error_code,
                t.name,
                t.is_internal,
                [
                    (
                        p.error_code,
                        p.partition_index,
                        p.leader_id,
                        list(p.replica_nodes),
                        list(p.isr_nodes),
                        list(p.offline_replicas),
                    )
                    for p in t.partitions
                ],
            )
            for t in m.topics
        ],
    )


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Codec:
    """One implementation of one workload.

    ``decode`` reads bytes; ``encode`` writes the implementation's own copy of
    the message (built before timing).  ``digest`` turns what ``decode``
    returns into plain tuples and ``expected`` is what it must give for the
    payload.  ``missing`` says why the implementation cannot run it.
    """

    impl: str
    decode: Callable[[bytes | bytearray], Any] | None = None
    encode: Callable[[], bytes | bytearray] | None = None
    digest: Callable[[Any], Digest] | None = None
    expected: Digest = None
    missing: str = ""
    note: str = ""
    targeted: bool = False  # the workload's target applies to this peer
    # Per-operation targets for this peer ("decode", "encode"), when they differ by peer.
    targets: Mapping[str, float] = field(default_factory=dict)
    # The operations this implementation is timed on, when not all of the case's.
    only: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    key: str
    title: str
    payload: bytes
    roundtrip: bool  # encode+decode (else decode only)
    target: float | None
    codecs: Sequence[Codec]
    # Reads bytes with kafkacompat to its full digest: to judge a peer that writes other bytes.
    reference: Callable[[bytes], Digest] = field(default=lambda _data: None)
    # The operations timed; by default the main one, then encode and decode alone for round trips.
    ops: tuple[str, ...] = ()

    def operations(self) -> tuple[str, ...]:
        if self.ops:
            return self.ops
        return ("main", "encode", "decode") if self.roundtrip else ("main",)

    def label(self, op: str) -> str:
        head = f"{self.key}. {self.title} [{len(self.payload):,} B]"
        if self.ops:
            return f"{head}: {op}" if op == self.ops[0] else f"{self.key}. ... {op}"
        return head if op == "main" else f"{self.key}. ... {op} only"


def build_cases() -> list[Case]:
    kp, kp_missing = _load_kafka_python()
    kp_label = f"{KAFKA_PYTHON} {_dist_version('kafka-python')}" if kp is not None else KAFKA_PYTHON
    old_av = Legacy.load(KAFKA_PYTHON_OLD, "kafka-python", "kafka.protocol.old.api_versions")
    old_md = Legacy.load(KAFKA_PYTHON_OLD, "kafka-python", "kafka.protocol.old.metadata")
    old_fc = Legacy.load(KAFKA_PYTHON_OLD, "kafka-python", "kafka.protocol.old.find_coordinator")
    aio_av = Legacy.load(AIOKAFKA, "aiokafka", "aiokafka.protocol.admin")
    aio_md = Legacy.load(AIOKAFKA, "aiokafka", "aiokafka.protocol.metadata")
    aio_fc = Legacy.load(AIOKAFKA, "aiokafka", "aiokafka.protocol.coordination")

    def legacy_decoder(
        lib: Legacy,
        prefix: str,
        version: int,
        digest: Callable[[Any], Digest],
        expected: Digest,
        note: str = "",
    ) -> Codec:
        cls, why = lib.lookup(prefix, version)
        if cls is None:
            return Codec(lib.label, missing=why)
        return Codec(lib.label, decode=cls.decode, digest=digest, expected=expected, note=note)

    def missing(lib: Legacy, prefix: str, version: int) -> str:
        return lib.lookup(prefix, version)[1]

    cases: list[Case] = []

    # 1. ApiVersionsResponse v3 decode.
    av = api_versions_message()
    av_bytes = av.encode(3)
    av_digest = digest_api_versions(av)
    codecs = [
        Codec(
            KAFKACOMPAT,
            decode=lambda d: ApiVersionsResponse.decode(d, 3),
            digest=digest_api_versions,
            expected=av_digest,
        ),
        Codec(kp_label, missing=kp_missing)
        if kp is None
        else Codec(
            kp_label,
            decode=lambda d: kp.ApiVersionsResponse.decode(d, version=3),
            digest=digest_api_versions,
            expected=av_digest,
            targeted=True,
        ),
        legacy_decoder(
            old_av,
            "ApiVersionsResponse",
            3,
            digest_api_versions_old_v3,
            (digest_api_versions_untagged(av), api_versions_tags(av)),
            note="leaves the tagged features as raw bytes (less work)",
        ),
        legacy_decoder(aio_av, "ApiVersionResponse", 3, digest_api_versions_legacy, None),
    ]
    cases.append(
        Case(
            "1",
            "ApiVersionsResponse v3 decode: 60 api keys, 4+3 tagged features, epoch",
            av_bytes,
            False,
            3.0,
            codecs,
        )
    )

    # 2. MetadataResponse v12 encode+decode.
    md = metadata_message()
    md_bytes = md.encode(12)
    md_digest = digest_metadata(md)
    codecs = [
        Codec(
            KAFKACOMPAT,
            decode=lambda d: MetadataResponse.decode(d, 12),
            encode=lambda: md.encode(12),
            digest=digest_metadata,
            expected=md_digest,
        ),
    ]
    if kp is None:
        codecs.append(Codec(kp_label, missing=kp_missing))
    else:
        kp_md = kafka_python_metadata(kp, md, 12)
        codecs.append(
            Codec(
                kp_label,
                decode=lambda d: kp.MetadataResponse.decode(d, version=12),
                encode=lambda: kp_md.encode(version=12),
                digest=digest_metadata_kafka_python,
                expected=md_digest,
                targeted=True,
            )
        )
    codecs += [
        Codec(old_md.label, missing=missing(old_md, "MetadataResponse", 12)),
        Codec(aio_md.label, missing=missing(aio_md, "MetadataResponse", 12)),
    ]
    cases.append(
        Case(
            "2",
            "MetadataResponse v12 encode+decode: 100 topics x 10 partitions, 5 brokers",
            md_bytes,
            True,
            2.0,
            codecs,
            reference=lambda d: digest_metadata(MetadataResponse.decode(d, 12)),
        )
    )

    # 3a. FindCoordinatorRequest v4 encode+decode.
    fq = find_coordinator_request()
    fq_bytes = fq.encode(4)
    fq_digest = digest_find_coordinator_request(fq)
    codecs = [
        Codec(
            KAFKACOMPAT,
            decode=lambda d: FindCoordinatorRequest.decode(d, 4),
            encode=lambda: fq.encode(4),
            digest=digest_find_coordinator_request,
            expected=fq_digest,
        ),
    ]
    if kp is None:
        codecs.append(Codec(kp_label, missing=kp_missing))
    else:
        kp_fq = kafka_python_find_coordinator_request(kp, fq, 4)
        codecs.append(
            Codec(
                kp_label,
                decode=lambda d: kp.FindCoordinatorRequest.decode(d, version=4),
                encode=lambda: kp_fq.encode(version=4),
                digest=digest_find_coordinator_request,
                expected=fq_digest,
                targeted=True,
            )
        )
    codecs += [
        Codec(old_fc.label, missing=missing(old_fc, "FindCoordinatorRequest", 4)),
        Codec(aio_fc.label, missing=missing(aio_fc, "FindCoordinatorRequest", 4)),
    ]
    cases.append(
        Case(
            "3a",
            "FindCoordinatorRequest v4 encode+decode: 1000 coordinator keys",
            fq_bytes,
            True,
            2.0,
            codecs,
            reference=lambda d: digest_find_coordinator_request(FindCoordinatorRequest.decode(d, 4)),
        )
    )

    # 3b. FindCoordinatorResponse v4 encode+decode.
    fr = find_coordinator_response()
    fr_bytes = fr.encode(4)
    fr_digest = digest_find_coordinator_response(fr)
    codecs = [
        Codec(
            KAFKACOMPAT,
            decode=lambda d: FindCoordinatorResponse.decode(d, 4),
            encode=lambda: fr.encode(4),
            digest=digest_find_coordinator_response,
            expected=fr_digest,
        ),
    ]
    if kp is None:
        codecs.append(Codec(kp_label, missing=kp_missing))
    else:
        kp_fr = kafka_python_find_coordinator_response(kp, fr, 4)
        codecs.append(
            Codec(
                kp_label,
                decode=lambda d: kp.FindCoordinatorResponse.decode(d, version=4),
                encode=lambda: kp_fr.encode(version=4),
                digest=digest_find_coordinator_response,
                expected=fr_digest,
                targeted=True,
            )
        )
    codecs += [
        Codec(old_fc.label, missing=missing(old_fc, "FindCoordinatorResponse", 4)),
        Codec(aio_fc.label, missing=missing(aio_fc, "FindCoordinatorResponse", 4)),
    ]
    cases.append(
        Case(
            "3b",
            "FindCoordinatorResponse v4 encode+decode: 1000 coordinators",
            fr_bytes,
            True,
            2.0,
            codecs,
            reference=lambda d: digest_find_coordinator_response(FindCoordinatorResponse.decode(d, 4)),
        )
    )

    # i1. ApiVersionsResponse v2 decode (the newest version aiokafka has; no features).
    av2_bytes = av.encode(2)
    av2_digest = digest_api_versions_untagged(av)
    codecs = [
        Codec(
            KAFKACOMPAT,
            decode=lambda d: ApiVersionsResponse.decode(d, 2),
            digest=digest_api_versions_untagged,
            expected=av2_digest,
        ),
        Codec(kp_label, missing=kp_missing)
        if kp is None
        else Codec(
            kp_label,
            decode=lambda d: kp.ApiVersionsResponse.decode(d, version=2),
            digest=digest_api_versions_untagged,
            expected=av2_digest,
        ),
        legacy_decoder(old_av, "ApiVersionsResponse", 2, digest_api_versions_legacy, av2_digest),
        legacy_decoder(aio_av, "ApiVersionResponse", 2, digest_api_versions_legacy, av2_digest),
    ]
    cases.append(
        Case("i1", "(info) ApiVersionsResponse v2 decode: 60 api keys", av2_bytes, False, None, codecs)
    )

    # i2. MetadataResponse v5 encode+decode (the newest version aiokafka has).
    md5_bytes = md.encode(5)
    md5_digest = digest_metadata_v5(md)
    codecs = [
        Codec(
            KAFKACOMPAT,
            decode=lambda d: MetadataResponse.decode(d, 5),
            encode=lambda: md.encode(5),
            digest=digest_metadata_v5,
            expected=md5_digest,
        ),
    ]
    if kp is None:
        codecs.append(Codec(kp_label, missing=kp_missing))
    else:
        kp_md5 = kafka_python_metadata(kp, md, 5)
        codecs.append(
            Codec(
                kp_label,
                decode=lambda d: kp.MetadataResponse.decode(d, version=5),
                encode=lambda: kp_md5.encode(version=5),
                digest=digest_metadata_v5,
                expected=md5_digest,
            )
        )
    for lib in (old_md, aio_md):
        cls, why = lib.lookup("MetadataResponse", 5)
        if cls is None:
            codecs.append(Codec(lib.label, missing=why))
            continue
        obj = legacy_metadata_v5(cls, md)
        codecs.append(
            Codec(
                lib.label,
                decode=cls.decode,
                encode=obj.encode,
                digest=digest_metadata_v5_legacy,
                expected=md5_digest,
            )
        )
    cases.append(
        Case(
            "i2",
            "(info) MetadataResponse v5 encode+decode: 100 topics x 10 partitions",
            md5_bytes,
            True,
            None,
            codecs,
            reference=lambda d: digest_metadata_v5(MetadataResponse.decode(d, 5)),
        )
    )
    return cases


# --------------------------------------------------------------------------- running


def verify(case: Case, codec: Codec) -> tuple[str | None, str]:
    """``(problem, note)``: why the codec cannot be compared on this case, if it cannot."""
    assert codec.decode is not None and codec.digest is not None
    note = codec.note
    try:
        got = codec.digest(codec.decode(case.payload))
    except Exception as exc:
        return f"cannot decode the payload: {type(exc).__name__}: {exc}", note
    if got != codec.expected:
        return f"decodes the payload to other content: {first_difference(got, codec.expected)}", note
    if case.roundtrip and codec.encode is not None:
        try:
            encoded = bytes(codec.encode())
        except Exception as exc:
            return f"cannot encode the message: {type(exc).__name__}: {exc}", note
        if encoded != case.payload:
            try:
                same = case.reference(encoded) == case.reference(case.payload)
            except Exception as exc:
                return f"encodes bytes kafkacompat cannot read: {type(exc).__name__}: {exc}", note
            if not same:
                return "encodes the message to other content", note
            note = "; ".join(filter(None, [note, f"encodes other bytes ({len(encoded):,} B), same content"]))
    return None, note


def operation(codec: Codec, op: str, payload: bytes) -> Callable[[], object]:
    decode, encode = codec.decode, codec.encode
    assert decode is not None
    if op == "decode" or (op == "main" and encode is None):
        return lambda: decode(payload)
    assert encode is not None
    if op == "encode":
        return encode
    return lambda: decode(encode())


def run_case(case: Case, config: BenchConfig) -> list[Row]:
    checked: dict[str, tuple[str | None, str]] = {
        codec.impl: verify(case, codec) for codec in case.codecs if not codec.missing
    }
    timed = [codec for codec in case.codecs if not codec.missing and checked[codec.impl][0] is None]
    rows: list[Row] = []
    for op in case.operations():
        label = case.label(op)
        first = op == case.operations()[0]
        target = case.target if op == "main" else None
        in_op = [codec for codec in timed if not codec.only or op in codec.only]
        times = dict(
            zip(
                (codec.impl for codec in in_op),
                measure_many([operation(codec, op, case.payload) for codec in in_op], config, CLOCK),
                strict=True,
            )
        )
        base = times.get(KAFKACOMPAT)
        for codec in case.codecs:
            if codec.only and op not in codec.only:
                continue
            if codec.missing:
                if first:
                    rows.append(Row(label, codec.impl, note=codec.missing))
                continue
            problem, note = checked[codec.impl]
            if problem is not None:
                rows.append(Row(label, codec.impl, note=problem, error=True))
                continue
            seconds = times[codec.impl]
            rows.append(
                Row(
                    label,
                    codec.impl,
                    seconds,
                    ratio=None if codec.impl == KAFKACOMPAT or base is None else seconds / base,
                    target=codec.targets.get(op) if codec.targets else (target if codec.targeted else None),
                    note=note if first else "",
                )
            )
    return rows


# What a client that negotiates and fetches imports: the index, then three message modules.
# CPU time in the child: wall time on a busy machine mostly measures the other processes.
_IMPORT_PROBE = (
    "import time; t = time.process_time(); "
    "import kafkacompat.protocol.messages as m; "
    "m.ApiVersionsResponse, m.MetadataResponse, m.FetchResponse; "
    "print(time.process_time() - t)"
)
_IMPORT_PROBE_PROTOCOL = (
    "import time; t = time.process_time(); import kafkacompat.protocol; print(time.process_time() - t)"
)
_IMPORT_PROBE_ALL = (
    "import time; t = time.process_time(); "
    "import kafkacompat.protocol.messages as m; "
    "[getattr(m, name) for name in m.CLASS_MODULES]; "
    "print(time.process_time() - t)"
)


def _import_seconds(probe: str, repeats: int, env: dict[str, str]) -> float:
    """The best of ``repeats`` fresh interpreters, after one that writes the bytecode they read."""
    times = []
    for _ in range(repeats + 1):
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
        )
        times.append(float(out.stdout))
    return min(times[1:])


def _bytecode_env(cache: str) -> dict[str, str]:
    """The environment for the import probes: bytecode written to and read from ``cache``, not the tree.

    A user's installed kafkacompat imports from cached bytecode; so do the probes,
    even where ``PYTHONDONTWRITEBYTECODE`` is set for the shell.
    """
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def footprint_rows(config: BenchConfig) -> list[Row]:
    """Informational: import time and the size of the generated code and the wheel (no target, no peer)."""
    from kafkacompat.protocol import codec_path

    folder = Path(__file__).resolve().parent.parent / "kafkacompat" / "protocol" / "messages"
    files = sorted(folder.glob("*.py"))
    size = sum(p.stat().st_size for p in files)
    lines = sum(p.read_text(encoding="utf-8").count("\n") for p in files)
    repeats = 2 if config.quick else 5
    with tempfile.TemporaryDirectory() as cache:
        env = _bytecode_env(cache)
        pure_env = {**env, "KAFKACOMPAT_CODEC": "pure"}
        imports = [
            _import_seconds(probe, repeats, env)
            for probe in (_IMPORT_PROBE_PROTOCOL, _IMPORT_PROBE, _IMPORT_PROBE_ALL)
        ]
        pure_all = _import_seconds(_IMPORT_PROBE_ALL, repeats, pure_env)
    path = codec_path.current()
    note = f"CPU time, fresh interpreter, bytecode cached, best of runs; {path} path"
    native = sorted(folder.parent.glob("_native*.so")) + sorted(folder.parent.glob("_native*.pyd"))
    source = folder.parent / "_native.c"
    return [
        Row("i. import: kafkacompat.protocol", "kafkacompat", imports[0], note=note),
        Row(
            "i. import: messages index + ApiVersions, Metadata, Fetch modules",
            "kafkacompat",
            imports[1],
            note=note,
        ),
        Row(
            "i. import: every message module",
            "kafkacompat",
            imports[2],
            note=f"{len(files)} modules; {note}",
        ),
        Row(
            "i. import: every message module",
            "kafkacompat (pure Python)",
            pure_all,
            note=f"{len(files)} modules, KAFKACOMPAT_CODEC=pure: no native readers made",
        ),
        Row(
            "i. generated code size",
            "kafkacompat",
            note=f"kafkacompat/protocol/messages: {len(files)} files, {size / 1e6:.2f} MB, {lines} lines",
        ),
        Row(
            "i. native reader size",
            "kafkacompat",
            note=(
                f"{native[0].name}: {native[0].stat().st_size / 1e3:.0f} kB"
                if native
                else f"not built ({codec_path.native_unavailable()})"
            )
            + f"; _native.c: {source.read_text(encoding='utf-8').count(chr(10))} lines",
        ),
        Row("i. wheel size", "kafkacompat", note=wheel_size()),
        Row("i. wheel size", "kafkacompat (pure Python)", note=wheel_size({"KAFKACOMPAT_NATIVE": "0"})),
    ]


def wheel_size(extra_env: Mapping[str, str] | None = None) -> str:
    """The size of the wheel ``python -m build`` makes from this tree (in a temporary folder)."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, **(extra_env or {})}
    with tempfile.TemporaryDirectory() as out:
        try:
            subprocess.run(
                [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, str(root)],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            )
        except subprocess.CalledProcessError as exc:
            return f"could not build the wheel: {' '.join(exc.stderr.strip().splitlines()[-1:]) or exc}"
        except OSError as exc:
            return f"could not build the wheel: {exc}"
        wheels = list(Path(out).glob("*.whl"))
        if not wheels:
            return "the build made no wheel"
        return f"{wheels[0].name}: {wheels[0].stat().st_size / 1e6:.2f} MB"


def run(config: BenchConfig) -> list[Row]:
    from bench.codec_targets import build_target_cases  # it builds on this module's payloads

    rows: list[Row] = []
    for case in [*build_target_cases(), *build_cases()]:
        rows.extend(run_case(case, config))
    rows.extend(footprint_rows(config))
    return rows
