# kafkacompat: every target builds .venv from nothing when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The demo has a venv of its own with only what it needs (kafkacompat[demo]), not the dev tools or Spark.
DEMO_VENV := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed

.PHONY: test demo bench soak lint generate check-generated record-frames fuzz fuzz-asan clean profiles real-kafka real-kafka-rolling verdict-table docs docs-check site system-tools

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
	$(BIN)/ruff check kafkacompat tests bench examples hatch_build.py
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m kafkacompat._api_listing --check

test: check-generated lint system-tools
	$(BIN)/pytest -q -p no:cacheprovider

# The system tools the suite runs, Debian's packages (root, as CI runs): headless Chromium for the
# documentation site's screenshot test, jq for the doc blocks that pipe through it.
SYSTEM_TOOLS := chromium jq
system-tools:
	missing=$$(for tool in $(SYSTEM_TOOLS); do command -v $$tool >/dev/null || echo $$tool; done); \
	[ -z "$$missing" ] || { apt-get update && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends $$missing; }

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

# The library under steady load on each driver (bench/soak.py): 5,000 connects with flat memory and
# file descriptors, 100,000 requests on one connection, 200 connections x 50 requests with nothing
# misrouted, and a broker process killed (kill -9) and restarted under traffic.  A few minutes.
soak: $(STAMP)
	$(BIN)/python -m bench.soak

# Client profiles measured from real client releases in Python, Java, Go and Node (each
# installed into the kafkacompat cache, never into .venv), recorded against real Apache Kafka
# 0.10.2-4.4, Tansu, librdkafka's mock and 0.9.0.1: kafkacompat/profiles/measured.jsonl.
# About 50 minutes on 2 cores (Confluent's JavaScript binding builds for 10 more the first time).
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
# (the confusion table of docs/upgrade.md: real Apache Kafka 2.8-4.4, 0.9.0.1 and three
# look-alikes; about 40 minutes); `make test` runs a representative set of its cells.
verdict-table: $(STAMP)
	$(BIN)/python -m kafkacompat.profiles.confusion

# Both codec paths: the native reader (checked against the Python readers case by case) and the Python
# readers alone.  The native path needs the extension built (a C compiler at install time).
fuzz: $(STAMP)
	$(BIN)/python -m bench.fuzz_decoders --path native
	$(BIN)/python -m bench.fuzz_decoders --path pure
	$(BIN)/python -m bench.fuzz_hostile --cases --path native
	$(BIN)/python -m bench.fuzz_hostile --cases --path pure
	$(BIN)/python -m bench.fuzz_hostile --path native
	$(BIN)/python -m bench.fuzz_hostile --path pure

# The native reader rebuilt with AddressSanitizer, fuzzed on its own and through the hostile broker,
# then rebuilt as usual.  ASan's runtime is preloaded into the (uninstrumented) interpreter, whose objects
# are each malloc'ed (PYTHONMALLOC=malloc: inside pymalloc's arenas ASan sees no bounds); CPython's
# own allocations at exit are not leaks of ours, so leak detection is off; ASan's shadow memory and
# quarantine put any process near 460 MiB, so the RSS target is not ASan's to judge (make fuzz does).
ASAN_FLAGS := -fsanitize=address -fno-omit-frame-pointer -g
ASAN_RUN := PYTHONMALLOC=malloc LD_PRELOAD=$$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
fuzz-asan: $(STAMP)
	KAFKACOMPAT_NATIVE_CFLAGS="$(ASAN_FLAGS)" $(BIN)/python -m pip install --quiet --no-deps -e .
	$(ASAN_RUN) $(BIN)/python -m bench.fuzz_decoders --path native; status=$$?; \
	$(ASAN_RUN) $(BIN)/python -m bench.fuzz_hostile --cases --path native || status=1; \
	$(ASAN_RUN) $(BIN)/python -m bench.fuzz_hostile --path native --max-rss 4096 || status=1; \
	$(BIN)/python -m pip install --quiet --no-deps -e .; exit $$status

clean:
	rm -rf $(VENV) $(DEMO_VENV) .mypy_cache .pytest_cache .ruff_cache
