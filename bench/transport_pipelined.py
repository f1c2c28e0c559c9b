"""Client CPU per pipelined request on one trio connection (issue 14's target), part of ``bench.transport``.

One connection (``open_connection``, default ``max_in_flight`` 32) to the
section's Tansu; a round starts 1000 tasks that each send one single-key
FindCoordinator v3 and await the answer, and the round's CPU time (user +
system, ``resource.getrusage`` of the process: the broker is another process)
is divided by 1000.  That includes spawning the 1000 tasks, which is the
caller's cost, measured alone as the "1000 bare trio tasks" reference.

The reference for the target is the previous design of the trio connection
(its own correlation ids, matching and writer/reader loops, before it became a
driver of the sans-I/O ``ClientConnection``): its package is taken from git
history at ``PREVIOUS_DESIGN`` into a temporary directory and runs the same
child script, interleaved round by round with today's, so that a machine
slowing down affects both alike.  Without git history the row says so and the
figure issue 14 quotes (about 45 us per request) stands in.  Target:
kafkacompat at most half the previous design's CPU per request.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from bench.common import Row

__all__ = ["PREVIOUS_DESIGN", "pipelined_rows"]

W_PIPELINED = "4. 1000 pipelined single-key FindCoordinator v3 requests on one trio connection (client CPU)"
PREVIOUS_DESIGN = "b8e6d8a"  # main before the trio connection became a ClientConnection driver
ISSUE_FIGURE_US = 45.0  # issue 14's figure for the previous design
REQUESTS = 1000
CHILD_TIMEOUT = 120.0
REPO_ROOT = Path(__file__).resolve().parent.parent

# argv: host port rounds [bare]; prints one "CPU-US <per request>" line per round.
CHILD = """
import resource, sys, trio
host, port, rounds, bare = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), len(sys.argv) > 4
from kafkacompat.protocol import messages as m
from kafkacompat.transport.connection import open_connection

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

async def main():
    async with open_connection(host, port) as conn:
        async def ask(i):
            reply = await conn.request(m.FindCoordinatorRequest(key=f"group-{i}", key_type=0), version=3)
            if reply.error_code != 0:
                raise SystemExit(f"FindCoordinator error {reply.error_code}")
        async def nothing(i):
            await trio.lowlevel.checkpoint()
        for round_ in range(rounds + 1):  # the first round warms up
            start = cpu()
            async with trio.open_nursery() as nursery:
                for i in range(N):
                    nursery.start_soon(nothing if bare else ask, i)
            if round_:
                print("CPU-US", (cpu() - start) / N * 1e6, flush=True)

trio.run(main)
""".replace("N", str(REQUESTS))


def _child(root: Path, host: str, port: int, rounds: int, *, bare: bool = False) -> list[float]:
    argv = [sys.executable, "-c", CHILD, host, str(port), str(rounds)] + (["bare"] if bare else [])
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=CHILD_TIMEOUT, cwd=root, env={"PYTHONPATH": str(root)}
    )
    values = [float(line.split()[1]) for line in proc.stdout.splitlines() if line.startswith("CPU-US ")]
    if proc.returncode != 0 or len(values) != rounds:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"child exited with {proc.returncode}: {tail}")
    return values


def _previous_design(into: Path) -> str:
    """Extract the previous design's package into ``into``; "" or why it could not be."""
    git = shutil.which("git")
    if git is None:
        return "git not found"
    proc = subprocess.run(
        [git, "archive", "--format=tar", PREVIOUS_DESIGN, "kafkacompat"],
        capture_output=True, cwd=REPO_ROOT, timeout=60,
    )
    if proc.returncode != 0:
        return f"commit {PREVIOUS_DESIGN} not in this checkout's history"
    with tarfile.open(fileobj=BytesIO(proc.stdout)) as archive:
        archive.extractall(into, filter="data")
    return ""


def pipelined_rows(host: str, port: int, rounds: int) -> list[Row]:
    ours: list[float] = []
    previous: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kafkacompat-previous-") as tmp:
        missing = _previous_design(Path(tmp))
        try:
            bare = _child(REPO_ROOT, host, port, rounds, bare=True)
            for _ in range(rounds):  # interleaved: one child of each per round
                ours += _child(REPO_ROOT, host, port, 1)
                if not missing:
                    previous += _child(Path(tmp), host, port, 1)
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            return [Row(W_PIPELINED, "kafkacompat", note=f"{type(exc).__name__}: {exc}", error=True)]
    mine = statistics.median(ours)
    reference = statistics.median(previous) if previous else ISSUE_FIGURE_US
    source = f"previous design ({PREVIOUS_DESIGN})" if previous else f"issue 14's figure ({missing})"
    rows = [
        Row(
            W_PIPELINED,
            "kafkacompat BrokerConnection (trio)",
            mine / 1e6,
            ratio=reference / mine,
            target=2.0,
            note=(
                f"{mine:.1f} us CPU per request = {mine / reference:.2f}x the {source} "
                f"(target <= 0.5x); median of {len(ours)} rounds of {REQUESTS}"
            ),
        )
    ]
    if previous:
        rows.append(
            Row(
                W_PIPELINED,
                f"(reference) previous design, {PREVIOUS_DESIGN}",
                reference / 1e6,
                note=f"{reference:.1f} us CPU per request; median of {len(previous)} rounds",
            )
        )
    rows.append(
        Row(
            W_PIPELINED,
            "(reference) 1000 bare trio tasks, one checkpoint each",
            statistics.median(bare) / 1e6,
            note="the callers' own cost, included in both rows above",
        )
    )
    return rows
