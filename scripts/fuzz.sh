#!/usr/bin/env bash
# Runs every fuzz target (cargo fuzz, libFuzzer; nightly Rust): first each
# kept crash input (fuzz/regressions/TARGET) once, then the fuzzer from the
# committed seeds (fuzz/corpus/TARGET), new inputs kept in
# target/fuzz-corpus. A crash stops it with the input's path.
#   scripts/fuzz.sh SECONDS [TARGET...]   explore for SECONDS each, random
#   scripts/fuzz.sh runs:N [TARGET...]    N inputs each from seed 1: the same
#                                         inputs on every machine (make
#                                         fuzz-smoke)
#   scripts/fuzz.sh build                 only build the targets
# The targets' bodies are crates/fuzzing's; make test runs them on stable
# (its tests/replay.rs), without libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:?seconds per target}; shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(profile traces units packet_log topology experiment flight_log tunnel gso)
# No sanitizer (the parsers are safe Rust: a bug shows as a panic, which
# libFuzzer catches), overflow checks on.
flags=(+nightly fuzz run --sanitizer none --debug-assertions)
cargo +nightly fuzz build --sanitizer none --debug-assertions
[ "$secs" = build ] && exit 0
# one TARGET: its kept crash inputs, then the fuzzer; its lines printed
# when it ends (targets run side by side, one per core).
one() {
  local t=$1 out="target/fuzz-$1.out" budget what log st=0
  {
  mkdir -p "fuzz/regressions/$t" "target/fuzz-corpus/$t"
  if compgen -G "fuzz/regressions/$t/*" >/dev/null; then
    echo "fuzz $t: replaying $(ls "fuzz/regressions/$t" | wc -l) kept crash input(s)"
    cargo "${flags[@]}" "$t" fuzz/regressions/"$t"/* -- -runs=1 >"target/fuzz-$t-replay.log" 2>&1 || { tail -30 "target/fuzz-$t-replay.log"; echo "fuzz $t: a kept crash input crashes again"; return 1; }
  fi
  case "$secs" in
    runs:*) budget=(-runs="${secs#runs:}" -seed=1); what="${secs#runs:} inputs (seed 1)";;
    *) budget=(-max_total_time="$secs"); what="${secs} s";;
  esac
  echo "fuzz $t: $what from $(ls "fuzz/corpus/$t" | wc -l) seed file(s)"
  log="target/fuzz-$t.log"
  cargo "${flags[@]}" "$t" "target/fuzz-corpus/$t" "fuzz/corpus/$t" -- \
    "${budget[@]}" -max_len=65536 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1 || st=$?
  grep -E "^(stat::number_of_executed_units|thread '|SUMMARY|Test unit written|Failed to compile)" "$log" || true
  if [ "$st" != 0 ]; then
    tail -30 "$log"
    echo "fuzz $t: FAILED — the input is in fuzz/artifacts/$t/; once fixed, copy it to fuzz/regressions/$t/"
    return 1
  fi
  } >"$out" 2>&1
}
mkdir -p target
jobs_max=$(nproc)
pids=() names=() failed=0
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  one "$t" &
  pids+=($!) names+=("$t")
done
for i in "${!pids[@]}"; do
  st=0
  wait "${pids[$i]}" || st=$?
  cat "target/fuzz-${names[$i]}.out"
  [ $st = 0 ] || failed=1
done
[ $failed = 0 ] || { echo "fuzz: a target failed (above)" >&2; exit 1; }
echo "fuzz: ${#targets[@]} target(s), ${secs} each, no crash"
