"""tests/peers/llama_train_test.py: the training script (workloads/train/llama_train.py) as a
program, as TAP on stdout (tests/cli/train-script.t runs it with an interpreter that has
torch when there is one).

Always (python3 only): usage errors exit 2 naming the option, an unknown model exits 2,
and without torch it exits 3 with one "unavailable" JSON line on stdout and one line on
stderr (trnbench's pytorch executor reads both).

Where torch imports (any version, on the CPU): llama-tiny trains for 8 steps (1 warm-up
+ 7 timed) and every line is JSON of the protocol (start, a step each, end); the
shapes, FLOPs and parameters are the catalogue's; tokens_per_s = tokens / step_time_s;
the loss starts within 0.1 nat of ln V and falls by more than 0.05 nat from the first
step to the last, and the mean over the last 4 steps (the same 4 batches) is more than
0.05 below the first 4's; the same seed gives the same losses. Under torchrun with 2
processes (gloo, DistributedDataParallel): world_size 2 on every line and twice the
tokens of one process. --device cuda where torch sees no GPU exits 3 with its reason.

Why 0.05 nat: before any update the 4 cycled batches (random tokens) already differ by
up to about 0.04 nat (5.540 to 5.580 for seed 1), so a fall of more than 0.05 from the
first step to the last cannot be which batch it is; 8 steps at trnbench's learning rate
3e-4 take it down about 0.11 (first 5.555, last 5.448 on torch 1.13 for seed 1).
"""
import json
import math
import os
import subprocess
import sys

sys.dont_write_bytecode = True
SRC = os.environ.get("TB_SRCDIR", ".")
SCRIPT = os.path.join(SRC, "workloads", "train", "llama_train.py")
LAUNCHER = os.path.join(SRC, "workloads", "train", "torchrun_compat.py")
sys.path.insert(0, os.path.join(SRC, "workloads", "peers"))
import pytorch_llama as pl  # noqa: E402

TINY = os.path.join(SRC, "workloads", "llama", "llama-tiny.model")
n_tests = 0


def ok(cond, what):
    global n_tests
    n_tests += 1
    print(f"{'ok' if cond else 'not ok'} {n_tests} - {what}", flush=True)
    return cond


def skip(reason):
    global n_tests
    n_tests += 1
    print(f"ok {n_tests} # SKIP {reason}", flush=True)


def diag(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


def run(args, launcher=None, timeout=300):
    cmd = [sys.executable] + ([LAUNCHER] + launcher if launcher else []) + [SCRIPT] + args
    env = dict(os.environ)
    env.pop("RANK", None)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if r.returncode not in (0, 2, 3):
        diag("stderr: " + r.stderr[-2000:])
    return r


def lines_of(stdout):
    """The JSON lines of stdout, or None when one does not parse."""
    out = []
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            return None
    return out


ARGS = ["--model", TINY, "--batch", "2", "--seq", "32", "--steps", "7", "--warmup-steps", "1",
        "--device", "cpu", "--seed", "1"]


def usage():
    r = run(["--model", TINY, "--batch", "0", "--seq", "8", "--steps", "1"])
    ok(r.returncode == 2 and "--batch" in r.stderr, "--batch 0: exit 2, names the option")
    r = run(["--model", TINY, "--batch", "1", "--seq", "8", "--steps", "1", "--device", "tpu"])
    ok(r.returncode == 2 and "--device" in r.stderr, "--device tpu: exit 2")
    r = run(ARGS[:-4] + ["--device", "neuron"])
    got = lines_of(r.stdout) or [{}]
    ok(r.returncode == 3 and got[0].get("event") == "unavailable"
       and ("TorchNeuron is not installed" in got[0].get("reason", "")
            or "torch not importable" in got[0].get("reason", "")),
       f"--device neuron (TorchNeuron) is a device, not here: exit 3 ({r.returncode}), "
       f"{got[0].get('reason')}")
    r = run(["--model", TINY, "--batch", "1", "--seq", "8", "--steps", "1", "--precision", "fp8"])
    ok(r.returncode == 2 and "--precision" in r.stderr, "--precision fp8: exit 2")
    r = run(["--model", "llama-9", "--batch", "1", "--seq", "8", "--steps", "1"])
    ok(r.returncode == 2 and "unknown model 'llama-9'" in r.stderr and r.stdout == "",
       "an unknown model: exit 2, nothing on stdout")


def without_torch():
    r = run(ARGS)
    got = lines_of(r.stdout) or [{}]
    errs = r.stderr.strip().splitlines()
    ok(r.returncode == 3, f"no torch: exit 3 ({r.returncode})")
    ok(len(got) == 1 and got[0].get("event") == "unavailable"
       and "torch not importable" in got[0].get("reason", ""),
       "  one 'unavailable' line on stdout with the reason")
    ok(len(errs) == 1 and errs[0].startswith("llama_train: "), f"  one line on stderr: {errs}")


def check_run(got, world, what):
    """The lines of a run of ARGS (B=2 per process, T=32, 1 + 7 steps) with world processes."""
    cfg = pl.find_model(TINY)
    if not ok(got is not None and len(got) == 10, f"{what}: 10 JSON lines (start, 8 steps, end)"):
        return None
    start, steps, end = got[0], got[1:-1], got[-1]
    tokens = 2 * 32 * world
    ok(start["event"] == "start" and start["protocol"] == 1 and start["model"] == "llama-tiny"
       and start["layers"] == 2 and start["world_size"] == world
       and start["global_batch"] == 2 * world and start["seq"] == 32
       and start["steps"] == 7 and start["warmup_steps"] == 1 and start["device"] == "cpu"
       and start["backend"] == "gloo" and start["params"] == pl.param_count(cfg),
       f"{what}: the start line says the model, shapes, device and world size {world}")
    ok(start["tokens_per_step"] == tokens
       and start["flops_per_step"] == pl.flops(cfg, "train", 2 * world, 32, 1),
       f"{what}: tokens ({tokens}) and FLOPs of a step as trnbench counts them")
    ok([s["event"] for s in steps] == ["step"] * 8 and [s["step"] for s in steps] == list(range(8))
       and [s["warmup"] for s in steps] == [True] + [False] * 7,
       f"{what}: 8 step lines in order, the first a warm-up")
    ok(all(s["tokens"] == tokens and s["world_size"] == world for s in steps),
       f"{what}: every step: {tokens} tokens (global), world_size {world}")
    worst = max(abs(s["tokens_per_s"] * s["step_time_s"] - s["tokens"]) / s["tokens"]
                for s in steps)
    ok(worst < 1e-9, f"{what}: tokens_per_s = tokens / step_time_s (worst {worst:.1e})")
    ok(end["event"] == "end" and end["steps"] == 8 and end["compile_s"] >= 0
       and end["loss_last"] == steps[-1]["loss"],
       f"{what}: the end line (compile_s {end['compile_s']:.4f} s)")
    return [s["loss"] for s in steps]


def with_torch(torch):
    r = run(ARGS)
    got = lines_of(r.stdout)
    ok(r.returncode == 0, f"llama-tiny, 8 steps on the CPU: exit 0 ({r.returncode})")
    losses = check_run(got, 1, "1 process")
    if losses:
        lnv = math.log(256)
        first4, last4 = sum(losses[:4]) / 4, sum(losses[4:]) / 4
        diag(f"losses {' '.join(f'{x:.4f}' for x in losses)}; "
             f"{got[-2]['tokens_per_s']:.0f} tokens/s at the last step")
        ok(abs(losses[0] - lnv) < 0.1, f"first loss {losses[0]:.4f} within 0.1 of ln V {lnv:.4f}")
        ok(losses[-1] < losses[0] - 0.05,
           f"the loss falls: {losses[0]:.4f} -> {losses[-1]:.4f} (more than 0.05)")
        ok(last4 < first4 - 0.05,
           f"on the same 4 batches: mean {first4:.4f} -> {last4:.4f} (more than 0.05)")
        again = lines_of(run(ARGS).stdout)
        ok(again is not None and [s.get("loss") for s in again[1:-1]] == losses,
           "the same seed: the same losses")
    else:
        for _ in range(4):
            skip("no run to look at")
    r = run(ARGS, launcher=["--standalone", "--nproc_per_node", "2"])
    ok(r.returncode == 0, f"under torchrun, 2 processes: exit 0 ({r.returncode})")
    check_run(lines_of(r.stdout), 2, "2 processes")
    if torch.cuda.is_available():
        skip("torch sees a GPU: no reason to check")
    else:
        r = run(ARGS[:-4] + ["--device", "cuda"])
        got = lines_of(r.stdout) or [{}]
        ok(r.returncode == 3 and got[0].get("event") == "unavailable"
           and "sees no CUDA device" in got[0].get("reason", ""),
           f"--device cuda without a GPU: exit 3, {got[0].get('reason')}")


def main():
    usage()
    try:
        import torch
    except ImportError as e:
        torch = None
        diag(f"no torch in {sys.executable} ({e}): the training is not run")
    if torch is None:
        without_torch()
        for _ in range(21):
            skip(f"torch not importable by {sys.executable}")
    else:
        diag(f"torch {torch.__version__} in {sys.executable}")
        for _ in range(3):
            skip("torch imports: the exit without it is not checked here")
        with_torch(torch)
    print(f"1..{n_tests}")


if __name__ == "__main__":
    main()
