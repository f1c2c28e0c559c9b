"""The files the command line reads and writes, with one rule for each and a one-line error for each failure.

Writing: a file named on the command line is opened with ``O_NOFOLLOW``, so a
symbolic link planted where the file belongs is refused, never followed to
whatever it points at; it must be a regular file (a FIFO or a device is
refused too), and it is created with mode 0644 less the umask.  Appending
writes the whole text with one ``write`` on an ``O_APPEND`` descriptor, so
lines appended by two processes at once are never interleaved within a line
(the kernel appends each write whole on a local file system).  Replacing
truncates the file after the checks.

Reading: a missing, unreadable or binary file is a ``ConfigError`` naming the
file and what is wrong with it, not a traceback; so is anything larger than
``READ_LIMIT`` (``/dev/zero`` never ends).  A pipe is read to its end
(``--groups-file <(command)``); a named pipe that no process writes is empty,
not waited on.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TextIO

from kafkacompat.errors import ConfigError

__all__ = ["READ_LIMIT", "append_text", "open_for_writing", "read_head", "read_text", "write_text"]

_MODE = 0o644
#: The largest file a command reads whole (a groups file of a million names is well under it).
READ_LIMIT = 64 << 20


def _open_for_writing(path: Path, what: str, flags: int) -> int:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | flags, _MODE)
    except OSError as exc:
        if path.is_symlink():  # ELOOP, as O_NOFOLLOW reports a link
            raise ConfigError(f"{what} {path} is a symbolic link; refusing to write through it") from None
        if path.is_dir():
            raise ConfigError(f"{what} {path} is a directory") from None
        raise ConfigError(f"cannot write {what} {path}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise ConfigError(f"{what} {path} is not a regular file")
    return descriptor


def _write_all(descriptor: int, data: bytes, path: Path, what: str) -> None:
    try:
        view = memoryview(data)
        while view:
            written = os.write(descriptor, view)
            view = view[written:]
    except OSError as exc:
        raise ConfigError(f"cannot write {what} {path}: {exc.strerror}") from None
    finally:
        os.close(descriptor)


def append_text(path: str | Path, text: str, what: str = "the file") -> None:
    """Append ``text`` to ``path`` in one write, refusing a symbolic link or anything but a regular file."""
    target = Path(path)
    data = text.encode("utf-8")
    descriptor = _open_for_writing(target, what, os.O_APPEND)
    _write_all(descriptor, data, target, what)


def write_text(path: str | Path, text: str, what: str = "the file") -> None:
    """Write ``text`` to ``path``, replacing what it held; a symbolic link or non-regular file is refused."""
    target = Path(path)
    descriptor = _open_for_writing(target, what, 0)
    try:
        os.ftruncate(descriptor, 0)
    except OSError as exc:
        os.close(descriptor)
        raise ConfigError(f"cannot write {what} {path}: {exc.strerror}") from None
    _write_all(descriptor, text.encode("utf-8"), target, what)


def open_for_writing(path: str | Path, what: str = "the file") -> TextIO:
    """A text file object writing ``path`` from its start, for output too large to build in memory first."""
    target = Path(path)
    descriptor = _open_for_writing(target, what, os.O_TRUNC)
    return os.fdopen(descriptor, "w", encoding="utf-8")


def _read(path: Path, what: str, limit: int) -> bytes:
    """Up to ``limit`` bytes of the regular file ``path`` (one more tells that it is longer)."""
    try:  # O_NONBLOCK: opening a FIFO with no writer must not wait for one
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        if stat.S_ISDIR(os.fstat(descriptor).st_mode):
            raise ConfigError(f"{what} {path} is a directory")
        os.set_blocking(descriptor, True)  # a pipe is read to its end; one with no writer is empty
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(descriptor, min(1 << 20, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    finally:
        os.close(descriptor)


def read_head(path: str | Path, what: str = "the file", size: int = 4096) -> bytes:
    """The first ``size`` bytes of ``path`` (no more is read, whatever it is)."""
    return _read(Path(path), what, size)[:size]


def read_text(path: str | Path, what: str = "the file") -> str:
    """The UTF-8 text of ``path``, or a ``ConfigError`` saying why it cannot be read as text.

    At most ``READ_LIMIT`` bytes are read: what a command reads whole must not
    fill the memory, whatever the path names (``/dev/zero`` never ends).
    """
    source = Path(path)
    data = _read(source, what, READ_LIMIT)
    if len(data) > READ_LIMIT:
        raise ConfigError(f"{what} {source} is larger than {READ_LIMIT >> 20} MiB")
    if b"\x00" in data[:8192]:
        raise ConfigError(f"{what} {source} is a binary file, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {source} is not UTF-8 text (byte {exc.start} cannot be read)") from None
