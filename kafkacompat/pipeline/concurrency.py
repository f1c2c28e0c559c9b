"""Spark jobs from several threads at once: the fleet report's tables and its page's queries.

Its own module, below the report and its page, so that both import it and the
report can import its page at the top (no import hidden in a function).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyspark.sql import SparkSession

__all__ = ["CONCURRENT_JOBS", "run_concurrently"]

# Spark jobs the report submits at once (from as many threads): see ``write_fleet_report``.
CONCURRENT_JOBS = 2


def run_concurrently(spark: SparkSession, calls: Sequence[Callable[[], Any]]) -> list[Any]:
    """Each call's result, the calls run ``CONCURRENT_JOBS`` at a time, each in a thread of its own.

    Why: a small fleet's report is dozens of small queries, and each spends
    most of its time being planned on the driver, one thread, while the
    executors wait; two at a time keep both cores busy (see docs/pipeline.md).
    Every call runs with the caller's local properties (job group, scheduler
    pool) and session tags, copied for each call: a call may change its own.
    The first failure, in the order of ``calls``, is raised.
    """
    from pyspark.util import inheritable_thread_target

    pool = ThreadPoolExecutor(max_workers=CONCURRENT_JOBS, thread_name_prefix="kafkacompat-spark")
    try:
        # Wrapped here, in the caller's thread: that is where the properties are copied from.
        futures = [pool.submit(inheritable_thread_target(spark)(call)) for call in calls]
        return [future.result() for future in futures]
    finally:
        # After a failure or an interrupt, the calls not started yet are dropped rather than run;
        # those running end with their jobs (Ctrl-C cancels those: PySpark's SIGINT handler).
        pool.shutdown(wait=True, cancel_futures=True)
