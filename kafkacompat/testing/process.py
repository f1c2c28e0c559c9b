"""One home for running a real broker as a child process on 127.0.0.1.

``BrokerProcess`` is what every launcher of the testing kit shares (Tansu,
noida-db, the older librdkafka mock): a synchronous context manager that
starts ``command`` with its output kept in temporary files, waits (bounded)
until the broker answers an ApiVersions request, and on leaving terminates
it, then kills it if it does not exit in time.  No process is left behind.
A launcher says how to run its broker (``command``, ``environment``), how a
port clash looks in its output (``port_in_use_markers``), and, when the
broker picks its own port, how to read it (``discover_port``).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import TracebackType
from typing import IO, ClassVar, Self

from kafkacompat.errors import BrokerStartError, KafkaCompatError
from kafkacompat.testing.ports import LOOPBACK, free_port, probe_api_versions

__all__ = ["BrokerProcess"]

_PORT_ATTEMPTS = 3
_GRACE = 2.0  # seconds a broker has to exit by itself once its stdin closes
_OUTPUT_SHOWN = 4000  # characters of each stream in an error message


class BrokerProcess(ABC):
    """A broker child process listening on 127.0.0.1 (subclasses say which)."""

    #: What the broker is called in messages.
    name: ClassVar[str] = "broker"
    #: Text in the broker's output that means "the port was taken": start again on another port.
    port_in_use_markers: ClassVar[tuple[str, ...]] = ()
    #: The broker exits by itself when its stdin closes (``stop`` waits a moment before terminating).
    exits_on_eof: ClassVar[bool] = False

    def __init__(self, *, port: int | None = None, startup_timeout: float = 20.0, stop_timeout: float = 10.0):
        self.host = LOOPBACK
        self._pick_port = port is None  # a port we chose may be lost to a race: retry
        self.port = port if port is not None else free_port()
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.returncode: int | None = None  # how the last run ended (negative: killed by a signal)
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdout: IO[bytes] | None = None
        self._stderr: IO[bytes] | None = None

    # -- what a launcher says -----------------------------------------------------------

    @property
    @abstractmethod
    def command(self) -> list[str]:
        """The broker's command line."""

    def environment(self) -> Mapping[str, str]:
        return dict(os.environ)

    def prepare(self) -> None:  # noqa: B027 - a hook; most launchers need nothing here
        """Called before each start (e.g. to make a data directory)."""

    def cleanup(self) -> None:  # noqa: B027 - a hook; most launchers need nothing here
        """Called after each stop (e.g. to remove that directory)."""

    def discover_port(self, stdout: str) -> int | None:
        """For a broker that picks its own port: read it from the output so far (None: not yet)."""
        return self.port

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

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
        if self._proc is not None:
            raise RuntimeError(f"this {type(self).__name__} is already started")
        attempts = _PORT_ATTEMPTS if self._pick_port and self.port_in_use_markers else 1
        for attempt in range(1, attempts + 1):
            try:
                self._start_once()
                return
            except BrokerStartError as exc:
                clash = any(marker in str(exc) for marker in self.port_in_use_markers)
                if attempt == attempts or not clash:
                    raise
                self.port = free_port()

    def _start_once(self) -> None:
        self.prepare()
        # The logs must outlive this method (closed in stop()), hence no `with`.
        self._stdout = tempfile.TemporaryFile()  # noqa: SIM115
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            try:
                self._proc = subprocess.Popen(
                    self.command,
                    stdin=subprocess.PIPE,  # closed by stop(): a launcher may wait for its EOF
                    stdout=self._stdout,
                    stderr=self._stderr,
                    env=dict(self.environment()),
                )
            except OSError as exc:
                raise BrokerStartError(f"cannot run {self.name}: {exc}") from exc
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        last_error: Exception | None = None
        correlation_id = 0
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerStartError(
                    f"{self.name} exited with {self._proc.returncode} before answering.\n{self.output()}"
                )
            port = self.discover_port(self._read(self._stdout))
            if port is not None:
                self.port = port
                correlation_id += 1
                try:
                    probe_api_versions(self.host, self.port, correlation_id, timeout=1.0)
                    return
                except (OSError, KafkaCompatError) as exc:  # not listening or not ready yet
                    last_error = exc
            time.sleep(0.1)
        raise BrokerStartError(
            f"{self.name} did not answer ApiVersions on {self.bootstrap} within "
            f"{self.startup_timeout:.0f}s (last error: {last_error!r}).\n{self.output()}"
        )

    @staticmethod
    def _read(stream: IO[bytes] | None) -> str:
        if stream is None or stream.closed:
            return ""
        stream.seek(0)
        return stream.read().decode(errors="replace")

    def output(self) -> str:
        """What the process wrote so far, for error messages."""
        try:
            parts = [f"command: {' '.join(self.command)}"]
        except KafkaCompatError as exc:  # the command cannot even be named (not installed)
            parts = [f"command: unavailable ({exc})"]
        for label, stream in (("stdout", self._stdout), ("stderr", self._stderr)):
            if stream is not None and not stream.closed:
                parts.append(f"--- {label} ---\n{self._read(stream)[-_OUTPUT_SHOWN:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:  # a broker that leaves on the EOF of its stdin gets a moment to do so cleanly
                proc.wait(timeout=_GRACE if self.exits_on_eof else 0)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=self.stop_timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=self.stop_timeout)
            self.returncode = proc.returncode
        for stream in (self._stdout, self._stderr):
            if stream is not None:
                stream.close()
        self._stdout = self._stderr = None
        self.cleanup()
