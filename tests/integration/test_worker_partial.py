#!/usr/bin/env python3
"""Scenario: partial writes on the real stack, on FerretDB
(AGG_MONGO_URI) and on mongo-java-server (AGG_MJS_URI).

An aggregate the worker holds at a stored rev is written as an update that
sets only the students touched since its last write (worker/store/store.h). The
documents must still be exactly what whole replacements would have stored,
whatever the order of the stream:

1. a shuffled stream with duplicates, deletes and unassignments is consumed
   with small flushes, so that most aggregates are written many times;
2. a marker field is added to every stored document behind the worker's
   back (the decoder ignores unknown fields, and the rev is left alone, so
   the worker's cached revs stay right);
3. a second adversarial stream over the same assignments and students is
   consumed (how many of its writes are partial depends on how large the
   flushes grew, so on the machine's speed: it is logged, not asserted);
4. a second marker is added, and then one grade of one stored student per
   document, at a version above every other: each document is written once
   more, and that write touches one student of 40, so it must be partial
   whatever the timing, which keeps the marker;

with the aggregates cached (the batch lists what changed), and on FerretDB
also with no cache (every write follows a load: the writer lists it).

Every document must equal both `aggregator replay --input` of the three
streams and the independent reference merge (tests/tools/reference_merge.py);
and every document written in step 4 must have kept the second marker (a
whole replacement drops it)."""
import json
import os
import subprocess
import time

import harness as h

MJS = os.environ.get("AGG_MJS_URI", "mongodb://127.0.0.1:27019")
GEN = ("--tenants", "2", "--assignments", "24", "--students", "40", "--duplicate-rate", "0.3",
       "--order", "shuffle", "--mix", "upserted=4,deleted=2,submission=30,grade=40,assigned=16,unassigned=8")


def generate(s, name, *args):
    out = s.path(name)
    with open(out, "w") as f:
        subprocess.run([h.tool("gen_commands"), *GEN, *args], stdout=f, check=True)
    return out


def scenario(s, cache):
    first = generate(s, "first.jsonl", "--seed", "71", "--count", "6000")
    extra = [("batch.max_commands", "200"), ("batch.linger_ms", "20"), ("cache.max_aggregates", cache)]
    s.produce(first, rate=3000)
    w = s.start_worker("g1", extra)
    s.wait_committed("g1", alive=[w])
    before = {k: d["rev"] for k, d in s.stored().items()}
    assert before, "nothing stored"

    for key in before:
        h.run([h.tool("store_tool"), "update", h.MONGO, s.db, h.COLLECTION, key, '{"$set": {"probe": 1}}'])

    # Slowly, so that flushes are small: each then touches a few students of
    # an aggregate (touching half of them or more is written whole).
    second = generate(s, "second.jsonl", "--seed", "72", "--count", "6000")
    s.produce(second, rate=2000)
    s.wait_committed("g1", alive=[w])
    stored = s.stored()
    raw = raw_documents(s)
    rewritten = [k for k in before if stored[k]["rev"] > before[k]]
    kept = [k for k in rewritten if raw[k].get("probe") == 1]
    h.log(f"{h.MONGO}, cache {cache}: {len(stored)} documents, {len(rewritten)} rewritten after the probe, "
          f"{len(kept)} of them only partially (probe kept)")

    # Step 4: one student's grade per document, nothing else pending (the
    # second stream is committed, so durable): every write is partial.
    before = {k: stored[k]["rev"] for k, d in raw.items() if d["students"]}
    assert len(before) == len(stored), "a document without students"
    third = s.path("third.jsonl")
    with open(third, "w") as f:
        for i, (key, d) in enumerate(sorted(raw.items())):
            h.run([h.tool("store_tool"), "update", h.MONGO, s.db, h.COLLECTION, key, '{"$set": {"probe": 2}}'])
            student = sorted(d["students"])[0]
            f.write(json.dumps({"id": "probe-%d" % i, "type": "grade.updated", "tenant": d["tenant"],
                                "assignment": d["assignment"], "student": student, "version": 1 << 40,
                                "ts": "2026-12-01T00:00:00.000Z", "data": {"points": 7, "feedback": "probe"}},
                               separators=(",", ":")) + "\n")
    s.produce(third)
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    stored = s.stored()
    raw = raw_documents(s)
    whole = [k for k in before if stored[k]["rev"] <= before[k] or raw[k].get("probe") != 2]
    assert not whole, f"a one-student change was not a partial write of the next rev: {whole[:5]}"

    expected, refdocs = s.expected_and_reference(s.concat("both.jsonl", [first, second, third]))
    assert expected == refdocs, "replay and the reference merge disagree"
    h.assert_same_documents(expected, stored)


def raw_documents(s):
    """The stored documents as the store holds them, unknown fields included."""
    out = h.run([h.tool("store_tool"), "raw", h.MONGO, s.db, h.COLLECTION])
    return {d["_id"]: d for d in map(json.loads, out.splitlines())}


def main():
    t0 = time.time()
    # cache.max_aggregates 0: every write follows a load of the stored
    # document, and the writer lists the overlay's students (worker/pipeline/writer.c).
    for uri, cache in ((h.MONGO, "10000"), (MJS, "10000"), (h.MONGO, "0")):
        h.MONGO = uri
        with h.scenario("partial") as s:
            scenario(s, cache)
    h.log(f"partial: passed in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
