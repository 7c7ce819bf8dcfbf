#!/usr/bin/env bash
# /metrics of a running driver, checked by Prometheus's own tool: `cinder-csi --mode all
# --backend local --http-endpoint` serves a volume lifecycle and a few failing RPCs (driven by
# `cinder-csi ctl`, so the per-RPC counters and histograms exist with several codes), then
#   - Accept: text/plain (and no Accept)  -> Prometheus text 0.0.4, `promtool check metrics`
#   - Accept: application/openmetrics-text -> OpenMetrics 1.0.0 (content type, `# EOF`)
# promtool comes with Debian's `prometheus` package (tests/ci/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ $(id -u) -ne 0 ]]; then
    echo "36-metrics: must run as root (the driver's node service and local backend)" >&2
    exit 1
fi
command -v promtool >/dev/null || {
    echo "36-metrics: promtool not found; install Debian's prometheus package (install-deps.sh)" >&2
    exit 1
}

cargo build --quiet -p cinder-csi
driver=target/debug/cinder-csi

# shellcheck source=tests/ci/local-driver.sh
source tests/ci/local-driver.sh
local_driver_dir 36-metrics
# A free port from the kernel, handed to the driver (it binds before serving the socket).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
local_driver_start metrics-node --http-endpoint "127.0.0.1:$port"

ctl() { "$driver" ctl --endpoint "unix://$sock" --timeout 30 "$@"; }
ctl info >/dev/null
ctl probe >/dev/null
ctl capabilities >/dev/null
ctl node-info >/dev/null
id=$(ctl -o json create-volume metrics-check --size 1Gi | python3 -c 'import json,sys; print(json.load(sys.stdin)["volume_id"])')
ctl get-volume "$id" >/dev/null
ctl list-volumes >/dev/null
ctl get-capacity >/dev/null
# Failures, so the counters carry other codes than Ok (each must fail).
if ctl get-volume no-such-volume >/dev/null 2>&1 ||
    ctl create-volume metrics-bad --fs-type notafs >/dev/null 2>&1; then
    echo "36-metrics: an RPC that must fail succeeded" >&2
    exit 1
fi
ctl delete-volume "$id" >/dev/null

scrape() { # ACCEPT-HEADER OUT-FILE -> prints the content type
    local args=(-fsS -o "$2" -w '%{content_type}' "http://127.0.0.1:$port/metrics")
    if [[ -n "$1" ]]; then args+=(-H "Accept: $1"); fi
    curl "${args[@]}"
}

failed=()
for accept in "text/plain" "" "text/plain;version=0.0.4;q=1,*/*;q=0.1"; do
    ctype=$(scrape "$accept" "$tmp/metrics.txt")
    label=${accept:-no Accept}
    if [[ $ctype != "text/plain; version=0.0.4; charset=utf-8" ]]; then
        failed+=("$label: content type $ctype")
        continue
    fi
    grep -q '^cinder_csi_rpc_requests_total{method="CreateVolume",code="Ok"} 1$' "$tmp/metrics.txt" ||
        failed+=("$label: no CreateVolume OK counter")
    grep -q 'code="NotFound"' "$tmp/metrics.txt" || failed+=("$label: no NotFound counter")
    grep -q 'code="InvalidArgument"' "$tmp/metrics.txt" || failed+=("$label: no InvalidArgument counter")
    # promtool prints lint problems and exits non-zero on any.
    if promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.out" 2>&1; then
        echo "36-metrics: $label: promtool check metrics OK ($(grep -c '^# TYPE' "$tmp/metrics.txt") families)"
    else
        sed 's/^/36-metrics:   /' "$tmp/promtool.out" >&2
        failed+=("$label: promtool check metrics")
    fi
done

ctype=$(scrape "application/openmetrics-text;version=1.0.0;q=0.6,text/plain;version=0.0.4;q=0.3" "$tmp/om.txt")
if [[ $ctype != application/openmetrics-text* ]]; then
    failed+=("OpenMetrics: content type $ctype")
elif [[ $(tail -n 1 "$tmp/om.txt") != "# EOF" ]]; then
    failed+=("OpenMetrics: no # EOF at the end")
else
    echo "36-metrics: Accept: application/openmetrics-text: OpenMetrics 1.0.0 served"
fi

if ((${#failed[@]})); then
    printf '36-metrics: FAIL: %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "36-metrics: /metrics of a running driver passes promtool check metrics and negotiates OpenMetrics"
