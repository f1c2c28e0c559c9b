"""The three cluster surfaces are one: trio ``Cluster``, asyncio ``aio.Cluster``, blocking ``SyncCluster``.

The trio and asyncio clusters must offer the same public methods and
properties with the same signatures, coroutines in both; the blocking facade
must offer every coroutine method that hands back plain answers, with the
same signature (less ``async``), run on its loop.  Read from the classes, so
a method added to one and forgotten in another fails here.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from types import FunctionType

import pytest

import kafkacompat
import kafkacompat.aio
from kafkacompat.aio import Cluster as AsyncioCluster
from kafkacompat.errors import TransportError
from kafkacompat.transport.cluster import Cluster as TrioCluster
from kafkacompat.transport.sync import SyncCluster

ROOT = Path(__file__).resolve().parents[3]
#: Cluster methods the blocking facade leaves out, and why.
NOT_BLOCKING = {
    "connection": "hands out a connection, which belongs to the loop's thread",
    "any_connection": "hands out a connection, which belongs to the loop's thread",
    "open_all": "hands out connections, which belong to the loop's thread",
    "connected": "hands out connections, which belong to the loop's thread",
    "checked_by_client": "takes a connection, which belongs to the loop's thread",
    "aclose": "the facade closes with close() / its with block",
}


def public(cls: type) -> dict[str, object]:
    """Public attributes defined by ``cls`` or its bases (not by object)."""
    names = {n for klass in cls.__mro__ if klass is not object for n in vars(klass) if not n.startswith("_")}
    return {name: inspect.getattr_static(cls, name) for name in sorted(names)}


def signature(member: object) -> inspect.Signature:
    function = member.fget if isinstance(member, property) else member
    assert callable(function)
    return inspect.signature(function)


def test_trio_and_asyncio_clusters_have_the_same_surface() -> None:
    trio_side, asyncio_side = public(TrioCluster), public(AsyncioCluster)
    assert list(trio_side) == list(asyncio_side)
    for name, member in trio_side.items():
        other = asyncio_side[name]
        assert type(member) is type(other), name
        if isinstance(member, property | FunctionType):
            assert str(signature(member)) == str(signature(other)), name
        if inspect.isfunction(member):
            assert inspect.iscoroutinefunction(member) == inspect.iscoroutinefunction(other), name
    coroutines = {n for n, m in trio_side.items() if inspect.iscoroutinefunction(m)}
    asked_for = {"request", "capabilities", "find_coordinators", "describe_features", "update_features"}
    assert asked_for <= coroutines


def test_the_connect_functions_take_the_same_arguments() -> None:
    assert str(inspect.signature(kafkacompat.connect)) == str(inspect.signature(kafkacompat.aio.connect))
    sync = inspect.signature(kafkacompat.connect_sync)
    assert list(sync.parameters) == list(inspect.signature(kafkacompat.connect).parameters)


def test_the_blocking_facade_offers_every_coroutine_method_with_its_signature() -> None:
    cluster = public(TrioCluster)
    coroutines = {n for n, m in cluster.items() if inspect.iscoroutinefunction(m)}
    facade = SyncCluster("localhost:9092")  # not started: nothing connects
    for name in sorted(coroutines - set(NOT_BLOCKING)):
        blocking = getattr(facade, name)
        assert not inspect.iscoroutinefunction(blocking), name
        expected = inspect.signature(cluster[name])  # type: ignore[arg-type]
        expected = expected.replace(parameters=list(expected.parameters.values())[1:])
        assert inspect.signature(blocking) == expected, name
        assert blocking.__doc__ == cluster[name].__doc__, name
    for name, member in cluster.items():  # properties: read on the loop, same types
        if isinstance(member, property):
            mirrored = inspect.getattr_static(SyncCluster, name)
            assert isinstance(mirrored, property), name
            assert signature(mirrored).return_annotation == signature(member).return_annotation, name
    left_out = {n for n in cluster if not n.startswith("_")} - coroutines - set(NOT_BLOCKING)
    left_out -= {n for n, m in cluster.items() if isinstance(m, property)}
    assert left_out <= {"bootstrap", "config", "controllers"}, left_out  # instance data, set in __init__


def test_a_closed_facade_refuses_with_a_typed_error() -> None:
    facade = SyncCluster("localhost:9092")
    with pytest.raises(TransportError, match="closed"):
        facade.capabilities()


def test_the_asyncio_cluster_path_imports_no_trio() -> None:
    code = (
        "import sys, kafkacompat.aio, kafkacompat.aio.cluster\n"
        "loaded = sorted(m for m in sys.modules if m == 'trio' or m.startswith('trio.'))\n"
        "assert not loaded, loaded\n"
        "assert 'kafkacompat.transport.connection' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


def test_one_asyncio_connection_does_not_load_the_cluster_layer() -> None:
    code = (
        "import sys\n"
        "from kafkacompat.aio import open_connection\n"
        "assert 'kafkacompat.cluster.core' not in sys.modules\n"
        "assert 'tenacity' not in sys.modules\n"
        "from kafkacompat.aio import connect\n"
        "assert 'kafkacompat.cluster.core' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)
