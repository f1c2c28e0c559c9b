"""ApiVersions at every request version, sent as raw bytes and kept as raw bytes: what the matrix records.

The request is written by hand (its layout is fixed by the protocol: request
header v1 up to v2, v2 with an empty tag section from v3, and from v3 a body of
two compact strings and an empty tag section), so a version our codec has never
heard of (v5) is asked exactly like the others.  The answer is kept whole (hex)
and read with the codec at the asked version, then at v0 (the layout every
broker falls back to when it cannot read the request), whichever reads.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from kafkacompat.errors import BrokerStartError, KafkaCompatError
from kafkacompat.protocol import framing
from kafkacompat.protocol.messages import ApiKey, ApiVersionsResponse, MetadataRequest, MetadataResponse

__all__ = ["ask_api_versions", "decode_api_versions", "metadata", "request_bytes"]

_API_VERSIONS = int(ApiKey.API_VERSIONS)
_CLIENT_ID = b"kafkacompat-matrix"
_SOFTWARE = (b"kafkacompat-matrix", b"1")
_CODEC_MAX = 4  # the highest ApiVersions version the codec reads
_READ_LIMIT = 1 << 20  # no ApiVersions answer is near this


def _compact(text: bytes) -> bytes:
    return bytes([len(text) + 1]) + text  # every string here is under 127 bytes


def request_bytes(version: int, correlation_id: int) -> bytes:
    """A whole ApiVersions request frame (size prefix included) at ``version``."""
    header = struct.pack(">hhih", _API_VERSIONS, version, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID
    body = b""
    if version >= 3:
        header += b"\x00"
        body = _compact(_SOFTWARE[0]) + _compact(_SOFTWARE[1]) + b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def ask_api_versions(host: str, port: int, version: int, timeout: float = 5.0) -> dict[str, Any]:
    """Send one ApiVersions request; ``{"outcome": "answered"|"closed"|"silent"|"refused", ...}``."""
    correlation_id = 0x4B43 + version
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        return {"outcome": "refused", "detail": str(exc)}
    with sock:
        sock.sendall(request_bytes(version, correlation_id))
        received = b""
        deadline = time.monotonic() + timeout
        while True:
            if len(received) >= 4:
                (size,) = struct.unpack(">i", received[:4])
                if size < 0 or size > _READ_LIMIT:
                    return {"outcome": "answered", "raw": received.hex(), "decoded": None}
                if len(received) >= 4 + size:
                    frame = received[4 : 4 + size]
                    return {"outcome": "answered", "raw": frame.hex(), **decode_api_versions(frame, version)}
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {"outcome": "silent", "raw": received.hex()}
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                return {"outcome": "silent", "raw": received.hex()}
            except OSError as exc:
                return {"outcome": "closed", "raw": received.hex(), "detail": str(exc)}
            if not chunk:
                return {"outcome": "closed", "raw": received.hex()}
            received += chunk


def decode_api_versions(frame: bytes, version: int) -> dict[str, Any]:
    """The answer read at ``version`` (capped at what the codec reads), else at v0: ranges and features."""
    for attempt in dict.fromkeys((min(version, _CODEC_MAX), 0)):
        try:
            _, response = framing.decode_response(frame, ApiVersionsResponse, attempt)
        except KafkaCompatError:
            continue
        return {"decoded_as": attempt, "decoded": _plain(response)}
    return {"decoded_as": None, "decoded": None}


def _plain(response: ApiVersionsResponse) -> dict[str, Any]:
    return {
        "error_code": response.error_code,
        "apis": {str(a.api_key): [a.min_version, a.max_version] for a in response.api_keys},
        "supported_features": {f.name: [f.min_version, f.max_version] for f in response.supported_features},
        "finalized_features": {
            f.name: [f.min_version_level, f.max_version_level] for f in response.finalized_features
        },
        "finalized_features_epoch": response.finalized_features_epoch,
    }


def metadata(host: str, port: int, version: int, correlation_id: int, timeout: float) -> MetadataResponse:
    """One blocking Metadata exchange asking for no topic (all topics at v0, where no list means all)."""
    frame = framing.encode_request(MetadataRequest(topics=[]), version, correlation_id, "kafkacompat-probe")
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(frame)
        splitter = framing.FrameSplitter()
        while True:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = sock.recv(65536)
            if not chunk:
                raise BrokerStartError(f"{host}:{port} closed the connection during the Metadata probe")
            frames = splitter.feed(chunk)
            if frames:
                got, response = framing.decode_response(frames[0], MetadataResponse, version)
                if got != correlation_id:
                    raise BrokerStartError(f"the Metadata probe was answered with correlation id {got}")
                return response
