"""SASL authentication after the ApiVersions handshake, as a sans-I/O state machine.

Theory
======
A Kafka SASL listener lets a client send ApiVersions and SaslHandshake before
it has authenticated, and nothing else.  SaslHandshake names a mechanism; the
broker answers with the mechanisms it enables (UNSUPPORTED_SASL_MECHANISM when
ours is not one of them).  What follows depends on the handshake version:

* v1 (Kafka 1.0+, KIP-152): every mechanism token travels in a SaslAuthenticate
  request and the broker's token comes back in its response, with an error
  code and message, so a refusal is reported (SASL_AUTHENTICATION_FAILED).
* v0: the tokens travel raw, each an int32 size-prefixed blob with no Kafka
  header, and a refusal is the broker closing the connection.

``sasl_versions`` picks the highest versions both sides allow (v1 whenever the
broker has it; raw v0 tokens only when its SaslHandshake stops at v0).
``SaslExchange`` then runs the conversation one round trip at a time: it hands
out the bytes to write, takes each reply frame, and ends in ``Authenticated``
or ``SaslFailed``.  The mechanism itself (PLAIN, SCRAM) is a separate sans-I/O
object.  Round trips are bounded, correlation ids continue the connection's
numbering, and the password never appears in an error: a broker message that
echoes it is redacted before it is shown.  No sockets, no clocks: the driver
reports a timeout with ``timed_out()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Protocol, TypeVar

from kafkacompat.errors import (
    AuthenticationError,
    KafkaCompatError,
    KafkaTimeoutError,
    PipelineStateError,
    ProtocolError,
    UnsupportedVersionError,
    attach_context,
)
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.version_policy import VersionPolicy
from kafkacompat.protocol import _wire, framing
from kafkacompat.protocol.error_codes import ILLEGAL_SASL_STATE, UNSUPPORTED_SASL_MECHANISM, error_for
from kafkacompat.protocol.framing import RequestHeaders
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    ApiKey,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafkacompat.protocol.reply_limits import ReplyLimits

__all__ = [
    "MAX_ROUND_TRIPS",
    "SASL_AUTHENTICATE",
    "SASL_HANDSHAKE",
    "Authenticated",
    "AwaitReply",
    "SaslExchange",
    "SaslFailed",
    "SaslMechanism",
    "SendBytes",
    "sasl_versions",
]

SASL_HANDSHAKE: Final = ApiKey.SASL_HANDSHAKE
SASL_AUTHENTICATE: Final = ApiKey.SASL_AUTHENTICATE
#: SCRAM needs two round trips and PLAIN one; a mechanism asking for many more is not one we run.
MAX_ROUND_TRIPS: Final = 8
_INT32_MAX: Final = 0x7FFFFFFF
_R = TypeVar("_R", bound=KafkaMessage)


class SaslMechanism(Protocol):
    """What the exchange needs from a mechanism (``PlainMechanism``, ``ScramMechanism``)."""

    name: str

    @property
    def finished(self) -> bool: ...

    def initial(self) -> bytes: ...

    def step(self, challenge: bytes) -> bytes | None: ...


def sasl_versions(capabilities: BrokerCapabilities, policy: VersionPolicy | None) -> tuple[int, int | None]:
    """(SaslHandshake version, SaslAuthenticate version or None for raw v0 tokens)."""
    if not capabilities.lists_api(SASL_HANDSHAKE):
        raise AuthenticationError(
            "the broker does not list SaslHandshake: it does not offer SASL on this listener",
            node=capabilities.node,
        )
    try:
        handshake_version = capabilities.pick_version(SASL_HANDSHAKE, policy)
    except UnsupportedVersionError as exc:
        raise AuthenticationError(
            f"no usable SaslHandshake version: {exc.message}", node=capabilities.node
        ) from None
    if handshake_version == 0:
        return 0, None
    # SaslHandshake v1 promises SaslAuthenticate (KIP-152): tokens may no longer go raw.
    try:
        return handshake_version, capabilities.pick_version(SASL_AUTHENTICATE, policy)
    except UnsupportedVersionError as exc:
        raise AuthenticationError(
            f"the broker offers SaslHandshake v{handshake_version} but no usable SaslAuthenticate: "
            f"{exc.message}",
            node=capabilities.node,
        ) from None


@dataclass(frozen=True, slots=True)
class SendBytes:
    """Write ``data``; then report ``sent()`` (or ``connection_closed()``)."""

    data: bytes
    what: str  # "SaslHandshake v1", "SaslAuthenticate v2", "a raw PLAIN token"


@dataclass(frozen=True, slots=True)
class AwaitReply:
    """Read one frame and hand it to ``received_frame`` (or report a close or a timeout)."""

    what: str


@dataclass(frozen=True, slots=True)
class Authenticated:
    mechanism: str
    handshake_version: int
    authenticate_version: int | None  # None: raw v0 tokens
    session_lifetime_ms: int  # 0 when the broker sets no limit


@dataclass(frozen=True, slots=True)
class SaslFailed:
    """Authentication failed; the connection must be closed."""

    error: KafkaCompatError


SaslAction = SendBytes | AwaitReply | Authenticated | SaslFailed


class _Step(StrEnum):
    HANDSHAKE = "handshake"
    TOKEN = "token"


class SaslExchange:
    """One SASL conversation on one connection, after its ApiVersions handshake.

    ``first_correlation_id`` continues the connection's numbering;
    ``next_correlation_id`` says where the requests after it go on; ``headers``
    writes the connection's request header.
    ``redact`` blots the password out of broker messages.
    """

    def __init__(
        self,
        mechanism: SaslMechanism,
        *,
        username: str,
        handshake_version: int,
        authenticate_version: int | None,
        first_correlation_id: int,
        headers: RequestHeaders,
        node: str | None = None,
        redact: Callable[[str], str] = str,
    ) -> None:
        self.mechanism = mechanism
        self.username = username
        self.handshake_version = handshake_version
        self.authenticate_version = authenticate_version
        self.headers = headers  # the connection's request header, its client id with it
        self.node = node
        self._redact = redact
        self._next_id = first_correlation_id
        self._expected_id: int | None = None
        self._step = _Step.HANDSHAKE
        self._round_trips = 0
        self._lifetime_ms = 0
        self._action: SaslAction = self._request(
            SaslHandshakeRequest(mechanism=mechanism.name), handshake_version, "SaslHandshake"
        )

    @property
    def next_correlation_id(self) -> int:
        return self._next_id

    @property
    def authenticating(self) -> bool:
        """Past SaslHandshake: the replies awaited are the mechanism's tokens."""
        return self._step is _Step.TOKEN

    def next_action(self) -> SaslAction:
        return self._action

    def reply_ceiling(self, limits: ReplyLimits, max_frame_size: int) -> tuple[int, str]:
        """The size ceiling for the next frame, and the response it should be (as the handshake's)."""
        if self._step is _Step.TOKEN:
            return limits.limit_for(SASL_AUTHENTICATE, max_frame_size), "SaslAuthenticate"
        return limits.limit_for(SASL_HANDSHAKE, max_frame_size), "SaslHandshake"

    # -- events ---------------------------------------------------------------------------

    def sent(self) -> None:
        self._action = AwaitReply(self._expect(SendBytes).what)

    def received_frame(self, frame: bytes | bytearray | memoryview) -> None:
        """One reply frame, without its size prefix (for raw v0 tokens: the token itself)."""
        action = self._expect(AwaitReply)
        assert isinstance(action, AwaitReply)
        try:
            if self._step is _Step.HANDSHAKE:
                self._on_handshake(self._decode(frame, SaslHandshakeResponse, self.handshake_version, action))
            elif self.authenticate_version is None:
                self._on_token(bytes(frame))
            else:
                response = self._decode(frame, SaslAuthenticateResponse, self.authenticate_version, action)
                self._on_authenticate(response)
        except KafkaCompatError as exc:
            self._fail(exc)

    def connection_closed(self) -> None:
        action = self._expect(SendBytes, AwaitReply)
        if self._step is _Step.TOKEN and self.authenticate_version is None:
            # Under SaslHandshake v0, closing the connection is how Kafka refuses credentials.
            message = (
                f"the broker closed the connection during {self.mechanism.name} authentication as "
                f"{self.username!r} (SaslHandshake v0): the credentials were most likely refused"
            )
        else:
            message = f"the broker closed the connection in answer to {action.what}"
        self._fail(AuthenticationError(message))

    def timed_out(self) -> None:
        action = self._expect(SendBytes, AwaitReply)
        self._fail(KafkaTimeoutError(f"no answer to {action.what} in time"))

    # -- the conversation -------------------------------------------------------------------

    def _on_handshake(self, response: SaslHandshakeResponse) -> None:
        code, name = response.error_code, self.mechanism.name
        if code != 0:
            enabled = ", ".join(response.mechanisms) or "none"
            if code == UNSUPPORTED_SASL_MECHANISM and name in response.mechanisms:
                raise AuthenticationError(
                    f"the broker refused SASL mechanism {name} (UNSUPPORTED_SASL_MECHANISM) although "
                    f"it lists it among its enabled mechanisms ({enabled}): is SASL enabled on this "
                    "listener?"
                )
            if code == UNSUPPORTED_SASL_MECHANISM:
                raise AuthenticationError(
                    f"the broker does not enable SASL mechanism {name}; it enables: {enabled}"
                )
            hint = ": this listener may not use SASL" if code == ILLEGAL_SASL_STATE else ""
            raise AuthenticationError(
                f"SaslHandshake for {name} failed with {error_for(code).name} ({code}){hint}"
            )
        self._step = _Step.TOKEN
        self._send_token(self.mechanism.initial())

    def _on_authenticate(self, response: SaslAuthenticateResponse) -> None:
        code = response.error_code
        if code != 0:
            entry = error_for(code)
            detail = self._redact(response.error_message or entry.message)
            raise AuthenticationError(
                f"{self.mechanism.name} authentication as {self.username!r} failed: "
                f"{entry.name} ({code}): {detail}"
            )
        if response.session_lifetime_ms:
            self._lifetime_ms = response.session_lifetime_ms
        self._on_token(bytes(response.auth_bytes))

    def _on_token(self, challenge: bytes) -> None:
        token = self.mechanism.step(challenge)
        if token is not None:
            self._send_token(token)
        elif not self.mechanism.finished:
            raise AuthenticationError(f"{self.mechanism.name} authentication stopped before it was complete")
        else:
            self._action = Authenticated(
                self.mechanism.name, self.handshake_version, self.authenticate_version, self._lifetime_ms
            )

    def _send_token(self, token: bytes) -> None:
        self._round_trips += 1
        if self._round_trips > MAX_ROUND_TRIPS:
            raise AuthenticationError(
                f"{self.mechanism.name} authentication did not finish in {MAX_ROUND_TRIPS} round trips"
            )
        if self.authenticate_version is None:
            self._expected_id = None
            self._action = SendBytes(
                _wire.INT32.pack(len(token)) + token, f"a raw {self.mechanism.name} token"
            )
        else:
            self._action = self._request(
                SaslAuthenticateRequest(auth_bytes=token), self.authenticate_version, "SaslAuthenticate"
            )

    # -- plumbing ---------------------------------------------------------------------------

    def _request(self, message: KafkaMessage, version: int, name: str) -> SendBytes:
        correlation_id = self._next_id
        self._next_id = 0 if correlation_id == _INT32_MAX else correlation_id + 1
        self._expected_id = correlation_id
        frame = self.headers.request(message, version, correlation_id)
        return SendBytes(frame, f"{name} v{version}")

    def _decode(
        self, frame: bytes | bytearray | memoryview, response_cls: type[_R], version: int, action: AwaitReply
    ) -> _R:
        answered = framing.peek_correlation_id(frame)
        if answered != self._expected_id:
            raise ProtocolError(
                f"the broker answered {action.what} with correlation id {answered}, "
                f"expected {self._expected_id}"
            )
        _, response = framing.decode_response(frame, response_cls, version, allow_trailing=True)
        return response

    def _expect(self, *kinds: type[SendBytes | AwaitReply]) -> SendBytes | AwaitReply:
        action = self._action
        if not isinstance(action, kinds):
            raise PipelineStateError(
                f"the SASL exchange is not expecting that now (its next step: {type(action).__name__})",
                node=self.node,
            )
        return action

    def _fail(self, error: KafkaCompatError) -> None:
        attach_context(error, node=self.node)
        if isinstance(error, ProtocolError):
            error.add_note("while authenticating with SASL")
        self._action = SaslFailed(error)
