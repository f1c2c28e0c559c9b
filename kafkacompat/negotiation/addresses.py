"""Checking a broker address before anything connects to it: one pure function for every source.

Theory.  Addresses reach a client two ways: typed by a person (a bootstrap
list, ``probe_address``) and named by a broker (Metadata's brokers,
DescribeCluster's brokers, FindCoordinator's coordinators).  Neither is
trusted.  Left unchecked, the socket layer fails in ways that say nothing
useful or do something wrong: a port of 70000 or -1 raises ``OverflowError``,
a name with an empty or 64-byte label raises ``UnicodeError`` from the IDNA
codec, and a name with a NUL byte is cut at the NUL by the resolver, so the
client connects to whatever came before it.  ``check_address`` decides once,
the same way for every source, and refuses with ``InvalidAddressError`` naming
who gave the address.

What is accepted: a port from 1 to 65535 (an int, not a bool); a host that is
an IPv4 or IPv6 literal (brackets and a zone allowed), or a DNS name of at
most 253 bytes once IDNA-encoded, made of labels of 1 to 63 bytes of letters,
digits, ``-`` and ``_`` (Docker and Kubernetes names use ``_``; resolvers
accept it), with one optional trailing dot.  No control byte anywhere.

``display_host`` makes any host safe to print: control bytes escaped, long
names cut, so a hostile name can neither flood nor drive a terminal.
"""

from __future__ import annotations

import functools
import re

from kafkacompat.errors import InvalidAddressError

__all__ = ["MAX_HOST_LENGTH", "check_address", "display_host", "literal_version", "split_host_port"]

MAX_HOST_LENGTH = 253  # RFC 1035, without the trailing dot
_MAX_LABEL = 63
_SHOWN = 60  # characters of a refused host shown in a message
_LABEL = re.compile(r"[A-Za-z0-9_-]{1,63}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# A dotted quad as ``ipaddress.IPv4Address`` accepts it (ASCII digits, no leading
# zeros, each part at most 255), written out so that checking "127.0.0.1" does not
# import ipaddress (90 kB of bytecode) into every connection; IPv6 still uses it.
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"(?:{_OCTET}\.){{3}}{_OCTET}")


def display_host(host: object) -> str:
    """A host as it may be printed: control bytes escaped, at most about 60 characters."""
    text = host if isinstance(host, str) else repr(host)
    if len(text) > _SHOWN:
        text = f"{text[:_SHOWN]}... ({len(text)} characters)"
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def check_address(
    host: object, port: object, *, source: str | None = None, node: str | None = None
) -> tuple[str, int]:
    """``(host, port)`` when both can be used, else ``InvalidAddressError``.

    ``source`` names who gave the address, for the message ("the bootstrap
    list", "Metadata v12 from localhost:9092"); ``node`` is the broker that
    named it, when one did.  IPv6 brackets are removed from the host returned.
    """
    problem = _port_problem(port) or (_str_host_problem(host) if type(host) is str else _host_problem(host))
    if problem is not None:
        given = f"{display_host(host)}:{port!r}" if isinstance(port, int) else display_host(host)
        where = f" given by {source}" if source else ""
        message = f"invalid broker address {given}{where}: {problem}"
        raise InvalidAddressError(message, source=source, node=node)
    assert isinstance(host, str) and isinstance(port, int)
    return _unbracket(host), port


def literal_version(host: str) -> int | None:
    """4 or 6 when ``host`` (as ``check_address`` returned it) is an address literal, None for
    a name: a driver connects to a literal directly, without resolving it."""
    if _IPV4.fullmatch(host):
        return 4
    return 6 if ":" in host else None  # only an IPv6 literal passes the check with a colon


def split_host_port(
    text: str, *, default_port: int | None = None, source: str | None = None
) -> tuple[str, int]:
    """``"host:port"``, ``"[v6]:port"`` (or a bare host with ``default_port``), checked."""
    if not isinstance(text, str):
        raise InvalidAddressError(f"an address must be a str, not {type(text).__name__}", source=source)
    text = text.strip()
    if text.startswith("["):
        host, closed, rest = text.partition("]")
        host = host + closed
        port_text: str | None = rest[1:] if rest.startswith(":") else (rest or None)
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:  # a bare name, or a bare IPv6 address
        host, port_text = text, None
    if port_text is None or port_text == "":
        if default_port is None:
            raise InvalidAddressError(
                f"address {display_host(text)} has no port: write host:port", source=source
            )
        return check_address(host, default_port, source=source)
    if not port_text.isascii() or not port_text.lstrip("-").isdigit() or len(port_text) > 6:
        raise InvalidAddressError(
            f"invalid port {display_host(port_text)} in address {display_host(text)}"
            + (f" given by {source}" if source else ""),
            source=source,
        )
    return check_address(host, int(port_text), source=source)


def _port_problem(port: object) -> str | None:
    if isinstance(port, bool) or not isinstance(port, int):
        return f"the port must be an int, not {type(port).__name__}"
    if not 0 < port < 65536:
        return f"port {port} is outside 1-65535"
    return None


@functools.lru_cache(maxsize=256)
def _str_host_problem(host: str) -> str | None:
    """``_host_problem`` of a str, remembered: a client connects to the same few brokers again
    and again, and parsing an address literal is a tenth of a loopback connect's own work."""
    return _host_problem(host)


def _host_problem(host: object) -> str | None:
    if not isinstance(host, str):
        return f"the host must be a str, not {type(host).__name__}"
    if not host:
        return "the host is empty"
    if _CONTROL.search(host):
        return "the host contains control bytes"
    if not host.isprintable():
        return "the host contains characters that cannot be printed (format or unassigned code points)"
    if len(host) > 4 * MAX_HOST_LENGTH:  # longer than any name can encode to: no IDNA work on it
        return f"the host is {len(host)} characters long (a name has at most {MAX_HOST_LENGTH} bytes)"
    literal = _unbracket(host)
    if ":" in literal or host.startswith("["):
        import ipaddress

        try:
            ipaddress.ip_address(literal)
        except ValueError:
            return "not an IPv6 address"
        return None
    if _IPV4.fullmatch(literal):
        return None
    return _name_problem(literal)


def _name_problem(name: str) -> str | None:
    bare = name[:-1] if name.endswith(".") else name
    try:
        encoded = bare.encode("idna").decode("ascii")
    except UnicodeError as exc:
        reason = str(exc.__cause__ or exc).removeprefix("encoding with 'idna' codec failed ")
        return f"not a valid host name ({reason.strip('()') or 'IDNA cannot encode it'})"
    if len(encoded) > MAX_HOST_LENGTH:
        return f"the host name is {len(encoded)} bytes long (at most {MAX_HOST_LENGTH})"
    for label in encoded.split("."):
        if not label:
            return "the host name has an empty label"
        if len(label) > _MAX_LABEL:
            return f"a label of the host name is {len(label)} bytes long (at most {_MAX_LABEL})"
        if not _LABEL.fullmatch(label):
            return f"the label {display_host(label)!s} has characters a host name cannot have"
    return None


def _unbracket(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host
