#!/bin/sh
# tests/cli/collectives.t: `trnbench collectives` end to end. MPI: real Open MPI jobs of
# 2 and 4 ranks on this host (mpirun, shared memory and TCP over loopback), every
# operation, sizes 8 B to 16 MiB; the values are checked: no wrong element, busbw /
# algbw the operation's factor on every row, latency positive and larger at 16 MiB than
# at the smallest size, the rows' columns. A broken input (TRNBENCH_TEST_COLL_BREAK,
# honoured under TRNBENCH_TEST=1 only) must be found: #wrong > 0, exit 1, no rows.
# Neuron: the stand-in nccom-test (tests/data/neuron/nccom-test/) prints the guide's
# examples; its argv and the parsed rows are checked. NCCL: exit 2 with its reason
# where there is no GPU (a skip), the check where there is one. Reruns: a second run
# into the same folder measures only what results.csv lacks (key: op, bytes, placement,
# backend, link, nodes, ranks), never a row twice; one rank failing on its own
# (TRNBENCH_TEST_RANK_FAIL, tests only) ends the job within 30 s, the sizes finished kept.
. "${TB_SRCDIR:-.}/tests/cli/tap.sh"

tmp=$TB_BUILDDIR/tests/tmp/collectives
rm -rf "$tmp" && mkdir -p "$tmp"
fake=$TB_SRCDIR/tests/data/neuron/nccom-test
echo "1..67"

# ---- usage ----
"$TB_BIN" collectives --backend mpi --op all-sum --out "$tmp/u" 2>"$tmp/err"
check "an unknown --op is a usage error (2)" test $? = 2
check "... naming it" grep -q "unknown operation 'all-sum'" "$tmp/err"
"$TB_BIN" collectives --backend mpi --op all-reduce 2>"$tmp/err"
check "no --out is a usage error" test $? = 2
"$TB_BIN" collectives --backend mpi --op all-reduce --max-bytes 1Q --out "$tmp/u" 2>"$tmp/err"
check "a bad size is a usage error naming the option" \
    sh -c 'test $0 = 2 && grep -q "option .--max-bytes.: .1Q. is not a size" "$1"' $? "$tmp/err"
timeout 20 "$TB_BIN" collectives --backend mpi --op all-reduce --min-bytes 0 --max-bytes 64 \
    --out "$tmp/u" 2>"$tmp/err"
check "--min-bytes 0 (sizes double from it: 0 for ever) is a usage error at once" \
    sh -c 'test $0 = 2 && grep -q "option .--min-bytes.: .0. is not a size in bytes of at least 1" "$1"' $? "$tmp/err"
TRNBENCH_MPI_PLUGIN=$tmp/none.so "$TB_BIN" collectives --backend mpi --op all-reduce \
    --out "$tmp/u" 2>"$tmp/err"
check "no MPI plugin: exit 2 saying why" \
    sh -c 'test $0 = 2 && grep -q "needs MPI: MPI plugin .*none.so.* not found" "$1"' $? "$tmp/err"

# ---- neuron: nccom-test's documented table ----
PATH="$fake:$PATH" TRNBENCH_TEST=1 NCCOM_TEST_ARGV="$tmp/argv" NCCOM_TEST_FIXTURE=allr-2r.txt \
    "$TB_BIN" collectives --backend neuron --op all-reduce --ranks 2 --min-bytes 1K \
    --max-bytes 1G --step-factor 4 --iters 7 --warmup 3 --out "$tmp/n" >"$tmp/out" 2>"$tmp/err"
check "neuron: exit 0 on the guide's 2-rank all-reduce" test $? = 0
check "neuron: nccom-test got its documented argv" \
    test "$(tr '\n' ' ' <"$tmp/argv")" = "-r 2 -N 1 -b 1024 -e 1073741824 -f 4 -n 7 -w 3 -d fp32 -c allr "
v=$(csv_cell "$tmp/n/results.csv" value config=1073741824B/outofplace metric=busbw_gbyte_per_s)
check "neuron: 1 GiB busbw is 1073741824 B / 18930 us = 56.72 GB/s (the guide's 52.83 GiB/s) ($v)" \
    perl -e 'exit !(abs($ARGV[0] - 1073741824 / 18930e3) < 0.001)' "$v"
check "neuron: latency_us is the time printed (18930)" test "$(csv_cell "$tmp/n/results.csv" value \
    config=1073741824B/outofplace metric=latency_us)" = 18930
check "neuron: time(us), a P50 or a mean by the guide's version, fills no mean column" \
    test "$(csv_cell "$tmp/n/results.csv" mean config=1073741824B/outofplace metric=latency_us)" = ""
v=$(csv_cell "$tmp/n/results.csv" notes config=1073741824B/outofplace metric=latency_us)
check "neuron: the notes say the time column, unlabelled, and algbw found in GiB/s" \
    sh -c 'case "$0" in *"unlabelled time(us): the P50 by nccom-test'"'"'s guide up to Neuron 2.27, the mean from 2.28"*"time column time(us); its algbw printed in GiB/s;"*) exit 0;; esac; exit 1' "$v"
check "neuron: 11 sizes x 3 metrics, out of place only" \
    test "$(grep -c ',neuron,' "$tmp/n/results.csv")" = 33
check "neuron: executor, link and ranks recorded" test "$(csv_cell "$tmp/n/results.csv" link \
    executor=neuron ranks_per_node=2 nodes=1 bytes=1024)" = neuronlink
PATH="$fake:$PATH" TRNBENCH_TEST=1 NCCOM_TEST_FIXTURE=allr-2r.txt \
    "$TB_BIN" collectives --backend neuron --op all-reduce --ranks 2 --min-bytes 1K \
    --max-bytes 1G --step-factor 4 --iters 7 --warmup 3 --out "$tmp/n" >/dev/null 2>"$tmp/err"
check "neuron: the same run again adds no row (33 kept; 11 placements said recorded)" \
    sh -c 'test $0 = 0 && test "$(grep -c ",neuron," "$1")" = 33 &&
           grep -q "0 rows in .*(11 placements recorded before: not added again)" "$2"' \
    $? "$tmp/n/results.csv" "$tmp/err"
PATH="$fake:$PATH" TRNBENCH_TEST=1 NCCOM_TEST_FIXTURE=allr-64r-2n.txt "$TB_BIN" collectives \
    --backend neuron --op all-reduce --ranks 64 --nodes 2 --out "$tmp/n64" >/dev/null 2>&1
v=$(csv_cell "$tmp/n64/results.csv" value config=1073741824B/outofplace metric=busbw_gbyte_per_s)
check "neuron: 64 ranks on 2 nodes: busbw = algbw x 126/64 = the guide's 47.09 GiB/s in GB/s ($v)" \
    perl -e 'exit !(abs($ARGV[0] - 47.09 * 1.073741824) < 0.06)' "$v"
PATH="$fake:$PATH" NCCOM_TEST_FIXTURE=allr-2r.txt "$TB_BIN" collectives --backend neuron \
    --op all-reduce --ranks 2 --out "$tmp/nr" >/dev/null 2>"$tmp/err"
check "neuron: the stand-in is refused outside tests (exit 1, no rows)" \
    sh -c 'test $0 = 1 && grep -q "stand-in for trnbench.s own tests" "$1" && test ! -e "$2"' \
    $? "$tmp/err" "$tmp/nr/results.csv"
PATH="$fake:$PATH" TRNBENCH_TEST=1 NCCOM_TEST_FIXTURE=failure.txt "$TB_BIN" collectives \
    --backend neuron --op all-reduce --ranks 2 --out "$tmp/nf" >/dev/null 2>"$tmp/err"
check "neuron: a failed benchmark is exit 1 naming the line, no rows" \
    sh -c 'test $0 = 1 && grep -q "line 3: nccom-test failed" "$1" && test ! -e "$2"' \
    $? "$tmp/err" "$tmp/nf/results.csv"
PATH="$fake:$PATH" TRNBENCH_TEST=1 NCCOM_TEST_FIXTURE=garbled.txt "$TB_BIN" collectives \
    --backend neuron --op all-reduce --ranks 2 --out "$tmp/ng" >/dev/null 2>"$tmp/err"
check "neuron: an algbw that is not size / time is refused" \
    sh -c 'test $0 = 1 && grep -q "line 4: algbw 41.36 is not size / time" "$1"' $? "$tmp/err"
PATH="$fake:$PATH" TRNBENCH_TEST=1 NCCOM_TEST_FIXTURE=repeated.txt "$TB_BIN" collectives \
    --backend neuron --op all-reduce --ranks 2 --out "$tmp/nrep" >/dev/null 2>"$tmp/err"
check "neuron: a size printed twice is refused naming the line, no rows" \
    sh -c 'test $0 = 1 && grep -q "line 5: size 4096 B is not above the line before.s 4096 B" "$1" && test ! -e "$2"' \
    $? "$tmp/err" "$tmp/nrep/results.csv"

# ---- neuron: nccom-test as it prints today (time:avg(us), 10^9 B/s, the JSON report) ----
# the stand-in makes the table for the sizes asked: s bytes in 20 + s / 40000 us
PATH="$fake:$PATH" TRNBENCH_TEST=1 NCCOM_TEST_FORMAT=new NCCOM_TEST_JSON=0 \
    NCCOM_TEST_ARGV="$tmp/argv" "$TB_BIN" collectives --backend neuron --op all-reduce --ranks 2 \
    --min-bytes 1K --max-bytes 1M --step-factor 4 --out "$tmp/nn" >/dev/null 2>"$tmp/err"
check "neuron: exit 0 on the current header time:avg(us) with GB/s" \
    sh -c 'test $0 = 0 || { sed "s/^/# /" "$1" >&2; exit 1; }' $? "$tmp/err"
check "neuron: no --report-to-json-file when --help does not offer it" \
    sh -c '! grep -q report-to-json-file "$0"' "$tmp/argv"
check "neuron: 1 MiB's latency_us is the mean printed, 46.21 us" test "$(csv_cell "$tmp/nn/results.csv" \
    value config=1048576B/outofplace metric=latency_us)" = 46.21
check "neuron: and its mean column holds it (a mean)" test "$(csv_cell "$tmp/nn/results.csv" \
    mean config=1048576B/outofplace metric=latency_us)" = 46.21
v=$(csv_cell "$tmp/nn/results.csv" value config=1048576B/outofplace metric=busbw_gbyte_per_s)
check "neuron: 1 MiB's busbw 1048576 B / 46.21 us = 22.69 GB/s, not GiB/s converted ($v)" \
    perl -e 'exit !(abs($ARGV[0] - 1048576 / 46.21e3) < 0.0001)' "$v"
v=$(csv_cell "$tmp/nn/results.csv" notes config=1048576B/outofplace metric=latency_us)
check "neuron: the notes say the mean, the table and algbw in 10^9 B/s" \
    sh -c 'case "$0" in *"nccom-test'"'"'s time:avg(us), the mean"*"nccom-test'"'"'s table (time column time:avg(us); its algbw printed in GB/s (10^9 B/s);"*) exit 0;; esac; exit 1' "$v"
check "neuron: 6 sizes x 3 metrics" test "$(grep -c ',neuron,' "$tmp/nn/results.csv")" = 18

PATH="$fake:$PATH" TRNBENCH_TEST=1 NCCOM_TEST_FORMAT=old NCCOM_TEST_JSON=0 "$TB_BIN" collectives \
    --backend neuron --op all-reduce --ranks 2 --min-bytes 1K --max-bytes 1M --step-factor 4 \
    --out "$tmp/no" >/dev/null 2>"$tmp/err"
rc=$?
v=$(csv_cell "$tmp/no/results.csv" value config=1048576B/outofplace metric=latency_us)
w=$(csv_cell "$tmp/no/results.csv" notes config=1048576B/outofplace metric=latency_us)
check "neuron: the older header from the same stand-in: 1 MiB in 46 us, GiB/s found" \
    sh -c 'test $0 = 0 && test "$1" = 46 && case "$2" in *"algbw printed in GiB/s;"*) ;; *) exit 1;; esac' \
    $rc "$v" "$w"

mkdir -p "$tmp/rep"
PATH="$fake:$PATH" TMPDIR="$tmp/rep" TRNBENCH_TEST=1 NCCOM_TEST_FORMAT=stats \
    NCCOM_TEST_ARGV="$tmp/argv" "$TB_BIN" collectives --backend neuron --op all-gather --ranks 4 \
    --min-bytes 1K --max-bytes 1M --step-factor 4 --out "$tmp/ns" >/dev/null 2>"$tmp/err"
check "neuron: --stats columns and the JSON report: exit 0" \
    sh -c 'test $0 = 0 || { sed "s/^/# /" "$1" >&2; exit 1; }' $? "$tmp/err"
check "neuron: the report asked for in TMPDIR, then removed; no progress animation" \
    sh -c 'grep -qx -- "--report-to-json-file" "$0" && grep -q "^$1/trnbench-nccom-" "$0" &&
           grep -qx -- "--non-interactive" "$0" &&
           test -z "$(ls -A "$1")"' "$tmp/argv" "$tmp/rep"
v=$(csv_cell "$tmp/ns/results.csv" notes config=1048576B/outofplace metric=latency_us)
check "neuron: the rows say they come from the JSON report" \
    sh -c 'case "$0" in *"nccom-test'"'"'s JSON report (time column time:avg(us); its algbw printed in GB/s"*) exit 0;; esac; exit 1' "$v"
check "neuron: the report's p99 fills the p99 column (1.5 x 46.21)" \
    test "$(csv_cell "$tmp/ns/results.csv" p99 config=1048576B/outofplace metric=latency_us)" = 69.32

PATH="$fake:$PATH" TRNBENCH_TEST=1 NCCOM_TEST_FORMAT=new NCCOM_TEST_ARGV="$tmp/argv" \
    "$TB_BIN" collectives --backend neuron --op all-to-all --ranks 4 --min-bytes 4K \
    --max-bytes 64K --step-factor 4 --out "$tmp/na" >/dev/null 2>"$tmp/err"
check "neuron: all-to-all runs nccom-test's alltoall" \
    sh -c 'test $0 = 0 && test "$(tail -1 "$1")" = alltoall' $? "$tmp/argv"
v=$(csv_cell "$tmp/na/results.csv" value config=65536B/outofplace metric=busbw_gbyte_per_s)
check "neuron: all-to-all's busbw is algbw x 3/4 ($v)" \
    perl -e 'exit !(abs($ARGV[0] - 65536 / 21.64e3 * 0.75) < 0.0001)' "$v"

# the LNC nccom-test's ranks were counted at: neuron-ls's, else guessed, said which
mkdir -p "$tmp/lsbin"
printf '#!/bin/sh\ncat "%s"\n' "$TB_SRCDIR/tests/data/neuron/ls-trn2.json" >"$tmp/lsbin/neuron-ls"
chmod +x "$tmp/lsbin/neuron-ls"
PATH="$fake:$tmp/lsbin:$PATH" TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$TB_SRCDIR/tests/data/platform_trn2" \
    NCCOM_TEST_FORMAT=new "$TB_BIN" collectives --backend neuron --op all-reduce --ranks 8 \
    --min-bytes 1K --max-bytes 4K --out "$tmp/nl" >/dev/null 2>"$tmp/err"
check "neuron: with neuron-ls, the rows say its LNC" \
    sh -c 'test $0 = 0 && grep -q "ranks are logical NeuronCores at LNC 2 as neuron-ls states it (logical_neuroncore_config)" "$1"' \
    $? "$tmp/nl/results.csv"
PATH="$fake:$PATH" TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$TB_SRCDIR/tests/data/platform_trn2" \
    NCCOM_TEST_FORMAT=new "$TB_BIN" collectives --backend neuron --op all-reduce --ranks 8 \
    --min-bytes 1K --max-bytes 4K --out "$tmp/ng2" >/dev/null 2>"$tmp/err"
check "neuron: without neuron-ls, the LNC guessed and said so" \
    sh -c 'test $0 = 0 && grep -q "ranks are logical NeuronCores at LNC 2 guessed: the Neuron SDK.s default on Trainium2" "$1"' \
    $? "$tmp/ng2/results.csv"

# ---- mpi ----
. "$TB_SRCDIR/tests/cli/mpi.sh"

# verify FILE OUT OP NP: the rows of OP at NP ranks and its table
verify() {
    perl -e '
        my ($file, $out, $op, $np) = @ARGV;
        my $f = $op eq "all-reduce" ? 2 * ($np - 1) / $np : $op eq "sendrecv" ? 1 : ($np - 1) / $np;
        my @bad;
        open my $t, "<", $out or die; my $lines = 0;
        while (<$t>) { next if /^#/; my @c = split; next unless @c >= 13; $lines++;
            push @bad, "wrong values: $_" if $c[8] ne "0" || ($c[12] ne "0" && $c[12] ne "N/A") }
        push @bad, "no table" unless $lines;
        sub row { my @o; my $s = shift; chomp $s;
            while (length $s) { if ($s =~ s/^"((?:[^"]|"")*)"(,|$)//) { (my $x = $1) =~ s/""/"/g; push @o, $x }
                                elsif ($s =~ s/^([^,]*)(,|$)//) { push @o, $1 } else { last } }
            return @o }
        open my $h, "<", $file or die; my @h = row(scalar <$h>); my %c; @c{@h} = 0 .. $#h;
        my (%v, %lat, $n);
        while (<$h>) { my @r = row($_); next unless $r[$c{workload}] eq "collective/$op" && $r[$c{run_id}] =~ /n1x$np$/;
            $n++; $v{$r[$c{config}]}{$r[$c{metric}]} = $r[$c{value}];
            push @bad, "columns: $_" unless $r[$c{nodes}] eq "1" && $r[$c{ranks_per_node}] eq $np
                && $r[$c{link}] eq "shm" && $r[$c{phase}] eq "collective" && $r[$c{executor}] eq "mpi"
                && $r[$c{config}] eq "$r[$c{bytes}]B/" . ($r[$c{config}] =~ /inplace$/ && $r[$c{config}] !~ /outof/ ? "inplace" : "outofplace");
            $lat{$r[$c{bytes}]} = $r[$c{min}] if $r[$c{metric}] eq "latency_us" && $r[$c{config}] =~ /outofplace/ }
        push @bad, "no rows" unless $n;
        for my $k (sort keys %v) { my $x = $v{$k};
            push @bad, "$k: missing metric" unless defined $x->{busbw_gbyte_per_s} && defined $x->{algbw_gbyte_per_s} && defined $x->{latency_us};
            next unless defined $x->{latency_us};
            push @bad, "$k: latency $x->{latency_us} not > 0" unless $x->{latency_us} > 0;
            my $r = $x->{busbw_gbyte_per_s} / $x->{algbw_gbyte_per_s};
            push @bad, "$k: busbw/algbw $r, factor $f" unless abs($r - $f) < 1e-4 * $f }
        # the fastest iteration at 16 MiB against the fastest at the sizes up to 1 KiB (the
        # fastest of them: on a shared machine one size can lose every iteration to the
        # scheduler; at 1 MiB, ~100 us, a loaded 2-core CI machine lost that race: the
        # best of the small sizes was a scheduler slice, not a message)
        my @s = sort { $a <=> $b } keys %lat; my $small;
        for (grep { $_ <= 1024 } @s) { $small = $lat{$_} if !defined $small || $lat{$_} < $small }
        push @bad, "latency at $s[-1] B ($lat{$s[-1]}) not above the sizes up to 1 KiB ($small)" unless @s > 2 && defined $small && $lat{$s[-1]} > $small;
        print STDERR "# $_\n" for @bad; exit(@bad ? 1 : 0)' "$@"
}

# run_op NP OP: one job, then its table and rows verified
run_op() {
    mpi "$1" --mca btl self,vader "$TB_BIN" collectives --backend mpi --op "$2" --max-bytes 16M \
        --iters 8 --warmup 2 --out "$tmp/mpi" >"$tmp/$2.$1.out" 2>"$tmp/$2.$1.err" ||
        { sed 's/^/# /' "$tmp/$2.$1.err" >&2; return 1; }
    verify "$tmp/mpi/results.csv" "$tmp/$2.$1.out" "$2" "$1"
}
for np in 2 4; do
    for op in all-reduce all-gather reduce-scatter all-to-all sendrecv; do
        if [ -n "$mpi_skip" ]; then skip_n 1 "$mpi_skip"; continue; fi
        check "mpi $np ranks $op: exit 0, #wrong 0, busbw/algbw = factor, latency rises, columns" \
            run_op "$np" "$op"
    done
done

if [ -n "$mpi_skip" ]; then skip_n 9 "$mpi_skip"; else
    n=$(awk '!/^#/ && NF >= 13' "$tmp/all-reduce.2.out" | wc -l)
    check "mpi: 8 B to 16 MiB is 22 sizes in the table ($n)" test "$n" = 22
    check "mpi: all-reduce at 2 ranks: 22 sizes x 2 placements x 4 metrics (the host's triad with them)" \
        test "$(grep -c 'collective/all-reduce/.*/mpi/shm/n1x2,' "$tmp/mpi/results.csv")" = 176
    # the host's memory bandwidth is measured once, before the sweep, and recorded with
    # every size: the model's comparison uses the run's host, not the reader's
    hm=$(perl -ne 'next unless m{^collective/all-reduce/[^,]*/mpi/shm/n1x2,} &&
            /,host_mem_gbyte_per_s,([^,]+),GB\/s,([^,]+),/;
        $n++; $v{$1} = 1; $bad++ if $2 ne "5";
        END { my @k = keys %v; printf "%d %d %s %d\n", $n, scalar @k, $k[0] // 0, $bad }' "$tmp/mpi/results.csv")
    check "mpi: shm rows carry the host's triad: 44 rows (one per size and placement), one value, > 0.1 GB/s, n 5 ($hm)" \
        sh -c 'set -- $0; test "$1" = 44 && test "$2" = 1 && test "$4" = 0 && awk -v v="$3" "BEGIN { exit !(v > 0.1 && v < 10000) }"' "$hm"
    check "mpi: sendrecv has out-of-place rows and no in-place ones" \
        sh -c 'grep -q "collective/sendrecv/.*/outofplace/mpi" "$0" && ! grep -q "collective/sendrecv/.*/inplace/mpi" "$0"' "$tmp/mpi/results.csv"
    check "mpi: the software is Open MPI's version" \
        sh -c 'test "$(csv_cell "$0" blas executor=mpi bytes=8 2>/dev/null || true)" != "" ||
               grep -q "Open MPI v" "$0"' "$tmp/mpi/results.csv"
    # TCP over loopback: the link says so
    mpi 2 --mca btl self,tcp "$TB_BIN" collectives --backend mpi --op all-reduce --max-bytes 64K \
        --iters 4 --warmup 1 --out "$tmp/tcp" >/dev/null 2>&1
    check "mpi over btl tcp on one host: link loopback" \
        test "$(csv_cell "$tmp/tcp/results.csv" link metric=latency_us bytes=65536)" = loopback
    # a broken input must be found
    TRNBENCH_TEST=1 TRNBENCH_TEST_COLL_BREAK=1 mpi 2 -x TRNBENCH_TEST -x TRNBENCH_TEST_COLL_BREAK \
        "$TB_BIN" collectives --backend mpi --op all-reduce --max-bytes 1K --iters 2 --warmup 1 \
        --out "$tmp/broken" >"$tmp/broken.out" 2>"$tmp/broken.err"
    rc=$?
    check "a broken reduction: exit 1" test $rc = 1
    w=$(awk '!/^#/ && NF >= 13 { s += $9 + $13 } END { print s + 0 }' "$tmp/broken.out")
    check "a broken reduction: #wrong > 0 in the table ($w), no rows" \
        sh -c 'test "$0" -gt 0 && ! grep -q ",mpi," "$1" 2>/dev/null' "$w" "$tmp/broken/results.csv"
    TRNBENCH_TEST_COLL_BREAK=1 mpi 2 -x TRNBENCH_TEST_COLL_BREAK "$TB_BIN" collectives --backend mpi \
        --op all-reduce --max-bytes 64 --iters 2 --warmup 1 --out "$tmp/nobreak" >/dev/null 2>"$tmp/nobreak.err"
    check "TRNBENCH_TEST_COLL_BREAK outside tests: ignored (said), the run passes" \
        sh -c 'test $0 = 0 && grep -q "TRNBENCH_TEST_COLL_BREAK ignored" "$1"' $? "$tmp/nobreak.err"
fi

# ---- a rerun resumes: what DIR/results.csv holds is not measured again ----
# rows KEY-COLUMNS: lines of results.csv, and how many keys (run id + metric) repeat
dups() { perl -e 'my %n; open my $f, "<", $ARGV[0] or die; <$f>;
    while (<$f>) { my ($id) = /^([^,]*)/; my ($m) = /,((?:busbw|algbw|host_mem)_gbyte_per_s|latency_us),/; $n{"$id $m"}++ }
    print scalar(grep { $_ > 1 } values %n), "\n"' "$1"; }
rows() { grep -c ',collective,' "$1"; }
if [ -n "$mpi_skip" ]; then skip_n 10 "$mpi_skip"; else
    res=$tmp/resume
    coll2() { # ARGS...: 2 ranks, all-reduce into $res
        mpi 2 --mca btl self,vader "$TB_BIN" collectives --backend mpi --op all-reduce --iters 2 \
            --warmup 1 --out "$res" "$@"
    }
    coll2 --max-bytes 1K >"$tmp/r1.out" 2>"$tmp/r1.err"
    check "resume: 8 B..1 KiB first: 8 sizes x 2 placements x 4 metrics = 64 rows ($(rows "$res/results.csv"))" \
        sh -c 'test $0 = 0 && test "$1" = 64' $? "$(rows "$res/results.csv")"
    coll2 --max-bytes 64K >"$tmp/r2.out" 2>"$tmp/r2.err"
    check "resume: then 8 B..64 KiB adds only the 6 sizes missing (48 rows, 112 in all)" \
        sh -c 'test $0 = 0 && grep -q "48 rows in" "$1" && test "$2" = 112' $? "$tmp/r2.err" \
        "$(rows "$res/results.csv")"
    check "resume: ... its table has the 6 new sizes and says 8 of 14 were recorded" \
        sh -c 'test "$(awk "!/^#/ && NF >= 13" "$0" | wc -l)" = 6 &&
               awk "!/^#/ && NF >= 13 { print \$1 }" "$0" | head -1 | grep -qx 2048 &&
               grep -q "Already recorded     : 8 of 14 sizes" "$0"' "$tmp/r2.out"
    cp "$res/results.csv" "$tmp/r2.csv"
    coll2 --max-bytes 64K >"$tmp/r3.out" 2>"$tmp/r3.err"
    check "resume: the same run again: exit 0, 0 rows, results.csv byte for byte the same" \
        sh -c 'test $0 = 0 && grep -q "0 rows in" "$1" && cmp -s "$2" "$3"' $? "$tmp/r3.err" \
        "$tmp/r2.csv" "$res/results.csv"
    check "resume: no key (run id, metric) twice ($(dups "$res/results.csv"))" \
        test "$(dups "$res/results.csv")" = 0
    # another link is another measurement: recorded beside, not skipped
    mpi 2 --mca btl self,vader "$TB_BIN" collectives --backend mpi --op all-reduce --iters 2 \
        --warmup 1 --max-bytes 64 --link tcp --out "$res" >/dev/null 2>"$tmp/r4.err"
    check "resume: the same sizes stated on another link (tcp) are measured: 32 rows more" \
        sh -c 'test $0 = 0 && test "$1" = 144 && grep -q "collective/all-reduce/8B/inplace/mpi/tcp/n1x2," "$2"' \
        $? "$(rows "$res/results.csv")" "$res/results.csv"

    # one rank fails on its own (TRNBENCH_TEST_RANK_FAIL=3: rank 1 at its third size):
    # the job ends (MPI_Abort) instead of rank 0 waiting in the collective for ever; the
    # two sizes finished stay, a rerun adds the rest
    fres=$tmp/rankfail
    t0=$(date +%s)
    TRNBENCH_TEST=1 TRNBENCH_TEST_RANK_FAIL=3 mpi_timeout=120 mpi 2 --mca btl self,vader \
        -x TRNBENCH_TEST -x TRNBENCH_TEST_RANK_FAIL "$TB_BIN" collectives --backend mpi \
        --op all-gather --max-bytes 64K --iters 2 --warmup 1 --out "$fres" >"$tmp/f.out" 2>"$tmp/f.err"
    rc=$?
    secs=$(($(date +%s) - t0))
    check "rank 1 fails at its 3rd size: the job ends in under 30 s ($secs s), exit non-zero ($rc)" \
        sh -c 'test $0 -lt 30 && test $1 != 124 && test $1 != 0' "$secs" "$rc"
    check "... rank 1 says why (size 3, 32 B) and that it ends the job" \
        sh -c 'grep -q "rank 1: TRNBENCH_TEST_RANK_FAIL: rank 1 fails on its own at its size 3 (32 B)" "$0" &&
               grep -q "rank 1 ends the job (MPI_Abort)" "$0"' "$tmp/f.err"
    check "... results.csv holds the 2 sizes finished (8 B, 16 B: 16 rows), nothing of 32 B" \
        sh -c 'test "$2" = 16 && ! grep -q "/32B/" "$0" && test -z "$(ls "$1" | grep -v "^results.csv$")"' \
        "$fres/results.csv" "$fres" "$(rows "$fres/results.csv")"
    mpi 2 --mca btl self,vader "$TB_BIN" collectives --backend mpi --op all-gather --max-bytes 64K \
        --iters 2 --warmup 1 --out "$fres" >/dev/null 2>"$tmp/f2.err"
    check "... the rerun adds the 12 sizes left (96 rows; 112 in all, no key twice)" \
        sh -c 'test $0 = 0 && grep -q "96 rows in" "$1" && test "$2" = 112 && test "$3" = 0' $? \
        "$tmp/f2.err" "$(rows "$fres/results.csv")" "$(dups "$fres/results.csv")"
fi

# ---- nccl ----
if [ -n "$mpi_skip" ]; then skip_n 2 "$mpi_skip"; else
    mpi 1 "$TB_BIN" collectives --backend nccl --op all-reduce --max-bytes 1M --iters 4 --warmup 1 \
        --out "$tmp/nccl" >"$tmp/nccl.out" 2>"$tmp/nccl.err"
    rc=$?
    if [ $rc = 2 ]; then
        why=$(grep -m1 'backend nccl' "$tmp/nccl.err" | sed 's/.*backend nccl: //')
        check "nccl without a usable GPU: exit 2 with the reason ($why)" test -n "$why"
        skip_n 1 "NCCL: $why"
    else
        check "nccl: exit 0" test $rc = 0
        check "nccl: no wrong value" sh -c '! grep -q FAILED "$0"' "$tmp/nccl.out"
    fi
fi
