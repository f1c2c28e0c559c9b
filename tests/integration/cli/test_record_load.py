"""``kafkacompat record`` under load and under a failing disk: the traffic never waits on the file.

The load is ``kafkacompat.testing.record_load``: 1,000 client ids, each on a
connection of its own with its request pairs pipelined, against a broker that
answers every request with a bare header.  What the writer costs the traffic
is measured as the longest step it held the trio thread, in CPU time of that
thread (a loaded machine stretches wall time, not this); speed figures are
``make bench``'s, not these tests'.
"""

from __future__ import annotations

import functools
import json
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from kafkacompat.negotiation.recording import MAX_CLIENTS
from kafkacompat.pipeline.client_format import validate_client_profile
from kafkacompat.recorder import ProfileWriter
from kafkacompat.testing.record_load import LoopSteps, frozen_start_up, record_in_process, request_frame

FULL_COLLECTION_BOUND = 0.010  # seconds of CPU: the longest full collection during the load


@pytest.fixture
def bare_broker() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkacompat.testing.record_load", "broker"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield f"127.0.0.1:{int(process.stdout.readline())}"
    finally:
        process.kill()
        process.wait(timeout=10)


def test_a_thousand_client_ids_never_wait_on_the_writer_for_more_than_a_slice(
    bare_broker: str, tmp_path: Path
) -> None:
    out = tmp_path / "profiles.jsonl"
    steps = LoopSteps()
    run = functools.partial(record_in_process, bare_broker, out, 1000, 30, settle=1.5)
    with frozen_start_up():  # as kafkacompat record starts
        report = trio.run(run, instruments=[steps])
    assert report["requests"] == 30_000
    # The writer ran all along (the book changed every half second) and wrote every client...
    assert steps.writer and len(steps.writer) > 10
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == MAX_CLIENTS + 1  # the probe's id is the 1,001st: pooled
    assert all(validate_client_profile(p) == [] for p in lines)
    # ...yet never held the loop for more than its slice and one piece of a profile.
    assert ProfileWriter.SLICE <= 0.002
    assert max(steps.writer) < 0.010, steps.summary()
    # Nor did a full garbage collection, the other thing that stalls every connection at once:
    # with start-up frozen it walks the connections and the book only (about 3 ms of CPU at a
    # load of 20 on 2 cores; 20-25 ms without, which this bound fails).
    assert max(steps.collections, default=0.0) < FULL_COLLECTION_BOUND, steps.summary()


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _record(upstream: str, out: Path) -> tuple[subprocess.Popen[str], str]:
    """The CLI recording in front of ``upstream``, and the address it listens on."""
    command = [sys.executable, "-m", "kafkacompat.cli", "record", "--listen", "127.0.0.1:0"]
    process = subprocess.Popen(
        [*command, "--upstream", upstream, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith("recording: "), first
    return process, first.split()[1]


def test_the_recorder_stays_within_its_memory_bound_past_the_books_limits(
    bare_broker: str, tmp_path: Path
) -> None:
    # 1,000 client ids x 128 pairs: twice MAX_PAIRS over the book, which must hold memory flat.
    out = tmp_path / "profiles.jsonl"
    recorder, listen = _record(bare_broker, out)
    command = [sys.executable, "-m", "kafkacompat.testing.record_load", "load", listen, bare_broker]
    try:
        idle = _peak_rss_kib(recorder.pid)
        load = subprocess.run(
            [*command, "--clients", "1000", "--pairs", "128", "--settle", "1"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert load.returncode == 0, load.stderr[-2000:]
        assert json.loads(load.stdout)["requests"] == 128_000
        peak = _peak_rss_kib(recorder.pid)
    finally:
        recorder.send_signal(signal.SIGTERM)
        _, err = recorder.communicate(timeout=60)
    print(f"recorder peak RSS {idle / 1024:.1f} MiB idle, {peak / 1024:.1f} MiB after the load")
    assert recorder.returncode == 0, err
    # The documented bound: ~21 MiB of book and a line per client.
    assert (peak - idle) / 1024 < 32, (idle, peak)
    assert "requests past 512 (API, version) pairs of a client or 65536 of the book" in err


def _round_trip(stream: socket.socket, correlation: int) -> None:
    stream.sendall(request_frame(3, 1, correlation, "steady-client"))
    answer = b""
    while len(answer) < 8:
        chunk = stream.recv(8 - len(answer))
        assert chunk, "the proxy closed a client's connection"
        answer += chunk
    assert struct.unpack(">ii", answer) == (4, correlation)


@pytest.mark.parametrize("comes_back", [True, False])
def test_removing_the_out_directory_keeps_connections_alive_and_is_said_once(
    bare_broker: str, tmp_path: Path, comes_back: bool
) -> None:
    folder = tmp_path / "profiles"
    folder.mkdir()
    out = folder / "profiles.jsonl"
    recorder, listen = _record(bare_broker, out)
    host, _, port = listen.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=10) as stream:
            _round_trip(stream, 1)
            shutil.rmtree(folder)
            deadline = time.monotonic() + 2.5  # five writer cycles, each one failing
            correlation = 1
            while time.monotonic() < deadline:
                correlation += 1
                _round_trip(stream, correlation)
                time.sleep(0.02)
            with socket.create_connection((host, int(port)), timeout=10) as another:
                _round_trip(another, 1)  # and new connections are still taken
            if comes_back:
                folder.mkdir()
                while not out.exists() and time.monotonic() < deadline + 10:
                    _round_trip(stream, correlation := correlation + 1)
                    time.sleep(0.05)
                assert out.exists()
    finally:
        recorder.send_signal(signal.SIGTERM)
        _, err = recorder.communicate(timeout=60)
    assert "Traceback" not in err and "internal error" not in err
    assert err.count("cannot write") == 1 + (not comes_back), err  # reported once, then at the end
    assert f"cannot write {out} (No such file or directory); forwarding goes on" in err
    if comes_back:
        assert recorder.returncode == 0 and f"{out} written again" in err
        assert [p["client"] for p in map(json.loads, out.read_text().splitlines())] == ["steady-client"]
    else:
        assert recorder.returncode == 1
        said = f"--out: cannot write {out} (No such file or directory); 1 client profiles lost"
        assert err.splitlines()[-1] == f"kafkacompat record: {said}"
    assert not folder.exists() or [p.name for p in folder.iterdir()] == ["profiles.jsonl"]
