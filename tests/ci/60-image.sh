#!/usr/bin/env bash
# The container image, built and run for real without a registry or a Docker engine: seed
# debian:bookworm-slim from debootstrap (the machine's apt mirror), build deploy/Dockerfile's
# `runtime-prebuilt` target with buildah around the host's release binary, then run it with
# podman: version, upstream's `/bin/cinder-csi-plugin` invocation, every tool the node plugin
# spawns, and `cinder-csi demo` (loop devices, mkfs, mounts) inside a privileged container.
#
# podman/buildah settings follow shared/reference/tooling.md §3 (runc + cgroupfs + lowered
# ulimits; crun cannot run on this host's hybrid cgroups), given through env vars so /etc is
# untouched. All storage (vfs) and podman's run state live in one private temp dir, removed by
# the trap even on failure; no other user's images or containers are seen or touched. The two
# things podman/buildah put elsewhere whatever the config (/var/lib/containers/cache and empty
# libpod_parent cgroups) are removed too when this stage made them.
# The base is rebuilt each run (debootstrap takes ~30-45 s here, not worth a cache).
# Knobs: IMAGE_DEBIAN_MIRROR (default: the bookworm mirror in /etc/apt/sources.list{,.d}),
# IMAGE_PREBUILT=1 (use target/release/cinder-csi as it is, no cargo build),
# CINDER_CSI_SKIP_IMAGE=1 skips the stage.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ ${CINDER_CSI_SKIP_IMAGE:-} == 1 ]]; then
    echo "60-image: skipped (CINDER_CSI_SKIP_IMAGE=1)"
    exit 0
fi

t0=$SECONDS
timings=()
phase() { # phase NAME: closes the previous phase's timer
    local now=$SECONDS
    [[ -n ${cur:-} ]] && timings+=("$(printf '%-28s %4d s' "$cur" $((now - tphase)))")
    cur=$1 tphase=$now
    [[ $1 != end ]] && echo "60-image: $1"
    return 0
}

# shellcheck source=tests/harness/deploy/debian-mirror.sh
source tests/harness/deploy/debian-mirror.sh
mirror=${IMAGE_DEBIAN_MIRROR:-$(debian_mirror | sed -n 1p)}
if [[ -z $mirror ]]; then
    echo "60-image: no bookworm mirror in /etc/apt/sources.list{,.d}; set IMAGE_DEBIAN_MIRROR" >&2
    exit 1
fi
for tool in buildah podman debootstrap runc; do
    command -v "$tool" >/dev/null || { echo "60-image: $tool missing (tests/ci/install-deps.sh)" >&2; exit 1; }
done

had_var_lib=0
[[ -e /var/lib/containers ]] && had_var_lib=1
had_cgroup=0
compgen -G '/sys/fs/cgroup/*/libpod_parent' >/dev/null && had_cgroup=1
# Uncompressed image size bound: 208 MB measured 2026-12-04 (docs/OPERATIONS.md), +10 %.
IMAGE_MAX_MB=${IMAGE_MAX_MB:-230}
tmp=$(mktemp -d /var/tmp/cinder-csi-image.XXXXXX)
image=localhost/cinder-csi:ci-$$
export CONTAINERS_CONF=$tmp/containers.conf CONTAINERS_STORAGE_CONF=$tmp/storage.conf \
    BUILDAH_ISOLATION=chroot
base=docker.io/library/debian:bookworm-slim

# Loop devices whose backing file is under $tmp (the demo's, if it died mid-way).
our_loops() {
    local b
    for b in /sys/block/loop*/loop/backing_file; do
        [[ -f $b ]] || continue
        [[ $(<"$b") == "$tmp"/* ]] && echo "/dev/$(basename "$(dirname "$(dirname "$b")")")"
    done
    return 0
}
# Mount points under $tmp, deepest first (podman's shm mounts, the demo's mounts).
our_mounts() {
    awk -v p="$tmp/" 'index($2, p) == 1 { print $2 }' /proc/self/mounts | sort -r
}
cleanup() {
    local rc=$? m l
    trap - EXIT INT TERM
    set +e
    if [[ -f $tmp/containers.conf ]]; then
        podman rm -af -t 0 >/dev/null 2>&1
        buildah rm -a >/dev/null 2>&1
    fi
    for m in $(our_mounts); do umount -l "$m"; done
    for l in $(our_loops); do losetup -d "$l"; done
    rm -rf "$tmp"
    # containers/image writes a digest cache to /var/lib/containers/cache as root whatever
    # the storage config says; remove it if this stage made it (no images are in it).
    if ((!had_var_lib)); then
        rm -f /var/lib/containers/cache/blob-info-cache-v1.boltdb
        rmdir /var/lib/containers/cache /var/lib/containers 2>/dev/null
    fi
    # podman's cgroupfs manager leaves empty libpod_parent{,/conmon} cgroups; rmdir (which
    # refuses a cgroup with tasks or children) those this stage created.
    if ((!had_cgroup)); then
        for m in /sys/fs/cgroup/*/libpod_parent; do
            [[ -d $m ]] && rmdir "$m/conmon" "$m" 2>/dev/null
        done
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$tmp/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$tmp/libpod"
EOF
cat >"$tmp/storage.conf" <<EOF
[storage]
driver = "vfs"
runroot = "$tmp/run"
graphroot = "$tmp/graph"
EOF

bin=target/release/cinder-csi
if [[ ${IMAGE_PREBUILT:-} == 1 && -x $bin ]]; then
    echo "60-image: using the existing $bin (IMAGE_PREBUILT=1)"
else
    phase "release build (cargo build --release --locked --bin cinder-csi)"
    CARGO_INCREMENTAL=0 cargo build --release --locked --quiet --bin cinder-csi
fi

# Issue 15's footprint bars, on the binary the image ships: a stale deploy/function-order.ld
# (functions renamed by a toolchain or dependency update) shows up here as idle RSS growing
# back towards 10 MB (tests/harness/footprint/function-order.sh regenerates it).
phase "footprint: binary <= 12 MiB, idle RSS node <= 8 MB, controller <= 12 MB"
size=$(stat -c %s "$bin")
echo "  $bin: $size bytes"
((size <= 12 * 1024 * 1024)) || { echo "$bin is over 12 MiB" >&2; exit 1; }
for spec in node:7812 controller:11718; do
    tests/harness/footprint/idle-rss.py --mode "${spec%:*}" --runs 5 --max-kib "${spec#*:}" "$bin" \
        | grep VmRSS | sed "s/^/  ${spec%:*}: /"
done

phase "seed $base (debootstrap --variant=minbase bookworm, $mirror)"
debootstrap --variant=minbase bookworm "$tmp/rootfs" "$mirror" >"$tmp/debootstrap.log" 2>&1 \
    || { tail -20 "$tmp/debootstrap.log" >&2; exit 1; }
# Slimmed as the registry's debian:bookworm-slim is (debuerreotype's slimify): no downloaded
# .debs or package lists, and dpkg told to leave out documentation, manuals and translations,
# now and in the Dockerfile's apt-get install; so the image measured below is the size the
# Dockerfile gives on the real base, not debootstrap's leftovers.
rm -rf "$tmp/rootfs"/var/cache/apt/archives/*.deb "$tmp/rootfs"/var/cache/apt/*.bin \
    "$tmp/rootfs"/var/lib/apt/lists/*
printf '%s\n' \
    'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";' >"$tmp/rootfs/etc/apt/apt.conf.d/docker-clean"
printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/groff/*' \
    'path-exclude /usr/share/info/*' 'path-exclude /usr/share/lintian/*' \
    'path-exclude /usr/share/linda/*' 'path-exclude /usr/share/locale/*' \
    >"$tmp/rootfs/etc/dpkg/dpkg.cfg.d/docker"
find "$tmp/rootfs/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete
rm -rf "$tmp/rootfs"/usr/share/{man,groff,info,lintian,linda,locale}/*
# Env and CMD as the registry's debian:bookworm-slim has them.
tar -C "$tmp/rootfs" --numeric-owner -c . \
    | podman import --change 'CMD ["/bin/bash"]' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$base" >/dev/null
rm -rf "$tmp/rootfs"

phase "buildah bud --target runtime-prebuilt"
buildah bud --quiet --isolation chroot --pull=never --layers=false -f deploy/Dockerfile \
    --target runtime-prebuilt -t "$image" . >/dev/null
podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' "$image"
# The size an operator pulls (uncompressed, as `podman image ls` and `docker images` show it),
# bounded so a heavier base or a new package shows up here (docs/OPERATIONS.md has the figure).
podman history --format '  layer {{.Size}}: {{.CreatedBy}}' "$image" | cut -c1-110
bytes=$(podman image inspect --format '{{.Size}}' "$image")
echo "  image size: $bytes bytes ($((bytes / 1000000)) MB), bound ${IMAGE_MAX_MB} MB"
((bytes <= IMAGE_MAX_MB * 1000000)) || { echo "the image is over ${IMAGE_MAX_MB} MB" >&2; exit 1; }

# Every run: no network (no bridge or firewall rules made on the host), removed at exit.
run() { podman run --rm --network none "$@"; }

phase "checks: version, upstream invocation, node tools"
# Docker drops a CMD inherited from the base when a stage sets ENTRYPOINT; base's
# ["/bin/bash"] left in would reach the driver as an argument when a pod gives none.
cfg=$(podman image inspect --format '{{json .Config.Entrypoint}} {{json .Config.Cmd}}' "$image")
echo "  entrypoint, cmd: $cfg"
[[ $cfg == '["/usr/local/bin/cinder-csi"] null' || $cfg == '["/usr/local/bin/cinder-csi"] []' ]] \
    || { echo "entrypoint/cmd should be [\"/usr/local/bin/cinder-csi\"] and none" >&2; exit 1; }
want=$("$bin" --version)
got=$(run "$image" --version)
[[ $got == "$want" ]] || { echo "image says '$got', host binary '$want'" >&2; exit 1; }
echo "  --version: $got"
# Upstream manifests: `args: [/bin/cinder-csi-plugin, --endpoint=...]` reach the entrypoint
# as arguments; `command: [/bin/cinder-csi-plugin]` replaces it.
# (Output captured first: `| grep -q` would close the pipe early and fail under pipefail.)
out=$(run "$image" /bin/cinder-csi-plugin --help)
[[ $out == *--endpoint* ]] \
    || { echo "args: [/bin/cinder-csi-plugin, --help] did not print the help: $out" >&2; exit 1; }
out=$(run --entrypoint /bin/cinder-csi-plugin "$image" --help)
[[ $out == *--endpoint* ]] \
    || { echo "command: [/bin/cinder-csi-plugin] --help did not print the help: $out" >&2; exit 1; }
# Bad flags still fail (the dropped first argument hides nothing else).
rc=0
run "$image" /bin/cinder-csi-plugin --no-such-flag >/dev/null 2>&1 || rc=$?
((rc == 64)) || { echo "an unknown flag after /bin/cinder-csi-plugin exited $rc, not 64" >&2; exit 1; }
echo "  /bin/cinder-csi-plugin as first argument and as entrypoint: ok"
# The tools the node plugin spawns, read from the source so a new one is checked too.
# Each filesystem's ops (src/host/fs) list their tools, in a `tools:` field or a `fn tools`
# (a unit test there checks that every tool they spawn is listed); udevadm is spawned directly.
mapfile -t tools < <({
    grep -rhoE 'tools: &\[[^]]*\]' src/host/fs
    sed -n '/fn tools(/,/^    }/p' src/host/fs/*.rs
    grep -rhoE 'Command::new\("[a-z0-9_.]+"' src/host
} | grep -o '"[a-z0-9_.]*"' | tr -d '"' | sort -u)
((${#tools[@]} >= 8)) || { echo "found only ${#tools[@]} tools in src/host: ${tools[*]}" >&2; exit 1; }
# Each must be found and execute (127/126 = missing or unloadable; usage errors are fine).
# shellcheck disable=SC2016
run --entrypoint /bin/sh "$image" -c '
    rc=0
    for t; do
        p=$(command -v "$t") || { echo "  $t: MISSING"; rc=1; continue; }
        "$t" -V >/dev/null 2>&1; s=$?
        if [ "$s" -eq 126 ] || [ "$s" -eq 127 ]; then echo "  $t ($p): does not run (exit $s)"; rc=1; else echo "  $t: $p"; fi
    done
    exit $rc' sh "${tools[@]}"

phase "controller as non-root: the controller-prebuilt target, read-only root, no capabilities"
# The chart's controller pod: uid/gid 65532, read-only root filesystem, every capability
# dropped, no privilege escalation, the socket in an emptyDir. The `controller-prebuilt`
# target's USER is 65532; the default image as --user 65532 (what the chart does) too.
buildah bud --quiet --isolation chroot --pull=never --layers=false -f deploy/Dockerfile \
    --target controller-prebuilt -t "$image-controller" . >/dev/null
user=$(podman image inspect --format '{{.Config.User}}' "$image-controller")
[[ $user == 65532:65532 ]] || { echo "controller image USER is '$user', want 65532:65532" >&2; exit 1; }
[[ -z $(podman image inspect --format '{{.Config.User}}' "$image") ]] \
    || { echo "the default image must stay root (the node plugin)" >&2; exit 1; }
mkdir -p "$tmp/conf"
printf '[Global]\nauth-url = http://127.0.0.1:9/v3\nuser-id = u\npassword = p\ntenant-id = t\n' >"$tmp/conf/cloud.conf"
chmod 644 "$tmp/conf/cloud.conf"
nonroot() { # nonroot IMAGE [PODMAN RUN OPTIONS]: the controller serves Probe as 65532
    local img=$1 out
    shift
    # shellcheck disable=SC2016
    out=$(run --read-only --cap-drop ALL --security-opt no-new-privileges "$@" \
        --tmpfs /csi:mode=1777 -v "$tmp/conf:/etc/config:ro" --entrypoint /bin/sh "$img" -c '
        cinder-csi --mode controller --endpoint unix:///csi/csi.sock \
            --cloud-config /etc/config/cloud.conf --http-endpoint 127.0.0.1:8080 2>/csi/log &
        for _ in $(seq 100); do [ -S /csi/csi.sock ] && break; sleep 0.1; done
        echo "uid $(id -u) gid $(id -g) socket $(stat -c "%u:%g %a" /csi/csi.sock)"
        cinder-csi ctl --endpoint unix:///csi/csi.sock probe >/dev/null && echo probe ok
        kill $!; wait $!; tail -3 /csi/log') \
        || { echo "$out" >&2; echo "controller as non-root failed ($img $*)" >&2; exit 1; }
    echo "  $img $*: ${out%%$'\n'*}"
    [[ $out == *"uid 65532 gid 65532 socket 65532:65532 660"* && $out == *"probe ok"* ]] \
        || { echo "$out" >&2; echo "controller did not serve as 65532 ($img $*)" >&2; exit 1; }
}
nonroot "$image-controller"
nonroot "$image" --user 65532:65532

phase "cinder-csi demo in a privileged container"
# The demo's work dir has the same path inside and outside, so the trap finds its loop devices
# by backing file if the container dies mid-way.
mkdir -p "$tmp/demo"
run --privileged -v /dev:/dev -v "$tmp/demo:$tmp/demo" "$image" demo --dir "$tmp/demo/work"

phase "nothing left behind"
left=$(podman ps -aq)
[[ -z $left ]] || { echo "containers left: $left" >&2; exit 1; }
[[ -z $(our_mounts) && -z $(our_loops) ]] \
    || { echo "left behind: $(our_mounts) $(our_loops)" >&2; exit 1; }
[[ ! -e $tmp/demo/work ]] || { echo "the demo left $tmp/demo/work" >&2; exit 1; }
podman rmi -a >/dev/null

phase end
printf '60-image: %s\n' "${timings[@]}"
echo "60-image: passed in $((SECONDS - t0)) s (private storage $tmp removed at exit)"
