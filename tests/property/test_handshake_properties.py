"""Properties of the ApiVersions handshake under any events a driver could feed.

Whatever the order of events and whatever bytes the peer sends:

- the machine raises nothing but ``KafkaCompatError`` subclasses, and an
  event it refuses changes nothing;
- the versions it asks for strictly decrease;
- it ends (Done or Fail) within a bounded number of actions when fed only
  events it accepts (the Metadata v0 probe of a quiet connection included);
- its transcript counts exactly the round trips and connections fed;
- identity (KIP-1242): a request carries ClusterId and NodeId both or
  neither, both only at v5+ and only when the handshake was given an
  identity; REBOOTSTRAP_REQUIRED and a refused identity fail typed, naming
  the identity expected; a remembered ApiVersions max only lowers the start;
- the identity a connection would send (``identity_for``) is whole or absent,
  absent on a bootstrap connection; the client's node-at-address check
  refuses exactly when another node is named at the address dialled;
- the memory of advertised maxima is a bounded least-recently-used map, and
  through it a broker costs at most one extra round trip per release it runs
  while the client meets it, whatever the order of connections.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacompat.errors import (
    ClusterMismatchError,
    HandshakeStateError,
    IdentityRefusedError,
    KafkaCompatError,
    RebootstrapRequiredError,
)
from kafkacompat.negotiation.handshake import (
    TRANSITIONS,
    ApiVersionsHandshake,
    Connect,
    Done,
    Event,
    Fail,
    HandshakeConfig,
    ReceiveReply,
    SendProbe,
    SendRequest,
    State,
)
from kafkacompat.negotiation.handshake.config import CODEC_MAX_VERSION
from kafkacompat.negotiation.handshake.identity import (
    ApiVersionsMemory,
    BrokerIdentity,
    broker_node_id,
    check_node_at_address,
    identity_for,
)
from kafkacompat.protocol.broker_framing import decode_request
from kafkacompat.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from tests.support.codec_strategies import instances

R = ApiVersionsResponse
CODEC_MAX = CODEC_MAX_VERSION  # the first version the handshake offers


def action_bound(config: HandshakeConfig) -> int:
    """Two actions per version tried; per connection a Connect and at most three for the
    probe (write it, read after it, read its reply to drop it); the 0.8.x check's two
    connections and three requests (a write and a read each)."""
    return 2 * (config.max_version + 1) + 4 * config.max_connections + 2 + 6


ACTION_BOUND = action_bound(HandshakeConfig(max_connections=3))
INTERESTING_CODES = [0, 0, 35, 42, -1, 31, 129]

versions = st.integers(min_value=-1, max_value=CODEC_MAX + 2)


@st.composite
def replies(draw: st.DrawFn, sent: int) -> bytes:
    """Reply bodies to a request at ``sent``: mostly ApiVersions answers, some garbage.

    Refusals naming an ApiVersions range around ``sent`` are drawn often, so
    that chains of retries (the deep end of the machine) and brokers refusing
    what they advertise are common.
    """
    kind = draw(st.sampled_from(["refusal", "refusal", "crafted", "crafted", "codec", "junk", "foreign"]))
    if kind == "junk":
        return draw(st.binary(max_size=40))
    if kind == "foreign":
        return draw(st.sampled_from([b"\x15\x03\x03\x00\x02\x02\x28", b"HTTP/1.0 200", b"SSH-2.0"]))
    if kind == "refusal":
        top = draw(st.integers(min_value=0, max_value=sent + 1))
        named = draw(st.sampled_from([[], [R.ApiVersion(api_key=18, min_version=0, max_version=top)]]))
        return R(error_code=35, api_keys=named).encode(0)
    layout = draw(st.integers(min_value=0, max_value=CODEC_MAX))
    if kind == "codec":
        return bytes(draw(instances(R, layout)).encode(layout))
    keys = draw(st.lists(st.tuples(st.sampled_from([18, 18, 0, 3]), versions, versions), max_size=4))
    reply = R(
        error_code=draw(st.sampled_from(INTERESTING_CODES)),
        api_keys=[R.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in keys],
    )
    return reply.encode(layout)


# Events that move the handshake on are drawn far more often than those that end it.
WEIGHTS = {
    Event.CONNECTED: 6,
    Event.REQUEST_SENT: 6,
    Event.RECEIVED: 6,
    Event.CONNECTION_CLOSED: 2,
    Event.TIMED_OUT: 1,
    Event.CONNECT_FAILED: 1,
    Event.FOREIGN_BYTES: 1,
    Event.QUIET: 3,
}


def accepted_events(hs: ApiVersionsHandshake) -> st.SearchStrategy[Event]:
    return st.sampled_from([e for e in sorted(hs.expected_events) for _ in range(WEIGHTS[e])])


configs = st.builds(
    HandshakeConfig,
    max_version=st.integers(min_value=0, max_value=CODEC_MAX),
    max_connections=st.integers(min_value=1, max_value=3),
    fallback_release=st.sampled_from([None, "0.9.0"]),
)


identities = st.one_of(
    st.none(),
    st.builds(BrokerIdentity, st.sampled_from(["MkU3OEVBNTcwNTJENDM2Qk", "c"]), st.integers(0, 2**31 - 1)),
)
NODE = "b:1"


@st.composite
def handshakes(draw: st.DrawFn, config: HandshakeConfig | None = None) -> ApiVersionsHandshake:
    """A handshake with a drawn config, identity (or none) and memory of the address (or none)."""
    memory = draw(st.sampled_from([None, ApiVersionsMemory(4)]))
    if memory is not None:
        remembered = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=CODEC_MAX)))
        if remembered is not None:
            memory.remember(NODE, remembered)
    return ApiVersionsHandshake(
        draw(configs) if config is None else config, node=NODE, identity=draw(identities), memory=memory
    )


@dataclass
class Fed:
    """What the driver fed and saw, to check the transcript and the actions against."""

    connections: int = 0
    round_trips: int = 0
    actions: list[Any] = field(default_factory=list)


def feed(hs: ApiVersionsHandshake, event: Event, data: st.DataObject, fed: Fed) -> None:
    """Feed ``event`` with a drawn payload; a refused event must change nothing."""
    before = (hs.state, hs.transcript, hs.next_action())
    accepted = hs.expected_events
    try:
        if event is Event.RECEIVED:
            reply = data.draw(replies(hs.version))
            if data.draw(st.booleans()):
                hs.received(reply)
            else:
                expected = getattr(hs.next_action(), "correlation_id", 0)
                cid = data.draw(st.sampled_from([expected, expected, expected + 1]))
                hs.received_frame(cid.to_bytes(4, "big", signed=True) + reply)
        elif event is Event.FOREIGN_BYTES:
            hs.foreign_bytes(data.draw(st.binary(max_size=16)))
        elif event is Event.CONNECT_FAILED:
            hs.connect_failed(data.draw(st.text(max_size=10)))
        else:
            getattr(hs, event.value)()
    except HandshakeStateError:
        assert event not in accepted
        assert (hs.state, hs.transcript, hs.next_action()) == before
        return
    except KafkaCompatError as exc:  # pragma: no cover - reported with its type
        raise AssertionError(f"an accepted event raised {exc!r}") from exc
    assert event in accepted and accepted <= EVENTS_OF[before[0]]
    fed.connections += event is Event.CONNECTED
    fed.round_trips += event in (Event.RECEIVED, Event.FOREIGN_BYTES)
    if hs.next_action() is not before[2]:
        fed.actions.append(hs.next_action())


EVENTS_OF = {s: {t.event for t in TRANSITIONS if t.source is s} for s in State}


def check(hs: ApiVersionsHandshake, fed: Fed) -> None:
    transcript = hs.transcript
    assert (transcript.round_trips, transcript.connections) == (fed.round_trips, fed.connections)
    requests = [a for a in fed.actions if isinstance(a, SendRequest)]
    sent = [a.version for a in requests]
    assert all(a > b for a, b in itertools.pairwise(sent)), sent
    assert all(version <= hs.config.max_version for version in sent)
    for request in requests:
        body = decode_request(request.frame[4:]).body
        assert isinstance(body, ApiVersionsRequest)
        assert (body.cluster_id is None) == (body.node_id == -1), body  # both or neither, always
        if request.version >= 5 and hs.identity is not None:
            assert (body.cluster_id, body.node_id) == (hs.identity.cluster_id, hs.identity.node_id)
        else:
            assert body.cluster_id is None  # no identity below v5, none without one given
    tried = transcript.versions_tried
    assert all(a > b for a, b in itertools.pairwise(tried)), tried
    assert len([a for a in fed.actions if not isinstance(a, Done | Fail)]) <= action_bound(hs.config)
    assert transcript.connections <= hs.config.max_connections + 2  # + rule 10's 0.8.x check
    action = hs.next_action()
    if isinstance(action, Fail):
        assert action.error.transcript == transcript
        error = action.error
        if isinstance(error, RebootstrapRequiredError | IdentityRefusedError):
            expected = hs.identity if hs.version >= 5 else None
            assert error.expected_cluster_id == (expected.cluster_id if expected else None)
            assert error.expected_node_id == (expected.node_id if expected else None)
            assert isinstance(error, RebootstrapRequiredError) or expected is not None
    if isinstance(action, Done):
        assert action.result.transcript == transcript
        assert action.result.used_fallback == (action.result.response is None)
        if action.result.used_fallback and action.result.detected_release is None:
            assert hs.config.fallback_release is not None  # a close at v0
            assert action.result.fallback_release == hs.config.fallback_release
        elif action.result.used_fallback:  # a skipped ApiVersions: the configured release overrides
            assert action.result.fallback_release == (hs.config.fallback_release or "0.9.0")


@settings(max_examples=400)
@given(config=configs, data=st.data())
def test_events_the_machine_accepts_always_end_it_within_the_bound(
    config: HandshakeConfig, data: st.DataObject
) -> None:
    hs = data.draw(handshakes(config))
    fed = Fed(actions=[hs.next_action()])
    while not isinstance(hs.next_action(), Done | Fail):
        event = data.draw(accepted_events(hs))
        feed(hs, event, data, fed)
        check(hs, fed)
    assert not hs.expected_events


@settings(max_examples=400)
@given(config=configs, events=st.lists(st.sampled_from(list(Event)), max_size=30), data=st.data())
def test_any_event_sequence_raises_only_typed_errors(
    config: HandshakeConfig, events: list[Event], data: st.DataObject
) -> None:
    hs = data.draw(handshakes(config))
    fed = Fed(actions=[hs.next_action()])
    for event in events:
        feed(hs, event, data, fed)
        check(hs, fed)


def _reach(state: State, data: st.DataObject) -> ApiVersionsHandshake:
    """A handshake in ``state``, reached by a drawn path of accepted events."""
    hs = data.draw(handshakes())
    fed = Fed()
    for _ in range(4 * ACTION_BOUND):
        if hs.state is state:
            return hs
        if not hs.expected_events:
            break
        feed(hs, data.draw(accepted_events(hs)), data, fed)
    # Not reached by chance: take the shortest path there.
    hs = ApiVersionsHandshake()
    path = {
        State.CONNECT: [],
        State.SEND: [hs.connected],
        State.RECEIVE: [hs.connected, hs.request_sent],
        State.PROBE: [hs.connected, hs.request_sent, hs.quiet],
        State.DRAIN: [hs.connected, hs.request_sent, hs.quiet, hs.request_sent,
                      lambda: hs.received(R().encode(CODEC_MAX))],
        State.DONE: [hs.connected, hs.request_sent, lambda: hs.received(R().encode(CODEC_MAX))],
        State.FAILED: [hs.timed_out],
    }[state]
    for event in path:
        event()
    return hs


@settings(max_examples=300)
@given(state=st.sampled_from(list(State)), event=st.sampled_from(list(Event)), data=st.data())
def test_every_state_event_pair_is_a_table_move_or_a_refusal(
    state: State, event: Event, data: st.DataObject
) -> None:
    hs = _reach(state, data)
    assert hs.state is state
    fed = Fed(connections=hs.transcript.connections, round_trips=hs.transcript.round_trips)
    history = len(hs.history)
    accepted = hs.expected_events  # the table's events for the state, quiet only where handed a period
    feed(hs, event, data, fed)
    if event in accepted:
        (taken,) = hs.history[history:]
        assert (taken.source, taken.event, taken.target) == (state, event, hs.state)
    else:
        assert len(hs.history) == history
    assert (hs.transcript.round_trips, hs.transcript.connections) == (fed.round_trips, fed.connections)
    assert isinstance(hs.next_action(), Connect | SendRequest | SendProbe | ReceiveReply | Done | Fail)


# -- identity and the memory across connections (KIP-1242) ---------------------------------

node_ids = st.one_of(
    st.none(), st.integers(-5, 5), st.integers(0, 2**31 - 1), st.integers(2**30, 2**31 - 1)
)
cluster_ids = st.one_of(st.none(), st.sampled_from(["MkU3OEVBNTcwNTJENDM2Qk", "c", "other"]))


@given(node_id=node_ids, cluster_id=cluster_ids, expected=cluster_ids)
def test_an_identity_is_whole_or_absent_and_a_bootstrap_connection_has_none(
    node_id: int | None, cluster_id: str | None, expected: str | None
) -> None:
    try:
        identity = identity_for(node_id, cluster_id, expected_cluster_id=expected)
    except ClusterMismatchError as exc:  # the only refusal: Metadata names another cluster
        assert cluster_id is not None and expected is not None and cluster_id != expected
        assert (exc.expected_cluster_id, exc.found_cluster_id) == (expected, cluster_id)
        return
    if node_id is None or node_id < 0 or (cluster_id is None and expected is None):
        assert identity is None  # a bootstrap connection, or nothing known: never a NodeId alone
        return
    assert identity is not None
    assert identity.cluster_id == (cluster_id if cluster_id is not None else expected)
    assert identity.node_id == broker_node_id(node_id) and 0 <= identity.node_id <= 2**31 - 1
    request = HandshakeConfig().request(5, identity)
    assert (request.cluster_id, request.node_id) == (identity.cluster_id, identity.node_id)
    below = HandshakeConfig().request(4, identity)
    assert (below.cluster_id, below.node_id) == (None, -1)  # no identity field before v5


@given(
    dialled=st.integers(0, 3),
    named=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), max_size=6),
    meant=st.integers(0, 5),
)
def test_a_node_at_the_dialled_address_is_refused_only_when_another_is_named_there(
    dialled: int, named: list[tuple[int, int]], meant: int
) -> None:
    brokers = [(node_id, "h", port) for node_id, port in named]
    there = next((node_id for node_id, port in named if port == dialled), None)
    try:
        check_node_at_address(meant, ("h", dialled), brokers, node=f"h:{dialled}")
    except ClusterMismatchError as exc:
        assert there is not None and there != meant
        assert (exc.expected_node_id, exc.found_node_id) == (meant, there)
        return
    assert there is None or there == meant


@settings(max_examples=200)
@given(
    capacity=st.integers(1, 6),
    operations=st.lists(
        st.tuples(st.sampled_from(["remember", "recall", "forget"]), st.integers(0, 8), st.integers(0, 5)),
        max_size=60,
    ),
)
def test_the_memory_is_bounded_and_remembers_like_a_least_recently_used_cache(
    capacity: int, operations: list[tuple[str, int, int]]
) -> None:
    memory = ApiVersionsMemory(capacity)
    model: dict[str, int] = {}  # insertion order: least recently used first
    for operation, address, version in operations:
        node = f"b:{address}"
        if operation == "remember":
            model.pop(node, None)
            model[node] = version
            while len(model) > capacity:
                del model[next(iter(model))]
            memory.remember(node, version)
        elif operation == "recall":
            assert memory.recall(node) == model.get(node)
            if node in model:
                model[node] = model.pop(node)
        else:
            memory.forget(node)
            model.pop(node, None)
        assert len(memory) == len(model) <= capacity


def _peer(top: int) -> Any:
    """A broker advertising ApiVersions 0-``top``: UNSUPPORTED_VERSION above it, as real ones do."""

    def answer(version: int) -> bytes:
        keys = [R.ApiVersion(api_key=18, min_version=0, max_version=top)]
        if version > top:
            return R(error_code=35, api_keys=keys).encode(0)
        return R(error_code=0, api_keys=keys).encode(version)

    return answer


def _connect(node: str, top: int, memory: ApiVersionsMemory, identity: BrokerIdentity | None) -> list[int]:
    """One connection's handshake with a broker of max ``top``: the versions it asked for."""
    hs = ApiVersionsHandshake(node=node, identity=identity, memory=memory)
    peer, asked = _peer(top), []
    hs.connected()
    while isinstance(action := hs.next_action(), SendRequest):
        asked.append(action.version)
        body = decode_request(action.frame[4:]).body
        assert isinstance(body, ApiVersionsRequest)
        sent = (body.cluster_id, body.node_id)
        if action.version >= 5 and identity is not None:
            assert sent == (identity.cluster_id, identity.node_id)
        else:
            assert sent == (None, -1)
        hs.request_sent()
        hs.received(peer(action.version))
    assert isinstance(action, Done), action
    return asked


@settings(max_examples=200)
@given(
    brokers=st.lists(st.integers(3, CODEC_MAX), min_size=1, max_size=5),
    visits=st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=1, max_size=40),
    changes=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 4), st.integers(3, CODEC_MAX)), max_size=4),
)
def test_each_broker_costs_at_most_one_extra_round_trip_per_release_it_runs(
    brokers: list[int], visits: list[tuple[int, bool]], changes: list[tuple[int, int, int]]
) -> None:
    """Connections to a few brokers through one shared memory, some brokers changing release
    (upgraded or downgraded) between visits: the versions asked strictly fall within a
    connection, and a broker costs one round trip more than one, once per release it
    runs while the client meets it (its first meeting, and after each downgrade below what
    was remembered); an upgrade costs nothing extra."""
    tops = list(brokers)
    memory = ApiVersionsMemory(len(brokers))
    extra = [0] * len(brokers)
    allowed = [1] * len(brokers)  # the first meeting of each
    for step, (visit, known) in enumerate(visits):
        for at, which, top in changes:
            if at == step and which < len(tops) and top != tops[which]:
                remembered = memory.recall(f"b:{which}")
                if remembered is not None and top < remembered:
                    allowed[which] += 1  # a downgrade below the memory: refused once more
                tops[which] = top
        index = visit % len(brokers)
        identity = BrokerIdentity("c", index) if known else None
        asked = _connect(f"b:{index}", tops[index], memory, identity)
        assert all(a > b for a, b in itertools.pairwise(asked)), asked
        assert len(asked) <= 2 and asked[-1] <= tops[index]  # bounded: at most one refusal
        extra[index] += len(asked) - 1
    assert all(e <= a for e, a in zip(extra, allowed, strict=True)), (extra, allowed)
