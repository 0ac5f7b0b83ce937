#!/bin/sh
# tests/cli/import.t: `trnbench import` end to end on the fixtures of tests/data/import/
# (written from each tool's source; README.md there): the rows each format appends, a
# second import of the same file adding nothing (with other options too), bad inputs
# and bad options each refused with exit 2, the file and the field named and
# results.csv unchanged, several files imported all or none, and the report pricing
# the imported rows and labelling them imported.
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
d="$TB_SRCDIR/tests/data/import"
t="$TB_BUILDDIR/tests/tmp/cli_import"
out="$t/out"
res="$out/results.csv"
rm -rf "$t" && mkdir -p "$t"

echo "1..50"
"$TB_BIN" import --help > "$t/help" 2>&1
check "import --help exits 0" test $? -eq 0
check "and names the formats" grep -q 'llmperf-upstream' "$t/help"
"$TB_BIN" --help | grep -q "^  import "
check "trnbench --help lists import" test $? -eq 0

rows() { tail -n +2 "$1" | grep -c '^import:'; }

"$TB_BIN" import --format vllm "$d/vllm-bench-serve.json" --model llama-3.1-8b \
    --target p5.48xlarge --chips 1 --measured-by 'Team A' --out "$out" > "$t/o1" 2> "$t/e1"
check "vLLM result imported: exit 0" test $? -eq 0
check "8 rows appended" test "$(rows "$res")" -eq 8
check "the reasons for what was left out are printed" \
    grep -q 'not imported: max_concurrent_requests: the peak' "$t/e1"
# the output_tokens_per_s row: provenance, executor, batch, metric, value (the columns
# before notes, which has commas inside quotes)
grep '^import:' "$res" | cut -d, -f2,6,11,16,17 | grep ',output_tokens_per_s,' > "$t/row"
check "output_tokens_per_s: measured, import, batch 16, 400" \
    test "$(cat "$t/row")" = "measured,import,16,output_tokens_per_s,400"
check "the notes say who measured and that trnbench did not run it" \
    grep -q 'imported: measured by Team A on 2026-03-15' "$res"
cp "$res" "$t/before.csv"

"$TB_BIN" import --format vllm "$d/vllm-bench-serve.json" --model llama-3.1-8b \
    --target p5.48xlarge --chips 1 --out "$out" > "$t/o2" 2> "$t/e2"
check "importing it again exits 0" test $? -eq 0
check "and says it was imported already" grep -q 'already imported' "$t/e2"
check "results.csv unchanged" cmp -s "$res" "$t/before.csv"
"$TB_BIN" import --format auto "$d/vllm-bench-serve.json" --model llama-3.1-8b \
    --target p4d.24xlarge --out "$out" >/dev/null 2>&1
check "again with --format auto and another target: still unchanged" cmp -s "$res" "$t/before.csv"

# bad inputs: each exits 2, names the file and the field, and writes nothing
bad() { # NAME FIELD-TEXT: import $t/NAME.json, expect exit 2 and FIELD-TEXT in the message
    "$TB_BIN" import --format vllm "$t/$1.json" --model llama-3.1-8b --out "$out" \
        > /dev/null 2> "$t/$1.err"
    s=$?
    check "$1: exit 2" test $s -eq 2
    check "$1: names the file and $2" sh -c "grep -q '$1.json' '$t/$1.err' && grep -qF \"$2\" '$t/$1.err'"
    check "$1: results.csv unchanged" cmp -s "$res" "$t/before.csv"
}
head -c 700 "$d/vllm-rate.json" > "$t/truncated.json"
bad truncated "not valid JSON"
sed 's/"output_throughput": 400.0/"output_throughput": "400.0"/' "$d/vllm-bench-serve.json" > "$t/string.json"
bad string "field 'output_throughput': not a number: a string"
grep -v '"completed"' "$d/vllm-bench-serve.json" > "$t/missing.json"
bad missing "field 'completed': missing"
sed 's/"median_ttft_ms": 130.25/"median_ttft_ms": NaN/' "$d/vllm-bench-serve.json" > "$t/nan.json"
bad nan "field 'median_ttft_ms': not a number: NaN"
sed 's/"p99_itl_ms": 58.25/"p99_itl_ms": -58.25/' "$d/vllm-bench-serve.json" > "$t/negative.json"
bad negative "field 'p99_itl_ms': negative"

# several files: one bad one and none is imported
"$TB_BIN" import --format vllm "$d/vllm-rate.json" "$t/nan.json" --model llama-3.1-8b \
    --out "$out" > /dev/null 2>&1
check "a good file beside a bad one: exit 2" test $? -eq 2
check "and the good one is not imported either" cmp -s "$res" "$t/before.csv"

# options
"$TB_BIN" import --format vllm "$d/vllm-rate.json" --model llama-9b --out "$out" > /dev/null 2>&1
check "an unknown --model: exit 2" test $? -eq 2
"$TB_BIN" import --format vllm "$d/vllm-rate.json" --model llama-3.1-8b --target x9.huge \
    --out "$out" > /dev/null 2> "$t/e3"
check "an unknown --target: exit 2, named" sh -c "test $? -eq 2 && grep -q 'x9.huge' '$t/e3'"
"$TB_BIN" import --format vllm "$d/vllm-rate.json" --model llama-3.1-8b --measured-on 2026-02-30 \
    --out "$out" > /dev/null 2>&1
check "--measured-on not a date: exit 2" test $? -eq 2
"$TB_BIN" import --format auto "$d/llmperf-summary.json" --model llama-3.1-8b --out "$out" \
    > /dev/null 2> "$t/e4"
check "an LLMPerf summary with --format auto: exit 2, asking which LLMPerf" \
    sh -c "test $? -eq 2 && grep -q 'llmperf-upstream' '$t/e4'"
"$TB_BIN" import --format nxdi "$d/nxdi-benchmark-report.json" --model llama-3.1-8b --out "$out" \
    > /dev/null 2> "$t/e5"
check "NxDI without its shape: exit 2, asking for --batch" \
    sh -c "test $? -eq 2 && grep -q -- '--batch' '$t/e5'"
check "results.csv still unchanged" cmp -s "$res" "$t/before.csv"

# the other formats, together
"$TB_BIN" import --format nxdi "$d/nxdi-benchmark-report.json" --model llama-3.1-8b \
    --target trn1.32xlarge --chips 1 --batch 4 --seq-in 1024 --seq-out 256 \
    --measured-on 2026-03-10 --out "$out" > /dev/null 2>&1 &&
    "$TB_BIN" import --format=llmperf "$d/llmperf-summary.json" --model=llama-3.1-8b \
        --target=inf2.48xlarge --out="$out" > /dev/null 2>&1
check "NxDI and LLMPerf imported: exit 0" test $? -eq 0
check "8 + 8 + 7 rows" test "$(rows "$res")" -eq 23

"$TB_BIN" report --out "$t/report" --usd-per-hour 1 "$res" > /dev/null 2> "$t/e6"
check "the report on them exits 0" test $? -eq 0
check "labels them measured (imported)" grep -q '| measured (imported) |' "$t/report/report.md"
check "lists their serving levels with the tool" \
    grep -q 'imported: LLMPerf with Neuron' "$t/report/report.md"
check "and prices them (usd_per_mtok_out rows in cost.csv)" \
    sh -c "grep '^import:' '$t/report/cost.csv' | grep -q 'usd_per_mtok_out'"

# TorchTitan's training log: its metrics lines into measured training rows
tt="$t/titan"
"$TB_BIN" import --format torchtitan "$d/torchtitan-trn2.log" --model llama-3.1-8b \
    --target trn2.48xlarge --batch 64 --seq-in 8192 --out "$tt" > /dev/null 2> "$t/e7"
check "a TorchTitan log without --devices: exit 2, asking for it" \
    sh -c "test $? -eq 2 && grep -q -- '--devices (its world size)' '$t/e7' && test ! -e '$tt/results.csv'"
"$TB_BIN" import --format torchtitan "$d/torchtitan-trn2.log" --model llama-3.1-8b \
    --target trn2.48xlarge --batch 64 --seq-in 8192 --devices 64 --measured-by 'Team T' \
    --out "$tt" > /dev/null 2> "$t/e8"
check "a TorchTitan log imported: exit 0" test $? -eq 0
check "5 rows: step_time_s, train_tokens_per_s, gflop_per_s, loss, mfu" \
    test "$(tail -n +2 "$tt/results.csv" | cut -d, -f16 | tr '\n' ' ')" = "step_time_s train_tokens_per_s gflop_per_s loss mfu "
check "step_time_s 4 s, train 64 x 8192, measured by import" \
    test "$(csv_cell "$tt/results.csv" value metric=step_time_s)/$(csv_cell "$tt/results.csv" phase metric=step_time_s)/$(csv_cell "$tt/results.csv" executor metric=step_time_s)" = "4/train/import"
check "train_tokens_per_s: tps 2,048 x 64 devices" \
    test "$(csv_cell "$tt/results.csv" value metric=train_tokens_per_s)" = 131072
check "what was left out is said" grep -q 'not imported: memory: ' "$t/e8"
cp "$tt/results.csv" "$t/titan-before.csv"
"$TB_BIN" import --format auto "$d/torchtitan-trn2.log" --model llama-3.1-8b \
    --batch 64 --seq-in 8192 --devices 64 --out "$tt" > /dev/null 2> "$t/e9"
check "again with --format auto: told a TorchTitan log, already imported" \
    sh -c "test $? -eq 0 && grep -q 'TorchTitan.*already imported\|already imported' '$t/e9' && cmp -s '$tt/results.csv' '$t/titan-before.csv'"
sed 's/tps: 2,000/tps: 2,00/' "$d/torchtitan-trn2.log" > "$t/titan-bad.log"
"$TB_BIN" import --format torchtitan "$t/titan-bad.log" --model llama-3.1-8b \
    --batch 64 --seq-in 8192 --devices 64 --out "$tt" > /dev/null 2> "$t/e10"
check "a malformed metrics line: exit 2, the file, line and field named, nothing written" \
    sh -c "test $? -eq 2 && grep -q \"titan-bad.log: line 6: field 'tps'\" '$t/e10' && cmp -s '$tt/results.csv' '$t/titan-before.csv'"
"$TB_BIN" import --format vllm "$d/vllm-rate.json" --model llama-3.1-8b --devices 8 \
    --out "$tt" > /dev/null 2> "$t/e11"
check "--devices with another format: exit 2" \
    sh -c "test $? -eq 2 && grep -q -- '--devices is for torchtitan only' '$t/e11'"
