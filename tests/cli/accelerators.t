#!/bin/sh
# tests/cli/accelerators.t: honest rows on accelerator instances (issue 16, part 1). On
# a simulated trn2.48xlarge (tests/data/platform_trn2, through TRNBENCH_TEST_PLATFORM)
# and p5.48xlarge (tests/data/platform_p5), `trnbench run` runs the CPU workloads on the
# host CPU and says so: every row names its device, the accelerators present and unused
# and why (no Neuron SDK, no NVIDIA driver, not asked for); `trnbench report` prices
# those rows at the instance but never ranks them as the instance's throughput. The
# stand-in platform is refused without TRNBENCH_TEST=1, as the CUDA emulator is.

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_accelerators"
rm -rf "$tmp" && mkdir -p "$tmp/bin"
trn2="$TB_SRCDIR/tests/data/platform_trn2"
trn1="$TB_SRCDIR/tests/data/platform_ec2"
p5="$TB_SRCDIR/tests/data/platform_p5"
# a PATH without any neuron-ls of this machine's, and one with a stand-in neuron-ls
plain="/usr/bin:/bin"
printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/neuron-ls" && chmod +x "$tmp/bin/neuron-ls"

field() { csv_cell "$1" "$3" metric="$2"; } # field FILE METRIC NAME
has() { grep -qF -- "$2" "$1"; }

run_on() { # run_on ROOT OUT [ARGS...]: one small prefill run on the simulated machine
    root=$1 out=$2
    shift 2
    PATH="$plain" VIRTUAL_ENV= TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$root" TRNBENCH_CUDA=${TRNBENCH_CUDA:-} \
        "$TB_BIN" run --model llama-tiny --phase prefill --seq-in 16 --batch 1 --reps 2 \
        --out "$out" "$@" 2>"$out.err"
}

echo "1..29"

# ---- a simulated trn2.48xlarge with the Neuron SDK installed (its fixture has one) ----
run_on "$trn2" "$tmp/trn2"
check "simulated trn2.48xlarge: run exits 0" test $? -eq 0
r="$tmp/trn2/results.csv"
check "the run says which accelerators sat unused and why" \
    has "$tmp/trn2.err" "accelerators present, not used: 16 Trainium2 devices (128 NeuronCores): the Neuron SDK is installed (neuronx-cc 2.27.5334.0, torch-neuronx 2.9.0.2.15.32035, runtime 2.34.10.0"
check "and that its rows are the host's, not the instance's" \
    has "$tmp/trn2.err" "never trn2.48xlarge's accelerator throughput"
check "rows on target trn2.48xlarge" test "$(field "$r" prefill_tokens_per_s target)" = trn2.48xlarge
check "device: the host CPU ($(field "$r" prefill_tokens_per_s device))" \
    test "$(field "$r" prefill_tokens_per_s device)" = "Synthetic CPU of the trn2 test fixture (host CPU)"
check "no accelerator chip used" test -z "$(field "$r" prefill_tokens_per_s chips_used)"
u=$(field "$r" prefill_tokens_per_s accelerators_unused)
check "accelerators_unused names them, the SDK, and what runs on them (--recipe vllm)" \
    sh -c 'case "$0" in "16 Trainium2 devices (128 NeuronCores): the Neuron SDK is installed ("*"trnbench run --recipe vllm"*) exit 0;; esac; exit 1' "$u"
check "the host column says the platform was simulated" \
    sh -c 'case "$0" in *"simulated platform"*) exit 0;; esac; exit 1' "$(field "$r" prefill_tokens_per_s host)"

# the report at capacity-block in us-east-2, where trn2.48xlarge has a price
"$TB_BIN" report "$r" --pricing capacity-block --region us-east-2 --out "$tmp/trn2r" \
    >/dev/null 2>"$tmp/trn2r.err"
check "report exits 0" test $? -eq 0
check "the summary does not rank the host's row as trn2.48xlarge's" \
    sh -c "! grep -q '^- \`llama-tiny/prefill' '$tmp/trn2r/report.md'"
check "a section names the unused accelerators and why" \
    has "$tmp/trn2r/report.md" "| llama-tiny/prefill/in16/fp32 | trn2.48xlarge: Synthetic CPU of the trn2 test fixture (host CPU) |"
check "and why they were not used" \
    has "$tmp/trn2r/report.md" "| 16 Trainium2 devices (128 NeuronCores): the Neuron SDK is installed"
check "cost.csv prices it at the instance and flags it" \
    test "$(csv_cell "$tmp/trn2r/cost.csv" host_cpu_of_accelerator_instance target=trn2.48xlarge provenance=measured)" = yes
check "no cost chart of host rows, and the report says why" \
    sh -c "! test -e '$tmp/trn2r/cost.svg' && grep -q 'ran trnbench.s CPU engines on the host CPU of an accelerator instance (results.csv engine .host-cpu.)' '$tmp/trn2r.err'"

# ---- a simulated trn1.32xlarge without the SDK, then with its tools on PATH ----
run_on "$trn1" "$tmp/trn1"
u=$(field "$tmp/trn1/results.csv" prefill_tokens_per_s accelerators_unused)
check "trn1 without the SDK: it says none was found" \
    sh -c 'case "$0" in "16 Trainium devices (32 NeuronCores): no Neuron SDK found (no neuron-ls on PATH or in /opt/aws/neuron/bin"*) exit 0;; esac; exit 1' "$u"
check "and how to get it (AWS's apt repository)" \
    sh -c 'case "$0" in *"https://apt.repos.neuron.amazonaws.com"*) exit 0;; esac; exit 1' "$u"
PATH="$tmp/bin:$plain" VIRTUAL_ENV= TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$trn1" "$TB_BIN" run \
    --model llama-tiny --phase prefill --seq-in 16 --batch 1 --reps 2 --out "$tmp/sdk" 2>"$tmp/sdk.err"
check "with neuron-ls on PATH: exit 0" test $? -eq 0
check "the reason names the tools found and what runs on Neuron today" \
    sh -c 'case "$0" in "16 Trainium devices (32 NeuronCores): the Neuron SDK is installed (no Python package; neuron-ls $1)"*"--recipe vllm"*) exit 0;; esac; exit 1' \
    "$(field "$tmp/sdk/results.csv" prefill_tokens_per_s accelerators_unused)" "$tmp/bin/neuron-ls"

# trnbench detect on the simulated machine
TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$trn2" "$TB_BIN" detect >"$tmp/detect" 2>&1
check "detect: target trn2.48xlarge" grep -q '^target  *trn2.48xlarge$' "$tmp/detect"
check "detect: the accelerators" grep -q '^accelerators  *16 Trainium2 devices (128 NeuronCores)$' "$tmp/detect"
check "detect: simulated" grep -q '^simulated  *yes' "$tmp/detect"

# ---- the stand-in refused outside tests ----
TRNBENCH_TEST_PLATFORM="$trn2" "$TB_BIN" run --model llama-tiny --phase prefill --seq-in 16 \
    --batch 1 --out "$tmp/refused" 2>"$tmp/refused.err"
check "without TRNBENCH_TEST=1: exit 2" test $? -eq 2
check "saying why" has "$tmp/refused.err" "simulates a machine for trnbench's own tests and is refused outside them"
check "nothing written" test ! -e "$tmp/refused"
TRNBENCH_TEST_PLATFORM="$trn2" "$TB_BIN" detect >/dev/null 2>&1
check "detect refuses it too (exit 2)" test $? -eq 2

# ---- a simulated p5.48xlarge: 8 H100s, no driver on this machine ----
run_on "$p5" "$tmp/p5"
check "simulated p5.48xlarge: run exits 0" test $? -eq 0
u=$(field "$tmp/p5/results.csv" prefill_tokens_per_s accelerators_unused)
check "its 8 GPUs unused, and why ($u)" \
    sh -c 'case "$0" in "8 NVIDIA H100 80GB HBM3 GPUs: "?*) exit 0;; esac; exit 1' "$u"
run_on "$p5" "$tmp/p5cpu" --executor cpu
check "--executor cpu: the GPUs were not asked for" \
    test "$(field "$tmp/p5cpu/results.csv" prefill_tokens_per_s accelerators_unused)" = "8 NVIDIA H100 80GB HBM3 GPUs: not asked for (--executor cpu)"
"$TB_BIN" report "$tmp/p5/results.csv" --out "$tmp/p5r" >/dev/null 2>&1
check "the p5 report does not rank the host's row either" \
    sh -c "grep -q '^| llama-tiny/prefill/in16/fp32 | p5.48xlarge' '$tmp/p5r/report.md' && ! grep -q '^- \`llama-tiny/prefill' '$tmp/p5r/report.md'"
