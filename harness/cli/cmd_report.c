/* harness/cli/cmd_report.c: `trnbench report`, the command line over tb_report_write
 * (tb_report.h). With --assess it first runs the migration assessment (tb_assess.h:
 * price tables, the performance model) and hands the result to the report, which only
 * renders it. Exit status: 0 ok, 1 a chart or file could not be written, 2 usage or
 * input error (nothing written). */
#include "cli.h"
#include "cli_opt.h"
#include "tb_assess.h"
#include "tb_coll_results.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_report.h"
#include "tb_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench report [--out DIR] [--region R] [--pricing P] [--instance TYPE]\n"
          "                       [--usd-per-hour X] [--discount P=F]... [--baseline TYPE]\n"
          "                       [--max-price-age DAYS]\n"
          "                       [--ttft-ms X] [--tpot-ms X] [--train-tokens N]\n"
          "                       [--assess FILE] [--prices DIR] [--efficiency FILE]\n"
          "                       [--host-mem-gbyte-per-s X] [--host-net-gbit-per-s X]\n"
          "                       RESULTS.csv...\n"
          "       trnbench report --check [the same options]\n"
          "\n"
          "Read one or more results files, price every throughput row and write report.md,\n"
          "report.html (self-contained), cost.csv and the charts (SVG, and PNG where gnuplot\n"
          "has pngcairo) into DIR. A RESULTS file may be `trnbench predict`'s output: its\n"
          "predicted rows are read as modeled results (source the model version), rows\n"
          "with a reason (why) skipped, and a note says how many and why.\n"
          "\n"
          "  --out DIR          output folder (default: the folder of the first results file)\n"
          "  --region R         region of the prices (default us-east-1)\n"
          "  --pricing P        purchase model: on-demand (default), reserved-1y, reserved-3y,\n"
          "                     savings-plan-1y, savings-plan-3y, spot, capacity-block\n"
          "                     (--purchase P is the same)\n"
          "  --instance TYPE    the EC2 instance type the host is (from pricing/instances.csv);\n"
          "                     its price is the newest row for the region and purchase model\n"
          "  --usd-per-hour X   the host's price in USD per hour; wins over the table (a rate\n"
          "                     you actually pay); with --instance TYPE every row of TYPE\n"
          "                     is priced at X\n"
          "  --discount P=F     your discount for purchase model P: the fraction F, in\n"
          "                     (0, 1), off the on-demand price of the same instance and\n"
          "                     region (savings-plan-1y=0.28: 28% off); the report labels\n"
          "                     it as yours; it wins over the table's P; once per purchase\n"
          "                     model, repeatable (AWS publishes no machine-readable\n"
          "                     savings-plan rate for these instances)\n"
          "  --baseline TYPE    price-performance baseline (p5.48xlarge), priced like the\n"
          "                     candidates (the same purchase model and region)\n"
          "  --max-price-age D  flag prices older than D days (180)\n"
          "  --ttft-ms X        TTFT limit of the cheapest serving configuration (2000)\n"
          "  --tpot-ms X        TPOT limit (200; both MLPerf's Llama 2 70B server limits)\n"
          "  --train-tokens N   tokens of the time-and-cost-to-train figures (1e12)\n"
          "  --assess FILE      add a migration assessment of FILE (trnbench assess) as a\n"
          "                     section, and assessment.csv\n"
          "  --prices DIR       price tables (default: pricing/ in the data folder)\n"
          "  --efficiency FILE  a user's efficiency file (trnbench calibrate's output): its\n"
          "                     rows replace ours in the collectives' model\n"
          "  --host-mem-gbyte-per-s X  the host's memory bandwidth the model of MPI between\n"
          "                     its processes takes (shm, loopback, tcp; one thread's STREAM\n"
          "                     triad, GB/s); default: measured now when such rows are "
          "there\n" TB_COLL_NET_HELP
          "  --check            check the options against the price tables (and the --assess\n"
          "                     file) and stop: no results file, nothing written (make bench\n"
          "                     runs it before measuring, so a typo costs no run)\n"
          "\n"
          "Rows whose target is an instance type are priced from the tables; rows on the host\n"
          "need --instance or --usd-per-hour, else the report says \"no price\" and why. An\n"
          "unknown region, purchase model, instance or baseline is an input error.\n"
          "Exit status: 0 ok, 1 a chart or file could not be written, 2 usage or input error.\n",
          f);
}

/* The assessment of --assess FILE and what it borrows from: the price tables and the
 * performance model must outlive it (its rows point into both). */
struct assessment {
    struct tb_pricing pricing; /* owned when have_pricing */
    struct tb_model model;     /* owned when have_model */
    struct tb_assess_opts opts;
    struct tb_assessment as; /* owned when have_as */
    bool have_pricing, have_model, have_as;
};

/* Run the assessment of file with the tables of pricing_dir (NULL: the data folder's).
 * Returns TB_OK, or TB_EINPUT (a bad file or table) / TB_EFAIL with a message in err;
 * release a either way. */
static int run_assessment(struct assessment *a, const char *file, const char *pricing_dir,
                          char *err, size_t errlen)
{
    int r;
    memset(a, 0, sizeof *a);
    tb_assess_opts_init(&a->opts);
    if (tb_pricing_load(&a->pricing, pricing_dir, err, errlen) != 0)
        return TB_EINPUT;
    a->have_pricing = true;
    if (tb_model_load(&a->model, &a->pricing, pricing_dir, err, errlen) != 0)
        return TB_EINPUT;
    a->have_model = true;
    r = tb_assess_run(&a->as, file, &a->model, &a->opts, err, errlen);
    if (r != 0)
        return r == TB_EINPUT ? TB_EINPUT : TB_EFAIL;
    a->have_as = true;
    return TB_OK;
}

static void release_assessment(struct assessment *a);

/* --check: the options a report would refuse, refused now, before any results exist.
 * Returns TB_OK, TB_EINPUT or TB_EFAIL with the message. */
static int check_options(const struct tb_report_opts *o, const char *assess, char *err,
                         size_t errlen)
{
    struct assessment a;
    int rc = tb_report_check(o, err, errlen);
    if (rc != TB_OK || !assess)
        return rc;
    rc = run_assessment(&a, assess, o->pricing_dir, err, errlen);
    release_assessment(&a);
    return rc;
}

static void release_assessment(struct assessment *a)
{
    if (a->have_as)
        tb_assess_release(&a->as);
    if (a->have_model)
        tb_model_release(&a->model);
    if (a->have_pricing)
        tb_pricing_release(&a->pricing);
    memset(a, 0, sizeof *a);
}

int tb_cmd_report(int argc, char **argv)
{
    struct tb_report_opts o;
    struct tb_report_info info;
    struct assessment assessed;
    struct tb_pricing_discounts discounts = {0};
    const char *assess = NULL;
    bool check = false;
    char err[1024] = "";
    double host_gbyte = 0, net_gbit = 0;
    const struct tb_opt opts[] = {
        TB_OPT_STR("out", &o.out_dir),
        TB_OPT_STR("instance", &o.instance),
        TB_OPT_STR("region", &o.region),
        TB_OPT_STR("pricing", &o.purchase),
        TB_OPT_STR("purchase", &o.purchase), /* the same as --pricing */
        TB_OPT_STR("prices", &o.pricing_dir),
        TB_OPT_STR("baseline", &o.baseline),
        TB_OPT_STR("assess", &assess),
        TB_OPT_DOUBLE("max-price-age", &o.max_price_age_days, 1e-9, 1e18),
        TB_OPT_DOUBLE("ttft-ms", &o.ttft_limit_ms, 1e-9, 1e18),
        TB_OPT_DOUBLE("tpot-ms", &o.tpot_limit_ms, 1e-9, 1e18),
        TB_OPT_DOUBLE("train-tokens", &o.train_tokens, 1e-9, 1e18),
        TB_OPT_DOUBLE("usd-per-hour", &o.usd_per_hour, 1e-9, 1e7),
        TB_OPT_FLAG("check", &check),
        TB_OPT_STR("efficiency", &o.efficiency),
        TB_OPT_DOUBLE("host-mem-gbyte-per-s", &host_gbyte, 0.001, 1e5),
        TB_OPT_DOUBLE(TB_COLL_NET_OPT, &net_gbit, TB_COLL_NET_GBIT_MIN, TB_COLL_NET_GBIT_MAX),
        TB_OPT_FN("discount", tb_cli_take_discount, &discounts),
        TB_OPT_END,
    };
    int rc;

    tb_report_opts_init(&o);
    o.discounts = &discounts;
    memset(&assessed, 0, sizeof assessed);
    if ((rc = tb_cli_parse("report", argc, argv, opts, usage)) != TB_CLI_GO)
        return rc;
    rc = 2;
    if (host_gbyte > 0)
        o.host_bw = host_gbyte * 1e9; /* bytes/s */
    if (net_gbit > 0)
        o.net_bw = net_gbit * 1e9 / 8;
    if (check) {
        int r = check_options(&o, assess, err, sizeof err);
        if (r != TB_OK) {
            fprintf(stderr, "trnbench report: %s\n", err);
            rc = tb_cli_exit_status(r);
        } else {
            printf("trnbench report: options checked\n");
            rc = 0;
        }
        goto out;
    }
    /* the operands, wherever they were among the options ("-" is one; "--" ends the
     * options) */
    if (optind >= argc) {
        fprintf(stderr, "trnbench report: no results file given\n");
        usage(stderr);
        goto out;
    }
    o.results = (const char *const *)(argv + optind);
    o.nresults = (size_t)(argc - optind);
    if (assess) {
        int r = run_assessment(&assessed, assess, o.pricing_dir, err, sizeof err);
        if (r != TB_OK) {
            fprintf(stderr, "trnbench report: %s\n", err);
            rc = tb_cli_exit_status(r);
            goto out;
        }
        o.assessment = &assessed.as;
        o.assess_opts = &assessed.opts;
    }
    if ((rc = tb_cli_exit_status(tb_report_write(&o, &info, err, sizeof err))) != 0) {
        fprintf(stderr, "trnbench report: %s\n", err);
        goto out;
    }
    for (const char *s = info.notes; *s;) {
        size_t n = strcspn(s, "\n");
        fprintf(stderr, "trnbench report: note: %.*s\n", (int)n, s);
        s += n;
        if (*s)
            s++;
    }
    printf("trnbench report: %zu rows, %zu throughput rows priced, %d chart%s%s; wrote "
           "%s/report.html\n",
           info.nrows, info.ncosted, info.ncharts, info.ncharts == 1 ? "" : "s",
           info.png ? " (SVG and PNG)" : "", info.out_dir);
    fputs(info.answers, stdout); /* the answer itself, as the summary gives it */
    rc = 0;
out:
    release_assessment(&assessed);
    return rc;
}
