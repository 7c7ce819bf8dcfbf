#!/usr/bin/env bash
# Stock csi-sanity (csi-test v5.4.0 and v5.6.0, built by tests/harness/peers/build) against
# `cinder-csi --mode all --backend local` on real loop devices and mounts (as root), mount and
# block, with no -ginkgo.skip and no mutable-parameters file (tests/harness/stock-sanity/run.sh). The
# failed specs must be exactly those in tests/harness/stock-sanity/expected-failures.tsv.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ $(id -u) -ne 0 ]]; then
    echo "45-stock-sanity: must run as root (the local backend attaches loop devices and mounts)" >&2
    exit 1
fi
t0=$SECONDS
cargo build --quiet -p cinder-csi
results=target/stock-sanity/local
# shellcheck source=tests/ci/local-driver.sh
source tests/ci/local-driver.sh
on_local_driver_exit() { echo "45-stock-sanity: $((SECONDS - t0)) s in all"; }
local_driver_dir 45-stock-sanity
local_driver_start stock-sanity-node

tests/harness/stock-sanity/run.sh local "$sock" "$kubelet" "$results"
