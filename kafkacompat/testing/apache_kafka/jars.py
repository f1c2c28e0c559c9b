"""An Apache Kafka release's jars from Maven Central, fetched once into the cache, and a Java to run them.

``release_home("3.9.1")`` is a folder of the cache (``testing.cache.cache_root``)
holding ``libs/``: the broker artifact ``org.apache.kafka:kafka_<scala>:<release>``
and its runtime dependencies (ZooKeeper among them, for the releases that have
it), plus ``slf4j-simple`` so that the broker's own log lines reach its output.
The first call writes a one-dependency pom and lets ``mvn`` copy the resolved
jars; the Maven repository it downloads into lives in the cache too.  The
release is pinned by its version (Maven Central never changes a published
version), the fetch runs under a lock file (two test sessions wait for each
other) and the finished folder appears atomically, so a half-fetched release
is never seen.  Once it is there, no network and no ``mvn`` are needed.

The Scala suffix depends on the release: ``kafka_2.13`` from 2.4 (the only one
for 4.x), ``kafka_2.12`` or ``kafka_2.11`` before, ``kafka_2.10`` for the
oldest.  They are tried in that order and the first that resolves is kept.

``java_for(home)`` picks the Java that runs it: Java 11 (``java_runtime``,
from PyPI) for a release whose ZooKeeper client is 3.4.13 or 3.4.14 (Kafka
2.0-2.3; that client cannot dial on Java 14 and later), else ``$JAVA_HOME`` or
the ``java`` on ``PATH`` when it is new enough for the class files of
``kafka.Kafka``, else the oldest newer JDK found in the system's JVM folder.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from kafkacompat._cache import cache_root
from kafkacompat.errors import BrokerStartError, ReleaseDownloadError
from kafkacompat.testing.apache_kafka.java_runtime import JAVA_11, pinned_java

__all__ = ["artifact_of", "java_feature", "java_for", "needs_java_11", "parse_release", "release_home"]

_GROUP = "org.apache.kafka"
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies"
_LOGGING_BINDING = ("org.slf4j", "slf4j-simple", "1.7.36")
# What old releases took from Java 8 or from log4j without declaring it at run time (seen when
# they failed to start on Java 17): JAXB for the cluster id of 0.10.1-1.1, log4j 1 for the
# MBeans ZooKeeper 3.4 registers (Kafka 1.1-2.3).
_EXTRAS = (
    ((2, 0), ("javax.xml.bind", "jaxb-api", "2.3.1")),
    ((2, 4), ("log4j", "log4j", "1.2.17")),
)
_DEPENDENCY = (
    "    <dependency><groupId>{}</groupId><artifactId>{}</artifactId><version>{}</version></dependency>\n"
)
_FETCH_TIMEOUT = 900.0
_SYSTEM_JVMS = Path("/usr/lib/jvm")
_MAVEN_CAUSE = re.compile(r"Could not (?:(?:find|resolve|transfer) artifact|resolve dependencies) .*")
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?$")
# The class file's major version is the Java feature release plus 44.
_CLASS_MAJOR_OFFSET = 44
# ZooKeeper clients that read the host to dial from InetSocketAddress.toString(), whose form
# changed in JDK 14 ("127.0.0.1/<unresolved>:2181"): UnresolvedAddressException on Java 14+
# (ZOOKEEPER-3779).  3.4.12 and older resolved the address themselves; 3.5.8 and 3.6.1 fixed it.
_ZOOKEEPER_NEEDING_JAVA_11 = re.compile(r"^zookeeper-3\.4\.1[34]\.jar$")

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkacompat.cache</groupId>
  <artifactId>apache-kafka-release</artifactId>
  <version>{release}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{release}</version></dependency>
    <dependency><groupId>{log_group}</groupId><artifactId>{log_artifact}</artifactId><version>{log_version}</version></dependency>
{extras}  </dependencies>
</project>
"""


def parse_release(release: str) -> tuple[int, ...]:
    """``"2.8.2"`` -> ``(2, 8, 2)``; ``"0.10.2.2"`` -> ``(0, 10, 2, 2)``.  Anything else is refused."""
    match = _RELEASE.match(release)
    if match is None:
        raise BrokerStartError(f"{release!r} is not an Apache Kafka release number (e.g. 3.9.1 or 0.10.2.2)")
    return tuple(int(part) for part in match.groups() if part is not None)


def _scala_candidates(release: str) -> tuple[str, ...]:
    version = parse_release(release)
    if version >= (4,):
        return ("kafka_2.13",)
    if version >= (2, 4):
        return ("kafka_2.13", "kafka_2.12")
    return ("kafka_2.12", "kafka_2.11", "kafka_2.10")


def _cache_dir(cache_dir: Path | None) -> Path:
    return (cache_root() if cache_dir is None else cache_dir) / "apache-kafka"


def artifact_of(home: Path) -> str:
    """The Maven coordinate a fetched release folder was resolved from."""
    return (home / "artifact.txt").read_text().strip()


def release_home(release: str, cache_dir: Path | None = None) -> Path:
    """The folder holding ``libs/`` of ``release``, fetched with ``mvn`` on first use.

    Raises ``ReleaseDownloadError`` (a ``BrokerStartError``) naming the artifact
    when ``mvn`` is missing, Maven Central cannot be reached or the release does
    not exist there.
    """
    parse_release(release)
    cache = _cache_dir(cache_dir)
    home = cache / release
    if (home / "libs").is_dir():
        return home
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{release}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / "libs").is_dir():
            _fetch(release, cache, home)
    return home


def _fetch(release: str, cache: Path, home: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ReleaseDownloadError(f"mvn is needed to fetch Apache Kafka {release} and is not on PATH")
    causes = []
    for artifact in _scala_candidates(release):
        coordinate = f"{_GROUP}:{artifact}:{release}"
        with tempfile.TemporaryDirectory(dir=cache, prefix=f".fetch-{release}-") as work:
            staging = Path(work) / release
            (staging / "libs").mkdir(parents=True)
            cause = _copy_dependencies(mvn, release, artifact, cache / ".maven-repository", staging)
            if cause is None:
                (staging / "artifact.txt").write_text(coordinate + "\n")
                staging.rename(home)  # atomic: a half-fetched release is never seen
                return
            causes.append(f"{coordinate}: {cause}")
    raise ReleaseDownloadError(
        f"cannot fetch Apache Kafka {release} from Maven Central; " + "; ".join(causes)
    )


def _copy_dependencies(mvn: str, release: str, artifact: str, repository: Path, staging: Path) -> str | None:
    """Resolve one artifact into ``staging/libs``; the reason it failed, or None."""
    log_group, log_artifact, log_version = _LOGGING_BINDING
    pom = staging / "pom.xml"
    extras = "".join(
        _DEPENDENCY.format(*coordinate) for before, coordinate in _EXTRAS if parse_release(release) < before
    )
    pom.write_text(
        _POM.format(
            extras=extras,
            release=release,
            group=_GROUP,
            artifact=artifact,
            log_group=log_group,
            log_artifact=log_artifact,
            log_version=log_version,
        )
    )
    command = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(pom),
        f"-Dmaven.repo.local={repository}",
        _DEPENDENCY_PLUGIN,
        f"-DoutputDirectory={staging / 'libs'}",
        "-DincludeScope=runtime",
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, timeout=_FETCH_TIMEOUT, check=False, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return f"mvn took over {_FETCH_TIMEOUT:.0f}s"
    pom.unlink()
    if done.returncode == 0 and any((staging / "libs").glob(f"{artifact}-{release}.jar")):
        return None
    output = (done.stdout + done.stderr).decode(errors="replace")
    cause = _MAVEN_CAUSE.search(output)
    errors = [line for line in output.splitlines() if line.startswith("[ERROR]") and len(line) > 8]
    found = cause.group(0) if cause else errors[0] if errors else output.strip()[-500:]
    return (found or f"mvn exited with {done.returncode}")[:500]


# -- which Java ------------------------------------------------------------------------------


def _class_major(home: Path) -> int | None:
    """The class-file major version of ``kafka.Kafka`` in the release's broker jar."""
    for jar in sorted((home / "libs").glob("kafka_2.1*.jar")):
        with zipfile.ZipFile(jar) as archive:
            try:
                header = archive.open("kafka/Kafka.class").read(8)
            except KeyError:
                continue
            return int.from_bytes(header[6:8], "big")
    return None


def java_feature(java: Path) -> int | None:
    """The feature release (17, 25, ...) of a java executable, from its home's ``release`` file."""
    release_file = java.resolve().parent.parent / "release"
    try:
        text = release_file.read_text()
    except OSError:
        return None
    match = re.search(r'^JAVA_VERSION="(?:1\.)?(\d+)', text, re.MULTILINE)
    return int(match.group(1)) if match else None


def _default_java() -> Path | None:
    configured = os.environ.get("JAVA_HOME")
    candidate = str(Path(configured) / "bin" / "java") if configured else shutil.which("java")
    if candidate is None or not os.access(candidate, os.X_OK):
        return None
    return Path(candidate)


def needs_java_11(home: Path) -> bool:
    """Whether ``home``'s release ships a ZooKeeper client that cannot dial on Java 14 or newer."""
    return any(_ZOOKEEPER_NEEDING_JAVA_11.match(jar.name) for jar in (home / "libs").glob("zookeeper-*.jar"))


def java_for(home: Path, release: str, cache_dir: Path | None = None) -> str:
    """The java executable that runs ``home``'s release (see the module's docstring)."""
    if needs_java_11(home):
        return str(pinned_java(JAVA_11, cache_dir))
    major = _class_major(home)
    needed = None if major is None else major - _CLASS_MAJOR_OFFSET
    default = _default_java()
    if default is not None and (needed is None or (java_feature(default) or needed) >= needed):
        return str(default)
    newer = []
    for java in sorted(_SYSTEM_JVMS.glob("*/bin/java")) if _SYSTEM_JVMS.is_dir() else ():
        feature = java_feature(java)
        if feature is not None and (needed is None or feature >= needed) and os.access(java, os.X_OK):
            newer.append((feature, str(java)))
    if newer:
        return min(newer)[1]
    wanted = "a java executable" if needed is None else f"Java {needed} or newer"
    raise BrokerStartError(
        f"Apache Kafka {release} needs {wanted} (JAVA_HOME, PATH or {_SYSTEM_JVMS}); none found"
    )
