# Worker nodes of a multi-node cluster (`tests/harness/k8s/cluster up --nodes N`, N > 1); sourced by
# tests/harness/k8s/cluster. A one-node cluster uses none of this: its node is the host's network.
#
# Node I (1..N) is named node-I and has:
#   - its own network namespace cinder-csi-k8s-nI, joined to the host by a veth (ck8snI on
#     the host, eth0 inside) on the host bridge cinderk8sn (10.245.0.0/24; the host is .1, the
#     node 10.245.0.(10+I)), default route through the host; the host routes the node's pod
#     CIDR 10.244.I.0/24 to it, so pods of different nodes reach each other (no NAT);
#   - its own PID and mount namespace in there (lib/nodens.sh: pause as PID 1), in which
#     $state/nodes/nI/kubelet is bind-mounted on /var/lib/kubelet: the node's kubelet, its
#     pods and the suite's hostexec pods see their own /var/lib/kubelet; the mounts made
#     there show on the host under $state/nodes/nI/kubelet (a shared mount), where `down`
#     and the leak checks find them;
#   - its own containerd (root, state, socket under $state/nodes/nI/containerd), CNI bridge
#     cinderk8s0 inside its network namespace, kube-proxy (iptables rules of that namespace
#     only), and kubelet (certificate system:node:node-I, cgroupRoot /cinder-csi-k8s/nI,
#     eviction and image GC off as kind sets them, the labels below);
#   - the zone label topology.kubernetes.io/zone: odd nodes zone-a, even ones zone-b (3
#     nodes: 2 in zone-a, 1 in zone-b). The apiserver's PodTopologyLabels admission copies
#     it onto each pod bound to the node, and the node plugin reads it from there (downward
#     API, CINDER_CSI_NODE_AZ; lib/config.sh). Not the driver's own key
#     topology.cinder.csi.openstack.org/zone: the kubelet sets that one from the node
#     plugin's NodeGetInfo and refuses the registration when a label the node already has
#     says otherwise ("detected topology value collision").
# The control plane stays on the host (its network, apiserver on $node_ip, which the nodes
# reach through their default route).

node_net_prefix=10.245.0
node_bridge=cinderk8sn
node_netns_prefix=cinder-csi-k8s-n
zone_key=topology.kubernetes.io/zone
driver_zone_key=topology.cinder.csi.openstack.org/zone

# node_ctx I: sets the globals the config writers and lib/nodens.sh use to those of node I.
node_ctx() {
    local i=$1
    nstate=$state/nodes/n$i
    node_name=node-$i
    kubelet_ip=$node_net_prefix.$((10 + i))
    kubelet_cert=kubelet-n$i
    cg_sub=/n$i
    ctr_sock=$nstate/containerd/containerd.sock
    pod_cidr=10.244.$i.0/24
    node_netns=$node_netns_prefix$i
    nodens_name=nodens-n$i
    nsfx=-n$i
    node_zone=$(((i % 2) ? 0 : 1))
    node_zone=zone-$([[ $node_zone == 0 ]] && echo a || echo b)
    # Over the test cloud: its Nova server's zone, as a cloud provider labels nodes (cloudnet.sh;
    # `up` checked the cloud has the node; `down` needs no zone, nor the cloud up).
    [[ $(cat "$state/backend" 2>/dev/null) != openstack ]] || node_zone=$(cloud_node_zone "$i" 2>/dev/null || echo "$node_zone")
}

# The zones of the cluster's nodes, comma-separated, in order (zone-a,zone-b).
node_zones() {
    local i zones=()
    for i in $(node_list); do
        node_ctx "$i"
        [[ " ${zones[*]} " == *" $node_zone "* ]] || zones+=("$node_zone")
    done
    local IFS=,
    echo "${zones[*]}"
}

# The node numbers of the cluster in $state (1 on a one-node cluster).
node_list() {
    local n
    n=$(cat "$state/nodes.count" 2>/dev/null || echo 1)
    seq 1 "$n"
}

nodes_pki() {
    local i
    for i in $(node_list); do
        node_ctx "$i"
        [[ -f $pki/$kubelet_cert.crt ]] && continue
        cert "$kubelet_cert" "system:node:$node_name" system:nodes "DNS:$node_name,IP:$kubelet_ip,IP:127.0.0.1"
        kubeconfig "$kubelet_cert" "$kubelet_cert"
    done
    ssh_keys_make
    for i in $(node_list); do node_ctx "$i"; node_ssh_config; done
}

# The host bridge, each node's network namespace, veth, addresses and routes.
nodes_net_up() {
    local i
    if ! ip link show "$node_bridge" >/dev/null 2>&1; then
        ip link add "$node_bridge" type bridge
        ip addr add "$node_net_prefix.1/24" dev "$node_bridge"
        ip link set "$node_bridge" up
    fi
    for i in $(node_list); do
        node_ctx "$i"
        ip netns add "$node_netns"
        ip link add "ck8sn$i" type veth peer name eth0 netns "$node_netns"
        ip link set "ck8sn$i" master "$node_bridge" up
        ip -n "$node_netns" link set lo up
        ip -n "$node_netns" addr add "$kubelet_ip/24" dev eth0
        ip -n "$node_netns" link set eth0 up
        ip -n "$node_netns" route add default via "$node_net_prefix.1"
        ip route add "$pod_cidr" via "$kubelet_ip" dev "$node_bridge"
        # The node forwards between its pods' bridge and eth0; bridged pod traffic goes
        # through its iptables (kube-proxy's Service rules). Per network namespace.
        ip netns exec "$node_netns" sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward &&
            echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables'
    done
}

# Every node's namespaces, its /var/lib/kubelet, containerd; waits for each containerd.
nodes_start_runtime() {
    local i
    for i in $(node_list); do
        node_ctx "$i"
        mkdir -p "$nstate/kubelet" "$nstate/pod-logs"
        make_shared "$nstate/kubelet"
    done
    for i in $(node_list); do
        node_ctx "$i"
        nodens_start
        nodens_exec mount --bind "$nstate/kubelet" "$kubelet_dir"
        start_in_nodens "containerd$nsfx" containerd --config "$nstate/containerd/config.toml"
    done
    for i in $(node_list); do
        node_ctx "$i"
        wait_for "$node_name: containerd serving" 60 "$(peer crictl)" -r "unix://$ctr_sock" version
        node_ssh_start
    done
}

# Every node's kube-proxy and kubelet; waits for every node to be Ready.
nodes_start_kubelets() {
    local i
    for i in $(node_list); do
        node_ctx "$i"
        node_start_kubelet
    done
    for i in $(node_list); do
        node_ctx "$i"
        wait_for "node $node_name ($node_zone) Ready" 180 kc wait --for=condition=Ready "node/$node_name" --timeout=5s
    done
}

# The node's kube-proxy and kubelet (node_ctx's node).
node_start_kubelet() {
    start_in_nodens "kube-proxy$nsfx" "$(peer kube-proxy)" --config="$nstate/kube-proxy-config.yaml"
    node_kubelet_start
}
# The kubelet alone (also the node's `systemctl start kubelet`, lib/nodessh.sh).
node_kubelet_start() {
    start_in_nodens "kubelet$nsfx" "$(peer kubelet)" --config="$nstate/kubelet-config.yaml" \
        --kubeconfig="$state/$kubelet_cert.kubeconfig" --root-dir="$kubelet_dir" \
        --cert-dir="$nstate/kubelet/pki" --hostname-override="$node_name" --node-ip="$kubelet_ip" \
        --node-labels="$zone_key=$node_zone" --v=2
}

# down's part for the worker nodes, before the control plane stops: each kubelet, its pod
# sandboxes through its containerd (so the CNI plugins undo their work), kube-proxy, containerd.
nodes_stop() {
    local i p crictl
    crictl=$("$repo/tests/harness/peers/build" --path crictl)
    for i in $(node_list); do
        node_ctx "$i"
        stop_daemon "node-agent$nsfx"
        stop_daemon "sshd$nsfx"
        stop_daemon "kubelet$nsfx"
    done
    for i in $(node_list); do
        node_ctx "$i"
        if [[ -x $crictl && -S $ctr_sock ]] && our_pid "containerd$nsfx" >/dev/null; then
            local cr=("$crictl" -r "unix://$ctr_sock" -t 30s)
            for p in $("${cr[@]}" pods -q 2>/dev/null); do
                "${cr[@]}" stopp "$p" >/dev/null 2>&1
                "${cr[@]}" rmp -f "$p" >/dev/null 2>&1
            done
        fi
        stop_daemon "kube-proxy$nsfx"
        stop_daemon "containerd$nsfx"
    done
}

# down's part after every process is gone: network namespaces (their iptables rules, the CNI
# bridges and veths go with them), the host bridge (and the routes through it).
nodes_net_down() {
    local ns
    for ns in $(ip netns list 2>/dev/null | awk -v p="$node_netns_prefix" 'index($1, p) == 1 { print $1 }'); do
        ip netns delete "$ns" 2>/dev/null
    done
    ip link show "$node_bridge" >/dev/null 2>&1 && ip link delete "$node_bridge"
    return 0
}

nodes_status() {
    local i n rc=0
    for i in $(node_list); do
        node_ctx "$i"
        for n in "nodens$nsfx" "containerd$nsfx" "kube-proxy$nsfx" "kubelet$nsfx" "sshd$nsfx" "node-agent$nsfx"; do
            if alive "$n"; then echo "$node_name $n: pid $(<"$state/pids/$n.pid")"; else echo "$node_name $n: not running"; rc=1; fi
        done
    done
    return $rc
}

# node_index NODE: I of node-I, checked against the cluster's nodes.
node_index() {
    local i=${1#node-}
    if [[ $1 != node-* || ! $i =~ ^[0-9]+$ ]] || ! node_list | grep -qx "$i"; then
        die "no worker node '$1' in $state (node-1 .. node-$(node_list | tail -1))"
    fi
    echo "$i"
}

# `poweroff node-I`: node I as after a power cut. Its PID namespace's PID 1 is killed, so the
# kernel kills every process of the node (kubelet, kube-proxy, containerd, shims, containers)
# at once, with no chance to clean up; the mounts its pods had, which the host sees through the
# shared kubelet dir, are dropped (lazily: nothing of the node uses them any more). Its network
# namespace and state dir stay, like a machine's NIC and disk. Idempotent.
nodes_poweroff() {
    local i p m
    i=$(node_index "$1")
    node_ctx "$i"
    if p=$(our_pid "$nodens_name"); then
        kill -KILL "$p"
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        ! kill -0 "$p" 2>/dev/null || die "poweroff $node_name: its PID 1 (pid $p) survived SIGKILL"
    fi
    rm -f "$state/pids/"{"$nodens_name","containerd$nsfx","kube-proxy$nsfx","kubelet$nsfx","sshd$nsfx"}.pid
    for _ in 1 2 3; do
        m=$(awk -v p="$nstate/kubelet/" 'index($2, p) == 1 { print $2 }' /proc/self/mounts | sort -r)
        [[ -z $m ]] && break
        # A mount may already be gone with a peer's (shared propagation): not an error here.
        for p in $m; do umount -l "$p" 2>/dev/null || true; done
    done
    log "$node_name powered off (every process of it killed, its mounts dropped)"
}

# `poweron node-I`: boots node I again (namespaces, kubelet dir, containerd, kube-proxy,
# kubelet, as `up` started them) and waits for it to be Ready. A node that runs is left as is.
nodes_poweron() {
    local i
    i=$(node_index "$1")
    node_ctx "$i"
    if ! our_pid "$nodens_name" >/dev/null; then
        nodens_start
        nodens_exec mount --bind "$nstate/kubelet" "$kubelet_dir"
        cloud_node_bind "$i" # the test cloud's backend: the node's own by-id dir (lib/cloudnet.sh)
        start_in_nodens "containerd$nsfx" containerd --config "$nstate/containerd/config.toml"
        wait_for "$node_name: containerd serving" 60 "$(peer crictl)" -r "unix://$ctr_sock" version
        node_ssh_start
        node_start_kubelet
    fi
    wait_for "node $node_name ($node_zone) Ready" 180 kc wait --for=condition=Ready "node/$node_name" --timeout=5s
}
