#!/usr/bin/env bash
# Stock csi-sanity (tests/harness/peers: csi-sanity = v5.4.0, csi-sanity-5.6 = v5.6.0) against
# `cinder-csi --mode all --backend openstack` on the test cloud with the node started with
# --node-id (issue 25's held-out finding: "volume lifecycle should work" and "should be
# idempotent" failed when the node reported an accessible_topology without segments, which
# csi-sanity passes back as the requisite). Three nodes: no metadata at all (no zone: topology
# unset), the zone from the metadata service, and the zone from --node-az. Every focused spec
# must pass. Needs a cloud that is `up`. Usage: tests/harness/openstack/stock-sanity-node-id.sh ENV_FILE
set -euo pipefail
cd "$(dirname "$0")/../../.."
# shellcheck disable=SC1090
source "$1"
export NO_PROXY="${NO_PROXY:+$NO_PROXY,}127.0.0.1,localhost"
export no_proxy="${no_proxy:+$no_proxy,}127.0.0.1,localhost"

cargo build --quiet -p cinder-csi
results=target/stock-sanity/openstack-node-id
mkdir -p "$results"
tmp=$(mktemp -d /tmp/cinder-csi-ostack-node-id.XXXXXX)
pid=""
stop_driver() {
    if [[ -n $pid ]]; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        pid=""
    fi
}
cleanup() {
    local rc=$?
    set +e
    stop_driver
    findmnt -rn -o TARGET | grep -F "$tmp/" | sort -r | while read -r m; do umount "$m" || umount -l "$m"; done
    findmnt -rn -o TARGET | grep -qF "$tmp/" || rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT

dead=http://127.0.0.1:9/openstack/latest/meta_data.json
printf 'type: %s\n' "$OSTACK_VOLUME_TYPE" >"$tmp/parameters.yaml"
failed=()
for variant in no-metadata metadata node-az; do
    case $variant in
        no-metadata) url=$dead extra=() want="topology=None" ;;
        metadata) url=$OSTACK_NODE_1_METADATA_URL extra=() want="zone\": \"$OSTACK_NODE_1_AZ\"" ;;
        node-az) url=$dead extra=(--node-az "$OSTACK_NODE_1_AZ") want="zone\": \"$OSTACK_NODE_1_AZ\"" ;;
    esac
    kubelet=$tmp/$variant/kubelet
    mkdir -p "$kubelet"
    target/debug/cinder-csi --mode all --backend openstack --cloud-config "$OSTACK_CLOUD_CONF" \
        --node-id "$OSTACK_NODE_1_ID" "${extra[@]}" --by-id-dir "$OSTACK_NODE_1_BY_ID_DIR" \
        --metadata-url "$url" --kubelet-dir "$kubelet" --endpoint "unix://$tmp/$variant/csi.sock" \
        >"$results/$variant-driver.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 300); do [[ -S $tmp/$variant/csi.sock ]] && break; sleep 0.2; done
    for build in csi-sanity csi-sanity-5.6; do
        bin=$(tests/harness/peers/build "$build")
        mkdir -p "$kubelet/plugins/$build" "$kubelet/pods/$build"
        report=$results/$variant-$build.xml
        set +e
        timeout 15m "$bin" -csi.endpoint "unix://$tmp/$variant/csi.sock" \
            -csi.stagingdir "$kubelet/plugins/$build/staging" \
            -csi.mountdir "$kubelet/pods/$build/mount" \
            -csi.testvolumeparameters "$tmp/parameters.yaml" -csi.testvolumesize 1073741824 \
            -csi.testvolumeexpandsize 2147483648 \
            -ginkgo.focus 'volume lifecycle should work|should be idempotent' -ginkgo.no-color \
            -ginkgo.junit-report "$report" >"$results/$variant-$build.log" 2>&1
        rc=$?
        set -e
        passed=$(grep -c 'status="passed"' "$report" || true)
        echo "stock sanity --node-id ($variant, $build): exit $rc, $passed specs passed"
        if ((rc)) || ((passed < 3)) || grep -q '<failure' "$report"; then
            failed+=("$variant $build")
            tail -n 30 "$results/$variant-$build.log" | sed 's/^/    | /'
        fi
    done
    grep -q -F "$want" "$results/$variant-driver.log" ||
        failed+=("$variant: NodeGetInfo did not report $want")
    stop_driver
done
if ((${#failed[@]})); then
    printf 'stock sanity --node-id failed: %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "stock sanity --node-id: every focused spec passed (reports in $results)"
