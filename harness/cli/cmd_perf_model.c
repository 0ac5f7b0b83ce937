/*
 * harness/cli/cmd_perf_model.c: `trnbench perf-predictor` (also `trnbench perf --predictor`),
 * the performance model's speed on one core (the calling thread; the model is
 * single-threaded):
 *
 *   layouts/s    training layouts evaluated per second while searching layouts for
 *                llama-3.1-70b on 64 H100 (8 x p5.48xlarge), target >= 100,000
 *   405B search  one whole layout search for llama-3.1-405b on 1,024 Trainium2
 *                (64 x trn2.48xlarge, 4,096 logical NeuronCores), target < 1 s
 *
 * Each figure: one warm-up, then repetitions for at least a second; the median is
 * printed. A benchmark, not a test. Exit 0 when both targets are met, 1 otherwise, 2 on
 * a usage error (it takes no option but --help).
 */
#include "cli.h"
#include "cli_opt.h"
#include "tb_log.h"
#include "tb_arch.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_stats.h"
#include "tb_timer.h"
#include "tb_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PM_TARGET_LAYOUTS_PER_S 100000.0
#define PM_TARGET_SEARCH_S      1.0
#define PM_MAX_REPS             1000

/* The name it was called by, for its usage and headings: "perf-predictor", or "perf --predictor"
 * when the alias `trnbench perf --predictor` called it (argv[0] "perf"). */
static const char *self = "perf-predictor";

static void usage(FILE *f)
{
    fprintf(f, "usage: trnbench %s\n", self);
    fputs("\n"
          "The performance model's speed on one core: training layouts evaluated per\n"
          "second while searching layouts for llama-3.1-70b on 64 H100 (target >= 100000)\n"
          "and one whole layout search for llama-3.1-405b on 1024 Trainium2 (target < 1 s).\n"
          "Each figure: one warm-up, then repetitions for at least a second; the median\n"
          "is printed. Exit status 0 when both targets are met, 1 otherwise.\n"
          "\n"
          "  -h, --help      this text\n"
          "`trnbench perf-predictor` and `trnbench perf --predictor` are the same command.\n",
          f);
}

/* Time searches of sc until min_s has passed (at least 5). Fills the per-search
 * seconds and layouts. Returns the count, or -1 with err. */
static int time_searches(const struct tb_model *m, const struct tb_scenario *sc, double min_s,
                         double *secs, double *layouts, char *err, size_t errlen)
{
    struct tb_prediction p;
    uint64_t start = tb_timer_now_ns();
    int n = 0;

    if (tb_model_predict(m, sc, &p, err, errlen) != 0) /* warm-up */
        return -1;
    if (!p.fits)
        return tb_err(err, errlen, "the benchmark scenario does not fit: %s", p.why);
    while (n < PM_MAX_REPS && (n < 5 || tb_timer_seconds(start, tb_timer_now_ns()) < min_s)) {
        uint64_t t0 = tb_timer_now_ns();
        tb_model_predict(m, sc, &p, err, errlen);
        secs[n] = tb_timer_seconds(t0, tb_timer_now_ns());
        layouts[n] = (double)p.layouts_evaluated;
        n++;
    }
    return n;
}

int tb_cmd_perf_model(int argc, char **argv)
{
    struct tb_pricing pr;
    struct tb_model m;
    struct tb_arch a70, a405;
    struct tb_scenario sc;
    struct tb_stats st;
    double *secs = NULL, *layouts = NULL, *rate = NULL, lps, search_s;
    char err[1024];
    int n, rc = 1;

    const struct tb_opt opts[] = {
        TB_OPT_END,
    };

    self = strcmp(argv[0], "perf") ? "perf-predictor" : "perf --predictor";
    if ((rc = tb_cli_parse(argv[0], argc, argv, opts, usage)) != TB_CLI_GO)
        return rc;
    rc = 1;
    if (optind < argc) {
        tb_logf("unknown argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (tb_pricing_load(&pr, NULL, err, sizeof err) != 0) {
        tb_logf("%s\n", err);
        return 2;
    }
    if (tb_model_load(&m, &pr, NULL, err, sizeof err) != 0) {
        tb_logf("%s\n", err);
        tb_pricing_release(&pr);
        return 2;
    }
    secs = tb_alloc_array(PM_MAX_REPS, sizeof *secs);
    layouts = tb_alloc_array(PM_MAX_REPS, sizeof *layouts);
    rate = tb_alloc_array(PM_MAX_REPS, sizeof *rate);
    if (!secs || !layouts || !rate || tb_arch_find(&a70, "llama-3.1-70b", err, sizeof err) ||
        tb_arch_find(&a405, "llama-3.1-405b", err, sizeof err)) {
        tb_logf("%s\n", secs && layouts && rate ? err : "out of memory");
        goto out;
    }
    printf("trnbench %s: %s, one core (single-threaded)\n", self, TB_MODEL_VERSION);

    memset(&sc, 0, sizeof sc);
    sc.arch = &a70;
    sc.inst = tb_pricing_instance(&pr, "p5.48xlarge");
    sc.phase = TB_PHASE_TRAIN;
    sc.precision = "bf16";
    sc.instances = 8;
    sc.seq_in = 8192;
    sc.batch = 1024;
    n = time_searches(&m, &sc, 1.0, secs, layouts, err, sizeof err);
    if (n < 0) {
        tb_logf("%s\n", err);
        goto out;
    }
    for (int i = 0; i < n; i++)
        rate[i] = layouts[i] / secs[i];
    tb_stats_compute(&st, rate, (size_t)n, err, sizeof err);
    lps = st.median;
    printf("%-52s %12.0f layouts/s (min %.0f, max %.0f, %d searches of %.0f layouts)  %s\n",
           "layout search, llama-3.1-70b on 64 H100", lps, st.min, st.max, n, layouts[0],
           lps >= PM_TARGET_LAYOUTS_PER_S ? "PASS (>= 100000)" : "FAIL (< 100000)");

    sc.arch = &a405;
    sc.inst = tb_pricing_instance(&pr, "trn2.48xlarge");
    sc.instances = 64;
    sc.chips = 1024;
    n = time_searches(&m, &sc, 1.0, secs, layouts, err, sizeof err);
    if (n < 0) {
        tb_logf("%s\n", err);
        goto out;
    }
    tb_stats_compute(&st, secs, (size_t)n, err, sizeof err);
    search_s = st.median;
    printf("%-52s %12.3f ms (min %.3f, max %.3f, %d searches of %.0f layouts)  %s\n",
           "whole search, llama-3.1-405b on 1024 Trainium2", search_s * 1e3, st.min * 1e3,
           st.max * 1e3, n, layouts[0], search_s < PM_TARGET_SEARCH_S ? "PASS (< 1 s)" : "FAIL");
    rc = lps >= PM_TARGET_LAYOUTS_PER_S && search_s < PM_TARGET_SEARCH_S ? 0 : 1;
out:
    free(secs);
    free(layouts);
    free(rate);
    tb_model_release(&m);
    tb_pricing_release(&pr);
    return rc;
}
