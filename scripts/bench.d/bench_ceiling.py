"""scripts/bench --ceiling and --cpu: replay against the plain librdkafka loop, run's CPU per command, and
where each spends its CPU (perf) and its instructions (callgrind)."""
import os
import re
import subprocess

from bench_lib import cpu_shares, loadavg, log, peer_timed, stack_cpu, write_csv


# --- --ceiling and --cpu ------------------------------------------------------------------------
#
# --ceiling: `replay --output /dev/null` against the plain librdkafka loop (tests/tools/consume_loop.c) on
# one replay topic, alternated pair by pair. --cpu: `run` of W1 into the store (with --cpu-baseline REV,
# alternated pair by pair with that revision built from git history), each run after `replay` of the same
# topic for the run/replay ratio. Both then profile one more run of each reader or build with `perf record`
# (cpu-clock samples: the machine has no hardware counters) and split its CPU by thread and by kind of code.

def dated(a, name):
    """--date D names a mode's CSVs D-NAME, so that runs of several days sit side by side; plain NAME
    otherwise (a new run replaces the last one's)."""
    return "%s-%s" % (a.date, name) if a.date else name


# What a sampled function is, by its symbol (first match wins) or its library; for the split of a profile.
# Static functions inlined at -O3 are counted in the function they were inlined into.
SYMBOL_KINDS = (
    ("decode and validate", ("scan_", "plain_", "model_json", "model_command", "check_", "model_timestamp",
                             "model_rec_decode", "utf8", "json_")),
    ("merge and batch", ("batch_", "model_aggregate", "model_aggset", "model_table", "model_rec", "model_drift",
                         "model_keys", "model_docsize", "entity_", "slot_", "student_", "hold_", "release_held")),
    ("BSON encode and store", ("bson_", "_bson", "mongoc_", "_mongoc", "model_codec_bson", "store_", "writer_",
                               "flusher_", "mcommon", "_mcommon")),
    ("JSON output", ("model_codec_to_json", "model_buf_json", "model_numfmt", "numfmt")),
    ("message handling (ours)", ("replay_", "take", "consume", "range_of", "consumer_", "offsets_", "deadletter_",
                                 "kafka_", "feed_")),
    ("metrics and HTTP", ("metrics_", "http_", "readiness_")),
)


def symbol_kind(dso, sym):
    if "librdkafka" in dso:
        return "librdkafka"
    if "libbson" in dso or "libmongoc" in dso:
        return "BSON encode and store"
    if "kernel" in dso:
        return "kernel"
    for kind, prefixes in SYMBOL_KINDS:
        if sym.startswith(prefixes):
            return kind
    if dso.startswith("libc") or dso.startswith("ld-linux") or "vdso" in dso:
        return "libc (malloc, memcpy, clock)"
    if "ssl" in dso or "crypto" in dso or "libz" in dso or "libsasl" in dso or "liblz4" in dso or "libzstd" in dso:
        return "compression, TLS libraries"
    return "other"


def perf_split(data, process, top=25):
    """A perf.data of one process as CSV rows: per thread group (librdkafka's rdk:* threads together, each
    other thread apart, named by what it runs most) and kind of code, its share of the process's samples
    and CPU s (samples at 999 Hz); then the top symbols. Returns (rows, printable summary)."""
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", "-n", "--no-children", "-s", "pid,dso,sym",
                          "--field-separator=;"], check=True, capture_output=True, text=True).stdout
    samples = []
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f = [x.strip() for x in line.split(";")]
        if len(f) < 5:
            continue
        tid, comm = f[2].split(":", 1)
        sym = re.sub(r"^\[[.k]\]\s*", "", f[4])
        if sym.startswith("0x"):  # a library without symbols (Debian's librdkafka): one row for all of it
            sym = "(no symbols)"
        samples.append((tid, comm, f[3], sym, int(f[1])))
    total = max(sum(s[4] for s in samples), 1)
    # Each thread of ours is named by the kind it spends most on; librdkafka's threads name themselves rdk:*.
    by_tid = {}
    for tid, comm, dso, sym, n in samples:
        if not comm.startswith("rdk:"):
            by_tid.setdefault(tid, {}).setdefault(symbol_kind(dso, sym), 0)
            by_tid[tid][symbol_kind(dso, sym)] += n
    names = {}
    ours = ("decode and validate", "merge and batch", "JSON output", "message handling (ours)", "BSON encode and store",
            "metrics and HTTP")
    # The main thread has the lowest tid of the process's threads (its tid is the pid).
    lowest = min(by_tid, key=int) if by_tid else None
    for tid, kinds in by_tid.items():
        own = {k: v for k, v in kinds.items() if k in ours}
        main = max(own, key=own.get) if own else ""
        names[tid] = ("main thread" if tid == lowest else
                      "writer thread" if main == "BSON encode and store" else
                      "metrics thread" if main == "metrics and HTTP" else "other thread")
    # Two threads that get the same name (rare: a short-lived helper) stay apart by their tid.
    counts = {}
    for tid, nm in names.items():
        counts[nm] = counts.get(nm, 0) + 1
    for tid in names:
        if counts[names[tid]] > 1:
            names[tid] += " " + tid
    groups = {}
    for tid, comm, dso, sym, n in samples:
        g = "librdkafka threads (rdk:*)" if comm.startswith("rdk:") else names[tid]
        k = symbol_kind(dso, sym)
        groups[(g, k)] = groups.get((g, k), 0) + n
    rows = []
    for (g, k), n in sorted(groups.items(), key=lambda x: -x[1]):
        rows.append({"process": process, "level": "kind", "thread": g, "kind": k, "dso": "", "symbol": "",
                     "samples": n, "pct": round(100 * n / total, 1), "cpu_s": round(n / 999, 2)})
    syms = {}
    for tid, comm, dso, sym, n in samples:
        g = "librdkafka threads (rdk:*)" if comm.startswith("rdk:") else names[tid]
        syms[(g, dso, sym)] = syms.get((g, dso, sym), 0) + n
    for (g, dso, sym), n in sorted(syms.items(), key=lambda x: -x[1])[:top]:
        rows.append({"process": process, "level": "symbol", "thread": g, "kind": symbol_kind(dso, sym), "dso": dso,
                     "symbol": sym, "samples": n, "pct": round(100 * n / total, 1), "cpu_s": round(n / 999, 2)})
    lines = ["%s: %d samples (%.1f CPU s)" % (process, total, total / 999)]
    tg = {}
    for (g, k), n in groups.items():
        tg[g] = tg.get(g, 0) + n
    for g, n in sorted(tg.items(), key=lambda x: -x[1]):
        lines.append("  %5.1f%%  %s" % (100 * n / total, g))
        for (g2, k), m in sorted(groups.items(), key=lambda x: -x[1]):
            if g2 == g and 100 * m / total >= 0.5:
                lines.append("          %5.1f%%  %s" % (100 * m / total, k))
    lines.append("  top functions:")
    for r in rows:
        if r["level"] == "symbol" and r["process"] == process:
            lines.append("    %5.1f%%  %-26s %-22s %s" % (r["pct"], r["thread"][:26], r["dso"][:22], r["symbol"]))
    return rows, "\n".join(lines)


PROFILE_FIELDS = ["process", "level", "thread", "kind", "dso", "symbol", "samples", "pct", "cpu_s"]


def perf_wrap(data):
    return ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-o", data, "--"]


def callgrind_split(prefix, process, commands, top=20):
    """The per-thread files of one `valgrind --tool=callgrind --separate-threads=yes` run (prefix-01,
    prefix-02, ...) as CSV rows: per thread and kind of code (symbol_kind), instructions and instructions per
    command; then the top functions (exclusive). Thread 1 is the main thread; each other thread is named by
    what it runs most. Returns (rows, printable summary)."""
    import glob
    funcs = []  # (thread name, obj, function, Ir)
    names = {}
    for f in sorted(glob.glob(prefix + "-*")):
        th = int(f.rsplit("-", 1)[1])
        out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", f], check=True,
                             capture_output=True, text=True).stdout
        mine = []
        for line in out.splitlines():
            m = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*) \[(.*)\]$", line)
            if not m:
                continue
            fn = m.group(2).rpartition(":")[2]
            obj = os.path.basename(m.group(3))
            if fn.startswith("0x"):
                fn = "(no symbols)"
            mine.append((obj, fn, int(m.group(1).replace(",", ""))))
        if not mine:
            continue
        kinds = {}
        for obj, fn, ir in mine:
            kinds[symbol_kind(obj, fn)] = kinds.get(symbol_kind(obj, fn), 0) + ir
        objs = {}
        for obj, fn, ir in mine:
            objs[obj] = objs.get(obj, 0) + ir
        ours = {k: v for k, v in kinds.items() if k in ("BSON encode and store", "metrics and HTTP")}
        if th == 1:
            name = "main thread"
        elif ours and max(ours.values()) > 0.2 * sum(kinds.values()):
            name = "writer thread" if max(ours, key=ours.get) == "BSON encode and store" else "metrics thread"
        elif "librdkafka" in max(objs, key=objs.get):
            name = "librdkafka thread"
        elif "mongoc" in max(objs, key=objs.get):
            name = "mongoc thread"
        else:
            name = "other thread"
        names[th] = name
        funcs += [(name, obj, fn, ir) for obj, fn, ir in mine]
    total = max(sum(f[3] for f in funcs), 1)
    groups, syms, tg = {}, {}, {}
    for name, obj, fn, ir in funcs:
        g = "librdkafka threads" if name == "librdkafka thread" else name
        k = symbol_kind(obj, fn)
        groups[(g, k)] = groups.get((g, k), 0) + ir
        syms[(g, obj, fn)] = syms.get((g, obj, fn), 0) + ir
        tg[g] = tg.get(g, 0) + ir
    rows = []
    for (g, k), ir in sorted(groups.items(), key=lambda x: -x[1]):
        rows.append({"process": process, "level": "kind", "thread": g, "kind": k, "dso": "", "symbol": "",
                     "instructions": ir, "per_command": round(ir / commands), "pct": round(100 * ir / total, 1)})
    for (g, obj, fn), ir in sorted(syms.items(), key=lambda x: -x[1])[:top]:
        rows.append({"process": process, "level": "symbol", "thread": g, "kind": symbol_kind(obj, fn), "dso": obj,
                     "symbol": fn, "instructions": ir, "per_command": round(ir / commands),
                     "pct": round(100 * ir / total, 1)})
    lines = ["%s: %d instructions, %d per command over %d commands (threads: %s)" % (
        process, total, total / commands, commands, ", ".join("%d %s" % x for x in sorted(names.items())))]
    for g, ir in sorted(tg.items(), key=lambda x: -x[1]):
        lines.append("  %7d per command  %5.1f%%  %s" % (ir / commands, 100 * ir / total, g))
        for (g2, k), m in sorted(groups.items(), key=lambda x: -x[1]):
            if g2 == g and 100 * m / total >= 0.5:
                lines.append("      %7d  %s" % (m / commands, k))
    lines.append("  top functions (exclusive), per command:")
    for r in rows:
        if r["level"] == "symbol":
            lines.append("    %7d  %-18s %-22s %s" % (r["per_command"], r["thread"][:18], r["dso"][:22], r["symbol"]))
    return rows, "\n".join(lines)


CALLGRIND_FIELDS = ["process", "level", "thread", "kind", "dso", "symbol", "instructions", "per_command", "pct"]


def callgrind_wrap(prefix):
    for old in __import__("glob").glob(prefix + "*"):
        os.remove(old)
    return ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--callgrind-out-file=" + prefix]


CEILING_FIELDS = ["pair", "run", "commands", "seconds", "commands_per_s", "cpu_s", "cpu_s_per_million",
                  "peak_rss_mib", "load_avg", "replay_of_loop", "replay_cpu_over_loop"]


def loop_read(b, label, topic, wrap=()):
    load0 = loadavg()
    el, cpu, rss, out, _ = peer_timed([*wrap, b.tool("consume_loop"), b.brokers, topic])
    got = int(re.search(r"messages=(\d+)", out).group(1))
    r = {"run": label, "commands": got, "seconds": el, "commands_per_s": round(got / el, 1), "cpu_s": round(cpu, 2),
         "cpu_s_per_million": round(cpu / got * 1e6, 3), "peak_rss_mib": round(rss / 1024, 1),
         "load_avg": "%.1f-%.1f" % (load0, loadavg())}
    log("bench: %s" % r)
    return r


def replay_read(b, label, topic, binary=None, wrap=()):
    load0 = loadavg()
    r = b.replay(label, topic, binary=binary, wrap=wrap)
    r["cpu_s_per_million"] = round(r["cpu_s"] / r["commands"] * 1e6, 3)
    r["cpu_s"] = round(r["cpu_s"], 2)
    r["load_avg"] = "%.1f-%.1f" % (load0, loadavg())
    return r


def need_tools(a):
    """--ceiling and --cpu profile with perf (unless --no-profile) and count with valgrind (--callgrind): say
    so before the first run rather than after the measured ones."""
    import shutil
    missing = [t for t, used in (("perf", not a.no_profile), ("valgrind", a.callgrind),
                                 ("callgrind_annotate", a.callgrind)) if used and not shutil.which(t)]
    if missing:
        raise SystemExit("bench: %s not found (--no-profile leaves perf out; --callgrind needs valgrind)"
                         % ", ".join(missing))


def read_under(b, who, tool, topic, wrap):
    """One read of topic by who (consume_loop or replay) under a tool's command line."""
    if who == "replay":
        replay_read(b, "replay-under-" + tool, topic, wrap=wrap)
    else:
        loop_read(b, "consume_loop-under-" + tool, topic, wrap=wrap)


def ceiling(b, a):
    """replay against consume_loop on one topic: a warm-up read of each (not kept), then --pairs pairs,
    the order flipped every pair (loop first in odd pairs, replay first in even ones)."""
    b.build_targets("consume_loop")
    n = a.ceiling_count
    path = b.gen("peer-replay-%d" % n, "--count", str(n), "--assignments", str(a.ceiling_assignments), "--students",
                 "30")
    t = b.topic("ceiling", path)
    log("bench: --ceiling, load average at start %.1f" % loadavg())
    loop_read(b, "consume_loop-warm-up", t)
    replay_read(b, "replay-warm-up", t)
    rows = []
    for i in range(1, a.pairs + 1):
        got = {}
        for who in (("loop", "replay") if i % 2 else ("replay", "loop")):
            got[who] = (loop_read(b, "consume_loop-%d" % i, t) if who == "loop" else
                        replay_read(b, "replay-%d" % i, t))
        lp, rp = got["loop"], got["replay"]
        rp["replay_of_loop"] = round(rp["commands_per_s"] / lp["commands_per_s"], 3)
        # A read shorter than the clock's tick (10 ms) may show no CPU at all: then there is no ratio.
        rp["replay_cpu_over_loop"] = (round(rp["cpu_s_per_million"] / lp["cpu_s_per_million"], 2)
                                      if lp["cpu_s_per_million"] else "")
        for r in (lp, rp) if i % 2 else (rp, lp):
            r["pair"] = i
            rows.append(r)
    prof = []
    if not a.no_profile:
        for who in ("consume_loop", "replay"):
            data = os.path.join(b.work, "ceiling-%s.perf.data" % who)
            read_under(b, who, "perf", t, perf_wrap(data))
            pr, text = perf_split(data, who)
            prof += pr
            print(text)
        write_csv(os.path.join(a.out, dated(a, "ceiling-profile.csv")), prof, PROFILE_FIELDS)
    if a.callgrind:
        cn = a.callgrind_count
        cpath = b.gen("ceiling-callgrind-%d" % cn, "--count", str(cn), "--assignments", str(a.ceiling_assignments // 10),
                      "--students", "30")
        ct = b.topic("ceiling-callgrind", cpath)
        ins = []
        for who in ("consume_loop", "replay"):
            prefix = os.path.join(b.work, "ceiling-%s.callgrind" % who)
            read_under(b, who, "callgrind", ct, callgrind_wrap(prefix))
            cr, text = callgrind_split(prefix, who, cn)
            ins += cr
            print(text)
        write_csv(os.path.join(a.out, dated(a, "ceiling-instructions.csv")), ins, CALLGRIND_FIELDS)
    write_csv(os.path.join(a.out, dated(a, "ceiling.csv")), rows, CEILING_FIELDS)
    print("| pair | reader | commands/s | CPU s per million | peak RSS MiB | load | replay / loop |")
    print("|---|---|---:|---:|---:|---|---|")
    for r in rows:
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["pair"], r["run"], r["commands_per_s"], r["cpu_s_per_million"], r["peak_rss_mib"], r["load_avg"],
            "%.1f%% of the rate, %s" % (100 * r["replay_of_loop"], "%.2fx the CPU" % r["replay_cpu_over_loop"]
                                         if r["replay_cpu_over_loop"] != "" else "no CPU ratio")
            if r.get("replay_of_loop") else ""))
    return rows


CPU_FIELDS = ["pair", "run", "build", "commands", "of", "seconds", "commands_per_s", "cpu_s_per_million",
              "first_to_last_s", "first_to_last_commands", "first_to_last_per_s", "cpu_s_per_million_first_to_last",
              "peak_rss_mib", "store_writes_per_1000", "flushes", "replay_per_s", "replay_cpu_s_per_million",
              "run_of_replay", "worker_cpu_pct", "store_cpu_pct", "broker_cpu_pct", "load_avg", "bounded"]


def cpu_compare(b, a):
    """`run` of W1 (--cpu-count commands, 40 assignments) into the store, --pairs times; with --cpu-baseline,
    the current build against that revision's, the order flipped every pair; before each run, `replay --output /dev/null` of the same
    topic by the same build. The runs poll the committed offsets every 0.1 s, so the CPU from the first
    commit to the last is measured within about that."""
    old = b.build_baseline(a.cpu_baseline, "cpu-baseline") if a.cpu_baseline else None
    n = a.cpu_count
    path = b.gen("w1-%d" % n, "--count", str(n), "--assignments", "40", "--students", "30", "--order", "time")
    t = b.topic("cpu-w1", path)
    log("bench: --cpu, baseline %s, load average at start %.1f" % (a.cpu_baseline or "none", loadavg()))
    builds = (("current", None),) + ((("baseline", old),) if old else ())
    rows = []
    for i in range(1, a.pairs + 1):
        for name, binary in builds if i % 2 else builds[::-1]:
            rep = replay_read(b, "W1-%s-replay-%d" % (name, i), t, binary=binary)
            load0 = loadavg()
            r = b.run("W1-%s-run-%d" % (name, i), t, a.run_set, a.ours_seconds, binary=binary, poll_s=0.1,
                      probe=lambda: stack_cpu(b))
            cpu_shares(r, *r.pop("probe"))
            r.update({"pair": i, "build": "current" if binary is None else a.cpu_baseline,
                      "replay_per_s": rep["commands_per_s"], "replay_cpu_s_per_million": rep["cpu_s_per_million"],
                      "run_of_replay": round(r["commands_per_s"] / rep["commands_per_s"], 3),
                      "load_avg": "%.1f-%.1f" % (load0, loadavg())})
            rows.append(r)
    write_csv(os.path.join(a.out, dated(a, "cpu.csv")), rows, CPU_FIELDS)
    prof = []
    if not a.no_profile:
        for name, binary in builds:
            data = os.path.join(b.work, "cpu-%s.perf.data" % name)
            b.run("W1-%s-run-under-perf" % name, t, [], a.ours_seconds, binary=binary, poll_s=0.1, perf=data)
            pr, text = perf_split(data, "run (%s)" % ("current" if binary is None else a.cpu_baseline))
            prof += pr
            print(text)
        write_csv(os.path.join(a.out, dated(a, "cpu-profile.csv")), prof, PROFILE_FIELDS)
    if a.callgrind:
        cn = a.callgrind_count
        cpath = b.gen("w1-%d" % cn, "--count", str(cn), "--assignments", "40", "--students", "30", "--order", "time")
        ct = b.topic("cpu-callgrind", cpath)
        ins = []
        for name, binary in builds:
            prefix = os.path.join(b.work, "cpu-%s.callgrind" % name)
            b.run("W1-%s-run-under-callgrind" % name, ct, [], a.ours_seconds, binary=binary,
                  wrap=callgrind_wrap(prefix))
            cr, text = callgrind_split(prefix, "run (%s)" % ("current" if binary is None else a.cpu_baseline), cn)
            ins += cr
            print(text)
        write_csv(os.path.join(a.out, dated(a, "cpu-instructions.csv")), ins, CALLGRIND_FIELDS)
    print("| pair | build | run: commands/s | CPU s per million (whole run) | CPU s per million (first to last "
          "commit) | replay: commands/s | run / replay | worker / store / broker CPU, % of a core |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print("| %s | %s | %s | %s | %s | %s | %s | %s / %s / %s |" % (
            r["pair"], r["build"], r["commands_per_s"], r["cpu_s_per_million"],
            r.get("cpu_s_per_million_first_to_last", ""), r["replay_per_s"], r["run_of_replay"], r["worker_cpu_pct"],
            r["store_cpu_pct"], r["broker_cpu_pct"]))
    for i in range(1, a.pairs + 1) if old else ():
        cur = next(r for r in rows if r["pair"] == i and r["build"] == "current")
        base = next(r for r in rows if r["pair"] == i and r["build"] != "current")
        k = "cpu_s_per_million_first_to_last"
        print("pair %d: CPU per million, baseline / current: %.2fx whole run, %s first to last commit; run/replay "
              "%.3f (baseline) against %.3f (current)" % (
                  i, base["cpu_s_per_million"] / cur["cpu_s_per_million"],
                  "%.2fx" % (base[k] / cur[k]) if k in base and k in cur else "-", base["run_of_replay"],
                  cur["run_of_replay"]))
    return rows
