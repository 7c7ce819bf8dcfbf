#!/usr/bin/env bash
# The cluster stage's monitoring scenario, on a running cluster with the chart installed on the
# OpenStack backend (tests/k8s/cluster up --backend openstack): prometheus-operator's CRDs applied
# to the real API server, the chart's ServiceMonitor, PodMonitors and PrometheusRule turned on
# (helm upgrade) and read back from the API server; a real Prometheus (Debian's, on the host)
# scrapes exactly what they select (tests/monitoring/operator_config.py: the operator's scrape
# jobs; kube_sd.py: Kubernetes service discovery, which Debian's build lacks) and must have
# every controller replica and every node plugin up. Then three recordings, each turned into a
# `promtool test rules` case (tests/monitoring/record.py) so that `for:` is evaluated over the
# recorded minutes and the idle ones after them:
#   normal  a PVC attached and mounted by a pod: CinderCSIAttachDetachNearTimeout never fires;
#   slow    the same with the test cloud delaying the attach (the fake Cinder driver's
#           attach-delay) past three quarters of the sidecar timeout: it fires 15 minutes on;
#   down    the controller scaled to 0: CinderCSIControllerDown fires 5 minutes on.
# Everything it makes (CRDs, monitors, PVCs, the namespace, Prometheus and its data) is removed
# at exit and the release's values restored.
#
# usage: tests/monitoring/cluster.sh    (KUBECONFIG; RELEASE, NAMESPACE, HELM, OSTACK_ENV below)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
RELEASE=${RELEASE:-cinder-csi}
NAMESPACE=${NAMESPACE:-kube-system}
HELM=${HELM:-$repo/.tools/helm/helm}
OSTACK_ENV=${OSTACK_ENV:-/var/tmp/cinder-csi-ostack/env.sh}
PROM_OPERATOR=${PROM_OPERATOR:-github.com/prometheus-operator/prometheus-operator@v0.85.0}
PORT=${MONITORING_PROM_PORT:-19090}
# Past three quarters of the default 3 m timeout (135 s) and short of it, with Nova's own time.
SLOW_S=${MONITORING_SLOW_ATTACH_S:-140}
py=${PY:-$repo/.venv/bin/python}
controller_job=$(awk '/^  controllerJob:/ {print $2}' charts/cinder-csi/values.yaml)
node_job=$(awk '/^  nodeJob:/ {print $2}' charts/cinder-csi/values.yaml)
ns=cinder-csi-monitoring
t0=$SECONDS
tmp=$(mktemp -d /var/tmp/cinder-csi-monitoring.XXXXXX)
pids=()
sts=
delay_file=
upgraded=0
replicas=

step() { printf '[%4d s] monitoring: %s\n' $((SECONDS - t0)) "$*"; }
fail() { echo "monitoring: FAILED: $*" >&2; exit 1; }
k() { kubectl "$@"; }
cleanup() {
    local rc=$? p
    trap - EXIT
    set +e
    step "cleanup"
    [[ -n $delay_file ]] && rm -f "$delay_file"
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    [[ -n $replicas ]] && k -n "$NAMESPACE" scale "$sts" --replicas="$replicas" >/dev/null
    k delete namespace "$ns" --ignore-not-found --wait=true --timeout=5m >/dev/null
    if ((upgraded)); then
        "$HELM" upgrade "$RELEASE" charts/cinder-csi -n "$NAMESPACE" --reuse-values \
            --set monitoring.serviceMonitor.enabled=false --set monitoring.podMonitor.enabled=false \
            --set monitoring.prometheusRule.enabled=false >/dev/null
    fi
    for c in servicemonitors podmonitors prometheusrules; do
        k delete crd "$c.monitoring.coreos.com" --ignore-not-found >/dev/null
    done
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT

command -v prometheus >/dev/null || fail "no prometheus binary (tests/ci/install-deps.sh)"
[[ -f $OSTACK_ENV ]] || fail "the slow attach needs the test cloud ($OSTACK_ENV)"
# shellcheck disable=SC1090
volume_dir=$(. "$OSTACK_ENV" && echo "$OSTACK_VOLUME_DIR")

sts=$(k -n "$NAMESPACE" get statefulset -o name \
    -l "app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/component=controller")
[[ -n $sts ]] || fail "no controller StatefulSet of release $RELEASE in $NAMESPACE"

step "prometheus-operator CRDs ($PROM_OPERATOR) on the API server"
crds=$(go mod download -json "$PROM_OPERATOR" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')/example/prometheus-operator-crd
for c in servicemonitors podmonitors prometheusrules; do
    k apply --server-side -f "$crds/monitoring.coreos.com_$c.yaml" >/dev/null
done
k wait --for=condition=Established --timeout=60s \
    crd/servicemonitors.monitoring.coreos.com crd/podmonitors.monitoring.coreos.com \
    crd/prometheusrules.monitoring.coreos.com >/dev/null

step "the chart's ServiceMonitor, PodMonitors and PrometheusRule (helm upgrade --reuse-values)"
upgraded=1
"$HELM" upgrade "$RELEASE" charts/cinder-csi -n "$NAMESPACE" --reuse-values \
    --set monitoring.serviceMonitor.enabled=true --set monitoring.podMonitor.enabled=true \
    --set monitoring.prometheusRule.enabled=true \
    --set monitoring.serviceMonitor.interval=10s --set monitoring.podMonitor.interval=10s >/dev/null
k get servicemonitors,podmonitors -A -o json >"$tmp/monitors.json"
k get prometheusrules -A -o json >"$tmp/rules.json"
mkdir "$tmp/prom" "$tmp/data"
"$py" tests/monitoring/operator_config.py "$tmp/monitors.json" "$tmp/rules.json" "$tmp/prom"
"$py" tests/monitoring/kube_sd.py "$tmp/prom/sd-jobs.json" --every 3 2>"$tmp/kube_sd.log" &
pids+=($!)
sleep 5
promtool check config "$tmp/prom/prometheus.yml" >/dev/null
prometheus --config.file "$tmp/prom/prometheus.yml" --storage.tsdb.path "$tmp/data" \
    --web.listen-address "127.0.0.1:$PORT" >"$tmp/prometheus.log" 2>&1 &
pids+=($!)
url=http://127.0.0.1:$PORT
q() { curl -sf --get "$url/api/v1/query" --data-urlencode "query=$1" | "$py" -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")'; }

controllers=$(k -n "$NAMESPACE" get "$sts" -o jsonpath='{.spec.replicas}')
nodes=$(k get daemonset -A -l "app.kubernetes.io/instance=$RELEASE" -o jsonpath='{.items[0].status.numberReady}')
step "Prometheus scraping: want $controllers controller(s) up in job $controller_job, $nodes node plugin(s) in job $node_job"
for _ in $(seq 90); do
    c=$(q "sum(up{job=\"$controller_job\"})") n=$(q "sum(up{job=\"$node_job\"})")
    [[ ${c:-0} == "$controllers" && ${n:-0} == "$nodes" ]] && break
    sleep 2
done
[[ ${c:-0} == "$controllers" && ${n:-0} == "$nodes" ]] || {
    curl -s "$url/api/v1/targets" | head -c 3000; tail -5 "$tmp/kube_sd.log"
    fail "Prometheus has $c controller and $n node targets up, want $controllers and $nodes"
}
curl -s "$url/api/v1/targets?state=active" | "$py" -c '
import json, sys
for t in json.load(sys.stdin)["data"]["activeTargets"]:
    l = t["labels"]
    print(f"  {l[\"job\"]:24} {l[\"instance\"]:22} pod={l.get(\"pod\", \"\")} health={t[\"health\"]}")'
# Both plugins export what the dashboards and alerts read.
for m in cinder_csi_build_info process_resident_memory_bytes cinder_csi_rpc_requests_total; do
    for j in "$controller_job" "$node_job"; do
        [[ -n $(q "count($m{job=\"$j\"})") ]] || fail "no $m from job $j"
    done
done

k create namespace "$ns" >/dev/null
# attach NAME: a PVC of the chart's StorageClass mounted by a pod until it runs, then deleted.
attach() {
    local name=$1 timeout=$2
    k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $name}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: csi-cinder-sc-delete
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: c
      image: ${BUSYBOX_IMAGE:?BUSYBOX_IMAGE: the cluster's busybox image}
      command: [sh, -c, 'touch /data/x && sleep 3600']
      securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
      volumeMounts: [{name: d, mountPath: /data}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: $name}}]
EOF
    k -n "$ns" wait --for=condition=Ready "pod/$name" --timeout="${timeout}s" >/dev/null \
        || { k -n "$ns" describe pod "$name" | tail -15; fail "pod $name not running"; }
    k -n "$ns" delete pod "$name" --wait=true --timeout=5m >/dev/null
    k -n "$ns" delete pvc "$name" --wait=true --timeout=5m >/dev/null
}
# record NAME START EXPECTATIONS...: the window since START as a promtool case, tested.
record() {
    local name=$1 start=$2
    shift 2
    sleep 25 # two more scrapes after the last change
    "$py" tests/monitoring/record.py "$url" "$tmp/prom/rules.yaml" "$tmp/$name.test.yaml" \
        "$start" "$(date +%s)" 10 40 "$controller_job|$node_job" "$@"
    (cd "$tmp" && promtool test rules "$name.test.yaml") >"$tmp/$name.out" 2>&1 \
        || { cat "$tmp/$name.out"; fail "recorded '$name': the alerts did not do what they should"; }
    step "recorded '$name': promtool test rules SUCCESS ($*)"
}
attach_labels="severity=warning,method=ControllerPublishVolume,job=$controller_job,namespace=$NAMESPACE"

step "normal: an attach of the test cloud's usual speed"
start=$(date +%s)
attach normal-attach 300
record normal "$start" --silent CinderCSIAttachDetachNearTimeout@5 \
    --silent CinderCSIAttachDetachNearTimeout@20 --silent CinderCSIAttachDetachNearTimeout@35 \
    --silent CinderCSIControllerDown@20

step "slow: the test cloud delays the attach by $SLOW_S s"
delay_file=$volume_dir/attach-delay
echo "slow-attach $SLOW_S" >"$delay_file"
start=$(date +%s)
attach slow-attach 400
rm -f "$delay_file"
delay_file=
took=$(q "max(increase(cinder_csi_rpc_duration_seconds_sum{job=\"$controller_job\",method=\"ControllerPublishVolume\"}[10m]))")
step "slow attach recorded: ControllerPublishVolume took ${took%.*} s in all over the last 10 min"
elapsed=$(( ($(date +%s) - start) / 60 ))
record slow "$start" --silent CinderCSIAttachDetachNearTimeout@1 \
    --fires "CinderCSIAttachDetachNearTimeout@$((elapsed + 17)):$attach_labels" \
    --fires "CinderCSIAttachDetachNearTimeout@$((elapsed + 30)):$attach_labels"

step "down: the controller scaled to 0"
replicas=$controllers
start=$(date +%s)
sleep 20
k -n "$NAMESPACE" scale "$sts" --replicas=0 >/dev/null
k -n "$NAMESPACE" wait --for=delete pod --timeout=3m \
    -l "app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/component=controller" >/dev/null 2>&1 || true
for _ in $(seq 30); do [[ -z $(q "up{job=\"$controller_job\"}") ]] && break; sleep 2; done
[[ -z $(q "up{job=\"$controller_job\"}") ]] || fail "Prometheus still has controller targets"
down_at=$(( ($(date +%s) - start) / 60 ))
sleep 30
record down "$start" --silent CinderCSIControllerDown@0 \
    --fires "CinderCSIControllerDown@$((down_at + 7)):severity=critical,job=$controller_job" \
    --silent CinderCSINodePluginsAbsent@$((down_at + 7))
k -n "$NAMESPACE" scale "$sts" --replicas="$replicas" >/dev/null
k -n "$NAMESPACE" rollout status "$sts" --timeout=5m >/dev/null
replicas=
step "passed in $((SECONDS - t0)) s"
