"""The processes of one Apache Kafka cluster: what each is, its configuration, its command line.

A cluster is a list of ``Node``: ZooKeeper (zookeeper mode), KRaft
controllers (``kraft-split``), brokers, or combined broker-controllers (the
first node of ``kraft-combined``).  Each node writes its own properties file
in the cluster's temporary folder and runs as one JVM with a small heap and
quick-start flags; the log configuration (log4j 1 and 2 and slf4j-simple, all
three given, each release uses what it has) sends warnings to the process's
output, which the launcher keeps for error messages.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkacompat.testing.apache_kafka.jars import parse_release
from kafkacompat.testing.apache_kafka.security import jaas_file_text, jaas_inline, jaas_settings

__all__ = ["CONTROLLER_LISTENER", "Node", "jvm_command", "new_cluster_id", "write_logging"]

CONTROLLER_LISTENER = "CONTROLLER"

_LOG4J = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""

_LOG4J2 = """\
status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = STDERR
"""

# Settings every broker gets: one replica of everything (a test cluster may have one broker),
# few internal partitions (quick to create), a cleaner that fits the small heap.
_BROKER_DEFAULTS = (
    "num.partitions=1",
    "offsets.topic.replication.factor=1",
    "offsets.topic.num.partitions=4",
    "transaction.state.log.replication.factor=1",
    "transaction.state.log.min.isr=1",
    "transaction.state.log.num.partitions=4",
    "share.coordinator.state.topic.replication.factor=1",
    "share.coordinator.state.topic.min.isr=1",
    "group.initial.rebalance.delay.ms=0",
    "log.cleaner.dedupe.buffer.size=2097152",
)


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe base64 without padding (never starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def write_logging(root: Path) -> None:
    (root / "log4j.properties").write_text(_LOG4J)
    (root / "log4j2.properties").write_text(_LOG4J2)


def jvm_command(
    java: str, libs: Path, root: Path, main: str, *args: str, heap: str = "256m", options: Sequence[str] = ()
) -> list[str]:
    """One JVM running ``main``: small heap, serial GC, quick start, logs to its own stderr; ``options``
    are further JVM options."""
    return [
        java,
        f"-Xmx{heap}",
        "-Xms32m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-XX:-UsePerfData",
        "-Djava.awt.headless=true",
        "-Djava.net.preferIPv4Stack=true",
        # Old releases unmap index files through sun.nio.ch; without these Java 17 refuses them.
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        f"-Dlog4j.configuration=file:{root / 'log4j.properties'}",
        f"-Dlog4j2.configurationFile={root / 'log4j2.properties'}",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        f"-Dkafka.logs.dir={root / 'logs'}",
        "-Dzookeeper.admin.enableServer=false",
        *options,
        "-cp",
        str(libs / "*"),
        main,
        *args,
    ]


@dataclass
class Node:
    """One process of the cluster.  ``role``: "zookeeper", "controller", "broker" or "combined"."""

    role: str
    node_id: int
    port: int  # the client listener (ZooKeeper: its client port; controller: the controller listener)
    controller_port: int | None = None  # a combined node's controller listener
    release: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    sasl_port: int | None = None  # a SASL_PLAINTEXT listener beside PLAINTEXT, brokers only
    sasl_users: dict[str, str] = field(default_factory=dict)  # PLAIN's users and passwords
    scram: bool = False  # SCRAM-SHA-256 and -512 on the SASL listener (users live in the metadata)
    ssl_port: int | None = None  # an SSL listener beside PLAINTEXT, brokers only
    ssl_settings: tuple[str, ...] = ()  # its keystore (security.make_broker_tls)

    @property
    def name(self) -> str:
        return "zookeeper" if self.role == "zookeeper" else f"{self.role}-{self.node_id}"

    @property
    def serves_clients(self) -> bool:
        return self.role in ("broker", "combined")

    @property
    def is_controller(self) -> bool:
        return self.role in ("controller", "combined")

    def jaas_path(self, root: Path) -> Path:
        return root / f"{self.name}-jaas.conf"

    def jvm_options(self, root: Path) -> list[str]:
        """JVM options of this node's process: the JAAS file, for SASL on releases before 1.1."""
        if self.sasl_port is not None and not jaas_inline(parse_release(self.release)):
            return [f"-Djava.security.auth.login.config={self.jaas_path(root)}"]
        return []

    def config_path(self, root: Path) -> Path:
        return root / f"{self.name}.properties"

    def data_dir(self, root: Path) -> Path:
        return root / f"{self.name}-data"

    def write_config(self, root: Path, host: str, *, zookeeper: str | None, voters: str | None) -> Path:
        path = self.config_path(root)
        if self.role == "zookeeper":
            lines = [
                f"dataDir={self.data_dir(root)}",
                f"clientPort={self.port}",
                f"clientPortAddress={host}",
                "maxClientCnxns=0",
                "admin.enableServer=false",
            ]
        else:
            lines = [f"log.dirs={self.data_dir(root)}", *self._listeners(host, zookeeper, voters)]
            if self.serves_clients:
                lines += _BROKER_DEFAULTS
        if self.sasl_port is not None:
            inline = jaas_inline(parse_release(self.release))
            lines += jaas_settings("SASL_PLAINTEXT", self.sasl_users, self.scram, inline=inline)
            if not inline:
                self.jaas_path(root).write_text(jaas_file_text(self.sasl_users, self.scram))
        if self.ssl_port is not None:
            lines += self.ssl_settings
        lines += [f"{key}={value}" for key, value in self.extra.items()]
        path.write_text("\n".join(lines) + "\n")
        return path

    def _client_listeners(self, host: str) -> str:
        listeners = f"PLAINTEXT://{host}:{self.port}"
        if self.sasl_port is not None:
            listeners += f",SASL_PLAINTEXT://{host}:{self.sasl_port}"
        if self.ssl_port is not None:
            listeners += f",SSL://{host}:{self.ssl_port}"
        return listeners

    def _listeners(self, host: str, zookeeper: str | None, voters: str | None) -> list[str]:
        if zookeeper is not None:  # a ZooKeeper-mode broker
            return [
                f"broker.id={self.node_id}",
                f"listeners={self._client_listeners(host)}",
                f"advertised.listeners={self._client_listeners(host)}",
                f"zookeeper.connect={zookeeper}",
                "zookeeper.connection.timeout.ms=10000",
                "controlled.shutdown.enable=false",
            ]
        assert voters is not None
        lines = [
            f"node.id={self.node_id}",
            f"controller.quorum.voters={voters}",
            f"controller.listener.names={CONTROLLER_LISTENER}",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,"
            f"{CONTROLLER_LISTENER}:PLAINTEXT",
        ]
        if self.role == "controller":
            return [
                *lines,
                "process.roles=controller",
                f"listeners={CONTROLLER_LISTENER}://{host}:{self.port}",
            ]
        listeners = self._client_listeners(host)
        if self.role == "combined":
            listeners += f",{CONTROLLER_LISTENER}://{host}:{self.controller_port}"
        roles = "broker,controller" if self.role == "combined" else "broker"
        return [
            *lines,
            f"process.roles={roles}",
            f"listeners={listeners}",
            f"advertised.listeners={self._client_listeners(host)}",
            "inter.broker.listener.name=PLAINTEXT",
        ]
