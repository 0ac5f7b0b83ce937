#!/bin/sh
# tests/cli/prices_vantage.t: `trnbench prices import --from vantage` end to end: the
# hand-written instances.json of tests/data/vantage/ (dated by its modification time, set
# here to 2026-11-20) into a folder's prices.csv, then `trnbench report --prices DIR`
# pricing the host with the imported eu-west-1 reserved-1y rate; a bad file exits 2,
# names file and JSON path, and leaves the folder as it was; importing again adds nothing.
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
fx="$TB_SRCDIR/tests/data/vantage"
tmp="$TB_BUILDDIR/tests/tmp/cli_prices_vantage"
out="$tmp/prices"
rep="$tmp/report"

echo "1..14"
rm -rf "$tmp"
mkdir -p "$tmp"
cp "$fx/instances.json" "$tmp/instances.json"
touch -d 2026-11-20T12:00:00Z "$tmp/instances.json"
"$TB_BIN" prices import --from vantage "$tmp/instances.json" --out "$out" >"$tmp/log" 2>&1
check "instances.json imported: exit 0" test $? -eq 0
check "14 rows read, 8 left out, said" grep -q "14 row(s) read, 14 new in .*, 8 left out" "$tmp/log"
check "the reasons listed" grep -q "1 x prices in regions not in .*regions.csv" "$tmp/log"
check "linux.ondemand -> on-demand" \
    test "$(csv_cell "$out/prices.csv" usd_per_hour instance=trn1.32xlarge region=us-east-2 purchase=on-demand)" = 19.8765
check "yrTerm3Standard.noUpfront -> reserved-3y" \
    test "$(csv_cell "$out/prices.csv" usd_per_hour instance=trn1.32xlarge region=us-east-2 purchase=reserved-3y)" = 8.4
check "yrTerm1Savings.noUpfront -> savings-plan-1y (Compute, not InstanceSavings)" \
    test "$(csv_cell "$out/prices.csv" usd_per_hour instance=trn1.32xlarge region=us-east-2 purchase=savings-plan-1y)" = 14.6
check "dated by the file's modification day" \
    test "$(csv_cell "$out/prices.csv" as_of instance=trn1.32xlarge region=eu-west-1 purchase=reserved-1y)" = 2026-11-20
check "\"pricing\": {} -> a none row" \
    test "$(csv_cell "$out/prices.csv" status instance=trn2.48xlarge region=any purchase=reserved-1y)" = none

cp "$out/prices.csv" "$tmp/before.csv"
"$TB_BIN" prices import --from vantage "$tmp/instances.json" "$fx/bad-price.json" --out "$out" >/dev/null 2>"$tmp/err"
check "a bad file exits 2" test $? -eq 2
check "naming the file and the JSON path" \
    grep -q "bad-price.json: \[1\]\.pricing\.us-east-1\.linux\.ondemand: not a price: 'abc'" "$tmp/err"
check "and the folder is as it was" cmp -s "$out/prices.csv" "$tmp/before.csv"
"$TB_BIN" prices import --from vantage "$tmp/instances.json" --out "$out" >"$tmp/log" 2>&1
check "importing again adds nothing" grep -q "0 new in" "$tmp/log"

"$TB_BIN" report --out "$rep" --prices "$out" --instance trn1.32xlarge --region eu-west-1 \
    --pricing reserved-1y "$TB_SRCDIR/tests/data/report_results.csv" >/dev/null 2>"$tmp/rep.err"
rid=llama-small/decode/b1/in128/out32/fp32
price=$(csv_cell "$rep/cost.csv" usd_per_hour run_id=$rid)
src=$(csv_cell "$rep/cost.csv" price_source run_id=$rid)
check "report --pricing reserved-1y --region eu-west-1 prices at the imported 13.6 (got '$price', '$src')" \
    test "$price" = 13.6 -a "$src" = "ec2instances.info instances.json (imported instances.json, $(date -u +%Y-%m-%d))"
"$TB_BIN" report --out "$rep.none" --prices "$out" --instance trn2.48xlarge --region us-east-2 \
    --pricing reserved-1y "$TB_SRCDIR/tests/data/report_results.csv" >/dev/null 2>"$tmp/rep.err"
note=$(csv_cell "$rep.none/cost.csv" price_note run_id=$rid)
said=no # (check COMMAND >/dev/null would hide the TAP line itself)
expr "$note" : "no price: no public reserved-1y price for 'trn2.48xlarge'.*listed by ec2instances.info without a price" >/dev/null && said=yes
check "trn2 reserved-1y: no price, and the report says why" test "$said" = yes
