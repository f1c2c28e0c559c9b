"""A proxy in front of real brokers that counts, from the wire, what any client asks and gets.

Theory.  "How many round trips does a connection cost" must not be answered
by the client being measured, least of all when the clients are Java and Go
programs that report nothing of the kind.  This proxy stands between every
client and the brokers and counts for them: per TCP connection, each request
(API key, version, and for ApiVersions the identity KIP-1242 lets it carry)
and when its answer came back (for ApiVersions, the error code).  So that
clients keep talking through it after bootstrapping, it listens on one port
per broker and writes its own addresses into the answers that name brokers
(Metadata, DescribeCluster, FindCoordinator); every other frame passes
unchanged.

It runs as a process of its own (``python -m kafkacompat.testing.counting_proxy
UPSTREAM...``), so that a Python client measured beside it does not share its
interpreter: it prints a JSON line per event (``time.monotonic`` stamps, one
clock for every process of the machine) and answers ``sync`` on stdin once
every earlier event is printed.  ``CountingProxy`` starts it, reads the events
on a thread and groups them per connection (``Connection``).  Loopback only.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from kafkacompat.errors import BrokerStartError, KafkaCompatError
from kafkacompat.protocol import broker_framing, framing
from kafkacompat.protocol.messages import (
    ApiKey,
    ApiVersionsRequest,
    DescribeClusterResponse,
    FindCoordinatorResponse,
    MetadataResponse,
)

__all__ = ["Connection", "CountingProxy", "Exchange"]

_API_VERSIONS, _METADATA = ApiKey.API_VERSIONS, ApiKey.METADATA
_FIND_COORDINATOR, _DESCRIBE_CLUSTER = ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_CLUSTER
_REWRITTEN: dict[int, Any] = {
    _METADATA: MetadataResponse,
    _FIND_COORDINATOR: FindCoordinatorResponse,
    _DESCRIBE_CLUSTER: DescribeClusterResponse,
}
_MAX_FRAME = 256 * 1024 * 1024
_START_TIMEOUT = 30.0
_SYNC_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request through the proxy, and when (whether) its answer came back."""

    api_key: int
    version: int
    sent_at: float
    answered_at: float | None = None
    error_code: int | None = None  # read for ApiVersions answers only
    identity: tuple[str, int] | None = None  # ApiVersions v5+: (ClusterId, NodeId) when sent


@dataclass(slots=True)
class Connection:
    """One client connection through the proxy to ``upstream`` ("host:port" of the broker)."""

    number: int
    upstream: str
    opened_at: float
    exchanges: list[Exchange] = field(default_factory=list)
    closed_at: float | None = None

    @property
    def round_trips(self) -> int:
        return sum(1 for e in self.exchanges if e.answered_at is not None)

    @property
    def handshake(self) -> list[Exchange]:
        """The ApiVersions exchanges at the start of the connection (the handshake)."""
        leading: list[Exchange] = []
        for exchange in self.exchanges:
            if exchange.api_key != _API_VERSIONS:
                break
            leading.append(exchange)
        return leading

    @property
    def handshake_seconds(self) -> float | None:
        """From the TCP accept to the last handshake answer; None when it got none."""
        answered = [e.answered_at for e in self.handshake if e.answered_at is not None]
        return max(answered) - self.opened_at if answered else None


class CountingProxy:
    """The proxy process in front of ``upstreams`` ("host:port" each); a context manager."""

    def __init__(self, upstreams: Sequence[str]) -> None:
        self.upstreams = list(upstreams)
        self.listening: dict[str, str] = {}  # upstream -> the proxy's address for it
        self._proc: subprocess.Popen[str] | None = None
        self._connections: dict[int, Connection] = {}
        self._pending: dict[tuple[int, int], int] = {}  # (connection, correlation id) -> exchange index
        self._syncs: set[int] = set()
        self._next_sync = 0
        self._changed = threading.Condition()
        self._reader: threading.Thread | None = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        command = [sys.executable, "-m", "kafkacompat.testing.counting_proxy", *self.upstreams]
        self._proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        assert self._proc.stdout is not None
        first = self._proc.stdout.readline()
        if not first:
            self.stop()
            raise BrokerStartError(f"the counting proxy did not start ({' '.join(command)})")
        self.listening = json.loads(first)["listening"]
        self._reader = threading.Thread(target=self._read, name="counting-proxy", daemon=True)
        self._reader.start()

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)

    def address(self, upstream: str) -> str:
        """The proxy's "host:port" for the broker at ``upstream``."""
        return self.listening[upstream]

    def connections(self, upstream: str | None = None) -> list[Connection]:
        """Every connection seen so far (to ``upstream`` alone if given), after a sync."""
        self.sync()
        with self._changed:
            return [
                Connection(c.number, c.upstream, c.opened_at, list(c.exchanges), c.closed_at)
                for c in self._connections.values()
                if upstream is None or c.upstream == upstream
            ]

    def clear(self) -> None:
        """Forget the connections seen so far (those still open are counted afresh)."""
        self.sync()
        with self._changed:
            self._connections.clear()
            self._pending.clear()

    def sync(self) -> None:
        """Wait until every event the proxy printed before now has been read."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            return
        with self._changed:
            self._next_sync += 1
            number = self._next_sync
        proc.stdin.write(f"sync {number}\n")
        proc.stdin.flush()
        with self._changed:
            if not self._changed.wait_for(lambda: number in self._syncs, timeout=_SYNC_TIMEOUT):
                raise BrokerStartError("the counting proxy did not answer a sync")

    def _read(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            with self._changed:
                self._take(event)
                self._changed.notify_all()

    def _take(self, event: dict[str, Any]) -> None:
        kind, number, at = event["event"], event.get("conn", -1), event.get("t", 0.0)
        if kind == "sync":
            self._syncs.add(event["n"])
        elif kind == "open":
            self._connections[number] = Connection(number, event["upstream"], at)
        elif number not in self._connections:
            return  # opened before a clear()
        elif kind == "request":
            sent = event.get("identity")
            identity = (str(sent[0]), int(sent[1])) if sent else None
            exchanges = self._connections[number].exchanges
            self._pending[(number, event["correlation_id"])] = len(exchanges)
            exchanges.append(Exchange(event["api_key"], event["version"], at, identity=identity))
        elif kind == "response":
            index = self._pending.pop((number, event["correlation_id"]), None)
            if index is not None:
                exchanges = self._connections[number].exchanges
                exchanges[index] = dataclasses.replace(
                    exchanges[index], answered_at=at, error_code=event.get("error_code")
                )
        elif kind == "close":
            self._connections[number].closed_at = at


# -- the proxy process ------------------------------------------------------------------------


def _request_event(frame: bytes) -> tuple[dict[str, Any], tuple[int, int, int]]:
    decoded = broker_framing.decode_request(frame, decode_body=False)
    header = decoded.header
    key, version, cid = header.request_api_key, header.request_api_version, header.correlation_id
    event: dict[str, Any] = {"api_key": key, "version": version, "correlation_id": cid}
    if key == _API_VERSIONS and version >= 5:
        try:
            body = ApiVersionsRequest.decode(decoded.body_bytes, version)
        except KafkaCompatError:
            body = None
        if body is not None and body.cluster_id is not None:
            event["identity"] = [body.cluster_id, body.node_id]
    return event, (key, version, cid)


Address = tuple[str, int]


def _rewritten(frame: bytes, key: int, version: int, addresses: dict[Address, Address]) -> bytes:
    """The answer with each proxied broker's address replaced by the proxy's for it."""
    cls = _REWRITTEN[key]
    try:
        cid, answer = framing.decode_response(frame, cls, version, allow_trailing=True)
    except KafkaCompatError:
        return frame  # passed on as it came: the client will say what is wrong with it
    nodes = list(getattr(answer, "brokers", None) or []) + list(getattr(answer, "coordinators", None) or [])
    if key == _FIND_COORDINATOR and version < 4:
        nodes.append(answer)
    for node in nodes:
        moved = addresses.get((node.host, node.port))
        if moved is not None:
            node.host, node.port = moved
    return broker_framing.encode_response(answer, version, cid)[4:]


def _serve(upstreams: Sequence[str]) -> None:
    import trio

    def emit(event: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()

    counter = iter(range(1, 2**62))

    async def relay(
        source: Any, sink: Any, on_frame: Callable[[bytes], bytes], nursery: trio.Nursery
    ) -> None:
        splitter = framing.FrameSplitter(_MAX_FRAME)
        try:
            while data := await source.receive_some(65536):
                splitter.push(data)
                while (frame := splitter.next_frame()) is not None:
                    out = on_frame(bytes(frame))
                    await sink.send_all(len(out).to_bytes(4, "big") + out)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, KafkaCompatError):
            pass
        nursery.cancel_scope.cancel()

    async def main() -> None:
        listeners: dict[str, Any] = {}
        for upstream in upstreams:
            (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
            listeners[upstream] = listener
        mapping = {}
        for upstream, listener in listeners.items():
            host, _, port = upstream.rpartition(":")
            mapping[(host, int(port))] = ("127.0.0.1", listener.socket.getsockname()[1])
        emit({"listening": {u: f"{h}:{p}" for (u, (h, p)) in zip(listeners, mapping.values(), strict=True)}})

        async def handle(client: trio.SocketStream, upstream: str) -> None:
            number = next(counter)
            emit({"event": "open", "conn": number, "upstream": upstream, "t": time.monotonic()})
            host, _, port = upstream.rpartition(":")
            try:
                broker = await trio.open_tcp_stream(host, int(port))
            except OSError:
                await trio.aclose_forcefully(client)
                emit({"event": "close", "conn": number, "t": time.monotonic()})
                return
            asked: dict[int, tuple[int, int]] = {}

            def from_client(frame: bytes) -> bytes:
                try:
                    event, (key, version, cid) = _request_event(frame)
                except KafkaCompatError:
                    return frame
                asked[cid] = (key, version)
                emit({"event": "request", "conn": number, "t": time.monotonic(), **event})
                return frame

            def from_broker(frame: bytes) -> bytes:
                at = time.monotonic()
                cid = int.from_bytes(frame[:4], "big", signed=True) if len(frame) >= 4 else None
                key, version = asked.pop(cid, (None, None)) if cid is not None else (None, None)
                event: dict[str, Any] = {"event": "response", "conn": number, "t": at, "correlation_id": cid}
                if key == _API_VERSIONS and len(frame) >= 6:
                    event["error_code"] = int.from_bytes(frame[4:6], "big", signed=True)
                emit(event)
                if key in _REWRITTEN and version is not None:
                    return _rewritten(frame, key, version, mapping)
                return frame

            async with trio.open_nursery() as nursery:
                nursery.start_soon(relay, client, broker, from_client, nursery)
                nursery.start_soon(relay, broker, client, from_broker, nursery)
            await trio.aclose_forcefully(client)
            await trio.aclose_forcefully(broker)
            emit({"event": "close", "conn": number, "t": time.monotonic()})

        async def commands() -> None:
            stdin = trio.wrap_file(sys.stdin)
            async for line in stdin:
                words = line.split()
                if words[:1] == ["sync"] and len(words) == 2:
                    emit({"event": "sync", "n": int(words[1])})
            nursery.cancel_scope.cancel()  # stdin closed: the parent is done with us

        async with trio.open_nursery() as nursery:
            for upstream, listener in listeners.items():
                nursery.start_soon(
                    trio.serve_listeners, lambda stream, u=upstream: handle(stream, u), [listener]
                )
            nursery.start_soon(commands)

    trio.run(main)


if __name__ == "__main__":
    _serve(sys.argv[1:])
