"""Kafka's protocol error codes as a table.

Every code Apache Kafka defines in its ``Errors`` enum (``-1`` … ``136``, as of
Kafka 4.4), with the enum's name and the retriable flag Kafka gives it: an error
is retriable exactly when Kafka's exception class for it extends
``RetriableException`` (directly or through ``InvalidMetadataException``).  The
one-line messages are our own wording.

Codes the table does not know (a newer broker, a broken peer) are never an
exception here: ``error_for`` answers with a synthetic, non-retriable
``UNKNOWN_CODE_<n>`` entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from types import MappingProxyType
from typing import Any, Final, NamedTuple

__all__ = [
    "BY_CODE",
    "BY_NAME",
    "CLUSTER_AUTHORIZATION_FAILED",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "FEATURE_UPDATE_FAILED",
    "GROUP_AUTHORIZATION_FAILED",
    "ILLEGAL_SASL_STATE",
    "INVALID_REQUEST",
    "INVALID_UPDATE_VERSION",
    "NONE",
    "NOT_COORDINATOR",
    "REBOOTSTRAP_REQUIRED",
    "SASL_AUTHENTICATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    "UNKNOWN_SERVER_ERROR",
    "UNSUPPORTED_SASL_MECHANISM",
    "UNSUPPORTED_VERSION",
    "KafkaErrorCode",
    "error_for",
]


class KafkaErrorCode(NamedTuple):
    """One protocol error code: its number, Kafka's name, whether Kafka retries it, a summary.

    A named tuple, not a dataclass: every connection imports this module, and a frozen
    dataclass costs a process some 20 KiB of memory to define."""

    code: int
    name: str
    retriable: bool
    message: str


# The table is read on first use (a lookup, or ``BY_CODE`` / ``BY_NAME``): a
# connection whose replies all say NONE compares ints and never needs it.
BY_CODE: Mapping[int, KafkaErrorCode]
BY_NAME: Mapping[str, KafkaErrorCode]


@cache
def _by_code() -> Mapping[int, KafkaErrorCode]:
    from kafkacompat.protocol.error_table import ERROR_TABLE

    return MappingProxyType({row[0]: KafkaErrorCode(*row) for row in ERROR_TABLE})


@cache
def _by_name() -> Mapping[str, KafkaErrorCode]:
    return MappingProxyType({entry.name: entry for entry in _by_code().values()})


def __getattr__(name: str) -> Mapping[Any, KafkaErrorCode]:
    tables: dict[str, Callable[[], Mapping[Any, KafkaErrorCode]]] = {"BY_CODE": _by_code, "BY_NAME": _by_name}
    if name not in tables:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = tables[name]()
    return value


def error_for(code: int) -> KafkaErrorCode:
    """The table entry for ``code``, or a synthetic non-retriable ``UNKNOWN_CODE_<n>`` entry."""
    entry = _by_code().get(code)
    if entry is not None:
        return entry
    return KafkaErrorCode(code, f"UNKNOWN_CODE_{code}", False, f"Error code {code} is not one Kafka defines.")


# The codes the rest of the library names often, as plain ints.
UNKNOWN_SERVER_ERROR: Final = -1
NONE: Final = 0
NOT_COORDINATOR: Final = 16
COORDINATOR_LOAD_IN_PROGRESS: Final = 14
COORDINATOR_NOT_AVAILABLE: Final = 15
GROUP_AUTHORIZATION_FAILED: Final = 30
CLUSTER_AUTHORIZATION_FAILED: Final = 31
UNSUPPORTED_SASL_MECHANISM: Final = 33
ILLEGAL_SASL_STATE: Final = 34
UNSUPPORTED_VERSION: Final = 35
INVALID_REQUEST: Final = 42
TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Final = 53
SASL_AUTHENTICATION_FAILED: Final = 58
INVALID_UPDATE_VERSION: Final = 95
FEATURE_UPDATE_FAILED: Final = 96
REBOOTSTRAP_REQUIRED: Final = 129
