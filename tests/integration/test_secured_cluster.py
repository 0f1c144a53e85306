#!/usr/bin/env python3
"""The production template on a secured cluster (docs/OPERATIONS.md, "Running on a secured cluster"):
scripts/stack's secured profile (started here when it is not running: Kafka with SASL_SSL, SCRAM-SHA-512
and PLAIN users and the StandardAuthorizer; FerretDB with a TLS-only listener on a PostgreSQL that checks
passwords) and config/production.ini's own settings: SASL_SSL with SCRAM-SHA-512, the CA file, the password
in a file and the store URI in a file (TLS, the CA). The test names only addresses, topics, the group and
the database. The doc's ```sql block (the store's role) is the one the profile makes, and the test's store
URI logs in as that role.

The worker's user gets exactly the grants the doc's ```sh block gives (run as written, with this test's
names), and with them `run` stores a stream with invalid lines (the documents `replay --input` makes, every
invalid line in the dead-letter topic, every write announced on the change topic), `replay` rebuilds the
documents from the topic into another database, and `verify` finds the store equal to the topic. The
grants listed for the user on this test's resources are those four and no others.
"""
import fcntl
import json
import os
import re
import subprocess

import harness as h

SEC = os.path.join(h.CACHE, "stack-secured")
SEC_BROKERS = "127.0.0.1:" + os.environ.get("AGG_SECURED_KAFKA_PORT", "19292")
OPERATIONS = os.path.join(h.SRC, "docs", "OPERATIONS.md")
PRODUCTION = os.path.join(h.SRC, "config", "production.ini")


def ensure_secured():
    """Starts the secured profile unless it runs; one test at a time asks (a lock in the cache dir)."""
    with open(os.path.join(h.CACHE, "stack-secured.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if subprocess.run([h.STACK, "status-secured"], capture_output=True).returncode != 0:
            subprocess.run([h.STACK, "start-secured"], check=True)


def doc_section(text, heading):
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1:]
    m = re.search(r"^## ", rest, re.M)
    return rest[:m.start()] if m else rest


def acl_block():
    blocks = re.findall(r"^```sh\n(.*?)^```$", doc_section(open(OPERATIONS).read(), "## Running on a secured cluster"),
                        re.M | re.S)
    assert len(blocks) == 1, f"want one ```sh block of grants, found {len(blocks)}"
    return blocks[0]


def production_settings(s, group, changes, database, extra=()):
    """config/production.ini with this test's names and addresses; its security settings as shipped."""
    sets = [("kafka.brokers", SEC_BROKERS), ("kafka.topics", s.topic), ("kafka.group", group),
            ("kafka.dlq_topic", s.dlq), ("kafka.rdkafka.ssl.ca.location", os.path.join(SEC, "tls", "ca.pem")),
            ("kafka.rdkafka.sasl.password_file", os.path.join(SEC, "secrets", "kafka-password")),
            ("store.uri_file", os.path.join(SEC, "secrets", "mongodb-uri")), ("store.database", database),
            ("changes.topic", changes), ("metrics.listen", f"127.0.0.1:{h.free_port()}"),
            ("batch.linger_ms", "50"), ("log.format", "json"), *extra]
    args = ["-c", PRODUCTION]
    for k, v in sets:
        args += ["--set", f"{k}={v}"]
    return args


def acls_of(s, names):
    """(resource type, name, operation) of the ALLOW ACLs of User:aggregator on the resources in names."""
    out = h.run([os.path.join(SEC, "bin", "kafka-acls.sh"), "--bootstrap-server", SEC_BROKERS, "--command-config",
                 os.path.join(SEC, "admin.properties"), "--list", "--principal", "User:aggregator"])
    got = set()
    for m in re.finditer(r"resourceType=(\w+), name=([^,]+), patternType=\w+\)`:\s*\n((?:\s+\(principal.*\n?)+)", out):
        if m.group(2) in names:
            for op in re.findall(r"operation=(\w+), permissionType=ALLOW", m.group(3)):
                got.add((m.group(1), m.group(2), op))
    return got


def scenario(s):
    # The store role the doc gives is the one the secured profile makes (and this test logs in as).
    sql = re.findall(r"^```sql\n(.*?)^```$", doc_section(open(OPERATIONS).read(), "## Running on a secured cluster"),
                     re.M | re.S)
    assert len(sql) == 1, f"want one ```sql block of the store role, found {len(sql)}"
    assert sql[0] in open(os.path.join(h.SRC, "scripts", "stack-secured.sh")).read(), \
        "the doc's store role is not the one scripts/stack-secured.sh makes"
    changes = s.create_topic("changes", 3)
    group = s.group("aggregator")

    # The doc's grants, as written, with this test's names.
    script = acl_block().replace("--bootstrap-server B ", f"--bootstrap-server {SEC_BROKERS} ")
    script = script.replace("admin.properties", os.path.join(SEC, "admin.properties"))
    script = script.replace("assignment-commands-dlq", s.dlq).replace("assignment-changes", changes)
    script = script.replace("assignment-commands", s.topic).replace("--group aggregator", f"--group {group}")
    env = dict(os.environ, PATH=os.path.join(SEC, "bin") + os.pathsep + os.environ["PATH"])
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"the grants block exited {r.returncode}:\n{script}\n{r.stderr[-3000:]}"
    want = {("TOPIC", s.topic, "READ"), ("GROUP", group, "READ"), ("TOPIC", s.dlq, "WRITE"),
            ("TOPIC", changes, "WRITE")}
    got = acls_of(s, {s.topic, group, s.dlq, changes})
    assert got == want, f"the user's grants on this test's resources: {sorted(got)}, want {sorted(want)}"

    # run: SCRAM-SHA-512 with the template's settings; documents, dead letters and change events.
    stream = s.generate("--seed", "71", "--count", "3000", "--assignments", "20", "--students", "20",
                        "--invalid-rate", "0.02", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, rejects = s.expected(stream)
    assert rejects, "the stream must contain invalid lines"
    s.produce(stream)
    logf = open(s.path("worker-0.log"), "w")
    w = subprocess.Popen([h.AGGREGATOR, "run", *production_settings(s, group, changes, s.db)], stdout=logf,
                         stderr=logf)
    w.logpath = logf.name
    s.workers.append(w)
    s.wait_committed("aggregator", alive=[w])
    s.stop_worker(w)
    stored = s.stored()
    h.assert_same_documents(expected, stored)
    assert len(s.dlq_messages()) == len(rejects), (len(s.dlq_messages()), len(rejects))
    h.assert_fold_equals_store(h.change_events(s, changes), stored)
    assert open(os.path.join(SEC, "secrets", "kafka-password")).read().strip() not in s.worker_log(w)

    # replay from the topic into another database, and verify the store against the topic.
    db2 = s.db + "_replay"
    try:
        h.run([h.AGGREGATOR, "replay", *production_settings(s, group, "", db2, [("log.level", "warn")])],
              timeout=300)
        out = h.run([h.tool("store_tool"), "dump", h.MONGO, db2, h.COLLECTION])
        h.assert_same_documents(expected, {d["_id"]: d for d in map(json.loads, out.splitlines())})
    finally:
        subprocess.run([h.tool("store_tool"), "drop", h.MONGO, db2], capture_output=True)
    r = subprocess.run([h.AGGREGATOR, "verify", *production_settings(s, group, "", s.db, [("log.level", "warn")])],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"verify exited {r.returncode}: {r.stderr[-3000:]}"

    # PLAIN, the other mechanism the profile has, logs in with the same password.
    r = subprocess.run([h.AGGREGATOR, "config", "check", "--connect",
                        *production_settings(s, group, changes, s.db, [("kafka.rdkafka.sasl.mechanisms", "PLAIN")])],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"config check --connect with PLAIN exited {r.returncode}: {r.stderr[-2000:]}"


if __name__ == "__main__":
    ensure_secured()
    h.BROKERS = SEC_BROKERS
    with open(os.path.join(SEC, "secrets", "mongodb-uri")) as f:
        h.MONGO = f.read().strip()
    # kafka_tool (topics, produce, dump, committed) as the cluster's admin.
    os.environ["AGG_KAFKA_TOOL_PROPERTIES"] = os.path.join(SEC, "admin-rdkafka.properties")
    h.main(scenario, "secured", partitions=3)
