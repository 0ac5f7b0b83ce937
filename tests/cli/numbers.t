#!/bin/sh
# tests/cli/numbers.t: absurd numbers refused where they are read (issue 19). A layout
# whose tp x pp x dp overflows a long (it divided by the wrapped 0: SIGFPE, exit 136)
# in predict, validate and a suite's predict line; assess at 1e18 requests/s; suite
# predict lines with instances=1e30 or batch=1e9 (accepted, then refused by the model
# with exit 0 and nothing recorded); modeled run ids past 255 characters (cut ids
# collided); validate on NaN, inf and negative measured values (silently left out).
# Every refusal: exit 2, the file, the line and the field named, nothing written.

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_numbers"
rm -rf "$tmp" && mkdir -p "$tmp"

# has FILE TEXT: FILE holds TEXT (fixed string)
has() { grep -qF -- "$2" "$1"; }

echo "1..30"

# ---- item 1: tp x pp x dp past a long ----
hdr='id,target,instances,chips,model,phase,precision,seq_in,seq_out,batch,tp,pp,dp,metric,value'
{
    echo "$hdr"
    echo 'x,p5.48xlarge,1,8,llama-3.1-8b,train,bf16,4096,,8,1099511627776,1,16777216,train_tokens_per_s,'
    echo 'y,p5.48xlarge,1,8,llama-3.1-8b,train,bf16,4096,,8,65536,65536,1048576,train_tokens_per_s,'
} >"$tmp/fpe.csv"
"$TB_BIN" predict --scenarios "$tmp/fpe.csv" >"$tmp/fpe.out" 2>"$tmp/fpe.err"
check "predict: tp=2^40 dp=2^24 exits 0, no SIGFPE (exit $?)" test $? -eq 0
check "predict: the row's why names tp and its range" \
    test "$(csv_cell "$tmp/fpe.out" why id=x)" = "field 'tp': expected an integer in [1, 65536] (devices), got '1099511627776'"
check "predict: the largest layout the ranges allow is refused by the model, not divided by 0" \
    test "$(csv_cell "$tmp/fpe.out" why id=y)" = "tp x pp x dp over 8 chips gives 562949953421312 devices per chip"
sed 's/train_tokens_per_s,$/train_tokens_per_s,1000/' "$tmp/fpe.csv" >"$tmp/fpev.csv"
"$TB_BIN" validate "$tmp/fpev.csv" >"$tmp/fpev.out" 2>&1
check "validate: the same rows exit 1 (targets missed, nothing predicted), no SIGFPE (exit $?)" \
    test $? -eq 1
printf 'suite fpe\npredict target=p5.48xlarge model=llama-3.1-8b phase=train seq_in=4096 batch=8 tp=1099511627776 pp=1 dp=16777216 precision=bf16\n' >"$tmp/fpe.suite"
"$TB_BIN" run --suite "$tmp/fpe.suite" --out "$tmp/fpe_run" >/dev/null 2>"$tmp/fpe_run.err"
check "run --suite: the line is refused with exit 2 (exit $?)" test $? -eq 2
check "run --suite: file, line and field named" \
    has "$tmp/fpe_run.err" "fpe.suite: line 2: field 'tp': expected an integer in [1, 65536] (devices), got '1099511627776'"
check "run --suite: no results written" test ! -e "$tmp/fpe_run/results.csv"

# ---- item 3: assess at 1e18 requests/s ----
sed 's/,12,2048,/,1e18,2048,/' "$TB_SRCDIR/reports/examples/assess-chat.csv" >"$tmp/a18.csv"
"$TB_BIN" assess "$tmp/a18.csv" --out "$tmp/a18" >/dev/null 2>"$tmp/a18.err"
check "assess: requests_per_s=1e18 exits 2 (exit $?)" test $? -eq 2
check "assess: the file, line and field are named" \
    has "$tmp/a18.err" "a18.csv: line 2: field 'requests_per_s': expected a number in [0, 1e9] (requests/s), got '1e18'"
check "assess: nothing written" test ! -e "$tmp/a18/assessment.csv"

sed 's/,12,2048,512,/,12,100000000000000000,512,/' "$TB_SRCDIR/reports/examples/assess-chat.csv" >"$tmp/aseq.csv"
"$TB_BIN" assess "$tmp/aseq.csv" --out "$tmp/aseq" >/dev/null 2>"$tmp/aseq.err"
rc=$?
check "assess: seq_in=1e17 tokens exits 2, no assessment (was sized: 3.8e12 GiB per device) (exit $rc)" \
    sh -c "test $rc -eq 2 && test ! -e '$tmp/aseq/assessment.csv'"
check "assess: the file, line, field and range are named" \
    has "$tmp/aseq.err" "aseq.csv: line 2: field 'seq_in': expected an integer in [1, 16777216] (tokens), got '100000000000000000'"

# ---- item 6: suite predict lines the model would refuse ----
for bad in instances=1e30 batch=1e9 instances=100001 seq_in=0; do
    case $bad in batch=*) line="seq_in=4096 $bad" ;; seq_in=*) line="$bad batch=8" ;;
        *) line="seq_in=4096 batch=8 $bad" ;; esac
    printf 'suite big\n# a comment\npredict target=p5.48xlarge model=llama-3.1-8b phase=train %s precision=bf16\n' "$line" >"$tmp/big.suite"
    rm -rf "$tmp/big"
    "$TB_BIN" run --suite "$tmp/big.suite" --out "$tmp/big" >/dev/null 2>"$tmp/big.err"
    rc=$?
    check "suite predict line with $bad: exit 2, line 3 and the field named (exit $rc)" \
        sh -c "test $rc -eq 2 && grep -qF \"big.suite: line 3: field '${bad%%=*}': expected an integer in [\" '$tmp/big.err' && test ! -e '$tmp/big/results.csv'"
done
printf 'suite lora\npredict target=p5.48xlarge model=llama-3.1-8b phase=serve seq_in=4096 batch=8 precision=bf16\n' >"$tmp/noout.suite"
"$TB_BIN" run --suite "$tmp/noout.suite" --out "$tmp/noout" >/dev/null 2>"$tmp/noout.err"
rc=$?
check "suite predict line the model cannot take (serve without seq_out): exit 2 at load, line named (exit $rc)" \
    sh -c "test $rc -eq 2 && grep -qF 'noout.suite: line 2: seq_out missing' '$tmp/noout.err'"

# ---- item 15: modeled run ids past 255 characters ----
z=0000000000000000000000000000000000000000000000000000000
printf 'suite long\npredict target=p5.48xlarge model=llama-3.1-8b phase=serve seq_in=%s2048 seq_out=%s128 batch=%s8 instances=%s1 precision=bf16\npredict target=p5.48xlarge model=llama-3.1-8b phase=serve seq_in=%s2048 seq_out=%s128 batch=%s8 instances=%s2 precision=bf16\n' \
    $z $z $z $z $z $z $z $z >"$tmp/long.suite"
"$TB_BIN" run --suite "$tmp/long.suite" --out "$tmp/long" >/dev/null 2>"$tmp/long.err"
check "two predict lines differing past 255 characters both run (exit $?)" test $? -eq 0
check "and get two run ids" \
    test "$(cut -d, -f1 "$tmp/long/results.csv" | sed 1d | sort -u | wc -l)" -eq 2
check "the ids are written in digits as read" \
    has "$tmp/long/results.csv" "model:p5.48xlarge/llama-3.1-8b/serve/b8/in2048/out128/bf16/x2"

# ---- validate: NaN, inf, negative measured values ----
for v in nan inf -5 0; do
    {
        echo 'id,target,instances,chips,model,phase,precision,seq_in,seq_out,batch,tp,metric,value'
        echo 'a,p5.48xlarge,1,1,llama-3.1-8b,decode,bf16,128,128,1,1,tpot_ms,7.5'
        echo "b,p5.48xlarge,1,1,llama-3.1-8b,decode,bf16,128,128,1,1,tpot_ms,$v"
    } >"$tmp/val.csv"
    "$TB_BIN" validate "$tmp/val.csv" >"$tmp/val.out" 2>"$tmp/val.err"
    rc=$?
    check "validate: a measured value of $v exits 2 naming file, line 3, field value (exit $rc)" \
        sh -c "test $rc -eq 2 && grep -qF \"val.csv: line 3: field 'value': expected a number in [\" '$tmp/val.err'"
done

# ---- model files: problems the engine found at run time (exit 1) refused at load ----
for kv in "rope_theta = 1" "rope_scale_factor = 32"; do
    grep -v "^${kv%% *} " "$TB_SRCDIR/workloads/llama/llama-tiny.model" | sed 's/^name .*/name = broken/' >"$tmp/broken.model"
    echo "$kv" >>"$tmp/broken.model"
    rm -rf "$tmp/mrun"
    "$TB_BIN" run --model "$tmp/broken.model" --phase prefill --seq-in 8 --reps 1 --warmup 0 \
        --out "$tmp/mrun" >/dev/null 2>"$tmp/mrun.err"
    rc=$?
    check "model file with $kv: exit 2 at load (exit $rc)" \
        sh -c "test $rc -eq 2 && test ! -e '$tmp/mrun/results.csv'"
    case $kv in rope_theta*) want="broken.model: line 15: field 'rope_theta': expected a number in [2, 1e12]" ;;
        *) want="broken.model: field 'rope_original_context': rope_scale_factor 32 needs" ;; esac
    check "model file with $kv: the file and field named" has "$tmp/mrun.err" "$want"
done

# ---- the model's tables: a storage figure that is not a number was read at prediction as
# "no published figure"; now refused when the model loads ----
rm -rf "$tmp/prices" && cp -r "$TB_SRCDIR/pricing" "$tmp/prices"
awk -F, 'BEGIN { OFS = "," } NR == 3 { $3 = "fast" } { print }' "$TB_SRCDIR/pricing/storage.csv" >"$tmp/prices/storage.csv"
"$TB_BIN" predict --prices "$tmp/prices" --scenarios "$TB_SRCDIR/tests/data/scenarios.csv" >"$tmp/st.out" 2>"$tmp/st.err"
rc=$?
check "storage.csv with a bad read_mb_per_s: exit 2 when the model loads (exit $rc)" test $rc -eq 2
check "storage.csv: the file, line and field named" \
    has "$tmp/st.err" "storage.csv: line 3: field 'read_mb_per_s': expected a number in [1, 1e9] (MB/s from storage to the host), got 'fast'"
