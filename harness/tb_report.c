/* harness/tb_report.c: see tb_report.h. Reads and checks every input first, then draws
 * the charts and writes the documents into a scratch folder, then renames. The
 * Markdown and HTML come from the same calls (struct tb_doc writes both), so they always
 * say the same thing. */
#include "tb_report.h"

#include "tb_assess.h"
#include "tb_cost.h"
#include "tb_csv.h"
#include "tb_doc.h"
#include "tb_plot.h"
#include "tb_pricing.h"
#include "tb_results.h"
#include "tb_util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- numbers ---- */

/* 4 significant digits, no exponent for ordinary magnitudes; "" for NAN. */
static const char *fmt_num(double v, char *buf, size_t len)
{
    double a = fabs(v);
    if (isnan(v))
        snprintf(buf, len, "%s", "");
    else if (a >= 10000 && a < 1e15)
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "%.4g", v);
    return buf;
}

const char *tb_report_cost_metric(const char *metric)
{
    static const char *const map[][2] = {
        {"prefill_tokens_per_s", "usd_per_mtok_in"},  {"decode_tokens_per_s", "usd_per_mtok_out"},
        {"output_tokens_per_s", "usd_per_mtok_out"},  {"train_tokens_per_s", "usd_per_mtok_train"},
        {"total_tokens_per_s", "usd_per_mtok_total"}, {"images_per_s", "usd_per_kimage"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(metric, map[i][0]))
            return map[i][1];
    return NULL;
}

double tb_report_usd_per_mtok(double usd_per_hour, double tokens_per_s)
{
    return tb_cost_usd_per(usd_per_hour, tokens_per_s, 1e6);
}

/* A field of a results row by column name (the report reads many). */
static const char *F(const struct tb_result *x, const char *name)
{
    return tb_result_field(x, name);
}

/* ---- the report being built ---- */

struct tprice {         /* the price of one target */
    const char *target; /* borrowed from a results table */
    struct tb_price_choice c;
    int ref;               /* footnote number in the report, 0 until used */
    long chips;            /* chips per instance (0: the host, not a catalogued instance) */
    const char *chip_word; /* what its chips are called: "GPUs" (NVIDIA) or "chips" */
    long age;              /* days from the price's date to the report's; -1 undated */
    char flag[160];        /* "" or why the price needs a second look (stale, undated) */
};

struct cost {
    const struct tb_result *row;                  /* borrowed: the throughput row */
    const char *metric;                           /* usd_per_mtok_* or usd_per_kimage */
    bool images;                                  /* per thousand images, not per Mtok */
    struct tprice *price;                         /* borrowed from report.tp */
    double usd, usd_min, usd_max, tokens_per_usd; /* NAN without a price; tokens_per_usd
                                                     counts images for an images row */
    char config[200];            /* run_id without target and instance count: the configuration */
    char workload[200];          /* config without the batch: what is compared across targets */
    long chips;                  /* chips of the run (chips_used, else instances x chips per
                                    instance); 0 unknown */
    double per_chip;             /* throughput per chip; NAN when chips is unknown */
    double ttft, tpot, per_user; /* the run's latency rows (serving); NAN when absent */
    double base_usd;             /* the baseline's on-demand cost for the same configuration */
    double perf;                 /* price-performance: base_usd / usd */
    bool sweep_point;            /* a serving batch beside the same target's "max" run */
};

/* One workload's ranking (the summary). */
struct wsum {
    const char *workload; /* borrowed from a cost */
    const char *metric;
    const struct cost *best; /* cheapest priced row */
    const struct cost *base; /* cheapest baseline row (on-demand) */
    double base_usd;
    const struct cost *best_ok; /* cheapest within the latency limits (serving) */
    const struct cost *base_ok;
    double base_ok_usd;
    bool serve;
};

struct chart {
    char name[48]; /* file name without extension */
    char caption[300];
    char *svg; /* owned */
    bool png;
};
#define MAX_CHARTS 16

struct report {
    const struct tb_report_opts *o;
    struct tb_results res;     /* owned: the results files, rows in report order */
    struct tb_pricing pricing; /* owned */
    bool have_pricing;
    struct tb_price_choice host; /* the host's price */
    struct tprice *tp;           /* owned: ntp distinct targets */
    size_t ntp;
    struct cost *costs; /* owned: ncosts */
    size_t ncosts, npriced;
    int nrefs;
    const char *baseline; /* instance type */
    struct tprice btp;    /* its on-demand price (btp.ref: its footnote number) */
    struct wsum *ws;      /* owned: nws workloads */
    size_t nws;
    char *assess_md, *assess_html; /* owned: the assessment section, or NULL */
    char assess_why[600];          /* why there is none */
    char outdir[4096];
    char tmpdir[4200];
    bool made_tmpdir;
    struct chart charts[MAX_CHARTS];
    int ncharts;
    char notes[1024]; /* what is missing and why, one per line */
    char now[32];
};

static void add_note(struct report *R, const char *fmt, ...) TB_PRINTF(2, 3);
static void add_note(struct report *R, const char *fmt, ...)
{
    size_t used = strlen(R->notes);
    va_list ap;
    if (used + 2 >= sizeof R->notes)
        return;
    va_start(ap, fmt);
    vsnprintf(R->notes + used, sizeof R->notes - used - 1, fmt, ap);
    va_end(ap);
    used = strlen(R->notes);
    R->notes[used] = '\n';
    R->notes[used + 1] = '\0';
}

/* Flag a price that needs a second look: older than the threshold, or undated. */
static void price_age(struct report *R, struct tprice *t)
{
    t->age = -1;
    t->flag[0] = '\0';
    if (!t->c.have || !t->c.line)
        return; /* no price, or the user's own rate */
    t->age = tb_cost_age_days(t->c.as_of, R->now);
    if (t->age < 0)
        snprintf(t->flag, sizeof t->flag, "undated (the source says '%s')", t->c.as_of);
    else if ((double)t->age > R->o->max_price_age_days)
        snprintf(t->flag, sizeof t->flag, "stale: %ld days old (threshold %g)", t->age,
                 R->o->max_price_age_days);
}

/* What an instance's chips are called in the report: "GPUs" (NVIDIA) or "chips". */
static const char *chip_word(const struct report *R, const struct tb_instance *in)
{
    const struct tb_chip *chip = in ? tb_pricing_chip(&R->pricing, in->chip) : NULL;
    return chip && !strcmp(chip->vendor, "NVIDIA") ? "GPUs" : "chips";
}

static struct tprice *target_price(struct report *R, const char *target, char *err, size_t errlen)
{
    struct tprice *t;
    const struct tb_instance *in;
    for (size_t i = 0; i < R->ntp; i++)
        if (!strcmp(R->tp[i].target, target))
            return &R->tp[i];
    t = &R->tp[R->ntp++];
    memset(t, 0, sizeof *t);
    t->target = target;
    in = tb_pricing_instance(&R->pricing, target);
    if (!strcmp(target, "host")) {
        t->c = R->host;
        in = R->o->instance ? tb_pricing_instance(&R->pricing, R->o->instance) : NULL;
    } else if (in) {
        if (tb_pricing_target_price(&R->pricing, target, R->o->region, R->o->purchase, &t->c, err,
                                    errlen) != 0)
            return NULL;
    } else {
        memset(&t->c, 0, sizeof t->c);
        t->c.usd_per_hour = NAN;
        snprintf(t->c.instance, sizeof t->c.instance, "%s", target);
        snprintf(t->c.why, sizeof t->c.why, "target '%s' is not an instance type in %s", target,
                 R->pricing.instances_csv.path);
    }
    t->chips = in ? in->accel_count : 0;
    t->chip_word = chip_word(R, in);
    price_age(R, t);
    return t;
}

/* Instance-hours a row is charged per hour at price t: its share of the instances when
 * it used part of their chips (tb_cost_instance_share). */
static double charged(const struct tb_result *x, const struct tprice *t)
{
    return tb_cost_instance_share(x->instances, x->chips_used, t->chips);
}

/* "1 of 8 GPUs" (a part of one instance), "12 of 2 x 8 chips", or the instance count
 * ("1", "4") when the row is charged whole instances. */
static void charged_text(const struct tb_result *x, const struct tprice *t, char *buf, size_t len)
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
static int check_chips_used(const struct report *R, char *err, size_t errlen)
{
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *x = &R->res.rows[i];
        const char *target = F(x, "target");
        const struct tb_instance *in;
        char what[256];
        if (x->chips_used <= 0)
            continue;
        in = !strcmp(target, "host")
                 ? (R->o->instance ? tb_pricing_instance(&R->pricing, R->o->instance) : NULL)
                 : tb_pricing_instance(&R->pricing, target);
        if (!in || x->chips_used <= x->instances * in->accel_count)
            continue;
        snprintf(what, sizeof what, "more chips than %ld x %s has (%ld)", x->instances,
                 in->instance, x->instances * in->accel_count);
        return tb_result_bad_field(x, "chips_used", what, err, errlen);
    }
    return 0;
}

/* The configuration of a run: its run_id without the target (the "model:TARGET/"
 * prefix of modeled rows, or an "@TARGET" suffix) and without the instance count ("/x8"); the
 * workload: that without the batch
 * ("/b16/"), so one workload gathers every target, batch and fleet size. */
static void config_keys(const struct tb_result *x, char *config, size_t clen, char *workload,
                        size_t wlen)
{
    const char *id = F(x, "run_id"), *target = F(x, "target");
    size_t tl = strlen(target);
    char *p;
    if (!strncmp(id, "model:", 6) && !strncmp(id + 6, target, tl) && id[6 + tl] == '/')
        id += 7 + tl;
    snprintf(config, clen, "%s", *id ? id : F(x, "model"));
    /* an id that names its target at the end ("...@p5.48xlarge") */
    p = strrchr(config, '@');
    if (p && !strcmp(p + 1, target))
        *p = '\0';
    p = strstr(config, "/x");
    if (p && isdigit((unsigned char)p[2]) && !strchr(p + 2, '/'))
        *p = '\0';
    snprintf(workload, wlen, "%s", config);
    p = strstr(workload, "/b");
    if (p && (isdigit((unsigned char)p[2]) || !strncmp(p + 2, "max", 3))) {
        char *q = strchr(p + 2, '/');
        memmove(p, q ? q : p + strlen(p), strlen(q ? q : p + strlen(p)) + 1);
    }
}

/* The serving latency rows of c's run (same file, run_id, target and provenance), in
 * one pass over the rows; NAN for those the run does not have. */
static void run_latency(const struct report *R, struct cost *c)
{
    const struct tb_result *x = c->row;
    c->ttft = c->tpot = c->per_user = NAN;
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *y = &R->res.rows[i];
        const char *m = F(y, "metric");
        double *dst = !strcmp(m, "ttft_ms")                 ? &c->ttft
                      : !strcmp(m, "tpot_ms")               ? &c->tpot
                      : !strcmp(m, "tokens_per_s_per_user") ? &c->per_user
                                                            : NULL;
        if (dst && y->t == x->t && y->prov == x->prov && !strcmp(F(y, "run_id"), F(x, "run_id")) &&
            !strcmp(F(y, "target"), F(x, "target")))
            *dst = y->value;
    }
}

/* Whether c is a row of workload w (same workload and cost metric). */
static bool of_workload(const struct cost *c, const char *workload, const char *metric)
{
    return !strcmp(c->workload, workload) && !strcmp(c->metric, metric);
}

/* Whether costs[i] is the first row of its target among the rows of (workload, metric):
 * walking i over the costs visits each target of a workload once. */
static bool first_of_target(const struct report *R, size_t i, const char *workload,
                            const char *metric)
{
    const char *t = F(R->costs[i].row, "target");
    if (!of_workload(&R->costs[i], workload, metric))
        return false;
    for (size_t k = 0; k < i; k++)
        if (of_workload(&R->costs[k], workload, metric) && !strcmp(F(R->costs[k].row, "target"), t))
            return false;
    return true;
}

/* The ranking of c's workload, or NULL (the serving total-token cost has none). */
static struct wsum *ws_of(const struct report *R, const struct cost *c)
{
    for (size_t k = 0; k < R->nws; k++)
        if (!strcmp(R->ws[k].workload, c->workload) && !strcmp(R->ws[k].metric, c->metric))
            return &R->ws[k];
    return NULL;
}

static bool positive(double v)
{
    return v > 0 && isfinite(v);
}

/* Latency, per-chip figures, the baseline and the workload ranking, once every row has
 * its cost. */
static int rank_costs(struct report *R, char *err, size_t errlen)
{
    const struct tb_report_opts *o = R->o;
    R->ws = tb_alloc_array(R->ncosts + 1, sizeof(*R->ws));
    if (!R->ws)
        return tb_err(err, errlen, "out of memory");
    for (size_t i = 0; i < R->ncosts; i++) {
        struct cost *c = &R->costs[i];
        const struct tb_result *x = c->row;
        config_keys(x, c->config, sizeof c->config, c->workload, sizeof c->workload);
        /* the chips that produced the throughput */
        c->chips = x->chips_used > 0 ? x->chips_used : c->price->chips * x->instances;
        c->per_chip = c->chips > 0 ? x->value / (double)c->chips : NAN;
        run_latency(R, c);
        c->base_usd = c->perf = NAN;
    }
    for (size_t i = 0; i < R->ncosts; i++) {
        struct cost *c = &R->costs[i];
        /* the baseline's cost of the same configuration, at its on-demand price */
        for (size_t k = 0; k < R->ncosts && R->btp.c.have; k++) {
            const struct cost *b = &R->costs[k];
            if (strcmp(F(b->row, "target"), R->baseline) || strcmp(b->metric, c->metric) ||
                strcmp(b->config, c->config) || b->row->prov == TB_PROV_MEASURED)
                continue;
            c->base_usd = tb_cost_usd_per(R->btp.c.usd_per_hour * charged(b->row, &R->btp),
                                          b->row->value, b->images ? 1e3 : 1e6);
        }
        c->perf = tb_cost_price_perf(c->base_usd, c->usd);
        /* a serving batch of a sweep beside the same target's throughput-maximising run */
        if (!strcmp(F(c->row, "phase"), "serve") && !strstr(c->config, "/bmax/"))
            for (size_t k = 0; k < R->ncosts && !c->sweep_point; k++)
                c->sweep_point = !strcmp(R->costs[k].workload, c->workload) &&
                                 strstr(R->costs[k].config, "/bmax/") &&
                                 !strcmp(F(R->costs[k].row, "target"), F(c->row, "target"));
    }
    /* per workload: the cheapest row, the baseline's cheapest, and the same within the
     * latency limits; the total-token cost of a serving run ranks like its output cost,
     * so only the output cost is ranked */
    for (size_t i = 0; i < R->ncosts; i++) {
        const struct cost *c = &R->costs[i];
        struct wsum *w;
        bool ok;
        if (!strcmp(c->metric, "usd_per_mtok_total"))
            continue;
        w = ws_of(R, c);
        if (!w) {
            w = &R->ws[R->nws++];
            memset(w, 0, sizeof *w);
            w->workload = c->workload;
            w->metric = c->metric;
            w->base_usd = w->base_ok_usd = NAN;
            w->serve = !strcmp(F(c->row, "phase"), "serve");
        }
        ok = w->serve && tb_cost_meets(c->ttft, c->tpot, o->ttft_limit_ms, o->tpot_limit_ms);
        if (positive(c->usd)) {
            if (!w->best || c->usd < w->best->usd)
                w->best = c;
            if (ok && (!w->best_ok || c->usd < w->best_ok->usd))
                w->best_ok = c;
        }
        if (positive(c->base_usd) && !strcmp(F(c->row, "target"), R->baseline)) {
            if (!w->base || c->base_usd < w->base_usd) {
                w->base = c;
                w->base_usd = c->base_usd;
            }
            if (ok && (!w->base_ok || c->base_usd < w->base_ok_usd)) {
                w->base_ok = c;
                w->base_ok_usd = c->base_usd;
            }
        }
    }
    return 0;
}

static int build_costs(struct report *R, char *err, size_t errlen)
{
    R->tp = tb_alloc_array(R->res.nrows + 1, sizeof(*R->tp));
    R->costs = tb_alloc_array(R->res.nrows + 1, sizeof(*R->costs));
    if (!R->tp || !R->costs)
        return tb_err(err, errlen, "out of memory");
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *x = &R->res.rows[i];
        const char *m = tb_report_cost_metric(F(x, "metric"));
        struct cost *c;
        if (!m)
            continue;
        c = &R->costs[R->ncosts++];
        memset(c, 0, sizeof *c);
        c->row = x;
        c->metric = m;
        c->images = !strcmp(m, "usd_per_kimage");
        c->price = target_price(R, F(x, "target"), err, errlen);
        if (!c->price)
            return -1;
        c->usd = c->usd_min = c->usd_max = c->tokens_per_usd = NAN;
        if (c->price->c.have) {
            /* a run on several instances is charged all of them, a run on part of an
             * instance's chips that share (one GPU of a p5.48xlarge's 8: 1/8) */
            double h = c->price->c.usd_per_hour * charged(x, c->price);
            /* per million tokens, or per thousand images */
            double per = c->images ? 1e3 : 1e6;
            c->usd = tb_cost_usd_per(h, x->value, per);
            /* the fastest repetition is the cheapest */
            c->usd_min = tb_cost_usd_per(h, x->max, per);
            c->usd_max = tb_cost_usd_per(h, x->min, per);
            c->tokens_per_usd = x->value * 3600.0 / h;
            R->npriced++;
        }
        if (!c->price->ref)
            c->price->ref = ++R->nrefs;
    }
    return rank_costs(R, err, errlen);
}

/* ---- labels ---- */

static void shape_of(const struct tb_result *x, char *buf, size_t len)
{
    const char *b = F(x, "batch"), *in = F(x, "seq_in"), *out = F(x, "seq_out");
    bool train = !strcmp(F(x, "phase"), "train");
    size_t used = 0;
    buf[0] = '\0';
    if (*b)
        used += (size_t)snprintf(buf + used, len - used, "b%s", b);
    if (*in && used < len)
        used += (size_t)snprintf(buf + used, len - used, "%s%s%s", used ? " " : "",
                                 train ? "seq" : "in", in);
    if (*out && used < len)
        used += (size_t)snprintf(buf + used, len - used, "%sout%s", used ? " " : "", out);
    /* diffusion: resolution and steps (empty for the model's defaults) */
    if (*F(x, "resolution") && used < len)
        used +=
            (size_t)snprintf(buf + used, len - used, "%s%spx", used ? " " : "", F(x, "resolution"));
    if (*F(x, "steps") && used < len)
        used +=
            (size_t)snprintf(buf + used, len - used, "%s%s steps", used ? " " : "", F(x, "steps"));
    /* a precision other than the engines' own (fp32 CPU, bf16 GPU and model) tells apart
     * runs that are otherwise alike: the GPU's fp8 rows beside its bf16 ones */
    const char *p = F(x, "precision");
    if (*p && strcmp(p, "fp32") && strcmp(p, "bf16") && used < len)
        snprintf(buf + used, len - used, "%s%s", used ? " " : "", p);
}

/* Chart labels: "model phase shape" and "target, provenance". */
static void run_label(const struct tb_result *x, char *buf, size_t len, char *buf2, size_t len2)
{
    char shape[96];
    shape_of(x, shape, sizeof shape);
    snprintf(buf, len, "%s %s%s%s", F(x, "model"), F(x, "phase"), *shape ? " " : "", shape);
    snprintf(buf2, len2, "%s, %s", F(x, "target"), tb_provenance_to_string(x->prov));
    for (char *s = buf; *s; s++)
        if (*s == '\t' || *s == '\n' || *s == '\r')
            *s = ' ';
    for (char *s = buf2; *s; s++)
        if (*s == '\t' || *s == '\n' || *s == '\r')
            *s = ' ';
}

/* Distinct values of a column over the rows of one provenance (-1: all), joined. */
static void distinct(const struct report *R, int prov, const char *col, char *buf, size_t len)
{
    size_t used = 0, shown = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < R->res.nrows && used < len; i++) {
        const char *v = F(&R->res.rows[i], col);
        bool seen = false;
        if ((prov >= 0 && (int)R->res.rows[i].prov != prov) || !*v)
            continue;
        for (size_t k = 0; k < i && !seen; k++)
            seen = (prov < 0 || (int)R->res.rows[k].prov == prov) &&
                   !strcmp(F(&R->res.rows[k], col), v);
        if (seen)
            continue;
        if (shown == 4) {
            snprintf(buf + used, len - used, "; ...");
            break;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%s", shown ? "; " : "", v);
        shown++;
    }
}

static void time_span(const struct report *R, enum tb_provenance prov, char *buf, size_t len)
{
    const char *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < R->res.nrows; i++) {
        const char *v = F(&R->res.rows[i], "timestamp");
        if (R->res.rows[i].prov != prov || !*v)
            continue;
        if (!lo || strcmp(v, lo) < 0)
            lo = v;
        if (!hi || strcmp(v, hi) > 0)
            hi = v;
    }
    if (!lo)
        snprintf(buf, len, "not recorded");
    else if (!strcmp(lo, hi))
        snprintf(buf, len, "%s", lo);
    else
        snprintf(buf, len, "%s to %s", lo, hi);
}

/* Counters column of measured rows: "unavailable: why" reasons, or the events read. */
static void counters_status(const struct report *R, char *buf, size_t len)
{
    char reasons[512];
    const char *recorded = NULL;
    size_t nrec = 0;
    reasons[0] = '\0';
    for (size_t i = 0; i < R->res.nrows; i++) {
        const char *v = F(&R->res.rows[i], "counters");
        if (R->res.rows[i].prov != TB_PROV_MEASURED || !*v)
            continue;
        if (!strncmp(v, "unavailable", 11)) {
            if (!strstr(reasons, v) && strlen(reasons) + strlen(v) + 3 < sizeof reasons)
                snprintf(reasons + strlen(reasons), sizeof reasons - strlen(reasons), "%s%s",
                         *reasons ? "; " : "", v);
        } else {
            recorded = recorded ? recorded : v;
            nrec++;
        }
    }
    if (recorded) {
        size_t used = (size_t)snprintf(buf, len, "recorded in %zu rows (events:", nrec);
        for (const char *s = recorded; *s && used < len;) {
            size_t n = strcspn(s, "=;");
            used += (size_t)snprintf(buf + used, len - used, " %.*s", (int)n, s);
            s += n;
            s += strcspn(s, ";");
            if (*s == ';')
                s++;
        }
        if (used < len)
            used += (size_t)snprintf(buf + used, len - used, ")");
        if (*reasons && used < len)
            snprintf(buf + used, len - used, "; %s", reasons);
    } else {
        snprintf(buf, len, "%s", *reasons ? reasons : "not recorded");
    }
}

/* ---- charts ---- */

static int phase_rank(const char *phase)
{
    static const char *const order[] = {"prefill", "decode", "serve", "train", "denoise"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(phase, order[i]))
            return i;
    return 5;
}

static int metric_rank(const char *m)
{
    static const char *const order[] = {"usd_per_mtok_in", "usd_per_mtok_out", "usd_per_mtok_total",
                                        "usd_per_mtok_train"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(m, order[i]))
            return i;
    return 4;
}

struct bar {
    char label[160];  /* first line: model phase shape */
    char label2[160]; /* second line: target, provenance */
    char group[200];  /* legend entry: one word */
    int rank;
    double value, min, max;
};

static int path_in(char *buf, size_t len, const char *dir, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Whether the space-separated list holds word. */
static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *s = list; *s;) {
        size_t k = strcspn(s, " ");
        if (k == n && !strncmp(s, word, n))
            return true;
        s += k;
        s += strspn(s, " ");
    }
    return false;
}

static void fmt_tsv(FILE *f, double v)
{
    if (isnan(v))
        fputs("NaN", f);
    else
        fprintf(f, "%.10g", v);
}

/* Run script on data for a new chart called name (SVG, and PNG when png_ok), with the
 * script's arguments after the format; reads the SVG back into R->charts. Returns 0, 1
 * when gnuplot is missing (note added), -1 on failure. */
static int draw_file(struct report *R, const char *script, const char *name, const char *caption,
                     const char *data, const char *const *args, size_t nargs, bool png_ok,
                     char *err, size_t errlen)
{
    struct chart *ch;
    char out[4400], file[96];
    const char *argv[8];
    size_t len;
    int r;
    if (R->ncharts == MAX_CHARTS || nargs + 1 > sizeof argv / sizeof argv[0])
        return tb_err(err, errlen, "too many charts");
    ch = &R->charts[R->ncharts];
    memset(ch, 0, sizeof *ch);
    snprintf(ch->name, sizeof ch->name, "%s", name);
    snprintf(ch->caption, sizeof ch->caption, "%s", caption);
    for (size_t i = 0; i < nargs; i++)
        argv[i + 1] = args[i];
    for (int fmt = 0; fmt < 2; fmt++) {
        const char *ext = fmt ? "png" : "svg";
        if (fmt == 1 && !png_ok)
            break;
        argv[0] = ext;
        snprintf(file, sizeof file, "%s.%s", name, ext);
        if (path_in(out, sizeof out, R->tmpdir, file) != 0)
            return tb_err(err, errlen, "path too long: '%s'", R->tmpdir);
        r = tb_plot_run(script, data, out, argv, nargs + 1, err, errlen);
        if (r == TB_PLOT_MISSING) {
            add_note(R, "charts not drawn: %s", err);
            free(ch->svg);
            return 1;
        }
        if (r != TB_PLOT_OK || (fmt == 0 && tb_read_file(out, &ch->svg, &len, err, errlen) != 0)) {
            free(ch->svg);
            return -1;
        }
        if (fmt == 1)
            ch->png = true;
    }
    R->ncharts++;
    return 0;
}

/* Draw horizontal bars (reports/hbars.gp through script) as chart name. */
static int draw(struct report *R, const char *script, const char *name, const char *caption,
                struct bar *bars, size_t n, const char *title, bool png_ok, char *err,
                size_t errlen)
{
    char data[4400], groups[512] = "", height[16], file[96];
    const char *scale = "linear";
    double lo = INFINITY, hi = 0;
    FILE *f = NULL;

    /* stable sort by group rank, so each group's bars stay together in file order */
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && bars[k - 1].rank > bars[k].rank; k--) {
            struct bar t = bars[k];
            bars[k] = bars[k - 1];
            bars[k - 1] = t;
        }
    snprintf(file, sizeof file, "%s.tsv", name);
    if (path_in(data, sizeof data, R->tmpdir, file) != 0)
        return tb_err(err, errlen, "path too long: '%s'", R->tmpdir);
    f = fopen(data, "w");
    if (!f)
        return tb_err(err, errlen, "cannot write '%s': %s", data, strerror(errno));
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s\t%s\t", bars[i].label, bars[i].group);
        fmt_tsv(f, bars[i].value);
        fputc('\t', f);
        fmt_tsv(f, bars[i].min);
        fputc('\t', f);
        fmt_tsv(f, bars[i].max);
        fprintf(f, "\t%s\n", bars[i].label2);
        if (!has_word(groups, bars[i].group) &&
            strlen(groups) + strlen(bars[i].group) + 2 < sizeof groups)
            snprintf(groups + strlen(groups), sizeof groups - strlen(groups), "%s%s",
                     *groups ? " " : "", bars[i].group);
        lo = fmin(lo, bars[i].value);
        hi = fmax(hi, bars[i].value);
    }
    if (fclose(f) != 0)
        return tb_err(err, errlen, "cannot write '%s': %s", data, strerror(errno));
    if (lo > 0 && hi / lo > 30)
        scale = "log";
    /* 450 pixels hold 8 bars; more bars get taller charts, up to 200 bars' worth */
    snprintf(height, sizeof height, "%d", 450 + 34 * (int)(n <= 8 ? 0 : n > 200 ? 192 : n - 8));
    {
        const char *args[] = {title, groups, height, scale};
        return draw_file(R, script, name, caption, data, args, 4, png_ok, err, errlen);
    }
}

/* The models of the report for a chart title: their names, or how many when the
 * names would not fit on the title line. */
static void models_of(const struct report *R, char *buf, size_t len)
{
    distinct(R, -1, "model", buf, len);
    if (strlen(buf) > 48) {
        int n = 1;
        for (const char *p = buf; *p; p++)
            n += *p == ';';
        snprintf(buf, len, "%d models", n);
    }
}

/* A workload's model and phase as one word for a chart legend: "llama-3.1-8b/serve". */
static void workload_word(const struct cost *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", F(c->row, "model"), F(c->row, "phase"));
    for (char *p = buf; *p; p++)
        if (*p == ' ' || *p == '\t')
            *p = '_';
}

/* A token count in words: "1 trillion", "300 billion", "5e+06". */
static const char *tokens_text(double n, char *buf, size_t len)
{
    if (n >= 1e12)
        snprintf(buf, len, "%.4g trillion", n / 1e12);
    else if (n >= 1e9)
        snprintf(buf, len, "%.4g billion", n / 1e9);
    else if (n >= 1e6)
        snprintf(buf, len, "%.4g million", n / 1e6);
    else
        snprintf(buf, len, "%.4g", n);
    return buf;
}

/* The cheapest priced row of each (workload, target) pair, for the by-target charts;
 * the serving total-token cost ranks like the output cost and is left out. */
static bool cheapest_of_target(const struct report *R, const struct cost *c)
{
    if (!positive(c->usd) || !strcmp(c->metric, "usd_per_mtok_total"))
        return false;
    for (size_t k = 0; k < R->ncosts; k++) {
        const struct cost *o = &R->costs[k];
        if (o != c && positive(o->usd) && !strcmp(o->metric, c->metric) &&
            !strcmp(o->workload, c->workload) &&
            !strcmp(F(o->row, "target"), F(c->row, "target")) &&
            (o->usd < c->usd || (o->usd == c->usd && o < c)))
            return false;
    }
    return true;
}

/* Throughput against interactivity for one serving workload: tokens/s per chip against
 * tokens/s per user, one line per target through its batch sweep, each point labelled
 * with its cost per million output tokens. */
static int draw_interactivity(struct report *R, const struct wsum *w, int k, bool png_ok, char *err,
                              size_t errlen)
{
    char data[4400], file[96], name[48], targets[1024] = "", title[400], caption[400];
    size_t npoints = 0;
    FILE *f;
    snprintf(name, sizeof name, "interactivity-%d", k);
    snprintf(file, sizeof file, "%s.tsv", name);
    if (path_in(data, sizeof data, R->tmpdir, file) != 0)
        return tb_err(err, errlen, "path too long: '%s'", R->tmpdir);
    f = fopen(data, "w");
    if (!f)
        return tb_err(err, errlen, "cannot write '%s': %s", data, strerror(errno));
    /* one data block per target (gnuplot "index"), points in order of interactivity */
    for (size_t i = 0; i < R->ncosts; i++) {
        const char *t = F(R->costs[i].row, "target");
        bool priced = false;
        size_t n = 0;
        if (!first_of_target(R, i, w->workload, w->metric))
            continue;
        for (size_t j = i; j < R->ncosts; j++) {
            const struct cost *c = &R->costs[j];
            if (!of_workload(c, w->workload, w->metric) || strcmp(F(c->row, "target"), t) ||
                !positive(c->per_user) || !positive(c->per_chip))
                continue;
            fprintf(f, "%.10g\t%.10g\t", c->per_user, c->per_chip);
            if (positive(c->usd))
                fprintf(f, "$%.3g\t%s\n", c->usd, F(c->row, "batch"));
            else
                fprintf(f, "\t%s\n", F(c->row, "batch"));
            priced |= positive(c->usd);
            n++;
        }
        if (n) {
            fputs("\n\n", f);
            snprintf(targets + strlen(targets), sizeof targets - strlen(targets), "%s%s%s",
                     *targets ? " " : "", t, priced ? "" : "(no-price)");
            npoints += n;
        }
    }
    if (fclose(f) != 0)
        return tb_err(err, errlen, "cannot write '%s': %s", data, strerror(errno));
    if (npoints < 2)
        return 0;
    snprintf(title, sizeof title, "Throughput vs interactivity: %s", w->workload);
    snprintf(caption, sizeof caption,
             "Throughput per chip against output tokens/s per user, %s: one line per target "
             "through its batch sweep, each point labelled with its USD per million output tokens",
             w->workload);
    {
        const char *args[] = {title, targets};
        return draw_file(R, "interactivity", name, caption, data, args, 2, png_ok, err, errlen);
    }
}

static int draw_charts(struct report *R, char *err, size_t errlen)
{
    struct bar *bars = tb_alloc_array(R->res.nrows + 1, sizeof(*bars));
    char why[512], models[256], title[400], caption[400];
    bool png_ok;
    size_t n = 0;
    int rc = -1, r, k = 0;

    if (!bars)
        return tb_err(err, errlen, "out of memory");
    png_ok = tb_plot_has_terminal("pngcairo", why, sizeof why);
    models_of(R, models, sizeof models);

    /* throughput: every *_tokens_per_s row, whatever its provenance; a serving run's
     * total (prompt + output) beside its output would repeat its label, so the chart
     * shows the output and the tables both; a batch sweep shows its "max" run */
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *x = &R->res.rows[i];
        bool sweep = false;
        if (!tb_result_is_token_rate(F(x, "metric")) ||
            !strcmp(F(x, "metric"), "total_tokens_per_s"))
            continue;
        for (size_t j = 0; j < R->ncosts && !sweep; j++)
            sweep = R->costs[j].row == x && R->costs[j].sweep_point;
        if (sweep)
            continue;
        run_label(x, bars[n].label, sizeof bars[n].label, bars[n].label2, sizeof bars[n].label2);
        snprintf(bars[n].group, sizeof bars[n].group, "%s", F(x, "phase"));
        bars[n].rank = phase_rank(bars[n].group);
        bars[n].value = x->value;
        bars[n].min = x->min;
        bars[n].max = x->max;
        n++;
    }
    if (n == 0) {
        add_note(R, "no throughput chart: no *_tokens_per_s rows in the results");
    } else {
        snprintf(title, sizeof title, "Throughput by run: %s", models);
        r = draw(R, "throughput", "throughput",
                 "Throughput by run (tokens/s, median; whisker: min-max; serving at the "
                 "throughput-maximising batch)",
                 bars, n, title, png_ok, err, errlen);
        if (r != 0) {
            rc = r < 0 ? -1 : 0;
            goto out;
        }
    }

    /* cost per million tokens by target and workload: each target's cheapest
     * configuration of each workload */
    n = 0;
    for (size_t i = 0; i < R->ncosts; i++) {
        const struct cost *c = &R->costs[i];
        if (c->images || !cheapest_of_target(R, c))
            continue;
        run_label(c->row, bars[n].label, sizeof bars[n].label, bars[n].label2,
                  sizeof bars[n].label2);
        snprintf(bars[n].group, sizeof bars[n].group, "%s", c->metric);
        bars[n].rank = metric_rank(c->metric);
        bars[n].value = c->usd;
        bars[n].min = c->usd_min;
        bars[n].max = c->usd_max;
        n++;
    }
    if (n == 0) {
        add_note(R, "no cost chart: no throughput row has a price (%s)",
                 R->host.have ? "no host rows" : R->host.why);
    } else {
        snprintf(title, sizeof title, "Cost per million tokens by target and workload: %s", models);
        if (draw(R, "cost", "cost",
                 "Cost per million tokens by target and workload (USD; each target's cheapest "
                 "configuration; whisker: min-max of the repetitions)",
                 bars, n, title, png_ok, err, errlen) < 0)
            goto out;
    }

    /* price-performance against the baseline, per workload and target */
    n = 0;
    for (size_t i = 0; i < R->ncosts; i++) {
        const struct cost *c = &R->costs[i];
        const struct wsum *w = NULL;
        if (!cheapest_of_target(R, c))
            continue;
        w = ws_of(R, c);
        if (!w || !positive(w->base_usd))
            continue;
        run_label(c->row, bars[n].label, sizeof bars[n].label, bars[n].label2,
                  sizeof bars[n].label2);
        workload_word(c, bars[n].group, sizeof bars[n].group);
        bars[n].rank = (int)(w - R->ws);
        bars[n].value = tb_cost_price_perf(w->base_usd, c->usd);
        bars[n].min = bars[n].max = NAN;
        n++;
    }
    if (n > 0) {
        snprintf(title, sizeof title, "Price-performance against %s on-demand (higher is better)",
                 R->baseline);
        snprintf(caption, sizeof caption,
                 "Price-performance: the baseline's cost (%s, on-demand, its cheapest "
                 "configuration) over each target's cheapest, per workload; 2x = half the cost",
                 R->baseline);
        if (draw(R, "priceperf", "priceperf", caption, bars, n, title, png_ok, err, errlen) < 0)
            goto out;
    } else {
        add_note(R, "no price-performance chart: no workload has a priced %s row (%s)", R->baseline,
                 R->btp.c.have ? "no modeled baseline rows" : R->btp.c.why);
    }

    /* training: cost (and time) to train on N tokens, one colour per model */
    n = 0;
    for (size_t i = 0; i < R->ncosts; i++) {
        const struct cost *c = &R->costs[i];
        double usd, days;
        char used[64];
        if (strcmp(c->metric, "usd_per_mtok_train") || !positive(c->usd))
            continue;
        usd = c->usd * R->o->train_tokens / 1e6;
        days = tb_cost_train_days(R->o->train_tokens, c->row->value);
        run_label(c->row, bars[n].label, sizeof bars[n].label, bars[n].label2,
                  sizeof bars[n].label2);
        charged_text(c->row, c->price, used, sizeof used);
        snprintf(bars[n].label2, sizeof bars[n].label2, "%s, %.3g days on %s, %s",
                 F(c->row, "target"), days, used, tb_provenance_to_string(c->row->prov));
        snprintf(bars[n].group, sizeof bars[n].group, "%s", F(c->row, "model"));
        bars[n].rank = 0;
        for (size_t j = 0; j < n; j++)
            if (!strcmp(bars[j].group, bars[n].group)) {
                bars[n].rank = bars[j].rank;
                break;
            } else if (bars[j].rank >= bars[n].rank) {
                bars[n].rank = bars[j].rank + 1;
            }
        bars[n].value = usd;
        bars[n].min = bars[n].max = NAN;
        n++;
    }
    if (n > 0) {
        char tok[48];
        snprintf(title, sizeof title, "Cost to train on %s tokens (time in the labels)",
                 tokens_text(R->o->train_tokens, tok, sizeof tok));
        snprintf(caption, sizeof caption,
                 "Cost in USD and time in days to train on %s tokens at each run's "
                 "throughput and price (instances, or the share of one, as in the run)",
                 tok);
        if (draw(R, "train", "train", caption, bars, n, title, png_ok, err, errlen) < 0)
            goto out;
    }

    /* images: each target's cheapest configuration per image workload */
    n = 0;
    for (size_t i = 0; i < R->ncosts; i++) {
        const struct cost *c = &R->costs[i];
        if (!c->images || !cheapest_of_target(R, c))
            continue;
        run_label(c->row, bars[n].label, sizeof bars[n].label, bars[n].label2,
                  sizeof bars[n].label2);
        snprintf(bars[n].group, sizeof bars[n].group, "%s", c->metric);
        bars[n].rank = 0;
        bars[n].value = c->usd;
        bars[n].min = c->usd_min;
        bars[n].max = c->usd_max;
        n++;
    }
    if (n > 0) {
        snprintf(title, sizeof title, "Cost per thousand images by target and model");
        if (draw(R, "images", "images",
                 "Cost per thousand images by target and model (USD; whisker: min-max)", bars, n,
                 title, png_ok, err, errlen) < 0)
            goto out;
    }

    /* throughput against interactivity, one chart per serving workload with a sweep */
    for (size_t i = 0; i < R->nws; i++)
        if (R->ws[i].serve && draw_interactivity(R, &R->ws[i], ++k, png_ok, err, errlen) < 0)
            goto out;
    if (!png_ok && R->ncharts)
        add_note(R, "no PNG copies of the charts: %s", why);
    rc = 0;
out:
    free(bars);
    return rc;
}

static void doc_figure(struct tb_doc *d, const struct chart *ch, int which)
{
    tb_sb_puts(&d->md, "![");
    tb_sb_md(&d->md, ch->caption);
    tb_sb_printf(&d->md, "](%s.svg)", ch->name);
    if (ch->png)
        tb_sb_printf(&d->md, " (PNG: [%s.png](%s.png))", ch->name, ch->name);
    tb_sb_puts(&d->md, "\n\n");
    tb_sb_puts(&d->html, "<figure>\n");
    tb_doc_inline_svg(&d->html, ch->svg, which, ch->caption);
    tb_sb_puts(&d->html, "<figcaption>");
    tb_sb_html(&d->html, ch->caption);
    tb_sb_printf(&d->html, " (files: %s.svg", ch->name);
    if (ch->png)
        tb_sb_printf(&d->html, ", %s.png", ch->name);
    tb_sb_puts(&d->html, ")</figcaption>\n</figure>\n");
}

/* ---- the report text ---- */

struct metric_def {
    const char *name, *unit, *text;
};

static const struct metric_def METRICS[] = {
    {"ttft_ms", "ms",
     "time to first token: wall time of the prefill of the whole batch of prompts"},
    {"tpot_ms", "ms",
     "time per output token after the first (decode steps only; never includes the time to first "
     "token)"},
    {"e2e_latency_ms", "ms", "end-to-end latency of a request: prompt in to last output token out"},
    {"prefill_tokens_per_s", "tokens/s",
     "prompt tokens processed per second in prefill: batch x seq_in / prefill time"},
    {"decode_tokens_per_s", "tokens/s",
     "output tokens generated per second in decode, all sequences of the batch together"},
    {"output_tokens_per_s", "tokens/s",
     "output tokens per second of a serving run, all requests together"},
    {"total_tokens_per_s", "tokens/s", "prompt plus output tokens per second of a serving run"},
    {"train_tokens_per_s", "tokens/s",
     "training tokens (batch x seq_in) per second of full steps (forward, backward, optimizer), "
     "all chips of the run together"},
    {"train_tokens_per_s_per_chip", "tokens/s",
     "train_tokens_per_s divided by the chips of the run"},
    {"tokens_per_s_per_user", "tokens/s",
     "output tokens per second seen by one request (interactivity)"},
    {"step_time_s", "s", "wall time of one training step (forward, backward, optimizer)"},
    {"gflop_per_s", "GFLOP/s",
     "model FLOPs per second the run achieved; FLOPs counted from the workload's shapes "
     "(tb_flops.h: 2 per multiply-add of every matrix product, causal attention counted once, "
     "training = 3 x forward), the count the performance model uses"},
    {"gbyte_per_s", "GB/s",
     "minimum bytes a decode step must read (every weight once plus the KV cache) per second of "
     "decode"},
    {"mfu", "fraction",
     "model FLOPs utilisation: model FLOPs / (time x dense peak of the precision used, per chip, "
     "from pricing/chips.csv)"},
    {"loss", "nats",
     "training loss (cross-entropy) of the last timed step, a check that training ran"},
    {"avg_power_w", "W",
     "GPU board power over the timed repetitions: NVML's energy counter difference / time"},
    {"j_per_token", "J/token", "GPU energy per token processed: NVML energy / tokens"},
    {"j_per_image", "J/image", "GPU energy per image generated: NVML energy / images"},
    {"device_mem_gib", "GiB",
     "device memory the GPU engine holds for the run (weights, optimizer state, activations, KV "
     "cache), besides the CUDA context and the cuBLASLt workspace"},
    {"images_per_s", "images/s",
     "images generated per second, all chips of the run together: text encoders, every "
     "denoising step (both halves with classifier-free guidance) and the VAE decode"},
    {"images_per_s_per_chip", "images/s", "images_per_s divided by the chips of the run"},
    {"s_per_image", "s", "seconds from prompt to decoded image for one image at the batch"},
    {"usd_per_kimage", "USD",
     "cost of one thousand images: usd_per_hour / (images_per_s x 3600) x 10^3"},
    {"usd_per_mtok_in", "USD",
     "cost of one million prompt tokens in prefill: usd_per_hour / (prefill_tokens_per_s x 3600) x "
     "10^6"},
    {"usd_per_mtok_out", "USD",
     "cost of one million output tokens: usd_per_hour / (decode_tokens_per_s or "
     "output_tokens_per_s x 3600) x 10^6"},
    {"usd_per_mtok_train", "USD",
     "cost of training on one million tokens: usd_per_hour / (train_tokens_per_s x 3600) x 10^6"},
    {"usd_per_mtok_total", "USD",
     "cost of one million prompt plus output tokens: usd_per_hour / (total_tokens_per_s x 3600) x "
     "10^6"},
    {"tokens_per_usd", "tokens",
     "tokens processed for one US dollar: tokens_per_s x 3600 / usd_per_hour"},
};

static const struct metric_def *metric_def(const char *name)
{
    for (size_t i = 0; i < sizeof METRICS / sizeof METRICS[0]; i++)
        if (!strcmp(METRICS[i].name, name))
            return &METRICS[i];
    return NULL;
}

/* Dollars as the table has them, with at least cents: 21.50, 1.34375, 63.296. */
static const char *fmt_usd(double v, char *buf, size_t len)
{
    if (fabs(v * 100 - round(v * 100)) < 1e-9)
        snprintf(buf, len, "%.2f", v);
    else
        snprintf(buf, len, "%.10g", v);
    return buf;
}

static void price_text(const struct tb_price_choice *c, char *buf, size_t len)
{
    char h[32];
    if (!c->have) {
        snprintf(buf, len, "no price: %s", c->why);
        return;
    }
    if (c->line)
        snprintf(buf, len, "$%s/h: %s, %s, %s, as of %s (prices.csv line %ld); source: %s",
                 fmt_usd(c->usd_per_hour, h, sizeof h), c->instance, c->region, c->purchase,
                 c->as_of, c->line, c->source);
    else
        snprintf(buf, len, "$%s/h: %s%s%s%s%s, %s, given %s", fmt_usd(c->usd_per_hour, h, sizeof h),
                 c->instance, *c->region ? ", " : "", c->region, *c->purchase ? ", " : "",
                 c->purchase, c->source, c->as_of);
}

static void write_context(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"What", "Value"};
    char v[1024], w[1024], price[1200];
    const char *cells[2];
    size_t nm = R->res.nprov[TB_PROV_MEASURED];

    tb_doc_h(d, 2, "Where, when, what");
    tb_doc_table(d, "tt", head);
#define ROW(k, val)                                                                                \
    do {                                                                                           \
        cells[0] = (k);                                                                            \
        cells[1] = (val);                                                                          \
        tb_doc_row(d, cells);                                                                      \
    } while (0)
    distinct(R, -1, "model", v, sizeof v);
    ROW("Models", v);
    snprintf(w, sizeof w, "%zu measured, %zu modeled, %zu published", nm,
             R->res.nprov[TB_PROV_MODELED], R->res.nprov[TB_PROV_PUBLISHED]);
    ROW("Result rows", w);
    if (nm) {
        distinct(R, TB_PROV_MEASURED, "host", v, sizeof v);
        ROW("Host (measured rows)", *v ? v : "not recorded");
        time_span(R, TB_PROV_MEASURED, v, sizeof v);
        ROW("Measured", v);
        distinct(R, TB_PROV_MEASURED, "commit", v, sizeof v);
        ROW("trnbench commit", *v ? v : "not recorded");
        distinct(R, TB_PROV_MEASURED, "compiler", v, sizeof v);
        ROW("Compiler", *v ? v : "not recorded");
        distinct(R, TB_PROV_MEASURED, "cflags", v, sizeof v);
        ROW("Compiler flags", *v ? v : "not recorded");
        distinct(R, TB_PROV_MEASURED, "blas", v, sizeof v);
        ROW("BLAS", *v ? v : "not recorded");
        counters_status(R, v, sizeof v);
        ROW("Hardware counters", v);
    }
    price_text(&R->host, price, sizeof price);
    ROW("Price of the host", price);
    snprintf(w, sizeof w, "%s by trnbench %s", R->now, tb_version_commit());
    ROW("Report written", w);
#undef ROW
    tb_doc_table_end(d);
}

static void write_runs(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"Provenance", "Target", "Model", "Phase", "Precision",
                                       "Shape",      "Metric", "Value", "Unit",  "Spread (min-max)",
                                       "n"};
    tb_doc_h(d, 2, "Runs");
    tb_doc_p(d, NULL,
             "One row per metric. Measured values are the median of n timed repetitions; "
             "the spread is the fastest to the slowest of them. Rows that were not "
             "measured here say so in the Provenance column.");
    tb_doc_table(d, "ptttttcntnn", head);
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *x = &R->res.rows[i];
        char shape[96], val[32], lo[32], hi[32], spread[80], n[24];
        const char *cells[11];
        shape_of(x, shape, sizeof shape);
        fmt_num(x->value, val, sizeof val);
        spread[0] = '\0';
        if (!isnan(x->min) && !isnan(x->max))
            snprintf(spread, sizeof spread, "%s - %s", fmt_num(x->min, lo, sizeof lo),
                     fmt_num(x->max, hi, sizeof hi));
        n[0] = '\0';
        if (x->n >= 0)
            snprintf(n, sizeof n, "%ld", x->n);
        cells[0] = tb_provenance_to_string(x->prov);
        cells[1] = F(x, "target");
        cells[2] = F(x, "model");
        cells[3] = F(x, "phase");
        cells[4] = F(x, "precision");
        cells[5] = shape;
        cells[6] = F(x, "metric");
        cells[7] = val;
        cells[8] = F(x, "unit");
        cells[9] = spread;
        cells[10] = n;
        tb_doc_row(d, cells);
    }
    tb_doc_table_end(d);
}

/* Where a row's number comes from, for a tooltip: provenance, where, when, what. */
static void prov_tip(const struct tb_result *x, char *buf, size_t len)
{
    if (x->prov == TB_PROV_MEASURED)
        snprintf(buf, len,
                 "measured on %s (%s executor) at %s by trnbench %s; median of %ld timed "
                 "repetitions after %ld warm-up; %s line %ld",
                 F(x, "host"), F(x, "executor"), F(x, "timestamp"), F(x, "commit"), x->n,
                 x->warmup < 0 ? 0 : x->warmup, x->t->path, tb_result_line(x));
    else
        snprintf(buf, len, "%s: %s%s%.300s; %s line %ld", tb_provenance_to_string(x->prov),
                 F(x, "source"), *F(x, "notes") ? "; " : "", F(x, "notes"), x->t->path,
                 tb_result_line(x));
}

/* A cost cell's tooltip: the row's provenance and the price used. */
static void cost_tip(const struct cost *c, char *buf, size_t len)
{
    char prov[900], price[1200], used[64], share[160] = "";
    double h = charged(c->row, c->price);
    prov_tip(c->row, prov, sizeof prov);
    price_text(&c->price->c, price, sizeof price);
    charged_text(c->row, c->price, used, sizeof used);
    if (h != (double)c->row->instances)
        snprintf(share, sizeof share, "; charged %.4g of the instance-hour (%s)", h, used);
    snprintf(buf, len, "%s. Price [%d]: %s%s%s%s", prov, c->price->ref, price, share,
             *c->price->flag ? "; " : "", c->price->flag);
}

/* "modeled, price [3]" (Markdown and HTML cells both). */
static void prov_cell(const struct cost *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s, price [%d]%s", tb_provenance_to_string(c->row->prov), c->price->ref,
             *c->price->flag ? " (flagged)" : "");
}

static const char *unit_of(const char *metric)
{
    return !strcmp(metric, "usd_per_kimage") ? "USD per 1000 images" : "USD per 1M tokens";
}

static void fmt_saving(double usd, double base, char *buf, size_t len)
{
    if (!positive(usd) || !positive(base))
        snprintf(buf, len, "no baseline");
    else
        snprintf(buf, len, "%+.0f%% (%.2fx)", (1.0 - usd / base) * 100.0, base / usd);
}

static void write_summary(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {
        "Workload", "Unit",       "Cheapest target", "Batch",
        "Cost",     "Provenance", "Baseline cost",   "Saving (price-perf)"};
    char lim[160], bh[200];
    size_t nserve = 0;
    tb_doc_h(d, 2, "Summary");
    snprintf(bh, sizeof bh, "%s on-demand", R->baseline);
    if (R->nws == 0) {
        tb_doc_p(d, "note", "No throughput rows: nothing to rank.");
        return;
    }
    tb_doc_p(d, NULL,
             "For each workload, the cheapest target at the prices chosen (%s, %s) and its "
             "saving against the baseline, %s (%s). A saving of +40%% means 40%% less than "
             "the baseline for the same work; the factor in brackets is the price-performance "
             "(baseline cost over this cost). Hover over a number for its provenance; [n] "
             "points to the price table.",
             R->o->region ? R->o->region : "us-east-1",
             R->o->purchase ? R->o->purchase : "on-demand", bh,
             R->btp.c.have ? "its cheapest configuration of the same workload" : R->btp.c.why);
    tb_doc_table(d, "ttttnpnn", head);
    /* priced workloads first, then those without a price, each in results order */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < R->nws; i++) {
            const struct wsum *w = &R->ws[i];
            char usd[32], base[32], sav[64], prov[64], tip[2400], btip[2400];
            const char *cells[8], *tips[8] = {0};
            if ((pass == 0) != (w->best != NULL))
                continue;
            nserve += w->serve;
            cells[0] = w->workload;
            cells[1] = unit_of(w->metric);
            if (!w->best) {
                /* why: the price of the workload's first target */
                const char *why = "";
                for (size_t k = 0; k < R->ncosts && !*why; k++)
                    if (!strcmp(R->costs[k].workload, w->workload))
                        why = R->costs[k].price->c.why;
                snprintf(sav, sizeof sav, "no price");
                cells[2] = sav;
                cells[3] = cells[4] = cells[6] = cells[7] = "";
                cells[5] = why;
                tb_doc_row(d, cells);
                continue;
            }
            fmt_num(w->best->usd, usd, sizeof usd);
            prov_cell(w->best, prov, sizeof prov);
            cost_tip(w->best, tip, sizeof tip);
            base[0] = btip[0] = '\0';
            if (w->base) {
                snprintf(base, sizeof base, "%.4g", w->base_usd);
                prov_tip(w->base->row, btip, sizeof btip);
                snprintf(btip + strlen(btip), sizeof btip - strlen(btip), ". Baseline price [%d]",
                         R->btp.ref);
            }
            fmt_saving(w->best->usd, w->base_usd, sav, sizeof sav);
            cells[2] = F(w->best->row, "target");
            cells[3] = F(w->best->row, "batch");
            cells[4] = usd;
            cells[5] = prov;
            cells[6] = w->base ? base : "no baseline row";
            cells[7] = sav;
            tips[4] = tips[5] = tip;
            tips[6] = btip;
            tb_doc_row_tip(d, cells, tips);
        }
    tb_doc_table_end(d);
    if (!nserve)
        return;
    snprintf(lim, sizeof lim, "TTFT at most %g ms and TPOT at most %g ms", R->o->ttft_limit_ms,
             R->o->tpot_limit_ms);
    tb_doc_p(d, NULL,
             "Serving within latency limits (%s; set with --ttft-ms and --tpot-ms; the "
             "defaults are MLPerf Inference's Llama 2 70B server limits): the cheapest "
             "configuration of the batch sweep that meets both, on any target, against the "
             "baseline's cheapest that does.",
             lim);
    {
        static const char *const lh[] = {
            "Workload",      "Cheapest within limits", "Batch", "TTFT ms",
            "TPOT ms",       "Tokens/s per user",      "Cost",  "Provenance",
            "Baseline cost", "Saving (price-perf)"};
        tb_doc_table(d, "tttnnnnpnn", lh);
        for (size_t i = 0; i < R->nws; i++) {
            const struct wsum *w = &R->ws[i];
            char t1[32], t2[32], t3[32], usd[32], base[32], sav[64], prov[64], tip[2400];
            const char *cells[10], *tips[10] = {0};
            if (!w->serve)
                continue;
            cells[0] = w->workload;
            if (!w->best_ok) {
                cells[1] = "no priced configuration meets the limits";
                for (int k = 2; k < 10; k++)
                    cells[k] = "";
                tb_doc_row(d, cells);
                continue;
            }
            cost_tip(w->best_ok, tip, sizeof tip);
            prov_cell(w->best_ok, prov, sizeof prov);
            snprintf(base, sizeof base, "%.4g", w->base_ok_usd);
            fmt_saving(w->best_ok->usd, w->base_ok_usd, sav, sizeof sav);
            cells[1] = F(w->best_ok->row, "target");
            cells[2] = F(w->best_ok->row, "batch");
            cells[3] = fmt_num(w->best_ok->ttft, t1, sizeof t1);
            cells[4] = fmt_num(w->best_ok->tpot, t2, sizeof t2);
            cells[5] = fmt_num(w->best_ok->per_user, t3, sizeof t3);
            cells[6] = fmt_num(w->best_ok->usd, usd, sizeof usd);
            cells[7] = prov;
            cells[8] = w->base_ok ? base : "baseline misses the limits";
            cells[9] = sav;
            tips[6] = tips[7] = tip;
            tb_doc_row_tip(d, cells, tips);
        }
        tb_doc_table_end(d);
    }
}

/* Per serving workload and target: the cheapest configuration within the limits. */
static void write_limits(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {
        "Workload", "Target",  "Configurations",    "Meeting limits", "Batch",
        "TTFT ms",  "TPOT ms", "Tokens/s per user", "Cost",           "Provenance"};
    bool any = false;
    for (size_t i = 0; i < R->nws && !any; i++)
        any = R->ws[i].serve;
    if (!any)
        return;
    tb_doc_h(d, 2, "Cost under latency limits");
    tb_doc_p(
        d, NULL,
        "Every serving target's cheapest configuration with TTFT at most %g ms and TPOT at "
        "most %g ms (cost in USD per million output tokens). Configurations are the batches of "
        "the results (a suite's batch sweep).",
        R->o->ttft_limit_ms, R->o->tpot_limit_ms);
    tb_doc_table(d, "ttnntnnnnp", head);
    for (size_t i = 0; i < R->nws; i++) {
        const struct wsum *w = &R->ws[i];
        if (!w->serve)
            continue;
        for (size_t j = 0; j < R->ncosts; j++) {
            const struct cost *c = &R->costs[j], *best = NULL;
            const char *t = F(c->row, "target");
            char nc[16], nok[16], t1[32], t2[32], t3[32], usd[32], prov[64], tip[2400];
            const char *cells[10], *tips[10] = {0};
            int nconf = 0, ok = 0;
            if (!first_of_target(R, j, w->workload, w->metric))
                continue;
            for (size_t k = j; k < R->ncosts; k++) {
                const struct cost *o = &R->costs[k];
                if (!of_workload(o, w->workload, w->metric) || strcmp(F(o->row, "target"), t))
                    continue;
                nconf++;
                if (!tb_cost_meets(o->ttft, o->tpot, R->o->ttft_limit_ms, R->o->tpot_limit_ms))
                    continue;
                ok++;
                if (positive(o->usd) && (!best || o->usd < best->usd))
                    best = o;
            }
            snprintf(nc, sizeof nc, "%d", nconf);
            snprintf(nok, sizeof nok, "%d", ok);
            cells[0] = w->workload;
            cells[1] = t;
            cells[2] = nc;
            cells[3] = nok;
            if (!best) {
                cells[4] = cells[5] = cells[6] = cells[7] = "";
                cells[8] = ok ? "no price" : "none meets";
                cells[9] = ok ? c->price->c.why : "";
                tb_doc_row(d, cells);
                continue;
            }
            cost_tip(best, tip, sizeof tip);
            prov_cell(best, prov, sizeof prov);
            cells[4] = F(best->row, "batch");
            cells[5] = fmt_num(best->ttft, t1, sizeof t1);
            cells[6] = fmt_num(best->tpot, t2, sizeof t2);
            cells[7] = fmt_num(best->per_user, t3, sizeof t3);
            cells[8] = fmt_num(best->usd, usd, sizeof usd);
            cells[9] = prov;
            tips[8] = tips[9] = tip;
            tb_doc_row_tip(d, cells, tips);
        }
    }
    tb_doc_table_end(d);
}

static void write_training(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"Model",    "Target", "Instances",  "Chips",
                                       "Tokens/s", "Days",   "Cost (USD)", "Provenance"};
    bool any = false;
    char tok[48];
    for (size_t i = 0; i < R->ncosts && !any; i++)
        any = !strcmp(R->costs[i].metric, "usd_per_mtok_train");
    if (!any)
        return;
    tb_doc_h(d, 2, "Time and cost to train");
    tb_doc_p(d, NULL,
             "Training on %s tokens (--train-tokens) at each training run's throughput, "
             "with what the run used (its instances, or its share of one): days = tokens / "
             "train_tokens_per_s / "
             "86400; cost = usd_per_mtok_train x tokens / 10^6.",
             tokens_text(R->o->train_tokens, tok, sizeof tok));
    tb_doc_table(d, "ttnnnnnp", head);
    for (size_t i = 0; i < R->ncosts; i++) {
        const struct cost *c = &R->costs[i];
        char inst[64], chips[24], tps[32], days[32], usd[32], prov[64], tip[2400];
        const char *cells[8], *tips[8] = {0};
        if (strcmp(c->metric, "usd_per_mtok_train"))
            continue;
        charged_text(c->row, c->price, inst, sizeof inst);
        snprintf(chips, sizeof chips, "%ld", c->chips);
        cost_tip(c, tip, sizeof tip);
        prov_cell(c, prov, sizeof prov);
        cells[0] = F(c->row, "model");
        cells[1] = F(c->row, "target");
        cells[2] = inst;
        cells[3] = c->chips ? chips : "";
        cells[4] = fmt_num(c->row->value, tps, sizeof tps);
        cells[5] =
            fmt_num(tb_cost_train_days(R->o->train_tokens, c->row->value), days, sizeof days);
        cells[6] = positive(c->usd) ? fmt_num(c->usd * R->o->train_tokens / 1e6, usd, sizeof usd)
                                    : "no price";
        cells[7] = prov;
        tips[4] = tips[5] = tips[6] = tips[7] = tip;
        tb_doc_row_tip(d, cells, tips);
    }
    tb_doc_table_end(d);
}

/* A run's configuration as the GPU executor names both sides: "cuda:CONFIG" for the
 * measured run, "model:INSTANCE/CONFIG/chips1" for the model's prediction of it. */
static bool gpu_pair_key(const struct tb_result *x, char *buf, size_t len)
{
    const char *id = F(x, "run_id"), *target = F(x, "target");
    size_t tl = strlen(target), n;
    if (x->prov == TB_PROV_MEASURED && !strcmp(F(x, "executor"), "cuda") &&
        !strncmp(id, "cuda:", 5)) {
        snprintf(buf, len, "%s", id + 5);
        return true;
    }
    n = strlen(id);
    if (x->prov == TB_PROV_MODELED && !strncmp(id, "model:", 6) && !strncmp(id + 6, target, tl) &&
        id[6 + tl] == '/' && n > 7 + tl + 7 && !strcmp(id + n - 7, "/chips1")) {
        snprintf(buf, len, "%.*s", (int)(n - 7 - 7 - tl), id + 7 + tl);
        return true;
    }
    return false;
}

/* Measured GPU rows beside the model's prediction of the same run on the same chip. */
static void write_model_check(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"Model", "Phase",   "Shape",      "Metric",     "Measured",
                                       "GPU",   "Modeled", "Modeled on", "Model error"};
    bool any = false;
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *x = &R->res.rows[i];
        char key[256], k2[256];
        if (!gpu_pair_key(x, key, sizeof key) || x->prov != TB_PROV_MEASURED)
            continue;
        for (size_t j = 0; j < R->res.nrows; j++) {
            const struct tb_result *y = &R->res.rows[j];
            char shape[96], mv[32], pv[32], e[32], tip[900], ytip[900];
            const char *cells[9], *tips[9] = {0};
            if (y->prov != TB_PROV_MODELED || strcmp(F(y, "metric"), F(x, "metric")) ||
                !gpu_pair_key(y, k2, sizeof k2) || strcmp(key, k2))
                continue;
            if (!any) {
                tb_doc_h(d, 2, "Measured GPU runs against the model");
                tb_doc_p(d, NULL,
                         "Each metric of a run measured on this machine's GPU (executor cuda) "
                         "beside the performance model's prediction of the same run on one "
                         "chip of the same kind; model error = (modeled - measured) / "
                         "measured.");
                tb_doc_table(d, "tttcntntn", head);
                any = true;
            }
            shape_of(x, shape, sizeof shape);
            snprintf(e, sizeof e, "%+.1f%%", (y->value - x->value) / x->value * 100.0);
            prov_tip(x, tip, sizeof tip);
            prov_tip(y, ytip, sizeof ytip);
            cells[0] = F(x, "model");
            cells[1] = F(x, "phase");
            cells[2] = shape;
            cells[3] = F(x, "metric");
            cells[4] = fmt_num(x->value, mv, sizeof mv);
            cells[5] = F(x, "host");
            cells[6] = fmt_num(y->value, pv, sizeof pv);
            cells[7] = F(y, "target");
            cells[8] = x->value != 0 ? e : "";
            tips[4] = tip;
            tips[6] = ytip;
            tb_doc_row_tip(d, cells, tips);
        }
    }
    if (any)
        tb_doc_table_end(d);
}

static void write_cost(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {
        "Provenance",       "Target",     "Model",    "Phase",  "Shape",
        "Throughput (run)", "Instances",  "Per chip", "Metric", "USD per unit",
        "Spread (min-max)", "Price-perf", "Price"};
    tb_doc_h(d, 2, "Cost per million tokens and per thousand images");
    tb_doc_p(d, NULL,
             "usd_per_mtok = usd_per_hour / (tokens_per_s x 3600) x 10^6; usd_per_kimage = "
             "usd_per_hour / (images_per_s x 3600) x 10^3 (the unit is in the metric's name: "
             "Mtok, a million tokens, or kimage, a thousand images). A run is charged "
             "the hourly price of what it used: for rows measured on the host, the whole "
             "price of the host; for rows of an instance type, every instance of the run "
             "(all its chips), or, for a run that used only some of the chips (chips_used: "
             "the GPU executor runs on one GPU of the machine), that share of the "
             "instance-hour, which the Instances column states (1 of 8 GPUs: 1/8 of a "
             "p5.48xlarge's hourly price). Throughput (run) is the whole run's; Per chip "
             "divides it by the chips it used (instances x chips per instance, or "
             "chips_used; a trn2.48xlarge has 16 Trainium2 chips, a p5.48xlarge 8 H100s). "
             "Price-perf is "
             "the baseline's cost (%s, on-demand) of the same configuration over this cost. "
             "The Price column points to the price used, listed under the table.",
             R->baseline);
    if (R->ncosts == 0) {
        tb_doc_p(d, "note",
                 "No throughput rows (*_tokens_per_s, images_per_s) in the results: "
                 "nothing to cost.");
        return;
    }
    tb_doc_table(d, "pttttnnncnnnt", head);
    for (size_t i = 0; i < R->ncosts; i++) {
        const struct cost *c = &R->costs[i];
        char shape[96], tps[40], usd[40], lo[32], hi[32], spread[80], ref[600], inst[64], pc[40],
            pp[32], tip[2400];
        const char *cells[13], *tips[13] = {0};
        shape_of(c->row, shape, sizeof shape);
        fmt_num(c->row->value, tps, sizeof tps);
        strncat(tps, c->images ? " images/s" : " tokens/s", sizeof tps - strlen(tps) - 1);
        charged_text(c->row, c->price, inst, sizeof inst);
        fmt_num(c->per_chip, pc, sizeof pc);
        pp[0] = spread[0] = usd[0] = '\0';
        if (positive(c->perf))
            snprintf(pp, sizeof pp, "%.3gx", c->perf);
        if (!isnan(c->usd)) {
            char u[32];
            snprintf(usd, sizeof usd, "%s", fmt_num(c->usd, u, sizeof u));
            if (!isnan(c->usd_min) && !isnan(c->usd_max))
                snprintf(spread, sizeof spread, "%s - %s", fmt_num(c->usd_min, lo, sizeof lo),
                         fmt_num(c->usd_max, hi, sizeof hi));
            snprintf(ref, sizeof ref, "[%d]%s", c->price->ref, *c->price->flag ? " flagged" : "");
        } else {
            snprintf(ref, sizeof ref, "[%d] no price", c->price->ref);
        }
        cost_tip(c, tip, sizeof tip);
        cells[0] = tb_provenance_to_string(c->row->prov);
        cells[1] = F(c->row, "target");
        cells[2] = F(c->row, "model");
        cells[3] = F(c->row, "phase");
        cells[4] = shape;
        cells[5] = tps;
        cells[6] = inst;
        cells[7] = pc;
        cells[8] = c->metric;
        cells[9] = usd;
        cells[10] = spread;
        cells[11] = pp;
        cells[12] = ref;
        tips[0] = tips[5] = tips[9] = tips[12] = tip;
        tb_doc_row_tip(d, cells, tips);
    }
    tb_doc_table_end(d);
}

/* The prices used: one row per footnote number, with per-instance and per-chip rates
 * (never mixed in one column), the date, the age flag and the source. */
static void write_prices(struct tb_doc *d, const struct report *R)
{
    static const char *const ph[] = {"Price",
                                     "Target",
                                     "USD per instance-hour",
                                     "Chips",
                                     "USD per chip-hour",
                                     "Region",
                                     "Purchase",
                                     "As of",
                                     "Flag",
                                     "Source"};
    tb_doc_h(d, 2, "Prices used");
    tb_doc_p(d, NULL,
             "USD per instance-hour from %s unless given on the command line: the newest row "
             "for the instance, region and purchase model. Prices older than %g days "
             "(--max-price-age) or undated are flagged; a missing price is reported as "
             "missing, never estimated.",
             R->pricing.prices_csv.path, R->o->max_price_age_days);
    tb_doc_table(d, "ttntnttttt", ph);
    for (int ref = 1; ref <= R->nrefs; ref++)
        for (size_t i = 0; i < R->ntp + 1; i++) {
            const struct tprice *t = i < R->ntp ? &R->tp[i] : &R->btp;
            char num[32], h[32], chips[24], pch[32], src[700];
            const char *cells[10];
            if (t->ref != ref)
                continue;
            snprintf(num, sizeof num, "[%d]%s", ref, t == &R->btp ? " baseline" : "");
            snprintf(chips, sizeof chips, "%ld", t->chips);
            h[0] = pch[0] = '\0';
            if (t->c.have) {
                fmt_usd(t->c.usd_per_hour, h, sizeof h);
                if (t->chips > 0)
                    snprintf(pch, sizeof pch, "%.4g", t->c.usd_per_hour / (double)t->chips);
            }
            if (t->c.have && t->c.line)
                snprintf(src, sizeof src, "%s (prices.csv line %ld)", t->c.source, t->c.line);
            else
                snprintf(src, sizeof src, "%s", t->c.have ? t->c.source : t->c.why);
            cells[0] = num;
            cells[1] = t->target;
            cells[2] = t->c.have ? h : "missing";
            cells[3] = t->chips > 0 ? chips : "";
            cells[4] = pch;
            cells[5] = t->c.region;
            cells[6] = t->c.purchase;
            cells[7] = t->c.as_of;
            cells[8] = t->flag;
            cells[9] = src;
            tb_doc_row(d, cells);
        }
    tb_doc_table_end(d);
}

static void write_charts(struct tb_doc *d, const struct report *R)
{
    tb_doc_h(d, 2, "Charts");
    for (int i = 0; i < R->ncharts; i++)
        doc_figure(d, &R->charts[i], i);
    if (*R->notes) {
        char line[1024];
        for (const char *s = R->notes; *s;) {
            size_t n = strcspn(s, "\n");
            snprintf(line, sizeof line, "%.*s", (int)n, s);
            tb_doc_p(d, "note", "Note: %s", line);
            s += n;
            if (*s)
                s++;
        }
    }
}

static void write_definitions(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"Metric", "Unit", "Definition"};
    const char *seen[64];
    size_t nseen = 0;
    tb_doc_h(d, 2, "Metric definitions");
    tb_doc_table(d, "ctt", head);
    /* the results' metrics in order of first appearance, then the cost metrics used */
    for (size_t pass = 0; pass < 2; pass++) {
        size_t n = pass ? R->ncosts : R->res.nrows;
        for (size_t i = 0; i < n && nseen < 64; i++) {
            const char *m = pass ? R->costs[i].metric : F(&R->res.rows[i], "metric");
            const struct metric_def *def = metric_def(m);
            const char *cells[3];
            bool dup = false;
            for (size_t k = 0; k < nseen && !dup; k++)
                dup = !strcmp(seen[k], m);
            if (dup)
                continue;
            seen[nseen++] = m;
            cells[0] = m;
            cells[1] = def ? def->unit : (pass ? "USD" : F(&R->res.rows[i], "unit"));
            cells[2] = def ? def->text : "no definition recorded for this metric";
            tb_doc_row(d, cells);
        }
    }
    tb_doc_table_end(d);
}

static void write_provenance(struct tb_doc *d, const struct report *R)
{
    char a[1024], b[1024], c[1024], e[1024], f[512];
    tb_doc_h(d, 2, "Provenance");
    if (R->res.nprov[TB_PROV_MEASURED]) {
        long nmin = -1, nmax = -1, wmin = -1, wmax = -1;
        for (size_t i = 0; i < R->res.nrows; i++) {
            const struct tb_result *x = &R->res.rows[i];
            if (x->prov != TB_PROV_MEASURED)
                continue;
            if (x->n >= 0) {
                nmin = nmin < 0 || x->n < nmin ? x->n : nmin;
                nmax = x->n > nmax ? x->n : nmax;
            }
            if (x->warmup >= 0) {
                wmin = wmin < 0 || x->warmup < wmin ? x->warmup : wmin;
                wmax = x->warmup > wmax ? x->warmup : wmax;
            }
        }
        distinct(R, TB_PROV_MEASURED, "host", a, sizeof a);
        time_span(R, TB_PROV_MEASURED, b, sizeof b);
        distinct(R, TB_PROV_MEASURED, "commit", c, sizeof c);
        distinct(R, TB_PROV_MEASURED, "executor", e, sizeof e);
        if (nmin < 0)
            snprintf(f, sizeof f, "repetitions not recorded");
        else
            snprintf(f, sizeof f, "%ld-%ld timed repetitions after %ld-%ld warm-up ones", nmin,
                     nmax, wmin < 0 ? 0 : wmin, wmax < 0 ? 0 : wmax);
        tb_doc_p(d, NULL,
                 "measured (%zu row%s): run on %s (%s executor), %s, by trnbench %s; each "
                 "value the median of %s.",
                 R->res.nprov[TB_PROV_MEASURED], R->res.nprov[TB_PROV_MEASURED] == 1 ? "" : "s",
                 *a ? a : "an unrecorded host", *e ? e : "unrecorded", b,
                 *c ? c : "(commit not recorded)", f);
    }
    if (R->res.nprov[TB_PROV_MODELED]) {
        distinct(R, TB_PROV_MODELED, "source", a, sizeof a);
        tb_doc_p(d, NULL, "modeled (%zu row%s): predicted by a performance model, not run: %s.",
                 R->res.nprov[TB_PROV_MODELED], R->res.nprov[TB_PROV_MODELED] == 1 ? "" : "s",
                 *a ? a : "model version not recorded");
    }
    if (R->res.nprov[TB_PROV_PUBLISHED]) {
        distinct(R, TB_PROV_PUBLISHED, "source", a, sizeof a);
        tb_doc_p(d, NULL,
                 "published (%zu row%s): reference figures from elsewhere, not run here: %s.",
                 R->res.nprov[TB_PROV_PUBLISHED], R->res.nprov[TB_PROV_PUBLISHED] == 1 ? "" : "s",
                 *a ? a : "source not recorded");
    }
    {
        size_t used = 0;
        a[0] = '\0';
        for (size_t i = 0; i < R->res.ntables && used < sizeof a; i++)
            used += (size_t)snprintf(a + used, sizeof a - used, "%s%s", i ? ", " : "",
                                     R->res.tables[i].path);
        tb_doc_p(d, NULL,
                 "Results files: %s. Prices: %s (columns and sources in pricing/README.md).", a,
                 R->pricing.prices_csv.path);
    }
}

static const char CSS[] =
    ":root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--head:#f6f8fa}"
    "*{box-sizing:border-box}"
    "body{margin:0 auto;max-width:75rem;padding:1rem 1.25rem;color:var(--fg);background:#fff;"
    "font:16px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif}"
    "h1{font-size:1.6rem;margin:.5rem 0 1rem}"
    "h2{font-size:1.25rem;margin:2rem 0 .75rem;padding-bottom:.25rem;"
    "border-bottom:1px solid var(--line)}"
    ".scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.5rem 0 1rem}"
    "table{border-collapse:collapse;font-size:.9rem}"
    "th,td{border:1px solid var(--line);padding:.3rem .55rem;text-align:left;vertical-align:top}"
    "th{background:var(--head)}"
    ".num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "code{font:.85em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}"
    ".prov{display:inline-block;padding:0 .45rem;border:1px solid;border-radius:.7rem;"
    "font-size:.8rem;white-space:nowrap}"
    ".prov-measured{color:#1a7f37}.prov-modeled{color:#9a6700;border-style:dashed}"
    ".prov-published{color:#0b5cad;border-style:dotted}"
    "figure{margin:1rem 0}figcaption{color:var(--muted);font-size:.9rem}"
    "svg.chart{display:block;width:100%;max-width:800px;height:auto}"
    ".note{color:var(--muted);border-left:3px solid var(--line);padding-left:.6rem}"
    ".lead{color:var(--muted)}"
    "td.tip{text-decoration:underline dotted var(--muted);text-underline-offset:3px}"
    "th{cursor:pointer}"
    "#assessment table{display:block;overflow-x:auto;max-width:100%}"
    "@media (max-width:40rem){body{padding:.5rem .6rem;font-size:15px}"
    "th,td{padding:.2rem .35rem}h1{font-size:1.3rem}}";

/* The tables' sorting (click a heading; numbers sort as numbers) and a self-check a
 * headless browser reads back: how many charts were laid out with content. */
static const char SCRIPT[] =
    "(function(){"
    "function key(td){if(!td)return '';var t=td.textContent.trim();"
    "var n=parseFloat(t.replace(/^[$+]/,'').replace(/,/g,''));"
    "return isNaN(n)?t.toLowerCase():n;}"
    "var hs=document.querySelectorAll('table.sortable th');"
    "for(var i=0;i<hs.length;i++){(function(th){th.tabIndex=0;th.title='Sort by this column';"
    "th.addEventListener('click',function(){var tb=th.closest('table').tBodies[0];"
    "var idx=Array.prototype.indexOf.call(th.parentNode.children,th);"
    "var asc=th.getAttribute('aria-sort')!=='ascending';"
    "var all=th.parentNode.children;for(var "
    "k=0;k<all.length;k++)all[k].removeAttribute('aria-sort');"
    "th.setAttribute('aria-sort',asc?'ascending':'descending');"
    "var rows=Array.prototype.slice.call(tb.rows);"
    "rows.sort(function(a,b){var x=key(a.cells[idx]),y=key(b.cells[idx]);"
    "var r=typeof x===typeof y?(x<y?-1:x>y?1:0):(typeof x==='number'?-1:1);return asc?r:-r;});"
    "for(var k=0;k<rows.length;k++)tb.appendChild(rows[k]);});})(hs[i]);}"
    "var cs=document.querySelectorAll('svg.chart'),n=0;"
    "for(var i=0;i<cs.length;i++){var r=cs[i].getBoundingClientRect();"
    "if(r.width>100&&r.height>100&&cs[i].querySelectorAll('path,rect,polygon,polyline').length>10)"
    "n++;}"
    "document.documentElement.setAttribute('data-charts',cs.length);"
    "document.documentElement.setAttribute('data-charts-drawn',n);"
    "document.documentElement.setAttribute('data-fits',"
    "document.documentElement.scrollWidth<=window.innerWidth+1?'yes':'no');"
    "})();";

static void write_assessment(struct tb_doc *d, const struct report *R)
{
    if (R->assess_md) {
        tb_sb_puts(&d->md, R->assess_md);
        tb_sb_puts(&d->md, "\n");
        tb_sb_puts(&d->html, "<section id=\"assessment\">\n");
        tb_sb_puts(&d->html, R->assess_html);
        tb_sb_puts(&d->html, "</section>\n");
    } else {
        tb_doc_h(d, 2, "Migration assessment");
        tb_doc_p(d, "note", "%s", R->assess_why);
    }
}

static int build_docs(const struct report *R, struct tb_sbuf *md, struct tb_sbuf *html)
{
    struct tb_doc d;
    char models[256], title[400];
    memset(&d, 0, sizeof d);
    models_of(R, models, sizeof models);
    snprintf(title, sizeof title, "trnbench report: %s", models);

    tb_sb_puts(&d.html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                        "<title>");
    tb_sb_html(&d.html, title);
    tb_sb_printf(&d.html, "</title>\n<style>%s</style>\n</head>\n<body>\n", CSS);
    tb_doc_h(&d, 1, title);
    tb_doc_p(&d, "lead",
             "Throughput and cost per million tokens from %zu result rows "
             "(%zu measured, %zu modeled, %zu published); %zu of %zu throughput "
             "rows priced at %s %s prices; baseline %s on-demand. Every number says where it "
             "comes from: measured here, modeled by the performance model, or published.",
             R->res.nrows, R->res.nprov[TB_PROV_MEASURED], R->res.nprov[TB_PROV_MODELED],
             R->res.nprov[TB_PROV_PUBLISHED], R->npriced, R->ncosts,
             R->o->region ? R->o->region : "us-east-1",
             R->o->purchase ? R->o->purchase : "on-demand", R->baseline);
    write_summary(&d, R);
    write_charts(&d, R);
    write_limits(&d, R);
    write_training(&d, R);
    write_model_check(&d, R);
    write_cost(&d, R);
    write_prices(&d, R);
    write_assessment(&d, R);
    write_context(&d, R);
    write_definitions(&d, R);
    write_provenance(&d, R);
    write_runs(&d, R);
    tb_sb_printf(&d.html, "<script>%s</script>\n</body>\n</html>\n", SCRIPT);
    *md = d.md;
    *html = d.html;
    return md->failed || html->failed ? -1 : 0;
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
                                        NULL};

static const char *num_text(double v, char *buf, size_t len)
{
    if (isnan(v))
        buf[0] = '\0';
    else
        snprintf(buf, len, "%.10g", v);
    return buf;
}

static int write_cost_csv(const struct report *R, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    int rc = -1, bad = 0;
    if (!f)
        return tb_err(err, errlen, "cannot write '%s': %s", path, strerror(errno));
    for (size_t i = 0; COST_COLS[i]; i++)
        bad |= tb_csv_put(f, COST_COLS[i], COST_COLS[i + 1] ? ',' : '\n');
    for (size_t i = 0; i < R->ncosts; i++) {
        const struct cost *c = &R->costs[i];
        const struct tb_result *x = c->row;
        const struct tb_price_choice *p = &c->price->c;
        char b[29][64], note[600], line[24];
        const char *v[sizeof COST_COLS / sizeof COST_COLS[0]];
        bool train = !strcmp(c->metric, "usd_per_mtok_train");
        const double none = NAN;
        size_t k = 0;
        snprintf(note, sizeof note, "%s%s", p->have ? "" : "no price: ", p->have ? "" : p->why);
        snprintf(line, sizeof line, "%ld", tb_result_line(x));
        v[k++] = F(x, "run_id");
        v[k++] = tb_provenance_to_string(x->prov);
        v[k++] = F(x, "target");
        v[k++] = F(x, "model");
        v[k++] = F(x, "phase");
        v[k++] = F(x, "precision");
        v[k++] = F(x, "batch");
        v[k++] = F(x, "seq_in");
        v[k++] = F(x, "seq_out");
        v[k++] = F(x, "metric");
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
        v[k++] = R->baseline;
        v[k++] = num_text(c->base_usd, b[16], sizeof b[16]);
        v[k++] = num_text(c->perf, b[17], sizeof b[17]);
        v[k++] = num_text(c->ttft, b[18], sizeof b[18]);
        v[k++] = num_text(c->tpot, b[19], sizeof b[19]);
        v[k++] = num_text(c->per_user, b[20], sizeof b[20]);
        v[k++] =
            !strcmp(F(x, "phase"), "serve")
                ? (tb_cost_meets(c->ttft, c->tpot, R->o->ttft_limit_ms, R->o->tpot_limit_ms) ? "yes"
                                                                                             : "no")
                : "";
        v[k++] = num_text(train ? R->o->train_tokens : NAN, b[21], sizeof b[21]);
        v[k++] = num_text(train ? tb_cost_train_days(R->o->train_tokens, x->value) : NAN, b[22],
                          sizeof b[22]);
        v[k++] = num_text(train && positive(c->usd) ? c->usd * R->o->train_tokens / 1e6 : NAN,
                          b[23], sizeof b[23]);
        /* what the run is charged: instances, or a share of one (chips_used of its chips) */
        v[k++] = num_text(x->chips_used > 0 ? (double)x->chips_used : NAN, b[24], sizeof b[24]);
        v[k++] = num_text(c->price->chips > 0 ? (double)c->price->chips : NAN, b[25], sizeof b[25]);
        v[k++] = num_text(charged(x, c->price), b[26], sizeof b[26]);
        for (size_t j = 0; j < k; j++)
            bad |= tb_csv_put(f, v[j], j + 1 < k ? ',' : '\n');
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

/* ---- files ---- */

/* Files a report may leave in its folder; any of them a new report does not make is
 * removed when it is published, so no stale chart sits beside it. */
static bool is_output(const char *name)
{
    static const char *const fixed[] = {"cost.csv", "report.md", "report.html", "assessment.csv"};
    static const char *const charts[] = {"throughput", "cost",  "images",
                                         "priceperf",  "train", "interactivity-"};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcmp(name, fixed[i]))
            return true;
    if (!dot || (strcmp(dot, ".svg") && strcmp(dot, ".png")))
        return false;
    for (size_t i = 0; i < sizeof charts / sizeof charts[0]; i++) {
        size_t n = strlen(charts[i]);
        if (!strncmp(name, charts[i], n) &&
            (name + n == dot || (charts[i][n - 1] == '-' && isdigit((unsigned char)name[n]))))
            return true;
    }
    return false;
}

static void remove_tmpdir(struct report *R)
{
    char p[4400];
    DIR *dir;
    struct dirent *e;
    if (!R->made_tmpdir)
        return;
    dir = opendir(R->tmpdir);
    while (dir && (e = readdir(dir)))
        if (e->d_name[0] != '.' && path_in(p, sizeof p, R->tmpdir, e->d_name) == 0)
            unlink(p);
    if (dir)
        closedir(dir);
    rmdir(R->tmpdir);
    R->made_tmpdir = false;
}

static int write_text(const char *dir, const char *name, const struct tb_sbuf *b, char *err,
                      size_t errlen)
{
    char p[4400];
    FILE *f = NULL;
    int rc = -1;
    if (path_in(p, sizeof p, dir, name) != 0)
        return tb_err(err, errlen, "path too long: '%s'", dir);
    f = fopen(p, "w");
    if (!f || fwrite(b->p, 1, b->len, f) != b->len) {
        tb_err(err, errlen, "cannot write '%s': %s", p, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (f && fclose(f) != 0 && rc == 0)
        rc = tb_err(err, errlen, "cannot write '%s': %s", p, strerror(errno));
    return rc;
}

/* Move the finished files into place (report.html last), remove stale outputs. */
static int publish(struct report *R, char *err, size_t errlen)
{
    char from[4400], to[4400];
    DIR *dir;
    struct dirent *e;
    int rc = 0;
    /* stale outputs first: a file of an older report that this one does not make */
    dir = opendir(R->outdir);
    while (dir && (e = readdir(dir)) && rc == 0) {
        struct stat st;
        if (!is_output(e->d_name) || path_in(from, sizeof from, R->tmpdir, e->d_name) != 0 ||
            path_in(to, sizeof to, R->outdir, e->d_name) != 0)
            continue;
        if (stat(from, &st) != 0 && unlink(to) != 0 && errno != ENOENT)
            rc = tb_err(err, errlen, "cannot remove the stale '%s': %s", to, strerror(errno));
    }
    if (dir)
        closedir(dir);
    if (rc != 0)
        return rc;
    dir = opendir(R->tmpdir);
    if (!dir)
        return tb_err(err, errlen, "cannot read '%s': %s", R->tmpdir, strerror(errno));
    while ((e = readdir(dir)) && rc == 0) {
        if (!is_output(e->d_name) || !strcmp(e->d_name, "report.html"))
            continue;
        if (path_in(from, sizeof from, R->tmpdir, e->d_name) != 0 ||
            path_in(to, sizeof to, R->outdir, e->d_name) != 0)
            rc = tb_err(err, errlen, "path too long: '%s'", R->outdir);
        else if (rename(from, to) != 0)
            rc = tb_err(err, errlen, "cannot rename '%s' to '%s': %s", from, to, strerror(errno));
    }
    closedir(dir);
    if (rc != 0)
        return rc;
    if (path_in(from, sizeof from, R->tmpdir, "report.html") != 0 ||
        path_in(to, sizeof to, R->outdir, "report.html") != 0)
        return tb_err(err, errlen, "path too long: '%s'", R->outdir);
    if (rename(from, to) != 0)
        return tb_err(err, errlen, "cannot rename '%s' to '%s': %s", from, to, strerror(errno));
    return 0;
}

/* The assessment section: run the assessment of o->assess (input errors are the
 * report's input errors) and keep its Markdown, HTML and CSV text. */
static int run_assessment(struct report *R, char *err, size_t errlen)
{
    struct tb_model m;
    struct tb_assess_opts ao;
    struct tb_assessment as;
    FILE *f[3] = {NULL, NULL, NULL};
    char *text[3] = {NULL, NULL, NULL};
    size_t len[3];
    int r, rc = TB_REPORT_EINPUT;
    if (!R->o->assess) {
        snprintf(R->assess_why, sizeof R->assess_why,
                 "No assessment: give a workload file with --assess FILE (format and examples "
                 "in reports/examples/; make bench BENCH_ASSESS=FILE).");
        return 0;
    }
    tb_assess_opts_init(&ao);
    if (tb_model_load(&m, &R->pricing, R->o->pricing_dir, err, errlen) != 0)
        return TB_REPORT_EINPUT;
    r = tb_assess_run(&as, R->o->assess, &m, &ao, err, errlen);
    if (r != 0) {
        rc = r == -2 ? TB_REPORT_EINPUT : TB_REPORT_EFAIL;
        goto out_model;
    }
    rc = TB_REPORT_EFAIL;
    for (int i = 0; i < 3; i++) {
        f[i] = open_memstream(&text[i], &len[i]);
        if (!f[i]) {
            tb_err(err, errlen, "out of memory");
            goto out;
        }
    }
    if (tb_assess_write_md_at(&as, &ao, 2, f[0]) != 0 ||
        tb_assess_write_html_at(&as, &ao, 2, f[1]) != 0 || tb_assess_write_csv(&as, f[2]) != 0) {
        tb_err(err, errlen, "cannot write the assessment section");
        goto out;
    }
    rc = 0;
out:
    for (int i = 0; i < 3; i++)
        if (f[i] && fclose(f[i]) != 0 && rc == 0) {
            tb_err(err, errlen, "out of memory");
            rc = TB_REPORT_EFAIL;
        }
    if (rc == 0) {
        char p[4400];
        R->assess_md = text[0];
        R->assess_html = text[1];
        text[0] = text[1] = NULL;
        if (path_in(p, sizeof p, R->tmpdir, "assessment.csv") != 0 ||
            tb_write_file_atomic(p, text[2], len[2], err, errlen) != 0)
            rc = TB_REPORT_EFAIL;
    }
    for (int i = 0; i < 3; i++)
        free(text[i]);
    tb_assess_release(&as);
out_model:
    tb_model_release(&m);
    return rc;
}

void tb_report_opts_init(struct tb_report_opts *o)
{
    memset(o, 0, sizeof *o);
    o->usd_per_hour = NAN;
    o->max_price_age_days = 180;
    o->ttft_limit_ms = 2000;
    o->tpot_limit_ms = 200;
    o->train_tokens = 1e12;
}

int tb_report_write(const struct tb_report_opts *o, struct tb_report_info *info, char *err,
                    size_t errlen)
{
    struct report R;
    struct tb_sbuf md = {0}, html = {0};
    char p[4400];
    const struct tb_instance *base_in;
    int rc = TB_REPORT_EINPUT, r;

    memset(&R, 0, sizeof R);
    R.o = o;
    tb_utc_now(R.now, sizeof R.now);

    /* 1. inputs: every check before anything is written */
    if (tb_results_load(&R.res, o->results, o->nresults, err, errlen) != 0)
        goto out;
    if (tb_pricing_load(&R.pricing, o->pricing_dir, err, errlen) != 0)
        goto out;
    R.have_pricing = true;
    if (tb_pricing_check_choice(&R.pricing, o->region, o->purchase, err, errlen) != 0)
        goto out;
    if (tb_pricing_host_price(&R.pricing, o->instance, o->region, o->purchase, o->usd_per_hour,
                              &R.host, err, errlen) != 0)
        goto out;
    /* the baseline, priced on-demand in the same region */
    R.baseline = o->baseline ? o->baseline : TB_REPORT_BASELINE;
    base_in = tb_pricing_instance(&R.pricing, R.baseline);
    if (!base_in) {
        tb_err(err, errlen, "baseline: unknown instance type '%s' (not in %s)", R.baseline,
               R.pricing.instances_csv.path);
        goto out;
    }
    if (check_chips_used(&R, err, errlen) != 0)
        goto out;
    R.btp.target = R.baseline;
    R.btp.chips = base_in->accel_count;
    R.btp.chip_word = chip_word(&R, base_in);
    if (tb_pricing_target_price(&R.pricing, R.baseline, o->region, "on-demand", &R.btp.c, err,
                                errlen) != 0)
        goto out;
    price_age(&R, &R.btp);
    if (build_costs(&R, err, errlen) != 0)
        goto out;
    R.btp.ref = ++R.nrefs;

    /* 2. the output folder and a scratch folder inside it (same file system: renames) */
    rc = TB_REPORT_EFAIL;
    if (o->out_dir) {
        snprintf(R.outdir, sizeof R.outdir, "%s", o->out_dir);
    } else {
        const char *slash = strrchr(o->results[0], '/');
        if (!slash)
            snprintf(R.outdir, sizeof R.outdir, ".");
        else if (slash == o->results[0])
            snprintf(R.outdir, sizeof R.outdir, "/");
        else
            snprintf(R.outdir, sizeof R.outdir, "%.*s", (int)(slash - o->results[0]),
                     o->results[0]);
    }
    if (tb_mkdir_p(R.outdir, err, errlen) != 0)
        goto out;
    snprintf(R.tmpdir, sizeof R.tmpdir, "%s/.report.tmp.%ld", R.outdir, (long)getpid());
    if (mkdir(R.tmpdir, 0777) != 0 && errno != EEXIST) {
        tb_err(err, errlen, "cannot create '%s': %s", R.tmpdir, strerror(errno));
        goto out;
    }
    R.made_tmpdir = true;

    /* 3. the assessment (its input errors are input errors), charts, cost table,
     * documents, then publish */
    r = run_assessment(&R, err, errlen);
    if (r != 0) {
        rc = r;
        goto out;
    }
    if (draw_charts(&R, err, errlen) != 0)
        goto out;
    if (path_in(p, sizeof p, R.tmpdir, "cost.csv") != 0 || write_cost_csv(&R, p, err, errlen) != 0)
        goto out;
    if (build_docs(&R, &md, &html) != 0) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    if (write_text(R.tmpdir, "report.md", &md, err, errlen) != 0 ||
        write_text(R.tmpdir, "report.html", &html, err, errlen) != 0)
        goto out;
    if (publish(&R, err, errlen) != 0)
        goto out;
    if (info) {
        memset(info, 0, sizeof *info);
        snprintf(info->out_dir, sizeof info->out_dir, "%s", R.outdir);
        info->ncharts = R.ncharts;
        info->png = R.ncharts > 0 && R.charts[0].png;
        info->nrows = R.res.nrows;
        info->ncosted = R.npriced;
        snprintf(info->notes, sizeof info->notes, "%s", R.notes);
    }
    rc = TB_REPORT_OK;
out:
    remove_tmpdir(&R);
    tb_sb_release(&md);
    tb_sb_release(&html);
    for (int i = 0; i < R.ncharts; i++)
        free(R.charts[i].svg);
    free(R.assess_md);
    free(R.assess_html);
    free(R.ws);
    free(R.costs);
    free(R.tp);
    if (R.have_pricing)
        tb_pricing_release(&R.pricing);
    tb_results_release(&R.res);
    return rc;
}
