# aerolink — `make run` and `make test` set up everything they need on a
# fresh Debian machine (as root), then build and run.

SHELL := /bin/bash
CARGO ?= cargo
# Debian packages the emulator, its tests and the demo use.
APT_PACKAGES := iproute2 iputils-ping iperf3 nftables util-linux procps chromium dnsmasq-base tinyproxy-bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
AEROLINK := ./target/release/aerolink

.PHONY: all deps build run demo test bench clean

all: build

deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs)"; exit 1; }

build: deps
	$(CARGO) build --release --locked

# The main job: seed 000 §6 (experiments/ifc-web.toml), about 10 minutes on
# 2 cores; resumable (a second `make run` only redraws the report).
run: build
	@mkdir -p results
	$(SUDO) $(AEROLINK) experiment run experiments/ifc-web.toml --parallel 4 --db results/ifc-web.db
	@$(SUDO) $(AEROLINK) report --db results/ifc-web.db -o results/ifc-web.html | sed 's/^/report: /'
	@$(SUDO) $(AEROLINK) experiment check experiments/ifc-web.toml --db results/ifc-web.db || echo "(a finding does not hold on these runs: see above and docs/reproductions.md)"

# The emulator demo (ping and a bulk transfer over `mss`).
demo: build
	$(SUDO) ./scripts/demo.sh

# Unit tests (simulated time) and end-to-end tests (real namespaces, real
# traffic). The end-to-end tests run one at a time so that timing is judged
# on a machine that is not also running other emulations.
test: build
	$(SUDO) $(CARGO) test --release --locked --workspace -- --test-threads=1

bench: build
	$(SUDO) $(AEROLINK) bench emulator
	$(SUDO) $(AEROLINK) bench pep
	$(SUDO) $(AEROLINK) bench queue
	$(SUDO) $(AEROLINK) bench parallel
	$(SUDO) $(AEROLINK) bench flight
	$(SUDO) $(AEROLINK) bench sat-targets

clean:
	$(CARGO) clean
