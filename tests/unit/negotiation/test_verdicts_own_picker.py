"""kafkacompat's own profile is judged with its own picker: the verdict picks what a connection picks."""

from __future__ import annotations

import pytest

from kafkacompat.cli.check import brokers_for_release, load_clients
from kafkacompat.errors import UnsupportedVersionError
from kafkacompat.negotiation.capabilities import BrokerCapabilities
from kafkacompat.negotiation.verdicts import judge
from kafkacompat.reference.releases import RELEASES

# Every broker kind of every release in the table, at a fresh cluster's levels and at level 0.
TARGETS = sorted({(p.release, p.kind) for p in RELEASES if p.kind != "kraft-controller"})
GATED_LEVELS = {"transaction.version": 0, "group.version": 0, "share.version": 0}


@pytest.mark.parametrize("levels", [{}, GATED_LEVELS], ids=["fresh", "gates-closed"])
def test_the_verdict_picks_what_the_capabilities_pick_for_kafkacompat(levels: dict[str, int]) -> None:
    (own,) = load_clients("kafkacompat")
    compared = 0
    for release, kind in TARGETS:
        (broker,) = brokers_for_release(release, kind, levels)
        if not broker.has_api_versions:
            continue  # before KIP-35 nothing is picked from ranges (verdict_evidence.before_kip_35)
        verdict = judge(own, [broker])
        picked = verdict.picks[broker.label]
        capabilities = BrokerCapabilities.from_ranges(
            broker.label,
            broker.apis,
            finalized_features={k: (v, v) for k, v in (broker.finalized or {}).items()},
        )
        for key in own.entries:
            if key not in broker.apis:
                continue  # not listed: api-missing, nothing picked either way
            try:
                expected: int | None = capabilities.pick_version(key, in_transaction=own.transactional)
            except UnsupportedVersionError:
                expected = None
            assert picked[key] == expected, (release, kind, key)
            compared += 1
    assert compared > 1000


def test_closed_gates_lower_kafkacompats_transactional_produce_and_end_txn_on_4x() -> None:
    (own,) = load_clients("kafkacompat")
    (closed,) = brokers_for_release("4.0", None, GATED_LEVELS)
    (open_,) = brokers_for_release("4.0", None, {"transaction.version": 2})
    closed_picks = judge(own, [closed]).picks[closed.label]
    open_picks = judge(own, [open_]).picks[open_.label]
    assert (closed_picks[0], closed_picks[26]) == (11, 4)  # Produce, EndTxn
    assert (open_picks[0], open_picks[26]) == (12, 5)
    assert judge(own, [closed]).status == "works"
