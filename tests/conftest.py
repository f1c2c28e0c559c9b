"""Session-wide fixtures: the real peers the integration tests run against.

``tansu``            a Tansu 0.6.0 broker (``TansuBroker``): ``.host``, ``.port``, ``.bootstrap``
``librdkafka_mock``  librdkafka's mock cluster (``LibrdkafkaMockCluster``): same attributes
``noida``            noida-db 0.2.3's Kafka service (``NoidaBroker``): same attributes
``old_librdkafka_mock``  librdkafka 2.0.2's mock, three brokers (``LibrdkafkaMockBroker``): same
                     attributes, and ``.brokers`` (node id -> address); its confluent-kafka
                     2.0.2 is installed into a cache directory on first use
``kafka09``          Apache Kafka 0.9.0.1 with ZooKeeper (``Kafka09Broker``), fetched on first use

Each test session starts its own peers, on 127.0.0.1.  A peer that cannot start
fails the tests that use it, with the reason; these tests are never skipped.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, settings

# Property tests judge behaviour, never speed: on a loaded machine (CI, or
# several test runs at once) hypothesis's per-example deadline and its
# "too slow" health check fail tests for timing alone.
settings.register_profile("kafkacompat", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("kafkacompat")

# Make the repository root importable (for ``kafkacompat`` and ``tests.brokers``)
# whether or not the package is installed into the environment.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from kafkacompat.errors import BrokerStartError  # noqa: E402
from kafkacompat.protocol import codec_path  # noqa: E402
from kafkacompat.testing.kafka09 import Kafka09Broker  # noqa: E402
from kafkacompat.testing.librdkafka_mock import LibrdkafkaMockBroker  # noqa: E402
from kafkacompat.testing.noida import NoidaBroker  # noqa: E402
from kafkacompat.testing.process import BrokerProcess  # noqa: E402
from kafkacompat.testing.tansu import TansuBroker  # noqa: E402
from tests.brokers.librdkafka_mock import LibrdkafkaMockCluster  # noqa: E402
from tests.support.codec_paths import PATHS, compiler_present, on_path  # noqa: E402

B = TypeVar("B", bound=BrokerProcess)

# Hypothesis's pytest plugin wraps a parametrized test's settings in one more layer at every
# case (to add its differing_executors exemption), on the one function object all the cases
# share.  Past about 950 cases the chain is deeper than Python's recursion limit and, under
# CI=true (whose profile reads settings.database through the chain), every later case fails
# with RecursionError.  Each case starts from the settings the test was collected with.
_SETTINGS_AT_COLLECTION: dict[object, settings] = {}


def pytest_runtest_setup(item: pytest.Item) -> None:
    obj = getattr(item, "obj", None)
    function = getattr(obj, "__func__", obj)
    collected = getattr(function, "_hypothesis_internal_use_settings", None)
    # not a @given test (a stateful machine's runTest has no such layer)
    if function is None or collected is None:
        return
    function._hypothesis_internal_use_settings = _SETTINGS_AT_COLLECTION.setdefault(function, collected)


@pytest.fixture(params=PATHS)
def each_codec_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """The test on the native reader, then on the generated Python readers (tests/support/codec_paths)."""
    path = request.param
    if path == "native" and codec_path.native_unavailable() is not None:
        reason = codec_path.native_unavailable()
        if compiler_present():  # it could have been built here: not using it is a failure
            pytest.fail(f"the native reader is not in use although a C compiler is here: {reason}")
        pytest.skip(f"no C compiler here, so no native reader: {reason}")
    with on_path(path):
        yield path


def _running(broker: B) -> Iterator[B]:
    try:
        broker.start()
    except BrokerStartError as exc:
        pytest.fail(f"could not start {broker.name}: {exc}", pytrace=False)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def tansu() -> Iterator[TansuBroker]:
    yield from _running(TansuBroker())


@pytest.fixture(scope="session")
def noida() -> Iterator[NoidaBroker]:
    yield from _running(NoidaBroker())


@pytest.fixture(scope="session")
def old_librdkafka_mock() -> Iterator[LibrdkafkaMockBroker]:
    yield from _running(LibrdkafkaMockBroker(num_brokers=3))


@pytest.fixture(scope="session")
def librdkafka_mock() -> Iterator[LibrdkafkaMockCluster]:
    try:
        cluster = LibrdkafkaMockCluster().__enter__()
    except BrokerStartError as exc:
        pytest.fail(f"could not start the librdkafka mock cluster: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def kafka09() -> Iterator[Kafka09Broker]:
    try:
        broker = Kafka09Broker().__enter__()
    except BrokerStartError as exc:
        pytest.fail(f"could not start Kafka 0.9.0.1: {exc}", pytrace=False)
    try:
        yield broker
    finally:
        broker.stop()
