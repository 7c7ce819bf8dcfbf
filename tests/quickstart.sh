#!/usr/bin/env bash
# Quick start, on a fresh Debian 12 / Ubuntu machine as root: install the packages the demo
# needs, build the driver in release mode, and run `cinder-csi demo` — the driver's whole job
# (create, attach, format, mount into a pod, write, snapshot, restore, expand online, detach,
# delete) on the local backend, through its real gRPC socket, printing each step's latency.
# Every step says what it does and how long it took; the build shows cargo's progress (a
# cold release build takes minutes on a small machine).
#
#   tests/quickstart.sh                   # xfs (grows online as plain root)
#   tests/quickstart.sh --fs-type btrfs
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$SECONDS
step=0
steps=4
say() { echo "quickstart: $*"; }
begin() { # begin WHAT: number the step, remember when it started
    step=$((step + 1)) tstep=$SECONDS
    say "[$step/$steps] $*"
}
done_step() { say "      done in $((SECONDS - tstep)) s"; }

begin "checking: root, Rust toolchain"
if [[ $EUID -ne 0 ]]; then
    say "needs root (loop devices, mkfs, mount); run it as root, e.g. sudo $0 $*" >&2
    exit 2
fi
if ! command -v cargo >/dev/null; then
    say "needs the Rust toolchain: https://rustup.rs (then open a new shell)" >&2
    exit 2
fi
# The minimum Rust version is Cargo.toml's rust-version.
need=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
have=$(rustc --version | awk '{print $2}')
if [[ $(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1) != "$need" ]]; then
    say "rustc $have is older than the minimum $need: rustup update" >&2
    exit 2
fi
say "      rustc $have (minimum $need)"
done_step

begin "system packages: xfsprogs e2fsprogs btrfs-progs util-linux gcc libc6-dev"
export DEBIAN_FRONTEND=noninteractive
pkgs=(xfsprogs e2fsprogs btrfs-progs util-linux gcc libc6-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    say "      installing ${missing[*]} (apt-get update, then install)"
    apt-get update -q | sed 's/^/      apt: /'
    apt-get install -y -q --no-install-recommends "${missing[@]}" \
        | { grep -E '^(Get|Setting up)' || true; } | sed 's/^/      apt: /'
else
    say "      all installed"
fi
[[ -e /dev/loop-control ]] || modprobe loop
done_step

begin "building the driver (cargo build --release --bin cinder-csi; each crate is listed as it compiles)"
# cargo's own progress: a bar on a terminal, one line per crate otherwise.
cargo build --release --bin cinder-csi 2>&1 | sed -u 's/^/      /'
say "      target/release/cinder-csi: $(stat -c %s target/release/cinder-csi) bytes"
done_step

begin "cinder-csi demo${*:+ $*} (the local backend, through the driver's socket; each step with its latency)"
./target/release/cinder-csi demo "$@"
done_step
say "finished in $((SECONDS - t0)) s"
