"""Coordinator key types given by a caller: names, the enum or its int; anything else is a ConfigError."""

from __future__ import annotations

import pytest

from kafkacompat.cluster.coordinator_lookup import coordinator_key_type
from kafkacompat.errors import ConfigError
from kafkacompat.negotiation.coordinators import CoordinatorKeyType


@pytest.mark.parametrize(
    ("given", "expected"),
    [("group", 0), ("Transaction", 1), ("share", 2), (CoordinatorKeyType(1), 1), (2, 2)],
)
def test_known_key_types(given: object, expected: int) -> None:
    assert coordinator_key_type(given) == CoordinatorKeyType(expected)  # type: ignore[arg-type]


@pytest.mark.parametrize("given", ["groups", "", 7, -1])
def test_unknown_key_types_are_a_config_error(given: object) -> None:
    with pytest.raises(ConfigError, match="unknown coordinator key type") as caught:
        coordinator_key_type(given)  # type: ignore[arg-type]
    assert isinstance(caught.value, ValueError)  # the config family is also a ValueError
