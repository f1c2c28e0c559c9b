"""A client's traffic measured against one broker, and where it stopped, as a verdict reads it.

Theory.  A look-alike broker (Tansu, noida-db, librdkafka's mock) may
answer a request otherwise than Kafka at a version its ranges advertise, in
ways a table of deviations only partly foresees (a fetch that returns
nothing, an UNKNOWN_SERVER_ERROR to a transactional InitProducerId).  Where a
client release was measured against that very software (``make profiles``
keeps each run's steps and requests under ``recorded.against``), the
measurement is the verdict for a broker identified as that software, as for
a broker without ApiVersions: it got through, or it stopped, at the API the
evidence names: one the broker answered with an error, closed on or left
unanswered in the step that failed, else the API that step is about
(``STEP_APIS``: the traffic's steps, ``kafkacompat.testing.client_traffic``),
never a refusal of an earlier step that the client went on after.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["STEP_APIS", "MeasuredRun", "measured_runs"]

# The APIs each step of the traffic sends, the one it is about first (sarama's topic listing
# describes the topics' configs).
STEP_APIS: Mapping[str, tuple[int, ...]] = {
    "setup": (18, 3),
    "metadata": (3, 19, 18, 60, 32),
    "produce": (0, 22),
    "consume": (1, 11, 14, 2, 9, 12, 13, 68),
    "commit": (8, 9, 12),
    "describe-group": (15, 16, 69),
    "delete-group": (42,),
    "transaction": (22, 24, 26, 25, 28, 0),
}


@dataclass(frozen=True, slots=True)
class MeasuredRun:
    """One run of a client's traffic against a named broker."""

    against: str  # e.g. "tansu 0.6.0"
    ok: bool
    stopped_in: str | None
    error: str | None
    refused: tuple[tuple[int, int, str], ...]  # (api key, version, outcome) not answered as asked

    def stop(self) -> tuple[int, int | None, str]:
        """(api key, version or None, why) of where it stopped; call only when not ``ok``."""
        step_apis = STEP_APIS.get(self.stopped_in or "", ())
        in_step = [r for r in self.refused if r[0] in step_apis]
        # A refusal in an earlier step was survived: with none in this step, the step's API.
        candidates = in_step if step_apis else list(self.refused)
        chosen = candidates[0] if candidates else None
        step = f"its traffic stopped in step {self.stopped_in}" + (f" ({self.error})" if self.error else "")
        if chosen is not None:
            key, version, outcome = chosen
            return key, version, f"{step}; v{version} was answered {outcome}"
        key = step_apis[0] if step_apis else 18
        return key, None, step


def measured_runs(recorded: object) -> dict[str, MeasuredRun]:
    """The runs of a profile's ``recorded.against`` block, by broker name (empty when it has none).

    Raises ``ValueError`` naming the block when it is malformed.
    """
    if not isinstance(recorded, Mapping):
        return {}
    against = recorded.get("against")
    if against is None:
        return {}
    try:
        runs = {}
        for name, run in dict(against).items():
            steps: list[Any] = list(run.get("steps", ()))
            failed = next((s for s in steps if not s["ok"]), None if steps else {"step": "setup"})
            refused = tuple(
                (int(r["api_key"]), int(r["version"]), str(outcome))
                for r in run.get("requests", ())
                for outcome in r["outcomes"]
                if outcome != "answered"
            )
            runs[str(name)] = MeasuredRun(
                str(name),
                failed is None,
                None if failed is None else str(failed["step"]),
                None if failed is None or failed.get("error") is None else str(failed["error"])[:160],
                refused,
            )
        return runs
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"recorded.against is malformed ({type(exc).__name__}: {exc})") from None
