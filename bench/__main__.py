"""``python -m bench``: run the benchmark sections and print one table per section.

A section is a module with ``TITLE: str`` and ``run(config: BenchConfig) ->
list[Row]``.  To add one, write the module under ``bench/`` and add its name
to ``SECTIONS`` below; ``--only NAME`` then selects it.

The exit status is 0 when every benchmark ran, whether or not its targets were
met (a missed target prints ``MISSED``: targets live here, not in the tests);
it is 1 when a benchmark is broken (a section crashed, or a row reports
``ERROR``, e.g. a peer decoded the payload to different content).
"""

from __future__ import annotations

import argparse
import importlib
import platform
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Protocol, cast

from bench.common import BenchConfig, Row, format_table

# Section name -> module; run in this order.
SECTIONS: dict[str, str] = {
    "codec": "bench.codec",
    "transport": "bench.transport",
    "aio": "bench.aio",
    "legacy": "bench.legacy",
    "pipeline": "bench.pipeline",
    "recorder": "bench.recorder",
    "handshake": "bench.handshake",
    "deadlines": "bench.deadlines",
}


class Section(Protocol):
    TITLE: str

    def run(self, config: BenchConfig) -> list[Row]: ...


def load_section(name: str) -> Section:
    return cast(Section, importlib.import_module(SECTIONS[name]))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description="Run the benchmark sections and print one table per section."
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="SECTION",
        help=f"run only this section (repeatable or comma-separated; one of: {', '.join(SECTIONS)})",
    )
    parser.add_argument(
        "--quick", action="store_true", help="short timing runs (a CI smoke test; numbers are noisy)"
    )
    args = parser.parse_args(argv)
    if args.only:
        names = [name.strip() for value in args.only for name in value.split(",") if name.strip()]
        unknown = [name for name in names if name not in SECTIONS]
        if unknown:
            parser.error(f"unknown section(s) {', '.join(unknown)} (known: {', '.join(SECTIONS)})")
        args.only = names
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    config = BenchConfig.make(quick=args.quick)
    names = [name for name in SECTIONS if not args.only or name in args.only]
    print(
        f"kafkacompat benchmarks: Python {platform.python_version()} ({platform.python_implementation()}),"
        f" {platform.machine()}, {'quick' if config.quick else 'full'} run:"
        f" best of {config.repeats} repeats of ~{config.repeat_seconds:g} s each"
    )
    broken = False
    missed = met = 0
    for name in names:
        started = time.perf_counter()
        try:
            section = load_section(name)
            print(f"\n== {name}: {section.TITLE}")
            rows = section.run(config)
        except Exception:
            broken = True
            print(f"\n== {name}: FAILED\n{traceback.format_exc()}", file=sys.stdout)
            continue
        print(format_table(rows))
        print(f"({name} took {time.perf_counter() - started:.1f} s)")
        broken = broken or any(row.error for row in rows)
        missed += sum(row.status == "MISSED" for row in rows)
        met += sum(row.status == "met" for row in rows)
    print(
        f"\ntargets: {met} met, {missed} MISSED"
        + ("; some benchmarks are BROKEN (see ERROR)" if broken else "")
    )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
