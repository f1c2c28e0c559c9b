"""Typed requests: a driver's ``request()`` returns, to mypy, the response class of its request.

mypy itself reads a snippet that calls every driver; its ``reveal_type`` lines
say what a user's editor and type checker see, with no ``isinstance`` needed.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from mypy import api

from kafkacompat.protocol import messages
from kafkacompat.protocol.message import KafkaRequest

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = textwrap.dedent(
    """
    from kafkacompat import aio
    from kafkacompat.protocol.messages import ApiVersionsRequest, MetadataRequest, MetadataResponse
    from kafkacompat.transport.cluster import Cluster
    from kafkacompat.transport.connection import BrokerConnection
    from kafkacompat.transport.sync import SyncCluster


    async def calls(trio_conn: BrokerConnection, aio_conn: aio.BrokerConnection, cluster: Cluster) -> None:
        reveal_type(await trio_conn.request(MetadataRequest()))
        reveal_type(await aio_conn.request(ApiVersionsRequest()))
        reveal_type(await cluster.request(None, MetadataRequest()))
        wrong: MetadataResponse = await trio_conn.request(ApiVersionsRequest())


    def blocking(cluster: SyncCluster) -> None:
        reveal_type(cluster.request(1, MetadataRequest()))
    """
)


def test_mypy_infers_the_response_class_of_each_request(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(SNIPPET, encoding="utf-8")
    out, err, _ = api.run([
        "--strict", "--no-error-summary", "--cache-dir", str(ROOT / ".mypy_cache"),
        "--config-file", str(ROOT / "pyproject.toml"), str(snippet),
    ])
    assert not err, err
    revealed = re.findall(r'Revealed type is "([^"]+)"', out)
    assert revealed == [
        "kafkacompat.protocol.messages.metadata.MetadataResponse",
        "kafkacompat.protocol.messages.api_versions.ApiVersionsResponse",
        "kafkacompat.protocol.messages.metadata.MetadataResponse",
        "kafkacompat.protocol.messages.metadata.MetadataResponse",
    ]
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1, out  # only the deliberate mismatch
    assert "ApiVersionsRequest" in errors[0] and "MetadataResponse" in errors[0]


def test_every_generated_request_knows_its_response_class() -> None:
    for (api_key, kind), name in messages.CLASS_BY_KEY.items():
        if kind != "request":
            continue
        request = getattr(messages, name)
        assert issubclass(request, KafkaRequest), name
        response = request.RESPONSE_CLASS
        answered_key = response.API_KEY
        assert response.MESSAGE_TYPE == "response", name
        assert answered_key == api_key, name
        assert response.__name__ == messages.CLASS_BY_KEY[(api_key, "response")]
