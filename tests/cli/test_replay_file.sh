#!/usr/bin/env bash
# aggregator replay --input/--output/--rejects (docs/CLI.md) on the
# sample stream in models/samples: documents, rejects, summary line, exit
# statuses, standard streams, line endings, limits from --set and -c. Its stderr is in the default
# log.format (json): one JSON object per line; section 18 checks the text format.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
SRC=${AGG_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SAMPLES=$SRC/models/samples
export LC_ALL=C

# normalize FILE: updatedAt is the time of the write, the only field that varies
norm() { sed -E 's/"updatedAt":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"/"updatedAt":"T"/' "$1"; }
same_docs() { # same_docs GOT WANT WHAT
  if diff <(norm "$1") <(norm "$2") >"$T/diff"; then ok; else
    fail "$3: documents differ"
    head -c 2000 "$T/diff" >&2
  fi
}
# replay NAME ARGS...: runs `replay ARGS`, keeps stdout/stderr/status in $T/NAME.{out,err,rc}
replay() {
  local name=$1
  shift
  set +e
  "$BIN" replay "$@" >"$T/$name.out" 2>"$T/$name.err"
  echo $? >"$T/$name.rc"
  set -e
}
expect_rc() { # expect_rc NAME RC
  local got
  got=$(cat "$T/$1.rc")
  if [ "$got" = "$2" ]; then ok; else fail "$1: exit $got, expected $2 ($(head -c 300 "$T/$1.err"))"; fi
}
# the lines a replay without --rejects adds about rejected lines (checked in 16)
hints() { grep -Ev '"msg":"replay: (line rejected|lines rejected; --rejects FILE writes each with its reason)"' "$1" || true; }
expect_err() { # expect_err NAME REGEX: stderr, but for those, is one line matching REGEX
  hints "$T/$1.err" >"$T/$1.err1"
  if [ "$(wc -l <"$T/$1.err1")" -eq 1 ] && grep -Eq "$2" "$T/$1.err1"; then ok; else
    fail "$1: stderr '$(head -c 300 "$T/$1.err")' does not match /$2/"
  fi
}
# the summary, a log line: {"ts":...,"level":"info","msg":"replay: summary","read":N,...,"seconds":S}
summary_re() {
  echo "^\\{\"ts\":\"[0-9T:.Z-]+\",\"level\":\"info\",\"msg\":\"replay: summary\",\"read\":$1,\"applied\":$2,\"stale\":$3,\"rejected\":$4,\"aggregates\":$5,\"seconds\":[0-9.e-]+\\}\$"
}
summary_text_re() { echo "^replay: read=$1 applied=$2 stale=$3 rejected=$4 aggregates=$5 seconds=[0-9]+\.[0-9]{3}\$"; }

# 1. the sample stream, files
replay sample --input "$SAMPLES/commands.jsonl" --output "$T/out.jsonl" --rejects "$T/rejects.jsonl"
expect_rc sample 0
expect_err sample "$(summary_re 39 22 3 14 3)"
same_docs "$T/out.jsonl" "$SAMPLES/expected.jsonl" sample
if cmp -s "$T/rejects.jsonl" "$SAMPLES/expected-rejects.jsonl"; then ok; else
  fail "sample: rejects differ"
  diff "$T/rejects.jsonl" "$SAMPLES/expected-rejects.jsonl" >&2 || true
fi
[ -s "$T/sample.out" ] && fail "sample: wrote to stdout" || ok
# every document carries the same, well-formed, current updatedAt and rev 1
stamps=$(grep -oE '"rev":1,"updatedAt":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"}$' "$T/out.jsonl" | sort -u)
if [ "$(echo "$stamps" | wc -l)" -eq 1 ] && [ "$(wc -l <"$T/out.jsonl")" -eq 3 ]; then ok; else fail "sample: rev/updatedAt: $stamps"; fi
year=$(echo "$stamps" | sed -E 's/.*"updatedAt":"([0-9]{4}).*/\1/')
[ "$year" = "$(date -u +%Y)" ] || [ "$year" = "$(date -u -d '1 hour ago' +%Y)" ] && ok || fail "sample: updatedAt year $year"
# every output line is JSON; sorted by _id
if command -v jq >/dev/null; then
  jq -e . "$T/out.jsonl" >/dev/null && ok || fail "sample: output is not JSON lines"
  jq -e 'keys_unsorted == ["line","code","detail"]' "$T/rejects.jsonl" >/dev/null && ok || fail "rejects: shape"
fi
if [ "$(cut -d'"' -f4 "$T/out.jsonl")" = "$(cut -d'"' -f4 "$T/out.jsonl" | sort)" ]; then ok; else fail "sample: not sorted by _id"; fi

# 2. standard input and output
replay stdio --input - --output - <"$SAMPLES/commands.jsonl"
expect_rc stdio 0
expect_err stdio "$(summary_re 39 22 3 14 3)"
same_docs "$T/stdio.out" "$SAMPLES/expected.jsonl" stdio
# rejects to stdout, documents to a file
replay rejstdout --input - --output "$T/o2.jsonl" --rejects - <"$SAMPLES/commands.jsonl"
expect_rc rejstdout 0
cmp -s "$T/rejstdout.out" "$SAMPLES/expected-rejects.jsonl" && ok || fail "rejects to stdout differ"

# 3. without --rejects: counted, not written
replay norej --input "$SAMPLES/commands.jsonl" --output "$T/o3.jsonl"
expect_rc norej 0
expect_err norej "$(summary_re 39 22 3 14 3)"
same_docs "$T/o3.jsonl" "$SAMPLES/expected.jsonl" norej

# 4. line endings: no final newline; CRLF ("\r" is JSON whitespace)
head -c -1 "$SAMPLES/commands.jsonl" >"$T/nofinal.jsonl"
replay nofinal --input "$T/nofinal.jsonl" --output "$T/o4.jsonl" --rejects "$T/r4.jsonl"
expect_rc nofinal 0
expect_err nofinal "$(summary_re 39 22 3 14 3)"
same_docs "$T/o4.jsonl" "$SAMPLES/expected.jsonl" nofinal
sed 's/$/\r/' "$SAMPLES/commands.jsonl" >"$T/crlf.jsonl"
replay crlf --input "$T/crlf.jsonl" --output "$T/o5.jsonl" --rejects "$T/r5.jsonl"
expect_rc crlf 0
expect_err crlf "$(summary_re 39 22 3 14 3)"
same_docs "$T/o5.jsonl" "$SAMPLES/expected.jsonl" crlf
if [ "$(cut -d, -f1-2 "$T/r5.jsonl")" = "$(cut -d, -f1-2 "$SAMPLES/expected-rejects.jsonl")" ]; then ok; else
  fail "crlf: reject lines/codes differ"
fi
# an empty line and a last line of its own: "a\n\nb" is 3 lines
printf '\n\n' >"$T/blank.jsonl"
replay blank --input "$T/blank.jsonl" --output "$T/o6.jsonl" --rejects "$T/r6.jsonl"
expect_rc blank 0
expect_err blank "$(summary_re 2 0 0 2 0)"
grep -c '"code":"invalid_json"' "$T/r6.jsonl" | grep -qx 2 && ok || fail "blank: rejects $(cat "$T/r6.jsonl")"
[ -s "$T/o6.jsonl" ] && fail "blank: output not empty" || ok
: >"$T/empty.jsonl"
replay empty --input "$T/empty.jsonl" --output "$T/o7.jsonl"
expect_rc empty 0
expect_err empty "$(summary_re 0 0 0 0 0)"

# 5. order and duplicates do not matter: shuffled, repeated
{ cat "$SAMPLES/commands.jsonl"; tac "$SAMPLES/commands.jsonl"; } | shuf --random-source=<(yes) >"$T/shuffled.jsonl"
replay shuffled --input "$T/shuffled.jsonl" --output "$T/o8.jsonl"
expect_rc shuffled 0
expect_err shuffled "$(summary_re 78 '[0-9]+' '[0-9]+' 28 3)"
same_docs "$T/o8.jsonl" "$SAMPLES/expected.jsonl" shuffled

# 6. limits.max_command_bytes from --set and from -c: longer lines are too_large
long=$(awk 'length($0) > 256 { n++ } END { print n + 0 }' "$SAMPLES/commands.jsonl")
[ "$long" -gt 0 ] && ok || fail "sample has no line over 256 bytes"
replay limit --input "$SAMPLES/commands.jsonl" --output "$T/o9.jsonl" --rejects "$T/r9.jsonl" \
  --set limits.max_command_bytes=256
expect_rc limit 0
awk 'length($0) > 256 { print NR }' "$SAMPLES/commands.jsonl" >"$T/long.lines"
grep '"code":"too_large"' "$T/r9.jsonl" | sed -E 's/^\{"line":([0-9]+),.*/\1/' >"$T/tl.lines"
cmp -s "$T/long.lines" "$T/tl.lines" && ok || fail "limit: too_large lines $(tr '\n' ' ' <"$T/tl.lines") != $(tr '\n' ' ' <"$T/long.lines")"
printf '[limits]\nmax_command_bytes = 256\n' >"$T/agg.ini"
replay limitfile -c "$T/agg.ini" --input "$SAMPLES/commands.jsonl" --output "$T/o10.jsonl" --rejects "$T/r10.jsonl"
expect_rc limitfile 0
cmp -s "$T/r9.jsonl" "$T/r10.jsonl" && ok || fail "limit from -c differs from --set"
replay badset --input "$SAMPLES/commands.jsonl" --output "$T/o11.jsonl" --set limits.max_command_bytes=1
expect_rc badset 2
expect_err badset 'max_command_bytes'

# 7. a line longer than any fixed buffer (3 MB of unknown field) is one command
{
  printf '{"id":"big-1","type":"roster.assigned","tenant":"t1","assignment":"a1","student":"s1","version":1,'
  printf '"ts":"2026-09-01T08:00:00Z","padding":"'
  head -c 3000000 /dev/zero | tr '\0' x
  printf '"}\n'
  printf '{"id":"big-2","type":"roster.unassigned","tenant":"t1","assignment":"a1","student":"s2","version":1,"ts":"2026-09-01T08:00:00Z"}\n'
} >"$T/big.jsonl"
replay big --input "$T/big.jsonl" --output "$T/o12.jsonl" --set limits.max_command_bytes=4194304
expect_rc big 0
expect_err big "$(summary_re 2 2 0 0 1)"
grep -q '"s1":{"member":{"assigned":true,"v":1,"c":"big-1"}}' "$T/o12.jsonl" && ok || fail "big: document"
replay bigdefault --input "$T/big.jsonl" --output "$T/o13.jsonl" --rejects "$T/r13.jsonl"
expect_rc bigdefault 0
grep -q '^{"line":1,"code":"too_large"' "$T/r13.jsonl" && ok || fail "big over the default limit is not too_large"

# 8. usage errors (2) and I/O failures (1); modes that need a broker or a store are tested in
# tests/integration
replay rejnoinput --output - --rejects "$T/r.jsonl"
expect_rc rejnoinput 2
expect_err rejnoinput 'rejects'
replay frominput --input "$SAMPLES/commands.jsonl" --output - --from beginning
expect_rc frominput 2
# A bound that is neither beginning/end nor an RFC 3339 time: a usage error,
# before any broker is contacted (none is configured here).
replay badfrom --output - --from yesterday
expect_rc badfrom 2
expect_err badfrom 'RFC 3339'
replay baduntil --output - --until 2026-13-01T00:00:00Z
expect_rc baduntil 2
cp "$SAMPLES/commands.jsonl" "$T/inplace.jsonl"
replay inplace --input "$T/inplace.jsonl" --output "$T/inplace.jsonl"
expect_rc inplace 2
cmp -s "$T/inplace.jsonl" "$SAMPLES/commands.jsonl" && ok || fail "inplace: input was modified"
replay bothstdout --input "$SAMPLES/commands.jsonl" --output - --rejects -
expect_rc bothstdout 2
replay samefile --input "$SAMPLES/commands.jsonl" --output "$T/same.jsonl" --rejects "$T/same.jsonl"
expect_rc samefile 2
replay devnull --input "$SAMPLES/commands.jsonl" --output /dev/null --rejects /dev/null
expect_rc devnull 0
replay noinput --input "$T/does-not-exist.jsonl" --output "$T/o14.jsonl"
expect_rc noinput 1
expect_err noinput 'does-not-exist\.jsonl'
replay nooutput --input "$SAMPLES/commands.jsonl" --output "$T/no/such/dir/out.jsonl"
expect_rc nooutput 1
expect_err nooutput 'no/such/dir/out\.jsonl'
if [ -w /dev/full ]; then
  replay full --input "$SAMPLES/commands.jsonl" --output /dev/full
  expect_rc full 1
  expect_err full '/dev/full'
fi

# 15. --input without --output and without a store: a usage error, nothing retried
replay nostore --input "$SAMPLES/commands.jsonl"
expect_rc nostore 2
expect_err nostore 'no store is configured \(store\.uri\).*--output'

# 16. without --rejects the first rejected lines are shown, then how to see them all
replay hint --input "$SAMPLES/commands.jsonl" --output /dev/null
expect_rc hint 0
if [ "$(grep -c '"level":"warn","msg":"replay: line rejected","line":[0-9]*,' "$T/hint.err")" = 3 ] &&
  grep -q '"msg":"replay: line rejected","line":6,"code":"invalid_json","detail":"' "$T/hint.err" &&
  grep -Eq "$(summary_re 39 22 3 14 3)" "$T/hint.err" &&
  tail -n 1 "$T/hint.err" | grep -q '"level":"warn","msg":"replay: lines rejected; --rejects FILE writes each with its reason","rejected":14}$'; then ok; else
  fail "hint: stderr was: $(head -c 800 "$T/hint.err")"
fi
# a stream with no invalid line: the summary alone
bad_lines=$(sed -E 's/^\{"line":([0-9]+),.*/\1/' "$SAMPLES/expected-rejects.jsonl" | paste -sd' ')
awk -v bad=" $bad_lines " 'index(bad, " " NR " ") == 0' "$SAMPLES/commands.jsonl" >"$T/clean.jsonl"
replay nohint --input "$T/clean.jsonl" --output /dev/null
expect_rc nohint 0
expect_err nohint "$(summary_re 25 22 3 0 3)"

# 17. a byte order mark before the first line is skipped, not a rejected line
printf '\357\273\277' >"$T/bom.jsonl"
cat "$SAMPLES/commands.jsonl" >>"$T/bom.jsonl"
replay bom --input "$T/bom.jsonl" --output "$T/bom.out" --rejects "$T/bom.rej"
expect_rc bom 0
expect_err bom "$(summary_re 39 22 3 14 3)"
cmp -s "$T/bom.rej" "$SAMPLES/expected-rejects.jsonl" && ok || fail "bom: rejects differ from the sample's"
same_docs "$T/bom.out" "$SAMPLES/expected.jsonl" bom

# 18. log.format: json (the default) makes every stderr line a JSON object; text keeps the summary the
#     plain line the README and docs/CLI.md show, and the hints text log lines.
if command -v jq >/dev/null; then
  jq -e 'type == "object" and has("ts") and has("level") and has("msg")' "$T/hint.err" >/dev/null && ok ||
    fail "json: a stderr line is not a log object: $(cat "$T/hint.err")"
fi
replay text --input "$SAMPLES/commands.jsonl" --output "$T/text.out" --set log.format=text
expect_rc text 0
grep -v ' warn  replay: line rejected line=' "$T/text.err" | grep -v ' warn  replay: lines rejected; ' >"$T/text.err1"
if [ "$(wc -l <"$T/text.err1")" -eq 1 ] && grep -Eq "$(summary_text_re 39 22 3 14 3)" "$T/text.err1" &&
  [ "$(grep -c ' warn  replay: line rejected line=' "$T/text.err")" = 3 ]; then ok; else
  fail "text: stderr was: $(cat "$T/text.err")"
fi

finish test_replay_file
