/*
 * harness/cli/cmd_prices.c: `trnbench prices import --from FORMAT FILE... --out DIR`:
 * AWS's own price readings, as the AWS CLI writes them (get-products, spot price
 * history, Capacity Block offerings, Savings Plans offering rates), or ec2instances.info's
 * public instances.json (vantage, no credentials), merged into DIR/prices.csv, which
 * `trnbench report --prices DIR` then uses (tb_price_import.h).
 * Every file is read and checked before anything is written; on an input error (exit 2)
 * DIR is left as it was.
 */
#include "cli.h"
#include "cli_opt.h"
#include "tb_price_import.h"
#include "tb_pricing.h"
#include "tb_util.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench prices import --from FORMAT FILE... --out DIR [--prices DIR]\n"
          "\n"
          "Import AWS's price readings, as the AWS CLI writes them (needs AWS credentials),\n"
          "or ec2instances.info's public instances.json (does not), into DIR/prices.csv\n"
          "(created, or merged: rows already there are not added again). Each row is dated\n"
          "by the data (a file without dates: by the file's modification day) and names the\n"
          "file and the day of the import. `trnbench report --prices DIR` then prices with\n"
          "them (the chips, instances and regions tables come from pricing/ when DIR has\n"
          "none).\n"
          "\n"
          "  --from FORMAT  get-products: aws pricing get-products --service-code AmazonEC2\n"
          "                   (on-demand; Reserved standard No Upfront 1yr/3yr)\n"
          "                 spot-price-history: aws ec2 describe-spot-price-history\n"
          "                 capacity-block-offerings: aws ec2 describe-capacity-block-offerings\n"
          "                 savings-plan-rates: aws savingsplans\n"
          "                   describe-savings-plans-offering-rates (Compute, No Upfront)\n"
          "                 vantage: ec2instances.info's public instances.json:\n"
          "                   curl -fsSLR --compressed -o instances.json \\\n"
          "                     https://instances.vantage.sh/instances.json\n"
          "                   (-R: the file keeps the server's date, which dates the rows)\n"
          "                   linux.ondemand -> on-demand\n"
          "                   yrTerm1Standard.noUpfront, yrTerm3Standard.noUpfront\n"
          "                     -> reserved-1y, reserved-3y\n"
          "                   yrTerm1Savings.noUpfront, yrTerm3Savings.noUpfront\n"
          "                     -> savings-plan-1y, savings-plan-3y (Compute Savings Plans)\n"
          "                   Partial/All Upfront rates go into the notes; \"pricing\": {}\n"
          "                   gives none rows; Convertible, InstanceSavings, spot left out\n"
          "  --out DIR      folder of the prices.csv to write\n"
          "  --prices DIR   the catalogue whose instance types are kept (default: pricing/)\n"
          "Kept: Linux, shared tenancy, no pre-installed software, USD, instance types in\n"
          "instances.csv, regions in regions.csv; the rest is counted and said. See\n"
          "README.md, \"Refreshing prices\".\n"
          "Exit status: 0 ok (or nothing new), 1 DIR/prices.csv could not be written,\n"
          "2 usage or input error (file, JSON path and why; nothing written).\n",
          f);
}

static int import(int argc, char **argv)
{
    const char *from = NULL, *out = NULL, *prices = NULL;
    enum tb_price_format f;
    struct tb_pricing cat;
    struct tb_price_import im;
    char err[2048], now[32], today[12];
    size_t added = 0;
    int rc;

    const struct tb_opt opts[] = {
        TB_OPT_STR("from", &from),
        TB_OPT_STR("out", &out),
        TB_OPT_STR("prices", &prices),
        TB_OPT_END,
    };

    if ((rc = tb_cli_parse("prices import", argc, argv, opts, usage)) != TB_CLI_GO)
        return rc;
    rc = 0;
    if (!from || !out || optind >= argc) {
        fprintf(stderr, "trnbench prices import: %s\n",
                !from  ? "--from FORMAT is required"
                : !out ? "--out DIR is required"
                       : "no FILE given");
        usage(stderr);
        return 2;
    }
    if (tb_price_format_from_string(from, &f) != 0) {
        fprintf(stderr,
                "trnbench prices import: --from '%s': not get-products, spot-price-history, "
                "capacity-block-offerings, savings-plan-rates or vantage\n",
                from);
        return 2;
    }
    if (tb_pricing_load(&cat, prices, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench prices import: %s\n", err);
        return 2;
    }
    tb_utc_now(now, sizeof now);
    snprintf(today, sizeof today, "%.10s", now);
    memset(&im, 0, sizeof im);
    for (int i = optind; i < argc && rc == 0; i++) {
        int r = tb_price_import_file(&im, &cat, f, argv[i], today, err, sizeof err);
        if (r != 0) {
            fprintf(stderr, "trnbench prices import: %s\n", err);
            rc = tb_cli_exit_status(r);
        }
    }
    if (rc == 0) {
        int r = tb_price_import_write(&im, out, &added, err, sizeof err);
        if (r != 0) {
            fprintf(stderr, "trnbench prices import: %s\n", err);
            rc = tb_cli_exit_status(r);
        }
    }
    if (rc == 0) {
        char why[4096];
        tb_price_import_skipped(&im, why, sizeof why);
        printf("trnbench prices import: %zu row(s) read, %zu new in %s/prices.csv, %zu left out\n",
               im.nrows, added, out, im.skipped);
        if (*why)
            printf("left out:\n%s", why);
    }
    tb_price_import_release(&im);
    tb_pricing_release(&cat);
    return rc;
}

int tb_cmd_prices(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "import"))
        return import(argc - 1, argv + 1);
    fprintf(stderr, "trnbench prices: unknown subcommand '%s' (import)\n", argv[1]);
    return 2;
}
