"""What one plaintext connection of the trio and blocking drivers imports, against a real broker.

Peak RSS of import + one negotiated connection is issue 14's memory target
(``make bench``); these tests keep the modules behind it from creeping back:
none of the modules only SASL, errors, KIP-896 closes, feature gates or the
release guess need, and at most the kafkacompat modules counted when the
target was met.  A new module on the path must be worth its weight: raise the
budget only with a bench run that shows the target still holds.
"""

from __future__ import annotations

import pytest

from kafkacompat.testing.tansu import TansuBroker
from tests.support.connection_footprint import NOT_FOR_A_PLAIN_CONNECTION, added_modules, ours

# kafkacompat modules each driver loaded when the RSS targets were met (issue 14); the trio
# driver's one more since is connection.py split in two (its tasks in connection_tasks.py).
# Three more since the layers became folders (issue 24): the private _version and _lazy,
# which the package face held before, and the connection kit's package (the blocking
# driver's own package replaces transport's); `make bench` showed the RSS targets still held.
# One more for each: negotiation.handshake.identity (KIP-1242).
# Two more for each: protocol.codec_path and the native reader protocol._native (issue 28), which
# every generated message module installs its readers through.  Two fewer since the handshake's
# pre-0.10 part (handshake.legacy) and the SASL login (connection.sasl) load only when a broker
# needs them (issue 24).  One fewer for each (issue 27/29's memory target): the identity
# (negotiation.handshake.identity) loads only where the cluster layer makes one; the first
# contact's names (negotiation.peer_kind) only when a peer is not Kafka.
# One more for each: the first contact's clock (connection.first_contact), split out of
# client_connection for reading (issue 24); its code was loaded before, in that module.
# One fewer for each (issue 24's memory target): the native reader loads on the first decode past
# the handshake (protocol.codec_path), which a connection that only negotiates never makes.
# One more for the blocking driver and the probe: connection.driven, what every driver's connection
# holds, written once (issue 24; that code was in each driver before).  The trio driver's count
# stays: transport.deadlines went, its heap into the connection kit.
BUDGET = {"trio": 41, "blocking": 37, "probe": 38}


@pytest.mark.broker
@pytest.mark.parametrize("driver", sorted(BUDGET))
def test_a_plaintext_connection_loads_nothing_it_does_not_use(tansu: TansuBroker, driver: str) -> None:
    added = added_modules(driver, tansu.host, tansu.port)
    assert sorted(added & NOT_FOR_A_PLAIN_CONNECTION) == []
    loaded = ours(added)
    assert len(loaded) <= BUDGET[driver], loaded
    assert "kafkacompat.protocol.messages.api_versions" in loaded  # it did negotiate


@pytest.mark.broker
def test_the_trio_driver_adds_only_dataclasses_to_what_trio_loads(tansu: TansuBroker) -> None:
    added = added_modules("trio", tansu.host, tansu.port)
    assert sorted(m for m in added if m.partition(".")[0] != "kafkacompat") == ["dataclasses"]
