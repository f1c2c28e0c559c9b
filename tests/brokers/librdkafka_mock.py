"""librdkafka's built-in mock cluster (inside confluent-kafka), as a test peer.

Setting ``test.mock.num.brokers`` on a librdkafka client makes that client start
an in-process mock Kafka cluster listening on 127.0.0.1 and bootstrap against
it.  The mock lives exactly as long as the owning client, so
``LibrdkafkaMockCluster`` keeps a Producer open while it is entered, and reads
the mock broker's address from the cluster metadata that client fetches.
"""

from __future__ import annotations

from types import TracebackType

import confluent_kafka

from kafkacompat.errors import BrokerStartError
from tests.brokers import LOOPBACK
from tests.brokers.raw import api_versions_request, exchange, parse_api_versions

__all__ = ["LibrdkafkaMockCluster"]


class LibrdkafkaMockCluster:
    """A one-broker (by default) librdkafka mock cluster on 127.0.0.1."""

    def __init__(self, *, num_brokers: int = 1, timeout: float = 10.0) -> None:
        self.num_brokers = num_brokers
        self.timeout = timeout
        self.host = LOOPBACK
        self.port = 0
        self.brokers: dict[int, tuple[str, int]] = {}
        self._owner: confluent_kafka.Producer | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def __enter__(self) -> LibrdkafkaMockCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        if self._owner is not None:
            raise RuntimeError("this LibrdkafkaMockCluster is already started")
        self._owner = confluent_kafka.Producer(
            {
                "test.mock.num.brokers": self.num_brokers,
                "client.id": "kafkacompat-mock-owner",
            }
        )
        try:
            self._read_address()
            reply = exchange(self.host, self.port, api_versions_request(0, 1), self.timeout)
            if parse_api_versions(reply, 0).correlation_id != 1:
                raise BrokerStartError(f"mock broker answered oddly: {reply.hex()}")
        except BaseException:
            self.close()
            raise

    def _read_address(self) -> None:
        assert self._owner is not None
        try:
            metadata = self._owner.list_topics(timeout=self.timeout)
        except confluent_kafka.KafkaException as exc:
            raise BrokerStartError(f"librdkafka mock cluster gave no metadata: {exc}") from exc
        self.brokers = {b.id: (b.host, b.port) for b in metadata.brokers.values()}
        if len(self.brokers) != self.num_brokers:
            raise BrokerStartError(f"expected {self.num_brokers} mock brokers, got {self.brokers}")
        host, port = self.brokers[min(self.brokers)]
        if host != LOOPBACK:
            raise BrokerStartError(f"mock broker listens on {host}, not {LOOPBACK}")
        self.port = port

    def close(self) -> None:
        owner, self._owner = self._owner, None
        if owner is not None:
            owner.flush(self.timeout)
            owner.close()
