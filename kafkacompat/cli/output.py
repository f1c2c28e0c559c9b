"""Where the commands write: redacted stdout, JSON documents, and progress on stderr.

Progress (for probes of several brokers) follows where stderr goes: a line
rewritten in place on a terminal, plain lines when stderr is a file, and
nothing at all when stderr is a pipe or ``--quiet`` is given.  Results always
go to stdout, so ``kafkacompat inspect --format json | jq`` stays clean.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from typing import Any, TextIO

from kafkacompat.cli.redaction import Redactor

__all__ = ["Output", "Progress", "progress_mode"]


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _is_pipe(stream: TextIO) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(stream.fileno()).st_mode)
    except (AttributeError, ValueError, OSError):
        return False


class Output:
    """Text and JSON to stdout (and notes to stderr), with every known secret masked."""

    def __init__(
        self, redactor: Redactor | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
    ) -> None:
        self.redactor = redactor or Redactor()
        self._stdout = stdout
        self._stderr = stderr
        self.closed = False

    @property
    def stdout(self) -> TextIO:
        return self._stdout if self._stdout is not None else sys.stdout

    @property
    def stderr(self) -> TextIO:
        return self._stderr if self._stderr is not None else sys.stderr

    def _write(self, text: str) -> None:
        """Write to stdout; a reader that went away (``| head``) ends the output quietly."""
        if self.closed:
            return
        try:
            self.stdout.write(self.redactor.text(text))
            self.stdout.flush()
        except BrokenPipeError:
            self.closed = True
            try:  # so that the interpreter's own flush at exit does not fail again
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.stdout.fileno())
            except (OSError, ValueError, AttributeError):
                pass

    def line(self, text: str = "") -> None:
        self._write(text + "\n")

    def lines(self, lines: list[str]) -> None:
        self._write("".join(text + "\n" for text in lines))

    def json(self, document: Any) -> None:
        self._write(json.dumps(document, indent=2) + "\n")

    def note(self, text: str) -> None:
        self.stderr.write(self.redactor.text(text) + "\n")
        self.stderr.flush()


def progress_mode(stream: TextIO, quiet: bool = False) -> str:
    """``"live"`` on a terminal, ``"plain"`` into a file, ``"off"`` into a pipe or when quiet."""
    if quiet:
        return "off"
    if _is_tty(stream):
        return "live"
    if _is_pipe(stream):
        return "off"
    return "plain"


class Progress:
    """Progress of probing ``total`` brokers, on stderr."""

    def __init__(
        self,
        total: int,
        what: str,
        *,
        stream: TextIO | None = None,
        mode: str | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.mode = mode if mode is not None else progress_mode(self.stream)
        self.total = total
        self.what = what
        self.done = 0
        self.failed = 0
        self._redactor = redactor or Redactor()
        self._width = 0

    def _write(self, text: str) -> None:
        self.stream.write(self._redactor.text(text))
        self.stream.flush()

    def start(self) -> None:
        if self.mode == "plain":
            self._write(f"{self.what}: {self.total} broker(s)\n")
        elif self.mode == "live":
            self._live()

    def _live(self) -> None:
        text = f"{self.what}: {self.done}/{self.total} done" + (
            f", {self.failed} failed" if self.failed else ""
        )
        pad = max(0, self._width - len(text))
        self._width = len(text)
        self._write("\r" + text + " " * pad)

    def step(self, label: str, error: str | None = None) -> None:
        self.done += 1
        self.failed += error is not None
        if self.mode == "plain":
            outcome = "ok" if error is None else f"failed: {error}"
            self._write(f"  [{self.done}/{self.total}] {label}: {outcome}\n")
        elif self.mode == "live":
            self._live()

    def finish(self) -> None:
        if self.mode == "live":
            self._write("\r" + " " * self._width + "\r")
