"""What one plaintext connection imports, measured in a fresh interpreter.

Peak RSS follows the modules a connection loads (their code, their tables), so
the footprint tests name what a plaintext connection must not load and bound
how many of kafkacompat's modules it may load: weight that creeps back in
shows up here by name, long before it shows up in ``make bench``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Each driver's program: its runtime is imported before the snapshot, so that only
# what kafkacompat adds is counted.
RUNTIME = {"trio": "import trio", "asyncio": "import asyncio", "blocking": "", "probe": ""}
DRIVER = {
    "trio": """
from kafkacompat.transport.connection import open_connection
async def main():
    async with open_connection(HOST, PORT) as conn:
        assert conn.handshake.api_ranges
trio.run(main)
""",
    "asyncio": """
from kafkacompat.aio import open_connection
async def main():
    async with open_connection(HOST, PORT) as conn:
        assert conn.handshake.api_ranges
asyncio.run(main())
""",
    "blocking": """
from kafkacompat.blocking.connection import open_blocking_connection
with open_blocking_connection(HOST, PORT, timeout=10) as conn:
    assert conn.capabilities.api_ranges
""",
    "probe": """
from kafkacompat.blocking.probe import probe_broker
assert probe_broker(HOST, PORT, timeout=10).api_ranges
""",
}

# Loaded on first use, never by a plaintext connection that only negotiates.
NOT_FOR_A_PLAIN_CONNECTION = frozenset(
    {
        "kafkacompat.negotiation.release_guess",  # the release guess and its table
        "kafkacompat.reference.releases",
        "kafkacompat.reference.features",
        "kafkacompat.reference.removals",  # KIP-896 facts: read when a sent request meets a close
        "kafkacompat.protocol.removals",
        "kafkacompat.protocol.error_table",  # read when a reply carries an error
        "kafkacompat.negotiation.sasl_exchange",  # SASL: read when a connection logs in
        "kafkacompat.protocol.messages.sasl_handshake",
        "kafkacompat.protocol.messages.sasl_authenticate",
        "kafkacompat.connection.sasl",
        "kafkacompat.connection.sasl_mechanisms",
        "kafkacompat.negotiation.feature_gates",  # read on the first gated version pick
        "kafkacompat.negotiation.version_policy",  # read on the first version pick: a handshake makes none
        "kafkacompat.connection._request_pipeline",  # made by the first request
        "kafkacompat.negotiation.capability_changes",  # read on a reconnect
        "kafkacompat.reference.api_names",
        "kafkacompat.negotiation.handshake.identity",  # KIP-1242: the cluster layer's identity and memory
        "kafkacompat.negotiation.peer_kind",  # a first contact that is not Kafka: naming it
        "kafkacompat.negotiation.handshake.legacy",  # pre-0.10 brokers only: the probe and the check
        "kafkacompat.negotiation.handshake.legacy_probe",
        "kafkacompat.negotiation.features",
        "kafkacompat.protocol._native",  # the native reader: loaded by the first decode past the handshake
        "kafkacompat.protocol.messages.api_keys",  # the ApiKey enum: the connection kit reads plain ints
        "kafkacompat.connection.security",  # TLS and SASL settings: a plaintext connection has none
        "kafkacompat.negotiation.coordinators",
        "kafkacompat.transport.cluster",
        "kafkacompat.cluster.core",
        "kafkacompat.aio.cluster",
        "tenacity",
        "uuid",  # with platform: only messages with UUID fields need it
        "platform",
        "pathlib",  # TLS file paths are annotations only
        "ipaddress",  # a dotted quad is checked without it; IPv6 literals still load it
    }
)


def added_modules(driver: str, host: str, port: int) -> set[str]:
    """The modules ``driver``'s connection to ``host:port`` loads beyond its runtime."""
    program = "\n".join(
        [
            "import json, sys",
            f"HOST, PORT = {host!r}, {port}",
            RUNTIME[driver],
            "before = set(sys.modules)",
            DRIVER[driver],
            "print(json.dumps(sorted(set(sys.modules) - before)))",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def ours(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.partition(".")[0] == "kafkacompat")
