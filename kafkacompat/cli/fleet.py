"""``kafkacompat fleet-report``, ``fleet-generate`` and ``client-profile``: the fleet pipeline's commands.

``fleet-report`` reads capability snapshots and client profiles with Spark and
writes one folder per table plus ``report.html``; ``fleet-generate`` writes a
synthetic fleet (for demos and benchmarks); ``client-profile`` prints
kafkacompat's own client profile.  Only ``fleet-report`` needs Spark (the
``kafkacompat[spark]`` extra); it is imported when the command runs, so the
other commands and ``kafkacompat --help`` work without it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from kafkacompat.cli.files import open_for_writing, write_text
from kafkacompat.errors import ConfigError, UsageError
from kafkacompat.pipeline.client_format import kafkacompat_client_profile
from kafkacompat.pipeline.command import add_report_arguments, run_report
from kafkacompat.pipeline.generate import FleetSpec, generate_clients, write_fleet, write_fleet_files

__all__ = ["register", "run_client_profile", "run_generate"]


def _first_paragraph(text: str | None) -> str | None:
    return text.split("\n\n")[0] if text else None


def register(subparsers: Any) -> None:
    report = subparsers.add_parser(
        "fleet-report",
        help="what every client negotiates with every cluster, and what breaks (needs kafkacompat[spark])",
        description="Read capability snapshots and client profiles with Spark; write one folder per table "
        "and report.html under --out.",
    )
    add_report_arguments(report)
    report.set_defaults(handler=run_report)

    generate = subparsers.add_parser(
        "fleet-generate",
        help="write a synthetic fleet of snapshot lines (and client profiles) for demos and benchmarks",
        description=_first_paragraph(FleetSpec.__doc__),
    )
    generate.add_argument("--clusters", type=int, required=True)
    generate.add_argument("--brokers", type=int, required=True, help="brokers per cluster")
    generate.add_argument("--observations", type=int, default=3, help="observations per broker (default 3)")
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument(
        "--bad-every", type=int, default=0, metavar="N", help="spoil every N-th line (default: none)"
    )
    generate.add_argument(
        "--out", default="-", metavar="FILE", help="snapshot lines (default: stdout); a folder with --files"
    )
    generate.add_argument("--files", type=int, default=1, metavar="N", help="split into N files under --out")
    generate.add_argument("--clients-out", metavar="FILE", help="also write client profiles here")
    generate.add_argument("--clients", type=int, default=10, help="how many client profiles (default 10)")
    generate.set_defaults(handler=run_generate)

    profile = subparsers.add_parser(
        "client-profile",
        help="print kafkacompat's own client profile (one JSON line)",
        description="Print kafkacompat's client profile: the request versions its codec writes; "
        "ApiVersions, Metadata and FindCoordinator are marked required.",
    )
    profile.add_argument("--out", default="-", metavar="FILE", help="where to write (default: stdout)")
    profile.set_defaults(handler=run_client_profile)


def _emit(path: str, text: str, what: str) -> None:
    """``text`` on stdout (``-``) or in the file ``path``, by the CLI's rules for the files it writes."""
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_text(path, text, what)


def run_client_profile(args: argparse.Namespace) -> int:
    _emit(args.out, json.dumps(kafkacompat_client_profile(), separators=(",", ":")) + "\n", "--out")
    return 0


def run_generate(args: argparse.Namespace) -> int:
    for flag, value, least in (
        ("--clusters", args.clusters, 0),
        ("--brokers", args.brokers, 1),
        ("--observations", args.observations, 1),
        ("--bad-every", args.bad_every, 0),
        ("--clients", args.clients, 0),
    ):
        if value < least:
            raise UsageError(f"{flag} must be at least {least}, got {value}")
    try:
        spec = FleetSpec(
            args.clusters, args.brokers, args.observations, seed=args.seed, bad_every=args.bad_every
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.files < 1:
        raise UsageError(f"--files must be at least 1, got {args.files}")
    started = time.perf_counter()
    if args.files > 1:
        if args.out == "-":
            raise UsageError("--files needs --out DIR")
        folder = Path(args.out)
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"--out {folder} is a file: --files {args.files} writes files into a folder")
        write_fleet_files(spec, folder, args.files, lambda path: open_for_writing(path, "--out"))
        lines = spec.lines
    else:
        out = sys.stdout if args.out == "-" else open_for_writing(args.out, "--out")
        try:
            lines = write_fleet(spec, out)
        finally:
            if out is not sys.stdout:
                out.close()
    if args.clients_out:
        profiles = generate_clients(args.clients, args.seed)
        text = "".join(json.dumps(profile, separators=(",", ":")) + "\n" for profile in profiles)
        write_text(args.clients_out, text, "--clients-out")
    elapsed = time.perf_counter() - started
    where = "stdout" if args.out == "-" else args.out
    print(f"wrote {lines:,} snapshot lines to {where} in {elapsed:.1f} s", file=sys.stderr)
    return 0
