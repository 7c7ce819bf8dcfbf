# The test cloud from the pod network (`up --backend openstack`, one node), so the controller
# runs without the host network (and its namespace can enforce Pod Security `restricted`).
# The test cloud listens on 127.0.0.1 only (fixed test credentials) and its catalog says so;
# nothing of that changes for its other users. While the cluster is up:
#   - pods reach the cloud's APIs at the pod bridge's gateway (the host's address on it): a DNAT
#     of the bridge's traffic to those ports onto 127.0.0.1 (route_localnet on the bridge only,
#     as kube-proxy does for localhost NodePorts);
#   - the catalog's `internal` endpoints of Cinder and Nova name that address (every service of
#     the cloud and every other test uses `public`; Cinder and Nova call each other through
#     `public` too), and the controller's cloud.conf takes Keystone there with
#     `os-endpoint-type = internal`.
# down puts the rule and the endpoints back (cloud_net_undo). Sourced by tests/k8s/cluster.

cloud_gateway() { echo "${pod_cidr%.*}.1"; }

cloud_net_up() {
    local gw ports keystone_port
    gw=$(cloud_gateway)
    # The bridge comes with the first pod's sandbox (the snapshot-controller's; its Deployment
    # counts as available before its one pod runs).
    wait_for "pod bridge $bridge with $gw" 120 bash -c "ip -4 addr show $bridge | grep -q 'inet $gw/'"
    # shellcheck disable=SC1090
    keystone_port=$(source "$ostack_env" && python3 -c 'import sys, urllib.parse; print(urllib.parse.urlsplit(sys.argv[1]).port)' "$OS_AUTH_URL")
    # The internal endpoints of Cinder and Nova moved to the gateway; the old URLs kept for down.
    ports=$("$repo/tests/openstack/ostack" api --admin identity GET /services |
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
print(",".join(str(p) for p in sorted(ports)))' "$gw" "$state/catalog.before" "$repo/tests/openstack/ostack")
    [[ -n $ports ]] || die "cloud from pods: the catalog has no internal Cinder or Nova endpoint"
    echo 1 >"/proc/sys/net/ipv4/conf/$bridge/route_localnet"
    local rule="PREROUTING -i $bridge -d $gw -p tcp -m multiport --dports $keystone_port,$ports -m comment --comment cinder-csi-k8s-cloud -j DNAT --to-destination 127.0.0.1"
    echo "$rule" >"$state/cloud-dnat"
    # shellcheck disable=SC2086
    iptables -t nat -A $rule
    log "test cloud reachable from pods at $gw (ports $keystone_port,$ports; catalog interface internal)"
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
            "$repo/tests/openstack/ostack" api --admin identity PATCH "/endpoints/$id" \
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
