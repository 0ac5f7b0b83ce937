#!/bin/sh
# tests/cli/slurm.t: `trnbench run --slurm` end to end on a one-machine Slurm cluster
# (tests/slurm/cluster.sh: slurmctld and slurmd on loopback, started here, stopped at
# the end): a three-run suite submitted with sbatch as one node of two tasks, the job
# waited for (bounded), the assembled results.csv checked (rows, no duplicates, both
# ranks, the job's provenance, positive values); submitted again into the same folder,
# nothing is added; and the checks that stop a value before it reaches a script or sbatch
# (a hostile partition name: exit 2, nothing written, nothing submitted). Without
# slurmctld/slurmd, or when the cluster does not come up, the whole test skips with why.
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
export TRNBENCH_CUDA=0
PATH="$PATH:/usr/sbin:/sbin"
for p in slurmctld slurmd sbatch sinfo squeue; do
    if ! command -v $p >/dev/null 2>&1; then
        echo "1..0 # SKIP $p not installed (Debian: apt-get install slurm-wlm)"
        exit 0
    fi
done
tmp="$TB_BUILDDIR/tests/tmp/cli_slurm"
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
tmp=$(cd "$tmp" && pwd)
cluster="$TB_SRCDIR/tests/slurm/cluster.sh"
if ! sh "$cluster" start "$tmp/cluster" >"$tmp/cluster.out" 2>&1; then
    echo "1..0 # SKIP the one-machine Slurm cluster did not come up: $(tail -n 3 "$tmp/cluster.out" | tr '\n' ' ')"
    sh "$cluster" stop "$tmp/cluster" >/dev/null 2>&1
    exit 0
fi
trap 'sh "$cluster" stop "$tmp/cluster" >/dev/null 2>&1' EXIT INT TERM
export SLURM_CONF="$tmp/cluster/slurm.conf"

# rows_of FILE: "run_id metric rank node slurm_job nodes ranks value" of every row
rows_of() {
    perl -e '
        sub row { my @o; my $s = shift; chomp $s;
            while (length $s) { if ($s =~ s/^"((?:[^"]|"")*)"(,|$)//) { (my $x = $1) =~ s/""/"/g; push @o, $x }
                                elsif ($s =~ s/^([^,]*)(,|$)//) { push @o, $1 } else { last } }
            return @o }
        open my $f, "<", shift or die; my @h = row(scalar <$f>); my %c; @c{@h} = 0 .. $#h;
        while (<$f>) { my @r = row($_);
            print join(" ", map { $r[$c{$_}] } qw(run_id metric rank node slurm_job nodes ranks value)), "\n" }' "$1"
}
# wait_job ID: until squeue no longer lists the job (at most 180 s); 0 when it left
wait_job() { sh "$cluster" wait "$tmp/cluster" "$1" 180; }

echo "1..19"

suite="$tmp/tiny.suite"
cat >"$suite" <<'S'
suite tiny
run model=llama-tiny phase=prefill batch=2 seq_in=32 reps=3 warmup=1
run model=llama-tiny phase=decode batch=2 seq_in=32 seq_out=8 reps=3 warmup=1
run model=llama-tiny phase=train batch=2 seq_in=32 reps=3 warmup=1
S
out="$tmp/out"

# ---- submitted, run, assembled ----
job=$("$TB_BIN" run --slurm --nodes 1 --ntasks-per-node 2 --partition debug --time 10 \
    --executor cpu --suite "$suite" --out "$out" 2>"$tmp/submit.err")
check "submission exits 0" test $? -eq 0
check "it prints the job id ($job)" sh -c "echo '$job' | grep -qx '[0-9][0-9]*'"
check "the job id recorded in the folder" test "$(tail -n 1 "$out/slurm_job")" = "$job"
check "the script's one srun line runs this binary's ranks" \
    test "$(grep -c "^srun --kill-on-bad-exit=0 '$(cd "$(dirname "$TB_BIN")" && pwd)/trnbench' run --slurm-rank" "$out/trnbench.sbatch")" -eq 1
wait_job "$job"
check "the job ended within 180 s" test $? -eq 0
res="$out/results.csv"
rows_of "$res" >"$tmp/rows" 2>/dev/null
# prefill 3 metrics, decode 4, train 4
check "11 rows: every metric of the 3 runs" test "$(wc -l <"$tmp/rows")" -eq 11
check "no run and metric twice" test "$(cut -d' ' -f1,2 "$tmp/rows" | sort -u | wc -l)" -eq 11
check "runs 1 and 3 from rank 0 (i mod 2)" \
    test "$(grep -c -e '^llama-tiny/prefill/[^ ]* [^ ]* 0 ' -e '^llama-tiny/train/[^ ]* [^ ]* 0 ' "$tmp/rows")" -eq 7
check "run 2 from rank 1" test "$(grep -c '^llama-tiny/decode/[^ ]* [^ ]* 1 ' "$tmp/rows")" -eq 4
check "every row: node localhost, job $job, 1 node, 2 ranks" \
    test "$(grep -c " localhost $job 1 2 " "$tmp/rows")" -eq 11
check "every value > 0" sh -c "awk '{ if (!(\$8 > 0)) bad = 1 } END { exit bad }' '$tmp/rows'"
check "both tasks left a done marker" \
    sh -c "grep -q 'rank 0 of 2 node localhost: 2 measured' '$out/ranks/done.0' && grep -q 'rank 1 of 2 node localhost: 1 measured' '$out/ranks/done.1'"
check "the job's log says what was assembled" \
    grep -q "11 rows of 3 runs from 2 rank files added" "$out/slurm-$job.out"
check "results.csv reads as results (trnbench report takes it)" \
    sh -c "'$TB_BIN' report --out '$tmp/report' '$res' >'$tmp/report.log' 2>&1"

# ---- submitted again into the same folder: resumes, adds nothing ----
cp "$res" "$tmp/before.csv"
job2=$("$TB_BIN" run --slurm --nodes 1 --ntasks-per-node 2 --executor cpu --suite "$suite" \
    --out "$out" 2>"$tmp/submit2.err")
wait_job "$job2"
check "a second job ($job2) ends" test $? -eq 0
check "it measured nothing: every run already recorded" \
    sh -c "grep -q '0 measured, 0 modeled, 2 already there' '$out/ranks/done.0' && grep -q '0 measured, 0 modeled, 1 already there' '$out/ranks/done.1'"
check "results.csv unchanged" cmp -s "$res" "$tmp/before.csv"

# ---- a hostile value never reaches a script or sbatch ----
before=$(squeue -h -o %i | wc -l)
"$TB_BIN" run --slurm --nodes 1 --partition 'a;rm -rf /' --suite "$suite" --out "$tmp/hostile" \
    2>"$tmp/hostile.err"
check "a partition 'a;rm -rf /' exits 2" test $? -eq 2
check "naming the option and the character, nothing written, nothing submitted" \
    sh -c "grep -q \"option '--partition': 'a;rm -rf /': character ';' at 2\" '$tmp/hostile.err' && ! test -e '$tmp/hostile' && test \"\$(squeue -h -o %i | wc -l)\" -eq $before"
