#!/usr/bin/env bash
# Controller failover (issue 24, scenario 4), through the Kubernetes API, on a cluster with the
# chart's two controller replicas:
#   tests/harness/k8s/cluster up --nodes 3 -f tests/harness/k8s/values-test.yaml -f tests/harness/k8s/values-failover.yaml
# (on a one-replica install the StatefulSet is scaled to 2 first, and back to 1 at the end).
# Local backend: one controller process holds the state directory's flock (it is the backend)
# and serves the other, its standby, on DIR/controller.sock; the standby passes its controller
# calls there. Test cloud (openstack backend): either replica serves; the sidecars' leader
# Leases say which one's sidecars call; the leader is the holder of the provisioner's Lease.
#
#   1. local: the pod whose process holds the flock (/proc/locks: the lock file's inode → pid →
#      the pod's hostname) and the sidecars' leader Leases (printed: they need not coincide);
#      the other pod's log says it is the standby. openstack: the provisioner Lease's holder
#      and its cinder-csi process (the pid whose UTS hostname is the pod's);
#   2. 10 claims of an Immediate class: 5 created, that pod killed (default: kubectl delete
#      --grace-period=0 --force; --kill9: kill -9 of its cinder-csi process only), 5 more;
#   3. all 10 bind; local: a new process holds the flock (the standby's, or the killed
#      replica's successor's if it was waiting too) and its log says it took over;
#   4. the backend has one volume per claim: the claims' PV handles, no other, no name twice;
#   5. the killed replica is back Ready (the standby now) and an 11th claim binds;
#   6. the claims are deleted; the backend has none of their volumes; the leak check is empty.
#
#   tests/harness/k8s/failover.sh [--kill9]
#
# Fails (exit 1) at the first step that does not hold, printing what it saw (Lease holders, the
# flock holder); the namespace and class are deleted on every exit. Last line "failover: OK (N s)".
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=tests/harness/k8s/lib.sh
. "$repo/tests/harness/k8s/lib.sh"

how=delete
if [[ ${1:-} == --kill9 ]]; then how=kill9; shift; fi
k8s_test failover cinder-csi-failover "$@"
sc=cinder-csi-failover
TEST_CLUSTER_OBJECTS=("storageclass/$sc")
dns=$K8S_DRIVER_NS
sel=app.kubernetes.io/name=cinder-csi,app.kubernetes.io/component=controller

K8S_BACKEND=${K8S_BACKEND:-$(k8s_backend)}
controllers() { k -n "$dns" get pods -l "$sel" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'; }
sts=$(k -n "$dns" get statefulset -l "$sel" -o jsonpath='{.items[0].metadata.name}')
[[ -n $sts ]] || fail "no controller StatefulSet (controller.kind: StatefulSet) in $dns"
scaled=""
# Back to one replica, and gone before the next test looks at the controller pods.
test_cleanup() {
    [[ -n $scaled ]] || return 0
    k -n "$dns" scale statefulset "$sts" --replicas=1 >/dev/null
    k -n "$dns" wait --for=delete "pod/$sts-1" --timeout=120s >/dev/null 2>&1 || true
}
mapfile -t pods < <(controllers)
if ((${#pods[@]} == 1)); then
    step "0. scale $sts to 2 replicas"
    scaled=1
    k -n "$dns" scale statefulset "$sts" --replicas=2 >/dev/null
    until [[ $(controllers | wc -l) == 2 ]] && k -n "$dns" wait --for=condition=Ready pod -l "$sel" --timeout=5s >/dev/null 2>&1; do
        ((SECONDS - t0 < 240)) || fail "the second controller is not Ready: $(k -n "$dns" get pods -l "$sel" 2>&1)"
        sleep 2
    done
    mapfile -t pods < <(controllers)
fi
((${#pods[@]} == 2)) || fail "want 2 controller pods, found ${#pods[@]}: ${pods[*]} (up -f tests/harness/k8s/values-failover.yaml)"
k -n "$dns" wait --for=condition=Ready pod -l "$sel" --timeout=120s >/dev/null || fail "controller pods not Ready"
[[ $K8S_BACKEND == local ]] && dir=$(local_dir)
[[ -z $(leak_check "$ns") ]] || fail "objects of namespace $ns from an earlier run: $(leak_check "$ns")"

# The pid holding the state directory's flock (not a waiter: "->"), and that process's pod
# (its UTS hostname is the pod's name).
flock_pid() {
    local ino
    ino=$(stat -c %i "$dir/.lock")
    awk -v ino="$ino" '!/->/ && $2 == "FLOCK" { n = split($6, a, ":"); if (a[n] == ino) print $5 }' /proc/locks
}
pod_of_pid() { nsenter -t "$1" -u hostname; }
flock_pod() {
    local pid
    pid=$(flock_pid)
    [[ -n $pid ]] || return 1
    pod_of_pid "$pid"
}
# "LEASE=HOLDER" of the leases a controller pod holds (the sidecars': their identity is the
# pod's hostname).
leases() {
    local re
    re=$(controllers | paste -sd'|')
    k -n "$dns" get leases -o jsonpath='{range .items[*]}{.metadata.name}={.spec.holderIdentity}{"\n"}{end}' |
        grep -E "=($re)\$" || true
}
# openstack: the provisioner's Lease (named for the driver) and its holder's cinder-csi process.
prov_lease=$(k get csidriver -o jsonpath='{.items[0].metadata.name}' | tr './' '--')
leader_pod() { k -n "$dns" get lease "$prov_lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
csi_pid_of() {
    local p
    for p in $(pgrep -x cinder-csi); do
        [[ $(pod_of_pid "$p" 2>/dev/null) == "$1" ]] && { echo "$p"; return 0; }
    done
    return 1
}
where() {
    if [[ $K8S_BACKEND == local ]]; then
        echo "flock: pid $(flock_pid) in pod $(flock_pod 2>/dev/null); leases: $(leases | paste -sd' ')"
    else
        echo "provisioner leader: $(leader_pod); leases: $(leases | paste -sd' ')"
    fi
}
bound() { k -n "$ns" get pvc -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Bound$' || true; }

step "1. who holds what"
if [[ $K8S_BACKEND == local ]]; then
    holder_pid=$(flock_pid)
    [[ -n $holder_pid ]] || fail "no process holds $dir/.lock: $(grep FLOCK /proc/locks)"
    holder=$(pod_of_pid "$holder_pid")
else
    for _ in $(seq 60); do holder=$(leader_pod) && [[ -n $holder ]] && break; sleep 1; done
    [[ -n $holder ]] || fail "no holder of the provisioner's Lease $prov_lease: $(where)"
    holder_pid=$(csi_pid_of "$holder") || fail "no cinder-csi process of pod $holder on this host"
fi
standby=""
for p in "${pods[@]}"; do [[ $p == "$holder" ]] || standby=$p; done
[[ -n $standby ]] || fail "the holder $holder is not one of ${pods[*]}"
mapfile -t held < <(leases)
((${#held[@]} >= 3)) || fail "expected the sidecars' leases (provisioner, attacher, resizer, snapshotter): $(where)"
if [[ $K8S_BACKEND == local ]]; then
    [[ -S $dir/controller.sock ]] || fail "the holder does not serve $dir/controller.sock"
    k -n "$dns" logs "$standby" -c cinder-csi-plugin | grep standby >/dev/null || fail "$standby's log does not say it is the standby"
fi
step "  $(where); the other replica $standby"

namespace_and_class "$ns" "$sc" Immediate | k apply -f - >/dev/null

step "2. claims 1-5, kill ($how) $holder, claims 6-10"
for i in 1 2 3 4 5; do pvc "claim-$i" 1Gi; done
killed_at=$SECONDS
case $how in
    delete) k -n "$dns" delete pod "$holder" --grace-period=0 --force >/dev/null 2>&1 ;;
    kill9) kill -9 "$holder_pid" ;;
esac
for i in 6 7 8 9 10; do pvc "claim-$i" 1Gi; done

step "3. all 10 bind"
until (($(bound) == 10)); do
    ((SECONDS - killed_at < 300)) || fail "$(bound) of 10 claims bound 300 s after the kill: $(where)"
    sleep 2
done
step "  10 bound $((SECONDS - killed_at)) s after the kill; $(where)"
if [[ $K8S_BACKEND == local ]]; then
    # The standby took over, or the killed replica's successor did if it was already waiting
    # beside it when the lock went (the kernel wakes them both): a new process, one that says so.
    now_pid=$(flock_pid)
    [[ -n $now_pid && $now_pid != "$holder_pid" ]] || fail "the flock is still or no longer held: $(where)"
    now=$(pod_of_pid "$now_pid")
    controllers | grep -x "$now" >/dev/null || fail "the flock holder $now is not a controller pod: $(where)"
    k -n "$dns" logs "$now" -c cinder-csi-plugin | grep "took the local backend's state dir over" >/dev/null ||
        fail "$now's log does not say it took the directory over"
    step "  the flock went to $now (the standby was $standby)"
fi

step "4. one backend volume per claim"
handles=$(for i in $(seq 1 10); do printf '%s\n' "$(handle_of "$(pv_of "claim-$i")")"; done | sort)
for h in $handles; do record_handle "$h" "$(k get pv -o jsonpath="{.items[?(@.spec.csi.volumeHandle==\"$h\")].metadata.name}")"; done
ours=$(backend_volumes | awk -v ns="$ns" '$3 == ns')
[[ $(awk '{print $1}' <<<"$ours" | sort) == "$handles" ]] || fail "backend volumes of $ns: $(echo; echo "$ours"); PV handles: $handles"
[[ -z $(awk '{print $2}' <<<"$ours" | sort | uniq -d) ]] || fail "a volume name twice in the backend: $ours"
# Whatever its metadata says: no other backend volume has one of the claims' volume names.
names=$(awk '{print $2}' <<<"$ours")
dups=$(backend_volumes | awk 'NR == FNR {n[$1]; next} $2 in n' <(echo "$names") - | awk '{print $2}' | sort | uniq -d)
[[ -z $dups ]] || fail "volume names twice in the backend (of any namespace): $dups"
step "  $(wc -l <<<"$ours") volumes, 10 distinct names, each a PV's handle"

step "5. the killed replica back (standby), an 11th claim"
until [[ $(controllers | wc -l) == 2 ]] && k -n "$dns" wait --for=condition=Ready pod -l "$sel" --timeout=5s >/dev/null 2>&1; do
    ((SECONDS - killed_at < 400)) || fail "the controller pods are not both Ready again: $(k -n "$dns" get pods -l "$sel" 2>&1)"
    sleep 2
done
pvc claim-11 1Gi
k -n "$ns" wait --for=jsonpath='{.status.phase}'=Bound pvc/claim-11 --timeout=180s >/dev/null ||
    fail "claim-11 did not bind after the failover: $(where)"
record_handle "$(handle_of "$(pv_of claim-11)")" "$(pv_of claim-11)"
step "  claim-11 bound; $(where)"

step "6. delete, leak check"
k -n "$ns" delete pvc --all --wait=true --timeout=180s >/dev/null
until [[ -z $(backend_volumes | awk -v ns="$ns" '$3 == ns') ]]; do
    ((SECONDS - killed_at < 700)) || fail "backend volumes of $ns left: $(backend_volumes | awk -v ns="$ns" '$3 == ns')"
    sleep 2
done
left=$(leak_check "$ns")
[[ -z $left ]] || fail "left behind: $left"
step "  leak check: nothing left"
echo "failover: OK ($((SECONDS - t0)) s)"
