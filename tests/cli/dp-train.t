#!/bin/sh
# tests/cli/dp-train.t: `trnbench train-dp`, data-parallel training of the CPU Llama engine
# over MPI, end to end: real Open MPI jobs of 1 and 2 ranks on this host (mpirun, shared
# memory) on llama-tiny with the same global batch (4 sequences of 16 tokens, 3 steps).
# The 2-rank losses must equal the 1-rank ones within a relative 1e-5 at every step (fp32
# summation order: each rank's mean over its half, then the mean of the two, against one
# mean over all); the loss must fall; a wrong gradient (TRNBENCH_TEST_DP_BREAK, honoured
# under TRNBENCH_TEST=1 only: rank 1 keeps its own gradient instead of the mean) must
# make the losses differ beyond that tolerance, so the comparison can fail; the rows
# (provenance, nodes, ranks_per_node, the loss and tokens/s printed, the scaling
# efficiency from the 1-rank figure) are checked. A rank that fails on its own
# (TRNBENCH_TEST_RANK_FAIL=2, test-only: rank 1 fails at step 2) must end the whole job
# through MPI_Abort within 30 s (it used to hang: rank 0 waits in the all-reduce), exit
# non-zero with the reason on stderr, and leave the results folder as it was; a rank
# killed (TRNBENCH_TEST_RANK_KILL=2: SIGKILL at step 2) likewise, through mpirun.
. "${TB_SRCDIR:-.}/tests/cli/tap.sh"

tmp=$TB_BUILDDIR/tests/tmp/dp-train
rm -rf "$tmp" && mkdir -p "$tmp"
echo "1..20"

"$TB_BIN" train-dp --model llama-tiny --seq 16 2>"$tmp/err"
check "no --batch is a usage error (2)" \
    sh -c 'test $0 = 2 && grep -q "are required" "$1"' $? "$tmp/err"
TRNBENCH_MPI_PLUGIN=$tmp/none.so "$TB_BIN" train-dp --model llama-tiny --batch 4 --seq 16 \
    2>"$tmp/err"
check "no MPI plugin: exit 2 saying why" \
    sh -c 'test $0 = 2 && grep -q "needs MPI: MPI plugin .*none.so.* not found" "$1"' $? "$tmp/err"

. "$TB_SRCDIR/tests/cli/mpi.sh"
if [ -n "$mpi_skip" ]; then skip_n 18 "$mpi_skip"; exit 0; fi

# one BLAS thread a rank: 2 ranks on a 2-core machine are not oversubscribed
export OPENBLAS_NUM_THREADS=1
mpi_dp() { # NP ARGS...: mpi over shared memory, the BLAS setting passed on
    np=$1
    shift
    mpi "$np" --mca btl self,vader -x OPENBLAS_NUM_THREADS "$@"
}
dp() { # NP [TRAIN-DP ARGS...]; $mpi_x: more mpirun arguments (unquoted words)
    np=$1
    shift
    # shellcheck disable=SC2086
    mpi_dp "$np" $mpi_x "$TB_BIN" train-dp --model llama-tiny --batch 4 --seq 16 --steps 3 "$@"
}
mpi_x=
losses() { awk '$1 == "step" { print $4 }' "$1" | tr '\n' ' '; }
# agree A B: every step's loss within a relative 1e-5
agree() {
    perl -e 'my @a = split " ", $ARGV[0]; my @b = split " ", $ARGV[1];
        exit 1 unless @a == 3 && @b == 3;
        for (0 .. 2) { exit 1 unless abs($a[$_] - $b[$_]) <= 1e-5 * abs($a[$_]) } exit 0' "$1" "$2"
}

dp 1 >"$tmp/1.out" 2>"$tmp/1.err"
check "1 rank: exit 0" sh -c 'test $0 = 0 || { sed "s/^/# /" "$1"; exit 1; }' $? "$tmp/1.err"
dp 2 >"$tmp/2.out" 2>"$tmp/2.err"
check "2 ranks: exit 0" sh -c 'test $0 = 0 || { sed "s/^/# /" "$1"; exit 1; }' $? "$tmp/2.err"
l1=$(losses "$tmp/1.out")
l2=$(losses "$tmp/2.out")
check "2 ranks' losses = 1 rank's within 1e-5 relative at each of 3 steps ($l2 / $l1)" \
    agree "$l1" "$l2"
check "2 ranks: the loss falls over the 3 steps ($l2)" \
    perl -e 'my @l = split " ", $ARGV[0]; exit !(@l == 3 && $l[2] < $l[1] && $l[1] < $l[0])' "$l2"

# a wrong gradient must be found
mpi_x="-x TRNBENCH_TEST -x TRNBENCH_TEST_DP_BREAK" TRNBENCH_TEST=1 TRNBENCH_TEST_DP_BREAK=1 \
    dp 2 >"$tmp/b.out" 2>"$tmp/b.err"
lb=$(losses "$tmp/b.out")
same=1
agree "$lb" "$l1" || same=0
check "rank 1 without the all-reduce: the losses differ from 1 rank's ($lb / $l1)" \
    test "$(echo "$lb" | wc -w)" = 3 -a "$same" = 0
mpi_x="-x TRNBENCH_TEST_DP_BREAK" TRNBENCH_TEST_DP_BREAK=1 dp 2 >"$tmp/n.out" 2>"$tmp/n.err"
same=0
agree "$(losses "$tmp/n.out")" "$l1" && same=1
check "TRNBENCH_TEST_DP_BREAK outside tests: ignored (said), the losses agree" \
    sh -c 'grep -q "TRNBENCH_TEST_DP_BREAK ignored" "$0" && test "$1" = 1' "$tmp/n.err" "$same"

mpi_dp 2 "$TB_BIN" train-dp --model llama-tiny --batch 3 --seq 16 >/dev/null 2>"$tmp/err"
check "a batch that is not a multiple of the ranks: exit 2 saying so" \
    sh -c 'test $0 = 2 && grep -q "not a multiple of the 2 ranks" "$1"' $? "$tmp/err"

# rows: the 2-rank run again with the 1-rank throughput as its baseline
base=$(awk '$1 == "ranks" { print $10 }' "$tmp/1.out")
dp 2 --baseline-tokens-per-s "$base" --out "$tmp/res" >"$tmp/3.out" 2>"$tmp/3.err"
check "2 ranks with --out: exit 0, rows said" \
    sh -c 'test $0 = 0 && grep -q "3 rows in" "$1"' $? "$tmp/3.err"
csv=$tmp/res/results.csv
tps=$(awk '$1 == "ranks" { print $10 }' "$tmp/3.out")
eff=$(awk '$1 == "ranks" { print $12 }' "$tmp/3.out")
v=$(csv_cell "$csv" value metric=train_tokens_per_s)
check "row train_tokens_per_s = the printed figure ($v, $tps), positive" \
    perl -e 'exit !($ARGV[0] > 0 && abs($ARGV[0] - $ARGV[1]) <= 1e-3 * $ARGV[0])' "$v" "$tps"
v=$(csv_cell "$csv" value metric=loss)
check "row loss = the last step's loss ($v)" \
    perl -e 'my @l = split " ", $ARGV[1]; exit !(@l == 3 && $l[2] > 0 && abs($ARGV[0] - $l[2]) <= 1e-6 * $l[2])' "$v" \
    "$(losses "$tmp/3.out")"
v=$(csv_cell "$csv" value metric=scaling_efficiency)
check "row scaling_efficiency = tokens/s / (2 x the 1-rank $base) ($v, printed $eff)" \
    perl -e 'my $e = $ARGV[1] / (2 * $ARGV[2]); exit !($ARGV[0] > 0 && abs($ARGV[0] - $e) <= 1e-3 * $e)' \
    "$v" "$tps" "$base"
check "rows: provenance measured, phase train, nodes 1, ranks_per_node 2, ranks 2" \
    test "$(csv_cell "$csv" provenance metric=loss phase=train nodes=1 ranks_per_node=2 ranks=2)" = measured

# one rank fails on its own at step 2: the job ends, nothing written
cp "$csv" "$tmp/before.csv"
ls -A "$tmp/res" >"$tmp/before.ls"
t0=$(date +%s)
TRNBENCH_TEST=1 TRNBENCH_TEST_RANK_FAIL=2 mpi_x="-x TRNBENCH_TEST -x TRNBENCH_TEST_RANK_FAIL" \
    mpi_timeout=120 dp 2 --out "$tmp/res" >"$tmp/fail.out" 2>"$tmp/fail.err"
rc=$?
secs=$(($(date +%s) - t0))
check "rank 1 fails at step 2: the job ends in under 30 s ($secs s, exit $rc)" \
    sh -c 'test $0 -lt 30 && test $1 != 124' "$secs" "$rc"
check "... with a non-zero exit status ($rc)" test "$rc" -ne 0
check "... rank 1 says why and that it ends the job" \
    sh -c 'grep -q "rank 1: step 2: TRNBENCH_TEST_RANK_FAIL: rank 1 fails on its own" "$0" &&
           grep -q "rank 1 ends the job (MPI_Abort)" "$0"' "$tmp/fail.err"
check "... results.csv and the folder unchanged (no row, no temporary)" \
    sh -c 'cmp -s "$0" "$1" && test "$(ls -A "$2")" = "$(cat "$3")"' \
    "$tmp/before.csv" "$csv" "$tmp/res" "$tmp/before.ls"

# rank 1 killed (SIGKILL) at step 2: Open MPI's launcher ends the job; nothing written
t0=$(date +%s)
TRNBENCH_TEST=1 TRNBENCH_TEST_RANK_KILL=2 mpi_x="-x TRNBENCH_TEST -x TRNBENCH_TEST_RANK_KILL" \
    mpi_timeout=120 dp 2 --out "$tmp/res" >"$tmp/kill.out" 2>"$tmp/kill.err"
rc=$?
secs=$(($(date +%s) - t0))
check "rank 1 killed at step 2: the job ends in under 30 s ($secs s), exit non-zero ($rc)" \
    sh -c 'test $0 -lt 30 && test $1 != 124 && test $1 != 0 && grep -q "TRNBENCH_TEST_RANK_KILL" "$2"' \
    "$secs" "$rc" "$tmp/kill.err"
check "... results.csv and the folder unchanged" \
    sh -c 'cmp -s "$0" "$1" && test "$(ls -A "$2")" = "$(cat "$3")"' \
    "$tmp/before.csv" "$csv" "$tmp/res" "$tmp/before.ls"
