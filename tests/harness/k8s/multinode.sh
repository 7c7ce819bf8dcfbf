#!/usr/bin/env bash
# Volumes across the nodes and zones of a multi-node cluster (`tests/harness/k8s/cluster up --nodes 3`:
# node-1 and node-3 in zone-a, node-2 in zone-b), on either backend, through the Kubernetes API.
# The driver's zones: the local backend's zone-a and zone-b; on the test cloud
# (`--backend openstack`: node-I is Nova server node-I) Nova's and Cinder's `nova` and `az2`.
#
#   1. zones: each node carries the driver's zone label, set by its kubelet from the node
#      plugin's NodeGetInfo; a WaitForFirstConsumer claim used by a pod pinned to node-2 gets a
#      zone-b volume, attached to node-2 only;
#   2. the volume follows its pod: data written on node-1 is read on node-3 (same zone) after
#      the first pod is gone;
#   3. single writer: a ReadWriteOnce volume in use on node-1 is never attached to node-3 too:
#      a second pod there stays ContainerCreating with a Multi-Attach error until the first is
#      gone, then runs;
#   4. AllowedTopologies: an Immediate class allowed in zone-b only makes its volume there
#      before any pod exists, and the pod that uses it is scheduled to node-2;
#   5. drain: a Deployment's pod writes on node-1; `kubectl drain node-1` evicts it; its
#      replacement runs on node-3 with the data, node-1 has nothing of the volume left;
#   6. multi-attach: a raw block ReadWriteMany claim of the multi-attach type (local-multiattach;
#      on the test cloud multiattach) is used by
#      pods on node-1 and node-3 at once; each reads what the other wrote (O_DIRECT); the
#      pod on node-1 goes and the one on node-3 keeps working;
#   7. node lost: the zone-a node that holds a Deployment's volume (not the controller's) is
#      powered off (`tests/harness/k8s/cluster poweroff`: all its processes killed, its mounts
#      dropped); it goes NotReady and the volume stays attached to it (the cluster's
#      controller-manager never force-detaches on a timeout); the out-of-service taint
#      (non-graceful node shutdown) then frees it and the replacement pod runs on the other
#      zone-a node with the data; the node is powered on again and comes back with no mount
#      of the volume and its old pod's directory cleaned;
#   then everything is deleted and nothing is left on any node.
# After each step the backend's own record of the volume (its zone, the servers it is attached
# to: the local backend's record file; Cinder's volume and its attachments in any status, by
# its API), the by-id link of each node, the loop devices and each node's mountinfo are
# checked, not logs. While a single-writer volume moves (3, 5, 7), its backend record is also
# sampled in the background: it must never name two servers.
#
#   tests/harness/k8s/multinode.sh
#
# Fails (exit 1) at the first step that does not hold, printing what it saw; everything it
# created is deleted on every exit. Last line: "multinode: OK (N s)" or "multinode: FAILED: ...".
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=tests/harness/k8s/lib.sh
. "$repo/tests/harness/k8s/lib.sh"

case ${1:-} in
    -h | --help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    "") ;;
    *) echo "multinode.sh: unknown argument '$1'" >&2; exit 2 ;;
esac

ns=cinder-csi-multinode
sc=cinder-csi-multinode
zone_key=topology.cinder.csi.openstack.org/zone
state=${K8S_STATE:-${CINDER_CSI_K8S_STATE:-/var/tmp/cinder-csi-k8s}}
oos_taint=node.kubernetes.io/out-of-service=nodeshutdown:NoExecute
t0=$SECONDS
tmp=$(mktemp -d)
watcher=""
powered_off=""

fail() {
    echo "multinode: FAILED: $*"
    diagnose "$ns"
    exit 1
}
step() { printf '[%4d s] %s\n' $((SECONDS - t0)) "$*"; }

cleanup() {
    local rc=$? n
    trap - EXIT
    step "cleanup"
    set +e
    [[ -n ${watcher:-} ]] && kill "$watcher" 2>/dev/null
    # A node this test powered off, cordoned or tainted is given back as it was.
    [[ -n ${powered_off:-} ]] && "$repo/tests/harness/k8s/cluster" poweron "$powered_off" >/dev/null 2>&1
    for n in node-1 node-2 node-3; do
        k get node "$n" -o jsonpath='{.spec.taints[*].key}' 2>/dev/null | grep -qw "${oos_taint%%=*}" &&
            k taint node "$n" "$oos_taint-" >/dev/null 2>&1
        k uncordon "$n" >/dev/null 2>&1
    done
    k delete namespace "$ns" --ignore-not-found --wait=true --timeout=5m >/dev/null 2>&1 || true
    k delete storageclass "$sc" "$sc-ma" "$sc-zb" --ignore-not-found >/dev/null 2>&1 || true
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT

k get csidriver cinder.csi.openstack.org >/dev/null || fail "no CSIDriver: is the cluster up (tests/harness/k8s/cluster up --nodes 3)?"
K8S_BACKEND=${K8S_BACKEND:-$(k8s_backend)}
for i in 1 2 3; do
    k get node "node-$i" >/dev/null 2>&1 || fail "no node node-$i: the cluster must be up with --nodes 3"
done
case $K8S_BACKEND in
    local)
        dir=$(local_dir)
        za=zone-a zb=zone-b ma_type=local-multiattach ma_loops=1
        by_id() { echo "$dir/by-id/$1"; }
        backing_file() { echo "$dir/volumes/$1.img"; }
        ;;
    openstack)
        # node-I is the test cloud's server node-I (tests/harness/k8s/lib/cloudnet.sh).
        set -a
        eval "$("$repo/tests/harness/openstack/ostack" env)"
        set +a
        za=$OSTACK_NODE_1_AZ zb=$OSTACK_NODE_2_AZ ma_type=$OSTACK_MULTIATTACH_TYPE ma_loops=2
        [[ $OSTACK_NODE_3_AZ == "$za" && $za != "$zb" ]] || fail "the test cloud's node-1..3 are in zones $za $zb ${OSTACK_NODE_3_AZ:-?}, want A B A"
        by_id() { local v="OSTACK_NODE_${1#node-}_BY_ID_DIR"; echo "${!v}"; }
        backing_file() { echo "$OSTACK_VOLUME_DIR/volume-$1"; }
        ;;
    *) fail "unknown backend $K8S_BACKEND" ;;
esac
[[ -z $(leak_check "$ns") ]] || fail "the backend has objects of namespace $ns from an earlier run: $(leak_check "$ns")"

# The backend's record of volume $1: "ZONE SERVER..." (the servers it is attached to, sorted;
# on the test cloud named as the cluster's nodes), or "gone".
record() {
    if [[ $K8S_BACKEND == openstack ]]; then
        "$repo/tests/harness/k8s/lib/cinder_view.py" record "$1"
        return
    fi
    [[ -e $dir/volumes/$1.json ]] || { echo gone; return; }
    python3 - "$dir/volumes/$1.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join([r.get("availability_zone", "local")] + sorted(a["server_id"] for a in r["attachments"])))
EOF
}
# The nodes whose by-id directory has volume $1's link, and the loop devices over its file
# (the local backend: one per volume; the test hypervisor: one per attached server).
linked_nodes() {
    local n
    for n in 1 2 3; do
        [[ -L $(by_id "node-$n")/virtio-${1:0:20} ]] && printf 'node-%s ' "$n"
    done
    echo
}
loop_devices() { losetup -l -n -O NAME,BACK-FILE | awk -v f="$(backing_file "$1")" '$2 == f {print $1}' | wc -l; }
# The nodes whose own /var/lib/kubelet has a mount of volume $1 (staging: the handle's sha256;
# a pod's: its PV $2), from each node's mountinfo.
mounted_nodes() {
    local n sha pid mi kd
    sha=$(printf %s "$1" | sha256sum | cut -d' ' -f1)
    for n in 1 2 3; do
        # A powered-off node has no namespace: what is left of its mounts shows on the host.
        if [[ -f $state/pids/nodens-n$n.pid ]]; then
            pid=$(cat "$state/pids/nodens-n$n.pid")
            mi=/proc/$pid/mountinfo kd=/var/lib/kubelet/
        else
            mi=/proc/self/mountinfo kd=$state/nodes/n$n/kubelet/
        fi
        awk -v s="$sha" -v pv="/$2/" -v kd="$kd" 'index($5, kd) == 1 && (index($5, s) || index($5, pv)) {found = 1}
            END {exit !found}' "$mi" && printf 'node-%s ' "$n"
    done
    echo
}
# expect_state HANDLE PV "ZONE SERVERS" "LINKED" LOOPS "MOUNTED": all four views agree. They
# are given 15 s to settle: the test hypervisor follows Cinder's attachments by polling, as a
# guest's kernel sees a disk some time after Nova attached it.
expect_state() {
    local h=$1 pv=$2 got i
    for i in $(seq 15); do
        got="$(record "$h") | $(linked_nodes "$h")| $(loop_devices "$h") | $(mounted_nodes "$h" "$pv")"
        [[ $got == "$3 | $4| $5 | $6" ]] && break
        sleep 1
    done
    [[ $got == "$3 | $4| $5 | $6" ]] || fail "volume $h: record | by-id links | loop devices | mounts = '$got', want '$3 | $4| $5 | $6'"
    step "  backend | by-id links | loop devices | mounts: $got"
}

# watch_writers HANDLE: samples the backend's record of volume HANDLE in the background every
# 0.1 s (Cinder's attachments every 0.2 s); a moment it names more than one server is written
# to $tmp/writers (checked by no_two_writers). Single-writer volumes only.
watch_writers() {
    if [[ $K8S_BACKEND == openstack ]]; then
        "$repo/tests/harness/k8s/lib/cinder_view.py" watch "$1" "$tmp/writers" &
        watcher=$!
        return
    fi
    python3 - "$dir/volumes/$1.json" "$tmp/writers" <<'EOF' &
import json, sys, time
while True:
    try:
        servers = {a["server_id"] for a in json.load(open(sys.argv[1]))["attachments"]}
    except (OSError, ValueError):
        servers = set()
    if len(servers) > 1:
        with open(sys.argv[2], "a") as f:
            f.write(time.strftime("%H:%M:%S ") + " ".join(sorted(servers)) + "\n")
    time.sleep(0.1)
EOF
    watcher=$!
}
no_two_writers() {
    kill "$watcher" 2>/dev/null
    wait "$watcher" 2>/dev/null || true
    watcher=""
    [[ ! -s $tmp/writers ]] || fail "volume $1 was attached to two servers at once: $(head -3 "$tmp/writers")"
}

# The pod spec of busybox running SCRIPT ($2) with claim $1 at /data (or, with $3 = block,
# as the raw device /dev/xvda), indented by $4 spaces.
pod_spec() {
    local vol="volumeMounts: [{name: v, mountPath: /data}]"
    [[ ${3:-} == block ]] && vol="volumeDevices: [{name: v, devicePath: /dev/xvda}]"
    sed "s/^/$(printf "%${4}s")/" <<EOF
terminationGracePeriodSeconds: 1
containers:
  - name: c
    image: $BUSYBOX_IMAGE
    imagePullPolicy: Never
    command: [sh, -c, '$2']
    $vol
volumes: [{name: v, persistentVolumeClaim: {claimName: $1}}]
EOF
}
# pod NAME CLAIM NODE SCRIPT [block]: busybox on NODE (the scheduler places it: nodeSelector;
# "" = anywhere) running SCRIPT with the claim at /data (block: raw at /dev/xvda).
pod() {
    k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  nodeSelector: {${3:+kubernetes.io/hostname: $3}}
$(pod_spec "$2" "$4" "${5:-}" 2)
EOF
}
# deploy NAME CLAIM SCRIPT: a one-replica Deployment of pods labelled app=NAME in zone-a (the
# nodes' topology.kubernetes.io/zone: zone-a, or on the test cloud its Nova zone, as $za).
deploy() {
    k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      nodeSelector: {topology.kubernetes.io/zone: $za}
$(pod_spec "$2" "$3" "" 6)
EOF
}
# The Deployment's live pod (Ready, not terminating) of app $1, waiting up to $2 s.
live_pod() {
    local i p
    for i in $(seq "${2:-300}"); do
        p=$(k -n "$ns" get pods -l "app=$1" -o json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
    if ready and not p["metadata"].get("deletionTimestamp"):
        print(p["metadata"]["name"])')
        [[ $(wc -w <<<"$p") == 1 ]] && { echo "$p"; return 0; }
        sleep 1
    done
    fail "app $1 has no single Ready pod after ${2:-300} s: $(k -n "$ns" get pods -l "app=$1" -o wide 2>&1)"
}
# pvc NAME [CLASS] [ACCESS] [MODE]
pvc() {
    k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1}
spec:
  storageClassName: ${2:-$sc}
  accessModes: [${3:-ReadWriteOnce}]
  volumeMode: ${4:-Filesystem}
  resources: {requests: {storage: 1Gi}}
EOF
}
# The VolumeAttachment of PV $1 to node $2 gone (within 120 s).
detached_from() {
    local i
    for i in $(seq 120); do
        k get volumeattachments -o jsonpath='{range .items[*]}{.spec.source.persistentVolumeName} {.spec.nodeName}{"\n"}{end}' |
            grep -qx "$1 $2" || return 0
        sleep 1
    done
    fail "the VolumeAttachment of $1 to $2 is still there after 120 s"
}
wait_ready() {
    k -n "$ns" wait --for=condition=Ready "pod/$1" --timeout="${2:-300s}" >/dev/null \
        || fail "pod $1 is not Ready: $(k -n "$ns" describe pod "$1" 2>&1 | tail -15)"
}
gone() {
    local node
    node=$(node_of "$1")
    k -n "$ns" delete pod "$1" --wait=true --timeout=120s >/dev/null || fail "pod $1 not deleted"
    # Detached: the PV's VolumeAttachment to that node is gone (the controller unpublished); one
    # to another node may already be there (a pod waiting for the volume).
    detached_from "$2" "$node"
}
pv_of() { k -n "$ns" get pvc "$1" -o jsonpath='{.spec.volumeName}'; }
handle_of() { k get pv "$1" -o jsonpath='{.spec.csi.volumeHandle}'; }
node_of() { k -n "$ns" get pod "$1" -o jsonpath='{.spec.nodeName}'; }

# --- 1. Zones.
step "each node's zone label, set by its kubelet from NodeGetInfo"
for want in "node-1 $za" "node-2 $zb" "node-3 $za"; do
    n=${want% *}
    got=$(k get node "$n" -o json | python3 -c 'import json, sys
print(json.load(sys.stdin)["metadata"]["labels"].get(sys.argv[1], ""))' "$zone_key")
    [[ $got == "${want#* }" ]] || fail "node $n has $zone_key='$got', want ${want#* }"
    topo=$(k get csinode "$n" -o jsonpath='{.spec.drivers[?(@.name=="cinder.csi.openstack.org")].topologyKeys}')
    [[ $topo == *"$zone_key"* ]] || fail "CSINode $n has no $zone_key topology key: '$topo'"
done

namespace_and_class "$ns" "$sc" WaitForFirstConsumer | k apply -f - >/dev/null

step "WaitForFirstConsumer claim used by a pod on node-2 (zone-b: $zb)"
pvc zb
pod zb zb node-2 'echo zone-b > /data/f && sync && exec sleep 100000'
wait_ready zb
pv_zb=$(pv_of zb)
h_zb=$(handle_of "$pv_zb")
record_handle "$h_zb" "$pv_zb"
k get pv "$pv_zb" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[*].matchExpressions[*].values}' |
    grep -qw "$zb" || fail "PV $pv_zb is not pinned to $zb: $(k get pv "$pv_zb" -o jsonpath='{.spec.nodeAffinity}')"
expect_state "$h_zb" "$pv_zb" "$zb node-2" "node-2 " 1 "node-2 "

# --- 2. The volume follows its pod from node-1 to node-3.
step "pod on node-1 writes data"
pvc moved
token="multinode-$$-$RANDOM"
pod first moved node-1 "echo $token > /data/token && sync && exec sleep 100000"
wait_ready first
pv_moved=$(pv_of moved)
h_moved=$(handle_of "$pv_moved")
record_handle "$h_moved" "$pv_moved"
expect_state "$h_moved" "$pv_moved" "$za node-1" "node-1 " 1 "node-1 "
step "pod on node-1 deleted: detached everywhere"
gone first "$pv_moved"
expect_state "$h_moved" "$pv_moved" "$za" "" 0 ""
step "pod on node-3 reads the data"
pod second moved node-3 "test \"\$(cat /data/token)\" = $token && exec sleep 100000"
wait_ready second
[[ $(node_of second) == node-3 ]] || fail "pod second runs on $(node_of second), not node-3"
expect_state "$h_moved" "$pv_moved" "$za node-3" "node-3 " 1 "node-3 "

# --- 3. Single writer: never attached to two nodes.
step "ReadWriteOnce volume in use on node-1; a second pod on node-3 waits"
pvc single
pod holder single node-1 'exec sleep 100000'
wait_ready holder
pv_single=$(pv_of single)
h_single=$(handle_of "$pv_single")
record_handle "$h_single" "$pv_single"
watch_writers "$h_single"
pod waiter single node-3 'exec sleep 100000'
multi=""
for _ in $(seq 90); do
    multi=$(k -n "$ns" get events --field-selector involvedObject.name=waiter,reason=FailedAttachVolume \
        -o jsonpath='{.items[*].message}')
    [[ $multi == *Multi-Attach* ]] && break
    sleep 2
done
[[ $multi == *Multi-Attach* ]] || fail "no Multi-Attach error event for pod waiter: '$multi'"
# The attach/detach controller's event can come before the kubelet's first status of the pod
# (seen in CI on the test cloud: Multi-Attach at 1 s, no container status yet): wait for it.
reason=""
for _ in $(seq 30); do
    reason=$(k -n "$ns" get pod waiter -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')
    [[ -n $reason ]] && break
    sleep 1
done
[[ $reason == ContainerCreating ]] || fail "pod waiter is '$reason', not ContainerCreating"
expect_state "$h_single" "$pv_single" "$za node-1" "node-1 " 1 "node-1 "
step "holder deleted: waiter runs on node-3, the volume attached there only"
gone holder "$pv_single"
wait_ready waiter
no_two_writers "$h_single"
expect_state "$h_single" "$pv_single" "$za node-3" "node-3 " 1 "node-3 "
# The pods so far go (the nodes of steps 5-7 then hold only what those steps make).
k -n "$ns" delete pod zb second waiter --wait=true --timeout=120s >/dev/null || fail "pods of steps 1-3 not deleted"

# --- 4. AllowedTopologies: zone-b only, Immediate.
step "Immediate class allowed in zone-b ($zb) only: the volume is made there, its pod goes to node-2"
k apply -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $sc-zb}
provisioner: cinder.csi.openstack.org
volumeBindingMode: Immediate
reclaimPolicy: Delete
allowedTopologies:
  - matchLabelExpressions: [{key: $zone_key, values: [$zb]}]
EOF
pvc pinned "$sc-zb"
k -n "$ns" wait --for=jsonpath='{.status.phase}'=Bound pvc/pinned --timeout=120s >/dev/null ||
    fail "claim pinned not Bound: $(k -n "$ns" describe pvc pinned | tail -8)"
pv_pinned=$(pv_of pinned)
h_pinned=$(handle_of "$pv_pinned")
record_handle "$h_pinned" "$pv_pinned"
expect_state "$h_pinned" "$pv_pinned" "$zb" "" 0 ""
pod pinned pinned "" 'echo pinned > /data/f && sync && exec sleep 100000'
wait_ready pinned
[[ $(node_of pinned) == node-2 ]] || fail "pod pinned runs on $(node_of pinned), not node-2 (the only zone-b node)"
expect_state "$h_pinned" "$pv_pinned" "$zb node-2" "node-2 " 1 "node-2 "
gone pinned "$pv_pinned"

# --- 5. Drain: the volume follows a Deployment's pod off a drained node.
step "a Deployment's pod writes on node-1 (node-3 cordoned meanwhile)"
pvc drained
k cordon node-3 >/dev/null
token="drain-$$-$RANDOM"
deploy mover drained "test -e /data/token || echo $token > /data/token; sync; exec sleep 100000"
p=$(live_pod mover)
k uncordon node-3 >/dev/null
[[ $(node_of "$p") == node-1 ]] || fail "pod $p of mover runs on $(node_of "$p"), not node-1"
pv_drained=$(pv_of drained)
h_drained=$(handle_of "$pv_drained")
record_handle "$h_drained" "$pv_drained"
expect_state "$h_drained" "$pv_drained" "$za node-1" "node-1 " 1 "node-1 "
step "kubectl drain node-1: the replacement runs on node-3 with the data"
watch_writers "$h_drained"
k drain node-1 --pod-selector=app=mover --ignore-daemonsets --timeout=180s >"$tmp/drain" 2>&1 ||
    fail "kubectl drain node-1 failed: $(tail -3 "$tmp/drain")"
p=$(live_pod mover)
[[ $(node_of "$p") == node-3 ]] || fail "the replacement $p runs on $(node_of "$p"), not node-3"
[[ $(k -n "$ns" exec "$p" -- cat /data/token) == "$token" ]] || fail "the data written on node-1 is not on node-3"
detached_from "$pv_drained" node-1
no_two_writers "$h_drained"
expect_state "$h_drained" "$pv_drained" "$za node-3" "node-3 " 1 "node-3 "
k uncordon node-1 >/dev/null
k -n "$ns" delete deployment mover --wait=true >/dev/null
detached_from "$pv_drained" node-3

# --- 6. Multi-attach: a raw block RWX volume on two nodes at once.
step "raw block ReadWriteMany claim ($ma_type) used on node-1 and node-3 at once"
k apply -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $sc-ma}
provisioner: cinder.csi.openstack.org
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
parameters: {type: $ma_type}
EOF
pvc shared "$sc-ma" ReadWriteMany Block
# Block N of the device: write a 512-byte block holding $2 / read one (O_DIRECT: the device,
# not a page cache).
wblk() { k -n "$ns" exec "$1" -- sh -c "printf %-512s $3 | dd of=/dev/xvda bs=512 count=1 seek=$2 oflag=direct conv=notrunc 2>/dev/null"; }
rblk() { k -n "$ns" exec "$1" -- sh -c "dd if=/dev/xvda bs=512 count=1 skip=$2 iflag=direct 2>/dev/null" | tr -d ' '; }
pod ma shared node-1 'exec sleep 100000' block
wait_ready ma
pod mb shared node-3 'exec sleep 100000' block
wait_ready mb
pv_shared=$(pv_of shared)
h_shared=$(handle_of "$pv_shared")
record_handle "$h_shared" "$pv_shared"
expect_state "$h_shared" "$pv_shared" "$za node-1 node-3" "node-1 node-3 " "$ma_loops" "node-1 node-3 "
wblk ma 0 "from-node-1-$$" || fail "pod ma could not write its block"
wblk mb 1 "from-node-3-$$" || fail "pod mb could not write its block"
[[ $(rblk mb 0) == "from-node-1-$$" ]] || fail "pod mb on node-3 reads '$(rblk mb 0)' at block 0, not node-1's write"
[[ $(rblk ma 1) == "from-node-3-$$" ]] || fail "pod ma on node-1 reads '$(rblk ma 1)' at block 1, not node-3's write"
step "the pod on node-1 goes: node-3's keeps working"
gone ma "$pv_shared"
expect_state "$h_shared" "$pv_shared" "$za node-3" "node-3 " 1 "node-3 "
wblk mb 2 "after-$$" || fail "pod mb could not write after ma left"
[[ $(rblk mb 2) == "after-$$" && $(rblk mb 0) == "from-node-1-$$" ]] || fail "pod mb reads wrong data after ma left"
gone mb "$pv_shared"

# --- 7. Node lost: powered off, out-of-service taint, the volume moves.
cnode=$(k -n "$K8S_DRIVER_NS" get pod "$(plugin_pod controller)" -o jsonpath='{.spec.nodeName}')
victim=node-1 other=node-3
[[ $cnode == node-1 ]] && victim=node-3 other=node-1
step "a Deployment's pod writes on $victim (the controller runs on $cnode)"
pvc lost
k cordon "$other" >/dev/null
token="lost-$$-$RANDOM"
deploy survivor lost "test -e /data/token || echo $token > /data/token; sync; exec sleep 100000"
p=$(live_pod survivor)
k uncordon "$other" >/dev/null
[[ $(node_of "$p") == "$victim" ]] || fail "pod $p of survivor runs on $(node_of "$p"), not $victim"
old_uid=$(k -n "$ns" get pod "$p" -o jsonpath='{.metadata.uid}')
pv_lost=$(pv_of lost)
h_lost=$(handle_of "$pv_lost")
record_handle "$h_lost" "$pv_lost"
expect_state "$h_lost" "$pv_lost" "$za $victim" "$victim " 1 "$victim "
watch_writers "$h_lost"
step "$victim powered off: NotReady, the volume stays attached to it"
powered_off=$victim
"$repo/tests/harness/k8s/cluster" poweroff "$victim" >/dev/null
for _ in $(seq 180); do
    ready=$(k get node "$victim" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')
    [[ $ready != True ]] && break
    sleep 1
done
[[ $ready != True ]] || fail "$victim still Ready 180 s after its power-off"
expect_state "$h_lost" "$pv_lost" "$za $victim" "$victim " 1 ""
step "out-of-service taint on $victim: the volume is freed, the replacement runs on $other"
k taint node "$victim" "$oos_taint" >/dev/null
p=$(live_pod survivor 300)
[[ $(node_of "$p") == "$other" ]] || fail "the replacement $p runs on $(node_of "$p"), not $other"
[[ $(k -n "$ns" exec "$p" -- cat /data/token) == "$token" ]] || fail "the data written on $victim is not on $other"
detached_from "$pv_lost" "$victim"
no_two_writers "$h_lost"
expect_state "$h_lost" "$pv_lost" "$za $other" "$other " 1 "$other "
step "$victim powered on: Ready, nothing of the volume on it, its old pod's directory cleaned"
"$repo/tests/harness/k8s/cluster" poweron "$victim" >/dev/null
powered_off=""
k taint node "$victim" "$oos_taint-" >/dev/null
vn=${victim#node-}
for _ in $(seq 120); do
    [[ ! -e $state/nodes/n$vn/kubelet/pods/$old_uid ]] && break
    sleep 1
done
[[ ! -e $state/nodes/n$vn/kubelet/pods/$old_uid ]] ||
    fail "$victim still has its old pod's directory 120 s after it came back: $(find "$state/nodes/n$vn/kubelet/pods/$old_uid" | head -5)"
expect_state "$h_lost" "$pv_lost" "$za $other" "$other " 1 "$other "
k -n "$(driver_ns node)" wait --for=condition=Ready pod -l app.kubernetes.io/component=node \
    --field-selector "spec.nodeName=$victim" --timeout=180s >/dev/null ||
    fail "the node plugin on $victim is not Ready after it came back"

# --- Everything deleted: nothing left on any node.
step "delete everything"
k delete namespace "$ns" --wait=true --timeout=5m >/dev/null || fail "namespace $ns not deleted"
for i in $(seq 120); do
    [[ -z $(leak_check "$ns") ]] && break
    sleep 2
done
left=$(leak_check "$ns")
[[ -z $left ]] || fail "left behind: $left"
for h in "$h_zb" "$h_moved" "$h_single" "$h_pinned" "$h_drained" "$h_shared" "$h_lost"; do
    [[ $(record "$h") == gone ]] || fail "the backend still has volume $h: $(record "$h")"
done
echo "multinode: OK ($((SECONDS - t0)) s)"
