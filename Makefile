# kafkacompat: every target builds .venv from nothing when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The demo has a venv of its own with only what it needs (kafkacompat[demo]), not the dev tools or Spark.
DEMO_VENV := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed

.PHONY: test demo bench lint generate check-generated record-frames fuzz clean profiles real-kafka real-kafka-rolling verdict-table docs docs-check site browser

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

test: check-generated lint browser
	$(BIN)/pytest -q -p no:cacheprovider

# Headless Chromium for the documentation site's screenshot test (Debian's package; root, as CI runs).
browser:
	command -v chromium >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends chromium; }

$(DEMO_STAMP): pyproject.toml
	test -x $(DEMO_VENV)/bin/python || $(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install --quiet -e '.[demo]'
	touch $(DEMO_STAMP)

# Prints how long it took, installing included (the first run on a fresh machine installs the demo's venv).
# The command blocks of README.md and docs/ marked <!-- docs-check: ... --> are run and compared with
# what they show (tests/support/docs_check.py); `make docs` rewrites their outputs with what runs now.
docs-check: $(STAMP)
	$(BIN)/python -m tests.support.docs_check

docs: $(STAMP)
	$(BIN)/python -m tests.support.docs_check --update

# The documentation site from docs/ (MkDocs), with docs/cli-reference.md from the real --help, into site/.
site: $(STAMP)
	$(BIN)/python -m mkdocs build --strict

demo:
	@start=$$(date +%s); fresh=$$(test -e $(DEMO_STAMP) || echo yes); \
	$(MAKE) --no-print-directory $(DEMO_STAMP) && $(DEMO_VENV)/bin/python -m kafkacompat.demo; code=$$?; \
	echo "make demo: $$(( $$(date +%s) - start )) s$${fresh:+, installing $(DEMO_VENV) included (first run)}"; \
	exit $$code

bench: $(STAMP)
	$(BIN)/python -m bench

# Client profiles measured from real client releases in Python, Java, Go and Node (each
# installed into the kafkacompat cache, never into .venv): kafkacompat/profiles/measured.jsonl.
profiles: $(STAMP)
	$(BIN)/python -m kafkacompat.profiles.measure

# Every Apache Kafka minor release 0.10.0-4.4 (last patch) in every mode it has, one cluster at a
# time, from Maven Central into the cache: records tests/data/real_kafka/, prints the differences
# from the model (release, features and removal tables, emulator, release guess).  About 25 minutes
# on 2 cores with the releases cached (21 min for 57 runs measured, load 3-60), longer on first use.
real-kafka: $(STAMP)
	$(BIN)/python -m kafkacompat.testing.apache_kafka.matrix --out tests/data/real_kafka

# The long real-cluster scenarios left out of make test (pytest marker `long`): the ZooKeeper-mode
# rolling upgrade 2.8 -> 3.0 under trio and asyncio traffic (about 45 s).  The KRaft roll 3.9 -> 4.0
# under the same traffic stays in make test.
real-kafka-rolling: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider -m long tests/integration/apache

# check's verdicts next to what every measured client really does on every real broker
# (the confusion table of docs/upgrade.md); `make test` runs a few cells of it.
verdict-table: $(STAMP)
	$(BIN)/python -m kafkacompat.profiles.confusion

fuzz: $(STAMP)
	$(BIN)/python -m bench.fuzz_decoders
	$(BIN)/python -m bench.fuzz_hostile --cases
	$(BIN)/python -m bench.fuzz_hostile

clean:
	rm -rf $(VENV) $(DEMO_VENV) .mypy_cache .pytest_cache .ruff_cache
