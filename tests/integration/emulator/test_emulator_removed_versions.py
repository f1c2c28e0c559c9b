"""Kafka 4.x refusing removed versions, in the emulator and as the client reports it.

A 4.x broker closes the connection, without an answer, on a request at a
version Kafka 4.0+ removed (KIP-896), and on Produce v0-2 although it still
advertises them (KAFKA-18659).  The emulator's 4.x profiles do the same, and
``BrokerConnection`` turns the bare close after such a request into a
``VersionRemovedError`` that names the version and the removal.
"""

from __future__ import annotations

import pytest
import trio

from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.errors import TransportError, VersionRemovedError
from kafkacompat.protocol import messages as m
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.testing.emulator import EmulatedCluster, Fault
from kafkacompat.transport.connection import open_connection

QUICK = ConnectionConfig(connect_timeout=3.0, request_timeout=5.0)


def _produce() -> m.ProduceRequest:
    return m.ProduceRequest(acks=1, timeout_ms=1000)


async def _request(
    release: str, message: KafkaMessage, version: int, faults: tuple[Fault, ...] = ()
) -> BaseException:
    with trio.fail_after(15):
        async with EmulatedCluster(release, faults=faults) as cluster:
            host, port = cluster.bootstrap.split(",")[0].split(":")
            async with open_connection(host, int(port), QUICK) as connection:
                with pytest.raises(TransportError) as caught:
                    await connection.request(message, version=version)
            last = cluster.requests[-1]
    assert (last.api_key, last.api_version) == (message.API_KEY, version)
    return caught.value


async def test_produce_v2_is_advertised_by_4x_but_the_connection_is_closed() -> None:
    error = await _request("4.0", _produce(), 2)
    assert isinstance(error, VersionRemovedError)
    assert (error.api_key, error.version) == (0, 2)
    assert "this broker removed that version" in str(error)
    assert "KAFKA-18659" in str(error)


async def test_fetch_v3_on_4x_is_a_removed_version() -> None:
    error = await _request("4.1", m.FetchRequest(), 3)
    assert isinstance(error, VersionRemovedError)
    assert "Fetch v3" in str(error) and "KIP-896" in str(error)


async def test_share_fetch_v0_on_4_1_was_early_access() -> None:
    error = await _request("4.1", m.ShareFetchRequest(), 0)
    assert isinstance(error, VersionRemovedError)
    assert "early access in 4.0, dropped in 4.1" in str(error)


async def test_a_3x_broker_closing_on_an_advertised_version_is_not_called_a_removal() -> None:
    # 3.9 answers Produce 0-11 and Fetch 0-17; a fault closes on Produce v2:
    # a plain TransportError, not a removal.
    error = await _request("3.9", _produce(), 2, (Fault.close(0),))
    assert not isinstance(error, VersionRemovedError)


async def test_the_emulator_log_says_why_it_closed() -> None:
    with trio.fail_after(15):
        async with EmulatedCluster("4.2") as cluster:
            host, port = cluster.bootstrap.split(":")
            async with open_connection(host, int(port), QUICK) as connection:
                with pytest.raises(VersionRemovedError):
                    await connection.request(_produce(), version=1)
            outcome = cluster.requests[-1].outcome
    assert outcome == "closed: Produce v1: still advertised by 4.x but refused (KAFKA-18659)"
