#!/usr/bin/env python3
"""Network faults on the store connection, through toxiproxy
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
(socketTimeoutMS; the worker's default is 60 s, see worker/store/store.c) plus
the worker's retry backoff."""
import harness as h

SOCKET_TIMEOUT_MS = 10000


def scenario(s):
    stream = s.generate("--seed", "111", "--count", "10000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    tp = h.Toxiproxy(s)
    w = s.start_worker("g1", [("store.uri", tp.store_uri(SOCKET_TIMEOUT_MS)), ("batch.max_commands", "500")])
    s.wait_joined(w)

    phases = [
        ("latency", [("latency", "downstream", {"latency": 300, "jitter": 200}),
                     ("latency", "upstream", {"latency": 100, "jitter": 100})], False),
        ("bandwidth", [("bandwidth", "downstream", {"rate": 64}), ("bandwidth", "upstream", {"rate": 64})], False),
        # A bulk of 16 aggregates of ~8 KB is ~130 KB: every connection is cut inside one.
        ("cut mid-bulk", [("limit_data", "upstream", {"bytes": 40000})], True),
        ("reset", [("reset_peer", "upstream", {"timeout": 0})], True),
        ("black hole", [("timeout", "upstream", {"timeout": 0})], True),
    ]
    parts = h.chunks(s, stream, len(phases) + 1)
    # The black hole: the socket timeout + one retry backoff (retry.backoff_max_ms 1 s) + produce/poll slack.
    h.fault_phases(s, w, tp, "store", phases, parts, lambda: len(s.log_events(w, h.STORE_FAILED)),
                   SOCKET_TIMEOUT_MS / 1000 + 30)
    s.produce(parts[-1])
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "store-faults")
