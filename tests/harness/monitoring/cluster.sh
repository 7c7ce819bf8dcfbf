#!/usr/bin/env bash
# The cluster stage's monitoring scenario, on a running cluster with the chart installed
# (tests/harness/k8s/cluster up, either backend): prometheus-operator's CRDs applied to the real API
# server, the chart's ServiceMonitor, PodMonitors and PrometheusRule turned on (helm upgrade)
# and read back from the API server; a real Prometheus (Debian's, on the host) scrapes exactly
# what they select (tests/harness/monitoring/operator_config.py: the operator's scrape jobs;
# kube_sd.py: Kubernetes service discovery, which Debian's build lacks) and must have every
# controller replica and every node plugin up. Then three recordings, each turned into a
# `promtool test rules` case (tests/harness/monitoring/record.py) so that `for:` is evaluated over the
# recorded minutes and the idle ones after them:
#   normal  everything since `start` (in 70-k8s: the lifecycle, group snapshot and e2e tests;
#           alone: one PVC attached and mounted by a pod): CinderCSIAttachDetachNearTimeout and
#           CinderCSIControllerDown never fire;
#   slow    one attach delayed past three quarters of the sidecar timeout (the backend's
#           attach-delay file: the local backend's DIR/attach-delay, the test cloud's fake
#           Cinder driver's): the near-timeout alert fires 15 minutes on;
#   down    the controller scaled to 0: CinderCSIControllerDown fires 5 minutes on.
#
#   tests/harness/monitoring/cluster.sh start    monitors on, Prometheus scraping (left running)
#   tests/harness/monitoring/cluster.sh finish   the three recordings, then `stop`
#   tests/harness/monitoring/cluster.sh stop     everything start made removed, the release's values
#                                        restored (idempotent; for a trap)
#   tests/harness/monitoring/cluster.sh          start, one normal attach, finish
#
# KUBECONFIG from tests/harness/k8s/cluster env; RELEASE, NAMESPACE, HELM, OSTACK_ENV, MONITORING_DIR
# below. Its state (Prometheus' data, the pids, the recordings) is in MONITORING_DIR.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$repo"
# shellcheck source=tests/harness/k8s/lib.sh
. "$repo/tests/harness/k8s/lib.sh"
RELEASE=${RELEASE:-cinder-csi}
NAMESPACE=${NAMESPACE:-$K8S_DRIVER_NS}
HELM=${HELM:-$repo/.tools/helm/helm}
OSTACK_ENV=${OSTACK_ENV:-/var/tmp/cinder-csi-ostack/env.sh}
PROM_OPERATOR=${PROM_OPERATOR:-github.com/prometheus-operator/prometheus-operator@v0.85.0}
PORT=${MONITORING_PROM_PORT:-19090}
dir=${MONITORING_DIR:-/var/tmp/cinder-csi-monitoring}
# Past three quarters of the default 3 m timeout (135 s) and short of it.
SLOW_S=${MONITORING_SLOW_ATTACH_S:-140}
py=${PY:-python3}
[[ -x $repo/.venv/bin/python ]] && py=${PY:-$repo/.venv/bin/python}
controller_job=$(awk '/^  controllerJob:/ {print $2}' charts/cinder-csi/values.yaml)
node_job=$(awk '/^  nodeJob:/ {print $2}' charts/cinder-csi/values.yaml)
ns=cinder-csi-monitoring
url=http://127.0.0.1:$PORT
t0=$SECONDS
# kube_sd.py runs kubectl: the cluster's own.
PATH=$(dirname "$KUBECTL"):$PATH
export PATH

step() { printf '[%4d s] monitoring: %s\n' $((SECONDS - t0)) "$*"; }
fail() { echo "monitoring: FAILED: $*" >&2; exit 1; }
q() { curl -sf --get "$url/api/v1/query" --data-urlencode "query=$1" | "$py" -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")'; }
controller_set() {
    k -n "$NAMESPACE" get statefulset,deployment -o name \
        -l "app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/component=controller"
}

stop() {
    set +e
    local f p
    for f in "$dir"/pids/*; do
        [[ -f $f ]] || continue
        p=$(<"$f")
        kill "$p" 2>/dev/null && for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        rm -f "$f"
    done
    [[ -f $dir/delay-file ]] && rm -f "$(<"$dir/delay-file")"
    if [[ -f $dir/replicas ]]; then
        k -n "$NAMESPACE" scale "$(controller_set)" --replicas="$(<"$dir/replicas")" >/dev/null
    fi
    k delete namespace "$ns" --ignore-not-found --wait=true --timeout=5m >/dev/null
    if [[ -f $dir/upgraded ]]; then
        "$HELM" upgrade "$RELEASE" charts/cinder-csi -n "$NAMESPACE" --reuse-values \
            --set monitoring.serviceMonitor.enabled=false --set monitoring.podMonitor.enabled=false \
            --set monitoring.prometheusRule.enabled=false >/dev/null
    fi
    for c in servicemonitors podmonitors prometheusrules; do
        k delete crd "$c.monitoring.coreos.com" --ignore-not-found >/dev/null
    done
    # The recordings outlive the run, for a look at what promtool was fed.
    if compgen -G "$dir/*.test.yaml" >/dev/null; then
        rm -rf "$dir.last" && mkdir -p "$dir.last" && cp "$dir"/*.test.yaml* "$dir"/*.out "$dir.last"/ 2>/dev/null
    fi
    rm -rf "$dir"
    return 0
}

# bg NAME CMD...: a process of this scenario, in its own session, its pid in $dir/pids.
bg() {
    local name=$1
    shift
    setsid "$@" </dev/null >>"$dir/$name.log" 2>&1 &
    echo $! >"$dir/pids/$name"
}

start() {
    command -v prometheus >/dev/null || fail "no prometheus binary (tests/ci/install-deps.sh)"
    [[ -n $(controller_set) ]] || fail "no controller of release $RELEASE in $NAMESPACE"
    if [[ -e $dir ]]; then stop; fi
    ! ss -Htln "sport = :$PORT" | grep -q . || fail "port $PORT is in use: $(ss -Htlnp "sport = :$PORT")"
    mkdir -p "$dir/pids" "$dir/prom" "$dir/data"
    date +%s >"$dir/start"

    step "prometheus-operator CRDs ($PROM_OPERATOR) on the API server"
    local crds
    crds=$(go mod download -json "$PROM_OPERATOR" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')/example/prometheus-operator-crd
    for c in servicemonitors podmonitors prometheusrules; do
        k apply --server-side -f "$crds/monitoring.coreos.com_$c.yaml" >/dev/null
    done
    k wait --for=condition=Established --timeout=60s \
        crd/servicemonitors.monitoring.coreos.com crd/podmonitors.monitoring.coreos.com \
        crd/prometheusrules.monitoring.coreos.com >/dev/null

    step "the chart's ServiceMonitor, PodMonitors and PrometheusRule (helm upgrade --reuse-values)"
    touch "$dir/upgraded"
    "$HELM" upgrade "$RELEASE" charts/cinder-csi -n "$NAMESPACE" --reuse-values \
        --set monitoring.serviceMonitor.enabled=true --set monitoring.podMonitor.enabled=true \
        --set monitoring.prometheusRule.enabled=true \
        --set monitoring.serviceMonitor.interval=10s --set monitoring.podMonitor.interval=10s >/dev/null
    # The plugins as they run after the upgrade (nothing in their pods should have changed).
    local w_ns w
    while read -r w_ns w; do
        k -n "$w_ns" rollout status "$w" --timeout=3m >/dev/null
    done < <(k get statefulset,deployment,daemonset -A -l "app.kubernetes.io/instance=$RELEASE" \
        -o jsonpath='{range .items[*]}{.metadata.namespace} {.kind}/{.metadata.name}{"\n"}{end}')
    k get servicemonitors,podmonitors -A -o json >"$dir/monitors.json"
    k get prometheusrules -A -o json >"$dir/rules.json"
    "$py" tests/harness/monitoring/operator_config.py "$dir/monitors.json" "$dir/rules.json" "$dir/prom"
    "$py" tests/harness/monitoring/kube_sd.py "$dir/prom/sd-jobs.json" --once
    bg kube_sd "$py" tests/harness/monitoring/kube_sd.py "$dir/prom/sd-jobs.json" --every 5
    promtool check config "$dir/prom/prometheus.yml" >/dev/null
    bg prometheus prometheus --config.file "$dir/prom/prometheus.yml" --storage.tsdb.path "$dir/data" \
        --web.listen-address "127.0.0.1:$PORT"

    local controllers nodes c n
    controllers=$(k -n "$NAMESPACE" get "$(controller_set)" -o jsonpath='{.spec.replicas}')
    nodes=$(k get daemonset -A -l "app.kubernetes.io/instance=$RELEASE" -o jsonpath='{.items[0].status.numberReady}')
    step "Prometheus scraping: want $controllers controller(s) up in job $controller_job, $nodes node plugin(s) in job $node_job"
    for _ in $(seq 60); do
        c=$(q "sum(up{job=\"$controller_job\"})" || true) n=$(q "sum(up{job=\"$node_job\"})" || true)
        [[ ${c:-0} == "$controllers" && ${n:-0} == "$nodes" ]] && break
        sleep 2
    done
    [[ ${c:-0} == "$controllers" && ${n:-0} == "$nodes" ]] || {
        curl -s "$url/api/v1/targets" | head -c 3000
        tail -5 "$dir/kube_sd.log" "$dir/prometheus.log"
        fail "Prometheus has ${c:-no} controller and ${n:-no} node targets up, want $controllers and $nodes"
    }
    curl -s "$url/api/v1/targets?state=active" | "$py" -c '
import json, sys
for t in json.load(sys.stdin)["data"]["activeTargets"]:
    l = t["labels"]
    print("  %-24s %-22s pod=%s health=%s" % (l["job"], l["instance"], l.get("pod", ""), t["health"]))'
    # Both plugins export what the dashboards and alerts read.
    local m j
    for m in cinder_csi_build_info process_resident_memory_bytes cinder_csi_rpc_requests_total; do
        for j in "$controller_job" "$node_job"; do
            [[ -n $(q "count($m{job=\"$j\"})") ]] || fail "no $m from job $j"
        done
    done
    step "started: Prometheus on $url, state in $dir"
}

# attach NAME TIMEOUT_S: a PVC of the chart's StorageClass mounted by a pod until it runs,
# then deleted. The pod is made once the claim is Bound: the class binds Immediately, and a
# pod made beside an unbound claim fails its first scheduling and is not retried when the
# claim binds, only at the scheduler's 5-minute flush of unschedulable pods.
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
EOF
    k -n "$ns" wait --for=jsonpath='{.status.phase}'=Bound "pvc/$name" --timeout=180s >/dev/null \
        || { k -n "$ns" describe pvc "$name" | tail -15; fail "claim $name not bound"; }
    k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsNonRoot: true, runAsUser: 65532, fsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: c
      image: $BUSYBOX_IMAGE
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
    "$py" tests/harness/monitoring/record.py "$url" "$dir/prom/rules.yaml" "$dir/$name.test.yaml" \
        "$start" "$(date +%s)" 10 40 "$controller_job|$node_job" "$@"
    (cd "$dir" && promtool test rules "$name.test.yaml") >"$dir/$name.out" 2>&1 \
        || { cat "$dir/$name.out"; fail "recorded '$name': the alerts did not do what they should"; }
    step "recorded '$name': promtool test rules SUCCESS ($*)"
}

# The file that delays the attach of a volume by its PVC name's prefix.
delay_file() {
    case $(k8s_backend) in
        local) echo "$(local_dir)/attach-delay" ;;
        openstack)
            [[ -f $OSTACK_ENV ]] || fail "the slow attach needs the test cloud's env ($OSTACK_ENV)"
            # shellcheck disable=SC1090
            echo "$(. "$OSTACK_ENV" && echo "$OSTACK_VOLUME_DIR")/attach-delay"
            ;;
    esac
}

finish() {
    [[ -f $dir/start ]] || fail "not started (tests/harness/monitoring/cluster.sh start)"
    trap 'stop' EXIT
    local start elapsed took down_at sts replicas
    k get namespace "$ns" >/dev/null 2>&1 || k create namespace "$ns" >/dev/null
    local attach_labels="severity=warning,method=ControllerPublishVolume,job=$controller_job,namespace=$NAMESPACE"
    start=$(<"$dir/start")
    [[ -n $(q "sum(cinder_csi_rpc_requests_total{job=\"$controller_job\",method=\"ControllerPublishVolume\"})") ]] \
        || fail "nothing was attached since start: no normal attach to record"
    elapsed=$((($(date +%s) - start) / 60))
    step "normal: the $elapsed min since start"
    record normal "$start" --silent "CinderCSIAttachDetachNearTimeout@$((elapsed + 5))" \
        --silent "CinderCSIAttachDetachNearTimeout@$((elapsed + 20))" \
        --silent "CinderCSIAttachDetachNearTimeout@$((elapsed + 35))" \
        --silent "CinderCSIControllerDown@$((elapsed + 20))"

    step "slow: the backend delays the attach by $SLOW_S s"
    local f
    f=$(delay_file)
    echo "$f" >"$dir/delay-file"
    echo "slow-attach $SLOW_S" >"$f"
    start=$(date +%s)
    attach slow-attach $((SLOW_S + 180))
    rm -f "$f" "$dir/delay-file"
    # Scraped once it shows in the histogram's sum (the next scrape after the call returned).
    for _ in $(seq 12); do
        took=$(q "max(increase(cinder_csi_rpc_duration_seconds_sum{job=\"$controller_job\",method=\"ControllerPublishVolume\"}[10m]))")
        took=${took%.*}
        ((${took:-0} >= SLOW_S * 9 / 10)) && break
        sleep 5
    done
    ((${took:-0} >= SLOW_S * 9 / 10)) || fail "Prometheus has no slow ControllerPublishVolume: ${took:-nothing} s in all over 10 min"
    step "slow attach scraped: ControllerPublishVolume took $took s in all over the last 10 min"
    elapsed=$((($(date +%s) - start) / 60))
    record slow "$start" --silent CinderCSIAttachDetachNearTimeout@1 \
        --fires "CinderCSIAttachDetachNearTimeout@$((elapsed + 17)):$attach_labels" \
        --fires "CinderCSIAttachDetachNearTimeout@$((elapsed + 30)):$attach_labels"

    step "down: the controller scaled to 0"
    sts=$(controller_set)
    replicas=$(k -n "$NAMESPACE" get "$sts" -o jsonpath='{.spec.replicas}')
    echo "$replicas" >"$dir/replicas"
    start=$(date +%s)
    sleep 20
    k -n "$NAMESPACE" scale "$sts" --replicas=0 >/dev/null
    k -n "$NAMESPACE" wait --for=delete pod --timeout=3m \
        -l "app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/component=controller" >/dev/null 2>&1 || true
    for _ in $(seq 30); do [[ -z $(q "up{job=\"$controller_job\"}") ]] && break; sleep 2; done
    [[ -z $(q "up{job=\"$controller_job\"}") ]] || fail "Prometheus still has controller targets"
    down_at=$((($(date +%s) - start) / 60))
    sleep 30
    # Scaled 20 s after start: at 5 min the alert (for: 5m) may be pending, never firing.
    record down "$start" --silent CinderCSIControllerDown@0 --silent CinderCSIControllerDown@5 \
        --fires "CinderCSIControllerDown@$((down_at + 7)):severity=critical,job=$controller_job" \
        --silent "CinderCSINodePluginsAbsent@$((down_at + 7))"
    k -n "$NAMESPACE" scale "$sts" --replicas="$replicas" >/dev/null
    rm -f "$dir/replicas"
    k -n "$NAMESPACE" rollout status "$sts" --timeout=5m >/dev/null
    step "passed in $((SECONDS - t0)) s"
}

case ${1:-all} in
    start) start ;;
    finish) finish ;;
    stop) stop ;;
    all)
        trap 'stop' EXIT
        start
        k create namespace "$ns" >/dev/null
        step "normal: an attach of the backend's usual speed"
        attach normal-attach 300
        finish
        ;;
    *) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
