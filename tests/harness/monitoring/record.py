#!/usr/bin/env python3
"""Series recorded by the cluster stage's real Prometheus, as a `promtool test rules` case: every
series of the plugins' jobs (`up` included) over the recording window, one sample per STEP as
the server's query_range gives them (a target that went away is stale from then on), then
the driver left alone for EXTEND: a counter or gauge that was there at the end holds its last
value (an idle plugin exports the same numbers), a series that had gone stays gone. The rules
are the chart's as the API server holds them, without annotations (their text is
cinder-csi-rules.test.yaml's), so `for:` is evaluated by Prometheus' own rule engine over the
recorded minutes and the idle ones after, without waiting for them.

usage: record.py PROM_URL RULES.yaml OUT.yaml START END STEP_S EXTEND_MIN JOB_REGEX
                 [--fires ALERT@MIN:LABEL=VALUE,...] [--silent ALERT@MIN] ...

START/END: unix seconds; MIN: minutes after START. --fires expects the alert firing then with
exactly those labels (besides alertname); --silent expects it not firing (pending is silent).
"""
import json
import math
import sys
import urllib.parse
import urllib.request

import yaml


def query_range(url, query, start, end, step):
    q = urllib.parse.urlencode({"query": query, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(f"{url}/api/v1/query_range?{q}", timeout=60) as r:
        body = json.load(r)
    if body.get("status") != "success":
        sys.exit(f"record: query_range {query}: {body}")
    return body["data"]["result"]


def series_name(metric):
    name = metric.get("__name__", "")
    # JSON's string escapes are PromQL's for label values.
    labels = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(metric.items()) if k != "__name__")
    return f"{name}{{{labels}}}"


def fmt(v):
    f = float(v)
    if math.isnan(f):
        return "NaN"
    return repr(int(f)) if f == int(f) and abs(f) < 1e15 else repr(f)


def main():
    url, rules, out, start, end, step, extend, jobs = sys.argv[1:9]
    start, end, step, extend = float(start), float(end), float(step), float(extend)
    expect = sys.argv[9:]
    # Not the server's own ALERTS/ALERTS_FOR_STATE (they carry the alerts' job label): promtool
    # evaluates the rules itself, and recorded copies collide with its own ("duplicate sample").
    result = query_range(url, f'{{job=~"{jobs}",__name__!~"ALERTS|ALERTS_FOR_STATE"}}', start, end, step)
    if not result:
        sys.exit(f"record: no series of jobs {jobs} between {start} and {end}")
    steps = int((end - start) // step) + 1
    extra = int(extend * 60 // step)
    inputs = []
    for s in result:
        at = {int(round((float(t) - start) / step)): v for t, v in s["values"]}
        # A series the server stops returning went stale there (its target gone: Prometheus
        # writes a staleness marker). Written as a gap, promtool would keep its last sample for
        # the 5 min lookback, and absent(up == 1) would turn true 5 min late.
        values = [fmt(at[i]) if i in at else "stale" if i - 1 in at else "_" for i in range(steps)]
        held = values[-1]
        values += [held] * extra if held not in ("_", "stale") else ["_"] * extra
        inputs.append({"series": series_name(s["metric"]), "values": " ".join(values)})
    doc = yaml.safe_load(open(rules))
    for g in doc["groups"]:
        for r in g["rules"]:
            r.pop("annotations", None)
    yaml.safe_dump(doc, open(out + ".rules.yaml", "w"), sort_keys=False)
    tests = []
    for i in range(0, len(expect), 2):
        flag, spec = expect[i], expect[i + 1]
        alert, rest = spec.split("@", 1)
        minute, _, labels = rest.partition(":")
        t = {"eval_time": f"{float(minute) * 60:g}s", "alertname": alert}
        if flag == "--fires":
            t["exp_alerts"] = [{"exp_labels": dict(kv.split("=", 1) for kv in labels.split(",") if kv)}]
        else:
            t["exp_alerts"] = []
        tests.append(t)
    case = {"rule_files": [out.rsplit("/", 1)[-1] + ".rules.yaml"],
            "evaluation_interval": f"{step:g}s",
            "tests": [{"interval": f"{step:g}s", "input_series": inputs,
                       "alert_rule_test": tests}]}
    yaml.safe_dump(case, open(out, "w"), sort_keys=False, width=1 << 20)
    print(f"record: {len(inputs)} series, {steps} samples each over {(end - start) / 60:.1f} min "
          f"recorded + {extend:g} min idle, {len(tests)} expectations -> {out}")


if __name__ == "__main__":
    main()
