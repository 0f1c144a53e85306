#!/usr/bin/env python3
"""Scenario 4: the store is stopped for 20 s mid-run and started again. The
worker neither crashes nor loses anything and ends with the same documents."""
import os
import subprocess
import time

import harness as h

STACK = os.path.join(h.SRC, "scripts", "stack")


def scenario(s):
    stream = s.generate("--seed", "44", "--count", "12000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    producer = s.produce_async(stream, rate=400)
    w = s.start_worker("g1", [("batch.max_commands", "500")])
    time.sleep(3)
    subprocess.run([STACK, "mongo-stop"], check=True)
    try:
        time.sleep(20)
        assert w.poll() is None, "the worker must survive a store outage"
    finally:
        subprocess.run([STACK, "mongo-start"], check=True)
    assert producer.wait(120) == 0
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    assert "store write failed" in s.worker_log(w), "the outage should have been noticed"
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "outage")
