"""What a docs-check block runs against, and how its commands run (see ``docs_check``).

``target(NAME)`` starts what a marker names (``emulated ...``, ``tansu``,
``kafka09``, ``noida``, ``librdkafka-mock``, the wrong peers of
``wrong_peers``, ``none``; ``free-port`` words add loopback addresses where
nothing listens) and yields its addresses.  ``Place`` maps the ports a block
shows to those addresses (and ``/tmp/NAME`` to the document's folders), both
ways; ``run_command`` runs one command, ``Background`` one that ends in ``&``.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SHOWN_PORT", "Background", "Place", "run_command", "target"]

ROOT = Path(__file__).resolve().parents[2]
# What stands for one of the target's addresses in a command: an address, or the port of --port.
PLACE = re.compile(r"127\.0\.0\.1:(?P<port>\d+)|(?<=--port )(?P<flag_port>\d+)\b")
# Where output names one of the target's ports: an address, a port in JSON or in a Python tuple, an
# emulated cluster's id.
SHOWN_PORT = re.compile(
    r'(?P<head>127\.0\.0\.1:|"port": ?|\'127\.0\.0\.1\', |emulated-[0-9.+]+-)(?P<port>\d+)\b'
)
TEMPORARY = re.compile(r"/tmp/(?P<name>[^/\s'\"]+)")
TIMEOUT = 120.0
STOP_TIMEOUT = 30.0  # a background command's wait for its exit after SIGINT


@contextmanager
def target(name: str) -> Iterator[list[str]]:
    """The addresses of what ``name`` describes (then its free ports), running while inside."""
    kind, *args = name.split()
    free = [f"127.0.0.1:{free_port()}" for arg in args if arg == "free-port"]
    args = [arg for arg in args if arg != "free-port"]
    with _running(kind, args) as addresses:
        yield [*addresses, *free]


def free_port() -> int:
    from kafkacompat.testing import free_port as kit_free_port

    return kit_free_port()


@contextmanager
def _running(kind: str, args: Sequence[str]) -> Iterator[list[str]]:
    if kind == "none":
        yield []
    elif kind == "emulated":
        with _emulated(args) as addresses:
            yield addresses
    elif kind == "tansu":
        from kafkacompat.testing import TansuBroker

        with TansuBroker() as tansu:
            yield [tansu.bootstrap]
    elif kind == "kafka09":
        from kafkacompat.testing import Kafka09Broker

        with Kafka09Broker() as kafka:
            yield [kafka.bootstrap]
    elif kind == "noida":
        from kafkacompat.testing import NoidaBroker

        with NoidaBroker() as noida:
            yield [noida.bootstrap]
    elif kind == "librdkafka-mock":
        from kafkacompat.testing import LibrdkafkaMockBroker

        with LibrdkafkaMockBroker() as mock:
            yield [mock.bootstrap]
    elif kind in WRONG_PEERS:
        with WRONG_PEERS[kind]() as address:
            yield [address if isinstance(address, str) else address[0]]
    else:
        raise ValueError(f"unknown docs-check target {kind!r}")


def _wrong_peers() -> dict[str, Callable[[], AbstractContextManager[str | tuple[str, Path]]]]:
    from tests.support import wrong_peers

    return {
        "http": wrong_peers.web_server, "silent": wrong_peers.silent_port, "text": wrong_peers.text_server,
        "tls": wrong_peers.tls_listener, "closes": wrong_peers.closing_port,
    }


WRONG_PEERS = _wrong_peers()
SASL_USERS = {"alice": "alice-secret"}  # the ``sasl`` word of an emulated target


@contextmanager
def _emulated(args: Sequence[str]) -> Iterator[list[str]]:
    """The words: ``RELEASE[/KIND]``, ``NAME=LEVEL``, ``epoch=N``, ``nodeN:...`` (one node) and ``sasl``."""
    from kafkacompat.testing import SaslConfig, ThreadedCluster
    from kafkacompat.testing.emulator.state import FeatureSnapshot

    sasl = SaslConfig(SASL_USERS) if "sasl" in args else None
    args = [arg for arg in args if arg != "sasl"]
    releases: list[str] = []
    finalized: dict[str, int] = {}
    epoch: int | None = None
    held: dict[int, dict[str, int]] = {}  # node id -> its epoch ("epoch") and levels
    for arg in args:
        setting, equals, value = arg.partition("=")
        if not equals:
            releases.append(arg)
            continue
        node, colon, name = setting.partition(":")
        if colon:
            if not node.startswith("node") or not node[4:].isdigit():
                raise ValueError(f"docs-check: {arg!r} is not nodeN:NAME=LEVEL")
            held.setdefault(int(node[4:]), {})[name] = int(value)
        elif setting == "epoch":
            epoch = int(value)
        else:
            finalized[setting] = int(value)
    with ThreadedCluster(
        releases or ["3.9"], cluster_id="docs-cluster", finalized_features=finalized or None,
        finalized_epoch=epoch, sasl=sasl,
    ) as cluster:
        for node_id, seen in held.items():
            levels = {name: level for name, level in seen.items() if name != "epoch"}
            cluster.broker(node_id).hold_features(FeatureSnapshot(seen["epoch"], levels))
        yield cluster.addresses


@dataclass
class Place:
    """Where a block runs: the target's addresses by the ports the block shows, and the document's folders.

    A port is given the target's next address the first time the block shows
    it; a ``/tmp/NAME`` folder the document's directory for NAME.
    """

    addresses: Sequence[str]
    folders: dict[str, Path]
    by_port: dict[str, str] = field(default_factory=dict)

    def _address(self, port: str) -> str | None:
        if port not in self.by_port and len(self.by_port) < len(self.addresses):
            self.by_port[port] = self.addresses[len(self.by_port)]
        return self.by_port.get(port)

    def _placed(self, found: re.Match[str]) -> str:
        address = self._address(found["port"] or found["flag_port"])
        if address is None:
            return found.group(0)
        return address if found["port"] else address.rpartition(":")[2]

    def runnable(self, argv: str) -> str:
        """``argv`` as it is run: the target's ports, and the document's folders for ``/tmp/NAME``."""
        placed = PLACE.sub(self._placed, argv)
        return TEMPORARY.sub(lambda found: str(self._folder(found["name"])), placed)

    def _folder(self, name: str) -> Path:
        if name not in self.folders:
            self.folders[name] = Path(tempfile.mkdtemp(prefix="kafkacompat-docs-"))
        return self.folders[name]

    def output(self, lines: Sequence[str]) -> list[str]:
        """What a command printed, in the doc's terms: its ports for the target's, its folder names."""
        ports = {address.rpartition(":")[2]: port for port, address in self.by_port.items()}

        def port(found: re.Match[str]) -> str:
            return found["head"] + ports.get(found["port"], found["port"])

        shown = [SHOWN_PORT.sub(port, line) for line in lines]
        for name, folder in self.folders.items():
            shown = [line.replace(str(folder), f"/tmp/{name}") for line in shown]
        return shown


def _environment(variables: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **(variables or {})}


def _argv(command: str, program: str = "kafkacompat") -> list[str]:
    """``kafkacompat COMMAND`` (or an example script's) as this interpreter runs it."""
    head = ["-m", "kafkacompat.cli"] if program == "kafkacompat" else [program]
    return [sys.executable, *head, *shlex.split(command, comments=True)]


def run_command(
    command: str, variables: dict[str, str] | None = None, program: str = "kafkacompat"
) -> tuple[list[str], int]:
    done = subprocess.run(
        _argv(command, program), cwd=ROOT, env=_environment(variables), capture_output=True, text=True,
        timeout=TIMEOUT, check=False,
    )
    return (done.stdout + done.stderr).splitlines(), done.returncode


class Background:
    """A command run as with ``&``: started, waited for until its first line, stopped with SIGINT."""

    def __init__(
        self, command: str, variables: dict[str, str] | None = None, program: str = "kafkacompat"
    ) -> None:
        self.process = subprocess.Popen(
            _argv(command, program), cwd=ROOT, env=_environment(variables), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.started = threading.Event()
        self.readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.stdout, True), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self.stderr, False), daemon=True),
        ]
        for reader in self.readers:
            reader.start()
        self.started.wait(TIMEOUT)

    def _read(self, stream: io.TextIOBase | None, into: list[str], first: bool) -> None:
        assert stream is not None
        for line in stream:
            into.append(line.rstrip("\n"))
            if first:
                self.started.set()
        self.started.set()  # it ended without a line: nothing to wait for

    def stop(self) -> tuple[list[str], int]:
        """SIGINT, as Ctrl-C; then (stdout then stderr, the exit status).  Killed if it outlives the wait."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        for reader in self.readers:
            reader.join(STOP_TIMEOUT)
        return [*self.stdout, *self.stderr], code
