"""The command blocks of README.md and docs/ that show output are run, and must still show what runs.

See tests/support/docs_check.py; ``make docs`` rewrites the outputs after a
deliberate change of output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import docs_check

pytestmark = pytest.mark.broker


def test_every_marked_block_shows_what_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = docs_check.main([])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert " 0 differ" in captured.out


def test_a_changed_output_is_caught(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    fence = "```"
    block = "$ kafkacompat --version\nkafkacompat 0.0.0"
    doc.write_text(f"<!-- docs-check: none -->\n{fence}\n{block}\n{fence}\n")
    assert docs_check.main([str(doc)]) == 1
    assert docs_check.main(["--update", str(doc)]) == 0
    assert docs_check.main([str(doc)]) == 0 and "kafkacompat 0.1" in doc.read_text()
