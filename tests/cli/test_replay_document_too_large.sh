#!/usr/bin/env bash
# aggregator replay --input: a valid command that would make its
# assignment's stored document pass the store's limit (16 MiB less the write
# statement's envelope) goes to the rejects file with code
# document_too_large, its detail giving the size it would reach and the
# limit; the document keeps every command that fits, and the other
# assignments are untouched.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
export LC_ALL=C

# 4,200 grades of 4,000 bytes of feedback for t1/big (about 17.2 MB of
# document), then one for t1/small, then a shorter feedback for a student
# t1/big holds (it shrinks the document: it fits).
python3 - "$T/in.jsonl" <<'PY'
import json, sys
def grade(i, assignment, student, version, feedback):
    return json.dumps({"id": "g%d" % i, "type": "grade.updated", "tenant": "t1", "assignment": assignment,
                       "ts": "2026-09-01T08:00:00Z", "student": student, "version": version,
                       "data": {"points": 1, "feedback": feedback}}, separators=(",", ":"))
with open(sys.argv[1], "w") as f:
    for i in range(4200):
        f.write(grade(i, "big", "s%d" % i, 1, "f" * 4000) + "\n")
    f.write(grade(5000, "small", "s0", 1, "ok") + "\n")
    f.write(grade(5001, "big", "s0", 2, "shorter") + "\n")
PY

set +e
"$BIN" replay --input "$T/in.jsonl" --output "$T/out.jsonl" --rejects "$T/rej.jsonl" --set log.format=text \
  2>"$T/err"
rc=$?
set -e
[ "$rc" -eq 0 ] && ok || fail "exit $rc: $(head -c 300 "$T/err")"

LIMIT=$((16 * 1024 * 1024 - 64 - 6)) # the statement's envelope and the _id "t1/big"
python3 - "$T/out.jsonl" "$T/rej.jsonl" "$T/err" "$LIMIT" <<'PY' && ok || fail "see above"
import json, re, sys
out, rej, err, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
docs = {d["_id"]: d for d in map(json.loads, open(out))}
rejects = [json.loads(l) for l in open(rej)]
kept = len(docs["t1/big"]["students"])
problems = []
if not 0 < kept < 4200:
    problems.append("t1/big holds %d students" % kept)
# the rejects: exactly the grades past the room, in order, each document_too_large
if [r["line"] for r in rejects] != list(range(kept + 1, 4201)):
    problems.append("rejected lines %s..." % [r["line"] for r in rejects][:5])
for r in rejects:
    m = re.fullmatch(r"the stored document would reach (\d+) bytes, past its limit of (\d+)", r["detail"])
    if r["code"] != "document_too_large" or not m or int(m.group(2)) != limit or int(m.group(1)) <= limit:
        problems.append("reject %s" % r)
        break
if docs["t1/big"]["students"]["s0"]["grade"]["feedback"] != "shorter":
    problems.append("the change that fits was not applied")
if len(docs["t1/small"]["students"]) != 1:
    problems.append("t1/small: %s" % docs["t1/small"])
summary = open(err).read().strip()
want = r"replay: read=4202 applied=%d stale=0 rejected=%d aggregates=2 seconds=[0-9.]+" % (kept + 2, 4200 - kept)
if not re.fullmatch(want, summary):
    problems.append("summary %r" % summary)
for p in problems:
    print("FAIL:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY

finish test_replay_document_too_large
