#!/usr/bin/env python3
"""Scenario: one assignment whose document would pass the store's 16 MiB limit (4,200 students whose
grades carry 4,000 bytes of feedback), next to a small one. The merge rejects, when it applies them, the
commands that would make the document pass the limit (document_too_large): they go to the dead-letter topic
byte for byte, the partition's offsets move past them, the document keeps every change that fits, and the
store never has to refuse a document (aggregator_store_too_large_total stays 0). The stored documents and the
rejects are those of `replay --input` on the same stream. Later, a new student that does not fit is
rejected too, and a change that fits (a shorter feedback for a stored student) is written."""
import collections
import json
import re
import subprocess

import harness as h

LIMIT = 16 * 1024 * 1024
REFUSED = "aggregate document refused by the store as too large: its changes are kept and retried, its " \
          "partitions' commits stop behind it"
BIG = "tbig/huge"


def grade(i, student, version, feedback, assignment="huge"):
    return json.dumps({"id": "g%d" % i, "type": "grade.updated", "tenant": "tbig", "assignment": assignment,
                       "ts": "2026-09-01T08:00:00Z", "student": student, "version": version,
                       "data": {"points": i % 100, "feedback": feedback}}, separators=(",", ":"))


def dead_letters(s):
    return collections.Counter((m["value_hex"], m["headers"]["x-error-code"]) for m in s.dlq_messages())


def scenario(s):
    fb = "f" * 4000
    lines = [grade(i, "s%d" % i, 1, fb) for i in range(4200)]  # about 17.5 MB of document
    lines += [grade(10000 + i, "s%d" % i, 1, "ok", assignment="small") for i in range(5)]
    path = s.path("big.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    expected, rejects = s.expected(path)
    assert rejects and all(r["code"] == "document_too_large" for r in rejects), rejects[:3]
    s.produce(path)
    port = h.free_port()
    w = s.start_worker("g1", [("metrics.listen", "127.0.0.1:%d" % port), ("batch.max_commands", "1000")])
    s.wait_committed("g1", alive=[w])  # the partitions moved past every command, the rejected ones included

    want = collections.Counter((lines[r["line"] - 1].encode().hex(), "document_too_large") for r in rejects)
    h.wait_until(lambda: dead_letters(s) == want, 60, "the dead-letter topic does not hold the rejects")
    for m in s.dlq_messages():
        assert str(LIMIT - 64 - len(BIG)) in m["headers"]["x-error-detail"], m["headers"]
    h.assert_same_documents(expected, s.stored())
    big = s.stored()[BIG]
    n = len(big["students"])
    assert n + len(rejects) == 4200, (n, len(rejects))
    h.log(f"too-large: {BIG} stored with {n} students; {len(rejects)} commands dead-lettered")
    assert h.metric(port, "aggregator_rejects_total", 'code="document_too_large"') == len(rejects)
    assert (h.metric(port, "aggregator_store_too_large_total") or 0) == 0
    assert (h.metric(port, "aggregator_store_writes_total", 'result="error"') or 0) == 0
    assert not s.log_events(w, REFUSED)

    # replay from the topic (to a file) counts the same commands as rejected
    out = s.path("replayed.jsonl")
    r = subprocess.run([h.AGGREGATOR, "replay", *s.settings("unused"), "--output", out], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r"rejected=(\d+)", r.stderr)
    assert m and int(m.group(1)) == len(rejects), r.stderr[-2000:]
    h.assert_same_documents(expected, h.load_docs(out))

    student = sorted(big["students"])[0]
    later = s.path("later.jsonl")
    newcomer = grade(20000, "s-new", 1, fb)
    with open(later, "w") as f:
        f.write(newcomer + "\n" + grade(20001, student, 2, "revised") + "\n")
    s.produce(later)
    s.wait_committed("g1", alive=[w])
    want[(newcomer.encode().hex(), "document_too_large")] += 1
    h.wait_until(lambda: dead_letters(s) == want, 60, "the new student that does not fit was not dead-lettered")

    def revised():
        d = s.stored().get(BIG)
        return d is not None and d["students"][student]["grade"]["feedback"] == "revised"

    h.wait_until(revised, 60, "the later command that fits was not written")
    assert len(s.stored()[BIG]["students"]) == n
    assert (h.metric(port, "aggregator_store_too_large_total") or 0) == 0
    s.stop_worker(w)


if __name__ == "__main__":
    h.main(scenario, "too-large")
