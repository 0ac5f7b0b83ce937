/* tests/tap/float.c: see float.h. */
#include "tests/tap/float.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdlib.h>

struct tap_cmp tap_compare(const float *got, const double *exp, size_t n)
{
    struct tap_cmp c = {0, 0, 0};
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - exp[i]);
        c.max_abs = d > c.max_abs ? d : c.max_abs;
        c.max_ref = fabs(exp[i]) > c.max_ref ? fabs(exp[i]) : c.max_ref;
        num += d * d;
        den += exp[i] * exp[i];
    }
    c.nmse = den > 0 ? num / den : INFINITY;
    return c;
}

struct tap_cmp tap_compare_f(const float *got, const float *exp, size_t n)
{
    double *e = malloc((n ? n : 1) * sizeof *e);
    struct tap_cmp c;
    if (!e)
        bail("out of memory");
    for (size_t i = 0; i < n; i++)
        e[i] = exp[i];
    c = tap_compare(got, e, n);
    free(e);
    return c;
}

bool tap_all_finite(const float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(p[i]))
            return false;
    return true;
}
