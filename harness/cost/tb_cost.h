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
#include "tb_validate.h"

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

/* The hourly rate at which a cost of usd, priced at rate (USD per instance-hour), would
 * equal other_usd: rate x other_usd / usd. A cost is its rate over its throughput, so it
 * scales with the rate: for a target against the baseline (other_usd the baseline's
 * cost) it is the target's price up to which it stays cheaper, the price at which the
 * answer flips; for the baseline against a target, the baseline's price down to which
 * the target stays cheaper. NAN unless all three are positive and finite. */
double tb_cost_flip_rate(double rate, double usd, double other_usd);

/* The range of a price-performance base / usd when the baseline's true cost lies in
 * [base x base_lo, base x base_hi] and the candidate's in [usd x lo, usd x hi] (the factors
 * 1 - e and 1 + e of the model's error e, or a measurement's fastest and slowest
 * repetitions over its median; lo <= 1 <= hi). The two errors are taken as independent:
 * their logarithms add in quadrature, *plo = base / usd x exp(-hypot(ln base_lo, ln hi))
 * and *phi = base / usd x exp(hypot(ln base_hi, ln lo)). Both NAN unless every figure is
 * positive and finite and each range holds 1. */
void tb_cost_perf_range(double base, double base_lo, double base_hi, double usd, double lo,
                        double hi, double *plo, double *phi);

/* The factors of c's cost range over its cost (usd_lo / usd, usd_hi / usd), or 1 -+ its
 * model error when it has no cost at the chosen prices. */
struct tb_cost;
void tb_cost_range_factors(const struct tb_cost *c, double *lo, double *hi);

/* c's cost at another hourly rate (USD per instance-hour; its share of the instances
 * charged as at its own price); NAN unless positive. */
double tb_cost_at(const struct tb_cost *c, double rate);

/* The purchase models, TB_COST_NPURCHASE of them, in the order they stand in for
 * `purchase` (NULL: on-demand) when a target has no price under it: itself, then those
 * of the nearest commitment (on-demand and capacity blocks commit to nothing beyond the
 * hours bought; 1-year reserved and savings plans to a year; 3-year to three), the
 * interruptible spot price last. */
#define TB_COST_NPURCHASE 7
void tb_cost_purchase_order(const char *purchase, const char *out[TB_COST_NPURCHASE]);

/* The purchase model and region where instance types a and b both have a price: the
 * given ones (NULL: on-demand, us-east-1) when both have one there, else the nearest
 * purchase model (tb_cost_purchase_order) and, within it, the nearest region
 * (tb_cost_region_distance). Returns 0 with pa and pb their prices there and basis
 * "capacity-block in us-east-2", or 0 with pa->have and pb->have false and the reason in
 * basis; -1 with err (a type not in the catalogue, out of memory). With a == b: the
 * nearest price of a. */
int tb_cost_pair_basis(const struct tb_pricing *p, const char *a, const char *b,
                       const char *purchase, const char *region, struct tb_price_choice *pa,
                       struct tb_price_choice *pb, char *basis, size_t blen, char *err,
                       size_t errlen);

/* How near region b is to a (0 the same, 1 the same area as "us-east", 2 the same
 * geography as "us", 3 elsewhere): the order in which other regions' prices stand in. */
int tb_cost_region_distance(const char *a, const char *b);

/* Whether x is the host CPU's row, told by typed fields: results.csv's engine
 * "host-cpu" (our CPU engines, by the cpu executor or behind `trnbench serve`), the cpu
 * executor, or any row that lists accelerators_unused; on any host (a catalogued
 * instance with accelerators or not; t is not consulted). Only a file written before the
 * engine column is read by its device text ("trnbench serve (CPU engine"). Such a row is
 * priced at the machine it ran on when that has a price (the host CPU cannot be rented
 * apart), but it is the host's throughput of our CPU engines, not an instance's: it is
 * never ranked against other targets, never a target's cheapest, has no per-chip figure
 * and no price-performance; the report lists it in a section of its own. */
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
    const struct tb_validation *validation; /* the model's error per chip family and phase
                                               (tb_validate_error); NULL: modeled figures
                                               carry no range */
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
    const char *family;       /* static or borrowed: its chip's name ("Trainium2"), the
                                 model's error group; "" for the host */
    /* the comparison with the baseline, like for like: cmp is this target's price and
     * bcmp the baseline's under one purchase model in one region; the chosen ones when
     * both have a price there (cmp_chosen), else the nearest where both do (purchase
     * models in tb_cost_purchase_order, regions by tb_cost_region_distance) */
    struct tb_price_choice cmp, bcmp;
    bool cmp_have;      /* both priced somewhere comparable; else cmp_basis says why not */
    bool cmp_chosen;    /* cmp is the chosen purchase model and region */
    char cmp_basis[96]; /* "capacity-block in us-east-2", or why there is none */
    long cmp_age;       /* cmp's age in days, as age is c's; -1 undated or none */
    char cmp_flag[160]; /* cmp's flag, as flag is c's: a stand-in is flagged stale or
                           undated like the chosen price */
};

/* One priced throughput row. */
struct tb_cost {
    const struct tb_result *row;       /* borrowed from the results: the throughput row */
    const char *metric;                /* static (tb_vocab.h): usd_per_mtok_* or usd_per_kimage */
    bool images;                       /* per thousand images, not per million tokens */
    const struct tb_cost_price *price; /* borrowed from the tb_costs (tp) */
    double usd, usd_min, usd_max;      /* NAN without a price; min from the fastest repetition */
    double tokens_per_usd;             /* NAN without a price; images for an images row */
    char config[200];              /* run_id without target and instance count: the configuration */
    char workload[200];            /* config without the batch: what is compared across targets */
    long chips;                    /* chips of the run (chips_used, else instances x chips per
                                      instance); 0 unknown */
    double per_chip;               /* throughput per chip; NAN when chips is unknown */
    double ttft, tpot, per_user;   /* the run's latency rows (serving); NAN when absent */
    double usd_lo, usd_hi;         /* the cost's range: the model's error (usd x (1 -+ err)) for a
                                       modeled row, the repetitions (usd_min, usd_max) for a
                                       measured one; NAN without a price */
    double err;                    /* the model's error band for a modeled row (fraction of the
                                      throughput, tb_validate_error); 0 for measured or published */
    bool err_few;                  /* that band is borrowed: its family has few validation rows */
    char err_basis[256];           /* what the band is ("p90 of 41 H100 SXM5 rows"); "" without */
    double cmp_usd;                /* the cost at the comparison's price (price->cmp): usd itself
                                      when price->cmp_chosen */
    double base_usd;               /* the baseline's cost of the same configuration at the same
                                      price basis (price->bcmp) */
    double perf, perf_lo, perf_hi; /* price-performance base_usd / cmp_usd and its range from
                                      both costs' ranges (tb_cost_perf_range) */
    const struct tb_cost *twin;    /* a measured row's modeled twin: the model's row of the same
                                      target and configuration, or NULL */
    bool led;                      /* a modeled row of a (workload, target) that has a measured
                                      row: the measurement leads, this row is only its twin */
    bool sweep_point;              /* a serving batch beside the same target's "max" run */
    bool host_cpu;                 /* the host CPU's row on an instance with accelerators
                                      (tb_cost_is_host_cpu): priced, never ranked */
};

/* One workload's ranking: the cheapest target and the baseline's cheapest. */
struct tb_cost_rank {
    const char *workload;          /* borrowed from a cost */
    const char *metric;            /* static */
    const struct tb_cost *best;    /* cheapest priced row, or NULL (rows led by a
                                      measurement are not ranked: the measurement is) */
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
    struct tb_cost_price btp; /* the baseline's price (its ref the last footnote) under the
                                 chosen purchase model and region, like every candidate's;
                                 without one there (like_for_like false), each target's
                                 comparison finds its own basis (tb_cost_price.cmp) */
    bool like_for_like;       /* the baseline has a price where the candidates are priced */
    char basis[200];          /* "p5.48xlarge capacity-block in us-east-2": what the savings
                                 and price-performance compare to, where both are priced */
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

/* The cheapest row of target in (workload, metric) that is compared (not the host CPU,
 * not led by a measurement, priced at the chosen prices or the comparison's; within the
 * latency limits when ok); NULL when there is none. */
const struct tb_cost *tb_costs_target_best(const struct tb_costs *cs, const char *workload,
                                           const char *metric, const char *target, bool ok);
/* target's price under purchase in the chosen region, else in the nearest region that
 * has one (tb_cost_region_distance); out->have false (with the chosen region's reason)
 * when none does. Returns 0, or -1 (target not catalogued, out of memory). */
int tb_costs_nearest_price(const struct tb_costs *cs, const char *target, const char *purchase,
                           struct tb_price_choice *out, char *err, size_t errlen);
/* The baseline's cheapest ranking row of (workload, metric) at the price rate (USD per
 * instance-hour; within the limits when ok): its cost at that rate in *usd, its range
 * in *lo and *hi. NULL (and NANs) when the baseline has no such row. */
const struct tb_cost *tb_costs_base_at(const struct tb_costs *cs, const char *workload,
                                       const char *metric, double rate, bool ok, double *usd,
                                       double *lo, double *hi);
/* One target against the baseline in one workload, like for like: the target's cheapest
 * compared row (tb_costs_target_best) and the baseline's cheapest, both at the target's
 * comparison price (its cmp and bcmp). */
struct tb_cost_versus {
    const struct tb_cost *c; /* the target's row, or NULL */
    const struct tb_cost *b; /* the baseline's, or NULL */
    double usd, lo, hi;      /* the target's cost at the comparison's price and its range
                                (its cost at the chosen prices when it has no comparison) */
    double base;             /* the baseline's cost there */
    double perf, plo, phi;   /* price-performance base / usd and its range
                                (tb_cost_perf_range; no range for the baseline itself) */
};
void tb_costs_versus(const struct tb_costs *cs, const char *workload, const char *metric,
                     const char *target, bool ok, struct tb_cost_versus *v);

/* Whether w's comparisons hold its configurations to the latency limits: a serving
 * workload with a configuration (not the host CPU's, priced or not) that meets them. */
bool tb_costs_limits_apply(const struct tb_costs *cs, const struct tb_cost_rank *w);

/* Whether c meets the latency limits of cs (serving rows; others always do). */
bool tb_costs_meets(const struct tb_costs *cs, const struct tb_cost *c);

/* ---- the figure every table, chart and ranking shows ----
 * A cost is shown at the chosen price (purchase model and region) where its target has
 * one, else at its nearest comparable price: the price it is compared with the baseline
 * at (price->cmp, tb_cost_pair_basis), labelled as such. So a target is never "no price"
 * in one place and a figure in another. */

/* c's cost at the chosen price, else at its comparison price; NAN when it has neither. */
double tb_cost_shown(const struct tb_cost *c);
/* Whether c is shown at a stand-in: not priced at the chosen price, but at its nearest
 * comparable one (price->cmp, named by price->cmp_basis). */
bool tb_cost_stand_in(const struct tb_cost *c);
/* The price c is shown at (&price->c or &price->cmp), or NULL when it has none. */
const struct tb_price_choice *tb_cost_shown_price(const struct tb_cost *c);
/* The spread of c's repetitions at its shown price (the fastest repetition the cheapest);
 * NAN when it has no spread or no price. */
void tb_cost_shown_spread(const struct tb_cost *c, double *min, double *max);

/* The row of target that every table and chart shows for workload w: the one the
 * summary compares, its cheapest compared row (tb_costs_target_best) within the latency
 * limits where w's comparisons hold them (tb_costs_limits_apply). NULL when target has
 * no such row. */
const struct tb_cost *tb_costs_shown_row(const struct tb_costs *cs, const struct tb_cost_rank *w,
                                         const char *target);

/* Training on cs->o.train_tokens tokens at c's throughput, at its shown price: by the
 * hour (on-demand, reserved, savings plans, spot), or as the Capacity Blocks it must
 * buy (tb_pricing_cblock: whole days, whole instances, paid up front). */
struct tb_cost_train {
    double days;                 /* wall-clock days of the job; NAN unknown */
    double usd;                  /* what it costs; NAN without a price */
    bool cblock;                 /* priced as Capacity Blocks: cb says what is bought */
    struct tb_pricing_cblock cb; /* days and blocks bought, the share used */
    double instances;            /* whole instances bought (cblock), else the share charged */
};
void tb_costs_train(const struct tb_costs *cs, const struct tb_cost *c, struct tb_cost_train *out);
/* The same at price p (another purchase model or region of c's target, or NULL: none):
 * the baseline's job bought the way a candidate's is, like for like. */
void tb_costs_train_at(const struct tb_costs *cs, const struct tb_cost *c,
                       const struct tb_price_choice *p, struct tb_cost_train *out);

/* Instance-hours x is charged per hour at price t: its share of the instances when it
 * used part of their chips (tb_cost_instance_share). */
double tb_cost_charged(const struct tb_result *x, const struct tb_cost_price *t);
/* The same in words: "1 of 8 GPUs" (a part of one instance), "12 of 2 x 8 chips", or
 * the instance count ("1", "4") when x is charged whole instances. */
void tb_cost_charged_text(const struct tb_result *x, const struct tb_cost_price *t, char *buf,
                          size_t len);

#endif
