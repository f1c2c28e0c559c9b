"""The release matrix's comparisons of a real node with kafkacompat's model, and its secured-listener check.

- ``emulator_differences``: the emulator of the same release and node kind is
  asked the same raw ApiVersions battery (v0-v5) on the wire; every field
  that differs (outcome, error code, API ranges, supported and finalized
  features, whether an epoch is reported) is one line.  The epoch itself is
  an offset of the real metadata log and is not compared.
- ``removal_differences``: what a real 4.x broker did with each removed
  version against ``protocol.removals.refused_by`` (closed where the removal
  table says refused, answered elsewhere).
- ``guess_differences``: inspect's release guess must name the release and
  node kind exactly, and each evidence line naming an API must cite the range
  the node advertised.
- ``secured_logins``: both SCRAM mechanisms and TLS verification through the
  blocking driver, on the SASL and SSL listeners the matrix starts.
"""

from __future__ import annotations

from typing import Any

from kafkacompat.blocking.connection import open_blocking_connection
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.security import SaslConfig, Secret, TlsConfig
from kafkacompat.errors import EmulatorConfigError, KafkaCompatError
from kafkacompat.protocol.messages import MetadataRequest
from kafkacompat.protocol.removals import refused_by
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.reference.api_names import API_NAMES
from kafkacompat.testing.apache_kafka.launcher import ApacheKafka
from kafkacompat.testing.apache_kafka.raw_probe import ask_api_versions
from kafkacompat.testing.apache_kafka.security import SCRAM_MECHANISMS

__all__ = [
    "SECURED_USERS",
    "comparable",
    "emulator_differences",
    "guess_differences",
    "removal_differences",
    "secured_logins",
]

SECURED_USERS = {"matrix": "matrix-secret"}
_REQUEST_VERSIONS = range(6)


def comparable(answer: dict[str, Any]) -> dict[str, Any]:
    """The parts of one raw ApiVersions answer the emulator must reproduce."""
    decoded = answer.get("decoded")
    if decoded is None:
        return {"outcome": answer["outcome"]}
    return {
        "outcome": answer["outcome"],
        "decoded_as": answer.get("decoded_as"),
        "error_code": decoded["error_code"],
        "apis": decoded["apis"],
        "supported_features": decoded["supported_features"],
        "finalized_features": decoded["finalized_features"],
        "reports_epoch": decoded["finalized_features_epoch"] >= 0,
    }


def emulator_differences(minor: str, kind: str, answers: dict[str, Any]) -> list[str]:
    """Every field in which the emulated ``minor``/``kind`` answers the battery unlike the real node."""
    from kafkacompat.testing.emulator import ThreadedCluster

    try:
        cluster = ThreadedCluster(f"{minor}/{kind}").start()
    except EmulatorConfigError as exc:
        return [f"no emulator for {minor} {kind}: {exc}"]
    found = []
    try:
        host, port = cluster.bootstrap.rsplit(":", 1)
        for version in _REQUEST_VERSIONS:
            real = comparable(answers.get(f"v{version}", {"outcome": "not asked"}))
            emulated = comparable(ask_api_versions(host, int(port), version, timeout=2.0))
            for field in sorted(set(real) | set(emulated)):
                if real.get(field) != emulated.get(field):
                    found.append(
                        f"emulator, ApiVersions v{version} {field}: real {_short(real.get(field))}, "
                        f"emulated {_short(emulated.get(field))}"
                    )
    finally:
        cluster.close()
    return found


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def removal_differences(
    minor: str, removed: dict[str, dict[str, Any]], advertised: dict[str, list[int]]
) -> list[str]:
    """Each removed version the real broker treated otherwise than the model says.

    The model: a version the removal table refuses, or one the broker does not
    advertise at all (Kafka closes on any version it cannot read), is closed;
    any other is answered.
    """
    found = []
    for probe, outcome in sorted(removed.items(), key=lambda item: tuple(map(int, item[0].split(":")))):
        api_key, version = map(int, probe.split(":"))
        low, high = advertised.get(str(api_key), (0, -1))
        refused = refused_by(minor, api_key, version) is not None or not low <= version <= high
        expected = "closed" if refused else "answered"
        if outcome["outcome"] != expected:
            name = API_NAMES.get(api_key, "?")
            detail = f" (error code {outcome['error_code']})" if outcome.get("error_code") is not None else ""
            found.append(f"removal table, {name}({api_key}) v{version}: real {outcome['outcome']}{detail}, "
                         f"table says {expected}")  # fmt: skip
    return found


def guess_differences(minor: str, kind: str, inspected: dict[str, Any] | None) -> list[str]:
    """The release guess of inspect's JSON: the exact release and kind, evidence citing advertised ranges."""
    document = (inspected or {}).get("json")
    if not document or not document.get("brokers"):
        return [f"release guess: inspect printed no JSON (exit {(inspected or {}).get('exit')})"]
    node = document["brokers"][0]
    guess = node["release_guess"]
    found = []
    # Exact, of the right kind, naming the release (with the releases of the same table, which
    # nothing on the wire tells apart: KRaft broker 3.3/3.4, KRaft controller 3.7/3.8).
    if (guess.get("relation"), guess.get("kind")) != ("exact", kind) or minor not in guess.get(
        "releases", []
    ):
        real = f"Kafka {minor} ({kind})"
        found.append(f"release guess: {guess['text']!r} ({guess.get('relation')}), real {real!r} (exact)")
    advertised = {
        a["api_key"]: str(VersionRange(a["broker_min"], a["broker_max"]))
        for a in node["apis"]
        if a["broker_min"] is not None
    }
    labels = {f"{name}({key})": key for key, name in API_NAMES.items()}
    for line in guess["evidence"]:
        label = line.split(" ", 1)[0].rstrip(":")
        key = labels.get(label)
        cited = (f"{label}: {advertised.get(key)} here", f"{label} {advertised.get(key)} ")
        if key is not None and key in advertised and not line.startswith(cited):
            found.append(f"release guess evidence cites no advertised range: {line!r} ({advertised[key]})")
    return found


def secured_logins(kafka: ApacheKafka) -> dict[str, str]:
    """``{"SCRAM-SHA-256": "ok" | the error, ..., "TLS": ...}`` through the blocking driver."""
    results: dict[str, str] = {}
    logins: list[tuple[str, str | None, ConnectionConfig]] = []
    if kafka.sasl_bootstrap is not None:
        for mechanism in SCRAM_MECHANISMS:
            ((user, password),) = SECURED_USERS.items()
            sasl = SaslConfig(mechanism, user, Secret(password))
            logins.append((mechanism, kafka.sasl_bootstrap, ConnectionConfig(sasl=sasl, connect_timeout=5.0)))
    if kafka.ssl_bootstrap is not None and kafka.ssl_ca_file is not None:
        tls = TlsConfig(ca_file=kafka.ssl_ca_file)
        logins.append(("TLS", kafka.ssl_bootstrap, ConnectionConfig(tls=tls, connect_timeout=5.0)))
    for label, address, config in logins:
        assert address is not None
        host, port = address.rsplit(":", 1)
        try:
            with open_blocking_connection(host, int(port), config, timeout=30.0) as conn:
                conn.request(MetadataRequest(topics=[]))
            results[label] = "ok"
        except KafkaCompatError as exc:
            results[label] = f"{type(exc).__name__}: {exc}"[:300]
    return results
