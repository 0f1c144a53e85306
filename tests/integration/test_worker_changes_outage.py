#!/usr/bin/env python3
"""The change topic alone fails while the worker runs (docs/CHANGES.md): it is deleted after the worker
started, then commands arrive, while the command topic, the dead-letter topic and the store work. The
worker writes the store but holds its commits (nothing is committed), counts the failed deliveries,
answers /readyz 503 and pages (aggregator_change_events_oldest_pending_seconds grows: the alert's input).
The topic is created again: the events are delivered, /readyz returns to 200, the offsets commit to the
end, and the change topic folded by _id equals the store. Every wait is on a condition."""
import harness as h


def scenario(s):
    changes = s.create_topic("changes", 3)
    port = h.free_port()
    w = s.start_worker("g1", [("metrics.listen", f"127.0.0.1:{port}"), ("changes.topic", changes)])

    def alive():
        s.assert_alive(w)
        return True

    s.wait_joined(w)
    h.wait_until(lambda: alive() and h.http_get(port, "/readyz")[0] == 200, 60,
                 lambda: f"not ready: {h.http_get(port, '/readyz')}")

    # The change topic goes away; commands arrive.
    h.run([h.tool("kafka_tool"), "delete-topic", h.BROKERS, changes])
    h.wait_until(lambda: alive() and not h.topic_exists(changes), 60, "the change topic was not deleted")
    stream = s.generate("--seed", "41", "--count", "1500", "--assignments", "30", "--students", "20")
    expected, _ = s.expected(stream)
    s.produce(stream)
    h.wait_until(lambda: alive() and h.http_get(port, "/readyz") == (503, "change-event delivery failing\n"), 90,
                 lambda: f"/readyz while change events fail: {h.http_get(port, '/readyz')}")
    h.wait_until(lambda: alive() and h.metric(port, "aggregator_change_events_total", 'result="error"') > 0, 60,
                 "the failed deliveries were not counted")
    h.wait_until(lambda: alive() and h.metric(port, "aggregator_change_events_oldest_pending_seconds") >= 2, 60,
                 "the oldest unannounced write's age did not grow")
    assert h.metric(port, "aggregator_ready") == 0
    assert h.metric(port, "aggregator_store_writes_total", 'result="ok"') > 0, "the store was not written"
    assert h.metric(port, "aggregator_change_events_total", 'result="ok"') == 0
    committed = s.committed_total("g1")
    assert committed == 0, f"committed {committed} messages while no change event was acknowledged"

    # The topic is back: everything is delivered and committed.
    h.run([h.tool("kafka_tool"), "create-topic", h.BROKERS, changes, "3"])
    h.wait_until(lambda: alive() and h.http_get(port, "/readyz")[0] == 200, 120,
                 lambda: f"not ready again: {h.http_get(port, '/readyz')}\n{s.worker_log(w)[-3000:]}")
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    stored = s.stored()
    h.assert_same_documents(expected, stored)
    h.assert_fold_equals_store(h.change_events(s, changes), stored)


if __name__ == "__main__":
    h.main(scenario, "changes-outage")
