#!/usr/bin/env python3
"""`promtool test rules` cases for the attach/detach near-timeout alert at a given sidecar
timeout, on series shaped like a real scrape: every bucket the driver exports (read from a real
/metrics scrape, not assumed), with _sum and _count, the labels a ServiceMonitor scrape adds,
cumulative counts that only grow. Each case is a list of attaches (minute, seconds): the alert
must fire for attaches slower than three quarters of the timeout and stay silent otherwise.

usage: attach_cases.py SCRAPE RULES.yaml TIMEOUT_SECONDS OUT_DIR

Writes OUT_DIR/rules.yaml (the alert rules without annotations: their text is tested by
cinder-csi-rules.test.yaml) and OUT_DIR/attach.test.yaml; run promtool test rules on the
latter. Run by tests/ci/37-monitoring.sh for the 1 m, 3 m and 10 m timeouts.
"""
import re
import sys

import yaml

ALERT = "CinderCSIAttachDetachNearTimeout"
LABELS = {"job": "cinder-csi-controller", "namespace": "kube-system",
          "instance": "10.244.1.7:8080", "pod": "cinder-csi-controller-0",
          "container": "cinder-csi-plugin", "endpoint": "metrics",
          "service": "cinder-csi-controller"}
MINUTES = 90


def buckets(scrape):
    """The le values of the RPC histogram, as the driver writes them."""
    les = []
    for line in open(scrape):
        m = re.match(r'cinder_csi_rpc_duration_seconds_bucket\{.*le="([^"]+)"', line)
        if m and m.group(1) not in les:
            les.append(m.group(1))
    if "+Inf" not in les or len(les) < 10:
        sys.exit(f"attach_cases: no RPC histogram buckets in {scrape}: {les}")
    return les


def series(les, method, attaches):
    """Cumulative bucket, sum and count series, one sample a minute, for `attaches`
    [(minute, seconds)]."""
    out = []
    labels = dict(LABELS, method=method)

    def name(metric, extra=None):
        ls = dict(labels, **(extra or {}))
        return metric + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(ls.items())) + "}"

    def values(f):
        return " ".join(str(f([s for m, s in attaches if m <= t])) for t in range(MINUTES + 1))

    for le in les:
        bound = float("inf") if le == "+Inf" else float(le)
        out.append({"series": name("cinder_csi_rpc_duration_seconds_bucket", {"le": le}),
                    "values": values(lambda seen: sum(1 for s in seen if s <= bound))})
    out.append({"series": name("cinder_csi_rpc_duration_seconds_sum"),
                "values": values(lambda seen: round(sum(seen), 3))})
    out.append({"series": name("cinder_csi_rpc_duration_seconds_count"),
                "values": values(len)})
    return out


def case(les, name, attaches, fires_at, silent_at):
    """`fires_at`: eval times (minutes) the alert must be firing; `silent_at`: must not."""
    tests = []
    exp = [{"exp_labels": {"severity": "warning", "method": "ControllerPublishVolume",
                           "job": LABELS["job"], "namespace": LABELS["namespace"]}}]
    for t in fires_at:
        tests.append({"eval_time": f"{t}m", "alertname": ALERT, "exp_alerts": exp})
    for t in silent_at:
        tests.append({"eval_time": f"{t}m", "alertname": ALERT, "exp_alerts": []})
    return {"name": name, "interval": "1m",
            "input_series": series(les, "ControllerPublishVolume", attaches),
            "alert_rule_test": tests}


def main():
    scrape, rules, timeout, out = sys.argv[1:5]
    timeout = int(timeout)
    near = timeout * 3 / 4
    les = buckets(scrape)
    doc = yaml.safe_load(open(rules))
    for g in doc["groups"]:
        for r in g["rules"]:
            r.pop("annotations", None)
    yaml.safe_dump(doc, open(f"{out}/rules.yaml", "w"), sort_keys=False)
    every = lambda seconds, start=1, step=3: [(m, seconds) for m in range(start, 60, step)]
    cases = [
        # Attaches every 3 minutes at half the timeout: never.
        case(les, "half the timeout", every(timeout * 0.5), [], [20, 40, 60]),
        # Just under the line, and exactly on it (a bucket bound): never.
        case(les, "just under three quarters", every(near * 0.97), [], [20, 40, 60]),
        case(les, "on three quarters", every(near), [], [20, 40, 60]),
        # Just over the line: fires once it has lasted 15 minutes.
        case(les, "just over three quarters", every(min(near * 1.1, timeout)), [20, 40], [10]),
        # One slow attach in a quiet hour (the recorded scenario's shape) fires 15 minutes
        # later and resolves when it leaves the hour.
        case(les, "one slow attach", [(5, timeout * 0.9)], [21, 60], [15, 70]),
        # One slow attach in twenty is below the 90th percentile: never.
        case(les, "one slow in twenty", [(m, timeout * 0.9 if m % 20 == 0 else 5)
                                        for m in range(1, 80)], [], [30, 60, 80]),
    ]
    if timeout == 180:
        # The case: attaches of a minute with the 3 m timeout page no one; of three
        # minutes (the timeout itself) they do.
        cases.append(case(les, "60 s attaches at 3m", every(60), [], [20, 40, 60]))
        cases.append(case(les, "180 s attaches at 3m", every(180), [20, 40], [10]))
    test = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": cases}
    yaml.safe_dump(test, open(f"{out}/attach.test.yaml", "w"), sort_keys=False, width=1 << 20)
    print(f"attach_cases: timeout {timeout}s, line {near:g}s, {len(les)} buckets, {len(cases)} cases")


if __name__ == "__main__":
    main()
