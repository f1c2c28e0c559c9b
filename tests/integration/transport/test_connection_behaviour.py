"""BrokerConnection against real peers: how it behaves when nothing is broken on purpose.

The peers are Tansu 0.6.0 and librdkafka's mock cluster, most often behind
the fault proxy of ``tests.support.fault_proxy`` (passing everything through,
or holding the broker's replies back), so that the tests can see what went
over the wire and when the client closed its socket.  Every test runs under
``trio.fail_after``: a hang is a failure.
"""

from __future__ import annotations

import gc
import struct
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import KafkaCompatError, KafkaTimeoutError, TransportError
from kafkacompat.protocol import messages as m
from kafkacompat.testing.tansu import TansuBroker
from kafkacompat.transport.connection import BrokerConnection, open_connection
from tests.brokers.librdkafka_mock import LibrdkafkaMockCluster
from tests.support.fault_proxy import ConnectionRecord, Fault, FaultProxy, fault_proxy
from tests.support.waiting import wait_until

pytestmark = pytest.mark.broker

DEADLINE = 20.0  # seconds, for any one test
QUICK = ConnectionConfig(connect_timeout=3.0, request_timeout=5.0)

METADATA, FIND_COORDINATOR, PRODUCE = 3, 10, 0


def _address(peer: TansuBroker | LibrdkafkaMockCluster) -> tuple[str, int]:
    return peer.host, peer.port


def _find_v3(key: str) -> m.FindCoordinatorRequest:
    return m.FindCoordinatorRequest(key=key, key_type=0)


def _find_v4(*keys: str) -> m.FindCoordinatorRequest:
    return m.FindCoordinatorRequest(coordinator_keys=list(keys), key_type=0)




async def _closed_by_client(record: ConnectionRecord, limit: float = 3.0) -> None:
    with trio.fail_after(limit):
        await record.client_closed.wait()
        await record.finished.wait()


def _count_tasks() -> int:
    def walk(task: trio.lowlevel.Task) -> int:
        return 1 + sum(walk(child) for nursery in task.child_nurseries for child in nursery.child_tasks)

    root = trio.lowlevel.current_root_task()
    assert root is not None
    return walk(root)


async def _outcome(call: Callable[[], Awaitable[Any]]) -> Any:
    """The result of ``call()``, or the kafkacompat error it raised."""
    try:
        return await call()
    except KafkaCompatError as exc:
        return exc


# ------------------------------------------------------------------ the basics --


async def test_handshake_then_metadata_on_tansu(tansu: TansuBroker) -> None:
    with trio.fail_after(DEADLINE):
        async with open_connection(tansu.host, tansu.port, QUICK) as conn:
            assert conn.is_ready
            assert conn.capabilities is not None and conn.handshake is not None
            transcript = conn.handshake.transcript
            assert transcript.api_versions_version == 5  # Tansu answers v5 at once (v3 body, read as v5)
            assert transcript.connections == 1 and transcript.round_trips == 1
            assert conn.capabilities.broker_range(METADATA).highest == 12
            assert conn.capabilities.pick_version(METADATA) == 12
            reply = await conn.request(m.MetadataRequest(topics=None))
            assert isinstance(reply, m.MetadataResponse)
            assert reply.cluster_id == "kafkacompat-tests"
            assert [(b.host, b.port) for b in reply.brokers] == [(tansu.host, tansu.port)]
            assert conn.in_flight == 0


async def test_handshake_then_metadata_on_the_librdkafka_mock(
    librdkafka_mock: LibrdkafkaMockCluster,
) -> None:
    with trio.fail_after(DEADLINE):
        async with open_connection(librdkafka_mock.host, librdkafka_mock.port, QUICK) as conn:
            assert conn.handshake is not None
            transcript = conn.handshake.transcript
            # v4 is refused with the one entry it names (ApiVersions 0-2): v2 on the same connection.
            assert [a.version for a in transcript.attempts] == [5, 2]
            assert transcript.connections == 1
            reply = await conn.request(m.MetadataRequest(topics=None))
            assert isinstance(reply, m.MetadataResponse)
            assert reply.cluster_id is not None and reply.cluster_id.startswith("mockCluster")
            assert [b.port for b in reply.brokers] == [librdkafka_mock.port]


async def test_the_proxy_passes_everything_through_unchanged(tansu: TansuBroker) -> None:
    with trio.fail_after(DEADLINE):
        async with fault_proxy(_address(tansu)) as proxy:
            async with open_connection(*proxy.address, QUICK) as conn:
                first = await conn.request(m.MetadataRequest(topics=None))
                second = await conn.request(_find_v4("through-the-proxy"), version=4)
                assert isinstance(first, m.MetadataResponse) and first.cluster_id == "kafkacompat-tests"
                assert isinstance(second, m.FindCoordinatorResponse)
                assert [c.key for c in second.coordinators] == ["through-the-proxy"]
            record = proxy.connections[0]
            await _closed_by_client(record)
        assert record.to_broker.frames_completed == record.to_client.frames_completed == 3
        assert record.to_broker.correlation_ids == record.to_client.correlation_ids
        assert record.cut is None


# ---------------------------------------------------------------- pipelining --


async def test_200_pipelined_find_coordinator_v3_respect_max_in_flight(tansu: TansuBroker) -> None:
    config = ConnectionConfig(connect_timeout=3.0, request_timeout=10.0, max_in_flight=16)
    count = 200
    with trio.fail_after(DEADLINE):
        async with fault_proxy(_address(tansu)) as proxy, open_connection(*proxy.address, config) as conn:
            metadata = await conn.request(m.MetadataRequest(topics=None))
            assert isinstance(metadata, m.MetadataResponse)
            (broker,) = metadata.brokers
            replies: dict[int, Any] = {}
            peak = 0
            done = trio.Event()

            async def ask(i: int) -> None:
                replies[i] = await _outcome(lambda: conn.request(_find_v3(f"group-{i}"), version=3))

            async def watch() -> None:
                nonlocal peak
                for _ in range(1_000_000):
                    peak = max(peak, conn.in_flight)
                    if done.is_set():
                        return
                    await trio.lowlevel.checkpoint()

            async with trio.open_nursery() as watcher:
                watcher.start_soon(watch)
                async with trio.open_nursery() as askers:
                    for i in range(count):
                        askers.start_soon(ask, i)
                done.set()
            record = proxy.connections[0]

        assert sorted(replies) == list(range(count))
        for reply in replies.values():
            assert isinstance(reply, m.FindCoordinatorResponse), reply
            assert reply.error_code == 0
            assert (reply.node_id, reply.host, reply.port) == (broker.node_id, broker.host, broker.port)
        assert peak == 16, peak  # the bound is reached (the 200 start together) and never passed
        # Seen on the wire: never more than 16 requests the broker had not answered yet.
        assert 1 < record.peak_outstanding <= 16, record.peak_outstanding
        requests = record.to_broker.correlation_ids
        assert len(requests) == len(set(requests)) == count + 2  # + ApiVersions + Metadata
        assert record.to_client.correlation_ids == requests  # answered in order


async def test_pipelined_requests_each_get_their_own_answer(tansu: TansuBroker) -> None:
    """Mixed APIs and versions in flight together: a misrouted answer would show a wrong key."""
    config = ConnectionConfig(connect_timeout=3.0, request_timeout=10.0, max_in_flight=8)
    with trio.fail_after(DEADLINE):
        async with open_connection(tansu.host, tansu.port, config) as conn:
            replies: dict[int, Any] = {}

            async def ask(i: int) -> None:
                if i % 3 == 0:
                    replies[i] = await conn.request(_find_v4(f"g-{i}", f"h-{i}"), version=4)
                elif i % 3 == 1:
                    replies[i] = await conn.request(m.MetadataRequest(topics=None), version=1 + i % 12)
                else:
                    replies[i] = await conn.request(_find_v3(f"g-{i}"), version=i % 4)

            async with trio.open_nursery() as nursery:
                for i in range(90):
                    nursery.start_soon(ask, i)
    for i, reply in replies.items():
        if i % 3 == 0:
            assert isinstance(reply, m.FindCoordinatorResponse)
            assert [c.key for c in reply.coordinators] == [f"g-{i}", f"h-{i}"]
        elif i % 3 == 1:
            assert isinstance(reply, m.MetadataResponse)
            # cluster_id exists from Metadata v2: its presence tracks the version asked.
            assert (reply.cluster_id is not None) == (1 + i % 12 >= 2)
        else:
            assert isinstance(reply, m.FindCoordinatorResponse) and reply.error_code == 0


async def test_an_explicit_version_is_used_as_given(tansu: TansuBroker) -> None:
    with trio.fail_after(DEADLINE):
        async with fault_proxy(_address(tansu)) as proxy:
            async with open_connection(*proxy.address, QUICK) as conn:
                assert conn.capabilities.pick_version(FIND_COORDINATOR) >= 4
                old = await conn.request(_find_v3("explicit"), version=0)
                new = await conn.request(_find_v4("explicit"), version=4)
                assert isinstance(old, m.FindCoordinatorResponse) and old.error_code == 0
                assert old.host == tansu.host and old.port == tansu.port
                assert isinstance(new, m.FindCoordinatorResponse) and new.coordinators[0].key == "explicit"
            record = proxy.connections[0]
            await _closed_by_client(record)
    # The versions on the wire (request header: api key, api version) are the ones asked for.
    assert [(k, v) for k, v, _ in record.to_broker.headers] == [
        (18, 5),
        (FIND_COORDINATOR, 0),
        (FIND_COORDINATOR, 4),
    ]


async def test_a_request_made_before_open_waits_until_ready(tansu: TansuBroker) -> None:
    with trio.fail_after(DEADLINE):
        conn = BrokerConnection(tansu.host, tansu.port, QUICK)
        results: list[Any] = []
        async with trio.open_nursery() as nursery:

            async def early() -> None:
                results.append(await conn.request(m.MetadataRequest(topics=None)))

            nursery.start_soon(early)
            await trio.sleep(0.2)
            assert results == [] and not conn.is_ready
            await conn.open(nursery)
            await wait_until(lambda: bool(results))
            await conn.aclose()
        assert isinstance(results[0], m.MetadataResponse)


async def test_a_request_before_open_times_out_if_never_opened(
    tansu: TansuBroker, autojump_clock: trio.testing.MockClock
) -> None:
    """No socket is involved, so the autojump clock spends the timeout in virtual time."""
    with trio.fail_after(DEADLINE * 10):
        conn = BrokerConnection(tansu.host, tansu.port, QUICK)
        start = trio.current_time()
        with pytest.raises(KafkaTimeoutError, match="ready"):
            await conn.request(m.MetadataRequest(topics=None), request_timeout=30)
        assert trio.current_time() - start == pytest.approx(30)  # its own timeout, on trio's clock


# ------------------------------------------------------ timeouts and cancelling --


async def test_a_timeout_abandons_the_request_and_its_late_answer_is_dropped(tansu: TansuBroker) -> None:
    with trio.fail_after(DEADLINE):
        stall = Fault.stall_after(0, frame=2)  # hold every reply after the handshake's
        async with fault_proxy(_address(tansu), to_client=[stall]) as proxy:
            async with open_connection(*proxy.address, QUICK) as conn:
                start = trio.current_time()
                with pytest.raises(KafkaTimeoutError):
                    await conn.request(m.MetadataRequest(topics=None), request_timeout=0.4)
                assert 0.35 < trio.current_time() - start < 2.0
                assert conn.is_ready and conn.in_flight == 0
                record = proxy.connections[0]
                proxy.release()  # the late Metadata answer now arrives: dropped, not an error
                await wait_until(lambda: record.to_client.frames_completed == 2)
                reply = await conn.request(_find_v4("after-the-timeout"), version=4)
                assert isinstance(reply, m.FindCoordinatorResponse)
                assert reply.coordinators[0].key == "after-the-timeout"
                assert conn.is_ready
            await _closed_by_client(record)
        assert record.to_client.frames_completed == 3


async def test_the_per_request_timeout_holds_while_waiting_for_an_in_flight_slot(
    tansu: TansuBroker,
) -> None:
    """With max_in_flight 1 and a stalled broker, a short timeout is not stuck behind a long one."""
    config = ConnectionConfig(connect_timeout=3.0, request_timeout=30.0, max_in_flight=1)
    with trio.fail_after(DEADLINE):
        stall = Fault.stall_after(0, frame=2)
        async with (
            fault_proxy(_address(tansu), to_client=[stall]) as proxy,
            open_connection(*proxy.address, config) as conn,
        ):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_outcome, lambda: conn.request(m.MetadataRequest(topics=None)))
                await wait_until(lambda: conn.in_flight == 1)
                start = trio.current_time()
                with pytest.raises(KafkaTimeoutError):
                    await conn.request(_find_v4("second"), version=4, request_timeout=0.3)
                assert trio.current_time() - start < 2.0
                proxy.release()
            assert conn.is_ready


async def test_cancelling_a_waiting_request_leaves_the_connection_usable(tansu: TansuBroker) -> None:
    with trio.fail_after(DEADLINE):
        stall = Fault.stall_after(0, frame=2)
        async with (
            fault_proxy(_address(tansu), to_client=[stall]) as proxy,
            open_connection(*proxy.address, QUICK) as conn,
        ):
            with trio.move_on_after(0.3) as scope:
                await conn.request(_find_v4("cancelled"), version=4)
            assert scope.cancelled_caught
            assert conn.is_ready and conn.in_flight == 0
            proxy.release()
            reply = await conn.request(_find_v4("next"), version=4)
            assert isinstance(reply, m.FindCoordinatorResponse)
            assert [c.key for c in reply.coordinators] == ["next"]  # not the cancelled one's answer
            record = proxy.connections[0]
            assert record.to_client.frames_completed == 3
            assert conn.is_ready


async def test_cancelling_a_request_half_written_closes_the_connection(tansu: TansuBroker) -> None:
    """The proxy stops reading the client after the handshake, so a big request blocks mid-write."""
    big = _produce_request("never-written", acks=1, records=bytes(64 * 1024 * 1024))
    with trio.fail_after(DEADLINE):
        stall = Fault.stall_after(0, frame=2)
        async with fault_proxy(_address(tansu), to_broker=[stall]) as proxy, trio.open_nursery() as nursery:
            conn = BrokerConnection(*proxy.address, QUICK)
            await conn.open(nursery)
            record = proxy.connections[0]
            outcomes: dict[str, Any] = {}
            big_scope = trio.CancelScope()

            async def send_big() -> None:
                with big_scope:
                    outcomes["big"] = await _outcome(lambda: conn.request(big, version=9))
                outcomes["big_cancelled"] = big_scope.cancelled_caught

            async def send_small() -> None:
                outcomes["small"] = await _outcome(lambda: conn.request(_find_v4("small"), version=4))

            nursery.start_soon(send_big)
            await proxy.wait_stalled()
            await trio.sleep(0.2)  # the big request fills the socket buffers and blocks
            nursery.start_soon(send_small)
            await wait_until(lambda: conn.in_flight == 2)
            big_scope.cancel()
            await wait_until(lambda: "small" in outcomes and "big_cancelled" in outcomes)
            assert outcomes["big_cancelled"] and "big" not in outcomes
            assert isinstance(outcomes["small"], TransportError), outcomes["small"]
            assert "given up while it was being written" in str(outcomes["small"])
            assert not conn.is_ready
            with pytest.raises(TransportError):
                await conn.request(m.MetadataRequest(topics=None))
            proxy.release()  # let the proxy read on: it must find the client's socket closed
            await _closed_by_client(record)
            await conn.aclose()


async def test_aclose_fails_every_pending_request(tansu: TansuBroker) -> None:
    with trio.fail_after(DEADLINE):
        stall = Fault.stall_after(0, frame=2)
        async with fault_proxy(_address(tansu), to_client=[stall]) as proxy, trio.open_nursery() as nursery:
            conn = BrokerConnection(*proxy.address, QUICK)
            await conn.open(nursery)
            outcomes: list[Any] = []

            async def ask(i: int) -> None:
                outcomes.append(await _outcome(lambda: conn.request(_find_v4(f"k{i}"), version=4)))

            for i in range(3):
                nursery.start_soon(ask, i)
            await wait_until(lambda: conn.in_flight == 3)
            await conn.aclose()
            await wait_until(lambda: len(outcomes) == 3)
            assert all(isinstance(o, TransportError) for o in outcomes), outcomes
            assert not conn.is_ready and conn.in_flight == 0
            with pytest.raises(TransportError):
                await conn.request(m.MetadataRequest(topics=None))
            await _closed_by_client(proxy.connections[0])


async def test_nothing_is_left_behind(tansu: TansuBroker) -> None:
    """After open_connection exits: no task of the connection, and the proxy saw the socket close."""
    with trio.fail_after(DEADLINE):
        async with fault_proxy(_address(tansu)) as proxy:
            gc.collect()  # earlier tests' garbage is not this test's business
            tasks_before = _count_tasks()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ResourceWarning)
                for round_ in range(3):
                    async with open_connection(*proxy.address, QUICK) as conn:
                        await conn.request(m.MetadataRequest(topics=None))
                        assert _count_tasks() > tasks_before  # the reader
                    await _closed_by_client(proxy.connections[round_])
                    assert _count_tasks() == tasks_before
                gc.collect()
            assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


# ---------------------------------------------------------------- reconnect --


async def test_reconnect_negotiates_again_and_records_what_changed(
    tansu: TansuBroker, librdkafka_mock: LibrdkafkaMockCluster
) -> None:
    with trio.fail_after(DEADLINE):
        async with fault_proxy(_address(tansu)) as proxy, trio.open_nursery() as nursery:
            conn = BrokerConnection(*proxy.address, QUICK, node_id=7)
            first = await conn.open(nursery)
            assert first.broker_range(PRODUCE).highest == 11 and conn.changes == []

            await conn.reconnect(nursery)  # same broker: nothing changed
            assert conn.changes == []
            assert len(proxy.connections) == 2

            proxy.upstream = _address(librdkafka_mock)  # "the broker was replaced"
            second = await conn.reconnect(nursery)
            assert conn.capabilities is second and second.broker_range(PRODUCE).highest == 10
            (change,) = conn.changes
            assert change.node == conn.node
            assert change.changed[PRODUCE] == (first.broker_range(PRODUCE), second.broker_range(PRODUCE))
            assert 19 in change.changed  # CreateTopics: listed by Tansu, not by the mock
            assert "Produce(0)" in change.describe()
            reply = await conn.request(m.MetadataRequest(topics=None))
            assert isinstance(reply, m.MetadataResponse)
            assert reply.cluster_id is not None and reply.cluster_id.startswith("mockCluster")
            assert conn.handshake is not None and conn.handshake.transcript.api_versions_version == 2
            await conn.aclose()
        for record in proxy.connections:
            assert record.finished.is_set()


async def test_reconnect_after_the_connection_failed(tansu: TansuBroker) -> None:
    with trio.fail_after(DEADLINE):
        cut = Fault.close_after(0, frame=2, connections=[1])  # only the first connection
        async with fault_proxy(_address(tansu), to_client=[cut]) as proxy, trio.open_nursery() as nursery:
            conn = BrokerConnection(*proxy.address, QUICK)
            await conn.open(nursery)
            with pytest.raises(TransportError):
                await conn.request(m.MetadataRequest(topics=None))
            assert not conn.is_ready
            await conn.reconnect(nursery)
            assert conn.is_ready and conn.changes == []
            reply = await conn.request(m.MetadataRequest(topics=None))
            assert isinstance(reply, m.MetadataResponse)
            await conn.aclose()


# ------------------------------------------------------------ Produce, acks=0 --


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _varint(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)  # zigzag
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if not value:
            out.append(low)
            return bytes(out)
        out.append(low | 0x80)


def _record_batch(value: bytes) -> bytes:
    """A one-record RecordBatch (magic 2), no key, no headers."""
    now = int(time.time() * 1000)
    body = b"\0" + _varint(0) + _varint(0) + _varint(-1) + _varint(len(value)) + value + _varint(0)
    after_crc = struct.pack(">hiqqqhii", 0, 0, now, now, -1, -1, -1, 1) + _varint(len(body)) + body
    tail = struct.pack(">ibI", -1, 2, _crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(tail)) + tail


def _produce_request(topic: str, *, acks: int, records: bytes) -> m.ProduceRequest:
    data = m.ProduceRequest.PartitionProduceData(index=0, records=records)
    return m.ProduceRequest(
        acks=acks,
        timeout_ms=5000,
        topic_data=[m.ProduceRequest.TopicProduceData(name=topic, partition_data=[data])],
    )


def _latest_offset_request(topic: str) -> m.ListOffsetsRequest:
    partition = m.ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)
    return m.ListOffsetsRequest(
        replica_id=-1, topics=[m.ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[partition])]
    )


def test_crc32c_check_value() -> None:
    assert _crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value


async def _produce_acks0_scenario(proxy: FaultProxy, conn: BrokerConnection, topic: str) -> None:
    produce = _produce_request(topic, acks=0, records=_record_batch(b"fire and forget"))
    start = trio.current_time()
    assert await conn.request(produce) is None  # the replies are held back by the proxy
    assert trio.current_time() - start < 1.0
    assert conn.in_flight == 0
    record = proxy.connections[0]
    await wait_until(lambda: record.to_broker.frames_completed == 2)
    produce_id = record.to_broker.correlation_ids[-1]
    proxy.release()
    offsets = await conn.request(_latest_offset_request(topic))
    assert isinstance(offsets, m.ListOffsetsResponse)
    assert offsets.topics[0].partitions[0].offset == 1  # the record landed
    # This peer answered the acks=0 Produce (Apache Kafka does not): the answer was dropped.
    assert produce_id in record.to_client.correlation_ids
    assert conn.is_ready
    reply = await conn.request(_find_v4("after-acks-0"), version=4)
    assert isinstance(reply, m.FindCoordinatorResponse) and reply.coordinators[0].key == "after-acks-0"


async def test_produce_acks0_returns_none_without_waiting_on_tansu(tansu: TansuBroker) -> None:
    topic = "acks-zero-tansu"
    with trio.fail_after(DEADLINE):
        async with open_connection(tansu.host, tansu.port, QUICK) as setup:
            created = await setup.request(
                m.CreateTopicsRequest(
                    topics=[
                        m.CreateTopicsRequest.CreatableTopic(
                            name=topic, num_partitions=1, replication_factor=1
                        )
                    ],
                    timeout_ms=5000,
                )
            )
            assert isinstance(created, m.CreateTopicsResponse) and created.topics[0].error_code == 0
        stall = Fault.stall_after(0, frame=2)
        async with (
            fault_proxy(_address(tansu), to_client=[stall]) as proxy,
            open_connection(*proxy.address, QUICK) as conn,
        ):
            await _produce_acks0_scenario(proxy, conn, topic)


async def test_produce_acks0_returns_none_without_waiting_on_the_mock(
    librdkafka_mock: LibrdkafkaMockCluster,
) -> None:
    topic = "acks-zero-mock"
    with trio.fail_after(DEADLINE):
        async with open_connection(librdkafka_mock.host, librdkafka_mock.port, QUICK) as setup:
            wanted = m.MetadataRequest.MetadataRequestTopic(name=topic)
            created = await setup.request(m.MetadataRequest(topics=[wanted], allow_auto_topic_creation=True))
            assert isinstance(created, m.MetadataResponse) and created.topics[0].error_code == 0
        stall = Fault.stall_after(0, frame=3)  # the mock's handshake takes two replies
        async with (
            fault_proxy(_address(librdkafka_mock), to_client=[stall]) as proxy,
            open_connection(*proxy.address, QUICK) as conn,
        ):
            produce = _produce_request(topic, acks=0, records=_record_batch(b"fire and forget"))
            assert await conn.request(produce) is None
            record = proxy.connections[0]
            await wait_until(lambda: record.to_broker.frames_completed == 3)
            produce_id = record.to_broker.correlation_ids[-1]
            proxy.release()
            offsets = await conn.request(_latest_offset_request(topic))
            assert isinstance(offsets, m.ListOffsetsResponse)
            assert offsets.topics[0].partitions[0].offset == 1
            assert produce_id in record.to_client.correlation_ids
            assert conn.is_ready
