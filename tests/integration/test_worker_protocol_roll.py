#!/usr/bin/env python3
"""A rolling update that changes the group protocol (docs/OPERATIONS.md,
Upgrading and rolling back), with a rolling update's one pod of surge: each
old worker in turn is replaced (a new one started and holding partitions,
then the old one stopped with SIGTERM) while a steady stream flows. The
broker converts the group from one protocol to the other while it holds
members of both (group.consumer.migration.policy, bidirectional by default
in Kafka 4).

- Forward, classic to consumer: every new worker gets partitions while the
  old ones still run; no worker's log has "partitions lost"; nothing is read
  twice (the workers' consumed commands, from their "stopped" lines, sum to
  the stream).
- Back, consumer to classic: when the last consumer-protocol member leaves,
  the broker turns the group back into a classic one and the classic members
  lose their partitions once, uncommitted: what they had not committed is
  read again (counted and logged). Every new worker still gets partitions.

Both end with every worker exiting 0 and the documents equal to `aggregator
replay --input` of the stream. Every step waits for the event it needs (log
lines, committed offsets), never for a time."""
import harness as h

COUNT = 30000
RATE = 1000


def consumed(s, w):
    e = s.log_events(w, "stopped")
    assert e, f"no 'stopped' line:\n{s.worker_log(w)[-2000:]}"
    return int(e[-1]["applied"]) + int(e[-1]["stale"])


def roll(s, name, old, new):
    """Two workers of protocol old replaced one at a time by two of protocol new; returns the workers and
    the commands they consumed beyond the stream."""
    topic = s.create_topic(name)
    stream = s.generate("--seed", "47", "--count", str(COUNT), "--assignments", "120", "--students", "30",
                        "--order", "time")
    expected, _ = s.expected(stream)
    producer = s.produce_async(stream, rate=RATE, topic=topic)
    group = f"g-{name}"

    def start(protocol):
        w = s.start_worker(group, [("kafka.group_protocol", protocol), ("kafka.topics", topic)])
        s.wait_joined(w, timeout=180)
        return w

    live = [start(old), start(old)]
    h.wait_until(lambda: (s.committed_total(group, topic) or 0) > 0, 120, f"the {old} group committed nothing")
    stopped = []
    for _ in range(2):
        assert producer.poll() is None, "the stream ended before the roll did: raise COUNT"
        live.append(start(new))
        stopped.append(live.pop(0))
        s.stop_worker(stopped[-1])
    assert producer.wait(600) == 0, "the producer failed"
    s.wait_committed(group, timeout=600, alive=live, topic=topic)
    for w in live:
        s.stop_worker(w)
    workers = stopped + live
    total = sum(consumed(s, w) for w in workers)
    assert total >= COUNT, f"the workers consumed {total} commands of a stream of {COUNT}"
    h.assert_same_documents(expected, s.stored())
    h.run([h.tool("store_tool"), "drop", h.MONGO, s.db])
    return workers, total - COUNT


def scenario(s):
    workers, again = roll(s, "forward", "classic", "consumer")
    for i, w in enumerate(workers):
        assert not s.log_events(w, "partitions lost"), f"worker {i} lost partitions:\n{s.worker_log(w)[-3000:]}"
    assert again == 0, f"{again} commands read twice rolling classic to consumer"
    h.log("forward: classic to consumer, nothing lost, nothing read twice")
    workers, again = roll(s, "back", "consumer", "classic")
    lost = sum(len(s.log_events(w, "partitions lost")) for w in workers)
    h.log(f"back: consumer to classic, {lost} losses of partitions, {again} commands read twice")


if __name__ == "__main__":
    h.main(scenario, "protocol-roll")
