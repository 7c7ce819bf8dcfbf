#!/usr/bin/env python3
"""Kubernetes service discovery for a Prometheus built without it (Debian's): every few
seconds, the pods and endpoints of the namespaces each job watches, read from the API server
with kubectl, written as file_sd target groups carrying the meta labels Prometheus' own
Kubernetes SD gives (`role: pod` one target per container port, `role: endpoints` one per
endpoint address and port), so the operator's relabelings (tests/harness/monitoring/operator_config.py)
select and label them as they would. Targets that go away (a controller scaled to 0) leave the
file, and Prometheus marks their series stale.

usage: kube_sd.py SD_JOBS.json [--once | --every SECONDS]    (KUBECONFIG from the environment)
"""
import json
import os
import re
import subprocess
import sys
import time


def sanitize(label):
    return re.sub(r"[^a-zA-Z0-9_]", "_", label)


def kubectl_items(kind, namespace):
    args = ["kubectl", "get", kind, "-o", "json"]
    args += ["-n", namespace] if namespace else ["-A"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["items"]


def pod_meta(pod):
    md, spec, st = pod["metadata"], pod["spec"], pod.get("status", {})
    labels = {"__meta_kubernetes_namespace": md["namespace"],
              "__meta_kubernetes_pod_name": md["name"],
              "__meta_kubernetes_pod_ip": st.get("podIP", ""),
              "__meta_kubernetes_pod_node_name": spec.get("nodeName", ""),
              "__meta_kubernetes_pod_host_ip": st.get("hostIP", ""),
              "__meta_kubernetes_pod_phase": st.get("phase", ""),
              "__meta_kubernetes_pod_ready": str(any(
                  c["type"] == "Ready" and c["status"] == "True"
                  for c in st.get("conditions", []))).lower()}
    for k, v in (md.get("labels") or {}).items():
        labels[f"__meta_kubernetes_pod_label_{sanitize(k)}"] = v
        labels[f"__meta_kubernetes_pod_labelpresent_{sanitize(k)}"] = "true"
    return labels


def pod_groups(pods):
    groups = []
    for pod in pods:
        ip = pod.get("status", {}).get("podIP")
        if not ip:
            continue
        base = pod_meta(pod)
        for c in pod["spec"]["containers"]:
            for p in c.get("ports") or []:
                labels = dict(base, **{
                    "__meta_kubernetes_pod_container_name": c["name"],
                    "__meta_kubernetes_pod_container_port_name": p.get("name", ""),
                    "__meta_kubernetes_pod_container_port_number": str(p["containerPort"]),
                    "__meta_kubernetes_pod_container_port_protocol": p.get("protocol", "TCP")})
                groups.append({"targets": [f"{ip}:{p['containerPort']}"], "labels": labels})
    return groups


def endpoint_groups(endpoints, services, pods):
    svc = {(s["metadata"]["namespace"], s["metadata"]["name"]): s for s in services}
    by_pod = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}
    groups = []
    for ep in endpoints:
        ns, name = ep["metadata"]["namespace"], ep["metadata"]["name"]
        s = svc.get((ns, name))
        if s is None:
            continue
        base = {"__meta_kubernetes_namespace": ns, "__meta_kubernetes_service_name": name,
                "__meta_kubernetes_endpoints_name": name}
        for k, v in (s["metadata"].get("labels") or {}).items():
            base[f"__meta_kubernetes_service_label_{sanitize(k)}"] = v
            base[f"__meta_kubernetes_service_labelpresent_{sanitize(k)}"] = "true"
        for subset in ep.get("subsets") or []:
            for ready, key in (("true", "addresses"), ("false", "notReadyAddresses")):
                for addr in subset.get(key) or []:
                    ref = addr.get("targetRef") or {}
                    pod = by_pod.get((ns, ref.get("name"))) if ref.get("kind") == "Pod" else None
                    for port in subset.get("ports") or []:
                        labels = dict(base, **{
                            "__meta_kubernetes_endpoint_port_name": port.get("name", ""),
                            "__meta_kubernetes_endpoint_port_protocol": port.get("protocol", "TCP"),
                            "__meta_kubernetes_endpoint_ready": ready,
                            "__meta_kubernetes_endpoint_address_target_kind": ref.get("kind", ""),
                            "__meta_kubernetes_endpoint_address_target_name": ref.get("name", "")})
                        if pod is not None:
                            labels.update(pod_meta(pod))
                            for c in pod["spec"]["containers"]:
                                if any(p.get("containerPort") == port["port"]
                                       for p in c.get("ports") or []):
                                    labels["__meta_kubernetes_pod_container_name"] = c["name"]
                        groups.append({"targets": [f"{addr['ip']}:{port['port']}"],
                                       "labels": labels})
    return groups


def discover(jobs):
    for job in jobs:
        names = job["namespaces"] or [None]
        groups = []
        for ns in names:
            pods = kubectl_items("pods", ns)
            if job["role"] == "pod":
                groups += pod_groups(pods)
            else:
                groups += endpoint_groups(kubectl_items("endpoints", ns),
                                          kubectl_items("services", ns), pods)
        tmp = job["file"] + ".tmp"
        os.makedirs(os.path.dirname(job["file"]), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(groups, f, indent=1)
        os.replace(tmp, job["file"])


def main():
    jobs = json.load(open(sys.argv[1]))
    if len(sys.argv) > 2 and sys.argv[2] == "--every":
        every = float(sys.argv[3])
        while True:
            try:
                discover(jobs)
            except subprocess.CalledProcessError as e:
                print(f"kube_sd: {e.stderr.strip()}", file=sys.stderr)
            time.sleep(every)
    discover(jobs)


if __name__ == "__main__":
    main()
