"""The size ceiling a driver applies to the handshake's next frame."""

from __future__ import annotations

from kafkacompat.negotiation.handshake import ApiVersionsHandshake
from kafkacompat.negotiation.handshake.types import ReceiveReply, SendProbe
from kafkacompat.protocol.reply_limits import ReplyLimits

LIMITS = ReplyLimits(legacy_probe=3 << 20)
MAX = 100 << 20


def test_an_apiversions_answer_is_held_to_its_own_ceiling() -> None:
    hs = ApiVersionsHandshake(node="b")
    hs.connected()
    hs.request_sent()
    assert hs.reply_ceiling(LIMITS, MAX) == (LIMITS.handshake, "ApiVersions")
    assert hs.reply_ceiling(LIMITS, 1000) == (1000, "ApiVersions")  # never above the frame limit


def test_while_the_metadata_probe_is_out_its_answer_may_list_every_topic() -> None:
    hs = ApiVersionsHandshake(node="b")
    hs.connected()
    hs.request_sent()
    action = hs.next_action()
    assert isinstance(action, ReceiveReply) and action.quiet_period is not None
    hs.quiet()
    assert isinstance(hs.next_action(), SendProbe)
    hs.request_sent()
    assert hs.reply_ceiling(LIMITS, MAX) == (3 << 20, "ApiVersions or Metadata v0")
    assert hs.reply_ceiling(ReplyLimits(), MAX)[0] == 2 << 20  # the default
