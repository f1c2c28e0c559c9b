"""The recorder reads both directions of a connection on the side and builds client profiles."""

from __future__ import annotations

import struct

import pytest

from kafkacompat.negotiation.recording import KEEP_BYTES, MAX_CLIENTS, ProfileBook, WireRecorder
from kafkacompat.pipeline.client_format import validate_client_profile
from kafkacompat.protocol import framing
from kafkacompat.protocol.message import KafkaMessage
from kafkacompat.protocol.messages import (
    ApiVersionsRequest,
    JoinGroupRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
    SaslHandshakeRequest,
)
from kafkacompat.testing.emulator import (
    ClusterState,
    Connection,
    FaultPlan,
    Node,
    SaslConfig,
    parse_profile_spec,
)
from kafkacompat.testing.emulator.faults import Send


class Pair:
    """A client, an emulated broker and a recorder reading the bytes between them."""

    def __init__(self, release: str = "3.9", book: ProfileBook | None = None, sasl: SaslConfig | None = None):
        self.state = ClusterState([Node(1, parse_profile_spec(release))], topics={"orders": 1})
        self.broker = Connection(self.state.nodes[1], self.state, FaultPlan(), lambda record: None, sasl=sasl)
        self.book = book or ProfileBook()
        self.recorder = WireRecorder(self.book)
        self.correlation = 0

    def raw(self, frame: bytes, chunk: int = 0) -> bytes:
        pieces = [frame[i : i + chunk] for i in range(0, len(frame), chunk)] if chunk else [frame]
        for piece in pieces:
            self.recorder.from_client(piece)
        answer = b"".join(a.data for a in self.broker.receive(frame) if isinstance(a, Send))
        for piece in [answer[i : i + 7] for i in range(0, len(answer), 7)] or [b""]:
            self.recorder.from_broker(piece)
        return answer

    def send(
        self, request: KafkaMessage, version: int, client_id: str | None = "app", chunk: int = 0
    ) -> bytes:
        self.correlation += 1
        return self.raw(framing.encode_request(request, version, self.correlation, client_id), chunk)

    def profile(self) -> dict:  # type: ignore[type-arg]
        (only,) = self.book.profiles()
        return only


def entry(profile: dict, api_key: int) -> dict:  # type: ignore[type-arg]
    return next(e for e in profile["api_versions"] if e["api_key"] == api_key)


def test_a_client_is_named_by_its_kip511_software_fields_and_its_picks_are_read() -> None:
    pair = Pair("3.9")
    pair.send(ApiVersionsRequest(client_software_name="shop-app", client_software_version="1.2"), 3, chunk=3)
    pair.send(MetadataRequest(topics=[]), 12, chunk=1)
    pair.send(MetadataRequest(topics=[]), 9)
    profile = pair.profile()
    assert (profile["client"], profile["version"]) == ("shop-app", "1.2")
    assert validate_client_profile(profile) == []
    metadata = entry(profile, 3)
    assert (metadata["min"], metadata["max"], metadata["pick"], metadata["max_exact"]) == (
        9,
        12,
        "highest",
        True,
    )
    assert profile["recorded"]["identified_by"] == "software"
    assert {"api_key": 3, "max": 12, "min": 0} in profile["recorded"]["offered"][0]["apis"]


def test_without_software_fields_the_client_id_names_the_client() -> None:
    pair = Pair("2.3")
    pair.send(ApiVersionsRequest(), 0, client_id="legacy-app")
    pair.send(MetadataRequest(topics=[]), 1, client_id="legacy-app")
    profile = pair.profile()
    assert (profile["client"], profile["recorded"]["identified_by"]) == ("legacy-app", "client-id")
    assert profile["recorded"]["offered"]  # the offer seen before the client was named is kept


def test_a_version_outside_the_offer_is_a_fixed_pick_and_a_close_is_recorded() -> None:
    pair = Pair("4.0/kraft-broker")
    pair.send(ApiVersionsRequest(client_software_name="old", client_software_version="0.1"), 3)
    pair.send(ListOffsetsRequest(replica_id=-1), 0)  # 4.0 has ListOffsets 1-10
    pair.recorder.closed(by_broker=True)
    offsets = entry(pair.profile(), 2)
    assert (offsets["pick"], offsets["min"], offsets["max"]) == ("fixed", 0, 0)
    requests = pair.profile()["recorded"]["requests"]
    assert {"api_key": 2, "version": 0, "outcomes": {"closed": 1}} in requests


def test_an_api_versions_closed_on_is_all_a_connection_said_and_still_kept() -> None:
    # A broker before 0.10 (0.9.0.1) closes on ApiVersions: the client never gets further.
    book = ProfileBook()
    recorder = WireRecorder(book)
    recorder.from_client(framing.encode_request(ApiVersionsRequest(), 0, 1, "aiokafka-0.14.0"))
    recorder.closed(by_broker=True)
    (profile,) = book.profiles()
    assert profile["client"] == "aiokafka-0.14.0"
    assert profile["recorded"]["requests"] == [{"api_key": 18, "version": 0, "outcomes": {"closed": 1}}]


def test_errors_are_named_and_the_rest_answered() -> None:
    pair = Pair("3.9")
    pair.send(ApiVersionsRequest(client_software_name="c", client_software_version="1"), 3)
    pair.send(JoinGroupRequest(group_id="g", protocol_type="consumer"), 5)
    outcomes = {r["api_key"]: r["outcomes"] for r in pair.profile()["recorded"]["requests"]}
    assert outcomes == {18: {"answered": 1}, 11: {"error:MEMBER_ID_REQUIRED": 1}}


def test_a_big_produce_is_forwarded_unread_and_acks_zero_expects_no_answer() -> None:
    pair = Pair("3.9")
    pair.send(ApiVersionsRequest(client_software_name="c", client_software_version="1"), 3)
    records = struct.pack(">qi", 0, 3 * KEEP_BYTES) + b"\x00" * (3 * KEEP_BYTES)
    produce = ProduceRequest(
        acks=0,
        timeout_ms=10,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="orders", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)]
            )
        ],
    )
    assert pair.send(produce, 9, chunk=4096) == b""
    pair.send(MetadataRequest(topics=[]), 12)
    assert len(pair.recorder._requests._kept) <= KEEP_BYTES
    outcomes = {r["api_key"]: r["outcomes"] for r in pair.profile()["recorded"]["requests"]}
    assert outcomes[0] == {"no-response": 1} and outcomes[3] == {"answered": 1}


def test_sasl_v0_tokens_are_never_read_and_later_requests_still_are() -> None:
    pair = Pair("3.9", sasl=SaslConfig({"alice": "s3cret"}, ["PLAIN"]))
    pair.send(SaslHandshakeRequest(mechanism="PLAIN"), 0, client_id="secure-app")
    token = b"\x00alice\x00s3cret"
    pair.raw(struct.pack(">i", len(token)) + token)
    pair.send(MetadataRequest(topics=[]), 9, client_id="secure-app")
    profile = pair.profile()
    assert b"s3cret" not in repr(profile).encode()
    assert {r["api_key"] for r in profile["recorded"]["requests"]} == {17, 3}


def test_the_book_is_bounded_in_clients() -> None:
    book = ProfileBook()
    for index in range(MAX_CLIENTS + 5):
        pair = Pair("3.9", book=book)
        pair.send(MetadataRequest(topics=[]), 9, client_id=f"app-{index}")
    assert len(book.clients) == MAX_CLIENTS + 1
    assert any(p["client"] == "(other clients)" for p in book.profiles())


def test_garbage_stops_the_reading_not_the_forwarding() -> None:
    book = ProfileBook()
    recorder = WireRecorder(book)
    recorder.from_client(b"\xff\xff\xff\xff whatever")
    assert recorder.broken
    recorder.from_client(b"more")  # ignored, no exception
    recorder.closed(by_broker=False)
    assert book.profiles() == []


def test_the_entries_of_one_client_are_bounded_whatever_keys_it_sends() -> None:
    from kafkacompat.negotiation.recording import MAX_ENTRIES

    book = ProfileBook()
    recorder = WireRecorder(book)
    for key in range(MAX_ENTRIES + 50):
        # a header with any api key and version: the client id is read, the rest is never trusted
        frame = struct.pack(">hhih", 1000 + key, 7, key, 3) + b"app"
        recorder.from_client(struct.pack(">i", len(frame)) + frame)
    (client,) = book.clients.values()
    assert len(client.outcomes) <= MAX_ENTRIES and len(client.unnegotiated) <= 2 * MAX_ENTRIES
    recorder.closed(by_broker=True)
    (profile,) = book.profiles()
    assert profile["recorded"]["dropped_requests"] == 50  # closed on, past the bound


def test_the_last_request_over_all_connections_is_kept_with_its_fate() -> None:
    # As against a silent 0.9: ApiVersions left unanswered on one connection, then the client
    # goes on over another and its last request (Metadata v0) is answered.
    book = ProfileBook()
    silent = WireRecorder(book)
    silent.from_client(framing.encode_request(ApiVersionsRequest(), 0, 1, "lib"))
    later = Pair("2.3", book)
    later.send(MetadataRequest(topics=[]), 0, client_id="lib")
    silent.closed(by_broker=False)  # noted last, but it was sent first
    assert later.profile()["recorded"]["last_request"] == {
        "api_key": 3, "version": 0, "outcome": "answered", "sequence": 2
    }
    # Left waiting on its last request: that one, unanswered.
    waiting = Pair("2.3")
    waiting.send(MetadataRequest(topics=[]), 0, client_id="lib")
    waiting.recorder.from_client(framing.encode_request(ApiVersionsRequest(), 0, 9, "lib"))
    waiting.recorder.closed(by_broker=False)
    last = waiting.profile()["recorded"]["last_request"]
    assert (last["api_key"], last["outcome"]) == (18, "unanswered")


def _header_only(
    recorder: WireRecorder, api_key: int, version: int, correlation: int, client_id: str
) -> None:
    name = client_id.encode()
    frame = struct.pack(">hhih", api_key, version, correlation, len(name)) + name
    recorder.from_client(struct.pack(">i", len(frame)) + frame)


def test_the_book_is_bounded_over_all_clients_and_counts_what_it_leaves_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kafkacompat.negotiation import recording

    monkeypatch.setattr(recording, "MAX_PAIRS", 100)
    monkeypatch.setattr(recording, "MAX_CLIENTS", 2)
    book = ProfileBook()
    for number in range(3):
        recorder = WireRecorder(book)
        for key in range(60):  # an unknown API key: a classic header, never offered
            _header_only(recorder, 1000 + key, 0, key, f"app-{number}")
        recorder.closed(by_broker=True)
    # Outcomes and "sent without an offer" flags share the book's bound.
    itemised = sum(len(c.outcomes) + len(c.unnegotiated) + len(c.below_offer) for c in book.clients.values())
    assert book.pairs == itemised == 100
    dropped = sum(c.dropped for c in book.clients.values())
    assert dropped == book.unitemised == 180 - sum(len(c.outcomes) for c in book.clients.values())
    assert book.pooled_connections == 1 and (recording.OVERFLOW_CLIENT, "") in book.clients
    note = book.bounds_note()
    assert "1 connections of clients past the first 2" in note and f"{book.unitemised} requests" in note
    profiles = book.profiles()
    assert all(validate_client_profile(p) == [] for p in profiles)
    assert sum(p["recorded"]["dropped_requests"] for p in profiles) == book.unitemised


def test_a_writer_takes_only_the_clients_that_changed() -> None:
    book = ProfileBook()
    first, second = WireRecorder(book), WireRecorder(book)
    _header_only(first, 3, 1, 1, "one")
    _header_only(second, 3, 1, 1, "two")
    assert [r.name for r in book.take_changed()] == ["one", "two"]
    assert book.take_changed() == []
    second.from_broker(struct.pack(">ii", 4, 1))  # the answer to "two"'s request
    assert [r.name for r in book.take_changed()] == ["two"]


def test_a_profile_in_pieces_is_the_profile() -> None:
    import json

    from kafkacompat.negotiation.recording_profile import client_profile, profile_pieces

    book = ProfileBook()
    for count in (0, 1, 64, 65, 300):
        recorder = WireRecorder(book)
        for key in range(count):
            _header_only(recorder, 1000 + key % 90, key // 90, key, f'odd "requests": [] {count}')
        recorder.closed(by_broker=count % 2 == 0)
    for record in book.clients.values():
        pieces = list(profile_pieces(record, per_piece=64))
        apis = len({key for key, _ in record.outcomes})
        assert len(pieces) == 3 + -(-apis // 64) + -(-len(record.outcomes) // 64)
        assert "".join(pieces) == json.dumps(client_profile(record), sort_keys=True)


def test_the_books_tables_are_left_out_of_garbage_collections() -> None:
    """A full collection walks every object the collector tracks: a full book's tables
    (MAX_PAIRS entries) must not be among them, only the few objects per client around them."""
    import gc

    book = ProfileBook()
    for number in range(20):
        pair = Pair("3.9", book)
        software = ApiVersionsRequest(client_software_name=f"app-{number}", client_software_version="1.0")
        pair.send(software, 3, client_id=f"app-{number}")
        pair.send(MetadataRequest(topics=[]), 4, client_id=f"app-{number}")  # below the offer: flagged
        for key in range(40):  # never offered: flagged as unnegotiated
            _header_only(pair.recorder, 1000 + key, 0, 100 + key, f"app-{number}")
        pair.recorder.closed(by_broker=True)
    gc.collect()  # untracks the tuples of atomic values...
    gc.collect()  # ...and then the dicts that hold only such
    for record in book.clients.values():
        assert record.unnegotiated and record.below_offer and record.client_ids and record.offered
        tables = (record.client_ids, record.outcomes, record.offered, record.unnegotiated, record.below_offer)
        assert not any(gc.is_tracked(table) for table in tables), record.key
        assert not any(gc.is_tracked(counts) for counts in record.outcomes.values())
