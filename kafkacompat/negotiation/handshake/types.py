"""What the ApiVersions handshake hands out: actions, its result, its errors.

All plain, frozen data, so that a driver can match on actions and the code
that builds broker capabilities can read a result without knowing the machine.
The actions are named tuples: a connect builds several, and a named tuple is
built at the cost of a tuple and weighs about half a frozen dataclass's class
(each of which is about 12 KiB of generated methods in a process's footprint).
The result and the transcript are public records, frozen dataclasses.

Quick twins
===========
A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__``
(its own ``__setattr__`` refuses), five to six times slower than a plain
attribute store on CPython 3.11: a connect builds its attempt, transcript and
result that way.

``quick(cls)`` returns a twin of the frozen slots dataclass ``cls``: the same
slots, not frozen, whose ``__init__`` takes what ``cls``'s takes (same
parameters, defaults and default factories), stores it plainly and ends by
making the new object an instance of ``cls``.  Calling the twin gives what
calling ``cls`` gives (same class, same values, so equal, hashable and
immutable alike), only sooner.  Hot code calls the twin; everyone else keeps calling ``cls``.  Only
for slots dataclasses without ``__post_init__`` (checked here, once).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from kafkacompat.errors import (
    KafkaCompatError,
)
from kafkacompat.negotiation.handshake.transcript import HandshakeTranscript
from kafkacompat.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from kafkacompat.protocol.versions import VersionRange

__all__ = [
    "Action",
    "Connect",
    "Done",
    "Fail",
    "HandshakeResult",
    "ReceiveReply",
    "SendProbe",
    "SendRequest",
    "quick",
]

T = TypeVar("T")


class Connect(NamedTuple):
    """Open connection number ``connection``; ApiVersions v``version`` goes first on it."""

    version: int
    connection: int


class SendRequest(NamedTuple):
    """Write ``frame`` (size prefix, header, body): ``request`` at ``version``."""

    version: int
    correlation_id: int
    request: ApiVersionsRequest
    frame: bytes


class SendProbe(NamedTuple):
    """Write ``frame``: the Metadata v0 probe, on the connection ApiVersions went quiet on, or
    a request of the check of a peer that closes on ApiVersions (``what`` says which)."""

    correlation_id: int
    frame: bytes
    what: str = "the Metadata v0 probe"


class ReceiveReply(NamedTuple):
    """Read one response frame; it must carry ``correlation_id``.

    ``quiet_period``: when not None, report ``quiet()`` if no frame has come
    after that many seconds (the request's own deadline still applies).
    """

    version: int
    correlation_id: int
    quiet_period: float | None = None


@dataclass(frozen=True, slots=True)
class HandshakeResult:
    """What the broker answered (or, with ``fallback_release``, what stands in for it).

    ``reply`` (and ``response``, the reply decoded) is None only for a fallback,
    where the broker sent nothing.
    ``fallback_release`` names the release whose table stands in (configured,
    or the one ``detected_release`` names from the broker's behaviour).
    ``api_versions_version`` is the version the accepted reply was read at.
    The mappings are read-only: api key -> versions, feature name -> versions
    (supported) or min..max level (finalized).
    """

    reply: bytes | None  # the accepted answer's body (after the correlation id)
    api_versions_version: int | None
    api_ranges: Mapping[int, VersionRange]
    supported_features: Mapping[str, VersionRange]
    finalized_features: Mapping[str, VersionRange]
    finalized_features_epoch: int
    throttle_time_ms: int
    transcript: HandshakeTranscript
    fallback_release: str | None = None
    node: str | None = None
    detected_release: str | None = None
    _response: list[ApiVersionsResponse] = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def response(self) -> ApiVersionsResponse | None:
        """The accepted answer, decoded on first use: a connection needs only the tables
        above, which the handshake read already; the inspector and callers may want it all."""
        if self.reply is None or self.api_versions_version is None:
            return None
        if not self._response:
            self._response.append(ApiVersionsResponse.decode(self.reply, self.api_versions_version))
        return self._response[0]

    @property
    def used_fallback(self) -> bool:
        return self.fallback_release is not None

    @property
    def flags(self) -> tuple[str, ...]:
        return self.transcript.flags


class Done(NamedTuple):
    """The handshake succeeded.

    ``needs_new_connection``: the connection it used is gone (a fallback), so
    open another before sending anything, and send no ApiVersions on it.
    """

    result: HandshakeResult
    needs_new_connection: bool = False


class Fail(NamedTuple):
    """The handshake failed; close the connection when ``close_connection``."""

    error: KafkaCompatError
    close_connection: bool


Action = Connect | SendRequest | SendProbe | ReceiveReply | Done | Fail


def quick(cls: type[T]) -> type[T]:
    """A faster constructor of ``cls`` (a frozen slots dataclass): see the module docstring."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a frozen slots dataclass")
    if hasattr(cls, "__post_init__") or cls.__bases__ != (object,):
        raise TypeError(f"{cls.__name__} has a __post_init__ or a base class: build it with its own __init__")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]  # checked above: a dataclass
    if len(fields) != len(cls.__dataclass_fields__) or any(spec.kw_only for spec in fields):  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__} has class variables, init-only or keyword-only fields")
    # The twin's __init__, written out as dataclasses writes one (same parameters, defaults
    # and factories), with plain stores and a last line that makes the object a ``cls``.
    namespace: dict[str, Any] = {"_cls": cls, "_MISSING": dataclasses.MISSING}
    parameters: list[str] = []
    lines: list[str] = []
    for spec in fields:
        name = spec.name
        if spec.default_factory is not dataclasses.MISSING:
            namespace[f"_make_{name}"] = spec.default_factory
            if spec.init:
                parameters.append(f"{name}=_MISSING")
                lines.append(f"self.{name} = _make_{name}() if {name} is _MISSING else {name}")
            else:
                lines.append(f"self.{name} = _make_{name}()")
        elif spec.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = spec.default
            parameters.append(f"{name}=_default_{name}")
            lines.append(f"self.{name} = {name}" if spec.init else f"self.{name} = _default_{name}")
        elif spec.init:
            parameters.append(name)
            lines.append(f"self.{name} = {name}")
    lines.append("self.__class__ = _cls  # same slots in the same order: CPython allows the change")
    source = f"def __init__(self, {', '.join(parameters)}):\n" + "".join(f"    {line}\n" for line in lines)
    exec(source, namespace)  # names are the dataclass's own field identifiers
    slots = cls.__slots__  # type: ignore[attr-defined]
    twin = type(f"_Quick{cls.__name__}", (), {"__slots__": slots, "__init__": namespace["__init__"]})
    twin.__module__ = cls.__module__
    return twin
