#!/usr/bin/env bash
# The commands docs/BENCHMARKS.md tells a user to run, as the page writes them,
# on this build's binaries and small inputs:
# - every `scripts/bench ...` line takes its options and finds its binaries
#   (--dry-run: it builds, starts and measures nothing, and says what it would run);
# - scripts/bench --changes names its workloads and refuses one without its commands;
# - scripts/bench-replay-threads and scripts/bench-models run for real;
# - the page's callgrind block runs on 300 lines and names the decode;
# - the scripts that need the running stack (bench-distinct, bench-rebalance,
#   bench-poison-flood) answer --help; tests/integration/test_bench_scripts.py
#   runs them and scripts/bench's modes but --peer small against the stack.
# scripts/bench-decode has test_bench_decode.
set -euo pipefail

SRC=${AGG_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${AGG_BINARY_DIR:?set AGG_BINARY_DIR to the build directory}
PAGE="$SRC/docs/BENCHMARKS.md"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/cli/checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

# Every code span that starts with scripts/bench, one per line (a span may wrap
# across lines of the page); usage brackets ([bounded] [defaults]) are dropped.
python3 - "$PAGE" >"$TMP/commands" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
seen = []
for span in re.findall(r"`(scripts/bench[^`]*)`", text):
    cmd = re.sub(r"\s*\[[^]]*\]", "", " ".join(span.split()))
    if cmd not in seen:
        seen.append(cmd)
print("\n".join(seen))
EOF
check "the page names scripts/bench's modes" test "$(grep -c '^scripts/bench ' "$TMP/commands")" -ge 6
for s in bench-decode bench-replay-threads bench-models bench-distinct bench-rebalance bench-poison-flood; do
  check "the page names scripts/$s" grep -q "^scripts/$s\b" "$TMP/commands"
done

while read -r script args; do
  case "$script" in
  scripts/bench)
    # shellcheck disable=SC2086 # the page's words, split as a shell splits them
    if "$SRC/$script" $args --dry-run --binary-dir "$BIN" >"$TMP/dry" 2>&1; then ok=1; else ok=0; fi
    check "'$script $args' takes its options" test "$ok" -eq 1
    check "'$script $args' says what it would run" grep -q '^bench: would run [A-Za-z]' "$TMP/dry"
    check "'$script $args' finds its binaries" bash -c "! grep -E '^bench: missing (aggregator|gen_commands|kafka_tool|store_tool|consume_loop)' '$TMP/dry'"
    ;;
  scripts/bench-distinct | scripts/bench-rebalance | scripts/bench-poison-flood)
    check "'$script' answers --help" "$SRC/$script" --help >/dev/null
    ;;
  esac
done <"$TMP/commands"
check "an unknown option is refused, exit 2" bash -c "'$SRC/scripts/bench' --no-such-option --dry-run >/dev/null 2>&1; test \$? -eq 2"
"$SRC/scripts/bench" --ceiling --dry-run --binary-dir "$BIN" --out "$TMP/out" >/dev/null
check "--dry-run creates no results folder" test ! -e "$TMP/out"
check "the page names scripts/bench --changes" grep -q '^scripts/bench --changes' "$TMP/commands"
"$SRC/scripts/bench" --changes --changes-counts 40x1000x3,20x600 --dry-run --binary-dir "$BIN" >"$TMP/dry"
check "--changes --dry-run names its workloads" grep -qx 'bench: would run changes (40x1000x3,20x600, 2 rounds, latency)' "$TMP/dry"
check "--changes refuses a workload without its commands, exit 1" bash -c \
  "'$SRC/scripts/bench' --changes --changes-counts 40 --dry-run >/dev/null 2>&1; test \$? -eq 1"

# scripts/bench-replay-threads: one pair on a small file.
"$BIN/gen_commands" --seed 7 --count 2000 --assignments 200 --students 30 --duplicate-rate 0.2 --output "$TMP/F" 2>/dev/null
check "bench-replay-threads exits 0" "$SRC/scripts/bench-replay-threads" --pairs 1 --input "$TMP/F" --binary-dir "$BIN" \
  >"$TMP/threads" 2>"$TMP/err"
cat "$TMP/err" >&2
check "bench-replay-threads: its header" grep -qx 'pair,wall_s_1,cpu_s_1,wall_s_2,cpu_s_2,ratio' "$TMP/threads"
check "bench-replay-threads: one pair with a ratio" awk -F, '$1 == 1 && $6 > 0 { found = 1 } END { exit !found }' "$TMP/threads"
check "bench-replay-threads: the medians" grep -Eq '^median wall: .* median ratio [0-9.]+$' "$TMP/threads"

# scripts/bench-models: a small stream.
check "bench-models exits 0" "$SRC/scripts/bench-models" --binary-dir "$BIN" --commands 2000 --assignments 100 \
  >"$TMP/models" 2>"$TMP/err"
cat "$TMP/err" >&2
check "bench-models: rates and memory per aggregate" grep -Eq '^RESULT apply_cps=[0-9]+ merge_ns=[0-9]+ rss=[0-9]+ mem=[0-9]+' \
  "$TMP/models"

# The callgrind block of "Instructions per command", on 300 commands of this build.
# Callgrind cannot run a binary built with a sanitizer (ASan insists on coming first).
if ldd "$BIN/aggregator" | grep -q 'lib[at]san'; then
  echo "test_bench_commands: the callgrind block is skipped in a sanitizer build"
else
  awk '/^## Instructions per command/ { s = 1 } s && /^```sh/ { b = 1; next } b && /^```/ { exit } b' "$PAGE" >"$TMP/block"
  check "the page has the callgrind block" grep -q '^valgrind --tool=callgrind' "$TMP/block"
  sed -e "s|build-bench/|$BIN/|g" -e 's/--count 200000/--count 300/' "$TMP/block" >"$TMP/block.sh"
  check "the callgrind block runs" bash -c "cd '$TMP' && bash -e block.sh >annotate.txt 2>valgrind.txt"
  check "it counts the decode, inclusive" grep -q 'model_command_decode' "$TMP/annotate.txt"
fi

checks_finish "test_bench_commands: "
