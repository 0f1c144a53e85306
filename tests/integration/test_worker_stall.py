#!/usr/bin/env python3
"""A writer held back on purpose is reported, never silent (docs/GUARANTEES.md, "The writer makes
progress"; docs/OPERATIONS.md, "The writer is stalled").

The worker writes to FerretDB through a toxiproxy of the scenario's own. Once it has written and
committed a first part of the stream, the proxy turns into a store that accepts the connection and
answers nothing (toxiproxy's `timeout` toxic with no timeout: every byte is held). The second part is
produced: the worker merges it and its flush waits in the store. Within batch.stall_timeout_ms (4 s
here) of its oldest unwritten change the worker must:
- log "writer stalled: unwritten changes and no write landed" with the counts;
- answer /readyz 503 naming the stall, and set aggregator_ready 0 and aggregator_writer_stalled 1;
- show the age of its oldest unwritten change in aggregator_oldest_unwritten_age_seconds.
The store is then given back: the worker says "writer resumed", is ready again, commits the whole
stream and stops with exit 0, the store equal to `aggregator replay --input` of the stream.

Every step waits for the event it needs (log lines, metrics, committed offsets), never for a time."""
import json
import time

import harness as h

STALL_MS = 4000


def scenario(s):
    stream = s.generate("--seed", "91", "--count", "4000", "--assignments", "40", "--students", "20",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    first, second = s.split(stream, 0.5)
    tp = h.Toxiproxy(s)
    port = h.free_port()
    w = s.start_worker("g1", [("store.uri", tp.store_uri(20000)), ("metrics.listen", f"127.0.0.1:{port}"),
                              ("batch.stall_timeout_ms", str(STALL_MS))])
    s.produce(first)
    s.wait_committed("g1", alive=[w])
    assert h.http_get(port, "/readyz")[0] == 200, "not ready before the fault"
    assert h.metric(port, "aggregator_writer_stalled") == 0

    tp.add("store", "hold", "timeout", "upstream", timeout=0)
    t0 = time.time()
    s.produce(second)

    def stalled():
        s.assert_alive(w, "while the store holds its writes")
        code, body = h.http_get(port, "/readyz")
        return code == 503 and "writer stalled" in body

    h.wait_until(stalled, 120, lambda: f"/readyz never named the stall: {h.http_get(port, '/readyz')}")
    noticed = time.time() - t0
    code, body = h.http_get(port, "/readyz")
    h.log(f"not ready {noticed:.1f}s after the second part was produced: {body.strip()}")
    assert h.metric(port, "aggregator_ready") == 0
    assert h.metric(port, "aggregator_writer_stalled") == 1
    assert h.metric(port, "aggregator_oldest_unwritten_age_seconds") >= STALL_MS / 1000
    warned = s.log_events(w, "writer stalled: unwritten changes and no write landed")
    assert warned, "no warning in the log"
    assert warned[0]["unwritten_aggregates"] > 0 and warned[0]["seconds"] >= STALL_MS // 1000, warned[0]
    # Checked once a second against the oldest unwritten change: within the timeout of it, with room
    # for the produce, the poll and a busy machine.
    assert noticed < STALL_MS / 1000 + 15, f"the stall was reported {noticed:.1f}s after the changes came"

    tp.remove("store", "hold")
    s.wait_committed("g1", alive=[w])
    h.wait_until(lambda: h.http_get(port, "/readyz")[0] == 200, 60, "not ready again after the store came back")
    assert h.metric(port, "aggregator_writer_stalled") == 0
    assert s.log_events(w, "writer resumed"), "no line says the writer resumed"
    s.stop_worker(w)
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "stall")
