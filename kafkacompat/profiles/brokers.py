"""The brokers client traffic is recorded against, each with ``kafkacompat record`` in front.

Theory.  A recording sees every connection a client opens only if the broker
sends the client to the recorder: its metadata must name the recorder's
address, not its own (``advertised.listeners``).  How each kind of broker is
made to do that:

- a real Apache Kafka (``ApacheKafka``, named ``RELEASE/MODE``, e.g.
  ``2.8.2/zookeeper``) advertises ``127.0.0.2`` with port 0, which Kafka
  replaces by the port it bound: the broker still listens on its own port of
  127.0.0.1 (where the launcher checks it) and names 127.0.0.2 at that same
  port, where the recorder listens.  In ZooKeeper mode the controller inside
  the broker reaches the broker through that address too, so a recorder
  forwards it while the broker starts (``_StartupRelay``); the broker's own
  connections (its controller's, its transaction coordinator's markers) are
  left out of every recording (``client_profiles``);
- the real Tansu advertises the recorder's port (``--advertised-listener-url``);
- the real Apache Kafka 0.9.0.1 (``ERA``) advertises another port of 127.0.0.1,
  forwarded by a recorder while it starts;
- an emulated release (``"3.9"``, ``"4.0/kraft-broker"``) names whatever
  port its node is given;
- noida-db and librdkafka's mock advertise their own port: the recorder sees
  the bootstrap connection only.

Each broker is started once for every client that runs against it, and
stopped with nothing left behind.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafkacompat.protocol.messages import ApiKey
from kafkacompat.testing.ports import LOOPBACK, free_port

__all__ = [
    "ERA",
    "INTER_BROKER_APIS",
    "MOCK",
    "NOIDA",
    "RECORDED_HOST",
    "TANSU",
    "RecordedBroker",
    "apache_line",
    "client_profiles",
    "is_apache",
    "recorded_broker",
    "start_recorder",
    "stop_recorder",
]

TANSU = "tansu 0.6.0"
ERA = "0.9.0.1"  # the real Apache Kafka without ApiVersions
NOIDA = "noida-db 0.2.3"
MOCK = "librdkafka-mock 2.0.2"
RECORDED_HOST = "127.0.0.2"  # where a recorder stands in for an Apache broker, at the broker's own port
# LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, WriteTxnMarkers: requests a broker
# (its ZooKeeper-mode controller, its transaction coordinator) sends brokers, never a client.
INTER_BROKER_APIS = frozenset(
    int(k)
    for k in (
        ApiKey.LEADER_AND_ISR,
        ApiKey.STOP_REPLICA,
        ApiKey.UPDATE_METADATA,
        ApiKey.CONTROLLED_SHUTDOWN,
        ApiKey.WRITE_TXN_MARKERS,
    )
)
# The client ids a broker's own connections give: "broker-1-txn-marker-sender", or the bare node
# id of a ZooKeeper-mode controller ("1").
_BROKER_CLIENT_ID = re.compile(r"broker-\d+-.*|\d+|AddPartitionsManager-client-\d+")
FIND_COORDINATOR = int(ApiKey.FIND_COORDINATOR)
_WARM_UP_S = 60.0


def is_apache(name: str) -> bool:
    """A real Apache Kafka cluster of the launcher: ``RELEASE/MODE``."""
    release, _, mode = name.partition("/")
    return mode in ("zookeeper", "kraft-combined", "kraft-split") and release.count(".") >= 2


def apache_line(name: str) -> str | None:
    """The release as the release table names it (``"2.8"``, ``"0.10.2"``); None for look-alike software."""
    if name in (TANSU, NOIDA, MOCK):
        return None
    parts = name.partition("/")[0].split(".")
    return ".".join(parts[:3] if parts[0] == "0" else parts[:2])  # 0.x lines have three numbers


class RecordedBroker:
    """A running broker whose metadata names the address ``record`` listens on during each run."""

    def __init__(self, name: str, upstream: str, port: int, host: str = LOOPBACK) -> None:
        self.name, self.upstream, self.port, self.host = name, upstream, port, host

    @property
    def bootstrap(self) -> str:
        """Where clients bootstrap from: the recorder's address."""
        return f"{self.host}:{self.port}"

    @property
    def apache_release(self) -> str | None:
        return apache_line(self.name)

    @contextmanager
    def recording(self, out: Path) -> Iterator[str]:
        """``record`` in front of the broker; yields the address clients bootstrap from."""
        recorder = start_recorder(self.bootstrap, self.upstream, out)
        try:
            yield self.bootstrap
        finally:
            stop_recorder(recorder)


def start_recorder(listen: str, upstream: str, out: Path) -> subprocess.Popen[str]:
    """``kafkacompat record`` listening on ``listen`` (HOST:PORT), writing ``out`` when stopped."""
    recorder = subprocess.Popen(
        [
            *(sys.executable, "-m", "kafkacompat.cli", "record"),
            *("--listen", listen, "--upstream", upstream, "--out", str(out)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert recorder.stdout is not None
    first = recorder.stdout.readline()
    if not first.startswith("recording: "):
        recorder.kill()
        raise RuntimeError(f"kafkacompat record did not start (exit {recorder.wait()}): {first!r}")
    return recorder


def stop_recorder(recorder: subprocess.Popen[str]) -> None:
    recorder.terminate()  # it writes its profiles on the way out
    try:
        recorder.wait(timeout=30)
    except subprocess.TimeoutExpired:
        recorder.kill()
        recorder.wait()


def client_profiles(profiles: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The recorded profiles of clients: a broker's own connections through the recorder are not."""

    def brokers_own(profile: Mapping[str, Any]) -> bool:
        ids = profile.get("recorded", {}).get("client_ids") or [profile["client"]]
        apis = {e["api_key"] for e in profile["api_versions"]}
        return apis <= INTER_BROKER_APIS or all(_BROKER_CLIENT_ID.fullmatch(str(i)) for i in ids)

    return [p for p in profiles if not brokers_own(p)]


@contextmanager
def recorded_broker(name: str) -> Iterator[RecordedBroker]:
    """The broker ``name`` (see the module's docs), started, advertising a recorder's address."""
    if is_apache(name):
        with _apache(name) as broker:
            yield broker
    elif name == TANSU:
        with _tansu() as broker:
            yield broker
    elif name == ERA:
        with _kafka09() as broker:
            yield broker
    elif name in (NOIDA, MOCK):
        with _own_port(name) as broker:
            yield broker
    else:
        with _emulated(name) as broker:
            yield broker


class _StartupRelay:
    """A recorder at the broker's advertised address while a ZooKeeper-mode cluster starts.

    The controller sends the broker its first metadata, and the leadership of
    the offsets topic made while warming up, through the address the broker
    advertises; without something there the broker never learns of them.
    The launcher picks the broker's port when it plans the cluster, so this
    waits for the plan (``ApacheKafka.nodes``), then listens.
    """

    def __init__(self, kafka: Any, scratch: Path) -> None:
        self.kafka, self.scratch = kafka, scratch
        self.recorder: subprocess.Popen[str] | None = None
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _StartupRelay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.recorder is not None:
            stop_recorder(self.recorder)

    def _run(self) -> None:
        while not self._stop.is_set():
            brokers = [node for node in self.kafka.nodes if node.serves_clients]
            if brokers:
                port = brokers[0].port
                try:
                    self.recorder = start_recorder(
                        f"{RECORDED_HOST}:{port}", f"{LOOPBACK}:{port}", self.scratch / "startup.jsonl"
                    )
                except RuntimeError as exc:
                    self.error = exc
                return
            time.sleep(0.05)


@contextmanager
def _apache(name: str) -> Iterator[RecordedBroker]:
    from kafkacompat.testing import ApacheKafka

    release, _, mode = name.partition("/")
    # Port 0: Kafka advertises the port it bound (the same port, on the recorder's address).
    kafka = ApacheKafka(
        release, mode, broker_config={"advertised.listeners": f"PLAINTEXT://{RECORDED_HOST}:0"}
    )
    with tempfile.TemporaryDirectory(prefix="kafkacompat-startup-") as scratch:
        relay = _StartupRelay(kafka, Path(scratch)) if mode == "zookeeper" else None
        try:
            if relay is not None:
                relay.__enter__()
            kafka.start()
            if relay is not None and relay.error is not None:
                raise relay.error
            _node_id, host, port = kafka.broker_endpoints[0]
            _warm_up(host, port)  # the controller leads the offsets topic through the relay
        except BaseException:
            kafka.stop()
            raise
        finally:
            if relay is not None:
                relay.__exit__()
    try:
        yield RecordedBroker(name, f"{host}:{port}", port, RECORDED_HOST)
    finally:
        kafka.stop()


def _warm_up(host: str, port: int) -> None:
    """Until the group coordinator answers (the offsets topic made and led), as a running cluster's is.

    Asked of the broker's own address, not the recorder's: no client's recording sees it.
    """
    from kafkacompat.blocking import open_blocking_connection
    from kafkacompat.errors import KafkaCompatError
    from kafkacompat.protocol.messages import FindCoordinatorRequest

    deadline = time.monotonic() + _WARM_UP_S
    while True:
        try:
            with open_blocking_connection(host, port, timeout=5.0) as connection:
                key = "kafkacompat-warm-up"  # v0-3 carry one ``key``, v4 on ``coordinator_keys``
                assert connection.capabilities is not None  # open_blocking_connection negotiated
                batched = connection.capabilities.pick_version(FIND_COORDINATOR) >= 4
                request = (
                    FindCoordinatorRequest(coordinator_keys=[key])
                    if batched
                    else FindCoordinatorRequest(key=key)
                )
                answer = connection.request(request)
            if answer.error_code == 0 and all(c.error_code == 0 for c in answer.coordinators or ()):
                return
        except (OSError, KafkaCompatError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"Apache Kafka at {host}:{port}: no group coordinator in {_WARM_UP_S:.0f} s")
        time.sleep(0.5)


@contextmanager
def _tansu() -> Iterator[RecordedBroker]:
    from kafkacompat.testing.tansu import TansuBroker

    port = free_port()

    class AdvertisingTansu(TansuBroker):
        @property
        def command(self) -> list[str]:
            argv = super().command
            argv[argv.index("--advertised-listener-url") + 1] = f"tcp://{LOOPBACK}:{port}"
            return argv

    with AdvertisingTansu() as tansu:
        yield RecordedBroker(TANSU, tansu.bootstrap, port)


@contextmanager
def _kafka09() -> Iterator[RecordedBroker]:
    from kafkacompat.testing.kafka09 import Kafka09Broker

    port, broker_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as scratch:
        # Its controller reaches the broker through the advertised port while it starts.
        startup = start_recorder(f"{LOOPBACK}:{port}", f"{LOOPBACK}:{broker_port}", Path(scratch) / "s.jsonl")
        try:
            broker = Kafka09Broker(port=broker_port, advertised_port=port).__enter__()
        finally:
            stop_recorder(startup)
    try:
        yield RecordedBroker(ERA, broker.bootstrap, port)
    finally:
        broker.stop()


@contextmanager
def _own_port(name: str) -> Iterator[RecordedBroker]:
    """noida-db or librdkafka's mock: they advertise their own port; the recorder sees the bootstrap."""
    if name == NOIDA:
        from kafkacompat.testing.noida import NoidaBroker as Software
    else:
        from kafkacompat.testing.librdkafka_mock import LibrdkafkaMockBroker as Software  # type: ignore[assignment]
    with Software() as running:
        if name == MOCK:
            _create_topic_on_the_mock(running.bootstrap)
        yield RecordedBroker(name, running.bootstrap, free_port())


def _create_topic_on_the_mock(bootstrap: str) -> None:
    """The mock has no CreateTopics; it makes a topic when one is produced to, as a fleet's topics exist."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 20000})
    producer.produce("traffic", b"kafkacompat traffic", partition=0)
    if producer.flush(30) != 0:
        raise RuntimeError(f"could not create the topic on the librdkafka mock at {bootstrap}")


@contextmanager
def _emulated(name: str) -> Iterator[RecordedBroker]:
    from kafkacompat.testing import ThreadedCluster

    port = free_port()
    cluster = ThreadedCluster(name, brokers=1, topics={"traffic": 1}).start()
    try:
        upstream = cluster.bootstrap  # before the broker advertises the recorder's port instead
        cluster.brokers[0].node.port = port
        yield RecordedBroker(name, upstream, port)
    finally:
        cluster.close()
