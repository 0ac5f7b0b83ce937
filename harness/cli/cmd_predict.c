/*
 * harness/cli/cmd_predict.c: `trnbench predict --scenarios FILE` and `trnbench validate
 * FILE`, the command line over the performance model (tb_model.h) and scenario tables
 * (tb_scenario.h). Both read the same table; predict writes it back with the
 * predictions, validate prints each row's error against its measured value and the
 * error per chip family (and per family, phase and precision) that tb_validate.h computes. Argument
 * handling and printing only: the statistics live in tb_validate.c.
 */
#include "cli.h"
#include "cli_opt.h"
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

/* The tables and prices the model uses: --prices DIR, --pricing P, --region R. */
struct model_opts {
    const char *dir;        /* NULL: the data folder's pricing/ */
    const char *purchase;   /* NULL: on-demand */
    const char *region;     /* NULL: us-east-1 */
    const char *efficiency; /* NULL: ours only; else a user's rows over ours */
};

/* --pricing P (and its other name --purchase): the purchase model into the option's dst (const char
 * *). A folder is refused: --pricing named the tables' folder before it meant the purchase model.
 */
static int take_purchase(const struct tb_opt *o, const char *v, char *err, size_t errlen)
{
    struct stat st;
    if (stat(v, &st) == 0 && S_ISDIR(st.st_mode))
        return tb_err(err, errlen,
                      "'%s' is a folder: --pricing is the purchase model now (on-demand, "
                      "capacity-block, ...); name the tables' folder with --prices '%s'",
                      v, v);
    *(const char **)o->dst = v;
    return 0;
}

/* The options of struct model_opts, for a command's table. */
#define MODEL_OPTS(mo)                                                                             \
    TB_OPT_STR("prices", &(mo).dir), TB_OPT_FN("pricing", take_purchase, &(mo).purchase),          \
        TB_OPT_FN("purchase", take_purchase, &(mo).purchase), /* report's other name */            \
        TB_OPT_STR("region", &(mo).region), TB_OPT_STR("efficiency", &(mo).efficiency)

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
    double host_gbyte = 0, net_gbit = 0;
    const struct tb_opt opts[] = {
        TB_OPT_STR("scenarios", &file),
        MODEL_OPTS(mo),
        TB_OPT_STR("collective", &co.op),
        TB_OPT_DOUBLE("bytes", &co.bytes, 1, 1e15),
        TB_OPT_LONG("ranks", &co.ranks, 1, 10000000),
        TB_OPT_LONG("nodes", &co.nodes, 1, 10000000),
        TB_OPT_STR("link", &co.link),
        TB_OPT_STR("target", &co.target),
        TB_OPT_DOUBLE("host-mem-gbyte-per-s", &host_gbyte, 0.001, 1e5),
        TB_OPT_DOUBLE(TB_COLL_NET_OPT, &net_gbit, TB_COLL_NET_GBIT_MIN, TB_COLL_NET_GBIT_MAX),
        TB_OPT_END,
    };
    int rc;

    if ((rc = tb_cli_parse("predict", argc, argv, opts, predict_usage)) != TB_CLI_GO)
        return rc;
    rc = 2;
    co.host_bw = host_gbyte * 1e9; /* bytes/s */
    co.net_bw = net_gbit * 1e9 / 8;
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

/* --by: *(int *)dst = what cross-validation leaves out (enum tb_cross_by). */
static int take_by(const struct tb_opt *o, const char *v, char *err, size_t errlen)
{
    int by = tb_cross_by_parse(v);
    if (by < 0)
        return tb_err(err, errlen, "'%s' is not source, round or family", v);
    *(int *)o->dst = by;
    return 0;
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
    const struct tb_opt opts[] = {
        MODEL_OPTS(mo),
        TB_OPT_DOUBLE("median-max", &t.median_max, 0, 1e6),
        TB_OPT_DOUBLE("p90-max", &t.p90_max, 0, 1e6),
        /* seen: without it, --cross sets its own floor */
        {"coverage-min", TB_OPT_KIND_DOUBLE, &t.coverage_min, 0, 1e6, NULL, NULL, &coverage_given},
        TB_OPT_FLAG("quiet", &quiet),
        TB_OPT_FLAG("cross", &cross),
        TB_OPT_FN("by", take_by, &by),
        TB_OPT_LONG("jobs", &jobs, 1, 64),
        TB_OPT_STR("write", &write_path),
        TB_OPT_DOUBLE("family-p90-max", &family_p90_max, 0, 1e6),
        TB_OPT_END,
    };
    int rc;

    tb_validate_targets_init(&t);
    if ((rc = tb_cli_parse("validate", argc, argv, opts, validate_usage)) != TB_CLI_GO)
        return rc;
    rc = 2;
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
