# Every image the cluster's pods use, built here (no registry is reachable and nothing is ever
# pulled) and tagged exactly as the manifests name them; sourced by tests/harness/k8s/cluster.
#
# Each image is a docker-archive in $K8S_IMAGE_CACHE (default /var/cache/cinder-csi-images),
# named by a hash of what goes into it (binaries, files, Containerfile), so an unchanged image
# is never rebuilt; buildah (vfs storage, chroot isolation, tooling.md §3) runs in a private
# temp dir removed afterwards. The images are FROM scratch around static binaries, except the
# driver's (deploy/Dockerfile `runtime-prebuilt` on a debootstrapped debian:bookworm-slim).

image_cache=${K8S_IMAGE_CACHE:-/var/cache/cinder-csi-images}

# The e2e suite's image tags (test/utils/image/manifest.go of Kubernetes 1.34) and kubelet
# 1.34's sandbox image (containerd's sandbox_image is set to the same).
PAUSE_IMAGE=registry.k8s.io/pause:3.10.1
BUSYBOX_IMAGE=registry.k8s.io/e2e-test-images/busybox:1.37.0-1
AGNHOST_IMAGE=registry.k8s.io/e2e-test-images/agnhost:2.56
# Images the storage specs run only `sh -c <their own script>` in: the volumes suite's exec
# spec (nginx) and the multiVolume specs (jessie-dnsutils); and the busybox tag of Kubernetes
# 1.37's suite (its group snapshot specs: e2e.sh --groups). A busybox root under their tags.
SHELL_IMAGES=(registry.k8s.io/e2e-test-images/nginx:1.14-4 registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7
    registry.k8s.io/e2e-test-images/busybox:1.37.0-2)

# sidecar peer name -> the chart's values key holding its image.
declare -A SIDECAR_KEY=(
    [csi-provisioner]=provisioner [csi-attacher]=attacher [csi-resizer]=resizer
    [csi-snapshotter]=snapshotter [csi-node-driver-registrar]=nodeDriverRegistrar
    [livenessprobe]=livenessProbe
)
SNAPSHOT_CONTROLLER_IMAGE=registry.k8s.io/sig-storage/snapshot-controller:$("$repo/tests/harness/peers/build" --version snapshot-controller)

# The image a sidecar has in charts/cinder-csi/values.yaml.
chart_image() {
    awk -v k="  $1:" '$0 == k { f = 1; next } f && /^ *image:/ { print $2; exit }' \
        "$repo/charts/cinder-csi/values.yaml"
}

# The driver image as the chart names it by default (repository:appVersion).
driver_image() {
    local r t
    r=$(awk '/^image:/ { f = 1; next } f && /^ *repository:/ { print $2; exit }' \
        "$repo/charts/cinder-csi/values.yaml")
    t=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$repo/charts/cinder-csi/Chart.yaml")
    echo "$r:$t"
}

# buildah with private storage in $bdir (made on first use, removed by images_cleanup).
bdir=""
bah() {
    if [[ -z $bdir ]]; then
        bdir=$(mktemp -d /var/tmp/cinder-csi-k8s-img.XXXXXX)
        cat >"$bdir/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$bdir/libpod"
EOF
        cat >"$bdir/storage.conf" <<EOF
[storage]
driver = "vfs"
runroot = "$bdir/run"
graphroot = "$bdir/graph"
EOF
    fi
    CONTAINERS_CONF=$bdir/containers.conf CONTAINERS_STORAGE_CONF=$bdir/storage.conf \
        BUILDAH_ISOLATION=chroot buildah "$@"
}
images_cleanup() {
    [[ -n $bdir && -d $bdir ]] || return 0
    bah rm -a >/dev/null 2>&1 || true
    local m
    for m in $(awk -v p="$bdir/" 'index($2, p) == 1 { print $2 }' /proc/self/mounts | sort -r); do
        umount -l "$m" || true
    done
    rm -rf "$bdir"
    bdir=""
}

# build_image TAG CTX: builds CTX/Containerfile as TAG into the cache unless an archive with the
# same content hash is there; prints the archive's path.
build_image() {
    local tag=$1 ctx=$2 key out
    key=$( (cd "$ctx" && find . -type f -o -type l | LC_ALL=C sort | while read -r f; do
        if [[ -L $f ]]; then echo "$f -> $(readlink "$f")"; else sha256sum "$f"; fi
    done; echo "$tag") | sha256sum | cut -c1-16)
    out=$image_cache/$(tr '/:' '__' <<<"$tag")-$key.tar
    if [[ ! -s $out ]]; then
        log "image $tag: building"
        mkdir -p "$image_cache"
        bah bud --quiet --pull=never --layers=false -f "$ctx/Containerfile" -t "$tag" "$ctx" >/dev/null
        rm -f "$image_cache/$(tr '/:' '__' <<<"$tag")"-*.tar # older builds of the same tag
        bah push --quiet "$tag" "docker-archive:$out.part:$tag" >/dev/null
        bah rmi "$tag" >/dev/null
        mv "$out.part" "$out"
    fi
    echo "$out"
}

# A FROM-scratch image around one static binary: scratch_image TAG BINARY ENTRYPOINT_PATH
scratch_image() {
    local tag=$1 bin=$2 path=$3 ctx
    ctx=$(mktemp -d "$tmpd/ctx.XXXXXX")
    file "$bin" 2>/dev/null | grep -q 'dynamically linked' && die "$bin is not static"
    cp "$bin" "$ctx/bin"
    printf 'FROM scratch\nCOPY bin %s\nENTRYPOINT ["%s"]\n' "$path" "$path" >"$ctx/Containerfile"
    build_image "$tag" "$ctx"
}

# Debian's dynamically linked busybox (package `busybox`, not installed: it conflicts with
# busybox-static), unpacked once into the image cache; prints its path. Not busybox-static:
# that one's sh runs its own applets before anything on PATH ("standalone shell"), so its
# dd would run even where GNU dd is installed (below).
busybox_dynamic() {
    local dir=$image_cache/busybox-deb
    if [[ ! -x $dir/bin/busybox ]]; then
        local tmp
        tmp=$(mktemp -d "$tmpd/bb.XXXXXX")
        (cd "$tmp" && apt-get download busybox >/dev/null 2>&1) ||
            { apt-get update -qq && (cd "$tmp" && apt-get download busybox >/dev/null); } ||
            die "cannot download Debian's busybox package (apt-get download busybox)"
        dpkg-deb -x "$tmp"/busybox_*.deb "$tmp/x"
        mkdir -p "$dir/bin"
        # `command`: tests/harness/k8s/cluster defines a function named install.
        command install -m 0755 "$tmp/x/bin/busybox" "$dir/bin/busybox"
        rm -rf "$tmp"
    fi
    echo "$dir/bin/busybox"
}

# root/PATH for a dynamically linked binary: copies it and the libraries it links.
copy_with_libs() {
    local root=$1 bin=$2 to=$3 lib
    cp "$bin" "$root$to"
    for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
}

# A busybox root (Debian's busybox, every applet linked in /bin), /tmp, and a
# passwd/group as the image it stands in for has: busybox's knows root and nobody only (the
# fsGroup specs read `ls -l` and expect a bare 1000), agnhost's also the users its Dockerfile
# adds (busybox_root ROOT agnhost).
busybox_root() {
    local root=$1 a bb
    bb=$(busybox_dynamic)
    mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root"
    chmod 1777 "$root/tmp"
    copy_with_libs "$root" "$bb" /bin/busybox
    for a in $("$bb" --list); do
        [[ $a == busybox ]] || ln -sf busybox "$root/bin/$a"
    done
    ln -s bin "$root/sbin" 2>/dev/null || true
    # Debian 12's busybox (1.35) has no `dd oflag=nocache`, which the e2e suite's writes to
    # volumes use (the 1.37 image this stands in for has it): GNU dd instead.
    rm -f "$root/bin/dd"
    copy_with_libs "$root" /bin/dd /bin/dd
    if [[ ${2:-} == agnhost ]]; then
        printf 'root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
        printf 'root:x:0:\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\nnobody:x:65534:\n' >"$root/etc/group"
    else
        printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' >"$root/etc/passwd"
        printf 'root:x:0:\nnobody:x:65534:\n' >"$root/etc/group"
    fi
}

# shellcheck source=tests/harness/deploy/debian-mirror.sh
source "$repo/tests/harness/deploy/debian-mirror.sh"

# The driver image: deploy/Dockerfile's runtime-prebuilt target around $K8S_DRIVER_BIN
# (default target/release/cinder-csi). Keyed by the binary and the Dockerfile; the Debian base
# is debootstrapped only when that key is not cached.
driver_image_archive() {
    local tag bin ctx key out mirror
    tag=$(driver_image)
    bin=${K8S_DRIVER_BIN:-$repo/target/release/cinder-csi}
    [[ -x $bin ]] || die "no driver binary $bin (cargo build --release --bin cinder-csi, or set K8S_DRIVER_BIN)"
    key=$(cat "$bin" "$repo/deploy/Dockerfile" | sha256sum | cut -c1-16)
    out=$image_cache/$(tr '/:' '__' <<<"$tag")-$key.tar
    if [[ ! -s $out ]]; then
        log "image $tag: debootstrap debian:bookworm-slim, then deploy/Dockerfile"
        mirror=${IMAGE_DEBIAN_MIRROR:-$(debian_mirror | sed -n 1p)}
        [[ -n $mirror ]] || die "no bookworm mirror in /etc/apt/sources.list{,.d}; set IMAGE_DEBIAN_MIRROR"
        debootstrap --variant=minbase bookworm "$tmpd/rootfs" "$mirror" >"$tmpd/debootstrap.log" 2>&1 ||
            { tail -20 "$tmpd/debootstrap.log" >&2; die "debootstrap failed"; }
        # As the registry's debian:bookworm-slim (its env and CMD), so the FROM resolves locally.
        tar -C "$tmpd/rootfs" --numeric-owner -c . >"$tmpd/base.tar"
        bah from --quiet --name k8s-base scratch >/dev/null
        bah add k8s-base "$tmpd/base.tar" / >/dev/null
        bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            --cmd /bin/bash k8s-base >/dev/null
        bah commit --quiet --rm k8s-base docker.io/library/debian:bookworm-slim >/dev/null
        rm -rf "$tmpd/rootfs" "$tmpd/base.tar"
        ctx=$(mktemp -d "$tmpd/ctx.XXXXXX")
        mkdir -p "$ctx/target/release"
        cp "$bin" "$ctx/target/release/cinder-csi"
        mkdir -p "$image_cache"
        bah bud --quiet --pull=never --layers=false -f "$repo/deploy/Dockerfile" \
            --target runtime-prebuilt -t "$tag" "$ctx" >/dev/null
        rm -f "$image_cache/$(tr '/:' '__' <<<"$tag")"-*.tar
        bah push --quiet "$tag" "docker-archive:$out.part:$tag" >/dev/null
        bah rmi -a -f >/dev/null
        mv "$out.part" "$out"
    fi
    echo "$out"
}

# Builds (or finds) every image and prints one archive path a line.
images_build() {
    local peers=$repo/tests/harness/peers/build n bin ctx root tag v
    for n in "${!SIDECAR_KEY[@]}"; do
        tag=$(chart_image "${SIDECAR_KEY[$n]}")
        # The image must hold the version its tag names: the chart and the peer move together.
        v=$("$peers" --version "$n")
        [[ ${tag##*:} == "$v" ]] ||
            die "charts/cinder-csi/values.yaml pins $tag but tests/harness/peers builds $n $v"
        bin=$("$peers" "$n")
        scratch_image "$tag" "$bin" "/$n"
    done
    scratch_image "$SNAPSHOT_CONTROLLER_IMAGE" "$("$peers" snapshot-controller)" /snapshot-controller
    # pause: Kubernetes' build/pause/linux/pause.c, compiled static.
    ctx=$(mktemp -d "$tmpd/ctx.XXXXXX")
    pause_binary "$ctx/bin"
    printf 'FROM scratch\nCOPY bin /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Containerfile"
    build_image "$PAUSE_IMAGE" "$ctx"
    ctx=$(mktemp -d "$tmpd/ctx.XXXXXX")
    busybox_root "$ctx/root"
    printf 'FROM scratch\nCOPY root/ /\nCMD ["sh"]\n' >"$ctx/Containerfile"
    build_image "$BUSYBOX_IMAGE" "$ctx"
    for tag in "${SHELL_IMAGES[@]}"; do
        build_image "$tag" "$ctx"
    done
    # agnhost: busybox plus /agnhost (and the agnhost-2 link its entrypoint tests use).
    ctx=$(mktemp -d "$tmpd/ctx.XXXXXX")
    busybox_root "$ctx/root" agnhost
    cp "$("$peers" agnhost)" "$ctx/root/agnhost"
    ln -s agnhost "$ctx/root/agnhost-2"
    mkdir -p "$ctx/root/uploads"
    printf 'FROM scratch\nCOPY root/ /\nENTRYPOINT ["/agnhost"]\nCMD ["pause"]\n' >"$ctx/Containerfile"
    build_image "$AGNHOST_IMAGE" "$ctx"
    driver_image_archive
    images_cleanup
}

# pause_binary OUT: Kubernetes' build/pause/linux/pause.c compiled static to OUT. The pause
# image's entrypoint, and the PID 1 of the cluster's own PID namespace (tests/harness/k8s/cluster): it
# exits on SIGTERM/SIGINT and reaps every child re-parented to it.
pause_binary() {
    gcc -Os -static -DVERSION=3.10.1 -o "$1" "$(k8s_src)/build/pause/linux/pause.c"
    strip "$1"
}

# Kubernetes' module source (pause.c), from the module cache the peer builder fills.
k8s_src() {
    local v
    v=$(awk '$1 == "kubelet" { print $4 }' "$repo/tests/harness/peers/versions")
    go mod download -json "k8s.io/kubernetes@$v" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'
}

# Upstream's cinder-csi-plugin (tests/harness/peers' build of k8s.io/cloud-provider-openstack at the
# version tests/harness/peers/versions pins) as its own image, for tests/harness/k8s/swap.sh: a debootstrapped
# bookworm minbase with the Debian packages upstream's Dockerfile installs for its node plugin
# (`clean-install bash rsync mount udev btrfs-progs e2fsprogs xfsprogs util-linux`: mount/umount,
# blkid, mkfs.*, fsck, resize2fs, xfs_growfs, udevadm) and ca-certificates, the binary at
# /bin/cinder-csi-plugin and no entrypoint (upstream's chart runs `args: [/bin/cinder-csi-plugin, ...]`).
# Tagged as upstream's chart names it; cached like the others; prints the archive's path.
UPSTREAM_PACKAGES=bash,rsync,mount,udev,btrfs-progs,e2fsprogs,xfsprogs,util-linux,ca-certificates
upstream_image() { echo "registry.k8s.io/provider-os/cinder-csi-plugin:$("$repo/tests/harness/peers/build" --version cinder-csi-plugin)"; }
upstream_image_archive() {
    local tag bin key out mirror
    tag=$(upstream_image)
    bin=$("$repo/tests/harness/peers/build" cinder-csi-plugin)
    key=$( (cat "$bin"; echo "$UPSTREAM_PACKAGES") | sha256sum | cut -c1-16)
    out=$image_cache/$(tr '/:' '__' <<<"$tag")-$key.tar
    if [[ ! -s $out ]]; then
        log "image $tag: debootstrap bookworm minbase with $UPSTREAM_PACKAGES"
        mirror=${IMAGE_DEBIAN_MIRROR:-$(debian_mirror | sed -n 1p)}
        [[ -n $mirror ]] || die "no bookworm mirror in /etc/apt/sources.list{,.d}; set IMAGE_DEBIAN_MIRROR"
        debootstrap --variant=minbase --include="$UPSTREAM_PACKAGES" bookworm "$tmpd/up-rootfs" "$mirror" \
            >"$tmpd/up-debootstrap.log" 2>&1 || { tail -20 "$tmpd/up-debootstrap.log" >&2; die "debootstrap failed"; }
        rm -rf "$tmpd/up-rootfs/var/cache/apt/archives"/*.deb "$tmpd/up-rootfs/var/lib/apt/lists"/*
        command install -m 0755 "$bin" "$tmpd/up-rootfs/usr/bin/cinder-csi-plugin" # /bin is usr/bin
        tar -C "$tmpd/up-rootfs" --numeric-owner -c . >"$tmpd/up-rootfs.tar"
        rm -rf "$tmpd/up-rootfs"
        bah from --quiet --name k8s-upstream scratch >/dev/null
        bah add k8s-upstream "$tmpd/up-rootfs.tar" / >/dev/null
        bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            --entrypoint '[]' --cmd /bin/cinder-csi-plugin k8s-upstream >/dev/null
        mkdir -p "$image_cache"
        bah commit --quiet --rm k8s-upstream "$tag" >/dev/null
        rm -f "$tmpd/up-rootfs.tar" "$image_cache/$(tr '/:' '__' <<<"$tag")"-*.tar
        bah push --quiet "$tag" "docker-archive:$out.part:$tag" >/dev/null
        bah rmi -f "$tag" >/dev/null
        mv "$out.part" "$out"
    fi
    echo "$out"
}
