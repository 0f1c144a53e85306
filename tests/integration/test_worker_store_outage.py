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
# exclusive: stops the stack's FerretDB for 20 s
import time

import harness as h

OUTAGE_S = 20


def scenario(s):
    stream, expected, rejects, w, producer = h.start_midstream(s, 44)
    lines = open(stream, "rb").read().split(b"\n")
    invalid = {lines[r["line"] - 1].hex() for r in rejects}
    with h.stopped("mongo"):
        failures_before = len(s.log_events(w, h.STORE_FAILED))

        def noticed():
            assert w.poll() is None, "the worker must survive a store outage"
            return len(s.log_events(w, h.STORE_FAILED)) > failures_before

        h.wait_until(noticed, 120, "the worker never logged a failed store write")
        t_noticed = time.time()
        held = s.committed("g1")

        def outage_over():
            assert w.poll() is None, "the worker must survive a store outage"
            return time.time() - t_noticed >= OUTAGE_S

        h.wait_until(outage_over, OUTAGE_S + 60, "the outage outlived its own deadline", interval=1)
        during = s.committed("g1")

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
    caps = [e.get("retry_in_ms", 0) for e in s.log_events(w, h.STORE_FAILED)]
    assert max(caps) <= 1000, f"retry backoff beyond retry.backoff_max_ms: {caps}"
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "outage")
