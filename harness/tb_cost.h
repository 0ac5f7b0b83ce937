/*
 * harness/tb_cost.h: the arithmetic behind the report's cost figures, kept apart from
 * the report so it is tested on its own: the age of a price, the cost and time to train
 * on N tokens, whether a serving configuration meets latency limits, price-performance
 * against a baseline. Every function is pure; a figure that cannot be computed is NAN.
 */
#ifndef TB_COST_H
#define TB_COST_H

#include <stdbool.h>

/* Days since 1970-01-01 of an ISO date "YYYY", "YYYY-MM" or "YYYY-MM-DD" (anything after
 * the date, a time say, is ignored): a year or a month stands for its first day, the
 * oldest the price can be. Returns 0, or -1 when s is not such a date. */
int tb_cost_days(const char *s, long *days);

/* Age in days of a price dated as_of at the time now (both as above); -1 when either
 * is undated or not a date. */
long tb_cost_age_days(const char *as_of, const char *now);

/* USD per million tokens (per thousand images with per = 1e3): usd_per_hour /
 * (per_s * 3600) * per; NAN unless both are positive and finite. */
double tb_cost_usd_per(double usd_per_hour, double per_s, double per);

/* Instance-hours charged per hour of a run on `instances` instances of
 * chips_per_instance chips each that used chips_used of those chips (results.csv's
 * chips_used): chips_used / chips_per_instance, its share (one GPU of a p5.48xlarge's 8:
 * 0.125); `instances` when chips_used is 0 (not recorded: all of them) or
 * chips_per_instance is 0 (a machine not in the catalogue: its whole price). */
double tb_cost_instance_share(long instances, long chips_used, long chips_per_instance);

/* Training on `tokens` tokens at tokens_per_s with the run's whole hourly price: the
 * days it takes and what it costs. NAN unless the inputs are positive and finite. */
double tb_cost_train_days(double tokens, double tokens_per_s);
double tb_cost_train_usd(double tokens, double tokens_per_s, double usd_per_hour);

/* Whether a serving configuration with ttft_ms and tpot_ms meets the limits (a limit
 * <= 0 or NAN is no limit; a latency that is NAN fails a limit it is held to). */
bool tb_cost_meets(double ttft_ms, double tpot_ms, double ttft_limit_ms, double tpot_limit_ms);

/* Price-performance against a baseline: baseline_usd / usd (2 = half the baseline's cost
 * for the same work); NAN unless both are positive and finite. */
double tb_cost_price_perf(double baseline_usd, double usd);

#endif
