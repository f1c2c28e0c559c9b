"""The three drivers offer one connection surface: trio, asyncio and blocking.

Read from the classes: the same public names, the same signatures for the
constructor, ``request`` and the opener, the same return for ``open`` and
``reconnect``.  None of them picks versions: ``capabilities.pick_version`` does.
What differs is only what the loop makes differ, listed below with its reason; a
name added to one driver and not the others fails here.  The address is checked when
the connection is made, in all three.
"""

from __future__ import annotations

import inspect

import pytest

from kafkacompat.aio.connection import BrokerConnection as AsyncioConnection
from kafkacompat.aio.connection import open_connection as open_asyncio
from kafkacompat.blocking.connection import BlockingConnection, open_blocking_connection
from kafkacompat.connection.driven import DrivenConnection
from kafkacompat.errors import InvalidAddressError
from kafkacompat.transport.connection import BrokerConnection as TrioConnection
from kafkacompat.transport.connection import open_connection as open_trio

DRIVERS = {"trio": TrioConnection, "asyncio": AsyncioConnection, "blocking": BlockingConnection}
OPENERS = {"trio": open_trio, "asyncio": open_asyncio, "blocking": open_blocking_connection}
#: Closing is the loop's spelling: ``aclose`` for a coroutine, ``close`` without a loop.
CLOSE = {"trio": "aclose", "asyncio": "aclose", "blocking": "close"}
#: Parameters one driver adds to ``open``/``reconnect``, and why.
LOOP_ONLY = {
    "trio": {"nursery"},  # the connection's tasks may live in the caller's nursery
    "asyncio": set(),
    "blocking": set(),
}


def public(cls: type) -> dict[str, object]:
    names = {n for klass in cls.__mro__ if klass is not object for n in vars(klass) if not n.startswith("_")}
    return {name: inspect.getattr_static(cls, name) for name in sorted(names)}


def _shared(name: str, driver: str) -> str:
    return "close" if name == CLOSE[driver] else name


def _without(signature: inspect.Signature, extra: set[str]) -> str:
    kept = [p for p in signature.parameters.values() if p.name not in extra]
    return str(signature.replace(parameters=kept))


def test_the_three_drivers_offer_the_same_names() -> None:
    names = {driver: sorted(_shared(n, driver) for n in public(cls)) for driver, cls in DRIVERS.items()}
    assert names["trio"] == names["asyncio"] == names["blocking"]


@pytest.mark.parametrize("name", ["__init__", "request", "is_ready", "in_flight", "node"])
def test_the_shared_members_have_one_signature(name: str) -> None:
    def spelled(cls: type) -> str:
        member = inspect.getattr_static(cls, name)
        function = member.fget if isinstance(member, property) else member
        return str(inspect.signature(function))  # type: ignore[arg-type]

    assert spelled(TrioConnection) == spelled(AsyncioConnection) == spelled(BlockingConnection)


def test_open_reconnect_close_and_the_opener_differ_only_by_the_loop() -> None:
    for method in ("open", "reconnect", "close"):
        seen = set()
        for driver, cls in DRIVERS.items():
            function = getattr(cls, CLOSE[driver] if method == "close" else method)
            assert inspect.iscoroutinefunction(function) == (driver != "blocking"), (driver, method)
            seen.add(_without(inspect.signature(function), LOOP_ONLY[driver]))
        assert len(seen) == 1, (method, seen)
    openers = {_without(inspect.signature(f), LOOP_ONLY[d]).split(" -> ")[0] for d, f in OPENERS.items()}
    assert len(openers) == 1, openers


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_a_bad_address_is_refused_when_the_connection_is_made(driver: str) -> None:
    with pytest.raises(InvalidAddressError):
        DRIVERS[driver]("no host\n", 9092)
    with pytest.raises(InvalidAddressError):
        DRIVERS[driver]("127.0.0.1", 70000)


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_opening_has_one_deadline_spelled_the_same_on_every_driver(driver: str) -> None:
    """``timeout``, keyword-only, default None (the config's ``call_timeout``): the connection
    passes it to ``ClientConnection.next_step(now, overall=...)`` (issue 29)."""
    cls = DRIVERS[driver]
    for function in (cls.open, cls.reconnect, OPENERS[driver]):
        parameter = inspect.signature(function).parameters["timeout"]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default is None, function
        assert str(parameter.annotation) == "float | None", function


def test_every_driver_holds_one_connection_state() -> None:
    """The address, the config, the node, KIP-1242's identity and memory, what the last
    negotiation learned and what reconnects changed: ``DrivenConnection``'s, on all three."""
    held = {}
    for driver, cls in DRIVERS.items():
        assert issubclass(cls, DrivenConnection)
        conn = cls("127.0.0.1", 9092, node_id=3)
        held[driver] = {name for name in vars(conn) if not name.startswith("_")}
        assert (conn.node, conn.node_id, conn.in_flight, conn.changes) == ("127.0.0.1:9092", 3, 0, [])
    assert held["trio"] == held["asyncio"] == held["blocking"]
    assert {"capabilities", "handshake", "changes", "identity", "api_versions_memory"} <= held["trio"]
