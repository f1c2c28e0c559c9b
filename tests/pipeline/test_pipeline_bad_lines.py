"""A malformed line's reason, in the report, names the fields that made it so (the Spark reason stays)."""

from __future__ import annotations

import json

from kafkacompat.pipeline.bad_lines import explain_malformed
from kafkacompat.pipeline.snapshot_format import MALFORMED, parse_snapshot_line


def test_the_fields_at_fault_are_named_with_their_values() -> None:
    line = json.dumps({"schema": 1, "observed_at": "yesterday", "cluster_id": "c", "node_id": "one"})
    assert parse_snapshot_line(line) == (None, [MALFORMED])  # what Spark and the core agree on
    assert explain_malformed(line) == (
        f'{MALFORMED}: node_id is "one", not an integer; '
        'observed_at "yesterday" is not an RFC 3339 timestamp with an offset'
    )


def test_nested_fields_client_profiles_and_lines_that_are_not_objects() -> None:
    profile = json.dumps({"client": "x", "version": 3, "api_versions": [{"api_key": "a"}]})
    assert explain_malformed(profile, "clients") == (
        f'{MALFORMED}: version is 3, not a string; api_versions[0].api_key is "a", not an integer'
    )
    assert explain_malformed("[1]") == f"{MALFORMED}: the line is [1], not a JSON object"
    assert explain_malformed("{nope").startswith(f"{MALFORMED}: not JSON (")


def test_at_most_three_faults_are_listed() -> None:
    line = json.dumps({"schema": "1", "cluster_id": 2, "node_id": "n", "endpoint": 4, "observed_at": 5})
    assert explain_malformed(line).endswith("(and 2 more)")
