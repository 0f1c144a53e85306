#!/usr/bin/env python3
"""The benchmark commands of docs/BENCHMARKS.md that need a broker and a store run against the local stack,
small, and write the rows their sections read:

- `scripts/bench --pipeline --skip-latency` (with `--scale`): pipeline.csv and pipeline_scale.csv, `run`
  and `replay` of each workload with `run`'s share of the replay's rate;
- `scripts/bench --pipeline --only-latency --latency-steady --latency-rate R`: pipeline_latency.csv, the
  warm-up and the measured latency rows, with p50 and p99;
- `scripts/bench --ceiling --cpu --callgrind` (without perf's profile): ceiling.csv with the replay's rate
  over the loop's, cpu.csv with `run`'s CPU per million, and the instructions per command of both;
- `scripts/bench --changes --callgrind`: changes.csv with the three runs (none, docs, ids) of each workload in
  each round, one event per store write in the runs with events; changes_latency.csv with every sampled
  command matched to an event; changes_instructions.csv with both runs' instructions per command;
- `scripts/bench-distinct --store mjs`, `scripts/bench-rebalance consumer roundrobin` and `scripts/bench-poison-flood`: their
  result lines.

scripts/bench runs with --no-stack on the stack's ports and --binary-dir on this build; its topics and
databases are removed at the end. `--peer` (Kafka Connect's jars, fetched by Maven) is left to
test_bench_commands' check of its options.
"""
import csv
import os
import re
import subprocess
import tempfile
import urllib.parse

import harness as h

NAME = "test_bench_scripts"


def port_of(address):
    return str(urllib.parse.urlsplit("//" + address.split("://")[-1].split("/")[0]).port)


def sanitized():
    out = subprocess.run(["ldd", h.AGGREGATOR], capture_output=True, text=True).stdout
    return re.search(r"lib[at]san", out) is not None


class BenchRuns:
    """scripts/bench against the shared stack, every run's topics and databases remembered for cleanup."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.topics, self.labels = set(), set()
        self.env = dict(os.environ, AGG_KAFKA_PORT=port_of(h.BROKERS), AGG_MONGO_PORT=port_of(h.MONGO),
                        AGG_CACHE_DIR=os.path.join(tmp, "cache"), AGG_BENCH_RUN_ID="%s-%d" % (NAME, os.getpid()))

    def run(self, out, *args):
        cmd = [os.path.join(h.SRC, "scripts", "bench"), "--no-stack", "--binary-dir", h.BIN, "--out", out, *args]
        h.log("$ " + " ".join(cmd))
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=900)
        self.topics |= set(re.findall(r"^bench: topic (\S+)$", p.stderr, re.M))
        assert p.returncode == 0, "scripts/bench %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr[-3000:])
        return p.stdout

    def rows(self, path):
        with open(path) as f:
            rows = list(csv.DictReader(f))
        self.labels |= {r["run"] for r in rows if "run" in r}
        return rows

    def cleanup(self):
        for t in self.topics:
            for name in (t, t + "-dlq"):
                subprocess.run([h.tool("kafka_tool"), "delete-topic", h.BROKERS, name], capture_output=True)
        for label in self.labels:
            db = "bench_" + re.sub(r"[^A-Za-z0-9]", "_", label)
            subprocess.run([h.tool("store_tool"), "drop", h.MONGO, db], capture_output=True)


def check_pipeline(b, tmp):
    out = os.path.join(tmp, "pipeline")
    b.run(out, "--pipeline", "--skip-latency", "--pipeline-count", "2000", "--scale", "--scale-counts", "20x600")
    rows = {r["run"]: r for r in b.rows(os.path.join(out, "pipeline.csv"))}
    for w in ("W1", "W2"):
        assert rows[w + "-replay"]["commands"] == "2000", rows
        run = rows[w + "-pipelined"]
        assert run["commands"] == run["of"] == "2000", run
        assert 0 < float(run["of_replay"]) and float(run["commands_per_s"]) > 0, run
        assert float(run["store_writes_per_1000"]) > 0, run
    scale = {r["run"]: r for r in b.rows(os.path.join(out, "pipeline_scale.csv"))}
    assert scale["A20-pipelined"]["commands"] == scale["A20-pipelined"]["of"] == "600", scale
    assert float(scale["A20-pipelined"]["of_replay"]) > 0, scale
    assert not any("stop-and-wait" in r for r in list(rows) + list(scale)), "no baseline unless asked for"


def check_latency(b, tmp):
    out = os.path.join(tmp, "latency")
    b.run(out, "--pipeline", "--only-latency", "--latency-steady", "--latency-rate", "1000",
          "--pipeline-latency-seconds", "2")
    assert not os.path.exists(os.path.join(out, "pipeline.csv")), "latency rows alone go beside the rates"
    rows = b.rows(os.path.join(out, "pipeline_latency.csv"))
    assert [r["run"] for r in rows] == ["W1steady-pipelined-warm-up-latency-at-1000-per-s",
                                        "W1steady-pipelined-latency-at-1000-per-s"], rows
    for r in rows:
        assert r["commands"] == r["of"] == "2000", r
        assert 0 < float(r["latency_p50_s"]) <= float(r["latency_p99_s"]), r


def check_ceiling_cpu(b, tmp):
    out = os.path.join(tmp, "ceiling")
    callgrind = [] if sanitized() else ["--callgrind", "--callgrind-count", "300"]
    b.run(out, "--ceiling", "--cpu", "--no-profile", "--pairs", "1", "--ceiling-count", "20000",
          "--ceiling-assignments", "30", "--cpu-count", "2000", *callgrind)
    ceiling = b.rows(os.path.join(out, "ceiling.csv"))
    assert sorted(r["run"] for r in ceiling) == ["consume_loop-1", "replay-1"], ceiling
    replay = next(r for r in ceiling if r["run"] == "replay-1")
    assert replay["commands"] == "20000" and float(replay["replay_of_loop"]) > 0, replay
    cpu = b.rows(os.path.join(out, "cpu.csv"))
    assert [(r["run"], r["build"]) for r in cpu] == [("W1-current-run-1", "current")], cpu
    assert cpu[0]["commands"] == cpu[0]["of"] == "2000" and float(cpu[0]["cpu_s_per_million"]) > 0, cpu
    assert float(cpu[0]["run_of_replay"]) > 0, cpu
    if callgrind:
        for name, process in (("ceiling-instructions.csv", "replay"), ("cpu-instructions.csv", "run (current)")):
            ins = b.rows(os.path.join(out, name))
            assert any(r["process"] == process and float(r["per_command"]) > 0 for r in ins), (name, ins[:5])
    else:
        h.log("the callgrind runs are left out in a sanitizer build")


def check_changes(b, tmp):
    out = os.path.join(tmp, "changes")
    callgrind = [] if sanitized() else ["--callgrind", "--changes-callgrind", "40x300"]
    b.run(out, "--changes", "--changes-counts", "40x3000,20x600", "--changes-rounds", "2", "--changes-rate", "1000",
          "--changes-latency-seconds", "2", "--changes-samples", "20", *callgrind)
    b.labels.add("A40-warm-up")  # its database: the warm-up run is not in the CSV
    rows = b.rows(os.path.join(out, "changes.csv"))
    assert sorted((r["workload"], r["round"], r["variant"]) for r in rows) == sorted(
        (w, rd, v) for w in ("40 x 30, 3000", "20 x 30, 600") for rd in ("1", "2") for v in ("none", "docs", "ids")), rows
    assert [r["variant"] for r in rows[:6]] == ["none", "docs", "ids", "ids", "docs", "none"], "order flipped"
    for r in rows:
        assert r["commands"] == r["of"] and float(r["commands_per_s"]) > 0, r
        assert float(r["store_writes_per_1000"]) > 0 and float(r["rate_of_none"]) > 0, r
        if r["variant"] == "none":
            assert float(r["events_per_1000"]) == 0 and r["events_per_write"] == "", r
        else:
            assert float(r["events_per_write"]) == 1 and r["flag"] == "", r
            assert r["events_per_1000"] == r["store_writes_per_1000"], r
    lat = b.rows(os.path.join(out, "changes_latency.csv"))
    assert len(lat) == 1 and lat[0]["commands"] == "2000", lat
    assert int(lat[0]["sampled"]) > 0 and lat[0]["matched"] == lat[0]["sampled"], lat
    assert 0 <= float(lat[0]["event_p50_s"]) <= float(lat[0]["event_p99_s"]), lat
    if callgrind:
        b.labels |= {"A40-none-under-callgrind", "A40-docs-under-callgrind"}
        ins = {r["kind"]: r for r in b.rows(os.path.join(out, "changes_instructions.csv")) if r["level"] == "summary"}
        assert int(ins["total_docs"]["instructions"]) > int(ins["total_none"]["instructions"]) > 0, ins
        assert int(ins["encode"]["instructions"]) > 0 and int(ins["produce"]["instructions"]) > 0, ins
        assert int(ins["events"]["instructions"]) == int(ins["writes"]["instructions"]) > 0, ins
    else:
        h.log("the callgrind runs are left out in a sanitizer build")


def check_distinct(tmp):
    p = subprocess.run([os.path.join(h.SRC, "scripts", "bench-distinct"), "--store", "mjs", "--count", "3000",
                        "--assignments", "1000", "--seconds", "300", "--build", h.BIN],
                       capture_output=True, text=True, timeout=600, cwd=tmp)
    assert p.returncode == 0, "bench-distinct: exit %d\n%s" % (p.returncode, p.stderr[-3000:])
    h.log(p.stdout.strip())
    m = re.search(r"^store mjs: (\d+) of (\d+) commands committed in .*; peak RSS [0-9.]+ MiB$", p.stdout, re.M)
    assert m and m.group(1) == m.group(2) and "(bounded)" not in m.group(0), p.stdout


def check_rebalance(tmp):
    env = dict(os.environ, AGG_CACHE_DIR=os.path.join(tmp, "cache"))
    # 30 s of stream at 1000/s: the join and the leave must both settle while it flows, on a busy machine too.
    p = subprocess.run([os.path.join(h.SRC, "scripts", "bench-rebalance"), "--runs", "1", "--count", "30000",
                        "--rate", "1000", "consumer", "roundrobin"], capture_output=True, text=True, timeout=900,
                       env=env)
    assert p.returncode == 0, "bench-rebalance: exit %d\n%s" % (p.returncode, p.stderr[-3000:])
    header, *lines = p.stdout.splitlines()
    names = header.split(",")
    assert [l.split(",")[0] for l in lines] == ["consumer", "roundrobin"], p.stdout
    for line in lines:
        r = dict(zip(names, line.split(",")))
        assert (r["leave"], r["commands"], r["documents_ok"]) == ("stop", "30000", "yes"), line
        assert int(r["consumed"]) >= 30000 and float(r["join_s"]) > 0 and float(r["leave_s"]) > 0, line
        assert all(float(r[k]) >= 0 for k in ("join_stall_s", "leave_stall_s", "join_idle_s", "base_stall_s")), line


def check_poison_flood(tmp):
    env = dict(os.environ, AGG_CACHE_DIR=os.path.join(tmp, "cache"))
    p = subprocess.run([os.path.join(h.SRC, "scripts", "bench-poison-flood"), "--count", "2000", "bounded",
                        "defaults"], capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, "bench-poison-flood: exit %d\n%s" % (p.returncode, p.stderr[-3000:])
    lines = p.stdout.splitlines()
    assert [l.split()[0] for l in lines] == ["config=bounded", "config=defaults"], p.stdout
    for line in lines:
        m = re.search(r" commands=2000 .* seconds=[0-9.]+ commands_per_s=\d+ .* peak_rss_mib=(\d+)$", line)
        assert m and int(m.group(1)) > 0, line
    with open(os.path.join(tmp, "cache", "bench-poison-flood", "results.txt")) as f:
        assert f.read().count("config=") == 2, "both lines appended to results.txt"


def main():
    with tempfile.TemporaryDirectory(prefix=NAME + "-") as tmp:
        b = BenchRuns(tmp)
        try:
            check_pipeline(b, tmp)
            check_latency(b, tmp)
            check_ceiling_cpu(b, tmp)
            check_changes(b, tmp)
        finally:
            b.cleanup()
        check_distinct(tmp)
        check_rebalance(tmp)
        check_poison_flood(tmp)
    print("%s: passed" % NAME)


if __name__ == "__main__":
    main()
