"""``python -m bench.codec_floor``: where a decode's time goes, and the floor CPython puts under it.

Decoding MetadataResponse v12 (20 brokers, 100 topics x 12 partitions) builds
1,320 objects, 3,600 lists of replicas and 2,300-odd strings.  This prints the
unit costs of those steps on this machine, each timed alone in a loop of the
same shape as the generated reader's:

* per object: ``object.__new__`` of a slotted class, with no field set;
* per field: one slot store;
* per int array: ``[*fmt.unpack_from(buf, pos)]`` of three int32s (an empty one: ``[]``);
* per string: a slice and a UTF-8 decode of a 23-byte host name;
* per fixed run: one precompiled ``struct.unpack_from`` of a partition's four fixed fields;
* per element: an empty ``for`` iteration.

The floor is those unit costs times the counts of the payload: what any
pure-Python decoder that hands back the same objects must spend.  It is printed
beside the real decode of kafkacompat (on the native reader and on the Python
readers) and of kio (a Rust extension, when installed), so the distance of each
from the floor can be read off.

``--native`` profiles the native reader instead, with callgrind (valgrind): a
child decodes the payload with the collector off and collection on only inside
the reader, and the instructions are split by the CPython calls that build the
objects (any decoder returning these objects pays them: allocating the structs,
the lists, the ints, the strings, the UUIDs' ints) and the reader's own code
(reading bytes, checking room, dispatching on the tables, storing slots).  The
first part is the native floor; the shares are turned into microseconds with the
native decode's time measured here, and into a unit cost per object, list and int.
"""

from __future__ import annotations

import gc
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.codec import metadata_message
from bench.codec_targets import pure_decoder
from kafkacompat.protocol import codec_path
from kafkacompat.protocol.message import KafkaStruct
from kafkacompat.protocol.messages import MetadataResponse

__all__ = ["main"]

ROUNDS = 15
LOOPS = 2000


def best_of_rounds(fns: dict[str, tuple[Callable[[], object], int]]) -> dict[str, float]:
    """Best CPU seconds per call of each function, over ``ROUNDS`` interleaved rounds.

    Each value is ``(fn, number)``: a round times ``number`` calls of each
    function in turn, so a machine that slows down mid-run slows all of them alike.
    """
    timers = {name: (timeit.Timer(fn, timer=time.process_time), number) for name, (fn, number) in fns.items()}
    found = dict.fromkeys(fns, float("inf"))
    for _ in range(ROUNDS):
        for name, (timer, number) in timers.items():
            found[name] = min(found[name], timer.timeit(number) / number)
    return found


def unit_steps() -> dict[str, Callable[[], None]]:
    """One loop of ``LOOPS`` per step, shaped like the generated reader's."""
    cls = MetadataResponse.MetadataResponsePartition
    new = object.__new__
    run = struct.Struct(">hiii")
    three = struct.Struct(">3i")
    data = bytes(range(64)) * 4
    host = b"\x18broker-7.kafka.internal" + bytes(32)
    rng = range(LOOPS)
    empty_list: list[int] = []

    def empty() -> None:
        for _ in rng:
            pass

    def objects() -> None:
        for _ in rng:
            new(cls)

    def objects_with_fields() -> None:
        for _ in rng:
            o = new(cls)
            o.error_code = 0
            o.partition_index = 1
            o.leader_id = 2
            o.leader_epoch = 3
            o.replica_nodes = empty_list
            o.isr_nodes = empty_list
            o.offline_replicas = empty_list
            o._unknown_tags = ()

    def arrays() -> None:
        for _ in rng:
            [*three.unpack_from(data, 8)]

    def empty_arrays() -> None:
        for _ in rng:
            items: list[int] = []  # noqa: F841 - the allocation is what is timed

    def strings() -> None:
        pos = 0
        for _ in rng:
            size = host[pos]
            host[pos + 1 : pos + size].decode()

    def fixed_runs() -> None:
        for _ in rng:
            run.unpack_from(data, 4)

    return {
        "element": empty,
        "object": objects,
        "object+8 fields": objects_with_fields,
        "int array": arrays,
        "empty array": empty_arrays,
        "string": strings,
        "fixed run": fixed_runs,
    }


def unit_costs(times: dict[str, float]) -> dict[str, float]:
    """Seconds per step from the loops' times, each net of the empty loop."""
    base = times["element"] / LOOPS
    per = {name: times[name] / LOOPS - base for name in unit_steps() if name != "element"}
    per["field"] = (per.pop("object+8 fields") - per["object"]) / 8
    per["element"] = base
    return per


def _arrays(partition: MetadataResponse.MetadataResponsePartition) -> tuple[list[int], ...]:
    return (partition.replica_nodes, partition.isr_nodes, partition.offline_replicas)


def main() -> int:
    message = metadata_message(n_topics=100, n_partitions=12, n_brokers=20)
    payload = message.encode(12)
    partitions = sum(len(t.partitions) for t in message.topics)
    counts = {
        "object": 1 + len(message.brokers) + len(message.topics) + partitions,
        "field": 8 + 5 * len(message.brokers) + 7 * len(message.topics) + 8 * partitions,
        "int array": sum(bool(a) for t in message.topics for p in t.partitions for a in _arrays(p)),
        "empty array": sum(not a for t in message.topics for p in t.partitions for a in _arrays(p)),
        "string": 1 + 2 * len(message.brokers) + len(message.topics),
        "fixed run": 4 + 2 * len(message.brokers) + 2 * len(message.topics) + partitions,
        "element": len(message.brokers) + len(message.topics) + partitions,
    }
    fns: dict[str, tuple[Callable[[], object], int]] = {name: (fn, 5) for name, fn in unit_steps().items()}
    fns[f"kafkacompat, {codec_path.current()} path"] = (lambda: MetadataResponse.decode(payload, 12), 5)
    if codec_path.current() == codec_path.NATIVE:
        fns["kafkacompat, Python readers"] = (lambda: pure_decoder(MetadataResponse, 12)(payload), 5)
    try:
        from kio.schema.metadata.v12.response import MetadataResponse as KioMetadata
        from kio.serial import entity_reader
    except ImportError:
        print("kio is not installed: no native figure")
    else:
        reader = entity_reader(KioMetadata)
        fns["kio (Rust)"] = (lambda: reader(payload, 0), 5)
    times = best_of_rounds(fns)
    units = unit_costs(times)
    objects = counts["object"]
    print(f"MetadataResponse v12, {len(payload):,} bytes: {objects:,} objects, {partitions:,} partitions")
    print(f"  {'step':<12} {'ns each':>8} {'count':>7} {'us total':>9}")
    floor = 0.0
    for name, count in counts.items():
        total = units[name] * count
        floor += total
        print(f"  {name:<12} {units[name] * 1e9:8.1f} {count:7,} {total * 1e6:9.1f}")
    print(f"  {'floor':<12} {'':>8} {'':>7} {floor * 1e6:9.1f}")
    for name in times:
        if name.startswith(("kafkacompat", "kio")):
            seconds = times[name]
            print(f"{name + ' decode:':<36} {seconds * 1e6:9.1f} us  ({seconds / floor:.2f}x the floor)")
    return 0


# --------------------------------------------------------------------------- the native reader

# The CPython calls the native reader makes to build objects, by what they build.
BUILDERS = {
    "PyType_GenericAlloc": "objects",
    "PyList_New": "lists",
    "PyLong_FromLong": "ints",
    "PyLong_FromLongLong": "ints",
    "PyLong_FromUnsignedLong": "ints",
    "_PyLong_FromByteArray": "UUID ints",
    "PyUnicode_New": "strings",
    "PyUnicode_DecodeUTF8": "strings",
    "PyBytes_FromStringAndSize": "bytes",
    "PyTuple_New": "the result tuple",
}
ROUNDS_PROFILED = 20
_LINE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*?)(?: \[(.*)\])?$")


def payload_counts(message: Any) -> dict[str, int]:
    """How many of each thing the decoded message holds (what the builders make)."""
    counts = {"objects": 0, "lists": 0, "ints": 0, "UUID ints": 0, "strings": 0, "fields": 0}

    def walk(value: Any) -> None:
        if isinstance(value, KafkaStruct):
            counts["objects"] += 1
            counts["fields"] += len(value._FIELDS) + 1  # and the unknown tagged fields
            for info in value._FIELDS:
                walk(getattr(value, info.name))
        elif isinstance(value, list):
            counts["lists"] += 1
            for item in value:
                walk(item)
        elif isinstance(value, uuid.UUID):
            counts["objects"] += 1
            counts["UUID ints"] += 1
        elif isinstance(value, str):
            counts["strings"] += 1
        elif isinstance(value, int) and not isinstance(value, bool):
            counts["ints"] += 1

    walk(message)
    return counts


def profiled_child() -> int:
    """Run under callgrind: decode the payload natively, collector off, ``ROUNDS_PROFILED`` times."""
    payload = metadata_message(n_topics=100, n_partitions=12, n_brokers=20).encode(12)
    reader = MetadataResponse._READERS[12]
    gc.disable()
    for _ in range(ROUNDS_PROFILED):
        reader(payload, 0)
    return 0


def callgrind_costs() -> tuple[dict[str, int], int, int]:
    """Instructions per decode by builder, the reader's own (self) instructions, and the total."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        subprocess.run(
            [
                "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                "--toggle-collect=reader_vectorcall",
                sys.executable, "-m", "bench.codec_floor", "--native-child",
            ],
            check=True, capture_output=True, timeout=600,
        )
        inclusive = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
            check=True, capture_output=True, text=True,
        ).stdout
        own = subprocess.run(
            ["callgrind_annotate", "--inclusive=no", "--threshold=100", str(out)],
            check=True, capture_output=True, text=True,
        ).stdout
    builders: dict[str, int] = {}
    total = 0
    for line in inclusive.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        cost, where = int(match.group(1).replace(",", "")), match.group(2)
        if where == "PROGRAM TOTALS":
            total = cost
        function = where.rsplit(":", 1)[-1]
        if function in BUILDERS:  # inlined parts show up again under a header's name: keep the largest
            builders[function] = max(builders.get(function, 0), cost)
    reader_own = sum(
        int(m.group(1).replace(",", ""))
        for m in map(_LINE.match, own.splitlines())
        if m is not None and m.group(3) and "_native" in Path(m.group(3)).name
    )
    by_kind: dict[str, int] = {}
    for function, cost in builders.items():
        by_kind[BUILDERS[function]] = by_kind.get(BUILDERS[function], 0) + cost // ROUNDS_PROFILED
    return by_kind, reader_own // ROUNDS_PROFILED, total // ROUNDS_PROFILED


def native_main() -> int:
    if codec_path.current() != codec_path.NATIVE:
        print(f"the native reader is not in use: {codec_path.describe()}")
        return 1
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        print("valgrind is not installed: no native profile")
        return 1
    message = metadata_message(n_topics=100, n_partitions=12, n_brokers=20)
    payload = message.encode(12)
    decode = (lambda: MetadataResponse.decode(payload, 12), 5)
    seconds = best_of_rounds({"native": decode})["native"]
    by_kind, own, total = callgrind_costs()
    counts = payload_counts(MetadataResponse.decode(payload, 12))
    per_instruction = seconds / total
    print(f"MetadataResponse v12, {len(payload):,} bytes, native reader: {seconds * 1e6:.1f} us per decode"
          f" (CPU time), {total:,} instructions (callgrind)")
    print(f"  {'work':<40} {'instr':>9} {'share':>6} {'us':>7} {'count':>7} {'ns each':>8}")
    floor = 0
    for kind, cost in sorted(by_kind.items(), key=lambda item: -item[1]):
        floor += cost
        count = counts.get(kind)
        each = f"{cost * per_instruction / count * 1e9:8.1f}" if count else ""
        print(f"  {'building ' + kind:<40} {cost:9,} {cost / total:6.1%} {cost * per_instruction * 1e6:7.1f}"
              f" {count or '':>7} {each:>8}")
    rest = total - floor - own
    own_us = own * per_instruction * 1e6
    fields = counts["fields"]
    print(f"  {'the reader itself (_native.c)':<40} {own:9,} {own / total:6.1%} {own_us:7.1f}"
          f" {fields:7} {own_us * 1e3 / fields:8.1f}  (per slot stored)")
    print(f"  {'other (pymalloc and GC links inlined)':<40} {rest:9,} {rest / total:6.1%}"
          f" {rest * per_instruction * 1e6:7.1f}")
    floor_seconds = (floor + rest) * per_instruction
    print(f"native floor (building the objects): {floor_seconds * 1e6:.1f} us;"
          f" the native reader is {seconds / floor_seconds:.2f}x its floor")
    return 0


def entry() -> int:
    if "--native-child" in sys.argv[1:]:
        return profiled_child()
    if "--native" in sys.argv[1:]:
        return native_main()
    return main()


if __name__ == "__main__":
    raise SystemExit(entry())
