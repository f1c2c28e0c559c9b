"""A minimal Kafka SASL listener for tests, on 127.0.0.1, with scramp as the SCRAM server.

It answers ApiVersions (advertising SaslHandshake, SaslAuthenticate and
Metadata), SaslHandshake, SaslAuthenticate (PLAIN checked here, SCRAM-SHA-256
and -512 by scramp's server), raw v0 tokens when ``handshake_max=0``, and
Metadata once the client is authenticated.  It refuses the way Kafka does:
UNSUPPORTED_SASL_MECHANISM with the enabled list, SASL_AUTHENTICATION_FAILED
(then close) for bad credentials under v1, a silent close under v0, and a close
for any other request before authentication.

``fault`` makes it misbehave on purpose, to test the client's checks:

``"tamper-signature"``  flip a bit of the SCRAM server signature
``"foreign-nonce"``     answer client-first with a nonce that does not extend the client's
``"final-error"``       answer client-final with ``e=other-error`` and error code 0 (as Tansu does)
``"echo-password"``     refuse PLAIN with an error message that repeats the password
``"silent"``            never answer SaslAuthenticate

Every connection is bounded in frames, idle time and lifetime; leaving
``run_sasl_server`` cancels them all.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import scramp  # type: ignore[import-untyped]
import trio

from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol import _wire, broker_framing, framing
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    ApiVersionsResponse,
    MetadataResponse,
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
)

__all__ = ["SCRAM_MECHANISMS", "SaslServer", "run_sasl_server"]

LOOPBACK = "127.0.0.1"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
API_VERSIONS, METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 3, 17, 36
SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM, UNSUPPORTED_VERSION = 58, 33, 35
NODE_ID = 1


class _Refused(Exception):
    """Authentication failed: ``message`` goes to the client (v1), then the connection closes."""


class _Exchange:
    """The server side of one mechanism run: ``step(token) -> (reply, done)``."""

    def __init__(self, server: SaslServer, mechanism: str) -> None:
        self.server = server
        self.mechanism = mechanism
        self.scram: Any = None
        self.user = ""

    def step(self, token: bytes) -> tuple[bytes, bool]:
        try:
            if self.mechanism == "PLAIN":
                return self._plain(token), True
            return self._scram(token)
        except (scramp.ScramException, UnicodeDecodeError, ValueError) as exc:
            raise _Refused(
                f"Authentication failed during authentication due to invalid credentials with SASL "
                f"mechanism {self.mechanism} ({exc})"
            ) from None

    def _plain(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise _Refused("Invalid SASL/PLAIN token")
        user, password = parts[1].decode(), parts[2].decode()
        if self.server.fault == "echo-password":
            raise _Refused(f"user {user} with password {password} is not allowed")
        if self.server.users.get(user) != password:
            raise _Refused("Authentication failed: Invalid username or password")
        self.user = user
        return b""

    def _scram(self, token: bytes) -> tuple[bytes, bool]:
        if self.scram is None:
            credentials = self.server.scram_credentials(self.mechanism)
            mechanism = scramp.ScramMechanism(self.mechanism)
            self.scram = mechanism.make_server(credentials.get)
            self.scram.set_client_first(token.decode())
            self.user = self.scram.client_first_bare.split(",")[0][2:]
            first: str = self.scram.get_server_first()
            if self.server.fault == "foreign-nonce":
                attrs = first.split(",")
                attrs[0] = "r=SomebodyElsesNonce" + attrs[0][-8:]
                first = ",".join(attrs)
            return first.encode(), False
        if self.server.fault == "final-error":
            return b"e=other-error", True
        self.scram.set_client_final(token.decode())
        final: str = self.scram.get_server_final()
        if self.server.fault == "tamper-signature":
            signature = bytearray(base64.b64decode(final[2:]))
            signature[-1] ^= 1
            final = "v=" + base64.b64encode(bytes(signature)).decode()
        return final.encode(), True


class _Conn:
    """One client connection's state: its frames and how far SASL has got."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.splitter = framing.FrameSplitter()
        self.frames: list[bytes] = []
        self.exchange: _Exchange | None = None
        self.raw = False  # SaslHandshake v0: the tokens come without Kafka headers
        self.authenticated = False

    async def next_frame(self, idle_timeout: float) -> bytes | None:
        while not self.frames:  # bounded by the connection's lifetime
            chunk = b""
            with trio.move_on_after(idle_timeout):
                chunk = await self.stream.receive_some(65536)
            if not chunk:
                return None  # closed, or idle for too long
            self.frames.extend(self.splitter.feed(chunk))
        return self.frames.pop(0)


@dataclass
class SaslServer:
    users: Mapping[str, str]
    mechanisms: tuple[str, ...] = ("PLAIN", *SCRAM_MECHANISMS)
    iterations: int = 4096
    handshake_max: int = 1  # 0: a pre-1.0 broker, raw tokens and no SaslAuthenticate
    fault: str | None = None
    max_connections: int = 64
    max_frames: int = 64
    idle_timeout: float = 10.0
    connection_lifetime: float = 30.0
    host: str = LOOPBACK
    port: int = 0
    logins: list[tuple[str, str]] = field(default_factory=list)  # (mechanism, user)
    refusals: list[str] = field(default_factory=list)
    connections: int = 0
    _credentials: dict[str, dict[str, Any]] = field(default_factory=dict)

    def scram_credentials(self, mechanism: str) -> dict[str, Any]:
        """What a Kafka broker stores per user and mechanism (salt, keys, count), made once."""
        if mechanism not in self._credentials:
            scram = scramp.ScramMechanism(mechanism)
            self._credentials[mechanism] = {
                user: scram.make_auth_info(password, iteration_count=self.iterations)
                for user, password in self.users.items()
            }
        return self._credentials[mechanism]

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host=self.host)
        self.port = listeners[0].socket.getsockname()[1]
        await trio.serve_listeners(self._handle, listeners, task_status=task_status)

    # -- one connection -------------------------------------------------------------------

    async def _handle(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        if self.connections > self.max_connections:
            await trio.aclose_forcefully(stream)
            return
        try:
            with trio.move_on_after(self.connection_lifetime):
                await self._converse(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, KafkaCompatError):
            return  # a client that hung up or sent garbage: nothing to answer
        finally:
            await trio.aclose_forcefully(stream)

    async def _converse(self, stream: trio.SocketStream) -> None:
        conn = _Conn(stream)
        for _ in range(self.max_frames):
            frame = await conn.next_frame(self.idle_timeout)
            if frame is None:
                return  # the client hung up or went quiet
            if conn.raw and conn.exchange is not None and not conn.authenticated:
                try:
                    reply, done = conn.exchange.step(frame)
                except _Refused as exc:
                    self.refusals.append(str(exc))
                    return  # under SaslHandshake v0 Kafka refuses by closing
                await stream.send_all(_wire.INT32.pack(len(reply)) + reply)
                conn.authenticated = self._note_login(conn.exchange, done)
                continue
            request = broker_framing.decode_request(frame)
            version = request.header.request_api_version
            if self.fault == "silent" and request.header.request_api_key == SASL_AUTHENTICATE:
                await trio.sleep(self.connection_lifetime)  # never answer (cut short on exit)
                return
            answer = self._answer(conn, request.header.request_api_key, version, request.body)
            if answer is None:
                return
            response, version, close_after = answer
            answer = broker_framing.encode_response(response, version, request.header.correlation_id)
            await stream.send_all(answer)
            if close_after:
                return

    def _answer(
        self, conn: _Conn, key: int, version: int, body: Any
    ) -> tuple[KafkaMessage, int, bool] | None:
        """(response, version, close after sending) or None to close without answering."""
        if key == API_VERSIONS:
            return (*self._api_versions(version), False)
        if key == SASL_HANDSHAKE and conn.exchange is None:
            mechanism = body.mechanism
            if mechanism not in self.mechanisms:
                self.refusals.append(f"mechanism {mechanism}")
                refusal = SaslHandshakeResponse(
                    error_code=UNSUPPORTED_SASL_MECHANISM, mechanisms=list(self.mechanisms)
                )
                return refusal, version, True
            conn.exchange, conn.raw = _Exchange(self, mechanism), version == 0
            return SaslHandshakeResponse(error_code=0, mechanisms=list(self.mechanisms)), version, False
        if key == SASL_AUTHENTICATE and conn.exchange is not None and not conn.raw and not conn.authenticated:
            try:
                token, done = conn.exchange.step(bytes(body.auth_bytes))
            except _Refused as exc:
                self.refusals.append(str(exc))
                failed = SaslAuthenticateResponse(
                    error_code=SASL_AUTHENTICATION_FAILED, error_message=str(exc)
                )
                return failed, version, True
            conn.authenticated = self._note_login(conn.exchange, done)
            return SaslAuthenticateResponse(auth_bytes=token), version, False
        if key == METADATA and conn.authenticated:
            return self._metadata(), version, False
        self.refusals.append(f"api key {key} before authentication")
        return None  # Kafka closes on anything else before authentication

    def _note_login(self, exchange: _Exchange, done: bool) -> bool:
        refused = self.fault == "final-error" and exchange.mechanism in SCRAM_MECHANISMS
        if done and not refused:
            self.logins.append((exchange.mechanism, exchange.user))
        return done and not refused

    def _metadata(self) -> KafkaMessage:
        broker = MetadataResponse.MetadataResponseBroker(node_id=NODE_ID, host=self.host, port=self.port)
        return MetadataResponse(brokers=[broker], cluster_id="sasl-test", controller_id=NODE_ID)

    def _api_versions(self, version: int) -> tuple[KafkaMessage, int]:
        ranges = {API_VERSIONS: (0, 3), METADATA: (0, 12), SASL_HANDSHAKE: (0, self.handshake_max)}
        if self.handshake_max >= 1:
            ranges[SASL_AUTHENTICATE] = (0, 2)
        keys = [
            ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in ranges.items()
        ]
        if version > 3:  # as Kafka does: UNSUPPORTED_VERSION at v0, with the ranges
            return ApiVersionsResponse(error_code=UNSUPPORTED_VERSION, api_keys=keys), 0
        return ApiVersionsResponse(api_keys=keys), version


@asynccontextmanager
async def run_sasl_server(users: Mapping[str, str], **options: Any) -> AsyncIterator[SaslServer]:
    """``async with run_sasl_server({"alice": "pw"}) as server:`` listening on ``server.port``."""
    server = SaslServer(users, **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()
