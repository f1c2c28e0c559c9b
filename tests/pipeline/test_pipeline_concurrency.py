"""The report's queries run two at a time, each with the caller's local properties."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession

from kafkacompat.pipeline.concurrency import CONCURRENT_JOBS, run_concurrently

_KEY = "kafkacompat.test.property"


def test_calls_run_at_once_each_with_a_copy_of_the_callers_properties(spark: SparkSession) -> None:
    context = spark.sparkContext
    context.setLocalProperty(_KEY, "caller")
    # Every call waits for all the others: run one after the other, the barrier would break.
    barrier = threading.Barrier(CONCURRENT_JOBS, timeout=60)

    def call(i: int) -> Callable[[], tuple[str | None, str | None]]:
        def run() -> tuple[str | None, str | None]:
            inherited = context.getLocalProperty(_KEY)
            context.setLocalProperty(_KEY, f"call {i}")
            barrier.wait()  # all the calls have set theirs by now
            return inherited, context.getLocalProperty(_KEY)

        return run

    try:
        results = run_concurrently(spark, [call(i) for i in range(CONCURRENT_JOBS)])
        assert results == [("caller", f"call {i}") for i in range(CONCURRENT_JOBS)]
        assert context.getLocalProperty(_KEY) == "caller"  # a call's change stays in the call
    finally:
        context.setLocalProperty(_KEY, None)  # type: ignore[arg-type]  # None clears it


def test_a_failing_call_fails_the_whole(spark: SparkSession) -> None:
    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_concurrently(spark, [lambda: 1, fail])


def test_after_a_failure_the_calls_not_started_are_dropped(spark: SparkSession) -> None:
    # Two run at a time: "fails" raises once "slow" runs; its thread then takes "next"; "last"
    # waits in the queue behind the two sleeping calls, and must be dropped, not run.
    assert CONCURRENT_JOBS == 2
    started: list[str] = []
    slow_running = threading.Event()

    def fails() -> None:
        slow_running.wait(60)
        raise ValueError("boom")

    def sleeper(name: str) -> Callable[[], None]:
        def run() -> None:
            started.append(name)
            if name == "slow":
                slow_running.set()
            time.sleep(3)

        return run

    with pytest.raises(ValueError, match="boom"):
        run_concurrently(spark, [fails, sleeper("slow"), sleeper("next"), sleeper("last")])
    assert "last" not in started and "slow" in started
