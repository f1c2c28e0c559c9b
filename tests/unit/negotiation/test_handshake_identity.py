"""ApiVersions v5 (KIP-1242): the identity sent, the typed refusals, and the per-broker memory.

The broker behaviour fed here is what a real Kafka 4.4.0 node did (broker listener:
129 to a wrong cluster or node id, 42 to a ClusterId without a NodeId; 4.3.1:
UNSUPPORTED_VERSION naming ApiVersions 0-4 in the v0 layout).
"""

from __future__ import annotations

import pytest

from kafkacompat.errors import (
    ClusterMismatchError,
    HandshakeConfigError,
    IdentityRefusedError,
    InvalidRequestError,
    RebootstrapRequiredError,
)
from kafkacompat.negotiation.handshake import ApiVersionsHandshake, Done, Fail, HandshakeConfig, SendRequest
from kafkacompat.negotiation.handshake.identity import (
    ApiVersionsMemory,
    BrokerIdentity,
    broker_node_id,
    check_cluster_id,
    check_node_at_address,
    identity_for,
)
from kafkacompat.protocol.broker_framing import decode_request
from kafkacompat.protocol.messages import ApiVersionsResponse

R = ApiVersionsResponse
CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"
ME = BrokerIdentity(CLUSTER, 1)
INT32_MAX = 2**31 - 1


def answer(version: int, error: int = 0, top: int = 5) -> bytes:
    keys = [R.ApiVersion(api_key=18, min_version=0, max_version=top)] if error in (0, 35) else []
    return R(error_code=error, api_keys=keys).encode(version)


def kafka_44(identity_ok: bool = True):  # type: ignore[no-untyped-def]
    def peer(version: int, request: object) -> bytes:
        return answer(version, 0 if identity_ok else 129)

    return peer


def kafka_43(version: int, request: object) -> bytes:
    return answer(version, top=4) if version <= 4 else answer(0, 35, top=4)


def run(hs: ApiVersionsHandshake, peer) -> tuple[list[SendRequest], object]:  # type: ignore[no-untyped-def]
    sent: list[SendRequest] = []
    hs.connected()
    while True:
        action = hs.next_action()
        if isinstance(action, Done | Fail):
            return sent, action
        assert isinstance(action, SendRequest), action
        sent.append(action)
        hs.request_sent()
        hs.received(peer(action.version, decode_request(action.frame[4:]).body))


def body_of(action: SendRequest):  # type: ignore[no-untyped-def]
    return decode_request(action.frame[4:]).body


def test_a_known_broker_gets_its_identity_at_v5_and_the_transcript_says_it_was_sent() -> None:
    sent, final = run(ApiVersionsHandshake(node="b:1", identity=ME), kafka_44())
    (request,) = sent
    assert request.version == 5
    assert (body_of(request).cluster_id, body_of(request).node_id) == (CLUSTER, 1)
    assert isinstance(final, Done)
    assert final.result.transcript.identity_sent == ME
    assert final.result.transcript.to_dict()["identity"] == {"cluster_id": CLUSTER, "node_id": 1}


def test_a_bootstrap_connection_sends_no_identity() -> None:
    sent, final = run(ApiVersionsHandshake(node="b:1"), kafka_44())
    assert (body_of(sent[0]).cluster_id, body_of(sent[0]).node_id) == (None, -1)
    assert isinstance(final, Done) and final.result.transcript.identity_sent is None


def test_rebootstrap_required_is_typed_and_names_the_broker_meant() -> None:
    _, final = run(ApiVersionsHandshake(node="b:1", identity=ME), kafka_44(identity_ok=False))
    assert isinstance(final, Fail) and final.close_connection
    error = final.error
    assert isinstance(error, RebootstrapRequiredError)
    assert (error.expected_cluster_id, error.expected_node_id, error.error_code) == (CLUSTER, 1, 129)
    assert f"node 1 of cluster {CLUSTER}" in str(error) and "someone else" in str(error)
    assert "\n" not in str(error)


def test_invalid_request_to_an_identity_is_diagnosed_as_a_refused_identity() -> None:
    _, final = run(ApiVersionsHandshake(node="b:1", identity=ME), lambda v, r: answer(v, 42))
    assert isinstance(final, Fail) and isinstance(final.error, IdentityRefusedError)
    assert final.error.expected_cluster_id == CLUSTER and "identity" in str(final.error)
    _, final = run(ApiVersionsHandshake(node="b:1"), lambda v, r: answer(v, 42))
    # no identity sent: the cause is KIP-511's software fields, as before v5
    assert isinstance(final, Fail) and type(final.error) is InvalidRequestError
    assert "client software" in str(final.error)


def test_a_pre_44_broker_costs_one_extra_round_trip_once_with_a_memory() -> None:
    memory = ApiVersionsMemory()
    sent, final = run(ApiVersionsHandshake(node="b:1", identity=ME, memory=memory), kafka_43)
    assert [a.version for a in sent] == [5, 4]
    assert isinstance(final, Done) and final.result.transcript.round_trips == 2
    assert body_of(sent[1]).cluster_id is None  # v4 has no identity fields
    assert memory.recall("b:1") == 4
    for _ in range(3):  # every later connection starts at the broker's max: one round trip
        sent, final = run(ApiVersionsHandshake(node="b:1", identity=ME, memory=memory), kafka_43)
        assert [a.version for a in sent] == [4]
        assert isinstance(final, Done) and final.result.transcript.round_trips == 1
        assert any("advertised no higher version" in n for n in final.result.transcript.notes)
    sent, _ = run(ApiVersionsHandshake(node="b:1"), kafka_43)  # without the memory: two again
    assert [a.version for a in sent] == [5, 4]


def test_an_upgraded_broker_is_offered_v5_again_once_it_advertises_it() -> None:
    memory = ApiVersionsMemory()
    memory.remember("b:1", 4)
    sent, _ = run(ApiVersionsHandshake(node="b:1", identity=ME, memory=memory), kafka_44())
    assert [a.version for a in sent] == [4]  # the remembered max; the answer advertises 0-5
    assert memory.recall("b:1") == 5
    sent, _ = run(ApiVersionsHandshake(node="b:1", identity=ME, memory=memory), kafka_44())
    assert [a.version for a in sent] == [5] and body_of(sent[0]).node_id == 1


def test_a_close_at_the_remembered_version_forgets_the_broker() -> None:
    memory = ApiVersionsMemory()
    memory.remember("b:1", 4)
    hs = ApiVersionsHandshake(node="b:1", memory=memory)
    hs.connected()
    hs.request_sent()
    hs.connection_closed()
    assert memory.recall("b:1") is None


def test_the_memory_is_bounded_and_keeps_the_recently_used() -> None:
    memory = ApiVersionsMemory(capacity=2)
    memory.remember("a:1", 4)
    memory.remember("b:1", 3)
    assert memory.recall("a:1") == 4  # a is now the most recently used
    memory.remember("c:1", 2)
    assert (len(memory), memory.recall("b:1"), memory.recall("a:1")) == (2, None, 4)
    with pytest.raises(HandshakeConfigError):
        ApiVersionsMemory(capacity=0)


@pytest.mark.parametrize(
    ("cluster_id", "node_id"), [("", 1), (None, 1), (CLUSTER, -1), (CLUSTER, 2**31), (CLUSTER, True)]
)
def test_an_identity_has_both_halves(cluster_id: object, node_id: object) -> None:
    with pytest.raises(HandshakeConfigError):
        BrokerIdentity(cluster_id, node_id)  # type: ignore[arg-type]


def test_which_connections_know_an_identity() -> None:
    assert identity_for(None, CLUSTER) is None  # bootstrap
    assert identity_for(3, None) is None  # no cluster id known at all: nothing, never a NodeId alone
    assert identity_for(3, CLUSTER) == BrokerIdentity(CLUSTER, 3)
    assert identity_for(3, None, expected_cluster_id=CLUSTER) == BrokerIdentity(CLUSTER, 3)
    assert identity_for(INT32_MAX - 3, CLUSTER) == BrokerIdentity(CLUSTER, 3)  # a coordinator's id
    assert broker_node_id(INT32_MAX) == 0 and broker_node_id(7) == 7
    with pytest.raises(ClusterMismatchError, match="not to the expected cluster"):
        identity_for(3, "other", expected_cluster_id=CLUSTER)


def test_the_client_side_check_trusts_an_unnamed_cluster_and_refuses_another() -> None:
    assert check_cluster_id(CLUSTER, None) == CLUSTER  # Metadata before v2 names no cluster
    assert check_cluster_id(None, "x") == "x"
    with pytest.raises(ClusterMismatchError) as caught:
        check_cluster_id(CLUSTER, "x", node="h:1")
    assert (caught.value.expected_cluster_id, caught.value.found_cluster_id) == (CLUSTER, "x")
    assert "h:1" in str(caught.value)


def test_expected_cluster_id_is_checked_when_configured() -> None:
    assert HandshakeConfig(expected_cluster_id=CLUSTER).expected_cluster_id == CLUSTER
    with pytest.raises(HandshakeConfigError):
        HandshakeConfig(expected_cluster_id="")


NAMED = [(1, "h", 9092), (2, "h", 9093)]


def test_the_node_at_the_dialled_address_must_be_the_node_meant() -> None:
    check_node_at_address(1, ("h", 9092), NAMED, node="h:9092")  # node 1 is where it was dialled
    check_node_at_address(INT32_MAX - 1, ("h", 9092), NAMED, node="h:9092")  # its coordinator id too
    check_node_at_address(1, ("proxy", 19092), NAMED, node="proxy:19092")  # not named: proves nothing
    with pytest.raises(ClusterMismatchError) as caught:
        check_node_at_address(1, ("h", 9093), NAMED, node="h:9093", cluster_id=CLUSTER, answer="Metadata v12")
    error = caught.value
    assert (error.expected_node_id, error.found_node_id, error.node) == (1, 2, "h:9093")
    assert (error.expected_cluster_id, error.found_cluster_id) == (CLUSTER, CLUSTER)
    assert str(error) == (
        f"the broker at h:9093 is node 2 of cluster {CLUSTER}, not node 1: Metadata v12 read on that "
        "connection names node 2 there, so the address belongs to another broker now"
    )
