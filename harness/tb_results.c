/* harness/tb_results.c: see tb_results.h. */
#include "tb_results.h"

#include "tb_csv.h"
#include "tb_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const TB_RESULTS_COLUMNS[TB_RESULTS_NCOLS] = {
    "run_id", "provenance", "target", "instances", "host", "executor", "model", "layers", "phase",
    "precision", "batch", "seq_in", "seq_out", "steps", "resolution", "metric", "value", "unit", "n", "warmup",
    "min", "max", "mean", "stddev", "flops", "timestamp", "commit", "compiler", "cflags",
    "blas", "counters", "source", "notes",
};

/* Load path when it exists; check its header. *exists tells whether it did. */
static int load_existing(const char *path, struct tb_csv_table *t, int *exists, char *err,
                         size_t errlen)
{
    *exists = tb_file_exists(path);
    if (!*exists)
        return 0;
    if (tb_csv_load(t, path, err, errlen) != 0)
        return -1;
    if (t->ncols != TB_RESULTS_NCOLS) {
        tb_err(err, errlen, "%s: line 1: %zu columns, expected the %d of results.csv", path,
               t->ncols, TB_RESULTS_NCOLS);
        tb_csv_release(t);
        return -1;
    }
    for (size_t i = 0; i < t->ncols; i++)
        if (strcmp(t->header[i], TB_RESULTS_COLUMNS[i]) != 0) {
            tb_err(err, errlen, "%s: line 1: column %zu is '%s', expected '%s'", path, i + 1,
                   t->header[i], TB_RESULTS_COLUMNS[i]);
            tb_csv_release(t);
            return -1;
        }
    return 0;
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
    struct tb_csv_table old;
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
    for (size_t r = 0; exists && r < old.nrows; r++)
        if (put_row(mem, (const char *const *)(old.cells + r * old.ncols)) != 0)
            goto write_fail;
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
        tb_csv_release(&old);
    return rc;
}

int tb_results_has_run(const char *path, const char *run_id, char *err, size_t errlen)
{
    struct tb_csv_table t;
    int exists = 0, found = 0;
    if (load_existing(path, &t, &exists, err, errlen) != 0)
        return -1;
    if (!exists)
        return 0;
    for (size_t r = 0; r < t.nrows && !found; r++)
        found = !strcmp(tb_csv_get(&t, r, TB_COL_RUN_ID), run_id);
    tb_csv_release(&t);
    return found;
}
