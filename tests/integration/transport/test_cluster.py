"""The cluster layer: discovery, per-node connections, coordinators, features, the sync facade.

Every cluster test runs on both drivers (the ``driver`` fixture,
``tests/support/cluster_drivers.py``): trio's ``kafkacompat.connect`` and
asyncio's ``kafkacompat.aio.connect``, one body for both.

Real peers: Tansu (FindCoordinator v4+, batched lookups) and the librdkafka mock
(FindCoordinator up to v3, so one request per key).  Both are single-node, so
every key's coordinator is that node.  Multi-node clusters of mixed releases,
rolling upgrades, per-key errors and UpdateFeatures run against the emulator
(``EmulatedCluster``).  What neither can be made to do (answer a key "loading"
a given number of times, drop a connection on a given request, refuse
UpdateFeatures with NOT_CONTROLLER once) is done by ``FakeCluster`` below: a
small trio server speaking just enough Kafka.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial

import pytest
import trio
import trio.testing

import kafkacompat
import kafkacompat.aio
from kafkacompat.cluster.coordinator_lookup import CoordinatorLookup
from kafkacompat.cluster.features_admin import ClusterFeatures, FeatureUpdateReport
from kafkacompat.connection.config import ConnectionConfig, RetryPolicy
from kafkacompat.errors import (
    BrokersUnavailableError,
    ConfigError,
    FeatureError,
    FeatureUpdateBlockedError,
    KafkaCompatError,
    NegotiationError,
    NoBrokerReachableError,
    TransportError,
    UnknownBrokerError,
    UnsupportedVersionError,
    WrongProtocolError,
)
from kafkacompat.negotiation.version_policy import VersionPolicy
from kafkacompat.protocol import broker_framing
from kafkacompat.protocol.error_codes import (
    COORDINATOR_LOAD_IN_PROGRESS,
    GROUP_AUTHORIZATION_FAILED,
)
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from kafkacompat.testing import EmulatedCluster
from kafkacompat.testing.emulator.state import FeatureSnapshot
from kafkacompat.testing.ports import free_port
from kafkacompat.testing.tansu import TansuBroker
from kafkacompat.transport.cluster import parse_bootstrap
from kafkacompat.transport.sync import SyncCluster
from tests.brokers.librdkafka_mock import LibrdkafkaMockCluster
from tests.support.cluster_drivers import Driver, Side

broker = pytest.mark.broker

CONFIG = ConnectionConfig(
    connect_timeout=5.0,
    request_timeout=10.0,
    retry=RetryPolicy(attempts=3, initial_backoff=0.01, max_backoff=0.05, jitter=0.01),
)
METADATA, FIND_COORDINATOR, UPDATE_FEATURES = 3, 10, 57
NOT_CONTROLLER = 41
GROUPS = [f"group-{n:04d}" for n in range(1000)]


# -- a fake cluster for what real brokers will not do ----------------------------------------


@dataclass
class FakeNode:
    node_id: int
    apis: dict[int, tuple[int, int]]
    supported: dict[str, tuple[int, int]] = field(default_factory=dict)
    finalized: dict[str, int] = field(default_factory=dict)
    epoch: int = -1
    port: int = 0
    received: list[tuple[int, int, KafkaMessage | None]] = field(default_factory=list)
    drop_next: set[int] = field(default_factory=set)  # api keys answered by closing the connection
    streams: set[trio.SocketStream] = field(default_factory=set)

    @property
    def label(self) -> str:
        return f"127.0.0.1:{self.port}"

    def requests(self, api_key: int) -> list[tuple[int, KafkaMessage | None]]:
        return [(v, body) for key, v, body in self.received if key == api_key]

    async def kick(self) -> None:
        """Close every connection to this node (as a restart would)."""
        for stream in list(self.streams):
            await stream.aclose()


def fake_node(node_id: int, *, find_coordinator: tuple[int, int] = (0, 6), **features: object) -> FakeNode:
    apis = {18: (0, 4), METADATA: (0, 12), FIND_COORDINATOR: find_coordinator, UPDATE_FEATURES: (0, 1)}
    return FakeNode(node_id, apis, **features)  # type: ignore[arg-type]


class FakeCluster:
    """Nodes on 127.0.0.1 that answer ApiVersions, Metadata, FindCoordinator and UpdateFeatures."""

    def __init__(self, *nodes: FakeNode, controller_id: int | None = None) -> None:
        self.nodes = {node.node_id: node for node in nodes}
        self.controller_id = controller_id if controller_id is not None else nodes[0].node_id
        self.flaky: dict[str, int] = {}  # key -> how many more times to answer it "loading"
        self.fatal: dict[str, int] = {}  # key -> error code, every time
        self.not_controller = 0  # how many more UpdateFeatures to refuse with NOT_CONTROLLER

    @property
    def bootstrap(self) -> str:
        return ",".join(node.label for node in self.nodes.values())

    def sent(self, api_key: int) -> int:
        return sum(len(node.requests(api_key)) for node in self.nodes.values())

    @asynccontextmanager
    async def running(self) -> AsyncIterator[FakeCluster]:
        async with trio.open_nursery() as nursery:
            for node in self.nodes.values():
                listeners = await nursery.start(partial(trio.serve_tcp, partial(self._serve, node), 0,
                                                        host="127.0.0.1"))
                node.port = listeners[0].socket.getsockname()[1]
            yield self
            nursery.cancel_scope.cancel()

    async def _serve(self, node: FakeNode, stream: trio.SocketStream) -> None:
        node.streams.add(stream)
        buffer = bytearray()
        try:
            while True:
                while len(buffer) < 4 or len(buffer) < 4 + int.from_bytes(buffer[:4], "big"):
                    chunk = await stream.receive_some(65536)
                    if not chunk:
                        return
                    buffer += chunk
                size = int.from_bytes(buffer[:4], "big")
                frame, buffer = bytes(buffer[4 : 4 + size]), buffer[4 + size :]
                request = broker_framing.decode_request(frame)
                key, version = request.header.request_api_key, request.header.request_api_version
                node.received.append((key, version, request.body))
                if key in node.drop_next:
                    node.drop_next.discard(key)
                    await stream.aclose()
                    return
                reply = self._answer(node, key, version, request.body)
                answer = broker_framing.encode_response(reply, version, request.header.correlation_id)
                await stream.send_all(answer)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return
        finally:
            node.streams.discard(stream)

    def _answer(self, node: FakeNode, key: int, version: int, body: KafkaMessage | None) -> KafkaMessage:
        if key == 18:
            versions = ApiVersionsResponse(api_keys=[
                ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in sorted(node.apis.items())
            ])
            if version >= 3:
                versions.supported_features = [
                    ApiVersionsResponse.SupportedFeatureKey(name=n, min_version=lo, max_version=hi)
                    for n, (lo, hi) in sorted(node.supported.items())
                ]
                finalized = ApiVersionsResponse.FinalizedFeatureKey
                versions.finalized_features = [
                    finalized(name=n, min_version_level=lv, max_version_level=lv)
                    for n, lv in sorted(node.finalized.items())
                ]
                versions.finalized_features_epoch = node.epoch
            return versions
        if key == METADATA:
            reply = MetadataResponse(brokers=[
                MetadataResponse.MetadataResponseBroker(node_id=n.node_id, host="127.0.0.1", port=n.port)
                for n in self.nodes.values()
            ])
            if version >= 1:
                reply.controller_id = self.controller_id
            if version >= 2:
                reply.cluster_id = "fake-cluster"
            return reply
        if key == FIND_COORDINATOR:
            assert isinstance(body, FindCoordinatorRequest)
            if version >= 4:
                entries = [self._coordinator(k) for k in body.coordinator_keys]
                return FindCoordinatorResponse(coordinators=[
                    FindCoordinatorResponse.Coordinator(key=k, node_id=n, host=h, port=p, error_code=e)
                    for k, n, h, p, e in entries
                ])
            _, n, h, p, e = self._coordinator(body.key)
            return FindCoordinatorResponse(error_code=e, node_id=n, host=h, port=p)
        if key == UPDATE_FEATURES:
            assert isinstance(body, UpdateFeaturesRequest)
            if self.not_controller > 0:
                self.not_controller -= 1
                return UpdateFeaturesResponse(error_code=NOT_CONTROLLER, error_message="not the controller")
            if not body.validate_only:
                epoch = max(each.epoch for each in self.nodes.values()) + 1
                for each in self.nodes.values():
                    each.finalized.update({u.feature: u.max_version_level for u in body.feature_updates})
                    each.epoch = epoch
            result = UpdateFeaturesResponse.UpdatableFeatureResult
            return UpdateFeaturesResponse(results=[
                result(feature=u.feature, error_code=0, error_message=None) for u in body.feature_updates
            ])
        raise AssertionError(f"the fake does not answer api key {key}")

    def _coordinator(self, key: str) -> tuple[str, int, str, int, int]:
        if self.flaky.get(key, 0) > 0:
            self.flaky[key] -= 1
            return key, -1, "", -1, COORDINATOR_LOAD_IN_PROGRESS
        if key in self.fatal:
            return key, -1, "", -1, self.fatal[key]
        ids = sorted(self.nodes)
        node = self.nodes[ids[zlib.crc32(key.encode()) % len(ids)]]
        return key, node.node_id, "127.0.0.1", node.port, 0


# -- discovery ------------------------------------------------------------------------------


def test_parse_bootstrap() -> None:
    assert parse_bootstrap("a:1, b:2,,a:1") == (("a", 1), ("b", 2))
    assert parse_bootstrap(["[::1]:9093", ("c", 3), "d"]) == (("::1", 9093), ("c", 3), ("d", 9092))
    with pytest.raises(ConfigError):
        parse_bootstrap("a:notaport")
    with pytest.raises(ConfigError):
        parse_bootstrap(" , ")


@broker
async def test_connect_discovers_tansu(tansu: TansuBroker, driver: Driver) -> None:
    dead = f"127.0.0.1:{free_port()}"

    async def body(side: Side) -> None:
        async with side.connect(f"{dead},{tansu.bootstrap}", CONFIG) as cluster:
            metadata = cluster.metadata
            assert metadata.cluster_id == "kafkacompat-tests"
            assert [b.address for b in metadata.brokers.values()] == [tansu.bootstrap]
            assert metadata.controller_id in metadata.brokers
            assert metadata.metadata_version == 12
            (node_id,) = metadata.brokers
            assert set(cluster.connected()) == {node_id}  # the bootstrap connection was kept
            with pytest.raises(UnknownBrokerError):
                await cluster.connection(node_id + 1000)
            answer = await cluster.request(node_id, MetadataRequest(topics=[]))
            assert isinstance(answer, MetadataResponse) and answer.cluster_id == "kafkacompat-tests"
            assert (await cluster.refresh_metadata()).brokers == metadata.brokers
        with pytest.raises(TransportError):
            await cluster.connection(node_id)

    with trio.fail_after(30):
        await driver.run(body)


@broker
@pytest.mark.parametrize("peer", ["tansu", "librdkafka_mock"])
async def test_capabilities_and_view(peer: str, request: pytest.FixtureRequest, driver: Driver) -> None:
    server = request.getfixturevalue(peer)

    async def body(side: Side) -> None:
        async with side.connect(server.bootstrap, CONFIG) as cluster:
            capabilities = await cluster.capabilities()
            assert set(capabilities) == set(cluster.brokers)
            for node_id, caps in capabilities.items():
                assert caps.node_id == node_id
                assert caps.node == cluster.brokers[node_id].address
                assert caps.lists_api(METADATA) and caps.lists_api(FIND_COORDINATOR)
            view = await cluster.view()
            assert view.nodes == tuple(sorted(c.node for c in capabilities.values()))
            assert view.version_everywhere(METADATA) == (12 if peer == "tansu" else 13)
            assert view.version_everywhere(FIND_COORDINATOR) == (6 if peer == "tansu" else 3)
            assert not view.release_skew

    with trio.fail_after(30):
        await driver.run(body)


# -- coordinators ---------------------------------------------------------------------------


async def _lookup(
    driver: Driver, bootstrap: str, keys: list[str], key_type: str = "group"
) -> tuple[dict[str, tuple[str, bool]], CoordinatorLookup]:
    async def body(side: Side) -> tuple[dict[str, tuple[str, bool]], CoordinatorLookup]:
        async with side.connect(bootstrap, CONFIG) as cluster:
            lookup = await cluster.find_coordinators(keys, key_type)
            (node_id,) = cluster.brokers  # single-node peers: every key's coordinator is that node
            address = cluster.brokers[node_id]
            assert not lookup.failed, lookup.failed
            for found in lookup.found.values():
                assert (found.node_id, found.host, found.port) == (node_id, address.host, address.port)
            # Normalised per key, so that two clusters' answers can be compared.
            normalised = {k: ("the node", f.answered_by == address.address) for k, f in lookup.found.items()}
            return normalised, lookup

    return await driver.run(body)


@broker
async def test_find_coordinators_batched_and_per_key_agree(
    tansu: TansuBroker, librdkafka_mock: LibrdkafkaMockCluster, driver: Driver
) -> None:
    with trio.fail_after(60):
        started = time.monotonic()
        batched, tansu_lookup = await _lookup(driver, tansu.bootstrap, GROUPS)
        batched_time = time.monotonic() - started
        started = time.monotonic()
        per_key, mock_lookup = await _lookup(driver, librdkafka_mock.bootstrap, GROUPS)
        per_key_time = time.monotonic() - started
    assert set(batched) == set(per_key) == set(GROUPS)
    assert batched == per_key
    assert tansu_lookup.batched and tansu_lookup.requests == 2 and tansu_lookup.versions == (6,)
    assert tansu_lookup.round_trips == 1 and tansu_lookup.rounds == 1
    assert not mock_lookup.batched and mock_lookup.requests == 1000 and mock_lookup.versions == (3,)
    assert mock_lookup.rounds == 1 and mock_lookup.round_trips == 1000 // CONFIG.max_in_flight + 1
    print(f"\n{driver}: 1000 groups: batched {batched_time * 1000:.0f} ms ({tansu_lookup.describe()}); "
          f"per-key {per_key_time * 1000:.0f} ms ({mock_lookup.describe()})")


@broker
@pytest.mark.parametrize("peer", ["tansu", "librdkafka_mock"])
async def test_transactional_ids(peer: str, request: pytest.FixtureRequest, driver: Driver) -> None:
    server = request.getfixturevalue(peer)
    ids = [f"txn-{n}" for n in range(20)]
    with trio.fail_after(30):
        found, lookup = await _lookup(driver, server.bootstrap, ids, "transaction")
    assert set(found) == set(ids)
    assert lookup.batched == (peer == "tansu")


async def _find(driver: Driver, bootstrap: str, keys: list[str], **options: int) -> CoordinatorLookup:
    async def body(side: Side) -> CoordinatorLookup:
        async with side.connect(bootstrap, CONFIG) as cluster:
            lookup: CoordinatorLookup = await cluster.find_coordinators(keys, **options)
            return lookup

    return await driver.run(body)


@pytest.mark.parametrize("find_coordinator", [(0, 6), (0, 3)], ids=["batched", "per-key"])
async def test_retriable_key_errors_are_retried_per_key(
    find_coordinator: tuple[int, int], driver: Driver
) -> None:
    fake = FakeCluster(fake_node(1, find_coordinator=find_coordinator),
                       fake_node(2, find_coordinator=find_coordinator))
    fake.flaky = {"slow": 2, "slower": 1}
    fake.fatal = {"forbidden": GROUP_AUTHORIZATION_FAILED}
    keys = ["forbidden", "fine", "slow", "slower", *(f"g{n}" for n in range(50))]
    with trio.fail_after(30):
        async with fake.running():
            lookup = await _find(driver, fake.bootstrap, keys)
    assert set(lookup.found) == set(keys) - {"forbidden"}
    assert lookup.failed["forbidden"].error_name == "GROUP_AUTHORIZATION_FAILED"
    assert not lookup.failed["forbidden"].retriable
    assert lookup.rounds == 3  # "slow" was loading twice
    assert {lookup.found[k].node_id for k in keys if k in lookup.found} == {1, 2}
    for key, found in lookup.found.items():
        assert found.port == fake.nodes[found.node_id].port, key
    if find_coordinator == (0, 6):
        assert lookup.requests == 3 and lookup.batched_requests == 3  # 54 keys, then 2, then 1
    else:
        assert lookup.requests == len(keys) + 2 + 1 and not lookup.batched


async def test_retries_are_bounded(driver: Driver) -> None:
    fake = FakeCluster(fake_node(1))
    fake.flaky = {"never": 100}
    with trio.fail_after(30):
        async with fake.running():
            lookup = await _find(driver, fake.bootstrap, ["never", "ok"], max_attempts=4)
    assert set(lookup.found) == {"ok"}
    failure = lookup.failed["never"]
    assert failure.retriable and failure.attempts == 4
    assert failure.error_name == "COORDINATOR_LOAD_IN_PROGRESS"
    assert lookup.rounds == 4 and fake.flaky["never"] == 96


async def test_backoff_runs_on_the_loops_clock(autojump_clock: trio.testing.MockClock) -> None:
    """Minutes of backoff between rounds pass at once on trio's autojump clock: trio code
    sleeps and times itself on the loop's clock, never the wall clock."""
    slow = ConnectionConfig(
        connect_timeout=5.0, request_timeout=10.0, call_timeout=600.0,  # the lookup's deadline: after 150 s
        retry=RetryPolicy(attempts=4, initial_backoff=30.0, max_backoff=60.0, jitter=0.0),
    )
    fake = FakeCluster(fake_node(1))
    fake.flaky = {"loading": 3}
    wall = time.monotonic()
    async with fake.running(), kafkacompat.connect(fake.bootstrap, slow) as cluster:
        started = trio.current_time()
        lookup = await cluster.find_coordinators(["loading", "ok"])
        slept = trio.current_time() - started
    assert set(lookup.found) == {"loading", "ok"} and lookup.rounds == 4
    assert 30 + 60 + 60 <= lookup.elapsed <= slept  # waits of 30 s, then 60 s twice (the cap)
    assert time.monotonic() - wall < 30


async def test_broken_connection_is_renegotiated_and_the_change_recorded(driver: Driver) -> None:
    """KAFKA-13029: the broker loses v4 across a restart; the next round plans single-key requests."""
    node = fake_node(1, find_coordinator=(0, 6))
    fake = FakeCluster(node)

    async def body(side: Side) -> None:
        async with side.connect(fake.bootstrap, CONFIG) as cluster:
            node.apis[FIND_COORDINATOR] = (0, 3)  # "downgraded": seen at the next handshake
            node.drop_next.add(FIND_COORDINATOR)  # the batched request is never answered
            lookup = await cluster.find_coordinators(["a", "b", "c"])
            assert set(lookup.found) == {"a", "b", "c"}
            assert lookup.rounds == 2 and lookup.versions == (3, 6)
            assert lookup.batched_requests == 1 and lookup.single_key_requests == 3
            (change,) = cluster.changes
            assert set(change.changed) == {FIND_COORDINATOR}
            assert [str(r) for r in change.changed[FIND_COORDINATOR]] == ["0-6", "0-3"]

            # A plain request after the peer went away reconnects too.
            node.apis[FIND_COORDINATOR] = (0, 6)
            await side.in_trio(node.kick)
            await side.wait_until_broken(cluster, 1)
            answer = await cluster.request(1, MetadataRequest(topics=[]))
            assert isinstance(answer, MetadataResponse)
            assert len(cluster.changes) == 2

    with trio.fail_after(30):
        async with fake.running():
            await driver.run(body)


async def test_rolling_upgrade_with_the_emulator(driver: Driver) -> None:
    """2.8 (FindCoordinator v3) next to 3.9 (v6): batched to the 3.9 node, until 2.8 is upgraded."""

    async def body(side: Side) -> None:
        async with side.connect(emu.bootstrap, CONFIG) as cluster:
            agreement = (await cluster.view()).agreement(FIND_COORDINATOR)
            assert agreement.everywhere == 3 and agreement.skewed
            lookup = await cluster.find_coordinators(GROUPS)
            assert lookup.batched and lookup.requests == 2 and lookup.versions == (6,)
            assert all(plan.startswith(f"1000 key(s) to {emu.broker(2).address} ") for plan in lookup.plans)
            expected = {key: emu.state.coordinator_for(key) for key in GROUPS}
            assert {k: f.node_id for k, f in lookup.found.items()} == {
                k: node.node_id for k, node in expected.items() if node is not None
            }
            assert {f.node_id for f in lookup.found.values()} == {1, 2}

            async def upgrade() -> None:
                emu.upgrade(1, "3.9", "kraft-broker")

            await side.in_trio(upgrade)
            await side.wait_until_broken(cluster, 1)
            capabilities = await cluster.capabilities()
            assert str(capabilities[1].broker_range(FIND_COORDINATOR)) == "0-6"
            (change,) = cluster.changes
            assert [str(r) for r in change.changed[FIND_COORDINATOR]] == ["0-3", "0-6"]
            assert not (await cluster.view()).agreement(FIND_COORDINATOR).skewed

    with trio.fail_after(60):
        async with EmulatedCluster(["2.8", "3.9"], kind="kraft-broker") as emu:
            await driver.run(body)


async def test_per_key_and_batched_agree_on_a_multi_node_cluster(driver: Driver) -> None:
    answers: dict[str, tuple[dict[str, int], CoordinatorLookup]] = {}
    with trio.fail_after(60):
        for release in ("2.8", "3.9"):
            async with EmulatedCluster(release, brokers=3, kind="kraft-broker") as emu:
                lookup = await _find(driver, emu.bootstrap, GROUPS)
                answers[release] = ({k: f.node_id for k, f in lookup.found.items()}, lookup)
    (per_key, old), (batched, new) = answers["2.8"], answers["3.9"]
    assert per_key == batched and set(per_key) == set(GROUPS) and set(per_key.values()) == {1, 2, 3}
    assert not old.batched and old.requests == 1000 and new.batched and new.requests == 2


@pytest.mark.parametrize("release", ["2.8", "3.9"])
async def test_key_errors_with_the_emulator(release: str, driver: Driver) -> None:
    errors = {"forbidden": GROUP_AUTHORIZATION_FAILED, "loading": COORDINATOR_LOAD_IN_PROGRESS}

    async def body(side: Side) -> CoordinatorLookup:
        async with side.connect(emu.bootstrap, CONFIG) as cluster:
            found: CoordinatorLookup = await cluster.find_coordinators(
                ["ok", *errors], "transaction", max_attempts=3
            )
            return found

    with trio.fail_after(30):
        async with EmulatedCluster(release, kind="kraft-broker", coordinator_errors=errors) as emu:
            lookup = await driver.run(body)
    assert set(lookup.found) == {"ok"}
    forbidden, loading = lookup.failed["forbidden"], lookup.failed["loading"]
    assert (forbidden.error_name, forbidden.retriable, forbidden.attempts) == (
        "GROUP_AUTHORIZATION_FAILED", False, 1
    )
    assert (loading.error_name, loading.retriable, loading.attempts) == (
        "COORDINATOR_LOAD_IN_PROGRESS", True, 3
    )
    assert lookup.rounds == 3 and lookup.batched == (release == "3.9")


# -- features -------------------------------------------------------------------------------


def two_feature_nodes(*, second_supports: int = 21) -> FakeCluster:
    first = fake_node(1, supported={"metadata.version": (1, 21)}, finalized={"metadata.version": 20}, epoch=5)
    second = fake_node(2, supported={"metadata.version": (1, second_supports)},
                       finalized={"metadata.version": 19}, epoch=4)
    return FakeCluster(first, second, controller_id=2)


async def _features(driver: Driver, bootstrap: str) -> tuple[ClusterFeatures, set[int]]:
    async def body(side: Side) -> tuple[ClusterFeatures, set[int]]:
        async with side.connect(bootstrap, CONFIG) as cluster:
            features: ClusterFeatures = await cluster.describe_features()
            return features, set(cluster.brokers)

    return await driver.run(body)


@broker
@pytest.mark.parametrize("peer", ["tansu", "librdkafka_mock"])
async def test_describe_features_real_brokers(
    peer: str, request: pytest.FixtureRequest, driver: Driver
) -> None:
    server = request.getfixturevalue(peer)
    with trio.fail_after(30):
        features, brokers = await _features(driver, server.bootstrap)
    assert set(features.nodes) == brokers
    assert features.epoch == -1 and features.levels == {} and not features.stale
    assert not features.unreachable


async def test_describe_features_merges_by_epoch(driver: Driver) -> None:
    fake = two_feature_nodes()
    with trio.fail_after(30):
        async with fake.running():
            features, _ = await _features(driver, fake.bootstrap)
    assert features.epoch == 5 and features.levels == {"metadata.version": 20}
    assert [(s.node, s.epoch, s.newest_epoch) for s in features.stale] == [(fake.nodes[2].label, 4, 5)]
    assert str(features.supported_everywhere("metadata.version")) == "1-21"
    assert features.max_safe_level("metadata.version") == 21
    assert "stale" in features.describe()


@broker
async def test_update_features_on_tansu_raises_typed_errors(tansu: TansuBroker, driver: Driver) -> None:
    async def body(side: Side) -> None:
        async with side.connect(tansu.bootstrap, CONFIG) as cluster:
            with pytest.raises(FeatureUpdateBlockedError) as blocked:
                await cluster.update_features({"metadata.version": 21}, dry_run=True)
            assert blocked.value.blocking_brokers == (tansu.bootstrap,)
            assert isinstance(blocked.value, FeatureError | NegotiationError)
            # A level every broker supports (0: not finalized) gets past the check, and
            # then Tansu lacks UpdateFeatures altogether.
            with pytest.raises(UnsupportedVersionError, match="UpdateFeatures"):
                await cluster.update_features({"transaction.version": 0}, dry_run=True)

    with trio.fail_after(30):
        await driver.run(body)


async def test_update_features_dry_run_then_apply(driver: Driver) -> None:
    fake = two_feature_nodes()

    async def body(side: Side) -> None:
        async with side.connect(fake.bootstrap, CONFIG) as cluster:
            report = await cluster.update_features({"metadata.version": 21}, dry_run=True)
            assert report.ok and report.dry_run and report.version == 1
            assert report.node_id == 2  # the controller Metadata names
            sentence = report.by_feature["metadata.version"].sentence()
            assert sentence == "metadata.version can be upgraded to 21."
            ((version, sent),) = fake.nodes[2].requests(UPDATE_FEATURES)
            assert isinstance(sent, UpdateFeaturesRequest) and sent.validate_only and version == 1
            assert (await cluster.describe_features()).levels == {"metadata.version": 20}

            fake.not_controller = 1
            report = await cluster.update_features({"metadata.version": 21})
            assert report.ok and not report.dry_run and report.attempts == 2
            features = await cluster.describe_features()
            assert features.levels == {"metadata.version": 21} and not features.stale

    with trio.fail_after(30):
        async with fake.running():
            await driver.run(body)


async def test_not_controller_until_the_attempts_run_out_is_reported(driver: Driver) -> None:
    fake = two_feature_nodes()
    fake.not_controller = 100

    async def body(side: Side) -> FeatureUpdateReport:
        async with side.connect(fake.bootstrap, CONFIG) as cluster:
            report: FeatureUpdateReport = await cluster.update_features({"metadata.version": 21})
            return report

    with trio.fail_after(30):
        async with fake.running():
            report = await driver.run(body)
    assert not report.ok and report.attempts == CONFIG.retry.attempts
    assert fake.sent(UPDATE_FEATURES) == CONFIG.retry.attempts
    assert report.by_feature["metadata.version"].error_name == "NOT_CONTROLLER"


async def test_update_features_blocked_before_sending(driver: Driver) -> None:
    fake = two_feature_nodes(second_supports=20)

    async def body(side: Side) -> None:
        async with side.connect(fake.bootstrap, CONFIG) as cluster:
            with pytest.raises(FeatureUpdateBlockedError) as blocked:
                await cluster.update_features({"metadata.version": 21}, dry_run=True)
        assert blocked.value.blocking_brokers == (fake.nodes[2].label,)
        assert fake.nodes[2].label in str(blocked.value)

    with trio.fail_after(30):
        async with fake.running():
            await driver.run(body)
    assert fake.sent(UPDATE_FEATURES) == 0


async def test_update_features_with_the_emulator(driver: Driver) -> None:
    async def body(side: Side) -> None:
        async with side.connect(emu.bootstrap, CONFIG) as cluster:
            await side.in_trio(hold(FeatureSnapshot(6, {"metadata.version": 19})))
            features = await cluster.describe_features()
            assert features.epoch == 7 and features.levels == {"metadata.version": 20}
            assert [(s.node, s.epoch) for s in features.stale] == [(emu.broker(2).address, 6)]
            await side.in_trio(hold(None))

            report = await cluster.update_features({"metadata.version": 21}, dry_run=True)
            assert report.ok and report.dry_run and report.version == 1
            assert (await cluster.describe_features()).levels == {"metadata.version": 20}
            report = await cluster.update_features({"metadata.version": 21})
            assert report.ok, report.describe()
            features = await cluster.describe_features()
            assert features.levels == {"metadata.version": 21} and features.epoch == 8
            updates = [r for r in emu.requests if r.api_key == UPDATE_FEATURES]
            assert len(updates) == 2

    def hold(snapshot: FeatureSnapshot | None) -> Callable[[], Awaitable[None]]:
        async def change() -> None:
            emu.broker(2).node.held_features = snapshot

        return change

    with trio.fail_after(30):
        async with EmulatedCluster("3.9", brokers=2, kind="kraft-broker",
                                   finalized_features={"metadata.version": 20}, finalized_epoch=7) as emu:
            await driver.run(body)


async def test_update_features_blocked_by_an_older_broker_in_the_emulator(driver: Driver) -> None:
    async def body(side: Side) -> None:
        async with side.connect(emu.bootstrap, CONFIG) as cluster:
            with pytest.raises(FeatureUpdateBlockedError) as blocked:
                await cluster.update_features({"metadata.version": 21}, dry_run=True)
            assert blocked.value.blocking_brokers == (emu.broker(1).address,)

    with trio.fail_after(30):
        async with EmulatedCluster(["3.8", "3.9"], kind="kraft-broker") as emu:
            await driver.run(body)
            assert not [r for r in emu.requests if r.api_key == UPDATE_FEATURES]


async def test_an_unreachable_broker_is_named(driver: Driver) -> None:
    async def body(side: Side) -> None:
        async with side.connect(emu.broker(1).address, CONFIG) as cluster:
            assert set(cluster.brokers) == {1, 2}

            async def stop() -> None:
                emu.broker(2).stop()

            await side.in_trio(stop)
            with pytest.raises(BrokersUnavailableError) as caught:
                await cluster.capabilities()
            assert set(caught.value.reasons) == {2}
            assert emu.broker(2).address in str(caught.value) and "refused" in str(caught.value)
            assert set(await cluster.capabilities(require_all=False)) == {1}
            lookup = await cluster.find_coordinators(GROUPS[:100])  # node 1 answers for every key
            assert len(lookup.found) == 100 and {f.node_id for f in lookup.found.values()} == {1, 2}
            features = await cluster.describe_features()
            assert set(features.nodes) == {1} and set(features.unreachable) == {2}
            with pytest.raises(BrokersUnavailableError):
                await cluster.update_features({"metadata.version": 21}, dry_run=True)

    with trio.fail_after(30):
        async with EmulatedCluster("3.9", brokers=2, kind="kraft-broker") as emu:
            await driver.run(body)


# -- the three ways of failing to connect ---------------------------------------------------


async def _connect_error(side: Side, bootstrap: str | list[str], config: ConnectionConfig) -> BaseException:
    try:
        async with side.connect(bootstrap, config):
            pass
    except KafkaCompatError as exc:
        return exc
    raise AssertionError("connected")


async def test_unreachable_lists_every_address(driver: Driver) -> None:
    addresses = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
    with trio.fail_after(30):
        error = await driver.run(lambda side: _connect_error(side, addresses, CONFIG))
    assert isinstance(error, NoBrokerReachableError) and isinstance(error, TransportError)
    assert list(error.reasons) == addresses and error.rounds == CONFIG.retry.attempts
    for address in addresses:
        assert address in str(error)
    assert "refused" in str(error)


async def _http_server(stream: trio.SocketStream) -> None:
    try:
        await stream.receive_some(1024)
        await stream.send_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        await stream.aclose()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def test_handshake_failure_is_a_negotiation_error_with_transcript(driver: Driver) -> None:
    closed = f"127.0.0.1:{free_port()}"
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(partial(trio.serve_tcp, _http_server, 0, host="127.0.0.1"))
            http = f"127.0.0.1:{listeners[0].socket.getsockname()[1]}"
            error = await driver.run(lambda side: _connect_error(side, [http, closed], CONFIG))
            nursery.cancel_scope.cancel()
    assert isinstance(error, WrongProtocolError)
    assert isinstance(error, NegotiationError) and error.transcript is not None
    assert "HTTP" in str(error)
    assert any(closed in note and "refused" in note for note in error.__notes__)


@broker
async def test_incompatible_metadata_is_unsupported_version(tansu: TansuBroker, driver: Driver) -> None:
    config = dataclasses.replace(CONFIG, policy=VersionPolicy(blocked={"Metadata": "0+"}))
    with trio.fail_after(30):
        error = await driver.run(lambda side: _connect_error(side, tansu.bootstrap, config))
    assert isinstance(error, UnsupportedVersionError)
    assert "Metadata" in str(error) and error.transcript is not None


def test_the_policy_has_one_way_in() -> None:
    """The version policy is set on ``ConnectionConfig``; connect takes no second one."""
    for connect in (kafkacompat.connect, kafkacompat.aio.connect, kafkacompat.connect_sync):
        assert "policy" not in inspect.signature(connect).parameters, connect
    with pytest.raises(TypeError, match="policy"):
        kafkacompat.connect("localhost:9092", policy=VersionPolicy())  # type: ignore[call-arg]


async def test_errors_in_the_block_are_not_wrapped(driver: Driver) -> None:
    fake = FakeCluster(fake_node(1))

    async def body(side: Side) -> None:
        with pytest.raises(KeyError):
            async with side.connect(fake.bootstrap, CONFIG):
                raise KeyError("mine")
        # Cancelling the block closes the cluster quietly.
        if side.driver == "trio":
            with trio.move_on_after(0.2) as scope:
                async with side.connect(fake.bootstrap, CONFIG) as cluster:
                    await trio.sleep_forever()
            assert scope.cancelled_caught
        else:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2), side.connect(fake.bootstrap, CONFIG) as cluster:
                    await asyncio.sleep(3600)
        with pytest.raises(TransportError):
            await cluster.connection(1)
        assert not cluster.connected()

    with trio.fail_after(30):
        async with fake.running():
            await driver.run(body)


# -- the blocking facade --------------------------------------------------------------------


@broker
def test_sync_facade_against_tansu(tansu: TansuBroker) -> None:
    with kafkacompat.connect_sync(tansu.bootstrap, CONFIG) as cluster:
        assert isinstance(cluster, SyncCluster)
        (node_id,) = cluster.brokers
        assert set(cluster.capabilities()) == {node_id}
        assert cluster.view().version_everywhere(METADATA) == 12
        lookup = cluster.find_coordinators(GROUPS[:100])
        assert lookup.batched and len(lookup.found) == 100
        assert cluster.describe_features().epoch == -1
        with pytest.raises(FeatureUpdateBlockedError):
            cluster.update_features({"metadata.version": 21}, dry_run=True)
        answer = cluster.request(node_id, MetadataRequest(topics=[]))
        assert isinstance(answer, MetadataResponse)
        assert cluster.pick_version(node_id, METADATA) == 12
        thread = cluster._thread
    assert not thread.is_alive()
    with pytest.raises(TransportError):
        cluster.view()


def test_sync_facade_raises_the_same_errors() -> None:
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(NoBrokerReachableError, match="refused"):
        kafkacompat.connect_sync(address, CONFIG)


async def test_sync_facade_update_features_against_the_fake() -> None:
    fake = two_feature_nodes()

    def script() -> tuple[bool, int]:
        with kafkacompat.connect_sync(fake.bootstrap, CONFIG) as cluster:
            report = cluster.update_features({"metadata.version": 21}, dry_run=True)
            try:
                cluster.update_features({"metadata.version": 22})
            except KafkaCompatError as exc:
                assert isinstance(exc, FeatureUpdateBlockedError)
            return report.ok, report.node_id

    with trio.fail_after(30):
        async with fake.running():
            assert await trio.to_thread.run_sync(script) == (True, 2)
