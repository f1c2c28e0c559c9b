"""The native reader: its tables, its build, its switch, and its ceilings.

The codec tests in general run on both paths (tests/conftest.py's
``each_codec_path``); these are about the native path itself.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import hatch_build
from kafkacompat._codegen import render_layouts
from kafkacompat.errors import ConfigError, DecodeError
from kafkacompat.protocol import _wire, codec_path
from kafkacompat.protocol.messages import ApiVersionsResponse, MetadataResponse
from tests.support.codec_paths import compiler_present, native_reads, on_path
from tests.support.codec_strategies import all_message_classes

ROOT = Path(__file__).resolve().parents[3]


def native_module() -> Any:
    """The built native module; a failure where a compiler is present, else a skip."""
    module, why = codec_path._load_native()
    if module is None:
        if compiler_present():
            pytest.fail(f"a C compiler is here but the native reader is not usable: {why}")
        pytest.skip(f"no C compiler here: {why}")
    return module


def test_the_c_module_and_the_generator_number_ops_alike() -> None:
    native = native_module()
    flags = {"nullable": render_layouts.NULLABLE, "compact": render_layouts.COMPACT,
             "array": render_layouts.ARRAY, "keyed": render_layouts.KEYED}
    assert {**render_layouts.KINDS, **flags} == native.OPS
    assert native.DEFAULT_MODES == render_layouts.DEFAULT_MODES


def test_the_native_reader_is_in_use_where_it_is_built() -> None:
    native_module()
    if os.environ.get(codec_path.ENV) == codec_path.PURE:
        assert codec_path.current() == codec_path.PURE
        return
    assert codec_path.current() == codec_path.NATIVE
    assert codec_path.describe().startswith("native")
    reader = MetadataResponse._READERS[12]
    assert type(reader).__module__ == "kafkacompat.protocol._native"
    body = MetadataResponse(controller_id=3).encode(12)
    before = reader.fallbacks
    assert MetadataResponse.decode(body, 12).controller_id == 3
    assert reader.fallbacks == before  # read natively, not handed over


def test_every_layout_table_compiles() -> None:
    native_module()
    with on_path(codec_path.NATIVE):
        readers = {id(r): r for cls in all_message_classes() for r in cls._READERS.values()}
        for reader in readers.values():
            reader.compile()  # every slot name found, every op and default known
    # one native reader per Python reader: versions of one layout share both
    assert len(readers) == len({id(r.fallback) for r in readers.values()}) > 500


def test_use_switches_every_loaded_class_and_refuses_an_unknown_path() -> None:
    native_module()
    with on_path(codec_path.PURE):
        assert MetadataResponse._READERS[12].__name__ == "_r_MetadataResponse_10"
        assert codec_path.describe().startswith("pure Python")
    with on_path(codec_path.NATIVE):
        assert MetadataResponse._READERS[12].fallback.__name__ == "_r_MetadataResponse_10"
    with pytest.raises(ConfigError, match="unknown codec path"):
        codec_path.use("compiled")  # type: ignore[arg-type]


def test_the_version_line_names_the_path_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    from kafkacompat.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version"])
    assert f"(codec: {codec_path.describe()})" in capsys.readouterr().out


def test_the_environment_starts_a_process_on_the_python_readers() -> None:
    probe = "from kafkacompat.protocol import codec_path as p; print(p.current(), '|', p.describe())"
    env = {**os.environ, codec_path.ENV: codec_path.PURE}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pure | pure Python, chosen by KAFKACOMPAT_CODEC=pure" or (
        codec_path.native_unavailable() is not None and out.stdout.startswith("pure | pure Python; ")
    )


def test_a_build_from_another_source_is_not_used(tmp_path: Path) -> None:
    native_module()
    other = tmp_path / "_native.c"
    other.write_text("/* not the source it was built from */\n")
    module, why = codec_path._load_native(str(other))
    assert module is None and why is not None and "reinstall" in why


# -- the ceilings, on both paths ---------------------------------------------------------------


def refused_without_allocating(cls: type[Any], body: bytes, version: int, match: str) -> DecodeError:
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match=match) as caught:
            cls.decode(body, version)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024, f"{peak} bytes allocated before refusing"
    if codec_path.current() == codec_path.NATIVE:
        assert not native_reads(cls, body, version)
    return caught.value


@pytest.mark.usefixtures("each_codec_path")
def test_a_compact_count_above_a_million_is_refused_before_anything_is_allocated() -> None:
    room = bytes(_wire.MAX_ARRAY_ELEMENTS + 8)
    body = bytes(4) + _wire.uvarint(_wire.MAX_ARRAY_ELEMENTS + 2) + room  # throttle, then brokers
    error = refused_without_allocating(MetadataResponse, body, 12, "above the limit of 1000000")
    assert error.offset == 4


@pytest.mark.usefixtures("each_codec_path")
def test_a_classic_count_above_a_million_is_refused_before_anything_is_allocated() -> None:
    body = struct.pack(">i", _wire.MAX_ARRAY_ELEMENTS + 1) + bytes(_wire.MAX_ARRAY_ELEMENTS + 8)
    error = refused_without_allocating(MetadataResponse, body, 0, "above the limit of 1000000")
    assert error.offset == 0


@pytest.mark.usefixtures("each_codec_path")
def test_a_count_beyond_the_bytes_left_is_refused_at_once() -> None:
    body = bytes(4) + _wire.uvarint(2**31) + bytes(5)
    error = refused_without_allocating(MetadataResponse, body, 12, "exceeds the 5 bytes left")
    assert error.offset == 4


@pytest.mark.usefixtures("each_codec_path")
def test_a_long_array_whose_first_element_is_bad_allocates_nothing_for_the_rest() -> None:
    count = _wire.MAX_ARRAY_ELEMENTS  # at the limit, and within the bytes left: accepted as a count
    body = bytes(4) + _wire.uvarint(count + 1) + bytes(count + 8)  # broker 0's host is a null: refused
    error = refused_without_allocating(MetadataResponse, body, 12, "non-nullable field host was null")
    assert error.offset is not None


@pytest.mark.usefixtures("each_codec_path")
def test_a_tagged_section_above_ten_thousand_fields_is_refused_before_it_is_read() -> None:
    body = ApiVersionsResponse().encode(3)[:-1] + _wire.uvarint(_wire.MAX_TAGGED_FIELDS + 1) + bytes(30_000)
    refused_without_allocating(ApiVersionsResponse, body, 3, "above the limit of 10000")


# -- the build hook ----------------------------------------------------------------------------


def test_the_hook_builds_a_module_that_loads(tmp_path: Path) -> None:
    if not compiler_present():
        pytest.skip("no C compiler here")
    target = tmp_path / "_native.so"
    hatch_build.build_extension(ROOT, target)  # compiles, links and loads it in a fresh interpreter
    assert target.stat().st_size > 10_000


def test_without_a_compiler_the_build_goes_on_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(hatch_build.NativeBuildError, match="no C compiler"):
        hatch_build.build_extension(ROOT, tmp_path / "_native.so")
    warnings: list[str] = []
    app = SimpleNamespace(display_warning=warnings.append, display_info=warnings.append)
    hook = hatch_build.NativeReaderHook(str(ROOT), {}, None, None, str(tmp_path), "wheel", app)
    build_data: dict[str, Any] = {"force_include": {}}
    hook.initialize("standard", build_data)  # a wheel: it must not raise
    assert "pure_python" not in build_data  # still a pure wheel
    ((note, where),) = build_data["force_include"].items()
    assert where == str(hatch_build.NOTE) and "no C compiler" in Path(note).read_text()
    assert warnings and "Python readers only" in warnings[0]
    hook.finalize("standard", build_data, "")
    assert not Path(note).exists()
    assert sys.modules["kafkacompat.protocol.codec_path"] is codec_path
