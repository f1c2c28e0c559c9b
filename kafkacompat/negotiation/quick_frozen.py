"""Frozen dataclass instances built at the speed of plain ones, for the connect path.

A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__``
(its own ``__setattr__`` refuses), five to six times slower than a plain
attribute store on CPython 3.11: a connect builds about a dozen such objects
(actions, the transcript, the result) and that was a fifth of its CPU.

``quick(cls)`` returns a twin of the frozen slots dataclass ``cls``: the same
slots, not frozen, whose ``__init__`` takes what ``cls``'s takes (same
parameters, defaults and default factories), stores it plainly and ends by
making the new object an instance of ``cls``.  Calling the twin gives what calling ``cls``
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
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]  # checked above: a dataclass
    if len(fields) != len(cls.__dataclass_fields__) or any(spec.kw_only for spec in fields):  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__} has class variables, init-only or keyword-only fields")
    # The twin's __init__, written out as dataclasses writes one (same parameters, defaults
    # and factories), with plain stores and a last line that makes the object a ``cls``.
    namespace: dict[str, Any] = {"_cls": cls, "_MISSING": dataclasses.MISSING}
    parameters: list[str] = []
    lines: list[str] = []
    for spec in fields:
        name = spec.name
        if spec.default_factory is not dataclasses.MISSING:
            namespace[f"_make_{name}"] = spec.default_factory
            if spec.init:
                parameters.append(f"{name}=_MISSING")
                lines.append(f"self.{name} = _make_{name}() if {name} is _MISSING else {name}")
            else:
                lines.append(f"self.{name} = _make_{name}()")
        elif spec.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = spec.default
            parameters.append(f"{name}=_default_{name}")
            lines.append(f"self.{name} = {name}" if spec.init else f"self.{name} = _default_{name}")
        elif spec.init:
            parameters.append(name)
            lines.append(f"self.{name} = {name}")
    lines.append("self.__class__ = _cls  # same slots in the same order: CPython allows the change")
    source = f"def __init__(self, {', '.join(parameters)}):\n" + "".join(f"    {line}\n" for line in lines)
    exec(source, namespace)  # names are the dataclass's own field identifiers
    slots = cls.__slots__  # type: ignore[attr-defined]
    twin = type(f"_Quick{cls.__name__}", (), {"__slots__": slots, "__init__": namespace["__init__"]})
    twin.__module__ = cls.__module__
    return twin
