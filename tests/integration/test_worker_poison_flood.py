#!/usr/bin/env python3
"""Poison flood (issue 16): a backlog made only of invalid commands, read at
full speed. The dead-letter path keeps up: every one is dead-lettered and its
offset committed (the group reaches the end); memory stays bounded: with the
unwritten-changes bound (batch.max_pending_bytes, which counts rejects until
the dead-letter topic acknowledges them) and the consumer's prefetch
(queued.max.messages.kbytes) set to a few MiB, the worker's peak RSS stays
below RSS_BOUND_MB, a fraction of the backlog, so it cannot have held the
backlog or its dead-letter copies; the rate is reported.

With the defaults (64 MiB pending, 32 MiB prefetch) the same flood peaked at
167 MiB: the bound then is the configuration's, about prefetch + twice the
pending bound (the message and its dead-letter copy) + the process itself.

The flood mixes the rejects that cost the most to find (a command that is
well formed up to its last field) with cheap ones (not JSON, bad UTF-8, not
an object) and oversized messages (too_large, never parsed)."""
import os

import harness as h

COUNT = 120_000
PENDING = "4MiB"
PREFETCH_KB = "4096"
RSS_BOUND_MB = 80


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


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def scenario(s):
    path = s.path("poison.jsonl")
    size = 0
    with open(path, "wb") as f:
        for i in range(COUNT):
            line = poison(i)
            assert b"\n" not in line
            f.write(line + b"\n")
            size += len(line)
    flood_mb = size / 2**20
    assert flood_mb > 2 * RSS_BOUND_MB, "the flood must be much larger than the memory bound it tests"
    s.produce(path)
    end = sum(s.end_offsets().values())
    assert end == COUNT, (end, COUNT)
    port = h.free_port()
    w = s.start_worker("g1", [("metrics.listen", f"127.0.0.1:{port}"), ("batch.max_pending_bytes", PENDING),
                              ("kafka.rdkafka.queued.max.messages.kbytes", PREFETCH_KB)])

    def joined():
        assert w.poll() is None, "the worker died"
        return bool(s.holdings(w))

    h.wait_until(joined, 120, "the worker never got partitions")
    t0 = h.time.time()
    s.wait_committed("g1", timeout=600, alive=[w])
    dt = h.time.time() - t0
    peak = peak_rss_mb(w.pid)
    rejected = h.metric(port, "aggregator_commands_total", 'result="rejected"')
    applied = h.metric(port, "aggregator_commands_total", 'result="applied"')
    s.stop_worker(w)
    dlq = sum(s.end_offsets(s.dlq).values())
    h.log(f"poison flood: {COUNT} invalid commands ({flood_mb:.0f} MiB) dead-lettered and committed in {dt:.1f}s "
          f"from the worker's join: {COUNT / dt:,.0f} commands/s, {flood_mb / dt:.1f} MiB/s; peak RSS {peak:.0f} MiB")
    assert rejected == COUNT and not applied, (rejected, applied)
    assert dlq >= COUNT, f"{dlq} dead letters for {COUNT} rejects"
    assert peak < RSS_BOUND_MB, f"peak RSS {peak:.0f} MiB for a {flood_mb:.0f} MiB flood"
    assert not s.stored(), "a poison command reached the store"


if __name__ == "__main__":
    h.main(scenario, "poison-flood")
