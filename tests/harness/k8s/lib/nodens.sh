# The node's own PID and mount namespace; sourced by tests/harness/k8s/cluster.
#
# Why: the storage e2e suite inspects the node through a privileged "hostexec" pod that mounts
# the node's / at /rootfs and runs `nsenter --mount=/rootfs/proc/1/ns/mnt`: it assumes PID 1 of
# the node's PID namespace is an init whose mount namespace is the kubelet's. On this machine
# PID 1 is the VM's sandbox agent (process_api), which refuses that open even to root. So the
# processes that make up the node (containerd with its shims and containers, and the kubelet)
# run in a PID namespace of our own whose PID 1 is Kubernetes' pause (it reaps the shims
# re-parented to it), inside a mount namespace of our own with /proc remounted for that PID
# namespace: the runtime's rbind of "/" then shows that /proc, /rootfs/proc/1 is our pause, and
# its mount namespace is the kubelet's.
#
# The mount namespace is a copy of the host's made with propagation unchanged: the mounts that
# `up` made shared before it (the kubelet dir, /dev, the local backend's dir) stay in their
# peer groups, so pod volume and staging mounts are seen on the host (the leak checks, `down`)
# as before; containerd's own mounts (overlays, netns, shm under the private state dir) stay in
# the namespace and vanish with it. Killing the namespace's PID 1 kills every process in it.
#
# The control plane (etcd, kube-apiserver, -controller-manager, -scheduler, kube-proxy) stays in
# the host's namespaces: it needs neither view.

# Starts the namespace: `unshare` forks pause as the new PID 1 and waits for it (it stays in the
# host's namespaces); $state/pids/nodens.pid records pause's pid as the host sees it.
#
# On a multi-node cluster (tests/harness/k8s/lib/nodes.sh) each worker node has one such namespace pair,
# entered from its own network namespace ($node_netns): the globals of the node being started
# ($nodens_name, $node_netns) say which.
nodens_start() {
    mkdir -p "$state/bin" "$state/logs" "$state/pids"
    [[ -x $state/bin/pause ]] || pause_binary "$state/bin/pause"
    local net=()
    [[ -n ${node_netns:-} ]] && net=(nsenter "--net=/run/netns/$node_netns" --)
    setsid "${net[@]}" unshare --pid --mount --fork --mount-proc --propagation unchanged -- "$state/bin/pause" \
        </dev/null >>"$state/logs/$nodens_name.log" 2>&1 &
    local u=$! p="" i
    for i in $(seq 50); do
        p=$(pgrep -P "$u" || true)
        [[ -n $p ]] && break
        sleep 0.1
    done
    [[ -n $p ]] || die "node namespace: unshare (pid $u) started no pause"
    echo "$p" >"$state/pids/$nodens_name.pid"
    # Ready once pause runs as PID 1 of the new namespace with its own /proc mounted.
    for i in $(seq 50); do
        [[ $(nodens_exec cat /proc/1/comm 2>/dev/null) == pause ]] && break
        sleep 0.1
    done
    [[ $(nodens_exec cat /proc/1/comm 2>/dev/null) == pause ]] ||
        die "node namespace: pid $p is not PID 1 of a namespace with its own /proc"
    log "node namespace${node_netns:+ of $node_name}: pause is its PID 1 (host pid $p)"
}

# nodens_exec CMD...: runs CMD in the node's namespaces (as a child of nsenter, which forks
# into the PID namespace); its network namespace too (the host's on a one-node cluster).
nodens_exec() {
    nsenter --target "$(<"$state/pids/$nodens_name.pid")" --pid --mount --net -- "$@"
}

# start_in_nodens NAME BINARY ARGS...: `start` inside the node's namespaces. The pid file holds
# the daemon's host pid (nsenter's child), not nsenter's, so that `down` signals the daemon
# itself (nsenter does not forward signals).
start_in_nodens() {
    local name=$1 n p="" i
    start "$name" nsenter --target "$(<"$state/pids/$nodens_name.pid")" --pid --mount --net -- "${@:2}"
    n=$(<"$state/pids/$name.pid")
    for i in $(seq 50); do
        p=$(pgrep -P "$n" || true)
        [[ -n $p ]] && break
        sleep 0.1
    done
    [[ -n $p ]] || die "$name: nsenter (pid $n) started nothing in the node namespace"
    echo "$p" >"$state/pids/$name.pid"
}

# Stops the namespace: pause exits on SIGTERM, and the kernel then kills every process left in
# the namespace; its private mounts go with the last of them. Also finds a pause whose pid
# file was never written (an `up` killed right after starting it).
nodens_stop() {
    local p ps i f
    ps=$(pgrep -x -f -- "$state/bin/pause" || true)
    for f in "$state"/pids/nodens*.pid; do
        [[ -f $f ]] || continue
        f=${f##*/}
        p=$(our_pid "${f%.pid}") && ps+=" $p"
    done
    [[ -n ${ps// /} ]] || { rm -f "$state/pids/nodens.pid"; return 0; }
    # shellcheck disable=SC2086
    kill -TERM $ps 2>/dev/null
    for i in $(seq 50); do
        for p in $ps; do kill -0 "$p" 2>/dev/null && break; p=""; done
        [[ -z $p ]] && break
        sleep 0.1
    done
    for p in $ps; do
        kill -0 "$p" 2>/dev/null || continue
        log "down: node namespace's pause (pid $p) ignored SIGTERM for 5 s; killing it"
        kill -KILL "$p" 2>/dev/null
    done
    rm -f "$state"/pids/nodens*.pid
}
