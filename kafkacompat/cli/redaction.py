"""Keeping secrets out of everything the command line prints.

Passwords reach the command line only through the environment or a command
config file, and live in ``Secret`` objects from then on.  Two nets catch the
rest: every text the commands print goes through ``Redactor.text``, and an
error leaving a command (even with ``--debug``, whose traceback shows the
error's message, notes and causes) is scrubbed in place first by
``Redactor.scrubbing``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress

from kafkacompat.connection.security import Secret

__all__ = ["MASK", "Redactor"]

MASK = "***"
_MIN_SECRET_LENGTH = 1


class Redactor:
    """Replaces the values of known secrets with ``***`` in text and in errors."""

    def __init__(self, secrets: Iterable[Secret] = ()) -> None:
        self._values: list[str] = []
        for secret in secrets:
            self.add(secret)

    def add(self, secret: Secret) -> None:
        value = secret.reveal()
        if len(value) >= _MIN_SECRET_LENGTH and value not in self._values:
            self._values.append(value)
            # Longest first, so that a secret containing another is masked whole.
            self._values.sort(key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._values)

    def text(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, MASK)
        return text

    def _value(self, value: object) -> object:
        return self.text(value) if isinstance(value, str) else value

    def scrub(self, exc: BaseException, _seen: set[int] | None = None) -> None:
        """Mask secrets in ``exc``'s args, message, notes, causes and grouped errors, in place."""
        seen = _seen if _seen is not None else set()
        if id(exc) in seen or not self._values:
            return
        seen.add(id(exc))
        with suppress(AttributeError, TypeError):  # exotic exception types
            exc.args = tuple(self._value(arg) for arg in exc.args)
        for attribute in ("message", "reason", "detail"):
            value = getattr(exc, attribute, None)
            if isinstance(value, str):
                with suppress(AttributeError, TypeError):  # read-only attributes
                    setattr(exc, attribute, self.text(value))
        notes = getattr(exc, "__notes__", None)
        if isinstance(notes, list):
            notes[:] = [self.text(n) if isinstance(n, str) else n for n in notes]
        for linked in (exc.__cause__, exc.__context__):
            if linked is not None:
                self.scrub(linked, seen)
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                self.scrub(inner, seen)

    @contextmanager
    def scrubbing(self) -> Iterator[None]:
        """Scrub any error that leaves the block, then let it go on."""
        try:
            yield
        except BaseException as exc:
            self.scrub(exc)
            raise
