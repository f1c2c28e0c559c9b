"""``check``'s verdicts against what measured clients really do on real brokers (the confusion table).

A few measured client releases run their traffic against every real broker the
suite can start (Tansu, Apache Kafka 0.9.0.1, noida-db, librdkafka's mock),
next to ``kafkacompat check measured --bootstrap`` of that broker.  The whole
matrix (every measured client) is ``make verdict-table``; this keeps CI to a
dozen cells.  Nothing is skipped: a broker or client that cannot be installed
fails the test.
"""

from __future__ import annotations

import pytest

from kafkacompat.profiles.confusion import REAL_BROKERS, cells, markdown, summary
from kafkacompat.profiles.installs import CLIENTS

pytestmark = pytest.mark.broker

CHOSEN = ("kafka-python@2.0.2", "confluent-kafka@2.16.1", "kafkajs@2.2.4")


def test_verdicts_match_what_the_clients_do_on_real_brokers() -> None:
    clients = [c for c in CLIENTS if f"{c.library}@{c.release}" in CHOSEN]
    assert len(clients) == len(CHOSEN)
    table = cells(clients, REAL_BROKERS)
    shown = markdown(table)
    assert len(table) == len(clients) * len(REAL_BROKERS), shown
    counts = summary(table)
    # Zero false "works": a client the verdict lets through really got through.
    assert counts["false works"] == 0, shown
    # Every "breaks" names an API where the client stopped.
    assert counts["breaks at the wrong API"] == 0, shown
    # "Can't tell" in at most 5 % of the cells.
    assert counts["can't tell"] <= 0.05 * len(table), shown
