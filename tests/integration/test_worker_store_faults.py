#!/usr/bin/env python3
"""Network faults on the store connection (issue 16), through toxiproxy
(built by scripts/bootstrap into the cache): latency spikes, a bandwidth
limit, a connection cut in the middle of a bulk write, connections reset at
once, and a black hole until the socket times out. After each fault is
lifted the worker catches up by itself; nothing is lost (the documents equal
replay --input), and no write goes back in time (between phases, no
document's rev or slot stamp ever decreases).

Each phase produces a chunk of the stream under its fault and waits for the
event it is about: for the slow links, the chunk committed through the fault;
for the breaking faults, a store write failure logged after the fault was
set. The black hole must be noticed within the socket timeout the URI sets
(socketTimeoutMS; the worker's default is 60 s, see worker/store.c) plus
the worker's retry backoff."""
import json
import os
import subprocess
import time
import urllib.request

import harness as h

CACHE = os.environ.get("AGG_CACHE_DIR", os.path.expanduser("~/.cache/aggregator"))
TOXIPROXY = os.path.join(CACHE, "bin", "toxiproxy-v2.5.0")  # scripts/lib.sh: AGG_TOXIPROXY_VERSION
SOCKET_TIMEOUT_MS = 10000
FAILED = "store write failed, retrying"


class Toxiproxy:
    def __init__(self, s):
        assert os.access(TOXIPROXY, os.X_OK), f"{TOXIPROXY} missing: run scripts/bootstrap"
        self.port = h.free_port()
        logf = open(s.path("toxiproxy.log"), "w")
        p = subprocess.Popen([TOXIPROXY, "-host", "127.0.0.1", "-port", str(self.port)], stdout=logf, stderr=logf)
        s.procs.append(p)
        h.wait_until(lambda: h.http_get(self.port, "/version")[0] == 200, 60, "toxiproxy did not answer")

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.read()

    def proxy(self, name, upstream):
        listen = f"127.0.0.1:{h.free_port()}"
        self.call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream, "enabled": True})
        return listen

    def add(self, proxy, name, kind, stream, **attributes):
        self.call("POST", f"/proxies/{proxy}/toxics",
                  {"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes})

    def remove(self, proxy, name):
        self.call("DELETE", f"/proxies/{proxy}/toxics/{name}")


def stamps(doc):
    """{slot path: (v, c)} of a stored document."""
    out = {}
    if doc.get("header"):
        out["header"] = (doc["header"]["v"], doc["header"]["c"])
    for sid, st in (doc.get("students") or {}).items():
        for slot, val in st.items():
            out[f"students.{sid}.{slot}"] = (val["v"], val["c"])
    return out


def assert_not_back(prev, cur):
    for k, d in prev.items():
        assert k in cur, f"{k} disappeared"
        assert cur[k]["rev"] >= d["rev"], f"{k}: rev {d['rev']} -> {cur[k]['rev']}"
        a, b = stamps(d), stamps(cur[k])
        for slot, st in a.items():
            assert slot in b and b[slot] >= st, f"{k} {slot}: {st} -> {b.get(slot)}"


def chunks(s, path, n):
    lines = open(path, "rb").readlines()
    size = -(-len(lines) // n)
    out = []
    for i in range(n):
        p = s.path(f"chunk-{i}.jsonl")
        with open(p, "wb") as f:
            f.writelines(lines[i * size:(i + 1) * size])
        out.append(p)
    return out


def scenario(s):
    stream = s.generate("--seed", "111", "--count", "10000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    tp = Toxiproxy(s)
    upstream = h.MONGO.split("//", 1)[1].split("/", 1)[0].split("?", 1)[0]
    listen = tp.proxy("store", upstream)
    uri = f"mongodb://{listen}/?socketTimeoutMS={SOCKET_TIMEOUT_MS}"
    w = s.start_worker("g1", [("store.uri", uri), ("batch.max_commands", "500")])
    h.wait_until(lambda: s.holdings(w), 120, "the worker never got partitions")

    phases = [
        ("latency", [("latency", "downstream", {"latency": 300, "jitter": 200}),
                     ("latency", "upstream", {"latency": 100, "jitter": 100})], False),
        ("bandwidth", [("bandwidth", "downstream", {"rate": 64}), ("bandwidth", "upstream", {"rate": 64})], False),
        # A bulk of 16 aggregates of ~8 KB is ~130 KB: every connection is cut inside one.
        ("cut mid-bulk", [("limit_data", "upstream", {"bytes": 40000})], True),
        ("reset", [("reset_peer", "upstream", {"timeout": 0})], True),
        ("black hole", [("timeout", "upstream", {"timeout": 0})], True),
    ]
    parts = chunks(s, stream, len(phases) + 1)
    prev = {}
    report = []  # one line per phase, logged as it ends
    for i, (name, toxics, breaks) in enumerate(phases):
        failures = len(s.log_events(w, FAILED))
        t0 = time.time()
        for j, (kind, direction, attrs) in enumerate(toxics):
            tp.add("store", f"{name.replace(' ', '-')}-{j}", kind, direction, **attrs)
        s.produce(parts[i])
        end = sum(s.end_offsets().values())

        def committed_all():
            assert w.poll() is None, f"the worker died during {name}"
            c = s.committed_total("g1")
            return c is not None and c >= end

        if breaks:
            def failed():
                assert w.poll() is None, f"the worker died during {name}"
                return len(s.log_events(w, FAILED)) > failures

            h.wait_until(failed, 180, f"{name}: no failed store write logged")
            noticed = time.time() - t0
            if name == "black hole":
                # socket timeout + one retry backoff (retry.backoff_max_ms 1 s) + produce/poll slack
                assert noticed < SOCKET_TIMEOUT_MS / 1000 + 30, f"black hole noticed after {noticed:.1f}s"
        else:
            h.wait_until(committed_all, 300, f"{name}: the chunk was not committed through the fault")
            noticed = None
        for j in range(len(toxics)):
            tp.remove("store", f"{name.replace(' ', '-')}-{j}")
        t1 = time.time()
        h.wait_until(committed_all, 300, f"after {name}: the worker did not catch up")
        cur = s.stored()
        assert_not_back(prev, cur)
        prev = cur
        report.append(f"{name}: failure noticed after {noticed:.1f}s, " if noticed is not None else f"{name}: ")
        report[-1] += f"caught up {time.time() - t1:.1f}s after the fault was lifted"
        h.log(report[-1])
    s.produce(parts[-1])
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "store-faults")
