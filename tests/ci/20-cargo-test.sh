#!/usr/bin/env bash
# Unit and integration tests of every workspace crate. Needs root for loop devices and mounts.
set -euo pipefail
cargo test --workspace --no-fail-fast -- --test-threads="${TEST_THREADS:-4}"
