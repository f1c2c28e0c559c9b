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

Run: ``python -m kafkacompat.testing.deviation_probe HOST:PORT`` prints one
JSON line per (API, version): ``{"api_key", "version", "outcome"}``.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from collections.abc import Callable, Mapping

from kafkacompat.protocol import framing
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
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

__all__ = ["REQUESTS", "probe", "probe_one"]

_TOPIC = "traffic"  # the clients' traffic creates it too
_GROUP = "kafkacompat-deviation-probe"  # no such group: describing or deleting it changes nothing
_TOPIC_RESOURCE = 2
_CLIENT_ID = "kafkacompat-deviation-probe"


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
    correlation_id = 7
    frame = framing.encode_request(REQUESTS[api_key](version), version, correlation_id, _CLIENT_ID)
    splitter = framing.FrameSplitter()
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(frame)
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                return "no answer"
            except ConnectionResetError:
                return "closed"
            if not chunk:
                return "closed"
            for response in splitter.feed(chunk):
                if int.from_bytes(response[:4], "big", signed=True) == correlation_id:
                    return "answered"


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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
