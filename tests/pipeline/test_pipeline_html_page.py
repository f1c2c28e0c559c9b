"""report.html: written next to the tables, with the counts, the heatmap and the bad records."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkacompat.pipeline.heatmap import COLOURS, HeatmapCell, render_heatmap
from kafkacompat.pipeline.report import TABLES, write_fleet_report
from tests.pipeline.conftest import BuiltFleet


@pytest.fixture(scope="module")
def written(fleet: BuiltFleet, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    out = tmp_path_factory.mktemp("report")
    counts = write_fleet_report(fleet.report, out)
    return out, counts


def test_every_table_is_written_as_parquet(written: tuple[Path, dict[str, int]], fleet: BuiltFleet) -> None:
    out, counts = written
    assert set(counts) == set(TABLES)
    for table in TABLES:
        assert list((out / table).glob("*.parquet")), table
        assert counts[table] == len(fleet.rows[table])


def test_the_page(written: tuple[Path, dict[str, int]], fleet: BuiltFleet) -> None:
    out, _ = written
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    svg = page[page.index("<svg") : page.index("</svg>")]
    cells = re.findall(r'<rect [^>]*class="(compatible|broken|unknown)"', svg)
    # The heat map is of what clients negotiate: a cluster of KRaft controllers alone is not in it.
    clusters = {r["cluster_id"] for r in fleet.rows["compatibility"]}
    assert clusters == {r["cluster_id"] for r in fleet.rows["latest"]} - {"edge-quorum-only"}
    clients = {(r["client"], r["client_version"]) for r in fleet.rows["compatibility"]}
    assert len(cells) == len(clusters) * len(clients)
    assert cells.count("broken") == sum(not r["compatible"] for r in fleet.rows["compatibility"])
    assert f'<td>bad snapshot lines</td><td class="num">{len(fleet.fixture.bad)}</td>' in page
    assert "edge-fenced" in page and "not json at all" in page


def test_heatmap_escapes_and_colours() -> None:
    svg = render_heatmap(["c<1>"], ["a&b", "z"], {("c<1>", "a&b"): HeatmapCell(False, ("Fetch",))})
    assert "c&lt;1&gt;" in svg and "a&amp;b" in svg and "broken: Fetch" in svg
    assert COLOURS["broken"] in svg and COLOURS["unknown"] in svg
