/* harness/base/tb_range.c: see tb_range.h. */
#include "tb_range.h"

#include "tb_csv.h"
#include "tb_util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const struct tb_range *tb_range_find(const struct tb_range *table, const char *field)
{
    for (const struct tb_range *r = table; r && r->field; r++)
        if (!strcmp(r->field, field))
            return r;
    return NULL;
}

/* A bound as the messages and the README write it: integers in digits, others %g. */
static void bound(char *buf, size_t len, double x, bool integer)
{
    if (integer || (x == floor(x) && fabs(x) < 1e7))
        snprintf(buf, len, "%.0f", x);
    else {
        /* %g's exponent without its '+' and leading zeros: 1e9, 1e-300 */
        char g[32], *e, *o = buf;
        snprintf(g, sizeof g, "%g", x);
        e = strchr(g, 'e');
        if (!e || len < sizeof g) {
            snprintf(buf, len, "%s", g);
            return;
        }
        for (const char *c = g; c <= e; c++)
            *o++ = *c;
        e++;
        if (*e == '-')
            *o++ = *e;
        if (*e == '-' || *e == '+')
            e++;
        while (*e == '0' && e[1])
            e++;
        snprintf(o, len - (size_t)(o - buf), "%s", e);
    }
}

int tb_range_parse(const struct tb_range *r, const char *v, double *out, char *err, size_t errlen)
{
    char lo[32], hi[32];
    if (r->integer) {
        long x;
        if (tb_parse_long(v, (long)r->lo, (long)r->hi, &x) == 0) {
            *out = (double)x;
            return 0;
        }
    } else if (tb_parse_double(v, r->lo, r->hi, out) == 0) {
        return 0;
    }
    bound(lo, sizeof lo, r->lo, r->integer);
    bound(hi, sizeof hi, r->hi, r->integer);
    return tb_err(err, errlen, "field '%s': expected %s in [%s, %s] (%s), got '%.64s'", r->field,
                  r->integer ? "an integer" : "a number", lo, hi, r->what, v ? v : "");
}

int tb_range_parse_long(const struct tb_range *r, const char *v, long *out, char *err,
                        size_t errlen)
{
    double x;
    TB_ASSERT(r->integer && r->hi <= (double)LONG_MAX / 2);
    if (tb_range_parse(r, v, &x, err, errlen) != 0)
        return -1;
    *out = (long)x;
    return 0;
}

int tb_range_field(const struct tb_range *table, const char *field, const char *v, double *out,
                   char *err, size_t errlen)
{
    const struct tb_range *r = tb_range_find(table, field);
    if (!r) /* a field missing from its format's table: the program's error */
        tb_assert_fail("field in its range table", __FILE__, __LINE__);
    return r ? tb_range_parse(r, v, out, err, errlen) : -1;
}

int tb_range_field_long(const struct tb_range *table, const char *field, const char *v, long *out,
                        char *err, size_t errlen)
{
    const struct tb_range *r = tb_range_find(table, field);
    if (!r) /* a field missing from its format's table: the program's error */
        tb_assert_fail("field in its range table", __FILE__, __LINE__);
    return r ? tb_range_parse_long(r, v, out, err, errlen) : -1;
}

int tb_mul_long(long a, long b, long *out)
{
    long p;
    if (__builtin_mul_overflow(a, b, &p))
        return -1;
    *out = p;
    return 0;
}

size_t tb_range_markdown(const struct tb_range *table, char *buf, size_t len)
{
    size_t n = 0;
    if (len)
        buf[0] = '\0';
    for (const struct tb_range *r = table; r && r->field && n < len; r++) {
        char lo[32], hi[32];
        int k;
        bound(lo, sizeof lo, r->lo, r->integer);
        bound(hi, sizeof hi, r->hi, r->integer);
        k = snprintf(buf + n, len - n, "| `%s` | %s | %s | %s | %s |\n", r->field,
                     r->integer ? "integer" : "number", lo, hi, r->what);
        if (k < 0)
            break;
        n += (size_t)k < len - n ? (size_t)k : len - n - 1;
    }
    return n;
}

int tb_range_check_csv(const struct tb_csv_table *t, const struct tb_range *table, char *err,
                       size_t errlen)
{
    char why[256];
    double x;
    for (size_t r = 0; r < t->nrows; r++)
        for (const struct tb_range *g = table; g->field; g++) {
            const char *v = tb_csv_field(t, r, g->field);
            if (*v && tb_range_parse(g, v, &x, why, sizeof why) != 0)
                return tb_err(err, errlen, "%s: line %ld: %s", t->path, t->lines[r], why);
        }
    return 0;
}
