"""A health check in a few lines: probe one broker without an event loop (no trio, no asyncio).

    python examples/probe_health.py --bootstrap 127.0.0.1:9092

Needs: any Kafka broker, 0.8.0 to today's, or `kafkacompat emulate`.  Ends with
one line and exit status 1 when the broker cannot be used.
"""

import argparse

from kafkacompat import probe_address
from kafkacompat.errors import KafkaCompatError

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--bootstrap", required=True, help="host:port of one broker")
address = parser.parse_args().bootstrap
try:
    caps = probe_address(address)
except KafkaCompatError as exc:
    raise SystemExit(f"unhealthy: {exc}") from None
print(caps.node, caps.release_guess.text, f"{len(caps.api_ranges)} APIs")
handshake = caps.transcript  # how the versions were learnt (None only for capabilities built by hand)
via = handshake.api_versions_version if handshake is not None else "-"
print("Metadata", caps.broker_range(3), "via ApiVersions", via)
