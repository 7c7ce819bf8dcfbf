#!/usr/bin/env bash
# Sourced by the CI stages that run `cinder-csi --mode all --backend local` in a scratch
# directory of their own (36-metrics, 40-sanity, 45-stock-sanity, 47-interop), and by the
# conformance runs against the test cloud (tests/harness/openstack/sanity.sh, stock-sanity.sh):
# one way to start the driver and one cleanup, which removes what the run made even when it fails.
#
#   driver_scratch STAGE       $tmp (mktemp) with $kubelet made, $sock and $log named, and the
#                              EXIT trap set; messages start with STAGE
#   local_driver_dir STAGE     the same, and $local_dir made (the local backend's)
#   driver_start CMD [ARG...]  the driver, its output in $log; returns once $sock exists (at most
#                              60 s), exits the stage if it does not
#   local_driver_start NODE-ID [ARG...]
#                              driver_start of target/debug/cinder-csi on the local backend in
#                              $local_dir, on $sock, the ARGs appended
#   on_local_driver_exit       defined by the stage if it wants something printed at the end
#                              (timings); the cleanup calls it last, with the stage's status kept

driver_scratch() {
    ld_stage=$1
    tmp=$(mktemp -d "/tmp/cinder-csi-$ld_stage.XXXXXX")
    kubelet=$tmp/kubelet
    local_dir=""
    sock=$tmp/csi.sock
    log=$tmp/driver.log
    driver_pid=""
    mkdir -p "$kubelet"
    trap local_driver_cleanup EXIT
}

local_driver_dir() {
    driver_scratch "$1"
    local_dir=$tmp/local
    mkdir -p "$local_dir"
}

local_driver_start() {
    local node_id=$1
    shift
    driver_start target/debug/cinder-csi --mode all --backend local --local-dir "$local_dir" \
        --node-id "$node_id" --kubelet-dir "$kubelet" --endpoint "unix://$sock" "$@"
}

driver_start() {
    "$@" >"$log" 2>&1 &
    driver_pid=$!
    for _ in $(seq 1 300); do
        [[ -S $sock ]] && return 0
        kill -0 "$driver_pid" 2>/dev/null || {
            echo "$ld_stage: cinder-csi exited before serving" >&2
            exit 1
        }
        sleep 0.2
    done
    echo "$ld_stage: cinder-csi did not create $sock within 60 s" >&2
    exit 1
}

local_driver_cleanup() {
    local rc=$?
    # Best effort from here on: one failed step must not skip the rest.
    set +e +o pipefail
    if [[ -n $driver_pid ]] && kill -0 "$driver_pid" 2>/dev/null; then
        kill -TERM "$driver_pid"
        for _ in $(seq 1 150); do kill -0 "$driver_pid" 2>/dev/null || break; sleep 0.2; done
        # Bounded: a driver stuck in shutdown is killed, and said so (a shutdown bug to look at).
        if kill -0 "$driver_pid" 2>/dev/null; then
            echo "$ld_stage: the driver did not exit within 30 s of SIGTERM; killing it" >&2
            kill -KILL "$driver_pid" 2>/dev/null
        fi
        wait "$driver_pid" 2>/dev/null
    fi
    if ((rc)) && [[ -f $log ]]; then
        echo "$ld_stage: last lines of the driver log:" >&2
        tail -n 40 "$log" >&2
    fi
    # Only what this stage made: mounts below $tmp (deepest first), loop devices over its files.
    findmnt -rn -o TARGET | grep -F "$tmp/" | sort -r | while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
    done
    if [[ -n $local_dir && -d $local_dir ]]; then
        find "$local_dir" -type f -print0 | while IFS= read -r -d '' f; do
            losetup -j "$f" -O NAME -n 2>/dev/null | while read -r dev; do losetup -d "$dev"; done
        done
    fi
    if findmnt -rn -o TARGET | grep -qF "$tmp/"; then
        echo "$ld_stage: mounts below $tmp remain; not deleting it" >&2
    else
        rm -rf "$tmp"
    fi
    if declare -F on_local_driver_exit >/dev/null; then on_local_driver_exit; fi
    exit "$rc"
}
