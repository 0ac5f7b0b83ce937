#!/bin/sh
# tests/cli/browser.t: report.html in a real browser (Debian's chromium, headless; .ci/run
# installs it). Builds a report with every section (measured rows of the fixture, a
# modeled batch sweep, an assessment), renders it, takes a screenshot, and checks that
# the page's own self-check counted every chart as laid out with content, and that the
# console stayed silent (the page logs nothing, so any console line is an error). A
# broken page must trip the same console check, so the check can fail.
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"

browser=""
for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
    echo "1..0 # SKIP no chromium (Debian package 'chromium'; .ci/run installs it)"
    exit 0
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "1..0 # SKIP gnuplot is not installed: the report has no charts to check"
    exit 0
fi

tmp="$TB_BUILDDIR/tests/tmp/browser"
rm -rf "$tmp" && mkdir -p "$tmp/profile" "$tmp/out"
tmp=$(cd "$tmp" && pwd)
cat > "$tmp/sweep.suite" <<'SUITE'
suite sweep
description a serving batch sweep on two targets, for the browser test
predict target=inf2.48xlarge,p5.48xlarge model=llama-3.1-8b phase=serve seq_in=1024 seq_out=256 batch=1,8,64,max precision=bf16
predict target=trn1.32xlarge,p5.48xlarge model=llama-3.1-8b phase=train seq_in=4096 batch=256 instances=4 precision=bf16
SUITE

# Chromium without a display, a user, a GPU or a network: everything it would try on
# its own is switched off, and the profile is a scratch folder.
render() { # render URL -> stdout: the DOM after the scripts ran; stderr: the log
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --disable-dev-shm-usage --user-data-dir="$tmp/profile" \
        --enable-logging=stderr --v=0 --virtual-time-budget=3000 --window-size="${win:-1280,2400}" \
        "$@"
}

echo "1..10"
"$TB_BIN" run --suite "$tmp/sweep.suite" --out "$tmp/out" >/dev/null 2>&1
check "a modeled sweep runs" test -s "$tmp/out/results.csv"
"$TB_BIN" report --out "$tmp/out" --usd-per-hour 0.36 \
    --assess "$TB_SRCDIR/reports/examples/assess-chat.csv" \
    "$TB_SRCDIR/tests/data/report_results.csv" "$tmp/out/results.csv" >/dev/null 2>"$tmp/report.err"
check "report with every section exits 0" test $? -eq 0

url="file://$tmp/out/report.html"
render --screenshot="$tmp/shot.png" "$url" >/dev/null 2>"$tmp/shot.err"
check "a screenshot is taken" test -s "$tmp/shot.png"
# a page of charts and tables compresses far worse than a blank one (a few KB)
size=$(wc -c < "$tmp/shot.png")
check "the screenshot is not blank ($size bytes)" test "$size" -gt 40000

render --dump-dom "$url" > "$tmp/dom.html" 2>"$tmp/dom.err"
charts=$(sed -n 's/.*data-charts="\([0-9]*\)".*/\1/p' "$tmp/dom.html" | head -n 1)
drawn=$(sed -n 's/.*data-charts-drawn="\([0-9]*\)".*/\1/p' "$tmp/dom.html" | head -n 1)
check "the page's script ran and found charts (${charts:-none})" test "${charts:-0}" -ge 5
check "every chart is laid out with content ($drawn of $charts)" test "${drawn:-x}" = "${charts:-y}"
check "no console messages (errors) while rendering" \
    sh -c "! grep -q 'CONSOLE' '$tmp/dom.err' '$tmp/shot.err'"
check "the assessment is a section of the page" grep -q '<section id="assessment">' "$tmp/dom.html"

# on a phone-sized window nothing is wider than the screen (tables scroll inside
# themselves); without the assessment tables' own scrolling this said "no"
win=390,1600 render --dump-dom "$url" > "$tmp/phone.html" 2>/dev/null
fits=$(sed -n 's/.*data-fits="\([a-z]*\)".*/\1/p' "$tmp/phone.html" | head -n 1)
check "the page fits a 390-pixel phone screen (${fits:-unknown})" test "$fits" = yes

# the console check can fail: a page that throws is caught by it
printf '<!DOCTYPE html><title>x</title><script>throw new Error("boom")</script>\n' > "$tmp/broken.html"
render --dump-dom "file://$tmp/broken.html" >/dev/null 2>"$tmp/broken.err"
check "a page that throws shows on the console check" grep -q 'CONSOLE.*Uncaught Error: boom' "$tmp/broken.err"
