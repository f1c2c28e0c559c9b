"""Every connecting command against every wrong peer a new user meets: one true line, exit 1, quickly.

The peers are real: a port where nothing listens, Python's ``http.server``, a
port that accepts and says nothing, a text server that answers a line only
once it has read one, a TLS listener reached without ``--tls``, and a
plaintext broker (emulated 3.9) reached with ``--tls``.  Every subcommand that
connects is walked through each of them, with the options a new user types
(no ``--timeout``): the answer is one line under 200 characters on stderr,
nothing on stdout, exit 1 (``check``: 2, "could not tell"), no traceback,
within a bound; and its hint is true for the case (``add --tls`` only where
the peer speaks TLS, ``drop --tls`` only where we do, no SASL hint for a peer
that is not Kafka).

The commands run in this process, many at once (each is mostly waiting on its
peer), each thread's stdout and stderr caught on their own: the walk costs
about the slowest case, the silent port's five seconds (its first contact's
deadline, not retried).
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from kafkacompat.cli import main
from kafkacompat.testing import ThreadedCluster
from tests.support import wrong_peers

BOUND = 20.0  # seconds per command: a silent port is named after first_contact_timeout (5 s); slack
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("inspect",),
    ("inspect", "--all-brokers", "--format", "json"),
    ("features", "describe"),
    ("features", "upgrade", "--feature", "kraft.version=1", "--dry-run"),
    ("features", "disable", "--feature", "kraft.version", "--dry-run"),
    ("coordinators", "--group", "g"),
    ("snapshot", "--out", "-"),
    ("check", "kafkacompat", "--bootstrap"),
)


@dataclass(frozen=True)
class Peer:
    address: str
    options: tuple[str, ...]  # what the user typed besides the address
    says: str  # what the line must say after "kafkacompat COMMAND: "
    hint: str | None = None  # the hint it must end with, or None for none


class _PerThread(io.TextIOBase):
    """A stream each thread writes into its own buffer (the walk runs commands side by side)."""

    def __init__(self) -> None:
        self._local = threading.local()

    @contextlib.contextmanager
    def catching(self) -> Iterator[io.StringIO]:
        self._local.buffer = buffer = io.StringIO()
        try:
            yield buffer
        finally:
            del self._local.buffer

    def write(self, text: str) -> int:
        buffer: io.StringIO = self._local.buffer
        return buffer.write(text)

    def isatty(self) -> bool:
        return False


@pytest.fixture(scope="module")
def peers() -> Iterator[dict[str, Peer]]:
    nothing_there = wrong_peers.nothing_listens()
    with contextlib.ExitStack() as running:
        web = running.enter_context(wrong_peers.web_server())
        silent = running.enter_context(wrong_peers.silent_port())
        text = running.enter_context(wrong_peers.text_server())
        tls, ca_file = running.enter_context(wrong_peers.tls_listener())
        plaintext = running.enter_context(ThreadedCluster(["3.9/kraft-broker"])).addresses[0]
        yield {
            "nothing listens": Peer(nothing_there, (), f"unreachable: {nothing_there}: connection refused"),
            "a web server": Peer(web, (), "not a Kafka broker: the peer answered in HTTP"),
            "a silent port": Peer(silent, (), "no answer: the peer accepted the connection but answered"),
            "a text server": Peer(text, (), 'not a Kafka broker: the peer answered in text ("-ERR'),
            "TLS, not asked for": Peer(
                tls,
                (),
                "TLS listener: the peer answered with a TLS record",
                "add --tls (security.protocol=SSL)",
            ),
            "TLS to a plaintext listener": Peer(
                plaintext,
                ("--tls", "--ca-file", str(ca_file)),
                f"TLS failed: {plaintext}: the peer closed the connection during the TLS",
                "if this listener is plaintext, drop --tls (security.protocol=PLAINTEXT)",
            ),
        }


def _run(stdout: _PerThread, stderr: _PerThread, argv: list[str]) -> tuple[int, str, str, float]:
    with stdout.catching() as out, stderr.catching() as err:
        started = time.monotonic()
        code = main(argv)
        return code, out.getvalue(), err.getvalue(), time.monotonic() - started


def test_every_command_names_every_wrong_peer_in_one_true_line(
    peers: dict[str, Peer], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdout, stderr = _PerThread(), _PerThread()
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    cases = [(name, peer, command) for name, peer in peers.items() for command in COMMANDS]
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        runs = list(pool.map(lambda c: _run(stdout, stderr, [*c[2], c[1].address, *c[1].options]), cases))
    problems: list[str] = []
    for (name, peer, command), (code, out, err, took) in zip(cases, runs, strict=True):
        faults = _faults(peer, command, code, out, err, took)
        problems += [f"{' '.join(command[:2])} / {name}: {fault}" for fault in faults]
    assert not problems, "\n".join(problems)


def _faults(peer: Peer, command: tuple[str, ...], code: int, out: str, err: str, took: float) -> list[str]:
    name = " ".join(command[:2]) if command[0] == "features" else command[0]
    judged = command[0] == "check"
    prefix = f"kafkacompat {name}: " + ("could not tell: " if judged else "")
    line = err.rstrip("\n")
    faults = []
    if code != (2 if judged else 1):
        faults.append(f"exit {code}")
    if out or "\n" in line or "Traceback" in err:
        faults.append(f"not one line on stderr alone: {out!r} {err!r}")
    if len(line) >= 200:
        faults.append(f"{len(line)} characters: {line}")
    if not line.startswith(prefix + peer.says):
        faults.append(f"says {line!r}, not {prefix + peer.says!r}...")
    hints = ("add --tls", "drop --tls", "SASL", "--fallback-release")
    wrong = [h for h in hints if h in line and (peer.hint is None or h not in peer.hint)]
    if wrong or (peer.hint is not None and not line.endswith(peer.hint)):
        faults.append(f"hint not true for this peer: {line}")
    if took > BOUND:
        faults.append(f"took {took:.1f} s")
    return faults
