/* harness/report/tb_assess.c: the migration assessment computed (tb_assess.h): the workload
 * file checked, each candidate sized, priced and compared; harness/report/assess_doc.c
 * writes the results. */
#include "tb_assess.h"

#include "tb_arch.h"
#include "tb_cost.h"
#include "tb_darch.h"
#include "tb_range.h"
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

/* ---- the arithmetic ---- */

/* Counts past this are not exact in a double: refused, never clamped. */
#define COUNT_MAX 9007199254740992.0 /* 2^53 */

/* ceil(x), but x a rounding error above an integer counts as that integer (240 / 64 x
 * 64 may come out a hair above 240); at least 1. */
static double ceil_count(double x)
{
    double r = ceil(x);
    if (r - 1 >= x - fabs(x) * 1e-12)
        r -= 1;
    return r < 1 ? 1 : r;
}

static bool finite_pos(double v)
{
    return v > 0 && isfinite(v);
}

int tb_assess_serve_fleet(double rps, double e2e_s, double conc, double need, double cap,
                          struct tb_assess_fleet *out)
{
    memset(out, 0, sizeof *out);
    out->bound = "latency";
    if (!finite_pos(rps) || !finite_pos(e2e_s) || !finite_pos(conc) || !finite_pos(need) ||
        !finite_pos(cap))
        return -1;
    out->in_flight = rps * e2e_s;
    if (!(out->in_flight <= COUNT_MAX) || !(need / cap <= COUNT_MAX))
        return -1;
    out->by_latency = ceil_count(out->in_flight / conc);
    out->by_throughput = ceil_count(need / cap);
    out->replicas = fmax(out->by_latency, out->by_throughput);
    if (out->by_throughput > out->by_latency)
        out->bound = "throughput";
    return out->replicas <= COUNT_MAX ? 0 : -1;
}

int tb_assess_train_cost(double tokens, double cluster_tokens_per_s, long instances,
                         double usd_hourly, double usd_committed, double hours_per_month,
                         struct tb_assess_train_cost *out)
{
    bool hourly = finite_pos(usd_hourly), committed = finite_pos(usd_committed);
    memset(out, 0, sizeof *out);
    out->hourly_usd = out->committed_usd = out->usd = out->break_even = NAN;
    if (!finite_pos(tokens) || !finite_pos(cluster_tokens_per_s) || instances < 1 ||
        !finite_pos(hours_per_month) || (!hourly && !committed))
        return -1;
    out->cluster_hours = tokens / cluster_tokens_per_s / 3600.0;
    if (!(out->cluster_hours <= COUNT_MAX))
        return -1;
    out->clusters = ceil_count(out->cluster_hours / hours_per_month);
    if (!(out->clusters * (double)instances <= COUNT_MAX))
        return -1;
    /* pay by the hour: the report's own arithmetic (tb_cost.h), so the two agree */
    if (hourly)
        out->hourly_usd =
            tb_cost_train_usd(tokens, cluster_tokens_per_s, usd_hourly * (double)instances);
    if (committed)
        out->committed_usd = out->clusters * hours_per_month * (double)instances * usd_committed;
    if (hourly && committed)
        out->break_even = usd_committed / usd_hourly;
    out->committed = committed && !(out->hourly_usd <= out->committed_usd);
    out->usd = out->committed ? out->committed_usd : out->hourly_usd;
    return isfinite(out->usd) ? 0 : -1;
}

/* ---- column names ---- */

/* Optimal string alignment distance (edits, adjacent swaps counting one); SIZE_MAX for
 * words too long to compare. */
static size_t distance(const char *a, const char *b)
{
    size_t n = strlen(a), k = strlen(b), d[65][65];
    if (n > 64 || k > 64)
        return SIZE_MAX;
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= k; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= k; j++) {
            size_t c = a[i - 1] != b[j - 1], v = d[i - 1][j - 1] + c;
            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][k];
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The '_'-separated words of s sorted and joined again into buf ("" when too long). */
static void sorted_words(const char *s, char *buf, size_t len)
{
    char tmp[128], *words[64], *save = NULL;
    size_t n = 0, used = 0;
    buf[0] = '\0';
    if (strlen(s) >= sizeof tmp)
        return;
    snprintf(tmp, sizeof tmp, "%s", s);
    for (char *w = strtok_r(tmp, "_", &save); w && n < 64; w = strtok_r(NULL, "_", &save))
        words[n++] = w;
    qsort(words, n, sizeof *words, cmp_str);
    for (size_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "_" : "", words[i]);
}

const char *tb_assess_closest(const char *word, const char *const *known)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    char sw[128], sk[128];
    sorted_words(word, sw, sizeof sw);
    for (size_t i = 0; known[i]; i++) {
        size_t d = distance(word, known[i]), n = strlen(word), k = strlen(known[i]);
        size_t limit = (n < k ? n : k) / 3;
        sorted_words(known[i], sk, sizeof sk);
        if (sw[0] && sk[0] && distance(sw, sk) < d)
            d = distance(sw, sk);
        if (d <= (limit > 2 ? limit : 2) && d < best_d) {
            best = known[i];
            best_d = d;
        }
    }
    return best;
}

/* ---- the file ---- */

/* The columns of an assessment file; two have older names, still taken. */
static const char *const COLUMNS[] = {"name",
                                      "model",
                                      "phase",
                                      "precision",
                                      "requests_per_s",
                                      "tokens_per_month",
                                      "images_per_month",
                                      "seq_in",
                                      "seq_out",
                                      "steps",
                                      "resolution",
                                      "ttft_limit_ms",
                                      "tpot_limit_ms",
                                      "current_instance",
                                      "current_purchase",
                                      "region",
                                      "engineer_weeks",
                                      "usd_per_engineer_week",
                                      "current_usd_per_month",
                                      "spot_reserve",
                                      "notes",
                                      NULL};
static const char *const OLD_NAMES[][2] = {{"ttft_ms", "ttft_limit_ms"},
                                           {"tpot_ms", "tpot_limit_ms"}};
#define NOLD (sizeof OLD_NAMES / sizeof OLD_NAMES[0])

/* The column of t that holds `name`: name itself, or its older name where only that is
 * in the header. */
static const char *column(const struct tb_csv_table *t, const char *name)
{
    for (size_t i = 0; i < NOLD; i++)
        if (!strcmp(name, OLD_NAMES[i][1]) && tb_csv_col(t, name) < 0 &&
            tb_csv_col(t, OLD_NAMES[i][0]) >= 0)
            return OLD_NAMES[i][0];
    return name;
}

/* Every column of the header known, once: a misspelt optional column would otherwise
 * be ignored without a word (a latency target dropped, a spend not taken). */
static int check_columns(const struct tb_csv_table *t, char *err, size_t errlen)
{
    const char *known[sizeof COLUMNS / sizeof COLUMNS[0] + NOLD];
    size_t nk = 0;
    for (size_t i = 0; COLUMNS[i]; i++)
        known[nk++] = COLUMNS[i];
    for (size_t i = 0; i < NOLD; i++)
        known[nk++] = OLD_NAMES[i][0];
    known[nk] = NULL;
    for (size_t c = 0; c < t->ncols; c++) {
        const char *h = t->header[c], *near;
        bool ok = false;
        for (size_t i = 0; i < nk && !ok; i++)
            ok = !strcmp(h, known[i]);
        for (size_t j = 0; j < c; j++)
            if (!strcmp(h, t->header[j]))
                return tb_err(err, errlen, "%s: line 1: column '%s' given twice", t->path, h);
        for (size_t i = 0; i < NOLD; i++)
            if (!strcmp(h, OLD_NAMES[i][0]) && tb_csv_col(t, OLD_NAMES[i][1]) >= 0)
                return tb_err(err, errlen,
                              "%s: line 1: columns '%s' and '%s' both given ('%s' is the older "
                              "name of '%s')",
                              t->path, OLD_NAMES[i][0], OLD_NAMES[i][1], OLD_NAMES[i][0],
                              OLD_NAMES[i][1]);
        if (ok)
            continue;
        near = tb_assess_closest(h, known);
        for (size_t i = 0; near && i < NOLD; i++)
            if (!strcmp(near, OLD_NAMES[i][0]))
                near = OLD_NAMES[i][1];
        if (near)
            return tb_err(err, errlen, "%s: line 1: unknown column '%s' (did you mean '%s'?)",
                          t->path, h, near);
        {
            char list[1024];
            size_t used = 0;
            for (size_t i = 0; COLUMNS[i] && used < sizeof list; i++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                         COLUMNS[i]);
            return tb_err(err, errlen, "%s: line 1: unknown column '%s' (the columns: %s)", t->path,
                          h, list);
        }
    }
    return TB_OK;
}

/* One workload, checked. */
struct workload {
    const char *name, *model, *precision, *current, *purchase, *region;
    enum tb_phase phase;    /* TB_PHASE_SERVE, _TRAIN or _DENOISE */
    const char *load_field; /* the column the load came from, for messages */
    double rps;             /* serve: requests per second */
    double need;            /* serve: output tokens/s; train: tokens a month; denoise: images/s */
    long seq_in, seq_out, steps, resolution;
    double ttft_ms, tpot_ms;
    double migration_usd;
    double current_usd_month; /* given, or NAN */
    double spot_reserve;      /* always-on at spot: share of the replicas kept on on-demand
                                 (0 to 1), or NAN when not given */
    long line;
    struct tb_arch arch;
    struct tb_darch darch;
};

/* Why a purchase model is no basis for an always-on fleet, with the sources (also in
 * reports/examples/README.md). */
#define CBLOCK_WHY                                                                                 \
    "Capacity Blocks end: bought ahead for 1 to 14 days, or in 7-day steps up to 182, and "        \
    "paid up front (EC2 User Guide, 'Find and purchase Capacity Blocks'), so they are no "         \
    "basis for an always-on fleet"
#define SPOT_WHY                                                                                   \
    "spot capacity is reclaimed at two minutes' notice (EC2 User Guide, 'Spot Instance "           \
    "interruptions'): an always-on fleet on spot must keep a share on on-demand "                  \
    "(spot_reserve)"

static int bad(const struct tb_csv_table *t, size_t r, const char *field, const char *what,
               char *err, size_t errlen)
{
    tb_err(err, errlen, "%s: line %ld: field '%s': %s", t->path, t->lines[r], field, what);
    return TB_EINPUT;
}

/* The numeric columns of an assessment file (README "Input ranges"): a fleet's load and
 * shape with room to spare, every size the sizing multiplies far from overflow. */
const struct tb_range TB_ASSESS_RANGES[] = {
    {"requests_per_s", 0, 1e9, false, "requests/s"},
    {"tokens_per_month", 0, 1e18, false, "tokens"},
    {"images_per_month", 0, 1e15, false, "images"},
    {"seq_in", 1, 16777216, true, "tokens"},
    {"seq_out", 1, 16777216, true, "tokens"},
    {"steps", 1, 10000, true, "denoising steps"},
    {"resolution", 1, 16384, true, "pixels"},
    {"ttft_limit_ms", 0, 1e9, false, "ms (older name ttft_ms)"},
    {"tpot_limit_ms", 0, 1e9, false, "ms (older name tpot_ms)"},
    {"engineer_weeks", 0, 1e4, false, "weeks"},
    {"usd_per_engineer_week", 0, 1e7, false, "USD"},
    {"current_usd_per_month", 0, 1e12, false, "USD"},
    {"spot_reserve", 0, 1, false, "share of the fleet kept on on-demand"},
    {NULL, 0, 0, false, NULL},
};

/* An optional number of column field (or its older name) in its range; "" gives def. */
static int num(const struct tb_csv_table *t, size_t r, const char *field, double def, double *out,
               char *err, size_t errlen)
{
    const char *v = tb_csv_field(t, r, field);
    const struct tb_range *rg = tb_range_find(TB_ASSESS_RANGES, field);
    char what[256];
    for (size_t i = 0; !rg && i < NOLD; i++)
        if (!strcmp(field, OLD_NAMES[i][0]))
            rg = tb_range_find(TB_ASSESS_RANGES, OLD_NAMES[i][1]);
    if (!*v) {
        *out = def;
        return TB_OK;
    }
    if (!rg) { /* a column without its range: the program's error */
        tb_assert_fail("column in TB_ASSESS_RANGES", __FILE__, __LINE__);
        return TB_EFAIL;
    }
    if (tb_range_parse(rg, v, out, what, sizeof what) != 0) {
        tb_err(err, errlen, "%s: line %ld: %s%s%s%s", t->path, t->lines[r], what,
               strcmp(rg->field, field) ? " (column '" : "", strcmp(rg->field, field) ? field : "",
               strcmp(rg->field, field) ? "')" : "");
        return TB_EINPUT;
    }
    return TB_OK;
}

static int read_workload(const struct tb_csv_table *t, size_t r, const struct tb_model *m,
                         const struct tb_assess_opts *o, struct workload *w, char *err,
                         size_t errlen)
{
    const char *phase = tb_csv_field(t, r, "phase");
    double v, tpm, ipm, weeks, per_week;
    char e[512];

    memset(w, 0, sizeof *w);
    w->line = t->lines[r];
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
        w->phase = TB_PHASE_SERVE;
    else if (!strcmp(phase, "train"))
        w->phase = TB_PHASE_TRAIN;
    else if (!strcmp(phase, "denoise"))
        w->phase = TB_PHASE_DENOISE;
    else
        return bad(t, r, "phase", "not serve, train or denoise", err, errlen);
    if (w->phase == TB_PHASE_DENOISE ? tb_darch_find(&w->darch, w->model, e, sizeof e)
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
    if (num(t, r, column(t, "ttft_limit_ms"), 0, &w->ttft_ms, err, errlen) ||
        num(t, r, column(t, "tpot_limit_ms"), 0, &w->tpot_ms, err, errlen) ||
        num(t, r, "requests_per_s", 0, &w->rps, err, errlen) ||
        num(t, r, "tokens_per_month", 0, &tpm, err, errlen) ||
        num(t, r, "images_per_month", 0, &ipm, err, errlen) ||
        num(t, r, "engineer_weeks", 0, &weeks, err, errlen) ||
        num(t, r, "usd_per_engineer_week", 0, &per_week, err, errlen) ||
        num(t, r, "current_usd_per_month", NAN, &w->current_usd_month, err, errlen) ||
        num(t, r, "spot_reserve", NAN, &w->spot_reserve, err, errlen))
        return TB_EINPUT;
    w->migration_usd = weeks * per_week;
    /* purchase models as AWS sells them: an always-on fleet is never bought as Capacity
     * Blocks (they end) and not on spot alone unless the file says what it keeps on
     * on-demand */
    if (w->phase != TB_PHASE_TRAIN && !strcmp(w->purchase, "capacity-block"))
        return bad(t, r, "current_purchase",
                   CBLOCK_WHY "; give on-demand, reserved or a savings plan", err, errlen);
    if (w->phase != TB_PHASE_TRAIN && !strcmp(w->purchase, "spot") && isnan(w->spot_reserve))
        return bad(t, r, "spot_reserve",
                   "missing: " SPOT_WHY " (0 to 1; 0 accepts an all-spot fleet)", err, errlen);
    if (!isnan(w->spot_reserve) && (w->phase == TB_PHASE_TRAIN || strcmp(w->purchase, "spot")))
        return bad(t, r, "spot_reserve",
                   w->phase == TB_PHASE_TRAIN
                       ? "only for an always-on fleet (serve, denoise): a training job on spot "
                         "restarts from its checkpoints"
                       : "only with current_purchase spot",
                   err, errlen);
    switch (w->phase) {
    case TB_PHASE_SERVE:
        if (w->seq_in <= 0)
            return bad(t, r, "seq_in", "missing: prompt tokens per request", err, errlen);
        if (w->seq_out <= 0)
            return bad(t, r, "seq_out", "missing: output tokens per request", err, errlen);
        if (w->rps > 0) {
            w->load_field = "requests_per_s";
            w->need = w->rps * (double)w->seq_out;
        } else if (tpm > 0) {
            w->load_field = "tokens_per_month";
            w->need = tpm / (o->hours_per_month * 3600.0);
            w->rps = w->need / (double)w->seq_out;
        } else {
            return bad(t, r, "requests_per_s",
                       "missing: the load (requests_per_s or "
                       "tokens_per_month)",
                       err, errlen);
        }
        break;
    case TB_PHASE_TRAIN:
        if (w->seq_in <= 1)
            return bad(t, r, "seq_in", "missing: the training sequence length", err, errlen);
        if (!(tpm > 0))
            return bad(t, r, "tokens_per_month", "missing: training tokens per month", err, errlen);
        w->load_field = "tokens_per_month";
        w->need = tpm;
        break;
    default:
        if (!(ipm > 0))
            return bad(t, r, "images_per_month", "missing: images per month", err, errlen);
        w->load_field = "images_per_month";
        w->need = ipm / (o->hours_per_month * 3600.0);
        break;
    }
    return TB_OK;
}

/* ---- the model's error per chip family, from the validation file ---- */

/* The validation errors of path (tb_validate_file). A missing or unreadable file leaves
 * v empty: every family then gets the default error. Fails (TB_EFAIL) only for memory. */
static int family_errors(const struct tb_model *m, const char *path, struct tb_validation *v,
                         char *err, size_t errlen)
{
    char e[512];
    int rc = tb_validate_file(v, path, m, e, sizeof e);
    if (rc != TB_EFAIL)
        return TB_OK;
    tb_err(err, errlen, "%s", e);
    return TB_EFAIL;
}

/* ---- sizing one workload on one instance type ---- */

#define MAX_INSTANCES 64 /* the largest replica or cluster searched */

/* What one replica (serve, denoise) or cluster (train) of n instances carries. */
struct sizing {
    long n;
    double cap;   /* output tokens/s, training tokens/s or images/s */
    double conc;  /* serve: requests one replica holds within the targets */
    double e2e_s; /* serve: their end-to-end latency */
};

/* The smallest layout of 1, 2, 4, ... MAX_INSTANCES instances that holds the model
 * (within the latency targets when serving): true with *sz and the model's assumptions
 * in layout, or false with why. */
static bool size_layout(const struct tb_model *m, const struct workload *w,
                        const struct tb_instance *inst, struct sizing *sz, char *layout,
                        size_t llen, char *why, size_t wlen)
{
    struct tb_scenario sc;
    struct tb_prediction p;
    char e[512], first[256] = "";

    memset(&sc, 0, sizeof sc);
    memset(sz, 0, sizeof *sz);
    sc.inst = inst;
    sc.precision = w->precision;
    sc.phase = w->phase;
    if (w->phase == TB_PHASE_SERVE) {
        sc.arch = &w->arch;
        sc.seq_in = w->seq_in;
        sc.seq_out = w->seq_out;
        sc.batch_max = true;
        sc.ttft_limit_ms = w->ttft_ms;
        sc.tpot_limit_ms = w->tpot_ms;
    } else if (w->phase == TB_PHASE_DENOISE) {
        sc.darch = &w->darch;
        sc.batch_max = true;
        sc.steps = w->steps;
        sc.resolution = w->resolution;
    } else {
        sc.arch = &w->arch;
        sc.seq_in = w->seq_in;
    }
    for (long n = 1; n <= MAX_INSTANCES; n *= 2) {
        sc.instances = n;
        if (tb_model_predict(m, &sc, &p, e, sizeof e) != 0) {
            snprintf(why, wlen, "%.500s", e);
            return false;
        }
        if (!p.fits) {
            if (n == 1)
                snprintf(first, sizeof first, "%.250s", p.why);
            continue;
        }
        sz->n = n;
        if (n > 1)
            snprintf(layout, llen, "a %s of %ld instances: %.960s",
                     w->phase == TB_PHASE_TRAIN ? "cluster" : "replica", n, p.assumptions);
        else
            snprintf(layout, llen, "%s", p.assumptions);
        if (w->phase == TB_PHASE_SERVE) {
            sz->cap = p.output_tokens_per_s;
            /* p.batch is per data-parallel replica inside the layout */
            sz->conc = (double)p.batch * (double)(p.dp > 0 ? p.dp : 1);
            sz->e2e_s = p.e2e_latency_ms / 1e3;
        } else {
            sz->cap = w->phase == TB_PHASE_DENOISE ? p.images_per_s : p.train_tokens_per_s;
        }
        if (!finite_pos(sz->cap) ||
            (w->phase == TB_PHASE_SERVE && (!finite_pos(sz->conc) || !finite_pos(sz->e2e_s)))) {
            snprintf(why, wlen, "no capacity predicted on %ld instance%s", n, n > 1 ? "s" : "");
            return false;
        }
        return true;
    }
    snprintf(why, wlen,
             "cannot hold the model%s on 1 to %d instances (on 1: %.200s; on %d: %.200s)",
             w->phase == TB_PHASE_SERVE ? " within the targets" : "", MAX_INSTANCES, first,
             MAX_INSTANCES, p.why);
    return false;
}

/* ---- pricing a sizing ---- */

static bool is_commitment(const char *purchase)
{
    return !strncmp(purchase, "reserved", 8) || !strncmp(purchase, "savings-plan", 12);
}

static const char *const COMMITMENTS[] = {"reserved-1y", "reserved-3y", "savings-plan-1y",
                                          "savings-plan-3y", NULL};

/* The prices a sizing is bought at. */
struct rates {
    double hourly;    /* always-on: the fleet's price; train: by the hour; NAN: none */
    double committed; /* train: clusters bought for the month; NAN: none */
    bool cblock;      /* train: hourly is a Capacity Block price, whole days bought */
    double reserve;   /* always-on at spot: share of the replicas on on-demand; NAN: none */
    double od;        /* their on-demand price (NAN: none; then reserve must be 0) */
};

static struct rates rates_of(double hourly, double committed)
{
    struct rates r = {hourly, committed, false, NAN, NAN};
    return r;
}

/* A sizing priced: what is bought and what it costs a month. */
struct plan {
    double replicas;      /* replicas, or clusters at once */
    double in_flight;     /* serve: requests in flight (Little's law); else NAN */
    const char *bound;    /* "latency" or "throughput" */
    double cluster_hours; /* train; else NAN */
    bool committed;       /* train: the commitment won */
    double break_even;    /* train: usd_c / usd_h; NAN without both */
    double cb_days;       /* train at Capacity Blocks: days bought; else NAN */
    double cb_used;       /* and the share of them used */
    double od_replicas;   /* always-on at spot: replicas on on-demand; else NAN */
    double usd;
};

/* sz with f times its capacity (the model's error), priced at rt: training by the hour
 * (or as Capacity Blocks of whole days: tb_pricing_cblock, each of the clusters at once
 * running cluster-hours / clusters hours) or, where cheaper, on a commitment; serving and
 * images always on, at spot with ceil(reserve x replicas) replicas on on-demand. Returns
 * 0, or -1 when a count passes 2^53 or a price is missing. */
static int plan_at(const struct workload *w, const struct sizing *sz, double f,
                   const struct rates *rt, double hours, struct plan *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->in_flight = pl->cluster_hours = pl->break_even = NAN;
    pl->cb_days = pl->cb_used = pl->od_replicas = NAN;
    pl->bound = "throughput";
    if (w->phase == TB_PHASE_TRAIN) {
        struct tb_assess_train_cost tc;
        if (tb_assess_train_cost(w->need, sz->cap * f, sz->n, rt->hourly, rt->committed, hours,
                                 &tc) != 0)
            return -1;
        pl->replicas = tc.clusters;
        pl->cluster_hours = tc.cluster_hours;
        pl->committed = tc.committed;
        pl->break_even = tc.break_even;
        pl->usd = tc.usd;
        if (rt->cblock && finite_pos(rt->hourly)) {
            struct tb_pricing_cblock cb;
            if (tb_pricing_cblock(tc.cluster_hours / tc.clusters, tc.clusters * (double)sz->n,
                                  rt->hourly, &cb) != 0)
                return -1;
            pl->committed = finite_pos(rt->committed) && tc.committed_usd < cb.usd;
            pl->usd = pl->committed ? tc.committed_usd : cb.usd;
            if (!pl->committed) {
                pl->cb_days = cb.days;
                pl->cb_used = cb.used;
            }
        }
        return 0;
    }
    if (w->phase == TB_PHASE_SERVE) {
        struct tb_assess_fleet fl;
        if (tb_assess_serve_fleet(w->rps, sz->e2e_s, sz->conc * f, w->need, sz->cap * f, &fl) != 0)
            return -1;
        pl->replicas = fl.replicas;
        pl->in_flight = fl.in_flight;
        pl->bound = fl.bound;
    } else {
        if (!finite_pos(sz->cap * f) || !(w->need / (sz->cap * f) <= COUNT_MAX))
            return -1;
        pl->replicas = ceil_count(w->need / (sz->cap * f));
    }
    if (!(pl->replicas * (double)sz->n <= COUNT_MAX) || !finite_pos(rt->hourly))
        return -1;
    if (!isnan(rt->reserve)) {
        pl->od_replicas = rt->reserve > 0 ? ceil(rt->reserve * pl->replicas - 1e-9) : 0;
        if (pl->od_replicas > 0 && !finite_pos(rt->od))
            return -1;
        pl->usd = (double)sz->n * hours *
                  (pl->od_replicas * (pl->od_replicas > 0 ? rt->od : 0) +
                   (pl->replicas - pl->od_replicas) * rt->hourly);
        return 0;
    }
    pl->usd = pl->replicas * (double)sz->n * rt->hourly * hours;
    return 0;
}

/* The load too large to count on a candidate: an input error naming the load's field. */
static int too_large(const struct tb_csv_table *t, size_t r, const struct workload *w,
                     const char *cand, const struct sizing *sz, char *err, size_t errlen)
{
    char what[400];
    if (w->phase == TB_PHASE_SERVE)
        snprintf(what, sizeof what,
                 "%.6g requests/s x %.3g s end to end = %.3g requests in flight on %s (%.6g per "
                 "replica): past 2^53, more than can be counted; refused, not clamped",
                 w->rps, sz->e2e_s, w->rps * sz->e2e_s, cand, sz->conc);
    else if (w->phase == TB_PHASE_TRAIN)
        snprintf(what, sizeof what,
                 "%.6g tokens at %.6g tokens/s = %.3g cluster-hours of %ld x %s: past 2^53, more "
                 "than can be counted; refused, not clamped",
                 w->need, sz->cap, w->need / sz->cap / 3600, sz->n, cand);
    else
        snprintf(what, sizeof what,
                 "%.6g images/s at %.6g per replica of %s: past 2^53 replicas; refused, not "
                 "clamped",
                 w->need, sz->cap, cand);
    return bad(t, r, w->load_field, what, err, errlen);
}

/* The price of an instance type under a purchase model in a region (check pc->have). */
static void price_of(const struct tb_model *m, const char *inst, const char *region,
                     const char *purchase, struct tb_price_choice *pc)
{
    char e[512];
    if (tb_pricing_target_price(m->pricing, inst, region, purchase, pc, e, sizeof e) != 0) {
        pc->have = false;
        snprintf(pc->why, sizeof pc->why, "%.500s", e);
    }
}

/* Whether a workload may be bought under a purchase model, as AWS sells it (README
 * "Purchase models"): an always-on fleet never as Capacity Blocks (they end), at spot
 * only where the file keeps a reserve on on-demand; a training job any way. */
static bool sold_for(const struct workload *w, const char *purchase)
{
    if (w->phase == TB_PHASE_TRAIN)
        return true;
    if (!strcmp(purchase, "capacity-block"))
        return false;
    return strcmp(purchase, "spot") != 0 || !isnan(w->spot_reserve);
}

/* A row's prices: hp, by the hour (training) or the always-on fleet's; cp, training's
 * cheapest commitment; op, the on-demand price of an always-on fleet's spot reserve. */
struct prices {
    struct tb_price_choice hp, cp, op;
};

static void no_price(struct tb_price_choice *pc)
{
    memset(pc, 0, sizeof *pc);
}

/* A candidate's prices (struct prices): hp under the workload's purchase model (always-on
 * fleets: whatever it is, and op for a spot reserve; training: on-demand when the
 * workload buys a commitment), and for training cp, the cheapest commitment: the
 * workload's own when it buys one, else any of COMMITMENTS priced in the region. With
 * only (the current instance as bought now), the workload's own purchase model alone.
 * The prices it lacks, said in note. */
static void candidate_prices(const struct tb_model *m, const struct workload *w, const char *inst,
                             bool only, struct prices *px, char *note, size_t nlen)
{
    bool commit = is_commitment(w->purchase);
    size_t used = 0;
    no_price(&px->cp);
    no_price(&px->op);
    note[0] = '\0';
    if (w->phase != TB_PHASE_TRAIN) {
        price_of(m, inst, w->region, w->purchase, &px->hp);
        if (px->hp.have && w->spot_reserve > 0) {
            price_of(m, inst, w->region, "on-demand", &px->op);
            if (!px->op.have) {
                px->hp.have = false;
                snprintf(px->hp.why, sizeof px->hp.why,
                         "no on-demand price for the spot reserve: %.400s", px->op.why);
            }
        }
        if (!px->hp.have)
            snprintf(note, nlen, "%s", px->hp.why);
        return;
    }
    if (only && commit) {
        no_price(&px->hp);
        price_of(m, inst, w->region, w->purchase, &px->cp);
        if (!px->cp.have)
            snprintf(note, nlen, "%s", px->cp.why);
        return;
    }
    price_of(m, inst, w->region, commit ? "on-demand" : w->purchase, &px->hp);
    if (!px->hp.have)
        used += (size_t)snprintf(note, nlen, "%s", px->hp.why);
    if (only)
        return;
    if (commit) {
        price_of(m, inst, w->region, w->purchase, &px->cp);
    } else {
        for (size_t i = 0; COMMITMENTS[i]; i++) {
            struct tb_price_choice x;
            price_of(m, inst, w->region, COMMITMENTS[i], &x);
            if (x.have && (!px->cp.have || x.usd_per_hour < px->cp.usd_per_hour))
                px->cp = x;
        }
    }
    if (!px->cp.have && used < nlen) {
        if (commit)
            snprintf(note + used, nlen - used, "%s%s", used ? "; " : "", px->cp.why);
        else
            snprintf(note + used, nlen - used,
                     "%sno reserved-1y, reserved-3y, savings-plan-1y or savings-plan-3y price for "
                     "'%s' in '%s'",
                     used ? "; " : "", inst, w->region);
    }
}

/* Whether a candidate with prices px compares like for like under the workload's
 * purchase model and region: it has a price there, and so has the current instance (or
 * the file gives what the workload costs now). */
static bool like_priced(const struct tb_model *m, const struct workload *w, const struct prices *px)
{
    struct tb_price_choice c;
    if (!px->hp.have && !px->cp.have)
        return false;
    if (!isnan(w->current_usd_month))
        return true;
    price_of(m, w->current, w->region, w->purchase, &c);
    return c.have;
}

/* A candidate that cannot be compared under the workload's purchase model and region (it
 * or the current instance has no price there): its prices at the nearest purchase model
 * the workload may be bought with (sold_for) and region where the current instance has a
 * price too (tb_cost_pair_basis; with the spend given in the file, where the candidate
 * has one), *wp the workload as priced there (its purchase and region pointing into row),
 * row->cmp_basis and the note saying so. Leaves px without a price when there is none,
 * saying which purchase models were not offered and why. Returns 0, or -1 (out of
 * memory). */
static int nearest_comparable(const struct tb_model *m, const struct workload *w, const char *inst,
                              struct tb_assess_row *row, struct workload *wp, struct prices *px)
{
    struct tb_price_choice a, b;
    const char *order[TB_COST_NPURCHASE];
    char basis[96] = "", e[512], note[600];
    const char *other = isnan(w->current_usd_month) ? w->current : inst;
    bool found = false, unsold = false;
    size_t used = strlen(row->price_note);
    tb_cost_purchase_order(w->purchase, order);
    for (size_t k = 0; k < TB_COST_NPURCHASE && !found; k++) {
        if (tb_cost_pair_basis(m->pricing, inst, other, order[k], w->region, &a, &b, basis,
                               sizeof basis, e, sizeof e) != 0)
            return -1;
        if (!a.have || !b.have || strcmp(a.purchase, order[k]) != 0)
            continue;
        if (sold_for(w, order[k]))
            found = true;
        else
            unsold = true;
    }
    if (!found) {
        if (unsold && used < sizeof row->price_note)
            snprintf(row->price_note + used, sizeof row->price_note - used,
                     "%sno on-demand, reserved or savings-plan price where %s has one too: "
                     "capacity-block and spot are no basis for an always-on fleet (Capacity "
                     "Blocks end; spot is reclaimed)",
                     used ? "; " : "", strcmp(other, inst) ? other : "it");
        return 0;
    }
    snprintf(row->cmp_basis, sizeof row->cmp_basis, "%s", basis);
    snprintf(row->purchase, sizeof row->purchase, "%s", a.purchase);
    snprintf(row->region, sizeof row->region, "%s", a.region);
    *wp = *w;
    wp->purchase = row->purchase;
    wp->region = row->region;
    candidate_prices(m, wp, inst, false, px, note, sizeof note);
    if (row->price_note[0])
        snprintf(note, sizeof note, "%.400s; ", row->price_note);
    else
        snprintf(note, sizeof note, "%s has no %s price in %s; ", other, w->purchase, w->region);
    snprintf(row->price_note, sizeof row->price_note,
             "%.380spriced at the nearest comparable, %.96s, where %.64s has a price too", note,
             basis, strcmp(other, inst) ? other : "it");
    return 0;
}

static void cite(const struct tb_price_choice *pc, char *buf, size_t len)
{
    snprintf(buf, len, "$%.4g/h %s %s, %.90s, %.300s", pc->usd_per_hour, pc->region, pc->purchase,
             pc->as_of, pc->source);
}

/* The rates of prices px for a workload w (capacity-block: whole days for training). */
static struct rates rates_from(const struct workload *w, const struct prices *px)
{
    struct rates rt =
        rates_of(px->hp.have ? px->hp.usd_per_hour : NAN, px->cp.have ? px->cp.usd_per_hour : NAN);
    rt.cblock =
        w->phase == TB_PHASE_TRAIN && px->hp.have && !strcmp(px->hp.purchase, "capacity-block");
    if (w->phase != TB_PHASE_TRAIN && !isnan(w->spot_reserve)) {
        rt.reserve = w->spot_reserve;
        rt.od = px->op.have ? px->op.usd_per_hour : NAN;
    }
    return rt;
}

/* What a plan buys, in words (the row's basis). */
static void basis_of(const struct workload *w, const struct plan *pl, long n, const char *purchase,
                     char *buf, size_t len)
{
    if (w->phase != TB_PHASE_TRAIN && !isnan(pl->od_replicas))
        snprintf(buf, len, "spot, always on, %.0f of %.0f replica%s on on-demand (spot_reserve %g)",
                 pl->od_replicas, pl->replicas, pl->replicas > 1 ? "s" : "", w->spot_reserve);
    else if (w->phase != TB_PHASE_TRAIN)
        snprintf(buf, len, "%s, always on", purchase);
    else if (pl->committed)
        snprintf(buf, len, "%s, %.0f cluster%s always on", purchase, pl->replicas,
                 pl->replicas > 1 ? "s" : "");
    else if (!isnan(pl->cb_days))
        snprintf(buf, len,
                 "capacity-block, %.0f days x %.0f instance%s bought up front, %.0f%% used",
                 pl->cb_days, pl->replicas * (double)n, pl->replicas * (double)n > 1 ? "s" : "",
                 100 * pl->cb_used);
    else if (!strcmp(purchase, "spot"))
        snprintf(buf, len, "spot hours (interruptible: restarts from checkpoints)");
    else
        snprintf(buf, len, "%s hours", purchase);
}

/* Price a sized row at its prices px: the cheaper (training), what is bought, the model's
 * error as capacity +-err. Returns TB_OK, or TB_EINPUT (a count past 2^53). */
static int price_row(const struct tb_csv_table *t, size_t r, const struct workload *w,
                     const struct tb_assess_opts *o, const struct sizing *sz,
                     const struct prices *px, struct tb_assess_row *row, char *err, size_t errlen)
{
    struct plan pl, lo, hi;
    struct rates rt = rates_from(w, px);

    if (!px->hp.have && !px->cp.have) {
        snprintf(row->why, sizeof row->why, "no price: %.500s", row->price_note);
        row->price_note[0] = '\0';
        return TB_OK;
    }
    if (plan_at(w, sz, 1, &rt, o->hours_per_month, &pl) != 0)
        return too_large(t, r, w, row->candidate, sz, err, errlen);
    {
        const struct tb_price_choice *used = pl.committed || !px->hp.have ? &px->cp : &px->hp;
        double f_lo = 1 - fmin(row->model_err, 0.9), f_hi = 1 + row->model_err;
        struct rates same = rt;
        row->usd_per_hour = used->usd_per_hour;
        row->price_weak = used->secondary;
        row->price_line = used->line;
        snprintf(row->purchase, sizeof row->purchase, "%s", used->purchase);
        snprintf(row->region, sizeof row->region, "%s", used->region);
        cite(used, row->price, sizeof row->price);
        /* the model's error: the same purchase, capacity lower and higher */
        if (used == &px->cp)
            same.hourly = NAN;
        else
            same.committed = NAN;
        if (plan_at(w, sz, f_lo, &same, o->hours_per_month, &lo) != 0 ||
            plan_at(w, sz, f_hi, &same, o->hours_per_month, &hi) != 0)
            return too_large(t, r, w, row->candidate, sz, err, errlen);
    }
    row->replicas = pl.replicas;
    row->fleet = (long)(pl.replicas * (double)sz->n);
    row->in_flight = pl.in_flight;
    row->bound = pl.bound;
    row->cluster_hours = pl.cluster_hours;
    row->utilisation =
        !isnan(pl.cb_used) ? pl.cb_used : pl.cluster_hours / (pl.replicas * o->hours_per_month);
    row->cblock_days = pl.cb_days;
    row->od_replicas = pl.od_replicas;
    row->break_even_util = pl.break_even;
    row->committed = w->phase == TB_PHASE_TRAIN && (pl.committed || !px->hp.have);
    if (!isnan(pl.break_even))
        snprintf(row->break_even_purchase, sizeof row->break_even_purchase, "%s", px->cp.purchase);
    basis_of(w, &pl, sz->n, row->purchase, row->basis, sizeof row->basis);
    row->monthly_usd = pl.usd;
    /* converted to savings once what it costs now is known */
    row->saving_lo_model = lo.usd;
    row->saving_hi_model = hi.usd;
    row->ok = true;
    return TB_OK;
}

/* The baseline of a row, like for like: the current fleet (sized cur) under the row's
 * purchase model in its region, paid the same way (by the hour, as whole-day Capacity
 * Blocks, committed, or at spot with the same reserve); where the current instance has
 * no such price, its on-demand price there, said so (as the report's cost stage does,
 * tb_cost.h). Returns 0, or -1 when a count passes 2^53. */
static int baseline(const struct tb_model *m, const struct workload *w,
                    const struct tb_assess_opts *o, const struct sizing *cur,
                    struct tb_assess_row *row)
{
    struct prices px;
    struct rates rt;
    struct plan pl;
    struct workload wb = *w;

    row->base_usd = NAN;
    row->base_usd_per_hour = NAN;
    row->base_weak = false;
    row->like_for_like = false;
    wb.region = row->region;
    no_price(&px.hp);
    no_price(&px.cp);
    no_price(&px.op);
    price_of(m, w->current, row->region, row->purchase, row->committed ? &px.cp : &px.hp);
    if (px.hp.have || px.cp.have) {
        row->like_for_like = true;
        snprintf(row->base_basis, sizeof row->base_basis, "%s %s in %s", w->current, row->purchase,
                 row->region);
        snprintf(row->base_how, sizeof row->base_how, "%.31s%s%.31s", row->purchase,
                 strcmp(row->region, w->region) ? " in " : "",
                 strcmp(row->region, w->region) ? row->region : "");
        if (w->phase != TB_PHASE_TRAIN && w->spot_reserve > 0) {
            price_of(m, w->current, row->region, "on-demand", &px.op);
            if (!px.op.have) {
                row->like_for_like = false;
                snprintf(row->base_basis, sizeof row->base_basis,
                         "unknown: %s has no on-demand price in %s for the spot reserve",
                         w->current, row->region);
                return 0;
            }
        }
    } else if (strcmp(row->purchase, "on-demand") != 0) {
        price_of(m, w->current, row->region, "on-demand", &px.hp);
        wb.spot_reserve = NAN;
        if (px.hp.have) {
            snprintf(row->base_basis, sizeof row->base_basis,
                     "%s on-demand in %s (it has no %s price there: not like for like)", w->current,
                     row->region, row->purchase);
            snprintf(row->base_how, sizeof row->base_how, "on-demand in %.31s", row->region);
        }
    }
    if (!px.hp.have && !px.cp.have) {
        snprintf(row->base_basis, sizeof row->base_basis, "unknown: %s has no %s price in %s",
                 w->current, row->purchase, row->region);
        return 0;
    }
    rt = rates_from(&wb, &px);
    if (plan_at(&wb, cur, 1, &rt, o->hours_per_month, &pl) != 0)
        return -1;
    row->base_usd = pl.usd;
    row->base_usd_per_hour = px.hp.have ? px.hp.usd_per_hour : px.cp.usd_per_hour;
    row->base_weak = (px.hp.have ? px.hp.secondary : px.cp.secondary) && !px.op.have;
    return 0;
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

/* What the workload costs now, modeled: the current fleet (sized cur) under the
 * workload's own purchase model and region, paid as that model is (by the hour, whole
 * days of Capacity Blocks, clusters bought for the month, spot with its reserve).
 * Returns 0 with *usd (NAN, and why, without such a price), or -1 when a count passes
 * 2^53. */
static int current_cost(const struct tb_model *m, const struct workload *w,
                        const struct tb_assess_opts *o, const struct sizing *cur, double *usd,
                        char *why, size_t len)
{
    struct prices px;
    struct rates rt;
    struct plan pl;
    char c[600], note[600];
    const struct tb_price_choice *pc;

    *usd = NAN;
    candidate_prices(m, w, w->current, true, &px, note, sizeof note);
    if (!px.hp.have && !px.cp.have) {
        snprintf(why, len, "unknown: %.400s", note);
        return 0;
    }
    pc = px.hp.have ? &px.hp : &px.cp;
    rt = rates_from(w, &px);
    if (plan_at(w, cur, 1, &rt, o->hours_per_month, &pl) != 0)
        return -1;
    *usd = pl.usd;
    /* the price without its source (the source is the candidate row's tooltip): a long
     * address would not wrap on a phone */
    snprintf(c, sizeof c, "$%.4g/h %s %s, %.90s", pc->usd_per_hour, pc->region, pc->purchase,
             pc->as_of);
    if (w->phase == TB_PHASE_TRAIN) {
        char b[200];
        basis_of(w, &pl, cur->n, pc->purchase, b, sizeof b);
        snprintf(why, len, "modeled: %.4g cluster-hours a month of %ld x %.64s, %.120s, at %.200s",
                 pl.cluster_hours, cur->n, w->current, b, c);
    } else {
        snprintf(why, len, "modeled: %.0f x %s, always on, at %.300s", pl.replicas * (double)cur->n,
                 w->current, c);
    }
    return 0;
}

/* A whole number of dollars with thousands separators: "$17,357", "-$2,368". */
static const char *usd(double v, char *buf, size_t len)
{
    char d[48];
    size_t n, k = 0, o = 0;
    snprintf(d, sizeof d, "%.0f", fabs(v));
    n = strlen(d);
    if (v <= -0.5 && o + 1 < len)
        buf[o++] = '-';
    if (o + 1 < len)
        buf[o++] = '$';
    for (; k < n && o + 2 < len; k++) {
        if (k && (n - k) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = d[k];
    }
    buf[o] = '\0';
    return buf;
}

const char *tb_assess_versus(double a, double b, char *buf, size_t len)
{
    double f = (b - a) / b;
    if (!(b > 0) || isnan(a))
        buf[0] = '\0';
    else if (fabs(a - b) < 0.005)
        snprintf(buf, len, "the same");
    else if (f > 0)
        snprintf(buf, len, "%.0f%% less", 100 * f);
    else if (a / b >= 2)
        snprintf(buf, len, a / b < 9.95 ? "%.1fx the cost" : "%.0fx the cost", a / b);
    else
        snprintf(buf, len, "costs %.0f%% more", -100 * f);
    return buf;
}

/* tb_assess_versus, or "no comparison" where there is none (a verdict's words). */
static void versus_words(double a, double b, char *buf, size_t len)
{
    if (!*tb_assess_versus(a, b, buf, len))
        snprintf(buf, len, "no comparison");
}

/* Why a row's model-error range has no width: the whole replicas, clusters or days
 * bought carry the load with room for the error. */
static void headroom_note(const struct tb_assess_row *r, enum tb_phase phase, char *buf, size_t len)
{
    const char *unit = r->replicas > 1 ? "replicas" : "replica";
    if (phase == TB_PHASE_SERVE && !strcmp(r->bound, "latency"))
        snprintf(buf, len,
                 "no change: %.0f %s hold %.0f requests in flight, %.0f needed, room for the "
                 "error",
                 r->replicas, unit, r->replicas * r->concurrency, r->in_flight);
    else if (phase != TB_PHASE_TRAIN)
        snprintf(buf, len, "no change: %.0f %s carry %.4g %s, %.4g needed, room for the error",
                 r->replicas, unit, r->replicas * r->capacity, r->cap_unit, r->need);
    else if (!isnan(r->cblock_days))
        snprintf(buf, len,
                 "no change: the %.0f days bought hold %.0f cluster-hours, room for the "
                 "error",
                 r->cblock_days, r->cluster_hours);
    else
        snprintf(buf, len,
                 "no change: %.0f cluster%s bought for the month hold %.0f cluster-hours, room "
                 "for the error",
                 r->replicas, r->replicas > 1 ? "s" : "", r->cluster_hours);
}

/* Savings against what it costs now (cur) and like for like, break-even, sensitivity and
 * each row's comparison in words for a workload's rows [first, last). */
static void compare(struct tb_assessment *as, size_t first, size_t last, const struct workload *wk,
                    const struct tb_assess_opts *o)
{
    size_t wi = as->rows[first].workload;
    double cur = as->current_monthly[wi];
    bool modeled_now = isnan(wk->current_usd_month);
    for (size_t i = first; i < last; i++) {
        struct tb_assess_row *row = &as->rows[i];
        double lo = row->saving_lo_model, hi = row->saving_hi_model; /* costs, for now */
        char w[64];
        row->saving_lo_model = row->saving_hi_model = NAN;
        if (!row->ok)
            continue;
        row->like_saving_usd = row->base_usd - row->monthly_usd;
        row->like_saving_frac = row->like_saving_usd / row->base_usd;
        if (isnan(cur)) {
            snprintf(row->compare, sizeof row->compare, "what it costs now is unknown");
            continue;
        }
        row->saving_usd = cur - row->monthly_usd;
        row->saving_frac = row->saving_usd / cur;
        row->break_even_months =
            row->saving_usd > 0 ? wk->migration_usd / row->saving_usd : INFINITY;
        if (row->current)
            row->break_even_months = NAN; /* the same hardware: nothing to migrate */
        if (!(row->current && !row->rebuy && modeled_now)) {
            /* (the current fleet as bought now: its price moves what it costs now alike) */
            row->saving_lo_price = cur - row->monthly_usd * (1 + o->price_swing);
            row->saving_hi_price = cur - row->monthly_usd * (1 - o->price_swing);
        }
        if (row->current && modeled_now) {
            /* the same hardware as now: the model's error moves both alike */
            snprintf(row->model_note, sizeof row->model_note,
                     "the same hardware as now: the model's error moves both alike");
        } else {
            /* capacity lower: more cost, the lower saving */
            row->saving_lo_model = cur - lo;
            row->saving_hi_model = cur - hi;
            if (row->model_err > 0 && !(fabs(lo - hi) > 0.005))
                headroom_note(row, wk->phase, row->model_note, sizeof row->model_note);
            else if (!(row->model_err > 0))
                snprintf(row->model_note, sizeof row->model_note,
                         "the model has no error figure for this chip family");
        }
        versus_words(row->monthly_usd, cur, w, sizeof w);
        if (row->current && !row->rebuy)
            snprintf(row->compare, sizeof row->compare, "%s",
                     fabs(row->monthly_usd - cur) < 0.005 ? "what it costs now"
                                                          : "as bought now, modeled; the file "
                                                            "gives what it costs now");
        else
            snprintf(row->compare, sizeof row->compare, "%s than now", w);
        if (row->current && !row->rebuy)
            ; /* said above */
        else if (!strcmp(w, "the same"))
            snprintf(row->compare, sizeof row->compare, "the same as now");
        else if (strstr(w, "x the cost"))
            snprintf(row->compare, sizeof row->compare, "%s now", w);
    }
}

/* Whether a row's monthly cost scales with its hourly price (no share of the fleet on
 * another purchase model's price): then the price at which a saving flips is
 * tb_cost_flip_rate's. */
static bool scales(const struct tb_assess_row *r)
{
    return isnan(r->od_replicas) || r->od_replicas <= 0;
}

/* Where a move's saving rests on a weak price (status secondary, tb_pricing.h), say so
 * beside it with the price at which it flips, so a team can hold its own quote against
 * it: "; trn2.48xlarge's price, $35.7608/h (capacity-block in us-east-2, prices.csv line
 * 31), rests on a secondary source: the move saves while it stays under $41.53/h". keep
 * is the alternative the saving is against when it is the current instance bought
 * another way (NULL: what the team pays now), priced at keep_rate, weak when keep_weak.
 * Appends at v + n; returns the new length. */
static size_t weak_price_note(char *v, size_t n, size_t len, const struct tb_assess_row *best,
                              double alt, const char *current, bool keep_weak, double keep_rate,
                              bool keep_scales)
{
    double flip = tb_cost_flip_rate(best->usd_per_hour, best->monthly_usd, alt);
    double kflip = tb_cost_flip_rate(keep_rate, alt, best->monthly_usd);
    bool mine = best->price_weak, theirs = keep_weak && tb_cost_positive(keep_rate);
    if (mine && n < len) {
        n += (size_t)snprintf(v + n, len - n,
                              "; %s's price, $%.10g/h (%s in %s, prices.csv line %ld), rests on "
                              "a secondary source",
                              best->candidate, best->usd_per_hour, best->purchase, best->region,
                              best->price_line);
        if (scales(best) && tb_cost_positive(flip) && n < len)
            n += (size_t)snprintf(v + n, len - n, ": the move saves while it stays under $%.2f/h",
                                  flip);
    }
    if (theirs && n < len) {
        n += (size_t)snprintf(v + n, len - n,
                              mine ? "; %s's, $%.10g/h, too"
                                   : "; %s's price "
                                     "bought that way, $%.10g/h, rests on a secondary source",
                              current, keep_rate);
        if (keep_scales && tb_cost_positive(kflip) && n < len)
            n += (size_t)snprintf(v + n, len - n, ": the move saves while that stays above $%.2f/h",
                                  kflip);
    }
    return n < len ? n : len;
}

/* The one verdict of workload wi, from its rows [first, last) and what it costs now,
 * every figure in it shown in its table: buying the current hardware differently is said
 * first where that is cheaper than any move. */
static void workload_verdict(struct tb_assessment *as, size_t first, size_t last,
                             const struct workload *wk, const struct tb_assess_opts *o)
{
    size_t wi = as->rows[first].workload;
    double cur = as->current_monthly[wi], keep_usd = INFINITY, alt;
    const struct tb_assess_row *best = NULL;
    const char *keep_how = NULL, *now_how = wk->purchase;
    bool keep_weak = false, keep_scales = true; /* keep's price (weak_price_note) */
    double keep_rate = NAN;
    char *v = as->verdict[wi], words[64], a[32], b[32], c[32], t[32];
    size_t len = sizeof as->verdict[wi], n = 0;

    for (size_t i = first; i < last; i++) {
        const struct tb_assess_row *r = &as->rows[i];
        if (!r->ok)
            continue;
        if (r->rebuy && r->monthly_usd < keep_usd) {
            keep_usd = r->monthly_usd;
            keep_how = r->purchase;
            keep_weak = r->price_weak;
            keep_rate = r->usd_per_hour;
            keep_scales = scales(r);
        } else if (!r->current && (!best || r->monthly_usd < best->monthly_usd)) {
            best = r;
        }
        /* the current fleet bought as a candidate is: shown beside it, like for like */
        if (!r->current && r->like_for_like && r->base_usd < keep_usd &&
            strcmp(r->base_basis, "the spend given in the file") != 0) {
            keep_usd = r->base_usd;
            keep_how = r->base_how;
            keep_weak = r->base_weak;
            keep_rate = r->base_usd_per_hour;
            keep_scales = !(wk->spot_reserve > 0);
        }
    }
    if (isnan(cur)) {
        if (best)
            snprintf(v, len,
                     "no verdict: what it costs now is unknown (%.300s); the cheapest priced here "
                     "is %s at %s a month (%s)",
                     as->current_why[wi], best->candidate, usd(best->monthly_usd, a, sizeof a),
                     best->basis);
        else
            snprintf(v, len, "no verdict: what it costs now is unknown (%.300s)",
                     as->current_why[wi]);
        return;
    }
    usd(cur, c, sizeof c);
    /* buying the current hardware another way, where it beats every move: said first */
    if (keep_how && keep_usd < cur - 0.005 && (!best || keep_usd <= best->monthly_usd)) {
        versus_words(keep_usd, cur, words, sizeof words);
        n = (size_t)snprintf(v, len, "keep %s, buy it as %s: %s a month, %s than now (%s %s)",
                             wk->current, keep_how, usd(keep_usd, a, sizeof a), words, c, now_how);
        if (best && n < len)
            n += (size_t)snprintf(v + n, len - n, ", below %s's %s, the cheapest move",
                                  best->candidate, usd(best->monthly_usd, b, sizeof b));
        if (cur < o->min_monthly_usd && n < len)
            snprintf(v + n, len - n,
                     "; the spend is under the %s threshold where a migration rarely pays",
                     usd(o->min_monthly_usd, t, sizeof t));
        return;
    }
    if (cur < o->min_monthly_usd) {
        n = (size_t)snprintf(v, len,
                             "keep %s: the spend, %s a month, is under the %s threshold where a "
                             "migration rarely pays",
                             wk->current, c, usd(o->min_monthly_usd, t, sizeof t));
        if (best && best->monthly_usd < cur && n < len)
            snprintf(v + n, len - n, " (the cheapest move, %s at %s, would save %s a month)",
                     best->candidate, usd(best->monthly_usd, a, sizeof a),
                     usd(cur - best->monthly_usd, b, sizeof b));
        return;
    }
    alt = keep_how && keep_usd < cur ? keep_usd : cur;
    if (best && best->monthly_usd < alt - 0.005) {
        double s = (alt - best->monthly_usd) / alt;
        double worst = cur - best->saving_lo_model; /* its cost at the model's low capacity */
        usd(best->monthly_usd, a, sizeof a);
        if (alt < cur)
            n = (size_t)snprintf(v, len,
                                 "move to %s (%s): %s a month, %.0f%% less than keeping %s "
                                 "bought as %s (%s; now %s %s)",
                                 best->candidate, best->basis, a, 100 * s, wk->current, keep_how,
                                 usd(alt, b, sizeof b), c, now_how);
        else
            n = (size_t)snprintf(v, len,
                                 "move to %s (%s): %s a month, %.0f%% less than now (%s %s)",
                                 best->candidate, best->basis, a, 100 * s, c, now_how);
        if (best->like_for_like && !isnan(best->base_usd) && fabs(best->base_usd - alt) > 0.005 &&
            fabs(best->base_usd - cur) > 0.005 && n < len) {
            versus_words(best->monthly_usd, best->base_usd, words, sizeof words);
            n += (size_t)snprintf(v + n, len - n, "; like for like (%s, %s): %s", best->base_basis,
                                  usd(best->base_usd, b, sizeof b), words);
        }
        if (n >= len)
            return;
        if (s < o->claim_low)
            n += (size_t)snprintf(v + n, len - n, "; under the %.0f-%.0f%% usually claimed",
                                  100 * o->claim_low, 100 * o->claim_high);
        else if (s <= o->claim_high)
            n += (size_t)snprintf(
                v + n, len - n, "; within the %.0f-%.0f%% usually claimed: worth a pilot%s",
                100 * o->claim_low, 100 * o->claim_high,
                wk->migration_usd / (alt - best->monthly_usd) > 12 ? " (break-even over a year)"
                                                                   : "");
        else
            n += (size_t)snprintf(v + n, len - n,
                                  "; above the usual claims: measure before believing it");
        if (n < len && worst >= alt)
            n += (size_t)snprintf(v + n, len - n, "; within the model's error of no saving");
        if (n < len)
            weak_price_note(v, n, len, best, alt, wk->current, alt < cur && keep_weak, keep_rate,
                            keep_scales);
        return;
    }
    n = (size_t)snprintf(v, len, "keep %s as bought now (%s a month %s): ", wk->current, c,
                         now_how);
    if (n >= len)
        return;
    if (best) {
        versus_words(best->monthly_usd, cur, words, sizeof words);
        snprintf(v + n, len - n, "no candidate costs less; the cheapest, %s at %s, %s%s",
                 best->candidate, usd(best->monthly_usd, a, sizeof a),
                 strncmp(words, "costs ", 6) ? "is " : "", words);
    } else {
        snprintf(v + n, len - n, "no candidate could be sized and priced");
    }
}

/* The ways the current instance is sold besides how the team buys it now (rebuy rows). */
static const char *const REBUY[] = {
    "on-demand",       "reserved-1y",    "reserved-3y", "savings-plan-1y",
    "savings-plan-3y", "capacity-block", NULL};

int tb_assess_run(struct tb_assessment *as, const char *path, const struct tb_model *m,
                  const struct tb_assess_opts *o, char *err, size_t errlen)
{
    static const char *const need[] = {"name", "model", "phase", "current_instance", NULL};
    struct workload *w = NULL;
    struct sizing *sz = NULL;
    struct tb_validation v;
    size_t cap_rows, ninst;
    const struct tb_instance *insts;
    char rpath[PATH_MAX];
    int rc = TB_EFAIL;

    memset(as, 0, sizeof *as);
    memset(&v, 0, sizeof v);
    if (tb_csv_load(&as->csv, path, err, errlen) != 0)
        return TB_EINPUT;
    if (tb_csv_require(&as->csv, need, err, errlen) != 0 ||
        check_columns(&as->csv, err, errlen) != 0) {
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
    as->phase = tb_alloc_array(as->csv.nrows, sizeof *as->phase);
    as->verdict = calloc(as->csv.nrows, sizeof *as->verdict);
    ninst = tb_pricing_instances(m->pricing, &insts);
    /* every candidate, and the current instance bought each other way (REBUY) */
    cap_rows = as->csv.nrows * (ninst + sizeof REBUY / sizeof REBUY[0]);
    as->rows = calloc(cap_rows, sizeof *as->rows);
    sz = tb_alloc_array(ninst + 1, sizeof *sz);
    if (!w || !as->current_monthly || !as->current_why || !as->phase || !as->verdict || !as->rows ||
        !sz) {
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
        as->phase[r] = w[r].phase;
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
        const struct sizing *cur_sz = NULL;
        const struct tb_assess_row *cur_row = NULL;
        const char *cur_why = "not in the catalogue's instances";
        double cur = wk->current_usd_month;
        for (size_t i = 0; i < ninst; i++) {
            const struct tb_instance *in = &insts[i];
            const struct tb_chip *chip = tb_pricing_chip(m->pricing, in->chip);
            const struct tb_model_eff *e = tb_model_eff_of(m, in->chip);
            struct tb_assess_row *row = &as->rows[as->nrows];
            struct sizing *s = &sz[as->nrows - first];
            struct prices px;
            struct workload wp;
            as->nrows++;
            row->workload = wi;
            row->candidate = in->instance;
            row->current = !strcmp(in->instance, wk->current);
            row->cap_unit = wk->phase == TB_PHASE_DENOISE ? "images/s" : "tokens/s";
            row->need = wk->need;
            row->need_unit = wk->phase == TB_PHASE_DENOISE ? "images/s"
                             : wk->phase == TB_PHASE_TRAIN ? "tokens/month"
                                                           : "tokens/s";
            row->rps = wk->phase == TB_PHASE_SERVE ? wk->rps : NAN;
            row->e2e_s = row->in_flight = row->concurrency = NAN;
            row->cluster_hours = row->utilisation = row->break_even_util = NAN;
            row->cblock_days = row->od_replicas = NAN;
            row->like_saving_usd = row->like_saving_frac = NAN;
            row->replicas = NAN;
            row->bound = "";
            row->monthly_usd = row->saving_usd = row->saving_frac = row->base_usd = NAN;
            row->saving_lo_price = row->saving_hi_price = NAN;
            row->saving_lo_model = row->saving_hi_model = NAN;
            row->break_even_months = NAN;
            row->model_err = NAN;
            if (!chip || !e) {
                snprintf(row->why, sizeof row->why,
                         "no efficiency figures for chip '%s' (pricing/efficiency.csv): the "
                         "model cannot size it",
                         in->chip);
                continue;
            }
            {
                /* the report's band (cost.csv model_error_pct): one statement of the
                 * model's error, tb_validate_error's p90 for the family and phase */
                double pct;
                bool few;
                char ph[40];
                /* a mixture of experts: the band of its own rows ("serve+moe") */
                snprintf(ph, sizeof ph, "%s%s", tb_phase_to_string(wk->phase),
                         wk->phase != TB_PHASE_DENOISE && wk->arch.experts > 0 ? "+moe" : "");
                row->model_err =
                    tb_validate_error(&v, chip->name, ph, &pct, &few, row->model_err_basis,
                                      sizeof row->model_err_basis)
                        ? pct / 100.0
                        : NAN;
            }
            row->family = e->family;
            risks_of(as->have_risks ? &as->risks : NULL, e->family, row->risks, sizeof row->risks);
            if (wk->phase == TB_PHASE_TRAIN && strstr(chip->name, "Inferentia")) {
                snprintf(row->why, sizeof row->why, "an inference chip: not a training target");
                continue;
            }
            /* the prices it lacks are said whether or not it holds the model; with none
             * under the workload's purchase model and region, the nearest comparable where
             * the current instance has a price too (the report's rule, tb_cost_pair_basis),
             * said in the note */
            candidate_prices(m, wk, in->instance, row->current, &px, row->price_note,
                             sizeof row->price_note);
            if (!like_priced(m, wk, &px) &&
                nearest_comparable(m, wk, in->instance, row, &wp, &px) != 0) {
                tb_err(err, errlen, "out of memory");
                goto out;
            }
            if (row->current)
                cur_why = row->why;
            if (!size_layout(m, wk, in, s, row->layout, sizeof row->layout, row->why,
                             sizeof row->why))
                continue;
            if (row->current) {
                cur_sz = s;
                cur_row = row;
            }
            row->instances = s->n;
            row->capacity = s->cap;
            if (wk->phase == TB_PHASE_SERVE) {
                row->concurrency = s->conc;
                row->e2e_s = s->e2e_s;
            }
            rc = price_row(&as->csv, wi, row->cmp_basis[0] ? &wp : wk, o, s, &px, row, err, errlen);
            if (rc != TB_OK)
                goto out;
            rc = TB_EFAIL;
        }
        /* what the workload costs now */
        if (!isnan(cur)) {
            snprintf(as->current_why[wi], sizeof as->current_why[wi], "given in the file");
        } else if (!cur_sz) {
            snprintf(as->current_why[wi], sizeof as->current_why[wi],
                     "unknown: %s could not be sized (%.400s)", wk->current, cur_why);
        } else if (current_cost(m, wk, o, cur_sz, &cur, as->current_why[wi],
                                sizeof as->current_why[wi]) != 0) {
            rc = too_large(&as->csv, wi, wk, wk->current, cur_sz, err, errlen);
            goto out;
        }
        as->current_monthly[wi] = cur;
        /* the current instance bought each other way it is sold, in the workload's region */
        for (size_t k = 0; cur_sz && cur_row && REBUY[k]; k++) {
            struct tb_assess_row *row = &as->rows[as->nrows];
            struct workload wp = *wk;
            struct prices px;
            if (!strcmp(REBUY[k], wk->purchase))
                continue;
            wp.purchase = REBUY[k];
            wp.spot_reserve = NAN;
            if (!sold_for(&wp, REBUY[k]))
                continue;
            candidate_prices(m, &wp, wk->current, true, &px, row->price_note,
                             sizeof row->price_note);
            if (!px.hp.have && !px.cp.have)
                continue;
            *row = *cur_row;
            row->rebuy = true;
            row->ok = false;
            row->cmp_basis[0] = row->price_note[0] = row->why[0] = '\0';
            rc = price_row(&as->csv, wi, &wp, o, cur_sz, &px, row, err, errlen);
            if (rc != TB_OK)
                goto out;
            rc = TB_EFAIL;
            as->nrows++;
        }
        /* each row's baseline, like for like */
        for (size_t i = first; i < as->nrows; i++) {
            struct tb_assess_row *row = &as->rows[i];
            if (!row->ok)
                continue;
            if (row->current) {
                /* the current hardware: its own baseline */
                row->base_usd = row->monthly_usd;
                row->like_for_like = true;
                snprintf(row->base_basis, sizeof row->base_basis, "itself");
                snprintf(row->base_how, sizeof row->base_how, "%s", row->purchase);
            } else if (!isnan(wk->current_usd_month)) {
                row->base_usd = wk->current_usd_month;
                row->like_for_like = true;
                snprintf(row->base_basis, sizeof row->base_basis, "the spend given in the file");
            } else if (!cur_sz) {
                row->base_usd = NAN;
                snprintf(row->base_basis, sizeof row->base_basis, "%s", as->current_why[wi]);
            } else if (baseline(m, wk, o, cur_sz, row) != 0) {
                rc = too_large(&as->csv, wi, wk, wk->current, cur_sz, err, errlen);
                goto out;
            }
        }
        compare(as, first, as->nrows, wk, o);
        workload_verdict(as, first, as->nrows, wk, o);
    }
    rc = TB_OK;
out:
    tb_validate_release(&v);
    free(w);
    free(sz);
    if (rc != TB_OK)
        tb_assess_release(as);
    return rc;
}

void tb_assess_release(struct tb_assessment *as)
{
    free(as->rows);
    free(as->current_monthly);
    free(as->current_why);
    free(as->phase);
    free(as->verdict);
    if (as->have_risks)
        tb_csv_release(&as->risks);
    tb_csv_release(&as->csv);
    memset(as, 0, sizeof *as);
}
