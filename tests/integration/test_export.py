#!/usr/bin/env python3
"""`aggregator export` and the committed:GROUP / offsets: bounds (docs/CLI.md), on the real broker.

- export --from committed:GROUP copies exactly the values after GROUP's committed offsets, byte for byte,
  one per line, but the one value holding a newline, which it reports (topic, partition, offset) and counts.
- replay --input of the export gives the documents of replay from the topics over the same range, the same
  reject count, and the reject codes that decoding the range's values gives; verify --input of it reports
  what verify over the range reports (a document deleted from the store: the same `missing` line).
- Reading committed:GROUP neither moves nor joins GROUP: its committed offsets, its state and its members
  are the same after an export, and a live member of it sees no rebalance.
- offsets:P=O reads partition P from O and the others whole; a bound past the end or below the log start is
  clamped (a committed offset below it too); a group with
  no committed offset, or a partition that does not exist, is exit 1 naming it.
- With log.format=json the summary is a JSON log object.
- The output is whole or absent: a failed or interrupted (SIGINT) export leaves an existing file as it was and
  no temporary file; a successful one replaces it; "-" is standard output, /dev/null stays a device.
"""
import collections
import json
import os
import re
import signal
import subprocess

import harness as h

LIMIT = 65536  # limits.max_command_bytes' default


def cmd(s, *args, sets=(), group="unused"):
    return [h.AGGREGATOR, *args, *s.settings(group, list(sets))]


def run_rc(argv):
    r = subprocess.run(argv, capture_output=True)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")


def export(s, out, *bounds, text=False):
    rc, _, err = run_rc(cmd(s, "export", "--output", out, *bounds, sets=[("log.format", "text")] if text else []))
    assert rc == 0, f"export exited {rc}: {err[-2000:]}"
    if text:
        m = re.search(r"^export: read=(\d+) exported=(\d+) skipped_newline=(\d+) seconds=[\d.]+$", err, re.M)
        assert m, f"no text summary: {err[-2000:]}"
        return dict(zip(["read", "exported", "skipped_newline"], map(int, m.groups()))), err
    objs = [json.loads(l) for l in err.splitlines() if l.startswith("{")]
    summary = [o for o in objs if o.get("msg") == "export: summary"]
    assert len(summary) == 1, f"no JSON summary: {err[-2000:]}"
    return summary[0], err


def replay_summary(err):
    m = re.search(r"replay: read=(\d+) applied=(\d+) stale=(\d+) rejected=(\d+) aggregates=(\d+)", err)
    assert m, err[-2000:]
    return dict(zip(["read", "applied", "stale", "rejected", "aggregates"], map(int, m.groups())))


def verify_report(s, *args):
    rc, out, err = run_rc(cmd(s, "verify", *args, sets=[("log.format", "text")]))
    assert rc in (0, 3), f"verify exited {rc}: {err[-2000:]}"
    m = re.search(r"verify: read=\d+ rejected=(\d+) documents=(\d+) drifted=(\d+) missing=(\d+) store_behind=(\d+) "
                  r"differs=(\d+) store_ahead=(\d+)", err)
    assert m, err[-2000:]
    return rc, sorted(out.decode().splitlines()), m.groups()


def group_state(s, g):
    return h.run([h.tool("kafka_tool"), "group", h.BROKERS, s.group(g)])


def rebalances(s, w):
    return len(s.log_events(w, "partitions assigned")) + len(s.log_events(w, "partitions revoked"))


def scenario(s):
    # Part A: stored and committed by group "live", which then stops.
    a = s.generate("--seed", "91", "--count", "3000", "--assignments", "20", "--students", "20",
                   "--invalid-rate", "0.02", "--duplicate-rate", "0.05", "--order", "shuffle")
    s.produce(a)
    w = s.start_worker("live")
    s.wait_committed("live", alive=[w])
    s.stop_worker(w)
    committed = s.committed("live")

    # Part B: new commands and invalid ones, a duplicate of a valid one with a newline in its JSON whitespace
    # (so that the range's documents do not depend on it), and one valid command past the size limit.
    b_lines = [l.encode() for l in h.renamed_commands(
        ["--seed", "92", "--count", "3000", "--assignments", "20", "--students", "20", "--invalid-rate", "0",
         "--duplicate-rate", "0.05", "--order", "shuffle"], "b-")]
    # Invalid commands of every kind gen_commands makes: the lines that replay rejects of another stream.
    raw = s.generate("--seed", "93", "--count", "3000", "--assignments", "20", "--students", "20",
                     "--invalid-rate", "0.1")
    rej = s.path("raw-rejects.jsonl")
    subprocess.run([h.AGGREGATOR, "replay", "--input", raw, "--output", "/dev/null", "--rejects", rej],
                   check=True, capture_output=True)
    bad_lines = {json.loads(l)["line"] for l in open(rej)}
    with open(raw, "rb") as f:
        b_lines += [l for n, l in enumerate(f, 1) if n in bad_lines]
    assert len(bad_lines) > 100
    valid = [l.decode() for l in b_lines if l.startswith(b'{"id":"b-')]
    newline_value = ("{\n" + valid[0][1:].rstrip("\n")).encode()
    big = json.loads(valid[1])
    big["id"] = "b-too-large"
    too_large = ("{" + " " * LIMIT + json.dumps(big)[1:] + "\n").encode()
    part_b = s.path("b.jsonl")
    with open(part_b, "wb") as f:
        f.write(b"".join(b_lines) + too_large)
    s.produce(part_b)
    hexf = s.path("newline.hex")
    with open(hexf, "w") as f:
        f.write(newline_value.hex() + "\n")
    h.run([h.tool("kafka_tool"), "produce-hex", h.BROKERS, s.topic, hexf])

    # What the range holds: every message at or after the committed offsets.
    msgs = [m for m in s.topic_messages() if m["offset"] >= max(committed.get(m["partition"], 0), 0)]
    values = [bytes.fromhex(m["value_hex"]) for m in msgs]
    assert len(values) == len(b_lines) + 2
    where = [m for m in msgs if bytes.fromhex(m["value_hex"]) == newline_value]
    assert len(where) == 1

    # The export, while nobody is a member of "live": its offsets and state do not change.
    before = group_state(s, "live")
    exp = s.path("export.jsonl")
    st, err = export(s, exp, "--from", f"committed:{s.group('live')}")
    assert s.committed("live") == committed
    assert group_state(s, "live") == before, (before, group_state(s, "live"))
    assert (st["read"], st["exported"], st["skipped_newline"]) == (len(values), len(values) - 1, 1), st
    logged = [json.loads(l) for l in err.splitlines() if l.startswith("{")]
    reports = [o for o in logged if "holds a newline" in o["msg"]]
    assert [(r["topic"], r["partition"], r["offset"]) for r in reports] == \
        [(s.topic, where[0]["partition"], where[0]["offset"])], reports
    got = open(exp, "rb").read()
    assert got.endswith(b"\n")
    want = sorted(v for v in values if v != newline_value)
    assert sorted(got[:-1].split(b"\n")) == want, "the export is not the range's values byte for byte"

    # replay --input of the export == replay of the topics over the same range.
    out_a, rej_a, out_b = s.path("a.jsonl"), s.path("rejects.jsonl"), s.path("b-out.jsonl")
    rc, _, err_a = run_rc([h.AGGREGATOR, "replay", "--set", "log.format=text", "--input", exp, "--output", out_a,
                            "--rejects", rej_a])
    assert rc == 0, err_a
    rc, _, err_b = run_rc(cmd(s, "replay", "--from", f"committed:{s.group('live')}", "--output", out_b,
                            sets=[("log.format", "text")]))
    assert rc == 0, err_b
    ra, rb = replay_summary(err_a), replay_summary(err_b)
    assert h.load_docs(out_a) == h.load_docs(out_b)
    assert ra["rejected"] == rb["rejected"] > 0 and ra["aggregates"] == rb["aggregates"], (ra, rb)
    assert rb["read"] == ra["read"] + 1, (ra, rb)  # the value with a newline
    # The reject codes are those of decoding the range's values one by one.
    direct = s.path("direct.jsonl")
    with open(direct, "wb") as f:
        f.writelines(v + b"\n" for v in values if b"\n" not in v)
    rej_d = s.path("direct-rejects.jsonl")
    subprocess.run([h.AGGREGATOR, "replay", "--input", direct, "--output", "/dev/null", "--rejects", rej_d],
                   check=True, capture_output=True)
    codes = collections.Counter(json.loads(l)["code"] for l in open(rej_d))
    got_codes = collections.Counter(json.loads(l)["code"] for l in open(rej_a))
    assert got_codes == codes and codes["too_large"] == 1, (got_codes, codes)

    # verify --input of the export reports what verify over the range reports. The store holds everything
    # (group "watch" writes it); one document of the range is then deleted from it.
    w = s.start_worker("watch")
    s.wait_committed("watch", alive=[w])
    victim = json.loads(valid[2])
    h.run([h.tool("store_tool"), "delete", h.MONGO, s.db, h.COLLECTION,
           f"{victim['tenant']}/{victim['assignment']}"])
    watch_committed, watch_before, seen = s.committed("watch"), group_state(s, "watch"), rebalances(s, w)
    v_file = verify_report(s, "--input", exp)
    v_topics = verify_report(s, "--from", f"committed:{s.group('live')}")
    assert v_file == v_topics and v_file[0] == 3 and any('"missing"' in l for l in v_file[1]), (v_file, v_topics)

    # committed:GROUP of a group with a live member: the member sees no rebalance, the group is unchanged.
    st, _ = export(s, s.path("export-watch.jsonl"), "--from", f"committed:{s.group('live')}",
                   "--until", f"committed:{s.group('watch')}", text=True)
    assert st["read"] == len(values), st
    s.assert_alive(w)
    assert rebalances(s, w) == seen, "the worker of group watch saw a rebalance during the export"
    after = group_state(s, "watch")
    assert after == watch_before and "member " in watch_before, (watch_before, after)
    assert s.committed("watch") == watch_committed
    s.stop_worker(w)

    # offsets: P=O reads partition P from O, every other partition whole; past the end is clamped.
    ends = s.end_offsets()
    total = sum(ends.values())
    st, _ = export(s, s.path("p.jsonl"), "--from", "offsets:0=2", text=True)
    assert st["read"] == total - 2, (st, ends)
    st, _ = export(s, s.path("p.jsonl"), "--from", f"offsets:{s.topic}:1=999999999", "--until", "offsets:0=3",
                   text=True)
    assert st["read"] == 3 + ends[2], (st, ends)

    # Errors: a group with no committed offset, a partition that does not exist (exit 1, named); a malformed
    # bound (exit 2 before anything is contacted); no --output (exit 2).
    # The output is whole or absent: a failed export leaves an existing file as it was and no temporary file.
    keep = s.path("x")
    with open(keep, "w") as f:
        f.write("earlier\n")
    rc, _, err = run_rc(cmd(s, "export", "--output", keep, "--from", "committed:no-such-group-" + s.tag))
    assert rc == 1 and "no-such-group-" + s.tag in err and "no committed offset" in err, (rc, err)
    assert open(keep).read() == "earlier\n"
    assert not [n for n in os.listdir(s.dir) if ".tmp-" in n], os.listdir(s.dir)
    # So does an interrupted one: SIGINT while it waits for a broker that does not answer (once its temporary
    # file exists, it was created before anything is contacted).
    errf = open(s.path("interrupted.err"), "w+")
    p = subprocess.Popen([h.AGGREGATOR, "export", "--set", "kafka.brokers=127.0.0.1:1", "--set", "log.format=text",
                          "--output", keep], stderr=errf)
    s.procs.append(p)
    h.wait_until(lambda: [n for n in os.listdir(s.dir) if ".tmp-" in n] or p.poll() is not None, 30,
                 "the export created no temporary file")
    p.send_signal(signal.SIGINT)
    assert p.wait(60) == 1
    errf.seek(0)
    err = errf.read()
    assert "export: interrupted; the output is left as it was" in err and f"file={keep}" in err, err
    assert open(keep).read() == "earlier\n"
    assert not [n for n in os.listdir(s.dir) if ".tmp-" in n], os.listdir(s.dir)
    # A successful one replaces it; "-" is standard output; /dev/null stays a device.
    rc, out, err = run_rc(cmd(s, "export", "--output", "-", "--from", f"committed:{s.group('live')}"))
    assert rc == 0 and sorted(out[:-1].split(b"\n")) == want, err
    st, _ = export(s, keep, "--from", f"committed:{s.group('live')}")
    assert sorted(open(keep, "rb").read()[:-1].split(b"\n")) == want
    assert not [n for n in os.listdir(s.dir) if ".tmp-" in n], os.listdir(s.dir)
    st, _ = export(s, "/dev/null", "--from", f"committed:{s.group('live')}")
    assert st["exported"] == len(want) and os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    rc, _, err = run_rc(cmd(s, "export", "--output", s.path("x"), "--from", "offsets:7=1"))
    assert rc == 1 and "no configured topic has that partition" in err and '"partition":7' in err, (rc, err)
    for bad in ("committed:", "offsets:0=x", "offsets:0=1,0=2", "yesterday"):
        rc, _, err = run_rc([h.AGGREGATOR, "export", "--set", "kafka.brokers=127.0.0.1:1", "--output", s.path("x"),
                             "--from", bad])
        assert rc == 2, (bad, rc, err)
        for c in ("replay", "verify"):
            rc, _, err = run_rc([h.AGGREGATOR, c, "--set", "kafka.brokers=127.0.0.1:1", "--until", bad])
            assert rc == 2, (c, bad, rc, err)
    rc, _, err = run_rc(cmd(s, "export"))
    assert rc == 2 and "--output" in err, (rc, err)

    # Below the log start is clamped too: the group's committed offset of partition 0, and offsets:0=0, once
    # the records before committed + 5 are deleted (what the retention does to an uncommitted backlog).
    start0 = committed[0] + 5
    h.run([h.tool("kafka_tool"), "delete-records", h.BROKERS, s.topic, "0", str(start0)])
    st, _ = export(s, s.path("p.jsonl"), "--from", "offsets:0=0", "--until", "offsets:1=0,2=0", text=True)
    assert st["read"] == ends[0] - start0, (st, ends, start0)
    st, _ = export(s, s.path("p.jsonl"), "--from", f"committed:{s.group('live')}", text=True)
    assert st["read"] == len(values) - 5, (st, len(values))

if __name__ == "__main__":
    h.main(scenario, "export", partitions=3)
