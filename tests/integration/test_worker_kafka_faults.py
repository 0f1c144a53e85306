#!/usr/bin/env python3
"""Network faults on the Kafka connection, through toxiproxy:
latency spikes, a bandwidth limit, connections cut in the middle of a fetch
response, connections reset, and a black hole until the client's requests
time out.

The worker is bootstrapped through a toxiproxy on the port the stack's
broker advertises for its FAULTS listener (scripts/stack), so every one of
its connections (group coordinator, fetches, commits, dead-letter producer)
goes through the proxy, metadata included. The test's own producer and its
offset checks use the stack's ordinary listener and see no fault.

Each phase sets its fault, produces a chunk and waits for the event it is
about: for the slow links, the chunk committed through the fault; for the
breaking ones, a client error logged by librdkafka after the fault was set.
Then the fault is lifted and the group's commits must reach the topic's
end (time to recover, logged). Between phases no document's rev or slot
stamp decreases; at the end the documents equal the reference merge
(tests/tools/reference_merge.py) and replay --input."""
import json
import os
import socket

import harness as h

# kafka.rdkafka.socket.timeout.ms for the worker: how long a request may go
# unanswered before librdkafka gives up on the connection (its default is
# 60 s); the black hole must be noticed within it plus slack.
SOCKET_TIMEOUT_MS = 10000


def faults_ports():
    """(listener, advertised) ports of the stack's FAULTS listener: scripts/stack's defaults are the Kafka port + 2
    and + 3, AGG_KAFKA_FAULTS_PORT and AGG_KAFKA_FAULTS_PROXY_PORT override them as they do there."""
    kafka_port = int(h.BROKERS.split(",")[0].rsplit(":", 1)[1])
    return (int(os.environ.get("AGG_KAFKA_FAULTS_PORT", kafka_port + 2)),
            int(os.environ.get("AGG_KAFKA_FAULTS_PROXY_PORT", kafka_port + 3)))


def client_errors(s, w):
    """librdkafka's warnings and errors in worker w's log (error_cb lines carry the error's name)."""
    return [e for e in map(json_or_none, s.worker_log(w).splitlines())
            if e and e.get("component") == "rdkafka" and e.get("level") in ("warn", "error")]


def json_or_none(line):
    try:
        return json.loads(line)
    except ValueError:
        return None


def reference(s, stream):
    """The reference merge of stream, the replay's rejects skipped (replay is checked against it elsewhere)."""
    expected, ref = s.expected_and_reference(stream)
    assert ref == expected, "replay --input and the reference merge disagree on this stream"
    return ref


def scenario(s):
    listener, advertised = faults_ports()
    try:
        socket.create_connection(("127.0.0.1", listener), timeout=5).close()
    except OSError as e:
        raise AssertionError(f"the broker has no FAULTS listener on 127.0.0.1:{listener} ({e}): "
                             "restart the stack with this checkout's scripts/stack")
    stream = s.generate("--seed", "161", "--count", "12000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected = reference(s, stream)
    tp = h.Toxiproxy(s)
    tp.proxy("kafka", f"127.0.0.1:{listener}", listen=f"127.0.0.1:{advertised}")
    w = s.start_worker("g1", [("kafka.brokers", f"127.0.0.1:{advertised}"), ("batch.max_commands", "500"),
                              ("kafka.rdkafka.socket.timeout.ms", str(SOCKET_TIMEOUT_MS))])
    s.wait_joined(w)

    phases = [
        ("latency", [("latency", "downstream", {"latency": 300, "jitter": 200}),
                     ("latency", "upstream", {"latency": 100, "jitter": 100})], False),
        # KB/s. Below about (fetch response size) / socket timeout no fetch
        # completes: at 32 KB/s a 500 KB response outlived the 10 s timeout,
        # and every retry started over (the chunk was never committed).
        ("bandwidth", [("bandwidth", "downstream", {"rate": 256}), ("bandwidth", "upstream", {"rate": 256})], False),
        # A fetch response of a chunk (2,000 commands of ~200 bytes) is far
        # larger: every connection is cut inside one, and again after each
        # reconnection, until the toxic goes.
        ("cut mid-fetch", [("limit_data", "downstream", {"bytes": 20000})], True),
        ("reset", [("reset_peer", "downstream", {"timeout": 500})], True),
        ("black hole", [("timeout", "upstream", {"timeout": 0})], True),
    ]
    parts = h.chunks(s, stream, len(phases) + 1)
    # The black hole: one request's socket timeout, plus produce and poll slack.
    prev = h.fault_phases(s, w, tp, "kafka", phases, parts, lambda: len(client_errors(s, w)),
                          SOCKET_TIMEOUT_MS / 1000 + 30)
    s.produce(parts[-1])
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    h.assert_same_documents(expected, s.stored())
    h.assert_not_back(prev, s.stored())


if __name__ == "__main__":
    h.main(scenario, "kafka-faults")
