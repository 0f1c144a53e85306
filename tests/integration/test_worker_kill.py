#!/usr/bin/env python3
"""Scenario 2: kill -9 of the worker at random moments, restarted each time;
the final documents are those of a clean run (replay --input)."""
import random
import time

import harness as h


def scenario(s):
    stream = s.generate("--seed", "22", "--count", "12000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    producer = s.produce_async(stream, rate=2000)
    rng = random.Random(22)
    kills = 0
    w = s.start_worker("g1", [("batch.max_commands", "500")])
    while kills < 6:
        time.sleep(rng.uniform(0.3, 1.5))
        w.kill()  # SIGKILL: no flush, no commit
        w.wait()
        kills += 1
        w = s.start_worker("g1", [("batch.max_commands", "500")])
    assert producer.wait(120) == 0
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    h.log(f"killed {kills} times")
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "kill")
