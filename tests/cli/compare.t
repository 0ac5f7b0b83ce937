#!/bin/sh
# tests/cli/compare.t: `trnbench compare` end to end. The acceptance question (Llama
# 3.1 70B serving, 2048 in / 512 out, on trn2, p5 and p5en at capacity-block prices in
# us-east-2): the files, every row modeled over the default suite's batch sweep, every
# price the one asked for, the summary's cheapest and baseline costs equal to
# cost.csv's; training and a diffusion model likewise; a measured row added with
# --results keeps its provenance and is priced; bad input exits 2 with nothing
# written; a rerun into the same folder replaces the report. "--opt=value" works too.

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_compare"
rm -rf "$tmp" && mkdir -p "$tmp"
acc="--model llama-3.1-70b --phase serve --seq-in 2048 --seq-out 512 --targets trn2.48xlarge,p5.48xlarge,p5en.48xlarge --pricing capacity-block --region us-east-2"

# costs FILE KEY=VALUE... COLUMN: the values of COLUMN in cost.csv's rows matching
# every KEY=VALUE, one a line (RFC 4180 quotes: Text::ParseWords)
costs() {
    perl -MText::ParseWords -e '
        my $file = shift; my $col = pop; my @want = @ARGV; open my $f, "<", $file or die;
        my @h = parse_line(",", 0, scalar <$f>); chomp $h[-1]; my %c; @c{@h} = 0 .. $#h;
        die "no column $col\n" unless defined $c{$col};
        ROW: while (<$f>) { chomp; my @r = parse_line(",", 0, $_);
            for (@want) { my ($k, $v) = split /=/, $_, 2; next ROW unless $r[$c{$k}] eq $v }
            print "$r[$c{$col}]\n" }' "$@"
}
# the smallest number on standard input
least() { sort -g | head -1; }

echo "1..52"

# ---- the acceptance command ----
out="$tmp/serve"
# shellcheck disable=SC2086
"$TB_BIN" compare $acc --out "$out" >"$tmp/serve.out" 2>"$tmp/serve.err"
check "the acceptance command exits 0" test $? -eq 0
check "results.csv, report.md, report.html and cost.csv are written" \
    test -s "$out/results.csv" -a -s "$out/report.md" -a -s "$out/report.html" -a -s "$out/cost.csv"
check "no scratch folder is left behind" sh -c "! ls -a '$out' | grep -q '^\.compare'"
# 3 targets x 6 batches (1,4,16,64,256,max), each a modeled run
runs=$(perl -MText::ParseWords -ne 'next if $. == 1; my @r = parse_line(",", 0, $_);
    $id{$r[0]} = 1; $p{$r[1]} = 1; END { print scalar(keys %id), " ", join(",", sort keys %p), "\n" }' "$out/results.csv")
check "18 runs in results.csv, every one modeled ($runs)" test "$runs" = "18 modeled"
n=$(costs "$out/cost.csv" metric=usd_per_mtok_out target | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
check "cost.csv: 6 output-token costs each for p5, p5en and trn2 ($n)" \
    test "$n" = "p5.48xlarge:6 p5en.48xlarge:6 trn2.48xlarge:6 "
where=$(costs "$out/cost.csv" metric=usd_per_mtok_out price_region | sort -u)
how=$(costs "$out/cost.csv" metric=usd_per_mtok_out price_purchase | sort -u)
check "every row priced in us-east-2 at capacity-block ($where, $how)" \
    test "$where/$how" = "us-east-2/capacity-block"
trn2=$(costs "$out/cost.csv" target=trn2.48xlarge metric=usd_per_mtok_out meets_latency_limits=yes usd_per_mtok | least)
p5=$(costs "$out/cost.csv" target=p5.48xlarge metric=usd_per_mtok_out meets_latency_limits=yes usd_per_mtok | least)
check "trn2.48xlarge and p5.48xlarge have priced rows ($trn2, $p5 USD/Mtok)" \
    perl -e 'exit !($ARGV[0] > 0 && $ARGV[1] > 0)' "$trn2" "$p5"
# the summary's sentence: the cheapest target, its cost (4 significant digits) and its
# price-performance against the baseline (2 decimals)
check "the ranges are the model's held-out errors, said so, and cost.csv names their basis" \
    sh -c "grep -q 'held out: each source.s rows predicted with the figures chosen without them' '$out/report.md' &&
           grep -q 'p90 of [0-9]* H100 SXM5 serve rows (held out, one source at a time)' '$out/cost.csv'"
row=$(grep '^- `llama-3.1-70b/serve/in2048/out512/bf16` (USD per 1M output tokens, within latency limits): cheapest' "$out/report.md")
# the cheapest of the three within the latency limits, from cost.csv
cheap=$(for t in p5.48xlarge p5en.48xlarge trn2.48xlarge; do
    printf '%s %s\n' "$(costs "$out/cost.csv" target=$t metric=usd_per_mtok_out meets_latency_limits=yes usd_per_mtok | least)" "$t"
done | sort -g | head -1)
check "the summary names cost.csv's cheapest within the latency limits against the p5 baseline at capacity-block us-east-2 ($cheap)" \
    perl -e 'my ($row, $report, $c) = @ARGV; my ($usd, $t) = split / /, $c;
             open my $f, "<", $report or exit 1; local $/; my $r = <$f>;
             exit 1 unless $r =~ /Savings against p5.48xlarge capacity-block in us-east-2, like for like/;
             $row =~ /cheapest like for like `\Q$t\E` ([0-9.]+)/ or exit 1; exit !(abs($1 - $usd) < 5e-4 * $usd)' \
    -- "$row" "$out/report.md" "$cheap"
check "trn2's cost is cost.csv's cheapest within the latency limits and its price-performance p5's over it (trn2 $trn2, p5 $p5)" \
    perl -e 'my ($row, $t, $p) = @ARGV; $row =~ /`trn2.48xlarge` ([0-9.]+), against p5.48xlarge.s [0-9.]+ there: (?:saves [0-9]+%|costs [0-9]+% more) \(([0-9.]+)x/ or exit 1;
             exit !(abs($1 - $t) < 5e-4 * $t && $2 eq sprintf("%.2f", $p / $t))' -- "$row" "$trn2" "$p5"
check "and serving within latency limits is ranked from the batch sweep" \
    grep -q '^| llama-3.1-70b/serve/in2048/out512/bf16 | p5en.48xlarge | 6 | ' "$out/report.md"
if command -v gnuplot >/dev/null 2>&1; then
    check "the throughput-versus-interactivity chart is drawn" test -s "$out/interactivity-1.svg"
else
    check "# SKIP gnuplot is not installed" true
fi
# 132 rows: each run's seven serving metrics, and weight_load_s for the six p5.48xlarge
# runs (the one target with a published EBS figure in pricing/storage.csv)
check "and prints its answer, word for word the one the README quotes" \
    sh -c "grep '^    - llama-3.1-70b/serve/in2048/out512/bf16 ' '${TB_SRCDIR:-.}/README.md' | sed 's/^    //' > '$tmp/readme.quote' &&
           test -s '$tmp/readme.quote' && grep '^- llama-3.1-70b/serve' '$tmp/serve.out' | diff '$tmp/readme.quote' -"
check "where the range spans no saving, it names the measurement that would settle it and its cost" \
    perl -e 'open my $f, "<", $ARGV[0] or exit 1; local $/; my $r = <$f>;
             $r =~ /within the model.s error\)(?:; [^\n]*?)?\. The model alone cannot tell which is cheaper; a measurement would settle it: the same workload on one trn2\.48xlarge \(trnbench run --recipe vllm --model llama-3\.1-70b --seq-in 2048 --seq-out 512 [^)]*\), about 2 hours with the Neuron compile, about ([0-9.]+) USD at capacity-block in us-east-2\./ or exit 1;
             exit !(abs($1 - 2 * 35.7608) < 0.01)' "$tmp/serve.out"
check "it says what it did on standard output" \
    grep -q "^trnbench compare: llama-3.1-70b serve on trn2.48xlarge,p5.48xlarge,p5en.48xlarge: 18 modeled runs, 132 rows, 36 throughput rows priced (capacity-block, us-east-2)" "$tmp/serve.out"

# ---- one set of rules: every chart point is cost.csv's row the summary compares ----
# chart_check DIR: each bar of cost.tsv (and the serving bars of throughput.tsv) is,
# per target, the cheapest usd_per_mtok_out row of cost.csv (usd_per_mtok, else the
# comparison_cost at its nearest comparable price) among the rows within the latency
# limits when any row of the workload meets them; derived here from cost.csv alone
chart_check() {
    perl -MText::ParseWords -e '
        my $dir = shift; my (%want, %meets, @rows);
        open my $f, "<", "$dir/cost.csv" or die; my @h = parse_line(",", 0, scalar <$f>);
        chomp $h[-1];
        while (<$f>) { chomp; my %r; @r{@h} = parse_line(",", 0, $_);
            next unless $r{metric} eq "usd_per_mtok_out" && $r{led_by_measurement} eq "no" &&
                        $r{host_cpu_of_accelerator_instance} eq "no";
            $r{shown} = $r{usd_per_mtok} ne "" ? $r{usd_per_mtok} : $r{comparison_cost};
            next if $r{shown} eq "";
            push @rows, \%r; $meets{$r{workload}} ||= $r{meets_latency_limits} eq "yes" }
        for my $r (@rows) {
            next if $meets{$r->{workload}} && $r->{meets_latency_limits} ne "yes";
            my $k = "$r->{workload} $r->{target}";
            $want{$k} = $r if !$want{$k} || $r->{shown} < $want{$k}{shown} }
        my $n = 0;
        for my $chart ("cost", "throughput") {
            open my $t, "<", "$dir/$chart.tsv" or die "no $chart.tsv\n";
            while (<$t>) { chomp; my @b = parse_line("\t", 0, $_);
                my ($r) = grep { $_->{run_id} eq $b[7] } values %want;
                die "$chart: $b[7] is not the row the summary compares\n" unless $r;
                my $v = $chart eq "cost" ? $r->{shown} : $r->{tokens_per_s};
                die "$chart: $b[7]: $b[2] against cost.csv $v\n" if abs($b[2] - $v) > 1e-6 * $v;
                $n++ }
        }
        die "$n bars for ", scalar(keys %want), " targets\n" unless $n == 2 * keys %want;
        print "$n\n"' "$1"
}
n=$(chart_check "$out" 2>"$tmp/chart.err")
check "cost and throughput charts: one bar per target, cost.csv's row within the limits ($n bars; $(cat "$tmp/chart.err"))" \
    test "$n" = 6
"$TB_BIN" compare --model llama-3.1-70b --phase serve --seq-in 2048 --seq-out 512 \
    --targets trn2.48xlarge,p5.48xlarge,inf2.48xlarge,trn1.32xlarge --out "$tmp/od" >/dev/null 2>&1
n=$(chart_check "$tmp/od" 2>"$tmp/chart.err")
check "on-demand: the same, inf2 and trn1 within the limits, trn2 at its nearest price ($n bars; $(cat "$tmp/chart.err"))" \
    test "$n" = 8
check "on-demand: trn2 is shown at capacity-block in us-east-2 wherever p5 has a figure, never 'no price'" \
    perl -e 'open my $f, "<", $ARGV[0] or exit 1; local $/; my $r = <$f>;
             open my $t, "<", $ARGV[1] or exit 1; my $c = <$t>;
             exit !($r =~ /\| trn2\.48xlarge \| 6 \| 4 \| 408 \| [^|]+\| [^|]+\| [^|]+\| 1\.955[^|]*\\\* \| modeled, price \\\[1\\\] \\\* capacity-block in us-east-2 \|/ &&
                    $r !~ /^\|(?! Price of the host).*no price/m &&
                    $c =~ /trn2\.48xlarge, modeled, \* capacity-block in us-east-2/)' \
    "$tmp/od/report.md" "$tmp/od/cost.tsv"
check "on-demand: the purchase-model table says 'none listed' where trn2 has no price, never an empty cell" \
    grep -qF '| `trn2.48xlarge` | none listed | 35.7608 (us-east-2) | none listed | none listed | none listed | none listed | 14.5593 (us-east-2) |' "$tmp/od/report.md"
check "on-demand: the summary names the cheapest way to buy the baseline" \
    grep -q 'Bought otherwise, `p5.48xlarge` is cheapest as reserved-3y in us-east-1: 1.491; spot in us-east-1 1.303, interruptible.' "$tmp/od/report.md"

# the 8B job of 10B tokens at the default prices: trn2 has no on-demand price, so it is
# priced at capacity blocks (us-east-2), which are sold in whole days: it pays for them
"$TB_BIN" compare --model llama-3.1-8b --phase train --seq-in 8192 \
    --targets trn2.48xlarge,p5.48xlarge --train-tokens 1e10 --out "$tmp/job" >/dev/null 2>&1
job=$(costs "$tmp/job/cost.csv" target=trn2.48xlarge metric=usd_per_mtok_train train_days)
usd=$(costs "$tmp/job/cost.csv" target=trn2.48xlarge metric=usd_per_mtok_train train_usd)
bd=$(costs "$tmp/job/cost.csv" target=trn2.48xlarge metric=usd_per_mtok_train train_billed_days)
check "the 10B-token job on trn2 pays for the whole capacity-block days it needs ($job days: $bd days, \$$usd)" \
    perl -MPOSIX=ceil -e 'my ($d, $u, $b) = @ARGV; my $want = ceil($d); $want = 7 * ceil($want / 7) if $want > 14;
                          exit !($d > 0 && $b == $want && abs($u - $want * 24 * 35.7608) < 1e-6 * $u)' -- "$job" "$usd" "$bd"
pd=$(costs "$tmp/job/cost.csv" target=p5.48xlarge metric=usd_per_mtok_train train_days)
check "and beside it the same job on p5 bought the same way (capacity blocks, us-east-2), with the saving" \
    perl -MPOSIX=ceil -e 'my ($pd, $u, $f) = @ARGV; open my $r, "<", $f or exit 1; local $/; my $t = <$r>;
                          my $b = ceil($pd) * 24 * 41.528; my $s = sprintf("%.0f", (1 - $u / $b) * 100);
                          exit !($t =~ /\| (\d+) \(blocks\): saves (\d+)% \|/ && abs($1 - $b) < 1 && $2 == $s)' \
    "$pd" "$usd" "$tmp/job/report.md"
check "and the report says how much of the bought days it uses" \
    grep -qE '^\| llama-3.1-8b \| trn2.48xlarge \| 1 \| 16 \| [0-9]+ \| [0-9.]+ \| [0-9]+.* \| [0-9]+ days? x 1 instance in 1 block, [0-9]+% used \| [^|]* \| modeled' "$tmp/job/report.md"

# ---- training and a diffusion model ----
"$TB_BIN" compare --model=llama-3.1-8b --phase=train --seq-in=8192 --batch=1024 --instances=8 \
    --targets trn2.48xlarge,p5.48xlarge --pricing capacity-block --region us-east-2 \
    --out "$tmp/train" >/dev/null 2>&1
check "train: exits 0" test $? -eq 0
t=$(costs "$tmp/train/cost.csv" metric=usd_per_mtok_train target | sort | tr '\n' ' ')
p=$(costs "$tmp/train/cost.csv" metric=usd_per_mtok_train price_purchase | sort -u)
check "train: a usd_per_mtok_train row each for p5 and trn2 at capacity-block ($t)" \
    test "$t/$p" = "p5.48xlarge trn2.48xlarge /capacity-block"
check "train: the summary names the training workload" \
    grep -q '^- `llama-3.1-8b/train/in8192/bf16` (USD per 1M training tokens): cheapest ' "$tmp/train/report.md"
"$TB_BIN" compare --model flux.1-dev --phase denoise --resolution 1024 \
    --targets trn2.48xlarge,p5.48xlarge --pricing capacity-block --region us-east-2 \
    --out "$tmp/denoise" >/dev/null 2>&1
check "denoise (FLUX.1-dev): exits 0" test $? -eq 0
t=$(costs "$tmp/denoise/cost.csv" price_region=us-east-2 price_purchase=capacity-block usd_per_kimage | grep -c .)
check "denoise: a usd_per_kimage for each target at capacity-block us-east-2 ($t)" test "$t" = 2
check "denoise: the summary prices images" \
    grep -q '^- `flux.1-dev/denoise/r1024/sdefault/bf16` (USD per 1000 images): cheapest ' "$tmp/denoise/report.md"

# a diffusion model's training: images at a resolution, the global batch required
"$TB_BIN" compare --model flux.1-schnell --phase train --batch 512 --resolution 256 \
    --targets p6-b200.48xlarge,p5.48xlarge --train-tokens 4e9 --out "$tmp/dtrain" >/dev/null 2>&1
rc=$?
st=$(csv_cell "$tmp/dtrain/results.csv" value target=p6-b200.48xlarge metric=step_time_s)
check "train a diffusion model (FLUX.1-schnell, 512 images of 256 px): exits 0, B200 step $st s, priced per 1M training tokens" \
    sh -c 'test $0 = 0 && perl -e "exit !(\$ARGV[0] > 0.1 && \$ARGV[0] < 10)" "$1" &&
           grep -q "^- \`flux.1-schnell/train/r256/bf16\` (USD per 1M training tokens): cheapest " "$2"' \
    $rc "$st" "$tmp/dtrain/report.md"
"$TB_BIN" compare --model flux.1-schnell --phase train --resolution 256 --targets p5.48xlarge \
    --out "$tmp/dtrain2" >/dev/null 2>"$tmp/dtrain2.err"
rc=$?
"$TB_BIN" compare --model flux.1-schnell --phase train --batch 64 --seq-in 512 --targets p5.48xlarge \
    --out "$tmp/dtrain3" >/dev/null 2>"$tmp/dtrain3.err"
check "  without --batch, or with --seq-in: exit 2 saying what a diffusion model's training takes" \
    sh -c 'test $0 = 2 && test $1 = 2 && grep -q "the global batch in images) is required" "$2" &&
           grep -q "not a diffusion model.s training (--resolution, --batch)" "$3"' \
    $rc $? "$tmp/dtrain2.err" "$tmp/dtrain3.err"

# ---- --results: a measured row (vLLM bench serve, imported) joins the modeled ones ----
"$TB_BIN" import --format vllm "$TB_SRCDIR/tests/data/import/vllm-bench-serve.json" \
    --model llama-3.1-70b --target p5.48xlarge --out "$tmp/imp" >/dev/null 2>&1
# shellcheck disable=SC2086
"$TB_BIN" compare $acc --results "$tmp/imp/results.csv" \
    --results "$TB_SRCDIR/tests/data/report_results.csv" --out "$tmp/merged" >/dev/null 2>"$tmp/merged.err"
check "--results: exits 0" test $? -eq 0
m=$(costs "$tmp/merged/cost.csv" provenance=measured metric=usd_per_mtok_out target)
mp=$(costs "$tmp/merged/cost.csv" provenance=measured metric=usd_per_mtok_out price_purchase)
check "the imported row is priced as measured on p5.48xlarge at capacity-block ($m, $mp)" \
    test "$m/$mp" = "p5.48xlarge/capacity-block"
src0=$(csv_cell "$tmp/imp/results.csv" source metric=output_tokens_per_s)
src1=$(csv_cell "$tmp/merged/results.csv" source metric=output_tokens_per_s provenance=measured)
ts0=$(csv_cell "$tmp/imp/results.csv" timestamp metric=output_tokens_per_s)
ts1=$(csv_cell "$tmp/merged/results.csv" timestamp metric=output_tokens_per_s provenance=measured)
check "its provenance is kept (source '$src1', timestamp $ts1)" \
    test "$src1/$ts1" = "$src0/$ts0" -a -n "$src0"
check "the summary counts it, the other model's rows left out and said so" \
    sh -c "grep -q '140 result rows (8 measured, 8 of them imported, 132 modeled' '$tmp/merged/report.md' && grep -q '8 rows added (8 measured, 0 modeled, 0 published); 14 of other models left out' '$tmp/merged.err'"

# ---- bad input: exit 2, a message naming what is wrong, nothing written ----
bad() { # bad DESCRIPTION EXPECTED-MESSAGE ARGS...
    d=$1 m=$2
    shift 2
    rm -rf "$tmp/bad"
    "$TB_BIN" compare "$@" --out "$tmp/bad" >/dev/null 2>"$tmp/bad.err"
    check "$d: exit 2, '$m', nothing written" \
        sh -c "test $? -eq 2 && grep -qF -e \"\$0\" '$tmp/bad.err' && test ! -e '$tmp/bad'" "$m"
}
srv="--phase serve --seq-in 2048 --seq-out 512 --targets trn2.48xlarge,p5.48xlarge"
# the imported output row claiming 99 of a p5.48xlarge's 8 GPUs: the cost stage refuses it
perl -MText::ParseWords -ne 'if ($. == 1) { print; chomp; my @h = parse_line(",", 0, $_);
    ($c) = grep { $h[$_] eq "chips_used" } 0 .. $#h; next }
    next unless /,output_tokens_per_s,/; my @r = parse_line(",", 1, $_); chomp $r[-1]; $r[$c] = 99;
    print join(",", @r), "\n"' "$tmp/imp/results.csv" >"$tmp/chips99.csv"
# shellcheck disable=SC2086
{
    bad "unknown model" "--model: unknown model 'llama-9-1t'" --model llama-9-1t $srv
    bad "unknown target" "--targets: unknown target 'x9.huge' (not in pricing/instances.csv)" \
        --model llama-3.1-70b --phase serve --seq-in 2048 --seq-out 512 --targets p5.48xlarge,x9.huge
    bad "unknown phase" "option '--phase': 'fly' is not serve, train or denoise" --model llama-3.1-70b --phase fly --targets p5.48xlarge
    bad "a bad number" "trnbench compare: option '--seq-in': '2k' is not a whole number from 1 to 1099511627776" --model llama-3.1-70b $srv --seq-in 2k
    bad "serving without --seq-out" "phase serve: --seq-out N is required" \
        --model llama-3.1-70b --phase serve --seq-in 2048 --targets p5.48xlarge
    bad "a diffusion model served" "sdxl is a diffusion model: --phase denoise" --model sdxl $srv
    bad "an unknown purchase model" "unknown purchase model 'lease'" --model llama-3.1-70b $srv --pricing lease
    bad "a bad results file" "report_bad_results.csv: line 6: field 'value': not a number: '6x5'" \
        --model llama-3.1-70b $srv --results "$TB_SRCDIR/tests/data/report_bad_results.csv"
    bad "a results row using more chips than its instance has" \
        "--results: $tmp/chips99.csv: line 2: field 'chips_used': more chips than 1 x p5.48xlarge has (8): '99'" \
        --model llama-3.1-70b $srv --results "$tmp/chips99.csv"
}

# ---- a target the workload does not fit: said; none at all: exit 1, nothing written ----
"$TB_BIN" compare --model llama-3.1-70b --phase serve --seq-in 2048 --seq-out 512 --batch 1 \
    --targets inf2.xlarge,p5.48xlarge --out "$tmp/part" >/dev/null 2>"$tmp/part.err"
check "one target that cannot hold the model: exit 0, its absence said, the other priced" \
    sh -c "test $? -eq 0 && grep -q 'does not fit' '$tmp/part.err' && grep -q '^trnbench compare: no rows for inf2.xlarge' '$tmp/part.err' && test \"\$(cut -d, -f3 '$tmp/part/results.csv' | sort -u | tr '\n' ' ')\" = 'p5.48xlarge target '"
# the plan's lines (tb_run.c) speak for the command that runs the plan (tb_log.h)
check "the plan's progress lines inside compare say 'trnbench compare:', none 'trnbench run:'" \
    sh -c "grep -q '^trnbench compare: \[modeled ' '$tmp/part.err' && ! grep -q '^trnbench run' '$tmp/part.err'"
"$TB_BIN" compare --model llama-3.1-70b --phase serve --seq-in 2048 --seq-out 512 --batch 1 \
    --targets inf2.xlarge --out "$tmp/none" >/dev/null 2>"$tmp/none.err"
check "no target can hold it: exit 1, nothing written" \
    sh -c "test $? -eq 1 && grep -q 'nothing to report' '$tmp/none.err' && test ! -e '$tmp/none'"

# ---- a rerun into the same folder replaces the report, whole ----
cp "$out/report.md" "$tmp/before.md"
"$TB_BIN" compare --model llama-3.1-70b --phase serve --seq-in 2048 --seq-out 512 --batch max \
    --targets trn2.48xlarge,p5.48xlarge --pricing capacity-block --region us-east-2 --out "$out" >/dev/null 2>&1
check "a rerun into the same folder exits 0" test $? -eq 0
t=$(costs "$out/cost.csv" target | sort -u | tr '\n' ' ')
r=$(grep -c 'p5en' "$out/results.csv")
check "results.csv and cost.csv are the new question's alone ($t; p5en rows: $r)" \
    test "$t/$r" = "p5.48xlarge trn2.48xlarge /0"
check "report.md is the new one: p5en gone, the batch sweep too" \
    sh -c "! grep -q 'p5en' '$out/report.md' && grep -q 'p5en' '$tmp/before.md' && ! grep -q '| llama-3.1-70b/serve/in2048/out512/bf16 | trn2.48xlarge | 6 | ' '$out/report.md'"

check "compare --help exits 0 and trnbench --help lists compare" \
    sh -c "'$TB_BIN' compare --help | grep -q '^usage: trnbench compare' && '$TB_BIN' --help | grep -q '^  compare '"

# ---- the catalogue is read once: each price table and efficiency.csv opened once ----
shim="$TB_BUILDDIR/tests/faultshim.so"
if [ -f "$shim" ]; then
    opens=""
    for t in chips.csv instances.csv prices.csv regions.csv efficiency.csv; do
        rm -f "$tmp/opens.log"
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
            LD_PRELOAD="$shim" TB_FAULT_MATCH="pricing/$t" TB_FAULT_CALLS=open \
            TB_FAULT_LOG="$tmp/opens.log" "$TB_BIN" compare --model llama-3.1-8b --phase serve \
            --seq-in 2048 --seq-out 512 --targets trn2.48xlarge,p5.48xlarge --out "$tmp/once" \
            >/dev/null 2>&1
        opens="$opens $t=$(cat "$tmp/opens.log" 2>/dev/null)"
    done
    check "a two-target compare opens each catalogue table once:$opens" \
        test "$opens" = " chips.csv=1 instances.csv=1 prices.csv=1 regions.csv=1 efficiency.csv=1"
else
    tap_n=$((tap_n + 1))
    echo "ok $tap_n # SKIP no fault shim at $shim (make check builds it)"
fi
