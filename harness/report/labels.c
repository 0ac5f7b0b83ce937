/* harness/report/labels.c: the report stage's shared words and numbers: how a number
 * and a run are written, the notes on what is missing, the distinct values of a column
 * and the like, used by the sections (report.c) and the charts (charts.c); and where a
 * chart's point labels go so that no two overlap (tb_report_place_labels). */
#include "report_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* 4 significant digits, no exponent for ordinary magnitudes; "" for NAN. */
const char *tb_report_num(double v, char *buf, size_t len)
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

int tb_report_path_in(char *buf, size_t len, const char *dir, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

void tb_report_note(struct report *R, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tb_lines_vadd(R->notes, sizeof R->notes, fmt, ap);
    va_end(ap);
}

/* ---- labels ---- */

void tb_report_shape(const struct tb_result *x, char *buf, size_t len)
{
    const char *b = F(x, "batch"), *in = F(x, "seq_in"), *out = F(x, "seq_out");
    bool train = !strcmp(F(x, "phase"), "train");
    size_t used = 0;
    const char *c = F(x, "concurrency"), *r = F(x, "request_rate");
    buf[0] = '\0';
    if (*r) /* a serving level: its load */
        used += (size_t)snprintf(buf + used, len - used, "r%s%s%s", r, *c ? " c" : "", c);
    else if (*c)
        used += (size_t)snprintf(buf + used, len - used, "c%s", c);
    else if (*b)
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
void tb_report_run_label(const struct tb_result *x, char *buf, size_t len, char *buf2, size_t len2)
{
    char shape[96];
    tb_report_shape(x, shape, sizeof shape);
    snprintf(buf, len, "%s %s%s%s", F(x, "model"), F(x, "phase"), *shape ? " " : "", shape);
    snprintf(buf2, len2, "%s, %s", F(x, "target"), tb_report_prov_label(x));
    for (char *s = buf; *s; s++)
        if (*s == '\t' || *s == '\n' || *s == '\r')
            *s = ' ';
    for (char *s = buf2; *s; s++)
        if (*s == '\t' || *s == '\n' || *s == '\r')
            *s = ' ';
}

bool tb_report_imported(const struct tb_result *x)
{
    return x->prov == TB_PROV_MEASURED && !strcmp(F(x, "executor"), "import");
}

const char *tb_report_prov_label(const struct tb_result *x)
{
    return tb_report_imported(x) ? "measured (imported)" : tb_provenance_to_string(x->prov);
}

bool tb_report_selects(const struct tb_result *x, int prov)
{
    if (prov < 0)
        return true;
    if (prov == TB_REPORT_IMPORTED)
        return tb_report_imported(x);
    return (int)x->prov == prov && !tb_report_imported(x);
}

size_t tb_report_count(const struct report *R, int prov)
{
    size_t n = 0;
    for (size_t i = 0; i < R->res.nrows; i++)
        n += tb_report_selects(&R->res.rows[i], prov);
    return n;
}

/* Distinct values of a column over the rows prov selects, joined. */
void tb_report_distinct(const struct report *R, int prov, const char *col, char *buf, size_t len)
{
    size_t used = 0, shown = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < R->res.nrows && used < len; i++) {
        const char *v = F(&R->res.rows[i], col);
        bool seen = false;
        if (!tb_report_selects(&R->res.rows[i], prov) || !*v)
            continue;
        for (size_t k = 0; k < i && !seen; k++)
            seen = tb_report_selects(&R->res.rows[k], prov) && !strcmp(F(&R->res.rows[k], col), v);
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

void tb_report_time_span(const struct report *R, int prov, char *buf, size_t len)
{
    const char *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < R->res.nrows; i++) {
        const char *v = F(&R->res.rows[i], "timestamp");
        if (!tb_report_selects(&R->res.rows[i], prov) || !*v)
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
void tb_report_counters(const struct report *R, char *buf, size_t len)
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

/* The models of the report for a chart title: their names, or how many when the
 * names would not fit on the title line. */
void tb_report_models(const struct report *R, char *buf, size_t len)
{
    tb_report_distinct(R, -1, "model", buf, len);
    if (strlen(buf) > 48 || strstr(buf, "; ...")) {
        /* every distinct model counted, not the ones the list had room for */
        size_t n = 0;
        for (size_t i = 0; i < R->res.nrows; i++) {
            const char *v = F(&R->res.rows[i], "model");
            bool seen = !*v;
            for (size_t k = 0; k < i && !seen; k++)
                seen = !strcmp(F(&R->res.rows[k], "model"), v);
            n += !seen;
        }
        snprintf(buf, len, "%zu models", n);
    }
}

/* A token count in words: "1 trillion", "300 billion", "5e+06". */
const char *tb_report_tokens_text(double n, char *buf, size_t len)
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

/* ---- where a chart's point labels go ---- */

/* Advance widths of DejaVu Sans (what browsers on Debian draw "Helvetica" with, and the
 * widest of the usual sans fonts) in em: narrow punctuation, wide letters, the rest. */
double tb_report_text_width(const char *s, double font_px)
{
    double em = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c & 0xC0) == 0x80)
            continue; /* a UTF-8 continuation byte: its character is counted once */
        if (strchr(" .,:;'!|il", c))
            em += 0.34;
        else if (strchr("%mwMW", c))
            em += 0.98;
        else if (c >= 'A' && c <= 'Z')
            em += 0.74;
        else
            em += 0.65;
    }
    return em * font_px;
}

static bool boxes_meet(const struct tb_label_box *a, const struct tb_label_box *b)
{
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

size_t tb_report_place_labels(struct tb_label *l, size_t n, double marker, double pad,
                              struct tb_label_box area)
{
    /* where a label may go, as (dx, dy) of its box's left edge and centre from the
     * point, in units of the nearest distance that clears the marker: right and above
     * first (a sweep's curve falls to the right), then the other sides, then farther */
    static const double right[][2] = {{1, -1}, {1, 1}, {1, 0}, {1, -2}, {1, 2}, {2, -2}, {2, 2}};
    static const double left[][2] = {{-1, -1}, {-1, 1},  {-1, 0}, {-1, -2},
                                     {-1, 2},  {-2, -2}, {-2, 2}};
    static const double mid[][2] = {{0, -1}, {0, 1}, {0, -2}, {0, 2}};
    const size_t nr = sizeof right / sizeof right[0], nm = sizeof mid / sizeof mid[0];
    size_t placed = 0;
    for (size_t i = 0; i < n; i++)
        l[i].placed = false;
    for (size_t i = 0; i < n; i++) {
        /* the distances that clear the marker: sideways; up or down beside it; above
         * or below it */
        const double gx = marker + pad, gy = l[i].h / 2 + pad / 2, gm = marker + pad + l[i].h / 2;
        if (l[i].w <= 0)
            continue;
        for (size_t c = 0; c < 2 * nr + nm && !l[i].placed; c++) {
            const double *d = c < nr ? right[c] : c < 2 * nr ? left[c - nr] : mid[c - 2 * nr];
            struct tb_label_box b;
            bool free_here = true;
            /* the box's left edge: right of the point, left of it, or centred on it */
            double x = d[0] > 0   ? l[i].ax + d[0] * gx
                       : d[0] < 0 ? l[i].ax + d[0] * gx - l[i].w
                                  : l[i].ax - l[i].w / 2;
            double y = l[i].ay + d[1] * (d[0] ? gy : gm);
            b.x0 = x - pad / 2;
            b.x1 = x + l[i].w + pad / 2;
            b.y0 = y - l[i].h / 2 - pad / 2;
            b.y1 = y + l[i].h / 2 + pad / 2;
            if (b.x0 < area.x0 || b.x1 > area.x1 || b.y0 < area.y0 || b.y1 > area.y1)
                continue;
            for (size_t k = 0; k < n && free_here; k++) {
                struct tb_label_box m = {l[k].ax - marker, l[k].ay - marker, l[k].ax + marker,
                                         l[k].ay + marker};
                struct tb_label_box o = {l[k].x - pad / 2, l[k].y - l[k].h / 2 - pad / 2,
                                         l[k].x + l[k].w + pad / 2, l[k].y + l[k].h / 2 + pad / 2};
                free_here = !boxes_meet(&b, &m) && !(l[k].placed && boxes_meet(&b, &o));
            }
            if (free_here) {
                l[i].x = x;
                l[i].y = y;
                l[i].placed = true;
                placed++;
            }
        }
    }
    return placed;
}

/* ---- file names a reader can use ---- */

/* The part of path after dir and a slash, or NULL when path is not inside dir. */
static char *inside(char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n == 0 || strncmp(path, dir, n) || path[n] != '/')
        return NULL;
    return path + n + 1;
}

void tb_report_short_paths(struct report *R)
{
    char cwd[4096];
    bool have_cwd = getcwd(cwd, sizeof cwd) != NULL;
    for (size_t i = 0; i < R->res.ntables; i++) {
        char *p = R->res.tables[i].path, *s;
        if (!p || p[0] != '/')
            continue; /* relative: as given, and no machine's path */
        s = inside(p, R->dir.outdir);
        if (!s && have_cwd)
            s = inside(p, cwd);
        if (!s)
            s = strrchr(p, '/') + 1;
        memmove(p, s, strlen(s) + 1); /* a suffix of the path: it fits where it is */
    }
}
