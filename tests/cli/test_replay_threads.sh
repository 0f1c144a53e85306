#!/usr/bin/env bash
# replay.threads: decode and merge on several threads give the output of
# one thread byte for byte, on a shuffled stream with redeliveries, invalid
# lines and commands rejected document_too_large (two assignments pass the
# store's limit, so at least two shards reject): the documents (updatedAt
# aside: it is the time of the write), the rejects file, the summary, the
# first rejected lines shown on stderr without --rejects, and standard input.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
GEN=${AGG_BINARY_DIR:?set AGG_BINARY_DIR to the build directory}/gen_commands
export LC_ALL=C

"$GEN" --seed 11 --tenants 3 --assignments 300 --students 20 --count 30000 --order shuffle \
  --duplicate-rate 0.3 --invalid-rate 0.05 >"$T/gen.jsonl" 2>/dev/null
# 4,200 grades of 4,000 bytes of feedback for each of t0/big-a and t0/big-b
# (about 17 MB of document each: the last few hundred of each are
# rejected), spread through the generated lines at fixed places.
python3 - "$T/gen.jsonl" "$T/in.jsonl" <<'PY' || { echo "FAIL: cannot build the stream" >&2; exit 1; }
import json, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")[:-1]  # invalid lines may hold invalid UTF-8
def grade(i, assignment):
    return json.dumps({"id": "g%d" % i, "type": "grade.updated", "tenant": "t0", "assignment": assignment,
                       "ts": "2026-09-01T08:00:00Z", "student": "s%d" % i, "version": 1,
                       "data": {"points": 1, "feedback": "f" * 4000}}, separators=(",", ":")).encode()
big = [grade(i, "big-" + "ab"[i % 2]) for i in range(8400)]
out, step = [], len(lines) // len(big) + 1
for k, line in enumerate(lines):
    out.append(line)
    if k % step == 0 and big:
        out.append(big.pop())
out.extend(big)
open(sys.argv[2], "wb").write(b"\n".join(out) + b"\n")
PY
norm() { sed -E 's/"updatedAt":"[^"]*"/"updatedAt":"X"/' "$1"; }
# stderr (log.format json, the default) but for the times: ts and the summary's seconds
summary() { sed -E 's/"ts":"[^"]*"//; s/,"seconds":[0-9.e-]+\}$/}/' "$1"; }

for n in 1 2 5; do
  run 0 replay --input "$T/in.jsonl" --output "$T/out.$n" --rejects "$T/rej.$n" --set replay.threads=$n
  summary "$T/err" >"$T/sum.$n"
  run 0 replay --input "$T/in.jsonl" --output "$T/plain.$n" --set replay.threads=$n
  summary "$T/err" >"$T/shown.$n"
  "$BIN" replay --input - --output - --set replay.threads=$n <"$T/in.jsonl" >"$T/stdin.$n" 2>/dev/null ||
    fail "threads=$n: replay of standard input failed"
done
grep -q '"code":"document_too_large"' "$T/rej.1" || fail "no document_too_large in the stream"
grep -q '"code":"invalid_json"' "$T/rej.1" || fail "no invalid line in the stream"
grep -q '"msg":"replay: summary",.*"stale":[1-9]' "$T/sum.1" || fail "no redelivery in the stream: $(cat "$T/sum.1")"
for n in 2 5; do
  cmp -s <(norm "$T/out.1") <(norm "$T/out.$n") || fail "threads=$n: documents differ from one thread's"
  cmp -s "$T/rej.1" "$T/rej.$n" || fail "threads=$n: rejects differ from one thread's"
  cmp -s "$T/sum.1" "$T/sum.$n" || fail "threads=$n: summary differs: $(cat "$T/sum.$n")"
  cmp -s "$T/shown.1" "$T/shown.$n" || fail "threads=$n: stderr without --rejects differs: $(cat "$T/shown.$n")"
  cmp -s <(norm "$T/stdin.1") <(norm "$T/stdin.$n") || fail "threads=$n: standard input gives other documents"
done
cmp -s <(norm "$T/out.1") <(norm "$T/stdin.1") || fail "standard input gives other documents than the file"

# The edges of the lines, which the threaded replay reads in blocks cut at a
# "\n" and cuts into lines on its threads: the same stream with a byte order
# mark, "\r\n" on some lines, empty lines, a valid line longer than a block
# (64 KiB), a line over limits.max_command_bytes, lines across every block
# edge, and no final newline. Every thread count gives every line its
# number: the rejects are the first stream's, renumbered, and the inserted
# lines' (empty: invalid_json; over the limit: too_large); the mark, the
# long line and the last line are commands (their documents are there).
python3 - "$T/in.jsonl" "$T/edge.jsonl" "$T/rej.1" "$T/edge.expected" <<'PY' ||
import json, re, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
def cmd(i, assignment, pad=0):
    c = {"id": "e%d" % i, "type": "roster.assigned", "tenant": "t0", "assignment": assignment,
         "student": "s1", "version": 1, "ts": "2026-09-01T08:00:00Z"}
    if pad:
        c["padding"] = "x" * pad
    return json.dumps(c, separators=(",", ":")).encode()
out, number, extra = [b"\xef\xbb\xbf" + cmd(0, "edge-bom")], {}, []
for k, line in enumerate(lines):
    if k % 211 == 5:
        out.append(b"")
        extra.append((len(out), "invalid_json"))
    if k == len(lines) // 3:
        out.append(cmd(1, "edge-long", 200000))
    if k == len(lines) // 2:
        out.append(cmd(2, "edge-over", 300000))
        extra.append((len(out), "too_large"))
    out.append(line + b"\r" if k % 97 == 3 else line)
    number[k + 1] = len(out)
out.append(cmd(3, "edge-last"))
open(sys.argv[2], "wb").write(b"\n".join(out))  # no final newline
got = [re.match(r'\{"line":(\d+),"code":"([a-z0-9_]+)"', l).groups() for l in open(sys.argv[3])]
want = sorted([(number[int(n)], c) for n, c in got] + extra)
open(sys.argv[4], "w").write("".join("%d %s\n" % p for p in want) + "read=%d\n" % len(out))
PY
  fail "cannot build the edge stream"
for n in 1 2 5; do
  run 0 replay --input "$T/edge.jsonl" --output "$T/edge.out.$n" --rejects "$T/edge.rej.$n" \
    --set replay.threads=$n --set limits.max_command_bytes=262144
  { sed -E 's/^\{"line":([0-9]+),"code":"([a-z0-9_]+)".*/\1 \2/' "$T/edge.rej.$n"
    sed -nE 's/.*"msg":"replay: summary","read":([0-9]+),.*/read=\1/p' "$T/err"; } >"$T/edge.got.$n"
  cmp -s "$T/edge.expected" "$T/edge.got.$n" ||
    fail "threads=$n: edge stream: $(diff "$T/edge.expected" "$T/edge.got.$n" | head -5)"
  for a in bom long last; do
    grep -q "\"_id\":\"t0/edge-$a\"" "$T/edge.out.$n" || fail "threads=$n: edge stream: no document edge-$a"
  done
  [ $n = 1 ] || cmp -s <(norm "$T/edge.out.1") <(norm "$T/edge.out.$n") ||
    fail "threads=$n: edge stream: documents differ from one thread's"
done

# The default (0, one per online core) and an empty input.
run 0 replay --input "$T/in.jsonl" --output "$T/out.0" --rejects "$T/rej.0"
cmp -s <(norm "$T/out.1") <(norm "$T/out.0") && cmp -s "$T/rej.1" "$T/rej.0" || fail "the default differs"
: >"$T/empty.jsonl"
run 0 replay --input "$T/empty.jsonl" --output "$T/out.e" --set replay.threads=4
[ ! -s "$T/out.e" ] || fail "empty input: documents written"
grep -q '"msg":"replay: summary","read":0,"applied":0,"stale":0,"rejected":0,"aggregates":0,' "$T/err" || fail "empty input: $(cat "$T/err")"

# A bad value stops the replay before it reads, naming where it was set.
printf '[replay]\nthreads = 300\n' >"$T/bad.ini"
run 2 replay -c "$T/bad.ini" --input "$T/empty.jsonl" --output "$T/out.bad"
[ "$(cat "$T/err")" = "aggregator: $T/bad.ini:2: replay.threads: '300' is out of range 0..256" ] ||
  fail "bad replay.threads: $(cat "$T/err")"
run 2 verify --input "$T/empty.jsonl" --set replay.threads=x
[ "$(cat "$T/err")" = "aggregator: --set replay.threads: 'x' is not an integer" ] ||
  fail "bad replay.threads for verify: $(cat "$T/err")"

finish "replay threads"
