#!/usr/bin/env bash
# Volume group snapshots through the Kubernetes API, on the cluster tests/harness/k8s/cluster runs
# (either backend), then a leak check of the backend:
#
#   3 PVCs labelled group=<run> in one pod, each with data of its own, and a writer appending
#   0, 1, 2, ... round-robin to a file on each (every write after the previous one returned)
#   → a VolumeGroupSnapshot of the label while it writes → ready, 3 member VolumeSnapshots →
#   3 PVCs restored from them in a second pod: each holds its source's own data, and together
#   the numbers 0..N with no gap (write-order consistency), N short of what was written →
#   VolumeGroupSnapshot deleted → its content gone, and the backend holds no group snapshot,
#   member snapshot or helper group → everything deleted → the leak check.
#
#   tests/harness/k8s/group-snapshots.sh [--backend local|openstack]
#
# Needs the groupsnapshot CRDs and the chart's sidecars.snapshotter.groupSnapshots (default).
# On the local backend the controller must see the node's mounts to freeze them (the kubelet
# dir in its pod with HostToContainer propagation). Last line: "group-snapshots: OK (N s)" or
# "group-snapshots: FAILED: ...".
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=tests/harness/k8s/lib.sh
. "$repo/tests/harness/k8s/lib.sh"

while [[ $# -gt 0 ]]; do
    case $1 in
        --backend) K8S_BACKEND=$2; shift 2 ;;
        -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "group-snapshots.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

ns=cinder-csi-groups
sc=cinder-csi-groups
vgsc=cinder-csi-groups
token="groups-$$-$RANDOM"
t0=$SECONDS

fail() {
    echo "group-snapshots: FAILED: $*"
    diagnose "$ns"
    k -n "$ns" get volumegroupsnapshot,volumesnapshot -o wide 2>&1 | head -20
    exit 1
}
step() { printf '[%4d s] %s\n' $((SECONDS - t0)) "$*"; }

cleanup() {
    local rc=$?
    trap - EXIT
    step "cleanup"
    k -n "$ns" delete volumegroupsnapshot --all --wait=true --timeout=3m >/dev/null 2>&1 || true
    k delete namespace "$ns" --ignore-not-found --wait=true --timeout=5m >/dev/null 2>&1 || true
    k delete storageclass "$sc" --ignore-not-found >/dev/null 2>&1 || true
    k delete volumegroupsnapshotclass "$vgsc" --ignore-not-found >/dev/null 2>&1 || true
    exit "$rc"
}
trap cleanup EXIT

# The backend's group snapshot objects: "KIND ID NAME" lines.
backend_groups() {
    case $K8S_BACKEND in
        local)
            python3 - "$(local_dir)" <<'EOF'
import glob, json, os, sys
d = sys.argv[1]
for f in sorted(glob.glob(d + "/group-snapshots/*.json")):
    r = json.load(open(f))
    print("group-snapshot", r["id"], r["name"])
if os.path.exists(d + "/frozen.json"):
    print("frozen.json", "-", open(d + "/frozen.json").read().strip())
EOF
            ;;
        openstack)
            ostack_api block-storage GET /group_snapshots/detail | python3 -c '
import json, sys
for g in json.load(sys.stdin)["group_snapshots"]:
    print("group-snapshot", g["id"], g["name"])'
            ostack_api block-storage GET /groups/detail | python3 -c '
import json, sys
for g in json.load(sys.stdin)["groups"]:
    if g["name"].startswith("csi-group-"):
        print("helper-group", g["id"], g["name"])'
            ;;
    esac
}

k get csidriver cinder.csi.openstack.org >/dev/null || fail "no CSIDriver: is the cluster up (tests/harness/k8s/cluster up)?"
k get crd volumegroupsnapshots.groupsnapshot.storage.k8s.io >/dev/null || fail "no VolumeGroupSnapshot CRD"
K8S_BACKEND=${K8S_BACKEND:-$(k8s_backend)}
step "backend $K8S_BACKEND"
[[ -z $(leak_check "$ns") ]] || fail "the backend has objects of namespace $ns from an earlier run: $(leak_check "$ns")"
[[ -z $(backend_groups) ]] || fail "the backend has group snapshot objects from an earlier run: $(backend_groups)"

# A Cinder group holds volumes of one backend: on the test cloud the members get its volume
# type pinned to one backend (a zone may have several), and, on several nodes, the class is
# allowed in that backend's zone only (the first of OSTACK_AVAILABILITY_ZONES: the type is
# pinned to the cloud's first backend, whose zone that list starts with), so the writer pod
# lands where Cinder can place the members.
sc_params="csi.storage.k8s.io/fstype: xfs" sc_topo=""
if [[ $K8S_BACKEND == openstack ]]; then
    read -r gtype gzone < <(eval "$("$repo/tests/harness/openstack/ostack" env)"; echo "${OSTACK_GROUP_VOLUME_TYPE:-} ${OSTACK_AVAILABILITY_ZONES%% *}")
    [[ -n $gtype ]] || fail "the test cloud's env has no OSTACK_GROUP_VOLUME_TYPE (an older ostack up?)"
    sc_params+=", type: $gtype"
    sc_topo="allowedTopologies: [{matchLabelExpressions: [{key: topology.cinder.csi.openstack.org/zone, values: [$gzone]}]}]"
fi

step "StorageClass, VolumeGroupSnapshotClass, namespace, 3 PVCs and a pod writing to them"
{
    namespace_and_class "$ns" "$sc" WaitForFirstConsumer "parameters: {$sc_params}" "$sc_topo"
    cat <<EOF
---
apiVersion: groupsnapshot.storage.k8s.io/v1
kind: VolumeGroupSnapshotClass
metadata: {name: $vgsc}
driver: cinder.csi.openstack.org
deletionPolicy: Delete
EOF
} | k apply -f - >/dev/null
pvcs=""
for i in 0 1 2; do
    pvcs+="
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: src-$i, namespace: $ns, labels: {group: $token}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: $sc
  resources: {requests: {storage: 1Gi}}"
done
k apply -f - >/dev/null <<<"$pvcs"
# The writer: each source gets its own file first, then the sequence, one write at a time.
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: writer, namespace: $ns}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: w
      image: $BUSYBOX_IMAGE
      command: [sh, -c]
      args:
        - |
          for i in 0 1 2; do echo "source \$i of $token" > /v\$i/own.txt; done; sync
          n=0; while true; do echo \$n >> /v\$((n % 3))/seq.log; n=\$((n + 1)); done
      volumeMounts:
        - {name: v0, mountPath: /v0}
        - {name: v1, mountPath: /v1}
        - {name: v2, mountPath: /v2}
  volumes:
    - {name: v0, persistentVolumeClaim: {claimName: src-0}}
    - {name: v1, persistentVolumeClaim: {claimName: src-1}}
    - {name: v2, persistentVolumeClaim: {claimName: src-2}}
EOF
k -n "$ns" wait --for=condition=Ready pod/writer --timeout=5m >/dev/null || fail "writer pod not ready"
for i in 0 1 2; do
    record_handle "$(k get pv "$(k -n "$ns" get pvc "src-$i" -o jsonpath='{.spec.volumeName}')" \
        -o jsonpath='{.spec.csi.volumeHandle}')" "$(k -n "$ns" get pvc "src-$i" -o jsonpath='{.spec.volumeName}')"
done
count() { k -n "$ns" exec writer -- sh -c 'cat /v0/seq.log /v1/seq.log /v2/seq.log 2>/dev/null | wc -l'; }
for _ in $(seq 1 120); do (($(count) > 3000)) && break; sleep 0.5; done
(($(count) > 3000)) || fail "the writer did not write"

step "VolumeGroupSnapshot of label group=$token while the pod writes"
k apply -f - >/dev/null <<EOF
apiVersion: groupsnapshot.storage.k8s.io/v1
kind: VolumeGroupSnapshot
metadata: {name: group, namespace: $ns}
spec:
  volumeGroupSnapshotClassName: $vgsc
  source: {selector: {matchLabels: {group: $token}}}
EOF
k -n "$ns" wait volumegroupsnapshot/group --for=jsonpath='{.status.readyToUse}'=true --timeout=5m >/dev/null \
    || fail "the VolumeGroupSnapshot is not ready: $(k -n "$ns" get volumegroupsnapshot group -o jsonpath='{.status}')"
written_by_then=$(count)
sleep 2
k -n "$ns" delete pod writer --wait=true --timeout=2m >/dev/null
content=$(k -n "$ns" get volumegroupsnapshot group -o jsonpath='{.status.boundVolumeGroupSnapshotContentName}')
uid=$(k -n "$ns" get volumegroupsnapshot group -o jsonpath='{.metadata.uid}')
handle=$(k get volumegroupsnapshotcontent "$content" -o jsonpath='{.status.volumeGroupSnapshotHandle}')
step "ready: content $content, group snapshot $handle"
# The member VolumeSnapshots, named as the snapshot-controller names them: snapshot-sha256(VGS uid + volume handle).
restores=""
for i in 0 1 2; do
    h=$(k get pv "$(k -n "$ns" get pvc "src-$i" -o jsonpath='{.spec.volumeName}')" -o jsonpath='{.spec.csi.volumeHandle}')
    vs=snapshot-$(printf %s "$uid$h" | sha256sum | cut -d' ' -f1)
    k -n "$ns" wait "volumesnapshot/$vs" --for=jsonpath='{.status.readyToUse}'=true --timeout=2m >/dev/null \
        || fail "member VolumeSnapshot $vs of src-$i not ready"
    record_snapshot "$(k get volumesnapshotcontent "$(k -n "$ns" get volumesnapshot "$vs" \
        -o jsonpath='{.status.boundVolumeSnapshotContentName}')" -o jsonpath='{.status.snapshotHandle}')"
    restores+="
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: restore-$i, namespace: $ns}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: $sc
  resources: {requests: {storage: 1Gi}}
  dataSource: {apiGroup: snapshot.storage.k8s.io, kind: VolumeSnapshot, name: $vs}"
done

step "3 PVCs restored from the members, read in one pod"
k apply -f - >/dev/null <<<"$restores"
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: reader, namespace: $ns}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - {name: r, image: $BUSYBOX_IMAGE, command: [sleep, "3600"],
       volumeMounts: [{name: v0, mountPath: /v0}, {name: v1, mountPath: /v1}, {name: v2, mountPath: /v2}]}
  volumes:
    - {name: v0, persistentVolumeClaim: {claimName: restore-0}}
    - {name: v1, persistentVolumeClaim: {claimName: restore-1}}
    - {name: v2, persistentVolumeClaim: {claimName: restore-2}}
EOF
k -n "$ns" wait --for=condition=Ready pod/reader --timeout=5m >/dev/null || fail "reader pod not ready"
for i in 0 1 2; do
    got=$(k -n "$ns" exec reader -- cat "/v$i/own.txt")
    [[ $got == "source $i of $token" ]] || fail "restore-$i holds '$got', not its source's data"
done
k -n "$ns" exec reader -- sh -c 'for i in 0 1 2; do sed "s/^/$i /" /v$i/seq.log; done' >"/tmp/$token.seq"
verdict=$(python3 - "/tmp/$token.seq" "$written_by_then" <<'EOF'
import sys
nums, bad = set(), []
for line in open(sys.argv[1]):
    vol, n = line.split()
    n = int(n)
    if n % 3 != int(vol):
        bad.append(line.strip())
    nums.add(n)
if bad:
    print("numbers on the wrong volume:", bad[:5]); sys.exit(1)
if not nums:
    print("no number in the restores"); sys.exit(1)
last = max(nums)
gaps = [n for n in range(last + 1) if n not in nums]
if gaps:
    print(f"0..{last} with gaps at {gaps[:10]}: not one point in time"); sys.exit(1)
print(f"the restores hold writes 0..{last} with no gap ({sys.argv[2]} written when the group snapshot was ready)")
EOF
) || fail "$verdict"
rm -f "/tmp/$token.seq"
step "$verdict"

step "delete the restores and the VolumeGroupSnapshot"
k -n "$ns" delete pod reader --wait=true --timeout=2m >/dev/null
for i in 0 1 2; do
    pv=$(k -n "$ns" get pvc "restore-$i" -o jsonpath='{.spec.volumeName}')
    record_handle "$(k get pv "$pv" -o jsonpath='{.spec.csi.volumeHandle}')" "$pv"
done
k -n "$ns" delete pvc restore-0 restore-1 restore-2 --wait=true --timeout=3m >/dev/null
k -n "$ns" delete volumegroupsnapshot group --wait=true --timeout=3m >/dev/null || fail "VolumeGroupSnapshot not deleted"
for _ in $(seq 1 90); do
    k get volumegroupsnapshotcontent "$content" >/dev/null 2>&1 || break
    sleep 2
done
k get volumegroupsnapshotcontent "$content" >/dev/null 2>&1 && fail "content $content still there"
left=$(backend_groups)
[[ -z $left ]] || fail "the backend still holds: $left"
step "the backend holds no group snapshot, member snapshot or helper group"

step "delete the sources"
k -n "$ns" delete pvc src-0 src-1 src-2 --wait=true --timeout=3m >/dev/null
for pv in "${RECORDED_PVS[@]}"; do
    for _ in $(seq 1 90); do k get pv "$pv" >/dev/null 2>&1 || break; sleep 2; done
done
left=$(leak_check "$ns")
[[ -z $left ]] || fail "left behind: $left"
echo "group-snapshots: OK ($((SECONDS - t0)) s)"
