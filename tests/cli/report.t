#!/bin/sh
# tests/cli/report.t: `trnbench report` end to end on tests/data/report_results.csv:
# exit status, the files, the hand-computed cost of the host decode run, a
# self-contained HTML, a malformed results file (exit 2, nothing written), and options
# given as "--opt=value" or "--opt value" alike.
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
fixture="$TB_SRCDIR/tests/data/report_results.csv"
bad="$TB_SRCDIR/tests/data/report_bad_results.csv"
out="$TB_BUILDDIR/tests/tmp/cli_report"
badout="$TB_BUILDDIR/tests/tmp/cli_report_bad"

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "1..0 # SKIP gnuplot is not installed (tests/unit/report.c covers the no-chart path)"
    exit 0
fi


echo "1..27"
rm -rf "$out" "$badout"
"$TB_BIN" report --out "$out" --usd-per-hour 0.36 "$fixture" >/dev/null 2>"$TB_BUILDDIR/tests/tmp/cli_report.err"
check "report on the fixture exits 0" test $? -eq 0
check "report.md, report.html, cost.csv and the SVG charts" \
    test -s "$out/report.md" -a -s "$out/report.html" -a -s "$out/cost.csv" \
         -a -s "$out/throughput.svg" -a -s "$out/cost.svg"
# host decode: 0.36 USD/h / (625 tokens/s * 3600) * 1e6 = 0.16 USD per million tokens
cost=$(grep '^llama-small/decode/b1/in128/out32/fp32,measured,host,' "$out/cost.csv" | cut -d, -f15)
check "host decode costs 0.16 USD/Mtok (got '$cost')" test "$cost" = "0.16"
check "the HTML holds the charts inline" grep -q '<svg' "$out/report.html"
abs=$(cd "$TB_SRCDIR" && pwd)
check "no machine path in the report: the price table is pricing/prices.csv" \
    sh -c "grep -q 'pricing/prices.csv' '$out/report.md' && ! grep -qF '$abs/pricing' '$out/report.md' '$out/report.html'"
check "no http(s) reference, external script, link or source in the HTML" \
    sh -c "! grep -Eq 'href=.https?:|<script src|<link|src=' '$out/report.html'"
"$TB_BIN" report --out "$badout" --usd-per-hour 0.36 "$bad" >/dev/null 2>"$TB_BUILDDIR/tests/tmp/cli_report_bad.err"
check "a malformed results file exits 2" test $? -eq 2
check "the message names file, line and field" \
    grep -q "report_bad_results.csv: line 6: field 'value': not a number: '6x5'" "$TB_BUILDDIR/tests/tmp/cli_report_bad.err"
check "and nothing is written" test ! -e "$badout"
"$TB_BIN" report --out "$badout" --instance x9.huge "$fixture" >/dev/null 2>&1
check "an unknown --instance exits 2" test $? -eq 2

# an option's value after '=' or as the next argument is the same option: two reports
# of the fixture in us-east-2 differ only in the time they were written
eq="$TB_BUILDDIR/tests/tmp/cli_report_eq"
rm -rf "$eq"
"$TB_BIN" report --out="$eq/joined" --region=us-east-2 --usd-per-hour=0.36 "$fixture" >/dev/null 2>&1 &&
    "$TB_BIN" report --out "$eq/split" --region us-east-2 --usd-per-hour 0.36 "$fixture" >/dev/null 2>&1
check "--region=us-east-2 and --region us-east-2 both exit 0" test $? -eq 0
check "and both price in us-east-2" \
    sh -c "grep -q 'priced at us-east-2 on-demand[.,]' '$eq/joined/report.md' &&
           grep -q 'priced at us-east-2 on-demand[.,]' '$eq/split/report.md'"
check "and give the same report (cost.csv, report.md, report.html)" \
    sh -c "cmp -s '$eq/joined/cost.csv' '$eq/split/cost.csv' &&
           for f in report.md report.html; do
               grep -v 'Report written' \"$eq/joined/\$f\" > '$eq/a' &&
               grep -v 'Report written' \"$eq/split/\$f\" > '$eq/b' && cmp -s '$eq/a' '$eq/b' || exit 1
           done"
# a target over twice the baseline's cost shows the multiple, not a saving of -190%
check "the savings table says '2.9x the cost' for a target at 0.345x the price-performance" \
    sh -c "grep -q '^| \`llama-3.1-8b/decode/in1024/out128/bf16\` | 2\.9x the cost (0\.3[0-9].0\.3[0-9]x) |' \
           '$eq/joined/report.md' && ! grep -q -- '-190%' '$eq/joined/report.md'"

# cost under latency limits, on a modeled batch sweep: every configuration the report
# says meets the limits does, every other misses one, and the summary's pick is the
# cheapest that meets them
sweep="$TB_BUILDDIR/tests/tmp/cli_report_sweep"
rm -rf "$sweep" && mkdir -p "$sweep"
cat > "$sweep/sweep.suite" <<'SUITE'
suite sweep
description serving llama-3.1-8b over a batch sweep on three targets
predict target=inf2.48xlarge,p4d.24xlarge,p5.48xlarge model=llama-3.1-8b phase=serve seq_in=1024 seq_out=256 batch=1,8,32,128,max precision=bf16
SUITE
"$TB_BIN" run --suite "$sweep/sweep.suite" --out "$sweep" >/dev/null 2>&1
"$TB_BIN" report --out "$sweep" --ttft-ms 500 --tpot-ms 30 "$sweep/results.csv" >/dev/null 2>&1
check "report on a sweep with --ttft-ms 500 --tpot-ms 30 exits 0" test $? -eq 0
# the usd_per_mtok_out rows of cost.csv: target, batch, ttft, tpot, meets, usd
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
         $c["metric"] == "usd_per_mtok_out" {
             print $c["target"], $c["batch"], $c["ttft_ms"], $c["tpot_ms"], $c["meets_latency_limits"], $c["usd_per_mtok"] }' \
    "$sweep/cost.csv" > "$sweep/rows"
check "15 serving configurations costed (3 targets x 5 batches)" test "$(wc -l < "$sweep/rows")" -eq 15
check "'yes' exactly when TTFT <= 500 ms and TPOT <= 30 ms" \
    awk '{ ok = ($3 <= 500 && $4 <= 30) ? "yes" : "no"; if (ok != $5) exit 1 }' "$sweep/rows"
check "some configurations meet the limits and some do not" \
    sh -c "grep -q ' yes ' '$sweep/rows' && grep -q ' no ' '$sweep/rows'"
best=$(awk '$5 == "yes" && $6 != "" && (b == "" || $6 + 0 < b + 0) { b = $6; t = $1 } END { printf "%s %.4g", t, b }' "$sweep/rows")
pick=$(grep '^- `llama-3.1-8b/serve/.*within latency limits): cheapest' "$sweep/report.md" | head -n 1 |
       sed 's/.*cheapest like for like `\([^`]*\)` \([0-9.e+-]*\).*/\1 \2/')
check "the summary picks the cheapest configuration within the limits ('$best' = '$pick')" \
    test -n "$best" -a "$best" = "$pick"
"$TB_BIN" report --out "$sweep/x" --region mars-north-1 "$sweep/results.csv" >/dev/null 2>"$sweep/region.err"
check "an unknown --region exits 2" test $? -eq 2
check "and names the region and the price table" grep -q "unknown region 'mars-north-1' (no row of .*prices.csv names it)" "$sweep/region.err"

# measured GPU rows beside the model's prediction of the same run (a fixture of the
# GPU executor's row format with made-up figures: 4 ms measured, 3.5 ms modeled)
gpu="$TB_BUILDDIR/tests/tmp/cli_report_gpu"
rm -rf "$gpu"
"$TB_BIN" report --out "$gpu" "$TB_SRCDIR/tests/data/report_gpu_results.csv" >/dev/null 2>&1
check "a measured GPU run is paired with its modeled row, error -12.5%" \
    grep -q '^| llama-small | prefill | b1 in512 | `ttft_ms` | 4 | NVIDIA H100.* | 3.5 | p5.4xlarge | -12.5% |$' "$gpu/report.md"
check "and its throughput, error +14.3%" \
    grep -q '`prefill_tokens_per_s` | 128000 | .* | 146286 | p5.4xlarge | +14.3% |$' "$gpu/report.md"

# --check: the options alone, before there are results (make bench runs it first)
"$TB_BIN" report --check --pricing capacity-block --region us-east-2 --baseline p5.48xlarge \
    >"$tmp/check.out" 2>&1
check "report --check with good options: exit 0, 'options checked'" \
    sh -c "test $? -eq 0 && grep -q 'options checked' '$tmp/check.out'"
"$TB_BIN" report --check --region us-west-9 >"$tmp/check.out" 2>&1
check "report --check, an unknown region: exit 2, named" \
    sh -c "test $? -eq 2 && grep -q \"unknown region 'us-west-9'\" '$tmp/check.out'"
"$TB_BIN" report --check --regoin us-east-2 >"$tmp/check.out" 2>&1
check "report --check, a misspelt option: exit 2" \
    sh -c "test $? -eq 2 && grep -q \"unknown option '--regoin'\" '$tmp/check.out'"
"$TB_BIN" report --check --baseline x9.huge >"$tmp/check.out" 2>&1
check "report --check, an unknown baseline: exit 2" \
    sh -c "test $? -eq 2 && grep -q \"baseline: unknown instance type 'x9.huge'\" '$tmp/check.out'"
