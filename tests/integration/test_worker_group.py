#!/usr/bin/env python3
"""Scenario 3: two workers in one group on a 6-partition topic; one is killed
(SIGKILL) while it holds partitions it has worked on, the other takes them
over; same documents.

Every step waits for the event it needs, read from the workers' own logs
(each rebalance line names the partitions that moved) and from the group's
committed offsets, never for a time: on a busy machine the second worker may
join late, or take everything before the first has joined."""
import harness as h

PARTITIONS = 6


def scenario(s):
    stream = s.generate("--seed", "33", "--count", "12000", "--assignments", "48", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    first, second = s.split(stream, 0.5)
    extra = [("batch.max_commands", "500")]
    w1 = s.start_worker("g1", extra)
    w2 = s.start_worker("g1", extra)
    everything = {f"{s.topic}:{p}" for p in range(PARTITIONS)}

    def alive():
        assert w1.poll() is None and w2.poll() is None, "a worker died"

    # 1. The group has settled with both members holding partitions.
    def shared():
        alive()
        a, b = s.holdings(w1), s.holdings(w2)
        return a and b and not (a & b) and (a | b) == everything

    h.wait_until(shared, 90, lambda: f"the group never split the partitions: w1 {sorted(s.holdings(w1))}, "
                                     f"w2 {sorted(s.holdings(w2))}")
    # 2. The second worker works on its partitions: the topic was empty until
    # now, so a committed offset on one of them is its own work.
    s.produce(first)

    def w2_worked():
        alive()
        mine = {int(n.rsplit(":", 1)[1]) for n in s.holdings(w2)}
        try:
            c = s.committed("g1")
        except RuntimeError:
            return False
        return any(c.get(p, -1) > 0 for p in mine)

    h.wait_until(w2_worked, 90, "the second worker committed nothing on its partitions")
    taken = s.holdings(w2)
    assert taken, "the second worker lost its partitions before the kill"
    # 3. Kill it; the rest of the stream arrives while the survivor takes over.
    w2.kill()
    w2.wait()
    s.produce(second)

    def survivor_holds_all():
        assert w1.poll() is None, "the survivor died"
        return s.holdings(w1) == everything

    h.wait_until(survivor_holds_all, 120, lambda: f"the survivor holds {sorted(s.holdings(w1))}, "
                                                  f"not the killed worker's {sorted(taken)} too")
    s.wait_committed("g1", alive=[w1])
    s.stop_worker(w1)
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "group")
