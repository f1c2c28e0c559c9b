"""Versions a broker advertises but that are usable only at some finalized feature level.

Theory.  ApiVersions says which versions a broker can read, not which ones the
cluster lets a client use: since KIP-584 some protocol changes are switched on
cluster-wide by a finalized feature level, and the broker keeps advertising
the new versions whatever the level.  A client that picks by the plain
intersection then sends a version whose meaning the cluster has not enabled.
The gates, from Kafka's own clients and brokers:

- ``transaction.version`` >= 2 (KIP-890 part 2, Kafka 4.0): Produce v12+ in a
  transaction, TxnOffsetCommit v5+ and EndTxn v5+.  Kafka's producer caps
  these at ``LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2`` (Produce 11,
  TxnOffsetCommit 4, EndTxn 4) unless the finalized transaction.version is 2
  or more (``Sender.sendProduceRequest`` passes ``useTransactionV1Version =
  !transactionManager.isTransactionV2Enabled()``; ``EndTxnRequest.Builder`` and
  ``TxnOffsetCommitRequest.Builder`` take the same flag).  The broker reads the
  version as the producer's promise: ``KafkaApis.handleEndTxnRequest`` takes
  EndTxn v5+ as a TV2 client.  A Produce v12 inside a transaction tells the
  broker the producer follows TV2 (no AddPartitionsToTxn), which a TV1
  cluster does not (franz-go's failure).  Produce outside a transaction is not
  gated.
- ``group.version`` >= 1 (KIP-848, Kafka 4.0): ConsumerGroupHeartbeat and
  ConsumerGroupDescribe.  ``core/.../KafkaApis.scala`` answers both
  UNSUPPORTED_VERSION (in the response, the connection stays up) unless
  ``isConsumerGroupProtocolEnabled``: the new group coordinator, "consumer" in
  ``group.coordinator.rebalance.protocols`` and
  ``GroupVersion.isConsumerRebalanceProtocolSupported`` (finalized
  group.version >= 1).  ApiVersions advertises both APIs whatever the level.
- ``share.version`` >= 1 (KIP-932; the feature is KAFKA-16894, Kafka 4.1):
  ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and ShareAcknowledge
  from v1 (their first stable version, KAFKA-19057), and
  DescribeShareGroupOffsets, AlterShareGroupOffsets and
  DeleteShareGroupOffsets from v0.  From 4.1 ``KafkaApis.scala`` answers each
  of them UNSUPPORTED_VERSION (per group where the response has groups)
  unless ``isShareGroupProtocolEnabled`` (``ShareVersion.supportsShareGroups``,
  or the internal ``group.share.enable`` switch), and keeps advertising them.
  4.1 bootstraps share.version 0 (preview; ``kafka-features upgrade --feature
  share.version=1`` turns share groups on), 4.2 bootstraps 1.  The share-state
  APIs brokers send each other (InitializeShareGroupState and the rest) are
  not gated.  The early-access v0 of the first four (4.0, behind
  ``unstable.api.versions.enable`` and ``group.share.enable``) predates the
  feature; 4.1 dropped it, which ``removed_in_4`` in ``verdicts`` knows.

A broker that reports no finalized features (ZooKeeper clusters finalize
nothing; releases before 2.7 report none) is at level 0 of each: the gated
versions are not usable there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafkacompat.protocol.versions import VersionRange

__all__ = ["FEATURE_GATES", "FeatureGate", "gates_for", "level_of"]


@dataclass(frozen=True, slots=True)
class FeatureGate:
    """``versions`` of ``api_key`` need the finalized ``feature`` at ``min_level`` or above."""

    api_key: int
    versions: VersionRange
    feature: str
    min_level: int
    source: str
    in_transaction_only: bool = False

    def describe(self, level: int) -> str:
        scope = " in a transaction" if self.in_transaction_only else ""
        needs = f"{self.feature} >= {self.min_level}"
        return f"v{self.versions.lowest}+{scope} needs {needs}, the cluster has {level}"


# Where each rule rests in Kafka itself: the KIP, the ticket, the source file and release.
_TV2 = "KIP-890; Kafka 4.0 {Produce,TxnOffsetCommit,EndTxn}Request.LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2"
_GROUP = "KIP-848; Kafka 4.0 KafkaApis.scala isConsumerGroupProtocolEnabled"
_SHARE = "KIP-932, KAFKA-16894; Kafka 4.1 KafkaApis.scala isShareGroupProtocolEnabled"
FEATURE_GATES: tuple[FeatureGate, ...] = (
    FeatureGate(0, VersionRange(12, 32767), "transaction.version", 2, _TV2, in_transaction_only=True),
    FeatureGate(26, VersionRange(5, 32767), "transaction.version", 2, _TV2),
    FeatureGate(28, VersionRange(5, 32767), "transaction.version", 2, _TV2),
    *(FeatureGate(key, VersionRange(0, 32767), "group.version", 1, _GROUP) for key in (68, 69)),
    *(FeatureGate(key, VersionRange(1, 32767), "share.version", 1, _SHARE) for key in (76, 77, 78, 79)),
    *(FeatureGate(key, VersionRange(0, 32767), "share.version", 1, _SHARE) for key in (90, 91, 92)),
)
_BY_KEY: dict[int, tuple[FeatureGate, ...]] = {}
for _gate in FEATURE_GATES:
    _BY_KEY[_gate.api_key] = (*_BY_KEY.get(_gate.api_key, ()), _gate)


def gates_for(api_key: int, *, in_transaction: bool = False) -> tuple[FeatureGate, ...]:
    """The gates on ``api_key`` (Produce's only for a request in a transaction)."""
    return tuple(g for g in _BY_KEY.get(api_key, ()) if in_transaction or not g.in_transaction_only)


def level_of(finalized: Mapping[str, VersionRange | int], feature: str) -> int:
    """The finalized level of ``feature`` (0 when not finalized)."""
    value = finalized.get(feature)
    if value is None:
        return 0
    return value if isinstance(value, int) else value.highest
