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
