#!/usr/bin/env bash
# shellcheck disable=SC2031 # (the sourced cluster script runs in a subshell of its own)
# The worker nodes' systemctl bridge (tests/harness/k8s/lib/node-systemctl and the node agent of
# lib/nodessh.sh) without a cluster: the real agent loop (`node_agent` of tests/harness/k8s/cluster,
# sourced) with a stand-in for what it runs (node_unit), and the real node-systemctl.
#   1. an answer and its exit status come back (show --value, is-active rc 3, an unknown unit rc 5);
#   2. a caller that is gone before the agent answers does not stall the agent: the next call
#      is answered;
#   3. with no agent, systemctl fails within its bound and says so (it waited forever before).
# About 15 s. Exit 0 when all pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
tmp=$(mktemp -d)
agent=""
cleanup() {
    [[ -z $agent ]] || kill "$agent" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "node-systemctl-test: FAILED: $*" >&2; exit 1; }

export K8S_STATE=$tmp/state
mkdir -p "$K8S_STATE/nodes/n1/systemd"
echo 1 >"$K8S_STATE/nodes.count"
# node_ctx 1 as nodes.sh sets it (node-1, $state/nodes/n1): the agent reads the FIFO there.
sd=$K8S_STATE/nodes/n1/systemd
mkfifo "$sd/req"
(
    # shellcheck source=tests/harness/k8s/cluster
    source "$root/tests/harness/k8s/cluster"
    # What the agent runs, stood in: the kubelet's state in a file; "stop" of a slow unit.
    node_unit() {
        case $1 in
            show) cat "$sd/state" ;;
            is-active) cat "$sd/state"; [[ $(<"$sd/state") == active ]] || return 3 ;;
            slow) sleep 2 ;;
            *) echo "Unit $2.service could not be found."; return 5 ;;
        esac
    }
    node_agent node-1
) >"$tmp/agent.log" 2>&1 &
agent=$!
sc() { "$root/tests/harness/k8s/lib/node-systemctl" "$sd" "$@"; }

echo active >"$sd/state"
out=$(sc show kubelet --property ActiveState --value) || fail "show: exit $?"
[[ $out == active ]] || fail "show printed '$out', not 'active'"
echo inactive >"$sd/state"
rc=0; out=$(sc is-active kubelet) || rc=$?
[[ $out == inactive && $rc == 3 ]] || fail "is-active: '$out' rc $rc, not 'inactive' rc 3"
rc=0; out=$(sc status foo) || rc=$?
[[ $out == "Unit foo.service could not be found." && $rc == 5 ]] || fail "unknown unit: '$out' rc $rc"
echo "1. answers and exit statuses: ok"

# 2. A caller killed, with everything it started, while its request waits behind another (the
#    suite's SSH session dropped): the agent must not wait for it to read its answer.
sc slow kubelet >/dev/null 2>&1 &
a=$!
sleep 0.5
setsid "$root/tests/harness/k8s/lib/node-systemctl" "$sd" show kubelet >/dev/null 2>&1 &
b=$!
sleep 0.5
kill -KILL -- "-$b"
wait "$a" "$b" 2>/dev/null || true
echo active >"$sd/state"
out=$(timeout 20 "$root/tests/harness/k8s/lib/node-systemctl" "$sd" show kubelet --value) ||
    fail "the agent did not answer after a caller went away (exit $?)"
[[ $out == *active* ]] || fail "after a caller went away: '$out'"
echo "2. a caller gone mid-request does not stall the agent: ok"

# 3. No agent.
kill "$agent"
wait "$agent" 2>/dev/null || true
agent=""
t=$SECONDS rc=0
out=$(timeout 60 "$root/tests/harness/k8s/lib/node-systemctl" "$sd" show kubelet 2>&1) || rc=$?
[[ $rc == 1 && $out == *"no answer from the node's agent"* ]] ||
    fail "without an agent: rc $rc after $((SECONDS - t)) s: $out"
echo "3. no agent: fails in $((SECONDS - t)) s with \"$out\": ok"
echo "node-systemctl-test: OK"
