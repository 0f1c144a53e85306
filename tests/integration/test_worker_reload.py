#!/usr/bin/env python3
"""SIGHUP reloads the configuration file (docs/CONFIG.md): live keys
(batch.*, cache.*, log.level) apply without a restart and without losing
anything; a changed restart-only key is reported as needing a restart."""
import signal
import subprocess

import harness as h


def ini(s, level, max_commands, group):
    return f"""[kafka]
brokers = {h.BROKERS}
topics = {s.topic}
group = {s.group(group)}
dlq_topic = {s.dlq}
[store]
uri = {h.MONGO}
database = {s.db}
write_concern = 1
[batch]
max_commands = {max_commands}
linger_ms = 50
[log]
level = {level}
format = json
"""


def wait_log(s, w, text, timeout=120):
    h.wait_until(lambda: text in s.worker_log(w), timeout, f"log never showed {text!r}")


def scenario(s):
    stream = s.generate("--seed", "88", "--count", "4000", "--assignments", "20", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    conf = s.path("worker.ini")
    with open(conf, "w") as f:
        f.write(ini(s, "info", 5000, "g1"))
    logf = open(s.path("worker-reload.log"), "w")
    w = subprocess.Popen([h.AGGREGATOR, "run", "-c", conf], stdout=logf, stderr=logf)
    w.logpath = logf.name
    s.workers.append(w)
    wait_log(s, w, "partitions assigned")
    half, rest = s.split(stream, 0.5)
    s.produce(half)
    with open(conf, "w") as f:
        f.write(ini(s, "debug", 100, "g2"))
    w.send_signal(signal.SIGHUP)
    wait_log(s, w, "configuration reloaded")
    wait_log(s, w, "need a restart")
    assert "kafka.group" in s.worker_log(w).split("need a restart")[1].split("\n")[0]
    s.produce(rest)
    s.wait_committed("g1", alive=[w])  # still the old group: kafka.group needs a restart
    assert '"level":"debug"' in s.worker_log(w), "log.level applied live"
    s.stop_worker(w)
    h.assert_same_documents(expected, s.stored())


if __name__ == "__main__":
    h.main(scenario, "reload")
