"""``check``'s verdicts against what measured clients really do on real brokers (the confusion table).

A representative set of cells: measured client releases in four languages run
their traffic through ``kafkacompat record`` against a real Apache Kafka 4.4
(KRaft) and 2.8 (ZooKeeper), Tansu, noida-db and librdkafka's mock, next to
``kafkacompat check measured --cluster`` of each broker's snapshot.  Each
broker starts once for all its cells.  The whole table (every measured client
on every real broker, the real 0.9.0.1 among them: its cells in ``make test``
are tests/integration/legacy/test_kafka09_verdicts.py) is ``make
verdict-table``.  Nothing is skipped: a broker or client that cannot be
installed fails the test.
"""

from __future__ import annotations

import pytest

from kafkacompat.negotiation.lookalikes import lookalikes
from kafkacompat.profiles.brokers import MOCK, NOIDA, TANSU, RecordedBroker
from kafkacompat.profiles.confusion import cells, markdown, summary
from kafkacompat.profiles.installs import CLIENTS
from kafkacompat.testing.deviation_probe import REQUESTS, api_versions_above, probe_one

pytestmark = pytest.mark.broker

APACHE_NEW, APACHE_OLD = "4.4.0/kraft-combined", "2.8.2/zookeeper"
API_VERSIONS = 18
# broker -> clients: Python (kafka-python's release table, librdkafka), Java before 2.1 on 4.4
# (KIP-1124), Go (sarama 1.40.1: versions 4.x removed; DescribeConfigs v0 noida-db closes on), Node.
PLAN = {
    APACHE_NEW: (
        "kafka-python@2.0.2",
        "confluent-kafka@2.16.1",
        "kafka-clients@2.0.1",
        "sarama@1.40.1",
        "kafkajs@2.2.4",
    ),
    APACHE_OLD: ("kafka-python@2.0.2", "confluent-kafka@2.16.1", "kafkajs@2.2.4"),
    TANSU: ("confluent-kafka@2.16.1", "kafkajs@2.2.4"),
    NOIDA: ("sarama@1.40.1", "kafka-python@2.0.2"),
    MOCK: ("confluent-kafka@2.16.1", "kafkajs@2.2.4"),
}


def test_verdicts_match_what_the_clients_do_on_real_brokers() -> None:
    by_name = {f"{c.library}@{c.release}": c for c in CLIENTS}
    plan = {broker: [by_name[name] for name in names] for broker, names in PLAN.items()}
    answered: dict[tuple[int, int], str] = {}

    def kafka_answers_what_lookalikes_close_on(broker: RecordedBroker) -> None:
        if broker.name != APACHE_OLD:
            return
        host, _, port = broker.upstream.rpartition(":")
        for software in lookalikes():
            for d in software.deviations:
                for version in range(d.versions.lowest, d.versions.highest + 1):
                    if d.api_key in REQUESTS and "closes the connection" in d.answer:
                        answered[(d.api_key, version)] = probe_one(host, int(port), d.api_key, version)
                    elif d.api_key == API_VERSIONS and version > 3:  # 2.8 has ApiVersions 0-3
                        layout = api_versions_above(host, int(port), version)
                        answered[(d.api_key, version)] = "answered" if layout == "v0 layout" else layout

    table = cells(plan, while_running=kafka_answers_what_lookalikes_close_on)
    shown = markdown(table)
    assert len(table) == sum(len(names) for names in PLAN.values()), shown
    counts = summary(table)
    # Zero false "works": a client the verdict lets through really got through.
    assert counts["false works"] == 0, shown
    # Every "breaks" names an API where the client stopped (and none got through).
    assert counts["breaks at the wrong API"] == 0 and counts["false breaks"] == 0, shown
    # "Can't tell" in at most 5 % of the cells.
    assert counts["can't tell"] <= 0.05 * len(table), shown
    # Both verdicts occur on the real Apache brokers, so the cells are not all of one kind.
    on_apache = {c.verdict for c in table if c.broker in (APACHE_NEW, APACHE_OLD)}
    assert {"works", "breaks"} <= on_apache, shown
    # Where the look-alike data says a look-alike closes the connection, the real Kafka answers;
    # where it answers ApiVersions unreadably, Kafka answers in the v0 layout.
    assert {key for key, _ in answered} == {19, 32, API_VERSIONS}, answered
    assert set(answered.values()) == {"answered"}, answered
