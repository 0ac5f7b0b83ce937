#!/bin/sh
# tests/cli/slurm-train.t: `trnbench run --slurm --executor pytorch --phase train`, one
# training across a Slurm job's nodes (one task a node, each starting torchrun with a
# c10d rendezvous at the job's first node).
#
# Without Slurm: --no-submit writes the batch script (its #SBATCH lines, its one srun
# line with every value quoted, the assembly after it, a relative model path made
# absolute), and bad values (a partition with a quote, a model name with ';', an
# interpreter path with a space, nproc-per-node 0, --ntasks-per-node, a batch that does
# not split over nodes x processes, a workload not through PyTorch) exit 2 with nothing
# written.
# On a one-machine Slurm cluster (tests/slurm/cluster.sh), where an interpreter imports
# torch (python3 on the PATH, else Debian's /usr/bin/python3): llama-tiny trained by a
# 1-node job of 2 processes, its rows checked as tests/cli/train.t checks a run outside
# Slurm (tokens/s = tokens / step time, the loss below ln 256 and fallen) plus the job's
# columns (nodes 1, ranks 2, ranks_per_node 2, slurm_job) and the rendezvous the log
# names; submitted again, nothing is re-run; the same command inside `salloc -N 1` runs
# srun at once. Then a 2-node job (two slurmd on this host,
# TB_SLURM_NODES=2) of 1 process each: the same global batch over the same 2 ranks, so
# the same losses; one node's task records the rows, the other says it trained.
# Without slurmctld/slurmd or torch, or when the cluster does not come up, those skip
# with the reason. Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
export TRNBENCH_CUDA=0
PATH="$PATH:/usr/sbin:/sbin"
tmp="$TB_BUILDDIR/tests/tmp/cli_slurm_train"
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
tmp=$(cd "$tmp" && pwd)
src=$(cd "$TB_SRCDIR" && pwd)
exe="$(cd "$(dirname "$TB_BIN")" && pwd)/$(basename "$TB_BIN")"
# its own ports: tests/cli/slurm.t's cluster may run beside it
port=${TB_SLURM_TRAIN_PORT:-16857}

field() { csv_cell "$1" "$3" metric="$2"; } # field FILE METRIC NAME
has() { grep -qF -- "$2" "$1"; }
close_to() { # close_to A B REL: |A - B| <= REL |B|
    perl -e 'exit(abs($ARGV[0] - $ARGV[1]) <= $ARGV[2] * abs($ARGV[1]) ? 0 : 1)' "$@"
}
metrics() { # the metrics of FILE's rows, one line, in order
    perl -e '
        sub row { my @o; my $s = shift; chomp $s;
            while (length $s) { if ($s =~ s/^"((?:[^"]|"")*)"(,|$)//) { (my $x = $1) =~ s/""/"/g; push @o, $x }
                                elsif ($s =~ s/^([^,]*)(,|$)//) { push @o, $1 } else { last } }
            return @o }
        open my $f, "<", $ARGV[0] or die; my @h = row(scalar <$f>); my %c; @c{@h} = 0 .. $#h;
        while (<$f>) { my @r = row($_); print $r[$c{metric}], " " }' "$1"
}
# wait_job ID: until squeue no longer lists the job (at most 300 s); 0 when it left
wait_job() { sh "$cluster" wait "${SLURM_CONF%/slurm.conf}" "$1" 300; }

echo "1..46"

# ---- the batch script (--no-submit; no Slurm needed) ----
train="--executor pytorch --phase train --model llama-tiny --seq-in 32"
# shellcheck disable=SC2086
"$TB_BIN" run --slurm --nodes 2 --partition gpu-p5 --time 1:00:00 --account ml $train \
    --batch 8 --nproc-per-node 2 --reps 3 --warmup 1 --torch-device cpu --python python3 \
    --no-submit --out "$tmp/ns" 2>"$tmp/ns.err"
check "--no-submit: exit 0" test $? -eq 0
s="$tmp/ns/trnbench.sbatch"
check "  #SBATCH: 2 nodes, one task each, whole nodes, all up first" \
    sh -c "grep -qx '#SBATCH --nodes=2' '$s' && grep -qx '#SBATCH --ntasks-per-node=1' '$s' && grep -qx '#SBATCH --exclusive' '$s' && grep -qx '#SBATCH --wait-all-nodes=1' '$s'"
check "  #SBATCH: partition, time and account quoted" \
    sh -c "grep -qx \"#SBATCH --partition='gpu-p5'\" '$s' && grep -qx \"#SBATCH --time='1:00:00'\" '$s' && grep -qx \"#SBATCH --account='ml'\" '$s'"
check "  one srun line" test "$(grep -c '^srun' "$s")" -eq 1
want="srun --kill-on-bad-exit=0 '$exe' run --slurm-node --executor 'pytorch' --phase 'train' --model 'llama-tiny' --seq-in '32' --batch '8' --reps '3' --warmup '1' --seed '1' --precision 'fp32' --nproc-per-node '2' --torch-device 'cpu' --python 'python3' --train-timeout '3600' --out '$tmp/ns'"
check "  it runs this binary's node task with every value quoted" test "$(grep '^srun' "$s")" = "$want"
check "  then the assembly" grep -qx "'$exe' run --slurm-assemble --out '$tmp/ns' || rc=\$?" "$s"
check "  bash reads it" bash -n "$s"
check "  not submitted: no job recorded" test ! -e "$tmp/ns/slurm_job"
# shellcheck disable=SC2086
(cd "$src" && "$TB_BIN" run --slurm --nodes 1 $train --model workloads/llama/llama-tiny.model \
    --no-submit --out "$tmp/rel") 2>"$tmp/rel.err"
check "a model file by a relative path: exit 0" test $? -eq 0
check "  the script names it by its absolute path" \
    grep -qF -- "--model '$src/workloads/llama/llama-tiny.model'" "$tmp/rel/trnbench.sbatch"

# bad NAME ARGS...: the command with ARGS added; its exit status in $tmp/NAME.rc
bad() {
    name=$1
    shift
    # shellcheck disable=SC2086
    "$TB_BIN" run --slurm --nodes 2 $train --batch 8 --no-submit --out "$tmp/bad-$name" "$@" \
        2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}
refused() { # refused NAME MESSAGE: exit 2, the message, nothing written
    test "$(cat "$tmp/$1.rc")" -eq 2 && has "$tmp/$1.err" "$2" && test ! -e "$tmp/bad-$1"
}
bad quote --partition "a'b"
check "a partition with a quote: exit 2, said, nothing written" \
    refused quote "option '--partition': 'a'b': character ''' at 2 is not allowed"
bad model --model 'llama;id'
check "a model name with ';': exit 2, said, nothing written" \
    refused model "option '--model': 'llama;id': character ';' at 6 is not allowed"
bad python --python '/usr/bin/my python3'
check "an interpreter path with a space: exit 2, said, nothing written" \
    refused python "--python"
bad nproc --nproc-per-node 0
check "nproc-per-node 0: exit 2, said, nothing written" \
    refused nproc "trnbench run: option '--nproc-per-node': '0' is not a whole number from 1 to 4096"
bad tasks --ntasks-per-node 2
check "--ntasks-per-node: exit 2 (one task a node), nothing written" \
    refused tasks "runs one task a node, whose torchrun starts --nproc-per-node processes"
bad split --batch 6 --nproc-per-node 2
check "a batch of 6 over 2 nodes x 2 processes: exit 2, nothing written" \
    refused split "field 'batch': 6 sequences do not split evenly over 2 nodes x nproc_per_node=2"
"$TB_BIN" run --slurm --nodes 2 --model llama-tiny --phase prefill --seq-in 32 --no-submit \
    --out "$tmp/bad-prefill" 2>"$tmp/prefill.err"
echo $? >"$tmp/prefill.rc"
check "a workload not through PyTorch: exit 2, nothing written" \
    refused prefill "--slurm with a workload trains it across the nodes through PyTorch"

# ---- on a one-machine cluster ----
skip_rest() {
    while [ "$tap_n" -lt 46 ]; do
        tap_n=$((tap_n + 1))
        echo "ok $tap_n # SKIP $1"
    done
    exit 0
}
for p in slurmctld slurmd sbatch squeue scontrol; do
    command -v $p >/dev/null 2>&1 || skip_rest "$p not installed (Debian: apt-get install slurm-wlm)"
done
py=$(torch_python)
[ -n "$py" ] || skip_rest "no interpreter imports torch (python3, /usr/bin/python3)"
cluster="$src/tests/slurm/cluster.sh"
up() { # up DIR NODES: the cluster started, or every test left skipped
    if ! TB_SLURM_PORT=$port TB_SLURM_NODES=$2 sh "$cluster" start "$1" >"$1.out" 2>&1; then
        reason=$(tail -n 3 "$1.out" | tr '\n' ' ')
        sh "$cluster" stop "$1" >/dev/null 2>&1
        skip_rest "the one-machine Slurm cluster ($2 node(s)) did not come up: $reason"
    fi
    export SLURM_CONF="$1/slurm.conf"
}
trap 'sh "$cluster" stop "$tmp/cluster" >/dev/null 2>&1; sh "$cluster" stop "$tmp/cluster2" >/dev/null 2>&1' EXIT INT TERM
up "$tmp/cluster" 1

steps="--seq-in 32 --batch 4 --reps 7 --warmup 1 --torch-device cpu --python $py"
out="$tmp/one"
# shellcheck disable=SC2086
job=$("$TB_BIN" run --slurm --nodes 1 --time 10 --executor pytorch --phase train \
    --model llama-tiny --nproc-per-node 2 $steps --out "$out" 2>"$tmp/one.err")
check "1 node x 2 processes submitted: exit 0, job id '$job'" sh -c "echo '$job' | grep -qx '[0-9][0-9]*'"
wait_job "$job"
check "  the job ended within 300 s" test $? -eq 0
r="$out/results.csv"
log="$out/slurm-$job.out"
check "  rows step_time_s, train_tokens_per_s, gflop_per_s, loss, compile_s" \
    test "$(metrics "$r" 2>/dev/null)" = "step_time_s train_tokens_per_s gflop_per_s loss compile_s "
check "  run id pytorch:llama-tiny/train/b4/in32/fp32/np2/cpu, phase train, executor pytorch" \
    test "$(field "$r" loss run_id)/$(field "$r" loss phase)/$(field "$r" loss executor)" = "pytorch:llama-tiny/train/b4/in32/fp32/np2/cpu/train/pytorch"
check "  nodes 1, ranks 2, rank 0, ranks_per_node 2, instances 1" \
    test "$(field "$r" loss nodes)/$(field "$r" loss ranks)/$(field "$r" loss rank)/$(field "$r" loss ranks_per_node)/$(field "$r" loss instances)" = "1/2/0/2/1"
check "  node localhost, slurm_job $job" \
    test "$(field "$r" loss node)/$(field "$r" loss slurm_job)" = "localhost/$job"
tps=$(field "$r" train_tokens_per_s value)
step=$(field "$r" step_time_s value)
echo "# 1 node x 2: step_time_s $step, train_tokens_per_s $tps, loss $(field "$r" loss value)"
check "  train_tokens_per_s ($tps) > 0 and = 128 tokens / step_time_s ($step)" \
    sh -c "perl -e 'exit(\$ARGV[0] > 0 ? 0 : 1)' '$tps' && perl -e 'exit(abs(\$ARGV[0] - 128 / \$ARGV[1]) <= 1e-5 * \$ARGV[0] ? 0 : 1)' '$tps' '$step'"
loss1=$(field "$r" loss value)
check "  the loss ($loss1) finite and below ln 256 = 5.545: it trained" \
    perl -e "exit('$loss1' =~ /^[0-9.]+(e-?[0-9]+)?\$/ && $loss1 < 5.52 ? 0 : 1)"
check "  notes: the loss fell on the cycled batches" has "$r" "the loss fell on the 4 batches the script cycles"
check "  cflags: torchrun over a c10d rendezvous, 2 processes, gloo" \
    test "$(field "$r" loss cflags)" = "eager, fp32, torchrun nnodes=1 (c10d rendezvous) nproc_per_node=2, data parallel: DistributedDataParallel over gloo"
check "  the log names the rendezvous: the first node's address, port 29400 + job mod 1000, the job id" \
    has "$log" "torchrun on node 0 of 1: c10d rendezvous at 127.0.0.1:$((29400 + job % 1000)), id $job, 2 processes here"
check "  the log says what was assembled" has "$log" "5 rows of 1 run from 1 rank file added"
cp "$r" "$tmp/one.before"
# shellcheck disable=SC2086
job2=$("$TB_BIN" run --slurm --nodes 1 --executor pytorch --phase train --model llama-tiny \
    --nproc-per-node 2 $steps --out "$out" 2>"$tmp/one2.err")
wait_job "$job2"
check "submitted again (job $job2): it ends" test $? -eq 0
check "  nothing re-run: the run already there" has "$out/ranks/done.0" "0 measured, 0 modeled, 1 already there"
check "  results.csv unchanged" cmp -s "$r" "$tmp/one.before"
check "  both jobs recorded in the folder" test "$(tr '\n' ' ' <"$out/slurm_job")" = "$job $job2 "
# inside an allocation (salloc): srun and the assembly at once, no batch script
# shellcheck disable=SC2086
timeout 300 salloc -N 1 "$TB_BIN" run --slurm --executor pytorch --phase train \
    --model llama-tiny --nproc-per-node 2 $steps --out "$tmp/alloc" >"$tmp/alloc.log" 2>&1
check "inside salloc -N 1: exit 0, srun run here, no batch script" \
    sh -c "test $? -eq 0 && grep -q 'inside Slurm job [0-9]*: srun runs the tasks' '$tmp/alloc.log' && test ! -e '$tmp/alloc/trnbench.sbatch'"
alloc_rows() { # nodes 1, ranks 2, slurm_job a job id, the loss of the batch job
    a="$tmp/alloc/results.csv"
    test "$(field "$a" loss nodes)/$(field "$a" loss ranks)/$(field "$a" loss value)" = "1/2/$loss1" &&
        field "$a" loss slurm_job | grep -qx '[0-9][0-9]*'
}
check "  its rows: nodes 1, ranks 2, a slurm_job, loss $loss1 as the batch job's" alloc_rows
sh "$cluster" stop "$tmp/cluster" >/dev/null 2>&1

# ---- two nodes: two slurmd on this host ----
port=$((port + 10))
up "$tmp/cluster2" 2
out="$tmp/two"
# shellcheck disable=SC2086
job=$("$TB_BIN" run --slurm --nodes 2 --time 10 --executor pytorch --phase train \
    --model llama-tiny --nproc-per-node 1 $steps --out "$out" 2>"$tmp/two.err")
check "2 nodes x 1 process submitted: exit 0, job id '$job'" sh -c "echo '$job' | grep -qx '[0-9][0-9]*'"
wait_job "$job"
check "  the job ended within 300 s" test $? -eq 0
r="$out/results.csv"
log="$out/slurm-$job.out"
check "  run id names the nodes: pytorch:llama-tiny/train/b4/in32/fp32/nodes2/np1/cpu" \
    test "$(field "$r" loss run_id)" = "pytorch:llama-tiny/train/b4/in32/fp32/nodes2/np1/cpu"
check "  nodes 2, ranks 2, rank 0, ranks_per_node 1, instances 2, slurm_job $job" \
    test "$(field "$r" loss nodes)/$(field "$r" loss ranks)/$(field "$r" loss rank)/$(field "$r" loss ranks_per_node)/$(field "$r" loss instances)/$(field "$r" loss slurm_job)" = "2/2/0/1/2/$job"
one_recorder() { # 5 rows; one task measured the run, the other recorded nothing
    test "$(metrics "$r" | wc -w)" -eq 5 &&
        test "$(cat "$out"/ranks/done.* | grep -c ': 1 measured')" -eq 1 &&
        test "$(cat "$out"/ranks/done.* | grep -c ': 0 measured, 0 modeled, 0 already there, 0 failed')" -eq 1
}
check "  5 rows, from one node's task" one_recorder
check "  the other node's task trained and said so" \
    has "$log" "trained; the script's rank 0 ran on another node, whose launch records the rows"
check "  both tasks met at one rendezvous" \
    test "$(grep -c "c10d rendezvous at 127.0.0.1:$((29400 + job % 1000)), id $job, 1 process here" "$log")" -eq 2
loss2=$(field "$r" loss value)
tps2=$(field "$r" train_tokens_per_s value)
echo "# 2 nodes x 1: step_time_s $(field "$r" step_time_s value), train_tokens_per_s $tps2, loss $loss2"
check "  tokens/s ($tps2) > 0" perl -e "exit($tps2 > 0 ? 0 : 1)"
check "  the loss ($loss2) that of 1 node x 2 ($loss1): the same global batch on the same 2 ranks" \
    close_to "$loss2" "$loss1" 1e-4
check "  cflags: torchrun nnodes=2, 1 process each" \
    test "$(field "$r" loss cflags)" = "eager, fp32, torchrun nnodes=2 (c10d rendezvous) nproc_per_node=1, data parallel: DistributedDataParallel over gloo"
check "results.csv reads as results (trnbench report takes it)" \
    sh -c "'$TB_BIN' report --out '$tmp/report' '$r' >'$tmp/report.log' 2>&1"
