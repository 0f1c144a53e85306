#!/usr/bin/env python3
"""Scenario 3: two workers in one group on a 6-partition topic; one is killed
mid-run, the other takes its partitions over; same documents."""
import time

import harness as h


def scenario(s):
    stream = s.generate("--seed", "33", "--count", "12000", "--assignments", "48", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    producer = s.produce_async(stream, rate=2000)
    extra = [("batch.max_commands", "500")]
    w1 = s.start_worker("g1", extra)
    w2 = s.start_worker("g1", extra)
    # Kill w2 only once it holds partitions (and has worked on them a little):
    # otherwise there is nothing to take over.
    def w2_assigned():
        assert w1.poll() is None and w2.poll() is None, "a worker died"
        return "partitions assigned" in s.worker_log(w2)

    h.wait_until(w2_assigned, 60, "the second worker never got partitions")
    time.sleep(1.5)
    w2.kill()
    w2.wait()
    assert producer.wait(120) == 0
    s.wait_committed("g1", alive=[w1])
    s.stop_worker(w1)
    log = s.worker_log(w1)
    assert log.count("partitions assigned") >= 2, "the survivor should have been assigned the killed worker's partitions"
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "group")
