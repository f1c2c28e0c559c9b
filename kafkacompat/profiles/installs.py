"""Client releases in four languages, installed into the cache, and the command that runs their traffic.

Theory.  A measured profile is only as good as the release it was measured
from, so each release is pinned (``CLIENTS``) and installed into a directory
of its own under the kafkacompat cache, never into the running environment:
Python releases with ``pip install --target``, Java's ``kafka-clients`` jars
(and what they need) from Maven Central through ``mvn`` with a local
repository in the cache, Go clients as one small module each built with the
Go module proxy (``GOPATH``, ``GOMODCACHE`` and ``GOCACHE`` in the cache),
Node clients with ``npm install --prefix`` (Confluent's librdkafka binding,
whose install script fetches a prebuilt binary from GitHub, is built from its
npm tarball instead: ``_npm_built``).  A directory is used only once
its install finished (a ``.complete`` marker); a failed install is an
``InstallError`` naming the release and the tool's last words.

Every language runs the same application traffic (``kafkacompat.testing.
client_traffic`` for Python; ``clients/`` for the others) and speaks the same
step lines, so ``client_traffic.read_report`` reads them all.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from kafkacompat.errors import InstallError

__all__ = ["CLIENTS", "ClientRelease", "go_env", "install", "traffic_command"]

PROGRAMS = Path(__file__).resolve().parent / "clients"
ROOT = Path(__file__).resolve().parent.parent.parent
_INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True, slots=True)
class ClientRelease:
    language: str  # python, java, go, node
    library: str  # as profiles name it
    release: str
    package: str  # the registry's name (PyPI, Maven, Go module, npm)
    pins: tuple[str, ...] = ()  # further packages the release needs, pinned

    @property
    def slug(self) -> str:
        return f"{self.library}-{self.release}".replace("/", "-").replace("@", "")


# Old to new in each language.  aiokafka before 0.9 imports kafka-python's internals (kafka.conn),
# gone in kafka-python 3.x, hence its pin.
CLIENTS: tuple[ClientRelease, ...] = (
    ClientRelease("python", "kafka-python", "2.0.2", "kafka-python"),
    ClientRelease("python", "kafka-python", "2.2.21", "kafka-python"),
    ClientRelease("python", "kafka-python", "3.0.12", "kafka-python"),
    ClientRelease("python", "aiokafka", "0.8.1", "aiokafka", ("kafka-python==2.0.2",)),
    ClientRelease("python", "aiokafka", "0.11.0", "aiokafka"),
    ClientRelease("python", "aiokafka", "0.14.0", "aiokafka"),
    ClientRelease("python", "confluent-kafka", "2.0.2", "confluent-kafka"),
    ClientRelease("python", "confluent-kafka", "2.6.1", "confluent-kafka"),
    ClientRelease("python", "confluent-kafka", "2.16.1", "confluent-kafka"),
    ClientRelease("java", "kafka-clients", "0.10.2.2", "org.apache.kafka:kafka-clients"),
    ClientRelease("java", "kafka-clients", "1.1.1", "org.apache.kafka:kafka-clients"),
    ClientRelease("java", "kafka-clients", "2.0.1", "org.apache.kafka:kafka-clients"),
    ClientRelease("java", "kafka-clients", "2.8.2", "org.apache.kafka:kafka-clients"),
    ClientRelease("java", "kafka-clients", "3.9.1", "org.apache.kafka:kafka-clients"),
    ClientRelease("java", "kafka-clients", "4.0.0", "org.apache.kafka:kafka-clients"),
    ClientRelease("go", "sarama", "1.40.1", "github.com/IBM/sarama"),
    ClientRelease("go", "sarama", "1.61.1", "github.com/IBM/sarama"),
    ClientRelease(
        "go", "franz-go", "1.22.3", "github.com/twmb/franz-go", ("github.com/twmb/franz-go/pkg/kadm@v1.20.0",)
    ),
    ClientRelease("go", "kafka-go", "0.4.51", "github.com/segmentio/kafka-go"),
    ClientRelease("node", "kafkajs", "1.16.0", "kafkajs"),
    ClientRelease("node", "kafkajs", "2.2.4", "kafkajs"),
    # Confluent's librdkafka binding: built here from its npm tarball (``_npm_built``).
    ClientRelease("node", "confluent-kafka-javascript", "1.10.1", "@confluentinc/kafka-javascript"),
)
# Node packages whose install script fetches a prebuilt binary from GitHub (which this machine
# may not reach): built from the npm tarball instead, with the bundled sources.
_BUILT_FROM_SOURCE = frozenset({"@confluentinc/kafka-javascript"})
_NODE_GYP = "node-gyp@11.5.0"


def _run(
    argv: list[str], what: ClientRelease, cwd: Path | None = None, env: dict[str, str] | None = None
) -> None:
    tool = shutil.which(argv[0])
    if tool is None:
        raise InstallError(
            f"{what.library} {what.release}: {argv[0]} is not installed; it is needed to install it"
        )
    try:
        done = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise InstallError(
            f"{what.library} {what.release}: {argv[0]} took over {_INSTALL_TIMEOUT_S} s"
        ) from None
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
        raise InstallError(f"{what.library} {what.release}: {' '.join(argv[:3])} failed: {' | '.join(last)}")


def install(what: ClientRelease, cache: Path) -> Path:
    """The release's own directory under ``cache``, installed (and built) on first use.

    Under a lock file per release: another process installing it meanwhile is
    waited for, and its finished install used.
    """
    target = cache / what.language / what.slug
    marker = target / ".complete"
    stamp = _programs_digest(what.language)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{what.slug}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists() and marker.read_text().strip() == stamp:
            return target
        if target.exists():
            shutil.rmtree(target)  # an install that did not finish, or built from other programs
        target.mkdir(parents=True)
        installer = _npm_built if what.package in _BUILT_FROM_SOURCE else _INSTALLERS[what.language]
        installer(what, target, cache)
        marker.write_text(stamp + "\n")
    return target


def _programs_digest(language: str) -> str:
    """What the build depends on besides the release: the language's traffic programs."""
    digest = hashlib.sha256()
    folder = PROGRAMS / language
    for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return f"programs {digest.hexdigest()[:16]}"


def _pip(what: ClientRelease, target: Path, cache: Path) -> None:
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--target",
            str(target),
            f"{what.package}=={what.release}",
            *what.pins,
        ],
        what,
    )


_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkacompat.profiles</groupId><artifactId>traffic</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{release}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
"""


def _maven(what: ClientRelease, target: Path, cache: Path) -> None:
    """The jars (Maven Central, through ``mvn``), then ``Traffic`` compiled against them."""
    group, _, artifact = what.package.partition(":")
    (target / "pom.xml").write_text(_POM.format(group=group, artifact=artifact, release=what.release))
    repository = cache / "java" / "m2"
    _run(
        [
            "mvn",
            "-q",
            "-B",
            f"-Dmaven.repo.local={repository}",
            "dependency:copy-dependencies",
            f"-DoutputDirectory={target / 'lib'}",
        ],
        what,
        cwd=target,
    )
    classes = target / "classes"
    classes.mkdir()
    classpath = str(target / "lib" / "*")
    _run(
        ["javac", "-nowarn", "-d", str(classes), "-cp", classpath, str(PROGRAMS / "java" / "Traffic.java")],
        what,
    )
    # Steps a release may not have: each compiled when the release has its API, else left out.
    for optional in ("TopicAdmin.java", "GroupAdmin.java", "Transaction.java"):
        try:
            _run(
                [
                    "javac",
                    "-nowarn",
                    "-d",
                    str(classes),
                    "-cp",
                    f"{classes}:{classpath}",
                    str(PROGRAMS / "java" / optional),
                ],
                what,
            )
        except InstallError:
            continue


def go_env(cache: Path) -> dict[str, str]:
    """The environment that builds Go programs with their modules and build cache in ``cache``."""
    root = cache / "go"
    return {
        **os.environ,
        "GOPATH": str(root / "path"),
        "GOMODCACHE": str(root / "mod"),
        "GOCACHE": str(root / "build"),
        "GOFLAGS": "-mod=mod",
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
    }


def _go(what: ClientRelease, target: Path, cache: Path) -> None:
    """A module of its own around the client's program, built once with the Go module proxy."""
    source = PROGRAMS / "go" / what.library / "main.go"
    shutil.copy(source, target / "main.go")
    shutil.copy(PROGRAMS / "go" / "steps.go", target / "steps.go")
    env = go_env(cache)
    _run(["go", "mod", "init", f"kafkacompat.profiles/{what.library}"], what, cwd=target, env=env)
    _run(["go", "get", f"{what.package}@v{what.release}", *what.pins], what, cwd=target, env=env)
    _run(["go", "mod", "tidy"], what, cwd=target, env=env)
    _run(["go", "build", "-o", "traffic", "."], what, cwd=target, env=env)


def _npm(what: ClientRelease, target: Path, cache: Path) -> None:
    _run(
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--cache",
            str(cache / "node" / "npm"),
            "--prefix",
            str(target),
            f"{what.package}@{what.release}",
        ],
        what,
    )


def _npm_built(what: ClientRelease, target: Path, cache: Path) -> None:
    """The npm tarball, unpacked and built with the machine's compiler and node's own headers.

    The package's install script would fetch a prebuilt binary from GitHub; its
    tarball bundles librdkafka's sources instead.  Its runtime dependencies come
    from npm without running scripts; node-gyp (pinned) builds it, told where
    node's headers are (it would fetch them from nodejs.org); librdkafka links
    against the machine's OpenSSL and zlib (``CKJS_LINKING=dynamic``; the static
    default builds them from sources fetched from GitHub) and is configured
    before node-gyp's build, whose rule for that names the generated header
    with a path the next rule does not find.
    """
    npm_cache = ["--cache", str(cache / "node" / "npm")]
    quiet = ["--no-audit", "--no-fund", "--loglevel=error"]
    packed = f"{what.package}@{what.release}"
    _run(["npm", "pack", packed, *npm_cache, "--pack-destination", str(target)], what)
    tarball = next(target.glob("*.tgz"), None)
    if tarball is None:
        raise InstallError(f"{what.library} {what.release}: npm pack left no tarball in {target}")
    home = target / "node_modules" / what.package
    home.mkdir(parents=True)
    with tarfile.open(tarball) as archive:
        for member in archive.getmembers():
            member.name = member.name.partition("/")[2]  # the tarball's top folder is "package/"
        archive.extractall(home, members=[m for m in archive.getmembers() if m.name], filter="data")
    tarball.unlink()
    _run(["npm", "install", "--omit=dev", "--ignore-scripts", *quiet, *npm_cache], what, cwd=home)
    tools = target / "build-tools"
    _run(["npm", "install", *quiet, *npm_cache, "--prefix", str(tools), _NODE_GYP], what)
    node_gyp = ["node", str(tools / "node_modules" / "node-gyp" / "bin" / "node-gyp.js")]
    env = {**os.environ, "CKJS_LINKING": "dynamic", "JOBS": "2"}
    _run(["node", "util/configure"], what, cwd=home, env=env)
    _run([*node_gyp, "configure", f"--nodedir={_node_headers(what)}"], what, cwd=home, env=env)
    _run([*node_gyp, "build", "-j", "2"], what, cwd=home, env=env)
    shutil.rmtree(tools)
    for leftover in [*home.glob("deps/**/*.[oa]"), *home.glob("build/deps/*.a")]:
        leftover.unlink()  # objects and static archives: the binding loads build/deps/librdkafka*.so


def _node_headers(what: ClientRelease) -> Path:
    """The prefix of the running node whose ``include/node`` has its headers (Debian's, NodeSource's)."""
    node = shutil.which("node")
    if node is None:
        raise InstallError(f"{what.library} {what.release}: node is not installed; it is needed to build it")
    prefix = Path(node).resolve().parent.parent
    if not (prefix / "include" / "node" / "node.h").is_file():
        raise InstallError(
            f"{what.library} {what.release}: no node headers at {prefix / 'include' / 'node'} "
            "(node-gyp would fetch them from nodejs.org); install node's development headers"
        )
    return prefix


_INSTALLERS = {"python": _pip, "java": _maven, "go": _go, "node": _npm}


def traffic_command(
    what: ClientRelease, target: Path, bootstrap: str, request_timeout_s: float | None
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run the release's traffic against ``bootstrap``."""
    timeout = [] if request_timeout_s is None else ["--request-timeout", str(request_timeout_s)]
    if what.language == "python":
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
        return [
            sys.executable,
            "-m",
            "kafkacompat.testing.client_traffic",
            *timeout,
            what.library,
            bootstrap,
        ], env
    seconds = str(request_timeout_s or 0)
    if what.language == "java":
        classpath = f"{target / 'classes'}:{target / 'lib' / '*'}"
        argv = [
            "java",
            "-Xshare:auto",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Xmx256m",
            "-cp",
            classpath,
            "Traffic",
            what.library,
            what.release,
            bootstrap,
            seconds,
        ]
        return argv, dict(os.environ)
    if what.language == "go":
        return [str(target / "traffic"), what.library, what.release, bootstrap, seconds], dict(os.environ)
    env = {**os.environ, "NODE_PATH": str(target / "node_modules")}
    script = PROGRAMS / "node" / f"{what.library}.js"
    return ["node", str(script), what.library, what.release, bootstrap, seconds], env
