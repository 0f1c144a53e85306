#!/usr/bin/env python3
"""Start-up checks (docs/GUARANTEES.md) against the real broker: `run` refuses
to start when a configured topic or the dead-letter topic does not exist
(exit 1, one error line naming it, and the topic is not created by the
attempt); `replay` from topics checks the configured topics only; brokers
that cannot be reached are a different error, reported once the client's
connection set-up timeout has passed; with every topic present, `run`
starts and gets its partitions."""
import json
import subprocess
import time

import harness as h


def attempt(args, timeout=120):
    """(exit status, stderr, seconds) of the binary with args."""
    t0 = time.time()
    r = subprocess.run([h.AGGREGATOR, *args], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stderr, time.time() - t0


def error_lines(stderr):
    """The lines of stderr at level error: JSON log lines, or `aggregator: ...` lines."""
    out = []
    for line in stderr.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            if line.startswith("aggregator:"):
                out.append(line)
            continue
        if e.get("level") == "error":
            out.append(e["msg"])
    return out


def scenario(s):
    missing_dlq = s.dlq + "-missing"
    missing_topic = s.topic + "-missing"

    # 1. The dead-letter topic is missing.
    rc, err, secs = attempt(["run", *s.settings("g-startup", [("kafka.dlq_topic", missing_dlq)])])
    errors = error_lines(err)
    assert rc == 1, f"run with a missing dead-letter topic: exit {rc}\n{err[-3000:]}"
    assert len(errors) == 1 and missing_dlq in errors[0] and "kafka.dlq_topic" in errors[0] \
        and "does not exist" in errors[0], f"not one line naming the dead-letter topic: {errors}\n{err[-3000:]}"
    assert "worker started" not in err, err[-3000:]
    h.log(f"missing dead-letter topic: exit 1 in {secs:.1f}s: {errors[0]}")

    # 2. A configured topic is missing (next to one that exists).
    rc, err, _ = attempt(["run", *s.settings("g-startup", [("kafka.topics", f"{s.topic},{missing_topic}")])])
    errors = error_lines(err)
    assert rc == 1, f"run with a missing topic: exit {rc}\n{err[-3000:]}"
    assert len(errors) == 1 and f"kafka.topics '{missing_topic}'" in errors[0] and f"'{s.topic}'" not in errors[0], \
        f"not one line naming the missing topic: {errors}"

    # Neither attempt created what it looked for.
    assert not h.topic_exists(missing_dlq) and not h.topic_exists(missing_topic), "a start-up check created a topic"

    # 3. replay from topics: the configured topics are checked ...
    out = s.path("replay.jsonl")
    rc, err, _ = attempt(["replay", *s.settings("g-unused", [("kafka.topics", missing_topic)]), "--output", out])
    errors = error_lines(err)
    assert rc == 1, f"replay of a missing topic: exit {rc}\n{err[-3000:]}"
    assert len(errors) == 1 and missing_topic in errors[0], errors
    assert "replay: summary" not in err, err
    # ... the dead-letter topic is not the replay's business.
    rc, err, _ = attempt(["replay", *s.settings("g-unused", [("kafka.dlq_topic", missing_dlq)]), "--output", out])
    assert rc == 0, f"replay with a missing dead-letter topic: exit {rc}\n{err[-3000:]}"

    # 4. Brokers that cannot be reached: a different error, after the
    #    connection set-up timeout (shortened here), naming no topic.
    port = h.free_port()  # nothing listens there
    timeout_args = [("kafka.brokers", f"127.0.0.1:{port}"),
                    ("kafka.rdkafka.socket.connection.setup.timeout.ms", "3000")]
    for cmd in (["run"], ["replay", "--output", out]):
        rc, err, secs = attempt([cmd[0], *s.settings("g-startup", timeout_args), *cmd[1:]])
        errors = error_lines(err)
        assert rc == 1, f"{cmd[0]} with unreachable brokers: exit {rc}\n{err[-3000:]}"
        assert len(errors) == 1 and "no Kafka broker answered within 3 s" in errors[0] \
            and "does not exist" not in errors[0], f"{cmd[0]}: {errors}\n{err[-3000:]}"
        assert secs >= 2.5, f"{cmd[0]} gave up on the brokers after {secs:.1f}s, before the timeout"
        h.log(f"{cmd[0]}, unreachable brokers: exit 1 in {secs:.1f}s")

    # 5. With every topic present the worker starts and is assigned partitions;
    #    a consumer-only and a producer-only property reach only their clients
    #    (docs/CONFIG.md): neither client warns about the other's.
    w = s.start_worker("g-startup", [("kafka.rdkafka.auto.offset.reset", "earliest"),
                                     ("kafka.rdkafka.linger.ms", "10")])
    h.wait_until(lambda: s.holdings(w) or w.poll() is not None, 120,
                 lambda: f"worker never assigned:\n{s.worker_log(w)[-3000:]}")
    assert w.poll() is None, f"worker exited {w.returncode}:\n{s.worker_log(w)[-3000:]}"
    s.stop_worker(w)
    warned = [l for l in s.worker_log(w).splitlines() if "CONFWARN" in l or "will be ignored" in l]
    assert not warned, f"a client warned about a property meant for another: {warned}"


if __name__ == "__main__":
    h.main(scenario, "startup")
