"""Docs that are executed: the command blocks of README.md and docs/ are run and compared with what they show.

A block is a fenced code block whose lines start with ``$ kafkacompat ...``,
each command followed by what it printed (stdout and stderr, as a terminal
shows them) and, optionally, its exit status as ``[exit N]``.  The line just
before the fence says what the commands run against::

    <!-- docs-check: none -->            no broker (help, usage errors, file errors)
    <!-- docs-check: emulated 2.8 3.0 -->  an emulated cluster of these releases, one broker each
    <!-- docs-check: emulated 3.9 metadata.version=20 -->  ... with these finalized feature levels
    <!-- docs-check: tansu -->           Tansu, the testing kit's real broker (``TansuBroker``)
    <!-- docs-check: kafka09 -->         a real Apache Kafka 0.9.0.1 (``Kafka09Broker``)
    <!-- docs-check: skip: REASON -->    not run, for the reason given (a broker the kit
                                         cannot start, a tool the project does not install)

Every ``127.0.0.1:PORT`` of a command is replaced with the broker's address
(for several brokers, in order).  Before comparing, ports, cluster ids made of
ports, times, dates and temporary paths are replaced with placeholders on both
sides, so a run on another day and other ports compares equal.  A cut output
shows ``[... N lines omitted ...]`` (or ``[... N lines omitted: what ...]``):
any number of lines match it.

``python -m tests.support.docs_check`` checks every marked block (``make
docs-check``) and ``--update`` rewrites the outputs with what the commands
print now (``make docs``), keeping each cut where it was.  The same goes for
docs/cli-reference.md, every command's real ``--help``, generated whole.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
MARKER = re.compile(r"^<!-- docs-check: (?P<target>[^>]*?) -->$")
FENCE = re.compile(r"^```")
OMITTED = re.compile(r"^\[\.\.\. (\d+) lines omitted(?P<what>: [^\]]*?)? \.\.\.\]$")
EXIT = re.compile(r"^\[exit (\d+)\]$")
ADDRESS = re.compile(r"127\.0\.0\.1:\d+")
TIMEOUT = 120.0
# (pattern, placeholder): what differs from run to run.
PLACEHOLDERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"emulated-([0-9.+]+)-\d+"), r"emulated-\1-PORT"),
    (ADDRESS, "127.0.0.1:PORT"),
    (re.compile(r'"port": ?\d+'), '"port": PORT'),  # a port in JSON output
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?"), "TIME"),
    (re.compile(r"\b\d+(\.\d+)? ?(ms|s)\b"), "DURATION"),
    (re.compile(r"/tmp/[^\s'\"]+"), "TMPPATH"),
)


@dataclass
class Command:
    argv: str  # what follows "$ kafkacompat "
    output: list[str]
    exit: int | None


@dataclass
class Block:
    path: Path
    target: str
    start: int  # index of the first line inside the fence
    end: int  # index of the closing fence
    commands: list[Command]


def normalise(text: str) -> str:
    for pattern, placeholder in PLACEHOLDERS:
        text = pattern.sub(placeholder, text)
    return text


def _parse_commands(lines: Sequence[str]) -> list[Command]:
    commands: list[Command] = []
    for line in lines:
        if line.startswith("$ kafkacompat"):
            commands.append(Command(line.removeprefix("$ kafkacompat").strip(), [], None))
        elif commands and (found := EXIT.match(line)):
            commands[-1].exit = int(found[1])
        elif commands:
            commands[-1].output.append(line)
    return commands


def blocks(path: Path) -> Iterator[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        marker = MARKER.match(lines[index])
        if marker and index + 1 < len(lines) and FENCE.match(lines[index + 1]):
            start = index + 2
            end = next(i for i in range(start, len(lines)) if FENCE.match(lines[i]))
            yield Block(path, marker["target"], start, end, _parse_commands(lines[start:end]))
            index = end
        index += 1


def unmarked(path: Path) -> list[int]:
    """Line numbers of command blocks with output that no marker says how to run (not checked yet)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found, inside, marked = [], False, False
    for number, line in enumerate(lines, start=1):
        if FENCE.match(line):
            if not inside:
                marked = number >= 2 and bool(MARKER.match(lines[number - 2]))
            inside = not inside
        elif inside and not marked and line.startswith("$ kafkacompat"):
            found.append(number)
    return found


@contextmanager
def target(name: str) -> Iterator[list[str]]:
    """The addresses of what ``name`` describes, running while inside."""
    kind, *args = name.split()
    if kind == "none":
        yield []
    elif kind == "emulated":
        from kafkacompat.testing import ThreadedCluster

        releases = [arg for arg in args if "=" not in arg]
        finalized = {name: int(level) for name, _, level in (a.partition("=") for a in args if "=" in a)}
        with ThreadedCluster(
            releases or ["3.9"], cluster_id="docs-cluster", finalized_features=finalized or None
        ) as cluster:
            yield cluster.addresses
    elif kind == "tansu":
        from kafkacompat.testing import TansuBroker

        with TansuBroker() as tansu:
            yield [tansu.bootstrap]
    elif kind == "kafka09":
        from kafkacompat.testing import Kafka09Broker

        with Kafka09Broker() as kafka:
            yield [kafka.bootstrap]
    else:
        raise ValueError(f"unknown docs-check target {name!r}")


def _with_addresses(argv: str, addresses: Sequence[str]) -> str:
    """``argv`` with its loopback addresses replaced, in order, by the running broker's."""
    given = iter(addresses)
    return ADDRESS.sub(lambda m: next(given, m.group(0)), argv)


def run(argv: str, addresses: Sequence[str]) -> tuple[list[str], int]:
    command = _with_addresses(argv, addresses)
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    done = subprocess.run(
        f"{sys.executable} -m kafkacompat.cli {command}",
        shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )
    out = (done.stdout + done.stderr).splitlines()
    return out, done.returncode


def matches(shown: Sequence[str], actual: Sequence[str]) -> bool:
    """Whether ``actual`` is what ``shown`` shows, placeholders and cuts allowed."""
    return re.fullmatch(_cut_pattern(shown), "".join(normalise(line) + "\n" for line in actual)) is not None


def _cut_pattern(shown: Sequence[str]) -> str:
    """``shown`` as a pattern over normalised output, one group per cut."""
    pattern = []
    for line in shown:
        if OMITTED.match(line):
            pattern.append(r"((?:[^\n]*\n)*?)")
        else:
            pattern.append(re.escape(normalise(line)) + r"\n")
    return "".join(pattern)


def _omitted(cut: str, count: int) -> str:
    what = found["what"] if (found := OMITTED.match(cut)) and found["what"] else ""
    return f"[... {count} lines omitted{what} ...]"


def _with_cut(shown: Sequence[str], actual: list[str]) -> list[str]:
    """``actual`` cut where ``shown`` is cut: every cut kept when the output still matches, else the first."""
    cuts = [i for i, line in enumerate(shown) if OMITTED.match(line)]
    if not cuts:
        return actual
    found = re.fullmatch(_cut_pattern(shown), "".join(normalise(line) + "\n" for line in actual))
    if found:  # normalising keeps lines, so each cut's line count and position carry over
        new, cursor, groups = [], 0, iter(range(1, len(cuts) + 1))
        for line in shown:
            if OMITTED.match(line):
                count = found.group(next(groups)).count("\n")
                new.append(_omitted(line, count))
                cursor += count
            else:
                new.append(actual[cursor])
                cursor += 1
        return new
    cut = cuts[0]
    head, tail = cut, len(shown) - cut - 1 - sum(1 for i in cuts[1:])
    if head + tail >= len(actual):
        return actual
    return [*actual[:head], _omitted(shown[cut], len(actual) - head - tail), *actual[len(actual) - tail :]]


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def check_block(block: Block) -> tuple[list[str], list[str]]:
    """(problems, the block's new lines)."""
    problems: list[str] = []
    new_lines: list[str] = []
    with ExitStack() as stack:
        addresses = stack.enter_context(target(block.target))
        for command in block.commands:
            actual, code = run(command.argv, addresses)
            where = f"{_shown(block.path)}:{block.start}: $ kafkacompat {command.argv}"
            if command.exit is not None and code != command.exit:
                problems.append(f"{where}: exit {code}, the doc shows {command.exit}")
            if not matches(command.output, actual):
                problems.append(f"{where}: the output differs from the doc")
            shown_argv = _with_addresses(command.argv, addresses)
            new_lines += [f"$ kafkacompat {shown_argv}".rstrip(), *_with_cut(command.output, actual)]
            if command.exit is not None:
                new_lines.append(f"[exit {code}]")
    return problems, new_lines


REFERENCE = ROOT / "docs" / "cli-reference.md"


def _commands() -> list[list[str]]:
    """Every command and subcommand of ``kafkacompat``, as argv prefixes, in ``--help``'s order."""
    from kafkacompat.cli import build_parser

    found: list[list[str]] = []

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        found.append(prefix)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*prefix, name])

    walk(build_parser(), [])
    return found


def _help(prefix: list[str]) -> list[str]:
    """``kafkacompat PREFIX --help``, run in this process (as wide as a terminal of 80 columns)."""
    from kafkacompat.cli import main as cli_main

    captured = io.StringIO()
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        with contextlib.redirect_stdout(captured), contextlib.suppress(SystemExit):
            cli_main([*prefix, "--help"])
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved
    return captured.getvalue().splitlines()


def cli_reference() -> str:
    """docs/cli-reference.md as the commands' ``--help`` makes it now."""
    parts = [
        "# Command-line reference",
        "",
        "Every command's `--help`, as `kafkacompat` prints it (generated by `make docs`; the test",
        "suite fails when it is stale).  The guide is [cli.md](cli.md).",
        "",
    ]
    for prefix in _commands():
        out = _help(prefix)
        title = " ".join(["kafkacompat", *prefix])
        parts += [f"## `{title}`", "", "```text", *out, "```", ""]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--update", action="store_true", help="rewrite the outputs with what runs now")
    parser.add_argument("paths", nargs="*", type=Path, help="documents (default: README.md and docs/)")
    args = parser.parse_args(argv)
    problems: list[str] = []
    checked = skipped = 0
    for path in [p.resolve() for p in args.paths] or DOCUMENTS:
        lines = path.read_text(encoding="utf-8").splitlines()
        for block in reversed(list(blocks(path))):  # from the end: earlier line numbers stay right
            if block.target.startswith("skip"):
                reason = block.target.removeprefix("skip:").strip()
                if not reason or not block.target.startswith("skip: "):
                    problems.append(f"{_shown(path)}:{block.start}: a skipped block must say why: skip: WHY")
                skipped += len(block.commands)
                continue
            found, new_lines = check_block(block)
            checked += len(block.commands)
            if args.update:
                lines[block.start : block.end] = new_lines
            else:
                problems += found
        if args.update:
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if not args.paths:
        reference = cli_reference()
        if args.update:
            REFERENCE.write_text(reference, encoding="utf-8")
        elif not REFERENCE.exists() or REFERENCE.read_text(encoding="utf-8") != reference:
            problems.append(f"{REFERENCE.relative_to(ROOT)}: stale; make docs regenerates it")
    for problem in problems:
        print(problem, file=sys.stderr)
    pending = {str(p.relative_to(ROOT)): unmarked(p) for p in DOCUMENTS}
    waiting = sum(len(v) for v in pending.values())
    print(
        f"{checked} command(s) checked, {len(problems)} differ; {skipped} skipped for the reason marked; "
        f"{waiting} unmarked command(s) not run yet"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
