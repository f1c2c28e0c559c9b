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



def _exception_classes(module: object) -> dict[str, type]:
    return {
        name: value
        for name in module.__all__  # type: ignore[attr-defined]
        if isinstance(value := getattr(module, name), type) and issubclass(value, BaseException)
    }


def test_no_package_face_exports_an_exception_class() -> None:
    """Exceptions have one door, ``kafkacompat.errors``: no face lists one."""
    for name in PACKAGES:
        if name != "kafkacompat.errors":
            assert _exception_classes(importlib.import_module(name)) == {}, name


@pytest.mark.parametrize("name", ["kafkacompat", "kafkacompat.transport", "kafkacompat.aio"])
def test_every_exported_exception_is_the_one_in_errors(name: str) -> None:
    from kafkacompat import errors

    for attribute, cls in _exception_classes(importlib.import_module(name)).items():
        assert cls.__module__ == "kafkacompat.errors" and getattr(errors, attribute) is cls, attribute


@pytest.mark.parametrize("name", ["kafkacompat", "kafkacompat.transport", "kafkacompat.aio"])
def test_the_exports_are_what_the_package_holds_and_nothing_is_left_out(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    # Lazily loaded names are listed in __dir__ or __all__; public module attributes that are
    # neither submodules nor typing helpers must be exported.
    public = {
        attribute for attribute, value in vars(module).items()
        if not attribute.startswith("_") and not isinstance(value, type(importlib))
        and getattr(value, "__module__", "").startswith("kafkacompat")
    }
    assert public <= exported, sorted(public - exported)
