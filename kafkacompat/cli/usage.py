"""Mistakes on the command line: one line each, exit status 2, and a suggestion when one is close.

``UsageParser`` is argparse's parser with three changes: options must be typed
in full (``allow_abbrev=False``: a script's ``--all-broker`` would otherwise
change meaning the day another option starts the same way); an error is
raised as a ``UsageError`` instead of printing the usage block, so that the
command line prints it as one line; a description (a command module's
docstring) loses its reStructuredText quotes in ``--help``.  Its messages name
the closest command, option or choice (``difflib``), and an argument nothing
took is shown masked when it follows a password-like flag: ``--sasl-passw
hunter2`` must not print the password back.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from kafkacompat.errors import UsageError

__all__ = ["UsageParser", "closest", "redact_arguments", "subcommand_parser", "typo_first", "unrecognized"]

# A flag whose value is probably a secret: what follows it is never printed back.
_SECRET_FLAG = re.compile(r"pass|secret|token|credential|jaas|sasl-user", re.IGNORECASE)
_INVALID_CHOICE = re.compile(
    r"^argument (?P<argument>[^:]+): invalid choice: (?P<value>'.*?') \(choose from (?P<choices>.*)\)$"
)
_MASK = "***"


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``word`` was most likely meant to be: a close spelling, or the one it begins."""
    options = sorted(set(candidates))
    matches = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if matches:
        return matches[0]
    started = [option for option in options if word and option.startswith(word)]
    return started[0] if len(started) == 1 else None


def redact_arguments(argv: Sequence[str]) -> list[str]:
    """``argv`` with every value that follows (or is attached to) a password-like flag masked."""
    shown: list[str] = []
    after_secret_flag = False
    for word in argv:
        flag, equals, _ = word.partition("=")
        if after_secret_flag and not word.startswith("-"):
            shown.append(_MASK)
        elif word.startswith("-") and equals and _SECRET_FLAG.search(flag):
            shown.append(f"{flag}={_MASK}")
        else:
            shown.append(word)
        after_secret_flag = word.startswith("-") and not equals and bool(_SECRET_FLAG.search(flag))
    return shown


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    return [option for action in parser._actions for option in action.option_strings
            if action.help != argparse.SUPPRESS]


def _reworded(message: str) -> str:
    """argparse's message, with the close match it does not offer (Python 3.11's argparse never does)."""
    found = _INVALID_CHOICE.match(message)
    if found is None:
        return message
    value = found["value"].strip("'")
    choices = [choice.strip().strip("'") for choice in found["choices"].split(",")]
    what = "command" if found["argument"] in ("COMMAND", "ACTION") else f"value for {found['argument']}"
    guess = closest(value, choices)
    if guess is not None:
        return f"unknown {what} {value!r}; did you mean {guess!r}?"
    listed = ", ".join(choices)
    return f"unknown {what} {value!r}; choose from {listed}"


class UsageParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one-line ``UsageError``s and whose options are typed in full."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        if kwargs.get("description"):  # descriptions are the modules' docstrings: no ``markup`` in --help
            kwargs["description"] = kwargs["description"].replace("``", "")
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        if message.endswith("required: COMMAND") or message.endswith("required: ACTION"):
            names = [name for action in self._actions if isinstance(action, argparse._SubParsersAction)
                     for name in action.choices]
            message = f"no command given; choose from {', '.join(names)}"
        raise UsageError(_reworded(message), prog=self.prog)


def subcommand_parser(
    parser: argparse.ArgumentParser, namespace: argparse.Namespace
) -> argparse.ArgumentParser:
    """The innermost (sub)command parser the parsed ``namespace`` went through."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(namespace, action.dest, None)
            if chosen in action.choices:
                return subcommand_parser(action.choices[chosen], namespace)
    return parser


def unrecognized(parser: argparse.ArgumentParser, namespace: argparse.Namespace, extras: Sequence[str],
                 argv: Sequence[str]) -> UsageError:
    """The error for arguments no option took: the closest option named, secrets masked."""
    return _unrecognized(subcommand_parser(parser, namespace), extras, argv)


def typo_first(parser: argparse.ArgumentParser, argv: Sequence[str], error: UsageError) -> UsageError:
    """``error``, unless ``argv`` holds an option no parser takes: then that one, with its suggestion.

    argparse says a required argument is missing before it says that another
    was not understood, and a mistyped ``--releas 4.0`` is why ``--release``
    is missing: the typo is the mistake to name.
    """
    command, known = parser, set(_all_option_strings(parser))
    for word in argv:
        chosen = _subcommand(command, word)
        if chosen is not None:
            command = chosen
            known |= set(_all_option_strings(command))
    options = [word for word in argv if word.startswith("-") and word != "-" and not _NUMBER.match(word)]
    unknown = [word for word in options if word.partition("=")[0] not in known]
    return _unrecognized(command, unknown, argv) if unknown else error


_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")  # a negative number is a value, as argparse reads it


def _all_option_strings(parser: argparse.ArgumentParser) -> list[str]:
    return [option for action in parser._actions for option in action.option_strings]


def _subcommand(parser: argparse.ArgumentParser, word: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and word in action.choices:
            chosen: argparse.ArgumentParser = action.choices[word]
            return chosen
    return None


def _unrecognized(command: argparse.ArgumentParser, extras: Sequence[str], argv: Sequence[str]) -> UsageError:
    shown = redact_arguments(argv)
    positions = _positions(argv, extras)
    masked = [shown[i] for i in positions] if len(positions) == len(extras) else redact_arguments(extras)
    text = f"unrecognized argument{'s' if len(extras) > 1 else ''}: {' '.join(masked)}"
    for word in extras:
        if word.startswith("-"):
            guess = closest(word.partition("=")[0], _option_strings(command))
            if guess is not None:
                text += f"; did you mean {guess}?"
                break
    return UsageError(text, prog=command.prog)


def _positions(argv: Sequence[str], extras: Sequence[str]) -> list[int]:
    """Where each of ``extras`` stands in ``argv`` (argparse keeps their order), so the mask follows them."""
    positions: list[int] = []
    start = 0
    for word in extras:
        for index in range(start, len(argv)):
            if argv[index] == word:
                positions.append(index)
                start = index + 1
                break
    return positions
