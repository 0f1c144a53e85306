"""What the alerting rules and the Grafana dashboard in docker/ name, checked
against what a worker's /metrics exports.

Used by tests/cli/test_monitoring.py (a worker started without any service:
every family is there, but aggregator_consumer_lag has no sample without a
partition) and tests/integration/test_metrics_live.py (a worker that has
consumed: every series has samples). One copy of the rules, here.

Why a PromQL tokenizer and not a regular expression over the text: a name
misspelt in an expression (`aggregator_consumer_lagg`, `result="eror"`,
`by (partiton)`) is not an error to Prometheus or Grafana, it selects nothing,
and an alert on nothing never fires. So every identifier must be accounted
for: a PromQL function or keyword, a label in a grouping clause, or a metric
the worker exports (or `up`, which Prometheus writes, or a series a recording
rule of the same files defines). An identifier that is none of these is
reported, never skipped.
"""
import difflib
import json
import os
import re

import yaml

# PromQL functions (Prometheus 2.x) and aggregation operators.
FUNCTIONS = {
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh", "avg_over_time",
    "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time", "day_of_month",
    "day_of_week", "day_of_year", "days_in_month", "deg", "delta", "deriv", "exp", "floor", "group_over_time",
    "histogram_count", "histogram_fraction", "histogram_quantile", "histogram_sum", "holt_winters", "hour",
    "idelta", "increase", "irate", "label_join", "label_replace", "last_over_time", "ln", "log10", "log2",
    "max_over_time", "min_over_time", "minute", "month", "pi", "predict_linear", "present_over_time",
    "quantile_over_time", "rad", "rate", "resets", "round", "scalar", "sgn", "sin", "sinh", "sort", "sort_desc",
    "sqrt", "stddev_over_time", "stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp", "vector",
    "year", "start", "end",
}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
                "quantile"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"and", "or", "unless", "offset", "bool", "atan2", "inf", "nan"}

# Series Prometheus itself writes for every scrape target: not in /metrics.
SYNTHETIC = {"up"}
# Labels Prometheus attaches to every scraped series (the target's).
TARGET_LABELS = {"job", "instance"}

# Grafana's built-in variables, replaced by a value of the same kind for parsing.
GRAFANA_BUILTINS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "__interval_ms": "60000",
                    "__range_s": "3600", "__range_ms": "3600000"}

_TOKEN = re.compile(r"""
  (?P<ws>\s+)
| (?P<comment>\#[^\n]*)
| (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
| (?P<dur>(?:\d+(?:ms|[smhdwy]))+)(?![\w.])
| (?P<num>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
| (?P<id>[a-zA-Z_:][a-zA-Z0-9_:]*)
| (?P<var>\$\{?\w+\}?)
| (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){}\[\],:@])
""", re.X)


class Expr:
    """One PromQL expression and what it names."""

    def __init__(self, where, expr, label_templates=()):
        self.where = where  # "alerts.yaml: alert X", "dashboard: panel 'T' query A"
        self.expr = expr
        self.label_templates = set(label_templates)  # {{ $labels.x }} / {{x}} used on its output
        self.selectors = []  # [(metric, [(label, op, value)])]
        self.grouping = set()  # labels in by/without/on/ignoring/group_* clauses
        self.label_of = []  # [(metric, label)]: Grafana label_values(metric, label)
        self.problems = []  # syntax this tokenizer cannot account for
        self.record = None  # the series a recording rule defines with this expression


def _unquote(s):
    if s[0] == "`":
        return s[1:-1]
    return re.sub(r"\\(.)", r"\1", s[1:-1])


def tokenize(expr):
    toks, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            raise ValueError("cannot tokenize %r at %d" % (expr, pos))
        pos = m.end()
        if m.lastgroup not in ("ws", "comment"):
            toks.append((m.lastgroup, m.group()))
    return toks


def parse(e):
    """Fills e.selectors, e.grouping and e.problems from e.expr; returns e."""
    try:
        toks = tokenize(e.expr)
    except ValueError as err:
        e.problems.append(str(err))
        return e
    n, i = len(toks), 0

    def at(k):
        return toks[k][1] if k < n else None

    while i < n:
        kind, text = toks[i]
        if kind == "id":
            low = text.lower()
            if low in GROUPING:
                if at(i + 1) == "(":
                    i += 2
                    while i < n and at(i) != ")":
                        if toks[i][0] == "id":
                            e.grouping.add(toks[i][1])
                        elif at(i) != ",":
                            e.problems.append("unexpected %r in the label list of %s" % (at(i), text))
                        i += 1
                i += 1
                continue
            if low in KEYWORDS:
                i += 1
                continue
            if text in AGGREGATIONS and (at(i + 1) or "").lower() in ("by", "without"):
                i += 1  # sum by (job) (...): the clause comes first
                continue
            if at(i + 1) == "(":
                if text not in FUNCTIONS and text not in AGGREGATIONS:
                    e.problems.append("unknown function %r" % text)
                i += 1
                continue
            matchers = []
            i += 1
            if at(i) == "{":
                i += 1
                while i < n and at(i) != "}":
                    if at(i) == ",":
                        i += 1
                        continue
                    if toks[i][0] != "id" or at(i + 1) not in ("=", "!=", "=~", "!~") or i + 2 >= n \
                            or toks[i + 2][0] != "str":
                        e.problems.append("cannot read the label matchers of %s" % text)
                        break
                    matchers.append((toks[i][1], at(i + 1), _unquote(toks[i + 2][1])))
                    i += 3
                i += 1
            e.selectors.append((text, matchers))
            continue
        if text == "{":
            e.problems.append("a selector without a metric name: the names it selects cannot be checked")
        elif text == "[":
            depth = 0
            while i < n:  # a range or a subquery: durations and ':' only
                if at(i) == "[":
                    depth += 1
                elif at(i) == "]":
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
        elif kind == "var":
            e.problems.append("variable %s is not defined" % text)
        i += 1
    return e


# ---- the files ---------------------------------------------------------------

def rule_exprs(text, name="alerts.yaml"):
    """[Expr] of every rule in a Prometheus rules file's text."""
    out = []
    for g in (yaml.safe_load(text) or {}).get("groups", []):
        for r in g.get("rules", []):
            what = "alert %s" % r["alert"] if "alert" in r else "record %s" % r.get("record")
            tmpl = " ".join(str(v) for v in list((r.get("labels") or {}).values())
                            + list((r.get("annotations") or {}).values()))
            labels = re.findall(r"\$labels\.(\w+)", tmpl)
            e = parse(Expr("%s: %s" % (name, what), str(r["expr"]), labels))
            e.record = r.get("record")
            out.append(e)
    return out


def _panels(panels):
    for p in panels or []:
        yield p
        yield from _panels(p.get("panels"))


def dashboard_variables(dash):
    """{name: stand-in value} for the dashboard's own variables and Grafana's built-in ones."""
    out = dict(GRAFANA_BUILTINS)
    for v in (dash.get("templating") or {}).get("list", []):
        if v.get("type") in ("textbox", "constant", "custom", "interval"):
            q = v.get("query")
            out[v["name"]] = str((v.get("current") or {}).get("value") or (q.split(",")[0] if q else ""))
        else:
            out[v["name"]] = None  # a label value: only ever inside a quoted matcher
    return out


def substitute(expr, variables):
    """expr with $var / ${var} replaced outside quoted strings (inside them, Grafana
    puts a label value, which the checks leave alone); unknown ones are kept and
    reported by parse()."""
    out, pos = [], 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|\$\{(\w+)\}|\$(\w+)', expr):
        out.append(expr[pos:m.start()])
        name = m.group(1) or m.group(2)
        if name and variables.get(name) is not None:
            out.append(variables[name])
        else:
            out.append(m.group())
        pos = m.end()
    out.append(expr[pos:])
    return "".join(out)


def dashboard_exprs(dash, name="dashboard"):
    """[Expr] of every panel query and every query variable of a Grafana dashboard (parsed JSON)."""
    variables = dashboard_variables(dash)
    out = []
    for p in _panels(dash.get("panels")):
        for t in p.get("targets") or []:
            if "expr" not in t:
                continue
            legend = re.findall(r"\{\{\s*(\w+)\s*\}\}", t.get("legendFormat") or "")
            out.append(parse(Expr("%s: panel %r query %s" % (name, p.get("title"), t.get("refId")),
                                  substitute(t["expr"], variables), legend)))
    for v in (dash.get("templating") or {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.fullmatch(r"\s*label_values\((.*?)(?:,\s*(\w+))?\)\s*", q or "")
        e = Expr("%s: variable %s" % (name, v["name"]), substitute(m.group(1), variables) if m else q or "")
        if not m:
            e.problems.append("only label_values(selector, label) queries are checked: %r" % q)
        else:
            parse(e)
            if m.group(2):
                e.label_of = [(s[0], m.group(2)) for s in e.selectors]
        out.append(e)
    return out


def repo_exprs(src):
    """Every expression in docker/prometheus/alerts.yaml and docker/grafana/*.json."""
    out = []
    with open(os.path.join(src, "docker", "prometheus", "alerts.yaml")) as f:
        out += rule_exprs(f.read())
    gdir = os.path.join(src, "docker", "grafana")
    for fn in sorted(os.listdir(gdir)):
        if fn.endswith(".json"):
            with open(os.path.join(gdir, fn)) as f:
                out += dashboard_exprs(json.load(f), fn)
    return out


# ---- the exposition ------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$")
_LABEL = re.compile(r'\s*([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"\s*,?')
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count")}


def exposition(text):
    """{series name: {"family", "type", "samples", "labels": {label: {values}}}} of a
    Prometheus text exposition. A histogram family gives its _bucket, _sum and
    _count series; a family with a TYPE line and no sample is there with samples 0."""
    series, types = {}, {}

    def entry(name):
        fam = name
        for base, t in types.items():
            if name in (base + s for s in SUFFIXES.get(t, ("",))):
                fam = base
        return series.setdefault(name, {"family": fam, "type": types.get(fam, "untyped"), "samples": 0,
                                        "labels": {}})

    for line in text.splitlines():
        m = re.match(r"#\s*TYPE\s+(\S+)\s+(\S+)", line)
        if m:
            types[m.group(1)] = m.group(2)
            for s in SUFFIXES.get(m.group(2), ("",)):
                entry(m.group(1) + s)
            continue
        if not line.strip() or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError("not an exposition line: %r" % line)
        e = entry(m.group(1))
        e["samples"] += 1
        for k, v in _LABEL.findall(m.group(2) or ""):
            e["labels"].setdefault(k, set()).add(re.sub(r"\\(.)", r"\1", v))
    return series


# ---- the check -------------------------------------------------------------------

def check(exprs, series, live):
    """Problems (strings, each naming the file and the rule or panel) with the
    names exprs use against series (from exposition()). live: every series used
    must have samples (a worker that has consumed), so labels and values are
    checked everywhere; otherwise the labels of a series without samples are
    unknown and left unchecked."""
    problems = []
    exported = sorted(series)
    # Series the rules themselves record (a parameter such as the topics'
    # retention): their labels are those of their expression, which names
    # none here, so a matcher on one is reported like one on `up`.
    recorded = {e.record for e in exprs if e.record}
    for e in exprs:
        bad = lambda msg: problems.append("%s: %s" % (e.where, msg))
        for p in e.problems:
            bad(p)
        known_labels = set(TARGET_LABELS)
        labels_complete = True
        for metric, matchers in e.selectors:
            if metric in SYNTHETIC:
                for lab, _, _ in matchers:
                    if lab not in TARGET_LABELS:
                        bad("%s has only the target labels %s, not %r" % (metric, sorted(TARGET_LABELS), lab))
                continue
            if metric in recorded:
                for lab, _, _ in matchers:
                    bad("%s is recorded without labels, it has no %r" % (metric, lab))
                continue
            s = series.get(metric)
            if s is None:
                close = difflib.get_close_matches(metric, exported, 1)
                bad("metric %r is not exported by the worker%s" % (metric, " (did you mean %r?)" % close[0]
                                                                   if close else ""))
                labels_complete = False
                continue
            family = [metric]
            if s["type"] in SUFFIXES:
                family = [s["family"] + suf for suf in SUFFIXES[s["type"]]]
            if live:
                for f in family:
                    if not series.get(f, {}).get("samples"):
                        bad("%s has no sample in the live /metrics" % f)
            if not s["samples"]:
                labels_complete = False
                continue
            known_labels |= set(s["labels"])
            for lab, op, value in matchers:
                if lab in TARGET_LABELS:
                    continue
                if lab not in s["labels"]:
                    bad("%s has no label %r (it has %s)" % (metric, lab, sorted(s["labels"])))
                    continue
                if "$" in value:
                    continue  # a Grafana variable: the value is chosen at view time
                values = s["labels"][lab]
                if op in ("=", "!="):
                    ok = value in values
                else:
                    try:
                        ok = any(re.fullmatch(value, v) for v in values)
                    except re.error as err:
                        bad("%s{%s%s%r}: bad regular expression: %s" % (metric, lab, op, value, err))
                        continue
                if not ok:
                    bad("%s{%s%s%r} matches none of its values %s" % (metric, lab, op, value, sorted(values)))
        for metric, lab in e.label_of:
            s = series.get(metric)
            if s and s["samples"] and lab not in set(s["labels"]) | TARGET_LABELS:
                bad("label_values: %s has no label %r" % (metric, lab))
        if labels_complete:
            for lab in sorted(e.grouping - known_labels):
                bad("grouping label %r is not a label of any series used (%s)" % (lab, sorted(known_labels)))
            for lab in sorted(e.label_templates - known_labels - e.grouping):
                bad("the template uses label %r, which no series used has" % lab)
    return problems


def used_series(exprs):
    """The metric names exprs select (for reporting)."""
    return sorted({m for e in exprs for m, _ in e.selectors})
