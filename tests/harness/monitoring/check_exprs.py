#!/usr/bin/env python3
"""Every PromQL expression of the alert rules and the Grafana dashboard names only metrics a
real cinder-csi /metrics scrape has, and parses (promtool check rules on a file holding each
as a recording rule).

usage: check_exprs.py SCRAPE RULES.yaml DASHBOARD.json

Run by tests/ci/37-monitoring.sh; needs PyYAML (the deploy venv has it) and promtool.
"""
import json
import re
import subprocess
import sys
import tempfile

import yaml

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool",
            "and", "or", "unless", "inf", "nan"}
# Grafana's variables, replaced by what Grafana would send.
GRAFANA_VARS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h",
                "${datasource}": "", "$job": ".*"}


def scrape_names(text):
    """Every sample name the scrape can hold: families from # TYPE lines (present even before
    a first sample in some encoders), and the names of the samples themselves."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(None, 3)
            names.add(name)
            if kind == "counter":
                names.add(name if name.endswith("_total") else name + "_total")
            elif kind in ("histogram", "summary"):
                names.update(name + s for s in ("_bucket", "_sum", "_count"))
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def metric_names(expr):
    """The metric names an expression selects (functions, keywords, labels, durations and
    numbers removed)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    found = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        before = e[m.start() - 1] if m.start() else " "
        if before.isdigit() or before == ".":
            continue  # 1e3, 0.5
        if e[m.end():].lstrip().startswith("(") or m.group(0) in KEYWORDS:
            continue
        found.add(m.group(0))
    return found


def grafana(expr):
    for var, value in GRAFANA_VARS.items():
        expr = expr.replace(var, value)
    return expr


def rule_exprs(path):
    doc = yaml.safe_load(open(path))
    return [(f"{path}: {r.get('alert') or r.get('record')}", r["expr"])
            for g in doc["groups"] for r in g["rules"]]


def dashboard_exprs(path):
    dash = json.load(open(path))
    out = []
    panels = list(dash["panels"])
    while panels:
        p = panels.pop()
        panels.extend(p.get("panels", []))
        for t in p.get("targets", []):
            out.append((f"{path}: panel {p['title']!r} {t['refId']}", grafana(t["expr"])))
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("definition") or ""
        m = re.match(r"label_values\((.+),\s*\w+\)$", q)
        if m:
            out.append((f"{path}: variable {v['name']}", grafana(m.group(1))))
    return out


def check_dashboard_shape(path):
    dash = json.load(open(path))
    problems = []
    ids = []
    panels = list(dash["panels"])
    while panels:
        p = panels.pop()
        panels.extend(p.get("panels", []))
        ids.append(p["id"])
        for t in p.get("targets", []):
            if t.get("datasource", {}).get("uid") != "${datasource}":
                problems.append(f"panel {p['title']!r}: target {t['refId']} not on ${{datasource}}")
    if len(ids) != len(set(ids)):
        problems.append(f"duplicate panel ids: {sorted(ids)}")
    if not dash.get("uid"):
        problems.append("dashboard has no uid")
    return problems


# What Prometheus itself writes for every target (the absent/up alerts use `up`).
SCRAPE_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}


def main():
    scrape, rules, dashboard = sys.argv[1:4]
    have = scrape_names(open(scrape).read()) | SCRAPE_SERIES
    exprs = rule_exprs(rules) + dashboard_exprs(dashboard)
    problems = check_dashboard_shape(dashboard)
    used = set()
    for where, expr in exprs:
        names = metric_names(expr)
        if not names:
            problems.append(f"{where}: no metric in {expr!r}")
        for n in sorted(names - have):
            problems.append(f"{where}: {n} is not in the driver's /metrics")
        used |= names
    # Each expression must parse: as a recording rule, promtool checks it.
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        yaml.safe_dump({"groups": [{"name": "exprs", "rules": [
            {"record": f"check:expr{i}", "expr": e} for i, (_, e) in enumerate(exprs)]}]}, f)
        f.flush()
        r = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append(f"promtool cannot parse an expression:\n{r.stdout}{r.stderr}")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"{len(exprs)} expressions parse and name only scraped metrics: {', '.join(sorted(used))}")


if __name__ == "__main__":
    main()
