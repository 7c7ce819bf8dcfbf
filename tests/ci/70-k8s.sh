#!/usr/bin/env bash
# The driver under a real single-node Kubernetes (tests/harness/k8s/cluster): install (Debian packages,
# the Go-built components and sidecars, cached), up on the local backend (helm install of
# charts/cinder-csi; returns when the CSIDriver, the CSINode entry and both plugin pods are
# ready), a real Prometheus scraping both plugins through the chart's monitors, the Kubernetes
# tests that exist (tests/harness/k8s/lifecycle*, group-snapshots.sh, mkfs-options.sh, e2e.sh), the
# alerts tested on the series Prometheus recorded (tests/harness/monitoring/cluster.sh finish), then
# (local backend) tests/harness/k8s/multinode.sh and failover.sh on a 3-node cluster (`up --nodes 3`) and
# group-snapshots.sh again, the credential rotation (rotation.sh) and in-tree volumes (intree.sh)
# on a 3-node cluster over the test cloud (a Nova server per node), whose controller runs in a
# namespace enforcing Pod Security `restricted`, and the live swap from upstream's driver and
# back there (tests/harness/k8s/swap.sh); down in
# a trap whatever happens; then checks that down left nothing.
# Knobs: K8S_STAGE_BACKEND (local|openstack, default local; openstack brings the test cloud up
# unless it is, and down again), CINDER_CSI_SKIP_K8S=1 skips,
# K8S_UP_TIMEOUT_S bounds `up` (default 1500 s: a cold build of the components is in it).
# time-bound-min: 55 (the 3-node test-cloud phase adds about 7 min to the 34 of 2026-12-05
# morning, estimated from its phases; the whole run stays within 85)
set -euo pipefail
cd "$(dirname "$0")/../.."

# Switched on by tests/harness/k8s/ENABLED once a whole `up` (kubelet Ready, snapshot-controller, helm
# install, plugin pods ready) has been seen to pass on this machine: until then the stage would
# only measure the cold component builds against CI's clock.
if [[ ! -e tests/harness/k8s/ENABLED ]]; then
    echo "70-k8s: skipped: tests/harness/k8s/ENABLED is absent (no full cluster up has passed here yet;"
    echo "70-k8s: run tests/harness/k8s/cluster up by hand, see docs/TESTING.md)"
    exit 0
fi

if [[ ${CINDER_CSI_SKIP_K8S:-} == 1 ]]; then
    echo "70-k8s: skipped (CINDER_CSI_SKIP_K8S=1)"
    exit 0
fi
# The components and sidecars are built from source once and cached outside the checkout
# (tests/harness/peers). From an empty Go cache that takes 40+ min of both cores; in a whole run
# tests/harness/k8s/prebuild has been building them in the background since the run began. What is
# left of the run's bound, less the ~20 min the stage needs with every peer cached, is how long
# it may still take; if it is not done by then the stage fails saying so, instead of timing the
# whole run out (a cluster stage that did not run is a red run, not a pass).
need=$((20 * 60))
if [[ -n ${CINDER_CSI_RUN_DEADLINE:-} ]]; then
    left=$((CINDER_CSI_RUN_DEADLINE - $(date +%s)))
    if ! tests/harness/k8s/prebuild wait $((left > need ? left - need : 0)); then
        echo "70-k8s: NOT RUN: $(((CINDER_CSI_RUN_DEADLINE - $(date +%s)) / 60)) min are left of the" \
            "run's bound and the peers above are not built; this stage needs about $((need / 60)) min" \
            "with them built." >&2
        echo "70-k8s: build them once with tests/harness/k8s/cluster install (docs/TESTING.md), or run" \
            "this stage alone: bash tests/ci/70-k8s.sh" >&2
        exit 1
    fi
fi
backend=${K8S_STAGE_BACKEND:-local}
state=${K8S_STATE:-/var/tmp/cinder-csi-k8s}
export K8S_STATE=$state
t0=$SECONDS
timings=()
phase() { # phase NAME: closes the previous phase's timer
    local now=$SECONDS
    [[ -n ${cur:-} ]] && timings+=("$(printf '%-36s %5d s' "$cur" $((now - tphase)))")
    cur=$1 tphase=$now
    [[ $1 != end ]] && echo "70-k8s: $1"
    return 0
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    if [[ -n ${monitoring:-} ]]; then
        phase "monitoring stop"
        tests/harness/monitoring/cluster.sh stop || rc=${rc:-1}
    fi
    phase "down"
    tests/harness/k8s/cluster down || rc=${rc:-1}
    if [[ -n ${ostack_started:-} ]]; then
        phase "test cloud down"
        tests/harness/openstack/ostack down || rc=${rc:-1}
    fi
    phase end
    printf '70-k8s: %s\n' "${timings[@]}"
    # Nothing of the cluster may be left: processes, mounts, loop devices, its bridge.
    local left=""
    [[ -e $state ]] && left+=" state dir $state;"
    pgrep -f -- "$state/" >/dev/null && left+=" processes: $(pgrep -af -- "$state/" | head -5);"
    awk -v p="$state/" 'index($2, p) == 1' /proc/self/mounts | grep -q . && left+=" mounts;"
    losetup -l -n -O BACK-FILE | grep -qF "$state/" && left+=" loop devices;"
    ip link show cinderk8s0 >/dev/null 2>&1 && left+=" bridge cinderk8s0;"
    if [[ -n $left ]]; then
        echo "70-k8s: down left:$left" >&2
        ((rc)) || rc=1
    fi
    if ((rc)); then
        echo "70-k8s: FAILED (exit $rc) after $((SECONDS - t0)) s; component logs in $state.logs" >&2
    else
        echo "70-k8s: passed in $((SECONDS - t0)) s"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

phase "install (packages, Go peers, helm)"
tests/harness/k8s/cluster install

phase "e2e suite binary (tests/harness/k8s/e2e) and ginkgo"
tests/harness/peers/build cinder-csi-e2e cinder-csi-e2e-1.37 ginkgo >/dev/null

phase "driver release binary"
CARGO_INCREMENTAL=0 cargo build --release --locked --quiet --bin cinder-csi

if [[ $backend == openstack ]] && ! tests/harness/openstack/ostack status >/dev/null 2>&1; then
    # The cluster's driver talks to the test cloud: this stage starts it, and stops it in the
    # trap (a cloud that was already up is left as it was).
    phase "test cloud install and up (tests/harness/openstack/ostack)"
    ostack_started=1
    tests/harness/openstack/ostack install
    tests/harness/openstack/ostack up
fi

phase "up --backend $backend"
timeout "${K8S_UP_TIMEOUT_S:-1500}" tests/harness/k8s/cluster up --backend "$backend" -f tests/harness/k8s/values-test.yaml
tests/harness/k8s/cluster status >/dev/null
eval "$(tests/harness/k8s/cluster env)"

# A real Prometheus scrapes both plugins through the chart's ServiceMonitor and PodMonitors from
# here on (tests/harness/monitoring/cluster.sh start; stopped in the trap).
phase "monitoring start (Prometheus through the chart's monitors)"
monitoring=1
tests/harness/monitoring/cluster.sh start

ran=0
# The worker nodes' systemctl bridge (the [Disruptive] specs' kubelet restarts) without a
# cluster: the real node agent loop and node-systemctl, about 12 s.
phase "tests/harness/k8s/node-systemctl-test.sh (no cluster)"
timeout 120 tests/harness/k8s/node-systemctl-test.sh
ran=$((ran + 1))
for t in tests/harness/k8s/lifecycle*; do
    [[ -x $t ]] || continue
    phase "$t"
    K8S_BACKEND=$backend "$t"
    ran=$((ran + 1))
done
if [[ -x tests/harness/k8s/group-snapshots.sh ]]; then
    phase "tests/harness/k8s/group-snapshots.sh"
    K8S_BACKEND=$backend tests/harness/k8s/group-snapshots.sh
    ran=$((ran + 1))
fi
phase "tests/harness/k8s/mkfs-options.sh"
K8S_BACKEND=$backend timeout 600 tests/harness/k8s/mkfs-options.sh
ran=$((ran + 1))
# Credentials rotated in the chart's Secret while the cluster runs (test cloud only; on the
# local backend it runs on the test cloud's cluster below). Bounded: four claims across three
# swaps of the mounted Secret, each taken by the driver in seconds (97 s in all, measured).
rotation() {
    phase "tests/harness/k8s/rotation.sh"
    timeout 600 tests/harness/k8s/rotation.sh
    ran=$((ran + 1))
}
if [[ $backend == openstack ]]; then rotation; fi
if [[ -x tests/harness/k8s/e2e.sh ]]; then
    phase "tests/harness/k8s/e2e.sh"
    tests/harness/k8s/e2e.sh
    ran=$((ran + 1))
    # The storage suite's group snapshot specs, from Kubernetes 1.37.2's suite with 1.38's fix
    # of their claim size: 1.34's read group snapshot contents as v1beta1, which
    # external-snapshotter v8.7.0 no longer converts to (e2e.sh --help). Two of its four
    # patterns, both of which must run and pass: dynamic with the Delete policy, pre-provisioned
    # with Retain (the other two cross the same two choices; ~185 s each, one process, and the
    # run's 85 min bound has no room for all four: `tests/harness/k8s/e2e.sh --groups` runs them all).
    phase "tests/harness/k8s/e2e.sh --groups (1.37.2 suite, 2 of 4 patterns)"
    tests/harness/k8s/e2e.sh --groups --focus 'External.Storage.*group snapshots: Go definition.*(Testpattern:  \(delete policy\)|Pre-provisioned VolumeGroupSnapshot \(retain policy\))'
fi
# The alerts on what Prometheus recorded of the run: everything since `start` (no alert fires),
# one attach slowed past three quarters of the sidecar timeout (the near-timeout alert fires),
# the controller scaled to 0 (the absent alert fires); each a promtool case of real series.
# Bounded: the slow attach is 140 s, the rest waits on scrapes; the trap stops it either way.
# Not beside other tests: the near-timeout alert is the 90th percentile of an hour's attaches, so
# the fast attaches of a test running alongside hide the slow one (tried beside e2e.sh --groups:
# it passed once by hand and failed in the .ci/run of 2026-12-06 04:50, no alert at 19 or 32 min).
phase "tests/harness/monitoring/cluster.sh finish (recorded alerts)"
timeout "${K8S_MONITORING_FINISH_TIMEOUT_S:-900}" tests/harness/monitoring/cluster.sh finish
# Several nodes (issue 24), local backend: the one-node cluster goes and `up --nodes 3` (node-1
# and node-3 in zone-a, node-2 in zone-b) runs tests/harness/k8s/multinode.sh: zones, AllowedTopologies,
# a volume following its pod (deleted, drained), single-writer attachments, raw block
# multi-attach across nodes, a node powered off and the out-of-service taint. The test cloud
# across nodes is not done yet (issue 24).
if [[ $backend == local ]]; then
    phase "monitoring stop"
    monitoring=
    tests/harness/monitoring/cluster.sh stop
    phase "down (1 node)"
    tests/harness/k8s/cluster down
    phase "up --nodes 3 --backend local"
    timeout "${K8S_UP_TIMEOUT_S:-1500}" tests/harness/k8s/cluster up --nodes 3 --backend local -f tests/harness/k8s/values-test.yaml
    eval "$(tests/harness/k8s/cluster env)"
    phase "tests/harness/k8s/multinode.sh (3 nodes)"
    timeout 1200 tests/harness/k8s/multinode.sh
    ran=$((ran + 1))
    # Controller failover (scenario 4): two replicas on one state dir (the StatefulSet scaled
    # to 2 and back), the flock holder kill -9'd, then deleted, around 10 claims (~35 s each).
    phase "tests/harness/k8s/failover.sh --kill9, failover.sh (2 controllers)"
    timeout 600 tests/harness/k8s/failover.sh --kill9
    timeout 600 tests/harness/k8s/failover.sh
    ran=$((ran + 1))
fi
# The test cloud across 3 nodes (one Nova server per node, in its zone; tests/harness/k8s/lib/cloudnet.sh):
# group snapshots through Kubernetes on the test cloud as well (on the local backend above:
# Cinder's group snapshots are cut after CreateVolumeGroupSnapshot is sent, which the local
# backend's never are, and the sidecars keep what the first answer said of the members), the
# credential rotation, in-tree volumes, then the multi-node scenarios and the controller
# failover against Cinder's and Nova's API. A cluster of its own on the test cloud (brought up
# here, with a server per node, and down in the trap unless it was up).
if [[ $backend == local ]]; then
    phase "down (3 nodes, local backend)"
    tests/harness/k8s/cluster down
    if ! tests/harness/openstack/ostack status >/dev/null 2>&1; then
        phase "test cloud install and up (tests/harness/openstack/ostack, 3 node servers)"
        ostack_started=1
        tests/harness/openstack/ostack install
        OSTACK_NODE_COUNT=3 tests/harness/openstack/ostack up
    fi
    phase "up --nodes 3 --backend openstack"
    # values-requests.yaml: the sidecars log each request they send (--v=5), which intree.sh
    # checks against what Kubernetes' CSI translation must send.
    timeout "${K8S_UP_TIMEOUT_S:-1500}" tests/harness/k8s/cluster up --nodes 3 --backend openstack \
        -f tests/harness/k8s/values-test.yaml -f tests/harness/k8s/values-requests.yaml
    eval "$(tests/harness/k8s/cluster env)"
    phase "tests/harness/k8s/group-snapshots.sh (openstack backend)"
    K8S_BACKEND=openstack tests/harness/k8s/group-snapshots.sh
    ran=$((ran + 1))
    rotation
    # In-tree kubernetes.io/cinder volumes through Kubernetes' CSI migration (issue 29): PVs,
    # an inline volume, an in-tree StorageClass, expand, delete, the snapshot refused, every
    # translated request checked (108-149 s measured).
    phase "tests/harness/k8s/intree.sh (openstack backend)"
    K8S_BACKEND=openstack timeout 600 tests/harness/k8s/intree.sh
    ran=$((ran + 1))
    # The live swap from upstream's cinder-csi-plugin v1.36.0 (its own chart) to this chart and
    # back, pods running, as docs/MIGRATING.md says (issue 29): an upstream-made volume restaged
    # on its node and taken by a pod on another node, upstream's snapshot restored, upstream's
    # claims deleted through this driver. 226 s measured on this cluster (2026-12-05 19:07, warm
    # caches); the bound leaves room for a cold build of upstream's plugin image (~160 s, cached
    # after; its binary is in tests/harness/k8s/prebuild's background list).
    phase "tests/harness/k8s/swap.sh (openstack backend)"
    K8S_BACKEND=openstack timeout 900 tests/harness/k8s/swap.sh
    ran=$((ran + 1))
    # Not in this stage yet: multinode.sh and failover.sh --kill9 on the test cloud (issue 24
    # scenarios 1-5 over Cinder and Nova). Both passed by hand on this cluster shape; in the
    # stage's first whole run (2026-12-05 16:46) multinode.sh failed on a race of its own check
    # (a Multi-Attach event before the pod's first status; fixed since, not yet re-run here).
fi
((ran)) || echo "70-k8s: no Kubernetes test in tests/harness/k8s yet; the cluster came up with the driver ready"
