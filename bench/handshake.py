"""ApiVersions v5 (KIP-1242) costs: round trips and handshake time on real Kafka 4.3.1 and 4.4.0.

Each release runs as one real broker (``ApacheKafka``, KRaft with a controller of
its own), behind a ``CountingProxy`` that counts every client's requests from the
wire and times them (from the TCP accept to the last ApiVersions answer of the
connection's handshake); no client is trusted for its own count.  On the same
broker, in the same run:

- kafkacompat's three drivers (trio, asyncio, blocking): ROUNDS connections to the
  broker, each sending the broker's identity (node 1 of its cluster, as the cluster
  layer does for a known node) and sharing one memory of advertised ApiVersions
  maxima, as the cluster layer's connections do;
- Java's ``kafka-clients`` of the broker's release, and 4.4.0's on the 4.3.1 broker
  (a client upgraded before its brokers): an Admin client made ROUNDS times in one JVM,
  each describing the cluster (a bootstrap connection, then the node's own);
- franz-go (the library kcl is built on) made ROUNDS times in one process, each
  asking for the brokers' metadata; kcl itself where it installs (see the note).

"First" is a client's first connection to the broker, "later" the median of the
others.  Targets: on later connections kafkacompat costs no more round trips than
each peer (v5's extra round trip to a 4.3 broker is paid once, on the first
connection: reported, not a target).  Times are loopback handshakes on a shared
machine: reported with the load, not targets.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import trio

from bench.common import BenchConfig, Row, join
from bench.peer_builds import FRANZ_GO, KCL_VERSION, PeerBuildError, franz_go, java_peer, kcl
from kafkacompat.aio.connection import BrokerConnection as AsyncioConnection
from kafkacompat.blocking.connection import BlockingConnection
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.negotiation.handshake.identity import ApiVersionsMemory, BrokerIdentity
from kafkacompat.testing import ApacheKafka
from kafkacompat.testing.counting_proxy import Connection, CountingProxy
from kafkacompat.transport.connection import BrokerConnection as TrioConnection

TITLE = "KIP-1242 handshake on real Kafka 4.3.1 and 4.4.0: round trips and time, counted at a proxy"
RELEASES = ("4.3.1", "4.4.0")
CONFIG = ConnectionConfig(connect_timeout=10, request_timeout=20)
_PEER_TIMEOUT = 300
UNSUPPORTED_VERSION = 35


@dataclass(frozen=True)
class Measured:
    """What the proxy saw of one client: its connections' handshakes, or why it could not run."""

    impl: str
    connections: tuple[Connection, ...] = ()
    problem: str = ""

    def phase(self, later: bool) -> list[Connection]:
        return list(self.connections[1:] if later else self.connections[:1])


def _kafkacompat(driver: str, address: str, cluster_id: str, rounds: int) -> None:
    host, _, port_text = address.rpartition(":")
    port, identity, memory = int(port_text), BrokerIdentity(cluster_id, 1), ApiVersionsMemory()
    if driver == "blocking":
        for _ in range(rounds):
            conn = BlockingConnection(host, port, CONFIG, node_id=1)
            conn.identity, conn.api_versions_memory = identity, memory
            with conn:
                conn.open()
        return
    connection_class = TrioConnection if driver == "trio" else AsyncioConnection

    async def main() -> None:
        for _ in range(rounds):
            conn = connection_class(host, port, CONFIG, node_id=1)
            conn.identity, conn.api_versions_memory = identity, memory
            await conn.open()
            await conn.aclose()

    trio.run(main) if driver == "trio" else asyncio.run(main())


def _peer(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=_PEER_TIMEOUT, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:]
        raise PeerBuildError(f"exited with {done.returncode}: {' '.join(last)}")


def _measure(proxy: CountingProxy, impl: str, run: Callable[[], None]) -> Measured:
    proxy.clear()
    try:
        run()
    except (PeerBuildError, OSError, subprocess.TimeoutExpired) as exc:
        return Measured(impl, problem=str(exc))
    return Measured(impl, tuple(proxy.connections()))


Client = tuple[str, Callable[[], None]]


def _java(release: str, address: str, rounds: str) -> None:
    _peer([*java_peer(release), address, rounds])


def _franz_go(address: str, rounds: str) -> None:
    _peer([str(franz_go()), address, rounds])


def _clients(release: str, address: str, cluster_id: str, rounds: int) -> list[Client]:
    clients: list[Client] = [
        (f"kafkacompat {driver}", partial(_kafkacompat, driver, address, cluster_id, rounds))
        for driver in ("trio", "asyncio", "blocking")
    ]
    java_rounds = str(max(2, rounds // 2))  # two connections each: the bootstrap one and the node's
    for client in dict.fromkeys((release, RELEASES[-1])):  # the broker's own release, then 4.4.0's
        clients.append((f"kafka-clients {client} (Java Admin)", partial(_java, client, address, java_rounds)))
    clients.append((f"franz-go {FRANZ_GO[0]}", partial(_franz_go, address, java_rounds)))
    return clients


def _describe(connections: list[Connection]) -> str:
    """``2 round trips (v5 refused, v4)``, or the spread when the connections differ."""
    shapes: dict[str, int] = {}
    for conn in connections:
        refused = {e.version for e in conn.handshake if e.error_code == UNSUPPORTED_VERSION}
        steps = [f"v{e.version}{' refused' if e.version in refused else ''}" for e in conn.handshake]
        count = len(conn.handshake)
        shape = f"{count} round trip{'s' if count != 1 else ''} ({', '.join(steps)})"
        shapes[shape] = shapes.get(shape, 0) + 1
    if len(shapes) == 1:
        (shape,) = shapes
        return shape if len(connections) == 1 else f"{shape} on each of {len(connections)}"
    return "; ".join(f"{shape} on {count}" for shape, count in shapes.items())


def _rows(release: str, measured: list[Measured], later: bool, load: str) -> list[Row]:
    phase = "later connections (median)" if later else "first connection"
    workload = f"Kafka {release} broker, {phase}: handshake time and ApiVersions round trips"
    rows: list[Row] = []
    reference: float | None = None
    most_kafkacompat = 0
    for client in measured:
        connections = client.phase(later)
        times = [c.handshake_seconds for c in connections if c.handshake_seconds is not None]
        if client.problem or not times:
            rows.append(Row(workload, client.impl, note=client.problem or "no handshake seen"))
            continue
        seconds = statistics.median(times)
        if client.impl.startswith("kafkacompat"):
            reference = reference or seconds
            most_kafkacompat = max(most_kafkacompat, *(len(c.handshake) for c in connections))
            rows.append(Row(workload, client.impl, seconds, note=join(_describe(connections), load)))
            load = ""
        else:
            ratio = seconds / reference if reference else None
            rows.append(Row(workload, client.impl, seconds, ratio, note=_describe(connections)))
    if later and most_kafkacompat:
        trips = f"Kafka {release} broker, later connections: round trips per connection, peer / kafkacompat"
        for client in measured:
            connections = client.phase(later)
            if client.impl.startswith("kafkacompat") or client.problem or not connections:
                continue
            fewest, most = min(len(c.handshake) for c in connections), most_kafkacompat
            rows.append(
                Row(
                    trips,
                    client.impl,
                    ratio=fewest / most,
                    target=1.0,
                    note=f"round trips, not time: its fewest {fewest} / kafkacompat's most {most}",
                )
            )
    return rows


def _kcl_row() -> Row:
    try:
        kcl()
    except PeerBuildError as exc:
        return Row("kcl itself", f"kcl {KCL_VERSION}", note=f"not measured: {exc}")
    return Row("kcl itself", f"kcl {KCL_VERSION}", note="installed; franz-go above is its client library")


def run(config: BenchConfig) -> list[Row]:
    rounds = 6 if config.quick else 20
    rows: list[Row] = []
    for release in RELEASES:
        with ApacheKafka(release, mode="kraft-split", brokers=1) as kafka:
            _, host, port = kafka.broker_endpoints[0]
            upstream = f"{host}:{port}"
            with CountingProxy([upstream]) as proxy:
                address = proxy.address(upstream)
                measured = [
                    _measure(proxy, impl, client)
                    for impl, client in _clients(release, address, kafka.cluster_id, rounds)
                ]
        load = "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
        rows += _rows(release, measured, later=False, load=load)
        rows += _rows(release, measured, later=True, load=load)
    rows.append(_kcl_row())
    return rows
