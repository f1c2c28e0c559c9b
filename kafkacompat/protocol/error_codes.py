"""Kafka's protocol error codes as a table.

Every code Apache Kafka defines in its ``Errors`` enum (``-1`` … ``133``, as of
Kafka 4.x), with the enum's name and the retriable flag Kafka gives it: an error
is retriable exactly when Kafka's exception class for it extends
``RetriableException`` (directly or through ``InvalidMetadataException``).  The
one-line messages are our own wording.

Codes the table does not know (a newer broker, a broken peer) are never an
exception here: ``error_for`` answers with a synthetic, non-retriable
``UNKNOWN_CODE_<n>`` entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = [
    "BY_CODE",
    "BY_NAME",
    "CLUSTER_AUTHORIZATION_FAILED",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "FEATURE_UPDATE_FAILED",
    "GROUP_AUTHORIZATION_FAILED",
    "ILLEGAL_SASL_STATE",
    "INVALID_REQUEST",
    "INVALID_UPDATE_VERSION",
    "NONE",
    "NOT_COORDINATOR",
    "SASL_AUTHENTICATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    "UNKNOWN_SERVER_ERROR",
    "UNSUPPORTED_SASL_MECHANISM",
    "UNSUPPORTED_VERSION",
    "KafkaErrorCode",
    "error_for",
]


@dataclass(frozen=True, slots=True)
class KafkaErrorCode:
    """One protocol error code: its number, Kafka's name, whether Kafka retries it, a summary."""

    code: int
    name: str
    retriable: bool
    message: str


_R = True  # retriable
_F = False  # not retriable

# (code, name, retriable, message)
_TABLE: Final[tuple[tuple[int, str, bool, str], ...]] = (
    (-1, "UNKNOWN_SERVER_ERROR", _F, "The broker failed in a way it could not classify."),
    (0, "NONE", _F, "No error."),
    (1, "OFFSET_OUT_OF_RANGE", _F, "The offset asked for lies outside the partition's log."),
    (2, "CORRUPT_MESSAGE", _R, "A record failed its checksum or size checks."),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", _R, "The broker does not host that topic or partition."),
    (4, "INVALID_FETCH_SIZE", _F, "The fetch size in the request is not acceptable."),
    (5, "LEADER_NOT_AVAILABLE", _R, "The partition has no leader right now (election under way)."),
    (6, "NOT_LEADER_OR_FOLLOWER", _R, "This broker does not lead, or replicate, the partition."),
    (7, "REQUEST_TIMED_OUT", _R, "The broker gave up on the request after a timeout."),
    (8, "BROKER_NOT_AVAILABLE", _F, "The broker named is not available."),
    (9, "REPLICA_NOT_AVAILABLE", _R, "The replica of the partition is not available."),
    (10, "MESSAGE_TOO_LARGE", _F, "A record is larger than the broker accepts."),
    (11, "STALE_CONTROLLER_EPOCH", _F, "The request came from a superseded controller."),
    (12, "OFFSET_METADATA_TOO_LARGE", _F, "The metadata of a committed offset is too long."),
    (13, "NETWORK_EXCEPTION", _R, "The connection was lost before a response came back."),
    (14, "COORDINATOR_LOAD_IN_PROGRESS", _R, "The coordinator is still loading its state."),
    (15, "COORDINATOR_NOT_AVAILABLE", _R, "No coordinator is available for the key."),
    (16, "NOT_COORDINATOR", _R, "This broker is not the coordinator for the key."),
    (17, "INVALID_TOPIC_EXCEPTION", _F, "The topic name is not valid or may not be used."),
    (18, "RECORD_LIST_TOO_LARGE", _F, "A record batch is larger than the broker's segment size."),
    (19, "NOT_ENOUGH_REPLICAS", _R, "Too few in-sync replicas to accept the write."),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", _R, "Written, but to too few in-sync replicas."),
    (21, "INVALID_REQUIRED_ACKS", _F, "The acks value of the produce request is not valid."),
    (22, "ILLEGAL_GENERATION", _F, "The group generation in the request is not the current one."),
    (23, "INCONSISTENT_GROUP_PROTOCOL", _F, "The member's protocols do not match the group's."),
    (24, "INVALID_GROUP_ID", _F, "The group id is empty or otherwise not valid."),
    (25, "UNKNOWN_MEMBER_ID", _F, "The coordinator does not know this member id."),
    (26, "INVALID_SESSION_TIMEOUT", _F, "The session timeout is outside the allowed range."),
    (27, "REBALANCE_IN_PROGRESS", _F, "The group is rebalancing; the member has to rejoin."),
    (28, "INVALID_COMMIT_OFFSET_SIZE", _F, "The offset commit payload has a bad size."),
    (29, "TOPIC_AUTHORIZATION_FAILED", _F, "Not authorized to access the topic."),
    (30, "GROUP_AUTHORIZATION_FAILED", _F, "Not authorized to access the group."),
    (31, "CLUSTER_AUTHORIZATION_FAILED", _F, "Not authorized for this cluster-level operation."),
    (32, "INVALID_TIMESTAMP", _F, "A record timestamp is outside the accepted range."),
    (33, "UNSUPPORTED_SASL_MECHANISM", _F, "The broker does not offer that SASL mechanism."),
    (34, "ILLEGAL_SASL_STATE", _F, "Not allowed at this step of the SASL exchange."),
    (35, "UNSUPPORTED_VERSION", _F, "The broker does not support this version of the API."),
    (36, "TOPIC_ALREADY_EXISTS", _F, "A topic with that name exists already."),
    (37, "INVALID_PARTITIONS", _F, "The partition count is not valid."),
    (38, "INVALID_REPLICATION_FACTOR", _F, "The replication factor cannot be met or is not valid."),
    (39, "INVALID_REPLICA_ASSIGNMENT", _F, "The replica assignment is not valid."),
    (40, "INVALID_CONFIG", _F, "A configuration value is not valid."),
    (41, "NOT_CONTROLLER", _R, "This broker is not the active controller."),
    (42, "INVALID_REQUEST", _F, "The broker could not make sense of the request."),
    (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", _F, "The message format cannot serve this request."),
    (44, "POLICY_VIOLATION", _F, "The request breaks a policy configured on the broker."),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", _F, "The producer sequence number is out of order."),
    (46, "DUPLICATE_SEQUENCE_NUMBER", _F, "The producer sequence number was seen before."),
    (47, "INVALID_PRODUCER_EPOCH", _F, "The producer epoch is older than the current one."),
    (48, "INVALID_TXN_STATE", _F, "Not allowed in the transaction's current state."),
    (
        49,
        "INVALID_PRODUCER_ID_MAPPING",
        _F,
        "The producer id is not mapped to the transactional id.",
    ),
    (50, "INVALID_TRANSACTION_TIMEOUT", _F, "The transaction timeout is above the maximum."),
    (51, "CONCURRENT_TRANSACTIONS", _R, "Another operation on the transaction is running."),
    (52, "TRANSACTION_COORDINATOR_FENCED", _F, "The sending transaction coordinator was replaced."),
    (53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", _F, "Not authorized for the transactional id."),
    (54, "SECURITY_DISABLED", _F, "Security features are turned off on the broker."),
    (55, "OPERATION_NOT_ATTEMPTED", _F, "Skipped because another part of the batch failed."),
    (56, "KAFKA_STORAGE_ERROR", _R, "The broker hit a disk error reading or writing the log."),
    (57, "LOG_DIR_NOT_FOUND", _F, "The log directory named is not configured on the broker."),
    (58, "SASL_AUTHENTICATION_FAILED", _F, "SASL authentication did not succeed."),
    (59, "UNKNOWN_PRODUCER_ID", _F, "The broker holds no state for this producer id."),
    (60, "REASSIGNMENT_IN_PROGRESS", _F, "A partition reassignment is already under way."),
    (61, "DELEGATION_TOKEN_AUTH_DISABLED", _F, "Delegation tokens are not enabled."),
    (62, "DELEGATION_TOKEN_NOT_FOUND", _F, "The broker has no such delegation token."),
    (63, "DELEGATION_TOKEN_OWNER_MISMATCH", _F, "The principal neither owns nor renews the token."),
    (64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", _F, "Token requests not allowed on this channel."),
    (65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", _F, "Not authorized for the token operation."),
    (66, "DELEGATION_TOKEN_EXPIRED", _F, "The delegation token has expired."),
    (67, "INVALID_PRINCIPAL_TYPE", _F, "The principal type is not supported."),
    (68, "NON_EMPTY_GROUP", _F, "The group still has members."),
    (69, "GROUP_ID_NOT_FOUND", _F, "No group has that id."),
    (70, "FETCH_SESSION_ID_NOT_FOUND", _R, "The broker does not know the fetch session id."),
    (71, "INVALID_FETCH_SESSION_EPOCH", _R, "The fetch session epoch does not match."),
    (72, "LISTENER_NOT_FOUND", _R, "The leader has no endpoint on the listener the request used."),
    (73, "TOPIC_DELETION_DISABLED", _F, "Deleting topics is turned off on the broker."),
    (74, "FENCED_LEADER_EPOCH", _R, "The leader epoch sent is older than the broker's."),
    (75, "UNKNOWN_LEADER_EPOCH", _R, "The leader epoch sent is newer than the broker's."),
    (76, "UNSUPPORTED_COMPRESSION_TYPE", _F, "The client cannot read the partition's compression."),
    (77, "STALE_BROKER_EPOCH", _F, "The broker epoch in the request is out of date."),
    (78, "OFFSET_NOT_AVAILABLE", _R, "The offset cannot be given yet after a leader change."),
    (79, "MEMBER_ID_REQUIRED", _F, "The member has to join again with the member id it was given."),
    (80, "PREFERRED_LEADER_NOT_AVAILABLE", _R, "The preferred leader cannot take leadership now."),
    (81, "GROUP_MAX_SIZE_REACHED", _F, "The group is full."),
    (82, "FENCED_INSTANCE_ID", _F, "Another member registered the same static instance id."),
    (83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", _R, "No eligible leader is available."),
    (84, "ELECTION_NOT_NEEDED", _R, "The partition already has the leader it would elect."),
    (85, "NO_REASSIGNMENT_IN_PROGRESS", _F, "There is no partition reassignment to act on."),
    (86, "GROUP_SUBSCRIBED_TO_TOPIC", _F, "The group is subscribed to the topic; offsets stay."),
    (87, "INVALID_RECORD", _F, "The broker rejected a record that failed its validation."),
    (88, "UNSTABLE_OFFSET_COMMIT", _R, "Pending transactional offsets must settle first."),
    (89, "THROTTLING_QUOTA_EXCEEDED", _R, "The request went over a throttling quota."),
    (90, "PRODUCER_FENCED", _F, "A newer producer with the same transactional id took over."),
    (91, "RESOURCE_NOT_FOUND", _F, "The request refers to a resource that does not exist."),
    (92, "DUPLICATE_RESOURCE", _F, "The request names the same resource more than once."),
    (93, "UNACCEPTABLE_CREDENTIAL", _F, "The credential does not meet the broker's requirements."),
    (94, "INCONSISTENT_VOTER_SET", _F, "Sender or receiver is not among the expected voters."),
    (95, "INVALID_UPDATE_VERSION", _F, "The feature version update is not valid."),
    (96, "FEATURE_UPDATE_FAILED", _F, "The broker could not apply the finalized feature update."),
    (97, "PRINCIPAL_DESERIALIZATION_FAILURE", _F, "A forwarded principal could not be decoded."),
    (98, "SNAPSHOT_NOT_FOUND", _F, "No snapshot matches the one asked for."),
    (99, "POSITION_OUT_OF_RANGE", _F, "The snapshot position is outside the snapshot."),
    (100, "UNKNOWN_TOPIC_ID", _R, "The broker does not host a topic with that id."),
    (101, "DUPLICATE_BROKER_REGISTRATION", _F, "A broker with this id is registered already."),
    (102, "BROKER_ID_NOT_REGISTERED", _F, "No broker with this id is registered."),
    (103, "INCONSISTENT_TOPIC_ID", _R, "The topic id does not match the one in the log."),
    (104, "INCONSISTENT_CLUSTER_ID", _F, "The cluster id does not match the broker's."),
    (105, "TRANSACTIONAL_ID_NOT_FOUND", _F, "No transaction has that transactional id."),
    (106, "FETCH_SESSION_TOPIC_ID_ERROR", _R, "The fetch session mixed topic ids inconsistently."),
    (107, "INELIGIBLE_REPLICA", _F, "The proposed ISR contains a replica that may not be in it."),
    (108, "NEW_LEADER_ELECTED", _F, "The partition state changed, but so did its leader."),
    (109, "OFFSET_MOVED_TO_TIERED_STORAGE", _F, "The offset now lives in tiered storage."),
    (110, "FENCED_MEMBER_EPOCH", _F, "The member epoch was fenced; the member must rejoin."),
    (111, "UNRELEASED_INSTANCE_ID", _F, "The static instance id is still held by another member."),
    (112, "UNSUPPORTED_ASSIGNOR", _F, "The group does not support the assignor or its version."),
    (113, "STALE_MEMBER_EPOCH", _F, "The member epoch is behind the coordinator's."),
    (114, "MISMATCHED_ENDPOINT_TYPE", _F, "The request reached an endpoint of the wrong kind."),
    (115, "UNSUPPORTED_ENDPOINT_TYPE", _F, "That kind of endpoint is not supported."),
    (116, "UNKNOWN_CONTROLLER_ID", _F, "No controller with that id is known."),
    (117, "UNKNOWN_SUBSCRIPTION_ID", _F, "The telemetry subscription id is unknown or stale."),
    (118, "TELEMETRY_TOO_LARGE", _F, "The telemetry payload is larger than the broker accepts."),
    (119, "INVALID_REGISTRATION", _F, "The controller judged the broker registration not valid."),
    (120, "TRANSACTION_ABORTABLE", _F, "The transaction failed; abort it to carry on."),
    (121, "INVALID_RECORD_STATE", _F, "The record's delivery state forbids the acknowledgement."),
    (122, "SHARE_SESSION_NOT_FOUND", _R, "The broker does not know the share session."),
    (123, "INVALID_SHARE_SESSION_EPOCH", _R, "The share session epoch does not match."),
    (124, "FENCED_STATE_EPOCH", _F, "The share-group state epoch does not match."),
    (125, "INVALID_VOTER_KEY", _F, "The voter key is not the receiving replica's."),
    (126, "DUPLICATE_VOTER", _F, "The voter is in the voter set already."),
    (127, "VOTER_NOT_FOUND", _F, "The voter is not in the voter set."),
    (128, "INVALID_REGULAR_EXPRESSION", _F, "The regular expression cannot be used."),
    (129, "REBOOTSTRAP_REQUIRED", _F, "The client's metadata is stale; it should bootstrap again."),
    (130, "STREAMS_INVALID_TOPOLOGY", _F, "The streams topology is not valid."),
    (131, "STREAMS_INVALID_TOPOLOGY_EPOCH", _F, "The streams topology epoch is not valid."),
    (132, "STREAMS_TOPOLOGY_FENCED", _F, "The streams topology epoch is out of date."),
    (133, "SHARE_SESSION_LIMIT_REACHED", _R, "The broker cannot open more share sessions."),
)

BY_CODE: Final[Mapping[int, KafkaErrorCode]] = MappingProxyType(
    {code: KafkaErrorCode(code, name, retriable, message) for code, name, retriable, message in _TABLE}
)
BY_NAME: Final[Mapping[str, KafkaErrorCode]] = MappingProxyType(
    {entry.name: entry for entry in BY_CODE.values()}
)


def error_for(code: int) -> KafkaErrorCode:
    """The table entry for ``code``, or a synthetic non-retriable ``UNKNOWN_CODE_<n>`` entry."""
    entry = BY_CODE.get(code)
    if entry is not None:
        return entry
    return KafkaErrorCode(code, f"UNKNOWN_CODE_{code}", False, f"Error code {code} is not one Kafka defines.")


# The codes the rest of the library names often, as plain ints.
UNKNOWN_SERVER_ERROR: Final = -1
NONE: Final = 0
NOT_COORDINATOR: Final = 16
COORDINATOR_LOAD_IN_PROGRESS: Final = 14
COORDINATOR_NOT_AVAILABLE: Final = 15
GROUP_AUTHORIZATION_FAILED: Final = 30
CLUSTER_AUTHORIZATION_FAILED: Final = 31
UNSUPPORTED_SASL_MECHANISM: Final = 33
ILLEGAL_SASL_STATE: Final = 34
UNSUPPORTED_VERSION: Final = 35
INVALID_REQUEST: Final = 42
TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Final = 53
SASL_AUTHENTICATION_FAILED: Final = 58
INVALID_UPDATE_VERSION: Final = 95
FEATURE_UPDATE_FAILED: Final = 96
