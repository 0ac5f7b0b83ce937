#!/bin/sh
# tests/cli/discount.t: a user's discount for a purchase model (--discount P=F on
# `trnbench compare` and `trnbench report`). AWS publishes no machine-readable
# savings-plan rate, so a savings-plan price is the on-demand price of the same instance
# and region less the user's fraction, labelled as the user's own in the summary, the
# price table and cost.csv; without a discount the report says once that there is no
# such rate. Bad discounts exit 2 and write nothing. Needs TB_BIN, TB_SRCDIR and
# TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_discount"
rm -rf "$tmp" && mkdir -p "$tmp"
q="--model llama-3.1-70b --phase serve --seq-in 2048 --seq-out 512 --batch 1,max --targets p5.48xlarge,trn1.32xlarge"
label="user discount 28% off on-demand, given on the command line"

echo "1..23"

# ---- the same question on-demand and at a 28% savings-plan discount ----
# shellcheck disable=SC2086
"$TB_BIN" compare $q --out "$tmp/od" >/dev/null 2>"$tmp/od.err"
check "on-demand: exit 0" test $? -eq 0
# shellcheck disable=SC2086
"$TB_BIN" compare $q --pricing savings-plan-1y --discount savings-plan-1y=0.28 \
    --out "$tmp/sp" >/dev/null 2>"$tmp/sp.err"
check "--pricing savings-plan-1y --discount savings-plan-1y=0.28: exit 0" test $? -eq 0

od=$(csv_cell "$tmp/od/cost.csv" usd_per_hour target=p5.48xlarge metric=usd_per_mtok_out batch=1)
sp=$(csv_cell "$tmp/sp/cost.csv" usd_per_hour target=p5.48xlarge metric=usd_per_mtok_out batch=1)
check "p5.48xlarge on-demand is the table's 55.04 ($od)" test "$od" = 55.04
check "and at the discount 28% less: 39.6288 ($sp)" test "$sp" = 39.6288
odc=$(csv_cell "$tmp/od/cost.csv" usd_per_mtok target=trn1.32xlarge metric=usd_per_mtok_out batch=1)
spc=$(csv_cell "$tmp/sp/cost.csv" usd_per_mtok target=trn1.32xlarge metric=usd_per_mtok_out batch=1)
check "trn1.32xlarge's cost per Mtok is 0.72 x its on-demand cost ($spc, $odc)" \
    perl -e 'exit !($ARGV[1] > 0 && abs($ARGV[0] - 0.72 * $ARGV[1]) < 1e-6 * $ARGV[1])' "$spc" "$odc"
check "cost.csv: priced under savings-plan-1y" \
    test "$(csv_cell "$tmp/sp/cost.csv" price_purchase target=trn1.32xlarge metric=usd_per_mtok_out batch=1)" = savings-plan-1y
check "cost.csv: the price's provenance is the user's" \
    test "$(csv_cell "$tmp/sp/cost.csv" price_provenance target=p5.48xlarge metric=usd_per_mtok_out batch=1)" = user
check "  and on-demand's the table's" \
    test "$(csv_cell "$tmp/od/cost.csv" price_provenance target=p5.48xlarge metric=usd_per_mtok_out batch=1)" = table
src=$(csv_cell "$tmp/sp/cost.csv" price_source target=p5.48xlarge metric=usd_per_mtok_out batch=1)
case "$src" in
"$label (--discount savings-plan-1y=0.28), of on-demand \$55.04/h: "*) ok=0 ;;
*) ok=1 ;;
esac
check "cost.csv: its source says whose discount, off what ($src)" test $ok -eq 0
check "the summary labels the discount as the user's" \
    grep -qF "AWS publishes no machine-readable savings-plan rate for these instances; savings-plan-1y prices here are the **$label** (--discount savings-plan-1y=0.28), not a published rate." "$tmp/sp/report.md"
check "  and says there is no published rate once" \
    test "$(grep -c 'AWS publishes no machine-readable savings-plan rate' "$tmp/sp/report.md")" -eq 1
check "the prices-used table names the discount as the source" \
    grep -qE '^\| \\\[[0-9]\\\] \| p5\.48xlarge \| 39\.6288 \| 8 \| 4\.954 \| us-east-1 \| savings-plan-1y \| [^|]* \| [^|]* \| user discount 28% off on-demand, given on the command line' "$tmp/sp/report.md"

# ---- without a discount: no savings-plan rate, said once, with the way to give one ----
# shellcheck disable=SC2086
"$TB_BIN" compare $q --pricing savings-plan-1y --out "$tmp/none" >/dev/null 2>&1
check "savings-plan-1y without a discount: exit 0" test $? -eq 0
check "  the report says so once, and how to enter a rate" \
    test "$(grep -c 'AWS publishes no machine-readable savings-plan rate for these instances; enter yours with --discount savings-plan-1y=FRACTION (the fraction off on-demand) or --usd-per-hour\.' "$tmp/none/report.md")" -eq 1
check "  and no row is priced under it" \
    sh -c "! grep -q ',savings-plan-1y,[0-9]' '$tmp/none/cost.csv'"

# ---- report takes the same option ----
"$TB_BIN" report --out "$tmp/rep" --pricing savings-plan-1y --discount=savings-plan-1y=0.28 \
    "$tmp/od/results.csv" >/dev/null 2>"$tmp/rep.err"
check "report --discount=savings-plan-1y=0.28: exit 0" test $? -eq 0
check "  the same price as compare's" \
    test "$(csv_cell "$tmp/rep/cost.csv" usd_per_hour target=p5.48xlarge metric=usd_per_mtok_out batch=1)" = 39.6288

# ---- bad discounts: exit 2, a clear message, nothing written ----
bad() { # NAME MESSAGE ARGS...: compare refuses ARGS with MESSAGE on stderr, writes nothing
    n=$1 m=$2
    shift 2
    # shellcheck disable=SC2086
    "$TB_BIN" compare $q --out "$tmp/$n" "$@" >/dev/null 2>"$tmp/$n.err"
    [ $? -eq 2 ] && grep -qF -- "$m" "$tmp/$n.err" && [ ! -e "$tmp/$n" ]
}
check "an unknown purchase model: exit 2, named" \
    bad b1 "trnbench compare: option '--discount': unknown purchase model 'lease' (on-demand, " --discount lease=0.2
check "a fraction of 1 or more: exit 2" \
    bad b2 "trnbench compare: option '--discount': not a fraction in (0, 1) (0.28 is 28% off on-demand): 'savings-plan-1y=28'" --discount savings-plan-1y=28
check "a fraction of 0: exit 2" \
    bad b3 "option '--discount': not a fraction in (0, 1)" --discount reserved-1y=0
check "the same purchase model twice: exit 2" \
    bad b4 "trnbench compare: option '--discount': savings-plan-1y given twice" \
    --discount savings-plan-1y=0.2 --discount savings-plan-1y=0.3
"$TB_BIN" report --check --discount spot >/dev/null 2>"$tmp/c.err"
check "report --check --discount without =F: exit 2, the form expected" \
    sh -c "[ $? -eq 2 ] && grep -qF \"expected PURCHASE=FRACTION (savings-plan-1y=0.28), got 'spot'\" '$tmp/c.err'"
check "both --help texts describe --discount" \
    sh -c "'$TB_BIN' report --help | grep -q -- '--discount P=F' && '$TB_BIN' compare --help | grep -q -- '--discount P=F'"
