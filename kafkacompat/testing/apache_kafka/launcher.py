"""``ApacheKafka``: a real Apache Kafka cluster of any release from Maven Central, on 127.0.0.1.

Entering the context manager fetches the release once (``jars.release_home``),
picks a Java that runs it (``jars.java_for``), writes each node's
configuration into a temporary folder, formats the KRaft log directories
(``kafka.tools.StorageTool format`` with a fresh cluster id; optionally an
older ``release_version`` and explicit feature levels), starts ZooKeeper or
the controllers, then the brokers, and waits, bounded by
``startup_timeout``, until every controller answers ApiVersions and every
broker answers Metadata naming all the brokers.  Leaving stops the brokers,
then the controllers and ZooKeeper (terminate, then kill), and removes the
folder: no process and no file is left.  ``startup_seconds`` says how long
the start took (after the fetch).

Modes: ``"zookeeper"`` (releases before 4.0; ZooKeeper runs from the
ZooKeeper jar of the release's own dependencies), ``"kraft-combined"`` (2.8
and later; the first node is broker and controller, further brokers are
broker-only) and ``"kraft-split"`` (2.8 and later; ``controllers`` separate
controller nodes form the quorum).

``sasl_plain_users={"alice": "secret"}`` gives every broker a second,
SASL_PLAINTEXT listener (mechanism PLAIN, those users): ``sasl_endpoints``,
``sasl_bootstrap``.  ``sasl_scram_users`` enables SCRAM-SHA-256 and
SCRAM-SHA-512 on that listener and creates those users the way the release
allows (``security``): ZooKeeper mode from 0.10.2, KRaft from 3.5.
``ssl=True`` gives every broker an SSL listener whose certificate (for
127.0.0.1 and localhost) is signed by a CA made for this cluster:
``ssl_endpoints``, ``ssl_bootstrap``, and ``ssl_ca_file`` for clients to trust.

For rolling upgrades, ``stop_node`` and ``start_node`` stop one node and start
it again, on the same ports and data, optionally running another release.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from kafkacompat.errors import BrokerStartError, KafkaCompatError
from kafkacompat.testing.apache_kafka.jars import (
    artifact_of,
    java_feature,
    java_for,
    parse_release,
    release_home,
)
from kafkacompat.testing.apache_kafka.limits import check_cluster
from kafkacompat.testing.apache_kafka.nodes import Node, jvm_command, new_cluster_id, write_logging
from kafkacompat.testing.apache_kafka.raw_probe import metadata
from kafkacompat.testing.apache_kafka.security import (
    BrokerTls,
    check_scram_release,
    check_users,
    format_scram_arguments,
    make_broker_tls,
    scram_user_command,
)
from kafkacompat.testing.ports import LOOPBACK, free_port, probe_api_versions

__all__ = ["MODES", "ApacheKafka", "modes_of"]

MODES = ("zookeeper", "kraft-combined", "kraft-split")
_FIRST_BROKER_ID = 1
_FIRST_CONTROLLER_ID = 100
_OUTPUT_SHOWN = 3000  # characters of a node's output in an error message
_FORMAT_TIMEOUT = 120.0


def modes_of(release: str) -> tuple[str, ...]:
    """The modes ``release`` can run in: ZooKeeper before 4.0, KRaft from 2.8."""
    version = parse_release(release)
    modes = []
    if version < (4,):
        modes.append("zookeeper")
    if version >= (2, 8):
        modes += ["kraft-combined", "kraft-split"]
    return tuple(modes)


def _default_mode(release: str) -> str:
    return "kraft-combined" if parse_release(release) >= (3, 3) else "zookeeper"


class ApacheKafka:
    """A cluster of one Apache Kafka release on 127.0.0.1 (see the module's docstring)."""

    def __init__(
        self,
        release: str,
        mode: str | None = None,
        *,
        brokers: int = 1,
        controllers: int = 1,
        release_version: str | None = None,
        features: Mapping[str, int] | None = None,
        broker_config: Mapping[str, str] | None = None,
        sasl_plain_users: Mapping[str, str] | None = None,
        sasl_scram_users: Mapping[str, str] | None = None,
        ssl: bool = False,
        cache_dir: Path | None = None,
        java: str | None = None,
        heap: str = "256m",
        startup_timeout: float = 180.0,
        stop_timeout: float = 20.0,
    ) -> None:
        self.release = release
        self.mode = mode or _default_mode(release)
        check_cluster(
            release, self.mode, modes_of(release), brokers, controllers, bool(release_version or features)
        )
        self.host = LOOPBACK
        self.brokers = brokers
        self.controllers = controllers
        self.release_version = release_version
        self.features = dict(features or {})
        self.broker_config = dict(broker_config or {})
        self.sasl_plain_users = check_users("PLAIN", sasl_plain_users or {})  # user -> password
        self.sasl_scram_users = check_users("SCRAM", sasl_scram_users or {})  # user -> password
        if self.sasl_scram_users:
            check_scram_release(parse_release(release), release, kraft=self.mode != "zookeeper")
        self.ssl = ssl
        self._tls: BrokerTls | None = None
        self.cache_dir = cache_dir
        self.java = java
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.cluster_id: str = ""
        self.artifact: str = ""  # the Maven coordinate the release came from
        self.startup_seconds: float | None = None
        self.java_feature: int | None = None  # the Java feature release the nodes run on (11, 17, ...)
        self.nodes: list[Node] = []
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: dict[str, IO[bytes]] = {}

    # -- what a test reads ---------------------------------------------------------------

    @property
    def broker_endpoints(self) -> list[tuple[int, str, int]]:
        return [(node.node_id, self.host, node.port) for node in self.nodes if node.serves_clients]

    @property
    def controller_endpoints(self) -> list[tuple[int, str, int]]:
        found = []
        for node in self.nodes:
            if node.role == "controller":
                found.append((node.node_id, self.host, node.port))
            elif node.role == "combined" and node.controller_port is not None:
                found.append((node.node_id, self.host, node.controller_port))
        return found

    @property
    def sasl_endpoints(self) -> list[tuple[int, str, int]]:
        """Each broker's SASL_PLAINTEXT listener, when SASL users (PLAIN or SCRAM) were given."""
        return [(n.node_id, self.host, n.sasl_port) for n in self.nodes if n.sasl_port is not None]

    @property
    def ssl_endpoints(self) -> list[tuple[int, str, int]]:
        """Each broker's SSL listener, when ``ssl=True``."""
        return [(n.node_id, self.host, n.ssl_port) for n in self.nodes if n.ssl_port is not None]

    @property
    def ssl_bootstrap(self) -> str | None:
        endpoints = self.ssl_endpoints
        return f"{endpoints[0][1]}:{endpoints[0][2]}" if endpoints else None

    @property
    def ssl_ca_file(self) -> Path | None:
        """The CA (PEM) that signed the SSL listeners' certificate, while the cluster runs."""
        return None if self._tls is None else self._tls.ca_file

    @property
    def sasl_bootstrap(self) -> str | None:
        endpoints = self.sasl_endpoints
        return f"{endpoints[0][1]}:{endpoints[0][2]}" if endpoints else None

    @property
    def bootstrap(self) -> str:
        _node_id, host, port = self.broker_endpoints[0]
        return f"{host}:{port}"

    @property
    def bootstrap_controller(self) -> str | None:
        endpoints = self.controller_endpoints
        return f"{endpoints[0][1]}:{endpoints[0][2]}" if endpoints else None

    @property
    def pids(self) -> dict[str, int]:
        """The process id of every node started and not stopped, by node name."""
        return {name: proc.pid for name, proc in self._procs.items()}

    @property
    def workdir(self) -> Path | None:
        """The temporary folder of the configurations and data (None when stopped)."""
        return None if self._dir is None else Path(self._dir.name)

    @property
    def running(self) -> bool:
        return any(proc.poll() is None for proc in self._procs.values())

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> Self:
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
        if self._dir is not None:
            raise RuntimeError("this ApacheKafka is already started")
        home = release_home(self.release, self.cache_dir)
        self.artifact = artifact_of(home)
        java = self.java or java_for(home, self.release, self.cache_dir)
        self.java_feature = java_feature(Path(java))
        began = time.monotonic()
        self._dir = tempfile.TemporaryDirectory(prefix="kafkacompat-apache-kafka-")
        root = Path(self._dir.name)
        try:
            write_logging(root)
            if self.ssl:
                self._tls = make_broker_tls(root, parse_release(self.release))
            self.nodes = self._plan()
            if self.mode == "zookeeper":
                self._start_zookeeper(java, home, root)
                for name, password in sorted(self.sasl_scram_users.items()):
                    zookeeper = f"{self.host}:{self.nodes[0].port}"
                    self._run_tool(
                        java,
                        home,
                        root,
                        "kafka.admin.ConfigCommand",
                        f"creating SCRAM user {name}",
                        scram_user_command(zookeeper, name, password),
                    )
            else:
                self.cluster_id = new_cluster_id()
                # The nodes format side by side: each is a short JVM run, mostly start-up.
                with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
                    for done in [pool.submit(self._format, java, home, root, node) for node in self.nodes]:
                        done.result()
            for node in self.nodes:
                if node.role != "zookeeper":
                    self._spawn(node, java, home, root, "kafka.Kafka", str(self._write(node, root)))
            self._wait_cluster()
            self.startup_seconds = time.monotonic() - began
        except BaseException:
            self.stop()
            raise

    def _plan(self) -> list[Node]:
        nodes: list[Node] = []
        broker_ids = range(_FIRST_BROKER_ID, _FIRST_BROKER_ID + self.brokers)
        if self.mode == "zookeeper":
            nodes.append(Node("zookeeper", 0, free_port(), release=self.release))
        elif self.mode == "kraft-split":
            for node_id in range(_FIRST_CONTROLLER_ID, _FIRST_CONTROLLER_ID + self.controllers):
                nodes.append(Node("controller", node_id, free_port(), release=self.release))
        for index, node_id in enumerate(broker_ids):
            combined = self.mode == "kraft-combined" and index == 0
            nodes.append(
                Node(
                    "combined" if combined else "broker",
                    node_id,
                    free_port(),
                    controller_port=free_port() if combined else None,
                    release=self.release,
                    extra=dict(self.broker_config),
                    sasl_port=free_port() if self.sasl_plain_users or self.sasl_scram_users else None,
                    sasl_users=dict(self.sasl_plain_users),
                    scram=bool(self.sasl_scram_users),
                    ssl_port=free_port() if self._tls is not None else None,
                    ssl_settings=() if self._tls is None else self._tls.settings,
                )
            )
        return nodes

    def _connection_strings(self) -> tuple[str | None, str | None]:
        """(zookeeper.connect, controller.quorum.voters) for this cluster's nodes."""
        if self.mode == "zookeeper":
            return f"{self.host}:{self.nodes[0].port}", None
        voters = ",".join(f"{node_id}@{host}:{port}" for node_id, host, port in self.controller_endpoints)
        return None, voters

    def _write(self, node: Node, root: Path) -> Path:
        zookeeper, voters = self._connection_strings()
        return node.write_config(root, self.host, zookeeper=zookeeper, voters=voters)

    def _start_zookeeper(self, java: str, home: Path, root: Path) -> None:
        node = self.nodes[0]
        config = self._write(node, root)
        self._spawn(node, java, home, root, "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(config))

        def ready() -> bool:  # "srvr" is the four-letter word every ZooKeeper answers by default
            with socket.create_connection((self.host, node.port), timeout=1.0) as sock:
                sock.sendall(b"srvr")
                return sock.recv(64).startswith(b"Zookeeper version")

        self._wait(node, ready, time.monotonic() + self.startup_timeout)

    def _format(self, java: str, home: Path, root: Path, node: Node) -> None:
        args = ["format", "-t", self.cluster_id, "-c", str(self._write(node, root))]
        if self.release_version is not None:
            args += ["--release-version", self.release_version]
        for name, level in self.features.items():
            args += ["--feature", f"{name}={level}"]
        args += format_scram_arguments(self.sasl_scram_users)
        self._run_tool(java, home, root, "kafka.tools.StorageTool", f"formatting {node.name}", args)

    def _run_tool(self, java: str, home: Path, root: Path, main: str, what: str, args: list[str]) -> None:
        """One short JVM run of a Kafka tool (format, SCRAM users); a failure names ``what``."""
        command = jvm_command(java, home / "libs", root, main, *args, heap=self.heap)
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                timeout=_FORMAT_TIMEOUT,
                check=False,
                stdin=subprocess.DEVNULL,
                cwd=root,
            )
        except subprocess.TimeoutExpired:
            raise BrokerStartError(
                f"{what} of Apache Kafka {self.release} took over {_FORMAT_TIMEOUT:.0f}s"
            ) from None
        if done.returncode != 0:
            output = (done.stdout + done.stderr).decode(errors="replace")[-_OUTPUT_SHOWN:]
            raise BrokerStartError(
                f"{what} of Apache Kafka {self.release} ({self.artifact}) failed "
                f"with {done.returncode}:\n{output}"
            )

    def _spawn(self, node: Node, java: str, home: Path, root: Path, main: str, *args: str) -> None:
        # The log must outlive this method (closed in stop()), hence no `with`.
        log = self._logs[node.name] = tempfile.TemporaryFile()  # noqa: SIM115
        options = node.jvm_options(root)
        command = jvm_command(java, home / "libs", root, main, *args, heap=self.heap, options=options)
        try:
            self._procs[node.name] = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=root
            )
        except OSError as exc:
            raise BrokerStartError(f"cannot run {java} for Apache Kafka {self.release}: {exc}") from exc

    def _wait_cluster(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        for node in self.nodes:
            if node.is_controller:
                port = node.port if node.role == "controller" else node.controller_port
                assert port is not None
                self._wait(node, self._api_versions_ready(port), deadline)
        broker_ports = {port for _, _, port in self.broker_endpoints}
        for node in self.nodes:
            if node.serves_clients:
                self._wait(node, self._metadata_ready(node.port, broker_ports), deadline)

    def _api_versions_ready(self, port: int) -> Callable[[], bool]:
        correlation = iter(range(1, 2**31))

        def ready() -> bool:
            probe_api_versions(self.host, port, next(correlation), timeout=2.0)
            return True

        return ready

    def _metadata_ready(self, port: int, broker_ports: set[int]) -> Callable[[], bool]:
        correlation = iter(range(1, 2**31))

        def ready() -> bool:  # Metadata names every broker of the cluster once they registered
            answer = probe_api_versions(self.host, port, next(correlation), timeout=2.0)
            ranges = {api.api_key: (api.min_version, api.max_version) for api in answer.api_keys}
            low, high = ranges.get(3, (0, 0))
            version = max(low, min(high, 9))
            response = metadata(self.host, port, version, next(correlation), timeout=2.0)
            if response.cluster_id and not self.cluster_id:
                self.cluster_id = response.cluster_id
            return {broker.port for broker in response.brokers} >= broker_ports

        return ready

    def _wait(self, node: Node, ready: Callable[[], bool], deadline: float) -> None:
        last: object = None
        while time.monotonic() < deadline:
            proc = self._procs[node.name]
            if proc.poll() is not None:
                raise BrokerStartError(
                    f"{node.name} of Apache Kafka {self.release} ({self.artifact}, {self.mode}) exited with "
                    f"{proc.returncode} before serving.\n{self.output(node.name)}"
                )
            try:
                if ready():
                    return
            except (OSError, KafkaCompatError) as exc:  # not listening or not ready yet
                last = exc
            time.sleep(0.25)
        raise BrokerStartError(
            f"{node.name} of Apache Kafka {self.release} ({self.artifact}, {self.mode}) did not serve on "
            f"{self.host}:{node.port} within {self.startup_timeout:.0f}s (last error: {last!r}).\n"
            f"{self.output(node.name)}"
        )

    def output(self, name: str | None = None) -> str:
        """What the nodes (or the one named) wrote so far, for error messages."""
        parts = []
        for label, log in self._logs.items():
            if (name is None or label == name) and not log.closed:
                log.seek(0)
                parts.append(f"--- {label} ---\n{log.read().decode(errors='replace')[-_OUTPUT_SHOWN:]}")
        return "\n".join(parts)

    # -- one node at a time (rolling upgrades) ----------------------------------------------

    def _node(self, node_id: int, role: str | None = None) -> Node:
        for node in self.nodes:
            if node.node_id == node_id and node.role != "zookeeper" and (role is None or node.role == role):
                return node
        raise KeyError(f"no node {node_id} in this cluster")

    def stop_node(self, node_id: int) -> None:
        """Stop one broker or controller (terminate, then kill); its data stays for ``start_node``."""
        self._stop_process(self._node(node_id).name)

    def start_node(self, node_id: int, release: str | None = None) -> None:
        """Start a stopped node again on its ports and data, running ``release`` (default: its own)."""
        if self._dir is None:
            raise RuntimeError("this ApacheKafka is not started")
        node = self._node(node_id)
        if node.name in self._procs:
            raise RuntimeError(f"{node.name} is running; stop it first")
        node.release = release or node.release
        home = release_home(node.release, self.cache_dir)
        root = Path(self._dir.name)
        self._spawn(
            node,
            self.java or java_for(home, node.release, self.cache_dir),
            home,
            root,
            "kafka.Kafka",
            str(self._write(node, root)),
        )
        deadline = time.monotonic() + self.startup_timeout
        if node.is_controller:
            port = node.port if node.role == "controller" else node.controller_port
            assert port is not None
            self._wait(node, self._api_versions_ready(port), deadline)
        if node.serves_clients:
            self._wait(node, self._metadata_ready(node.port, {node.port}), deadline)

    # -- stopping --------------------------------------------------------------------------

    def _stop_process(self, name: str) -> None:
        proc = self._procs.pop(name, None)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=self.stop_timeout)
        log = self._logs.pop(name, None)
        if log is not None:
            log.close()

    def stop(self) -> None:
        # Brokers first (all at once), then controllers and ZooKeeper: a broker would otherwise
        # spend its stop timeout looking for them.
        for roles in (("broker",), ("combined", "controller", "zookeeper")):
            names = [node.name for node in self.nodes if node.role in roles and node.name in self._procs]
            for name in names:
                proc = self._procs[name]
                if proc.poll() is None:
                    proc.terminate()
            for name in names:
                self._stop_process(name)
        for name in list(self._procs):
            self._stop_process(name)
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
        self._tls = None
