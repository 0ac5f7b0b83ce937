#!/bin/sh
# tests/cli/predict.t: `trnbench predict` and `trnbench validate` end to end: a
# scenario table with good and bad rows (bad rows get a reason, the others still a
# prediction, exit 0), a table without a needed column, an unreadable file (exit 2),
# and validate on the published rows kept in the repository (the accuracy targets
# hold) and on a row made wrong on purpose (exit 1); "--opt=value" and a missing value.
# --prices DIR is the tables' folder, --pricing P and --region R the prices of
# usd_to_train (an old --pricing DIR is refused with exit 2); `report` reads predict's
# output as modeled rows, the rows with a reason skipped and counted.

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_predict"
rm -rf "$tmp" && mkdir -p "$tmp"
sc="$TB_SRCDIR/tests/data/scenarios.csv"

field() { csv_cell "$1" "$3" id="$2"; } # field FILE ID NAME

echo "1..67"
"$TB_BIN" predict --scenarios "$sc" >"$tmp/out.csv" 2>"$tmp/err"
check "predict exits 0 with bad rows in the table" test $? -eq 0
check "the columns predicted, model_version and why are added" \
    sh -c "head -1 '$tmp/out.csv' | grep -q ',note,predicted,model_version,why,bound,assumptions$'"
check "every input row comes back" test "$(($(wc -l <"$tmp/out.csv") - 1))" -eq 7
v=$(field "$tmp/out.csv" S1 predicted)
check "the good row is predicted ($v tokens/s)" perl -e 'exit !($ARGV[0] > 1000 && $ARGV[0] < 100000)' "$v"
check "with the model version" test "$(field "$tmp/out.csv" S1 model_version)" = "trnbench-model 1.0"
w=$(field "$tmp/out.csv" S2 why)
check "unknown model: no prediction, a reason ($w)" \
    sh -c "test -z '$(field "$tmp/out.csv" S2 predicted)' && echo \"\$0\" | grep -q \"unknown model 'llama-9-1t'\"" "$w"
w=$(field "$tmp/out.csv" S3 why)
check "unknown target: the reason names it ($w)" \
    test "$w" = "unknown target 'x9.huge' (not in pricing/instances.csv)"
w=$(field "$tmp/out.csv" S4 why)
check "nonsense number: the field is named ($w)" test "$w" = "field 'seq_in': expected an integer in [1, 16777216] (tokens), got 'abc'"
w=$(field "$tmp/out.csv" S5 why)
check "a model that does not fit is said so" sh -c 'echo "$0" | grep -q "does not fit"' "$w"
v=$(field "$tmp/out.csv" S6 predicted)
check "a Neuron layout over NeuronCores is predicted ($v tokens/s)" perl -e 'exit !($ARGV[0] > 1e5)' "$v"
w=$(field "$tmp/out.csv" S7 why)
check "a wrong unit is refused ($w)" test "$w" = "field 'unit': 'seconds' for ttft_ms, expected 'ms'"

# a table without the model column: every row says so, still exit 0
cut -d, -f1-4,6- "$sc" >"$tmp/nomodel.csv"
"$TB_BIN" predict --scenarios "$tmp/nomodel.csv" >"$tmp/nomodel.out" 2>/dev/null
check "a missing column: exit 0 and each row says which" \
    sh -c "test $? -eq 0 && test \$(grep -c \"column 'model' missing\" '$tmp/nomodel.out') -eq 7"
"$TB_BIN" predict --scenarios "$tmp/nope.csv" >"$tmp/nope.out" 2>"$tmp/nope.err"
check "an unreadable file exits 2 and names it" \
    sh -c "test $? -eq 2 && grep -q 'nope.csv' '$tmp/nope.err' && test ! -s '$tmp/nope.out'"

# validate: the published rows kept in the repository, at the model's targets (the
# defaults: median <= 10%, p90 <= 25%, 80% of complete rows predicted), and every
# complete row predicted; a change that makes the model worse on them fails here.
"$TB_BIN" predict --scenarios "$TB_SRCDIR/reports/validation/published.csv" >"$tmp/pub.csv" 2>/dev/null
check "no published row waits for a serving regime the model lacks" \
    test "$(grep -c 'not modeled yet' "$tmp/pub.csv")" -eq 0
# The rows of issue 33's new terms came after the figures were chosen, and nothing was
# chosen on them: speculative decoding and prefix caching (F001 on; some contradict the
# model and are kept, reports/validation/README.md "Serving terms", checked by
# tests/cli/serve-terms.t) and mixtures of experts (M001 on, docs/model.md "Mixture of
# experts"). Every complete row, those included, must be predicted; the targets guard
# the rows the figures were chosen on.
"$TB_BIN" validate --quiet --coverage-min=100 --p90-max=100 "$TB_SRCDIR/reports/validation/published.csv" >"$tmp/val.out" 2>&1
check "validate on all the published rows: every complete row predicted (exit 0)" test $? -eq 0
grep -v '^[FM][0-9]' "$TB_SRCDIR/reports/validation/published.csv" >"$tmp/tuned.csv"
"$TB_BIN" validate --quiet --coverage-min=100 "$tmp/tuned.csv" >"$tmp/tuned.out" 2>&1
check "validate on the rows the figures were chosen on: median <= 10%, p90 <= 25% (exit 0)" test $? -eq 0
"$TB_BIN" validate --quiet --p90-max=20 "$TB_SRCDIR/reports/validation/published.csv" >"$tmp/val20.out" 2>&1
check "at a p90 target of 20% it says NOT met and exits 1" \
    sh -c "test $? -eq 1 && grep -q 'p90 <= 20% (.*NOT met' '$tmp/val20.out'"
check "and prints the median and p90 per family and overall" \
    sh -c "grep -q '^H100 SXM5 ' '$tmp/val.out' && grep -q '^Trainium1 ' '$tmp/val.out' && grep -q '^overall ' '$tmp/val.out'"
# an MLPerf scenario with neither lengths nor a dataset runs MLPerf's set for the model:
# the same prediction as the row naming it; a model MLPerf has no benchmark of still
# lacks its prompt length
cat >"$tmp/mlperf.csv" <<EOF
id,target,instances,chips,model,phase,precision,seq_in,seq_out,batch,tp,pp,dp,steps,resolution,metric,unit,value,scenario,dataset
M1,p5en.48xlarge,1,8,llama-2-70b,serve,fp8,,,,,,,,,output_tokens_per_s,tokens/s,,server,openorca
M2,p5en.48xlarge,1,8,llama-2-70b,serve,fp8,,,,,,,,,output_tokens_per_s,tokens/s,,server,
M3,p6-b200.48xlarge,1,8,llama-3.1-405b,serve,fp4,,,,,,,,,output_tokens_per_s,tokens/s,,interactive,
M4,p5en.48xlarge,1,8,llama-3.1-70b,serve,fp8,,,,,,,,,output_tokens_per_s,tokens/s,,offline,
EOF
"$TB_BIN" predict --scenarios "$tmp/mlperf.csv" >"$tmp/mlperf.out" 2>/dev/null
a=$(field "$tmp/mlperf.out" M1 predicted) b=$(field "$tmp/mlperf.out" M2 predicted)
check "scenario server without a dataset: llama-2-70b runs openorca ($b = $a tokens/s)" \
    sh -c "test -n '$a' && test '$a' = '$b' && grep -q '^M2,.*over openorca' '$tmp/mlperf.out'"
check "llama-3.1-405b interactive takes MLPerf's 405B set" \
    sh -c "test -n '$(field "$tmp/mlperf.out" M3 predicted)' && grep -q '^M3,.*over mlperf-llama3.1-405b' '$tmp/mlperf.out'"
check "llama-3.1-70b (no MLPerf benchmark): seq_in missing" \
    sh -c "test -z '$(field "$tmp/mlperf.out" M4 predicted)' && echo \"\$0\" | grep -q 'seq_in missing'" \
    "$(field "$tmp/mlperf.out" M4 why)"

# tp given without dp over more chips: the chips serve as replicas of the group, the
# same prediction as with dp given (8 GPUs at tp 1, a concurrency of 64 shared)
cat >"$tmp/dp.csv" <<EOF
id,target,instances,chips,model,phase,precision,seq_in,seq_out,batch,tp,pp,dp,steps,resolution,metric,unit,value,concurrency
D1,p6-b200.48xlarge,1,8,llama-3.1-8b,serve,fp8,1024,1024,,1,,8,,,ttft_ms,ms,,64
D2,p6-b200.48xlarge,1,8,llama-3.1-8b,serve,fp8,1024,1024,,1,,,,,ttft_ms,ms,,64
EOF
"$TB_BIN" predict --scenarios "$tmp/dp.csv" >"$tmp/dp.out" 2>/dev/null
a=$(field "$tmp/dp.out" D1 predicted) b=$(field "$tmp/dp.out" D2 predicted)
check "tp 1 on 8 chips without dp: 8 replicas, as dp 8 ($b = $a ms)" \
    sh -c "test -n '$a' && test '$a' = '$b' && grep -q '^D2,.*tp=1 dp=8' '$tmp/dp.out'"

# one row whose value is 100 times off fails a validation of that row alone
(head -1 "$TB_SRCDIR/reports/validation/published.csv"; grep '^P103,' "$TB_SRCDIR/reports/validation/published.csv" | sed 's/,27778.8885,/,2777888.85,/') >"$tmp/wrong.csv"
"$TB_BIN" validate --quiet "$tmp/wrong.csv" >"$tmp/wrong.out" 2>&1
check "a row 100x off fails validation (exit 1)" sh -c "test $? -eq 1 && grep -q 'NOT met' '$tmp/wrong.out'"

# the breakdown per family, phase and precision follows the summary
check "validate prints the errors per family, phase and precision" \
    grep -q '^family  *phase  *precision  *rows  *complete  *predicted  *median%  *p90%$' "$tmp/val.out"
check "H100 SXM5 serve fp8: its 44 published dense rows, all complete and predicted" \
    grep -Eq '^H100 SXM5 +serve +fp8 +44 +44 +44 +[0-9]+\.[0-9] +[0-9]+\.[0-9]$' "$tmp/val.out"
# every line of published.csv after the header starts a row (no field holds a line break)
npub=$(($(wc -l <"$TB_SRCDIR/reports/validation/published.csv") - 1))
check "the breakdown's rows add up to the $npub published rows" \
    test "$(sed -n '/^per family, phase and precision$/,$p' "$tmp/val.out" | awk 'NR > 2 { n += $(NF - 4) } END { print n }')" -eq "$npub"
# on the one-row table its only group has the family's figures: 1 1 1 and the same error
fam=$(sed -n 's/^H200 SXM  *\(1  *1  *1  *[0-9.]*  *[0-9.]*\)$/\1/p' "$tmp/wrong.out")
check "one row, H200 SXM serve fp8 prints the family's line ($fam)" \
    sh -c "test -n '$fam' && grep -q '^H200 SXM  *serve  *fp8  *$fam$' '$tmp/wrong.out'"

# unseen.csv: rows the model was never fitted to; validate reads it and predicts all 73.
# Its first 28 (U001-U032: B200/GB200 fp4 serving, GB200 flux1 training, NIM on H100)
# are held to the default targets; the 45 rows of the Neuron decoder tables' Mistral 7B
# and CodeLlama 13B (U033-U077, added before they were predicted) are where the model
# misses its p90 (transformers-neuronx 2.18.0 prompts of 4,096-8,192 tokens, 40-80%
# slow in the tables against the model: reports/validation/README.md), so the whole
# table is held to median <= 10%, p90 <= 60% as a guard against regressions, and is
# seen to miss the p90 target of 25%; and every row names its source
uns="$TB_SRCDIR/reports/validation/unseen.csv"
perl -ne 'print if $. == 1 || (/^U(\d+),/ && $1 <= 32)' "$uns" >"$tmp/unseen28.csv"
"$TB_BIN" validate --quiet "$tmp/unseen28.csv" >"$tmp/unseen28.out" 2>&1
check "validate on unseen.csv's first 28 rows (U001-U032): 28 predicted, within the targets (exit 0)" \
    sh -c "test $? -eq 0 && grep -Eq '^overall +28 +28 +28 ' '$tmp/unseen28.out'"
"$TB_BIN" validate --quiet --p90-max=60 --coverage-min=100 "$uns" >"$tmp/unseen.out" 2>&1
check "validate on all of unseen.csv: 73 rows, 73 predicted, median <= 10%, p90 <= 60% (exit 0)" \
    sh -c "test $? -eq 0 && grep -Eq '^overall +73 +73 +73 ' '$tmp/unseen.out'"
"$TB_BIN" validate --quiet "$uns" >"$tmp/unseen25.out" 2>&1
check "and at the p90 target of 25% it says NOT met (exit 1)" \
    sh -c "test $? -eq 1 && grep -q 'p90 <= 25% (.*NOT met' '$tmp/unseen25.out'"
check "every unseen.csv row has a source" \
    test "$(perl -e 'open my $f, "<", $ARGV[0] or die; my $h = <$f>; my $n = 0;
        while (<$f>) { $n++ } print $n' "$uns")" -eq 73 -a \
    -z "$(perl -ne 'print "$1\n" if /^(U\d+),/' "$uns" | while read -r id; do test -n "$(csv_cell "$uns" source id="$id")" || echo "$id"; done)"

# options take "--opt=value" as well as "--opt value", before or after the file
"$TB_BIN" predict --scenarios="$sc" >"$tmp/eq.csv" 2>/dev/null
check "predict --scenarios=FILE writes the same table as --scenarios FILE" cmp -s "$tmp/out.csv" "$tmp/eq.csv"
"$TB_BIN" validate "$TB_SRCDIR/reports/validation/published.csv" --quiet --median-max=1 >"$tmp/eq.out" 2>&1
check "validate --median-max=1 is taken: the target is not met (exit 1)" \
    sh -c "test $? -eq 1 && grep -q '^targets: median <= 1% (' '$tmp/eq.out' && grep -q 'NOT met' '$tmp/eq.out'"
"$TB_BIN" validate --quiet --p90-max=99 --coverage-min=50 "$TB_SRCDIR/reports/validation/published.csv" >"$tmp/eq2.out" 2>&1
check "validate --p90-max=99 --coverage-min=50 are taken (exit 0)" \
    sh -c "test $? -eq 0 && grep -q 'p90 <= 99% (.*predicted >= 50% of the rows' '$tmp/eq2.out'"
"$TB_BIN" validate "$TB_SRCDIR/reports/validation/published.csv" --median-max >/dev/null 2>"$tmp/noval.err"
check "an option without its value exits 2 and says so" \
    sh -c "test $? -eq 2 && grep -q \"trnbench validate: option '--median-max' needs a value\" '$tmp/noval.err'"

# --prices DIR: the same tables from a folder named on the command line
"$TB_BIN" predict --scenarios "$sc" --prices "$TB_SRCDIR/pricing" >"$tmp/prices.csv" 2>/dev/null
check "predict --prices DIR writes the same table as the data folder's" cmp -s "$tmp/out.csv" "$tmp/prices.csv"
# --pricing DIR, the old meaning: refused, with the option to use, and nothing written
"$TB_BIN" predict --scenarios "$sc" --pricing "$TB_SRCDIR/pricing" >"$tmp/olddir.out" 2>"$tmp/olddir.err"
check "predict --pricing FOLDER exits 2, says to use --prices, writes nothing" \
    sh -c "test $? -eq 2 && grep -q 'is a folder: --pricing is the purchase model now.*--prices' '$tmp/olddir.err' && test ! -s '$tmp/olddir.out'"
"$TB_BIN" validate --quiet --pricing "$TB_SRCDIR/pricing" "$TB_SRCDIR/reports/validation/published.csv" >/dev/null 2>"$tmp/olddirv.err"
check "validate --pricing FOLDER exits 2 likewise" sh -c "test $? -eq 2 && grep -q -- '--prices' '$tmp/olddirv.err'"
"$TB_BIN" predict --scenarios "$sc" --pricing lease >/dev/null 2>"$tmp/lease.err"
check "an unknown purchase model exits 2 and names it" \
    sh -c "test $? -eq 2 && grep -q \"unknown purchase model 'lease'\" '$tmp/lease.err'"
"$TB_BIN" predict --scenarios "$sc" --region mars-1 >/dev/null 2>"$tmp/mars.err"
check "an unknown region exits 2 and names it" sh -c "test $? -eq 2 && grep -q \"unknown region 'mars-1'\" '$tmp/mars.err'"

# --pricing P --region R price usd_to_train: 8 p5.48xlarge training 1e12 tokens; the time
# to train is MLPerf's (scenario training): the tokens over the throughput plus llama31_8b's evaluations (every
# 12288 sequences, 1024 sequences forward: a third of a training step's work per token)
printf '%s\n' 'id,target,instances,model,phase,precision,seq_in,batch,train_tokens,metric,unit,scenario' \
    'T1,p5.48xlarge,8,llama-3.1-8b,train,bf16,8192,1024,1e12,usd_to_train,USD,training' \
    'T2,p5.48xlarge,8,llama-3.1-8b,train,bf16,8192,1024,1e12,train_tokens_per_s,tokens/s,training' \
    'T3,p5.48xlarge,8,llama-3.1-8b,train,bf16,8192,1024,1e12,time_to_train_s,s,training' >"$tmp/train.csv"
"$TB_BIN" predict --scenarios "$tmp/train.csv" >"$tmp/od.csv" 2>/dev/null
"$TB_BIN" predict --scenarios "$tmp/train.csv" --pricing capacity-block --region us-east-2 >"$tmp/cb.csv" 2>/dev/null
od=$(field "$tmp/od.csv" T1 predicted)
cb=$(field "$tmp/cb.csv" T1 predicted)
tps=$(field "$tmp/cb.csv" T2 predicted)
ttt=$(field "$tmp/cb.csv" T3 predicted)
check "time_to_train_s = 1e12 tokens / $tps tokens/s + 9934 evaluations of 1024 x 8192 tokens at 3x ($ttt s)" \
    perl -e 'my ($s, $t) = @ARGV; my $x = 1e12 / $t + 9934 * 1024 * 8192 / $t / 3; exit !(abs($s - $x) < 2e-5 * $x)' "$ttt" "$tps"
field "$tmp/cb.csv" T3 assumptions >"$tmp/t3.txt"
check "and the assumptions say so" \
    grep -q 'time_to_train adds 9934 evaluations (MLPerf: every 12288 sequences, 1024 sequences each, forward only)' "$tmp/t3.txt"
# the price each used, from the tables: usd = time to train / 3600 x USD/h x 8
odh=$(field "$tmp/od.csv" T1 assumptions | sed -n 's/.*usd_to_train at \([0-9.]*\) USD\/h (us-east-1 on-demand, .*/\1/p')
cbh=$(field "$tmp/cb.csv" T1 assumptions | sed -n 's/.*usd_to_train at \([0-9.]*\) USD\/h (us-east-2 capacity-block, .*/\1/p')
check "usd_to_train on-demand us-east-1 by default (\$$od at \$$odh/h)" \
    perl -e 'my ($u, $h, $t) = @ARGV; exit !($h > 0 && abs($u - $t / 3600 * $h * 8) < 1e-4 * $u)' "$od" "$odh" "$ttt"
check "--pricing capacity-block --region us-east-2 prices it there, in the whole days of blocks it buys (\$$cb at \$$cbh/h)" \
    perl -MPOSIX=ceil -e 'my ($u, $h, $t, $o) = @ARGV; my $d = ceil($t / 86400); $d = 7 * ceil($d / 7) if $d > 14;
                          exit !($h > 0 && $u != $o && abs($u - $d * 24 * $h * 8) < 1e-4 * $u)' "$cb" "$cbh" "$ttt" "$od"

# report reads predict's output: each predicted row a modeled result, the others skipped
"$TB_BIN" report "$tmp/out.csv" --out "$tmp/rep" >"$tmp/rep.out" 2>"$tmp/rep.err"
check "report FILE of predict's output exits 0" test $? -eq 0
check "it says how many rows it read and skipped, and why" \
    grep -q "out.csv: a trnbench predict output: 2 rows read as modeled; 5 skipped, not predicted (why set, e.g. 'field 'model': unknown model 'llama-9-1t'" "$tmp/rep.err"
s1=$(csv_cell "$tmp/rep/cost.csv" tokens_per_s results_line=2)
p1=$(csv_cell "$tmp/rep/cost.csv" provenance results_line=2)
c1=$(csv_cell "$tmp/rep/cost.csv" chips_used results_line=2)
check "the predicted S1 row is priced as $p1, its line kept, charged $c1 of 8 GPUs" \
    test "$s1/$p1/$c1" = "$(field "$tmp/out.csv" S1 predicted)/modeled/1"
check "the report.md says the rows came from predict and names the model version" \
    sh -c "grep -q 'a trnbench predict output: 2 rows read as modeled' '$tmp/rep/report.md' && grep -q 'trnbench-model 1.0' '$tmp/rep/report.html'"

# fp4 (issue 18): a B200 row in fp4 predicted from the weights' bytes (NVFP4: 0.5 B and one
# fp8 scale per 16 values), its vendor alias the same, an H100 row refused with the reason,
# a misspelt precision named; compare --precision fp4 the same on both targets
printf '%s\n' 'id,target,chips,model,phase,precision,seq_in,seq_out,batch,metric,unit' \
    'F1,p6-b200.48xlarge,1,llama-3.1-70b,decode,fp4,128,128,1,tpot_ms,ms' \
    'F2,p6-b200.48xlarge,1,llama-3.1-70b,decode,nvfp4,128,128,1,tpot_ms,ms' \
    'F3,p5.48xlarge,1,llama-3.1-70b,decode,fp4,128,128,1,tpot_ms,ms' \
    'F4,p6-b200.48xlarge,1,llama-3.1-70b,decode,fp5,128,128,1,tpot_ms,ms' >"$tmp/fp4.csv"
"$TB_BIN" predict --scenarios "$tmp/fp4.csv" >"$tmp/fp4.out" 2>/dev/null
v=$(field "$tmp/fp4.out" F1 predicted)
# 70.55e9 matmul parameters x 0.5625 B / (8.0 TB/s x 0.80) = 6.2 ms, plus the 16-bit LM head
# (0.24 ms), KV and 2.21 ms fixed (80 layers x 25 us, a step's 200 us, one request's 10 us)
check "fp4 decode of 70B on one B200 is predicted near its weights' read ($v ms)" \
    sh -c "perl -e 'exit !(\$ARGV[0] > 8.2 && \$ARGV[0] < 9.0)' '$v' && test '$(field "$tmp/fp4.out" F1 bound)' = memory && echo '$(field "$tmp/fp4.out" F1 assumptions)' | grep -q 'weights 0.5625 B (NVFP4), KV 1 B'"
check "nvfp4 is the same row" test "$(field "$tmp/fp4.out" F2 predicted)" = "$v"
check "fp4 on an H100 is refused with the reason" \
    test "$(field "$tmp/fp4.out" F3 why)" = "H100 SXM5 has no fp4 tensor cores (chips.csv fp4_dense_tflops empty)"
check "a misspelt precision is named with the list" \
    test "$(field "$tmp/fp4.out" F4 why)" = "field 'precision': 'fp5' (bf16, fp16, fp8, cfp8, mxfp8, fp4, nvfp4, mxfp4, int8, fp32)"
"$TB_BIN" compare --model llama-3.1-70b --phase serve --targets p6-b200.48xlarge,p5.48xlarge \
    --seq-in 1024 --seq-out 256 --batch 1 --precision fp4 --out "$tmp/cmpfp4" >/dev/null 2>"$tmp/cmpfp4.err"
check "compare --precision fp4: the B200 row modeled, the H100 refused with the reason" \
    sh -c "test $? -eq 0 && grep -q ',modeled,p6-b200.48xlarge,.*,serve,fp4,' '$tmp/cmpfp4/results.csv' && grep -q 'H100 SXM5 has no fp4 tensor cores' '$tmp/cmpfp4.err'"

# serving regimes: concurrency, request_rate, MLPerf scenarios and datasets in a table
cat >"$tmp/regimes.csv" <<'CSV'
id,target,chips,model,phase,precision,seq_in,seq_out,tp,dp,metric,concurrency,request_rate,scenario,dataset
R1,p5.48xlarge,2,llama-3.3-70b,serve,fp8,5000,500,2,1,tpot_ms,1,,,
R2,p5.48xlarge,2,llama-3.3-70b,serve,fp8,5000,500,2,1,tpot_ms,50,,,
R3,p5.48xlarge,2,llama-3.3-70b,serve,fp8,5000,500,2,1,ttft_ms,,100,,
R4,p5.48xlarge,1,llama-3.1-8b,serve,fp8,1000,300,,,output_tokens_per_s,,,server,
R5,p5en.48xlarge,8,llama-2-70b,serve,fp8,,,,,output_tokens_per_s,,,offline,openorca
R6,p5en.48xlarge,8,llama-2-70b,serve,fp8,,,,,output_tokens_per_s,,,offline,nope
R7,p5.48xlarge,2,llama-3.3-70b,serve,fp8,5000,500,2,1,tpot_ms,50,1,,
CSV
"$TB_BIN" predict --scenarios "$tmp/regimes.csv" >"$tmp/regimes.out" 2>"$tmp/regimes.err"
check "a table of serving regimes: exit 0" test $? -eq 0
a=$(field "$tmp/regimes.out" R1 predicted)
b=$(field "$tmp/regimes.out" R2 predicted)
check "TPOT at concurrency 50 ($b ms) is well above one request's ($a ms)" \
    perl -e 'exit !($ARGV[1] > 2 * $ARGV[0])' "$a" "$b"
check "and the assumptions name the regime, the load and the queue" \
    sh -c 'echo "$0" | grep -q "concurrency 50 (closed loop).*in flight.*wait for admission .* ms (M/G/1"' "$(field "$tmp/regimes.out" R2 assumptions)"
w=$(field "$tmp/regimes.out" R3 why)
check "a rate beyond saturation is refused with the most it takes ($w)" \
    sh -c 'test -z "$1" && echo "$0" | grep -q "^saturated: at most [0-9.]* requests/s"' "$w" "$(field "$tmp/regimes.out" R3 predicted)"
check "MLPerf server is predicted with its limits named" \
    sh -c 'test -n "$1" && echo "$0" | grep -q "MLPerf server (llama3_1-8b: p99 TTFT <= 2000 ms, TPOT <= 100 ms"' \
    "$(field "$tmp/regimes.out" R4 assumptions)" "$(field "$tmp/regimes.out" R4 predicted)"
check "MLPerf's OpenOrca set is predicted at its prompt percentiles and the reference output" \
    sh -c 'test -n "$1" && echo "$0" | grep -q "MLPerf offline (throughput-maximising) over openorca: .*lengths 212/294"' \
    "$(field "$tmp/regimes.out" R5 assumptions)" "$(field "$tmp/regimes.out" R5 predicted)"
check "an unknown dataset is named" \
    sh -c 'echo "$0" | grep -q "unknown dataset .nope."' "$(field "$tmp/regimes.out" R6 why)"
check "two regimes in one row are refused" \
    sh -c 'echo "$0" | grep -q "different serving regimes: give one"' "$(field "$tmp/regimes.out" R7 why)"
# a diffusion model in a phase the model does not cost for it: said plainly (it was "field
# 'family': unknown family 'flux' (known: llama)", the file's line 8); in phase train its
# denoiser's training is predicted
cat >"$tmp/dtrain.csv" <<'CSV'
id,target,instances,chips,model,phase,precision,seq_in,seq_out,batch,tp,pp,dp,steps,resolution,metric,unit,value
D1,p6-b200.48xlarge,1,8,flux.1-dev,prefill,bf16,128,,1,,,,,1024,ttft_ms,ms,1
D2,p6-b200.48xlarge,1,8,flux.1-dev,train,bf16,,,64,,,,,256,step_time_s,s,1
CSV
"$TB_BIN" predict --scenarios "$tmp/dtrain.csv" >"$tmp/dtrain.out" 2>/dev/null
check "flux.1-dev in phase prefill: 'a diffusion model ... denoise and train (prefill is not modeled for it)'; its train row predicted" \
    sh -c 'echo "$0" | grep -q "^field .model.: .flux.1-dev. is a diffusion model: the model predicts its phases denoise and train (prefill is not modeled for it)$" &&
           test -z "$1" && perl -e "exit !(\$ARGV[0] > 0)" "$2"' \
    "$(field "$tmp/dtrain.out" D1 why)" "$(field "$tmp/dtrain.out" D2 why)" "$(field "$tmp/dtrain.out" D2 predicted)"

# a team's own training job is priced as compare prices it: no MLPerf evaluations
# unless the row says scenario training; at capacity-block prices, the whole days of
# Capacity Blocks it buys (EC2: 1-14 days, then 7-day steps)
printf 'id,target,instances,model,phase,precision,seq_in,batch,train_tokens,metric,unit,scenario\nJ1,p5.48xlarge,1,llama-3.1-8b,train,bf16,8192,32,1e10,usd_to_train,USD,\nJ2,p5.48xlarge,1,llama-3.1-8b,train,bf16,8192,32,1e10,time_to_train_s,s,\nJ3,p5.48xlarge,1,llama-3.1-8b,train,bf16,8192,32,1e10,time_to_train_s,s,training\n' >"$tmp/job.csv"
"$TB_BIN" predict --scenarios "$tmp/job.csv" >"$tmp/job.out" 2>/dev/null
"$TB_BIN" compare --model llama-3.1-8b --phase train --seq-in 8192 --batch 32 --targets p5.48xlarge \
    --train-tokens 1e10 --out "$tmp/job" >/dev/null 2>&1
p=$(field "$tmp/job.out" J1 predicted)
c=$(csv_cell "$tmp/job/cost.csv" train_usd metric=usd_per_mtok_train)
check "predict and compare price the 10B-token 8B job alike (predict \$$p, compare \$$c)" \
    perl -e 'exit !($ARGV[0] > 0 && abs($ARGV[0] - $ARGV[1]) < 1e-4 * $ARGV[1])' "$p" "$c"
check "MLPerf's evaluations only with scenario training ($(field "$tmp/job.out" J2 predicted) s < $(field "$tmp/job.out" J3 predicted) s)" \
    sh -c 'echo "$0" | grep -q "time_to_train without evaluations" && echo "$1" | grep -q "time_to_train adds [0-9]* evaluations (MLPerf" &&
           perl -e "exit !(\$ARGV[0] < \$ARGV[1])" "$2" "$3"' \
    "$(field "$tmp/job.out" J2 assumptions)" "$(field "$tmp/job.out" J3 assumptions)" \
    "$(field "$tmp/job.out" J2 predicted)" "$(field "$tmp/job.out" J3 predicted)"
"$TB_BIN" predict --pricing capacity-block --region us-east-2 --scenarios "$tmp/job.csv" >"$tmp/jobcb.out" 2>/dev/null
s=$(field "$tmp/jobcb.out" J2 predicted)
check "at capacity-block: the whole days bought, paid up front ($(field "$tmp/jobcb.out" J1 predicted) for $s s)" \
    perl -MPOSIX=ceil -e 'my ($u, $s) = @ARGV; my $d = ceil($s / 86400); $d = 7 * ceil($d / 7) if $d > 14;
                          exit !(abs($u - $d * 24 * 41.528) < 1e-4 * $u)' "$(field "$tmp/jobcb.out" J1 predicted)" "$s"

# strong scaling at a fixed global batch: 64 sequences of 8192 on p5 (H100), tp1 pp1 dp64,
# the rest of the chips context parallel. The data-parallel all-reduce is the same ~119 ms
# at 256 and 512 chips (the shard is the whole model); at 512 a device's one micro-batch
# of 1024 tokens is a ~30 ms forward and a ~60 ms backward, which hide the all-gather and
# the reduce-scatter only up to their length (issue 33 point 2): the step falls by at
# most 28% from 256 to 512 chips (by 33% before, the overlap hid 80% of it regardless)
printf 'id,target,chips,model,phase,precision,seq_in,batch,tp,pp,dp,metric,unit\nK256,p5.48xlarge,256,llama-3.1-8b,train,fp8,8192,64,1,1,64,step_time_s,s\nK512,p5.48xlarge,512,llama-3.1-8b,train,fp8,8192,64,1,1,64,step_time_s,s\nK32,p5.48xlarge,32,llama-3.1-8b,train,fp8,8192,64,1,1,32,step_time_s,s\n' >"$tmp/strong.csv"
"$TB_BIN" predict --scenarios "$tmp/strong.csv" >"$tmp/strong.out" 2>/dev/null
a=$(field "$tmp/strong.out" K256 predicted)
b=$(field "$tmp/strong.out" K512 predicted)
check "8B at 64 sequences: 512 chips' step at least 0.72 of 256 chips' ($b s, $a s)" \
    perl -e 'exit !($ARGV[0] > 0 && $ARGV[1] >= 0.72 * $ARGV[0])' "$a" "$b"
# two micro-batches a step (32 chips, no context parallelism): the window is a full
# micro-batch of 8192 tokens, which hides dp_overlap of the all-reduce as before
v=$(field "$tmp/strong.out" K32 predicted)
check "with full micro-batches the step is compute and hidden all-reduce ($v s)" \
    sh -c 'echo "$0" | grep -q "cp=1 (given)" && perl -e "exit !(\$ARGV[0] > 1 && \$ARGV[0] < 3)" "$1"' \
    "$(field "$tmp/strong.out" K32 assumptions)" "$v"

