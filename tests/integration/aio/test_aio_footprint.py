"""What one plaintext connection of the asyncio driver imports, against a real broker.

The asyncio counterpart of tests/integration/transport/test_connection_footprint.py:
``import asyncio`` is the floor (it loads ssl), and kafkacompat adds its
negotiation core, its codec and three small standard-library modules, nothing
that only SASL, errors, KIP-896 closes, feature gates or the release guess need.
"""

from __future__ import annotations

import pytest

from kafkacompat.testing.tansu import TansuBroker
from tests.support.connection_footprint import NOT_FOR_A_PLAIN_CONNECTION, added_modules, ours

# kafkacompat modules one asyncio connection loads: aio.channel (the bare-socket path,
# three loop turns per connect instead of eight) and the pipeline's events, but not the
# version picker, the pipeline or the capability-change record, which a handshake never uses.
# Two more since the layers became folders (issue 24): the private _version and _lazy, and the
# connection kit's package in place of the trio transport's; `make bench` showed the RSS
# target still held.
# One more: negotiation.handshake.identity (ApiVersions v5's identity, KIP-1242).
# Two more: protocol.codec_path and the native reader protocol._native (issue 28).  Two fewer
# since the handshake's pre-0.10 part and the SASL login load only when a broker needs them
# (issue 24).  One fewer (issue 27/29's memory target): negotiation.handshake.identity loads only
# where the cluster layer makes an identity; the first contact's names (negotiation.peer_kind)
# only when a peer is not Kafka.
# One more: connection.first_contact, split out of client_connection (issue 24), same code.
# One fewer (issue 24's memory target): the native reader loads on the first decode past the
# handshake, which a connection that only negotiates never makes.
# One more: connection.driven, what every driver's connection holds, written once (issue 24).
BUDGET = 37


@pytest.mark.broker
def test_a_plaintext_asyncio_connection_loads_nothing_it_does_not_use(tansu: TansuBroker) -> None:
    added = added_modules("asyncio", tansu.host, tansu.port)
    assert sorted(added & NOT_FOR_A_PLAIN_CONNECTION) == []
    loaded = ours(added)
    assert len(loaded) <= BUDGET, loaded
    assert "kafkacompat.protocol.messages.api_versions" in loaded
    standard_library = sorted(m for m in added if m.partition(".")[0] != "kafkacompat")
    assert standard_library == ["__future__", "copy", "dataclasses"]
