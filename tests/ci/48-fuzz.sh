#!/usr/bin/env bash
# Fuzzing (cargo fuzz / libFuzzer) of the parsers and decoders (tests/fuzz, docs/RELIABILITY.md).
# Builds every target with nightly (libFuzzer's coverage instrumentation; no sanitizer runtime:
# the code is safe Rust, and libFuzzer still finds panics, hangs and runaway allocations), then
# runs each for FUZZ_SECONDS (default 20) from a scratch copy of its committed corpus
# tests/fuzz/corpus/<target>. The corpus holds every crashing input found so far, so each run
# replays them first. A crash fails the stage and leaves its input in tests/fuzz/artifacts/.
# FUZZ_UPDATE_CORPUS=1 merges what the run found (only inputs adding coverage) into the
# committed corpora. CINDER_CSI_SKIP_FUZZ=1 skips the stage. Needs what install-deps.sh
# installs (the nightly toolchain, cargo-fuzz). The instrumented build goes to
# $CINDER_CSI_FUZZ_TARGET (default /var/cache/cinder-csi-fuzz/target), outside the checkout like
# the Go peers, so a second run on the same machine rebuilds only what changed: the cold build
# of every dependency with coverage instrumentation took 784 s on 2 loaded cores.
# time-bound-min: 25
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ "${CINDER_CSI_SKIP_FUZZ:-}" == 1 ]]; then
    echo "skipped: fuzz stage (CINDER_CSI_SKIP_FUZZ=1)"
    exit 0
fi
seconds=${FUZZ_SECONDS:-20}
scratch=$(mktemp -d /tmp/cinder-csi-fuzz.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
fuzz=(cargo +nightly fuzz)
# 16 codegen units instead of cargo-fuzz's 1: the cold build of every dependency with
# coverage instrumentation is most of the stage on 2 cores; the targets run somewhat slower.
target_dir=${CINDER_CSI_FUZZ_TARGET:-/var/cache/cinder-csi-fuzz/target}
mkdir -p "$target_dir"
build=(--fuzz-dir tests/fuzz -s none --codegen-units 16 --target-dir "$target_dir")

t=$SECONDS
"${fuzz[@]}" build "${build[@]}"
echo "--> fuzz: built in $((SECONDS - t)) s"

mapfile -t targets < <("${fuzz[@]}" list --fuzz-dir tests/fuzz)
failed=()
for target in "${targets[@]}"; do
    mkdir -p "$scratch/corpus/$target" "tests/fuzz/artifacts/$target"
    cp -r "tests/fuzz/corpus/$target/." "$scratch/corpus/$target/"
    max_len=65536
    case "$target" in config_drive_*) max_len=400000 ;; esac
    echo "--> fuzz: $target for ${seconds} s ($(ls "tests/fuzz/corpus/$target" | wc -l) seeds)"
    # Each drive image is written to one file under TMPDIR: keep it in the scratch dir.
    if TMPDIR="$scratch" "${fuzz[@]}" run "${build[@]}" "$target" "$scratch/corpus/$target" -- \
        -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 2>"$scratch/$target.log"; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/$target.log")
        cov=$(grep -oE 'cov: [0-9]+' "$scratch/$target.log" | tail -1)
        echo "    ${runs:-?} runs, ${cov:-cov: ?}, no crash"
    else
        failed+=("$target")
        tail -n 40 "$scratch/$target.log" >&2
    fi
    if [[ "${FUZZ_UPDATE_CORPUS:-}" == 1 ]]; then
        "${fuzz[@]}" run "${build[@]}" "$target" "tests/fuzz/corpus/$target" \
            "$scratch/corpus/$target" -- -merge=1 -max_len="$max_len" 2>/dev/null
    fi
done
if ((${#failed[@]})); then
    echo "fuzz: crashes in: ${failed[*]} (inputs in tests/fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, no crash"
