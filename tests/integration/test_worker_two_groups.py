#!/usr/bin/env python3
"""Scenario 5: two workers in different groups write the same documents. They
converge to the result of replay --input, no update is lost or written back
in time, and a writer whose view of a document is stale meets a conflict,
reloads and merges instead of overwriting.

Conflicts between two free-running writers depend on how their flushes
interleave, so the first part (both workers running) asserts only what holds
whatever the interleaving, and the scenario then makes a conflict by
construction: A reads the shared topic and a second topic of its own, B only
the shared one. A alone writes a part that B never reads, which moves the
documents past the revisions B holds in its cache, and stops. B then writes
the rest: each of those writes must conflict (counted by its /metrics),
reload and merge, or A's part would be lost; with A stopped, nothing but B's
merge can keep it, so the documents must equal replay --input right then.

Each acknowledged write raises a document's rev by one, and a worker may also
count as its own a write another worker made of the same content (store.c,
resolve_incomplete, on FerretDB), so the revs add up to at most the writes
both counted."""
import harness as h


def part(s, name, lines):
    p = s.path(name)
    with open(p, "wb") as f:
        f.writelines(lines)
    return p


def scenario(s):
    stream = s.generate("--seed", "55", "--count", "8000", "--assignments", "30", "--students", "30",
                        "--invalid-rate", "0.0", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    lines = open(stream, "rb").readlines()
    n = len(lines)
    first = part(s, "first.jsonl", lines[: n * 45 // 100])
    own = part(s, "own.jsonl", lines[n * 45 // 100: n * 55 // 100])
    rest = part(s, "rest.jsonl", lines[n * 55 // 100:])
    topic_a = s.create_topic("a-only")
    pa, pb = h.free_port(), h.free_port()
    extra = [("batch.max_commands", "300"), ("batch.linger_ms", "20")]
    wa = s.start_worker("ga", extra + [("kafka.topics", f"{s.topic},{topic_a}"), ("metrics.listen", f"127.0.0.1:{pa}")])
    wb = s.start_worker("gb", extra + [("metrics.listen", f"127.0.0.1:{pb}")])

    def conflicts(port):
        v = h.metric(port, "aggregator_store_writes_total", 'result="conflict"')
        assert v is not None, f"no metrics on port {port}"
        return v

    s.produce(first)
    s.wait_committed("ga", alive=[wa, wb])
    s.wait_committed("gb", alive=[wa, wb])
    b_before = conflicts(pb)
    revs_before = {k: d["rev"] for k, d in s.stored().items()}

    s.produce(own, topic=topic_a)
    s.wait_committed("ga", alive=[wa, wb], topic=topic_a)
    revs_own = {k: d["rev"] for k, d in s.stored().items()}
    moved = [k for k in revs_own if revs_own[k] != revs_before.get(k)]
    assert moved, "A's own part changed no document"
    assert all(revs_own[k] > revs_before.get(k, 0) for k in moved), "a rev went back"

    s.stop_worker(wa)

    s.produce(rest)
    s.wait_committed("gb", alive=[wb])
    b_after = conflicts(pb)
    h.log(f"A alone moved {len(moved)} documents; B's conflicts: {b_before:.0f} before, {b_after:.0f} after")
    assert b_after > b_before, "B wrote over documents A had moved past its cached revisions without a conflict"
    s.stop_worker(wb)
    h.assert_same_documents(expected, s.stored())

    stopped = [s.log_events(w, "stopped") for w in (wa, wb)]
    assert all(len(e) == 1 for e in stopped), "each worker logs one 'stopped' line"
    writes = sum(e[0]["writes"] for e in stopped)
    revs = sum(d["rev"] for d in s.stored_raw())
    h.log(f"successful writes {writes} (A {stopped[0][0]['writes']}, B {stopped[1][0]['writes']}), "
          f"sum of revs {revs}, conflicts {sum(e[0]['conflicts'] for e in stopped)}")
    assert 0 < revs <= writes, f"the documents' revs add up to {revs}, the workers counted {writes} writes"


if __name__ == "__main__":
    h.main(scenario, "two-groups")
