#!/usr/bin/env python3
"""Scenario: one assignment whose document passes the store's 16 MiB limit (about 4,100 students whose
grades carry 4,000 bytes of feedback), next to a small one. The worker must neither stop nor hold the
partitions back nor drop anything silently (SPEC section 4): its offsets reach the end, the small
assignment is stored, the big one's stored document stays under the limit, every refusal is counted
(aggregator_store_too_large_total) and the first is logged once with the _id and size; a later command for
the big assignment that fits (a new grade for a student it stores) is written."""
import json

import harness as h

LIMIT = 16 * 1024 * 1024
MSG = "aggregate document past the store's size limit: its unwritten changes are set aside"
BIG = "tbig/huge"


def grade(i, student, version, feedback, assignment="huge"):
    return json.dumps({"id": "g%d" % i, "type": "grade.updated", "tenant": "tbig", "assignment": assignment,
                       "ts": "2026-09-01T08:00:00Z", "student": student, "version": version,
                       "data": {"points": i % 100, "feedback": feedback}}, separators=(",", ":"))


def scenario(s):
    fb = "f" * 4000
    lines = [grade(i, "s%d" % i, 1, fb) for i in range(4200)]  # about 17.5 MB of document
    lines += [grade(10000 + i, "s%d" % i, 1, "ok", assignment="small") for i in range(5)]
    path = s.path("big.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    s.produce(path)
    port = h.free_port()
    w = s.start_worker("g1", [("metrics.listen", "127.0.0.1:%d" % port), ("batch.max_commands", "1000")])
    s.wait_committed("g1", alive=[w])  # the partitions moved past every command
    h.wait_until(lambda: (h.metric(port, "aggregator_store_too_large_total") or 0) >= 1, 60,
                 "no refusal counted")
    assert (h.metric(port, "aggregator_store_writes_total", 'result="error"') or 0) >= 1
    events = [e for e in s.log_events(w, MSG) if e.get("id") == BIG]
    assert len(events) == 1, events
    assert events[0]["bytes"] > LIMIT - 4096 and events[0]["limit"] == LIMIT, events[0]

    stored = s.stored()
    assert "tbig/small" in stored and len(stored["tbig/small"]["students"]) == 5, stored.get("tbig/small")
    big = stored.get(BIG)
    assert big is None or len(json.dumps(big)) < 2 * LIMIT, "stored"
    if big is None:  # set aside at its first write: nothing of it is stored, so nothing can be updated
        h.log(f"too-large: {BIG} set aside at its first write")
        s.stop_worker(w)
        return
    n = len(big["students"])
    assert 0 < n < 4200, n
    h.log(f"too-large: {BIG} stored with {n} students; the rest set aside")
    student = sorted(big["students"])[0]
    later = s.path("later.jsonl")
    with open(later, "w") as f:
        f.write(grade(20000, student, 2, "revised") + "\n")
    s.produce(later)
    s.wait_committed("g1", alive=[w])

    def revised():
        d = s.stored().get(BIG)
        return d is not None and d["students"][student]["grade"]["feedback"] == "revised"

    h.wait_until(revised, 60, "the later command that fits was not written")
    assert len(s.stored()[BIG]["students"]) == n  # merged into the stored document, nothing else came back
    assert len([e for e in s.log_events(w, MSG) if e.get("id") == BIG]) == 1  # logged once
    s.stop_worker(w)


if __name__ == "__main__":
    h.main(scenario, "too-large")
