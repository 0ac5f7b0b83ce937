#!/bin/sh
# tests/cli/recipe.t: `trnbench run --recipe vllm` end to end with a stand-in `vllm` on
# PATH (this test's own script, which checks what the recipe gives it and then runs
# `trnbench serve` in its place: trnbench refuses it without TRNBENCH_TEST=1). The
# recipe writes the model folder, empties its compile cache before the cold start and
# keeps it for the warm one; the rows record both starts and the compile time between
# them, and the report prices a compile. Bad recipe options are input errors (exit 2).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_recipe"
rm -rf "$tmp" && mkdir -p "$tmp/bin"
bin=$(cd "$(dirname "$TB_BIN")" && pwd)/$(basename "$TB_BIN")

# the stand-in: vllm serve DIR --served-model-name M ... --port P
cat >"$tmp/bin/vllm" <<'SH'
#!/bin/sh
[ "$1" = serve ] || exit 2
dir=$2; shift 2
model= port= seqs= len= load= tp=
while [ $# -gt 0 ]; do
    case $1 in
    --served-model-name) model=$2; shift ;;
    --port) port=$2; shift ;;
    --max-num-seqs) seqs=$2; shift ;;
    --max-model-len) len=$2; shift ;;
    --load-format) load=$2; shift ;;
    --tensor-parallel-size) tp=$2; shift ;;
    esac
    shift
done
# what the recipe promises: a config.json of the model, random weights (GPUs: vLLM's
# --load-format dummy; Neuron: the vllm-neuron plugin ignores that flag and asserts "No
# .safetensors files found" in the folder), its own cache
grep -q '"num_hidden_layers": 2' "$dir/config.json" || { echo "bad config.json" >&2; exit 3; }
if [ -z "$load" ]; then
    ls "$dir"/*.safetensors >/dev/null 2>&1 || { echo "No .safetensors files found" >&2; exit 3; }
elif [ "$load" != dummy ]; then
    echo "weights not dummy" >&2; exit 3
fi
printf '%s\n' "${load:-none}" >"$VLLM_CACHE_ROOT/../load-format"
[ -d "$VLLM_CACHE_ROOT" ] && [ "$HF_HUB_OFFLINE" = 1 ] || { echo "no cache root" >&2; exit 3; }
echo "$*" >/dev/null
# a cold cache "compiles" for a second, then leaves its artifact for the warm start
if [ ! -e "$VLLM_CACHE_ROOT/neff" ]; then sleep 1; : >"$VLLM_CACHE_ROOT/neff"; fi
exec "$TB_BIN_ABS" serve --model "$model" --served-model-name "$model" --port "$port" \
    --max-num-seqs "$seqs" --max-model-len "$len"
SH
chmod +x "$tmp/bin/vllm"

field() { csv_cell "$1" "$3" metric="$2"; } # field FILE METRIC NAME

recipe() { # recipe OUT [ARGS...]
    out=$1
    shift
    PATH="$tmp/bin:$PATH" TB_BIN_ABS="$bin" "$TB_BIN" run --recipe vllm --model llama-tiny \
        --seq-in 16 --seq-out 8 --concurrency 1,2 --requests 4 --target trn2.48xlarge \
        --out "$out" "$@" 2>"$out.err"
}

echo "1..43"
TRNBENCH_TEST=1 recipe "$tmp/ok" --server-start cold,warm --tp 2 --max-num-seqs 4
check "recipe vllm, cold then warm: exit 0" test $? -eq 0
r="$tmp/ok/results.csv"
check "the model folder: config.json, tokenizer.json, tokenizer_config.json" \
    test -s "$tmp/ok/recipe-1/model/config.json" -a -s "$tmp/ok/recipe-1/model/tokenizer.json" \
    -a -s "$tmp/ok/recipe-1/model/tokenizer_config.json"
check "the compile cache in the out folder, filled by the cold start" \
    test -e "$tmp/ok/recipe-1/vllm-cache/neff"
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
TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$TB_SRCDIR/tests/data/platform_trn2" VIRTUAL_ENV= \
    PATH="$tmp/bin:$PATH" TB_BIN_ABS="$bin" "$TB_BIN" run --recipe vllm --model llama-tiny \
    --seq-in 16 --seq-out 8 --concurrency 1 --duration 1.5 --tp 8 --out "$tmp/trn2" \
    2>"$tmp/trn2.err"
check "recipe on the simulated trn2: exit 0" test $? -eq 0
r="$tmp/trn2/results.csv"
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
check "the vllm-neuron buckets would be passed there (the label says Neuron)" \
    sh -c 'case "$0" in "vLLM (recipe vllm: tp=8, max-num-seqs 16, max-model-len 24, random safetensors weights, Neuron)"*) exit 0;; esac; exit 1' \
    "$(field "$r" output_tokens_per_s device)"
check "on Neuron the random weights are in the folder: model.safetensors (llama-tiny: 238208 bytes of bf16)" \
    sh -c 'test -s "$0/model.safetensors" && test "$(od -An -tu8 -N8 "$0/model.safetensors" | tr -d " ")" -gt 0 &&
        test $(($(wc -c <"$0/model.safetensors") - 8 - $(od -An -tu8 -N8 "$0/model.safetensors"))) -eq 238208' \
    "$tmp/trn2/recipe-1/model"
check "and no --load-format dummy, which the plugin ignores" \
    test "$(cat "$tmp/trn2/recipe-1/load-format")" = none
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
    PATH="$tmp/bin:$PATH" TB_BIN_ABS="$bin" "$TB_BIN" run --recipe vllm --model llama-tiny \
    --seq-in 16 --seq-out 8 --concurrency 1 --requests 2 --tp 8 --out "$tmp/ckpt" \
    --model-path "$tmp/trn2/recipe-1/model" 2>"$tmp/ckpt.err"
check "--model-path on the simulated trn2: exit 0" test $? -eq 0
check "no model folder written" test ! -e "$tmp/ckpt/recipe-1/model"
check "the checkpoint served, without --load-format" test "$(cat "$tmp/ckpt/recipe-1/load-format")" = none
check "the label says checkpoint weights" \
    sh -c 'case "$0" in "vLLM (recipe vllm: tp=8, max-num-seqs 16, max-model-len 24, checkpoint weights, Neuron)"*) exit 0;; esac; exit 1' \
    "$(field "$tmp/ckpt/results.csv" output_tokens_per_s device)"

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
bad "a tp of 2^40" "field 'tp': expected" --recipe vllm --tp 1099511627776
bad "model_path without a recipe" "field 'model_path': for a recipe's server (recipe=vllm) only" \
    --endpoint http://x:1/v1 --model-path "$tmp"
bad "a model path that does not exist" "command line: --model-path '$tmp/none': No such file or directory" \
    --recipe vllm --model-path "$tmp/none"
bad "a model path without config.json" "command line: --model-path: '$tmp/bin/config.json'" \
    --recipe vllm --model-path "$tmp/bin"
bad "another model's checkpoint" "config.json': field 'num_hidden_layers': 2, but model 'llama-3.1-8b' has 32" \
    --recipe vllm --model llama-3.1-8b --model-path "$tmp/trn2/recipe-1/model"
