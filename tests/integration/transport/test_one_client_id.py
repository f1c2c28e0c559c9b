"""One client id per connection: the configured one is in the header of every request.

The emulated broker records the client id of each request it reads, so these
tests see what reached the wire: the ApiVersions handshake, SASL, and the
requests after it, through both the trio and the asyncio drivers.
"""

from __future__ import annotations

import asyncio

import pytest

from kafkacompat import aio
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.security import SaslConfig as ClientSasl
from kafkacompat.connection.security import Secret
from kafkacompat.protocol.messages import ApiKey, MetadataRequest
from kafkacompat.testing.emulator import EmulatedCluster, SaslConfig, ThreadedCluster
from kafkacompat.transport.connection import open_connection

CLIENT_ID = "billing-7"
SASL = ClientSasl("SCRAM-SHA-256", "alice", Secret("secret"))


def headers(cluster: EmulatedCluster | ThreadedCluster) -> list[tuple[int, str | None]]:
    return [(record.api_key, record.client_id) for record in cluster.requests]


@pytest.mark.parametrize("client_id", [CLIENT_ID, None])
async def test_trio_driver_sends_the_configured_client_id_on_every_request(client_id: str | None) -> None:
    config = ConnectionConfig(client_id=client_id, sasl=SASL, connect_timeout=5, request_timeout=5)
    async with EmulatedCluster("3.9", sasl=SaslConfig({"alice": "secret"})) as cluster:
        host, port = cluster.bootstrap.rsplit(":", 1)
        async with open_connection(host, int(port), config) as conn:
            await conn.request(MetadataRequest(topics=[]))
            await conn.request(MetadataRequest(topics=[]))
        seen = headers(cluster)
    keys = [key for key, _ in seen]
    assert {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE} <= set(keys)
    assert keys.count(ApiKey.METADATA) == 2
    assert {cid for _, cid in seen} == {client_id}


def test_asyncio_driver_sends_the_configured_client_id_on_every_request() -> None:
    config = ConnectionConfig(client_id=CLIENT_ID, connect_timeout=5, request_timeout=5)
    with ThreadedCluster("2.8") as cluster:
        host, port = cluster.bootstrap.rsplit(":", 1)

        async def exchange() -> None:
            async with aio.open_connection(host, int(port), config) as conn:
                await conn.request(MetadataRequest(topics=[]))

        asyncio.run(asyncio.wait_for(exchange(), 30))
        seen = headers(cluster)
    keys = [key for key, _ in seen]
    assert keys[0] == ApiKey.API_VERSIONS and keys[-1] == ApiKey.METADATA
    assert {cid for _, cid in seen} == {CLIENT_ID}
