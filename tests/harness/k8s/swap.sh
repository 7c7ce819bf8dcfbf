#!/usr/bin/env bash
# A live swap from upstream's cinder-csi-plugin to this driver and back, as docs/MIGRATING.md
# says, on the cluster over the test cloud (`tests/harness/k8s/cluster up --backend openstack`, one node, or
# `up --nodes N --backend openstack` over `OSTACK_NODE_COUNT=N tests/harness/openstack/ostack up`):
#
#   this chart is uninstalled (the cluster came up with it) → upstream's own chart
#   (charts/cinder-csi-plugin of k8s.io/cloud-provider-openstack at the version tests/harness/peers
#   builds) installed with upstream's plugin in an image of its own (tests/harness/k8s/lib/images.sh),
#   every sidecar image overridden with the one this cluster has, its Secret from the test
#   cloud's cloud.conf, each node plugin given the metadata service at 169.254.169.254 (its node's
#   Nova server's document: a proxy to the test cloud's that tells nodes apart by their address,
#   reached through a DNAT in each node's network namespace) and its node's by-id directory at
#   /dev/disk/by-id (on several nodes, the one tests/harness/k8s/cluster binds in each node's mount
#   namespace: only that node's server's disks) →
#   upstream provisions an ext4 claim (its chart's csi-cinder-sc-delete) and an xfs one, pods
#   write to both and keep writing, a VolumeSnapshot of the xfs one, which is then expanded online
#   → THE SWAP, the pods running: `helm uninstall` upstream (its CSIDriver, StorageClasses and
#   Secret go with it), `helm install` this chart (it creates them again) → the running pods'
#   mounts keep working (write, read, their writes went on) → the xfs claim expanded online on
#   upstream's staging mount → both pods deleted and made again on the same node: detached and
#   attached again, restaged by this driver without a mkfs (filesystem UUID and data as before)
#   → several nodes: the xfs pod made on ANOTHER node of its zone: detached from the first node's
#   server, attached to the other's (Cinder's attachments name that server only), staged there
#   by this driver without a mkfs (UUID and data as before) → upstream's snapshot restored into
#   a new claim → upstream's snapshot and claims deleted: Cinder has none of them → THE WAY
#   BACK, a pod running on the restored volume: this chart uninstalled, upstream's installed →
#   the pod's mount keeps working, the pod made again is restaged by upstream without a mkfs,
#   the claim deleted by upstream → this chart installed again with the values it had; a leak
#   check.
# On one node the other-node step cannot run and says so (a NOTE line).
#
#   tests/harness/k8s/swap.sh [--backend openstack]
#
# Last line: "swap: OK (N s)" or "swap: FAILED: ...". Whatever state it fails in, the exit trap
# leaves this chart installed with the values it had and upstream's release gone.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=tests/harness/k8s/lib.sh
. "$repo/tests/harness/k8s/lib.sh"
state=${K8S_STATE:-${CINDER_CSI_K8S_STATE:-/var/tmp/cinder-csi-k8s}}
# To stderr: images.sh logs while upstream_image_archive prints the archive path on stdout.
log() { step "$*" >&2; }
die() { fail "$*"; }
tmpd=$(mktemp -d /var/tmp/cinder-csi-swap.XXXXXX)
# shellcheck source=tests/harness/k8s/lib/images.sh
. "$repo/tests/harness/k8s/lib/images.sh"

k8s_test swap cinder-csi-swap "$@"
driver=cinder.csi.openstack.org
helm_bin=${HELM:-$repo/.tools/helm/helm}
hl() { "$helm_bin" "$@"; }
ours=cinder-csi                       # tests/harness/k8s/cluster's release name
up_release=cinder-csi up_ns=kube-system # upstream's, where its README installs it
xfs_sc=cinder-csi-swap-xfs snap_class=cinder-csi-swap
[[ $K8S_DRIVER_NS != "$up_ns" ]] || up_release=cinder-csi-upstream
TEST_CLUSTER_OBJECTS=("storageclass/$xfs_sc" "volumesnapshotclass/$snap_class")
token="swap-$$-$RANDOM"
proxy_pid="" dnat="" dnat_netns=()

# --- What it needs: the cluster over the test cloud, one node or several, this chart installed.
[[ -x $helm_bin ]] || fail "no helm at $helm_bin (tests/harness/k8s/cluster install puts it there; or set HELM)"
K8S_BACKEND=${K8S_BACKEND:-$(k8s_backend)}
[[ $K8S_BACKEND == openstack ]] || fail "upstream's plugin needs Cinder and Nova: run on the cluster over the test cloud (--backend openstack)"
# shellcheck disable=SC1090
. "${CINDER_CSI_OSTACK_ENV:-/var/tmp/cinder-csi-ostack/env.sh}"
hl status "$ours" -n "$K8S_DRIVER_NS" >/dev/null 2>&1 || fail "release $ours is not installed in $K8S_DRIVER_NS"
[[ -z $(leak_check "$ns") ]] || fail "the backend has objects of namespace $ns from an earlier run: $(leak_check "$ns")"
# The nodes: one (the host, node-1 of the test hypervisor) or node-1..node-N (the test cloud's
# server node-I is node I; tests/harness/k8s/lib/cloudnet.sh).
nodes_n=$(cat "$state/nodes.count" 2>/dev/null || echo 1)
mapfile -t node_names < <(k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort -V)
((${#node_names[@]} == nodes_n)) || fail "the cluster has ${#node_names[@]} nodes, $state/nodes.count says $nodes_n"
node1=${node_names[0]}
# node_index NAME: I of the test cloud's server node-I that is node NAME.
node_index() { if ((nodes_n == 1)); then echo 1; else echo "${1#node-}"; fi; }
# ostack_node NAME WHAT: the test cloud's OSTACK_NODE_I_WHAT (ID, BY_ID_DIR, METADATA_URL) of node NAME.
ostack_node() {
    local v
    v="OSTACK_NODE_$(node_index "$1")_$2"
    [[ -n ${!v:-} ]] || fail "the test cloud's env.sh has no $v (node $1)"
    echo "${!v}"
}
((nodes_n == 1)) || for n in "${node_names[@]}"; do ostack_node "$n" ID >/dev/null; done
chart_dir=$(go mod download -json "k8s.io/cloud-provider-openstack@$("$repo/tests/harness/peers/build" --version cinder-csi-plugin)" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')/charts/cinder-csi-plugin
[[ -f $chart_dir/Chart.yaml ]] || fail "no upstream chart at $chart_dir"
# This chart's values as installed (restored at the end, and by the trap), and the cloud.conf
# its Secret was made from (upstream's Secret gets the same).
hl get values "$ours" -n "$K8S_DRIVER_NS" -o json >"$tmpd/ours.json"
kubelet_dir=$(python3 -c 'import json, sys; print((json.load(open(sys.argv[1])).get("node") or {}).get("kubeletDir") or "/var/lib/kubelet")' "$tmpd/ours.json")

# Upstream's values: every image as this cluster has it (nothing is pulled), its Secret, the
# node's by-id dir at /dev/disk/by-id (replacing the chart's default /etc/cacert volume, which
# the test cloud does not need): node-1's on one node; on several, $state/by-id, on which each
# node's mount namespace has its own server's (the hostPath is resolved by that node's kubelet).
upstream_values() {
    local key img args=()
    for key in attacher provisioner snapshotter resizer livenessprobe nodeDriverRegistrar; do
        img=$(chart_image "$([[ $key == livenessprobe ]] && echo livenessProbe || echo "$key")")
        args+=("$key=$img")
    done
    local by_id=$OSTACK_NODE_1_BY_ID_DIR
    ((nodes_n == 1)) || by_id=$state/by-id
    python3 - "$tmpd/ours.json" "$(upstream_image)" "$by_id" "$kubelet_dir" "${args[@]}" <<'EOF'
import json, sys
ours, plugin, by_id, kubelet = sys.argv[1:5]
conf = json.load(open(ours))["secret"]["data"]["cloud.conf"]
csi = {}
for a in sys.argv[5:]:
    key, img = a.split("=", 1)
    repo, tag = img.rsplit(":", 1)
    csi[key] = {"image": {"repository": repo, "tag": tag, "pullPolicy": "Never"}}
repo, tag = plugin.rsplit(":", 1)
csi["plugin"] = {
    "image": {"repository": repo, "tag": tag, "pullPolicy": "Never"},
    "volumes": [{"name": "by-id", "hostPath": {"path": by_id, "type": "Directory"}}],
    "volumeMounts": [{"name": "cloud-config", "mountPath": "/etc/config", "readOnly": True},
                     {"name": "by-id", "mountPath": "/dev/disk/by-id"}],
    "nodePlugin": {"kubeletDir": kubelet},
}
print(json.dumps({"csi": csi, "secret": {"enabled": True, "create": True, "name": "cinder-csi-cloud-config",
                                          "data": {"cloud.conf": conf}}}, indent=1))
EOF
}
upstream_values >"$tmpd/upstream.json"

# Upstream's node plugin reads http://169.254.169.254/openstack/latest/meta_data.json (fixed in
# its code, pkg/util/metadata). The test cloud serves node-I's at OSTACK_NODE_I_METADATA_URL
# (servers told apart by path): a proxy maps the path and, as Nova's metadata service does,
# tells the servers apart by the caller's address. One node: the proxy on 127.0.0.1, a nat
# OUTPUT rule sends this host's (the node plugin's host network) 169.254.169.254:80 to it (that
# address otherwise leaves through eth0 and nothing answers). Several: the proxy on the host's
# end of the node bridge, and the same rule inside each node's network namespace (where its
# node plugin's host network is) to it: the caller is that node's address 10.245.0.(10+I).
metadata_up() {
    local port="" bind=127.0.0.1 map=() n i ip
    if ((nodes_n == 1)); then
        map=("*=${OSTACK_NODE_1_METADATA_URL%/openstack/latest/meta_data.json}")
    else
        bind=10.245.0.1
        for n in "${node_names[@]}"; do
            i=$(node_index "$n")
            ip=$(ip -n "cinder-csi-k8s-n$i" -4 -o addr show dev eth0 | awk '{sub(/\/.*/, "", $4); print $4}')
            [[ $ip == 10.245.0.* ]] || fail "node $n's network namespace cinder-csi-k8s-n$i has no address on the node bridge: '$ip'"
            map+=("$ip=$(ostack_node "$n" METADATA_URL | sed 's#/openstack/latest/meta_data.json$##')")
        done
    fi
    python3 - "$bind" "$tmpd/proxy.port" "${map[@]}" <<'EOF' >"$tmpd/proxy.log" 2>&1 &
import sys, urllib.error, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
bind, portfile = sys.argv[1:3]
bases = dict(a.split("=", 1) for a in sys.argv[3:])
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        base = bases.get(self.client_address[0], bases.get("*"))
        if base is None:
            code, body = 404, b"no server at this address\n"
        else:
            try:
                with urllib.request.urlopen(base + self.path, timeout=10) as r:
                    code, body = r.status, r.read()
            except urllib.error.HTTPError as e:
                code, body = e.code, e.read()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print(self.client_address[0], "GET", self.path, code, flush=True)
    def log_message(self, *a):
        pass
s = ThreadingHTTPServer((bind, 0), H)
open(portfile, "w").write(str(s.server_address[1]))
s.serve_forever()
EOF
    proxy_pid=$!
    echo "$proxy_pid" >"$tmpd/proxy.pid"
    for _ in $(seq 50); do
        port=$(cat "$tmpd/proxy.port" 2>/dev/null) || true
        [[ -n $port ]] && break
        sleep 0.2
    done
    [[ -n $port ]] || fail "metadata proxy did not start: $(cat "$tmpd/proxy.log")"
    dnat="OUTPUT -d 169.254.169.254/32 -p tcp --dport 80 -m comment --comment cinder-csi-swap-metadata -j DNAT --to-destination $bind:$port"
    if ((nodes_n == 1)); then
        # shellcheck disable=SC2086
        iptables -t nat -I $dnat
        curl -fsS -m 5 http://169.254.169.254/openstack/latest/meta_data.json | grep -q "\"$OSTACK_NODE_1_ID\"" ||
            fail "169.254.169.254 does not serve node-1's metadata"
        return 0
    fi
    for n in "${node_names[@]}"; do
        i=$(node_index "$n")
        dnat_netns+=("cinder-csi-k8s-n$i")
        # shellcheck disable=SC2086
        ip netns exec "cinder-csi-k8s-n$i" iptables -t nat -I $dnat
        ip netns exec "cinder-csi-k8s-n$i" curl -fsS -m 5 http://169.254.169.254/openstack/latest/meta_data.json |
            grep -q "\"$(ostack_node "$n" ID)\"" || fail "169.254.169.254 in $n's network namespace does not serve its server's metadata"
    done
    step "169.254.169.254 in each node's network namespace serves its own server's metadata (proxy on $bind:$port)"
}
metadata_down() {
    local netns
    if [[ -n $dnat ]]; then
        # shellcheck disable=SC2086
        if ((nodes_n == 1)); then
            while iptables -t nat -D $dnat 2>/dev/null; do :; done
        else
            for netns in "${dnat_netns[@]}"; do
                while ip netns exec "$netns" iptables -t nat -D $dnat 2>/dev/null; do :; done
            done
        fi
        dnat="" dnat_netns=()
    fi
    if [[ -n $proxy_pid ]]; then kill "$proxy_pid" 2>/dev/null || true; wait "$proxy_pid" 2>/dev/null || true; proxy_pid=""; fi
}

# Every containerd of the cluster (one node: the host's; several: each node's).
ctr_socks() { ls "$state"/containerd/containerd.sock "$state"/nodes/n*/containerd/containerd.sock 2>/dev/null || true; }

# --- The plugins in and out.
# wait_until WHAT SECONDS CMD...
wait_until() {
    local what=$1 limit=$2 t=$SECONDS
    shift 2
    until "$@" >/dev/null 2>&1; do
        ((SECONDS - t < limit)) || fail "$what: not within $limit s"
        sleep 2
    done
}
# note_unless WHAT SECONDS CMD...: as wait_until, but only says so when it does not hold.
note_unless() {
    local what=$1 limit=$2 t=$SECONDS
    shift 2
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS - t >= limit)); then step "NOTE: $what: not within $limit s"; return 0; fi
        sleep 2
    done
}
# pods_ready NS SELECTOR: at least one pod, every one Ready, none terminating.
pods_ready() {
    local out
    out=$(k -n "$1" get pods -l "$2" -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}/{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')
    [[ -n $out ]] && ! grep -qv '^/True$' <<<"$out"
}
no_pods() { [[ -z $(k -n "$1" get pods -l "$2" -o name) ]]; }
# csinode_driver NODE: the driver's nodeID in the node's CSINode.
csinode_driver() { k get csinode "$1" -o jsonpath="{.spec.drivers[?(@.name==\"$driver\")].nodeID}"; }
# Every node's CSINode has the driver with its server's Nova id / none has it.
registered() {
    local n
    for n in "${node_names[@]}"; do [[ $(csinode_driver "$n") == "$(ostack_node "$n" ID)" ]] || return 1; done
}
unregistered() {
    local n
    for n in "${node_names[@]}"; do [[ -z $(csinode_driver "$n") ]] || return 1; done
}
csinodes() {
    local n
    for n in "${node_names[@]}"; do printf '%s=%s %s; ' "$n" "$(csinode_driver "$n")" "$(k get node "$n" -o jsonpath='{.metadata.labels.topology\.cinder\.csi\.openstack\.org/zone}')"; done
}
# Which plugin serves the node: the image of the node plugin pod.
node_image() {
    k get pods -A -o jsonpath='{range .items[*]}{range .spec.containers[?(@.name=="cinder-csi-plugin")]}{.image}{"\n"}{end}{end}' | sort -u | paste -sd' '
}

install_upstream() {
    local a s
    upstream_image_archive >"$tmpd/upstream-archive"
    images_cleanup
    a=$(<"$tmpd/upstream-archive")
    for s in $(ctr_socks); do ctr -a "$s" -n k8s.io images import --all-platforms "$a" >/dev/null; done
    hl install "$up_release" "$chart_dir" -n "$up_ns" -f "$tmpd/upstream.json" >/dev/null
    wait_until "upstream's controller pod Ready" 300 pods_ready "$up_ns" "component=controllerplugin,release=$up_release"
    wait_until "upstream's node plugin pod Ready" 300 pods_ready "$up_ns" "component=nodeplugin,release=$up_release"
    wait_until "upstream's node plugin registered on every node with its server's Nova id (metadata at 169.254.169.254)" 120 registered
    [[ $(node_image) == "$(upstream_image)" ]] || fail "node plugin images: $(node_image), not only $(upstream_image)"
}
uninstall_upstream() {
    hl uninstall "$up_release" -n "$up_ns" --wait --timeout 5m >/dev/null
    wait_until "upstream's pods gone" 180 no_pods "$up_ns" "release=$up_release"
    note_unless "driver unregistered from every CSINode" 120 unregistered
}
install_ours() {
    hl install "$ours" "$repo/charts/cinder-csi" -n "$K8S_DRIVER_NS" -f "$tmpd/ours.json" >/dev/null
    wait_until "this chart's controller Ready" 300 pods_ready "$K8S_DRIVER_NS" "app.kubernetes.io/instance=$ours,app.kubernetes.io/component=controller"
    wait_until "this chart's node plugin Ready" 300 pods_ready "$(driver_ns node)" "app.kubernetes.io/instance=$ours,app.kubernetes.io/component=node"
    wait_until "this driver registered on every node with its server's Nova id" 120 registered
    [[ $(node_image) == "$(driver_image)" ]] || fail "node plugin images: $(node_image), not only $(driver_image)"
}
uninstall_ours() {
    local node_ns
    node_ns=$(driver_ns node)
    hl uninstall "$ours" -n "$K8S_DRIVER_NS" --wait --timeout 5m >/dev/null
    # Two controllers at once would both act (their sidecars' leases are per namespace).
    wait_until "this chart's controller pods gone" 180 no_pods "$K8S_DRIVER_NS" "app.kubernetes.io/instance=$ours"
    wait_until "this chart's node plugin pods gone" 180 no_pods "$node_ns" "app.kubernetes.io/instance=$ours"
    note_unless "driver unregistered from every CSINode" 120 unregistered
}

# The trap: this chart back as it was (upstream's release gone), whatever failed; then the
# frame's cleanup (namespace, cluster objects) with a driver there to delete the volumes.
swap_cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    if ((rc)); then echo "--- upstream's node plugin log (tail)"; k -n "$up_ns" logs -l "component=nodeplugin,release=$up_release" -c cinder-csi-plugin --tail=30 2>&1; fi
    if hl status "$up_release" -n "$up_ns" >/dev/null 2>&1 && ! hl status "$ours" -n "$K8S_DRIVER_NS" >/dev/null 2>&1; then
        # Upstream deletes what it made while it is here; then ours takes over.
        k delete namespace "$ns" --ignore-not-found --wait=true --timeout=5m >/dev/null 2>&1
        ((${#TEST_CLUSTER_OBJECTS[@]})) && k delete "${TEST_CLUSTER_OBJECTS[@]}" --ignore-not-found >/dev/null 2>&1
        hl uninstall "$up_release" -n "$up_ns" --wait --timeout 5m >/dev/null 2>&1
    fi
    hl status "$up_release" -n "$up_ns" >/dev/null 2>&1 && hl uninstall "$up_release" -n "$up_ns" --wait --timeout 5m >/dev/null 2>&1
    # Its registrar removes the registration socket both use when it stops: gone first.
    for _ in $(seq 90); do no_pods "$up_ns" "release=$up_release" && break; sleep 2; done
    if ! hl status "$ours" -n "$K8S_DRIVER_NS" >/dev/null 2>&1; then
        echo "cleanup: installing $ours again"
        hl install "$ours" "$repo/charts/cinder-csi" -n "$K8S_DRIVER_NS" -f "$tmpd/ours.json" >/dev/null 2>&1
        for _ in $(seq 90); do registered && pods_ready "$K8S_DRIVER_NS" "app.kubernetes.io/instance=$ours" && break; sleep 2; done
    fi
    metadata_down
    images_cleanup
    rm -rf "$tmpd"
    (exit "$rc")
    k8s_test_cleanup
}
trap swap_cleanup EXIT

# --- Volume helpers.
cinder() { ostack_api block-storage "$@"; }
# cinder_status volumes|snapshots ID: its status, "gone" (404), or the error.
cinder_status() {
    local out rc=0
    out=$(cinder GET "/$1/$2" 2>&1) || rc=$?
    case $rc in
        0) python3 -c 'import json, sys; d = json.load(sys.stdin); print(next(iter(d.values()))["status"])' <<<"$out" ;;
        4) echo gone ;;
        *) echo "error: $out" ;;
    esac
}
cinder_is() { [[ $(cinder_status "$2" "$3") == "$1" ]]; }
cinder_gone() { [[ $(cinder_status "$1" "$2") == gone ]]; }
# node_mounts NODE: the mountinfo of the node's own mount namespace (one node: the host's and
# the node namespace's; several: node I's, where its kubelet's dir is $kubelet_dir).
node_mounts() {
    if ((nodes_n == 1)); then node_mountinfo; else cat "/proc/$(<"$state/pids/nodens-n$(node_index "$1").pid")/mountinfo"; fi
}
# staging_dev HANDLE [NODE]: the device under the volume's staging mount on NODE (default: any
# node), "" if none.
staging_dev() {
    local sha dev n on=("${node_names[@]}")
    [[ -z ${2:-} ]] || on=("$2")
    sha=$(printf %s "$1" | sha256sum | cut -d' ' -f1)
    for n in "${on[@]}"; do
        dev=$(node_mounts "$n" | awk -v s="$sha" -v kd="$kubelet_dir/" 'index($5, kd) == 1 && index($5, s) && $5 ~ /\/globalmount$/ {
            for (i = 7; $i != "-"; i++) {}
            print $(i + 2); exit }')
        [[ -n $dev ]] && break
    done
    # A source recorded as a by-id link names the link in its node's dir (the pod saw it there).
    [[ $dev == /dev/disk/by-id/* ]] && dev=$(readlink -f "$(ostack_node "$n" BY_ID_DIR)/${dev##*/}")
    echo "$dev"
}
# staged_on HANDLE: the nodes whose namespace has the volume's staging mount.
staged_on() {
    local n
    for n in "${node_names[@]}"; do [[ -z $(staging_dev "$1" "$n") ]] || printf '%s ' "$n"; done
}
# servers_of HANDLE: the nodes whose servers Cinder says the volume is attached to (server ids
# not a node's are printed as they are).
servers_of() {
    local id n out=""
    for id in $(cinder GET "/volumes/$1" | python3 -c 'import json, sys; print(" ".join(sorted(a["server_id"] for a in json.load(sys.stdin)["volume"]["attachments"])))'); do
        for n in "${node_names[@]}"; do [[ $(ostack_node "$n" ID) == "$id" ]] && id=$n; done
        out+="$id "
    done
    echo "${out% }"
}
pod_node() { k -n "$ns" get pod "$1" -o jsonpath='{.spec.nodeName}'; }
no_va() { ! k get volumeattachments -o jsonpath='{range .items[*]}{.spec.source.persistentVolumeName}{"\n"}{end}' | grep -qx "$1"; }
staged() { [[ -n $(staging_dev "$1") ]]; }
staged_at() { [[ $(staged_on "$1") == "$2 " ]]; }
unstaged() { [[ -z $(staging_dev "$1") ]]; }
# fs_of HANDLE: "TYPE UUID" of the filesystem on the staged device (blkid's low-level probe).
fs_of() {
    local dev
    dev=$(staging_dev "$1")
    [[ -n $dev ]] || fail "volume $1 is not staged on the node"
    echo "$(blkid -p -o value -s TYPE "$dev") $(blkid -p -o value -s UUID "$dev")"
}
# writer POD CLAIM [NODE]: writes the token once, then a line a second, until deleted.
writer() {
    POD_NODE=${3:-} pod "$1" "$2" "[ -f /data/first ] || { echo $token > /data/first; sync; }
while true; do date +%s >> /data/beat; sync; sleep 1; done"
}
beats() { k -n "$ns" exec "$1" -- wc -l /data/beat | awk '{print $1}'; }
# rw POD WHAT: writes WHAT to the volume through the running pod and reads it back.
rw() {
    local got
    got=$(k -n "$ns" exec "$1" -- sh -c "echo $2 > /data/rw && sync && cat /data/rw && cat /data/first") ||
        fail "pod $1: write/read on its volume failed: $got"
    [[ $got == "$2"$'\n'"$token" ]] || fail "pod $1 read '$got', not '$2' and the token"
}
fs_kib() { k -n "$ns" exec "$1" -- df -k /data | awk 'NR == 2 {print $2}'; }
pvc_cap() { k -n "$ns" get pvc "$1" -o jsonpath='{.status.capacity.storage}'; }
pvc_at() { [[ $(pvc_cap "$1") == "$2" ]]; }
# expand CLAIM POD SIZE MIN_KIB [lenient]: online expansion; the claim's capacity, Cinder's size
# and the pod's filesystem (lenient: a filesystem not grown is only reported).
expand() {
    k -n "$ns" patch pvc "$1" --type merge -p "{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"$3\"}}}}" >/dev/null
    wait_until "claim $1 at $3 (status.capacity)" 300 pvc_at "$1" "$3"
    local kib
    kib=$(fs_kib "$2")
    if ((kib < $4)); then
        [[ ${5:-} == lenient ]] || fail "pod $2's filesystem has $kib KiB after the expansion to $3 (want >= $4)"
        step "NOTE: pod $2's filesystem has $kib KiB after the expansion to $3 (not grown)"
    fi
    [[ $(cinder GET "/volumes/$(handle_of "$(pv_of "$1")")" | python3 -c 'import json, sys; print(json.load(sys.stdin)["volume"]["size"])') == "${3%Gi}" ]] ||
        fail "Cinder's size of $1 is not ${3%Gi} GiB"
    step "claim $1 expanded online to $3: filesystem $kib KiB in pod $2"
}
# restage POD CLAIM [NODE]: the pod deleted, its volume detached and unstaged, the pod made again
# on NODE (default: the node it was on).
restage() {
    local pv h on
    pv=$(pv_of "$2")
    h=$(handle_of "$pv")
    on=${3:-$(pod_node "$1")}
    [[ -n $on ]] || fail "pod $1 is on no node"
    k -n "$ns" delete pod "$1" --wait=true --timeout=120s >/dev/null
    wait_until "volume of $2 unstaged" 180 unstaged "$h"
    wait_until "volume of $2 detached (VolumeAttachment gone)" 180 no_va "$pv"
    wait_until "Cinder volume $h of $2 available after the detach" 60 cinder_is available volumes "$h"
    writer "$1" "$2" "$on"
    wait_ready "$1"
    wait_until "volume of $2 staged again on $on" 60 staged_at "$h" "$on"
}

# ============================================================================================
# WaitForFirstConsumer: its volume in the zone of the node its pod is pinned to (several nodes:
# another node of that zone takes the pod later).
{
    namespace_and_class "$ns" "$xfs_sc" WaitForFirstConsumer 'allowVolumeExpansion: true' \
        'parameters: {csi.storage.k8s.io/fstype: xfs}'
    cat <<EOF
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {name: $snap_class}
driver: $driver
deletionPolicy: Delete
parameters: {force-create: "true"}
EOF
} | k apply -f - >/dev/null

# --- 1. Upstream's driver, as a cluster running it has it.
step "uninstalling this chart ($ours in $K8S_DRIVER_NS), installing upstream's $(upstream_image) with its chart ($chart_dir)"
uninstall_ours
metadata_up
install_upstream
step "upstream's plugins ready: CSINode nodeID and driver zone of each node: $(csinodes)"

PVC_SC=csi-cinder-sc-delete pvc ext4 1Gi
PVC_SC=$xfs_sc pvc xfs 1Gi
# The ext4 claim (upstream's class: Immediate) where upstream put it; the xfs pod on the first node.
writer w-ext4 ext4
writer w-xfs xfs "$node1"
wait_ready w-ext4
wait_ready w-xfs
pv_ext4=$(pv_of ext4) pv_xfs=$(pv_of xfs)
h_ext4=$(handle_of "$pv_ext4") h_xfs=$(handle_of "$pv_xfs")
record_handle "$h_ext4" "$pv_ext4"
record_handle "$h_xfs" "$pv_xfs"
wait_until "ext4 volume staged" 60 staged "$h_ext4"
wait_until "xfs volume staged" 60 staged "$h_xfs"
fs_ext4=$(fs_of "$h_ext4") fs_xfs=$(fs_of "$h_xfs")
[[ $fs_ext4 == "ext4 "?* && $fs_xfs == "xfs "?* ]] || fail "upstream's filesystems: ext4 claim '$fs_ext4', xfs claim '$fs_xfs'"
[[ $(servers_of "$h_xfs") == "$node1" ]] || fail "Cinder's attachments of the xfs volume $h_xfs: '$(servers_of "$h_xfs")', not $node1's server only"
step "upstream made ext4 $h_ext4 ($fs_ext4, attached to $(servers_of "$h_ext4")'s server) and xfs $h_xfs ($fs_xfs, attached to $node1's); pods writing"

k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: snap}
spec: {volumeSnapshotClassName: $snap_class, source: {persistentVolumeClaimName: xfs}}
EOF
snap_ready() { [[ $(k -n "$ns" get volumesnapshot snap -o jsonpath='{.status.readyToUse}') == true ]]; }
wait_until "VolumeSnapshot snap ready" 300 snap_ready
snap_id=$(k get volumesnapshotcontent "$(k -n "$ns" get volumesnapshot snap -o jsonpath='{.status.boundVolumeSnapshotContentName}')" -o jsonpath='{.status.snapshotHandle}')
record_snapshot "$snap_id"
[[ $(cinder_status snapshots "$snap_id") == available ]] || fail "Cinder snapshot $snap_id is not available"
step "upstream's VolumeSnapshot: Cinder snapshot $snap_id"
expand xfs w-xfs 2Gi $((2 * 1024 * 1024 * 95 / 100)) lenient

# --- 2. The swap, the pods running.
b_ext4=$(beats w-ext4) b_xfs=$(beats w-xfs)
restarts() { k -n "$ns" get pods w-ext4 w-xfs -o jsonpath='{range .items[*]}{.metadata.uid}/{.status.containerStatuses[0].restartCount} {end}'; }
before=$(restarts)
step "THE SWAP: helm uninstall $up_release -n $up_ns; helm install $ours charts/cinder-csi -n $K8S_DRIVER_NS"
t_swap=$SECONDS
# The objects both charts render (same names and fields), marked as a user would to keep them
# through upstream's uninstall and hand them to this release: does Helm honour a keep
# annotation on the live object? (It reads helm.sh/resource-policy from the release's stored
# manifest; the run says what happened, and either way this chart's install goes on: it
# adopts what is there, or makes it.)
shared=("csidriver/$driver" storageclass/csi-cinder-sc-delete storageclass/csi-cinder-sc-retain)
k annotate "${shared[@]}" --overwrite helm.sh/resource-policy=keep meta.helm.sh/release-name="$ours" \
    meta.helm.sh/release-namespace="$K8S_DRIVER_NS" >/dev/null
k label "${shared[@]}" --overwrite app.kubernetes.io/managed-by=Helm >/dev/null
uid=$(k get csidriver "$driver" -o jsonpath='{.metadata.uid}')
uninstall_upstream
kept=$(k get "${shared[@]}" -o name --ignore-not-found | paste -sd' ')
step "after helm uninstall of upstream, of the objects annotated keep + this release's ownership: ${kept:-none} left"
if [[ -n $kept ]]; then
    # shellcheck disable=SC2086
    k annotate $kept helm.sh/resource-policy- >/dev/null
fi
install_ours
[[ $(k get csidriver "$driver" -o jsonpath='{.metadata.uid}') == "$uid" ]] && how=adopted || how="made anew"
step "this driver serves every node, $((SECONDS - t_swap)) s after upstream's uninstall began; CSINodes: $(csinodes); CSIDriver $how"
[[ $(restarts) == "$before" ]] || fail "the pods were restarted or replaced during the swap: $before → $(restarts)"
vas=$(k get volumeattachments -o jsonpath='{range .items[*]}{.spec.source.persistentVolumeName}={.status.attached} {end}')
[[ $vas == *"$pv_ext4=true"* && $vas == *"$pv_xfs=true"* ]] || fail "VolumeAttachments after the swap: $vas"

# --- 3. After it.
sleep 3
((b_ext4 < $(beats w-ext4) && b_xfs < $(beats w-xfs))) || fail "the pods' writes did not go on during the swap"
rw w-ext4 "after-swap-$token"
rw w-xfs "after-swap-$token"
step "running pods: their writes went on through the swap ($b_ext4 → $(beats w-ext4), $b_xfs → $(beats w-xfs) lines), write and read OK"
expand xfs w-xfs 3Gi $((3 * 1024 * 1024 * 95 / 100))
on_ext4=$(pod_node w-ext4) on_xfs=$(pod_node w-xfs)
k -n "$ns" delete pod w-ext4 w-xfs --wait=false >/dev/null
restage w-ext4 ext4 "$on_ext4" &
p1=$!
restage w-xfs xfs "$on_xfs" &
p2=$!
wait "$p1" || exit 1
wait "$p2" || exit 1
[[ $(fs_of "$h_ext4") == "$fs_ext4" && $(fs_of "$h_xfs") == "$fs_xfs" ]] ||
    fail "filesystems after the restage: ext4 $(fs_of "$h_ext4") (was $fs_ext4), xfs $(fs_of "$h_xfs") (was $fs_xfs)"
rw w-ext4 "restaged-$token"
rw w-xfs "restaged-$token"
step "pods made again on their nodes ($(pod_node w-ext4), $(pod_node w-xfs)): volumes detached, attached and restaged by this driver, no mkfs (UUIDs as upstream made them), data there"

# A new pod on ANOTHER node (of the volume's zone) takes the upstream-made xfs volume.
other=""
for n in "${node_names[@]}"; do
    [[ $n != "$node1" && $(k get node "$n" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}') == "$(k get node "$node1" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}')" ]] && { other=$n; break; }
done
if [[ -z $other ]]; then
    step "NOTE: no other node in $node1's zone (one-node cluster?): the upstream-made volume on another node is not tried"
else
    restage w-xfs xfs "$other"
    [[ $(servers_of "$h_xfs") == "$other" ]] || fail "Cinder's attachments of $h_xfs after the move to $other: '$(servers_of "$h_xfs")', not $other's server only"
    no_va_on() { ! k get volumeattachments -o jsonpath="{range .items[?(@.spec.source.persistentVolumeName==\"$pv_xfs\")]}{.spec.nodeName}{\"\\n\"}{end}" | grep -vqx "$other"; }
    wait_until "no VolumeAttachment of $pv_xfs but $other's" 60 no_va_on
    [[ $(fs_of "$h_xfs") == "$fs_xfs" ]] || fail "filesystem of the xfs volume on $other: $(fs_of "$h_xfs") (was $fs_xfs)"
    rw w-xfs "other-node-$token"
    step "a new pod on $other (the other node of $node1's zone) attached the upstream-made xfs volume: Cinder attachment on $other's server only ($(ostack_node "$other" ID)), staged there only ($(staged_on "$h_xfs")), no mkfs (UUID $fs_xfs), data there"
fi

k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: restored}
spec:
  storageClassName: $xfs_sc
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  dataSource: {apiGroup: snapshot.storage.k8s.io, kind: VolumeSnapshot, name: snap}
EOF
# Beside its source (same UUID: xfs mounts it with nouuid), on the node that has the source now.
writer reader restored "$(pod_node w-xfs)"
wait_ready reader
h_restored=$(handle_of "$(pv_of restored)")
record_handle "$h_restored" "$(pv_of restored)"
rw reader "restored-$token"
fs_restored=$(fs_of "$h_restored")
# A block copy: the source's UUID, mounted beside the source on this node (xfs needs nouuid).
[[ $fs_restored == "$fs_xfs" ]] || fail "the restored volume has $fs_restored, its source $fs_xfs"
step "upstream's snapshot restored by this driver: volume $h_restored ($fs_restored, mounted beside its source), the token there"

k -n "$ns" delete volumesnapshot snap --wait=true --timeout=180s >/dev/null
k -n "$ns" delete pod w-ext4 w-xfs --wait=true --timeout=120s >/dev/null
k -n "$ns" delete pvc ext4 xfs --wait=true --timeout=180s >/dev/null
pvs_gone() { [[ -z $(k get pv "$@" -o name --ignore-not-found) ]]; }
wait_until "PVs $pv_ext4 $pv_xfs deleted" 300 pvs_gone "$pv_ext4" "$pv_xfs"
wait_until "Cinder volume $h_ext4 deleted" 120 cinder_gone volumes "$h_ext4"
wait_until "Cinder volume $h_xfs deleted" 120 cinder_gone volumes "$h_xfs"
wait_until "Cinder snapshot $snap_id deleted" 120 cinder_gone snapshots "$snap_id"
step "upstream's snapshot and claims deleted through this driver: Cinder has none of them"

# --- 4. The way back, a pod running on this driver's volume.
b=$(beats reader)
step "THE WAY BACK: helm uninstall $ours -n $K8S_DRIVER_NS; helm install $up_release (upstream's chart) -n $up_ns"
uninstall_ours
install_upstream
sleep 3
((b < $(beats reader))) || fail "the reader's writes did not go on during the way back"
rw reader "back-$token"
restage reader restored
[[ $(fs_of "$h_restored") == "$fs_restored" ]] || fail "filesystem after upstream's restage: $(fs_of "$h_restored") (was $fs_restored)"
rw reader "back-restaged-$token"
step "upstream serves again: the running pod's mount worked through it, the pod made again was restaged by upstream without a mkfs"
k -n "$ns" delete pod reader --wait=true --timeout=120s >/dev/null
k -n "$ns" delete pvc restored --wait=true --timeout=180s >/dev/null
wait_until "Cinder volume $h_restored deleted by upstream" 300 cinder_gone volumes "$h_restored"

# --- 5. This chart again, as the cluster had it; nothing left.
uninstall_upstream
install_ours
metadata_down
leaks=$(leak_check "$ns")
[[ -z $leaks ]] || fail "left behind: $leaks"
step "this chart installed again; leak check empty"
echo "swap: OK ($((SECONDS - t0)) s)"
