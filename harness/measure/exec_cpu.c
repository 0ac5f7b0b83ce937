/* harness/measure/exec_cpu.c: the cpu executor (tb_executor.h): the Llama engine
 * (workloads/llama/) and the diffusion engines (workloads/diffusion/) on this CPU, in
 * fp32, timed on CLOCK_MONOTONIC with PAPI counters around the timed repetitions. */
#include "tb_exec.h"

#include "tb_util.h"
#include "workloads/diffusion/diffusion.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A run's state: a Llama engine (the run's own, or the caller's for tb_exec_time) or a
 * diffusion engine. */
struct cpu_run {
    const struct tb_run_spec *spec; /* borrowed */
    bool diffusion;
    /* Llama */
    struct tb_llama own;                          /* the run's engine when engine == &own */
    struct tb_llama *engine;                      /* borrowed or &own; NULL until set up */
    const int *tokens;                            /* [B, T] prompt or training ids */
    const int *targets;                           /* [B, T] train only */
    int *own_tokens, *own_targets, *first, *next; /* owned */
    struct tb_adamw opt;
    /* diffusion */
    struct tb_diffusion dm;
    bool have_dm;
    const struct tb_darch *darch; /* borrowed */
    float *latents;               /* owned: [B, C, lat, lat] */
    int dsteps;
};

static bool finite_all(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return false;
    return true;
}

bool tb_exec_can_run(const struct tb_run_spec *spec, char *why, size_t whylen)
{
    if (!strcmp(spec->precision, "fp32"))
        return true;
    snprintf(why, whylen,
             "precision %s: the CPU engine computes in fp32 only (%s runs on the GPU executor)",
             spec->precision, spec->precision);
    return false;
}

static bool cpu_can_run(const void *self, const struct tb_workload *w, char *why, size_t whylen)
{
    (void)self;
    return tb_exec_can_run(w->spec, why, whylen);
}

/* The work of one repetition and, for decode, the prompt's greedy tokens (the prefill,
 * once and untimed, that every repetition restarts from). */
static int llama_prepare(struct cpu_run *x, struct tb_exec_result *r, char *err, size_t errlen)
{
    const struct tb_run_spec *spec = x->spec;
    const int B = spec->batch, T = spec->seq_in, V = x->engine->arch->vocab;

    if (tb_exec_result_init(r, spec, x->engine->arch, 4, 4, err, errlen) != 0)
        return -1;
    r->engine_bytes = tb_llama_bytes(x->engine);
    x->opt = tb_adamw_default();
    x->first = tb_alloc_array((size_t)B, sizeof *x->first);
    x->next = tb_alloc_array((size_t)B, sizeof *x->next);
    if (!x->first || !x->next)
        return tb_err(err, errlen, "out of memory for %d sequences", B);
    if (spec->phase == TB_PHASE_DECODE) {
        if (tb_llama_prefill(x->engine, x->tokens, B, T, err, errlen) != 0)
            return -1;
        if (!finite_all(x->engine->logits, (size_t)B * V))
            tb_exec_invalid(r, "prefill logits not finite");
        tb_exec_argmax(x->engine->logits, B, V, x->first);
    }
    return 0;
}

static int cpu_setup(void *self, const struct tb_workload *w, struct tb_exec_result *r, void **run,
                     char *err, size_t errlen)
{
    const struct tb_run_spec *spec = w->spec;
    struct cpu_run *x = calloc(1, sizeof *x);
    (void)self;
    *run = x;
    if (!x)
        return tb_err(err, errlen, "out of memory");
    x->spec = spec;
    if (w->darch) {
        const struct tb_darch *a = w->darch;
        const int res = spec->resolution ? spec->resolution : a->resolution;
        const int B = spec->batch, lat = res / a->vae_scale;
        x->diffusion = true;
        x->darch = a;
        x->dsteps = spec->steps ? spec->steps : a->default_steps;
        if (tb_exec_result_init_denoise(r, spec, a, err, errlen) != 0)
            return -1;
        x->latents = tb_alloc_array((size_t)B * a->latent_channels * lat * lat, sizeof *x->latents);
        if (!x->latents)
            return tb_err(err, errlen, "out of memory for %d images", B);
        if (tb_diffusion_init(&x->dm, a, a->cfg ? 2 * B : B, lat, lat, spec->seed, err, errlen) !=
            0)
            return -1;
        x->have_dm = true;
        r->engine_bytes = x->dm.n_params * sizeof(float);
        return 0;
    }
    {
        const bool train = spec->phase == TB_PHASE_TRAIN;
        const int max_seq = spec->seq_in + (spec->phase == TB_PHASE_DECODE ? spec->seq_out : 0);
        if (tb_exec_inputs(spec, w->arch->vocab, &x->own_tokens, &x->own_targets, err, errlen) != 0)
            return -1;
        x->tokens = x->own_tokens;
        x->targets = x->own_targets;
        if (tb_llama_init(&x->own, w->arch, spec->batch, max_seq, train ? TB_LLAMA_TRAIN : 0,
                          spec->seed, err, errlen) != 0)
            return -1;
        x->engine = &x->own;
        return llama_prepare(x, r, err, errlen);
    }
}

static int cpu_rep(void *run, int k, struct tb_exec_result *r, double *secs, char *err,
                   size_t errlen)
{
    struct cpu_run *x = run;
    const struct tb_run_spec *spec = x->spec;
    const int B = spec->batch, T = spec->seq_in;
    (void)secs;
    if (x->diffusion) {
        /* guidance 5: a typical scale; the work does not depend on it */
        if (tb_diffusion_sample(&x->dm, B, x->dsteps, 5.0f,
                                spec->seed + (uint64_t)(k + spec->warmup), x->latents, err,
                                errlen) != 0) {
            /* a non-finite result is a failed validation, not an engine error */
            if (strstr(err, "not finite")) {
                tb_exec_invalid(r, err);
                return 1;
            }
            return -1;
        }
        return 0;
    }
    switch (spec->phase) {
    case TB_PHASE_PREFILL:
        return tb_llama_prefill(x->engine, x->tokens, B, T, err, errlen);
    case TB_PHASE_DECODE:
        memcpy(x->next, x->first, (size_t)B * sizeof *x->next);
        for (int s = 0; s < spec->seq_out; s++) {
            if (tb_llama_decode(x->engine, x->next, B, T + s, err, errlen) != 0)
                return -1;
            tb_exec_argmax(x->engine->logits, B, x->engine->arch->vocab, x->next);
        }
        return 0;
    case TB_PHASE_TRAIN: {
        float loss = 0.0f;
        if (tb_llama_train_step(x->engine, x->tokens, x->targets, B, T, &x->opt, &loss, err,
                                errlen) != 0)
            return -1;
        tb_exec_loss(r, spec, k, loss);
        return 0;
    }
    case TB_PHASE_DENOISE:
    case TB_PHASE_SERVE:
        break;
    }
    return tb_err(err, errlen, "phase %s is not a Llama run", tb_phase_to_string(spec->phase));
}

static int cpu_validate(void *run, int k, struct tb_exec_result *r, char *err, size_t errlen)
{
    struct cpu_run *x = run;
    (void)k;
    (void)err;
    (void)errlen;
    /* diffusion: the sampler checks its latents after every step (cpu_rep); train: the
     * loss (cpu_rep) */
    if (!x->diffusion && x->spec->phase != TB_PHASE_TRAIN &&
        !finite_all(x->engine->logits, (size_t)x->spec->batch * x->engine->arch->vocab))
        tb_exec_invalid(r, "logits not finite");
    return 0;
}

static int cpu_finish(void *run, struct tb_exec_result *r, char *err, size_t errlen)
{
    struct cpu_run *x = run;
    (void)err;
    (void)errlen;
    if (!x->diffusion && x->spec->phase == TB_PHASE_TRAIN)
        tb_exec_check_first_loss(r, x->engine->arch->vocab);
    return 0;
}

static void cpu_teardown(void *run)
{
    struct cpu_run *x = run;
    if (!x)
        return;
    if (x->engine == &x->own)
        tb_llama_release(&x->own);
    if (x->have_dm)
        tb_diffusion_release(&x->dm);
    free(x->own_tokens);
    free(x->own_targets);
    free(x->first);
    free(x->next);
    free(x->latents);
    free(x);
}

const struct tb_executor_i tb_executor_cpu = {
    .name = "cpu",
    .what = "CPU",
    .provenance = "measured",
    .id_prefix = "",
    .flags = TB_EXEC_HOST_COUNTERS,
    .can_run = cpu_can_run,
    .setup = cpu_setup,
    .rep = cpu_rep,
    .validate = cpu_validate,
    .finish = cpu_finish,
    .teardown = cpu_teardown,
};

/* ---- the CPU executor's entry points (tb_exec.h) ---- */

int tb_exec_time(struct tb_llama *m, const struct tb_run_spec *spec, const int *tokens,
                 const int *targets, struct tb_exec_result *r, char *err, size_t errlen)
{
    struct cpu_run *x = calloc(1, sizeof *x);
    int rc = -1;
    memset(r, 0, sizeof *r);
    if (!x)
        return tb_err(err, errlen, "out of memory");
    x->spec = spec;
    x->engine = m; /* the caller's */
    x->tokens = tokens;
    x->targets = targets;
    if (llama_prepare(x, r, err, errlen) == 0)
        rc = tb_measure_run(&tb_executor_cpu, x, spec, r, err, errlen);
    cpu_teardown(x);
    return rc;
}

int tb_exec_run(const struct tb_run_spec *spec, const struct tb_arch *arch,
                struct tb_exec_result *r, char *err, size_t errlen)
{
    const struct tb_executor ex = {&tb_executor_cpu, NULL};
    const struct tb_workload w = {.spec = spec, .arch = arch};
    return tb_measure(&ex, &w, r, err, errlen);
}

int tb_exec_run_denoise(const struct tb_run_spec *spec, const struct tb_darch *a,
                        struct tb_exec_result *r, char *err, size_t errlen)
{
    const struct tb_executor ex = {&tb_executor_cpu, NULL};
    const struct tb_workload w = {.spec = spec, .darch = a};
    return tb_measure(&ex, &w, r, err, errlen);
}
