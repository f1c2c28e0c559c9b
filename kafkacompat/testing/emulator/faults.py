"""Fault knobs as data, and what each one turns a reply into.

Theory.  A fault is a value: *what* goes wrong (``FaultKind`` and its one
parameter) and *when* (an API key, a version range, how many matching
requests to let through first, how many times to fire).  A ``FaultPlan`` holds
a broker's faults in order and counts matches; the first fault that matches a
request and still has firings left is the one applied, and only that one.

Applying a fault is pure: ``apply_fault`` takes the reply the broker would
have sent (or None when the fault replaces processing) and returns the
actions for the connection loop (``Send``, ``Sleep``, ``Close``, ``Stall``,
``Freeze``).  Stalling and freezing both leave the client without an answer on
an open connection; a stalled broker goes on reading (a client's writes
always succeed), a frozen one stops reading too, as a process that hangs
mid-stream does: the client's writes then fill the socket buffers and block.
Faults that pose as other software are faults like any other:

- Azure Event Hubs resets the connection on flexible ApiVersions: a ``RESET``
  limited to key 18, versions ``from_version``+ (3 by default, as first seen;
  issue 11 found it closing on v4 and so answering v3: ``from_version=4``).
- Tansu 0.6.0 answers an ApiVersions version above the max it advertises
  (it advertises 18: 0-4) with the v3 body and error 0 instead of
  UNSUPPORTED_VERSION: ``TANSU_API_VERSIONS``.
- A hostile broker answers UNSUPPORTED_VERSION but advertises an ApiVersions
  max at least as high as the version asked for, so that a client that trusts
  the advertised max would retry forever: ``HOSTILE_UNSUPPORTED_VERSION``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kafkacompat.errors import EmulatorConfigError
from kafkacompat.protocol.versions import OPEN_END, VersionRange
from kafkacompat.testing.emulator.profile import API_VERSIONS_KEY

__all__ = [
    "GARBAGE",
    "HTTP_REPLY",
    "TLS_ALERT",
    "Action",
    "Close",
    "Fault",
    "FaultKind",
    "FaultPlan",
    "Freeze",
    "Send",
    "Sleep",
    "Stall",
    "apply_fault",
]

#: A TLS record: fatal alert, handshake_failure (what a TLS listener sends to plaintext).
TLS_ALERT = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])
#: What a web server says to bytes it cannot parse.
HTTP_REPLY = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n"
    b"Connection: close\r\n\r\nBad Request"
)
#: Bytes no Kafka client can frame: the size prefix is negative.
GARBAGE = bytes(range(0xF0, 0x100))


# -- what the connection loop is told to do ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    data: bytes


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class Close:
    reset: bool = False  # True: an RST (SO_LINGER 0) instead of a FIN


@dataclass(frozen=True, slots=True)
class Stall:
    """Never answer again; keep the connection open until the peer goes."""


@dataclass(frozen=True, slots=True)
class Freeze:
    """Stop reading and answering; keep the connection open (until the broker stops or drops it)."""


Action = Send | Sleep | Close | Stall | Freeze
Versions = VersionRange | tuple[int, int] | None


# -- faults --------------------------------------------------------------------------------


class FaultKind(enum.StrEnum):
    CLOSE = "close"  # close without a reply (what Kafka does to an unsupported version)
    CLOSE_AFTER_BYTES = "close-after-bytes"  # send the first N bytes of the reply, then close
    RESET = "reset"  # reset the connection (RST) without a reply
    STALL = "stall"  # never reply; keep the connection open
    FREEZE = "freeze"  # stop reading and replying mid-stream; keep the connection open
    RESET_AFTER_BYTES = "reset-after-bytes"  # send the first N bytes of the reply, then reset (RST)
    DELAY = "delay"  # reply after a delay
    GARBAGE = "garbage"  # send bytes that are not a Kafka frame instead of the reply
    TLS = "tls"  # send a TLS alert instead of the reply, then close
    HTTP = "http"  # send an HTTP 400 instead of the reply, then close
    WRONG_CORRELATION_ID = "wrong-correlation-id"  # reply with another correlation id
    HOSTILE_UNSUPPORTED_VERSION = "hostile-unsupported-version"  # ApiVersions only, see above
    TANSU_API_VERSIONS = "tansu-api-versions"  # ApiVersions only, see above


# Kinds that act instead of the broker's own processing of the request.
_REPLACES_PROCESSING = frozenset({FaultKind.CLOSE, FaultKind.RESET, FaultKind.STALL, FaultKind.FREEZE})


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault knob.  Build with the class methods; every field is plain data.

    ``api_key``/``versions`` narrow the requests it applies to (None: any);
    ``skip`` lets that many matching requests through first; ``times`` is how
    often it fires (None: every time after ``skip``).
    """

    kind: FaultKind
    api_key: int | None = None
    versions: VersionRange | None = None
    skip: int = 0
    times: int | None = None
    nbytes: int = 0
    seconds: float = 0.0
    payload: bytes = b""
    offset: int = 1

    def __post_init__(self) -> None:
        if self.skip < 0 or (self.times is not None and self.times < 1):
            raise EmulatorConfigError(f"{self.kind}: skip must be >= 0 and times >= 1 (or None)")
        if self.nbytes < 0 or self.seconds < 0:
            raise EmulatorConfigError(f"{self.kind}: byte counts and delays cannot be negative")
        if self.kind is FaultKind.WRONG_CORRELATION_ID and self.offset == 0:
            raise EmulatorConfigError("a wrong correlation id needs a non-zero offset")

    def matches(self, api_key: int, version: int, *, beyond_advertised: bool = False) -> bool:
        """Whether the fault applies; ``beyond_advertised``: the version is above the broker's max."""
        if self.api_key is not None and api_key != self.api_key:
            return False
        if self.kind is FaultKind.TANSU_API_VERSIONS and not beyond_advertised:
            return False
        return self.versions is None or version in self.versions

    @property
    def replaces_processing(self) -> bool:
        return self.kind in _REPLACES_PROCESSING

    def describe(self) -> str:
        where = "any request" if self.api_key is None else f"API key {self.api_key}"
        if self.versions is not None:
            where += f" v{self.versions}"
        return f"{self.kind.value} on {where}"

    # -- constructors: ``versions`` (a VersionRange or (min, max)), ``skip`` and ``times``
    # narrow each one as described above.

    @classmethod
    def close(cls, api_key: int | None = None, *, versions: Versions = None, skip: int = 0,
              times: int | None = None) -> Fault:
        return cls(FaultKind.CLOSE, api_key, _range(versions), skip, times)

    @classmethod
    def close_after_bytes(cls, nbytes: int, api_key: int | None = None, *, versions: Versions = None,
                          skip: int = 0, times: int | None = None) -> Fault:
        return cls(FaultKind.CLOSE_AFTER_BYTES, api_key, _range(versions), skip, times, nbytes=nbytes)

    @classmethod
    def reset(cls, api_key: int | None = None, *, versions: Versions = None, skip: int = 0,
              times: int | None = None) -> Fault:
        return cls(FaultKind.RESET, api_key, _range(versions), skip, times)

    @classmethod
    def stall(cls, api_key: int | None = None, *, versions: Versions = None, skip: int = 0,
              times: int | None = None) -> Fault:
        return cls(FaultKind.STALL, api_key, _range(versions), skip, times)

    @classmethod
    def freeze(cls, api_key: int | None = None, *, versions: Versions = None, skip: int = 0,
               times: int | None = None) -> Fault:
        return cls(FaultKind.FREEZE, api_key, _range(versions), skip, times)

    @classmethod
    def reset_after_bytes(cls, nbytes: int, api_key: int | None = None, *, versions: Versions = None,
                          skip: int = 0, times: int | None = None) -> Fault:
        return cls(FaultKind.RESET_AFTER_BYTES, api_key, _range(versions), skip, times, nbytes=nbytes)

    @classmethod
    def delay(cls, seconds: float, api_key: int | None = None, *, versions: Versions = None,
              skip: int = 0, times: int | None = None) -> Fault:
        return cls(FaultKind.DELAY, api_key, _range(versions), skip, times, seconds=seconds)

    @classmethod
    def garbage(cls, payload: bytes = GARBAGE, api_key: int | None = None, *, versions: Versions = None,
                skip: int = 0, times: int | None = None) -> Fault:
        return cls(FaultKind.GARBAGE, api_key, _range(versions), skip, times, payload=payload)

    @classmethod
    def tls(cls, api_key: int | None = None, *, versions: Versions = None, skip: int = 0,
            times: int | None = None) -> Fault:
        return cls(FaultKind.TLS, api_key, _range(versions), skip, times, payload=TLS_ALERT)

    @classmethod
    def http(cls, api_key: int | None = None, *, versions: Versions = None, skip: int = 0,
             times: int | None = None) -> Fault:
        return cls(FaultKind.HTTP, api_key, _range(versions), skip, times, payload=HTTP_REPLY)

    @classmethod
    def wrong_correlation_id(cls, offset: int = 1, api_key: int | None = None, *,
                             versions: Versions = None, skip: int = 0, times: int | None = None) -> Fault:
        return cls(FaultKind.WRONG_CORRELATION_ID, api_key, _range(versions), skip, times, offset=offset)

    @classmethod
    def hostile_unsupported_version(cls, *, versions: Versions = None, skip: int = 0,
                                    times: int | None = None) -> Fault:
        return cls(FaultKind.HOSTILE_UNSUPPORTED_VERSION, API_VERSIONS_KEY, _range(versions), skip, times)

    @classmethod
    def event_hubs(cls, *, from_version: int = 3, skip: int = 0, times: int | None = None) -> Fault:
        """Azure Event Hubs: reset the connection on ApiVersions ``from_version`` and above."""
        return cls(FaultKind.RESET, API_VERSIONS_KEY, VersionRange(from_version, OPEN_END), skip, times)

    @classmethod
    def tansu_api_versions(cls, *, skip: int = 0, times: int | None = None) -> Fault:
        """Tansu 0.6.0: an ApiVersions version above the advertised max gets the v3 body, error 0."""
        return cls(FaultKind.TANSU_API_VERSIONS, API_VERSIONS_KEY, None, skip, times)


def _range(versions: Versions) -> VersionRange | None:
    if versions is None or isinstance(versions, VersionRange):
        return versions
    try:
        low, high = versions
        return VersionRange(int(low), int(high))
    except (TypeError, ValueError):
        raise EmulatorConfigError(f"versions must be a VersionRange or (min, max): {versions!r}") from None


class FaultPlan:
    """A broker's faults, in order, with how often each matched and fired."""

    def __init__(self, faults: Iterable[Fault] = ()) -> None:
        self._faults: list[Fault] = []
        self._matched: list[int] = []
        self._fired: list[int] = []
        for fault in faults:
            self.add(fault)

    def add(self, fault: Fault) -> Fault:
        if not isinstance(fault, Fault):
            raise EmulatorConfigError(f"not a Fault: {fault!r}")
        self._faults.append(fault)
        self._matched.append(0)
        self._fired.append(0)
        return fault

    def clear(self) -> None:
        self._faults.clear()
        self._matched.clear()
        self._fired.clear()

    @property
    def faults(self) -> Sequence[Fault]:
        return tuple(self._faults)

    def fired(self, fault: Fault) -> int:
        """How many times ``fault`` (the very object added) fired."""
        return sum(n for f, n in zip(self._faults, self._fired, strict=True) if f is fault)

    def take(self, api_key: int, version: int, *, beyond_advertised: bool = False) -> Fault | None:
        """The fault to apply to this request, counting it; None when none applies."""
        chosen: Fault | None = None
        for index, fault in enumerate(self._faults):
            if not fault.matches(api_key, version, beyond_advertised=beyond_advertised):
                continue
            self._matched[index] += 1
            if chosen is not None or self._matched[index] <= fault.skip:
                continue
            if fault.times is not None and self._fired[index] >= fault.times:
                continue
            self._fired[index] += 1
            chosen = fault
        return chosen


def apply_fault(fault: Fault, reply: bytes | None) -> list[Action]:
    """The actions for ``reply`` (a whole frame, or None when there is none) under ``fault``."""
    kind = fault.kind
    if kind is FaultKind.CLOSE:
        return [Close()]
    if kind is FaultKind.RESET:
        return [Close(reset=True)]
    if kind is FaultKind.STALL:
        return [Stall()]
    if kind is FaultKind.FREEZE:
        return [Freeze()]
    if kind is FaultKind.DELAY:
        delayed: list[Action] = [Sleep(fault.seconds)]
        return [*delayed, Send(reply)] if reply is not None else delayed
    if kind is FaultKind.CLOSE_AFTER_BYTES:
        return [Send((reply or b"")[: fault.nbytes]), Close()]
    if kind is FaultKind.RESET_AFTER_BYTES:
        return [Send((reply or b"")[: fault.nbytes]), Close(reset=True)]
    if kind is FaultKind.GARBAGE:
        return [Send(fault.payload)]
    if kind in (FaultKind.TLS, FaultKind.HTTP):
        return [Send(fault.payload), Close()]
    if kind is FaultKind.WRONG_CORRELATION_ID:
        if reply is None:
            return []
        return [Send(_with_correlation_id_shifted(reply, fault.offset))]
    # The ApiVersions impersonations produce their own reply upstream.
    return [Send(reply)] if reply is not None else []


def _with_correlation_id_shifted(frame: bytes, offset: int) -> bytes:
    """The same frame with its correlation id (bytes 4-8, after the size) moved by ``offset``."""
    correlation_id = int.from_bytes(frame[4:8], "big", signed=True)
    shifted = (correlation_id + offset + 2**31) % 2**32 - 2**31
    return frame[:4] + shifted.to_bytes(4, "big", signed=True) + frame[8:]
