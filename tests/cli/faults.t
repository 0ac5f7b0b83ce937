#!/bin/sh
# tests/cli/faults.t: a results folder under faults. The real program, real files and
# real processes; the faults come from an LD_PRELOAD shim (tests/shim/faultshim.c, built
# by make check to $TB_BUILDDIR/tests/faultshim.so) that acts on the K-th write() or
# rename() of a named file: kill -9, SIGTERM, SIGINT, or a full disk (ENOSPC).
#   - two `trnbench run` on one --out, 20 trials: no row lost or repeated; --no-wait
#     refuses while another holds the folder, the default waits; two `make bench` at once
#   - kill -9 at random write points (seeded): the results left are whole runs, and a
#     rerun completes them, none repeated, no temporary left (a killed writer's
#     results.csv.tmp.PID, assessment.csv.tmp.PID, .report.tmp.PID/ are removed)
#   - SIGTERM and SIGINT, at a write point and from outside: the run stops, its results
#     whole, no temporary left; a rerun resumes
#   - a full disk: assess leaves its three old outputs, run its old results.csv, and
#     each names the file; exit 1
#   - report --out D leaves the assessment.csv that assess --out D wrote there
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them); under 60 s.
. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/faults"
shim="${TB_FAULT_SHIM:-$TB_BUILDDIR/tests/faultshim.so}"
export TRNBENCH_CUDA=0
# a preloaded shim ahead of a sanitizer build's runtime (make check under ASan)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
rm -rf "$tmp" && mkdir -p "$tmp"
if [ ! -f "$shim" ]; then
    echo "1..0 # SKIP no fault shim at $shim (make check builds it: make $shim)"
    exit 0
fi
echo 1..43

# 12 runs of 3 metrics: 36 rows
suite="$tmp/c.suite"
{
    echo "suite faults"
    for b in 1 2 3 4; do for s in 8 16 24; do
        echo "run model=llama-tiny phase=prefill batch=$b seq_in=$s reps=1 warmup=0"
    done; done
} >"$suite"
rows=36

# tally FILE: "ROWS DISTINCT WHOLE": rows, distinct (run_id, metric) pairs, and 1 when
# every run in the file has its 3 rows (0 otherwise); "0 0 1" for no file
tally() {
    [ -f "$1" ] || { echo "0 0 1"; return; }
    perl -e '
        sub row { my @o; my $s = shift; chomp $s;
            while (length $s) { if ($s =~ s/^"((?:[^"]|"")*)"(,|$)//) { (my $x = $1) =~ s/""/"/g; push @o, $x }
                                elsif ($s =~ s/^([^,]*)(,|$)//) { push @o, $1 } else { last } }
            return @o }
        open my $f, "<", $ARGV[0] or die; my @h = row(scalar <$f>); my %c; @c{@h} = 0 .. $#h;
        my ($n, %k, %run) = (0);
        while (<$f>) { my @r = row($_); $n++; $k{"$r[$c{run_id}] $r[$c{metric}]"}++;
                       $run{$r[$c{run_id}]}++ }
        my $whole = (grep { $_ != 3 } values %run) ? 0 : 1;
        print "$n ", scalar(keys %k), " $whole\n"' "$1"
}
temps() { # temps DIR: the temporaries and scratch folders left in DIR
    ls -a "$1" 2>/dev/null | grep -E '\.tmp\.[0-9]+$' || true
}
# faulty K DO MATCH CMD...: CMD with the shim acting on the K-th write or rename of a
# file whose path holds MATCH
faulty() {
    k=$1 what=$2 match=$3
    shift 3
    LD_PRELOAD="$shim" TB_FAULT_AT="$k" TB_FAULT_DO="$what" TB_FAULT_MATCH="$match" "$@"
}

# ---- two runs on one folder (issue 19 item 2) ----
bad=0 waited=0 status=0
mkdir -p "$tmp/conc"
for i in $(seq 20); do
    d="$tmp/conc/$i"
    "$TB_BIN" run --suite "$suite" --out "$d" 2>"$d.a.err" &
    p1=$!
    "$TB_BIN" run --suite "$suite" --out "$d" 2>"$d.b.err" &
    p2=$!
    wait $p1 || status=$((status + 1))
    wait $p2 || status=$((status + 1))
    [ "$(tally "$d/results.csv")" = "$rows $rows 1" ] || {
        bad=$((bad + 1))
        diag_t="$diag_t $i:$(tally "$d/results.csv" | tr ' ' /)"
    }
    cat "$d.a.err" "$d.b.err" | grep -q 'waiting until it is done' && waited=$((waited + 1))
done
[ $bad -eq 0 ] || echo "# trials with rows lost or repeated (rows/distinct/whole):$diag_t" >&2
check "20 trials of two runs on one folder: every run exits 0 ($status failed)" test $status -eq 0
check "and every trial has its $rows rows, none lost or repeated ($bad of 20 not)" test $bad -eq 0
check "the second run said it waited ($waited of 20 trials overlapped)" test $waited -gt 0

# a folder held by another writer (flock(1) stands in for it)
d="$tmp/held"
mkdir -p "$d"
"$TB_BIN" run --suite "$suite" --out "$d" 2>/dev/null
cp "$d/results.csv" "$tmp/held.before"
rm -f "$tmp/held.go"
flock "$d/.results.lock" sh -c 'touch "$1"; sleep 1' sh "$tmp/held.go" &
holder=$!
while [ ! -e "$tmp/held.go" ]; do sleep 0.05; done
"$TB_BIN" run --suite "$suite" --out "$d" --no-wait 2>"$tmp/nowait.err"
check "--no-wait on a folder in use exits 1" test $? -eq 1
check "and says the folder is in use, not waiting" \
    grep -q "trnbench run: '$d' is in use by another writer of its results.csv (.*); not waiting (--no-wait)" "$tmp/nowait.err"
check "and leaves results.csv as it was" cmp -s "$d/results.csv" "$tmp/held.before"
rm -f "$d/results.csv"
"$TB_BIN" run --suite "$suite" --out "$d" 2>"$tmp/wait.err"
st=$?
kill -0 $holder 2>/dev/null && held=1 || held=0
wait $holder
check "without --no-wait the run waits for the holder and then runs (exit $st)" \
    test $st -eq 0 -a $held -eq 0
check "saying so, and when it goes on" \
    sh -c "grep -q 'is in use by another writer of its results.csv (pid unknown); waiting until it is done' '$tmp/wait.err' && grep -q \"'$d' is free: going on\" '$tmp/wait.err'"
check "its $rows rows written" test "$(tally "$d/results.csv")" = "$rows $rows 1"
# import appends to results.csv too: it waits for the folder the same way
rm -f "$tmp/held.go"
flock "$d/.results.lock" sh -c 'touch "$1"; sleep 1' sh "$tmp/held.go" &
holder=$!
while [ ! -e "$tmp/held.go" ]; do sleep 0.05; done
"$TB_BIN" import --format vllm "$TB_SRCDIR/tests/data/import/vllm-bench-serve.json" \
    --model llama-3.1-8b --target p5.48xlarge --chips 1 --out "$d" >/dev/null 2>"$tmp/import.err"
st=$?
wait $holder
check "import into a folder in use waits, then appends its 8 rows beside the $rows (exit $st)" \
    sh -c "test $st -eq 0 && grep -q 'trnbench import: .* waiting until it is done' '$tmp/import.err' && test \"\$(tail -n +2 '$d/results.csv' | wc -l)\" -eq $((rows + 8))"

# two `make bench` at once: one after the other, each its own folder (small suite, no
# assessment; the built binary, nothing rebuilt)
small="$tmp/small.suite"
head -4 "$suite" >"$small"
bench() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$TB_SRCDIR" -o "$TB_BIN" BIN="$TB_BIN" \
        CUDA_PLUGIN= BENCH_OUT="$tmp/bench" BENCH_SUITE="$small" BENCH_ASSESS= bench
}
bench >"$tmp/bench1.out" 2>&1 &
b1=$!
bench >"$tmp/bench2.out" 2>&1 &
b2=$!
s1=0 s2=0
wait $b1 || s1=$?
wait $b2 || s2=$?
check "two make bench at once both exit 0 ($s1, $s2)" test $s1 -eq 0 -a $s2 -eq 0
n=$(ls -d "$tmp"/bench/run-* 2>/dev/null | wc -l)
check "each in its own run folder ($n folders)" test "$n" -eq 2
whole=0
for f in "$tmp"/bench/run-*; do
    [ "$(tally "$f/results.csv")" = "9 9 1" ] && [ -s "$f/report.html" ] && whole=$((whole + 1))
done
check "each folder holds its 9 rows, none repeated, and its report ($whole of 2)" test $whole -eq 2
check "the second said it waited; nothing left pending" \
    sh -c "cat '$tmp/bench1.out' '$tmp/bench2.out' | grep -q 'another make bench uses' && test ! -e '$tmp/bench/.pending' && test -s '$tmp/bench/latest/report.html'"

# ---- kill -9 at random write points (items 8 and the fault tests) ----
d="$tmp/count"
LD_PRELOAD="$shim" TB_FAULT_MATCH=results.csv TB_FAULT_LOG="$tmp/count.n" \
    "$TB_BIN" run --suite "$suite" --out "$d" 2>/dev/null
ncalls=$(cat "$tmp/count.n" 2>/dev/null || echo 0)
# 12 appends: each a write of the temporary and a rename, at least
check "the shim counts the writes and renames of results.csv ($ncalls)" test "$ncalls" -ge 24
trials=$(awk -v n="$ncalls" 'BEGIN { srand(19); for (i = 0; i < 24; i++) print 1 + int(rand() * n) }')
died=0 whole=0 resumed=0 clean=0 t=0
for k in $trials; do
    t=$((t + 1))
    d="$tmp/kill/$t"
    faulty "$k" kill results.csv "$TB_BIN" run --suite "$suite" --out "$d" 2>/dev/null
    [ $? -eq 137 ] && died=$((died + 1))
    r=$(tally "$d/results.csv")
    [ "${r#* * }" = 1 ] && [ "$(echo "$r" | cut -d' ' -f1)" = "$(echo "$r" | cut -d' ' -f2)" ] &&
        whole=$((whole + 1))
    "$TB_BIN" run --suite "$suite" --out "$d" 2>"$d.err" &&
        [ "$(tally "$d/results.csv")" = "$rows $rows 1" ] && resumed=$((resumed + 1))
    [ -z "$(temps "$d")" ] && clean=$((clean + 1))
done
echo "# kill -9 at calls:" $trials >&2
check "kill -9 at 24 random write points: each run died by it ($died of 24)" test $died -eq 24
check "what it left is whole runs, none repeated ($whole of 24)" test $whole -eq 24
check "a rerun completes the $rows rows, none repeated ($resumed of 24)" test $resumed -eq 24
check "and no temporary is left behind ($clean of 24)" test $clean -eq 24

# the temporary a kill -9 leaves, and who removes it
d="$tmp/stale"
faulty 1 kill results.csv "$TB_BIN" run --suite "$suite" --out "$d" 2>/dev/null
check "kill -9 at the first write leaves results.csv.tmp.PID" test -n "$(temps "$d")"
dead=$(sh -c 'echo $$')
: >"$d/results.csv.tmp.$$"    # a live writer's (this shell's): kept
: >"$d/results.csv.tmp.$dead" # a dead one's
"$TB_BIN" run --suite "$suite" --out "$d" 2>"$tmp/stale.err"
check "the next run removes the dead writers' temporaries and says so" \
    sh -c "test \"\$(ls '$d' | grep -c 'results.csv.tmp')\" -eq 1 && grep -q 'removed .*results.csv.tmp.$dead.*left by a writer that was killed' '$tmp/stale.err'"
check "and keeps a running process's" test -e "$d/results.csv.tmp.$$"
rm -f "$d/results.csv.tmp.$$"
as="$tmp/as"
"$TB_BIN" assess "$TB_SRCDIR/reports/examples/assess-mixed.csv" --out "$as" >/dev/null
: >"$as/assessment.csv.tmp.$dead"
mkdir -p "$as/.report.tmp.$dead" && : >"$as/.report.tmp.$dead/report.md"
"$TB_BIN" assess "$TB_SRCDIR/reports/examples/assess-mixed.csv" --out "$as" >/dev/null
check "assess removes a dead assess's temporary" test ! -e "$as/assessment.csv.tmp.$dead"
"$TB_BIN" report --out "$as" "$tmp/held/results.csv" >/dev/null 2>&1
check "report removes a dead report's scratch folder" test ! -e "$as/.report.tmp.$dead"

# ---- SIGTERM and SIGINT ----
d="$tmp/term"
faulty 1 term results.csv "$TB_BIN" run --suite "$suite" --out "$d" 2>/dev/null
check "SIGTERM while results.csv is written: the run stops by it (exit $?)" test $? -eq 143
check "no temporary left: the signal waited for the rename" test -z "$(temps "$d")"
check "the append it was in is whole (3 rows)" test "$(tally "$d/results.csv")" = "3 3 1"
faulty 5 int results.csv "$TB_BIN" run --suite "$suite" --out "$d" 2>/dev/null
check "SIGINT at a later write: the rerun stops by it (exit $?), no temporary left" \
    test $? -eq 130 -a -z "$(temps "$d")"
"$TB_BIN" run --suite "$suite" --out "$d" 2>"$tmp/term.err"
check "a rerun resumes: the finished runs skipped" grep -q 'already in results, skipped' "$tmp/term.err"
check "and $rows rows, none lost or repeated" test "$(tally "$d/results.csv")" = "$rows $rows 1"
# from outside, at whatever point the run is: 40 runs (about 2 s here), the signal once
# two are in
long="$tmp/long.suite"
{
    echo "suite long"
    for b in 1 2 3 4 5; do for s in 8 16 24 32 40 48 56 64; do
        echo "run model=llama-tiny phase=prefill batch=$b seq_in=$s reps=20 warmup=1"
    done; done
} >"$long"
for sig in TERM INT; do
    d="$tmp/sig$sig"
    # a background job of sh ignores SIGINT: perl puts it back to the default
    perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die' "$TB_BIN" run --suite "$long" --out "$d" \
        2>/dev/null &
    p=$!
    n=0
    while [ "$(cat "$d/results.csv" 2>/dev/null | wc -l)" -lt 7 ] && [ $n -lt 1000 ]; do
        sleep 0.01
        n=$((n + 1))
    done
    kill -$sig $p
    wait $p
    st=$?
    r=$(tally "$d/results.csv")
    "$TB_BIN" run --suite "$long" --out "$d" 2>/dev/null
    check "SIG$sig from outside: stopped (exit $st), results whole ($r), rerun completes 120 rows" \
        sh -c "test $st -ne 0 && test '${r#* * }' = 1 && test \"\$(echo '$r' | cut -d' ' -f1)\" = \"\$(echo '$r' | cut -d' ' -f2)\" && test '$(tally "$d/results.csv")' = '120 120 1' && test -z '$(temps "$d")'"
done

# ---- a full disk (ENOSPC) (item 7) ----
for k in 1 2 3; do
    d="$tmp/full$k"
    mkdir -p "$d"
    for x in csv md html; do echo "old $x" >"$d/assessment.$x"; done
    faulty $k enospc assessment. "$TB_BIN" assess "$TB_SRCDIR/reports/examples/assess-mixed.csv" \
        --out "$d" >/dev/null 2>"$d.err"
    st=$?
    name=$(echo "csv md html" | cut -d' ' -f$k)
    check "assess on a full disk at its output $k: exit 1 ($st), naming assessment.$name" \
        sh -c "test $st -eq 1 && grep -q \"cannot write '$d/assessment.$name' .*No space left on device; none of the 3 files replaced\" '$d.err'"
    check "and its three old outputs are as they were, no temporary left" \
        sh -c "test \"\$(cat '$d/assessment.csv' '$d/assessment.md' '$d/assessment.html')\" = \"\$(printf 'old csv\nold md\nold html')\" && test -z '$(temps "$d")'"
done
d="$tmp/fullrun"
"$TB_BIN" run --suite "$small" --out "$d" 2>/dev/null
cp "$d/results.csv" "$tmp/fullrun.before"
faulty 1 enospc results.csv "$TB_BIN" run --suite "$suite" --out "$d" 2>"$tmp/fullrun.err"
check "run on a full disk: exit 1, naming results.csv" \
    sh -c "test $? -eq 1 && grep -q \"cannot write '$d/results.csv' .*No space left on device\" '$tmp/fullrun.err'"
check "and results.csv as it was, no temporary left" \
    sh -c "cmp -s '$d/results.csv' '$tmp/fullrun.before' && test -z \"\$(ls -a '$d' | grep tmp)\""

# ---- report and assess in one folder (item 9) ----
d="$tmp/both"
"$TB_BIN" assess "$TB_SRCDIR/reports/examples/assess-mixed.csv" --out "$d" >/dev/null
cp "$d/assessment.csv" "$tmp/both.csv"
"$TB_BIN" report --out "$d" "$tmp/held/results.csv" >/dev/null 2>&1
check "report --out D exits 0 beside assess's outputs" test $? -eq 0
check "and leaves the assessment.csv that assess --out D wrote" cmp -s "$d/assessment.csv" "$tmp/both.csv"
"$TB_BIN" report --out "$d" --assess "$TB_SRCDIR/reports/examples/assess-mixed.csv" \
    "$tmp/held/results.csv" >/dev/null 2>&1
"$TB_BIN" report --out "$d" "$tmp/held/results.csv" >/dev/null 2>&1
check "an assessment.csv a report wrote is the report's: the next report without one removes it" \
    test ! -e "$d/assessment.csv"
