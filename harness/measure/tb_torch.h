/*
 * harness/measure/tb_torch.h: training through PyTorch, the side of trnbench that launches
 * the training script and reads what it says. The pytorch executor (exec_torch.c) runs
 * every training run of executor=pytorch through here; the script is
 * workloads/train/llama_train.py (its docstring states the protocol from its side) or any
 * script that speaks the same protocol (train_script=FILE: an NxD script, say).
 *
 * The launch, an argv and no shell (tb_proc.h: its own process group, a time limit that
 * ends every rank):
 *   PYTHON <datadir>/workloads/train/torchrun_compat.py --standalone
 *          --nproc_per_node K SCRIPT --model FILE.model [--layers N] --batch B/K
 *          --seq T --steps R --warmup-steps W --precision P --device D --seed S
 * Across the nodes of a Slurm job (spec->torch.nnodes > 1 or a rendezvous endpoint set:
 * `run --slurm --executor pytorch`), one such launch a node with, instead of --standalone,
 *          --nnodes N --node_rank R --rdzv_backend c10d --rdzv_endpoint HOST:PORT
 *          --rdzv_id ID
 * and --batch B/(N*K). The c10d rendezvous numbers the nodes itself (by host name), so
 * the script's rank 0 runs on one of the nodes, not necessarily node 0: that node's
 * launch reads the report; the others see no JSON line (TB_TRAIN_ELSEWHERE).
 * torchrun_compat.py is `python3 -m torch.distributed.run` (torchrun) with a repair for
 * torch 1.13 under Python 3.11, where torchrun cannot start (see the file). B is the
 * run's global batch, K processes share it; R and W are the run's timed and warm-up
 * repetitions, one step each.
 *
 * The script's stdout, rank 0 only: one JSON object a line. Lines that do not start
 * with '{' are not the protocol's (torchrun, neuronx-cc and libraries print there too)
 * and are ignored; every line that starts with '{' must be one of
 *   {"event": "start", "protocol": 1, "model", "layers", "world_size", "global_batch",
 *    "seq", "steps", "warmup_steps", "precision", "device" (cpu|cuda|neuron|xla),
 *    "device_name", "backend", "torch", "tokens_per_step", "flops_per_step",
 *    "distinct_batches", and optionally "device_mem_gib", "python", "cuda",
 *    "torch_xla", "torch_neuronx", "neuronx_cc", "blas", "attention", "compile",
 *    "parallelism"}                                      first
 *   {"event": "step", "step" (0, 1, ...), "warmup", "loss" (a number, or null when not
 *    finite, "loss_text" then saying what), "step_time_s", "tokens", "tokens_per_s",
 *    "world_size"}                                       one per step, in order
 *   {"event": "end", "compile_s", and optionally "peak_mem_gib", "xla_compile_s",
 *    "xla_compiles", "wall_s"}                           last
 *   {"event": "unavailable", "reason"}   it cannot run here (exit 3): no torch, device
 *   {"event": "error", "reason"}         a step failed (exit 1)
 * A field of the wrong type or out of range, a step out of order, tokens_per_s that is
 * not tokens / step_time_s, a world size or shape other than asked, FLOPs other than
 * trnbench counts (tb_flops.h, to 1e-6) or a missing line is malformed output: the run
 * fails with the line and the field, and records nothing.
 *
 * Ownership: a tb_train_report owns its per-step arrays; release it with
 * tb_train_report_release, also after a failure. Not thread-safe.
 */
#ifndef TB_TORCH_H
#define TB_TORCH_H

#include "tb_arch.h"
#include "tb_suite.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define TB_TORCH_PROTOCOL         1
#define TB_TORCH_EXIT_UNAVAILABLE 3

/* What the training script reported. Numbers it did not give are NAN (or 0). */
struct tb_train_report {
    /* the start line */
    char model[64];
    int layers, world_size, steps, warmup_steps, distinct_batches;
    long global_batch, seq;
    char precision[8];
    char device[8];        /* "cpu", "cuda", "neuron" (TorchNeuron) or "xla" (PyTorch/XLA) */
    char device_name[160]; /* "NVIDIA H100 80GB HBM3", the CPU model, "NEURON (xla:0)",
                              "trn2 (neuron:0)" */
    double device_mem_gib; /* the device's memory (cuda) */
    char backend[16];      /* "gloo", "nccl", "neuron", "xla" */
    char parallelism[96];
    char torch[64], python[32], cuda[32], torch_xla[64], torch_neuronx[64], neuronx_cc[64];
    char blas[192], attention[160], compile_how[320];
    double tokens_per_step; /* all processes together */
    double flops_per_step;
    bool have_start;
    /* the step lines */
    int nsteps;
    double *loss;      /* owned: [warmup_steps + steps]; NAN where it was not finite */
    double *secs;      /* owned: [warmup_steps + steps] */
    int bad_step;      /* the first step whose loss was not finite, -1 for none */
    char bad_loss[32]; /* what that loss was ("nan", "inf") */
    /* the end line */
    bool have_end;
    double compile_s, peak_mem_gib, xla_compile_s, wall_s;
    long xla_compiles;
};

enum tb_train_status {
    TB_TRAIN_OK = 0,
    TB_TRAIN_FAILED = -1,     /* it failed, timed out or wrote malformed output: msg says */
    TB_TRAIN_UNAVAILABLE = 1, /* it cannot run here (no interpreter, torch or device) */
    TB_TRAIN_ELSEWHERE = 2,   /* across nodes: it ran, and rank 0 (the report) was on
                                 another node */
};

/* Read the script's stdout (len bytes; name for messages, e.g. "llama_train.py output").
 * Returns TB_TRAIN_OK (t holds what it said; completeness is tb_train_check's),
 * TB_TRAIN_UNAVAILABLE with the script's reason in err (an "unavailable" line), or
 * TB_TRAIN_FAILED with "name: line N: field 'loss': ..." or "the script failed: REASON"
 * (an "error" line). Release t in every case. */
int tb_train_parse(struct tb_train_report *t, const char *name, const char *text, size_t len,
                   char *err, size_t errlen);
void tb_train_report_release(struct tb_train_report *t);

/* Whether t answers spec (a training run of executor=pytorch) on arch: the model and its
 * layers, world size = nnodes x nproc_per_node, global batch, seq, steps and warm-up steps,
 * precision, the device asked (unless auto), every step and the end line there, tokens
 * = batch x seq, and model FLOPs of a step as trnbench counts them (tb_flops_train, to
 * 1e-6). Returns 0, or -1 with "name: field 'world_size': 1, but 2 processes were asked". */
int tb_train_check(const struct tb_train_report *t, const char *name,
                   const struct tb_run_spec *spec, const struct tb_arch *arch, char *err,
                   size_t errlen);

/* Whether the loss fell: the mean loss of the first distinct_batches steps against that
 * of the last as many, the same batches in the same order (so nothing but training
 * changes it). Returns 1 (fell), 0 (it did not: before and after say), or -1 when the
 * run has fewer than twice distinct_batches steps (the windows would overlap). */
int tb_train_loss_fell(const struct tb_train_report *t, double *before, double *after);

/* The device `torch_device=auto` trains on where the machine has Neuron devices, from
 * the versions of two packages of its Python environment (tb_neuron_sdk.h reads them
 * from their metadata; NULL or "" where not found):
 *
 *   torch_neuronx  one package name for two backends, told apart by the PyTorch
 *                  release its version starts with (aws-neuron/aws-neuron-sdk
 *                  release-notes/components/pytorch.rst, Neuron 2.27-2.29: "PyTorch 2.9
 *                  is the last version using PyTorch/XLA", TorchNeuron from PyTorch
 *                  2.10; the TorchNeuron release notes of Neuron 2.33 pair
 *                  torch-neuronx 2.14.* with PyTorch 2.14): 2.10 and later TorchNeuron,
 *                  2.9 and earlier PyTorch/XLA (2.9.0.2.15.32035, Neuron 2.31's, the last
 *                  shipped: setup/pytorch/manual.rst at Neuron 2.32)
 *   neuronx_cc     the compiler, whose minor version follows the SDK release in the
 *                  setup pages' pins (frameworks/torch/torch-neuronx/setup/
 *                  pytorch-install-prev-u24.rst: Neuron 2.29.1 neuronx-cc 2.24.8799.0,
 *                  2.30.0 2.25.3371.0, 2.31.0 2.26.6360.0; manual.rst: 2.32 2.27.5334.0):
 *                  2.25 or later is Neuron 2.30 or later, where PyTorch/XLA training is
 *                  no longer supported (about-neuron/announcements/neuron2.x/
 *                  announce-no-support-pytorch-xla-training.rst)
 *
 * The choice: "neuron" (TorchNeuron, the native device) where torch-neuronx is
 * TorchNeuron, or where the SDK is 2.30 or later whatever torch-neuronx is there (a
 * PyTorch/XLA one left from an older SDK is not the training path any more: the script
 * then says TorchNeuron is missing, and `torch_device=xla` still runs it); "xla" where
 * torch-neuronx is PyTorch/XLA on an SDK before 2.30 (or of no compiler found); NULL
 * where neither version says anything (the script chooses by what imports). why: the
 * reason in words, for the rows' notes (always set). */
const char *tb_torch_neuron_device(const char *torch_neuronx, const char *neuronx_cc, char *why,
                                   size_t whylen);

/* The processes of spec's training: nnodes x nproc_per_node. */
int tb_train_world(const struct tb_run_spec *spec);

/* The script of spec (its train_script, or <datadir>/workloads/train/llama_train.py)
 * into path. Returns 0, or -1 with a message (name too long). */
int tb_train_script(const struct tb_run_spec *spec, char *path, size_t len, char *err,
                    size_t errlen);

/* Launch spec's training of arch as above, wait for it (spec->torch.timeout_s at most;
 * echo gets the processes' stderr lines as they come, each after "  pytorch: "; NULL:
 * none) and read and check its report into *t. Returns a tb_train_status with msg set:
 * why it is unavailable (the interpreter does not run, torch does not import, the
 * script's reason), or what failed ("'python3 ... torchrun' timed out after 60 s, 3 of
 * 8 steps reported", the script's error, malformed output). Release t in every case. */
int tb_train_run(const struct tb_run_spec *spec, const struct tb_arch *arch, FILE *echo,
                 struct tb_train_report *t, char *msg, size_t msglen);

#endif
