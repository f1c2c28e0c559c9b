"""Merging two spec generations: every version, the newest layout, checked agreement, aliases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafkacompat._codegen.generations import GenerationError, load_generations
from kafkacompat._codegen.render_messages import render_module
from kafkacompat.protocol.messages import (
    FetchRequest,
    ListClientMetricsResourcesRequest,
    ListConfigResourcesRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
)
from kafkacompat.protocol.versions import VersionRange


def _spec(name: str, valid: str, fields: list[dict[str, Any]], key: int = 90) -> dict[str, Any]:
    return {
        "apiKey": key,
        "type": "request",
        "name": name,
        "validVersions": valid,
        "flexibleVersions": "2+",
        "fields": fields,
    }


def _inputs(tmp_path: Path, old: list[dict[str, Any]], new: list[dict[str, Any]]) -> Path:
    for folder, specs in (("spec/message", old), ("spec-4.3/message", new)):
        (tmp_path / folder).mkdir(parents=True)
        for spec in specs:
            (tmp_path / folder / f"{spec['name']}.json").write_text(json.dumps(spec))
    (tmp_path / "spec" / "metadata").mkdir()
    (tmp_path / "spec-4.3" / "derived").mkdir()
    return tmp_path


OLD_FIELDS = [
    {"name": "GroupId", "type": "string", "versions": "0+"},
    {"name": "Legacy", "type": "int32", "versions": "0", "default": "-1"},
    {"name": "CandidateEpoch", "type": "int32", "versions": "1+"},
]
NEW_FIELDS = [
    {"name": "GroupId", "type": "string", "versions": "0+"},
    {"name": "ReplicaEpoch", "type": "int32", "versions": "1+"},
    {"name": "Fresh", "type": "int64", "versions": "3+"},
]


def test_every_version_of_both_generations_with_the_union_of_fields(tmp_path: Path) -> None:
    root = _inputs(
        tmp_path, [_spec("DemoRequest", "0-2", OLD_FIELDS)], [_spec("DemoRequest", "1-3", NEW_FIELDS)]
    )
    merged = load_generations(root, {})
    (spec,) = merged.specs
    assert spec.valid == VersionRange(0, 3)
    fields = {f.name: f for f in spec.root.fields}
    assert [f.name for f in spec.root.fields] == ["GroupId", "Legacy", "ReplicaEpoch", "Fresh"]
    assert fields["Legacy"].versions == VersionRange(0, 0)  # from the old generation only
    assert fields["ReplicaEpoch"].versions == VersionRange(1, 3)
    assert fields["Fresh"].versions == VersionRange(3, 3)
    assert merged.owners["DemoRequest"] == {
        0: "Kafka Oct 2024 (spec/)",
        1: "Kafka 4.3 (spec-4.3/message/)",
        2: "Kafka 4.3 (spec-4.3/message/)",
        3: "Kafka 4.3 (spec-4.3/message/)",
    }


def test_a_renamed_field_keeps_its_old_name_as_an_alias(tmp_path: Path) -> None:
    root = _inputs(
        tmp_path, [_spec("DemoRequest", "0-2", OLD_FIELDS)], [_spec("DemoRequest", "1-3", NEW_FIELDS)]
    )
    (spec,) = load_generations(root, {}).specs
    epoch = next(f for f in spec.root.fields if f.name == "ReplicaEpoch")
    assert epoch.aliases == ("candidate_epoch",)
    module, broker_side = render_module([spec], module="demo")
    assert broker_side is not None  # a request: reading it is the broker side's
    namespace: dict[str, Any] = {}
    exec(compile(module, "demo.py", "exec"), namespace)
    # The broker side imports the classes from the module, here already in the namespace.
    own_import = "from kafkacompat.protocol.messages.demo import DemoRequest\n"
    assert own_import in broker_side
    exec(compile(broker_side.replace(own_import, ""), "_broker/demo.py", "exec"), namespace)
    demo = namespace["DemoRequest"]
    old_style = demo(group_id="g", candidate_epoch=7)
    assert old_style.replica_epoch == 7 and old_style.candidate_epoch == 7
    old_style.candidate_epoch = 8
    assert old_style.replica_epoch == 8
    assert demo.from_dict({"group_id": "g", "candidate_epoch": 9}).replica_epoch == 9
    assert demo.decode(old_style.encode(1), 1) == old_style


def test_a_version_both_define_must_agree_on_the_wire_and_the_error_says_where(tmp_path: Path) -> None:
    changed = [dict(f) for f in NEW_FIELDS]
    changed[1]["type"] = "int64"  # same name, another wire type at v1-2
    root = _inputs(
        tmp_path, [_spec("DemoRequest", "0-2", OLD_FIELDS)], [_spec("DemoRequest", "1-3", changed)]
    )
    with pytest.raises(
        GenerationError, match=r"DemoRequest v1 disagrees on the wire at field #2: .*int32.*int64"
    ):
        load_generations(root, {})


def test_nullability_differences_are_wire_differences(tmp_path: Path) -> None:
    changed = [dict(f) for f in NEW_FIELDS]
    changed[0]["nullableVersions"] = "0+"
    root = _inputs(
        tmp_path, [_spec("DemoRequest", "0-2", OLD_FIELDS)], [_spec("DemoRequest", "1-3", changed)]
    )
    with pytest.raises(GenerationError, match=r"DemoRequest v1 .* field #1: .*GroupId"):
        load_generations(root, {})


def test_a_gap_between_the_generations_is_refused(tmp_path: Path) -> None:
    root = _inputs(
        tmp_path, [_spec("DemoRequest", "0", OLD_FIELDS[:1])], [_spec("DemoRequest", "2-3", NEW_FIELDS[:1])]
    )
    with pytest.raises(GenerationError, match="gap"):
        load_generations(root, {})


def test_a_renamed_message_is_found_by_its_api_key(tmp_path: Path) -> None:
    root = _inputs(
        tmp_path,
        [_spec("OldNameRequest", "0", OLD_FIELDS[:1])],
        [_spec("NewNameRequest", "0-1", NEW_FIELDS[:1])],
    )
    merged = load_generations(root, {})
    assert merged.message_aliases == {"OldNameRequest": "NewNameRequest"}
    assert [s.name for s in merged.specs] == ["NewNameRequest"]


# ---- the committed codec, generated from the vendored generations


def test_removed_versions_are_still_there_next_to_the_newest() -> None:
    assert VersionRange(0, 18) == FetchRequest.VALID_VERSIONS
    assert VersionRange(0, 3) == FetchRequest.REMOVED_VERSIONS
    assert not FetchRequest.defined_by_current_specs(3) and FetchRequest.defined_by_current_specs(4)
    # Fields Kafka deleted with the versions that had them (KAFKA-18269) stay at those versions.
    fields = {f.name: f.versions for f in ListOffsetsRequest.ListOffsetsPartition._FIELDS}
    assert fields["max_num_offsets"] == VersionRange(0, 0)
    fields = {f.name: f.versions for f in OffsetCommitRequest.OffsetCommitRequestPartition._FIELDS}
    assert fields["commit_timestamp"] == VersionRange(1, 1)
    request = ListOffsetsRequest(
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name="t",
                partitions=[ListOffsetsRequest.ListOffsetsPartition(timestamp=-1, max_num_offsets=3)],
            )
        ]
    )
    assert ListOffsetsRequest.decode(request.encode(0), 0) == request
    assert request.encode(0).endswith(b"\x00\x00\x00\x03")  # max_num_offsets, the last v0 field


def test_the_old_name_of_a_renamed_message_is_the_same_class() -> None:
    assert ListClientMetricsResourcesRequest is ListConfigResourcesRequest
    assert VersionRange(0, 1) == ListConfigResourcesRequest.VALID_VERSIONS
    from kafkacompat.protocol.messages.list_client_metrics_resources import ListClientMetricsResourcesResponse
    from kafkacompat.protocol.messages.list_config_resources import ListConfigResourcesResponse

    assert ListClientMetricsResourcesResponse is ListConfigResourcesResponse
