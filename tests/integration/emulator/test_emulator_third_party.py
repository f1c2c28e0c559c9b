"""Real clients against emulated 2.3 and 3.9 brokers: librdkafka (confluent-kafka) and kafka-python.

What each negotiated is read from the brokers' request logs: the ApiVersions
versions tried and how they were answered, and the Metadata version used.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkacompat.testing import ThreadedCluster
from kafkacompat.testing.emulator import RequestRecord

Factory = Callable[..., ThreadedCluster]

# Metadata: the highest version both sides know (librdkafka 2.x and kafka-python 3.x go to v12).
EXPECTED_METADATA = {"2.3": 8, "3.9": 12}


def versions_used(log: list[RequestRecord], api_key: int) -> set[int]:
    return {r.api_version for r in log if r.api_key == api_key}


@pytest.mark.parametrize("release", ["2.3", "3.9"])
def test_librdkafka_lists_metadata(threaded_emulated_cluster: Factory, release: str) -> None:
    admin_module = pytest.importorskip("confluent_kafka.admin")
    cluster = threaded_emulated_cluster(release, brokers=2, topics={"orders": 3, "audit": 1})
    admin = admin_module.AdminClient({
        "bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 5000, "log_level": 0,
    })
    metadata = admin.list_topics(timeout=10)
    assert sorted(metadata.topics) == ["audit", "orders"]
    assert len(metadata.topics["orders"].partitions) == 3
    assert {b.id: b.port for b in metadata.brokers.values()} == {
        b.node_id: b.port for b in cluster.brokers
    }
    assert metadata.cluster_id == "kafkacompat-emulated" and metadata.controller_id == 1
    log = list(cluster.requests)
    assert all(r.client_id == "rdkafka" and r.answered for r in log), log
    api_versions = [(r.api_version, r.outcome) for r in log if r.api_key == 18]
    if release == "2.3":
        # librdkafka starts at v3; 2.3 answers the v0 layout with empty ApiKeys; it retries at v0.
        assert (3, "answered: UNSUPPORTED_VERSION (v0 layout)") in api_versions
        assert (0, "answered") in api_versions
        assert versions_used(log, 18) == {0, 3}
    else:
        assert api_versions and set(api_versions) == {(3, "answered")}
    assert versions_used(log, 3) == {EXPECTED_METADATA[release]}


@pytest.mark.parametrize("release", ["2.3", "3.9"])
def test_kafka_python_lists_metadata(threaded_emulated_cluster: Factory, release: str) -> None:
    kafka_admin = pytest.importorskip("kafka.admin")
    cluster = threaded_emulated_cluster(release, brokers=2, topics={"orders": 3})
    admin = kafka_admin.KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap, request_timeout_ms=5000, client_id="kafka-python-tests"
    )
    try:
        # kafka-python infers the release from the ApiVersions answer.
        assert admin._client.check_version() == tuple(int(p) for p in release.split("."))
        assert sorted(admin.list_topics()) == ["orders"]
        described = admin.describe_cluster()
    finally:
        admin.close()
    assert described["cluster_id"] == "kafkacompat-emulated"
    assert sorted(b["broker_id"] for b in described["brokers"]) == [1, 2]
    log = list(cluster.requests)
    assert all(r.answered for r in log), log
    api_versions = {(r.api_version, r.outcome) for r in log if r.api_key == 18}
    if release == "2.3":
        # kafka-python 3 asks v4 first: refused in the v0 layout, then v0; later connections
        # go straight to what it learned.
        assert (4, "answered: UNSUPPORTED_VERSION (v0 layout)") in api_versions
        assert {v for v, outcome in api_versions if outcome == "answered"} <= {0, 1, 2}
        assert 60 not in {r.api_key for r in log}  # no DescribeCluster before 2.8
    else:
        assert api_versions == {(4, "answered")}
        assert versions_used(log, 60) == {1}  # DescribeCluster v1 (KIP-919)
    assert versions_used(log, 3) == {EXPECTED_METADATA[release]}
