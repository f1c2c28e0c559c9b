"""The emulator in a process of its own, to be killed (``kill -9``) and started again.

An ``EmulatedCluster`` in the test's own loop can be stopped, but not killed:
its sockets are closed politely.  ``EmulatorProcess`` runs ``kafkacompat
emulate`` as a child process on a fixed port of 127.0.0.1 (a ``BrokerProcess``:
started, waited for until it answers ApiVersions, stopped with no process
left), and ``kill()`` sends it SIGKILL, as an operator's ``kill -9`` or the
OOM killer does: the kernel drops its connections, nobody says goodbye.
``start()`` again brings it back on the same port, with the same cluster id
and node id, as a broker restarted in place does.
"""

from __future__ import annotations

import sys

from kafkacompat.testing.process import BrokerProcess

__all__ = ["EmulatorProcess"]


class EmulatorProcess(BrokerProcess):
    """``kafkacompat emulate --release RELEASE`` as a child process on 127.0.0.1."""

    name = "kafkacompat emulate"

    def __init__(
        self, release: str = "4.0", *, port: int | None = None, startup_timeout: float = 20.0
    ) -> None:
        super().__init__(port=port, startup_timeout=startup_timeout)
        self._pick_port = False  # a restart must come back on the same port
        self.release = release
        self.kills = 0

    @property
    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "kafkacompat.cli", "emulate",
            "--release", self.release, "--port", str(self.port), "--host", self.host,
        ]

    def kill(self) -> None:
        """SIGKILL the broker and reap it: its connections die with no FIN from it."""
        proc = self._proc
        if proc is None:
            raise RuntimeError("the emulator is not running")
        proc.kill()
        proc.wait()
        self.kills += 1
        self.stop()  # nothing left to stop: closes the output files
