#!/usr/bin/env python3
"""The commands the change-event docs give an operator, run as written against the local stack:

- docs/OPERATIONS.md, "AggregatorChangeEventsFailing": the check (`aggregator config check --connect` with
  the worker's configuration file, here one of the test's own at that path's place) exits 1 with one line
  naming changes.topic while the change topic does not exist, and 0 naming the change topic it reached
  once it exists (and the check never creates it);
- docs/CHANGES.md, "Reading the topic": `aggregator export` of the change topic piped to
  scripts/changes-fold gives one line per _id with the greatest rev, from events spread over the topic's
  partitions, repeated, out of order, some without the document.

The blocks run with bash from a directory holding the repository's config/ and scripts/, `aggregator` on
PATH, AGGREGATOR_KAFKA_BROKERS pointing config/backfill.ini at the local broker, and the names the docs use
(`assignment-changes`, /etc/aggregator/aggregator.ini) replaced by the test's own."""
import json
import os
import random
import subprocess
import tempfile

import harness as h
from test_runbooks import section, sh_blocks  # the same reading of a doc's sections and their sh blocks

OPERATIONS = os.path.join(h.SRC, "docs", "OPERATIONS.md")
CHANGES = os.path.join(h.SRC, "docs", "CHANGES.md")


def event(_id, rev, document):
    t, a = _id.split("/")
    e = {"_id": _id, "tenant": t, "assignment": a, "rev": rev,
         "updatedAt": "2026-09-01T10:%02d:00.000Z" % rev, "changed": ["students.s%d.grade" % rev]}
    if document:
        e["document"] = {"_id": _id, "tenant": t, "assignment": a, "rev": rev}
    return json.dumps(e, separators=(",", ":"))


def scenario(s):
    d = tempfile.mkdtemp(prefix="agg-changes-docs-", dir=s.dir)
    for name in ("config", "scripts"):
        os.symlink(os.path.join(h.SRC, name), os.path.join(d, name))
    bindir = os.path.join(d, "bin")
    os.makedirs(bindir)
    os.symlink(h.AGGREGATOR, os.path.join(bindir, "aggregator"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGGREGATOR_")}
    env.update(PATH=bindir + os.pathsep + os.environ["PATH"], AGGREGATOR_KAFKA_BROKERS=h.BROKERS)
    changes = f"{s.topic}-changes"

    def run_block(block, **subst):
        for old, new in subst.items():
            block = block.replace(old, new)
        return subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=d, env=env, capture_output=True,
                              text=True, timeout=180)

    # 1. The runbook's check, with the worker's configuration naming a change topic not created yet.
    check, = sh_blocks(section(open(OPERATIONS).read(), "### AggregatorChangeEventsFailing"))
    ini = os.path.join(d, "aggregator.ini")
    with open(ini, "w") as f:
        f.write(f"[kafka]\nbrokers = {h.BROKERS}\ntopics = {s.topic}\ngroup = {s.group('live')}\n"
                f"dlq_topic = {s.dlq}\n\n[store]\nuri = {h.MONGO}\ndatabase = {s.db}\n\n"
                f"[changes]\ntopic = {changes}\n")
    assert "/etc/aggregator/aggregator.ini" in check, check
    r = run_block(check, **{"/etc/aggregator/aggregator.ini": ini})
    lines = r.stderr.splitlines()
    assert r.returncode == 1 and r.stdout == "", f"exit {r.returncode}: {r.stdout} {r.stderr}"
    assert len(lines) == 1 and f"changes.topic '{changes}'" in lines[0] and "does not exist" in lines[0], r.stderr
    assert not h.topic_exists(changes), "the runbook's check created the change topic"
    h.log(f"runbook check, change topic missing: {lines[0]}")
    s.create_topic("changes", 3)
    r = run_block(check, **{"/etc/aggregator/aggregator.ini": ini})
    assert r.returncode == 0 and f"; change topic {changes}" in r.stdout, f"exit {r.returncode}: {r.stdout} {r.stderr}"

    # 2. Events on the change topic: 40 documents, revs 1..5 each (the greatest one of every fourth
    #    without the document), each produced once or twice, in shuffled order, over 3 partitions.
    rng = random.Random(11)
    ids = [f"t{i % 3}/a{i}" for i in range(40)]
    want = {}
    values = []
    for n, _id in enumerate(ids):
        top = rng.randint(1, 5)
        for rev in range(1, top + 1):
            line = event(_id, rev, document=not (rev == top and n % 4 == 0))
            values += [line] * rng.randint(1, 2)
        want[_id] = event(_id, top, document=n % 4 != 0)
    rng.shuffle(values)
    path = s.path("events.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(values) + "\n")
    s.produce(path, topic=changes)

    fold, = sh_blocks(section(open(CHANGES).read(), "## Reading the topic"))
    assert "assignment-changes" in fold and "scripts/changes-fold" in fold, fold
    r = run_block(fold, **{"assignment-changes": changes})
    assert r.returncode == 0, f"exit {r.returncode}:\n{fold}\n{r.stderr[-3000:]}"
    got = open(os.path.join(d, "latest.jsonl")).read().splitlines()
    assert got == [want[i] for i in sorted(want, key=lambda i: i.encode())], \
        f"fold of the change topic:\n{got[:5]}\nexpected\n{sorted(want.values())[:5]}"
    h.log(f"fold of {len(values)} events: {len(got)} documents at their greatest rev")


if __name__ == "__main__":
    h.main(scenario, "changes_docs", partitions=1)
