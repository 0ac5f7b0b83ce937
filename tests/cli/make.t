#!/bin/sh
# tests/cli/make.t: what the makefile's user-facing targets build, read from make's plan
# (make -n) in a scratch build folder, with stand-ins that are never run for their work
# (-n executes nothing): an nvcc that only answers --list-gpu-arch, and an nvidia-smi
# that reports an H100's compute capability (9.0). NVIDIA_GPUS points the /proc check
# at a folder that does not exist, so the real machine's GPU or its absence does not
# count. A GPU user's `make bench` must build the CUDA plugin for the GPU's
# architecture before it runs the suite, as `make perf` does; with nvcc and no GPU,
# `make`, `make bench` and `make check` plan no nvcc command and say once, on stderr,
# why; `make CUDA_ARCHS="80 90"` builds it anyway; `make NVCC= bench` does not; and the
# report's options are checked before the suite. Needs TB_SRCDIR and TB_BUILDDIR (make
# check sets them).
. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
# the make -n below is this test's own: not a sub-make of `make check` (its -j's
# jobserver is not ours: make would warn on stderr, which the checks read)
unset MAKEFLAGS MFLAGS MAKELEVEL
echo 1..16

tmp="$TB_BUILDDIR/tests/tmp/make.t"
rm -rf "$tmp" && mkdir -p "$tmp/bin"
fake="$tmp/bin/nvcc"
printf '#!/bin/sh\n[ "$1" = --list-gpu-arch ] && printf "compute_75\\ncompute_80\\ncompute_90\\ncompute_100\\n"\nexit 0\n' >"$fake"
smi="$tmp/bin/nvidia-smi"
printf '#!/bin/sh\nprintf "9.0\\n"\n' >"$smi"
chmod +x "$fake" "$smi"
out="$tmp/o"

# plan NAME TARGET NVCC NVIDIA_SMI [VAR=VALUE...]: make -n TARGET's commands into
# NAME.plan, what it said on stderr into NAME.err
plan() {
    n=$1 t=$2 c=$3 s=$4
    shift 4
    make -n -C "$TB_SRCDIR" O="$out" NVCC="$c" NVIDIA_SMI="$s" NVIDIA_GPUS="$tmp/no-gpus" "$@" \
        "$t" >"$tmp/$n.plan" 2>"$tmp/$n.err"
}
links_plugin() { grep -q -- "-shared -o $out/lib/libtrnbench-cuda.so" "$1"; }
runs_suite() { grep -q -- "run --suite" "$1"; }
runs_nvcc() { grep -q -- "$fake" "$1"; }
why="trnbench: CUDA plugin not built: nvcc found but no NVIDIA GPU (make CUDA_ARCHS=90 to build it anyway)"

plan bench bench "$fake" "$smi"
check "make bench with nvcc and a GPU links build/lib/libtrnbench-cuda.so" links_plugin "$tmp/bench.plan"
check "make bench with nvcc and a GPU runs the suite" runs_suite "$tmp/bench.plan"
# the plugin is linked before the suite runs (make's plan lists prerequisites first)
before() {
    l=$(grep -n -- "-shared -o $out/lib/libtrnbench-cuda.so" "$1" | head -1 | cut -d: -f1)
    r=$(grep -n -- "run --suite" "$1" | head -1 | cut -d: -f1)
    [ -n "$l" ] && [ -n "$r" ] && [ "$l" -lt "$r" ]
}
check "make bench links the plugin before it runs the suite" before "$tmp/bench.plan"
# gencodes ARCH...: the plan compiles for exactly those SASS targets, PTX of the last
gencodes() {
    p=$1
    shift
    want=$(for a in "$@"; do echo "code=sm_$a"; done | sort)
    got=$(grep -o -- 'code=sm_[0-9]*' "$p" | sort -u)
    ptx=$(grep -o -- 'code=compute_[0-9]*' "$p" | sort -u)
    eval "last=\${$#}"
    [ "$want" = "$got" ] && [ "$ptx" = "code=compute_$last" ]
}
check "a compute capability 9.0 GPU gets sm_90 and its PTX only" gencodes "$tmp/bench.plan" 90
check "with a GPU nothing is said about a missing plugin" test ! -s "$tmp/bench.err"
plan perf perf "$fake" "$smi"
check "make perf with nvcc and a GPU links the plugin" links_plugin "$tmp/perf.plan"

# nvcc and no GPU: no nvcc command in any plan, the reason said once per make
for t in all bench check; do
    plan "nogpu-$t" "$t" "$fake" ""
done
check "nvcc, no GPU: make all, bench and check run no nvcc" \
    sh -c "! grep -l -- '$fake' '$tmp/nogpu-all.plan' '$tmp/nogpu-bench.plan' '$tmp/nogpu-check.plan'"
check "nvcc, no GPU: make bench still runs the suite" runs_suite "$tmp/nogpu-bench.plan"
check "nvcc, no GPU: the reason on stderr, once per make" \
    test "$(cat "$tmp"/nogpu-*.err)" = "$why
$why
$why"
check "nvcc, no GPU: the reason never on stdout (make -n's plan)" \
    sh -c "! grep -q 'CUDA plugin not built' '$tmp/nogpu-all.plan'"
plan nogpu-lint lint "$fake" ""
check "make lint says nothing about the plugin" test ! -s "$tmp/nogpu-lint.err"

# CUDA_ARCHS given: built for those, GPU or not
plan forced all "$fake" "" CUDA_ARCHS="80 90"
check "make CUDA_ARCHS=\"80 90\" without a GPU links the plugin" links_plugin "$tmp/forced.plan"
check "  for sm_80 and sm_90, PTX of 90" gencodes "$tmp/forced.plan" 80 90

plan nonvcc bench "" "$smi"
check "make NVCC= bench builds no plugin" sh -c "! grep -q 'libtrnbench-cuda.so' '$tmp/nonvcc.plan'"
check "make NVCC= bench still runs the suite" runs_suite "$tmp/nonvcc.plan"
# BENCH_ARGS are checked (report --check) before anything is measured
checked_first() {
    c=$(grep -n -- "report --check" "$1" | head -1 | cut -d: -f1)
    r=$(grep -n -- "run --suite" "$1" | head -1 | cut -d: -f1)
    [ -n "$c" ] && [ -n "$r" ] && [ "$c" -lt "$r" ]
}
check "make bench checks BENCH_ARGS before it runs the suite" checked_first "$tmp/nonvcc.plan"
