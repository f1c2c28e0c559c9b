"""Inclusive version ranges, the value object every other part speaks in.

Kafka writes ranges as ``"0-4"`` (inclusive), ``"3+"`` (open-ended), ``"5"``
(one version) or ``"none"`` (empty).  A range here is immutable and hashable;
an open end is stored as ``OPEN_END`` (the largest int16), as Kafka does.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from kafkacompat.errors import ProtocolError

__all__ = ["OPEN_END", "VersionRange"]

OPEN_END = 0x7FFF


@dataclass(frozen=True, slots=True)
class VersionRange:
    """The versions ``lowest..highest`` inclusive; empty when ``lowest > highest``."""

    lowest: int
    highest: int

    NONE: ClassVar[VersionRange]
    ALL: ClassVar[VersionRange]

    @staticmethod
    def of(lowest: int, highest: int) -> VersionRange:
        """The range ``lowest..highest``, shared: ranges repeat across brokers and replies."""
        return _shared_range(lowest, highest)

    @classmethod
    def parse(cls, text: str) -> VersionRange:
        """Parse Kafka's notation: ``"0-4"``, ``"3+"``, ``"5"`` or ``"none"``."""
        spec = text.strip()
        try:
            if spec == "none":
                return cls.NONE
            if spec.endswith("+"):
                return cls(int(spec[:-1]), OPEN_END)
            if "-" in spec[1:]:
                low, _, high = spec.partition("-")
                return cls(int(low), int(high))
            value = int(spec)
        except ValueError:
            raise ProtocolError(f"not a version range: {text!r}") from None
        return cls(value, value)

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    @property
    def open_ended(self) -> bool:
        return not self.empty and self.highest == OPEN_END

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lowest <= version <= self.highest

    def contains_range(self, other: VersionRange) -> bool:
        return other.empty or (self.lowest <= other.lowest and other.highest <= self.highest)

    def intersect(self, other: VersionRange) -> VersionRange:
        low = max(self.lowest, other.lowest)
        high = min(self.highest, other.highest)
        return VersionRange(low, high) if low <= high else VersionRange.NONE

    __and__ = intersect

    def __iter__(self) -> Iterator[int]:
        """Iterate over the versions; refuses open-ended ranges."""
        if self.open_ended:
            raise ValueError(f"cannot iterate over the open-ended range {self}")
        return iter(range(self.lowest, self.highest + 1))

    def __len__(self) -> int:
        return 0 if self.empty else self.highest - self.lowest + 1

    def __bool__(self) -> bool:
        return not self.empty

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == OPEN_END:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"

    def __repr__(self) -> str:
        return f"VersionRange({str(self)!r})"


@functools.lru_cache(maxsize=4096)
def _shared_range(lowest: int, highest: int) -> VersionRange:
    return VersionRange(lowest, highest)


VersionRange.NONE = VersionRange(1, 0)
VersionRange.ALL = VersionRange(0, OPEN_END)
