#!/usr/bin/env bash
# The whole test suite: format, lints, unit + integration tests (as root, on real loop devices
# and mounts), the conformance runner against both access types, and the real-OpenStack tests.
# Each stage is a script in tests/ci/ so it can also be run on its own.
set -euo pipefail
cd "$(dirname "$0")/.."

stages=(tests/ci/[0-9]*.sh)
started=$SECONDS
for stage in "${stages[@]}"; do
    echo "==> ${stage}"
    t=$SECONDS
    bash "$stage"
    echo "<== ${stage} passed in $((SECONDS - t)) s"
done
echo "all ${#stages[@]} stages passed in $((SECONDS - started)) s"
