"""Feature discovery at ApiVersions v4: below it a 3.9+ broker leaves out features of minimum 0.

The emulator's 3.9+ profiles do what Kafka does (KAFKA-17011): an answer below
v4 lists only the supported features whose minimum level is above 0, i.e.
metadata.version.  The capabilities, and the inspector, say when the list is
partial for that reason.
"""

from __future__ import annotations

from kafkacompat.blocking.probe import probe_broker
from kafkacompat.cli.render_inspect import details_lines
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.testing.emulator import ThreadedCluster


def _probe(release: str, max_version: int) -> BrokerCapabilities:
    handshake = HandshakeConfig(max_version=max_version)
    config = ConnectionConfig(connect_timeout=3.0, request_timeout=5.0, handshake=handshake)
    with ThreadedCluster(release) as cluster:
        host, port = cluster.bootstrap.split(":")
        return probe_broker(host, int(port), config)


def test_v4_lists_every_feature_and_says_nothing() -> None:
    capabilities = _probe("4.0", 4)
    assert {"metadata.version", "group.version", "transaction.version"} <= set(
        capabilities.supported_features
    )
    assert capabilities.features_partial is None


def test_below_v4_a_4x_broker_lists_metadata_version_only_and_the_list_is_called_partial() -> None:
    capabilities = _probe("4.0", 3)
    assert capabilities.transcript is not None and capabilities.transcript.api_versions_version == 3
    assert set(capabilities.supported_features) == {"metadata.version"}
    assert capabilities.features_partial is not None
    assert "KAFKA-17492" in capabilities.features_partial
    text = "\n".join(details_lines(capabilities))
    assert "\tsupported features partial: ApiVersions was answered at v3" in text


def test_a_broker_without_v4_settling_at_v3_is_whole_before_3_7() -> None:
    capabilities = _probe("3.6", 4)
    assert capabilities.transcript is not None and capabilities.transcript.api_versions_version == 3
    assert capabilities.features_partial is None


def test_a_3_7_broker_at_v3_may_be_partial() -> None:
    capabilities = _probe("3.7", 4)
    assert capabilities.features_partial is not None
