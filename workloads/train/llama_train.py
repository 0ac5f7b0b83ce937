#!/usr/bin/env python3
"""workloads/train/llama_train.py: train a catalogue Llama with PyTorch, one JSON line a step.

trnbench's `pytorch` executor (harness/measure/exec_torch.c) runs it through torchrun,
with an argv and no shell:

    python3 -m torch.distributed.run --standalone --nproc_per_node K llama_train.py \\
        --model workloads/llama/llama-3.2-1b.model [--layers N] --batch B --seq T \\
        --steps N --warmup-steps W --precision fp32|bf16 --device auto|cpu|cuda|neuron|xla \\
        --seed S [--lr LR] [--distinct-batches K]

and it runs by hand the same way (or as a plain `python3 llama_train.py ...`: one
process). It needs python3 and torch (1.13 or later); on Neuron, torch-neuronx: from
PyTorch 2.10 TorchNeuron, the native device "neuron" (Neuron 2.30 and later), before it
PyTorch/XLA (torch-neuronx 2.9 and older, with torch-xla: the device "xla"); it never
needs trnbench.

What it trains: the Llama of a trnbench catalogue file (workloads/README.md), the model
of workloads/peers/pytorch_llama.py (imported from there, not copied: the same modules,
catalogue parser and FLOP count), with every matrix drawn from N(0, 0.02) from the seed
and the norms at 1, as trnbench's engines do; fp32 master weights; AdamW (trnbench's
settings: betas 0.9/0.95, eps 1e-8, weight decay 0.1 on the matrices); cross-entropy of
the next token over all B x T positions. --precision bf16 runs the forward pass under
torch.autocast (bf16 products, fp32 loss and optimizer): mixed precision as the GPU
executor runs it. Attention is the peer's: SDPA where torch has it, else (torch 1.13,
Debian's python3-torch) the explicit softmax(q k^T / sqrt(d)) v in fp32.

The data: random tokens from the seed, but a fixed set of --distinct-batches batches
per process (default 4), cycled. Fresh random tokens every step would leave nothing to
learn (uniform, independent tokens: the best model predicts ln V whatever it does), so
the loss could not show that training works; a few fixed batches seen again and again
are memorised, the loss falls, and a falling loss on the same batches shows the
forward pass, the backward pass, the gradient all-reduce and the optimizer step all
work. The shapes, and so the work and the speed, are those of fresh data.

Processes: under torchrun (RANK, WORLD_SIZE, LOCAL_RANK in the environment) data
parallel over WORLD_SIZE processes, each with --batch sequences of its own data
(drawn from the seed and its rank): DistributedDataParallel on gloo (cpu) or NCCL
(cuda, one GPU per process: LOCAL_RANK), on TorchNeuron DistributedDataParallel on
the "neuron" process group that importing torch_neuronx registers (aws-neuron-sdk
torch/guides/torch-distributed.rst: init_process_group(backend="neuron"), one logical
NeuronCore per process), and on PyTorch/XLA torch-xla's "xla" process group with
xm.optimizer_step all-reducing the gradients, as AWS's torch-neuronx data parallel
tutorials do (one NeuronCore per process). On TorchNeuron the model runs under
torch.compile(backend="neuron"), as the TorchNeuron overview says a compiled model is
run (frameworks/torch/pytorch-native-overview.rst: "Specify backend=\"neuron\"") and
bf16 autocast is torch.autocast(device_type="neuron"). Tensor and pipeline parallelism
(NxD, neuronx-distributed) are not here: every process holds the whole model, its
gradients and AdamW state (16 bytes a parameter), so on a NeuronCore only models of
about a billion parameters or fewer fit (use --layers N for a big model's layers).

Output: one JSON object a line on stdout, from rank 0 only (progress goes to stderr):
  {"event": "start", ...}  the environment: torch and python versions, torch-xla,
                            torch-neuronx and neuronx-cc where present, CUDA, the device
                            and its name and memory, the backend, the world size, the
                            model and shapes, FLOPs and tokens of one step
  {"event": "step", "step": i, "warmup": bool, "loss": x, "step_time_s": s,
   "tokens": n, "tokens_per_s": n / s, "world_size": w}   one per step, i from 0;
                            tokens: all processes' (global batch x T); loss: rank 0's
                            batch (null when not finite, "loss_text" then says what it
                            was: JSON has no NaN); the first --warmup-steps are warm-up
  {"event": "end", ...}     compile_s (the warm-up steps' time beyond a steady step:
                            graph tracing and compilation on xla, where torch-neuronx
                            compiles each new graph with neuronx-cc, and on neuron
                            torch.compile's (TorchDynamo's graphs lowered by the
                            Neuron backend, compiled by neuronx-cc); on cuda and cpu
                            eager there is no compilation, only first-call allocation
                            and kernel selection), torch-xla's own CompileTime where it
                            counts one, peak memory, wall time
  {"event": "unavailable", "reason": r}  cannot run here (with exit 3)
  {"event": "error", "reason": r}        a step failed (with exit 1)
A step's time: from zeroing the gradients to the loss on the host, the device
synchronised (cuda: torch.cuda.synchronize; xla: xm.mark_step, then the loss read
back waits for the graph to run; neuron: torch.neuron.synchronize where it exists, and
the loss read back waits for the device's queue in any case).

Exit status: 0 trained; 1 failed (a step raised, the loss was not finite); 2 usage or
input error; 3 cannot run here (no torch, no torch-xla for --device xla, no
TorchNeuron for --device neuron, no CUDA device for --device cuda), with a one-line
reason on stderr.
"""
import argparse
import json
import math
import os
import platform
import re
import resource
import statistics
import sys
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ beside the peer in the data folder
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
import pytorch_llama as pl  # noqa: E402  the model, the catalogue parser, the counts

torch, F = pl.torch, pl.F
EXIT_FAILED, EXIT_USAGE, EXIT_UNAVAILABLE = 1, 2, 3
PROTOCOL = 1
DEVICES = ("auto", "cpu", "cuda", "neuron", "xla")
PRECISIONS = ("fp32", "bf16")


class Unavailable(Exception):
    """This machine cannot run the training: the reason."""


def log(msg):
    # one write a line: the processes share the stream
    sys.stderr.write("llama_train: " + msg + "\n")
    sys.stderr.flush()


# ---- the command line ----

def positive(text):
    try:
        v = int(text, 10)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: '{text}'")
    return v


def non_negative(text):
    try:
        v = int(text, 10)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"not a non-negative integer: '{text}'")
    return v


def learning_rate(text):
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"not a learning rate in (0, 1): '{text}'")
    return v


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="llama_train.py",
        description="Train a trnbench catalogue Llama on random tokens with PyTorch (data "
        "parallel under torchrun); one JSON line a step on stdout.")
    p.add_argument("--model", required=True, help="catalogue name or .model file")
    p.add_argument("--layers", type=positive, help="keep the first N layers")
    p.add_argument("--batch", type=positive, required=True, help="sequences per process")
    p.add_argument("--seq", type=positive, required=True, help="tokens per sequence")
    p.add_argument("--steps", type=positive, required=True, help="timed steps")
    p.add_argument("--warmup-steps", type=non_negative, default=1,
                   help="untimed steps before them (default 1; on xla 2: two graphs compile)")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32",
                   help="fp32, or bf16 mixed precision (autocast; fp32 master weights)")
    p.add_argument("--device", choices=DEVICES, default="auto",
                   help="auto (neuron with TorchNeuron, xla with PyTorch/XLA's torch-neuronx, "
                   "else cuda when torch sees a GPU, else cpu), cpu, cuda, neuron or xla")
    p.add_argument("--seed", type=non_negative, default=1, help="weights and tokens (default 1)")
    p.add_argument("--lr", type=learning_rate, default=pl.ADAMW["lr"],
                   help=f"AdamW learning rate (default {pl.ADAMW['lr']:g})")
    p.add_argument("--distinct-batches", type=positive, default=4,
                   help="random batches per process, cycled so the loss can fall (default 4)")
    args = p.parse_args(argv)
    if args.seq < 2:
        p.error("--seq: training needs at least 2 tokens")
    return args


# ---- the device ----

def importable(name):
    try:
        __import__(name)
        return True
    except Exception:  # noqa: BLE001 - a broken install is as good as none here
        return False


def version_of(name):
    """A module's __version__, or None when it does not import."""
    try:
        mod = __import__(name)
        return str(getattr(mod, "__version__", "unknown"))
    except Exception:  # noqa: BLE001
        return None


def neuron_module():
    """TorchNeuron's device module (torch.neuron), once torch_neuronx has registered the
    device; None where this torch has no such device (PyTorch/XLA's torch-neuronx, or
    none)."""
    try:
        import torch_neuronx  # noqa: F401  registers the neuron device and process group
    except Exception:  # noqa: BLE001
        return None
    return getattr(torch, "neuron", None)


def pick_device(asked):
    """The device kind to train on: asked, or for auto the first of neuron (TorchNeuron
    installed and a device seen), xla (PyTorch/XLA's torch-neuronx with torch-xla), cuda
    (torch sees a GPU), cpu. trnbench decides auto itself on a Neuron machine (from the
    torch-neuronx version) and asks for the device; this is the script run by hand."""
    if asked != "auto":
        return asked
    mod = neuron_module()
    if mod is not None and getattr(mod, "is_available", lambda: False)():
        return "neuron"
    if importable("torch_neuronx") and importable("torch_xla"):
        return "xla"
    if torch.cuda.is_available():
        return "cuda"
    return "cpu"


class Env:
    """Where and how this process trains: rank, world, device, backend."""

    def __init__(self, kind):
        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.kind = kind
        self.xm = self.neuron = None
        if kind == "cpu":
            self.device, self.backend = torch.device("cpu"), "gloo"
            self.name = cpu_name()
            self.mem_gib = None
        elif kind == "cuda":
            if not torch.cuda.is_available():
                raise Unavailable(f"--device cuda: torch {torch.__version__} sees no CUDA device"
                                  + ("" if torch.version.cuda else " (a CPU-only build)"))
            if self.local_rank >= torch.cuda.device_count():
                raise Unavailable(f"process {self.local_rank} of this node has no GPU: "
                                  f"{torch.cuda.device_count()} visible")
            torch.cuda.set_device(self.local_rank)
            self.device, self.backend = torch.device("cuda", self.local_rank), "nccl"
            self.name = torch.cuda.get_device_name(self.device)
            self.mem_gib = torch.cuda.get_device_properties(self.device).total_memory / 2**30
        elif kind == "neuron":
            mod = neuron_module()
            if mod is None:
                raise Unavailable("--device neuron: TorchNeuron is not installed (torch-neuronx "
                                  "2.10 or later, the native backend; torch "
                                  f"{torch.__version__} has no neuron device)")
            count = mod.device_count() if hasattr(mod, "device_count") else 1
            # one logical NeuronCore a process: LOCAL_RANK's, or the one visible (as
            # TorchTitan's get_local_device picks, pytorch/torchtitan torchtitan/tools/utils.py)
            index = 0 if count == 1 else self.local_rank
            if index >= count:
                raise Unavailable(f"process {self.local_rank} of this node has no NeuronCore: "
                                  f"{count} visible")
            if hasattr(mod, "set_device"):
                mod.set_device(index)
            self.neuron = mod
            self.device, self.backend = torch.device("neuron", index), "neuron"
            self.name = neuron_device_name(mod, self.device)
            self.mem_gib = None
        else:
            try:
                import torch_xla.core.xla_model as xm
            except Exception as e:  # noqa: BLE001
                raise Unavailable(f"--device xla: torch_xla does not import ({e}); on Neuron "
                                  "install torch-neuronx") from None
            self.xm = xm
            self.device, self.backend = xm.xla_device(), "xla"
            self.name = xla_device_name(xm, self.device)
            self.mem_gib = None
        if self.world > 1:
            if kind == "xla":
                import torch_xla.distributed.xla_backend  # noqa: F401  registers "xla"
            torch.distributed.init_process_group(self.backend)

    def sync(self):
        """Wait for the device to finish the step's work."""
        if self.kind == "cuda":
            torch.cuda.synchronize(self.device)
        elif self.kind == "neuron":
            if hasattr(self.neuron, "synchronize"):
                self.neuron.synchronize()
        elif self.kind == "xla":
            self.xm.mark_step()  # cut the graph here and run it


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def neuron_device_name(mod, device):
    try:  # "trn2": the chip TorchTitan's peak-FLOPs table keys on
        kind = mod.get_device_properties().name
    except Exception:  # noqa: BLE001
        kind = "neuron"
    return f"{kind} ({device})"


def xla_device_name(xm, device):
    try:
        kind = xm.xla_device_hw(device)  # "NEURON", "TPU", "GPU", "CPU"
    except Exception:  # noqa: BLE001
        kind = "XLA"
    return f"{kind} ({device})"


def blas_info():
    """What torch computes products with on the CPU, as torch reports its build."""
    try:
        cfg = torch.__config__.show()
    except Exception:  # noqa: BLE001
        return "torch CPU"
    blas = re.search(r"BLAS_INFO=([^,\s]+)", cfg)
    dnn = re.search(r"MKL-DNN (v[0-9.]+)", cfg)
    return (f"torch CPU: BLAS {blas.group(1) if blas else 'unknown'}"
            + (f", oneDNN {dnn.group(1)}" if dnn else "")
            + f", {torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''}")


def environment(args, cfg, env):
    T, W = args.seq, env.world
    global_batch = args.batch * W
    info = {
        "event": "start",
        "protocol": PROTOCOL,
        "model": cfg["name"],
        "layers": cfg["layers"],
        "params": pl.param_count(cfg),
        "batch_per_rank": args.batch,
        "global_batch": global_batch,
        "seq": T,
        "steps": args.steps,
        "warmup_steps": args.warmup_steps,
        "precision": args.precision,
        "seed": args.seed,
        "lr": args.lr,
        "distinct_batches": args.distinct_batches,
        "tokens_per_step": global_batch * T,
        "flops_per_step": pl.flops(cfg, "train", global_batch, T, 1),
        "world_size": W,
        "device": env.kind,
        "device_name": env.name,
        "device_mem_gib": env.mem_gib,
        "backend": env.backend,
        "parallelism": ("data parallel: " + ("xm.optimizer_step all-reduce" if env.kind == "xla"
                                             else "DistributedDataParallel")) if W > 1 else "none",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cuda": torch.version.cuda,
        "torch_xla": version_of("torch_xla") if env.kind == "xla" else None,
        "torch_neuronx": version_of("torch_neuronx") if env.kind in ("xla", "neuron") else None,
        "neuronx_cc": version_of("neuronxcc") if env.kind in ("xla", "neuron") else None,
        "blas": ("cuBLAS (CUDA " + str(torch.version.cuda) + ")" if env.kind == "cuda"
                 else blas_info() if env.kind == "cpu"
                 else "TorchNeuron" if env.kind == "neuron" else "XLA"),
        "threads": torch.get_num_threads(),
        "attention": "SDPA" if hasattr(F, "scaled_dot_product_attention")
                     else "explicit softmax(q k^T / sqrt(d)) v in fp32 (torch has no SDPA)",
        "compile": ("xla: each new graph is traced and compiled (neuronx-cc on Neuron) in the "
                    "first steps; a persistent cache can make a later run's compilation short"
                    if env.kind == "xla" else
                    "torch.compile(backend=\"neuron\"): TorchDynamo's forward and backward "
                    "graphs lowered by the Neuron backend and compiled by neuronx-cc in the "
                    "first steps; TorchDynamo's cache can make a later run's compilation short"
                    if env.kind == "neuron" else
                    f"eager {env.kind}: no graph compilation; the first step includes "
                    "allocation and kernel selection"),
    }
    return info


# ---- training ----

def emit(obj):
    sys.stdout.write(json.dumps(obj, allow_nan=False) + "\n")
    sys.stdout.flush()


def make_batches(cfg, args, env):
    """--distinct-batches batches of [B, T+1] tokens for this process, drawn from the
    seed and its rank: inputs [K, B, T] and next-token targets [K, B, T]."""
    g = torch.Generator()
    g.manual_seed(args.seed * 1000003 + 7919 * (env.rank + 1))
    toks = torch.randint(0, cfg["vocab"], (args.distinct_batches, args.batch, args.seq + 1),
                         generator=g)
    return (toks[:, :, :-1].contiguous().to(env.device),
            toks[:, :, 1:].contiguous().to(env.device))


def build_model(cfg, args, env):
    # the peer draws weights with a generator on the model's device; torch-xla has no
    # device generators, so on xla (and neuron, whose generators the peer does not
    # assume) the model is drawn on the CPU and moved
    where = torch.device("cpu") if env.kind in ("xla", "neuron") else env.device
    model = pl.build(cfg, args.seq, torch.float32, args.seed, where)
    return model.to(env.device) if where != env.device else model


def make_optimizer(model, args, env):
    decay = [p for p in model.parameters() if p.dim() == 2]
    other = [p for p in model.parameters() if p.dim() != 2]
    opts = dict(pl.ADAMW, lr=args.lr)
    if env.kind == "cuda":
        try:  # one kernel for every tensor (torch 2.0+)
            return torch.optim.AdamW([{"params": decay}, {"params": other, "weight_decay": 0.0}],
                                     fused=True, **opts)
        except (TypeError, RuntimeError):
            pass
    return torch.optim.AdamW([{"params": decay}, {"params": other, "weight_decay": 0.0}], **opts)


def train(cfg, args, env):
    t_start = time.perf_counter()
    V, W = cfg["vocab"], env.world
    model = build_model(cfg, args, env)
    net = model
    if W > 1 and env.kind != "xla":
        # buffers (the RoPE tables) are the same everywhere: no broadcast each step
        net = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[env.local_rank] if env.kind == "cuda" else None,
            broadcast_buffers=False)
    if env.kind == "neuron":
        net = torch.compile(net, backend="neuron")
    opt = make_optimizer(model, args, env)
    inputs, targets = make_batches(cfg, args, env)
    tokens = args.batch * args.seq * W
    autocast = args.precision == "bf16"
    if env.rank == 0:
        emit(environment(args, cfg, env))
    log(f"rank {env.rank}/{W}: {cfg['name']} ({pl.param_count(cfg) / 1e6:.2f}M parameters) on "
        f"{env.kind} ({env.name}), B={args.batch} per process, T={args.seq}, {args.precision}, "
        f"{args.warmup_steps} warm-up + {args.steps} timed steps")
    times, losses = [], []
    for step in range(args.warmup_steps + args.steps):
        k = step % args.distinct_batches
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if autocast:
            with torch.autocast(env.kind, dtype=torch.bfloat16):
                logits = net(inputs[k])
        else:
            logits = net(inputs[k])
        loss = F.cross_entropy(logits.float().view(-1, V), targets[k].view(-1))
        loss.backward()
        if env.kind == "xla" and W > 1:
            env.xm.optimizer_step(opt)  # all-reduce of the gradients, then the step
        else:
            opt.step()
        env.sync()
        value = float(loss.detach().cpu())  # on xla: waits for the graph to run
        secs = time.perf_counter() - t0
        times.append(secs)
        losses.append(value)
        if env.rank == 0:
            line = {"event": "step", "step": step, "warmup": step < args.warmup_steps,
                    "loss": value, "step_time_s": secs, "tokens": tokens,
                    "tokens_per_s": tokens / secs, "world_size": W}
            if not math.isfinite(value):  # JSON has no NaN: null, and the text beside it
                line.update(loss=None, loss_text=repr(value))
            emit(line)
        if not math.isfinite(value):
            raise FloatingPointError(f"step {step}: loss {value}")
    timed = times[args.warmup_steps:]
    steady = statistics.median(timed)
    end = {"event": "end", "steps": len(times),
           "compile_s": sum(max(0.0, t - steady) for t in times[:args.warmup_steps]),
           "first_step_s": times[0], "steady_step_s": steady,
           "loss_first": losses[0], "loss_last": losses[-1],
           "wall_s": time.perf_counter() - t_start}
    if env.kind == "cuda":
        end["peak_mem_gib"] = torch.cuda.max_memory_allocated(env.device) / 2**30
    elif env.kind == "cpu":  # this process's peak resident set (KiB on Linux)
        end["peak_mem_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    if env.kind == "xla":
        try:
            import torch_xla.debug.metrics as met
            data = met.metric_data("CompileTime")  # (count, total ns, samples)
            if data:
                end["xla_compiles"], end["xla_compile_s"] = data[0], data[1] / 1e9
        except Exception:  # noqa: BLE001 - a figure we can do without
            pass
    if env.rank == 0:
        emit(end)
        log(f"{len(times)} steps: loss {losses[0]:.4f} -> {losses[-1]:.4f}, median "
            f"{steady * 1e3:.1f} ms a step, {tokens / steady:.1f} tokens/s")


def main(argv):
    args = parse_args(argv)
    try:
        cfg = pl.find_model(args.model)
        if args.layers:
            cfg = pl.truncate(cfg, args.layers)
    except pl.ModelError as e:
        log(str(e))
        return EXIT_USAGE
    rank = int(os.environ.get("RANK", "0"))
    try:
        if torch is None:
            raise Unavailable(f"torch not importable: {pl.TORCH_MISSING}")
        if args.seq > cfg["max_context"]:
            log(f"--seq: {args.seq} tokens exceed {cfg['name']}'s context of "
                f"{cfg['max_context']}")
            return EXIT_USAGE
        torch.manual_seed(args.seed)
        env = Env(pick_device(args.device))
    except Unavailable as e:
        if rank == 0:
            emit({"event": "unavailable", "reason": str(e)})
        log(str(e))
        return EXIT_UNAVAILABLE
    try:
        train(cfg, args, env)
    except Exception as e:  # noqa: BLE001 - any failure of torch is a failed run
        traceback.print_exc()
        reason = f"rank {env.rank}: {type(e).__name__}: {e}".splitlines()[0]
        if env.rank == 0:
            emit({"event": "error", "reason": reason})
        log(reason)
        return EXIT_FAILED
    finally:
        if env.world > 1 and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
