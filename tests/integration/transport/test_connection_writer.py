"""BrokerConnection's reader and writer tasks: when they run, how writes are shared, what a
caller's withdrawal does to requests that were queued, being written, or written.

Against Tansu 0.6.0, often behind the fault proxy of ``tests.support.fault_proxy``.
Every test runs under ``trio.fail_after``: a hang is a failure.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import KafkaCompatError, KafkaTimeoutError, TransportError
from kafkacompat.protocol import messages as m
from kafkacompat.testing.tansu import TansuBroker
from kafkacompat.transport.connection import BrokerConnection, open_connection
from kafkacompat.transport.stream import ByteStream
from tests.support.fault_proxy import Fault, fault_proxy
from tests.support.waiting import wait_until

pytestmark = pytest.mark.broker

DEADLINE = 20.0  # seconds, for any one test
QUICK = ConnectionConfig(connect_timeout=3.0, request_timeout=5.0)
BIG = 64 * 1024 * 1024  # more than the socket buffers on both sides of the proxy hold


def _find_v3(key: str) -> m.FindCoordinatorRequest:
    return m.FindCoordinatorRequest(key=key, key_type=0)


def _stuck_produce() -> m.ProduceRequest:
    """A Produce too big for the socket buffers: behind a stalled proxy its write blocks."""
    data = m.ProduceRequest.PartitionProduceData(index=0, records=bytes(BIG))
    topic = m.ProduceRequest.TopicProduceData(name="t", partition_data=[data])
    return m.ProduceRequest(acks=1, timeout_ms=5000, topic_data=[topic])




def _child_tasks(nursery: trio.Nursery) -> int:
    return len(nursery.child_tasks)


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of frames in each write a connection makes, in order: at once
    (``send_now``, the reader's refills among them) or by the writer (``send_all``)."""
    seen: list[int] = []
    begun: list[bool] = []  # a write send_now began and send_all finishes: counted once
    real_now, real_all = ByteStream.send_now, ByteStream.send_all

    def counting_now(self: ByteStream, data: bytes) -> memoryview | None:
        rest = real_now(self, data)
        if rest is not None:  # None: this stream cannot send at once, send_all will
            seen.append(_frames_in(data))
            begun.append(bool(rest))
        return rest

    async def counting_all(self: ByteStream, data: bytes | memoryview) -> None:
        if begun and begun[-1]:
            begun[-1] = False
        else:
            seen.append(_frames_in(bytes(data)))
        await real_all(self, data)

    monkeypatch.setattr(ByteStream, "send_now", counting_now)
    monkeypatch.setattr(ByteStream, "send_all", counting_all)
    return seen


def _frames_in(data: bytes) -> int:
    count, pos = 0, 0
    while pos < len(data):
        pos += 4 + int.from_bytes(data[pos : pos + 4], "big")
        count += 1
    assert pos == len(data)
    return count


async def test_no_task_runs_until_the_first_request(tansu: TansuBroker) -> None:
    """An inspector that opens, reads the capabilities and closes never starts a task."""
    with trio.fail_after(DEADLINE):
        async with trio.open_nursery() as nursery:
            conn = BrokerConnection(tansu.host, tansu.port, QUICK)
            await conn.open(nursery)
            assert conn.is_ready and conn.capabilities is not None
            assert _child_tasks(nursery) == 0
            reply = await conn.request(m.MetadataRequest(topics=None))
            assert isinstance(reply, m.MetadataResponse)
            assert _child_tasks(nursery) == 3  # the reader, the writer and the timer
            await conn.aclose()
            await wait_until(lambda: _child_tasks(nursery) == 0)


async def test_pipelined_requests_share_their_writes(tansu: TansuBroker, writes: list[int]) -> None:
    """64 requests made together go out in a few writes, in order, each answered to its caller."""
    config = ConnectionConfig(connect_timeout=3.0, request_timeout=10.0, max_in_flight=64)
    count = 64
    with trio.fail_after(DEADLINE):
        async with fault_proxy((tansu.host, tansu.port)) as proxy, open_connection(
            *proxy.address, config
        ) as conn:
            writes.clear()  # the handshake's own write is not this test's business
            replies: dict[int, Any] = {}

            async def ask(i: int) -> None:
                replies[i] = await conn.request(_find_v3(f"group-{i}"), version=3)

            async with trio.open_nursery() as askers:
                for i in range(count):
                    askers.start_soon(ask, i)
            record = proxy.connections[0]
    assert sum(writes) == count
    assert len(writes) <= count // 8, writes  # the requests queued together went out together
    for i, reply in replies.items():
        assert isinstance(reply, m.FindCoordinatorResponse) and reply.error_code == 0, i
    on_the_wire = record.to_broker.correlation_ids[1:]  # after the handshake's
    assert on_the_wire == sorted(on_the_wire) and len(on_the_wire) == count
    assert record.to_client.correlation_ids[1:] == on_the_wire


@pytest.mark.parametrize("how", ["cancelled", "timed out"])
async def test_a_request_still_queued_is_withdrawn_without_harm(
    tansu: TansuBroker, writes: list[int], how: str
) -> None:
    """Behind a write that blocks, a queued request given up leaves the connection as it was."""
    with trio.fail_after(DEADLINE):
        stall = Fault.stall_after(0, frame=2)  # the proxy reads nothing after the handshake
        proxied = fault_proxy((tansu.host, tansu.port), to_broker=[stall])
        async with proxied as proxy, trio.open_nursery() as n:
            conn = BrokerConnection(*proxy.address, QUICK)
            await conn.open(n)
            writes.clear()
            outcomes: dict[str, Any] = {}
            small_scope = trio.CancelScope()

            async def send(name: str, message: m.KafkaMessage, version: int, limit: float) -> None:
                with small_scope if name == "small" else trio.CancelScope():
                    try:
                        outcomes[name] = await conn.request(message, version=version, request_timeout=limit)
                    except KafkaCompatError as exc:
                        outcomes[name] = exc

            n.start_soon(send, "big", _stuck_produce(), 9, 15.0)
            await proxy.wait_stalled()
            await trio.sleep(0.2)  # the big request fills the socket buffers and blocks
            n.start_soon(send, "small", _find_v3("queued"), 3, 0.5 if how == "timed out" else 15.0)
            await wait_until(lambda: conn.in_flight == 2)
            if how == "cancelled":
                small_scope.cancel()
                await wait_until(lambda: small_scope.cancelled_caught)
                assert "small" not in outcomes
            else:
                await wait_until(lambda: "small" in outcomes)
                assert isinstance(outcomes["small"], KafkaTimeoutError)
            assert conn.is_ready and conn.in_flight == 1  # the big one, still being written
            assert "big" not in outcomes
            await conn.aclose()
            await wait_until(lambda: "big" in outcomes)
            assert isinstance(outcomes["big"], TransportError)
            proxy.release()
    assert writes == [1]  # the big request alone: the withdrawn one was never written


async def test_a_broken_write_fails_every_request_and_ends_both_tasks(tansu: TansuBroker) -> None:
    with trio.fail_after(DEADLINE):
        reset = Fault.reset_after(100, frame=2)  # mid-way through the requests after the handshake
        proxied = fault_proxy((tansu.host, tansu.port), to_broker=[reset])
        async with proxied as proxy, trio.open_nursery() as n:
            conn = BrokerConnection(*proxy.address, QUICK)
            await conn.open(n)
            outcomes: list[Any] = []

            async def ask(i: int) -> None:
                try:
                    outcomes.append(await conn.request(m.MetadataRequest(topics=None)))
                except KafkaCompatError as exc:
                    outcomes.append(exc)

            for i in range(5):
                n.start_soon(ask, i)
            await wait_until(lambda: len(outcomes) == 5)
            # A request answered before the reset keeps its answer; every other one fails.
            assert all(isinstance(o, TransportError | m.MetadataResponse) for o in outcomes), outcomes
            assert any(isinstance(o, TransportError) for o in outcomes), outcomes
            assert not conn.is_ready and conn.in_flight == 0
            await wait_until(lambda: _child_tasks(n) == 0)  # reader, writer and timer ended
            with pytest.raises(TransportError):
                await conn.request(m.MetadataRequest(topics=None))
            await conn.aclose()
