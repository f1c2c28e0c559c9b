"""Rolling upgrades for real, with client traffic throughout: KRaft 3.9 to 4.0, ZooKeeper 2.8 to 3.0.

The KRaft roll runs in make test; the ZooKeeper one is marked ``long`` and runs in
``make real-kafka-rolling`` (make test's time budget).

KRaft: three brokers and a controller of Kafka 3.9 are rolled to 4.0, the
controller first, then each broker; every node comes back on its ports and
data running 4.0.2.  ZooKeeper: three brokers of 2.8 (ZooKeeper stays) are
rolled to 3.0 with ``inter.broker.protocol.version=2.8`` pinned during the
roll, as Kafka's upgrade notes ask.

All the while one ``kafkacompat.connect`` cluster (trio) and one
``kafkacompat.aio.connect`` cluster (asyncio) send Metadata to every broker
and look up the coordinators of 200 groups in batched calls
(``rolling_traffic``).  Afterwards:

- each broker's capabilities were read again when its connection came back:
  both clusters recorded a change from the old release to the new on every
  broker;
- the picks followed each node: a node's Metadata picks go from the old
  release's version to the new one's and never back, and some round saw both
  at once (a mixed cluster);
- FindCoordinator fell back per destination while mixed (ZooKeeper roll:
  single-key v3 while only 2.8 brokers served, batched v4 to a 3.0 broker as
  soon as one did);
- no request was lost or misrouted: every lookup answered for exactly the 200
  keys asked, each found at a broker of the cluster, every Metadata answer
  named only the cluster's brokers, and every failure while a node was down
  was a typed error;
- KRaft: metadata.version is then finalized at 4.0-IV3, and the newer
  feature epoch wins in both clusters' merged view.
"""

from __future__ import annotations

import threading
import time

import pytest
import trio

from kafkacompat.blocking.probe import probe_broker
from kafkacompat.cli import main
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import KafkaCompatError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.testing import ApacheKafka
from tests.integration.apache.rolling_traffic import (
    FIND_COORDINATOR,
    GROUPS,
    METADATA,
    TrafficLog,
    asyncio_traffic,
    in_thread,
    trio_traffic,
)
from tests.integration.cli.cli_runner import FAST

pytestmark = pytest.mark.broker

MV = "metadata.version"
KRAFT_FROM, KRAFT_TO = "3.9.2", "4.0.2"
ZK_FROM, ZK_TO = "2.8.2", "3.0.2"


def _probe(port: int) -> BrokerCapabilities:
    return probe_broker("127.0.0.1", port, ConnectionConfig(connect_timeout=3.0, request_timeout=5.0))


async def _roll(
    kafka: ApacheKafka, release: str, *, controllers_first: bool, logs: tuple[TrafficLog, TrafficLog]
) -> tuple[float, float]:
    """Roll every node to ``release`` while both drivers send traffic: when the first broker stopped,
    when the last came back (``time.monotonic``, the traffic's clock)."""
    trio_log, aio_log = logs
    stop, stop_thread, describe = trio.Event(), threading.Event(), trio.Event()
    first_stop = last_back = 0.0
    thread = asyncio_traffic(kafka.bootstrap, aio_log, stop_thread)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio_traffic, kafka.bootstrap, trio_log, stop, describe)
        await trio.sleep(1.5)  # a few rounds on the old release
        if controllers_first:
            for node_id, _, _ in kafka.controller_endpoints:
                await in_thread(kafka.stop_node, node_id)
                await in_thread(kafka.start_node, node_id, release)
        for node_id, _, _ in kafka.broker_endpoints:
            first_stop = first_stop or time.monotonic()
            await in_thread(kafka.stop_node, node_id)
            await trio.sleep(1.0)  # traffic meets the missing node
            await in_thread(kafka.start_node, node_id, release)
            last_back = time.monotonic()
            await trio.sleep(1.0)  # and the node that came back
        if kafka.mode != "zookeeper":
            await in_thread(_finalize, kafka)
            describe.set()
        await trio.sleep(1.0)
        stop.set()
    stop_thread.set()
    await trio.to_thread.run_sync(thread.join, 60.0)
    assert not thread.is_alive(), "the asyncio traffic did not stop"
    return first_stop, last_back


def _finalize(kafka: ApacheKafka) -> None:
    code = main(["features", "upgrade", kafka.bootstrap, "--release-version", "4.0-IV3", *FAST])
    assert code == 0


def _check_traffic(
    log: TrafficLog, kafka: ApacheKafka, api_key: int, old: tuple[int, str], new: tuple[int, str]
) -> None:
    """What every scenario asks of one driver's traffic (see the module's docstring).

    ``old`` and ``new``: the version of ``api_key`` picked on each release, and its release guess.
    """
    (old_pick, old_guess), (new_pick, new_guess) = old, new
    brokers = {node_id for node_id, _, _ in kafka.broker_endpoints}
    unexpected = [(what, exc) for _, what, exc in log.errors if not isinstance(exc, KafkaCompatError)]
    assert unexpected == [], f"{log.driver}: untyped failures {unexpected}"
    assert log.rounds >= 10, f"{log.driver}: only {log.rounds} rounds"
    # Picks follow each node, and never go back.
    for node_id in brokers:
        picks = log.picks_of(node_id, api_key)
        seen = [c.describe() for c in log.changes]  # how the node was negotiated on each reconnection
        assert picks[0] == old_pick and picks[-1] == new_pick, (log.driver, node_id, picks, seen)
        first_new = picks.index(new_pick)
        assert set(picks[first_new:]) == {new_pick}, (log.driver, node_id, picks)
    assert _mixed(log, api_key), f"{log.driver}: no moment saw the cluster mixed"
    # Capabilities were read again when each connection came back.
    changed = {(c.node, c.release_before, c.release_after) for c in log.changes}
    addresses = {f"127.0.0.1:{port}" for _, _, port in kafka.broker_endpoints}
    assert {
        node for node, before, after in changed if (before, after) == (old_guess, new_guess)
    } == addresses, (
        log.driver,
        changed,
    )
    # Nothing lost or misrouted.
    assert all(named <= brokers for named in log.metadata_brokers), log.driver
    for lookup in log.lookups:
        assert lookup.found | lookup.failed == set(GROUPS) and not lookup.found & lookup.failed, log.driver
        assert lookup.coordinators <= brokers, (log.driver, lookup.coordinators)
    assert log.lookups[-1].failed == frozenset(), f"{log.driver}: the last lookup failed keys"


def _mixed(log: TrafficLog, api_key: int) -> bool:
    """Whether, at some moment, one node had moved on while another had not (by the picks' order)."""
    latest: dict[int, int] = {}
    for _, node_id, key, version in log.picks:
        if key != api_key:
            continue
        latest[node_id] = version
        if len(set(latest.values())) > 1:
            return True
    return False


async def test_kraft_roll_3_9_to_4_0_under_traffic_then_finalize(kraft: ApacheKafka) -> None:
    brokers = {node_id: port for node_id, _, port in kraft.broker_endpoints}
    first_epoch = max(_probe(port).finalized_features_epoch for port in brokers.values())
    logs = (TrafficLog("trio"), TrafficLog("asyncio"))
    await _roll(kraft, KRAFT_TO, controllers_first=True, logs=logs)

    (_, _, controller_port), *_ = kraft.controller_endpoints
    assert str(_probe(controller_port).release_guess) == "Kafka 4.0 (kraft-controller)"
    old, new = (12, "Kafka 3.9 (kraft-broker)"), (13, "Kafka 4.0 (kraft-broker)")
    for log in logs:
        _check_traffic(log, kraft, METADATA, old, new)
        # FindCoordinator batches on 3.9 and 4.0 alike: every lookup was batched (v4+).
        assert all(lookup.batched_requests == lookup.requests for lookup in log.lookups), log.driver
        # The newer feature epoch wins in each cluster's merged view.
        features = log.final_features
        assert features is not None, log.driver
        assert features.levels[MV] == 25 and features.epoch > first_epoch, (log.driver, features.levels)
        assert features.epoch == max(node.epoch for node in features.nodes.values()), log.driver
    after = [_probe(port) for port in brokers.values()]
    assert {c.finalized_features[MV].highest for c in after} == {25}


@pytest.mark.long  # make real-kafka-rolling, not make test (about 45 s)
async def test_zookeeper_roll_2_8_to_3_0_under_traffic(zookeeper: ApacheKafka) -> None:
    logs = (TrafficLog("trio"), TrafficLog("asyncio"))
    first_stop, last_back = await _roll(zookeeper, ZK_TO, controllers_first=False, logs=logs)
    # Metadata is 0-11 on both; FindCoordinator goes from 0-3 to 0-4 (KIP-699, batched).
    old, new = (3, "Kafka 2.8 (zk-broker)"), (4, "Kafka 3.0 (zk-broker)")
    for log in logs:
        _check_traffic(log, zookeeper, FIND_COORDINATOR, old, new)
        # FindCoordinator falls back per destination: single-key v3 while only 2.8 brokers served,
        # batched v4 to a 3.0 broker as soon as one was there to take the batch.
        before = [lookup for lookup in log.lookups if lookup.at < first_stop]
        assert before and all(lookup.versions == (3,) and not lookup.batched_requests for lookup in before)
        mixed = [lookup for lookup in log.lookups if first_stop < lookup.at < last_back]
        assert any(lookup.versions == (4,) and lookup.batched_requests for lookup in mixed), (
            f"{log.driver}: no batched lookup while the cluster was mixed"
        )
        assert log.lookups[-1].versions == (4,) and log.lookups[-1].batched_requests >= 1, log.lookups[-1]
