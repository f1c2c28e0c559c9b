"""Every public exception class lives in ``kafkacompat.errors``; configuration errors are ValueErrors.

The package's syntax trees are scanned for class definitions, and each class
found is looked up in its imported module, so an exception defined anywhere
(exported or not) is seen.  Private packages (``_codegen``) and private names
are left out; the allowed exceptions below say why they live elsewhere.
"""

from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path

import pytest

import kafkacompat
from kafkacompat import errors
from kafkacompat._generated import is_generated
from kafkacompat.errors import (
    ConfigError,
    EmulatorConfigError,
    HandshakeConfigError,
    InvalidAddressError,
    KafkaCompatError,
    NegotiationError,
    TransportError,
    attach_context,
)

PACKAGE = Path(kafkacompat.__file__).parent
#: Public exception classes defined outside errors.py, and why.
ELSEWHERE = {
    # The CLI's envelope for an expected failure: its main prints it; a library caller never sees it.
    "kafkacompat.cli.failures.CommandFailed",
    # The emulator's own signal inside its SASL server: answered to the client as an error code.
    "kafkacompat.testing.emulator.sasl.SaslFailure",
}


def _public_classes() -> list[tuple[str, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = relative.parts[1:]
        if is_generated(relative.as_posix()):
            continue
        if any(part.startswith("_") and part != "__init__" for part in parts):
            continue
        module = ".".join(p for p in relative.parts if p != "__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [(module, node.name) for node in tree.body
                  if isinstance(node, ast.ClassDef) and not node.name.startswith("_")]
    return found


def test_every_public_exception_class_is_defined_in_errors() -> None:
    outside = []
    seen_in_errors = 0
    for module_name, class_name in _public_classes():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = importlib.import_module(module_name)
        cls = getattr(module, class_name)
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            continue
        if module_name == "kafkacompat.errors":
            seen_in_errors += 1
        elif f"{module_name}.{class_name}" not in ELSEWHERE:
            outside.append(f"{module_name}.{class_name}")
    assert outside == []
    assert seen_in_errors == sum(
        isinstance(getattr(errors, n), type) and issubclass(getattr(errors, n), BaseException)
        for n in errors.__all__
    )


def _error_classes() -> set[str]:
    tree = ast.parse((PACKAGE / "errors.py").read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.ClassDef)}


def test_exceptions_are_imported_from_errors_and_re_exported_nowhere() -> None:
    """One door per exception: no module lists one in ``__all__``, nobody imports one elsewhere."""
    defined = _error_classes()
    root = PACKAGE.parent
    doors = []
    for folder in ("kafkacompat", "tests", "bench", "examples"):
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative == "kafkacompat/errors.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                    and node.module.startswith("kafkacompat") and node.module != "kafkacompat.errors"
                ):
                    doors += [f"{relative}: from {node.module} import {a.name}"
                              for a in node.names if a.name in defined]
            for node in tree.body:
                if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
                ):
                    listed = ast.literal_eval(node.value)
                    doors += [f"{relative}: __all__ lists {n}" for n in listed if n in defined]
    assert doors == []


@pytest.mark.parametrize("cls", [ConfigError, HandshakeConfigError, EmulatorConfigError, InvalidAddressError])
def test_the_configuration_family_is_a_value_error(cls: type[Exception]) -> None:
    assert issubclass(cls, ConfigError) and issubclass(cls, ValueError) and issubclass(cls, KafkaCompatError)


def test_configuration_errors_raised_by_the_package_are_in_the_family() -> None:
    from kafkacompat.connection.config import ConnectionConfig
    from kafkacompat.negotiation.coordinators import plan_coordinator_lookups
    from kafkacompat.negotiation.handshake.config import HandshakeConfig
    from kafkacompat.negotiation.version_policy import VersionPolicy
    from kafkacompat.testing.emulator import EmulatedCluster

    attempts = [
        lambda: HandshakeConfig(max_connections=0),
        lambda: ConnectionConfig(max_in_flight=0),
        lambda: VersionPolicy(caps={"NoSuchApi": 1}),
        lambda: plan_coordinator_lookups(["g"], 0, [], max_batch=0),
        lambda: plan_coordinator_lookups(["g"], 7, []),
        lambda: EmulatedCluster("0.0.1"),
    ]
    for attempt in attempts:
        with pytest.raises(ConfigError):
            attempt()
    # Kept for handlers written before the family existed.
    assert issubclass(HandshakeConfigError, NegotiationError)


def test_attach_context_fills_what_is_missing_and_keeps_what_is_there() -> None:
    bare = TransportError("reset")
    assert attach_context(bare, node="b:9092", transcript="t") is bare
    assert (bare.node, bare.transcript) == ("b:9092", "t")
    named = TransportError("reset", node="closer:9092", transcript="first")
    attach_context(named, node="b:9092", transcript="second")
    assert (named.node, named.transcript) == ("closer:9092", "first")
    assert str(attach_context(TransportError("reset"), node="b:9092")) == "reset (node b:9092)"
