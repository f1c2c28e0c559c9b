"""``ConnectionConfig.client_id`` is a connection's one client id: every header carries it, none other can."""

from __future__ import annotations

import pytest

from kafkacompat.connection.client_connection import ClientConnection, Ready
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.sasl import SaslLogin
from kafkacompat.connection.sasl_mechanisms import create_mechanism
from kafkacompat.connection.security import SaslConfig as ClientSasl
from kafkacompat.errors import ConfigError
from kafkacompat.negotiation.handshake import HandshakeConfig
from kafkacompat.protocol import messages
from kafkacompat.protocol.messages import ApiKey
from kafkacompat.testing.emulator import ClusterState, FaultPlan, Node, SaslConfig, profile_for
from tests.support.memory_wire import MemoryWire, round_trip, set_up


@pytest.mark.parametrize("client_id", ["billing-7", None, ""])
def test_the_config_makes_the_headers_of_its_connections_from_its_client_id(client_id: str | None) -> None:
    config = ConnectionConfig(client_id=client_id)
    assert config.request_headers.client_id == client_id


def test_nothing_else_takes_a_client_id() -> None:
    with pytest.raises(TypeError):
        HandshakeConfig(client_id="b")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        ClientConnection(ConnectionConfig(client_id="a"), client_id="b")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        ConnectionConfig(request_headers=None)  # type: ignore[call-arg]  # made from client_id, not set


def test_a_client_id_a_header_cannot_carry_is_refused_when_configured() -> None:
    with pytest.raises(ConfigError, match="client_id must be a str or None"):
        ConnectionConfig(client_id=7)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="cannot be written in a request header"):
        ConnectionConfig(client_id="x" * 40_000)  # past an int16 string length


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


def test_the_pre_0_10_probe_carries_it_too() -> None:
    """A 0.9 broker skips ApiVersions: the Metadata v0 probe that tells it goes out with the client id."""
    config = ConnectionConfig(client_id="billing-7")
    client = ClientConnection(config, node="b")
    wire = MemoryWire(ClusterState([Node(1, profile_for("0.9.0"), port=9092)]), faults=FaultPlan(()))
    assert isinstance(set_up(client, wire), Ready)
    keys = [record.api_key for record in wire.records]
    assert ApiKey.METADATA in keys  # the probe
    assert {record.client_id for record in wire.records} == {"billing-7"}
