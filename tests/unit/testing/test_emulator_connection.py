"""The sans-I/O connection: ApiVersions per era for every release, versions outside range, faults."""

from __future__ import annotations

import struct

import pytest

from kafkacompat.protocol import broker_framing, framing
from kafkacompat.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
    ShareFetchRequest,
)
from kafkacompat.reference.releases import RELEASES
from kafkacompat.testing.emulator import ApiVersionsEra, Fault, profile_for
from kafkacompat.testing.emulator.faults import GARBAGE, HTTP_REPLY, TLS_ALERT
from tests.unit.testing.emulator_harness import (
    Close,
    Harness,
    Send,
    Sleep,
    Stall,
    closes,
    cluster,
    decode,
    sent,
)

API_VERSIONS_OK = ApiVersionsRequest(client_software_name="unit-tests", client_software_version="1.0")
PROFILES = [profile_for(p.release, p.kind) for p in RELEASES]


def ids(profile: object) -> str:
    return getattr(profile, "label", "")


@pytest.mark.parametrize("profile", PROFILES, ids=ids)
def test_api_versions_per_era(profile: object) -> None:
    from kafkacompat.testing.emulator import BrokerProfile

    assert isinstance(profile, BrokerProfile)
    harness = Harness(cluster(profile))
    era = profile.api_versions_era
    if era is ApiVersionsEra.ABSENT:
        # 0.8.x has no ApiVersions: the broker cannot read it and closes.
        actions = harness.send(ApiVersionsRequest(), 0)
        assert actions == [Close()]
        assert "has no API key 18" in harness.records[-1].outcome
        return
    if era is ApiVersionsEra.DROPPED:
        # 0.9.x has no ApiVersions either, but answers nothing and goes on serving.
        assert harness.send(ApiVersionsRequest(), 0) == []
        assert harness.records[-1].outcome.startswith("dropped: ")
        assert harness.call(MetadataRequest(topics=[]), 0).brokers
        return
    own = profile.apis[18]
    # The newest version it knows: the whole table.
    reply = harness.call(API_VERSIONS_OK, own.highest)
    assert reply.error_code == 0
    assert {k.api_key: (k.min_version, k.max_version) for k in reply.api_keys} == {
        key: (r.lowest, r.highest) for key, r in profile.apis.items()
    }
    if own.highest >= 3 and profile.supported_features:
        assert {f.name for f in reply.supported_features} == set(profile.supported_features)
        # A 3.3-3.5 controller lists its features but reports epoch -1, as the real ones do.
        assert (reply.finalized_features_epoch >= 0) is profile.reports_finalized
    # One version too new: a v0 UNSUPPORTED_VERSION reply (response header v0 as always).
    too_new = own.highest + 1
    frame = framing.encode_request(API_VERSIONS_OK, min(too_new, 4), 99, "unit-tests")
    if too_new > 4:  # past what the codec writes: patch the version in the header
        frame = frame[:6] + struct.pack(">h", too_new) + frame[8:]
    actions = harness.connection.receive(frame)
    assert len(actions) == 1 and isinstance(actions[0], Send)
    unsupported = decode(actions[0].data, ApiVersionsRequest(), 0, 99)
    assert unsupported.error_code == 35
    keys = {k.api_key: (k.min_version, k.max_version) for k in unsupported.api_keys}
    if era is ApiVersionsEra.KIP_511:
        assert keys == {18: (own.lowest, own.highest)}
    else:
        assert keys == {}
    # The connection stays open after it: the client may retry lower.
    assert harness.call(ApiVersionsRequest(), 0).error_code == 0


@pytest.mark.parametrize("profile", PROFILES, ids=ids)
def test_a_version_above_the_release_range_closes_the_connection(profile: object) -> None:
    from kafkacompat.testing.emulator import BrokerProfile

    assert isinstance(profile, BrokerProfile)
    harness = Harness(cluster(profile))
    metadata = profile.apis.get(3)
    if metadata is None:  # KRaft controllers from 3.0 do not serve Metadata at all
        assert harness.send(MetadataRequest(), 0) == [Close()]
        return
    codec_max = MetadataRequest.VALID_VERSIONS.highest
    above = metadata.highest + 1
    frame = framing.encode_request(MetadataRequest(topics=[]), min(above, codec_max), 5, "x")
    frame = frame[:6] + struct.pack(">h", above) + frame[8:]
    assert harness.connection.receive(frame) == [Close()]
    assert "outside" in harness.records[-1].outcome
    readable = min(metadata.highest, codec_max)
    assert isinstance(Harness(cluster(profile)).send(MetadataRequest(topics=[]), readable)[0], Send)


def test_an_advertised_version_the_codec_cannot_read_closes_and_says_so() -> None:
    # a broker newer than the codec: ShareFetch 1-3, where the codec knows 0-2 (Kafka 4.4)
    harness = Harness(cluster(profile_for("4.4", "kraft-broker").with_apis({78: (1, 3)})))
    frame = framing.encode_request(ShareFetchRequest(), 1, 5, "x")
    assert harness.connection.receive(frame[:6] + struct.pack(">h", 3) + frame[8:]) == [Close()]
    assert "codec cannot read v3" in harness.records[-1].outcome


def test_a_version_below_the_minimum_closes_too() -> None:
    harness = Harness(cluster("4.0"))  # 4.0 dropped Fetch below v4 (KIP-896)
    assert harness.send(FetchRequest(), 3) == [Close()]


def test_an_api_the_release_lacks_closes() -> None:
    harness = Harness(cluster("0.10.0"))
    assert harness.send(MetadataRequest(topics=[]), 1) != [Close()]
    harness = Harness(cluster("0.10.0"))
    assert harness.send_raw(struct.pack(">hhih", 57, 0, 1, -1) + b"\x00" * 8) == [Close()]


def test_an_advertised_api_nothing_models_gets_the_generic_default_answer() -> None:
    from kafkacompat.protocol.messages import DescribeAclsRequest

    harness = Harness(cluster("2.3"))
    reply = harness.call(DescribeAclsRequest(), 1)
    assert reply.error_code == 0 and reply.resources == []
    assert harness.records[-1].outcome == "answered"


def test_a_handler_of_your_own_answers_any_api() -> None:
    from kafkacompat.protocol.messages import ProduceResponse

    harness = Harness(cluster("2.3"), handlers={0: lambda request: ProduceResponse(throttle_time_ms=7)})
    reply = harness.call(ProduceRequest(acks=1, timeout_ms=1000), 7)
    assert reply.throttle_time_ms == 7


def test_kip511_software_fields_are_checked() -> None:
    harness = Harness(cluster("2.4"))
    bad = ApiVersionsRequest(client_software_name="bad name!", client_software_version="1")
    reply = harness.call(bad, 3)
    assert reply.error_code == 42 and list(reply.api_keys) == []


def test_garbage_from_the_client_closes() -> None:
    harness = Harness(cluster("3.9"))
    assert harness.connection.receive(b"\xff\xff\xff\xff") == [Close()]
    assert harness.connection.receive(b"anything") == []  # finished: nothing more is read
    assert Harness(cluster("3.9")).send_raw(b"\x00\x03") == [Close()]  # shorter than a header
    harness = Harness(cluster("3.9"))
    assert harness.send_raw(struct.pack(">hhih", 3, 12, 5, 1) + b"\x00\x00\xff") == [Close()]
    assert harness.records[-1].outcome.startswith("closed: unreadable request")


def test_pipelined_requests_are_answered_in_order_until_one_closes() -> None:
    harness = Harness(cluster("2.3"))
    frames = b"".join(
        framing.encode_request(request, version, cid, "x")
        for cid, (request, version) in enumerate(
            [
                (ApiVersionsRequest(), 0),
                (MetadataRequest(topics=[]), 8),
                (MetadataRequest(), 12),
                (ApiVersionsRequest(), 0),
            ],
            start=1,
        )
    )
    actions = harness.connection.receive(frames)
    assert [type(a) for a in actions] == [Send, Send, Close]
    assert [r.correlation_id for r in harness.records] == [1, 2, 3]


# -- faults through the connection --------------------------------------------------------------


def test_faults_apply_to_the_request_they_match_only() -> None:
    harness = Harness(cluster("3.9"), faults=[Fault.close(3, times=1)])
    assert harness.call(ApiVersionsRequest(), 0).error_code == 0
    assert harness.send(MetadataRequest(), 9) == [Close()]
    assert harness.records[-1].outcome == "fault: close" and harness.records[-1].fault is not None


@pytest.mark.parametrize(
    ("fault", "check"),
    [
        (Fault.reset(18), lambda a, reply: a == [Close(reset=True)]),
        (Fault.stall(18), lambda a, reply: a == [Stall()]),
        (Fault.delay(0.5, 18), lambda a, reply: a == [Sleep(0.5), Send(reply)]),
        (Fault.close_after_bytes(5, 18), lambda a, reply: a == [Send(reply[:5]), Close()]),
        (Fault.garbage(api_key=18), lambda a, reply: a == [Send(GARBAGE)]),
        (Fault.tls(18), lambda a, reply: a == [Send(TLS_ALERT), Close()]),
        (Fault.http(18), lambda a, reply: a == [Send(HTTP_REPLY), Close()]),
        (
            Fault.wrong_correlation_id(api_key=18),
            lambda a, reply: sent(a)[8:] == reply[8:] and sent(a)[4:8] == (2).to_bytes(4, "big"),
        ),
    ],
    ids=lambda v: v.describe() if isinstance(v, Fault) else "",
)
def test_every_fault_knob_through_the_connection(fault: Fault, check: object) -> None:
    reply = broker_framing.encode_response(Harness(cluster("3.9")).call(ApiVersionsRequest(), 0), 0, 1)
    harness = Harness(cluster("3.9"), faults=[fault])
    actions = harness.send(ApiVersionsRequest(), 0)
    assert check(actions, reply)  # type: ignore[operator]
    assert harness.connection.finished is any(isinstance(a, Close | Stall) for a in actions)


def test_a_stalled_connection_ignores_everything_after() -> None:
    harness = Harness(cluster("3.9"), faults=[Fault.stall(3)])
    assert harness.send(MetadataRequest(), 9) == [Stall()]
    assert harness.send(ApiVersionsRequest(), 0) == []


def test_a_delay_before_a_close_still_closes() -> None:
    harness = Harness(cluster("2.3"), faults=[Fault.delay(0.1)])
    assert harness.send(MetadataRequest(), 12) == [Sleep(0.1), Close()]


def test_event_hubs_resets_api_versions_v3_and_answers_v0() -> None:
    harness = Harness(cluster("3.9"), faults=[Fault.event_hubs()])
    assert harness.send(API_VERSIONS_OK, 3) == [Close(reset=True)]
    harness = Harness(cluster("3.9"), faults=[Fault.event_hubs()])
    assert harness.call(ApiVersionsRequest(), 0).error_code == 0


def test_tansu_answers_a_too_new_version_with_the_v3_body_and_no_error() -> None:
    harness = Harness(cluster("3.9"), faults=[Fault.tansu_api_versions()])
    frame = framing.encode_request(API_VERSIONS_OK, 4, 7, "x")
    frame = frame[:6] + struct.pack(">h", 5) + frame[8:]
    actions = harness.connection.receive(frame)
    body = decode(sent(actions), ApiVersionsRequest(), 3, 7)
    assert isinstance(body, ApiVersionsResponse) and body.error_code == 0
    assert {k.api_key: k.max_version for k in body.api_keys}[18] == 4
    # An advertised version is answered normally.
    assert harness.call(API_VERSIONS_OK, 4).error_code == 0
    assert [r.fault is not None for r in harness.records] == [True, False]


def test_a_hostile_broker_never_lowers_its_advertised_max() -> None:
    harness = Harness(cluster("3.9"), faults=[Fault.hostile_unsupported_version()])
    for version in (4, 3, 0):
        reply = harness.call(API_VERSIONS_OK if version >= 3 else ApiVersionsRequest(), version, read_as=0)
        assert reply.error_code == 35
        (own,) = reply.api_keys
        assert own.api_key == 18 and own.max_version >= version and own.max_version >= 4


def test_closes_helper_agrees() -> None:
    assert closes([Send(b""), Close()]) and not closes([Send(b"")])


def test_a_failing_handler_closes_its_connection_only() -> None:
    def broken(request: object) -> object:
        raise RuntimeError("boom")

    harness = Harness(cluster("3.9"), handlers={3: broken})
    assert harness.send(MetadataRequest(topics=[]), 12) == [Close()]
    assert "RuntimeError('boom')" in harness.records[-1].outcome
