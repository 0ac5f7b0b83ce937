#!/bin/sh
# tests/cli/recipe.t: `trnbench run --recipe vllm` end to end with a stand-in `vllm` on
# PATH (tests/data/neuron/vllm/vllm: it refuses what vLLM and the vLLM Neuron plugins
# refuse, then runs `trnbench serve` in its place, which trnbench refuses without
# TRNBENCH_TEST=1). The
# recipe writes the model folder, empties its compile cache before the cold start and
# keeps it for the warm one; the rows record both starts and the compile time between
# them, and the report prices a compile. Bad recipe options are input errors (exit 2).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_recipe"
rm -rf "$tmp" && mkdir -p "$tmp/bin"
bin=$(cd "$(dirname "$TB_BIN")" && pwd)/$(basename "$TB_BIN")

# the stand-in: tests/data/neuron/vllm/vllm (vLLM, or the vLLM Neuron plugin with
# VLLM_STAND_IN_PLUGIN, refusing what they refuse; its README names the sources)
cp "$TB_SRCDIR/tests/data/neuron/vllm/vllm" "$tmp/bin/vllm" && chmod +x "$tmp/bin/vllm"

field() { csv_cell "$1" "$3" metric="$2"; } # field FILE METRIC NAME

recipe() { # recipe OUT [ARGS...]
    out=$1
    shift
    PATH="$tmp/bin:$PATH" TB_BIN_ABS="$bin" "$TB_BIN" run --recipe vllm --model llama-tiny \
        --seq-in 16 --seq-out 8 --concurrency 1,2 --requests 4 --target trn2.48xlarge \
        --out "$out" "$@" 2>"$out.err"
}

echo "1..87"
TRNBENCH_TEST=1 VLLM_STAND_IN_DUMP="$tmp/ok.dump" recipe "$tmp/ok" --server-start cold,warm --tp 2 \
    --max-num-seqs 4
check "recipe vllm, cold then warm: exit 0" test $? -eq 0
r="$tmp/ok/results.csv"
check "the model folder: config.json, tokenizer.json, tokenizer_config.json" \
    test -s "$tmp/ok/recipe-1/model/config.json" -a -s "$tmp/ok/recipe-1/model/tokenizer.json" \
    -a -s "$tmp/ok/recipe-1/model/tokenizer_config.json"
check "the stand-in started twice" test "$(grep -c '^start$' "$tmp/ok.dump")" -eq 2
check "--max-num-batched-tokens always passed: the max-model-len, 24" \
    grep -A1 -qx 'arg --max-num-batched-tokens' "$tmp/ok.dump"
check "... its value 24" sh -c "grep -A1 -x 'arg --max-num-batched-tokens' '$tmp/ok.dump' | grep -qx 'arg 24'"
check "prefix caching off on a GPU too" grep -qx 'arg --no-enable-prefix-caching' "$tmp/ok.dump"
check "no Neuron timeouts without Neuron" sh -c "! grep -q '^env VLLM_NEURON_COMPILATION_TIMEOUT=' '$tmp/ok.dump'"
check "both levels measured" test "$(grep -c '^endpoint:.*,output_tokens_per_s,' "$r")" -eq 2
cold=$(field "$r" server_start_s value)
warm=$(field "$r" server_warm_start_s value)
comp=$(field "$r" server_compile_s value)
check "cold start ($cold s) takes the stand-in's compile second" perl -e 'exit !($ARGV[0] >= 1.0)' "$cold"
check "warm start ($warm s) does not" perl -e 'exit !($ARGV[0] < $ARGV[1] - 0.5)' "$warm" "$cold"
check "server_compile_s = cold - warm ($comp s)" \
    perl -e 'exit !(abs($ARGV[0] - ($ARGV[1] - $ARGV[2])) < 1e-4)' "$comp" "$cold" "$warm"
check "the device names the recipe" \
    sh -c 'case "$0" in "vLLM (recipe vllm: tp=2, max-num-seqs 4, max-model-len 24, dummy weights) trnbench "*) exit 0;; esac; exit 1' \
    "$(field "$r" output_tokens_per_s device)"
check "run ids say which server" grep -q 'endpoint:llama-tiny/serve/c1/in16/out8/bf16@vllm-tp2' "$r"
check "the run said the cache was emptied for the cold start" grep -q '(emptied: a cold start)' "$tmp/ok.err"

"$TB_BIN" report "$r" --pricing capacity-block --region us-east-2 --out "$tmp/okr" >/dev/null 2>&1
check "report exits 0" test $? -eq 0
check "the report prices a compile" \
    grep -q '^| llama-tiny/serve/in16/out8/bf16 | trn2.48xlarge | vLLM (recipe vllm: tp=2, max-num-seqs 4, max-model-len 24, dummy weights) trnbench .* | 35.76 | ' "$tmp/okr/report.md"

# a rerun resumes: nothing started, nothing added
TRNBENCH_TEST=1 recipe "$tmp/ok" --server-start cold,warm --tp 2 --max-num-seqs 4
check "rerun: exit 0, both levels already there" \
    sh -c "grep -q '0 runs measured, 0 modeled, 2 already there' '$tmp/ok.err'"

# on a simulated trn2.48xlarge (its fixture has a Neuron SDK) with a stand-in
# neuron-monitor printing the documentation's reports: the device figures of each level
# and the SDK in the rows' host; tp=8 is 2 of its 16 Trainium2 chips at LNC=2. The level
# sends for 1.5 s, longer than neuron-monitor's period (1 s), as a level must to get a
# report from a real one: 4 requests once ended before the stand-in's shell had printed
# on a loaded machine, and the level had no device figures
mon="$TB_SRCDIR/tests/data/neuron/monitor-trn2.jsonl"
printf '#!/bin/sh\ncat "%s"\nexec sleep 30\n' "$(cd "$(dirname "$mon")" && pwd)/$(basename "$mon")" \
    >"$tmp/bin/neuron-monitor" && chmod +x "$tmp/bin/neuron-monitor"
# The stand-in plays vllm-neuron 0.24 there and enforces its rules; inherited artifacts
# and a remote cache would turn the cold start warm, and must be cleared.
TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$TB_SRCDIR/tests/data/platform_trn2" VIRTUAL_ENV= \
    VLLM_STAND_IN_PLUGIN=current VLLM_STAND_IN_DUMP="$tmp/trn2.dump" \
    NEURON_COMPILED_ARTIFACTS="$tmp/elsewhere" NEURON_LIBTORCH_REMOTE_CACHE="$tmp/fsx" \
    PATH="$tmp/bin:$PATH" TB_BIN_ABS="$bin" "$TB_BIN" run --recipe vllm --model llama-tiny \
    --seq-in 16 --seq-out 8 --concurrency 1 --duration 1.5 --tp 8 --out "$tmp/trn2" \
    --server-timeout 900 2>"$tmp/trn2.err"
check "recipe on the simulated trn2: exit 0 (the stand-in plugin took its settings)" test $? -eq 0
r="$tmp/trn2/results.csv"
dump="$tmp/trn2.dump"
check "compile timeout from --server-timeout 900" grep -qx 'env VLLM_NEURON_COMPILATION_TIMEOUT=900' "$dump"
check "compile cache lock wait too" grep -qx 'env NEURON_LIBTORCH_COMPILATION_TIMEOUT=900' "$dump"
check "execute timeout too" grep -qx 'env VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=900' "$dump"
check "inherited NEURON_COMPILED_ARTIFACTS cleared" sh -c "! grep -q '^env NEURON_COMPILED_ARTIFACTS' '$dump'"
check "inherited NEURON_LIBTORCH_REMOTE_CACHE cleared" sh -c "! grep -q '^env NEURON_LIBTORCH_REMOTE_CACHE' '$dump'"
check "so the cold start compiled (the stand-in's cache filled)" \
    test -e "$tmp/trn2/recipe-1/vllm-cache/neuron/compile_cache/neff"
check "the start's notes record what was cleared" \
    sh -c 'case "$0" in *"NEURON_COMPILED_ARTIFACTS='"'"'"*"'"'"' inherited, cleared"*) exit 0;; esac; exit 1' \
    "$(field "$r" server_start_s notes)"
check "... and the timeouts" sh -c 'case "$0" in *"VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS 900 s"*) exit 0;; esac; exit 1' \
    "$(field "$r" server_start_s notes)"
check "prefix caching off on Neuron" grep -qx 'arg --no-enable-prefix-caching' "$dump"
check "NeuronCore utilisation recorded, as a percentage (the fixture's mean 360/7)" \
    perl -e 'exit !(abs($ARGV[0] - 360/7) < 1e-3 && $ARGV[1] eq "%")' \
    "$(field "$r" neuroncore_utilization_pct value)" "$(field "$r" neuroncore_utilization_pct unit)"
check "device memory recorded (14e9 bytes in GiB)" \
    perl -e 'exit !(abs($ARGV[0] - 14e9 / 2**30) < 1e-3)' "$(field "$r" neuron_device_memory_gib value)"
check "no watts: no power row without the driver's percentage" \
    sh -c "! grep -q 'power' '$r'"
check "the rows' host names the Neuron SDK" \
    sh -c 'case "$0" in *"; Neuron SDK: neuronx-cc 2.27.5334.0"*) exit 0;; esac; exit 1' \
    "$(field "$r" output_tokens_per_s host)"
check "tp=8 at LNC=2 on Trainium2: 2 chips used" test "$(field "$r" output_tokens_per_s chips_used)" = 2
check "the label says Neuron and which plugin (none installed in the fixture)" \
    sh -c 'case "$0" in "vLLM (recipe vllm: tp=8, max-num-seqs 16, max-model-len 24, random safetensors weights, Neuron: vllm-neuron not found, 0.21+ settings)"*) exit 0;; esac; exit 1' \
    "$(field "$r" output_tokens_per_s device)"
check "on Neuron the random weights are in the folder: model.safetensors (llama-tiny: 238208 bytes of bf16)" \
    sh -c 'test -s "$0/model.safetensors" && test "$(od -An -tu8 -N8 "$0/model.safetensors" | tr -d " ")" -gt 0 &&
        test $(($(wc -c <"$0/model.safetensors") - 8 - $(od -An -tu8 -N8 "$0/model.safetensors"))) -eq 238208' \
    "$tmp/trn2/recipe-1/model"
check "and no --load-format dummy, which the plugin ignores" \
    sh -c "! grep -q '^arg --load-format' '$dump'"
check "the run said the space the weights take and what is free" \
    grep -q 'random weights for the vllm-neuron plugin: 0.06 GiB to write (margin included), .* GiB free in' "$tmp/trn2.err"

# not enough disk for the weights: refused before anything is written (a stand-in's
# free space, TRNBENCH_TEST_DISK_FREE, tests only)
TRNBENCH_TEST=1 TRNBENCH_TEST_DISK_FREE=1000 TRNBENCH_TEST_PLATFORM="$TB_SRCDIR/tests/data/platform_trn2" \
    VIRTUAL_ENV= PATH="$tmp/bin:$PATH" TB_BIN_ABS="$bin" "$TB_BIN" run --recipe vllm \
    --model llama-tiny --seq-in 16 --seq-out 8 --concurrency 1 --tp 8 --out "$tmp/full" \
    2>"$tmp/full.err"
check "a full disk on Neuron: exit 2" test $? -eq 2
check "naming the bytes needed and free" \
    grep -q "the random weights of 1 recipe run need [0-9]* bytes (0.06 GiB, with a margin of 5% + 64 MiB), and '.*/full' has 1000 bytes (0.00 GiB) free: .* --model-path DIR" "$tmp/full.err"
check "nothing written" test ! -e "$tmp/full"

# --model-path: a real checkpoint (here the folder the run above wrote), nothing written
TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$TB_SRCDIR/tests/data/platform_trn2" VIRTUAL_ENV= \
    VLLM_STAND_IN_PLUGIN=current VLLM_STAND_IN_DUMP="$tmp/ckpt.dump" \
    PATH="$tmp/bin:$PATH" TB_BIN_ABS="$bin" "$TB_BIN" run --recipe vllm --model llama-tiny \
    --seq-in 16 --seq-out 8 --concurrency 1 --requests 2 --tp 8 --out "$tmp/ckpt" \
    --model-path "$tmp/trn2/recipe-1/model" 2>"$tmp/ckpt.err"
check "--model-path on the simulated trn2: exit 0" test $? -eq 0
check "no model folder written" test ! -e "$tmp/ckpt/recipe-1/model"
check "the checkpoint served, without --load-format" \
    sh -c "grep -qx 'arg $tmp/trn2/recipe-1/model' '$tmp/ckpt.dump' && ! grep -q '^arg --load-format' '$tmp/ckpt.dump'"
check "the label says checkpoint weights" \
    sh -c 'case "$0" in "vLLM (recipe vllm: tp=8, max-num-seqs 16, max-model-len 24, checkpoint weights, Neuron: vllm-neuron not found, 0.21+ settings)"*) exit 0;; esac; exit 1' \
    "$(field "$tmp/ckpt/results.csv" output_tokens_per_s device)"
check "without neuron-ls the LNC is guessed, and the start's notes say so" \
    sh -c 'case "$0" in *"chips used: tp=8 logical NeuronCores at LNC=2 (default), 4 a Trainium2 device: 2 of 16 devices"*) exit 0;; esac; exit 1' \
    "$(field "$tmp/ckpt/results.csv" server_start_s notes)"

# neuron-ls states the LNC (here 1: 8 NeuronCores a Trainium2 device): tp=8 is one chip,
# and the start's notes say where the LNC came from; plugin vllm-neuron 0.24 installed
mkdir -p "$tmp/lsbin"
sed 's/"nc_count": 4/"nc_count": 8/; s/"logical_neuroncore_config": 2/"logical_neuroncore_config": 1/' \
    "$TB_SRCDIR/tests/data/neuron/ls-trn2.json" >"$tmp/ls-lnc1.json"
printf '#!/bin/sh\ncat "%s"\n' "$tmp/ls-lnc1.json" >"$tmp/lsbin/neuron-ls" && chmod +x "$tmp/lsbin/neuron-ls"
cp -R "$TB_SRCDIR/tests/data/platform_trn2" "$tmp/trn2p"
meta="$tmp/trn2p/venv/lib/python3.12/site-packages/vllm_neuron-0.24.0.1.1.0.dist-info"
mkdir -p "$meta" && printf 'Metadata-Version: 2.1\nName: vllm-neuron\nVersion: 0.24.0.1.1.0\n\n' >"$meta/METADATA"
TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$tmp/trn2p" VIRTUAL_ENV=/venv \
    VLLM_STAND_IN_PLUGIN=current PATH="$tmp/lsbin:$tmp/bin:$PATH" TB_BIN_ABS="$bin" \
    "$TB_BIN" run --recipe vllm --model llama-tiny --seq-in 16 --seq-out 8 --concurrency 1 \
    --requests 2 --tp 8 --out "$tmp/lnc1" --model-path "$tmp/trn2/recipe-1/model" 2>"$tmp/lnc1.err"
check "neuron-ls at LNC 1: exit 0" test $? -eq 0
check "tp=8 at LNC=1: 1 chip used" test "$(field "$tmp/lnc1/results.csv" output_tokens_per_s chips_used)" = 1
check "the start's notes: the LNC as neuron-ls states it" \
    sh -c 'case "$0" in *"chips used: tp=8 logical NeuronCores at LNC=1 (neuron-ls), 8 a Trainium2 device: 1 of 16 devices"*) exit 0;; esac; exit 1' \
    "$(field "$tmp/lnc1/results.csv" server_start_s notes)"
check "the rows name the installed plugin" \
    sh -c 'case "$0" in *"checkpoint weights, Neuron: vllm-neuron 0.24.0.1.1.0)"*) exit 0;; esac; exit 1' \
    "$(field "$tmp/lnc1/results.csv" output_tokens_per_s device)"

# the stand-in refused outside tests
recipe "$tmp/refused"
check "without TRNBENCH_TEST=1: exit 1" test $? -eq 1
check "saying it answered as trnbench" grep -q "answers as 'trnbench .*': a stand-in for tests" "$tmp/refused.err"
check "no rows" test ! -s "$tmp/refused/results.csv"

# bad options: input errors, nothing run
bad() { # bad DESCRIPTION MESSAGE ARGS...
    d=$1 m=$2
    shift 2
    "$TB_BIN" run --model llama-tiny --seq-in 16 --seq-out 8 --out "$tmp/bad" "$@" 2>"$tmp/bad.err"
    check "$d: exit 2" sh -c "test $? -eq 2 && grep -qF -- \"\$0\" '$tmp/bad.err' && test ! -e '$tmp/bad'" "$m"
}
bad "recipe tgi" "field 'recipe': 'tgi' (the recipe is vllm)" --recipe tgi
bad "recipe with an endpoint" "the recipe starts its own server: no endpoint=http://x:1/v1" \
    --recipe vllm --endpoint http://x:1/v1
bad "tp without a recipe" "field 'tp': for a recipe's server (recipe=vllm) only" \
    --endpoint http://x:1/v1 --tp 2
bad "max_model_len too short" "field 'max_model_len': 20 is shorter than seq_in + seq_out (24)" \
    --recipe vllm --max-model-len 20
bad "buckets not increasing" "field 'prefill_buckets': values must increase" \
    --recipe vllm --prefill-buckets 512,128
bad "a tp of 2^40" "option '--tp': '1099511627776' is not a whole number from 1 to 1024" --recipe vllm --tp 1099511627776
bad "model_path without a recipe" "field 'model_path': for a recipe's server (recipe=vllm) only" \
    --endpoint http://x:1/v1 --model-path "$tmp"
bad "a model path that does not exist" "command line: --model-path '$tmp/none': No such file or directory" \
    --recipe vllm --model-path "$tmp/none"
bad "a model path without config.json" "command line: --model-path: '$tmp/bin/config.json'" \
    --recipe vllm --model-path "$tmp/bin"
bad "another model's checkpoint" "config.json': field 'num_hidden_layers': 2, but model 'llama-3.1-8b' has 32" \
    --recipe vllm --model llama-3.1-8b --model-path "$tmp/trn2/recipe-1/model"
# vllm-neuron's bucket rules, refused before anything starts (max_model_len 24 here)
bad "a prefill bucket above max_model_len" \
    "field 'prefill_buckets': 8,32: the largest, 32, is above min(max_num_batched_tokens 24, max_model_len 24) = 24, which vllm-neuron requires it to equal (\"Last bucket in num_batched_tokens_buckets must equal max_num_batched_tokens\")" \
    --recipe vllm --prefill-buckets 8,32
bad "a decode bucket above max_num_seqs" \
    "field 'decode_buckets': 1,32: the largest, 32, is above max_num_seqs 16, which vllm-neuron requires it to equal (\"Last bucket in num_seqs_buckets must equal max_num_seqs\")" \
    --recipe vllm --decode-buckets 1,32
bad "buckets with segmented prefill" \
    "field 'prefill_buckets': 8,16: with segmented prefill (max_num_batched_tokens 512 below max_model_len 4096) vllm-neuron's kernel takes one prefill bucket" \
    --recipe vllm --seq-in 4000 --seq-out 96 --max-num-batched-tokens 512 --prefill-buckets 8,16
bad "max_num_batched_tokens without a recipe" \
    "field 'max_num_batched_tokens': for a recipe's server (recipe=vllm) only" \
    --endpoint http://x:1/v1 --max-num-batched-tokens 512
bad "prefix caching neither on nor off" "field 'prefix_caching': 'yes' (on or off)" \
    --recipe vllm --prefix-caching yes
# on the simulated trn2 (the plugin's rules need no buckets to apply there)
trn2_bad() { # trn2_bad DESCRIPTION MESSAGE ARGS...
    d=$1 m=$2
    shift 2
    TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$TB_SRCDIR/tests/data/platform_trn2" VIRTUAL_ENV= \
        PATH="$tmp/bin:$PATH" TB_BIN_ABS="$bin" VLLM_STAND_IN_PLUGIN=current \
        VLLM_STAND_IN_DUMP="$tmp/bad.dump" "$TB_BIN" run --recipe vllm --model llama-tiny \
        --out "$tmp/bad" "$@" 2>"$tmp/bad.err"
    check "$d: exit 2, no server started" \
        sh -c "test $? -eq 2 && grep -qF -- \"\$0\" '$tmp/bad.err' && test ! -e '$tmp/bad' && test ! -e '$tmp/bad.dump'" "$m"
}
trn2_bad "trn2: a chunk size the kernel lacks" \
    "field 'max_num_batched_tokens': 3000 is below max_model_len 4096, so prefill is segmented, and vllm-neuron's segment sizes are 512, 1024, 2048, 4096 and 8192" \
    --seq-in 4000 --seq-out 96 --max-num-batched-tokens 3000
trn2_bad "trn2: prefix caching without segmented prefill" \
    "field 'prefix_caching': on Neuron prefix caching needs segmented prefill, max_num_batched_tokens 512 or more below max_model_len 24" \
    --seq-in 16 --seq-out 8 --prefix-caching on
trn2_bad "trn2: one-step prefill past 16384" \
    "field 'max_num_batched_tokens': 20000 prefills max_model_len 20000 in one step, which vllm-neuron allows up to 16384 only" \
    --seq-in 16 --seq-out 8 --max-model-len 20000 --max-num-batched-tokens 20000

# docs/serving.md's bucket example (llama-tiny for llama-3.1-8b: the same lengths) on the
# simulated trn2: the stand-in plugin accepts its buckets as given
TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$TB_SRCDIR/tests/data/platform_trn2" VIRTUAL_ENV= \
    VLLM_STAND_IN_PLUGIN=current VLLM_STAND_IN_DUMP="$tmp/readme.dump" \
    PATH="$tmp/bin:$PATH" TB_BIN_ABS="$bin" "$TB_BIN" run --recipe vllm --model llama-tiny \
    --tp 8 --max-num-seqs 64 --prefill-buckets 512,2048,2560 --decode-buckets 1,8,64 \
    --seq-in 2048 --seq-out 512 --concurrency 1 --requests 1 --warmup-requests 0 \
    --out "$tmp/readme" 2>"$tmp/readme.err"
check "docs/serving.md's bucket example: exit 0" test $? -eq 0
check "its buckets as vllm-neuron's neuron_config" \
    grep -qxF 'arg {"neuron_config": {"num_batched_tokens_buckets": [512, 2048, 2560], "num_seqs_buckets": [1, 8, 64]}}' "$tmp/readme.dump"
check "with --max-num-batched-tokens 2560" \
    sh -c "grep -A1 -x 'arg --max-num-batched-tokens' '$tmp/readme.dump' | grep -qx 'arg 2560'"
check "the stand-in plugin took them" grep -q 'Using num_batched_tokens_buckets from config: \[512, 2048, 2560\]' "$tmp/readme/server-1.log"

# short lists are completed with the plugin's required largest, and said so
TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$TB_SRCDIR/tests/data/platform_trn2" VIRTUAL_ENV= \
    VLLM_STAND_IN_PLUGIN=current VLLM_STAND_IN_DUMP="$tmp/short.dump" \
    PATH="$tmp/bin:$PATH" TB_BIN_ABS="$bin" "$TB_BIN" run --recipe vllm --model llama-tiny \
    --tp 8 --max-num-seqs 4 --prefill-buckets 8,16 --decode-buckets 1,2 --seq-in 16 \
    --seq-out 8 --concurrency 1 --requests 2 --out "$tmp/short" 2>"$tmp/short.err"
check "short bucket lists: exit 0" test $? -eq 0
check "completed to 8,16,24 and 1,2,4" \
    grep -qxF 'arg {"neuron_config": {"num_batched_tokens_buckets": [8, 16, 24], "num_seqs_buckets": [1, 2, 4]}}' "$tmp/short.dump"
check "the run said so" grep -q 'prefill buckets 8,16 completed with 24' "$tmp/short.err"

# trn1 (the fixture trn1.32xlarge, Trainium): the current plugin installed there is
# refused with the stack to pin; with none found, the NxD Inference plugin's settings
cp -R "$TB_SRCDIR/tests/data/platform_ec2" "$tmp/trn1"
meta="$tmp/trn1/venv/lib/python3.10/site-packages/vllm_neuron-0.24.0.1.1.0.dist-info"
mkdir -p "$meta" && printf 'Metadata-Version: 2.1\nName: vllm-neuron\nVersion: 0.24.0.1.1.0\n\n' >"$meta/METADATA"
TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$tmp/trn1" VIRTUAL_ENV=/venv PATH="$tmp/bin:$PATH" \
    TB_BIN_ABS="$bin" VLLM_STAND_IN_DUMP="$tmp/trn1bad.dump" "$TB_BIN" run --recipe vllm \
    --model llama-tiny --seq-in 16 --seq-out 8 --out "$tmp/trn1bad" 2>"$tmp/trn1bad.err"
check "trn1 with vllm-neuron 0.24: exit 2, nothing started" \
    sh -c "test $? -eq 2 && test ! -e '$tmp/trn1bad' && test ! -e '$tmp/trn1bad.dump'"
check "saying which stack to pin and how" \
    grep -qF "vllm-neuron 0.24.0.1.1.0 serves Trainium2 and Trainium3 only, not this machine's Trainium: pin the NxD Inference stack there: a Neuron SDK 2.29 environment (vLLM 0.16) and \`git clone --branch 0.5.3" "$tmp/trn1bad.err"
rm -rf "$tmp/trn1/venv"
TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$tmp/trn1" VIRTUAL_ENV= PATH="$tmp/bin:$PATH" \
    TB_BIN_ABS="$bin" VLLM_STAND_IN_PLUGIN=nxdi VLLM_STAND_IN_DUMP="$tmp/trn1.dump" \
    "$TB_BIN" run --recipe vllm --model llama-tiny --seq-in 16 --seq-out 8 --tp 2 \
    --prefill-buckets 8,24 --concurrency 1 --requests 2 --server-start cold,warm \
    --out "$tmp/trn1run" 2>"$tmp/trn1run.err"
check "trn1, no plugin found: the NxD Inference plugin's settings, exit 0" test $? -eq 0
check "the run says which stack to pin" grep -q 'the only vLLM plugin for Trainium; pin the NxD Inference stack' "$tmp/trn1run.err"
check "buckets as override_neuron_config's context_encoding_buckets" \
    grep -qxF 'arg {"override_neuron_config": {"enable_bucketing": true, "context_encoding_buckets": [8, 24]}}' "$tmp/trn1.dump"
check "NEURON_COMPILED_ARTIFACTS a folder of the run" \
    grep -qx "env NEURON_COMPILED_ARTIFACTS=$tmp/trn1run/recipe-1/neuron-compiled-artifacts" "$tmp/trn1.dump"
comp=$(field "$tmp/trn1run/results.csv" server_compile_s value)
check "so server_compile_s is the compile ($comp s), not about 0" perl -e 'exit !($ARGV[0] >= 0.5)' "$comp"
TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$tmp/trn1" VIRTUAL_ENV= PATH="$tmp/bin:$PATH" \
    TB_BIN_ABS="$bin" "$TB_BIN" run --recipe vllm --model llama-tiny --seq-in 16 --seq-out 8 \
    --decode-buckets 1,16 --out "$tmp/trn1dec" 2>"$tmp/trn1dec.err"
check "trn1: decode buckets refused (exit 2): NxD Inference has no batch buckets" \
    sh -c "test $? -eq 2 && grep -q \"field 'decode_buckets': vllm-neuron 0.x (on NxD Inference) has no batch-size buckets\" '$tmp/trn1dec.err' && test ! -e '$tmp/trn1dec'"

# vLLM 0.10 removed --device: the manual's old --server-cmd example is refused by vLLM
TRNBENCH_TEST=1 PATH="$tmp/bin:$PATH" TB_BIN_ABS="$bin" "$TB_BIN" run \
    --endpoint http://127.0.0.1:1/v1 --model llama-tiny --seq-in 16 --seq-out 8 \
    --server-cmd 'vllm serve m --device neuron --port 1' --server-timeout 5 \
    --out "$tmp/device" 2>"$tmp/device.err"
check "--device: the server does not start (exit 1)" test $? -eq 1
check "vLLM's words in its log" grep -q 'unrecognized arguments: --device neuron' "$tmp/device/server-1.log"
check "docs/serving.md's vllm --server-cmd examples pass no --device" \
    sh -c "grep -q -- \"--server-cmd 'vllm serve \" '$TB_SRCDIR/docs/serving.md' && ! grep -q -- \"--server-cmd 'vllm serve [^']*--device\" '$TB_SRCDIR/docs/serving.md'"
