"""scripts/bench --pipeline (run against replay of the same topic, latency at a fixed rate) and --bytes
(bytes per write at 30 and 3,000 students). scripts/bench's header says what each measures."""
import datetime
import json
import os
import subprocess
import time

from bench_lib import PIPELINE_FIELDS, cpu_shares, sh, stack_cpu, table, write_csv


LINGER_S = 0.1  # batch.linger_ms's default, which every run here uses


def flush_passes(path):
    """The latency target is p99 <= linger + two flush durations, a flush being, under group commit,
    everything dirty when the previous one lands. The worker writes that oldest change first in pieces of
    about linger_ms (the flush cap, worker/pipeline/batch.h), so a "flush" of the target is a pass: from the moment
    a piece begins, until everything dirty at that moment is written. Read from the worker's debug log:
    "flush begins" (aggregates taken, dirty) and "flush finished", one piece in flight at a time; a pass
    from piece k ends with the first piece j >= k by which the pieces took as many aggregates as were
    dirty when k began (the dirty list is oldest first: what was dirty then goes before anything newer)."""
    pieces, started = [], []
    stamp = lambda j: datetime.datetime.strptime(j["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    with open(path) as f:
        for line in f:
            if '"flush begins"' in line:
                j = json.loads(line)
                started.append((stamp(j), j["aggregates"], j["dirty"]))
            elif '"flush finished"' in line and started:  # logged after the next piece began
                j = json.loads(line)
                t0, took, dirty = started.pop(0)
                pieces.append((t0, stamp(j), took, dirty))
    passes = []
    for k, (t0, _, _, dirty) in enumerate(pieces):
        took = 0
        for _, t1, n, _ in pieces[k:]:
            took += n
            if took >= dirty:
                passes.append(t1 - t0)
                break
    return sorted(passes)


def against_replay(b, a, name, topic, old):
    """`replay` of topic, then `run` (and the stop-and-wait `run` of old, if given), each row with its rate
    over the replay's."""
    rep = b.replay(name + "-replay", topic)
    new = b.run(name + "-pipelined", topic, [], a.ours_seconds)
    base = [b.run(name + "-stop-and-wait", topic, [], a.ours_seconds, binary=old)] if old else []
    for r in [rep, new, *base]:
        r["of_replay"] = round(r["commands_per_s"] / rep["commands_per_s"], 4)
        r.setdefault("writes_per_s", "")
        r.setdefault("flushes", "")
        r.setdefault("flush_mean_s", "")
    return [rep, new, *base]


def pipeline(b, a, w1, w2):
    """Pipelined vs stop-and-wait `run`, each against `replay` of the same topic."""
    old = b.build_baseline(a.baseline) if a.baseline else None
    rows = []
    if a.only_latency and not a.latency_rate:
        raise SystemExit("bench: --pipeline --only-latency needs --latency-rate")
    for name, path in () if a.only_latency else (("W1", w1), ("W2", w2)):
        rows += against_replay(b, a, name, b.topic("p" + name.lower(), path), old)
    if a.scale:
        srows = []
        for spec in a.scale_counts.split(","):
            nas, cnt = (int(x) for x in spec.split("x"))
            path = b.gen("scale-%d-%d" % (nas, cnt), "--count", str(cnt), "--assignments", str(nas), "--students",
                         "30", "--order", "time")
            srows += against_replay(b, a, "A%d" % nas, b.topic("s%d" % nas, path), old)
        write_csv(os.path.join(a.out, "pipeline_scale.csv"), srows, PIPELINE_FIELDS)
        print(table(srows))
    w1new = next((r for r in rows if r["run"] == "W1-pipelined"), None)
    rate = int(a.latency_rate or w1new["commands_per_s"] / 2)
    n = int(rate * a.pipeline_latency_seconds)
    # W1's assignments start over 30 days, so how many are active (and how long a pass is) rises and falls
    # over a run; --latency-steady starts them at once: all 40 active throughout, a pass about the same.
    steady = ["--start-spread-days", "0"] if a.latency_steady else []
    w = "W1steady" if a.latency_steady else "W1"
    lw = b.gen("plat-%s%d" % ("steady-" if steady else "", n), "--count", str(n), "--assignments", "40", "--students",
               "30", "--order", "time", *steady)
    # The first run on a stack just started is cold: the broker's JVM still compiles its produce and fetch
    # paths, on the two cores the worker and the store share. So the pipelined run goes once first as a
    # warm-up; its row stays in the CSV, labelled, to show the cost.
    latency_runs = (("pipelined-warm-up", None), ("pipelined", None)) + ((("stop-and-wait", old),) if old else ())
    for label, binary in (() if a.skip_latency else latency_runs):
        # The broker's append time, not the producer's: at these rates kafka_tool runs near its own maximum on
        # the same two cores, and what a message spends queued in a producer is not the worker's to shorten.
        lt = b.topic("plat-" + label, lw, produce=False, configs=["message.timestamp.type=LogAppendTime"])
        r = b.run("%s-%s-latency-at-%d-per-s" % (w, label, rate), lt, [], 5 + a.pipeline_latency_seconds + 120,
                  feed=(lw, n, rate), binary=binary, log_level="debug", probe=lambda: stack_cpu(b))
        cpu_shares(r, *r.pop("probe"))
        r["of_replay"] = ""
        passes = flush_passes(r["log"])
        if not passes and r["flush_mean_s"] != "":  # stop-and-wait: every flush takes everything dirty
            passes = [r["flush_mean_s"]]
        if passes:
            r["pass_mean_s"] = round(sum(passes) / len(passes), 3)
            r["pass_p99_s"] = round(passes[min(len(passes) - 1, int(0.99 * len(passes)))], 3)
            r["promise_s"] = round(LINGER_S + 2 * r["pass_mean_s"], 3)
            r["p99_within_promise"] = "yes" if float(r["latency_p99_s"]) <= r["promise_s"] else "no"
            if r["committable_p99_s"] != "":
                r["committable_p99_within_promise"] = "yes" if float(r["committable_p99_s"]) <= r["promise_s"] else "no"
        rows.append(r)
    # --only-latency has latency rows alone: they go beside the rates of a full run, not over them.
    write_csv(os.path.join(a.out, "pipeline_latency.csv" if a.only_latency else "pipeline.csv"), rows,
              PIPELINE_FIELDS)
    print(table(rows))
    for r in rows:
        if r["of_replay"] != "":
            print("%s: %.1f%% of replay's rate" % (r["run"], 100 * r["of_replay"]))
    return rows


BYTES_FIELDS = ["run", "students", "commands", "of", "seconds", "commands_per_s", "store_writes_per_1000", "flushes",
                "bytes_per_flush", "bytes_per_1000", "bytes_per_write", "bounded"]


SLOW_RATE, SLOW_COUNT = 20, 1200


def bytes_sweep(b, a):
    """BSON bytes the store is sent (aggregator_store_write_bytes_total) per flush and per 1,000
    commands, for W1 (40 assignments, time order) at 30 and at 3,000 students per assignment."""
    rows = []
    for students in (30, 3000):
        n = a.bytes_count
        path = b.gen("w1-bytes-%d-%d" % (students, n), "--count", str(n), "--assignments", "40", "--students",
                     str(students), "--order", "time")
        # As a backlog (flushes as large as batch.max_commands), and produced at --bytes-rate while the worker
        # runs (flushes cut by batch.linger_ms, as when it keeps up).
        label = "W1-%d-students-backlog" % students
        r = b.run(label, b.topic(label.lower(), path), [], a.ours_seconds)
        r["students"] = students
        rows.append(r)
        label = "W1-%d-students-at-%d-per-s" % (students, a.bytes_rate)
        t = b.topic(label.lower(), path, produce=False)
        time.sleep(3)  # new topics take a moment to show in every broker's metadata (the worker checks at start)
        r = b.run(label, t, [], 5 + n / a.bytes_rate + 120,
                  feed=(path, n, a.bytes_rate))
        r["students"] = students
        rows.append(r)
        # Steady state: the store already holds every student's slots (cmdgen's base commands, the first
        # version of every entity, written by `replay --input`), and the run carries only the later
        # versions: updates of students already stored, as when an assignment is in use. Each write is
        # then a partial one, whose size should follow the students it changed, not the document.
        full = b.gen("w1-steady-%d-%d" % (students, n), "--count", str(40 * (1 + 3 * students) + n),
                     "--assignments", "40", "--students", str(students), "--order", "time")
        base, updates = full + ".base", full + ".updates"
        if not os.path.exists(updates):
            with open(full) as f, open(base, "w") as fb, open(updates + ".tmp", "w") as fu:
                for line in f:
                    (fb if json.loads(line)["version"] == 1 else fu).write(line)
            os.rename(updates + ".tmp", updates)
        # The slow rate makes flushes small where the store is slow (FerretDB rewrites a 735 KB document on
        # every update, about 1.4 s), so that each write carries the few students changed since the last.
        slow = updates + ".slow"
        if not os.path.exists(slow):
            with open(updates) as f, open(slow + ".tmp", "w") as fs:
                for _, line in zip(range(SLOW_COUNT), f):
                    fs.write(line)
            os.rename(slow + ".tmp", slow)
        for rate, path, count in ((None, updates, n), (a.bytes_rate, updates, n), (SLOW_RATE, slow, SLOW_COUNT)):
            label = "W1-%d-students-steady-%s" % (students, "backlog" if rate is None else "at-%d-per-s" % rate)
            sh([b.tool("store_tool"), "drop", b.mongo, b.db_of(label)])
            sh([b.tool("aggregator"), "replay", "--input", base, "--set", "store.uri=" + b.mongo, "--set",
                "store.database=" + b.db_of(label), "--set", "log.level=warn"], stdout=subprocess.DEVNULL)
            if rate is None:
                r = b.run(label, b.topic(label.lower(), path), [], a.ours_seconds, keep_db=True)
            else:
                t = b.topic(label.lower(), path, produce=False)
                time.sleep(3)
                r = b.run(label, t, [], 5 + count / rate + 120, feed=(path, count, rate), keep_db=True)
            r["students"] = students
            rows.append(r)
    for r in rows:
        w = r["store_writes_per_1000"]
        r["bytes_per_write"] = round(r["bytes_per_1000"] / w) if w else ""
    write_csv(os.path.join(a.out, "bytes.csv"), rows, BYTES_FIELDS)
    for r in rows:
        print("%s: %s commands in %s s, %s flushes, %s bytes/flush, %s bytes/1k commands, %s writes/1k, "
              "%s bytes/write %s" % (r["run"], r["commands"], r["seconds"], r["flushes"], r["bytes_per_flush"],
                                      r["bytes_per_1000"], r["store_writes_per_1000"], r["bytes_per_write"],
                                      r["bounded"]))
