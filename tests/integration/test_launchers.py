"""The testing kit's real-broker launchers: started on 127.0.0.1, stopped without leaving anything behind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kafkacompat.errors import BrokerStartError
from kafkacompat.testing import LibrdkafkaMockBroker, NoidaBroker, install_confluent_kafka
from kafkacompat.testing.ports import probe_api_versions

pytestmark = pytest.mark.broker


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_noida_runs_on_loopback_and_leaves_nothing_behind() -> None:
    with NoidaBroker() as broker:
        assert broker.host == "127.0.0.1" and broker.running
        data_dir = broker.data_dir
        assert data_dir is not None and data_dir.is_dir()
        answer = probe_api_versions(broker.host, broker.port, 1, timeout=5)
        assert any(entry.api_key == 18 and entry.max_version == 3 for entry in answer.api_keys)
    assert not broker.running and broker.returncode is not None
    assert not data_dir.exists() and broker.data_dir is None
    assert _port_is_free(broker.port)


def test_noida_on_a_taken_port_is_a_start_error_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(BrokerStartError, match=f"port {port} is already in use"):
            NoidaBroker(port=port).start()


def test_the_old_mock_leaves_when_its_stdin_closes(tmp_path: Path) -> None:
    cache = install_confluent_kafka()  # the default cache: installed once, then reused
    assert (cache / "confluent_kafka" / "__init__.py").is_file()
    assert install_confluent_kafka() == cache
    with LibrdkafkaMockBroker(num_brokers=2) as mock:
        assert mock.librdkafka_version == "2.0.2"
        assert sorted(mock.brokers) == [1, 2] and all(h == "127.0.0.1" for h, _ in mock.brokers.values())
        ports = [port for _, port in mock.brokers.values()]
    assert mock.returncode == 0  # it exited by itself, cleanly, rather than being terminated
    assert all(_port_is_free(port) for port in ports)


def test_a_confluent_kafka_that_does_not_exist_is_a_start_error(tmp_path: Path) -> None:
    with pytest.raises(BrokerStartError, match=r"could not install confluent-kafka 0\.0\.1"):
        install_confluent_kafka("0.0.1", cache=tmp_path)
    assert list(tmp_path.iterdir()) == []  # no half-finished install left behind
