/* harness/cmd_report.c: `trnbench report`, the command line over tb_report_write
 * (tb_report.h). With --assess it first runs the migration assessment (tb_assess.h:
 * price tables, the performance model) and hands the result to the report, which only
 * renders it. Exit status: 0 ok, 1 a chart or file could not be written, 2 usage or
 * input error (nothing written). */
#include "cli.h"
#include "tb_assess.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_report.h"
#include "tb_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench report [--out DIR] [--region R] [--pricing P] [--instance TYPE]\n"
          "                       [--usd-per-hour X] [--baseline TYPE] [--max-price-age DAYS]\n"
          "                       [--ttft-ms X] [--tpot-ms X] [--train-tokens N]\n"
          "                       [--assess FILE] [--prices DIR] RESULTS.csv...\n"
          "\n"
          "Read one or more results files, price every throughput row and write report.md,\n"
          "report.html (self-contained), cost.csv and the charts (SVG, and PNG where gnuplot\n"
          "has pngcairo) into DIR.\n"
          "\n"
          "  --out DIR          output folder (default: the folder of the first results file)\n"
          "  --region R         region of the prices (default us-east-1)\n"
          "  --pricing P        purchase model: on-demand (default), reserved-1y, reserved-3y,\n"
          "                     savings-plan-1y, savings-plan-3y, spot, capacity-block\n"
          "                     (--purchase P is the same)\n"
          "  --instance TYPE    the EC2 instance type the host is (from pricing/instances.csv);\n"
          "                     its price is the newest row for the region and purchase model\n"
          "  --usd-per-hour X   the host's price in USD per hour; wins over the table (a rate\n"
          "                     you actually pay); with --instance it names what was priced\n"
          "  --baseline TYPE    price-performance baseline, priced on-demand (p5.48xlarge)\n"
          "  --max-price-age D  flag prices older than D days (180)\n"
          "  --ttft-ms X        TTFT limit of the cheapest serving configuration (2000)\n"
          "  --tpot-ms X        TPOT limit (200; both MLPerf's Llama 2 70B server limits)\n"
          "  --train-tokens N   tokens of the time-and-cost-to-train figures (1e12)\n"
          "  --assess FILE      add a migration assessment of FILE (trnbench assess) as a\n"
          "                     section, and assessment.csv\n"
          "  --prices DIR       price tables (default: pricing/ in the data folder)\n"
          "\n"
          "Rows whose target is an instance type are priced from the tables; rows on the host\n"
          "need --instance or --usd-per-hour, else the report says \"no price\" and why. An\n"
          "unknown region, purchase model, instance or baseline is an input error.\n"
          "Exit status: 0 ok, 1 a chart or file could not be written, 2 usage or input error.\n",
          f);
}

/* "--name VALUE" or "--name=VALUE": returns the value and advances *i, or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, int *bad)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n))
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n])
        return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "trnbench report: option '%s' needs a value\n", name);
        *bad = 1;
        return NULL;
    }
    return argv[++*i];
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
    const char **files = NULL, *assess = NULL;
    char err[1024] = "";
    int nfiles = 0, rc = 2, bad = 0, only_files = 0;

    tb_report_opts_init(&o);
    memset(&assessed, 0, sizeof assessed);
    files = tb_alloc_array(argc > 0 ? (size_t)argc : 1, sizeof(*files));
    if (!files) {
        fprintf(stderr, "trnbench report: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (only_files || a[0] != '-' || !strcmp(a, "-")) {
            files[nfiles++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_files = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            rc = 0;
            goto out;
        } else if ((v = opt_value(argc, argv, &i, "--out", &bad))) {
            o.out_dir = v;
        } else if ((v = opt_value(argc, argv, &i, "--instance", &bad))) {
            o.instance = v;
        } else if ((v = opt_value(argc, argv, &i, "--region", &bad))) {
            o.region = v;
        } else if ((v = opt_value(argc, argv, &i, "--pricing", &bad)) ||
                   (v = opt_value(argc, argv, &i, "--purchase", &bad))) {
            o.purchase = v;
        } else if ((v = opt_value(argc, argv, &i, "--prices", &bad))) {
            o.pricing_dir = v;
        } else if ((v = opt_value(argc, argv, &i, "--baseline", &bad))) {
            o.baseline = v;
        } else if ((v = opt_value(argc, argv, &i, "--assess", &bad))) {
            assess = v;
        } else if ((v = opt_value(argc, argv, &i, "--max-price-age", &bad)) ||
                   (v = opt_value(argc, argv, &i, "--ttft-ms", &bad)) ||
                   (v = opt_value(argc, argv, &i, "--tpot-ms", &bad)) ||
                   (v = opt_value(argc, argv, &i, "--train-tokens", &bad))) {
            double *dst = !strncmp(a, "--max-price-age", 15) ? &o.max_price_age_days
                          : !strncmp(a, "--ttft-ms", 9)      ? &o.ttft_limit_ms
                          : !strncmp(a, "--tpot-ms", 9)      ? &o.tpot_limit_ms
                                                             : &o.train_tokens;
            if (tb_parse_double(v, 1e-9, 1e18, dst) != 0) {
                fprintf(stderr, "trnbench report: %s: not a positive number: '%s'\n", a, v);
                goto out;
            }
        } else if ((v = opt_value(argc, argv, &i, "--usd-per-hour", &bad))) {
            if (tb_parse_double(v, 1e-9, 1e7, &o.usd_per_hour) != 0) {
                fprintf(stderr, "trnbench report: --usd-per-hour: not a positive price: '%s'\n", v);
                goto out;
            }
        } else if (!bad) {
            fprintf(stderr, "trnbench report: unknown option '%s'\n", a);
            usage(stderr);
            goto out;
        }
        if (bad)
            goto out;
    }
    if (nfiles == 0) {
        fprintf(stderr, "trnbench report: no results file given\n");
        usage(stderr);
        goto out;
    }
    o.results = files;
    o.nresults = (size_t)nfiles;
    if (assess) {
        int r = run_assessment(&assessed, assess, o.pricing_dir, err, sizeof err);
        if (r != TB_OK) {
            fprintf(stderr, "trnbench report: %s\n", err);
            rc = r == TB_EINPUT ? 2 : 1;
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
    rc = 0;
out:
    release_assessment(&assessed);
    free(files);
    return rc;
}
