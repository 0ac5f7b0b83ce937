/* harness/tb_results.c: see tb_results.h. */
#include "tb_results.h"

#include "tb_csv.h"
#include "tb_util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const TB_RESULTS_COLUMNS[TB_RESULTS_NCOLS] = {
    "run_id",     "provenance", "target",    "instances", "host",      "executor",   "model",
    "layers",     "phase",      "precision", "batch",     "seq_in",    "seq_out",    "steps",
    "resolution", "metric",     "value",     "unit",      "n",         "warmup",     "min",
    "max",        "mean",       "stddev",    "flops",     "timestamp", "commit",     "compiler",
    "cflags",     "blas",       "counters",  "source",    "notes",     "chips_used",
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
    static const char *const later[] = {"instances", "steps", "resolution", "chips_used"};
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
    for (size_t r = 0; r < n; r++)
        if (put_row(mem, rows[r].col) != 0)
            goto write_fail;
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
