/* harness/model/tb_scenario.c: see tb_scenario.h. */
#include "tb_scenario.h"

#include "tb_arch.h"
#include "tb_range.h"
#include "tb_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *tb_scenario_metric_unit(const char *metric)
{
    const struct tb_metric *d = tb_metric_find(metric);
    return d && tb_prediction_has_metric(metric) ? d->unit : NULL;
}

/* The fields of one scenario, looked up by column name. */
struct fields {
    const char *(*get)(const void *ctx, const char *name); /* NULL when the column is absent */
    const void *ctx;
};

static const char *F(const struct fields *f, const char *name)
{
    const char *v = f->get(f->ctx, name);
    return v ? v : "";
}

/* The numeric fields of a scenario row and of a suite's predict line (README "Input
 * ranges"): the sizes a deployment or a training cluster takes, with room to spare, so
 * that every product the model forms (tp x pp x dp, chips x instances, batch x seq_in)
 * stays far from a long's overflow. */
const struct tb_range TB_SCENARIO_RANGES[] = {
    {"instances", 1, 100000, true, "instances"},
    {"chips", 1, 1048576, true, "accelerator chips"},
    {"seq_in", 1, 16777216, true, "tokens"},
    {"seq_out", 1, 16777216, true, "tokens"},
    {"batch", 1, 16777216, true, "sequences or requests, or max"},
    {"tp", 1, 65536, true, "devices"},
    {"pp", 1, 65536, true, "devices"},
    {"dp", 1, 1048576, true, "replicas"},
    {"ep", 1, 65536, true, "devices the routed experts split over"},
    {"steps", 1, 10000, true, "denoising steps"},
    {"resolution", 1, 16384, true, "pixels"},
    {"concurrency", 1, 1048576, true, "requests in flight"},
    {"lora_rank", 1, 65536, true, "adapter rank"},
    {"spec_len", 1, 63, true, "drafted tokens per decode step"},
    {"ttft_limit_ms", 0, 1e9, false, "ms"},
    {"tpot_limit_ms", 0, 1e9, false, "ms"},
    {"train_tokens", 0, 1e18, false, "tokens"},
    {"request_rate", 0, 1e6, false, "requests/s"},
    {"spec_accept", 1, 64, false, "tokens a speculative decode step emits, mean"},
    {"prefix_hit", 0, 1, false, "share of prompt tokens found cached"},
    {"value", 1e-300, 1e300, false, "the measured value, in the metric's unit; above 0"},
    {NULL, 0, 0, false, NULL},
};

/* An optional integer field: "" is 0. */
static int int_field(const struct fields *f, const char *name, long *out, char *why, size_t whylen)
{
    const char *v = F(f, name);
    *out = 0;
    if (!*v)
        return 0;
    return tb_range_field_long(TB_SCENARIO_RANGES, name, v, out, why, whylen);
}

/* An optional number field: "" is 0. */
static int dbl_field(const struct fields *f, const char *name, double *out, char *why,
                     size_t whylen)
{
    const char *v = F(f, name);
    *out = 0;
    if (!*v)
        return 0;
    return tb_range_field(TB_SCENARIO_RANGES, name, v, out, why, whylen);
}

static int parse_fields(const char *(*get)(const void *ctx, const char *name), const void *ctx,
                        const struct tb_model *m, struct tb_scenario_in *in,
                        struct tb_scenario_result *res)
{
    const struct fields fl = {get, ctx}, *f = &fl;
    memset(res, 0, sizeof *res);
    static const char *const need[] = {"target", "model", "phase", "metric", NULL};
    const char *target, *model, *phase, *metric, *unit, *want, *batch, *value;
    const struct tb_chip *chip;
    char e[512];
    double v;

    memset(in, 0, sizeof *in);
    res->predicted = NAN;
    for (int i = 0; need[i]; i++)
        if (!get(ctx, need[i])) {
            snprintf(res->why, sizeof res->why, "column '%s' missing", need[i]);
            return -1;
        }
    target = F(f, "target");
    model = F(f, "model");
    phase = F(f, "phase");
    metric = F(f, "metric");
    in->metric = metric;
    unit = F(f, "unit");
    value = F(f, "value");
    if (*value) {
        /* a measured value that is not a number above 0 (NaN, inf, negative) is an error
         * of the row, not a row without a value */
        if (tb_range_field(TB_SCENARIO_RANGES, "value", value, &v, res->why, sizeof res->why)) {
            res->bad_value = true;
            return -1;
        }
        res->has_value = true;
        res->value = v;
    }
    in->sc.inst = tb_pricing_instance(m->pricing, target);
    if (!in->sc.inst) {
        snprintf(res->why, sizeof res->why, "unknown target '%s' (not in pricing/instances.csv)",
                 target);
        return -1;
    }
    chip = tb_pricing_chip(m->pricing, in->sc.inst->chip);
    if (chip)
        snprintf(res->family, sizeof res->family, "%s", chip->name);
    if (!strcmp(phase, "denoise"))
        in->sc.phase = TB_PHASE_DENOISE;
    else if (!strcmp(phase, "train"))
        in->sc.phase = TB_PHASE_TRAIN;
    else if (!strcmp(phase, "prefill"))
        in->sc.phase = TB_PHASE_PREFILL;
    else if (!strcmp(phase, "decode"))
        in->sc.phase = TB_PHASE_DECODE;
    else if (!strcmp(phase, "serve"))
        in->sc.phase = TB_PHASE_SERVE;
    else {
        snprintf(res->why, sizeof res->why,
                 "field 'phase': unknown phase '%s' (train, prefill, decode, serve, denoise)",
                 phase);
        return -1;
    }
    want = tb_scenario_metric_unit(metric);
    if (!want) {
        snprintf(res->why, sizeof res->why,
                 "field 'metric': '%s' is not a metric the model predicts", metric);
        return -1;
    }
    if (*unit && strcmp(unit, want)) {
        snprintf(res->why, sizeof res->why, "field 'unit': '%s' for %s, expected '%s'", unit,
                 metric, want);
        return -1;
    }
    /* the start-up metrics (weight_load_s, compile_s) belong to every phase */
    const struct tb_metric *vm = tb_metric_find(metric);
    const bool any = vm && vm->modeled == (1u << TB_NPHASES) - 1;
    if (!any && (in->sc.phase == TB_PHASE_DENOISE) !=
                    (strstr(metric, "image") != NULL || !strcmp(metric, "ms_per_step"))) {
        snprintf(res->why, sizeof res->why, "metric '%s' does not belong to phase '%s'", metric,
                 phase);
        return -1;
    }
    if (!any && in->sc.phase != TB_PHASE_DENOISE &&
        (in->sc.phase == TB_PHASE_TRAIN) !=
            (!strncmp(metric, "train_", 6) || !strcmp(metric, "mfu") ||
             !strcmp(metric, "step_time_s") || !strcmp(metric, "time_to_train_s") ||
             !strcmp(metric, "usd_to_train"))) {
        snprintf(res->why, sizeof res->why, "metric '%s' does not belong to phase '%s'", metric,
                 phase);
        return -1;
    }
    if (in->sc.phase == TB_PHASE_DENOISE ? tb_darch_find(&in->darch, model, e, sizeof e)
                                         : tb_arch_find(&in->arch, model, e, sizeof e)) {
        char e2[64];
        /* a diffusion model in another phase: trained (phase train), or said plainly what
         * is modeled, not its file's family */
        if (in->sc.phase != TB_PHASE_DENOISE &&
            tb_darch_find(&in->darch, model, e2, sizeof e2) == 0) {
            if (in->sc.phase != TB_PHASE_TRAIN) {
                snprintf(res->why, sizeof res->why,
                         "field 'model': '%.100s' is a diffusion model: the model predicts its "
                         "phases denoise and train (%s is not modeled for it)",
                         model, phase);
                return -1;
            }
            in->sc.darch = &in->darch;
        } else {
            snprintf(res->why, sizeof res->why, "field 'model': %.480s", e);
            return -1;
        }
    } else if (in->sc.phase == TB_PHASE_DENOISE) {
        in->sc.darch = &in->darch;
    } else {
        in->sc.arch = &in->arch;
        res->moe = in->arch.experts > 0;
    }
    in->sc.precision = F(f, "precision");
    if (*in->sc.precision && !tb_model_precision_known(in->sc.precision)) {
        snprintf(res->why, sizeof res->why, "field 'precision': '%.100s' (%s)", in->sc.precision,
                 TB_MODEL_PRECISIONS);
        return -1;
    }
    batch = F(f, "batch");
    if (!strcmp(batch, "max")) {
        in->sc.batch_max = true;
    } else if (int_field(f, "batch", &in->sc.batch, res->why, sizeof res->why) != 0) {
        return -1;
    }
    if (int_field(f, "instances", &in->sc.instances, res->why, sizeof res->why) ||
        int_field(f, "chips", &in->sc.chips, res->why, sizeof res->why) ||
        int_field(f, "seq_in", &in->sc.seq_in, res->why, sizeof res->why) ||
        int_field(f, "seq_out", &in->sc.seq_out, res->why, sizeof res->why) ||
        int_field(f, "steps", &in->sc.steps, res->why, sizeof res->why) ||
        int_field(f, "resolution", &in->sc.resolution, res->why, sizeof res->why) ||
        int_field(f, "tp", &in->sc.tp, res->why, sizeof res->why) ||
        int_field(f, "pp", &in->sc.pp, res->why, sizeof res->why) ||
        int_field(f, "dp", &in->sc.dp, res->why, sizeof res->why) ||
        int_field(f, "ep", &in->sc.ep, res->why, sizeof res->why) ||
        dbl_field(f, "ttft_limit_ms", &in->sc.ttft_limit_ms, res->why, sizeof res->why) ||
        dbl_field(f, "tpot_limit_ms", &in->sc.tpot_limit_ms, res->why, sizeof res->why) ||
        dbl_field(f, "train_tokens", &in->sc.train_tokens, res->why, sizeof res->why) ||
        int_field(f, "concurrency", &in->sc.concurrency, res->why, sizeof res->why) ||
        dbl_field(f, "request_rate", &in->sc.request_rate, res->why, sizeof res->why) ||
        int_field(f, "lora_rank", &in->sc.lora_rank, res->why, sizeof res->why) ||
        dbl_field(f, "spec_accept", &in->sc.spec_accept, res->why, sizeof res->why) ||
        int_field(f, "spec_len", &in->sc.spec_len, res->why, sizeof res->why) ||
        dbl_field(f, "prefix_hit", &in->sc.prefix_hit, res->why, sizeof res->why))
        return -1;
    {
        /* serving's terms (README "The performance model"): speculative decoding and
         * prefix caching belong to an LLM's inference */
        const char *draft = F(f, "draft_model");
        bool serving = in->sc.phase != TB_PHASE_TRAIN && in->sc.phase != TB_PHASE_DENOISE;
        const char *term = in->sc.spec_accept > 0  ? "spec_accept"
                           : in->sc.spec_len > 0   ? "spec_len"
                           : *draft                ? "draft_model"
                           : in->sc.prefix_hit > 0 ? "prefix_hit"
                                                   : NULL;
        if (term && !serving) {
            snprintf(res->why, sizeof res->why,
                     "field '%s': speculative decoding and prefix caching are serving's "
                     "(prefill, decode, serve), not '%s'",
                     term, phase);
            return -1;
        }
        if ((in->sc.spec_len > 0 || *draft) && in->sc.spec_accept <= 0) {
            res->incomplete = true;
            snprintf(res->why, sizeof res->why,
                     "spec_accept missing: a speculative row (%s given) needs its acceptance "
                     "length, tokens per target step",
                     *draft ? "draft_model" : "spec_len");
            return -1;
        }
        if (in->sc.spec_len > 0 && in->sc.spec_accept > (double)in->sc.spec_len + 1) {
            snprintf(res->why, sizeof res->why,
                     "field 'spec_accept': %g is above spec_len + 1 = %ld (a step emits at most "
                     "the drafted tokens and its own)",
                     in->sc.spec_accept, in->sc.spec_len + 1);
            return -1;
        }
        if (*draft) {
            if (tb_arch_find(&in->draft, draft, e, sizeof e) != 0) {
                snprintf(res->why, sizeof res->why, "field 'draft_model': %.480s", e);
                return -1;
            }
            in->sc.draft = &in->draft;
        }
    }
    if (in->sc.lora_rank > 0) {
        /* adapters train, so a training phase; low rank: no wider than the projections
         * they sit beside (the attention's C in and NH HD out) */
        long most = in->arch.hidden < in->arch.heads * in->arch.head_dim
                        ? in->arch.hidden
                        : in->arch.heads * in->arch.head_dim;
        if (in->sc.phase != TB_PHASE_TRAIN) {
            snprintf(res->why, sizeof res->why,
                     "field 'lora_rank': LoRA fine-tuning is training (phase train), not '%s'",
                     phase);
            return -1;
        }
        if (in->sc.lora_rank > most) {
            snprintf(res->why, sizeof res->why,
                     "field 'lora_rank': %ld is above %s's attention width %ld (a low rank, "
                     "MLPerf's is 16)",
                     in->sc.lora_rank, in->arch.name, most);
            return -1;
        }
    }
    if (in->sc.ep > 1 && (in->sc.darch || in->arch.experts <= 0)) {
        snprintf(res->why, sizeof res->why,
                 "field 'ep': %ld, but '%.100s' is not a mixture of experts (expert parallelism "
                 "splits routed experts)",
                 in->sc.ep, model);
        return -1;
    }
    if (in->sc.ep > in->arch.experts && in->arch.experts > 0) {
        snprintf(res->why, sizeof res->why, "field 'ep': %ld is above %s's %d experts", in->sc.ep,
                 in->arch.name, in->arch.experts);
        return -1;
    }
    in->sc.software = F(f, "software");
    in->sc.scenario = F(f, "scenario");
    if (*in->sc.scenario && strcmp(in->sc.scenario, "offline") &&
        strcmp(in->sc.scenario, "server") && strcmp(in->sc.scenario, "interactive") &&
        strcmp(in->sc.scenario, "training")) {
        snprintf(res->why, sizeof res->why,
                 "field 'scenario': '%.100s' (offline, server or interactive: MLPerf "
                 "Inference's; training: MLPerf Training's time to train)",
                 in->sc.scenario);
        return -1;
    }
    in->sc.dataset = F(f, "dataset");
    /* an MLPerf scenario with neither lengths nor a dataset: MLPerf's own set for the
     * model (the assumptions name it, "over openorca") */
    if (*in->sc.scenario && strcmp(in->sc.scenario, "training") != 0 && !*in->sc.dataset &&
        in->sc.seq_in <= 0 && in->sc.seq_out <= 0) {
        const char *ds = tb_model_mlperf_dataset(m, in->arch.name);
        if (ds)
            in->sc.dataset = ds;
    }
    if ((in->sc.phase == TB_PHASE_DENOISE || in->sc.darch) && !*in->sc.dataset)
        return 0;          /* steps and resolution default to the model's; a sample's tokens are
                              the image's and the text's */
    if (*in->sc.dataset) { /* the dataset gives the lengths, when it has them */
        int st = tb_model_dataset_status(m, in->sc.dataset, e, sizeof e);
        if (st != 0) {
            res->incomplete = st > 0; /* a set without its lengths: a shape lacking */
            snprintf(res->why, sizeof res->why, "field 'dataset': %.490s", e);
            return -1;
        }
        return 0;
    }
    if (in->sc.seq_in <= 0) {
        res->incomplete = true;
        snprintf(res->why, sizeof res->why, "seq_in missing: the %s length is needed",
                 in->sc.phase == TB_PHASE_TRAIN ? "sequence" : "prompt");
        return -1;
    }
    if (in->sc.phase != TB_PHASE_TRAIN && in->sc.phase != TB_PHASE_PREFILL && in->sc.seq_out <= 0 &&
        strcmp(metric, "tpot_ms") && strcmp(metric, "ttft_ms")) {
        res->incomplete = true;
        snprintf(res->why, sizeof res->why, "seq_out missing: the output length is needed");
        return -1;
    }
    return 0;
}

/* The fields, then the software stack: a stack the chip's family has no figure for is
 * an error of a row whose shape is otherwise complete (an incomplete row stays counted
 * as such). */
int tb_scenario_parse(const char *(*get)(const void *ctx, const char *name), const void *ctx,
                      const struct tb_model *m, struct tb_scenario_in *in,
                      struct tb_scenario_result *res)
{
    const struct tb_model_eff *eff;
    const struct tb_model_stack *st;
    char e[512];
    bool by_name;
    if (parse_fields(get, ctx, m, in, res) != 0)
        return -1;
    if (!in->sc.software || !*in->sc.software)
        return 0;
    eff = tb_model_eff_of(m, in->sc.inst->chip);
    if (eff && tb_model_stack_find(m, in->sc.software, eff->family, eff->chip, in->sc.phase, &st,
                                   &by_name, e, sizeof e) != 0) {
        snprintf(res->why, sizeof res->why, "field 'software': %.480s", e);
        return -1;
    }
    return 0;
}

void tb_scenario_predict_one(const char *(*get)(const void *ctx, const char *name), const void *ctx,
                             const struct tb_model *m, struct tb_scenario_result *res)
{
    struct tb_scenario_in in;
    const char *metric, *phase;
    char e[512];
    if (tb_scenario_parse(get, ctx, m, &in, res) != 0)
        return;
    metric = in.metric;
    phase = tb_phase_to_string(in.sc.phase);
    if (tb_model_predict(m, &in.sc, &res->p, e, sizeof e) != 0) {
        snprintf(res->why, sizeof res->why, "%s", e);
        return;
    }
    if (!res->p.fits) {
        snprintf(res->why, sizeof res->why, "%s", res->p.why);
        return;
    }
    res->predicted = tb_prediction_metric(&res->p, metric);
    if (isnan(res->predicted) && !strcmp(metric, "usd_to_train") && res->p.price_why[0])
        snprintf(res->why, sizeof res->why, "%s", res->p.price_why);
    else if (isnan(res->predicted) && !strcmp(metric, "weight_load_s") && res->p.weight_load_why[0])
        snprintf(res->why, sizeof res->why, "%s", res->p.weight_load_why);
    else if (isnan(res->predicted) && !strcmp(metric, "compile_s") && res->p.compile_why[0])
        snprintf(res->why, sizeof res->why, "%s", res->p.compile_why);
    else if (isnan(res->predicted) &&
             (!strcmp(metric, "usd_to_train") || !strcmp(metric, "time_to_train_s")))
        snprintf(res->why, sizeof res->why, "train_tokens missing: the tokens to train on");
    else if (isnan(res->predicted))
        snprintf(res->why, sizeof res->why, "no %s from a %s prediction", metric, phase);
}

struct csv_row {
    const struct tb_csv_table *t;
    size_t r;
};

static const char *csv_get(const void *ctx, const char *name)
{
    const struct csv_row *x = ctx;
    int c = tb_csv_col(x->t, name);
    return c < 0 ? NULL : tb_csv_get(x->t, x->r, c);
}

int tb_scenario_parse_row(const struct tb_scenarios *s, size_t r, const struct tb_model *m,
                          struct tb_scenario_in *in, struct tb_scenario_result *res)
{
    struct csv_row x = {&s->csv, r};
    return tb_scenario_parse(csv_get, &x, m, in, res);
}

int tb_scenarios_predict(struct tb_scenarios *s, const char *path, const struct tb_model *m,
                         char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (tb_csv_load(&s->csv, path, err, errlen) != 0)
        return -1;
    s->nrows = s->csv.nrows;
    s->res = calloc(s->nrows ? s->nrows : 1, sizeof *s->res);
    if (!s->res) {
        tb_csv_release(&s->csv);
        return tb_err(err, errlen, "out of memory");
    }
    for (size_t r = 0; r < s->nrows; r++) {
        struct csv_row x = {&s->csv, r};
        tb_scenario_predict_one(csv_get, &x, m, &s->res[r]);
    }
    return 0;
}

void tb_scenarios_release(struct tb_scenarios *s)
{
    free(s->res);
    tb_csv_release(&s->csv);
    memset(s, 0, sizeof *s);
}

static bool added_col(const char *name)
{
    return !strcmp(name, "predicted") || !strcmp(name, "model_version") || !strcmp(name, "why") ||
           !strcmp(name, "bound") || !strcmp(name, "assumptions");
}

/* The input's cells go out through tb_csv_put_text: a text cell that a spreadsheet
 * would run as a formula is neutralised, numbers stay as they are. */
int tb_scenarios_write(const struct tb_scenarios *s, FILE *f)
{
    const struct tb_csv_table *t = &s->csv;
    int rc = 0;

    for (size_t c = 0; c < t->ncols; c++)
        if (!added_col(t->header[c]))
            rc |= tb_csv_put_text(f, t->header[c], ',');
    rc |= tb_csv_put(f, "predicted", ',');
    rc |= tb_csv_put(f, "model_version", ',');
    rc |= tb_csv_put(f, "why", ',');
    rc |= tb_csv_put(f, "bound", ',');
    rc |= tb_csv_put(f, "assumptions", '\n');
    for (size_t r = 0; r < s->nrows; r++) {
        const struct tb_scenario_result *x = &s->res[r];
        char num[64] = "";
        for (size_t c = 0; c < t->ncols; c++)
            if (!added_col(t->header[c]))
                rc |= tb_csv_put_text(f, tb_csv_get(t, r, (int)c), ',');
        if (!isnan(x->predicted))
            snprintf(num, sizeof num, "%.6g", x->predicted);
        rc |= tb_csv_put(f, num, ',');
        rc |= tb_csv_put(f, TB_MODEL_VERSION, ',');
        rc |= tb_csv_put_text(f, x->why, ',');
        rc |= tb_csv_put_text(f, isnan(x->predicted) ? "" : x->p.bound, ',');
        rc |= tb_csv_put_text(f, isnan(x->predicted) ? "" : x->p.assumptions, '\n');
    }
    return rc ? -1 : 0;
}
