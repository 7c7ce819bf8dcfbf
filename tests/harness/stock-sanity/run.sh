#!/usr/bin/env bash
# Runs the stock csi-sanity builds (tests/harness/peers/versions: `csi-sanity` = csi-test v5.4.0, the
# latest tag before GET_SNAPSHOT; `csi-sanity-5.6` = v5.6.0, the newest the Go module proxy
# serves) against a running driver, mount and block, with NO -ginkgo.skip and no
# mutable-parameters file, and checks each JUnit report: the failed specs must be exactly those
# listed for that build in tests/harness/stock-sanity/expected-failures.tsv.
#
# Usage: tests/harness/stock-sanity/run.sh LABEL SOCKET KUBELET_DIR RESULTS_DIR [csi-sanity flags...]
set -euo pipefail
cd "$(dirname "$0")/../../.."
label=$1 sock=$2 kubelet=$3 results=$4
shift 4
builds=(${STOCK_SANITY_BUILDS:-csi-sanity csi-sanity-5.6})
mkdir -p "$results"
failed=()
for build in "${builds[@]}"; do
    bin=$(tests/harness/peers/build "$build")
    for access in mount block; do
        run="$label $build $access"
        report=$results/$build-$access.xml
        out=$results/$build-$access.log
        rm -f "$report"
        # Directories of its own per run, so what one run leaves mounted cannot fail the next.
        # csi-sanity makes mount/ and staging/, not their parents (kubelet makes those).
        dirs=stock-sanity-$build-$access
        mkdir -p "$kubelet/plugins/$dirs" "$kubelet/pods/$dirs"
        echo "--> stock sanity: $run"
        t=$SECONDS
        set +e
        # Each spec's own timeouts bound it; the whole run is bounded here too.
        timeout 25m "$bin" -csi.endpoint "unix://$sock" \
            -csi.stagingdir "$kubelet/plugins/$dirs/staging" \
            -csi.mountdir "$kubelet/pods/$dirs/mount" \
            -csi.testvolumeaccesstype "$access" \
            -ginkgo.junit-report "$report" -ginkgo.timeout 20m -ginkgo.no-color "$@" >"$out" 2>&1
        rc=$?
        set -e
        echo "stock sanity: $run: csi-sanity exit $rc in $((SECONDS - t)) s (log: $out)"
        if ! python3 tests/harness/stock-sanity/check_junit.py tests/harness/stock-sanity/expected-failures.tsv \
            "$build" "$run" "$report"; then
            failed+=("$run")
            tail -n 30 "$out" | sed 's/^/    | /'
        elif ((rc)) && ! grep -q '<failure' "$report"; then
            # csi-sanity failed without a failed spec (a crash, a timeout): not a pass.
            echo "stock sanity: $run: csi-sanity exited $rc with no failed spec in its report"
            failed+=("$run")
        fi
    done
done
if ((${#failed[@]})); then
    echo "stock sanity: not exactly the expected failures: ${failed[*]}" >&2
    exit 1
fi
echo "stock sanity: $label: every run failed exactly the listed specs"
