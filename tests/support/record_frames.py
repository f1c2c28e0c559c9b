"""Record the frames real clients and real brokers exchange, as held-out test data for the codec.

``python -m tests.support.record_frames [OUTPUT]`` starts Tansu and the
librdkafka mock cluster on 127.0.0.1, puts a small recording TCP proxy in
front of each, runs confluent-kafka, kafka-python and aiokafka through it
(produce, consume in a group, a few admin calls), and writes every frame seen,
requests and responses with their api key and version, to OUTPUT (default
``tests/data/held_out_frames.json``).  No frame is written by kafkacompat: the
codec only reads the size prefix and the request header's first 8 bytes here,
to pair each response with its request.  tests/unit/protocol/test_held_out_frames.py
decodes and re-encodes them.

Tansu is told to advertise the proxy, so every connection goes through it; the
librdkafka mock advertises its own address, so only the bootstrap connections
of the clients are recorded there.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkacompat.testing.ports import free_port
from kafkacompat.testing.tansu import TansuBroker
from tests.brokers.librdkafka_mock import LibrdkafkaMockCluster

OUTPUT = Path(__file__).resolve().parents[1] / "data" / "held_out_frames.json"
MAX_FRAME = 64 * 1024  # larger frames (big fetches) are left out of the data set
TOPIC_PARTITIONS = 1


@dataclass
class _Connection:
    client: str
    to_broker: bytearray = field(default_factory=bytearray)
    to_client: bytearray = field(default_factory=bytearray)


class RecordingProxy:
    """Forwards 127.0.0.1:``port`` to ``target``, keeping every byte of every connection."""

    def __init__(self, target: tuple[str, int], port: int | None = None) -> None:
        self.target = target
        self.port = port or free_port()
        self.client = "?"  # the client running now, stamped on each new connection
        self.connections: list[_Connection] = []
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            record = _Connection(self.client)
            self.connections.append(record)
            for source, sink, buffer in (
                (client, upstream, record.to_broker),
                (upstream, client, record.to_client),
            ):
                threading.Thread(target=self._pump, args=(source, sink, buffer), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, buffer: bytearray) -> None:
        try:
            while chunk := source.recv(65536):
                buffer += chunk
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._stop = True
        self._listener.close()


def _frames(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0 or pos + 4 + size > len(data):
            break  # the connection was cut mid-frame
        out.append(bytes(data[pos + 4 : pos + 4 + size]))
        pos += 4 + size
    return out


def frames_of(proxy: RecordingProxy, peer: str) -> list[dict[str, Any]]:
    rows = []
    for conn in proxy.connections:
        sent: dict[int, tuple[int, int]] = {}
        for frame in _frames(bytes(conn.to_broker)):
            api_key, version, correlation_id = struct.unpack_from(">hhi", frame, 0)
            sent[correlation_id] = (api_key, version)
            rows.append(_row(peer, conn.client, "request", api_key, version, frame))
        for frame in _frames(bytes(conn.to_client)):
            (correlation_id,) = struct.unpack_from(">i", frame, 0)
            if correlation_id in sent:
                rows.append(_row(peer, conn.client, "response", *sent[correlation_id], frame))
    return rows


def _row(peer: str, client: str, direction: str, api_key: int, version: int, frame: bytes) -> dict[str, Any]:
    return {
        "peer": peer,
        "client": client,
        "direction": direction,
        "api_key": api_key,
        "version": version,
        "hex": frame.hex(),
    }


# ---- the clients -----------------------------------------------------------------------


def confluent(bootstrap: str, topic: str) -> None:
    import confluent_kafka
    from confluent_kafka.admin import AdminClient

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for n in range(3):
        producer.produce(topic, f"confluent-{n}".encode(), key=b"k")
    producer.flush(15)
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-ck", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    deadline, got = time.monotonic() + 15, 0
    while got < 3 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got += 1
    if got:
        consumer.commit(asynchronous=False)
    consumer.close()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.list_topics(timeout=10)
    admin.describe_cluster().result(timeout=10)


def kafka_python(bootstrap: str, topic: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for n in range(3):
        producer.send(topic, f"kafka-python-{n}".encode())
    producer.flush(15)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"{topic}-kp",
        auto_offset_reset="earliest",
        consumer_timeout_ms=8000,
    )
    for n, _ in enumerate(consumer):
        if n >= 2:
            break
    consumer.commit()
    consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.describe_cluster()
    admin.list_topics()
    admin.close()


def aiokafka_client(bootstrap: str, topic: str) -> None:
    async def run() -> None:
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for n in range(3):
                await producer.send_and_wait(topic, f"aiokafka-{n}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=f"{topic}-ak", auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            await asyncio.wait_for(consumer.getmany(timeout_ms=5000), 15)
            await consumer.commit()
        finally:
            await consumer.stop()

    asyncio.run(run())


CLIENTS: dict[str, Callable[[str, str], None]] = {
    "confluent-kafka": confluent,
    "kafka-python": kafka_python,
    "aiokafka": aiokafka_client,
}


def _client_label(name: str) -> str:
    from importlib.metadata import version

    return f"{name} {version(name)}"


def _run_all(proxy: RecordingProxy, peer: str) -> None:
    for name, run in CLIENTS.items():
        proxy.client = _client_label(name)
        topic = f"held-out-{name}"
        try:
            run(f"127.0.0.1:{proxy.port}", topic)
            print(f"{peer} / {name}: done", file=sys.stderr)
        except Exception as exc:  # a client that fails still leaves its frames
            print(f"{peer} / {name}: {type(exc).__name__}: {exc}", file=sys.stderr)


class _TansuBehindProxy(TansuBroker):
    """Tansu advertising the proxy's address, so that clients come back through it."""

    def __init__(self, advertised_port: int) -> None:
        super().__init__()
        self.advertised_port = advertised_port

    @property
    def command(self) -> list[str]:
        command = super().command
        index = command.index("--advertised-listener-url")
        command[index + 1] = f"tcp://127.0.0.1:{self.advertised_port}"
        return command


def record() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    proxy_port = free_port()
    with _TansuBehindProxy(proxy_port) as tansu:
        proxy = RecordingProxy((tansu.host, tansu.port), proxy_port)
        _run_all(proxy, "tansu 0.6.0")
        time.sleep(0.5)
        proxy.close()
        rows += frames_of(proxy, "tansu 0.6.0")
    import confluent_kafka

    peer = f"librdkafka mock {confluent_kafka.libversion()[0]}"
    with LibrdkafkaMockCluster() as mock:
        proxy = RecordingProxy((mock.host, mock.port))
        _run_all(proxy, peer)
        time.sleep(0.5)
        proxy.close()
        rows += frames_of(proxy, peer)
    unique: dict[tuple[str, ...], dict[str, Any]] = {}
    for row in rows:
        if len(row["hex"]) <= 2 * MAX_FRAME:
            key = (row["peer"], row["direction"], str(row["api_key"]), str(row["version"]), row["hex"])
            unique.setdefault(key, row)
    return sorted(
        unique.values(), key=lambda r: (r["peer"], r["client"], r["api_key"], r["version"], r["direction"])
    )


def main(argv: list[str]) -> int:
    output = Path(argv[0]) if argv else OUTPUT
    rows = record()
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({"frames": rows}, indent=0) + "\n", encoding="utf-8")
    print(f"{len(rows)} frames written to {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
