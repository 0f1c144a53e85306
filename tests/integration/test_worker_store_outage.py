#!/usr/bin/env python3
"""Scenario 4: the store is stopped for 20 s mid-stream and started again. The
worker neither crashes nor commits anything that is not durable, nor loses
anything, and ends with the same documents.

The steps wait for events, not for times: the store is stopped once the
worker has done durable work of its own while the producer still runs; the
outage counts from the worker's first logged write failure, and lasts at
least OUTAGE_S (the length of the fault, not a guess at how long something
takes). While the store is down, every offset the group commits must be that
of an invalid command (acknowledged by the dead-letter topic, which does not
need the store): checked against the topic's content."""
import os
import subprocess
import time

import harness as h

STACK = os.path.join(h.SRC, "scripts", "stack")
OUTAGE_S = 20
FAILED = "store write failed, retrying"


def scenario(s):
    stream = s.generate("--seed", "44", "--count", "12000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, rejects = s.expected(stream)
    lines = open(stream, "rb").read().split(b"\n")
    invalid = {lines[r["line"] - 1].hex() for r in rejects}
    # The first quarter before the worker has done durable work, the rest
    # from then on: so the fault comes mid-stream by construction.
    head, tail = s.split(stream, 0.25)
    producer = s.produce_async(head, rate=300)
    w = s.start_worker("g1", [("batch.max_commands", "500")])

    def worked():
        assert w.poll() is None, "the worker died"
        c = s.committed_total("g1")
        return c is not None and c > 0

    h.wait_until(worked, 120, "the worker committed nothing before the outage")
    assert producer.wait(120) == 0
    producer = s.produce_async(tail, rate=300)
    subprocess.run([STACK, "mongo-stop"], check=True)
    try:
        failures_before = len(s.log_events(w, FAILED))

        def noticed():
            assert w.poll() is None, "the worker must survive a store outage"
            return len(s.log_events(w, FAILED)) > failures_before

        h.wait_until(noticed, 120, "the worker never logged a failed store write")
        t_noticed = time.time()
        held = s.committed("g1")

        def outage_over():
            assert w.poll() is None, "the worker must survive a store outage"
            return time.time() - t_noticed >= OUTAGE_S

        h.wait_until(outage_over, OUTAGE_S + 60, "the outage outlived its own deadline", interval=1)
        during = s.committed("g1")
    finally:
        subprocess.run([STACK, "mongo-start"], check=True)

    # Offsets that moved while the store was down belong to rejects only.
    moved = {p: (max(held.get(p, 0), 0), o) for p, o in during.items() if o > max(held.get(p, 0), 0)}
    if moved:
        by_offset = {(m["partition"], m["offset"]): m["value_hex"] for m in s.topic_messages()}
        for p, (lo, hi) in moved.items():
            for off in range(lo, hi):
                assert by_offset[(p, off)] in invalid, f"a valid command (partition {p}, offset {off}) was " \
                                                       f"committed while the store was down"
    h.log(f"during the outage: committed moved on {len(moved)} partition(s), over rejects only")
    assert producer.wait(120) == 0
    assert sum(max(o, 0) for o in during.values()) < sum(s.end_offsets().values()), \
        "everything was committed although the store was down"
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    caps = [e.get("retry_in_ms", 0) for e in s.log_events(w, FAILED)]
    assert max(caps) <= 1000, f"retry backoff beyond retry.backoff_max_ms: {caps}"
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "outage")
