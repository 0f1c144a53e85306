#!/usr/bin/env python3
"""Observability during a live run (docs/METRICS.md): /metrics counters equal
what was sent (applied, stale, rejected, as replay --input counts them on the
same stream into an empty store), every series the alerting rules and the
Grafana dashboard in docker/ use has samples in it (histograms: _bucket, _sum
and _count) with the labels and label values they select, the worker's own
view of its commits and bounds is what it was given and did (committed lag
and oldest uncommitted age at 0 per partition once the group caught up, the
configured bounds, the assignment), and /readyz turns not-ready while the
store is stopped and ready again after it is back."""
# exclusive: stops the stack's FerretDB
import os
import re
import shutil
import subprocess
import sys

import harness as h

sys.path.insert(0, os.path.join(h.SRC, "tests", "tools"))
import monitoring_refs  # noqa: E402

PARTITIONS = 6


free_port = h.free_port
get = h.http_get


def counter(text, result):
    return sum(float(v) for v in re.findall(r'^aggregator_commands_total\{[^}]*result="%s"[^}]*\} (\S+)$' % result,
                                            text, re.M))


def wait_status(port, path, status, timeout):
    h.wait_until(lambda: get(port, path)[0] == status, timeout,
                 lambda: f"{path} did not answer {status} within {timeout}s: {get(port, path)}", interval=0.5)


def check_monitoring(text):
    """The names in docker/prometheus/alerts.yaml and docker/grafana/*.json
    against this worker's /metrics, now that it holds partitions (lag series)
    and has flushed (histogram samples): strict, every label and value too."""
    exprs = monitoring_refs.repo_exprs(h.SRC)
    problems = monitoring_refs.check(exprs, monitoring_refs.exposition(text), live=True)
    assert not problems, "\n".join(["rules or dashboard name what the live /metrics lacks:"] + problems)
    used = monitoring_refs.used_series(exprs)
    assert "aggregator_consumer_lag" in used and "aggregator_flush_duration_seconds_bucket" in used, used
    h.log("monitoring: %d expressions, %d series checked against the live /metrics" % (len(exprs), len(used)))
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found (Debian package prometheus; scripts/bootstrap installs it)"
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert r.returncode == 0, "promtool check metrics: %s%s" % (r.stdout, r.stderr)


def samples(text, family):
    """{(topic, partition): value} of a per-partition family in an exposition."""
    return {(t, int(p)): float(v) for t, p, v in
            re.findall(r'^%s\{topic="([^"]*)",partition="(\d+)"\} (\S+)$' % family, text, re.M)}


def single(text, series):
    m = re.search(r"^%s (\S+)$" % re.escape(series), text, re.M)
    assert m, "no sample of %s" % series
    return float(m.group(1))


def check_commit_view(s, port, partitions):
    """Once the group has committed everything: every assigned partition has a
    committed lag and an oldest uncommitted age, both 0 (sampled once a
    second, so they may trail the commit); the bounds are the configured ones
    and the worker holds every partition, unpaused."""
    def caught_up():
        text = get(port, "/metrics")[1]
        lag = samples(text, "aggregator_consumer_committed_lag")
        age = samples(text, "aggregator_oldest_uncommitted_age_seconds")
        return len(lag) == partitions and len(age) == partitions and not any(lag.values()) and not any(age.values())
    h.wait_until(caught_up, 30, lambda: "committed lag or oldest uncommitted age not 0 on every partition: %s" % [
        l for l in get(port, "/metrics")[1].splitlines() if "committed" in l and not l.startswith("#")])
    text = get(port, "/metrics")[1]
    assert {t for t, _ in samples(text, "aggregator_oldest_uncommitted_age_seconds")} == {s.topic}
    assert single(text, "aggregator_pending_bytes_limit") == 48 << 20
    assert single(text, "aggregator_cached_aggregates_limit") == 777
    assert single(text, "aggregator_cached_bytes_limit") == 40 << 20
    assert 0 < single(text, "aggregator_cached_bytes") <= 40 << 20
    assert single(text, "aggregator_assigned_partitions") == partitions
    assert single(text, "aggregator_fetch_paused") == 0
    assert single(text, 'aggregator_rebalances_total{event="assigned"}') >= 1
    assert single(text, "aggregator_store_retries_total") >= 0


def check_stalled_commits(s):
    """A second group reads the same topic with its store unreachable (its own
    store.uri on a closed port; the shared store is untouched): it reads
    everything and commits nothing. Its lag from the position falls to 0
    while its lag from the committed offset stays at the whole partition, and
    the oldest uncommitted command's age grows with the clock; each failed
    flush counts as a store retry."""
    end = s.end_offsets()
    port = free_port()
    w = s.start_worker("g-stalled", [("metrics.listen", f"127.0.0.1:{port}"), ("store.uri", "mongodb://127.0.0.1:1")])
    try:
        def read_all():
            text = get(port, "/metrics")[1]
            lag, committed = samples(text, "aggregator_consumer_lag"), samples(text, "aggregator_consumer_committed_lag")
            return (len(lag) == len(end) and not any(lag.values())
                    and all(committed.get((s.topic, p)) == n for p, n in end.items()))
        h.wait_until(read_all, 60, lambda: "position lag not 0 or committed lag not the whole partition: %s" % [
            l for l in get(port, "/metrics")[1].splitlines() if "_lag{" in l])
        first = samples(get(port, "/metrics")[1], "aggregator_oldest_uncommitted_age_seconds")
        assert len(first) == len(end) and all(v > 0 for v in first.values()), first
        h.wait_until(lambda: all(v >= first[k] + 1 for k, v in
                                 samples(get(port, "/metrics")[1], "aggregator_oldest_uncommitted_age_seconds").items()),
                     30, "the oldest uncommitted age does not grow while nothing commits")
        h.wait_until(lambda: single(get(port, "/metrics")[1], "aggregator_store_retries_total") >= 1, 60,
                     "no store retry counted while the store is unreachable")
    finally:
        w.kill()  # its unwritten changes are meant to be lost: nothing of it is committed
        w.wait()


def observe(s):
    """The live run up to the outage: returns the worker and its metrics port."""
    stream = s.generate("--seed", "77", "--count", "6000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.02", "--duplicate-rate", "0.1", "--order", "shuffle")
    out = subprocess.run([h.AGGREGATOR, "replay", "--set", "log.format=text", "--input", stream, "--output",
                          os.devnull], capture_output=True,
                         text=True, check=True).stderr
    want = dict(re.findall(r"(applied|stale|rejected)=(\d+)", out))
    port = free_port()
    w = s.start_worker("g1", [("metrics.listen", f"127.0.0.1:{port}"), ("batch.max_pending_bytes", "48MiB"),
                              ("cache.max_aggregates", "777"), ("cache.max_bytes", "40MiB")])
    wait_status(port, "/healthz", 200, 30)
    wait_status(port, "/readyz", 200, 60)
    s.produce(stream)
    s.wait_committed("g1", alive=[w])
    # The lag gauge is sampled once a second, after the partition's first
    # message: it may trail the commit.
    h.wait_until(lambda: "aggregator_consumer_lag{" in get(port, "/metrics")[1], 30, "no consumer lag sample")
    status, text = get(port, "/metrics")
    assert status == 200
    for result in ("applied", "stale", "rejected"):
        assert counter(text, result) == float(want[result]), (result, counter(text, result), want)
    assert re.search(r'^aggregator_store_writes_total\{result="ok"\} [1-9]', text, re.M), "writes counted"
    assert "aggregator_consumer_lag{" in text
    assert re.search(r"^process_resident_memory_bytes \d", text, re.M)
    check_monitoring(text)
    check_commit_view(s, port, PARTITIONS)
    check_stalled_commits(s)
    return w, port


def scenario(s):
    w, port = observe(s)
    with h.stopped("mongo"):
        wait_status(port, "/readyz", 503, 40)
        assert get(port, "/healthz")[0] == 200, "a store outage is not a liveness failure"
    wait_status(port, "/readyz", 200, 40)
    s.stop_worker(w)


if __name__ == "__main__":
    h.main(scenario, "metrics", PARTITIONS)
