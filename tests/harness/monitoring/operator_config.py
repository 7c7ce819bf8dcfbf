#!/usr/bin/env python3
"""What prometheus-operator would make of the ServiceMonitors, PodMonitors and PrometheusRules
on the API server, for a plain Prometheus: a scrape job per monitor endpoint with the
monitor's selector, port, interval, timeout, path, relabelings and metric relabelings and the
operator's target labels (namespace, service, pod, container, endpoint, job), over Kubernetes
service discovery's meta labels; the rule groups as a rules file. The cluster stage's
Prometheus runs with it, so it scrapes exactly what the chart's monitor objects select.

Debian's Prometheus is built without the Kubernetes service discovery, so the targets come
from file_sd files that tests/harness/monitoring/kube_sd.py keeps current with the same meta labels
(`__meta_kubernetes_*`) the Kubernetes SD would give; the relabelings are the operator's.

usage: operator_config.py MONITORS.json RULES.json OUT_DIR

MONITORS.json: `kubectl get servicemonitors,podmonitors -A -o json`; RULES.json: `kubectl get
prometheusrules -A -o json`. Writes OUT_DIR/prometheus.yml, OUT_DIR/rules.yaml and
OUT_DIR/sd-jobs.json (what kube_sd.py discovers for each job).
"""
import json
import re
import sys

import yaml


def sanitize(label):
    """A Kubernetes label name as service discovery spells it in a meta label."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", label)


def relabel(r):
    """A monitor's RelabelConfig (camelCase) as Prometheus' relabel_config."""
    keys = {"sourceLabels": "source_labels", "targetLabel": "target_label",
            "separator": "separator", "regex": "regex", "modulus": "modulus",
            "replacement": "replacement", "action": "action"}
    out = {keys[k]: v for k, v in r.items() if k in keys}
    if "action" in out:
        out["action"] = out["action"].lower()
    return out


def selector(kind, sel):
    """keep rules for a LabelSelector on the service's or pod's labels."""
    meta = "__meta_kubernetes_service_label_" if kind == "service" else "__meta_kubernetes_pod_label_"
    rules = []
    for k, v in sorted((sel.get("matchLabels") or {}).items()):
        rules.append({"source_labels": [meta + sanitize(k)], "regex": re.escape(v), "action": "keep"})
    for e in sel.get("matchExpressions") or []:
        src = [meta + sanitize(e["key"])]
        values = "|".join(re.escape(v) for v in e.get("values", []))
        op = e["operator"]
        if op == "In":
            rules.append({"source_labels": src, "regex": f"({values})", "action": "keep"})
        elif op == "NotIn":
            rules.append({"source_labels": src, "regex": f"({values})", "action": "drop"})
        elif op == "Exists":
            rules.append({"source_labels": src, "regex": ".+", "action": "keep"})
        elif op == "DoesNotExist":
            rules.append({"source_labels": src, "regex": ".+", "action": "drop"})
    return rules


def namespaces(m):
    ns = m["spec"].get("namespaceSelector") or {}
    if ns.get("any"):
        return {"namespaces": []}
    return {"namespaces": ns.get("matchNames") or [m["metadata"]["namespace"]]}


def endpoint_job(m, ep, i, out, sd):
    ns, name = m["metadata"]["namespace"], m["metadata"]["name"]
    role = "endpoints" if m["kind"] == "ServiceMonitor" else "pod"
    kind = "serviceMonitor" if role == "endpoints" else "podMonitor"
    sd_file = f"{out}/sd/{len(sd)}.json"
    sd.append(dict({"file": sd_file, "role": role}, **namespaces(m)))
    job = {"job_name": f"{kind}/{ns}/{name}/{i}",
           "honor_labels": ep.get("honorLabels", False),
           "file_sd_configs": [{"files": [sd_file], "refresh_interval": "5s"}],
           "metrics_path": ep.get("path", "/metrics"),
           "scheme": ep.get("scheme", "http")}
    if ep.get("interval"):
        job["scrape_interval"] = ep["interval"]
    if ep.get("scrapeTimeout"):
        job["scrape_timeout"] = ep["scrapeTimeout"]
    if role == "endpoints":
        rules = selector("service", m["spec"]["selector"])
        rules.append({"source_labels": ["__meta_kubernetes_endpoint_port_name"],
                      "regex": re.escape(ep["port"]), "action": "keep"})
        rules += [
            {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
            {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"},
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
            {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
            {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job"},
            {"target_label": "endpoint", "replacement": ep["port"]},
        ]
    else:
        rules = selector("pod", m["spec"]["selector"])
        rules.append({"source_labels": ["__meta_kubernetes_pod_container_port_name"],
                      "regex": re.escape(ep["port"]), "action": "keep"})
        # Pods that are done (a deleted one draining) are not scraped, as the operator does.
        rules.append({"source_labels": ["__meta_kubernetes_pod_phase"],
                      "regex": "(Failed|Succeeded)", "action": "drop"})
        rules += [
            {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
            {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
            {"target_label": "job", "replacement": f"{ns}/{name}"},
            {"target_label": "endpoint", "replacement": ep["port"]},
        ]
    rules += [relabel(r) for r in ep.get("relabelings") or []]
    job["relabel_configs"] = rules
    if ep.get("metricRelabelings"):
        job["metric_relabel_configs"] = [relabel(r) for r in ep["metricRelabelings"]]
    return job


def main():
    monitors, rules, out = sys.argv[1:4]
    jobs, sd = [], []
    for m in json.load(open(monitors))["items"]:
        if m["kind"] == "ServiceMonitor":
            eps = m["spec"]["endpoints"]
        elif m["kind"] == "PodMonitor":
            eps = m["spec"]["podMetricsEndpoints"]
        else:
            continue
        jobs += [endpoint_job(m, ep, i, out, sd) for i, ep in enumerate(eps)]
    if not jobs:
        sys.exit("operator_config: no ServiceMonitor or PodMonitor on the API server")
    groups = [g for r in json.load(open(rules))["items"] for g in r["spec"]["groups"]]
    if not groups:
        sys.exit("operator_config: no PrometheusRule on the API server")
    yaml.safe_dump({"groups": groups}, open(f"{out}/rules.yaml", "w"), sort_keys=False)
    config = {"global": {"scrape_interval": "30s", "evaluation_interval": "15s"},
              "rule_files": [f"{out}/rules.yaml"], "scrape_configs": jobs}
    yaml.safe_dump(config, open(f"{out}/prometheus.yml", "w"), sort_keys=False)
    json.dump(sd, open(f"{out}/sd-jobs.json", "w"), indent=1)
    print(f"operator_config: {len(jobs)} scrape jobs ({', '.join(j['job_name'] for j in jobs)}), "
          f"{sum(len(g['rules']) for g in groups)} rules")


if __name__ == "__main__":
    main()
