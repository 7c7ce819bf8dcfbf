#!/usr/bin/env bash
# Regenerates deploy/function-order.ld, the order in which the release link lays out the
# functions of `cinder-csi` (build.rs passes it to lld; docs/PERFORMANCE.md "Footprint").
#
#   sudo tests/harness/footprint/function-order.sh [--check] [--binary BIN --map MAP]
#
# Why: the kernel maps up to 64 KiB of cached file pages around every page fault of the
# binary's text, so its resident text is about 64 KiB x the number of 64 KiB windows that
# run. Laid out by crate (the default), the few functions a node plugin runs at startup are
# spread over most of the 9 MiB of .text; listed first, in the order below, they share a
# few hundred KiB.
#
# What it does (needs root: loop devices, mount(2), ptrace):
# 1. builds the release binary as shipped, plus a link map of that same link
#    (CINDER_CSI_LINK_MAP, build.rs): the binary has no symbol table, and the map names the
#    input section (one per function) at every address; --binary/--map profile a binary
#    built earlier that way instead;
# 2. runs a node-mode and a controller-mode process on the local backend (default log level,
#    as deployed), sharing one local dir, each under tests/harness/footprint/first-calls.py (which
#    records the order in which functions first run), and drives them with `ctl` in three
#    phases:
#      startup: start, Probe, 3 s idle (and two more short runs of each mode, start, Probe,
#               1 s idle, so that what varies from run to run, e.g. which of tokio's task
#               types is freed first, is listed too);
#      rpc:     NodeGetInfo, capabilities, CreateVolume, ControllerPublish, NodeStage,
#               NodePublish, NodeGetVolumeStats, NodeUnpublish, NodeUnstage (twice: the
#               first stage formats, the second finds the filesystem), the same for a raw
#               block volume, ControllerUnpublish, DeleteVolume;
#      shutdown: SIGTERM until exit;
# 3. tests/harness/footprint/function-order.py names the functions from the link map and writes those
#    that ran: node startup, controller startup, node RPCs, controller RPCs, shutdown; within
#    a phase in the order they first ran.
#
# --check: steps 1-2 only, then says how many listed functions the current build lacks
# (renamed since the list was made: a new toolchain or changed code), how many that ran are
# not listed, and fails when the node startup's functions span more than 8 windows of .text
# beyond what they fill; it changes nothing.
#
# Run it after a toolchain update, a dependency update or a large change of the node's path,
# and commit the new list with the change. A stale list is safe (unknown names are ignored),
# it only makes the idle RSS grow back towards 10 MB.
set -euo pipefail

cd "$(dirname "$0")/../../.."
root=$PWD
check=0 bin= map=
while (($#)); do
    case $1 in
    --check) check=1 ;;
    --binary) bin=$2 && shift ;;
    --map) map=$2 && shift ;;
    *) echo "usage: $0 [--check] [--binary BIN --map MAP]" >&2 && exit 64 ;;
    esac
    shift
done
[[ $(id -u) == 0 ]] || { echo "function-order: needs root (loop devices, mount)" >&2; exit 1; }

out=$root/target/footprint
mkdir -p "$out"
rm -f "$out"/trace.* "$out"/log.*
if [[ -z $bin ]]; then
    # A new name each time: the build script reruns, so the binary is linked (and the map
    # written) even when nothing else changed.
    map=$out/cinder-csi.$(date +%s).map
    CINDER_CSI_LINK_MAP=$map cargo build --release --locked --bin cinder-csi
    bin=target/release/cinder-csi
fi
[[ -f $map ]] || { echo "function-order: no link map $map" >&2; exit 1; }
cp "$bin" "$out/cinder-csi"
bin=$out/cinder-csi
# The client is a copy, so its runs are not counted in the server's profile.
cp "$bin" "$out/ctl"

work=$(mktemp -d /var/tmp/cinder-csi-order.XXXXXX)
pids=()
cleanup() {
    set +e
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    # Mounts under the work dir, innermost first, then the local backend's loop devices.
    awk -v w="$work/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
        xargs -r -n1 umount -l
    for f in "$work"/local/volumes/*.img; do
        [[ -e $f ]] && losetup -j "$f" | cut -d: -f1 | xargs -r -n1 losetup -d
    done
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/kubelet"

start() { # mode trace-name: a driver under the tracer, answering Probe; sets $traced
    rm -f "$work/$1.sock"
    python3 tests/harness/footprint/first-calls.py --map "$map" --out "$out/trace.$2" -- \
        "$bin" --mode="$1" --backend=local --node-id=n1 --local-dir="$work/local" \
        --kubelet-dir="$work/kubelet" --endpoint="unix://$work/$1.sock" >"$out/log.$2" 2>&1 &
    traced=$!
    pids+=("$traced")
    # Under the tracer a start takes seconds: each first call of a function is a stop.
    for _ in $(seq 600); do
        [[ -S $work/$1.sock ]] && ctl "$1" probe >/dev/null 2>&1 && break
        sleep 0.1
    done
    ctl "$1" probe
}
ctl() { # mode args...
    local mode=$1
    shift
    "$out/ctl" ctl --endpoint="unix://$work/$mode.sock" --timeout=120 "$@"
}
for n in 2 3; do
    for mode in node controller; do
        start "$mode" "$mode-$n"
        sleep 1
        # Phase 1 for the shutdown, which the full run below records.
        kill -USR1 "$traced" && sleep 0.2 && kill -TERM "$traced" && wait "$traced" || true
    done
done
start node node
node_pid=$traced
start controller controller
ctrl_pid=$traced
sleep 3
kill -USR1 "$node_pid" "$ctrl_pid" # next phase

ctl node node-info
ctl node capabilities
ctl controller capabilities
round() { # volume-name args...
    local name=$1
    shift
    local id
    id=$(ctl controller -o json create-volume "$name" --size 1Gi "$@" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["volume_id"])')
    ctl controller publish "$id" --node n1 "$@"
    local stage=$work/kubelet/stage-$name target=$work/kubelet/pod-$name
    for _ in 1 2; do
        ctl node stage "$id" --staging-path "$stage" "$@"
        ctl node node-publish "$id" --staging-path "$stage" --target-path "$target" "$@"
        ctl node stats "$id" --volume-path "$target"
        ctl node node-unpublish "$id" --target-path "$target"
        ctl node unstage "$id" --staging-path "$stage"
    done
    ctl controller unpublish "$id" --node n1
    ctl controller delete-volume "$id"
}
round vol-mount --fs-type ext4
round vol-block --block
kill -USR1 "$node_pid" "$ctrl_pid"

# The tracers pass SIGTERM on to the drivers, which drain and exit; the tracers follow.
kill -TERM "$node_pid" "$ctrl_pid"
wait "$node_pid" "$ctrl_pid" || true
pids=()

args=(--map "$map" --text-window 65536
    --phase "node startup=$out/trace.node:0,$out/trace.node-2:0,$out/trace.node-3:0"
    --phase "controller startup=$out/trace.controller:0,$out/trace.controller-2:0,$out/trace.controller-3:0"
    --phase "node rpc=$out/trace.node:1"
    --phase "controller rpc=$out/trace.controller:1"
    --phase "node shutdown=$out/trace.node:2"
    --phase "controller shutdown=$out/trace.controller:2")
if ((check)); then
    python3 tests/harness/footprint/function-order.py "${args[@]}" --check deploy/function-order.ld
else
    python3 tests/harness/footprint/function-order.py "${args[@]}" --write deploy/function-order.ld
fi
