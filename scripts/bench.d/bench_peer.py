"""scripts/bench --peer: ours against the MongoDB sink connector in Kafka Connect, the correctness count,
the ceiling readers. scripts/bench's header says what it measures."""
import json
import os
import re
import subprocess
import sys
import time

from bench_lib import (CLK, FIELDS, ROOT, LoadSampler, cpu_shares, free_port, loadavg, log, peer_timed, plot, sh,
                       stack_cpu, table, terminate, write_csv)


# --- --peer: the MongoDB sink connector in Kafka Connect, and the ceiling ---------------------
#
# Everything of the peer mode is in this block: the jars, one Connect run measured as `run` is, the
# correctness count on the shuffled stream, the ceiling (kafka-consumer-perf-test, consume_loop, replay)
# and the plots. The Connect configuration is in scripts/connect/*.in (documented there).

PEER_FIELDS = FIELDS + ["cpu_s_per_million_after_start", "load_avg", "writes_per_s", "worker_cpu_pct", "store_cpu_pct",
                        "broker_cpu_pct", "worker_share_pct"]
PEER_SCALE_FIELDS = ["run", "assignments", "commands", "of", "seconds", "commands_per_s", "cpu_s_per_million",
                     "cpu_s_per_million_after_start", "worker_cpu_pct", "store_cpu_pct", "broker_cpu_pct",
                     "worker_share_pct", "peak_rss_mib", "store_writes_per_1000", "writes_per_s", "bounded",
                     "load_avg"]




def peer_install(b):
    """Connect, its JSON converter, the broker's tools and the sink connector, resolved with Maven at the
    broker's version into the cache (as scripts/lib.sh resolves the broker's jars); a .complete marker is
    written last, so an interrupted download is retried."""
    with open(os.path.join(ROOT, "scripts", "kafka", "pom.xml")) as f:
        ver = re.search(r"<kafka.version>(.*)</kafka.version>", f.read()).group(1)
    cache = b.env["AGG_CACHE_DIR"]
    libs = os.path.join(cache, "connect-%s" % ver, "libs")
    if not os.path.exists(os.path.join(libs, ".complete")):
        log("bench: resolving Kafka Connect %s and the MongoDB sink connector with Maven into %s" % (ver, libs))
        subprocess.run(["rm", "-rf", libs], check=True)
        os.makedirs(libs)
        logf = os.path.join(cache, "connect-maven.log")
        with open(logf, "w") as lf:
            r = subprocess.run(["mvn", "-B", "-q", "-Dstyle.color=never", "-f",
                                os.path.join(ROOT, "scripts", "connect", "pom.xml"),
                                "-Dmaven.repo.local=" + os.path.join(cache, "m2"), "-Dkafka.version=" + ver,
                                "dependency:copy-dependencies", "-DincludeScope=runtime",
                                "-DoutputDirectory=" + libs], stdout=lf, stderr=lf)
        if r.returncode != 0 or not any(n.startswith("mongo-kafka-connect-") for n in os.listdir(libs)):
            raise SystemExit("bench: Maven could not resolve the Connect jars (log: %s)" % logf)
        open(os.path.join(libs, ".complete"), "w").close()
    return ver, libs


# The JVM options Kafka's own bin/connect-standalone.sh starts Connect with (kafka-run-class.sh defaults).
CONNECT_JVM = ["-Xms256M", "-Xmx2G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
               "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
               "-Djava.awt.headless=true"]


def peer_store(libs, *args):
    """scripts/connect/PeerStore.java (create, dump) on the connector's own driver; its output."""
    return subprocess.run(["java", "-cp", os.path.join(libs, "*"),
                           os.path.join(ROOT, "scripts", "connect", "PeerStore.java"), *args],
                          check=True, capture_output=True, text=True).stdout


def peer_connect_run(b, a, libs, label, topic, bound_s):
    """One standalone Connect worker with the sink connector on topic, measured as Bench.run measures
    `aggregator run`: committed offsets of its group (connect-<name>) polled every 0.5 s until they reach
    the end offsets or bound_s; CPU and VmHWM of the JVM; store writes = the documents of every bulk
    write, from the sink task's debug line (the connector has no /metrics)."""
    name = "peer-%s-%s" % (b.run_id, re.sub(r"[^A-Za-z0-9]", "-", label))
    db = "bench_" + re.sub(r"[^A-Za-z0-9]", "_", label)
    work = os.path.join(b.work, "connect-" + label)
    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(work)
    sh([b.tool("store_tool"), "drop", b.mongo, db])
    # FerretDB v1 on PostgreSQL was seen to hang creating the collection inside the connector's first
    # bulk write (it never answered); created beforehand it does not.
    peer_store(libs, "create", b.mongo, db, "commands")
    subs = {"BROKERS": b.brokers, "WORK": work, "REST_PORT": str(free_port()), "NAME": name, "TOPIC": topic,
            "MONGO_URI": b.mongo, "DATABASE": db, "BATCH": str(a.peer_batch)}
    props = []
    for tmpl in ("worker.properties.in", "mongo-sink.properties.in"):
        with open(os.path.join(ROOT, "scripts", "connect", tmpl)) as f:
            text = f.read()
        for k, v in subs.items():
            text = text.replace("@%s@" % k, v)
        out = os.path.join(work, tmpl[:-3])
        with open(out, "w") as f:
            f.write(text)
        props.append(out)
    clog = os.path.join(work, "connect.log")
    end = b.offsets("end-offsets", b.brokers, topic)
    group = "connect-" + name
    load0 = loadavg()
    outf = open(os.path.join(work, "stdout.log"), "w")
    sc0 = stack_cpu(b)
    t0 = time.monotonic()
    p = subprocess.Popen(["java", *CONNECT_JVM, "-Dconnect.log.file=" + clog,
                          "-Dlog4j2.configurationFile=" + os.path.join(ROOT, "scripts", "connect", "log4j2.properties"),
                          "-cp", os.path.join(libs, "*"), "org.apache.kafka.connect.cli.ConnectStandalone", *props],
                         stdout=outf, stderr=outf)

    def cpu_s():
        with open("/proc/%d/stat" % p.pid) as f:
            st = f.read().rsplit(")", 1)[1].split()
        return (int(st[11]) + int(st[12])) / CLK

    first = None  # (cpu, done) at the first poll with committed offsets: start-up is over
    moved, last, stalled = t0, -1, False
    while True:
        time.sleep(0.5)
        if p.poll() is not None:
            raise SystemExit("bench: Connect %s exited early (%s), see %s" % (label, p.returncode, clog))
        done = b.offsets("committed", b.brokers, group, topic)
        el = time.monotonic() - t0
        if done > 0 and first is None:
            first = (cpu_s(), done)
        if done != last:
            moved, last = time.monotonic(), done
        # A FerretDB that stopped answering (see max.batch.size in mongo-sink.properties.in) never
        # recovers: stop instead of waiting out the bound, and say so in the row.
        stalled = time.monotonic() - moved >= a.peer_stall_seconds
        if done >= end or el >= bound_s or stalled:
            bounded = done < end
            break
    cpu = cpu_s()
    with open("/proc/%d/status" % p.pid) as f:
        hwm = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
    sc1 = stack_cpu(b)
    terminate(p, 60)
    writes = 0
    with open(clog, errors="replace") as f:
        for line in f:
            m = re.search(r"Bulk writing (\d+) document\(s\)", line)
            if m:
                writes += int(m.group(1))
    done = max(done, 1)
    after = ""
    if first and done > first[1]:
        after = round((cpu - first[0]) / (done - first[1]) * 1e6, 2)
    row = {"run": label, "commands": done, "of": end, "seconds": round(el, 2),
           "commands_per_s": round(done / el, 1), "cpu_s_per_million": round(cpu / done * 1e6, 2),
           "peak_rss_mib": round(hwm / 1024, 1), "store_writes_per_1000": round(writes / done * 1000, 3),
           "latency_p50_s": "", "latency_p99_s": "", "bounded": ("stalled %ds" % a.peer_stall_seconds if stalled else "bounded at %ds" % bound_s) if bounded else "",
           "cpu_s_per_million_after_start": after, "load_avg": "%.1f-%.1f" % (load0, loadavg()),
           "writes_per_s": round(writes / el, 1)}
    cpu_shares(row, sc0, sc1, cpu)
    log("bench: %s" % row)
    return row, db


def peer_ours_run(b, label, topic, bound_s):
    load0 = loadavg()
    r = b.run(label, topic, [], bound_s, probe=lambda: stack_cpu(b))
    r.pop("flushes", None)
    r.pop("flush_mean_s", None)
    cpu_shares(r, *r.pop("probe"))
    r["cpu_s_per_million_after_start"] = ""
    r["load_avg"] = "%.1f-%.1f" % (load0, loadavg())
    return r, "bench_" + re.sub(r"[^A-Za-z0-9]", "_", label)


def stamp_of(version, cid):
    """The merge's order (docs/DOCUMENT.md, as tests/tools/reference_merge.py has it): version numerically,
    then id bytewise. None for what is not a valid stamp (the connector stores invalid lines too)."""
    if not isinstance(version, int) or isinstance(version, bool) or not isinstance(cid, str):
        return None
    return (version, cid.encode())


SLOT_TYPES = {"header": ("assignment.upserted", "assignment.deleted"), "member": ("roster.assigned", "roster.unassigned"),
              "submission": ("submission.updated",), "grade": ("grade.updated",)}


def peer_correctness(b, libs, path, ours_db, peer_db):
    """Entity slots that end different from the reference merge (tests/tools/reference_merge.py of the
    lines `aggregator replay` accepts). Slots: each assignment's header and each student's member,
    submission and grade slot that the reference merge fills.

    ours: the stored document's slot (stamp and value) must equal the reference's.
    peer: the connector keeps one document per (tenant, assignment, student, type); a slot of two types
    (header, member) has two. Read generously, as a reader that orders by version would: the slot's value
    is the newest (version, id) among its documents; it differs when that is not the reference's stamp,
    or when one of its documents holds an invalid command (no valid stamp). Also counted: its own business
    keys whose document is not the newest valid command of that key in the stream."""
    rej = os.path.join(b.work, "peer-w4-rejects.jsonl")
    subprocess.run([b.tool("aggregator"), "replay", "--input", path, "--output", "/dev/null", "--rejects", rej],
                   check=True, capture_output=True)
    ref = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "tools", "reference_merge.py"), path, rej],
                         check=True, capture_output=True, text=True).stdout
    refdocs = {d["_id"]: d for d in map(json.loads, ref.splitlines())}
    ours = subprocess.run([b.tool("store_tool"), "dump", b.mongo, ours_db, "assignment_aggregates"], check=True,
                          capture_output=True, text=True).stdout
    ourdocs = {d["_id"]: d for d in map(json.loads, ours.splitlines())}
    peer = peer_store(libs, "dump", b.mongo, peer_db, "commands")
    byslot = {}
    for d in map(json.loads, peer.splitlines()):
        byslot.setdefault((d.get("tenant"), d.get("assignment"), d.get("student"), d.get("type")), []).append(d)
    slots = ours_bad = peer_bad = 0
    for _id, rd in refdocs.items():
        od = ourdocs.get(_id) or {}
        t, asg = rd["tenant"], rd["assignment"]
        entries = [("header", None, rd["header"], od.get("header"))] if rd["header"] else []
        for sid, s in rd["students"].items():
            for k in ("member", "submission", "grade"):
                if k in s:
                    entries.append((k, sid, s[k], ((od.get("students") or {}).get(sid) or {}).get(k)))
        for kind, sid, want, got in entries:
            slots += 1
            ours_bad += got != want
            docs = [d for ty in SLOT_TYPES[kind] for d in byslot.get((t, asg, sid, ty), [])]
            stamps = [stamp_of(d.get("version"), d.get("id")) for d in docs]
            if not stamps or None in stamps or max(stamps) != (want["v"], want["c"].encode()):
                peer_bad += 1
    # The connector's own promise: the newest command of each business key.
    skip = {json.loads(l)["line"] for l in open(rej)}
    newest = {}
    with open(path, "rb") as f:
        for n, raw in enumerate(f.read().split(b"\n"), 1):
            if n in skip or not raw:
                continue
            c = json.loads(raw)
            k = (c["tenant"], c["assignment"], c.get("student"), c["type"])
            s = stamp_of(c["version"], c["id"])
            if k not in newest or s > newest[k]:
                newest[k] = s
    keys_bad = sum(1 for k, s in newest.items()
                   if [stamp_of(d.get("version"), d.get("id")) for d in byslot.get(k, [])] != [s])
    extra = sum(len(v) for k, v in byslot.items() if k not in newest)
    return {"slots": slots, "ours_different": ours_bad, "peer_different": peer_bad,
            "peer_keys": len(newest), "peer_keys_not_newest": keys_bad, "peer_documents_of_invalid_lines": extra,
            "rejected_lines": len(skip)}


def peer_ceiling(b, libs, topic, n):
    """The same topic read by Kafka's kafka-consumer-perf-test, by consume_loop (librdkafka, nothing
    else) and by `aggregator replay --output /dev/null`; alternated, twice each. Rates are messages over
    the wall time of the whole process (start-up included for all three; the JVM's is longest), and
    perf-test's own fetch rate (without start-up and group join) is kept as well."""
    rows = []
    for i in (1, 2):
        load0 = loadavg()
        el, cpu, rss, out, _ = peer_timed(["java", "-Xmx512M", "-cp", os.path.join(libs, "*"),
                                           "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server",
                                           b.brokers, "--topic", topic, "--messages", str(n), "--timeout", "60000",
                                           "--group", "perf-%s-%d" % (b.run_id, i)])
        vals = out.strip().splitlines()[-1].split(", ")
        rows.append({"run": "kafka-consumer-perf-test-%d" % i, "commands": int(vals[4]), "seconds": el,
                     "commands_per_s": round(int(vals[4]) / el, 1), "own_rate": round(float(vals[9]), 1),
                     "cpu_s_per_million": round(cpu / n * 1e6, 2), "peak_rss_mib": round(rss / 1024, 1),
                     "load_avg": "%.1f-%.1f" % (load0, loadavg())})
        load0 = loadavg()
        el, cpu, rss, out, _ = peer_timed([b.tool("consume_loop"), b.brokers, topic])
        got = int(re.search(r"messages=(\d+)", out).group(1))
        rows.append({"run": "consume_loop-%d" % i, "commands": got, "seconds": el,
                     "commands_per_s": round(got / el, 1),
                     "own_rate": float(re.search(r"per_s=([0-9.]+)", out).group(1)),
                     "cpu_s_per_million": round(cpu / got * 1e6, 2), "peak_rss_mib": round(rss / 1024, 1),
                     "load_avg": "%.1f-%.1f" % (load0, loadavg())})
        load0 = loadavg()
        r = b.replay("replay-%d" % i, topic)
        rows.append({"run": r["run"], "commands": r["commands"], "seconds": r["seconds"],
                     "commands_per_s": r["commands_per_s"], "own_rate": "",
                     "cpu_s_per_million": r["cpu_s_per_million"], "peak_rss_mib": r["peak_rss_mib"],
                     "load_avg": "%.1f-%.1f" % (load0, loadavg())})
        log("bench: %s" % rows[-3:])
    return rows


def peer_plot(b, out, rows, ceiling):
    """Bars on a log scale: commands/s (with the ceiling's readers) and CPU s per million, one bar per run."""
    runs = [r for r in rows if r["run"].startswith("W1-")]
    dat = os.path.join(b.work, "peer_plot.dat")
    with open(dat, "w") as f:
        for r in runs:
            f.write('"%s" %s %s\n' % (r["run"], r["commands_per_s"], r["cpu_s_per_million"]))
        for r in ceiling:
            f.write('"%s" %s %s\n' % (r["run"], r["commands_per_s"], r["cpu_s_per_million"]))
    gp = ("set terminal png size 900,500 noenhanced\nset logscale y\nset grid ytics\nset style fill solid 0.6\n"
          "set boxwidth 0.7\nset xtics rotate by -35 scale 0\nset key off\nset bmargin 9\nset rmargin 6\n")
    gp += ("set output '%s'\nset ylabel 'commands/s (log scale)'\n"
           "set title 'W1 into the store: ours vs the MongoDB sink connector; bare readers of the replay topic'\n"
           "plot '%s' using 0:2:xtic(1) with boxes lc rgb '#4477aa'\n" % (os.path.join(out, "peer_throughput.png"), dat))
    gp += ("set output '%s'\nset ylabel 'CPU s per million commands (log scale)'\n"
           "set title 'CPU per million commands: W1 into the store; bare readers of the replay topic'\n"
           "plot '%s' using 0:3:xtic(1) with boxes lc rgb '#aa3377'\n" % (os.path.join(out, "peer_cpu.png"), dat))
    subprocess.run(["gnuplot"], input=gp, text=True, check=True)


def peer_scale(b, a, libs, w1rows):
    """The store at 2,000 and 20,000 assignments x 30 students (--peer-scale, time order): ours, then the
    connector, once each per size, each bounded as on W1 (ours by --ours-seconds, the connector by
    --peer-seconds). The W1 rows are the 40-assignment point. Each row has its CPU split: its own, the
    store's (FerretDB + PostgreSQL) and the broker's, as % of one core over the run."""
    rows = []
    for r in w1rows:
        rows.append(dict({k: r.get(k, "") for k in PEER_SCALE_FIELDS}, assignments=40))
    for spec in a.peer_scale.split(","):
        nas, cnt = (int(x) for x in spec.split("x"))
        path = b.gen("scale-%d-%d" % (nas, cnt), "--count", str(cnt), "--assignments", str(nas), "--students",
                     "30", "--order", "time")
        t = b.topic("peer-a%d" % nas, path)
        o, _ = peer_ours_run(b, "A%d-ours" % nas, t, a.ours_seconds)
        c, _ = peer_connect_run(b, a, libs, "A%d-peer" % nas, t, a.peer_seconds)
        for r in (o, c):
            rows.append(dict({k: r.get(k, "") for k in PEER_SCALE_FIELDS}, assignments=nas))
    return rows


def peer_scale_plot(b, out, rows):
    """Commands/s against assignments in the store (log-log): ours and the connector; the mean where a
    size has two runs (W1)."""
    series = []
    for who in ("ours", "peer"):
        by = {}
        for r in rows:
            if "-%s" % who in r["run"]:
                by.setdefault(r["assignments"], []).append(r["commands_per_s"])
        series.append(("aggregator run" if who == "ours" else "MongoDB sink connector (bounded runs)",
                       [(n, round(sum(v) / len(v), 1)) for n, v in sorted(by.items())]))
    plot(b, os.path.join(out, "peer_scale.png"), "assignments x 30 students in the store",
         "commands/s into the store (log scale)",
         "Throughput against assignments in the store (FerretDB v1 on PostgreSQL)", series)



def peer(b, a, w1):
    """Ours vs the MongoDB sink connector on the same W1 topic and store, alternated; both on the
    shuffled W4-like stream for correctness; the ceiling on the replay topic."""
    ver, libs = peer_install(b)
    b.build_targets("consume_loop")
    log("bench: --peer, Kafka Connect %s, load average at start %.1f" % (ver, loadavg()))
    load = LoadSampler()
    rows = []
    t = b.topic("peer-w1", w1)
    for i in (1, 2):
        rows.append(peer_ours_run(b, "W1-ours-%d" % i, t, a.ours_seconds)[0])
        rows.append(peer_connect_run(b, a, libs, "W1-peer-%d" % i, t, a.peer_seconds)[0])
    srows = peer_scale(b, a, libs, rows) if a.peer_scale else []
    w4 = b.gen("peer-w4-%d" % a.peer_w4_count, "--count", str(a.peer_w4_count), "--assignments",
               str(a.peer_w4_assignments), "--students", "30", "--order", "shuffle", "--duplicate-rate", "0.05",
               "--invalid-rate", "0.01")
    t4 = b.topic("peer-w4", w4)
    r, ours_db = peer_ours_run(b, "W4s-ours", t4, a.ours_seconds)
    rows.append(r)
    r, peer_db = peer_connect_run(b, a, libs, "W4s-peer", t4, a.peer_w4_seconds)
    rows.append(r)
    corr = peer_correctness(b, libs, w4, ours_db, peer_db)
    corr.update({"stream": "gen_commands --seed 7 --count %d --assignments %d --students 30 --order shuffle "
                           "--duplicate-rate 0.05 --invalid-rate 0.01" % (a.peer_w4_count, a.peer_w4_assignments),
                 "peer_complete": "no (bounded)" if r["bounded"] else "yes"})
    rw = b.gen("peer-replay-%d" % a.peer_replay_count, "--count", str(a.peer_replay_count), "--assignments", "20000",
               "--students", "30")
    ceiling = peer_ceiling(b, libs, b.topic("peer-replay", rw), a.peer_replay_count)
    write_csv(os.path.join(a.out, "peer.csv"), rows, PEER_FIELDS)
    write_csv(os.path.join(a.out, "peer_correctness.csv"), [corr], list(corr.keys()))
    write_csv(os.path.join(a.out, "peer_ceiling.csv"), ceiling,
              ["run", "commands", "seconds", "commands_per_s", "own_rate", "cpu_s_per_million", "peak_rss_mib",
               "load_avg"])
    peer_plot(b, a.out, rows, ceiling)
    if srows:
        write_csv(os.path.join(a.out, "peer_scale.csv"), srows, PEER_SCALE_FIELDS)
        peer_scale_plot(b, a.out, srows)
    lstat = load.stop()
    write_csv(os.path.join(a.out, "peer_load.csv"), [lstat], list(lstat.keys()))
    print(table(rows))
    for r in rows:
        print("%s: CPU s per million after start-up %s, load average %s" % (
            r["run"], r["cpu_s_per_million_after_start"] or "-", r["load_avg"]))
    by = {r["run"]: r for r in rows}
    for i in (1, 2):
        o, p = by["W1-ours-%d" % i], by["W1-peer-%d" % i]
        print("W1 pair %d: ours/peer throughput x%.0f, CPU per command x%.0f less, writes per command x%.0f less, "
              "peak RSS x%.0f less" % (i, o["commands_per_s"] / p["commands_per_s"],
                                       p["cpu_s_per_million"] / o["cpu_s_per_million"],
                                       p["store_writes_per_1000"] / max(o["store_writes_per_1000"], 1e-9),
                                       p["peak_rss_mib"] / o["peak_rss_mib"]))
    print("correctness: %s" % corr)
    for r in ceiling:
        print("%s: %s commands/s (own rate %s), %s CPU s/M, %s MiB, load %s" % (
            r["run"], r["commands_per_s"], r["own_rate"] or "-", r["cpu_s_per_million"], r["peak_rss_mib"],
            r["load_avg"]))
    for i in (1, 2):
        c = next(r for r in ceiling if r["run"] == "consume_loop-%d" % i)
        rp = next(r for r in ceiling if r["run"] == "replay-%d" % i)
        print("pair %d: replay at %.1f%% of the librdkafka loop" % (i, 100 * rp["commands_per_s"] / c["commands_per_s"]))
    for r in srows:
        print("%s (%d assignments): %s of %s commands, %s commands/s, %s writes/s, CPU %% of a core: own %s, "
              "store %s, broker %s; own share %s%% %s" % (
                  r["run"], r["assignments"], r["commands"], r["of"], r["commands_per_s"], r["writes_per_s"],
                  r["worker_cpu_pct"], r["store_cpu_pct"], r["broker_cpu_pct"], r["worker_share_pct"],
                  r["bounded"]))
    print("load average at the end: %.1f; over the run (every 5 s): %s" % (loadavg(), lstat))
