"""Drive the emulator's sans-I/O ``Connection`` without a network, for the unit tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafkacompat.protocol import framing, messages
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.testing.emulator import (
    BrokerProfile,
    ClusterState,
    Connection,
    Fault,
    FaultPlan,
    Node,
    RequestRecord,
    SaslConfig,
    parse_profile_spec,
)
from kafkacompat.testing.emulator.faults import Action, Close, Send, Sleep, Stall

CLIENT_ID = "unit-tests"


def cluster(
    *releases: str | BrokerProfile, ports: Sequence[int] | None = None, **state_kwargs: Any
) -> ClusterState:
    nodes = [
        Node(index + 1, parse_profile_spec(spec), port=(ports[index] if ports else 9000 + index))
        for index, spec in enumerate(releases or ("3.9",))
    ]
    return ClusterState(nodes, **state_kwargs)


class Harness:
    """One connection to one node of ``state``."""

    def __init__(
        self,
        state: ClusterState,
        node_id: int = 1,
        *,
        faults: Iterable[Fault] = (),
        sasl: SaslConfig | None = None,
        handlers: Mapping[int, Any] | None = None,
    ) -> None:
        self.state = state
        self.node = state.nodes[node_id]
        self.plan = FaultPlan(faults)
        self.records: list[RequestRecord] = []
        self.connection = Connection(
            self.node, state, self.plan, self.records.append, sasl=sasl, handlers=handlers
        )
        self.correlation_id = 0

    def send(self, request: KafkaMessage, version: int) -> list[Action]:
        self.correlation_id += 1
        frame = framing.encode_request(request, version, self.correlation_id, CLIENT_ID)
        return self.connection.receive(frame)

    def send_raw(self, payload: bytes) -> list[Action]:
        return self.connection.receive(len(payload).to_bytes(4, "big") + payload)

    def call(self, request: KafkaMessage, version: int, *, read_as: int | None = None) -> Any:
        """Send, expect exactly one reply frame and nothing else, and decode it."""
        actions = self.send(request, version)
        assert len(actions) == 1 and isinstance(actions[0], Send), actions
        return decode(actions[0].data, request, version if read_as is None else read_as, self.correlation_id)


def decode(data: bytes, request: KafkaMessage, version: int, correlation_id: int | None = None) -> Any:
    assert request.API_KEY is not None
    frames = framing.FrameSplitter().feed(data)
    assert len(frames) == 1, data
    cls = getattr(messages, messages.CLASS_BY_KEY[(request.API_KEY, "response")])
    got_id, body = framing.decode_response(frames[0], cls, version)
    if correlation_id is not None:
        assert got_id == correlation_id
    return body


def sent(actions: Sequence[Action]) -> bytes:
    return b"".join(a.data for a in actions if isinstance(a, Send))


def closes(actions: Sequence[Action]) -> bool:
    return any(isinstance(a, Close) for a in actions)


__all__ = ["Close", "Harness", "Send", "Sleep", "Stall", "closes", "cluster", "decode", "sent"]
