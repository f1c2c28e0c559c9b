"""The Kafka error-code table: complete, consistent, and right about retries."""

from __future__ import annotations

import pytest

from kafkacompat.protocol import error_codes
from kafkacompat.protocol.error_codes import BY_CODE, BY_NAME, KafkaErrorCode, error_for
from kafkacompat.protocol.error_table import ERROR_TABLE

_TABLE = ERROR_TABLE


def test_codes_are_unique() -> None:
    codes = [row[0] for row in _TABLE]
    assert len(codes) == len(set(codes)) == len(BY_CODE)


def test_names_are_unique() -> None:
    names = [row[1] for row in _TABLE]
    assert len(names) == len(set(names)) == len(BY_NAME)


def test_table_is_contiguous_from_minus_one() -> None:
    assert sorted(BY_CODE) == list(range(-1, max(BY_CODE) + 1))
    assert max(BY_CODE) >= 136


def test_entries_are_well_formed() -> None:
    for code, entry in BY_CODE.items():
        assert entry.code == code
        assert entry.name.isupper() and " " not in entry.name
        assert entry.message and "\n" not in entry.message
        assert BY_NAME[entry.name] is entry


@pytest.mark.parametrize(
    ("code", "name", "retriable"),
    [
        (-1, "UNKNOWN_SERVER_ERROR", False),
        (0, "NONE", False),
        (2, "CORRUPT_MESSAGE", True),
        (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
        (6, "NOT_LEADER_OR_FOLLOWER", True),
        (7, "REQUEST_TIMED_OUT", True),
        (13, "NETWORK_EXCEPTION", True),
        (14, "COORDINATOR_LOAD_IN_PROGRESS", True),
        (15, "COORDINATOR_NOT_AVAILABLE", True),
        (16, "NOT_COORDINATOR", True),
        (27, "REBALANCE_IN_PROGRESS", False),
        (35, "UNSUPPORTED_VERSION", False),
        (41, "NOT_CONTROLLER", True),
        (42, "INVALID_REQUEST", False),
        (47, "INVALID_PRODUCER_EPOCH", False),
        (58, "SASL_AUTHENTICATION_FAILED", False),
        (59, "UNKNOWN_PRODUCER_ID", False),
        (84, "ELECTION_NOT_NEEDED", True),
        (89, "THROTTLING_QUOTA_EXCEEDED", True),
        (100, "UNKNOWN_TOPIC_ID", True),
        (120, "TRANSACTION_ABORTABLE", False),
        (122, "SHARE_SESSION_NOT_FOUND", True),
        (129, "REBOOTSTRAP_REQUIRED", False),
        (133, "SHARE_SESSION_LIMIT_REACHED", True),
        (134, "GROUP_DELETION_FAILED", False),
        (135, "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED", False),
        (136, "CONTROLLER_ID_NOT_REGISTERED", False),
    ],
)
def test_known_codes(code: int, name: str, retriable: bool) -> None:
    entry = error_for(code)
    assert (entry.code, entry.name, entry.retriable) == (code, name, retriable)
    assert BY_NAME[name] is entry


def test_module_constants_match_the_table() -> None:
    for name in (
        "NONE",
        "UNSUPPORTED_VERSION",
        "INVALID_REQUEST",
        "COORDINATOR_NOT_AVAILABLE",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "NOT_COORDINATOR",
        "UNKNOWN_SERVER_ERROR",
        "SASL_AUTHENTICATION_FAILED",
        "ILLEGAL_SASL_STATE",
        "UNSUPPORTED_SASL_MECHANISM",
        "FEATURE_UPDATE_FAILED",
        "INVALID_UPDATE_VERSION",
        "GROUP_AUTHORIZATION_FAILED",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
    ):
        value = getattr(error_codes, name)
        assert type(value) is int
        assert BY_NAME[name].code == value


@pytest.mark.parametrize("code", [-2, 137, 999, 32767, -32768])
def test_unknown_code_is_synthesised(code: int) -> None:
    entry = error_for(code)
    assert entry == KafkaErrorCode(code, f"UNKNOWN_CODE_{code}", False, entry.message)
    assert str(code) in entry.message
    assert code not in BY_CODE


def test_entries_are_frozen() -> None:
    with pytest.raises(AttributeError):  # a named tuple's fields cannot be set
        BY_CODE[0].retriable = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        BY_CODE[0] = BY_CODE[1]  # type: ignore[index]
