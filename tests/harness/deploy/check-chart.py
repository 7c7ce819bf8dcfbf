#!/usr/bin/env python3
"""What the chart's rendering must hold (tests/ci/30-deploy.sh): least-privilege RBAC split per
sidecar and held to each sidecar's documented rules (tests/harness/deploy/sidecar-rbac.yaml), and pods
locked down (seccomp RuntimeDefault everywhere, a non-root controller meeting Pod Security
"restricted", node sidecars without capabilities, no node ServiceAccount token).

usage: check-chart.py RENDERED.yaml SIDECAR_RBAC.yaml [--capacity] [--read-secrets]
                      [--deployment] [--privileged-controller] [--group-snapshots]
"""
import sys

import yaml

# Rules a sidecar's rbac.yaml lacks that the chart grants, each with its reason.
EXTRA = {
    # It GETs a PVC's VolumeAttributesClass in CreateVolume (pkg/controller/controller.go).
    "provisioner": {("storage.k8s.io", "volumeattributesclasses", "get")},
}
# Documented rules the chart leaves out, each with its reason (API groups).
OMITTED = {
    # Volume group snapshots: granted only with sidecars.snapshotter.groupSnapshots (on by
    # default; --group-snapshots: then they are required).
    "snapshotter": {"groupsnapshot.storage.k8s.io"},
}
SECRETS = {("", "secrets", "get")}
# Pod Security "restricted": volume types allowed.
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret"}


def fail(msg):
    print(f"check-chart: {msg}")
    sys.exit(1)


def triples(rules):
    return {(g, r, v) for rule in rules for g in rule["apiGroups"]
            for r in rule["resources"] for v in rule["verbs"]}


def main():
    rendered, fixture = sys.argv[1:3]
    flags = set(sys.argv[3:])
    docs = [d for d in yaml.safe_load_all(open(rendered)) if d]
    sidecars = {d["sidecar"]: d for d in yaml.safe_load_all(open(fixture)) if d}
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    name = next(d["metadata"]["name"] for d in docs if d["kind"] == "DaemonSet")[: -len("-node")]
    controller_sa = f"{name}-controller"
    check_rbac(by_kind, sidecars, name, controller_sa, flags)
    check_pods(by_kind, name, flags)
    print("check-chart: RBAC per sidecar as documented, pods locked down")


def check_rbac(by_kind, sidecars, name, controller_sa, flags):
    cluster_roles = {d["metadata"]["name"]: d for d in by_kind.get("ClusterRole", [])}
    roles = {d["metadata"]["name"]: d for d in by_kind.get("Role", [])}
    want = {f"{name}-{s}" for s in sidecars}
    if set(cluster_roles) != want:
        fail(f"ClusterRoles {sorted(cluster_roles)}, want one per sidecar {sorted(want)}")
    for s, doc in sidecars.items():
        got = triples(cluster_roles[f"{name}-{s}"]["rules"])
        omitted = set() if "--group-snapshots" in flags else OMITTED.get(s, set())
        documented = {t for t in triples(doc["clusterRules"]) if t[0] not in omitted}
        allowed = documented | EXTRA.get(s, set())
        if "--read-secrets" in flags and s in ("provisioner", "snapshotter", "resizer"):
            allowed |= SECRETS
        if got - allowed:
            fail(f"{s}: rules beyond its documented RBAC: {sorted(got - allowed)}")
        if documented - got:
            fail(f"{s}: documented rules missing: {sorted(documented - got)}")
        if "--read-secrets" in flags and s != "attacher" and not SECRETS <= got:
            fail(f"{s}: readSecrets=true without secrets get")
        if "--read-secrets" not in flags and any(t[1] == "secrets" for t in got):
            fail(f"{s}: secrets access without readSecrets")
    for role in cluster_roles.values():
        for g, r, v in triples(role["rules"]):
            if r in ("leases", "csistoragecapacities") or g == "apps":
                fail(f"{role['metadata']['name']} grants {r} cluster-wide (a namespaced Role's)")
    # Every binding binds the controller's account to one of ours; none binds the node's.
    bindings = by_kind.get("ClusterRoleBinding", []) + by_kind.get("RoleBinding", [])
    for b in bindings:
        subjects = {s["name"] for s in b["subjects"]}
        if subjects != {controller_sa}:
            fail(f"binding {b['metadata']['name']} has subjects {subjects}")
    namespaced = triples(r for d in sidecars.values() for r in d["namespacedRules"])
    leases = triples(roles.get(f"{name}-leader-election", {}).get("rules", []))
    if {t for t in leases} != {("coordination.k8s.io", "leases", v)
                               for v in ("get", "watch", "list", "delete", "update", "create")}:
        fail(f"leader election Role: {sorted(leases)}")
    capacity = roles.get(f"{name}-provisioner-capacity")
    if "--capacity" in flags:
        if capacity is None:
            fail("storageCapacity without the provisioner's capacity Role")
        got = triples(capacity["rules"])
        if got - namespaced:
            fail(f"capacity Role beyond the provisioner's documented Role: {sorted(got - namespaced)}")
        rs = ("apps", "replicasets", "get") in got
        if rs != ("--deployment" in flags):
            fail(f"replicasets get is for a Deployment's owner walk only (has it: {rs})")
    elif capacity is not None:
        fail("capacity Role rendered with storageCapacity off")
    if set(roles) - {f"{name}-leader-election", f"{name}-provisioner-capacity"}:
        fail(f"unexpected Roles {sorted(roles)}")


def security(c):
    return c.get("securityContext") or {}


def locked(container, where):
    sc = security(container)
    if sc.get("privileged"):
        fail(f"{where}: privileged")
    if sc.get("allowPrivilegeEscalation") is not False:
        fail(f"{where}: allowPrivilegeEscalation is not false")
    if sc.get("readOnlyRootFilesystem") is not True:
        fail(f"{where}: root filesystem writable")
    caps = sc.get("capabilities") or {}
    if "ALL" not in (caps.get("drop") or []) or caps.get("add"):
        fail(f"{where}: capabilities {caps} (want drop ALL, add none)")


def check_pods(by_kind, name, flags):
    workloads = [d for k in ("StatefulSet", "Deployment", "DaemonSet") for d in by_kind.get(k, [])]
    for w in workloads:
        spec = w["spec"]["template"]["spec"]
        seccomp = (spec.get("securityContext") or {}).get("seccompProfile", {}).get("type")
        if seccomp != "RuntimeDefault":
            fail(f"{w['metadata']['name']}: pod seccompProfile {seccomp!r}, want RuntimeDefault")
    ds = by_kind["DaemonSet"][0]
    node = ds["spec"]["template"]["spec"]
    if node.get("automountServiceAccountToken") is not False:
        fail("the node pod mounts a ServiceAccount token; nothing on the node calls the API")
    for c in node["containers"]:
        if c["name"] != "cinder-csi-plugin":
            locked(c, f"node {c['name']}")
    ctl = [w for w in workloads if w["kind"] != "DaemonSet"][0]
    if "--privileged-controller" in flags:
        return
    pod = ctl["spec"]["template"]["spec"]
    psc = pod.get("securityContext") or {}
    if psc.get("runAsNonRoot") is not True or not psc.get("runAsUser"):
        fail(f"controller pod not non-root: {psc}")
    for c in pod["containers"]:
        locked(c, f"controller {c['name']}")
        if security(c).get("runAsUser") == 0:
            fail(f"controller {c['name']} runs as root")
    # Pod Security "restricted", as the API server checks it (the rest is above).
    if pod.get("hostNetwork") or pod.get("hostPID") or pod.get("hostIPC"):
        fail("controller pod shares a host namespace")
    for v in pod.get("volumes", []):
        kinds = set(v) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            fail(f"controller volume {v['name']} is {kinds}: not allowed under restricted")
    for c in pod["containers"]:
        if any(p.get("hostPort") for p in c.get("ports", [])):
            fail(f"controller {c['name']} has a hostPort")
    if ctl["spec"]["replicas"] < 2:
        fail("the controller has one replica by default")
    pdbs = by_kind.get("PodDisruptionBudget", [])
    labels = ctl["spec"]["template"]["metadata"]["labels"]
    if not any(all(labels.get(k) == v for k, v in p["spec"]["selector"]["matchLabels"].items())
               for p in pdbs):
        fail("no PodDisruptionBudget selects the controller pods")
    if not pod.get("topologySpreadConstraints"):
        fail("controller without topologySpreadConstraints")


if __name__ == "__main__":
    main()
