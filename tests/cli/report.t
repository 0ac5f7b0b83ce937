#!/bin/sh
# tests/cli/report.t: `trnbench report` end to end on tests/data/report_results.csv:
# exit status, the files, the hand-computed cost of the host decode run, a
# self-contained HTML, and a malformed results file (exit 2, nothing written).
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


echo "1..9"
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
check "no http(s) reference, external script, link or source in the HTML" \
    sh -c "! grep -Eq 'https?://|<script src|<link|src=' '$out/report.html'"
"$TB_BIN" report --out "$badout" --usd-per-hour 0.36 "$bad" >/dev/null 2>"$TB_BUILDDIR/tests/tmp/cli_report_bad.err"
check "a malformed results file exits 2" test $? -eq 2
check "the message names file, line and field" \
    grep -q "report_bad_results.csv: line 6: field 'value': not a number: '6x5'" "$TB_BUILDDIR/tests/tmp/cli_report_bad.err"
check "and nothing is written" test ! -e "$badout"
"$TB_BIN" report --out "$badout" --instance x9.huge "$fixture" >/dev/null 2>&1
check "an unknown --instance exits 2" test $? -eq 2
