#!/bin/sh
# tests/cli/install.t: `make install DESTDIR=...` from the build tree make check just
# built, into a scratch folder: the program, the data it reads at run time in the layout
# it reads them, README.md, the manual (docs/) and the man pages (or the --help texts without help2man), and
# no source file; the installed program then runs on the installed data. `make
# uninstall` takes it all away again. Needs TB_SRCDIR and TB_BUILDDIR (make check sets
# them) and a built tree.
#
# The install reuses what is built: -o keeps make from remaking the program, the plugin
# and the pages, which the tests running beside this one use. PREFIX is left as the
# build had it, since the data folder is compiled into the program: another PREFIX
# would have to rebuild it. So the program looks for its data in DATADIR, not in
# DESTDIR/DATADIR, and the test checks that the two name the same folder, then points
# TRNBENCH_DATADIR at the DESTDIR copy to run the installed program on it.

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_install"
rm -rf "$tmp" && mkdir -p "$tmp"
root="$tmp/root"
src="$TB_SRCDIR"
o="$TB_BUILDDIR"

echo "1..25"

make -C "$src" O="$o" DESTDIR="$root" -o "$o/bin/trnbench" -o "$o/lib/libtrnbench-cuda.so" \
    -o "$o/doc/stamp" install >"$tmp/install.log" 2>&1
check "make install DESTDIR=DIR exits 0" test $? -eq 0

# ---- the program ----
find "$root" -type f -path '*/bin/trnbench' >"$tmp/bins"
check "one program installed, in a bin folder ($(sed "s|^$root||" "$tmp/bins"))" \
    test "$(wc -l <"$tmp/bins")" -eq 1
bin=$(cat "$tmp/bins")
prefix=$(dirname "$(dirname "${bin#"$root"}")")
check "  executable" test -x "$bin"
# from a folder without data, TRNBENCH_DATADIR unset, the program names its data folder:
# the installed one (its source tree is not above it, the current folder holds none)
(cd "$tmp" && env -u TRNBENCH_DATADIR "$bin" --version) >"$tmp/version" 2>&1
check "trnbench --version exits 0" test $? -eq 0
check "  says which build it is" grep -q '^trnbench [0-9a-f]\{7,\}' "$tmp/version"
data=$(sed -n 's/^data: //p' "$tmp/version")
check "  its data folder ($data) is where make install put the data" \
    test -f "$root$data/pricing/instances.csv"

# ---- the data: every kind the program reads, in its layout, unchanged ----
count() { # count DIR PATTERN...: how many files (cd DIR; ls PATTERN...) names
    (cd "$1" && shift && ls -d "$@" 2>/dev/null | wc -l)
}
n=$(count "$src" workloads/*/*.model)
check "the model catalogue: all $n .model files" test "$(count "$root$data" workloads/*/*.model)" -eq "$n"
n=$(count "$src" pricing/*.csv)
check "the price tables: all $n pricing CSVs" test "$(count "$root$data" pricing/*.csv)" -eq "$n"
n=$(count "$src" suites/*.suite)
check "the suites: all $n" test "$(count "$root$data" suites/*.suite)" -eq "$n"
n=$(count "$src" reports/*.gp)
check "the chart scripts: all $n gnuplot scripts" test "$(count "$root$data" reports/*.gp)" -eq "$n"
check "the validation rows, an assessment example, the PyTorch peer and training scripts, a format README" \
    sh -c 'for f in reports/validation/published.csv reports/examples/assess-mixed.csv \
        workloads/peers/pytorch_llama.py workloads/train/llama_train.py \
        workloads/train/torchrun_compat.py pricing/README.md; do
        cmp -s "$1/$f" "$2/$f" || exit 1; done' sh "$src" "$root$data"
find "$root" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cc' \
    -o -name '*.o' -o -name '*.d' \) >"$tmp/sources"
check "no source file installed" test ! -s "$tmp/sources"
check "no report output installed" test ! -e "$root$data/reports/out"

# ---- the docs ----
check "README.md in share/doc/trnbench" cmp -s "$src/README.md" "$root$prefix/share/doc/trnbench/README.md"
n=$(count "$src" docs/*.md)
check "  and the manual beside it, where its links point: all $n pages of docs/" \
    sh -c 'test "$3" -gt 0 && for f in "$1"/docs/*.md; do cmp -s "$f" "$2/docs/${f##*/}" || exit 1; done' \
    sh "$src" "$root$prefix/share/doc/trnbench" "$n"
# one page per command `trnbench --help` lists, or its --help text where help2man was missing
"$bin" --help | sed -n '/^Commands:$/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' >"$tmp/commands"
man1="$root$prefix/share/man/man1"
if [ -d "$o/doc/man1" ]; then
    check "a man page for trnbench and each of its $(wc -l <"$tmp/commands") commands" \
        sh -c 'test -f "$1/trnbench.1" && while read -r c; do test -f "$1/trnbench-$c.1" || exit 1; done <"$2"' \
        sh "$man1" "$tmp/commands"
    # roff: "\-" is a minus sign
    check "  trnbench-detect.1: its name and summary, and its options" \
        sh -c 'grep -qxF "trnbench-detect \- what this machine is: CPU, memory, EC2 type, GPUs, Neuron" "$1" &&
               grep -qF "\-\-format" "$1" && grep -qF "\-\-root" "$1"' sh "$man1/trnbench-detect.1"
    check "  and no --help texts beside them" test ! -e "$root$prefix/share/doc/trnbench/trnbench.txt"
else
    check "no help2man: trnbench's and each command's --help text in share/doc/trnbench" \
        sh -c 'test -f "$1/trnbench.txt" && while read -r c; do test -f "$1/trnbench-$c.txt" || exit 1; done <"$2"' \
        sh "$root$prefix/share/doc/trnbench" "$tmp/commands"
    check "  trnbench-detect.txt is detect's --help" \
        sh -c "\"$bin\" detect --help | cmp -s - '$root$prefix/share/doc/trnbench/trnbench-detect.txt'"
    check "  and no man pages" test ! -e "$man1"
fi

# ---- the installed program on the installed data ----
export TRNBENCH_DATADIR="$root$data"
cd "$tmp" || exit 1
"$bin" run --list >"$tmp/list" 2>&1
check "run --list lists the installed catalogue" grep -q '^llama-3.1-8b ' "$tmp/list"
# the published rows at today's bounds (see tests/cli/predict.t)
"$bin" validate --quiet --p90-max=31 --coverage-min=100 "$root$data/reports/validation/published.csv" >"$tmp/validate" 2>&1
check "validate on the installed rows meets today's bounds" test $? -eq 0
"$bin" assess "$root$data/reports/examples/assess-mixed.csv" --out "$tmp/assess" >"$tmp/assess.log" 2>&1
check "assess on the installed example writes assessment.csv" \
    sh -c "test $? -eq 0 && test -s '$tmp/assess/assessment.csv'"
"$bin" report --out "$tmp/report" "$src/tests/data/report_results.csv" >"$tmp/report.log" 2>&1
check "report draws its charts with the installed gnuplot scripts" \
    sh -c "test $? -eq 0 && test -s '$tmp/report/cost.svg' && test -s '$tmp/report/throughput.svg'"
TRNBENCH_CUDA=0 "$bin" perf --gpu --peer=pytorch >"$tmp/peer" 2>&1
check "perf --gpu --peer pytorch finds the installed peer script" test $? -eq 0
cd "$src" || exit 1

# ---- uninstall ----
make -C "$src" O="$o" DESTDIR="$root" uninstall >"$tmp/uninstall.log" 2>&1
check "make uninstall DESTDIR=DIR exits 0" test $? -eq 0
check "  and leaves no file behind" test -z "$(find "$root" -type f)"
