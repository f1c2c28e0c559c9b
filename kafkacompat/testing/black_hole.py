"""A port that drops every connection attempt: a broker behind a firewall that drops packets.

A refused connection fails at once and a silent broker accepts and then never
answers; a black hole answers nothing at all, so a connect waits for its own
timeout.  On loopback that is a listening socket whose accept queue is full
and never drained: ``listen(0)`` leaves room for one connection, which the
hole makes itself, and Linux then drops every further SYN (the client's
kernel retries it, unanswered, until the client gives up).

``with BlackHole() as hole:`` listens on a free port (``hole.port``);
``BlackHole(port=p)`` takes over a port a broker just released, to turn that
broker into a hole in place.  Leaving the block closes it.
"""

from __future__ import annotations

import socket
from types import TracebackType

from kafkacompat.errors import EmulatorConfigError

__all__ = ["BlackHole"]

_CHECK_TIMEOUT = 0.2
_MAX_FILLERS = 4


class BlackHole:
    """A loopback port whose connects never complete (see the module documentation)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._fillers: list[socket.socket] = []
        try:
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind((host, port))
            self._listener.listen(0)
            self.port: int = self._listener.getsockname()[1]
            self._fill()
        except OSError as exc:
            self.close()
            raise EmulatorConfigError(f"cannot make a black hole on {host}:{port}: {exc}") from None

    def _fill(self) -> None:
        """Take the accept queue's room with connections of its own, until a connect times out."""
        for _ in range(_MAX_FILLERS):
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            probe.settimeout(_CHECK_TIMEOUT)
            try:
                probe.connect((self.host, self.port))
            except TimeoutError:
                probe.close()
                return  # the SYN was dropped: the hole is ready
            self._fillers.append(probe)
        raise EmulatorConfigError(f"{self.host}:{self.port} still accepts connections: no black hole here")

    def close(self) -> None:
        for filler in self._fillers:
            filler.close()
        self._fillers.clear()
        self._listener.close()

    def __enter__(self) -> BlackHole:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
