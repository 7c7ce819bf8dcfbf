#!/usr/bin/env bash
# Volumes across the nodes and zones of a multi-node cluster (`tests/k8s/cluster up --nodes 3`:
# node-1 and node-3 in zone-a, node-2 in zone-b), local backend, through the Kubernetes API:
#
#   1. zones: each node carries the driver's zone label, set by its kubelet from the node
#      plugin's NodeGetInfo; a WaitForFirstConsumer claim used by a pod pinned to node-2 gets a
#      zone-b volume, attached to node-2 only;
#   2. the volume follows its pod: data written on node-1 is read on node-3 (same zone) after
#      the first pod is gone;
#   3. single writer: a ReadWriteOnce volume in use on node-1 is never attached to node-3 too:
#      a second pod there stays ContainerCreating with a Multi-Attach error until the first is
#      gone, then runs;
#   then everything is deleted and nothing is left on any node.
# After each step the backend's own record of the volume (its zone, the servers it is attached
# to), the by-id link of each node, the loop devices and each node's mountinfo are checked,
# not logs.
#
#   tests/k8s/multinode.sh
#
# Fails (exit 1) at the first step that does not hold, printing what it saw; everything it
# created is deleted on every exit. Last line: "multinode: OK (N s)" or "multinode: FAILED: ...".
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/k8s/lib.sh
. "$repo/tests/k8s/lib.sh"

case ${1:-} in
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    "") ;;
    *) echo "multinode.sh: unknown argument '$1'" >&2; exit 2 ;;
esac

ns=cinder-csi-multinode
sc=cinder-csi-multinode
zone_key=topology.cinder.csi.openstack.org/zone
state=${K8S_STATE:-${CINDER_CSI_K8S_STATE:-/var/tmp/cinder-csi-k8s}}
t0=$SECONDS

fail() {
    echo "multinode: FAILED: $*"
    diagnose "$ns"
    exit 1
}
step() { printf '[%4d s] %s\n' $((SECONDS - t0)) "$*"; }

cleanup() {
    local rc=$?
    trap - EXIT
    step "cleanup"
    k delete namespace "$ns" --ignore-not-found --wait=true --timeout=5m >/dev/null 2>&1 || true
    k delete storageclass "$sc" --ignore-not-found >/dev/null 2>&1 || true
    exit "$rc"
}
trap cleanup EXIT

k get csidriver cinder.csi.openstack.org >/dev/null || fail "no CSIDriver: is the cluster up (tests/k8s/cluster up --nodes 3)?"
K8S_BACKEND=${K8S_BACKEND:-$(k8s_backend)}
[[ $K8S_BACKEND == local ]] || fail "the test cloud across nodes is not done yet: run on the local backend"
for i in 1 2 3; do
    k get node "node-$i" >/dev/null 2>&1 || fail "no node node-$i: the cluster must be up with --nodes 3"
done
dir=$(local_dir)
[[ -z $(leak_check "$ns") ]] || fail "the backend has objects of namespace $ns from an earlier run: $(leak_check "$ns")"

# The backend's record of volume $1: "ZONE SERVER..." (the servers it is attached to, sorted).
record() {
    python3 - "$dir/volumes/$1.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join([r.get("availability_zone", "local")] + sorted(a["server_id"] for a in r["attachments"])))
EOF
}
# The nodes whose by-id directory has volume $1's link, and the loop devices over its file.
linked_nodes() {
    local n
    for n in 1 2 3; do
        [[ -L $dir/by-id/node-$n/virtio-${1:0:20} ]] && printf 'node-%s ' "$n"
    done
    echo
}
loop_devices() { losetup -l -n -O NAME,BACK-FILE | awk -v f="$dir/volumes/$1.img" '$2 == f {print $1}' | wc -l; }
# The nodes whose own /var/lib/kubelet has a mount of volume $1 (staging: the handle's sha256;
# a pod's: its PV $2), from each node's mountinfo.
mounted_nodes() {
    local n sha pid
    sha=$(printf %s "$1" | sha256sum | cut -d' ' -f1)
    for n in 1 2 3; do
        pid=$(cat "$state/pids/nodens-n$n.pid")
        awk -v s="$sha" -v pv="/$2/" '$5 ~ "^/var/lib/kubelet/" && (index($5, s) || index($5, pv)) {found = 1}
            END {exit !found}' "/proc/$pid/mountinfo" && printf 'node-%s ' "$n"
    done
    echo
}
# expect_state HANDLE PV "ZONE SERVERS" "LINKED" LOOPS "MOUNTED": all four views agree.
expect_state() {
    local h=$1 pv=$2 got
    got="$(record "$h") | $(linked_nodes "$h")| $(loop_devices "$h") | $(mounted_nodes "$h" "$pv")"
    [[ $got == "$3 | $4| $5 | $6" ]] || fail "volume $h: record | by-id links | loop devices | mounts = '$got', want '$3 | $4| $5 | $6'"
    step "  backend: $(record "$h"); by-id: $(linked_nodes "$h"); loop devices: $5; mounted on: $(mounted_nodes "$h" "$pv")"
}

# pod NAME CLAIM NODE SCRIPT: busybox on NODE (the scheduler places it: nodeSelector) running
# SCRIPT with the claim at /data.
pod() {
    k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  nodeSelector: {kubernetes.io/hostname: $3}
  containers:
    - name: c
      image: $BUSYBOX_IMAGE
      imagePullPolicy: Never
      command: [sh, -c, '$4']
      volumeMounts: [{name: v, mountPath: /data}]
  volumes: [{name: v, persistentVolumeClaim: {claimName: $2}}]
EOF
}
pvc() {
    k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1}
spec:
  storageClassName: $sc
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
EOF
}
wait_ready() {
    k -n "$ns" wait --for=condition=Ready "pod/$1" --timeout="${2:-300s}" >/dev/null \
        || fail "pod $1 is not Ready: $(k -n "$ns" describe pod "$1" 2>&1 | tail -15)"
}
gone() {
    local node i
    node=$(node_of "$1")
    k -n "$ns" delete pod "$1" --wait=true --timeout=120s >/dev/null || fail "pod $1 not deleted"
    # Detached: the PV's VolumeAttachment to that node is gone (the controller unpublished); one
    # to another node may already be there (a pod waiting for the volume).
    for i in $(seq 120); do
        k get volumeattachments -o jsonpath='{range .items[*]}{.spec.source.persistentVolumeName} {.spec.nodeName}{"\n"}{end}' |
            grep -qx "$2 $node" || return 0
        sleep 1
    done
    fail "the VolumeAttachment of $2 to $node is still there 120 s after pod $1 was deleted"
}
pv_of() { k -n "$ns" get pvc "$1" -o jsonpath='{.spec.volumeName}'; }
handle_of() { k get pv "$1" -o jsonpath='{.spec.csi.volumeHandle}'; }
node_of() { k -n "$ns" get pod "$1" -o jsonpath='{.spec.nodeName}'; }

# --- 1. Zones.
step "each node's zone label, set by its kubelet from NodeGetInfo"
for want in "node-1 zone-a" "node-2 zone-b" "node-3 zone-a"; do
    n=${want% *}
    got=$(k get node "$n" -o json | python3 -c 'import json, sys
print(json.load(sys.stdin)["metadata"]["labels"].get(sys.argv[1], ""))' "$zone_key")
    [[ $got == "${want#* }" ]] || fail "node $n has $zone_key='$got', want ${want#* }"
    topo=$(k get csinode "$n" -o jsonpath='{.spec.drivers[?(@.name=="cinder.csi.openstack.org")].topologyKeys}')
    [[ $topo == *"$zone_key"* ]] || fail "CSINode $n has no $zone_key topology key: '$topo'"
done

k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $ns}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $sc}
provisioner: cinder.csi.openstack.org
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
EOF

step "WaitForFirstConsumer claim used by a pod on node-2 (zone-b)"
pvc zb
pod zb zb node-2 'echo zone-b > /data/f && sync && exec sleep 100000'
wait_ready zb
pv_zb=$(pv_of zb)
h_zb=$(handle_of "$pv_zb")
record_handle "$h_zb" "$pv_zb"
k get pv "$pv_zb" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[*].matchExpressions[*].values}' |
    grep -q zone-b || fail "PV $pv_zb is not pinned to zone-b: $(k get pv "$pv_zb" -o jsonpath='{.spec.nodeAffinity}')"
expect_state "$h_zb" "$pv_zb" "zone-b node-2" "node-2 " 1 "node-2 "

# --- 2. The volume follows its pod from node-1 to node-3.
step "pod on node-1 writes data"
pvc moved
token="multinode-$$-$RANDOM"
pod first moved node-1 "echo $token > /data/token && sync && exec sleep 100000"
wait_ready first
pv_moved=$(pv_of moved)
h_moved=$(handle_of "$pv_moved")
record_handle "$h_moved" "$pv_moved"
expect_state "$h_moved" "$pv_moved" "zone-a node-1" "node-1 " 1 "node-1 "
step "pod on node-1 deleted: detached everywhere"
gone first "$pv_moved"
expect_state "$h_moved" "$pv_moved" "zone-a" "" 0 ""
step "pod on node-3 reads the data"
pod second moved node-3 "test \"\$(cat /data/token)\" = $token && exec sleep 100000"
wait_ready second
[[ $(node_of second) == node-3 ]] || fail "pod second runs on $(node_of second), not node-3"
expect_state "$h_moved" "$pv_moved" "zone-a node-3" "node-3 " 1 "node-3 "

# --- 3. Single writer: never attached to two nodes.
step "ReadWriteOnce volume in use on node-1; a second pod on node-3 waits"
pvc single
pod holder single node-1 'exec sleep 100000'
wait_ready holder
pv_single=$(pv_of single)
h_single=$(handle_of "$pv_single")
record_handle "$h_single" "$pv_single"
pod waiter single node-3 'exec sleep 100000'
multi=""
for _ in $(seq 90); do
    multi=$(k -n "$ns" get events --field-selector involvedObject.name=waiter,reason=FailedAttachVolume \
        -o jsonpath='{.items[*].message}')
    [[ $multi == *Multi-Attach* ]] && break
    sleep 2
done
[[ $multi == *Multi-Attach* ]] || fail "no Multi-Attach error event for pod waiter: '$multi'"
reason=$(k -n "$ns" get pod waiter -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')
[[ $reason == ContainerCreating ]] || fail "pod waiter is '$reason', not ContainerCreating"
expect_state "$h_single" "$pv_single" "zone-a node-1" "node-1 " 1 "node-1 "
step "holder deleted: waiter runs on node-3, the volume attached there only"
gone holder "$pv_single"
wait_ready waiter
expect_state "$h_single" "$pv_single" "zone-a node-3" "node-3 " 1 "node-3 "

# --- Everything deleted: nothing left on any node.
step "delete everything"
k delete namespace "$ns" --wait=true --timeout=5m >/dev/null || fail "namespace $ns not deleted"
for i in $(seq 120); do
    [[ -z $(leak_check "$ns") ]] && break
    sleep 2
done
left=$(leak_check "$ns")
[[ -z $left ]] || fail "left behind: $left"
for h in "$h_zb" "$h_moved" "$h_single"; do
    [[ ! -e $dir/volumes/$h.json ]] || fail "backend record of $h still there"
done
echo "multinode: OK ($((SECONDS - t0)) s)"
