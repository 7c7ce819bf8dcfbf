#!/usr/bin/env bash
# The lifecycle of volumes through the Kubernetes API, on the cluster tests/harness/k8s/cluster runs
# (either backend), then a leak check of the backend:
#
#   StorageClass (WaitForFirstConsumer) → PVC (stays Pending) → pod writes → VolumeSnapshot →
#   restore into a larger PVC → a pod reads it back (filesystem grown) → online expansion
#   while mounted → raw-block PVC → ReadWriteOncePod PVC (a second pod is refused) →
#   disruption: the node plugin pod killed while a volume is mounted (it comes back, the
#   mount keeps working, the next unpublish works) → disruption: the controller pod deleted
#   while a volume is being provisioned (the replacement finishes, exactly one volume) →
#   everything deleted → no volume, snapshot, attachment, loop device or mount left.
#
#   tests/harness/k8s/lifecycle.sh [--backend local|openstack]
#
# Fails (exit 1) at the first step that does not hold, printing what it saw; everything it
# created is deleted on every exit. Last line: "lifecycle: OK (N s)" or "lifecycle: FAILED: ...".
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=tests/harness/k8s/lib.sh
. "$repo/tests/harness/k8s/lib.sh"

k8s_test lifecycle cinder-csi-lifecycle "$@"
sc=cinder-csi-lifecycle
sc_now=cinder-csi-lifecycle-immediate
vsc=cinder-csi-lifecycle
TEST_CLUSTER_OBJECTS=("storageclass/$sc" "storageclass/$sc_now" "volumesnapshotclass/$vsc")
token="lifecycle-$$-$RANDOM"

k get csidriver cinder.csi.openstack.org >/dev/null || fail "no CSIDriver: is the cluster up (tests/harness/k8s/cluster up)?"
K8S_BACKEND=${K8S_BACKEND:-$(k8s_backend)}
step "backend $K8S_BACKEND"
[[ -z $(leak_check "$ns") ]] || fail "the backend has objects of namespace $ns from an earlier run: $(leak_check "$ns")"

step "StorageClasses, VolumeSnapshotClass, namespace"
# xfs: ext4 cannot grow online here (no CAP_SYS_RESOURCE, docs/TESTING.md).
{
    namespace_and_class "$ns" "$sc" WaitForFirstConsumer \
        'parameters: {csi.storage.k8s.io/fstype: xfs}' 'allowVolumeExpansion: true'
    cat <<EOF
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $sc_now}
provisioner: cinder.csi.openstack.org
volumeBindingMode: Immediate
reclaimPolicy: Delete
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {name: $vsc}
driver: cinder.csi.openstack.org
deletionPolicy: Delete
EOF
} | k apply -f - >/dev/null

capacity_of() { k -n "$ns" get pvc "$1" -o jsonpath='{.status.capacity.storage}'; }
mounted_kib() { k -n "$ns" exec "$1" -- df -k /data | awk 'NR == 2 {print $2}' | grep . || echo 0; }

# --- 1. WaitForFirstConsumer: the claim waits for its pod.
step "PVC data (1Gi, WaitForFirstConsumer) stays Pending without a pod"
pvc data 1Gi
sleep 5
[[ $(k -n "$ns" get pvc data -o jsonpath='{.status.phase}') == Pending ]] || fail "PVC data bound before any pod used it"
k -n "$ns" get events --field-selector involvedObject.name=data -o jsonpath='{.items[*].reason}' \
    | grep -q WaitForFirstConsumer || fail "no WaitForFirstConsumer event on PVC data"

step "pod writer writes the token"
pod writer data "echo $token > /data/token && sync && exec sleep 100000"
wait_ready writer
pv_data=$(pv_of data)
h_data=$(handle_of "$pv_data")
[[ -n $h_data ]] || fail "PVC data has no volume handle"
record_handle "$h_data" "$pv_data"
# The PV carries the node's zone (topology), and the attach went through a VolumeAttachment.
k get pv "$pv_data" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[*].matchExpressions[*].key}' \
    | grep -q 'topology.cinder.csi.openstack.org/zone' || fail "PV $pv_data has no zone node affinity"
va_attached "$pv_data" || fail "no attached VolumeAttachment for $pv_data"
[[ $(k -n "$ns" exec writer -- cat /data/token) == "$token" ]] || fail "token not readable in writer"

# --- 2. Snapshot, restore into a larger claim.
step "VolumeSnapshot of data"
k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: snap}
spec:
  volumeSnapshotClassName: $vsc
  source: {persistentVolumeClaimName: data}
EOF
k -n "$ns" wait --for=jsonpath='{.status.readyToUse}'=true volumesnapshot/snap --timeout=300s >/dev/null \
    || fail "snapshot not ready: $(k -n "$ns" get volumesnapshot snap -o jsonpath='{.status}')"
snap_handle=$(k get volumesnapshotcontent "$(k -n "$ns" get volumesnapshot snap -o jsonpath='{.status.boundVolumeSnapshotContentName}')" \
    -o jsonpath='{.status.snapshotHandle}')
[[ -n $snap_handle ]] || fail "no snapshot handle"
record_snapshot "$snap_handle"

step "restore into a 2Gi PVC; a pod reads the token and sees the grown filesystem"
pvc restored 2Gi "dataSource: {name: snap, kind: VolumeSnapshot, apiGroup: snapshot.storage.k8s.io}"
pod reader restored "test \"\$(cat /data/token)\" = $token || { echo token mismatch; exit 1; }
    kib=\$(df -k /data | awk 'NR == 2 {print \$2}'); echo size \$kib KiB
    test \$kib -gt 1800000 || { echo filesystem not grown; exit 1; }"
wait_phase reader Succeeded
record_handle "$(handle_of "$(pv_of restored)")" "$(pv_of restored)"
[[ $(capacity_of restored) == 2Gi ]] || fail "restored PVC capacity $(capacity_of restored), want 2Gi"

# --- 3. Online expansion while mounted.
step "expand data to 3Gi while writer has it mounted"
k -n "$ns" patch pvc data --type=merge -p '{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}' >/dev/null
k -n "$ns" wait --for=jsonpath='{.status.capacity.storage}'=3Gi pvc/data --timeout=300s >/dev/null \
    || fail "PVC data not expanded: $(k -n "$ns" get pvc data -o jsonpath='{.status}')"
for _ in $(seq 60); do
    (($(mounted_kib writer) > 2900000)) && break
    sleep 2
done
(($(mounted_kib writer) > 2900000)) || fail "writer's filesystem not grown: $(mounted_kib writer) KiB"
[[ $(k -n "$ns" exec writer -- cat /data/token) == "$token" ]] || fail "token lost after expansion"

# --- 4. Raw block.
step "raw-block PVC: write, read back, size"
PVC_SC=$sc pvc blk 1Gi "volumeMode: Block"
pod blockpod blk "dd if=/dev/urandom of=/tmp/a bs=1M count=8 2>/dev/null &&
    dd if=/tmp/a of=/dev/xvda bs=1M count=8 conv=fsync 2>/dev/null &&
    dd if=/dev/xvda of=/tmp/b bs=1M count=8 2>/dev/null && cmp /tmp/a /tmp/b &&
    test \$(blockdev --getsize64 /dev/xvda) = 1073741824" block
wait_phase blockpod Succeeded
record_handle "$(handle_of "$(pv_of blk)")" "$(pv_of blk)"

# --- 5. ReadWriteOncePod: one pod only.
step "ReadWriteOncePod PVC: the first pod runs, a second one is refused"
PVC_MODE=ReadWriteOncePod pvc rwop 1Gi
pod rwop1 rwop "echo one > /data/f && exec sleep 100000"
wait_ready rwop1
record_handle "$(handle_of "$(pv_of rwop)")" "$(pv_of rwop)"
pod rwop2 rwop "exec sleep 100000"
sleep 10
[[ $(k -n "$ns" get pod rwop2 -o jsonpath='{.status.phase}') == Pending ]] || fail "second pod of a ReadWriteOncePod claim is not Pending"
k -n "$ns" get pod rwop2 -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}' \
    | grep -qi 'ReadWriteOncePod' || fail "rwop2 is not held back for ReadWriteOncePod: $(k -n "$ns" get pod rwop2 -o jsonpath='{.status.conditions}')"
k -n "$ns" delete pod rwop2 rwop1 --wait=true --timeout=120s >/dev/null

# --- 6. Disruption: the node plugin killed while a volume is mounted.
step "disruption: node plugin pod killed while writer has data mounted"
# The node plugin of writer's node (on several nodes, not just any node's).
node_ns=$(driver_ns node)
writer_node=$(k -n "$ns" get pod writer -o jsonpath='{.spec.nodeName}')
node_plugin() {
    k -n "$node_ns" get pods -l app.kubernetes.io/name=cinder-csi,app.kubernetes.io/component=node \
        --field-selector "spec.nodeName=$writer_node,status.phase!=Failed" -o jsonpath='{.items[0].metadata.name}'
}
node_pod=$(node_plugin)
[[ -n $node_pod ]] || fail "no node plugin pod on $writer_node, writer's node"
node_uid=$(k -n "$node_ns" get pod "$node_pod" -o jsonpath='{.metadata.uid}')
k -n "$node_ns" delete pod "$node_pod" --grace-period=0 --force >/dev/null 2>&1
for _ in $(seq 90); do
    new=$(node_plugin 2>/dev/null || true)
    if [[ -n $new ]] && [[ $(k -n "$node_ns" get pod "$new" -o jsonpath='{.metadata.uid}') != "$node_uid" ]] &&
        k -n "$node_ns" wait --for=condition=Ready "pod/$new" --timeout=2s >/dev/null 2>&1; then
        break
    fi
    sleep 2
done
k -n "$node_ns" wait --for=condition=Ready "pod/$(node_plugin)" --timeout=10s >/dev/null \
    || fail "node plugin on $writer_node did not come back"
k -n "$ns" exec writer -- sh -c "echo after > /data/after && sync && cat /data/token" | grep -qx "$token" \
    || fail "writer's mount stopped working after the node plugin restart"
target=$(k -n "$ns" get pod writer -o jsonpath='{.metadata.uid}')
step "  unpublish after the restart: delete writer"
k -n "$ns" delete pod writer --wait=true --timeout=180s >/dev/null || fail "writer not deleted (unpublish failed?)"
if grep -q "/pods/$target/volumes/kubernetes.io~csi/$pv_data/mount" <(node_mountinfo); then
    fail "writer's publish target of $pv_data is still mounted"
fi

# --- 7. Disruption: the controller pod deleted while provisioning.
step "disruption: controller pod deleted while PVC dup is provisioned"
ctl_pod=$(plugin_pod controller)
PVC_SC=$sc_now pvc dup 1Gi
# Provisioning has started once the provisioner says so; kill the controller right then.
for _ in $(seq 100); do
    k -n "$ns" get events --field-selector involvedObject.name=dup -o jsonpath='{.items[*].reason}' \
        | grep -q Provisioning && break
    sleep 0.2
done
k -n "$K8S_DRIVER_NS" delete pod "$ctl_pod" --grace-period=0 --force >/dev/null 2>&1
k -n "$ns" wait --for=jsonpath='{.status.phase}'=Bound pvc/dup --timeout=300s >/dev/null \
    || fail "PVC dup not bound after the controller restart"
pv_dup=$(pv_of dup)
record_handle "$(handle_of "$pv_dup")" "$pv_dup"
n=$(backend_volumes | awk -v n="$pv_dup" '$2 == n' | wc -l)
[[ $n == 1 ]] || fail "$n backend volumes named $pv_dup (want exactly 1)"
made=$(backend_volumes | awk -v ns="$ns" '$3 == ns {print $2}' | sort)
want=$(printf '%s\n' "${RECORDED_PVS[@]}" | sort)
[[ $made == "$want" ]] || fail "backend volumes of namespace $ns: [$made], want one per PV [$want]"

# --- 8. Delete everything; nothing may be left.
step "delete everything"
k -n "$ns" delete pod --all --wait=true --timeout=180s >/dev/null
k -n "$ns" delete volumesnapshot --all --wait=true --timeout=180s >/dev/null
k -n "$ns" delete pvc --all --wait=true --timeout=180s >/dev/null
for pv in "${RECORDED_PVS[@]}"; do
    k wait --for=delete "pv/$pv" --timeout=300s >/dev/null 2>&1 || fail "PV $pv not deleted"
done
step "leak check"
leaks=$(leak_check "$ns")
[[ -z $leaks ]] || fail "leaks: $leaks"
echo "lifecycle: OK ($((SECONDS - t0)) s)"
