"""The generator's inputs are vendored: a clone needs nothing beside it, the wheel ships none of it."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
VENDORED = REPO / "vendor" / "kafka-protocol"
ASF = "// Licensed to the Apache Software Foundation (ASF)"


def test_both_generations_and_the_tables_are_there_with_a_notice() -> None:
    assert len(list((VENDORED / "spec" / "message").glob("*.json"))) == 186
    assert len(list((VENDORED / "spec" / "metadata").glob("*.json"))) == 25
    assert len(list((VENDORED / "spec-4.3" / "message").glob("*.json"))) == 108
    assert len(list((VENDORED / "spec-4.3" / "derived").glob("*.json"))) == 28
    assert len(list((VENDORED / "spec-4.4" / "message").glob("*.json"))) == 203
    assert len(list((VENDORED / "spec-4.4" / "metadata").glob("*.json"))) == 27
    for name in ("releases.json", "features.json", "spec-4.3/removed-versions.json"):
        assert json.loads((VENDORED / name).read_text())
    notice = (VENDORED / "NOTICE.md").read_text()
    for origin in (
        "1eb7644349cb07139d6a3c1ad1986979647cac99",
        "a3b3836ff3a4",
        "adb3a18abe14",
        "org.apache.kafka:kafka-clients:4.4.0",
        "org.apache.kafka:kafka-metadata:4.4.0",
        "Apache License 2.0",
    ):
        assert origin in notice


def test_kafkas_files_keep_their_license_header_and_derived_files_say_what_they_are() -> None:
    for folder in (
        "spec/message",
        "spec/metadata",
        "spec-4.3/message",
        "spec-4.4/message",
        "spec-4.4/metadata",
    ):
        for path in (VENDORED / folder).glob("*.json"):
            assert path.read_text().startswith(ASF), path
    for path in (VENDORED / "spec-4.3" / "derived").glob("*.json"):
        assert path.read_text().startswith("// NOT an Apache Kafka file"), path


def test_the_wheel_holds_the_package_only_and_the_package_holds_no_spec() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["kafkacompat"]
    assert not list((REPO / "kafkacompat").rglob("*.json"))


def test_nothing_the_gate_runs_reads_a_folder_beside_the_repository() -> None:
    paths = [
        REPO / "Makefile",
        *(REPO / ".ci").rglob("*"),
        *(REPO / "kafkacompat" / "_codegen").rglob("*.py"),
    ]
    paths += list((REPO / "tests").rglob("*.py"))
    beside = re.compile(r"\.\./" + "shared")  # spelled in two parts so that this file does not match
    offenders = [str(p.relative_to(REPO)) for p in paths if p.is_file() and beside.search(p.read_text())]
    assert offenders == []


def test_kafka_44_files_are_the_bytes_their_provenance_names() -> None:
    provenance = json.loads((VENDORED / "spec-4.4" / "PROVENANCE.json").read_text())
    assert provenance["kafka_release"] == "4.4.0"
    files = {str(p.relative_to(VENDORED / "spec-4.4")) for p in (VENDORED / "spec-4.4").glob("*/*.json")}
    assert files == set(provenance["files"])
    for name, digest in provenance["files"].items():
        assert hashlib.sha256((VENDORED / "spec-4.4" / name).read_bytes()).hexdigest() == digest, name
