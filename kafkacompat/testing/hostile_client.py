"""Drive one kafkacompat entry point against a broker in a process of its own, and measure it.

``python -m kafkacompat.testing.hostile_client ENTRY HOST:PORT [--timeout S]``
runs one entry point once and prints one JSON line: ``outcome`` (``ok`` or the
error's class name), ``typed`` (whether it was a ``KafkaCompatError``),
``message``, ``elapsed`` seconds and ``peak_rss_mib`` (the process's
high-water mark, VmHWM).  Entries:

- ``probe``: ``probe_broker(timeout=S)``
- ``connection``: ``open_connection``, then Metadata (no topics) within S
- ``connection-topics``: the same with Metadata for every topic (its answer grows with the cluster)
- ``aio``: the same through ``kafkacompat.aio.open_connection``, in an asyncio loop
- ``blocking``: the same through ``open_blocking_connection`` (no event loop)
- ``cluster``: ``connect`` then ``capabilities()``
- ``coordinators``: ``connect`` then ``find_coordinators(["g1", "g2"])``
- ``aio-cluster``, ``aio-coordinators``: ``cluster`` and ``coordinators`` through
  ``kafkacompat.aio.connect``, in an asyncio loop
- ``sync``: ``connect_sync`` then ``capabilities()``
- ``inspect``, ``inspect-all``: the CLI's ``kafkacompat inspect`` (with
  ``--all-brokers``) in this process; the outcome is ``exit N``, and
  ``typed`` is false when the CLI reported an internal error

``measure`` runs a child and returns its exit status, output and wall time;
the peak RSS is the child's own report (a forked child's ``ru_maxrss`` would
count the parent's pages it shared before ``exec``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ENTRIES", "Measured", "main", "measure", "peak_rss_mib", "run_entry"]

ENTRIES = (
    "probe", "connection", "connection-topics", "aio", "blocking", "cluster", "coordinators", "aio-cluster",
    "aio-coordinators", "sync", "inspect", "inspect-all",
)


def peak_rss_mib() -> float:
    """This process's peak resident set (VmHWM) in MiB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")  # pragma: no cover - Linux only


def run_entry(entry: str, address: str, timeout: float, *, roomy: bool = False) -> Any:
    """Run ``entry`` once against ``address``; what it returned (or raises what it raised).

    ``roomy`` lifts every reply ceiling to the frame limit (100 MiB), as a user
    who needs more might: then only the deadlines and the count limits hold.
    """
    from kafkacompat.connection.config import ConnectionConfig, RetryPolicy

    settings: dict[str, Any] = {}
    if roomy:  # imported only here: the module also runs against checkouts older than ReplyLimits
        from kafkacompat.protocol.framing import DEFAULT_MAX_FRAME_SIZE
        from kafkacompat.protocol.reply_limits import DEFAULT_CEILINGS, ReplyLimits

        settings["reply_limits"] = ReplyLimits(dict.fromkeys(DEFAULT_CEILINGS, DEFAULT_MAX_FRAME_SIZE))
    config = ConnectionConfig(connect_timeout=timeout, request_timeout=timeout, retry=RetryPolicy(attempts=1),
                              **settings)
    host, _, port_text = address.rpartition(":")
    if entry == "probe":
        from kafkacompat.blocking.probe import probe_broker

        return probe_broker(host, int(port_text), config, timeout=timeout)
    if entry.startswith("inspect"):
        from kafkacompat.cli import main as cli_main

        argv = ["inspect", address, "--timeout", str(timeout), "--retries", "1", "--quiet"]
        return cli_main([*argv, "--all-brokers"] if entry == "inspect-all" else argv)
    if entry == "aio":
        import asyncio

        from kafkacompat.aio import open_connection as open_aio
        from kafkacompat.protocol.messages import MetadataRequest as Metadata

        async def run_aio() -> Any:
            async with open_aio(host, int(port_text), config) as conn:
                return await conn.request(Metadata(topics=[]))

        return asyncio.run(run_aio())
    if entry in ("aio-cluster", "aio-coordinators"):
        import asyncio

        from kafkacompat.aio import connect as connect_aio

        async def run_aio_cluster() -> Any:
            async with connect_aio(address, config) as cluster:
                if entry == "aio-coordinators":
                    return await cluster.find_coordinators(["g1", "g2"])
                return await cluster.capabilities()

        return asyncio.run(run_aio_cluster())
    if entry == "blocking":
        from kafkacompat.blocking.connection import open_blocking_connection
        from kafkacompat.protocol.messages import MetadataRequest as BlockingMetadata

        with open_blocking_connection(host, int(port_text), config) as blocking:
            return blocking.request(BlockingMetadata(topics=[]))
    if entry == "sync":
        from kafkacompat.transport.sync import connect_sync

        with connect_sync(address, config) as cluster:
            return cluster.capabilities()
    import trio

    async def run() -> Any:
        if entry.startswith("connection"):
            from kafkacompat.protocol.messages import MetadataRequest
            from kafkacompat.transport.connection import open_connection

            topics: list[Any] | None = None if entry == "connection-topics" else []
            async with open_connection(host, int(port_text), config) as conn:
                return await conn.request(MetadataRequest(topics=topics))
        from kafkacompat.transport.cluster import connect

        async with connect(address, config) as cluster:
            if entry == "coordinators":
                return await cluster.find_coordinators(["g1", "g2"])
            return await cluster.capabilities()

    if entry not in ENTRIES:
        raise SystemExit(f"unknown entry {entry!r}: one of {', '.join(ENTRIES)}")
    return trio.run(run)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkacompat.testing.hostile_client")
    parser.add_argument("entry", choices=ENTRIES)
    parser.add_argument("address")
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--roomy", action="store_true", help="every reply ceiling lifted to the frame limit")
    args = parser.parse_args(argv)
    from kafkacompat.errors import KafkaCompatError

    started = time.monotonic()
    outcome, typed, message = "ok", True, ""
    try:
        result = run_entry(args.entry, args.address, args.timeout, roomy=args.roomy)
        if args.entry.startswith("inspect"):
            outcome = f"exit {result}"
            typed = result != 70  # kafkacompat.cli.EXIT_INTERNAL: an exception that was not typed
    except KafkaCompatError as exc:
        outcome, message = type(exc).__name__, str(exc)[:300]
    except BaseException as exc:  # what the property is about: anything else is a finding
        outcome, typed, message = type(exc).__name__, False, repr(exc)[:300]
    elapsed = time.monotonic() - started
    print(json.dumps({"outcome": outcome, "typed": typed, "message": message,
                      "elapsed": round(elapsed, 3), "peak_rss_mib": round(peak_rss_mib(), 1)}))
    return 0


@dataclass(frozen=True)
class Measured:
    """A child's exit status, output and wall time."""

    returncode: int
    stdout: str
    stderr: str
    elapsed: float

    def report(self) -> dict[str, Any]:
        """The JSON line a ``hostile_client`` child printed last."""
        return dict(json.loads(self.stdout.strip().splitlines()[-1]))


def measure(argv: Sequence[str], *, timeout: float = 120.0, env: dict[str, str] | None = None,
            cwd: str | None = None) -> Measured:
    """Run ``argv``; the child is killed after ``timeout`` seconds (its status is then negative)."""
    started = time.monotonic()
    with subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, env=env, cwd=cwd) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            out, err = child.communicate()
    return Measured(child.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                    time.monotonic() - started)


def client_argv(entry: str, address: str, timeout: float, *, roomy: bool = False) -> list[str]:
    """The command line of a ``hostile_client`` child."""
    module = "kafkacompat.testing.hostile_client"
    return [sys.executable, "-m", module, entry, address, "--timeout", str(timeout), *(["--roomy"] * roomy)]


if __name__ == "__main__":
    sys.exit(main())
