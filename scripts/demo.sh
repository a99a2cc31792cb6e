#!/usr/bin/env bash
# The default job of `make run` until the workload issue lands: a ping and a
# bulk transfer across the `mss` profile (in-flight Wi-Fi over a GEO
# satellite, seed 000 §6), with a packet log and its summary.
set -euo pipefail
AEROLINK=${AEROLINK:-./target/release/aerolink}
PROFILE=${PROFILE:-mss}
OUT=${OUT:-out}
mkdir -p "$OUT"

echo "== the link =="
"$AEROLINK" profiles show "$PROFILE" | sed '/^# the profile file/,$d'

echo "== ping, then a 256 KB TCP download (iperf3 -R, cubic) over $PROFILE =="
"$AEROLINK" run --profile "$PROFILE" --seed 1 --log "$OUT/demo.log" \
  --server 'iperf3 -s -1 >/dev/null 2>&1' \
  --client 'ping -c 10 -i 0.5 $AEROLINK_SERVER | tail -2
            iperf3 -c $AEROLINK_SERVER -R -n 256K -C cubic | grep -E "sender|receiver"'

echo "== what the link did (aerolink stats $OUT/demo.log) =="
"$AEROLINK" stats "$OUT/demo.log" | grep -v "kbit/s per second"
