/* harness/report/tb_assess.c: the migration assessment computed (tb_assess.h): the workload
 * file checked, each candidate sized, priced and compared; harness/report/assess_doc.c
 * writes the results. */
#include "tb_assess.h"

#include "tb_arch.h"
#include "tb_darch.h"
#include "tb_scenario.h"
#include "tb_util.h"
#include "tb_validate.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void tb_assess_opts_init(struct tb_assess_opts *o)
{
    o->min_monthly_usd = 10000;
    o->claim_low = 0.30;
    o->claim_high = 0.50;
    o->price_swing = 0.20;
    o->hours_per_month = 730;
    o->validation = NULL;
}

/* ---- the file ---- */

enum wphase { W_SERVE, W_TRAIN, W_DENOISE };

/* One workload, checked. */
struct workload {
    const char *name, *model, *precision, *current, *purchase, *region;
    enum wphase phase;
    double need; /* tokens/s (serve: output; train: training) or images/s */
    long seq_in, seq_out, steps, resolution;
    double ttft_ms, tpot_ms;
    double migration_usd;
    double current_usd_month; /* given, or NAN */
    struct tb_arch arch;
    struct tb_darch darch;
};

static int bad(const struct tb_csv_table *t, size_t r, const char *field, const char *what,
               char *err, size_t errlen)
{
    tb_err(err, errlen, "%s: line %ld: field '%s': %s", t->path, t->lines[r], field, what);
    return TB_EINPUT;
}

/* An optional positive number; "" gives def. */
static int num(const struct tb_csv_table *t, size_t r, const char *field, double def, double *out,
               char *err, size_t errlen)
{
    const char *v = tb_csv_field(t, r, field);
    char what[160];
    if (!*v) {
        *out = def;
        return TB_OK;
    }
    if (tb_parse_double(v, 0, 1e18, out) != 0) {
        snprintf(what, sizeof what, "not a non-negative number: '%.100s'", v);
        return bad(t, r, field, what, err, errlen);
    }
    return TB_OK;
}

static int read_workload(const struct tb_csv_table *t, size_t r, const struct tb_model *m,
                         const struct tb_assess_opts *o, struct workload *w, char *err,
                         size_t errlen)
{
    const char *phase = tb_csv_field(t, r, "phase");
    double v, rps, tpm, ipm, weeks, per_week;
    char e[512];

    memset(w, 0, sizeof *w);
    w->name = tb_csv_field(t, r, "name");
    w->model = tb_csv_field(t, r, "model");
    w->current = tb_csv_field(t, r, "current_instance");
    w->precision = *tb_csv_field(t, r, "precision") ? tb_csv_field(t, r, "precision") : "bf16";
    w->purchase = *tb_csv_field(t, r, "current_purchase") ? tb_csv_field(t, r, "current_purchase")
                                                          : "on-demand";
    w->region = *tb_csv_field(t, r, "region") ? tb_csv_field(t, r, "region") : "us-east-1";
    if (!*w->name)
        return bad(t, r, "name", "empty", err, errlen);
    if (!strcmp(phase, "serve"))
        w->phase = W_SERVE;
    else if (!strcmp(phase, "train"))
        w->phase = W_TRAIN;
    else if (!strcmp(phase, "denoise"))
        w->phase = W_DENOISE;
    else
        return bad(t, r, "phase", "not serve, train or denoise", err, errlen);
    if (w->phase == W_DENOISE ? tb_darch_find(&w->darch, w->model, e, sizeof e)
                              : tb_arch_find(&w->arch, w->model, e, sizeof e))
        return bad(t, r, "model", e, err, errlen);
    if (!tb_pricing_instance(m->pricing, w->current))
        return bad(t, r, "current_instance", "unknown instance type (not in instances.csv)", err,
                   errlen);
    if (!tb_pricing_known_purchase(w->purchase))
        return bad(t, r, "current_purchase", "unknown purchase model (" TB_PRICING_PURCHASES ")",
                   err, errlen);
    if (!tb_pricing_known_region(m->pricing, w->region))
        return bad(t, r, "region", "unknown region (no price row in prices.csv names it)", err,
                   errlen);
    if (num(t, r, "seq_in", 0, &v, err, errlen))
        return TB_EINPUT;
    w->seq_in = (long)v;
    if (num(t, r, "seq_out", 0, &v, err, errlen))
        return TB_EINPUT;
    w->seq_out = (long)v;
    if (num(t, r, "steps", 0, &v, err, errlen))
        return TB_EINPUT;
    w->steps = (long)v;
    if (num(t, r, "resolution", 0, &v, err, errlen))
        return TB_EINPUT;
    w->resolution = (long)v;
    if (num(t, r, "ttft_ms", 0, &w->ttft_ms, err, errlen) ||
        num(t, r, "tpot_ms", 0, &w->tpot_ms, err, errlen) ||
        num(t, r, "requests_per_s", 0, &rps, err, errlen) ||
        num(t, r, "tokens_per_month", 0, &tpm, err, errlen) ||
        num(t, r, "images_per_month", 0, &ipm, err, errlen) ||
        num(t, r, "engineer_weeks", 0, &weeks, err, errlen) ||
        num(t, r, "usd_per_engineer_week", 0, &per_week, err, errlen) ||
        num(t, r, "current_usd_per_month", NAN, &w->current_usd_month, err, errlen))
        return TB_EINPUT;
    w->migration_usd = weeks * per_week;
    switch (w->phase) {
    case W_SERVE:
        if (w->seq_in <= 0)
            return bad(t, r, "seq_in", "missing: prompt tokens per request", err, errlen);
        if (w->seq_out <= 0)
            return bad(t, r, "seq_out", "missing: output tokens per request", err, errlen);
        if (rps > 0)
            w->need = rps * (double)w->seq_out;
        else if (tpm > 0)
            w->need = tpm / (o->hours_per_month * 3600.0);
        else
            return bad(t, r, "requests_per_s",
                       "missing: the load (requests_per_s or "
                       "tokens_per_month)",
                       err, errlen);
        break;
    case W_TRAIN:
        if (w->seq_in <= 1)
            return bad(t, r, "seq_in", "missing: the training sequence length", err, errlen);
        if (!(tpm > 0))
            return bad(t, r, "tokens_per_month", "missing: training tokens per month", err, errlen);
        w->need = tpm / (o->hours_per_month * 3600.0);
        break;
    case W_DENOISE:
        if (!(ipm > 0))
            return bad(t, r, "images_per_month", "missing: images per month", err, errlen);
        w->need = ipm / (o->hours_per_month * 3600.0);
        break;
    }
    return TB_OK;
}

/* ---- the model's error per chip family, from the validation file ---- */

/* The validation errors of path (NULL: the data folder's published.csv) into *v. A
 * missing or unreadable file leaves v empty: every family then gets the default error.
 * Fails (TB_EFAIL) only for memory. */
static int family_errors(const struct tb_model *m, const char *path, struct tb_validation *v,
                         char *err, size_t errlen)
{
    struct tb_scenarios s;
    char e[512], def[PATH_MAX];
    int rc;

    memset(v, 0, sizeof *v);
    if (!path) {
        snprintf(def, sizeof def, "%s/reports/validation/published.csv", tb_datadir());
        path = def;
    }
    if (!tb_file_exists(path) || tb_scenarios_predict(&s, path, m, e, sizeof e) != 0)
        return TB_OK;
    rc = tb_validate_compute(v, &s, err, errlen);
    tb_scenarios_release(&s);
    return rc;
}

/* ---- sizing one workload on one instance type ---- */

/* The load one instance carries, or NAN with why. For training, the smallest cluster of
 * 1, 2, 4, ... 64 instances that holds the model, per instance. */
static double capacity(const struct tb_model *m, const struct workload *w,
                       const struct tb_instance *inst, char *layout, size_t llen, char *why,
                       size_t wlen)
{
    struct tb_scenario sc;
    struct tb_prediction p;
    char e[512];

    memset(&sc, 0, sizeof sc);
    sc.inst = inst;
    sc.precision = w->precision;
    sc.instances = 1;
    if (w->phase == W_SERVE) {
        sc.arch = &w->arch;
        sc.phase = TB_PHASE_SERVE;
        sc.seq_in = w->seq_in;
        sc.seq_out = w->seq_out;
        sc.batch_max = true;
        sc.ttft_limit_ms = w->ttft_ms;
        sc.tpot_limit_ms = w->tpot_ms;
    } else if (w->phase == W_DENOISE) {
        sc.darch = &w->darch;
        sc.phase = TB_PHASE_DENOISE;
        sc.batch_max = true;
        sc.steps = w->steps;
        sc.resolution = w->resolution;
    } else {
        sc.arch = &w->arch;
        sc.phase = TB_PHASE_TRAIN;
        sc.seq_in = w->seq_in;
    }
    for (long n = 1; n <= 64; n *= 2) {
        sc.instances = n;
        if (tb_model_predict(m, &sc, &p, e, sizeof e) != 0) {
            snprintf(why, wlen, "%.500s", e);
            return NAN;
        }
        if (p.fits) {
            if (n > 1)
                snprintf(layout, llen, "a cluster of %ld instances: %.460s", n, p.assumptions);
            else
                snprintf(layout, llen, "%s", p.assumptions);
            if (w->phase == W_SERVE)
                return p.output_tokens_per_s;
            if (w->phase == W_DENOISE)
                return p.images_per_s;
            return p.train_tokens_per_s / (double)n;
        }
        if (w->phase != W_TRAIN)
            break;
    }
    snprintf(why, wlen, "%s", p.why);
    return NAN;
}

static void monthly(const struct workload *w, double cap, double usd_h, double hours, long *fleet,
                    double *usd)
{
    *fleet = (long)ceil(w->need / cap - 1e-9);
    if (*fleet < 1)
        *fleet = 1;
    *usd = (double)*fleet * usd_h * hours;
}

bool tb_assess_risk_applies(const char *risk_family, const char *family)
{
    return !strcmp(risk_family, family) || !strcmp(risk_family, "all") ||
           (!strncmp(family, "neuron", 6) && !strcmp(risk_family, "neuron"));
}

/* Risks of a chip family from pricing/risks.csv ("topic: text; ..."). */
static void risks_of(const struct tb_csv_table *rk, const char *family, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t r = 0; rk && r < rk->nrows && used < len; r++) {
        if (!tb_assess_risk_applies(tb_csv_field(rk, r, "family"), family))
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%s: %s", used ? "; " : "",
                                 tb_csv_field(rk, r, "topic"), tb_csv_field(rk, r, "risk"));
    }
}

int tb_assess_run(struct tb_assessment *as, const char *path, const struct tb_model *m,
                  const struct tb_assess_opts *o, char *err, size_t errlen)
{
    static const char *const need[] = {"name", "model", "phase", "current_instance", NULL};
    struct workload *w = NULL;
    struct tb_validation v;
    size_t cap_rows, ninst;
    const struct tb_instance *insts;
    char rpath[PATH_MAX];
    int rc = TB_EFAIL;

    memset(as, 0, sizeof *as);
    memset(&v, 0, sizeof v);
    if (tb_csv_load(&as->csv, path, err, errlen) != 0)
        return TB_EINPUT;
    if (tb_csv_require(&as->csv, need, err, errlen) != 0) {
        rc = TB_EINPUT;
        goto out;
    }
    if (as->csv.nrows == 0) {
        tb_err(err, errlen, "%s: no workloads", path);
        rc = TB_EINPUT;
        goto out;
    }
    w = calloc(as->csv.nrows, sizeof *w);
    as->current_monthly = tb_alloc_array(as->csv.nrows, sizeof *as->current_monthly);
    as->current_why = calloc(as->csv.nrows, sizeof *as->current_why);
    ninst = tb_pricing_instances(m->pricing, &insts);
    cap_rows = as->csv.nrows * (ninst + 1);
    as->rows = calloc(cap_rows, sizeof *as->rows);
    if (!w || !as->current_monthly || !as->current_why || !as->rows) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    /* every row checked before anything is assessed */
    for (size_t r = 0; r < as->csv.nrows; r++) {
        int x = read_workload(&as->csv, r, m, o, &w[r], err, errlen);
        if (x) {
            rc = x;
            goto out;
        }
    }
    snprintf(rpath, sizeof rpath, "%s/pricing/risks.csv", tb_datadir());
    if (tb_file_exists(rpath)) {
        if (tb_csv_load(&as->risks, rpath, err, errlen) != 0)
            goto out;
        as->have_risks = true;
    }
    if (family_errors(m, o->validation, &v, err, errlen) != TB_OK)
        goto out;

    for (size_t wi = 0; wi < as->csv.nrows; wi++) {
        const struct workload *wk = &w[wi];
        size_t first = as->nrows;
        double cur = wk->current_usd_month;
        for (size_t i = 0; i < ninst; i++) {
            const struct tb_instance *in = &insts[i];
            const struct tb_chip *chip = tb_pricing_chip(m->pricing, in->chip);
            const struct tb_model_eff *e = tb_model_eff_of(m, in->chip);
            struct tb_assess_row *row;
            struct tb_price_choice pc;
            char e2[512];
            double cap;
            bool is_current = !strcmp(in->instance, wk->current);
            if (strcmp(in->kind, "instance") || !chip || !e)
                continue;
            row = &as->rows[as->nrows++];
            row->workload = wi;
            row->candidate = in->instance;
            row->current = is_current;
            row->unit = wk->phase == W_DENOISE ? "images/s" : "tokens/s";
            row->need = wk->need;
            row->monthly_usd = row->saving_usd = row->saving_frac = NAN;
            row->saving_lo_price = row->saving_hi_price = NAN;
            row->saving_lo_model = row->saving_hi_model = NAN;
            row->break_even_months = NAN;
            {
                const struct tb_validate_group *g = tb_validate_family(&v, chip->name);
                /* no validated rows for the family: assume 25% */
                row->model_err = g && !isnan(g->median) ? g->median / 100.0 : 0.25;
            }
            row->family = e->family;
            risks_of(as->have_risks ? &as->risks : NULL, e->family, row->risks, sizeof row->risks);
            if (wk->phase == W_TRAIN && strstr(chip->name, "Inferentia")) {
                snprintf(row->why, sizeof row->why, "an inference chip: not a training target");
                continue;
            }
            if (tb_pricing_target_price(m->pricing, in->instance, wk->region, wk->purchase, &pc, e2,
                                        sizeof e2) != 0 ||
                !pc.have) {
                snprintf(row->why, sizeof row->why, "no price: %.480s", pc.have ? e2 : pc.why);
                continue;
            }
            row->usd_per_hour = pc.usd_per_hour;
            snprintf(row->price, sizeof row->price, "$%.4g/h %s %s, %.90s, %.300s", pc.usd_per_hour,
                     pc.region, pc.purchase, pc.as_of, pc.source);
            cap = capacity(m, wk, in, row->layout, sizeof row->layout, row->why, sizeof row->why);
            if (isnan(cap) || !(cap > 0)) {
                if (!row->why[0])
                    snprintf(row->why, sizeof row->why, "no capacity predicted");
                continue;
            }
            row->capacity = cap;
            monthly(wk, cap, pc.usd_per_hour, o->hours_per_month, &row->fleet, &row->monthly_usd);
            row->ok = true;
            if (is_current && isnan(cur)) {
                cur = row->monthly_usd;
                snprintf(as->current_why[wi], sizeof as->current_why[wi],
                         "modeled: %ld x %s at %.160s", row->fleet, in->instance, row->price);
            }
            {
                long f2;
                double u2;
                monthly(wk, cap * (1 + row->model_err), pc.usd_per_hour, o->hours_per_month, &f2,
                        &u2);
                row->saving_hi_model = u2; /* converted to savings below */
                monthly(wk, cap * (1 - fmin(row->model_err, 0.9)), pc.usd_per_hour,
                        o->hours_per_month, &f2, &u2);
                row->saving_lo_model = u2;
            }
        }
        if (!isnan(wk->current_usd_month))
            snprintf(as->current_why[wi], sizeof as->current_why[wi], "given in the file");
        else if (isnan(cur))
            snprintf(as->current_why[wi], sizeof as->current_why[wi],
                     "unknown: %s could not be sized or priced (%s, %s)", wk->current, wk->region,
                     wk->purchase);
        as->current_monthly[wi] = cur;
        /* savings, break-even, sensitivity, verdict */
        for (size_t i = first; i < as->nrows; i++) {
            struct tb_assess_row *row = &as->rows[i];
            if (!row->ok || isnan(cur)) {
                row->saving_lo_model = row->saving_hi_model = NAN;
                continue;
            }
            row->saving_usd = cur - row->monthly_usd;
            row->saving_frac = row->saving_usd / cur;
            row->break_even_months =
                row->saving_usd > 0 ? wk->migration_usd / row->saving_usd : INFINITY;
            row->saving_lo_price = cur - row->monthly_usd * (1 + o->price_swing);
            row->saving_hi_price = cur - row->monthly_usd * (1 - o->price_swing);
            {
                double lo = cur - row->saving_lo_model, hi = cur - row->saving_hi_model;
                row->saving_lo_model = lo;
                row->saving_hi_model = hi;
            }
            if (row->current)
                snprintf(row->verdict, sizeof row->verdict, "the current fleet");
            else if (cur < o->min_monthly_usd)
                snprintf(row->verdict, sizeof row->verdict,
                         "spend of $%.0f/month is under the $%.0f threshold: migration rarely "
                         "pays",
                         cur, o->min_monthly_usd);
            else if (row->saving_frac <= 0)
                snprintf(row->verdict, sizeof row->verdict, "costs more than the current fleet");
            else if (row->saving_frac < o->claim_low)
                snprintf(row->verdict, sizeof row->verdict,
                         "saves %.0f%%, under the %.0f-%.0f%% usually claimed%s",
                         100 * row->saving_frac, 100 * o->claim_low, 100 * o->claim_high,
                         row->saving_lo_model < 0 ? "; within the model's error of no saving" : "");
            else if (row->saving_frac <= o->claim_high)
                snprintf(row->verdict, sizeof row->verdict,
                         "saves %.0f%%, within the %.0f-%.0f%% usually claimed: worth a pilot%s",
                         100 * row->saving_frac, 100 * o->claim_low, 100 * o->claim_high,
                         row->break_even_months > 12 ? " (break-even over a year)" : "");
            else
                snprintf(row->verdict, sizeof row->verdict,
                         "saves %.0f%%, above the usual claims: measure before believing it",
                         100 * row->saving_frac);
        }
    }
    rc = TB_OK;
out:
    tb_validate_release(&v);
    free(w);
    if (rc != TB_OK)
        tb_assess_release(as);
    return rc;
}

void tb_assess_release(struct tb_assessment *as)
{
    free(as->rows);
    free(as->current_monthly);
    free(as->current_why);
    if (as->have_risks)
        tb_csv_release(&as->risks);
    tb_csv_release(&as->csv);
    memset(as, 0, sizeof *as);
}
