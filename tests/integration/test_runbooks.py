#!/usr/bin/env python3
"""The runbooks of docs/OPERATIONS.md run as written: "A store outage longer than the topic's retention" and
the alert AggregatorRetentionRisk's "Do".

Every ```sh block of those sections is run with bash, in order, against the local stack, from a directory
that has the repository's config/ (config/backfill.ini), with `aggregator` and Kafka's kafka-configs.sh (a
wrapper of the Java class, Kafka's jars from scripts/bootstrap) on PATH. The names the runbooks use are the
shipped defaults; the test gives them its own: `B` is the local broker, `assignment-commands` the test's
topic, the group `aggregator` its own group, and AGGREGATOR_* variables point config/backfill.ini at them
and at the test's database (they override the file). A block that fails fails the test.

The outage is the test's own: a worker of the group commits a first part of the stream, then a worker of
the same group whose store address refuses connections reads the rest and commits nothing. The runbook's
export then holds exactly what is not committed; the retention it sets is on the test's topic and is
removed again; once the store is back (the worker restarted with the store's real address) the replay and
verify of the export run, and verify exits 0.
"""
import os
import re
import signal
import subprocess
import tempfile

import harness as h

OPERATIONS = os.path.join(h.SRC, "docs", "OPERATIONS.md")
KAFKA_LIBS = os.path.join(h.CACHE, "kafka-4.1.1", "libs")  # scripts/lib.sh: agg_kafka_libs


def section(text, heading):
    """The text under heading ("### Name") up to the next heading of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1:]
    m = re.search(r"^#{1,%d} " % len(level), rest, re.M)
    return rest[:m.start()] if m else rest


def sh_blocks(text):
    """The ```sh blocks of text, each without its fence and indentation."""
    out = []
    for m in re.finditer(r"^( *)```sh\n(.*?)^\1```$", text, re.M | re.S):
        indent = len(m.group(1))
        out.append("".join(l[indent:] if l.strip() else l for l in m.group(2).splitlines(True)))
    return out


def tools_dir(d):
    """A directory for PATH: aggregator, and kafka-configs.sh running Kafka's ConfigCommand."""
    assert os.path.isdir(KAFKA_LIBS), f"{KAFKA_LIBS} missing: run scripts/bootstrap"
    bindir = os.path.join(d, "bin")
    os.makedirs(bindir)
    os.symlink(h.AGGREGATOR, os.path.join(bindir, "aggregator"))
    wrapper = os.path.join(bindir, "kafka-configs.sh")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec java -cp "{KAFKA_LIBS}/*" kafka.admin.ConfigCommand "$@"\n')
    os.chmod(wrapper, 0o755)
    return bindir


def topic_retention(bindir, topic):
    out = h.run([os.path.join(bindir, "kafka-configs.sh"), "--bootstrap-server", h.BROKERS, "--describe",
                 "--entity-type", "topics", "--entity-name", topic])
    m = re.search(r"\bretention\.ms=(\d+)", out)
    return int(m.group(1)) if m else None


def scenario(s):
    text = open(OPERATIONS).read()
    outage = sh_blocks(section(text, "### A store outage longer than the topic's retention"))
    risk = sh_blocks(section(text, "### AggregatorRetentionRisk"))
    assert len(outage) >= 4 and risk, (len(outage), len(risk))
    group = s.group("aggregator")

    d = tempfile.mkdtemp(prefix="agg-runbooks-", dir=s.dir)
    os.symlink(os.path.join(h.SRC, "config"), os.path.join(d, "config"))
    bindir = tools_dir(d)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"],
               AGGREGATOR_KAFKA_BROKERS=h.BROKERS, AGGREGATOR_KAFKA_TOPICS=s.topic, AGGREGATOR_KAFKA_GROUP=group,
               AGGREGATOR_KAFKA_DLQ_TOPIC=s.dlq, AGGREGATOR_STORE_URI=h.MONGO, AGGREGATOR_STORE_DATABASE=s.db,
               AGGREGATOR_STORE_WRITE_CONCERN="1")

    def run_block(block, fails=False):
        script = block.replace("--bootstrap-server B ", f"--bootstrap-server {h.BROKERS} ")
        script = script.replace("assignment-commands", s.topic).replace("committed:aggregator", f"committed:{group}")
        assert " B " not in script and "aggregator --" not in script.replace("aggregator --input", ""), script
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=d, env=env, capture_output=True, text=True)
        if fails:
            assert r.returncode != 0, f"runbook block passed where it must fail:\n{script}"
        else:
            assert r.returncode == 0, f"runbook block exited {r.returncode}:\n{script}\n{r.stderr[-3000:]}"
        return r

    # A first part, stored and committed by the group.
    stream = s.generate("--seed", "31", "--count", "4000", "--assignments", "20", "--students", "20",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, _ = s.expected(stream)
    head, tail = s.split(stream, 0.5)
    s.produce(head)
    w = s.start_worker("aggregator")
    s.wait_committed("aggregator", alive=[w])
    s.stop_worker(w)
    committed = s.committed("aggregator")

    # The outage: a worker of the group whose store refuses connections reads the rest, commits nothing.
    s.produce(tail)
    down = f"mongodb://127.0.0.1:{h.free_port()}/?serverSelectionTimeoutMS=500"
    w = s.start_worker("aggregator", [("store.uri", down)])
    s.wait_joined(w)
    h.wait_until(lambda: h.STORE_FAILED in s.worker_log(w), 120, "the worker logged no failed store write")
    tail_lines = sum(1 for _ in open(tail, "rb"))

    # AggregatorRetentionRisk's "Do", then the outage runbook's export and retention steps.
    for block in risk:
        run_block(block)
    run_block(outage[0])
    exported = open(os.path.join(d, "commands-at-risk.jsonl"), "rb").read().count(b"\n")
    assert exported == tail_lines, (exported, tail_lines)
    assert s.committed("aggregator") == committed, "the export moved the group's offsets"
    run_block(outage[1])
    assert topic_retention(bindir, s.topic) == 1209600000

    # The store is back: the worker restarted with its address commits the rest. The stalled one exits 1 on
    # SIGTERM: what it holds is not durable (and stays uncommitted).
    w.send_signal(signal.SIGTERM)
    assert w.wait(60) == 1, s.worker_log(w)[-2000:]
    w = s.start_worker("aggregator")
    s.wait_committed("aggregator", alive=[w])
    for block in outage[2:]:
        run_block(block)
    assert topic_retention(bindir, s.topic) is None, "the runbook did not restore the retention"
    s.stop_worker(w)
    h.assert_same_documents(expected, s.stored())

    # The check of step 3 fails when the store lacks a command of the export: a document deleted.
    check = [b for b in outage if "aggregator verify" in b][0]
    check = "".join(l for l in check.splitlines(True) if "aggregator replay" not in l)
    victim = sorted(s.stored())[0]
    h.run([h.tool("store_tool"), "delete", h.MONGO, s.db, h.COLLECTION, victim])
    run_block(check, fails=True)


if __name__ == "__main__":
    h.main(scenario, "runbooks", partitions=3)
