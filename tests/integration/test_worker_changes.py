#!/usr/bin/env python3
"""Change events (docs/CHANGES.md): a reader of the change topic alone keeps an exact copy of the store.

Three runs on the real broker and store, each ending with the same check: the change topic folded into a
map by _id (the greatest rev wins) equals the store, document for document, rev and updatedAt included, and
every event is well formed (keyed by its _id, x-rev its rev, `changed` slot paths):
 1. a clean run of a stream with duplicates, stale commands and rejects: exactly one event per write;
 2. kill -9 between a write and its event, twice (AGG_FAULT_KILL_AFTER_WRITE, announcer.h): the store holds
    writes the topic never announced; the restarted worker announces them again, at their stored rev;
 3. two consumer groups merging the same stream into the same store (their writes conflict), both
    announcing on the topic: each write announced at the rev it finally wrote.
Every wait is on a condition."""
import harness as h


def stream(s, seed, count):
    return s.generate("--seed", str(seed), "--count", str(count), "--assignments", "40", "--students", "30",
                      "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")


def fresh(s, suffix):
    """Points the scenario at a command topic and a database of its own for one run, and returns a change
    topic of its own: the runs share nothing but the broker and the store."""
    s.topic = s.base_topic
    changes = s.create_topic(f"changes-{suffix}", 3)
    s.topic = s.create_topic(f"cmds-{suffix}", 6)
    s.db = f"{s.base_db}_{suffix}"
    h.run([h.tool("store_tool"), "drop", h.MONGO, s.db])
    return changes


def writes_of(s, w):
    """The writes a worker that stopped cleanly reports in its last log line."""
    stopped = s.log_events(w, "stopped")
    assert stopped, f"no 'stopped' line:\n{s.worker_log(w)[-2000:]}"
    return stopped[-1]["writes"]


def clean_run(s):
    changes = fresh(s, "clean")
    expected, _ = s.expected(stream(s, 31, 4000))
    w = s.start_worker("g1", [("changes.topic", changes)])
    s.wait_joined(w)
    s.produce(s.path("commands.jsonl"), rate=4000)
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    stored = s.stored()
    h.assert_same_documents(expected, stored)
    events = h.change_events(s, changes)
    h.assert_fold_equals_store(events, stored)
    writes = writes_of(s, w)
    assert len(events) == writes, f"{len(events)} events for {writes} writes: a clean run announces each write once"
    assert any(e["changed"] and "document" in e for e in events)
    h.log(f"clean run: {writes} writes, {len(events)} events, {len(stored)} documents")


def killed_between_write_and_event(s):
    changes = fresh(s, "kill")
    expected, _ = s.expected(stream(s, 32, 4000))
    s.produce(s.path("commands.jsonl"))
    # Small flushes: each process of the backlog writes in many of them, so that each kill comes with
    # writes left to do.
    extra = [("changes.topic", changes), ("batch.max_aggregates", "25"), ("batch.max_commands", "200")]
    for n in (30, 55):
        w = s.start_worker("g2", extra, env={"AGG_FAULT_KILL_AFTER_WRITE": str(n)})
        assert w.wait(180) == -9, f"the fault point did not kill the worker (exit {w.returncode}):\n" \
                                  f"{s.worker_log(w)[-2000:]}"
        stored = s.stored()
        announced = {e["_id"]: e["rev"] for e in h.change_events(s, changes)}
        unannounced = [k for k, d in stored.items() if announced.get(k, 0) < d["rev"]]
        assert unannounced, "the kill left no write unannounced: the fault point missed"
        h.log(f"killed at the announcement of write {n}: {len(unannounced)} stored revs not announced")
    w = s.start_worker("g2", extra)
    s.wait_committed("g2", alive=[w])
    s.stop_worker(w)
    stored = s.stored()
    h.assert_same_documents(expected, stored)
    h.assert_fold_equals_store(h.change_events(s, changes), stored)


def two_groups(s):
    changes = fresh(s, "two")
    expected, _ = s.expected(stream(s, 33, 4000))
    extra = [("changes.topic", changes), ("batch.max_aggregates", "20"), ("cache.max_aggregates", "10")]
    a, b = s.start_worker("g3", extra), s.start_worker("g4", extra)
    s.wait_joined(a)
    s.wait_joined(b)
    s.produce(s.path("commands.jsonl"), rate=4000)
    s.wait_committed("g3", alive=[a, b])
    s.wait_committed("g4", alive=[a, b])
    s.stop_worker(a)
    s.stop_worker(b)
    stored = s.stored()
    h.assert_same_documents(expected, stored)
    h.assert_fold_equals_store(h.change_events(s, changes), stored)
    conflicts = sum(s.log_events(w, "stopped")[-1]["conflicts"] for w in (a, b))
    h.log(f"two groups: {conflicts} conflicts")


def scenario(s):
    s.base_db, s.base_topic = s.db, s.topic
    try:
        for run in (clean_run, killed_between_write_and_event, two_groups):
            run(s)
            h.run([h.tool("store_tool"), "drop", h.MONGO, s.db])
    finally:
        s.db, s.topic = s.base_db, s.base_topic


if __name__ == "__main__":
    h.main(scenario, "changes")
