# `tests/harness/k8s/cluster down`: removes everything `up` made, in an order that lets each layer clean
# up after itself first (pod sandboxes through the CRI, so the CNI plugins remove their veths
# and addresses), then by force what is left. Idempotent: each step finds what is still there.
# Sourced by tests/harness/k8s/cluster.

# The pid in $state/pids/NAME.pid, if it still runs the binary it was started as.
our_pid() {
    local f=$state/pids/$1.pid p
    [[ -f $f ]] || return 1
    p=$(<"$f")
    kill -0 "$p" 2>/dev/null || return 1
    echo "$p"
}

stop_daemon() { # TERM, up to 15 s, then KILL
    local p i
    p=$(our_pid "$1") || { rm -f "$state/pids/$1.pid"; return 0; }
    kill -TERM "$p" 2>/dev/null
    for i in $(seq 1 75); do
        kill -0 "$p" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$p" 2>/dev/null; then
        log "down: $1 (pid $p) ignored SIGTERM for 15 s; killing it"
        kill -KILL "$p" 2>/dev/null
    fi
    rm -f "$state/pids/$1.pid"
}

# Processes of the containers (in the kubelet's cgroup root) and containerd's shims (named by
# our socket), which outlive containerd.
leftover_pids() {
    find /sys/fs/cgroup/*/"$cg_root" -name cgroup.procs -exec cat {} + 2>/dev/null || true
    pgrep -f -- "-address $state/" || true
}

# Detach every loop device whose file is the local backend's under $state (or one whose mount
# went lazily, which reads /volumes/<id>.img). A mounted one is only marked autoclear: it goes
# with its last mount.
detach_state_loops() {
    local l f
    for l in /sys/block/loop*/loop/backing_file; do
        [[ -f $l ]] || continue
        f=$(<"$l")
        [[ $f == "$state"/* || $f =~ ^/volumes/[0-9a-f-]{36}\.img ]] &&
            losetup -d "/dev/$(basename "$(dirname "$(dirname "$l")")")" 2>/dev/null
    done
    return 0
}

down() {
    local t0=$SECONDS crictl="" p m l c ns nodes
    [[ -d $state ]] || { log "down: nothing in $state"; leak_report; return; }
    set +e
    cloud_since=$(cat "$state/cloud-since" 2>/dev/null)
    cloud_net_undo
    nodes=$(cat "$state/nodes.count" 2>/dev/null || echo 1)
    # 0. The worker nodes of a multi-node cluster: kubelets, pod sandboxes, kube-proxies,
    #    containerds (lib/nodes.sh); the steps below then find nothing of theirs running.
    ((nodes > 1)) && nodes_stop
    crictl=$("$repo/tests/harness/peers/build" --path crictl)
    # 1. Pod sandboxes through the CRI while containerd and the CNI config are there: the
    #    kubelet first, so it does not restart them.
    stop_daemon kubelet
    if [[ -x $crictl && -S $ctr_sock ]] && our_pid containerd >/dev/null; then
        local cr=("$crictl" -r "unix://$ctr_sock" -t 30s)
        for p in $("${cr[@]}" pods -q 2>/dev/null); do
            "${cr[@]}" stopp "$p" >/dev/null 2>&1
            "${cr[@]}" rmp -f "$p" >/dev/null 2>&1
        done
    fi
    # 2. The daemons, newest first.
    for p in kube-proxy kube-scheduler kube-controller-manager kube-apiserver etcd containerd; do
        stop_daemon "$p"
    done
    # 3. Whatever still runs in a container or shim.
    for _ in 1 2 3; do
        p=$(leftover_pids | sort -u | tr '\n' ' ')
        [[ -z ${p// /} ]] && break
        # shellcheck disable=SC2086
        kill -KILL $p 2>/dev/null
        sleep 0.5
    done
    #    The node's PID namespace (its PID 1 and whatever still runs in it; its private
    #    mounts, containerd's overlays among them, go with it).
    nodens_stop
    #    Multi-node: the nodes' network namespaces (their kube-proxy rules, CNI bridges and
    #    veths), the host bridge and its routes.
    nodes_net_down
    # 4. kube-proxy's iptables/nftables chains (its own cleanup mode removes exactly those).
    local kp
    kp=$("$repo/tests/harness/peers/build" --path kube-proxy)
    if [[ -f $state/kube-proxy-config.yaml && -x $kp ]]; then
        "$kp" --cleanup >/dev/null 2>&1
    fi
    #    What is left of KUBE-* chains (the kubelet's canary chains, a kube-proxy that died
    #    mid-way): no other Kubernetes runs on this machine.
    local ipt t
    for ipt in iptables ip6tables; do
        command -v "$ipt" >/dev/null || continue
        for t in nat filter mangle; do
            "$ipt" -t "$t" -S 2>/dev/null | grep -E '^-A [^ ]+ .*-j KUBE-' | grep -v '^-A KUBE-' |
                sed 's/^-A /-D /' | while read -r rule; do
                    # shellcheck disable=SC2086
                    eval "$ipt -t $t $rule" 2>/dev/null
                done
            for c in $("$ipt" -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ { print $2 }'); do
                "$ipt" -t "$t" -F "$c" 2>/dev/null
            done
            for c in $("$ipt" -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ { print $2 }'); do
                "$ipt" -t "$t" -X "$c" 2>/dev/null
            done
        done
    done
    # 5. Network namespaces made since up (containerd's cni-*), our bridge.
    for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ { print $1 }'); do
        grep -qx "$ns" "$state/netns.before" 2>/dev/null || ip netns delete "$ns" 2>/dev/null
    done
    ip link show "$bridge" >/dev/null 2>&1 && ip link delete "$bridge"
    # 6. Loop devices over the local backend's files first: each holds its file open, so the
    #    local dir's mount would only go lazily below, and the loop's backing file would then read
    #    /volumes/<id>.img, no longer under $state, and stay attached.
    detach_state_loops
    # 6. Mounts under the state dir (pod volumes, the driver's staging mounts, containerd's
    #    overlays and shm), deepest first; then what make_shared did.
    #    The kubelet dir's mounts are ours too when up bound it (it was empty then).
    local kd=""
    grep -qx "bind $kubelet_dir" "$state/mounts.made" 2>/dev/null && kd=$kubelet_dir/
    for _ in 1 2 3; do
        m=$(awk -v p="$state/" -v k="$kd" 'index($2, p) == 1 || (k != "" && index($2, k) == 1) { print $2 }' \
            /proc/self/mounts | sort -r)
        [[ -z $m ]] && break
        for l in $m; do umount "$l" 2>/dev/null || umount -l "$l" 2>/dev/null; done
    done
    if [[ -f $state/mounts.made ]]; then
        tac "$state/mounts.made" | while read -r what path; do
            case $what in
                shared) mount --make-private "$path" 2>/dev/null ;;
                bind) umount "$path" 2>/dev/null || umount -l "$path" 2>/dev/null ;;
                dir) rmdir "$path" 2>/dev/null ;;
            esac
        done
    fi
    # 7. Loop devices over the local backend's files (again: a loop whose node mount was only
    #    lazily gone in 6 detaches now).
    detach_state_loops
    # 8. The kubelet's cgroups (children first; rmdir refuses a cgroup with tasks).
    for c in /sys/fs/cgroup/*/"$cg_root"; do
        [[ -d $c ]] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
    done
    # containerd's shims put their sockets in /run/containerd/s whatever the config says.
    [[ -f $state/run-containerd.made ]] && rm -rf /run/containerd
    # 9. Sysctls back as they were.
    if [[ -f $state/sysctl.before ]]; then
        while IFS== read -r k v; do
            echo "$v" >"/proc/sys/${k//.//}" 2>/dev/null
        done <"$state/sysctl.before"
    fi
    # 10. The state, keeping the logs beside it for a look after a failed run.
    if [[ -d $state/logs ]]; then
        rm -rf "$state.logs"
        cp -r "$state/logs" "$state.logs" 2>/dev/null
    fi
    left=$(awk -v p="$state/" 'index($2, p) == 1 { print $2 }' /proc/self/mounts)
    if [[ -n $left ]]; then
        log "down: mounts still under $state (not removed): $left"
        set -e
        return 1
    fi
    rm -rf "$state"
    set -e
    log "down: removed the cluster in $((SECONDS - t0)) s (logs kept in $state.logs)"
    leak_report
}

# Prints what of any cluster (one node or several) is left on this machine: processes, mounts,
# loop devices, network namespaces, links, routes, iptables rules, cgroups. Fails if anything.
leak_report() {
    local left=() x
    x=$(pgrep -af -- "$state/|k8s/cluster node-agent " | head -5) && left+=("processes: $x")
    x=$(awk -v p="$state/" -v k="$kubelet_dir/" 'index($2, p) == 1 || index($2, k) == 1 || $2 == substr(k, 1, length(k) - 1) { print $2 }' \
        /proc/self/mounts | head -5) && [[ -n $x ]] && left+=("mounts: $x")
    x=$(losetup -l -n -O NAME,BACK-FILE 2>/dev/null | grep -E -e "$state/" -e ' /volumes/[0-9a-f-]{36}\.img') &&
        left+=("loop devices: $x")
    x=$(ip netns list 2>/dev/null | awk -v p="$node_netns_prefix" 'index($1, p) == 1 { print $1 }') &&
        [[ -n $x ]] && left+=("network namespaces: $x")
    x=$(ip -br link 2>/dev/null | awk '$1 ~ /^(cinderk8s|ck8sn)/ { print $1 }') && [[ -n $x ]] && left+=("links: $x")
    x=$(ip route 2>/dev/null | grep -E "^(10\.244\.|$node_net_prefix\.)") && left+=("routes: $x")
    x=$(iptables-save 2>/dev/null | grep -E 'KUBE-|10\.244\.|cinder-csi-k8s-cloud' | head -5) && left+=("iptables: $x")
    x=$(ls -d /sys/fs/cgroup/*/"$cg_root" 2>/dev/null | head -3) && [[ -n $x ]] && left+=("cgroups: $x")
    # A cluster over the test cloud: what it made there (the cloud's own objects stay).
    x=$(cloud_leak_report "${cloud_since:-}" | head -8) && [[ -n $x ]] && left+=("test cloud: $x")
    if ((${#left[@]})); then
        log "down: leak check: left behind:"
        printf '  %s\n' "${left[@]}" >&2
        return 1
    fi
    log "down: leak check: nothing left (processes, mounts, loop devices, network namespaces, links, routes, iptables rules, cgroups${cloud_since:+, Cinder volumes of the driver made since $cloud_since and their attachments, the catalog})"
}
