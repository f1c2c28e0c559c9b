"""Clusters of several emulated brokers, possibly of different releases, over TCP."""

from __future__ import annotations

import socket

import pytest
import scramp  # type: ignore[import-untyped]
import trio

from kafkacompat.errors import EmulatorConfigError
from kafkacompat.protocol.messages import (
    ApiVersionsRequest,
    DescribeClusterRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
    UpdateFeaturesRequest,
)
from kafkacompat.testing import EmulatedCluster, SaslConfig, ThreadedCluster
from tests.integration.emulator.wire_client import WireClient

V3 = ApiVersionsRequest(client_software_name="emulator-tests", client_software_version="1.0")


async def test_the_async_context_manager_gives_a_bootstrap_of_every_broker() -> None:
    with trio.fail_after(10):
        async with EmulatedCluster(releases=["2.3", "3.9"]) as cluster:
            addresses = cluster.bootstrap.split(",")
            assert len(addresses) == 2 and all(a.startswith("127.0.0.1:") for a in addresses)
            for address, broker in zip(addresses, cluster.brokers, strict=True):
                async with await WireClient.connect(address) as client:
                    _, reply = await client.request(ApiVersionsRequest(), 0)
                    assert reply.error_code == 0
                    versions = {k.api_key: k.max_version for k in reply.api_keys}
                    assert versions[18] == broker.profile.apis[18].highest
        assert [b.profile.release for b in cluster.brokers] == ["2.3", "3.9"]
    # Stopped on exit: nothing listens any more.
    host, port = addresses[0].split(":")
    with pytest.raises(OSError):
        await trio.open_tcp_stream(host, int(port))


async def test_an_error_in_the_body_comes_out_as_itself() -> None:
    with trio.fail_after(10), pytest.raises(KeyError):  # not wrapped in an ExceptionGroup
        async with EmulatedCluster("2.3"):
            raise KeyError("from the body")


async def test_mixed_releases_share_metadata_and_coordinators(emulated_cluster: object) -> None:
    cluster = await emulated_cluster(["2.8", "3.0", "3.0"], topics={"orders": 6})  # type: ignore[operator]
    keys = [f"group-{i}" for i in range(10)]
    with trio.fail_after(10):
        seen: list[object] = []
        for broker in cluster.brokers:
            async with await WireClient.connect(broker.address) as client:
                _, metadata = await client.request(MetadataRequest(topics=None), 9)
                seen.append(
                    (
                        [(b.node_id, b.port) for b in metadata.brokers],
                        metadata.controller_id,
                        [(p.partition_index, p.leader_id) for p in metadata.topics[0].partitions],
                    )
                )
                max_version = broker.profile.apis[10].highest
                if max_version >= 4:
                    _, reply = await client.request(FindCoordinatorRequest(coordinator_keys=keys), 4)
                    answers = [(c.key, c.node_id) for c in reply.coordinators]
                else:  # 2.8 answers one key at a time (v0-3)
                    answers = []
                    for key in keys:
                        _, one = await client.request(FindCoordinatorRequest(key=key), max_version)
                        answers.append((key, one.node_id))
                seen.append(answers)
        assert seen[0] == seen[2] == seen[4] and seen[1] == seen[3] == seen[5]
        assert len({node for _, node in answers}) == 3


async def test_a_rolling_upgrade_step_keeps_port_and_id(emulated_cluster: object) -> None:
    cluster = await emulated_cluster(["2.8", "2.8"])  # type: ignore[operator]
    with trio.fail_after(10):
        broker = cluster.broker(2)
        address = broker.address
        async with await WireClient.connect(address) as client:
            _, before = await client.request(ApiVersionsRequest(), 0)
            cluster.upgrade(2, "3.0")
            assert await client.is_closed()  # a restart drops connections
        async with await WireClient.connect(address) as client:
            _, after = await client.request(ApiVersionsRequest(), 0)
        fc_before = {k.api_key: k.max_version for k in before.api_keys}[10]
        fc_after = {k.api_key: k.max_version for k in after.api_keys}[10]
        assert (fc_before, fc_after) == (3, 4)  # KIP-699 batching arrives with 3.0
        assert broker.address == address and broker.profile.release == "3.0"


async def test_update_features_and_describe_cluster_over_the_wire(emulated_cluster: object) -> None:
    cluster = await emulated_cluster(  # type: ignore[operator]
        ["3.9/kraft-controller", "3.9/kraft-broker", "3.9/kraft-broker"], cluster_id="wire-cluster"
    )
    controller, broker = cluster.broker(1), cluster.broker(2)
    assert cluster.bootstrap == ",".join(b.address for b in cluster.brokers[1:])
    update = UpdateFeaturesRequest(
        feature_updates=[
            UpdateFeaturesRequest.FeatureUpdateKey(
                feature="kraft.version", max_version_level=1, upgrade_type=1
            )
        ]
    )
    with trio.fail_after(10):
        async with await WireClient.connect(broker.address) as client:
            _, reply = await client.request(update, 1)
            assert reply.error_code == 0 and reply.results[0].error_code == 0
            _, versions = await client.request(V3, 3)
            assert versions.finalized_features_epoch == 2
            assert {f.name: f.max_version_level for f in versions.finalized_features} == {
                "metadata.version": 21,
                "kraft.version": 1,
            }
            _, described = await client.request(DescribeClusterRequest(), 1)
            assert described.cluster_id == "wire-cluster"
            assert [b.broker_id for b in described.brokers] == [2, 3]
        async with await WireClient.connect(controller.address) as client:
            _, described = await client.request(DescribeClusterRequest(endpoint_type=2), 1)
            assert [(b.broker_id, b.port) for b in described.brokers] == [(1, controller.port)]


async def test_scram_authentication_over_the_wire(emulated_cluster: object) -> None:
    cluster = await emulated_cluster("3.9", sasl=SaslConfig({"bob": "pw"}))  # type: ignore[operator]
    with trio.fail_after(10):
        async with await WireClient.connect(cluster.bootstrap) as client:
            _, handshake = await client.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1)
            assert handshake.error_code == 0
            scram = scramp.ScramClient(["SCRAM-SHA-512"], "bob", "pw")
            _, first = await client.request(
                SaslAuthenticateRequest(auth_bytes=scram.get_client_first().encode()), 2
            )
            scram.set_server_first(first.auth_bytes.decode())
            _, final = await client.request(
                SaslAuthenticateRequest(auth_bytes=scram.get_client_final().encode()), 2
            )
            scram.set_server_final(final.auth_bytes.decode())
            _, metadata = await client.request(MetadataRequest(topics=None), 12)
            assert [b.node_id for b in metadata.brokers] == [1]
        async with await WireClient.connect(cluster.bootstrap) as client:
            await client.send(MetadataRequest(topics=None), 12)
            assert await client.is_closed()  # no authentication, no metadata


async def test_the_request_log_records_what_clients_did(emulated_cluster: object) -> None:
    cluster = await emulated_cluster("2.3")  # type: ignore[operator]
    with trio.fail_after(5):
        async with await WireClient.connect(cluster.bootstrap) as client:
            await client.request(V3, 3, read_as=0)
            await client.request(ApiVersionsRequest(), 0)
    assert [(r.api_key, r.api_version, r.outcome) for r in cluster.requests] == [
        (18, 3, "answered: UNSUPPORTED_VERSION (v0 layout)"),
        (18, 0, "answered"),
    ]
    assert cluster.requests[0].client_id == "emulator-tests"


def test_the_threaded_cluster_serves_blocking_code(threaded_emulated_cluster: object) -> None:
    cluster = threaded_emulated_cluster("2.3", brokers=2)  # type: ignore[operator]
    for address in cluster.bootstrap.split(","):
        host, port = address.split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(b"\x00\x00\x00\x0e\x00\x12\x00\x00\x00\x00\x00\x01\x00\x04test")
            assert len(sock.recv(4)) == 4


def test_a_threaded_cluster_stops_on_exit() -> None:
    with ThreadedCluster("3.9") as cluster:
        host, port = cluster.bootstrap.split(":")
        socket.create_connection((host, int(port)), timeout=5).close()
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=1)


def test_cluster_configuration_errors() -> None:
    with pytest.raises(EmulatorConfigError, match=r"refusing to listen on 0\.0\.0\.0"):
        EmulatedCluster("3.9", host="0.0.0.0")
    with pytest.raises(EmulatorConfigError, match="refusing"):
        EmulatedCluster("3.9", host="192.0.2.1")
    with pytest.raises(EmulatorConfigError):
        EmulatedCluster([])
    with pytest.raises(EmulatorConfigError):
        EmulatedCluster(["2.3", "3.9"], brokers=3)
    with pytest.raises(EmulatorConfigError):
        EmulatedCluster("3.9", port=70000)
    assert len(EmulatedCluster("3.9", brokers=3).brokers) == 3
    assert EmulatedCluster("3.9", host="::1").brokers[0].bind_host == "::1"
    with pytest.raises(EmulatorConfigError):
        EmulatedCluster("3.9").broker(42)
