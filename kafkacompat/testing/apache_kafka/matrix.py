"""The release matrix: every Apache Kafka minor from 0.10.0 to 4.4, for real, against what kafkacompat holds.

``python -m kafkacompat.testing.apache_kafka.matrix [--out DIR] [RELEASE ...]``
runs the last patch release of each minor (``LAST_PATCHES``) in every mode it
has (``modes_of``), one cluster at a time: one broker, plus one controller in
``kraft-split``.  For each it records, as JSON in ``DIR`` (one file per
release and mode), how the start went and the raw ApiVersions answer at every
request version v0 to v5 of the broker and, in KRaft, of the controller
(``raw_probe``): the bytes, and the ranges and features read from them, which
are the supported and finalized features right after format.  It prints, per
release and mode: whether it started, in how long, and every difference
between the real answer and kafkacompat's release table
(``reference.releases``) and emulator profile (``testing.emulator``); a
release that cannot run says why.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from kafkacompat.errors import BrokerStartError, EmulatorConfigError
from kafkacompat.testing.apache_kafka.jars import parse_release
from kafkacompat.testing.apache_kafka.launcher import MODES, ApacheKafka, modes_of
from kafkacompat.testing.apache_kafka.matrix_checks import (
    SECURED_USERS,
    emulator_differences,
    guess_differences,
    removal_differences,
    secured_logins,
)
from kafkacompat.testing.apache_kafka.matrix_probes import (
    controller_metadata,
    feature_upgrades,
    inspect_outputs,
    removed_versions,
)
from kafkacompat.testing.apache_kafka.raw_probe import ask_api_versions

__all__ = [
    "LAST_PATCHES",
    "best_answer",
    "differences",
    "measured_defaults",
    "minor_of",
    "node_kind",
    "run_matrix",
]

#: The last patch of every minor release on Maven Central when this was written.
LAST_PATCHES = (
    "0.10.0.1", "0.10.1.1", "0.10.2.2", "0.11.0.3", "1.0.2", "1.1.1", "2.0.1", "2.1.1", "2.2.2", "2.3.1",
    "2.4.1", "2.5.1", "2.6.3", "2.7.2", "2.8.2", "3.0.2", "3.1.2", "3.2.3", "3.3.2", "3.4.1", "3.5.2",
    "3.6.2", "3.7.2", "3.8.1", "3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0",
)  # fmt: skip
_EXCEPTION = re.compile(r"\b[\w.$]+(?:Exception|Error)\b(?::.*)?$")
_NO_EXCEPTION = "no exception in its output"
REQUEST_VERSIONS = range(6)  # ApiVersions v0 to v5: v5 is one no release knows yet


def minor_of(release: str) -> str:
    """``"0.10.2.2"`` -> ``"0.10.2"``, ``"3.9.2"`` -> ``"3.9"``: the name the release table uses."""
    parts = release.split(".")
    return ".".join(parts[:3] if parts[0] == "0" else parts[:2])


def node_kind(mode: str, role: str) -> str:
    """The release-table kind of a node: zk-broker, kraft-broker or kraft-controller."""
    if mode == "zookeeper":
        return "zk-broker"
    return "kraft-controller" if role == "controller" else "kraft-broker"


def _answers(host: str, port: int) -> dict[str, Any]:
    return {f"v{version}": ask_api_versions(host, port, version) for version in REQUEST_VERSIONS}


def _cluster(release: str, mode: str, secured: bool) -> ApacheKafka:
    """One broker (and one controller in kraft-split), with SCRAM and SSL listeners when ``secured``."""
    version, users = parse_release(release), None
    if secured and version >= (0, 10, 2) and (mode == "zookeeper" or version >= (3, 5)):
        users = dict(SECURED_USERS)
    return ApacheKafka(
        release, mode=mode, brokers=1, startup_timeout=240.0, sasl_scram_users=users, ssl=secured
    )


def _start(release: str, mode: str, record: dict[str, Any]) -> ApacheKafka | None:
    """The started cluster, secured if it can be; ``record`` says how the start went."""
    try:
        kafka = _cluster(release, mode, secured=True)
        kafka.start()
        return kafka
    except BrokerStartError as exc:  # a cluster this release cannot run, or the secured listeners
        first = exc
    record["secured_start_error"] = str(first).splitlines()[0][:400]
    try:
        kafka = _cluster(release, mode, secured=False)
        kafka.start()
        return kafka
    except BrokerStartError as exc:
        record["error"] = str(exc).splitlines()[0][:600]
        record["output"] = str(exc)[-3000:]
        return None


def record_release(release: str, mode: str) -> dict[str, Any]:
    """Start ``release`` in ``mode``, ask it everything the matrix records, stop it: the record."""
    record: dict[str, Any] = {"release": release, "mode": mode, "started": False}
    kafka = _start(release, mode, record)
    if kafka is None:
        return record
    try:
        record.update(
            artifact=kafka.artifact,
            java=kafka.java_feature,
            started=True,
            startup_seconds=round(kafka.startup_seconds or 0, 1),
        )
        _, host, port = kafka.broker_endpoints[0]
        record["broker"] = _answers(host, port)
        if kafka.controller_endpoints:
            _, chost, cport = kafka.controller_endpoints[0]
            record["controller"] = _answers(chost, cport)
            listed = (best_answer(record["controller"]) or {"apis": {}})["apis"].get("3")
            if listed is not None:  # 2.8's controller still lists Metadata
                record["controller_metadata"] = controller_metadata(chost, cport, listed[1])
        if parse_release(release) >= (4,):
            record["removed_versions"] = removed_versions(host, port)
        record["inspect"] = inspect_outputs(kafka)
        record["secured"] = secured_logins(kafka)
        if mode != "zookeeper":
            record["features"] = feature_upgrades(kafka)
    finally:
        kafka.stop()
    return record


def best_answer(answers: dict[str, Any]) -> dict[str, Any] | None:
    """The fullest answer: the highest request version answered without error."""
    for version in reversed(REQUEST_VERSIONS):
        answer = answers.get(f"v{version}", {})
        decoded = answer.get("decoded")
        if decoded is not None and decoded["error_code"] == 0 and answer.get("decoded_as") == min(version, 4):
            return dict(decoded)
    return None


def differences(release: str, kind: str, answer: dict[str, Any]) -> list[str]:
    """Every API range in which a real answer differs from the release table's entry for ``release``.

    The features and everything else the node answers are held to the emulator
    on the wire (``matrix_checks.emulator_differences``).
    """
    from kafkacompat.reference.api_names import API_NAMES
    from kafkacompat.testing.emulator.profile import profile_for

    try:
        profile = profile_for(minor_of(release), kind)
    except EmulatorConfigError:
        return [f"no {kind} profile for {minor_of(release)} in the release table"]
    found = []
    real = {int(key): tuple(value) for key, value in answer["apis"].items()}
    held = {key: (r.lowest, r.highest) for key, r in profile.apis.items()}
    for key in sorted(set(real) | set(held)):
        if real.get(key) != held.get(key):
            name = API_NAMES.get(key, "?")
            found.append(f"{name}({key}): real {_range(real.get(key))}, table {_range(held.get(key))}")
    return found


def _range(versions: tuple[int, ...] | None) -> str:
    return "absent" if versions is None else f"{versions[0]}-{versions[1]}"


def failure_cause(record: dict[str, Any]) -> str:
    """The first exception a node that did not start printed (its class and message)."""
    for line in record.get("output", "").splitlines():
        match = _EXCEPTION.search(line)
        if match and not line.lstrip().startswith("at "):
            return match.group(0)[:300]
    return _NO_EXCEPTION


def summarize(record: dict[str, Any], *, emulator: bool = True) -> list[str]:
    """The lines the matrix prints for one record: the start, then every difference from the model."""
    head = f"{record['release']:>9} {record['mode']:<15}"
    if not record["started"]:
        cause = failure_cause(record)  # the node's exception; a refused cluster's cause is its error
        return [f"{head} did not start: {record.get('error', '?')}"] + (
            [f"    cause: {cause}"] if cause != _NO_EXCEPTION else []
        )
    java = f" on Java {record['java']}" if record.get("java") else ""
    lines = [f"{head} started in {record['startup_seconds']:.1f}s{java}"]
    if record.get("secured_start_error"):
        lines.append(f"    without SCRAM/SSL listeners: {record['secured_start_error']}")
    failed_logins = {k: v for k, v in record.get("secured", {}).items() if v != "ok"}
    if failed_logins:
        lines.append(f"    secured listeners: {failed_logins}")
    minor = minor_of(record["release"])
    for role in ("broker", "controller"):
        if role not in record:
            continue
        kind = node_kind(record["mode"], role)
        answer = best_answer(record[role])
        if answer is None:
            lines.append(f"    {role}: no ApiVersions answer read without error")
            continue
        found = differences(record["release"], kind, answer)
        if emulator and record["mode"] != "kraft-combined":  # combined: test_emulator_matches_real
            found += emulator_differences(minor, kind, record[role])
        if role == "broker" and "removed_versions" in record:
            found += removal_differences(minor, record["removed_versions"], answer["apis"])
        if record["mode"] != "kraft-combined" and "inspect" in record:
            found += guess_differences(minor, kind, record["inspect"].get(role))
        lines.append(f"    {role} ({kind}): {len(found)} difference(s) from the model")
        lines += [f"      {line}" for line in found]
    return lines


def run_matrix(releases: list[str], out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for release in releases:
        for mode in modes_of(release):
            record = record_release(release, mode)
            path = out / f"{release}-{mode}.json"
            path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            print("\n".join(summarize(record)), flush=True)
    return 0


_MEASURED_NOTE = (
    " Entries with a 'measured' field are the ApiVersions answer of the real release "
    "(make real-kafka, tests/data/real_kafka); the others stay derived."
)
_TABLE_LAST = (4, 2)  # newer releases belong to the newer table generation


def _version(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def measured_tables(
    records: list[dict[str, Any]], last: tuple[int, ...] | None = _TABLE_LAST
) -> dict[tuple[str, str], tuple[dict[str, Any], str]]:
    """(minor, kind) -> (the real answer, where it came from), preferring the split modes' pure nodes.

    Releases after ``last`` are left out (None: none is): releases.json holds up to 4.2, the
    newer table generation (releases-4.3-4.4.json) the rest.
    """
    found: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
    preference = {"zookeeper": 0, "kraft-split": 0, "kraft-combined": 1}
    ranked = sorted(records, key=lambda r: (preference[r["mode"]], _version(r["release"])))
    for record in ranked:
        if not record["started"] or (last is not None and _version(minor_of(record["release"])) > last):
            continue
        for role in ("broker", "controller"):
            answer = best_answer(record.get(role, {}))
            key = (minor_of(record["release"]), node_kind(record["mode"], role))
            if answer is not None and key not in found:
                found[key] = (answer, f"Apache Kafka {record['release']} ({record['mode']} {role})")
    return found


def apply_to_release_table(records: list[dict[str, Any]], table: Path) -> list[str]:
    """Replace the derived API ranges in ``table`` (releases.json) by the measured ones; what changed."""
    data = json.loads(table.read_text(encoding="utf-8"))
    entries = {(entry["release"], entry["kind"]): entry for entry in data["releases"]}
    changed = []
    for (minor, kind), (answer, origin) in sorted(measured_tables(records).items()):
        apis = {
            str(key): {"min": low, "max": high}
            for key, (low, high) in sorted((int(k), v) for k, v in answer["apis"].items())
        }
        entry = entries.get((minor, kind))
        if entry is None:
            entry = {"release": minor, "kind": kind, "apis": {}}
            data["releases"].append(entry)
        if entry["apis"] != apis:
            changed.append(f"{minor} {kind}: replaced by {origin}")
        entry["apis"] = apis
        entry["measured"] = origin
    if _MEASURED_NOTE not in data["source"]:
        data["source"] += _MEASURED_NOTE
    table.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return changed


def measured_defaults(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """minor -> the features a KRaft broker of it finalized right after format (split mode's broker).

    From the fullest ApiVersions answer without error (v4 lists every feature, v3 only
    metadata.version).  kraft.version is not among them: a static quorum
    (controller.quorum.voters, as the launcher writes) is formatted at level 0, which is not
    listed (after an upgrade to 1, 3.9 and 4.1-4.4 list it; 4.0.2 does not).  Releases before
    3.3 finalize nothing (metadata.version came with KIP-778).
    """
    found: dict[str, dict[str, int]] = {}
    for record in sorted(records, key=lambda r: _version(r["release"])):
        if record["mode"] != "kraft-split" or not record["started"]:
            continue
        answer = best_answer(record["broker"])
        if answer is not None and answer["finalized_features"]:
            levels = {name: value[1] for name, value in sorted(answer["finalized_features"].items())}
            found[minor_of(record["release"])] = levels
    return found


_DEFAULTS_SOURCE = (
    "Measured: the features a broker of each release finalized right after format "
    "(kafka-storage format with a fresh cluster id and a static controller quorum; "
    "ApiVersions of the broker of make real-kafka's kraft-split run, tests/data/real_kafka). "
    "kraft.version is 0 with a static quorum, so not listed. Releases listed in "
    "features-4.4.json's defaults are left to it."
)


def apply_defaults(records: list[dict[str, Any]], path: Path, known: set[str]) -> list[str]:
    """Write the measured defaults of every release not in ``known`` to ``path`` (a feature input)."""
    defaults = {minor: levels for minor, levels in measured_defaults(records).items() if minor not in known}
    document = {"source": _DEFAULTS_SOURCE, "features": {}, "defaults": defaults}
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return [f"{minor}: {levels}" for minor, levels in defaults.items()]


def start_table(records: list[dict[str, Any]]) -> list[str]:
    """The start times as a Markdown table (docs/testing.md): release, artifact, Java, one column a mode."""
    by_release: dict[str, dict[str, dict[str, Any]]] = {}
    for record in records:
        by_release.setdefault(record["release"], {})[record["mode"]] = record
    lines = [
        "| release | artifact | Java | zookeeper | kraft-combined | kraft-split |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for release in sorted(by_release, key=_version):
        modes = by_release[release]
        first = next(iter(modes.values()))
        java = sorted({str(r["java"]) for r in modes.values() if r.get("java")})
        cells = []
        for mode in MODES:
            found = modes.get(mode)
            if found is None:
                cells.append("-")
            elif found["started"]:
                cells.append(f"{found['startup_seconds']:.1f} s")
            else:
                cells.append("refused" if "can run only" in found.get("error", "") else "did not start")
        artifact = str(first.get("artifact", "")).split(":")[1] if first.get("artifact") else "?"
        lines.append(f"| {release} | {artifact} | {', '.join(java) or '-'} | " + " | ".join(cells) + " |")
    return lines


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(out.glob("*.json"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafkacompat.testing.apache_kafka.matrix", description=__doc__
    )
    parser.add_argument(
        "releases", nargs="*", help=f"releases to run (default: {len(LAST_PATCHES)} last patches)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("tests/data/real_kafka"), help="where the records go"
    )
    parser.add_argument(
        "--summary", action="store_true", help="print the summary of the records in --out only"
    )
    parser.add_argument(
        "--no-emulator", action="store_true", help="in --summary, leave out the emulator's answers"
    )
    parser.add_argument(
        "--apply-to", type=Path, metavar="RELEASES_JSON",
        help="replace the release table's ranges (vendor/kafka-protocol/releases.json) by the recorded ones",
    )  # fmt: skip
    parser.add_argument(
        "--apply-defaults-to", type=Path, metavar="FEATURES_JSON",
        help="write the features each KRaft release finalizes after format (vendor/kafka-protocol/"
        "features-measured.json)",
    )  # fmt: skip
    parser.add_argument(
        "--start-table", action="store_true", help="print the start times of --out as Markdown"
    )
    args = parser.parse_args(argv)
    if args.start_table:
        print("\n".join(start_table(_records(args.out))))
        return 0
    if args.apply_defaults_to is not None:
        known = set(json.loads((args.apply_defaults_to.parent / "features-4.4.json").read_text())["defaults"])
        print("\n".join(apply_defaults(_records(args.out), args.apply_defaults_to, known)))
        return 0
    if args.apply_to is not None:
        print("\n".join(apply_to_release_table(_records(args.out), args.apply_to)))
        return 0
    if args.summary:
        for record in _records(args.out):
            print("\n".join(summarize(record, emulator=not args.no_emulator)), flush=True)
        return 0
    return run_matrix(args.releases or list(LAST_PATCHES), args.out)


if __name__ == "__main__":
    sys.exit(main())
