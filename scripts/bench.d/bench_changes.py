"""scripts/bench --changes: what change events cost `aggregator run`. The same backlog run three ways side by
side (no events; events with the document; events ids-only), the latency from a command's append to the
first event that holds its effect, and with --callgrind the instructions per command with and without events."""
import ctypes
import ctypes.util
import json
import os
import re
import subprocess

from bench_ceiling import CALLGRIND_FIELDS, callgrind_split, callgrind_wrap
from bench_lib import loadavg, log, write_csv

VARIANTS = (("none", []), ("docs", ["changes.include_document=true"]), ("ids", ["changes.include_document=false"]))

CHANGES_FIELDS = ["round", "workload", "variant", "run", "commands", "of", "seconds", "commands_per_s",
                  "cpu_s_per_million", "cpu_s_per_million_first_to_last", "peak_rss_mib", "store_writes_per_1000",
                  "events_per_1000", "events_per_write", "flag", "rate_of_none", "cpu_over_none", "latency_p50_s",
                  "latency_p99_s", "load_avg", "bounded"]
LATENCY_FIELDS = ["run", "rate", "commands", "sampled", "matched", "negative", "event_p50_s", "event_p99_s",
                  "event_max_s", "durable_p50_s", "durable_p99_s", "events", "events_per_write", "flag"]


def parse_counts(text, rounds):
    """"40x1000000x4,2000x200000" -> [(40, 1000000, 4), (2000, 200000, rounds)]: assignments, commands and
    the workload's rounds (rounds when not given)."""
    out = []
    for part in filter(None, text.split(",")):
        m = re.fullmatch(r"(\d+)x(\d+)(?:x(\d+))?", part.strip())
        if not m or m.group(3) == "0":
            raise SystemExit("bench: --changes-counts takes ASSIGNMENTSxCOMMANDS[xROUNDS],..., not %r" % part)
        out.append((int(m.group(1)), int(m.group(2)), int(m.group(3) or rounds)))
    return out


# --- a topic read with its timestamps (librdkafka through ctypes: kafka_tool dump has no timestamps) ---

class _Msg(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("rkt", ctypes.c_void_p), ("partition", ctypes.c_int32),
                ("payload", ctypes.c_void_p), ("len", ctypes.c_size_t), ("key", ctypes.c_void_p),
                ("key_len", ctypes.c_size_t), ("offset", ctypes.c_int64), ("_private", ctypes.c_void_p)]


def read_topic(brokers, topic, partitions, keep):
    """Every message of topic up to its end offsets as (partition, offset, timestamp ms, value or None):
    keep(partition, offset) says whose value is copied (the others cost a poll and a timestamp)."""
    rk_lib = ctypes.CDLL(ctypes.util.find_library("rdkafka") or "librdkafka.so.1")
    rk_lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    rk_lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.c_size_t]
    rk_lib.rd_kafka_new.restype = ctypes.c_void_p
    rk_lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    rk_lib.rd_kafka_poll_set_consumer.argtypes = [ctypes.c_void_p]
    rk_lib.rd_kafka_query_watermark_offsets.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32,
                                                        ctypes.POINTER(ctypes.c_int64),
                                                        ctypes.POINTER(ctypes.c_int64), ctypes.c_int]
    rk_lib.rd_kafka_topic_partition_list_new.restype = ctypes.c_void_p
    rk_lib.rd_kafka_topic_partition_list_add.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32]
    rk_lib.rd_kafka_topic_partition_list_add.restype = ctypes.c_void_p
    rk_lib.rd_kafka_topic_partition_list_set_offset.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32,
                                                                ctypes.c_int64]
    rk_lib.rd_kafka_topic_partition_list_destroy.argtypes = [ctypes.c_void_p]
    rk_lib.rd_kafka_assign.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    rk_lib.rd_kafka_consumer_poll.restype = ctypes.POINTER(_Msg)
    rk_lib.rd_kafka_consumer_poll.argtypes = [ctypes.c_void_p, ctypes.c_int]
    rk_lib.rd_kafka_message_timestamp.restype = ctypes.c_int64
    rk_lib.rd_kafka_message_timestamp.argtypes = [ctypes.POINTER(_Msg), ctypes.c_void_p]
    rk_lib.rd_kafka_message_destroy.argtypes = [ctypes.POINTER(_Msg)]
    rk_lib.rd_kafka_consumer_close.argtypes = [ctypes.c_void_p]
    rk_lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    err = ctypes.create_string_buffer(512)
    conf = rk_lib.rd_kafka_conf_new()
    for k, v in (("bootstrap.servers", brokers), ("group.id", "bench-changes-reader"),
                 ("enable.auto.commit", "false"), ("enable.partition.eof", "false")):
        if rk_lib.rd_kafka_conf_set(conf, k.encode(), v.encode(), err, 512) != 0:
            raise SystemExit("bench: librdkafka %s: %s" % (k, err.value.decode()))
    rk = rk_lib.rd_kafka_new(1, conf, err, 512)  # RD_KAFKA_CONSUMER
    if not rk:
        raise SystemExit("bench: librdkafka: %s" % err.value.decode())
    rk_lib.rd_kafka_poll_set_consumer(rk)
    t = topic.encode()
    ends, lst = {}, rk_lib.rd_kafka_topic_partition_list_new(partitions)
    for p in range(partitions):
        lo, hi = ctypes.c_int64(), ctypes.c_int64()
        if rk_lib.rd_kafka_query_watermark_offsets(rk, t, p, ctypes.byref(lo), ctypes.byref(hi), 10000):
            raise SystemExit("bench: no watermarks for %s [%d]" % (topic, p))
        if hi.value > lo.value:
            ends[p] = hi.value
            rk_lib.rd_kafka_topic_partition_list_add(lst, t, p)
            rk_lib.rd_kafka_topic_partition_list_set_offset(lst, t, p, -2)  # RD_KAFKA_OFFSET_BEGINNING
    rk_lib.rd_kafka_assign(rk, lst)
    rk_lib.rd_kafka_topic_partition_list_destroy(lst)
    out = []
    while ends:
        mp = rk_lib.rd_kafka_consumer_poll(rk, 10000)
        if not mp:
            raise SystemExit("bench: %s: nothing read for 10 s before its end offsets" % topic)
        m = mp.contents
        if m.err == 0:
            p, o = m.partition, m.offset
            val = ctypes.string_at(m.payload, m.len) if keep(p, o) else None
            out.append((p, o, rk_lib.rd_kafka_message_timestamp(mp, None), val))
            if p in ends and o + 1 >= ends[p]:
                del ends[p]
        elif m.err != -191:  # RD_KAFKA_RESP_ERR__PARTITION_EOF
            raise SystemExit("bench: reading %s: error %d" % (topic, m.err))
        rk_lib.rd_kafka_message_destroy(mp)
    rk_lib.rd_kafka_consumer_close(rk)
    rk_lib.rd_kafka_destroy(rk)
    return out


def slot_of(cmd):
    """The document path of the slot a command writes (docs/DOCUMENT.md, slots and stamps)."""
    t = cmd["type"]
    if t.startswith("assignment."):
        return ("header",)
    s = "member" if t.startswith("roster.") else "submission" if t.startswith("submission.") else "grade"
    return ("students", cmd["student"], s)


def event_latency(b, cmd_topic, change_topic, sample_every):
    """For every sample_every-th command of each partition: the first event of its document (in the change
    topic's order) whose slot's stamp is at least the command's, and that event's timestamp less the
    command's. Returns (latencies in s, sampled, negative, events)."""
    cmds = read_topic(b.brokers, cmd_topic, 6, lambda p, o: o % sample_every == 0)
    events = read_topic(b.brokers, change_topic, 6, lambda p, o: True)
    by_key = {}
    for p, o, ts, val in sorted(events):
        ev = json.loads(val)
        by_key.setdefault(ev["_id"], []).append((ts, ev["document"]))
    lat, sampled, negative = [], 0, 0
    for p, o, ts, val in cmds:
        if val is None:
            continue
        sampled += 1
        try:
            cmd = json.loads(val)
        except ValueError:
            continue
        want = (int(cmd["version"]), cmd["id"].encode())
        for ets, doc in by_key.get("%s/%s" % (cmd["tenant"], cmd["assignment"]), ()):
            node = doc
            for k in slot_of(cmd):
                node = node.get(k) if isinstance(node, dict) else None
            if node and (int(node["v"]), str(node["c"]).encode()) >= want:
                if ets < ts:
                    negative += 1
                lat.append((ets - ts) / 1000.0)
                break
    return sorted(lat), sampled, negative, len(events)


def pct(v, q):
    if not v:
        return ""
    return round(v[min(len(v) - 1, int(q * len(v)))], 3)


# --- the runs ---------------------------------------------------------------------------------------------

def change_topic(b, label):
    t = "bench-%s-changes-%s" % (b.run_id, label)
    subprocess.run([b.tool("kafka_tool"), "create-topic", b.brokers, t, "6"], check=True)
    log("bench: topic %s" % t)
    return t


def one_run(b, a, label, topic, variant, sets, feed=None, wrap=()):
    """one_run_once, again under label-again if the worker stopped before the end (a signal from outside: on
    a shared machine a stray `kill` meets the bench's workers too)."""
    try:
        return one_run_once(b, a, label, topic, variant, sets, feed, wrap)
    except SystemExit as e:
        if "exited early (0)" not in str(e) or feed is not None:
            raise
        log("bench: %s; once more as %s-again" % (e, label))
        return one_run_once(b, a, label + "-again", topic, variant, sets, feed, wrap)


def one_run_once(b, a, label, topic, variant, sets, feed=None, wrap=()):
    """One `aggregator run` of topic with its own group, database and change topic (none for "none"); the
    row gets the writes the store acknowledged and the events on the change topic, per 1,000 commands."""
    ct = change_topic(b, label) if variant != "none" else None
    got = {}
    orig = b.metrics

    def metrics(port):  # the run's last scrape, taken where it is measured (before SIGTERM)
        got["m"] = orig(port)
        return got["m"]

    b.metrics = metrics
    load0 = loadavg()
    try:
        r = b.run(label, topic, (["changes.topic=" + ct] if ct else []) + sets, a.ours_seconds, feed=feed,
                  poll_s=0.1, wrap=wrap)
    finally:
        b.metrics = orig
    m = got.get("m", {})
    writes = int(m.get(("aggregator_store_writes_total", '{result="ok"}'), 0))
    events = b.offsets("end-offsets", b.brokers, ct) if ct else 0
    n = max(r["commands"], 1)
    r.update({"variant": variant, "store_writes_per_1000": round(writes / n * 1000, 3),
              "events_per_1000": round(events / n * 1000, 3), "load_avg": "%.1f-%.1f" % (load0, loadavg()),
              "change_topic": ct, "events": events, "writes": writes})
    if ct:
        r["events_per_write"] = round(events / writes, 4) if writes else ""
        r["flag"] = "" if writes and events == writes else "NOT one event per write (%d events, %d writes)" % (
            events, writes)
    return r


def changes(b, a):
    """--changes: the three variants of each workload in its rounds, the order flipped every round and rotated
    every second; then the latency runs at a fixed rate; then, with --callgrind, the instruction counts."""
    rows = []
    for j, (na, n, rounds) in enumerate(parse_counts(a.changes_counts, a.changes_rounds)):
        path = b.gen("w1-%dx%d" % (na, n), "--count", str(n), "--assignments", str(na), "--students", "30",
                     "--order", "time")
        t = b.topic("changes-a%d-%d" % (na, n), path)
        if j == 0:  # a stack just started (the broker's group coordinator loading) slows the first run
            one_run(b, a, "A%d-warm-up" % na, t, "docs", VARIANTS[1][1])
        for i in range(1, rounds + 1):
            # Flipped every round, rotated every second: n d i, i d n, d i n, n i d, ... (each variant in
            # each place over six rounds).
            k = ((i - 1) // 2) % 3
            order = VARIANTS[k:] + VARIANTS[:k]
            if i % 2 == 0:
                order = order[::-1]
            got = {}
            for variant, sets in order:
                r = one_run(b, a, "A%d-%s-%d" % (na, variant, i), t, variant, sets)
                r.update({"round": i, "workload": "%d x 30, %d" % (na, n)})
                got[variant] = r
                rows.append(r)
            base = got["none"]
            for r in got.values():
                r["rate_of_none"] = round(r["commands_per_s"] / base["commands_per_s"], 3)
                # A run shorter than the clock's tick (10 ms of CPU) may show none: then there is no ratio.
                r["cpu_over_none"] = (round(r["cpu_s_per_million"] / base["cpu_s_per_million"], 3)
                                      if base["cpu_s_per_million"] else "")
    if rows:  # a run of the latency or the instructions alone leaves the last changes.csv as it is
        write_csv(os.path.join(a.out, "changes.csv"), rows, CHANGES_FIELDS)
    print("| round | workload | variant | commands/s | of none | CPU s per million | of none | writes / 1k | "
          "events / 1k | events / write |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s %s |" % (
            r["round"], r["workload"], r["variant"], r["commands_per_s"], r["rate_of_none"], r["cpu_s_per_million"],
            r["cpu_over_none"], r["store_writes_per_1000"], r["events_per_1000"], r.get("events_per_write", ""),
            r.get("flag", "")))
    for r in rows:  # a run without faults sends exactly one event per write
        if r.get("flag"):
            print("FLAG %s: %s" % (r["run"], r["flag"]))
    if a.changes_latency_seconds > 0:
        latency(b, a, rows)
    if a.callgrind and a.changes_callgrind:
        instructions(b, a)
    return rows


def latency(b, a, rows):
    """A 40-assignment stream produced at each rate of --changes-rate (default half the rate with documents)
    for --changes-latency-seconds, run with documents: command append to its first event holding it."""
    docs = [r["commands_per_s"] for r in rows if r["variant"] == "docs" and r["workload"].startswith("40 ")]
    rates = [int(x) for x in a.changes_rate.split(",") if x] or ([round(sum(docs) / len(docs) / 2)] if docs else [])
    if not rates:
        raise SystemExit("bench: --changes without a 40-assignment workload needs --changes-rate")
    out = []
    for rate in rates:
        n = int(rate * a.changes_latency_seconds)
        path = b.gen("w1-40x%d" % n, "--count", str(n), "--assignments", "40", "--students", "30", "--order",
                     "time")
        label = "A40-docs-latency-at-%d-per-s" % rate
        t = b.topic("changes-latency-%d" % rate, path, produce=False)
        r = one_run(b, a, label, t, "docs", VARIANTS[1][1], feed=(path, n, rate))
        every = max(1, n // 6 // a.changes_samples)
        lat, sampled, negative, events = event_latency(b, t, r["change_topic"], every)
        row = {"run": label, "rate": rate, "commands": r["commands"], "sampled": sampled, "matched": len(lat),
               "negative": negative, "event_p50_s": pct(lat, 0.5), "event_p99_s": pct(lat, 0.99),
               "event_max_s": lat[-1] if lat else "", "durable_p50_s": r["latency_p50_s"],
               "durable_p99_s": r["latency_p99_s"], "events": events, "events_per_write": r.get("events_per_write"),
               "flag": r.get("flag", "")}
        out.append(row)
        print("command append to its event at %d commands/s (%d of %d sampled matched, %d negative): p50 %s s, "
              "p99 %s s, max %s s; command to durable (the worker's histogram): p50 %s s, p99 %s s" % (
                  rate, len(lat), sampled, negative, row["event_p50_s"], row["event_p99_s"], row["event_max_s"],
                  row["durable_p50_s"], row["durable_p99_s"]))
    write_csv(os.path.join(a.out, "changes_latency.csv"), out, LATENCY_FIELDS)


# The functions whose inclusive instructions are the events' own: the encoding, and our producer's calls
# (each inclusive of the librdkafka calls it makes on the worker's threads); TRACKED are reported apart
# (which slots a write changed: kept whether or not events are on).
ENCODE = ("model_change_event_json",)
PRODUCE = ("changes_produce",)
POLL = ("changes_poll", "changes_ticket", "changes_acked_seq", "changes_pending", "changes_bytes", "changes_failing",
        "changes_new", "changes_destroy")
# Exclusive: the functions of models/changes.c (they call each other, so inclusive counts would overlap).
TRACKED = ("model_changes_", "model_aggregate_wins", "sort_offsets", "is_normalized", "key_of_offset")


def inclusive(prefix, names, incl=True):
    """Instructions of the named functions (incl=False: exclusive, of the functions named by these prefixes)
    over every thread file of a callgrind run."""
    import glob
    tot = dict.fromkeys(names, 0)
    for f in sorted(glob.glob(prefix + "-*")):
        out = subprocess.run(["callgrind_annotate", "--inclusive=" + ("yes" if incl else "no"), "--threshold=100",
                              f], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*) \[(.*)\]$", line)
            if m:
                fn = m.group(2).rpartition(":")[2].split("'")[0]
                key = fn if incl else next((p for p in names if fn.startswith(p)), None)
                if key in tot:
                    tot[key] += int(m.group(1).replace(",", ""))
    return tot


def instructions(b, a):
    """`run` of each --changes-callgrind workload (W1, 30 students) under callgrind without events and with
    documents: instructions per command and per event, the extra split into the encoding, our producer's
    calls (produce; poll and the rest, with the librdkafka calls they make), librdkafka's own threads and
    the rest; and apart, the tracking of which slots a write changed (the writer's partial updates use it too,
    so it runs with or without events)."""
    rows = []
    for na, cn, _ in parse_counts(a.changes_callgrind, 1):
        path = b.gen("w1-%dx%d" % (na, cn), "--count", str(cn), "--assignments", str(na), "--students", "30",
                     "--order", "time")
        t = b.topic("changes-callgrind-a%d-%d" % (na, cn), path)
        tot = {}
        for variant, sets in VARIANTS[:2]:
            prefix = os.path.join(b.work, "changes-%s.callgrind" % variant)
            r = one_run(b, a, "A%d-%s-under-callgrind" % (na, variant), t, variant, sets,
                        wrap=callgrind_wrap(prefix))
            cr, text = callgrind_split(prefix, "run A%d (%s)" % (na, variant), cn)
            print(text)
            rows += cr
            kinds = [x for x in cr if x["level"] == "kind"]
            inc = inclusive(prefix, ENCODE + PRODUCE + POLL)
            inc.update(inclusive(prefix, TRACKED, incl=False))
            tot[variant] = {"total": sum(x["instructions"] for x in kinds),
                            "rdkafka_threads": sum(x["instructions"] for x in kinds
                                                   if x["thread"] == "librdkafka threads"),
                            "encode": sum(inc[f] for f in ENCODE), "produce": sum(inc[f] for f in PRODUCE),
                            "poll": sum(inc[f] for f in POLL), "tracked": sum(inc[f] for f in TRACKED),
                            "events": r["events"], "writes": r["writes"]}
        no, do = tot["none"], tot["docs"]
        extra = do["total"] - no["total"]
        split = {"encode": do["encode"], "produce": do["produce"], "poll": do["poll"],
                 "rdkafka_threads": do["rdkafka_threads"] - no["rdkafka_threads"]}
        split["rest"] = extra - sum(split.values())
        ev = max(do["events"], 1)
        for k, v in ([("total_none", no["total"]), ("total_docs", do["total"]), ("events_extra", extra)] +
                     list(split.items()) + [("tracked_none", no["tracked"]), ("tracked_docs", do["tracked"]),
                                            ("events", do["events"]), ("writes", do["writes"])]):
            rows.append({"process": "changes A%d" % na, "level": "summary", "thread": "", "kind": k, "dso": "",
                         "symbol": "per event %d" % round(v / ev) if k not in ("events", "writes") else "",
                         "instructions": v, "per_command": round(v / cn, 3 if k in ("events", "writes") else 0),
                         "pct": round(100 * v / no["total"], 1)})
        print("A%d: instructions per command over %d commands: %d without events, %d with documents (+%.1f%%; "
              "%d events, %d writes); the extra %d per command (%d per event): encoding %d, produce %d, poll and "
              "the rest of the producer %d, librdkafka threads %d, rest %d; which slots changed: %d / %d per "
              "command without / with events" % (
                  na, cn, no["total"] / cn, do["total"] / cn, 100 * extra / no["total"], do["events"],
                  do["writes"], extra / cn, extra / ev, split["encode"] / cn, split["produce"] / cn,
                  split["poll"] / cn, split["rdkafka_threads"] / cn, split["rest"] / cn, no["tracked"] / cn,
                  do["tracked"] / cn))
    write_csv(os.path.join(a.out, "changes_instructions.csv"), rows, CALLGRIND_FIELDS)
