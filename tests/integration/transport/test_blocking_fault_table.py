"""The transport's fault table, case by case, through the blocking driver.

The same proxy (run by trio on a thread), the same exchange (open, Metadata,
FindCoordinator v4 with a key the answer must echo), the same allowed
outcomes as the trio and asyncio drivers' tables: all three share one sans-I/O
connection, so they must end every case the same way.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol import messages as m
from kafkacompat.testing.tansu import TansuBroker
from kafkacompat.transport.blocking import open_blocking_connection
from tests.integration.transport.test_connection_faults import (
    CONFIG,
    KEY,
    MAX_PROXY_CONNECTIONS,
    REQUEST_TIMEOUT,
    TABLE,
    Case,
    _check,
)
from tests.support.fault_proxy import fault_proxy
from tests.support.trio_thread import in_trio_thread

pytestmark = pytest.mark.broker


def _exchange(address: tuple[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {"stage": "open", "error": None}
    try:
        with open_blocking_connection(*address, CONFIG) as conn:
            result["handshake"] = conn.handshake
            result["stage"] = "request"
            metadata = conn.request(m.MetadataRequest(topics=None))
            assert isinstance(metadata, m.MetadataResponse), metadata  # never another's answer
            found = conn.request(m.FindCoordinatorRequest(coordinator_keys=[KEY]), version=4)
            assert isinstance(found, m.FindCoordinatorResponse), found
            assert [c.key for c in found.coordinators] == [KEY], found  # its own answer
            result["stage"] = "done"
    except KafkaCompatError as exc:
        result["error"] = exc
    return result


@pytest.mark.parametrize("case", TABLE, ids=[c.id for c in TABLE])
def test_fault_table_through_the_blocking_driver(tansu: TansuBroker, case: Case) -> None:
    server = lambda: fault_proxy(  # noqa: E731
        (tansu.host, tansu.port), to_client=case.to_client, to_broker=case.to_broker
    )
    with in_trio_thread(server) as running:
        proxy = running.value
        started = time.monotonic()
        result = _exchange(proxy.address)  # every socket call of the driver has a deadline
        elapsed = time.monotonic() - started
        # Nothing left open: the proxy saw every client socket closed.
        running.call(proxy.release)
        give_up = time.monotonic() + 3.0
        while not running.call(lambda: all(r.finished.is_set() for r in proxy.connections)):
            assert time.monotonic() < give_up, "a client socket was left open"
            time.sleep(0.01)
    _check(case, result)
    assert elapsed < 2 * REQUEST_TIMEOUT + 2.0, elapsed
    assert len(proxy.connections) <= MAX_PROXY_CONNECTIONS
