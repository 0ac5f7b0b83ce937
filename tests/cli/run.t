#!/bin/sh
# tests/cli/run.t: `trnbench run` end to end on the smoke suite: the results file has the
# right header and rows, a second run resumes without repeating, bad input exits 2 and
# writes nothing.
set -u
bin=${TB_BIN:-build/bin/trnbench}
tmp=${TB_BUILDDIR:-build}/tests/tmp/cli-run
rm -rf "$tmp" && mkdir -p "$tmp"
n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
is() { n=$((n + 1)); if [ "$1" = "$2" ]; then echo "ok $n - $3"; else echo "not ok $n - $3"; echo "# wanted '$1', got '$2'" >&2; fi; }
echo "1..19"

"$bin" run --suite smoke --out "$tmp/a" >"$tmp/out1" 2>"$tmp/err1"
is 0 $? "smoke suite runs"
head -n 1 "$tmp/a/results.csv" >"$tmp/header"
is "run_id,provenance,target,host,executor,model,layers,phase,precision,batch,seq_in,seq_out,metric,value,unit,n,warmup,min,max,mean,stddev,flops,timestamp,commit,compiler,cflags,blas,counters,source,notes" \
   "$(cat "$tmp/header")" "header is the results.csv contract"
# prefill 3 metrics + decode 4 + train 4 = 11 rows
is 11 "$(($(wc -l <"$tmp/a/results.csv") - 1))" "one row per metric"
is 11 "$(grep -c ',measured,' "$tmp/a/results.csv")" "every row is measured"
for m in ttft_ms prefill_tokens_per_s tpot_ms decode_tokens_per_s step_time_s train_tokens_per_s; do
    grep -q ",$m," "$tmp/a/results.csv"; ok $? "metric $m present"
done
# the values are real: decode tokens/s = batch / tpot
t=$(sed -n 's/.*,tpot_ms,\([^,]*\),ms,.*/\1/p' "$tmp/a/results.csv")
r=$(sed -n 's/.*,decode_tokens_per_s,\([^,]*\),tokens\/s,.*/\1/p' "$tmp/a/results.csv")
awk -v t="$t" -v r="$r" 'BEGIN { e = 2000 / t; d = (r - e) / e; if (d < 0) d = -d; exit !(t > 0 && d < 0.01) }'
ok $? "decode_tokens_per_s equals batch / tpot"
grep -q 'counters: ' "$tmp/out1"; ok $? "counter status printed"

cp "$tmp/a/results.csv" "$tmp/before"
"$bin" run --suite smoke --out "$tmp/a" >"$tmp/out2" 2>&1
is 0 $? "rerun succeeds"
is 3 "$(grep -c 'skipped' "$tmp/out2" | tr -d ' ')" "every finished run is skipped on rerun"
cmp -s "$tmp/before" "$tmp/a/results.csv"; ok $? "rerun leaves results unchanged (nothing duplicated)"

"$bin" run --model llama-tiny --phase prefill --seq-in 8 --reps 0 --out "$tmp/b" >/dev/null 2>"$tmp/err3"
is 2 $? "reps=0 is a usage error"
grep -q "field 'reps'" "$tmp/err3"; ok $? "message names the field"
[ ! -e "$tmp/b/results.csv" ]; ok $? "nothing written on bad input"
printf 'suite bad\nrun model=llama-tiny phase=prefill seq_in=8\nrun model=nosuch phase=prefill seq_in=8\n' >"$tmp/bad.suite"
"$bin" run --suite "$tmp/bad.suite" --out "$tmp/c" >/dev/null 2>"$tmp/err4"
rc=$?
[ "$rc" = 2 ] && grep -q "bad.suite: line 3: field 'model'" "$tmp/err4" && [ ! -e "$tmp/c/results.csv" ]
ok $? "unknown model in a suite: exit 2, file, line and field, nothing run"
