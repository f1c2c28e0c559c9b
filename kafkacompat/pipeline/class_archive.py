"""A class-data archive for the local Spark JVM: made by one run, mapped by the next.

Theory.  A fresh JVM spends its first seconds loading, parsing and verifying
Spark's classes, tens of thousands of them, before and while it runs the
first queries.  Java's class-data sharing (CDS) keeps those classes, already
parsed and verified, in an archive file that a later JVM maps instead: the
JVM writes it at exit when started with ``-XX:ArchiveClassesAtExit=FILE``
(the classes that JVM loaded) and maps it when started with
``-XX:SharedArchiveFile=FILE``.  Measured on the 6,000-line report (fresh
JVMs, alternated, load about 3): the session starts in 2.8 s instead of 4.6 s
and the report takes 23.2 s instead of 25.4 s (41 s of JVM CPU instead of 45).

So the first local session of a machine writes the archive and every later
one maps it.  It lives in kafkacompat's cache directory
(``$KAFKACOMPAT_CACHE_DIR``, else ``~/.cache/kafkacompat``), under
``spark-cds/``, one file per PySpark install and Java runtime (the JVM
checks the rest itself, and ignores an archive of another runtime or class
path with a warning on stderr).  ``KAFKACOMPAT_SPARK_CDS=0`` turns it off.

Getting the file right matters: a JVM that maps a truncated archive whose
header is valid dies (SIGBUS).  The JVM writes the header last, after every
region, so a file starting with the dynamic archive's magic number is
complete.  Each writing JVM gets a name of its own (two sessions started at
once never write the same file); a later session adopts a finished one by
renaming it to the archive's name (atomic), and never maps one still being
written.  Only a JVM this process starts is given these options: under
spark-submit, or when a session is running, the JVM exists already.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from kafkacompat._cache import cache_root

__all__ = ["CDS_ENV", "DYNAMIC_ARCHIVE_MAGIC", "ClassArchive", "class_archive"]

CDS_ENV = "KAFKACOMPAT_SPARK_CDS"
DYNAMIC_ARCHIVE_MAGIC = 0xF00BABA8  # CDS's dynamic-archive header magic, little-endian at offset 0
_PENDING = ".jsa.part"
_ABANDONED_SECONDS = 24 * 3600  # a pending file still incomplete after this: its JVM died writing it
# Warnings about an archive the JVM cannot use go to stderr: stdout is the command line's.
_QUIET = "-Xlog:cds=off,cds+dynamic=off -Xlog:cds=warning,cds+dynamic=warning:stderr"


@dataclass(frozen=True)
class ClassArchive:
    """What the JVM about to start does with the archive: ``reused`` or ``created`` (at its exit)."""

    state: str
    path: Path

    @property
    def java_options(self) -> str:
        flag = "SharedArchiveFile" if self.state == "reused" else "ArchiveClassesAtExit"
        return f"-XX:{flag}={self.path} {_QUIET}"


def _runtime_key() -> str:
    """PySpark's install and the Java runtime that will run it: the archive holds their classes."""
    import pyspark

    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java") or "java"
    real = Path(java).resolve()
    stamp = real.stat().st_mtime_ns if real.exists() else 0
    text = f"{pyspark.__version__}|{Path(pyspark.__file__).parent}|{real}|{stamp}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _complete(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return int.from_bytes(f.read(4), "little") == DYNAMIC_ARCHIVE_MAGIC
    except OSError:
        return False


def class_archive(directory: Path | None = None, key: str | None = None) -> ClassArchive | None:
    """The archive to map, or the file the new JVM is to write; None when off or unusable."""
    if os.environ.get(CDS_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    try:
        folder = (directory or cache_root() / "spark-cds").resolve()
        if any(c.isspace() or c in "'\"\\" for c in str(folder)):
            return None  # Spark splits the JVM options on blanks: keep them unquoted, or do without
        name = key or _runtime_key()
        archive = folder / f"{name}.jsa"
        if _complete(archive):
            return ClassArchive("reused", archive)
        # Archives earlier JVMs wrote: adopt the newest finished one (a rename: atomic), drop
        # the other finished ones and those whose JVM died writing them.
        finished: list[Path] = []
        now = time.time()
        for pending in folder.glob(f"{name}-*{_PENDING}"):
            if _complete(pending):
                finished.append(pending)
            elif now - pending.stat().st_mtime > _ABANDONED_SECONDS:
                pending.unlink(missing_ok=True)
        finished.sort(key=lambda p: p.stat().st_mtime_ns)
        for stale in finished[:-1]:
            stale.unlink(missing_ok=True)
        if finished:
            with contextlib.suppress(FileNotFoundError):  # another session adopted it first
                os.replace(finished[-1], archive)
            if _complete(archive):
                return ClassArchive("reused", archive)
        folder.mkdir(parents=True, exist_ok=True)
        return ClassArchive("created", folder / f"{name}-{uuid.uuid4().hex}{_PENDING}")
    except OSError:
        return None  # an unwritable cache costs the speed-up, never the session
