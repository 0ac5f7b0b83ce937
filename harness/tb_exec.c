/* harness/tb_exec.c: see tb_exec.h. */
#include "tb_exec.h"

#include "tb_counters.h"
#include "tb_flops.h"
#include "tb_timer.h"
#include "tb_util.h"
#include "workloads/diffusion/diffusion.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_exec_tokens(int *ids, size_t n, int vocab, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        ids[i] = (int)((*seed >> 33) % (uint64_t)vocab);
    }
}

void tb_exec_result_release(struct tb_exec_result *r)
{
    free(r->secs);
    memset(r, 0, sizeof *r);
}

int tb_exec_inputs(const struct tb_run_spec *spec, int vocab, int **tokens, int **targets,
                   char *err, size_t errlen)
{
    const size_t BT = (size_t)spec->batch * (size_t)spec->seq_in;
    const bool train = spec->phase == TB_PHASE_TRAIN;
    uint64_t seed = spec->seed;
    int *ids;

    /* one stream of T+1 tokens per sequence: the input and, for training, the
     * next-token target */
    ids = tb_alloc_array(BT + (size_t)spec->batch, sizeof *ids);
    *tokens = tb_alloc_array(BT, sizeof **tokens);
    *targets = train ? tb_alloc_array(BT, sizeof **targets) : NULL;
    if (!ids || !*tokens || (train && !*targets)) {
        free(ids);
        free(*tokens);
        free(*targets);
        *tokens = *targets = NULL;
        return tb_err(err, errlen, "out of memory for %zu tokens", BT);
    }
    tb_exec_tokens(ids, BT + (size_t)spec->batch, vocab, &seed);
    for (int b = 0; b < spec->batch; b++) {
        const int *s = ids + (size_t)b * (spec->seq_in + 1);
        memcpy(*tokens + (size_t)b * spec->seq_in, s, (size_t)spec->seq_in * sizeof **tokens);
        if (train)
            memcpy(*targets + (size_t)b * spec->seq_in, s + 1,
                   (size_t)spec->seq_in * sizeof **targets);
    }
    free(ids);
    return 0;
}

int tb_exec_result_init(struct tb_exec_result *r, const struct tb_run_spec *spec,
                        const struct tb_arch *a, double bytes_per_param, double bytes_per_kv,
                        char *err, size_t errlen)
{
    const int B = spec->batch, T = spec->seq_in;
    const int n = spec->phase == TB_PHASE_DECODE ? spec->seq_out : 1;

    memset(r, 0, sizeof *r);
    r->reps = spec->reps;
    r->valid = true;
    r->steps = n;
    r->loss_first = r->loss_last = NAN;
    r->secs = tb_alloc_array((size_t)spec->reps, sizeof *r->secs);
    if (!r->secs)
        return tb_err(err, errlen, "out of memory for %d repetitions", spec->reps);
    switch (spec->phase) {
    case TB_PHASE_PREFILL:
        r->tokens = (double)B * T;
        r->flops = tb_flops_prefill(a, B, T);
        break;
    case TB_PHASE_DECODE:
        r->tokens = (double)B * n;
        r->flops = tb_flops_decode(a, B, T, n);
        for (int s = 0; s < n; s++)
            r->bytes += tb_bytes_decode_step(a, B, T + s, bytes_per_param, bytes_per_kv);
        break;
    case TB_PHASE_TRAIN:
        r->tokens = (double)B * T;
        r->flops = tb_flops_train(a, B, T);
        break;
    case TB_PHASE_DENOISE:
        return tb_err(err, errlen,
                      "phase denoise runs on the diffusion engine (tb_exec_run_denoise)");
    case TB_PHASE_SERVE:
        return tb_err(err, errlen, "phase serve is not a run on an engine");
    }
    return 0;
}

void tb_exec_check_first_loss(struct tb_exec_result *r, int vocab)
{
    /* random weights (std 0.02) predict near-uniformly: the loss before any update is
     * about ln V, and far from it means the forward pass is wrong */
    if (r->valid && !(fabs(r->loss_first - log((double)vocab)) < 1.0)) {
        char what[128];
        snprintf(what, sizeof what, "first loss %.4f, expected about ln V = %.4f", r->loss_first,
                 log((double)vocab));
        tb_exec_invalid(r, what);
    }
}

static bool finite_all(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return false;
    return true;
}

void tb_exec_argmax(const float *logits, int B, int V, int *out)
{
    for (int b = 0; b < B; b++) {
        const float *row = logits + (size_t)b * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (row[v] > row[best])
                best = v;
        out[b] = best;
    }
}

void tb_exec_invalid(struct tb_exec_result *r, const char *what)
{
    if (r->valid)
        snprintf(r->note, sizeof r->note, "validation failed: %s", what);
    r->valid = false;
}

/* Counts of the timed region divided by the repetitions, so rows of different
 * repetition counts compare. */
static void counters_per_rep(struct tb_counter_values *cv, int reps, char *buf, size_t len)
{
    for (int i = 0; i < cv->n; i++)
        cv->values[i] /= reps;
    tb_counters_format(cv, buf, len);
}

int tb_exec_time(struct tb_llama *m, const struct tb_run_spec *spec, const int *tokens,
                 const int *targets, struct tb_exec_result *r, char *err, size_t errlen)
{
    const struct tb_arch *a = m->arch;
    const int B = spec->batch, T = spec->seq_in, V = a->vocab;
    const int n = spec->phase == TB_PHASE_DECODE ? spec->seq_out : 1;
    struct tb_adamw opt = tb_adamw_default();
    struct tb_counter_values cv;
    int *first = NULL, *next = NULL;
    uint64_t tick = tb_timer_tick_ns();
    bool counting = false;
    float loss = 0.0f;
    int rc = -1;

    if (tb_exec_result_init(r, spec, a, 4, 4, err, errlen) != 0)
        goto out;
    r->engine_bytes = tb_llama_bytes(m);
    first = tb_alloc_array((size_t)B, sizeof *first);
    next = tb_alloc_array((size_t)B, sizeof *next);
    if (!first || !next) {
        tb_err(err, errlen, "out of memory for %d sequences", B);
        goto out;
    }
    switch (spec->phase) {
    case TB_PHASE_PREFILL:
    case TB_PHASE_TRAIN:
        break;
    case TB_PHASE_DECODE:
        /* the prompt, once and untimed; its greedy token starts every repetition */
        if (tb_llama_prefill(m, tokens, B, T, err, errlen) != 0)
            goto out;
        if (!finite_all(m->logits, (size_t)B * V))
            tb_exec_invalid(r, "prefill logits not finite");
        tb_exec_argmax(m->logits, B, V, first);
        break;
    case TB_PHASE_DENOISE:
    case TB_PHASE_SERVE:
        break; /* refused by tb_exec_result_init */
    }

    for (int k = -spec->warmup; k < spec->reps; k++) { /* k < 0: warm-up */
        uint64_t t0;
        if (k == 0)
            counting = tb_counters_start() == 0;
        t0 = tb_timer_now_ns();
        if (spec->phase == TB_PHASE_PREFILL) {
            if (tb_llama_prefill(m, tokens, B, T, err, errlen) != 0)
                goto out;
        } else if (spec->phase == TB_PHASE_DECODE) {
            memcpy(next, first, (size_t)B * sizeof *next);
            for (int s = 0; s < n; s++) {
                if (tb_llama_decode(m, next, B, T + s, err, errlen) != 0)
                    goto out;
                tb_exec_argmax(m->logits, B, V, next);
            }
        } else {
            if (tb_llama_train_step(m, tokens, targets, B, T, &opt, &loss, err, errlen) != 0)
                goto out;
        }
        if (k >= 0)
            r->secs[k] = tb_timer_seconds(t0, tb_timer_now_ns());

        /* validate every repetition, outside the timed region */
        if (spec->phase == TB_PHASE_TRAIN) {
            if (!isfinite(loss))
                tb_exec_invalid(r, "training loss not finite");
            if (k == -spec->warmup)
                r->loss_first = loss;
            r->loss_last = loss;
        } else if (!finite_all(m->logits, (size_t)B * V)) {
            tb_exec_invalid(r, "logits not finite");
        }
        if (k >= 0 && r->valid && !r->note[0])
            tb_timer_check((uint64_t)(r->secs[k] * 1e9), tick, r->note, sizeof r->note);
    }
    if (counting) {
        tb_counters_stop(&cv);
        counting = false;
        counters_per_rep(&cv, spec->reps, r->counters, sizeof r->counters);
    } else {
        snprintf(r->counters, sizeof r->counters, "%s", tb_counters_status());
    }
    if (spec->phase == TB_PHASE_TRAIN)
        tb_exec_check_first_loss(r, V);
    rc = 0;
out:
    if (counting) {
        tb_counters_stop(&cv);
        snprintf(r->counters, sizeof r->counters, "%s", tb_counters_status());
    }
    free(first);
    free(next);
    return rc;
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

int tb_exec_run(const struct tb_run_spec *spec, const struct tb_arch *arch,
                struct tb_exec_result *r, char *err, size_t errlen)
{
    const bool train = spec->phase == TB_PHASE_TRAIN;
    const int max_seq = spec->seq_in + (spec->phase == TB_PHASE_DECODE ? spec->seq_out : 0);
    struct tb_llama m;
    int *tokens = NULL, *targets = NULL;
    bool engine = false;
    int rc = -1;

    memset(r, 0, sizeof *r);
    if (!tb_exec_can_run(spec, err, errlen))
        return -1;
    if (tb_exec_inputs(spec, arch->vocab, &tokens, &targets, err, errlen) != 0)
        goto out;
    if (tb_llama_init(&m, arch, spec->batch, max_seq, train ? TB_LLAMA_TRAIN : 0, spec->seed, err,
                      errlen) != 0)
        goto out;
    engine = true;
    rc = tb_exec_time(&m, spec, tokens, targets, r, err, errlen);
out:
    if (engine)
        tb_llama_release(&m);
    free(tokens);
    free(targets);
    return rc;
}

int tb_exec_run_denoise(const struct tb_run_spec *spec, const struct tb_darch *a,
                        struct tb_exec_result *r, char *err, size_t errlen)
{
    const int res = spec->resolution ? spec->resolution : a->resolution;
    const int steps = spec->steps ? spec->steps : a->default_steps;
    const int B = spec->batch, lat = res / a->vae_scale;
    struct tb_diffusion m;
    struct tb_counter_values cv;
    float *latents = NULL;
    uint64_t tick = tb_timer_tick_ns();
    bool engine = false, counting = false;
    int rc = -1;

    memset(r, 0, sizeof *r);
    if (!tb_exec_can_run(spec, err, errlen))
        return -1;
    r->reps = spec->reps;
    r->valid = true;
    r->steps = steps;
    r->tokens = B;
    r->flops = tb_dpasses(a, steps) * tb_dflops_denoiser(a, B, res);
    r->loss_first = r->loss_last = NAN;
    r->secs = tb_alloc_array((size_t)spec->reps, sizeof *r->secs);
    latents = tb_alloc_array((size_t)B * a->latent_channels * lat * lat, sizeof *latents);
    if (!r->secs || !latents) {
        tb_err(err, errlen, "out of memory for %d images", B);
        goto out;
    }
    if (tb_diffusion_init(&m, a, a->cfg ? 2 * B : B, lat, lat, spec->seed, err, errlen) != 0)
        goto out;
    engine = true;
    r->engine_bytes = m.n_params * sizeof(float);
    for (int k = -spec->warmup; k < spec->reps; k++) {
        uint64_t t0;
        if (k == 0)
            counting = tb_counters_start() == 0;
        t0 = tb_timer_now_ns();
        /* guidance 5: a typical scale; the work does not depend on it */
        if (tb_diffusion_sample(&m, B, steps, 5.0f, spec->seed + (uint64_t)(k + spec->warmup),
                                latents, err, errlen) != 0) {
            /* a non-finite result is a failed validation, not an engine error */
            if (strstr(err, "not finite")) {
                r->valid = false;
                snprintf(r->note, sizeof r->note, "validation failed: %s", err);
                break;
            }
            goto out;
        }
        if (k >= 0) {
            r->secs[k] = tb_timer_seconds(t0, tb_timer_now_ns());
            if (!r->note[0])
                tb_timer_check((uint64_t)(r->secs[k] * 1e9), tick, r->note, sizeof r->note);
        }
    }
    if (counting) {
        tb_counters_stop(&cv);
        counting = false;
        counters_per_rep(&cv, spec->reps, r->counters, sizeof r->counters);
    } else {
        snprintf(r->counters, sizeof r->counters, "%s", tb_counters_status());
    }
    rc = 0;
out:
    if (counting) {
        tb_counters_stop(&cv);
        snprintf(r->counters, sizeof r->counters, "%s", tb_counters_status());
    }
    if (engine)
        tb_diffusion_release(&m);
    free(latents);
    return rc;
}
