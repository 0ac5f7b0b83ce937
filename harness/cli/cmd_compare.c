/*
 * harness/cli/cmd_compare.c: `trnbench compare`, one question in one command: what does
 * this model cost on these targets? The workload given by options becomes one predict
 * line (tb_suite_from_predict: what a suite's `predict target=a,b model=m ...` says,
 * with a batch sweep for serving), run by the plan's model executor into a results
 * file (tb_plan_load_modeled, tb_plan_execute), joined by the rows of --results files
 * (measured, imported, published or modeled, each row as it was), then priced and
 * written by the report stage (tb_report_write) under --pricing and --region.
 *
 * Everything is checked before anything is written: the options, the model and the
 * targets against the catalogue, the price choice and the baseline (tb_report_check),
 * every --results file (tb_results_load). Then the results are built in a scratch
 * folder inside --out, moved into place, and the report written; when the report
 * fails, the previous results.csv is put back, so the folder holds an old report or
 * the new one, whole. A rerun into the same folder replaces both.
 */
#include "cli.h"
#include "cli_opt.h"
#include "tb_arch.h"
#include "tb_darch.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_report.h"
#include "tb_results.h"
#include "tb_run.h"
#include "tb_util.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench compare --model M --phase serve|train|denoise --targets T1,T2,...\n"
          "                        --out DIR [--seq-in N] [--seq-out N] [--batch B,...|max]\n"
          "                        [--precision P] [--steps N] [--resolution PX]\n"
          "                        [--instances N] [--chips N] [--pricing P] [--region R]\n"
          "                        [--prices DIR] [--baseline TYPE] [--ttft-ms X]\n"
          "                        [--tpot-ms X] [--train-tokens N] [--max-price-age D]\n"
          "                        [--software S] [--discount P=F]... [--results FILE]...\n"
          "\n"
          "Price one workload on the targets named: the performance model predicts it on\n"
          "each (a serving workload over a batch sweep, for the cheapest configuration\n"
          "within latency limits and the throughput-versus-interactivity chart), the rows\n"
          "of --results files join them, and the report prices them all at the purchase\n"
          "model and region asked for. DIR gets results.csv, report.md, report.html,\n"
          "cost.csv and the charts; a rerun into DIR replaces them.\n"
          "\n"
          "  --model M          catalogue name (trnbench run --list) or a .model file\n"
          "  --phase P          serve (seq-in prompt tokens, seq-out generated), train\n"
          "                     (sequences of seq-in tokens), denoise (a diffusion model)\n"
          "  --targets T,...    instance types of pricing/instances.csv\n"
          "  --out DIR          the report's folder (made when missing)\n"
          "  --seq-in N         serve, train: prompt or sequence length (required)\n"
          "  --seq-out N        serve: tokens generated per request (required)\n"
          "  --batch B,...|max  requests in flight (serve; default the sweep\n"
          "                     1,4,16,64,256,max), global batch in sequences (train;\n"
          "                     default: the model's choice), images (denoise; default\n"
          "                     max: the throughput-maximising batch)\n"
          "  --software S       the software stack on every target (pricing/stacks.csv:\n"
          "                     vllm, tensorrt-llm@1, torchtitan, ...; default: each\n"
          "                     chip family's reference stack, the one its figures\n"
          "                     were chosen on)\n"
          "  --precision P      bf16 (default), fp16, fp8, cfp8, mxfp8, fp4, nvfp4, mxfp4,\n"
          "                     int8, fp32 (the chips without one are refused, with why)\n"
          "  --steps N          denoise: denoising steps (default: the model's)\n"
          "  --resolution PX    denoise: square image size (default: the model's)\n"
          "  --instances N      instances of each target (train: the cluster; default 1)\n"
          "  --chips N          chips used (default: all of the instances)\n"
          "  --results FILE     rows to add (results.csv of run or import, or predict's\n"
          "                     output); those of the model asked about are kept, each\n"
          "                     as it was; may be given more than once\n"
          "  --pricing P        purchase model: on-demand (default), reserved-1y,\n"
          "                     reserved-3y, savings-plan-1y, savings-plan-3y, spot,\n"
          "                     capacity-block\n"
          "  --region R         region of the prices (default us-east-1)\n"
          "  --discount P=F     your discount for purchase model P: the fraction F, in\n"
          "                     (0, 1), off the on-demand price of the same instance and\n"
          "                     region (savings-plan-1y=0.28); labelled as yours, it wins\n"
          "                     over the table's P; once per purchase model, repeatable\n"
          "  --prices DIR       the price and catalogue tables (default: pricing/ in the\n"
          "                     data folder; efficiency.csv too)\n"
          "  --baseline TYPE    price-performance baseline (p5.48xlarge), priced like\n"
          "                     the candidates\n"
          "  --ttft-ms X, --tpot-ms X  serving latency limits (2000, 200)\n"
          "  --train-tokens N   tokens of the time-and-cost-to-train figures (1e12)\n"
          "  --max-price-age D  flag prices older than D days (180)\n"
          "\n"
          "Exit status: 0 ok, 1 nothing could be modeled or a file could not be written,\n"
          "2 usage or input error (nothing written).\n",
          f);
}

/* The serving sweep of the default suite: the report's latency-limited ranking and its
 * throughput-versus-interactivity chart come from it. */
#define SERVE_SWEEP "1,4,16,64,256,max"
#define MAX_TARGETS 32
#define MAX_RESULTS 16

/* The question, as the options give it. */
struct question {
    const char *model, *phase, *targets, *out, *precision, *batch, *software;
    long seq_in, seq_out, steps, resolution, instances, chips; /* 0: not given */
    const char *results[MAX_RESULTS];
    size_t nresults;
    struct tb_report_opts ro;              /* the report's options (results set later) */
    struct tb_pricing_discounts discounts; /* --discount, ro's */
};

/* ---- checks: every one before anything is written ---- */

/* --software S: *(const char **)dst = a stack's name (pricing/stacks.csv's form). */
static int take_software(const struct tb_opt *o, const char *v, char *err, size_t errlen)
{
    if (!tb_model_software_name_ok(v))
        return tb_err(err, errlen,
                      "'%s' is not a stack of pricing/stacks.csv (vllm, tensorrt-llm@1, ...)", v);
    *(const char **)o->dst = v;
    return 0;
}

/* The batch list: sizes or max, comma-separated. */
static int check_batch(const char *v)
{
    char list[64], *b, *save = NULL;
    if (strlen(v) >= sizeof list || !*v || v[0] == ',' || v[strlen(v) - 1] == ',' ||
        strstr(v, ",,"))
        return -1;
    snprintf(list, sizeof list, "%s", v);
    for (b = strtok_r(list, ",", &save); b; b = strtok_r(NULL, ",", &save)) {
        long n;
        if (strcmp(b, "max") && tb_parse_long(b, 1, 1L << 30, &n) != 0)
            return -1;
    }
    return 0;
}

/* What the phase needs and refuses. Returns 0, or -1 (said). */
static int check_shape(const struct question *q)
{
    bool serve = !strcmp(q->phase, "serve"), train = !strcmp(q->phase, "train");
    /* a diffusion model's training: images at a resolution, no sequence */
    bool dtrain = train && tb_darch_is_diffusion(q->model) == 1;
    const char *bad = NULL;
    if (dtrain) {
        if (q->seq_in || q->steps)
            bad = "--seq-in and --steps are not a diffusion model's training (--resolution, "
                  "--batch)";
        else if (!q->batch || !strcmp(q->batch, "max"))
            bad = "--batch N (the global batch in images) is required";
    } else if ((serve || train) && !q->seq_in)
        bad = "--seq-in N is required";
    else if (serve && !q->seq_out)
        bad = "--seq-out N is required";
    else if (!serve && q->seq_out)
        bad = "--seq-out is serving's (generated tokens)";
    else if ((serve || train) && (q->steps || q->resolution))
        bad = "--steps and --resolution are denoise's";
    else if (!serve && !train && q->seq_in)
        bad = "--seq-in is not denoise's (--steps, --resolution)";
    if (bad) {
        fprintf(stderr, "trnbench compare: phase %s: %s\n", q->phase, bad);
        return -1;
    }
    if (q->precision && !tb_model_precision_known(q->precision)) {
        fprintf(stderr, "trnbench compare: --precision: '%s' (%s)\n", q->precision,
                TB_MODEL_PRECISIONS);
        return -1;
    }
    if (q->batch && check_batch(q->batch) != 0) {
        fprintf(stderr,
                "trnbench compare: --batch: '%s' (a positive whole number, max, or a comma "
                "list of them)\n",
                q->batch);
        return -1;
    }
    return 0;
}

/* The model exists, is of the phase's kind, and holds the sequence. */
static int check_model(const struct question *q)
{
    char e[1024];
    if (!strcmp(q->phase, "denoise") ||
        (!strcmp(q->phase, "train") && tb_darch_is_diffusion(q->model) == 1)) {
        struct tb_darch d;
        if (tb_darch_is_diffusion(q->model) == 0) {
            fprintf(stderr,
                    "trnbench compare: --model: %s is a Llama: --phase serve or train (denoise "
                    "is a diffusion model's)\n",
                    q->model);
            return -1;
        }
        if (tb_darch_find(&d, q->model, e, sizeof e) != 0) {
            fprintf(stderr, "trnbench compare: --model: %s\n", e);
            return -1;
        }
    } else {
        struct tb_arch a;
        if (tb_darch_is_diffusion(q->model) == 1) {
            fprintf(stderr,
                    "trnbench compare: --model: %s is a diffusion model: --phase denoise or "
                    "train\n",
                    q->model);
            return -1;
        }
        if (tb_arch_find(&a, q->model, e, sizeof e) != 0) {
            fprintf(stderr, "trnbench compare: --model: %s\n", e);
            return -1;
        }
        if (q->seq_in + q->seq_out > a.max_context) {
            fprintf(stderr, "trnbench compare: --seq-in%s: %ld tokens exceed %s's context of %d\n",
                    q->seq_out ? " + --seq-out" : "", q->seq_in + q->seq_out, a.name,
                    a.max_context);
            return -1;
        }
    }
    return 0;
}

/* Every target in the catalogue pr, none twice. */
static int check_targets(const struct question *q, const struct tb_pricing *pr)
{
    char list[1024], *t, *save = NULL, *seen[MAX_TARGETS];
    int n = 0;
    if (strlen(q->targets) >= sizeof list || !*q->targets || q->targets[0] == ',' ||
        q->targets[strlen(q->targets) - 1] == ',' || strstr(q->targets, ",,")) {
        fprintf(stderr, "trnbench compare: --targets: an empty or too long list: '%s'\n",
                q->targets);
        return -1;
    }
    snprintf(list, sizeof list, "%s", q->targets);
    for (t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!tb_pricing_instance(pr, t)) {
            fprintf(stderr, "trnbench compare: --targets: unknown target '%s' (not in %s)\n", t,
                    pr->instances_name);
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (!strcmp(seen[i], t)) {
                fprintf(stderr, "trnbench compare: --targets: '%s' given twice\n", t);
                return -1;
            }
        if (n == MAX_TARGETS) {
            fprintf(stderr, "trnbench compare: --targets: more than %d\n", MAX_TARGETS);
            return -1;
        }
        seen[n++] = t;
    }
    return 0;
}

/* The predict line of the question: "target=... model=... phase=... ...". */
static int predict_words(const struct question *q, char *buf, size_t len)
{
    size_t k = 0;
    const char *batch = q->batch                       ? q->batch
                        : !strcmp(q->phase, "serve")   ? SERVE_SWEEP
                        : !strcmp(q->phase, "denoise") ? "max"
                                                       : NULL;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(buf + k, len - k, __VA_ARGS__);                                          \
        if (w_ < 0 || (size_t)w_ >= len - k)                                                       \
            return -1;                                                                             \
        k += (size_t)w_;                                                                           \
    } while (0)
    ADD("target=%s model=%s phase=%s precision=%s", q->targets, q->model, q->phase,
        q->precision ? q->precision : "bf16");
    if (q->seq_in)
        ADD(" seq_in=%ld", q->seq_in);
    if (q->seq_out)
        ADD(" seq_out=%ld", q->seq_out);
    if (batch)
        ADD(" batch=%s", batch);
    if (q->steps)
        ADD(" steps=%ld", q->steps);
    if (q->resolution)
        ADD(" resolution=%ld", q->resolution);
    if (q->instances)
        ADD(" instances=%ld", q->instances);
    if (q->chips)
        ADD(" chips=%ld", q->chips);
    if (q->software)
        ADD(" software=%s", q->software);
#undef ADD
    return 0;
}

/* ---- the results: modeled rows, then the --results rows of the model ---- */

/* Whether run id is among the rows of m. */
static bool has_run(const struct tb_results *m, const char *id)
{
    for (size_t i = 0; i < m->nrows; i++)
        if (!strcmp(tb_result_field(&m->rows[i], "run_id"), id))
            return true;
    return false;
}

/* Append to path the rows of in whose model is the question's, each as it was (a
 * modeled row of a run just modeled is left out: the new one stands for it). Says
 * what it kept and left out. Returns 0 or -1 with a message. */
static int merge_rows(const char *path, const struct tb_results *in, const char *model, char *err,
                      size_t errlen)
{
    struct tb_results fresh;
    struct tb_result_row *rows = tb_alloc_array(in->nrows + 1, sizeof *rows);
    size_t n = 0, other = 0, replaced = 0, nprov[TB_NPROV] = {0};
    int rc = -1;

    memset(&fresh, 0, sizeof fresh);
    if (!rows)
        return tb_err(err, errlen, "out of memory");
    if (tb_file_exists(path) && tb_results_load(&fresh, &path, 1, err, errlen) != 0)
        goto out;
    for (size_t i = 0; i < in->nrows; i++) {
        const struct tb_result *x = &in->rows[i];
        if (strcmp(tb_result_field(x, "model"), model)) {
            other++;
            continue;
        }
        if (x->prov == TB_PROV_MODELED && has_run(&fresh, tb_result_field(x, "run_id"))) {
            replaced++;
            continue;
        }
        for (int c = 0; c < TB_RESULTS_NCOLS; c++) {
            const char *v = tb_result_field(x, TB_RESULTS_COLUMNS[c]);
            rows[n].col[c] = *v ? v : NULL; /* empty workload, config: derived again */
        }
        nprov[x->prov]++;
        n++;
    }
    fprintf(stderr,
            "trnbench compare: --results: %zu row%s added (%zu measured, %zu modeled, %zu "
            "published)",
            n, n == 1 ? "" : "s", nprov[TB_PROV_MEASURED], nprov[TB_PROV_MODELED],
            nprov[TB_PROV_PUBLISHED]);
    if (other)
        fprintf(stderr, "; %zu of other models left out", other);
    if (replaced)
        fprintf(stderr, "; %zu modeled again now, left out", replaced);
    fputc('\n', stderr);
    rc = n ? tb_results_append(path, rows, n, err, errlen) : 0;
out:
    tb_results_release(&fresh);
    free(rows);
    return rc;
}

/* Say which targets have no rows (the model could not predict them: said above). */
static void say_missing(const char *path, const char *targets)
{
    struct tb_results r;
    char e[512], list[1024], *t, *save = NULL;
    if (tb_results_load(&r, &path, 1, e, sizeof e) != 0)
        return;
    snprintf(list, sizeof list, "%s", targets);
    for (t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        bool any = false;
        for (size_t i = 0; i < r.nrows && !any; i++)
            any = !strcmp(tb_result_field(&r.rows[i], "target"), t);
        if (!any)
            fprintf(stderr, "trnbench compare: no rows for %s: not predicted (the reason above)\n",
                    t);
    }
    tb_results_release(&r);
}

/* Remove the scratch folder and what is in it (results.csv, the previous one). */
static void scratch_remove(const char *dir)
{
    char p[4200];
    static const char *const names[] = {"results.csv", "results.previous.csv"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, names[i]) < sizeof p)
            unlink(p);
    rmdir(dir);
}

/* ---- the command ---- */

int tb_cmd_compare(int argc, char **argv)
{
    struct question q;
    struct tb_results given;
    struct tb_plan plan;
    struct tb_suite suite;
    struct tb_run_counts n;
    struct tb_report_info info;
    char err[2048] = "", words[2048], tmp[4096], scratch_res[4200], final_res[4200], previous[4200];
    const char *report_in[1];
    bool have_given = false, had_previous = false, moved = false, plan_loaded = false;
    bool made_out = false, have_pricing = false, have_model = false;
    struct tb_pricing pr;  /* --out did not exist: removed again when nothing is written */
    struct tb_model model; /* with pr, the catalogue: loaded once, handed down */
    int rc, r;
    static const char *const PHASES[] = {"serve", "train", "denoise", NULL};
    int phase = -1;
    struct tb_opt_list results = {q.results, 0, MAX_RESULTS};
    const struct tb_opt opts[] = {
        TB_OPT_STR("model", &q.model),
        TB_OPT_CHOICE("phase", &phase, PHASES),
        TB_OPT_STR("targets", &q.targets),
        TB_OPT_STR("target", &q.targets),
        TB_OPT_STR("out", &q.out),
        TB_OPT_LONG("seq-in", &q.seq_in, 1, 1L << 40),
        TB_OPT_LONG("seq-out", &q.seq_out, 1, 1L << 40),
        TB_OPT_STR("batch", &q.batch),
        TB_OPT_STR("precision", &q.precision),
        TB_OPT_LONG("steps", &q.steps, 1, 1L << 40),
        TB_OPT_LONG("resolution", &q.resolution, 1, 1L << 40),
        TB_OPT_LONG("instances", &q.instances, 1, 1L << 40),
        TB_OPT_LONG("chips", &q.chips, 1, 1L << 40),
        TB_OPT_LIST("results", &results),
        TB_OPT_STR("pricing", &q.ro.purchase),
        TB_OPT_STR("purchase", &q.ro.purchase), /* report's other name */
        TB_OPT_STR("region", &q.ro.region),
        TB_OPT_STR("prices", &q.ro.pricing_dir),
        TB_OPT_STR("baseline", &q.ro.baseline),
        TB_OPT_DOUBLE("ttft-ms", &q.ro.ttft_limit_ms, 1e-9, 1e18),
        TB_OPT_DOUBLE("tpot-ms", &q.ro.tpot_limit_ms, 1e-9, 1e18),
        TB_OPT_DOUBLE("train-tokens", &q.ro.train_tokens, 1e-9, 1e18),
        TB_OPT_DOUBLE("max-price-age", &q.ro.max_price_age_days, 1e-9, 1e18),
        TB_OPT_FN("software", take_software, &q.software),
        TB_OPT_FN("discount", tb_cli_take_discount, &q.discounts),
        TB_OPT_END,
    };

    memset(&q, 0, sizeof q);
    memset(&given, 0, sizeof given);
    memset(&suite, 0, sizeof suite);
    memset(&plan, 0, sizeof plan);
    tmp[0] = '\0';
    tb_report_opts_init(&q.ro);
    q.ro.discounts = &q.discounts;
    if ((rc = tb_cli_parse("compare", argc, argv, opts, usage)) != TB_CLI_GO)
        goto out;
    rc = 2;
    q.phase = phase >= 0 ? PHASES[phase] : NULL;
    q.nresults = results.n;
    if (optind < argc) {
        fprintf(stderr,
                "trnbench compare: unexpected argument '%s' (results files: --results FILE)\n",
                argv[optind]);
        goto out;
    }
    {
        const char *missing = !q.model     ? "--model M"
                              : !q.phase   ? "--phase serve|train|denoise"
                              : !q.targets ? "--targets T1,T2,..."
                              : !q.out     ? "--out DIR"
                                           : NULL;
        if (missing) {
            fprintf(stderr, "trnbench compare: %s is required\n", missing);
            usage(stderr);
            goto out;
        }
    }

    /* 1. every check before anything is written */
    if (check_shape(&q) != 0 || check_model(&q) != 0)
        goto out;
    if (tb_pricing_load(&pr, q.ro.pricing_dir, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench compare: %s\n", err);
        goto out;
    }
    have_pricing = true;
    if (check_targets(&q, &pr) != 0)
        goto out;
    if (tb_model_load(&model, &pr, q.ro.pricing_dir, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench compare: %s\n", err);
        goto out;
    }
    have_model = true;
    q.ro.catalog_pricing = &pr;
    q.ro.catalog_model = &model;
    /* the price choice and the baseline, then the --results rows as the report takes
     * them, so a bad row is named in its own file */
    if (tb_report_check(&q.ro, err, sizeof err) != TB_OK) {
        fprintf(stderr, "trnbench compare: %s\n", err);
        goto out;
    }
    q.ro.results = q.results;
    q.ro.nresults = q.nresults;
    r = q.nresults ? tb_report_check(&q.ro, err, sizeof err) : TB_OK;
    q.ro.results = NULL;
    q.ro.nresults = 0;
    if (r != TB_OK) {
        fprintf(stderr, "trnbench compare: --results: %s\n", err);
        goto out;
    }
    if (q.nresults) {
        if (tb_results_load(&given, q.results, q.nresults, err, sizeof err) != 0) {
            fprintf(stderr, "trnbench compare: --results: %s\n", err);
            goto out;
        }
        have_given = true;
        for (const char *s = given.notes; *s;) { /* a predict output read */
            size_t k = strcspn(s, "\n");
            fprintf(stderr, "trnbench compare: note: %.*s\n", (int)k, s);
            s += k + (s[k] == '\n');
        }
    }
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/.compare.tmp.%ld", q.out, (long)getpid()) >=
            sizeof tmp ||
        predict_words(&q, words, sizeof words) != 0) {
        fprintf(stderr, "trnbench compare: --out or --targets: too long\n");
        tmp[0] = '\0';
        goto out;
    }
    snprintf(scratch_res, sizeof scratch_res, "%s/results.csv", tmp);
    snprintf(final_res, sizeof final_res, "%s/results.csv", q.out);
    snprintf(previous, sizeof previous, "%s/results.previous.csv", tmp);
    if (tb_suite_from_predict(&suite, "compare", words, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench compare: %s\n", err);
        tmp[0] = '\0';
        goto out;
    }
    plan_loaded = true;
    if (tb_plan_load_modeled(&plan, &suite, q.ro.pricing_dir, &pr, &model, tmp, err, sizeof err) !=
        TB_OK) {
        fprintf(stderr, "trnbench compare: %s\n", err);
        tmp[0] = '\0';
        goto out;
    }
    if (access(final_res, F_OK) == 0 && access(final_res, W_OK) != 0) {
        fprintf(stderr, "trnbench compare: cannot replace '%s': %s\n", final_res, strerror(errno));
        tmp[0] = '\0';
        goto out;
    }

    /* 2. the results in a scratch folder inside --out */
    rc = 1;
    made_out = !tb_file_exists(q.out);
    if (tb_mkdir_p(q.out, err, sizeof err) != 0 || tb_mkdir_p(tmp, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench compare: %s\n", err);
        goto out;
    }
    fprintf(stderr, "trnbench compare: %s\n", words);
    if (tb_plan_execute(&plan, &n, err, sizeof err) != TB_OK) {
        if (err[0])
            fprintf(stderr, "trnbench compare: %s\n", err);
        goto out;
    }
    if (have_given && merge_rows(scratch_res, &given, q.model, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench compare: %s\n", err);
        goto out;
    }
    if (!tb_file_exists(scratch_res)) {
        fprintf(stderr,
                "trnbench compare: nothing to report: the model predicted %s on none of the "
                "targets (the reasons above) and no --results rows were added; nothing "
                "written\n",
                q.model);
        goto out;
    }
    say_missing(scratch_res, q.targets);

    /* 3. results.csv into place (the previous one kept aside), then the report over it */
    had_previous = tb_file_exists(final_res);
    if ((had_previous && rename(final_res, previous) != 0) || rename(scratch_res, final_res) != 0) {
        fprintf(stderr, "trnbench compare: cannot move '%s' into '%s': %s\n", scratch_res, q.out,
                strerror(errno));
        if (had_previous)
            rename(previous, final_res);
        goto out;
    }
    moved = true;
    report_in[0] = final_res;
    q.ro.results = report_in;
    q.ro.nresults = 1;
    q.ro.out_dir = q.out;
    r = tb_report_write(&q.ro, &info, err, sizeof err);
    if (r != TB_OK) {
        fprintf(stderr, "trnbench compare: %s\n", err);
        rc = tb_cli_exit_status(r);
        goto out;
    }
    moved = made_out = false; /* published: the new results stay */
    for (const char *s = info.notes; *s;) {
        size_t k = strcspn(s, "\n");
        fprintf(stderr, "trnbench compare: note: %.*s\n", (int)k, s);
        s += k + (s[k] == '\n');
    }
    printf("trnbench compare: %s %s on %s: %d modeled run%s, %zu rows, %zu throughput rows "
           "priced (%s, %s)",
           q.model, q.phase, q.targets, n.modeled, n.modeled == 1 ? "" : "s", info.nrows,
           info.ncosted, q.ro.purchase ? q.ro.purchase : "on-demand",
           q.ro.region ? q.ro.region : "us-east-1");
    if (info.nstand_in)
        printf(", %zu at their target's nearest comparable price", info.nstand_in);
    printf("; wrote %s/report.html\n", info.out_dir);
    fputs(info.answers, stdout); /* the answer itself, as the summary gives it */
    rc = 0;
out:
    if (moved) { /* the report failed: the folder as it was */
        unlink(final_res);
        if (had_previous)
            rename(previous, final_res);
    }
    if (tmp[0])
        scratch_remove(tmp);
    if (made_out && rc != 0)
        rmdir(q.out);
    if (plan_loaded)
        tb_plan_release(&plan);
    tb_suite_release(&suite);
    if (have_given)
        tb_results_release(&given);
    if (have_model)
        tb_model_release(&model);
    if (have_pricing)
        tb_pricing_release(&pr);
    return rc;
}
