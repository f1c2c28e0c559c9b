"""Run an older librdkafka's mock cluster: the one inside confluent-kafka 2.0.2 (librdkafka 2.0.2).

librdkafka ships a mock Kafka cluster (``test.mock.num.brokers``) that lives
as long as the client that made it.  ``LibrdkafkaMockBroker`` runs such a
client in a child Python process, so that an older confluent-kafka than the
one installed can be used side by side: its wheel is installed with
``pip install --target`` into a cache directory on first use (one download,
then reused; ``KAFKACOMPAT_CACHE_DIR`` moves the cache, default
``~/.cache/kafkacompat``).  The child reports the mock brokers' addresses on
stdout and keeps the mock alive until its stdin closes, which ``stop`` does.

What librdkafka 2.0.2's mock answers (observed): ApiVersions 0-2; to v3 and
above, UNSUPPORTED_VERSION whose ApiKeys array says 0 entries and is followed
by one entry anyway (ApiVersions 0-2); Metadata 0-2; FindCoordinator 0-2
(one key per request).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from kafkacompat._cache import cache_root
from kafkacompat.errors import BrokerStartError
from kafkacompat.testing.process import BrokerProcess

__all__ = ["OLD_CONFLUENT_KAFKA", "LibrdkafkaMockBroker", "install_confluent_kafka"]

#: The confluent-kafka release (and so the bundled librdkafka) the launcher runs.
OLD_CONFLUENT_KAFKA = "2.0.2"
_INSTALL_TIMEOUT = 600.0
_READY_MARK = "kafkacompat-librdkafka-mock "

# The child: make the mock, print where its brokers are, live until stdin closes.
_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import confluent_kafka
if confluent_kafka.version()[0] != sys.argv[3]:
    sys.exit(f"expected confluent-kafka {sys.argv[3]}, imported {confluent_kafka.version()[0]}")
owner = confluent_kafka.Producer({"test.mock.num.brokers": int(sys.argv[2]), "client.id": "kafkacompat-mock"})
metadata = owner.list_topics(timeout=10)
brokers = {b.id: [b.host, b.port] for b in metadata.brokers.values()}
report = {"librdkafka": confluent_kafka.libversion()[0], "brokers": brokers}
print(sys.argv[4] + json.dumps(report), flush=True)
sys.stdin.buffer.read()
owner.flush(5)
"""


def install_confluent_kafka(version: str = OLD_CONFLUENT_KAFKA, cache: Path | None = None) -> Path:
    """The directory holding confluent-kafka ``version`` for this Python, installed there if missing.

    The wheel is fetched from PyPI with this interpreter's pip (binary wheels
    only, no dependencies) into a temporary directory renamed into place, so
    a half-finished install is never used.
    """
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    target = (cache or cache_root()) / f"confluent-kafka-{version}-{tag}"
    if (target / "confluent_kafka" / "__init__.py").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    command = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--no-deps", "--only-binary=:all:", "--target", str(staging), f"confluent-kafka=={version}",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT, check=False)
        if done.returncode != 0:
            raise BrokerStartError(
                f"could not install confluent-kafka {version} into {staging}: "
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )
        try:
            staging.rename(target)
        except OSError:  # another session finished first: use its copy
            if not (target / "confluent_kafka" / "__init__.py").is_file():
                raise
    except subprocess.TimeoutExpired as exc:
        took = f"installing confluent-kafka {version} took over {_INSTALL_TIMEOUT:.0f}s"
        raise BrokerStartError(took) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


class LibrdkafkaMockBroker(BrokerProcess):
    """librdkafka 2.0.2's mock cluster on 127.0.0.1; ``port`` is its first (lowest id) broker's."""

    name = "librdkafka mock"
    exits_on_eof = True

    def __init__(
        self,
        *,
        num_brokers: int = 1,
        version: str = OLD_CONFLUENT_KAFKA,
        cache: Path | None = None,
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
    ) -> None:
        super().__init__(port=0, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        if num_brokers < 1:
            raise ValueError("a mock cluster needs at least one broker")
        self.num_brokers = num_brokers
        self.version = version
        self.cache = cache
        self.librdkafka_version: str | None = None
        self.brokers: dict[int, tuple[str, int]] = {}
        self._site: Path | None = None

    @property
    def command(self) -> list[str]:
        site = self._site or install_confluent_kafka(self.version, self.cache)
        arguments = [str(site), str(self.num_brokers), self.version, _READY_MARK]
        return [sys.executable, "-I", "-c", _CHILD, *arguments]

    def prepare(self) -> None:
        self._site = install_confluent_kafka(self.version, self.cache)
        self.brokers = {}

    def environment(self) -> Mapping[str, str]:
        return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}

    def discover_port(self, stdout: str) -> int | None:
        line = next((ln for ln in stdout.splitlines() if ln.startswith(_READY_MARK)), None)
        if line is None:
            return None
        try:
            report = json.loads(line[len(_READY_MARK) :])
            self.librdkafka_version = str(report["librdkafka"])
            self.brokers = {int(n): (str(h), int(p)) for n, (h, p) in report["brokers"].items()}
        except (ValueError, KeyError, TypeError) as exc:
            raise BrokerStartError(f"the mock's report cannot be read: {line!r}") from exc
        if len(self.brokers) != self.num_brokers:
            raise BrokerStartError(f"expected {self.num_brokers} mock brokers, got {self.brokers}")
        host, port = self.brokers[min(self.brokers)]
        if host != self.host:
            raise BrokerStartError(f"the mock broker listens on {host}, not {self.host}")
        return port
