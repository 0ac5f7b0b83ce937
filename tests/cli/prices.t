#!/bin/sh
# tests/cli/prices.t: `trnbench prices import` end to end: the four AWS CLI formats of
# tests/data/aws_prices/ into a folder's prices.csv, then `trnbench report --prices DIR`
# pricing the host with the imported on-demand price; a bad file exits 2 and leaves the
# folder as it was; importing again adds nothing.
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
fx="$TB_SRCDIR/tests/data/aws_prices"
out="$TB_BUILDDIR/tests/tmp/cli_prices"
rep="$TB_BUILDDIR/tests/tmp/cli_prices_report"

echo "1..14"
rm -rf "$out" "$rep"
"$TB_BIN" prices import --from get-products "$fx/get-products.json" --out "$out" >"$out.log" 2>&1
check "get-products imported: exit 0" test $? -eq 0
check "the on-demand price, dated and sourced" \
    test "$(csv_cell "$out/prices.csv" usd_per_hour instance=trn1.32xlarge region=us-east-2 purchase=on-demand)" = 20.1234
check "its date is the term's effectiveDate" \
    test "$(csv_cell "$out/prices.csv" as_of instance=trn1.32xlarge purchase=on-demand)" = 2026-11-01
check "reserved-3y from the 3yr standard No Upfront term" \
    test "$(csv_cell "$out/prices.csv" usd_per_hour instance=trn1.32xlarge purchase=reserved-3y)" = 9.2
check "trn2.48xlarge with Capacity Block products only: status none" \
    test "$(csv_cell "$out/prices.csv" status instance=trn2.48xlarge purchase=on-demand)" = none
"$TB_BIN" prices import --from spot-price-history "$fx/spot-price-history.json" --out "$out" >/dev/null 2>&1 &&
"$TB_BIN" prices import --from capacity-block-offerings "$fx/capacity-block-offerings.json" --out "$out" >/dev/null 2>&1 &&
"$TB_BIN" prices import --from savings-plan-rates "$fx/savings-plan-rates.json" --out "$out" >/dev/null 2>&1
check "spot, Capacity Block and Savings Plans files merged: exit 0" test $? -eq 0
check "8 rows, header included 9 lines" test "$(wc -l <"$out/prices.csv")" -eq 9
check "the UltraServer block: 3840 USD / 24 h" \
    test "$(csv_cell "$out/prices.csv" usd_per_hour instance=u-trn2x64 purchase=capacity-block)" = 160
cp "$out/prices.csv" "$out.before"
"$TB_BIN" prices import --from get-products "$fx/get-products.json" "$fx/get-products-bad-price.json" --out "$out" >/dev/null 2>"$out.err"
check "a bad file exits 2" test $? -eq 2
check "naming the file and the JSON path" \
    grep -q "get-products-bad-price.json: PriceList\[1\]\.terms\.OnDemand\..*\.pricePerUnit\.USD: not a price: 'abc'" "$out.err"
check "and the folder is as it was" cmp -s "$out/prices.csv" "$out.before"
"$TB_BIN" prices import --from get-products "$fx/get-products.json" --out "$out" >"$out.log" 2>&1
check "importing again adds nothing" grep -q "0 new in" "$out.log"

"$TB_BIN" report --out "$rep" --prices "$out" --instance trn1.32xlarge --region us-east-2 \
    "$TB_SRCDIR/tests/data/report_results.csv" >/dev/null 2>"$rep.err"
check "report --prices DIR (prices.csv alone) exits 0" test $? -eq 0
rid=llama-small/decode/b1/in128/out32/fp32
price=$(csv_cell "$rep/cost.csv" usd_per_hour run_id=$rid)
src=$(csv_cell "$rep/cost.csv" price_source run_id=$rid)
check "the host is priced at the imported 20.1234 USD/h (got '$price'), from the import" \
    test "$price" = 20.1234 -a "$src" = "aws pricing get-products (imported get-products.json, $(date -u +%Y-%m-%d))"
