#!/usr/bin/env bash
# scripts/bench-decode as docs/BENCHMARKS.md runs it, on a few lines and this
# build's binaries: one row per style with every number present, the decode
# a part of the whole process, and the styles' lines of different lengths.
set -euo pipefail

SRC=${AGG_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${AGG_BINARY_DIR:?set AGG_BINARY_DIR to the build directory}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/cli/checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

check "bench-decode exits 0" "$SRC/scripts/bench-decode" --count 300 --binary-dir "$BIN" >"$TMP/out.csv" 2>"$TMP/err"
cat "$TMP/err" >&2
check "a header and ten rows" test "$(wc -l <"$TMP/out.csv")" -eq 11
check "the header" grep -qx 'style,bytes_per_line,decode_instructions_per_line,decode_instructions_per_byte,process_instructions_per_line' \
  "$TMP/out.csv"
for s in ours reordered python uuid tabs crlf php jackson dotnet go; do
  check "$s: a row of numbers, the decode less than the process" \
    awk -F, -v s="$s" '$1 == s && $2 > 0 && $3 > 0 && $4 > 0 && $5 > $3 && ($4 - $3 / $2) ^ 2 < ($4 / 50) ^ 2 \
      { found = 1 } END { exit !found }' "$TMP/out.csv"
done
check "python's lines are longer than reordered's (its spaces)" \
  awk -F, '$1 == "reordered" { r = $2 } $1 == "python" { p = $2 } END { exit !(p > r && r > 0) }' "$TMP/out.csv"
check "crlf's lines are one byte longer than python's (the CR)" \
  awk -F, '$1 == "python" { p = $2 } $1 == "crlf" { c = $2 } END { exit !(c - p > 0.99 && c - p < 1.01) }' "$TMP/out.csv"
check "a bad count is refused" bash -c "! '$SRC/scripts/bench-decode' --count x --binary-dir '$BIN' >/dev/null 2>&1"

checks_finish "test_bench_decode: "
