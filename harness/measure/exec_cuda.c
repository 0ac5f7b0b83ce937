/* harness/measure/exec_cuda.c: the cuda executor (tb_executor.h) over the CUDA plugin
 * (tb_gpu.h): Llama prefill, decode and training and the diffusion denoisers on one
 * GPU, in bf16 mixed precision or fp8, timed with CUDA events, energy from NVML. */
#include "tb_gpu.h"

#include "tb_timer.h"
#include "tb_util.h"
#include "workloads/diffusion/diffusion.h"
#include "workloads/llama/llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A run's state on the device. */
struct cuda_run {
    const struct tb_gpu *g;         /* borrowed */
    const struct tb_cuda_api *api;  /* borrowed: g->api */
    const struct tb_run_spec *spec; /* borrowed */
    bool diffusion;
    void *eng; /* owned: the plugin's engine */
    /* Llama */
    int V;
    int *tokens, *targets, *first; /* owned */
    struct tb_cuda_adamw opt;
    /* diffusion */
    const struct tb_darch *darch; /* borrowed */
    int dsteps, lat;
    size_t img;
    float *latents, *ctx, *pooled, *ts, *c_in, *dt; /* owned */
    /* energy over the timed repetitions */
    unsigned long long mj0, mj1;
    bool energy;
    uint64_t t0, t1;
    char eerr[256];
};

bool tb_gpu_can_run(const struct tb_gpu *g, const struct tb_run_spec *spec, char *why,
                    size_t whylen)
{
    const struct tb_cuda_info *i = &g->info;
    if (strcmp(spec->precision, "fp8"))
        return true;
    if (spec->phase != TB_PHASE_PREFILL && spec->phase != TB_PHASE_DECODE) {
        snprintf(why, whylen, "precision fp8 is for inference (prefill, decode), not %s",
                 tb_phase_to_string(spec->phase));
        return false;
    }
    if (g->api && i->cc_major * 10 + i->cc_minor < 89) {
        snprintf(why, whylen,
                 "fp8 products need compute capability 8.9 or later (this device: %d.%d)",
                 i->cc_major, i->cc_minor);
        return false;
    }
    return true;
}

static bool cuda_can_run(const void *self, const struct tb_workload *w, char *why, size_t whylen)
{
    const struct tb_gpu *g = self;
    if (!g->api) {
        snprintf(why, whylen, "no GPU: %s", g->why);
        return false;
    }
    return tb_gpu_can_run(g, w->spec, why, whylen);
}

static void cuda_adapt(const void *self, struct tb_run_spec *spec)
{
    (void)self;
    if (!strcmp(spec->precision, "fp32")) /* the GPU engine's mixed precision */
        snprintf(spec->precision, sizeof spec->precision, "bf16");
}

static int setup_llama(struct cuda_run *x, const struct tb_arch *arch, struct tb_exec_result *r,
                       char *err, size_t errlen)
{
    const struct tb_cuda_api *api = x->api;
    const struct tb_run_spec *spec = x->spec;
    const int B = spec->batch, T = spec->seq_in, V = arch->vocab;
    const int max_seq = T + (spec->phase == TB_PHASE_DECODE ? spec->seq_out : 0);
    const bool train = spec->phase == TB_PHASE_TRAIN;
    const bool fp8 = !strcmp(spec->precision, "fp8");
    struct tb_adamw cpu_opt = tb_adamw_default();
    struct tb_cuda_llama_weights w;
    struct tb_llama cpu;
    size_t *layer_off = NULL;
    float *rope_cos = NULL, *rope_sin = NULL, *logits = NULL;
    bool have_cpu = false;
    int rc = -1;

    x->V = V;
    x->opt = (struct tb_cuda_adamw){cpu_opt.lr, cpu_opt.beta1, cpu_opt.beta2, cpu_opt.eps,
                                    cpu_opt.weight_decay};
    /* decode reads each step's weights once: fp8 holds the layers' in 1 byte, the LM
     * head stays bf16 (2 bytes); the KV cache is bf16 either way */
    if (tb_exec_result_init(r, spec, arch, fp8 ? 1 : 2, 2, err, errlen) != 0)
        return -1;
    if (fp8)
        r->bytes += r->steps * (double)arch->vocab * arch->hidden;
    if (tb_exec_inputs(spec, V, &x->tokens, &x->targets, err, errlen) != 0)
        goto out;

    /* the CPU engine draws the weights (the same seed gives the same weights on both
     * executors); it is freed once the plugin has copied them */
    if (tb_llama_init(&cpu, arch, 1, 1, 0, spec->seed, err, errlen) != 0)
        goto out;
    have_cpu = true;
    layer_off = tb_alloc_array((size_t)arch->layers * TB_CUDA_W_PER_LAYER, sizeof *layer_off);
    rope_cos = tb_alloc_array((size_t)max_seq * (size_t)(arch->head_dim / 2), sizeof *rope_cos);
    rope_sin = tb_alloc_array((size_t)max_seq * (size_t)(arch->head_dim / 2), sizeof *rope_sin);
    x->first = tb_alloc_array((size_t)B, sizeof *x->first);
    logits = tb_alloc_array((size_t)B * (size_t)V, sizeof *logits);
    if (!layer_off || !rope_cos || !rope_sin || !x->first || !logits) {
        tb_err(err, errlen, "out of memory for the GPU engine's inputs");
        goto out;
    }
    tb_gpu_weights_of(&cpu, layer_off, max_seq, rope_cos, rope_sin, &w);
    if (api->llama_init(&x->eng, arch, &w, B, max_seq,
                        train ? TB_CUDA_LLAMA_TRAIN
                        : fp8 ? TB_CUDA_LLAMA_FP8
                              : 0,
                        err, errlen) != 0)
        goto out;
    tb_llama_release(&cpu);
    have_cpu = false;
    r->engine_bytes = api->llama_bytes(x->eng);

    if (spec->phase == TB_PHASE_DECODE) {
        /* the prompt, once and untimed; its greedy tokens start every repetition */
        bool finite;
        if (api->llama_prefill(x->eng, x->tokens, B, T, err, errlen) != 0 ||
            api->llama_finite(x->eng, &finite, err, errlen) != 0 ||
            api->llama_logits(x->eng, logits, (size_t)B * V, err, errlen) != 0)
            goto out;
        if (!finite)
            tb_exec_invalid(r, "prefill logits not finite");
        tb_exec_argmax(logits, B, V, x->first);
    }
    rc = 0;
out:
    if (have_cpu)
        tb_llama_release(&cpu);
    free(layer_off);
    free(rope_cos);
    free(rope_sin);
    free(logits);
    return rc;
}

/* The inputs of generation k (x_T and the stand-ins for the text encoders' outputs,
 * drawn as the CPU executor draws them), before its timed region: the encoders are not
 * run on either executor. */
static void draw_denoise_inputs(struct cuda_run *x, int k)
{
    tb_diffusion_sample_inputs(x->darch, x->spec->batch, x->lat, x->lat,
                               x->spec->seed + (uint64_t)(k + x->spec->warmup), x->latents, x->ctx,
                               x->pooled);
}

static int setup_denoise(struct cuda_run *x, const struct tb_darch *a, struct tb_exec_result *r,
                         char *err, size_t errlen)
{
    const struct tb_run_spec *spec = x->spec;
    const int res = spec->resolution ? spec->resolution : a->resolution;
    const int steps = spec->steps ? spec->steps : a->default_steps;
    const int B = spec->batch, lat = res / a->vae_scale, cfg = a->cfg ? 2 : 1;
    const size_t nctx = (size_t)a->text_tokens * a->context_dim;
    const size_t npool = (size_t)(a->pooled_dim > 0 ? a->pooled_dim : 1);
    struct tb_diffusion cpu;
    struct tb_dlayout lay;
    struct tb_cuda_diffusion_weights w;
    bool have_cpu = false;
    int rc = -1;

    memset(&lay, 0, sizeof lay);
    x->diffusion = true;
    x->darch = a;
    x->dsteps = steps;
    x->lat = lat;
    x->img = (size_t)a->latent_channels * lat * lat;
    if (B < 1 || steps < 1 || lat < 1)
        return tb_err(err, errlen, "%s: batch %d, %d steps at %d px: nothing to run", a->name, B,
                      steps, res);
    /* the CPU executor's result: one repetition is one batch of images generated with
     * all the steps */
    if (tb_exec_result_init_denoise(r, spec, a, err, errlen) != 0)
        return -1;
    x->latents = tb_alloc_array((size_t)B * x->img, sizeof *x->latents);
    x->ctx = tb_alloc_array((size_t)cfg * B * nctx, sizeof *x->ctx);
    x->pooled = tb_alloc_array((size_t)cfg * B * npool, sizeof *x->pooled);
    x->ts = tb_alloc_array((size_t)steps, sizeof *x->ts);
    x->c_in = tb_alloc_array((size_t)steps, sizeof *x->c_in);
    x->dt = tb_alloc_array((size_t)steps, sizeof *x->dt);
    if (!x->latents || !x->ctx || !x->pooled || !x->ts || !x->c_in || !x->dt)
        return tb_err(err, errlen, "out of memory for %d images", B);
    for (int s = 0; s < steps; s++)
        tb_diffusion_schedule(a, s, steps, &x->ts[s], &x->c_in[s], &x->dt[s]);

    /* the CPU engine draws the weights (the same seed gives the same weights on both
     * executors, whatever the batch); it is freed once the plugin has copied them */
    if (tb_diffusion_init(&cpu, a, 1, lat, lat, spec->seed, err, errlen) != 0)
        goto out;
    have_cpu = true;
    if (tb_diffusion_layout(&cpu, &lay, err, errlen) != 0)
        goto out;
    w.params = cpu.params;
    w.n_params = cpu.n_params;
    w.layout = &lay;
    if (x->api->diffusion_init(&x->eng, a, &w, cfg * B, lat, lat, err, errlen) != 0)
        goto out;
    r->engine_bytes = x->api->diffusion_bytes(x->eng);
    draw_denoise_inputs(x, -spec->warmup);
    rc = 0;
out:
    if (have_cpu)
        tb_diffusion_release(&cpu);
    tb_dlayout_release(&lay);
    return rc;
}

static void cuda_teardown(void *run)
{
    struct cuda_run *x = run;
    if (!x)
        return;
    if (x->eng)
        x->diffusion ? x->api->diffusion_free(x->eng) : x->api->llama_free(x->eng);
    free(x->tokens);
    free(x->targets);
    free(x->first);
    free(x->latents);
    free(x->ctx);
    free(x->pooled);
    free(x->ts);
    free(x->c_in);
    free(x->dt);
    free(x);
}

static int cuda_setup(void *self, const struct tb_workload *w, struct tb_exec_result *r, void **run,
                      char *err, size_t errlen)
{
    const struct tb_gpu *g = self;
    struct cuda_run *x = calloc(1, sizeof *x);
    *run = x;
    if (!x)
        return tb_err(err, errlen, "out of memory");
    x->g = g;
    x->api = g->api;
    x->spec = w->spec;
    tb_gpu_energy_derive(0, 0, 0, 0, &r->energy);
    return w->darch ? setup_denoise(x, w->darch, r, err, errlen)
                    : setup_llama(x, w->arch, r, err, errlen);
}

/* Queue one repetition of spec's phase between CUDA events. */
static int cuda_rep(void *run, int k, struct tb_exec_result *r, double *secs, char *err,
                    size_t errlen)
{
    struct cuda_run *x = run;
    const struct tb_cuda_api *api = x->api;
    const struct tb_run_spec *spec = x->spec;
    const int B = spec->batch, T = spec->seq_in;
    const float guidance = 5.0f; /* a typical scale; the work does not depend on it */
    int rc = 0;
    (void)k;
    (void)r;
    if (api->timer_start(err, errlen) != 0)
        return -1;
    if (x->diffusion) {
        rc = api->diffusion_sample(x->eng, x->latents, x->ctx, x->pooled, B, x->dsteps, x->ts,
                                   x->c_in, x->dt, guidance, err, errlen);
    } else {
        switch (spec->phase) {
        case TB_PHASE_PREFILL:
            rc = api->llama_prefill(x->eng, x->tokens, B, T, err, errlen);
            break;
        case TB_PHASE_DECODE:
            /* every repetition restarts at position T from the prompt's greedy tokens;
             * later steps take the greedy tokens the device picked */
            for (int s = 0; s < spec->seq_out && rc == 0; s++)
                rc = api->llama_decode(x->eng, s == 0 ? x->first : NULL, B, T + s, err, errlen);
            break;
        case TB_PHASE_TRAIN:
            rc = api->llama_train_step(x->eng, x->tokens, x->targets, B, T, &x->opt, err, errlen);
            break;
        case TB_PHASE_DENOISE:
        case TB_PHASE_SERVE:
            rc = tb_err(err, errlen, "phase %s is not implemented on the GPU",
                        tb_phase_to_string(spec->phase));
            break;
        }
    }
    if (rc != 0)
        return -1;
    return api->timer_stop(secs, err, errlen) != 0 ? -1 : 0;
}

/* Validate the repetition that just ran, outside the timed region. */
static int cuda_validate(void *run, int k, struct tb_exec_result *r, char *err, size_t errlen)
{
    struct cuda_run *x = run;
    const struct tb_cuda_api *api = x->api;
    bool finite;
    if (x->diffusion) {
        /* finite latents, as on the CPU; then the next generation's inputs */
        if (api->diffusion_latents(x->eng, x->latents, (size_t)x->spec->batch * x->img, &finite,
                                   err, errlen) != 0)
            return -1;
        if (!finite) {
            tb_exec_invalid(r, "latents not finite");
            return 1;
        }
        if (k + 1 < x->spec->reps)
            draw_denoise_inputs(x, k + 1);
        return 0;
    }
    if (x->spec->phase == TB_PHASE_TRAIN) {
        float loss;
        if (api->llama_loss(x->eng, &loss, err, errlen) != 0)
            return -1;
        tb_exec_loss(r, x->spec, k, loss);
        return 0;
    }
    if (api->llama_finite(x->eng, &finite, err, errlen) != 0)
        return -1;
    if (!finite)
        tb_exec_invalid(r, "logits not finite");
    return 0;
}

static void cuda_timed_begin(void *run)
{
    struct cuda_run *x = run;
    x->energy = x->api->energy_mj(&x->mj0, x->eerr, sizeof x->eerr) == 0;
    x->t0 = tb_timer_now_ns();
}

/* read the counter before validation copies anything back */
static void cuda_timed_end(void *run)
{
    struct cuda_run *x = run;
    if (!x->energy)
        return;
    x->t1 = tb_timer_now_ns();
    x->energy = x->api->energy_mj(&x->mj1, x->eerr, sizeof x->eerr) == 0;
}

static int cuda_finish(void *run, struct tb_exec_result *r, char *err, size_t errlen)
{
    struct cuda_run *x = run;
    struct tb_energy *e = &r->energy;
    (void)err;
    (void)errlen;
    if (!x->diffusion && x->spec->phase == TB_PHASE_TRAIN)
        tb_exec_check_first_loss(r, x->V);
    if (x->energy && (r->valid || !x->diffusion))
        tb_gpu_energy_derive(x->mj0, x->mj1, tb_timer_seconds(x->t0, x->t1),
                             r->tokens * x->spec->reps, e);
    else
        snprintf(e->note, sizeof e->note, "energy unavailable: %.220s",
                 x->eerr[0]  ? x->eerr
                 : x->energy ? "the run did not validate"
                             : x->g->info.nvml);
    tb_gpu_provenance(&x->g->info, r->counters, sizeof r->counters);
    return 0;
}

const struct tb_executor_i tb_executor_cuda = {
    .name = "cuda",
    .what = "GPU",
    .provenance = "measured",
    .id_prefix = "cuda:",
    .flags = TB_EXEC_SELF_TIMED | TB_EXEC_ENERGY,
    .can_run = cuda_can_run,
    .adapt = cuda_adapt,
    .setup = cuda_setup,
    .rep = cuda_rep,
    .validate = cuda_validate,
    .timed_begin = cuda_timed_begin,
    .timed_end = cuda_timed_end,
    .finish = cuda_finish,
    .teardown = cuda_teardown,
};

/* ---- entry points (tb_gpu.h) ---- */

static int run_on(struct tb_gpu *g, const struct tb_workload *w, struct tb_exec_result *r,
                  struct tb_energy *e, char *err, size_t errlen)
{
    const struct tb_executor ex = {&tb_executor_cuda, g};
    int rc = tb_measure(&ex, w, r, err, errlen);
    *e = r->energy;
    if (!e->note[0] && !e->ok)
        tb_gpu_energy_derive(0, 0, 0, 0, e);
    return rc;
}

int tb_gpu_run(struct tb_gpu *g, const struct tb_run_spec *spec, const struct tb_arch *arch,
               struct tb_exec_result *r, struct tb_energy *e, char *err, size_t errlen)
{
    const struct tb_workload w = {.spec = spec, .arch = arch};
    if (spec->phase == TB_PHASE_DENOISE) {
        memset(r, 0, sizeof *r);
        tb_gpu_energy_derive(0, 0, 0, 0, e);
        return tb_err(err, errlen,
                      "phase denoise runs on the diffusion engine (tb_gpu_run_denoise)");
    }
    return run_on(g, &w, r, e, err, errlen);
}

int tb_gpu_run_denoise(struct tb_gpu *g, const struct tb_run_spec *spec, const struct tb_darch *a,
                       struct tb_exec_result *r, struct tb_energy *e, char *err, size_t errlen)
{
    const struct tb_workload w = {.spec = spec, .darch = a};
    return run_on(g, &w, r, e, err, errlen);
}
