"""SASL authentication of a freshly negotiated connection, the way Kafka brokers run it.

Theory
======
A Kafka SASL listener lets a client send ApiVersions and SaslHandshake before
it has authenticated, and nothing else.  SaslHandshake names a mechanism; the
broker answers with the mechanisms it enables (UNSUPPORTED_SASL_MECHANISM when
ours is not one of them).  What follows depends on the handshake version:

* v1 (Kafka 1.0+, KIP-152): every mechanism token travels in a SaslAuthenticate
  request and the broker's token comes back in the response, with an error
  code and message, so a refusal is reported (SASL_AUTHENTICATION_FAILED).
* v0: the tokens travel raw, each an int32 size-prefixed blob with no Kafka
  header, and a refusal is the broker closing the connection.

This module picks the highest versions both sides allow (v1 whenever the
broker has it; raw v0 tokens only when its SaslHandshake stops at v0), then
drives a sans-I/O mechanism (``sasl_mechanisms``) one round trip at a time,
sequentially on the stream, each round trip under the request timeout and
their number bounded.  Every failure is typed and names the node: a refusal is
an ``AuthenticationError``, a silent broker a ``KafkaTimeoutError``.  The
password never appears in an error, a log line or a repr; a broker message
that echoes it is redacted before it is shown.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import trio

from kafkacompat.errors import (
    AuthenticationError,
    KafkaCompatError,
    KafkaTimeoutError,
    ProtocolError,
)
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.sasl_exchange import (
    MAX_ROUND_TRIPS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SaslMechanism,
    sasl_versions,
)
from kafkacompat.protocol import _wire, framing
from kafkacompat.protocol.error_codes import ILLEGAL_SASL_STATE, UNSUPPORTED_SASL_MECHANISM, error_for
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafkacompat.transport.config import ConnectionConfig, SaslConfig
from kafkacompat.transport.sasl_mechanisms import create_mechanism
from kafkacompat.transport.stream import FramedStream, PeerClosedError

__all__ = ["MAX_ROUND_TRIPS", "SASL_AUTHENTICATE", "SASL_HANDSHAKE", "authenticate"]

log = logging.getLogger("kafkacompat.transport.sasl")


_R = TypeVar("_R", bound=KafkaMessage)


async def authenticate(
    stream: FramedStream,
    capabilities: BrokerCapabilities,
    config: ConnectionConfig,
    next_correlation_id: Callable[[], int],
    *,
    mechanism: SaslMechanism | None = None,
) -> None:
    """Authenticate ``stream`` with ``config.sasl``; return once the broker accepted us.

    ``mechanism`` replaces the one built from the config (tests inject a fixed
    nonce this way).  Raises ``AuthenticationError`` when the broker refuses,
    ``KafkaTimeoutError`` when it stops answering, and other
    ``KafkaCompatError`` for a broken connection or unreadable bytes.
    """
    sasl = config.sasl
    if sasl is None:
        raise AuthenticationError("authenticate() needs config.sasl", node=stream.node)
    session = _Session(stream, config, next_correlation_id, sasl)
    try:
        mech = mechanism if mechanism is not None else create_mechanism(sasl)
        handshake_version, authenticate_version = sasl_versions(capabilities, config.policy)
        await session.handshake(mech.name, handshake_version)
        token: bytes | None = mech.initial()
        for _ in range(MAX_ROUND_TRIPS):
            assert token is not None
            if authenticate_version is None:
                reply = await session.raw_exchange(token, mech.name)
            else:
                reply = await session.authenticate_exchange(token, authenticate_version, mech.name)
            token = mech.step(reply)
            if token is None:
                break
        else:
            raise AuthenticationError(
                f"{mech.name} authentication did not finish in {MAX_ROUND_TRIPS} round trips"
            )
        if not mech.finished:
            raise AuthenticationError(f"{mech.name} authentication stopped before it was complete")
    except KafkaCompatError as exc:
        if exc.node is None:
            exc.node = stream.node
        raise
    log.debug(
        "authenticated to %s as %r with %s (SaslHandshake v%d, %s)%s",
        stream.node,
        sasl.username,
        mech.name,
        handshake_version,
        "raw tokens" if authenticate_version is None else f"SaslAuthenticate v{authenticate_version}",
        f"; the broker ends the session after {session.lifetime_ms} ms" if session.lifetime_ms else "",
    )


class _Session:
    """One SASL conversation on one stream: requests and raw tokens, one at a time."""

    def __init__(
        self,
        stream: FramedStream,
        config: ConnectionConfig,
        next_correlation_id: Callable[[], int],
        sasl: SaslConfig,
    ) -> None:
        self.stream = stream
        self.config = config
        self.next_correlation_id = next_correlation_id
        self.sasl = sasl
        self.lifetime_ms = 0

    async def handshake(self, mechanism: str, version: int) -> None:
        response = await self.request(
            SaslHandshakeRequest(mechanism=mechanism), version, SaslHandshakeResponse, "SaslHandshake"
        )
        code = response.error_code
        if code == 0:
            return
        enabled = ", ".join(response.mechanisms) or "none"
        if code == UNSUPPORTED_SASL_MECHANISM and mechanism in response.mechanisms:
            raise AuthenticationError(
                f"the broker refused SASL mechanism {mechanism} (UNSUPPORTED_SASL_MECHANISM) although it "
                f"lists it among its enabled mechanisms ({enabled}): is SASL enabled on this listener?"
            )
        if code == UNSUPPORTED_SASL_MECHANISM:
            raise AuthenticationError(
                f"the broker does not enable SASL mechanism {mechanism}; it enables: {enabled}"
            )
        hint = ": this listener may not use SASL" if code == ILLEGAL_SASL_STATE else ""
        raise AuthenticationError(
            f"SaslHandshake for {mechanism} failed with {error_for(code).name} ({code}){hint}"
        )

    async def authenticate_exchange(self, token: bytes, version: int, mechanism: str) -> bytes:
        response = await self.request(
            SaslAuthenticateRequest(auth_bytes=token), version, SaslAuthenticateResponse, "SaslAuthenticate"
        )
        code = response.error_code
        if code != 0:
            entry = error_for(code)
            detail = self.sasl.redact(response.error_message or entry.message)
            raise AuthenticationError(
                f"{mechanism} authentication as {self.sasl.username!r} failed: "
                f"{entry.name} ({code}): {detail}"
            )
        if response.session_lifetime_ms:
            self.lifetime_ms = response.session_lifetime_ms
        return bytes(response.auth_bytes)

    async def raw_exchange(self, token: bytes, mechanism: str) -> bytes:
        """A v0 round trip: a size-prefixed token out, one back."""
        try:
            with trio.fail_after(self.config.request_timeout):
                await self.stream.send(_wire.INT32.pack(len(token)) + token)
                return await self.stream.receive_frame()
        except trio.TooSlowError:
            raise KafkaTimeoutError(
                f"no {mechanism} token from the broker within {self.config.request_timeout}s"
            ) from None
        except PeerClosedError:
            # Under SaslHandshake v0, closing the connection is how Kafka refuses credentials.
            raise AuthenticationError(
                f"the broker closed the connection during {mechanism} authentication as "
                f"{self.sasl.username!r} (SaslHandshake v0): the credentials were most likely refused"
            ) from None

    async def request(self, message: KafkaMessage, version: int, response_cls: type[_R], what: str) -> _R:
        correlation_id = self.next_correlation_id()
        frame = framing.encode_request(message, version, correlation_id, self.config.client_id)
        try:
            with trio.fail_after(self.config.request_timeout):
                await self.stream.send(frame)
                reply = await self.stream.receive_frame()
        except trio.TooSlowError:
            raise KafkaTimeoutError(
                f"no answer to {what} v{version} within {self.config.request_timeout}s"
            ) from None
        except PeerClosedError:
            raise AuthenticationError(
                f"the broker closed the connection in answer to {what} v{version}"
            ) from None
        answered, response = framing.decode_response(reply, response_cls, version, allow_trailing=True)
        if answered != correlation_id:
            raise ProtocolError(
                f"the broker answered {what} with correlation id {answered}, expected {correlation_id}"
            )
        assert isinstance(response, response_cls)
        return response
