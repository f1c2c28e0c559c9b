"""What one negotiated connection loads: nothing a broker that answers ApiVersions does not need.

Each case runs in a fresh interpreter (a module loaded by another test would hide
a regression) and drives a ClientConnection through the handshake in memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

CHILD = """
import json, sys
import kafkacompat.aio, kafkacompat.blocking.connection
from kafkacompat.connection.client_connection import ClientConnection, Ready
from kafkacompat.protocol.broker_framing import decode_request, encode_response
from kafkacompat.protocol.messages import ApiVersionsResponse

connection = ClientConnection(node="h:1")
connection.connected()
request = decode_request(connection.next_action().data[4:])
connection.written()
row = ApiVersionsResponse.ApiVersion
reply = ApiVersionsResponse(api_keys=[row(api_key=18, max_version=4), row(api_key=3, max_version=12)])
header = request.header
connection.receive_data(encode_response(reply, header.request_api_version, header.correlation_id))
assert isinstance(connection.next_action(), Ready)
if sys.argv[1] == "closing":  # a second connection whose broker closes at every version
    closing = ClientConnection(node="h:2")
    for _ in range(3):
        closing.connected(); closing.written(); closing.closed()
print(json.dumps(sorted(sys.modules)))
"""

LEGACY_ONLY = [
    "kafkacompat.negotiation.handshake.legacy",
    "kafkacompat.negotiation.handshake.legacy_probe",
    "kafkacompat.protocol.messages.metadata",
    "kafkacompat.protocol.messages.heartbeat",
    "kafkacompat.protocol.messages.offset_fetch",
]


def loaded(case: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, case], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def test_a_broker_that_answers_apiversions_loads_no_pre_0_10_request_and_no_trio() -> None:
    modules = loaded("answering")
    assert not modules & {*LEGACY_ONLY, "trio", "tenacity"}
    assert "kafkacompat.protocol.messages.api_versions" in modules


def test_a_broker_that_closes_at_every_version_loads_the_pre_0_10_requests() -> None:
    assert set(LEGACY_ONLY) <= loaded("closing")
