#!/usr/bin/env bash
# Runs the Kubernetes "External Storage" e2e suite (tests/harness/k8s/e2e, built by tests/harness/peers/build)
# against the cluster tests/harness/k8s/cluster runs.
#
#   tests/harness/k8s/e2e.sh [--focus RE] [--skip RE] [--testdriver FILE] [--full] [--procs N] [--list]
#                    [--suite PEER | --groups] [--multiattach]
#
#   (default)        the CI focus: a fixed, bounded set of specs (tests/harness/k8s/e2e-ci-focus.txt)
#   --full           every External Storage spec of the driver definition
#   --focus RE       run the specs whose full text matches RE instead (ginkgo -focus)
#   --skip RE        skip these too (on top of tests/harness/k8s/e2e-skips.txt)
#   --testdriver F   the driver definition (default: tests/harness/k8s/testdriver-<backend>.yaml,
#                    the backend the installed controller runs, or $CINDER_CSI_K8S_BACKEND)
#   --procs N        parallel ginkgo processes (default $E2E_PROCS or 3); the selected
#                    [Serial] and [Disruptive] specs run after the others, one at a time
#                    ([Disruptive]: on `cluster up --nodes N`, N > 1, whose nodes take SSH)
#   --list           print the specs that would run (a dry run, no cluster needed) and exit
#   --suite PEER     the suite binary (a peer of tests/harness/peers/versions; default cinder-csi-e2e,
#                    Kubernetes 1.34.4's). Another suite than the default runs in one process
#                    (the ginkgo CLI is 1.34's).
#   --groups         the storage suite's group snapshot specs (the Go definition,
#                    tests/harness/k8s/e2e/groupsnapshot.go) from cinder-csi-e2e-1.37: 1.34's read
#                    VolumeGroupSnapshotContents as v1beta1, which external-snapshotter v8.7.0
#                    does not convert to (it stores v1beta2); 1.37's read v1, and carry 1.38's
#                    fix of their claim size (tests/harness/peers/patches). Fails when none ran.
#   --multiattach    the second definition and pass: the backend's definition with RWX and
#                    ReadOnlyMany declared and its class of the backend's multiattach volume
#                    type (local-multiattach; the test cloud's OSTACK_MULTIATTACH_TYPE); unless
#                    --focus, the specs they enable that such a type serves: two pods on two
#                    nodes sharing a raw block volume, ReadOnlyMany restores and clones. (The
#                    suite asks RWX of filesystem patterns too, which the driver refuses: a
#                    filesystem written from several nodes is corrupted.)
#
# Specs in tests/harness/k8s/e2e-skips.txt never run (each line says why). The JSON report, the
# ginkgo output and the framework's logs go to $E2E_OUT (default a fresh directory under
# /var/tmp/cinder-csi-e2e). Once it runs, the last line is "N passed, N failed, N skipped"
# (skipped: specs selected that the suite skipped itself or e2e-skips.txt removed); the
# exit status is 0 only when nothing failed and something passed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
here=$repo/tests/harness/k8s

# The CI focus: tests/harness/k8s/e2e-ci-focus.txt, one regex per line (the spec's text after
# "External Storage [Driver: ...]"), joined into one -focus.
ci_focus() {
    printf 'External.Storage.*(%s)' "$(sed -e 's/[[:space:]]\{1,\}#.*$//' -e '/^#/d' -e '/^[[:space:]]*$/d' \
        "$here/e2e-ci-focus.txt" | paste -sd'|')"
}

focus=$(ci_focus) user_skip="" testdriver="" list=0 suite_peer=cinder-csi-e2e summary_args=()
multiattach=0 focus_given=0
procs=${E2E_PROCS:-3}
while [[ $# -gt 0 ]]; do
    case $1 in
        --focus) focus=$2 focus_given=1; shift 2 ;;
        --skip) user_skip=$2; shift 2 ;;
        --testdriver) testdriver=$2; shift 2 ;;
        --full) focus='External.Storage' focus_given=1; shift ;;
        --multiattach) multiattach=1; shift ;;
        --procs) procs=$2; shift 2 ;;
        --list) list=1; shift ;;
        --suite) suite_peer=$2; shift 2 ;;
        --groups)
            suite_peer=cinder-csi-e2e-1.37 focus='External.Storage.*group snapshots: Go definition'
            summary_args=(--no-skips); shift ;;
        -h | --help) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "e2e.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
done

# shellcheck source=tests/harness/k8s/lib.sh
. "$here/lib.sh"
if [[ -z $testdriver ]]; then
    backend=local
    [[ $list == 1 ]] || backend=$(k8s_backend)
    testdriver=$here/testdriver-$backend.yaml
fi
[[ -f $testdriver ]] || { echo "e2e.sh: no driver definition $testdriver" >&2; exit 2; }
testdriver=$(cd "$(dirname "$testdriver")" && pwd)/$(basename "$testdriver")

# Skips: the regex of every line of e2e-skips.txt (text before " # reason"), and --skip.
skip=$(sed -e 's/[[:space:]]\{1,\}#.*$//' -e '/^#/d' -e '/^[[:space:]]*$/d' "$here/e2e-skips.txt" |
    paste -sd'|')
# (An empty side must not join: "|RE" would match, and so skip, every spec.)
if [[ -n $user_skip ]]; then skip=${skip:+$skip|}$user_skip; fi

if [[ $list == 0 && ! -r $KUBECONFIG ]]; then
    echo "e2e.sh: no kubeconfig at $KUBECONFIG (tests/harness/k8s/cluster up)" >&2
    echo "0 passed, 1 failed, 0 skipped"
    exit 2
fi
# The [Disruptive] specs SSH to the pod's node to stop and start its kubelet: on a multi-node
# cluster every worker node has an sshd and the cluster's key (tests/harness/k8s/lib/nodessh.sh).
# Without a key the suite skips them itself ("No SSH Key for provider").
kstate=${K8S_STATE:-${CINDER_CSI_K8S_STATE:-/var/tmp/cinder-csi-k8s}}
if [[ -z ${KUBE_SSH_KEY_PATH:-} && -f $kstate/ssh/id_ed25519 ]]; then
    export KUBE_SSH_USER=root KUBE_SSH_KEY_PATH=$kstate/ssh/id_ed25519
fi
bins=$("$repo/tests/harness/peers/build" "$suite_peer" ginkgo)
suite=$(sed -n 1p <<<"$bins")
ginkgo=$(sed -n 2p <<<"$bins")
if [[ $list == 1 ]]; then
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
else
    out=${E2E_OUT:-$(mkdir -p /var/tmp/cinder-csi-e2e && mktemp -d /var/tmp/cinder-csi-e2e/run.XXXXXX)}
fi
mkdir -p "$out"
# The ginkgo CLI runs a precompiled suite only under a name ending in .test.
ln -sf "$suite" "$out/cinder-csi-e2e.test"

# The definition's StorageClass file (StorageClass.FromFile, relative to -repo-root).
class_file() { sed -n 's/^  FromFile: \([^ ]*storageclass[^ ]*\.yaml\).*/\1/p' "$1" | head -1; }
if ((multiattach)); then
    case $(basename "$testdriver") in
        testdriver-local.yaml) ma_type=local-multiattach ;;
        testdriver-openstack.yaml)
            ma_type=$(eval "$("$repo/tests/harness/openstack/ostack" env 2>/dev/null)" && echo "${OSTACK_MULTIATTACH_TYPE:-}") ||
                ma_type="" ;;
        *) ma_type="" ;;
    esac
    [[ -n $ma_type ]] || { echo "e2e.sh: --multiattach: no multiattach volume type for $(basename "$testdriver")" >&2; exit 2; }
    class=$(class_file "$testdriver")
    [[ -n $class ]] || { echo "e2e.sh: $(basename "$testdriver") names no StorageClass file" >&2; exit 2; }
    sed "/^parameters:\$/a\\  type: $ma_type" "$repo/$class" >"$out/storageclass-e2e-multiattach.yaml"
    ma_def=$out/$(basename "$testdriver" .yaml)-multiattach.yaml
    sed -e "s#^  FromFile: $class#  FromFile: $(realpath --relative-to="$repo" "$out/storageclass-e2e-multiattach.yaml")#" \
        -e 's/^\(    RWX:\) *false/\1 true/' -e 's/^\(    capReadOnlyMany:\) *false/\1 true/' "$testdriver" >"$ma_def"
    if ! grep -q "^  type: $ma_type\$" "$out/storageclass-e2e-multiattach.yaml" ||
        ! grep -q '^    RWX: true' "$ma_def" || ! grep -q '^    capReadOnlyMany: true' "$ma_def" ||
        [[ $(class_file "$ma_def") == "$class" ]]; then
        echo "e2e.sh: --multiattach: could not derive a multiattach definition from $testdriver" >&2
        exit 2
    fi
    testdriver=$ma_def
    ((focus_given)) ||
        focus='External.Storage.*Dynamic PV (\(block volmode\)\] multiVolume .*single volume from pods on different node|\((block volmode|default fs)\)\] provisioning .*\(ROX mode\))'
    echo "e2e: multiattach definition $ma_def (volume type $ma_type)"
fi

# drv_args DEFINITION: the flags naming the driver definition (in $drv). With a suite that
# reads the group snapshot API external-snapshotter v8.7.0 stores (not 1.34's: --groups), the
# same definition also through the Go one (tests/harness/k8s/e2e/groupsnapshot.go): the YAML one cannot
# name a VolumeGroupSnapshotClass, so only this runs the group snapshot specs. 1.34's spec
# panics on it ("interface conversion: interface {} is nil, not []interface {}" at
# volume_group_snapshottable.go:188, after 420 and 868 s: `--full` on 3 nodes, 2026-12-05).
drv_args() {
    drv=(-storage.testdriver="$1")
    [[ $suite_peer == cinder-csi-e2e ]] || drv+=(-cinder.groupsnapshot-testdriver="$1")
}
other_args=(-repo-root="$repo" -report-dir="$out")
# On the test cloud the group snapshot specs' volumes get the volume type pinned to one backend
# (a Cinder group's rule).
if [[ $(basename "$testdriver") == testdriver-openstack.yaml ]]; then
    gtype=$(eval "$("$repo/tests/harness/openstack/ostack" env 2>/dev/null)" && echo "${OSTACK_GROUP_VOLUME_TYPE:-}") || gtype=""
    [[ -n $gtype ]] && other_args+=(-cinder.groupsnapshot-volume-type="$gtype")
fi
drv_args "$testdriver"
args=("${drv[@]}" "${other_args[@]}")
if [[ $list == 1 ]]; then
    "$out/cinder-csi-e2e.test" "${args[@]}" -kubeconfig=/dev/null -ginkgo.dry-run \
        -ginkgo.focus="$focus" -ginkgo.skip="$skip" -ginkgo.v -ginkgo.no-color \
        -ginkgo.json-report="$out/list.json" >/dev/null 2>&1 || true
    python3 - "$out/list.json" <<'EOF'
import json, sys
for suite in json.load(open(sys.argv[1])):
    for s in suite.get("SpecReports") or []:
        if s.get("LeafNodeType") == "It" and s["State"] == "passed":
            print(" ".join(s["ContainerHierarchyTexts"] + [s["LeafNodeText"]]))
EOF
    exit 0
fi

# The driver definition declares capacity: the release must publish it.
if grep -qE '^ *capacity: *true' "$testdriver" &&
    [[ $(k get csidriver cinder.csi.openstack.org -o jsonpath='{.spec.storageCapacity}') != true ]]; then
    echo "e2e.sh: $(basename "$testdriver") declares capacity but the CSIDriver has no storageCapacity:" \
        "install with -f tests/harness/k8s/values-test.yaml (tests/harness/k8s/cluster up -f ...)" >&2
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
fi
# Nodes in more than one zone (`cluster up --nodes 3`): the suite's class is pinned to the zone
# with the most nodes (allowedTopologies). Its restore and clone specs let the scheduler place
# the consumer anywhere, and a volume from a snapshot or another volume must be in its
# source's zone (Cinder's rule, and the local backend's: "volume must be in the same
# availability zone as the snapshot"): seen failing 3 of the CI focus on 3 nodes, 2026-12-05.
# The multi-node specs still get the zone's 2 nodes; the topology suite sets its own
# allowedTopologies. Across zones: tests/harness/k8s/multinode.sh. Only the parallel pass: the serial
# volumeLimits spec fills a node it picks at random, in any zone, with the class's volumes.
par_args=("${args[@]}")
zone_key=topology.cinder.csi.openstack.org/zone
zone=$(k get nodes -o jsonpath="{range .items[*]}{.metadata.labels.${zone_key//./\\.}}{'\n'}{end}" |
    sed '/^$/d' | sort | uniq -c | sort -k1,1nr -k2 | awk '{ print $2 }')
if (($(wc -l <<<"$zone") > 1)); then
    zone=$(head -1 <<<"$zone")
    class=$(class_file "$testdriver")
    pinned=$out/$(basename "$class" .yaml)-$zone.yaml pinned_def=$out/$(basename "$testdriver" .yaml)-$zone.yaml
    [[ -n $class ]] || { echo "e2e.sh: $(basename "$testdriver") names no StorageClass file to pin" >&2; exit 2; }
    cp "$repo/$class" "$pinned"
    printf 'allowedTopologies:\n  - matchLabelExpressions:\n      - {key: %s, values: [%s]}\n' \
        "$zone_key" "$zone" >>"$pinned"
    # FromFile is read relative to -repo-root.
    sed "s#^  FromFile: $class#  FromFile: $(realpath --relative-to="$repo" "$pinned")#" "$testdriver" >"$pinned_def"
    [[ $(class_file "$pinned_def") != "$class" ]] ||
        { echo "e2e.sh: could not pin $class in $(basename "$testdriver")" >&2; exit 2; }
    drv_args "$pinned_def"
    par_args=("${drv[@]}" "${other_args[@]}")
    echo "e2e: nodes in several zones: the parallel pass's class is pinned to $zone ($pinned)"
fi
echo "e2e: $(basename "$testdriver"), $procs process(es), output in $out"
start=$SECONDS
rc=0
# ginkgo_pass NAME PROCS LABEL_FILTER TIMEOUT SUITE-ARGS...: one ginkgo run of the selected specs
# that match LABEL_FILTER, its JSON report in report-NAME.json, its output appended to ginkgo.log.
# --timeout bounds the pass; a spec still running then fails (interrupted).
ginkgo_pass() {
    local r=0
    echo "=== pass $1: $2 process(es), labels $3" >>"$out/ginkgo.log"
    (cd "$out" && "$ginkgo" run --procs="$2" --timeout="$4" --no-color --label-filter="$3" \
        --focus="$focus" --skip="$skip" --json-report="report-$1.json" --output-dir="$out" \
        --silence-skips ./cinder-csi-e2e.test -- "${@:5}" -kubeconfig="$KUBECONFIG") \
        >>"$out/ginkgo.log" 2>&1 || r=$?
    echo "e2e: pass $1 exited $r after $((SECONDS - start)) s"
    ((rc)) || rc=$r
}
# E2E_TIMEOUT (h, m or s) bounds both passes together.
timeout=${E2E_TIMEOUT:-2h}
case $timeout in
    *h) limit=$((${timeout%h} * 3600)) ;;
    *m) limit=$((${timeout%m} * 60)) ;;
    *s) limit=${timeout%s} ;;
    *) echo "e2e.sh: E2E_TIMEOUT '$timeout' is not N[hms]" >&2; exit 2 ;;
esac
: >"$out/ginkgo.log"
if [[ $suite_peer == cinder-csi-e2e ]]; then
    # Two passes. The suite marks [Serial] the specs that need the cluster to themselves
    # (volumeLimits fills a node, "any volume data source" installs a cluster-wide populator)
    # and [Disruptive] those that stop a node's kubelet; they only carry ginkgo labels, which
    # do not keep ginkgo from running them beside others. So: everything else in parallel,
    # then those one at a time.
    ginkgo_pass parallel "$procs" '!Serial && !Disruptive' "${limit}s" "${par_args[@]}"
    left=$((limit - (SECONDS - start)))
    if ((left > 0)); then
        ginkgo_pass serial 1 'Serial || Disruptive' "${left}s" "${args[@]}"
    else
        echo "e2e: no time left for the serial pass (E2E_TIMEOUT=$timeout)"
        rc=1
    fi
    reports=$out/report-parallel.json
    [[ ! -f $out/report-serial.json ]] || reports+=,$out/report-serial.json
else
    (cd "$out" && ./cinder-csi-e2e.test "${par_args[@]}" -kubeconfig="$KUBECONFIG" \
        -ginkgo.timeout="${limit}s" -ginkgo.no-color -ginkgo.focus="$focus" \
        -ginkgo.skip="$skip" -ginkgo.silence-skips -ginkgo.json-report=report.json) \
        >"$out/ginkgo.log" 2>&1 || rc=$?
    reports=$out/report.json
fi
echo "e2e: ginkgo exited $rc after $((SECONDS - start)) s (log: $out/ginkgo.log)"
[[ -f ${reports%%,*} ]] || { tail -n 40 "$out/ginkgo.log"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
python3 "$here/e2e-summary.py" "${summary_args[@]}" "$reports" "$focus" "$skip"
