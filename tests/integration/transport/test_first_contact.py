"""Every driver names a wrong peer from its first contact, within a few seconds, with the default config.

Issue 27's "fail fast", at the depth where it belongs: not the CLI alone, but
every connection of the library.  The peers are real (``tests.support.wrong_peers``):
Python's ``http.server``, a TLS listener (``ssl``, which resets plaintext
without a byte), a text server that answers only once it has read a line (as
Redis does), a server that greets with an SSH banner, a port that accepts and
says nothing, one that closes every connection, and a port where nothing
listens.  Each is opened by each entry point a library caller has: a trio,
asyncio and blocking connection, and a trio, asyncio and blocking cluster.

Each must end in one typed error of the right kind (``WrongProtocolError``
with its ``kind``, ``SilentPeerError``, ``BrokerTooOldError``,
``TransportError``), a sentence under 200 characters, within ``FEW_SECONDS``
(the silent port after ``first_contact_timeout``, not before).  A connection
makes one attempt; the clusters here are told not to retry silence
(``RetryPolicy(retry_silent_peers=False)``, what the CLI does), so silence costs
one first contact, not the retry budget.  By default a cluster waits for a silent
peer, as for a Kafka broker starting up, and gets it once it answers (the last
tests).  The cases run side by side in threads, so the module costs about one
silent port.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
import trio

import kafkacompat
import kafkacompat.aio
from kafkacompat.blocking.connection import open_blocking_connection
from kafkacompat.connection.config import DEFAULT_CONFIG, ConnectionConfig, RetryPolicy
from kafkacompat.errors import (
    BrokerTooOldError,
    KafkaCompatError,
    NoBrokerReachableError,
    SilentPeerError,
    TransportError,
    WrongProtocolError,
)
from kafkacompat.testing.tansu import TansuBroker
from kafkacompat.transport.connection import open_connection
from kafkacompat.transport.sync import connect_sync
from tests.support import wrong_peers
from tests.support.fault_proxy import Fault, fault_proxy
from tests.support.trio_thread import in_trio_thread

FIRST_CONTACT = DEFAULT_CONFIG.first_contact_timeout
assert FIRST_CONTACT is not None
FEW_SECONDS = FIRST_CONTACT + 3.0  # a loaded machine's slack beyond the silent port's deadline
QUICK = 2.0  # every peer that answers, closes or refuses is named at once; slack for load
NOT_WAITING = ConnectionConfig(retry=RetryPolicy(retry_silent_peers=False))


@dataclass(frozen=True)
class Expected:
    error: type[KafkaCompatError]
    kind: str | None  # WrongProtocolError's kind
    says: str  # at the start of the error's message


WRONG = WrongProtocolError
EXPECTED = {
    "a web server": Expected(WRONG, "http", "not a Kafka broker: the peer answered in HTTP"),
    "a TLS listener": Expected(WRONG, "tls", "TLS listener: the peer answered with a TLS record"),
    "a text server": Expected(WRONG, "text", 'not a Kafka broker: the peer answered in text ("-ERR unknown'),
    "an SSH server": Expected(WRONG, "ssh", "not a Kafka broker: the peer is an SSH server (SSH-2.0-"),
    "a silent port": Expected(SilentPeerError, None, "the peer accepted the connection but answered nothing"),
    "a closing port": Expected(BrokerTooOldError, None, "not a Kafka broker nor a TLS listener: the peer"),
    "nothing listens": Expected(TransportError, None, "could not connect to the broker"),
}


def _trio_connection(host: str, port: int) -> None:
    async def main() -> None:
        async with open_connection(host, port):
            pass

    trio.run(main)


def _asyncio_connection(host: str, port: int) -> None:
    async def main() -> None:
        async with kafkacompat.aio.open_connection(host, port):
            pass

    asyncio.run(main())


def _blocking_connection(host: str, port: int) -> None:
    with open_blocking_connection(host, port):
        pass


def _cluster_entry(kind: str) -> Callable[[ConnectionConfig], Callable[[str, int], None]]:
    def bind(config: ConnectionConfig) -> Callable[[str, int], None]:
        def entry(host: str, port: int) -> None:
            address = f"{host}:{port}"
            if kind == "blocking":
                with connect_sync(address, config):
                    return

            async def main() -> None:
                connect = kafkacompat.connect if kind == "trio" else kafkacompat.aio.connect
                async with connect(address, config):
                    pass

            if kind == "trio":
                trio.run(main)
            else:
                asyncio.run(main())

        return entry

    return bind


CLUSTERS = {f"{kind} cluster": _cluster_entry(kind) for kind in ("trio", "asyncio", "blocking")}


ENTRIES: dict[str, Callable[[str, int], None]] = {
    "trio connection": _trio_connection,
    "asyncio connection": _asyncio_connection,
    "blocking connection": _blocking_connection,
    **{name: bind(NOT_WAITING) for name, bind in CLUSTERS.items()},
}


@pytest.fixture(scope="module")
def peers() -> Iterator[dict[str, str]]:
    with contextlib.ExitStack() as running:
        yield {
            "a web server": running.enter_context(wrong_peers.web_server()),
            "a TLS listener": running.enter_context(wrong_peers.tls_listener())[0],
            "a text server": running.enter_context(wrong_peers.text_server()),
            "an SSH server": running.enter_context(wrong_peers.ssh_server()),
            "a silent port": running.enter_context(wrong_peers.silent_port()),
            "a closing port": running.enter_context(wrong_peers.closing_port()),
            "nothing listens": wrong_peers.nothing_listens(),
        }


def _attempt(entry: Callable[[str, int], None], address: str) -> tuple[BaseException | None, float]:
    host, _, port = address.rpartition(":")
    start = time.monotonic()
    try:
        entry(host, int(port))
    except BaseException as exc:  # the outcome is what the test checks
        return exc, time.monotonic() - start
    return None, time.monotonic() - start


def test_every_entry_point_names_every_wrong_peer_quickly(peers: dict[str, str]) -> None:
    cases = [(entry, peer) for entry in ENTRIES for peer in peers]
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        outcomes = list(pool.map(lambda case: _attempt(ENTRIES[case[0]], peers[case[1]]), cases))
    problems = []
    for (entry, peer), (error, took) in zip(cases, outcomes, strict=True):
        faults = _faults(EXPECTED[peer], error, took, peer)
        problems += [f"{entry} / {peer}: {fault}" for fault in faults]
    assert not problems, "\n".join(problems)


def _faults(expected: Expected, error: BaseException | None, took: float, peer: str) -> list[str]:
    if isinstance(error, NoBrokerReachableError) and len(error.reasons) == 1:
        error = next(iter(error.reasons.values()))  # a cluster lists its one address's failure
    if not isinstance(error, expected.error):
        return [f"{type(error).__name__}: {error}, not {expected.error.__name__}"]
    faults = []
    if expected.kind is not None and getattr(error, "kind", None) != expected.kind:
        faults.append(f"kind {getattr(error, 'kind', None)!r}, not {expected.kind!r}")
    if not error.message.startswith(expected.says):
        faults.append(f"says {error.message!r}")
    if len(error.message) >= 200 or "\n" in error.message:
        faults.append(f"not one short sentence: {error.message!r}")
    bound = FEW_SECONDS if peer == "a silent port" else QUICK
    if took > bound:
        faults.append(f"took {took:.1f} s (bound {bound:g} s)")
    if peer == "a silent port" and took < FIRST_CONTACT:
        faults.append(f"named silent after {took:.1f} s, before its first contact's deadline")
    return faults


# -- a silent broker that starts answering ---------------------------------------------


@pytest.fixture
def starting_broker(tansu: TansuBroker) -> Iterator[tuple[str, int]]:
    """An address whose first connection is silent (a broker whose listener is bound before it
    serves, as real Kafka's is while it starts), and whose later connections reach Tansu."""
    silent_first = Fault.stall_after(0, connections=[1])
    with in_trio_thread(lambda: fault_proxy((tansu.host, tansu.port), to_client=[silent_first])) as proxy:
        yield proxy.value.address


@pytest.mark.parametrize("retry_silent_peers", [True, False], ids=["default", "not-waiting"])
@pytest.mark.parametrize("entry", ["trio cluster", "asyncio cluster", "blocking cluster"])
def test_a_cluster_waits_for_a_silent_broker_only_when_told(
    starting_broker: tuple[str, int], entry: str, retry_silent_peers: bool
) -> None:
    host, port = starting_broker
    config = ConnectionConfig(
        first_contact_timeout=0.5, retry=RetryPolicy(retry_silent_peers=retry_silent_peers)
    )
    error, took = _attempt(CLUSTERS[entry](config), f"{host}:{port}")
    if retry_silent_peers:  # RetryPolicy's default: the second connection is served
        assert error is None, f"{type(error).__name__}: {error}"
    else:  # named at the first silence, not retried
        assert isinstance(error, SilentPeerError), f"{type(error).__name__}: {error}"
    assert took < 0.5 + QUICK
