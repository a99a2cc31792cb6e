#!/usr/bin/env bash
# `make test`'s runner (CI runs it through .ci/run). It builds every test
# binary once and runs them in groups, so that the whole suite fits in
# 15 minutes on a fresh 2-core machine while the tests that judge timing
# run with nothing else of normal priority beside them:
#   1. lint      rustfmt's check (rustfmt.toml), the size limits
#                (scripts/sizes.sh); clippy's lints with -D warnings run
#                inside every build below (clippy-driver compiles our own
#                crates)
#   2. build     the program and the alone phase's test binaries (`make
#                test` builds them while apt installs: `test.sh
#                prebuild`); every other test binary compiles as idle
#                work beside the alone phase
#   3. alone     tests that judge timing (accuracy, also as an ordinary
#                user, nobody, in a user namespace of its own) or that
#                look at the whole host (they SIGKILL aerolink and count
#                what it leaves, or run `down --all`), one at a time
#   4. libraries simulated time, parsers, stores: each binary with all
#                cores; those that keep real time (loopback sockets
#                paced by the clock) at once, the others as idle work
#                beside the alone phase, once the build beside it ends (among
#                them crates/fuzzing's replay: every fuzz target over its
#                seeds, kept crash inputs and 20 000 seeded mutations
#                each; libFuzzer itself is `make fuzz`)
#   5. together  every other end-to-end test, in seven lanes side by side
#                (they mostly wait on emulated round trips), one test at a
#                time in each; their leftover checks count only what no
#                running aerolink owns (tests/common.rs), their faults hit
#                only their own labs.
# Each phase prints its start time; a failure stops the run with the
# phase, the binary and its log's last lines.
#   scripts/test.sh            everything
#   scripts/test.sh PHASE...   only these phases (lint libraries alone
#                              together; the build is always done — all
#                              of it first unless "alone" overlaps it)
#   scripts/test.sh prebuild   the first build only
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
phases=("$@")
# `prebuild`: only the first build of the default run (`make test` runs it
# while apt installs the Debian packages).
prebuild=false
[ "${phases[*]:-}" != prebuild ] || { prebuild=true; phases=(); }
[ ${#phases[@]} -gt 0 ] || phases=(lint libraries alone together)
want() { [[ " ${phases[*]} " == *" $1 "* ]]; }
t0=$SECONDS
phase() { echo "== $1 (at $((SECONDS - t0)) s)"; }
logs=target/test-logs
mkdir -p "$logs"

if want lint && ! $prebuild; then
  phase "lint: cargo fmt --check"
  cargo fmt --check >/dev/null || { cargo fmt --check | head -40; echo "lint: run cargo fmt (rustfmt.toml sets the style)" >&2; exit 1; }
  phase "lint: scripts/sizes.sh"
  ./scripts/sizes.sh
fi
# Clippy's lints, warnings refused (lints and their exceptions:
# Cargo.toml's [workspace.lints]), run inside the test builds themselves:
# clippy-driver compiles our own crates (RUSTC_WORKSPACE_WRAPPER, as `cargo
# clippy` sets it; it is rustc with the lints added, and writes the same
# libraries and programs) and rustc the dependencies. A separate `cargo
# clippy` checked every dependency again: 318 s of CPU on 2 cores, 263 of
# them the dependencies, the last 47 s of a 921-s run (2026-11-29). Its
# diagnostics reach the terminal (--message-format=json-render-diagnostics)
# or the idle build's log. (A plain `cargo build` compiles our crates anew
# after it: the wrapper is part of their fingerprint.)
driver=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver || true)
[ -n "$driver" ] || { echo "lint: clippy-driver not found: rustup component add clippy" >&2; exit 1; }
export RUSTC_WORKSPACE_WRAPPER=$driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__

# Binaries and single tests (BINARY::TEST) that run alone: they judge
# timing, or they SIGKILL aerolink (its leftovers would be any other
# lane's to see) or run `down --all` (it would take other lanes' labs), or
# count iperf3 clients host-wide. The chain topology's test judges its
# pings' median to 2 ms (beside the lanes it read 62.9 ms over 60 ms), the
# ordinary user's link its pings' median to 1 ms (beside them a mean read
# 103.3 ms over 100 ms).
ALONE=(accuracy
  lifecycle::a_chain_topology_routes_end_to_end
  rootless::an_ordinary_user_gets_a_link_with_the_configured_delay
  faults::sigkill_at_random_moments_then_resume_loses_and_repeats_nothing
  lifecycle::after_sigkill_down_all_removes_the_leftovers
  lifecycle::down_all_leaves_a_run_under_way_alone
  lifecycle::an_interrupted_benchmark_removes_its_lab_at_once
  rootless::an_ordinary_users_interrupted_run_leaves_nothing
  browser::interrupting_a_load_leaves_no_browser_behind)
# As nobody, the accuracy tests of the namespace, TUN and pump path; the
# link models' own timing (LEO steps, on-demand grants) and the shared
# loops' (the same rounds, refused real-time priority) are the same code
# whoever runs it, judged once above.
NOBODY_SKIP=(starlink_pings_show_the_15_second_steps on_demand_return_links_make_an_idle_terminal_wait the_shared_pump_keeps_every_hops_delay)
# The rest (BINARY or BINARY::TEST), in lanes balanced by their time in
# this phase on a 2-core machine (fresh-clone make test runs, docs/
# measurements.md 2026-11-29 late night): the guide's three parts 160
# (workloads), 173–182 (browser and QUIC) and 195 s (the rest, its
# stand-in flight and replay 20 s each); flight 181, workloads 158–166
# (of it fair sharing 7, message latency 7, the per-user cap 6, the fleet
# 11), pep 145–151, browser 115, faults 88, experiments 61–68, cluster
# 25, irtt 24, prefetch 19, rootless 13, live 9, lifecycle 8, keylog 6,
# manners 6, pcap 6: workloads and experiments together were the last
# lane (234 s), so four of workloads' tests run in the lanes with room
# (at a02271c the browser/QUIC guide's lane, 188 s that run, with three of
# them was the last at 220 s: two went on).
# Seven lanes: with eight or nine (2026-11-28 evening) tests that time
# round trips failed beside them (pings 5 ms late over 40 ms, a chain's
# RTT tripled).
LANES=("flight cluster"
  "guide::the_guide_s_browser_and_quic_examples_run_as_written pcap keylog workloads::fair_sharing_gives_a_passenger_with_one_connection_as_much_as_one_with_four"
  "guide::the_guide_s_other_examples_run_as_written errors manners"
  "guide::the_guide_s_workload_examples_run_as_written live irtt workloads::message_latency_is_never_below_the_one_way_delay"
  "pep prefetch rootless lifecycle workloads::a_fleet_of_terminals_runs_at_once_and_leaves_nothing"
  "workloads experiments workloads::each_passenger_is_held_to_the_per_user_cap"
  "faults browser")
# What a lane skips of a binary it runs whole: the tests that run alone,
# and those a lane runs on their own (BINARY::TEST in ALONE or LANES).
skips() {
  local a
  # shellcheck disable=SC2068
  for a in "${ALONE[@]}" ${LANES[@]}; do [[ $a == "$1::"* ]] && printf -- '--skip\n%s\n' "${a#*::}"; done
  return 0
}

# name, kind, package directory, executable of the test binaries in a
# cargo build's JSON messages ($1), into the table $2 (replaced whole).
binaries() {
  jq -r 'select(.reason=="compiler-artifact" and .profile.test==true and .executable!=null) | [.target.name, .target.kind[0], (.manifest_path|sub("/Cargo.toml$";"")), .executable] | @tsv' "$1" >"$2.new"
  mv "$2.new" "$2"
}
buildall() { cargo test --release --locked --workspace --all-targets --no-run --message-format=json-render-diagnostics >target/test-binaries.json && binaries target/test-binaries.json target/test-binaries.tsv; }
cli=$(pwd)/crates/cli
e2e() { awk -F'\t' -v t="$1" -v d="$cli" '$1==t && $2=="test" && $3==d {print $4}' target/test-binaries.tsv; }

# Idle work (SCHED_IDLE: it takes only the CPU time nothing else wants —
# the alone phase's tests mostly wait on their links, and a waking test
# thread preempts an idle-policy task at once; the accuracy tests pass
# beside two such busy loops, in the same time: docs/measurements.md,
# 2026-11-27 night), each in a process group of its own (setsid), so that
# a failure, which stops this script, stops it and its compilers too.
idle=(setsid nice -n 19)
command -v chrt >/dev/null && idle=(setsid chrt -i 0 nice -n 19)
bg_pids=()
trap 'for p in "${bg_pids[@]}"; do kill -- -"$p" 2>/dev/null || true; done' EXIT

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

# The library tests: simulated time, parsers, stores, each binary with
# all cores ($1: all, or only those that keep real time — loopback
# sockets paced by the clock, which idle work would starve — or the
# others).
REALTIME_LIBS="aerolink_work-lib aerolink_net-lib aerolink_pep-lib aerolink_flight-lib"
libraries() {
  local rt
  while IFS=$'\t' read -r name kind dir exe; do
    [ "$dir" = "$cli" ] && [ "$kind" = test ] && continue
    rt=false
    [[ " $REALTIME_LIBS " != *" $name-$kind "* ]] || rt=true
    case $1 in
      realtime) $rt || continue ;;
      other) ! $rt || continue ;;
    esac
    run "$logs/$name-$kind.log" "$dir" "$exe" || return 1
  done <target/test-binaries.tsv
}
# With the alone phase to run, only the program and the alone phase's
# binaries are built first; the rest compiles as idle work beside that
# phase (its tests mostly wait; the compile took 176 s of 2 cores after
# the program's), and the same idle job then runs the library tests that
# keep no real time, still beside the alone phase (started after it, they
# and clippy were the run's last 43 s, after the lanes, 2026-11-29). The job
# tells the build's end through a pipe, which the script reads once it
# needs the binaries. Otherwise everything is built first.
overlap=false
if want alone && { want libraries || want together; }; then overlap=true; fi
export -f buildall binaries
if $overlap; then
  phase "build: the program and the alone phase's test binaries"
  mapfile -t alone_bins < <(printf '%s\n' "${ALONE[@]}" | sed 's/::.*//' | sort -u)
  tests=()
  for b in "${alone_bins[@]}"; do tests+=(--test "$b"); done
  cargo test --release --locked --workspace --no-run "${tests[@]}" --message-format=json-render-diagnostics >target/test-binaries-alone.json
  # (A prebuild stops here: it runs while apt installs, jq among them.)
  ! $prebuild || exit 0
  binaries target/test-binaries-alone.json target/test-binaries.tsv
  echo "   the other test binaries compile as idle work: $logs/build-rest.log"
  # fd 8: a pipe (a FIFO opened for reading and writing, then unlinked)
  # on which the job writes its build's status.
  rm -f target/build-rest.fifo && mkfifo target/build-rest.fifo
  exec 8<>target/build-rest.fifo
  rm target/build-rest.fifo
  libs_early=false
  if want libraries; then
    libs_early=true
    echo "   then the library tests that keep no real time, as idle work too: $logs/libraries.log"
  fi
  export -f libraries run
  export logs cli REALTIME_LIBS libs_early
  "${idle[@]}" bash -c 'buildall >"$logs/build-rest.log" 2>&1; st=$?; echo $st >&8; [ $st = 0 ] && $libs_early || exit $st; libraries other >"$logs/libraries.log" 2>&1' &
  build_pid=$!
  bg_pids+=("$build_pid")
else
  phase "build: every test binary"
  buildall
  ! $prebuild || exit 0
fi
if want libraries && ! $overlap; then
  phase "libraries: simulated time, parsers, stores"
  libraries all
fi

# one TEST: BINARY or BINARY::TEST, its log in target/test-logs.
one() {
  local t=$1; shift
  case "$t" in
    *::*) run "$logs/${t%%::*}-${t##*::}.log" "$cli" "$(e2e "${t%%::*}")" --exact "${t##*::}" --test-threads=1 "$@" ;;
    *) run "$logs/$t.log" "$cli" "$(e2e "$t")" --test-threads=1 "$@" ;;
  esac
}

if want alone; then
  phase "alone: timing and whole-host tests, one at a time"
  for t in "${ALONE[@]}"; do one "$t"; done
  echo "   the accuracy tests again, aerolink as an ordinary user (nobody) in a user namespace of its own:"
  nobody_skip=()
  for n in "${NOBODY_SKIP[@]}"; do nobody_skip+=(--skip "$n"); done
  (export AEROLINK_TEST_AS=65534; run "$logs/accuracy-as-nobody.log" "$cli" "$(e2e accuracy)" --test-threads=1 "${nobody_skip[@]}")
fi

libs_pid=
if $overlap; then
  read -r -u 8 st
  [ "$st" = 0 ] || { tail -40 "$logs/build-rest.log" >&2; echo "build: the other test binaries failed to compile: $logs/build-rest.log" >&2; exit 1; }
  echo "   ok   the other test binaries"
  ! $libs_early || libs_pid=$build_pid
fi
if want libraries && $overlap; then
  phase "libraries that keep real time"
  libraries realtime
fi

if want together; then
  phase "together: the other end-to-end tests, ${#LANES[@]} lanes side by side"
  lane() {
    for t in "$@"; do
      mapfile -t skip < <(skips "$t")
      one "$t" "${skip[@]}" || return 1
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

if [ -n "$libs_pid" ]; then
  st=0
  wait "$libs_pid" || st=1
  cat "$logs/libraries.log"
  [ $st = 0 ] || { echo "libraries: a test failed (above)" >&2; exit 1; }
fi

phase "done: every test passed"
