/*
 * harness/cmd_run.c: `trnbench run`, a suite or one workload given by options, on this
 * CPU (tb_exec.h) and, where a CUDA device and the plugin are present, on the GPU as
 * well (tb_gpu.h: executor cuda, bf16, run ids prefixed "cuda:", energy rows, and the
 * performance model's prediction of the same workload on the detected chip), into
 * DIR/results.csv (tb_results.h). A run of precision fp8 is the GPU's alone: the CPU
 * executor skips it with the reason, as the GPU does below compute capability 8.9;
 * a skipped run is not a failure.
 *
 * Everything is checked before anything runs: the suite, every model file, every
 * shape against the model's context and the existing results file; any problem is an
 * input error (exit 2) and nothing is written. Then each run whose id is not yet in
 * results.csv is measured and its rows appended atomically, so an interrupted suite,
 * run again, resumes where it stopped. A run that fails (engine error or failed
 * validation) records nothing and makes the exit status 1; the others still run.
 */
#include "cli.h"
#include "tb_arch.h"
#include "tb_counters.h"
#include "tb_darch.h"
#include "tb_exec.h"
#include "tb_gpu.h"
#include "tb_model.h"
#include "tb_platform.h"
#include "tb_pricing.h"
#include "tb_record.h"
#include "tb_results.h"
#include "tb_scenario.h"
#include "tb_stats.h"
#include "tb_suite.h"
#include "tb_timer.h"
#include "tb_util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench run --suite NAME|FILE [--out DIR]\n"
          "       trnbench run --model M --phase P --seq-in T [--seq-out N] [--batch B]\n"
          "                    [--layers N] [--reps R] [--warmup W] [--seed S] [--out DIR]\n"
          "                    [--precision fp32|fp8] [--executor cpu|cuda|all]\n"
          "       trnbench run --model M --phase denoise [--steps N] [--resolution PX]\n"
          "                    [--batch B] [--reps R] [--warmup W] [--seed S] [--out DIR]\n"
          "       trnbench run --list\n"
          "\n"
          "Run Llama and diffusion workloads on this machine's CPU (fp32, matrix products\n"
          "and convolutions through OpenBLAS) and append their measurements to\n"
          "DIR/results.csv, one row per metric.\n"
          "Where a CUDA GPU and the CUDA plugin are present, each Llama run and each\n"
          "denoise run (SDXL UNet, SD3 MMDiT, FLUX) also runs on the GPU (executor cuda,\n"
          "bf16 mixed precision, run id prefixed 'cuda:', plus avg_power_w and j_per_token\n"
          "or j_per_image from NVML, mfu for training, and the performance model's rows\n"
          "for the same workload on that chip); without one, a line says why and only the\n"
          "CPU runs.\n"
          "A run already in DIR/results.csv is skipped: run the same command again to\n"
          "resume an interrupted suite.\n"
          "\n"
          "  --suite NAME|FILE  suites/NAME.suite in the data folder, or a file\n"
          "  --out DIR          folder of results.csv (default: the current folder)\n"
          "  --model M          catalogue name (see --list) or a .model file\n"
          "  --phase P          prefill, decode or train (Llama); denoise (diffusion: one\n"
          "                     generation of --batch images, every step, both CFG halves)\n"
          "  --steps N          denoise: denoising steps (default: the model's)\n"
          "  --resolution PX    denoise: square image size (default: the model's)\n"
          "  --seq-in T         prompt tokens (prefill, decode) or sequence length (train)\n"
          "  --seq-out N        decode: tokens generated per repetition (default 32)\n"
          "  --batch B          sequences processed together (default 1)\n"
          "  --layers N         keep the first N layers of the model: a quick run of a big\n"
          "                     model's real layer shapes, named MODEL@LN in the results\n"
          "  --reps R           timed repetitions (default 5); --warmup W untimed ones\n"
          "                     before them (default 1)\n"
          "  --seed S           weights and tokens are drawn from it (default 1)\n"
          "  --precision P      fp32 (default: fp32 on the CPU, bf16 mixed precision on\n"
          "                     the GPU) or fp8 (e4m3 matrix products; GPU inference only,\n"
          "                     compute capability 8.9+; the CPU skips it)\n"
          "  --executor E       cpu, cuda or all (default: all that are available; cuda\n"
          "                     without a GPU is an error). TRNBENCH_CUDA=0 turns the GPU\n"
          "                     off\n"
          "  --list             the model catalogue with parameter counts\n"
          "  -h, --help         this text\n"
          "\n"
          "Metrics: prefill ttft_ms, prefill_tokens_per_s, gflop_per_s; decode tpot_ms,\n"
          "decode_tokens_per_s, gflop_per_s, gbyte_per_s; train step_time_s,\n"
          "train_tokens_per_s, gflop_per_s, loss; denoise s_per_image, images_per_s,\n"
          "gflop_per_s. Values are medians of the repetitions.\n"
          "Exit status: 0 ok, 1 a run failed, 2 usage or input error (nothing run).\n",
          f);
}

/* ---- --list ---- */

struct list_ctx {
    int bad;       /* a file failed to load */
    int diffusion; /* diffusion models seen */
};

static void list_diffusion(const char *path, void *vctx)
{
    struct tb_darch d;
    char err[512];
    (void)vctx;
    if (tb_darch_load(&d, path, err, sizeof err) != 0)
        return;
    printf("%-16s %-6s %9.1f %8.1f %9.1f %5d %6s  %s\n", d.name, d.family,
           tb_darch_params_denoiser(&d) / 1e6, tb_darch_params_vae_decoder(&d) / 1e6,
           tb_darch_params_encoders(&d) / 1e6, d.resolution, d.cfg ? "yes" : "no",
           d.published_params > 0 ? "" : "(not a published model)");
}

static void list_one(const char *path, void *vctx)
{
    struct list_ctx *ctx = vctx;
    struct tb_arch a;
    char err[512];

    if (tb_arch_load(&a, path, err, sizeof err) != 0) {
        struct tb_darch d;
        char derr[512];
        if (tb_darch_load(&d, path, derr, sizeof derr) == 0) {
            ctx->diffusion++;
            return; /* listed in their own table */
        }
        fprintf(stderr, "trnbench run: %s\n", err);
        ctx->bad = 1;
        return;
    }
    printf("%-16s %3d %6d %4d %4d %6d %7d %10.1f  %s\n", a.name, a.layers, a.hidden, a.heads,
           a.kv_heads, a.ffn, a.vocab, tb_arch_params_total(&a) / 1e6,
           a.published_params > 0 ? "" : "(not a published model)");
}

static int list_models(void)
{
    struct list_ctx ctx = {0};
    char err[512];

    printf("%-16s %3s %6s %4s %4s %6s %7s %10s\n", "model", "L", "hidden", "NH", "NKV", "ffn",
           "vocab", "params(M)");
    if (tb_arch_list(list_one, &ctx, err, sizeof err) < 0) {
        fprintf(stderr, "trnbench run: %s\n", err);
        return 2;
    }
    if (ctx.diffusion) {
        printf("\n%-16s %-6s %9s %8s %9s %5s %6s\n", "diffusion model", "kind", "denoiser",
               "vae-dec", "encoders", "px", "cfg");
        printf("%-16s %-6s %9s %8s %9s\n", "", "", "(M params)", "(M)", "(M)");
        tb_arch_list(list_diffusion, &ctx, err, sizeof err);
    }
    return ctx.bad ? 2 : 0;
}

/* A run's model: a Llama, or a diffusion model for phase denoise. */
struct resolved {
    struct tb_arch a;
    struct tb_darch d;
    bool diffusion;
};

/* ---- checks before anything runs ---- */

/* Load and shorten the model of spec; check the shape fits its context. */
static int resolve(const struct tb_run_spec *spec, const char *where, struct resolved *mr,
                   char *err, size_t errlen)
{
    char e[1024];
    int need = spec->seq_in + (spec->phase == TB_PHASE_DECODE ? spec->seq_out : 0);
    struct tb_arch *a = &mr->a;

    memset(mr, 0, sizeof *mr);
    if (spec->phase == TB_PHASE_DENOISE) {
        const struct tb_darch *d = &mr->d;
        int res, mult;
        mr->diffusion = true;
        if (tb_darch_find(&mr->d, spec->model, e, sizeof e) != 0)
            return tb_err(err, errlen, "%s: field 'model': %s", where, e);
        res = spec->resolution ? spec->resolution : d->resolution;
        mult = d->vae_scale * (d->kind == TB_DARCH_UNET ? 1 << (d->nlevels - 1) : d->patch);
        if (res % mult)
            return tb_err(err, errlen, "%s: field 'resolution': %d is not a multiple of %d (%s)",
                          where, res, mult, d->name);
        if (spec->layers)
            return tb_err(err, errlen, "%s: field 'layers': not for a diffusion model", where);
        return 0;
    }
    if (tb_darch_is_diffusion(spec->model) == 1)
        return tb_err(err, errlen, "%s: field 'phase': %s is a diffusion model: phase denoise",
                      where, spec->model);

    if (tb_arch_find(a, spec->model, e, sizeof e) != 0)
        return tb_err(err, errlen, "%s: field 'model': %s", where, e);
    if (spec->layers && tb_arch_truncate(a, spec->layers, e, sizeof e) != 0)
        return tb_err(err, errlen, "%s: %s", where, e);
    if (need > a->max_context)
        return tb_err(err, errlen, "%s: field '%s': %d tokens exceed %s's context of %d", where,
                      spec->phase == TB_PHASE_DECODE ? "seq_out" : "seq_in", need, a->name,
                      a->max_context);
    return 0;
}

static void where_of(const struct tb_suite *s, const struct tb_run_spec *r, char *buf, size_t len)
{
    if (r->line)
        snprintf(buf, len, "%s: line %ld", s->path, r->line);
    else
        snprintf(buf, len, "command line");
}

/* ---- modeled runs (predict lines) ---- */

/* A predict spec's fields; the metric the scenario code asks for is the phase's main
 * one (every metric of the prediction is recorded). */
static const char *spec_get(const void *ctx, const char *name)
{
    const struct tb_predict_spec *p = ctx;
    const char *v = tb_predict_spec_get(p, name), *ph = tb_predict_spec_get(p, "phase");
    if (v || strcmp(name, "metric"))
        return v;
    return !strcmp(ph, "train")     ? "train_tokens_per_s"
           : !strcmp(ph, "prefill") ? "ttft_ms"
           : !strcmp(ph, "decode")  ? "tpot_ms"
           : !strcmp(ph, "denoise") ? "images_per_s"
                                    : "output_tokens_per_s";
}

/* Check the targets and models of the predict lines before anything runs. */
static int check_predicts(const struct tb_suite *s, const struct tb_pricing *pr, char *err,
                          size_t errlen)
{
    for (size_t i = 0; i < s->npredicts; i++) {
        const struct tb_predict_spec *p = &s->predicts[i];
        const char *t = tb_predict_spec_get(p, "target");
        bool denoise = !strcmp(tb_predict_spec_get(p, "phase"), "denoise");
        struct tb_arch a;
        struct tb_darch da;
        char e[1024];
        if (!tb_pricing_instance(pr, t))
            return tb_err(err, errlen,
                          "%s: line %ld: field 'target': unknown target '%s' (not in "
                          "pricing/instances.csv)",
                          s->path, p->line, t);
        if ((denoise ? tb_darch_find(&da, tb_predict_spec_get(p, "model"), e, sizeof e)
                     : tb_arch_find(&a, tb_predict_spec_get(p, "model"), e, sizeof e)) != 0)
            return tb_err(err, errlen, "%s: line %ld: field 'model': %s", s->path, p->line, e);
    }
    return 0;
}

/* Predict one spec and append its rows. Returns 1 when recorded, 0 when the model
 * could not predict it (the reason printed), -1 on a write error. */
static int record_predict(const struct tb_record_ctx *c, const struct tb_model *m,
                          const struct tb_predict_spec *ps, const char *run_id, char *err,
                          size_t errlen)
{
    /* kind: t training, i inference, d diffusion */
    static const struct {
        const char *metric, *unit;
        char kind;
    } METRICS[] = {
        {"train_tokens_per_s", "tokens/s", 't'},
        {"train_tokens_per_s_per_chip", "tokens/s", 't'},
        {"step_time_s", "s", 't'},
        {"mfu", "fraction", 't'},
        {"ttft_ms", "ms", 'i'},
        {"tpot_ms", "ms", 'i'},
        {"e2e_latency_ms", "ms", 'i'},
        {"output_tokens_per_s", "tokens/s", 'i'},
        {"output_tokens_per_s_per_chip", "tokens/s", 'i'},
        {"total_tokens_per_s", "tokens/s", 'i'},
        {"tokens_per_s_per_user", "tokens/s", 'i'},
        {"images_per_s", "images/s", 'd'},
        {"images_per_s_per_chip", "images/s", 'd'},
        {"s_per_image", "s", 'd'},
    };
    enum { NM = sizeof METRICS / sizeof METRICS[0] };
    struct tb_scenario_result res;
    struct tb_result_row rows[NM];
    char vals[NM][32], layers[16], batch[24], stamp[32], notes[800], inst[24], steps[24], px[24];
    char chips[24];
    const char *phase = tb_predict_spec_get(ps, "phase");
    bool train = !strcmp(phase, "train"), denoise = !strcmp(phase, "denoise");
    char kind = train ? 't' : denoise ? 'd' : 'i';
    const char *model_name = tb_predict_spec_get(ps, "model");
    struct tb_arch a;
    size_t n = 0;

    tb_scenario_predict_one(spec_get, ps, m, &res);
    if (res.why[0]) {
        fprintf(stderr, "trnbench run:   not predicted: %s\n", res.why);
        return 0;
    }
    layers[0] = '\0';
    if (!denoise) {
        if (tb_arch_find(&a, model_name, err, errlen) != 0)
            return -1;
        snprintf(layers, sizeof layers, "%d", a.layers);
        model_name = a.name;
    }
    tb_utc_now(stamp, sizeof stamp);
    snprintf(batch, sizeof batch, "%ld", res.p.batch);
    snprintf(inst, sizeof inst, "%ld", res.p.instances);
    snprintf(chips, sizeof chips, "%ld", res.p.chips); /* the report charges their share */
    snprintf(steps, sizeof steps, "%ld", res.p.steps);
    snprintf(px, sizeof px, "%ld", res.p.resolution);
    snprintf(notes, sizeof notes, "%s-bound; %s; %.1f of %.1f GiB per device", res.p.bound,
             res.p.assumptions, res.p.mem_per_device_gib, res.p.hbm_per_device_gib);
    for (size_t i = 0; i < NM; i++) {
        double v = tb_prediction_metric(&res.p, METRICS[i].metric);
        struct tb_result_row *r = &rows[n];
        if (METRICS[i].kind != kind || isnan(v))
            continue;
        memset(r, 0, sizeof *r);
        snprintf(vals[n], sizeof vals[n], "%.6g", v);
        r->col[TB_COL_RUN_ID] = run_id;
        r->col[TB_COL_PROVENANCE] = "modeled";
        r->col[TB_COL_TARGET] = tb_predict_spec_get(ps, "target");
        r->col[TB_COL_INSTANCES] = inst;
        r->col[TB_COL_EXECUTOR] = "model";
        r->col[TB_COL_MODEL] = model_name;
        r->col[TB_COL_LAYERS] = denoise ? NULL : layers;
        r->col[TB_COL_PHASE] = phase;
        r->col[TB_COL_PRECISION] =
            tb_predict_spec_get(ps, "precision") ? tb_predict_spec_get(ps, "precision") : "bf16";
        r->col[TB_COL_BATCH] = batch;
        r->col[TB_COL_SEQ_IN] = tb_predict_spec_get(ps, "seq_in");
        r->col[TB_COL_SEQ_OUT] = train ? NULL : tb_predict_spec_get(ps, "seq_out");
        r->col[TB_COL_STEPS] = denoise ? steps : NULL;
        r->col[TB_COL_RESOLUTION] = denoise ? px : NULL;
        r->col[TB_COL_METRIC] = METRICS[i].metric;
        r->col[TB_COL_VALUE] = vals[n];
        r->col[TB_COL_UNIT] = METRICS[i].unit;
        r->col[TB_COL_TIMESTAMP] = stamp;
        r->col[TB_COL_COMMIT] = tb_version_commit();
        r->col[TB_COL_SOURCE] = TB_MODEL_VERSION;
        r->col[TB_COL_NOTES] = notes;
        r->col[TB_COL_CHIPS_USED] = chips;
        n++;
    }
    (void)c;
    if (tb_results_append(c->results, rows, n, err, errlen) != 0)
        return -1;
    if (denoise)
        fprintf(stderr, "trnbench run:   %.4g images/s, %.4g s per image, %s\n", res.p.images_per_s,
                res.p.s_per_image, res.p.assumptions);
    else if (train)
        fprintf(stderr, "trnbench run:   %.4g tokens/s (%.4g per chip), MFU %.2f, %s\n",
                res.p.train_tokens_per_s, res.p.train_tokens_per_s_per_chip, res.p.mfu,
                res.p.assumptions);
    else
        fprintf(stderr,
                "trnbench run:   %.4g output tokens/s at batch %ld, TTFT %.4g ms, TPOT %.4g ms\n",
                res.p.output_tokens_per_s, res.p.batch, res.p.ttft_ms, res.p.tpot_ms);
    return 1;
}

/* ---- the GPU side ---- */

enum executor_choice { EXEC_ALL, EXEC_CPU, EXEC_CUDA };

struct gpu_side {
    bool on;                        /* a device is in use */
    struct tb_gpu gpu;              /* owned */
    struct tb_record_ctx ctx;       /* the rows' GPU facts */
    const struct tb_model *model;   /* borrowed; NULL: no modeled rows */
    const struct tb_chip *chip;     /* the catalogue's chip, or NULL (why in chip_why) */
    const struct tb_instance *inst; /* the instance with the fewest of them */
    char chip_why[256];
    struct tb_gpu_share share; /* the part of the machine its rows are charged */
};

static void ps_set(struct tb_predict_spec *p, const char *key, const char *value)
{
    if (p->nfields >= TB_PREDICT_MAX_FIELDS)
        return;
    snprintf(p->keys[p->nfields], sizeof p->keys[0], "%s", key);
    snprintf(p->values[p->nfields], sizeof p->values[0], "%s", value);
    p->nfields++;
}

/* The model's rows for spec on one chip of the GPU's instance type. Returns 0, or -1 on
 * a write error. */
static int record_gpu_model(const struct gpu_side *g, const struct tb_run_spec *spec,
                            const struct resolved *mr, char *err, size_t errlen)
{
    struct tb_predict_spec ps;
    char num[32], id[320];
    int has;
    if (!g->model || !g->inst) {
        fprintf(stderr, "trnbench run:   not modeled on the GPU's chip: %s\n",
                g->model ? g->chip_why : "performance model not loaded");
        return 0;
    }
    if (spec->layers) {
        fprintf(stderr,
                "trnbench run:   not modeled on the GPU's chip: a shortened model "
                "(layers=%d) is not in the catalogue\n",
                spec->layers);
        return 0;
    }
    memset(&ps, 0, sizeof ps);
    ps_set(&ps, "target", g->inst->instance);
    ps_set(&ps, "model", spec->model);
    ps_set(&ps, "phase", tb_phase_to_string(spec->phase));
    snprintf(num, sizeof num, "%d", spec->batch);
    ps_set(&ps, "batch", num);
    if (spec->phase == TB_PHASE_DENOISE) {
        const struct tb_darch *d = &mr->d;
        snprintf(num, sizeof num, "%d", spec->steps ? spec->steps : d->default_steps);
        ps_set(&ps, "steps", num);
        snprintf(num, sizeof num, "%d", spec->resolution ? spec->resolution : d->resolution);
        ps_set(&ps, "resolution", num);
    } else {
        snprintf(num, sizeof num, "%d", spec->seq_in);
        ps_set(&ps, "seq_in", num);
    }
    if (spec->phase == TB_PHASE_DECODE) {
        snprintf(num, sizeof num, "%d", spec->seq_out);
        ps_set(&ps, "seq_out", num);
    }
    /* the precision the GPU ran (bf16, or fp8: the model then assumes an fp8 KV cache
     * too, which the engine keeps in bf16) */
    ps_set(&ps, "precision", spec->precision);
    ps_set(&ps, "chips", "1");
    tb_predict_spec_id(&ps, id, sizeof id - 8);
    strcat(id, "/chips1");
    has = tb_results_has_run(g->ctx.results, id, err, errlen);
    if (has != 0)
        return has < 0 ? -1 : 0;
    fprintf(stderr, "trnbench run:   modeled on one %s of %s: %s\n", g->chip->name,
            g->inst->instance, id);
    return record_predict(&g->ctx, g->model, &ps, id, err, errlen) < 0 ? -1 : 0;
}

/* One run of spec on the CPU (g NULL) or the GPU, its rows appended when it validated.
 * Returns 0 (done, already there, or not for this executor: *unsupported counts those),
 * 1 when the run failed, -1 on a write error. */
static int run_one(const struct tb_record_ctx *c, struct gpu_side *g,
                   const struct tb_run_spec *cpu_spec, const struct resolved *mr, const char *tag,
                   int *done, int *skipped, int *unsupported)
{
    struct tb_run_spec spec = *cpu_spec;
    struct tb_exec_result r;
    struct tb_energy e;
    struct tb_record_extra extra[TB_RECORD_MAX_EXTRA];
    char id[256], err[2048], summary[512];
    int has, rc, nextra = 0;
    uint64_t t0;

    if (g) {
        if (!strcmp(spec.precision, "fp32")) /* the GPU engine's mixed precision */
            snprintf(spec.precision, sizeof spec.precision, "bf16");
        memcpy(id, "cuda:", 5);
        tb_run_spec_id(&spec, id + 5, sizeof id - 5);
    } else {
        tb_run_spec_id(&spec, id, sizeof id);
    }
    if (g ? !tb_gpu_can_run(&g->gpu, &spec, err, sizeof err)
          : !tb_exec_can_run(&spec, err, sizeof err)) {
        fprintf(stderr, "trnbench run: [%s] %s: not run on the %s: %s\n", tag, id,
                g ? "GPU" : "CPU", err);
        (*unsupported)++;
        return 0;
    }
    has = tb_results_has_run(c->results, id, err, sizeof err);
    if (has < 0) {
        fprintf(stderr, "trnbench run: %s\n", err);
        return -1;
    }
    if (has) {
        fprintf(stderr, "trnbench run: [%s] %s: already in results, skipped\n", tag, id);
        (*skipped)++;
        return 0;
    }
    fprintf(stderr, "trnbench run: [%s] %s (%d warm-up + %d timed) ...\n", tag, id, spec.warmup,
            spec.reps);
    t0 = tb_timer_now_ns();
    if (g)
        rc = mr->diffusion ? tb_gpu_run_denoise(&g->gpu, &spec, &mr->d, &r, &e, err, sizeof err)
                           : tb_gpu_run(&g->gpu, &spec, &mr->a, &r, &e, err, sizeof err);
    else
        rc = mr->diffusion ? tb_exec_run_denoise(&spec, &mr->d, &r, err, sizeof err)
                           : tb_exec_run(&spec, &mr->a, &r, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "trnbench run: %s: %s\n", id, err);
        tb_exec_result_release(&r);
        return 1;
    }
    if (!r.valid) {
        fprintf(stderr, "trnbench run: %s: %s; nothing recorded\n", id, r.note);
        tb_exec_result_release(&r);
        return 1;
    }
    if (g)
        nextra = tb_record_gpu_extras(g->chip, &spec, &r, &e, extra);
    if (tb_record_run(c, &spec, mr->diffusion ? NULL : &mr->a, mr->diffusion ? &mr->d : NULL, &r,
                      id, extra, nextra, g && !e.ok ? e.note : NULL, summary, sizeof summary, err,
                      sizeof err) != 0 ||
        (g && record_gpu_model(g, &spec, mr, err, sizeof err) != 0)) {
        fprintf(stderr, "trnbench run: %s\n", err);
        tb_exec_result_release(&r);
        return -1;
    }
    fprintf(stderr, "trnbench run:   %s\n", summary);
    (*done)++;
    fprintf(stderr, "trnbench run:   %.1f s wall\n", tb_timer_seconds(t0, tb_timer_now_ns()));
    tb_exec_result_release(&r);
    return 0;
}

/* ---- options ---- */

/* Map a command-line option to a run field ("--seq-in" -> "seq_in"), or NULL. */
static const char *spec_field(const char *opt)
{
    static const char *const map[][2] = {
        {"--model", "model"},     {"--phase", "phase"},           {"--seq-in", "seq_in"},
        {"--seq-out", "seq_out"}, {"--batch", "batch"},           {"--layers", "layers"},
        {"--reps", "reps"},       {"--warmup", "warmup"},         {"--seed", "seed"},
        {"--steps", "steps"},     {"--resolution", "resolution"}, {"--precision", "precision"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(opt, map[i][0]))
            return map[i][1];
    return NULL;
}

int tb_cmd_run(int argc, char **argv)
{
    struct tb_suite suite;
    struct tb_run_spec one;
    struct resolved *archs = NULL;
    struct tb_platform plat;
    struct tb_pricing pricing;
    struct tb_model model;
    bool have_model = false;
    struct tb_record_ctx ctx;
    const char *suite_name = NULL, *out = ".";
    char err[2048], path[PATH_MAX];
    bool have_one = false, list = false;
    enum executor_choice executor = EXEC_ALL;
    struct gpu_side gpu;
    int rc = 2, failed = 0, done = 0, skipped = 0, modeled = 0, unsupported = 0;

    memset(&gpu, 0, sizeof gpu);
    memset(&suite, 0, sizeof suite);
    memset(&ctx, 0, sizeof ctx);
    ctx.executor = "cpu";
    memset(&pricing, 0, sizeof pricing);
    memset(&model, 0, sizeof model);
    tb_run_spec_init(&one);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *field;
        char word[512];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--list")) {
            list = true;
            continue;
        }
        if (strcmp(a, "--suite") && strcmp(a, "--out") && strcmp(a, "--executor") &&
            !spec_field(a)) {
            fprintf(stderr, "trnbench run: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "trnbench run: option '%s' needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--suite")) {
            suite_name = argv[++i];
        } else if (!strcmp(a, "--out")) {
            out = argv[++i];
        } else if (!strcmp(a, "--executor")) {
            const char *v = argv[++i];
            if (!strcmp(v, "all"))
                executor = EXEC_ALL;
            else if (!strcmp(v, "cpu"))
                executor = EXEC_CPU;
            else if (!strcmp(v, "cuda"))
                executor = EXEC_CUDA;
            else {
                fprintf(stderr, "trnbench run: option '--executor': '%s' is not cpu, cuda or all\n",
                        v);
                return 2;
            }
        } else {
            field = spec_field(a);
            if ((size_t)snprintf(word, sizeof word, "%s=%s", field, argv[++i]) >= sizeof word) {
                fprintf(stderr, "trnbench run: option '%s': value too long\n", a);
                return 2;
            }
            if (tb_run_spec_set(&one, word, "command line", err, sizeof err) != 0) {
                fprintf(stderr, "trnbench run: %s\n", err);
                return 2;
            }
            have_one = true;
        }
    }
    if (list)
        return list_models();
    if (!suite_name == !have_one) {
        fprintf(stderr, "trnbench run: give either --suite or a workload (--model, --phase, "
                        "--seq-in)\n");
        usage(stderr);
        return 2;
    }

    /* ---- load and check everything first ---- */
    if (suite_name) {
        if (tb_suite_load(&suite, suite_name, err, sizeof err) != 0) {
            fprintf(stderr, "trnbench run: %s\n", err);
            return 2;
        }
    } else {
        if (tb_run_spec_check(&one, "command line", err, sizeof err) != 0) {
            fprintf(stderr, "trnbench run: %s\n", err);
            return 2;
        }
        snprintf(suite.name, sizeof suite.name, "command line");
        suite.runs = tb_alloc_array(1, sizeof *suite.runs);
        if (!suite.runs) {
            fprintf(stderr, "trnbench run: out of memory\n");
            return 1;
        }
        suite.runs[0] = one;
        suite.nruns = 1;
    }
    archs = tb_alloc_array(suite.nruns + 1, sizeof *archs);
    if (!archs) {
        fprintf(stderr, "trnbench run: out of memory\n");
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < suite.nruns; i++) {
        char where[PATH_MAX + 32];
        where_of(&suite, &suite.runs[i], where, sizeof where);
        if (resolve(&suite.runs[i], where, &archs[i], err, sizeof err) != 0) {
            fprintf(stderr, "trnbench run: %s\n", err);
            goto out;
        }
    }
    if (suite.npredicts) {
        if (tb_pricing_load(&pricing, NULL, err, sizeof err) != 0 ||
            tb_model_load(&model, &pricing, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "trnbench run: %s\n", err);
            tb_pricing_release(&pricing);
            goto out;
        }
        have_model = true;
        if (check_predicts(&suite, &pricing, err, sizeof err) != 0) {
            fprintf(stderr, "trnbench run: %s\n", err);
            goto out;
        }
    }
    if ((size_t)snprintf(path, sizeof path, "%s/results.csv", out) >= sizeof path) {
        fprintf(stderr, "trnbench run: --out: folder name too long\n");
        goto out;
    }
    ctx.results = path;
    /* an existing results file must be readable as one before anything runs */
    if (tb_results_has_run(path, "", err, sizeof err) < 0) {
        fprintf(stderr, "trnbench run: %s\n", err);
        goto out;
    }
    tb_platform_detect(&plat, err, sizeof err);
    snprintf(ctx.target, sizeof ctx.target, "%s", tb_platform_target(&plat));
    tb_platform_describe(&plat, ctx.host, sizeof ctx.host);
    snprintf(ctx.blas, sizeof ctx.blas, "%s", plat.blas);
    fprintf(stderr,
            "trnbench run: suite '%s', %zu run%s on %s (target %s) and %zu modeled into '%s'\n",
            suite.name, suite.nruns, suite.nruns == 1 ? "" : "s", ctx.host, ctx.target,
            suite.npredicts, path);
    fprintf(stderr, "trnbench run: counters %s\n", tb_counters_status());

    /* ---- the GPU, when there is one ---- */
    if (executor != EXEC_CPU) {
        if (tb_gpu_open(&gpu.gpu, 0, 0) != 0) {
            fprintf(stderr, "trnbench run: GPU executor not used: %s\n", gpu.gpu.why);
            if (executor == EXEC_CUDA) {
                fprintf(stderr, "trnbench run: --executor cuda: no GPU to run on\n");
                rc = 1;
                goto out;
            }
        } else {
            gpu.on = true;
            gpu.ctx = ctx;
            gpu.ctx.executor = "cuda";
            tb_gpu_describe(&gpu.gpu.info, gpu.ctx.host, sizeof gpu.ctx.host);
            snprintf(gpu.ctx.blas, sizeof gpu.ctx.blas, "cuBLASLt (CUDA runtime %d.%d)",
                     gpu.gpu.info.runtime_version / 1000, gpu.gpu.info.runtime_version % 1000 / 10);
            fprintf(stderr, "trnbench run: GPU executor on %s; energy %s\n", gpu.ctx.host,
                    gpu.gpu.info.nvml);
            if (!have_model) {
                if (tb_pricing_load(&pricing, NULL, err, sizeof err) != 0 ||
                    tb_model_load(&model, &pricing, NULL, err, sizeof err) != 0) {
                    fprintf(stderr, "trnbench run: no modeled rows for the GPU: %s\n", err);
                    tb_pricing_release(&pricing);
                    memset(&pricing, 0, sizeof pricing);
                } else {
                    have_model = true;
                }
            }
            if (have_model) {
                gpu.model = &model;
                gpu.chip = tb_gpu_chip(&pricing, &gpu.gpu.info, &gpu.inst, gpu.chip_why,
                                       sizeof gpu.chip_why);
            } else {
                snprintf(gpu.chip_why, sizeof gpu.chip_why, "performance model not loaded");
            }
            /* rows record the GPUs used; twins go on one chip of this same instance */
            tb_gpu_share(&gpu.gpu, have_model ? &pricing : NULL, ctx.target, gpu.chip, &gpu.share);
            gpu.inst = gpu.share.twin ? gpu.share.twin : gpu.inst;
            gpu.ctx.chips_used = gpu.share.chips_used;
            fprintf(stderr, "trnbench run: GPU executor: %s\n", gpu.share.text);
        }
    }

    /* the output folder only once the run can go ahead (--executor cuda without a
     * GPU stops above and leaves nothing behind) */
    if (tb_mkdir_p(out, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench run: %s\n", err);
        rc = 1;
        goto out;
    }

    /* ---- run ---- */
    for (size_t i = 0; i < suite.nruns; i++) {
        char tag[48];
        int r = 0;
        snprintf(tag, sizeof tag, "%zu/%zu", i + 1, suite.nruns);
        if (executor != EXEC_CUDA)
            r = run_one(&ctx, NULL, &suite.runs[i], &archs[i], tag, &done, &skipped, &unsupported);
        if (r >= 0 && gpu.on)
            r = run_one(&gpu.ctx, &gpu, &suite.runs[i], &archs[i], tag, &done, &skipped,
                        &unsupported);
        if (r < 0) {
            rc = 1;
            goto out;
        }
        failed += r;
    }
    /* ---- modeled runs ---- */
    for (size_t i = 0; i < suite.npredicts; i++) {
        char id[256];
        int has, r;
        tb_predict_spec_id(&suite.predicts[i], id, sizeof id);
        has = tb_results_has_run(path, id, err, sizeof err);
        if (has < 0) {
            fprintf(stderr, "trnbench run: %s\n", err);
            rc = 1;
            goto out;
        }
        if (has) {
            skipped++;
            continue;
        }
        fprintf(stderr, "trnbench run: [modeled %zu/%zu] %s\n", i + 1, suite.npredicts, id);
        r = record_predict(&ctx, &model, &suite.predicts[i], id, err, sizeof err);
        if (r < 0) {
            fprintf(stderr, "trnbench run: %s\n", err);
            rc = 1;
            goto out;
        }
        modeled += r;
    }
    fprintf(stderr,
            "trnbench run: %d run%s measured, %d modeled, %d already there, %d failed; results "
            "in '%s'\n",
            done, done == 1 ? "" : "s", modeled, skipped, failed, path);
    if (unsupported)
        fprintf(stderr,
                "trnbench run: %d run%s not for an executor here (precision; reasons above)\n",
                unsupported, unsupported == 1 ? "" : "s");
    rc = failed ? 1 : 0;
out:
    tb_gpu_close(&gpu.gpu);
    if (have_model) {
        tb_model_release(&model);
        tb_pricing_release(&pricing);
    }
    free(archs);
    tb_suite_release(&suite);
    return rc;
}
