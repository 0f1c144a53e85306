#!/usr/bin/env python3
"""Scenario 5: two workers in different groups consume the same topic, so both
write every aggregate. The documents converge to the same result, conflicts
are counted, and no update is lost."""
import re

import harness as h


def scenario(s):
    stream = s.generate("--seed", "55", "--count", "8000", "--assignments", "30", "--students", "30",
                        "--invalid-rate", "0.0", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    extra = [("batch.max_commands", "300"), ("batch.linger_ms", "20")]
    w1 = s.start_worker("ga", extra)
    w2 = s.start_worker("gb", extra)
    s.produce(stream)
    s.wait_committed("ga", alive=[w1, w2])
    s.wait_committed("gb", alive=[w1, w2])
    s.stop_worker(w1)
    s.stop_worker(w2)
    conflicts = sum(int(m) for w in (w1, w2) for m in re.findall(r'"conflicts":(\d+)', s.worker_log(w)))
    h.log(f"conflicts counted: {conflicts}")
    assert conflicts > 0, "two writers of the same aggregates must have met conflicts"
    h.assert_same_documents(expected, s.stored())
    revs = [d["rev"] for d in s.stored_raw()]
    assert min(revs) >= 1


if __name__ == "__main__":
    h.main(scenario, "two-groups")
