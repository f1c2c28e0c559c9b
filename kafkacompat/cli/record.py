"""``kafkacompat record``: a pass-through in front of a broker that writes one profile per client.

Put it between clients and one broker (plaintext or SASL_PLAINTEXT); bytes
pass untouched while request headers are read on the side.  Each client
(ApiVersions v3+ software name and version where sent, else its client id)
gets a profile: every (API, version) it sent, the ApiVersions ranges it was
offered, and what the broker did (answered, error, closed).  Payloads and
credentials are never recorded.  The broker must advertise the proxy's
address (advertised.listeners, Tansu's --advertised-listener-url), or clients
go around it after bootstrap.  Runs until Ctrl-C or SIGTERM (or --duration);
the profiles file is rewritten as clients come and go.  ``--merge FILES``
records nothing: it merges recordings of one client made in front of
different brokers into one profile (how the client picks each version, which
APIs it needs), as ``check`` does when given several.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

from kafkacompat.errors import ConfigError, EmulatorConfigError, KafkaCompatError, UsageError
from kafkacompat.recorder import ProfileWriter, RecordProxy, freeze_start_up
from kafkacompat.testing.emulator.broker import check_bind_host

__all__ = ["check_out", "merge", "parse_address", "register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "record",
        help="record client profiles from the wire, as a pass-through in front of a broker",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument("--listen", metavar="HOST:PORT", help="where clients connect (loopback)")
    parser.add_argument("--upstream", metavar="HOST:PORT", help="the broker to forward to")
    parser.add_argument("--out", default="profiles.jsonl", help="profiles file, one JSON line per client")
    parser.add_argument(
        "--merge",
        nargs="+",
        metavar="PROFILES",
        help="record nothing: merge these recordings (made in front of different brokers) into one "
        "profile per client, written to --out",
    )
    parser.add_argument("--duration", type=float, help="stop after this many seconds")
    parser.add_argument(
        "--allow-non-loopback", action="store_true", help="allow listening on an address that is not loopback"
    )
    parser.set_defaults(handler=run)


def parse_address(text: str, what: str) -> tuple[str, int]:
    host, found, port = text.rpartition(":")
    if not found or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"{what} must look like HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def check_out(out: Path) -> None:
    """Refuse an ``--out`` that cannot be written, before anything listens; creates nothing."""
    directory = out.parent if str(out.parent) else Path(".")
    if not directory.is_dir():
        raise ConfigError(f"--out: no directory {directory}")
    if out.is_dir() and not out.is_symlink():
        raise ConfigError(f"--out: {out} is a directory, not a file")
    try:
        fd, temporary = tempfile.mkstemp(prefix=".record-", dir=directory)
        os.close(fd)
        os.unlink(temporary)
    except OSError as exc:
        raise ConfigError(f"--out: cannot write in {directory} ({exc.strerror or exc})") from None


async def _record(proxy: RecordProxy, writer: ProfileWriter, duration: float | None) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.serve)
            print(f"recording: {proxy.address} -> {proxy.upstream[0]}:{proxy.upstream[1]}", flush=True)

            async def stop_on_signal() -> None:
                async for _ in signals:
                    nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_signal)
            with trio.move_on_after(math.inf if duration is None else duration):
                await writer.run()
            nursery.cancel_scope.cancel()


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one kafkacompat error a nursery wrapped, else the group itself."""
    matched, _ = group.split(KafkaCompatError)
    found: BaseException | None = matched
    while isinstance(found, BaseExceptionGroup) and len(found.exceptions) == 1:
        found = found.exceptions[0]
    return found if isinstance(found, KafkaCompatError) else group


def merge(files: list[str], out: Path) -> int:
    """``--merge``: the recordings of each client in ``files`` merged into one profile, written to ``out``."""
    from kafkacompat.cli.check import read_profiles
    from kafkacompat.cli.files import write_text

    check_out(out)
    profiles = read_profiles(files)
    write_text(out, "".join(json.dumps(p, sort_keys=True) + "\n" for p in profiles), "--out")
    print(f"{len(profiles)} client profiles merged from {', '.join(files)} into {out}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.merge is not None:
        if args.listen is not None or args.upstream is not None or args.duration is not None:
            raise UsageError("--merge records nothing: it takes no --listen, --upstream or --duration")
        return merge(args.merge, Path(args.out))
    if args.listen is None or args.upstream is None:
        raise UsageError("--listen and --upstream are required (or --merge FILES, to merge recordings)")
    if args.duration is not None and not 0 < args.duration < math.inf:  # NaN too
        raise UsageError(f"--duration must be a positive number of seconds, got {args.duration}")
    listen_host, listen_port = parse_address(args.listen, "--listen")
    upstream_host, upstream_port = parse_address(args.upstream, "--upstream")
    try:
        check_bind_host(listen_host, args.allow_non_loopback)
    except EmulatorConfigError:
        raise UsageError(
            f"--listen {listen_host} is not loopback: the recorder listens on loopback "
            "only, unless --allow-non-loopback is given"
        ) from None
    out = Path(args.out)
    check_out(out)
    proxy = RecordProxy(upstream_host, upstream_port, listen_host=listen_host, listen_port=listen_port)
    progress = sys.stderr if sys.stderr.isatty() else None
    writer = ProfileWriter(proxy.book, out, sys.stderr, progress)
    freeze_start_up()  # this process is the recorder's: full collections walk only traffic
    try:
        trio.run(_record, proxy, writer, args.duration)
    except BaseExceptionGroup as group:  # the proxy's own error, from inside the nursery
        raise _first_error(group) from None
    if progress is not None:
        progress.write("\n")
    try:
        count = writer.write_now()
    except OSError as exc:
        lost = len(proxy.book.clients)
        why = exc.strerror or exc
        raise ConfigError(f"--out: cannot write {out} ({why}); {lost} client profiles lost") from None
    print(f"{count} client profiles ({proxy.book.progress()}) written to {out}", file=sys.stderr, flush=True)
    bounds = proxy.book.bounds_note()
    if bounds:
        print(f"past the recorder's bounds: {bounds}", file=sys.stderr, flush=True)
    return 0
