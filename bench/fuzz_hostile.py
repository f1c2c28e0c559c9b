"""``python -m bench.fuzz_hostile``: the hostile broker's randomized mode against the client entry points.

For a time budget (60 s unless ``--seconds``), a ``HostileBroker`` relays
every request to an emulated Kafka 4.1 broker and damages each reply it
relays with probability ``--rate`` (``kafkacompat.testing.hostile.mutating``: bit flips, truncation at
a random offset then a close or a stall, size-prefix rewrites, inflated
counts), drawn from ``random.Random(seed)``.  One child process runs the
client entry points against it in turn (``probe``, ``connection``,
``cluster``, ``coordinators``) until the budget is spent, and reports:

- the outcome of every call, counted per entry point (``ok`` or the
  kafkacompat error's class name; anything else is ``UNTYPED`` and a failure);
- the longest call per entry point, against its deadline (``--timeout``);
- the child's peak RSS (VmHWM): every damaged reply went through one process.

The broker side prints how often each mutation was applied.

``--path pure`` runs the clients on the generated Python readers (the
environment's ``KAFKACOMPAT_CODEC=pure``), ``--path native`` on the native
reader (the default where it is built); the report names the path in use.

``--cases`` runs the named hostile cases of docs/hostile.md instead, each in
a child of its own (``kafkacompat.testing.hostile_client``), and prints a
table: entry point, case, outcome, wall time, peak RSS.  ``--client-path
DIR`` runs the clients from another checkout (how the "before" column of
docs/hostile.md was measured).  Exit status:
0 when every failure was a kafkacompat error, no call overran its deadline
by more than ``--margin`` seconds and the peak stayed under ``--max-rss``
MiB; 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import sys
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]

ENTRIES = ("probe", "connection", "cluster", "coordinators")
# How many deadlines one call of each entry may span: the cluster entries bootstrap, ask
# Metadata, then negotiate with each broker, each step with its own deadline.
DEADLINES = {"probe": 1, "connection": 2, "cluster": 4, "coordinators": 6}


def worker(address: str, seconds: float, timeout: float) -> int:
    """The child: call every entry point in turn until ``seconds`` pass; print one JSON report."""
    from kafkacompat.errors import KafkaCompatError
    from kafkacompat.protocol import codec_path
    from kafkacompat.testing.hostile_client import peak_rss_mib, run_entry

    outcomes: dict[str, Counter[str]] = {entry: Counter() for entry in ENTRIES}
    longest = dict.fromkeys(ENTRIES, 0.0)
    untyped: list[str] = []
    stop = time.monotonic() + seconds
    turn = 0
    while time.monotonic() < stop:
        entry = ENTRIES[turn % len(ENTRIES)]
        turn += 1
        started = time.monotonic()
        try:
            run_entry(entry, address, timeout)
            outcome = "ok"
        except KafkaCompatError as exc:
            outcome = type(exc).__name__
        except Exception as exc:  # the property under test: nothing but kafkacompat errors
            outcome = f"UNTYPED {type(exc).__name__}"
            if len(untyped) < 5:
                untyped.append(traceback.format_exc())
        outcomes[entry][outcome] += 1
        longest[entry] = max(longest[entry], time.monotonic() - started)
    print(json.dumps({"outcomes": {e: dict(c) for e, c in outcomes.items()}, "longest": longest,
                      "untyped": untyped, "peak_rss_mib": round(peak_rss_mib(), 1),
                      "codec": codec_path.describe()}))
    return 0


def cases() -> list[tuple[str, str, object]]:
    """(entry point, case, script) for every named case of docs/hostile.md."""
    import struct

    from kafkacompat.testing.hostile import (
        Reply,
        api_versions,
        huge_api_versions,
        metadata_naming,
        scripted,
        unsupported_version,
    )

    def garbage(size: int) -> object:
        blob = struct.pack(">i", size) + random.Random(size).randbytes(size)
        return lambda request: Reply(blob)

    many = [(n, "127.0.0.1", 1 + n % 60000) for n in range(100_000)]
    metadata = scripted({18: api_versions(), 3: metadata_naming(many)})
    fits = scripted({18: api_versions(), 3: metadata_naming(many[:10_000])})  # 210 KB: under the ceiling
    bad = scripted({18: api_versions(), 3: metadata_naming([(1, "a..b", 9092)])})
    all_topics_60 = scripted({18: api_versions(), 3: garbage(60 << 20)})  # above the 16 MiB ceiling
    all_topics_16 = scripted({18: api_versions(), 3: garbage(16 << 20)})  # at it: read once, uncopied
    impossible = scripted({18: unsupported_version(5, 1)})
    negative_epoch = scripted({18: api_versions(epoch=-5), 3: metadata_naming([])})
    return [
        ("probe", "ApiVersions of 10 million rows (70 MB)", huge_api_versions(10_000_000)),
        ("probe", "a 16 MiB garbage frame", garbage(16 << 20)),
        ("probe", "a 60 MiB garbage frame", garbage(60 << 20)),
        ("connection-topics", "a 60 MiB garbage frame (all topics)", all_topics_60),
        ("connection-topics", "a 16 MiB garbage frame (all topics)", all_topics_16),
        ("connection-topics", "Metadata naming 100,000 brokers", metadata),
        ("connection-topics", "Metadata naming 10,000 brokers", fits),
        ("cluster", "Metadata naming 100,000 brokers", metadata),
        ("inspect-all", "Metadata naming 100,000 brokers", metadata),
        ("cluster", "Metadata naming 10,000 brokers", fits),
        ("inspect-all", "Metadata naming 10,000 brokers", fits),
        ("cluster", "Metadata naming a..b:9092", bad),
        ("inspect-all", "Metadata naming a..b:9092", bad),
        ("probe", "UNSUPPORTED_VERSION advertising ApiVersions 5-1", impossible),
        ("inspect", "finalized features epoch -5", negative_epoch),
    ]


def path_env(path: str | None) -> dict[str, str]:
    """The environment of the client children: ``KAFKACOMPAT_CODEC=pure`` for the Python readers."""
    env = {key: value for key, value in os.environ.items() if key != "KAFKACOMPAT_CODEC"}
    if path == "pure":
        env["KAFKACOMPAT_CODEC"] = "pure"
    return env


def run_cases(client_path: str, timeout: float, path: str | None = None) -> int:
    from kafkacompat.testing.hostile import HostileBroker
    from kafkacompat.testing.hostile_client import client_argv, measure

    env = {**path_env(path), "PYTHONPATH": client_path}
    print(f"{'entry point':17} {'case':48} {'outcome':28} {'time':>8} {'peak RSS':>10}")
    failed = False
    for entry, case, script in cases():
        with HostileBroker(script) as broker:  # type: ignore[arg-type]
            argv = client_argv(entry, broker.address, timeout)
            measured = measure(argv, timeout=180, env=env, cwd=client_path)
        try:
            report = measured.report()
        except (ValueError, IndexError):
            report = {"outcome": f"child failed ({measured.returncode})", "typed": False, "peak_rss_mib": 0.0}
        outcome = str(report["outcome"]) + ("" if report["typed"] else " (untyped)")
        failed |= not report["typed"]
        print(f"{entry:17} {case:48} {outcome:28} {measured.elapsed:7.2f}s {report['peak_rss_mib']:7.1f} MiB")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    summary = __doc__.split("\n\n")[1] if __doc__ else None
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz_hostile", description=summary)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=1.0, help="each call's deadline (default 1 s)")
    parser.add_argument("--margin", type=float, default=1.0, help="allowed overrun per deadline")
    parser.add_argument("--max-rss", type=float, default=64.0, help="peak RSS target in MiB (default 64)")
    parser.add_argument("--rate", type=float, default=0.5,
                        help="share of replies damaged (default 0.5: later steps are reached too)")
    parser.add_argument("--path", choices=("native", "pure"), default=None,
                        help="the codec path the clients decode with (default: the one in use there)")
    parser.add_argument("--worker", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--cases", action="store_true", help="the named cases of docs/hostile.md, measured")
    parser.add_argument("--client-path", default=str(Path(__file__).resolve().parents[1]),
                        help="the checkout the clients run from (default: this one)")
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.seconds, args.timeout)
    if args.cases:
        return run_cases(args.client_path, 2.0, args.path)

    from kafkacompat.testing import ThreadedCluster
    from kafkacompat.testing.hostile import HostileBroker, mutating, relay
    from kafkacompat.testing.hostile_client import measure

    seed = args.seed if args.seed is not None else secrets.randbits(32)
    print(f"fuzz_hostile: seed {seed}, {args.seconds:.0f} s, deadline {args.timeout} s per call")
    with ThreadedCluster("4.1") as cluster:
        host, _, port = cluster.bootstrap.split(",")[0].rpartition(":")
        with HostileBroker(mutating(relay(host, int(port)), random.Random(seed), rate=args.rate)) as broker:
            repo = str(Path(__file__).resolve().parents[1])
            env = {**path_env(args.path), "PYTHONPATH": repo}
            argv_child = [sys.executable, "-m", "bench.fuzz_hostile", "--worker", broker.address,
                          "--seconds", str(args.seconds), "--timeout", str(args.timeout)]
            measured = measure(argv_child, timeout=args.seconds + 120, env=env, cwd=repo)
            mutations = Counter(broker.label_counts)
    if measured.returncode != 0:
        print(measured.stderr, file=sys.stderr)
        print("fuzz_hostile: the client process failed", file=sys.stderr)
        return 1
    report = measured.report()
    print(f"codec path of the client process: {report['codec']}")
    if args.path is not None and not report["codec"].startswith(args.path):
        print(f"fuzz_hostile: the client did not run on the {args.path} path", file=sys.stderr)
        return 1
    failed = False
    print(f"\nreplies relayed from the emulator, by damage ({sum(mutations.values())} in all):")
    for label, count in mutations.most_common():
        print(f"  {count:7d}  {label}")
    print("\noutcomes per entry point:")
    for entry in ENTRIES:
        counts: dict[str, int] = report["outcomes"][entry]
        budget = DEADLINES[entry] * (args.timeout + args.margin)
        longest = report["longest"][entry]
        over = longest > budget
        failed |= over
        print(f"  {entry} ({sum(counts.values())} calls, longest {longest:.2f} s of {budget:.1f} s allowed"
              f"{' OVER' if over else ''}):")
        for outcome, count in sorted(counts.items(), key=lambda item: -item[1]):
            failed |= outcome.startswith("UNTYPED")
            print(f"    {count:6d}  {outcome}")
    for text in report["untyped"]:
        print(text, file=sys.stderr)
    peak = report["peak_rss_mib"]
    failed |= peak > args.max_rss
    print(f"\npeak RSS of the client process: {peak:.1f} MiB (target {args.max_rss:.0f} MiB)")
    print("fuzz_hostile: " + ("FAILED" if failed else "every failure typed, every call bounded"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
