#!/usr/bin/env bash
# Stock csi-sanity (tests/harness/stock-sanity/run.sh: csi-test v5.4.0 and v5.6.0, mount and block, no
# -ginkgo.skip, no mutable-parameters file) against `cinder-csi --mode all --backend openstack`
# on the test cloud's cloud.conf, as node-1 (like tests/harness/openstack/sanity.sh). The failed specs
# must be exactly those in tests/harness/stock-sanity/expected-failures.tsv. Needs a cloud that is `up`;
# outside CI hold `flock -s /var/tmp/cinder-csi-ostack.lock` around it.
# Usage: tests/harness/openstack/stock-sanity.sh ENV_FILE
set -euo pipefail
cd "$(dirname "$0")/../../.."
# shellcheck disable=SC1090
source "$1"
export NO_PROXY="${NO_PROXY:+$NO_PROXY,}127.0.0.1,localhost"
export no_proxy="${no_proxy:+$no_proxy,}127.0.0.1,localhost"

cargo build --quiet -p cinder-csi
tmp=$(mktemp -d /tmp/cinder-csi-ostack-stock-sanity.XXXXXX)
kubelet=$tmp/kubelet
driver_pid=""
cleanup() {
    local rc=$?
    set +e
    if [[ -n $driver_pid ]]; then
        kill -TERM "$driver_pid" 2>/dev/null
        for _ in $(seq 1 150); do kill -0 "$driver_pid" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$driver_pid" 2>/dev/null; then
            echo "openstack stock sanity: the driver did not exit within 30 s of SIGTERM; killing it" >&2
            kill -KILL "$driver_pid" 2>/dev/null
        fi
        wait "$driver_pid" 2>/dev/null
    fi
    if ((rc)) && [[ -f $tmp/driver.log ]]; then
        echo "openstack stock sanity: last lines of the driver log:" >&2
        tail -n 40 "$tmp/driver.log" >&2
    fi
    findmnt -rn -o TARGET | grep -F "$tmp/" | sort -r | while read -r m; do umount "$m" || umount -l "$m"; done
    findmnt -rn -o TARGET | grep -qF "$tmp/" || rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT

mkdir -p "$kubelet"
printf 'type: %s\n' "$OSTACK_VOLUME_TYPE" >"$tmp/parameters.yaml"
target/debug/cinder-csi --mode all --backend openstack --cloud-config "$OSTACK_CLOUD_CONF" \
    --by-id-dir "$OSTACK_NODE_1_BY_ID_DIR" --metadata-url "$OSTACK_NODE_1_METADATA_URL" \
    --kubelet-dir "$kubelet" --endpoint "unix://$tmp/csi.sock" >"$tmp/driver.log" 2>&1 &
driver_pid=$!
for _ in $(seq 1 300); do
    [[ -S $tmp/csi.sock ]] && break
    kill -0 "$driver_pid" 2>/dev/null || { echo "openstack stock sanity: cinder-csi exited before serving" >&2; exit 1; }
    sleep 0.2
done
[[ -S $tmp/csi.sock ]] || { echo "openstack stock sanity: cinder-csi did not create its socket within 60 s" >&2; exit 1; }

# 1 GiB volumes (csi-sanity's default is 10 GiB) keep the test cloud's backing store small.
tests/harness/stock-sanity/run.sh openstack "$tmp/csi.sock" "$kubelet" target/stock-sanity/openstack \
    -csi.testvolumeparameters "$tmp/parameters.yaml" \
    -csi.testvolumesize 1073741824 -csi.testvolumeexpandsize 2147483648
