#!/usr/bin/env bash
# aggregator replay's outputs are whole or absent (docs/CLI.md): --output and --rejects are written beside
# their target and renamed into place only when the replay succeeds. Every output path is checked before
# any input is read; a failed write (a file size limit, a full file system), --max-rejects, an
# interruption or a bad path leave an existing target byte for byte as it was, and no temporary file
# behind. --max-rejects N stops a replay once more than N commands were rejected, on one thread and on
# several. An interrupted replay says so and exits 1.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SRC=${AGG_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SAMPLES=$SRC/models/samples
export LC_ALL=C

D=$T/dir
mkdir "$D"
old() { printf 'the old %s\n' "$1" >"$D/$1"; cp "$D/$1" "$T/$1.was"; }
# kept NAME WHAT: the target NAME is as it was, byte for byte
kept() { cmp -s "$D/$1" "$T/$1.was" && ok || fail "$2: $1 changed: $(head -c 200 "$D/$1")"; }
# clean WHAT: no temporary file left in $D
clean() {
  local left
  left=$(find "$D" -name '.*.tmp-*' | head -3)
  [ -z "$left" ] && ok || fail "$1: temporary files left: $left"
}
# one_error WHAT REGEX: the only error line of stderr matches REGEX
one_error() {
  local n
  n=$(grep -c '"level":"error"' "$T/err")
  [ "$n" -eq 1 ] && grep '"level":"error"' "$T/err" | grep -Eq "$2" && ok || fail "$1: errors: $(cat "$T/err")"
}

# 1. Success: both in place, nothing beside them; an existing target's permissions stay.
old out.jsonl
old rej.jsonl
chmod 0640 "$D/out.jsonl"
run 0 replay --input "$SAMPLES/commands.jsonl" --output "$D/out.jsonl" --rejects "$D/rej.jsonl"
cmp -s "$D/rej.jsonl" "$SAMPLES/expected-rejects.jsonl" && ok || fail "success: rejects"
[ "$(wc -l <"$D/out.jsonl")" -eq 3 ] && ok || fail "success: output"
[ "$(stat -c %a "$D/out.jsonl")" = 640 ] && ok || fail "success: mode $(stat -c %a "$D/out.jsonl")"
clean success

# 2. A --rejects path that cannot be written: nothing read, the output as it was (it used to be emptied).
old out.jsonl
run 1 replay --input "$SAMPLES/commands.jsonl" --output "$D/out.jsonl" --rejects "$D/no/such/dir/rej.jsonl"
kept out.jsonl "unwritable rejects"
one_error "unwritable rejects" '"msg":"replay: cannot open","file":"[^"]*/no/such/dir/rej\.jsonl","error":"No such file or directory"'
grep -q 'line rejected\|summary' "$T/err" && fail "unwritable rejects: input read: $(cat "$T/err")"
clean "unwritable rejects"
# ... an output that is a directory, and one in a directory that takes no new file
old rej.jsonl
run 1 replay --input "$SAMPLES/commands.jsonl" --output "$D" --rejects "$D/rej.jsonl"
one_error "directory" '"error":"Is a directory"'
kept rej.jsonl "directory"
if [ "$(id -u)" != 0 ]; then # root writes anywhere
  mkdir "$T/ro" && chmod 0500 "$T/ro"
  run 1 replay --input "$SAMPLES/commands.jsonl" --output "$T/ro/out.jsonl"
  one_error "read-only directory" 'Permission denied'
fi

# 3. A write that fails half way (a file size limit of 1 KiB, the output being 2 KiB; SIGXFSZ ignored so
#    that the write fails with EFBIG): exit 1, the targets as they were, nothing left beside them.
old out.jsonl
old rej.jsonl
(
  trap '' XFSZ
  ulimit -f 1
  exec "$BIN" replay --input "$SAMPLES/commands.jsonl" --output "$D/out.jsonl" --rejects "$D/rej.jsonl"
) >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 1 ] && ok || fail "size limit: exit $rc: $(cat "$T/err")"
grep -q '"msg":"replay: cannot write","file":"[^"]*out\.jsonl","error":"File too large"' "$T/err" && ok ||
  fail "size limit: $(cat "$T/err")"
grep -q 'summary' "$T/err" && fail "size limit: a summary: $(cat "$T/err")"
kept out.jsonl "size limit"
kept rej.jsonl "size limit"
clean "size limit"

# ... and a file system that is full (a 64 KiB tmpfs, where one may be mounted)
if [ "$(id -u)" = 0 ] && mkdir "$T/small" && mount -t tmpfs -o size=64k tmpfs "$T/small" 2>/dev/null; then
  trap 'umount "$T/small" 2>/dev/null; rm -rf "$T"' EXIT
  printf 'the old output\n' >"$T/small/out.jsonl"
  for i in $(seq 2000); do cat "$SAMPLES/commands.jsonl"; done >"$T/many.jsonl" # 2,000 x the sample
  sed 's/"assignment":"/&'"x"'/' "$T/many.jsonl" | awk '{ sub(/"assignment":"x/, "\"assignment\":\"" NR "-"); print }' \
    >"$T/spread.jsonl" # one assignment per line: an output far past 64 KiB
  run 1 replay --input "$T/spread.jsonl" --output "$T/small/out.jsonl"
  grep -q '"error":"No space left on device"' "$T/err" && ok || fail "full: $(cat "$T/err")"
  [ "$(cat "$T/small/out.jsonl")" = "the old output" ] && ok || fail "full: the output changed"
  [ "$(find "$T/small" -name '.*.tmp-*' | wc -l)" -eq 0 ] && ok || fail "full: temporary files left"
  umount "$T/small"
else
  echo "note: no tmpfs mounted (not root, or no mount): the full file system case is not run" >&2
fi

# 4. --max-rejects N: the sample has 14 invalid lines (expected-rejects.jsonl). 13: exit 1, said, nothing
#    written; 14: exit 0. A file and standard input, one thread and three, alike.
for threads in 1 3; do
  for stdin in no yes; do
    old out.jsonl
    old rej.jsonl
    w="threads=$threads stdin=$stdin"
    in=("--input" "$SAMPLES/commands.jsonl")
    [ $stdin = yes ] && in=("--input" "-")
    "$BIN" replay "${in[@]}" --output "$D/out.jsonl" --rejects "$D/rej.jsonl" --max-rejects 13 \
      --set replay.threads=$threads <"$SAMPLES/commands.jsonl" >"$T/out" 2>"$T/err"
    rc=$?
    [ "$rc" -eq 1 ] && ok || fail "$w: --max-rejects 13: exit $rc: $(cat "$T/err")"
    one_error "$w: --max-rejects 13" '"msg":"replay: stopped: more commands rejected than --max-rejects allows","max_rejects":13,'
    grep -q 'summary' "$T/err" && fail "$w: --max-rejects 13: a summary: $(cat "$T/err")"
    kept out.jsonl "$w: --max-rejects 13"
    kept rej.jsonl "$w: --max-rejects 13"
    clean "$w: --max-rejects 13"
    "$BIN" replay "${in[@]}" --output "$D/out.jsonl" --rejects "$D/rej.jsonl" --max-rejects 14 \
      --set replay.threads=$threads <"$SAMPLES/commands.jsonl" >"$T/out" 2>"$T/err"
    rc=$?
    [ "$rc" -eq 0 ] && cmp -s "$D/rej.jsonl" "$SAMPLES/expected-rejects.jsonl" && ok ||
      fail "$w: --max-rejects 14: exit $rc: $(cat "$T/err")"
  done
done
# 0: no reject allowed; a clean stream passes, the first reject stops it; to standard output, documents
# already streamed stay (a stream cannot be taken back) but the exit says it failed.
bad_lines=$(sed -E 's/^\{"line":([0-9]+),.*/\1/' "$SAMPLES/expected-rejects.jsonl" | paste -sd' ')
awk -v bad=" $bad_lines " 'index(bad, " " NR " ") == 0' "$SAMPLES/commands.jsonl" >"$T/clean.jsonl"
run 0 replay --input "$T/clean.jsonl" --output "$D/o0.jsonl" --max-rejects 0
run 1 replay --input "$SAMPLES/commands.jsonl" --output "$D/o1.jsonl" --max-rejects 0
grep -q '"max_rejects":0,"line":6,"code":"invalid_json"' "$T/err" && ok || fail "max 0: $(cat "$T/err")"
[ -e "$D/o1.jsonl" ] && fail "max 0: an output was written"
run 1 replay --input "$SAMPLES/commands.jsonl" --output - --max-rejects 0
run 2 replay --input "$SAMPLES/commands.jsonl" --output - --max-rejects x
grep -q "^aggregator: replay: --max-rejects takes a count" "$T/err" && ok || fail "bad count: $(cat "$T/err")"
run 2 replay --input "$SAMPLES/commands.jsonl" --output - --max-rejects -1
run 2 verify --input "$SAMPLES/commands.jsonl" --max-rejects 1 # replay's only

# 5. Interrupted (SIGINT, SIGTERM) while it reads standard input that stays open: says so, exits 1, the
#    targets as they were, nothing left beside them.
for sig in INT TERM; do
  old out.jsonl
  old rej.jsonl
  rm -f "$T/fifo"
  mkfifo "$T/fifo"
  "$BIN" replay --input - --output "$D/out.jsonl" --rejects "$D/rej.jsonl" <"$T/fifo" >"$T/out" 2>"$T/err" &
  pid=$!
  exec 7>"$T/fifo" # the writer that never closes
  cat "$SAMPLES/commands.jsonl" >&7
  # the output files exist (opened before anything is read) once the first lines are read
  for _ in $(seq 300); do [ "$(find "$D" -name '.out.jsonl.tmp-*' | wc -l)" -eq 1 ] && break; sleep 0.1; done
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  exec 7>&-
  [ "$rc" -eq 1 ] && ok || fail "$sig: exit $rc: $(cat "$T/err")"
  grep -q '"level":"error","msg":"replay: interrupted","signal":'"$(kill -l "$sig")"'}' "$T/err" && ok ||
    fail "$sig: not said: $(cat "$T/err")"
  grep -q 'summary\|cannot read' "$T/err" && fail "$sig: $(cat "$T/err")"
  kept out.jsonl "$sig"
  kept rej.jsonl "$sig"
  clean "$sig"
done

finish test_replay_outputs
