"""The handshake bench's peers, built into the kafkacompat cache on first use: Java, franz-go, kcl.

- Java: ``handshake_peers/HandshakeRounds.java`` compiled with ``javac`` against the
  ``libs/`` of an Apache Kafka release (its ``kafka-clients`` jar and what that needs),
  fetched by the testing kit (``release_home``), so the client is the release's own.
- franz-go: ``handshake_peers/franz_go/main.go`` built as a module of its own through
  the Go module proxy, with the profiles' Go environment (``installs.go_env``: the
  module and build caches in the kafkacompat cache).
- kcl: ``go install github.com/twmb/kcl@KCL_VERSION``.  ``kcl()`` says why it cannot
  be had when it cannot (the command's own last words).

Each build goes into a folder named after its inputs, made under a lock and used only
once finished (a ``.complete`` marker), so helpers sharing the cache never see half a
build.  A failed build raises ``PeerBuildError`` with the tool's last words.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from kafkacompat._cache import cache_root
from kafkacompat.profiles.installs import go_env
from kafkacompat.testing.apache_kafka.jars import java_for, release_home

__all__ = ["FRANZ_GO", "KCL_VERSION", "PeerBuildError", "franz_go", "java_peer", "kcl"]

SOURCES = Path(__file__).resolve().parent / "handshake_peers"
FRANZ_GO = ("v1.22.3", "v1.20.0")  # franz-go, and its kadm module
KCL_VERSION = "v0.17.0"
_TIMEOUT = 900


class PeerBuildError(Exception):
    """A peer of the bench could not be built; the message says why."""


def _run(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    if shutil.which(argv[0]) is None:
        raise PeerBuildError(f"{argv[0]} is not installed")
    try:
        done = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise PeerBuildError(f"{' '.join(argv[:3])} took over {_TIMEOUT} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-2:]
        raise PeerBuildError(f"{' '.join(argv[:3])} failed: {' | '.join(last)}")


def _built(folder: Path, stamp: str, build: Callable[[Path], None]) -> Path:
    """``folder``, built by ``build`` once (under a lock) for inputs ``stamp``."""
    marker = folder / ".complete"
    if marker.exists() and marker.read_text() == stamp:
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists() and marker.read_text() == stamp:
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        build(folder)
        marker.write_text(stamp)
    return folder


def _digest(*paths: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def java_peer(release: str) -> list[str]:
    """The command (less its two arguments) running ``HandshakeRounds`` on ``release``'s client."""
    home = release_home(release)
    source = SOURCES / "HandshakeRounds.java"
    libs = f"{home / 'libs'}/*"

    def build(folder: Path) -> None:
        _run(["javac", "-nowarn", "-d", str(folder), "-cp", libs, str(source)])

    classes = _built(cache_root() / "bench" / "java" / release, _digest(source), build)
    java = java_for(home, release)
    return [java, "-Xmx128m", "-XX:+UseSerialGC", "-cp", f"{classes}:{libs}", "HandshakeRounds"]


def franz_go() -> Path:
    """The built franz-go peer (a binary taking the seed broker and the rounds)."""
    source = SOURCES / "franz_go" / "main.go"
    franz, kadm = FRANZ_GO

    def build(folder: Path) -> None:
        env = go_env(cache_root())
        shutil.copy(source, folder / "main.go")
        _run(["go", "mod", "init", "kafkacompat.bench/franzgo"], cwd=folder, env=env)
        _run(
            ["go", "get", f"github.com/twmb/franz-go@{franz}", f"github.com/twmb/franz-go/pkg/kadm@{kadm}"],
            cwd=folder,
            env=env,
        )
        _run(["go", "mod", "tidy"], cwd=folder, env=env)
        _run(["go", "build", "-o", "handshake-rounds", "."], cwd=folder, env=env)

    stamp = _digest(source) + franz + kadm
    folder = _built(cache_root() / "bench" / "go" / f"franz-go-{franz}", stamp, build)
    return folder / "handshake-rounds"


def kcl() -> Path:
    """kcl itself, ``go install``-ed into the cache."""

    def build(folder: Path) -> None:
        env = {**go_env(cache_root()), "GOBIN": str(folder)}
        _run(["go", "install", f"github.com/twmb/kcl@{KCL_VERSION}"], env=env)

    return _built(cache_root() / "bench" / "go" / f"kcl-{KCL_VERSION}", KCL_VERSION, build) / "kcl"
