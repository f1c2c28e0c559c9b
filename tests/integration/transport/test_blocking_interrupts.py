"""Ctrl-C inside the blocking driver's ``request()`` leaves a usable or a closed connection.

A ``KeyboardInterrupt`` is injected at step N of a request, for every N: before
and after each call the driver makes into the socket (write, receive) and into
the sans-I/O connection (send, bytes_to_send, write_done, receive_data).  "After
receive" stands for an interrupt landing once ``recv`` returned, its bytes read
and lost; "after write" for one landing before the write is confirmed.  The
next requests must then either be answered or fail with a clear closed-connection
error on a closed socket, and never with a ``ProtocolError`` blaming the broker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkacompat.blocking.connection import BlockingConnection, open_blocking_connection
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import ProtocolError, TransportError
from kafkacompat.protocol import messages
from kafkacompat.testing.emulator import ThreadedCluster

QUICK = ConnectionConfig(connect_timeout=5, request_timeout=5)
_WIRE_STEPS = ("write", "receive")
_PROTOCOL_STEPS = ("send", "bytes_to_send", "write_done", "receive_data")


class Interrupter:
    """Raises KeyboardInterrupt at the ``at``-th step (1-based) of what it watches."""

    def __init__(self, at: int) -> None:
        self.at, self.steps, self.fired = at, 0, ""

    def _step(self, where: str) -> None:
        self.steps += 1
        if self.steps == self.at:
            self.fired = where
            raise KeyboardInterrupt(where)

    def wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            self._step(f"before {name}")
            result = method(*args, **kwargs)
            self._step(f"after {name}")
            return result

        return watched

    def install(self, conn: BlockingConnection) -> None:
        protocol = conn._protocol
        assert protocol is not None
        for name in _WIRE_STEPS:
            setattr(conn._wire, name, self.wrap(name, getattr(conn._wire, name)))
        for name in _PROTOCOL_STEPS:
            setattr(protocol, name, self.wrap(name, getattr(protocol, name)))

    @staticmethod
    def remove(conn: BlockingConnection) -> None:
        for name in _WIRE_STEPS:
            conn._wire.__dict__.pop(name, None)
        if conn._protocol is not None:
            for name in _PROTOCOL_STEPS:
                conn._protocol.__dict__.pop(name, None)


@pytest.fixture(scope="module")
def cluster() -> Iterator[ThreadedCluster]:
    with ThreadedCluster("4.0") as running:
        yield running


def metadata(conn: BlockingConnection) -> messages.MetadataResponse:
    response = conn.request(messages.MetadataRequest(topics=[]))
    assert isinstance(response, messages.MetadataResponse)
    return response


def test_an_interrupt_at_any_step_leaves_a_usable_or_a_closed_connection(cluster: ThreadedCluster) -> None:
    broker = cluster.brokers[0]
    outcomes: dict[str, str] = {}
    for at in range(1, 100):
        with open_blocking_connection(broker.host, broker.port, QUICK, timeout=10) as conn:
            metadata(conn)  # a first request, so the interrupted one is not the first
            interrupter = Interrupter(at)
            interrupter.install(conn)
            try:
                metadata(conn)
            except KeyboardInterrupt:
                pass
            finally:
                Interrupter.remove(conn)
            if not interrupter.fired:
                break  # past the last step: every step was interrupted once
            for _ in range(3):  # the next requests: each answered, or each told the connection closed
                try:
                    response = metadata(conn)
                except ProtocolError as exc:
                    pytest.fail(f"interrupted {interrupter.fired}: the broker is blamed: {exc}")
                except TransportError as exc:
                    assert "closed" in str(exc), f"interrupted {interrupter.fired}: {exc}"
                    assert not conn.is_ready and conn._wire.sock is None, interrupter.fired
                    outcomes[interrupter.fired] = "closed"
                else:
                    assert [b.node_id for b in response.brokers] == [broker.node_id]
                    assert conn.is_ready, interrupter.fired
                    outcomes.setdefault(interrupter.fired, "usable")
    else:
        pytest.fail("a request took more than 100 steps")
    assert at > 10, "the interrupter never reached the reply"
    # An interrupt before anything was written takes the request back: the connection lives on.
    assert outcomes["before send"] == "usable"
    assert outcomes["before bytes_to_send"] == "usable"
