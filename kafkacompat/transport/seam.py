"""The seam where trio, ssl and OS errors become kafkacompat errors.

Nothing above the transport sees ``OSError``, ``ssl.SSLError`` or trio's
exceptions: each is translated here, with the node it concerns.  trio's own
exceptions are read here; OS and ssl errors go to ``os_errors``, which the
blocking probe shares.
"""

from __future__ import annotations

import ssl
from typing import NoReturn

import trio

from kafkacompat.connection.os_errors import translate_os_error
from kafkacompat.errors import KafkaCompatError, KafkaTimeoutError, TransportError

__all__ = ["lone_exception", "raise_lone", "translate"]


def translate(exc: BaseException, node: str, doing: str) -> KafkaCompatError:
    """The kafkacompat error for a low-level failure while ``doing`` something with ``node``."""
    if isinstance(exc, trio.TooSlowError):
        return KafkaTimeoutError(f"timed out while {doing}", node=node)
    if isinstance(exc, trio.BrokenResourceError):
        cause = exc.__cause__
        if isinstance(cause, ssl.SSLError):
            return translate_os_error(cause, node, doing)
        if "TLS handshake" in doing:
            # An EOF mid-handshake means what a reset means there, whichever the OS delivers.
            return translate_os_error(ConnectionResetError(), node, doing)
        return TransportError(f"the connection broke while {doing}", node=node)
    if isinstance(exc, trio.ClosedResourceError):
        return TransportError(f"the connection was closed while {doing}", node=node)
    if isinstance(exc, OSError) and exc.errno is None and isinstance(exc.__cause__, BaseExceptionGroup):
        # trio.open_tcp_stream: "all attempts to connect ... failed", the reasons in the cause.
        reasons = [translate(e, node, doing) for e in exc.__cause__.exceptions]
        distinct = list(dict.fromkeys(r.message for r in reasons))
        return reasons[0] if len(distinct) == 1 else TransportError("; ".join(distinct), node=node)
    return translate_os_error(exc, node, doing)


def raise_lone(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Raise the group's one exception as itself (the group when it holds several)."""
    lone = lone_exception(group)
    if lone is group:
        raise group
    raise lone from lone.__cause__


def lone_exception(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception inside (nested) single-member groups, else the group itself.

    trio nurseries wrap everything in exception groups; a caller of an
    ``async with`` API expects the one error that happened, as itself.
    """
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error
