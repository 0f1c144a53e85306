#!/usr/bin/env python3
"""Broker restart: Kafka is stopped for at least 20 s mid-stream,
with the worker and a producer running, and started again on the same data
(scripts/stack kafka-stop, kafka-start). Nothing is lost: the documents equal
those of replay --input, every invalid command is in the dead-letter topic,
and the group's committed offsets reach the end.

Waits are on events: the broker is stopped once the worker has committed work
of its own while the producer still runs; the outage lasts OUTAGE_S from the
moment the broker process is gone (the length of the fault); afterwards the
test waits for the producer to deliver everything and the group to catch up."""
# exclusive: stops the stack's Kafka broker for 20 s
import time

import harness as h

OUTAGE_S = 20


def scenario(s):
    stream, expected, rejects, w, producer = h.start_midstream(s, 99)
    before = s.committed("g1")
    with h.stopped("kafka"):
        t_down = time.time()

        def outage_over():
            assert w.poll() is None, f"the worker died while the broker was down (exit {w.returncode})"
            return time.time() - t_down >= OUTAGE_S

        h.wait_until(outage_over, OUTAGE_S + 60, "the outage outlived its own deadline", interval=1)
        assert producer.poll() is None, "the producer gave up while the broker was down"
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
    # The outage is in the log: librdkafka's "all brokers are down", or, where it
    # does not count the broker it bootstrapped from among them (2.x), each
    # refused connection to it, with the error's name.
    down = [l for l in s.worker_log(w).splitlines()
            if '"error":"_ALL_BROKERS_DOWN"' in l or ('"error":"_TRANSPORT"' in l and "Connection refused" in l)]
    assert down, "the worker never logged that the broker was down"


if __name__ == "__main__":
    h.main(scenario, "broker-restart")
