#!/usr/bin/env python3
"""Scenario 2: kill -9 of the worker at random moments of its work, restarted
each time; the final documents are those of a clean run (replay --input).

Each kill is shown to land on a worker that had joined the group and done
durable work of its own: the stream arrives in chunks, each produced only
once the new worker holds its partitions (its log says so), and the kill
waits until the group's committed offsets have moved past where they stood
when the chunk started, by a random share of it (the only live member moved
them). So on a busy machine a slow join only makes the test slower, never
turns a kill of an idle or not-yet-joined worker into a pass."""
import random

import harness as h

KILLS = 6


def scenario(s):
    stream = s.generate("--seed", "22", "--count", "12000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    parts = [(p, sum(1 for _ in open(p, "rb"))) for p in h.chunks(s, stream, KILLS + 1)]
    rng = random.Random(22)
    extra = [("batch.max_commands", "500")]
    producers = []
    in_flight = 0  # kills that left part of the stream not yet committed
    w = s.start_worker("g1", extra)
    for k in range(KILLS):
        s.wait_joined(w)
        before = None

        def read_before():
            nonlocal before
            before = s.committed_total("g1")
            return before is not None

        h.wait_until(read_before, 60, "the group's committed offsets could not be read")
        path, n = parts[k]
        producers.append(s.produce_async(path, rate=1000))
        target = before + rng.randint(1, max(1, n * 6 // 10))

        def worked():
            assert w.poll() is None, f"worker {k} died by itself"
            c = s.committed_total("g1")
            return c is not None and c >= target

        h.wait_until(worked, 180, lambda: f"worker {k} did not commit {target - before} messages of its own "
                                          f"(committed {s.committed_total('g1')}, from {before})")
        w.kill()  # SIGKILL: no flush, no commit
        w.wait()
        c, end = s.committed_total("g1"), sum(s.end_offsets().values())
        if c is not None and c < end:
            in_flight += 1
        h.log(f"kill {k + 1}: after the worker joined and committed {c - before if c is not None else '?'} "
              f"messages of its own; committed {c} of {end} produced")
        w = s.start_worker("g1", extra)
    producers.append(s.produce_async(parts[KILLS][0], rate=1000))
    for p in producers:
        assert p.wait(120) == 0, "a producer failed"
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    h.log(f"killed {KILLS} times, {in_flight} of them with produced messages not yet committed")
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "kill")
