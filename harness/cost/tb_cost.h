/*
 * harness/cost/tb_cost.h: the cost stage, between the results (tb_results.h) and the report
 * (tb_report.h): results rows and price tables in, a struct tb_costs out.
 *
 * First the arithmetic, kept apart so it is tested on its own: the age of a price, the
 * cost and time to train on N tokens, whether a serving configuration meets latency
 * limits, price-performance against a baseline. These functions are pure; a figure that
 * cannot be computed is NAN.
 *
 * Then the stage: tb_costs_build prices every throughput row of the results (each
 * metric whose tb_vocab.h entry names a cost metric: decode_tokens_per_s ->
 * usd_per_mtok_out, images_per_s -> usd_per_kimage, ...) at its target's price, and
 * ranks the targets per workload (the same model, phase, shape and precision at any
 * batch or instance count): the cheapest, the baseline's cost of the same configuration
 * (priced like the candidates: the same purchase model and region) and price-performance
 * against it, and the cheapest within TTFT/TPOT
 * limits. A missing price is a reason, never a guess. The report only reads the table;
 * cost.csv is written from it here (tb_costs_write_csv).
 *
 * Ownership: a struct tb_costs owns its arrays; it borrows the results, the pricing and
 * the options' strings, which must outlive it. tb_costs_release frees what it owns.
 */
#ifndef TB_COST_H
#define TB_COST_H

#include "tb_pricing.h"
#include "tb_results.h"

#include <stdbool.h>
#include <stddef.h>

/* Days since 1970-01-01 of an ISO date "YYYY", "YYYY-MM" or "YYYY-MM-DD" (anything after
 * the date, a time say, is ignored): a year or a month stands for its first day, the
 * oldest the price can be. Returns 0, or -1 when s is not such a date. */
int tb_cost_days(const char *s, long *days);

/* Age in days of a price dated as_of at the time now (both as above); -1 when either
 * is undated or not a date. */
long tb_cost_age_days(const char *as_of, const char *now);

/* Whether v is a figure to use: positive and finite (a price, a cost, a throughput). */
bool tb_cost_positive(double v);

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

/* Whether x is the host CPU's row on a target whose instances have accelerators (t's
 * chips > 0): the cpu executor's, our CPU engine behind `trnbench serve`, or any row
 * that lists accelerators_unused. Such a row is priced at the instance it ran on (the
 * host CPU cannot be rented apart), but it is the host's throughput, not the
 * instance's: it is never ranked against other targets, never a target's cheapest,
 * has no per-chip figure and no price-performance. */
struct tb_cost_price;
bool tb_cost_is_host_cpu(const struct tb_result *x, const struct tb_cost_price *t);

/* ---- the cost stage ---- */

struct tb_cost_opts {
    const char *instance;      /* the host's EC2 instance type, or NULL */
    const char *region;        /* NULL: us-east-1 */
    const char *purchase;      /* NULL: on-demand */
    double usd_per_hour;       /* the host's price as the user gives it; NAN: none */
    const char *baseline;      /* price-performance baseline instance type (not NULL),
                                  priced as the candidates (purchase, region) */
    double max_price_age_days; /* older prices are flagged */
    double ttft_limit_ms;      /* latency limits of the serving ranking (<= 0: none) */
    double tpot_limit_ms;
    double train_tokens; /* tokens of cost.csv's time-and-cost-to-train columns */
    const char *now;     /* the time of the report, ISO 8601 UTC: the prices' age */
};

/* The price of one target, as the report cites it. */
struct tb_cost_price {
    const char *target;       /* borrowed: from a results table, or opts.baseline */
    struct tb_price_choice c; /* the price, or why there is none */
    int ref;                  /* footnote number in the report, 1.., in order of first use */
    long chips;               /* chips per instance (0: the host, not a catalogued instance) */
    const char *chip_word;    /* static: what its chips are called, "GPUs" (NVIDIA) or "chips" */
    long age;                 /* days from the price's date to opts.now; -1 undated */
    char flag[160];           /* "" or why the price needs a second look (stale, undated) */
};

/* One priced throughput row. */
struct tb_cost {
    const struct tb_result *row;       /* borrowed from the results: the throughput row */
    const char *metric;                /* static (tb_vocab.h): usd_per_mtok_* or usd_per_kimage */
    bool images;                       /* per thousand images, not per million tokens */
    const struct tb_cost_price *price; /* borrowed from the tb_costs (tp) */
    double usd, usd_min, usd_max;      /* NAN without a price; min from the fastest repetition */
    double tokens_per_usd;             /* NAN without a price; images for an images row */
    char config[200];            /* run_id without target and instance count: the configuration */
    char workload[200];          /* config without the batch: what is compared across targets */
    long chips;                  /* chips of the run (chips_used, else instances x chips per
                                    instance); 0 unknown */
    double per_chip;             /* throughput per chip; NAN when chips is unknown */
    double ttft, tpot, per_user; /* the run's latency rows (serving); NAN when absent */
    double base_usd;             /* the baseline's cost for the same configuration (btp) */
    double perf;                 /* price-performance: base_usd / usd */
    bool sweep_point;            /* a serving batch beside the same target's "max" run */
    bool host_cpu;               /* the host CPU's row on an instance with accelerators
                                    (tb_cost_is_host_cpu): priced, never ranked */
};

/* One workload's ranking: the cheapest target and the baseline's cheapest. */
struct tb_cost_rank {
    const char *workload;          /* borrowed from a cost */
    const char *metric;            /* static */
    const struct tb_cost *best;    /* cheapest priced row, or NULL */
    const struct tb_cost *base;    /* cheapest baseline row (at btp), or NULL */
    double base_usd;               /* its cost; NAN without one */
    const struct tb_cost *best_ok; /* the same within the latency limits (serving) */
    const struct tb_cost *base_ok;
    double base_ok_usd;
    bool serve; /* a serving workload: ranked within the latency limits too */
};

struct tb_costs {
    const struct tb_results *res;     /* borrowed, must outlive */
    const struct tb_pricing *pricing; /* borrowed, must outlive */
    struct tb_cost_opts o;            /* a copy; its strings borrowed */
    struct tb_price_choice host;      /* the host's price */
    struct tb_cost_price *tp;         /* owned: ntp distinct targets, in order of first use */
    size_t ntp;
    struct tb_cost_price btp; /* the baseline's price (its ref the last footnote): the
                                 chosen purchase model and region, like every candidate's,
                                 else its on-demand price there (like_for_like false) */
    bool like_for_like;       /* the baseline priced as the candidates are */
    char basis[200];          /* "p5.48xlarge capacity-block in us-east-2", or the fallback
                                 said: what the savings and price-performance compare to */
    struct tb_cost *costs;    /* owned: ncosts, one per throughput row, in results order */
    size_t ncosts;
    size_t npriced;             /* costs with a price */
    int nrefs;                  /* footnotes numbered: every price of tp, then btp */
    struct tb_cost_rank *ranks; /* owned: nranks workloads, in order of first appearance;
                                   the serving total-token cost is not ranked */
    size_t nranks;
};

/* The checks of o that need no results: region and purchase model known
 * (tb_pricing_check_choice), the host's price (an unknown --instance; *host gets it),
 * the baseline an instance type of the catalogue. Returns 0, or -1 with the message
 * (an input error). tb_costs_build runs it first; `trnbench report --check` alone. */
int tb_cost_opts_check(const struct tb_pricing *pricing, const struct tb_cost_opts *o,
                       struct tb_price_choice *host, char *err, size_t errlen);

/* Price the throughput rows of res. Checks first, in this order: region and purchase
 * model known (tb_pricing_check_choice), the host's price (an unknown --instance), the
 * baseline an instance type of the catalogue, every chips_used within its instances'
 * chips ("FILE: line N: field 'chips_used': more chips than 1 x p5.48xlarge has (8):
 * '9'"). Returns 0, or -1 with the message in err and cs left empty; every failure
 * but "out of memory" is an input error. */
int tb_costs_build(struct tb_costs *cs, const struct tb_results *res,
                   const struct tb_pricing *pricing, const struct tb_cost_opts *o, char *err,
                   size_t errlen);
void tb_costs_release(struct tb_costs *cs);

/* Write cost.csv: one row per cost, with the price row used. Returns 0 or -1. */
int tb_costs_write_csv(const struct tb_costs *cs, const char *path, char *err, size_t errlen);

/* The ranking of c's workload, or NULL (the serving total-token cost has none). */
const struct tb_cost_rank *tb_costs_rank_of(const struct tb_costs *cs, const struct tb_cost *c);
/* Whether c is a row of this workload and cost metric. */
bool tb_cost_of_workload(const struct tb_cost *c, const char *workload, const char *metric);
/* Whether costs[i] is the first row of its target among the rows of (workload, metric):
 * walking i over the costs visits each target of a workload once. */
bool tb_costs_first_of_target(const struct tb_costs *cs, size_t i, const char *workload,
                              const char *metric);
/* Whether c is the cheapest priced row of its (workload, target) pair (the by-target
 * charts); the serving total-token cost, which ranks like the output cost, never is. */
bool tb_costs_cheapest_of_target(const struct tb_costs *cs, const struct tb_cost *c);

/* Instance-hours x is charged per hour at price t: its share of the instances when it
 * used part of their chips (tb_cost_instance_share). */
double tb_cost_charged(const struct tb_result *x, const struct tb_cost_price *t);
/* The same in words: "1 of 8 GPUs" (a part of one instance), "12 of 2 x 8 chips", or
 * the instance count ("1", "4") when x is charged whole instances. */
void tb_cost_charged_text(const struct tb_result *x, const struct tb_cost_price *t, char *buf,
                          size_t len);

#endif
