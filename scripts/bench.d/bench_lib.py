"""What every mode of scripts/bench shares: the stack and the build it runs against, one `aggregator run`
or `replay` measured as a whole process, the CSV and plot writers, the CPU of the stack's processes."""
import csv
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "scripts", "bench.d", "results")
CLK = os.sysconf("SC_CLK_TCK")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def terminate(p, timeout):
    """SIGTERM to p, then SIGKILL if it has not exited within timeout seconds."""
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()


def free_port():
    """A loopback port nobody listens on now (the kernel picks it)."""
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def measure_like_this_tree(src):
    """The stop-and-wait baseline (--baseline, a tree with a flat worker/) measures latency unlike the
    current tree, so its latency rows would not compare: it observed a flush's commands as durable at the
    time the flush *began* (the batch_flush argument), so every latency it reported was short by that
    flush's duration, and its buckets were x1.5 apart. Both are measurement, not writer behaviour: patch
    them to the current tree's (observed when the flush lands; the current bounds), and fail loudly if the
    source no longer looks as expected."""
    batch = os.path.join(src, "worker", "batch.c")
    metrics = os.path.join(src, "worker", "metrics.c")
    if not (os.path.exists(batch) and os.path.exists(metrics)):
        raise SystemExit("bench: the baseline has no worker/batch.c and worker/metrics.c; check measure_like_this_tree")
    with open(batch) as f:
        b = f.read()
    with open(metrics) as f:
        m = f.read()
    with open(os.path.join(ROOT, "worker", "metrics", "metrics_table.c")) as f:
        ours = f.read()
    with open(os.path.join(ROOT, "worker", "metrics", "metrics_table.h")) as f:
        ours_max = re.search(r"#define METRICS_HIST_MAX_BOUNDS (\d+)", f.read()).group(1)
    at_start = "    observe_durable(b, now_ms);\n    evict(b);"
    if at_start in b:
        b = b.replace(at_start, "    observe_durable(b, clock_wall_ms());\n    evict(b);")
        bounds = re.compile(r"static const double latency_bounds\[\] = \{[^}]*\};")
        m = bounds.sub(bounds.search(ours).group(0), m)
        m = re.sub(r"#define HIST_MAX_BOUNDS \d+", "#define HIST_MAX_BOUNDS " + ours_max, m)
        with open(batch, "w") as f:
            f.write(b)
        with open(metrics, "w") as f:
            f.write(m)
    elif "observe_durable(b, now_ms)" in b:
        raise SystemExit("bench: the baseline observes latency in an unexpected place; check measure_like_this_tree")


class Bench:
    def __init__(self, args):
        self.a = args
        # --binary-dir: the binaries of a build as they are (nothing is built); otherwise a release build here.
        self.given = bool(args.binary_dir)
        self.build = os.path.abspath(args.binary_dir or os.environ.get("AGG_BENCH_BUILD_DIR",
                                                                       os.path.join(ROOT, "build-bench")))
        home_cache = os.path.expanduser("~/.cache/aggregator")
        self.env = dict(os.environ)
        self.env.setdefault("AGG_CACHE_DIR", os.path.expanduser("~/.cache/aggregator-bench"))
        self.env.setdefault("AGG_KAFKA_PORT", "39092")
        self.env.setdefault("AGG_KAFKA_CONTROLLER_PORT", "39093")
        self.env.setdefault("AGG_MONGO_PORT", "37018")
        # Every port of the stack, not only the two the bench talks to: scripts/stack's own defaults are the
        # development stack's, which may be running.
        self.env.setdefault("AGG_KAFKA_FAULTS_PORT", "39094")
        self.env.setdefault("AGG_KAFKA_FAULTS_PROXY_PORT", "39095")
        self.env.setdefault("AGG_PG_PORT", "35432")
        self.env.setdefault("AGG_MJS_PORT", "37019")
        cache = self.env["AGG_CACHE_DIR"]
        os.makedirs(cache, exist_ok=True)
        # Reuse the downloaded broker and FerretDB instead of fetching them again.
        if os.path.isdir(home_cache) and os.path.abspath(cache) != home_cache:
            for name in os.listdir(home_cache):
                if os.path.isdir(os.path.join(home_cache, name)) and (name == "bin" or name.startswith("kafka-")):
                    link = os.path.join(cache, name)
                    if not os.path.exists(link):
                        os.symlink(os.path.join(home_cache, name), link)
        self.brokers = "127.0.0.1:" + self.env["AGG_KAFKA_PORT"]
        self.mongo = "mongodb://127.0.0.1:" + self.env["AGG_MONGO_PORT"]
        self.work = os.path.join(self.build, "bench-work")
        os.makedirs(self.work, exist_ok=True)
        self.run_id = os.environ.get("AGG_BENCH_RUN_ID") or "%d" % int(time.time())

    def tool(self, name):
        return os.path.join(self.build, name)

    def build_baseline(self, rev, name="baseline"):
        """The aggregator of git revision rev, built from a clean export (no worktree) into build-bench/name."""
        src = os.path.join(self.build, name + "-src")
        out = os.path.join(self.build, name)
        subprocess.run(["rm", "-rf", src], check=True)
        os.makedirs(src)
        arch = subprocess.run(["git", "-C", ROOT, "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", src], input=arch, check=True)
        measure_like_this_tree(src)
        sh(["cmake", "-S", src, "-B", out, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"], stdout=subprocess.DEVNULL)
        sh(["cmake", "--build", out, "-j", "2", "--target", "aggregator"], stdout=subprocess.DEVNULL)
        return os.path.join(out, "aggregator")

    # --- setup ---------------------------------------------------------------
    def build_targets(self, *targets):
        """The tools a mode runs: built in the release build, or checked for in --binary-dir."""
        if self.given:
            missing = [t for t in targets if not os.access(self.tool(t), os.X_OK)]
            if missing:
                raise SystemExit("bench: %s not in %s" % (", ".join(missing), self.build))
            return
        if not os.path.exists(os.path.join(self.build, "build.ninja")):
            sh(["cmake", "-S", ROOT, "-B", self.build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"],
               stdout=subprocess.DEVNULL)
        sh(["cmake", "--build", self.build, "-j", "2", "--target", *targets], stdout=subprocess.DEVNULL)

    def setup(self):
        if not self.given:  # configure once more: the tree's files may have changed since the last run
            sh(["cmake", "-S", ROOT, "-B", self.build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"],
               stdout=subprocess.DEVNULL)
        self.build_targets("aggregator", "gen_commands", "kafka_tool", "store_tool")
        if not self.a.no_stack:
            sh([os.path.join(ROOT, "scripts", "stack"), "start"], env=self.env)

    def stop_stack(self):
        if not self.a.no_stack:
            subprocess.run([os.path.join(ROOT, "scripts", "stack"), "stop"], env=self.env)

    def gen(self, name, *opts):
        path = os.path.join(self.work, name + ".jsonl")
        if not os.path.exists(path):
            sh([self.tool("gen_commands"), "--seed", "7", *opts, "--output", path + ".tmp"])
            os.rename(path + ".tmp", path)
        return path

    def topic(self, name, path, partitions=6, produce=True, configs=()):
        topic = "bench-%s-%s" % (self.run_id, name)
        sh([self.tool("kafka_tool"), "create-topic", self.brokers, topic, str(partitions), *configs])
        # The dead-letter topic must exist: rejects wait (and hold commits) until delivered.
        sh([self.tool("kafka_tool"), "create-topic", self.brokers, topic + "-dlq", "1"])
        log("bench: topic %s" % topic)
        if not produce:
            return topic
        t0 = time.monotonic()
        sh([self.tool("kafka_tool"), "produce", self.brokers, topic, path])
        log("bench: produced %s in %.1f s" % (topic, time.monotonic() - t0))
        return topic

    def offsets(self, *cmd):
        out = subprocess.run([self.tool("kafka_tool"), *cmd], check=True, capture_output=True, text=True).stdout
        total = 0
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and int(parts[1]) > 0:
                total += int(parts[1])
        return total

    # --- one `aggregator run` ------------------------------------------------
    def metrics(self, port):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return {}
        vals = {}
        for line in text.splitlines():
            m = re.match(r'^(aggregator_[a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+)$', line)
            if m:
                vals[(m.group(1), m.group(2) or "")] = float(m.group(3))
        return vals

    @staticmethod
    def ready(port):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    @staticmethod
    def db_of(label):
        return "bench_" + re.sub(r"[^A-Za-z0-9]", "_", label)

    def run(self, label, topic, sets, bound_s, feed=None, binary=None, probe=None, keep_db=False, log_level=None,
            poll_s=0.5, perf=None, wrap=()):
        """probe (--peer): called at the start and again where the run is measured; both results go into
        row["probe"] so the caller can take differences over exactly the measured interval. keep_db: the
        run's database (db_of(label)) was filled beforehand and is not dropped. poll_s: how often the
        committed offsets (and the process's CPU) are read. perf: a file to record the process's CPU
        samples into with `perf record`, from the first commit seen until the last (stopped before SIGTERM).
        wrap: a command line to run the worker under (valgrind ..., which keeps the worker's pid)."""
        port = free_port()
        group = "bench-%s-%s" % (self.run_id, label)
        db = self.db_of(label)
        if not keep_db:
            sh([self.tool("store_tool"), "drop", self.mongo, db])
        end = self.offsets("end-offsets", self.brokers, topic) if feed is None else feed[1]
        cmd = [*wrap, binary or self.tool("aggregator"), "run", "--set", "kafka.brokers=" + self.brokers, "--set",
               "kafka.topics=" + topic, "--set", "kafka.group=" + group, "--set",
               "kafka.dlq_topic=" + topic + "-dlq", "--set", "store.uri=" + self.mongo, "--set",
               "store.database=" + db, "--set", "metrics.listen=127.0.0.1:%d" % port, "--set",
               "log.level=" + (log_level or os.environ.get("AGG_BENCH_LOG_LEVEL", "warn"))]
        for s in sets:
            cmd += ["--set", s]
        logf = open(os.path.join(self.work, label + ".log"), "w")
        probe0 = probe() if probe else None
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=logf, stderr=logf)
        rec = None
        prod = None
        if feed is not None:  # (path, count, rate): produced while the worker runs
            # Produce once the worker is ready (partitions assigned, store answering): the join is not latency.
            ready_by = time.monotonic() + 120
            while not self.ready(port):
                if p.poll() is not None or time.monotonic() > ready_by:
                    raise SystemExit("bench: %s never became ready, see %s" % (label, logf.name))
                time.sleep(0.1)
            prod = subprocess.Popen([self.tool("kafka_tool"), "produce", self.brokers, topic, feed[0],
                                     str(feed[2])], stderr=subprocess.DEVNULL)
        done, bounded, cpu, hwm, m = 0, False, 0.0, 0, {}
        first = None  # (seconds, CPU s, committed) at the first poll that saw a commit
        while True:
            time.sleep(poll_s)
            if p.poll() is not None:
                raise SystemExit("bench: %s exited early (%s), see %s" % (label, p.returncode, logf.name))
            done = self.offsets("committed", self.brokers, group, topic)
            el = time.monotonic() - t0
            if done > 0 and first is None:
                first = (el, proc_cpu(p.pid), done)
                if perf:  # attached now, it sees every thread (perf -p does not follow threads started later)
                    rec = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-p", str(p.pid),
                                            "-o", perf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if done >= end or el >= bound_s:
                bounded = done < end
                break
        # Measure before SIGTERM: the shutdown flush is not part of the rate.
        m = self.metrics(port)
        with open("/proc/%d/stat" % p.pid) as f:
            st = f.read().rsplit(")", 1)[1].split()
            cpu = (int(st[11]) + int(st[12])) / CLK
        with open("/proc/%d/status" % p.pid) as f:
            hwm = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
        probe1 = probe() if probe else None
        if rec:
            rec.send_signal(signal.SIGINT)
            rec.wait()
        if prod:
            prod.wait()
        terminate(p, 300)
        writes = sum(v for (k, lab), v in m.items() if k == "aggregator_store_writes_total")
        wbytes = m.get(("aggregator_store_write_bytes_total", ""), 0.0)
        lat = self.latency(m)
        com = self.latency(m, "aggregator_command_committable_latency_seconds")  # "" before this histogram
        fsum = m.get(("aggregator_flush_duration_seconds_sum", ""), 0.0)
        fcount = m.get(("aggregator_flush_duration_seconds_count", ""), 0.0)
        done = max(done, 1)
        row = {
            "run": label,
            "commands": done,
            "of": end,
            "seconds": round(el, 2),
            "commands_per_s": round(done / el, 1),
            "cpu_s_per_million": round(cpu / done * 1e6, 3),
            "peak_rss_mib": round(hwm / 1024, 1),
            "store_writes_per_1000": round(writes / done * 1000, 3),
            "latency_p50_s": lat[0],
            "latency_p99_s": lat[1],
            "bounded": "bounded at %ds" % bound_s if bounded else "",
            "writes_per_s": round(writes / el, 1),
            "flushes": int(fcount),
            "flush_mean_s": round(fsum / fcount, 3) if fcount else "",
            "bytes_per_flush": round(wbytes / fcount) if fcount else "",
            "committable_p50_s": com[0],
            "committable_p99_s": com[1],
            "bytes_per_1000": round(wbytes / done * 1000),
        }
        # From the first commit seen to the last: without start-up (connecting, the group join, the first
        # fetches) and with the whole stream's work, which a run of a backlog does between those two polls.
        if first and done > first[2]:
            win = el - first[0]
            row["first_to_last_s"] = round(win, 2)
            row["first_to_last_commands"] = done - first[2]
            row["first_to_last_per_s"] = round((done - first[2]) / win, 1)
            row["cpu_s_per_million_first_to_last"] = round((cpu - first[1]) / (done - first[2]) * 1e6, 3)
        if probe:
            row["probe"] = (probe0, probe1, cpu)
        row["log"] = logf.name
        log("bench: %s" % row)
        return row

    @staticmethod
    def latency(m, name="aggregator_command_durable_latency_seconds"):
        buckets = sorted((float(re.search(r'le="([^"]+)"', lab).group(1).replace("+Inf", "inf")), v)
                         for (k, lab), v in m.items()
                         if k == name + "_bucket" and 'le="' in lab)
        if not buckets or buckets[-1][1] == 0:
            return ("", "")
        total = buckets[-1][1]
        out = []
        for q in (0.5, 0.99):
            # Linear interpolation inside the bucket, as Prometheus' histogram_quantile() does.
            lo, below = 0.0, 0.0
            for le, c in buckets:
                if c >= q * total:
                    if le == float("inf"):
                        out.append(">%g" % lo)
                    else:
                        out.append("%.3f" % (lo + (le - lo) * (q * total - below) / max(c - below, 1e-9)))
                    break
                lo, below = le, c
        return tuple(out)

    def replay(self, label, topic, binary=None, wrap=()):
        """`replay --output /dev/null` of topic, timed as a whole process; wrap: a command line to run it
        under (perf record ...), whose own CPU the row then includes."""
        t = subprocess.run(["/usr/bin/time", "-f", "TIME %e %U %S %M", *wrap, binary or self.tool("aggregator"),
                            "replay", "--set", "log.format=text", "--set",
                            "kafka.brokers=" + self.brokers, "--set", "kafka.topics=" + topic, "--output",
                            "/dev/null"], check=True, capture_output=True, text=True)
        el, u, s, rss = t.stderr.strip().splitlines()[-1].split()[1:]
        summary = [l for l in t.stderr.splitlines() if l.startswith("replay: read=")][-1]
        n = int(re.search(r"read=(\d+)", summary).group(1))
        row = {"run": label, "commands": n, "of": n, "seconds": float(el),
               "commands_per_s": round(n / float(el), 1),
               "cpu_s_per_million": round((float(u) + float(s)) / n * 1e6, 2), "cpu_s": float(u) + float(s),
               "peak_rss_mib": round(int(rss) / 1024, 1), "store_writes_per_1000": "",
               "latency_p50_s": "", "latency_p99_s": "", "bounded": ""}
        log("bench: %s" % row)
        return row



FIELDS = ["run", "commands", "of", "seconds", "commands_per_s", "cpu_s_per_million", "peak_rss_mib",
          "store_writes_per_1000", "latency_p50_s", "latency_p99_s", "bounded"]
# latency_*: to the command's own aggregate durable; committable_*: to it and every command before it durable
# (its offset committable), later by the older changes still being written (worker/pipeline/batch.h). The stop-and-wait
# baseline has only the first: its flushes take everything dirty, so the two are the same there.
PIPELINE_FIELDS = FIELDS + ["writes_per_s", "flushes", "flush_mean_s", "of_replay", "pass_mean_s", "pass_p99_s",
                             "promise_s", "p99_within_promise", "committable_p50_s", "committable_p99_s",
                             "committable_p99_within_promise", "worker_cpu_pct", "store_cpu_pct", "broker_cpu_pct",
                             "worker_share_pct"]


def write_csv(path, rows, fields=FIELDS):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def table(rows):
    out = ["| run | commands | s | commands/s | CPU s / M | peak RSS MiB | writes / 1k | p50 s | p99 s | note |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append("| %s | %s/%s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["run"], r["commands"], r["of"], r["seconds"], r["commands_per_s"], r["cpu_s_per_million"],
            r["peak_rss_mib"], r["store_writes_per_1000"], r["latency_p50_s"], r["latency_p99_s"], r["bounded"]))
    return "\n".join(out)


def ratios(rows):
    by = {r["run"]: r for r in rows}
    out = []
    for w in ("W1", "W2", "W4"):
        o, n = by.get(w + "-ours"), by.get(w + "-naive")
        if not o or not n:
            continue
        out.append("%s ours/naive: throughput x%.0f, CPU per command x%.1f less, store writes per command x%.0f less"
                   % (w, o["commands_per_s"] / n["commands_per_s"],
                      n["cpu_s_per_million"] / max(o["cpu_s_per_million"], 1e-9),
                      n["store_writes_per_1000"] / max(o["store_writes_per_1000"], 1e-9)))
    return "\n".join(out)


def plot(b, png, xlabel, ylabel, title, series):
    """series: [(title, [(x, y), ...])]; log-log, one line per series. x = 0 is drawn at 0.5."""
    dat = os.path.join(b.work, os.path.basename(png) + ".dat")
    with open(dat, "w") as f:
        for _, pts in series:
            for x, y in pts:
                if y not in ("", None) and not str(y).startswith(">"):
                    f.write("%s %s\n" % (x, y))
            f.write("\n\n")
    plots = ", ".join("'%s' index %d using 1:2 with linespoints title '%s'" % (dat, i, t)
                      for i, (t, _) in enumerate(series))
    gp = ("set terminal png size 800,500 noenhanced\nset output '%s'\nset logscale xy\nset grid\n"
          "set key top left\nset xlabel '%s'\nset ylabel '%s'\nset title '%s'\nplot %s\n"
          % (png, xlabel, ylabel, title, plots))
    subprocess.run(["gnuplot"], input=gp, text=True, check=True)



def proc_cpu(pid, children=False):
    """utime+stime of pid in seconds (with children: plus cutime+cstime, the CPU of children it has
    reaped: PostgreSQL's exited backends); 0 when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in st[11:15 if children else 13]) / CLK


def stack_cpu(b):
    """CPU seconds used so far by the bench stack's store (FerretDB, the postmaster with its reaped
    backends, and its live backends) and by its broker, from the stack's own pid files, so that other
    stacks on the machine are not counted. A process whose pid file is missing counts 0."""
    st = os.path.join(b.env["AGG_CACHE_DIR"], "stack")

    def pid(rel):
        try:
            with open(os.path.join(st, rel)) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    store = broker = 0.0
    fdb, pg, kafka = pid("ferretdb/ferretdb.pid"), pid("postgres.pid"), pid("kafka/kafka.pid")
    if fdb:
        store += proc_cpu(fdb)
    if pg:
        store += proc_cpu(pg, children=True)
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open("/proc/%s/stat" % d) as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                if ppid == pg:
                    store += proc_cpu(int(d))
    if kafka:
        broker = proc_cpu(kafka)
    return {"store": store, "broker": broker}


def cpu_shares(row, before, after, own_cpu):
    """The run's CPU as % of one core over its measured wall time, for itself, the store and the broker,
    and its own share of the three: where the time goes when the store is the bound."""
    el = max(row["seconds"], 1e-9)
    store = after["store"] - before["store"]
    broker = after["broker"] - before["broker"]
    row["worker_cpu_pct"] = round(100 * own_cpu / el, 1)
    row["store_cpu_pct"] = round(100 * store / el, 1)
    row["broker_cpu_pct"] = round(100 * broker / el, 1)
    row["worker_share_pct"] = round(100 * own_cpu / max(own_cpu + store + broker, 1e-9), 1)


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])




class LoadSampler:
    """The 1-minute load average every 5 s over the whole --peer run (a thread; stop() joins it)."""

    def __init__(self):
        import threading
        self.samples, self.stop_ev = [], threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while True:
            self.samples.append(loadavg())
            if self.stop_ev.wait(5):
                return

    def stop(self):
        self.stop_ev.set()
        self.t.join()
        v = self.samples
        return {"samples": len(v), "min": min(v), "mean": round(sum(v) / len(v), 2), "max": max(v)}


def peer_timed(cmd):
    """wall, CPU (user+sys) and max RSS of a command, and its output."""
    t = subprocess.run(["/usr/bin/time", "-f", "TIME %e %U %S %M", *cmd], check=True, capture_output=True, text=True)
    el, u, s, rss = [l for l in t.stderr.splitlines() if l.startswith("TIME ")][-1].split()[1:]
    return float(el), float(u) + float(s), int(rss), t.stdout, t.stderr
