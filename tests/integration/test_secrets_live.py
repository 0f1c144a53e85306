#!/usr/bin/env python3
"""Secrets never leak from a live worker (docs/CONFIG.md and docs/METRICS.md), against the
real stack: FerretDB refusing the credentials of a SCRAM login (it supports
only PLAIN, see accepted_uri), librdkafka's SASL/PLAIN
handshake failing against the plaintext broker with its debug contexts on, and
a healthy run whose store URI carries a password. Every log line (JSON and
text) and /metrics are searched for each password and any 3-character piece of
it. tests/cli/test_secrets.py covers the configuration paths without services."""
import re
import signal
import urllib.parse
import urllib.request

import harness as h

STORE_PW = "Zq@9:x/%y \u00e9\u20acKw"
SASL_PW = "Sf%Qx@9:/ W\u00f6k"


def pieces(secret):
    out = {secret, urllib.parse.quote(secret, safe="")}
    return out | {secret[i:i + 3] for i in range(len(secret) - 2)}


def assert_clean(what, text, secrets=(STORE_PW, SASL_PW)):
    found = sorted({p for s in secrets for p in pieces(s) if p in text})
    assert not found, f"{what}: secret pieces {found[:5]} in:\n{text[-3000:]}"


def store_uri(options="", user="appuser"):
    host = h.MONGO.split("://", 1)[1].rstrip("/")
    return "mongodb://%s:%s@%s/%s" % (user, urllib.parse.quote(STORE_PW, safe=""), host, options)


# A PLAIN login that FerretDB accepts: on SQLite any user, on PostgreSQL (the
# stack's default) FerretDB logs in to PostgreSQL with these credentials, and
# the stack's cluster trusts its `postgres` role whatever the password.
def accepted_uri():
    return store_uri("?authMechanism=PLAIN", user="postgres")


def metrics(s, w):
    m = re.search(r'"msg":"metrics endpoint listening".*?"port":(\d+)', s.worker_log(w))
    assert m, "no metrics port logged:\n" + s.worker_log(w)[-2000:]
    with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/metrics", timeout=10) as r:
        return r.read().decode("utf-8", "replace")


def scenario(s):
    # 1. The store refuses the credentials: run ends with the store's reason.
    for fmt in ("json", "text"):
        w = s.start_worker("g-refused", [("store.uri", store_uri()), ("log.level", "debug"), ("log.format", fmt)])
        assert w.wait(60) == 1, f"exit {w.returncode}:\n{s.worker_log(w)[-2000:]}"
        log = s.worker_log(w)
        assert "store refused the worker" in log, log[-2000:]
        assert_clean(f"refused store ({fmt})", log)

    # 2. SASL/PLAIN against the plaintext listener: librdkafka logs the failed
    #    handshake (and, with debug, its configuration); the store login works.
    w = s.start_worker("g-sasl", [
        ("store.uri", accepted_uri()), ("metrics.listen", "127.0.0.1:0"), ("log.level", "debug"),
        ("kafka.rdkafka.security.protocol", "SASL_PLAINTEXT"), ("kafka.rdkafka.sasl.mechanism", "PLAIN"),
        ("kafka.rdkafka.sasl.username", "appuser"), ("kafka.rdkafka.sasl.password", SASL_PW),
        ("kafka.rdkafka.debug", "security,broker,conf")])
    h.wait_until(lambda: "SASL PLAIN mechanism handshake failed" in s.worker_log(w) or w.poll() is not None, 60,
                 lambda: "no SASL failure logged:\n" + s.worker_log(w)[-2000:])
    assert w.poll() is None, f"worker exited {w.returncode}:\n{s.worker_log(w)[-2000:]}"
    text = metrics(s, w)
    w.send_signal(signal.SIGKILL)
    w.wait()
    assert "sasl.password" in s.worker_log(w), "librdkafka's configuration dump was not logged"
    assert_clean("SASL handshake failure", s.worker_log(w) + text)

    # 3. A healthy run with a password in the URI: commands written, lag
    #    labelled, nothing leaked on the way.
    stream = s.generate("--seed", "14", "--count", "300", "--assignments", "6", "--students", "5")
    w = s.start_worker("g-ok", [("store.uri", accepted_uri()), ("metrics.listen", "127.0.0.1:0"),
                                ("log.level", "debug")])
    s.produce(stream)
    s.wait_committed("g-ok", alive=[w])
    # The lag gauges come with librdkafka's periodic statistics: wait for them.
    h.wait_until(lambda: "aggregator_consumer_lag{topic=" in metrics(s, w), 60,
                 lambda: "no consumer lag in /metrics:\n" + metrics(s, w)[-2000:])
    text = metrics(s, w)
    s.stop_worker(w)
    assert_clean("healthy run", s.worker_log(w) + text)
    want, _ = s.expected(stream)
    h.assert_same_documents(want, s.stored())


if __name__ == "__main__":
    h.main(scenario, "secrets")
