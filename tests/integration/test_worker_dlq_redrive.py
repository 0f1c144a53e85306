#!/usr/bin/env python3
"""Re-driving the dead-letter topic (docs/OPERATIONS.md, "Re-driving the dead-letter topic").

A live worker with a small limits.max_command_bytes consumes a shuffled stream: generated commands (a few
invalid) and, on slots of their own, commands longer than the limit that are valid. The long ones go to the
dead-letter topic as too_large. Some of them carry a greater version than the short commands of the same
slot (they win once re-driven), others a smaller one (they are stale once re-driven). With the limit
raised, `aggregator replay` reads the dead-letter topic into the same store exactly as the runbook says,
while the live worker keeps running. The merge keeps the greatest stamp of each slot whatever the order of
arrival, so the store then equals the merge of every valid command of the stream, as if none had been
rejected; the re-drive moves no group's offsets, the invalid commands are still rejected, a second re-drive
writes nothing and `verify` reports only store_ahead (slots that shorter, newer commands hold).
"""
import collections
import json
import random
import re
import subprocess
import time

import harness as h

SMALL_LIMIT = 512  # the worker's limits.max_command_bytes before the fix
FIXED_LIMIT = "256KiB"  # the fix: what the live worker and the re-drive are given
TENANT, ASSIGNMENT = "tredrive", "a1"
STUDENTS = 24
BACKFILL = h.SRC + "/config/backfill.ini"


def cmd(cid, typ, version, student=None, data=None):
    c = {"id": cid, "type": typ, "tenant": TENANT, "assignment": ASSIGNMENT, "version": version,
         "ts": "2026-09-01T08:00:00Z"}
    if student is not None:
        c["student"] = student
    if data is not None:
        c["data"] = data
    return json.dumps(c, separators=(",", ":"))


def crafted():
    """Commands on one assignment whose slots get short commands (versions 1 and 3) and one long command
    each: version 5 for even students and the header (newer than what the worker stores: wins once
    re-driven), version 2 for odd students (older: stale once re-driven)."""
    long_fb = "late " * 200  # 1,000 bytes: longer than SMALL_LIMIT, within the 4,096 of a feedback
    out = [cmd("hdr-1", "assignment.upserted", 1, data={"class": "c1", "title": "short", "status": "draft"}),
           cmd("hdr-5", "assignment.upserted", 5, data={"class": "c1", "title": "t" * 1000, "status": "published"})]
    for i in range(STUDENTS):
        st = "s%02d" % i
        out.append(cmd(f"r-{st}", "roster.assigned", 1, student=st))
        out.append(cmd(f"g1-{st}", "grade.updated", 1, student=st, data={"points": 1, "feedback": "v1"}))
        out.append(cmd(f"g3-{st}", "grade.updated", 3, student=st, data={"points": 3, "feedback": "v3"}))
        late = 5 if i % 2 == 0 else 2
        out.append(cmd(f"g{late}-{st}", "grade.updated", late, student=st, data={"points": late, "feedback": long_fb}))
    return out


def replay_cmd(s, *args, topics=None, dlq=None, limit=FIXED_LIMIT):
    """`aggregator replay` as the runbook gives it: config/backfill.ini, the dead-letter topic as the topic
    read, another name as kafka.dlq_topic, the fixed limit; the stack's connection and this scenario's
    database over the file."""
    sets = s.settings("redrive", [("kafka.topics", topics or s.dlq), ("kafka.dlq_topic", dlq or s.dlq + "-unused"),
                                  ("limits.max_command_bytes", limit)])
    return [h.AGGREGATOR, "replay", "-c", BACKFILL, *sets, *args]


def summary(err):
    # log.format = json (the harness's): the summary is a log line with the counts as fields
    sums = [e for e in (json.loads(l) for l in err.splitlines() if l.startswith("{"))
            if e["msg"] == "replay: summary"]
    assert len(sums) == 1, f"not one replay summary line:\n{err[-2000:]}"
    return {k: sums[0][k] for k in ("read", "applied", "stale", "rejected", "aggregates")}


def replay(s, *args):
    r = subprocess.run(replay_cmd(s, *args), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"replay exited {r.returncode}:\n{r.stderr[-3000:]}"
    return summary(r.stderr)


def scenario(s):
    gen = subprocess.run([h.tool("gen_commands"), "--seed", "27", "--count", "3000", "--assignments", "12",
                          "--students", "20", "--invalid-rate", "0.01", "--duplicate-rate", "0.05",
                          "--order", "shuffle"], capture_output=True, check=True).stdout.splitlines()
    lines = gen + [l.encode() for l in crafted()]
    random.Random(27).shuffle(lines)
    stream = s.path("stream.jsonl")
    with open(stream, "wb") as f:
        f.write(b"\n".join(lines) + b"\n")

    # The references: every valid command merged (the fixed limit), and what the worker stores before the fix.
    expected, ref = s.expected_and_reference(stream)
    h.assert_same_documents(expected, ref)
    before_fix = s.path("before-fix.jsonl")
    small_rej = s.path("small-rejects.jsonl")
    h.run([h.AGGREGATOR, "replay", "--set", f"limits.max_command_bytes={SMALL_LIMIT}", "--input", stream,
           "--output", before_fix, "--rejects", small_rej])
    rejects = [json.loads(l) for l in open(small_rej)]
    too_large = [r for r in rejects if r["code"] == "too_large"]
    invalid = len(rejects) - len(too_large)
    assert len(too_large) == STUDENTS + 1 and invalid > 0, collections.Counter(r["code"] for r in rejects)

    s.produce(stream)
    # The dead-letter topic's timestamps are when each reject was dead-lettered: the re-drive starts at a
    # time after the stream was produced and before the worker ran, and must still read every reject.
    since_s = int(time.time()) + 1
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(since_s)) + ".000Z"
    h.wait_until(lambda: time.time() > since_s + 0.01, 5, "the clock did not pass the re-drive's start")

    w = s.start_worker("g1", [("limits.max_command_bytes", str(SMALL_LIMIT)), ("batch.max_commands", "500")])
    s.wait_committed("g1", alive=[w])
    want = collections.Counter((lines[r["line"] - 1].hex(), r["code"]) for r in rejects)

    def dead_letters():
        return collections.Counter((m["value_hex"], m["headers"]["x-error-code"]) for m in s.dlq_messages())

    h.wait_until(lambda: dead_letters() == want, 60,
                 lambda: f"the dead-letter topic does not hold the rejects: {dead_letters().most_common(3)}")
    h.wait_until(lambda: {k: h.normalize(v) for k, v in s.stored().items()} == h.load_docs(before_fix), 60,
                 "the store is not the merge of the commands that fit the small limit")
    doc = s.stored()[f"{TENANT}/{ASSIGNMENT}"]
    assert all(doc["students"]["s%02d" % i]["grade"]["v"] == 3 for i in range(STUDENTS)), doc["students"]

    # The configuration refuses a topic that is both read and the dead-letter topic.
    r = subprocess.run(replay_cmd(s, "--output", "/dev/null", dlq=s.dlq), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, f"replay with kafka.topics = kafka.dlq_topic exited {r.returncode}: {r.stderr[-1000:]}"

    committed = s.committed("g1")
    # Dry run: everything read, only the invalid commands still rejected, nothing written.
    dry = replay(s, "--from", since, "--output", "/dev/null")
    assert dry["read"] == len(rejects) and dry["rejected"] == invalid, (dry, len(rejects), invalid)

    # The re-drive, beside the live worker.
    t0 = time.time()
    st = replay(s, "--from", since)
    h.log(f"re-drive: {st} in {time.time() - t0:.1f}s")
    assert st["read"] == len(rejects) and st["rejected"] == invalid, st
    # The summary's stale counts commands superseded within what the replay read; a re-driven command that
    # the store already holds a greater stamp for is counted applied, and the conditional write drops it.
    assert st["applied"] == len(too_large) and st["stale"] == 0, st
    s.assert_alive(w, "after the re-drive")
    assert s.committed("g1") == committed, "the live group's offsets moved during the re-drive"
    # A replay joins no group: the group of its configuration has committed nothing on the dead-letter topic.
    assert all(o < 0 for o in s.committed("redrive", s.dlq).values()), s.committed("redrive", s.dlq)

    stored = s.stored()
    h.assert_same_documents(expected, stored)
    doc = stored[f"{TENANT}/{ASSIGNMENT}"]
    for i in range(STUDENTS):
        g = doc["students"]["s%02d" % i]["grade"]
        assert g["v"] == (5 if i % 2 == 0 else 3), (i, g)  # newer late commands win, older ones change nothing
    assert doc["header"]["v"] == 5, doc["header"]

    # Re-driving twice changes nothing the second time.
    revs = {k: d["rev"] for k, d in stored.items()}
    again = replay(s, "--from", since)
    assert again["aggregates"] == 0, again
    assert {k: d["rev"] for k, d in s.stored().items()} == revs

    # verify over the same range: the re-driven slots are in the store; the stale ones are held by newer
    # commands that are not in the dead-letter topic (store_ahead).
    sets = s.settings("redrive", [("kafka.topics", s.dlq), ("kafka.dlq_topic", s.dlq + "-unused"),
                                  ("limits.max_command_bytes", FIXED_LIMIT)])
    r = subprocess.run([h.AGGREGATOR, "verify", "-c", BACKFILL, *sets, "--from", since], capture_output=True,
                       text=True, timeout=120)
    drift = [json.loads(l) for l in r.stdout.splitlines()]
    assert r.returncode in (0, 3) and all(d["drift"] == "store_ahead" for d in drift), \
        f"verify exited {r.returncode}: {drift[:3]} {r.stderr[-1000:]}"
    s.assert_alive(w, "at the end")
    assert s.committed("g1") == committed
    s.stop_worker(w)


if __name__ == "__main__":
    h.main(scenario, "dlq-redrive")
