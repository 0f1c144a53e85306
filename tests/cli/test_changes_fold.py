#!/usr/bin/python3
"""scripts/changes-fold and the event examples of docs/CHANGES.md, with no services:

- the examples are events as the page describes them: keys in their order, `changed` paths in their
  order, the document (when included) at the event's rev, no `document` key in the ids-only form;
- the fold keeps, per _id, the event with the greatest rev, whatever the order of the events and however
  many repeats (shuffles of a small set with duplicates give the same output byte for byte),
  an ids-only event included; its output is sorted by _id, one line each, each line as read;
- an empty input folds to nothing; a line that is not an event is refused with its file and line number,
  exit 1, and no output.

Environment: AGG_SOURCE_DIR (repository).
"""
import json
import os
import random
import re
import subprocess
import sys

SRC = os.environ.get("AGG_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FOLD = os.path.join(SRC, "scripts", "changes-fold")
PAGE = os.path.join(SRC, "docs", "CHANGES.md")
KEYS = ["_id", "tenant", "assignment", "rev", "updatedAt", "changed", "document"]
SLOTS = ["member", "submission", "grade"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL - " + what)


def fold(data, *args):
    return subprocess.run([FOLD, *args], input=data, capture_output=True, timeout=60)


def examples():
    """The ```json blocks of docs/CHANGES.md, each as one value (a laid-out block joined into one line)."""
    text = open(PAGE).read()
    return [" ".join(l.strip() for l in b.splitlines()) for b in re.findall(r"^```json\n(.*?)^```$", text, re.M | re.S)]


def changed_in_order(paths):
    """`header` first, then students in byte order of id, their slots member, submission, grade."""
    keys = []
    for p in paths:
        if p == "header":
            keys.append((0, b"", 0))
            continue
        m = re.fullmatch(r"students\.([A-Za-z0-9_-]{1,64})\.(member|submission|grade)", p)
        if not m:
            return False
        keys.append((1, m.group(1).encode(), SLOTS.index(m.group(2))))
    return keys == sorted(keys) and len(set(keys)) == len(keys)


def test_examples():
    ex = examples()
    check(len(ex) == 2, "docs/CHANGES.md: %d json examples, expected 2 (with and without the document)" % len(ex))
    events = [json.loads(e) for e in ex]
    full, ids_only = events[0], events[1]
    check(list(full) == KEYS, "the example's keys %s, expected %s" % (list(full), KEYS))
    check(list(ids_only) == KEYS[:-1], "the ids-only example's keys %s" % list(ids_only))
    for e in events:
        check(e["_id"] == "%s/%s" % (e["tenant"], e["assignment"]), "_id is tenant/assignment: %s" % e["_id"])
        check(changed_in_order(e["changed"]), "changed paths out of order: %s" % e["changed"])
        check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e["updatedAt"]), "updatedAt %s" % e["updatedAt"])
    d = full["document"]
    check(d["_id"] == full["_id"] and d["rev"] == full["rev"] and d["updatedAt"] == full["updatedAt"],
          "the document is not at the event's _id, rev and updatedAt")
    for p in full["changed"]:
        node = d
        for k in ("header",) if p == "header" else p.split("."):
            node = node.get(k) if isinstance(node, dict) else None
        check(isinstance(node, dict), "changed path %s is not in the document" % p)
    check({k: v for k, v in full.items() if k != "document"} == ids_only, "the two examples are not one write")
    # The examples fold: the one with the document (the first read) stays, at the same rev.
    r = fold(("\n".join(ex) + "\n").encode())
    check(r.returncode == 0 and r.stdout == (ex[0] + "\n").encode(),
          "fold of the two examples: %s %s" % (r.returncode, r.stdout[:200]))


def event(_id, rev, document=True, changed=("header",)):
    t, a = _id.split("/")
    e = {"_id": _id, "tenant": t, "assignment": a, "rev": rev, "updatedAt": "2026-09-01T10:00:%02d.000Z" % rev,
         "changed": list(changed)}
    if document:
        e["document"] = {"_id": _id, "tenant": t, "assignment": a, "rev": rev}
    return json.dumps(e, separators=(",", ":"))


def test_fold():
    # Two documents; "t1/b" has a re-announcement ("changed":[]) at its last rev, and its greatest rev is
    # an ids-only event; "t1/a" has a repeat of its greatest rev.
    a = [event("t1/a", 1), event("t1/a", 2), event("t1/a", 3), event("t1/a", 3)]
    b = [event("t1/b", 1), event("t1/b", 2, document=False)]
    lines = a + b
    want = (event("t1/a", 3) + "\n" + event("t1/b", 2, document=False) + "\n").encode()
    # Orders: as written, reversed, and 40 shuffles of a fixed seed (each greatest rev before and after
    # its smaller ones, its repeat anywhere).
    rng = random.Random(7)
    orders = [list(lines), lines[::-1]]
    for _ in range(40):
        orders.append(rng.sample(lines, len(lines)))
    for perm in orders:
        r = fold(("\n".join(perm) + "\n").encode())
        if r.returncode != 0 or r.stdout != want:
            check(False, "fold of %s:\n%s\nexpected\n%s" % (perm, r.stdout.decode(), want.decode()))
            break
    # The last line without its newline, and several files: the same.
    r = fold("\n".join(lines).encode())
    check(r.returncode == 0 and r.stdout == want, "fold without a final newline: %s" % r.stdout)
    # Equal revs keep the first read: a re-announcement after the write changes nothing.
    reann = event("t1/b", 2, document=False, changed=())
    r = fold((b[1] + "\n" + reann + "\n").encode())
    check(r.stdout == (b[1] + "\n").encode(), "equal rev: %s" % r.stdout)
    # Sorted by _id as bytes.
    ids = ["t1/b", "T1/a", "t1/a-2", "t1/a", "t1/A"]
    r = fold(("\n".join(event(i, 1) for i in ids) + "\n").encode())
    got = [json.loads(l)["_id"] for l in r.stdout.decode().splitlines()]
    check(got == sorted(ids, key=lambda s: s.encode()), "not sorted by _id: %s" % got)


def test_edges():
    r = fold(b"")
    check(r.returncode == 0 and r.stdout == b"" and r.stderr == b"", "empty input: %s %s" % (r.returncode, r.stderr))
    for bad, why in ((b"not json", "Expecting value"), (b"[1]", "not a JSON object"),
                     (b'{"_id":"t1/a"}', "no integer rev"), (b'{"_id":"t1/a","rev":true}', "no integer rev"),
                     (b'{"_id":5,"rev":1}', "no string _id"), (b"", "Expecting value")):
        r = fold((event("t1/a", 1) + "\n").encode() + bad + b"\n")
        err = r.stderr.decode()
        check(r.returncode == 1 and r.stdout == b"" and err.startswith("changes-fold: <stdin>:2: ") and why in err
              and len(err.splitlines()) == 1, "bad line %r: exit %s, stderr %r" % (bad, r.returncode, err))
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "changes-fold-test-%d.jsonl" % os.getpid())
    with open(path, "w") as f:
        f.write(event("t1/a", 1) + "\n{\n")
    try:
        r = fold(b"", path)
        check(r.returncode == 1 and r.stderr.decode().startswith("changes-fold: %s:2: " % path),
              "a bad line of a file: %r" % r.stderr)
    finally:
        os.unlink(path)


def main():
    for t in (test_examples, test_fold, test_edges):
        t()
    print("changes-fold: %s" % ("%d failure(s)" % len(failures) if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
