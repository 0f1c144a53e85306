#!/usr/bin/env python3
"""Start-up checks (docs/GUARANTEES.md) against the real broker: `run` refuses
to start when a configured topic, the dead-letter topic or the change topic
(changes.topic) does not exist (exit 1, one error line naming it, and the
topic is not created by the attempt); `replay` from topics checks the
configured topics, and the change topic too when it writes to the store (from
the topics or from --input), as `verify --repair` does; a replay or verify
that writes nothing to the store does not ask for the change topic, and
`replay --input F --output O` contacts no broker at all; brokers that cannot
be reached are a different error, reported once the client's connection
set-up timeout has passed; with every topic present, `run` starts and gets
its partitions."""
import json
import signal
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

    # 3b. The change topic is missing: every command that announces writes
    #     refuses to start, naming it; those that write no document go on.
    missing_changes = s.topic + "-changes-missing"
    commands = s.generate("--seed", "5", "--count", "200", "--assignments", "5", "--students", "5")
    no_changes = [("changes.topic", missing_changes)]
    for what, cmd in (("run", ["run"]),
                      ("replay from the topics into the store", ["replay"]),
                      ("replay --input into the store", ["replay", "--input", commands]),
                      ("verify --repair", ["verify", "--repair", "--allow-empty"]),
                      ("verify --repair --input", ["verify", "--repair", "--input", commands])):
        rc, err, secs = attempt([cmd[0], *s.settings("g-startup", no_changes), *cmd[1:]])
        errors = error_lines(err)
        assert rc == 1, f"{what} with a missing change topic: exit {rc}\n{err[-3000:]}"
        assert len(errors) == 1 and f"changes.topic '{missing_changes}'" in errors[0] \
            and "does not exist" in errors[0], f"{what}: not one line naming the change topic: {errors}\n{err[-3000:]}"
        assert "worker started" not in err and "summary" not in err, f"{what}: {err[-3000:]}"
        h.log(f"{what}, missing change topic: exit 1 in {secs:.1f}s")
    assert not s.stored(), "a command that refused to start wrote documents"
    assert not h.topic_exists(missing_changes), "a start-up check created the change topic"
    #     A replay to a file and a verify without --repair announce nothing.
    rc, err, _ = attempt(["replay", *s.settings("g-unused", no_changes), "--output", out])
    assert rc == 0, f"replay --output with a missing change topic: exit {rc}\n{err[-3000:]}"
    rc, err, _ = attempt(["verify", *s.settings("g-unused", no_changes), "--allow-empty"])
    assert rc == 0, f"verify with a missing change topic: exit {rc}\n{err[-3000:]}"
    #     replay --input F --output O contacts nothing, whatever the configuration names.
    nowhere = [("kafka.brokers", f"127.0.0.1:{h.free_port()}"), ("changes.topic", missing_changes),
               ("store.uri", f"mongodb://127.0.0.1:{h.free_port()}")]
    rc, err, secs = attempt(["replay", *s.settings("g-unused", nowhere), "--input", commands, "--output", out])
    assert rc == 0 and secs < 10, f"replay --input --output: exit {rc} in {secs:.1f}s\n{err[-3000:]}"

    # 4. Brokers that cannot be reached: a different error, after the
    #    connection set-up timeout (shortened here), naming no topic.
    port = h.free_port()  # nothing listens there
    timeout_args = [("kafka.brokers", f"127.0.0.1:{port}"),
                    ("kafka.rdkafka.socket.connection.setup.timeout.ms", "3000")]
    for cmd in (["run"], ["replay", "--output", out], ["replay", "--input", commands]):
        # replay --input into the store asks the brokers only for the change topic.
        extra = [("changes.topic", missing_changes)] if "--input" in cmd else []
        rc, err, secs = attempt([cmd[0], *s.settings("g-startup", timeout_args + extra), *cmd[1:]])
        errors = error_lines(err)
        assert rc == 1, f"{cmd[0]} with unreachable brokers: exit {rc}\n{err[-3000:]}"
        assert len(errors) == 1 and "no Kafka broker answered within 3 s" in errors[0] \
            and "does not exist" not in errors[0], f"{cmd[0]}: {errors}\n{err[-3000:]}"
        assert secs >= 2.5, f"{cmd[0]} gave up on the brokers after {secs:.1f}s, before the timeout"
        h.log(f"{cmd[0]}, unreachable brokers: exit 1 in {secs:.1f}s")

    #    SIGINT during that wait: the replay says so and exits 130 at once.
    errf = open(s.path("interrupted.err"), "w+")
    p = subprocess.Popen([h.AGGREGATOR, "replay", *s.settings("g-startup", [
        ("kafka.brokers", f"127.0.0.1:{port}"), ("changes.topic", missing_changes)]), "--input", commands],
        stderr=errf)
    s.procs.append(p)
    h.wait_until(lambda: '"component":"rdkafka"' in open(errf.name).read() or p.poll() is not None, 60,
                 "the replay never tried the broker")
    p.send_signal(signal.SIGINT)
    assert p.wait(60) == 130, f"exit {p.returncode}\n{open(errf.name).read()[-3000:]}"
    err = open(errf.name).read()
    assert error_lines(err) == ["replay: interrupted"], err[-3000:]

    # 5. With every topic present (the change topic too) a replay into the
    #    store and a repair go through, and the worker starts and is assigned partitions;
    #    a consumer-only and a producer-only property reach only their clients
    #    (docs/CONFIG.md): neither client warns about the other's.
    changes = [("changes.topic", s.create_topic("changes", 1))]
    for cmd in (["replay", "--input", commands], ["verify", "--repair", "--input", commands]):
        rc, err, _ = attempt([cmd[0], *s.settings("g-unused", changes), *cmd[1:]])
        assert rc == 0, f"{' '.join(cmd[:2])} with the change topic present: exit {rc}\n{err[-3000:]}"
    w = s.start_worker("g-startup", changes + [("kafka.rdkafka.auto.offset.reset", "earliest"),
                                               ("kafka.rdkafka.linger.ms", "10")])
    h.wait_until(lambda: s.holdings(w) or w.poll() is not None, 120,
                 lambda: f"worker never assigned:\n{s.worker_log(w)[-3000:]}")
    assert w.poll() is None, f"worker exited {w.returncode}:\n{s.worker_log(w)[-3000:]}"
    s.stop_worker(w)
    warned = [l for l in s.worker_log(w).splitlines() if "CONFWARN" in l or "will be ignored" in l]
    assert not warned, f"a client warned about a property meant for another: {warned}"


if __name__ == "__main__":
    h.main(scenario, "startup")
