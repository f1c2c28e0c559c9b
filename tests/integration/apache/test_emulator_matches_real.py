"""Each emulated release answers the raw ApiVersions battery (v0 to v5) as the real release did.

The real answers are the matrix's records (tests/data/real_kafka, ``make
real-kafka``); no JVM runs here.  For every release up to 4.4 and every node
kind the matrix ran, the emulator of that release and kind is asked the same
six requests: the same outcome (answered, closed, silent), the same error
code, API ranges and features.  The finalized-features epoch is an offset of
the real metadata log: only whether one is reported is compared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.testing.apache_kafka.matrix import REQUEST_VERSIONS, minor_of, node_kind
from kafkacompat.testing.apache_kafka.matrix_checks import comparable
from kafkacompat.testing.apache_kafka.matrix_probes import controller_metadata
from kafkacompat.testing.apache_kafka.raw_probe import ask_api_versions
from kafkacompat.testing.emulator import ThreadedCluster

pytestmark = pytest.mark.broker

DATA = Path(__file__).resolve().parents[2] / "data" / "real_kafka"
LAST_EMULATED = (4, 4)


def _records() -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(DATA.glob("*.json"))]


def _cases() -> list[tuple[str, str, dict[str, Any]]]:
    """Every pure node (a ZooKeeper broker, a split broker or controller) of a release up to 4.4,
    and 2.8's combined node."""
    cases = []
    records = _records()
    split = {r["release"] for r in records if r["mode"] == "kraft-split" and r["started"]}
    for record in records:
        minor = minor_of(record["release"])
        if not record["started"] or tuple(map(int, minor.split("."))) > LAST_EMULATED:
            continue
        # A combined node's listeners are compared with the split ones' below; 2.8 has no split
        # cluster (its KRaft runs only a sole broker-controller), so its combined node is the case.
        if record["mode"] == "kraft-combined" and record["release"] in split:
            continue
        for role in ("broker", "controller"):
            if role in record:
                cases.append(
                    (
                        f"{record['release']}-{record['mode']}-{role}",
                        node_kind(record["mode"], role),
                        record[role],
                    )
                )
    return cases


CASES = _cases()


def test_there_are_real_answers_to_hold_the_emulator_to() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize(("label", "kind", "real"), CASES, ids=[case[0] for case in CASES])
def test_the_emulator_answers_as_the_real_release(label: str, kind: str, real: dict[str, Any]) -> None:
    minor = minor_of(label.split("-", 1)[0])
    cluster = ThreadedCluster(f"{minor}/{kind}").start()
    try:
        host, port = cluster.bootstrap.rsplit(":", 1)
        for version in REQUEST_VERSIONS:
            emulated = ask_api_versions(host, int(port), version, timeout=2.0)
            assert comparable(emulated) == comparable(real[f"v{version}"]), f"ApiVersions v{version}"
    finally:
        cluster.close()


def _apis(record: dict[str, Any], role: str) -> dict[str, Any]:
    return dict(record[role]["v3"]["decoded"]["apis"])


def test_a_combined_node_answers_as_the_split_nodes_but_3_0_to_3_2_hide_describe_quorum() -> None:
    """The emulator has no combined kind: the real combined listeners are the split ones' tables."""
    records = {(r["release"], r["mode"]): r for r in _records() if r["started"]}
    compared = 0
    for (release, mode), combined in sorted(records.items()):
        split = records.get((release, "kraft-split"))
        if mode != "kraft-combined" or split is None:
            continue
        compared += 1
        assert _apis(combined, "controller") == _apis(split, "controller"), release
        broker = _apis(split, "broker")
        if (3, 0) <= tuple(map(int, release.split(".")))[:2] <= (3, 2):
            del broker["55"]  # DescribeQuorum: only a broker-only node lists it there
        assert _apis(combined, "broker") == broker, release
    assert compared >= 15


EARLY_CONTROLLERS = [r for r in _records() if "controller_metadata" in r]


def test_the_early_controller_that_lists_metadata_is_recorded() -> None:
    assert [r["release"] for r in EARLY_CONTROLLERS] == ["2.8.2"]  # 3.0 on: no Metadata on controllers


@pytest.mark.parametrize("record", EARLY_CONTROLLERS, ids=lambda r: f"{r['release']}-{r['mode']}")
def test_an_emulated_2_8_controller_answers_metadata_as_the_real_one(record: dict[str, Any]) -> None:
    """Real 2.8.2: its voters as the brokers (localhost, the controller port), its id as controller."""
    cluster = ThreadedCluster(f"{minor_of(record['release'])}/kraft-controller").start()
    try:
        host, port = cluster.bootstrap.rsplit(":", 1)
        real = record["controller_metadata"]
        highest = max(int(version[1:]) for version in real)
        assert controller_metadata(host, int(port), highest) == real
    finally:
        cluster.close()
