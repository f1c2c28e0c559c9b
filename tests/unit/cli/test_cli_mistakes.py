"""Every mistake a user can type, through every subcommand: one line, the documented exit code, no traceback.

Exit status 2 for a command line that cannot be used as typed (an unknown
command, option, choice or release; a missing, malformed or out-of-range
value; options that conflict or need another), 1 for an expected failure
while running it (a file that is not there, not readable, not text or whose
content is wrong; a port in use).  Each answer is one line on stderr under
200 characters, names what was wrong (and the closest right spelling when
there is one), never echoes a secret, and comes quickly: nothing here waits
on the network (the wrong peers are walked in
tests/integration/cli/test_cli_wrong_peers.py).
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkacompat.cli import build_parser, main

SECRET = "Wonderland-0xC0FFEE"
BOUND = 5.0  # seconds: none of these may wait for anything


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    binary = tmp_path / "binary.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    users = tmp_path / "users"
    users.write_text("alice\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no process writes it: read, it is empty at once, never waited on
    # Bad lines, named as a user types a file in the current directory (a message names the file).
    monkeypatch.chdir(tmp_path)
    Path("bad-snapshot.jsonl").write_text('{"schema": 1, "observed_at": "yesterday", "node_id": "one"}\n')
    Path("bad-profile.jsonl").write_text(
        '{"client": "app", "version": 3, "api_versions": []}\n\n{"client": "app", "version": "1"}\n'
    )
    yield {
        "binary": str(binary),
        "missing": str(tmp_path / "nope.txt"),
        "directory": str(tmp_path),
        "link": str(link),
        "target": str(target),
        "users": str(users),
        "empty": str(empty),
        "fifo": str(fifo),
        "through_a_file": str(target / "x"),
        "bad_snapshot": "bad-snapshot.jsonl",
        "bad_profile": "bad-profile.jsonl",
    }


@pytest.fixture
def bounded_memory() -> Iterator[None]:
    """At most 1 GiB more address space than the process holds: an unbounded read (``/dev/zero``)
    is a ``MemoryError`` that fails the case, not the kernel's OOM killer ending the run."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        held = int(statm.read().split()[0]) * resource.getpagesize()
    limit = held + (1 << 30) if hard == resource.RLIM_INFINITY else min(held + (1 << 30), hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.fixture
def busy_port() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield str(sock.getsockname()[1])


# (argv, exit code, what the one line must say); {name} is filled from the fixtures.
MISTAKES: list[tuple[list[str], int, str]] = [
    ([], 2, "no command given"),
    (["inspct"], 2, "did you mean 'inspect'?"),
    (["fleet-reprot"], 2, "did you mean 'fleet-report'?"),
    (["inspect", "h:1", "--all-broker"], 2, "did you mean --all-brokers?"),
    (["inspect", "h:1", "--format", "jsno"], 2, "did you mean 'json'?"),
    (["inspect", "h:1", "--timeout", "soon"], 2, "argument --timeout: invalid float value: 'soon'"),
    (["inspect", "h:1", "--sasl-mechanism", "PLAN"], 2, "did you mean 'PLAIN'?"),
    (["inspect", "h:1", "--sasl-password", SECRET], 2, "passwords are not taken on the command line"),
    (["inspect", "h:1", "--sasl-passw", SECRET], 2, "did you mean --sasl-password-env?"),
    (["inspect", "h:1", "--sasl-mechanism", "PLAIN", "--sasl-username", "a", "--sasl-password-env", SECRET],
     2, "looks like a value (not shown)"),
    (["features"], 2, "no command given; choose from describe, upgrade, downgrade, disable"),
    (["features", "descrbe"], 2, "did you mean 'describe'?"),
    (["features", "upgrade", "h:1", "--featur", "x=1"], 2, "did you mean --feature?"),
    (["coordinators", "h:1", "--groups-file", "{binary}"], 1, "is a binary file, not text"),
    (["coordinators", "h:1", "--groups-file", "{missing}"], 1, "does not exist"),
    (["coordinators", "h:1", "--group"], 2, "argument --group: expected one argument"),
    (["inspect", "h:1", "--command-config", "{directory}"], 1, "is a directory"),
    (["inspect", "h:1", "--command-config", "{binary}"], 1, "is a binary file, not text"),
    (["snapshot", "127.0.0.1:1"], 2, "the following arguments are required: --out"),
    (["snapshot", "127.0.0.1:1", "--out", "{link}"], 1, "is a symbolic link; refusing to write through it"),
    (["snapshot", "127.0.0.1:1", "--out", "{directory}"], 1, "is a directory"),
    (["emulate", "--release", "2.3.1"], 2, "no Kafka 2.3.1 in the release table; did you mean 2.3?"),
    (["emulate", "--release", "2.3/kraft"], 2, "Kafka 2.3 has no kraft-broker; it has zk-broker"),
    (["emulate", "--release", "3.9/krft"], 2, "did you mean kraft-broker?"),
    (["emulate", "--sasl-user", f"alice:{SECRET}"], 2, "not taken on the command line"),
    (["emulate", "--sasl-users-file", "{users}"], 1, "entry 1 of --sasl-users-file"),
    (["emulate", "--sasl-users-file", "{empty}"], 1, "names no user"),
    (["emulate", "--sasl-users-file", "{directory}"], 1, "is a directory"),
    (["emulate", "--sasl-users-file", "{users}", "--sasl-users-env", "U"], 2, "give SASL users once"),
    (["emulate", "--port", "{busy_port}", "--duration", "1"], 1, "is already in use"),
    (["record", "--listen", "127.0.0.1:{busy_port}", "--upstream", "h:1", "--duration", "1"], 1,
     "Address already in use"),
    (["emulate", "--brokers", "many"], 2, "argument --brokers: invalid int value: 'many'"),
    (["fleet-generate", "--clusters", "1"], 2, "the following arguments are required: --brokers"),
    (["client-profile", "--out", "{link}"], 1, "is a symbolic link; refusing to write through it"),
    (["fleet-generate", "--clusters", "1", "--brokers", "1", "--out", "{link}"], 1, "is a symbolic link"),
    (["record"], 2, "required"),
    (["check", "{missing}", "--release", "3.9", "--bogus"], 2, "unrecognized argument: --bogus"),
    # check: 2 is "could not tell", for what it cannot read as for a command line it cannot use.
    (["check", "measured", "--release", "5.0"], 2,
     "kafkacompat check: --release 5.0: no Kafka 5.0 in the release table; the table has 0.8.0 to 4.4"),
    (["check", "measured", "--release", "2.3.1"], 2,
     "kafkacompat check: --release 2.3.1: no Kafka 2.3.1 in the release table; did you mean 2.3?"),
    (["check", "measured", "--release", "4.0/zk"], 2,
     "kafkacompat check: --release 4.0/zk: Kafka 4.0 has no zk-broker; "
     "it has kraft-broker, kraft-controller"),
    (["check", "measured", "--release", "4.0/kraft", "--kind", "zk-broker"], 2,
     "kafkacompat check: --release 4.0/kraft names a kraft-broker, --kind a zk-broker: give the kind once"),
    (["check", "measured", "--release", "4.0", "--finalized", "metadata.version"], 2,
     "kafkacompat check: --finalized wants NAME=LEVEL, got 'metadata.version'"),
    (["check", "measured", "--cluster", "{bad_snapshot}"], 2,
     "kafkacompat check: could not tell: snapshot line 1 of bad-snapshot.jsonl: "
     "observed_at: not an RFC 3339 time ('yesterday'); node_id: not an integer ('one')"),
    (["check", "{bad_profile}", "--release", "4.0"], 2,
     "kafkacompat check: could not tell: client profile line 1 of bad-profile.jsonl: "
     "version: not a string (3)"),
    (["check", "/dev/zero", "--release", "4.0"], 2,
     "kafkacompat check: could not tell: the profile file /dev/zero is larger than 64 MiB"),
    (["check", "measured", "--cluster", "{binary}"], 2, "--cluster {binary} is a binary file, not text"),
    (["check", "measured", "--cluster", "{directory}"], 2, "--cluster {directory} is a directory"),
    (["check", "{missing}", "--release", "4.0"], 2, "the profile file {missing} does not exist"),
    # A typo is named before the required option it hides is said to be missing.
    (["check", "measured", "--releas", "4.0"], 2, "unrecognized argument: --releas; did you mean --release?"),
    (["record", "--listen", "127.0.0.1:0", "--upstrem", "h:1"], 2, "did you mean --upstream?"),
    (["record", "--listen", "nothere", "--upstream", "h:1"], 2, "--listen must look like HOST:PORT"),
    (["record", "--listen", "127.0.0.1:0", "--upstream", "h:1", "--duration", "-1"], 2,
     "--duration must be a positive number of seconds, got -1.0"),
    (["record", "--listen", "127.0.0.1:0", "--upstream", "h:1", "--duration", "nan"], 2,
     "--duration must be a positive number of seconds, got nan"),
    (["record", "--listen", "0.0.0.0:9", "--upstream", "h:1"], 2,
     "--listen 0.0.0.0 is not loopback: the recorder listens on loopback only, unless "
     "--allow-non-loopback is given"),
    (["fleet-report", "--snapshot", "a", "--clients", "b", "--out", "c"], 2, "did you mean --snapshots?"),
    (["fleet-generate", "--cluster", "1", "--brokers", "1"], 2, "did you mean --clusters?"),
    # Where to connect.
    (["inspect"], 2, "no broker given: pass --bootstrap-server HOST:PORT (or HOST:PORT)"),
    (["inspect", "a..b:9092"], 2, "not a valid host name"),
    (["inspect", "broker:70000"], 2, "port 70000 is outside 1-65535"),
    (["inspect", "http://127.0.0.1:9092"], 2, "give HOST:PORT without a scheme, e.g. 127.0.0.1:9092"),
    (["inspect", "h:1", "--bootstrap-server", "h:2"], 2, "give the bootstrap server once"),
    (["inspect", "h:1", "--bootstrap-controller", "h:2"], 2, "give either brokers"),
    (["features", "describe", "--bootstrap-controller", "h:0"], 2, "port 0 is outside 1-65535"),
    # How to connect.
    (["inspect", "h:1", "--timeout", "0"], 2, "--timeout must be a positive number of seconds, got 0"),
    (["inspect", "h:1", "--timeout", "nan"], 2, "--timeout must be a positive number of seconds, got nan"),
    (["inspect", "h:1", "--timeout", "inf"], 2, "--timeout must be a positive number of seconds, got inf"),
    (["inspect", "h:1", "--retries", "0"], 2, "--retries must be at least 1, got 0"),
    (["inspect", "h:1", "--cap", "Fetch"], 2, "--cap wants API=VERSION"),
    (["inspect", "h:1", "--cap", "Fecth=3"], 2, "unknown API 'Fecth'; did you mean Fetch?"),
    (["inspect", "h:1", "--pin", "Fetch=x"], 2, "--pin wants one version number"),
    (["inspect", "h:1", "--block", "Fetch=3-x"], 2, "not a version range"),
    (["inspect", "h:1", "--sasl-username", "alice"], 2, "SASL needs a mechanism"),
    (["inspect", "h:1", "--sasl-mechanism", "PLAIN"], 2, "SASL needs a password"),
    (["inspect", "h:1", "--tls", "--ca-file", "{missing}"], 1, "does not exist"),
    (["inspect", "h:1", "--tls", "--ca-file", "{directory}"], 1, "is a directory"),
    (["inspect", "h:1", "--tls", "--ca-file", "{empty}"], 1, "is not a PEM file"),
    (["inspect", "h:1", "--command-config", "{through_a_file}"], 1, "Not a directory"),
    (["inspect", "h:1", "--command-config", "{missing}"], 1, "does not exist"),
    # A release, wherever one is taken.
    (["inspect", "h:1", "--fallback-release", "0.9"], 2,
     "no Kafka 0.9 (zk-broker) in the release table; did you mean 0.9.0?"),
    (["snapshot", "h:1", "--out", "-", "--fallback-release", "4.0"], 2, "the table has 0.8.0 to 3.9"),
    (["emulate", "--release", "0.7"], 2, "no Kafka 0.7 in the release table; the table has 0.8.0 to 4.4"),
    (["emulate", "--release", "5.0"], 2, "the table has 0.8.0 to 4.4"),
    (["emulate", "--release", "latest"], 2, "the table has 0.8.0 to 4.4"),
    (["features", "upgrade", "h:1", "--release-version", "3.9-IV9"], 1, "unknown metadata.version '3.9-IV9'"),
    # Other values.
    (["coordinators", "h:1"], 2, "no key given: use --group, --groups-file or --transactional-id"),
    (["coordinators", "h:1", "--group", "g", "--max-batch", "0"], 2, "--max-batch must be at least 1"),
    (["coordinators", "h:1", "--groups-file", "{empty}"], 1, "names no group"),
    (["coordinators", "h:1", "--groups-file", "{fifo}"], 1, "names no group"),
    (["coordinators", "h:1", "--groups-file", "{directory}"], 1, "is a directory"),
    (["snapshot", "h:1", "--out", "-", "--node-id", "-1"], 2, "--node-id -1: node ids are 0 or more"),
    (["emulate", "--port", "70000"], 2, "not a TCP port: 70000"),
    (["emulate", "--brokers", "0"], 2, "a cluster needs at least one broker"),
    (["emulate", "--release", "3.9", "--release", "2.8", "--brokers", "3"], 2, "given for 3 brokers"),
    (["emulate", "--host", "0.0.0.0"], 2, "unless --allow-non-loopback is given"),
    (["emulate", "--duration", "nan"], 2, "--duration must be a positive number of seconds"),
    (["emulate", "--topic", "a:b"], 2, "--topic a:b: give NAME or NAME:PARTITIONS"),
    (["emulate", "--first-node-id", "-1"], 2, "--first-node-id -1: node ids are 0 or more"),
    (["fleet-generate", "--clusters", "1", "--brokers", "0"], 2, "--brokers must be at least 1, got 0"),
    (["fleet-generate", "--clusters", "1", "--brokers", "1", "--files", "2"], 2, "--files needs --out DIR"),
    (["fleet-generate", "--clusters", "1", "--brokers", "1", "--files", "2", "--out", "{target}"], 1,
     "is a file"),
    (["fleet-report", "--snapshots", "{missing}", "--clients", "{target}", "--out", "{directory}/r"], 1,
     "--snapshots {missing} does not exist"),
    (["fleet-report", "--snapshots", "{target}", "--clients", "{target}", "--out", "{target}"], 1,
     "the report is a folder"),
    (["fleet-report", "--snapshots", "{target}", "--clients", "{target}", "--out", "o", "--conf", "x"], 2,
     "--conf wants KEY=VALUE"),
]


@pytest.mark.parametrize(
    ("argv", "code", "says"), MISTAKES, ids=[" ".join(m[0]) or "(none)" for m in MISTAKES]
)
def test_one_line_the_right_exit_code_no_traceback(
    argv: list[str], code: int, says: str, files: dict[str, str], busy_port: str,
    capsys: pytest.CaptureFixture[str], bounded_memory: None,
) -> None:
    filled = [word.format(**files, busy_port=busy_port) for word in argv]
    started = time.monotonic()
    got = main(filled)
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert (got, says.format(**files) in err) == (code, True), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("kafkacompat"), err
    assert SECRET not in err + out
    assert len(err) < 200, err
    assert elapsed < BOUND


def test_the_symbolic_link_was_not_followed(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["client-profile", "--out", files["link"]]) == 1
    assert Path(files["target"]).read_text() == "" and os.path.islink(files["link"])
    capsys.readouterr()


def _leaf_parsers() -> list[tuple[list[str], argparse.ArgumentParser]]:
    """Every (sub)command that takes options, with the words that reach it."""
    found: list[tuple[list[str], argparse.ArgumentParser]] = []

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs and prefix:
            found.append((prefix, parser))
        for action in subs:
            for name, sub in action.choices.items():
                walk(sub, [*prefix, name])

    walk(build_parser(), [])
    return found


def _typos(option: str) -> list[str]:
    """What fingers type for ``--option``: a letter short, a letter dropped inside, underscores."""
    typos = {option[:-1], option[:4] + option[5:], "--" + option[2:].replace("-", "_")}
    return sorted(t for t in typos if t != option and len(t) > 3)


def test_every_option_of_every_command_mistyped_gets_its_name(capsys: pytest.CaptureFixture[str]) -> None:
    wrong: list[str] = []
    for prefix, parser in _leaf_parsers():
        options = [o for a in parser._actions if a.help != argparse.SUPPRESS for o in a.option_strings]
        for option in (o for o in options if o.startswith("--") and o != "--help"):
            for typo in _typos(option):
                code = main([*prefix, typo, "x"])
                err = capsys.readouterr().err
                if code != 2 or f"did you mean {option}?" not in err or len(err.splitlines()) != 1:
                    wrong.append(f"{' '.join(prefix)} {typo}: {err.strip()}")
    assert not wrong, "\n".join(wrong)
