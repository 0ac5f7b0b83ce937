#!/bin/sh
# tests/cli/regions.t: prices outside the US (issue 34). `trnbench compare` models four
# targets, then `trnbench report` prices them as reserved-1y in eu-west-1 and on-demand
# in ap-northeast-1: a target with a price there is priced there, from its row of
# pricing/prices.csv; one without says so, and is compared at its nearest comparable
# price, named and flagged as old when it is.
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_regions"
eu="$tmp/eu-west-1"
ap="$tmp/ap-northeast-1"

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "1..0 # SKIP gnuplot is not installed (report writes its charts with it)"
    exit 0
fi

echo "1..14"
rm -rf "$tmp"
"$TB_BIN" compare --model llama-3.1-8b --phase serve \
    --targets p5.48xlarge,inf2.48xlarge,trn1.32xlarge,trn2.48xlarge \
    --seq-in 1024 --seq-out 256 --out "$tmp/x" >/dev/null 2>&1
check "compare writes the results" test -s "$tmp/x/results.csv"

"$TB_BIN" report --out "$eu" --region eu-west-1 --pricing reserved-1y "$tmp/x/results.csv" \
    >/dev/null 2>"$tmp/eu.err"
check "report --region eu-west-1 --pricing reserved-1y exits 0" test $? -eq 0
got=$(csv_cell "$eu/cost.csv" usd_per_hour target=inf2.48xlarge batch=1 metric=usd_per_mtok_out)
where=$(csv_cell "$eu/cost.csv" price_region target=inf2.48xlarge batch=1 metric=usd_per_mtok_out)
check "inf2.48xlarge at its eu-west-1 1-year RI, 10.22275 USD/h (got '$got' in '$where')" \
    test "$got" = 10.22275 -a "$where" = eu-west-1
check "from the Vantage extract's row" \
    sh -c "grep '^model:inf2.48xlarge/llama-3.1-8b/serve/b1/' '$eu/cost.csv' | grep -q 'tsaol/aws-gpu data/inf2_instances.js'"
check "p5.48xlarge, the baseline, says why it has no reserved-1y price in eu-west-1" \
    grep -q "no public reserved-1y price for 'p5.48xlarge' in 'eu-west-1'" "$eu/report.md"
check "trn1.32xlarge says it has none there, and where it is compared" \
    grep -q 'trn1.32xlarge` [0-9.]* at \*\*reserved-3y in us-east-1\*\* (no reserved-1y in eu-west-1)' \
    "$eu/report.md"
check "its stand-in (the Neuron rate of 2024-09-16) is flagged as old" \
    grep -q '| trn1.32xlarge | 8.197 | .*| stale: [0-9]* days old' "$eu/report.md"
check "p5.48xlarge on-demand in the purchase-model table: the nearest region with a price, named" \
    grep -q '^| `p5.48xlarge` | 71.552 (eu-west-2) |' "$eu/report.md"
check "no empty cell in the purchase-model table" \
    sh -c "! sed -n '/^## What each purchase model costs/,/^## Prices used/p' '$eu/report.md' | grep -q '|  |'"

"$TB_BIN" report --out "$ap" --region ap-northeast-1 --pricing on-demand "$tmp/x/results.csv" \
    >/dev/null 2>"$tmp/ap.err"
check "report --region ap-northeast-1 --pricing on-demand exits 0" test $? -eq 0
check "p5.48xlarge at its Tokyo on-demand price, 68.8 USD/h" \
    grep -q '^| \\\[[0-9]*\\\] baseline | p5.48xlarge | 68.80 | 8 | 8.6 | ap-northeast-1 | on-demand |' \
    "$ap/report.md"
check "inf2.48xlarge at its Tokyo on-demand price, 19.4719 USD/h" \
    grep -q '| inf2.48xlarge | 19.4719 | 12 | 1.623 | ap-northeast-1 | on-demand |' "$ap/report.md"
check "trn1.32xlarge (not sold in Tokyo) says so" \
    grep -q 'trn1.32xlarge` [0-9.]* at \*\*on-demand in us-east-1\*\* (no on-demand in ap-northeast-1)' \
    "$ap/report.md"
check "trn2.48xlarge (no on-demand anywhere) says so" \
    grep -q 'trn2.48xlarge` [0-9.]* at \*\*capacity-block in us-east-2\*\* (no on-demand in ap-northeast-1)' \
    "$ap/report.md"
