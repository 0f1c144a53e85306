#!/usr/bin/env bash
# gen_commands --style writes the same commands in other shapes (key order,
# spacing, id form): each style's stream, with redeliveries and invalid lines,
# replays to the documents of the default style, its lines rejected with the
# same codes at the same line numbers; and each style is written as it says.
set -euo pipefail

AGG=${AGGREGATOR:?set AGGREGATOR to the aggregator binary}
BIN=${AGG_BINARY_DIR:?set AGG_BINARY_DIR to the build directory}
GEN=$BIN/gen_commands
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export LC_ALL=C

# shellcheck source=tests/cli/checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
norm() { sed -E 's/"updatedAt":"[^"]*"/"updatedAt":"X"/' "$1"; }
same() { diff <(norm "$1") <(norm "$2") >/dev/null; }
# uuid's command ids differ by design: the documents are compared without them
no_ids() { norm "$1" | sed -E 's/"c":"[^"]*"/"c":"X"/g'; }
same_but_ids() { diff <(no_ids "$1") <(no_ids "$2") >/dev/null; }
codes() { sed -E 's/^\{"line":([0-9]+),"code":"([a-z_0-9]+)".*/\1 \2/' "$1"; }
same_codes() { diff <(codes "$1") <(codes "$2") >/dev/null; }

common=(--seed 5 --tenants 3 --assignments 20 --students 12 --count 3000 --duplicate-rate 0.2 --invalid-rate 0.2
  --order shuffle)
all_styles=(ours reordered python uuid tabs crlf php jackson dotnet go)
for s in "${all_styles[@]}"; do
  "$GEN" "${common[@]}" --style "$s" >"$TMP/$s.jsonl" 2>/dev/null
  check "$s: replay exits 0" "$AGG" replay --input "$TMP/$s.jsonl" --output "$TMP/$s.out" --rejects "$TMP/$s.rej" \
    2>"$TMP/$s.err"
done
"$GEN" "${common[@]}" >"$TMP/default.jsonl" 2>/dev/null
check "ours is the default style" cmp -s "$TMP/default.jsonl" "$TMP/ours.jsonl"
check "ours: rejects seen" test -s "$TMP/ours.rej"
for s in reordered python uuid tabs crlf php jackson dotnet go; do
  check "$s: lines differ from ours" bash -c "! cmp -s '$TMP/$s.jsonl' '$TMP/ours.jsonl'"
  if [ "$s" = uuid ]; then
    check "$s: documents = ours but for the command ids" same_but_ids "$TMP/$s.out" "$TMP/ours.out"
    check "$s: documents hold UUID command ids" grep -Eq '"c":"[0-9a-f]{8}-[0-9a-f]{4}-4' "$TMP/$s.out"
  elif [ "$s" = php ] || [ "$s" = jackson ] || [ "$s" = dotnet ] || [ "$s" = go ]; then
    # their texts are others (cmdgen_texts): the same in all four, however escaped
    check "$s: documents = php's" same "$TMP/$s.out" "$TMP/php.out"
    check "$s: documents differ from ours by their texts only" \
      diff <(norm "$TMP/$s.out" | sed -E 's/"(title|feedback)":"([^"\\]|\\.)*"/"\1":"X"/g') \
        <(norm "$TMP/ours.out" | sed -E 's/"(title|feedback)":"([^"\\]|\\.)*"/"\1":"X"/g')
  else
    check "$s: documents = ours" same "$TMP/$s.out" "$TMP/ours.out"
  fi
  check "$s: the same lines rejected with the same codes" same_codes "$TMP/$s.rej" "$TMP/ours.rej"
done
first() { grep -m1 '"type":"grade.updated"\|"type": "grade.updated"' "$TMP/$1.jsonl"; }
check "ours: schema order, no spaces" \
  bash -c "grep -Eq '^\{\"id\":\"[^\"]+\",\"type\":\"[a-z.]+\",\"tenant\":' <<<'$(first ours)'"
check "reordered: id, tenant, assignment, version, ts, type, student, data" \
  bash -c "grep -Eq '^\{\"id\":\"[^\"]+\",\"tenant\":\"[^\"]+\",\"assignment\":\"[^\"]+\",\"version\":[0-9]+,\"ts\":\"[^\"]+\",\"type\":\"[a-z.]+\",\"student\":\"[^\"]+\",\"data\":\{' <<<'$(first reordered)'"
check "python: the reordered keys with \", \" and \": \"" \
  bash -c "grep -Eq '^\{\"id\": \"[^\"]+\", \"tenant\": \"[^\"]+\", \"assignment\": \"[^\"]+\", \"version\": [0-9]+, \"ts\": \"[^\"]+\", \"type\": \"[a-z.]+\", \"student\": \"[^\"]+\", \"data\": \{\"points\": ' <<<'$(first python)'"
check "uuid: keys sorted at both levels, a UUID command id" \
  bash -c "grep -Eq '^\{\"assignment\":\"[^\"]+\",\"data\":\{\"feedback\":[^,]+,\"points\":[^}]+\},\"id\":\"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\",\"student\":\"[^\"]+\",\"tenant\":\"[^\"]+\",\"ts\":\"[^\"]+\",\"type\":\"[a-z.]+\",\"version\":[0-9]+\}$' <<<'$(first uuid)'"
check "tabs: a tab after '{', around ':', and before each key" \
  bash -c "grep -q \$'^{\\t\"id\"\\t:\\t\"[^\"]*\",\\t\"tenant\"\\t:\\t' '$TMP/tabs.jsonl'"
check "crlf: python's lines, ended with CR LF" bash -c "cmp -s <(sed 's/\\r\$//' '$TMP/crlf.jsonl') '$TMP/python.jsonl' && grep -c \$'\\r\$' '$TMP/crlf.jsonl' >/dev/null"
check "php: \\/ and lowercase \\u escapes" bash -c "grep -q '\\\\/' '$TMP/php.jsonl' && grep -q '\\\\u00e9' '$TMP/php.jsonl'"
check "php: a surrogate pair past U+FFFF" grep -q '\\ud83d\\u' "$TMP/php.jsonl"
check "jackson: uppercase \\u escapes, no \\/" bash -c "grep -q '\\\\u00E9' '$TMP/jackson.jsonl' && ! grep -q '\\\\/' '$TMP/jackson.jsonl'"
check "dotnet: HTML's characters and quotes as \\u" bash -c "grep -q '\\\\u0026' '$TMP/dotnet.jsonl' && grep -q '\\\\u0022' '$TMP/dotnet.jsonl'"
check "go: HTML's characters as \\u, accents as UTF-8" bash -c "grep -q '\\\\u003c' '$TMP/go.jsonl' && grep -q \$'\\xc3\\xa9' '$TMP/go.jsonl'"
check "bad style refused" bash -c "! '$GEN' --style java >/dev/null 2>&1"

checks_finish "test_gen_styles: "
