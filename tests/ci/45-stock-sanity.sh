#!/usr/bin/env bash
# Stock csi-sanity (csi-test v5.4.0 and v5.6.0, built by tests/peers/build) against
# `cinder-csi --mode all --backend local` on real loop devices and mounts (as root), mount and
# block, with no -ginkgo.skip and no mutable-parameters file (tests/stock-sanity/run.sh). The
# failed specs must be exactly those in tests/stock-sanity/expected-failures.tsv.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ $(id -u) -ne 0 ]]; then
    echo "45-stock-sanity: must run as root (the local backend attaches loop devices and mounts)" >&2
    exit 1
fi
t0=$SECONDS
cargo build --quiet -p cinder-csi
results=target/stock-sanity/local
tmp=$(mktemp -d /tmp/cinder-csi-stock-sanity.XXXXXX)
kubelet=$tmp/kubelet
local_dir=$tmp/local
sock=$tmp/csi.sock
log=$tmp/driver.log
driver_pid=""
cleanup() {
    local rc=$?
    set +e +o pipefail
    if [[ -n $driver_pid ]] && kill -0 "$driver_pid" 2>/dev/null; then
        kill -TERM "$driver_pid"
        for _ in $(seq 1 150); do kill -0 "$driver_pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$driver_pid" 2>/dev/null
        wait "$driver_pid" 2>/dev/null
    fi
    if ((rc)) && [[ -f $log ]]; then
        echo "45-stock-sanity: last lines of the driver log:" >&2
        tail -n 30 "$log" >&2
    fi
    # Only what this stage made: mounts below $tmp (deepest first), loop devices over its files.
    findmnt -rn -o TARGET | grep -F "$tmp/" | sort -r | while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
    done
    if [[ -d $local_dir ]]; then
        find "$local_dir" -type f -print0 | while IFS= read -r -d '' f; do
            losetup -j "$f" -O NAME -n 2>/dev/null | while read -r dev; do losetup -d "$dev"; done
        done
    fi
    if findmnt -rn -o TARGET | grep -qF "$tmp/"; then
        echo "45-stock-sanity: mounts below $tmp remain; not deleting it" >&2
    else
        rm -rf "$tmp"
    fi
    echo "45-stock-sanity: $((SECONDS - t0)) s in all"
    exit "$rc"
}
trap cleanup EXIT

mkdir -p "$kubelet" "$local_dir"
target/debug/cinder-csi --mode all --backend local --local-dir "$local_dir" --node-id stock-sanity-node \
    --kubelet-dir "$kubelet" --endpoint "unix://$sock" >"$log" 2>&1 &
driver_pid=$!
for _ in $(seq 1 300); do
    [[ -S $sock ]] && break
    kill -0 "$driver_pid" 2>/dev/null || { echo "45-stock-sanity: cinder-csi exited before serving" >&2; exit 1; }
    sleep 0.2
done
[[ -S $sock ]] || { echo "45-stock-sanity: cinder-csi did not create $sock within 60 s" >&2; exit 1; }

tests/stock-sanity/run.sh local "$sock" "$kubelet" "$results"
