"""The kafkacompat handshake (over kafkacompat.transport) against every release and kind."""

from __future__ import annotations

import pytest
import trio

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake.config import CODEC_MAX_VERSION, HandshakeConfig
from kafkacompat.testing.emulator import ApiVersionsEra, BrokerProfile, Fault, release_profiles
from kafkacompat.transport.connection import open_connection

PROFILES = release_profiles()
CONFIG = ConnectionConfig(connect_timeout=5, request_timeout=5)
FIRST = CODEC_MAX_VERSION  # the version every handshake starts at (5 since Kafka 4.4)


def ranges(profile: BrokerProfile) -> dict[int, tuple[int, int]]:
    return {key: (r.lowest, r.highest) for key, r in profile.apis.items()}


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.label)
async def test_the_handshake_against_every_release(profile: BrokerProfile, emulated_cluster: object) -> None:
    cluster = await emulated_cluster(profile)  # type: ignore[operator]
    broker = cluster.brokers[0]
    with trio.fail_after(15):
        if profile.api_versions_era is ApiVersionsEra.DROPPED:
            # 0.9: ApiVersions goes unanswered, the Metadata v0 probe after it is answered.
            async with open_connection(broker.host, broker.port, CONFIG) as conn:
                detected = conn.handshake
                assert detected is not None and detected.detected_release == profile.release
                assert {k: (r.lowest, r.highest) for k, r in detected.api_ranges.items()} == ranges(profile)
                assert [a.outcome for a in detected.transcript.attempts] == ["skipped-api-versions"]
            assert [(r.api_key, r.outcome.split(":")[0]) for r in list(broker.requests)[:2]] == [
                (18, "dropped"), (3, "answered")
            ]
            return
        if profile.api_versions_era is ApiVersionsEra.ABSENT:
            # 0.8.x closes on ApiVersions at v5, v3 and v0; the check names the release (rule 10).
            async with open_connection(broker.host, broker.port, CONFIG) as conn:
                named = conn.handshake
                assert named is not None and named.detected_release == profile.release
                assert {k: (r.lowest, r.highest) for k, r in named.api_ranges.items()} == ranges(profile)
                assert named.transcript.versions_tried == (FIRST, 3, 0)
            # And a configured fallback still stands in, with no check.
            assert profile.release is not None
            fallback = ConnectionConfig(
                connect_timeout=5, request_timeout=5,
                handshake=HandshakeConfig(fallback_release=profile.release, fallback_kind=profile.kind),
            )
            async with open_connection(broker.host, broker.port, fallback) as conn:
                stand_in = conn.handshake
                assert stand_in is not None and stand_in.used_fallback and stand_in.detected_release is None
            return
        async with open_connection(broker.host, broker.port, CONFIG) as conn:
            result = conn.handshake
    assert result is not None
    assert {k: (r.lowest, r.highest) for k, r in result.api_ranges.items()} == ranges(profile)
    own = profile.apis[18].highest
    attempts = [(a.version, a.outcome) for a in result.transcript.attempts]
    if own >= FIRST:
        assert attempts == [(FIRST, "ok")]
    elif profile.api_versions_era is ApiVersionsEra.KIP_511:
        assert attempts == [(FIRST, "unsupported-version"), (own, "ok")]  # KIP-511: retry at key 18's max
    else:
        assert attempts[0] == (FIRST, "unsupported-version") and attempts[-1] == (0, "ok")
    assert result.api_versions_version == attempts[-1][0]
    if result.api_versions_version >= 3 and profile.reports_finalized:
        assert dict(result.supported_features) == dict(profile.supported_features)
        assert {k: v.highest for k, v in result.finalized_features.items()} == cluster.state.finalized
        assert result.finalized_features_epoch == cluster.state.finalized_epoch
    # What the emulator saw is what the transcript says was sent.
    assert [r.api_version for r in broker.requests if r.api_key == 18] == [v for v, _ in attempts]


async def test_the_handshake_through_event_hubs_and_tansu_impersonations(emulated_cluster: object) -> None:
    hubs = await emulated_cluster("3.9", faults=[Fault.event_hubs()])  # type: ignore[operator]
    tansu = await emulated_cluster("3.9", faults=[Fault.tansu_api_versions()])  # type: ignore[operator]
    with trio.fail_after(15):
        async with open_connection(hubs.brokers[0].host, hubs.brokers[0].port, CONFIG) as conn:
            assert conn.handshake is not None
            attempts = [(a.version, a.outcome) for a in conn.handshake.transcript.attempts]
        # Reset on every flexible version: v5, then v3 on a new connection, then v0 on a third.
        assert attempts == [(FIRST, "closed-step-down"), (3, "closed"), (0, "ok")]
        assert hubs.brokers[0].connections_accepted == 3
        async with open_connection(tansu.brokers[0].host, tansu.brokers[0].port, CONFIG) as conn:
            assert conn.handshake is not None
            # v5 is above the advertised 0-4: Tansu answers it with the v3 body, which v5 reads
            # alike (the response did not change from v3 to v5); the transcript flags it.
            assert conn.handshake.api_versions_version == FIRST
            assert "answered-unadvertised-version" in conn.handshake.transcript.flags


async def test_a_broker_closing_on_v4_only_is_answered_at_v3_with_features(emulated_cluster: object) -> None:
    # What issue 11 found Azure Event Hubs doing: v4 (and so v5) closes, v3 (flexible, named) is answered.
    # A KRaft 3.9 profile: a real ZooKeeper 3.9 broker lists no feature.
    hubs = await emulated_cluster("3.9/kraft-broker", faults=[Fault.event_hubs(from_version=4)])  # type: ignore[operator]
    broker = hubs.brokers[0]
    with trio.fail_after(15):
        async with open_connection(broker.host, broker.port, CONFIG) as conn:
            result = conn.handshake
    assert result is not None and result.api_versions_version == 3
    attempts = [(a.version, a.outcome) for a in result.transcript.attempts]
    assert attempts == [(FIRST, "closed-step-down"), (3, "ok")]
    # Read because a flexible version was accepted; below v4 a 3.7+ broker leaves out the
    # features whose minimum is 0 (KAFKA-17011), and the capabilities say the list is partial.
    expected = {name: r for name, r in broker.profile.supported_features.items() if r.lowest > 0}
    assert expected and dict(result.supported_features) == expected
    assert BrokerCapabilities.from_handshake(result).features_partial
    assert [r.api_version for r in broker.requests if r.api_key == 18] == [FIRST, 3]
    assert broker.connections_accepted == 2
