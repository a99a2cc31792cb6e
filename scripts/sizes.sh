#!/usr/bin/env bash
# The size guardrail (`make test`'s lint phase; ARCHITECTURE.md): no Rust
# file over 600 lines, no function over 100. It names every offender with
# its size. The ones that were too long when the check came are listed in
# scripts/sizes.allow with their size then: they may shrink (shrink the
# line too, or delete it once under the limit), never grow, and nothing
# new joins them.
#   scripts/sizes.sh          check
#   scripts/sizes.sh --list   every offender, listed or not, largest first
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_FILE=600 MAX_FN=100
allow=scripts/sizes.allow
# Tracked and new files, as they are on disk.
# (A deleted file is skipped; `|| echo`, so the loop's status is 0 when the
# last one listed is deleted.)
files=$(git ls-files --cached --others --exclude-standard 'crates/*.rs' 'fuzz/*.rs' | while read -r f; do [ ! -f "$f" ] || echo "$f"; done)
# "KIND PATH[:NAME] LINES", KIND file or fn. A function starts at a line
# `fn NAME` (rustfmt's layout: its body closes at the same indentation).
offenders() {
  # shellcheck disable=SC2086
  wc -l $files | awk -v m=$MAX_FILE '$2 != "total" && $1 > m {print "file " $2 " " $1}'
  # shellcheck disable=SC2086
  awk -v m=$MAX_FN '
    FNR == 1 { infn = 0 }
    !infn && /^[ \t]*(pub(\([a-z]+\))? )?(async )?(const )?(unsafe )?fn [A-Za-z0-9_]+/ && !/;[ \t]*$/ {
      if (/\{/ && /\}[ \t]*$/) next
      infn = 1; start = FNR; ind = $0; sub(/[^ \t].*/, "", ind)
      name = $0; sub(/^.*fn /, "", name); sub(/[^A-Za-z0-9_].*/, "", name)
      next
    }
    infn && $0 == ind "}" { n = FNR - start + 1; if (n > m) print "fn " FILENAME ":" name " " n; infn = 0 }
  ' $files
}
if [ "${1:-}" = --list ]; then
  offenders | sort -k3 -rn
  exit 0
fi
st=0
while read -r kind what n; do
  was=$(awk -v k="$kind" -v w="$what" '$1 == k && $2 == w {print $3}' "$allow")
  if [ -z "$was" ]; then
    echo "sizes: $what: $kind of $n lines, over the limit ($([ "$kind" = file ] && echo $MAX_FILE || echo $MAX_FN)): split it" >&2
    st=1
  elif [ "$n" -gt "$was" ]; then
    echo "sizes: $what: $kind grew from $was to $n lines; it is over the limit already: split it" >&2
    st=1
  fi
done < <(offenders)
# A listed offender now under the limit leaves the list.
now=$(offenders | awk '{print $1 " " $2}')
while read -r kind what _; do
  grep -qxF "$kind $what" <<<"$now" || { echo "sizes: $what is under the limit now: delete its line in $allow" >&2; st=1; }
done < <(grep -v '^#' "$allow")
left=$(grep -vc "^#" "$allow" || true)
[ $st = 0 ] && echo "sizes: nothing new over $MAX_FILE lines a file or $MAX_FN a function ($left listed in $allow)"
exit $st
