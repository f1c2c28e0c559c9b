# kafkacompat: every target builds .venv from nothing when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo bench lint generate check-generated record-frames fuzz clean profiles verdict-table

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

generate: $(STAMP)
	$(BIN)/python -m kafkacompat._codegen

check-generated: $(STAMP)
	$(BIN)/python -m kafkacompat._codegen --check

# Re-record the held-out frames of real clients and brokers (tests/data/held_out_frames.json).
record-frames: $(STAMP)
	$(BIN)/python -m tests.support.record_frames

lint: $(STAMP)
	$(BIN)/ruff check kafkacompat tests bench examples
	$(BIN)/mypy

test: check-generated lint
	$(BIN)/pytest -q -p no:cacheprovider

demo: $(STAMP)
	$(BIN)/python -m kafkacompat.demo

bench: $(STAMP)
	$(BIN)/python -m bench

# Client profiles measured from real client releases in Python, Java, Go and Node (each
# installed into the kafkacompat cache, never into .venv): kafkacompat/profiles/measured.jsonl.
profiles: $(STAMP)
	$(BIN)/python -m kafkacompat.profiles.measure

# check's verdicts next to what every measured client really does on every real broker
# (the confusion table of docs/upgrade.md); `make test` runs a few cells of it.
verdict-table: $(STAMP)
	$(BIN)/python -m kafkacompat.profiles.confusion

fuzz: $(STAMP)
	$(BIN)/python -m bench.fuzz_decoders
	$(BIN)/python -m bench.fuzz_hostile --cases
	$(BIN)/python -m bench.fuzz_hostile

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
