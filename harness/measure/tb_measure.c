/* harness/measure/tb_measure.c: the executor stage's one measurement loop and the
 * helpers every executor shares (see tb_executor.h). */
#include "tb_executor.h"

#include "tb_counters.h"
#include "tb_flops.h"
#include "tb_loadgen.h"
#include "tb_progress.h"
#include "tb_timer.h"
#include "tb_torch.h"
#include "tb_util.h"

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
    free(r->predicted);
    if (r->load) {
        tb_load_result_release(r->load);
        free(r->load);
    }
    if (r->train) {
        tb_train_report_release(r->train);
        free(r->train);
    }
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

int tb_exec_result_start(struct tb_exec_result *r, const struct tb_run_spec *spec, char *err,
                         size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->reps = spec->reps;
    r->valid = true;
    r->steps = 1;
    r->loss_first = r->loss_last = NAN;
    r->secs = tb_alloc_array((size_t)(spec->reps > 0 ? spec->reps : 1), sizeof *r->secs);
    if (!r->secs)
        return tb_err(err, errlen, "out of memory for %d repetitions", spec->reps);
    return 0;
}

int tb_exec_result_init(struct tb_exec_result *r, const struct tb_run_spec *spec,
                        const struct tb_arch *a, double bytes_per_param, double bytes_per_kv,
                        char *err, size_t errlen)
{
    const int B = spec->batch, T = spec->seq_in;
    const int n = spec->phase == TB_PHASE_DECODE ? spec->seq_out : 1;

    if (tb_exec_result_start(r, spec, err, errlen) != 0)
        return -1;
    r->steps = n;
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
                      "phase denoise runs on the diffusion engine (tb_exec_result_init_denoise)");
    case TB_PHASE_SERVE:
        return tb_err(err, errlen, "phase serve is not a run on an engine");
    }
    return 0;
}

int tb_exec_result_init_denoise(struct tb_exec_result *r, const struct tb_run_spec *spec,
                                const struct tb_darch *d, char *err, size_t errlen)
{
    const int res = spec->resolution ? spec->resolution : d->resolution;
    const int steps = spec->steps ? spec->steps : d->default_steps;
    if (tb_exec_result_start(r, spec, err, errlen) != 0)
        return -1;
    r->steps = steps;
    r->tokens = spec->batch;
    r->flops = tb_dpasses(d, steps) * tb_dflops_denoiser(d, spec->batch, res);
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

void tb_exec_loss(struct tb_exec_result *r, const struct tb_run_spec *spec, int k, double loss)
{
    if (!isfinite(loss))
        tb_exec_invalid(r, "training loss not finite");
    if (k == -spec->warmup)
        r->loss_first = loss;
    r->loss_last = loss;
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

/* ---- the loop ---- */

/* Counts of the timed region divided by the repetitions, so rows of different
 * repetition counts compare. */
static void counters_per_rep(struct tb_counter_values *cv, int reps, char *buf, size_t len)
{
    for (int i = 0; i < cv->n; i++)
        cv->values[i] /= reps;
    tb_counters_format(cv, buf, len);
}

/* The loop of tb_measure_run, its iterations counted into pg (NULL: none). */
static int measure_loop(const struct tb_executor_i *i, void *run, const struct tb_run_spec *spec,
                        struct tb_exec_result *r, struct tb_progress *pg, char *err, size_t errlen)
{
    const bool host = i->flags & TB_EXEC_HOST_COUNTERS;
    struct tb_counter_values cv;
    uint64_t tick = tb_timer_tick_ns();
    bool counting = false;
    int rc = -1;

    tb_progress_step(pg, 0);
    for (int k = -spec->warmup; k < spec->reps; k++) { /* k < 0: warm-up */
        double secs = -1;
        uint64_t t0;
        int st;
        if (k == 0) {
            if (host)
                counting = tb_counters_start() == 0;
            if (i->timed_begin)
                i->timed_begin(run);
        }
        t0 = tb_timer_now_ns();
        st = i->rep(run, k, r, &secs, err, errlen);
        if (st < 0)
            goto out;
        if (!(i->flags & TB_EXEC_SELF_TIMED))
            secs = tb_timer_seconds(t0, tb_timer_now_ns());
        if (k >= 0)
            r->secs[k] = secs;
        if (k == spec->reps - 1 && i->timed_end)
            i->timed_end(run);
        if (st == 1)
            break;
        /* validation outside the timed region */
        st = i->validate ? i->validate(run, k, r, err, errlen) : 0;
        if (st < 0)
            goto out;
        if (st == 1)
            break;
        if (k >= 0 && r->valid && !r->note[0])
            tb_timer_check((uint64_t)(secs * 1e9), tick, r->note, sizeof r->note);
        tb_progress_step(pg, k + spec->warmup + 1);
    }
    if (counting) {
        tb_counters_stop(&cv);
        counting = false;
        counters_per_rep(&cv, spec->reps, r->counters, sizeof r->counters);
    } else if (host) {
        snprintf(r->counters, sizeof r->counters, "%s", tb_counters_status());
    }
    if (i->finish && i->finish(run, r, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    if (counting) {
        tb_counters_stop(&cv);
        snprintf(r->counters, sizeof r->counters, "%s", tb_counters_status());
    }
    return rc;
}

int tb_measure_run(const struct tb_executor_i *i, void *run, const struct tb_run_spec *spec,
                   struct tb_exec_result *r, char *err, size_t errlen)
{
    return measure_loop(i, run, spec, r, NULL, err, errlen);
}

int tb_measure(const struct tb_executor *ex, const struct tb_workload *w, struct tb_exec_result *r,
               char *err, size_t errlen)
{
    void *run = NULL;
    int rc = -1;

    memset(r, 0, sizeof *r);
    if (!ex->i->can_run(ex->self, w, err, errlen))
        return -1;
    /* progress from here: setting up a large model takes seconds too; without a
     * thread the run goes on unannounced */
    if (w->progress)
        tb_progress_start(w->progress, w->spec->warmup, w->spec->reps);
    if (ex->i->setup(ex->self, w, r, &run, err, errlen) != 0) {
        if (run)
            ex->i->teardown(run);
        goto out;
    }
    rc = measure_loop(ex->i, run, w->spec, r, w->progress, err, errlen);
    ex->i->teardown(run);
out:
    tb_progress_stop(w->progress);
    return rc;
}
