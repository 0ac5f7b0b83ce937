/* harness/run/tb_record.c: see tb_record.h. */
#include "tb_record.h"

#include "tb_flops.h"
#include "tb_loadgen.h"
#include "tb_results.h"
#include "tb_slurm.h"
#include "tb_stats.h"
#include "tb_util.h"
#include "tb_vocab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_METRICS 5 /* latency, throughput, GFLOP/s, GB/s */

/* The per-repetition values of one metric and their summary. */
struct metric_samples {
    const char *name;
    const char *unit;
    double *x; /* owned: [reps] */
    struct tb_stats s;
    char notes[320];
};

static void fmt_num(char *buf, size_t len, double v)
{
    snprintf(buf, len, "%.6g", v);
}

/* Turn the seconds of each repetition into the phase's metrics. Returns the count, or
 * -1 with a message (out of memory). */
static int derive_metrics(const struct tb_run_spec *spec, const struct tb_exec_result *r,
                          struct metric_samples *m, char *err, size_t errlen)
{
    int nm = 0;
    const double reps = r->reps;

    switch (spec->phase) {
    case TB_PHASE_PREFILL:
        m[nm++] = (struct metric_samples){.name = "ttft_ms", .unit = "ms"};
        m[nm++] = (struct metric_samples){.name = "prefill_tokens_per_s", .unit = "tokens/s"};
        break;
    case TB_PHASE_DECODE:
        m[nm++] = (struct metric_samples){.name = "tpot_ms", .unit = "ms"};
        m[nm++] = (struct metric_samples){.name = "decode_tokens_per_s", .unit = "tokens/s"};
        break;
    case TB_PHASE_TRAIN:
        m[nm++] = (struct metric_samples){.name = "step_time_s", .unit = "s"};
        m[nm++] = (struct metric_samples){.name = "train_tokens_per_s", .unit = "tokens/s"};
        break;
    case TB_PHASE_DENOISE:
        m[nm++] = (struct metric_samples){.name = "s_per_image", .unit = "s"};
        m[nm++] = (struct metric_samples){.name = "images_per_s", .unit = "images/s"};
        break;
    case TB_PHASE_SERVE:
        return tb_err(err, errlen, "phase serve is not a run on an engine");
    }
    m[nm++] = (struct metric_samples){.name = "gflop_per_s", .unit = "GFLOP/s"};
    if (spec->phase == TB_PHASE_DECODE)
        m[nm++] = (struct metric_samples){.name = "gbyte_per_s", .unit = "GB/s"};
    for (int i = 0; i < nm; i++) {
        m[i].x = tb_alloc_array((size_t)r->reps, sizeof *m[i].x);
        if (!m[i].x)
            return tb_err(err, errlen, "out of memory");
    }
    for (int k = 0; k < r->reps; k++) {
        const double t = r->secs[k];
        /* per repetition: prefill's TTFT is the whole batch's prefill (every prompt's
         * first token comes at its end); decode's TPOT is one step */
        m[0].x[k] = spec->phase == TB_PHASE_PREFILL  ? t * 1e3
                    : spec->phase == TB_PHASE_DECODE ? t / r->steps * 1e3
                                                     : t;
        m[1].x[k] = r->tokens / t;
        m[2].x[k] = r->flops / t / 1e9;
        if (spec->phase == TB_PHASE_DECODE)
            m[3].x[k] = r->bytes / t / 1e9;
    }
    for (int i = 0; i < nm; i++)
        if (tb_stats_compute(&m[i].s, m[i].x, (size_t)reps, err, errlen) != 0)
            return -1;
    if (spec->phase == TB_PHASE_DENOISE)
        snprintf(m[2].notes, sizeof m[2].notes,
                 "FLOPs of the %g denoising steps only (the text encoders and the VAE are not "
                 "run; their outputs are drawn from the seed)",
                 r->steps);
    if (spec->phase == TB_PHASE_DECODE && !strcmp(spec->precision, "fp8"))
        snprintf(m[3].notes, sizeof m[3].notes,
                 "minimum bytes read: e4m3 weights of the layers and the bf16 LM head once per "
                 "step plus the bf16 KV cache, %.1f MB per repetition of %d steps",
                 r->bytes / 1e6, spec->seq_out);
    else if (spec->phase == TB_PHASE_DECODE)
        snprintf(m[3].notes, sizeof m[3].notes,
                 "minimum bytes read: %s weights once per step plus the KV cache, %.1f MB "
                 "per repetition of %d steps",
                 spec->precision, r->bytes / 1e6, spec->seq_out);
    return nm;
}

/* The facts every measured row of an executor shares: the run, where and by what it
 * ran, when, and with which software. */
static void measured_row(struct tb_result_row *row, const struct tb_record_ctx *c,
                         const char *run_id, const char *stamp, const char *counters,
                         const char *notes)
{
    memset(row, 0, sizeof *row);
    row->col[TB_COL_RUN_ID] = run_id;
    row->col[TB_COL_PROVENANCE] = "measured";
    row->col[TB_COL_TARGET] = c->target;
    row->col[TB_COL_INSTANCES] = c->slurm && c->slurm->s_instances[0] ? c->slurm->s_instances : "1";
    row->col[TB_COL_HOST] = c->host;
    row->col[TB_COL_EXECUTOR] = c->executor;
    row->col[TB_COL_TIMESTAMP] = stamp;
    row->col[TB_COL_COMMIT] = tb_version_commit();
    row->col[TB_COL_COMPILER] = c->compiler ? c->compiler : tb_version_compiler();
    row->col[TB_COL_CFLAGS] = c->cflags ? c->cflags : tb_version_cflags();
    row->col[TB_COL_BLAS] = c->blas;
    row->col[TB_COL_COUNTERS] = counters;
    row->col[TB_COL_SOURCE] = c->source ? c->source : "trnbench";
    row->col[TB_COL_NOTES] = notes;
    row->col[TB_COL_CHIPS_USED] = c->chips_used;
    row->col[TB_COL_DEVICE] = c->device[0] ? c->device : NULL;
    row->col[TB_COL_ACCEL_UNUSED] = c->accel_unused[0] ? c->accel_unused : NULL;
    row->col[TB_COL_ENGINE] = c->engine;
    if (c->slurm) {
        row->col[TB_COL_NODES] = c->slurm->s_nodes;
        row->col[TB_COL_RANKS] = c->slurm->s_ranks;
        row->col[TB_COL_RANK] = c->slurm->s_rank;
        row->col[TB_COL_NODE] = c->slurm->node;
        row->col[TB_COL_SLURM_JOB] = c->slurm->job;
        if (c->slurm->s_ranks_per_node[0])
            row->col[TB_COL_RANKS_PER_NODE] = c->slurm->s_ranks_per_node;
    }
}

static void fill_common(struct tb_result_row *row, const struct tb_record_ctx *c,
                        const struct tb_run_spec *spec, const struct tb_arch *a,
                        const struct tb_darch *d, const struct tb_exec_result *r, char (*buf)[64],
                        const char *run_id, const char *stamp, const char *notes)
{
    measured_row(row, c, run_id, stamp, r->counters, notes);
    row->col[TB_COL_MODEL] = d ? d->name : a->name;
    row->col[TB_COL_PHASE] = tb_phase_to_string(spec->phase);
    row->col[TB_COL_PRECISION] = spec->precision;
    snprintf(buf[1], 64, "%d", spec->batch);
    row->col[TB_COL_BATCH] = buf[1];
    if (d) {
        snprintf(buf[0], 64, "%d", spec->steps ? spec->steps : d->default_steps);
        row->col[TB_COL_STEPS] = buf[0];
        snprintf(buf[2], 64, "%d", spec->resolution ? spec->resolution : d->resolution);
        row->col[TB_COL_RESOLUTION] = buf[2];
    } else {
        snprintf(buf[0], 64, "%d", a->layers);
        row->col[TB_COL_LAYERS] = buf[0];
        snprintf(buf[2], 64, "%d", spec->seq_in);
        row->col[TB_COL_SEQ_IN] = buf[2];
    }
    if (spec->phase == TB_PHASE_DECODE) {
        snprintf(buf[3], 64, "%d", spec->seq_out);
        row->col[TB_COL_SEQ_OUT] = buf[3];
    }
    snprintf(buf[4], 64, "%d", r->reps);
    row->col[TB_COL_N] = buf[4];
    snprintf(buf[5], 64, "%d", spec->warmup);
    row->col[TB_COL_WARMUP] = buf[5];
    fmt_num(buf[6], 64, r->flops);
    row->col[TB_COL_FLOPS] = buf[6];
}

int tb_record_run(const struct tb_record_ctx *c, const struct tb_run_spec *spec,
                  const struct tb_arch *a, const struct tb_darch *d, const struct tb_exec_result *r,
                  const char *run_id, const struct tb_record_extra *extra, int nextra,
                  const char *note, char *summary, size_t summarylen, char *err, size_t errlen)
{
    enum { NR = MAX_METRICS + TB_RECORD_MAX_EXTRA + 1 };
    struct metric_samples m[MAX_METRICS];
    struct tb_result_row rows[NR];
    struct tb_record_extra ex[TB_RECORD_MAX_EXTRA + 1];
    char common[NR][7][64];
    char nums[NR][5][32];
    char notes[NR][800];
    char stamp[32];
    int nm, nex = 0, nrows = 0, rc = -1;

    memset(m, 0, sizeof m);
    nm = derive_metrics(spec, r, m, err, errlen);
    if (nm < 0)
        goto out;
    tb_utc_now(stamp, sizeof stamp);
    for (int i = 0; i < nm; i++, nrows++) {
        snprintf(notes[i], sizeof notes[i], "validated: %s%s%s%s%s%s%s",
                 spec->phase == TB_PHASE_TRAIN     ? "loss finite, first loss near ln V"
                 : spec->phase == TB_PHASE_DENOISE ? "latents finite after every step"
                                                   : "logits finite",
                 r->note[0] ? "; " : "", r->note, m[i].notes[0] ? "; " : "", m[i].notes,
                 note && note[0] ? "; " : "", note ? note : "");
        fill_common(&rows[i], c, spec, a, d, r, common[i], run_id, stamp, notes[i]);
        rows[i].col[TB_COL_METRIC] = m[i].name;
        rows[i].col[TB_COL_UNIT] = m[i].unit;
        fmt_num(nums[i][0], 32, m[i].s.median);
        fmt_num(nums[i][1], 32, m[i].s.min);
        fmt_num(nums[i][2], 32, m[i].s.max);
        fmt_num(nums[i][3], 32, m[i].s.mean);
        fmt_num(nums[i][4], 32, m[i].s.stddev);
        rows[i].col[TB_COL_VALUE] = nums[i][0];
        rows[i].col[TB_COL_MIN] = nums[i][1];
        rows[i].col[TB_COL_MAX] = nums[i][2];
        rows[i].col[TB_COL_MEAN] = nums[i][3];
        rows[i].col[TB_COL_STDDEV] = nums[i][4];
    }
    if (spec->phase == TB_PHASE_TRAIN && a && isfinite(r->loss_last)) {
        /* the loss after the last timed step; one value, no spread */
        ex[nex] = (struct tb_record_extra){
            .metric = "loss", .unit = "nats", .value = r->loss_last, .n = 1};
        snprintf(ex[nex].notes, sizeof ex[nex].notes,
                 "cross-entropy after the last timed step; first step %.4f, ln V = %.4f",
                 r->loss_first, log((double)a->vocab));
        nex++;
    }
    for (int i = 0; i < nextra && nex < TB_RECORD_MAX_EXTRA + 1; i++)
        ex[nex++] = extra[i];
    for (int i = 0; i < nex; i++, nrows++) {
        snprintf(notes[nrows], sizeof notes[nrows], "%s", ex[i].notes);
        fill_common(&rows[nrows], c, spec, a, d, r, common[nrows], run_id, stamp, notes[nrows]);
        rows[nrows].col[TB_COL_METRIC] = ex[i].metric;
        rows[nrows].col[TB_COL_UNIT] = ex[i].unit;
        fmt_num(nums[nrows][0], 32, ex[i].value);
        rows[nrows].col[TB_COL_VALUE] = nums[nrows][0];
        snprintf(nums[nrows][1], 32, "%d", ex[i].n);
        rows[nrows].col[TB_COL_N] = nums[nrows][1];
    }
    rc = tb_results_append(c->results, rows, (size_t)nrows, err, errlen);
    if (rc == 0 && summary && summarylen) {
        size_t k = 0;
        summary[0] = '\0';
        for (int i = 0; i < nm && k < summarylen; i++)
            k += (size_t)snprintf(summary + k, summarylen - k, "%s%s %.4g %s", i ? ", " : "",
                                  m[i].name, m[i].s.median, m[i].unit);
        for (int i = 0; i < nex && k < summarylen; i++)
            k += (size_t)snprintf(summary + k, summarylen - k, ", %s %.4g", ex[i].metric,
                                  ex[i].value);
    }
out:
    for (int i = 0; i < MAX_METRICS; i++)
        free(m[i].x);
    return rc;
}

int tb_record_gpu_extras(const struct tb_chip *chip, const struct tb_run_spec *spec,
                         const struct tb_exec_result *r, const struct tb_energy *e,
                         struct tb_record_extra *x)
{
    int n = 0;
    bool images = spec->phase == TB_PHASE_DENOISE;
    if (e && e->ok) {
        x[n] = (struct tb_record_extra){
            .metric = "avg_power_w", .unit = "W", .value = e->avg_power_w, .n = r->reps};
        snprintf(x[n].notes, sizeof x[n].notes, "%s", e->note);
        n++;
        x[n] = (struct tb_record_extra){.metric = images ? "j_per_image" : "j_per_token",
                                        .unit = images ? "J/image" : "J/token",
                                        .value = e->j_per_unit,
                                        .n = r->reps};
        snprintf(x[n].notes, sizeof x[n].notes, "%s", e->note);
        n++;
    }
    if (spec->phase == TB_PHASE_TRAIN && chip && chip->bf16_dense_tflops > 0) {
        struct tb_stats st;
        if (tb_stats_compute(&st, r->secs, (size_t)r->reps, NULL, 0) == 0) {
            x[n] = (struct tb_record_extra){.metric = "mfu",
                                            .unit = "fraction",
                                            .value = r->flops / st.median /
                                                     (chip->bf16_dense_tflops * 1e12),
                                            .n = r->reps};
            snprintf(x[n].notes, sizeof x[n].notes,
                     "model FLOPs / (median step time x %.1f TFLOP/s, the %s's dense bf16 peak "
                     "in pricing/chips.csv)",
                     chip->bf16_dense_tflops, chip->name);
            n++;
        }
    }
    if (r->engine_bytes > 0) {
        x[n] = (struct tb_record_extra){.metric = "device_mem_gib",
                                        .unit = "GiB",
                                        .value = (double)r->engine_bytes / (1024.0 * 1024 * 1024),
                                        .n = 1};
        snprintf(x[n].notes, sizeof x[n].notes,
                 "device memory the engine holds (weights, master weights, gradients and "
                 "optimizer state when training, activations, KV cache), besides the CUDA "
                 "context and cuBLASLt's workspace");
        n++;
    }
    return n;
}

int tb_record_prediction(const struct tb_record_ctx *c, const struct tb_scenario *sc,
                         const struct tb_prediction *p, const char *run_id, const char *device,
                         char *err, size_t errlen)
{
    enum { NM = 24 };
    const bool train = sc->phase == TB_PHASE_TRAIN, denoise = sc->phase == TB_PHASE_DENOISE;
    struct tb_result_row rows[NM];
    char vals[NM][32], layers[16], batch[24], stamp[32], notes[1200], inst[24], steps[24], px[24];
    char chips[24], seq_in[24], seq_out[24];
    size_t nall, n = 0;
    const struct tb_metric *all = tb_metric_all(&nall);

    tb_utc_now(stamp, sizeof stamp);
    snprintf(layers, sizeof layers, "%d", sc->darch ? 0 : sc->arch->layers);
    snprintf(batch, sizeof batch, "%ld", p->batch);
    snprintf(inst, sizeof inst, "%ld", p->instances);
    snprintf(chips, sizeof chips, "%ld", p->chips); /* the report charges their share */
    snprintf(steps, sizeof steps, "%ld", p->steps);
    snprintf(px, sizeof px, "%ld", p->resolution);
    snprintf(seq_in, sizeof seq_in, "%ld", sc->seq_in);
    snprintf(seq_out, sizeof seq_out, "%ld", sc->seq_out);
    snprintf(notes, sizeof notes, "%s-bound; %s; %.1f of %.1f GiB per device", p->bound,
             p->assumptions, p->mem_per_device_gib, p->hbm_per_device_gib);
    for (size_t i = 0; i < nall && n < NM; i++) {
        double v;
        struct tb_result_row *r = &rows[n];
        if (!(all[i].modeled & TB_PHASE_BIT(sc->phase)))
            continue;
        v = tb_prediction_metric(p, all[i].name);
        if (isnan(v))
            continue;
        memset(r, 0, sizeof *r);
        snprintf(vals[n], sizeof vals[n], "%.6g", v);
        r->col[TB_COL_RUN_ID] = run_id;
        r->col[TB_COL_PROVENANCE] = "modeled";
        r->col[TB_COL_TARGET] = sc->inst->instance;
        r->col[TB_COL_INSTANCES] = inst;
        r->col[TB_COL_EXECUTOR] = "model";
        r->col[TB_COL_MODEL] = sc->darch ? sc->darch->name : sc->arch->name;
        r->col[TB_COL_LAYERS] = sc->darch ? NULL : layers;
        r->col[TB_COL_PHASE] = tb_phase_to_string(sc->phase);
        r->col[TB_COL_PRECISION] = sc->precision && *sc->precision ? sc->precision : "bf16";
        r->col[TB_COL_BATCH] = batch;
        r->col[TB_COL_SEQ_IN] = sc->seq_in > 0 ? seq_in : NULL;
        r->col[TB_COL_SEQ_OUT] = !train && sc->seq_out > 0 ? seq_out : NULL;
        r->col[TB_COL_STEPS] = denoise ? steps : NULL;
        r->col[TB_COL_RESOLUTION] = denoise ? px : NULL;
        r->col[TB_COL_METRIC] = all[i].name;
        r->col[TB_COL_VALUE] = vals[n];
        r->col[TB_COL_UNIT] = all[i].unit;
        r->col[TB_COL_TIMESTAMP] = stamp;
        r->col[TB_COL_COMMIT] = tb_version_commit();
        r->col[TB_COL_SOURCE] = TB_MODEL_VERSION;
        r->col[TB_COL_NOTES] = notes;
        r->col[TB_COL_CHIPS_USED] = chips;
        r->col[TB_COL_DEVICE] = device;
        n++;
    }
    return tb_results_append(c->results, rows, n, err, errlen);
}

/* ---- serving levels ---- */

/* One row of a serving level: a distribution (x[0..n-1]: value p50, p90, p99 and the
 * spread) or, with x NULL, one value. */
struct serve_row {
    const char *metric, *unit;
    double value; /* one value; a distribution's p50 once its row is made */
    long n;
    double *x; /* owned */
    size_t nx;
    char notes[700];
};

/* Per-request samples of a level: every completed request's TTFT, TPOT, E2E and
 * interactivity, and every gap between consecutive chunks. */
static int serve_samples(const struct tb_load_result *L, struct serve_row *rows, char *err,
                         size_t errlen)
{
    size_t ngaps = 0;
    for (size_t i = 0; i < L->nreqs; i++)
        if (L->reqs[i].ok && L->reqs[i].chunks > 1)
            ngaps += (size_t)L->reqs[i].chunks - 1;
    for (int k = 0; k < 5; k++) {
        rows[k].x = tb_alloc_array((k == 2 ? ngaps : L->nreqs) + 1, sizeof *rows[k].x);
        if (!rows[k].x)
            return tb_err(err, errlen, "out of memory");
    }
    for (size_t i = 0; i < L->nreqs; i++) {
        const struct tb_request_rec *q = &L->reqs[i];
        if (!q->ok || isnan(q->t_first))
            continue;
        rows[0].x[rows[0].nx++] = (q->t_first - q->t_sent) * 1e3;
        rows[3].x[rows[3].nx++] = (q->t_end - q->t_sent) * 1e3;
        if (q->output_tokens > 1) {
            double tpot = (q->t_end - q->t_first) * 1e3 / (q->output_tokens - 1);
            rows[1].x[rows[1].nx++] = tpot;
            if (tpot > 0)
                rows[4].x[rows[4].nx++] = 1e3 / tpot;
        }
        for (int j = 1; j < q->chunks; j++)
            rows[2].x[rows[2].nx++] = (q->chunk_t[j] - q->chunk_t[j - 1]) * 1e3;
    }
    return 0;
}

/* Whether request q completed within the spec's latency limits. */
static bool within_limits(const struct tb_request_rec *q, const struct tb_serve_opts *o)
{
    double ttft, tpot = 0;
    if (!q->ok || isnan(q->t_first))
        return false;
    ttft = (q->t_first - q->t_sent) * 1e3;
    if (q->output_tokens > 1)
        tpot = (q->t_end - q->t_first) * 1e3 / (q->output_tokens - 1);
    return (o->ttft_limit_ms <= 0 || ttft <= o->ttft_limit_ms) &&
           (o->tpot_limit_ms <= 0 || tpot <= o->tpot_limit_ms);
}

int tb_record_serve(const struct tb_record_ctx *c, const struct tb_run_spec *spec,
                    const struct tb_arch *a, const struct tb_exec_result *r, const char *run_id,
                    const struct tb_record_extra *extra, int nextra, char *summary,
                    size_t summarylen, char *err, size_t errlen)
{
    enum { NS = 24 }; /* the level's rows, the server's starts (3) and device figures (3) */
    const struct tb_load_result *L = r->load;
    const struct tb_serve_opts *o = &spec->serve;
    struct serve_row sr[NS];
    struct tb_result_row rows[NS];
    char num[NS][8][32], stamp[32], layers[16], seq_in[16], seq_out[16], batch[16], conc[16],
        rate[32], workload[192], config[192], prompts[200], flops[32];
    double out_tok = 0, all_tok = 0, window;
    size_t good = 0;
    int ns = 5, nrows = 0, rc = -1;

    if (!L)
        return tb_err(err, errlen, "%s: no serving level to record", run_id);
    memset(sr, 0, sizeof sr);
    sr[0] = (struct serve_row){.metric = "ttft_ms", .unit = "ms"};
    sr[1] = (struct serve_row){.metric = "tpot_ms", .unit = "ms"};
    sr[2] = (struct serve_row){.metric = "itl_ms", .unit = "ms"};
    sr[3] = (struct serve_row){.metric = "e2e_latency_ms", .unit = "ms"};
    sr[4] = (struct serve_row){.metric = "tokens_per_s_per_user", .unit = "tokens/s"};
    if (serve_samples(L, sr, err, errlen) != 0)
        goto out;
    snprintf(prompts, sizeof prompts, "prompts: %s",
             L->prompt_note[0] ? L->prompt_note : "token ids");
    snprintf(sr[0].notes, sizeof sr[0].notes,
             "per completed request, send to first streamed output chunk; %s; load client on %d "
             "thread%s",
             prompts, L->threads, L->threads == 1 ? "" : "s");
    snprintf(sr[1].notes, sizeof sr[1].notes,
             "per completed request, (e2e - ttft) / (output tokens - 1): never includes TTFT");
    snprintf(sr[2].notes, sizeof sr[2].notes,
             "every gap between consecutive streamed output chunks of the completed requests");
    snprintf(sr[4].notes, sizeof sr[4].notes, "per completed request, 1000 / tpot_ms");
    for (size_t i = 0; i < L->nreqs; i++) {
        const struct tb_request_rec *q = &L->reqs[i];
        if (!q->ok)
            continue;
        out_tok += q->output_tokens;
        all_tok += q->output_tokens + (q->prompt_tokens >= 0 ? q->prompt_tokens : spec->seq_in);
        good += within_limits(q, o);
    }
    window = L->window_s > 0 ? L->window_s : NAN;
#define ONE(m, u, v, ...)                                                                          \
    do {                                                                                           \
        sr[ns] = (struct serve_row){.metric = m, .unit = u, .value = (v), .n = (long)L->nreqs};    \
        snprintf(sr[ns].notes, sizeof sr[ns].notes, __VA_ARGS__);                                  \
        ns++;                                                                                      \
    } while (0)
    ONE("output_tokens_per_s", "tokens/s", out_tok / window,
        "output tokens of the %zu completed requests / the %.3f s from the first counted send to "
        "the last counted end (prompt tokens never counted)",
        L->ok, L->window_s);
    ONE("total_tokens_per_s", "tokens/s", all_tok / window,
        "prompt plus output tokens of the completed requests / the same window");
    ONE("requests_per_s", "requests/s", L->ok / window, "completed requests / the same window");
    if (o->ttft_limit_ms > 0 || o->tpot_limit_ms > 0)
        ONE("goodput_requests_per_s", "requests/s", good / window,
            "%zu requests completed within ttft <= %g ms and tpot <= %g ms (0: no limit) / the "
            "same window",
            good, o->ttft_limit_ms, o->tpot_limit_ms);
    ONE("failed_requests", "requests", (double)L->failed, "%s",
        L->failed ? L->failures : "none failed");
    ONE("mismatched_requests", "requests", (double)L->mismatched,
        "completed requests whose reported prompt or output token count differs from the %d and "
        "%d asked (counts kept as reported, never corrected)",
        spec->seq_in, spec->seq_out);
    if (o->level_rate > 0)
        ONE("achieved_request_rate", "requests/s", L->achieved_rate,
            "counted requests sent per second of sending; asked %g (Poisson arrivals, seed %llu)",
            o->level_rate, (unsigned long long)spec->seed);
    if (o->level_concurrency)
        ONE("achieved_concurrency", "requests", L->achieved_concurrency,
            "requests in flight, averaged over the window; asked %d%s", o->level_concurrency,
            o->level_rate > 0 ? " at most" : "");
#undef ONE
    for (int i = 0; i < nextra && ns < NS; i++, ns++) {
        sr[ns] = (struct serve_row){.metric = extra[i].metric,
                                    .unit = extra[i].unit,
                                    .value = extra[i].value,
                                    .n = extra[i].n};
        snprintf(sr[ns].notes, sizeof sr[ns].notes, "%s", extra[i].notes);
    }

    tb_utc_now(stamp, sizeof stamp);
    snprintf(layers, sizeof layers, "%d", a->layers);
    snprintf(seq_in, sizeof seq_in, "%d", spec->seq_in);
    snprintf(seq_out, sizeof seq_out, "%d", spec->seq_out);
    snprintf(batch, sizeof batch, "%d", o->level_concurrency);
    snprintf(conc, sizeof conc, "%d", o->level_concurrency);
    if (isinf(o->level_rate))
        snprintf(rate, sizeof rate, "inf");
    else
        snprintf(rate, sizeof rate, "%g", o->level_rate);
    tb_serve_workload(spec, workload, sizeof workload, config, sizeof config);
    /* the model FLOPs of the level: each completed request's prefill and its decode
     * steps after the first token */
    fmt_num(flops, sizeof flops,
            (double)L->ok * (tb_flops_prefill(a, 1, spec->seq_in) +
                             tb_flops_decode(a, 1, spec->seq_in, spec->seq_out - 1)));
    for (int i = 0; i < ns; i++) {
        struct serve_row *x = &sr[i];
        struct tb_result_row *row = &rows[nrows];
        if (x->x) {
            struct tb_stats st;
            static const double P[] = {50, 90, 99};
            double pv[3];
            if (x->nx == 0)
                continue; /* nothing completed with two tokens: no TPOT to give */
            if (tb_stats_compute(&st, x->x, x->nx, err, errlen) != 0 ||
                tb_stats_percentiles(x->x, x->nx, P, 3, pv, err, errlen) != 0)
                goto out;
            x->value = pv[0]; /* the p50, for the summary line */
            fmt_num(num[nrows][0], 32, pv[0]);
            fmt_num(num[nrows][1], 32, st.min);
            fmt_num(num[nrows][2], 32, st.max);
            fmt_num(num[nrows][3], 32, st.mean);
            fmt_num(num[nrows][4], 32, st.stddev);
            fmt_num(num[nrows][6], 32, pv[1]);
            fmt_num(num[nrows][7], 32, pv[2]);
            snprintf(num[nrows][5], 32, "%zu", x->nx);
        } else {
            if (!isfinite(x->value))
                continue; /* nothing completed: no throughput */
            fmt_num(num[nrows][0], 32, x->value);
            snprintf(num[nrows][5], 32, "%ld", x->n);
        }
        measured_row(row, c, run_id, stamp, r->counters[0] ? r->counters : NULL, x->notes);
        row->col[TB_COL_MODEL] = a->name;
        row->col[TB_COL_LAYERS] = layers;
        row->col[TB_COL_PHASE] = "serve";
        row->col[TB_COL_PRECISION] = spec->precision;
        row->col[TB_COL_BATCH] = o->level_rate > 0 ? NULL : batch;
        row->col[TB_COL_SEQ_IN] = seq_in;
        row->col[TB_COL_SEQ_OUT] = seq_out;
        row->col[TB_COL_METRIC] = x->metric;
        row->col[TB_COL_VALUE] = num[nrows][0];
        row->col[TB_COL_UNIT] = x->unit;
        row->col[TB_COL_N] = num[nrows][5];
        row->col[TB_COL_WARMUP] = NULL;
        if (x->x) {
            row->col[TB_COL_MIN] = num[nrows][1];
            row->col[TB_COL_MAX] = num[nrows][2];
            row->col[TB_COL_MEAN] = num[nrows][3];
            row->col[TB_COL_STDDEV] = num[nrows][4];
            row->col[TB_COL_P90] = num[nrows][6];
            row->col[TB_COL_P99] = num[nrows][7];
        }
        row->col[TB_COL_FLOPS] = flops;
        row->col[TB_COL_WORKLOAD] = workload;
        row->col[TB_COL_CONFIG] = config;
        row->col[TB_COL_CONCURRENCY] = o->level_concurrency ? conc : NULL;
        row->col[TB_COL_REQUEST_RATE] = o->level_rate > 0 ? rate : NULL;
        nrows++;
    }
    rc = tb_results_append(c->results, rows, (size_t)nrows, err, errlen);
    if (rc == 0 && summary && summarylen)
        snprintf(summary, summarylen,
                 "%zu of %zu requests completed; output %.4g tokens/s, ttft p50 %.4g ms, tpot p50 "
                 "%.4g ms%s%s",
                 L->ok, L->nreqs, out_tok / window, sr[0].nx ? sr[0].value : NAN,
                 sr[1].nx ? sr[1].value : NAN, L->failed ? "; failures: " : "",
                 L->failed ? L->failures : "");
out:
    for (int i = 0; i < NS; i++)
        free(sr[i].x);
    return rc;
}
