"""``python -m bench.fuzz_decoders``: a long garbage run against every generated decoder.

For a time budget (60 s unless ``--seconds``), visit every message class at
every version in turn and feed its decoder random bytes, truncations, byte
flips, splices and extensions of valid encodings (built from random field
values with kafkacompat's own encoder), as ``bytes``, ``bytearray`` or
``memoryview``.  The only exception a decoder may raise is
``kafkacompat.errors.DecodeError``; anything else is a failure, printed with
the class, the version and the input in hex.  Two more checks ride along:
each valid encoding must decode back to the object it came from, and
whatever a decoder accepts must encode again (or raise ``EncodeError``).

``--path native`` (the default where the native reader is built) or
``--path pure`` picks the codec path (kafkacompat.protocol.codec_path); on the
native path every case is also read by the native reader alone and by the
Python reader of the same layout, which must agree: both refuse it, or both
read the same objects (type for type) ending at the same byte.  ``make fuzz``
runs both paths; ``make fuzz-asan`` the native one under AddressSanitizer.

Cases are drawn from ``random.Random(seed)`` with the seed printed at the
start, so a run is repeatable with ``--seed`` (the budget only decides where
it stops).  Exit status: 0 when nothing failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import re
import secrets
import sys
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkacompat.errors import DecodeError, EncodeError
from kafkacompat.protocol import codec_path, messages
from kafkacompat.protocol.message import KafkaMessage, KafkaStruct
from tests.support.codec_paths import shape

__all__ = ["main"]

INTERESTING_BYTES = (0x00, 0x01, 0x02, 0x7F, 0x80, 0x81, 0xFE, 0xFF)
INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}
STRINGS = ("", "a", "topic-1", "consumer-group-00042", "\u00fc\u2192\U0001f600", "x" * 200)
MAX_DEPTH = 4
MAX_SHOWN = 20  # failures printed in full
MAX_FAILURES = 200  # stop early past this many


# --------------------------------------------------------------------------- valid inputs


def random_value(
    rng: random.Random, kind: str, struct: type[KafkaStruct] | None, version: int, depth: int
) -> Any:
    if struct is not None:
        return random_struct(rng, struct, version, depth + 1)
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        return rng.choice((0, 1, -1 if low < 0 else 2, low, high, rng.randint(low, high)))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float64":
        return rng.choice((0.0, -1.5, 1e300, rng.random()))
    if kind == "string":
        return rng.choice(STRINGS)
    if kind in ("bytes", "records"):
        return rng.randbytes(rng.choice((0, 1, 7, 40)))
    if kind == "uuid":
        return uuid.UUID(int=rng.getrandbits(128)) if rng.random() < 0.8 else uuid.UUID(int=0)
    raise ValueError(f"no random values for field kind {kind!r}")


def random_struct(rng: random.Random, cls: type[KafkaStruct], version: int, depth: int = 0) -> Any:
    """An instance of ``cls`` with random values in the fields that exist at ``version``."""
    kwargs: dict[str, Any] = {}
    for info in cls._FIELDS:
        if version not in info.versions or rng.random() < 0.2:
            continue  # keep the default
        if version in info.nullable_versions and rng.random() < 0.15:
            kwargs[info.name] = None
        elif info.is_array:
            count = 0 if depth >= MAX_DEPTH else rng.choice((0, 1, 2, 3, 5))
            kwargs[info.name] = [
                random_value(rng, info.kind, info.struct, version, depth) for _ in range(count)
            ]
        elif info.struct is not None and depth >= MAX_DEPTH:
            continue
        else:
            kwargs[info.name] = random_value(rng, info.kind, info.struct, version, depth)
    return cls(**kwargs)


@dataclass
class Target:
    """One class at one version, with its valid encodings (built on first use)."""

    cls: type[KafkaMessage]
    version: int
    seeds: list[tuple[KafkaMessage, bytes]] = field(default_factory=list)
    built: bool = False

    @property
    def name(self) -> str:
        return f"{self.cls.NAME} v{self.version}"


def all_targets() -> list[Target]:
    targets: list[Target] = []
    for name in sorted(messages.CLASS_MODULES):
        cls = getattr(messages, name)
        targets.extend(Target(cls, version) for version in cls.VALID_VERSIONS)
    return targets


# --------------------------------------------------------------------------- garbage


def random_bytes(rng: random.Random) -> bytes:
    size = rng.choice((0, 1, 2, 3, 4, 5, 8, 13, 16, 32, 64, rng.randint(0, 512)))
    if rng.random() < 0.5:
        return rng.randbytes(size)
    return bytes(rng.choice(INTERESTING_BYTES) for _ in range(size))


def flip(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return random_bytes(rng)
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
        i = rng.randrange(len(out))
        how = rng.random()
        if how < 0.4:
            out[i] ^= 1 << rng.randrange(8)
        elif how < 0.8:
            out[i] = rng.choice(INTERESTING_BYTES)
        else:
            out[i] = rng.randrange(256)
    return bytes(out)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))] if data else b""


def splice(rng: random.Random, data: bytes) -> bytes:
    i = rng.randint(0, len(data))
    j = rng.randint(i, min(len(data), i + 8))
    return data[:i] + rng.randbytes(rng.choice((0, 1, 2, 4, 8))) + data[j:]


def extend(rng: random.Random, data: bytes) -> bytes:
    return data + rng.randbytes(rng.choice((1, 2, 5, 16)))


MUTATIONS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "flip": flip,
    "truncate": truncate,
    "flip+truncate": lambda rng, data: truncate(rng, flip(rng, data)),
    "splice": splice,
    "extend": extend,
}


def cases(rng: random.Random, target: Target) -> Iterator[tuple[str, bytes]]:
    """An endless stream of (strategy, input) for one target."""
    names = list(MUTATIONS)
    while True:
        if not target.seeds or rng.random() < 0.15:
            yield "random", random_bytes(rng)
            continue
        name = rng.choice(names)
        _, seed = rng.choice(target.seeds)
        yield name, MUTATIONS[name](rng, seed)


# --------------------------------------------------------------------------- the run


@dataclass
class Failure:
    check: str  # "decode", "re-encode", "valid input", "round trip", "native vs Python"
    target: str
    strategy: str
    data: bytes
    error: str
    trace: str

    def key(self) -> tuple[str, str, str, str]:
        # One report per place in the code that fails, not per input.
        last = self.trace.strip().splitlines()[-3:-1]
        return (self.check, self.target.split(" v")[0], self.error.split(":")[0], "".join(last))

    def show(self) -> str:
        return (
            f"FAIL [{self.check}] {self.target} ({self.strategy}, {len(self.data)} B): {self.error}\n"
            f"  input hex: {self.data.hex() or '(empty)'}\n"
            + "".join(f"  | {line}\n" for line in self.trace.rstrip().splitlines())
        )


@dataclass
class Stats:
    cases: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    failure_keys: set[tuple[str, str, str, str]] = field(default_factory=set)
    seed_build_errors: Counter[str] = field(default_factory=Counter)
    # Re-encodes refused with EncodeError (allowed): one example per kind of message.
    refusals: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    visited: set[str] = field(default_factory=set)
    slowest: tuple[float, str, int] = (0.0, "", 0)

    def fail(self, failure: Failure) -> None:
        self.failures.append(failure)
        key = failure.key()
        if key not in self.failure_keys:
            self.failure_keys.add(key)
            if len(self.failure_keys) <= MAX_SHOWN:
                print(failure.show(), flush=True)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def build_seeds(rng: random.Random, target: Target, stats: Stats, per_target: int) -> None:
    """Valid encodings of the default object and of ``per_target`` random ones; check they read back."""
    target.built = True
    objects: list[KafkaMessage] = [target.cls()]
    for _ in range(per_target):
        try:
            objects.append(random_struct(rng, target.cls, target.version))
        except Exception as exc:  # a bad random value: skip it, but say so in the summary
            stats.seed_build_errors[type(exc).__name__] += 1
    for obj in objects:
        try:
            data = obj.encode(target.version)
        except EncodeError:
            stats.seed_build_errors["EncodeError"] += 1
            continue
        try:
            back = target.cls.decode(data, target.version)
        except Exception as exc:
            stats.fail(
                Failure("valid input", target.name, "seed", data, _describe(exc), traceback.format_exc())
            )
            continue
        if back != obj:
            stats.fail(Failure("round trip", target.name, "seed", data, f"decoded {back!r:.300}", ""))
            continue
        target.seeds.append((obj, data))


def note_slow(target: Target, buffer: Any, elapsed: float, size: int, stats: Stats) -> None:
    """Keep the slowest decode, timed again (best of 3) so a scheduler hiccup does not count."""
    for _ in range(3):
        started = time.perf_counter()
        with contextlib.suppress(Exception):  # a failure is reported by the caller
            target.cls.decode(buffer, target.version)
        elapsed = min(elapsed, time.perf_counter() - started)
    if elapsed > stats.slowest[0]:
        stats.slowest = (elapsed, target.name, size)


def compare_paths(target: Target, strategy: str, data: bytes, stats: Stats) -> None:
    """The native reader alone and the Python reader of its layout: both refuse ``data``, or agree."""
    reader = target.cls._READERS[target.version]
    try:
        native = reader.strict(data, 0)
    except Exception as exc:
        trace = traceback.format_exc()
        stats.fail(Failure("native vs Python", target.name, strategy, data, _describe(exc), trace))
        return
    try:
        python = reader.fallback(data, 0)
    except DecodeError:
        python = None
    if native is None and python is None:
        stats.outcomes["both paths refused"] += 1
        return
    if native is None or python is None or native[1] != python[1] or shape(native[0]) != shape(python[0]):
        said = "refused" if native is None else f"read {native[1]} bytes"
        other = "refused" if python is None else f"read {python[1]} bytes"
        error = f"native reader {said}, Python reader {other}" + (
            ", to other objects" if native and python and native[1] == python[1] else ""
        )
        stats.fail(Failure("native vs Python", target.name, strategy, data, error, ""))
        return
    stats.outcomes["both paths read the same"] += 1


def feed(target: Target, strategy: str, data: bytes, buffer: Any, stats: Stats) -> None:
    stats.cases[strategy] += 1
    if codec_path.current() == codec_path.NATIVE:
        compare_paths(target, strategy, data, stats)
    started = time.perf_counter()
    try:
        obj = target.cls.decode(buffer, target.version)
    except DecodeError:
        stats.outcomes["DecodeError"] += 1
        return
    except Exception as exc:
        stats.outcomes["other exception"] += 1
        stats.fail(Failure("decode", target.name, strategy, data, _describe(exc), traceback.format_exc()))
        return
    finally:
        elapsed = time.perf_counter() - started
        if elapsed > stats.slowest[0]:
            note_slow(target, buffer, elapsed, len(data), stats)
    stats.outcomes["decoded"] += 1
    try:
        obj.encode(target.version)
    except EncodeError as exc:
        stats.outcomes["decoded, re-encode refused (EncodeError)"] += 1
        reason = f"{target.cls.NAME}: {exc}"
        stats.refusals.setdefault(re.sub(r"\d+", "N", reason), (reason, data))
    except Exception as exc:
        stats.outcomes["decoded, re-encode crashed"] += 1
        stats.fail(Failure("re-encode", target.name, strategy, data, _describe(exc), traceback.format_exc()))


def as_buffer(rng: random.Random, data: bytes) -> Any:
    pick = rng.random()
    if pick < 0.8:
        return data
    return bytearray(data) if pick < 0.9 else memoryview(data)


def run(seconds: float, seed: int, batch: int = 25, per_target: int = 6) -> Stats:
    rng = random.Random(seed)
    stats = Stats()
    targets = all_targets()
    streams: dict[int, Iterator[tuple[str, bytes]]] = {}
    deadline = time.monotonic() + seconds
    order = list(range(len(targets)))
    while time.monotonic() < deadline and len(stats.failures) < MAX_FAILURES:
        rng.shuffle(order)
        for index in order:
            if time.monotonic() >= deadline or len(stats.failures) >= MAX_FAILURES:
                break
            target = targets[index]
            if not target.built:
                build_seeds(rng, target, stats, per_target)
                streams[index] = cases(rng, target)
            stats.visited.add(target.name)
            stream = streams[index]
            for _ in range(batch):
                strategy, data = next(stream)
                feed(target, strategy, data, as_buffer(rng, data), stats)
    return stats


def summary(stats: Stats, *, seconds: float, seed: int, n_targets: int, n_classes: int) -> str:
    total = sum(stats.cases.values())
    lines = [
        f"seed {seed}, ran {seconds:.1f} s, codec path: {codec_path.describe()}",
        f"classes {n_classes}, class-versions {n_targets} (visited {len(stats.visited)})",
        f"cases {total:,} ({total / max(seconds, 1e-9):,.0f}/s): "
        + ", ".join(f"{name} {count:,}" for name, count in stats.cases.most_common()),
        "outcomes: " + ", ".join(f"{name} {count:,}" for name, count in stats.outcomes.most_common()),
    ]
    if stats.seed_build_errors:
        lines.append(
            "random objects the encoder refused (not failures): "
            + ", ".join(f"{name} {count:,}" for name, count in stats.seed_build_errors.most_common())
        )
    for reason, data in list(stats.refusals.values())[:5]:
        lines.append(f"  re-encode refused (allowed): {reason} [input {data.hex()}]")
    elapsed, name, size = stats.slowest
    lines.append(f"slowest decode: {elapsed * 1e3:.2f} ms ({name}, {size} B)")
    if stats.failures:
        by_check = Counter(f.check for f in stats.failures)
        lines.append(
            f"FAILED: {len(stats.failures)} failing inputs in {len(stats.failure_keys)} distinct places ("
            + ", ".join(f"{check} {count}" for check, count in by_check.most_common())
            + (f"; first {MAX_SHOWN} places printed above)" if len(stats.failure_keys) > MAX_SHOWN else ")")
        )
    else:
        lines.append("OK: every decoder raised only DecodeError")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fuzz_decoders", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="time budget (default 60)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: a fresh one, printed)")
    parser.add_argument(
        "--path", choices=(codec_path.NATIVE, codec_path.PURE), default=codec_path.current(),
        help=f"the codec path to fuzz (default here: {codec_path.current()})",
    )
    args = parser.parse_args(argv)
    codec_path.use(args.path)
    seed = secrets.randbits(32) if args.seed is None else args.seed
    n_targets = len(all_targets())
    print(
        f"fuzz_decoders: seed {seed}, budget {args.seconds:g} s, {args.path} path"
        f" (repeat with --seed {seed} --path {args.path})",
        flush=True,
    )
    started = time.monotonic()
    stats = run(args.seconds, seed)
    print(
        summary(
            stats,
            seconds=time.monotonic() - started,
            seed=seed,
            n_targets=n_targets,
            n_classes=len(messages.CLASS_MODULES),
        )
    )
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
