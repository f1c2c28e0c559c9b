"""The Metadata v0 probe through both drivers, against emulated brokers that are slow, old or silent.

A slow modern broker answers ApiVersions after the quiet period: the probe is
written, but ApiVersions is answered first, so the broker is taken at its word
and the probe's reply is dropped; the connection then carries requests as usual.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from kafkacompat.blocking.probe import probe_broker
from kafkacompat.errors import KafkaTimeoutError
from kafkacompat.negotiation.handshake.config import HandshakeConfig, release_ranges
from kafkacompat.protocol.messages import MetadataRequest, MetadataResponse
from kafkacompat.testing.emulator import Fault
from kafkacompat.transport import ConnectionConfig, open_connection

QUIET = 0.1
CONFIG = ConnectionConfig(connect_timeout=5, request_timeout=3, handshake=HandshakeConfig(quiet_period=QUIET))
SLOW = Fault.delay(4 * QUIET, 18, times=1)  # the first ApiVersions only


async def test_a_slow_modern_broker_is_not_taken_for_an_old_one(emulated_cluster: Any) -> None:
    cluster = await emulated_cluster("4.4/kraft-broker", faults=[SLOW])  # answers v5 at once
    broker = cluster.brokers[0]
    with trio.fail_after(15):
        async with open_connection(broker.host, broker.port, CONFIG) as conn:
            result = conn.handshake
            reply = await conn.request(MetadataRequest(topics=None))  # the connection serves on
    assert result is not None and result.detected_release is None and result.api_versions_version == 5
    (attempt,) = result.transcript.attempts
    assert (attempt.outcome, attempt.flags) == ("ok-probe-pending", ("metadata-probe",))
    assert isinstance(reply, MetadataResponse)
    # What the broker saw: ApiVersions v5, the probe (Metadata v0), then the real request.
    seen = [(r.api_key, r.api_version) for r in broker.requests]
    assert seen[:2] == [(18, 5), (3, 0)] and seen[2][0] == 3 and broker.connections_accepted == 1


def test_a_slow_modern_broker_through_the_blocking_probe(threaded_emulated_cluster: Any) -> None:
    broker = threaded_emulated_cluster("4.4/kraft-broker", faults=[SLOW]).brokers[0]
    caps = probe_broker(broker.host, broker.port, CONFIG)
    assert caps.fallback_release is None and caps.transcript is not None
    assert [a.outcome for a in caps.transcript.attempts] == ["ok-probe-pending"]
    assert caps.release_guess.releases == ("4.4",)


@pytest.mark.parametrize("driver", ["trio", "blocking"])
async def test_the_emulated_0_9_0_is_known_like_the_real_one(driver: str, emulated_cluster: Any) -> None:
    cluster = await emulated_cluster("0.9.0")
    broker = cluster.brokers[0]
    with trio.fail_after(15):
        if driver == "trio":
            async with open_connection(broker.host, broker.port, CONFIG) as conn:
                caps = conn.capabilities
        else:
            caps = await trio.to_thread.run_sync(probe_broker, broker.host, broker.port, CONFIG)
    assert caps is not None and caps.fallback_release == "0.9.0"
    assert dict(caps.api_ranges) == dict(release_ranges("0.9.0"))


@pytest.mark.parametrize("release", ["0.8.0", "0.8.1", "0.8.2"])
async def test_each_emulated_0_8_release_is_named(release: str, emulated_cluster: Any) -> None:
    cluster = await emulated_cluster(release)
    broker = cluster.brokers[0]
    with trio.fail_after(15):
        async with open_connection(broker.host, broker.port, CONFIG) as conn:
            caps = conn.capabilities
            reply = await conn.request(MetadataRequest(topics=[]))  # on whichever connection is left
        blocking = await trio.to_thread.run_sync(probe_broker, broker.host, broker.port, CONFIG)
    for found in (caps, blocking):
        assert found is not None and found.fallback_release == release
        assert dict(found.api_ranges) == dict(release_ranges(release))
        assert found.transcript is not None and found.transcript.versions_tried == (5, 3, 0)
        assert found.release_guess.text == f"Kafka {release} (zk-broker), older than 0.10"
    assert isinstance(reply, MetadataResponse) and reply.brokers


def test_a_stalled_broker_gets_one_probe_then_times_out(threaded_emulated_cluster: Any) -> None:
    broker = threaded_emulated_cluster("3.9", faults=[Fault.stall(18)]).brokers[0]
    with pytest.raises(KafkaTimeoutError) as caught:
        probe_broker(broker.host, broker.port, CONFIG)
    assert caught.value.transcript.versions_tried == (5,)  # silence never lowers the version
    assert [(r.api_key, r.api_version) for r in broker.requests] == [(18, 5)]  # stalled: the probe unread
