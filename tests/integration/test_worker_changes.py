#!/usr/bin/env python3
"""Change events (docs/CHANGES.md): a reader of the change topic alone keeps an exact copy of the store.

Three runs on the real broker and store, each ending with the same check: the change topic folded into a
map by _id (the greatest rev wins) equals the store, document for document, rev and updatedAt included, and
every event is well formed (keyed by its _id, x-rev its rev, `changed` slot paths):
 1. a clean run of a stream with duplicates, stale commands and rejects: exactly one event per write;
 2. kill -9 between a write and its event, twice (AGG_FAULT_KILL_AFTER_WRITE, announcer.h): the store holds
    writes the topic never announced; the restarted worker announces them again, at their stored rev;
 3. two consumer groups merging the same stream into the same store (their writes conflict), both
    announcing on the topic: each write announced at the rev it finally wrote;
 4. `replay --input` into the store, then `verify --repair` of a grade lost behind the worker's back: each
    write announced, the repair once, at its new rev, naming the slot it wrote back.
Every wait is on a condition."""
import json
import subprocess

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
    # Small flushes, so that each process writes in several; each kill comes with a part of the stream
    # produced that the store lacks (a backlog is read faster than it is written: a process writes each
    # of the 40 aggregates about once).
    extra = [("changes.topic", changes), ("batch.max_aggregates", "25"), ("batch.max_commands", "200")]
    for part, n in zip(s.split(s.path("commands.jsonl"), 0.5), (30, 10)):
        s.produce(part)
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


def replay_and_repair(s):
    """`replay --input` into the store and `verify --repair` announce their writes on the change topic too."""
    changes = fresh(s, "replay")
    stream(s, 34, 4000)
    settings = s.settings("unused", [("changes.topic", changes), ("log.level", "warn")])
    r = subprocess.run([h.AGGREGATOR, "replay", *settings, "--input", s.path("commands.jsonl")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    stored = s.stored()
    events = h.change_events(s, changes)
    h.assert_fold_equals_store(events, stored)
    assert all(e["changed"] for e in events), "a replay announces writes only, each with what it changed"
    # A grade lost behind the worker's back: the repair writes it back at the next rev and announces that.
    k, sid = next((k, sid) for k, d in sorted(stored.items()) for sid, v in sorted(d["students"].items())
                  if "grade" in v)
    h.run([h.tool("store_tool"), "update", h.MONGO, s.db, h.COLLECTION, k,
           json.dumps({"$unset": {f"students.{sid}.grade": ""}})])
    r = subprocess.run([h.AGGREGATOR, "verify", *settings, "--input", s.path("commands.jsonl"), "--repair"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, f"verify --repair exited {r.returncode}: {r.stderr[-3000:]}"
    report = [json.loads(l) for l in r.stdout.splitlines()]
    assert [(l["_id"], l["repair"]) for l in report] == [(k, "written")], report
    repaired = s.stored()
    after = h.change_events(s, changes)
    assert len(after) == len(events) + 1, "the repair is announced once"
    assert repaired[k]["rev"] == stored[k]["rev"] + 1, (repaired[k]["rev"], stored[k]["rev"])
    new = [e for e in after if e["_id"] == k and e["rev"] == repaired[k]["rev"]]
    assert len(new) == 1 and new[0]["changed"] == [f"students.{sid}.grade"], new
    h.assert_fold_equals_store(after, repaired)


def scenario(s):
    s.base_db, s.base_topic = s.db, s.topic
    try:
        for run in (clean_run, killed_between_write_and_event, two_groups, replay_and_repair):
            run(s)
            h.run([h.tool("store_tool"), "drop", h.MONGO, s.db])
    finally:
        s.db, s.topic = s.base_db, s.base_topic


if __name__ == "__main__":
    h.main(scenario, "changes")
