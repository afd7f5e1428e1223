#!/usr/bin/env bash
# Builds and runs one libFuzzer target of the C core (csrc/fuzz/fuzz_TARGET.c).
#   csrc/fuzz/run.sh TARGET SECONDS [libFuzzer options or input files...]
# TARGET: encode | load | compile | automata. Needs clang with libFuzzer (Debian:
# libclang-rt-dev), and for encode and automata the Python package built in place (the models
# come from csrc/fuzz/models.py).
# Work goes to $ET_FUZZ_DIR (default build/fuzz): the binary, the models, the growing corpus
# (seeded from csrc/fuzz/corpus/TARGET, which stays as committed) and crash-TARGET-* inputs.
# SECONDS 0 with input files runs just those files (a reproducer). Exit status: libFuzzer's.
set -euo pipefail
target=${1:?usage: run.sh TARGET SECONDS [options or files]}
seconds=${2:?usage: run.sh TARGET SECONDS [options or files]}
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${ET_FUZZ_DIR:-$root/build/fuzz}
cc=${CC_FUZZ:-clang}
mkdir -p "$work/corpus-$target"
src=(csrc/model/model.c csrc/model/compile.c csrc/encode/encode.c csrc/unigram/unigram.c csrc/automata/automata.c
     csrc/bpe/pairset.c csrc/wordpiece/wordpiece.c csrc/wordpiece/wp_compile.c)
defs=()
case $target in
  encode|compile) ;;                          # these include bpe.c themselves
  load) src+=(csrc/bpe/bpe.c) ;;
  automata) src+=(csrc/bpe/bpe.c); defs+=(-DAUT_CHECK_PAIRS -DAUT_ANY_AFTER=0) ;; # every pair answer checked
  *) echo "run.sh: unknown target $target (encode, load, compile, automata)" >&2; exit 2 ;;
esac
exe=$work/fuzz_$target
(cd "$root" && $cc -std=c11 -g -O1 -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=all -fno-omit-frame-pointer -Icsrc/include -Icsrc "${defs[@]}" \
  "csrc/fuzz/fuzz_$target.c" "${src[@]}" -o "$exe")
max_len=4096
if [ "$target" = encode ] || [ "$target" = automata ]; then
  [ "$target" = encode ] && max_len=8192
  if [ ! -s "$work/models.txt" ]; then
    (cd "$root" && python csrc/fuzz/models.py "$work/models") > "$work/models.txt"
  fi
  export ET_FUZZ_MODELS=$(paste -sd: "$work/models.txt")
fi
if [ "$target" = load ]; then max_len=65536; fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
if [ "$seconds" = 0 ]; then exec "$exe" "$@"; fi
exec "$exe" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=$max_len \
  -print_final_stats=1 -artifact_prefix="$work/crash-$target-" "$@" \
  "$work/corpus-$target" "$root/csrc/fuzz/corpus/$target"
