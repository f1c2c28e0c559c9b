"""Clusters a release cannot run, refused before anything starts, with the cause (found on real nodes)."""

from __future__ import annotations

from kafkacompat.errors import BrokerStartError
from kafkacompat.testing.apache_kafka.jars import parse_release

__all__ = ["check_cluster", "refuse_kafka_2_8_observers"]

# Kafka 2.8.x's KRaft (early access) cannot read a metadata record back from its log: the generated
# readers refuse any collection larger than Readable.remaining(), and 2.8's DataInputStreamReadable
# answers remaining() with InputStream.available(), which its ByteBufferInputStream leaves at 0.  A
# node that is the quorum's only voter gets its records in memory and works; every other node (a
# broker-only node, a second controller) reads them from the log and its raft thread dies on the
# first RegisterBrokerRecord ("Tried to allocate a collection of size 1, but there are only 0 bytes
# remaining"), so it never serves.  Seen on 2.8.2 with Java 17 and Java 11 alike.
_KAFKA_2_8_OBSERVERS = (
    "Apache Kafka {release}'s KRaft (early access) can run only one node that is both broker and "
    "controller: any other node reads the metadata log back and fails, because 2.8's "
    "DataInputStreamReadable.remaining() is InputStream.available(), 0 for its ByteBufferInputStream, "
    'so the first RegisterBrokerRecord read is refused ("Tried to allocate a collection of size 1, '
    'but there are only 0 bytes remaining")'
)


def refuse_kafka_2_8_observers(release: str, mode: str, brokers: int, controllers: int) -> None:
    if parse_release(release)[:2] != (2, 8) or mode == "zookeeper":
        return
    if mode == "kraft-split" or brokers > 1 or controllers > 1:
        raise BrokerStartError(_KAFKA_2_8_OBSERVERS.format(release=release))


def check_cluster(
    release: str, mode: str, modes: tuple[str, ...], brokers: int, controllers: int, formats: bool
) -> None:
    """Refuse a cluster ``release`` cannot be: a mode it lacks, no node, format options without KRaft."""
    if mode not in modes:
        raise BrokerStartError(
            f"Apache Kafka {release} cannot run in mode {mode!r}; it has {', '.join(modes)}"
        )
    if brokers < 1 or controllers < 1:
        raise BrokerStartError("a cluster needs at least one broker and one controller")
    refuse_kafka_2_8_observers(release, mode, brokers, controllers)
    if formats and mode == "zookeeper":
        raise BrokerStartError(
            "release_version and features are KRaft format options; zookeeper mode has none"
        )
