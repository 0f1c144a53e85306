#!/usr/bin/env python3
"""`config check --connect` against the local stack: with the broker, the
scenario's topics and FerretDB up it exits 0 with "configuration OK, reached
..." naming them (the change topic too, when changes.topic is set); a change
topic that does not exist is one line naming it, exit 1; with a broker address and a store address where nothing
listens, and a topic that does not exist, it exits 1 with one line for each
thing it could not reach, within its bounds (the broker's connection
set-up timeout, store.connect_timeout_ms); plain `config check` stays
offline (exit 0 for the same unreachable configuration)."""
import socket
import subprocess
import time

import harness as h


def attempt(args, timeout=120):
    t0 = time.time()
    r = subprocess.run([h.AGGREGATOR, *args], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr, time.time() - t0


def dead_port():
    """A port where nothing listens: bound, never listened on, held open."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock, sock.getsockname()[1]


def scenario(s):
    common = ["config", "check", "--set", f"kafka.dlq_topic={s.dlq}", "--set", f"store.database={s.db}"]
    base = common + ["--set", f"kafka.topics={s.topic}"]
    live = base + ["--set", f"kafka.brokers={h.BROKERS}", "--set", f"store.uri={h.MONGO}"]

    # 1. Everything answers: exit 0, the one line names what was reached.
    rc, out, err, secs = attempt(live + ["--connect"])
    assert rc == 0, f"exit {rc}: {err}"
    assert out.startswith("configuration OK, reached Kafka brokers " + h.BROKERS), out
    assert f"topics {s.topic} and dead-letter topic {s.dlq}" in out and "store mongodb://" in out, out
    assert err == "", err
    h.log(f"all reachable: exit 0 in {secs:.1f}s")

    # 1b. With a change topic: reached and named too.
    changes = s.create_topic("changes", 1)
    rc, out, err, _ = attempt(live + ["--connect", "--set", f"changes.topic={changes}"])
    assert rc == 0 and err == "", f"exit {rc}: {err}"
    assert f"topics {s.topic} and dead-letter topic {s.dlq}; change topic {changes}; store mongodb://" in out, out

    # 2. A topic that does not exist: exit 1, one line naming it.
    rc, out, err, _ = attempt(common + ["--connect", "--set", f"kafka.topics={s.topic}-missing",
                                        "--set", f"kafka.brokers={h.BROKERS}", "--set", f"store.uri={h.MONGO}"])
    lines = err.splitlines()
    assert rc == 1 and out == "", f"exit {rc}: {out} {err}"
    assert len(lines) == 1 and f"kafka.topics '{s.topic}-missing'" in lines[0] and "does not exist" in lines[0], err
    #    So is a change topic that does not exist.
    rc, out, err, _ = attempt(live + ["--connect", "--set", f"changes.topic={changes}-missing"])
    lines = err.splitlines()
    assert rc == 1 and out == "", f"exit {rc}: {out} {err}"
    assert len(lines) == 1 and f"changes.topic '{changes}-missing'" in lines[0] and "does not exist" in lines[0] \
        and "kafka.topics" not in lines[0], err
    assert not h.topic_exists(f"{changes}-missing"), "config check --connect created the change topic"

    # 3. A broker and a store where nothing listens, beside the live broker:
    #    each named on its own line, within the bounds.
    held_k, kport = dead_port()
    held_m, mport = dead_port()
    try:
        args = base + ["--connect", "--set", f"kafka.brokers=127.0.0.1:{kport},{h.BROKERS}",
                       "--set", f"store.uri=mongodb://127.0.0.1:{mport}/?serverSelectionTimeoutMS=500",
                       "--set", "store.connect_timeout_ms=1500",
                       "--set", "kafka.rdkafka.socket.connection.setup.timeout.ms=2000"]
        rc, out, err, secs = attempt(args)
        lines = err.splitlines()
        assert rc == 1 and out == "", f"exit {rc}: {out} {err}"
        assert len(lines) == 2, err
        assert lines[0].startswith(f"aggregator: cannot reach Kafka broker 127.0.0.1:{kport} within 2000 ms: "), err
        assert lines[1].startswith(f"aggregator: cannot reach the store mongodb://127.0.0.1:{mport}/"), err
        assert "within store.connect_timeout_ms (1500 ms)" in lines[1], err
        assert secs < 30, f"took {secs:.1f}s"
        h.log(f"unreachable broker and store: exit 1 in {secs:.1f}s")

        # 4. Nothing answers at all: every broker, the topics and the store.
        args = base + ["--connect", "--set", f"kafka.brokers=127.0.0.1:{kport}",
                       "--set", f"store.uri=mongodb://127.0.0.1:{mport}/?serverSelectionTimeoutMS=500",
                       "--set", "store.connect_timeout_ms=1000",
                       "--set", "kafka.rdkafka.socket.connection.setup.timeout.ms=1000"]
        rc, out, err, _ = attempt(args)
        lines = err.splitlines()
        assert rc == 1 and len(lines) == 3, f"exit {rc}: {err}"
        assert "Kafka broker" in lines[0] and "no Kafka broker answered" in lines[1] and "the store" in lines[2], err

        # 5. Without --connect nothing is contacted: the same configuration is OK.
        rc, out, err, _ = attempt([a for a in args if a != "--connect"])
        assert rc == 0 and out == "configuration OK\n", f"exit {rc}: {out} {err}"
    finally:
        held_k.close()
        held_m.close()


if __name__ == "__main__":
    h.main(scenario, "config_connect", partitions=1)
