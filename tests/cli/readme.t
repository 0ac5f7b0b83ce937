#!/bin/sh
# tests/cli/readme.t: what README.md's "Quick start" claims, checked against what the
# makefile and the program do. Every `make bench BENCH_ARGS='...'` line it quotes is
# accepted by the same `trnbench report --check` command `make bench` runs first (taken
# from make's own plan, make -n); a wrong argument in that command is refused, so the
# check can fail. On a machine with nvcc and no NVIDIA GPU (this one's case in the
# README), `make -n` of all, bench and check plans no nvcc command and says the reason
# the README quotes. Needs TB_SRCDIR, TB_BUILDDIR and TB_BIN (make check sets them).
. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
# the make -n below is this test's own: not a sub-make of `make check` (its -j's
# jobserver is not ours: make would warn on stderr, which the checks read)
unset MAKEFLAGS MFLAGS MAKELEVEL

tmp="$TB_BUILDDIR/tests/tmp/readme.t"
rm -rf "$tmp" && mkdir -p "$tmp"
readme="$TB_SRCDIR/README.md"
if [ ! -x "$TB_BIN" ]; then
    echo "1..0 # SKIP no program at $TB_BIN (make builds it)"
    exit 0
fi
# the section, from its heading to the next one
sed -n '/^## Quick start$/,/^## One command: trnbench compare/p' "$readme" >"$tmp/quick.md"
# its `make bench BENCH_ARGS='...'` lines, one argument string a line
sed -n "s/^ *make bench BENCH_ARGS='\\([^']*\\)'.*/\\1/p" "$tmp/quick.md" >"$tmp/args"
n=$(wc -l <"$tmp/args")

echo "1..$((n + 7))"
check "the quick start has its section and quotes make bench BENCH_ARGS lines ($n)" \
    test "$n" -ge 4

# the check command make bench runs first, as make plans it for ARGS (run in the source
# tree: its paths are relative there)
check_cmd() {
    make -s -n -C "$TB_SRCDIR" O="$TB_BUILDDIR" NVCC= bench BENCH_ARGS="$1" 2>/dev/null |
        grep -m1 -- ' report --check'
}
cmd=$(check_cmd '--usd-per-hour 1.36')
check "make bench's plan runs 'trnbench report --check' first (${cmd:-none})" \
    sh -c "case '$cmd' in *'report --check'*'--usd-per-hour 1.36'*) true;; *) false;; esac"
k=0
while IFS= read -r args; do
    k=$((k + 1))
    c=$(check_cmd "$args")
    (cd "$TB_SRCDIR" && sh -c "$c") >"$tmp/check.$k.out" 2>"$tmp/check.$k.err"
    check "BENCH_ARGS='$args': accepted by report --check" \
        sh -c "test $? -eq 0 && test -n '$c'"
done <"$tmp/args"
c=$(check_cmd '--instance no-such-type')
(cd "$TB_SRCDIR" && sh -c "$c") >/dev/null 2>"$tmp/bad.err"
check "a type the catalogue lacks is refused by the same check (so the lines above could fail)" \
    sh -c "test $? -ne 0 && grep -q 'no-such-type' '$tmp/bad.err'"

# ---- the CUDA plugin: no nvcc work without a GPU ----
nvcc=$(command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
gpu=""
if command -v nvidia-smi >/dev/null 2>&1; then
    gpu=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | grep -E '^[0-9]+\.[0-9]+$')
fi
ls /proc/driver/nvidia/gpus/* >/dev/null 2>&1 && gpu="${gpu:-yes}"
why="trnbench: CUDA plugin not built: nvcc found but no NVIDIA GPU (make CUDA_ARCHS=90 to build it anyway)"
if [ -z "$nvcc" ]; then
    for i in 1 2 3 4; do echo "ok $((n + 3 + i)) # SKIP no nvcc on this machine"; done
elif [ -n "$gpu" ]; then
    for i in 1 2 3 4; do echo "ok $((n + 3 + i)) # SKIP an NVIDIA GPU is here: the plugin is built"; done
else
    tap_n=$((n + 3))
    make -n -C "$TB_SRCDIR" O="$tmp/o" all bench check >"$tmp/plan" 2>"$tmp/plan.err"
    check "nvcc ($nvcc), no GPU: make -n all bench check plans no nvcc command" \
        sh -c "! grep -q nvcc '$tmp/plan'"
    check "  and says why once, on stderr" test "$(cat "$tmp/plan.err")" = "$why"
    check "  which the quick start quotes" grep -qF "${why#trnbench: }" "$tmp/quick.md"
    check "  with the way to build it anyway, which plans nvcc" \
        sh -c "make -n -C '$TB_SRCDIR' O='$tmp/o' CUDA_ARCHS=90 all 2>/dev/null | grep -q -- '-shared -o $tmp/o/lib/libtrnbench-cuda.so'"
fi
