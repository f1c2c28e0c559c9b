"""Every mistake a user can type, through every subcommand: one line, the documented exit code, no traceback.

Exit status 2 for a command line that cannot be read (an unknown command,
option, choice or release; a missing or malformed value), 1 for an expected
failure (a file that is not there or not text, a port in use).  Each answer is
one line on stderr, names what was wrong (and the closest right spelling when
there is one), never echoes a secret, and comes quickly: nothing here waits
on the network.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkacompat.cli import main

SECRET = "Wonderland-0xC0FFEE"
BOUND = 5.0  # seconds: none of these may wait for anything


@pytest.fixture
def files(tmp_path: Path) -> Iterator[dict[str, str]]:
    binary = tmp_path / "binary.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    users = tmp_path / "users"
    users.write_text("alice\n")
    yield {
        "binary": str(binary),
        "missing": str(tmp_path / "nope.txt"),
        "directory": str(tmp_path),
        "link": str(link),
        "target": str(target),
        "users": str(users),
    }


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
    (["emulate", "--sasl-users-file", "{users}"], 2, "entry 1 of --sasl-users-file"),
    (["emulate", "--port", "{busy_port}", "--duration", "1"], 1, "is already in use"),
    (["emulate", "--brokers", "many"], 2, "argument --brokers: invalid int value: 'many'"),
    (["fleet-generate", "--clusters", "1"], 2, "the following arguments are required: --brokers"),
    (["client-profile", "--out", "{link}"], 1, "is a symbolic link; refusing to write through it"),
    (["fleet-generate", "--clusters", "1", "--brokers", "1", "--out", "{link}"], 1, "is a symbolic link"),
    (["record"], 2, "required"),
    (["check", "{missing}", "--release", "3.9", "--bogus"], 2, "unrecognized argument: --bogus"),
]


@pytest.mark.parametrize(
    ("argv", "code", "says"), MISTAKES, ids=[" ".join(m[0]) or "(none)" for m in MISTAKES]
)
def test_one_line_the_right_exit_code_no_traceback(
    argv: list[str], code: int, says: str, files: dict[str, str], busy_port: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    filled = [word.format(**files, busy_port=busy_port) for word in argv]
    started = time.monotonic()
    got = main(filled)
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert (got, says in err) == (code, True), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("kafkacompat"), err
    assert SECRET not in err + out
    assert len(err) < 220, err
    assert elapsed < BOUND


def test_the_symbolic_link_was_not_followed(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["client-profile", "--out", files["link"]]) == 1
    assert Path(files["target"]).read_text() == "" and os.path.islink(files["link"])
    capsys.readouterr()
