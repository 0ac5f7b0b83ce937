/* tests/unit/report.c: `trnbench report` on tests/data/report_results.csv: the cost
 * figures against hand-computed values, the files it writes, a self-contained HTML,
 * bad input (exit 2, nothing written), gnuplot missing (report with a note) and gnuplot
 * failing (exit 1, the previous report left whole). */
#include "cli.h"
#include "tb_cost.h"
#include "tb_csv.h"
#include "tb_plot.h"
#include "tb_report.h"
#include "tb_results.h"
#include "tb_util.h"
#include "tb_vocab.h"

#include "tests/tap/basic.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char *slurp(const char *dir, const char *name, size_t *len)
{
    char path[4096], err[512], *data = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (tb_read_file(path, &data, &n, err, sizeof err) != 0)
        return NULL;
    if (len)
        *len = n;
    return data;
}

static bool exists(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return tb_file_exists(path);
}

/* Entries in dir, and whether any is a leftover scratch file. */
static int entries(const char *dir, bool *scratch)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    *scratch = false;
    if (!d)
        return -1;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        n++;
        *scratch |= !strncmp(e->d_name, ".report.tmp", 11);
    }
    closedir(d);
    return n;
}

/* Remove the files a report writes, and the folder. */
static void clean(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue; /* .report.files is the report's too */
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* The cost.csv row for a throughput metric on a target. */
static long cost_row(const struct tb_csv_table *t, const char *metric, const char *target)
{
    for (size_t r = 0; r < t->nrows; r++)
        if (!strcmp(tb_csv_field(t, r, "throughput_metric"), metric) &&
            !strcmp(tb_csv_field(t, r, "target"), target))
            return (long)r;
    return -1;
}

static double cost_of(const struct tb_csv_table *t, long r, const char *col)
{
    double v = NAN;
    if (r >= 0)
        tb_parse_double(tb_csv_field(t, (size_t)r, col), -1e300, 1e300, &v);
    return v;
}

/* The cost metric a throughput metric feeds (tb_vocab.h), or NULL. */
static const char *cost_metric(const char *metric)
{
    const struct tb_metric *m = tb_metric_find(metric);
    return m ? m->cost : NULL;
}

/* tb_cmd_report with its stdout and stderr silenced: its messages are checked through
 * files and exit statuses, and its stdout would mix with the TAP stream. */
static int run_cmd(const char *out, const char *results, const char *extra1, const char *extra2)
{
    char *argv[8];
    int argc = 0, rc, saved[2] = {-1, -1}, null = open("/dev/null", O_WRONLY);
    argv[argc++] = (char *)"report";
    argv[argc++] = (char *)"--out";
    argv[argc++] = (char *)out;
    if (extra1)
        argv[argc++] = (char *)extra1;
    if (extra2)
        argv[argc++] = (char *)extra2;
    argv[argc++] = (char *)results;
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    for (int fd = 1; fd <= 2 && null >= 0; fd++) {
        saved[fd - 1] = dup(fd);
        dup2(null, fd);
    }
    rc = tb_cmd_report(argc, argv);
    fflush(stdout);
    fflush(stderr);
    for (int fd = 1; fd <= 2; fd++)
        if (saved[fd - 1] >= 0) {
            dup2(saved[fd - 1], fd);
            close(saved[fd - 1]);
        }
    if (null >= 0)
        close(null);
    return rc;
}

/* A decode row of model at batch 8, 1024 tokens in, 128 out, bf16, on one instance of
 * target: its throughput value (tokens/s) as provenance from executor. */
static void decode_row(struct tb_result_row *r, const char *run_id, const char *provenance,
                       const char *target, const char *executor, const char *model,
                       const char *value)
{
    memset(r, 0, sizeof *r);
    r->col[TB_COL_RUN_ID] = run_id;
    r->col[TB_COL_PROVENANCE] = provenance;
    r->col[TB_COL_TARGET] = target;
    r->col[TB_COL_INSTANCES] = "1";
    r->col[TB_COL_EXECUTOR] = executor;
    r->col[TB_COL_MODEL] = model;
    r->col[TB_COL_PHASE] = "decode";
    r->col[TB_COL_PRECISION] = "bf16";
    r->col[TB_COL_BATCH] = "8";
    r->col[TB_COL_SEQ_IN] = "1024";
    r->col[TB_COL_SEQ_OUT] = "128";
    r->col[TB_COL_METRIC] = "decode_tokens_per_s";
    r->col[TB_COL_VALUE] = value;
    r->col[TB_COL_UNIT] = "tokens/s";
}

/* Append n rows to a fresh results file res, write the report of it into out with the
 * tables of pricing, and read its cost.csv into *t (bails out when any of it fails). */
static void report_rows(const char *res, const struct tb_result_row *rows, size_t n,
                        const char *out, const char *pricing, const char *what,
                        struct tb_csv_table *t)
{
    struct tb_report_opts o;
    const char *files[1] = {res};
    char err[1024] = "", costs[4200];
    remove(res);
    if (tb_results_append(res, rows, n, err, sizeof err) != 0)
        bail("%s", err);
    clean(out);
    tb_report_opts_init(&o);
    o.results = files;
    o.nresults = 1;
    o.out_dir = out;
    o.pricing_dir = pricing;
    IS_INT(TB_OK, tb_report_write(&o, NULL, err, sizeof err), "%s: report %s", what, err);
    snprintf(costs, sizeof costs, "%s/cost.csv", out);
    if (tb_csv_load(t, costs, err, sizeof err) != 0)
        bail("cannot read cost.csv: %s", err);
}

/* A results file of GPU rows on a p5.48xlarge that used chips_used of its 8 H100s
 * (NULL: the column empty), as the GPU executor writes them: a measured decode run at
 * 2000 tokens/s and the model's twin of it on one chip at 2200. */
static void write_gpu_share(const char *path, const char *chips_used)
{
    struct tb_result_row rows[2];
    char err[512];
    remove(path);
    decode_row(&rows[0], "cuda:llama-3.1-8b/decode/b8/in1024/out128/bf16", "measured",
               "p5.48xlarge", "cuda", "llama-3.1-8b", "2000");
    rows[0].col[TB_COL_HOST] = "NVIDIA H100 80GB HBM3 (test fixture: made-up figures)";
    rows[0].col[TB_COL_N] = "5";
    rows[0].col[TB_COL_CHIPS_USED] = chips_used;
    rows[1] = rows[0];
    rows[1].col[TB_COL_RUN_ID] =
        "model:p5.48xlarge/llama-3.1-8b/decode/b8/in1024/out128/bf16/chips1";
    rows[1].col[TB_COL_PROVENANCE] = "modeled";
    rows[1].col[TB_COL_HOST] = NULL;
    rows[1].col[TB_COL_EXECUTOR] = "model";
    rows[1].col[TB_COL_VALUE] = "2200";
    rows[1].col[TB_COL_N] = NULL;
    if (tb_results_append(path, rows, 2, err, sizeof err) != 0)
        bail("%s", err);
}

/* The share of an instance a GPU run is charged: cost.csv, the cost table, and bad
 * chips_used values (exit 2, file, line and field, nothing written). */
static void test_gpu_share(const char *pricing)
{
    struct tb_report_opts o;
    struct tb_csv_table t;
    char err[1024] = "", *md;
    char *res = test_tmp_path("report_share.csv"), *out = test_tmp_path("report_share");
    char *costs = test_tmp_path("report_share/cost.csv");
    const char *files[1] = {res};
    /* p5.48xlarge on-demand in us-east-1: $55.04/h for 8 H100s (pricing/prices.csv) */
    const double one_gpu = 55.04 / 8;
    long r;

    write_gpu_share(res, "1");
    clean(out);
    tb_report_opts_init(&o);
    o.results = files;
    o.nresults = 1;
    o.out_dir = out;
    o.pricing_dir = pricing;
    IS_INT(TB_OK, tb_report_write(&o, NULL, err, sizeof err), "GPU share: report %s", err);
    if (tb_csv_load(&t, costs, err, sizeof err) != 0)
        bail("cannot read cost.csv: %s", err);
    r = cost_row(&t, "decode_tokens_per_s", "p5.48xlarge");
    IS_STRING("measured", r >= 0 ? tb_csv_field(&t, (size_t)r, "provenance") : "",
              "the measured GPU row first");
    IS_REL(one_gpu / (2000.0 * 3600) * 1e6, cost_of(&t, r, "usd_per_mtok"), 1e-9,
           "1 GPU of a p5.48xlarge: $55.04/8 = $6.88/h at 2000 tokens/s = $0.9556/Mtok");
    IS_REL(0.125, cost_of(&t, r, "instances_charged"), 1e-12, "charged 1/8 of the instance");
    IS_REL(1, cost_of(&t, r, "chips_used"), 1e-12, "cost.csv: chips_used 1");
    IS_REL(8, cost_of(&t, r, "chips_per_instance"), 1e-12, "of 8");
    IS_REL(2000, cost_of(&t, r, "throughput_per_chip"), 1e-12, "per chip: the one GPU's");
    IS_REL(2000.0 * 3600 / one_gpu, cost_of(&t, r, "tokens_per_usd"), 1e-9, "tokens per USD");
    r = (long)t.nrows - 1;
    IS_STRING("modeled", r >= 0 ? tb_csv_field(&t, (size_t)r, "provenance") : "",
              "then the model's twin");
    IS_REL(one_gpu / (2200.0 * 3600) * 1e6, cost_of(&t, r, "usd_per_mtok"), 1e-9,
           "the twin on one chip is charged the same 1/8");
    IS_REL(one_gpu / (2200.0 * 3600) * 1e6, cost_of(&t, r, "baseline_usd"), 1e-9,
           "its baseline cost (itself: p5.48xlarge on-demand) is 1/8 too");
    tb_csv_release(&t);
    md = slurp(out, "report.md", NULL);
    OK(md && strstr(md, "| measured | p5.48xlarge | llama-3.1-8b | decode | b8 in1024 out128 | "
                        "2000 tokens/s | 1 of 8 GPUs | 2000 |"),
       "the cost table says 1 of 8 GPUs");
    free(md);

    /* the column empty (a file of an older version): the whole instance, as before */
    write_gpu_share(res, NULL);
    IS_INT(TB_OK, tb_report_write(&o, NULL, err, sizeof err), "without chips_used %s", err);
    if (tb_csv_load(&t, costs, err, sizeof err) != 0)
        bail("cannot read cost.csv: %s", err);
    r = cost_row(&t, "decode_tokens_per_s", "p5.48xlarge");
    IS_REL(55.04 / (2000.0 * 3600) * 1e6, cost_of(&t, r, "usd_per_mtok"), 1e-9,
           "no chips_used: the whole p5.48xlarge");
    IS_REL(1, cost_of(&t, r, "instances_charged"), 1e-12, "one whole instance");
    tb_csv_release(&t);

    /* bad values: exit 2, the file, line and field named, nothing written */
    {
        static const struct {
            const char *v, *msg;
        } bad[] = {
            {"0", "line 2: field 'chips_used': must be at least 1: '0'"},
            {"9", "line 2: field 'chips_used': more chips than 1 x p5.48xlarge has (8): '9'"},
            {"two", "line 2: field 'chips_used': not a count (a whole number >= 0): 'two'"},
            {"-1", "line 2: field 'chips_used': not a count (a whole number >= 0): '-1'"},
        };
        char *badout = test_tmp_path("report_share_bad");
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            write_gpu_share(res, bad[i].v);
            clean(badout);
            o.out_dir = badout;
            IS_INT(TB_EINPUT, tb_report_write(&o, NULL, err, sizeof err), "chips_used '%s' refused",
                   bad[i].v);
            OK(strstr(err, "report_share.csv: ") && strstr(err, bad[i].msg), "%s", err);
            IS_INT(2, run_cmd(badout, res, NULL, NULL), "trnbench report: exit 2");
            OK(!tb_file_exists(badout), "nothing written");
        }
        free(badout);
    }
    clean(out);
    free(costs);
    free(res);
    free(out);
}

/* The host CPU's rows on an instance with accelerators: priced at the instance, never
 * ranked. A cpu-executor row on a p5.48xlarge (its 8 GPUs unused) measured absurdly
 * fast, so that it would be the cheapest of all if it were ranked, and the model's row
 * of the same workload on the p5's GPUs: the summary names the modeled one. */
static void test_host_cpu(const char *pricing)
{
    struct tb_result_row rows[3];
    struct tb_csv_table t;
    char *md;
    char *res = test_tmp_path("report_host.csv"), *out = test_tmp_path("report_host");
    char *costs = test_tmp_path("report_host/cost.csv");
    const char *why = "8 NVIDIA H100 80GB HBM3 GPUs: no NVIDIA driver (test fixture)";
    long r;

    remove(res);
    decode_row(&rows[0], "llama-3.1-8b/decode/b8/in1024/out128/bf16", "measured", "p5.48xlarge",
               "cpu", "llama-3.1-8b", "1000000");
    rows[0].col[TB_COL_HOST] = "AMD EPYC 7R13 (test fixture: made-up figures)";
    rows[0].col[TB_COL_N] = "5";
    rows[0].col[TB_COL_DEVICE] = "AMD EPYC 7R13 (host CPU)";
    rows[0].col[TB_COL_ACCEL_UNUSED] = why;
    rows[1] = rows[0];
    rows[1].col[TB_COL_RUN_ID] = "model:p5.48xlarge/llama-3.1-8b/decode/b8/in1024/out128/bf16";
    rows[1].col[TB_COL_PROVENANCE] = "modeled";
    rows[1].col[TB_COL_HOST] = NULL;
    rows[1].col[TB_COL_EXECUTOR] = "model";
    rows[1].col[TB_COL_VALUE] = "2200";
    rows[1].col[TB_COL_N] = NULL;
    rows[1].col[TB_COL_DEVICE] = "H100 SXM5 x8 (model)";
    rows[1].col[TB_COL_ACCEL_UNUSED] = NULL;
    /* an older file's host row: executor cpu, no device, no reason */
    rows[2] = rows[0];
    rows[2].col[TB_COL_RUN_ID] = "llama-3.1-8b/decode/b8/in1024/out128/bf16@old";
    rows[2].col[TB_COL_DEVICE] = NULL;
    rows[2].col[TB_COL_ACCEL_UNUSED] = NULL;
    report_rows(res, rows, 3, out, pricing, "host CPU rows", &t);
    r = cost_row(&t, "decode_tokens_per_s", "p5.48xlarge");
    IS_STRING("measured", r >= 0 ? tb_csv_field(&t, (size_t)r, "provenance") : "",
              "the host CPU's row first");
    IS_STRING("yes", r >= 0 ? tb_csv_field(&t, (size_t)r, "host_cpu_of_accelerator_instance") : "",
              "cost.csv flags it");
    IS_REL(55.04 / (1e6 * 3600) * 1e6, cost_of(&t, r, "usd_per_mtok"), 1e-9,
           "priced at the whole p5.48xlarge it ran on ($55.04/h)");
    OK(isnan(cost_of(&t, r, "chips")) && isnan(cost_of(&t, r, "throughput_per_chip")),
       "no accelerator chip: no chips, no per-chip figure");
    OK(isnan(cost_of(&t, r, "price_performance")), "no price-performance");
    /* cost.csv lists measured rows first */
    IS_STRING("yes", tb_csv_field(&t, 1, "host_cpu_of_accelerator_instance"),
              "an older file's cpu-executor row on p5 is one too");
    IS_STRING("modeled", tb_csv_field(&t, 2, "provenance"), "then the model's row");
    IS_STRING("no", tb_csv_field(&t, 2, "host_cpu_of_accelerator_instance"),
              "the model's row on the GPUs is not a host row");
    tb_csv_release(&t);
    md = slurp(out, "report.md", NULL);
    OK(md && strstr(md, "- `llama-3.1-8b/decode/in1024/out128/bf16` (USD per 1M output tokens): "
                        "cheapest like for like `p5.48xlarge` 6.949, the baseline."),
       "the summary ranks the model's p5 row ($6.949/Mtok), not the host's ($0.01529/Mtok)");
    OK(md && strstr(md, "### Host CPU runs\n"), "a section on host rows");
    OK(md && strstr(md, "| llama-3.1-8b/decode/in1024/out128/bf16 | p5.48xlarge: ") &&
           strstr(md, "| 8 NVIDIA H100 80GB HBM3 GPUs: no NVIDIA driver (test fixture) |"),
       "it names the unused accelerators and why");
    OK(md && strstr(md, "| not recorded (a row of an older trnbench) |"),
       "and says when an older row does not");
    OK(md && strstr(md, "| llama-3.1-8b/decode/in1024/out128/bf16@old | p5.48xlarge") &&
           !strstr(md, "- `llama-3.1-8b/decode/in1024/out128/bf16@old`"),
       "a workload with host rows only is listed there, not in the summary");
    free(md);

    /* the engine field tells a host row, not the device's text: our CPU engine behind
     * `trnbench serve` with any device label is the host's; a server whose label reads
     * like ours but whose engine is not ours is an instance's */
    rows[0].col[TB_COL_EXECUTOR] = "endpoint";
    rows[0].col[TB_COL_ACCEL_UNUSED] = NULL;
    rows[0].col[TB_COL_DEVICE] = "a label of the user's choosing";
    rows[0].col[TB_COL_ENGINE] = "host-cpu";
    rows[2] = rows[0];
    rows[2].col[TB_COL_RUN_ID] = "endpoint:llama-3.1-8b/decode/b8/in1024/out128/bf16@p5";
    rows[2].col[TB_COL_DEVICE] = "trnbench serve (CPU engine, fp32) as a server label";
    rows[2].col[TB_COL_ENGINE] = NULL;
    report_rows(res, rows, 3, out, pricing, "engine rows", &t);
    IS_STRING("yes", tb_csv_field(&t, 0, "host_cpu_of_accelerator_instance"),
              "engine host-cpu: a host row whatever its device says");
    IS_STRING("endpoint:llama-3.1-8b/decode/b8/in1024/out128/bf16@p5",
              tb_csv_field(&t, 1, "run_id"), "then the other server's row");
    IS_STRING("no", tb_csv_field(&t, 1, "host_cpu_of_accelerator_instance"),
              "no engine: not a host row, though its label reads like one");
    tb_csv_release(&t);
    if (!getenv("TB_KEEP"))
        clean(out);
    free(costs);
    free(res);
    free(out);
}

/* The title counts every model, not the four its list has room for. */
/* Measured leads: a decode run measured on a trn1.32xlarge (through an endpoint, 1500
 * tokens/s) heads Trainium1's comparison; the model's twin of it (1800) sits beside it
 * with its error (+20%) and no longer ranks; the p5.48xlarge is the model's (2000). */
static void test_measured_leads(const char *pricing)
{
    struct tb_result_row rows[3];
    struct tb_csv_table t;
    char *md, want[256];
    char *res = test_tmp_path("report_lead.csv"), *out = test_tmp_path("report_lead");
    char *costs = test_tmp_path("report_lead/cost.csv");
    long r;

    remove(res);
    decode_row(&rows[0], "endpoint:llama-3.1-8b/decode/b8/in1024/out128/bf16", "measured",
               "trn1.32xlarge", "endpoint", "llama-3.1-8b", "1500");
    rows[0].col[TB_COL_HOST] = "trn1.32xlarge (test fixture: made-up figures)";
    rows[0].col[TB_COL_N] = "5";
    rows[0].col[TB_COL_MIN] = "1400";
    rows[0].col[TB_COL_MAX] = "1600";
    /* the workload and configuration as the serving recorder and the importer write them */
    rows[0].col[TB_COL_WORKLOAD] = "llama-3.1-8b/decode/in1024/out128/bf16";
    rows[0].col[TB_COL_CONFIG] = "llama-3.1-8b/decode/b8/in1024/out128/bf16";
    decode_row(&rows[1], "model:trn1.32xlarge/llama-3.1-8b/decode/b8/in1024/out128/bf16", "modeled",
               "trn1.32xlarge", "model", "llama-3.1-8b", "1800");
    decode_row(&rows[2], "model:p5.48xlarge/llama-3.1-8b/decode/b8/in1024/out128/bf16", "modeled",
               "p5.48xlarge", "model", "llama-3.1-8b", "2000");
    report_rows(res, rows, 3, out, pricing, "measured leads", &t);
    r = cost_row(&t, "decode_tokens_per_s", "trn1.32xlarge");
    IS_STRING("measured", r >= 0 ? tb_csv_field(&t, (size_t)r, "provenance") : "",
              "the measured trn1 row");
    IS_REL(20.0, cost_of(&t, r, "twin_error_pct"), 1e-9, "its twin's error: 1800 / 1500 - 1");
    IS_REL(21.5 / (1800.0 * 3600) * 1e6, cost_of(&t, r, "twin_cost"), 1e-9,
           "and the twin's cost at $21.50/h");
    IS_REL(21.5 / (1600.0 * 3600) * 1e6, cost_of(&t, r, "cost_low"), 1e-9,
           "the measured cost's range: the fastest repetition");
    IS_STRING("yes", tb_csv_field(&t, (size_t)r + 1, "led_by_measurement"),
              "the model's trn1 row is led by it");
    IS_STRING("", tb_csv_field(&t, (size_t)r, "model_error_pct"),
              "a measurement has no model band");
    tb_csv_release(&t);
    md = slurp(out, "report.md", NULL);
    snprintf(want, sizeof want,
             "cheapest like for like `trn1.32xlarge` %.4g (measured; the model said %.4g), against",
             21.5 / (1500.0 * 3600) * 1e6, 21.5 / (1800.0 * 3600) * 1e6);
    OK(md && strstr(md, want), "the summary leads with the measurement: %s", want);
    free(md);
    free(costs);
    free(res);
    free(out);
}

static void test_title_count(const char *pricing)
{
    static const char *const models[] = {"llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b",
                                         "llama-2-7b",   "llama-2-13b",  "llama-3.1-70b"};
    struct tb_result_row rows[6];
    struct tb_csv_table t;
    char ids[6][128], *md;
    char *res = test_tmp_path("report_title.csv"), *out = test_tmp_path("report_title");

    for (int i = 0; i < 6; i++) {
        snprintf(ids[i], sizeof ids[i], "model:p5.48xlarge/%s/decode/b8/in1024/out128/bf16",
                 models[i]);
        decode_row(&rows[i], ids[i], "modeled", "p5.48xlarge", "model", models[i], "1000");
    }
    report_rows(res, rows, 6, out, pricing, "six models", &t);
    tb_csv_release(&t);
    md = slurp(out, "report.md", NULL);
    OK(md && !strncmp(md, "# trnbench report: 6 models\n", 28), "the title counts 6 models");
    free(md);
    clean(out);
    free(res);
    free(out);
}

/* The colour gnuplot filled target's key entry with in a chart ("rgb(  0, 114, 178)" as
 * "0,114,178"), or "" when the chart has no such entry. */
static void key_colour(const char *svg, const char *target, char *buf, size_t len)
{
    char title[160];
    const char *p, *q;
    size_t n = 0;
    buf[0] = '\0';
    snprintf(title, sizeof title, "<title>%s</title>", target);
    p = svg ? strstr(svg, title) : NULL;
    p = p ? strstr(p, "fill = 'rgb(") : NULL;
    q = p ? strchr(p, ')') : NULL;
    if (!q)
        return;
    for (p += 12; p < q && n + 1 < len; p++)
        if (*p != ' ')
            buf[n++] = *p;
    buf[n] = '\0';
}

/* One colour per target family, whatever else a report holds: two reports of different
 * targets give trn2.48xlarge the blue of Trainium2 and p5.48xlarge the vermillion of
 * H100 in both; a second Trainium2 type beside it takes a darker shade of the blue, and
 * the host is black. */
static void test_family_colours(const char *pricing)
{
    static const char *const a[] = {"p5.48xlarge", "trn2.48xlarge"};
    static const char *const b[] = {
        "trn2u.48xlarge", "inf2.48xlarge", "trn1.32xlarge", "p5en.48xlarge",
        "trn2.48xlarge",  "p5.48xlarge",   "host"};
    struct tb_result_row rows[7];
    struct tb_csv_table t;
    char ids[7][128], ca[2][32], cb[7][32], why[256];
    char *res = test_tmp_path("report_colours.csv"), *out = test_tmp_path("report_colours");
    char *svg;

    if (!tb_plot_has_terminal("svg", why, sizeof why)) {
        skip_block(6, "no gnuplot svg terminal: %s", why);
        goto done;
    }
    for (size_t i = 0; i < 2; i++) {
        snprintf(ids[i], sizeof ids[i], "model:%s/llama-3.1-8b/decode/b8/in1024/out128/bf16", a[i]);
        decode_row(&rows[i], ids[i], "modeled", a[i], "model", "llama-3.1-8b", "1000");
    }
    report_rows(res, rows, 2, out, pricing, "two targets", &t);
    tb_csv_release(&t);
    svg = slurp(out, "throughput.svg", NULL);
    for (size_t i = 0; i < 2; i++)
        key_colour(svg, a[i], ca[i], sizeof ca[i]);
    free(svg);
    for (size_t i = 0; i < 7; i++) {
        snprintf(ids[i], sizeof ids[i], "model:%s/llama-3.1-8b/decode/b8/in1024/out128/bf16", b[i]);
        decode_row(&rows[i], ids[i], !strcmp(b[i], "host") ? "measured" : "modeled", b[i],
                   !strcmp(b[i], "host") ? "cpu" : "model", "llama-3.1-8b", "1000");
    }
    report_rows(res, rows, 7, out, pricing, "seven targets", &t);
    tb_csv_release(&t);
    svg = slurp(out, "throughput.svg", NULL);
    for (size_t i = 0; i < 7; i++)
        key_colour(svg, b[i], cb[i], sizeof cb[i]);
    free(svg);
    IS_STRING("0,114,178", ca[1], "trn2.48xlarge beside p5.48xlarge: Trainium2's blue");
    IS_STRING(ca[1], cb[4], "trn2.48xlarge among seven targets: the same blue");
    IS_STRING("213,94,0", ca[0], "p5.48xlarge: H100's vermillion");
    IS_STRING(ca[0], cb[5], "the same among seven");
    IS_STRING("0,63,98", cb[0], "trn2u.48xlarge beside trn2.48xlarge: a darker Trainium2 blue");
    IS_STRING("0,0,0", cb[6], "the host: black");
done:
    clean(out);
    free(res);
    free(out);
}

/* Goodput in the serving table: a load level of an endpoint run at 8 requests in flight
 * whose 4 completed requests/s include 3 within its latency limits shows "3 (75%)", the
 * limits in its tooltip; a level run without limits (no goodput row) shows nothing. */
static void test_goodput(const char *pricing)
{
    static const struct {
        const char *run, *metric, *value, *unit;
    } m[] = {
        {"c8", "output_tokens_per_s", "1024", "tokens/s"},
        {"c8", "requests_per_s", "4", "requests/s"},
        {"c8", "goodput_requests_per_s", "3", "requests/s"},
        {"c16", "output_tokens_per_s", "1800", "tokens/s"},
        {"c16", "requests_per_s", "7", "requests/s"},
    };
    const size_t n = sizeof m / sizeof m[0];
    struct tb_result_row rows[5];
    struct tb_csv_table t;
    char ids[5][128], *md, *html;
    char *res = test_tmp_path("report_goodput.csv"), *out = test_tmp_path("report_goodput");
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], sizeof ids[i], "endpoint:llama-3.1-8b/serve/in1024/out256/bf16/%s",
                 m[i].run);
        decode_row(&rows[i], ids[i], "measured", "trn1.32xlarge", "endpoint", "llama-3.1-8b",
                   m[i].value);
        rows[i].col[TB_COL_PHASE] = "serve";
        rows[i].col[TB_COL_SEQ_OUT] = "256";
        rows[i].col[TB_COL_BATCH] = m[i].run + 1;
        rows[i].col[TB_COL_CONCURRENCY] = m[i].run + 1;
        rows[i].col[TB_COL_METRIC] = m[i].metric;
        rows[i].col[TB_COL_UNIT] = m[i].unit;
        rows[i].col[TB_COL_N] = "64";
        rows[i].col[TB_COL_WORKLOAD] = "llama-3.1-8b/serve/in1024/out256/bf16";
        rows[i].col[TB_COL_DEVICE] = "vllm (test fixture: made-up figures)";
        if (!strcmp(m[i].metric, "goodput_requests_per_s"))
            rows[i].col[TB_COL_NOTES] = "48 requests completed within ttft <= 500 ms and tpot "
                                        "<= 50 ms (0: no limit) / the same window";
    }
    report_rows(res, rows, n, out, pricing, "goodput", &t);
    tb_csv_release(&t);
    md = slurp(out, "report.md", NULL);
    html = slurp(out, "report.html", NULL);
    OK(md && strstr(md, "| Output tok/s | Goodput req/s | TTFT ms p50 / p99 |"),
       "the serving table has a goodput column");
    OK(md && strstr(md, "| c8 in1024 out256 |  | 1024 | 3 (75%) |"),
       "c8: 3 of its 4 requests/s within the limits: 3 (75%%)");
    OK(md && strstr(md, "| c16 in1024 out256 |  | 1800 |  |"),
       "c16, run without limits: no goodput");
    OK(html && strstr(html, "title=\"48 requests completed within ttft &lt;= 500 ms and tpot "
                            "&lt;= 50 ms (0: no limit) / the same window\">3 (75%)</td>"),
       "the HTML cell's tooltip gives the limits");
    free(md);
    free(html);
    if (!getenv("TB_KEEP"))
        clean(out);
    free(res);
    free(out);
}

int main(void)
{
    struct tb_report_opts o;
    struct tb_report_info info;
    struct tb_csv_table t;
    char err[1024] = "", why[512];
    char *src = test_src_path(".");
    char *fixture = test_src_path("tests/data/report_results.csv");
    char *badfix = test_src_path("tests/data/report_bad_results.csv");
    char *pricing = test_src_path("pricing");
    char *out = test_tmp_path("report_out");
    char *badout = test_tmp_path("report_bad_out");
    char *bare = test_tmp_path("report_bare");
    const char *files[1];
    char *html, *md, *before;
    size_t len = 0, blen = 0;
    long r;

    setenv("TRNBENCH_DATADIR", src, 1);
    plan_lazy();

    /* the arithmetic, by hand: $0.36/h at 625 tokens/s = 0.36 / 2,250,000 * 1e6 */
    IS_DOUBLE(0.16, tb_cost_usd_per(0.36, 625, 1e6), 1e-15, "usd_per_mtok by hand");
    OK(isnan(tb_cost_usd_per(0.36, 0, 1e6)), "no cost without throughput");
    IS_STRING("usd_per_mtok_in", cost_metric("prefill_tokens_per_s"), "prefill -> in");
    IS_STRING("usd_per_mtok_out", cost_metric("decode_tokens_per_s"), "decode -> out");
    IS_STRING("usd_per_mtok_train", cost_metric("train_tokens_per_s"), "train -> train");
    OK(cost_metric("gflop_per_s") == NULL, "gflop_per_s is not costed");

    /* a report on the fixture, the host at $0.36/h */
    clean(out);
    tb_report_opts_init(&o);
    files[0] = fixture;
    o.results = files;
    o.nresults = 1;
    o.out_dir = out;
    o.usd_per_hour = 0.36;
    o.pricing_dir = pricing;
    IS_INT(TB_OK, tb_report_write(&o, &info, err, sizeof err), "report written %s", err);
    IS_INT(14, (long long)info.nrows, "all 14 fixture rows read");
    IS_INT(5, (long long)info.ncosted,
           "5 of the 6 throughput rows priced (trn2.48xlarge has no on-demand price)");
    OK(exists(out, "report.md") && exists(out, "report.html") && exists(out, "cost.csv"),
       "report.md, report.html and cost.csv exist");

    {
        char *costs = test_tmp_path("report_out/cost.csv");
        if (tb_csv_load(&t, costs, err, sizeof err) != 0)
            bail("cannot read cost.csv: %s", err);
        free(costs);
    }
    IS_INT(6, (long long)t.nrows, "cost.csv: one row per throughput row");
    /* per-chip view, baseline and price-performance, by hand: trn1.32xlarge has 16
     * chips at $21.50/h; the baseline p5.48xlarge (8 chips, $55.04/h on-demand) decodes
     * 9000 tokens/s, trn1.32xlarge 1200 */
    r = cost_row(&t, "decode_tokens_per_s", "trn1.32xlarge");
    IS_REL(16, cost_of(&t, r, "chips"), 1e-12, "trn1.32xlarge: 16 chips");
    IS_REL(75, cost_of(&t, r, "throughput_per_chip"), 1e-12, "1200 tokens/s = 75 per chip");
    IS_REL(21.5 / 16, cost_of(&t, r, "usd_per_chip_hour"), 1e-12, "$1.34375 per chip-hour");
    IS_STRING("p5.48xlarge", r >= 0 ? tb_csv_field(&t, (size_t)r, "baseline") : "",
              "the default baseline");
    IS_REL(55.04 / (9000.0 * 3600) * 1e6, cost_of(&t, r, "baseline_usd"), 1e-9,
           "baseline cost of the same configuration, on-demand");
    IS_REL((55.04 / 9000.0) / (21.5 / 1200.0), cost_of(&t, r, "price_performance"), 1e-9,
           "price-performance 0.341x");
    {
        /* Karpenter's us-east-1 table of 2026-07-20 dates it (it was an undated
         * SkyPilot row before 2026-11-28) */
        double age = cost_of(&t, r, "price_age_days");
        OK(age >= 0, "the trn1.32xlarge price is dated (2026-07-20): %g days old", age);
        IS_INT(age > 180, r >= 0 && *tb_csv_field(&t, (size_t)r, "price_flag"),
               "flagged exactly when older than 180 days");
    }
    r = cost_row(&t, "decode_tokens_per_s", "p5.48xlarge");
    IS_REL(1, cost_of(&t, r, "price_performance"), 1e-12, "the baseline against itself: 1x");
    {
        double age = cost_of(&t, r, "price_age_days");
        OK(age >= 65, "the 2026-09-19 price is at least 65 days old (%g)", age);
        IS_INT(age > 180, r >= 0 && *tb_csv_field(&t, (size_t)r, "price_flag"),
               "flagged exactly when older than 180 days");
    }
    r = cost_row(&t, "decode_tokens_per_s", "trn2.48xlarge");
    IS_REL(2600.0 / 16, cost_of(&t, r, "throughput_per_chip"), 1e-12,
           "per chip even without a price");
    r = cost_row(&t, "decode_tokens_per_s", "host");
    IS_REL(0.16, cost_of(&t, r, "usd_per_mtok"), 1e-9,
           "host decode: $0.36/h / (625 tokens/s x 3600) x 1e6 = $0.16/Mtok");
    IS_STRING("usd_per_mtok_out", r >= 0 ? tb_csv_field(&t, (size_t)r, "metric") : "",
              "named usd_per_mtok_out");
    IS_REL(0.36 / (645.16 * 3600) * 1e6, cost_of(&t, r, "usd_per_mtok_min"), 1e-9,
           "cheapest from the fastest repetition");
    IS_REL(625 * 3600 / 0.36, cost_of(&t, r, "tokens_per_usd"), 1e-9, "tokens per USD");
    r = cost_row(&t, "prefill_tokens_per_s", "host");
    IS_REL(0.36 / (13473.68 * 3600) * 1e6, cost_of(&t, r, "usd_per_mtok"), 1e-9,
           "host prefill -> usd_per_mtok_in");
    r = cost_row(&t, "train_tokens_per_s", "host");
    IS_REL(0.36 / (1219.05 * 3600) * 1e6, cost_of(&t, r, "usd_per_mtok"), 1e-9,
           "host train -> usd_per_mtok_train");
    r = cost_row(&t, "decode_tokens_per_s", "trn1.32xlarge");
    IS_REL(21.5 / (1200.0 * 3600) * 1e6, cost_of(&t, r, "usd_per_mtok"), 1e-9,
           "modeled trn1.32xlarge at the table's $21.50/h = $4.977/Mtok");
    IS_STRING("modeled", r >= 0 ? tb_csv_field(&t, (size_t)r, "provenance") : "",
              "its provenance is kept");
    OK(r >= 0 && *tb_csv_field(&t, (size_t)r, "price_source"), "and its price names a source");
    r = cost_row(&t, "decode_tokens_per_s", "p5.48xlarge");
    IS_REL(55.04 / (9000.0 * 3600) * 1e6, cost_of(&t, r, "usd_per_mtok"), 1e-9,
           "published p5.48xlarge at $55.04/h");
    IS_STRING("2026-09-19", r >= 0 ? tb_csv_field(&t, (size_t)r, "price_as_of") : "",
              "price dated");
    r = cost_row(&t, "decode_tokens_per_s", "trn2.48xlarge");
    IS_STRING("", r >= 0 ? tb_csv_field(&t, (size_t)r, "usd_per_mtok") : "x",
              "trn2.48xlarge: no figure invented");
    OK(r >= 0 && !strncmp(tb_csv_field(&t, (size_t)r, "price_note"), "no price: ", 10),
       "it says why: %s", r >= 0 ? tb_csv_field(&t, (size_t)r, "price_note") : "");
    tb_csv_release(&t);

    html = slurp(out, "report.html", &len);
    md = slurp(out, "report.md", NULL);
    OK(html && strstr(html, "<svg") != NULL, "the HTML holds the charts inline");
    OK(html && !strstr(html, "href=\"http") && !strstr(html, "src=\"http"),
       "no http(s) reference in the HTML (a price's source may name its address as text)");
    OK(html && !strstr(html, "<script src") && !strstr(html, "<link") && !strstr(html, "src=") &&
           !strstr(html, "@import") && !strstr(html, "url(http"),
       "no external scripts, links, sources or imports: self-contained");
    OK(html && strstr(html, "<script>(function(){") && strstr(html, "table class=\"sortable\""),
       "one inline script sorts the tables");
    OK(html && strstr(html, "<td class=\"num tip\" title=\"measured on "),
       "a measured number carries its provenance in a tooltip");
    OK(html && strstr(html, "<h2>Summary</h2>") &&
           strstr(html, "<h2>Summary</h2>") < strstr(html, "<h2>Charts</h2>") &&
           strstr(html, "<h2>Charts</h2>") < strstr(html, "<h2>Runs</h2>"),
       "summary first, then charts, the runs last");
    OK(html && strstr(html, "<style>") && strstr(html, "name=\"viewport\""),
       "inline CSS, phone viewport");
    OK(html && strstr(html, "prov-modeled") && strstr(html, "prov-published"),
       "provenance labels shown");
    OK(html && strstr(html, "id='c0-gpPat") && strstr(html, "id='c1-gpPat"),
       "chart ids kept apart");
    OK(md && strstr(md, "| 0.16 |") != NULL, "report.md shows $0.16/Mtok for the host decode run");
    {
        /* the three outputs carry the same numbers: every priced cost.csv row's cost, as
         * the tables print it (4 significant digits), is in report.md and report.html */
        struct tb_csv_table c;
        char *costs = test_tmp_path("report_out/cost.csv"), want[64], cell[80];
        int same = 0, priced = 0;
        if (tb_csv_load(&c, costs, err, sizeof err) != 0)
            bail("cannot read cost.csv: %s", err);
        for (size_t i = 0; i < c.nrows; i++) {
            const char *u = tb_csv_field(&c, i, "usd_per_mtok");
            if (!*u)
                continue;
            priced++;
            snprintf(want, sizeof want, "%.4g", strtod(u, NULL));
            snprintf(cell, sizeof cell, "| %s |", want);
            same += md && strstr(md, cell) && html && strstr(html, want);
        }
        IS_INT(5, priced, "5 priced rows in cost.csv");
        IS_INT(priced, same, "each of their costs is in report.md and report.html");
        tb_csv_release(&c);
        free(costs);
    }
    OK(md && strstr(md, "| 4.977 |  | 0.341x |") && html && strstr(html, ">0.341x</td>"),
       "price-performance 0.341x in both documents, as cost.csv's 0.3413");
    OK(md && strstr(md, "`usd_per_mtok_out`") && strstr(md, "`tpot_ms`"),
       "metrics named and defined");
    OK(md && strstr(md, "| trn2.48xlarge | 35.7608 | 16 | 2.235 | us-east-2 | capacity-block |") &&
           strstr(md, "\\* nearest comparable: none at on-demand in us-east-1"),
       "the gap is filled by the nearest comparable price, and says so");
    OK(md && strstr(md, "| trn1.32xlarge | 21.50 | 16 | 1.344 | us-east-1 | on-demand |"),
       "price row named, per instance-hour and per chip-hour in their own columns");
    OK(md && strstr(md,
                    "| \\[5\\] baseline | p5.48xlarge | 55.04 | 8 | 6.88 | us-east-1 | on-demand"),
       "the baseline's on-demand price listed");
    OK(md && strstr(md, "unavailable: PAPI not built in"), "counters status shown");
    OK(md && strstr(md, "(throughput.svg)"), "Markdown links the SVG chart");
    OK(exists(out, "throughput.svg") && exists(out, "cost.svg"), "both SVG charts written");
    {
        bool scratch;
        bool png = tb_plot_has_terminal("pngcairo", why, sizeof why);
        if (png)
            OK(exists(out, "throughput.png") && exists(out, "cost.png") && info.png,
               "PNG copies written");
        else
            skip("no PNG: %s", why);
        /* throughput, cost and priceperf charts, each with its data (.tsv; no train
         * chart: the one training row is the host CPU's); cost.csv, report.md,
         * report.html; .report.files, the list of them (what a later report may remove) */
        IS_INT(png ? 13 : 10, entries(out, &scratch), "exactly the report's files in the folder");
        OK(!scratch, "no scratch files left");
    }
    free(md);

    /* bad input: exit 2, nothing written */
    clean(badout);
    tb_report_opts_init(&o);
    files[0] = badfix;
    o.results = files;
    o.nresults = 1;
    o.out_dir = badout;
    o.usd_per_hour = 0.36;
    IS_INT(TB_EINPUT, tb_report_write(&o, &info, err, sizeof err), "malformed results refused");
    OK(strstr(err, "report_bad_results.csv: line 6: field 'value': not a number: '6x5'") != NULL,
       "%s", err);
    OK(!tb_file_exists(badout), "nothing written, not even the folder");
    IS_INT(2, run_cmd(badout, badfix, "--usd-per-hour", "0.36"), "trnbench report: exit 2");
    OK(!tb_file_exists(badout), "still nothing written");
    IS_INT(2, run_cmd(badout, fixture, "--instance", "x9.huge"), "unknown --instance: exit 2");
    IS_INT(2, run_cmd(badout, fixture, "--usd-per-hour", "cheap"), "bad --usd-per-hour: exit 2");
    IS_INT(2, run_cmd(badout, fixture, "--frobnicate", NULL), "unknown option: exit 2");
    IS_INT(2, run_cmd(badout, "/nonexistent/results.csv", NULL, NULL), "missing results: exit 2");
    OK(!tb_file_exists(badout), "none of them wrote anything");
    IS_INT(2, run_cmd(badout, fixture, "--region", "mars-north-1"), "unknown region: exit 2");
    IS_INT(2, run_cmd(badout, fixture, "--pricing", "lease"), "unknown purchase model: exit 2");
    IS_INT(2, run_cmd(badout, fixture, "--baseline", "x9.huge"), "unknown baseline: exit 2");
    IS_INT(2, run_cmd(badout, fixture, "--ttft-ms", "-1"), "negative limit: exit 2");
    OK(!tb_file_exists(badout), "none of those wrote anything");
    IS_INT(0, run_cmd(badout, fixture, "--instance", "trn1.32xlarge"),
           "host priced as trn1.32xlarge: exit 0");
    md = slurp(badout, "report.md", NULL);
    OK(md && strstr(md, "| Price of the host | $21.50/h: trn1.32xlarge"),
       "host price from the table");
    free(md);
    clean(badout);

    /* gnuplot failing: exit 1 and the previous report stays whole */
    before = slurp(out, "report.html", &blen);
    setenv("TRNBENCH_GNUPLOT", "false", 1);
    IS_INT(1, run_cmd(out, fixture, "--usd-per-hour", "0.50"), "gnuplot failing: exit 1");
    md = slurp(out, "report.html", &len);
    OK(before && md && blen == len && !memcmp(before, md, len), "the previous report is untouched");
    free(md);
    free(before);

    /* gnuplot missing: the report is still written, with a note */
    clean(bare);
    setenv("TRNBENCH_GNUPLOT", "/nonexistent/gnuplot", 1);
    IS_INT(0, run_cmd(bare, fixture, NULL, NULL), "gnuplot missing: exit 0");
    md = slurp(bare, "report.md", NULL);
    OK(md && strstr(md, "charts not drawn: cannot run '/nonexistent/gnuplot'"),
       "the report says why the charts are missing");
    OK(md && strstr(md, "no price: the host is not a catalogued instance"),
       "and why the host has no price");
    OK(!exists(bare, "throughput.svg"), "no chart files");
    free(md);
    unsetenv("TRNBENCH_GNUPLOT");
    clean(bare);

    test_gpu_share(pricing);
    test_host_cpu(pricing);
    test_title_count(pricing);
    test_measured_leads(pricing);
    test_family_colours(pricing);
    test_goodput(pricing);

    free(html);
    free(src);
    free(fixture);
    free(badfix);
    free(pricing);
    free(out);
    free(badout);
    free(bare);
    return 0;
}
