"""BrokerConnection against a real broker behind a proxy that breaks things on purpose.

Each case of the fault table runs the same exchange through
``tests.support.fault_proxy``: open (the ApiVersions handshake), Metadata, then
FindCoordinator v4 with a key the answer must echo.  The case must end, well
before its deadline, either in success or in a typed kafkacompat error of the
kinds the table allows, and nothing may be handed to the wrong caller.  Frame
numbers count replies on one connection: against Tansu frame 1 is the
handshake's answer (ApiVersions v4 is accepted at once), frame 2 Metadata's,
frame 3 FindCoordinator's.
"""

from __future__ import annotations

import gc
import itertools
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
import trio

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import (
    BrokerTooOldError,
    DecodeError,
    KafkaCompatError,
    KafkaTimeoutError,
    NegotiationError,
    ProtocolError,
    SilentPeerError,
    TransportError,
    WrongProtocolError,
)
from kafkacompat.protocol import messages as m
from kafkacompat.testing.tansu import TansuBroker
from kafkacompat.transport.connection import BrokerConnection, open_connection
from tests.brokers.librdkafka_mock import LibrdkafkaMockCluster
from tests.support.fault_proxy import (
    PREFIX_HTTP,
    PREFIX_INT32_MAX,
    PREFIX_MINUS_ONE,
    PREFIX_TLS,
    Fault,
    fault_proxy,
    rewrite_offline,
)
from tests.support.trio_thread import in_trio_thread
from tests.support.waiting import wait_until

pytestmark = pytest.mark.broker

DEADLINE = 15.0
REQUEST_TIMEOUT = 1.0  # a stall becomes a KafkaTimeoutError after this
CONFIG = ConnectionConfig(connect_timeout=2.0, request_timeout=REQUEST_TIMEOUT)
KEY = "fault-group"

TLS_HINT = "TLS"
HTTP_HINT = "HTTP"

OK = None  # the exchange succeeded


@dataclass(frozen=True)
class Case:
    id: str
    to_client: Sequence[Fault] = ()
    expect: tuple[Any, ...] = (OK,)  # allowed outcomes: OK and/or error classes
    stage: str | None = None  # where a failure must happen: "open" or "request"
    hint: str | None = None  # text the error must contain
    downgraded: bool | None = None  # on success: was the handshake redone lower, on a new connection?
    downgraded_to: int = 3  # ... at this version (a close at v3+ steps down one flexible version)
    to_broker: Sequence[Fault] = ()


# At most the handshake's step-down (v5, v3, v0), the Metadata v0 check after it, and the TLS
# ClientHello asked last of a peer that closed on all of them.
MAX_PROXY_CONNECTIONS = 5
FIRST = (1,)  # a fault on the first connection only: the handshake's reconnect at v0 is clean

# fmt: off
TABLE = [
    Case("pass", [Fault.passthrough()]),
    # -- the broker closes (FIN) after N bytes of its replies --------------------------------
    # During the handshake a close before the whole answer reads as "maybe a proxy that
    # resets flexible versions": the handshake steps down to ApiVersions v3 on a new
    # connection (clean here), and succeeds.
    Case("close@hs+0", [Fault.close_after(0, connections=FIRST)], downgraded=True),
    Case("close@hs+2", [Fault.close_after(2, connections=FIRST)], downgraded=True),
    Case("close@hs+6", [Fault.close_after(6, connections=FIRST)], downgraded=True),
    Case("close@hs-1", [Fault.close_after(-1, frame=1, connections=FIRST)], downgraded=True),
    # ... and when every connection closes, even v0 gets no answer: BrokerTooOldError.
    Case("close@hs+0/all", [Fault.close_after(0)], (BrokerTooOldError,), "open"),
    Case("close@hs+9/all", [Fault.close_after(9)], (BrokerTooOldError,), "open"),
    # After the handshake a close fails the request in flight.
    Case("close@md+0", [Fault.close_after(0, frame=2)], (TransportError,), "request"),
    Case("close@md+3", [Fault.close_after(3, frame=2)], (TransportError,), "request"),
    Case("close@md+10", [Fault.close_after(10, frame=2)], (TransportError,), "request"),
    Case("close@md-1", [Fault.close_after(-1, frame=2)], (TransportError,), "request"),
    Case("close@fc+5", [Fault.close_after(5, frame=3)], (TransportError,), "request"),
    # -- the broker resets (RST) --------------------------------------------------------------
    Case("reset@hs+0", [Fault.reset_after(0, connections=FIRST)], downgraded=True),
    Case("reset@hs+7", [Fault.reset_after(7, connections=FIRST)], downgraded=True),
    Case("reset@hs+0/all", [Fault.reset_after(0)], (BrokerTooOldError,), "open"),
    Case("reset@md+0", [Fault.reset_after(0, frame=2)], (TransportError,), "request"),
    Case("reset@md+10", [Fault.reset_after(10, frame=2)], (TransportError,), "request"),
    # -- the broker stalls: silence is a timeout, never a reason to downgrade -----------------
    Case("stall@hs+0", [Fault.stall_after(0)], (KafkaTimeoutError,), "open"),
    Case("stall@hs+6", [Fault.stall_after(6)], (KafkaTimeoutError,), "open"),
    Case("stall@hs-1", [Fault.stall_after(-1, frame=1)], (KafkaTimeoutError,), "open"),
    Case("stall@md+0", [Fault.stall_after(0, frame=2)], (KafkaTimeoutError,), "request"),
    Case("stall@md+5", [Fault.stall_after(5, frame=2)], (KafkaTimeoutError,), "request"),
    # -- one corrupt byte ---------------------------------------------------------------------
    # The high byte of a size prefix: negative, refused at once.
    Case("corrupt@hs+0", [Fault.corrupt_at(0)], (ProtocolError,), "open"),
    Case("corrupt@md+0", [Fault.corrupt_at(0, frame=2)], (ProtocolError,), "request"),
    # The low byte of a size prefix: the frame looks longer (wait: timeout) or shorter
    # (the rest is read as the next frame: garbage), typed either way.
    Case("corrupt@hs+3", [Fault.corrupt_at(3, xor=0x01)], (KafkaCompatError,), "open"),
    Case("corrupt@md+3", [Fault.corrupt_at(3, xor=0x01, frame=2)], (KafkaCompatError,), "request"),
    Case("corrupt@md+3/big", [Fault.corrupt_at(3, xor=0x80, frame=2)], (KafkaCompatError,), "request"),
    # The correlation id: nobody asked for that answer.
    Case("corrupt@hs+7", [Fault.corrupt_at(7)], (ProtocolError,), "open"),
    Case("corrupt@md+7", [Fault.corrupt_at(7, frame=2)], (ProtocolError,), "request"),
    Case("corrupt@fc+4", [Fault.corrupt_at(4, frame=3)], (ProtocolError,), "request"),
    # Inside a body: a decode error for that one request, or a value that reads differently.
    Case("corrupt@hs+12", [Fault.corrupt_at(12)], (OK, KafkaCompatError)),
    Case("corrupt@hs-1", [Fault.corrupt_at(-1, frame=1)], (OK, KafkaCompatError)),
    Case("corrupt@md+9", [Fault.corrupt_at(9, frame=2)], (OK, DecodeError), "request"),
    Case("corrupt@md-1", [Fault.corrupt_at(-1, frame=2)], (OK, DecodeError), "request"),
    Case("corrupt@fc-1", [Fault.corrupt_at(-1, frame=3)], (OK, DecodeError), "request"),
    # -- a size prefix no Kafka broker sends ----------------------------------------------------
    Case("size=7fffffff@hs", [Fault.rewrite_size(1, PREFIX_INT32_MAX)], (ProtocolError,), "open"),
    Case("size=7fffffff@md", [Fault.rewrite_size(2, PREFIX_INT32_MAX)], (ProtocolError,), "request"),
    Case("size=ffffffff@hs", [Fault.rewrite_size(1, PREFIX_MINUS_ONE)], (ProtocolError,), "open"),
    Case("size=ffffffff@md", [Fault.rewrite_size(2, PREFIX_MINUS_ONE)], (ProtocolError,), "request"),
    Case("size=tls@hs", [Fault.rewrite_size(1, PREFIX_TLS)], (WrongProtocolError,), "open", TLS_HINT),
    Case("size=tls@md", [Fault.rewrite_size(2, PREFIX_TLS)], (WrongProtocolError,), "request", TLS_HINT),
    Case("size=http@hs", [Fault.rewrite_size(1, PREFIX_HTTP)], (WrongProtocolError,), "open", HTTP_HINT),
    Case("size=http@md", [Fault.rewrite_size(2, PREFIX_HTTP)], (WrongProtocolError,), "request", HTTP_HINT),
    # -- a correlation id nobody used -------------------------------------------------------------
    Case("cid@hs", [Fault.rewrite_correlation_id(1, 0x5EED)], (ProtocolError,), "open"),
    Case("cid@md", [Fault.rewrite_correlation_id(2, 0x5EED)], (ProtocolError,), "request"),
    Case("cid@fc", [Fault.rewrite_correlation_id(3, -1)], (ProtocolError,), "request"),
    Case("cid@md=previous", [Fault.rewrite_correlation_id(2, lambda old: old - 1)], (ProtocolError,),
         "request"),
    # -- client -> broker ---------------------------------------------------------------------
    # A request cut short: the broker sees a truncated frame, then end of stream.
    Case("c2b:close@hs+5", to_broker=[Fault.close_after(5, connections=FIRST)], downgraded=True),
    Case("c2b:close@md+5", to_broker=[Fault.close_after(5, frame=2)], expect=(TransportError,),
         stage="request"),
    Case("c2b:stall@md+0", to_broker=[Fault.stall_after(0, frame=2)], expect=(KafkaTimeoutError,),
         stage="request"),
    # A request whose api key or version is damaged: Tansu answers or closes; typed either way.
    Case("c2b:corrupt@md+5", to_broker=[Fault.corrupt_at(5, xor=0x7F, frame=2)],
         expect=(OK, KafkaCompatError)),
]
# fmt: on


async def _exchange(address: tuple[str, int], config: ConnectionConfig = CONFIG) -> dict[str, Any]:
    """Open, Metadata, FindCoordinator v4: what happened, and where it stopped."""
    result: dict[str, Any] = {"stage": "open", "error": None}
    try:
        async with open_connection(*address, config) as conn:
            result["handshake"] = conn.handshake
            result["stage"] = "request"
            metadata = await conn.request(m.MetadataRequest(topics=None))
            assert isinstance(metadata, m.MetadataResponse), metadata  # never another's answer
            result["metadata"] = metadata
            found = await conn.request(m.FindCoordinatorRequest(coordinator_keys=[KEY]), version=4)
            assert isinstance(found, m.FindCoordinatorResponse), found
            assert [c.key for c in found.coordinators] == [KEY], found  # its own answer
            result["stage"] = "done"
    except* KafkaCompatError as group:
        result["error"] = _only(group)
    return result




def _only(group: BaseExceptionGroup[KafkaCompatError]) -> KafkaCompatError:
    """The one error inside (nested) exception groups, as trio's nurseries wrap it."""
    leaves: list[KafkaCompatError] = []

    def walk(item: BaseException) -> None:
        if isinstance(item, BaseExceptionGroup):
            for inner in item.exceptions:
                walk(inner)
        else:
            assert isinstance(item, KafkaCompatError)
            leaves.append(item)

    walk(group)
    assert len(leaves) == 1, leaves
    return leaves[0]


async def _open_failure(address: tuple[str, int], config: ConnectionConfig = CONFIG) -> KafkaCompatError:
    """The error opening a connection ends with (the handshake must fail)."""
    failure: KafkaCompatError | None = None
    try:
        async with open_connection(*address, config):
            pass
    except* KafkaCompatError as group:
        failure = _only(group)
    assert failure is not None, "the connection opened"
    return failure


def _check(case: Case, result: dict[str, Any]) -> None:
    error = result["error"]
    if error is None:
        assert OK in case.expect, f"{case.id}: succeeded, expected {case.expect}"
        assert result["stage"] == "done"
        if case.downgraded is not None:
            transcript = result["handshake"].transcript
            assert (transcript.api_versions_version == case.downgraded_to) == case.downgraded, transcript
            assert transcript.connections == (2 if case.downgraded else 1)
        return
    allowed = tuple(kind for kind in case.expect if kind is not OK)
    assert isinstance(error, allowed), f"{case.id}: {type(error).__name__}: {error}"
    if case.stage is not None:
        assert result["stage"] == case.stage, f"{case.id}: failed during {result['stage']}: {error}"
    if case.hint is not None:
        assert case.hint in str(error), str(error)
    assert error.node is not None  # every error names the broker concerned


def check_case_from_another_loop(
    tansu: TansuBroker, case: Case, exchange: Callable[[tuple[str, int]], dict[str, Any]]
) -> None:
    """One case for a driver that is not trio's: the proxy runs on a trio thread, ``exchange``
    (open, Metadata, FindCoordinator through the proxy's address) in this one.

    Besides the outcome (``_check``): every client socket closed, within the deadline
    bound and the connection bound.
    """
    server = lambda: fault_proxy(  # noqa: E731
        (tansu.host, tansu.port), to_client=case.to_client, to_broker=case.to_broker
    )
    with in_trio_thread(server) as running:
        proxy = running.value
        started = time.monotonic()
        result = exchange(proxy.address)
        elapsed = time.monotonic() - started
        # Nothing left open: the proxy saw every client socket closed.
        running.call(proxy.release)
        give_up = time.monotonic() + 3.0
        while not running.call(lambda: all(r.finished.is_set() for r in proxy.connections)):
            assert time.monotonic() < give_up, "a client socket was left open"
            time.sleep(0.01)
    _check(case, result)
    assert elapsed < 2 * REQUEST_TIMEOUT + 2.0, elapsed
    assert len(proxy.connections) <= MAX_PROXY_CONNECTIONS


@pytest.mark.parametrize("case", TABLE, ids=[c.id for c in TABLE])
async def test_fault_table_against_tansu(tansu: TansuBroker, case: Case) -> None:
    with trio.fail_after(DEADLINE):
        async with fault_proxy(
            (tansu.host, tansu.port), to_client=case.to_client, to_broker=case.to_broker
        ) as proxy:
            start = trio.current_time()
            result = await _exchange(proxy.address)
            elapsed = trio.current_time() - start
            _check(case, result)
            # No hang: at worst one handshake timeout or one request timeout (plus slack).
            assert elapsed < 2 * REQUEST_TIMEOUT + 2.0, elapsed
            # Nothing left open: the proxy saw every client socket closed.
            proxy.release()
            with trio.fail_after(3.0):
                for record in proxy.connections:
                    await record.finished.wait()
            assert len(proxy.connections) <= MAX_PROXY_CONNECTIONS


def test_the_table_covers_every_fault_kind() -> None:
    kinds = {f.kind for case in TABLE for f in (*case.to_client, *case.to_broker)}
    assert kinds == {"pass", "close", "reset", "stall", "corrupt", "size", "correlation_id"}


# ------------------------------------------------------- a few specifics, in detail --


async def test_a_stalled_handshake_times_out_without_a_downgrade(tansu: TansuBroker) -> None:
    """A broker that says nothing is named silent (it could be a wrong port), never taken as old."""
    with trio.fail_after(DEADLINE):
        async with fault_proxy((tansu.host, tansu.port), to_client=[Fault.stall_after(0)]) as proxy:
            error = await _open_failure(proxy.address)
    assert isinstance(error, SilentPeerError), repr(error)
    transcript = error.transcript
    assert transcript is not None
    assert [(a.version, a.outcome) for a in transcript.attempts] == [(5, "silent")]
    assert transcript.connections == 1 and len(proxy.connections) == 1
    assert "answered nothing" in str(error)


async def test_a_broker_stalled_after_its_first_bytes_times_out_without_a_downgrade(
    tansu: TansuBroker,
) -> None:
    """Half an answer, then nothing: a timeout of the request, not silence, and no step down."""
    rule = Fault.stall_after(6)  # the size prefix and part of the correlation id, then nothing
    with trio.fail_after(DEADLINE):
        async with fault_proxy((tansu.host, tansu.port), to_client=[rule]) as proxy:
            error = await _open_failure(proxy.address)
    assert isinstance(error, KafkaTimeoutError) and not isinstance(error, SilentPeerError), repr(error)
    transcript = error.transcript
    assert transcript is not None
    assert [(a.version, a.outcome) for a in transcript.attempts] == [(5, "timeout")]
    assert "not a sign of an old broker" in str(error)


@pytest.mark.parametrize("prefix", [PREFIX_INT32_MAX, PREFIX_MINUS_ONE], ids=["7fffffff", "ffffffff"])
@pytest.mark.parametrize("frame", [1, 2], ids=["handshake", "metadata"])
async def test_a_huge_size_prefix_is_refused_before_allocating(
    tansu: TansuBroker, prefix: bytes, frame: int
) -> None:
    with trio.fail_after(DEADLINE):
        rule = Fault.rewrite_size(frame, prefix)
        async with fault_proxy((tansu.host, tansu.port), to_client=[rule]) as proxy:
            gc.collect()
            tracemalloc.start()
            try:
                result = await _exchange(proxy.address)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    assert isinstance(result["error"], ProtocolError), result["error"]
    assert not isinstance(result["error"], WrongProtocolError)
    text = str(result["error"])
    assert ("exceeds the maximum" in text) if prefix == PREFIX_INT32_MAX else ("negative" in text)
    assert peak < 4 * 1024 * 1024, f"peak traced memory {peak} bytes"


async def test_a_mismatched_correlation_id_fails_every_request_in_flight(tansu: TansuBroker) -> None:
    """The first answer after the handshake claims the *next* request's id: nobody may take it."""
    config = ConnectionConfig(connect_timeout=2.0, request_timeout=5.0, max_in_flight=8)
    rules = [Fault.stall_after(0, frame=2), Fault.rewrite_correlation_id(2, lambda old: old + 1)]
    with trio.fail_after(DEADLINE):
        async with (
            fault_proxy((tansu.host, tansu.port), to_client=rules) as proxy,
            trio.open_nursery() as nursery,
        ):
            conn = BrokerConnection(*proxy.address, config)
            await conn.open(nursery)
            outcomes: dict[int, Any] = {}

            async def ask(i: int) -> None:
                try:
                    request = m.FindCoordinatorRequest(coordinator_keys=[f"k{i}"])
                    outcomes[i] = await conn.request(request, version=4)
                except KafkaCompatError as exc:
                    outcomes[i] = exc

            for i in range(6):
                nursery.start_soon(ask, i)
            record = proxy.connections[0]
            await wait_until(lambda: record.to_broker.frames_completed == 7)  # all six at the broker
            assert conn.in_flight == 6
            proxy.release()  # the answers flow, the first one under the second one's id
            await wait_until(lambda: len(outcomes) == 6, limit=3.0)
            await conn.aclose()
    for i, outcome in outcomes.items():
        assert isinstance(outcome, ProtocolError), f"request {i} got {outcome!r}"
    assert not conn.is_ready


async def test_a_response_larger_than_max_frame_size_is_refused(tansu: TansuBroker) -> None:
    config = ConnectionConfig(connect_timeout=2.0, request_timeout=2.0, max_frame_size=2048)
    topics = [m.MetadataRequest.MetadataRequestTopic(name=f"t{i:0120d}") for i in range(30)]
    with trio.fail_after(DEADLINE):
        async with fault_proxy((tansu.host, tansu.port)) as proxy:
            async with open_connection(*proxy.address, config) as conn:
                small = await conn.request(m.MetadataRequest(topics=None))  # fits
                assert isinstance(small, m.MetadataResponse)
                with pytest.raises(ProtocolError, match="exceeds the maximum of 2048") as caught:
                    await conn.request(m.MetadataRequest(topics=topics, allow_auto_topic_creation=False))
                assert not isinstance(caught.value, WrongProtocolError)
                assert not conn.is_ready
                with pytest.raises(ProtocolError):
                    await conn.request(m.MetadataRequest(topics=None))
            with trio.fail_after(3.0):
                await proxy.connections[0].finished.wait()


async def test_a_handshake_answer_larger_than_max_frame_size_is_refused(tansu: TansuBroker) -> None:
    config = ConnectionConfig(connect_timeout=2.0, request_timeout=2.0, max_frame_size=64)
    with trio.fail_after(DEADLINE):
        error = await _open_failure((tansu.host, tansu.port), config)
    assert isinstance(error, ProtocolError), repr(error)
    assert not isinstance(error, NegotiationError)  # a limit of ours, not a foreign peer
    assert "exceeds the maximum of 64" in str(error)
    assert error.transcript is not None and error.node is not None


# ----------------------------------------------------------- the librdkafka mock --
# Its handshake takes two replies on one connection (v4 refused naming ApiVersions 0-2, then
# v2): frame 2 is the v2 answer, frame 3 Metadata's.  A close at v2 (before any v2 reply) is
# retried once at v0 on a new connection (rule 4 of negotiation/handshake/table.py), where frame 2 is then
# Metadata's answer.

MOCK_TABLE = [
    Case("mock:pass", [Fault.passthrough()]),
    Case("mock:stall@v2", [Fault.stall_after(0, frame=2)], (KafkaTimeoutError,), "open"),
    # Closed at v2 on every connection: v0 on the second works, its Metadata answer is cut.
    Case("mock:close@v2+0", [Fault.close_after(0, frame=2)], (TransportError,), "request"),
    # Closed at v2 on the first only: below v3 there is no flexible version to step down to, so v0.
    Case(
        "mock:close@v2+0/first", [Fault.close_after(0, frame=2, connections=FIRST)], (OK,),
        downgraded=True, downgraded_to=0,
    ),
    Case("mock:size=http@v2", [Fault.rewrite_size(2, PREFIX_HTTP)], (WrongProtocolError,), "open", HTTP_HINT),
    Case("mock:cid@v2", [Fault.rewrite_correlation_id(2, 0x5EED)], (ProtocolError,), "open"),
    Case("mock:close@md+4", [Fault.close_after(4, frame=3)], (TransportError,), "request"),
    Case("mock:cid@md", [Fault.rewrite_correlation_id(3, 0x5EED)], (ProtocolError,), "request"),
]


@pytest.mark.parametrize("case", MOCK_TABLE, ids=[c.id for c in MOCK_TABLE])
async def test_fault_table_against_the_librdkafka_mock(
    librdkafka_mock: LibrdkafkaMockCluster, case: Case
) -> None:
    with trio.fail_after(DEADLINE):
        address = (librdkafka_mock.host, librdkafka_mock.port)
        async with fault_proxy(address, to_client=case.to_client, to_broker=case.to_broker) as proxy:
            result = await _exchange_mock(proxy.address)
            _check(case, result)
            proxy.release()
            with trio.fail_after(3.0):
                for record in proxy.connections:
                    await record.finished.wait()


async def _exchange_mock(address: tuple[str, int]) -> dict[str, Any]:
    """Open and Metadata (the mock has no FindCoordinator v4)."""
    result: dict[str, Any] = {"stage": "open", "error": None}
    try:
        async with open_connection(*address, CONFIG) as conn:
            result["handshake"] = conn.handshake
            result["stage"] = "request"
            metadata = await conn.request(m.MetadataRequest(topics=None))
            assert isinstance(metadata, m.MetadataResponse), metadata
            result["stage"] = "done"
    except* KafkaCompatError as group:
        result["error"] = _only(group)
    return result


# ------------------------------------------------------------ the proxy itself --


def _frame(correlation_id: int, body: bytes) -> bytes:
    payload = correlation_id.to_bytes(4, "big", signed=True) + body
    return len(payload).to_bytes(4, "big") + payload


@pytest.mark.parametrize("cuts", [[], [1], [3, 5], [6], [13, 14, 15, 16, 17, 18, 19, 20], list(range(1, 40))])
def test_the_proxy_rewrites_exactly_the_bytes_asked_whatever_the_chunking(cuts: list[int]) -> None:
    stream = _frame(7, b"abc") + _frame(8, b"defgh") + _frame(9, b"")
    rules = [
        Fault.rewrite_size(3, PREFIX_HTTP),
        Fault.rewrite_correlation_id(2, lambda old: old * 100),
        Fault.corrupt_at(-1, xor=0x20, frame=1),
    ]
    expected = _frame(7, b"abC") + _frame(800, b"defgh") + b"HTTP" + (9).to_bytes(4, "big")
    bounds = [0, *cuts, len(stream)]
    pieces = [stream[lo:hi] for lo, hi in itertools.pairwise(bounds)]
    assert rewrite_offline(rules, pieces) == expected
