#!/usr/bin/env python3
"""Dead-letter delivery failing while the worker runs (docs/GUARANTEES.md):
the dead-letter topic is deleted after start, then invalid commands arrive.
The worker warns (once, then rate-limited: not a line per message), counts
the failed attempts in aggregator_dead_letter_deliveries_total{result="error"},
answers /readyz 503 and keeps the rejects' offsets uncommitted. The topic is
created again: /readyz returns to 200, the recovery is logged, every reject
reaches the topic with its headers and the offsets commit to the end.
Every wait is on a condition."""
import time

import harness as h

INVALID = 40


def scenario(s):
    port = h.free_port()
    w = s.start_worker("g1", [("metrics.listen", f"127.0.0.1:{port}")])

    def alive():
        if w.poll() is not None:
            raise AssertionError(f"worker exited {w.returncode}:\n{s.worker_log(w)[-3000:]}")
        return True

    # A healthy start: a few valid commands written and committed, ready.
    stream = s.generate("--seed", "21", "--count", "200", "--assignments", "5", "--students", "4")
    s.produce(stream)
    s.wait_committed("g1", alive=[w])
    h.wait_until(lambda: alive() and h.http_get(port, "/readyz")[0] == 200, 60,
                 lambda: f"not ready: {h.http_get(port, '/readyz')}")
    errors0 = h.metric(port, "aggregator_dead_letter_deliveries_total", 'result="error"')
    ok0 = h.metric(port, "aggregator_dead_letter_deliveries_total", 'result="ok"')
    assert errors0 == 0 and ok0 == 0, (errors0, ok0)
    base = sum(s.end_offsets().values())

    # The dead-letter topic goes away; invalid commands arrive.
    h.run([h.tool("kafka_tool"), "delete-topic", h.BROKERS, s.dlq])
    h.wait_until(lambda: alive() and not h.topic_exists(s.dlq), 60, "the dead-letter topic was not deleted")
    bad = s.path("invalid.jsonl")
    with open(bad, "w") as f:
        for i in range(INVALID):
            f.write(f'{{"type": "nonsense", "n": {i}}}\n')
    t_produce = time.time()
    s.produce(bad)

    h.wait_until(lambda: alive() and s.log_events(w, "dead-letter delivery failing: rejects wait, their offsets "
                                                     "stay uncommitted, not ready"), 60,
                 lambda: f"no dead-letter warning:\n{s.worker_log(w)[-3000:]}")
    t_warned = time.time()
    h.wait_until(lambda: alive() and h.http_get(port, "/readyz") == (503, "dead-letter delivery failing\n"), 30,
                 lambda: f"/readyz while dead-letter delivery fails: {h.http_get(port, '/readyz')}")
    h.wait_until(lambda: alive() and h.metric(port, "aggregator_dead_letter_deliveries_total", 'result="error"') > 0,
                 30, "the failure counter did not rise")
    assert h.metric(port, "aggregator_ready") == 0
    h.log(f"warning {t_warned - t_produce:.2f}s after the invalid commands were produced")

    # Every invalid command was consumed and is waiting: nothing past the
    # first reject of a partition is committed.
    h.wait_until(lambda: alive() and h.metric(port, "aggregator_commands_total", 'result="rejected"') >= INVALID, 60,
                 "the invalid commands were not all consumed")
    end = sum(s.end_offsets().values())
    assert end == base + INVALID, (end, base)
    committed = s.committed_total("g1")
    assert committed is not None and committed <= base, f"committed {committed} past the pending rejects (base {base})"

    # Let the failure last past the warning interval, then check the log is
    # rate-limited: one line first, then at most one per 10 s, not one per
    # message or attempt.
    h.wait_until(lambda: alive() and s.log_events(w, "dead-letter delivery still failing"), 60,
                 "no reminder after the warning interval")
    warned = len(s.log_events(w, "dead-letter delivery failing: rejects wait, their offsets stay uncommitted, "
                                 "not ready")) + len(s.log_events(w, "dead-letter delivery still failing"))
    elapsed = time.time() - t_warned
    assert warned <= 2 + elapsed / 10, f"{warned} warnings in {elapsed:.0f}s: not rate-limited"
    assert h.metric(port, "aggregator_dead_letter_deliveries_total", 'result="ok"') == 0
    assert s.committed_total("g1") <= base

    # The topic is back: delivery resumes by itself.
    t_back = time.time()
    h.run([h.tool("kafka_tool"), "create-topic", h.BROKERS, s.dlq, "1"])
    h.wait_until(lambda: alive() and h.http_get(port, "/readyz")[0] == 200, 60,
                 lambda: f"not ready again: {h.http_get(port, '/readyz')}\n{s.worker_log(w)[-3000:]}")
    h.log(f"ready again {time.time() - t_back:.2f}s after the topic was created")
    assert s.log_events(w, "dead-letter delivery works again"), s.worker_log(w)[-3000:]
    s.wait_committed("g1", alive=[w])
    h.wait_until(lambda: h.metric(port, "aggregator_dead_letter_deliveries_total", 'result="ok"') >= INVALID, 30,
                 "the rejects were not all acknowledged")
    s.stop_worker(w)

    got = {}
    for m in s.dlq_messages():
        got[bytes.fromhex(m["value_hex"])] = m["headers"]
    lines = open(bad, "rb").read().split(b"\n")[:INVALID]
    missing = [l for l in lines if l not in got]
    assert not missing, f"{len(missing)} rejects never reached the dead-letter topic, e.g. {missing[:2]}"
    for l in lines:
        hd = got[l]
        assert hd["x-error-code"] and hd["x-source-topic"] == s.topic and int(hd["x-source-offset"]) >= 0, hd


if __name__ == "__main__":
    h.main(scenario, "dlq-outage")
