"""The seam where trio, ssl and OS errors become kafkacompat errors.

Nothing above the transport sees ``OSError``, ``ssl.SSLError`` or trio's
exceptions: each is translated here, with the node it concerns.
"""

from __future__ import annotations

import errno
import ssl
from typing import NoReturn

import trio

from kafkacompat.errors import AuthenticationError, KafkaCompatError, KafkaTimeoutError, TransportError

__all__ = ["lone_exception", "raise_lone", "translate"]


def translate(exc: BaseException, node: str, doing: str) -> KafkaCompatError:
    """The kafkacompat error for a low-level failure while ``doing`` something with ``node``."""
    if isinstance(exc, KafkaCompatError):
        return exc
    tls_handshake = "TLS handshake" in doing
    if isinstance(exc, ssl.SSLCertVerificationError):
        return AuthenticationError(
            f"TLS certificate verification failed while {doing}: {exc.verify_message or exc}", node=node
        )
    # A reset and an EOF mid-handshake mean the same thing (the peer would not
    # finish TLS with us); they are reported alike, whichever the OS delivers.
    reset = isinstance(exc, ConnectionResetError | trio.BrokenResourceError)
    if tls_handshake and reset and not isinstance(exc.__cause__, ssl.SSLError):
        return AuthenticationError(f"TLS failed while {doing}: the peer reset the connection", node=node)
    if isinstance(exc, ssl.SSLError):
        return AuthenticationError(f"TLS failed while {doing}: {exc.reason or exc}", node=node)
    if isinstance(exc, trio.TooSlowError):
        return KafkaTimeoutError(f"timed out while {doing}", node=node)
    if isinstance(exc, trio.BrokenResourceError):
        cause = exc.__cause__
        if isinstance(cause, ssl.SSLError):
            return translate(cause, node, doing)
        return TransportError(f"the connection broke while {doing}", node=node)
    if isinstance(exc, trio.ClosedResourceError):
        return TransportError(f"the connection was closed while {doing}", node=node)
    if isinstance(exc, ConnectionRefusedError):
        return TransportError(f"connection refused while {doing}", node=node)
    if isinstance(exc, ConnectionResetError):
        return TransportError(f"connection reset by the peer while {doing}", node=node)
    if isinstance(exc, OSError) and exc.errno is None and isinstance(exc.__cause__, BaseExceptionGroup):
        # trio.open_tcp_stream: "all attempts to connect ... failed", the reasons in the cause.
        reasons = [translate(e, node, doing) for e in exc.__cause__.exceptions]
        distinct = list(dict.fromkeys(r.message for r in reasons))
        return reasons[0] if len(distinct) == 1 else TransportError("; ".join(distinct), node=node)
    if isinstance(exc, OSError):
        if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return TransportError(f"host unreachable while {doing}", node=node)
        if isinstance(exc, OSError) and exc.errno is None and "resolve" in str(exc).lower():
            return TransportError(f"cannot resolve the host while {doing}: {exc}", node=node)
        return TransportError(f"{exc.strerror or exc} while {doing}", node=node)
    return TransportError(f"{type(exc).__name__}: {exc} while {doing}", node=node)


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
