/* harness/report/charts.c: the report stage's charts. The data of each chart goes into
 * a TSV file in the scratch folder; gnuplot (tb_plot.h, the scripts in reports/) draws it
 * as SVG and, where it has pngcairo, PNG; the SVG is kept for report.html. Throughput,
 * cost per million tokens, price-performance, cost to train, cost per thousand images,
 * and throughput against interactivity per serving workload. */
#include "report_impl.h"

#include "tb_coll_results.h"
#include "tb_collective.h"

#include "tb_plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The order of the bar groups in a chart: phases in the order a request meets them,
 * then the cost metrics likewise; anything else last. */
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

/* ---- one colour per target family ---- */

/* A target's colour comes from its family, the chip its instance type carries, read from
 * the type's name alone, so that a family has one hue in every report whatever else the
 * report holds: colour-blind-safe hues (Okabe-Ito, then Paul Tol's indigo, wine and olive),
 * AWS's chips cool, NVIDIA's warm, the host black, a name of no family grey. When a report
 * holds several targets of one family they take its shades in turn (the hue, then a darker
 * and a lighter one, or a lighter and a darker one for a dark hue), its flagship type
 * first, then by name, so that the flagship is always the plain hue. */
struct family {
    const char *prefix[6]; /* how the family's type names start ("u-" dropped), NULL-ended */
    const char *flagship;  /* the type that takes the plain hue */
    const char *shade[3];  /* the hue, then two shades of it */
};

static const struct family FAMILIES[] = {
    {{"trn1.", "trn1n."}, "trn1.32xlarge", {"#56B4E9", "#2F6380", "#AADAF4"}}, /* Trainium1 */
    {{"trn2.", "trn2u.", "trn2x"}, "trn2.48xlarge", {"#0072B2", "#003F62", "#80B8D8"}},
    {{"trn3"}, "trn3-ultraserver-gen1", {"#332288", "#9990C4", "#1C134B"}},   /* Trainium3 */
    {{"inf2.", "inf1."}, "inf2.48xlarge", {"#009E73", "#00573F", "#80CEB9"}}, /* Inferentia */
    {{"p4d.", "p4de."}, "p4d.24xlarge", {"#CC79A7", "#70435C", "#E6BCD3"}},   /* A100 */
    {{"p5."}, "p5.48xlarge", {"#D55E00", "#753400", "#EAAE80"}},              /* H100 */
    {{"p5e.", "p5en."}, "p5en.48xlarge", {"#E69F00", "#7E5700", "#F2CF80"}},  /* H200 */
    {{"p6-b200.", "p6-b300.", "p6e-gb200"}, "p6-b200.48xlarge", {"#882255", "#C490AA", "#4B132F"}},
    {{"g4", "g5", "g6", "g7", "p3.", "p2."}, "g6e.48xlarge", {"#999933", "#54541C", "#CCCC99"}},
    {{"host"}, "host", {"#000000", "#595959", "#A0A0A0"}},
};
#define FAMILY_NONE (sizeof FAMILIES / sizeof FAMILIES[0]) /* grey: no family */
static const char *const NONE_SHADES[] = {"#888888", "#4B4B4B", "#C4C4C4"};
#define PALETTE_MAX 64

/* The family of a target name (an index into FAMILIES), or FAMILY_NONE. */
static size_t target_family(const char *t)
{
    if (!strcmp(t, "host"))
        return FAMILY_NONE - 1;
    if (!strncmp(t, "u-", 2))
        t += 2;
    for (size_t f = 0; f + 1 < FAMILY_NONE; f++)
        for (size_t k = 0; k < 6 && FAMILIES[f].prefix[k]; k++)
            if (!strncmp(t, FAMILIES[f].prefix[k], strlen(FAMILIES[f].prefix[k])))
                return f;
    return FAMILY_NONE;
}

/* Every target of the report with its colour, the same in every chart, in the order the
 * keys list them: by family, then by shade. */
struct palette {
    const char *target[PALETTE_MAX]; /* borrowed from the results rows */
    const char *colour[PALETTE_MAX]; /* static */
    size_t family[PALETTE_MAX];      /* index into FAMILIES; FAMILY_NONE: none */
    size_t n;
};

/* Order within a family: the flagship first, then by name. */
static int family_before(const char *a, const char *b, size_t f)
{
    bool fa = f < FAMILY_NONE && !strcmp(a, FAMILIES[f].flagship);
    bool fb = f < FAMILY_NONE && !strcmp(b, FAMILIES[f].flagship);
    if (fa != fb)
        return fa ? -1 : 1;
    return strcmp(a, b);
}

static void palette_build(const struct report *R, struct palette *p)
{
    size_t used[FAMILY_NONE + 1] = {0};
    p->n = 0;
    for (size_t i = 0; i < R->res.nrows && p->n < PALETTE_MAX; i++) {
        const char *t = F(&R->res.rows[i], "target");
        bool seen = !*t;
        for (size_t k = 0; k < p->n && !seen; k++)
            seen = !strcmp(p->target[k], t);
        if (!seen) {
            p->family[p->n] = target_family(t);
            p->target[p->n++] = t;
        }
    }
    /* by family, then flagship first, then by name (insertion sort: a few dozen) */
    for (size_t i = 1; i < p->n; i++)
        for (size_t k = i; k > 0; k--) {
            size_t fa = p->family[k - 1], fb = p->family[k];
            const char *t;
            if (fa < fb || (fa == fb && family_before(p->target[k - 1], p->target[k], fa) <= 0))
                break;
            t = p->target[k];
            p->target[k] = p->target[k - 1];
            p->target[k - 1] = t;
            p->family[k] = fa;
            p->family[k - 1] = fb;
        }
    for (size_t i = 0; i < p->n; i++) {
        size_t f = p->family[i];
        const char *const *shades = f < FAMILY_NONE ? FAMILIES[f].shade : NONE_SHADES;
        p->colour[i] = shades[used[f]++ % 3];
    }
}
/* A target's colour: its palette entry's; its family's hue for one past the palette's
 * room. */
static const char *palette_colour(const struct palette *p, const char *target)
{
    size_t f;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->target[i], target))
            return p->colour[i];
    f = target_family(target);
    return f < FAMILY_NONE ? FAMILIES[f].shade[0] : NONE_SHADES[0];
}

/* ---- text into gnuplot ----
 * Names come from inputs (a results file's model, target, batch) and may hold anything
 * but NUL. gnuplot's data files and word lists have no escape for some of it: a line
 * whose first field starts with '#' is a comment, '"' opens a quoted field that has no
 * way to hold a '"', a tab splits a field, a newline a row; word() groups "quoted"
 * words. So the charts carry a drawable stand-in, the documents the name itself: a
 * control character becomes a space (in a word, '_'), '"' becomes "'", and a field is
 * written in double quotes, which keeps a leading '#'. */

/* A name as one word of a gnuplot word list (spaces would split it, quotes group). */
static void one_word(const char *s, char *buf, size_t len)
{
    size_t i = 0;
    for (; s[i] && i + 1 < len; i++)
        buf[i] = s[i] == ' ' || (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '_'
                 : s[i] == '"'                                             ? '\''
                                                                           : s[i];
    if (len)
        buf[i] = '\0';
}

/* A text field of a chart's data file, quoted (empty: nothing, since gnuplot misreads
 * ""), then sep. */
static void tsv_text(FILE *f, const char *s, int sep)
{
    if (*s) {
        fputc('"', f);
        for (; *s; s++)
            fputc((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s == '"' ? '\'' : *s, f);
        fputc('"', f);
    }
    fputc(sep, f);
}

/* One bar of a chart (reports/hbars.gp reads them as TSV). */
struct bar {
    char label[160];    /* first line: model phase shape */
    char label2[160];   /* second line: target, provenance */
    char group[200];    /* legend entry: one word */
    const char *target; /* borrowed from its row: its colour */
    const char *run_id; /* borrowed from its row: the chart's data names it (cost.csv's) */
    int rank;
    double value, min, max;
};

/* The key of a chart's bars' targets, in palette order: "t1 t2" and "#c1 #c2". Returns
 * how many. (A target past the palette's or the key's room is drawn grey, unkeyed.) */
static size_t palette_key(const struct palette *p, const struct bar *bars, size_t n, char *targets,
                          size_t tlen, char *colours, size_t clen)
{
    size_t keyed = 0;
    targets[0] = colours[0] = '\0';
    for (size_t i = 0; i < p->n; i++) {
        char w[160];
        bool shown = false;
        for (size_t k = 0; k < n && !shown; k++)
            shown = !strcmp(bars[k].target, p->target[i]);
        if (!shown)
            continue;
        one_word(p->target[i], w, sizeof w);
        if (strlen(targets) + strlen(w) + 2 > tlen || strlen(colours) + 9 > clen)
            break;
        snprintf(targets + strlen(targets), tlen - strlen(targets), "%s%s", *targets ? " " : "", w);
        snprintf(colours + strlen(colours), clen - strlen(colours), "%s%s", *colours ? " " : "",
                 p->colour[i]);
        keyed++;
    }
    return keyed;
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
    struct tb_report_chart *ch;
    char out[4400], file[96];
    const char *argv[8];
    size_t len;
    int r;
    if (R->ncharts == TB_REPORT_MAX_CHARTS || nargs + 1 > sizeof argv / sizeof argv[0])
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
        if (tb_report_path_in(out, sizeof out, R->dir.tmpdir, file) != 0)
            return tb_err(err, errlen, "path too long: '%s'", R->dir.tmpdir);
        r = tb_plot_run(script, data, out, argv, nargs + 1, err, errlen);
        if (r == TB_PLOT_MISSING) {
            tb_report_note(R, "charts not drawn: %s", err);
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

/* Open the chart name's data file, name.tsv in the scratch folder, its path into data.
 * NULL with a message when it cannot be. */
static FILE *open_data(const struct report *R, const char *name, char *data, size_t len, char *err,
                       size_t errlen)
{
    char file[96];
    FILE *f;
    snprintf(file, sizeof file, "%s.tsv", name);
    if (tb_report_path_in(data, len, R->dir.tmpdir, file) != 0) {
        tb_err(err, errlen, "path too long: '%s'", R->dir.tmpdir);
        return NULL;
    }
    f = fopen(data, "w");
    if (!f)
        tb_err(err, errlen, "cannot write '%s': %s", data, strerror(errno));
    return f;
}

/* Draw horizontal bars (reports/hbars.gp through script) as chart name, each in its
 * target's colour. */
static int draw(struct report *R, const struct palette *pal, const char *script, const char *name,
                const char *caption, struct bar *bars, size_t n, const char *title, bool png_ok,
                char *err, size_t errlen)
{
    char data[4400], groups[512] = "", height[16], targets[2048], colours[1024], word[160];
    const char *scale = "linear";
    double lo = INFINITY, hi = 0;
    size_t ngroups = 0, ntargets = 0, keyrows;
    FILE *f = NULL;

    /* stable sort by group rank, so each group's bars stay together in file order */
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && bars[k - 1].rank > bars[k].rank; k--) {
            struct bar t = bars[k];
            bars[k] = bars[k - 1];
            bars[k - 1] = t;
        }
    f = open_data(R, name, data, sizeof data, err, errlen);
    if (!f)
        return -1;
    for (size_t i = 0; i < n; i++) {
        tsv_text(f, bars[i].label, '\t');
        tsv_text(f, bars[i].group, '\t');
        fmt_tsv(f, bars[i].value);
        fputc('\t', f);
        fmt_tsv(f, bars[i].min);
        fputc('\t', f);
        fmt_tsv(f, bars[i].max);
        one_word(bars[i].target, word, sizeof word);
        fputc('\t', f);
        tsv_text(f, bars[i].label2, '\t');
        tsv_text(f, word, '\t');
        tsv_text(f, bars[i].run_id ? bars[i].run_id : "", '\n');
        if (!has_word(groups, bars[i].group) &&
            strlen(groups) + strlen(bars[i].group) + 2 < sizeof groups) {
            snprintf(groups + strlen(groups), sizeof groups - strlen(groups), "%s%s",
                     *groups ? " " : "", bars[i].group);
            ngroups++;
        }
        lo = fmin(lo, bars[i].value);
        hi = fmax(hi, bars[i].value);
    }
    if (fclose(f) != 0)
        return tb_err(err, errlen, "cannot write '%s': %s", data, strerror(errno));
    if (lo > 0 && hi / lo > 30)
        scale = "log";
    ntargets = palette_key(pal, bars, n, targets, sizeof targets, colours, sizeof colours);
    /* 42 pixels a bar (two lines of labels at 11 points and a gap), up to 200 bars'
     * worth, at least 4; the title above and the axis and legend (three entries a row)
     * below */
    keyrows = (ngroups + ntargets + 2) / 3;
    snprintf(height, sizeof height, "%d",
             48 + 72 + 20 * (int)keyrows +
                 42 * (int)(n < 4     ? 4
                            : n > 200 ? 200
                                      : n));
    {
        const char *args[] = {title, groups, height, scale, targets, colours};
        return draw_file(R, script, name, caption, data, args, 6, png_ok, err, errlen);
    }
}

/* A workload's model and phase as one word for a chart legend: "llama-3.1-8b/serve". */
static void workload_word(const struct tb_cost *c, char *buf, size_t len)
{
    char w[400];
    snprintf(w, sizeof w, "%s/%s", F(c->row, "model"), F(c->row, "phase"));
    one_word(w, buf, len);
}

/* Whether costs[i] opens its block of the interactivity chart: the first row of
 * workload and metric with its target and provenance (measured points, imported ones
 * and the model's curve of one target are separate lines). */
static bool first_of_block(const struct tb_costs *cs, size_t i, const char *workload,
                           const char *metric)
{
    const struct tb_cost *c = &cs->costs[i];
    if (!tb_cost_of_workload(c, workload, metric))
        return false;
    for (size_t k = 0; k < i; k++)
        if (tb_cost_of_workload(&cs->costs[k], workload, metric) &&
            cs->costs[k].row->prov == c->row->prov &&
            tb_report_imported(cs->costs[k].row) == tb_report_imported(c->row) &&
            !strcmp(F(cs->costs[k].row, "target"), F(c->row, "target")))
            return false;
    return true;
}

/* The model's error at a measured serving point: its per-chip throughput against the
 * modeled row of the same workload, target and batch (concurrency); NAN without one. */
static double model_error(const struct tb_costs *cs, const struct tb_cost *c)
{
    for (size_t k = 0; k < cs->ncosts; k++) {
        const struct tb_cost *m = &cs->costs[k];
        if (m->row->prov == TB_PROV_MODELED && tb_cost_of_workload(m, c->workload, c->metric) &&
            !strcmp(F(m->row, "target"), F(c->row, "target")) && F(c->row, "batch")[0] &&
            !strcmp(F(m->row, "batch"), F(c->row, "batch")) && tb_cost_positive(m->per_chip))
            return m->per_chip / c->per_chip - 1;
    }
    return NAN;
}

/* The interactivity chart's frame in pixels of its 800-pixel-wide canvas. The script is
 * given it (and the axes' ranges), so that a label placed here lands where it is drawn. */
enum {
    IA_WIDTH = 800,
    IA_LEFT = 78,   /* the y tick labels and the y label, left of the plot area */
    IA_RIGHT = 780, /* the plot area's right edge */
    IA_TOP = 48,    /* the title, above the plot area */
    IA_PLOT = 420,  /* the plot area's height */
    IA_BELOW = 70,  /* the x tick labels and the x label, under it; then the key */
    IA_KEYROW = 20, /* a row of the key */
    IA_BLOCKS = 16  /* lines (a target's model curve, its measured levels) at most */
};
#define IA_FONT_PX   10.0 /* the point labels' size */
#define IA_MARKER_PX 6.0
#define IA_PAD_PX    2.0

/* One point of an interactivity chart. */
struct ipoint {
    double x, y;       /* tokens/s per user; per chip (or the whole machine's) */
    char label[96];    /* its cost (and a measured level's load and model error); "" none */
    const char *batch; /* borrowed from its row */
    size_t block;      /* its line */
};

/* An axis on a log scale around lo..hi, as log10 of its ends: room below and above (in
 * decades), and a decade at least, so that it has a tick to read. */
static void log_range(double lo, double hi, double below, double above, double *d0, double *d1)
{
    double span;
    *d0 = log10(lo) - below;
    *d1 = log10(hi) + above;
    span = *d1 - *d0;
    if (span < 1) {
        *d0 -= (1 - span) / 2;
        *d1 += (1 - span) / 2;
    }
}

/* Throughput against interactivity for one serving workload: tokens/s per chip against
 * tokens/s per user, one line per target through its batch sweep (the model's), each
 * point labelled with its cost per million output tokens; a serving run's measured
 * levels a line of their own beside their target's, each point labelled with its load
 * and the model's error there. Lines take their target's colour; labels are placed so
 * that none overlaps another or a point, and one with no room is left out (the caption
 * says how many). */
static int draw_interactivity(struct report *R, const struct palette *pal,
                              const struct tb_cost_rank *w, int k, bool png_ok, char *err,
                              size_t errlen)
{
    char data[4400], name[48], targets[1024] = "", colours[IA_BLOCKS * 8 + 1] = "", title[400],
                               caption[600], height[16], frame[96], range[128], word[160];
    struct ipoint *pts = tb_alloc_array(R->cs.ncosts + 1, sizeof(*pts));
    struct tb_label *lab = tb_alloc_array(R->cs.ncosts + 1, sizeof(*lab));
    size_t npoints = 0, nmeasured = 0, nblocks = 0, nlabels = 0, nplaced;
    double x0 = INFINITY, x1 = 0, y0 = INFINITY, y1 = 0, lx0, lx1, ly0, ly1;
    int rc = -1, h;
    FILE *f;
    if (!pts || !lab) {
        rc = tb_err(err, errlen, "out of memory");
        goto out;
    }
    /* the points, one block per target and provenance (gnuplot "index") */
    for (size_t i = 0; i < R->cs.ncosts && nblocks < IA_BLOCKS; i++) {
        const char *t = F(R->cs.costs[i].row, "target");
        const enum tb_provenance prov = R->cs.costs[i].row->prov;
        const bool imported = tb_report_imported(R->cs.costs[i].row);
        bool priced = false, whole = false, stand_in = false;
        size_t n = 0;
        if (!first_of_block(&R->cs, i, w->workload, w->metric))
            continue;
        for (size_t j = i; j < R->cs.ncosts; j++) {
            const struct tb_cost *c = &R->cs.costs[j];
            struct ipoint *q = &pts[npoints + n];
            /* a machine without chips to count (the host): its whole throughput */
            double y = tb_cost_positive(c->per_chip) ? c->per_chip : c->row->value;
            if (!tb_cost_of_workload(c, w->workload, w->metric) || strcmp(F(c->row, "target"), t) ||
                c->row->prov != prov || tb_report_imported(c->row) != imported ||
                !tb_cost_positive(c->per_user) || !tb_cost_positive(y))
                continue;
            whole |= !tb_cost_positive(c->per_chip);
            q->label[0] = '\0';
            /* a configuration outside the latency limits keeps its point on the curve,
             * its cost in brackets: never read as one the limits allow */
            if (tb_cost_positive(tb_cost_shown(c)))
                snprintf(q->label, sizeof q->label,
                         tb_costs_meets(&R->cs, c) ? "$%.3g%s" : "($%.3g%s)", tb_cost_shown(c),
                         tb_cost_stand_in(c) ? "*" : "");
            if (prov == TB_PROV_MEASURED) {
                const char *rate = F(c->row, "request_rate");
                double e = model_error(&R->cs, c);
                size_t m = strlen(q->label);
                snprintf(q->label + m, sizeof q->label - m, "%s%s%s", m ? " " : "",
                         rate[0] ? "r" : "c", rate[0] ? rate : F(c->row, "batch"));
                m = strlen(q->label);
                if (!isnan(e))
                    snprintf(q->label + m, sizeof q->label - m, " model %+.0f%%", e * 100);
            }
            q->x = c->per_user;
            q->y = y;
            q->batch = F(c->row, "batch");
            q->block = nblocks;
            x0 = fmin(x0, q->x);
            x1 = fmax(x1, q->x);
            y0 = fmin(y0, q->y);
            y1 = fmax(y1, q->y);
            priced |= tb_cost_positive(tb_cost_shown(c));
            stand_in |= tb_cost_stand_in(c);
            n++;
        }
        if (n) {
            /* a line through its points in the order of their load: requests in flight
             * on the target (results.csv batch; a measured level's concurrency) */
            for (size_t a = npoints + 1; a < npoints + n; a++)
                for (size_t b = a;
                     b > npoints && strtod(pts[b - 1].batch, NULL) > strtod(pts[b].batch, NULL);
                     b--) {
                    struct ipoint tmp = pts[b];
                    pts[b] = pts[b - 1];
                    pts[b - 1] = tmp;
                }
            one_word(t, word, sizeof word);
            snprintf(targets + strlen(targets), sizeof targets - strlen(targets), "%s%s%s%s%s",
                     *targets ? " " : "", word,
                     imported                   ? "(imported)"
                     : prov == TB_PROV_MEASURED ? "(measured)"
                                                : "",
                     whole ? "(whole-machine)" : "",
                     !priced    ? "(no-price)"
                     : stand_in ? "*"
                                : "");
            snprintf(colours + strlen(colours), sizeof colours - strlen(colours), "%s%s",
                     *colours ? " " : "", palette_colour(pal, t));
            npoints += n;
            nblocks++;
            if (prov == TB_PROV_MEASURED)
                nmeasured += n;
        }
    }
    if (npoints < 2) {
        rc = 0;
        goto out;
    }

    /* where each point is on the canvas, then where its label goes */
    /* room on the right for the labels of the last points */
    log_range(x0, x1, 0.1, 0.3, &lx0, &lx1);
    log_range(y0, y1, 0.15, 0.15, &ly0, &ly1);
    for (size_t i = 0; i < npoints; i++) {
        lab[i].ax = IA_LEFT + (log10(pts[i].x) - lx0) / (lx1 - lx0) * (IA_RIGHT - IA_LEFT);
        lab[i].ay = IA_TOP + IA_PLOT - (log10(pts[i].y) - ly0) / (ly1 - ly0) * IA_PLOT;
        lab[i].w = tb_report_text_width(pts[i].label, IA_FONT_PX);
        lab[i].h = IA_FONT_PX * 1.25;
        nlabels += *pts[i].label != '\0';
    }
    {
        const struct tb_label_box area = {IA_LEFT + IA_PAD_PX, IA_TOP + IA_PAD_PX,
                                          IA_RIGHT - IA_PAD_PX, IA_TOP + IA_PLOT - IA_PAD_PX};
        nplaced = tb_report_place_labels(lab, npoints, IA_MARKER_PX, IA_PAD_PX, area);
    }

    snprintf(name, sizeof name, "interactivity-%d", k);
    f = open_data(R, name, data, sizeof data, err, errlen);
    if (!f)
        goto out;
    for (size_t b = 0; b < nblocks; b++) {
        for (size_t i = 0; i < npoints; i++) {
            if (pts[i].block != b)
                continue;
            fprintf(f, "%.10g\t%.10g\t", pts[i].x, pts[i].y);
            tsv_text(f, pts[i].label, '\t');
            tsv_text(f, pts[i].batch, '\t');
            if (lab[i].placed)
                fprintf(f, "%.10g\t%.10g\n",
                        pow(10, lx0 + (lab[i].x - IA_LEFT) / (IA_RIGHT - IA_LEFT) * (lx1 - lx0)),
                        pow(10, ly0 + (IA_TOP + IA_PLOT - lab[i].y) / IA_PLOT * (ly1 - ly0)));
            else
                fputs("NaN\tNaN\n", f);
        }
        fputs("\n\n", f);
    }
    if (fclose(f) != 0) {
        rc = tb_err(err, errlen, "cannot write '%s': %s", data, strerror(errno));
        goto out;
    }

    /* the key: two entries a row (a long name and its sample take half the width) */
    h = IA_TOP + IA_PLOT + IA_BELOW + IA_KEYROW * (int)((nblocks + 1) / 2) + 8;
    snprintf(height, sizeof height, "%d", h);
    snprintf(frame, sizeof frame, "%d %d %d %d", IA_LEFT, IA_RIGHT, IA_TOP, IA_TOP + IA_PLOT);
    snprintf(range, sizeof range, "%g %g %g %g", lx0, lx1, ly0, ly1);
    snprintf(title, sizeof title, "Throughput vs interactivity: %s", w->workload);
    snprintf(caption, sizeof caption,
             "Throughput per chip against output tokens/s per user, %s: one line per target "
             "through its batch sweep, each point labelled with its USD per million output "
             "tokens (in brackets where the configuration misses the TTFT %g ms / TPOT %g ms "
             "limits; * at the target's nearest comparable price)%s",
             w->workload, R->o->ttft_limit_ms, R->o->tpot_limit_ms,
             nmeasured ? "; measured serving levels (a line marked \"measured\") labelled with "
                         "their load (cN: N requests in flight; rN: N requests/s) and the "
                         "performance model's error there (model / measured - 1, per chip)"
                       : "");
    if (nplaced < nlabels) {
        size_t m = strlen(caption);
        snprintf(caption + m, sizeof caption - m,
                 "; %zu of %zu labels left out where they would overlap another (the cost "
                 "table has every figure)",
                 nlabels - nplaced, nlabels);
    }
    {
        const char *args[] = {title, targets, colours, height, frame, range};
        rc = draw_file(R, "interactivity", name, caption, data, args, 6, png_ok, err, errlen);
    }
out:
    free(pts);
    free(lab);
    return rc;
}

/* Measured collectives against the model, one chart per link: each sweep's out-of-place
 * points (measured busbw, modeled busbw by size), one block per sweep. */
static int draw_collectives(struct report *R, bool png_ok, char *err, size_t errlen)
{
    for (int link = 0; link < TB_LINK_NKINDS; link++) {
        char data[4400], name[48], names[1024] = "", title[160], caption[400];
        size_t blocks = 0;
        FILE *f = NULL;
        int r;
        snprintf(name, sizeof name, "collectives-%s", tb_coll_link_to_string(link));
        for (size_t i = 0; i < R->ncoll; i++) {
            const struct tb_coll_meas *c = &R->coll[i];
            double mb;
            if ((int)c->link != link || c->inplace)
                continue;
            if (!f && !(f = open_data(R, name, data, sizeof data, err, errlen)))
                return -1;
            if (i == 0 || strcmp(R->coll[i - 1].group, c->group)) {
                if (blocks++)
                    fputs("\n\n", f);
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s/%ld",
                         blocks > 1 ? " " : "", tb_coll_op_to_string(c->op), c->ranks);
            }
            mb = !isnan(c->busbw) ? c->busbw
                                  : c->bytes * tb_coll_bus_factor(c->op, c->ranks) / c->time_s;
            fmt_tsv(f, c->bytes);
            fputc('\t', f);
            fmt_tsv(f, mb / 1e9);
            fputc('\t', f);
            fmt_tsv(f, R->coll_busbw[i] / 1e9);
            fputc('\n', f);
        }
        if (!f)
            continue;
        if (fclose(f) != 0)
            return tb_err(err, errlen, "cannot write '%s'", data);
        snprintf(title, sizeof title, "Collectives over %s: measured and modeled busbw",
                 tb_coll_link_to_string(link));
        snprintf(caption, sizeof caption,
                 "Collectives over %s: bus bandwidth by size, measured (points, out of place) "
                 "and modeled (dashed; legend: collective/ranks)",
                 tb_coll_link_to_string(link));
        {
            const char *args[] = {title, names};
            r = draw_file(R, "collectives", name, caption, data, args, 2, png_ok, err, errlen);
        }
        if (r != 0)
            return r;
    }
    return 0;
}

/* The cost charts' bars (per million tokens, or per thousand images with images): for
 * every ranked workload and every target, the row the summary and the tables show
 * (tb_costs_shown_row), at its shown price (tb_cost_shown), a stand-in price named in
 * its label. Returns the number of bars. */
static size_t shown_bars(const struct report *R, bool images, struct bar *bars)
{
    size_t n = 0;
    for (size_t wi = 0; wi < R->cs.nranks; wi++) {
        const struct tb_cost_rank *w = &R->cs.ranks[wi];
        for (size_t i = 0; i < R->cs.ncosts; i++) {
            const struct tb_cost *c = &R->cs.costs[i];
            size_t len;
            if (c->images != images || c->host_cpu ||
                !tb_costs_first_of_target(&R->cs, i, w->workload, w->metric))
                continue;
            c = tb_costs_shown_row(&R->cs, w, F(c->row, "target"));
            if (!c || !tb_cost_positive(tb_cost_shown(c)))
                continue;
            tb_report_run_label(c->row, bars[n].label, sizeof bars[n].label, bars[n].label2,
                                sizeof bars[n].label2);
            len = strlen(bars[n].label2);
            if (tb_cost_stand_in(c))
                snprintf(bars[n].label2 + len, sizeof bars[n].label2 - len, ", * %s",
                         c->price->cmp_basis);
            bars[n].target = F(c->row, "target");
            bars[n].run_id = F(c->row, "run_id");
            snprintf(bars[n].group, sizeof bars[n].group, "%s", c->metric);
            bars[n].rank = images ? 0 : metric_rank(c->metric);
            bars[n].value = tb_cost_shown(c);
            tb_cost_shown_spread(c, &bars[n].min, &bars[n].max);
            n++;
        }
    }
    return n;
}

int tb_report_draw_charts(struct report *R, char *err, size_t errlen)
{
    struct bar *bars = tb_alloc_array(R->res.nrows + 1, sizeof(*bars));
    char why[512], models[256], title[400], caption[600];
    struct palette pal;
    bool png_ok;
    size_t n = 0;
    int rc = -1, r, k = 0;

    if (!bars)
        return tb_err(err, errlen, "out of memory");
    palette_build(R, &pal);
    png_ok = tb_plot_has_terminal("pngcairo", why, sizeof why);
    tb_report_models(R, models, sizeof models);

    /* throughput: every *_tokens_per_s row, whatever its provenance; a serving run's
     * total (prompt + output) beside its output would repeat its label, so the chart
     * shows the output and the tables both; an instance's serving workload shows the
     * configuration its costs are ranked at (within the latency limits where any meets
     * them: tb_costs_shown_row), the host CPU's serving every level it ran */
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *x = &R->res.rows[i];
        bool skip = false;
        if (!tb_result_is_token_rate(F(x, "metric")) ||
            !strcmp(F(x, "metric"), "total_tokens_per_s"))
            continue;
        for (size_t j = 0; j < R->cs.ncosts && !skip; j++) {
            const struct tb_cost *c = &R->cs.costs[j];
            const struct tb_cost_rank *w = c->row == x ? tb_costs_rank_of(&R->cs, c) : NULL;
            const struct tb_cost *sr;
            if (!w || !w->serve || c->host_cpu)
                continue;
            /* without a price anywhere: the throughput-maximising run of its sweep */
            sr = tb_costs_shown_row(&R->cs, w, F(x, "target"));
            skip = sr ? sr != c : c->sweep_point;
        }
        if (skip)
            continue;
        bars[n].run_id = F(x, "run_id");
        tb_report_run_label(x, bars[n].label, sizeof bars[n].label, bars[n].label2,
                            sizeof bars[n].label2);
        bars[n].target = F(x, "target");
        snprintf(bars[n].group, sizeof bars[n].group, "%s", F(x, "phase"));
        bars[n].rank = phase_rank(bars[n].group);
        bars[n].value = x->value;
        bars[n].min = x->min;
        bars[n].max = x->max;
        n++;
    }
    if (n == 0) {
        tb_report_note(R, "no throughput chart: no *_tokens_per_s rows in the results");
    } else {
        snprintf(title, sizeof title, "Throughput by run: %s", models);
        r = draw(R, &pal, "throughput", "throughput",
                 "Throughput by run (tokens/s, median; whisker: min-max; an instance's serving "
                 "at the configuration its cost is ranked at: its cheapest within the latency "
                 "limits, as in the summary)",
                 bars, n, title, png_ok, err, errlen);
        if (r != 0) {
            rc = r < 0 ? -1 : 0;
            goto out;
        }
        /* every run, one bar each: what a reader of the costs looks up, not reads */
        snprintf(R->charts[R->ncharts - 1].fold, sizeof R->charts[0].fold,
                 "Chart: throughput of every run (%zu bar%s)", n, n == 1 ? "" : "s");
    }

    /* cost per million tokens by target and workload: each target's row that the
     * summary compares (within the latency limits for serving), at its shown price */
    n = shown_bars(R, false, bars);
    if (n == 0) {
        size_t host = 0, accel = 0;
        for (size_t i = 0; i < R->cs.ncosts; i++) {
            const struct tb_cost *c = &R->cs.costs[i];
            if (!c->host_cpu || !tb_cost_positive(c->usd))
                continue;
            host++;
            accel += c->price->chips > 0 || *F(c->row, "accelerators_unused");
        }
        if (host)
            tb_report_note(R,
                           "no cost chart: the %zu priced throughput row%s ran trnbench's CPU "
                           "engines on the host CPU%s (results.csv engine 'host-cpu'), listed "
                           "under Host CPU runs and never ranked against instance types; no "
                           "instance's row has a price",
                           host, host == 1 ? "" : "s", accel ? " of an accelerator instance" : "");
        else {
            /* the first unpriced instance's reason, else the host's: never the host's
             * when no row ran on it */
            const char *reason = NULL;
            for (size_t i = 0; i < R->cs.ncosts && !reason; i++)
                if (!R->cs.costs[i].host_cpu && strcmp(F(R->cs.costs[i].row, "target"), "host"))
                    reason = R->cs.costs[i].price->cmp_have ? NULL : R->cs.costs[i].price->c.why;
            for (size_t i = 0; i < R->cs.ncosts && !reason; i++)
                if (!strcmp(F(R->cs.costs[i].row, "target"), "host"))
                    reason = R->cs.host.why;
            tb_report_note(R,
                           "no cost chart: no throughput row has a price at the chosen "
                           "purchase model and region or a comparable one (%s)",
                           reason ? reason : "no throughput rows");
        }
    } else {
        snprintf(title, sizeof title, "Cost per million tokens by target and workload: %s", models);
        if (draw(R, &pal, "cost", "cost",
                 "Cost per million tokens by target and workload (USD; each target's cheapest "
                 "configuration, within the latency limits for serving, the one the summary "
                 "compares; * at its nearest comparable price, named, where it has none at the "
                 "chosen one; whisker: min-max of the repetitions)",
                 bars, n, title, png_ok, err, errlen) < 0)
            goto out;
    }

    /* price-performance against the baseline, per workload and target, like for like:
     * each target at its comparison price (the chosen one, else the nearest both have,
     * named in its label), whiskers the range of the model's error or the repetitions */
    n = 0;
    for (size_t wi = 0; wi < R->cs.nranks; wi++) {
        const struct tb_cost_rank *w = &R->cs.ranks[wi];
        bool ok = tb_costs_limits_apply(&R->cs, w);
        for (size_t i = 0; i < R->cs.ncosts; i++) {
            const struct tb_cost *c = &R->cs.costs[i];
            struct tb_cost_versus v;
            size_t len;
            if (c->host_cpu || c->led ||
                !tb_costs_first_of_target(&R->cs, i, w->workload, w->metric))
                continue;
            tb_costs_versus(&R->cs, w->workload, w->metric, F(c->row, "target"), ok, &v);
            if (!v.c || !tb_cost_positive(v.perf))
                continue;
            tb_report_run_label(v.c->row, bars[n].label, sizeof bars[n].label, bars[n].label2,
                                sizeof bars[n].label2);
            len = strlen(bars[n].label2);
            if (!v.c->price->cmp_chosen)
                snprintf(bars[n].label2 + len, sizeof bars[n].label2 - len, ", %s",
                         v.c->price->cmp_basis);
            bars[n].target = F(v.c->row, "target");
            workload_word(v.c, bars[n].group, sizeof bars[n].group);
            bars[n].rank = (int)wi;
            bars[n].run_id = F(v.c->row, "run_id");
            bars[n].value = v.perf;
            bars[n].min = tb_cost_positive(v.plo) && v.plo < v.phi ? v.plo : NAN;
            bars[n].max = tb_cost_positive(v.plo) && v.plo < v.phi ? v.phi : NAN;
            n++;
        }
    }
    if (n > 0) {
        snprintf(title, sizeof title,
                 "Price-performance against %s, like for like (higher is "
                 "better)",
                 R->cs.o.baseline);
        snprintf(caption, sizeof caption,
                 "Price-performance: the baseline's cost (%s, its cheapest configuration, "
                 "within the latency limits for serving) over each target's cheapest, both "
                 "under one purchase model in one region (the chosen prices, else the nearest "
                 "both have, named in the label); whisker: the range from the model's error or "
                 "the measured repetitions; 2x = half the cost",
                 R->cs.basis);
        if (draw(R, &pal, "priceperf", "priceperf", caption, bars, n, title, png_ok, err, errlen) <
            0)
            goto out;
    } else {
        tb_report_note(R, "no price-performance chart: no workload has a %s row to compare with",
                       R->cs.o.baseline);
    }

    /* training: cost (and time) to train on N tokens, one colour per model */
    n = 0;
    for (size_t i = 0; i < R->cs.ncosts; i++) {
        const struct tb_cost *c = &R->cs.costs[i];
        struct tb_cost_train tr;
        char used[64], paid[96] = "";
        if (strcmp(c->metric, "usd_per_mtok_train") || c->host_cpu)
            continue; /* the host CPU's training is in its own table, never costed beside */
        tb_costs_train(&R->cs, c, &tr);
        if (!tb_cost_positive(tr.usd))
            continue;
        tb_report_run_label(c->row, bars[n].label, sizeof bars[n].label, bars[n].label2,
                            sizeof bars[n].label2);
        bars[n].target = F(c->row, "target");
        bars[n].run_id = F(c->row, "run_id");
        tb_cost_charged_text(c->row, c->price, used, sizeof used);
        if (tr.cblock)
            snprintf(paid, sizeof paid, "; paid for %.0f days of blocks", tr.cb.days);
        if (snprintf(bars[n].label2, sizeof bars[n].label2, "%s, %.3g days on %s%s, %s%s%s",
                     F(c->row, "target"), tr.days, used, paid, tb_report_prov_label(c->row),
                     tb_cost_stand_in(c) ? ", * " : "",
                     tb_cost_stand_in(c) ? c->price->cmp_basis : "") >= (int)sizeof bars[n].label2)
            bars[n].label2[sizeof bars[n].label2 - 1] = '\0'; /* a label cut short */
        snprintf(bars[n].group, sizeof bars[n].group, "%s", F(c->row, "model"));
        bars[n].rank = 0;
        for (size_t j = 0; j < n; j++)
            if (!strcmp(bars[j].group, bars[n].group)) {
                bars[n].rank = bars[j].rank;
                break;
            } else if (bars[j].rank >= bars[n].rank) {
                bars[n].rank = bars[j].rank + 1;
            }
        bars[n].value = tr.usd;
        bars[n].min = bars[n].max = NAN;
        n++;
    }
    if (n > 0) {
        char tok[48];
        snprintf(title, sizeof title, "Cost to train on %s tokens (time in the labels)",
                 tb_report_tokens_text(R->o->train_tokens, tok, sizeof tok));
        snprintf(caption, sizeof caption,
                 "Cost in USD and time in days to train on %s tokens at each run's "
                 "throughput and price (instances, or the share of one, as in the run; "
                 "Capacity Blocks as the whole days they are sold in; * at the target's "
                 "nearest comparable price where it has none at the chosen one)",
                 tok);
        if (draw(R, &pal, "train", "train", caption, bars, n, title, png_ok, err, errlen) < 0)
            goto out;
    }

    /* images: each target's cheapest configuration per image workload */
    n = shown_bars(R, true, bars);
    if (n > 0) {
        snprintf(title, sizeof title, "Cost per thousand images by target and model");
        if (draw(R, &pal, "images", "images",
                 "Cost per thousand images by target and model (USD; each target's cheapest "
                 "configuration; * at its nearest comparable price; whisker: min-max)",
                 bars, n, title, png_ok, err, errlen) < 0)
            goto out;
    }

    /* throughput against interactivity, one chart per serving workload with a sweep */
    for (size_t i = 0; i < R->cs.nranks; i++)
        if (R->cs.ranks[i].serve &&
            draw_interactivity(R, &pal, &R->cs.ranks[i], ++k, png_ok, err, errlen) < 0)
            goto out;
    if (R->ncoll && (r = draw_collectives(R, png_ok, err, errlen)) != 0) {
        rc = r < 0 ? -1 : 0;
        goto out;
    }
    if (!png_ok && R->ncharts)
        tb_report_note(R, "no PNG copies of the charts: %s", why);
    rc = 0;
out:
    free(bars);
    return rc;
}
