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


def test_a_skipped_block_is_not_run_and_must_say_why(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    fence = "```"
    block = "$ kafkacompat --version\nnot what it prints"
    doc.write_text(f"<!-- docs-check: skip: a broker the kit cannot start -->\n{fence}\n{block}\n{fence}\n")
    assert docs_check.main([str(doc)]) == 0
    doc.write_text(f"<!-- docs-check: skip -->\n{fence}\n{block}\n{fence}\n")
    assert docs_check.main([str(doc)]) == 1


def test_every_cut_is_kept_when_the_output_is_updated() -> None:
    shown = ["a", "[... 9 lines omitted: the middle ...]", "d", "[... 1 lines omitted ...]", "f"]
    actual = ["a", "b", "c", "d", "e1", "e2", "f"]
    assert docs_check.matches(shown, actual)
    assert docs_check._with_cut(shown, actual) == [
        "a", "[... 2 lines omitted: the middle ...]", "d", "[... 2 lines omitted ...]", "f",
    ]
    assert not docs_check.matches(shown, ["a", "b", "f"])
