# The test cloud from the cluster's networks (`up --backend openstack`), so the controller runs
# without the host network (and its namespace can enforce Pod Security `restricted`), and, on
# several nodes, so every node (its node plugin, in the node's network namespace) reaches it.
# The test cloud listens on 127.0.0.1 only (fixed test credentials) and its catalog says so;
# nothing of that changes for its other users. While the cluster is up:
#   - the cluster reaches the cloud's APIs at the host's address on the bridge it comes in on
#     (cloud_gateway: one node, the pod bridge's gateway; several, the host's end of the node
#     bridge, where every node's default route and so every pod's traffic arrives): a DNAT of
#     that bridge's traffic to those ports onto 127.0.0.1 (route_localnet on the bridge only, as
#     kube-proxy does for localhost NodePorts); on several nodes the metadata service's port too;
#   - the catalog's `internal` endpoints of Cinder and Nova name that address (every service of
#     the cloud and every other test uses `public`; Cinder and Nova call each other through
#     `public` too), and the controller's cloud.conf takes Keystone there with
#     `os-endpoint-type = internal`;
#   - several nodes: node-I is the test cloud's Nova server node-I (`ostack up` with
#     OSTACK_NODE_COUNT >= N: odd ones in Nova's zone `nova`, even ones in `az2`, where the
#     local backend's cluster has zone-a and zone-b; the node's topology.kubernetes.io/zone is
#     its server's, cloud_node_zone), its node plugin reads that server's metadata
#     (.../node-I/openstack/latest/meta_data.json: the test metadata service tells servers
#     apart by path), and the server's by-id directory, where the test hypervisor links the
#     disks attached to that server only, is bind-mounted on $state/by-id inside the node's own
#     mount namespace (cloud_node_bind): every node plugin looks in $state/by-id and sees its
#     own server's disks, none of another node's.
# down puts the rule and the endpoints back (cloud_net_undo); the binds go with the nodes'
# namespaces. Sourced by tests/harness/k8s/cluster.

cloud_gateway() {
    if ((nodes > 1)); then echo "$node_net_prefix.1"; else echo "${pod_cidr%.*}.1"; fi
}
cloud_bridge() {
    if ((nodes > 1)); then echo "$node_bridge"; else echo "$bridge"; fi
}

# The test cloud's env.sh variable $1, or "" (a subshell sources it).
ostack_var() {
    # shellcheck disable=SC1090
    (source "$ostack_env" && eval "echo \"\${$1:-}\"")
}

# Several nodes: the test cloud has a server node-I for every node I.
cloud_nodes_check() {
    local have i
    [[ -f $ostack_env ]] || die "no $ostack_env: is the test cloud up (tests/harness/openstack/ostack status)?"
    have=$(ostack_var OSTACK_NODE_COUNT)
    ((${have:-0} >= nodes)) || die "the test cloud has ${have:-no} node server(s), the cluster $nodes nodes: bring it up with OSTACK_NODE_COUNT=$nodes (tests/harness/openstack/ostack down; OSTACK_NODE_COUNT=$nodes tests/harness/openstack/ostack up)"
    for i in $(seq 1 "$nodes"); do
        [[ $(ostack_var "OSTACK_NODE_${i}_NAME") == "node-$i" ]] || die "the test cloud's node $i is not named node-$i"
        [[ -d $(ostack_var "OSTACK_NODE_${i}_BY_ID_DIR") ]] || die "the test cloud's node-$i has no by-id directory"
    done
}

# cloud_node_zone I: the zone of the test cloud's server node-I (nova or az2), which is node
# I's topology.kubernetes.io/zone on this backend (zone-a is nova, zone-b az2).
cloud_node_zone() {
    local z
    z=$(ostack_var "OSTACK_NODE_${1}_AZ")
    [[ -n $z ]] || die "the test cloud has no node-$1 (OSTACK_NODE_${1}_AZ): bring it up with OSTACK_NODE_COUNT=$(node_list | tail -1)"
    echo "$z"
}

# cloud_node_bind I: node I's server's by-id directory on $state/by-id in node I's mount
# namespace (only there: / is private). On `up` and on `poweron`, before the node's kubelet
# starts pods.
cloud_node_bind() {
    [[ $(cat "$state/backend" 2>/dev/null) == openstack ]] || return 0
    node_ctx "$1"
    mkdir -p "$state/by-id"
    nodens_exec mount --bind "$(ostack_var "OSTACK_NODE_${1}_BY_ID_DIR")" "$state/by-id"
}

cloud_net_up() {
    local gw ports keystone_port br extra=""
    gw=$(cloud_gateway) br=$(cloud_bridge)
    # One node: the bridge comes with the first pod's sandbox (the snapshot-controller's; its
    # Deployment counts as available before its one pod runs). Several: the node bridge.
    wait_for "bridge $br with $gw" 120 bash -c "ip -4 addr show $br | grep -q 'inet $gw/'"
    if ((nodes > 1)); then
        extra=,$(ostack_var OSTACK_NODE_1_METADATA_URL | python3 -c 'import sys, urllib.parse; print(urllib.parse.urlsplit(sys.stdin.read().strip()).port)')
    fi
    # shellcheck disable=SC1090
    keystone_port=$(source "$ostack_env" && python3 -c 'import sys, urllib.parse; print(urllib.parse.urlsplit(sys.argv[1]).port)' "$OS_AUTH_URL")
    # The internal endpoints of Cinder and Nova moved to the gateway; the old URLs kept for down.
    ports=$("$repo/tests/harness/openstack/ostack" api --admin identity GET /services |
        python3 -c '
import json, subprocess, sys, urllib.parse
gw, before, ostack = sys.argv[1:]
svc = {s["id"]: s["type"] for s in json.load(sys.stdin)["services"]}
eps = json.loads(subprocess.run([ostack, "api", "--admin", "identity", "GET", "/endpoints?interface=internal"],
                                check=True, capture_output=True).stdout)["endpoints"]
ports, kept = set(), []
for e in eps:
    if svc.get(e["service_id"]) not in ("block-storage", "volumev3", "compute"):
        continue
    u = urllib.parse.urlsplit(e["url"])
    if u.hostname != gw:
        kept.append("%s %s" % (e["id"], e["url"]))
    new = u._replace(netloc=f"{gw}:{u.port}").geturl()
    body = json.dumps({"endpoint": {"url": new}})
    subprocess.run([ostack, "api", "--admin", "identity", "PATCH", "/endpoints/" + e["id"], body],
                   check=True, capture_output=True)
    ports.add(u.port)
with open(before, "a") as f:
    f.writelines(k + "\n" for k in kept)
print(",".join(str(p) for p in sorted(ports)))' "$gw" "$state/catalog.before" "$repo/tests/harness/openstack/ostack")
    [[ -n $ports ]] || die "cloud from pods: the catalog has no internal Cinder or Nova endpoint"
    echo 1 >"/proc/sys/net/ipv4/conf/$br/route_localnet"
    local rule="PREROUTING -i $br -d $gw -p tcp -m multiport --dports $keystone_port,$ports$extra -m comment --comment cinder-csi-k8s-cloud -j DNAT --to-destination 127.0.0.1"
    echo "$rule" >"$state/cloud-dnat"
    date -u +%Y-%m-%dT%H:%M:%S >"$state/cloud-since"
    # shellcheck disable=SC2086
    iptables -t nat -A $rule
    log "test cloud reachable from the cluster at $gw (ports $keystone_port,$ports$extra; catalog interface internal)"
    if ((nodes > 1)); then
        local i
        for i in $(node_list); do cloud_node_bind "$i"; done
        log "each node's by-id directory is its test server's (node-I: $(ostack_var OSTACK_NODE_1_BY_ID_DIR | sed 's#/node-1/#/node-I/#'))"
    fi
}

cloud_net_undo() {
    if [[ -f $state/cloud-dnat ]]; then
        # shellcheck disable=SC2046
        while iptables -t nat -D $(<"$state/cloud-dnat") 2>/dev/null; do :; done
        rm -f "$state/cloud-dnat"
    fi
    if [[ -f $state/catalog.before ]]; then
        local id url ok=1
        while read -r id url; do
            "$repo/tests/harness/openstack/ostack" api --admin identity PATCH "/endpoints/$id" \
                "{\"endpoint\": {\"url\": \"$url\"}}" >/dev/null 2>&1 || ok=0
        done <"$state/catalog.before"
        if ((ok)); then
            rm -f "$state/catalog.before"
        else
            log "down: could not restore the test cloud's internal endpoints (is it down?): $(tr '\n' ' ' <"$state/catalog.before")"
        fi
    fi
    return 0
}

# After the install: the controller on the pod network, in a namespace whose Pod Security
# admission refuses what the controller needed before (the host network, privilege).
cloud_net_check() {
    local net refused
    net=$(kc -n "$namespace" get pods -l "app.kubernetes.io/instance=$release,app.kubernetes.io/component=controller" \
        -o jsonpath='{range .items[*]}{.metadata.name} hostNetwork={.spec.hostNetwork} {.status.podIP}; {end}')
    [[ -n $net && $net != *"hostNetwork=true"* ]] || die "the controller is not on the pod network in $namespace: ${net:-no pod}"
    refused=$(kc -n "$namespace" create --dry-run=server -o name -f - 2>&1 <<EOF
apiVersion: v1
kind: Pod
metadata: {name: pod-security-probe}
spec:
  hostNetwork: true
  containers: [{name: c, image: registry.k8s.io/pause:3.10, securityContext: {privileged: true}}]
EOF
    ) && die "namespace $namespace admitted a privileged pod on the host network"
    [[ $refused == *'violates PodSecurity "restricted'* ]] || die "namespace $namespace refused a privileged pod, but not by Pod Security restricted: $refused"
    log "controller on the pod network (${net%; }) in namespace $namespace, which refuses a privileged pod (Pod Security restricted)"
}

# For down's leak check (the state dir is gone by then: down passes what it read): what a
# cluster over the test cloud left there, when that cloud is up. $1 = the UTC time the cluster
# reached the cloud (cloud_net_up wrote it): the driver's volumes made since (metadata
# cinder.csi.openstack.org/cluster) still in Cinder, with their attachments (server names);
# the catalog's internal endpoints still on a cluster's gateway.
cloud_leak_report() {
    local since=$1 vols eps
    # A cluster that never reached the cloud (the local backend) left nothing there.
    [[ -n $since && -f $ostack_env ]] || return 0
    vols=$("$repo/tests/harness/openstack/ostack" api --admin block-storage GET "/volumes/detail?all_tenants=1" 2>/dev/null) || vols=""
    eps=$("$repo/tests/harness/openstack/ostack" api --admin identity GET "/endpoints?interface=internal" 2>/dev/null) || eps=""
    if [[ -z $vols || -z $eps ]]; then
        echo "k8s: down: the test cloud does not answer: its volumes and catalog were not checked" >&2
        return 0
    fi
    python3 -c '
import json, sys
since = sys.argv[1]
for v in json.load(sys.stdin)["volumes"]:
    md = v.get("metadata") or {}
    if "cinder.csi.openstack.org/cluster" in md and v["created_at"] >= since:
        at = " ".join(a.get("server_id", "?") for a in v.get("attachments") or [])
        print("volume %s %s (%s)%s" % (v["id"], v.get("name") or "-", v["status"], " attached to " + at if at else ""))
' "$since" <<<"$vols"
    python3 -c '
import json, sys
for e in json.load(sys.stdin)["endpoints"]:
    if "//10.244.0.1:" in e["url"] or "//10.245.0.1:" in e["url"]:
        print("internal endpoint", e["url"])' <<<"$eps"
}
