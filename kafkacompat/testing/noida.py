"""Run a real third-party Kafka look-alike: noida-db's Kafka service (PyPI ``noida-db``).

``NoidaBroker`` is a synchronous context manager (a ``BrokerProcess``):
entering runs ``noida-db start --only kafka`` on a free port of 127.0.0.1
with a fresh temporary data directory and waits (bounded) until it answers
ApiVersions; leaving stops it and removes the directory.  It needs the
package ``noida-db`` (pinned in the ``dev`` extra), whose wheel ships the
``noida-db`` executable.

What noida-db 0.2.3 answers (observed): ApiVersions 0-3; to v4 and above,
UNSUPPORTED_VERSION in the v0 layout listing ApiVersions 0-3, and the
connection stays open; FindCoordinator 0-4 (batched, KIP-699); a partial API
set (no Features, no controller APIs).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import tempfile
from pathlib import Path

from kafkacompat.errors import BrokerStartError
from kafkacompat.testing.process import BrokerProcess

__all__ = ["NOIDA_VERSION", "NoidaBroker", "noida_binary"]

#: The release the testing kit is checked against.
NOIDA_VERSION = "0.2.3"


def noida_binary() -> Path:
    """The ``noida-db`` executable inside the installed ``noida_db`` package."""
    spec = importlib.util.find_spec("noida_db")
    if spec is None or spec.origin is None:
        raise BrokerStartError(f"noida-db is not installed (pip install noida-db=={NOIDA_VERSION})")
    binary = Path(spec.origin).parent / "noida-db"
    if not binary.is_file():
        raise BrokerStartError(f"no noida-db executable at {binary}")
    if not os.access(binary, os.X_OK):  # the wheel's own launcher sets the bit the same way
        try:
            binary.chmod(binary.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        except OSError as exc:
            raise BrokerStartError(f"{binary} is not executable and cannot be made so: {exc}") from exc
    return binary


class NoidaBroker(BrokerProcess):
    """noida-db's Kafka service alone, on 127.0.0.1, with a throw-away data directory."""

    name = "noida-db"
    port_in_use_markers = ("already in use",)

    def __init__(
        self, *, port: int | None = None, startup_timeout: float = 20.0, stop_timeout: float = 10.0
    ) -> None:
        super().__init__(port=port, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        self.data_dir: Path | None = None

    @property
    def command(self) -> list[str]:
        return [
            str(noida_binary()),
            "start",
            "--data-dir",
            str(self.data_dir),
            "--host",
            self.host,
            "--only",
            "kafka",
            "--kafka-port",
            str(self.port),
        ]

    def prepare(self) -> None:
        self.data_dir = Path(tempfile.mkdtemp(prefix="kafkacompat-noida-"))

    def cleanup(self) -> None:
        if self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None
