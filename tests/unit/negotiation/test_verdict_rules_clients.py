"""The verdict rules that follow what clients do: negotiation, pickers, needs, look-alikes."""

from __future__ import annotations

from kafkacompat.negotiation.lookalikes import identify, lookalikes
from kafkacompat.negotiation.release_guess import known_api_ranges
from kafkacompat.negotiation.verdicts import BrokerSide, ClientEntry, ClientSide, client_side, judge
from kafkacompat.protocol.versions import VersionRange

PRODUCE, METADATA, JOIN_GROUP, API_VERSIONS, TELEMETRY = 0, 3, 11, 18, 71


def broker(release: str, kind: str = "zk-broker") -> BrokerSide:
    return BrokerSide(f"Kafka {release}", dict(known_api_ranges(release, kind)), release, {})


def one(*entries: ClientEntry) -> ClientSide:
    return ClientSide("app", "1", {e.api_key: e for e in entries})


def test_api_versions_above_the_brokers_range_is_the_negotiation_not_a_break() -> None:
    # ApiVersions v4 to a 2.3 broker offering 0-2: answered UNSUPPORTED_VERSION, the client steps down.
    asks_v4 = one(ClientEntry(API_VERSIONS, VersionRange(4, 4), "fixed", required=True, min_exact=False))
    verdict = judge(asks_v4, [broker("2.3")])
    assert verdict.status == "works" and verdict.findings == ()
    assert verdict.picks["Kafka 2.3"][API_VERSIONS] == 2


def test_telemetry_is_never_required_even_when_a_recording_says_so() -> None:
    profile = {
        "client": "librdkafka",
        "version": "2.16",
        "api_versions": [{"api_key": TELEMETRY, "min": 0, "max": 0, "required": True}],
    }
    client = client_side(profile)
    assert not client.entries[TELEMETRY].required
    assert judge(client, [broker("3.9")]).status == "works"  # 3.9 has no telemetry: a warning only


def table_client() -> ClientSide:
    # kafka-python-like: Produce v4 to 1.0, v7 to 2.3, v8 to 3.9 (its own table, not the offer).
    measured = (("1.0", 4), ("2.3", 7), ("3.9", 8))
    return one(ClientEntry(PRODUCE, VersionRange(4, 8), "release-table", False, True, False, measured))


def test_a_release_table_picker_sends_its_measured_version_to_a_measured_release() -> None:
    verdict = judge(table_client(), [broker("2.3")])
    assert verdict.status == "works" and verdict.picks["Kafka 2.3"][PRODUCE] == 7


def test_a_release_table_picker_between_measured_releases_is_bracketed_by_them() -> None:
    # 2.0 offers Produce 0-6: the client sends between v4 (1.0's) and v7 (2.3's), maybe above 6.
    (finding,) = judge(table_client(), [broker("2.0")]).findings
    assert (finding.rule, finding.severity) == ("release-table-not-accepted", "unknown")
    # 2.1 offers 0-7: whatever it sends between v4 and v7 is accepted.
    assert judge(table_client(), [broker("2.1")]).status == "works"


def test_a_release_table_picker_is_judged_by_its_table_not_by_the_highest_in_common() -> None:
    # 0.11 offers Produce 0-3: the table says v4 for 1.0 and nothing lower, so it breaks there.
    (finding,) = judge(table_client(), [broker("0.11.0")]).findings
    assert (finding.rule, finding.severity, finding.version) == ("release-table-not-accepted", "breaks", 4)


def test_a_release_table_pick_needs_its_table() -> None:
    profile = {
        "client": "x",
        "version": "1",
        "api_versions": [{"api_key": PRODUCE, "min": 3, "max": 7, "pick": "release-table"}],
    }
    try:
        client_side(profile)
    except ValueError as exc:
        assert "without by_release" in str(exc)
    else:
        raise AssertionError("a release-table pick without its table was accepted")


def tansu() -> BrokerSide:
    known = next(s for s in lookalikes() if s.software == "tansu")
    return BrokerSide("tansu", dict(known.apis), None, {}, identify(known.apis))


def test_tansu_is_identified_by_its_measured_answer_and_breaks_join_group_v2_and_v3() -> None:
    assert identify(tansu().apis) is not None and identify(dict(known_api_ranges("3.9", "zk-broker"))) is None
    v3_joiner = one(ClientEntry(JOIN_GROUP, VersionRange(0, 3), required=True))
    (finding,) = judge(v3_joiner, [tansu()]).findings
    assert (finding.rule, finding.severity, finding.version) == ("lookalike-deviation", "breaks", 3)
    assert "MEMBER_ID_REQUIRED" in finding.message and "KIP-394" in finding.source
    v5_joiner = one(ClientEntry(JOIN_GROUP, VersionRange(0, 5), required=True))
    assert judge(v5_joiner, [tansu()]).status == "works"  # v4 on: Kafka asks for the member id too


def test_noida_closes_on_describe_configs_v0_and_create_topics_v0_v1_which_kafka_answers() -> None:
    known = next(s for s in lookalikes() if s.software == "noida-db")
    noida = BrokerSide("noida", dict(known.apis), None, {}, identify(known.apis))
    # sarama 1.40.1's admin lists topics with DescribeConfigs v0: the connection ends there.
    lister = one(ClientEntry(32, VersionRange(0, 0), required=True))
    (finding,) = judge(lister, [noida]).findings
    assert (finding.rule, finding.severity, finding.api_key) == ("lookalike-deviation", "breaks", 32)
    assert "closes the connection" in finding.message
    assert judge(one(ClientEntry(32, VersionRange(0, 1), required=True)), [noida]).status == "works"
    assert judge(one(ClientEntry(19, VersionRange(0, 1), required=True)), [noida]).status == "breaks"


def test_a_client_measured_on_the_lookalike_is_judged_by_that_measurement() -> None:
    joins_v5 = {"api_key": JOIN_GROUP, "min": 5, "max": 5, "required": True}
    profile = {
        "client": "lib",
        "version": "1",
        "api_versions": [joins_v5],
        "recorded": {
            "against": {
                "tansu 0.6.0": {
                    "steps": [
                        {"step": "metadata", "ok": True},
                        {"step": "consume", "ok": False, "error": "x"},
                    ],
                    "requests": [{"api_key": JOIN_GROUP, "version": 5, "outcomes": {"error:UNKNOWN": 1}}],
                }
            }
        },
    }
    (finding,) = judge(client_side(profile), [tansu()]).findings
    # The ranges alone say JoinGroup v5 works on Tansu; the measurement says where it stopped.
    assert (finding.rule, finding.severity, finding.api_key, finding.version) == (
        "measured-on-lookalike",
        "breaks",
        JOIN_GROUP,
        5,
    )
    assert "stopped in step consume" in finding.message
    profile["recorded"]["against"]["tansu 0.6.0"]["steps"][1]["ok"] = True  # type: ignore[index]
    assert judge(client_side(profile), [tansu()]).status == "works"


def java_client(version: str, *entries: ClientEntry, got_through_on_4x: bool | None = None) -> ClientSide:
    from kafkacompat.negotiation.measured_runs import MeasuredRun

    runs = {}
    if got_through_on_4x is not None:
        stopped = None if got_through_on_4x else "produce"
        name = "4.4.0/kraft-combined"
        runs[name] = MeasuredRun(name, got_through_on_4x, stopped, None, ())
    return ClientSide("kafka-clients", version, {e.api_key: e for e in entries}, measured_on=runs)


def test_kip_1124_warns_of_java_clients_before_2_1_on_4x_and_the_versions_decide() -> None:
    produce_v6 = ClientEntry(PRODUCE, VersionRange(0, 6), required=True)
    kafka_40 = broker("4.0", "kraft-broker")
    verdict = judge(java_client("2.0.1", produce_v6, got_through_on_4x=True), [kafka_40])
    (finding,) = verdict.findings
    assert verdict.status == "works"  # what the real 4.0.2 and 4.4.0 did with it
    assert (finding.rule, finding.severity) == ("unsupported-client-release", "warns")
    assert finding.source == "KIP-1124" and "from 2.1 on" in finding.message
    assert "against the real 4.4.0 its traffic got through" in finding.message
    # Produce v2 (kafka-clients 0.10.2): still refused for its version, and warned of for its release.
    old = judge(java_client("0.10.2.2", ClientEntry(PRODUCE, VersionRange(0, 2), required=True)), [kafka_40])
    assert old.status == "breaks"
    assert [f.rule for f in old.findings] == ["advertised-but-refused", "unsupported-client-release"]
    # Not on 3.9, not for 2.1 and later, not for other clients.
    assert judge(java_client("2.0.1", produce_v6), [broker("3.9")]).findings == ()
    assert judge(java_client("2.1.0", produce_v6), [kafka_40]).findings == ()
    assert judge(one(produce_v6), [kafka_40]).findings == ()


def test_a_measured_run_stops_at_its_failed_steps_api_not_at_an_earlier_refusal_it_survived() -> None:
    from kafkacompat.negotiation.measured_runs import MeasuredRun

    # sarama 1.40.1 on Tansu: JoinGroup answered MEMBER_ID_REQUIRED, joined anyway; then delete-group failed.
    run = MeasuredRun("tansu 0.6.0", False, "delete-group", "unsupported", ((JOIN_GROUP, 1, "error:X"),))
    assert run.stop()[:2] == (42, None)
    in_step = MeasuredRun("tansu 0.6.0", False, "consume", "x", ((JOIN_GROUP, 1, "error:X"),))
    assert in_step.stop()[:2] == (JOIN_GROUP, 1)


def test_the_mocks_unreadable_answer_to_api_versions_above_its_range_breaks_who_asks_it() -> None:
    known = next(s for s in lookalikes() if s.software == "librdkafka-mock")
    mock = BrokerSide("mock", dict(known.apis), None, {}, identify(known.apis))
    asks_v3 = one(ClientEntry(API_VERSIONS, VersionRange(0, 3), required=True))
    (finding,) = judge(asks_v3, [mock]).findings
    assert (finding.rule, finding.api_key, finding.version) == ("lookalike-deviation", API_VERSIONS, 3)
    assert "v0 layout" in finding.message
    # Asking within its range (0-2) is the negotiation as usual; and on Kafka, asking above is too.
    assert judge(one(ClientEntry(API_VERSIONS, VersionRange(0, 2), required=True)), [mock]).findings == ()
    assert judge(asks_v3, [broker("1.1")]).findings == ()


def test_a_failed_measured_run_on_a_lookalike_comes_with_what_the_ranges_say_stops_it_later() -> None:
    known = next(s for s in lookalikes() if s.software == "librdkafka-mock")
    mock = BrokerSide("mock", dict(known.apis), None, {}, identify(known.apis))
    stalled = {"steps": [{"step": "consume", "ok": False, "error": "no record consumed"}], "requests": []}
    profile = {
        "client": "lib",
        "version": "1",
        "api_versions": [{"api_key": 15, "min": 0, "max": 5, "required": True}],  # DescribeGroups
        "recorded": {"against": {known.label: stalled}},
    }
    verdict = judge(client_side(profile), [mock])
    # kafka-python 2.2.21 on the mock: measured stalling in consume, another run got to describe-group.
    assert [(f.api_name, f.rule) for f in verdict.findings] == [
        ("Fetch", "measured-on-lookalike"),
        ("DescribeGroups", "api-missing"),  # the mock has none
    ]
