#!/usr/bin/env python3
"""Poison flood: a backlog made only of invalid commands, read at
full speed. The dead-letter path keeps up: every one is dead-lettered and its
offset committed (the group reaches the end), none reaches the store, and the
counters say so. The worker runs with the unwritten-changes bound
(batch.max_pending_bytes, which counts rejects until the dead-letter topic
acknowledges them) and the consumer's prefetch
(queued.max.messages.kbytes) set to a few MiB, far below the flood, so the
rejects go through the pending bound again and again. How much memory that
takes, and how fast, is measured by scripts/bench-poison-flood
(docs/BENCHMARKS.md), not asserted here.

The flood mixes the rejects that cost the most to find (a command that is
well formed up to its last field) with cheap ones (not JSON, bad UTF-8, not
an object) and oversized messages (too_large, never parsed)."""
import harness as h

COUNT = 120_000
PENDING = "4MiB"
PREFETCH_KB = "4096"


def poison(i):
    title = "t" * 700
    ok = (f'{{"id":"p{i}","type":"assignment.upserted","tenant":"t1","assignment":"a{i % 500}",'
          f'"ts":"2026-09-01T08:00:00Z","data":{{"class":"c1","title":"{title}","status":"published"}},')
    if i % 100 == 99:
        return b'{"id":"p%d","pad":"' % i + b"y" * 70_000 + b'"}'  # too_large (default limit 64 KiB)
    kind = i % 5
    if kind == 0:
        return (ok + '"version":0}').encode()                     # invalid_version, after a full parse
    if kind == 1:
        return (ok + '"version":1,"data":{}}').encode()           # duplicate_key
    if kind == 2:
        return ok.encode()                                        # invalid_json: truncated
    if kind == 3:
        return ok.encode()[:300] + b"\xff\xfe" + b"x" * 400       # invalid_utf8
    return f'[{i},"{title}"]'.encode()                            # not_object


def write_flood(path, count=COUNT):
    """The flood, one message a line; returns its size in bytes (newlines not counted)."""
    size = 0
    with open(path, "wb") as f:
        for i in range(count):
            line = poison(i)
            assert b"\n" not in line
            f.write(line + b"\n")
            size += len(line)
    return size


def flood_settings(port, pending=PENDING, prefetch_kb=PREFETCH_KB):
    return [("metrics.listen", f"127.0.0.1:{port}"), ("batch.max_pending_bytes", pending),
            ("kafka.rdkafka.queued.max.messages.kbytes", prefetch_kb)]


def scenario(s):
    path = s.path("poison.jsonl")
    flood_mb = write_flood(path) / 2**20
    assert flood_mb > 16 * int(PENDING.removesuffix("MiB")), "the flood must be far larger than the pending bound"
    s.produce(path)
    end = sum(s.end_offsets().values())
    assert end == COUNT, (end, COUNT)
    port = h.free_port()
    w = s.start_worker("g1", flood_settings(port))
    s.wait_joined(w)
    t0 = h.time.time()
    s.wait_committed("g1", timeout=600, alive=[w])
    dt = h.time.time() - t0
    rejected = h.metric(port, "aggregator_commands_total", 'result="rejected"')
    applied = h.metric(port, "aggregator_commands_total", 'result="applied"')
    s.stop_worker(w)
    dlq = sum(s.end_offsets(s.dlq).values())
    h.log(f"poison flood: {COUNT} invalid commands ({flood_mb:.0f} MiB) dead-lettered and committed {dt:.1f}s "
          f"after the worker joined")
    assert rejected == COUNT and not applied, (rejected, applied)
    assert dlq >= COUNT, f"{dlq} dead letters for {COUNT} rejects"
    assert not s.stored(), "a poison command reached the store"


if __name__ == "__main__":
    h.main(scenario, "poison-flood")
