/* harness/cli/cmd_report.c: `trnbench report`, the command line over tb_report_write
 * (tb_report.h). With --assess it first runs the migration assessment (tb_assess.h:
 * price tables, the performance model) and hands the result to the report, which only
 * renders it. Exit status: 0 ok, 1 a chart or file could not be written, 2 usage or
 * input error (nothing written). */
#include "cli.h"
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

enum {
    OPT_OUT = 256, /* past every character: only long options */
    OPT_INSTANCE,
    OPT_REGION,
    OPT_PURCHASE,
    OPT_PRICES,
    OPT_BASELINE,
    OPT_ASSESS,
    OPT_MAX_PRICE_AGE,
    OPT_TTFT_MS,
    OPT_TPOT_MS,
    OPT_TRAIN_TOKENS,
    OPT_USD_PER_HOUR,
    OPT_CHECK,
    OPT_EFFICIENCY,
    OPT_HOST_BW,
    OPT_NET_BW,
    OPT_DISCOUNT,
};

static const struct option OPTS[] = {
    {"help", no_argument, NULL, 'h'},
    {"out", required_argument, NULL, OPT_OUT},
    {"instance", required_argument, NULL, OPT_INSTANCE},
    {"region", required_argument, NULL, OPT_REGION},
    {"pricing", required_argument, NULL, OPT_PURCHASE},
    {"purchase", required_argument, NULL, OPT_PURCHASE}, /* the same as --pricing */
    {"prices", required_argument, NULL, OPT_PRICES},
    {"baseline", required_argument, NULL, OPT_BASELINE},
    {"assess", required_argument, NULL, OPT_ASSESS},
    {"max-price-age", required_argument, NULL, OPT_MAX_PRICE_AGE},
    {"ttft-ms", required_argument, NULL, OPT_TTFT_MS},
    {"tpot-ms", required_argument, NULL, OPT_TPOT_MS},
    {"train-tokens", required_argument, NULL, OPT_TRAIN_TOKENS},
    {"usd-per-hour", required_argument, NULL, OPT_USD_PER_HOUR},
    {"check", no_argument, NULL, OPT_CHECK},
    {"efficiency", required_argument, NULL, OPT_EFFICIENCY},
    {"host-mem-gbyte-per-s", required_argument, NULL, OPT_HOST_BW},
    {TB_COLL_NET_OPT, required_argument, NULL, OPT_NET_BW},
    {"discount", required_argument, NULL, OPT_DISCOUNT},
    {NULL, 0, NULL, 0},
};

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
    int rc = 2, state = 0, c;

    tb_report_opts_init(&o);
    o.discounts = &discounts;
    memset(&assessed, 0, sizeof assessed);
    while ((c = tb_cli_getopt("report", argc, argv, OPTS, &state)) != -1) {
        double *num = c == OPT_MAX_PRICE_AGE  ? &o.max_price_age_days
                      : c == OPT_TTFT_MS      ? &o.ttft_limit_ms
                      : c == OPT_TPOT_MS      ? &o.tpot_limit_ms
                      : c == OPT_TRAIN_TOKENS ? &o.train_tokens
                                              : NULL;
        switch (c) {
        case 'h':
            usage(stdout);
            rc = 0;
            goto out;
        case OPT_OUT:
            o.out_dir = optarg;
            break;
        case OPT_INSTANCE:
            o.instance = optarg;
            break;
        case OPT_REGION:
            o.region = optarg;
            break;
        case OPT_PURCHASE:
            o.purchase = optarg;
            break;
        case OPT_PRICES:
            o.pricing_dir = optarg;
            break;
        case OPT_BASELINE:
            o.baseline = optarg;
            break;
        case OPT_ASSESS:
            assess = optarg;
            break;
        case OPT_MAX_PRICE_AGE:
        case OPT_TTFT_MS:
        case OPT_TPOT_MS:
        case OPT_TRAIN_TOKENS:
            if (tb_parse_double(optarg, 1e-9, 1e18, num) != 0) {
                fprintf(stderr, "trnbench report: --%s: not a positive number: '%s'\n",
                        tb_cli_opt_name(OPTS, c), optarg);
                goto out;
            }
            break;
        case OPT_CHECK:
            check = true;
            break;
        case OPT_EFFICIENCY:
            o.efficiency = optarg;
            break;
        case OPT_HOST_BW:
            if (tb_parse_double(optarg, 0.001, 1e5, &o.host_bw) != 0) {
                fprintf(stderr,
                        "trnbench report: --host-mem-gbyte-per-s: not a bandwidth in GB/s: "
                        "'%s'\n",
                        optarg);
                goto out;
            }
            o.host_bw *= 1e9;
            break;
        case OPT_NET_BW:
            if (tb_coll_net_bw_arg("report", optarg, &o.net_bw) != 0)
                goto out;
            break;
        case OPT_USD_PER_HOUR:
            if (tb_parse_double(optarg, 1e-9, 1e7, &o.usd_per_hour) != 0) {
                fprintf(stderr, "trnbench report: --usd-per-hour: not a positive price: '%s'\n",
                        optarg);
                goto out;
            }
            break;
        case OPT_DISCOUNT:
            if (tb_pricing_discount_add(&discounts, optarg, err, sizeof err) != 0) {
                fprintf(stderr, "trnbench report: %s\n", err);
                goto out;
            }
            break;
        default: /* '?': tb_cli_getopt said what is wrong */
            usage(stderr);
            goto out;
        }
    }
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
    switch (tb_report_write(&o, &info, err, sizeof err)) {
    case TB_OK:
        break;
    case TB_EINPUT:
        fprintf(stderr, "trnbench report: %s\n", err);
        rc = 2;
        goto out;
    default:
        fprintf(stderr, "trnbench report: %s\n", err);
        rc = 1;
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
