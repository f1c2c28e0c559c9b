"""What the release matrix asks a cluster beyond ApiVersions: feature upgrades, removed versions, inspect.

- ``feature_upgrades``: each feature the broker supports above its finalized
  level is upgraded, one at a time (metadata.version first, the others by
  name), to the highest level the broker supports, through kafkacompat's own
  ``features upgrade`` (the command line, run as users run it); after each,
  the broker's raw ApiVersions answer says what is finalized now and at which
  epoch.  A refusal is recorded as what the release allows.
- ``removed_versions``: every version Kafka 4.x removed
  (``reference.removals``) is sent, as a request with default fields, on a
  fresh connection; the record says whether the broker closed the
  connection, stayed silent, or answered (and with which error code).
- ``controller_metadata``: what a controller that lists Metadata (2.8's)
  answers to it, at v0 to its highest version, its own port as a placeholder.
- ``inspect_outputs``: ``kafkacompat inspect``, text and JSON, with the
  cluster's ports and cluster id replaced by stable placeholders so the
  committed record does not change from run to run.

The command line is run as a child process (``python -m kafkacompat.cli``):
the testing kit sits below the CLI and does not import it.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
from typing import Any

from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol import framing, messages
from kafkacompat.reference.removals import REMOVALS
from kafkacompat.testing.apache_kafka.launcher import ApacheKafka
from kafkacompat.testing.apache_kafka.raw_probe import ask_api_versions, metadata

__all__ = [
    "cli",
    "controller_metadata",
    "feature_upgrades",
    "inspect_outputs",
    "normalize",
    "removed_versions",
    "send_at_version",
]

_CLI_TIMEOUT = 120.0
_CLI_OPTIONS = ("--timeout", "5", "--retries", "2")
_READ_LIMIT = 1 << 20
# Upgraded first: the other features' levels may require a metadata.version.
_FIRST = "metadata.version"


def cli(*argv: str) -> dict[str, Any]:
    """``python -m kafkacompat.cli ARGV``: its exit code and what it printed."""
    command = [sys.executable, "-m", "kafkacompat.cli", *argv]
    try:
        done = subprocess.run(
            command, capture_output=True, timeout=_CLI_TIMEOUT, check=False, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return {"exit": None, "stdout": "", "stderr": f"timed out after {_CLI_TIMEOUT:.0f}s"}
    return {
        "exit": done.returncode,
        "stdout": done.stdout.decode(errors="replace"),
        "stderr": done.stderr.decode(errors="replace"),
    }


def normalize(text: str, kafka: ApacheKafka) -> str:
    """``text`` with the cluster's ports (``<port:NAME>``) and cluster id (``<cluster-id>``) made stable."""
    names = {}
    for node in kafka.nodes:
        for label, port in (
            (node.name, node.port),
            (f"{node.name}-controller", node.controller_port),
            (f"{node.name}-sasl", node.sasl_port),
            (f"{node.name}-ssl", node.ssl_port),
        ):
            if port is not None:
                names[str(port)] = f"<port:{label}>"
    for number in sorted(names, key=len, reverse=True):
        placeholder = names[number]
        text = text.replace(f":{number}", f":{placeholder}")
        text = text.replace(f'"port": {number}', f'"port": "{placeholder}"')
    if kafka.cluster_id:
        text = text.replace(kafka.cluster_id, "<cluster-id>")
    return text


def inspect_outputs(kafka: ApacheKafka) -> dict[str, Any]:
    """inspect of the bootstrap broker (text and JSON) and, in KRaft, of the controller."""
    found: dict[str, Any] = {}
    targets = [("broker", "--bootstrap-server", kafka.bootstrap)]
    if kafka.bootstrap_controller is not None:
        targets.append(("controller", "--bootstrap-controller", kafka.bootstrap_controller))
    for role, flag, address in targets:
        text = cli("inspect", flag, address, *_CLI_OPTIONS)
        document = cli("inspect", flag, address, "--format", "json", *_CLI_OPTIONS)
        parsed: Any = None
        if document["exit"] == 0:
            try:
                parsed = json.loads(normalize(document["stdout"], kafka))
            except ValueError:
                parsed = None
        found[role] = {
            "exit": text["exit"],
            "text": normalize(text["stdout"], kafka),
            "stderr": normalize(text["stderr"], kafka)[-2000:],
            "json": parsed,
        }
    return found


def _features_now(host: str, port: int) -> dict[str, Any] | None:
    """Supported and finalized features from ApiVersions v4 (v3 lists metadata.version alone), else v3."""
    for version in (4, 3):
        decoded = ask_api_versions(host, port, version).get("decoded")
        if decoded is not None and decoded["error_code"] == 0:
            break
    else:
        return None
    return {
        "supported": decoded["supported_features"],
        "finalized": {name: levels[1] for name, levels in decoded["finalized_features"].items()},
        "epoch": decoded["finalized_features_epoch"],
    }


def feature_upgrades(kafka: ApacheKafka) -> dict[str, Any]:
    """The features right after format, then after each upgrade to the highest supported level."""
    _, host, port = kafka.broker_endpoints[0]
    after_format = _features_now(host, port)
    steps: list[dict[str, Any]] = []
    if after_format is None:
        return {"after_format": None, "upgrades": steps}
    wanted = {name: levels[1] for name, levels in after_format["supported"].items()}
    for name in sorted(wanted, key=lambda feature: (feature != _FIRST, feature)):
        current = _features_now(host, port) or after_format
        if wanted[name] <= current["finalized"].get(name, 0):
            continue
        command = ("features", "upgrade", kafka.bootstrap, "--feature", f"{name}={wanted[name]}")
        ran = cli(*command, *_CLI_OPTIONS)
        time.sleep(0.5)  # the broker applies the new level from the metadata log
        steps.append(
            {
                "feature": name,
                "to": wanted[name],
                "exit": ran["exit"],
                "output": (ran["stdout"] + ran["stderr"]).strip()[-1000:],
                "after": _features_now(host, port),
            }
        )
    return {"after_format": after_format, "upgrades": steps}


def send_at_version(host: str, port: int, api_key: int, version: int, timeout: float = 3.0) -> dict[str, Any]:
    """One request of ``api_key`` at ``version`` with default fields: closed, silent, or answered."""
    try:
        request = getattr(messages, messages.CLASS_BY_KEY[(api_key, "request")])()
        frame = framing.encode_request(request, version, 0x4B43, "kafkacompat-matrix")
    except (KeyError, KafkaCompatError) as exc:
        return {"outcome": "not sent", "detail": f"the codec cannot write it: {exc}"}
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        return {"outcome": "refused", "detail": str(exc)}
    with sock:
        sock.sendall(frame)
        received = b""
        deadline = time.monotonic() + timeout
        while True:
            if len(received) >= 4:
                (size,) = struct.unpack(">i", received[:4])
                if 0 <= size <= _READ_LIMIT and len(received) >= 4 + size:
                    return {"outcome": "answered", **_error_code(received[4 : 4 + size], api_key, version)}
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {"outcome": "silent"}
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                return {"outcome": "silent"}
            except OSError as exc:
                return {"outcome": "closed", "detail": type(exc).__name__}
            if not chunk:
                return {"outcome": "closed"}
            received += chunk


def _error_code(frame: bytes, api_key: int, version: int) -> dict[str, Any]:
    try:
        response_type = getattr(messages, messages.CLASS_BY_KEY[(api_key, "response")])
        _, response = framing.decode_response(frame, response_type, version)
    except (KeyError, KafkaCompatError) as exc:
        return {"raw": frame.hex()[:400], "detail": f"not read: {exc}"}
    return {"error_code": getattr(response, "error_code", None)}


def removed_versions(host: str, port: int) -> dict[str, dict[str, Any]]:
    """What the node at ``host:port`` does with every version Kafka 4.x removed, by ``"key:version"``."""
    found = {}
    for api_key, fact in sorted(REMOVALS.items()):
        for version in range(fact.lowest, fact.highest + 1):
            found[f"{api_key}:{version}"] = send_at_version(host, port, api_key, version)
    return found


def controller_metadata(host: str, port: int, highest: int) -> dict[str, Any]:
    """Metadata (no topics asked) from a controller listener at v0-``highest``, ports as placeholders."""
    found: dict[str, Any] = {}
    for version in range(highest + 1):
        try:
            answer = metadata(host, port, version, 0x4D00 + version, 5.0)
        except (OSError, KafkaCompatError) as exc:
            found[f"v{version}"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        found[f"v{version}"] = {
            "brokers": [
                {
                    "node_id": b.node_id,
                    "host": b.host,
                    "port": "<this listener>" if b.port == port else b.port,
                }
                for b in answer.brokers
            ],
            "controller_id": answer.controller_id,
            "reports_cluster_id": answer.cluster_id is not None,
            "topics": len(answer.topics),
        }
    return found
