#!/usr/bin/env bash
# The chart's default rendering through a real kube-apiserver's admission, without a cluster:
# a private etcd and kube-apiserver (the test peers, on their own ports and data, removed at
# exit), the controller in a namespace enforcing Pod Security `restricted` and the node plugin
# in one enforcing `privileged` (node.namespace), prometheus-operator's CRDs, then every object
# of `helm template` created for real (RBAC, Service, PDB, workloads, monitors, rules) and each
# workload's pod template created as a Pod, which is where Pod Security is enforced: the
# controller pod must be admitted under `restricted`, the node pod refused there (the check
# can fail) and admitted under `privileged`. Nothing runs the pods (no kubelet, no scheduler).
#
# usage: tests/harness/deploy/admission.sh    (root not needed; builds or reuses the peers)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$repo"
helm=${HELM:-.tools/helm/helm}
py=${PY:-.venv/bin/python}
PROM_OPERATOR=${PROM_OPERATOR:-github.com/prometheus-operator/prometheus-operator@v0.85.0}
etcd_port=${ADMISSION_ETCD_PORT:-23792}
api_port=${ADMISSION_API_PORT:-16445}
tmp=$(mktemp -d /var/tmp/cinder-csi-admission.XXXXXX)
pids=()
cleanup() {
    local rc=$? p
    trap - EXIT
    set +e
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
fail() { echo "admission: FAILED: $*" >&2; exit 1; }

apiserver=$(tests/harness/peers/build kube-apiserver | tail -1)
etcd=$(tests/harness/peers/build etcd | tail -1)
pki=$tmp/pki
mkdir -p "$pki"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" -days 1 \
    -subj "/CN=admission-ca" 2>/dev/null
cert() { # cert NAME SUBJECT [SAN]
    openssl genrsa -out "$pki/$1.key" 2048 2>/dev/null
    openssl req -new -key "$pki/$1.key" -subj "$2" -out "$pki/$1.csr" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth,serverAuth\n%s\n' "${3:+subjectAltName=$3}" >"$pki/$1.ext"
    openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
        -days 1 -extfile "$pki/$1.ext" -out "$pki/$1.crt" 2>/dev/null
}
cert apiserver "/CN=kube-apiserver" "IP:127.0.0.1"
cert admin "/O=system:masters/CN=admission-admin"
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null

"$etcd" --data-dir "$tmp/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls http://127.0.0.1:0 \
    >"$tmp/etcd.log" 2>&1 &
pids+=($!)
"$apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" --bind-address=127.0.0.1 \
    --secure-port="$api_port" --service-cluster-ip-range=10.254.0.0/24 --allow-privileged=true \
    --authorization-mode=RBAC --client-ca-file="$pki/ca.crt" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc >"$tmp/apiserver.log" 2>&1 &
pids+=($!)
cat >"$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: a, cluster: {certificate-authority: $pki/ca.crt, server: "https://127.0.0.1:$api_port"}}]
users: [{name: a, user: {client-certificate: $pki/admin.crt, client-key: $pki/admin.key}}]
contexts: [{name: a, context: {cluster: a, user: a}}]
current-context: a
EOF
export KUBECONFIG=$tmp/kubeconfig
for _ in $(seq 120); do kubectl get --raw /readyz >/dev/null 2>&1 && break; sleep 1; done
kubectl get --raw /readyz >/dev/null 2>&1 || { tail -20 "$tmp/apiserver.log"; fail "kube-apiserver not ready"; }
echo "admission: kube-apiserver $("$apiserver" --version | awk '{print $2}') on 127.0.0.1:$api_port"

crds=$(go mod download -json "$PROM_OPERATOR" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')/example/prometheus-operator-crd
for c in servicemonitors podmonitors prometheusrules; do
    kubectl apply --server-side -f "$crds/monitoring.coreos.com_$c.yaml" >/dev/null
done
kubectl wait --for=condition=Established --timeout=60s crd/servicemonitors.monitoring.coreos.com \
    crd/podmonitors.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com >/dev/null
for ns in cinder-csi:restricted cinder-csi-node:privileged; do
    kubectl create namespace "${ns%%:*}" >/dev/null
    kubectl label namespace "${ns%%:*}" "pod-security.kubernetes.io/enforce=${ns#*:}" \
        pod-security.kubernetes.io/enforce-version=latest >/dev/null
done

# The defaults, with the node plugin in its own namespace and the monitors on.
"$helm" template cinder-csi charts/cinder-csi -n cinder-csi --set node.namespace=cinder-csi-node \
    --set monitoring.serviceMonitor.enabled=true --set monitoring.podMonitor.enabled=true \
    --set monitoring.prometheusRule.enabled=true >"$tmp/chart.yaml"
kubectl create -f "$tmp/chart.yaml" >"$tmp/created" 2>&1 || { cat "$tmp/created"; fail "the chart's objects"; }
echo "admission: created $(wc -l <"$tmp/created") objects: $(awk '{print $1}' "$tmp/created" | cut -d/ -f1 | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}')"

# pod NAME NAMESPACE WORKLOAD: the workload's pod template as a Pod in NAMESPACE, created.
pod() {
    kubectl get -n "$3" "$4" -o json | "$py" -c '
import json, sys
w = json.load(sys.stdin)
t = w["spec"]["template"]
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": sys.argv[1], "labels": t["metadata"].get("labels", {})},
                  "spec": dict(t["spec"], nodeName="admission-node")}))' "$1" \
        | kubectl create -n "$2" -f - 2>&1
}
out=$(pod controller cinder-csi cinder-csi statefulset/cinder-csi-controller) \
    || fail "the controller pod was refused under restricted: $out"
echo "admission: controller pod admitted in namespace cinder-csi (enforce=restricted): $out"
# (Its ServiceAccount there too, so that only Pod Security can refuse it.)
kubectl -n cinder-csi create serviceaccount cinder-csi-node >/dev/null
if out=$(pod node-in-restricted cinder-csi cinder-csi-node daemonset/cinder-csi-node); then
    fail "the privileged node pod was admitted under restricted: the check proves nothing"
fi
grep -q 'violates PodSecurity "restricted:latest"' <<<"$out" || fail "node pod refused, but not by Pod Security: $out"
echo "admission: node pod refused under restricted, as it must be (${out:0:160}...)"
out=$(pod node cinder-csi-node cinder-csi-node daemonset/cinder-csi-node) \
    || fail "the node pod was refused under privileged: $out"
echo "admission: node pod admitted in namespace cinder-csi-node (enforce=privileged): $out"
# The monitors as the API server stored them (defaulted, pruned): what the chart rendered.
for m in servicemonitor/cinder-csi-controller podmonitor/cinder-csi-node; do
    ns=cinder-csi; [[ $m == podmonitor/cinder-csi-node ]] && ns=cinder-csi-node
    kubectl get -n "$ns" "$m" -o jsonpath='{..relabelings[0].replacement}' | grep -q '^cinder-csi-' \
        || fail "$m lost its job relabeling on the API server"
done
echo "admission: passed"
