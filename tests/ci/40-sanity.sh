#!/usr/bin/env bash
# CSI conformance: cinder-csi-sanity against `cinder-csi --mode all --backend local` on real
# loop devices and mounts (as root), once with --access-type mount and once with block.
# Switched on by the file sanity/ENABLED-IN-CI. --fs-type xfs: ext4 online grow needs
# CAP_SYS_RESOURCE, which root lacks on some CI machines; --mutable-parameters retypes between
# the local backend's two volume types, so the ControllerModifyVolume cases run.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ ! -e sanity/ENABLED-IN-CI ]]; then
    echo "40-sanity: skipped: sanity/ENABLED-IN-CI is absent (it is created once the local backend and the"
    echo "40-sanity: Controller/Node services have landed on main; until then there is no driver to check)"
    exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "40-sanity: must run as root (the local backend attaches loop devices and mounts)" >&2
    exit 1
fi

# shellcheck source=tests/ci/sanity-floor.sh
source tests/ci/sanity-floor.sh
cargo build --quiet -p cinder-csi -p cinder-csi-sanity
sanity=target/debug/cinder-csi-sanity
results=target/sanity
mkdir -p "$results"

# shellcheck source=tests/ci/local-driver.sh
source tests/ci/local-driver.sh
local_driver_dir 40-sanity
mkdir -p "$kubelet/plugins/sanity" "$kubelet/pods/sanity"
local_driver_start sanity-node

total=0
failed=()
# Extra runner flags (e.g. --parameters FILE.yaml) can be given in SANITY_ARGS.
read -r -a extra <<<"${SANITY_ARGS:-}"
for access in mount block; do
    echo "40-sanity: --access-type $access"
    out="$results/$access.txt"
    set +e
    "$sanity" --endpoint "unix://$sock" --access-type "$access" \
        --staging-dir "$kubelet/plugins/sanity/staging" --mount-dir "$kubelet/pods/sanity/mount" \
        --fs-type xfs --mutable-parameters sanity/ci/mutable-local.yaml \
        --junit "$results/junit-$access.xml" "${extra[@]}" | tee "$out"
    rc=${PIPESTATUS[0]}
    set -e
    cases=$(grep -cE '^(PASS|FAIL|SKIP)  ' "$out" || true)
    total=$((total + cases))
    echo "40-sanity: $access: $cases cases ($(tail -n 1 "$out"))"
    [[ $rc -eq 0 ]] || failed+=("$access (exit $rc)")
    sanity_floor "40-sanity: $access" "$out" || failed+=("$access (skips/passes off the floor)")
done
echo "40-sanity: $total cases run against cinder-csi --backend local (mount + block)"
if ((${#failed[@]})); then
    echo "40-sanity: conformance failures with --access-type ${failed[*]}; JUnit in $results/" >&2
    exit 1
fi
