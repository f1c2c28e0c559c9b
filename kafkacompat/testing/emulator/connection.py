"""One emulated broker connection as a sans-I/O state machine.

Theory.  ``Connection.receive(data)`` takes whatever bytes arrived and returns
what the loop must do (``Send``, ``Sleep``, ``Close``, ``Stall``); it never
touches a socket or a clock, so every rule below is testable without a
network.  Requests are handled one at a time, in order, as Kafka does per
connection.  For each request frame:

1. The api key, version and correlation id are read from the first 8 bytes,
   and the fault plan is asked whether a fault applies (see ``faults``).
2. An API the release does not have closes the connection: Kafka cannot read
   it.  Before 0.10 that includes ApiVersions itself (KIP-35).  The 0.9 era
   (``ApiVersionsEra.DROPPED``) instead answers nothing and keeps serving, as
   a real 0.9.0.1 does: the next request is answered as usual.  The 0.8 era
   answers the two requests that tell its releases apart, as 0.8.x's source
   does: OffsetFetch v0 (0.8.1+, ZooKeeper offsets: an empty request gets an
   empty answer) and Heartbeat (0.8.2 parses it but has no handler: error -1).
3. ApiVersions at a version the release does not know is answered in the v0
   layout with UNSUPPORTED_VERSION: ApiKeys empty on 0.10-2.3, holding key 18's
   range from 2.4 (KIP-511).  The response header is always v0.
4. Any other API at a version outside the release's range closes the
   connection, as Kafka does for a request it cannot parse; so does a version
   a 4.x release still advertises but refuses (Produce v0-2, KAFKA-18659). The
   log says "removed" where Kafka 4.x removed the version (protocol.removals).
5. On a SASL listener nothing but ApiVersions and SaslHandshake (and then
   SaslAuthenticate) is allowed before authentication: the rest closes.
6. A request the codec cannot read closes; otherwise the handler answers,
   encoded at the request's version: the caller's, the built-in one, or the
   generic default of ``fallback`` for an API nothing models (Produce with
   acks=0 gets no answer, as from Kafka).

Every request is recorded in the broker's log with what became of it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol import broker_framing, framing, messages
from kafkacompat.protocol.error_codes import (
    ILLEGAL_SASL_STATE,
    NONE,
    SASL_AUTHENTICATION_FAILED,
    UNSUPPORTED_SASL_MECHANISM,
)
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    ApiKey,
    ApiVersionsResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafkacompat.protocol.removals import describe_removal, refused_by
from kafkacompat.testing.emulator.fallback import TRAFFIC_HANDLERS, default_answer
from kafkacompat.testing.emulator.faults import (
    Action,
    Close,
    Fault,
    FaultKind,
    FaultPlan,
    Freeze,
    Send,
    Stall,
    apply_fault,
)
from kafkacompat.testing.emulator.handlers import (
    BUILTIN_HANDLERS,
    Handler,
    Request,
    api_versions_reply,
    unsupported_api_versions,
)
from kafkacompat.testing.emulator.profile import API_VERSIONS_KEY, ApiVersionsEra
from kafkacompat.testing.emulator.sasl import SaslConfig, SaslFailure, SaslSession
from kafkacompat.testing.emulator.state import ClusterState, Node

__all__ = ["Connection", "RequestRecord"]

# Plain ints from the enum: compared for every emulated request.
SASL_HANDSHAKE, SASL_AUTHENTICATE, PRODUCE = (
    int(ApiKey.SASL_HANDSHAKE), int(ApiKey.SASL_AUTHENTICATE), int(ApiKey.PRODUCE)
)
_HEAD = struct.Struct(">hhi")


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request a broker received, and what became of it."""

    node_id: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    outcome: str
    fault: Fault | None = None

    @property
    def answered(self) -> bool:
        return self.outcome.startswith("answered")


@dataclass(frozen=True, slots=True)
class _Outcome:
    reply: bytes | None
    close: bool
    note: str


class Connection:
    """The broker's side of one client connection."""

    def __init__(
        self,
        node: Node,
        state: ClusterState,
        faults: FaultPlan,
        record: Callable[[RequestRecord], None],
        *,
        sasl: SaslConfig | None = None,
        handlers: Mapping[int, Handler] | None = None,
        max_frame_size: int = framing.DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        self.node = node
        self.state = state
        self.faults = faults
        self.sasl = sasl
        self.handlers = {**BUILTIN_HANDLERS, **TRAFFIC_HANDLERS, **(handlers or {})}
        self._record = record
        self._splitter = framing.FrameSplitter(max_frame_size)
        self.finished = False  # closed or stalled: nothing more is read
        self.authenticated = sasl is None
        self.user: str | None = None
        self._session: SaslSession | None = None
        self._raw_tokens = False  # SaslHandshake v0: tokens come as bare frames

    def receive(self, data: bytes | bytearray | memoryview) -> list[Action]:
        if self.finished:
            return []
        try:
            frames = self._splitter.feed(data)
        except KafkaCompatError:
            self.finished = True
            return [Close()]
        actions: list[Action] = []
        for frame in frames:
            actions += self._frame(frame)
            if any(isinstance(a, Close | Stall | Freeze) for a in actions):
                self.finished = True
                break
        return actions

    # -- one frame -------------------------------------------------------------------------

    def _frame(self, frame: bytes) -> list[Action]:
        if self._raw_tokens:
            return self._raw_token(frame)
        if len(frame) < _HEAD.size:
            return [Close()]
        api_key, version, correlation_id = _HEAD.unpack_from(frame, 0)
        profile = self.node.profile
        own = profile.apis.get(API_VERSIONS_KEY)
        beyond = api_key == API_VERSIONS_KEY and own is not None and version > own.highest
        fault = self.faults.take(api_key, version, beyond_advertised=beyond)
        client_id = _client_id(frame)
        if fault is not None and fault.replaces_processing:
            outcome = _Outcome(None, False, f"fault: {fault.kind.value}")
        elif fault is not None and fault.kind is FaultKind.HOSTILE_UNSUPPORTED_VERSION:
            outcome = self._hostile(version, correlation_id)
        elif fault is not None and fault.kind is FaultKind.TANSU_API_VERSIONS:
            reply = api_versions_reply(self.node, self.state, 3)
            frame_v3 = broker_framing.encode_response(reply, 3, correlation_id)
            outcome = _Outcome(frame_v3, False, "answered: v3 body (Tansu)")
        else:
            outcome = self._process(api_key, version, correlation_id, client_id, frame)
        self._record(RequestRecord(
            self.node.node_id, api_key, version, correlation_id, client_id, outcome.note, fault
        ))
        if fault is None:
            actions: list[Action] = [Send(outcome.reply)] if outcome.reply is not None else []
        else:
            actions = apply_fault(fault, outcome.reply)
        if outcome.close and not any(isinstance(a, Close | Stall | Freeze) for a in actions):
            actions.append(Close())
        return actions

    def _process(
        self, api_key: int, version: int, correlation_id: int, client_id: str | None, frame: bytes
    ) -> _Outcome:
        profile = self.node.profile
        versions = profile.apis.get(api_key)
        if versions is None:
            if profile.api_versions_era is ApiVersionsEra.DROPPED:
                return _Outcome(None, False, f"dropped: {profile.label} has no API key {api_key}")
            return _Outcome(None, True, f"closed: {profile.label} has no API key {api_key}")
        if version not in versions:
            if api_key == API_VERSIONS_KEY:
                reply = broker_framing.encode_response(unsupported_api_versions(self.node), 0, correlation_id)
                return _Outcome(reply, False, "answered: UNSUPPORTED_VERSION (v0 layout)")
            removed = refused_by(profile.release, api_key, version) if profile.release else None
            if removed is not None:
                return _Outcome(None, True, f"closed: {describe_removal(removed, version)}")
            return _Outcome(None, True, f"closed: v{version} is outside {profile.label}'s {versions}")
        if profile.release and (removed := refused_by(profile.release, api_key, version)) is not None:
            # Advertised yet refused (Produce v0-2 on 4.x, KAFKA-18659): closed, no answer.
            return _Outcome(None, True, f"closed: {describe_removal(removed, version)}")
        if not self.authenticated and api_key not in (API_VERSIONS_KEY, SASL_HANDSHAKE, SASL_AUTHENTICATE):
            return _Outcome(None, True, "closed: request before SASL authentication")
        request_cls = _request_class(api_key)
        if request_cls is None or version not in request_cls.VALID_VERSIONS:
            why = f"closed: the emulator's codec cannot read v{version} of key {api_key}"
            return _Outcome(None, True, why)
        try:
            # Like Kafka's own parser, bytes after the body are ignored (librdkafka 2.x
            # sends some after Metadata v12).
            header = broker_framing.decode_request(frame, decode_body=False)
            body = request_cls.decode(header.body_bytes, version, allow_trailing=True)
        except KafkaCompatError as exc:
            return _Outcome(None, True, f"closed: unreadable request ({exc})")
        if api_key == SASL_HANDSHAKE:
            return self._sasl_handshake(body, version, correlation_id)
        if api_key == SASL_AUTHENTICATE:
            return self._sasl_authenticate(body, version, correlation_id)
        if profile.api_versions_era is ApiVersionsEra.ABSENT and api_key in _EIGHT_ANSWERS:
            return self._answer(_EIGHT_ANSWERS[api_key](), version, correlation_id)
        handler = self.handlers.get(api_key, default_answer)
        request = Request(self.node, self.state, api_key, version, correlation_id, client_id, body)
        try:
            response = handler(request)
            if api_key == PRODUCE and getattr(body, "acks", None) == 0:
                return _Outcome(None, False, "answered: acks=0, no response")  # Kafka sends none
            return self._answer(response, version, correlation_id)
        except Exception as exc:  # a handler's bug closes its connection, never the broker
            return _Outcome(None, True, f"closed: the handler for key {api_key} failed: {exc!r}")

    @staticmethod
    def _answer(
        response: KafkaMessage, version: int, correlation_id: int, *, close: bool = False
    ) -> _Outcome:
        code = getattr(response, "error_code", NONE)
        note = "answered" if not code else f"answered: error {code}"
        return _Outcome(broker_framing.encode_response(response, version, correlation_id), close, note)

    def _hostile(self, version: int, correlation_id: int) -> _Outcome:
        """UNSUPPORTED_VERSION that advertises a max at least as high as the version asked."""
        own = self.node.profile.apis.get(API_VERSIONS_KEY)
        low, high = (own.lowest, own.highest) if own is not None else (0, 0)
        reply = ApiVersionsResponse(
            error_code=35,
            api_keys=[ApiVersionsResponse.ApiVersion(
                api_key=API_VERSIONS_KEY, min_version=low, max_version=max(high, version)
            )],
        )
        frame = broker_framing.encode_response(reply, 0, correlation_id)
        return _Outcome(frame, False, "answered: hostile UNSUPPORTED_VERSION")

    # -- SASL ------------------------------------------------------------------------------

    def _sasl_handshake(self, body: KafkaMessage, version: int, correlation_id: int) -> _Outcome:
        assert isinstance(body, SaslHandshakeRequest)
        if self.sasl is None:
            return self._answer(SaslHandshakeResponse(error_code=ILLEGAL_SASL_STATE), version, correlation_id)
        enabled = list(self.sasl.mechanisms)
        if self.authenticated or self._session is not None:
            reply = SaslHandshakeResponse(error_code=ILLEGAL_SASL_STATE, mechanisms=enabled)
            return self._answer(reply, version, correlation_id, close=True)
        if body.mechanism not in enabled:
            reply = SaslHandshakeResponse(error_code=UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled)
            return self._answer(reply, version, correlation_id, close=True)
        self._session = self.sasl.session(body.mechanism)
        self._raw_tokens = version == 0
        return self._answer(SaslHandshakeResponse(mechanisms=enabled), version, correlation_id)

    def _sasl_authenticate(self, body: KafkaMessage, version: int, correlation_id: int) -> _Outcome:
        assert isinstance(body, SaslAuthenticateRequest)
        session = self._session
        if session is None or self.authenticated:
            reply = SaslAuthenticateResponse(
                error_code=ILLEGAL_SASL_STATE, error_message="no SASL exchange is in progress"
            )
            return self._answer(reply, version, correlation_id, close=self.sasl is not None)
        try:
            token = session.step(body.auth_bytes)
        except SaslFailure as exc:
            reply = SaslAuthenticateResponse(error_code=SASL_AUTHENTICATION_FAILED, error_message=str(exc))
            return self._answer(reply, version, correlation_id, close=True)
        self._finish_if_complete(session)
        return self._answer(
            SaslAuthenticateResponse(error_message=None, auth_bytes=token), version, correlation_id
        )

    def _raw_token(self, frame: bytes) -> list[Action]:
        session = self._session
        assert session is not None
        try:
            token = session.step(frame)
        except SaslFailure:
            return [Close()]
        self._finish_if_complete(session)
        return [Send(struct.pack(">i", len(token)) + token)]

    def _finish_if_complete(self, session: SaslSession) -> None:
        if session.complete:
            self.authenticated = True
            self.user = session.user
            self._session = None
            self._raw_tokens = False


# What 0.8.x answers where the emulator has no handler (see rule 2 in the module docstring).
_EIGHT_ANSWERS: Mapping[int, Callable[[], KafkaMessage]] = {
    9: lambda: messages.OffsetFetchResponse(topics=[]),
    12: lambda: messages.HeartbeatResponse(error_code=-1),
}


def _request_class(api_key: int) -> type[KafkaMessage] | None:
    name = messages.CLASS_BY_KEY.get((api_key, "request"))
    return None if name is None else cast("type[KafkaMessage]", getattr(messages, name))


def _client_id(frame: bytes) -> str | None:
    """The client id of request header v1/v2 (an int16-length string after the first 8 bytes)."""
    if len(frame) < 10 or frame[:4] == b"\x00\x07\x00\x00":  # ControlledShutdown v0: header v0
        return None
    (length,) = struct.unpack_from(">h", frame, 8)
    if length < 0 or len(frame) < 10 + length:
        return None
    return frame[10 : 10 + length].decode("utf-8", "replace")
