/* harness/run/tb_record.c: see tb_record.h. */
#include "tb_record.h"

#include "tb_results.h"
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

static void fill_common(struct tb_result_row *row, const struct tb_record_ctx *c,
                        const struct tb_run_spec *spec, const struct tb_arch *a,
                        const struct tb_darch *d, const struct tb_exec_result *r, char (*buf)[64],
                        const char *run_id, const char *stamp, const char *notes)
{
    memset(row, 0, sizeof *row);
    row->col[TB_COL_RUN_ID] = run_id;
    row->col[TB_COL_PROVENANCE] = "measured";
    row->col[TB_COL_TARGET] = c->target;
    row->col[TB_COL_INSTANCES] = "1";
    row->col[TB_COL_HOST] = c->host;
    row->col[TB_COL_EXECUTOR] = c->executor;
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
    row->col[TB_COL_TIMESTAMP] = stamp;
    row->col[TB_COL_COMMIT] = tb_version_commit();
    row->col[TB_COL_COMPILER] = c->compiler ? c->compiler : tb_version_compiler();
    row->col[TB_COL_CFLAGS] = c->cflags ? c->cflags : tb_version_cflags();
    row->col[TB_COL_BLAS] = c->blas;
    row->col[TB_COL_COUNTERS] = r->counters;
    row->col[TB_COL_SOURCE] = c->source ? c->source : "trnbench";
    row->col[TB_COL_NOTES] = notes;
    row->col[TB_COL_CHIPS_USED] = c->chips_used;
    row->col[TB_COL_DEVICE] = c->device[0] ? c->device : NULL;
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
    char vals[NM][32], layers[16], batch[24], stamp[32], notes[800], inst[24], steps[24], px[24];
    char chips[24], seq_in[24], seq_out[24];
    size_t nall, n = 0;
    const struct tb_metric *all = tb_metric_all(&nall);

    tb_utc_now(stamp, sizeof stamp);
    snprintf(layers, sizeof layers, "%d", denoise ? 0 : sc->arch->layers);
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
        r->col[TB_COL_MODEL] = denoise ? sc->darch->name : sc->arch->name;
        r->col[TB_COL_LAYERS] = denoise ? NULL : layers;
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
