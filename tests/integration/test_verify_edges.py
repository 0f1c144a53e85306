#!/usr/bin/env python3
"""`aggregator verify` at its edges, against the local store (docs/CLI.md):

- an audit that compares no document (an empty file, a file of garbage, an empty range of the topics) exits 1
  with an error line that says so and no summary; with --allow-empty it exits 0 and its summary counts 0;
- interrupted (SIGINT, SIGTERM) once the store answered, while it reads its input: it says so, exits
  128 + the signal and prints neither a summary nor a report;
- its summary is a JSON log line with the counts as fields (log.format = json) and today's plain line with
  log.format = text, with the same counts; every stderr line is a JSON object in json format;
- replay --max-rejects from the topics, into --output (no file written) and into the store (exit 1).
"""
import json
import os
import re
import signal
import subprocess

import harness as h


def verify(s, *args, extra=()):
    cmd = [h.AGGREGATOR, "verify", *s.settings("unused", list(extra)), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def json_lines(err):
    out = []
    for l in err.splitlines():
        out.append(json.loads(l))  # every line: a JSON object
    return out


def scenario(s):
    gen = s.generate("--seed", "5", "--count", "2000", "--assignments", "10", "--students", "10",
                     "--invalid-rate", "0.01", "--duplicate-rate", "0", "--order", "shuffle")
    expected, rejects = s.expected(gen)
    h.run([h.AGGREGATOR, "replay", *s.settings("unused"), "--input", gen])

    # 1. Nothing compared: exit 1, said, no summary; --allow-empty: exit 0, a summary of zeros.
    garbage = s.path("garbage.jsonl")
    with open(garbage, "w") as f:
        f.write("not json\n{}\n[1]\n")
    for path, read, rejected in (("/dev/null", 0, 0), (garbage, 3, 3)):
        r = verify(s, "--input", path)
        assert r.returncode == 1, (path, r.returncode, r.stderr)
        errors = [e for e in json_lines(r.stderr) if e["level"] == "error"]
        assert len(errors) == 1 and errors[0]["msg"].startswith("verify: no document compared") \
            and errors[0]["read"] == read and errors[0]["rejected"] == rejected, (path, errors)
        assert "summary" not in r.stderr and r.stdout == "", (path, r.stderr, r.stdout)
        r = verify(s, "--input", path, "--allow-empty")
        assert r.returncode == 0, (path, r.returncode, r.stderr)
        sums = [e for e in json_lines(r.stderr) if e["msg"] == "verify: summary"]
        assert len(sums) == 1 and sums[0]["documents"] == 0 and sums[0]["read"] == read, (path, r.stderr)
    # an empty range of the topics (nothing produced yet)
    r = verify(s)
    assert r.returncode == 1 and "verify: no document compared" in r.stderr, (r.returncode, r.stderr)
    assert verify(s, "--allow-empty").returncode == 0

    # 2. The summary in each format, the same counts.
    r = verify(s, "--input", gen)
    assert r.returncode == 0, r.stderr
    sums = [e for e in json_lines(r.stderr) if e["msg"] == "verify: summary"]
    assert len(sums) == 1, r.stderr
    want = {"read": sum(1 for _ in open(gen, "rb")), "rejected": len(rejects), "documents": len(expected), "drifted": 0, "missing": 0,
            "store_behind": 0, "differs": 0, "store_ahead": 0}
    assert {k: sums[0][k] for k in want} == want and sums[0]["level"] == "info", sums[0]
    r = verify(s, "--input", gen, extra=[("log.format", "text")])
    assert r.returncode == 0, r.stderr
    line = "verify: " + " ".join(f"{k}={v}" for k, v in want.items())
    assert re.search("^" + re.escape(line) + r" seconds=[0-9]+\.[0-9]{3}$", r.stderr, re.M), r.stderr

    # 3. Interrupted while it reads standard input, the store having answered: 128 + the signal, said.
    for sig in (signal.SIGINT, signal.SIGTERM):
        errf = open(s.path(f"verify-{sig.name}.err"), "w")
        p = subprocess.Popen([h.AGGREGATOR, "verify", *s.settings("unused", [("log.level", "info")]),
                              "--input", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf)
        s.procs.append(p)
        with open(gen, "rb") as f:
            p.stdin.write(f.read())  # read, never ended: the rebuild waits for more
        p.stdin.flush()
        h.wait_until(lambda: "the store answered" in open(errf.name).read(), 60, "verify never reached the store")
        p.send_signal(sig)
        out, _ = p.communicate(timeout=60)
        err = open(errf.name).read()
        assert p.returncode == 128 + sig, (sig, p.returncode, err)
        lines = json_lines(err)
        assert any(e["msg"] == "verify: interrupted" and e["signal"] == sig for e in lines), err
        assert "summary" not in err and out == b"", (err, out)

    # 4. replay --max-rejects from the topics: into a file (not written), into the store (exit 1).
    s.produce(gen)
    out = s.path("out.jsonl")
    for threads in ("1", "3"):
        r = subprocess.run([h.AGGREGATOR, "replay", *s.settings("unused", [("replay.threads", threads)]),
                            "--output", out, "--max-rejects", str(len(rejects) - 1)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 1 and "more commands rejected than --max-rejects allows" in r.stderr, r.stderr
        assert not os.path.exists(out), f"threads={threads}: the output was written"
        r = subprocess.run([h.AGGREGATOR, "replay", *s.settings("unused", [("replay.threads", threads)]),
                            "--output", out, "--max-rejects", str(len(rejects))],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and os.path.exists(out), r.stderr
        os.unlink(out)
    r = subprocess.run([h.AGGREGATOR, "replay", *s.settings("unused"), "--max-rejects", "0"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "more commands rejected than --max-rejects allows" in r.stderr, r.stderr


if __name__ == "__main__":
    h.main(scenario, "verify_edges")
