#!/usr/bin/env bash
# Tests of the ARM builds under qemu (after cross/build.sh):
#
#   bash cross/test.sh            # or: bash cross/test.sh -k aarch64   (pytest arguments)
#
# Adds Debian 12 (bookworm, Python 3.11, cffi 1.15) roots of arm64 and armhf beside the
# Debian 11 sysroots that cross/build.sh made, puts pytest and tiktoken into the build venv
# (which holds edgetok built natively from the same tree), and runs tests/test_cross.py:
# the C driver cross-compiled for aarch64 and armhf against tiktoken and against this
# machine's build, and each wheel installed by the target's pip into the target's Python,
# under qemu-aarch64-static / qemu-arm-static.
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/common.sh"

need_tools
[ -x "$WORK/venv/bin/python" ] && "$WORK/venv/bin/python" -c 'import edgetok' 2>/dev/null \
    || die "no native build in $WORK/venv: run bash cross/build.sh first"
for plat in "${ALL_PLATS[@]}"; do
    make_root "$TEST_SUITE" "$plat" "$WORK/rootfs/$TEST_SUITE-$(debarch "$plat")" \
        python3,python3-cffi,python3-pip
done
"$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check \
    'pytest>=7' 'tiktoken==0.14.0'
cd "$ROOT"
# the venv's pytest, not `python -m pytest`: the work tree's edgetok/ must not shadow the
# venv's native build (in a fresh clone it has no compiled extension)
exec "$WORK/venv/bin/pytest" -p no:cacheprovider -vv -rsx tests/test_cross.py "$@"
