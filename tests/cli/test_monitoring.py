#!/usr/bin/python3
"""Checks the Prometheus alerting rules (docker/prometheus/alerts.yaml) and the
Grafana dashboard (docker/grafana/aggregator-dashboard.json) without a
Prometheus or a Grafana server:

- `promtool check rules` on the rules, and `promtool test rules` on
  docker/prometheus/alerts_test.yaml (each alert fires where it should, not
  before its `for:`, and nothing fires on a healthy fleet); every alert has a
  test that makes it fire, a `for:`, a severity, a summary, a description
  that names a section docs/OPERATIONS.md has, and a runbook_url to a section
  of its own under docs/OPERATIONS.md's "Alerts and what to do";
- the dashboard: JSON a current Grafana imports (schemaVersion, unique panel
  ids, a grid that fits), the data source a template variable used by every
  panel and query, every query parsed by promtool (as a recording rule, with
  the dashboard's variables replaced);
- every metric, label and label value the rules and the dashboard name is one
  a worker exports: the worker is started without any service (brokers and
  store on a closed port) and its /metrics read, as a scraper would;
  `promtool check metrics` lints that exposition too;
- the check itself fails on a misspelt metric, label, label value, template
  label or variable (mutated copies of both files).

A live worker's /metrics, with samples for every series, is checked the same
way by tests/integration/test_metrics_live.py.

Uses the Debian python3 with python3-yaml, and promtool from Debian's
prometheus package: scripts/bootstrap installs them.
Environment: AGG_SOURCE_DIR (repository), AGGREGATOR (built binary).
"""
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.request

import yaml

SRC = os.environ.get("AGG_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AGGREGATOR = os.environ.get("AGGREGATOR") or os.path.join(SRC, "build", "aggregator")
sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
import monitoring_refs as refs  # noqa: E402
from checklist import Fail, case, check, report  # noqa: E402,F401

PROM = os.path.join(SRC, "docker", "prometheus")
RULES = os.path.join(PROM, "alerts.yaml")
RULES_TEST = os.path.join(PROM, "alerts_test.yaml")
DASHBOARD = os.path.join(SRC, "docker", "grafana", "aggregator-dashboard.json")
OPERATIONS = os.path.join(SRC, "docs", "OPERATIONS.md")
TMP = tempfile.mkdtemp(prefix="agg-monitoring-test-")

# Grafana 10.x and 11.x write 39; anything from 36 (data source references by uid) imports as is.
MIN_SCHEMA = 36

_metrics_text = None


def run(args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, **kw)


def promtool():
    p = shutil.which("promtool")
    check(p, "promtool not found (Debian package prometheus; scripts/bootstrap installs it)")
    return p


def rules_doc():
    with open(RULES) as f:
        return yaml.safe_load(f)


def alerts():
    return [r for g in rules_doc()["groups"] for r in g["rules"] if "alert" in r]


def dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def worker_metrics():
    """/metrics of a worker started with nothing to talk to: every family the
    worker renders, most at zero. Read once; the worker must then stop on
    SIGTERM with exit 0 (under ASan, that covers leaks on this path too)."""
    global _metrics_text
    if _metrics_text is not None:
        return _metrics_text
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGGREGATOR_")}
    env["MONGOC_DISABLE_SHM"] = "1"
    # Port 1 on the loopback: nothing listens, connections are refused at once,
    # and the worker keeps retrying in the background (an outage, not an error).
    p = subprocess.Popen([AGGREGATOR, "run", "--set", "kafka.brokers=127.0.0.1:1", "--set", "kafka.topics=t",
                          "--set", "kafka.group=monitoring-test", "--set", "store.uri=mongodb://127.0.0.1:1",
                          "--set", "metrics.listen=127.0.0.1:0", "--set", "log.format=json"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    lines, cond = [], threading.Condition()

    def drain():  # the worker logs every failed connection: keep its pipe empty
        for line in p.stderr:
            with cond:
                lines.append(line)
                cond.notify_all()
        with cond:
            lines.append(None)
            cond.notify_all()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()

    def wait_log(msg, timeout=30):
        with cond:
            ok = cond.wait_for(lambda: None in lines or any(l and msg in l for l in lines), timeout)
            hit = [l for l in lines if l and msg in l]
        check(ok and hit, "no log %r from the worker within %d s (exit %s): %s" % (msg, timeout, p.poll(),
                                                                                 "".join(l for l in lines if l)[-2000:]))
        return json.loads(hit[0])

    try:
        port = wait_log("metrics endpoint listening")["port"]
        # Past the point where the worker's own signal handling is in place,
        # so that SIGTERM meets its orderly stop: the consumer client exists
        # (librdkafka's lines about the closed port come from it) and waits
        # for a broker to check that the topics exist (docs/GUARANTEES.md); a
        # SIGTERM then ends that wait with exit 0.
        wait_log('"component":"rdkafka"')
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            check(r.status == 200, "/metrics answered %d" % r.status)
            text = r.read().decode()
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        reader.join(10)
    check(p.returncode == 0, "the worker exited %s on SIGTERM: %s" % (p.returncode,
                                                                  "".join(l for l in lines if l)[-2000:]))
    _metrics_text = text
    return text


# ---- the rules -------------------------------------------------------------------

def test_promtool_check_rules():
    r = run([promtool(), "check", "rules", RULES])
    check(r.returncode == 0, "promtool check rules: %s%s" % (r.stdout, r.stderr))


def test_promtool_test_rules():
    r = run([promtool(), "test", "rules", RULES_TEST], cwd=PROM)
    check(r.returncode == 0, "promtool test rules:\n%s%s" % (r.stdout, r.stderr))


def anchor(heading):
    """The anchor a Markdown renderer (GitHub's) gives a heading: lower case,
    punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def runbook_anchors():
    """The anchors of the subsections of docs/OPERATIONS.md's "Alerts and what to do"."""
    with open(OPERATIONS) as f:
        text = f.read()
    m = re.search(r"^## Alerts and what to do\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    check(m, 'docs/OPERATIONS.md has no section "Alerts and what to do"')
    return {anchor(h) for h in re.findall(r"^###\s+(.+?)\s*$", m.group(1), re.M)}


def test_rules_shape():
    with open(OPERATIONS) as f:
        sections = set(re.findall(r"^#+\s+(.+?)\s*$", f.read(), re.M))
    names = [a["alert"] for a in alerts()]
    check(len(names) == len(set(names)), "duplicate alert names: %s" % names)
    for want in ("up", "aggregator_ready", "aggregator_consumer_lag", "aggregator_rejects_total",
                 'result="error"', 'result="conflict"', "aggregator_flush_duration_seconds_bucket",
                 "aggregator_store_too_large_total", 'code="document_too_large"',
                 "aggregator_oldest_uncommitted_age_seconds", "aggregator:topic_retention_seconds"):
        check(any(want in a["expr"] for a in alerts()), "no alert on %s" % want)
    records = [r for g in rules_doc()["groups"] for r in g["rules"] if "record" in r]
    check([r["record"] for r in records] == ["aggregator:topic_retention_seconds"],
          "the one recorded series is the retention parameter: %s" % records)
    runbooks, anchors = {}, runbook_anchors()
    for a in alerts():
        n = a["alert"]
        check(re.fullmatch(r"Aggregator[A-Z]\w+", n), "%s: alert names start with Aggregator" % n)
        check(re.fullmatch(r"\d+[smh]", str(a.get("for", ""))), "%s: no `for:` (every blip would page)" % n)
        check((a.get("labels") or {}).get("severity") in ("warning", "critical"), "%s: severity" % n)
        ann = a.get("annotations") or {}
        check(ann.get("summary") and ann.get("description"), "%s: summary and description" % n)
        links = re.findall(r'docs/OPERATIONS\.md\s+"([^"]+)"', ann["description"])
        check(links, "%s: the description must name a docs/OPERATIONS.md section (\"...\")" % n)
        for s in links:
            check(s in sections, "%s: docs/OPERATIONS.md has no section %r" % (n, s))
        url = ann.get("runbook_url") or ""
        m = re.fullmatch(r"docs/OPERATIONS\.md#([\w-]+)", url)
        check(m, "%s: runbook_url %r is not docs/OPERATIONS.md#<anchor>" % (n, url))
        check(m.group(1) in anchors, "%s: runbook_url %s: no such subsection of \"Alerts and what to do\"" % (n, url))
        check(m.group(1) not in runbooks, "%s and %s share the runbook section %s" % (runbooks.get(m.group(1)), n,
                                                                                    url))
        runbooks[m.group(1)] = n


def test_rules_tests_cover_every_alert():
    with open(RULES_TEST) as f:
        t = yaml.safe_load(f)
    check(t["rule_files"] == ["alerts.yaml"], "alerts_test.yaml must test alerts.yaml")
    fired, quiet = set(), set()
    for group in t["tests"]:
        for a in group.get("alert_rule_test") or []:
            (fired if a.get("exp_alerts") else quiet).add(a["alertname"])
    names = {a["alert"] for a in alerts()}
    check(not names - fired, "alerts with no test that makes them fire: %s" % sorted(names - fired))
    check(not names - quiet, "alerts with no test that they stay quiet: %s" % sorted(names - quiet))
    check(not (fired | quiet) - names, "tests of unknown alerts: %s" % sorted((fired | quiet) - names))


# ---- the dashboard ---------------------------------------------------------------

def test_dashboard_shape():
    d = dashboard()
    check(isinstance(d.get("schemaVersion"), int) and d["schemaVersion"] >= MIN_SCHEMA,
          "schemaVersion %r < %d" % (d.get("schemaVersion"), MIN_SCHEMA))
    check(8 <= len(d.get("uid") or "") <= 40 and d.get("title"), "uid (8 to 40 characters) and title")
    check("id" not in d or d["id"] is None, "a dashboard to import carries no database id")
    check("__inputs" not in d, "the data source is a template variable, not an import input")
    tv = {v["name"]: v for v in d["templating"]["list"]}
    ds = [v for v in tv.values() if v["type"] == "datasource"]
    check(len(ds) == 1 and ds[0]["query"] == "prometheus", "one data source variable of type prometheus")
    dsref = {"type": "prometheus", "uid": "${%s}" % ds[0]["name"]}
    for v in tv.values():
        if v["type"] == "query":
            check(v.get("datasource") == dsref, "variable %s: datasource %r" % (v["name"], v.get("datasource")))
    ids, boxes = set(), []
    for p in refs._panels(d["panels"]):
        check(p.get("id") not in ids, "duplicate panel id %s" % p.get("id"))
        ids.add(p.get("id"))
        g = p["gridPos"]
        check(g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24 and g["h"] > 0, "%r: gridPos %s" % (p["title"], g))
        for (x, y, w, h, t) in boxes:
            check(g["x"] >= x + w or x >= g["x"] + g["w"] or g["y"] >= y + h or y >= g["y"] + g["h"],
                  "panels %r and %r overlap" % (t, p["title"]))
        boxes.append((g["x"], g["y"], g["w"], g["h"], p["title"]))
        if p["type"] == "row":
            continue
        check(p.get("datasource") == dsref, "%r: datasource %r, want %r" % (p["title"], p.get("datasource"), dsref))
        check(p.get("targets"), "%r: no query" % p["title"])
        refids = [t["refId"] for t in p["targets"]]
        check(len(refids) == len(set(refids)), "%r: duplicate refId" % p["title"])
        for t in p["targets"]:
            check(t.get("datasource") == dsref, "%r query %s: datasource %r" % (p["title"], t["refId"],
                                                                               t.get("datasource")))
            check(t.get("expr"), "%r query %s: no expr" % (p["title"], t["refId"]))
    # What the dashboard is for: each of these has a panel.
    exprs = " ".join(t["expr"] for p in refs._panels(d["panels"]) for t in p.get("targets") or [])
    for want in ('aggregator_commands_total', 'result="applied"', "aggregator_rejects_total",
                 "aggregator_consumer_lag", "histogram_quantile(0.99, sum by (le) (rate("
                 "aggregator_flush_duration_seconds_bucket", "aggregator_store_writes_total",
                 "aggregator_pending_bytes", "process_resident_memory_bytes", "aggregator_ready",
                 "aggregator_consumer_committed_lag", "aggregator_oldest_uncommitted_age_seconds",
                 "aggregator_store_retries_total", "aggregator_store_too_large_total", "aggregator_fetch_paused",
                 "aggregator_assigned_partitions", "aggregator_rebalances_total",
                 "aggregator_cached_aggregates_limit", "aggregator_cached_bytes_limit", 'code="document_too_large"'):
        check(want in exprs, "no panel queries %s" % want)
    check(any(p["type"] == "heatmap" for p in refs._panels(d["panels"])), "no flush duration heatmap")
    # The bound drawn beside pending bytes is each worker's own, from its
    # gauge: a value typed into the dashboard goes stale when a deployment
    # configures another.
    check(any({"aggregator_pending_bytes{", "aggregator_pending_bytes_limit{"} <= {
        m for t in p.get("targets") or [] for m in re.findall(r"aggregator_pending_bytes(?:_limit)?\{", t["expr"])}
        for p in refs._panels(d["panels"])), "no panel draws aggregator_pending_bytes beside its bound's gauge")
    check(not [v for v in tv.values() if v["type"] in ("textbox", "constant", "custom")],
          "a configured value is read from the workers' gauges, not typed into a variable")


def test_dashboard_queries_parse():
    """promtool parses every query, as the expression of a recording rule."""
    exprs = refs.dashboard_exprs(dashboard())
    rules = [{"record": "dashboard:q%d" % i, "expr": e.expr} for i, e in enumerate(exprs)]
    path = os.path.join(TMP, "dashboard-queries.yaml")
    with open(path, "w") as f:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
    r = run([promtool(), "check", "rules", path])
    check(r.returncode == 0, "promtool cannot parse a dashboard query: %s%s\n%s" % (
        r.stdout, r.stderr, "\n".join("q%d %s: %s" % (i, e.where, e.expr) for i, e in enumerate(exprs))))


# ---- names against the worker ------------------------------------------------------

def test_worker_exposition_lints():
    r = run([promtool(), "check", "metrics"], input=worker_metrics())
    check(r.returncode == 0, "promtool check metrics: %s%s" % (r.stdout, r.stderr))


def test_names_exported():
    series = refs.exposition(worker_metrics())
    exprs = refs.repo_exprs(SRC)
    check(len(exprs) >= 30, "only %d expressions found in the rules and the dashboard" % len(exprs))
    problems = refs.check(exprs, series, live=False)
    check(not problems, "\n  ".join(["names the worker does not export:"] + problems))
    used = set(refs.used_series(exprs)) - refs.SYNTHETIC
    check(len(used) >= 15, "suspiciously few metrics used: %s" % sorted(used))


def test_misspellings_are_caught():
    """The check above cannot pass by accident: each mutation must be reported."""
    text = worker_metrics()
    # A partition's lag, as a worker with an assignment renders it: without
    # a sample the lag series' labels are unknown here and only the live test
    # checks them; with one, the mutations of its labels must be caught.
    series = refs.exposition(text + 'aggregator_consumer_lag{topic="t",partition="0"} 5\n'
                             'aggregator_oldest_uncommitted_age_seconds{topic="t",partition="0"} 2\n')
    with open(RULES) as f:
        rules = f.read()
    d = dashboard()

    def rules_problems(old, new):
        check(old in rules, "mutation %r: not in alerts.yaml" % old)
        return refs.check(refs.rule_exprs(rules.replace(old, new)), series, live=False)

    def dash_problems(old, new):
        m = copy.deepcopy(d)
        hits = 0
        for p in refs._panels(m["panels"]):
            for t in p.get("targets") or []:
                for k in ("expr", "legendFormat"):
                    if old in t.get(k, ""):
                        t[k] = t[k].replace(old, new)
                        hits += 1
        for v in m["templating"]["list"]:
            if isinstance(v.get("query"), dict) and old in v["query"]["query"]:
                v["query"]["query"] = v["query"]["query"].replace(old, new)
                hits += 1
        check(hits, "mutation %r: not in the dashboard" % old)
        return refs.check(refs.dashboard_exprs(m), series, live=False)

    mutations = [
        (rules_problems, "aggregator_ready ==", "aggregator_redy ==", "aggregator_redy"),
        (rules_problems, "aggregator_flush_duration_seconds_bucket", "aggregator_flush_duration_second_bucket",
         "aggregator_flush_duration_second_bucket"),
        (rules_problems, '{result="error"}', '{result="eror"}', "eror"),
        (rules_problems, '{result="conflict"}', '{reslt="conflict"}', "reslt"),
        (rules_problems, "by (topic, partition)", "by (topic, partiton)", "partiton"),
        (rules_problems, "sum by (job, instance)", "sum by (job, instanse)", "instanse"),
        (rules_problems, "$labels.partition", "$labels.partiton", "partiton"),
        (rules_problems, "histogram_quantile(", "histogram_quantil(", "histogram_quantil"),
        (rules_problems, "(aggregator_store_too_large_total[7d])", "(aggregator_store_to_large_total[7d])",
         "aggregator_store_to_large_total"),
        (rules_problems, '{code="document_too_large"}[7d]', '{code="document_too_larg"}[7d]', "document_too_larg"),
        (rules_problems, "(aggregator_oldest_uncommitted_age_seconds) > 600",
         "(aggregator_oldest_uncommited_age_seconds) > 600", "aggregator_oldest_uncommited_age_seconds"),
        (rules_problems, "group_left () aggregator:topic_retention_seconds",
         "group_left () aggregator:topic_retention_second", "aggregator:topic_retention_second"),
        (rules_problems, "group_left () aggregator:topic_retention_seconds",
         'group_left () aggregator:topic_retention_seconds{topic="t"}', "topic"),
        (dash_problems, "aggregator_pending_bytes{", "aggregator_pending_byte{", "aggregator_pending_byte"),
        (dash_problems, "process_resident_memory_bytes", "process_resident_memory", "process_resident_memory"),
        (dash_problems, 'result="applied"', 'result="aplied"', "aplied"),
        (dash_problems, "{{result}}", "{{reslt}}", "reslt"),
        (dash_problems, "max by (topic, partition)", "max by (topic, partiton)", "partiton"),
        (dash_problems, "aggregator_pending_bytes_limit{", "aggregator_pending_byte_limit{",
         "aggregator_pending_byte_limit"),
        (dash_problems, "aggregator_oldest_uncommitted_age_seconds{", "aggregator_oldest_uncommited_age_seconds{",
         "aggregator_oldest_uncommited_age_seconds"),
        (dash_problems, "label_values(aggregator_build_info,", "label_values(aggregator_buildinfo,",
         "aggregator_buildinfo"),
    ]
    for fn, old, new, token in mutations:
        found = fn(old, new)
        check(any(token in p for p in found), "misspelling %r -> %r not reported (got %s)" % (old, new, found))


def main():
    if not os.access(AGGREGATOR, os.X_OK):
        print("FAIL - setup: %s is not an executable (set AGGREGATOR)" % AGGREGATOR)
        print("0 passed, 1 failed")
        return 1
    for fn in (test_promtool_check_rules, test_promtool_test_rules, test_rules_shape,
               test_rules_tests_cover_every_alert, test_dashboard_shape, test_dashboard_queries_parse,
               test_worker_exposition_lints, test_names_exported, test_misspellings_are_caught):
        case(fn)
    shutil.rmtree(TMP, ignore_errors=True)
    return report()


if __name__ == "__main__":
    sys.exit(main())
