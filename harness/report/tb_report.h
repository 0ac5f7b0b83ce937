/*
 * harness/report/tb_report.h: the report stage, the last of the pipeline: results files
 * in (tb_results.h), priced by the cost stage (tb_cost.h) with the tables in pricing/
 * (tb_pricing.h), charts drawn with gnuplot (tb_plot.h, the scripts in reports/), and
 * written into one folder:
 *
 *   report.md, report.html  the report (HTML self-contained: inline CSS and SVG, no
 *                           network references)
 *   cost.csv                one row per priced throughput row, with the price row used
 *   throughput.svg, cost.svg  the charts, plus .png where gnuplot has pngcairo;
 *   images.svg                cost per thousand images, when diffusion rows are priced
 *   assessment.csv          with an assessment (tb_assess.h), which is also a section
 *
 * The stage's files are in harness/report/ (report_impl.h says which does what).
 *
 * Everything is written under temporary names in a scratch folder inside the output
 * folder and renamed into place only when all of it succeeded, so a failure leaves the
 * folder as it was (a previous report stays whole). When gnuplot is not installed the
 * report is still written, with a note that the charts are missing; when gnuplot runs
 * and fails, nothing is written.
 *
 * Besides the cost of every throughput row, the cost stage ranks the targets per workload
 * (the same model, phase, shape and precision at any batch or instance count): the
 * cheapest, its saving and price-performance against a baseline instance type priced
 * on-demand, the cheapest serving configuration within TTFT/TPOT limits (from batch
 * sweeps), and the time and cost to train on N tokens. Prices older than a threshold
 * are flagged; a missing price is reported as missing, never guessed.
 *
 * Cost of a run: usd_per_mtok = usd_per_hour / (tokens_per_s * 3600) * 1e6, with the
 * whole price of the machine the run used (the host's, or the target instance's, times
 * its instances), or, for a run that used part of an instance's chips (results.csv
 * chips_used: the GPU executor on one of a p5.48xlarge's 8 GPUs), that share of it
 * (tb_cost_instance_share: 1/8). chips_used must be at least 1 and at most the chips
 * of the row's instances (the catalogue's count; else an input error).
 * Metric names follow DESIGN.md section 2 (each throughput's cost metric in tb_vocab.h):
 * prefill -> usd_per_mtok_in, decode and output -> usd_per_mtok_out, train ->
 * usd_per_mtok_train, total -> usd_per_mtok_total, images -> usd_per_kimage.
 */
#ifndef TB_REPORT_H
#define TB_REPORT_H

#include "tb_util.h"

#include <stdbool.h>
#include <stddef.h>

struct tb_assessment;
struct tb_assess_opts;
struct tb_pricing_discounts;

struct tb_report_opts {
    const char *const *results; /* borrowed: nresults results.csv paths, at least one */
    size_t nresults;
    const char *out_dir;  /* NULL: the folder of the first results file */
    const char *instance; /* the host's EC2 instance type, or NULL */
    const char *region;   /* NULL: us-east-1 */
    const char *purchase; /* NULL: on-demand */
    double usd_per_hour;  /* the host's price as the user gives it; NAN: none */
    const struct tb_pricing_discounts *discounts; /* borrowed, or NULL: the user's
                                  discounts off on-demand per purchase model (tb_pricing.h,
                                  --discount), labelled as the user's own */
    const char *pricing_dir;                      /* NULL: tb_datadir()/pricing */
    /* the catalogue the caller loaded from pricing_dir (one compare loads it once):
     * borrowed, both or neither; NULL: loaded from pricing_dir here */
    const struct tb_pricing *catalog_pricing;
    const struct tb_model *catalog_model;
    const char *baseline;      /* price-performance baseline, priced on-demand in region;
                                  NULL: p5.48xlarge */
    double max_price_age_days; /* older prices are flagged (default 180) */
    double ttft_limit_ms;      /* latency limits of the cheapest serving configuration */
    double tpot_limit_ms;      /* (defaults 2000 and 200, MLPerf's Llama 2 70B server) */
    double train_tokens;       /* tokens of the time-and-cost-to-train figures (1e12) */
    /* A migration assessment (tb_assess.h) to add as a section and as assessment.csv; the
     * caller runs it (the report never calls the performance model). */
    const struct tb_assessment *assessment;   /* borrowed, or NULL: none */
    const struct tb_assess_opts *assess_opts; /* borrowed: the options it ran with
                                                 (NULL: tb_assess_opts_init's) */
    const char *assess_why; /* without one: why, the section's note (NULL: how to ask for
                               one, --assess FILE) */
    /* measured collectives against the model (only when the results have some) */
    const char *efficiency; /* a user's efficiency file whose rows replace ours, or NULL */
    double host_bw;         /* the host's memory bandwidth, bytes/s; 0: measured now */
    double net_bw;          /* the hosts' network bandwidth, bytes/s, for tcp across
                               nodes; 0: not stated (those rows not modeled) */
};

/* What a successful tb_report_write produced (all fields written by it). */
struct tb_report_info {
    char out_dir[4096]; /* where the files are */
    int ncharts;        /* SVG charts drawn */
    bool png;           /* PNG copies drawn */
    size_t nrows;       /* results rows read */
    size_t ncosted;     /* throughput rows with a price at the chosen purchase model and
                           region */
    size_t nstand_in;   /* throughput rows shown at their target's nearest comparable price
                           instead (tb_cost_stand_in) */
    char notes[1024];   /* what is missing and why ("" when nothing), one per line */
    char answers[4096]; /* the summary's answer per workload, plain text, one a line
                           ("- llama-3.1-70b/serve/...: cheapest like for like ..."), for
                           the terminal; "" when nothing was compared */
};

/* Set opts to the defaults above (no results, no price). */
#define TB_REPORT_BASELINE "p5.48xlarge"
void tb_report_opts_init(struct tb_report_opts *o);

/* Write the report. Returns TB_OK (info filled when not NULL), or with a message in err,
 * after which nothing has been written:
 *   TB_EINPUT  bad results, pricing tables or options (exit status 2), e.g.
 *              "out/results.csv: line 7: field 'value': not a number: 'abc'"
 *   TB_EFAIL   a chart or a file could not be written (exit status 1) */
int tb_report_write(const struct tb_report_opts *o, struct tb_report_info *info, char *err,
                    size_t errlen);

/* The checks of tb_report_write that need no results file (the price tables, region,
 * purchase model, host price, baseline: tb_cost_opts_check), for `report --check`;
 * with o->results, those files' rows too, as the cost stage takes them (chips_used
 * within their instances), writing nothing. Returns TB_OK, or TB_EINPUT with the
 * message. */
int tb_report_check(const struct tb_report_opts *o, char *err, size_t errlen);

#endif
