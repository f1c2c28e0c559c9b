"""One blocking connection, no event loop: negotiate, then send a request at the version picked.

    python examples/blocking_connection.py --bootstrap 127.0.0.1:9092

Needs: any Kafka broker, 0.8.0 to today's, or `kafkacompat emulate`.  Ends with
one line and exit status 1 when the broker cannot be used.
"""

import argparse

from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol.messages import MetadataRequest
from kafkacompat.transport import ConnectionConfig, open_blocking_connection

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--bootstrap", required=True, help="host:port of one broker")
address = parser.parse_args().bootstrap
config = ConnectionConfig(connect_timeout=3, request_timeout=3)
host, _, port = address.rpartition(":")
try:
    with open_blocking_connection(host, int(port), config) as conn:
        assert conn.capabilities is not None
        print(conn.node, f"{len(conn.capabilities.api_ranges)} APIs,",
              "Metadata", conn.capabilities.broker_range(3), "-> v", conn.capabilities.pick_version(3))
        response = conn.request(MetadataRequest(topics=[]))
        print("brokers:", [(b.node_id, b.host, b.port) for b in response.brokers])
except KafkaCompatError as exc:
    raise SystemExit(f"failed: {type(exc).__name__}: {exc}") from None
