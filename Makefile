# agent-meeting — build, test, lint.
CARGO ?= cargo

.PHONY: build test lint fmt schemas install uninstall

# The release programs: one executable, target/release/agent-meeting (the nine programs in one,
# src/bin/agent-meeting.rs), and beside it a link per program name, so target/release/meeting
# etc. run as before. `cargo build --release` (all targets) also builds each program on its own.
build:
	$(CARGO) build --locked --release --bin agent-meeting
	@cd $(RELEASE_DIR) && for p in $(PROGRAMS); do ln -sf agent-meeting $$p; done

# Only a Rust toolchain is needed: a test that needs jq or GNU parallel is skipped where the
# tool is missing (it fails when CI is set) and the skipped ones are named in one closing line.
SKIPPED_TESTS_FILE := $(CURDIR)/target/tmp/skipped-tests
test:
	@rm -f $(SKIPPED_TESTS_FILE)
	@SKIPPED_TESTS_FILE=$(SKIPPED_TESTS_FILE) $(CARGO) test --locked; status=$$?; \
	if [ -s $(SKIPPED_TESTS_FILE) ]; then \
	  sort -u $(SKIPPED_TESTS_FILE) | awk -F'\t' '{ c[$$2]++; n[$$2] = n[$$2] s[$$2] $$1; s[$$2] = ", " } \
	    END { for (r in c) printf "skipped %d test%s: %s (%s)\n", c[r], (c[r] > 1 ? "s" : ""), r, n[r] }' >&2; \
	fi; exit $$status

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# Install the release programs, their man pages and shell completions (each program prints them
# with --generate). PREFIX defaults to ~/.local (no root needed; ~/.local/bin must be on PATH);
# `make install PREFIX=/usr/local` as root for everyone. DESTDIR is prepended for packaging.
# One executable, bin/agent-meeting, and a relative symbolic link to it per program name
# (it runs as the program its link is named after). agent-meeting has its own man page and
# completions (the program and mode names after it, then each one's flags), and each mode
# (agent-meeting MODE, no link of its own) a man page, agent-meeting-MODE.1.
PREFIX ?= $(HOME)/.local
PROGRAMS = agent-builder agent-turn collect-context init-board meeting merge-board next-stage \
  pm-step render-report
MODES = mcp github gitlab
# Where `build` leaves the executable and its links (a test installs a debug build from elsewhere).
RELEASE_DIR ?= target/release
BIN_DIR = $(DESTDIR)$(PREFIX)/bin
MAN_DIR = $(DESTDIR)$(PREFIX)/share/man/man1
BASH_DIR = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSH_DIR = $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISH_DIR = $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
# share/meeting.sh, the meeting as a POSIX shell loop, and the cookbook of shell flows
# (share/flows/, docs/design/flows.md): scripts to run and to copy from.
SHARE_DIR = $(DESTDIR)$(PREFIX)/share/agent-meeting
FLOWS_DIR = $(SHARE_DIR)/flows

install: build
	install -d $(BIN_DIR) $(MAN_DIR) $(BASH_DIR) $(ZSH_DIR) $(FISH_DIR) $(SHARE_DIR) $(FLOWS_DIR)
	install -m 755 $(RELEASE_DIR)/agent-meeting $(BIN_DIR)/agent-meeting
	install -m 755 share/meeting.sh $(SHARE_DIR)/meeting.sh
	install -m 755 share/flows/*.sh $(FLOWS_DIR)
	@set -e; for p in $(PROGRAMS); do \
	  echo "install $$p"; \
	  rm -f $(BIN_DIR)/$$p; \
	  ln -s agent-meeting $(BIN_DIR)/$$p; \
	  $(RELEASE_DIR)/$$p --generate man > $(MAN_DIR)/$$p.1; \
	  $(RELEASE_DIR)/$$p --generate complete-bash > $(BASH_DIR)/$$p; \
	  $(RELEASE_DIR)/$$p --generate complete-zsh > $(ZSH_DIR)/_$$p; \
	  $(RELEASE_DIR)/$$p --generate complete-fish > $(FISH_DIR)/$$p.fish; \
	done
	@set -e; am=$(RELEASE_DIR)/agent-meeting; echo "install agent-meeting's man pages and completions"; \
	$$am --generate man > $(MAN_DIR)/agent-meeting.1; \
	for m in $(MODES); do $$am $$m --generate man > $(MAN_DIR)/agent-meeting-$$m.1; done; \
	$$am --generate complete-bash > $(BASH_DIR)/agent-meeting; \
	$$am --generate complete-zsh > $(ZSH_DIR)/_agent-meeting; \
	$$am --generate complete-fish > $(FISH_DIR)/agent-meeting.fish

uninstall:
	@for p in $(PROGRAMS); do \
	  rm -f $(BIN_DIR)/$$p $(MAN_DIR)/$$p.1 $(BASH_DIR)/$$p $(ZSH_DIR)/_$$p $(FISH_DIR)/$$p.fish; \
	done
	@for m in $(MODES); do rm -f $(MAN_DIR)/agent-meeting-$$m.1; done
	rm -f $(MAN_DIR)/agent-meeting.1 $(BASH_DIR)/agent-meeting $(ZSH_DIR)/_agent-meeting \
	  $(FISH_DIR)/agent-meeting.fish
	rm -f $(BIN_DIR)/agent-meeting $(SHARE_DIR)/meeting.sh
	rm -f $(FLOWS_DIR)/*.sh; rmdir $(FLOWS_DIR) 2>/dev/null || true
	rmdir $(SHARE_DIR) 2>/dev/null || true

# Regenerate share/schemas/ from the Rust types (the test `schemas_match_types` checks them).
schemas:
	AGENT_MEETING_BLESS=1 $(CARGO) test --locked --test integration schemas::

# The offline demo: a scripted cassette (no network, no API key) → reports/demo.md.
DEMO_FLAGS = --meeting-file meetings/demo.yaml --agents arch,biz --provider replay

.PHONY: demo demo-forced announce-build
# Said before the build starts: the first release build compiles every dependency (about 200
# crates: about 5 minutes on 2 cores, up to 20 on a busy machine); later builds take seconds.
# After a demo: how the programs get on PATH, unless they are there already.
PATH_HINT = command -v meeting > /dev/null || echo "next: export PATH=\"$(CURDIR)/target/release:\$$PATH\" (or make install), then README.md, Your own meeting"

announce-build:
	@test -x target/release/meeting || echo "make: building the release programs first (the first build takes about 5 minutes on 2 cores, up to 20 on a busy machine; later ones seconds) ..."

demo: announce-build build
	@PATH="$(CURDIR)/target/release:$$PATH" meeting $(DEMO_FLAGS) \
	  --cassette meetings/demo.cassette.jsonl --report-file reports/demo.md > /dev/null
	@echo "report: reports/demo.md"
	@$(PATH_HINT)

# The same meeting cut short by --max-loops 2: the PM must close it (forced finish).
demo-forced: announce-build build
	@PATH="$(CURDIR)/target/release:$$PATH" meeting $(DEMO_FLAGS) --max-loops 2 \
	  --cassette meetings/demo-forced.cassette.jsonl --report-file reports/demo-forced.md > /dev/null
	@echo "report: reports/demo-forced.md"
	@$(PATH_HINT)

# Benchmarks: stage cost, context walk, whole offline meetings, prompt volume, printed on
# stdout; SAVE=1 also rewrites the tracked bench/RESULTS.md (only then; BENCHMARKS.md summarises it). QUICK=1 runs smaller
# sizes and fewer repetitions (well under a minute).
.PHONY: bench
# BEFORE=DIR adds a before/after table against the stage programs of a previous build;
# BEFORE_REF=REF gives its meetings the agents/ files of that git commit.
bench: build
	QUICK=$(QUICK) python3 bench/bench.py $(if $(SAVE),,--out /dev/null) $(if $(BEFORE),--before $(BEFORE)) $(if $(BEFORE_REF),--before-ref $(BEFORE_REF))

# The quality benchmark (bench/quality/README.md), not in `make test`: does a meeting beat one
# call? Four modes (one call, self-consistency, a meeting, a council) on every case at a matched
# token budget, graded against answer keys no prompt sees. OFFLINE=1 replays the shipped
# cassettes (no model); else PROVIDER=... MODEL=... (CASES=c01,c07 K=5 RUNS=3 FLAGS="--max-tokens 400").
# The Markdown table on stdout, the JSON in target/bench-quality/results.json.
.PHONY: bench-quality
bench-quality: build
	python3 bench/quality/run.py $(if $(OFFLINE),--offline) $(if $(PROVIDER),--provider $(PROVIDER)) \
	  $(if $(MODEL),--model $(MODEL)) $(if $(CASES),--cases $(CASES)) $(if $(K),--k $(K)) \
	  $(if $(RUNS),--runs $(RUNS)) $(if $(FLAGS),-- $(FLAGS))

# Beyond one machine (docs/design/scale.md), not in `make test`: a single-node Slurm cluster
# and a LiteLLM proxy started here, six meetings as a job array through the proxy, one task
# killed and requeued. Installs Debian's slurm-wlm and munge and PyPI's litellm[proxy] where it
# can (root, apt-get, pip); skips by name where it cannot. Needs root for Slurm's daemons.
.PHONY: test-scale
test-scale:
	$(CARGO) build --locked
	sh tests/scale/run.sh

# Fuzzing (not in CI): FUZZ_SECONDS per target (default 30). Uses cargo-fuzz (libFuzzer, needs
# `cargo install cargo-fuzz` and a nightly toolchain) when both are present, else the stable
# fallback (an xorshift mutator over fuzz/seeds in tests/it/fuzz_regressions.rs). FUZZ_MODE=stable
# forces the fallback (built with the `fuzz` profile of Cargo.toml). Crashes:
# fuzz/artifacts/<target>/ or target/fuzz-crashes/.
FUZZ_SECONDS ?= 30
FUZZ_TARGETS = json_reply board meeting_file
.PHONY: fuzz
fuzz:
	@if [ "$(FUZZ_MODE)" != stable ] && command -v cargo-fuzz >/dev/null 2>&1 \
	    && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then \
	  echo "fuzz: cargo-fuzz (libFuzzer, nightly), $(FUZZ_SECONDS) s per target"; \
	  for t in $(FUZZ_TARGETS); do \
	    mkdir -p fuzz/corpus/$$t && \
	    $(CARGO) +nightly fuzz run --fuzz-dir fuzz $$t fuzz/corpus/$$t fuzz/seeds/$$t \
	      -- -max_total_time=$(FUZZ_SECONDS) -max_len=65536 || exit 1; \
	  done; \
	else \
	  echo "fuzz: stable fallback (xorshift mutator), $(FUZZ_SECONDS) s per target"; \
	  FUZZ_SECONDS=$(FUZZ_SECONDS) $(CARGO) test --profile fuzz --test integration \
	    -- --ignored fuzz_regressions::fuzz_stable --nocapture; \
	fi

# The release packages (issue #54, packaging/RELEASE.md), not in `make test`: this machine's
# archive and shell installer (dist), the wheel (maturin), the npm packages and the .mcpb bundle,
# each installed with no Rust on PATH and run (--version, a sample meeting, MCP initialize and
# tools/list), the Action's download step against a local release, `dist plan` and server.json
# against the MCP registry's schema. Installs its tools under target/dist-tools.
.PHONY: test-dist
test-dist:
	bash packaging/test-dist.sh
