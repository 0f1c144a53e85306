#!/usr/bin/env python3
"""Faults that waiting does not heal, on scripts/stack's secured profile, each named with its cause
(docs/OPERATIONS.md, "Running on a secured cluster": what `config check --connect` checks):
- Kafka: a wrong password and a CA that did not sign the broker's certificate: `config check --connect` names
  them within 10 s, and `run` exits 1 naming them within 10 s;
- each missing grant, for a user of this test's own (SCRAM-SHA-512) given grants step by step: no grant at all,
  then Describe only on the command topic and the group: `--connect` names each within 10 s; with only Read on
  the command topic missing, `run` answers /readyz 503 naming it and logs it, then becomes ready by itself once
  Read is granted, and stores the commands;
- the store: a wrong password, a CA that did not sign its certificate, no TLS against its TLS-only listener:
  `--connect` names each within 10 s; `run` exits 1 naming the first two, and names the third in /readyz.
No secret appears in any output.
"""
import os
import subprocess
import time

import harness as h
import test_secured_cluster as sc

KAFKA_BOUND_S = 10


def connect(args, timeout=60):
    t0 = time.time()
    r = subprocess.run([h.AGGREGATOR, "config", "check", "--connect", *args], capture_output=True, text=True,
                       timeout=timeout)
    return r.returncode, r.stdout, r.stderr.splitlines(), time.time() - t0


def settings(s, user, pwfile, group, changes, ca=None, urifile=None, port=0):
    """The secured settings of this test (production.ini's), as user with the password in pwfile."""
    sets = [("kafka.brokers", sc.SEC_BROKERS), ("kafka.topics", s.topic), ("kafka.group", group),
            ("kafka.dlq_topic", s.dlq), ("changes.topic", changes),
            ("kafka.rdkafka.ssl.ca.location", ca or os.path.join(sc.SEC, "tls", "ca.pem")),
            ("kafka.rdkafka.sasl.username", user), ("kafka.rdkafka.sasl.password_file", pwfile),
            ("store.uri_file", urifile or os.path.join(sc.SEC, "secrets", "mongodb-uri")), ("store.database", s.db),
            ("metrics.listen", f"127.0.0.1:{port or h.free_port()}"), ("batch.linger_ms", "50"),
            ("log.format", "json")]
    args = ["-c", sc.PRODUCTION]  # its sasl.username, aggregator, is overridden by --set
    for k, v in sets:
        args += ["--set", f"{k}={v}"]
    return args


def acl(*args):
    h.run([os.path.join(sc.SEC, "bin", "kafka-acls.sh"), "--bootstrap-server", sc.SEC_BROKERS, "--command-config",
           os.path.join(sc.SEC, "admin.properties"), *args])


def secrets_of(s, *files):
    return [open(f).read().strip() for f in files]


def assert_no_secret(text, secrets):
    for sec in secrets:
        assert sec not in text, "a secret appears in the output"


def write(s, name, text):
    path = s.path(name)
    with open(path, "w") as f:
        f.write(text + "\n")
    os.chmod(path, 0o600)
    return path


def run_until_exit(s, args, name, bound):
    """Starts run; it must exit 1 within bound seconds. Returns its log."""
    logf = open(s.path(name), "w")
    t0 = time.time()
    w = subprocess.Popen([h.AGGREGATOR, "run", *args], stdout=logf, stderr=logf)
    try:
        rc = w.wait(timeout=bound + 20)
    except subprocess.TimeoutExpired:
        w.kill()
        raise AssertionError(f"run did not exit: {open(logf.name).read()[-2000:]}")
    secs = time.time() - t0
    text = open(logf.name).read()
    assert rc == 1, f"run exited {rc}: {text[-2000:]}"
    assert secs < bound, f"run took {secs:.1f}s to exit: {text[-2000:]}"
    return text


def scenario(s):
    changes = s.create_topic("changes", 1)
    group = s.group("faults")
    real_pw = os.path.join(sc.SEC, "secrets", "kafka-password")
    other_ca = s.path("other-ca.pem")
    h.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", s.path("other-ca.key"), "-out",
           other_ca, "-days", "2", "-subj", "/CN=not the stack's CA"])
    wrong_pw = write(s, "wrong-password", "not-the-password")
    secrets = secrets_of(s, real_pw, os.path.join(sc.SEC, "secrets", "store.password"))

    # 1. Kafka refuses the credentials: named within 10 s, by --connect and by run.
    rc, out, err, secs = connect(settings(s, "aggregator", wrong_pw, group, changes))
    assert rc == 1 and secs < KAFKA_BOUND_S, (rc, secs, err)
    assert err[0].startswith(f"aggregator: cannot reach Kafka broker {sc.SEC_BROKERS}: credentials refused: SASL "
                             "authentication failed for user 'aggregator' (SCRAM-SHA-512): "), err
    assert_no_secret("\n".join(err) + out, secrets + ["not-the-password"])
    text = run_until_exit(s, settings(s, "aggregator", wrong_pw, group, changes), "run-wrong-password.log",
                          KAFKA_BOUND_S)
    assert "credentials refused: SASL authentication failed for user 'aggregator' (SCRAM-SHA-512)" in text, text
    assert_no_secret(text, secrets + ["not-the-password"])
    h.log(f"kafka credentials refused: named in {secs:.1f}s")

    # 2. The broker's certificate does not verify against the configured CA.
    rc, out, err, secs = connect(settings(s, "aggregator", real_pw, group, changes, ca=other_ca))
    assert rc == 1 and secs < KAFKA_BOUND_S, (rc, secs, err)
    assert err[0].startswith(f"aggregator: cannot reach Kafka broker {sc.SEC_BROKERS}: the broker's certificate does "
                             f"not verify (kafka.rdkafka.ssl.ca.location '{other_ca}'): "), err
    text = run_until_exit(s, settings(s, "aggregator", real_pw, group, changes, ca=other_ca), "run-ca.log",
                          KAFKA_BOUND_S)
    assert "the broker's certificate does not verify" in text, text
    h.log(f"kafka certificate: named in {secs:.1f}s")

    # 3. The grants, for a user of this test's own.
    user = f"faults-{s.tag}"[:60]
    user_pw = write(s, "user-password", os.urandom(12).hex())
    h.run([os.path.join(sc.SEC, "bin", "kafka-configs.sh"), "--bootstrap-server", sc.SEC_BROKERS,
           "--command-config", os.path.join(sc.SEC, "admin.properties"), "--alter", "--add-config",
           f"SCRAM-SHA-512=[password={open(user_pw).read().strip()}]", "--entity-type", "users",
           "--entity-name", user])
    secrets += secrets_of(s, user_pw)
    args = settings(s, user, user_pw, group, changes)
    want = [f"aggregator: not authorized: user '{user}' may not read kafka.topics '{s.topic}' (no grant on it): "
            "it needs Read on the topic",
            f"aggregator: not authorized: user '{user}' may not write to kafka.dlq_topic '{s.dlq}' (no grant on it): "
            "it needs Write on the topic",
            f"aggregator: not authorized: user '{user}' may not write to changes.topic '{changes}' (no grant on it): "
            "it needs Write on the topic",
            f"aggregator: not authorized: user '{user}' may not join kafka.group '{group}' (no grant on it): "
            "it needs Read on the group"]

    def grants_named(want):
        # SCRAM credentials and ACLs reach the broker's authorizer shortly after the tools return.
        got = {}

        def named():
            got["r"] = connect(args)
            return got["r"][2] == want
        h.wait_until(named, 30, lambda: f"--connect said {got['r'][2]}, want {want}")
        rc, out, err, secs = got["r"]
        assert rc == 1 and out == "" and secs < KAFKA_BOUND_S, (rc, out, secs)
        assert_no_secret("\n".join(err), secrets)
    grants_named(want)

    p = f"User:{user}"
    acl("--add", "--allow-principal", p, "--operation", "Describe", "--topic", s.topic, "--group", group)
    acl("--add", "--allow-principal", p, "--operation", "Write", "--topic", s.dlq)
    grants_named([f"aggregator: not authorized: user '{user}' may not read kafka.topics '{s.topic}' (it may: "
                  "DESCRIBE): it needs Read on the topic", want[2],
                  f"aggregator: not authorized: user '{user}' may not join kafka.group '{group}' (it may: DESCRIBE): "
                  "it needs Read on the group"])
    h.log("missing grants: each named")

    # 4. run with Describe but no Read on the command topic: never ready, says why; ready once granted.
    acl("--add", "--allow-principal", p, "--operation", "Read", "--group", group)
    acl("--add", "--allow-principal", p, "--operation", "Write", "--topic", changes)
    grants_named([want[0].replace("(no grant on it)", "(it may: DESCRIBE)")])
    stream = s.generate("--seed", "5", "--count", "300", "--assignments", "5", "--students", "5")
    expected, _ = s.expected(stream)
    s.produce(stream)
    port = h.free_port()
    logf = open(s.path("run-no-read.log"), "w")
    w = subprocess.Popen([h.AGGREGATOR, "run", *settings(s, user, user_pw, group, changes, port=port)],
                         stdout=logf, stderr=logf)
    w.logpath = logf.name
    s.workers.append(w)
    reason = f"Kafka: not authorized: user '{user}' may not read kafka.topics '{s.topic}' (it may: DESCRIBE): " \
             "it needs Read on the topic"
    t0 = time.time()
    h.wait_until(lambda: h.http_get(port, "/readyz") in ((503, reason + "\n"), (503, reason)), 30,
                 lambda: f"/readyz: {h.http_get(port, '/readyz')}")
    assert time.time() - t0 < KAFKA_BOUND_S + 5
    assert reason[len("Kafka: "):] in s.worker_log(w), s.worker_log(w)[-2000:]
    s.assert_alive(w, "without Read")
    acl("--add", "--allow-principal", p, "--operation", "Read", "--topic", s.topic)
    h.wait_until(lambda: h.http_get(port, "/readyz")[0] == 200, 60, lambda: f"/readyz: {h.http_get(port, '/readyz')}")
    s.wait_committed("faults", alive=[w])
    s.stop_worker(w)
    h.assert_same_documents(expected, s.stored())
    assert_no_secret(s.worker_log(w), secrets)
    rc, out, err, _ = connect(args)
    assert rc == 0 and err == [], (rc, err)
    h.log("run without Read: not ready, named; ready once granted")

    # 5. The store: credentials refused, its certificate unverified, no TLS against its TLS-only listener.
    uri = open(os.path.join(sc.SEC, "secrets", "mongodb-uri")).read().strip()
    store_pw = secrets_of(s, os.path.join(sc.SEC, "secrets", "store.password"))[0]
    cases = [("wrong-password", uri.replace(store_pw, "not-the-store-password"), "credentials refused", True),
             ("other-ca", uri.replace(os.path.join(sc.SEC, "tls", "ca.pem"), other_ca),
              "the server's certificate does not verify (tlsCAFile in store.uri)", True),
             ("no-tls", uri.replace("tls=true&tlsCAFile=" + os.path.join(sc.SEC, "tls", "ca.pem") + "&", ""),
              "the server closed the connection at the first command: a TLS-only server? (store.uri has no tls=true)",
              False)]
    for name, bad, cause, exits in cases:
        assert bad != uri, name
        urifile = write(s, f"uri-{name}", bad)
        rc, out, err, secs = connect(settings(s, user, user_pw, group, changes, urifile=urifile))
        assert rc == 1 and len(err) == 1 and secs < KAFKA_BOUND_S, (name, rc, secs, err)
        assert err[0].startswith("aggregator: cannot reach the store mongodb://aggregator:***@") and \
            f": ping: {cause}: " in err[0], (name, err)
        assert_no_secret(err[0], secrets + ["not-the-store-password"])
        if exits:
            text = run_until_exit(s, settings(s, user, user_pw, group, changes, urifile=urifile), f"run-{name}.log",
                                  KAFKA_BOUND_S)
            assert "store refused the worker" in text and cause in text, text[-2000:]
        else:
            port = h.free_port()
            logf = open(s.path(f"run-{name}.log"), "w")
            w = subprocess.Popen([h.AGGREGATOR, "run", *settings(s, user, user_pw, group, changes, urifile=urifile,
                                                                  port=port)], stdout=logf, stderr=logf)
            w.logpath = logf.name
            s.workers.append(w)
            h.wait_until(lambda: h.http_get(port, "/readyz")[0] == 503 and cause in h.http_get(port, "/readyz")[1],
                         30, lambda: f"/readyz: {h.http_get(port, '/readyz')}")
            assert cause in s.worker_log(w)
            s.stop_worker(w)
        h.log(f"store {name}: named in {secs:.1f}s")


if __name__ == "__main__":
    sc.ensure_secured()
    h.BROKERS = sc.SEC_BROKERS
    with open(os.path.join(sc.SEC, "secrets", "mongodb-uri")) as f:
        h.MONGO = f.read().strip()
    os.environ["AGG_KAFKA_TOOL_PROPERTIES"] = os.path.join(sc.SEC, "admin-rdkafka.properties")
    h.main(scenario, "secured-faults", partitions=2)
