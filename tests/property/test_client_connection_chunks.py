"""However the broker's bytes are cut into reads, a connection ends the same way."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacompat.connection._request_pipeline import ResponseReceived
from kafkacompat.connection.client_connection import ClientConnection, Ready
from kafkacompat.connection.sasl import SaslLogin
from kafkacompat.connection.sasl_mechanisms import create_mechanism
from kafkacompat.connection.security import SaslConfig as ClientSasl
from kafkacompat.protocol import messages
from kafkacompat.testing.emulator import ClusterState, Node, SaslConfig, release_profiles
from tests.support.memory_wire import MemoryWire, round_trip, set_up

SERVING = [p for p in release_profiles() if p.kind != "kraft-controller" and 18 in p.apis and 3 in p.apis]


def run(profile_index: int, sasl: str | None, cuts: list[int]) -> tuple[object, ...]:
    profile = SERVING[profile_index]
    chunks = iter(cuts or [1 << 30])
    wire = MemoryWire(
        ClusterState([Node(1, profile, port=9092)]),
        sasl=SaslConfig({"u": "p"}) if sasl else None,
        chunks=lambda size: (next(chunks, 1 << 30) for _ in range(size)),
    )
    login = None
    if sasl:
        config = ClientSasl(sasl, "u", "p")  # type: ignore[arg-type]
        login = SaslLogin(lambda: create_mechanism(config), "u")
    client = ClientConnection(node="b", sasl=login)
    ready = set_up(client, wire)
    assert isinstance(ready, Ready)
    events = round_trip(client, wire, *(messages.MetadataRequest(topics=[]) for _ in range(3)))
    assert [type(e) for e in events] == [ResponseReceived] * 3
    answered = [e.ticket.correlation_id for e in events if isinstance(e, ResponseReceived)]
    return (tuple(ready.capabilities.api_ranges.items()), tuple(answered), wire.sockets)


@settings(max_examples=150, deadline=None)
@given(
    profile_index=st.integers(0, len(SERVING) - 1),
    sasl=st.sampled_from([None, "PLAIN", "SCRAM-SHA-256"]),
    cuts=st.lists(st.integers(1, 64), max_size=40),
)
def test_any_cut_of_the_reads_gives_the_whole_read_outcome(
    profile_index: int, sasl: str | None, cuts: list[int]
) -> None:
    if sasl is not None and 17 not in SERVING[profile_index].apis:
        sasl = None
    assert run(profile_index, sasl, cuts) == run(profile_index, sasl, [])
