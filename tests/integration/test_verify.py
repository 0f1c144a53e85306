#!/usr/bin/env python3
"""`aggregator verify` (docs/CLI.md) against the local stack.

- Over a store filled by `replay --input`, verify from the topics and from --input finds nothing (exit 0).
- The store is then changed behind the worker's back (store_tool): a deleted document, a deleted slot, a
  changed value under the same stamp, a slot with a higher stamp, counts that do not match the slots. Each
  is reported once with the right kind and path (exit 3).
- `--repair` writes exactly the missing and store_behind documents (back to the rebuilt ones); a second
  verify reports only the differs and store_ahead documents, which the repair left as they were.
- verify never moves the live group's offsets.
- With drift to report, verify on one thread and on three (replay.threads), from the topics and from
  --input, writes the same report and summary byte for byte.
- Repairing verifies run while a live worker writes the same store (shown to overlap): none reports a
  `differs` or a failed repair, and once the worker has caught up a verify finds nothing and the store holds
  the documents of `replay --input`.
"""
import json
import re
import subprocess
import time

import harness as h

COUNTS = ["read", "rejected", "documents", "drifted", "missing", "store_behind", "differs", "store_ahead"]


def summaries(err):
    """The summary log lines (log.format = json, the harness's) of a verify's stderr."""
    return [e for e in (json.loads(l) for l in err.splitlines() if l.startswith("{"))
            if e["msg"] == "verify: summary"]


def verify(s, db, *args, rcs=(0, 3)):
    cmd = [h.AGGREGATOR, "verify", *s.settings("unused", [("store.database", db), ("log.level", "warn")]), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode in rcs, f"verify exited {r.returncode}: {r.stderr[-3000:]}"
    sums = summaries(r.stderr)
    assert len(sums) == 1, r.stderr[-2000:]
    lines = [json.loads(l) for l in r.stdout.splitlines()]
    for l in lines:
        assert set(l) >= {"_id", "drift", "path", "detail"}, l
    summary = {k: sums[0][k] for k in COUNTS}
    assert summary["drifted"] == len(lines), (summary, lines)
    assert (r.returncode == 3) == bool(lines), (r.returncode, lines)
    return r.returncode, {l["_id"]: l for l in lines}, summary


def verify_threads(s, db, threads, *args):
    """verify's report and summary line (its time aside), byte for byte, with replay.threads = threads."""
    cmd = [h.AGGREGATOR, "verify", *s.settings("unused", [("store.database", db), ("log.level", "warn"),
                                                          ("replay.threads", str(threads))]), *args]
    r = subprocess.run(cmd, capture_output=True, timeout=600)
    assert r.returncode == 3, f"verify exited {r.returncode}: {r.stderr[-3000:]}"
    sums = summaries(r.stderr.decode())
    assert len(sums) == 1, r.stderr[-2000:]
    return r.stdout, {k: v for k, v in sums[0].items() if k not in ("ts", "seconds")}


def store_tool(s, db, *args):
    h.run([h.tool("store_tool"), *args[:1], h.MONGO, db, h.COLLECTION, *args[1:]])


def first_path(doc):
    if doc["header"] is not None:
        return "header"
    sid = sorted(doc["students"])[0]
    return f"students.{sid}." + next(k for k in ("member", "submission", "grade") if k in doc["students"][sid])


SECOND = ["--seed", "78", "--count", "20000", "--assignments", "30", "--students", "30", "--invalid-rate", "0",
          "--duplicate-rate", "0.05", "--order", "shuffle"]


def scenario(s):
    first = s.generate("--seed", "77", "--count", "20000", "--assignments", "40", "--students", "30",
                       "--invalid-rate", "0.005", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, rejects = s.expected(first)
    s.produce(first)
    h.run([h.AGGREGATOR, "replay", *s.settings("unused"), "--input", first])
    h.assert_same_documents(expected, s.stored())

    lines = sum(1 for _ in open(first, "rb"))
    rc, report, st = verify(s, s.db)
    assert rc == 0 and not report, report
    assert st["read"] == lines and st["rejected"] == len(rejects) and st["documents"] == len(expected), st
    rc, report, _ = verify(s, s.db, "--input", first)
    assert rc == 0 and not report, report

    # Five documents, each changed in one way behind the worker's back.
    stored = s.stored()
    ids = sorted(stored)
    pool = list(ids)

    def take(pred):
        k = next(i for i in pool if pred(stored[i]))
        pool.remove(k)
        return k

    gone = take(lambda d: True)
    tampered = take(lambda d: d["header"] is not None and "title" in d["header"])
    slot_lost = take(lambda d: any("grade" in v for v in d["students"].values()))
    ahead = take(lambda d: any("member" in v for v in d["students"].values()))
    miscounted = take(lambda d: True)
    store_tool(s, s.db, "delete", gone)
    sid, slots = next((k, v) for k, v in sorted(stored[slot_lost]["students"].items()) if "grade" in v)
    store_tool(s, s.db, "update", slot_lost, json.dumps({"$unset": {f"students.{sid}.grade": ""}}))
    store_tool(s, s.db, "update", tampered, json.dumps({"$set": {"header.title": "changed behind its back"}}))
    aid = next(k for k, v in sorted(stored[ahead]["students"].items()) if "member" in v)
    store_tool(s, s.db, "update", ahead,
               json.dumps({"$set": {f"students.{aid}.member.v": {"$numberLong": "1000000000000"}}}))
    counts = stored[miscounted]["counts"]
    store_tool(s, s.db, "update", miscounted, json.dumps({"$set": {"counts.assigned": counts["assigned"] + 1}}))
    want = {gone: ("missing", first_path(expected[gone])), slot_lost: ("store_behind", f"students.{sid}.grade"),
            tampered: ("differs", "header"), ahead: ("store_ahead", f"students.{aid}.member"),
            miscounted: ("differs", "counts")}

    # Verify from the topics: each reported once, right kind and path; the live group's offsets stay put.
    # (The live worker writes a store of its own: in this one it would undo the damage.)
    w = s.start_worker("live", [("store.database", s.db + "_group")])
    s.wait_committed("live", alive=[w])
    s.stop_worker(w)
    h.run([h.tool("store_tool"), "drop", h.MONGO, s.db + "_group"])
    committed = s.committed("live")
    rc, report, st = verify(s, s.db)
    assert s.committed("live") == committed
    assert rc == 3 and {k: (v["drift"], v["path"]) for k, v in report.items()} == want, report
    assert st["missing"] == 1 and st["store_behind"] == 1 and st["differs"] == 2 and st["store_ahead"] == 1, st
    assert "1000000000000" in report[ahead]["detail"], report[ahead]
    assert all("repair" not in l for l in report.values()), report
    rc, report_input, _ = verify(s, s.db, "--input", first)
    assert report_input == report, (report_input, report)
    for source in ([], ["--input", first]):
        one = verify_threads(s, s.db, 1, *source)
        assert verify_threads(s, s.db, 3, *source) == one, (source, one)

    # --repair: writes exactly the missing and store_behind documents.
    before = s.stored()
    rc, report, st = verify(s, s.db, "--repair")
    assert rc == 3 and {k: (v["drift"], v["path"]) for k, v in report.items()} == want, report
    for k, l in report.items():
        if l["drift"] in ("missing", "store_behind"):
            assert l.get("repair") == "written", l
        else:
            assert "repair" not in l, l
    assert report[gone]["rev"] == 1 and report[slot_lost]["rev"] == before[slot_lost]["rev"] + 1, report
    after = s.stored()
    for k in (gone, slot_lost):
        assert h.normalize(after[k]) == expected[k], k
    for k in ids:
        if k not in (gone, slot_lost):
            assert after[k] == before[k], f"{k} changed by the repair"
    # A second verify: only the kinds a repair must not touch.
    rc, report, st = verify(s, s.db)
    assert rc == 3 and {k: (v["drift"], v["path"]) for k, v in report.items()} == {
        k: v for k, v in want.items() if k in (tampered, ahead, miscounted)}, report
    assert s.stored() == after

    # verify reads what it can. A student whose slots are all removed behind the worker's back is stored as
    # `"<id>": {}`: a student with no slots, whose rebuilt slots are store_behind. A document that does not
    # decode (`rev` a string) is one differs line with the reason; the audit goes on with the others (exit 3)
    # and a repair never writes it.
    emptied = take(lambda d: bool(d["students"]))
    esid, eslots = sorted(stored[emptied]["students"].items())[0]
    eslot = next(k for k in ("member", "submission", "grade") if k in eslots)
    store_tool(s, s.db, "update", emptied, json.dumps({"$unset": {f"students.{esid}.{k}": "" for k in eslots}}))
    assert raw(s.db)[emptied]["students"][esid] == {}
    bad = pool[-1]
    store_tool(s, s.db, "update", bad, json.dumps({"$set": {"rev": "7"}}))
    bad_raw = raw(s.db)[bad]
    odd = {emptied: ("store_behind", f"students.{esid}.{eslot}"), bad: ("differs", "rev")}
    still = {k: v for k, v in want.items() if k in (tampered, ahead, miscounted)}
    rc, report, st = verify(s, s.db)
    assert rc == 3 and {k: (v["drift"], v["path"]) for k, v in report.items()} == {**still, **odd}, report
    assert st["differs"] == 3 and st["store_behind"] == 1 and st["store_ahead"] == 1, st
    assert "does not decode" in report[bad]["detail"] and "rev" in report[bad]["detail"], report[bad]
    rc, report, st = verify(s, s.db, "--repair")
    assert rc == 3 and {k: (v["drift"], v["path"]) for k, v in report.items()} == {**still, **odd}, report
    assert report[emptied].get("repair") == "written", report[emptied]
    assert "repair" not in report[bad], report[bad]
    assert raw(s.db)[bad] == bad_raw
    rc, report, st = verify(s, s.db)
    assert rc == 3 and {k: (v["drift"], v["path"]) for k, v in report.items()} == {
        **still, bad: ("differs", "rev")}, report
    store_tool(s, s.db, "delete", bad)
    repaired = s.stored()
    assert h.normalize(repaired.pop(emptied)) == expected[emptied]
    assert repaired == {k: v for k, v in after.items() if k not in (bad, emptied)}
    # Usage: --from/--until select topic offsets, not lines of a file.
    r = subprocess.run([h.AGGREGATOR, "verify", "--input", first, "--from", "beginning"], capture_output=True,
                       text=True)
    assert r.returncode == 2 and "--from" in r.stderr, (r.returncode, r.stderr)
    r = subprocess.run([h.AGGREGATOR, "verify", "--from", "yesterday"], capture_output=True, text=True)
    assert r.returncode == 2 and "RFC 3339" in r.stderr, (r.returncode, r.stderr)

    # Repairing verifies while a live worker writes a fresh store from the beginning of the topic plus a
    # second part. A verify is concurrent when the worker committed offsets while the verify ran.
    live = s.db + "_live"
    h.run([h.tool("store_tool"), "drop", h.MONGO, live])
    second = s.path("second.jsonl")
    with open(second, "w") as f:
        f.writelines(h.renamed_commands(SECOND, "second-"))
    producer = s.produce_async(second, rate=2000)
    w = s.start_worker("live-2", [("store.database", live), ("batch.max_aggregates", "20")])
    concurrent = runs = 0
    # Until one verify was shown concurrent (a deadline, not a count): if the
    # worker got through the second part while no verify ran, it is
    # produced again, redeliveries that change no document.
    deadline = time.time() + 300
    while producer.poll() is None or runs < 2 or (concurrent == 0 and time.time() < deadline):
        if producer.poll() is not None and runs >= 2:
            assert producer.wait() == 0
            producer = s.produce_async(second, rate=2000)
        before_c = s.committed_total("live-2") or 0
        rc, report, st = verify(s, live, "--repair")
        runs += 1
        assert w.poll() is None, s.worker_log(w)[-3000:]
        if (s.committed_total("live-2") or 0) > before_c:
            concurrent += 1
        assert not any(l["drift"] == "differs" for l in report.values()), report
        assert not any(l.get("repair") == "failed" for l in report.values()), report
    assert producer.wait(600) == 0
    h.log(f"{concurrent} of {runs} repairing verifies overlapped live writes")
    assert concurrent > 0, "no verify ran while the live worker wrote"
    s.wait_committed("live-2", alive=[w])
    rc, report, st = verify(s, live)
    assert rc == 0 and not report, report
    s.stop_worker(w)
    expected_both, _ = s.expected(s.concat("both.jsonl", [first, second]))
    h.assert_same_documents(expected_both, stored_in(live))
    h.run([h.tool("store_tool"), "drop", h.MONGO, live])


def raw(db):
    """The stored documents as they are, undecoded (store_tool raw)."""
    out = h.run([h.tool("store_tool"), "raw", h.MONGO, db, h.COLLECTION])
    return {d["_id"]: d for d in map(json.loads, out.splitlines())}


def stored_in(db):
    out = h.run([h.tool("store_tool"), "dump", h.MONGO, db, h.COLLECTION])
    return {d["_id"]: d for d in map(json.loads, out.splitlines())}


if __name__ == "__main__":
    h.main(scenario, "verify")
