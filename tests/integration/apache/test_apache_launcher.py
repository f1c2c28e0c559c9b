"""``ApacheKafka`` itself: what it refuses, how a failed fetch reads, and that stopping leaves nothing."""

from __future__ import annotations

import os

import pytest

from kafkacompat._cache import cache_root
from kafkacompat.errors import BrokerStartError, ReleaseDownloadError
from kafkacompat.testing import ApacheKafka
from kafkacompat.testing.apache_kafka import modes_of

pytestmark = pytest.mark.broker


def test_modes_follow_the_release() -> None:
    assert modes_of("2.7.2") == ("zookeeper",)
    assert modes_of("3.9.2") == ("zookeeper", "kraft-combined", "kraft-split")
    assert modes_of("4.0.2") == ("kraft-combined", "kraft-split")
    with pytest.raises(BrokerStartError, match=r"4\.0\.2 cannot run in mode 'zookeeper'"):
        ApacheKafka("4.0.2", mode="zookeeper")
    with pytest.raises(BrokerStartError, match="not an Apache Kafka release number"):
        ApacheKafka("latest")
    with pytest.raises(BrokerStartError, match="KRaft format options"):
        ApacheKafka("3.9.2", mode="zookeeper", release_version="3.9-IV0")


@pytest.mark.parametrize(
    ("mode", "brokers"), [("kraft-split", 1), ("kraft-combined", 2)], ids=["split", "combined-2-brokers"]
)
def test_kafka_2_8_kraft_runs_only_its_sole_voter_and_says_why(mode: str, brokers: int) -> None:
    ApacheKafka("2.8.2", mode="kraft-combined")  # one node, broker and controller: it runs (matrix)
    with pytest.raises(BrokerStartError) as refused:
        ApacheKafka("2.8.2", mode=mode, brokers=brokers)
    message = str(refused.value)
    assert message.startswith("Apache Kafka 2.8.2's KRaft (early access) can run only one node")
    assert "DataInputStreamReadable.remaining() is InputStream.available()" in message
    assert "RegisterBrokerRecord" in message


def test_a_release_maven_central_does_not_have_is_a_download_error_naming_it() -> None:
    kafka = ApacheKafka("9.9.9", mode="kraft-combined")  # one Scala suffix to try: 2.13
    with pytest.raises(ReleaseDownloadError) as caught:
        kafka.start()
    message = str(caught.value)
    assert message.startswith("cannot fetch Apache Kafka 9.9.9 from Maven Central; ")
    assert "org.apache.kafka:kafka_2.13:9.9.9: " in message and "9.9.9" in message.split(": ", 2)[2]
    assert not (cache_root() / "apache-kafka" / "9.9.9").exists()  # nothing half-fetched is kept
    assert not kafka.running and kafka.workdir is None


def test_stopping_leaves_no_process_and_no_file() -> None:
    with ApacheKafka("3.9.2", mode="kraft-combined") as kafka:
        pids, workdir = kafka.pids, kafka.workdir
        assert workdir is not None and workdir.is_dir()
        assert set(pids) == {"combined-1"} and kafka.running
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not workdir.exists()
    assert kafka.pids == {} and not kafka.running
