/* harness/base/tb_stats.c: see tb_stats.h. */
#include "tb_stats.h"

#include "tb_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A sorted copy of x, or NULL with a message. */
static double *sorted_copy(const double *x, size_t n, char *err, size_t errlen)
{
    double *c;

    if (n == 0) {
        tb_err(err, errlen, "no samples");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            tb_err(err, errlen, "sample %zu is not a finite number", i + 1);
            return NULL;
        }
    }
    c = tb_alloc_array(n, sizeof *c);
    if (!c) {
        tb_err(err, errlen, "out of memory sorting %zu samples", n);
        return NULL;
    }
    memcpy(c, x, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    return c;
}

double tb_stats_percentile_sorted(const double *sorted, size_t n, double p)
{
    double h = (double)(n - 1) * p / 100.0;
    size_t lo = (size_t)floor(h);

    if (lo + 1 >= n)
        return sorted[n - 1];
    return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

int tb_stats_compute(struct tb_stats *s, const double *x, size_t n, char *err, size_t errlen)
{
    double *c = NULL, sum = 0.0, ss = 0.0;
    int rc = -1;

    memset(s, 0, sizeof *s);
    c = sorted_copy(x, n, err, errlen);
    if (!c)
        goto out;
    /* two passes over the sorted copy: the mean first, then squared deviations from it,
     * which stays accurate when the samples share a large offset */
    for (size_t i = 0; i < n; i++)
        sum += c[i];
    s->mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (c[i] - s->mean) * (c[i] - s->mean);
    s->n = n;
    s->min = c[0];
    s->max = c[n - 1];
    s->median = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    s->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    rc = 0;
out:
    free(c);
    return rc;
}

int tb_stats_percentiles(const double *x, size_t n, const double *p, size_t np, double *out,
                         char *err, size_t errlen)
{
    double *c = NULL;
    int rc = -1;

    for (size_t i = 0; i < np; i++) {
        if (!(p[i] >= 0.0 && p[i] <= 100.0)) {
            tb_err(err, errlen, "percentile %g is outside [0, 100]", p[i]);
            goto out;
        }
    }
    c = sorted_copy(x, n, err, errlen);
    if (!c)
        goto out;
    for (size_t i = 0; i < np; i++)
        out[i] = tb_stats_percentile_sorted(c, n, p[i]);
    rc = 0;
out:
    free(c);
    return rc;
}
