"""The transport's fault table, case by case, through the asyncio driver.

The same proxy (run by trio on a thread), the same exchange (open, Metadata,
FindCoordinator v4 with a key the answer must echo), the same allowed
outcomes as the trio driver's table: the two drivers share one sans-I/O
connection, so they must end every case the same way.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafkacompat.aio import open_connection
from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol import messages as m
from kafkacompat.testing.tansu import TansuBroker
from tests.integration.transport.test_connection_faults import (
    CONFIG,
    DEADLINE,
    KEY,
    TABLE,
    Case,
    check_case_from_another_loop,
)

pytestmark = pytest.mark.broker


async def _exchange(address: tuple[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {"stage": "open", "error": None}
    try:
        async with open_connection(*address, CONFIG) as conn:
            result["handshake"] = conn.handshake
            result["stage"] = "request"
            metadata = await conn.request(m.MetadataRequest(topics=None))
            assert isinstance(metadata, m.MetadataResponse), metadata  # never another's answer
            found = await conn.request(m.FindCoordinatorRequest(coordinator_keys=[KEY]), version=4)
            assert isinstance(found, m.FindCoordinatorResponse), found
            assert [c.key for c in found.coordinators] == [KEY], found  # its own answer
            result["stage"] = "done"
    except KafkaCompatError as exc:
        result["error"] = exc
    return result


@pytest.mark.parametrize("case", TABLE, ids=[c.id for c in TABLE])
def test_fault_table_through_asyncio(tansu: TansuBroker, case: Case) -> None:
    async def bounded(address: tuple[str, int]) -> dict[str, Any]:
        async with asyncio.timeout(DEADLINE):
            return await _exchange(address)

    check_case_from_another_loop(tansu, case, lambda address: asyncio.run(bounded(address)))
