#!/usr/bin/env python3
"""Backfill (docs/CLI.md): `aggregator replay` from the topics.

- A replay of 200,000 commands into an empty store equals replay --input.
- A replay over a store that is up to date writes nothing (no rev changes).
- A replay --from a time applies only what came after it.
- Replays while the live worker writes (shown to overlap) end in the same documents.
- The live group's committed offsets are unchanged by a replay.
"""
import json
import os
import re
import subprocess
import time

import harness as h


def replay_args(s, db, *args):
    sets = s.settings("unused", [("store.database", db), ("batch.max_commands", "50000"),
                                 ("batch.max_aggregates", "2000")])
    return [h.AGGREGATOR, "replay", *sets, *args]


# How long one replay may run before the test gives up on it (the 200,000
# commands take well under a minute on an idle 2-core machine).
REPLAY_DEADLINE_S = float(os.environ.get("AGG_TEST_REPLAY_DEADLINE_S", "600"))


def start_replay(s, db, *args):
    """Starts a replay; its stderr goes to a file of the scenario (a pipe nobody reads could fill and block it).
    The process records what it is expected to do, for wait_replay's messages."""
    n = len(s.procs)
    errpath = s.path(f"replay-{n}.err")
    source = args[args.index("--input") + 1] if "--input" in args else None
    with open(errpath, "w") as errf:
        p = subprocess.Popen(replay_args(s, db, *args), stdout=subprocess.DEVNULL, stderr=errf)
    p.errpath = errpath
    p.t0 = time.time()
    p.expect = (f"exit 0 after reading {source}" if source else
                f"exit 0 after reading {s.topic} to its end offsets (then {sum(s.end_offsets().values())} messages)")
    s.procs.append(p)
    return p


def replay_stderr(p):
    with open(p.errpath) as f:
        return f.read()


def wait_replay(p):
    """Waits for replay p to exit, up to REPLAY_DEADLINE_S; fails saying what was expected and what was seen."""
    h.wait_until(lambda: p.poll() is not None, REPLAY_DEADLINE_S,
                 lambda: f"replay still running after {time.time() - p.t0:.0f}s (deadline {REPLAY_DEADLINE_S:.0f}s): "
                         f"expected {p.expect}; its stderr ends:\n{replay_stderr(p)[-2000:]}", interval=0.2)
    err = replay_stderr(p)
    assert p.returncode == 0, f"replay exited {p.returncode} after {time.time() - p.t0:.0f}s: expected {p.expect}; " \
                              f"its stderr ends:\n{err[-3000:]}"
    return err


def replay(s, db, *args):
    err = wait_replay(start_replay(s, db, *args))
    # log.format = json (the harness's): the summary is a log line with the counts as fields
    lines = [json.loads(l) for l in err.splitlines() if l.startswith("{")]
    sums = [l for l in lines if l["msg"] == "replay: summary"]
    assert len(sums) == 1, f"not one replay summary line in its stderr:\n{err[-2000:]}"
    assert isinstance(sums[0]["seconds"], (int, float)), sums[0]
    return {k: sums[0][k] for k in ("read", "applied", "stale", "rejected", "aggregates")}


def stored(db):
    out = h.run([h.tool("store_tool"), "dump", h.MONGO, db, h.COLLECTION])
    return {d["_id"]: d for d in map(json.loads, out.splitlines())}


SECOND = ["--seed", "67", "--count", "20000", "--assignments", "30", "--students", "30", "--invalid-rate", "0",
          "--duplicate-rate", "0.05", "--order", "shuffle"]
SLICE = 2000


def scenario(s):
    first = s.generate("--seed", "66", "--count", "200000", "--assignments", "40", "--students", "30",
                       "--invalid-rate", "0.005", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(first)
    s.produce(first)

    # Into an empty store.
    t0 = time.time()
    st = replay(s, s.db)
    h.log(f"replay of 200,000 commands into the store: {time.time() - t0:.1f}s {st}")
    lines = sum(1 for _ in open(first, "rb"))
    assert lines >= 200000 and st["read"] == lines, (lines, st)
    h.assert_same_documents(expected, s.stored())

    # Again over the up-to-date store: nothing written, no rev moves.
    before = {k: (d["rev"], d["updatedAt"]) for k, d in s.stored().items()}
    st = replay(s, s.db)
    assert st["aggregates"] == 0, st
    after = {k: (d["rev"], d["updatedAt"]) for k, d in s.stored().items()}
    assert before == after

    # The live worker commits its group's offsets; a replay does not move them.
    w = s.start_worker("live")
    s.wait_committed("live", alive=[w])
    s.stop_worker(w)
    committed = s.committed("live")
    replay(s, s.db)
    assert s.committed("live") == committed

    # A second part arrives after a known time, while the live worker runs;
    # replays run at the same time into the same store. The cut is a whole
    # second after everything produced so far; the second part is produced
    # once the clock has passed it (message timestamps are the producer's).
    cut_s = int(time.time()) + 1
    cut = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(cut_s)) + ".000Z"
    second = s.path("second.jsonl")
    lines = h.renamed_commands(SECOND, "second-")
    slices = [lines[i:i + SLICE] for i in range(0, len(lines), SLICE)]
    with open(second, "w") as f:
        f.writelines(l for sl in slices for l in sl)
    w = s.start_worker("live")
    s.wait_joined(w)
    h.wait_until(lambda: time.time() > cut_s + 0.01, 5, "the clock did not pass the cut")
    # A replay is concurrent when the live worker has merged a slice
    # produced after the replay was started and made it durable (its group's
    # committed offsets pass the slice: written, or found already stored by
    # the replay) while the replay process still runs. A replay that ends
    # first proves nothing: another one starts, until one was shown
    # concurrent. Which of the two writes a slice first is up to them.
    concurrent = 0
    replay_proc = None
    # Until one replay was shown concurrent (a deadline, not a count): once
    # the slices are used up they are produced again, redeliveries that
    # change no document (the merge is idempotent).
    deadline = time.time() + 180
    order = list(enumerate(slices))
    k = 0
    produced = 0  # lines produced after the cut, redeliveries included: what `--from cut` reads
    while k < len(slices) or (concurrent == 0 and time.time() < deadline):
        i, sl = order[k % len(slices)]
        k += 1
        if replay_proc is None:
            replay_proc = start_replay(s, s.db)
        path = s.path(f"slice-{i}-{k}.jsonl")
        with open(path, "w") as f:
            f.writelines(sl)
        s.produce(path)
        produced += len(sl)
        end = sum(s.end_offsets().values())

        def live_wrote():
            assert w.poll() is None, "the live worker died"
            c = s.committed_total("live")
            return c is not None and c >= end

        h.wait_until(live_wrote, 180, "the live worker did not commit the slice")
        if replay_proc.poll() is None:
            concurrent += 1
        else:
            wait_replay(replay_proc)
            replay_proc = None
    if replay_proc is not None:
        wait_replay(replay_proc)
    h.log(f"{concurrent} of {k} slices written by the live worker while a replay ran")
    assert concurrent > 0, "no replay ran while the live worker wrote"
    replay(s, s.db)
    s.wait_committed("live", alive=[w])
    s.stop_worker(w)
    expected_both, _ = s.expected(s.concat("both.jsonl", [first, second]))
    h.assert_same_documents(expected_both, s.stored())

    # --input into the store (no broker): same documents, rejects as in file mode.
    fresh = s.db + "_input"
    h.run([h.tool("store_tool"), "drop", h.MONGO, fresh])
    rej = s.path("input-rejects.jsonl")
    st = replay(s, fresh, "--input", first, "--rejects", rej)
    got = stored(fresh)
    h.run([h.tool("store_tool"), "drop", h.MONGO, fresh])
    h.assert_same_documents(expected, got)
    _, want_rejects = s.expected(first)
    assert [json.loads(l) for l in open(rej)] == want_rejects
    assert st["rejected"] == len(want_rejects) > 0

    # --from the cut: only the second part, into a fresh database.
    fresh = s.db + "_from"
    h.run([h.tool("store_tool"), "drop", h.MONGO, fresh])
    st = replay(s, fresh, "--from", cut)
    assert st["read"] == produced, (st, produced)
    expected_second, _ = s.expected(second)
    got = stored(fresh)
    h.run([h.tool("store_tool"), "drop", h.MONGO, fresh])
    h.assert_same_documents(expected_second, got)


if __name__ == "__main__":
    h.main(scenario, "replay")
