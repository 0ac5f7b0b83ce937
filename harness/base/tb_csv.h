/*
 * harness/base/tb_csv.h: CSV tables read with libcsv (RFC 4180) and looked up by header
 * name, with the line each row started on so errors can name file, line and field.
 * A UTF-8 BOM at the start of the text is stripped; a NUL byte in a field is an input
 * error naming file, line and column (tb_util.h's rule for text files).
 *
 * A table owns all its strings; tb_csv_release frees them. Every row has exactly as
 * many fields as the header (a short or long row is an input error). Empty fields are
 * "" (never NULL).
 */
#ifndef TB_CSV_H
#define TB_CSV_H

#include <stddef.h>
#include <stdio.h>

struct tb_csv_table {
    char *path;    /* owned: as given to tb_csv_load, for messages */
    size_t ncols;  /* columns in the header */
    char **header; /* owned: ncols names */
    size_t nrows;  /* data rows (header excluded) */
    char **cells;  /* owned: nrows * ncols strings, row-major */
    long *lines;   /* owned: nrows physical line numbers (1-based) where each row starts */
};

/* Read path. Returns 0, or -1 with "path: line N: ..." in err. A missing file is an
 * error. Blank lines are skipped. */
int tb_csv_load(struct tb_csv_table *t, const char *path, char *err, size_t errlen);
/* The same for len bytes of text in memory (a child process's output); name stands
 * for the file in t->path and the messages ("pytorch peer output: line 3: ..."). */
int tb_csv_parse(struct tb_csv_table *t, const char *name, const char *text, size_t len, char *err,
                 size_t errlen);
void tb_csv_release(struct tb_csv_table *t);

/* Column index of name, or -1. */
int tb_csv_col(const struct tb_csv_table *t, const char *name);
/* Cell text; "" when col < 0. */
const char *tb_csv_get(const struct tb_csv_table *t, size_t row, int col);
/* Cell by column name; "" when the column is absent. */
const char *tb_csv_field(const struct tb_csv_table *t, size_t row, const char *name);
/* An optional table: dir/file when it exists (read, then its columns required as by
 * tb_csv_require), else an empty table and 0. Returns -1 with the message on a bad file. */
int tb_csv_load_optional(struct tb_csv_table *t, const char *dir, const char *file,
                         const char *const *cols, char *err, size_t errlen);
/* Fail with "path: missing column 'x'" unless every name in the NULL-terminated list
 * is in the header. */
int tb_csv_require(const struct tb_csv_table *t, const char *const *names, char *err,
                   size_t errlen);

/* Write one field, quoted when needed (libcsv's csv_fwrite), then sep (',' or '\n'). */
int tb_csv_put(FILE *f, const char *field, int sep);
/* The same for a cell that may hold text from inputs, in a CSV meant for spreadsheets
 * (cost.csv, assessment.csv, predict's output): text starting with = + - @, a tab or a
 * carriage return, which a spreadsheet would run as a formula, gets a leading single
 * quote (OWASP's CSV injection advice); a number ("-1.5", "+3e5") is written as it is. */
int tb_csv_put_text(FILE *f, const char *field, int sep);
/* Whether tb_csv_put_text would prefix s. */
int tb_csv_formula_like(const char *s);

#endif
