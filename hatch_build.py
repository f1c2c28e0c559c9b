"""The build hook: compiles the codec's native reader, and never fails the build for it.

``kafkacompat/protocol/_native.c`` is one C file with no dependency but Python's
headers.  It is compiled with the compiler and flags this Python was built with
(``sysconfig``), then loaded once to check it; if there is no compiler, no
headers, or anything goes wrong, the build goes on without it and leaves
``kafkacompat/protocol/_native.build-failed`` saying why: the generated Python
readers are then the codec, and ``kafkacompat --version`` says so.

``pip install -e .`` builds the extension beside its source (an editable
install imports from the tree); a wheel gets it as a platform wheel.
``KAFKACOMPAT_NATIVE=0`` skips it (a pure wheel); ``CC`` and
``KAFKACOMPAT_NATIVE_CFLAGS`` (added flags, e.g. ``-fsanitize=address``) are
honoured.  The source's CRC-32 is compiled in, so that an editable install whose
``_native.c`` changed since is noticed (``codec_path`` then stays on Python).
"""

from __future__ import annotations

import binascii
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.config import BuilderConfig
from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGE_DIR = Path("kafkacompat") / "protocol"
SOURCE = PACKAGE_DIR / "_native.c"
NOTE = PACKAGE_DIR / "_native.build-failed"
MODULE = "kafkacompat.protocol._native"
COMPILE_SECONDS = 300


class NativeBuildError(Exception):
    """Why the native reader was not built (a line for the note)."""


def _command(var: str) -> list[str]:
    value = sysconfig.get_config_var(var)
    if not value:
        raise NativeBuildError(f"this Python has no {var} configured (no C toolchain known)")
    return shlex.split(str(value))


def _run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_SECONDS, check=False)
    except FileNotFoundError:
        raise NativeBuildError(f"no C compiler: {command[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise NativeBuildError(f"{what} took over {COMPILE_SECONDS} s") from None
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise NativeBuildError(f"{what} failed: {lines[0] if lines else f'exit status {done.returncode}'}")


def build_extension(root: Path, target: Path) -> None:
    """Compile and link ``_native.c`` into ``target``, then load it once; NativeBuildError if not."""
    source = root / SOURCE
    include = sysconfig.get_paths().get("include")
    if not include or not (Path(include) / "Python.h").exists():
        raise NativeBuildError("Python's headers (Python.h) are not installed")
    digest = f"{binascii.crc32(source.read_bytes()):08x}"  # as kafkacompat.protocol.codec_path.source_crc
    compiler = shlex.split(os.environ["CC"]) if os.environ.get("CC") else _command("CC")
    extra = shlex.split(os.environ.get("KAFKACOMPAT_NATIVE_CFLAGS", ""))
    linker = _command("LDSHARED")
    if os.environ.get("CC"):
        linker = [*compiler, *linker[1:]]
    with tempfile.TemporaryDirectory() as scratch:
        obj = Path(scratch) / "_native.o"
        _run(
            [
                *compiler,
                *shlex.split(str(sysconfig.get_config_var("CCSHARED") or "")),
                "-O2",
                "-std=c11",
                f"-I{include}",
                f'-DKAFKACOMPAT_NATIVE_CRC32="{digest}"',
                *extra,
                "-c",
                str(source),
                "-o",
                str(obj),
            ],
            "compiling _native.c",
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        _run([*linker, *extra, str(obj), "-o", str(target)], "linking _native")
    check = (
        "import importlib.util as u, sys; "
        f"s = u.spec_from_file_location({MODULE!r}, sys.argv[1]); m = u.module_from_spec(s); "
        "s.loader.exec_module(m); assert m.SOURCE_CRC32 == sys.argv[2]"
    )
    env = dict(os.environ)
    if "-fsanitize=address" in extra:  # loading an ASan build needs the runtime first
        env["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0"
    try:
        subprocess.run(
            [sys.executable, "-c", check, str(target), digest],
            capture_output=True,
            check=True,
            timeout=60,
            env=env,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        target.unlink(missing_ok=True)
        raise NativeBuildError(f"the built module does not load ({exc})") from None


class NativeReaderHook(BuildHookInterface[BuilderConfig]):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        editable = version == "editable"
        in_tree = root / PACKAGE_DIR / f"_native{suffix}"
        self.scratch = None if editable else tempfile.mkdtemp(prefix="kafkacompat-native-")
        target = in_tree if editable else Path(self.scratch or "") / f"_native{suffix}"
        try:
            if editable:
                (root / NOTE).unlink(missing_ok=True)
                in_tree.unlink(missing_ok=True)  # never leave an older build in use
            if os.environ.get("KAFKACOMPAT_NATIVE") == "0":
                raise NativeBuildError("skipped (KAFKACOMPAT_NATIVE=0)")
            if not (root / SOURCE).exists():
                raise NativeBuildError(f"{SOURCE} is missing")
            build_extension(root, target)
        except Exception as exc:  # whatever happens, the build goes on with the Python readers
            reason = str(exc) if isinstance(exc, NativeBuildError) else f"{type(exc).__name__}: {exc}"
            self.app.display_warning(f"kafkacompat: native reader not built, Python readers only: {reason}")
            note = root / NOTE if editable else Path(self.scratch or "") / NOTE.name
            note.write_text(f"{reason}\n", encoding="utf-8")
            if not editable:
                build_data["force_include"][str(note)] = str(NOTE)
            return
        self.app.display_info(f"kafkacompat: native reader built ({target.name})")
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if not editable:
            build_data["force_include"][str(target)] = str(PACKAGE_DIR / target.name)

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
