"""Colour for the text output on a terminal, when the optional ``rich`` package is installed.

The text is the plain renderer's, line for line (so what a terminal shows can
be pasted next to Kafka's own tools' output); only styles are added: usable
versions green, unusable ones and errors red, ``UNSUPPORTED`` dim, this
client's marks yellow and headings bold.  Without ``rich``, or when stdout is
not a terminal, or with ``--color never`` (or ``NO_COLOR`` set), nothing of
this runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["colour_wanted", "print_coloured", "rich_available"]

_STYLES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\[usable: \d+\]"), "green"),
    (re.compile(r"\[unusable: [^\]]*\]"), "bold red"),
    (re.compile(r"-> ERROR: .*$"), "bold red"),
    (re.compile(r"UNSUPPORTED"), "dim"),
    (re.compile(r"\{[^}]*\}"), "yellow"),
    (re.compile(r"^[A-Z][A-Za-z ]+:(?=\s|$)"), "bold"),
    (re.compile(r"^\S+ \(id: -?\d+ rack: [^)]*\)"), "bold cyan"),
)


def rich_available() -> bool:
    return importlib.util.find_spec("rich") is not None


def colour_wanted(choice: str, stream: TextIO) -> bool:
    """``--color``: always, never, or auto (a terminal, rich installed, no NO_COLOR)."""
    if choice == "never" or not rich_available():
        return False
    if choice == "always":
        return True
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def print_coloured(lines: Sequence[str], stream: TextIO) -> None:
    """Print ``lines`` with styles (``rich`` must be importable); tabs stay tabs, as Kafka prints them.

    Only rich's styling is used: each line's styled segments are written as they
    are, not laid out by the console (which would expand the tabs into spaces).
    """
    # Imported by name so that type checking does not need rich installed.
    console_module: Any = importlib.import_module("rich.console")
    text_module: Any = importlib.import_module("rich.text")
    console = console_module.Console(file=stream, force_terminal=True, highlight=False, soft_wrap=True)
    colours = console._color_system
    for line in lines:
        text = text_module.Text(line)
        for pattern, style in _STYLES:
            text.highlight_regex(pattern, style)
        stream.write(
            "".join(
                segment.style.render(segment.text, color_system=colours) if segment.style else segment.text
                for segment in text.render(console)
            )
            + "\n"
        )
    stream.flush()
