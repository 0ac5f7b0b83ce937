/* tests/unit/stats.c: summaries and percentiles on data sets with answers worked out
 * by hand (odd and even counts, one sample, a large shared offset), and the refusals. */
#include "tb_stats.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <string.h>

int main(void)
{
    struct tb_stats s;
    char err[256];
    double out[5];

    plan_lazy();

    /* odd n: 4 1 3 2 5. mean 3; deviations -2..2 squared sum 10; sample variance 10/4 */
    {
        const double x[] = {4, 1, 3, 2, 5};
        IS_INT(0, tb_stats_compute(&s, x, 5, err, sizeof err), "odd n summarises");
        IS_INT(5, (long long)s.n, "odd: n");
        IS_DOUBLE(1.0, s.min, 0, "odd: min");
        IS_DOUBLE(5.0, s.max, 0, "odd: max");
        IS_DOUBLE(3.0, s.mean, 1e-15, "odd: mean");
        IS_DOUBLE(3.0, s.median, 0, "odd: median is the middle sample");
        IS_DOUBLE(1.5811388300841898, s.stddev, 1e-15, "odd: stddev sqrt(10/4)");
        IS_DOUBLE(4.0, x[0], 0, "the input is left in its order");
    }
    /* even n: 7 1 3 5. mean 4; squares 9+9+1+1 = 20; variance 20/3; median (3+5)/2 */
    {
        const double x[] = {7, 1, 3, 5};
        IS_INT(0, tb_stats_compute(&s, x, 4, err, sizeof err), "even n summarises");
        IS_DOUBLE(4.0, s.median, 0, "even: median is the mean of the middle two");
        IS_DOUBLE(4.0, s.mean, 1e-15, "even: mean");
        IS_DOUBLE(2.5819888974716112, s.stddev, 1e-15, "even: stddev sqrt(20/3)");
        IS_DOUBLE(1.0, s.min, 0, "even: min");
        IS_DOUBLE(7.0, s.max, 0, "even: max");
    }
    /* one sample */
    {
        const double x[] = {2.5};
        IS_INT(0, tb_stats_compute(&s, x, 1, err, sizeof err), "one sample summarises");
        IS_INT(1, (long long)s.n, "single: n");
        IS_DOUBLE(2.5, s.min, 0, "single: min");
        IS_DOUBLE(2.5, s.max, 0, "single: max");
        IS_DOUBLE(2.5, s.median, 0, "single: median");
        IS_DOUBLE(2.5, s.mean, 0, "single: mean");
        IS_DOUBLE(0.0, s.stddev, 0, "single: stddev 0 (no spread observable)");
    }
    /* a large offset: 1e9 + {4, 7, 13, 16}; mean 1e9+10, squares 36+9+9+36 = 90, /3 */
    {
        const double x[] = {1e9 + 16, 1e9 + 4, 1e9 + 13, 1e9 + 7};
        IS_INT(0, tb_stats_compute(&s, x, 4, err, sizeof err), "offset data summarises");
        IS_DOUBLE(1e9 + 10, s.mean, 1e-6, "offset: mean");
        IS_DOUBLE(sqrt(30.0), s.stddev, 1e-6, "offset: stddev sqrt(30) survives the offset");
        IS_DOUBLE(1e9 + 10, s.median, 0, "offset: median (1e9+7 + 1e9+13)/2");
    }
    /* percentiles of 1..10 (shuffled): h = 9 p / 100; p90 = 9 + 0.1 * (10 - 9) */
    {
        const double x[] = {7, 3, 10, 1, 9, 2, 8, 4, 6, 5};
        const double p[] = {0, 50, 90, 100, 25};
        IS_INT(0, tb_stats_percentiles(x, 10, p, 5, out, err, sizeof err), "percentiles");
        IS_DOUBLE(1.0, out[0], 0, "p0 is the minimum");
        IS_DOUBLE(5.5, out[1], 1e-15, "p50 is the median");
        IS_DOUBLE(9.1, out[2], 1e-12, "p90 interpolates 9.1");
        IS_DOUBLE(10.0, out[3], 0, "p100 is the maximum");
        IS_DOUBLE(3.25, out[4], 1e-15, "p25 interpolates 3.25");
        IS_DOUBLE(7.0, x[0], 0, "percentiles leave the input in its order");
    }
    {
        const double sorted[] = {10, 20};
        IS_DOUBLE(12.5, tb_stats_percentile_sorted(sorted, 2, 25), 1e-12, "p25 of {10, 20}");
        IS_DOUBLE(10.0, tb_stats_percentile_sorted(sorted, 1, 80), 0, "any p of one sample");
    }

    /* refusals */
    {
        const double x[] = {1, NAN, 3};
        const double p[] = {101};
        IS_INT(-1, tb_stats_compute(&s, x, 0, err, sizeof err), "no samples refused");
        IS_STRING("no samples", err, "no samples: message");
        IS_INT(-1, tb_stats_compute(&s, x, 3, err, sizeof err), "a NaN sample is refused");
        IS_STRING("sample 2 is not a finite number", err, "NaN: message names the sample");
        IS_INT(0, (long long)s.n, "a refused summary is zeroed");
        IS_INT(-1, tb_stats_percentiles(x, 1, p, 1, out, err, sizeof err), "p 101 refused");
        OK(strstr(err, "101") != NULL, "p 101: message names it: %s", err);
    }
    return 0;
}
