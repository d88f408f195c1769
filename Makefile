# agent-meeting — build, test, lint.
CARGO ?= cargo

.PHONY: build test lint fmt schemas

build:
	$(CARGO) build --locked --release

test:
	$(CARGO) test --locked

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# Regenerate share/schemas/ from the Rust types (the test `schemas_match_types` checks them).
schemas:
	AGENT_MEETING_BLESS=1 $(CARGO) test --locked --test schemas

# The offline demo: a scripted cassette (no network, no API key) → reports/demo.md.
DEMO_FLAGS = --meeting-file meetings/demo.yaml --agents arch,biz --provider replay

.PHONY: demo demo-forced
demo: build
	PATH="$(CURDIR)/target/release:$$PATH" meeting $(DEMO_FLAGS) \
	  --cassette meetings/demo.cassette.jsonl --report-file reports/demo.md --pretty

# The same meeting cut short by --max-loops 2: the PM must close it (forced finish).
demo-forced: build
	PATH="$(CURDIR)/target/release:$$PATH" meeting $(DEMO_FLAGS) --max-loops 2 \
	  --cassette meetings/demo-forced.cassette.jsonl --report-file reports/demo-forced.md --pretty

# Benchmarks (issue 6): stage cost, context walk, whole offline meetings, prompt volume →
# BENCHMARKS.md. QUICK=1 runs smaller sizes and fewer repetitions (well under a minute).
.PHONY: bench
bench: build
	QUICK=$(QUICK) python3 bench/bench.py
