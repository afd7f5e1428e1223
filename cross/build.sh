#!/usr/bin/env bash
# Cross-built wheels of edgetok for embedded Linux: aarch64 and armv7l (armhf), into cross/dist/.
#
#   bash cross/build.sh                 # both; or: bash cross/build.sh aarch64
#
# 1. Installs what is missing (apt-get): the two cross compilers, qemu-user-static, debootstrap.
# 2. Builds edgetok natively in a venv (cross/build/venv) from a copy of the work tree, and
#    with it the models: `python -m edgetok.compiler cross/build/models` (.etok files are
#    little-endian data, the same on every machine; the shipped sample texts too).
# 3. Per target: a Debian 11 (bullseye) root of that architecture as the sysroot (glibc 2.31,
#    Python 3.9 headers), then `setup.py bdist_wheel` with the cross compiler, the target's
#    headers, _PYTHON_HOST_PLATFORM and EDGETOK_PREBUILT_MODELS (setup.py copies the models
#    instead of running the fresh, foreign extension), tag cp39-abi3.
# 4. auditwheel checks the extension (only libc, symbol versions), the wheel is retagged
#    manylinux_2_17 / manylinux2014, and checked again.
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/common.sh"

PLATS=("$@")
[ ${#PLATS[@]} -gt 0 ] || PLATS=("${ALL_PLATS[@]}")
for p in "${PLATS[@]}"; do debarch "$p" >/dev/null || die "unknown target $p (aarch64, armv7l)"; done

need_tools
mkdir -p "$WORK" "$DIST"
make_venv
PY=$WORK/venv/bin/python
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct)}

log "source copy of the work tree -> $WORK/src"
rm -rf "$WORK/src"
mkdir -p "$WORK/src"
(cd "$ROOT" && git ls-files -z -co --exclude-standard | grep -zv -e '^cross/' -e '\.whl$' \
    | tar -cf - --null --ignore-failed-read -T - 2>/dev/null) | tar -xf - -C "$WORK/src"

log "native build and models"
rm -rf "$WORK/native" "$WORK/models"
"$PY" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
    -w "$WORK/native" "$WORK/src"
"$PY" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$WORK"/native/*.whl
(cd "$WORK" && "$PY" -m edgetok.compiler "$WORK/models")

for plat in "${PLATS[@]}"; do
    arch=$(debarch "$plat")
    tri=$(triplet "$plat")
    sysroot=$WORK/sysroot/$BUILD_SUITE-$arch
    make_root "$BUILD_SUITE" "$plat" "$sysroot" python3,python3-cffi,python3-pip,libpython3-dev
    pyinc=$(ls -d "$sysroot"/usr/include/python3.* | head -1)
    [ -e "$pyinc/Python.h" ] && [ -e "$sysroot/usr/include/$tri/$(basename "$pyinc")/pyconfig.h" ] \
        || die "no Python headers in $sysroot"
    # The target's headers and libraries before the cross toolchain's own (Debian 12's).
    sys="--sysroot=$sysroot -isystem $sysroot/usr/include/$tri -isystem $sysroot/usr/include"
    sys+=" -B$sysroot/usr/lib/$tri -L$sysroot/usr/lib/$tri -L$sysroot/lib/$tri"

    log "wheel for linux_$plat ($tri-gcc, $(basename "$pyinc") headers of $BUILD_SUITE)"
    raw=$WORK/raw-$plat
    rm -rf "$raw" "$WORK/src/build"
    (cd "$WORK/src" && env CC="$tri-gcc $sys" LDSHARED="$tri-gcc $sys -shared" \
        CPPFLAGS="-I$pyinc" LDFLAGS="-Wl,-S" _PYTHON_HOST_PLATFORM="linux-$plat" \
        EDGETOK_PREBUILT_MODELS="$WORK/models" \
        "$PY" setup.py -q bdist_wheel --py-limited-api cp39 -d "$raw") > "$WORK/build-$plat.log" 2>&1 \
        || { tail -30 "$WORK/build-$plat.log" >&2; die "wheel build failed (log: $WORK/build-$plat.log)"; }
    whl=$(ls "$raw"/edgetok-*-cp39-abi3-linux_"$plat".whl)

    want="manylinux_2_17_$plat"
    "$PY" -m auditwheel show "$whl" > "$WORK/audit-$plat.txt" 2>&1 || true
    grep -q "consistent with the following platform tag: \"$want\"" <(tr '\n' ' ' < "$WORK/audit-$plat.txt" | tr -s ' ') \
        || { cat "$WORK/audit-$plat.txt" >&2; die "auditwheel: $whl is not $want"; }
    "$PY" -m wheel tags --remove --platform-tag "$want.manylinux2014_$plat" "$whl" >/dev/null
    rm -f "$DIST"/edgetok-*"$plat"*.whl
    mv "$raw"/*.whl "$DIST/"
done

log "wheels"
for whl in "$DIST"/*.whl; do
    so=$(unzip -Z1 "$whl" | grep '_native.*\.so$')
    "$PY" - "$whl" "$so" <<'EOF'
import sys, zipfile
whl, so = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    data = z.read(so)
    tag = [l for l in z.read([n for n in z.namelist() if n.endswith(".dist-info/WHEEL")][0]).decode().splitlines() if l.startswith("Tag:")]
machine = {0xB7: "aarch64", 0x28: "arm"}.get(int.from_bytes(data[18:20], "little"), "?")
bits = {1: 32, 2: 64}[data[4]]
print(f"{whl.rsplit('/', 1)[-1]}: {len(open(whl, 'rb').read())} bytes; {so}: ELF{bits} {machine}, {len(data)} bytes; {' '.join(tag)}")
EOF
    "$PY" -m auditwheel show "$whl" 2>/dev/null | tr '\n' ' ' | tr -s ' ' | sed 's/^ *//'; echo
done
