#!/usr/bin/env bash
# In-tree `kubernetes.io/cinder` volumes through Kubernetes' CSI migration (csi-translation-lib
# in the controller-manager, kubelet and sidecars), on the cluster tests/harness/k8s/cluster runs over
# the test cloud (`up --backend openstack -f tests/harness/k8s/values-requests.yaml`: the sidecars
# log every CSI request they send):
#
#   the kubelet lists kubernetes.io/cinder among the CSINode's migrated plugins →
#   two volumes made through Cinder's API, and PVs with `spec.cinder.volumeID` over them (ext4
#   with the old failure-domain.beta zone labels, xfs with a topology.kubernetes.io/zone node
#   affinity), bound to claims, a pod writing and reading each (attached to this node in
#   Cinder, mounted with that filesystem) → the ext4 one again through a `readOnly` PV (the
#   data is there, a write fails, the mount is ro; the pod's claim says readOnly: the kubelet
#   takes NodePublish's readonly from there, never from the PV's spec.cinder.readOnly) → the xfs
#   one as an inline `cinder:` volume of a pod (attached through a VolumeAttachment with the
#   inline spec) → a StorageClass `provisioner: kubernetes.io/cinder` with in-tree parameters
#   (type, availability, fsType) provisions through the translation (the PV stays in-tree form;
#   Cinder has the type and zone) → expanded while mounted (Cinder's size, the pod's filesystem)
#   → a VolumeSnapshot of that in-tree PV is refused by the snapshot-controller with its reason
#   (no content, no Cinder snapshot) → everything deleted: the class's volume deleted through the
#   translation, the hand-made ones by Cinder's API; nothing left.
# Then prints the translated CSI requests the sidecars sent for these volumes and checks them
# against what Cinder and the cluster show; a leak check ends it.
#
# The local backend too (`up -f tests/harness/k8s/values-requests.yaml`): the translation needs only
# the volume id to be the backend's. What cannot be the same there: no Cinder API to make the
# hand-made volumes with, so they are made through the driver (`cinder-csi ctl create-volume`
# in the controller pod: an operator's CreateVolume, the volume raw as Cinder's would be) and
# deleted the same way; Cinder's view (status, attachment's server, type, zone, size, snapshots)
# is the backend's own records ($local_dir/volumes/ID.json, which keep Cinder's fields); the
# in-tree class's `type` is one of the backend's types (local-multiattach: not the default, so
# the parameter must have come through the translation), its `availability` the node's zone.
#
#   tests/harness/k8s/intree.sh [--backend openstack|local]
#
# Last line: "intree: OK (N s)" or "intree: FAILED: ...".
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=tests/harness/k8s/lib.sh
. "$repo/tests/harness/k8s/lib.sh"

k8s_test intree cinder-csi-intree "$@"
sc=cinder-csi-intree
TEST_CLUSTER_OBJECTS=("storageclass/$sc" "volumesnapshotclass/$sc" pv/cinder-csi-intree-ext4
    pv/cinder-csi-intree-xfs pv/cinder-csi-intree-ro)
token="intree-$$-$RANDOM"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
made=()
beta_zone=failure-domain.beta.kubernetes.io/zone
ga_zone=topology.kubernetes.io/zone

k get csidriver cinder.csi.openstack.org >/dev/null || fail "no CSIDriver: is the cluster up (tests/harness/k8s/cluster up)?"
K8S_BACKEND=${K8S_BACKEND:-$(k8s_backend)}
[[ $K8S_BACKEND == openstack || $K8S_BACKEND == local ]] || fail "unknown backend $K8S_BACKEND"
[[ -z $(leak_check "$ns") ]] || fail "the backend has objects of namespace $ns from an earlier run: $(leak_check "$ns")"
ctl=$(plugin_pod controller)

cinder() { ostack_api block-storage "$@"; }
# The local backend: the driver's own CSI calls through `cinder-csi ctl` in the controller pod
# (its CSI_ENDPOINT), and its records on the host.
bk=Cinder
[[ $K8S_BACKEND != local ]] || { ldir=$(local_dir); bk="the local backend"; }
drv_ctl() { k -n "$K8S_DRIVER_NS" exec "$ctl" -c cinder-csi-plugin -- /usr/local/bin/cinder-csi ctl -o json "$@"; }
# vol ID FIELD...: fields of the Cinder volume (python expressions over v; on the local backend
# its record, with Cinder's field names), or "gone".
vol() {
    local id=$1 src
    shift
    case $K8S_BACKEND in
        openstack) src=$(cinder GET "/volumes/$id" 2>/dev/null) || { echo gone; return 0; } ;;
        local)
            [[ -f $ldir/volumes/$id.json ]] || { echo gone; return 0; }
            src=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); r["size"] = r["size_gib"]; print(json.dumps({"volume": r}))' \
                "$ldir/volumes/$id.json" 2>/dev/null) || { echo gone; return 0; }
            ;;
    esac
    python3 -c '
import json, sys
v = json.load(sys.stdin)["volume"]
print(" ".join(str(eval(e, {"v": v})) for e in sys.argv[1:]))' "$@" <<<"$src" 2>/dev/null || echo gone
}
# del_vol ID: deletes a hand-made volume (Cinder's API; the driver on the local backend).
del_vol() {
    case $K8S_BACKEND in
        openstack) cinder DELETE "/volumes/$1" >/dev/null ;;
        local) drv_ctl delete-volume "$1" >/dev/null ;;
    esac
}
# snaps_of ID: the backend's snapshots of the volume.
snaps_of() {
    case $K8S_BACKEND in
        openstack)
            cinder GET "/snapshots?volume_id=$1" | python3 -c '
import json, sys
print(" ".join(s["id"] for s in json.load(sys.stdin)["snapshots"] if s["volume_id"] == sys.argv[1]))' "$1"
            ;;
        local)
            python3 -c '
import glob, json, sys
print(" ".join(r["id"] for r in (json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/*.json"))) if r.get("volume_id") == sys.argv[2]))' \
                "$ldir/snapshots" "$1"
            ;;
    esac
}
wait_vol() { # wait_vol ID STATUS
    local s
    for _ in $(seq 90); do
        s=$(vol "$1" 'v["status"]')
        [[ $s == "$2" ]] && return 0
        sleep 2
    done
    fail "$bk volume $1 is $s, not $2"
}
test_cleanup() {
    local id s
    for id in "${made[@]}"; do
        # Detaching follows the pods' deletion: wait (bounded) until Cinder lets it go.
        for _ in $(seq 60); do
            s=$(vol "$id" 'v["status"]')
            [[ $s == in-use || $s == detaching || $s == attaching ]] || break
            sleep 2
        done
        [[ $s == gone ]] || del_vol "$id" 2>/dev/null || echo "cleanup: volume $id ($s) not deleted"
    done
    if [[ -n ${labelled:-} ]]; then k label node "$node" "$beta_zone-" "$ga_zone-" >/dev/null 2>&1 || true; fi
}

# staged_fs VOLUME_ID: the filesystem of the volume's staging mount on the node.
staged_fs() {
    local sha
    sha=$(printf %s "$1" | sha256sum | cut -d' ' -f1)
    node_mountinfo | awk -v s="$sha" 'index($5, s) && $5 ~ /\/globalmount$/ {
        for (i = 7; $i != "-"; i++) {}
        print $(i + 1); exit }'
}
# ready POD: the pod is Ready; fails at once when its container ended (its log says why).
ready() {
    local phase
    for _ in $(seq 150); do
        phase=$(k -n "$ns" get pod "$1" -o jsonpath='{.status.phase}')
        [[ $phase == Failed || $phase == Succeeded ]] &&
            fail "pod $1 ended ($phase); its log: $(k -n "$ns" logs "$1" 2>&1 | tail -5)"
        [[ $(k -n "$ns" get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]] && return 0
        sleep 2
    done
    fail "pod $1 is not Ready after 300 s: $(k -n "$ns" describe pod "$1" 2>&1 | tail -15)"
}

# --- 0. What the migration needs.
node=$(k get nodes -o jsonpath='{.items[0].metadata.name}')
# Every pod on that node (several nodes: the requests name its server).
POD_NODE=$node
zone=$(k get node "$node" -o jsonpath='{.metadata.labels.topology\.cinder\.csi\.openstack\.org/zone}')
[[ -n $zone ]] || fail "node $node has no topology.cinder.csi.openstack.org/zone label"
migrated=$(k get csinode "$node" -o jsonpath='{.metadata.annotations.storage\.alpha\.kubernetes\.io/migrated-plugins}')
step "node $node, zone $zone; CSINode migrated-plugins: $migrated"
[[ ,$migrated, == *,kubernetes.io/cinder,* ]] || fail "the kubelet does not list kubernetes.io/cinder as migrated on CSINode $node"
for c in csi-provisioner csi-attacher csi-resizer; do
    k -n "$K8S_DRIVER_NS" get pod "$ctl" -o jsonpath="{.spec.containers[?(@.name==\"$c\")].args}" | grep -q -- '--v=5' ||
        fail "$c does not log its requests (--v=5): bring the cluster up with -f tests/harness/k8s/values-requests.yaml"
done
# A cluster of the in-tree era: the cloud provider labelled the node with its zone (here done
# by the test, and undone after, unless the node has such labels already).
if [[ -z $(k get node "$node" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}') ]]; then
    labelled=1
    k label node "$node" "$beta_zone=$zone" "$ga_zone=$zone" >/dev/null
fi

k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $ns}
EOF

# --- 1. Volumes made through Cinder's API (the local backend: through the driver), in-tree PVs
# over them.
new_volume() { # new_volume NAME → id
    case $K8S_BACKEND in
        openstack)
            cinder POST /volumes "{\"volume\": {\"size\": 1, \"name\": \"$1\", \"availability_zone\": \"$zone\", \"volume_type\": \"standard\"}}" |
                python3 -c 'import json, sys; print(json.load(sys.stdin)["volume"]["id"])'
            ;;
        local)
            drv_ctl create-volume "$1" --size 1Gi --requisite "topology.cinder.csi.openstack.org/zone=$zone" |
                python3 -c 'import json, sys; print(json.load(sys.stdin)["volume_id"])'
            ;;
    esac
}
# The in-tree class's volume type: one the backend has, not its default.
intree_type=standard-alt
[[ $K8S_BACKEND == local ]] && intree_type=local-multiattach
id_ext4=$(new_volume "intree-ext4-$token")
made+=("$id_ext4")
record_handle "$id_ext4" cinder-csi-intree-ext4
id_xfs=$(new_volume "intree-xfs-$token")
made+=("$id_xfs")
record_handle "$id_xfs" cinder-csi-intree-xfs
wait_vol "$id_ext4" available
wait_vol "$id_xfs" available
step "$K8S_BACKEND volumes: ext4 $id_ext4, xfs $id_xfs"

# intree_pv NAME CLAIM VOLUME_ID FSTYPE READONLY EXTRA_SPEC_YAML LABELS
intree_pv() {
    k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata:
  name: cinder-csi-intree-$1
  labels: {$7}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef: {namespace: $ns, name: $2}
  cinder: {volumeID: $3, fsType: $4, readOnly: $5}
$6
EOF
    k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $2}
spec:
  storageClassName: ""
  volumeName: cinder-csi-intree-$1
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
EOF
}
intree_pv ext4 ext4 "$id_ext4" ext4 false "" "$beta_zone: $zone"
intree_pv xfs xfs "$id_xfs" xfs false "  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: $ga_zone, operator: In, values: [$zone]}]}]" ""
for c in ext4 xfs; do
    k -n "$ns" wait --for=jsonpath='{.status.phase}'=Bound "pvc/$c" --timeout=60s >/dev/null || fail "PVC $c not bound to its in-tree PV"
    pod "$c-1" "$c" "echo $token > /data/keep && sync && test \"\$(cat /data/keep)\" = $token && exec sleep 100000"
done
server=""
for c in ext4 xfs; do
    ready "$c-1"
    id=$([[ $c == ext4 ]] && echo "$id_ext4" || echo "$id_xfs")
    read -r status srv < <(vol "$id" 'v["status"]' '(v["attachments"] or [{}])[0].get("server_id")')
    [[ $status == in-use ]] || fail "$c: $bk volume $id is $status while pod $c-1 runs"
    server=${server:-$srv}
    [[ $srv == "$server" ]] || fail "$c: attached to $srv, the other to $server"
    fstype=$(staged_fs "$id")
    [[ $fstype == "$c" ]] || fail "$c: staging mount of $id is [$fstype]"
    va=$(k get volumeattachments -o jsonpath="{range .items[?(@.spec.source.persistentVolumeName==\"cinder-csi-intree-$c\")]}{.spec.attacher}{end}")
    [[ $va == cinder.csi.openstack.org ]] || fail "$c: VolumeAttachment attacher [$va]"
    step "  $c: pod $c-1 wrote and read; $bk: in-use on server $srv; staged $fstype; VolumeAttachment by $va"
done

# --- 2. The ext4 volume again, read-only: a readOnly in-tree PV, and the pod's claim readOnly
# (the kubelet sets NodePublish's readonly from the claim; the PV's flag reaches only the
# attacher, which drops it: this driver has no PUBLISH_READONLY, see the checks below).
step "readOnly in-tree PV over the ext4 volume, claimed readOnly"
k -n "$ns" delete pod ext4-1 --wait=true --timeout=180s >/dev/null
k -n "$ns" delete pvc ext4 --wait=true --timeout=60s >/dev/null
k delete pv cinder-csi-intree-ext4 --wait=true --timeout=60s >/dev/null
wait_vol "$id_ext4" available
intree_pv ro ro "$id_ext4" ext4 true "" "$beta_zone: $zone"
k -n "$ns" wait --for=jsonpath='{.status.phase}'=Bound pvc/ro --timeout=60s >/dev/null || fail "PVC ro not bound"
k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: ro-1}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  nodeSelector: {kubernetes.io/hostname: $node}
  containers:
    - name: c
      image: $BUSYBOX_IMAGE
      imagePullPolicy: Never
      command: [sh, -c]
      args:
        - |
          grep ' /data ' /proc/mounts
          test "\$(cat /data/keep)" = $token || { echo data lost; exit 1; }
          if touch /data/new 2>/tmp/err; then echo write succeeded; exit 1; fi
          cat /tmp/err
          exec sleep 100000
      volumeMounts: [{name: v, mountPath: /data}]
  volumes: [{name: v, persistentVolumeClaim: {claimName: ro, readOnly: true}}]
EOF
ready ro-1
uid=$(k -n "$ns" get pod ro-1 -o jsonpath='{.metadata.uid}')
in_pod=$(k -n "$ns" logs ro-1 | sed -n 1p)
# The published target as each mount namespace of the node sees it: the plugin's bind reaches
# the kubelet's through propagation, and must be read-only there too (not only because the
# kubelet makes the container's mount ro).
opts=$(node_mountinfo | awk -v p="/pods/$uid/volumes/kubernetes.io~csi/" 'index($5, p) {printf "%s ", $6}')
step "  ro-1 read the data, its write failed ($(k -n "$ns" logs ro-1 | tail -1)); in the pod: $in_pod; node's copies of the target: $opts; staged $(staged_fs "$id_ext4")"
[[ $in_pod == *" ro,"* ]] || fail "ro-1's /data is not mounted ro in the pod: [$in_pod]"
[[ -n $opts ]] || fail "no mount of ro-1's target on the node"
for o in $opts; do
    [[ ,$o, == *,ro,* ]] || fail "a copy of ro-1's published target is [$o] on the node (the pod's own mount: [$in_pod])"
done
k -n "$ns" delete pod ro-1 --wait=true --timeout=180s >/dev/null

# --- 3. The xfs volume as an inline `cinder:` volume of a pod (translated by the kubelet and
# the attach/detach controller: the VolumeAttachment carries the inline spec).
step "inline cinder volume (xfs) in a pod spec"
k -n "$ns" delete pod xfs-1 --wait=true --timeout=180s >/dev/null
wait_vol "$id_xfs" available
k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: inline-1}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  nodeSelector: {kubernetes.io/hostname: $node}
  containers:
    - name: c
      image: $BUSYBOX_IMAGE
      imagePullPolicy: Never
      command: [sh, -c, 'test "\$(cat /data/keep)" = $token && echo inline >> /data/keep && sync && exec sleep 100000']
      volumeMounts: [{name: v, mountPath: /data}]
  volumes: [{name: v, cinder: {volumeID: $id_xfs, fsType: xfs}}]
EOF
ready inline-1
inline_va=$(k get volumeattachments -o jsonpath="{range .items[?(@.spec.source.inlineVolumeSpec.csi.volumeHandle==\"$id_xfs\")]}{.spec.attacher}{end}")
[[ $inline_va == cinder.csi.openstack.org ]] || fail "inline: no VolumeAttachment with the inline spec of $id_xfs ([$inline_va])"
[[ $(vol "$id_xfs" 'v["status"]') == in-use ]] || fail "inline: $bk volume $id_xfs not in-use"
inline_spec=$(k get volumeattachments -o jsonpath="{range .items[?(@.spec.source.inlineVolumeSpec.csi.volumeHandle==\"$id_xfs\")]}{.spec.source.inlineVolumeSpec}{end}")
inline_fs=$(staged_fs "$id_xfs")
step "  inline-1 read the data and appended; staged $inline_fs; VolumeAttachment by $inline_va, inline spec $inline_spec"
[[ $inline_fs == xfs ]] || fail "inline: staging mount of $id_xfs is [$inline_fs]"
k -n "$ns" delete pod inline-1 --wait=true --timeout=180s >/dev/null
wait_vol "$id_xfs" available

# --- 4. An in-tree StorageClass, provisioned through the translation, expanded.
step "StorageClass provisioner kubernetes.io/cinder (type $intree_type, availability $zone, fsType xfs)"
k apply -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $sc}
provisioner: kubernetes.io/cinder
parameters: {type: $intree_type, availability: $zone, fsType: xfs}
allowVolumeExpansion: true
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
PVC_SC=$sc pvc made 1Gi
k -n "$ns" wait --for=jsonpath='{.status.phase}'=Bound pvc/made --timeout=180s >/dev/null ||
    fail "PVC made not provisioned: $(k -n "$ns" get events --field-selector involvedObject.name=made -o jsonpath='{.items[*].message}')"
prov=$(k -n "$ns" get pvc made -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/storage-provisioner}')
[[ $prov == cinder.csi.openstack.org ]] || fail "the PV controller handed PVC made to [$prov], not the CSI driver"
pv_made=$(pv_of made)
read -r id_made by to < <(k get pv "$pv_made" -o jsonpath='{.spec.cinder.volumeID} {.metadata.annotations.pv\.kubernetes\.io/provisioned-by} {.metadata.annotations.pv\.kubernetes\.io/migrated-to}'; echo)
[[ -n $id_made ]] || fail "PV $pv_made is not in-tree form: $(k get pv "$pv_made" -o jsonpath='{.spec}')"
made+=("$id_made")
record_handle "$id_made" "$pv_made"
read -r vtype vaz vsize < <(vol "$id_made" 'v["volume_type"]' 'v["availability_zone"]' 'v["size"]')
step "  PV $pv_made: spec.cinder.volumeID $id_made, provisioned-by $by, migrated-to $to; $bk: type $vtype, zone $vaz, $vsize GiB"
[[ $by == kubernetes.io/cinder && $to == cinder.csi.openstack.org ]] || fail "PV $pv_made annotations: provisioned-by [$by] migrated-to [$to]"
[[ $vtype == "$intree_type" && $vaz == "$zone" && $vsize == 1 ]] || fail "volume $id_made: type $vtype zone $vaz size $vsize"
pod made-1 made "echo $token > /data/keep && sync && exec sleep 100000"
ready made-1
step "expand made to 2Gi while mounted"
k -n "$ns" patch pvc made --type=merge -p '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}' >/dev/null
k -n "$ns" wait --for=jsonpath='{.status.capacity.storage}'=2Gi pvc/made --timeout=300s >/dev/null ||
    fail "PVC made not expanded: $(k -n "$ns" get pvc made -o jsonpath='{.status}')"
kib=0
for _ in $(seq 60); do
    kib=$(k -n "$ns" exec made-1 -- df -k /data | awk 'NR == 2 {print $2}')
    ((kib > 1900000)) && break
    sleep 2
done
vsize=$(vol "$id_made" 'v["size"]')
step "  $bk size $vsize GiB; the pod's filesystem $kib KiB"
[[ $vsize == 2 ]] || fail "$bk volume $id_made is $vsize GiB after the expansion"
((kib > 1900000)) || fail "made-1's filesystem not grown: $kib KiB"

# --- 5. A VolumeSnapshot of the in-tree PV: the snapshot-controller snapshots CSI PVs only,
# and a PV provisioned through an in-tree class stays spec.cinder.
step "VolumeSnapshot of in-tree PV $pv_made"
k apply -f - >/dev/null <<EOF
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {name: $sc}
driver: cinder.csi.openstack.org
deletionPolicy: Delete
EOF
k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: made-snap}
spec:
  volumeSnapshotClassName: $sc
  source: {persistentVolumeClaimName: made}
EOF
snap_err=""
for _ in $(seq 60); do
    snap_err=$(k -n "$ns" get volumesnapshot made-snap -o jsonpath='{.status.error.message}')
    [[ -n $snap_err ]] && break
    sleep 2
done
read -r ready_to_use content < <(k -n "$ns" get volumesnapshot made-snap -o jsonpath='{.status.readyToUse} {.status.boundVolumeSnapshotContentName}'; echo)
contents=$(k get volumesnapshotcontents -o jsonpath="{range .items[?(@.spec.volumeSnapshotRef.namespace==\"$ns\")]}{.metadata.name} {end}")
cinder_snaps=$(snaps_of "$id_made")
step "  refused: [$snap_err]; readyToUse [$ready_to_use], content [$content$contents], $bk snapshots [$cinder_snaps]"
[[ $snap_err == *"CSI"* ]] || fail "VolumeSnapshot made-snap of in-tree PV $pv_made: no refusal naming CSI ([$snap_err])"
[[ $ready_to_use != true && -z $content && -z $contents && -z $cinder_snaps ]] ||
    fail "VolumeSnapshot made-snap of an in-tree PV got somewhere: readyToUse [$ready_to_use] content [$content$contents] $bk [$cinder_snaps]"
k -n "$ns" delete volumesnapshot made-snap --wait=true --timeout=60s >/dev/null

# --- 6. Delete everything.
step "delete everything"
k -n "$ns" delete pod --all --wait=true --timeout=180s >/dev/null
k -n "$ns" delete pvc --all --wait=true --timeout=180s >/dev/null
k wait --for=delete "pv/$pv_made" --timeout=300s >/dev/null 2>&1 || fail "PV $pv_made not deleted"
for _ in $(seq 60); do
    [[ $(vol "$id_made" 'v["status"]') == gone ]] && break
    sleep 2
done
[[ $(vol "$id_made" 'v["status"]') == gone ]] || fail "$bk volume $id_made of the deleted in-tree PV is still there"
k delete pv cinder-csi-intree-xfs cinder-csi-intree-ro --wait=true --timeout=60s >/dev/null
for id in "$id_ext4" "$id_xfs"; do
    wait_vol "$id" available
    del_vol "$id"
done

# --- 7. The translated requests.
step "CSI requests the sidecars sent for these volumes"
# "SIDECAR METHOD REQUEST-JSON" of every CSI call in the sidecars' logs (csi-lib-utils at
# --v=5: structured `"GRPC call" method="…" request="…"`, or older "GRPC call:" / "GRPC
# request:" line pairs).
grpc_calls() {
    python3 -c '
import json, re, sys
c, method = sys.argv[1], None
for line in sys.stdin:
    m = re.search(r"\"GRPC call\".*? method=\"([^\"]+)\" request=\"((?:[^\"\\]|\\.)*)\"", line)
    if m:
        print(c, m.group(1), json.loads("\"" + m.group(2) + "\""))
        continue
    m = re.search(r"GRPC call: (\S+)", line)
    if m:
        method = m.group(1)
    m = re.search(r"GRPC request: (.*)", line)
    if m and method:
        print(c, method, m.group(1).strip())' "$1"
}
requests=$(for c in csi-provisioner csi-attacher csi-resizer; do
    k -n "$K8S_DRIVER_NS" logs "$ctl" -c "$c" --since-time="$started" | grpc_calls "$c"
done | grep -E "$id_ext4|$id_xfs|$id_made|$pv_made" || true)
printf '%s\n' "$requests" | sed 's/^/    /'
# Each request against what it must carry (exact fields; protosanitizer leaves unset fields
# out, so a stray readonly or volume_context would show).
read -r -d '' checker <<'PY' || true
import json, sys
zone, server, ns, pv_made, id_ext4, id_xfs, id_made, zones, vtype = sys.argv[1:]
calls = []
for line in sys.stdin:
    if line.strip():
        side, method, body = line.split(None, 2)
        calls.append((method.rsplit("/", 1)[1], json.loads(body)))
def cap(fs):
    return {"access_mode": {"mode": "SINGLE_NODE_MULTI_WRITER"}, "mount": {"fs_type": fs}}
bad, count = [], {}
def expect(what, got, want):
    if got != want:
        bad.append(f"{what}:\n      got  {json.dumps(got, sort_keys=True)}\n      want {json.dumps(want, sort_keys=True)}")
for m, r in calls:
    vid = r.get("volume_id")
    count[(m, vid or r.get("name"))] = count.get((m, vid or r.get("name")), 0) + 1
    if m == "CreateVolume" and r.get("name") == pv_made:
        expect("CreateVolume", r, {
            "name": pv_made, "capacity_range": {"required_bytes": 1 << 30},
            "parameters": {"csi.storage.k8s.io/pv/name": pv_made, "csi.storage.k8s.io/pvc/name": "made",
                           "csi.storage.k8s.io/pvc/namespace": ns, "type": vtype, "availability": zone},
            "volume_capabilities": [cap("xfs")],
            "accessibility_requirements": r.get("accessibility_requirements")})
        # An Immediate class without allowedTopologies: every zone of the cluster's nodes (the
        # class's `availability` then picks the volume's, checked in Cinder above).
        expect("CreateVolume requisite topology",
               sorted(json.dumps(t, sort_keys=True) for t in r.get("accessibility_requirements", {}).get("requisite", [])),
               sorted(json.dumps({"segments": {"topology.cinder.csi.openstack.org/zone": z}}, sort_keys=True)
                      for z in zones.split(",")))
    elif m == "ControllerPublishVolume":
        fs = {id_ext4: "ext4", id_xfs: "xfs", id_made: "xfs"}[vid]
        expect(f"ControllerPublishVolume {vid}", r, {"node_id": server, "volume_id": vid, "volume_capability": cap(fs)})
    elif m == "ControllerUnpublishVolume":
        expect(f"ControllerUnpublishVolume {vid}", r, {"node_id": server, "volume_id": vid})
    elif m == "ControllerExpandVolume":
        expect("ControllerExpandVolume", r, {"volume_id": id_made, "capacity_range": {"required_bytes": 2 << 30},
                                             "volume_capability": cap("xfs")})
    elif m == "DeleteVolume":
        expect("DeleteVolume", r, {"volume_id": id_made})
# At least: the ext4 volume attached for its PV and again for the readOnly PV, the xfs one for
# its PV and for the inline volume, the class's volume once; each detached as often.
for (m, key), n in [(("CreateVolume", pv_made), 1), (("ControllerPublishVolume", id_ext4), 2),
                    (("ControllerPublishVolume", id_xfs), 2), (("ControllerPublishVolume", id_made), 1),
                    (("ControllerUnpublishVolume", id_ext4), 2), (("ControllerUnpublishVolume", id_xfs), 2),
                    (("ControllerUnpublishVolume", id_made), 1), (("ControllerExpandVolume", id_made), 1),
                    (("DeleteVolume", id_made), 1)]:
    if count.get((m, key), 0) < n:
        bad.append(f"{m} of {key}: {count.get((m, key), 0)} calls, expected at least {n}")
for m, key in count:
    if m == "DeleteVolume" and key != id_made:
        bad.append(f"DeleteVolume of {key}: its PV was Retain")
print("    " + "\n    ".join(bad) if bad else f"    {len(calls)} requests as expected")
sys.exit(1 if bad else 0)
PY
# The zones of the cluster's nodes as their kubelets labelled them from NodeGetInfo.
zones=$(k get nodes -o jsonpath='{range .items[*]}{.metadata.labels.topology\.cinder\.csi\.openstack\.org/zone}{"\n"}{end}' | sort -u | paste -sd,)
[[ ,$zones, == *,"$zone",* ]] || fail "the nodes' zones ($zones) do not include $zone"
python3 -c "$checker" "$zone" "$server" "$ns" "$pv_made" "$id_ext4" "$id_xfs" "$id_made" "$zones" "$intree_type" <<<"$requests" ||
    fail "translated requests differ (above)"
step "leak check"
for id in "${made[@]}"; do
    for _ in $(seq 30); do
        [[ $(vol "$id" 'v["status"]') == gone ]] && break
        sleep 2
    done
    [[ $(vol "$id" 'v["status"]') == gone ]] || fail "$bk volume $id is still there"
done
leaks=$(leak_check "$ns")
[[ -z $leaks ]] || fail "leaks: $leaks"
echo "intree: OK ($((SECONDS - t0)) s)"
