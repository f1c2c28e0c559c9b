"""Every entry point against the hostile broker: typed, bounded in time and memory, never misrouted.

Memory and time are measured in a process of its own (``hostile_client``):
the client's peak RSS is its own VmHWM, the time its wall clock.  The bounds
asserted are the issue's: every call over by its deadline plus a margin, no
client above 64 MiB with the default settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio

from kafkacompat.aio import connect as connect_aio
from kafkacompat.blocking.probe import probe_broker
from kafkacompat.connection.config import ConnectionConfig, RetryPolicy
from kafkacompat.errors import (
    FanOutLimitError,
    InvalidAddressError,
    KafkaCompatError,
    ProtocolError,
    ProtocolViolationError,
    ReplyTooLargeError,
)
from kafkacompat.protocol.messages import MetadataRequest
from kafkacompat.testing import ThreadedCluster
from kafkacompat.testing.hostile import (
    HostileBroker,
    Reply,
    Request,
    answer,
    api_versions,
    huge_api_versions,
    metadata_naming,
    mutating,
    relay,
    scripted,
    unsupported_version,
)
from kafkacompat.testing.hostile_client import client_argv, measure
from kafkacompat.transport.cluster import connect
from kafkacompat.transport.connection import open_connection

REPO = Path(__file__).resolve().parents[3]
TIMEOUT = 2.0
T = TypeVar("T")
MARGIN = 3.0  # process start and imports included
PEAK_MIB = 64
QUICK = ConnectionConfig(connect_timeout=TIMEOUT, request_timeout=TIMEOUT, retry=RetryPolicy(attempts=1))
METADATA, API_VERSIONS = 3, 18


def garbage(size: int) -> Reply:
    return Reply(struct.pack(">i", size) + random.Random(size).randbytes(size))


def client(entry: str, address: str, *, roomy: bool = False, timeout: float = TIMEOUT) -> dict[str, object]:
    """Run ``entry`` in a child: typed, by its deadline, and (default ceilings) under 64 MiB."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    measured = measure(client_argv(entry, address, timeout, roomy=roomy), timeout=60, env=env, cwd=str(REPO))
    assert measured.returncode == 0, measured.stderr
    assert "Traceback" not in measured.stderr
    report = measured.report()
    assert report["typed"], report
    assert float(report["elapsed"]) < timeout + MARGIN, report  # type: ignore[arg-type]
    if not roomy:
        assert float(report["peak_rss_mib"]) < PEAK_MIB, report  # type: ignore[arg-type]
    return report


@contextmanager
def hostile(script: object) -> Iterator[HostileBroker]:
    with HostileBroker(script) as broker:  # type: ignore[arg-type]
        yield broker


# -- the cases of the issue, measured in a process of their own ---------------------------------

HUGE_REPLIES = {
    "ApiVersions of 10 million rows (60 MB)": huge_api_versions(10_000_000),
    "a 16 MiB garbage frame": lambda request: garbage(16 << 20),
    "a 60 MiB garbage frame": lambda request: garbage(60 << 20),
}


@pytest.mark.parametrize("case", list(HUGE_REPLIES))
@pytest.mark.parametrize(
    "entry", ["probe", "connection", "aio", "blocking", "cluster", "aio-cluster", "sync", "inspect"]
)
def test_a_huge_first_reply_is_refused_from_its_prefix(case: str, entry: str) -> None:
    with hostile(HUGE_REPLIES[case]) as broker:
        report = client(entry, broker.address)
    assert report["outcome"] == ("exit 1" if entry == "inspect" else "ReplyTooLargeError")


def test_a_huge_metadata_reply_is_refused_for_every_cluster_entry_point() -> None:
    script = scripted({API_VERSIONS: api_versions(), METADATA: lambda request: garbage(8 << 20)})
    with hostile(script) as broker:
        entries = (
            "connection", "aio", "blocking", "cluster", "coordinators", "aio-cluster", "aio-coordinators",
            "sync", "inspect-all",
        )
        for entry in entries:
            report = client(entry, broker.address)
            assert report["outcome"] in ("ReplyTooLargeError", "exit 1"), (entry, report)


TOPIC_METADATA = {
    # Above the 16 MiB ceiling of a Metadata naming topics: refused from its prefix.
    "a 60 MiB garbage frame": (lambda request: garbage(60 << 20), "ReplyTooLargeError"),
    # At the ceiling: read once into its buffer and handed on uncopied (75 MiB with the copy).
    "a 16 MiB garbage frame": (lambda request: garbage(16 << 20), "ProtocolError"),
    # 2 MiB on the wire, 19 MiB once decoded: refused from its count, before decoding.
    "Metadata naming 100,000 brokers": (
        metadata_naming([(n, "127.0.0.1", 1 + n % 60000) for n in range(100_000)]), "ReplyTooLargeError"
    ),
    "Metadata naming 10,000 brokers": (
        metadata_naming([(n, "127.0.0.1", 1 + n % 60000) for n in range(10_000)]), "ok"
    ),
}


@pytest.mark.parametrize("case", list(TOPIC_METADATA))
def test_metadata_for_every_topic_stays_under_64_mib_whatever_the_broker_sends(case: str) -> None:
    reply, outcome = TOPIC_METADATA[case]
    with hostile(scripted({API_VERSIONS: api_versions(), METADATA: reply})) as broker:
        report = client("connection-topics", broker.address, timeout=5.0)
    assert report["outcome"] == outcome, report


def test_the_ceiling_is_configurable() -> None:
    from kafkacompat.protocol.reply_limits import ReplyLimits

    roomy = ConnectionConfig(connect_timeout=TIMEOUT, request_timeout=TIMEOUT,
                             reply_limits=ReplyLimits(ceilings={API_VERSIONS: 1 << 20}))
    with hostile(huge_api_versions(100_000)) as broker:  # 600 KB, well formed
        with pytest.raises(ReplyTooLargeError, match="maximum of 65536"):
            probe_broker(broker.host, broker.port, QUICK)
        capabilities = probe_broker(broker.host, broker.port, roomy)
    assert capabilities.broker_range(API_VERSIONS) is not None


@pytest.mark.parametrize("entry", ["probe", "connection", "aio", "blocking"])
def test_with_the_ceilings_lifted_the_deadline_still_covers_decoding(entry: str) -> None:
    # 1,000,000 rows (7 MB) are within Kafka's count limit: decoding them outlasts the deadline.
    with hostile(huge_api_versions(1_000_000)) as broker:
        report = client(entry, broker.address, roomy=True, timeout=0.3)
    # Without the deadline over decoding it would end, after it, as UnsupportedVersionError.
    assert report["outcome"] == "KafkaTimeoutError"


def test_with_the_ceilings_lifted_kafkas_count_limit_still_holds() -> None:
    with hostile(huge_api_versions(10_000_000)) as broker:
        report = client("probe", broker.address, roomy=True)
    assert report["outcome"] == "DecodeError"


# -- addresses a broker names -------------------------------------------------------------------

BAD_ADDRESSES = [("a..b", 9092), ("a" * 64, 9092), ("x" * 10_000, 9092), ("evil\x00127.0.0.1", 9092),
                 ("127.0.0.1", 70000), ("127.0.0.1", -1), ("127.0.0.1", 2**31 - 1), ("a\x1b[2Jb", 9092)]


def on_loop(loop: str, body: Callable[[Callable[..., Any]], Awaitable[T]]) -> T:
    """Run ``body`` with the cluster ``connect`` of ``loop`` (trio or asyncio), in a loop of its own."""
    if loop == "trio":
        return trio.run(body, connect)
    return asyncio.run(body(connect_aio))


LOOPS = ["trio", "asyncio"]


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(("host", "port"), BAD_ADDRESSES)
def test_an_address_metadata_names_is_refused_naming_the_sender(host: str, port: int, loop: str) -> None:
    script = scripted({API_VERSIONS: api_versions(), METADATA: metadata_naming([(7, host, port)])})

    with hostile(script) as broker:

        async def run(connect: Callable[..., Any]) -> None:
            async with connect(broker.address, QUICK) as cluster:
                await cluster.capabilities()

        with pytest.raises(InvalidAddressError) as caught:
            on_loop(loop, run)
        assert broker.connections == 1  # nothing connected to what the broker named
        report = client("inspect-all", broker.address)
    assert caught.value.node == broker.address and broker.address in str(caught.value)
    text = str(caught.value)
    assert "\x00" not in text and "\x1b" not in text and len(text) < 400
    assert report["outcome"] == "exit 1"


@pytest.mark.parametrize(
    "typed", ["a..b:9092", "x:70000", "x:-1", "a" * 10_000 + ":9092", "h:\u0663", "a\x01b:9092", "[::1:9092"]
)
def test_an_address_the_user_types_is_refused_without_a_traceback(typed: str) -> None:
    report = client("inspect", typed)
    assert report["outcome"] == "exit 2"  # a command line that cannot be used as typed


# -- fan-out ------------------------------------------------------------------------------------


@pytest.mark.parametrize("loop", LOOPS)
def test_fan_out_is_bounded_and_the_rest_reported(loop: str) -> None:
    config = ConnectionConfig(connect_timeout=TIMEOUT, request_timeout=TIMEOUT, retry=RetryPolicy(attempts=1),
                              max_fanout=20, fanout_concurrency=4)
    address = ""

    async def run(connect: Callable[..., Any]) -> tuple[int, FanOutLimitError]:
        async with connect(address, config) as cluster:
            reached = await cluster.capabilities(require_all=False)
            with pytest.raises(FanOutLimitError) as caught:
                await cluster.capabilities()
            return len(reached), caught.value

    answering, most, lock = [0], [0], threading.Lock()

    def slow_answer(request: Request) -> Reply | bytes:
        with lock:
            answering[0] += 1
            most[0] = max(most[0], answering[0])
        time.sleep(0.05)  # handshakes in progress overlap, as far as the client lets them
        with lock:
            answering[0] -= 1
        return api_versions()(request)

    targets = [HostileBroker(scripted({API_VERSIONS: slow_answer})).start() for _ in range(30)]
    try:
        brokers = [(n, target.host, target.port) for n, target in enumerate(targets)]
        script = scripted({API_VERSIONS: api_versions(), METADATA: metadata_naming(brokers)})
        with hostile(script) as broker:
            address = broker.address
            reached, error = on_loop(loop, run)
    finally:
        for target in targets:
            target.stop()
    assert reached == 20 and "10 of the 30 brokers" in str(error)
    assert sum(target.connections for target in targets) == 20 and 1 < most[0] <= 4


def test_inspect_all_brokers_reports_the_brokers_it_left_out() -> None:
    brokers = [(n, "127.0.0.1", 1 + n) for n in range(2000)]  # privileged ports: refused at once
    script = scripted({API_VERSIONS: api_versions(), METADATA: metadata_naming(brokers)})
    with hostile(script) as broker:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        argv = client_argv("inspect-all", broker.address, TIMEOUT)
        measured = measure(argv, timeout=120, env=env, cwd=str(REPO))
    assert "1744 of the 2000 brokers the metadata names were not contacted" in measured.stderr
    assert measured.report()["outcome"] == "exit 1"
    assert float(measured.report()["peak_rss_mib"]) < PEAK_MIB


@pytest.mark.parametrize("loop", LOOPS)
def test_two_nodes_named_at_one_address_are_refused_not_crashed_on(loop: str) -> None:
    with hostile(scripted({API_VERSIONS: api_versions()})) as target:
        brokers = [(0, target.host, target.port), (1, target.host, target.port)]
        with hostile(scripted({API_VERSIONS: api_versions(), METADATA: metadata_naming(brokers)})) as broker:
            report = client("inspect-all", broker.address)

            async def run(connect: Callable[..., Any]) -> None:
                async with connect(broker.address, QUICK) as cluster:
                    await cluster.view()

            with pytest.raises(InvalidAddressError, match="for node 1 and for node 0"):
                on_loop(loop, run)
    assert report["outcome"] == "exit 1"


# -- protocol invariants ------------------------------------------------------------------------


def test_an_impossible_unsupported_version_range_is_refused_not_retried() -> None:
    script = scripted({API_VERSIONS: unsupported_version(5, 1)})
    with hostile(script) as broker, pytest.raises(ProtocolViolationError, match="minimum above maximum"):
        probe_broker(broker.host, broker.port, QUICK)
    assert [r.api_key for r in broker.requests] == [API_VERSIONS]  # one request, no retry


def test_a_negative_epoch_is_refused_by_the_library_and_the_cli_alike() -> None:
    with hostile(scripted({API_VERSIONS: api_versions(epoch=-5), METADATA: metadata_naming([])})) as broker:
        with pytest.raises(ProtocolViolationError, match="epoch -5"):
            probe_broker(broker.host, broker.port, QUICK)
        report = client("inspect", broker.address)
    assert report["outcome"] == "exit 1"


# -- nothing misrouted --------------------------------------------------------------------------


def test_answers_out_of_order_fail_every_caller_and_reach_none() -> None:
    held: list[Request] = []

    def swap(request: Request) -> Reply:
        if request.api_key == API_VERSIONS:
            return api_versions()(request)  # type: ignore[return-value]
        held.append(request)
        if len(held) < 2:
            return Reply(label="held")
        first, second = held
        data = b"".join(answer(r, metadata_answer(r)) for r in (second, first))
        return Reply(data, label="swapped")

    async def run(address: str) -> list[object]:
        host, _, port = address.rpartition(":")
        outcomes: list[object] = []
        async with open_connection(host, int(port), QUICK) as conn:

            async def one() -> None:
                try:
                    outcomes.append(await conn.request(MetadataRequest(topics=[])))
                except KafkaCompatError as exc:
                    outcomes.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(one)
                nursery.start_soon(one)
        return outcomes

    with hostile(swap) as broker:
        outcomes = trio.run(run, broker.address)
    assert len(outcomes) == 2 and all(isinstance(o, ProtocolError) for o in outcomes)


def metadata_answer(request: Request) -> object:
    from kafkacompat.protocol.messages import MetadataResponse

    return MetadataResponse(brokers=[MetadataResponse.MetadataResponseBroker(node_id=request.correlation_id,
                                                                            host="h", port=1)])


# -- randomized: real replies, damaged ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_damaged_real_replies_stay_typed_and_bounded(seed: int) -> None:
    rng = random.Random(seed)
    with ThreadedCluster("4.1") as cluster:
        host, _, port = cluster.bootstrap.split(",")[0].rpartition(":")
        with hostile(mutating(relay(host, int(port)), rng)) as broker:
            for _ in range(15):
                started = time.monotonic()
                # Whatever the damage: a capability answer, or a kafkacompat error.
                with contextlib.suppress(KafkaCompatError):
                    probe_broker(broker.host, broker.port, QUICK, timeout=TIMEOUT)
                assert time.monotonic() - started < TIMEOUT + 1
            for entry in ("probe", "aio", "blocking", "cluster"):
                client(entry, broker.address)
        damaged = {label for label in broker.labels if label not in ("relayed", "")}
    assert damaged, "no reply was damaged"
