"""UpdateFeatures for real: a scratch Kafka 4.0 formatted at transaction.version 0 and group.version 0.

A dry run changes nothing; the real upgrade to transaction.version 2 and
group.version 1 is seen by ``features describe`` and, on a fresh handshake,
moves kafkacompat's picks past the feature gates: EndTxn v5 (KIP-890) and
ConsumerGroupHeartbeat (KIP-848) become usable.
"""

from __future__ import annotations

import pytest

from kafkacompat.blocking.probe import probe_broker
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import UnsupportedVersionError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.testing import ApacheKafka
from tests.integration.cli.cli_runner import FAST, Runner

pytestmark = pytest.mark.broker

END_TXN, CONSUMER_GROUP_HEARTBEAT = 26, 68
TV, GV = "transaction.version", "group.version"


def _probe(kafka: ApacheKafka) -> BrokerCapabilities:
    host, port = kafka.bootstrap.split(":")
    return probe_broker(host, int(port), ConnectionConfig(connect_timeout=3.0, request_timeout=5.0))


def _levels(output: str) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        if line.startswith("Feature: "):
            fields = dict(part.split(": ", 1) for part in line.split("\t"))
            found[fields["Feature"]] = fields["FinalizedVersionLevel"]
    return found


async def test_dry_run_then_a_real_upgrade_and_the_picks_follow(scratch: ApacheKafka, cli: Runner) -> None:
    before = _probe(scratch)
    assert before.pick_version(END_TXN) == 4  # TV 0: EndTxn v5 is gated
    with pytest.raises(UnsupportedVersionError):
        before.pick_version(CONSUMER_GROUP_HEARTBEAT)  # GV 0: the new consumer protocol is off

    upgrade = ("features", "upgrade", scratch.bootstrap, "--feature", f"{TV}=2", "--feature", f"{GV}=1")
    dry = await cli(*upgrade, "--dry-run", *FAST)
    assert (dry.code, dry.stdout) == (0, f"{GV} can be upgraded to 1.\n{TV} can be upgraded to 2.\n"), (
        dry.stderr
    )
    assert _levels((await cli("features", "describe", scratch.bootstrap, *FAST)).stdout)[TV] == "0"

    real = await cli(*upgrade, *FAST)
    assert (real.code, real.stdout) == (0, f"{GV} was upgraded to 1.\n{TV} was upgraded to 2.\n"), real.stderr
    levels = _levels((await cli("features", "describe", scratch.bootstrap, *FAST)).stdout)
    assert (levels[TV], levels[GV]) == ("2", "1")

    after = _probe(scratch)
    assert after.finalized_features_epoch > before.finalized_features_epoch
    assert after.pick_version(END_TXN) == 5
    assert after.pick_version(CONSUMER_GROUP_HEARTBEAT) == 1
