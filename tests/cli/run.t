#!/bin/sh
# tests/cli/run.t: `trnbench run` end to end: the smoke suite into a fresh folder (exit
# status, header, one row per metric, values consistent with each other), resume after
# an interruption (no run lost, none repeated), one workload from options with a
# shortened model, and bad input (exit 2, file, line and field, nothing written).
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_run"
# the CPU executor only, so the row counts hold on a GPU machine too (the GPU executor
# has its own tests in tests/unit/gpu.c)
export TRNBENCH_CUDA=0
rm -rf "$tmp" && mkdir -p "$tmp"

# A CSV-aware reader (perl, RFC 4180 quotes): the host column holds commas.
csv_pl='
    sub row { my @o; my $s = shift; chomp $s;
        while (length $s) { if ($s =~ s/^"((?:[^"]|"")*)"(,|$)//) { (my $x = $1) =~ s/""/"/g; push @o, $x }
                            elsif ($s =~ s/^([^,]*)(,|$)//) { push @o, $1 } else { last } }
        return @o }
    open my $f, "<", shift @ARGV or die; my @h = row(scalar <$f>); my %c; @c{@h} = 0 .. $#h;'
val() { # val FILE RUN_ID METRIC COLUMN: one cell
    perl -e "$csv_pl"'
        my ($id, $metric, $name) = @ARGV;
        while (<$f>) { my @r = row($_);
            if ($r[$c{run_id}] eq $id && $r[$c{metric}] eq $metric) { print $r[$c{$name}], "\n"; exit 0 } }
        exit 1' "$@"
}
keys() { # keys FILE: "run_id metric" of every row
    perl -e "$csv_pl"'while (<$f>) { my @r = row($_); print "$r[$c{run_id}] $r[$c{metric}]\n" }' "$1"
}

echo "1..47"

# ---- the smoke suite ----
out="$tmp/smoke"
"$TB_BIN" run --suite smoke --out "$out" 2>"$tmp/smoke.err"
check "smoke suite exits 0" test $? -eq 0
res="$out/results.csv"
check "results.csv header is the documented one" \
    test "$(head -1 "$res")" = "run_id,provenance,target,instances,host,executor,model,layers,phase,precision,batch,seq_in,seq_out,steps,resolution,metric,value,unit,n,warmup,min,max,mean,stddev,flops,timestamp,commit,compiler,cflags,blas,counters,source,notes,chips_used,workload,config,device,concurrency,request_rate,p90,p99,accelerators_unused,nodes,ranks,rank,node,slurm_job,ranks_per_node,link,bytes,engine"
# prefill: ttft_ms, prefill_tokens_per_s, gflop_per_s; decode: + tpot_ms, gbyte_per_s;
# train: step_time_s, train_tokens_per_s, gflop_per_s, loss; denoise (3 runs): s_per_image,
# images_per_s, gflop_per_s
check "20 metric rows (3 prefill + 4 decode + 4 train + 3 x 3 denoise)" \
    test "$(($(wc -l <"$res") - 1))" -eq 20
check "every row measured, executor cpu" \
    test "$(tail -n +2 "$res" | grep -c ',measured,')" -eq 20
target=$("$TB_BIN" detect --format csv | grep '^target,' | cut -d, -f2)
check "target is what detect says ($target)" \
    test "$(val "$res" llama-tiny/prefill/b2/in32/fp32 ttft_ms target)" = "$target"
pid=llama-tiny/prefill/b2/in32/fp32
ttft=$(val "$res" $pid ttft_ms value)
tps=$(val "$res" $pid prefill_tokens_per_s value)
gfs=$(val "$res" $pid gflop_per_s value)
flops=$(val "$res" $pid gflop_per_s flops)
# 3 repetitions: the median repetition is the same one for every metric, so
# tokens/s = 64 tokens / TTFT and GFLOP/s = flops / TTFT (to the 6 digits written)
check "prefill tokens/s = 64 / ttft ($tps vs $ttft ms)" \
    perl -e 'exit !(abs($ARGV[0] - 64 / ($ARGV[1] / 1e3)) <= 1e-4 * $ARGV[0])' "$tps" "$ttft"
check "prefill GFLOP/s = flops / ttft ($gfs)" \
    perl -e 'exit !($ARGV[2] > 0 && abs($ARGV[0] - $ARGV[2] / ($ARGV[1] / 1e3) / 1e9) <= 1e-4 * $ARGV[0])' \
    "$gfs" "$ttft" "$flops"
did=llama-tiny/decode/b2/in32/out8/fp32
tpot=$(val "$res" $did tpot_ms value)
dtps=$(val "$res" $did decode_tokens_per_s value)
check "decode tokens/s = batch 2 / tpot ($dtps vs $tpot ms)" \
    perl -e 'exit !(abs($ARGV[0] - 2 / ($ARGV[1] / 1e3)) <= 1e-4 * $ARGV[0])' "$dtps" "$tpot"
check "min <= median <= max for tpot" \
    perl -e 'exit !($ARGV[1] <= $ARGV[0] && $ARGV[0] <= $ARGV[2])' "$tpot" \
    "$(val "$res" $did tpot_ms min)" "$(val "$res" $did tpot_ms max)"
val "$res" $pid ttft_ms counters >"$tmp/counters"
loss=$(val "$res" llama-tiny/train/b2/in32/fp32 loss value)
check "training loss recorded and below ln 256 = 5.545 after 4 steps ($loss)" \
    perl -e 'exit !($ARGV[0] > 0 && $ARGV[0] < 5.545)' "$loss"
nid=sd3-tiny/denoise/b2/rdefault/s2/fp32
spi=$(val "$res" $nid s_per_image value)
ips=$(val "$res" $nid images_per_s value)
check "denoise: 2 images per generation, images/s = 2 / s_per_image ($ips vs $spi s)" \
    perl -e 'exit !($ARGV[1] > 0 && abs($ARGV[0] - 2 / $ARGV[1]) <= 1e-4 * $ARGV[0])' "$ips" "$spi"
check "denoise rows carry steps and resolution (2 steps, 64 px)" \
    test "$(val "$res" $nid s_per_image steps),$(val "$res" $nid s_per_image resolution)" = "2,64"
check "CPU rows leave chips_used empty: they are charged the whole target" \
    test "$(val "$res" $did tpot_ms chips_used)" = ""
check "every row is charged whole instances (instances 1)" \
    test "$(val "$res" $did tpot_ms instances)" = "1"
check "n and warmup recorded" test "$(val "$res" $did tpot_ms n),$(val "$res" $did tpot_ms warmup)" = "3,1"
check "counters recorded, or why not" \
    grep -Eq '^(unavailable: .+|PAPI_[A-Z_]+=[0-9]+.*)$' "$tmp/counters"

# ---- resume: keep the prefill rows only, as if the suite died after its first run ----
part="$tmp/part"
mkdir -p "$part"
grep -v -e '/decode/' -e '/train/' "$res" >"$part/results.csv"
before=$(grep '/prefill/' "$part/results.csv")
"$TB_BIN" run --suite smoke --out "$part" 2>"$tmp/part.err"
check "resumed suite exits 0" test $? -eq 0
check "it skipped the finished run" grep -q 'prefill/b2/in32/fp32: already in results, skipped' "$tmp/part.err"
check "20 rows again, none repeated" \
    test "$(keys "$part/results.csv" | sort -u | wc -l)" -eq 20 -a \
         "$(($(wc -l <"$part/results.csv") - 1))" -eq 20
check "the finished rows are kept as they were" test "$(grep '/prefill/' "$part/results.csv")" = "$before"
"$TB_BIN" run --suite smoke --out "$part" 2>/dev/null
check "a finished suite run again adds nothing" test "$(($(wc -l <"$part/results.csv") - 1))" -eq 20

# ---- one workload from options, shortened ----
one="$tmp/one"
"$TB_BIN" run --model llama-small --layers 2 --phase decode --seq-in 16 --seq-out 4 --batch 2 \
    --reps 2 --warmup 0 --out "$one" 2>/dev/null
check "a workload from options runs" test $? -eq 0
check "the shortened model is named llama-small@L2 with 2 layers" \
    test "$(val "$one/results.csv" llama-small@L2/decode/b2/in16/out4/fp32 tpot_ms model),$(val "$one/results.csv" llama-small@L2/decode/b2/in16/out4/fp32 tpot_ms layers)" = "llama-small@L2,2"

# ---- precision fp8: the GPU's alone; the CPU skips it with the reason ----
prec="$tmp/prec.suite"
printf 'run model=llama-tiny phase=prefill seq_in=8 reps=1 warmup=0 precision=fp32,fp8\n' >"$prec"
"$TB_BIN" run --suite "$prec" --out "$tmp/prec" 2>"$tmp/prec.err"
check "a suite with fp8 runs exits 0 on the CPU" test $? -eq 0
check "the fp8 run is skipped with the reason" \
    grep -q 'llama-tiny/prefill/b1/in8/fp8: not run on the CPU: precision fp8: the CPU engine computes in fp32 only' "$tmp/prec.err"
check "only the fp32 run's rows are written" \
    test "$(keys "$tmp/prec/results.csv" | cut -d' ' -f1 | sort -u)" = "llama-tiny/prefill/b1/in8/fp32"

# ---- bad input: exit 2, file, line and field, nothing written ----
bad="$tmp/bad.suite"
printf 'suite bad\nrun model=llama-tiny phase=prefill seq_in=8\nrun model=llama-tiny phase=train seq_in=8 reps=x\n' >"$bad"
"$TB_BIN" run --suite "$bad" --out "$tmp/bad" 2>"$tmp/bad.err"
check "a bad suite exits 2" test $? -eq 2
check "naming file, line and field" grep -q "bad.suite: line 3: field 'reps'" "$tmp/bad.err"
check "and nothing is written, not even the first good run" test ! -e "$tmp/bad"
printf 'run model=llama-nope phase=prefill seq_in=8\n' >"$bad"
"$TB_BIN" run --suite "$bad" --out "$tmp/bad" 2>"$tmp/bad.err"
check "an unknown model exits 2 with file, line and field" \
    sh -c "test $? -eq 2 && grep -q \"bad.suite: line 1: field 'model': unknown model 'llama-nope'\" '$tmp/bad.err'"
"$TB_BIN" run --model llama-tiny --phase decode --seq-in 4000 --seq-out 200 --out "$tmp/bad" 2>"$tmp/bad.err"
check "a shape beyond the model's context exits 2" \
    sh -c "test $? -eq 2 && grep -q \"command line: field 'seq_out': 4200 tokens exceed llama-tiny's context\" '$tmp/bad.err' && test ! -e '$tmp/bad'"
# a corrupt results file is refused before anything runs, and left as it was
mkdir -p "$tmp/corrupt" && printf 'run_id,value\nx,1\n' >"$tmp/corrupt/results.csv"
"$TB_BIN" run --suite smoke --out "$tmp/corrupt" 2>"$tmp/corrupt.err"
check "a foreign results.csv in --out exits 2 and is left alone" \
    sh -c "test $? -eq 2 && test \"\$(cat '$tmp/corrupt/results.csv')\" = \"\$(printf 'run_id,value\nx,1')\""

# ---- the executor choice ----
"$TB_BIN" run --model llama-tiny --phase prefill --seq-in 8 --executor gpu --out "$tmp/ex" 2>"$tmp/ex.err"
check "an unknown --executor exits 2" \
    sh -c "test $? -eq 2 && grep -q \"option '--executor': 'gpu' is not cpu, cuda, pytorch or all\" '$tmp/ex.err'"
"$TB_BIN" run --model llama-tiny --phase prefill --seq-in 8 --reps 1 --out "$tmp/ex" 2>"$tmp/ex.err"
check "without a GPU the CPU runs and one line says why" \
    sh -c "test $? -eq 0 && grep -q 'GPU executor not used: disabled (TRNBENCH_CUDA=0)' '$tmp/ex.err'"
"$TB_BIN" run --model llama-tiny --phase prefill --seq-in 8 --executor cuda --out "$tmp/ex2" 2>"$tmp/ex.err"
check "--executor cuda without a GPU fails (exit 1) and writes nothing, not even the folder" \
    sh -c "test $? -eq 1 && grep -q 'executor cuda: no GPU' '$tmp/ex.err' && test ! -e '$tmp/ex2'"

# ---- options: --opt=value is --opt value (getopt_long) ----
"$TB_BIN" run --model=llama-tiny --phase=prefill --seq-in=8 --reps=1 --warmup=0 --executor=cpu \
    --out="$tmp/eq" 2>"$tmp/eq.err"
check "--opt=value runs like --opt value (exit 0)" test $? -eq 0
check "the = form's run id carries every value (llama-tiny/prefill/b1/in8/fp32)" \
    grep -q '^llama-tiny/prefill/b1/in8/fp32,' "$tmp/eq/results.csv"
"$TB_BIN" run --suite=smoke --suite-typo x 2>"$tmp/eq.err"
check "an unknown option exits 2 and is named" \
    sh -c "test $? -eq 2 && grep -q \"unknown option '--suite-typo'\" '$tmp/eq.err'"
"$TB_BIN" run --model llama-tiny --phase prefill --seq-in 2>"$tmp/eq.err"
check "an option without its value exits 2 and says so" \
    sh -c "test $? -eq 2 && grep -q \"option '--seq-in' needs a value\" '$tmp/eq.err'"

# ---- progress and counts: a suite of each kind of measurement ----
cat >"$tmp/progress.suite" <<'EOF'
suite progress
description progress lines and counts that add up
run model=llama-tiny phase=prefill batch=1 seq_in=8 reps=2 warmup=1 precision=fp32,fp8
run model=llama-small phase=train batch=2 seq_in=64 reps=6 warmup=1
serve model=llama-tiny endpoint=self seq_in=8 seq_out=4 concurrency=1,2 requests=4
predict target=p5.48xlarge model=llama-3.1-8b phase=serve seq_in=2048 seq_out=512 batch=1 precision=bf16
predict target=inf2.xlarge model=llama-3.1-70b phase=serve seq_in=2048 seq_out=512 batch=1 precision=bf16
EOF
pr="$tmp/progress"
"$TB_BIN" run --suite "$tmp/progress.suite" --out "$pr" --progress 0.1 >"$pr.out" 2>"$pr.err"
check "a suite with --progress 0.1 exits 0 and writes nothing on stdout" \
    sh -c "test $? -eq 0 && test ! -s '$pr.out'"
check "the plan counted: 5 measurements (3 on the CPU, 2 serving levels), 2 predictions, 7 in all" \
    grep -q '^trnbench run: plan: 5 measurements (3 on the CPU, 2 serving levels) and 2 predictions, 7 in all' "$pr.err"
# "[k/5]" opens exactly one line each: a run, its skip, or a serving level
tags=$(perl -ne 'print "$1 " if m{^trnbench run: \[(\d+)/5\] \S+( \(.*\))? \.\.\.$} || m{^trnbench run: \[(\d+)/5\] \S+: not run }' "$pr.err")
check "[1/5] to [5/5] open one measurement each, in order ($tags)" test "$tags" = "1 2 3 4 5 "
check "the serving levels are [4/5] and [5/5]" \
    sh -c "grep -q '^trnbench run: \[4/5\] endpoint:llama-tiny/serve/c1/' '$pr.err' && grep -q '^trnbench run: \[5/5\] endpoint:llama-tiny/serve/c2/' '$pr.err'"
check "the training run says its repetition, time elapsed and an estimate while it runs" \
    grep -Eq '^trnbench run: \[3/5\] llama-small/train/b2/in64/fp32: timed rep [1-6]/6, [0-9.]+ s elapsed, about [0-9.]+ s left; suite [0-9.]+ s in$' "$pr.err"
check "the end: 4 measured, 1 modeled, 1 not for the CPU, 1 not predicted, of 7 planned" \
    grep -q '^trnbench run: done in .*: of 7 planned, 4 runs measured, 1 modeled, 0 already there, 0 failed, 1 not for an executor here (.*), 1 not predicted (reasons above); ' "$pr.err"
# sum_end FILE: the counts of the last "done in" line add up to its planned total
sum_end() {
    perl -ne 'if (/^trnbench run: done in .*?: of (\d+) planned, (.*); results in /) {
                  ($p, $t, $c) = ($1, 0, $2); $t += $1 while $c =~ /(?:^|, )(\d+) /g }
              END { exit !(defined $p && $p == $t) }' "$1"
}
check "  and they add up" sum_end "$pr.err"
"$TB_BIN" run --suite "$tmp/progress.suite" --out "$pr" --progress 0 2>"$pr.again"
check "again: the 5 recorded already there, one line each, 7 planned, no progress lines" \
    sh -c "grep -q ': of 7 planned, 0 runs measured, 0 modeled, 5 already there, 0 failed, 1 not for an executor here' '$pr.again' && ! grep -q 'elapsed' '$pr.again' && test \"\$(grep -c 'already in results, skipped' '$pr.again')\" -eq 4"
