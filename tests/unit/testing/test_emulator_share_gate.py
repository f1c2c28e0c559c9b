"""The emulator's Share APIs answer as Kafka's KafkaApis does from 4.1: gated on share.version."""

from __future__ import annotations

import pytest

from kafkacompat.protocol.error_codes import BY_NAME
from kafkacompat.protocol.messages import (
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
)
from kafkacompat.testing.emulator.fallback import share_api
from kafkacompat.testing.emulator.handlers import Request
from kafkacompat.testing.emulator.state import ClusterState
from tests.unit.testing.emulator_harness import Harness, cluster

UNSUPPORTED_VERSION = BY_NAME["UNSUPPORTED_VERSION"].code
REQUEST_WIDE = [
    ShareGroupHeartbeatRequest(group_id="g"),
    ShareFetchRequest(group_id="g"),
    ShareAcknowledgeRequest(),
]


def share_state(release: str, **finalized: int) -> ClusterState:
    levels = {name.replace("_", "."): level for name, level in finalized.items()}
    return cluster(f"{release}/kraft-broker", finalized_features=levels or None)


@pytest.mark.parametrize("request_", REQUEST_WIDE, ids=lambda r: type(r).__name__)
def test_share_apis_are_refused_below_share_version_1(request_: object) -> None:
    preview = share_state("4.1")  # 4.1 bootstraps share.version 0: share groups are a preview
    assert "share.version" not in preview.finalized
    assert Harness(preview).call(request_, 1).error_code == UNSUPPORTED_VERSION  # type: ignore[arg-type]
    enabled = share_state("4.1", metadata_version=27, share_version=1)  # kafka-features upgrade
    assert Harness(enabled).call(request_, 1).error_code == 0  # type: ignore[arg-type]
    assert Harness(share_state("4.2")).call(request_, 1).error_code == 0  # type: ignore[arg-type]


def test_share_group_describe_refuses_each_group_named() -> None:
    # Called directly: the codec reads ShareGroupDescribe v0 only, so v1 never reaches it on the wire.
    def describe(state: ClusterState) -> ShareGroupDescribeResponse:
        body = ShareGroupDescribeRequest(group_ids=["a", "b"])
        answer = share_api(Request(state.nodes[1], state, 77, 1, 1, "unit-tests", body))
        assert isinstance(answer, ShareGroupDescribeResponse)
        return answer

    refused = describe(share_state("4.1"))
    assert [(g.group_id, g.error_code) for g in refused.groups] == [
        ("a", UNSUPPORTED_VERSION),
        ("b", UNSUPPORTED_VERSION),
    ]
    assert describe(share_state("4.2")).groups == []
