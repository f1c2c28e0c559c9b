"""What a request pipeline hands back: the caller's ticket, and the events that end requests.

Kept apart from ``request_pipeline`` so that a driver can tell events apart, and a
connection hold its tickets, without loading the pipeline itself: a connection
opened only to negotiate never builds one.  The events are named tuples: built
for every answer, they cost a plain tuple's construction, where a frozen
dataclass's ``__init__`` sets each field through ``object.__setattr__``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from enum import IntEnum
from types import MappingProxyType
from typing import Final, NamedTuple

from kafkacompat.errors import KafkaCompatError, KafkaTimeoutError
from kafkacompat.protocol.framing import DEFAULT_MAX_FRAME_SIZE
from kafkacompat.protocol.message import KafkaMessage, Reader

__all__ = [
    "ConnectionFailed",
    "Ending",
    "PipelineEvent",
    "RequestFailed",
    "ResponseReceived",
    "SentWithoutReply",
    "Stage",
    "Ticket",
    "endings",
]

_NONE_PRECISE: Final[Mapping[int, KafkaCompatError]] = MappingProxyType({})


class Stage(IntEnum):
    """Where a request is on its way out."""

    WAITING = 0  # handed to send() past the in-flight bound: waiting for a slot
    QUEUED = 1  # holding a slot, its bytes not yet taken by the driver
    WRITING = 2  # taken by bytes_to_send(), the write not yet confirmed
    WRITTEN = 3  # written; waiting for the answer (or done, for acks=0)
    ENDED = 4  # answered, failed, abandoned: nothing more will happen to it


class Ticket:
    """One request handed to the pipeline: the caller's handle on it (compared by identity).

    ``name`` is the request's; ``response_cls`` and ``version`` say how its answer will
    be read; ``reader`` is the codec's reader of that answer's body (None: the class has
    none at this version, and ``decode`` says so), looked up once per API and version, not
    per answer.  ``deadline`` is the instant, on the driver's clock, past which the
    connection ends it with a timeout (``ClientConnection.expire``; inf: never).  A plain
    class: a dataclass would cost every connection some 20 KiB of memory to define.
    """

    __slots__ = (
        "api_key", "correlation_id", "deadline", "expects_reply", "frame", "name", "reader",
        "reply_limit", "response_cls", "response_header_version", "stage", "version",
    )

    def __init__(
        self,
        correlation_id: int,
        api_key: int,
        version: int,
        response_cls: type[KafkaMessage],
        expects_reply: bool,
        frame: bytes,
        reply_limit: int = DEFAULT_MAX_FRAME_SIZE,  # the ceiling for its answer's size
        response_header_version: int = 1,
        reader: Reader | None = None,
        *,
        name: str = "",
        deadline: float = math.inf,
    ) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.version = version
        self.response_cls = response_cls
        self.expects_reply = expects_reply
        self.frame = frame
        self.reply_limit = reply_limit
        self.response_header_version = response_header_version
        self.reader = reader
        self.stage = Stage.QUEUED  # the pipeline moves it on
        self.name = name
        self.deadline = deadline

    def __repr__(self) -> str:
        return (
            f"Ticket({self.name or self.api_key} v{self.version}, correlation_id={self.correlation_id},"
            f" stage={self.stage.name}, deadline={self.deadline})"
        )

    def timeout_error(self, max_in_flight: int, node: str | None) -> KafkaTimeoutError:
        """What its caller is told when its deadline passes (ask before it is abandoned):
        still waiting for an in-flight slot, or for its answer."""
        if self.stage is Stage.WAITING:
            return KafkaTimeoutError(
                f"timed out waiting for one of the {max_in_flight} in-flight slots to send {self.name} "
                f"v{self.version}",
                node=node,
            )
        return KafkaTimeoutError(f"no response to {self.name} v{self.version} within the timeout", node=node)


class ResponseReceived(NamedTuple):
    ticket: Ticket
    response: KafkaMessage


class RequestFailed(NamedTuple):
    """One request failed (its answer could not be read); the connection goes on."""

    ticket: Ticket
    error: KafkaCompatError


class SentWithoutReply(NamedTuple):
    """A request that expects no answer (Produce with acks=0) was written: it is done."""

    ticket: Ticket


class ConnectionFailed(NamedTuple):
    """The stream cannot be trusted any more: every listed request failed with ``error``.

    The driver closes the connection.  ``failed`` holds every request that had
    not ended, queued ones included.
    """

    error: KafkaCompatError
    failed: tuple[Ticket, ...]
    #: Errors more precise than ``error`` for some of them (by ``id(ticket)``): a close that
    #: answered a request at a version the broker removed (KIP-896) says so to that caller.
    precise: Mapping[int, KafkaCompatError] = _NONE_PRECISE

    def error_of(self, ticket: Ticket) -> KafkaCompatError:
        return self.precise.get(id(ticket), self.error)


PipelineEvent = ResponseReceived | RequestFailed | SentWithoutReply | ConnectionFailed


Ending = tuple[Ticket, KafkaMessage | None, KafkaCompatError | None]


def endings(events: list[PipelineEvent]) -> Iterator[Ending]:
    """Each request the events end, with its answer or its error: what its caller is woken with.

    An answer (``None`` for an acks=0 Produce, which ends once written) comes with no
    error; a failure, whether its own or the connection's, with its error.
    """
    for event in events:
        if isinstance(event, ResponseReceived):
            yield event.ticket, event.response, None
        elif isinstance(event, ConnectionFailed):
            for ticket in event.failed:  # those still waiting for a slot among them
                yield ticket, None, event.error_of(ticket)
        elif isinstance(event, RequestFailed):
            yield event.ticket, None, event.error
        else:  # SentWithoutReply
            yield event.ticket, None, None
