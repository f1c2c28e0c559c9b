"""The local JVM's options: a class-data archive written by one session's JVM, mapped by the next
one's, and the parallel collector unless the caller names one.

Seconds are not asserted (they belong to ``make bench``): what is held is
that a first JVM writes a complete archive under a name of its own, that a
later session adopts it and maps it, that an incomplete file is never
mapped (a JVM mapping a truncated archive dies), and that a JVM already
running, or the switch, leaves everything alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafkacompat.pipeline.class_archive import CDS_ENV, DYNAMIC_ARCHIVE_MAGIC, class_archive
from kafkacompat.pipeline.session import (
    CLASS_ARCHIVE_CONF,
    defaults_java_options,
    fleet_session,
    local_input_bytes,
    local_java_options,
)

KEY = "k" * 16
MAGIC = DYNAMIC_ARCHIVE_MAGIC.to_bytes(4, "little")


def test_a_first_session_writes_under_a_name_of_its_own(tmp_path: Path) -> None:
    first, second = class_archive(tmp_path, KEY), class_archive(tmp_path, KEY)
    assert first is not None and second is not None
    assert first.state == second.state == "created"
    assert first.path != second.path and first.path.parent == tmp_path.resolve()
    assert first.path.name.startswith(KEY) and not first.path.name.endswith(".jsa")
    assert first.java_options.startswith(f"-XX:ArchiveClassesAtExit={first.path} ")


def test_a_finished_file_is_adopted_and_an_unfinished_one_never_mapped(tmp_path: Path) -> None:
    unfinished = tmp_path / f"{KEY}-a.jsa.part"
    unfinished.write_bytes(bytes(4096))  # the JVM writes the header last: zeros until then
    assert class_archive(tmp_path, KEY).state == "created"  # type: ignore[union-attr]
    finished = tmp_path / f"{KEY}-b.jsa.part"
    finished.write_bytes(MAGIC + bytes(4092))
    reused = class_archive(tmp_path, KEY)
    assert reused is not None and reused.state == "reused"
    assert reused.path == (tmp_path / f"{KEY}.jsa").resolve() and reused.path.read_bytes()[:4] == MAGIC
    assert not finished.exists() and unfinished.exists()  # renamed; the other may still be written
    assert reused.java_options.startswith(f"-XX:SharedArchiveFile={reused.path} ")
    (tmp_path / f"{KEY}.jsa").write_bytes(b"garbage!")  # not an archive: written anew, not mapped
    assert class_archive(tmp_path, KEY).state == "created"  # type: ignore[union-attr]


def test_the_switch_turns_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CDS_ENV, "0")
    assert class_archive(tmp_path, KEY) is None


def test_the_parallel_collector_unless_the_caller_names_one(tmp_path: Path) -> None:
    archive = class_archive(tmp_path, KEY)
    assert archive is not None
    assert local_java_options("-Dx=1", archive) == f"-Dx=1 -XX:+UseParallelGC {archive.java_options}"
    assert local_java_options("-XX:+UseG1GC -Dx=1", None) == "-XX:+UseG1GC -Dx=1"
    assert local_java_options("", None) == "-XX:+UseParallelGC"


def test_a_small_fleets_jvm_compiles_with_its_first_tier_only(tmp_path: Path) -> None:
    assert local_java_options("", None, small_input=True) == "-XX:+UseParallelGC -XX:TieredStopAtLevel=1"
    assert "Tiered" not in local_java_options("", None, small_input=False)
    # The caller's own JIT settings stay as they are.
    assert local_java_options("-XX:TieredStopAtLevel=4", None, small_input=True).count("Tiered") == 1
    assert local_java_options("-XX:-TieredCompilation", None, small_input=True).count("Tiered") == 1


def test_the_input_size_is_known_for_local_files_only(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "a.jsonl").write_bytes(b"x" * 10)
    (tmp_path / "d" / "b.jsonl").write_bytes(b"x" * 20)
    (tmp_path / "d" / "sub" / "c.jsonl").write_bytes(b"x" * 40)
    assert local_input_bytes([str(tmp_path / "a.jsonl")]) == 10
    assert local_input_bytes([str(tmp_path / "a.jsonl"), str(tmp_path / "d")]) == 70
    assert local_input_bytes([str(tmp_path / "*.jsonl")]) == 10
    assert local_input_bytes([f"file://{tmp_path / 'a.jsonl'}"]) == 10
    assert local_input_bytes([str(tmp_path / "a.jsonl"), "s3a://bucket/snapshots"]) is None
    assert local_input_bytes([str(tmp_path / "missing.jsonl")]) is None
    assert local_input_bytes([str(tmp_path / "none-*.jsonl")]) is None


def test_spark_defaults_java_options_are_added_to_not_replaced(tmp_path: Path) -> None:
    # A --conf spark.driver.extraJavaOptions replaces the file's value: ours must start from it.
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        "# a comment\n"
        "spark.driver.memory 2g\n"
        "spark.driver.extraJavaOptions  -Dold=1\n"
        "spark.driver.extraJavaOptions=-Dfrom.defaults=1 -XX:+UseG1GC\n"
    )
    assert defaults_java_options({"SPARK_CONF_DIR": str(conf)}) == "-Dfrom.defaults=1 -XX:+UseG1GC"
    assert defaults_java_options({"SPARK_HOME": str(tmp_path)}) == "-Dfrom.defaults=1 -XX:+UseG1GC"
    assert defaults_java_options({"SPARK_CONF_DIR": str(tmp_path / "none")}) == ""
    inherited = defaults_java_options({"SPARK_CONF_DIR": str(conf)})
    assert local_java_options(inherited, None) == "-Dfrom.defaults=1 -XX:+UseG1GC"  # its collector stays


def test_a_running_jvm_is_left_alone(spark: SparkSession) -> None:
    assert fleet_session("local[2]") is spark
    assert spark.conf.get(CLASS_ARCHIVE_CONF, None) is None


_SESSION = f"""
import sys
from kafkacompat.pipeline.session import CLASS_ARCHIVE_CONF, fleet_session, local_java_options
spark = fleet_session("local[1]", conf={{"spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
                                        "spark.driver.bindAddress": "127.0.0.1"}}, snapshots=sys.argv[1:])
management = spark.sparkContext._jvm.java.lang.management
arguments = management.ManagementFactory.getRuntimeMXBean().getInputArguments()
assert spark.range(10).count() == 10
print(spark.conf.get("spark.python.sql.dataFrameDebugging.enabled"))
print(spark.conf.get("{CLASS_ARCHIVE_CONF}"))
words = ("Archive", "GC", "defaults", "Tiered")
print(" ".join(str(a) for a in arguments if any(w in str(a) for w in words)))
"""


def _session(cache: Path, conf_dir: Path | None = None, snapshots: Path | None = None) -> list[str]:
    """A fresh process and JVM; returns its archive state line and its JVM's archive options."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in [root, os.environ.get("PYTHONPATH", "")] if p)
    env = {**os.environ, "KAFKACOMPAT_CACHE_DIR": str(cache), "PYTHONPATH": path}
    env.pop(CDS_ENV, None)
    if conf_dir is not None:
        env["SPARK_CONF_DIR"] = str(conf_dir)
    done = subprocess.run(
        [sys.executable, "-c", _SESSION, *([] if snapshots is None else [str(snapshots)])],
        env=env, capture_output=True, text=True, timeout=300, check=True,
    )
    *_, call_sites, state, options = done.stdout.strip().splitlines()
    assert call_sites == "false"  # no Python call site recorded per column function
    return [state, options]


def test_the_next_jvm_maps_what_the_first_one_wrote(tmp_path: Path) -> None:
    state, options = _session(tmp_path)
    assert state.startswith("created ") and "-XX:ArchiveClassesAtExit=" in options
    assert "-XX:+UseParallelGC" in options.split() and "Tiered" not in options  # size unknown
    written = Path(state.split(" ", 1)[1])
    # The JVM writes it when it exits, which is after its Python process has.
    deadline = time.monotonic() + 120
    while written.read_bytes()[:4] != MAGIC and time.monotonic() < deadline:
        time.sleep(0.2)
    assert written.read_bytes()[:4] == MAGIC
    # The second one also has a spark-defaults.conf with Java options: they reach the JVM too.
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.driver.extraJavaOptions -Dfrom.defaults=1\n")
    small = tmp_path / "snapshots.jsonl"
    small.write_bytes(b"{}\n" * 2_000)
    state, options = _session(tmp_path, conf, snapshots=small)  # and it is for a small fleet
    archive = (tmp_path / "spark-cds" / written.name.split("-")[0]).with_suffix(".jsa")
    assert state == f"reused {archive}" and f"-XX:SharedArchiveFile={archive}" in options
    assert "-Dfrom.defaults=1" in options.split() and "-XX:+UseParallelGC" in options.split()
    assert "-XX:TieredStopAtLevel=1" in options.split()


def test_the_session_finds_the_cache_without_the_testing_kit() -> None:
    # The archive's folder is kafkacompat's cache; finding it must not load the testing kit
    # (trio, the emulator) into a Spark driver.
    code = (
        "import sys, kafkacompat.pipeline.session\n"
        "print(sorted(m for m in sys.modules if m == 'trio' or m.startswith('kafkacompat.testing')))"
    )
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in [root, os.environ.get("PYTHONPATH", "")] if p)
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
