/* harness/run/tb_run_torch.c: the plan of a training run through PyTorch (executor=pytorch,
 * tb_run.h): the pytorch executor (measure/exec_torch.c) through tb_measure, then the
 * rows, whose provenance is the training script's own report rather than this
 * machine's engines: torch's version in `compiler`, the mode and the launch in
 * `cflags`, torch's libraries in `blas`, the script in `source`, the device it trained
 * on in `device` and, on accelerators, the chips its processes used in `chips_used`.
 * On Neuron the path that ran is in `device` ("..., TorchNeuron" or "..., torch-xla"),
 * `cflags` and `blas`; `torch_device=auto` is decided here from the torch-neuronx
 * installed (tb_torch_neuron_device), the launch asks for that device, and the notes
 * say which and why.
 * Beside the recorder's step_time_s, train_tokens_per_s, gflop_per_s and loss: compile_s
 * (the warm-up steps' time beyond a steady step), mfu against the catalogue chip of the
 * device (none on the CPU: the catalogue has no peak for a host CPU), and on a GPU the
 * peak device memory torch allocated. */
#include "tb_run.h"

#include "tb_executor.h"
#include "tb_log.h"
#include "tb_neuron.h"
#include "tb_neuron_sdk.h"
#include "tb_results.h"
#include "tb_stats.h"
#include "tb_timer.h"
#include "tb_torch.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Whether t trained on NeuronCores: TorchNeuron's device or PyTorch/XLA's. */
static bool on_neuron(const struct tb_train_report *t)
{
    return !strcmp(t->device, "neuron") || !strcmp(t->device, "xla");
}

/* The Neuron path in words, for `device` and the notes. */
static const char *neuron_path(const struct tb_train_report *t)
{
    return !strcmp(t->device, "neuron") ? "TorchNeuron" : "torch-xla";
}

/* `torch_device=auto` on a machine with Neuron devices: the device the installed
 * torch-neuronx trains on, into spec (the launch asks for it, and the report must
 * answer it); note says which and why, or why the script is left to choose. */
static void torch_auto_neuron(const struct tb_plan *p, struct tb_run_spec *spec, char *note,
                              size_t len)
{
    struct tb_neuron_sdk sdk;
    const char *dev;
    char why[400];
    tb_neuron_sdk_detect(&sdk, p->plat.root, getenv("VIRTUAL_ENV"), getenv("PATH"));
    dev = tb_torch_neuron_device(sdk.version[TB_NEURON_SDK_TORCH_NEURONX],
                                 sdk.version[TB_NEURON_SDK_NEURONX_CC], why, sizeof why);
    if (!dev) {
        snprintf(note, len, "torch_device auto: %s; the script chose by what imports", why);
        return;
    }
    snprintf(spec->torch.device, sizeof spec->torch.device, "%s", dev);
    {
        /* the environment read, where the versions came from: its last 150 characters */
        size_t k = strlen(sdk.python_env);
        snprintf(note, len, "torch_device auto: %s, as %.300s (%s%.150s, %.31s)", dev, why,
                 k > 150 ? "..." : "", sdk.python_env + (k > 150 ? k - 150 : 0),
                 sdk.python_env_from);
    }
}

/* The catalogue chip of the device t trained on, and how many chips its processes used
 * (*share: a process per GPU; a process per NeuronCore, so a fraction of a Neuron chip
 * each). NULL with why: the CPU, or a device the catalogue does not know. */
static const struct tb_chip *torch_chip(struct tb_plan *p, const struct tb_train_report *t,
                                        double *share, char *why, size_t whylen)
{
    char e[1024];
    *share = t->world_size;
    if (!strcmp(t->device, "cpu")) {
        snprintf(why, whylen,
                 "no mfu on the CPU: pricing/chips.csv has no dense peak for a host CPU");
        return NULL;
    }
    if (!p->have_model && tb_plan_load_model(p, e, sizeof e) != 0) {
        snprintf(why, whylen, "no mfu: the chip catalogue did not load: %.400s", e);
        return NULL;
    }
    if (!strcmp(t->device, "cuda")) {
        struct tb_cuda_info info;
        const struct tb_instance *inst;
        memset(&info, 0, sizeof info);
        snprintf(info.name, sizeof info.name, "%s", t->device_name);
        info.mem_gib = isfinite(t->device_mem_gib) ? t->device_mem_gib : 0;
        return tb_gpu_chip(&p->pricing, &info, &inst, why, whylen);
    }
    /* neuron, xla: the Neuron devices of this machine (sysfs), one process per NeuronCore */
    if (!p->plat.neuron_name[0]) {
        snprintf(why, whylen,
                 "no mfu: %s ran on '%s', but this machine shows no Neuron device in "
                 "/sys/class/neuron_device to name its chip",
                 neuron_path(t), t->device_name);
        return NULL;
    }
    for (size_t k = 0; k < p->pricing.nchips; k++) {
        const struct tb_chip *c = &p->pricing.chips[k];
        if (strcasecmp(c->name, p->plat.neuron_name))
            continue;
        {
            /* one process per logical NeuronCore (LNC=2 on Trainium2: 4 a chip) */
            int per_chip = p->lnc.per_device;
            if (per_chip <= 0)
                per_chip = (int)c->cores;
            *share = per_chip > 0 ? (double)t->world_size / per_chip : t->world_size;
        }
        return c;
    }
    snprintf(why, whylen, "no mfu: no chip named '%s' in pricing/chips.csv", p->plat.neuron_name);
    return NULL;
}

/* The warm-up steps' time beyond the median timed step: compilation and first-call
 * costs, the definition of compile_s (tb_vocab.c). */
static double compile_seconds(const struct tb_train_report *t, double steady)
{
    double s = 0;
    for (int i = 0; i < t->warmup_steps && i < t->nsteps; i++)
        s += t->secs[i] > steady ? t->secs[i] - steady : 0;
    return s;
}

int tb_plan_torch(struct tb_plan *p, size_t i, struct tb_run_counts *n)
{
    const struct tb_executor ex = {&tb_executor_torch, NULL};
    const struct tb_resolved *mr = &p->work[i];
    struct tb_run_spec spec = p->suite.runs[i];
    struct tb_workload w = {.spec = &spec, .arch = &mr->a};
    struct tb_record_ctx c = p->ctx;
    struct tb_record_extra x[TB_RECORD_MAX_EXTRA];
    struct tb_exec_result r;
    const struct tb_train_report *t;
    const struct tb_chip *chip;
    struct tb_stats st;
    char id[320], err[2048], summary[512], note[1400], compiler[160], cflags[256], source[1100];
    char chips[24], why[512], fell_text[160], nodes[64] = "", tag[48], path_note[600] = "";
    double share, before, after;
    struct tb_record_extra mx[3];
    tb_neuron_monitor_t mon = NULL;
    int has, nx = 0, fell, rc = 1, rc_measure, nmon;
    uint64_t t0;

    tb_plan_next(p, 1, tag, sizeof tag);
    spec.torch.on = true;
    snprintf(id, sizeof id, "%s", tb_executor_torch.id_prefix);
    tb_run_spec_id(&spec, id + strlen(id), sizeof id - strlen(id));
    if (!ex.i->can_run(NULL, &w, err, sizeof err)) {
        tb_logf("[%s] %s: not run by PyTorch: %s\n", tag, id, err);
        n->unsupported++;
        return 0;
    }
    has = tb_plan_already(p, id, tag, n);
    if (has != 0)
        return has < 0 ? -1 : 0;
    /* the run id keeps "auto" (what was asked); the launch asks for what auto chose */
    if (!strcmp(spec.torch.device, TB_TORCH_DEVICE_AUTO) && p->plat.neuron_devices > 0) {
        torch_auto_neuron(p, &spec, path_note, sizeof path_note);
        tb_logf("[%s] %s\n", tag, path_note);
    }
    tb_logf("[%s] %s (PyTorch, %d process%s, device %s: %d warm-up + %d timed "
            "steps) ...\n",
            tag, id, spec.torch.nproc_per_node, spec.torch.nproc_per_node == 1 ? "" : "es",
            spec.torch.device, spec.warmup, spec.reps);
    /* on a Neuron machine neuron-monitor runs beside the script unless it trains on the
     * CPU; its figures are kept only when the script ran on NeuronCores (neuron, xla) */
    if (p->plat.neuron_devices > 0 && strcmp(spec.torch.device, "cpu") != 0)
        mon = tb_plan_monitor_start(p);
    w.progress = tb_plan_progress(p, tag, id);
    t0 = tb_timer_now_ns();
    rc_measure = tb_measure(&ex, &w, &r, err, sizeof err);
    nmon = tb_plan_monitor_stop(mon, mx, 3);
    if (rc_measure != 0) {
        if (r.elsewhere) {
            tb_logf("[%s] %s: %s\n", tag, id, err);
            n->elsewhere++;
            rc = 0;
        } else if (r.unavailable && p->which != TB_RUN_PYTORCH) {
            /* a suite's executor=pytorch line where there is no torch or device: skipped */
            tb_logf("[%s] %s: not run by PyTorch: %s\n", tag, id, err);
            n->unsupported++;
            rc = 0;
        } else if (r.unavailable) {
            /* --executor pytorch asked for exactly this, as --executor cuda for a GPU */
            tb_logf("%s: --executor pytorch: %s; nothing recorded\n", id, err);
        } else {
            tb_logf("%s: %s; nothing recorded\n", id, err);
        }
        goto out;
    }
    if (!r.valid || !r.train) {
        tb_logf("%s: %s; nothing recorded\n", id, r.valid ? "no report" : r.note);
        goto out;
    }
    t = r.train;

    /* ---- the provenance: the script's report ---- */
    c.executor = tb_executor_torch.name;
    snprintf(compiler, sizeof compiler, "torch %s%s%s", t->torch, t->python[0] ? " (python " : "",
             t->python[0] ? t->python : "");
    if (t->python[0])
        strcat(compiler, ")");
    if (spec.torch.rdzv_endpoint[0])
        snprintf(nodes, sizeof nodes, "nnodes=%d (c10d rendezvous) ",
                 spec.torch.nnodes > 1 ? spec.torch.nnodes : 1);
    snprintf(cflags, sizeof cflags, "%s, %s, torchrun %snproc_per_node=%d, %s over %s",
             !strcmp(t->device, "xla")      ? "xla (lazy tensors, compiled graphs)"
             : !strcmp(t->device, "neuron") ? "TorchNeuron (device neuron)"
                                            : "eager",
             strcmp(t->precision, "bf16") ? "fp32" : "bf16 autocast, fp32 master weights", nodes,
             spec.torch.nproc_per_node, t->world_size > 1 ? t->parallelism : "one process",
             t->backend);
    if (!strcmp(t->device, "xla"))
        snprintf(c.blas, sizeof c.blas, "torch-xla %s, torch-neuronx %s, neuronx-cc %s",
                 t->torch_xla[0] ? t->torch_xla : "?", t->torch_neuronx[0] ? t->torch_neuronx : "-",
                 t->neuronx_cc[0] ? t->neuronx_cc : "-");
    else if (!strcmp(t->device, "neuron"))
        snprintf(c.blas, sizeof c.blas, "TorchNeuron: torch-neuronx %s, neuronx-cc %s",
                 t->torch_neuronx[0] ? t->torch_neuronx : "?",
                 t->neuronx_cc[0] ? t->neuronx_cc : "-");
    else
        snprintf(c.blas, sizeof c.blas, "%s", t->blas[0] ? t->blas : "torch's own");
    c.compiler = compiler;
    c.cflags = cflags;
    snprintf(source, sizeof source, "%s",
             spec.torch.script[0] ? spec.torch.script : "workloads/train/llama_train.py");
    c.source = source;
    chip = torch_chip(p, t, &share, why, sizeof why);
    c.accel_unused[0] = '\0';
    c.chips_used = NULL;
    c.engine = NULL; /* PyTorch's, not one of ours */
    if (!strcmp(t->device, "cpu")) {
        char what[256];
        /* c.device stays the plan's "<CPU> (host CPU)": the report keeps such rows apart */
        tb_platform_accelerators(&p->plat, what, sizeof what);
        if (what[0])
            snprintf(c.accel_unused, sizeof c.accel_unused,
                     "%.300s: the PyTorch training ran on the host CPU (torch_device=%s)", what,
                     spec.torch.device);
    } else {
        long used = (long)ceil(share - 1e-9);
        snprintf(chips, sizeof chips, "%ld", used < 1 ? 1 : used);
        /* NeuronCores of an unknown chip are not chips: the whole instance is charged */
        c.chips_used = on_neuron(t) && !chip ? NULL : chips;
        if (!strcmp(t->device, "cuda"))
            snprintf(c.device, sizeof c.device, "%.200s x%d", t->device_name, t->world_size);
        else if (chip)
            snprintf(c.device, sizeof c.device, "%s x%s (%d NeuronCore%s, %s)", chip->name, chips,
                     t->world_size, t->world_size == 1 ? "" : "s", neuron_path(t));
        else
            snprintf(c.device, sizeof c.device, "%.200s x%d (%s)", t->device_name, t->world_size,
                     neuron_path(t));
    }

    /* ---- the rows beside the recorder's ---- */
    if (tb_stats_compute(&st, r.secs, (size_t)r.reps, err, sizeof err) != 0) {
        tb_logf("%s: %s; nothing recorded\n", id, err);
        goto out;
    }
    x[nx] = (struct tb_record_extra){.metric = "compile_s",
                                     .unit = "s",
                                     .value = compile_seconds(t, st.median),
                                     .n = t->warmup_steps};
    snprintf(x[nx].notes, sizeof x[nx].notes,
             "the %d warm-up step%s time beyond the median timed step (first step %.4g s); %.200s",
             t->warmup_steps, t->warmup_steps == 1 ? "'s" : "s'", t->secs[0],
             t->compile_how[0] ? t->compile_how : "as the script ran it");
    if (isfinite(t->xla_compile_s)) {
        size_t k = strlen(x[nx].notes);
        snprintf(x[nx].notes + k, sizeof x[nx].notes - k,
                 "; torch-xla's CompileTime: %ld graph%s, %.4g s", t->xla_compiles,
                 t->xla_compiles == 1 ? "" : "s", t->xla_compile_s);
    }
    nx++;
    {
        double peak = !chip                          ? NAN
                      : strcmp(t->precision, "bf16") ? chip->fp32_tflops
                                                     : chip->bf16_dense_tflops;
        if (chip && peak > 0) {
            x[nx] = (struct tb_record_extra){.metric = "mfu",
                                             .unit = "fraction",
                                             .value = r.flops / st.median / (share * peak * 1e12),
                                             .n = r.reps};
            snprintf(x[nx].notes, sizeof x[nx].notes,
                     "model FLOPs / (median step time x %.4g chip%s x %.1f TFLOP/s, the %s's "
                     "%s peak in pricing/chips.csv)%s%.300s",
                     share, share == 1 ? "" : "s", peak, chip->name,
                     strcmp(t->precision, "bf16") ? "fp32" : "dense bf16",
                     on_neuron(t) ? "; one process per logical NeuronCore, " : "",
                     on_neuron(t) ? p->lnc.how : "");
            nx++;
        } else if (chip) {
            snprintf(why, sizeof why, "no mfu: pricing/chips.csv has no %s peak for the %s",
                     t->precision, chip->name);
        }
    }
    if (!strcmp(t->device, "cuda") && isfinite(t->peak_mem_gib)) {
        x[nx] = (struct tb_record_extra){
            .metric = "device_mem_gib", .unit = "GiB", .value = t->peak_mem_gib, .n = 1};
        snprintf(x[nx].notes, sizeof x[nx].notes,
                 "torch.cuda.max_memory_allocated of rank 0: weights, gradients, AdamW state and "
                 "activations, besides the CUDA context and torch's cache");
        nx++;
    }
    for (int k = 0; k < nmon && on_neuron(t) && nx < TB_RECORD_MAX_EXTRA; k++)
        x[nx++] = mx[k];
    fell = tb_train_loss_fell(t, &before, &after);
    if (fell == 1)
        snprintf(fell_text, sizeof fell_text,
                 "the loss fell on the %d batches the script cycles: mean %.4f over the first %d "
                 "steps, %.4f over the last %d",
                 t->distinct_batches, before, t->distinct_batches, after, t->distinct_batches);
    else
        snprintf(fell_text, sizeof fell_text,
                 "too few steps to see the loss fall (%d steps, %d batches cycled)", t->nsteps,
                 t->distinct_batches);
    {
        size_t k = (size_t)snprintf(note, sizeof note,
                                    "PyTorch on %s (%.100s), %d process%s; %s%s%s", t->device,
                                    t->device_name, t->world_size, t->world_size == 1 ? "" : "es",
                                    path_note, path_note[0] ? "; " : "", fell_text);
        if (!chip && k < sizeof note)
            k += (size_t)snprintf(note + k, sizeof note - k, "; %.200s", why);
        if (t->attention[0] && k < sizeof note)
            snprintf(note + k, sizeof note - k, "; attention %.120s", t->attention);
    }
    if (tb_record_run(&c, &spec, &mr->a, NULL, &r, id, x, nx, note, summary, sizeof summary, err,
                      sizeof err) != 0) {
        tb_logf("%s\n", err);
        rc = -1;
        goto out;
    }
    tb_logf("  %s\n", summary);
    tb_logf("  %.1f s wall\n", tb_timer_seconds(t0, tb_timer_now_ns()));
    n->measured++;
    rc = 0;
out:
    tb_exec_result_release(&r);
    return rc;
}
