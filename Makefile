# aerolink — `make run` and `make test` set up everything they need on a
# fresh Debian machine (as root), then build and run.

SHELL := /bin/bash
CARGO ?= cargo
# Debian packages the emulator, its tests and the demo use (jq and sqlite3:
# the guide's examples, which crates/cli/tests/guide.rs runs).
# slurmctld, slurmd, slurm-client and munge: a one-node Slurm for the cluster test
# (scripts/slurm-local.sh starts it). tshark, man-db and groff-base: the
# capture, key-log and manual-page tests. irtt (the community's round-trip
# tester, whose JSON `aerolink analyze` reads), openvpn (`--pep openvpn`) and
# squid (the HTTP cache aboard, `proxy = "aboard"`):
# their packages would start services on the host, so they are installed
# with service starts refused and their services left disabled; the tests
# run them only inside labs.
APT_PACKAGES := iproute2 iputils-ping iperf3 nftables util-linux procps chromium dnsmasq-base tinyproxy-bin slurmctld slurmd slurm-client munge jq curl sqlite3 tshark man-db groff-base
QUIET_PACKAGES := irtt openvpn squid
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
AEROLINK := ./target/release/aerolink

.PHONY: all deps apt-deps toolchain build run demo test bench soak fuzz fuzz-smoke fuzz-deps clean reproduce

all: build

# The Debian packages (make build installs them while cargo compiles).
apt-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
	@quiet=""; for p in $(QUIET_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || quiet="$$quiet $$p"; done; \
	if [ -n "$$quiet" ]; then \
	  echo "installing$$quiet (their services not started)"; \
	  policy=/usr/sbin/policy-rc.d; made=""; \
	  if [ ! -e $$policy ]; then printf '#!/bin/sh\nexit 101\n' | $(SUDO) tee $$policy >/dev/null && $(SUDO) chmod 755 $$policy && made=1; fi; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$quiet >/dev/null; rc=$$?; \
	  [ -n "$$made" ] && $(SUDO) rm -f $$policy; \
	  if [ -d /run/systemd/system ]; then for p in $$quiet; do $(SUDO) systemctl disable --now $$p >/dev/null 2>&1 || true; done; fi; \
	  [ $$rc = 0 ] || exit $$rc; \
	fi

toolchain:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs)"; exit 1; }
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy

deps: apt-deps toolchain

# $(call with-apt,COMMAND): COMMAND (a compile) while apt installs what
# is missing (on a fresh machine the two take minutes each); either
# failing fails.
with-apt = mkdir -p target; ( $(MAKE) --no-print-directory apt-deps > target/apt-deps.log 2>&1 ) & apt=$$!; \
	$(1); b=$$?; \
	if ! wait $$apt; then cat target/apt-deps.log; echo "make: installing the Debian packages failed (above)"; exit 1; fi; \
	cat target/apt-deps.log; exit $$b

build: toolchain
	@$(call with-apt,$(CARGO) build --release --locked)

# The main job: seed 000 §6 (experiments/ifc-web.toml), about 10 minutes on
# 2 cores; resumable (a second `make run` only redraws the report).
run: build
	@mkdir -p results
	$(SUDO) $(AEROLINK) experiment run experiments/ifc-web.toml --parallel 4 --db results/ifc-web.db
	@$(SUDO) $(AEROLINK) report --db results/ifc-web.db -o results/ifc-web.html | sed 's/^/report: /'
	@$(SUDO) $(AEROLINK) experiment check experiments/ifc-web.toml --db results/ifc-web.db || echo "(a finding does not hold on these runs: see above and docs/reproductions.md)"

# Every experiment that maps the catalogue's entries, each into
# results/NAME.db (resumable), then docs/reproductions.md and .json from
# those stores (scripts/reproduce.sh; PLAN=1 prints the plan and its
# expected duration only).
reproduce: build
	$(SUDO) env PLAN=$(PLAN) PARALLEL=$(PARALLEL) ./scripts/reproduce.sh

# The emulator demo (ping and a bulk transfer over `mss`).
demo: build
	$(SUDO) ./scripts/demo.sh

# Lint, unit tests (simulated time, and the fuzz targets over their seeds
# and seeded mutations: crates/fuzzing) and end-to-end tests (real
# namespaces, real traffic), grouped by scripts/test.sh: the tests that
# judge timing or look at the whole host run alone, the other end-to-end
# tests in lanes side by side. The program and the alone phase's test
# binaries compile while apt installs; the other test binaries compile as
# idle work beside the alone phase (scripts/test.sh).
test: toolchain
	@$(call with-apt,./scripts/test.sh prebuild)
	$(SUDO) ./scripts/test.sh

# An hour of one experiment with faults injected all along (crates/cli/
# tests/soak.rs): memory, descriptors and leftovers checked, figures in
# results/soak.json. SOAK_SECONDS=600 make soak for a shorter one.
SOAK_SECONDS ?= 3600
soak: build
	$(SUDO) env SOAK_SECONDS=$(SOAK_SECONDS) $(CARGO) test --release --locked -p aerolink --test soak -- --ignored --nocapture

# Fuzzing every parser of outside input (fuzz/, the targets' bodies in
# crates/fuzzing): cargo fuzz needs a nightly toolchain (rustup's, beside
# stable) and cargo-fuzz from crates.io. `make fuzz` explores for long,
# coverage-guided; `make fuzz-smoke` runs the same 100 000 inputs of each
# target on every machine (seed 1). `make test` replays the seeds and kept
# crashes with seeded mutations on stable (crates/fuzzing/tests/replay.rs).
FUZZ_SMOKE_SECONDS ?= runs:100000
FUZZ_SECONDS ?= 600
fuzz-deps:
	@rustup toolchain list 2>/dev/null | grep -q '^nightly' || rustup toolchain install nightly --profile minimal || { echo "fuzzing needs Rust nightly, and rustup could not install it: rustup toolchain install nightly"; exit 1; }
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked

fuzz-smoke: fuzz-deps
	./scripts/fuzz.sh $(FUZZ_SMOKE_SECONDS)

fuzz: fuzz-deps
	./scripts/fuzz.sh $(FUZZ_SECONDS)

bench: build
	$(SUDO) $(AEROLINK) bench emulator
	$(SUDO) $(AEROLINK) bench pep
	$(SUDO) $(AEROLINK) bench queue
	$(SUDO) $(AEROLINK) bench parallel
	$(SUDO) $(AEROLINK) bench fleet
	$(SUDO) $(AEROLINK) bench fleet --terminals 10,100,1000 --load ping
	$(SUDO) $(AEROLINK) bench flight
	$(SUDO) $(AEROLINK) bench sat-targets

clean:
	$(CARGO) clean
