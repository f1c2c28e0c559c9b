"""Loopback helpers shared by the test brokers: free ports and a readiness probe."""

from __future__ import annotations

import socket
import time

from kafkacompat.errors import ProtocolError
from kafkacompat.protocol import framing
from kafkacompat.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

__all__ = [
    "LOOPBACK",
    "free_port",
    "probe_api_versions",
]

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def probe_api_versions(host: str, port: int, correlation_id: int, timeout: float) -> ApiVersionsResponse:
    """One blocking ApiVersions v0 exchange, to tell that a broker is up."""
    deadline = time.monotonic() + timeout
    frame = framing.encode_request(ApiVersionsRequest(), 0, correlation_id, "kafkacompat-probe")
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(frame)
        splitter = framing.FrameSplitter()
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                raise ProtocolError("the broker closed the connection during the probe")
            frames = splitter.feed(chunk)
            if frames:
                got_id, response = framing.decode_response(frames[0], ApiVersionsResponse, 0)
                if got_id != correlation_id:
                    raise ProtocolError(f"probe answered with correlation id {got_id}")
                return response
    raise TimeoutError(f"no ApiVersions answer from {host}:{port} within {timeout}s")
