/* harness/run/tb_run.c: the plan stage (see tb_run.h): suite lines x executors ->
 * runs, resume keys, and each run through tb_measure into the recorder. */
#include "tb_run.h"

#include "tb_counters.h"
#include "tb_executor.h"
#include "tb_log.h"
#include "tb_neuron.h"
#include "tb_neuron_sdk.h"
#include "tb_recipe.h"
#include "tb_results.h"
#include "tb_scenario.h"
#include "tb_slurm.h"
#include "tb_timer.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks before anything runs ---- */

/* Load and shorten the model of spec; check the shape fits its context. */
static int resolve(const struct tb_run_spec *spec, const char *where, struct tb_resolved *mr,
                   char *err, size_t errlen)
{
    char e[1024];
    int need =
        spec->seq_in +
        (spec->phase == TB_PHASE_DECODE || spec->phase == TB_PHASE_SERVE ? spec->seq_out : 0);
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
                      spec->phase == TB_PHASE_PREFILL || spec->phase == TB_PHASE_TRAIN ? "seq_in"
                                                                                       : "seq_out",
                      need, a->name, a->max_context);
    return 0;
}

static void where_of(const struct tb_suite *s, const struct tb_run_spec *r, char *buf, size_t len)
{
    if (r->line)
        snprintf(buf, len, "%s: line %ld", s->path, r->line);
    else
        snprintf(buf, len, "command line");
}

/* A predict spec's fields; the metric the scenario code asks for is the phase's main
 * one (every metric of the prediction is recorded). */
static const char *main_metric(const char *phase)
{
    return !strcmp(phase, "train")     ? "train_tokens_per_s"
           : !strcmp(phase, "prefill") ? "ttft_ms"
           : !strcmp(phase, "decode")  ? "tpot_ms"
           : !strcmp(phase, "denoise") ? "images_per_s"
                                       : "output_tokens_per_s";
}

static const char *spec_get(const void *ctx, const char *name)
{
    const struct tb_predict_spec *p = ctx;
    const char *v = tb_predict_spec_get(p, name);
    if (v || strcmp(name, "metric"))
        return v;
    return main_metric(tb_predict_spec_get(p, "phase"));
}

/* Check the predict lines before anything runs: their targets and models, then each
 * line as the model reads it (tb_scenario_parse: ranges, precision, shape), so that a
 * line the model would refuse stops the suite with its line named instead of recording
 * nothing. */
static int check_predicts(const struct tb_suite *s, const struct tb_pricing *pr,
                          const struct tb_model *m, char *err, size_t errlen)
{
    for (size_t i = 0; i < s->npredicts; i++) {
        const struct tb_predict_spec *p = &s->predicts[i];
        const char *t = tb_predict_spec_get(p, "target");
        const char *phase = tb_predict_spec_get(p, "phase"),
                   *model = tb_predict_spec_get(p, "model");
        /* a diffusion model's: denoise, or its denoiser's training */
        bool denoise = !strcmp(phase, "denoise") ||
                       (!strcmp(phase, "train") && tb_darch_is_diffusion(model) == 1);
        struct tb_arch a;
        struct tb_darch da;
        char e[1024];
        if (!tb_pricing_instance(pr, t))
            return tb_err(err, errlen,
                          "%s: line %ld: field 'target': unknown target '%s' (not in "
                          "pricing/instances.csv)",
                          s->path, p->line, t);
        if ((denoise ? tb_darch_find(&da, model, e, sizeof e)
                     : tb_arch_find(&a, model, e, sizeof e)) != 0)
            return tb_err(err, errlen, "%s: line %ld: field 'model': %s", s->path, p->line, e);
        {
            struct tb_scenario_in in;
            struct tb_scenario_result why;
            if (tb_scenario_parse(spec_get, p, m, &in, &why) != 0)
                return tb_err(err, errlen, "%s: line %ld: %s", s->path, p->line, why.why);
        }
    }
    return 0;
}

int tb_plan_load_model(struct tb_plan *p, char *err, size_t errlen)
{
    if (tb_pricing_load(&p->pricing, p->prices_dir, err, errlen) != 0)
        return -1;
    if (tb_model_load(&p->model, &p->pricing, p->prices_dir, err, errlen) != 0) {
        tb_pricing_release(&p->pricing);
        memset(&p->pricing, 0, sizeof p->pricing);
        return -1;
    }
    p->have_model = true;
    return 0;
}

int tb_plan_load(struct tb_plan *p, const char *suite_name, const struct tb_run_spec *one,
                 const char *out, enum tb_run_executors which, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->which = which;
    p->ctx.executor = "cpu";
    if (suite_name) {
        if (tb_suite_load(&p->suite, suite_name, err, errlen) != 0)
            return TB_EINPUT;
    } else {
        if (tb_run_spec_check(one, "command line", err, errlen) != 0)
            return TB_EINPUT;
        snprintf(p->suite.name, sizeof p->suite.name, "command line");
        p->suite.runs = tb_alloc_array(1, sizeof *p->suite.runs);
        if (!p->suite.runs)
            return tb_err(err, errlen, "out of memory");
        p->suite.runs[0] = *one;
        p->suite.nruns = 1;
    }
    if (which == TB_RUN_PYTORCH) /* every training run through PyTorch */
        for (size_t i = 0; i < p->suite.nruns; i++) {
            struct tb_run_spec *r = &p->suite.runs[i];
            char where[PATH_MAX + 32];
            if (r->phase != TB_PHASE_TRAIN || r->torch.on)
                continue;
            r->torch.on = true;
            where_of(&p->suite, r, where, sizeof where);
            if (tb_run_spec_check(r, where, err, errlen) != 0)
                return TB_EINPUT;
        }
    p->work = tb_alloc_array(p->suite.nruns + 1, sizeof *p->work);
    if (!p->work)
        return tb_err(err, errlen, "out of memory");
    for (size_t i = 0; i < p->suite.nruns; i++) {
        char where[PATH_MAX + 32];
        where_of(&p->suite, &p->suite.runs[i], where, sizeof where);
        if (resolve(&p->suite.runs[i], where, &p->work[i], err, errlen) != 0)
            return TB_EINPUT;
    }
    for (size_t i = 0; i < p->suite.nruns; i++) { /* a recipe's real checkpoint */
        const struct tb_run_spec *r = &p->suite.runs[i];
        char where[PATH_MAX + 32], e[PATH_MAX + 512];
        if (r->phase != TB_PHASE_SERVE || !r->serve.model_path[0])
            continue;
        where_of(&p->suite, r, where, sizeof where);
        if (tb_recipe_check_checkpoint(&p->work[i].a, r->serve.model_path, e, sizeof e) != 0)
            return tb_err(err, errlen, "%s: %s", where, e), TB_EINPUT;
    }
    for (size_t i = 0; i < p->suite.nruns; i++) {
        const struct tb_run_spec *r = &p->suite.runs[i];
        char where[PATH_MAX + 32];
        if (r->phase != TB_PHASE_SERVE || !r->serve.target[0])
            continue;
        where_of(&p->suite, r, where, sizeof where);
        if (!p->have_model && tb_plan_load_model(p, err, errlen) != 0)
            return TB_EINPUT;
        if (!tb_pricing_instance(&p->pricing, r->serve.target))
            return tb_err(err, errlen,
                          "%s: field 'target': unknown instance type '%s' (not in "
                          "pricing/instances.csv)",
                          where, r->serve.target),
                   TB_EINPUT;
    }
    if (p->suite.npredicts) {
        if ((!p->have_model && tb_plan_load_model(p, err, errlen) != 0) ||
            check_predicts(&p->suite, &p->pricing, &p->model, err, errlen) != 0)
            return TB_EINPUT;
    }
    if ((size_t)snprintf(p->results, sizeof p->results, "%s/results.csv", out) >= sizeof p->results)
        return tb_err(err, errlen, "--out: folder name too long"), TB_EINPUT;
    p->ctx.results = p->results;
    /* an existing results file must be readable as one before anything runs */
    if (tb_results_has_run(p->results, "", err, errlen) < 0)
        return TB_EINPUT;
    return TB_OK;
}

int tb_plan_load_modeled(struct tb_plan *p, struct tb_suite *s, const char *prices_dir,
                         const struct tb_pricing *pr, const struct tb_model *m, const char *out,
                         char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->suite = *s;
    memset(s, 0, sizeof *s);
    p->out = out;
    p->prices_dir = prices_dir;
    p->ctx.executor = "model";
    if (p->suite.nruns)
        return tb_err(err, errlen, "%s: measured runs in a plan of modeled runs", p->suite.path),
               TB_EINPUT;
    if (pr && m) { /* the caller's, loaded once */
        p->pricing = *pr;
        p->model = *m;
        p->have_model = p->borrowed_model = true;
    }
    if ((!p->have_model && tb_plan_load_model(p, err, errlen) != 0) ||
        check_predicts(&p->suite, &p->pricing, &p->model, err, errlen) != 0)
        return TB_EINPUT;
    if ((size_t)snprintf(p->results, sizeof p->results, "%s/results.csv", out) >= sizeof p->results)
        return tb_err(err, errlen, "--out: folder name too long"), TB_EINPUT;
    p->ctx.results = p->results;
    return TB_OK;
}

int tb_plan_slurm(struct tb_plan *p, const struct tb_slurm_task *t, char *err, size_t errlen)
{
    long *ranks = NULL, n;
    char dir[PATH_MAX];

    if (tb_slurm_rank_results(p->out, t->rank, p->results, sizeof p->results) != 0 ||
        (size_t)snprintf(dir, sizeof dir, "%s/ranks", p->out) >= sizeof dir)
        return tb_err(err, errlen, "--out: folder name too long"), TB_EINPUT;
    if (tb_mkdir_p(dir, err, errlen) != 0)
        return TB_EFAIL;
    n = tb_slurm_rank_list(p->out, &ranks, err, errlen);
    if (n < 0)
        return TB_EFAIL;
    p->resume = tb_alloc_array((size_t)n + 1, sizeof *p->resume);
    if (!p->resume) {
        free(ranks);
        return tb_err(err, errlen, "out of memory"), TB_EFAIL;
    }
    /* the folder's results.csv (jobs before, a run outside Slurm), then the others' files */
    snprintf(p->resume[p->nresume++], PATH_MAX, "%s/results.csv", p->out);
    for (long k = 0; k < n; k++)
        if (ranks[k] != t->rank)
            tb_slurm_rank_results(p->out, ranks[k], p->resume[p->nresume++], PATH_MAX);
    free(ranks);
    p->slurm = t;
    p->ctx.slurm = t;
    p->ctx.results = p->results;
    /* every file read as results before anything runs */
    if (tb_plan_has_run(p, "", err, errlen) < 0)
        return TB_EINPUT;
    return TB_OK;
}

/* ---- the executors of this machine ---- */

/* The accelerators of this machine no executor of the run uses, and why, into
 * p->ctx.accel_unused (the host CPU's rows carry it); said on stderr. */
static void note_unused(struct tb_plan *p)
{
    const struct tb_platform *pl = &p->plat;
    const struct tb_plan_gpu *g = &p->gpu;
    char what[256], neuron[1024] = "", gpus[700] = "";

    if (pl->neuron_devices > 0) {
        struct tb_platform only = *pl;
        only.nvidia_gpus = 0;
        tb_platform_accelerators(&only, what, sizeof what);
        tb_neuron_unused_reason(what, p->neuron_sdk, neuron, sizeof neuron);
    }
    if (pl->nvidia_gpus > 0 || (g->on && g->gpu.info.device_count > 0)) {
        struct tb_platform only = *pl;
        int n = pl->nvidia_gpus > 0 ? pl->nvidia_gpus : g->gpu.info.device_count;
        only.neuron_devices = 0;
        only.nvidia_gpus = n;
        if (!only.gpu_model[0] && g->on)
            snprintf(only.gpu_model, sizeof only.gpu_model, "%.120s", g->gpu.info.name);
        if (!g->on) {
            tb_platform_accelerators(&only, what, sizeof what);
            snprintf(gpus, sizeof gpus, "%.250s: %.400s", what,
                     p->which == TB_RUN_CPU ? "not asked for (--executor cpu)" : g->gpu.why);
        } else if (n > g->share.used) {
            snprintf(gpus, sizeof gpus,
                     "%d of %d GPUs: the CUDA executor runs one replica on one GPU per process "
                     "(CUDA_VISIBLE_DEVICES chooses it); its rows are charged that share",
                     n - g->share.used, n);
        }
    }
    snprintf(p->ctx.accel_unused, sizeof p->ctx.accel_unused, "%.600s%s%.400s", neuron,
             neuron[0] && gpus[0] ? "; " : "", gpus);
    if (p->ctx.accel_unused[0])
        tb_logf("accelerators present, not used: %s. The host CPU's rows are the "
                "host's (%s), never %s's accelerator throughput: the report keeps them out of "
                "the comparison of targets\n",
                p->ctx.accel_unused, p->ctx.device, p->ctx.target);
}

/* A recipe's server on this Neuron machine: which plugin serves it (from the installed
 * vllm-neuron and the device), and its settings by that plugin's rules, checked before
 * anything starts (an input error). */
static int recipe_check(struct tb_plan *p, char *err, size_t errlen)
{
    enum tb_recipe_plugin plugin;
    bool any = false;
    char e[1024];
    for (size_t i = 0; i < p->suite.nruns; i++)
        any |= p->suite.runs[i].phase == TB_PHASE_SERVE && p->suite.runs[i].serve.recipe[0];
    if (!any)
        return 0;
    if (tb_recipe_plugin_choose(p->vllm_neuron, p->plat.neuron_name, &plugin, p->plugin_note,
                                sizeof p->plugin_note, err, errlen) != 0)
        return -1;
    p->recipe_plugin = (int)plugin;
    tb_logf("recipe vllm on Neuron: %s\n", p->plugin_note);
    for (size_t i = 0; i < p->suite.nruns; i++) {
        const struct tb_run_spec *r = &p->suite.runs[i];
        struct tb_recipe_opts ro;
        char where[PATH_MAX + 32];
        if (r->phase != TB_PHASE_SERVE || !r->serve.recipe[0])
            continue;
        tb_run_spec_recipe_opts(r, &ro);
        ro.neuron = true;
        ro.plugin = plugin;
        if (tb_recipe_settle(&ro, NULL, 0, e, sizeof e) != 0) {
            where_of(&p->suite, r, where, sizeof where);
            return tb_err(err, errlen, "%s: %s", where, e);
        }
    }
    return 0;
}

int tb_plan_open(struct tb_plan *p, char *err, size_t errlen)
{
    struct tb_plan_gpu *g = &p->gpu;
    char e[1024];

    if (tb_platform_detect(&p->plat, e, sizeof e) != 0)
        return tb_err(err, errlen, "%s", e), TB_EINPUT;
    snprintf(p->ctx.target, sizeof p->ctx.target, "%s", tb_platform_target(&p->plat));
    tb_platform_describe(&p->plat, p->ctx.host, sizeof p->ctx.host);
    if (p->plat.simulated) {
        size_t k = strlen(p->ctx.host);
        snprintf(p->ctx.host + k, sizeof p->ctx.host - k,
                 " (simulated platform, TRNBENCH_TEST_PLATFORM: tests only)");
    }
    snprintf(p->ctx.blas, sizeof p->ctx.blas, "%s", p->plat.blas);
    if (p->plat.neuron_devices > 0) {
        /* what Neuron rows record, and what the unused devices' reason names */
        struct tb_neuron_sdk sdk;
        tb_neuron_sdk_detect(&sdk, p->plat.root, getenv("VIRTUAL_ENV"), getenv("PATH"));
        tb_neuron_sdk_describe(&sdk, p->neuron_sdk, sizeof p->neuron_sdk);
        tb_logf("%s\n", p->neuron_sdk[0] ? p->neuron_sdk : "no Neuron SDK package found");
        snprintf(p->vllm_neuron, sizeof p->vllm_neuron, "%s",
                 sdk.version[TB_NEURON_SDK_VLLM_NEURON]);
        {
            /* neuron-ls states the LNC (trn2 and later); else it is guessed, and said */
            struct tb_neuron n;
            if (tb_neuron_detect(&n, &p->plat, 0, e, sizeof e) != 0)
                tb_logf("%s\n", e);
            tb_neuron_lnc_resolve(&n, &p->plat, &p->lnc);
            tb_logf("%s\n", p->lnc.how);
        }
        if (recipe_check(p, err, errlen) != 0)
            return TB_EINPUT;
    }
    if (tb_plan_serve_space(p, e, sizeof e) != TB_OK) /* before anything is written */
        return tb_err(err, errlen, "%s", e), TB_EINPUT;
    snprintf(p->ctx.device, sizeof p->ctx.device, "%s (host CPU)",
             p->plat.cpu_model[0] ? p->plat.cpu_model : "unknown CPU");
    p->ctx.engine = "host-cpu";
    /* what it will do, counted, once the executors are known (tb_plan_execute) */
    tb_logf("suite '%s' on %s (target %s) into '%s'\n", p->suite.name, p->ctx.host, p->ctx.target,
            p->results);
    tb_logf("counters %s\n", tb_counters_status());
    if (p->which == TB_RUN_PYTORCH)
        return TB_OK; /* the training script finds its own device */
    if (p->which == TB_RUN_CPU) {
        note_unused(p);
        return TB_OK;
    }
    if (tb_gpu_open(&g->gpu, 0, 0) != 0) {
        tb_logf("GPU executor not used: %s\n", g->gpu.why);
        if (p->which == TB_RUN_CUDA)
            return tb_err(err, errlen, "--executor cuda: no GPU to run on");
        note_unused(p);
        return TB_OK;
    }
    g->on = true;
    g->ctx = p->ctx;
    g->ctx.executor = "cuda";
    tb_gpu_describe(&g->gpu.info, g->ctx.host, sizeof g->ctx.host);
    snprintf(g->ctx.blas, sizeof g->ctx.blas, "cuBLASLt (CUDA runtime %d.%d)",
             g->gpu.info.runtime_version / 1000, g->gpu.info.runtime_version % 1000 / 10);
    tb_logf("GPU executor on %s; energy %s\n", g->ctx.host, g->gpu.info.nvml);
    if (!p->have_model && tb_plan_load_model(p, e, sizeof e) != 0)
        tb_logf("no modeled rows for the GPU: %s\n", e);
    if (p->have_model)
        g->chip = tb_gpu_chip(&p->pricing, &g->gpu.info, &g->inst, g->chip_why, sizeof g->chip_why);
    else
        snprintf(g->chip_why, sizeof g->chip_why, "performance model not loaded");
    /* rows record the GPUs used; twins go on one chip of this same instance */
    tb_gpu_share(&g->gpu, p->have_model ? &p->pricing : NULL, p->ctx.target, g->chip, &g->share);
    g->inst = g->share.twin ? g->share.twin : g->inst;
    g->ctx.chips_used = g->share.chips_used;
    snprintf(g->ctx.device, sizeof g->ctx.device, "%s x%d", g->gpu.info.name, g->share.used);
    g->ctx.engine = "trnbench-cuda";
    tb_logf("GPU executor: %s\n", g->share.text);
    note_unused(p);
    g->ctx.accel_unused[0] = '\0'; /* the GPU's rows say what they used: chips_used */
    return TB_OK;
}

/* ---- modeled runs ---- */

/* The model executor on sc; its rows appended. Returns 1 when recorded, 0 when the
 * model could not predict it (the reason printed), -1 on a write error. */
int tb_plan_run_model(const struct tb_plan *p, const struct tb_scenario *sc, const char *metric,
                      const char *run_id, char *err, size_t errlen)
{
    static const struct tb_run_spec once = {.reps = 1}; /* one prediction, no warm-up */
    const struct tb_executor ex = {&tb_executor_model, (void *)&p->model};
    const struct tb_workload w = {.spec = &once, .scenario = sc};
    const struct tb_prediction *q;
    struct tb_exec_result r;
    char e[512];
    int rc = 0;

    if (tb_measure(&ex, &w, &r, e, sizeof e) != 0) {
        tb_logf("  not predicted: %s\n", e);
        goto out;
    }
    q = r.predicted;
    if (!r.valid) {
        tb_logf("  not predicted: %s\n", q ? q->why : r.note);
        goto out;
    }
    if (isnan(tb_prediction_metric(q, metric))) {
        tb_logf("  not predicted: no %s from a %s prediction\n", metric,
                tb_phase_to_string(sc->phase));
        goto out;
    }
    {
        const struct tb_chip *chip = tb_pricing_chip(&p->pricing, sc->inst->chip);
        char device[160];
        snprintf(device, sizeof device, "%s x%ld (model)", chip ? chip->name : sc->inst->chip,
                 q->chips);
        if (tb_record_prediction(&p->ctx, sc, q, run_id, device, err, errlen) != 0) {
            rc = -1;
            goto out;
        }
    }
    if (sc->phase == TB_PHASE_DENOISE)
        tb_logf("  %.4g images/s, %.4g s per image, %s\n", q->images_per_s, q->s_per_image,
                q->assumptions);
    else if (sc->phase == TB_PHASE_TRAIN)
        tb_logf("  %.4g tokens/s (%.4g per chip), MFU %.2f, %s\n", q->train_tokens_per_s,
                q->train_tokens_per_s_per_chip, q->mfu, q->assumptions);
    else
        tb_logf("  %.4g output tokens/s at batch %ld, TTFT %.4g ms, TPOT %.4g ms\n",
                q->output_tokens_per_s, q->batch, q->ttft_ms, q->tpot_ms);
    rc = 1;
out:
    tb_exec_result_release(&r);
    return rc;
}

/* The model's rows for spec on one chip of the GPU's instance type. Returns 0, or -1 on
 * a write error. */
static int run_gpu_twin(const struct tb_plan *p, const struct tb_run_spec *spec,
                        const struct tb_resolved *mr, char *err, size_t errlen)
{
    const struct tb_plan_gpu *g = &p->gpu;
    struct tb_scenario sc;
    char batch[24], seq_in[24], seq_out[24], steps[24], res[24], id[320];
    bool denoise = spec->phase == TB_PHASE_DENOISE;
    int has;

    if (!p->have_model || !g->inst) {
        tb_logf("  not modeled on the GPU's chip: %s\n",
                p->have_model ? g->chip_why : "performance model not loaded");
        return 0;
    }
    if (spec->layers) {
        tb_logf("  not modeled on the GPU's chip: a shortened model "
                "(layers=%d) is not in the catalogue\n",
                spec->layers);
        return 0;
    }
    memset(&sc, 0, sizeof sc);
    sc.inst = g->inst;
    sc.phase = spec->phase;
    /* the precision the GPU ran (bf16, or fp8: the model then assumes an fp8 KV cache
     * too, which the engine keeps in bf16) */
    sc.precision = spec->precision;
    sc.chips = 1;
    sc.batch = spec->batch;
    if (denoise) {
        sc.darch = &mr->d;
        sc.steps = spec->steps ? spec->steps : mr->d.default_steps;
        sc.resolution = spec->resolution ? spec->resolution : mr->d.resolution;
    } else {
        sc.arch = &mr->a;
        sc.seq_in = spec->seq_in;
        sc.seq_out = spec->phase == TB_PHASE_DECODE ? spec->seq_out : 0;
    }
    snprintf(batch, sizeof batch, "%d", spec->batch);
    snprintf(seq_in, sizeof seq_in, "%d", spec->seq_in);
    snprintf(seq_out, sizeof seq_out, "%d", spec->seq_out);
    snprintf(steps, sizeof steps, "%ld", sc.steps);
    snprintf(res, sizeof res, "%ld", sc.resolution);
    tb_model_run_id(id, sizeof id - 8, g->inst->instance, spec->model,
                    tb_phase_to_string(spec->phase), batch, denoise ? NULL : seq_in,
                    spec->phase == TB_PHASE_DECODE ? seq_out : NULL, denoise ? steps : NULL,
                    denoise ? res : NULL, spec->precision, NULL);
    strcat(id, "/chips1"); /* one chip of the instance: the resume key */
    has = tb_plan_has_run(p, id, err, errlen);
    if (has != 0)
        return has < 0 ? -1 : 0;
    tb_logf("  modeled on one %s of %s: %s\n", g->chip->name, g->inst->instance, id);
    return tb_plan_run_model(p, &sc, main_metric(tb_phase_to_string(spec->phase)), id, err,
                             errlen) < 0
               ? -1
               : 0;
}

/* ---- measured runs ---- */

int tb_plan_has_run(const struct tb_plan *p, const char *id, char *err, size_t errlen)
{
    int has = tb_results_has_run(p->results, id, err, errlen);
    for (size_t i = 0; has == 0 && i < p->nresume; i++)
        has = tb_results_has_run(p->resume[i], id, err, errlen);
    return has;
}

void tb_plan_next(struct tb_plan *p, int n, char *tag, size_t len)
{
    struct tb_run_progress *g = &p->progress;
    if (n > 1)
        snprintf(tag, len, "%d-%d/%d", g->started + 1, g->started + n, g->measurements);
    else
        snprintf(tag, len, "%d/%d", g->started + 1, g->measurements);
    g->started += n > 0 ? n : 0;
}

struct tb_progress *tb_plan_progress(struct tb_plan *p, const char *tag, const char *id)
{
    struct tb_progress *pg = &p->progress.pg;
    if (!(p->progress.every_s > 0))
        return NULL;
    pg->who = tb_log_name();
    pg->every_s = p->progress.every_s;
    pg->suite_t0_ns = p->progress.t0_ns;
    snprintf(pg->label, sizeof pg->label, "[%.40s] %.340s", tag, id);
    return pg;
}

int tb_plan_already(const struct tb_plan *p, const char *id, const char *tag,
                    struct tb_run_counts *n)
{
    char err[1024];
    int has = tb_plan_has_run(p, id, err, sizeof err);
    if (has < 0)
        tb_logf("%s\n", err);
    else if (has) {
        tb_logf("[%s] %s: already in results, skipped\n", tag, id);
        n->skipped++;
    }
    return has;
}

/* Run i of the plan on ex, its rows appended when it validated. Returns 0 (done,
 * already there, or not for this executor), 1 when the run failed, -1 on a write
 * error. */
static int run_one(struct tb_plan *p, const struct tb_executor *ex, const struct tb_record_ctx *c,
                   size_t i, struct tb_run_counts *n)
{
    struct tb_run_spec spec = p->suite.runs[i];
    const struct tb_resolved *mr = &p->work[i];
    const bool gpu = c == &p->gpu.ctx;
    struct tb_workload w = {.spec = &spec};
    struct tb_exec_result r;
    struct tb_record_extra extra[TB_RECORD_MAX_EXTRA];
    char id[256], err[2048], summary[512], tag[48];
    size_t k;
    int has, nextra = 0;
    uint64_t t0;

    tb_plan_next(p, 1, tag, sizeof tag);
    if (ex->i->adapt)
        ex->i->adapt(ex->self, &spec);
    k = (size_t)snprintf(id, sizeof id, "%s", ex->i->id_prefix);
    tb_run_spec_id(&spec, id + k, sizeof id - k);
    if (mr->diffusion)
        w.darch = &mr->d;
    else
        w.arch = &mr->a;
    if (!ex->i->can_run(ex->self, &w, err, sizeof err)) {
        tb_logf("[%s] %s: not run on the %s: %s\n", tag, id, ex->i->what, err);
        n->unsupported++;
        return 0;
    }
    has = tb_plan_already(p, id, tag, n);
    if (has != 0)
        return has < 0 ? -1 : 0;
    tb_logf("[%s] %s (%d warm-up + %d timed) ...\n", tag, id, spec.warmup, spec.reps);
    w.progress = tb_plan_progress(p, tag, id);
    t0 = tb_timer_now_ns();
    if (tb_measure(ex, &w, &r, err, sizeof err) != 0) {
        tb_logf("%s: %s\n", id, err);
        tb_exec_result_release(&r);
        return 1;
    }
    if (!r.valid) {
        tb_logf("%s: %s; nothing recorded\n", id, r.note);
        tb_exec_result_release(&r);
        return 1;
    }
    if (ex->i->flags & TB_EXEC_ENERGY)
        nextra = tb_record_gpu_extras(p->gpu.chip, &spec, &r, &r.energy, extra);
    if (tb_record_run(c, &spec, mr->diffusion ? NULL : &mr->a, mr->diffusion ? &mr->d : NULL, &r,
                      id, extra, nextra,
                      (ex->i->flags & TB_EXEC_ENERGY) && !r.energy.ok ? r.energy.note : NULL,
                      summary, sizeof summary, err, sizeof err) != 0 ||
        (gpu && run_gpu_twin(p, &spec, mr, err, sizeof err) != 0)) {
        tb_logf("%s\n", err);
        tb_exec_result_release(&r);
        return -1;
    }
    tb_logf("  %s\n", summary);
    n->measured++;
    tb_logf("  %.1f s wall\n", tb_timer_seconds(t0, tb_timer_now_ns()));
    tb_exec_result_release(&r);
    return 0;
}

/* The measurements of run i under p's executors: one a serving level, one for a
 * PyTorch line or a line no executor here takes, else one per executor. */
static int measurements_of(const struct tb_plan *p, size_t i)
{
    const struct tb_run_spec *r = &p->suite.runs[i];
    if (r->phase == TB_PHASE_SERVE)
        return tb_plan_serve_levels(r);
    if (r->torch.on || p->which == TB_RUN_PYTORCH)
        return 1;
    return (p->which != TB_RUN_CUDA) + (p->gpu.on ? 1 : 0);
}

/* Count what p will do into n->planned and p->progress, and say it: the measurements
 * by executor, the predictions. */
static void plan_count(struct tb_plan *p, struct tb_run_counts *n)
{
    int cpu = 0, gpu = 0, levels = 0, torch = 0, predicts = 0;
    char what[256] = "";
    size_t k = 0;

    for (size_t i = 0; i < p->suite.nruns; i++) {
        const struct tb_run_spec *r = &p->suite.runs[i];
        int m;
        if (p->slurm && !tb_slurm_mine(p->slurm, i))
            continue;
        m = measurements_of(p, i);
        if (r->phase == TB_PHASE_SERVE)
            levels += m;
        else if (r->torch.on || p->which == TB_RUN_PYTORCH)
            torch += m;
        else {
            cpu += p->which != TB_RUN_CUDA;
            gpu += p->gpu.on;
        }
    }
    for (size_t i = 0; i < p->suite.npredicts; i++)
        predicts += !p->slurm || tb_slurm_mine(p->slurm, p->suite.nruns + i);
    p->progress.measurements = cpu + gpu + levels + torch;
    p->progress.started = 0;
    p->progress.t0_ns = tb_timer_now_ns();
    n->planned = p->progress.measurements + predicts;
    if (!p->progress.measurements)
        return; /* predictions only (trnbench compare): their lines say it */
#define PART(c, what_)                                                                             \
    if ((c) && k < sizeof what)                                                                    \
    k += (size_t)snprintf(what + k, sizeof what - k, "%s%d %s", k ? ", " : "", (c), (what_))
    PART(cpu, "on the CPU");
    PART(gpu, "on the GPU");
    PART(levels, levels == 1 ? "serving level" : "serving levels");
    PART(torch, "through PyTorch");
#undef PART
    tb_logf("plan: %d measurement%s (%s) and %d prediction%s, %d in all; progress "
            "every %g s during a run\n",
            p->progress.measurements, p->progress.measurements == 1 ? "" : "s", what, predicts,
            predicts == 1 ? "" : "s", n->planned, p->progress.every_s);
}

int tb_plan_execute(struct tb_plan *p, struct tb_run_counts *n, char *err, size_t errlen)
{
    const struct tb_executor cpu = {&tb_executor_cpu, NULL};
    const struct tb_executor cuda = {&tb_executor_cuda, &p->gpu.gpu};

    memset(n, 0, sizeof *n);
    plan_count(p, n);
    for (size_t i = 0; i < p->suite.nruns; i++) {
        int r = 0;
        if (p->slurm && !tb_slurm_mine(p->slurm, i))
            continue; /* another task's */
        if (p->suite.runs[i].phase == TB_PHASE_SERVE) {
            /* a server, measured by the endpoint executor whichever executors measure */
            if (tb_plan_serve(p, i, n) < 0) {
                err[0] = '\0'; /* said */
                return TB_EFAIL;
            }
            continue;
        }
        if (p->suite.runs[i].torch.on) {
            /* executor=pytorch: the training script's run alone */
            if (p->which == TB_RUN_CPU || p->which == TB_RUN_CUDA) {
                char tag[48];
                tb_plan_next(p, 1, tag, sizeof tag);
                tb_logf("[%s] line %ld: executor=pytorch, not run: --executor %s "
                        "was asked\n",
                        tag, p->suite.runs[i].line, p->which == TB_RUN_CPU ? "cpu" : "cuda");
                n->unsupported++;
                continue;
            }
            r = tb_plan_torch(p, i, n);
        } else if (p->which == TB_RUN_PYTORCH) {
            char id[256], tag[48];
            tb_plan_next(p, 1, tag, sizeof tag);
            tb_run_spec_id(&p->suite.runs[i], id, sizeof id);
            tb_logf("[%s] %s: not run: --executor pytorch trains (phase train) "
                    "only\n",
                    tag, id);
            n->unsupported++;
            continue;
        } else {
            /* each executor's run counts on its own: a failed CPU run stays failed
             * whatever the GPU's does */
            if (p->which != TB_RUN_CUDA)
                r = run_one(p, &cpu, &p->ctx, i, n);
            if (r >= 0 && p->gpu.on) {
                int g = run_one(p, &cuda, &p->gpu.ctx, i, n);
                r = g < 0 ? g : r + g;
            }
        }
        if (r < 0) {
            err[0] = '\0'; /* said */
            return TB_EFAIL;
        }
        n->failed += r;
    }
    for (size_t i = 0; i < p->suite.npredicts; i++) {
        const struct tb_predict_spec *ps = &p->suite.predicts[i];
        struct tb_scenario_in in;
        struct tb_scenario_result why;
        char id[256];
        int has, r;
        if (p->slurm && !tb_slurm_mine(p->slurm, p->suite.nruns + i))
            continue; /* another task's */
        tb_predict_spec_id(ps, id, sizeof id);
        has = tb_plan_has_run(p, id, err, errlen);
        if (has < 0)
            return TB_EFAIL;
        if (has) {
            n->skipped++;
            continue;
        }
        tb_logf("[modeled %zu/%zu] %s\n", i + 1, p->suite.npredicts, id);
        if (tb_scenario_parse(spec_get, ps, &p->model, &in, &why) != 0) {
            tb_logf("  not predicted: %s\n", why.why);
            n->unpredicted++;
            continue;
        }
        r = tb_plan_run_model(p, &in.sc, in.metric, id, err, errlen);
        if (r < 0)
            return TB_EFAIL;
        n->modeled += r;
        n->unpredicted += !r;
    }
    return TB_OK;
}

void tb_plan_release(struct tb_plan *p)
{
    free(p->resume);
    tb_gpu_close(&p->gpu.gpu);
    if (p->have_model && !p->borrowed_model) {
        tb_model_release(&p->model);
        tb_pricing_release(&p->pricing);
    }
    free(p->work);
    tb_suite_release(&p->suite);
    memset(p, 0, sizeof *p);
}
