"""Real clients run an application's traffic against emulated releases, end to end.

Each library runs in its own process (``python -m kafkacompat.testing.client_traffic``),
since librdkafka aborts the process on some answers it does not expect; the steps
it printed say how far it got.  The emulated broker's log must show every request
answered: the emulator models or default-answers every API a release advertises.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest

from kafkacompat.testing import ThreadedCluster
from kafkacompat.testing.client_traffic import STEPS, read_report

Factory = Callable[..., ThreadedCluster]


def run_traffic(library: str, bootstrap: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "kafkacompat.testing.client_traffic", library, bootstrap, "traffic"],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return read_report(done.stdout, library)


@pytest.mark.parametrize("release", ["2.3", "3.9", "4.0/kraft-broker"])
@pytest.mark.parametrize("library", ["kafka-python", "aiokafka", "confluent-kafka"])
def test_a_client_gets_through_its_traffic(
    threaded_emulated_cluster: Factory, library: str, release: str
) -> None:
    cluster = threaded_emulated_cluster(release, brokers=1, topics={"traffic": 1})
    report = run_traffic(library, cluster.bootstrap)
    assert report["ok"], report
    assert [s["step"] for s in report["steps"]] == list(STEPS)  # type: ignore[attr-defined]
    log = list(cluster.requests)
    assert [r for r in log if not r.answered] == []
    used = {r.api_key for r in log}
    assert {0, 1, 3, 8, 9, 11, 14} <= used  # produce, fetch, metadata, commit, offsets, join, sync


def test_a_client_stops_where_the_release_lacks_the_api(threaded_emulated_cluster: Factory) -> None:
    cluster = threaded_emulated_cluster("1.0", brokers=1, topics={"traffic": 1})  # DeleteGroups is 1.1+
    report = run_traffic("kafka-python", cluster.bootstrap)
    failed = [s for s in report["steps"] if not s["ok"]]  # type: ignore[attr-defined]
    assert [s["step"] for s in failed] == ["delete-group"]
    assert "DeleteGroups" in failed[0]["error"]
    assert all(r.answered for r in cluster.requests)
