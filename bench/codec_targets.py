"""The codec's targets against the fastest peer: four responses, decode and encode timed apart.

Peers, measured in the same run on the same bytes:

* ``kio`` (PyPI ``kio``): dataclasses generated from Kafka's specs; its
  decoder is a Rust extension (``kio._kio_native``), its encoder Python.
* ``kafka-python``: kafka-python 3.x's schema-driven codec.

The targets: decode at least as fast as kio and 3x kafka-python; encode 3x
kafka-python and ahead of kio.  kafkacompat is timed on the codec path in use
(``kafkacompat.protocol.codec_path``: the native reader where it is built) and,
beside it, decoding with the generated Python readers alone (``kafkacompat (pure
Python)``; its ratio is its time over the path in use).  Encoding is the same
on both paths.  Each payload is built once with kafkacompat;
before timing, every peer must decode it to the same content and encode its
own copy (built with its public constructors, outside the timed code) to the
same bytes or to bytes kafkacompat reads as the same content.
"""

from __future__ import annotations

import datetime
import importlib
import io
from collections.abc import Callable
from types import ModuleType
from typing import Any

from bench.codec import (
    KAFKA_PYTHON,
    KAFKACOMPAT,
    UNSET_OPERATIONS,
    Case,
    Codec,
    _digest_metadata,
    _dist_version,
    _load_kafka_python,
    api_versions_message,
    digest_api_versions,
    digest_find_coordinator_response,
    digest_metadata,
    digest_metadata_kafka_python,
    find_coordinator_response,
    kafka_python_find_coordinator_response,
    kafka_python_metadata,
    metadata_message,
)
from kafkacompat.errors import DecodeError
from kafkacompat.protocol import codec_path
from kafkacompat.protocol.message import KafkaMessage, decode_at
from kafkacompat.protocol.messages import ApiVersionsResponse, FindCoordinatorResponse, MetadataResponse

__all__ = ["build_target_cases"]

KIO = "kio"
KAFKACOMPAT_PURE = f"{KAFKACOMPAT} (pure Python)"

# The ratios kafkacompat must reach, per peer and operation (peer time / kafkacompat time).
KIO_TARGETS = {"decode": 1.0, "encode": 1.0}
KAFKA_PYTHON_TARGETS = {"decode": 3.0, "encode": 3.0}


# --------------------------------------------------------------------------- kio


def _load_kio() -> tuple[Callable[[str], ModuleType] | None, str]:
    try:
        importlib.import_module("kio.serial")
    except ImportError as exc:
        return None, f"kio is not installed ({exc})"
    return (lambda name: importlib.import_module(f"kio.schema.{name}")), ""


def _kio_codec(obj: Any, digest: Callable[[Any], Any], expected: Any, label: str) -> Codec:
    from kio.serial import entity_reader, entity_writer

    reader = entity_reader(type(obj))
    writer = entity_writer(type(obj))

    def decode(data: bytes | bytearray) -> Any:
        return reader(data, 0)[0]

    def encode() -> bytes:
        buffer = io.BytesIO()
        writer(buffer, obj)
        return buffer.getvalue()

    return Codec(
        label,
        decode=decode,
        encode=encode,
        digest=digest,
        expected=expected,
        note="decoder: Rust extension; encoder: Python",
        targets=KIO_TARGETS,
    )


def _ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def kio_metadata(schema: ModuleType, m: MetadataResponse) -> Any:
    from kio.schema.errors import ErrorCode

    return schema.MetadataResponse(
        throttle_time=_ms(m.throttle_time_ms),
        brokers=tuple(
            schema.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in m.brokers
        ),
        cluster_id=m.cluster_id,
        controller_id=m.controller_id,
        topics=tuple(
            schema.MetadataResponseTopic(
                error_code=ErrorCode(t.error_code),
                name=t.name,
                topic_id=t.topic_id,
                is_internal=t.is_internal,
                partitions=tuple(
                    schema.MetadataResponsePartition(
                        error_code=ErrorCode(p.error_code),
                        partition_index=p.partition_index,
                        leader_id=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replica_nodes=tuple(p.replica_nodes),
                        isr_nodes=tuple(p.isr_nodes),
                        offline_replicas=tuple(p.offline_replicas),
                    )
                    for p in t.partitions
                ),
                topic_authorized_operations=t.topic_authorized_operations,
            )
            for t in m.topics
        ),
    )


def kio_find_coordinator(schema: ModuleType, m: FindCoordinatorResponse) -> Any:
    from kio.schema.errors import ErrorCode

    return schema.FindCoordinatorResponse(
        throttle_time=_ms(m.throttle_time_ms),
        coordinators=tuple(
            schema.Coordinator(
                key=c.key,
                node_id=c.node_id,
                host=c.host,
                port=c.port,
                error_code=ErrorCode(c.error_code),
                error_message=c.error_message,
            )
            for c in m.coordinators
        ),
    )


def kio_api_versions(schema: ModuleType, m: ApiVersionsResponse) -> Any:
    from kio.schema.errors import ErrorCode

    return schema.ApiVersionsResponse(
        error_code=ErrorCode(m.error_code),
        api_keys=tuple(
            schema.ApiVersion(api_key=k.api_key, min_version=k.min_version, max_version=k.max_version)
            for k in m.api_keys
        ),
        throttle_time=_ms(m.throttle_time_ms),
        supported_features=tuple(
            schema.SupportedFeatureKey(name=f.name, min_version=f.min_version, max_version=f.max_version)
            for f in m.supported_features
        ),
        finalized_features_epoch=m.finalized_features_epoch,
        finalized_features=tuple(
            schema.FinalizedFeatureKey(
                name=f.name, max_version_level=f.max_version_level, min_version_level=f.min_version_level
            )
            for f in m.finalized_features
        ),
        zk_migration_ready=m.zk_migration_ready,
    )


def digest_metadata_kio(m: Any) -> Any:
    """kio's Metadata v12 has no cluster-level authorized operations (the field ends at v10)."""
    return _digest_metadata(
        m, topic_ops=lambda t: t.topic_authorized_operations, cluster_ops=lambda _m: UNSET_OPERATIONS
    )


# --------------------------------------------------------------------------- kafkacompat's two paths


def pure_decoder(cls: type[KafkaMessage], version: int) -> Callable[[bytes | bytearray], Any]:
    """``cls.decode`` at ``version`` on the generated Python reader, whichever path is in use."""
    reader = cls._READERS[version]
    reader = getattr(reader, "fallback", reader)  # a native reader keeps the Python one beside it

    def decode(data: bytes | bytearray) -> Any:
        obj, end = decode_at(cls.NAME, reader, data, 0, version)
        if end != len(data):
            raise DecodeError(f"{len(data) - end} bytes left over", what=cls.NAME, version=version)
        return obj

    return decode


# --------------------------------------------------------------------------- cases


def build_target_cases() -> list[Case]:
    kp, kp_missing = _load_kafka_python()
    kp_label = f"{KAFKA_PYTHON} {_dist_version('kafka-python')}" if kp is not None else KAFKA_PYTHON
    kio_schema, kio_missing = _load_kio()
    kio_label = f"{KIO} {_dist_version('kio')}" if kio_schema is not None else KIO

    def case(
        key: str,
        title: str,
        message: KafkaMessage,
        version: int,
        digest: Callable[[Any], Any],
        kio_module: str,
        kio_build: Callable[[ModuleType, Any], Any],
        kio_digest: Callable[[Any], Any],
        kp_build: Callable[[ModuleType, Any, int], Any],
        kp_digest: Callable[[Any], Any],
    ) -> Case:
        cls = type(message)
        payload = message.encode(version)
        expected = digest(message)
        codecs = [
            Codec(
                KAFKACOMPAT,
                decode=lambda d: cls.decode(d, version),
                encode=lambda: message.encode(version),
                digest=digest,
                expected=expected,
                note=f"decode: {codec_path.describe()}",
            )
        ]
        if codec_path.current() == codec_path.NATIVE:
            codecs.append(
                Codec(
                    KAFKACOMPAT_PURE,
                    decode=pure_decoder(cls, version),
                    digest=digest,
                    expected=expected,
                    note="the generated Python readers: the fallback where no native reader is built",
                    only=("decode",),
                )
            )
        if kio_schema is None:
            codecs.append(Codec(kio_label, missing=kio_missing))
        else:
            schema = kio_schema(kio_module)
            codecs.append(_kio_codec(kio_build(schema, message), kio_digest, expected, kio_label))
        if kp is None:
            codecs.append(Codec(kp_label, missing=kp_missing))
        else:
            kp_message = kp_build(kp, message, version)
            kp_cls = type(kp_message)
            codecs.append(
                Codec(
                    kp_label,
                    decode=lambda d: kp_cls.decode(d, version=version),
                    encode=lambda: kp_message.encode(version=version),
                    digest=kp_digest,
                    expected=expected,
                    targets=KAFKA_PYTHON_TARGETS,
                )
            )
        return Case(
            key,
            title,
            payload,
            True,
            None,
            codecs,
            reference=lambda d: digest(cls.decode(d, version)),
            ops=("decode", "encode"),
        )

    def kp_api_versions(kp: ModuleType, m: ApiVersionsResponse, version: int) -> Any:
        # kafka-python 3.x accepts the same field names; its message is built from kafkacompat's values.
        cls = kp.ApiVersionsResponse
        return cls(
            version=version,
            error_code=m.error_code,
            api_keys=[
                cls.ApiVersion(api_key=k.api_key, min_version=k.min_version, max_version=k.max_version)
                for k in m.api_keys
            ],
            throttle_time_ms=m.throttle_time_ms,
            supported_features=[
                cls.SupportedFeatureKey(name=f.name, min_version=f.min_version, max_version=f.max_version)
                for f in m.supported_features
            ],
            finalized_features_epoch=m.finalized_features_epoch,
            finalized_features=[
                cls.FinalizedFeatureKey(
                    name=f.name, max_version_level=f.max_version_level, min_version_level=f.min_version_level
                )
                for f in m.finalized_features
            ],
            zk_migration_ready=m.zk_migration_ready,
        )

    metadata = metadata_message(n_topics=100, n_partitions=12, n_brokers=20)
    coordinators = find_coordinator_response(n_keys=1000)
    api_versions = api_versions_message()
    return [
        case(
            "T1",
            "MetadataResponse v12: 20 brokers, 100 topics x 12 partitions",
            metadata,
            12,
            digest_metadata,
            "metadata.v12.response",
            kio_metadata,
            digest_metadata_kio,
            kafka_python_metadata,
            digest_metadata_kafka_python,
        ),
        case(
            "T2",
            "FindCoordinatorResponse v4: 1000 keys",
            coordinators,
            4,
            digest_find_coordinator_response,
            "find_coordinator.v4.response",
            kio_find_coordinator,
            digest_find_coordinator_response,
            kafka_python_find_coordinator_response,
            digest_find_coordinator_response,
        ),
        *(
            case(
                f"T{version}",
                f"ApiVersionsResponse v{version}: 60 api keys, 4+3 features, epoch",
                api_versions,
                version,
                digest_api_versions,
                f"api_versions.v{version}.response",
                kio_api_versions,
                digest_api_versions,
                kp_api_versions,
                digest_api_versions,
            )
            for version in (3, 4)
        ),
    ]
