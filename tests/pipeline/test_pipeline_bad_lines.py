"""A bad line is named field by field, in the same words by every reader (the Spark reason stays)."""

from __future__ import annotations

import json

from kafkacompat.pipeline.bad_lines import bad_line, bad_record, explain_malformed, line_problems
from kafkacompat.pipeline.snapshot_format import MALFORMED, parse_snapshot_line

GOOD = {
    "schema": 1, "observed_at": "2026-01-02T03:04:05Z", "cluster_id": "c", "node_id": 1, "endpoint": "h:1",
    "api_versions": [], "supported_features": [], "finalized_features": [], "finalized_features_epoch": -1,
}


def test_the_fields_at_fault_are_named_with_their_values_in_the_format_s_order() -> None:
    line = json.dumps({**GOOD, "node_id": "one", "observed_at": "yesterday"})
    assert parse_snapshot_line(line) == (None, [MALFORMED])  # what Spark and the core agree on
    assert bad_line("snapshots", "fleet.jsonl", 3, line) == (
        "snapshot line 3 of fleet.jsonl: observed_at: not an RFC 3339 time ('yesterday'); "
        "node_id: not an integer ('one')"
    )
    assert explain_malformed(line) == (
        f"{MALFORMED}: observed_at: not an RFC 3339 time ('yesterday'); node_id: not an integer ('one')"
    )


def test_a_bad_time_alone_is_named_with_its_value_too() -> None:
    line = json.dumps({**GOOD, "observed_at": "2026-01-02 03:04"})
    assert line_problems(line) == ["observed_at: not an RFC 3339 time ('2026-01-02 03:04')"]


def test_a_good_line_has_no_problem_and_other_rules_keep_their_words() -> None:
    assert bad_line("snapshots", "f", 1, json.dumps(GOOD)) is None
    assert line_problems(json.dumps({**GOOD, "node_id": None})) == ["missing field node_id"]
    assert line_problems(json.dumps({**GOOD, "schema": 2})) == ["unknown schema version 2"]


def test_nested_fields_client_profiles_and_lines_that_are_not_objects() -> None:
    profile = json.dumps({"client": "x", "version": 3, "api_versions": [{"api_key": "a"}]})
    assert bad_line("clients", None, 7, profile) == (
        "client profile line 7: version: not a string (3); api_versions[0].api_key: not an integer ('a')"
    )
    assert line_problems("[1]") == ["not a JSON object ([1])"]
    assert line_problems("{nope")[0].startswith("not JSON (")
    long_value = json.dumps({**GOOD, "cluster_id": ["x" * 100]})
    assert line_problems(long_value) == ['cluster_id: not a string (["xxxxxxxxxxxxxxxxxxx...)']


def test_at_most_three_faults_are_listed() -> None:
    line = json.dumps({"schema": "1", "cluster_id": 2, "node_id": "n", "endpoint": 4, "observed_at": 5})
    assert bad_line("snapshots", "f", 1, line).endswith("(and 2 more)")  # type: ignore[union-attr]


def test_a_bad_record_of_the_pipeline_reads_as_bad_line_does() -> None:
    line = json.dumps({**GOOD, "node_id": "one"})
    assert bad_record("snapshots", "file:/x/f.jsonl", 2, MALFORMED, line) == (
        "snapshot line 2 of /x/f.jsonl: node_id: not an integer ('one')"
    )
    assert bad_record("clients", "p.jsonl", 4, "duplicate profile", "{}") == (
        "client profile line 4 of p.jsonl: duplicate profile"
    )
    assert bad_record("snapshots", "f.parquet", None, "missing field node_id", None) == (
        "snapshot f.parquet: missing field node_id"
    )
