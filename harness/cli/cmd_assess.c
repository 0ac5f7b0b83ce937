/*
 * harness/cli/cmd_assess.c: `trnbench assess FILE --out DIR`, the migration assessment
 * (tb_assess.h) written as DIR/assessment.csv, assessment.md and assessment.html. The
 * whole file is checked first; on an input error (exit 2) nothing is written. The three
 * outputs are replaced together: a failure to write any of them (a full disk: exit 1,
 * the file named) leaves the three that were there.
 */
#include "cli.h"
#include "cli_opt.h"
#include "tb_assess.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench assess FILE.csv --out DIR [--min-monthly-usd X] [--claim-low F]\n"
          "                       [--claim-high F] [--price-swing F] [--prices DIR]\n"
          "\n"
          "Assess moving each workload of FILE (a CSV: name, model, phase, load,\n"
          "latency targets, current instance and purchase model, engineering cost; format\n"
          "in reports/examples/README.md; an unknown column is an error) to every\n"
          "catalogued instance type, each on the smallest layout of 1 to 64 instances that\n"
          "holds the model (performance model): serving as an always-on fleet from\n"
          "Little's law (requests in flight = rate x end-to-end latency, over the requests\n"
          "a replica holds within the targets) and the token throughput, the bound said;\n"
          "training as cluster-hours (tokens / the cluster's tokens/s) paid by the hour,\n"
          "or as reserved clusters for the month where cheaper. Then the monthly cost,\n"
          "the saving against what the team pays now and, apart, against the current\n"
          "fleet bought the same way (purchase model, region), break-even on the engineering cost, "
          "the saving's sensitivity to\n"
          "prices and to the model's validation error, and the risks to check.\n"
          "Purchase models as AWS sells them: always-on fleets on-demand, reserved or\n"
          "savings plans (never Capacity Blocks, which end; spot only with the file's\n"
          "spot_reserve); training also by the hour or as Capacity Blocks of whole days.\n"
          "Prints one verdict per workload (keeping the current hardware bought another\n"
          "way first, where that beats every move) and writes DIR/assessment.csv,\n"
          "assessment.md and assessment.html.\n"
          "\n"
          "  --min-monthly-usd X  under this spend a migration rarely pays (default 10000)\n"
          "  --claim-low F        savings usually claimed, low end (default 0.30)\n"
          "  --claim-high F       and high end (default 0.50)\n"
          "  --price-swing F      price sensitivity (default 0.20)\n"
          "  --prices DIR         chips, instances, prices and efficiency tables\n"
          "Exit status: 0 ok, 1 the outputs could not be written, 2 usage or input error.\n",
          f);
}

/* Render the three outputs into memory, then replace DIR/assessment.csv, .md and .html
 * together (tb_write_files_atomic): all three temporaries are written and synced before
 * any is renamed, so a full disk or a kill while writing leaves the old three. */
static int emit(const char *dir, const struct tb_assessment *as, const struct tb_assess_opts *o,
                char *err, size_t errlen)
{
    static const char *const names[3] = {"assessment.csv", "assessment.md", "assessment.html"};
    char path[3][PATH_MAX], *buf[3] = {NULL, NULL, NULL};
    size_t len[3] = {0, 0, 0};
    struct tb_file_out f[3];
    int rc = -1;
    for (int k = 0; k < 3; k++) {
        FILE *m = open_memstream(&buf[k], &len[k]);
        int r;
        if (!m) {
            tb_err(err, errlen, "out of memory");
            goto out;
        }
        r = k == 0   ? tb_assess_write_csv(as, m)
            : k == 1 ? tb_assess_write_md(as, o, m)
                     : tb_assess_write_html(as, o, m);
        if (fclose(m) != 0 || r != 0) {
            tb_err(err, errlen, "cannot format %s", names[k]);
            goto out;
        }
        if ((size_t)snprintf(path[k], sizeof path[k], "%s/%s", dir, names[k]) >= sizeof path[k]) {
            tb_err(err, errlen, "path too long: '%s'", dir);
            goto out;
        }
        f[k] = (struct tb_file_out){path[k], buf[k], len[k]};
    }
    rc = tb_write_files_atomic(f, 3, err, errlen);
out:
    for (int k = 0; k < 3; k++)
        free(buf[k]);
    return rc;
}

int tb_cmd_assess(int argc, char **argv)
{
    struct tb_assess_opts o;
    struct tb_pricing pr;
    struct tb_model m;
    struct tb_assessment as;
    const char *file = NULL, *out = NULL, *pricing = NULL;
    char err[1024];
    int rc = 2, r;
    const struct tb_opt opts[] = {
        TB_OPT_STR("out", &out),
        TB_OPT_STR("prices", &pricing),
        TB_OPT_DOUBLE("min-monthly-usd", &o.min_monthly_usd, 0, 1e12),
        TB_OPT_DOUBLE("claim-low", &o.claim_low, 0, 1e12),
        TB_OPT_DOUBLE("claim-high", &o.claim_high, 0, 1e12),
        TB_OPT_DOUBLE("price-swing", &o.price_swing, 0, 1e12),
        TB_OPT_END,
    };

    tb_assess_opts_init(&o);
    if ((r = tb_cli_parse("assess", argc, argv, opts, usage)) != TB_CLI_GO)
        return r;
    /* one operand, wherever it was among the options */
    if (optind < argc)
        file = argv[optind];
    if (optind + 1 < argc) {
        fprintf(stderr, "trnbench assess: one assessment file, not several: '%s'\n",
                argv[optind + 1]);
        usage(stderr);
        return 2;
    }
    if (!file || !out) {
        fprintf(stderr, "trnbench assess: %s\n",
                !file ? "no assessment file given" : "--out DIR is required");
        usage(stderr);
        return 2;
    }
    if (o.claim_low > o.claim_high || o.price_swing >= 1) {
        fprintf(stderr, "trnbench assess: --claim-low above --claim-high, or --price-swing >= 1\n");
        return 2;
    }
    if (tb_pricing_load(&pr, pricing, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench assess: %s\n", err);
        return 2;
    }
    if (tb_model_load(&m, &pr, pricing, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench assess: %s\n", err);
        tb_pricing_release(&pr);
        return 2;
    }
    r = tb_assess_run(&as, file, &m, &o, err, sizeof err);
    if (r != TB_OK) {
        fprintf(stderr, "trnbench assess: %s\n", err);
        rc = tb_cli_exit_status(r);
        goto out;
    }
    if (tb_mkdir_p(out, err, sizeof err) != 0 || emit(out, &as, &o, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench assess: %s\n", err);
        rc = 1;
    } else {
        /* the answer on the terminal: one verdict a workload, then where the report is */
        for (size_t w = 0; w < as.csv.nrows; w++)
            printf("%s: %s\n", tb_csv_field(&as.csv, w, "name"), as.verdict[w]);
        printf("trnbench assess: %zu workload%s, %zu candidate rows; wrote %s/assessment.md, "
               "assessment.html and assessment.csv\n",
               as.csv.nrows, as.csv.nrows == 1 ? "" : "s", as.nrows, out);
        rc = 0;
    }
    tb_assess_release(&as);
out:
    tb_model_release(&m);
    tb_pricing_release(&pr);
    return rc;
}
