"""The fleet report as a Spark application: ``python -m kafkacompat.pipeline`` or spark-submit's entry script.

Theory.  spark-submit runs a Python *file*, and the application's code
travels as ``--py-files`` (the built wheel: a zip Python imports from).  This
file is that entry point: it takes the same options as ``kafkacompat
fleet-report`` and runs the same code.  It names no master: under
spark-submit the master is spark-submit's (``--master``), and run directly it
falls back to ``$KAFKACOMPAT_SPARK_MASTER`` or ``local[*]``
(``kafkacompat.pipeline.session``).  Extract it from the wheel for
spark-submit::

    unzip -p kafkacompat-*.whl kafkacompat/pipeline/__main__.py > fleet_report.py
    spark-submit --master yarn --py-files kafkacompat-*.whl fleet_report.py \\
        --snapshots hdfs:///fleet/snapshots --clients hdfs:///fleet/clients.jsonl --out hdfs:///fleet/report

Imports are absolute, because spark-submit runs the file outside its package.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from kafkacompat.pipeline.command import build_report_parser, run_report

    parser = build_report_parser(prog="python -m kafkacompat.pipeline")
    return run_report(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
