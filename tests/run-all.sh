#!/usr/bin/env bash
# The whole test suite: format, lints, unit + integration tests (as root, on real loop devices
# and mounts), the conformance runner against both access types, and the real-OpenStack tests.
# Each stage is a script in tests/ci/ so it can also be run on its own.
#
# Every stage has a time bound (a hung test must fail CI with its stage's name, not run into
# CI's own limit with no word): 45 min for the real-OpenStack and the Kubernetes stages, 30 for
# the others, and the whole run 85 min (CI stops at 90, install-deps included). Override with
# STAGE_TIMEOUT_MIN / OPENSTACK_STAGE_TIMEOUT_MIN / K8S_STAGE_TIMEOUT_MIN / TOTAL_TIMEOUT_MIN.
set -euo pipefail
cd "$(dirname "$0")/.."

stage_limit=$((${STAGE_TIMEOUT_MIN:-30} * 60))
openstack_limit=$((${OPENSTACK_STAGE_TIMEOUT_MIN:-45} * 60))
# The Kubernetes stage builds the cluster's components when their cache is cold.
k8s_limit=$((${K8S_STAGE_TIMEOUT_MIN:-45} * 60))
total_limit=$((${TOTAL_TIMEOUT_MIN:-85} * 60))

stages=(tests/ci/[0-9]*.sh)
started=$SECONDS
for stage in "${stages[@]}"; do
    limit=$stage_limit
    [[ $stage == */50-openstack.sh ]] && limit=$openstack_limit
    [[ $stage == */70-k8s.sh ]] && limit=$k8s_limit
    left=$((total_limit - (SECONDS - started)))
    if ((left <= 0)); then
        echo "!!! ${stage} not started: the whole run's ${total_limit} s are used up" >&2
        exit 124
    fi
    ((left < limit)) && limit=$left
    echo "==> ${stage} (time bound ${limit} s)"
    t=$SECONDS
    rc=0
    # SIGTERM first so the stage's traps clean up (50-openstack brings the cloud down), then
    # SIGKILL 2 min later if it has not ended.
    timeout --kill-after=120 "$limit" bash "$stage" || rc=$?
    if ((rc == 124 || rc == 137)); then
        echo "!!! ${stage} timed out after $((SECONDS - t)) s (bound ${limit} s)" >&2
        exit 124
    elif ((rc)); then
        echo "!!! ${stage} failed (exit ${rc}) after $((SECONDS - t)) s" >&2
        exit "$rc"
    fi
    echo "<== ${stage} passed in $((SECONDS - t)) s"
done
echo "all ${#stages[@]} stages passed in $((SECONDS - started)) s"
