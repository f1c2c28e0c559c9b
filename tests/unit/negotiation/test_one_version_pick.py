"""One door picks versions: ``capabilities.pick_version(api_key)`` (and ``explain`` says why).

Behind it one engine applies the rules (``version_policy.choice_for``): the spy
below sees the capabilities and a connection's request without a version arrive
there; no driver offers a pick of its own; and a scan of the package finds no
other function that picks a version on its own (the cluster's ``pick_version``
and the view's ``pick_everywhere`` are thin calls to the capabilities' pick).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

import kafkacompat
from kafkacompat._generated import is_generated
from kafkacompat.aio.connection import BrokerConnection as AsyncioConnection
from kafkacompat.blocking.connection import BlockingConnection
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.negotiation import version_policy
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.version_policy import VersionPolicy
from kafkacompat.protocol.messages import ApiKey, MetadataRequest
from kafkacompat.transport.connection import BrokerConnection

PACKAGE = Path(kafkacompat.__file__).parent
_PICKS = re.compile(
    r"pick.*version|version.*(pick|everywhere)|pick_everywhere|choose|highest_common|common_version"
)
#: What a thin spelling may call to get its answer: the one door, or what it is built on.
_DELEGATES = {"pick_version", "explain", "agreement"}


def caps() -> BrokerCapabilities:
    return BrokerCapabilities.from_ranges("b:9092", {ApiKey.METADATA: (0, 12), ApiKey.API_VERSIONS: (0, 4)})


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    real = version_policy.choice_for

    def recording(api_key: int, capabilities: BrokerCapabilities, *args: Any, **kwargs: Any) -> Any:
        calls.append((api_key, capabilities.node, *args))
        return real(api_key, capabilities, *args, **kwargs)

    monkeypatch.setattr(version_policy, "choice_for", recording)
    return calls


def test_the_capabilities_and_a_request_without_a_version_ask_the_one_engine(
    spy: list[tuple[Any, ...]],
) -> None:
    from kafkacompat.connection.client_connection import ClientConnection, Ready
    from kafkacompat.testing.emulator import ClusterState, Node, profile_for
    from tests.support.memory_wire import MemoryWire, set_up

    policy = VersionPolicy(caps={"Metadata": 9})
    assert caps().pick_version(ApiKey.METADATA, policy) == 9
    wire = MemoryWire(ClusterState([Node(1, profile_for("3.9", "zk-broker"), port=9092)]))
    client = ClientConnection(ConnectionConfig(policy=policy), node="b:9092")
    assert isinstance(set_up(client, wire), Ready)
    assert client.send(MetadataRequest(topics=[])).version == 9  # the connection's policy, bound
    assert spy == [(ApiKey.METADATA, "b:9092", policy, None)] * 2


@pytest.mark.parametrize("driver", [BrokerConnection, AsyncioConnection, BlockingConnection])
def test_no_driver_offers_a_pick_of_its_own(driver: type) -> None:
    assert not hasattr(driver, "pick_version") and not hasattr(driver, "explain")


def _function_calls(node: ast.AST) -> set[str]:
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            func = call.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def _is_declaration(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A protocol's method stub (``...`` as its whole body) names a method; it picks nothing."""
    constants = [
        stmt.value.value
        for stmt in node.body
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
    ]
    return len(constants) == len(node.body) and constants[-1] is Ellipsis


def test_no_other_function_picks_a_version_by_itself() -> None:
    on_their_own = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if is_generated(f"kafkacompat/{relative}") or relative.startswith("_codegen/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not _PICKS.search(node.name):
                continue
            if _is_declaration(node):
                continue
            if not _function_calls(node) & _DELEGATES:
                on_their_own.append(f"{relative}:{node.lineno} {node.name}")
    assert on_their_own == []


def test_the_scan_would_see_a_second_implementation() -> None:
    (stub,) = ast.parse("def pick_version(self, api_key: int) -> int: ...\n").body
    assert isinstance(stub, ast.FunctionDef) and _is_declaration(stub)
    rogue = "def choose_version(ours, theirs):\n    return min(ours.highest, theirs.highest)\n"
    (node,) = ast.parse(rogue).body
    assert _PICKS.search(node.name) and not _function_calls(node) & _DELEGATES


def test_negotiated_capabilities_carry_the_connections_policy() -> None:
    """``capabilities.pick_version(api_key)`` / ``explain(api_key)``: the policy was bound at negotiation."""
    from kafkacompat.connection.client_connection import ClientConnection, Ready
    from kafkacompat.testing.emulator import ClusterState, Node, profile_for
    from tests.support.memory_wire import MemoryWire, set_up

    wire = MemoryWire(ClusterState([Node(1, profile_for("3.9", "zk-broker"), port=9092)]))
    config = ConnectionConfig(policy=VersionPolicy(caps={"Metadata": 4}))
    ready = set_up(ClientConnection(config, node="b:9092"), wire)
    assert isinstance(ready, Ready)
    negotiated = ready.capabilities
    assert negotiated.policy is config.policy
    assert negotiated.pick_version(ApiKey.METADATA) == 4 == negotiated.explain(ApiKey.METADATA).chosen
    assert negotiated.pick_version(ApiKey.METADATA, VersionPolicy()) > 4  # a policy given still wins
    assert caps().policy is None and caps().pick_version(ApiKey.METADATA) == 12
