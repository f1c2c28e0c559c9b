"""What a docs-check block runs against, and how its commands run (see ``docs_check``).

``target(NAME)`` starts what a marker names (``emulated ...``, ``tansu``,
``kafka09``, ``noida``, ``librdkafka-mock``, the wrong peers of
``wrong_peers``, ``none``; ``free-port`` words add loopback addresses where
nothing listens, on consecutive ports, as ``emulate --port`` takes them) and
yields its addresses.  ``python_path(NAME)`` installs the ``python-client:``
releases a marker names.  ``Place`` maps the ports a block shows to those
addresses (and ``/tmp/NAME`` to the document's folders), both ways;
``run_command`` runs one command line (a pipeline through ``jq`` too),
``Background`` one that ends in ``&``.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

__all__ = ["SHOWN_PORT", "SYSTEM_TOOLS", "Background", "Place", "python_path", "run_command", "target"]

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
# The programs a command may pipe into, besides kafkacompat and python: Debian packages that
# `make system-tools` installs (make test depends on it).
SYSTEM_TOOLS = ("jq",)
PYTHON_CLIENT = "python-client:"  # python-client:LIBRARY@RELEASE, a word of any target
ADVERTISE = "advertise-free-port"  # a word of an emulated target


@contextmanager
def target(name: str) -> Iterator[list[str]]:
    """The addresses of what ``name`` describes (then its free ports), running while inside.

    ``advertise-free-port`` (one emulated broker): the broker advertises the
    first free port's address instead of its own, so a recorder listening
    there (``record --listen``) sees every connection a client makes after
    bootstrap, as when ``advertised.listeners`` names a proxy.
    """
    kind, *args = name.split()
    free = [f"127.0.0.1:{port}" for port in free_ports(args.count("free-port"))]
    advertise = ADVERTISE in args
    args = [arg for arg in args if arg not in ("free-port", ADVERTISE) and not arg.startswith(PYTHON_CLIENT)]
    if advertise and (kind != "emulated" or not free):
        raise ValueError(f"docs-check: {ADVERTISE} needs an emulated target and a free-port")
    with _running(kind, args, free[0] if advertise else None) as addresses:
        yield [*addresses, *free]


def free_ports(count: int) -> list[int]:
    """``count`` consecutive TCP ports on 127.0.0.1 that were free a moment ago (``emulate --port P``
    gives its next brokers P+1, P+2, ...): the OS picks the first, the next ones are tried."""
    if not count:
        return []
    for _ in range(100):
        with ExitStack() as held:  # every port held until all are found, then let go together
            first = held.enter_context(socket.create_server(("127.0.0.1", 0))).getsockname()[1]
            if first + count - 1 > 65535:
                continue
            try:
                for port in range(first + 1, first + count):
                    held.enter_context(socket.create_server(("127.0.0.1", port)))
            except OSError:  # taken: another first port
                continue
            return list(range(first, first + count))
    raise RuntimeError(f"docs-check: no {count} consecutive free ports on 127.0.0.1")


def python_path(name: str) -> list[str]:
    """The directories of the ``python-client:LIBRARY@RELEASE`` releases ``name`` names, installed
    into the cache by ``kafkacompat.profiles.installs`` as ``make profiles`` installs them: they
    come first on the path of the block's ``python`` commands."""
    from kafkacompat.profiles.installs import CLIENTS, install
    from kafkacompat.profiles.measure import DEFAULT_CACHE

    directories = []
    for word in name.split():
        if not word.startswith(PYTHON_CLIENT):
            continue
        library, _, release = word.removeprefix(PYTHON_CLIENT).partition("@")
        found = [c for c in CLIENTS if (c.language, c.library, c.release) == ("python", library, release)]
        if not found:
            raise ValueError(f"docs-check: {word}: not a Python client release of profiles/installs.py")
        directories.append(str(install(found[0], DEFAULT_CACHE)))
    return directories


@contextmanager
def _running(kind: str, args: Sequence[str], advertised: str | None = None) -> Iterator[list[str]]:
    if kind == "none":
        yield []
    elif kind == "emulated":
        with _emulated(args, advertised) as addresses:
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
def _emulated(args: Sequence[str], advertised: str | None = None) -> Iterator[list[str]]:
    """The words: ``RELEASE[/KIND]``, ``NAME=LEVEL``, ``epoch=N``, ``nodeN:...`` (one node) and ``sasl``;
    ``advertised``: the address its one broker advertises instead of its own."""
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
        addresses = cluster.addresses  # where the brokers listen, whatever they advertise
        if advertised is not None:
            (broker,) = cluster.brokers
            broker.node.port = int(advertised.rpartition(":")[2])
        yield addresses


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


def _environment(variables: dict[str, str] | None = None, path: Sequence[str] = ()) -> dict[str, str]:
    python_path = os.pathsep.join([*path, str(ROOT)])
    return {**os.environ, "COLUMNS": "80", "PYTHONPATH": python_path, "NO_COLOR": "1", **(variables or {})}


def _path_of(words: Sequence[str], path: Sequence[str]) -> Sequence[str]:
    """The client releases go in front of ``python`` programs only: kafkacompat keeps its own packages."""
    return path if words[:1] == ["python"] else ()


def _stages(line: str) -> list[list[str]]:
    """A command line's programs, split at each ``|`` outside quotes, as a shell splits a pipeline."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|")
    lexer.whitespace_split = True
    stages: list[list[str]] = [[]]
    for word in lexer:
        if word == "|":
            stages.append([])
        else:
            stages[-1].append(word)
    return stages


def _argv(words: Sequence[str]) -> list[str]:
    """One program of a command line as this interpreter runs it: ``kafkacompat``, ``python``, a tool."""
    program, *rest = words or [""]
    if program == "kafkacompat":
        return [sys.executable, "-m", "kafkacompat.cli", *rest]
    if program == "python":
        return [sys.executable, *rest]
    if program not in SYSTEM_TOOLS:
        tools = ", ".join(SYSTEM_TOOLS)
        raise ValueError(f"docs-check runs kafkacompat, python and {tools}, not {program!r}")
    found = shutil.which(program)
    if found is None:
        raise RuntimeError(f"{program} is not installed: `make system-tools` installs Debian's {program}")
    return [found, *rest]


def run_command(
    line: str, variables: dict[str, str] | None = None, path: Sequence[str] = ()
) -> tuple[list[str], int]:
    """Run ``line`` (``kafkacompat ...``, ``python ...``, a pipeline of them into ``jq``) from the
    repository; (stdout of its last program then every program's stderr, as lines; the last program's
    exit status, as a shell gives it).  ``path``: directories ahead of the repository on the
    PYTHONPATH of ``python`` programs.  Every output is a pipe, as subprocess.run's: a command's
    progress lines stay off, as they do when piped."""
    processes: list[subprocess.Popen[str]] = []
    with ExitStack() as stack:
        upstream: IO[str] | None = None
        for words in _stages(line):
            process = stack.enter_context(_killed_when_done(subprocess.Popen(
                _argv(words), cwd=ROOT, env=_environment(variables, _path_of(words, path)), stdin=upstream,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )))
            if upstream is not None:
                upstream.close()  # the next program alone reads it: the writer sees it end
            upstream = process.stdout
            processes.append(process)
        # Read by threads while the programs run, so that no pipe fills and blocks its writer.
        streams = [upstream, *(process.stderr for process in processes)]
        texts: list[list[str]] = [[] for _ in streams]
        pairs = zip(streams, texts, strict=True)
        readers = [threading.Thread(target=_read_all, args=pair, daemon=True) for pair in pairs]
        for reader in readers:
            reader.start()
        for process in processes:
            process.wait(TIMEOUT)
        for reader in readers:
            reader.join(TIMEOUT)
    return "".join(text for read in texts for text in read).splitlines(), processes[-1].returncode


def _read_all(stream: IO[str] | None, into: list[str]) -> None:
    assert stream is not None
    into.append(stream.read())


@contextmanager
def _killed_when_done(process: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """``process``, killed if it is still running when the command is over (a timeout, an error)."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


class Background:
    """A command run as with ``&``: started, waited for until its first line, stopped with SIGINT."""

    def __init__(self, line: str, variables: dict[str, str] | None = None, path: Sequence[str] = ()) -> None:
        stages = _stages(line)
        if len(stages) != 1:
            raise ValueError(f"docs-check: a command run with & is one program, not a pipeline: {line}")
        self.process = subprocess.Popen(
            _argv(stages[0]), cwd=ROOT, env=_environment(variables, _path_of(stages[0], path)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
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
