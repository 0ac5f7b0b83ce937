#!/bin/sh
# tests/cli/make.t: what the makefile's user-facing targets build, read from make's plan
# (make -n) in a scratch build folder, with a stand-in nvcc that only answers
# --list-gpu-arch (it is never run: -n executes nothing). A GPU user's `make bench` must
# build the CUDA plugin before it runs the suite, as `make perf` and `make check` do;
# `make NVCC= bench` must not; and the report's options are checked before the suite. Needs TB_SRCDIR and TB_BUILDDIR (make check sets them).
. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
echo 1..7

tmp="$TB_BUILDDIR/tests/tmp/make.t"
rm -rf "$tmp" && mkdir -p "$tmp"
fake="$tmp/bin/nvcc"
mkdir -p "$tmp/bin"
printf '#!/bin/sh\n[ "$1" = --list-gpu-arch ] && printf "compute_80\\ncompute_90\\n"\nexit 0\n' >"$fake"
chmod +x "$fake"
out="$tmp/o"

plan() { # plan TARGET NVCC: the commands `make -n TARGET` would run
    make -n -C "$TB_SRCDIR" O="$out" NVCC="$2" "$1" 2>&1
}
links_plugin() { grep -q -- "-shared -o $out/lib/libtrnbench-cuda.so" "$1"; }
runs_suite() { grep -q -- "run --suite" "$1"; }

plan bench "$fake" >"$tmp/bench.plan"
check "make bench with nvcc links build/lib/libtrnbench-cuda.so" links_plugin "$tmp/bench.plan"
check "make bench with nvcc runs the suite" runs_suite "$tmp/bench.plan"
# the plugin is linked before the suite runs (make's plan lists prerequisites first)
before() {
    l=$(grep -n -- "-shared -o $out/lib/libtrnbench-cuda.so" "$1" | head -1 | cut -d: -f1)
    r=$(grep -n -- "run --suite" "$1" | head -1 | cut -d: -f1)
    [ -n "$l" ] && [ -n "$r" ] && [ "$l" -lt "$r" ]
}
check "make bench links the plugin before it runs the suite" before "$tmp/bench.plan"
plan perf "$fake" >"$tmp/perf.plan"
check "make perf with nvcc links the plugin" links_plugin "$tmp/perf.plan"
plan bench "" >"$tmp/nonvcc.plan"
check "make NVCC= bench builds no plugin" eval "! links_plugin '$tmp/nonvcc.plan'"
check "make NVCC= bench still runs the suite" runs_suite "$tmp/nonvcc.plan"
# BENCH_ARGS are checked (report --check) before anything is measured
checked_first() {
    c=$(grep -n -- "report --check" "$1" | head -1 | cut -d: -f1)
    r=$(grep -n -- "run --suite" "$1" | head -1 | cut -d: -f1)
    [ -n "$c" ] && [ -n "$r" ] && [ "$c" -lt "$r" ]
}
check "make bench checks BENCH_ARGS before it runs the suite" checked_first "$tmp/nonvcc.plan"
