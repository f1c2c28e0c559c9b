"""A transparent TCP pass-through that records client profiles on the side (trio).

Theory.  Every protocol decision of a recording lives in the sans-I/O
``negotiation.recording``; this module only moves bytes.  Per accepted client
connection it opens one connection upstream and runs two pumps, each of which
forwards every chunk unchanged *before* showing it to the ``WireRecorder``, so
a recorder that cannot parse something never delays or alters traffic
(plaintext and SASL_PLAINTEXT alike: SASL is bytes like the rest).  When
either side closes, the other is closed too, and the recorder learns who
closed first: pending requests are "closed" by the broker or left by the
client.  The proxy listens on loopback unless told otherwise explicitly, like
the emulator.

The profiles file is kept current by ``recorder.writer.ProfileWriter`` on the
same loop.  Memory is the book's bound (``negotiation.recording``) plus one
serialised line per client.

What stalls every proxied connection at once, besides the writer, is a full
garbage collection: it walks every object the collector tracks, and a
recorder's process is mostly start-up (modules, classes, the codec).
``freeze_start_up``, called by whoever owns the process (the CLI, the load
harness) once start-up is over, loads what the recorder would otherwise load
during traffic and moves everything alive then out of the collector's sight
(``gc.freeze``): what is left to walk is the connections of the moment and the
book, whose tables the collector does not track.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

import trio

from kafkacompat.errors import TransportError
from kafkacompat.negotiation.recording import ProfileBook, WireRecorder, load_response_classes

__all__ = ["RecordProxy", "freeze_start_up"]

_CHUNK = 65536


def freeze_start_up() -> None:
    """Leave start-up out of every later garbage collection (see the module documentation).

    The response classes the recorder decodes are loaded first (lazily, they would be
    loaded, and stay, during traffic); garbage is collected, so none is frozen with the
    rest.  It changes the whole process: call it where the process is the recorder's.
    """
    load_response_classes()
    gc.collect()
    gc.freeze()


class RecordProxy:
    """Listens on ``listen``, forwards each connection to ``upstream``, records into ``book``."""

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        *,
        book: ProfileBook | None = None,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        connect_timeout: float = 10.0,
    ) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.book = book if book is not None else ProfileBook()
        self.listen_host, self.listen_port = listen_host, listen_port
        self.connect_timeout = connect_timeout
        self._scope: trio.CancelScope | None = None

    @property
    def address(self) -> str:
        return f"{self.listen_host}:{self.listen_port}"

    async def serve(self, *, task_status: trio.TaskStatus[RecordProxy] = trio.TASK_STATUS_IGNORED) -> None:
        """Accept and forward until cancelled or ``stop()``; started() once listening."""
        with trio.CancelScope() as scope:
            self._scope = scope
            try:
                listeners = await trio.open_tcp_listeners(self.listen_port, host=self.listen_host)
            except OSError as exc:
                raise TransportError(f"cannot listen on {self.address}: {exc.strerror or exc}") from None
            self.listen_port = listeners[0].socket.getsockname()[1]
            async with trio.open_nursery() as nursery:
                task_status.started(self)
                await trio.serve_listeners(self._handle, listeners, handler_nursery=nursery)

    def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    async def _handle(self, client: trio.SocketStream) -> None:
        host, port = self.upstream
        try:
            with trio.fail_after(self.connect_timeout):
                broker = await trio.open_tcp_stream(host, port)
        except (OSError, trio.TooSlowError):
            await trio.aclose_forcefully(client)
            return
        recorder = WireRecorder(self.book)
        first_to_close: list[str] = []
        async with trio.open_nursery() as nursery:
            pump = self._pump
            nursery.start_soon(pump, client, broker, recorder.from_client, "client", first_to_close, nursery)
            nursery.start_soon(pump, broker, client, recorder.from_broker, "broker", first_to_close, nursery)
        recorder.closed(by_broker=first_to_close[:1] == ["broker"])
        await trio.aclose_forcefully(client)
        await trio.aclose_forcefully(broker)

    async def _pump(
        self,
        source: trio.SocketStream,
        sink: trio.SocketStream,
        seen: Callable[[bytes], None],
        side: str,
        first_to_close: list[str],
        nursery: trio.Nursery,
    ) -> None:
        try:
            while True:
                data = await source.receive_some(_CHUNK)
                if not data:
                    break
                await sink.send_all(data)  # forwarded first, untouched
                seen(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        if not first_to_close:
            first_to_close.append(side)
        nursery.cancel_scope.cancel()
