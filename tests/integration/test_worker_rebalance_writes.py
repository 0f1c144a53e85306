#!/usr/bin/env python3
"""A routine rebalance under a steady stream leaves no worker unable to write
(docs/GUARANTEES.md, "The writer makes progress").

Two workers of one group consume a stream of 400 assignments, with invalid
lines and redeliveries, on a topic of 12 partitions. While the stream
flows a third worker joins, and once the group has split the partitions
three ways the second one is stopped with SIGTERM: the first worker then
gets partitions back that it held before the join, whose aggregates the
third worker has written since (copies kept in memory would conflict).
Every other round the second worker is killed (SIGKILL) instead, so its
partitions are re-read uncommitted.

Each round must end with:
- the group's offsets at the topic's end (every worker kept writing: a
  stalled writer never commits);
- no worker reporting a stall (batch.stall_timeout_ms is 30 s here);
- every living worker stopping with exit 0 (a stall holds unwritten changes,
  which a stop cannot write within shutdown.timeout_ms: exit 1);
- the store equal to `aggregator replay --input` of the stream.

It runs on FerretDB (whose bulk replies do not account for every write once
one conflicts: the item-by-item resolution) and on mongo-java-server
(MongoDB's replies): one round on each, the first with SIGTERM, the second
with SIGKILL; AGG_REBALANCE_ROUNDS repeats them. Every step waits for the event it
needs, never for a time."""
import os
import time

import harness as h

PARTITIONS = 12
MJS = os.environ.get("AGG_MJS_URI", "mongodb://127.0.0.1:27019")
COUNT = 60000
# config/development.ini's batching and write concern, and the default retry bound, as an operator runs it
SETTINGS = [("batch.max_commands", "1000"), ("batch.max_aggregates", "500"), ("retry.backoff_ms", "100"),
            ("retry.backoff_max_ms", "10000"), ("store.write_concern", "majority"),
            ("batch.stall_timeout_ms", "30000")]
ports_seen = []  # the metrics ports of the round's workers, for a failure's report
ROUNDS = int(os.environ.get("AGG_REBALANCE_ROUNDS", "1"))  # repeated by hand: AGG_REBALANCE_ROUNDS=5


def scenario(s, seed, kill):
    stream = s.generate("--seed", str(seed), "--count", str(COUNT), "--assignments", "400", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    ports = ports_seen
    ports.clear()

    def start():
        port = h.free_port()
        ports.append(port)
        return s.start_worker("g1", SETTINGS + [("metrics.listen", f"127.0.0.1:{port}")])


    def split_among(ws):
        return lambda: s.split_among(ws)

    producer = s.produce_async(stream, rate=2000)
    first, second = start(), start()
    h.wait_until(split_among([first, second]), 120, "the two workers never split the partitions")
    lines = sum(1 for _ in open(stream, "rb"))

    def committed_beyond(share):
        def done():
            s.assert_alive(first)
            return (s.committed_total("g1") or 0) >= share * lines or producer.poll() is not None
        return done

    h.wait_until(committed_beyond(1 / 3), 240, "a third of the stream was never committed before the join")
    third = start()
    h.wait_until(split_among([first, second, third]), 120, "the group never split the partitions three ways")
    h.wait_until(committed_beyond(2 / 3), 240, "two thirds of the stream were never committed before the leave")
    before = set(s.holdings(first))
    if kill:
        second.kill()
        second.wait()
    else:
        s.stop_worker(second)
    h.wait_until(split_among([first, third]), 120, "the group never split the partitions after the leave")
    regained = set(s.holdings(first)) - before
    assert producer.wait(300) == 0, "the producer failed"
    h.log(f"the first worker got back {len(regained)} partitions")
    s.wait_committed("g1", timeout=240, alive=[first, third])
    for w in (first, third):
        s.stop_worker(w)
        stalled = s.log_events(w, "writer stalled: unwritten changes and no write landed")
        assert not stalled, f"a worker stalled: {stalled[0]}"
    conflicts = sum(e.get("conflicts", 0) for w in (first, third) for e in s.log_events(w, "stopped"))
    h.log(f"{h.MONGO}: converged, {conflicts} conflicts resolved")
    h.assert_same_documents(expected, s.stored())


def main():
    t0 = time.time()
    stores = [h.MONGO, MJS]
    for r in range(ROUNDS):
        for i, uri in enumerate(stores):
            h.MONGO = uri
            with h.scenario("rebalance-writes", PARTITIONS) as s:
                scenario(s, 4800 + 10 * r + i, kill=(r + i) % 2 == 1)
    h.log(f"rebalance-writes: passed in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
