"""Kafka look-alike brokers: who they are, and where they answer differently from Kafka.

Theory.  Software other than Apache Kafka (Tansu, noida-db, librdkafka's
mock cluster) speaks the protocol and advertises ranges through ApiVersions
(KIP-35), but a range says what it decodes, not that it behaves as Kafka does
at every version.  Where it does not, a verdict read from the ranges alone
would say "works" for a client that fails.  Those deviations are facts about
one release of one piece of software, so they are data
(``lookalike_brokers.jsonl``), measured against the real software: the
ApiVersions answer it gives (which identifies it: no Apache release advertises
the same table) and each request it answers otherwise, with what Kafka does
there.  ``identify`` names the software from a broker's ranges; ``verdicts``
applies its deviations to the version a client would send.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kafkacompat.protocol.versions import VersionRange

__all__ = ["Deviation", "Lookalike", "identify", "lookalikes"]

_DATA = Path(__file__).resolve().parent / "lookalike_brokers.jsonl"  # one software a line


@dataclass(frozen=True, slots=True)
class Deviation:
    """One request a look-alike answers otherwise than Kafka does."""

    api_key: int
    versions: VersionRange
    answer: str  # what the look-alike answers
    kafka_does: str  # what Kafka does instead, and what it means for a client
    source: str


@dataclass(frozen=True, slots=True)
class Lookalike:
    software: str
    release: str
    apis: Mapping[int, VersionRange]
    deviations: tuple[Deviation, ...]

    @property
    def label(self) -> str:
        return f"{self.software} {self.release}"

    def deviation(self, api_key: int, version: int) -> Deviation | None:
        return next((d for d in self.deviations if d.api_key == api_key and version in d.versions), None)


@cache
def lookalikes() -> tuple[Lookalike, ...]:
    """Every look-alike the data knows, in file order."""
    raw = [json.loads(line) for line in _DATA.read_text(encoding="utf-8").splitlines() if line]
    return tuple(
        Lookalike(
            entry["software"],
            entry["release"],
            {int(k): VersionRange(low, high) for k, (low, high) in entry["api_versions"].items()},
            tuple(
                Deviation(
                    d["api_key"], VersionRange(*d["versions"]), d["answer"], d["kafka_does"], d["source"]
                )
                for d in entry["deviations"]
            ),
        )
        for entry in raw
    )


def identify(apis: Mapping[int, VersionRange]) -> Lookalike | None:
    """The look-alike whose measured ApiVersions answer is exactly ``apis``, if any."""
    table = {k: r for k, r in apis.items() if not r.empty}
    return next((known for known in lookalikes() if dict(known.apis) == table), None)
