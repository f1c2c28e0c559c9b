"""OS and ssl failures as kafkacompat errors: the part of the seam that needs no trio.

Shared by the trio seam (``seam.translate``, which handles trio's own
exceptions first) and the blocking probe, so that both say the same thing
about the same failure.  ``ssl`` is looked up, never imported: when it is not
loaded, no ``SSLError`` can exist, and a plaintext probe stays free of it.
"""

from __future__ import annotations

import errno
import socket
import sys

from kafkacompat.errors import AuthenticationError, KafkaCompatError, KafkaTimeoutError, TransportError

__all__ = ["translate_os_error"]


def translate_os_error(exc: BaseException, node: str, doing: str) -> KafkaCompatError:
    """The kafkacompat error for an OS or ssl failure while ``doing`` something with ``node``."""
    if isinstance(exc, KafkaCompatError):
        return exc
    ssl = sys.modules.get("ssl")
    if ssl is not None and isinstance(exc, ssl.SSLCertVerificationError):
        reason = exc.verify_message or exc
        return AuthenticationError(f"TLS certificate verification failed while {doing}: {reason}", node=node)
    if isinstance(exc, ConnectionResetError) and "TLS handshake" in doing:
        # A reset mid-handshake means the peer would not finish TLS with us.
        return AuthenticationError(f"TLS failed while {doing}: the peer reset the connection", node=node)
    if ssl is not None and isinstance(exc, ssl.SSLError):
        return AuthenticationError(f"TLS failed while {doing}: {exc.reason or exc}", node=node)
    if isinstance(exc, TimeoutError):
        return KafkaTimeoutError(f"timed out while {doing}", node=node)
    if isinstance(exc, ConnectionRefusedError):
        return TransportError(f"connection refused while {doing}", node=node)
    if isinstance(exc, ConnectionResetError):
        return TransportError(f"connection reset by the peer while {doing}", node=node)
    if isinstance(exc, BrokenPipeError | ConnectionAbortedError):
        return TransportError(f"the connection broke while {doing}", node=node)
    if isinstance(exc, socket.gaierror):
        return TransportError(f"cannot resolve the host while {doing}: {exc}", node=node)
    if isinstance(exc, OSError):
        if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return TransportError(f"host unreachable while {doing}", node=node)
        if exc.errno is None and "resolve" in str(exc).lower():
            return TransportError(f"cannot resolve the host while {doing}: {exc}", node=node)
        return TransportError(f"{exc.strerror or exc} while {doing}", node=node)
    return TransportError(f"{type(exc).__name__}: {exc} while {doing}", node=node)
