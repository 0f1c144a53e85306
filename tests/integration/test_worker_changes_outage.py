#!/usr/bin/env python3
"""The change topic alone fails while the worker runs (docs/CHANGES.md): its partitions refuse every write
(min.insync.replicas above the one replica the local broker has, so that acks=all cannot be met) while the
command topic, the dead-letter topic and the store work. The worker keeps writing the store, but holds its
commits (the group's offsets stay where they were), counts the failure, answers /readyz 503 and pages
(aggregator_change_events_oldest_pending_seconds grows, the alert's input). The topic takes writes again:
the events are delivered, /readyz returns to 200, the offsets commit to the end, and the change topic
folded by _id equals the store. Every wait is on a condition."""
import harness as h


def scenario(s):
    changes = s.create_topic("changes", 3)
    port = h.free_port()
    w = s.start_worker("g1", [("metrics.listen", f"127.0.0.1:{port}"), ("changes.topic", changes)])

    def alive():
        s.assert_alive(w)
        return True

    first = s.generate("--seed", "41", "--count", "1500", "--assignments", "30", "--students", "20")
    expected, _ = s.expected(first)
    head, tail = s.split(first, 0.5)
    s.produce(head)
    s.wait_committed("g1", alive=[w])
    h.wait_until(lambda: alive() and h.http_get(port, "/readyz")[0] == 200, 60,
                 lambda: f"not ready: {h.http_get(port, '/readyz')}")
    assert h.metric(port, "aggregator_change_events_total", 'result="ok"') > 0
    base = s.committed_total("g1")

    # The change topic refuses writes; commands keep coming.
    h.run([h.tool("kafka_tool"), "set-config", h.BROKERS, changes, "min.insync.replicas=2"])
    s.produce(tail)
    h.wait_until(lambda: alive() and h.http_get(port, "/readyz")[0] == 503, 90,
                 lambda: f"/readyz while change events fail: {h.http_get(port, '/readyz')}")
    h.wait_until(lambda: alive() and h.metric(port, "aggregator_change_events_oldest_pending_seconds") >= 2, 60,
                 "the oldest unannounced write's age did not grow")
    assert h.metric(port, "aggregator_ready") == 0
    writes = h.metric(port, "aggregator_store_writes_total", 'result="ok"')
    h.wait_until(lambda: alive() and h.metric(port, "aggregator_store_writes_total", 'result="ok"') > writes, 60,
                 "the store was not written while events failed")  # the store is not the one failing
    end = sum(s.end_offsets().values())
    committed = s.committed_total("g1")
    assert committed is not None and committed < end, f"committed {committed} of {end} with events unacknowledged"
    assert committed == base, f"commits moved from {base} to {committed} while no event was acknowledged"

    # The topic takes writes again: everything is delivered and committed.
    h.run([h.tool("kafka_tool"), "set-config", h.BROKERS, changes, "min.insync.replicas=1"])
    h.wait_until(lambda: alive() and h.http_get(port, "/readyz")[0] == 200, 120,
                 lambda: f"not ready again: {h.http_get(port, '/readyz')}\n{s.worker_log(w)[-3000:]}")
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    stored = s.stored()
    h.assert_same_documents(expected, stored)
    h.assert_fold_equals_store(h.change_events(s, changes), stored)


if __name__ == "__main__":
    h.main(scenario, "changes-outage")
