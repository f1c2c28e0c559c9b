"""Fault knobs as data: matching, counting and what each kind turns a reply into."""

from __future__ import annotations

import pytest

from kafkacompat.errors import EmulatorConfigError
from kafkacompat.protocol.versions import VersionRange
from kafkacompat.testing.emulator import Fault, FaultKind, FaultPlan
from kafkacompat.testing.emulator.faults import (
    GARBAGE,
    HTTP_REPLY,
    TLS_ALERT,
    Close,
    Freeze,
    Send,
    Sleep,
    Stall,
    apply_fault,
)

REPLY = b"\x00\x00\x00\x08\x00\x00\x00\x07ABCD"  # size 8, correlation id 7, body ABCD


def test_matching_by_api_key_and_versions() -> None:
    fault = Fault.close(3, versions=(4, 6))
    assert fault.matches(3, 4) and fault.matches(3, 6)
    assert not fault.matches(3, 7) and not fault.matches(18, 4)
    assert Fault.reset().matches(42, 0)


def test_skip_and_times_count_matches_and_firings() -> None:
    fault = Fault.close(18, skip=1, times=2)
    plan = FaultPlan([fault])
    assert [plan.take(18, 0) is fault for _ in range(5)] == [False, True, True, False, False]
    assert plan.take(3, 0) is None
    assert plan.fired(fault) == 2


def test_the_first_matching_fault_wins_and_only_it_fires() -> None:
    first, second = Fault.delay(0.1, 18, times=1), Fault.close(18)
    plan = FaultPlan([first, second])
    assert plan.take(18, 3) is first
    assert plan.take(18, 3) is second
    assert (plan.fired(first), plan.fired(second)) == (1, 1)
    plan.clear()
    assert plan.take(18, 3) is None and plan.faults == ()


def test_impersonations_are_narrowed_to_api_versions() -> None:
    hubs = Fault.event_hubs()
    assert hubs.kind is FaultKind.RESET and hubs.api_key == 18
    assert not hubs.matches(18, 2) and hubs.matches(18, 3) and hubs.matches(18, 4)
    tansu = Fault.tansu_api_versions()
    assert not tansu.matches(18, 4) and tansu.matches(18, 5, beyond_advertised=True)
    assert Fault.hostile_unsupported_version().matches(18, 0)
    assert not Fault.hostile_unsupported_version().matches(3, 0)


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (Fault.close(), [Close()]),
        (Fault.reset(), [Close(reset=True)]),
        (Fault.stall(), [Stall()]),
        (Fault.freeze(), [Freeze()]),
        (Fault.reset_after_bytes(6), [Send(REPLY[:6]), Close(reset=True)]),
        (Fault.delay(0.25), [Sleep(0.25), Send(REPLY)]),
        (Fault.close_after_bytes(6), [Send(REPLY[:6]), Close()]),
        (Fault.garbage(), [Send(GARBAGE)]),
        (Fault.garbage(b"junk"), [Send(b"junk")]),
        (Fault.tls(), [Send(TLS_ALERT), Close()]),
        (Fault.http(), [Send(HTTP_REPLY), Close()]),
        (Fault.wrong_correlation_id(), [Send(b"\x00\x00\x00\x08\x00\x00\x00\x08ABCD")]),
        (Fault.wrong_correlation_id(-8), [Send(b"\x00\x00\x00\x08\xff\xff\xff\xffABCD")]),
    ],
    ids=lambda v: v.describe() if isinstance(v, Fault) else "",
)
def test_each_kind_does_exactly_what_it_says(fault: Fault, expected: list[object]) -> None:
    assert apply_fault(fault, REPLY) == expected


def test_faults_without_a_reply() -> None:
    assert apply_fault(Fault.delay(1.0), None) == [Sleep(1.0)]
    assert apply_fault(Fault.wrong_correlation_id(), None) == []
    assert apply_fault(Fault.close_after_bytes(3), None) == [Send(b""), Close()]


def test_the_foreign_bytes_look_like_what_they_claim() -> None:
    from kafkacompat.protocol.framing import sniff_foreign_protocol

    assert "TLS" in (sniff_foreign_protocol(TLS_ALERT) or "")
    assert "HTTP" in (sniff_foreign_protocol(HTTP_REPLY) or "")
    assert int.from_bytes(GARBAGE[:4], "big", signed=True) < 0


def test_bad_fault_values_are_refused() -> None:
    with pytest.raises(EmulatorConfigError):
        Fault.close(times=0)
    with pytest.raises(EmulatorConfigError):
        Fault.close(skip=-1)
    with pytest.raises(EmulatorConfigError):
        Fault.delay(-1)
    with pytest.raises(EmulatorConfigError):
        Fault.wrong_correlation_id(0)
    with pytest.raises(EmulatorConfigError):
        Fault.close(versions=("a", "b"))  # type: ignore[arg-type]
    with pytest.raises(EmulatorConfigError):
        FaultPlan(["close"])  # type: ignore[list-item]
    assert Fault.close(versions=VersionRange(1, 2)).versions == VersionRange(1, 2)
    assert Fault.close(3, versions=(1, 2)).describe() == "close on API key 3 v1-2"
