"""The ``ssl.SSLContext`` a ``TlsConfig`` describes, shared by the trio stream and the blocking probe.

Verification and hostname checking are on unless the config turns them off.
It imports ``ssl`` only, never trio.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # an annotation: the trio stream imports this module for every connection
    from kafkacompat.connection.security import TlsConfig

__all__ = ["tls_context"]


def tls_context(tls: TlsConfig) -> ssl.SSLContext:
    """An SSLContext from the config: verification and hostname checks on by default."""
    context = ssl.create_default_context(cafile=str(tls.ca_file) if tls.ca_file else None)
    if not tls.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = tls.check_hostname
    if tls.cert_file is not None:
        password = tls.key_password.reveal() if tls.key_password else None
        context.load_cert_chain(
            str(tls.cert_file), str(tls.key_file) if tls.key_file else None, password=password
        )
    return context
