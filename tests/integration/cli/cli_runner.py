"""What the command line tests share: a result type, bounds, and how to run ``kafkacompat``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEADLINE", "FAST", "ROOT", "CliResult", "Runner"]

ROOT = Path(__file__).resolve().parents[3]
DEADLINE = 30  # seconds, for any one run of the command line
FAST = ("--timeout", "3", "--retries", "1")  # keeps each expected failure short


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


Runner = Callable[..., Awaitable[CliResult]]
