#!/usr/bin/env bash
# `make test`'s runner (CI runs it through .ci/run). It builds every test
# binary once, then runs them in groups, so that the whole suite fits in
# 15 minutes on a fresh 2-core machine while the tests that judge timing
# run on an otherwise idle machine:
#   1. lint      rustfmt's check (rustfmt.toml)
#   2. build     every test binary, once (cargo test --no-run)
#   3. libraries simulated time, parsers, stores: each binary with all cores
#   4. alone     tests that judge timing (accuracy, also as an ordinary
#                user, nobody, in a user namespace of its own) or kill
#                aerolink itself and count what is left on the host
#                (lifecycle, faults, rootless, experiments, one browser
#                test), one binary at a time, one test at a time
#   5. together  the other end-to-end binaries in three lanes side by side
#                (they mostly wait on emulated round trips, not on the
#                CPU), one test at a time in each; their leftover checks
#                count only what no running aerolink owns (tests/common.rs)
#   6. fuzz      100 000 inputs of each fuzz target (scripts/fuzz.sh)
# Each phase prints its start time; a failure stops the run with the
# phase, the binary and its log's last lines.
#   scripts/test.sh            everything
#   scripts/test.sh PHASE...   only these phases (build is always done)
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(lint libraries alone together fuzz)
want() { [[ " ${phases[*]} " == *" $1 "* ]]; }
t0=$SECONDS
phase() { echo "== $1 (at $((SECONDS - t0)) s)"; }
logs=target/test-logs
mkdir -p "$logs"

if want lint; then
  phase "lint: cargo fmt --check"
  cargo fmt --check >/dev/null || { cargo fmt --check | head -40; echo "lint: run cargo fmt (rustfmt.toml sets the style)" >&2; exit 1; }
fi

phase "build: every test binary"
cargo test --release --locked --workspace --no-run --message-format=json >target/test-binaries.json
# name, kind, package directory, executable
jq -r 'select(.reason=="compiler-artifact" and .profile.test==true and .executable!=null) | [.target.name, .target.kind[0], (.manifest_path|sub("/Cargo.toml$";"")), .executable] | @tsv' target/test-binaries.json >target/test-binaries.tsv
cli=$(pwd)/crates/cli
e2e() { awk -F'\t' -v t="$1" -v d="$cli" '$1==t && $2=="test" && $3==d {print $4}' target/test-binaries.tsv; }

# run LOG DIR EXE ARGS...: one test binary, its output in LOG, its tail
# and the failing tests on failure.
run() {
  local log=$1 dir=$2 exe=$3; shift 3
  local s=$SECONDS
  if (cd "$dir" && "$exe" "$@") >"$log" 2>&1; then
    echo "   ok   $(basename "$log" .log) ($((SECONDS - s)) s)"
  else
    echo "   FAIL $(basename "$log" .log) ($((SECONDS - s)) s): $log" >&2
    grep -E "^(test .* FAILED|---- )" "$log" >&2 || true
    tail -40 "$log" >&2
    return 1
  fi
}

if want libraries; then
  phase "libraries: simulated time, parsers, stores"
  while IFS=$'\t' read -r name kind dir exe; do
    [ "$dir" = "$cli" ] && [ "$kind" = test ] && continue
    run "$logs/$name-$kind.log" "$dir" "$exe"
  done <target/test-binaries.tsv
fi

# Binaries (and single tests, BINARY::TEST) that run alone.
ALONE=(accuracy lifecycle faults rootless experiments browser::interrupting_a_load_leaves_no_browser_behind)
# The rest, in lanes balanced by their time on a 2-core machine (seconds
# alone, docs/measurements.md 2026-11-26: guide 468, flight 220, pep 133,
# workloads 118, browser 34, cluster 15, errors 1).
LANES=("guide" "flight cluster errors" "pep workloads browser")

if want alone; then
  phase "alone: timing and whole-host tests, one at a time"
  for t in "${ALONE[@]}"; do
    case "$t" in
      *::*) run "$logs/${t%%::*}-${t##*::}.log" "$cli" "$(e2e "${t%%::*}")" --exact "${t##*::}" --test-threads=1 ;;
      *) run "$logs/$t.log" "$cli" "$(e2e "$t")" --test-threads=1 ;;
    esac
  done
  echo "   the accuracy tests again, aerolink as an ordinary user (nobody) in a user namespace of its own:"
  (export AEROLINK_TEST_AS=65534; run "$logs/accuracy-as-nobody.log" "$cli" "$(e2e accuracy)" --test-threads=1)
fi

if want together; then
  phase "together: the other end-to-end tests, ${#LANES[@]} lanes side by side"
  lane() {
    for t in "$@"; do
      local skip=()
      [ "$t" = browser ] && skip=(--skip interrupting_a_load_leaves_no_browser_behind)
      run "$logs/$t.log" "$cli" "$(e2e "$t")" --test-threads=1 "${skip[@]}" || return 1
    done
  }
  pids=()
  for l in "${LANES[@]}"; do
    # shellcheck disable=SC2086
    lane $l &
    pids+=($!)
  done
  st=0
  for p in "${pids[@]}"; do wait "$p" || st=1; done
  [ $st = 0 ] || exit 1
fi

if want fuzz; then
  phase "fuzz: 100 000 inputs of each target"
  ./scripts/fuzz.sh "${FUZZ_SMOKE_SECONDS:-runs:100000}"
fi
phase "done: every test passed"
