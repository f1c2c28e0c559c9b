"""``ConnectionConfig.client_id`` is a connection's one client id; the handshake's follows it."""

from __future__ import annotations

import pytest

from kafkacompat.connection.client_connection import ClientConnection, Ready
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.config import SaslConfig as ClientSasl
from kafkacompat.connection.sasl import SaslLogin
from kafkacompat.connection.sasl_mechanisms import create_mechanism
from kafkacompat.errors import ConfigError
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.protocol import messages
from kafkacompat.protocol.messages import ApiKey
from kafkacompat.testing.emulator import ClusterState, Node, SaslConfig, profile_for
from tests.support.memory_wire import MemoryWire, round_trip, set_up


@pytest.mark.parametrize("client_id", ["billing-7", None, ""])
def test_the_handshake_carries_the_connection_client_id(client_id: str | None) -> None:
    config = ConnectionConfig(client_id=client_id)
    assert config.handshake.client_id == client_id
    assert config.client_id == client_id


def test_other_handshake_settings_survive_the_copy() -> None:
    handshake = HandshakeConfig(max_version=2, fallback_release="0.9.0")
    config = ConnectionConfig(client_id="billing-7", handshake=handshake)
    assert (config.handshake.max_version, config.handshake.fallback_release) == (2, "0.9.0")
    assert config.handshake.fallback_ranges == handshake.fallback_ranges


def test_a_second_different_client_id_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"client_id is set twice: 'a' .* 'b'"):
        ConnectionConfig(client_id="a", handshake=HandshakeConfig(client_id="b"))
    same = ConnectionConfig(client_id="a", handshake=HandshakeConfig(client_id="a"))
    assert same.handshake.client_id == "a"


def test_the_sans_io_connection_takes_its_client_id_from_the_config_alone() -> None:
    assert ClientConnection(ConnectionConfig(client_id="a")).config.client_id == "a"
    with pytest.raises(TypeError):
        ClientConnection(ConnectionConfig(client_id="a"), client_id="b")  # type: ignore[call-arg]


@pytest.mark.parametrize("client_id", ["billing-7", None])
def test_every_request_of_a_connection_carries_the_configured_client_id(client_id: str | None) -> None:
    config = ConnectionConfig(client_id=client_id)
    sasl = ClientSasl("SCRAM-SHA-256", "alice", "secret")  # type: ignore[arg-type]
    client = ClientConnection(config, node="b", sasl=SaslLogin(lambda: create_mechanism(sasl), "alice"))
    profile = profile_for("3.9", "zk-broker")
    wire = MemoryWire(ClusterState([Node(1, profile, port=9092)]), sasl=SaslConfig({"alice": "secret"}))
    assert isinstance(set_up(client, wire), Ready)
    round_trip(client, wire, messages.MetadataRequest(topics=[]), messages.DescribeClusterRequest())
    keys = [record.api_key for record in wire.records]
    assert keys[0] == ApiKey.API_VERSIONS and ApiKey.SASL_AUTHENTICATE in keys
    assert keys[-2:] == [ApiKey.METADATA, ApiKey.DESCRIBE_CLUSTER]
    assert {record.client_id for record in wire.records} == {client_id}
