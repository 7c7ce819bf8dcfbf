#!/usr/bin/env bash
# The conformance runner against the OpenStack backend: `cinder-csi --mode all --backend
# openstack` on the test cloud's cloud.conf, as node-1 (its disks under the hypervisor's by-id
# dir, its id from the metadata URL), for mount and block access. Needs a cloud that is `up`.
# Usage: tests/harness/openstack/sanity.sh ENV_FILE
set -euo pipefail
cd "$(dirname "$0")/../../.."
# shellcheck disable=SC1090
source "$1"
# The tests' HTTP clients (reqwest honours HTTP(S)_PROXY) and the driver reach the cloud on
# loopback: never through a proxy the machine sets (existing NO_PROXY entries are kept).
export NO_PROXY="${NO_PROXY:+$NO_PROXY,}127.0.0.1,localhost"
export no_proxy="${no_proxy:+$no_proxy,}127.0.0.1,localhost"

# shellcheck source=tests/ci/sanity-floor.sh
source tests/ci/sanity-floor.sh
cargo build --quiet -p cinder-csi -p cinder-csi-sanity
tmp=$(mktemp -d /tmp/cinder-csi-ostack-sanity.XXXXXX)
kubelet=$tmp/kubelet
driver_pid=""
cleanup() {
    local rc=$?
    set +e
    if [[ -n $driver_pid ]]; then
        # Bounded: a driver stuck in shutdown gets KILL after 30 s instead of hanging CI.
        kill -TERM "$driver_pid" 2>/dev/null
        for _ in $(seq 1 150); do kill -0 "$driver_pid" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$driver_pid" 2>/dev/null; then
            echo "openstack sanity: the driver did not exit within 30 s of SIGTERM; killing it" >&2
            kill -KILL "$driver_pid" 2>/dev/null
        fi
        wait "$driver_pid" 2>/dev/null
    fi
    if ((rc)) && [[ -f $tmp/driver.log ]]; then
        echo "openstack sanity: last lines of the driver log:" >&2
        tail -n 40 "$tmp/driver.log" >&2
    fi
    findmnt -rn -o TARGET | grep -F "$tmp/" | sort -r | while read -r m; do umount "$m" || umount -l "$m"; done
    findmnt -rn -o TARGET | grep -qF "$tmp/" || rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT

mkdir -p "$kubelet/plugins/sanity" "$kubelet/pods/sanity"
printf 'type: %s\n' "$OSTACK_VOLUME_TYPE" >"$tmp/parameters.yaml"
printf 'type: %s\n' "$OSTACK_MULTIATTACH_TYPE" >"$tmp/mutable.yaml"
target/debug/cinder-csi --mode all --backend openstack --cloud-config "$OSTACK_CLOUD_CONF" \
    --by-id-dir "$OSTACK_NODE_1_BY_ID_DIR" --metadata-url "$OSTACK_NODE_1_METADATA_URL" \
    --kubelet-dir "$kubelet" --endpoint "unix://$tmp/csi.sock" >"$tmp/driver.log" 2>&1 &
driver_pid=$!
for _ in $(seq 1 300); do
    [[ -S $tmp/csi.sock ]] && break
    kill -0 "$driver_pid" 2>/dev/null || { echo "openstack sanity: cinder-csi exited before serving" >&2; exit 1; }
    sleep 0.2
done
[[ -S $tmp/csi.sock ]] || { echo "openstack sanity: cinder-csi did not create its socket within 60 s" >&2; exit 1; }

failed=0
for access in mount block; do
    out=$tmp/$access.txt
    set +e
    target/debug/cinder-csi-sanity --endpoint "unix://$tmp/csi.sock" --access-type "$access" \
        --staging-dir "$kubelet/plugins/sanity/staging" --mount-dir "$kubelet/pods/sanity/mount" \
        --fs-type xfs --parameters "$tmp/parameters.yaml" --mutable-parameters "$tmp/mutable.yaml" \
        --timeout 180s --test-volume-prefix "sanity-$access" | tee "$out"
    rc=${PIPESTATUS[0]}
    set -e
    echo "openstack sanity: $access: $(tail -n 1 "$out")"
    ((rc == 0)) || failed=1
    sanity_floor "openstack sanity: $access" "$out" || failed=1
done
exit "$failed"
