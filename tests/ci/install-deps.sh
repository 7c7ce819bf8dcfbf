#!/usr/bin/env bash
# System packages the tests need (idempotent). Rust comes with the machine (rustup).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(e2fsprogs xfsprogs btrfs-progs util-linux mount udev genisoimage dosfstools unzip mtools)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
rustup component list --installed 2>/dev/null | grep -q clippy || rustup component add clippy rustfmt
