"""The package as a user installs it: the wheel built from this tree, with no extras, in a fresh venv.

``python -m build`` makes the wheel; it is installed with no extras into a
venv of its own, outside the tree and with no ``PYTHONPATH``, so only what
the wheel declares is importable.  Then ``kafkacompat --version``, every
subcommand's ``--help`` and an inspection of an emulated broker (both run by
the installed entry point) must work: the package's entry points never import
a development or test dependency.

The venv with the package's dependencies is kept in the kafkacompat cache,
keyed by the Python version and the dependency list of pyproject.toml; each
run installs the freshly built wheel into it without dependencies.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkacompat._cache import cache_root
from tests.support.codec_paths import compiler_present

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120.0
# Prints the subcommands the installed parser has (argparse keeps them in the subparsers action).
LIST_COMMANDS = (
    "import argparse; from kafkacompat.cli import build_parser; "
    "print(*[n for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)"
    " for n in a.choices])"
)


def _run(argv: list[str], *, cwd: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _dependency_venv() -> Path:
    """A venv holding the package's declared dependencies only (no extras), made once per dependency list."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    key = hashlib.sha256(
        repr((sys.version_info[:2], sorted(project["dependencies"]))).encode()
    ).hexdigest()[:16]
    venv = cache_root() / "wheel-venvs" / key
    ready = venv / ".ready"
    if not ready.exists():
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=venv.parent)
        assert made.returncode == 0, made.stderr
        if project["dependencies"]:
            installed = _run(
                [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                 "--quiet", *project["dependencies"]],
                cwd=venv.parent,
                timeout=600,
            )
            assert installed.returncode == 0, installed.stderr
        ready.touch()
    return venv


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The ``bin`` folder of a venv where the wheel built from this tree is installed, no extras."""
    dist = tmp_path_factory.mktemp("dist")
    built = _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)], cwd=dist)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("kafkacompat-*.whl")
    venv = _dependency_venv()
    put = _run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
         "--no-deps", "--force-reinstall", str(wheel)],
        cwd=dist,
    )
    assert put.returncode == 0, put.stderr
    yield venv / "bin"


def test_the_installed_package_is_the_wheel_and_brings_no_dev_dependency(
    installed: Path, tmp_path: Path
) -> None:
    probe = _run(
        [str(installed / "python"), "-c",
         "import importlib.util as u, kafkacompat; print(kafkacompat.__file__); "
         "print(*[m for m in ('scramp', 'pytest', 'pyspark', 'rich', 'confluent_kafka', 'hypothesis')"
         " if u.find_spec(m)])"],
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    location, dev_modules = probe.stdout.splitlines()
    assert Path(location).is_relative_to(installed.parent), location
    assert dev_modules == ""


def test_version_and_every_help(installed: Path, tmp_path: Path) -> None:
    kafkacompat = str(installed / "kafkacompat")
    version = _run([kafkacompat, "--version"], cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("kafkacompat "), version.stderr
    if compiler_present():  # the build made the native reader here: the wheel must be using it
        assert "(codec: native," in version.stdout, version.stdout
    top = _run([kafkacompat, "--help"], cwd=tmp_path)
    assert top.returncode == 0, top.stderr
    listed = _run([str(installed / "python"), "-c", LIST_COMMANDS], cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    names = listed.stdout.split()
    assert {"inspect", "emulate", "snapshot", "fleet-report", "check"} <= set(names)
    for name in names:
        helped = _run([kafkacompat, name, "--help"], cwd=tmp_path)
        assert helped.returncode == 0 and "usage: kafkacompat " + name in helped.stdout, (name, helped.stderr)
    for sub in ("describe", "upgrade", "downgrade", "disable"):
        helped = _run([kafkacompat, "features", sub, "--help"], cwd=tmp_path)
        assert helped.returncode == 0, (sub, helped.stderr)


def test_an_inspection_of_an_emulated_broker(installed: Path, tmp_path: Path) -> None:
    kafkacompat = str(installed / "kafkacompat")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    emulator = subprocess.Popen(
        [kafkacompat, "emulate", "--release", "2.8", "--duration", "60"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert emulator.stdout is not None
        first = emulator.stdout.readline()
        assert first.startswith("bootstrap: "), first + (emulator.stderr.read() if emulator.stderr else "")
        bootstrap = first.split()[1]
        inspected = _run([kafkacompat, "inspect", bootstrap], cwd=tmp_path, timeout=60)
        assert inspected.returncode == 0, inspected.stderr
        assert "Release guess: Kafka 2.8" in inspected.stdout
    finally:
        emulator.terminate()
        emulator.wait(timeout=30)
