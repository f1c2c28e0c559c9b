"""The ``kafkacompat`` command line.

Each subcommand lives in its own module of this package and exposes
``register(subparsers)``, which adds its parser and sets ``handler`` to a
function ``(args) -> int``.  Expected failures (any ``KafkaCompatError``) print
one sentence on stderr and exit non-zero; the traceback is shown only with
``--debug``.  Exit status: 0 done, 1 an expected failure, 2 a command line
that cannot be read (``UsageError``, see ``cli.usage``), 70 a bug, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from kafkacompat._version import __version__
from kafkacompat.cli.usage import UsageParser, unrecognized
from kafkacompat.errors import KafkaCompatError, UsageError
from kafkacompat.protocol import codec_path

# Subcommand modules, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "inspect", "features", "coordinators", "snapshot", "emulate", "fleet", "record", "check"
)

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug of kafkacompat, not an expected failure


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(
        prog="kafkacompat",
        description="Kafka compatibility: what a broker speaks, what a client would pick, and why.",
    )
    parser.add_argument(
        "--version", action="version", version=f"kafkacompat {__version__} (codec: {codec_path.describe()})"
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks for expected failures")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"kafkacompat.cli.{name}").register(subparsers)
    _accept_global_options_anywhere(parser)
    return parser


def _accept_global_options_anywhere(parser: argparse.ArgumentParser) -> None:
    """Let ``--debug`` follow the subcommand too (``kafkacompat inspect H:P --debug``), as users type it.

    Each (nested) subcommand parser gets its own ``--debug`` whose default is
    ``SUPPRESS``: left out, it does not overwrite what the main parser read.
    """
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for sub in {id(p): p for p in action.choices.values()}.values():
            sub.add_argument(
                "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
            )
            _accept_global_options_anywhere(sub)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args, extras = parser.parse_known_args(words)
        if extras:
            raise unrecognized(parser, args, extras, words)
        handler = getattr(args, "handler", None)
        if handler is None:
            raise UsageError("no command given; kafkacompat --help lists them", prog="kafkacompat")
    except UsageError as exc:
        print(_usage_line(exc, "kafkacompat"), file=sys.stderr)
        return EXIT_USAGE
    try:
        code: int = handler(args)
    except UsageError as exc:
        if args.debug:
            raise
        print(_usage_line(exc, f"kafkacompat {args.command}"), file=sys.stderr)
        return EXIT_USAGE
    except KafkaCompatError as exc:
        if args.debug:
            raise
        print(f"kafkacompat {args.command}: {printable(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    except (Exception, RecursionError) as exc:  # a bug: one line; the traceback only with --debug
        if args.debug:
            raise
        print(
            f"kafkacompat {args.command}: internal error ({type(exc).__name__}: {printable(str(exc))}); "
            "run again with --debug for the traceback and report it",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    except KeyboardInterrupt:
        return 130
    return code


def _usage_line(error: UsageError, prog: str) -> str:
    return f"{error.prog or prog}: {printable(str(error))}"


def printable(text: str) -> str:
    """``text`` with control bytes escaped: what a broker sent must not drive the terminal."""
    return "".join(c if c.isprintable() or c in "\n\t" else f"\\x{ord(c):02x}" for c in text)


if __name__ == "__main__":
    sys.exit(main())
