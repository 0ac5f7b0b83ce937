/* harness/base/tb_csv.c: see tb_csv.h. Parses with libcsv, feeding one physical line at a
 * time so each row knows the line it started on. A leading UTF-8 BOM is stripped and a
 * NUL byte in a field refused (tb_util.h's rule for text files). */
#include "tb_csv.h"

#include "tb_util.h"

#include <csv.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct csv_ctx {
    struct tb_csv_table *t;
    char **cur; /* owned: fields of the row being read */
    size_t ncur, capcur;
    size_t caprows;
    long line;     /* physical line being fed */
    long row_line; /* line the current row started on */
    int failed;
    char *err;
    size_t errlen;
};

static void on_field(void *s, size_t len, void *data)
{
    struct csv_ctx *c = data;
    char *f;
    if (c->failed)
        return;
    if (c->ncur == 0)
        c->row_line = c->line;
    /* a C string would end the field at the NUL: "1<NUL>32416" read as 1 */
    if (memchr(s, '\0', len)) {
        struct tb_csv_table *t = c->t;
        c->failed = 1;
        if (t->header && c->ncur < t->ncols)
            tb_err(c->err, c->errlen, "%s: line %ld: field '%s': a NUL byte", t->path, c->line,
                   t->header[c->ncur]);
        else
            tb_err(c->err, c->errlen, "%s: line %ld: field %zu: a NUL byte", t->path, c->line,
                   c->ncur + 1);
        return;
    }
    if (c->ncur == c->capcur) {
        size_t n = c->capcur ? c->capcur * 2 : 16;
        char **p = realloc(c->cur, n * sizeof(*p));
        if (!p) {
            c->failed = 1;
            tb_err(c->err, c->errlen, "out of memory");
            return;
        }
        c->cur = p;
        c->capcur = n;
    }
    f = malloc(len + 1);
    if (!f) {
        c->failed = 1;
        tb_err(c->err, c->errlen, "out of memory");
        return;
    }
    if (len)
        memcpy(f, s, len);
    f[len] = '\0';
    c->cur[c->ncur++] = f;
}

static void drop_cur(struct csv_ctx *c)
{
    for (size_t i = 0; i < c->ncur; i++)
        free(c->cur[i]);
    c->ncur = 0;
}

static void on_row(int term, void *data)
{
    struct csv_ctx *c = data;
    struct tb_csv_table *t = c->t;
    (void)term;
    if (c->failed) {
        drop_cur(c);
        return;
    }
    if (c->ncur == 0)
        return;
    /* a line holding only one empty field is a blank line */
    if (c->ncur == 1 && c->cur[0][0] == '\0') {
        drop_cur(c);
        return;
    }
    if (!t->header) {
        t->header = c->cur;
        t->ncols = c->ncur;
        c->cur = NULL;
        c->ncur = c->capcur = 0;
        return;
    }
    if (c->ncur != t->ncols) {
        c->failed = 1;
        tb_err(c->err, c->errlen, "%s: line %ld: %zu fields where the header has %zu", t->path,
               c->row_line, c->ncur, t->ncols);
        drop_cur(c);
        return;
    }
    if (t->nrows == c->caprows) {
        size_t n = c->caprows ? c->caprows * 2 : 64;
        char **cells = tb_alloc_array(n * t->ncols, sizeof(*cells));
        long *lines = tb_alloc_array(n, sizeof(*lines));
        if (!cells || !lines) {
            free(cells);
            free(lines);
            c->failed = 1;
            tb_err(c->err, c->errlen, "out of memory");
            drop_cur(c);
            return;
        }
        if (t->nrows) {
            memcpy(cells, t->cells, t->nrows * t->ncols * sizeof(*cells));
            memcpy(lines, t->lines, t->nrows * sizeof(*lines));
        }
        free(t->cells);
        free(t->lines);
        t->cells = cells;
        t->lines = lines;
        c->caprows = n;
    }
    memcpy(t->cells + t->nrows * t->ncols, c->cur, t->ncols * sizeof(*c->cur));
    t->lines[t->nrows++] = c->row_line;
    c->ncur = 0;
}

/* Read the table from f; name is for messages and t->path. */
static int read_table(struct tb_csv_table *t, FILE *f, const char *name, char *err, size_t errlen)
{
    struct csv_parser p;
    struct csv_ctx c;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = -1, inited = 0;

    memset(&c, 0, sizeof c);
    c.t = t;
    c.err = err;
    c.errlen = errlen;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
        tb_err(err, errlen, "cannot start the CSV parser");
        goto out;
    }
    inited = 1;
    while ((n = getline(&line, &cap, f)) > 0) {
        c.line++;
        if (c.line == 1)
            n = (ssize_t)tb_text_strip_bom(line, (size_t)n);
        if (csv_parse(&p, line, (size_t)n, on_field, on_row, &c) != (size_t)n) {
            tb_err(err, errlen, "%s: line %ld: %s", name, c.line, csv_strerror(csv_error(&p)));
            goto out;
        }
        if (c.failed)
            goto out;
    }
    if (ferror(f)) {
        tb_err(err, errlen, "cannot read '%s': %s", name, strerror(errno));
        goto out;
    }
    if (csv_fini(&p, on_field, on_row, &c) != 0) {
        tb_err(err, errlen, "%s: line %ld: %s", name, c.line, csv_strerror(csv_error(&p)));
        goto out;
    }
    if (c.failed)
        goto out;
    if (!t->header) {
        tb_err(err, errlen, "%s: line 1: no header row", name);
        goto out;
    }
    rc = 0;
out:
    if (inited)
        csv_free(&p);
    drop_cur(&c);
    free(c.cur);
    free(line);
    return rc;
}

/* Read the table called name from f (NULL: err says why already) and close f. On a
 * failure t is released. */
static int load_stream(struct tb_csv_table *t, FILE *f, const char *name, char *err, size_t errlen)
{
    int rc = -1;
    if (f) {
        t->path = tb_strdup(name);
        rc = t->path ? read_table(t, f, name, err, errlen) : tb_err(err, errlen, "out of memory");
        fclose(f);
    }
    if (rc != 0)
        tb_csv_release(t);
    return rc;
}

int tb_csv_load(struct tb_csv_table *t, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    memset(t, 0, sizeof *t);
    if (!f)
        tb_err(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    return load_stream(t, f, path, err, errlen);
}

int tb_csv_parse(struct tb_csv_table *t, const char *name, const char *text, size_t len, char *err,
                 size_t errlen)
{
    FILE *f = NULL;
    memset(t, 0, sizeof *t);
    /* fmemopen reads the caller's bytes in place; "r" never writes to them */
    if (len == 0)
        tb_err(err, errlen, "%s: line 1: no header row", name);
    else if (!(f = fmemopen((void *)text, len, "r")))
        tb_err(err, errlen, "%s: cannot read it: %s", name, strerror(errno));
    return load_stream(t, f, name, err, errlen);
}

void tb_csv_release(struct tb_csv_table *t)
{
    for (size_t i = 0; t->header && i < t->ncols; i++)
        free(t->header[i]);
    for (size_t i = 0; t->cells && i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->header);
    free(t->cells);
    free(t->lines);
    free(t->path);
    memset(t, 0, sizeof *t);
}

int tb_csv_col(const struct tb_csv_table *t, const char *name)
{
    for (size_t i = 0; i < t->ncols; i++)
        if (!strcmp(t->header[i], name))
            return (int)i;
    return -1;
}

const char *tb_csv_get(const struct tb_csv_table *t, size_t row, int col)
{
    if (col < 0 || (size_t)col >= t->ncols || row >= t->nrows)
        return "";
    return t->cells[row * t->ncols + (size_t)col];
}

const char *tb_csv_field(const struct tb_csv_table *t, size_t row, const char *name)
{
    return tb_csv_get(t, row, tb_csv_col(t, name));
}

int tb_csv_require(const struct tb_csv_table *t, const char *const *names, char *err, size_t errlen)
{
    for (; *names; names++)
        if (tb_csv_col(t, *names) < 0)
            return tb_err(err, errlen, "%s: line 1: missing column '%s'", t->path, *names);
    return 0;
}

int tb_csv_load_optional(struct tb_csv_table *t, const char *dir, const char *file,
                         const char *const *cols, char *err, size_t errlen)
{
    char path[PATH_MAX];
    memset(t, 0, sizeof *t);
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path)
        return tb_err(err, errlen, "%s/%s: path too long", dir, file);
    if (access(path, F_OK) != 0)
        return 0; /* no such table: lookups find nothing and say so */
    if (tb_csv_load(t, path, err, errlen) != 0)
        return -1;
    return tb_csv_require(t, cols, err, errlen);
}

int tb_csv_put(FILE *f, const char *field, int sep)
{
    const char *s = field ? field : "";
    size_t n = strlen(s);
    /* quote only when needed, so plain numbers stay plain */
    if (strpbrk(s, ",\"\r\n") || (n && (s[0] == ' ' || s[n - 1] == ' '))) {
        if (csv_fwrite(f, s, n) != 0)
            return -1;
    } else if (n && fwrite(s, 1, n, f) != n) {
        return -1;
    }
    return fputc(sep, f) == EOF ? -1 : 0;
}

int tb_csv_formula_like(const char *s)
{
    char *end;
    if (!s || !strchr("=+-@\t\r", s[0]) || !s[0])
        return 0;
    if (s[0] == '+' || s[0] == '-') {
        /* a whole number is data, never a formula: "-1.5", "+3e5" */
        (void)strtod(s, &end);
        if (end != s && *end == '\0')
            return 0;
    }
    return 1;
}

int tb_csv_put_text(FILE *f, const char *field, int sep)
{
    char *quoted;
    int rc;
    if (!tb_csv_formula_like(field))
        return tb_csv_put(f, field, sep);
    quoted = malloc(strlen(field) + 2);
    if (!quoted)
        return -1;
    quoted[0] = '\'';
    strcpy(quoted + 1, field);
    rc = tb_csv_put(f, quoted, sep);
    free(quoted);
    return rc;
}
