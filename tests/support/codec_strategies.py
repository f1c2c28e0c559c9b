"""Hypothesis strategies built from the generated schema itself.

For a message class and a version, ``instances(cls, version)`` draws objects
whose every field present at that version holds a random valid value (None
where the field is nullable at that version), nested structs included, and at
flexible versions sometimes unknown tagged fields, so that round trips
exercise every layout the generator produced.
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import strategies as st

from kafkacompat.protocol import messages
from kafkacompat.protocol.message import FieldInfo, KafkaMessage, KafkaStruct

INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "varint": (-(2**31), 2**31 - 1),
    "varlong": (-(2**63), 2**63 - 1),
}

# Unknown tags are drawn above every tag the specs use, so they stay unknown.
UNKNOWN_TAGS = st.integers(min_value=60, max_value=300)


def all_message_classes() -> list[type[KafkaMessage]]:
    return [getattr(messages, name) for name in sorted(messages.CLASS_MODULES)]


def all_versions() -> list[tuple[type[KafkaMessage], int]]:
    return [(cls, v) for cls in all_message_classes() for v in cls.VALID_VERSIONS]


def _primitive(kind: str) -> st.SearchStrategy[Any]:
    if kind in INT_BOUNDS:
        low, high = INT_BOUNDS[kind]
        return st.integers(min_value=low, max_value=high)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.uuids()
    if kind == "string":
        return st.text(max_size=12)
    if kind in ("bytes", "records"):
        return st.binary(max_size=16)
    raise AssertionError(f"no strategy for {kind}")


def _value(info: FieldInfo, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    if info.struct is not None:
        element: st.SearchStrategy[Any] = st.deferred(lambda: structs(info.struct, version, flexible))
    else:
        element = _primitive(info.kind)
    value = st.lists(element, max_size=3) if info.is_array else element
    if version in info.nullable_versions:
        value = st.none() | value
    return value


@functools.cache
def structs(cls: type[KafkaStruct] | None, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    assert cls is not None
    fields = {info.name: _value(info, version, flexible) for info in cls._FIELDS if version in info.versions}

    def build(values: dict[str, Any], unknown: list[tuple[int, bytes]]) -> KafkaStruct:
        obj = cls(**values)
        if flexible and unknown:
            obj.unknown_tagged_fields = tuple(sorted(dict(unknown).items()))
        return obj

    unknown = (
        st.lists(st.tuples(UNKNOWN_TAGS, st.binary(max_size=6)), max_size=2) if flexible else st.just([])
    )
    return st.builds(build, st.fixed_dictionaries(fields), unknown)


def instances(cls: type[KafkaMessage], version: int) -> st.SearchStrategy[Any]:
    return structs(cls, version, version in cls.FLEXIBLE_VERSIONS)
