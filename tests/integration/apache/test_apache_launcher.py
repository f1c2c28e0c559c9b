"""``ApacheKafka`` itself: what it refuses, how a failed fetch reads, and that stopping leaves nothing."""

from __future__ import annotations

import os

import pytest

from kafkacompat._cache import cache_root
from kafkacompat.errors import BrokerStartError, ReleaseDownloadError
from kafkacompat.testing import ApacheKafka
from kafkacompat.testing.apache_kafka import modes_of
from tests.integration.apache.conftest import warm_up
from tests.integration.cli.cli_runner import FAST, Runner

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


async def test_a_sasl_plain_listener_lets_the_right_user_in(
    cli: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    kafka = ApacheKafka("3.9.2", mode="kraft-combined", sasl_plain_users={"alice": "alice-secret"})
    with kafka:
        assert kafka.sasl_bootstrap is not None and kafka.sasl_bootstrap != kafka.bootstrap
        warm_up(kafka)  # the offsets topic exists: a coordinator answers
        login = (
            "--sasl-mechanism",
            "PLAIN",
            "--sasl-username",
            "alice",
            "--sasl-password-env",
            "ALICE_PASSWORD",
        )
        monkeypatch.setenv("ALICE_PASSWORD", "alice-secret")
        good = await cli("coordinators", kafka.sasl_bootstrap, "--group", "g", *login, *FAST)
        assert good.code == 0, good.output
        monkeypatch.setenv("ALICE_PASSWORD", "wrong")
        bad = await cli("coordinators", kafka.sasl_bootstrap, "--group", "g", *login, *FAST)
        assert bad.code != 0 and "Authentication" in bad.output, bad.output
