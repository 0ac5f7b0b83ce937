/* harness/run/tb_results.c: see tb_results.h. */
#include "tb_results.h"

#include "tb_csv.h"
#include "tb_util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const TB_RESULTS_COLUMNS[TB_RESULTS_NCOLS] = {
    "run_id",   "provenance",  "target",       "instances",  "host",      "executor",
    "model",    "layers",      "phase",        "precision",  "batch",     "seq_in",
    "seq_out",  "steps",       "resolution",   "metric",     "value",     "unit",
    "n",        "warmup",      "min",          "max",        "mean",      "stddev",
    "flops",    "timestamp",   "commit",       "compiler",   "cflags",    "blas",
    "counters", "source",      "notes",        "chips_used", "workload",  "config",
    "device",   "concurrency", "request_rate", "p90",        "p99",       "accelerators_unused",
    "nodes",    "ranks",       "rank",         "node",       "slurm_job", "ranks_per_node",
    "link",     "bytes",       "engine",
};

/* A results file as read: its table, and where each of TB_RESULTS_COLUMNS lies in it
 * (-1: a column its version did not have). */
struct existing {
    struct tb_csv_table t;
    int col[TB_RESULTS_NCOLS];
};

/* Columns added after the first version, in TB_RESULTS_COLUMNS order: a file without
 * some of them was written by an older version. */
static bool added_later(const char *name)
{
    static const char *const later[] = {"instances",  "steps",       "resolution",
                                        "chips_used", "workload",    "config",
                                        "device",     "concurrency", "request_rate",
                                        "p90",        "p99",         "accelerators_unused",
                                        "nodes",      "ranks",       "rank",
                                        "node",       "slurm_job",   "ranks_per_node",
                                        "link",       "bytes",       "engine"};
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++)
        if (!strcmp(name, later[i]))
            return true;
    return false;
}

/* Map t's header onto TB_RESULTS_COLUMNS. It must be that list, in that order, less
 * (for an older version's file) some of the columns added later. */
static int map_header(struct existing *x, const char *path, char *err, size_t errlen)
{
    const struct tb_csv_table *t = &x->t;
    int c = 0;
    for (int k = 0; k < TB_RESULTS_NCOLS; k++)
        x->col[k] = -1;
    for (size_t i = 0; i < t->ncols; i++, c++) {
        while (c < TB_RESULTS_NCOLS && strcmp(t->header[i], TB_RESULTS_COLUMNS[c]) != 0 &&
               added_later(TB_RESULTS_COLUMNS[c]))
            c++;
        if (c == TB_RESULTS_NCOLS)
            return tb_err(err, errlen,
                          "%s: line 1: column %zu is '%s', after the last of the %d "
                          "columns of results.csv",
                          path, i + 1, t->header[i], TB_RESULTS_NCOLS);
        if (strcmp(t->header[i], TB_RESULTS_COLUMNS[c]) != 0)
            return tb_err(err, errlen, "%s: line 1: column %zu is '%s', expected '%s'", path, i + 1,
                          t->header[i], TB_RESULTS_COLUMNS[c]);
        x->col[c] = (int)i;
    }
    for (; c < TB_RESULTS_NCOLS; c++)
        if (!added_later(TB_RESULTS_COLUMNS[c]))
            return tb_err(err, errlen, "%s: line 1: %zu columns, no '%s' (not a results.csv)", path,
                          t->ncols, TB_RESULTS_COLUMNS[c]);
    return 0;
}

/* Load path when it exists; check its header. *exists tells whether it did. */
static int load_existing(const char *path, struct existing *x, int *exists, char *err,
                         size_t errlen)
{
    *exists = tb_file_exists(path);
    if (!*exists)
        return 0;
    if (tb_csv_load(&x->t, path, err, errlen) != 0)
        return -1;
    if (map_header(x, path, err, errlen) != 0) {
        tb_csv_release(&x->t);
        return -1;
    }
    return 0;
}

/* Field c (a TB_COL_*) of row r of an existing file: "" for a column it lacks. */
static const char *existing_get(const struct existing *x, size_t r, int c)
{
    return tb_csv_get(&x->t, r, x->col[c]);
}

static int put_row(FILE *f, const char *const *cells)
{
    for (int c = 0; c < TB_RESULTS_NCOLS; c++)
        if (tb_csv_put(f, cells[c], c + 1 < TB_RESULTS_NCOLS ? ',' : '\n') != 0)
            return -1;
    return 0;
}

int tb_results_append(const char *path, const struct tb_result_row *rows, size_t n, char *err,
                      size_t errlen)
{
    struct existing old;
    int exists = 0, rc = -1;
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = NULL;

    memset(&old, 0, sizeof old);
    if (load_existing(path, &old, &exists, err, errlen) != 0)
        return -1;
    mem = open_memstream(&buf, &len);
    if (!mem) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    if (put_row(mem, TB_RESULTS_COLUMNS) != 0)
        goto write_fail;
    for (size_t r = 0; exists && r < old.t.nrows; r++) {
        const char *cells[TB_RESULTS_NCOLS];
        for (int c = 0; c < TB_RESULTS_NCOLS; c++)
            cells[c] = existing_get(&old, r, c);
        if (put_row(mem, cells) != 0)
            goto write_fail;
    }
    for (size_t r = 0; r < n; r++) {
        const char *cells[TB_RESULTS_NCOLS];
        char config[192], workload[192];
        memcpy(cells, rows[r].col, sizeof cells);
        if (!cells[TB_COL_CONFIG] && cells[TB_COL_RUN_ID]) {
            tb_results_config(cells[TB_COL_RUN_ID],
                              cells[TB_COL_TARGET] ? cells[TB_COL_TARGET] : "",
                              cells[TB_COL_MODEL] ? cells[TB_COL_MODEL] : "", config, sizeof config,
                              workload, sizeof workload);
            cells[TB_COL_CONFIG] = config;
            cells[TB_COL_WORKLOAD] = workload;
        }
        if (put_row(mem, cells) != 0)
            goto write_fail;
    }
    if (fclose(mem) != 0) {
        mem = NULL;
        goto write_fail;
    }
    mem = NULL;
    rc = tb_write_file_atomic(path, buf, len, err, errlen);
    goto out;
write_fail:
    tb_err(err, errlen, "cannot format rows for '%s'", path);
out:
    if (mem)
        fclose(mem);
    free(buf);
    if (exists)
        tb_csv_release(&old.t);
    return rc;
}

int tb_results_lock_file(struct tb_lock *l, const char *lock, const char *results, const char *name,
                         const char *of, const char *who, bool wait, char *err, size_t errlen)
{
    char removed[1024];
    int r = tb_lock_try(l, lock, who, err, errlen);
    if (r < 0)
        return -1;
    if (r == 1 && !wait) {
        tb_err(err, errlen, "'%s' is in use by another writer of %s (%s); not waiting", name, of,
               l->holder[0] ? l->holder : "pid unknown");
        tb_lock_release(l);
        return 1;
    }
    if (r == 1) {
        fprintf(stderr,
                "%s: '%s' is in use by another writer of %s (%s); waiting until it is done\n", who,
                name, of, l->holder[0] ? l->holder : "pid unknown");
        if (tb_lock_wait(l, who, err, errlen) != 0)
            return -1;
        fprintf(stderr, "%s: '%s' is free: going on\n", who, name);
    }
    if (l->warning[0])
        fprintf(stderr, "%s: %s\n", who, l->warning);
    if (tb_tmp_sweep(results, removed, sizeof removed) > 0)
        fprintf(stderr, "%s: removed %s, left by a writer that was killed before its rename\n", who,
                removed);
    return 0;
}

int tb_results_lock(struct tb_lock *l, const char *dir, const char *who, bool wait, char *err,
                    size_t errlen)
{
    char lock[PATH_MAX], results[PATH_MAX];
    if ((size_t)snprintf(lock, sizeof lock, "%s/.results.lock", dir) >= sizeof lock ||
        (size_t)snprintf(results, sizeof results, "%s/results.csv", dir) >= sizeof results)
        return tb_err(err, errlen, "path too long: '%s'", dir);
    return tb_results_lock_file(l, lock, results, dir, "its results.csv", who, wait, err, errlen);
}

int tb_results_has_run(const char *path, const char *run_id, char *err, size_t errlen)
{
    struct existing x;
    int exists = 0, found = 0;
    if (load_existing(path, &x, &exists, err, errlen) != 0)
        return -1;
    if (!exists)
        return 0;
    for (size_t r = 0; r < x.t.nrows && !found; r++)
        found = !strcmp(existing_get(&x, r, TB_COL_RUN_ID), run_id);
    tb_csv_release(&x.t);
    return found;
}

/* ---- reading results back ---- */

static const char *const PROV_NAMES[TB_NPROV] = {"measured", "modeled", "published"};

const char *tb_provenance_to_string(enum tb_provenance p)
{
    return (unsigned)p < TB_NPROV ? PROV_NAMES[p] : "unknown";
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

bool tb_result_is_token_rate(const char *metric)
{
    return ends_with(metric, "_tokens_per_s");
}

bool tb_result_is_rate(const char *metric)
{
    return tb_result_is_token_rate(metric) || !strcmp(metric, "images_per_s");
}

void tb_results_config(const char *run_id, const char *target, const char *model, char *config,
                       size_t clen, char *workload, size_t wlen)
{
    const char *id = run_id;
    size_t tl = strlen(target);
    char *p;
    if (!strncmp(id, "model:", 6) && !strncmp(id + 6, target, tl) && id[6 + tl] == '/')
        id += 7 + tl;
    snprintf(config, clen, "%s", *id ? id : model);
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

const char *tb_result_field(const struct tb_result *x, const char *name)
{
    return tb_csv_field(x->t, x->r, name);
}

long tb_result_line(const struct tb_result *x)
{
    return x->t->lines[x->r];
}

int tb_result_bad_field(const struct tb_result *x, const char *name, const char *what, char *err,
                        size_t errlen)
{
    return tb_err(err, errlen, "%s: line %ld: field '%s': %s: '%s'", x->t->path, tb_result_line(x),
                  name, what, tb_result_field(x, name));
}

/* Optional number: "" -> NAN. */
static int opt_num(const struct tb_result *x, const char *name, double *out, char *err,
                   size_t errlen)
{
    const char *s = tb_result_field(x, name);
    char *end;
    if (!*s) {
        *out = NAN;
        return 0;
    }
    errno = 0;
    *out = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(*out) || isspace((unsigned char)*s))
        return tb_result_bad_field(x, name, "not a number", err, errlen);
    return 0;
}

/* Optional count: "" -> -1. */
static int opt_count(const struct tb_result *x, const char *name, long *out, char *err,
                     size_t errlen)
{
    const char *s = tb_result_field(x, name);
    if (!*s) {
        *out = -1;
        return 0;
    }
    if (tb_parse_long(s, 0, 1000000000L, out) != 0)
        return tb_result_bad_field(x, name, "not a count (a whole number >= 0)", err, errlen);
    return 0;
}

/* The columns a file must have to be read (any version's results.csv has them). */
static const char *const REQUIRED[] = {"provenance", "target", "model", "phase", "precision",
                                       "metric",     "value",  "unit",  NULL};

/* Check row x->r of x->t and fill x's typed fields. */
static int check_row(struct tb_result *x, char *err, size_t errlen)
{
    static const char *const text[] = {"target", "model", "phase", "metric", NULL};
    static const char *const counts[] = {"batch", "seq_in", "seq_out", "layers", NULL};
    static const char *const nums[] = {"mean", "stddev", "flops", NULL};
    const char *p = tb_result_field(x, "provenance");
    bool known = false;
    double scratch;
    long lscratch;

    for (int i = 0; i < TB_NPROV; i++)
        if (!strcmp(p, PROV_NAMES[i])) {
            x->prov = (enum tb_provenance)i;
            known = true;
        }
    if (!known)
        return tb_result_bad_field(x, "provenance", "not measured, modeled or published", err,
                                   errlen);
    for (const char *const *f = text; *f; f++)
        if (!*tb_result_field(x, *f))
            return tb_err(err, errlen, "%s: line %ld: field '%s': empty", x->t->path,
                          tb_result_line(x), *f);
    if (!*tb_result_field(x, "value"))
        return tb_err(err, errlen, "%s: line %ld: field 'value': empty", x->t->path,
                      tb_result_line(x));
    if (opt_num(x, "value", &x->value, err, errlen) || opt_num(x, "min", &x->min, err, errlen) ||
        opt_num(x, "max", &x->max, err, errlen) || opt_num(x, "p90", &x->p90, err, errlen) ||
        opt_num(x, "p99", &x->p99, err, errlen) || opt_count(x, "n", &x->n, err, errlen) ||
        opt_count(x, "warmup", &x->warmup, err, errlen) ||
        opt_count(x, "instances", &x->instances, err, errlen) ||
        opt_count(x, "chips_used", &x->chips_used, err, errlen))
        return -1;
    if (x->instances < 1) {
        if (x->instances == 0)
            return tb_result_bad_field(x, "instances", "must be at least 1", err, errlen);
        x->instances = 1; /* empty or absent */
    }
    if (x->chips_used == 0)
        return tb_result_bad_field(x, "chips_used", "must be at least 1", err, errlen);
    if (x->chips_used < 0)
        x->chips_used = 0; /* empty or absent (an older file): all chips of its instances */
    for (const char *const *f = nums; *f; f++)
        if (opt_num(x, *f, &scratch, err, errlen))
            return -1;
    for (const char *const *f = counts; *f; f++)
        if (opt_count(x, *f, &lscratch, err, errlen))
            return -1;
    if (!isnan(x->min) && !isnan(x->max) && x->min > x->max)
        return tb_result_bad_field(x, "min", "greater than max", err, errlen);
    if (tb_result_is_rate(tb_result_field(x, "metric")) && !(x->value > 0))
        return tb_result_bad_field(x, "value", "a throughput must be positive", err, errlen);
    /* workload and config: the file's, or (older files, rows written by other tools)
     * derived from run_id as the writer derives them */
    if (*tb_result_field(x, "config")) {
        snprintf(x->config, sizeof x->config, "%s", tb_result_field(x, "config"));
        snprintf(x->workload, sizeof x->workload, "%s", tb_result_field(x, "workload"));
    } else {
        tb_results_config(tb_result_field(x, "run_id"), tb_result_field(x, "target"),
                          tb_result_field(x, "model"), x->config, sizeof x->config, x->workload,
                          sizeof x->workload);
    }
    return 0;
}

int tb_results_load(struct tb_results *res, const char *const *paths, size_t npaths, char *err,
                    size_t errlen)
{
    size_t total = 0, k = 0;

    memset(res, 0, sizeof *res);
    if (npaths == 0 || !paths)
        return tb_err(err, errlen, "no results file given");
    res->tables = tb_alloc_array(npaths, sizeof(*res->tables));
    if (!res->tables) {
        tb_err(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < npaths; i++) {
        if (tb_csv_load(&res->tables[i], paths[i], err, errlen) != 0)
            goto fail;
        res->ntables++;
        if (tb_results_is_predict(&res->tables[i]) &&
            tb_results_from_predict(&res->tables[i], res->notes, sizeof res->notes, err, errlen) !=
                0)
            goto fail;
        if (tb_csv_require(&res->tables[i], REQUIRED, err, errlen) != 0)
            goto fail;
        total += res->tables[i].nrows;
    }
    if (total == 0) {
        tb_err(err, errlen, "%s: no result rows", paths[0]);
        goto fail;
    }
    res->rows = tb_alloc_array(total, sizeof(*res->rows));
    if (!res->rows) {
        tb_err(err, errlen, "out of memory");
        goto fail;
    }
    /* check in file order so the first bad line is the one reported, then order by
     * provenance so measured, modeled and published rows never interleave */
    for (size_t i = 0; i < res->ntables; i++)
        for (size_t r = 0; r < res->tables[i].nrows; r++) {
            struct tb_result x = {.t = &res->tables[i], .r = r, .prov = TB_PROV_MEASURED};
            if (check_row(&x, err, errlen) != 0)
                goto fail;
            res->nprov[x.prov]++;
        }
    for (int p = 0; p < TB_NPROV; p++)
        for (size_t i = 0; i < res->ntables; i++)
            for (size_t r = 0; r < res->tables[i].nrows; r++) {
                struct tb_result x = {.t = &res->tables[i], .r = r, .prov = TB_PROV_MEASURED};
                check_row(&x, err, errlen); /* passed above: this fills x again */
                if ((int)x.prov == p)
                    res->rows[k++] = x;
            }
    res->nrows = k;
    return 0;
fail:
    tb_results_release(res);
    return -1;
}

void tb_results_release(struct tb_results *res)
{
    free(res->rows);
    for (size_t i = 0; i < res->ntables; i++)
        tb_csv_release(&res->tables[i]);
    free(res->tables);
    memset(res, 0, sizeof *res);
}
