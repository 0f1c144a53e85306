#!/usr/bin/env python3
"""Scenario: the store at a realistic size. 2,000 assignments of 30 students
(about 8 KB of BSON each) go through `aggregator run` into the store, and
the stored documents equal the merge of the stream (`aggregator replay
--input`).

Then a second stream touches every assignment again and is consumed by a
fresh worker process of the same group: with an empty cache, its first flush
loads all 2,000 documents from the store (on FerretDB, one find per key),
merges into them and writes each back once. The documents must equal both
the replay and the independent reference merge (tests/tools/reference_merge.py)
of both streams together, every revision must have moved by
exactly one, and the worker must have met no conflict (a load that missed a
document would make its write an insert over it: a conflict).

The worker flushes on a long linger with room for everything, so a phase is
about one write per aggregate: the test measures the store at scale, not
how often the batcher flushes.
"""
import re
import subprocess

import harness as h

ASSIGNMENTS = 2000
STUDENTS = 30


def generate(s, name, *args):
    out = s.path(f"{name}.jsonl")
    with open(out, "w") as f:
        subprocess.run([h.tool("gen_commands"), "--assignments", str(ASSIGNMENTS), "--students", str(STUDENTS),
                        *args], stdout=f, check=True)
    return out


def scenario(s):
    # Phase 1: every slot of every assignment (1 + 3 x 30 base commands each),
    # a few duplicates and invalid lines.
    first = generate(s, "first", "--seed", "101", "--invalid-rate", "0.002", "--duplicate-rate", "0.02",
                     "--order", "time")
    # Phase 2: about three more commands per assignment, later versions.
    second = generate(s, "second", "--seed", "202", "--count", str(3 * ASSIGNMENTS), "--versions", "time",
                      "--order", "shuffle")
    extra = [("batch.max_commands", "1000000"), ("batch.max_aggregates", str(2 * ASSIGNMENTS)),
             ("batch.linger_ms", "5000"), ("batch.max_pending_bytes", "1GiB")]

    s.produce(first)
    w = s.start_worker("scale", extra)
    s.wait_committed("scale", timeout=900, alive=[w])
    s.stop_worker(w, timeout=300)
    raw = s.stored_raw()
    assert len(raw) == ASSIGNMENTS, f"{len(raw)} documents stored, expected {ASSIGNMENTS}"
    # Phase 1 against `aggregator replay --input` (the harness's oracle, fast);
    # the end state below against the independent Python reference as well.
    expected1, _ = s.expected(first)
    h.assert_same_documents(expected1, {d["_id"]: d for d in raw})
    h.log(f"phase 1: {len(raw)} documents equal to the replay of the stream")
    rev1 = {d["_id"]: d["rev"] for d in raw}

    # Every aggregate written exactly once, by construction: nothing is
    # flushed (linger at its maximum, the other limits far above the stream)
    # until every command was consumed; then the stop writes and commits.
    # With a shorter linger a flush could start before the last commands
    # arrive on a slow machine, and write some aggregates twice.
    port = h.free_port()
    hold = [("batch.max_commands", "1000000"), ("batch.max_aggregates", str(2 * ASSIGNMENTS)),
            ("batch.linger_ms", "60000"), ("batch.max_pending_bytes", "1GiB"), ("metrics.listen", f"127.0.0.1:{port}"),
            ("shutdown.timeout_ms", "290000")]
    s.produce(second)
    n2 = sum(1 for _ in open(second, "rb"))
    w = s.start_worker("scale", hold)

    def consumed():
        assert w.poll() is None, "the worker died"
        n = h.metric(port, "aggregator_commands_total")
        return n is not None and n >= n2

    h.wait_until(consumed, 300, "the worker did not consume phase 2")
    s.stop_worker(w, timeout=300)
    assert sum(s.committed("scale").values()) == sum(s.end_offsets().values()), "phase 2 not all committed"
    expected, ref = s.expected_and_reference(s.concat("both.jsonl", [first, second]))
    raw = s.stored_raw()
    h.assert_same_documents(ref, {d["_id"]: d for d in raw})
    h.assert_same_documents(expected, {d["_id"]: d for d in raw})
    moved = sorted(d["rev"] - rev1[d["_id"]] for d in raw)
    assert moved == [1] * ASSIGNMENTS, f"revision moves in phase 2 from {moved[0]} to {moved[-1]}, expected all 1"
    conflicts = sum(int(m) for m in re.findall(r'"conflicts":(\d+)', s.worker_log(w)))
    assert conflicts == 0, f"phase 2 met {conflicts} conflicts: a load missed stored documents"
    h.log(f"phase 2: {len(raw)} documents loaded, merged and written again, equal to the reference merge")


if __name__ == "__main__":
    h.main(scenario, "scale")
