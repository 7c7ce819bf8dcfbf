#!/usr/bin/env bash
# The whole test suite: format, lints, unit + integration tests (as root, on real loop devices
# and mounts), the conformance runner against both access types, and the real-OpenStack tests.
# Each stage is a script in tests/ci/ so it can also be run on its own.
#
# Every stage has a time bound (a hung test must fail CI with its stage's name, not run into
# CI's own limit with no word): 30 min unless the stage names its own in a
# `# time-bound-min: N` line (the real-OpenStack stage: 55), and the whole run 85 min (CI stops
# at 90, install-deps included). Override with STAGE_TIMEOUT_MIN (the default),
# OPENSTACK_STAGE_TIMEOUT_MIN (50-openstack's) and TOTAL_TIMEOUT_MIN.
set -euo pipefail
cd "$(dirname "$0")/.."

stage_limit=$((${STAGE_TIMEOUT_MIN:-30} * 60))
total_limit=$((${TOTAL_TIMEOUT_MIN:-85} * 60))

stages=(tests/ci/[0-9]*.sh)
started=$SECONDS
# A stage that may not fit (70-k8s when its components are not built yet) reads when the
# whole run's bound ends.
export CINDER_CSI_RUN_DEADLINE=$(($(date +%s) + total_limit))
# The cluster stage's Go peers build in the background from now on (tests/harness/k8s/prebuild says
# why); 70-k8s waits for what is left. Killed when the run ends, however it ends.
if [[ -e tests/harness/k8s/ENABLED && ${CINDER_CSI_SKIP_K8S:-} != 1 && ${CINDER_CSI_K8S_PREBUILD:-1} == 1 ]]; then
    trap 'tests/harness/k8s/prebuild stop' EXIT
    tests/harness/k8s/prebuild start
fi
echo "disk free at start: $(df -h --output=avail . | tail -1 | tr -d ' ') (a cold run of .ci/run writes ~22 GB: target/ 4, the Go build cache, modules and peers 13, the fuzz build 4, images 1, the test cloud 1; with those caches warm ~7 GB, measured 2026-12-06)"
for stage in "${stages[@]}"; do
    limit=$stage_limit
    own=$(sed -n 's/^# time-bound-min: *\([0-9]\+\).*/\1/p' "$stage" | head -1)
    [[ -n $own ]] && limit=$((own * 60))
    [[ $stage == */50-openstack.sh && -n ${OPENSTACK_STAGE_TIMEOUT_MIN:-} ]] &&
        limit=$((OPENSTACK_STAGE_TIMEOUT_MIN * 60))
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
        # A full disk fails a build with a message deep in its log (machines here differ).
        df -h . /tmp /var/tmp 2>/dev/null | sort -u >&2
        exit "$rc"
    fi
    echo "<== ${stage} passed in $((SECONDS - t)) s (disk free $(df -h --output=avail . | tail -1 | tr -d ' '))"
done
echo "all ${#stages[@]} stages passed in $((SECONDS - started)) s"
