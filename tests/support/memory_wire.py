"""A client ``ClientConnection`` wired to emulated broker connections in memory.

Both sides are sans-I/O, so a whole connection (handshake, SASL, requests)
runs here with no socket, no clock and no event loop: what one side writes is
what the other reads, cut into chunks of any size.  A broker that has nothing
more to say makes the client's read time out, as a driver's deadline would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kafkacompat.connection._request_pipeline import PipelineEvent
from kafkacompat.connection.client_connection import (
    ClientConnection,
    OpenSocket,
    Read,
    Ready,
    SetupFailed,
    Write,
)
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.testing.emulator import ClusterState, Connection, FaultPlan, RequestRecord, SaslConfig
from kafkacompat.testing.emulator.faults import Close, Send, Stall


@dataclass
class MemoryWire:
    """The broker side of every socket the client opens, and the bytes in between."""

    state: ClusterState
    node_id: int = 1
    sasl: SaslConfig | None = None
    faults: FaultPlan = field(default_factory=lambda: FaultPlan(()))
    chunks: Callable[[int], Iterator[int]] = lambda size: iter((size,))  # how reads are cut
    records: list[RequestRecord] = field(default_factory=list)
    sockets: int = 0
    broker: Connection | None = None
    inbox: bytearray = field(default_factory=bytearray)  # broker -> client, not yet read
    broker_closed: bool = False

    def open(self) -> None:
        self.sockets += 1
        node = self.state.nodes[self.node_id]
        self.broker = Connection(node, self.state, self.faults, self.records.append, sasl=self.sasl)
        self.inbox.clear()
        self.broker_closed = False

    def client_writes(self, data: bytes) -> bool:
        """Hand ``data`` to the broker; False when the broker had closed already."""
        if self.broker_closed or self.broker is None:
            return False
        for action in self.broker.receive(data):
            if isinstance(action, Send):
                self.inbox += action.data
            elif isinstance(action, Close | Stall):
                self.broker_closed = isinstance(action, Close)
        return True

    def take(self) -> list[bytes]:
        """What the client reads next, in the chunks ``chunks`` cuts it into."""
        data, pieces, start = bytes(self.inbox), [], 0
        self.inbox.clear()
        for size in self.chunks(len(data)):
            if start >= len(data):
                break
            pieces.append(data[start : start + max(1, size)])
            start += max(1, size)
        if start < len(data):
            pieces.append(data[start:])
        return pieces


def set_up(client: ClientConnection, wire: MemoryWire, max_steps: int = 200) -> Ready | SetupFailed:
    """Drive ``client`` through setup against ``wire``; return how it ended."""
    for _ in range(max_steps):
        action = client.next_action()
        if isinstance(action, Ready | SetupFailed):
            return action
        if isinstance(action, OpenSocket):
            wire.open()
            client.connected()
        elif isinstance(action, Write):
            if wire.client_writes(action.data):
                client.written()
            else:
                client.closed()
        elif isinstance(action, Read):
            if wire.inbox:
                for piece in wire.take():
                    client.receive_data(piece)
                    if not isinstance(client.next_action(), Read):
                        break
            elif wire.broker_closed:
                client.closed()
            elif action.quiet_period is not None:  # the quiet period passed with nothing read
                client.quiet()
            else:
                client.timed_out()
    raise AssertionError(f"setup did not end in {max_steps} steps")


def round_trip(client: ClientConnection, wire: MemoryWire, *requests: KafkaMessage) -> list[PipelineEvent]:
    """Send ``requests`` on a ready ``client`` and read until each has ended."""
    tickets = [client.send(message) for message in requests]
    data = client.bytes_to_send()
    events: list[PipelineEvent] = []
    if not wire.client_writes(data):
        return events + client.closed()
    events += client.write_done()
    ended = {id(event.ticket) for event in events if hasattr(event, "ticket")}
    while any(id(t) not in ended for t in tickets) and client.failure is None:
        if not wire.inbox:
            events += client.closed() if wire.broker_closed else []
            break
        for piece in wire.take():
            new = client.receive_data(piece)
            events += new
            ended |= {id(event.ticket) for event in new if hasattr(event, "ticket")}
    return events
