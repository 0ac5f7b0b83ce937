/*
 * harness/base/tb_range.h: the numeric fields of an input format as data, and size
 * products computed with overflow checks.
 *
 * Each format (scenario tables and suite predict lines, suite run lines, model files,
 * assessment inputs, the pricing tables) keeps one table of its numeric fields: the
 * field's name, the smallest and largest value it takes and whether it is a whole
 * number. Its parser checks every such field through the table, so a number out of
 * range is refused where it is read ("file: line N: field 'tp': expected an integer in
 * [1, 65536], got '1099511627776'"), not later where a product of it overflows or the
 * model refuses it. README.md ("Input ranges") lists the tables; tests/unit/range.c
 * checks that the README and the tables agree.
 *
 * Ownership: the tables are static data; nothing here allocates.
 */
#ifndef TB_RANGE_H
#define TB_RANGE_H

#include <stdbool.h>
#include <stddef.h>

struct tb_range {
    const char *field; /* column or key name; NULL ends a table */
    double lo, hi;     /* inclusive bounds */
    bool integer;      /* a whole number in decimal digits ("1e9" is refused) */
    const char *what;  /* what it counts, with its unit ("tokens", "ms") */
};

/* The entry of table (ended by a NULL field) for field, or NULL. */
const struct tb_range *tb_range_find(const struct tb_range *table, const char *field);

/* Parse all of v as r's number: 0 with *out, or -1 with "field 'F': expected an integer
 * in [lo, hi], got 'v'" (or "a number in") in err. The caller prefixes file and line. */
int tb_range_parse(const struct tb_range *r, const char *v, double *out, char *err, size_t errlen);
/* The same for an integer field (r->integer), into a long. */
int tb_range_parse_long(const struct tb_range *r, const char *v, long *out, char *err,
                        size_t errlen);

/* Look field up in table (it must be there: a programmer error otherwise) and parse v. */
int tb_range_field(const struct tb_range *table, const char *field, const char *v, double *out,
                   char *err, size_t errlen);
int tb_range_field_long(const struct tb_range *table, const char *field, const char *v, long *out,
                        char *err, size_t errlen);

/* Every non-empty field of t named in table within its range: 0, or -1 with "path: line N:
 * field 'F': expected ..." in err. Whether a field may be empty is the table's reader's
 * rule (a status column, say), checked there. */
struct tb_csv_table;
int tb_range_check_csv(const struct tb_csv_table *t, const struct tb_range *table, char *err,
                       size_t errlen);

/* *out = a * b: 0, or -1 when the product overflows a long (then *out is unchanged). */
int tb_mul_long(long a, long b, long *out);

/* One table as the README's Markdown rows ("| `tp` | integer | 1 | 65536 | ... |\n"),
 * into buf (len bytes, NUL-terminated, cut when short). Returns the length written. */
size_t tb_range_markdown(const struct tb_range *table, char *buf, size_t len);

#endif
