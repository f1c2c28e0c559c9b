"""The Spark session: local by default, whatever spark-submit says when run under it.

Theory.  The same job must run on a laptop (an embedded local Spark) and,
unchanged, with ``spark-submit`` on a cluster, so nothing in this package
names a master except as the documented default of the API and the command
line.  The master is resolved in this order:

1. the ``master`` argument (``--master`` on the command line);
2. the ``KAFKACOMPAT_SPARK_MASTER`` environment variable;
3. the master of the launching ``spark-submit`` (the driver was started by it
   when ``PYSPARK_GATEWAY_PORT`` is set), or of a session already running in
   this process: we set none and Spark keeps its own;
4. ``DEFAULT_MASTER`` (``local[*]``: every core of this machine).

Other settings pass through ``conf``; anything not set there comes from
spark-submit or ``spark-defaults.conf`` as usual.  One default is ours, and
only for a local master we start: ``spark.sql.shuffle.partitions`` is twice
the cores instead of Spark's 200.  The report's tables after the scan are
small (one row per broker, cluster or client API), and on one machine 200
shuffle partitions per join cost seconds each in task overhead; on a cluster
the administrator's setting is left alone.  And a local JVM this process
starts maps the class-data archive an earlier one wrote, or writes it
(``class_archive``: a fresh JVM's class loading is much of a small fleet's
time; ``CLASS_ARCHIVE_CONF`` says which), and collects garbage with the
parallel collector unless the Java options name a collector (ours are added
to the caller's ``spark.driver.extraJavaOptions``, else to spark-defaults.conf's,
which a value set here would otherwise replace): the
default one (G1) trades throughput for short pauses, which a batch job in
one process does not need (6,000 lines, fresh JVMs alternated: 18.8 and
19.1 s against 20.3 and 20.4 s, 34 s of JVM CPU against 37).  Such a session
also leaves out PySpark's record of the Python call site of each column
function (``spark.python.sql.dataFrameDebugging.enabled``, for the query
context of error messages), unless the caller's conf turns it on: it made
``F.col`` 13 calls into the JVM instead of 3, and the 6,000-line report 21,112
calls instead of 9,996 (21.3 s against 19.9 s, one after the other).  And
when the caller's snapshot files are a small fleet (``snapshots``, local
files of up to ``SMALL_INPUT_BYTES`` in all, which are known before the JVM
starts), the JVM compiles with its first tier only
(``-XX:TieredStopAtLevel=1``): a small fleet's report is over before the
optimizing compiler's work pays off, and that work competes for the same
cores (6,000 lines, fresh JVMs alternated: 19.9 and 20.0 s against 22.9 and
22.3 s); a big scan needs it (1,000,000 lines: 117 s against 35-54 s).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from kafkacompat.pipeline.class_archive import ClassArchive, class_archive

__all__ = [
    "APP_NAME",
    "CLASS_ARCHIVE_CONF",
    "DEFAULT_MASTER",
    "MASTER_ENV",
    "SMALL_INPUT_BYTES",
    "defaults_java_options",
    "fleet_session",
    "local_input_bytes",
    "local_java_options",
    "resolve_master",
    "sql_conf",
]

DEFAULT_MASTER = "local[*]"
MASTER_ENV = "KAFKACOMPAT_SPARK_MASTER"
APP_NAME = "kafkacompat-fleet"
# What the session's JVM did with the class-data archive: "reused PATH" or "created PATH".
CLASS_ARCHIVE_CONF = "spark.kafkacompat.classArchive"
_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
# PySpark records the Python call site of every column function in the JVM (for error
# messages): nine more calls into the JVM per function, see the module docstring.
_CALL_SITES = "spark.python.sql.dataFrameDebugging.enabled"
# A batch job in one JVM wants throughput, not short pauses: see the module docstring.
_THROUGHPUT_GC = "-XX:+UseParallelGC"
# A small fleet's JVM compiles with the first tier only: see the module docstring.
_QUICK_JIT = "-XX:TieredStopAtLevel=1"
#: Snapshot files of up to this many bytes in all are a small fleet (one JVM's fixed costs
#: dominate its report): its plans and, when known before it starts, its JVM are set for that.
SMALL_INPUT_BYTES = 256 << 20


def resolve_master(
    master: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    session_running: bool | None = None,
) -> str | None:
    """The master to set, or None to keep the one spark-submit (or a live session) chose.

    ``environ`` defaults to ``os.environ``; ``session_running`` to whether this
    process already has an active Spark session.
    """
    env = os.environ if environ is None else environ
    if master:
        return master
    if env.get(MASTER_ENV):
        return env[MASTER_ENV]
    running = SparkSession.getActiveSession() is not None if session_running is None else session_running
    if env.get("PYSPARK_GATEWAY_PORT") or running:
        return None
    return DEFAULT_MASTER


def fleet_session(
    master: str | None = None,
    *,
    app_name: str = APP_NAME,
    conf: Mapping[str, str] | None = None,
    snapshots: Sequence[str] = (),
) -> SparkSession:
    """Get (or create) the session for the fleet pipeline; see the module docstring for the master.

    ``snapshots``: the snapshot paths the session is for.  When this starts a
    local JVM and they are local files of a small fleet in all
    (``local_input_bytes``), the JVM compiles with its first tier only (see
    the module docstring).
    """
    builder = SparkSession.builder.appName(app_name)
    chosen = resolve_master(master)
    if chosen is not None:
        builder = builder.master(chosen)
    settings = dict(conf or {})
    if chosen is not None and chosen.startswith("local"):
        settings.setdefault("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 1)))
        if SparkContext._jvm is None:  # the JVM starts now, with these options
            # No Python call site recorded for every column function: see the module docstring.
            settings.setdefault(_CALL_SITES, "false")
            archive = class_archive()
            # Ours are added to the caller's options, or else to those of spark-defaults.conf,
            # which this conf would otherwise replace (a --conf wins over the file).
            own = settings.get(_JAVA_OPTIONS)
            if own is None:
                own = defaults_java_options()
            size = local_input_bytes(snapshots) if snapshots else None  # only for a JVM to start
            small = size is not None and size <= SMALL_INPUT_BYTES
            settings[_JAVA_OPTIONS] = local_java_options(own, archive, small_input=small)
            if archive is not None:
                settings[CLASS_ARCHIVE_CONF] = f"{archive.state} {archive.path}"
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def local_input_bytes(paths: Sequence[str]) -> int | None:
    """The bytes of ``paths`` (files, directories read whole, globs) on this machine's file
    system; None when any is elsewhere (a URI) or missing: Spark lists those, and says so."""
    total = 0
    for path in paths:
        if "://" in path and not path.startswith("file://"):
            return None
        local = path.removeprefix("file://")
        matches = glob.glob(local) if glob.has_magic(local) else [local]
        if not matches:
            return None
        for match in matches:
            found = Path(match)
            if found.is_file():
                total += found.stat().st_size
            elif found.is_dir():
                total += sum(f.stat().st_size for f in found.rglob("*") if f.is_file())
            else:
                return None
    return total


def defaults_java_options(environ: Mapping[str, str] | None = None) -> str:
    """``spark.driver.extraJavaOptions`` as spark-submit would read it from spark-defaults.conf
    (in ``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``, else PySpark's own ``conf``); "" when unset."""
    env = os.environ if environ is None else environ
    if env.get("SPARK_CONF_DIR"):
        folder = Path(env["SPARK_CONF_DIR"])
    elif env.get("SPARK_HOME"):
        folder = Path(env["SPARK_HOME"]) / "conf"
    else:
        import pyspark

        folder = Path(pyspark.__file__).parent / "conf"
    try:
        lines = (folder / "spark-defaults.conf").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    value = ""
    for line in lines:  # Java properties as Spark writes them: "key value" or "key=value"
        text = line.strip()
        if not text or text[0] in "#!":
            continue
        match = re.match(r"([^=:\s]+)\s*[=:]?\s*(.*)$", text)
        if match is not None and match[1] == _JAVA_OPTIONS:
            value = match[2].strip()  # the last one counts
    return value


def local_java_options(own: str, archive: ClassArchive | None, *, small_input: bool = False) -> str:
    """The options of a local JVM this process starts: the caller's, then ours (see the docstring)."""
    options = own
    if not re.search(r"-XX:\+Use\w*GC\b", own):  # the caller's collector, if named, stays
        options += f" {_THROUGHPUT_GC}"
    if small_input and "TieredStopAtLevel" not in own and "TieredCompilation" not in own:
        options += f" {_QUICK_JIT}"
    if archive is not None:
        options += f" {archive.java_options}"
    return options.strip()


@contextmanager
def sql_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """SQL settings for the plans built inside, the session's own restored after."""
    before: dict[str, str | None] = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
