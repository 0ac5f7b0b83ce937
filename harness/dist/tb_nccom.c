/* harness/dist/tb_nccom.c: see tb_nccom.h. */
#include "tb_nccom.h"

#include "tb_neuron.h"
#include "tb_proc.h"
#include "tb_util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GIB_PER_GB 1.073741824 /* GiB/s x this = GB/s */
#define MAX_FIELDS 32          /* the widest documented header has 9 (--stats with 5) */
#define MAX_TIMES  16          /* time columns kept */

const char *tb_nccom_op(enum tb_coll_op op)
{
    /* aws-neuron-sdk tools/neuron-sys-tools/nccom-test.rst at a3247f5b (Neuron 2.32),
     * "CLI arguments": all_reduce/allr, all_gather/allg, reduce_scatter/redsct, sendrecv,
     * alltoall (and allgv, alltoallv, permute, which trnbench does not run) */
    switch (op) {
    case TB_COLL_ALL_REDUCE:
        return "allr";
    case TB_COLL_ALL_GATHER:
        return "allg";
    case TB_COLL_REDUCE_SCATTER:
        return "redsct";
    case TB_COLL_SENDRECV:
        return "sendrecv";
    case TB_COLL_ALL_TO_ALL:
        return "alltoall";
    }
    return NULL;
}

/* ---- columns by name ---- */

/* One time column: "time(us)", "time:avg(us)", "time:p50(us)". */
struct time_col {
    int field;              /* its index in a row (the table) */
    enum tb_coll_stat stat; /* MEAN for avg, PERCENTILE, UNLABELLED for time(us) */
    int pct;
    char name[40];
};

struct cols {
    int size, count, type, alg, bus; /* field indices; -1 absent */
    int nfields;
    struct time_col time[MAX_TIMES];
    int ntime;
};

/* Whether name is a time column, and which statistic: 1 yes (t filled but for field),
 * 0 not one trnbench reads (another column, or a statistic it does not know). */
static int time_column(const char *name, struct time_col *t)
{
    size_t n = strlen(name);
    memset(t, 0, sizeof *t);
    if (n >= sizeof t->name || n < 8 || strncmp(name, "time", 4) || strcmp(name + n - 4, "(us)"))
        return 0;
    snprintf(t->name, sizeof t->name, "%s", name);
    if (n == 8) { /* "time(us)" */
        t->stat = TB_COLL_STAT_UNLABELLED;
        return 1;
    }
    if (name[4] != ':')
        return 0;
    if (n == 12 && !strncmp(name + 5, "avg", 3)) {
        t->stat = TB_COLL_STAT_MEAN;
        return 1;
    }
    if (name[5] == 'p' && n >= 11 && n <= 13) { /* "time:pN(us)" .. "time:pNNN(us)" */
        int pct = 0;
        for (size_t i = 6; i < n - 4; i++) {
            if (name[i] < '0' || name[i] > '9')
                return 0;
            pct = pct * 10 + (name[i] - '0');
        }
        if (pct > 100)
            return 0;
        t->stat = TB_COLL_STAT_PERCENTILE;
        t->pct = pct;
        return 1;
    }
    return 0;
}

/* Split s in place at blanks into at most max fields; returns the count, or max + 1 when
 * there are more. */
static int split(char *s, char **f, int max)
{
    int n = 0;
    char *p = s;
    for (;;) {
        p += strspn(p, " \t\r");
        if (!*p)
            return n;
        if (n == max)
            return max + 1;
        f[n++] = p;
        p += strcspn(p, " \t\r");
        if (*p)
            *p++ = '\0';
    }
}

/* The columns of a header whose fields are f[0..n): 0, or -1 with what is missing. */
static int header_cols(char **f, int n, struct cols *c, char *what, size_t len)
{
    memset(c, 0, sizeof *c);
    c->size = c->count = c->type = c->alg = c->bus = -1;
    c->nfields = n;
    for (int i = 0; i < n; i++) {
        struct time_col t;
        if (!strcmp(f[i], "size(B)"))
            c->size = i;
        else if (!strcmp(f[i], "count(elems)"))
            c->count = i;
        else if (!strcmp(f[i], "type"))
            c->type = i;
        else if (!strcmp(f[i], "algbw(GB/s)"))
            c->alg = i;
        else if (!strcmp(f[i], "busbw(GB/s)"))
            c->bus = i;
        else if (time_column(f[i], &t) && c->ntime < MAX_TIMES) {
            t.field = i;
            c->time[c->ntime++] = t;
        }
    }
    if (c->size < 0 || c->count < 0 || c->type < 0 || c->alg < 0 || c->bus < 0 || c->ntime == 0) {
        snprintf(what, len, "%s",
                 c->size < 0    ? "size(B)"
                 : c->count < 0 ? "count(elems)"
                 : c->type < 0  ? "type"
                 : c->alg < 0   ? "algbw(GB/s)"
                 : c->bus < 0   ? "busbw(GB/s)"
                                : "time(us) or time:<stat>(us)");
        return -1;
    }
    return 0;
}

/* The time column recorded: the mean, else the median, else the first. */
static const struct time_col *chosen_time(const struct time_col *t, int n)
{
    for (int i = 0; i < n; i++)
        if (t[i].stat == TB_COLL_STAT_MEAN)
            return &t[i];
    for (int i = 0; i < n; i++)
        if (t[i].stat == TB_COLL_STAT_PERCENTILE && t[i].pct == 50)
            return &t[i];
    return &t[0];
}

/* r's time_stat and time_how from the column c (json: the report's key). */
static void set_stat(struct tb_coll_result *r, const struct time_col *c, bool json)
{
    const char *from = json ? "the JSON report's" : "nccom-test's";
    r->time_stat = c->stat;
    r->time_pct = c->pct;
    if (c->stat == TB_COLL_STAT_MEAN)
        snprintf(r->time_how, sizeof r->time_how, "%s %s, the mean of the timed operations' times",
                 from, c->name);
    else if (c->stat == TB_COLL_STAT_PERCENTILE)
        snprintf(r->time_how, sizeof r->time_how,
                 "%s %s, the P%d of the timed operations' times (no mean printed)", from, c->name,
                 c->pct);
    else
        snprintf(r->time_how, sizeof r->time_how,
                 "%s unlabelled %s: the P50 by nccom-test's guide up to Neuron 2.27, the "
                 "mean from 2.28 (aws-neuron-sdk 86a92868); not known which",
                 from, c->name);
}

/* ---- the unit of algbw ---- */

/* Whether algbw alg (printed to within alg_tol) is size / time in GB/s (unit 0) or GiB/s
 * (unit 1), time known to within time_tol us. */
static bool matches(double size, double time_us, double time_tol, double alg, double alg_tol,
                    int unit)
{
    double bw = size / (time_us * 1e3) / (unit ? GIB_PER_GB : 1.0);
    double tol = alg_tol + bw * (time_tol / time_us) * 1.01 + bw * 1e-6;
    return fabs(bw - alg) <= tol;
}

/* Half a unit in the last digit of the number printed as s ("58": 0.5, "6.19": 0.005). */
static double half_digit(const char *s)
{
    const char *dot = strchr(s, '.');
    double h = 0.5;
    if (dot)
        for (const char *p = dot + 1; *p >= '0' && *p <= '9'; p++)
            h /= 10;
    return h;
}

/* Unit bookkeeping across a table: which rows matched only one unit. */
struct units {
    long only[2]; /* the first line (or entry + 1) that matched only GB/s, only GiB/s */
};

/* Check one row: 0, or -1 with "algbw A is not size / time ..." in err (no prefix).
 * times[k] / time_tol[k]: the candidate times the tool may have divided by. */
static int check_alg(struct units *u, long where, double size, const double *times,
                     const double *time_tol, int ntimes, double alg, double alg_tol, char *err,
                     size_t errlen)
{
    bool m[2] = {false, false};
    if (ntimes == 0)
        return 0; /* no usable time: add_size refused the row already */
    for (int unit = 0; unit < 2; unit++)
        for (int k = 0; k < ntimes; k++)
            m[unit] = m[unit] || matches(size, times[k], time_tol[k], alg, alg_tol, unit);
    if (!m[0] && !m[1])
        return tb_err(err, errlen,
                      "algbw %g is not size / time: that is %.4g GB/s or %.4g GiB/s: not "
                      "nccom-test's table",
                      alg, size / (times[0] * 1e3), size / (times[0] * 1e3) / GIB_PER_GB);
    for (int unit = 0; unit < 2; unit++)
        if (m[unit] && !m[!unit] && !u->only[unit])
            u->only[unit] = where;
    return 0;
}

/* ---- one size ---- */

/* Append a size to r (capacity *cap): 0, or -1 with a message (prefix pre). */
static int add_size(struct tb_coll_result *r, size_t *cap, const char *pre, unsigned long long size,
                    unsigned long long count, const char *type, double time_us, double p90,
                    double p99, bool checked, char *err, size_t errlen)
{
    struct tb_coll_size *z;
    if (strcmp(type, "fp32") != 0)
        return tb_err(err, errlen, "%s: field 'type': '%s', trnbench asks for fp32", pre, type);
    if (!(time_us > 0) || !isfinite(time_us) || size == 0 || count > SIZE_MAX / 4 ||
        count * 4 != size)
        return tb_err(err, errlen, "%s: not a measurement: %llu B, %llu elements, %g us", pre, size,
                      count, time_us);
    if (r->nsizes && size <= r->sizes[r->nsizes - 1].bytes)
        /* nccom-test's sizes rise (-b .. -e by -f): the same size twice would be two
         * rows of one run id, and a rerun could not tell which is recorded */
        return tb_err(err, errlen, "%s: size %llu B is not above the line before's %zu B", pre,
                      size, r->sizes[r->nsizes - 1].bytes);
    if (r->nsizes == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        struct tb_coll_size *p = realloc(r->sizes, nc * sizeof *p);
        if (!p)
            return tb_err(err, errlen, "out of memory");
        r->sizes = p;
        *cap = nc;
    }
    z = &r->sizes[r->nsizes++];
    memset(z, 0, sizeof *z);
    z->bytes = (size_t)size;
    z->count = (size_t)count;
    z->time_us[0] = time_us;
    z->stddev_us[0] = z->stddev_us[1] = NAN; /* min, max: 0, not printed */
    z->p90_us[0] = p90;
    z->p99_us[0] = p99;
    /* bandwidths from the size and the time, in GB/s: the printed ones carry two
     * decimals only (0.00 at small sizes), in a unit that changed over the releases */
    z->algbw_gbs[0] = (double)size / (time_us * 1e3);
    z->busbw_gbs[0] = z->algbw_gbs[0] * r->factor;
    z->ran[0] = true;
    z->ran[1] = false;
    z->wrong[0] = checked ? 0 : -1;
    z->wrong[1] = -1;
    return 0;
}

/* A percentile column's value among t[0..n) of values v; 0 when not there. */
static double pct_of(const struct time_col *t, const double *v, int n, int pct)
{
    for (int i = 0; i < n; i++)
        if (t[i].stat == TB_COLL_STAT_PERCENTILE && t[i].pct == pct)
            return v[i];
    return 0;
}

/* The unit found into f: 0, or -1 when rows disagreed (message with prefix name). */
static int settle_unit(const struct units *u, const char *name, const char *what,
                       struct tb_nccom_format *f, char *err, size_t errlen)
{
    if (u->only[0] && u->only[1])
        return tb_err(err, errlen,
                      "%s: %s %ld's algbw is in GB/s, %s %ld's in GiB/s: not one table's", name,
                      what, u->only[0], what, u->only[1]);
    snprintf(f->unit, sizeof f->unit, "%s", u->only[0] ? "GB/s" : u->only[1] ? "GiB/s" : "");
    return 0;
}

static void init_result(struct tb_coll_result *r, struct tb_nccom_format *f, enum tb_coll_op op,
                        int nranks)
{
    memset(r, 0, sizeof *r);
    memset(f, 0, sizeof *f);
    r->op = op;
    r->nranks = nranks;
    r->factor = tb_coll_busbw_factor(op, nranks);
}

/* ---- the table ---- */

/* A whole field as an unsigned integer or a finite number: 0, or -1. */
static int field_u64(const char *s, unsigned long long *v)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return *end || errno ? -1 : 0;
}

static int field_num(const char *s, double *v)
{
    char *end;
    if (!((*s >= '0' && *s <= '9') || *s == '.' || *s == '-'))
        return -1; /* not "nan", "inf" */
    *v = strtod(s, &end);
    return *end || !isfinite(*v) ? -1 : 0;
}

int tb_nccom_parse(const char *name, const char *text, size_t len, enum tb_coll_op op, int nranks,
                   bool checked, struct tb_coll_result *r, struct tb_nccom_format *f, char *err,
                   size_t errlen)
{
    char *copy = NULL, *line, *save = NULL, pre[600];
    size_t cap = 0;
    long lineno = 0, errors = 0;
    bool header = false, avg = false;
    struct cols c = {0};
    struct units u = {{0, 0}};
    const struct time_col *tc = NULL;
    int rc = TB_EINPUT;

    init_result(r, f, op, nranks);
    if (memchr(text, '\0', len)) {
        tb_err(err, errlen, "%s: a NUL byte in the output", name);
        return TB_EINPUT;
    }
    copy = malloc(len + 1);
    if (!copy)
        return tb_err(err, errlen, "out of memory");
    memcpy(copy, text, len);
    copy[len] = '\0';
    f->stand_in = strstr(copy, TB_NEURON_STAND_IN_KEY) != NULL;
    /* strtok_r would skip empty lines and lose the count: walk by hand */
    for (line = copy; line; line = save) {
        char *nl = strchr(line, '\n'), *t, *fld[MAX_FIELDS + 1];
        double tv[MAX_TIMES], tt[MAX_TIMES], alg, bus;
        unsigned long long size, count;
        int n;
        save = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        lineno++;
        t = tb_trim(line);
        if (!*t || strstr(t, TB_NEURON_STAND_IN_KEY))
            continue;
        snprintf(pre, sizeof pre, "%.400s: line %ld", name, lineno);
        if (!strncmp(t, "size(B)", 7) && (t[7] == ' ' || t[7] == '\t')) {
            char what[64];
            if (header) {
                tb_err(err, errlen,
                       "%s: a second table (one per stream with --streams-json): not what "
                       "trnbench ran",
                       pre);
                goto fail;
            }
            n = split(t, fld, MAX_FIELDS);
            if (n > MAX_FIELDS || header_cols(fld, n, &c, what, sizeof what) != 0) {
                tb_err(err, errlen, "%s: nccom-test's header without a '%s' column", pre,
                       n > MAX_FIELDS ? "known" : what);
                goto fail;
            }
            header = true;
            tc = chosen_time(c.time, c.ntime);
            set_stat(r, tc, false);
            snprintf(f->time_col, sizeof f->time_col, "%s", tc->name);
            continue;
        }
        if (!header)
            continue; /* what comes before the table (warnings, the tool's banner) */
        if (!strncmp(t, "Avg bus bandwidth", 17)) {
            avg = true;
            continue;
        }
        if (strstr(t, "errors found")) {
            errors = strtol(t, NULL, 10);
            if (errors < 1)
                errors = 1;
            continue;
        }
        if (strstr(t, "Failure")) {
            tb_err(err, errlen, "%s: nccom-test failed: '%.300s'", pre, t);
            rc = TB_EFAIL;
            goto fail;
        }
        if (avg)
            continue; /* nothing documented follows the average */
        {
            char row[512];
            snprintf(row, sizeof row, "%.500s", t); /* t is split in place below */
            n = split(t, fld, MAX_FIELDS);
            if (n != c.nfields) {
                tb_err(err, errlen, "%s: %d fields under a header of %d: '%.200s'", pre, n,
                       c.nfields, row);
                goto fail;
            }
        }
        if (field_u64(fld[c.size], &size) || field_u64(fld[c.count], &count) ||
            field_num(fld[c.alg], &alg) || field_num(fld[c.bus], &bus) || alg < 0 || bus < 0) {
            tb_err(err, errlen, "%s: size(B), count(elems), algbw or busbw not a number", pre);
            goto fail;
        }
        for (int k = 0; k < c.ntime; k++) {
            if (field_num(fld[c.time[k].field], &tv[k])) {
                tb_err(err, errlen, "%s: field '%s': '%.40s' is not a time", pre, c.time[k].name,
                       fld[c.time[k].field]);
                goto fail;
            }
            tt[k] = half_digit(fld[c.time[k].field]);
        }
        {
            /* algbw is size / the mean when there is one (the guide's --stats example);
             * without a mean, any time column printed may be what it divided by */
            double bt[MAX_TIMES], btt[MAX_TIMES];
            int nb = 0;
            for (int k = 0; k < c.ntime; k++)
                if ((c.time[k].stat == TB_COLL_STAT_MEAN || tc->stat != TB_COLL_STAT_MEAN) &&
                    tv[k] > 0) {
                    bt[nb] = tv[k];
                    btt[nb++] = tt[k];
                }
            if (add_size(r, &cap, pre, size, count, fld[c.type], tv[tc - c.time],
                         pct_of(c.time, tv, c.ntime, 90), pct_of(c.time, tv, c.ntime, 99), checked,
                         err, errlen) != 0)
                goto fail;
            char e[300];
            if (check_alg(&u, lineno, (double)size, bt, btt, nb, alg, 0.0051, e, sizeof e)) {
                tb_err(err, errlen, "%s: %s", pre, e);
                goto fail;
            }
        }
    }
    if (errors) {
        tb_err(err, errlen, "%s: nccom-test reported %ld errors", name, errors);
        rc = TB_EFAIL;
        goto fail;
    }
    if (!header) {
        tb_err(err, errlen,
               "%s: no 'size(B) count(elems) type time(us) or time:<stat>(us) ...' header", name);
        goto fail;
    }
    if (!r->nsizes) {
        tb_err(err, errlen, "%s: the table has no rows", name);
        goto fail;
    }
    if (settle_unit(&u, name, "line", f, err, errlen) != 0)
        goto fail;
    free(copy);
    return 0;
fail:
    free(copy);
    tb_coll_result_release(r);
    return rc;
}

/* ---- the JSON report ---- */

/* A JSON number as a double: 0, or -1 when not a number. */
static int json_num(const json_t *v, double *d)
{
    if (!json_is_number(v))
        return -1;
    *d = json_number_value(v);
    return isfinite(*d) ? 0 : -1;
}

static int json_u64(const json_t *v, unsigned long long *u)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *u = (unsigned long long)json_integer_value(v);
    return 0;
}

int tb_nccom_parse_json(const char *name, const char *text, size_t len, enum tb_coll_op op,
                        int nranks, bool checked, struct tb_coll_result *r,
                        struct tb_nccom_format *f, char *err, size_t errlen)
{
    json_t *root = NULL, *res, *o;
    json_error_t je;
    struct units u = {{0, 0}};
    struct time_col tcols[MAX_TIMES], tc;
    size_t cap = 0, i;
    int ntime = 0, rc = TB_EINPUT;
    char pre[600];

    init_result(r, f, op, nranks);
    f->json = true;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        tb_err(err, errlen, "%s: not JSON: line %d column %d: %s", name, je.line, je.column,
               je.text);
        return TB_EINPUT;
    }
    f->stand_in = json_object_get(root, TB_NEURON_STAND_IN_KEY) != NULL;
    res = json_object_get(root, "results");
    if (!json_is_object(root) || !json_is_array(res)) {
        tb_err(err, errlen, "%s: not nccom-test's report: no \"results\" list", name);
        goto out;
    }
    json_array_foreach(res, i, o)
    {
        const char *key;
        json_t *v;
        unsigned long long size, count;
        double alg, bus, tv[MAX_TIMES], p90 = 0, p99 = 0, t = 0;
        int nt = 0;
        snprintf(pre, sizeof pre, "%.400s: results[%zu]", name, i);
        if (!json_is_object(o)) {
            tb_err(err, errlen, "%s: not an object", pre);
            goto out;
        }
        if (json_object_get(o, TB_NEURON_STAND_IN_KEY))
            f->stand_in = true;
        if (json_u64(json_object_get(o, "size(B)"), &size) ||
            json_u64(json_object_get(o, "count(elems)"), &count) ||
            !json_is_string(json_object_get(o, "type")) ||
            json_num(json_object_get(o, "algbw(GB/s)"), &alg) ||
            json_num(json_object_get(o, "busbw(GB/s)"), &bus) || alg < 0 || bus < 0) {
            tb_err(err, errlen,
                   "%s: needs integers \"size(B)\" and \"count(elems)\", a string \"type\", "
                   "numbers \"algbw(GB/s)\" and \"busbw(GB/s)\"",
                   pre);
            goto out;
        }
        /* the time keys: the first entry's decide the statistic; every entry has them */
        json_object_foreach(o, key, v)
        {
            if (!time_column(key, &tc) || nt == MAX_TIMES)
                continue;
            if (json_num(v, &tv[nt]) || !(tv[nt] > 0)) {
                tb_err(err, errlen, "%s: \"%s\" is not a time", pre, key);
                goto out;
            }
            if (i == 0)
                tcols[ntime++] = tc;
            if (tc.stat == TB_COLL_STAT_PERCENTILE && tc.pct == 90)
                p90 = tv[nt];
            if (tc.stat == TB_COLL_STAT_PERCENTILE && tc.pct == 99)
                p99 = tv[nt];
            nt++;
        }
        if (i == 0) {
            if (!ntime) {
                tb_err(err, errlen, "%s: no \"time(us)\" or \"time:<stat>(us)\"", pre);
                goto out;
            }
            tc = *chosen_time(tcols, ntime);
            set_stat(r, &tc, true);
            snprintf(f->time_col, sizeof f->time_col, "%s", tc.name);
        }
        if (json_num(json_object_get(o, f->time_col), &t) || !(t > 0)) {
            tb_err(err, errlen, "%s: no \"%s\" as the first entry had", pre, f->time_col);
            goto out;
        }
        if (add_size(r, &cap, pre, size, count, json_string_value(json_object_get(o, "type")), t,
                     p90, p99, checked, err, errlen) != 0)
            goto out;
        {
            double bt = t, btt = t == floor(t) ? 0.5 : 0.005;
            char e[300];
            /* the report's algbw is unrounded: every entry tells the unit */
            if (check_alg(&u, (long)i + 1, (double)size, &bt, &btt, 1, alg, 1e-9, e, sizeof e)) {
                tb_err(err, errlen, "%s: %s", pre, e);
                goto out;
            }
        }
    }
    if (!r->nsizes) {
        tb_err(err, errlen, "%s: the report has no results", name);
        goto out;
    }
    if (settle_unit(&u, name, "entry", f, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    json_decref(root);
    if (rc != 0)
        tb_coll_result_release(r);
    return rc;
}

/* ---- running it ---- */

/* Which of the options trnbench uses when offered nccom-test's --help names:
 * --report-to-json-file (the tools of Neuron 2.24 on) and --non-interactive (2.15 on: no
 * progress animation among the table's lines). A --help that fails names none. */
static void probe_help(const char *tool, bool *json, bool *quiet)
{
    const char *argv[] = {tool, "--help", NULL};
    struct tb_proc_opts po = {0};
    struct tb_proc_result pr = {0};
    char e[256];

    *json = *quiet = false;
    po.timeout_s = 60;
    po.grace_s = 1.0;
    if (tb_proc_run(argv, &po, &pr, e, sizeof e) == 0 && pr.out && !pr.exec_errno &&
        !pr.timed_out && !pr.term_signal) {
        *json = strstr(pr.out, "--report-to-json-file") != NULL;
        *quiet = strstr(pr.out, "--non-interactive") != NULL;
    }
    tb_proc_result_release(&pr);
}

int tb_nccom_run(const struct tb_nccom_opts *o, struct tb_coll_result *r, struct tb_nccom_format *f,
                 char *tool, size_t toollen, char *err, size_t errlen)
{
    char ranks[16], nodes[16], minb[32], maxb[32], factor[32], iters[16], warmup[16], how[256];
    char last[512], e[512] = "", report[4200] = "";
    const char *argv[24];
    const char *op = tb_nccom_op(o->op);
    struct tb_proc_opts po = {0};
    struct tb_proc_result pr = {0};
    int n = 0, rc;
    bool json, quiet;

    memset(r, 0, sizeof *r);
    memset(f, 0, sizeof *f);
    if (!op)
        return tb_err(err, errlen, "nccom-test has no %s", tb_coll_op_name(o->op));
    if (!tb_neuron_tool_find("nccom-test", tool, toollen)) {
        tb_err(err, errlen,
               "no nccom-test on PATH or in " TB_NEURON_TOOLS_DIR
               " (it comes with the Neuron SDK's aws-neuronx-tools package)");
        return 1;
    }
    probe_help(tool, &json, &quiet);
    if (json) {
        const char *dir = getenv("TMPDIR");
        int fd;
        snprintf(report, sizeof report, "%.4000s/trnbench-nccom-XXXXXX",
                 dir && *dir ? dir : "/tmp");
        if ((fd = mkstemp(report)) < 0) {
            fprintf(stderr,
                    "trnbench collectives: no file for nccom-test's JSON report in '%.300s' "
                    "(%s): its table is read\n",
                    dir && *dir ? dir : "/tmp", strerror(errno));
            report[0] = '\0';
        } else
            close(fd);
    }
    snprintf(ranks, sizeof ranks, "%d", o->ranks);
    snprintf(nodes, sizeof nodes, "%d", o->nodes);
    snprintf(minb, sizeof minb, "%zu", o->min_bytes);
    snprintf(maxb, sizeof maxb, "%zu", o->max_bytes);
    snprintf(factor, sizeof factor, "%g", o->step_factor);
    snprintf(iters, sizeof iters, "%d", o->iters);
    snprintf(warmup, sizeof warmup, "%d", o->warmup);
    argv[n++] = tool;
    argv[n++] = "-r";
    argv[n++] = ranks;
    argv[n++] = "-N";
    argv[n++] = nodes;
    argv[n++] = "-b";
    argv[n++] = minb;
    argv[n++] = "-e";
    argv[n++] = maxb;
    argv[n++] = "-f";
    argv[n++] = factor;
    argv[n++] = "-n";
    argv[n++] = iters;
    argv[n++] = "-w";
    argv[n++] = warmup;
    argv[n++] = "-d";
    argv[n++] = "fp32";
    if (o->check)
        argv[n++] = "-c";
    if (quiet)
        argv[n++] = "--non-interactive";
    if (report[0]) {
        argv[n++] = "--report-to-json-file";
        argv[n++] = report;
    }
    argv[n++] = op;
    argv[n] = NULL;
    po.timeout_s = o->timeout_s;
    po.echo = stderr;
    po.echo_prefix = "nccom-test: ";
    if (tb_proc_run(argv, &po, &pr, e, sizeof e) != 0) {
        tb_err(err, errlen, "'%.300s': %s", tool, e);
        rc = -1;
        goto out;
    }
    if (pr.exec_errno || pr.timed_out || pr.term_signal) {
        tb_proc_describe(&pr, o->timeout_s, how, sizeof how);
        tb_proc_last_line(pr.err_tail, last, sizeof last);
        tb_err(err, errlen, "'%.300s' %s%s%s", tool, how, last[0] ? ": " : "", last);
        rc = -1;
        goto out;
    }
    rc = tb_nccom_parse(tool, pr.out, pr.out_len, o->op, o->ranks, o->check, r, f, e, sizeof e);
    if (rc == 0 && report[0]) {
        /* the report's unrounded figures in place of the table's, for the same sizes */
        struct tb_coll_result j;
        struct tb_nccom_format jf;
        char *text = NULL;
        size_t len = 0;
        if (tb_read_file(report, &text, &len, e, sizeof e) != 0)
            fprintf(stderr, "trnbench collectives: %s: nccom-test's table is read\n", e);
        else if (len == 0)
            fprintf(stderr,
                    "trnbench collectives: nccom-test wrote no JSON report to '%s': "
                    "its table is read\n",
                    report);
        else if ((rc = tb_nccom_parse_json(report, text, len, o->op, o->ranks, o->check, &j, &jf, e,
                                           sizeof e)) == 0) {
            bool same = j.nsizes == r->nsizes;
            for (size_t k = 0; same && k < j.nsizes; k++)
                same = j.sizes[k].bytes == r->sizes[k].bytes;
            if (!same) {
                tb_coll_result_release(&j);
                snprintf(e, sizeof e,
                         "'%.300s': its JSON report's sizes are not its table's (%zu and %zu "
                         "sizes)",
                         tool, j.nsizes, r->nsizes);
                rc = TB_EINPUT;
            } else {
                jf.stand_in = jf.stand_in || f->stand_in;
                tb_coll_result_release(r);
                *r = j;
                *f = jf;
            }
        }
        free(text);
        if (rc != 0)
            tb_coll_result_release(r);
    }
    if (f->stand_in && !tb_neuron_stand_in_allowed()) {
        tb_coll_result_release(r);
        tb_err(err, errlen,
               "'%.300s' is a stand-in for trnbench's own tests (its output carries \"%s\"), "
               "refused outside them (no TRNBENCH_TEST=1): take it off PATH",
               tool, TB_NEURON_STAND_IN_KEY);
        rc = -1;
    } else if (rc == 0 && pr.exit_status != 0) {
        tb_coll_result_release(r);
        tb_proc_describe(&pr, o->timeout_s, how, sizeof how);
        tb_err(err, errlen, "'%.300s' %s after its table", tool, how);
        rc = -1;
    } else if (rc != 0) {
        tb_err(err, errlen, "%s", e);
    }
out:
    tb_proc_result_release(&pr);
    if (report[0])
        unlink(report);
    return rc;
}
