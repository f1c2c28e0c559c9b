"""The command blocks of README.md and docs/ that show output are run, and must still show what runs.

See tests/support/docs_check.py; ``make docs`` rewrites the outputs after a
deliberate change of output.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.support import docs_check, docs_targets

pytestmark = pytest.mark.broker


def test_every_marked_block_shows_what_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = docs_check.main([])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert " 0 differ; 0 skipped" in captured.out, captured.out  # every marked block ran


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


def test_a_port_means_the_same_address_in_every_command_of_a_block() -> None:
    place = docs_targets.Place(["127.0.0.1:1111", "127.0.0.1:2222"], {})
    assert place.runnable("record --upstream 127.0.0.1:9 --listen 127.0.0.1:8") == (
        "record --upstream 127.0.0.1:1111 --listen 127.0.0.1:2222"
    )
    assert place.runnable("inspect 127.0.0.1:8 --brief") == "inspect 127.0.0.1:2222 --brief"
    assert place.runnable("emulate --port 9") == "emulate --port 1111"
    assert place.runnable("inspect 127.0.0.1:7") == "inspect 127.0.0.1:7"  # no address left for it
    # What the commands print is shown with the doc's ports.
    assert place.output(['127.0.0.1:2222 "port": 1111 emulated-3.9-1111 127.0.0.1:22220']) == [
        '127.0.0.1:8 "port": 9 emulated-3.9-9 127.0.0.1:22220'
    ]


def test_a_document_s_blocks_share_its_temporary_folders(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    fence = "```"
    writes = "$ kafkacompat client-profile --out /tmp/shared/mine.jsonl"
    reads = "$ kafkacompat check /tmp/shared/mine.jsonl --release 3.9\n[exit 0]"
    marker = "<!-- docs-check: none -->"
    doc.write_text(f"{marker}\n{fence}\n{writes}\n{fence}\n\n{marker}\n{fence}\n{reads}\n{fence}\n")
    assert docs_check.main(["--update", str(doc)]) == 0
    text = doc.read_text()
    assert "against Kafka 3.9 (zk-broker): WORKS" in text  # the second block read what the first wrote
    assert docs_check.main([str(doc)]) == 0
    assert not list(Path(tempfile.gettempdir()).glob("kafkacompat-docs-*/mine.jsonl"))  # removed after


def test_a_background_command_serves_the_next_and_is_stopped_with_ctrl_c(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    fence = "```"
    block = (
        "$ kafkacompat emulate --release 0.10.0 --port 9092 &\n"
        "bootstrap: 127.0.0.1:9092\n[... 2 lines omitted ...]\nstopped\n[exit 0]\n"
        "$ kafkacompat inspect 127.0.0.1:9092 --brief\n"
        "127.0.0.1:9092 (id: 1 rack: null) -> (\n[... 84 lines omitted ...]\n)\n"
    )
    marker = "<!-- docs-check: none free-port -->"
    doc.write_text(f"{marker}\n{fence}\n{block}{fence}\n")
    assert docs_check.main([str(doc)]) == 0
    doc.write_text(f"{marker}\n{fence}\n{block.replace('stopped', 'gone')}{fence}\n")
    assert docs_check.main([str(doc)]) == 1


def test_a_listing_must_be_the_file_it_names(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    fence = "```"
    doc.write_text(f"<!-- docs-check: file examples/probe_health.py -->\n{fence}python\nimport os\n{fence}\n")
    assert docs_check.main([str(doc)]) == 1
    assert docs_check.main(["--update", str(doc)]) == 0
    assert docs_check.main([str(doc)]) == 0
    assert (docs_check.ROOT / "examples" / "probe_health.py").read_text() in doc.read_text()


def test_examples_and_variables_run_as_a_shell_runs_them(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    fence, marker = "```", "<!-- docs-check: none free-port -->"
    block = (
        "$ python examples/probe_health.py --bootstrap 127.0.0.1:9092\n[... 1 lines omitted ...]\n[exit 1]\n"
        "$ PW=not-shown kafkacompat inspect 127.0.0.1:9092 --sasl-mechanism PLAIN --sasl-username a "
        "--sasl-password-env PW\n"
        "kafkacompat inspect: unreachable: 127.0.0.1:9092: connection refused (3 tries)\n[exit 1]\n"
    )
    doc.write_text(f"{marker}\n{fence}\n{block}{fence}\n")
    assert docs_check.main([str(doc)]) == 0
    doc.write_text(f"{marker}\n{fence}\n{block.replace('PW=', 'NOT_PW=')}{fence}\n")
    assert docs_check.main([str(doc)]) == 1  # without the variable: "is not set", not unreachable


def test_a_pipeline_through_jq_runs_as_a_shell_runs_it(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    fence, marker = "```", "<!-- docs-check: none -->"
    block = (
        "$ kafkacompat check measured --client sarama --release 4.0 --format json "
        "| jq -r '.verdicts[] | \"\\(.client): \\(.status)\"'\n"
        "sarama 1.40.1: breaks\nsarama 1.61.1: works\n[exit 0]\n"  # jq's status, not check's 1
        "$ jq -c 'select(.client == \"sarama\") | .version' kafkacompat/profiles/measured.jsonl\n"
        '"1.40.1"\n"1.61.1"\n'
        "$ kafkacompat check measured --release 5.0 | jq .\n"  # check's stderr, jq's empty stdout
        "kafkacompat check: --release 5.0: no Kafka 5.0 in the release table; the table has 0.8.0 to 4.4\n"
    )
    doc.write_text(f"{marker}\n{fence}\n{block}{fence}\n")
    assert docs_check.main([str(doc)]) == 0
    doc.write_text(f"{marker}\n{fence}\n{block.replace('1.40.1: breaks', '1.40.1: works')}{fence}\n")
    assert docs_check.main([str(doc)]) == 1
    # A quoted | is jq's, not a pipe; only the tools make system-tools installs run after one.
    assert docs_targets.run_command("jq -n -c '[1, 2] | length'") == (["2"], 0)
    with pytest.raises(ValueError, match="not 'sh'"):
        docs_targets.run_command("kafkacompat --version | sh")


def test_free_ports_are_consecutive_as_emulate_port_takes_them() -> None:
    first, *rest = docs_targets.free_ports(3)
    assert rest == [first + 1, first + 2]
    with docs_targets.target("none free-port free-port") as addresses:
        (one, two) = (int(a.rpartition(":")[2]) for a in addresses)
        assert two == one + 1


def test_a_python_client_release_comes_first_on_the_path_of_python_commands() -> None:
    path = docs_targets.python_path("emulated 3.9 free-port python-client:kafka-python@2.0.2")
    version = "python -c 'import kafka; print(kafka.__version__)'"
    assert docs_targets.run_command(version, path=path) == (["2.0.2"], 0)  # not the venv's 3.0.12
    assert docs_targets.python_path("emulated 3.9 free-port") == []
    with pytest.raises(ValueError, match="not a Python client release"):
        docs_targets.python_path("emulated 3.9 python-client:kafka-python@9.9.9")
    with pytest.raises(ValueError, match="needs an emulated target and a free-port"), docs_targets.target(
        "emulated 3.9 advertise-free-port"
    ):
        pass
