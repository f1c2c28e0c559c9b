"""Docs that are executed: the command blocks of README.md and docs/ are run and compared with what they show.

A block is a fenced code block whose lines start with ``$ kafkacompat ...``
(or ``$ python examples/NAME.py ...`` and ``$ python -m MODULE ...``: examples
and modules run the same way; or ``$ jq ...``), each command followed by what
it printed (stdout and stderr, as a terminal shows them) and, optionally, its
exit status as ``[exit N]``.  A command may pipe its output through ``jq``
(``... --format json | jq -r '.verdicts[]'``), as a user types it: the
programs run as a shell runs a pipeline, and the exit status is the last
one's.  The line just before the fence says what the commands run against::

    <!-- docs-check: none -->            no broker (help, usage errors, file errors)
    <!-- docs-check: emulated 2.8 3.0 -->  an emulated cluster of these releases, one broker each
    <!-- docs-check: emulated 3.9 metadata.version=20 -->  ... with these finalized feature levels
    <!-- docs-check: emulated 3.9 3.8 metadata.version=20 epoch=5 node2:epoch=4 node2:metadata.version=19 -->
        ... finalized at epoch 5, node 2 still reporting what it knew at epoch 4 (behind the metadata log)
    <!-- docs-check: tansu -->           Tansu, the testing kit's real broker (``TansuBroker``)
    <!-- docs-check: kafka09 -->         a real Apache Kafka 0.9.0.1 (``Kafka09Broker``)
    <!-- docs-check: noida -->           noida-db 0.2.3's Kafka service (``NoidaBroker``)
    <!-- docs-check: librdkafka-mock --> librdkafka 2.0.2's mock cluster (``LibrdkafkaMockBroker``)
    <!-- docs-check: http -->            a peer that is not Kafka (``tests.support.wrong_peers``): a web
                                         server; also ``text``, ``silent``, ``tls``, ``closes``
    <!-- docs-check: emulated 3.9 sasl --> ... requiring SASL: user ``alice``, password ``alice-secret``
    <!-- docs-check: emulated 3.9 advertise-free-port free-port -->  the broker advertises the free
                                         port's address, where a ``record --listen`` proxy listens
    <!-- docs-check: skip: REASON -->    not run, for the reason given (a tool the project
                                         does not install)
    <!-- docs-check: file examples/x.py -->  a listing: the block must be that file, as it is
                                         (``--update`` copies the file in)

(The targets are started, and the commands run, by ``tests.support.docs_targets``.)
Any target may end in ``free-port`` words: each adds a loopback address where
nothing listens yet, after the target's own (for ``emulate --port`` or
``record --listen``); their ports are consecutive, as ``emulate --port P``
gives its second broker P+1.  It may name Python client releases,
``python-client:kafka-python@3.0.12``: they are installed into the cache as
``make profiles`` installs them (``kafkacompat.profiles.installs``) and put
first on the path of the block's ``python`` commands.  The tools a pipeline
uses (``jq``) are Debian packages, installed by ``make system-tools``.

Addresses: each distinct ``127.0.0.1:PORT`` of a block (and each ``--port
PORT``) stands for the target's next address, in order of first appearance,
so the same port means the same broker in every command of the block; what
the commands print is shown with the doc's ports, so the doc keeps its ports
from one update to the next.  Temporary paths: a ``/tmp/NAME/...`` path
stands for a fresh directory made for the document (the same one in each of
its blocks), so one block can read what another wrote; it is shown as
written.

A command may start with environment variables, as a shell takes them
(``$ KAFKA_PASSWORD=wrong kafkacompat ...``).  A command ending in `` &``
runs in the background, as a shell runs it: the next command starts once it
has printed its first line, and when the block's last command is done it
gets SIGINT (Ctrl-C).  Its output, shown under it, is
all it printed until it exited.

Before comparing, ports, cluster ids made of ports, times, dates,
temporary paths and the number of requests ``record`` says it saw are
replaced with placeholders on both sides, so a run on
another day and other ports compares equal.  A cut output shows ``[... N
lines omitted ...]`` (or ``[... N lines omitted: what ...]``): any number of
lines match it.

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
import shlex
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from tests.support.docs_targets import ROOT, Background, Place, python_path, run_command, target

DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
MARKER = re.compile(r"^<!-- docs-check: (?P<target>[^>]*?) -->$")
FENCE = re.compile(r"^```")
OMITTED = re.compile(r"^\[\.\.\. (\d+) lines omitted(?P<what>: [^\]]*?)? \.\.\.\]$")
EXIT = re.compile(r"^\[exit (\d+)\]$")
ADDRESS = re.compile(r"127\.0\.0\.1:\d+")
BACKGROUND = re.compile(r"\s+&$")
# "$ kafkacompat ARGV" (or an example script, a module, jq), with environment variables before it as a
# shell takes them.
_ENVIRONMENT = r"^\$ (?P<environment>(?:[A-Z_][A-Z0-9_]*=\S* )*)"
COMMAND = re.compile(
    _ENVIRONMENT
    + r"(?P<program>kafkacompat|python examples/[\w-]+\.py|python -m [\w.]+|jq)(?P<argv>(?: .*)?)$"
)
# What a block that no marker says how to run is counted for ("unmarked"): a kafkacompat command or an
# example.  Other modules (make bench's, make profiles') run for long minutes and are shown, not run.
RUNNABLE = re.compile(
    _ENVIRONMENT + r"(?P<program>kafkacompat|python examples/[\w-]+\.py)(?P<argv>(?: .*)?)$"
)
# (pattern, placeholder): what differs from run to run.
PLACEHOLDERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"emulated-([0-9.+]+)-\d+"), r"emulated-\1-PORT"),
    (ADDRESS, "127.0.0.1:PORT"),
    (re.compile(r'"port": ?\d+'), '"port": PORT'),  # a port in JSON output
    (re.compile(r"'127\.0\.0\.1', \d+"), "'127.0.0.1', PORT"),  # a (host, port) Python prints
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?"), "TIME"),
    (re.compile(r"\b\d+(\.\d+)? ?(ms|s)\b"), "DURATION"),
    (re.compile(r"/tmp/[^\s'\"]+"), "TMPPATH"),
    # A recording's request count: heartbeats and metadata refreshes come as the clients' timers fire.
    (re.compile(r"(\d+ connections, \d+ clients, )\d+ requests\)"), r"\1N requests)"),
)


@dataclass
class Command:
    argv: str  # what follows "$ kafkacompat ", without a trailing " &"
    output: list[str]
    exit: int | None
    background: bool = False
    environment: str = ""  # "NAME=VALUE ..." before "kafkacompat", as a shell takes it
    program: str = "kafkacompat"  # or "python examples/NAME.py", "python -m MODULE", "jq"

    @property
    def line(self) -> str:
        head = f"$ {self.environment} {self.program}" if self.environment else f"$ {self.program}"
        return f"{head} {self.argv}{' &' if self.background else ''}".rstrip()

    @property
    def shell(self) -> str:
        """What a shell runs, without the variables and the ``&``: the program, its words, any pipe."""
        return f"{self.program} {self.argv}".rstrip()

    @property
    def variables(self) -> dict[str, str]:
        return dict(word.split("=", 1) for word in shlex.split(self.environment))


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
        if found := COMMAND.match(line):
            argv = found["argv"].strip()
            background = BACKGROUND.search(" " + argv) is not None
            environment = (found["environment"] or "").strip()
            command = BACKGROUND.sub("", " " + argv).strip()
            commands.append(Command(command, [], None, background, environment, found["program"]))
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
        elif inside and not marked and RUNNABLE.match(line):
            found.append(number)
    return found


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


def check_block(block: Block, folders: dict[str, Path] | None = None) -> tuple[list[str], list[str]]:
    """(problems, the block's new lines); ``folders``: the document's ``/tmp/NAME`` directories."""
    problems: list[str] = []
    results: list[tuple[list[str], int]] = []
    path = python_path(block.target)  # installed before the target starts: an install takes minutes
    with ExitStack() as stack:
        place = Place(stack.enter_context(target(block.target)), {} if folders is None else folders)
        running: dict[int, Background] = {}
        try:
            for index, command in enumerate(block.commands):
                if command.background:
                    running[index] = Background(place.runnable(command.shell), command.variables, path)
                    results.append(([], 0))
                else:
                    results.append(run_command(place.runnable(command.shell), command.variables, path))
        finally:  # the block is done: Ctrl-C to what it left running, in the reverse order
            for index in sorted(running, reverse=True):
                results[index] = running[index].stop()
    new_lines: list[str] = []
    for command, (printed, code) in zip(block.commands, results, strict=True):
        actual = place.output(printed)
        where = f"{_shown(block.path)}:{block.start}: {command.line}"
        if command.exit is not None and code != command.exit:
            problems.append(f"{where}: exit {code}, the doc shows {command.exit}")
        if not matches(command.output, actual):
            problems.append(f"{where}: the output differs from the doc")
        new_lines += [command.line, *_with_cut(command.output, actual)]
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


def check_listing(block: Block, shown: Sequence[str]) -> tuple[list[str], list[str]]:
    """(problems, the block's new lines) of a ``file PATH`` block: the file's text, as it is."""
    name = block.target.removeprefix("file ").strip()
    source = ROOT / name
    if not source.is_file():
        return [f"{_shown(block.path)}:{block.start}: {name} is not a file"], list(shown)
    actual = source.read_text(encoding="utf-8").splitlines()
    if list(shown) == actual:
        return [], actual
    return [f"{_shown(block.path)}:{block.start}: {name} differs from the doc"], actual


def check_document(path: Path, update: bool) -> tuple[list[str], int, int]:
    """(problems, commands checked, commands skipped) of one document; ``update`` rewrites its outputs."""
    lines = path.read_text(encoding="utf-8").splitlines()
    problems: list[str] = []
    checked = skipped = 0
    changes: list[tuple[Block, list[str]]] = []
    folders: dict[str, Path] = {}  # the document's /tmp/NAME directories, shared by its blocks
    try:
        for block in blocks(path):  # in order: a block may read what an earlier one wrote
            if block.target.startswith("skip"):
                reason = block.target.removeprefix("skip:").strip()
                if not reason or not block.target.startswith("skip: "):
                    problems.append(f"{_shown(path)}:{block.start}: a skipped block must say why: skip: WHY")
                skipped += len(block.commands)
                continue
            if block.target.startswith("file "):  # a listing of a file: it must be the file
                found, new_lines = check_listing(block, lines[block.start : block.end])
                changes.append((block, new_lines))
                problems += [] if update else found
                continue
            found, new_lines = check_block(block, folders)
            checked += len(block.commands)
            changes.append((block, new_lines))
            if not update:
                problems += found
    finally:
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)
    if update:
        for block, new_lines in reversed(changes):  # from the end: earlier line numbers stay right
            lines[block.start : block.end] = new_lines
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return problems, checked, skipped


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--update", action="store_true", help="rewrite the outputs with what runs now")
    parser.add_argument("paths", nargs="*", type=Path, help="documents (default: README.md and docs/)")
    args = parser.parse_args(argv)
    problems: list[str] = []
    checked = skipped = 0
    for path in [p.resolve() for p in args.paths] or DOCUMENTS:
        found, done, left = check_document(path, args.update)
        problems += found
        checked += done
        skipped += left
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
