/*
 * harness/cli/cmd_predict.c: `trnbench predict --scenarios FILE` and `trnbench validate
 * FILE`, the command line over the performance model (tb_model.h) and scenario tables
 * (tb_scenario.h). Both read the same table; predict writes it back with the
 * predictions, validate prints each row's error against its measured value and the
 * error per chip family (and per family, phase and precision) that tb_validate.h computes. Argument
 * handling and printing only: the statistics live in tb_validate.c.
 */
#include "cli.h"
#include "tb_coll_results.h"
#include "tb_collective.h"
#include "tb_cross.h"
#include "tb_csv.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_scenario.h"
#include "tb_timer.h"
#include "tb_util.h"
#include "tb_validate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void predict_usage(FILE *f)
{
    fputs("usage: trnbench predict --scenarios FILE.csv [--prices DIR] [--pricing P]\n"
          "                        [--region R] [--efficiency FILE]\n"
          "       trnbench predict --collective OP --bytes N --ranks R [--nodes N]\n"
          "                        --link L [--target TYPE] [--host-mem-gbyte-per-s X]\n"
          "                        [--host-net-gbit-per-s X] [--prices DIR]\n"
          "                        [--efficiency FILE]\n"
          "\n"
          "Predict every row of a scenario table (a workload on a target: model, phase,\n"
          "precision, shape, batch, layout; format in README.md) with the analytic\n"
          "performance model and write the table to standard output with the columns\n"
          "predicted (in the row's unit), model_version, why (when a row could not be\n"
          "predicted), bound (what limits it) and assumptions (layout, load, efficiency\n"
          "figures) added. A row that cannot be predicted never stops the others.\n"
          "`trnbench report FILE` reads the output: each predicted row a modeled result.\n"
          "\n"
          "  --scenarios FILE  the scenario table (RFC 4180 CSV with a header)\n"
          "  --prices DIR      chips.csv, instances.csv, prices.csv and efficiency.csv\n"
          "                    (default: pricing/ in the data folder)\n"
          "  --pricing P       purchase model of the USD figures (usd_to_train):\n"
          "                    on-demand (default), reserved-1y, reserved-3y,\n"
          "                    savings-plan-1y, savings-plan-3y, spot, capacity-block\n"
          "  --region R        region of those prices (default us-east-1)\n"
          "  --efficiency FILE a user's efficiency file (`trnbench calibrate`'s output): its\n"
          "                    rows replace the matching chips' rows of efficiency.csv\n"
          "One collective (the second form): its time, algbw and busbw as the model predicts\n"
          "them (nccl-tests' conventions), one CSV row with a header on standard output.\n"
          "  --collective OP   " TB_COLL_OPS "\n"
          "  --bytes N         the size (the whole buffer, as nccl-tests counts it)\n"
          "  --ranks R, --nodes N  ranks in all (one per chip), over N nodes (default 1)\n"
          "  --link L          " TB_COLL_LINKS "\n"
          "  --target TYPE     the instance type (nvlink, neuronlink, efa)\n"
          "  --host-mem-gbyte-per-s X  the host's memory bandwidth (shm, loopback, tcp;\n"
          "                    default: measured now, one thread's STREAM triad)\n" TB_COLL_NET_HELP
          "Exit status: 0 ok, 2 usage error or an unreadable file.\n",
          f);
}

static void validate_usage(FILE *f)
{
    fputs("usage: trnbench validate FILE.csv [--prices DIR] [--pricing P] [--region R]\n"
          "                         [--median-max PCT] [--p90-max PCT]\n"
          "                         [--coverage-min PCT] [--quiet]\n"
          "                         [--cross [--by source|round|family] [--jobs N]\n"
          "                          [--family-p90-max PCT] [--write FILE]]\n"
          "\n"
          "Predict every row of a scenario table that carries a measured value and print\n"
          "each row's error, then the median and 90th-percentile absolute percentage\n"
          "error per target family (chip) and overall, and how many rows it predicted,\n"
          "then the same per family, phase and precision.\n"
          "\n"
          "  --prices DIR        the catalogue and efficiency tables (predict's)\n"
          "  --pricing P, --region R  the prices of usd_to_train rows (predict's)\n"
          "  --median-max PCT    target for the overall median error (default 10)\n"
          "  --p90-max PCT       target for the overall p90 error (default 25)\n"
          "  --coverage-min PCT  share of rows that must be predicted (default 80)\n"
          "  --quiet             the summary only\n"
          "  --cross             cross-validate: choose the efficiency figures again with\n"
          "                      each fold's rows left out and predict them; the held-out\n"
          "                      errors beside the in-sample ones (targets: held-out)\n"
          "  --by KEY            a fold is one source (default), round or family (chip)\n"
          "  --jobs N            folds run in N processes (default: the CPUs online)\n"
          "  --family-p90-max PCT  no family with >= 10 held-out rows above it (default 35);\n"
          "                      with --cross --coverage-min defaults to 90\n"
          "  --write FILE        the per-row in-sample and held-out predictions as CSV\n"
          "                      (reports/validation/cross.csv is what reports use)\n"
          "Exit status: 0 the targets are met, 1 they are not, 2 usage or input error.\n",
          f);
}

/* Long options only (values past every character); "--opt value" or "--opt=value". */
enum {
    OPT_SCENARIOS = 256,
    OPT_PRICES,
    OPT_PRICING,
    OPT_REGION,
    OPT_MEDIAN_MAX,
    OPT_P90_MAX,
    OPT_COVERAGE_MIN,
    OPT_QUIET,
    OPT_CROSS,
    OPT_BY,
    OPT_JOBS,
    OPT_WRITE,
    OPT_FAMILY_P90_MAX,
    OPT_EFFICIENCY,
    OPT_COLLECTIVE,
    OPT_BYTES,
    OPT_RANKS,
    OPT_NODES,
    OPT_LINK,
    OPT_TARGET,
    OPT_HOST_BW,
    OPT_NET_BW,
};

static const struct option PREDICT_OPTS[] = {
    {"help", no_argument, NULL, 'h'},
    {"scenarios", required_argument, NULL, OPT_SCENARIOS},
    {"prices", required_argument, NULL, OPT_PRICES},
    {"pricing", required_argument, NULL, OPT_PRICING},
    {"purchase", required_argument, NULL, OPT_PRICING}, /* report's other name */
    {"region", required_argument, NULL, OPT_REGION},
    {"efficiency", required_argument, NULL, OPT_EFFICIENCY},
    {"collective", required_argument, NULL, OPT_COLLECTIVE},
    {"bytes", required_argument, NULL, OPT_BYTES},
    {"ranks", required_argument, NULL, OPT_RANKS},
    {"nodes", required_argument, NULL, OPT_NODES},
    {"link", required_argument, NULL, OPT_LINK},
    {"target", required_argument, NULL, OPT_TARGET},
    {"host-mem-gbyte-per-s", required_argument, NULL, OPT_HOST_BW},
    {TB_COLL_NET_OPT, required_argument, NULL, OPT_NET_BW},
    {NULL, 0, NULL, 0},
};

static const struct option VALIDATE_OPTS[] = {
    {"efficiency", required_argument, NULL, OPT_EFFICIENCY},
    {"help", no_argument, NULL, 'h'},
    {"prices", required_argument, NULL, OPT_PRICES},
    {"pricing", required_argument, NULL, OPT_PRICING},
    {"purchase", required_argument, NULL, OPT_PRICING},
    {"region", required_argument, NULL, OPT_REGION},
    {"median-max", required_argument, NULL, OPT_MEDIAN_MAX},
    {"p90-max", required_argument, NULL, OPT_P90_MAX},
    {"coverage-min", required_argument, NULL, OPT_COVERAGE_MIN},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"cross", no_argument, NULL, OPT_CROSS},
    {"by", required_argument, NULL, OPT_BY},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"write", required_argument, NULL, OPT_WRITE},
    {"family-p90-max", required_argument, NULL, OPT_FAMILY_P90_MAX},
    {NULL, 0, NULL, 0},
};

/* The tables and prices the model uses: --prices DIR, --pricing P, --region R. */
struct model_opts {
    const char *dir;        /* NULL: the data folder's pricing/ */
    const char *purchase;   /* NULL: on-demand */
    const char *region;     /* NULL: us-east-1 */
    const char *efficiency; /* NULL: ours only; else a user's rows over ours */
};

/* Take option c (OPT_PRICES, OPT_PRICING, OPT_REGION) into o. Returns 1 when it was one
 * of them, 0 when not, -1 when its value is refused (said: the folder that --pricing
 * named before it meant the purchase model). */
static int model_opt(struct model_opts *o, int c, const char *cmd)
{
    struct stat st;
    switch (c) {
    case OPT_PRICES:
        o->dir = optarg;
        return 1;
    case OPT_REGION:
        o->region = optarg;
        return 1;
    case OPT_EFFICIENCY:
        o->efficiency = optarg;
        return 1;
    case OPT_PRICING:
        if (stat(optarg, &st) == 0 && S_ISDIR(st.st_mode)) {
            fprintf(stderr,
                    "trnbench %s: --pricing '%s' is a folder: --pricing is the purchase model "
                    "now (on-demand, capacity-block, ...); name the tables' folder with "
                    "--prices '%s'\n",
                    cmd, optarg, optarg);
            return -1;
        }
        o->purchase = optarg;
        return 1;
    default:
        return 0;
    }
}

/* Load the catalogue and the model as o says, its prices checked. */
static int load_all(struct tb_pricing *pr, struct tb_model *m, const struct model_opts *o,
                    const char *cmd)
{
    char err[1024];
    if (tb_pricing_load(pr, o->dir, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench %s: %s\n", cmd, err);
        return -1;
    }
    if (tb_pricing_check_choice(pr, o->region, o->purchase, err, sizeof err) != 0 ||
        tb_model_load(m, pr, o->dir, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench %s: %s\n", cmd, err);
        tb_pricing_release(pr);
        return -1;
    }
    if (o->efficiency && tb_model_efficiency_overlay(m, o->efficiency, err, sizeof err) != 0) {
        tb_model_release(m);
        fprintf(stderr, "trnbench %s: %s\n", cmd, err);
        tb_pricing_release(pr);
        return -1;
    }
    m->region = o->region;
    m->purchase = o->purchase;
    return 0;
}

/* One collective's prediction (predict --collective), as a CSV row. */
struct coll_opts {
    const char *op, *link, *target;
    double bytes, host_bw, net_bw;
    long ranks, nodes;
};

static int predict_collective(const struct model_opts *mo, const struct coll_opts *co)
{
    struct tb_pricing pr;
    struct tb_model m;
    struct tb_coll_query q = {
        .bytes = co->bytes, .ranks = co->ranks, .nodes = co->nodes, .net_bw = co->net_bw};
    struct tb_coll_pred p;
    char err[1024], how[256] = "";
    int rc = 2;

    if (tb_coll_op_from_string(co->op, &q.op) != 0) {
        fprintf(stderr, "trnbench predict: --collective: '%s' is not one of %s\n", co->op,
                TB_COLL_OPS);
        return 2;
    }
    if (!co->link || tb_coll_link_from_string(co->link, &q.link) != 0) {
        fprintf(stderr, "trnbench predict: --link: '%s' is not one of %s\n",
                co->link ? co->link : "", TB_COLL_LINKS);
        return 2;
    }
    if (load_all(&pr, &m, mo, "predict") != 0)
        return 2;
    if (co->target && !(q.inst = tb_pricing_instance(&pr, co->target))) {
        snprintf(err, sizeof err, "--target: '%s' is not an instance type of instances.csv",
                 co->target);
        goto fail;
    }
    if (tb_coll_link_is_host(q.link) && !tb_coll_link_is_host_net(q.link, q.nodes) &&
        tb_coll_host_bw(co->host_bw, &q.host_bw, how, sizeof how, err, sizeof err) != 0)
        goto fail;
    if (tb_collective_predict(&m, &q, &p, err, sizeof err) != 0)
        goto fail;
    printf("collective,link,bytes,ranks,nodes,time_us,algbw_gbyte_per_s,busbw_gbyte_per_s,"
           "model_version,assumptions\n");
    printf("%s,%s,%.0f,%ld,%ld,%.6g,%.6g,%.6g,%s,", co->op, co->link, q.bytes, q.ranks, q.nodes,
           p.time_s * 1e6, p.algbw / 1e9, p.busbw / 1e9, TB_MODEL_VERSION);
    {
        char a[700];
        snprintf(a, sizeof a, "%s%s%s", p.why, *how ? "; host memory bandwidth " : "", how);
        tb_csv_put_text(stdout, a, '\n');
    }
    rc = fflush(stdout) != 0;
    goto out;
fail:
    fprintf(stderr, "trnbench predict: %s\n", err);
out:
    tb_model_release(&m);
    tb_pricing_release(&pr);
    return rc;
}

int tb_cmd_predict(int argc, char **argv)
{
    struct coll_opts co = {NULL, NULL, NULL, 0, 0, 0, 0, 1};
    const char *file = NULL;
    struct model_opts mo = {NULL, NULL, NULL, NULL};
    struct tb_pricing pr;
    struct tb_model m;
    struct tb_scenarios s;
    char err[1024];
    int rc = 2, state = 0, c, taken;

    while ((c = tb_cli_getopt("predict", argc, argv, PREDICT_OPTS, &state)) != -1) {
        if ((taken = model_opt(&mo, c, "predict")) != 0) {
            if (taken < 0)
                return 2;
            continue;
        }
        switch (c) {
        case 'h':
            predict_usage(stdout);
            return 0;
        case OPT_SCENARIOS:
            file = optarg;
            break;
        case OPT_COLLECTIVE:
            co.op = optarg;
            break;
        case OPT_LINK:
            co.link = optarg;
            break;
        case OPT_TARGET:
            co.target = optarg;
            break;
        case OPT_BYTES:
        case OPT_HOST_BW:
            if (tb_parse_double(optarg, c == OPT_BYTES ? 1 : 0.001, c == OPT_BYTES ? 1e15 : 1e5,
                                c == OPT_BYTES ? &co.bytes : &co.host_bw) != 0) {
                fprintf(stderr, "trnbench predict: --%s: not a %s: '%s'\n",
                        tb_cli_opt_name(PREDICT_OPTS, c),
                        c == OPT_BYTES ? "size in bytes" : "bandwidth in GB/s", optarg);
                return 2;
            }
            if (c == OPT_HOST_BW)
                co.host_bw *= 1e9;
            break;
        case OPT_NET_BW:
            if (tb_coll_net_bw_arg("predict", optarg, &co.net_bw) != 0)
                return 2;
            break;
        case OPT_RANKS:
        case OPT_NODES:
            if (tb_parse_long(optarg, 1, 10000000, c == OPT_RANKS ? &co.ranks : &co.nodes) != 0) {
                fprintf(stderr, "trnbench predict: --%s: not a count: '%s'\n",
                        tb_cli_opt_name(PREDICT_OPTS, c), optarg);
                return 2;
            }
            break;
        default: /* '?': tb_cli_getopt said what is wrong */
            predict_usage(stderr);
            return 2;
        }
    }
    if (co.op) {
        if (file || optind < argc || !(co.bytes > 0) || co.ranks < 1) {
            fprintf(stderr, "trnbench predict: --collective takes --bytes, --ranks and --link, "
                            "no scenario table\n");
            predict_usage(stderr);
            return 2;
        }
        return predict_collective(&mo, &co);
    }
    if (optind < argc) {
        fprintf(stderr,
                "trnbench predict: unexpected argument '%s' (the table is --scenarios FILE)\n",
                argv[optind]);
        predict_usage(stderr);
        return 2;
    }
    if (!file) {
        fprintf(stderr, "trnbench predict: --scenarios FILE is required\n");
        predict_usage(stderr);
        return 2;
    }
    if (load_all(&pr, &m, &mo, "predict") != 0)
        return 2;
    if (tb_scenarios_predict(&s, file, &m, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench predict: %s\n", err);
        goto out;
    }
    if (tb_scenarios_write(&s, stdout) != 0 || fflush(stdout) != 0) {
        fprintf(stderr, "trnbench predict: cannot write to standard output\n");
        rc = 1;
    } else {
        rc = 0;
    }
    tb_scenarios_release(&s);
out:
    tb_model_release(&m);
    tb_pricing_release(&pr);
    return rc;
}

/* ---- validate ---- */

/* One group's line after its name columns: rows, complete, predicted, median% and p90%. */
static void print_counts(const struct tb_validate_group *g)
{
    if (!isnan(g->median))
        printf(" %5zu %9zu %9zu %9.1f %9.1f\n", g->rows, g->complete, g->n, g->median, g->p90);
    else
        printf(" %5zu %9zu %9zu %9s %9s\n", g->rows, g->complete, g->n, "-", "-");
}

/* The width of the family column: 20, or the longest family name. */
static int family_width(const struct tb_validation *v)
{
    size_t w = 20;
    for (size_t i = 0; i < v->ngroups; i++)
        if (strlen(v->groups[i].family) > w)
            w = strlen(v->groups[i].family);
    return (int)w;
}

static void print_group(const struct tb_validate_group *g, const char *name, int width)
{
    printf("%-*s", width, name);
    print_counts(g);
}

/* The errors per (family, phase, precision): family by family in the family table's
 * order, each family's groups in the order they first appear; an empty phase or
 * precision prints as "-". */
static void print_precisions(const struct tb_validation *v)
{
    printf("\nper family, phase and precision\n");
    int width = family_width(v);
    printf("%-*s %-14s %-9s %5s %9s %9s %9s %9s\n", width, "family", "phase", "precision", "rows",
           "complete", "predicted", "median%", "p90%");
    for (size_t f = 0; f < v->ngroups; f++)
        for (size_t i = 0; i < v->nprecisions; i++) {
            const struct tb_validate_group *g = &v->precisions[i];
            if (strcmp(g->family, v->groups[f].family))
                continue;
            printf("%-*s %-14s %-9s", width, g->family[0] ? g->family : "(unknown target)",
                   g->phase[0] ? g->phase : "-", g->precision[0] ? g->precision : "-");
            print_counts(g);
        }
}

/* Each row with a measured value: its prediction and signed error, or why there is none. */
static void print_rows(const struct tb_scenarios *s)
{
    printf("%-6s %-16s %-15s %-8s %-5s %-28s %12s %12s %8s  %s\n", "id", "target", "model", "phase",
           "prec", "metric", "value", "predicted", "error%", "why / bound");
    for (size_t r = 0; r < s->nrows; r++) {
        const struct tb_scenario_result *x = &s->res[r];
        const char *id = tb_csv_field(&s->csv, r, "id");
        if (!x->has_value)
            continue;
        if (!isnan(x->predicted))
            printf("%-6s %-16s %-15s %-8s %-5s %-28s %12.5g %12.5g %+8.1f  %s\n", id,
                   tb_csv_field(&s->csv, r, "target"), tb_csv_field(&s->csv, r, "model"),
                   tb_csv_field(&s->csv, r, "phase"), tb_csv_field(&s->csv, r, "precision"),
                   tb_csv_field(&s->csv, r, "metric"), x->value, x->predicted,
                   (x->predicted - x->value) / x->value * 100.0, x->p.bound);
        else
            printf("%-6s %-16s %-15s %-8s %-5s %-28s %12.5g %12s %8s  %s\n", id,
                   tb_csv_field(&s->csv, r, "target"), tb_csv_field(&s->csv, r, "model"),
                   tb_csv_field(&s->csv, r, "phase"), tb_csv_field(&s->csv, r, "precision"),
                   tb_csv_field(&s->csv, r, "metric"), x->value, "-", "-", x->why);
    }
}

/* One line of the cross-validation tables: name, rows, complete, then in-sample and
 * held-out predicted, median and p90. */
static void print_cross_line(const char *name, int width, const struct tb_validate_group *in,
                             const struct tb_validate_group *out)
{
    printf("%-*s %5zu %9zu", width, name, in->rows, in->complete);
    if (!isnan(in->median))
        printf(" %9zu %8.1f %8.1f", in->n, in->median, in->p90);
    else
        printf(" %9zu %8s %8s", in->n, "-", "-");
    if (out && !isnan(out->median))
        printf(" %9zu %8.1f %8.1f\n", out->n, out->median, out->p90);
    else
        printf(" %9zu %8s %8s\n", out ? out->n : 0, "-", "-");
}

/* validate --cross's progress on stderr: a line every 30 s (a run takes minutes) */
static void cross_progress(void *ctx, size_t done, size_t total)
{
    uint64_t *t0 = ctx, now = tb_timer_now_ns();
    static uint64_t last;
    if (!last)
        last = *t0;
    if (done >= total || now - last < 30000000000ull)
        return;
    last = now;
    fprintf(stderr, "trnbench validate: %zu of %zu folds done, %.0f s in\n", done, total,
            (double)(now - *t0) * 1e-9);
}

/* validate --cross: the folds, the held-out errors beside the in-sample ones per family
 * and per family and phase, the figures' spread over the folds, the targets (held out). */
static int validate_cross(const struct tb_scenarios *s, struct tb_model *m, const char *file,
                          enum tb_cross_by by, int jobs, const struct tb_validate_targets *t,
                          double family_p90_max, const char *write_path, bool quiet)
{
    struct tb_cross x;
    char err[1024], why[256];
    int rc, width;
    bool ok;
    uint64_t t0 = tb_timer_now_ns();
    if ((rc = tb_cross_run(&x, s, m, by, jobs, cross_progress, &t0, err, sizeof err)) != TB_OK) {
        fprintf(stderr, "trnbench validate: %s\n", err);
        return tb_cli_exit_status(rc);
    }
    if (write_path) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f || tb_cross_write(&x, s, f) != 0 || fclose(f) != 0 ||
            tb_write_file_atomic(write_path, buf, len, err, sizeof err) != 0) {
            fprintf(stderr, "trnbench validate: --write %s: %s\n", write_path,
                    f ? err : strerror(errno));
            free(buf);
            tb_cross_release(&x);
            return 1;
        }
        free(buf);
    }
    if (!quiet) {
        printf("%-6s %-16s %-15s %-8s %-28s %12s %12s %8s %12s %8s  %s\n", "id", "target", "model",
               "phase", "metric", "value", "in-sample", "error%", "held-out", "error%", "fold");
        for (size_t r = 0; r < s->nrows; r++) {
            const struct tb_cross_row *c = &x.row[r];
            double v = s->res[r].value;
            if (!s->res[r].has_value)
                continue;
            printf("%-6s %-16s %-15s %-8s %-28s %12.5g", tb_csv_field(&s->csv, r, "id"),
                   tb_csv_field(&s->csv, r, "target"), tb_csv_field(&s->csv, r, "model"),
                   tb_csv_field(&s->csv, r, "phase"), tb_csv_field(&s->csv, r, "metric"), v);
            if (!isnan(c->in_sample))
                printf(" %12.5g %+8.1f", c->in_sample, (c->in_sample - v) / v * 100);
            else
                printf(" %12s %8s", "-", "-");
            if (c->refit && !isnan(c->held_out))
                printf(" %12.5g %+8.1f", c->held_out, (c->held_out - v) / v * 100);
            else
                printf(" %12s %8s", "-", c->refit ? "-" : "not refit");
            printf("  %s\n", c->fold >= 0 ? x.fold[c->fold] : "");
        }
    }
    printf("\n%s on %s, cross-validated: the efficiency figures chosen again without one %s\n"
           "at a time (%zu folds), that %s's rows predicted; absolute percentage errors\n",
           TB_MODEL_VERSION, file, tb_cross_by_name(by), x.nfolds, tb_cross_by_name(by));
    width = family_width(&x.in);
    printf("%-*s %5s %9s %9s %8s %8s %9s %8s %8s\n", width, "", "", "", "in-sample", "", "",
           "held-out", "", "");
    printf("%-*s %5s %9s %9s %8s %8s %9s %8s %8s\n", width, "family", "rows", "complete",
           "predicted", "median%", "p90%", "predicted", "median%", "p90%");
    for (size_t i = 0; i < x.in.ngroups; i++) {
        const struct tb_validate_group *g = &x.in.groups[i];
        print_cross_line(g->family[0] ? g->family : "(unknown target)", width, g,
                         tb_validate_family(&x.out, g->family));
    }
    print_cross_line("overall", width, &x.in.all, &x.out.all);
    if (x.in.plain.rows < x.in.all.rows)
        print_cross_line("dense, no serving term", width, &x.in.plain, &x.out.plain);
    if (x.not_refit)
        printf("%zu rows not held out: no row outside their fold constrains their chips' "
               "figures\n",
               x.not_refit);
    ok = tb_cross_met(&x, t, family_p90_max, why, sizeof why);
    printf("targets (held out): median <= %g%% (%.1f), p90 <= %g%% (%.1f), no family with >= %d "
           "rows above p90 %g%%, predicted >= %g%% of the rows with a complete shape (%.0f%%): "
           "%s%s%s\n",
           t->median_max, x.out.all.median, t->p90_max, x.out.all.p90, TB_VALIDATE_MIN_ROWS,
           family_p90_max, t->coverage_min,
           x.in.all.complete ? 100.0 * (double)x.out.all.n / (double)x.in.all.complete : 0.0,
           ok ? "met" : "NOT met (", ok ? "" : why, ok ? "" : ")");
    printf("\nper family and phase\n");
    printf("%-*s %-14s %5s %9s %9s %8s %8s %9s %8s %8s\n", width, "family", "phase", "rows",
           "complete", "predicted", "median%", "p90%", "predicted", "median%", "p90%");
    for (size_t f = 0; f < x.in.ngroups; f++)
        for (size_t i = 0; i < x.in.nphases; i++) {
            const struct tb_validate_group *g = &x.in.phases[i];
            char name[128];
            if (strcmp(g->family, x.in.groups[f].family))
                continue;
            snprintf(name, sizeof name, "%-*s %-14s", width, g->family[0] ? g->family : "-",
                     g->phase[0] ? g->phase : "-");
            print_cross_line(name, width + 15, g,
                             tb_validate_family_phase(&x.out, g->family, g->phase));
        }
    printf("\nthe figures chosen over the folds (table: efficiency.csv's value; rows: those it "
           "moves)\n");
    printf("%-36s %10s %10s %10s %7s %7s %7s\n", "figure", "table", "least", "most", "rows",
           "folds", "moved");
    for (size_t i = 0; i < x.nparams; i++) {
        const struct tb_cross_param *p = &x.param[i];
        if (p->folds_refit == 0 || p->rows == 0)
            continue;
        printf("%-36s %10.4g %10.4g %10.4g %7zu %7ld %7ld\n", p->name, p->table, p->lo, p->hi,
               p->rows, p->folds_refit, p->folds_moved);
    }
    tb_cross_release(&x);
    return ok ? 0 : 1;
}

int tb_cmd_validate(int argc, char **argv)
{
    const char *file = NULL;
    struct model_opts mo = {NULL, NULL, NULL, NULL};
    struct tb_validate_targets t;
    struct tb_validation v;
    bool quiet = false, ok, cross = false, coverage_given = false;
    const char *write_path = NULL;
    int by = TB_CROSS_SOURCE;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    double family_p90_max = 35;
    struct tb_pricing pr;
    struct tb_model m;
    struct tb_scenarios s;
    char err[1024];
    int rc = 2, state = 0, c, taken;

    tb_validate_targets_init(&t);
    while ((c = tb_cli_getopt("validate", argc, argv, VALIDATE_OPTS, &state)) != -1) {
        double *target = c == OPT_MEDIAN_MAX     ? &t.median_max
                         : c == OPT_P90_MAX      ? &t.p90_max
                         : c == OPT_COVERAGE_MIN ? &t.coverage_min
                                                 : NULL;
        if ((taken = model_opt(&mo, c, "validate")) != 0) {
            if (taken < 0)
                return 2;
            continue;
        }
        switch (c) {
        case 'h':
            validate_usage(stdout);
            return 0;
        case OPT_QUIET:
            quiet = true;
            break;
        case OPT_CROSS:
            cross = true;
            break;
        case OPT_BY:
            if ((by = tb_cross_by_parse(optarg)) < 0) {
                fprintf(stderr, "trnbench validate: --by: source, round or family, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case OPT_JOBS:
            if (tb_parse_long(optarg, 1, 64, &jobs) != 0) {
                fprintf(stderr, "trnbench validate: --jobs: a count from 1 to 64, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case OPT_WRITE:
            write_path = optarg;
            break;
        case OPT_FAMILY_P90_MAX:
            if (tb_parse_double(optarg, 0, 1e6, &family_p90_max) != 0) {
                fprintf(stderr, "trnbench validate: --family-p90-max: not a percentage: '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case OPT_COVERAGE_MIN:
            coverage_given = true;
            /* fall through */
        case OPT_MEDIAN_MAX:
        case OPT_P90_MAX:
            if (tb_parse_double(optarg, 0, 1e6, target) != 0) {
                fprintf(stderr, "trnbench validate: --%s: not a percentage: '%s'\n",
                        tb_cli_opt_name(VALIDATE_OPTS, c), optarg);
                return 2;
            }
            break;
        default: /* '?': tb_cli_getopt said what is wrong */
            validate_usage(stderr);
            return 2;
        }
    }
    /* one operand, wherever it was among the options */
    if (optind < argc)
        file = argv[optind];
    if (optind + 1 < argc) {
        fprintf(stderr, "trnbench validate: one scenario file, not several: '%s'\n",
                argv[optind + 1]);
        validate_usage(stderr);
        return 2;
    }
    if (!file) {
        fprintf(stderr, "trnbench validate: no scenario file given\n");
        validate_usage(stderr);
        return 2;
    }
    if (load_all(&pr, &m, &mo, "validate") != 0)
        return 2;
    if (tb_scenarios_predict(&s, file, &m, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench validate: %s\n", err);
        goto out;
    }
    if ((rc = tb_validate_compute(&v, &s, err, sizeof err)) != TB_OK) {
        fprintf(stderr, "trnbench validate: %s\n", err);
        rc = tb_cli_exit_status(rc);
        goto done;
    }
    if (write_path && !cross) {
        fprintf(stderr, "trnbench validate: --write goes with --cross\n");
        rc = 2;
        goto val;
    }
    if (cross) {
        if (!coverage_given) /* the held-out target (issue 33): 90% of the complete rows */
            t.coverage_min = 90;
        rc = validate_cross(&s, &m, file, (enum tb_cross_by)by, (int)(jobs < 1 ? 1 : jobs), &t,
                            family_p90_max, write_path, quiet);
        goto val;
    }
    if (!quiet)
        print_rows(&s);
    printf("\n%s on %s: absolute percentage error of the predicted rows\n", TB_MODEL_VERSION, file);
    printf("%-*s %5s %9s %9s %9s %9s\n", family_width(&v), "family", "rows", "complete",
           "predicted", "median%", "p90%");
    for (size_t i = 0; i < v.ngroups; i++)
        print_group(&v.groups[i], v.groups[i].family[0] ? v.groups[i].family : "(unknown target)",
                    family_width(&v));
    print_group(&v.all, "overall", family_width(&v));
    if (v.plain.rows < v.all.rows)
        print_group(&v.plain, "dense, no serving term", family_width(&v));
    ok = tb_validate_met(&v, &t);
    printf("targets: median <= %g%% (%.1f), p90 <= %g%% (%.1f), predicted >= %g%% of the "
           "rows with a complete shape (%.0f%%): %s\n",
           t.median_max, v.all.median, t.p90_max, v.all.p90, t.coverage_min, v.coverage,
           ok ? "met" : "NOT met");
    print_precisions(&v);
    rc = ok ? 0 : 1;
val:
    tb_validate_release(&v);
done:
    tb_scenarios_release(&s);
out:
    tb_model_release(&m);
    tb_pricing_release(&pr);
    return rc;
}
