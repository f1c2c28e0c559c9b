r"""One client connection's whole protocol life, sans I/O: handshake, SASL, then requests.

A connection to a Kafka broker goes through three phases, each with its own
machine, and this object strings them together so that a driver (trio,
asyncio, a blocking socket) only moves bytes and reports what the network did:

1. the ApiVersions handshake (``ApiVersionsHandshake``: KIP-35, KIP-511), which
   may ask for a new connection (a retry at a lower version, or the pre-0.10
   fallback);
2. SASL authentication where configured (``SaslExchange``), its versions
   picked from the handshake's answer;
3. requests (``RequestPipeline``): correlation ids, the in-flight bound,
   response matching, acks=0, requests given up.

One correlation-id counter runs through all three, without a gap.  One frame
splitter reads the stream from the first byte, so a frame's size is checked
before anything is buffered for it, in every phase.  The object has no socket,
reads no clock and runs no task: where a rule depends on the time (a deadline,
when a write is due) the driver passes ``now`` on its own clock; the waiting
stays in the drivers, retries in the cluster layer.

Driving it
==========
While ``phase`` is ``SETUP`` the driver asks ``next_step(now)`` (``now`` on
its own clock) and does what the step's action says, within ``step.ends_by``:

=================  ==============================================================
action             what the driver does, and the events it may report
=================  ==============================================================
``OpenSocket``     close any old socket, open a new one: ``connected()``, or
                   ``open_failed(error)`` with the kafkacompat error it got
``Write``          write ``data``: ``written()``; ``closed()`` if the stream broke
``Read``           read some bytes: ``receive_data(data)`` (any amount; the
                   step stays until a whole frame has come); ``closed()``
``Ready``          none: the connection carries requests from now on
``SetupFailed``    none: raise ``error``; close the socket
=================  ==============================================================

When ``step.ends_by`` passes first, the driver reports ``step_expired()``.  The
deadline rules are the connection's, the same for every driver: a request
written starts a fresh ``request_timeout`` for itself and every answer read
after it (the pre-0.10 probe shares ApiVersions'); opening a socket has
``connect_timeout``; a ``Read`` with a quiet period ends early (``step.quiet``)
only while the request's deadline is ahead; a step's deadline counts from
the first ``next_step`` that handed it out, whatever pieces its bytes come
in; and an answer decoded past its deadline fails the setup as a timeout (found
at the next ``next_step``).  ``next_step(now, overall=)`` bounds every step by
the driver's deadline for the whole setup (its ``open``'s).  A driver without a
clock can call ``next_action()`` and report ``timed_out()`` or ``quiet()`` itself.

First contact
=============
A connection names a peer that is not Kafka (TLS, HTTP, SSH, text, silent)
from its first requests, on every driver: see ``connection.first_contact``
(the first correlation id, the foreign bytes, the silence clock).  A peer that
closes on every Kafka request is asked a TLS ClientHello last, over plaintext.

Once ``phase`` is ``READY`` the driver queues requests with ``send`` (any
number: past ``max_in_flight`` they wait here for a slot), writes
``bytes_to_send()`` when ``write_due_at(now)`` says a write is due and
confirms it with ``write_done``, feeds what it reads to ``receive_data`` and
wakes the callers named in the events returned; a caller that gives up is
``abandon``\ ed.  A request sent with a deadline is ended by ``expire(now)``
once it passes: the driver keeps one timer, at ``next_deadline()``, for every
request of the connection, never one per request.  ``closed()`` at any time
fails what is pending.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from enum import StrEnum
from typing import TYPE_CHECKING, Final, NamedTuple

from kafkacompat.connection.config import DEFAULT_CONFIG, ConnectionConfig
from kafkacompat.connection.first_contact import FIRST_CONTACT_CORRELATION_ID, FirstContact, foreign_bytes
from kafkacompat.errors import (
    ConfigError,
    KafkaCompatError,
    KafkaTimeoutError,
    PipelineStateError,
    ProtocolError,
    TransportError,
    WrongProtocolError,
    attach_context,
)
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.handshake import ApiVersionsHandshake
from kafkacompat.negotiation.handshake.config import CODEC_MAX_VERSION
from kafkacompat.negotiation.handshake.transcript import HandshakeTranscript
from kafkacompat.negotiation.handshake.types import (
    Connect,
    Done,
    Fail,
    HandshakeResult,
    ReceiveReply,
    SendProbe,
    SendRequest,
)
from kafkacompat.negotiation.pipeline_events import Ending, PipelineEvent, Ticket, endings
from kafkacompat.protocol.framing import FOREIGN_BYTES_KEPT, FrameSplitter
from kafkacompat.protocol.message import KafkaMessage

if TYPE_CHECKING:  # the exchange and its messages load when a connection logs in, not before
    from kafkacompat.connection._request_pipeline import RequestPipeline  # loaded by the first request
    from kafkacompat.connection.sasl import SaslLogin

    # KIP-1242's identity and memory are the cluster layer's: a connection made alone never loads them.
    from kafkacompat.negotiation.handshake.identity import ApiVersionsMemory, BrokerIdentity
    from kafkacompat.negotiation.sasl_exchange import Authenticated, SaslExchange

__all__ = [
    "ClientConnection",
    "OpenSocket",
    "Phase",
    "Read",
    "Ready",
    "SetupFailed",
    "SetupStep",
    "Write",
    "require_request",
    "setup_budget",
]


class Phase(StrEnum):
    SETUP = "setup"  # handshake and authentication
    READY = "ready"  # carrying requests
    FAILED = "failed"  # setup failed or the stream broke: close the socket
    CLOSED = "closed"  # closed by the driver


class OpenSocket(NamedTuple):
    attempt: int  # 1 for the first connection, 2 for the first reconnect...


class Write(NamedTuple):
    """Write ``data``.  ``fresh_deadline``: a new request starts, and with it a new deadline
    for it and its answer (False for the pre-0.10 probe, which shares ApiVersions' deadline)."""

    data: bytes
    what: str
    fresh_deadline: bool = True


class Read(NamedTuple):
    """Read; ``quiet_period``: report ``quiet()`` when nothing came for that long (the
    deadline still applies)."""

    what: str
    quiet_period: float | None = None


class Ready(NamedTuple):
    capabilities: BrokerCapabilities
    handshake: HandshakeResult
    authenticated: Authenticated | None


class SetupFailed(NamedTuple):
    error: KafkaCompatError


SetupAction = OpenSocket | Write | Read | Ready | SetupFailed


class SetupStep(NamedTuple):
    """A setup action with its clock: the instant it must end by, and what that instant means.

    ``quiet``: ``ends_by`` is a ``Read``'s quiet period, which ends it before the request's
    deadline (nothing came yet: the handshake probes a pre-0.10 broker); else it is the
    deadline itself (the broker was too slow).  ``step_expired()`` reports whichever it is.
    """

    action: SetupAction
    ends_by: float = math.inf
    quiet: bool = False

# Enum members as plain names: reading one through its class costs ~0.1 us on CPython 3.11.
_SETUP, _READY, _FAILED, _CLOSED = Phase.SETUP, Phase.READY, Phase.FAILED, Phase.CLOSED

def setup_budget(config: ConnectionConfig, timeout: float | None) -> float:
    """The seconds a driver's ``open``/``reconnect`` may take in all: ``timeout``, else the
    config's ``call_timeout`` (every driver's one rule; ``next_step``'s ``overall`` is now + it)."""
    if timeout is None:
        return config.call_timeout
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
        raise ConfigError(f"timeout must be a positive number of seconds, not {timeout!r}")
    return float(timeout)


def require_request(message: KafkaMessage, node: str | None = None) -> int:
    """The api key of ``message``, which must be a request: every driver's one check."""
    api_key = message.API_KEY
    if message.MESSAGE_TYPE != "request" or api_key is None:
        raise ProtocolError(f"{message.NAME} is not a request", node=node)
    return api_key


# What a Write and a Read say, per ApiVersions version: made once, not per connection.
_API_VERSIONS_NAMES: Final = tuple(f"ApiVersions v{version}" for version in range(CODEC_MAX_VERSION + 1))
_API_VERSIONS_ANSWERS: Final = tuple(f"the answer to {name}" for name in _API_VERSIONS_NAMES)
# Actions are values: the same ones serve every connection.  OpenSocket by attempt number
# (index 0 unused); the Read of an ApiVersions answer by version and quiet period (a
# config's, so few), at most _KEPT_READS of them.
_OPEN_SOCKETS: Final = tuple(OpenSocket(number) for number in range(8))
_API_VERSIONS_READS: dict[tuple[int, float | None, type], Read] = {}
_KEPT_READS: Final = 64


class ClientConnection:
    """A connection from its first byte to its last response; see the module docstring."""

    def __init__(
        self,
        config: ConnectionConfig | None = None,
        *,
        node: str | None = None,
        node_id: int | None = None,
        sasl: SaslLogin | None = None,
        identity: BrokerIdentity | None = None,
        api_versions_memory: ApiVersionsMemory | None = None,
    ) -> None:
        """A connection made as ``config`` says (its client id, bounds, timeouts, policy, SASL).

        ``sasl`` stands in for the config's login, for a mechanism the config cannot name.
        """
        config = config if config is not None else DEFAULT_CONFIG
        self.config = config
        self.node = node
        self.node_id = node_id
        if sasl is None and config.sasl is not None:
            from kafkacompat.connection.sasl import sasl_login  # SASL only: a plain connection's RSS

            sasl = sasl_login(config)
        self._sasl_login = sasl
        # KIP-1242: the broker meant (None on a bootstrap connection), and the per-address
        # memory of advertised ApiVersions maxima; both are the handshake's (handshake.identity).
        self._handshake = ApiVersionsHandshake(
            config.handshake,
            node=node,
            first_correlation_id=FIRST_CONTACT_CORRELATION_ID,
            identity=identity,
            memory=api_versions_memory,
            headers=config.request_headers,  # one client id in every header: the config's
            plaintext=config.tls is None,
        )
        self._frames = FrameSplitter(config.max_frame_size)
        self._sockets = 0  # sockets opened: the first one reads into the splitter made here
        self._sasl: SaslExchange | None = None
        self._pipeline: RequestPipeline | None = None
        self._close_error: KafkaCompatError | None = None  # why it closed, before a pipeline was made
        # Once ready: the correlation id the requests start at.  The pipeline is made when
        # first used, as a connection only negotiated (a probe, a benchmark) never needs it.
        self._first_request_id: int | None = None
        self._result: HandshakeResult | None = None
        self._capabilities: BrokerCapabilities | None = None
        self._phase = _SETUP
        # The setup clock (see the module's doc): the step handed out for the current
        # action, the deadline of the request being answered, and a read to check the
        # time after (its deadline and what it read).
        self._step: SetupStep | None = None
        self._request_deadline = math.inf
        self._decoded_by: tuple[float, str] | None = None
        self._contact = FirstContact()  # the current socket's silence clock (first_contact.py)
        self._action: SetupAction = self._from_handshake()

    # -- queries ------------------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        return self._phase

    def next_action(self) -> SetupAction:
        """What the driver should do during setup; asking twice gives the same answer."""
        return self._action

    def next_step(self, now: float, *, overall: float = math.inf) -> SetupStep:
        """The setup action with the instant it must end by, on the driver's clock (``now``).

        ``overall`` bounds every step (a driver's deadline for the whole setup).  Asking
        again for the same action gives the same step, whatever ``now`` is then.
        """
        decoded = self._decoded_by
        if decoded is not None:
            self._decoded_by = None
            if now > decoded[0] and self._phase is not _FAILED:  # decoding ran past the deadline
                self._setup_failed(KafkaTimeoutError(f"timed out while reading {decoded[1]}", node=self.node))
        step = self._step
        if step is not None:
            return step
        action = self._action
        kind = type(action)
        if kind is Write:
            assert isinstance(action, Write)
            if action.fresh_deadline:  # a request and its answers share one deadline
                self._request_deadline = min(now + self.config.request_timeout, overall)
            self._contact.request_written(now, None if self._sasl else self.config.first_contact_timeout)
            step = SetupStep(action, self._request_deadline)
        elif kind is Read:
            assert isinstance(action, Read)
            deadline = self._contact.read_deadline(self._request_deadline, overall)
            quiet = action.quiet_period
            if quiet is not None and now + quiet < deadline:  # quiet only while the deadline is ahead
                step = SetupStep(action, now + quiet, quiet=True)
            else:
                step = SetupStep(action, deadline)
        elif kind is OpenSocket:
            step = SetupStep(action, min(now + self.config.connect_timeout, overall))
        else:
            step = SetupStep(action)
        self._step = step
        return step

    @property
    def is_ready(self) -> bool:
        """Ready and not failed: requests can be sent and answers read."""
        if self._phase is not _READY:
            return False
        pipeline = self._pipeline
        return pipeline is None or pipeline.failure is None  # a pipeline not made yet has not failed

    @property
    def capabilities(self) -> BrokerCapabilities | None:
        return self._capabilities

    @property
    def transcript(self) -> HandshakeTranscript:
        return self._handshake.transcript

    def _request_side(self) -> RequestPipeline:
        """The request pipeline (private); only once the connection is ready."""
        pipeline = self._pipeline
        if pipeline is not None:
            return pipeline
        if self._first_request_id is None:
            raise PipelineStateError(f"the connection is not ready (phase {self._phase})", node=self.node)
        assert self._capabilities is not None
        from kafkacompat.connection._request_pipeline import RequestPipeline  # loaded by the first request

        config = self.config
        self._pipeline = pipeline = RequestPipeline(
            node=self.node,
            headers=config.request_headers,
            first_correlation_id=self._first_request_id,
            max_in_flight=config.max_in_flight,
            frames=self._frames,
            reply_limits=config.reply_limits,
            api_ranges=self._capabilities.api_ranges,
        )
        if self._phase is _CLOSED:  # closed before its first request: it starts out lost, as it closed
            pipeline.connection_lost(self._close_error)
        return pipeline

    # -- setup events -------------------------------------------------------------------

    def connected(self) -> None:
        self._expect(OpenSocket)
        if self._sockets:  # a new socket starts a new stream
            self._frames = FrameSplitter(self.config.max_frame_size)
        self._sockets += 1
        self._contact = FirstContact()
        if self._result is not None:  # the fallback's fresh connection: nothing to negotiate on it
            self._advance(self._after_handshake_action())
            return
        self._handshake.connected()
        self._advance(self._from_handshake())

    def connect_failed(self, reason: str = "") -> None:
        self._expect(OpenSocket)
        if self._result is not None:
            self._setup_failed(_connect_error(reason, self.node))
            return
        self._handshake.connect_failed(reason)
        self._advance(self._from_handshake())

    def open_failed(self, error: KafkaCompatError) -> None:
        """Opening the socket raised ``error``: a timeout or a transport failure is the
        handshake's to judge; anything else (TLS verification, a bad TLS setting) ends setup."""
        if isinstance(error, KafkaTimeoutError):
            self.timed_out()
        elif isinstance(error, TransportError):
            self.connect_failed(str(error))
        else:
            self._expect(OpenSocket)
            self._setup_failed(error)

    def written(self) -> None:
        self._expect(Write)
        if self._sasl is not None:
            self._sasl.sent()
            self._advance(self._from_sasl())
        else:
            self._handshake.request_sent()
            self._advance(self._from_handshake())

    def receive_data(self, data: bytes | bytearray | memoryview) -> list[PipelineEvent]:
        """Bytes read from the socket: setup moves on, or responses come out (once ready)."""
        if self._phase is _READY:
            return self._watch(self._request_side().receive_data(data))
        self._expect(Read)
        assert isinstance(self._action, Read)
        self._decoded_by = (self._request_deadline, self._action.what)
        if data and self._contact.bytes_came():
            step = self._step
            if step is not None and not step.quiet:
                self._step = None  # timed afresh: by the request's deadline now, not the silence's
        self._frames.push(data)
        return self._read_setup_frames()

    def _read_setup_frames(self) -> list[PipelineEvent]:
        while isinstance(self._action, Read):
            limit, what = self._setup_ceiling()
            try:
                frame = self._frames.next_frame(limit, what=what)
            except KafkaCompatError as exc:  # another protocol's bytes, a size above the ceiling
                # First contact: the handshake names another protocol (TLS, HTTP, SSH, text);
                # a size prefix that names none (binary, too large or negative) stands.
                if self._sasl is not None:
                    self._setup_failed(exc)
                elif isinstance(exc, WrongProtocolError):
                    self._to_handshake_as_foreign(self._frames.unconsumed(FOREIGN_BYTES_KEPT))
                elif not self._named_foreign():
                    self._setup_failed(exc)
                return []
            if frame is None:
                return []
            if self._sasl is not None:
                self._sasl.received_frame(frame)
                self._advance(self._from_sasl())
            else:
                self._handshake.received_frame(frame)
                self._advance(self._from_handshake())
        if self._first_request_id is not None and self._frames.pending:
            # Setup ended on a frame of this read; any frame after it answers nothing asked
            # yet, and the pipeline fails the connection for it.
            return self._watch(self._request_side().read_frames())
        return []

    def _named_foreign(self) -> bool:
        """During a read, the bytes pending are another protocol's: the handshake names them."""
        if not isinstance(self._action, Read):
            return False
        pending = foreign_bytes(self._frames)
        if pending is None:
            return False
        self._to_handshake_as_foreign(pending)
        return True

    def _to_handshake_as_foreign(self, data: bytes) -> None:
        self._handshake.foreign_bytes(data)
        self._advance(self._from_handshake())

    def _setup_ceiling(self) -> tuple[int, str]:
        phase = self._handshake if self._sasl is None else self._sasl
        return phase.reply_ceiling(self.config.reply_limits, self.config.max_frame_size)

    def closed(self, error: KafkaCompatError | None = None) -> list[PipelineEvent]:
        """The socket closed (by the broker, or the driver is closing it).

        Once ready, every pending request fails with ``error`` (by default, a
        ``TransportError`` saying the connection closed).
        """
        if self._phase is _READY:
            self._phase = _CLOSED
            if self._pipeline is None:  # no request was ever made: nothing pending, nothing to load
                self._close_error = error
                return []
            return self._request_side().connection_lost(error)
        if self._phase is not _SETUP:
            return []
        if self._sasl is not None:
            self._sasl.connection_closed()
            self._advance(self._from_sasl())
        elif self._named_foreign():  # a line, then a close
            return []
        elif isinstance(self._action, Write | Read):
            self._handshake.connection_closed()
            self._advance(self._from_handshake())
        else:
            self._phase = _CLOSED
        return []

    def step_expired(self) -> None:
        """The current step's ``ends_by`` passed: ``quiet()`` or ``timed_out()``, as it says."""
        step = self._step
        if step is not None and step.quiet:
            self.quiet()
        else:
            self.timed_out()

    def quiet(self) -> None:
        """Nothing came for the ``quiet_period`` of the current ``Read``."""
        self._expect(Read)
        self._handshake.quiet()
        self._advance(self._from_handshake())

    def timed_out(self) -> None:
        """The driver's deadline for the current setup step passed."""
        self._expect(OpenSocket, Write, Read)
        if self._sasl is not None:
            self._sasl.timed_out()
            self._advance(self._from_sasl())
        elif self._result is not None:  # opening the fallback's fresh connection
            self._setup_failed(KafkaTimeoutError("timed out opening a new connection", node=self.node))
        elif self._named_foreign():  # less than a frame, foreign
            return
        elif isinstance(self._action, Read) and not self._contact.heard:  # not one byte: a silent peer
            step = self._step
            judged, waited = self._contact.silence(step.ends_by if step is not None else None)
            self._handshake.timed_out(silent=judged, waited=waited)
            self._advance(self._from_handshake())
        else:
            self._handshake.timed_out()
            self._advance(self._from_handshake())

    # -- requests, once ready -----------------------------------------------------------

    def send(self, message: KafkaMessage, version: int | None = None, deadline: float = math.inf) -> Ticket:
        """Queue a request at ``version`` (default: the version picked for this broker).

        Any number may be queued: past ``max_in_flight`` a request waits here for a
        slot (``write_due_at`` hands it out when one frees).  Past ``deadline`` (on the
        driver's clock; inf: never) ``expire`` ends it with a ``KafkaTimeoutError``.
        Raises what ended the connection once it failed, and the codec's error for a
        message it cannot write.
        """
        pipeline = self._request_side()
        if version is None:
            assert self._capabilities is not None
            version = self._capabilities.pick_version(require_request(message, self.node))
        return pipeline.send(message, version, deadline)

    def next_deadline(self) -> float:
        """The earliest deadline of a request not ended yet (inf: none): the driver's one timer
        for every request is set to it, and calls ``expire`` when it rings."""
        pipeline = self._pipeline
        return pipeline.next_deadline() if pipeline is not None else math.inf

    def endings(self, events: list[PipelineEvent], now: float) -> Iterator[Ending]:
        """Each request ``events`` end, with what its caller is told at ``now`` (the driver's
        clock, read after the events were decoded): its answer, or its error.  An answer read
        past its request's deadline ends as that deadline's timeout: a deadline covers
        decoding the answer too."""
        for ticket, response, error in endings(events):
            if error is None and now > ticket.deadline:
                error = ticket.timeout_error(self.config.max_in_flight, self.node)
            yield ticket, response, error

    def expire(self, now: float) -> list[PipelineEvent]:
        """Every request whose deadline is ``now`` or before ends: ``RequestFailed`` with the
        ``KafkaTimeoutError`` for its caller, the request taken back as ``abandon`` takes it."""
        pipeline = self._pipeline
        return self._watch(pipeline.expire(now)) if pipeline is not None else []

    def write_due_at(self, now: float) -> float:
        """When the next write is due, on the driver's clock: ``now`` or before (write
        ``bytes_to_send()`` now), later (ask again then), or ``inf`` (nothing to write)."""
        pipeline = self._pipeline
        return pipeline.write_due_at(now) if pipeline is not None else math.inf

    def bytes_to_send(self) -> bytes:
        """Once ready: the frames of the requests holding a slot and not written yet, at once
        (``write_done`` after)."""
        return self._request_side().bytes_to_send()

    def write_done(self) -> list[PipelineEvent]:
        """What ``bytes_to_send`` returned was written: the events of requests that end there."""
        return self._request_side().write_done()

    def abandon(self, ticket: Ticket) -> list[PipelineEvent]:
        """The caller of ``ticket`` gave up: its slot is freed, its late answer read and dropped."""
        return self._request_side().abandon(ticket)

    @property
    def in_flight(self) -> int:
        """Requests holding one of the ``max_in_flight`` slots; 0 before the connection is ready."""
        pipeline = self._pipeline
        return pipeline.in_flight if pipeline is not None else 0

    @property
    def failure(self) -> KafkaCompatError | None:
        """Once ready: the error that ended the connection, if it failed (a close included)."""
        pipeline = self._pipeline
        if pipeline is None and self._first_request_id is None:
            return None  # not ready yet: setup failures are SetupFailed's
        return (pipeline if pipeline is not None else self._request_side()).failure

    def body_room(self) -> memoryview | None:
        """Once ready: the unfilled part of the reply body being read, for a driver that
        reads into it (``recv_into``) instead of handing over bytes; None between frames."""
        return self._frames.body_room() if self._phase is _READY else None

    def body_filled(self, count: int) -> list[PipelineEvent]:
        """``count`` bytes were read into ``body_room()``: the events of what completed."""
        self._frames.body_filled(count)
        return self._watch(self._request_side().read_frames())

    # -- moving between phases ----------------------------------------------------------

    def _advance(self, action: SetupAction) -> None:
        self._action = action
        self._step = None  # the next step is timed afresh

    def _from_handshake(self) -> SetupAction:
        action = self._handshake.next_action()
        # The handshake makes these exact classes: compared by type, no isinstance chain.
        if type(action) is SendRequest:
            return Write(action.frame, _API_VERSIONS_NAMES[action.version])
        if type(action) is ReceiveReply:
            key = (action.version, action.quiet_period, type(action.quiet_period))  # 1 and 1.0 apart
            read = _API_VERSIONS_READS.get(key)
            if read is None:
                read = Read(_API_VERSIONS_ANSWERS[action.version], action.quiet_period)
                if len(_API_VERSIONS_READS) < _KEPT_READS:
                    _API_VERSIONS_READS[key] = read
            return read
        if type(action) is Done:
            self._result = action.result
            self._capabilities = BrokerCapabilities.from_handshake(
                action.result, node=self.node, node_id=self.node_id, policy=self.config.policy
            )
            if action.needs_new_connection:
                return OpenSocket(self._handshake.transcript.connections + 1)
            return self._after_handshake_action()
        if type(action) is Connect:
            number = action.connection
            return _OPEN_SOCKETS[number] if number < len(_OPEN_SOCKETS) else OpenSocket(number)
        if type(action) is SendProbe:
            return Write(action.frame, action.what, fresh_deadline=False)
        assert isinstance(action, Fail)
        self._phase = _FAILED
        return SetupFailed(action.error)

    def _after_handshake_action(self) -> SetupAction:
        assert self._capabilities is not None
        if self._sasl_login is None:
            return self._ready(None)
        from kafkacompat.negotiation.sasl_exchange import SaslExchange, sasl_versions  # SASL only

        try:
            handshake_version, authenticate_version = sasl_versions(self._capabilities, self.config.policy)
            mechanism = self._sasl_login.new_mechanism()
        except KafkaCompatError as exc:
            return self._failed_action(exc)
        self._sasl = SaslExchange(
            mechanism,
            username=self._sasl_login.username,
            handshake_version=handshake_version,
            authenticate_version=authenticate_version,
            first_correlation_id=self._handshake.next_correlation_id,
            headers=self.config.request_headers,
            node=self.node,
            redact=self._sasl_login.redact,
        )
        return self._from_sasl()

    def _from_sasl(self) -> SetupAction:
        from kafkacompat.negotiation.sasl_exchange import AwaitReply, SaslFailed, SendBytes  # SASL only

        assert self._sasl is not None
        action = self._sasl.next_action()
        if isinstance(action, SendBytes):
            return Write(action.data, action.what)
        if isinstance(action, AwaitReply):
            return Read(f"the answer to {action.what}")
        if isinstance(action, SaslFailed):
            return self._failed_action(action.error)
        return self._ready(action)

    def _ready(self, authenticated: Authenticated | None) -> Ready:
        assert self._result is not None and self._capabilities is not None
        counter = self._sasl if self._sasl is not None else self._handshake  # one counter, no gap
        self._first_request_id = counter.next_correlation_id
        self._phase = _READY
        return Ready(self._capabilities, self._result, authenticated)

    def _failed_action(self, error: KafkaCompatError) -> SetupFailed:
        self._phase = _FAILED
        return SetupFailed(attach_context(error, node=self.node, transcript=self._handshake.transcript))

    def _watch(self, events: list[PipelineEvent]) -> list[PipelineEvent]:
        if self._pipeline is not None and self._pipeline.failure is not None:
            self._phase = _FAILED
        return events

    def _setup_failed(self, error: KafkaCompatError) -> None:
        self._advance(self._failed_action(error))

    def _expect(self, *kinds: type[SetupAction]) -> None:
        if self._phase is not _SETUP or type(self._action) not in kinds:  # exact classes, made here
            expected = type(self._action).__name__ if self._phase is _SETUP else f"phase {self._phase}"
            raise PipelineStateError(
                f"the connection did not expect that now (its next step: {expected})", node=self.node
            )


def _connect_error(reason: str, node: str | None) -> KafkaCompatError:
    because = f": {reason}" if reason else ""
    return TransportError(f"could not open a new connection after the handshake{because}", node=node)
