"""Frozen dataclass instances built at the speed of plain ones, for the connect path.

A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__``
(its own ``__setattr__`` refuses), five to six times slower than a plain
attribute store on CPython 3.11: a connect builds about a dozen such objects
(actions, the transcript, the result) and that was a fifth of its CPU.

``quick(cls)`` returns a twin of the frozen slots dataclass ``cls``: the same
fields, defaults and slots, not frozen, whose ``__init__`` ends by making the
new object an instance of ``cls``.  Calling the twin gives what calling ``cls``
gives (same class, same values, so equal, hashable and immutable alike), only
sooner.  Hot code calls the twin; everyone else keeps calling ``cls``.  Only
for slots dataclasses without ``__post_init__`` (checked here, once).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["quick"]

T = TypeVar("T")


def quick(cls: type[T]) -> type[T]:
    """A faster constructor of ``cls`` (a frozen slots dataclass): see the module docstring."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a frozen slots dataclass")
    if hasattr(cls, "__post_init__") or cls.__bases__ != (object,):
        raise TypeError(f"{cls.__name__} has a __post_init__ or a base class: build it with its own __init__")
    specs: list[tuple[str, Any, dataclasses.Field[Any]]] = []
    for spec in dataclasses.fields(cls):  # type: ignore[arg-type]  # checked above: a dataclass
        copy: dataclasses.Field[Any] = dataclasses.field(
            default=spec.default,
            default_factory=spec.default_factory,
            init=spec.init,
            repr=spec.repr,
            compare=spec.compare,
            hash=spec.hash,
        )
        specs.append((spec.name, spec.type, copy))

    def become(self: Any) -> None:
        self.__class__ = cls  # same slots in the same order: CPython allows the change

    twin = dataclasses.make_dataclass(
        f"_Quick{cls.__name__}",
        specs,
        namespace={"__post_init__": become},
        slots=True,
        eq=False,
        repr=False,
        match_args=False,
    )
    if twin.__slots__ != cls.__slots__:  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__}: its twin's slots differ")
    twin.__module__ = cls.__module__
    return twin
