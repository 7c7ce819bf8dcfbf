#!/usr/bin/env bash
# gRPC interop: four gRPC implementations call the real binary (`cinder-csi --mode all
# --backend local`) on its Unix socket, each with its DEFAULT channel options, so each sends
# the :authority it sends by default: grpc-go `localhost`, grpc C-core (Python grpcio) the
# percent-encoded socket path, grpc-java the raw path, grpc-js `localhost`. Each client
# (tests/harness/interop/) runs every Identity RPC and a volume lifecycle (create, controller publish,
# stage, publish, unpublish, unstage, controller unpublish, delete) and exits non-zero on any
# RPC error. The clients' runtimes install into caches outside the checkout
# ($CINDER_CSI_INTEROP_CACHE, default /var/cache/cinder-csi-interop): a Python venv, a
# node_modules and a Maven repository; the Go client is built by tests/harness/peers/build.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ $(id -u) -ne 0 ]]; then
    echo "47-interop: must run as root (the local backend attaches loop devices and mounts)" >&2
    exit 1
fi

cache=${CINDER_CSI_INTEROP_CACHE:-/var/cache/cinder-csi-interop}
# Pinned client versions (each the newest its registry served when pinned).
grpcio=1.85.1
grpc_js=1.14.7
proto_loader=0.8.1
mkdir -p "$cache"
timings=()
timed() { # name command...
    local name=$1 t=$SECONDS rc=0
    shift
    "$@" || rc=$?
    local note=""
    if ((rc)); then note=" (failed, exit $rc)"; fi
    timings+=("$name: $((SECONDS - t)) s$note")
    return "$rc"
}
# The install steps run under `||` (timed), where set -e does not act: each step says so.

install_python() {
    local venv=$cache/venv-grpcio-$grpcio
    if [[ ! -x $venv/bin/python || ! -e $venv/.done ]]; then
        rm -rf "$venv"
        python3 -m venv "$venv" &&
            "$venv/bin/pip" install --quiet --disable-pip-version-check \
                "grpcio==$grpcio" "grpcio-tools==$grpcio" &&
            touch "$venv/.done" || return 1
    fi
    python=$venv/bin/python
}
install_node() {
    local dir=$cache/node-grpc-js-$grpc_js-$proto_loader
    if [[ ! -e $dir/.done ]]; then
        rm -rf "$dir"
        mkdir -p "$dir" &&
            (cd "$dir" && npm install --silent --no-audit --no-fund --prefix . \
                "@grpc/grpc-js@$grpc_js" "@grpc/proto-loader@$proto_loader") &&
            touch "$dir/.done" || return 1
    fi
    node_modules=$dir/node_modules
}
install_java() {
    # Keyed by the pom, reused while every jar it names is still in the cache.
    java_cp=$cache/java-classpath-$(sha256sum tests/harness/interop/java/pom.xml | cut -c1-16).txt
    if [[ -s $java_cp ]] && tr ':' '\n' <"$java_cp" | xargs ls >/dev/null 2>&1; then
        return 0
    fi
    mvn -q -B -Dmaven.repo.local="$cache/m2" -f tests/harness/interop/java/pom.xml \
        dependency:build-classpath -Dmdep.outputFile="$java_cp" || return 1
    [[ -s $java_cp ]] || { echo "47-interop: maven resolved no classpath" >&2; return 1; }
}
install_go() {
    go_client=$(tests/harness/peers/build csi-interop-go) || return 1
}

# shellcheck source=tests/ci/local-driver.sh
source tests/ci/local-driver.sh
on_local_driver_exit() {
    echo "47-interop: timings:"
    printf '  %s\n' "${timings[@]}"
}
local_driver_dir 47-interop

timed "install grpcio $grpcio (venv)" install_python
timed "install grpc-js $grpc_js (npm)" install_node
timed "resolve grpc-java (maven)" install_java
timed "build the grpc-go client" install_go
timed "cargo build" cargo build --quiet -p cinder-csi

# The Java client's messages come from a descriptor set of proto/csi.proto.
"$python" -m grpc_tools.protoc -I proto -I "$("$python" -c 'import grpc_tools, os; print(os.path.dirname(grpc_tools.__file__))')/_proto" \
    --include_imports --descriptor_set_out="$tmp/csi.pb" proto/csi.proto

local_driver_start interop-node

passed=0
failed=()
run_client() { # label command...
    local label=$1 t=$SECONDS rc=0
    shift
    echo "--> 47-interop: $label"
    timeout 300 "$@" || rc=$?
    timings+=("$label: $((SECONDS - t)) s")
    if ((rc)); then
        echo "47-interop: $label: FAILED (exit $rc)" >&2
        failed+=("$label")
    else
        passed=$((passed + 1))
    fi
}
run_client "grpc-go" "$go_client" "$sock" "$kubelet" interop-go
run_client "grpc C-core (python grpcio)" "$python" tests/harness/interop/python/csi_client.py "$sock" "$kubelet" interop-python
run_client "grpc-java" java -cp "$(cat "$java_cp")" tests/harness/interop/java/CsiClient.java \
    "$tmp/csi.pb" "$sock" "$kubelet" interop-java
run_client "grpc-js" env NODE_PATH="$node_modules" node tests/harness/interop/node/csi_client.js "$sock" "$kubelet" interop-node

# Nothing the clients made may stay behind: no volume, no mount.
left=$(find "$local_dir" -name '*.img' | wc -l)
if ((left)); then
    echo "47-interop: $left volume file(s) left in the local backend" >&2
    failed+=("cleanup")
fi
if findmnt -rn -o TARGET | grep -qF "$kubelet/"; then
    echo "47-interop: mounts left below $kubelet" >&2
    failed+=("cleanup")
fi
echo "47-interop: ${passed} passed, ${#failed[@]} failed"
if ((${#failed[@]})); then
    echo "47-interop: failed: ${failed[*]}" >&2
    exit 1
fi
