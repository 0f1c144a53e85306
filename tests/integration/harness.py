"""Shared helpers for the worker's integration scenarios.

Every scenario runs the real binary against the local stack (scripts/stack):
Kafka on AGG_KAFKA_BROKERS, FerretDB on AGG_MONGO_URI. Each uses its own
topics, consumer groups and database (names carry the scenario's tag), so
scenarios never see each other's data and ctest runs them side by side. A
scenario that stops or breaks a service of the stack says so in a line
"# exclusive: <why>" (CMakeLists.txt runs it alone) and does it through
stack() or stopped() below. The oracle is always `aggregator replay --input`
on the same stream: the spec says the final documents depend only on the set
of valid commands.
"""
import contextlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SRC = os.environ.get("AGG_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.environ.get("AGG_BINARY_DIR", os.path.join(SRC, "build"))
AGGREGATOR = os.environ.get("AGGREGATOR", os.path.join(BIN, "aggregator"))
BROKERS = os.environ.get("AGG_KAFKA_BROKERS", "127.0.0.1:19092")
MONGO = os.environ.get("AGG_MONGO_URI", "mongodb://127.0.0.1:27018")
COLLECTION = "assignment_aggregates"
STACK = os.path.join(SRC, "scripts", "stack")
REFERENCE_MERGE = os.path.join(SRC, "tests", "tools", "reference_merge.py")
CACHE = os.environ.get("AGG_CACHE_DIR", os.path.expanduser("~/.cache/aggregator"))
TOXIPROXY = os.path.join(CACHE, "bin", "toxiproxy-v2.5.0")  # scripts/lib.sh: AGG_TOXIPROXY_VERSION
STORE_FAILED = "store write failed, retrying"  # the worker's log line for a failed store write


def log(*a):
    print(*a, flush=True)


def wait_until(cond, timeout, what, interval=0.2):
    """Polls cond() until it is true; after timeout seconds raises AssertionError(what), what being a
    string or a function giving one (to describe the state at the time)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(interval)
    raise AssertionError(what() if callable(what) else what)


def free_port():
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def http_get(port, path):
    """(status, body) of GET path on the worker's metrics endpoint; status 0 while it does not listen."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
        return 0, str(e)


def metric(port, name, labels=""):
    """The sum of the samples of metric name whose labels contain the text labels (e.g. 'result="ok"'),
    or None while the endpoint does not answer."""
    status, text = http_get(port, "/metrics")
    if status != 200:
        return None
    total = 0.0
    for lab, v in re.findall(r"^%s(?:\{([^}]*)\})? (\S+)$" % re.escape(name), text, re.M):
        if labels in (lab or ""):
            total += float(v)
    return total


def tool(name):
    return os.path.join(BIN, name)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr[-2000:]}")
    return r.stdout


def stack(command):
    """scripts/stack COMMAND (mongo-stop, mongo-start, kafka-stop, kafka-start). Every scenario shares the stack,
    so only one marked exclusive may call it: scripts/stack refuses these commands to a test that ctest runs
    beside others (AGG_TEST_SHARED=1, CMakeLists.txt)."""
    subprocess.run([STACK, command], check=True)


@contextlib.contextmanager
def stopped(service):
    """The stack's "mongo" (FerretDB) or "kafka" stopped for the body, started again on the same data after it,
    whatever the body raised."""
    stack(f"{service}-stop")
    try:
        yield
    finally:
        stack(f"{service}-start")


def topic_exists(name):
    r = subprocess.run([tool("kafka_tool"), "end-offsets", BROKERS, name], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() != ""


def renamed_commands(gen_args, prefix):
    """The lines (with their newline) of gen_commands GEN_ARGS with every command id prefixed: command ids are
    unique per command, so a second part generated for a scenario gets ids of its own."""
    out = subprocess.run([tool("gen_commands"), *gen_args], capture_output=True, text=True, check=True).stdout
    lines = []
    for line in out.splitlines():
        cmd = json.loads(line)
        cmd["id"] = prefix + cmd["id"]
        lines.append(json.dumps(cmd, separators=(",", ":")) + "\n")
    return lines


def chunks(s, path, n):
    """n files of path's lines in order, about as long each: the parts of a stream produced in phases."""
    lines = open(path, "rb").readlines()
    size = -(-len(lines) // n)
    out = []
    for i in range(n):
        p = s.path(f"chunk-{i}.jsonl")
        with open(p, "wb") as f:
            f.writelines(lines[i * size:(i + 1) * size])
        out.append(p)
    return out


class Toxiproxy:
    """A toxiproxy server of the scenario's own (built by scripts/bootstrap into the cache) on a free API port:
    network faults between one scenario's worker and a service, seen by nobody else."""

    def __init__(self, s, port=None):
        """port: the API's port, a free one unless given."""
        assert os.access(TOXIPROXY, os.X_OK), f"{TOXIPROXY} missing: run scripts/bootstrap"
        self.port = port or free_port()
        logf = open(s.path("toxiproxy.log"), "w")
        p = subprocess.Popen([TOXIPROXY, "-host", "127.0.0.1", "-port", str(self.port)], stdout=logf, stderr=logf)
        s.procs.append(p)
        wait_until(lambda: http_get(self.port, "/version")[0] == 200, 60, "toxiproxy did not answer")

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.read()

    def proxy(self, name, upstream, listen=None):
        """A proxy to upstream ("host:port") on listen, a free port unless given; returns its "host:port"."""
        listen = listen or f"127.0.0.1:{free_port()}"
        self.call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream, "enabled": True})
        return listen

    def store_uri(self, socket_timeout_ms, listen=None):
        """The URI of a proxy to the stack's FerretDB (on listen, as for proxy), with the socket timeout given."""
        upstream = MONGO.split("//", 1)[1].split("/", 1)[0].split("?", 1)[0]
        return f"mongodb://{self.proxy('store', upstream, listen)}/?socketTimeoutMS={socket_timeout_ms}"

    def add(self, proxy, name, kind, stream, **attributes):
        self.call("POST", f"/proxies/{proxy}/toxics",
                  {"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes})

    def remove(self, proxy, name):
        self.call("DELETE", f"/proxies/{proxy}/toxics/{name}")


def stamps(doc):
    """{slot path: (v, c)} of a stored document."""
    out = {}
    if doc.get("header"):
        out["header"] = (doc["header"]["v"], doc["header"]["c"])
    for sid, st in (doc.get("students") or {}).items():
        for slot, val in st.items():
            out[f"students.{sid}.{slot}"] = (val["v"], val["c"])
    return out


def assert_not_back(prev, cur):
    """No document of prev is gone from cur, and none went back in time: neither its rev nor any slot's stamp."""
    for k, d in prev.items():
        assert k in cur, f"{k} disappeared"
        assert cur[k]["rev"] >= d["rev"], f"{k}: rev {d['rev']} -> {cur[k]['rev']}"
        a, b = stamps(d), stamps(cur[k])
        for slot, st in a.items():
            assert slot in b and b[slot] >= st, f"{k} {slot}: {st} -> {b.get(slot)}"


def fault_phases(s, w, tp, proxy, phases, parts, failures, black_hole_s, group="g1"):
    """Network faults, one phase each, on toxiproxy tp's proxy between worker w (of group) and a service.

    A phase is (name, [(toxic type, stream, attributes)], breaks). It sets its toxics, produces its part of
    the stream (parts[i]) and waits for the event it is about: for a slow link (breaks false), the part
    committed through the fault; for a breaking one, failures() (how many failures w has logged) rising
    after the fault was set, for the phase named "black hole" within black_hole_s seconds. Then it lifts the
    fault and waits until the group's commits reach the topic's end; no document may have gone back in time
    since the phase before. Returns the stored documents after the last phase."""
    prev = {}
    for i, (name, toxics, breaks) in enumerate(phases):
        before = failures()
        t0 = time.time()
        for j, (kind, direction, attrs) in enumerate(toxics):
            tp.add(proxy, f"{name.replace(' ', '-')}-{j}", kind, direction, **attrs)
        s.produce(parts[i])
        end = sum(s.end_offsets().values())

        def committed_all():
            s.assert_alive(w, f"during {name}")
            c = s.committed_total(group)
            return c is not None and c >= end

        if breaks:
            def failed():
                s.assert_alive(w, f"during {name}")
                return failures() > before

            wait_until(failed, 180, f"{name}: no failure logged by the worker within 180 s")
            noticed = time.time() - t0
            if name == "black hole":
                assert noticed < black_hole_s, f"black hole noticed after {noticed:.1f}s (bound {black_hole_s}s)"
        else:
            wait_until(committed_all, 300, lambda: f"{name}: the part was not committed through the fault: "
                                                   f"committed {s.committed_total(group)} of {end}")
        for j in range(len(toxics)):
            tp.remove(proxy, f"{name.replace(' ', '-')}-{j}")
        t1 = time.time()
        wait_until(committed_all, 300, lambda: f"after {name}: the worker did not catch up: committed "
                                               f"{s.committed_total(group)} of {end}")
        recovered = time.time() - t1
        cur = s.stored()
        assert_not_back(prev, cur)
        prev = cur
        log(f"{name}: " + (f"first failure {noticed:.1f}s after the fault, " if breaks else
                           f"committed through the fault in {t1 - t0:.1f}s, ")
            + f"caught up {recovered:.1f}s after it was lifted")
    return prev


def start_midstream(s, seed, rate=300, group="g1", extra=(("batch.max_commands", "500"),)):
    """The opening of an outage scenario: a shuffled stream of 12,000 commands (1% invalid, 5% duplicates), its
    first quarter produced at rate/s while a worker of group starts, the rest from the moment the worker has
    committed work of its own; so a fault set right after this call comes mid-stream by construction.
    Returns (stream, expected documents, expected rejects, worker, producer of the rest)."""
    stream = s.generate("--seed", str(seed), "--count", "12000", "--assignments", "40", "--students", "30",
                        "--invalid-rate", "0.01", "--duplicate-rate", "0.05", "--order", "shuffle")
    expected, rejects = s.expected(stream)
    head, tail = s.split(stream, 0.25)
    producer = s.produce_async(head, rate=rate)
    w = s.start_worker(group, list(extra))

    def worked():
        s.assert_alive(w, "before the fault")
        c = s.committed_total(group)
        return c is not None and c > 0

    wait_until(worked, 120, "the worker committed nothing before the fault")
    assert producer.wait(120) == 0
    return stream, expected, rejects, w, s.produce_async(tail, rate=rate)


class Scenario:
    def __init__(self, name, partitions=6, directory=None):
        """directory: where the scenario's files go (worker logs, streams), a fresh temporary one unless given."""
        self.name = name
        self.partitions = partitions
        tag = f"{name}-{os.getpid()}-{random.randint(0, 99999)}"
        self.tag = tag
        self.topic = f"cmds-{tag}"
        self.dlq = f"dlq-{tag}"
        self.db = f"it_{name}_{os.getpid()}".replace("-", "_")
        self.dir = directory or tempfile.mkdtemp(prefix=f"agg-{name}-")
        self.workers = []
        self.procs = []  # other children (producers, replays): killed by cleanup if still running
        self.extra_topics = []
        run([tool("kafka_tool"), "create-topic", BROKERS, self.topic, str(partitions)])
        run([tool("kafka_tool"), "create-topic", BROKERS, self.dlq, "1"])
        run([tool("store_tool"), "drop", MONGO, self.db])

    def path(self, name):
        return os.path.join(self.dir, name)

    def group(self, name):
        """The consumer group a scenario calls name ("g1"): the helpers take such local names and qualify
        them with the scenario's tag, so that scenarios running side by side never share a group (a member
        of another scenario would take part in this one's rebalances)."""
        return f"{name}-{self.tag}"

    def assert_alive(self, w, when=""):
        """Fails, with the tail of its log, if worker w has exited."""
        if w.poll() is not None:
            raise AssertionError(f"the worker exited {w.returncode}{' ' + when if when else ''}:\n"
                                 f"{self.worker_log(w)[-3000:]}")

    def wait_joined(self, w, timeout=120):
        """Waits until worker w holds partitions (its log says so); fails at once if it exits."""
        def joined():
            self.assert_alive(w, "before it got partitions")
            return bool(self.holdings(w))

        wait_until(joined, timeout, lambda: f"the worker never got partitions:\n{self.worker_log(w)[-2000:]}")

    def generate(self, *args):
        out = self.path("commands.jsonl")
        with open(out, "w") as f:
            subprocess.run([tool("gen_commands"), *args], stdout=f, check=True)
        return out

    def split(self, path, fraction):
        """Two files (head, tail) of path's lines: the first `fraction` of them and the rest, to produce at
        different moments of a scenario."""
        lines = open(path, "rb").readlines()
        cut = int(len(lines) * fraction)
        base = os.path.splitext(os.path.basename(path))[0]
        head, tail = self.path(base + "-head.jsonl"), self.path(base + "-tail.jsonl")
        with open(head, "wb") as f:
            f.writelines(lines[:cut])
        with open(tail, "wb") as f:
            f.writelines(lines[cut:])
        return head, tail

    def create_topic(self, suffix, partitions=6):
        """Another topic of this scenario ("<topic>-<suffix>"), deleted by cleanup."""
        name = f"{self.topic}-{suffix}"
        run([tool("kafka_tool"), "create-topic", BROKERS, name, str(partitions)])
        self.extra_topics.append(name)
        return name

    def produce(self, path, rate=0, topic=None):
        run([tool("kafka_tool"), "produce", BROKERS, topic or self.topic, path, str(rate)])

    def produce_async(self, path, rate=0, topic=None):
        p = subprocess.Popen([tool("kafka_tool"), "produce", BROKERS, topic or self.topic, path, str(rate)],
                             stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def settings(self, group, extra=()):
        sets = {
            "kafka.brokers": BROKERS, "kafka.topics": self.topic, "kafka.group": self.group(group),
            "kafka.dlq_topic": self.dlq, "store.uri": MONGO, "store.database": self.db,
            "store.collection": COLLECTION, "store.write_concern": "1", "batch.linger_ms": "50",
            "retry.backoff_ms": "50", "retry.backoff_max_ms": "1000", "log.format": "json",
        }
        sets.update(dict(extra))
        args = []
        for k, v in sets.items():
            args += ["--set", f"{k}={v}"]
        return args

    def start_worker(self, group, extra=(), env=None):
        """A worker of group with settings extra; env: variables added to its environment."""
        n = len(self.workers)
        logf = open(self.path(f"worker-{n}.log"), "w")
        p = subprocess.Popen([AGGREGATOR, "run", *self.settings(group, extra)], stdout=logf, stderr=logf,
                             env={**os.environ, **(env or {})})
        p.logpath = logf.name
        self.workers.append(p)
        return p

    def worker_log(self, p):
        with open(p.logpath) as f:
            return f.read()

    def stop_worker(self, p, timeout=60):
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout)
        if rc != 0:
            raise AssertionError(f"worker exited {rc} on SIGTERM; log tail:\n{self.worker_log(p)[-3000:]}")

    def end_offsets(self, topic=None):
        out = run([tool("kafka_tool"), "end-offsets", BROKERS, topic or self.topic])
        return {int(a): int(b) for a, b in (l.split() for l in out.splitlines())}

    def committed(self, group, topic=None):
        out = run([tool("kafka_tool"), "committed", BROKERS, self.group(group), topic or self.topic])
        return {int(a): int(b) for a, b in (l.split() for l in out.splitlines())}

    def committed_total(self, group, topic=None):
        """Messages the group has committed on the topic (an unset offset counts 0), or None while the
        coordinator cannot answer (a fresh or restarted broker loading its offsets)."""
        try:
            return sum(max(o, 0) for o in self.committed(group, topic).values())
        except RuntimeError:
            return None

    def holdings(self, w):
        """The partitions ("topic:N") worker w holds now, replayed from its log's rebalance lines."""
        held = set()
        for line in self.worker_log(w).splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            names = set(e.get("partitions", "").split())
            if e.get("msg") == "partitions assigned":
                held |= names
            elif e.get("msg") in ("partitions revoked", "partitions lost"):
                held -= names
        return held

    def split_among(self, workers, when="during a rebalance"):
        """True when workers (each still alive, or this fails at once) hold every partition of the topic
        between them, each some and none twice: a group whose rebalance is over."""
        held = []
        for w in workers:
            self.assert_alive(w, when)
            held.append(self.holdings(w))
        union = set().union(*held)
        everything = {f"{self.topic}:{p}" for p in range(self.partitions)}
        return all(held) and union == everything and sum(map(len, held)) == len(union)

    def log_events(self, w, msg):
        """The JSON log lines of worker w whose msg is msg, as dicts, in order."""
        out = []
        for line in self.worker_log(w).splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("msg") == msg:
                out.append(e)
        return out

    def wait_committed(self, group, timeout=180, alive=(), topic=None):
        """Waits until the group's committed offsets reach the topic's end."""
        end = self.end_offsets(topic)

        def caught_up():
            for w in alive:
                if w.poll() is not None:
                    raise AssertionError(f"worker died with {w.returncode}:\n{self.worker_log(w)[-3000:]}")
            try:
                c = self.committed(group, topic)
            except RuntimeError:  # e.g. "Not coordinator" while a fresh broker loads the offsets topic
                return False
            # An empty partition (end 0) has nothing to commit: its offset stays unset (-1001).
            return bool(c) and all(o == 0 or c.get(p, -1) >= o for p, o in end.items())

        wait_until(caught_up, timeout, lambda: f"group {group} did not catch up: committed {self.committed(group, topic)} "
                                               f"end {end}", interval=0.5)

    def expected(self, path):
        out, rej = self.path("expected.jsonl"), self.path("expected-rejects.jsonl")
        subprocess.run([AGGREGATOR, "replay", "--input", path, "--output", out, "--rejects", rej], check=True,
                       capture_output=True)
        return load_docs(out), [json.loads(l) for l in open(rej)]

    def concat(self, name, paths):
        """One file, name, of the streams at paths in order (as bytes: invalid lines may not be UTF-8)."""
        out = self.path(name)
        with open(out, "wb") as f:
            for p in paths:
                with open(p, "rb") as src:
                    f.write(src.read())
        return out

    def expected_and_reference(self, path):
        """(replay --input's documents, the independent reference merge's documents) of the stream at path,
        both normalized; the reference merge (tests/tools/reference_merge.py) skips the lines replay
        rejected."""
        expected, _ = self.expected(path)
        out = subprocess.run([sys.executable, REFERENCE_MERGE, path, self.path("expected-rejects.jsonl")],
                             check=True, capture_output=True, text=True).stdout
        ref = {}
        for line in out.splitlines():
            d = json.loads(line)
            ref[d["_id"]] = normalize(d)
        return expected, ref

    def stored(self):
        out = run([tool("store_tool"), "dump", MONGO, self.db, COLLECTION])
        return {d["_id"]: d for d in map(json.loads, out.splitlines())}

    def stored_raw(self):
        out = run([tool("store_tool"), "dump", MONGO, self.db, COLLECTION])
        return [json.loads(l) for l in out.splitlines()]

    def dlq_messages(self):
        return self.topic_messages(self.dlq)

    def topic_messages(self, topic=None):
        """Every message of the topic up to its end, {partition, offset, headers, value_hex}."""
        out = run([tool("kafka_tool"), "dump", BROKERS, topic or self.topic])
        return [json.loads(l) for l in out.splitlines()]

    def cleanup(self):
        for p in self.workers + self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for t in [self.topic] + self.extra_topics:
            subprocess.run([tool("kafka_tool"), "delete-topic", BROKERS, t], capture_output=True)
        subprocess.run([tool("kafka_tool"), "delete-topic", BROKERS, self.dlq], capture_output=True)
        subprocess.run([tool("store_tool"), "drop", MONGO, self.db], capture_output=True)


def change_events(s, topic):
    """The change events of topic (docs/CHANGES.md), each checked for its form: keyed by its _id, with an
    x-rev header equal to its rev, and `changed` a list of slot paths. Returns them parsed, in topic order."""
    events = []
    for m in s.topic_messages(topic):
        e = json.loads(bytes.fromhex(m["value_hex"]))
        assert m["key"] == e["_id"], (m["key"], e["_id"])
        assert m["headers"].get("x-rev") == str(e["rev"]), (m["headers"], e["rev"])
        assert e["_id"] == f'{e["tenant"]}/{e["assignment"]}', e["_id"]
        for path in e["changed"]:
            assert path == "header" or re.fullmatch(r"students\.[^.]+\.(member|submission|grade)", path), path
        events.append(e)
    return events


def assert_fold_equals_store(events, stored):
    """A reader that keeps the greatest rev per _id of the change events holds exactly the stored
    documents: every document, at its rev, byte for byte in the JSON form (updatedAt included)."""
    latest = {}
    for e in events:
        if e["_id"] not in latest or e["rev"] > latest[e["_id"]]["rev"]:
            latest[e["_id"]] = e
    missing = sorted(set(stored) - set(latest))
    extra = sorted(set(latest) - set(stored))
    behind = sorted(k for k in stored if k in latest and latest[k]["rev"] != stored[k]["rev"])
    differ = sorted(k for k in stored if k in latest and k not in behind and latest[k]["document"] != stored[k])
    if missing or extra or behind or differ:
        msg = [f"the folded change topic is not the store: {len(missing)} never announced, {len(extra)} not stored, "
               f"{len(behind)} at another rev, {len(differ)} with another document"]
        for k in behind[:3]:
            msg.append(f"{k}: announced rev {latest[k]['rev']}, stored rev {stored[k]['rev']}")
        for k in differ[:2]:
            msg.append(f"announced {json.dumps(latest[k]['document'], sort_keys=True)}")
            msg.append(f"stored    {json.dumps(stored[k], sort_keys=True)}")
        raise AssertionError("\n".join(msg + missing[:5] + extra[:5]))


def normalize(doc):
    d = dict(doc)
    d.pop("rev", None)
    d.pop("updatedAt", None)
    return d


def load_docs(path):
    docs = {}
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            docs[d["_id"]] = normalize(d)  # a later line supersedes an earlier one
    return docs


def assert_same_documents(expected, stored):
    stored = {k: normalize(v) for k, v in stored.items()}
    missing = sorted(set(expected) - set(stored))
    extra = sorted(set(stored) - set(expected))
    differ = sorted(k for k in expected if k in stored and expected[k] != stored[k])
    if missing or extra or differ:
        msg = [f"documents differ: {len(missing)} missing, {len(extra)} extra, {len(differ)} different"]
        for k in differ[:3]:
            msg.append(f"expected {json.dumps(expected[k], sort_keys=True)}")
            msg.append(f"stored   {json.dumps(stored[k], sort_keys=True)}")
        raise AssertionError("\n".join(msg + missing[:5] + extra[:5]))


@contextlib.contextmanager
def scenario(name, partitions=6):
    """A Scenario for the with-block: when the block fails, the tail of every worker's log is printed; the
    scenario is cleaned up either way."""
    s = Scenario(name, partitions)
    try:
        yield s
    except Exception:
        for p in s.workers:
            log(f"--- {p.logpath} (tail)")
            try:
                log(s.worker_log(p)[-4000:])
            except OSError:
                pass
        raise
    finally:
        s.cleanup()


def main(scenario_fn, name, partitions=6):
    t0 = time.time()
    with scenario(name, partitions) as s:
        scenario_fn(s)
    log(f"{name}: passed in {time.time() - t0:.1f}s")
    sys.exit(0)
