"""Quick twins of frozen dataclasses (handshake.types.quick): what they build is what the class builds."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field

import pytest

from kafkacompat.negotiation.handshake import machine, reply
from kafkacompat.negotiation.handshake.transcript import HandshakeAttempt, HandshakeTranscript
from kafkacompat.negotiation.handshake.types import HandshakeResult, quick


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    count: int = 1
    tags: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list, compare=False)
    hidden: list[int] = field(default_factory=list, init=False, repr=False, compare=False)


def test_a_twin_builds_an_equal_immutable_instance_of_the_class() -> None:
    twin = quick(Sample)
    for args, kwargs in (((("a",)), {}), (("b", 2), {"tags": ("x",)}), ((), {"name": "c", "notes": ["n"]})):
        made, expected = twin(*args, **kwargs), Sample(*args, **kwargs)
        assert type(made) is Sample and made == expected and hash(made) == hash(expected)
        assert repr(made) == repr(expected) and made.notes == expected.notes and made.hidden == []
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.count = 5  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(made)) == made
        assert dataclasses.replace(made, count=9) == dataclasses.replace(expected, count=9)
    first, second = twin("d"), twin("d")
    assert first.notes is not second.notes and first.hidden is not second.hidden  # fresh defaults
    with pytest.raises(TypeError):
        twin()  # type: ignore[call-arg]  # the class's signature: name is required


def test_only_frozen_slots_dataclasses_without_post_init_get_a_twin() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(slots=True)
    class NotFrozen:
        a: int

    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("negative")

    @dataclass(frozen=True, slots=True, kw_only=True)
    class KeywordsOnly:
        a: int

    for cls in (NoSlots, NotFrozen, Checked, KeywordsOnly, int):
        with pytest.raises(TypeError):
            quick(cls)


def test_the_twins_of_the_connect_path_build_their_classes() -> None:
    twins = {
        machine._Attempt: HandshakeAttempt,
        machine._Transcript: HandshakeTranscript,
        reply._Result: HandshakeResult,
    }
    for twin, cls in twins.items():
        wanted = [name for name, p in inspect.signature(cls).parameters.items() if p.default is p.empty]
        got = [name for name, p in inspect.signature(twin).parameters.items() if p.default is p.empty]
        assert list(inspect.signature(twin).parameters) == list(inspect.signature(cls).parameters)
        assert got == wanted and twin.__slots__ == cls.__slots__  # type: ignore[attr-defined]
