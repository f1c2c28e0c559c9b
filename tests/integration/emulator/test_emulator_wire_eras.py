"""Every release of the table over TCP, with a raw codec client: ApiVersions per era."""

from __future__ import annotations

import struct

import pytest
import trio

from kafkacompat.protocol import framing
from kafkacompat.protocol.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from kafkacompat.reference.releases import RELEASES, ReleaseProfile
from kafkacompat.testing.emulator import ApiVersionsEra, profile_for
from tests.integration.emulator.wire_client import WireClient

REQUEST_V3 = ApiVersionsRequest(client_software_name="emulator-tests", client_software_version="1.0")


@pytest.mark.parametrize("fact", RELEASES, ids=lambda p: f"{p.release}-{p.kind}")
async def test_api_versions_over_the_wire(fact: ReleaseProfile, emulated_cluster: object) -> None:
    release, kind, _ = fact
    profile = profile_for(release, kind)
    with trio.fail_after(10):
        cluster = await emulated_cluster(f"{release}/{kind}")  # type: ignore[operator]
        address = cluster.brokers[0].address
        async with await WireClient.connect(address) as client:
            if profile.api_versions_era is ApiVersionsEra.ABSENT:
                await client.send(ApiVersionsRequest(), 0)
                assert await client.is_closed()  # 0.8.x: the connection just closes
                return
            if profile.api_versions_era is ApiVersionsEra.DROPPED:
                # 0.9.x: no reply at all; the next request on the connection is answered.
                await client.send(ApiVersionsRequest(), 0)
                correlation_id, body = await client.request(MetadataRequest(topics=[]), 0)
                assert correlation_id == client.correlation_id and body.brokers
                return
            own = profile.apis[18]
            # Start at v4 (the newest anyone sends) as a modern client does.
            frame = framing.encode_request(REQUEST_V3, 4, 1, "emulator-tests")
            await client.send_bytes(frame)
            reply = await client.recv_frame()
            assert reply is not None
            if own.highest >= 4:
                _, body = framing.decode_response(reply, ApiVersionsResponse, 4)
                assert isinstance(body, ApiVersionsResponse) and body.error_code == 0
                if profile.supported_features:
                    assert {f.name for f in body.supported_features} == set(profile.supported_features)
                    assert body.finalized_features_epoch == cluster.state.finalized_epoch
                    assert {f.name: f.max_version_level for f in body.finalized_features} == (
                        cluster.state.finalized
                    )
            else:
                _, body = framing.decode_response(reply, ApiVersionsResponse, 0)
                assert isinstance(body, ApiVersionsResponse) and body.error_code == 35
                keys = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
                if profile.api_versions_era is ApiVersionsEra.KIP_511:
                    assert keys == {18: (own.lowest, own.highest)}
                    retry = own.highest
                else:
                    assert keys == {}
                    retry = 0
                _, body = await client.request(REQUEST_V3 if retry >= 3 else ApiVersionsRequest(), retry)
                assert body.error_code == 0
                assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys} == {
                    key: (r.lowest, r.highest) for key, r in profile.apis.items()
                }
                if retry >= 3 and profile.supported_features:
                    assert body.supported_features  # v3 carries the features of 3.3+
            # A Metadata version past the release closes the connection, as Kafka does.
            metadata = profile.apis.get(3)
            if metadata is not None:
                above = metadata.highest + 1
                frame = framing.encode_request(MetadataRequest(topics=[]), min(above, 12), 9, "x")
                await client.send_bytes(frame[:6] + struct.pack(">h", above) + frame[8:])
                assert await client.is_closed()
