"""Where a broker answers a request otherwise than Kafka: one request per (API, version), outcomes compared.

Theory.  Look-alike software advertises ranges (KIP-35) that say what it
decodes, not that it answers as Kafka does.  The deviations
``negotiation/lookalike_brokers.jsonl`` keeps are measured, and this is how
for the simplest kind: the connection closed instead of an answer.  For each
API of ``REQUESTS`` and each version the broker advertises, a fresh
connection sends one request written by kafkacompat's codec (harmless on any
broker: it reads, or describes and deletes a group that does not exist, or
creates the topic ``traffic`` the clients' traffic uses) and notes what came
back: ``answered`` (a response frame with the request's correlation id),
``closed``, or ``no answer`` within the timeout.  The same probe against a
real Apache Kafka that advertises the version says what Kafka does; a
version Kafka answers and the look-alike closes on is a deviation.

ApiVersions above the broker's own range is the other measured kind
(``api_versions_above``): Kafka answers UNSUPPORTED_VERSION in the v0 layout
whatever version was asked, listing its ApiVersions range, so that a client
can read it and ask again (KIP-511); an answer readable neither that way nor
in the layout of the version asked is ``unreadable``.

Run: ``python -m kafkacompat.testing.deviation_probe HOST:PORT`` prints one
JSON line per (API, version): ``{"api_key", "version", "outcome"}``, then
one per ApiVersions version above the broker's.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from collections.abc import Callable, Mapping

from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol import framing
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    MetadataRequest,
)
from kafkacompat.protocol.messages.api_keys import ApiKey
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.testing.ports import probe_api_versions

__all__ = ["REQUESTS", "api_versions_above", "probe", "probe_one"]

_TOPIC = "traffic"  # the clients' traffic creates it too
_GROUP = "kafkacompat-deviation-probe"  # no such group: describing or deleting it changes nothing
_TOPIC_RESOURCE = 2
_CLIENT_ID = "kafkacompat-deviation-probe"
_API_VERSIONS = int(ApiKey.API_VERSIONS)
_UNSUPPORTED_VERSION = 35


def _create_topics(version: int) -> CreateTopicsRequest:
    topic = CreateTopicsRequest.CreatableTopic(name=_TOPIC, num_partitions=1, replication_factor=1)
    return CreateTopicsRequest(topics=[topic], timeout_ms=5000)


def _describe_configs(version: int) -> DescribeConfigsRequest:
    resource = DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=_TOPIC_RESOURCE, resource_name=_TOPIC, configuration_keys=None
    )
    return DescribeConfigsRequest(resources=[resource])


# The requests of the clients' traffic that are harmless to send, by api key, built per version.
REQUESTS: Mapping[int, Callable[[int], KafkaMessage]] = {
    int(ApiKey.METADATA): lambda version: MetadataRequest(topics=[] if version == 0 else None),
    int(ApiKey.DESCRIBE_GROUPS): lambda version: DescribeGroupsRequest(groups=[_GROUP]),
    int(ApiKey.LIST_GROUPS): lambda version: ListGroupsRequest(),
    int(ApiKey.CREATE_TOPICS): _create_topics,
    int(ApiKey.DESCRIBE_CONFIGS): _describe_configs,
    int(ApiKey.DELETE_GROUPS): lambda version: DeleteGroupsRequest(groups_names=[_GROUP]),
}


def probe_one(host: str, port: int, api_key: int, version: int, timeout: float = 5.0) -> str:
    """One request on a fresh connection: ``answered``, ``closed`` or ``no answer``."""
    outcome, _ = _exchange(host, port, REQUESTS[api_key](version), version, timeout)
    return outcome


def api_versions_above(host: str, port: int, version: int, timeout: float = 5.0) -> str:
    """ApiVersions at ``version``, above the broker's range: how it answers (see the theory).

    ``v0 layout`` (what Kafka does), ``answered as asked`` (a reply in the
    layout of ``version``, readable by the client that asked), ``unreadable``
    (neither), or why there was no reply.
    """
    request = ApiVersionsRequest(client_software_name=_CLIENT_ID, client_software_version="1")
    outcome, frame = _exchange(host, port, request, version, timeout)
    if frame is None:
        return outcome
    for layout, meaning in ((0, "v0 layout"), (version, "answered as asked")):
        try:  # read whole: no byte left over
            _, answer = framing.decode_response(frame, ApiVersionsResponse, layout)
        except KafkaCompatError:
            continue
        if layout == 0 and answer.error_code != _UNSUPPORTED_VERSION:
            continue
        return meaning
    return "unreadable"


def _exchange(
    host: str, port: int, request: KafkaMessage, version: int, timeout: float
) -> tuple[str, bytes | None]:
    """One request on a fresh connection: the outcome and the response frame when there is one."""
    correlation_id = 7
    frame = framing.encode_request(request, version, correlation_id, _CLIENT_ID)
    splitter = framing.FrameSplitter()
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(frame)
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                return "no answer", None
            except ConnectionResetError:
                return "closed", None
            if not chunk:
                return "closed", None
            for response in splitter.feed(chunk):
                if int.from_bytes(response[:4], "big", signed=True) == correlation_id:
                    return "answered", bytes(response)


def probe(host: str, port: int, timeout: float = 5.0) -> dict[tuple[int, int], str]:
    """Every version the broker advertises of every API of ``REQUESTS``: (api key, version) -> outcome."""
    answer = probe_api_versions(host, port, 1, timeout)
    offered = {a.api_key: VersionRange(a.min_version, a.max_version) for a in answer.api_keys}
    outcomes = {}
    for api_key in REQUESTS:
        versions = offered.get(api_key, VersionRange.NONE)
        for version in range(versions.lowest, versions.highest + 1) if not versions.empty else ():
            outcomes[(api_key, version)] = probe_one(host, port, api_key, version, timeout)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafkacompat.testing.deviation_probe", description=__doc__
    )
    parser.add_argument("address", metavar="HOST:PORT")
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args(argv)
    host, _, port = args.address.rpartition(":")
    for (api_key, version), outcome in sorted(probe(host, int(port), args.timeout).items()):
        print(json.dumps({"api_key": api_key, "version": version, "outcome": outcome}), file=sys.stdout)
    offered = probe_api_versions(host, int(port), 1, args.timeout).api_keys
    own = next((a.max_version for a in offered if a.api_key == _API_VERSIONS), 0)
    for version in range(own + 1, ApiVersionsRequest.VALID_VERSIONS.highest + 1):
        outcome = api_versions_above(host, int(port), version, args.timeout)
        print(json.dumps({"api_key": _API_VERSIONS, "version": version, "outcome": outcome}), file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
