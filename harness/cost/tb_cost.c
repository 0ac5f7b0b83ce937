/* harness/cost/tb_cost.c: see tb_cost.h. The arithmetic first, then the stage: prices per
 * target, a cost per throughput row, the ranking per workload, and cost.csv. */
#include "tb_cost.h"

#include "tb_arch.h"

#include "tb_csv.h"
#include "tb_util.h"
#include "tb_vocab.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
 * days_from_civil algorithm). */
static long days_from_civil(long y, long m, long d)
{
    long era, yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits(const char *s, int n, long *out)
{
    long v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int tb_cost_days(const char *s, long *days)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    long y, m = 1, d = 1;
    if (!s || digits(s, 4, &y) != 0 || y < 1970)
        return -1;
    s += 4;
    if (*s == '-') {
        if (digits(s + 1, 2, &m) != 0 || m < 1 || m > 12)
            return -1;
        s += 3;
        if (*s == '-') {
            if (digits(s + 1, 2, &d) != 0 || d < 1 || d > mdays[m - 1])
                return -1;
            s += 3;
        }
    }
    if (isdigit((unsigned char)*s))
        return -1;
    *days = days_from_civil(y, m, d);
    return 0;
}

long tb_cost_age_days(const char *as_of, const char *now)
{
    long a, b;
    if (tb_cost_days(as_of, &a) != 0 || tb_cost_days(now, &b) != 0)
        return -1;
    return b - a;
}

bool tb_cost_positive(double v)
{
    return v > 0 && isfinite(v);
}

double tb_cost_usd_per(double usd_per_hour, double per_s, double per)
{
    if (!tb_cost_positive(usd_per_hour) || !tb_cost_positive(per_s) || !tb_cost_positive(per))
        return NAN;
    return usd_per_hour / (per_s * 3600.0) * per;
}

double tb_cost_instance_share(long instances, long chips_used, long chips_per_instance)
{
    if (chips_used > 0 && chips_per_instance > 0)
        return (double)chips_used / (double)chips_per_instance;
    return (double)instances;
}

double tb_cost_train_days(double tokens, double tokens_per_s)
{
    if (!tb_cost_positive(tokens) || !tb_cost_positive(tokens_per_s))
        return NAN;
    return tokens / tokens_per_s / 86400.0;
}

double tb_cost_train_usd(double tokens, double tokens_per_s, double usd_per_hour)
{
    if (!tb_cost_positive(usd_per_hour))
        return NAN;
    return tb_cost_train_days(tokens, tokens_per_s) * 24.0 * usd_per_hour;
}

bool tb_cost_meets(double ttft_ms, double tpot_ms, double ttft_limit_ms, double tpot_limit_ms)
{
    if (tb_cost_positive(ttft_limit_ms) && !(ttft_ms <= ttft_limit_ms))
        return false;
    if (tb_cost_positive(tpot_limit_ms) && !(tpot_ms <= tpot_limit_ms))
        return false;
    return true;
}

double tb_cost_price_perf(double baseline_usd, double usd)
{
    if (!tb_cost_positive(baseline_usd) || !tb_cost_positive(usd))
        return NAN;
    return baseline_usd / usd;
}

double tb_cost_flip_rate(double rate, double usd, double other_usd)
{
    if (!tb_cost_positive(rate) || !tb_cost_positive(usd) || !tb_cost_positive(other_usd))
        return NAN;
    return rate * other_usd / usd;
}

void tb_cost_perf_range(double base, double base_lo, double base_hi, double usd, double lo,
                        double hi, double *plo, double *phi)
{
    double down, up;
    *plo = *phi = NAN;
    if (!tb_cost_positive(base) || !tb_cost_positive(base_lo) || !tb_cost_positive(base_hi) ||
        !tb_cost_positive(usd) || !tb_cost_positive(lo) || !tb_cost_positive(hi) || base_lo > 1 ||
        base_hi < 1 || lo > 1 || hi < 1)
        return;
    /* independent errors: their logarithms add in quadrature */
    down = hypot(log(base_lo), log(hi));
    up = hypot(log(base_hi), log(lo));
    *plo = base / usd * exp(-down);
    *phi = base / usd * exp(up);
}

void tb_cost_purchase_order(const char *purchase, const char *out[TB_COST_NPURCHASE])
{
    /* each row: a purchase model, then the others nearest first */
    static const char *const order[TB_COST_NPURCHASE][TB_COST_NPURCHASE] = {
        {"on-demand", "capacity-block", "savings-plan-1y", "reserved-1y", "savings-plan-3y",
         "reserved-3y", "spot"},
        {"capacity-block", "on-demand", "savings-plan-1y", "reserved-1y", "savings-plan-3y",
         "reserved-3y", "spot"},
        {"savings-plan-1y", "reserved-1y", "savings-plan-3y", "reserved-3y", "on-demand",
         "capacity-block", "spot"},
        {"reserved-1y", "savings-plan-1y", "reserved-3y", "savings-plan-3y", "on-demand",
         "capacity-block", "spot"},
        {"savings-plan-3y", "reserved-3y", "savings-plan-1y", "reserved-1y", "on-demand",
         "capacity-block", "spot"},
        {"reserved-3y", "savings-plan-3y", "reserved-1y", "savings-plan-1y", "on-demand",
         "capacity-block", "spot"},
        {"spot", "on-demand", "capacity-block", "savings-plan-1y", "reserved-1y", "savings-plan-3y",
         "reserved-3y"},
    };
    size_t r = 0;
    for (size_t i = 0; i < TB_COST_NPURCHASE; i++)
        if (purchase && !strcmp(order[i][0], purchase))
            r = i;
    for (size_t i = 0; i < TB_COST_NPURCHASE; i++)
        out[i] = order[r][i];
}

int tb_cost_region_distance(const char *a, const char *b)
{
    size_t geo = strcspn(a, "-"), area;
    if (!strcmp(a, b))
        return 0;
    if (strncmp(a, b, geo) != 0 || b[geo] != a[geo])
        return 3;
    area = geo + (a[geo] ? 1 + strcspn(a + geo + 1, "-") : 0);
    return !strncmp(a, b, area) && (b[area] == '-' || !b[area]) ? 1 : 2;
}

/* ---- the cost stage ---- */

/* Flag a price c that needs a second look, in flag: older than the threshold, or
 * undated; its age in *age (-1: undated, no price or the user's own rate). */
static void age_flag(const struct tb_costs *cs, const struct tb_price_choice *c, long *age,
                     char *flag, size_t flen)
{
    *age = -1;
    flag[0] = '\0';
    if (!c->have || !c->line)
        return; /* no price, or the user's own rate */
    *age = tb_cost_age_days(c->as_of, cs->o.now);
    if (*age < 0)
        snprintf(flag, flen, "undated (the source says '%s')", c->as_of);
    else if ((double)*age > cs->o.max_price_age_days)
        snprintf(flag, flen, "stale: %ld days old (threshold %g)", *age, cs->o.max_price_age_days);
}

/* Flag the price t is charged at (t->c). */
static void price_age(struct tb_costs *cs, struct tb_cost_price *t)
{
    age_flag(cs, &t->c, &t->age, t->flag, sizeof t->flag);
}

/* What an instance's chips are called in the report: "GPUs" (NVIDIA) or "chips". */
static const char *chip_word(const struct tb_costs *cs, const struct tb_instance *in)
{
    const struct tb_chip *chip = in ? tb_pricing_chip(cs->pricing, in->chip) : NULL;
    return chip && !strcmp(chip->vendor, "NVIDIA") ? "GPUs" : "chips";
}

/* Whether region names a region (or a Local Zone) rather than "any" or "unspecified". */
static bool real_region(const char *region)
{
    return strchr(region, '-') && strcmp(region, "unspecified") != 0;
}

/* The regions of the price table's listed rows, nearest to `region` first (ties in the
 * order the table first names them), region itself first whether listed or not. Returns
 * the count (out has room for nprices + 1). */
static size_t regions_by_distance(const struct tb_pricing *p, const char *region, const char **out)
{
    size_t n = 0;
    out[n++] = region;
    for (int d = 1; d <= 3; d++)
        for (size_t i = 0; i < p->nprices; i++) {
            const char *r = p->prices[i].region;
            bool seen = false;
            if (!real_region(r) || tb_cost_region_distance(region, r) != d)
                continue;
            for (size_t k = 0; k < n && !seen; k++)
                seen = !strcmp(out[k], r);
            if (!seen)
                out[n++] = r;
        }
    return n;
}

int tb_cost_pair_basis(const struct tb_pricing *p, const char *a, const char *b,
                       const char *purchase, const char *region, struct tb_price_choice *pa,
                       struct tb_price_choice *pb, char *basis, size_t blen, char *err,
                       size_t errlen)
{
    const char *order[TB_COST_NPURCHASE], **regions;
    size_t nreg;
    bool any = false;
    purchase = purchase ? purchase : "on-demand";
    region = region ? region : "us-east-1";
    pa->have = pb->have = false;
    regions = tb_alloc_array(p->nprices + 1, sizeof *regions);
    if (!regions)
        return tb_err(err, errlen, "out of memory");
    nreg = regions_by_distance(p, region, regions);
    tb_cost_purchase_order(purchase, order);
    for (size_t i = 0; i < TB_COST_NPURCHASE; i++)
        for (size_t k = 0; k < nreg; k++) {
            if (tb_pricing_target_price(p, a, regions[k], order[i], pa, err, errlen) != 0 ||
                tb_pricing_target_price(p, b, regions[k], order[i], pb, err, errlen) != 0) {
                free(regions);
                return -1;
            }
            any |= pa->have;
            if (pa->have && pb->have) {
                snprintf(basis, blen, "%s in %s", order[i], regions[k]);
                free(regions);
                return 0;
            }
        }
    free(regions);
    pa->have = pb->have = false;
    snprintf(basis, blen, "%s",
             any ? (strcmp(a, b) ? "no purchase model and region where the baseline has a "
                                   "price too"
                                 : "no price")
                 : "no listed price under any purchase model in any region");
    return 0;
}

/* Where t is compared with the baseline (struct tb_cost_price, cmp): the chosen purchase
 * model and region when both have a price there, else the nearest where both do
 * (tb_cost_pair_basis). A price the user gave (--usd-per-hour) is compared at the chosen
 * basis only. */
static int compare_basis(struct tb_costs *cs, struct tb_cost_price *t, char *err, size_t errlen)
{
    const char *want = cs->o.purchase ? cs->o.purchase : "on-demand";
    const char *region = cs->o.region ? cs->o.region : "us-east-1";

    t->cmp_have = t->cmp_chosen = false;
    t->cmp_age = -1;
    t->cmp_flag[0] = '\0';
    if (t->c.have && cs->btp.c.have) {
        t->cmp = t->c;
        t->bcmp = cs->btp.c;
        t->cmp_have = t->cmp_chosen = true;
        t->cmp_age = t->age;
        snprintf(t->cmp_flag, sizeof t->cmp_flag, "%s", t->flag);
        snprintf(t->cmp_basis, sizeof t->cmp_basis, "%s in %s", want, region);
        return 0;
    }
    if (!tb_pricing_instance(cs->pricing, t->target) || (t->c.have && !t->c.line)) {
        snprintf(t->cmp_basis, sizeof t->cmp_basis, "%s",
                 t->c.have ? "the baseline has no price where this one is given"
                           : "no price to compare");
        return 0;
    }
    if (tb_cost_pair_basis(cs->pricing, t->target, cs->o.baseline, want, region, &t->cmp, &t->bcmp,
                           t->cmp_basis, sizeof t->cmp_basis, err, errlen) != 0)
        return -1;
    t->cmp_have = t->cmp.have && t->bcmp.have;
    /* a stand-in from another region or purchase model is as old as its row: say so as
     * the chosen price's flag would */
    if (t->cmp_have)
        age_flag(cs, &t->cmp, &t->cmp_age, t->cmp_flag, sizeof t->cmp_flag);
    return 0;
}

/* The price of target, looked up on its first use (cs->tp has room for one a row): the
 * host's, a catalogued instance type's, or none with the reason. NULL on an error. */
static struct tb_cost_price *target_price(struct tb_costs *cs, const char *target, char *err,
                                          size_t errlen)
{
    struct tb_cost_price *t;
    const struct tb_instance *in;
    for (size_t i = 0; i < cs->ntp; i++)
        if (!strcmp(cs->tp[i].target, target))
            return &cs->tp[i];
    t = &cs->tp[cs->ntp++];
    memset(t, 0, sizeof *t);
    t->target = target;
    in = tb_pricing_instance(cs->pricing, target);
    if (!strcmp(target, "host")) {
        t->c = cs->host;
        in = cs->o.instance ? tb_pricing_instance(cs->pricing, cs->o.instance) : NULL;
    } else if (in && cs->o.instance && !strcmp(target, cs->o.instance) &&
               !isnan(cs->o.usd_per_hour)) {
        /* --instance TYPE --usd-per-hour X: the rate paid for TYPE wins over its table
         * price, for every row of TYPE (measured on it or modeled for it) */
        t->c = cs->host;
    } else if (in) {
        if (tb_pricing_target_price(cs->pricing, target, cs->o.region, cs->o.purchase, &t->c, err,
                                    errlen) != 0)
            return NULL;
    } else {
        memset(&t->c, 0, sizeof t->c);
        t->c.usd_per_hour = NAN;
        snprintf(t->c.instance, sizeof t->c.instance, "%s", target);
        snprintf(t->c.why, sizeof t->c.why, "target '%.100s' is not an instance type in %.300s",
                 target, cs->pricing->instances_name);
    }
    t->chips = in ? in->accel_count : 0;
    t->chip_word = chip_word(cs, in);
    {
        const struct tb_chip *chip = in ? tb_pricing_chip(cs->pricing, in->chip) : NULL;
        t->family = chip && strcmp(target, "host") != 0 ? chip->name : "";
    }
    price_age(cs, t);
    if (compare_basis(cs, t, err, errlen) != 0)
        return NULL;
    return t;
}

bool tb_cost_is_host_cpu(const struct tb_result *x, const struct tb_cost_price *t)
{
    static const char served[] = "trnbench serve (CPU engine";
    (void)t;
    if (!strcmp(tb_result_field(x, "engine"), "host-cpu") ||
        !strcmp(tb_result_field(x, "executor"), "cpu") ||
        tb_result_field(x, "accelerators_unused")[0])
        return true;
    /* a file written before results.csv had an engine column: its serve rows of our
     * CPU engine are known only by the device text that version wrote */
    return tb_csv_col(x->t, "engine") < 0 &&
           !strncmp(tb_result_field(x, "device"), served, sizeof served - 1);
}

double tb_cost_charged(const struct tb_result *x, const struct tb_cost_price *t)
{
    return tb_cost_instance_share(x->instances, x->chips_used, t->chips);
}

void tb_cost_charged_text(const struct tb_result *x, const struct tb_cost_price *t, char *buf,
                          size_t len)
{
    if (x->chips_used > 0 && t->chips > 0 && x->chips_used != x->instances * t->chips) {
        if (x->instances == 1)
            snprintf(buf, len, "%ld of %ld %s", x->chips_used, t->chips, t->chip_word);
        else
            snprintf(buf, len, "%ld of %ld x %ld %s", x->chips_used, x->instances, t->chips,
                     t->chip_word);
    } else {
        snprintf(buf, len, "%ld", x->instances);
    }
}

/* A row cannot have used more chips than its instances hold (the catalogue's count for
 * its target, or for the host named with --instance). */
static int check_chips_used(const struct tb_costs *cs, char *err, size_t errlen)
{
    for (size_t i = 0; i < cs->res->nrows; i++) {
        const struct tb_result *x = &cs->res->rows[i];
        const char *target = tb_result_field(x, "target");
        const struct tb_instance *in;
        char what[256];
        if (x->chips_used <= 0)
            continue;
        in = !strcmp(target, "host")
                 ? (cs->o.instance ? tb_pricing_instance(cs->pricing, cs->o.instance) : NULL)
                 : tb_pricing_instance(cs->pricing, target);
        if (!in || x->chips_used <= x->instances * in->accel_count)
            continue;
        snprintf(what, sizeof what, "more chips than %ld x %s has (%ld)", x->instances,
                 in->instance, x->instances * in->accel_count);
        return tb_result_bad_field(x, "chips_used", what, err, errlen);
    }
    return 0;
}

/* The configuration of a run: its run_id without the target (the "model:TARGET/"
 * prefix of modeled rows, or an "@TARGET" suffix) and without the instance count
 * ("/x8"); the workload: that without the batch ("/b16/"), so one workload gathers
 * every target, batch and fleet size. */
/* The serving latency rows of c's run (same file, run_id, target and provenance), in
 * one pass over the rows; NAN for those the run does not have. */
static void run_latency(const struct tb_costs *cs, struct tb_cost *c)
{
    const struct tb_result *x = c->row;
    c->ttft = c->tpot = c->per_user = NAN;
    for (size_t i = 0; i < cs->res->nrows; i++) {
        const struct tb_result *y = &cs->res->rows[i];
        const char *m = tb_result_field(y, "metric");
        double *dst = !strcmp(m, "ttft_ms")                 ? &c->ttft
                      : !strcmp(m, "tpot_ms")               ? &c->tpot
                      : !strcmp(m, "tokens_per_s_per_user") ? &c->per_user
                                                            : NULL;
        if (dst && y->t == x->t && y->prov == x->prov &&
            !strcmp(tb_result_field(y, "run_id"), tb_result_field(x, "run_id")) &&
            !strcmp(tb_result_field(y, "target"), tb_result_field(x, "target")))
            *dst = y->value;
    }
}

bool tb_cost_of_workload(const struct tb_cost *c, const char *workload, const char *metric)
{
    return !strcmp(c->workload, workload) && !strcmp(c->metric, metric);
}

bool tb_costs_first_of_target(const struct tb_costs *cs, size_t i, const char *workload,
                              const char *metric)
{
    const char *t = tb_result_field(cs->costs[i].row, "target");
    if (!tb_cost_of_workload(&cs->costs[i], workload, metric))
        return false;
    for (size_t k = 0; k < i; k++)
        if (tb_cost_of_workload(&cs->costs[k], workload, metric) &&
            !strcmp(tb_result_field(cs->costs[k].row, "target"), t))
            return false;
    return true;
}

/* Index in cs->ranks of c's workload's ranking, or -1. */
static long rank_index(const struct tb_costs *cs, const struct tb_cost *c)
{
    for (size_t k = 0; k < cs->nranks; k++)
        if (!strcmp(cs->ranks[k].workload, c->workload) && !strcmp(cs->ranks[k].metric, c->metric))
            return (long)k;
    return -1;
}

const struct tb_cost_rank *tb_costs_rank_of(const struct tb_costs *cs, const struct tb_cost *c)
{
    long k = rank_index(cs, c);
    return k < 0 ? NULL : &cs->ranks[k];
}

void tb_cost_range_factors(const struct tb_cost *c, double *lo, double *hi)
{
    if (tb_cost_positive(c->usd) && tb_cost_positive(c->usd_lo) && tb_cost_positive(c->usd_hi)) {
        *lo = c->usd_lo / c->usd;
        *hi = c->usd_hi / c->usd;
    } else {
        *lo = 1 - c->err;
        *hi = 1 + c->err;
    }
}

double tb_cost_at(const struct tb_cost *c, double rate)
{
    return tb_cost_usd_per(rate * tb_cost_charged(c->row, c->price), c->row->value,
                           c->images ? 1e3 : 1e6);
}

bool tb_costs_meets(const struct tb_costs *cs, const struct tb_cost *c)
{
    return strcmp(tb_result_field(c->row, "phase"), "serve") != 0 ||
           tb_cost_meets(c->ttft, c->tpot, cs->o.ttft_limit_ms, cs->o.tpot_limit_ms);
}

/* Whether c ranks against other targets: priced, not the host CPU, not led by a
 * measurement. */
static bool ranks(const struct tb_cost *c)
{
    return tb_cost_positive(c->usd) && !c->host_cpu && !c->led;
}

/* Measured leads: a measured row's modeled twin (the model's row of its target and
 * configuration), and the model's rows of every (workload, target) with a measured row
 * marked led. */
static void lead_with_measured(struct tb_costs *cs)
{
    for (size_t i = 0; i < cs->ncosts; i++) {
        struct tb_cost *c = &cs->costs[i];
        const char *t = tb_result_field(c->row, "target");
        if (c->row->prov != TB_PROV_MEASURED || c->host_cpu)
            continue;
        for (size_t k = 0; k < cs->ncosts; k++) {
            struct tb_cost *m = &cs->costs[k];
            if (m->row->prov != TB_PROV_MODELED || strcmp(m->metric, c->metric) ||
                strcmp(tb_result_field(m->row, "target"), t) || strcmp(m->workload, c->workload))
                continue;
            m->led = true;
            if (!strcmp(m->config, c->config))
                c->twin = m;
        }
    }
}

/* The baseline's cost of c's configuration at c's comparison price (c->price->bcmp),
 * and price-performance against it with its range. */
static void compare_with_baseline(struct tb_costs *cs, struct tb_cost *c)
{
    const struct tb_cost_price *t = c->price;
    double lo, hi, blo = 1, bhi = 1;
    c->cmp_usd = c->base_usd = c->perf = c->perf_lo = c->perf_hi = NAN;
    if (!t->cmp_have)
        return;
    c->cmp_usd = t->cmp_chosen ? c->usd : tb_cost_at(c, t->cmp.usd_per_hour);
    for (size_t k = 0; k < cs->ncosts; k++) {
        const struct tb_cost *b = &cs->costs[k];
        if (strcmp(tb_result_field(b->row, "target"), cs->o.baseline) ||
            strcmp(b->metric, c->metric) || strcmp(b->config, c->config) ||
            b->row->prov == TB_PROV_MEASURED || b->host_cpu)
            continue;
        c->base_usd = tb_cost_usd_per(t->bcmp.usd_per_hour * tb_cost_charged(b->row, &cs->btp),
                                      b->row->value, b->images ? 1e3 : 1e6);
        tb_cost_range_factors(b, &blo, &bhi);
    }
    if (c->host_cpu)
        return;
    tb_cost_range_factors(c, &lo, &hi);
    c->perf = tb_cost_price_perf(c->base_usd, c->cmp_usd);
    if (!strcmp(tb_result_field(c->row, "target"), cs->o.baseline))
        lo = hi = blo = bhi = 1; /* the baseline against itself: one figure, no range */
    tb_cost_perf_range(c->base_usd, blo, bhi, c->cmp_usd, lo, hi, &c->perf_lo, &c->perf_hi);
}

/* Latency, per-chip figures, the baseline and the workload ranking, once every row has
 * its cost. */
static int rank_costs(struct tb_costs *cs, char *err, size_t errlen)
{
    cs->ranks = tb_alloc_array(cs->ncosts + 1, sizeof(*cs->ranks));
    if (!cs->ranks)
        return tb_err(err, errlen, "out of memory");
    for (size_t i = 0; i < cs->ncosts; i++) {
        struct tb_cost *c = &cs->costs[i];
        const struct tb_result *x = c->row;
        snprintf(c->config, sizeof c->config, "%s", x->config);
        snprintf(c->workload, sizeof c->workload, "%s", x->workload);
        /* the chips that produced the throughput (none of the accelerators for the host
         * CPU's rows) */
        c->chips = c->host_cpu         ? 0
                   : x->chips_used > 0 ? x->chips_used
                                       : c->price->chips * x->instances;
        c->per_chip = c->chips > 0 ? x->value / (double)c->chips : NAN;
        run_latency(cs, c);
    }
    lead_with_measured(cs);
    for (size_t i = 0; i < cs->ncosts; i++) {
        struct tb_cost *c = &cs->costs[i];
        compare_with_baseline(cs, c);
        /* a serving batch of a sweep beside the same target's throughput-maximising run */
        if (!strcmp(tb_result_field(c->row, "phase"), "serve") && !strstr(c->config, "/bmax/"))
            for (size_t k = 0; k < cs->ncosts && !c->sweep_point; k++)
                c->sweep_point = !strcmp(cs->costs[k].workload, c->workload) &&
                                 strstr(cs->costs[k].config, "/bmax/") &&
                                 !strcmp(tb_result_field(cs->costs[k].row, "target"),
                                         tb_result_field(c->row, "target"));
    }
    /* per workload: the cheapest row, the baseline's cheapest, and the same within the
     * latency limits; the total-token cost of a serving run ranks like its output cost,
     * so only the output cost is ranked */
    for (size_t i = 0; i < cs->ncosts; i++) {
        const struct tb_cost *c = &cs->costs[i];
        struct tb_cost_rank *w;
        long k;
        bool ok;
        if (!strcmp(c->metric, "usd_per_mtok_total"))
            continue;
        k = rank_index(cs, c);
        w = k < 0 ? NULL : &cs->ranks[k];
        if (!w) {
            w = &cs->ranks[cs->nranks++];
            memset(w, 0, sizeof *w);
            w->workload = c->workload;
            w->metric = c->metric;
            w->base_usd = w->base_ok_usd = NAN;
            w->serve = !strcmp(tb_result_field(c->row, "phase"), "serve");
        }
        if (!ranks(c))
            continue; /* the host's throughput, not the instance's, or a modeled row
                         whose measurement leads: not ranked */
        ok = w->serve && tb_costs_meets(cs, c);
        if (!w->best || c->usd < w->best->usd)
            w->best = c;
        if (ok && (!w->best_ok || c->usd < w->best_ok->usd))
            w->best_ok = c;
        if (cs->btp.c.have && !strcmp(tb_result_field(c->row, "target"), cs->o.baseline)) {
            if (!w->base || c->usd < w->base_usd) {
                w->base = c;
                w->base_usd = c->usd;
            }
            if (ok && (!w->base_ok || c->usd < w->base_ok_usd)) {
                w->base_ok = c;
                w->base_ok_usd = c->usd;
            }
        }
    }
    return 0;
}

/* The cost a target's rows are ordered by: at the chosen price, else at the comparison's. */
static double order_usd(const struct tb_cost *c)
{
    return tb_cost_positive(c->usd) ? c->usd : c->cmp_usd;
}

const struct tb_cost *tb_costs_target_best(const struct tb_costs *cs, const char *workload,
                                           const char *metric, const char *target, bool ok)
{
    const struct tb_cost *best = NULL;
    for (size_t i = 0; i < cs->ncosts; i++) {
        const struct tb_cost *c = &cs->costs[i];
        if (c->host_cpu || c->led || !tb_cost_positive(order_usd(c)) ||
            !tb_cost_of_workload(c, workload, metric) ||
            strcmp(tb_result_field(c->row, "target"), target) || (ok && !tb_costs_meets(cs, c)))
            continue;
        if (!best || order_usd(c) < order_usd(best))
            best = c;
    }
    return best;
}

int tb_costs_nearest_price(const struct tb_costs *cs, const char *target, const char *purchase,
                           struct tb_price_choice *out, char *err, size_t errlen)
{
    const char *region = cs->o.region ? cs->o.region : "us-east-1", **regions;
    size_t n;
    regions = tb_alloc_array(cs->pricing->nprices + 1, sizeof *regions);
    if (!regions)
        return tb_err(err, errlen, "out of memory");
    n = regions_by_distance(cs->pricing, region, regions);
    for (size_t k = 0; k < n; k++) {
        struct tb_price_choice a;
        if (tb_pricing_target_price(cs->pricing, target, regions[k], purchase, &a, err, errlen) !=
            0) {
            free(regions);
            return -1;
        }
        if (k == 0 || a.have)
            *out = a;
        if (a.have)
            break;
    }
    free(regions);
    return 0;
}

const struct tb_cost *tb_costs_base_at(const struct tb_costs *cs, const char *workload,
                                       const char *metric, double rate, bool ok, double *usd,
                                       double *lo, double *hi)
{
    const struct tb_cost *b = tb_costs_target_best(cs, workload, metric, cs->o.baseline, ok);
    double flo, fhi;
    *usd = *lo = *hi = NAN;
    if (!b)
        return NULL;
    tb_cost_range_factors(b, &flo, &fhi);
    *usd = tb_cost_at(b, rate);
    *lo = *usd * flo;
    *hi = *usd * fhi;
    return b;
}

/* Whether model names a mixture of experts, remembered for the model asked last (a cost
 * table's rows are mostly of one model: its file is read once). */
static bool model_is_moe(const char *model, char last[128], bool *last_moe)
{
    struct tb_arch a;
    char e[256];
    if (!model || !*model)
        return false;
    if (strcmp(model, last) != 0) {
        snprintf(last, 128, "%s", model);
        *last_moe = tb_arch_find(&a, model, e, sizeof e) == 0 && a.experts > 0;
    }
    return *last_moe;
}

/* c's error band and cost range: the model's validation error for a modeled row (its
 * chip family and phase; a mixture of experts' rows are validated in a group of their
 * own, "serve+moe" (tb_validate_term), and its band comes from them), the repetitions
 * for a measured one. */
static void model_error(const struct tb_costs *cs, struct tb_cost *c, bool moe)
{
    double pct;
    const char *phase = tb_result_field(c->row, "phase");
    char ph[40];
    c->err = 0;
    c->err_few = false;
    c->err_basis[0] = '\0';
    if (phase && moe) {
        snprintf(ph, sizeof ph, "%.30s+moe", phase);
        phase = ph;
    }
    if (c->row->prov == TB_PROV_MODELED && cs->o.validation && !c->host_cpu &&
        tb_validate_error(cs->o.validation, c->price->family, phase, &pct, &c->err_few,
                          c->err_basis, sizeof c->err_basis))
        c->err = pct / 100.0;
    if (!tb_cost_positive(c->usd)) {
        c->usd_lo = c->usd_hi = NAN;
    } else if (c->row->prov == TB_PROV_MODELED) {
        c->usd_lo = c->usd * (1 - c->err);
        c->usd_hi = c->usd * (1 + c->err);
    } else {
        c->usd_lo = tb_cost_positive(c->usd_min) ? c->usd_min : c->usd;
        c->usd_hi = tb_cost_positive(c->usd_max) ? c->usd_max : c->usd;
    }
}

/* A cost for every throughput row, each target priced once (footnotes numbered in order
 * of first use), then the ranking. */
static int build_costs(struct tb_costs *cs, char *err, size_t errlen)
{
    char last_model[128] = "";
    bool last_moe = false;
    cs->tp = tb_alloc_array(cs->res->nrows + 1, sizeof(*cs->tp));
    cs->costs = tb_alloc_array(cs->res->nrows + 1, sizeof(*cs->costs));
    if (!cs->tp || !cs->costs)
        return tb_err(err, errlen, "out of memory");
    for (size_t i = 0; i < cs->res->nrows; i++) {
        const struct tb_result *x = &cs->res->rows[i];
        const struct tb_metric *def = tb_metric_find(tb_result_field(x, "metric"));
        const char *m = def ? def->cost : NULL;
        struct tb_cost_price *price;
        struct tb_cost *c;
        if (!m)
            continue;
        c = &cs->costs[cs->ncosts++];
        memset(c, 0, sizeof *c);
        c->row = x;
        c->metric = m;
        c->images = !strcmp(m, "usd_per_kimage");
        price = target_price(cs, tb_result_field(x, "target"), err, errlen);
        if (!price)
            return -1;
        c->price = price;
        c->host_cpu = tb_cost_is_host_cpu(x, price);
        c->usd = c->usd_min = c->usd_max = c->tokens_per_usd = NAN;
        if (c->price->c.have) {
            /* a run on several instances is charged all of them, a run on part of an
             * instance's chips that share (one GPU of a p5.48xlarge's 8: 1/8) */
            double h = c->price->c.usd_per_hour * tb_cost_charged(x, c->price);
            /* per million tokens, or per thousand images */
            double per = c->images ? 1e3 : 1e6;
            c->usd = tb_cost_usd_per(h, x->value, per);
            /* the fastest repetition is the cheapest */
            c->usd_min = tb_cost_usd_per(h, x->max, per);
            c->usd_max = tb_cost_usd_per(h, x->min, per);
            c->tokens_per_usd = x->value * 3600.0 / h;
            cs->npriced++;
        }
        model_error(cs, c,
                    c->row->prov == TB_PROV_MODELED && cs->o.validation && !c->host_cpu &&
                        model_is_moe(tb_result_field(x, "model"), last_model, &last_moe));
        if (!price->ref)
            price->ref = ++cs->nrefs;
    }
    return rank_costs(cs, err, errlen);
}

int tb_cost_opts_check(const struct tb_pricing *pricing, const struct tb_cost_opts *o,
                       struct tb_price_choice *host, char *err, size_t errlen)
{
    if (tb_pricing_check_choice(pricing, o->region, o->purchase, err, errlen) != 0 ||
        tb_pricing_host_price(pricing, o->instance, o->region, o->purchase, o->usd_per_hour, host,
                              err, errlen) != 0)
        return -1;
    if (!tb_pricing_instance(pricing, o->baseline))
        return tb_err(err, errlen, "baseline: unknown instance type '%s' (not in %s)", o->baseline,
                      pricing->instances_name);
    return 0;
}

int tb_costs_build(struct tb_costs *cs, const struct tb_results *res,
                   const struct tb_pricing *pricing, const struct tb_cost_opts *o, char *err,
                   size_t errlen)
{
    const struct tb_instance *base_in;

    memset(cs, 0, sizeof *cs);
    cs->res = res;
    cs->pricing = pricing;
    cs->o = *o;
    if (tb_cost_opts_check(pricing, o, &cs->host, err, errlen) != 0)
        goto fail;
    base_in = tb_pricing_instance(pricing, o->baseline);
    if (check_chips_used(cs, err, errlen) != 0)
        goto fail;
    cs->btp.target = o->baseline;
    cs->btp.chips = base_in->accel_count;
    cs->btp.chip_word = chip_word(cs, base_in);
    /* like for like: the baseline under the same purchase model and region as every
     * candidate; where it has none, each target finds the nearest basis both have
     * (compare_basis) */
    {
        const char *want = o->purchase ? o->purchase : "on-demand";
        const char *region = o->region ? o->region : "us-east-1";
        if (tb_pricing_target_price(pricing, o->baseline, o->region, want, &cs->btp.c, err,
                                    errlen) != 0)
            goto fail;
        snprintf(cs->basis, sizeof cs->basis, "%s %s in %s", o->baseline, want, region);
        cs->like_for_like = cs->btp.c.have;
    }
    price_age(cs, &cs->btp);
    if (build_costs(cs, err, errlen) != 0)
        goto fail;
    cs->btp.ref = ++cs->nrefs;
    return 0;
fail:
    tb_costs_release(cs);
    return -1;
}

void tb_costs_release(struct tb_costs *cs)
{
    free(cs->ranks);
    free(cs->costs);
    free(cs->tp);
    memset(cs, 0, sizeof *cs);
}

/* ---- cost.csv ---- */

static const char *const COST_COLS[] = {"run_id",
                                        "provenance",
                                        "target",
                                        "model",
                                        "phase",
                                        "precision",
                                        "batch",
                                        "seq_in",
                                        "seq_out",
                                        "throughput_metric",
                                        "tokens_per_s",
                                        "tokens_per_s_min",
                                        "tokens_per_s_max",
                                        "metric",
                                        "usd_per_mtok",
                                        "usd_per_mtok_min",
                                        "usd_per_mtok_max",
                                        "tokens_per_usd",
                                        "price_instance",
                                        "price_region",
                                        "price_purchase",
                                        "usd_per_hour",
                                        "price_as_of",
                                        "price_source",
                                        "price_note",
                                        "results_file",
                                        "results_line",
                                        "usd_per_kimage",
                                        "usd_per_kimage_min",
                                        "usd_per_kimage_max",
                                        "images_per_usd",
                                        "workload",
                                        "chips",
                                        "throughput_per_chip",
                                        "usd_per_chip_hour",
                                        "price_age_days",
                                        "price_flag",
                                        "baseline",
                                        "baseline_usd",
                                        "price_performance",
                                        "ttft_ms",
                                        "tpot_ms",
                                        "tokens_per_s_per_user",
                                        "meets_latency_limits",
                                        "train_tokens",
                                        "train_days",
                                        "train_usd",
                                        "chips_used",
                                        "chips_per_instance",
                                        "instances_charged",
                                        "host_cpu_of_accelerator_instance",
                                        "cost_low",
                                        "cost_high",
                                        "model_error_pct",
                                        "model_error_basis",
                                        "comparison_purchase",
                                        "comparison_region",
                                        "comparison_usd_per_hour",
                                        "comparison_cost",
                                        "baseline_usd_per_hour",
                                        "price_performance_low",
                                        "price_performance_high",
                                        "within_model_error",
                                        "led_by_measurement",
                                        "twin_cost",
                                        "twin_error_pct",
                                        "usd_shown",
                                        "shown_basis",
                                        "train_billed_days",
                                        "train_billed_instances",
                                        "train_billed_use",
                                        "price_provenance",
                                        NULL};

static const char *num_text(double v, char *buf, size_t len)
{
    if (isnan(v))
        buf[0] = '\0';
    else
        snprintf(buf, len, "%.10g", v);
    return buf;
}

int tb_costs_write_csv(const struct tb_costs *cs, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    int rc = -1, bad = 0;
    if (!f)
        return tb_err(err, errlen, "cannot write '%s': %s", path, strerror(errno));
    for (size_t i = 0; COST_COLS[i]; i++)
        bad |= tb_csv_put(f, COST_COLS[i], COST_COLS[i + 1] ? ',' : '\n');
    for (size_t i = 0; i < cs->ncosts; i++) {
        const struct tb_cost *c = &cs->costs[i];
        const struct tb_result *x = c->row;
        const struct tb_price_choice *p = &c->price->c;
        const struct tb_cost_price *t = c->price;
        char b[43][64], note[600], line[24], basis[160];
        const char *v[sizeof COST_COLS / sizeof COST_COLS[0]];
        struct tb_cost_train tr;
        bool train = !strcmp(c->metric, "usd_per_mtok_train");
        const double none = NAN;
        size_t k = 0;
        snprintf(note, sizeof note, "%s%s", p->have ? "" : "no price: ", p->have ? "" : p->why);
        snprintf(line, sizeof line, "%ld", tb_result_line(x));
        v[k++] = tb_result_field(x, "run_id");
        v[k++] = tb_provenance_to_string(x->prov);
        v[k++] = tb_result_field(x, "target");
        v[k++] = tb_result_field(x, "model");
        v[k++] = tb_result_field(x, "phase");
        v[k++] = tb_result_field(x, "precision");
        v[k++] = tb_result_field(x, "batch");
        v[k++] = tb_result_field(x, "seq_in");
        v[k++] = tb_result_field(x, "seq_out");
        v[k++] = tb_result_field(x, "metric");
        v[k++] = num_text(x->value, b[0], sizeof b[0]);
        v[k++] = num_text(x->min, b[1], sizeof b[1]);
        v[k++] = num_text(x->max, b[2], sizeof b[2]);
        v[k++] = c->metric;
        v[k++] = num_text(c->images ? none : c->usd, b[3], sizeof b[3]);
        v[k++] = num_text(c->images ? none : c->usd_min, b[4], sizeof b[4]);
        v[k++] = num_text(c->images ? none : c->usd_max, b[5], sizeof b[5]);
        v[k++] = num_text(c->images ? none : c->tokens_per_usd, b[6], sizeof b[6]);
        v[k++] = p->have ? p->instance : "";
        v[k++] = p->have ? p->region : "";
        v[k++] = p->have ? p->purchase : "";
        v[k++] = num_text(p->have ? p->usd_per_hour : NAN, b[7], sizeof b[7]);
        v[k++] = p->have ? p->as_of : "";
        v[k++] = p->have ? p->source : "";
        v[k++] = note;
        v[k++] = x->t->path;
        v[k++] = line;
        v[k++] = num_text(c->images ? c->usd : none, b[8], sizeof b[8]);
        v[k++] = num_text(c->images ? c->usd_min : none, b[9], sizeof b[9]);
        v[k++] = num_text(c->images ? c->usd_max : none, b[10], sizeof b[10]);
        v[k++] = num_text(c->images ? c->tokens_per_usd : none, b[11], sizeof b[11]);
        v[k++] = c->workload;
        v[k++] = num_text(c->chips > 0 ? (double)c->chips : NAN, b[12], sizeof b[12]);
        v[k++] = num_text(c->per_chip, b[13], sizeof b[13]);
        v[k++] = num_text(p->have && c->price->chips > 0 ? p->usd_per_hour / (double)c->price->chips
                                                         : NAN,
                          b[14], sizeof b[14]);
        v[k++] = num_text(c->price->age >= 0 ? (double)c->price->age : NAN, b[15], sizeof b[15]);
        v[k++] = c->price->flag;
        v[k++] = cs->o.baseline;
        v[k++] = num_text(c->base_usd, b[16], sizeof b[16]);
        v[k++] = num_text(c->perf, b[17], sizeof b[17]);
        v[k++] = num_text(c->ttft, b[18], sizeof b[18]);
        v[k++] = num_text(c->tpot, b[19], sizeof b[19]);
        v[k++] = num_text(c->per_user, b[20], sizeof b[20]);
        v[k++] =
            !strcmp(tb_result_field(x, "phase"), "serve")
                ? (tb_cost_meets(c->ttft, c->tpot, cs->o.ttft_limit_ms, cs->o.tpot_limit_ms) ? "yes"
                                                                                             : "no")
                : "";
        tb_costs_train(cs, c, &tr);
        v[k++] = num_text(train ? cs->o.train_tokens : NAN, b[21], sizeof b[21]);
        v[k++] = num_text(train ? tr.days : NAN, b[22], sizeof b[22]);
        v[k++] = num_text(train ? tr.usd : NAN, b[23], sizeof b[23]);
        /* what the run is charged: instances, or a share of one (chips_used of its chips) */
        v[k++] = num_text(x->chips_used > 0 ? (double)x->chips_used : NAN, b[24], sizeof b[24]);
        v[k++] = num_text(c->price->chips > 0 ? (double)c->price->chips : NAN, b[25], sizeof b[25]);
        v[k++] = num_text(tb_cost_charged(x, c->price), b[26], sizeof b[26]);
        v[k++] = c->host_cpu ? "yes" : "no";
        /* the range, the model's error, the like-for-like comparison */
        v[k++] = num_text(c->usd_lo, b[29], sizeof b[29]);
        v[k++] = num_text(c->usd_hi, b[30], sizeof b[30]);
        v[k++] = num_text(c->row->prov == TB_PROV_MODELED && c->err_basis[0] ? 100 * c->err : NAN,
                          b[31], sizeof b[31]);
        v[k++] = c->err_basis;
        v[k++] = t->cmp_have ? t->cmp.purchase : "";
        v[k++] = t->cmp_have ? t->cmp.region : "";
        v[k++] = num_text(t->cmp_have ? t->cmp.usd_per_hour : NAN, b[32], sizeof b[32]);
        v[k++] = num_text(c->cmp_usd, b[33], sizeof b[33]);
        v[k++] = num_text(t->cmp_have ? t->bcmp.usd_per_hour : NAN, b[34], sizeof b[34]);
        v[k++] = num_text(c->perf_lo, b[35], sizeof b[35]);
        v[k++] = num_text(c->perf_hi, b[36], sizeof b[36]);
        v[k++] = isnan(c->perf_lo) ? "" : c->perf_lo <= 1 && c->perf_hi >= 1 ? "yes" : "no";
        v[k++] = c->led ? "yes" : "no";
        v[k++] = num_text(c->twin ? c->twin->usd : NAN, b[37], sizeof b[37]);
        v[k++] = num_text(c->twin ? 100 * (c->twin->row->value / x->value - 1) : NAN, b[38],
                          sizeof b[38]);
        /* the figure the tables and charts show, and the days a training job buys */
        v[k++] = num_text(tb_cost_shown(c), b[39], sizeof b[39]);
        if (tb_cost_stand_in(c))
            snprintf(basis, sizeof basis, "nearest comparable: %s", t->cmp_basis);
        else
            snprintf(basis, sizeof basis, "%s", tb_cost_positive(c->usd) ? "chosen" : "");
        v[k++] = basis;
        v[k++] = num_text(train && tr.cblock ? tr.cb.days : NAN, b[40], sizeof b[40]);
        v[k++] = num_text(train && tr.cblock ? tr.instances : NAN, b[41], sizeof b[41]);
        v[k++] = num_text(train && tr.cblock ? tr.cb.used : NAN, b[42], sizeof b[42]);
        /* whose price: the table's, or the user's (--usd-per-hour, --discount) */
        v[k++] = !p->have ? "" : !p->line || p->discount > 0 ? "user" : "table";
        for (size_t j = 0; j < k; j++)
            bad |= tb_csv_put_text(f, v[j], j + 1 < k ? ',' : '\n');
    }
    if (bad || ferror(f)) {
        tb_err(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (fclose(f) != 0 && rc == 0)
        rc = tb_err(err, errlen, "cannot write '%s': %s", path, strerror(errno));
    return rc;
}

void tb_costs_versus(const struct tb_costs *cs, const char *workload, const char *metric,
                     const char *target, bool ok, struct tb_cost_versus *v)
{
    double flo, fhi, blo, bhi;
    memset(v, 0, sizeof *v);
    v->usd = v->lo = v->hi = v->base = v->perf = v->plo = v->phi = NAN;
    v->c = tb_costs_target_best(cs, workload, metric, target, ok);
    if (v->c && !v->c->price->cmp_have)
        v->usd = v->c->usd; /* priced where chosen, but no baseline price to compare */
    if (!v->c || !v->c->price->cmp_have)
        return;
    v->usd = v->c->cmp_usd;
    tb_cost_range_factors(v->c, &flo, &fhi);
    v->lo = v->usd * flo;
    v->hi = v->usd * fhi;
    v->b = tb_costs_base_at(cs, workload, metric, v->c->price->bcmp.usd_per_hour, ok, &v->base,
                            &blo, &bhi);
    if (!v->b)
        return;
    v->perf = tb_cost_price_perf(v->base, v->usd);
    if (v->b == v->c)
        v->plo = v->phi = v->perf;
    else
        tb_cost_perf_range(v->base, blo / v->base, bhi / v->base, v->usd, flo, fhi, &v->plo,
                           &v->phi);
}

double tb_cost_shown(const struct tb_cost *c)
{
    if (tb_cost_positive(c->usd))
        return c->usd;
    return c->price->cmp_have && tb_cost_positive(c->cmp_usd) ? c->cmp_usd : NAN;
}

bool tb_cost_stand_in(const struct tb_cost *c)
{
    return !tb_cost_positive(c->usd) && tb_cost_positive(tb_cost_shown(c));
}

const struct tb_price_choice *tb_cost_shown_price(const struct tb_cost *c)
{
    if (tb_cost_positive(c->usd))
        return &c->price->c;
    return tb_cost_stand_in(c) ? &c->price->cmp : NULL;
}

void tb_cost_shown_spread(const struct tb_cost *c, double *min, double *max)
{
    const struct tb_result *x = c->row;
    double usd = tb_cost_shown(c);
    *min = *max = NAN;
    if (!tb_cost_positive(usd))
        return;
    if (tb_cost_positive(x->max))
        *min = usd * x->value / x->max; /* the fastest repetition is the cheapest */
    if (tb_cost_positive(x->min))
        *max = usd * x->value / x->min;
}

const struct tb_cost *tb_costs_shown_row(const struct tb_costs *cs, const struct tb_cost_rank *w,
                                         const char *target)
{
    return tb_costs_target_best(cs, w->workload, w->metric, target, tb_costs_limits_apply(cs, w));
}

void tb_costs_train(const struct tb_costs *cs, const struct tb_cost *c, struct tb_cost_train *out)
{
    tb_costs_train_at(cs, c, tb_cost_shown_price(c), out);
}

void tb_costs_train_at(const struct tb_costs *cs, const struct tb_cost *c,
                       const struct tb_price_choice *p, struct tb_cost_train *out)
{
    double share = tb_cost_charged(c->row, c->price);
    memset(out, 0, sizeof *out);
    out->days = tb_cost_train_days(cs->o.train_tokens, c->row->value);
    out->usd = tb_pricing_job_usd(p, out->days * 24.0, share, &out->cb);
    out->cblock = !isnan(out->cb.days);
    out->instances = out->cblock ? ceil(share - 1e-9) : share; /* a block holds whole ones */
}

bool tb_costs_limits_apply(const struct tb_costs *cs, const struct tb_cost_rank *w)
{
    if (!w->serve)
        return false;
    for (size_t i = 0; i < cs->ncosts; i++) {
        const struct tb_cost *c = &cs->costs[i];
        if (!c->host_cpu && !c->led && tb_cost_of_workload(c, w->workload, w->metric) &&
            tb_costs_meets(cs, c))
            return true;
    }
    return false;
}
