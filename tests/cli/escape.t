#!/bin/sh
# tests/cli/escape.t: hostile text in inputs (issue 19). A NUL byte in a results CSV, a
# model file or a suite is refused with file, line and field (exit 2), not read as a
# shorter field; a UTF-8 byte order mark is stripped by every reader alike; a model name
# is a catalogue name, a path only as a file ending in .model that is a regular file of
# bounded size (model=/etc/passwd printed that file's first line, model=/dev/zero read
# without end).
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_escape"
rm -rf "$tmp" && mkdir -p "$tmp"
fixture="$TB_SRCDIR/tests/data/report_results.csv"
sc="$TB_SRCDIR/tests/data/scenarios.csv"
model="$TB_SRCDIR/workloads/llama/llama-3.1-8b.model"

echo "1..35"

# ---- a NUL byte ----
# a results value "1<NUL>32416" on the fixture's line 3 (a prefill_tokens_per_s row)
perl -pe 's/,13473\.68,/,1\x0032416,/ if $. == 3' "$fixture" >"$tmp/nul.csv"
"$TB_BIN" report --out "$tmp/nulout" --usd-per-hour 0.36 "$tmp/nul.csv" >/dev/null 2>"$tmp/nul.err"
check "a NUL in a results value: exit 2" test $? -eq 2
check "the message names file, line and field ($(cat "$tmp/nul.err"))" \
    grep -q "nul.csv: line 3: field 'value': a NUL byte" "$tmp/nul.err"
check "and nothing is written" test ! -e "$tmp/nulout"

# a model file with "hidden = 40<NUL>96" on its line 5
perl -pe 's/^(hidden\s*=\s*\d\d)/$1\x00/' "$model" >"$tmp/nul.model"
ln=$(grep -an '^hidden' "$tmp/nul.model" | cut -d: -f1)
head -1 "$sc" >"$tmp/sc.csv"
sed -n 2p "$sc" | sed "s|llama-3.1-8b|$tmp/nul.model|" >>"$tmp/sc.csv"
"$TB_BIN" predict --scenarios "$tmp/sc.csv" >"$tmp/sc.out" 2>&1
check "a NUL in a model file: no prediction, its file, line and field named" \
    grep -q "nul.model: line $ln: field 'hidden': a NUL byte" "$tmp/sc.out"

# a suite whose run line holds "seq_in=5<NUL>12"
printf 'suite nul\nrun model=llama-tiny phase=prefill batch=1 seq_in=5\00012 reps=1 warmup=0\n' >"$tmp/nul.suite"
"$TB_BIN" run --suite "$tmp/nul.suite" --out "$tmp/nulrun" >/dev/null 2>"$tmp/nulsuite.err"
check "a NUL in a suite: exit 2" test $? -eq 2
check "its file, line and field named ($(cat "$tmp/nulsuite.err"))" \
    grep -q "nul.suite: line 2: field 'seq_in': a NUL byte" "$tmp/nulsuite.err"

# ---- a UTF-8 byte order mark: stripped by every reader ----
bom=$(printf '\357\273\277')
{ printf '%s' "$bom"; cat "$model"; } >"$tmp/bom.model"
head -1 "$sc" >"$tmp/bom.csv"
sed -n 2p "$sc" | sed "s|llama-3.1-8b|$tmp/bom.model|" >>"$tmp/bom.csv"
"$TB_BIN" predict --scenarios "$tmp/bom.csv" >"$tmp/bom.out" 2>&1
check "a model file with a BOM is read (predicted $(csv_cell "$tmp/bom.out" predicted id=S1))" \
    perl -e 'exit !($ARGV[0] > 1000)' "$(csv_cell "$tmp/bom.out" predicted id=S1)"
{ printf '%s' "$bom"; printf 'suite bom\npredict target=p5.48xlarge model=llama-3.1-8b phase=serve seq_in=128 seq_out=128 batch=1 precision=bf16\n'; } >"$tmp/bom.suite"
"$TB_BIN" run --suite "$tmp/bom.suite" --out "$tmp/bomrun" >/dev/null 2>"$tmp/bomsuite.err"
check "a suite with a BOM runs (exit 0)" test $? -eq 0
{ printf '%s' "$bom"; cat "$sc"; } >"$tmp/bomsc.csv"
"$TB_BIN" predict --scenarios "$tmp/bomsc.csv" >"$tmp/bomsc.out" 2>&1
check "a CSV with a BOM: its first column keeps its name" \
    test "$(csv_cell "$tmp/bomsc.out" model_version id=S1)" = "trnbench-model 1.0"

# ---- model names are names ----
head -1 "$sc" >"$tmp/names.csv"
for m in /etc/passwd /dev/zero ../../etc/passwd; do
    sed -n 2p "$sc" | sed "s|^S1|$m|; s|llama-3.1-8b|$m|" >>"$tmp/names.csv"
done
ln -s /dev/zero "$tmp/zero.model"
sed -n 2p "$sc" | sed "s|^S1|zero|; s|llama-3.1-8b|$tmp/zero.model|" >>"$tmp/names.csv"
{ cat "$model"; head -c 2000000 /dev/zero | tr '\0' '#'; } >"$tmp/big.model"
sed -n 2p "$sc" | sed "s|^S1|big|; s|llama-3.1-8b|$tmp/big.model|" >>"$tmp/names.csv"
timeout 30 "$TB_BIN" predict --scenarios "$tmp/names.csv" >"$tmp/names.out" 2>&1
check "predict on model paths ends (exit 0, no file read without bound)" test $? -eq 0
check "model=/etc/passwd: refused as a bad name, nothing of the file printed" \
    sh -c "! grep -q 'root:' '$tmp/names.out' && test \"\$(grep -c \"bad model name '/etc/passwd'\" '$tmp/names.out')\" -eq 1"
check "model=/dev/zero and ../../etc/passwd: refused as bad names" \
    sh -c "grep -q \"bad model name '/dev/zero'\" '$tmp/names.out' && grep -q \"bad model name '../../etc/passwd'\" '$tmp/names.out'"
check "a .model file that is not a regular file is refused" \
    grep -q "zero.model' is not a regular file" "$tmp/names.out"
check "a .model file over 1 MiB is refused, its size said" \
    grep -q "big.model' holds 20[0-9]* bytes, more than such a file may (1048576)" "$tmp/names.out"

# ---- make check O=/abs/path: the tests' folders are that path, not <repo>//abs/path ----
abs="$(cd "$tmp" && pwd)/o"
make -n -C "$TB_SRCDIR" O="$abs" NVCC= check >"$tmp/check.plan" 2>&1
check "make check O=$abs hands the tests TB_BUILDDIR and TB_BIN under it" \
    grep -q "TB_BUILDDIR=$abs TB_BIN=$abs/bin/trnbench " "$tmp/check.plan"

# ---- formula injection: text cells of the spreadsheet CSVs get a leading quote ----
# predict's output: an id "=1+2", a note "@SUM(A1)", a note "-1.5" (a number: kept)
head -1 "$sc" >"$tmp/f.csv"
sed -n 2p "$sc" | sed 's/^S1,/=1+2,/; s/,a good row$/,@SUM(A1)/' >>"$tmp/f.csv"
sed -n 2p "$sc" | sed 's/^S1,/S9,/; s/,a good row$/,-1.5/' >>"$tmp/f.csv"
"$TB_BIN" predict --scenarios "$tmp/f.csv" >"$tmp/f.out" 2>&1
check "predict: a text cell =1+2 gets a leading quote" test "$(sed -n 2p "$tmp/f.out" | cut -d, -f1)" = "'=1+2"
check "predict: a text cell @SUM(A1) gets a leading quote" test "$(csv_cell "$tmp/f.out" note id="'=1+2")" = "'@SUM(A1)"
check "predict: a number -1.5 stays -1.5" test "$(csv_cell "$tmp/f.out" note id=S9)" = "-1.5"
# cost.csv: a results row's model "=cmd|' /C calc'!A0"
perl -pe 's/,llama-small,/,=cmd|\x27 \/C calc\x27!A0,/ if $. == 3' "$fixture" >"$tmp/fcost.csv"
"$TB_BIN" report --out "$tmp/fcost" --usd-per-hour 0.36 "$tmp/fcost.csv" >/dev/null 2>"$tmp/fcost.err"
check "cost.csv: the model '=cmd...' is written with a leading quote" \
    sh -c "grep -q \",'=cmd|' /C calc'!A0,\" '$tmp/fcost/cost.csv' && ! grep -q ',=cmd' '$tmp/fcost/cost.csv'"
# assessment.csv: a workload named "+1+cmd"
printf 'name,model,phase,precision,requests_per_s,seq_in,seq_out,ttft_limit_ms,tpot_limit_ms,current_instance,current_purchase,region\n+1+cmd,llama-3.1-8b,serve,bf16,30,1024,256,1000,40,p5.48xlarge,on-demand,us-east-1\n' >"$tmp/fa.csv"
"$TB_BIN" assess --out "$tmp/fa" "$tmp/fa.csv" >/dev/null 2>"$tmp/fa.err"
check "assess on a workload named '+1+cmd' exits 0" test $? -eq 0
check "assessment.csv: the name +1+cmd gets a leading quote" \
    sh -c "grep -q \"^'+1+cmd,\" '$tmp/fa/assessment.csv' && ! grep -q '^+1+cmd' '$tmp/fa/assessment.csv'"

# ---- report: model names gnuplot's data files cannot hold as they are ----
# (a leading '"' or '#', a tab, a newline): the report is drawn, the chart labels carry
# a stand-in ('"' as "'", a tab or newline as a space)
chart_case() { # chart_case TAG CSV-FIELD LABEL-IN-SVG
    perl -pe "s/,llama-small,/,$2,/g" "$fixture" >"$tmp/c-$1.csv"
    "$TB_BIN" report --out "$tmp/c-$1" --usd-per-hour 0.36 "$tmp/c-$1.csv" >/dev/null 2>"$tmp/c-$1.err"
    rc=$?
    if ! command -v gnuplot >/dev/null 2>&1; then
        echo "ok $((tap_n + 1)) # skip gnuplot is not installed"
        echo "ok $((tap_n + 2)) # skip gnuplot is not installed"
        tap_n=$((tap_n + 2))
        return
    fi
    check "report on a model named $1: exit 0 ($(tail -n 1 "$tmp/c-$1.err"))" test "$rc" -eq 0
    check "the throughput chart labels it '$3'" grep -qF ">$3 prefill b1 in128<" "$tmp/c-$1/throughput.svg"
}
chart_case quote '"""q"' "'q"
chart_case hash '#h' '#h'
chart_case tab '"t\tx"' 't x'
chart_case newline '"n\nx"' 'n x'

# ---- Markdown: no raw HTML, link or image from inputs in assessment.md and report.md ----
name='<img src=x onerror=alert(1)> [a](javascript:alert(1)) ![t](http://e/x.png) &lt;i&gt; `c` ~~s~~'
printf 'name,model,phase,precision,requests_per_s,seq_in,seq_out,ttft_limit_ms,tpot_limit_ms,current_instance,current_purchase,region\n"%s",llama-3.1-8b,serve,bf16,30,1024,256,1000,40,p5.48xlarge,on-demand,us-east-1\n' "$name" >"$tmp/md.csv"
"$TB_BIN" assess --out "$tmp/md" "$tmp/md.csv" >/dev/null 2>"$tmp/md.err"
check "assess on a workload named with HTML and Markdown exits 0" test $? -eq 0
md_safe() { # md_safe FILE: the name's markup inert in it
    ! grep -q '<img' "$1" && ! grep -qF '[a](javascript' "$1" && ! grep -qF '![t](http' "$1" &&
        grep -qF '&amp;lt;i&amp;gt;' "$1" && grep -qF '\`c\`' "$1" && grep -qF '\~\~s\~\~' "$1"
}
check "assessment.md: no tag, link or image, entities and code spans as text" md_safe "$tmp/md/assessment.md"
check "assessment.html: the name escaped as before" \
    grep -qF '&lt;img src=x onerror=alert(1)&gt; [a](javascript:alert(1))' "$tmp/md/assessment.html"
"$TB_BIN" report --out "$tmp/mdr" --assess "$tmp/md.csv" --usd-per-hour 0.36 "$fixture" >/dev/null 2>"$tmp/mdr.err"
check "report --assess on it exits 0" test $? -eq 0
check "report.md: no tag, link or image from the assessment" md_safe "$tmp/mdr/report.md"
check "report.md: the name still reads as its heading" \
    grep -qF '### &lt;img src=x onerror=alert(1)&gt; \[a\](javascript:alert(1))' "$tmp/mdr/report.md"
