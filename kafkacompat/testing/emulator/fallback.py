"""What the emulator answers beyond the handshake: client traffic and a generic default.

Theory.  An emulated release must answer every API it advertises, at every
version it advertises, or a real client stops at the first request the
emulator does not model (a broker that closes on a request it advertised is
not any Kafka release).  Two layers do that:

- ``TRAFFIC_HANDLERS``: the APIs real clients need to get through their
  everyday traffic (produce, consume in a group, commit, admin on groups and
  topics, transactions), with the minimal state of ``logs`` and ``groups``.
  Their answers are trimmed to the request's version in one place
  (``fit_to_version``): fields a version lacks go back to their defaults.
  The Share APIs (KIP-932) are not modelled beyond their feature gate: below
  a finalized share.version 1 they answer UNSUPPORTED_VERSION, as Kafka's
  ``KafkaApis.isShareGroupProtocolEnabled`` does from 4.1 (the rule is read
  from ``negotiation.feature_gates``); above it, the default answer.
- ``default_answer``: for every other API the release advertises, the
  generated response class with its defaults (error code 0, empty lists,
  null strings), encoded at the request's version.  The codec writes a
  well-formed body for every version from defaults, so the answer always
  parses; it says "nothing to report", which is what a broker with no such
  resources would say.

The connection consults, in order: a handler of the caller's, the built-in
handshake handlers, ``TRAFFIC_HANDLERS``, then ``default_answer``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from kafkacompat.negotiation.feature_gates import gates_for, level_of
from kafkacompat.protocol import messages
from kafkacompat.protocol.error_codes import BY_NAME
from kafkacompat.protocol.message import KafkaMessage, KafkaStruct
from kafkacompat.protocol.messages import ApiKey
from kafkacompat.testing.emulator import groups, logs
from kafkacompat.testing.emulator.handlers import Handler, Request

__all__ = ["TRAFFIC_HANDLERS", "default_answer", "fit_to_version"]

_MODELLED: Mapping[int, Handler] = {
    ApiKey.PRODUCE: logs.produce,
    ApiKey.FETCH: logs.fetch,
    ApiKey.LIST_OFFSETS: logs.list_offsets,
    ApiKey.OFFSET_COMMIT: groups.offset_commit,
    ApiKey.OFFSET_FETCH: groups.offset_fetch,
    ApiKey.JOIN_GROUP: groups.join_group,
    ApiKey.HEARTBEAT: groups.heartbeat,
    ApiKey.LEAVE_GROUP: groups.leave_group,
    ApiKey.SYNC_GROUP: groups.sync_group,
    ApiKey.DESCRIBE_GROUPS: groups.describe_groups,
    ApiKey.LIST_GROUPS: groups.list_groups,
    ApiKey.CREATE_TOPICS: logs.create_topics,
    ApiKey.DELETE_TOPICS: logs.delete_topics,
    ApiKey.INIT_PRODUCER_ID: groups.init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: logs.offset_for_leader_epoch,
    ApiKey.ADD_PARTITIONS_TO_TXN: groups.add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: groups.add_offsets_to_txn,
    ApiKey.END_TXN: groups.end_txn,
    ApiKey.TXN_OFFSET_COMMIT: groups.txn_offset_commit,
    ApiKey.DELETE_GROUPS: groups.delete_groups,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: groups.consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: groups.consumer_group_describe,
}


def fit_to_version(message: KafkaStruct, version: int) -> None:
    """Reset every field ``version`` does not have to its default, so the codec can encode it.

    The traffic handlers fill fields freely (a leader epoch, a log start offset)
    and leave it to this one place to drop what an older version cannot carry.
    """
    fresh = type(message)()
    for info in message._FIELDS:
        value = getattr(message, info.name)
        if version not in info.versions:
            setattr(message, info.name, getattr(fresh, info.name))
        elif info.struct is not None and value is not None:
            for item in value if info.is_array else (value,):
                fit_to_version(item, version)


def _fitted(handler: Handler) -> Handler:
    def answer(request: Request) -> KafkaMessage:
        response = handler(request)
        fit_to_version(response, request.version)
        return response

    answer.__name__ = answer.__qualname__ = handler.__name__
    answer.__doc__ = handler.__doc__
    return answer


def share_api(request: Request) -> KafkaMessage:
    """A Share API: UNSUPPORTED_VERSION while its feature gate is closed, else the default answer.

    Kafka answers a request-wide error where the response has one, and each
    group named where it lists groups (ShareGroupDescribe).
    """
    response = default_answer(request)
    levels = request.state.features_seen_by(request.node).levels
    closed = [
        gate
        for gate in gates_for(request.api_key)
        if request.version in gate.versions and level_of(levels, gate.feature) < gate.min_level
    ]
    if not closed:
        return response
    if hasattr(response, "error_code"):
        response.error_code = _UNSUPPORTED_VERSION
    if isinstance(response, messages.ShareGroupDescribeResponse):
        body = request.body
        assert isinstance(body, messages.ShareGroupDescribeRequest)
        described = messages.ShareGroupDescribeResponse.DescribedGroup
        refused = _UNSUPPORTED_VERSION
        response.groups = [described(group_id=group, error_code=refused) for group in body.group_ids]
    return response


_UNSUPPORTED_VERSION = BY_NAME["UNSUPPORTED_VERSION"].code
_SHARE_APIS = (76, 77, 78, 79)  # the ones the codec reads; the share-offsets APIs it does not
TRAFFIC_HANDLERS: Mapping[int, Handler] = {
    **{key: _fitted(handler) for key, handler in _MODELLED.items()},
    **{key: _fitted(share_api) for key in _SHARE_APIS},
}


def default_answer(request: Request) -> KafkaMessage:
    """The API's response with every field at its default: error 0, nothing listed."""
    name = messages.CLASS_BY_KEY.get((request.api_key, "response"))
    if name is None:  # the connection only dispatches keys the codec can read
        raise LookupError(f"the codec has no response for API key {request.api_key}")
    return cast("type[KafkaMessage]", getattr(messages, name))()
