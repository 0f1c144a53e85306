#!/usr/bin/env python3
"""Scenario: the pipelined writer on the real stack. Under a steady stream a
flush is in flight nearly all the time (the writer thread starts the next as
soon as one lands), so every event here lands on one with high probability:

1. a second member joins the group: the first waits for the flush in flight,
   writes what it holds and commits before giving partitions up;
2. the first member is killed (SIGKILL) mid-stream and restarted;
3. the store stops for a while (the last quarter of the stream is produced
   while it is down) and comes back: the workers keep consuming
   up to batch.max_pending_bytes, report not-ready, and resume by themselves;
4. SIGTERM: each worker exits 0 with everything committed.

The documents must equal a clean run's (replay --input), and the group must
have committed everything. Every step waits for the event it needs, read
from the workers' logs and the group's committed offsets."""
# exclusive: stops the stack's FerretDB
import harness as h

PARTITIONS = 6


def committed_any(s, group):
    try:
        return any(o > 0 for o in s.committed(group).values())
    except RuntimeError:
        return False


def scenario(s):
    stream = s.generate("--seed", "44", "--count", "16000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    extra = [("batch.max_commands", "500"), ("batch.max_pending_bytes", "1MiB")]
    # The last quarter is produced only once the store is down (step 3), so
    # that the workers have something to write during the outage however
    # fast they went through the rest.
    head, tail = s.split(stream, 0.75)
    producer = s.produce_async(head, rate=1500)
    w1 = s.start_worker("g1", extra)
    h.wait_until(lambda: committed_any(s, "g1"), 120, "the first worker committed nothing")

    # 1. A second member joins while the first is writing.
    w2 = s.start_worker("g1", extra)
    everything = {f"{s.topic}:{p}" for p in range(PARTITIONS)}

    def shared():
        assert w1.poll() is None and w2.poll() is None, "a worker died"
        a, b = s.holdings(w1), s.holdings(w2)
        return a and b and not (a & b) and (a | b) == everything

    h.wait_until(shared, 120, lambda: f"the group never split: w1 {sorted(s.holdings(w1))}, "
                                      f"w2 {sorted(s.holdings(w2))}")
    # Normally the revocation waited for the flush and handed over with
    # everything written. On a loaded machine a FerretDB flush can outlast
    # the 30 s drain bound: then the partitions go over uncommitted and are
    # re-read (safe; the documents below prove it), so this is only logged.
    clean = "handed over with unwritten changes" not in s.worker_log(w1)
    h.log(f"revocation during a flush: {'written and committed' if clean else 'drain bound reached, re-read'}")

    # 2. kill -9 of the first, restarted at once.
    w1.kill()
    w1.wait()
    w1 = s.start_worker("g1", extra)

    # 3. The store stops and comes back while the stream goes on.
    with h.stopped("mongo"):
        s.produce(tail)
        h.wait_until(lambda: "store write failed" in s.worker_log(w1) + s.worker_log(w2), 120,
                     "no worker noticed the store outage")

    assert producer.wait(300) == 0
    s.wait_committed("g1", timeout=300, alive=[w1, w2])
    # 4. SIGTERM: both exit 0.
    s.stop_worker(w2)
    s.stop_worker(w1)
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "pipeline")
