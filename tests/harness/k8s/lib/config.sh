# Config files of the test cluster's daemons, all under $state; sourced by tests/harness/k8s/cluster.

# The files of one node live in $nstate: $state itself on a one-node cluster, $state/nodes/nI
# for worker node I of a multi-node one (tests/harness/k8s/lib/nodes.sh sets the node's globals).

containerd_config() {
    mkdir -p "$nstate/containerd" "$nstate/cni/net.d"
    cat >"$nstate/containerd/config.toml" <<EOF
version = 2
root = "$nstate/containerd/root"
state = "$nstate/containerd/state"
[grpc]
  address = "$ctr_sock"
[ttrpc]
  address = "$ctr_sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # Root lacks CAP_SYS_RESOURCE: lowering a container's oom_score_adj below ours would fail.
  restrict_oom_score_adj = true
  enable_cdi = false
  # Pod network namespaces under $state (down finds them with the other mounts).
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    # Nothing is ever pulled: the images are imported (tests/harness/k8s/lib/images.sh).
    discard_unpacked_layers = false
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$nstate/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$cni_bin"
    conf_dir = "$nstate/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""
EOF
    # A bridge of our own, no masquerading (pods only talk to this host), so CNI adds no
    # iptables rule; host-local keeps its leases under $state.
    cat >"$nstate/cni/net.d/10-cinder-csi.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$cni_net",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$nstate/cni/ipam",
        "ranges": [[{"subnet": "$pod_cidr"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
EOF
}

kubelet_config() {
    cat >"$nstate/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $pki/$kubelet_cert.crt
tlsPrivateKeyFile: $pki/$kubelet_cert.key
containerRuntimeEndpoint: unix://$ctr_sock
# This host: cgroup v1 (hybrid), no systemd, no swap accounting.
cgroupDriver: cgroupfs
cgroupRoot: /$cg_root$cg_sub
failCgroupV1: false
failSwapOn: false
podLogsDir: $nstate/pod-logs
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
# The disk is shared and mostly full: no eviction or image GC because of it (every image is
# imported once and cannot be pulled again). Several kubelets on one host (as kind runs them):
# none evicts at all, each sees the whole host's disk and memory.
$(if ((nodes > 1)); then
        echo 'evictionHard: {memory.available: 100Mi, nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}'
    else
        echo 'evictionHard: {memory.available: 100Mi, nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}'
    fi)
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 110
# The kubelet's own oom_score_adj (-999 by default) needs CAP_SYS_RESOURCE to set.
oomScoreAdj: 0
syncFrequency: 10s
fileCheckFrequency: 10s
EOF
}

kube_proxy_config() {
    cat >"$nstate/kube-proxy-config.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $state/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $cluster_cidr
hostnameOverride: $node_name
bindAddress: 127.0.0.1
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
oomScoreAdj: 0
# Leave the host's sysctls as they are: conntrack, and route_localnet (localhost NodePorts).
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

# The chart values of a backend, written to $state/values-BACKEND.yaml.
chart_values() {
    local f=$state/values-$1.yaml
    case $1 in
        local)
            # The controller and node share the local backend's state dir; the controller
            # "attaches" with loop devices, so it is privileged and sees /dev. Each node
            # plugin's id is its Kubernetes node's name (the downward API): the backend's
            # servers, and so its attachment records, are the nodes (one node: the host name,
            # as before; several: node-I, not one host name for all).
            # The controller sees the kubelet dir's mounts (HostToContainer) to freeze a group
            # snapshot's mounted members (FIFREEZE through their staging mounts).
            # Several nodes: the backend has the nodes' two zones, and each node plugin reports
            # its node's (CINDER_CSI_NODE_AZ from the node's topology.kubernetes.io/zone, which
            # the apiserver's PodTopologyLabels admission copies onto the pod when it is bound),
            # so the kubelet labels the node with the driver's zone key from NodeGetInfo.
            local node_env="{name: CINDER_CSI_NODE_ID, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}"
            local zones_arg=""
            if ((nodes > 1)); then
                node_env+=", {name: CINDER_CSI_NODE_AZ, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['$zone_key']\"}}}"
                zones_arg=", \"--local-zones=$(node_zones)\""
            fi
            # Several nodes: a cloud.conf of one section, a small attach limit per node
            # (NodeGetInfo max_volumes_per_node → CSINode allocatable), so the suite's [Serial]
            # volumeLimits spec, which fills one node up to it, makes K8S_NODE_ATTACH_LIMIT
            # volumes, not the default 256. One node keeps no Secret, as the CI's one-node
            # phase has always run (the limit was measured on 3 nodes only).
            local secret="secret: {enabled: false}"
            if ((nodes > 1)); then
                secret="secret: {enabled: true, create: true, data: {BlockStorage: {node-volume-attach-limit: ${K8S_NODE_ATTACH_LIMIT:-12}}}}"
            fi
            cat >"$f" <<EOF
$secret
node:
  kubeletDir: $kubelet_dir
  extraArgs: [--backend=local, --local-dir=$state/local]
  extraEnv: [$node_env]
  extraVolumes: [{name: local-dir, hostPath: {path: $state/local, type: DirectoryOrCreate}}]
  extraVolumeMounts: [{name: local-dir, mountPath: $state/local, mountPropagation: HostToContainer}]
controller:
  extraArgs: [--backend=local, --local-dir=$state/local$zones_arg]
  securityContext: {privileged: true}
  extraVolumes:
    - {name: local-dir, hostPath: {path: $state/local, type: DirectoryOrCreate}}
    - {name: dev, hostPath: {path: /dev, type: Directory}}
    - {name: kubelet-dir, hostPath: {path: $kubelet_dir, type: Directory}}
  extraVolumeMounts:
    - {name: local-dir, mountPath: $state/local}
    - {name: dev, mountPath: /dev}
    - {name: kubelet-dir, mountPath: $kubelet_dir, mountPropagation: HostToContainer}
EOF
            ;;
        openstack)
            [[ -f $ostack_env ]] || die "no $ostack_env: is the test cloud up (tests/harness/openstack/ostack status)?"
            # shellcheck disable=SC1090
            (source "$ostack_env" && openstack_values) >"$f"
            ;;
        *) die "unknown backend '$1' (local or openstack)" ;;
    esac
    echo "$f"
}

# Values for the test cloud, from its env.sh (run in a subshell that sourced it): its
# cloud.conf as the Secret; on one node, node-1 of the test hypervisor as this node (its by-id
# directory and metadata URL); on several, node-I as node I (lib/cloudnet.sh: the metadata
# URL names the pod's node, downward API; the by-id directory is node-I's in node I's mount
# namespace). With the cloud reachable from the cluster (lib/cloudnet.sh) the cloud.conf takes
# Keystone at the gateway and the catalog's internal endpoints, and the controller runs on the
# pod network; else on the host network, as the cloud listens on 127.0.0.1 only.
openstack_values() {
    [[ -f ${OSTACK_CLOUD_CONF:-} ]] || die "the test cloud's env.sh names no cloud.conf (OSTACK_CLOUD_CONF)"
    local conf host_net=true by_id=${OSTACK_NODE_1_BY_ID_DIR:?} md=${OSTACK_NODE_1_METADATA_URL:?} env=""
    conf=$(cat "$OSTACK_CLOUD_CONF")
    if [[ -f $state/cloud-dnat ]]; then
        host_net=false
        [[ $OS_AUTH_URL == http://127.0.0.1:* ]] || die "the test cloud's Keystone is not on 127.0.0.1: $OS_AUTH_URL"
        conf=$(sed -e "s#^auth-url *=.*#auth-url = http://$(cloud_gateway):${OS_AUTH_URL#http://127.0.0.1:}#" \
            -e 's/^\[Global\]$/[Global]\nos-endpoint-type = internal/' <<<"$conf")
    fi
    if ((nodes > 1)); then
        [[ $md == http://127.0.0.1:*/node-1/* ]] || die "the test cloud's metadata URL is not http://127.0.0.1:PORT/node-1/...: $md"
        by_id=$state/by-id
        # Kubernetes expands $(K8S_NODE_NAME) in the args from the container's env.
        md=${md/127.0.0.1/$(cloud_gateway)}
        md=${md/\/node-1\//\/\$(K8S_NODE_NAME)\/}
        env="  extraEnv: [{name: K8S_NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]"
    fi
    cat <<EOF
secret:
  enabled: true
  create: true
  data:
    cloud.conf: |
$(sed 's/^/      /' <<<"$conf")
node:
  kubeletDir: $kubelet_dir
  extraArgs:
    - --by-id-dir=$by_id
    - --metadata-url=$md
$env
  # The hypervisor's links come and go as files in this directory (no mounts), so a plain bind
  # shows them; HostToContainer would need the host path to be a shared mount (runc refuses a
  # private one), which it is not.
  extraVolumes: [{name: by-id, hostPath: {path: $by_id, type: Directory}}]
  extraVolumeMounts: [{name: by-id, mountPath: $by_id}]
controller:
  hostNetwork: $host_net
EOF
}
