/*
 * harness/report/tb_assess.h: the migration assessment. A team describes its workloads in
 * an assessment file (CSV, format in reports/examples/README.md): model, phase, load,
 * latency targets, the instance type it runs on now and how it buys it, and what moving
 * would cost in engineering time. For every workload and every candidate instance type,
 * the assessment sizes what carries the load (performance model, tb_model.h) at the
 * smallest layout that holds the model (1, 2, 4, ... 64 instances, never fewer):
 *   - serving: an always-on fleet of replicas from Little's law (requests in flight =
 *     request rate x end-to-end latency, over the requests one replica holds within
 *     the TTFT/TPOT targets), and at least the token throughput, saying which bound;
 *   - training: cluster-hours (tokens a month / the cluster's tokens/s), paid by the
 *     hour or, when cheaper for those hours, as reserved clusters for the month;
 *   - image generation: an always-on fleet for the images per second;
 * prices it as AWS sells it (tb_pricing.h): an always-on fleet (serving, images) at
 * on-demand, reserved or savings-plan prices only (Capacity Blocks end; spot only where
 * the file keeps a share of the fleet on on-demand, spot_reserve), a training job also
 * by the hour or as Capacity Blocks of whole days (tb_pricing_cblock). Each candidate is
 * compared with what the team pays now (its purchase model and region) and, apart, like
 * for like (the current fleet bought as the candidate is; where the current instance has
 * no such price, its on-demand price, said so): monthly cost, savings, break-even on the
 * engineering cost, the saving's sensitivity to prices (+-20%) and to the model's
 * validation error for the chip family, and the risks to check before moving
 * (pricing/risks.csv). The current instance is also priced bought the other ways it is
 * sold (rebuy rows). One verdict per workload weighs the three: keep and buy it as now,
 * keep and buy it differently (said first when that is cheaper than any move), or move.
 * Where a move's saving rests on a weak price (prices.csv status secondary, tb_pricing.h),
 * the verdict names it and the price at which the saving flips (tb_cost_flip_rate).
 * A candidate without a price for the purchase model in the region, or that cannot hold
 * the model, is listed with the reason.
 *
 * tb_assess.c computes; harness/report/assess_doc.c writes the results as
 * CSV and, through tb_doc, as Markdown and HTML.
 *
 * Ownership: a struct tb_assessment owns its rows and tables; release frees them.
 */
#ifndef TB_ASSESS_H
#define TB_ASSESS_H

#include "tb_range.h"
#include "tb_csv.h"
#include "tb_model.h"
#include "tb_pricing.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Decision thresholds from practice: inputs with defaults, never hidden constants. */
struct tb_assess_opts {
    double min_monthly_usd; /* migration rarely pays below this spend (default 10000) */
    double claim_low;       /* savings claims to test: low end (default 0.30) */
    double claim_high;      /* and high end (default 0.50) */
    double price_swing;     /* price sensitivity, fraction (default 0.20) */
    double hours_per_month; /* 730 */
    const char *validation; /* published.csv for the model's error per family (NULL: the
                               data folder's reports/validation/published.csv) */
};

void tb_assess_opts_init(struct tb_assess_opts *o);

/* ---- the arithmetic, pure and tested on its own ---- */

/* How a monthly cost a compares with b, in words: "41% less", "the same", "costs 18%
 * more", "2.7x the cost" (over twice b, as the report says it, never "-168%"); "" when
 * there is nothing to compare (b not positive, a NAN). Returns buf. */
const char *tb_assess_versus(double a, double b, char *buf, size_t len);

/* A serving fleet from the load through Little's law: requests in flight = rps x
 * e2e_s (the end-to-end latency at the load one replica holds); replicas = ceil(in
 * flight / conc), conc being the requests one replica (one instance, or the instances
 * of one layout) holds within the latency targets; and at least ceil(need / cap) for
 * the token throughput (need and cap in the same unit). bound says which applied:
 * "latency" (Little's law; also on a tie) or "throughput". Returns 0, or -1 when a
 * figure is not positive and finite or a count passes 2^53 (refused, never clamped). */
struct tb_assess_fleet {
    double in_flight;     /* rps x e2e_s */
    double by_latency;    /* ceil(in_flight / conc) */
    double by_throughput; /* ceil(need / cap) */
    double replicas;      /* the larger, at least 1 */
    const char *bound;    /* static: "latency" or "throughput" */
};
int tb_assess_serve_fleet(double rps, double e2e_s, double conc, double need, double cap,
                          struct tb_assess_fleet *out);

/* Training as cluster-hours: tokens a month / the cluster's tokens/s = cluster-hours;
 * on pay-per-hour prices (on-demand, spot, capacity-block) cost = cluster-hours x
 * instances x usd_hourly; on a commitment (reserved, savings plan) the clusters are
 * bought for the whole month: ceil(cluster-hours / hours_per_month) clusters x
 * hours_per_month x instances x usd_committed. The cheaper wins (NAN prices are not
 * offered; the hourly on a tie). break_even is usd_committed / usd_hourly: the share of
 * the month above which the commitment is cheaper (NAN without both prices). Returns 0,
 * or -1 when neither price is given, a figure is not positive and finite, or a count
 * passes 2^53. */
struct tb_assess_train_cost {
    double cluster_hours; /* per month */
    double clusters;      /* clusters at once: ceil(cluster_hours / hours_per_month), >= 1 */
    double hourly_usd;    /* cluster_hours x instances x usd_hourly; NAN without a price */
    double committed_usd; /* clusters x hours x instances x usd_committed; NAN without one */
    double usd;           /* the cheaper */
    bool committed;       /* the commitment won */
    double break_even;    /* usd_committed / usd_hourly, a fraction of the month */
};
int tb_assess_train_cost(double tokens, double cluster_tokens_per_s, long instances,
                         double usd_hourly, double usd_committed, double hours_per_month,
                         struct tb_assess_train_cost *out);

/* The known column closest to an unknown one (edit distance, also with its '_'-separated
 * words sorted: "ttft_ms_limt" is close to "ttft_limit_ms"), or NULL when none is close. */
const char *tb_assess_closest(const char *word, const char *const *known);

/* One workload against one candidate. */
struct tb_assess_row {
    size_t workload;       /* index into the file's rows */
    const char *candidate; /* instance type (borrowed from the catalogue) */
    bool current;          /* the workload's current instance type */
    bool rebuy;            /* the current instance bought another way than now (current
                              is true too): what keeping it would cost that way */
    bool ok;               /* sized and priced; else why */
    char why[512];
    /* sizing: a replica (serve, denoise) or a cluster (train) of `instances` instances,
     * the smallest layout of 1, 2, 4, ... 64 that holds the model */
    long instances;        /* per replica or cluster */
    double replicas;       /* replicas (serve, denoise) or clusters at once (train) */
    long fleet;            /* instances bought or rented at once: replicas x instances */
    double capacity;       /* what one replica or cluster carries (cap_unit) */
    const char *cap_unit;  /* "tokens/s" or "images/s" */
    double need;           /* the load: tokens/s (serve), images/s (denoise), tokens a
                              month (train) */
    const char *need_unit; /* "tokens/s", "images/s", "tokens/month" */
    /* serving: Little's law */
    double rps, e2e_s, in_flight, concurrency; /* concurrency: per replica */
    const char *bound;                         /* "latency", "throughput" (static) */
    /* training: cluster-hours */
    double cluster_hours;         /* a month */
    double utilisation;           /* cluster_hours / (clusters x hours a month); for
                                     Capacity Blocks, the share of the days bought used */
    double cblock_days;           /* train at capacity-block: days bought a month; NAN */
    double od_replicas;           /* always-on at spot: replicas kept on on-demand; NAN */
    double break_even_util;       /* the commitment pays above this utilisation */
    char break_even_purchase[32]; /* the commitment it is for, or "" */
    /* pricing */
    char purchase[32];    /* purchase model used */
    char region[32];      /* region of the price used: the workload's, or the nearest
                             comparable's (see cmp_basis) */
    char cmp_basis[96];   /* "" when priced under the workload's purchase model and region;
                             else the nearest comparable where the candidate and the current
                             instance both have a price ("capacity-block in us-east-2") */
    char basis[96];       /* "on-demand hours", "reserved-3y, 1 cluster always on",
                             "on-demand, always on" */
    bool committed;       /* train: bought as clusters for the whole month */
    double usd_per_hour;  /* one instance */
    char price[600];      /* price row used: region, purchase, date, source */
    bool price_weak;      /* that row's status is secondary (tb_pricing.h): a weak price; the
                             verdict names it with the price at which its saving flips */
    long price_line;      /* its line in prices.csv (0: none) */
    char price_note[600]; /* prices missing for this candidate, said ("" when none) */
    double monthly_usd;
    /* against what the team pays now (the workload's current_monthly) */
    double saving_usd; /* current_monthly - monthly_usd (NAN without it) */
    double saving_frac;
    double break_even_months; /* engineering cost / monthly saving; INFINITY when none */
    double saving_lo_price, saving_hi_price; /* candidate price +-swing */
    double model_err;          /* the model's error band for the family and phase (fraction):
                                  tb_validate_error's p90, as the report's cost.csv */
    char model_err_basis[256]; /* what that band is ("p90 of 41 H100 SXM5 serve rows") */
    double saving_lo_model, saving_hi_model; /* capacity +-model_err, whole instances */
    char model_note[200];                    /* why the model-error range has no width, or "" */
    /* the comparison, like for like */
    double base_usd;      /* the current fleet under this row's purchase model and region,
                             or the spend given in the file; NAN when unknown */
    char base_basis[256]; /* "p5.48xlarge reserved-3y in us-east-1", or the fallback said */
    char base_how[80];    /* how that baseline is bought: "reserved-3y in us-east-1" */
    bool like_for_like;
    /* the current instance's price in that baseline (NAN without), and whether it is
     * secondary (weak), as price_weak */
    double base_usd_per_hour;
    bool base_weak;
    double like_saving_usd; /* base_usd - monthly_usd (NAN without a baseline) */
    double like_saving_frac;
    char layout[1024];  /* the model's assumptions for one replica/cluster */
    char compare[200];  /* this row against now, in words ("costs 18% more than now") */
    const char *family; /* the candidate's chip family (borrowed from the model) */
    char risks[2048];   /* "topic: text; ..." for the candidate's family */
};

struct tb_assessment {
    struct tb_csv_table csv;    /* owned: the assessment file */
    struct tb_assess_row *rows; /* owned */
    size_t nrows;
    double *current_monthly;   /* owned: per workload, NAN when unknown */
    struct tb_csv_table risks; /* owned: pricing/risks.csv (empty when absent) */
    bool have_risks;
    char (*current_why)[512]; /* owned: per workload */
    enum tb_phase *phase;     /* owned: per workload: TB_PHASE_SERVE, _TRAIN or _DENOISE */
    char (*verdict)[800];     /* owned: per workload, its one verdict */
};

/* Read and check the file (a missing or bad field: TB_EINPUT, "file: line N: field 'x':
 * ..."; an unknown instance, region or purchase model is an input error too, and so is
 * an unknown column: "file: line 1: unknown column 'x' (did you mean 'y'?)"), then
 * assess. A load whose fleet or cluster-hours pass 2^53 on a candidate is an input error
 * naming the load's field (refused, never clamped). Returns TB_OK, TB_EINPUT on input errors,
 * TB_EFAIL on other failures (memory, an unreadable pricing/risks.csv), with the message in err. */
/* The numeric columns of an assessment file and their ranges (README "Input ranges"). */
extern const struct tb_range TB_ASSESS_RANGES[];

int tb_assess_run(struct tb_assessment *as, const char *path, const struct tb_model *m,
                  const struct tb_assess_opts *o, char *err, size_t errlen);
void tb_assess_release(struct tb_assessment *as);

/* Whether a risk of pricing/risks.csv listed for risk_family ("nvidia", "neuron", "all")
 * applies to a chip family ("neuron-v2" is a "neuron"). */
bool tb_assess_risk_applies(const char *risk_family, const char *family);

/* ---- outputs: harness/report/assess_doc.c ---- */

struct tb_doc;

/* Append the assessment to both documents of d (tb_doc.h): its title a heading of
 * `level` (1-5), each workload one level below, with its candidates, verdicts and risks.
 * Returns TB_OK, or TB_EFAIL when memory ran out (d is then incomplete). */
int tb_assess_doc(const struct tb_assessment *as, const struct tb_assess_opts *o, int level,
                  struct tb_doc *d);

/* Write the rows as CSV (assessment.csv); the Markdown document (assessment.md); the
 * HTML page (assessment.html: self-contained, the report's stylesheet and sortable
 * tables). Each returns TB_OK, or TB_EFAIL on a write or memory failure. */
int tb_assess_write_csv(const struct tb_assessment *as, FILE *f);
int tb_assess_write_md(const struct tb_assessment *as, const struct tb_assess_opts *o, FILE *f);
int tb_assess_write_html(const struct tb_assessment *as, const struct tb_assess_opts *o, FILE *f);
/* The same as a section of another document (tb_assess_doc at `level`): the Markdown
 * text, or the HTML without a page around it. */
int tb_assess_write_md_at(const struct tb_assessment *as, const struct tb_assess_opts *o, int level,
                          FILE *f);
int tb_assess_write_html_at(const struct tb_assessment *as, const struct tb_assess_opts *o,
                            int level, FILE *f);

#endif
