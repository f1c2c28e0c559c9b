"""Legacy detection (issue 11's target), against a real Apache Kafka 0.9.0.1 started for the section.

Kafka 0.9 answers nothing to ApiVersions and keeps serving.  kafkacompat waits
a quiet period, writes a Metadata v0 probe on the same connection and sees its
reply come first: the broker skipped ApiVersions, so 0.9.0's table stands in.
Timed here, with no configuration at all:

- the TCP connect alone (a blocking socket to the broker, connected and
  closed), the reference every other row is measured beyond;
- kafkacompat's blocking probe (``probe_broker``: connect, handshake, close)
  and ``open_connection`` in ``trio.run`` (connect, handshake, close), each
  checked to have named 0.9.0 before it is timed; reported: the median over
  the runs, minus the median TCP connect;
- librdkafka (confluent-kafka's ``AdminClient``, default configuration): the
  time from creating the client until it logs that its ApiVersionRequest
  failed (``api.version.request.timeout.ms``, 10 s by default), once; after
  that it retries the same request and never reads the broker's metadata.

Target: kafkacompat under 1 s beyond the TCP connect.  The ratio column is
librdkafka's stall over kafkacompat's time, so the target is shown as that
stall over 1 s (``>= 10x`` for a 10 s stall).  Each run is bounded by a
timeout and all traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import logging
import socket
import statistics
import threading
import time
from collections.abc import Callable

import trio

from bench.common import BenchConfig, Row
from kafkacompat.blocking.probe import probe_broker
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.testing.kafka09 import Kafka09Broker
from kafkacompat.transport import open_connection

TITLE = "legacy detection on a real Kafka 0.9.0.1 (time beyond the TCP connect)"
WORKLOAD = "no configuration: learn that the broker is 0.9.0 and use its table"
BUDGET = 1.0  # seconds beyond the TCP connect
LIBRDKAFKA_LIMIT = 30.0


def _median_of(runs: int, fn: Callable[[], object]) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def _tcp_connect(host: str, port: int) -> None:
    with socket.create_connection((host, port), timeout=5):
        pass


def _checked(caps: BrokerCapabilities | None) -> None:
    if caps is None or caps.fallback_release != "0.9.0":
        raise RuntimeError(f"kafkacompat did not name 0.9.0: {caps}")


def _trio_connect(host: str, port: int) -> None:
    async def main() -> None:
        with trio.fail_after(10):
            async with open_connection(host, port) as conn:
                _checked(conn.capabilities)

    trio.run(main)


def librdkafka_stall(bootstrap: str) -> tuple[float | None, str]:
    """Seconds until librdkafka gives up on ApiVersions, with its version; None if not importable."""
    try:
        import confluent_kafka
        from confluent_kafka.admin import AdminClient
    except ImportError as exc:
        return None, f"confluent-kafka not importable: {exc}"
    failed = threading.Event()

    class _Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "ApiVersionRequest failed" in record.getMessage():
                failed.set()

    logger = logging.getLogger("bench.legacy.librdkafka")
    logger.propagate, logger.handlers = False, [_Watch()]
    logger.setLevel(logging.DEBUG)
    started = time.perf_counter()
    client = AdminClient({"bootstrap.servers": bootstrap, "logger": logger})
    while not failed.is_set() and time.perf_counter() - started < LIBRDKAFKA_LIMIT:
        client.poll(0.02)  # serves the log callbacks
    elapsed = time.perf_counter() - started
    version = confluent_kafka.libversion()[0]
    if not failed.is_set():
        return None, f"librdkafka {version} logged no ApiVersionRequest failure in {LIBRDKAFKA_LIMIT:.0f} s"
    return elapsed, f"librdkafka {version}: default api.version.request.timeout.ms, then retries"


def run(config: BenchConfig) -> list[Row]:
    runs = 3 if config.quick else 7
    with Kafka09Broker() as broker:
        host, port = broker.host, broker.port
        _checked(probe_broker(host, port))  # warm up, and check before timing
        connect = _median_of(runs * 3, lambda: _tcp_connect(host, port))
        probe = _median_of(runs, lambda: _checked(probe_broker(host, port))) - connect
        trio_time = _median_of(runs, lambda: _trio_connect(host, port)) - connect
        stall, stall_note = librdkafka_stall(broker.bootstrap)
    target = None if stall is None else stall / BUDGET
    note = f"target: under {BUDGET:g} s beyond the TCP connect"

    def ours(impl: str, seconds: float) -> Row:
        ratio = None if stall is None else stall / seconds
        return Row(WORKLOAD, impl, seconds, ratio, target, note)

    return [
        Row(WORKLOAD, "TCP connect (reference: subtracted below)", connect, note=f"median of {runs * 3}"),
        ours("kafkacompat probe_broker (blocking)", probe),
        ours("kafkacompat open_connection (trio)", trio_time),
        Row(WORKLOAD, "librdkafka (confluent-kafka AdminClient)", stall, note=stall_note),
    ]
