/* harness/tb_report.c: see tb_report.h. Reads and checks every input first, then draws
 * the charts and writes the documents into a scratch folder, then renames. The
 * Markdown and HTML come from the same calls (struct tb_doc writes both), so they always
 * say the same thing. */
#include "tb_report.h"

#include "tb_csv.h"
#include "tb_doc.h"
#include "tb_plot.h"
#include "tb_pricing.h"
#include "tb_util.h"

#include <ctype.h>
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
    if (!(usd_per_hour > 0) || !(tokens_per_s > 0) || !isfinite(usd_per_hour) ||
        !isfinite(tokens_per_s))
        return NAN;
    return usd_per_hour / (tokens_per_s * 3600.0) * 1e6;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* ---- results rows ---- */

enum { PROV_MEASURED, PROV_MODELED, PROV_PUBLISHED, NPROV };
static const char *const PROV_NAMES[NPROV] = {"measured", "modeled", "published"};

struct rrow {
    const struct tb_csv_table *t; /* borrowed: the file the row is in */
    size_t r;                     /* row in t */
    int prov;                     /* PROV_* */
    double value, min, max;       /* NAN when empty */
    long n, warmup;               /* -1 when empty */
    long instances;               /* instances the throughput is for (empty: 1) */
};

static const char *F(const struct rrow *x, const char *name)
{
    return tb_csv_field(x->t, x->r, name);
}

static long rline(const struct rrow *x)
{
    return x->t->lines[x->r];
}

static int bad_field(const struct rrow *x, const char *name, const char *what, char *err,
                     size_t errlen)
{
    return tb_err(err, errlen, "%s: line %ld: field '%s': %s: '%s'", x->t->path, rline(x), name,
                  what, F(x, name));
}

/* Optional number: "" -> NAN. */
static int opt_num(const struct rrow *x, const char *name, double *out, char *err, size_t errlen)
{
    const char *s = F(x, name);
    char *end;
    if (!*s) {
        *out = NAN;
        return 0;
    }
    errno = 0;
    *out = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(*out) || isspace((unsigned char)*s))
        return bad_field(x, name, "not a number", err, errlen);
    return 0;
}

static int opt_count(const struct rrow *x, const char *name, long *out, char *err, size_t errlen)
{
    const char *s = F(x, name);
    if (!*s) {
        *out = -1;
        return 0;
    }
    if (tb_parse_long(s, 0, 1000000000L, out) != 0)
        return bad_field(x, name, "not a count (a whole number >= 0)", err, errlen);
    return 0;
}

static const char *const REQUIRED[] = {"provenance", "target", "model", "phase", "precision",
                                       "metric",     "value",  "unit",  NULL};

static int check_row(struct rrow *x, char *err, size_t errlen)
{
    static const char *const text[] = {"target", "model", "phase", "metric", NULL};
    static const char *const counts[] = {"batch", "seq_in", "seq_out", "layers", NULL};
    static const char *const nums[] = {"mean", "stddev", "flops", NULL};
    const char *p = F(x, "provenance");
    double scratch;
    long lscratch;

    x->prov = -1;
    for (int i = 0; i < NPROV; i++)
        if (!strcmp(p, PROV_NAMES[i]))
            x->prov = i;
    if (x->prov < 0)
        return bad_field(x, "provenance", "not measured, modeled or published", err, errlen);
    for (const char *const *f = text; *f; f++)
        if (!*F(x, *f))
            return tb_err(err, errlen, "%s: line %ld: field '%s': empty", x->t->path, rline(x), *f);
    if (!*F(x, "value"))
        return tb_err(err, errlen, "%s: line %ld: field 'value': empty", x->t->path, rline(x));
    if (opt_num(x, "value", &x->value, err, errlen) || opt_num(x, "min", &x->min, err, errlen) ||
        opt_num(x, "max", &x->max, err, errlen) || opt_count(x, "n", &x->n, err, errlen) ||
        opt_count(x, "warmup", &x->warmup, err, errlen) ||
        opt_count(x, "instances", &x->instances, err, errlen))
        return -1;
    if (x->instances < 1) {
        if (x->instances == 0)
            return bad_field(x, "instances", "must be at least 1", err, errlen);
        x->instances = 1; /* empty or absent */
    }
    for (const char *const *f = nums; *f; f++)
        if (opt_num(x, *f, &scratch, err, errlen))
            return -1;
    for (const char *const *f = counts; *f; f++)
        if (opt_count(x, *f, &lscratch, err, errlen))
            return -1;
    if (!isnan(x->min) && !isnan(x->max) && x->min > x->max)
        return bad_field(x, "min", "greater than max", err, errlen);
    if ((ends_with(F(x, "metric"), "_tokens_per_s") || !strcmp(F(x, "metric"), "images_per_s")) &&
        !(x->value > 0))
        return bad_field(x, "value", "a throughput must be positive", err, errlen);
    return 0;
}

/* ---- the report being built ---- */

struct tprice {         /* the price of one target */
    const char *target; /* borrowed from a results table */
    struct tb_price_choice c;
    int ref; /* footnote number in the report, 0 until used */
};

struct cost {
    const struct rrow *row;                       /* borrowed: the throughput row */
    const char *metric;                           /* usd_per_mtok_* or usd_per_kimage */
    bool images;                                  /* per thousand images, not per Mtok */
    struct tprice *price;                         /* borrowed from report.tp */
    double usd, usd_min, usd_max, tokens_per_usd; /* NAN without a price; tokens_per_usd
                                                     counts images for an images row */
};

struct report {
    const struct tb_report_opts *o;
    struct tb_csv_table *tables; /* owned: o->nresults */
    size_t ntables;
    struct rrow *rows; /* owned: nrows, in report order (provenance, file) */
    size_t nrows;
    size_t nprov[NPROV];
    struct tb_pricing pricing; /* owned */
    bool have_pricing;
    struct tb_price_choice host; /* the host's price */
    struct tprice *tp;           /* owned: ntp distinct targets */
    size_t ntp;
    struct cost *costs; /* owned: ncosts */
    size_t ncosts, npriced;
    int nrefs;
    char outdir[4096];
    char tmpdir[4200];
    bool made_tmpdir;
    char *svg[3]; /* owned: throughput, cost and images SVG text, or NULL */
    bool png[3];
    char notes[1024]; /* what is missing and why, one per line */
    char now[32];
};

static const char *const CHART_NAMES[3] = {"throughput", "cost", "images"};

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

static int load_results(struct report *R, char *err, size_t errlen)
{
    const struct tb_report_opts *o = R->o;
    size_t total = 0, k = 0;

    R->tables = tb_alloc_array(o->nresults, sizeof(*R->tables));
    if (!R->tables)
        return tb_err(err, errlen, "out of memory");
    for (size_t i = 0; i < o->nresults; i++) {
        if (tb_csv_load(&R->tables[i], o->results[i], err, errlen) != 0)
            return -1;
        R->ntables++;
        if (tb_csv_require(&R->tables[i], REQUIRED, err, errlen) != 0)
            return -1;
        total += R->tables[i].nrows;
    }
    if (total == 0)
        return tb_err(err, errlen, "%s: no result rows", o->results[0]);
    R->rows = tb_alloc_array(total, sizeof(*R->rows));
    if (!R->rows)
        return tb_err(err, errlen, "out of memory");
    /* check in file order so the first bad line is the one reported, then order by
     * provenance so measured, modeled and published rows never interleave */
    for (size_t i = 0; i < R->ntables; i++)
        for (size_t r = 0; r < R->tables[i].nrows; r++) {
            struct rrow x = {&R->tables[i], r, 0, 0, 0, 0, 0, 0, 0};
            if (check_row(&x, err, errlen) != 0)
                return -1;
            R->nprov[x.prov]++;
        }
    for (int p = 0; p < NPROV; p++)
        for (size_t i = 0; i < R->ntables; i++)
            for (size_t r = 0; r < R->tables[i].nrows; r++) {
                struct rrow x = {&R->tables[i], r, 0, 0, 0, 0, 0, 0, 0};
                check_row(&x, err, errlen);
                if (x.prov == p)
                    R->rows[k++] = x;
            }
    R->nrows = k;
    return 0;
}

static struct tprice *target_price(struct report *R, const char *target, char *err, size_t errlen)
{
    struct tprice *t;
    for (size_t i = 0; i < R->ntp; i++)
        if (!strcmp(R->tp[i].target, target))
            return &R->tp[i];
    t = &R->tp[R->ntp++];
    memset(t, 0, sizeof *t);
    t->target = target;
    if (!strcmp(target, "host")) {
        t->c = R->host;
    } else if (tb_pricing_instance(&R->pricing, target)) {
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
    return t;
}

static int build_costs(struct report *R, char *err, size_t errlen)
{
    R->tp = tb_alloc_array(R->nrows + 1, sizeof(*R->tp));
    R->costs = tb_alloc_array(R->nrows + 1, sizeof(*R->costs));
    if (!R->tp || !R->costs)
        return tb_err(err, errlen, "out of memory");
    for (size_t i = 0; i < R->nrows; i++) {
        const struct rrow *x = &R->rows[i];
        const char *m = tb_report_cost_metric(F(x, "metric"));
        struct cost *c;
        if (!m)
            continue;
        c = &R->costs[R->ncosts++];
        c->row = x;
        c->metric = m;
        c->images = !strcmp(m, "usd_per_kimage");
        c->price = target_price(R, F(x, "target"), err, errlen);
        if (!c->price)
            return -1;
        c->usd = c->usd_min = c->usd_max = c->tokens_per_usd = NAN;
        if (c->price->c.have) {
            /* a run on several instances is charged all of them */
            double h = c->price->c.usd_per_hour * (double)x->instances;
            /* per million tokens, or per thousand images */
            double unit = c->images ? 1e-3 : 1.0;
            c->usd = tb_report_usd_per_mtok(h, x->value) * unit;
            /* the fastest repetition is the cheapest */
            c->usd_min = tb_report_usd_per_mtok(h, x->max) * unit;
            c->usd_max = tb_report_usd_per_mtok(h, x->min) * unit;
            c->tokens_per_usd = x->value * 3600.0 / h;
            R->npriced++;
        }
        if (!c->price->ref)
            c->price->ref = ++R->nrefs;
    }
    return 0;
}

/* ---- labels ---- */

static void shape_of(const struct rrow *x, char *buf, size_t len)
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
        used += (size_t)snprintf(buf + used, len - used, "%s%spx", used ? " " : "",
                                 F(x, "resolution"));
    if (*F(x, "steps") && used < len)
        snprintf(buf + used, len - used, "%s%s steps", used ? " " : "", F(x, "steps"));
}

/* Chart labels: "model phase shape" and "target, provenance". */
static void run_label(const struct rrow *x, char *buf, size_t len, char *buf2, size_t len2)
{
    char shape[96];
    shape_of(x, shape, sizeof shape);
    snprintf(buf, len, "%s %s%s%s", F(x, "model"), F(x, "phase"), *shape ? " " : "", shape);
    snprintf(buf2, len2, "%s, %s", F(x, "target"), PROV_NAMES[x->prov]);
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
    for (size_t i = 0; i < R->nrows && used < len; i++) {
        const char *v = F(&R->rows[i], col);
        bool seen = false;
        if ((prov >= 0 && R->rows[i].prov != prov) || !*v)
            continue;
        for (size_t k = 0; k < i && !seen; k++)
            seen = (prov < 0 || R->rows[k].prov == prov) && !strcmp(F(&R->rows[k], col), v);
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

static void time_span(const struct report *R, int prov, char *buf, size_t len)
{
    const char *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < R->nrows; i++) {
        const char *v = F(&R->rows[i], "timestamp");
        if (R->rows[i].prov != prov || !*v)
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
    for (size_t i = 0; i < R->nrows; i++) {
        const char *v = F(&R->rows[i], "counters");
        if (R->rows[i].prov != PROV_MEASURED || !*v)
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
    const char *group;
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

/* Draw one chart (SVG, and PNG when png_ok) from bars; reads the SVG back into svg_out.
 * Returns 0, 1 when gnuplot is missing (note added), -1 on failure. */
static int draw(struct report *R, int which, struct bar *bars, size_t n, const char *title,
                bool png_ok, char **svg_out, bool *png_out, char *err, size_t errlen)
{
    char data[4400], out[4400], groups[256] = "", height[16], name[64];
    const char *scale = "linear";
    double lo = INFINITY, hi = 0;
    FILE *f = NULL;
    size_t len;
    int rc = -1, r;

    /* stable sort by group rank, so each group's bars stay together in file order */
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && bars[k - 1].rank > bars[k].rank; k--) {
            struct bar t = bars[k];
            bars[k] = bars[k - 1];
            bars[k - 1] = t;
        }
    snprintf(name, sizeof name, "%s.tsv", CHART_NAMES[which]);
    if (path_in(data, sizeof data, R->tmpdir, name) != 0)
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
    if (fclose(f) != 0) {
        f = NULL;
        tb_err(err, errlen, "cannot write '%s': %s", data, strerror(errno));
        goto out;
    }
    f = NULL;
    if (lo > 0 && hi / lo > 30)
        scale = "log";
    /* 450 pixels hold 8 bars; more bars get taller charts, up to 200 bars' worth */
    snprintf(height, sizeof height, "%d", 450 + 34 * (int)(n <= 8 ? 0 : n > 200 ? 192 : n - 8));
    for (int fmt = 0; fmt < 2; fmt++) {
        const char *ext = fmt ? "png" : "svg";
        const char *args[] = {ext, title, groups, height, scale};
        if (fmt == 1 && !png_ok)
            break;
        snprintf(name, sizeof name, "%s.%s", CHART_NAMES[which], ext);
        if (path_in(out, sizeof out, R->tmpdir, name) != 0) {
            tb_err(err, errlen, "path too long: '%s'", R->tmpdir);
            goto out;
        }
        r = tb_plot_run(CHART_NAMES[which], data, out, args, 5, err, errlen);
        if (r == TB_PLOT_MISSING) {
            add_note(R, "charts not drawn: %s", err);
            rc = 1;
            goto out;
        }
        if (r != TB_PLOT_OK)
            goto out;
        if (fmt == 0 && tb_read_file(out, svg_out, &len, err, errlen) != 0)
            goto out;
        if (fmt == 1)
            *png_out = true;
    }
    rc = 0;
out:
    if (f)
        fclose(f);
    return rc;
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

static int draw_charts(struct report *R, char *err, size_t errlen)
{
    struct bar *bars = tb_alloc_array(R->nrows + 1, sizeof(*bars));
    char why[512], models[256], title[400];
    bool png_ok;
    size_t n = 0;
    int rc = -1, r;

    if (!bars)
        return tb_err(err, errlen, "out of memory");
    png_ok = tb_plot_has_terminal("pngcairo", why, sizeof why);
    models_of(R, models, sizeof models);

    /* throughput: every *_tokens_per_s row, whatever its provenance; a serving run's
     * total (prompt + output) beside its output would repeat its label, so the chart
     * shows the output and the tables both */
    for (size_t i = 0; i < R->nrows; i++) {
        const struct rrow *x = &R->rows[i];
        if (!ends_with(F(x, "metric"), "_tokens_per_s") ||
            !strcmp(F(x, "metric"), "total_tokens_per_s"))
            continue;
        run_label(x, bars[n].label, sizeof bars[n].label, bars[n].label2, sizeof bars[n].label2);
        bars[n].group = F(x, "phase");
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
        r = draw(R, 0, bars, n, title, png_ok, &R->svg[0], &R->png[0], err, errlen);
        if (r < 0)
            goto out;
        if (r == 1) {
            rc = 0;
            goto out;
        }
    }

    /* cost: the priced token rows */
    n = 0;
    for (size_t i = 0; i < R->ncosts; i++) {
        const struct cost *c = &R->costs[i];
        if (isnan(c->usd) || c->images)
            continue;
        run_label(c->row, bars[n].label, sizeof bars[n].label, bars[n].label2,
                  sizeof bars[n].label2);
        bars[n].group = c->metric;
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
        snprintf(title, sizeof title, "Cost per million tokens by run: %s", models);
        r = draw(R, 1, bars, n, title, png_ok, &R->svg[1], &R->png[1], err, errlen);
        if (r < 0)
            goto out;
    }

    /* images: the priced diffusion rows, per thousand images */
    n = 0;
    for (size_t i = 0; i < R->ncosts; i++) {
        const struct cost *c = &R->costs[i];
        if (isnan(c->usd) || !c->images)
            continue;
        run_label(c->row, bars[n].label, sizeof bars[n].label, bars[n].label2,
                  sizeof bars[n].label2);
        bars[n].group = c->metric;
        bars[n].rank = 0;
        bars[n].value = c->usd;
        bars[n].min = c->usd_min;
        bars[n].max = c->usd_max;
        n++;
    }
    if (n > 0) {
        snprintf(title, sizeof title, "Cost per thousand images by run");
        r = draw(R, 2, bars, n, title, png_ok, &R->svg[2], &R->png[2], err, errlen);
        if (r < 0)
            goto out;
    }
    if (!png_ok && (R->svg[0] || R->svg[1] || R->svg[2]))
        add_note(R, "no PNG copies of the charts: %s", why);
    rc = 0;
out:
    free(bars);
    return rc;
}

static void doc_figure(struct tb_doc *d, const struct report *R, int which, const char *caption)
{
    char file[64];
    snprintf(file, sizeof file, "%s.svg", CHART_NAMES[which]);
    tb_sb_puts(&d->md, "![");
    tb_sb_md(&d->md, caption);
    tb_sb_printf(&d->md, "](%s)", file);
    if (R->png[which])
        tb_sb_printf(&d->md, " (PNG: [%s.png](%s.png))", CHART_NAMES[which], CHART_NAMES[which]);
    tb_sb_puts(&d->md, "\n\n");
    tb_sb_puts(&d->html, "<figure>\n");
    tb_doc_inline_svg(&d->html, R->svg[which], which, caption);
    tb_sb_puts(&d->html, "<figcaption>");
    tb_sb_html(&d->html, caption);
    tb_sb_printf(&d->html, " (files: %s", file);
    if (R->png[which])
        tb_sb_printf(&d->html, ", %s.png", CHART_NAMES[which]);
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
    size_t nm = R->nprov[PROV_MEASURED];

    tb_doc_h(d, 2, "Where, when, what");
    tb_doc_table(d, "tt", head);
#define ROW(k, val)                                                                                \
    do {                                                                                           \
        cells[0] = (k);                                                                            \
        cells[1] = (val);                                                                          \
        tb_doc_row(d, cells);                                                                         \
    } while (0)
    distinct(R, -1, "model", v, sizeof v);
    ROW("Models", v);
    snprintf(w, sizeof w, "%zu measured, %zu modeled, %zu published", nm, R->nprov[PROV_MODELED],
             R->nprov[PROV_PUBLISHED]);
    ROW("Result rows", w);
    if (nm) {
        distinct(R, PROV_MEASURED, "host", v, sizeof v);
        ROW("Host (measured rows)", *v ? v : "not recorded");
        time_span(R, PROV_MEASURED, v, sizeof v);
        ROW("Measured", v);
        distinct(R, PROV_MEASURED, "commit", v, sizeof v);
        ROW("trnbench commit", *v ? v : "not recorded");
        distinct(R, PROV_MEASURED, "compiler", v, sizeof v);
        ROW("Compiler", *v ? v : "not recorded");
        distinct(R, PROV_MEASURED, "cflags", v, sizeof v);
        ROW("Compiler flags", *v ? v : "not recorded");
        distinct(R, PROV_MEASURED, "blas", v, sizeof v);
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
    for (size_t i = 0; i < R->nrows; i++) {
        const struct rrow *x = &R->rows[i];
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
        cells[0] = PROV_NAMES[x->prov];
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

static void write_cost(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"Provenance", "Target",        "Model",
                                       "Phase",      "Shape",         "Throughput",
                                       "Metric",     "USD per unit",  "Spread (min-max)",
                                       "Price"};
    tb_doc_h(d, 2, "Cost per million tokens and per thousand images");
    tb_doc_p(d, NULL,
          "usd_per_mtok = usd_per_hour / (tokens_per_s x 3600) x 10^6; usd_per_kimage = "
          "usd_per_hour / (images_per_s x 3600) x 10^3 (the unit is in the metric's name: "
          "Mtok, a million tokens, or kimage, a thousand images). A run is charged "
          "the whole hourly price of the machine it ran on: for rows measured on the "
          "host, the whole price of the host, since the run used the whole machine; "
          "for rows of an instance type, the whole instance (all its chips). The "
          "Price column points to the price used, listed under the table.");
    if (R->ncosts == 0) {
        tb_doc_p(d, "note", "No throughput rows (*_tokens_per_s, images_per_s) in the results: "
                         "nothing to cost.");
        return;
    }
    tb_doc_table(d, "pttttncnnt", head);
    for (size_t i = 0; i < R->ncosts; i++) {
        const struct cost *c = &R->costs[i];
        char shape[96], tps[32], usd[40], lo[32], hi[32], spread[80], ref[600];
        const char *cells[10];
        shape_of(c->row, shape, sizeof shape);
        fmt_num(c->row->value, tps, sizeof tps);
        strncat(tps, c->images ? " images/s" : " tokens/s", sizeof tps - strlen(tps) - 1);
        spread[0] = usd[0] = '\0';
        if (!isnan(c->usd)) {
            char u[32];
            snprintf(usd, sizeof usd, "%s", fmt_num(c->usd, u, sizeof u));
            if (!isnan(c->usd_min) && !isnan(c->usd_max))
                snprintf(spread, sizeof spread, "%s - %s", fmt_num(c->usd_min, lo, sizeof lo),
                         fmt_num(c->usd_max, hi, sizeof hi));
            snprintf(ref, sizeof ref, "[%d]", c->price->ref);
        } else {
            snprintf(ref, sizeof ref, "[%d] no price", c->price->ref);
        }
        cells[0] = PROV_NAMES[c->row->prov];
        cells[1] = F(c->row, "target");
        cells[2] = F(c->row, "model");
        cells[3] = F(c->row, "phase");
        cells[4] = shape;
        cells[5] = tps;
        cells[6] = c->metric;
        cells[7] = usd;
        cells[8] = spread;
        cells[9] = ref;
        tb_doc_row(d, cells);
    }
    tb_doc_table_end(d);
    {
        static const char *const ph[] = {"Price", "Target", "Price used"};
        tb_doc_p(d, NULL,
              "Prices used (USD per instance-hour, from pricing/prices.csv unless "
              "given on the command line; the newest row for the instance, region "
              "and purchase model):");
        tb_doc_table(d, "ttt", ph);
        for (int ref = 1; ref <= R->nrefs; ref++)
            for (size_t i = 0; i < R->ntp; i++) {
                char num[16], text[1200];
                const char *cells[3];
                if (R->tp[i].ref != ref)
                    continue;
                snprintf(num, sizeof num, "[%d]", ref);
                price_text(&R->tp[i].c, text, sizeof text);
                cells[0] = num;
                cells[1] = R->tp[i].target;
                cells[2] = text;
                tb_doc_row(d, cells);
            }
        tb_doc_table_end(d);
    }
}

static void write_charts(struct tb_doc *d, const struct report *R)
{
    tb_doc_h(d, 2, "Charts");
    if (R->svg[0])
        doc_figure(d, R, 0, "Throughput by run (tokens/s, median; whisker: min-max)");
    if (R->svg[1])
        doc_figure(d, R, 1, "Cost per million tokens by run (USD; whisker: min-max)");
    if (R->svg[2])
        doc_figure(d, R, 2, "Cost per thousand images by run (USD; whisker: min-max)");
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
        size_t n = pass ? R->ncosts : R->nrows;
        for (size_t i = 0; i < n && nseen < 64; i++) {
            const char *m = pass ? R->costs[i].metric : F(&R->rows[i], "metric");
            const struct metric_def *def = metric_def(m);
            const char *cells[3];
            bool dup = false;
            for (size_t k = 0; k < nseen && !dup; k++)
                dup = !strcmp(seen[k], m);
            if (dup)
                continue;
            seen[nseen++] = m;
            cells[0] = m;
            cells[1] = def ? def->unit : (pass ? "USD" : F(&R->rows[i], "unit"));
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
    if (R->nprov[PROV_MEASURED]) {
        long nmin = -1, nmax = -1, wmin = -1, wmax = -1;
        for (size_t i = 0; i < R->nrows; i++) {
            const struct rrow *x = &R->rows[i];
            if (x->prov != PROV_MEASURED)
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
        distinct(R, PROV_MEASURED, "host", a, sizeof a);
        time_span(R, PROV_MEASURED, b, sizeof b);
        distinct(R, PROV_MEASURED, "commit", c, sizeof c);
        distinct(R, PROV_MEASURED, "executor", e, sizeof e);
        if (nmin < 0)
            snprintf(f, sizeof f, "repetitions not recorded");
        else
            snprintf(f, sizeof f, "%ld-%ld timed repetitions after %ld-%ld warm-up ones", nmin,
                     nmax, wmin < 0 ? 0 : wmin, wmax < 0 ? 0 : wmax);
        tb_doc_p(d, NULL,
              "measured (%zu row%s): run on %s (%s executor), %s, by trnbench %s; each "
              "value the median of %s.",
              R->nprov[PROV_MEASURED], R->nprov[PROV_MEASURED] == 1 ? "" : "s",
              *a ? a : "an unrecorded host", *e ? e : "unrecorded", b,
              *c ? c : "(commit not recorded)", f);
    }
    if (R->nprov[PROV_MODELED]) {
        distinct(R, PROV_MODELED, "source", a, sizeof a);
        tb_doc_p(d, NULL, "modeled (%zu row%s): predicted by a performance model, not run: %s.",
              R->nprov[PROV_MODELED], R->nprov[PROV_MODELED] == 1 ? "" : "s",
              *a ? a : "model version not recorded");
    }
    if (R->nprov[PROV_PUBLISHED]) {
        distinct(R, PROV_PUBLISHED, "source", a, sizeof a);
        tb_doc_p(d, NULL, "published (%zu row%s): reference figures from elsewhere, not run here: %s.",
              R->nprov[PROV_PUBLISHED], R->nprov[PROV_PUBLISHED] == 1 ? "" : "s",
              *a ? a : "source not recorded");
    }
    {
        size_t used = 0;
        a[0] = '\0';
        for (size_t i = 0; i < R->ntables && used < sizeof a; i++)
            used += (size_t)snprintf(a + used, sizeof a - used, "%s%s", i ? ", " : "",
                                     R->tables[i].path);
        tb_doc_p(d, NULL, "Results files: %s. Prices: %s (columns and sources in pricing/README.md).",
              a, R->pricing.prices_csv.path);
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
    "@media (max-width:40rem){body{padding:.5rem .6rem;font-size:15px}"
    "th,td{padding:.2rem .35rem}h1{font-size:1.3rem}}";

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
          "rows priced.",
          R->nrows, R->nprov[PROV_MEASURED], R->nprov[PROV_MODELED], R->nprov[PROV_PUBLISHED],
          R->npriced, R->ncosts);
    write_context(&d, R);
    write_runs(&d, R);
    write_cost(&d, R);
    write_charts(&d, R);
    write_definitions(&d, R);
    write_provenance(&d, R);
    tb_sb_puts(&d.html, "</body>\n</html>\n");
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
        const struct rrow *x = c->row;
        const struct tb_price_choice *p = &c->price->c;
        char b[12][64], note[600], line[24];
        const char *v[31];
        const double none = NAN;
        size_t k = 0;
        snprintf(note, sizeof note, "%s%s", p->have ? "" : "no price: ", p->have ? "" : p->why);
        snprintf(line, sizeof line, "%ld", rline(x));
        v[k++] = F(x, "run_id");
        v[k++] = PROV_NAMES[x->prov];
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

static const char *const OUTPUTS[] = {"throughput.svg", "cost.svg",  "images.svg",
                                      "throughput.png", "cost.png",  "images.png",
                                      "cost.csv",       "report.md", "report.html"};
static const char *const SCRATCH[] = {"throughput.tsv", "cost.tsv", "images.tsv"};

static void remove_tmpdir(struct report *R)
{
    char p[4400];
    if (!R->made_tmpdir)
        return;
    for (size_t i = 0; i < sizeof OUTPUTS / sizeof OUTPUTS[0]; i++)
        if (path_in(p, sizeof p, R->tmpdir, OUTPUTS[i]) == 0)
            unlink(p);
    for (size_t i = 0; i < sizeof SCRATCH / sizeof SCRATCH[0]; i++)
        if (path_in(p, sizeof p, R->tmpdir, SCRATCH[i]) == 0)
            unlink(p);
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

/* Move the finished files into place (report.html last), remove stale charts. */
static int publish(struct report *R, char *err, size_t errlen)
{
    char from[4400], to[4400];
    for (size_t i = 0; i < sizeof OUTPUTS / sizeof OUTPUTS[0]; i++) {
        struct stat st;
        if (path_in(from, sizeof from, R->tmpdir, OUTPUTS[i]) != 0 ||
            path_in(to, sizeof to, R->outdir, OUTPUTS[i]) != 0)
            return tb_err(err, errlen, "path too long: '%s'", R->outdir);
        if (stat(from, &st) != 0) {
            /* not made this time: an older chart must not sit beside the new report */
            if (unlink(to) != 0 && errno != ENOENT)
                return tb_err(err, errlen, "cannot remove the stale '%s': %s", to, strerror(errno));
            continue;
        }
        if (rename(from, to) != 0)
            return tb_err(err, errlen, "cannot rename '%s' to '%s': %s", from, to, strerror(errno));
    }
    return 0;
}

void tb_report_opts_init(struct tb_report_opts *o)
{
    memset(o, 0, sizeof *o);
    o->usd_per_hour = NAN;
}

int tb_report_write(const struct tb_report_opts *o, struct tb_report_info *info, char *err,
                    size_t errlen)
{
    struct report R;
    struct tb_sbuf md = {0}, html = {0};
    char p[4400];
    int rc = TB_REPORT_EINPUT;

    memset(&R, 0, sizeof R);
    R.o = o;
    tb_utc_now(R.now, sizeof R.now);
    if (o->nresults == 0 || !o->results) {
        tb_err(err, errlen, "no results file given");
        goto out;
    }

    /* 1. inputs: every check before anything is written */
    if (load_results(&R, err, errlen) != 0)
        goto out;
    if (tb_pricing_load(&R.pricing, o->pricing_dir, err, errlen) != 0)
        goto out;
    R.have_pricing = true;
    if (tb_pricing_host_price(&R.pricing, o->instance, o->region, o->purchase, o->usd_per_hour,
                              &R.host, err, errlen) != 0)
        goto out;
    if (build_costs(&R, err, errlen) != 0)
        goto out;

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

    /* 3. charts, cost table, documents, then publish */
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
        info->ncharts = (R.svg[0] != NULL) + (R.svg[1] != NULL) + (R.svg[2] != NULL);
        info->png = R.png[0] || R.png[1] || R.png[2];
        info->nrows = R.nrows;
        info->ncosted = R.npriced;
        snprintf(info->notes, sizeof info->notes, "%s", R.notes);
    }
    rc = TB_REPORT_OK;
out:
    remove_tmpdir(&R);
    tb_sb_release(&md);
    tb_sb_release(&html);
    free(R.svg[0]);
    free(R.svg[1]);
    free(R.svg[2]);
    free(R.costs);
    free(R.tp);
    free(R.rows);
    if (R.have_pricing)
        tb_pricing_release(&R.pricing);
    for (size_t i = 0; i < R.ntables; i++)
        tb_csv_release(&R.tables[i]);
    free(R.tables);
    return rc;
}
