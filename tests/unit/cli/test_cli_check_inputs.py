"""``kafkacompat check``'s inputs: profiles, releases with their features, snapshot files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkacompat.cli.check import brokers_for_release, brokers_from_snapshots, load_clients
from kafkacompat.errors import ConfigError, UsageError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.release_guess import known_api_ranges
from kafkacompat.pipeline.snapshot_format import snapshot_json, snapshot_line


def test_profiles_by_name_and_version() -> None:
    measured = load_clients("measured", ["aiokafka"])
    assert sorted(c.version for c in measured) == ["0.11.0", "0.14.0", "0.8.1"]
    (one,) = load_clients("measured", ["kafka-python@2.0.2"])
    assert one.label == "kafka-python 2.0.2"
    (own,) = load_clients("kafkacompat")
    assert own.obeys_feature_gates and own.entries[3].required and not own.entries[0].required
    with pytest.raises(ConfigError, match="no client profile"):
        load_clients("measured", ["nobody"])


def test_a_bad_profile_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"client": "a", "version": "1", "api_versions": []}\n\n{"client": 3}\n')
    with pytest.raises(ConfigError, match=r"^client profile line 3 of .*p\.jsonl: client: not a string"):
        load_clients(str(path))
    # A measured run without ApiVersions that cannot be read is named too, not a KeyError.
    path.write_text('{"client": "a", "version": "1", "api_versions": [], "without_api_versions": []}\n')
    with pytest.raises(ConfigError, match=r"^client profile line 1 of .*p\.jsonl: without_api_versions"):
        load_clients(str(path))


def test_a_release_gets_a_fresh_clusters_features_unless_told() -> None:
    (fresh,) = brokers_for_release("4.0", None, {})
    assert fresh.label == "Kafka 4.0 (kraft-broker)" and fresh.finalized is not None
    assert fresh.finalized["transaction.version"] == 2
    (older,) = brokers_for_release("4.0", None, {"transaction.version": 1})
    assert older.finalized is not None and older.finalized["transaction.version"] == 1
    (zk,) = brokers_for_release("2.3", None, {})
    assert zk.label == "Kafka 2.3 (zk-broker)" and zk.finalized == {}
    with pytest.raises(ConfigError, match="has no zk-broker"):
        brokers_for_release("4.0", "zk-broker", {})
    # A release the table lacks: the closest one, or how far the table goes; never the whole table.
    with pytest.raises(UsageError, match=r"^--release 3\.9\.1: .*; did you mean 3\.9\?$"):
        brokers_for_release("3.9.1", None, {})
    with pytest.raises(UsageError, match=r"^--release 5\.0: .*; the table has 0\.8\.0 to 4\.4$"):
        brokers_for_release("5.0", None, {})


def test_a_kind_may_follow_the_release_as_emulate_takes_it(capsys: pytest.CaptureFixture[str]) -> None:
    from kafkacompat._version import __version__
    from kafkacompat.cli import main

    assert main(["check", "kafkacompat", "--release", "2.8/kraft"]) == 0
    assert main(["check", "kafkacompat", "--release", "2.8"]) == 0
    assert main(["check", "kafkacompat", "--release", "2.8/kraft-broker", "--kind", "kraft-broker"]) == 0
    verdicts = [line for line in capsys.readouterr().out.splitlines() if " against " in line]
    assert verdicts == [
        f"kafkacompat {__version__} against Kafka 2.8 (kraft-broker): WORKS",
        f"kafkacompat {__version__} against Kafka 2.8 (zk-broker): WORKS",
        f"kafkacompat {__version__} against Kafka 2.8 (kraft-broker): WORKS",
    ]


def test_4_3_and_4_4_are_known_with_their_features_and_kip_896_removals() -> None:
    from kafkacompat.negotiation.verdicts import BrokerSide, ClientEntry, ClientSide, judge
    from kafkacompat.protocol.versions import VersionRange

    old_fetch = ClientSide("app", "1", {1: ClientEntry(1, VersionRange(3, 3), "fixed", required=True)})
    share_v0 = ClientSide("app", "1", {78: ClientEntry(78, VersionRange(0, 0), "fixed", required=True)})
    for release, metadata_version in (("4.3", 30), ("4.4", 33)):
        (fresh,) = brokers_for_release(release, None, {})
        assert fresh.label == f"Kafka {release} (kraft-broker)" and fresh.finalized is not None
        assert fresh.finalized["metadata.version"] == metadata_version
        assert fresh.finalized["share.version"] >= 1 and fresh.finalized["transaction.version"] == 2
        # A release guessed from its ranges (check --cluster) is the same release.
        guessed = BrokerSide("node", fresh.apis, None, {})
        for broker in (fresh, guessed):
            (finding,) = judge(old_fetch, [broker]).findings
            assert (finding.rule, finding.source) == ("removed-in-4", "KIP-896"), release
        (early_access,) = judge(share_v0, [fresh]).findings  # ShareFetch v0: dropped in 4.1
        assert (early_access.rule, early_access.source) == ("removed-in-4", "KAFKA-19057"), release


def test_snapshots_give_the_latest_line_of_every_node(tmp_path: Path) -> None:
    def line(node: int, release: str, at: str) -> str:
        caps = BrokerCapabilities.from_ranges(
            f"h:{node}", known_api_ranges(release, "kraft-broker"), node_id=node
        )
        return snapshot_json(snapshot_line(caps, "prod", at, node_id=node))

    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join(
            [
                line(1, "3.9", "2026-01-01T00:00:00Z"),
                line(1, "4.0", "2026-02-01T00:00:00Z"),
                line(2, "3.9", "2026-01-01T00:00:00Z"),
            ]
        )
        + "\n"
    )
    (cluster,) = brokers_from_snapshots(path).values()
    assert [(b.label, b.release) for b in cluster] == [("node 1 at h:1", "4.0"), ("node 2 at h:2", "3.9")]
    path.write_text(json.dumps({"schema": 1}) + "\n")
    with pytest.raises(ConfigError, match=r"^snapshot line 1 of .*s\.jsonl: missing field"):
        brokers_from_snapshots(path)


def test_a_binary_file_is_a_typed_one_line_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "profiles.jsonl"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    with pytest.raises(ConfigError, match=r"^the profile file .* is a binary file, not text$"):
        load_clients(str(path))
    with pytest.raises(ConfigError, match=r"^--cluster .* is a binary file, not text$"):
        brokers_from_snapshots(path)


def controller_line(node: int, release: str = "4.0") -> str:
    caps = BrokerCapabilities.from_ranges(
        f"h:{node}", known_api_ranges(release, "kraft-controller"), node_id=node
    )
    return snapshot_json(snapshot_line(caps, "prod", "2026-01-01T00:00:00Z", node_id=node))


def test_a_controller_is_not_judged_clients_never_talk_to_one(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(controller_line(3000) + "\n")
    with pytest.raises(ConfigError, match="is a KRaft controller: clients never talk to controllers"):
        brokers_from_snapshots(path)
    with pytest.raises(ConfigError, match="is a KRaft controller"):
        brokers_for_release("4.0", "kraft-controller", {})
    # Next to brokers, the controllers of a cluster are left out and its brokers judged.
    caps = BrokerCapabilities.from_ranges("h:1", known_api_ranges("4.0", "kraft-broker"), node_id=1)
    broker = snapshot_json(snapshot_line(caps, "prod", "2026-01-01T00:00:00Z", node_id=1))
    path.write_text(controller_line(3000) + "\n" + broker + "\n")
    (cluster,) = brokers_from_snapshots(path).values()
    assert [b.label for b in cluster] == ["node 1 at h:1"]


def test_the_check_command_says_so_in_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kafkacompat.cli import main

    path = tmp_path / "s.jsonl"
    path.write_text(controller_line(3000) + "\n")
    assert main(["check", "measured", "--cluster", str(path)]) == 2
    said = capsys.readouterr()
    assert said.out == "" and len(said.err.strip().splitlines()) == 1
    assert "clients never talk to controllers" in said.err
