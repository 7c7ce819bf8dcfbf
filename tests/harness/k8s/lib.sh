# shellcheck shell=bash
# Helpers of the tests that run against the cluster of tests/harness/k8s/cluster (lifecycle.sh):
# kubectl with the cluster's kubeconfig, the driver's pods, and the backend's objects for
# the leak check. Sourced; needs $repo.

# The cluster's kubeconfig (and KUBECTL) as `tests/harness/k8s/cluster env` prints them.
k8s_env() {
    if [[ -z ${KUBECONFIG:-} && -x $repo/tests/harness/k8s/cluster ]]; then
        eval "$("$repo/tests/harness/k8s/cluster" env)"
    fi
    export KUBECONFIG=${KUBECONFIG:-${CINDER_CSI_K8S_STATE:-/var/tmp/cinder-csi-k8s}/admin.kubeconfig}
    if [[ -z ${KUBECTL:-} ]]; then
        KUBECTL=$("$repo/tests/harness/peers/build" --path kubectl 2>/dev/null) || true
        [[ -x $KUBECTL ]] || KUBECTL=kubectl
    fi
}
k8s_env
# The release's namespace: as tests/harness/k8s/cluster recorded it (kube-system, or cinder-csi on the
# test cloud's backend).
K8S_DRIVER_NS=${CINDER_CSI_K8S_NAMESPACE:-$(cat "${K8S_STATE:-${CINDER_CSI_K8S_STATE:-/var/tmp/cinder-csi-k8s}}/namespace" 2>/dev/null || echo kube-system)}
# The e2e suite's busybox (tests/harness/k8s/cluster builds and imports it; nothing is pulled).
BUSYBOX_IMAGE=${BUSYBOX_IMAGE:-registry.k8s.io/e2e-test-images/busybox:1.37.0-1}
RECORDED_PVS=()
RECORDED_HANDLES=()
RECORDED_SNAPSHOTS=()

k() { "$KUBECTL" "$@"; }

# --- The frame of a test script (lifecycle.sh, mkfs-options.sh).
# k8s_test NAME NAMESPACE "$@": parses the script's arguments (--backend local|openstack; -h
# prints its header comment), starts its clock (t0) and sets an EXIT trap that deletes the
# namespace, then the cluster-scoped objects in TEST_CLUSTER_OBJECTS (kind/name words), then
# runs the script's test_cleanup function if it has one, keeping the exit status. step and
# fail below print under NAME.
TEST_CLUSTER_OBJECTS=()
k8s_test() {
    K8S_TEST=$1 ns=$2
    shift 2
    while [[ $# -gt 0 ]]; do
        case $1 in
            --backend) K8S_BACKEND=$2; shift 2 ;;
            -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
            *) echo "$K8S_TEST: unknown argument '$1'" >&2; exit 2 ;;
        esac
    done
    t0=$SECONDS
    trap k8s_test_cleanup EXIT
}
k8s_test_cleanup() {
    local rc=$?
    trap - EXIT
    step "cleanup"
    k delete namespace "$ns" --ignore-not-found --wait=true --timeout=5m >/dev/null 2>&1 || true
    if ((${#TEST_CLUSTER_OBJECTS[@]})); then
        k delete "${TEST_CLUSTER_OBJECTS[@]}" --ignore-not-found >/dev/null 2>&1 || true
    fi
    if declare -F test_cleanup >/dev/null; then test_cleanup || true; fi
    exit "$rc"
}
step() { printf '[%4d s] %s\n' $((SECONDS - t0)) "$*"; }
# fail WHAT: the last line says what did not hold; then what helps find out why.
fail() {
    echo "$K8S_TEST: FAILED: $*"
    diagnose "$ns"
    exit 1
}

# namespace_and_class NS CLASS BINDING [LINE...]: the YAML of a test's Namespace and of a
# StorageClass of this driver (volumeBindingMode BINDING, reclaimPolicy Delete), each LINE added
# to the class as it is (parameters, allowVolumeExpansion, allowedTopologies).
namespace_and_class() {
    local ns=$1 sc=$2 binding=$3
    shift 3
    cat <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $ns}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $sc}
provisioner: cinder.csi.openstack.org
volumeBindingMode: $binding
reclaimPolicy: Delete
EOF
    printf '%s\n' "$@"
}

# pvc NAME SIZE [extra spec lines...]: a claim in $ns of class ${PVC_SC:-$sc}.
pvc() {
    local name=$1 size=$2
    shift 2
    k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $name}
spec:
  storageClassName: ${PVC_SC:-$sc}
  accessModes: [${PVC_MODE:-ReadWriteOnce}]
  resources: {requests: {storage: $size}}
$(printf '  %s\n' "$@")
EOF
}

# pod NAME CLAIM SCRIPT [block]: busybox in $ns running SCRIPT with the claim at /data (or the
# raw device at /dev/xvda), on node $POD_NODE if set. The script's exit status is the pod's.
pod() {
    local name=$1 claim=$2 script=$3 block=${4:-}
    local mount="volumeMounts: [{name: v, mountPath: /data}]"
    [[ $block == block ]] && mount="volumeDevices: [{name: v, devicePath: /dev/xvda}]"
    k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  nodeSelector: {${POD_NODE:+kubernetes.io/hostname: $POD_NODE}}
  containers:
    - name: c
      image: $BUSYBOX_IMAGE
      imagePullPolicy: Never
      command: [sh, -c]
      args:
        - |
$(sed 's/^/          /' <<<"$script")
      $mount
  volumes: [{name: v, persistentVolumeClaim: {claimName: $claim}}]
EOF
}

# wait_phase POD PHASE [TIMEOUT]
wait_phase() {
    k -n "$ns" wait --for=jsonpath='{.status.phase}'="$2" "pod/$1" --timeout="${3:-300s}" >/dev/null \
        || fail "pod $1 is not $2: $(k -n "$ns" get pod "$1" -o jsonpath='{.status.phase} {.status.conditions}' 2>&1); logs: $(k -n "$ns" logs "$1" 2>&1 | tail -5)"
}
wait_ready() {
    k -n "$ns" wait --for=condition=Ready "pod/$1" --timeout="${2:-300s}" >/dev/null \
        || fail "pod $1 is not Ready: $(k -n "$ns" describe pod "$1" 2>&1 | tail -15)"
}
pv_of() { k -n "$ns" get pvc "$1" -o jsonpath='{.spec.volumeName}'; }
handle_of() { k get pv "$1" -o jsonpath='{.spec.csi.volumeHandle}'; }

# The backend the installed driver uses: local when the controller runs --backend=local.
k8s_backend() {
    if [[ -n ${CINDER_CSI_K8S_BACKEND:-} ]]; then echo "$CINDER_CSI_K8S_BACKEND"; return; fi
    k -n "$K8S_DRIVER_NS" get pods -l app.kubernetes.io/name=cinder-csi,app.kubernetes.io/component=controller \
        -o jsonpath='{.items[0].spec.containers[?(@.name=="cinder-csi-plugin")].args}' |
        grep -q -- '--backend=local' && echo local || echo openstack
}

# The namespace of the driver's controller or node pods: the release's, or for the node
# plugin its own (the chart's node.namespace; tests/harness/k8s/cluster puts it in a privileged one).
driver_ns() {
    local ns=""
    if [[ $1 == node ]]; then
        ns=$(k get daemonset -A -l app.kubernetes.io/name=cinder-csi,app.kubernetes.io/component=node \
            -o jsonpath='{.items[0].metadata.namespace}' 2>/dev/null) || ns=""
    fi
    echo "${ns:-$K8S_DRIVER_NS}"
}

# The driver's controller or node pod (the first one).
plugin_pod() {
    k -n "$(driver_ns "$1")" get pods -l "app.kubernetes.io/name=cinder-csi,app.kubernetes.io/component=$1" \
        --field-selector=status.phase!=Failed -o jsonpath='{.items[0].metadata.name}'
}

# Whether PV $1 has an attached VolumeAttachment.
va_attached() {
    k get volumeattachments -o jsonpath="{range .items[?(@.spec.source.persistentVolumeName==\"$1\")]}{.status.attached}{end}" |
        grep -q true
}

record_handle() { RECORDED_HANDLES+=("$1"); RECORDED_PVS+=("$2"); }
record_snapshot() { RECORDED_SNAPSHOTS+=("$1"); }

# The local backend's state directory on the host: the hostPath behind the plugin's
# --local-dir (or CINDER_CSI_LOCAL_DIR) in the controller's pod spec.
local_dir() {
    if [[ -n ${CINDER_CSI_LOCAL_DIR_HOST:-} ]]; then echo "$CINDER_CSI_LOCAL_DIR_HOST"; return; fi
    k -n "$K8S_DRIVER_NS" get pod "$(plugin_pod controller)" -o json | python3 -c '
import json, sys
pod = json.load(sys.stdin)["spec"]
c = next(c for c in pod["containers"] if c["name"] == "cinder-csi-plugin")
d = next((a.split("=", 1)[1] for a in c.get("args", []) if a.startswith("--local-dir=")), None)
d = d or next((e["value"] for e in c.get("env", []) if e["name"] == "CINDER_CSI_LOCAL_DIR"), None)
assert d, "the controller has no --local-dir"
best = None
for m in c.get("volumeMounts", []):
    mp = m["mountPath"].rstrip("/")
    if d == mp or d.startswith(mp + "/"):
        v = next(v for v in pod["volumes"] if v["name"] == m["name"])
        if "hostPath" in v and (best is None or len(mp) > len(best[0])):
            best = (mp, v["hostPath"]["path"].rstrip("/"))
assert best, "--local-dir " + d + " is not on a hostPath volume"
print(best[1] + d[len(best[0]):])
'
}

# The nodes' mounts: the host's, and those of each node namespace tests/harness/k8s/cluster runs
# containerd and the kubelet in (lib/nodens.sh; one per worker node of a multi-node cluster).
# The kubelet dir's mounts show in both; a mount a namespace made anywhere else shows only there.
node_mountinfo() {
    cat /proc/self/mountinfo
    local f
    for f in "${K8S_STATE:-${CINDER_CSI_K8S_STATE:-/var/tmp/cinder-csi-k8s}}"/pids/nodens*.pid; do
        if [[ -f $f ]]; then cat "/proc/$(<"$f")/mountinfo" 2>/dev/null || true; fi
    done
}

ostack_api() { "$repo/tests/harness/openstack/ostack" api "$@"; }

# "ID NAME NAMESPACE" of every backend volume / snapshot; NAMESPACE is the Kubernetes one of
# its claim or VolumeSnapshot (the metadata the sidecars' --extra-create-metadata passes), "-"
# for objects no cluster made (the test cloud is shared: other tests' volumes are there too).
backend_objects() { # backend_objects volumes|snapshots
    local kind=$1
    case $K8S_BACKEND in
        local)
            python3 - "$(local_dir)/$kind" <<'EOF'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    r = json.load(open(f))
    md = r.get("metadata") or {}
    ns = md.get("csi.storage.k8s.io/pvc/namespace") or md.get("csi.storage.k8s.io/volumesnapshot/namespace") or "-"
    print(r["id"], r["name"] or "-", ns)
EOF
            ;;
        openstack)
            ostack_api block-storage GET "/$kind/detail" | python3 -c '
import json, sys
kind = sys.argv[1]
for v in json.load(sys.stdin)[kind]:
    md = v.get("metadata") or {}
    ns = md.get("csi.storage.k8s.io/pvc/namespace") or md.get("csi.storage.k8s.io/volumesnapshot/namespace") or "-"
    print(v["id"], v["name"] or "-", ns)' "$kind"
            ;;
    esac
}
backend_volumes() { backend_objects volumes; }
backend_snapshots() { backend_objects snapshots; }

# Prints what the test in namespace $1 left behind (nothing when clean): backend volumes and
# snapshots made for that namespace, the recorded ones still there, their attachments, by-id
# links, loop devices over their data, mounts of their PVs or staging dirs, VolumeAttachments.
leak_check() {
    local ns=$1 h pv s sha
    backend_volumes | awk -v ns="$ns" '$3 == ns {print "volume " $0}'
    backend_snapshots | awk -v ns="$ns" '$3 == ns {print "snapshot " $0}'
    for s in "${RECORDED_SNAPSHOTS[@]}"; do
        backend_snapshots | awk -v s="$s" '$1 == s {print "snapshot (recorded) " $0}'
    done
    for h in "${RECORDED_HANDLES[@]}"; do
        backend_volumes | awk -v h="$h" '$1 == h {print "volume (recorded) " $0}'
        losetup -l -n -O NAME,BACK-FILE 2>/dev/null | awk -v h="$h" 'index($2, h) {print "loop device " $0}'
        case $K8S_BACKEND in
            local)
                find "$(local_dir)/by-id" -name "virtio-${h:0:20}" 2>/dev/null | sed 's/^/by-id link /' || true
                ;;
            openstack)
                ls "${OSTACK_STATE:-/var/tmp/cinder-csi-ostack}"/nodes/*/by-id 2>/dev/null |
                    grep -F "virtio-${h:0:20}" | sed 's/^/by-id link /' || true
                ostack_api block-storage GET "/attachments?volume_id=$h" 2>/dev/null | python3 -c '
import json, sys
for a in json.load(sys.stdin).get("attachments", []):
    print("attachment", a["id"], a.get("instance"))' || true
                ;;
        esac
        sha=$(printf %s "$h" | sha256sum | cut -d' ' -f1)
        node_mountinfo | grep -F "$sha" | sed 's/^/mount /' || true
    done
    for pv in "${RECORDED_PVS[@]}"; do
        node_mountinfo | grep -F "/$pv/" | sed 's/^/mount /' || true
        k get volumeattachments -o jsonpath="{range .items[?(@.spec.source.persistentVolumeName==\"$pv\")]}{.metadata.name}{\"\\n\"}{end}" |
            sed 's/^/VolumeAttachment /'
    done
}

# What helps find out why a step failed.
diagnose() {
    local ns=$1
    echo "--- pods, claims, snapshots in $ns"
    k -n "$ns" get pods,pvc,volumesnapshot -o wide 2>&1 | head -40
    k -n "$ns" get events --sort-by=.lastTimestamp 2>&1 | tail -25
    echo "--- driver pods"
    k get pods -A -l app.kubernetes.io/name=cinder-csi -o wide 2>&1
    local p
    for p in controller node; do
        echo "--- $p plugin log (tail)"
        k -n "$(driver_ns "$p")" logs "$(plugin_pod "$p" 2>/dev/null)" -c cinder-csi-plugin --tail=30 2>&1 || true
    done
}
