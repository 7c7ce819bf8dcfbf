#!/usr/bin/env bash
# StorageClass `mkfsOptions` (upstream PR #3084) through the Kubernetes API, on the cluster
# tests/harness/k8s/cluster runs (its volumes are loop devices on this host), then a leak check:
#
#   three classes, a 1Gi claim and a pod writing a file in each:
#     ext4 "-O ^metadata_csum,-i 65536,-E nodiscard": dumpe2fs shows no metadata_csum and one
#       inode per 64 KiB, and the loop device's discard counter did not move;
#     ext4 "-E discard", the control (the driver's own default is nodiscard): metadata_csum and
#       the default inode count, and mkfs discarded the whole device;
#     xfs "-i size=1024": xfs_info shows isize=1024;
#   then the ext4 and xfs pods are deleted (unstaged, detached: no VolumeAttachment, no
#   staging mount, no loop device) and new pods use the claims: the file is still there and
#   the filesystem is the same one (ext4 UUID and "Filesystem created", xfs UUID).
# The backing loop device is found from the real state: the PV's volume handle → the loop
# device over its file (losetup) → the one mounted at its staging dir (mountinfo).
#
#   tests/harness/k8s/mkfs-options.sh [--backend local|openstack]
#
# Fails (exit 1) at the first step that does not hold, printing what it saw; everything it
# created is deleted on every exit. Last line: "mkfs-options: OK (N s)" or
# "mkfs-options: FAILED: ...".
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=tests/harness/k8s/lib.sh
. "$repo/tests/harness/k8s/lib.sh"

k8s_test mkfs-options cinder-csi-mkfs "$@"
ext4_opts="-O ^metadata_csum,-i 65536,-E nodiscard"
control_opts="-E discard"
xfs_opts="-i size=1024"
TEST_CLUSTER_OBJECTS=(storageclass/cinder-csi-mkfs-ext4 storageclass/cinder-csi-mkfs-control
    storageclass/cinder-csi-mkfs-xfs)
token="mkfs-$$-$RANDOM"
# 1 GiB in 512-byte sectors.
gib_sectors=2097152

k get csidriver cinder.csi.openstack.org >/dev/null || fail "no CSIDriver: is the cluster up (tests/harness/k8s/cluster up)?"
K8S_BACKEND=${K8S_BACKEND:-$(k8s_backend)}
step "backend $K8S_BACKEND"
[[ -z $(leak_check "$ns") ]] || fail "the backend has objects of namespace $ns from an earlier run: $(leak_check "$ns")"

# class NAME FSTYPE MKFS_OPTIONS
class() {
    cat <<EOF
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: cinder-csi-mkfs-$1}
provisioner: cinder.csi.openstack.org
parameters: {csi.storage.k8s.io/fstype: $2, mkfsOptions: "$3"}
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
EOF
}
step "StorageClasses (ext4 \"$ext4_opts\", control ext4 \"$control_opts\", xfs \"$xfs_opts\"), namespace"
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $ns}
$(class ext4 ext4 "$ext4_opts")
$(class control ext4 "$control_opts")
$(class xfs xfs "$xfs_opts")
EOF

# Sectors each loop device has discarded so far ("loopN SECTORS"; /sys/block/loopN/stat field
# 14). The kernel keeps a loop device's counters across its uses, so a volume's discards are
# the difference from before it was attached (a device that did not exist then had 0).
loop_discards() {
    local s
    for s in /sys/block/loop*/stat; do
        [[ -e $s ]] || continue
        s=${s%/stat}
        echo "${s##*/} $(awk '{print $14 + 0}' "$s/stat")"
    done
}
# discarded_since BEFORE DEV: sectors DEV (/dev/loopN) discarded since the BEFORE listing.
discarded_since() {
    local n=${2#/dev/} was
    was=$(awk -v n="$n" '$1 == n {print $2}' <<<"$1")
    echo $(($(awk '{print $14 + 0}' "/sys/block/$n/stat") - ${was:-0}))
}

# loop_of C: dev[C] = the loop device of volume h[C]: the one over its file (losetup), which
# must also be the device mounted at its staging dir (the kubelet's globalmount, named by the
# handle's sha256).
loop_of() {
    local h=${h[$1]} devs src sha
    devs=$(losetup -l -n -O NAME,BACK-FILE | awk -v h="$h" 'index($2, h) {print $1}')
    [[ $(wc -w <<<"$devs") == 1 ]] || fail "volume $h: loop devices over its file: [$devs], want exactly one"
    sha=$(printf %s "$h" | sha256sum | cut -d' ' -f1)
    src=$(node_mountinfo | awk -v s="$sha" 'index($5, s) && $5 ~ /\/globalmount$/ {
        for (i = 7; $i != "-"; i++) {}
        print $(i + 2); exit }')
    [[ -n $src ]] || fail "volume $h: nothing mounted at its staging dir (…/$sha/globalmount)"
    [[ $(readlink -f "$src") == "$devs" ]] || fail "volume $h: staging dir mounts $src, not its loop device $devs"
    dev[$1]=$devs
}
ext4_field() { dumpe2fs -h "$1" 2>/dev/null | sed -n "s/^$2: *//p"; }
fs_uuid() { blkid -p -s UUID -o value "$1"; }

# --- 1. Provision, stage, write: all three at once.
before=$(loop_discards)
for c in ext4 control xfs; do
    PVC_SC=cinder-csi-mkfs-$c pvc "$c" 1Gi
    pod "$c-1" "$c" "echo $token > /data/keep && sync && exec sleep 100000"
done
step "pods ext4-1, control-1, xfs-1 write a file on their new volumes"
declare -A pv h dev
for c in ext4 control xfs; do
    wait_ready "$c-1"
    pv[$c]=$(pv_of "$c")
    h[$c]=$(handle_of "${pv[$c]}")
    [[ -n ${h[$c]} ]] || fail "PVC $c has no volume handle"
    record_handle "${h[$c]}" "${pv[$c]}"
    loop_of "$c"
    step "  $c: PV ${pv[$c]}, volume ${h[$c]}, ${dev[$c]}"
done
# The class's options reach the node through the volume context.
for c in ext4 control xfs; do
    want=$(k get storageclass "cinder-csi-mkfs-$c" -o jsonpath='{.parameters.mkfsOptions}')
    got=$(k get pv "${pv[$c]}" -o jsonpath='{.spec.csi.volumeAttributes.mkfsOptions}')
    [[ $got == "$want" ]] || fail "PV ${pv[$c]}'s volume context mkfsOptions [$got], want [$want]"
done

# --- 2. The options' traces in the filesystems and the loop devices.
step "ext4 \"$ext4_opts\": dumpe2fs, discard counter"
features=$(ext4_field "${dev[ext4]}" "Filesystem features")
inodes=$(ext4_field "${dev[ext4]}" "Inode count")
disc=$(discarded_since "$before" "${dev[ext4]}")
step "  features: $features; inodes: $inodes; discarded sectors: $disc"
[[ -n $features && " $features " != *" metadata_csum "* ]] || fail "ext4: -O ^metadata_csum left metadata_csum on: [$features]"
# 1 GiB at one inode per 64 KiB is 16384 (mke2fs rounds per block group).
((inodes >= 15000 && inodes <= 20000)) || fail "ext4: -i 65536 gave $inodes inodes, want ~16384"
((disc == 0)) || fail "ext4 with -E nodiscard: ${dev[ext4]} discarded $disc sectors"

step "control ext4 \"$control_opts\": dumpe2fs, discard counter"
features=$(ext4_field "${dev[control]}" "Filesystem features")
inodes=$(ext4_field "${dev[control]}" "Inode count")
disc=$(discarded_since "$before" "${dev[control]}")
step "  features: $features; inodes: $inodes; discarded sectors: $disc"
[[ " $features " == *" metadata_csum "* ]] || fail "control: no metadata_csum: [$features]"
((inodes >= 60000)) || fail "control: $inodes inodes, want the default one per 16 KiB (65536)"
((disc >= gib_sectors)) || fail "control with -E discard: ${dev[control]} discarded only $disc sectors of $gib_sectors"

step "xfs \"$xfs_opts\": xfs_info"
isize=$(xfs_info "${dev[xfs]}" | grep -o 'isize=[0-9]*' | head -1)
step "  $isize"
[[ $isize == isize=1024 ]] || fail "xfs: -i size=1024 gave [$isize]"

# --- 3. Unstage, detach, restage: never formatted again.
ext4_created=$(ext4_field "${dev[ext4]}" "Filesystem created")
ext4_uuid=$(fs_uuid "${dev[ext4]}")
xfs_uuid=$(fs_uuid "${dev[xfs]}")
[[ -n $ext4_created && -n $ext4_uuid && -n $xfs_uuid ]] || fail "no UUID or creation time: [$ext4_uuid] [$ext4_created] [$xfs_uuid]"
step "delete pods ext4-1 and xfs-1 (ext4 $ext4_uuid created $ext4_created; xfs $xfs_uuid)"
k -n "$ns" delete pod ext4-1 xfs-1 --wait=true --timeout=180s >/dev/null || fail "pods not deleted"
for c in ext4 xfs; do
    sha=$(printf %s "${h[$c]}" | sha256sum | cut -d' ' -f1)
    for _ in $(seq 90); do
        if ! va_attached "${pv[$c]}" && ! node_mountinfo | grep -qF "$sha" &&
            ! losetup -l -n -O BACK-FILE | grep -qF "${h[$c]}"; then
            break
        fi
        sleep 2
    done
    va_attached "${pv[$c]}" && fail "$c: ${pv[$c]} still attached after its pod was deleted"
    node_mountinfo | grep -qF "$sha" && fail "$c: staging dir of ${h[$c]} still mounted after its pod was deleted"
    losetup -l -n -O BACK-FILE | grep -qF "${h[$c]}" && fail "$c: a loop device is still over ${h[$c]}"
done
step "  unstaged and detached; pods ext4-2 and xfs-2 use the claims"
for c in ext4 xfs; do
    pod "$c-2" "$c" "exec sleep 100000"
done
for c in ext4 xfs; do
    wait_ready "$c-2"
    [[ $(k -n "$ns" exec "$c-2" -- cat /data/keep) == "$token" ]] || fail "$c: the file written before the restage is gone"
    loop_of "$c"
done
now_created=$(ext4_field "${dev[ext4]}" "Filesystem created")
now_ext4=$(fs_uuid "${dev[ext4]}")
now_xfs=$(fs_uuid "${dev[xfs]}")
step "  ext4 on ${dev[ext4]}: $now_ext4 created $now_created; xfs on ${dev[xfs]}: $now_xfs"
[[ $now_ext4 == "$ext4_uuid" && $now_created == "$ext4_created" ]] || fail "ext4 reformatted at restage"
[[ $now_xfs == "$xfs_uuid" ]] || fail "xfs reformatted at restage"

# --- 4. Delete everything; nothing may be left.
step "delete everything"
k -n "$ns" delete pod --all --wait=true --timeout=180s >/dev/null
k -n "$ns" delete pvc --all --wait=true --timeout=180s >/dev/null
for p in "${RECORDED_PVS[@]}"; do
    k wait --for=delete "pv/$p" --timeout=300s >/dev/null 2>&1 || fail "PV $p not deleted"
done
step "leak check"
leaks=$(leak_check "$ns")
[[ -z $leaks ]] || fail "leaks: $leaks"
echo "mkfs-options: OK ($((SECONDS - t0)) s)"
