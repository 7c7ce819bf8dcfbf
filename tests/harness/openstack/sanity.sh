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
# shellcheck source=tests/ci/local-driver.sh
source tests/ci/local-driver.sh
driver_scratch ostack-sanity

mkdir -p "$kubelet/plugins/sanity" "$kubelet/pods/sanity"
printf 'type: %s\n' "$OSTACK_VOLUME_TYPE" >"$tmp/parameters.yaml"
printf 'type: %s\n' "$OSTACK_MULTIATTACH_TYPE" >"$tmp/mutable.yaml"
driver_start target/debug/cinder-csi --mode all --backend openstack --cloud-config "$OSTACK_CLOUD_CONF" \
    --by-id-dir "$OSTACK_NODE_1_BY_ID_DIR" --metadata-url "$OSTACK_NODE_1_METADATA_URL" \
    --kubelet-dir "$kubelet" --endpoint "unix://$sock"

failed=0
for access in mount block; do
    out=$tmp/$access.txt
    set +e
    target/debug/cinder-csi-sanity --endpoint "unix://$sock" --access-type "$access" \
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
