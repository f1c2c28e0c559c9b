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
beside the real decode of kafkacompat and of kio (a Rust extension, when
installed), so the distance of each from the floor can be read off.
"""

from __future__ import annotations

import struct
import time
import timeit
from collections.abc import Callable

from bench.codec import metadata_message
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
    fns["kafkacompat"] = (lambda: MetadataResponse.decode(payload, 12), 5)
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
    for name in ("kafkacompat", "kio (Rust)"):
        if name in times:
            seconds = times[name]
            print(f"{name + ' decode:':<20} {seconds * 1e6:9.1f} us  ({seconds / floor:.2f}x the floor)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
