#!/usr/bin/python3
"""Secrets never leak (logs, errors, `config show`), tried as a user would, with no
services: passwords holding '@', ':', '%', '/', spaces and non-ASCII, given in
store.uri (percent-encoded, and raw as a user might mistype them) and as the
SASL password, through --set, the environment, the -c file and *_file values;
run through `config check`, `config show`, `run` with a malformed store URI,
`run` against a store that refuses the credentials (a small fake MongoDB
server below answers the handshake and refuses PLAIN authentication, echoing
what it was sent, as a careless proxy or server could), and `run` with the
store down and librdkafka SASL debugging on, whose /metrics is read too.
Every output (stdout, stderr with its JSON log lines, /metrics) is searched for
each password and for every 3-character piece of it.

Environment: AGGREGATOR (the binary).
"""

import base64
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

BIN = os.environ.get("AGGREGATOR") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "aggregator")
TMP = tempfile.mkdtemp(prefix="agg-secrets-")

# Distinctive on purpose: no 3-character piece of them occurs in the worker's
# normal output (checked below against outputs with no secret in them).
PASSWORDS = ["Zq@9:x/%y \u00e9\u20acKw", "Qj:Xv-7Wz", "Kp@Zx-8Yq", "3%Jq/Vx wZ", "\u0174\u00fcq-\u1e9e9Zx"]
SASL = "Sf%Qx@9:/ W\u00f6k"

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def pieces(secret):
    out = {secret, urllib.parse.quote(secret, safe="")}
    out |= {secret[i:i + 3] for i in range(len(secret) - 2)}
    return out


def leaks(text, secrets):
    return sorted({p for s in secrets for p in pieces(s) if p in text})


def env_without_ours(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGGREGATOR_")}
    env.update(extra or {})
    return env


def run(args, env=None, timeout=30):
    """(exit status or None when it had to be killed after timeout s, stdout, stderr)."""
    try:
        r = subprocess.run([BIN] + args, env=env_without_ours(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
        rc, out, err = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = None, e.stdout or b"", e.stderr or b""
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def uri(password, encode, host="db.invalid:27017", options="serverSelectionTimeoutMS=300"):
    pw = urllib.parse.quote(password, safe="") if encode else password
    return "mongodb://appuser:%s@%s/?%s" % (pw, host, options)


def sources(section, key, value, tag):
    """(label, args, env) for one value through every source."""
    env_key = "AGGREGATOR_%s_%s" % (section.upper(), key.upper().replace(".", "_"))
    f = write("%s.value" % tag, value + "\n")
    ini = write("%s.ini" % tag, "[%s]\n%s = %s\n" % (section, key, value))
    ini_file = write("%s-file.ini" % tag, "[%s]\n%s_file = %s\n" % (section, key, f))
    return [
        ("--set", ["--set", "%s.%s=%s" % (section, key, value)], {}),
        ("environment", [], {env_key: value}),
        ("file", ["-c", ini], {}),
        ("_file in the file", ["-c", ini_file], {}),
        ("_file in --set", ["--set", "%s.%s_file=%s" % (section, key, f)], {}),
        ("_file in the environment", [], {env_key + "_FILE": f}),
    ]


def check_outputs(what, secrets, *texts):
    found = leaks("\n".join(texts), secrets)
    if found:
        fail("%s: secret pieces %r in the output:\n%s" % (what, found[:5], "\n".join(texts)[-3000:]))


# ---- the baseline: the passwords' pieces are not in ordinary output --------

def test_baseline():
    texts = [run(["config", "show"])[1], run(["config", "describe"])[1],
             run(["config", "check", "--set", "store.uri=mongodb://appuser:x@db.invalid:27017/?tls=maybe"])[2],
             run(["config", "check", "--set", "store.uri=mongodb://appuser:x:y@db.invalid:27017/"])[2]]
    found = leaks("\n".join(texts), PASSWORDS + [SASL])
    if found:
        fail("test passwords are not distinctive: %r occur in ordinary output" % found)


# ---- config check / show, every source -------------------------------------

def test_config_commands():
    n = 0
    for i, pw in enumerate(PASSWORDS):
        for encode in (True, False):
            value = uri(pw, encode)
            for label, args, env in sources("store", "uri", value, "u%d%d" % (i, encode)):
                for action in ("check", "show"):
                    rc, out, err = run(["config", action] + args, env)
                    check_outputs("config %s, store.uri %s (%s)" % (action, "encoded" if encode else "raw", label),
                                  [pw], out, err)
                    if encode and rc != 0:
                        fail("config %s with an encoded password (%s): exit %s: %s" % (action, label, rc, err))
                    # A URI read through uri_file is shown as that key and its path.
                    shown = ("uri_file = %s" % os.path.join(TMP, "u%d%d.value" % (i, encode)) if "_file" in label
                             else "uri = mongodb://appuser:***@db.invalid:27017/")
                    if encode and action == "show" and shown not in out:
                        fail("config show (%s) does not show '%s':\n%s" % (label, shown, out))
                    if rc not in (0, 2):
                        fail("config %s: exit %s" % (action, rc))
                    n += 1
    for label, args, env in sources("kafka", "rdkafka.sasl.password", SASL, "sasl"):
        for action in ("check", "show"):
            rc, out, err = run(["config", action] + args, env)
            check_outputs("config %s, sasl.password (%s)" % (action, label), [SASL], out, err)
            if rc != 0:
                fail("config %s with a SASL password (%s): exit %s: %s" % (action, label, rc, err))
            n += 1
    # A wrong type next to a secret: the error names the key, not the value.
    f = write("int.value", PASSWORDS[0] + "\n")
    rc, out, err = run(["config", "check", "--set", "batch.linger_ms_file=" + f])
    check_outputs("config check, batch.linger_ms_file", [PASSWORDS[0]], out, err)
    if rc != 2:
        fail("batch.linger_ms_file with text: exit %s" % rc)
    print("config check/show: %d runs" % n)


# ---- run with a malformed store URI -----------------------------------------

def test_run_malformed_uri():
    for i, pw in enumerate(PASSWORDS):
        value = uri(pw, False)
        if run(["config", "check", "--set", "store.uri=" + value])[0] == 0:
            continue  # nothing in it needs escaping: a valid URI
        for label, args, env in sources("store", "uri", value, "r%d" % i)[:3]:
            rc, out, err = run(["run", "--set", "kafka.brokers=127.0.0.1:1"] + args, env)
            check_outputs("run, raw store.uri (%s)" % label, [pw], out, err)
            if rc != 2:
                fail("run with a raw password %r: exit %s, not 2" % (pw, rc))


# ---- librdkafka refuses a secret value when the client is created -------------

def test_kafka_client_error():
    """librdkafka's rd_kafka_new() error quotes the value it refuses (here an
    unknown SASL mechanism read through a _file key, hence a secret): the
    configuration check that builds the clients at load prints it scrubbed,
    and `run` and `replay` exit 2 (a configuration error) before any work."""
    pw = PASSWORDS[1]
    for label, args, env in sources("kafka", "rdkafka.sasl.mechanism", pw, "mech")[3:]:
        base = ["--set", "kafka.brokers=127.0.0.1:1", "--set", "kafka.rdkafka.security.protocol=SASL_PLAINTEXT"]
        for cmd in (["run"], ["replay", "--output", os.devnull]):
            rc, out, err = run(cmd + base + args, env)
            check_outputs("%s, a refused sasl.mechanism (%s)" % (cmd[0], label), [pw], out, err)
            if rc != 2 or "Unsupported SASL mechanism" not in err:
                fail("%s with a refused sasl.mechanism (%s): exit %s:\n%s" % (cmd[0], label, rc, err[-2000:]))


def test_oauthbearer_config_quoted():
    """librdkafka 2.0, unable to parse sasl.oauthbearer.config, logs the rest
    of the value from the word it stopped at ("Unrecognized
    sasl.oauthbearer.config beginning at: ...") or one value of it: those
    parts are secrets too (redact.h)."""
    tail = "zq!! kq=W7vQpX2mJr"
    for value, quoted in (("principal=qzx9 " + tail, "Unrecognized sasl.oauthbearer.config"),
                          ("principal=qzx9 lifeSeconds=W7vQpX2mJr", "non-integral")):
        args = ["replay", "--output", os.devnull, "--set", "kafka.brokers=127.0.0.1:1",
                "--set", "kafka.rdkafka.security.protocol=SASL_PLAINTEXT",
                "--set", "kafka.rdkafka.sasl.mechanism=OAUTHBEARER",
                "--set", "kafka.rdkafka.enable.sasl.oauthbearer.unsecure.jwt=true",
                "--set", "kafka.rdkafka.sasl.oauthbearer.config=" + value]
        rc, out, err = run(args, timeout=10)  # it waits for the broker: killed
        if quoted not in err:
            fail("replay with a malformed sasl.oauthbearer.config: no '%s' line:\n%s" % (quoted, err[-2000:]))
        check_outputs("replay with a malformed sasl.oauthbearer.config", [tail, "W7vQpX2mJr"], out, err)


# ---- a MongoDB server that refuses the credentials ---------------------------

def bson_encode(doc):
    out = b""
    for k, v in doc.items():
        key = k.encode() + b"\0"
        if isinstance(v, bool):
            out += b"\x08" + key + (b"\x01" if v else b"\x00")
        elif isinstance(v, int):
            out += b"\x10" + key + struct.pack("<i", v)
        elif isinstance(v, float):
            out += b"\x01" + key + struct.pack("<d", v)
        elif isinstance(v, str):
            s = v.encode() + b"\0"
            out += b"\x02" + key + struct.pack("<i", len(s)) + s
        elif isinstance(v, dict):
            out += b"\x03" + key + bson_encode(v)
        elif isinstance(v, list):
            out += b"\x04" + key + bson_encode({str(i): x for i, x in enumerate(v)})
        else:
            raise TypeError(type(v))
    return struct.pack("<i", len(out) + 5) + out + b"\0"


def bson_first_fields(data):
    """{name: value} for the string and binary fields of a document (enough
    to see the command and a saslStart payload)."""
    fields, i, end = {}, 4, struct.unpack_from("<i", data)[0] - 1
    first = None
    while i < end:
        t = data[i]
        j = data.index(b"\0", i + 1)
        name = data[i + 1:j].decode()
        first = first or name
        i = j + 1
        if t in (0x01, 0x09, 0x11, 0x12):
            i += 8
        elif t == 0x02:
            n = struct.unpack_from("<i", data, i)[0]
            fields[name] = data[i + 4:i + 4 + n - 1].decode("utf-8", "replace")
            i += 4 + n
        elif t in (0x03, 0x04):
            i += struct.unpack_from("<i", data, i)[0]
        elif t == 0x05:
            n = struct.unpack_from("<i", data, i)[0]
            fields[name] = data[i + 5:i + 5 + n]
            i += 5 + n
        elif t == 0x08:
            i += 1
        elif t == 0x10:
            i += 4
        elif t == 0x0A:
            pass
        else:
            break
    return first, fields


class RefusingMongo:
    """Answers hello, refuses saslStart with an error that quotes the PLAIN
    payload it was sent (user and password in clear)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.received = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.conn, args=(c,), daemon=True).start()

    @staticmethod
    def recv(c, n):
        b = b""
        while len(b) < n:
            chunk = c.recv(n - len(b))
            if not chunk:
                raise EOFError
            b += chunk
        return b

    def conn(self, c):
        hello = {"ismaster": True, "isWritablePrimary": True, "helloOk": True, "maxBsonObjectSize": 16777216,
                 "maxMessageSizeBytes": 48000000, "maxWriteBatchSize": 100000, "minWireVersion": 0,
                 "maxWireVersion": 13, "ok": 1.0}
        try:
            while True:
                length, req_id, _, op = struct.unpack("<iiii", self.recv(c, 16))
                body = self.recv(c, length - 16)
                if op == 2004:  # OP_QUERY: the legacy handshake
                    j = body.index(b"\0", 4)
                    doc = bson_encode(hello)
                    reply = struct.pack("<iqii", 0, 0, 0, 1) + doc
                    c.sendall(struct.pack("<iiii", 16 + len(reply), 1, req_id, 1) + reply)
                    continue
                if op != 2013:
                    return
                doc = body[5:5 + struct.unpack_from("<i", body, 5)[0]]
                cmd, fields = bson_first_fields(doc)
                if cmd in ("hello", "isMaster", "ismaster"):
                    answer = hello
                elif cmd == "saslStart":
                    payload = fields.get("payload", b"")
                    raw = base64.b64decode(payload) if isinstance(payload, str) else payload
                    text = raw.decode("utf-8", "replace").replace("\0", " ")
                    self.received.append(text)
                    answer = {"ok": 0.0, "code": 18, "codeName": "AuthenticationFailed",
                              "errmsg": "Authentication failed for%s" % text}
                else:
                    answer = {"ok": 1.0}
                reply = struct.pack("<I", 0) + b"\0" + bson_encode(answer)
                c.sendall(struct.pack("<iiii", 16 + len(reply), 1, req_id, 2013) + reply)
        except (EOFError, OSError, ValueError):
            pass
        finally:
            c.close()


def test_run_store_refuses_credentials():
    server = RefusingMongo()
    for i, pw in enumerate(PASSWORDS):
        value = uri(pw, True, "127.0.0.1:%d" % server.port,
                    "authMechanism=PLAIN&authSource=%24external&serverSelectionTimeoutMS=2000")
        for label, args, env in sources("store", "uri", value, "a%d" % i)[::3]:
            before = len(server.received)
            for fmt in ("json", "text"):
                rc, out, err = run(["run", "--set", "kafka.brokers=127.0.0.1:1", "--set", "log.level=debug",
                                    "--set", "log.format=" + fmt] + args, env)
                check_outputs("run, store refuses the credentials (%s, %s)" % (label, fmt), [pw], out, err)
                if rc != 1 or "store refused the worker" not in err:
                    fail("run against a refusing store (%s): exit %s:\n%s" % (label, rc, err[-2000:]))
            if not any(pw in t for t in server.received[before:]):
                fail("the fake server never saw the password (%s): %r" % (label, server.received[before:]))
    server.sock.close()


# ---- run with the store down and librdkafka SASL debugging: logs and /metrics --

def test_run_outage_with_sasl_debug():
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: the store is down
    pw = PASSWORDS[0]
    args = ["run", "--set", "kafka.brokers=127.0.0.1:1", "--set", "metrics.listen=127.0.0.1:0",
            "--set", "store.uri=" + uri(pw, True, "127.0.0.1:%d" % port, "serverSelectionTimeoutMS=300"),
            "--set", "kafka.rdkafka.security.protocol=SASL_PLAINTEXT", "--set", "kafka.rdkafka.sasl.mechanism=PLAIN",
            "--set", "kafka.rdkafka.sasl.username=appuser", "--set", "kafka.rdkafka.sasl.password=" + SASL,
            "--set", "kafka.rdkafka.debug=all", "--set", "log.level=debug"]
    errf = open(os.path.join(TMP, "outage.err"), "w+b")
    p = subprocess.Popen([BIN] + args, env=env_without_ours(), stdout=subprocess.PIPE, stderr=errf)
    metrics, port_seen = "", None
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and p.poll() is None:
            errf.seek(0)
            text = errf.read().decode("utf-8", "replace")
            m = re.search(r'"msg":"metrics endpoint listening".*?"port":(\d+)', text)
            if m and "Client configuration" in text:
                port_seen = int(m.group(1))
                metrics = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port_seen, timeout=10).read()
                metrics = metrics.decode("utf-8", "replace")
                break
            time.sleep(0.2)
    finally:
        p.send_signal(signal.SIGKILL)
        out = p.communicate()[0].decode("utf-8", "replace")
    errf.seek(0)
    err = errf.read().decode("utf-8", "replace")
    errf.close()
    if not port_seen:
        fail("run with the store down: no metrics port or no librdkafka configuration dump logged:\n" + err[-3000:])
    if "aggregator_build_info" not in metrics:
        fail("no /metrics read")
    check_outputs("run with the store down and SASL debugging", [pw, SASL], out, err, metrics)


def main():
    for t in (test_baseline, test_config_commands, test_run_malformed_uri, test_kafka_client_error,
              test_oauthbearer_config_quoted, test_run_store_refuses_credentials, test_run_outage_with_sasl_debug):
        n = len(failures)
        t()
        print("%s: %s" % (t.__name__, "ok" if len(failures) == n else "FAILED"))
    subprocess.run(["rm", "-rf", TMP])
    if failures:
        print("%d failure(s)" % len(failures), file=sys.stderr)
        return 1
    print("secrets: no output contains a secret or a piece of one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
