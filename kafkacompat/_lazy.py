"""The lazy-export helper every package face uses: names imported on first use, not at import."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``, which imports its exports on first use.

    ``homes`` maps each lazy name to the module that defines it (a home without
    a dot is a submodule of ``package``).  The value is kept in the package, so
    each name is looked up once.  Every lazily exporting package uses this one.
    """
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib  # not loaded at startup: only a lazy name's first use pays for it

        value = getattr(importlib.import_module(home if "." in home else f"{package}.{home}"), name)
        namespace[name] = value
        return value

    return __getattr__
