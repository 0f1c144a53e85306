#!/usr/bin/env python3
"""Observability during a live run (SPEC.md section 8): /metrics counters equal
what was sent (applied, stale, rejected, as replay --input counts them on the
same stream into an empty store), and /readyz turns not-ready while the store
is stopped and ready again after it is back."""
import os
import re
import subprocess

import harness as h

STACK = os.path.join(h.SRC, "scripts", "stack")


free_port = h.free_port
get = h.http_get


def counter(text, result):
    return sum(float(v) for v in re.findall(r'^aggregator_commands_total\{[^}]*result="%s"[^}]*\} (\S+)$' % result,
                                            text, re.M))


def wait_status(port, path, status, timeout):
    h.wait_until(lambda: get(port, path)[0] == status, timeout,
                 lambda: f"{path} did not answer {status} within {timeout}s: {get(port, path)}", interval=0.5)


def scenario(s):
    stream = s.generate("--seed", "77", "--count", "6000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.02", "--duplicate-rate", "0.1", "--order", "shuffle")
    out = subprocess.run([h.AGGREGATOR, "replay", "--input", stream, "--output", os.devnull], capture_output=True,
                         text=True, check=True).stderr
    want = dict(re.findall(r"(applied|stale|rejected)=(\d+)", out))
    port = free_port()
    w = s.start_worker("g1", [("metrics.listen", f"127.0.0.1:{port}")])
    wait_status(port, "/healthz", 200, 30)
    wait_status(port, "/readyz", 200, 60)
    s.produce(stream)
    s.wait_committed("g1", alive=[w])
    status, text = get(port, "/metrics")
    assert status == 200
    for result in ("applied", "stale", "rejected"):
        assert counter(text, result) == float(want[result]), (result, counter(text, result), want)
    assert re.search(r'^aggregator_store_writes_total\{result="ok"\} [1-9]', text, re.M), "writes counted"
    assert "aggregator_consumer_lag{" in text
    assert re.search(r"^process_resident_memory_bytes \d", text, re.M)

    subprocess.run([STACK, "mongo-stop"], check=True)
    try:
        wait_status(port, "/readyz", 503, 40)
        assert get(port, "/healthz")[0] == 200, "a store outage is not a liveness failure"
    finally:
        subprocess.run([STACK, "mongo-start"], check=True)
    wait_status(port, "/readyz", 200, 40)
    s.stop_worker(w)


if __name__ == "__main__":
    h.main(scenario, "metrics")
