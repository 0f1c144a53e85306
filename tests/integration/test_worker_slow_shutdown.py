#!/usr/bin/env python3
"""SIGTERM while the store hangs: the stop is bounded by
shutdown.timeout_ms even with a flush, or the loads of one, stuck in a store
call, and the stuck flush says so in the log instead of staying silent.

The store connection goes through toxiproxy (harness.Toxiproxy), with a
socket timeout far longer than the shutdown bound, so that only the bound
can end the stop in time. Two phases,
each with a "timeout" toxic (a black hole: the connection stays open, nothing
gets through):
  writing  a worker that holds the stream's aggregates (loaded, cached) gets a
           second chunk: its flush hangs in the write;
  loading  a fresh worker with no cache (cache.max_aggregates = 0: every
           flush reads its aggregates first) gets a third chunk: its flush
           hangs in the loads.
In each phase the test waits for the "flush still running" warning (with the
phase, the aggregates and commands it carries, and how long it has run),
sends SIGTERM and requires an exit within the bound plus slack, with status 1
and the "stopped before everything was durable" line, and the group's
committed offsets not past what was durable before the hang. Then, with the
store reachable again, a third worker catches up: nothing lost (documents
equal replay --input), nothing written back in time between phases."""
import signal
import time

import harness as h

SOCKET_TIMEOUT_MS = 120000  # far past the bound: only shutdown.timeout_ms can end the stop in time
SHUTDOWN_MS = 6000
SLACK_S = 15  # leaving the group and closing the clients after the bound, on a busy machine
SLOW = "flush still running"


def hang_and_stop(s, tp, w, part, phase, committed_before):
    """Black hole, a chunk, the slow-flush warning in `phase`, SIGTERM: a bounded, logged exit."""
    tp.add("store", "hole", "timeout", "upstream", timeout=0)
    s.produce(part)

    def slow_logged():
        assert w.poll() is None, f"{phase}: the worker died:\n{s.worker_log(w)[-3000:]}"
        return any(e.get("phase") == phase for e in s.log_events(w, SLOW))

    h.wait_until(slow_logged, 120, f"{phase}: no '{SLOW}' warning with phase {phase}")
    e = [e for e in s.log_events(w, SLOW) if e.get("phase") == phase][0]
    assert e["seconds"] >= 4 and e["aggregates"] > 0 and e["commands"] > 0, e
    t0 = time.monotonic()
    w.send_signal(signal.SIGTERM)
    try:
        rc = w.wait(SHUTDOWN_MS / 1000 + SLACK_S)
    except Exception:
        raise AssertionError(f"{phase}: no exit {SHUTDOWN_MS / 1000 + SLACK_S:.0f}s after SIGTERM "
                             f"(shutdown.timeout_ms {SHUTDOWN_MS}):\n{s.worker_log(w)[-3000:]}")
    took = time.monotonic() - t0
    h.log(f"{phase}: exited {rc} {took:.1f}s after SIGTERM (shutdown.timeout_ms {SHUTDOWN_MS})")
    assert rc == 1, f"{phase}: exit {rc} with a flush not durable:\n{s.worker_log(w)[-3000:]}"
    assert s.log_events(w, "stopped before everything was durable; those offsets stay uncommitted"), \
        s.worker_log(w)[-3000:]
    stopping = s.log_events(w, "stopping: writing and committing what is held")
    assert stopping and stopping[0]["timeout_ms"] == SHUTDOWN_MS, stopping
    assert s.committed_total("g1") == committed_before, \
        f"{phase}: committed {s.committed_total('g1')} != {committed_before} durable before the hang"
    tp.remove("store", "hole")


def scenario(s):
    stream = s.generate("--seed", "161", "--count", "6000", "--assignments", "40", "--students", "30",
                        "--order", "shuffle")  # chunk 1 touches every assignment: phase 1 has no loads
    expected, _ = s.expected(stream)
    parts = h.chunks(s, stream, 3)
    tp = h.Toxiproxy(s)
    uri = tp.store_uri(SOCKET_TIMEOUT_MS)
    sets = [("store.uri", uri), ("shutdown.timeout_ms", str(SHUTDOWN_MS))]

    w = s.start_worker("g1", sets)
    s.wait_joined(w)
    s.produce(parts[0])
    s.wait_committed("g1", alive=[w])
    durable = s.committed_total("g1")
    prev = s.stored()
    hang_and_stop(s, tp, w, parts[1], "writing", durable)

    w2 = s.start_worker("g1", sets + [("cache.max_aggregates", "0")])
    s.wait_joined(w2)
    s.wait_committed("g1", alive=[w2])  # chunk 2 again, from the offsets the first left
    cur = s.stored()
    h.assert_not_back(prev, cur)
    prev = cur
    hang_and_stop(s, tp, w2, parts[2], "loading", s.committed_total("g1"))

    w3 = s.start_worker("g1", [("store.uri", uri)])
    s.wait_committed("g1", alive=[w3])
    s.stop_worker(w3)
    cur = s.stored()
    h.assert_not_back(prev, cur)
    h.assert_same_documents(expected, cur)


if __name__ == "__main__":
    h.main(scenario, "slow-shutdown")
