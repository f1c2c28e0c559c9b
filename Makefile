# kafkacompat: every target builds .venv from nothing when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo bench lint generate check-generated record-frames fuzz clean profiles real-kafka

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
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m kafkacompat._api_listing --check

test: check-generated lint
	$(BIN)/pytest -q -p no:cacheprovider

demo: $(STAMP)
	$(BIN)/python -m kafkacompat.demo

bench: $(STAMP)
	$(BIN)/python -m bench

# Client profiles measured from real client releases (each installed into its own
# cache directory, never into .venv): kafkacompat/profiles/measured.jsonl.
profiles: $(STAMP)
	$(BIN)/python -m kafkacompat.profiles.measure

# Every Apache Kafka minor release 0.10.0-4.4 (last patch) in every mode it has, one cluster at a
# time, from Maven Central into the cache: records tests/data/real_kafka/, prints the differences
# from the release table and the emulator.  Long (about an hour on 2 cores).
real-kafka: $(STAMP)
	$(BIN)/python -m kafkacompat.testing.apache_kafka.matrix --out tests/data/real_kafka

fuzz: $(STAMP)
	$(BIN)/python -m bench.fuzz_decoders
	$(BIN)/python -m bench.fuzz_hostile --cases
	$(BIN)/python -m bench.fuzz_hostile

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
