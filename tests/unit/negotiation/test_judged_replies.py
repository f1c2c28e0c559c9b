"""The memo of judged ApiVersions replies: the same bytes give the same verdict, nothing shared leaks.

A broker answers every connection with the same bytes, so the handshake judges
them once.  What a caller sees must not change: each result decodes its own
``response`` from the reply's bytes, refusals are judged every time, and the
memo stays bounded.
"""

from __future__ import annotations

import pytest

from kafkacompat.connection.client_connection import ClientConnection, Ready
from kafkacompat.errors import ConfigError
from kafkacompat.negotiation import capabilities
from kafkacompat.negotiation.capabilities import BrokerCapabilities, sealed
from kafkacompat.negotiation.handshake import reply as handshake_reply
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.negotiation.handshake.reply import judge_reply
from kafkacompat.negotiation.handshake.types import HandshakeResult
from kafkacompat.protocol.broker_framing import decode_request, encode_response
from kafkacompat.protocol.error_codes import UNSUPPORTED_VERSION
from kafkacompat.protocol.messages import ApiVersionsResponse
from kafkacompat.protocol.versions import VersionRange

Row = ApiVersionsResponse.ApiVersion


def answer(*rows: tuple[int, int, int], error_code: int = 0) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=error_code, api_keys=[Row(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in rows]
    )


def ready_for(reply: ApiVersionsResponse) -> Ready:
    """One whole connection setup answered with ``reply``: its Ready action."""
    connection = ClientConnection(node="h:1")
    connection.connected()
    header = decode_request(connection.next_action().data[4:]).header  # type: ignore[union-attr]
    connection.written()
    connection.receive_data(encode_response(reply, header.request_api_version, header.correlation_id))
    ready = connection.next_action()
    assert isinstance(ready, Ready)
    return ready


def negotiate(reply: ApiVersionsResponse) -> HandshakeResult:
    return ready_for(reply).handshake


def test_two_connections_with_the_same_answer_get_equal_results_and_their_own_response() -> None:
    reply = answer((18, 0, 4), (3, 0, 12), (0, 3, 11))
    first, second = negotiate(reply), negotiate(reply)
    assert first.api_ranges == second.api_ranges
    table = {key: (r.lowest, r.highest) for key, r in first.api_ranges.items()}
    assert table == {18: (0, 4), 3: (0, 12), 0: (3, 11)}
    assert first.reply == second.reply and first.response == second.response == reply
    assert first.response is not second.response and first.response is first.response
    assert first.response is not None and second.response is not None
    first.response.api_keys.clear()  # a caller changing its copy changes nobody else's
    assert second.response == reply and negotiate(reply).response == reply


def test_a_repeated_answer_is_judged_once() -> None:
    body = answer((18, 0, 4), (1, 0, 17)).encode(4)
    verdict = judge_reply(body, 4, HandshakeConfig())
    assert verdict.outcome == "ok" and verdict.reply == body
    assert judge_reply(bytearray(body), 4, HandshakeConfig()) is verdict
    assert judge_reply(body, 3, HandshakeConfig()) is not verdict  # another version asked: judged afresh


def test_refusals_and_outsized_answers_are_judged_every_time_and_the_memo_stays_bounded() -> None:
    refusal = answer((18, 0, 2), error_code=UNSUPPORTED_VERSION).encode(0)
    assert judge_reply(refusal, 4, HandshakeConfig()) is not judge_reply(refusal, 4, HandshakeConfig())
    outsized = answer((18, 0, 4), *((key, 0, 1) for key in range(1000, 1600))).encode(4)  # 4.2 KB
    assert len(outsized) > handshake_reply._JUDGED_MAX_BYTES
    assert judge_reply(outsized, 4, HandshakeConfig()) is not judge_reply(outsized, 4, HandshakeConfig())
    for high in range(handshake_reply._JUDGED_MAX * 2):
        judge_reply(answer((18, 0, 4), (3, 0, high)).encode(4), 4, HandshakeConfig())
        assert len(handshake_reply._JUDGED) <= handshake_reply._JUDGED_MAX


def capabilities_of(reply: ApiVersionsResponse) -> BrokerCapabilities:
    return ready_for(reply).capabilities


def test_capabilities_from_the_same_answer_share_one_table_in_key_order() -> None:
    reply = answer((18, 0, 4), (3, 0, 12), (0, 3, 11))  # not in key order, as Tansu answers
    first, second = capabilities_of(reply), capabilities_of(reply)
    assert list(first.api_ranges) == [0, 3, 18] and first.api_ranges is second.api_ranges
    assert list(negotiate(reply).api_ranges) == [18, 3, 0]  # the result keeps the broker's order
    assert BrokerCapabilities(node="x:1", api_ranges=first.api_ranges).api_ranges is first.api_ranges


def test_a_table_that_can_change_is_copied_every_time_and_a_bad_one_refused_every_time() -> None:
    table = {3: VersionRange(0, 12)}
    first = BrokerCapabilities(node="x:1", api_ranges=table)
    table[3] = VersionRange(0, 1)
    assert BrokerCapabilities(node="x:1", api_ranges=table).api_ranges[3] == VersionRange(0, 1)
    assert first.api_ranges[3] == VersionRange(0, 12)
    bad = sealed({True: VersionRange(0, 1)})
    for _ in range(2):
        with pytest.raises(TypeError, match="API keys are ints"):
            BrokerCapabilities(node="x:1", api_ranges=bad)


def test_the_remembered_tables_stay_bounded_and_the_oldest_leave_first() -> None:
    kept = sealed({1: VersionRange(0, 3)})
    for high in range(capabilities._SEALED_MAX * 2):
        BrokerCapabilities(node="x:1", api_ranges=kept)  # used all along: stays
        BrokerCapabilities.from_ranges("x:1", {2: (0, high)})
        assert len(capabilities._SEALED) <= capabilities._SEALED_MAX
    assert capabilities._SEALED.get(id(kept), [None])[0] is kept


def test_capabilities_from_a_result_are_what_the_constructor_makes_of_its_fields() -> None:
    result = negotiate(answer((18, 0, 4), (3, 0, 12), (0, 3, 11)))
    for node, node_id in ((None, None), ("other:2", 7)):
        made = BrokerCapabilities.from_handshake(result, node=node, node_id=node_id)
        expected = BrokerCapabilities(
            node=node or "h:1",
            node_id=node_id,
            api_ranges=dict(result.api_ranges),
            supported_features=dict(result.supported_features),
            finalized_features=dict(result.finalized_features),
            finalized_features_epoch=result.finalized_features_epoch,
            throttle_time_ms=result.throttle_time_ms,
            transcript=result.transcript,
            fallback_release=result.fallback_release,
        )
        assert type(made) is BrokerCapabilities and made == expected and hash(made) == hash(expected)
        assert list(vars(made).items()) == list(vars(expected).items())
        assert made.release_guess == expected.release_guess and "release_guess" in vars(made)
    with pytest.raises(ConfigError):
        BrokerCapabilities.from_handshake(result, node="")
