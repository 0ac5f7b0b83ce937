/*
 * harness/base/tb_stats.h: summary statistics of repeated measurements (STREAM and
 * llama-bench report the same: n, min, max, mean, median, spread).
 *
 * The samples are never reordered: functions that need order sort their own copy.
 * Percentiles use linear interpolation between closest ranks (the "type 7" rule of
 * Hyndman and Fan, 1996, which R and NumPy use by default): the p-th percentile of
 * sorted x[0..n-1] is x[h] interpolated at h = (n - 1) * p / 100.
 */
#ifndef TB_STATS_H
#define TB_STATS_H

#include <stddef.h>

struct tb_stats {
    size_t n;      /* samples */
    double min;    /* smallest */
    double max;    /* largest */
    double mean;   /* arithmetic mean */
    double median; /* middle sample; mean of the two middle ones when n is even */
    double stddev; /* sample standard deviation (n - 1 denominator); 0 when n == 1 */
};

/* Summarise x[0..n-1] into *s. Fails (-1, message in err) when n is 0, a sample is
 * not finite, or memory for the sorted copy cannot be had; *s is then zeroed. */
int tb_stats_compute(struct tb_stats *s, const double *x, size_t n, char *err, size_t errlen);

/* The p-th percentiles (each p[i] in [0, 100]) of x[0..n-1] into out[0..np-1]. Fails
 * like tb_stats_compute, or when a p is outside [0, 100]. */
int tb_stats_percentiles(const double *x, size_t n, const double *p, size_t np, double *out,
                         char *err, size_t errlen);

/* The p-th percentile of already sorted (ascending) x[0..n-1], n >= 1, p in [0, 100].
 * No allocation. */
double tb_stats_percentile_sorted(const double *sorted, size_t n, double p);

#endif
