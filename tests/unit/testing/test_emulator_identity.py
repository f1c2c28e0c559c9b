"""The emulator's 4.4 nodes check ApiVersions v5 identities as a real 4.4.0 node did (KIP-1242).

Observed on a real 4.4.0 KRaft node: its broker listener answers REBOOTSTRAP_REQUIRED
(129) to a wrong cluster id or node id and INVALID_REQUEST (42) to one half of the
identity alone; its controller listener accepts any identity but still refuses one half.
4.3.1 answers v5 with UNSUPPORTED_VERSION naming ApiVersions 0-4.
"""

from __future__ import annotations

import pytest

from kafkacompat.protocol.messages import ApiVersionsRequest
from tests.unit.testing.emulator_harness import Harness, cluster

CLUSTER = "kafkacompat-emulated"  # the emulator's default cluster id


def ask(release: str, cluster_id: str | None, node_id: int) -> int:
    harness = Harness(cluster(release))
    request = ApiVersionsRequest(
        client_software_name="t", client_software_version="1", cluster_id=cluster_id, node_id=node_id
    )
    reply = harness.call(request, 5, read_as=None if release.startswith("4.4") else 0)
    return int(reply.error_code)


@pytest.mark.parametrize(
    ("cluster_id", "node_id", "broker", "controller"),
    [
        (None, -1, 0, 0),  # no identity: nothing to check
        (CLUSTER, 1, 0, 0),  # the right one
        ("someone-else", 1, 129, 0),  # a controller does not check
        (CLUSTER, 2, 129, 0),
        (None, 1, 42, 42),  # one half alone is refused everywhere
        (CLUSTER, -1, 42, 42),
    ],
)
def test_a_44_node_checks_like_the_real_one(
    cluster_id: str | None, node_id: int, broker: int, controller: int
) -> None:
    assert ask("4.4/kraft-broker", cluster_id, node_id) == broker
    assert ask("4.4/kraft-controller", cluster_id, node_id) == controller


def test_a_43_node_does_not_know_v5() -> None:
    assert ask("4.3/kraft-broker", CLUSTER, 1) == 35
