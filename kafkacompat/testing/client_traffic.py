"""What applications do with a Kafka client, as one scenario per Python client library.

Theory.  A client profile is only as good as the traffic it was recorded from.
This module drives kafka-python, aiokafka or confluent-kafka (librdkafka)
through what applications do: read metadata (creating the topic when it is
missing), produce with compression,
consume in a group, commit, describe and delete the group with the admin
client, and run a transaction where the library has them.  It imports the
client library only when its scenario runs, so it works with whatever release
is first on ``sys.path`` (``make profiles`` installs each release into its own
directory and runs ``python -m kafkacompat.testing.client_traffic`` with that
directory in front).

Each step is reported as one JSON line when it starts (``{"started": ...}``)
and when it ends (``{"step": ..., "ok": true}`` or the error that stopped it),
so that a library that aborts the process (librdkafka asserts) still leaves
the step it died in; ``read_report`` rebuilds the report from those lines.
The scenario stops at the first failed step, since the later ones depend on
it; the report names the step, which is what a verdict of
"breaks at API x" is checked against.  Nothing here needs kafkacompat beyond
the standard library.

The clients' own request timeout is a parameter (``--request-timeout``,
seconds): by default each library keeps the one this scenario always gave it
(30 s for kafka-python and aiokafka, ``socket.timeout.ms`` 10 s for
librdkafka), which is what ``make profiles`` measures with.  A test against a
broker that never answers ApiVersions (0.9) passes a short one, since every
client then waits that long before it gives up or falls back.  With it set,
kafka-python's ``request_timeout_ms`` (and, before 3.0,
``api_version_auto_timeout_ms``, its version probe, never above its 2 s
default; from 3.0, ``bootstrap_timeout_ms``), aiokafka's
``request_timeout_ms`` and librdkafka's ``socket.timeout.ms`` and
``api.version.request.timeout.ms`` follow it.  kafka-python's consumer
refuses a request timeout not above its session timeout (10 s), so the
consumer keeps at least that much.

Run: ``python -m kafkacompat.testing.client_traffic [--request-timeout S]
LIBRARY HOST:PORT [TOPIC]``; it prints the step lines and then the report
(``{"report": {library, version, ok, steps}}``) and exits 0 when every step
passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["LIBRARIES", "STEPS", "Traffic", "read_report", "run"]

STEPS = ("metadata", "produce", "consume", "commit", "describe-group", "delete-group", "transaction")
LIBRARIES = ("kafka-python", "aiokafka", "confluent-kafka")
# How long a step may wait for the broker; KAFKACOMPAT_TRAFFIC_TIMEOUT overrides it.
TIMEOUT_S = float(os.environ.get("KAFKACOMPAT_TRAFFIC_TIMEOUT", "20"))
PAYLOAD = b"kafkacompat traffic " * 8  # long enough for gzip to matter
DEFAULT_REQUEST_TIMEOUT_MS = 30000  # kafka-python and aiokafka, unless told otherwise
DEFAULT_SOCKET_TIMEOUT_MS = 10000  # librdkafka, unless told otherwise
_PROBE_TIMEOUT_MS = 2000  # kafka-python's own api_version_auto_timeout_ms
_SESSION_TIMEOUT_MS = 10000  # kafka-python's consumer default, which its request timeout must exceed


class _StepFailed(Exception):
    """Ends a scenario at its first failed step; ``run`` catches it (the step is in the report)."""


class Traffic:
    """The steps of one run, in order, and where it stopped."""

    def __init__(
        self,
        library: str,
        bootstrap: str,
        topic: str,
        stream: TextIO | None = None,
        request_timeout_s: float | None = None,
    ) -> None:
        self.library, self.bootstrap, self.topic, self.stream = library, bootstrap, topic, stream
        self.request_timeout_ms = None if request_timeout_s is None else max(1, int(request_timeout_s * 1000))
        self.group = f"kafkacompat-traffic-{uuid.uuid4().hex[:8]}"
        self.steps: list[dict[str, Any]] = []
        self.version = "unknown"

    def _emit(self, event: dict[str, Any]) -> None:
        if self.stream is not None:  # a crash of the library (librdkafka asserts) loses nothing said
            print(json.dumps(event), file=self.stream, flush=True)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        self._emit({"started": name})
        try:
            yield
        except Exception as exc:
            self._end({"step": name, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]})
            raise _StepFailed(name) from exc
        self._end({"step": name, "ok": True, "seconds": round(time.monotonic() - started, 2)})

    def _end(self, step: dict[str, Any]) -> None:
        self.steps.append(step)
        self._emit(step)

    def skip(self, name: str, why: str) -> None:
        self._end({"step": name, "ok": True, "skipped": why})

    @property
    def ok(self) -> bool:
        return all(s["ok"] for s in self.steps)

    def report(self) -> dict[str, Any]:
        return {"library": self.library, "version": self.version, "ok": self.ok, "steps": self.steps}


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the topic is not listed after creating it")
        time.sleep(0.2)


# -- kafka-python --------------------------------------------------------------------------


def _kafka_python(t: Traffic) -> None:
    kafka = importlib.import_module("kafka")
    admin_module = importlib.import_module("kafka.admin")
    t.version = kafka.__version__
    common: dict[str, Any] = {
        "bootstrap_servers": t.bootstrap,
        "request_timeout_ms": DEFAULT_REQUEST_TIMEOUT_MS,
    }
    if t.request_timeout_ms is not None:
        common["request_timeout_ms"] = t.request_timeout_ms
        knobs = getattr(admin_module.KafkaAdminClient, "DEFAULT_CONFIG", {})
        if "api_version_auto_timeout_ms" in knobs:  # before 3.0
            common["api_version_auto_timeout_ms"] = min(t.request_timeout_ms, _PROBE_TIMEOUT_MS)
        if "bootstrap_timeout_ms" in knobs:  # 3.0 on: how long the first metadata may take
            common["bootstrap_timeout_ms"] = t.request_timeout_ms
    consumer_common = {
        **common, "request_timeout_ms": max(common["request_timeout_ms"], _SESSION_TIMEOUT_MS + 500)
    }
    admin = admin_module.KafkaAdminClient(**common)
    try:
        # kafka-python before 2.0 has no admin list_topics: a consumer lists them (Metadata too).
        lister = kafka.KafkaConsumer(**consumer_common) if not hasattr(admin, "list_topics") else None
        topics = admin.list_topics if lister is None else lister.topics
        with t.step("metadata"):
            if t.topic not in topics():
                admin.create_topics([admin_module.NewTopic(t.topic, 1, 1)])
                _wait_for(lambda: t.topic in topics())
        if lister is not None:
            lister.close()
        with t.step("produce"):
            producer = kafka.KafkaProducer(compression_type="gzip", **common)
            producer.send(t.topic, PAYLOAD, partition=0).get(timeout=TIMEOUT_S)
            producer.close()
        consumer = kafka.KafkaConsumer(
            group_id=t.group, auto_offset_reset="earliest", enable_auto_commit=False,
            consumer_timeout_ms=int(TIMEOUT_S * 1000), **consumer_common,
        )
        try:
            with t.step("consume"):
                consumer.subscribe([t.topic])
                deadline = time.monotonic() + TIMEOUT_S
                while not any(r.value == PAYLOAD for batch in consumer.poll(1000).values() for r in batch):
                    if time.monotonic() > deadline:
                        raise TimeoutError("no record consumed")
            with t.step("commit"):
                consumer.commit()
            with t.step("describe-group"):
                # kafka-python 3 renamed the group methods (describe_groups, delete_groups).
                describe = getattr(admin, "describe_consumer_groups", None) or admin.describe_groups
                described = describe([t.group])
                if not described:
                    raise RuntimeError("no group described")
        finally:
            consumer.close()
        delete = getattr(admin, "delete_consumer_groups", None) or getattr(admin, "delete_groups", None)
        if delete is None:
            t.skip("delete-group", f"kafka-python {t.version} cannot delete groups")
        else:
            with t.step("delete-group"):
                delete([t.group])
        if not hasattr(kafka.KafkaProducer, "begin_transaction"):
            t.skip("transaction", f"kafka-python {t.version} has no transactions")
            return
        with t.step("transaction"):
            producer = kafka.KafkaProducer(transactional_id=f"{t.group}-txn", **common)
            producer.init_transactions()
            producer.begin_transaction()
            producer.send(t.topic, PAYLOAD, partition=0)
            producer.commit_transaction()
            producer.close()
    finally:
        admin.close()


# -- aiokafka ------------------------------------------------------------------------------


def _aiokafka(t: Traffic) -> None:
    aiokafka = importlib.import_module("aiokafka")
    t.version = aiokafka.__version__
    asyncio.run(_aiokafka_async(t, aiokafka))


async def _aiokafka_async(t: Traffic, aiokafka: Any) -> None:
    common = {
        "bootstrap_servers": t.bootstrap,
        "request_timeout_ms": t.request_timeout_ms or DEFAULT_REQUEST_TIMEOUT_MS,
    }
    admin_module = importlib.import_module("aiokafka.admin")
    admin = admin_module.AIOKafkaAdminClient(**common)
    with t.step("metadata"):
        await admin.start()
        if t.topic not in await admin.list_topics():
            await admin.create_topics([admin_module.NewTopic(t.topic, 1, 1)])
            deadline = time.monotonic() + TIMEOUT_S
            while t.topic not in await admin.list_topics():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"topic {t.topic} not listed after creating it")
                await asyncio.sleep(0.2)
    try:
        with t.step("produce"):
            producer = aiokafka.AIOKafkaProducer(compression_type="gzip", **common)
            await producer.start()
            try:
                await producer.send_and_wait(t.topic, PAYLOAD, partition=0)
            finally:
                await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(
            t.topic, group_id=t.group, auto_offset_reset="earliest", enable_auto_commit=False, **common
        )
        try:
            with t.step("consume"):
                await consumer.start()
                deadline = time.monotonic() + TIMEOUT_S
                while True:
                    batches = (await consumer.getmany(timeout_ms=1000)).values()
                    if any(r.value == PAYLOAD for batch in batches for r in batch):
                        break
                    if time.monotonic() > deadline:
                        raise TimeoutError("no record consumed")
            with t.step("commit"):
                await consumer.commit()
            with t.step("describe-group"):
                if not await admin.describe_consumer_groups([t.group]):
                    raise RuntimeError("no group described")
        finally:
            await consumer.stop()
        if not hasattr(admin, "delete_consumer_groups"):
            t.skip("delete-group", f"aiokafka {t.version} cannot delete groups")
        else:
            with t.step("delete-group"):
                await admin.delete_consumer_groups([t.group])
        with t.step("transaction"):
            producer = aiokafka.AIOKafkaProducer(transactional_id=f"{t.group}-txn", **common)
            await producer.start()
            try:
                async with producer.transaction():
                    await producer.send_and_wait(t.topic, PAYLOAD, partition=0)
            finally:
                await producer.stop()
    finally:
        await admin.close()


# -- confluent-kafka -----------------------------------------------------------------------


def _confluent(t: Traffic) -> None:
    ck = importlib.import_module("confluent_kafka")
    admin_module = importlib.import_module("confluent_kafka.admin")
    t.version = f"{ck.version()} (librdkafka {ck.libversion()[0]})"
    common: dict[str, Any] = {
        "bootstrap.servers": t.bootstrap,
        "socket.timeout.ms": DEFAULT_SOCKET_TIMEOUT_MS,
    }
    if t.request_timeout_ms is not None:
        common["socket.timeout.ms"] = max(10, t.request_timeout_ms)  # librdkafka's minimum
        common["api.version.request.timeout.ms"] = max(10, t.request_timeout_ms)
    admin = admin_module.AdminClient(common)
    with t.step("metadata"):
        if t.topic not in admin.list_topics(timeout=TIMEOUT_S).topics:
            admin.create_topics([admin_module.NewTopic(t.topic, 1, 1)])[t.topic].result(TIMEOUT_S)
            _wait_for(lambda: t.topic in admin.list_topics(timeout=TIMEOUT_S).topics)
    with t.step("produce"):
        producer = ck.Producer({**common, "compression.type": "gzip", "message.timeout.ms": 15000})
        failures: list[Any] = []
        producer.produce(t.topic, PAYLOAD, partition=0, on_delivery=lambda err, _: failures.append(err))
        producer.flush(TIMEOUT_S)
        if failures != [None]:
            raise RuntimeError(f"delivery: {failures or 'not reported'}")
    consumer = ck.Consumer({
        **common, "group.id": t.group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
    })
    try:
        with t.step("consume"):
            consumer.subscribe([t.topic])
            deadline = time.monotonic() + TIMEOUT_S
            while True:
                message = consumer.poll(1.0)
                if message is not None and message.error() is None and message.value() == PAYLOAD:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no record consumed (last: {message and message.error()})")
        with t.step("commit"):
            consumer.commit(asynchronous=False)
        with t.step("describe-group"):
            if not hasattr(admin, "describe_consumer_groups"):
                raise RuntimeError("no describe_consumer_groups in this release")
            admin.describe_consumer_groups([t.group])[t.group].result(TIMEOUT_S)
    finally:
        consumer.close()
    with t.step("delete-group"):
        admin.delete_consumer_groups([t.group])[t.group].result(TIMEOUT_S)
    with t.step("transaction"):
        producer = ck.Producer({**common, "transactional.id": f"{t.group}-txn"})
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
        producer.produce(t.topic, PAYLOAD, partition=0)
        producer.commit_transaction(TIMEOUT_S)


_SCENARIOS: dict[str, Callable[[Traffic], None]] = {
    "kafka-python": _kafka_python,
    "aiokafka": _aiokafka,
    "confluent-kafka": _confluent,
}


def run(
    library: str,
    bootstrap: str,
    topic: str = "traffic",
    stream: TextIO | None = None,
    request_timeout_s: float | None = None,
) -> dict[str, Any]:
    """Run ``library``'s scenario against ``bootstrap``; the report (never raises for a failed step).

    With ``stream``, every step is also written there as one JSON line when it
    starts and when it ends, and the report last.  ``request_timeout_s`` sets
    the clients' own request timeouts (see the module's docs); None keeps the defaults.
    """
    traffic = Traffic(library, bootstrap, topic, stream, request_timeout_s)
    try:
        _SCENARIOS[library](traffic)
    except _StepFailed:
        pass
    except Exception as exc:  # setup outside any step (an import, a constructor)
        traffic._end({"step": "setup", "ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]})
    report = traffic.report()
    traffic._emit({"report": report})
    return report


def read_report(output: str, library: str) -> dict[str, Any]:
    """The report of a run from its JSON lines, even when the process died mid-step."""
    steps: list[dict[str, Any]] = []
    running: str | None = None
    for line in output.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if "report" in event:
            return dict(event["report"])
        if "started" in event:
            running = str(event["started"])
        elif "step" in event:
            steps.append(event)
            running = None
    if running is not None:
        steps.append({"step": running, "ok": False, "error": "the client process died in this step"})
    elif not steps:  # not even its first step began: it is the setup that failed
        ended = "the client process ended before its first step"
        steps.append({"step": "setup", "ok": False, "error": ended})
    return {"library": library, "version": "unknown", "ok": False, "steps": steps}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkacompat.testing.client_traffic")
    parser.add_argument(
        "--request-timeout", type=float, metavar="SECONDS", help="the clients' own request timeout"
    )
    parser.add_argument("library", choices=LIBRARIES)
    parser.add_argument("bootstrap", metavar="HOST:PORT")
    parser.add_argument("topic", nargs="?", default="traffic")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage
        return 2 if exc.code else 0
    if args.request_timeout is not None and not 0 < args.request_timeout <= 3600:
        print("client_traffic: --request-timeout must be in (0, 3600] seconds", file=sys.stderr)
        return 2
    report = run(args.library, args.bootstrap, args.topic, sys.stdout, args.request_timeout)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
