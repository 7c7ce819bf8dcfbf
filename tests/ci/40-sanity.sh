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
driver=target/debug/cinder-csi
sanity=target/debug/cinder-csi-sanity
results=target/sanity
mkdir -p "$results"

tmp=$(mktemp -d /tmp/cinder-csi-sanity.XXXXXX)
kubelet="$tmp/kubelet"
local_dir="$tmp/local"
sock="$tmp/csi.sock"
log="$tmp/driver.log"
driver_pid=""

cleanup() {
    local rc=$?
    # Best effort from here on: one failed step must not skip the rest.
    set +e +o pipefail
    if [[ -n "$driver_pid" ]] && kill -0 "$driver_pid" 2>/dev/null; then
        kill -TERM "$driver_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$driver_pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$driver_pid" 2>/dev/null || true
        wait "$driver_pid" 2>/dev/null || true
    fi
    if [[ $rc -ne 0 && -f "$log" ]]; then
        echo "40-sanity: last lines of the driver log:" >&2
        tail -n 40 "$log" >&2 || true
    fi
    # Only what this stage created: mounts below $tmp (deepest first) and loop devices whose
    # backing file is below $tmp.
    findmnt -rn -o TARGET | grep -F "$tmp/" | sort -r | while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    if [[ -d "$local_dir" ]]; then
        find "$local_dir" -type f -print0 | while IFS= read -r -d '' f; do
            losetup -j "$f" -O NAME -n 2>/dev/null | while read -r dev; do losetup -d "$dev" 2>/dev/null || true; done
        done
    fi
    if findmnt -rn -o TARGET | grep -qF "$tmp/"; then
        echo "40-sanity: mounts below $tmp remain; not deleting it" >&2
    else
        rm -rf "$tmp"
    fi
    exit $rc
}
trap cleanup EXIT

mkdir -p "$kubelet/plugins/sanity" "$kubelet/pods/sanity" "$local_dir"
"$driver" --mode all --backend local --local-dir "$local_dir" --node-id sanity-node \
    --kubelet-dir "$kubelet" --endpoint "unix://$sock" >"$log" 2>&1 &
driver_pid=$!

for _ in $(seq 1 300); do
    [[ -S "$sock" ]] && break
    kill -0 "$driver_pid" 2>/dev/null || { echo "40-sanity: cinder-csi exited before serving" >&2; exit 1; }
    sleep 0.2
done
[[ -S "$sock" ]] || { echo "40-sanity: cinder-csi did not create $sock within 60 s" >&2; exit 1; }

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
