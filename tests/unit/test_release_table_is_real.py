"""The release table holds what real Apache Kafka releases answered (tests/data/real_kafka, make real-kafka).

Every release up to 4.4 that ran in the matrix: its zk-broker, kraft-broker and
kraft-controller API ranges in ``reference.RELEASES`` are exactly the ones the
real broker or controller advertised, and the entry says where they came from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkacompat.reference import RELEASES
from kafkacompat.testing.apache_kafka.matrix import measured_tables

DATA = Path(__file__).resolve().parents[1] / "data" / "real_kafka"
VENDORED = Path(__file__).resolve().parents[2] / "vendor" / "kafka-protocol" / "releases.json"


def _records() -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(DATA.glob("*.json"))]


MEASURED = measured_tables(_records(), last=None)  # 4.3 and 4.4 too (releases-4.3-4.4.json)
IN_RELEASES_JSON = measured_tables(_records())


def test_the_matrix_covers_every_kind_it_can() -> None:
    kinds = {kind for _, kind in MEASURED}
    assert kinds == {"zk-broker", "kraft-broker", "kraft-controller"}
    assert len(MEASURED) >= 30
    assert {("4.3", "kraft-broker"), ("4.4", "kraft-controller")} <= set(MEASURED)


@pytest.mark.parametrize(("minor", "kind"), sorted(MEASURED), ids=lambda value: str(value))
def test_the_table_holds_the_real_answer(minor: str, kind: str) -> None:
    answer, _origin = MEASURED[(minor, kind)]
    real = {int(key): (low, high) for key, (low, high) in answer["apis"].items()}
    (held,) = [p.apis for p in RELEASES if (p.release, p.kind) == (minor, kind)]
    assert dict(held) == real


def test_measured_entries_name_their_origin() -> None:
    entries = json.loads(VENDORED.read_text(encoding="utf-8"))["releases"]
    marked = {(e["release"], e["kind"]): e.get("measured") for e in entries}
    for key, (_answer, origin) in IN_RELEASES_JSON.items():
        assert marked[key] == origin
