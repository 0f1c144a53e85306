#!/usr/bin/env python3
"""Scenario: one assignment whose document would pass the store's 16 MiB limit (4,200 students whose
grades carry 4,000 bytes of feedback), next to a small one. The merge rejects, when it applies them, the
commands that would make the document pass the limit (document_too_large): they go to the dead-letter topic
byte for byte, the partition's offsets move past them, the document keeps every change that fits, and the
store never has to refuse a document (aggregator_store_too_large_total stays 0). The stored documents and the
rejects are those of `replay --input` on the same stream. Later, a new student that does not fit is
rejected too, and a change that fits (a shorter feedback for a stored student) is written.

Then a new worker (cold cache) gets new students and a change that keeps a stored student's size: the
aggregate is an overlay until its first flush loads the stored document, so the new students fit when
merged; those that do not fit the stored document are rejected then (late), dead-lettered with
document_too_large like any reject, the group commits past everything and the store still never refuses a
document. Last, `replay --input` into the store (a cold batch too) rejects the same way, in its rejects
file. Every document equals `replay --input` of the whole stream."""
import collections
import json
import re
import subprocess

import harness as h

LIMIT = 16 * 1024 * 1024
REFUSED = "aggregate document refused by the store as too large: its changes are kept and retried, its " \
          "partitions' commits stop behind it"
REBUILT = "aggregate rebuilt from its stored document: the commands that did not fit are rejected"
BIG = "tbig/huge"


def grade(i, student, version, feedback, assignment="huge"):
    return json.dumps({"id": "g%d" % i, "type": "grade.updated", "tenant": "tbig", "assignment": assignment,
                       "ts": "2026-09-01T08:00:00Z", "student": student, "version": version,
                       "data": {"points": i % 100, "feedback": feedback}}, separators=(",", ":"))


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


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
    r = subprocess.run([h.AGGREGATOR, "replay", *s.settings("unused", [("log.format", "text")]), "--output", out], capture_output=True,
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
    streams = [path, later]
    everything = lines + [newcomer, grade(20001, student, 2, "revised")]
    everything = cold_worker(s, big, streams, everything, fb)
    replay_into_store(s, big, streams, everything, fb)


def cold_worker(s, big, streams, everything, fb):
    """Three new students (the revised feedback left room for at most two) and a same-size change of a
    stored student, produced before a new worker starts: one fetch, one overlay."""
    same = sorted(big["students"])[1]
    cold = [grade(30000, "s-cold0", 1, fb), grade(30010, same, 2, "h" * 4000), grade(30001, "s-cold1", 1, fb),
            grade(30002, "s-cold2", 1, fb)]
    path = s.path("cold.jsonl")
    write_lines(path, cold)
    s.produce(path)
    port = h.free_port()
    w = s.start_worker("g1", [("metrics.listen", "127.0.0.1:%d" % port), ("batch.max_commands", "1000"),
                              ("batch.linger_ms", "2000")])
    s.wait_committed("g1", alive=[w])
    streams.append(path)
    everything += cold
    expected, rejects = s.expected(s.concat("all.jsonl", streams))
    want = collections.Counter((everything[r["line"] - 1].encode().hex(), r["code"]) for r in rejects)
    h.wait_until(lambda: dead_letters(s) == want, 60, "the dead letters are not the reference's rejects")
    late = [l for l in cold if (l.encode().hex(), "document_too_large") in want]
    assert late and cold[1] not in late, late
    assert s.log_events(w, REBUILT), "the new students were not rejected late"
    h.assert_same_documents(expected, s.stored())
    assert h.metric(port, "aggregator_rejects_total", 'code="document_too_large"') == len(late)
    assert (h.metric(port, "aggregator_store_too_large_total") or 0) == 0
    assert not s.log_events(w, REFUSED)
    h.log(f"too-large: a cold worker rejected {len(late)} of 3 new students late")
    s.stop_worker(w)
    return everything


def replay_into_store(s, big, streams, everything, fb):
    """replay --input into the store loads the document as the cold worker did: new students that do not
    fit are rejected late, in the rejects file in line order; a same-size change is written."""
    same = sorted(big["students"])[2]
    more = [grade(40000, "s-replay0", 1, fb), grade(40010, same, 2, "i" * 4000), grade(40001, "s-replay1", 1, fb)]
    path, rej = s.path("replay-in.jsonl"), s.path("replay-rejects.jsonl")
    write_lines(path, more)
    r = subprocess.run([h.AGGREGATOR, "replay", *s.settings("unused"), "--input", path, "--rejects", rej],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    streams.append(path)
    base = len(everything)
    everything += more
    expected, rejects = s.expected(s.concat("all.jsonl", streams))
    want = [{"line": x["line"] - base, "code": x["code"]} for x in rejects if x["line"] > base]
    got = [{"line": x["line"], "code": x["code"]} for x in map(json.loads, open(rej))]
    assert got == want and want, (got, want)
    assert all(x["code"] == "document_too_large" for x in got), got
    assert REBUILT in r.stderr, r.stderr[-2000:]
    h.assert_same_documents(expected, s.stored())
    h.log(f"too-large: replay into the store rejected {len(got)} of 2 new students late")


if __name__ == "__main__":
    h.main(scenario, "too-large")
