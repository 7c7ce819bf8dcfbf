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
# shellcheck source=tests/ci/local-driver.sh
source tests/ci/local-driver.sh
driver_scratch ostack-stock-sanity

mkdir -p "$kubelet"
printf 'type: %s\n' "$OSTACK_VOLUME_TYPE" >"$tmp/parameters.yaml"
driver_start target/debug/cinder-csi --mode all --backend openstack --cloud-config "$OSTACK_CLOUD_CONF" \
    --by-id-dir "$OSTACK_NODE_1_BY_ID_DIR" --metadata-url "$OSTACK_NODE_1_METADATA_URL" \
    --kubelet-dir "$kubelet" --endpoint "unix://$sock"

# 1 GiB volumes (csi-sanity's default is 10 GiB) keep the test cloud's backing store small.
tests/harness/stock-sanity/run.sh openstack "$sock" "$kubelet" target/stock-sanity/openstack \
    -csi.testvolumeparameters "$tmp/parameters.yaml" \
    -csi.testvolumesize 1073741824 -csi.testvolumeexpandsize 2147483648
