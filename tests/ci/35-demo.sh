#!/usr/bin/env bash
# The quick start's end-to-end run (`cinder-csi demo`: create, attach, mkfs, mount, write,
# snapshot, restore, online expand, teardown, leak check) on the local backend, as root.
# tests/quickstart.sh runs the same demo on a release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --quiet -p cinder-csi
target/debug/cinder-csi demo
