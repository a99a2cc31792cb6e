#!/usr/bin/env bash
# The whole catalogue (`make reproduce`): every experiment that maps
# catalogue entries (`[[judge]]` in experiments/*.toml) run into its own
# store, results/NAME.db — resumable, a second call runs only what is
# missing — then every entry judged from those stores: docs/reproductions.md
# and docs/reproductions.json (entries whose stores are not here keep the
# verdicts the previous docs/reproductions.json gave them, marked kept).
#   scripts/reproduce.sh                 every such experiment
#   scripts/reproduce.sh NAME...         only these (experiments/NAME.toml)
#   PARALLEL=4 scripts/reproduce.sh      runs at once (default: aerolink's choice per experiment)
#   PLAN=1 scripts/reproduce.sh          print what would run and how long, run nothing
# Over a cluster, shard each experiment instead (`aerolink experiment slurm
# FILE --shards N --submit`, or `experiment k8s`) and merge the shards into
# results/NAME.db; the last step below is the same.
set -euo pipefail
cd "$(dirname "$0")/.."
AEROLINK=${AEROLINK:-./target/release/aerolink}
names=("$@")
if [ ${#names[@]} = 0 ]; then
  for f in experiments/*.toml; do grep -q '^\[\[judge\]\]' "$f" && names+=("$(basename "$f" .toml)"); done
fi
mkdir -p results
total=0
for n in "${names[@]}"; do
  f=experiments/$n.toml
  [ -f "$f" ] || { echo "reproduce: $f: no such experiment" >&2; exit 2; }
  line=$("$AEROLINK" experiment plan "$f" --shards 1 | sed -n 2p)
  secs=$(sed -E 's/.*about ([0-9]+) s of runs.*/\1/' <<<"$line")
  total=$((total + secs))
  printf '%-24s %s\n' "$n" "${line#*: }"
done
echo "in all about $((total / 60)) min of runs (divide by the runs at once); stores in results/"
[ "${PLAN:-0}" = 1 ] && exit 0
for n in "${names[@]}"; do
  echo "== $n"
  "$AEROLINK" experiment run "experiments/$n.toml" --db "results/$n.db" ${PARALLEL:+--parallel "$PARALLEL"}
done
dbs=()
for n in "${names[@]}"; do dbs+=(--db "results/$n.db"); done
st=0
# Entries whose stores are not here (experiments not named, or run on
# another machine) keep the verdicts of the last check, marked as kept.
keep=()
[ -f docs/reproductions.json ] && cp docs/reproductions.json results/reproductions-before.json && keep=(--keep results/reproductions-before.json)
"$AEROLINK" experiment check "${dbs[@]}" "${keep[@]}" --markdown docs/reproductions.md --json >docs/reproductions.json || st=$?
# 1: an entry does not hold — a finding to explain, not a failure of this script.
[ $st -le 1 ] || exit $st
echo "docs/reproductions.md and docs/reproductions.json written"
