#!/usr/bin/env python3
"""Broker restart (issue 16): Kafka is stopped for at least 20 s mid-stream,
with the worker and a producer running, and started again on the same data
(scripts/stack kafka-stop, kafka-start). Nothing is lost: the documents equal
those of replay --input, every invalid command is in the dead-letter topic,
and the group's committed offsets reach the end.

Waits are on events: the broker is stopped once the worker has committed work
of its own while the producer still runs; the outage lasts OUTAGE_S from the
moment the broker process is gone (the length of the fault); afterwards the
test waits for the producer to deliver everything and the group to catch up."""
import os
import subprocess
import time

import harness as h

STACK = os.path.join(h.SRC, "scripts", "stack")
OUTAGE_S = 20


def scenario(s):
    stream = s.generate("--seed", "99", "--count", "12000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, rejects = s.expected(stream)
    # The first quarter before the worker has done durable work, the rest
    # from then on: so the fault comes mid-stream by construction.
    head, tail = s.split(stream, 0.25)
    producer = s.produce_async(head, rate=300)
    w = s.start_worker("g1", [("batch.max_commands", "500")])

    def worked():
        assert w.poll() is None, "the worker died"
        c = s.committed_total("g1")
        return c is not None and c > 0

    h.wait_until(worked, 120, "the worker committed nothing before the broker stopped")
    assert producer.wait(120) == 0
    producer = s.produce_async(tail, rate=300)
    before = s.committed("g1")
    subprocess.run([STACK, "kafka-stop"], check=True)
    try:
        t_down = time.time()

        def outage_over():
            assert w.poll() is None, f"the worker died while the broker was down (exit {w.returncode})"
            return time.time() - t_down >= OUTAGE_S

        h.wait_until(outage_over, OUTAGE_S + 60, "the outage outlived its own deadline", interval=1)
        assert producer.poll() is None, "the producer gave up while the broker was down"
    finally:
        subprocess.run([STACK, "kafka-start"], check=True)
    t_up = time.time()
    assert producer.wait(300) == 0, "the producer could not deliver everything after the restart"
    s.wait_committed("g1", timeout=300, alive=[w])
    h.log(f"caught up {time.time() - t_up:.1f}s after the broker came back (producer included)")
    after = s.committed("g1")
    assert all(after[p] >= o for p, o in before.items()), f"a committed offset went back: {before} -> {after}"
    s.stop_worker(w)
    h.assert_same_documents(expected, s.stored())

    lines = open(stream, "rb").read().split(b"\n")
    want = {(lines[r["line"] - 1].hex(), r["code"]) for r in rejects}
    got = {(m["value_hex"], m["headers"]["x-error-code"]) for m in s.dlq_messages()}
    assert got == want, f"dead-letter topic differs: missing {len(want - got)}, unexpected {len(got - want)}"
    down = [l for l in s.worker_log(w).splitlines() if '"error":"_ALL_BROKERS_DOWN"' in l]
    assert down, "the worker never logged that the broker was down"


if __name__ == "__main__":
    h.main(scenario, "broker-restart")
