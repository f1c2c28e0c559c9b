"""Client profiles read off the wire: what a client sent, what it was offered, what happened.

Theory.  A recording proxy sits between a client and a broker and forwards
bytes untouched; on the side, ``WireRecorder`` reads both directions of one
connection through a size-prefixed frame cursor that keeps at most the first
``KEEP_BYTES`` of each frame and skips the rest, so memory stays bounded
whatever the traffic (a 1 GiB Produce costs the same as a Metadata).  From each
request it reads the header only (api key, version, correlation id, client
id); from an ApiVersions request v3+ (KIP-511) the client's software name and
version; from Produce whether acks=0 (no answer will come).  From each
response it reads the correlation id and, when the response fits in what is
kept, its top-level error code, and the ranges an ApiVersions answer offered.
Per client it also keeps the last request it sent (in the order requests
reached the recording, over all its connections) and what became of it:
where a client stopped is told by whether it gave up waiting on that request
or stopped after it was answered.
Payloads and credentials are never read: SASL requests are counted by header,
and after SaslHandshake v0 the opaque token frames are skipped unread.

Outcomes per request: ``answered`` (error 0 or no top-level error), ``error``
(a top-level error code, named), ``closed`` (the broker closed the connection
with it pending), ``no-response`` (Produce acks=0), ``unanswered`` (the client
left first).  ``ProfileBook`` gathers them per client (software name and
version where sent, else the client id; a connection without software fields
whose client id was seen with some software counts for that software, since
clients send KIP-511 fields only until they know the broker lacks them) in
fixed-size tables, and turns them
into client profiles of the fleet pipeline's format (``client_format``), with
two additions the pipeline ignores: per API the ``pick`` rule and whether the
``max`` is exact, and a ``recorded`` block with the evidence.  The tables are
bounded per client (``MAX_ENTRIES``) and over the whole book (``MAX_PAIRS``,
``MAX_CLIENTS``); what falls past a bound is counted, never silently lost
(``dropped_requests``, ``bounds_note``).  The book marks the clients whose
profile changed, so a writer re-serialises only those (``take_changed``).

How the pick is read: a client that sent some version outside the range the
broker offered it on that connection, or sent an API without an ApiVersions
answer at all, does not negotiate that API: ``fixed``.  Otherwise it picked
inside the offered range: ``highest`` (Kafka's rule).  The ``max`` is exact when
the client sent less than the broker offered; when it sent the broker's max,
the client may know more (``max_exact`` false).  The ``min`` is never known
from a recording (``min_exact`` false): a client that negotiates may go lower
with an older broker than any it was recorded against.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from kafkacompat.errors import KafkaCompatError
from kafkacompat.negotiation.recording_profile import client_profile, profile_pieces
from kafkacompat.protocol import broker_framing, framing, messages
from kafkacompat.protocol.error_codes import error_for
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import ApiKey, ApiVersionsRequest, ApiVersionsResponse

__all__ = [
    "KEEP_BYTES",
    "MAX_CLIENTS",
    "MAX_ENTRIES",
    "MAX_PAIRS",
    "ClientRecord",
    "Outcome",
    "ProfileBook",
    "WireRecorder",
    "load_response_classes",
    "profile_pieces",
]

KEEP_BYTES = 64 * 1024
MAX_CLIENTS = 1000
MAX_PENDING = 4096
MAX_ENTRIES = 512  # (api key, version) pairs per client: both come off the wire, untrusted
MAX_PAIRS = 65536  # (api key, version) entries over the whole book, flags included: ~21 MiB
OVERFLOW_CLIENT = "(other clients)"
# Plain ints from the enum: compared for every frame recorded.
API_VERSIONS, PRODUCE, SASL_HANDSHAKE = (
    int(ApiKey.API_VERSIONS), int(ApiKey.PRODUCE), int(ApiKey.SASL_HANDSHAKE)
)
Outcome = Literal["answered", "error", "closed", "no-response", "unanswered"]
_SIZE = struct.Struct(">i")


class _FrameCursor:
    """Size-prefixed frames from a byte stream: each frame's first ``KEEP_BYTES`` and its size."""

    def __init__(self) -> None:
        self._head = bytearray()  # the 4 size bytes being read
        self._kept = bytearray()
        self._left = -1  # bytes of the current frame still to come; -1 between frames
        self._size = 0

    def feed(self, data: bytes | bytearray | memoryview) -> Iterator[tuple[bytes, int]]:
        view = memoryview(data)
        while view:
            if self._left < 0:
                take = min(4 - len(self._head), len(view))
                self._head += view[:take]
                view = view[take:]
                if len(self._head) < 4:
                    return
                (self._size,) = _SIZE.unpack(self._head)
                self._head.clear()
                if self._size < 0:
                    raise KafkaCompatError(f"a negative frame size ({self._size}): not a Kafka stream")
                self._left = self._size
                self._kept = bytearray()
            take = min(self._left, len(view))
            room = KEEP_BYTES - len(self._kept)
            if room > 0:
                self._kept += view[: min(room, take)]
            view = view[take:]
            self._left -= take
            if self._left == 0:
                self._left = -1
                yield bytes(self._kept), self._size


@dataclass(slots=True)
class ClientRecord:
    """What one client did, in bounded tables."""

    name: str
    version: str
    identified_by: Literal["software", "client-id"]
    # Every table is a plain dict whose keys and values are strs, ints and tuples of them (a
    # set is a dict of None; the outcome counts of a pair are a sorted tuple, replaced when one
    # changes): the collector stops tracking such a dict, so a full book (MAX_PAIRS entries)
    # adds nothing to the pauses of a full garbage collection.  A set, a dict of dicts or an
    # object per entry stays tracked and is walked, entry by entry, by every one of them.
    client_ids: dict[str, None] = field(default_factory=dict)
    outcomes: dict[tuple[int, int], tuple[tuple[str, int], ...]] = field(default_factory=dict)
    offered: dict[tuple[tuple[int, int, int], ...], int] = field(default_factory=dict)
    # per (api key, version): sent where no ApiVersions answer was seen, or outside the offer
    unnegotiated: dict[tuple[int, int], None] = field(default_factory=dict)
    below_offer: dict[tuple[int, int], None] = field(default_factory=dict)

    dropped: int = 0  # requests past MAX_ENTRIES pairs of this client or MAX_PAIRS of the book
    last: tuple[int, int, int, str] | None = None  # (sequence, api key, version, outcome)

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.version)


class ProfileBook:
    """Every client seen by a recording, keyed by identity; bounded in clients and entries.

    ``changed`` holds the keys of the clients whose profile changed since a
    writer last took it (``take_changed``), so a writer re-serialises only those.
    """

    def __init__(self) -> None:
        self.clients: dict[tuple[str, str], ClientRecord] = {}
        self._named: dict[str, ClientRecord] = {}  # client id -> the software that used it
        self._offers: dict[tuple[tuple[int, int, int], ...], tuple[tuple[int, int, int], ...]] = {}
        self.requests = 0
        self.connections = 0
        self.pairs = 0  # (api key, version) entries of every client (outcomes and flags): MAX_PAIRS
        self.pooled_connections = 0  # connections of clients past MAX_CLIENTS, under OVERFLOW_CLIENT
        self.unitemised = 0  # requests counted in no (api key, version) entry: past a bound
        self.changed: set[tuple[str, str]] = set()

    def client(
        self, name: str, version: str, identified_by: Literal["software", "client-id"]
    ) -> ClientRecord:
        key = (name, version)
        if key not in self.clients and len(self.clients) >= MAX_CLIENTS:
            key, identified_by = (OVERFLOW_CLIENT, ""), "client-id"
            self.pooled_connections += 1
        if key not in self.clients:
            self.clients[key] = ClientRecord(key[0], key[1], identified_by)
        self.changed.add(key)
        return self.clients[key]

    def note(
        self, record: ClientRecord, api_key: int, version: int, outcome: str, sequence: int = -1
    ) -> None:
        """One request's outcome for ``record``: itemised while both bounds leave room, else counted."""
        self.changed.add(record.key)
        if record.last is None or sequence >= record.last[0]:
            record.last = (sequence, api_key, version, outcome)
        key = (api_key, version)
        counts = record.outcomes.get(key)
        if counts is None:
            if len(record.outcomes) >= MAX_ENTRIES or self.pairs >= MAX_PAIRS:
                record.dropped += 1
                self.unitemised += 1
                return
            counts = ()
            self.pairs += 1
        record.outcomes[key] = _counted(counts, outcome)

    def flag(self, record: ClientRecord, flags: dict[tuple[int, int], None], key: tuple[int, int]) -> None:
        """Add ``key`` to one of ``record``'s sets of (api key, version) while the bounds leave room."""
        if key in flags:
            return
        if len(record.unnegotiated) + len(record.below_offer) >= 2 * MAX_ENTRIES or self.pairs >= MAX_PAIRS:
            return
        flags[key] = None
        self.pairs += 1
        self.changed.add(record.key)

    def shared_offer(self, offer: tuple[tuple[int, int, int], ...]) -> tuple[tuple[int, int, int], ...]:
        """One copy of each distinct ApiVersions offer, however many clients were given it."""
        if len(self._offers) < MAX_CLIENTS:
            return self._offers.setdefault(offer, offer)
        return self._offers.get(offer, offer)

    def take_changed(self) -> list[ClientRecord]:
        """The clients changed since the last call, in the order of their keys; clears the mark."""
        keys, self.changed = self.changed, set()
        return [self.clients[key] for key in sorted(keys) if key in self.clients]

    def bounds_note(self) -> str:
        """What the bounds left out, in words; empty when nothing was."""
        parts = []
        if self.pooled_connections:
            parts.append(f"{self.pooled_connections} connections of clients past the first {MAX_CLIENTS} "
                         f"pooled under {OVERFLOW_CLIENT!r}")
        if self.unitemised:
            parts.append(f"{self.unitemised} requests past {MAX_ENTRIES} (API, version) pairs of a client "
                         f"or {MAX_PAIRS} of the book counted as dropped_requests")
        return "; ".join(parts)

    def by_client_id(self, client_id: str | None) -> ClientRecord:
        """A connection without software fields: the software seen with its client id, else the id."""
        named = self._named.get(client_id or "")
        return named if named is not None else self.client(client_id or "(no client id)", "", "client-id")

    def seen_with(self, record: ClientRecord, client_id: str | None) -> None:
        if client_id and record.identified_by == "software" and len(self._named) < MAX_CLIENTS:
            self._named.setdefault(client_id, record)

    def progress(self) -> str:
        return f"{self.connections} connections, {len(self.clients)} clients, {self.requests} requests"

    def profiles(self) -> list[dict[str, Any]]:
        return [client_profile(record) for _, record in sorted(self.clients.items())]


def _counted(counts: tuple[tuple[str, int], ...], outcome: str) -> tuple[tuple[str, int], ...]:
    """``counts`` (sorted (outcome, count) pairs) with one more ``outcome``."""
    for index, (seen, count) in enumerate(counts):
        if seen == outcome:
            return (*counts[:index], (seen, count + 1), *counts[index + 1 :])
    return tuple(sorted((*counts, (outcome, 1))))


@dataclass(slots=True)
class _Pending:
    api_key: int
    version: int
    sasl_v0: bool = False
    sequence: int = -1  # the book's request count when it was sent


class WireRecorder:
    """One proxied connection, read on the side: feed it each direction's bytes as they pass."""

    def __init__(self, book: ProfileBook) -> None:
        self.book = book
        book.connections += 1
        self._requests = _FrameCursor()
        self._responses = _FrameCursor()
        self._pending: dict[int, _Pending] = {}
        self._early: list[tuple[int, int, str, int]] = []  # noted before the client was known
        self._client: ClientRecord | None = None
        self._client_id: str | None = None
        self._offer: dict[int, tuple[int, int]] | None = None
        self._offer_noted = False
        self._raw_tokens = 0  # SaslHandshake v0: opaque frames still owed in each direction
        self.broken = False  # the stream stopped parsing: bytes still pass, nothing more is read

    # -- client to broker ------------------------------------------------------------------

    def from_client(self, data: bytes | bytearray | memoryview) -> None:
        if self.broken:
            return
        try:
            for kept, _ in self._requests.feed(data):
                self._request(kept)
        except Exception:  # whatever the bytes, reading on the side must never stop the traffic
            self.broken = True

    def _request(self, frame: bytes) -> None:
        if self._raw_tokens and not _looks_like_request(frame):
            return  # a SASL token (handshake v0): never read
        header = broker_framing.decode_request(frame, decode_body=False).header
        api_key, version = header.request_api_key, header.request_api_version
        correlation = header.correlation_id
        self.book.requests += 1
        if self._client_id is None and header.client_id:
            self._client_id = header.client_id
        if api_key == API_VERSIONS and self._client is None and version >= 3:
            software = _software(frame)
            if software is not None:
                self._client = self.book.client(*software, "software")
                self.book.seen_with(self._client, self._client_id)
        self._identify_later(api_key)
        if len(self._pending) < MAX_PENDING:
            sasl_v0 = api_key == SASL_HANDSHAKE and version == 0
            self._pending[correlation] = _Pending(api_key, version, sasl_v0, self.book.requests)
        self._check_offer(api_key, version)
        if api_key == PRODUCE and _acks_zero(frame, version):
            self._pending.pop(correlation, None)
            self._note(api_key, version, "no-response", self.book.requests)

    def _identify_later(self, api_key: int) -> None:
        """Before any ApiVersions v3+, a connection is its client id's; name it at first non-18."""
        if self._client is None and api_key != API_VERSIONS:
            self._client = self.book.by_client_id(self._client_id)
        if self._client is not None:
            self.book.changed.add(self._client.key)
            if self._client_id and len(self._client.client_ids) < 16:
                self._client.client_ids[self._client_id] = None
            for early in self._early:
                self.book.note(self._client, *early)
            self._early.clear()
            self._note_offer()

    def _note_offer(self) -> None:
        client = self._client
        if client is None or self._offer is None or self._offer_noted:
            return
        self._offer_noted = True
        offer = tuple(sorted((k, low, high) for k, (low, high) in self._offer.items()))
        offer = self.book.shared_offer(offer)
        if offer in client.offered or len(client.offered) < 8:
            client.offered[offer] = client.offered.get(offer, 0) + 1
            self.book.changed.add(client.key)

    def _check_offer(self, api_key: int, version: int) -> None:
        if api_key == API_VERSIONS or self._client is None:
            return
        offered = None if self._offer is None else self._offer.get(api_key)
        client = self._client
        if offered is None or not offered[0] <= version <= offered[1]:
            self.book.flag(client, client.unnegotiated, (api_key, version))
        elif version < offered[1]:
            self.book.flag(client, client.below_offer, (api_key, version))

    def _note(self, api_key: int, version: int, outcome: str, sequence: int) -> None:
        if self._client is None:
            if len(self._early) < 64:
                self._early.append((api_key, version, outcome, sequence))
        else:
            self.book.note(self._client, api_key, version, outcome, sequence)

    # -- broker to client ------------------------------------------------------------------

    def from_broker(self, data: bytes | bytearray | memoryview) -> None:
        if self.broken:
            return
        try:
            for kept, size in self._responses.feed(data):
                self._response(kept, size)
        except Exception:  # whatever the bytes, reading on the side must never stop the traffic
            self.broken = True

    def _response(self, frame: bytes, size: int) -> None:
        if self._raw_tokens:
            self._raw_tokens -= 1
            return
        if len(frame) < 4:
            return
        pending = self._pending.pop(framing.peek_correlation_id(frame), None)
        if pending is None:
            return
        body = _decoded(frame, size, pending)
        code = getattr(body, "error_code", 0) if body is not None else 0
        if pending.api_key == API_VERSIONS and isinstance(body, ApiVersionsResponse) and body.api_keys:
            self._offer = {a.api_key: (a.min_version, a.max_version) for a in body.api_keys}
            self._offer_noted = False
            self._note_offer()
        if pending.sasl_v0 and code == 0:
            self._raw_tokens = 1  # from here tokens go bare until authenticated (one round seen)
        outcome = "answered" if not code else f"error:{error_for(code).name}"
        self._note(pending.api_key, pending.version, outcome, pending.sequence)

    # -- the end ---------------------------------------------------------------------------

    def closed(self, by_broker: bool) -> None:
        """The connection ended; what is still pending was closed on (or left by the client)."""
        for pending in self._pending.values():
            outcome = "closed" if by_broker else "unanswered"
            self._note(pending.api_key, pending.version, outcome, pending.sequence)
        self._pending.clear()
        # Named only now when nothing else was sent: an ApiVersions a pre-0.10 broker closed on
        # is all such a client ever says, and the most telling thing to keep.
        if self._client is None and self._early:
            self._client = self.book.by_client_id(self._client_id)
            self._identify_later(-1)


def load_response_classes() -> int:
    """Load every response class ``WireRecorder`` may decode (the codec loads them lazily); how many.

    A recorder that loads them at start-up allocates nothing long-lived for them during
    traffic, so what start-up made can be left out of every garbage collection at once
    (``recorder.freeze_start_up``).
    """
    names = [name for (_, kind), name in messages.CLASS_BY_KEY.items() if kind == "response"]
    for name in names:
        getattr(messages, name)
    return len(names)


def _looks_like_request(frame: bytes) -> bool:
    if len(frame) < 8:
        return False
    api_key, version = struct.unpack_from(">hh", frame, 0)
    known = messages.REQUEST_VERSIONS.get(api_key)
    return known is not None and 0 <= version <= known[1] + 4


def _software(frame: bytes) -> tuple[str, str] | None:
    try:
        parsed = broker_framing.decode_request(frame)
    except KafkaCompatError:
        return None
    body = parsed.body
    if not isinstance(body, ApiVersionsRequest) or not body.client_software_name:
        return None
    return body.client_software_name, body.client_software_version or ""


def _acks_zero(frame: bytes, version: int) -> bool:
    """Produce's acks: first in the body up to v2, after the transactional id from v3."""
    try:
        parsed = broker_framing.decode_request(frame, decode_body=False)
    except KafkaCompatError:
        return False
    body = parsed.body_bytes
    position = 0
    if version >= 3:
        if version >= 9:  # compact nullable string: uvarint length + 1
            length, shift = 0, 0
            while position < len(body):
                byte = body[position]
                position += 1
                length |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
            position += max(length - 1, 0)
        else:
            (length,) = struct.unpack_from(">h", body, 0)
            position = 2 + max(length, 0)
    if position + 2 > len(body):
        return False
    acks: int = struct.unpack_from(">h", body, position)[0]
    return acks == 0


def _decoded(frame: bytes, size: int, pending: _Pending) -> KafkaMessage | None:
    """The response body when it was kept whole and the codec reads that version; else None."""
    if size > len(frame):
        return None
    name = messages.CLASS_BY_KEY.get((pending.api_key, "response"))
    if name is None:
        return None
    cls: type[KafkaMessage] = getattr(messages, name)
    if pending.version not in cls.VALID_VERSIONS:
        return None
    version = pending.version
    try:
        _, body = framing.decode_response(frame, cls, version, allow_trailing=True)
    except KafkaCompatError:
        if pending.api_key != API_VERSIONS:
            return None
        try:  # an ApiVersions version the broker refuses is answered in the v0 layout
            _, body = framing.decode_response(frame, cls, 0, allow_trailing=True)
        except KafkaCompatError:
            return None
    return body
