#!/bin/sh
# tests/cli/train.t: `trnbench run --executor pytorch` (and a suite's executor=pytorch
# line) end to end: the training script under torchrun, its rows in results.csv.
#
# With a stand-in interpreter (a Python script written here that answers the launch the
# way the training script does, without torch): the rows of a CPU run, a run on two
# "GPUs" (mfu against the H100's dense bf16 peak in pricing/chips.csv, chips_used, device
# memory) and on "NeuronCores" of a simulated trn2.48xlarge, through torch-xla and through
# TorchNeuron (--torch-device neuron), and which of the two --torch-device auto asks
# for on a simulated Neuron 2.32 SDK (neuron) and 2.29 SDK (xla); and a malformed line, a NaN
# loss and a hang (killed at --train-timeout) each fail the run with the reason and leave
# results.csv as it was. Where an interpreter imports torch (python3 on the PATH, else
# Debian's /usr/bin/python3), the real script on llama-tiny in 2 processes (gloo):
# the rows, their provenance and tokens/s = tokens / step time; a second run resumes; a
# suite line with executor=pytorch. Without torch those are skipped with the reason.
# Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them) and python3.

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_train"
rm -rf "$tmp" && mkdir -p "$tmp"
trn2="$TB_SRCDIR/tests/data/platform_trn2"

if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # SKIP no python3 (the stand-in trainer is a Python script)"
    exit 0
fi
py=$(torch_python)

field() { csv_cell "$1" "$3" metric="$2"; } # field FILE METRIC NAME
has() { grep -qF -- "$2" "$1"; }
metrics() { # the metrics of FILE's rows, one line, in order
    perl -e '
        sub row { my @o; my $s = shift; chomp $s;
            while (length $s) { if ($s =~ s/^"((?:[^"]|"")*)"(,|$)//) { (my $x = $1) =~ s/""/"/g; push @o, $x }
                                elsif ($s =~ s/^([^,]*)(,|$)//) { push @o, $1 } else { last } }
            return @o }
        open my $f, "<", $ARGV[0] or die; my @h = row(scalar <$f>); my %c; @c{@h} = 0 .. $#h;
        while (<$f>) { my @r = row($_); print $r[$c{metric}], " " }' "$1"
}
host_cpu() { # host_cpu FILE: its rows ran on the host CPU, all of it, without mfu
    case "$(field "$1" loss device)" in *"(host CPU)") ;; *) return 1 ;; esac
    test -z "$(field "$1" loss chips_used)" && ! grep -q ',mfu,' "$1"
}
close_to() { # close_to A B REL: |A - B| <= REL |B|
    perl -e 'exit(abs($ARGV[0] - $ARGV[1]) <= $ARGV[2] * abs($ARGV[1]) ? 0 : 1)' "$@"
}

# The stand-in: called as PYTHON LAUNCHER --standalone --nproc_per_node K SCRIPT ARGS, it
# prints what the training script would (FLOPs from the peer's count, no torch), as
# FAKE_TRAIN says: good, cuda, xla, malformed, nan, hang, or asked: on the device of its
# --device (auto: the CPU, the stand-in having no device to find), its arguments written
# to FAKE_ARGS.
cat >"$tmp/fake-python" <<EOF
#!/usr/bin/env python3
import json, os, sys, time
sys.path.insert(0, "$TB_SRCDIR/workloads/peers")
import pytorch_llama as pl
a = sys.argv[1:]
def opt(name, default=None):
    return a[a.index(name) + 1] if name in a else default
mode = os.environ.get("FAKE_TRAIN", "good")
world = int(opt("--nproc_per_node"))
cfg = pl.find_model(opt("--model"))
if opt("--layers"):
    cfg = pl.truncate(cfg, int(opt("--layers")))
B, T = int(opt("--batch")) * world, int(opt("--seq"))
steps, warm = int(opt("--steps")), int(opt("--warmup-steps"))
device = {"cuda": "cuda", "xla": "xla"}.get(mode, "cpu")
if mode == "asked":
    device = {"auto": "cpu"}.get(opt("--device"), opt("--device"))
    with open(os.environ["FAKE_ARGS"], "w") as f:
        f.write(" ".join(a) + "\n")
neuron = device == "neuron"
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()
print("a line of torchrun's that is not JSON")
emit({"event": "start", "protocol": 1, "model": cfg["name"], "layers": cfg["layers"],
      "world_size": world, "global_batch": B, "seq": T, "steps": steps,
      "warmup_steps": warm, "precision": opt("--precision"), "device": device,
      "device_name": {"cuda": "NVIDIA H100 80GB HBM3", "xla": "NEURON (xla:0)",
                      "neuron": "trn2 (neuron:0)"}.get(device, "Stand-in CPU"),
      "device_mem_gib": 79.1 if device == "cuda" else None,
      "backend": {"cuda": "nccl", "xla": "xla", "neuron": "neuron"}.get(device, "gloo"),
      "parallelism": "data parallel: DistributedDataParallel", "torch": "2.5.1-standin",
      "python": "3.11.2", "tokens_per_step": B * T, "flops_per_step": pl.flops(cfg, "train", B, T, 1),
      "distinct_batches": 2, "blas": "stand-in BLAS", "torch_xla": "2.1.5" if device == "xla" else None,
      "torch_neuronx": "2.14.3.0-standin" if neuron else None,
      "neuronx_cc": "2.28.7631.0-standin" if neuron else None,
      "compile": "stand-in: torch.compile(backend=neuron)" if neuron else "stand-in: nothing compiles"})
for i in range(warm + steps):
    secs = 0.5 if i == 0 else 0.1
    loss = 5.6 - 0.05 * i
    if mode == "hang" and i == 2:
        time.sleep(120)
    if mode == "malformed" and i == 2:
        print('{"event": "step", "step": 2, "loss": 5.5,')
        sys.exit(0)
    line = {"event": "step", "step": i, "warmup": i < warm, "loss": loss, "step_time_s": secs,
            "tokens": B * T, "tokens_per_s": B * T / secs, "world_size": world}
    if mode == "nan" and i == 2:
        line.update(loss=None, loss_text="nan")
    emit(line)
emit({"event": "end", "steps": warm + steps, "compile_s": 0.4, "peak_mem_gib": 12.5,
      "xla_compile_s": 30.0 if device == "xla" else None, "xla_compiles": 2 if device == "xla" else 0})
EOF
chmod +x "$tmp/fake-python"
fake() { # fake MODE OUT [ARGS...]: a run of llama-tiny through the stand-in
    mode=$1 out=$2
    shift 2
    FAKE_TRAIN=$mode "$TB_BIN" run --executor pytorch --model llama-tiny --phase train \
        --seq-in 16 --batch 2 --reps 3 --warmup 1 --python "$tmp/fake-python" \
        --train-timeout 3 --out "$out" "$@" 2>"$out.err"
}

echo "1..80"

# ---- usage ----
"$TB_BIN" run --executor pytorch --model llama-tiny --phase prefill --seq-in 16 \
    --out "$tmp/u" 2>"$tmp/u.err"
check "--executor pytorch on a prefill: exit 2" test $? -eq 2
check "  says the pytorch executor trains" \
    has "$tmp/u.err" "field 'executor': pytorch runs the training script (phase train), not prefill"
"$TB_BIN" run --executor pytorch --model llama-tiny --phase train --seq-in 16 --batch 3 \
    --nproc-per-node 2 --out "$tmp/u" 2>"$tmp/u.err"
check "a batch 2 processes cannot share: exit 2" test $? -eq 2
"$TB_BIN" run --model llama-tiny --phase train --seq-in 16 --nproc-per-node 2 \
    --out "$tmp/u" 2>"$tmp/u.err"
check "--nproc-per-node without --executor pytorch: exit 2" test $? -eq 2
check "  and nothing written" test ! -e "$tmp/u/results.csv"
check "run --help documents --executor pytorch and its options" sh -c \
    "'$TB_BIN' run --help | grep -q -- '--nproc-per-node K' && '$TB_BIN' run --help | grep -q -- '--torch-device'"

# ---- the stand-in on the CPU: the rows ----
fake good "$tmp/cpu"
check "a stand-in run on the CPU: exit 0" test $? -eq 0
r="$tmp/cpu/results.csv"
check "  rows step_time_s, train_tokens_per_s, gflop_per_s, loss, compile_s" \
    test "$(metrics "$r")" = "step_time_s train_tokens_per_s gflop_per_s loss compile_s "
check "  run id pytorch:llama-tiny/train/b2/in16/fp32/np1" \
    test "$(field "$r" step_time_s run_id)" = "pytorch:llama-tiny/train/b2/in16/fp32/np1"
check "  executor pytorch, 3 timed steps after 1 warm-up" \
    test "$(field "$r" step_time_s executor)/$(field "$r" step_time_s n)/$(field "$r" step_time_s warmup)" = "pytorch/3/1"
check "  step_time_s: the median of the timed steps (0.1 s)" test "$(field "$r" step_time_s value)" = 0.1
check "  train_tokens_per_s 320 (32 tokens / 0.1 s)" test "$(field "$r" train_tokens_per_s value)" = 320
check "  loss 5.45 (the last step's)" test "$(field "$r" loss value)" = 5.45
check "  compile_s 0.4 (the warm-up step's 0.5 s less a steady 0.1 s)" \
    test "$(field "$r" compile_s value)" = 0.4
check "  compiler: torch's version" test "$(field "$r" loss compiler)" = "torch 2.5.1-standin (python 3.11.2)"
check "  cflags: eager, fp32, torchrun, one process over gloo" \
    test "$(field "$r" loss cflags)" = "eager, fp32, torchrun nproc_per_node=1, one process over gloo"
check "  source: the training script" test "$(field "$r" loss source)" = "workloads/train/llama_train.py"
check "  device: the host CPU, all of it (no chips_used), no mfu" host_cpu "$r"
check "  notes: the loss fell" has "$r" \
    "the loss fell on the 2 batches the script cycles: mean 5.5750 over the first 2 steps, 5.4750 over the last 2"
check "  notes: why no mfu" has "$r" "no mfu on the CPU: pricing/chips.csv has no dense peak for a host CPU"

# ---- two GPUs: mfu, chips_used, device memory ----
fake cuda "$tmp/gpu" --precision bf16 --batch 4 --nproc-per-node 2
check "a stand-in run on 2 GPUs (bf16): exit 0" test $? -eq 0
r="$tmp/gpu/results.csv"
check "  rows with mfu and device_mem_gib" \
    test "$(metrics "$r")" = "step_time_s train_tokens_per_s gflop_per_s loss compile_s mfu device_mem_gib "
check "  device: the GPU x2, chips_used 2" \
    test "$(field "$r" mfu device)/$(field "$r" mfu chips_used)" = "NVIDIA H100 80GB HBM3 x2/2"
mfu=$(field "$r" mfu value)
want=$(python3 -c "
import sys; sys.path.insert(0, '$TB_SRCDIR/workloads/peers'); import pytorch_llama as pl
print(pl.flops(pl.find_model('llama-tiny'), 'train', 4, 16, 1) / 0.1 / (2 * 989.4e12))")
check "  mfu = FLOPs / (0.1 s x 2 x 989.4 TFLOP/s, the H100's dense bf16) ($mfu)" close_to "$mfu" "$want" 1e-5
check "  mfu notes name the peak and the chip" has "$r" "x 2 chips x 989.4 TFLOP/s, the H100 SXM5's dense bf16 peak"
check "  device_mem_gib: torch's peak (12.5)" test "$(field "$r" device_mem_gib value)" = 12.5
check "  cflags: bf16 autocast over nccl" \
    test "$(field "$r" loss cflags)" = "eager, bf16 autocast, fp32 master weights, torchrun nproc_per_node=2, data parallel: DistributedDataParallel over nccl"

# ---- NeuronCores of a simulated trn2.48xlarge: 4 logical ones a chip (LNC=2) ----
# a stand-in neuron-monitor prints the documentation's reports beside the run
mkdir -p "$tmp/monbin"
mon=$(cd "$TB_SRCDIR/tests/data/neuron" && pwd)/monitor-trn2.jsonl
printf '#!/bin/sh\ncat "%s"\nexec sleep 30\n' "$mon" >"$tmp/monbin/neuron-monitor"
chmod +x "$tmp/monbin/neuron-monitor"
PATH="$tmp/monbin:$PATH" TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$trn2" fake xla "$tmp/trn2" \
    --precision bf16 --batch 4 --nproc-per-node 4 --torch-device xla
check "a stand-in run on 4 NeuronCores of a trn2.48xlarge: exit 0" test $? -eq 0
r="$tmp/trn2/results.csv"
check "  target trn2.48xlarge, device Trainium2, chips_used 1 (its 4 logical cores at LNC=2)" \
    test "$(field "$r" mfu target)/$(field "$r" mfu device)/$(field "$r" mfu chips_used)" = "trn2.48xlarge/Trainium2 x1 (4 NeuronCores, torch-xla)/1"
mfu=$(field "$r" mfu value)
want=$(python3 -c "
import sys; sys.path.insert(0, '$TB_SRCDIR/workloads/peers'); import pytorch_llama as pl
print(pl.flops(pl.find_model('llama-tiny'), 'train', 4, 16, 1) / 0.1 / (1.0 * 667e12))")
check "  mfu against a whole Trainium2's 667 TFLOP/s ($mfu)" close_to "$mfu" "$want" 1e-5
check "  compile_s notes: torch-xla's own CompileTime" has "$r" "torch-xla's CompileTime: 2 graphs, 30 s"
check "  blas: the torch-xla stack" test "$(field "$r" loss blas)" = "torch-xla 2.1.5, torch-neuronx -, neuronx-cc -"
check "  run id names the device asked" test "$(field "$r" loss run_id)" = "pytorch:llama-tiny/train/b4/in16/bf16/np4/xla"
check "  neuron-monitor's NeuronCore utilisation beside it, a percentage (360/7)" \
    perl -e 'exit !(abs($ARGV[0] - 360/7) < 1e-3 && $ARGV[1] eq "%")' \
    "$(field "$r" neuroncore_utilization_pct value)" "$(field "$r" neuroncore_utilization_pct unit)"

# ---- TorchNeuron: --torch-device neuron, and what auto asks for by the SDK ----
asked() { # asked OUT ROOT [ARGS...]: the stand-in on ROOT's simulated trn2, on the device asked
    out=$1 root=$2
    shift 2
    env -u VIRTUAL_ENV PATH="$tmp/monbin:$PATH" TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$root" \
        FAKE_ARGS="$out.args" FAKE_TRAIN=asked "$TB_BIN" run --executor pytorch \
        --model llama-tiny --phase train --seq-in 16 --reps 3 --warmup 1 \
        --python "$tmp/fake-python" --train-timeout 3 --out "$out" --precision bf16 --batch 4 \
        --nproc-per-node 4 "$@" 2>"$out.err"
}
launched() { grep -q -- "--device $2 " "$1.args"; } # launched OUT DEVICE: the launch asked for it
asked "$tmp/tn" "$trn2" --torch-device neuron
check "--torch-device neuron on 4 NeuronCores of a trn2.48xlarge: exit 0" test $? -eq 0
r="$tmp/tn/results.csv"
check "  the launch asked for --device neuron" launched "$tmp/tn" neuron
check "  device: the path that ran, TorchNeuron; chips_used 1" \
    test "$(field "$r" mfu device)/$(field "$r" mfu chips_used)" = "Trainium2 x1 (4 NeuronCores, TorchNeuron)/1"
check "  cflags: TorchNeuron over its neuron process group" \
    test "$(field "$r" loss cflags)" = "TorchNeuron (device neuron), bf16 autocast, fp32 master weights, torchrun nproc_per_node=4, data parallel: DistributedDataParallel over neuron"
check "  blas: the TorchNeuron stack" \
    test "$(field "$r" loss blas)" = "TorchNeuron: torch-neuronx 2.14.3.0-standin, neuronx-cc 2.28.7631.0-standin"
check "  run id names the device asked" test "$(field "$r" loss run_id)" = "pytorch:llama-tiny/train/b4/in16/bf16/np4/neuron"
mfu=$(field "$r" mfu value)
check "  mfu against a whole Trainium2's 667 TFLOP/s ($mfu)" close_to "$mfu" "$want" 1e-5
check "  neuron-monitor's NeuronCore utilisation kept beside it" \
    test -n "$(field "$r" neuroncore_utilization_pct value)"
# the simulated trn2 holds Neuron 2.32's compiler (neuronx-cc 2.27.5334.0) and the
# PyTorch/XLA torch-neuronx 2.9.0.2.15.32035 the 2.32 manual setup still pins
# (tests/data/platform_trn2/README)
asked "$tmp/auto232" "$trn2"
check "--torch-device auto on a simulated Neuron 2.32 SDK: exit 0" test $? -eq 0
r="$tmp/auto232/results.csv"
check "  the launch asked for --device neuron" launched "$tmp/auto232" neuron
check "  device: TorchNeuron" test "$(field "$r" loss device)" = "Trainium2 x1 (4 NeuronCores, TorchNeuron)"
check "  run id keeps auto (what was asked)" test "$(field "$r" loss run_id)" = "pytorch:llama-tiny/train/b4/in16/bf16/np4"
check "  notes say which path and why" has "$r" \
    "torch_device auto: neuron, as neuronx-cc 2.27.5334.0 is Neuron 2.30 or later, which trains on TorchNeuron's native device; torch-neuronx 2.9.0.2.15.32035 is PyTorch/XLA, no longer supported for training there (torch_device=xla runs it anyway)"
# the same machine with Neuron 2.29.1's pins (tests/data/neuron/sdk-2.29)
rm -rf "$tmp/root229" && cp -R "$trn2" "$tmp/root229" && rm -rf "$tmp/root229/opt" &&
    cp -R "$TB_SRCDIR/tests/data/neuron/sdk-2.29/opt" "$tmp/root229/opt"
asked "$tmp/auto229" "$tmp/root229"
check "--torch-device auto on a simulated Neuron 2.29 SDK: exit 0" test $? -eq 0
r="$tmp/auto229/results.csv"
check "  the launch asked for --device xla" launched "$tmp/auto229" xla
check "  device: torch-xla" test "$(field "$r" loss device)" = "Trainium2 x1 (4 NeuronCores, torch-xla)"
check "  notes say which path and why" has "$r" \
    "torch_device auto: xla, as torch-neuronx 2.9.0.2.13.26312 is PyTorch/XLA (PyTorch 2.9) with neuronx-cc 2.24.8799.0, Neuron 2.29 or before: the XLA path"
printf 'run model=llama-tiny phase=train seq_in=16 batch=2 reps=3 warmup=1 executor=pytorch torch_device=neuron python=/nonexistent/python3\n' >"$tmp/tn.suite"
"$TB_BIN" run --suite "$tmp/tn.suite" --out "$tmp/tn-suite" 2>"$tmp/tn-suite.err"
check "a suite line with torch_device=neuron is read (skipped here: no interpreter)" \
    has "$tmp/tn-suite.err" "not run by PyTorch: cannot run '/nonexistent/python3'"

# ---- bad output: the run fails, results.csv stays as it was ----
"$TB_BIN" run --executor cpu --model llama-tiny --phase prefill --seq-in 8 --reps 1 --warmup 0 \
    --out "$tmp/bad" 2>/dev/null
cp "$tmp/bad/results.csv" "$tmp/before.csv"
fake malformed "$tmp/bad"
check "a malformed line: exit 1" test $? -eq 1
check "  says the line" has "$tmp/bad.err" "llama_train.py output: line 5: malformed JSON"
check "  results.csv unchanged" cmp -s "$tmp/bad/results.csv" "$tmp/before.csv"
fake nan "$tmp/bad"
check "a NaN loss: exit 1" test $? -eq 1
check "  says the step" has "$tmp/bad.err" "validation failed: step 2: training loss not finite (nan); nothing recorded"
check "  results.csv unchanged" cmp -s "$tmp/bad/results.csv" "$tmp/before.csv"
start=$(date +%s)
fake hang "$tmp/bad"
check "a hang: exit 1" test $? -eq 1
check "  killed at --train-timeout 3" has "$tmp/bad.err" "timed out after 3 s, 2 of 4 steps reported (train_timeout)"
check "  within the limit and a grace ($(($(date +%s) - start)) s)" test $(($(date +%s) - start)) -lt 20
check "  results.csv unchanged" cmp -s "$tmp/bad/results.csv" "$tmp/before.csv"
"$TB_BIN" run --executor pytorch --model llama-tiny --phase train --seq-in 16 \
    --python /nonexistent/python3 --out "$tmp/bad" 2>"$tmp/bad.err"
check "--executor pytorch where it cannot run: exit 1, as --executor cuda without a GPU" test $? -eq 1
check "  says why" has "$tmp/bad.err" "--executor pytorch: cannot run '/nonexistent/python3'"
cat >"$tmp/skip.suite" <<EOF
run model=llama-tiny phase=train seq_in=16 batch=2 reps=2 executor=pytorch python=/nonexistent/python3
EOF
"$TB_BIN" run --suite "$tmp/skip.suite" --out "$tmp/bad" 2>"$tmp/bad.err"
check "a suite's executor=pytorch line where it cannot run: skipped, exit 0" test $? -eq 0
check "  says why" has "$tmp/bad.err" "not run by PyTorch: cannot run '/nonexistent/python3'"

# ---- a suite: an executor=pytorch line beside an engine line ----
cat >"$tmp/mixed.suite" <<EOF
suite train-test
run model=llama-tiny phase=prefill seq_in=8 reps=1 warmup=0
run model=llama-tiny phase=train seq_in=16 batch=2 reps=3 warmup=1 executor=pytorch torch_device=cpu
EOF
"$TB_BIN" run --suite "$tmp/mixed.suite" --nproc-per-node 3 --out "$tmp/suite" 2>"$tmp/suite.err"
check "a suite's PyTorch line with --nproc-per-node 3 for its batch of 2: exit 2" test $? -eq 2
check "  says the line and why" has "$tmp/suite.err" \
    "mixed.suite: line 3 (with the command line's options): field 'batch': 2 sequences do not split evenly over nproc_per_node=3"
"$TB_BIN" run --suite "$tmp/mixed.suite" --python "$tmp/fake-python" --out "$tmp/suite" 2>"$tmp/suite.err"
check "a suite with an executor=pytorch line and an engine line, --python for it: exit 0" test $? -eq 0
both() {
    grep -q '^llama-tiny/prefill/b1/in8/fp32,measured,host,1,.*,cpu,llama-tiny,2,prefill,' "$1" &&
        grep -q '^pytorch:llama-tiny/train/b2/in16/fp32/np1/cpu,measured,host,1,.*,pytorch,llama-tiny,2,train,' "$1"
}
check "  both recorded: the CPU engine's prefill, PyTorch's training" both "$tmp/suite/results.csv"
"$TB_BIN" run --suite "$tmp/mixed.suite" --executor cpu --out "$tmp/suite-cpu" 2>"$tmp/suite-cpu.err"
check "  with --executor cpu: exit 0" test $? -eq 0
check "  with --executor cpu: the executor=pytorch line not run, and said" \
    has "$tmp/suite-cpu.err" "line 3: executor=pytorch, not run: --executor cpu was asked"

# ---- the real script, where torch imports ----
if [ -z "$py" ]; then
    for i in 1 2 3 4 5 6 7 8; do
        echo "ok $((tap_n + i)) # SKIP no interpreter imports torch (python3, /usr/bin/python3)"
    done
    exit 0
fi
"$TB_BIN" run --executor pytorch --model llama-tiny --phase train --seq-in 32 --batch 4 \
    --nproc-per-node 2 --reps 7 --warmup 1 --python "$py" --out "$tmp/real" 2>"$tmp/real.err"
check "torch: llama-tiny in 2 processes, 1 + 7 steps: exit 0" test $? -eq 0
r="$tmp/real/results.csv"
check "  rows step_time_s, train_tokens_per_s, gflop_per_s, loss, compile_s" \
    test "$(metrics "$r")" = "step_time_s train_tokens_per_s gflop_per_s loss compile_s "
check "  run id, batch 4 (global), 7 timed steps" \
    test "$(field "$r" loss run_id)/$(field "$r" loss batch)/$(field "$r" step_time_s n)" = "pytorch:llama-tiny/train/b4/in32/fp32/np2/4/7"
tps=$(field "$r" train_tokens_per_s value)
step=$(field "$r" step_time_s value)
check "  train_tokens_per_s ($tps) = 128 tokens / step_time_s ($step)" close_to "$tps" "$(perl -e "print 128 / $step")" 1e-5
real_provenance() {
    case "$(field "$1" loss compiler)" in "torch 1."* | "torch 2."*) ;; *) return 1 ;; esac
    test "$(field "$1" loss cflags)" = "eager, fp32, torchrun nproc_per_node=2, data parallel: DistributedDataParallel over gloo" &&
        test "$(field "$1" loss source)" = "workloads/train/llama_train.py" && host_cpu "$1"
}
check "  provenance: torch's version, 2 processes over gloo, the script, the host CPU" real_provenance "$r"
loss=$(field "$r" loss value)
check "  the loss ($loss) below ln 256 = 5.545: it trained" perl -e "exit($loss < 5.52 ? 0 : 1)"
check "  notes: the loss fell on the cycled batches" has "$r" "the loss fell on the 4 batches the script cycles"
"$TB_BIN" run --executor pytorch --model llama-tiny --phase train --seq-in 32 --batch 4 \
    --nproc-per-node 2 --reps 7 --warmup 1 --python "$py" --out "$tmp/real" 2>"$tmp/real.err"
check "the same run again: already in results, skipped" has "$tmp/real.err" "already in results, skipped"
