#!/usr/bin/env bash
# aggregator replay --input/--output/--rejects (docs/CLI.md) on the
# sample stream in models/samples: documents, rejects, summary line, exit
# statuses, standard streams, line endings, limits from --set and -c.
set -euo pipefail

AGG=${AGGREGATOR:?set AGGREGATOR to the aggregator binary}
SRC=${AGG_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SAMPLES=$SRC/models/samples
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export LC_ALL=C

fails=0
passes=0
ok() { passes=$((passes + 1)); }
fail() {
  echo "FAIL: $*" >&2
  fails=$((fails + 1))
}
# normalize FILE: updatedAt is the time of the write, the only field that varies
norm() { sed -E 's/"updatedAt":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"/"updatedAt":"T"/' "$1"; }
same_docs() { # same_docs GOT WANT WHAT
  if diff <(norm "$1") <(norm "$2") >"$TMP/diff"; then ok; else
    fail "$3: documents differ"
    head -c 2000 "$TMP/diff" >&2
  fi
}
# run NAME ARGS...: runs the binary, keeps stdout/stderr/status in $TMP/NAME.{out,err,rc}
run() {
  local name=$1
  shift
  set +e
  "$AGG" replay "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
  echo $? >"$TMP/$name.rc"
  set -e
}
expect_rc() { # expect_rc NAME RC
  local got
  got=$(cat "$TMP/$1.rc")
  if [ "$got" = "$2" ]; then ok; else fail "$1: exit $got, expected $2 ($(head -c 300 "$TMP/$1.err"))"; fi
}
# the lines a replay without --rejects adds about rejected lines (checked in 16)
hints() { grep -Ev '^aggregator: replay: (line [0-9]+ rejected: |[0-9]+ lines? rejected; --rejects FILE )' "$1" || true; }
expect_err() { # expect_err NAME REGEX: stderr, but for those, is one line matching REGEX
  hints "$TMP/$1.err" >"$TMP/$1.err1"
  if [ "$(wc -l <"$TMP/$1.err1")" -eq 1 ] && grep -Eq "$2" "$TMP/$1.err1"; then ok; else
    fail "$1: stderr '$(head -c 300 "$TMP/$1.err")' does not match /$2/"
  fi
}
summary_re() { echo "^replay: read=$1 applied=$2 stale=$3 rejected=$4 aggregates=$5 seconds=[0-9]+\.[0-9]{3}\$"; }

# 1. the sample stream, files
run sample --input "$SAMPLES/commands.jsonl" --output "$TMP/out.jsonl" --rejects "$TMP/rejects.jsonl"
expect_rc sample 0
expect_err sample "$(summary_re 39 22 3 14 3)"
same_docs "$TMP/out.jsonl" "$SAMPLES/expected.jsonl" sample
if cmp -s "$TMP/rejects.jsonl" "$SAMPLES/expected-rejects.jsonl"; then ok; else
  fail "sample: rejects differ"
  diff "$TMP/rejects.jsonl" "$SAMPLES/expected-rejects.jsonl" >&2 || true
fi
[ -s "$TMP/sample.out" ] && fail "sample: wrote to stdout" || ok
# every document carries the same, well-formed, current updatedAt and rev 1
stamps=$(grep -oE '"rev":1,"updatedAt":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"}$' "$TMP/out.jsonl" | sort -u)
if [ "$(echo "$stamps" | wc -l)" -eq 1 ] && [ "$(wc -l <"$TMP/out.jsonl")" -eq 3 ]; then ok; else fail "sample: rev/updatedAt: $stamps"; fi
year=$(echo "$stamps" | sed -E 's/.*"updatedAt":"([0-9]{4}).*/\1/')
[ "$year" = "$(date -u +%Y)" ] || [ "$year" = "$(date -u -d '1 hour ago' +%Y)" ] && ok || fail "sample: updatedAt year $year"
# every output line is JSON; sorted by _id
if command -v jq >/dev/null; then
  jq -e . "$TMP/out.jsonl" >/dev/null && ok || fail "sample: output is not JSON lines"
  jq -e 'keys_unsorted == ["line","code","detail"]' "$TMP/rejects.jsonl" >/dev/null && ok || fail "rejects: shape"
fi
if [ "$(cut -d'"' -f4 "$TMP/out.jsonl")" = "$(cut -d'"' -f4 "$TMP/out.jsonl" | sort)" ]; then ok; else fail "sample: not sorted by _id"; fi

# 2. standard input and output
run stdio --input - --output - <"$SAMPLES/commands.jsonl"
expect_rc stdio 0
expect_err stdio "$(summary_re 39 22 3 14 3)"
same_docs "$TMP/stdio.out" "$SAMPLES/expected.jsonl" stdio
# rejects to stdout, documents to a file
run rejstdout --input - --output "$TMP/o2.jsonl" --rejects - <"$SAMPLES/commands.jsonl"
expect_rc rejstdout 0
cmp -s "$TMP/rejstdout.out" "$SAMPLES/expected-rejects.jsonl" && ok || fail "rejects to stdout differ"

# 3. without --rejects: counted, not written
run norej --input "$SAMPLES/commands.jsonl" --output "$TMP/o3.jsonl"
expect_rc norej 0
expect_err norej "$(summary_re 39 22 3 14 3)"
same_docs "$TMP/o3.jsonl" "$SAMPLES/expected.jsonl" norej

# 4. line endings: no final newline; CRLF ("\r" is JSON whitespace)
head -c -1 "$SAMPLES/commands.jsonl" >"$TMP/nofinal.jsonl"
run nofinal --input "$TMP/nofinal.jsonl" --output "$TMP/o4.jsonl" --rejects "$TMP/r4.jsonl"
expect_rc nofinal 0
expect_err nofinal "$(summary_re 39 22 3 14 3)"
same_docs "$TMP/o4.jsonl" "$SAMPLES/expected.jsonl" nofinal
sed 's/$/\r/' "$SAMPLES/commands.jsonl" >"$TMP/crlf.jsonl"
run crlf --input "$TMP/crlf.jsonl" --output "$TMP/o5.jsonl" --rejects "$TMP/r5.jsonl"
expect_rc crlf 0
expect_err crlf "$(summary_re 39 22 3 14 3)"
same_docs "$TMP/o5.jsonl" "$SAMPLES/expected.jsonl" crlf
if [ "$(cut -d, -f1-2 "$TMP/r5.jsonl")" = "$(cut -d, -f1-2 "$SAMPLES/expected-rejects.jsonl")" ]; then ok; else
  fail "crlf: reject lines/codes differ"
fi
# an empty line and a last line of its own: "a\n\nb" is 3 lines
printf '\n\n' >"$TMP/blank.jsonl"
run blank --input "$TMP/blank.jsonl" --output "$TMP/o6.jsonl" --rejects "$TMP/r6.jsonl"
expect_rc blank 0
expect_err blank "$(summary_re 2 0 0 2 0)"
grep -c '"code":"invalid_json"' "$TMP/r6.jsonl" | grep -qx 2 && ok || fail "blank: rejects $(cat "$TMP/r6.jsonl")"
[ -s "$TMP/o6.jsonl" ] && fail "blank: output not empty" || ok
: >"$TMP/empty.jsonl"
run empty --input "$TMP/empty.jsonl" --output "$TMP/o7.jsonl"
expect_rc empty 0
expect_err empty "$(summary_re 0 0 0 0 0)"

# 5. order and duplicates do not matter: shuffled, repeated
{ cat "$SAMPLES/commands.jsonl"; tac "$SAMPLES/commands.jsonl"; } | shuf --random-source=<(yes) >"$TMP/shuffled.jsonl"
run shuffled --input "$TMP/shuffled.jsonl" --output "$TMP/o8.jsonl"
expect_rc shuffled 0
expect_err shuffled "$(summary_re 78 '[0-9]+' '[0-9]+' 28 3)"
same_docs "$TMP/o8.jsonl" "$SAMPLES/expected.jsonl" shuffled

# 6. limits.max_command_bytes from --set and from -c: longer lines are too_large
long=$(awk 'length($0) > 256 { n++ } END { print n + 0 }' "$SAMPLES/commands.jsonl")
[ "$long" -gt 0 ] && ok || fail "sample has no line over 256 bytes"
run limit --input "$SAMPLES/commands.jsonl" --output "$TMP/o9.jsonl" --rejects "$TMP/r9.jsonl" \
  --set limits.max_command_bytes=256
expect_rc limit 0
awk 'length($0) > 256 { print NR }' "$SAMPLES/commands.jsonl" >"$TMP/long.lines"
grep '"code":"too_large"' "$TMP/r9.jsonl" | sed -E 's/^\{"line":([0-9]+),.*/\1/' >"$TMP/tl.lines"
cmp -s "$TMP/long.lines" "$TMP/tl.lines" && ok || fail "limit: too_large lines $(tr '\n' ' ' <"$TMP/tl.lines") != $(tr '\n' ' ' <"$TMP/long.lines")"
printf '[limits]\nmax_command_bytes = 256\n' >"$TMP/agg.ini"
run limitfile -c "$TMP/agg.ini" --input "$SAMPLES/commands.jsonl" --output "$TMP/o10.jsonl" --rejects "$TMP/r10.jsonl"
expect_rc limitfile 0
cmp -s "$TMP/r9.jsonl" "$TMP/r10.jsonl" && ok || fail "limit from -c differs from --set"
run badset --input "$SAMPLES/commands.jsonl" --output "$TMP/o11.jsonl" --set limits.max_command_bytes=1
expect_rc badset 2
expect_err badset 'max_command_bytes'

# 7. a line longer than any fixed buffer (3 MB of unknown field) is one command
{
  printf '{"id":"big-1","type":"roster.assigned","tenant":"t1","assignment":"a1","student":"s1","version":1,'
  printf '"ts":"2026-09-01T08:00:00Z","padding":"'
  head -c 3000000 /dev/zero | tr '\0' x
  printf '"}\n'
  printf '{"id":"big-2","type":"roster.unassigned","tenant":"t1","assignment":"a1","student":"s2","version":1,"ts":"2026-09-01T08:00:00Z"}\n'
} >"$TMP/big.jsonl"
run big --input "$TMP/big.jsonl" --output "$TMP/o12.jsonl" --set limits.max_command_bytes=4194304
expect_rc big 0
expect_err big "$(summary_re 2 2 0 0 1)"
grep -q '"s1":{"member":{"assigned":true,"v":1,"c":"big-1"}}' "$TMP/o12.jsonl" && ok || fail "big: document"
run bigdefault --input "$TMP/big.jsonl" --output "$TMP/o13.jsonl" --rejects "$TMP/r13.jsonl"
expect_rc bigdefault 0
grep -q '^{"line":1,"code":"too_large"' "$TMP/r13.jsonl" && ok || fail "big over the default limit is not too_large"

# 8. usage errors (2) and I/O failures (1); modes that need a broker or a store are tested in
# tests/integration
run rejnoinput --output - --rejects "$TMP/r.jsonl"
expect_rc rejnoinput 2
expect_err rejnoinput 'rejects'
run frominput --input "$SAMPLES/commands.jsonl" --output - --from beginning
expect_rc frominput 2
# A bound that is neither beginning/end nor an RFC 3339 time: a usage error,
# before any broker is contacted (none is configured here).
run badfrom --output - --from yesterday
expect_rc badfrom 2
expect_err badfrom 'RFC 3339'
run baduntil --output - --until 2026-13-01T00:00:00Z
expect_rc baduntil 2
cp "$SAMPLES/commands.jsonl" "$TMP/inplace.jsonl"
run inplace --input "$TMP/inplace.jsonl" --output "$TMP/inplace.jsonl"
expect_rc inplace 2
cmp -s "$TMP/inplace.jsonl" "$SAMPLES/commands.jsonl" && ok || fail "inplace: input was modified"
run bothstdout --input "$SAMPLES/commands.jsonl" --output - --rejects -
expect_rc bothstdout 2
run samefile --input "$SAMPLES/commands.jsonl" --output "$TMP/same.jsonl" --rejects "$TMP/same.jsonl"
expect_rc samefile 2
run devnull --input "$SAMPLES/commands.jsonl" --output /dev/null --rejects /dev/null
expect_rc devnull 0
run noinput --input "$TMP/does-not-exist.jsonl" --output "$TMP/o14.jsonl"
expect_rc noinput 1
expect_err noinput 'does-not-exist\.jsonl'
run nooutput --input "$SAMPLES/commands.jsonl" --output "$TMP/no/such/dir/out.jsonl"
expect_rc nooutput 1
expect_err nooutput 'no/such/dir/out\.jsonl'
if [ -w /dev/full ]; then
  run full --input "$SAMPLES/commands.jsonl" --output /dev/full
  expect_rc full 1
  expect_err full '/dev/full'
fi

# 15. --input without --output and without a store: a usage error, nothing retried
run nostore --input "$SAMPLES/commands.jsonl"
expect_rc nostore 2
expect_err nostore 'no store is configured \(store\.uri\).*--output'

# 16. without --rejects the first rejected lines are shown, then how to see them all
run hint --input "$SAMPLES/commands.jsonl" --output /dev/null
expect_rc hint 0
if [ "$(grep -c '^aggregator: replay: line [0-9]* rejected: ' "$TMP/hint.err")" = 3 ] &&
  grep -q '^aggregator: replay: line 6 rejected: invalid_json: ' "$TMP/hint.err" &&
  grep -Eq "$(summary_re 39 22 3 14 3)" "$TMP/hint.err" &&
  [ "$(tail -n 1 "$TMP/hint.err")" = "aggregator: replay: 14 lines rejected; --rejects FILE writes each with its reason" ]; then ok; else
  fail "hint: stderr was: $(head -c 800 "$TMP/hint.err")"
fi
# a stream with no invalid line: the summary alone
bad_lines=$(sed -E 's/^\{"line":([0-9]+),.*/\1/' "$SAMPLES/expected-rejects.jsonl" | paste -sd' ')
awk -v bad=" $bad_lines " 'index(bad, " " NR " ") == 0' "$SAMPLES/commands.jsonl" >"$TMP/clean.jsonl"
run nohint --input "$TMP/clean.jsonl" --output /dev/null
expect_rc nohint 0
expect_err nohint "$(summary_re 25 22 3 0 3)"

# 17. a byte order mark before the first line is skipped, not a rejected line
printf '\357\273\277' >"$TMP/bom.jsonl"
cat "$SAMPLES/commands.jsonl" >>"$TMP/bom.jsonl"
run bom --input "$TMP/bom.jsonl" --output "$TMP/bom.out" --rejects "$TMP/bom.rej"
expect_rc bom 0
expect_err bom "$(summary_re 39 22 3 14 3)"
cmp -s "$TMP/bom.rej" "$SAMPLES/expected-rejects.jsonl" && ok || fail "bom: rejects differ from the sample's"
same_docs "$TMP/bom.out" "$SAMPLES/expected.jsonl" bom

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
