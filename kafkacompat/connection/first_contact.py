"""A socket's first contact: what the peer is, found by the first requests, on every driver.

A wrong address should be named in seconds, not after a whole request timeout,
and by every connection of the library, not by a second probe of the CLI's.
Three things do it, all sans-I/O, kept here per socket for ``ClientConnection``:

- A web or text server (Python's ``http.server``, Redis) reads up to a line end
  before it answers, and a Kafka request has none: the client would wait out
  its timeout.  So the first ApiVersions request carries
  ``FIRST_CONTACT_CORRELATION_ID``, whose last two bytes are CR LF: such a
  server sees a line end 12 bytes in and answers at once, while every Kafka
  release reads an ordinary request (0.10 and later answer it, echoing the id;
  0.9 skips it and answers the Metadata v0 written after it; 0.8 closes on it,
  as on any ApiVersions).
- Bytes that are no Kafka frame are named by ``negotiation.peer_kind`` (TLS,
  HTTP, SSH, text); ``foreign_bytes`` says whether what is pending is such.
- Until a socket has carried one byte back, its reads end by the config's
  ``first_contact_timeout`` after its first request was written: a Kafka
  broker that is up answers at once, and a peer silent that long is named
  silent.  A byte ends that clock; the read is timed afresh by its request's
  own deadline.
"""

from __future__ import annotations

import math
from typing import Final

from kafkacompat.protocol.framing import FOREIGN_BYTES_KEPT, FrameSplitter

__all__ = ["FIRST_CONTACT_CORRELATION_ID", "FirstContact", "foreign_bytes"]

#: The correlation id of a connection's first ApiVersions request: 0x00000D0A, whose last two
#: bytes are CR LF.  The requests after it count on from it.
FIRST_CONTACT_CORRELATION_ID: Final = 0x0D0A


class FirstContact:
    """One socket's silence clock: started by its first request, stopped by its first byte."""

    __slots__ = ("first_write_at", "heard", "judges_step", "silent_by")

    def __init__(self) -> None:
        self.heard = False  # a byte came back on this socket
        self.first_write_at: float | None = None  # when its first request was written
        self.silent_by = math.inf  # when its silence ends the handshake
        self.judges_step = False  # the current read's deadline is the silence's, not the driver's

    def request_written(self, now: float, timeout: float | None) -> None:
        """A request is written at ``now``; the socket's first starts the clock (None: no clock)."""
        if self.first_write_at is None:
            self.first_write_at = now
            if timeout is not None:
                self.silent_by = now + timeout

    def read_deadline(self, request_deadline: float, overall: float) -> float:
        """When a read must end: by its request's deadline, the silence's while nothing came,
        and the driver's ``overall``."""
        own = request_deadline if self.heard else min(request_deadline, self.silent_by)
        self.judges_step = not self.heard and own <= overall
        return min(own, overall)

    def bytes_came(self) -> bool:
        """Bytes came back: True when the read in progress was timed by the silence (time it afresh)."""
        if self.heard:
            return False
        self.heard = True
        return self.judges_step

    def silence(self, ends_by: float | None) -> tuple[bool, float | None]:
        """A read with nothing heard timed out at ``ends_by`` (None: no step was handed out):
        whether the silence's own clock ended it (not the driver's overall), and how long the
        peer was waited for since the first request."""
        judged = ends_by is None or self.judges_step
        first = self.first_write_at
        waited = ends_by - first if ends_by is not None and first is not None else None
        return judged, waited


def foreign_bytes(frames: FrameSplitter) -> bytes | None:
    """The bytes read and not taken as a frame, when they are another protocol's (``peer_kind``)."""
    pending = frames.unconsumed(FOREIGN_BYTES_KEPT)
    if not pending:
        return None
    from kafkacompat.negotiation.peer_kind import name_peer  # a peer that is not Kafka only

    return pending if name_peer(pending) is not None else None
