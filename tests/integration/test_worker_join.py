#!/usr/bin/env python3
"""Workers joining a busy group hand their partitions over written and
committed (docs/GUARANTEES.md, Rebalances): a worker consumes a steady
stream; a second joins, then a third. With the worker's group protocol (the
default, `consumer`: only the partitions that move are revoked; or classic
eager `roundrobin`, where every member gives all its partitions up), a
revocation writes and commits what the member holds first, so:

- no worker's log has "partitions lost";
- no command is read twice: the next owner of a partition starts at the
  offset after the last command its previous owner read. The bound is
  zero, checked as the sum of the workers' aggregator_commands_total (each
  counts the commands it merged or rejected while it owned their partition)
  against the stream. The one exception is the revocation's own bound: a
  store so slow that a flush outlasts its 30 s hands the partitions over
  uncommitted, and says so ("handed over with unwritten changes"); their
  next owner then re-reads them, as after a crash (safe: the documents
  below prove it), so on such a machine only that is logged;
- the stored documents equal both oracles (`aggregator replay --input` and
  the independent reference merge) of the stream.

Every step waits for the event it needs (log lines, committed offsets),
never for a time."""
import harness as h

PARTITIONS = 6
COUNT = 24000


def scenario(s):
    stream = s.generate("--seed", "61", "--count", str(COUNT), "--assignments", "60", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    lines = sum(1 for _ in open(stream, "rb"))
    expected, reference = s.expected_and_reference(stream)
    assert expected == reference, "replay --input and the reference merge disagree"
    ports = []

    def start():
        port = h.free_port()
        ports.append(port)
        return s.start_worker("g1", [("batch.max_commands", "500"), ("metrics.listen", f"127.0.0.1:{port}")])

    producer = s.produce_async(stream, rate=1200)
    workers = [start()]
    s.wait_joined(workers[0])

    def committed_some():
        s.assert_alive(workers[0], "before the joins")
        c = s.committed_total("g1")
        return c is not None and c > 0

    h.wait_until(committed_some, 120, "the first worker committed nothing")

    def settled():
        return s.split_among(workers, "during a join")

    # Two joins, each while the stream is flowing: the incumbents hold read,
    # uncommitted commands when the rebalance starts.
    for _ in range(2):
        before = s.committed_total("g1")
        workers.append(start())
        h.wait_until(settled, 120, lambda: "the group never split the partitions: "
                                           + ", ".join(str(sorted(s.holdings(w))) for w in workers))

        def moved_on():
            s.assert_alive(workers[-1], "after its join")
            c = s.committed_total("g1")
            return c is not None and (c > before or producer.poll() is not None)

        h.wait_until(moved_on, 120, "nothing was committed after the join")
    assert producer.wait(300) == 0, "the producer failed"
    s.wait_committed("g1", alive=workers)

    revoked = len(s.log_events(workers[0], "partitions revoked"))
    assert revoked >= 2, f"the first worker gave partitions up {revoked} times over two joins"
    late = 0
    for i, w in enumerate(workers):
        lost = s.log_events(w, "partitions lost")
        assert not lost, f"worker {i} lost partitions: {lost}"
        late += len(s.log_events(w, "revoked partitions handed over with unwritten changes; they will be re-read"))
    read = [int(h.metric(p, "aggregator_commands_total")) for p in ports]
    h.log(f"commands read per worker {read}, stream {lines}")
    if late:
        h.log(f"{late} revocation(s) reached the drain bound: their partitions were re-read")
    else:
        assert sum(read) == lines, (f"the workers read {sum(read)} commands of a stream of {lines}: "
                                    f"{sum(read) - lines} read again after the joins")
    for w in reversed(workers):
        s.stop_worker(w)
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "join")
