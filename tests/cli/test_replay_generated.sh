#!/usr/bin/env bash
# replay on generated streams (tests/tools/gen_commands):
#  - a shuffled stream with redeliveries and invalid lines gives the same
#    documents as the clean stream in time order (docs/DOCUMENT.md: the result depends
#    only on the set of valid commands), and exactly the invalid lines are
#    rejected;
#  - the documents equal those of an independent reference merge
#    (tests/tools/reference_merge.py), with counter and with time versions.
set -euo pipefail

AGG=${AGGREGATOR:?set AGGREGATOR to the aggregator binary}
SRC=${AGG_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${AGG_BINARY_DIR:?set AGG_BINARY_DIR to the build directory}
GEN=$BIN/gen_commands
REF=$SRC/tests/tools/reference_merge.py
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export LC_ALL=C

command -v python3 >/dev/null || { echo "FAIL: python3 is needed for the reference merge" >&2; exit 1; }
# shellcheck source=tests/cli/checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
norm() { sed -E 's/"updatedAt":"[^"]*"/"updatedAt":"X"/' "$1"; }
same() { diff <(norm "$1") <(norm "$2") >/dev/null; }

common=(--seed 42 --tenants 4 --assignments 60 --students 30 --count 7000)
"$GEN" "${common[@]}" >"$TMP/clean.jsonl" 2>"$TMP/clean.gen"
"$GEN" "${common[@]}" --order shuffle --duplicate-rate 0.4 --invalid-rate 0.15 >"$TMP/dirty.jsonl" 2>"$TMP/dirty.gen"
"$GEN" "${common[@]}" --versions time --mix upserted=5,deleted=5,grade=50,unassigned=20,assigned=20 \
  --duplicate-rate 0.2 --order shuffle >"$TMP/time.jsonl" 2>"$TMP/time.gen"
# same options, same bytes
"$GEN" "${common[@]}" --order shuffle --duplicate-rate 0.4 --invalid-rate 0.15 >"$TMP/dirty2.jsonl" 2>/dev/null
check "generator is deterministic" cmp -s "$TMP/dirty.jsonl" "$TMP/dirty2.jsonl"
invalid=$(sed -E 's/.*invalid=([0-9]+).*/\1/' "$TMP/dirty.gen")
lines=$(sed -E 's/.*lines=([0-9]+).*/\1/' "$TMP/dirty.gen")
check "dirty stream has invalid lines" test "$invalid" -gt 0

for s in clean dirty time; do
  check "$s: replay exits 0" "$AGG" replay --input "$TMP/$s.jsonl" --output "$TMP/$s.out" --rejects "$TMP/$s.rej" \
    2>"$TMP/$s.err"
done
check "clean: nothing rejected" test ! -s "$TMP/clean.rej"
check "clean: summary" grep -Eq '"msg":"replay: summary","read":7000,"applied":7000,"stale":0,"rejected":0,"aggregates":60,' "$TMP/clean.err"
check "dirty: every invalid line rejected, no other" \
  grep -Eq "\"msg\":\"replay: summary\",\"read\":$lines,\"applied\":[0-9]+,\"stale\":[0-9]+,\"rejected\":$invalid,\"aggregates\":60," "$TMP/dirty.err"
check "dirty shuffled stream = clean stream" same "$TMP/dirty.out" "$TMP/clean.out"
codes=$(sed -E 's/.*"code":"([a-z_0-9]+)".*/\1/' "$TMP/dirty.rej" | sort -u | tr '\n' ' ')
check "dirty: eleven rejection codes seen ($codes)" test "$(echo "$codes" | wc -w)" -eq 11

for s in clean dirty time; do
  python3 "$REF" "$TMP/$s.jsonl" "$TMP/$s.rej" >"$TMP/$s.ref"
  check "$s: documents = reference merge" same "$TMP/$s.out" "$TMP/$s.ref"
done
# key skew: 10% of the assignments (6 of 60) get 90% of the commands
"$GEN" "${common[@]}" --skew 0.1:0.9 --order shuffle --duplicate-rate 0.1 >"$TMP/skew.jsonl" 2>/dev/null
hot=$(sed -E 's/.*"assignment":"([^"]*)".*/\1/' "$TMP/skew.jsonl" | sort | uniq -c | sort -rn | head -6 |
  awk '{s += $1} END {print s}')
total=$(wc -l <"$TMP/skew.jsonl")
check "skew: the 6 hottest assignments have 90% of the lines ($hot of $total)" \
  awk -v h="$hot" -v t="$total" 'BEGIN {exit !(h >= 0.88 * t && h <= 0.92 * t)}'
check "skew: replay exits 0" "$AGG" replay --input "$TMP/skew.jsonl" --output "$TMP/skew.out" 2>/dev/null
python3 "$REF" "$TMP/skew.jsonl" /dev/null >"$TMP/skew.ref"
check "skew: documents = reference merge" same "$TMP/skew.out" "$TMP/skew.ref"
check "$GEN rejects a bad --skew" bash -c "! '$GEN' --skew 0.1 >/dev/null 2>&1 && ! '$GEN' --skew 1:0.5 >/dev/null 2>&1"

# steady load: every assignment starts at once, so each tenth of the stream touches all 60 (the default
# spreads the starts over 30 days: the first and last tenths touch fewer)
"$GEN" "${common[@]}" --start-spread-days 0 >"$TMP/steady.jsonl" 2>/dev/null
tenths() { awk -F'"assignment":"' -v n="$(wc -l <"$1")" '{split($2, a, "\""); t = int(10 * (NR - 1) / n)
  if (!seen[t, a[1]]++) c[t]++} END {for (t = 0; t < 10; t++) printf "%d ", c[t]}' "$1"; }
check "steady: all 60 assignments in every tenth of the stream ($(tenths "$TMP/steady.jsonl"))" \
  test "$(tenths "$TMP/steady.jsonl")" = "$(printf '60 %.0s' $(seq 10))"
check "default: fewer in the first tenth ($(tenths "$TMP/clean.jsonl"))" \
  test "$(tenths "$TMP/clean.jsonl" | cut -d' ' -f1)" -lt 60
check "steady: replay exits 0" "$AGG" replay --input "$TMP/steady.jsonl" --output "$TMP/steady.out" 2>/dev/null
python3 "$REF" "$TMP/steady.jsonl" /dev/null >"$TMP/steady.ref"
check "steady: documents = reference merge" same "$TMP/steady.out" "$TMP/steady.ref"
check "$GEN rejects a bad --start-spread-days" \
  bash -c "! '$GEN' --start-spread-days -1 >/dev/null 2>&1 && ! '$GEN' --start-spread-days x >/dev/null 2>&1"

check "time versions: 13-digit versions in the documents" grep -q '"v":17[0-9]\{11\},' "$TMP/time.out"

checks_finish ""
