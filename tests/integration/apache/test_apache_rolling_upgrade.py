"""A rolling upgrade for real: three brokers and a controller of Kafka 3.9 rolled to 4.0, one node at a time.

The controller goes first, then each broker; every node comes back on its
ports and data running 4.0.2.  After each step kafkacompat reads the node's
capabilities again: the release guess names the release it now runs, and its
picks follow it (Metadata v13 on a 4.0 broker, v12 on the 3.9 ones still
waiting) while the cluster is mixed.  Then metadata.version is finalized at
4.0-IV3 and every broker reports it with a newer feature epoch.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkacompat.blocking.probe import probe_broker
from kafkacompat.cli import main
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.testing import ApacheKafka
from tests.integration.apache.conftest import started
from tests.integration.cli.cli_runner import FAST

pytestmark = pytest.mark.broker

FROM, TO = "3.9.2", "4.0.2"
METADATA = 3
MV = "metadata.version"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ApacheKafka]:
    yield from started(ApacheKafka(FROM, mode="kraft-split", brokers=3))


def _probe(port: int) -> BrokerCapabilities:
    return probe_broker("127.0.0.1", port, ConnectionConfig(connect_timeout=3.0, request_timeout=5.0))


def _guess(capabilities: BrokerCapabilities) -> str:
    return str(capabilities.release_guess)


def test_roll_3_9_to_4_0_then_finalize(cluster: ApacheKafka, capsys: pytest.CaptureFixture[str]) -> None:
    brokers = {node_id: port for node_id, _, port in cluster.broker_endpoints}
    (controller_id, _, controller_port), *_ = cluster.controller_endpoints
    before = {node_id: _probe(port) for node_id, port in brokers.items()}
    assert {_guess(c) for c in before.values()} == {"Kafka 3.9 (kraft-broker)"}
    assert {c.pick_version(METADATA) for c in before.values()} == {12}
    first_epoch = max(c.finalized_features_epoch for c in before.values())

    cluster.stop_node(controller_id)
    cluster.start_node(controller_id, TO)
    assert _guess(_probe(controller_port)) == "Kafka 4.0 (kraft-controller)"

    rolled: set[int] = set()
    for node_id, port in brokers.items():
        cluster.stop_node(node_id)
        for other, other_port in brokers.items():  # the rest of the cluster keeps serving
            if other != node_id:
                assert _probe(other_port).pick_version(METADATA) == (13 if other in rolled else 12)
        cluster.start_node(node_id, TO)
        rolled.add(node_id)
        again = _probe(port)
        assert _guess(again) == "Kafka 4.0 (kraft-broker)"
        assert again.pick_version(METADATA) == 13
        assert again.finalized_features[MV].highest == 21  # still 3.9-IV0 until finalized

    capsys.readouterr()
    code = main(["features", "upgrade", cluster.bootstrap, "--release-version", "4.0-IV3", *FAST])
    assert (code, capsys.readouterr().out) == (0, "metadata.version was upgraded to 25.\n")
    after = {node_id: _probe(port) for node_id, port in brokers.items()}
    assert {c.finalized_features[MV].highest for c in after.values()} == {25}
    assert min(c.finalized_features_epoch for c in after.values()) > first_epoch
