"""Running ``kafkacompat`` against real peers: in-process (fast) or as a subprocess (as users run it).

``cli(*argv)``      runs ``kafkacompat.cli.main`` in a worker thread (it runs its own trio loop)
                    and returns a ``CliResult`` with what it printed.
``run_cli(*argv)``  runs ``python -m kafkacompat.cli`` as a child process: real exit codes,
                    real tracebacks (``--debug``), real environment.
``http_server``     an in-test HTTP server on 127.0.0.1 that answers 400 to the first bytes of
                    any connection (as Node's HTTP parser does to a Kafka frame).

Every run is bounded by ``DEADLINE`` seconds, and the connection options keep
each failure short (``--timeout``, ``--retries``).
"""

from __future__ import annotations

import functools
import os
import socket
import sys
from collections.abc import AsyncIterator, Mapping

import pytest
import trio

from kafkacompat.cli import main
from kafkacompat.testing.pytest_plugin import emulated_cluster
from tests.integration.cli.cli_runner import DEADLINE, ROOT, CliResult, Runner

__all__ = ["cli", "closed_port", "emulated_cluster", "http_server", "run_cli"]

HTTP_400 = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Runner:
    """``await cli("inspect", bootstrap, ...)``: main() in a thread, its output captured."""

    async def run(*argv: str) -> CliResult:
        capsys.readouterr()
        with trio.fail_after(DEADLINE):
            code = await trio.to_thread.run_sync(functools.partial(main, list(argv)), abandon_on_cancel=True)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def run_cli() -> Runner:
    """``await run_cli("inspect", ..., env={...}, stdin=b"...")``: a child process, as users run it."""

    async def run(*argv: str, env: Mapping[str, str] | None = None, stdin: bytes = b"") -> CliResult:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("KAFKACOMPAT")}
        environment["PYTHONPATH"] = str(ROOT)
        environment.pop("NO_COLOR", None)
        environment.update(env or {})
        with trio.fail_after(DEADLINE):
            done = await trio.run_process(
                [sys.executable, "-m", "kafkacompat.cli", *argv],
                stdin=stdin,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=environment,
                cwd=ROOT,
            )
        return CliResult(done.returncode, done.stdout.decode(), done.stderr.decode())

    return run


@pytest.fixture
async def http_server() -> AsyncIterator[str]:
    """``host:port`` of a web server that answers 400 Bad Request to whatever arrives first."""
    served = 0

    async def handle(stream: trio.SocketStream) -> None:
        nonlocal served
        served += 1
        if served > 32:  # bounded: no test needs more connections than this
            await stream.aclose()
            return
        with trio.move_on_after(5):
            try:
                await stream.receive_some(65536)
                await stream.send_all(HTTP_400)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        await trio.aclose_forcefully(stream)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, handle, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        yield f"127.0.0.1:{port}"
        nursery.cancel_scope.cancel()


@pytest.fixture
def closed_port() -> str:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"127.0.0.1:{port}"
