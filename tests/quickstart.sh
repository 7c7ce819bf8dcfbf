#!/usr/bin/env bash
# Quick start, on a fresh Debian 12 / Ubuntu machine as root: install the packages the demo
# needs, build the driver in release mode, and run `cinder-csi demo` — the driver's whole job
# (create, attach, format, mount into a pod, write, snapshot, restore, expand online, detach,
# delete) on the local backend, through its real gRPC socket, printing each step's latency.
#
#   tests/quickstart.sh                   # xfs (grows online as plain root)
#   tests/quickstart.sh --fs-type btrfs
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $EUID -ne 0 ]]; then
    echo "quickstart: needs root (loop devices, mkfs, mount); run it as root, e.g. sudo $0 $*" >&2
    exit 2
fi
if ! command -v cargo >/dev/null; then
    echo "quickstart: needs the Rust toolchain: https://rustup.rs (then open a new shell)" >&2
    exit 2
fi

export DEBIAN_FRONTEND=noninteractive
pkgs=(xfsprogs e2fsprogs btrfs-progs util-linux gcc libc6-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "quickstart: installing ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[[ -e /dev/loop-control ]] || modprobe loop

echo "quickstart: building (cargo build --release)"
cargo build --release --quiet
exec ./target/release/cinder-csi demo "$@"
