"""Every public name a package lists is importable, and listed once."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "kafkacompat",
    "kafkacompat.transport",
    "kafkacompat.aio",
    "kafkacompat.negotiation",
    "kafkacompat.testing",
    "kafkacompat.errors",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_is_importable_and_listed_once(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported, f"{name} exports nothing"
    assert len(exported) == len(set(exported)), sorted(n for n in exported if exported.count(n) > 1)
    for attribute in exported:
        assert getattr(module, attribute) is not None, f"{name}.{attribute}"

