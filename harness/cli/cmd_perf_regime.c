/*
 * harness/cli/cmd_perf_regime.c: `trnbench perf-regime` (also `trnbench perf --regime`),
 * the serving regimes
 * (harness/model/tb_regime.h) checked against a server we can measure: `trnbench serve`
 * on the loopback.
 *
 * 1. Step costs, measured in this process on the engine `trnbench serve` runs (the CPU
 *    Llama, tb_llama_prefill_slot / tb_llama_decode_slots): the prefill of one prompt of
 *    seq_in tokens, and one decode step at batch B = 1, 2, 4, ... up to the largest
 *    concurrency, each at the mean context seq_in + seq_out / 2 (medians of REPS after a
 *    warm-up).
 * 2. The regime solver fed those costs as the server's: `trnbench serve` prefills ONE
 *    prompt per iteration (tb_batcher.h: max_prompts 1) beside the decode of every
 *    running sequence, with no token budget between them (the budget given the solver
 *    holds the whole prompt and every sequence: seq_in + max-num-seqs), B prompts cost
 *    B prefills,
 *    a decode step at a batch between two measured ones is interpolated linearly, and at
 *    most max-num-seqs (the largest concurrency) run at once.
 * 3. `trnbench serve --engine cpu` started on a free loopback port and the load client
 *    (tb_load_run) at each concurrency N, a closed loop of fixed lengths: mean TTFT,
 *    mean TPOT ((last chunk - first chunk) / (chunks - 1)) and output tokens/s.
 * Printed side by side with the error of the prediction. Not a timed test: the figures
 * move with the machine's load (the client and the server share its cores).
 */
#include "cli.h"
#include "cli_opt.h"
#include "tb_log.h"
#include "tb_arch.h"
#include "tb_loadgen.h"
#include "tb_regime.h"
#include "tb_server_proc.h"
#include "tb_stats.h"
#include "tb_util.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXLEV 8
#define BURSTS 5 /* bursts of B per calibration point */

/* Measured step costs: the prefill of one prompt, decode steps at batches b[i]. */
struct measured {
    double prefill_s, seq_in;
    int n;
    double b[16], dec[16];
    double cap;
};

static double m_prefill(const void *ctx, double B, double T)
{
    const struct measured *m = ctx;
    return B * m->prefill_s * T / m->seq_in; /* one prompt at a time */
}

static double m_decode(const void *ctx, double B, double len)
{
    const struct measured *m = ctx;
    (void)len; /* measured at the mean context */
    if (B <= m->b[0])
        return m->dec[0];
    for (int i = 1; i < m->n; i++)
        if (B <= m->b[i])
            return m->dec[i - 1] +
                   (m->dec[i] - m->dec[i - 1]) * (B - m->b[i - 1]) / (m->b[i] - m->b[i - 1]);
    /* beyond the largest: the last slope */
    return m->n > 1
               ? m->dec[m->n - 1] + (m->dec[m->n - 1] - m->dec[m->n - 2]) * (B - m->b[m->n - 1]) /
                                        (m->b[m->n - 1] - m->b[m->n - 2])
               : m->dec[0];
}

static double m_capacity(const void *ctx, double tin, double len)
{
    const struct measured *m = ctx;
    (void)tin;
    (void)len;
    return m->cap;
}

static double median(const double *v, int n)
{
    static const double P50 = 50;
    double x = NAN;
    tb_stats_percentiles(v, (size_t)n, &P50, 1, &x, NULL, 0);
    return x;
}

/* A load against the server: N in flight, `requests` counted after N warm-ups; rate 0 a
 * closed loop, INFINITY every request sent at once. */
static struct tb_load_spec load_spec(const char *url, const char *model, int vocab, int seq_in,
                                     int seq_out, uint64_t seed, int N, int requests, double rate)
{
    return (struct tb_load_spec){.base_url = url,
                                 .served_model = model,
                                 .api = TB_API_COMPLETIONS,
                                 .seq_in = seq_in,
                                 .seq_out = seq_out,
                                 .vocab = vocab,
                                 .seed = seed,
                                 .concurrency = N,
                                 .request_rate = rate,
                                 .requests = requests,
                                 .warmup_requests = N,
                                 .threads = 1};
}

/* Step 1: the server's own step costs, from bursts: B requests sent at once (B = 1, 2,
 * 4, ... bmax; BURSTS bursts each, at concurrency B with every request sent at
 * once); the prefill is a lone request's TTFT, a decode step at batch B the median
 * over the requests of the mean gap between chunks in the second half of each one's
 * output, where every
 * prompt of the burst has been prefilled (the server prefills one per iteration) and B
 * sequences decode together; a warm-up burst first, never counted. */
static int calibrate(const char *url, const char *model, int vocab, int seq_in, int seq_out,
                     int bmax, struct measured *ms, char *err, size_t errlen)
{
    ms->n = 0;
    ms->seq_in = seq_in;
    for (int B = 1;; B = B * 2 > bmax ? bmax : B * 2) {
        struct tb_load_spec sp =
            load_spec(url, model, vocab, seq_in, seq_out, 7, B, B * BURSTS, INFINITY);
        struct tb_load_result r;
        double *gap, *first;
        size_t ng = 0, nf = 0;
        memset(&r, 0, sizeof r);
        if (tb_load_run(&sp, &r, err, errlen) != 0)
            return -1;
        gap = calloc(r.nreqs + 1, sizeof *gap);
        first = calloc(r.nreqs + 1, sizeof *first);
        if (!gap || !first) {
            free(gap);
            free(first);
            tb_load_result_release(&r);
            return tb_err(err, errlen, "out of memory");
        }
        for (size_t i = 0; i < r.nreqs; i++) {
            const struct tb_request_rec *q = &r.reqs[i];
            if (!q->ok || isnan(q->t_first)) {
                free(gap);
                free(first);
                tb_load_result_release(&r);
                return tb_err(err, errlen, "calibration burst of %d: a request failed: %s", B,
                              r.failures);
            }
            first[nf++] = q->t_first - q->t_sent;
            {
                /* the mean gap over the steady part (chunks can arrive bunched: single
                 * gaps say little) */
                int k0 = q->chunks / 2 > B ? q->chunks / 2 : B, k1 = q->chunks - 1;
                if (k1 > k0)
                    gap[ng++] = (q->chunk_t[k1] - q->chunk_t[k0]) / (k1 - k0);
            }
        }
        tb_load_result_release(&r);
        if (B == 1)
            ms->prefill_s = median(first, (int)nf);
        /* a noisy machine must not make a larger batch cheaper */
        if (ms->n > 0 && median(gap, (int)ng) < ms->dec[ms->n - 1])
            gap[0] = ms->dec[ms->n - 1], ng = 1;
        if (ng == 0) {
            free(gap);
            free(first);
            return tb_err(err, errlen,
                          "calibration burst of %d: no steady decode (seq_out %d: give at "
                          "least 2 x %d)",
                          B, seq_out, B + 1);
        }
        ms->b[ms->n] = B;
        ms->dec[ms->n++] = median(gap, (int)ng);
        free(gap);
        free(first);
        if (B >= bmax || ms->n >= 16)
            break;
    }
    /* the lone request's TTFT holds its prefill and the first token's step */
    ms->cap = bmax;
    return 0;
}

/* Whether the calibration was taken on a quiet machine: a lone request's TTFT again (the
 * median of 3, after the bursts) within 3x of the bursts' (*now: that TTFT). Other work
 * on the machine during the bursts (seen: a lone prefill of 216 ms, then levels of 3 ms)
 * moves every step cost alike, and every prediction with it. 0, or -1 with a message. */
static int calibration_holds(const char *url, const char *model, int vocab, int seq_in, int seq_out,
                             const struct measured *ms, bool *holds, double *now, char *err,
                             size_t errlen)
{
    struct tb_load_spec sp = load_spec(url, model, vocab, seq_in, seq_out, 11, 1, 3, INFINITY);
    struct tb_load_result r;
    double t[3];
    int n = 0;
    memset(&r, 0, sizeof r);
    if (tb_load_run(&sp, &r, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < r.nreqs && n < 3; i++)
        if (r.reqs[i].ok && !isnan(r.reqs[i].t_first))
            t[n++] = r.reqs[i].t_first - r.reqs[i].t_sent;
    tb_load_result_release(&r);
    if (n == 0)
        return tb_err(err, errlen, "the calibration's check: no request answered");
    *now = median(t, n);
    *holds = *now < 3.0 * ms->prefill_s && ms->prefill_s < 3.0 * *now;
    return 0;
}

/* Step 3: one closed-loop level against the server. */
static int measure(const char *url, const char *model, int vocab, int seq_in, int seq_out, int N,
                   int requests, double *ttft, double *tpot, double *tps, char *err, size_t errlen)
{
    struct tb_load_spec sp = load_spec(url, model, vocab, seq_in, seq_out, 42, N, requests, 0);
    struct tb_load_result r;
    double sf = 0, sp_ = 0, out = 0;
    int nf = 0, np = 0;
    memset(&r, 0, sizeof r);
    if (tb_load_run(&sp, &r, err, errlen) != 0)
        return -1;
    if (r.failed > 0) {
        tb_err(err, errlen, "concurrency %d: %zu requests failed: %s", N, r.failed, r.failures);
        tb_load_result_release(&r);
        return -1;
    }
    for (size_t i = 0; i < r.nreqs; i++) {
        const struct tb_request_rec *q = &r.reqs[i];
        if (!q->ok || isnan(q->t_first))
            continue;
        sf += q->t_first - q->t_sent;
        nf++;
        if (q->chunks > 1) {
            sp_ += (q->chunk_t[q->chunks - 1] - q->chunk_t[0]) / (q->chunks - 1);
            np++;
        }
        out += q->output_tokens;
    }
    *ttft = nf ? sf / nf : NAN;
    *tpot = np ? sp_ / np : NAN;
    *tps = r.window_s > 0 ? out / r.window_s : NAN;
    tb_load_result_release(&r);
    return 0;
}

/* The name it was called by, for its usage and headings: "perf-regime", or "perf --regime" when
 * the alias `trnbench perf --regime` called it (argv[0] "perf"). */
static const char *self = "perf-regime";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trnbench %s [--model M] [--seq-in T] [--seq-out N]\n"
            "%*s[--concurrency C1,C2,...] [--requests R]\n",
            self, 16 + (int)strlen(self) + 1, "");
    fputs("\n"
          "The serving regimes checked against `trnbench serve` on this machine: the\n"
          "engine's step costs measured here (a prompt's prefill, a decode step at each\n"
          "batch), fed to the regime solver as a server that prefills one prompt per\n"
          "iteration, predicted TTFT, TPOT and output tokens/s at each concurrency against\n"
          "what the load client measures from `trnbench serve --engine cpu` on the\n"
          "loopback. Defaults: llama-tiny, 64 in, 32 out, concurrency 1,2,4,8, 4 x C\n"
          "requests per level (at least 8). Printed, not a timed test.\n"
          "`trnbench perf-regime` and `trnbench perf --regime` are the same command.\n",
          f);
}

/* The concurrencies measured: at most MAXLEV, each 1..256, increasing. */
struct levels {
    int v[MAXLEV];
    int n;
};

/* --concurrency "1,2,4" into the option's dst (struct levels), unchanged on an error. */
static int take_levels(const struct tb_opt *o, const char *s, char *err, size_t errlen)
{
    struct levels *lv = o->dst, t = {.n = 0};
    char buf[128], *save = NULL;
    long x;
    if (strlen(s) < sizeof buf) {
        strcpy(buf, s);
        for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            if (t.n >= MAXLEV || tb_parse_long(w, 1, 256, &x) != 0 ||
                (t.n > 0 && x <= t.v[t.n - 1])) {
                t.n = 0;
                break;
            }
            t.v[t.n++] = (int)x;
        }
    }
    if (t.n == 0)
        return tb_err(err, errlen, "'%s' is not up to %d increasing counts from 1 to 256", s,
                      MAXLEV);
    *lv = t;
    return 0;
}

int tb_cmd_perf_regime(int argc, char **argv)
{
    const char *model = "llama-tiny";
    long seq_in = 64, seq_out = 32, requests = 0;
    struct levels lv = {{1, 2, 4, 8}, 4};
    const struct tb_opt opts[] = {
        TB_OPT_STR("model", &model),
        TB_OPT_LONG("seq-in", &seq_in, 1, 100000),
        TB_OPT_LONG("seq-out", &seq_out, 2, 100000),
        TB_OPT_FN("concurrency", take_levels, &lv),
        TB_OPT_LONG("requests", &requests, 1, 100000),
        TB_OPT_END,
    };
    bool disturb;
    char url[64], how[160];
    char err[1024];
    struct tb_server_proc srv;
    struct measured ms;
    struct tb_arch a;
    int rc;

    self = strcmp(argv[0], "perf") ? "perf-regime" : "perf --regime";
    rc = tb_cli_parse(argv[0], argc, argv, opts, usage);

    if (rc != TB_CLI_GO)
        return rc;
    rc = 0;
    if (optind < argc) {
        tb_logf("unknown argument '%s'\n", argv[optind]);
        return 2;
    }
    if (tb_arch_find(&a, model, err, sizeof err) != 0) {
        tb_logf("--model: %s\n", err);
        return 2;
    }

    /* 3. the server */
    if (tb_server_start_self(&srv, "perf-regime", model, "cpu", NULL, lv.v[lv.n - 1],
                             seq_in + seq_out, 60, url, sizeof url, err, sizeof err) != 0) {
        tb_logf("%s\n", err);
        return 1;
    }
    /* 1. the server's step costs */
    memset(&ms, 0, sizeof ms);
    /* TRNBENCH_TEST_REGIME_DISTURB (tests only): the first calibration's costs 30x, as
     * other work on the machine made them once */
    disturb = tb_cli_test_switch(argv[0], "TRNBENCH_TEST_REGIME_DISTURB", true);
    for (int tries = 0; tries < 2; tries++) {
        bool holds = false;
        double now = 0;
        if (calibrate(url, model, a.vocab, (int)seq_in, (int)seq_out, lv.v[lv.n - 1], &ms, err,
                      sizeof err) != 0)
            rc = 1;
        else if (disturb && tries == 0) {
            ms.prefill_s *= 30;
            for (int i = 0; i < ms.n; i++)
                ms.dec[i] *= 30;
        }
        if (rc != 0 || calibration_holds(url, model, a.vocab, (int)seq_in, (int)seq_out, &ms,
                                         &holds, &now, err, sizeof err) != 0) {
            rc = 1;
            break;
        }
        if (holds)
            break;
        /* said, and measured once more; a second disturbed calibration is kept, said */
        printf("calibration disturbed: a lone request's TTFT was %.2f ms in the bursts and "
               "%.2f ms after them (other work on the machine?)%s\n",
               ms.prefill_s * 1e3, now * 1e3,
               tries == 0 ? "; calibrating once more" : "; kept, the predictions are suspect");
    }
    if (rc != 0) {
        tb_logf("%s\n", err);
    } else {
        printf("regime check: %s, %ld in, %ld out, trnbench serve --engine cpu (one prompt "
               "prefilled per iteration, max-num-seqs %d)\n",
               model, seq_in, seq_out, lv.v[lv.n - 1]);
        printf("step costs from bursts against it (medians): prefill %.2f ms (a lone "
               "request's TTFT);",
               ms.prefill_s * 1e3);
        for (int i = 0; i < ms.n; i++)
            printf(" decode B=%.0f %.2f ms%s", ms.b[i], ms.dec[i] * 1e3, i + 1 < ms.n ? "," : "\n");
        printf("%4s  %9s %9s %6s  %8s %8s %6s  %9s %9s %6s\n", "N", "TTFT pred", "meas", "err%",
               "TPOT prd", "meas", "err%", "tok/s prd", "meas", "err%");
        fflush(stdout);
    }
    for (int k = 0; k < lv.n && rc == 0; k++) {
        int N = lv.v[k], R = requests > 0 ? (int)requests : (4 * N > 8 ? 4 * N : 8);
        struct tb_regime_costs cost = {
            &ms, m_prefill, m_decode, m_capacity, (double)(seq_in + lv.v[lv.n - 1]), 1};
        struct tb_regime_lengths L = {0};
        struct tb_regime_load load = {0};
        struct tb_regime_result o;
        double ttft, tpot, tps, ptps;
        L.n = 1;
        L.tin[0] = L.tin_p99 = (double)seq_in;
        L.tout[0] = (double)seq_out;
        L.w[0] = 1;
        load.concurrency = N;
        if (tb_regime_solve(&cost, &L, &load, &o, err, sizeof err) != 0 ||
            measure(url, model, a.vocab, (int)seq_in, (int)seq_out, N, R, &ttft, &tpot, &tps, err,
                    sizeof err) != 0) {
            tb_logf("%s\n", err);
            rc = 1;
            break;
        }
        ptps = o.rate * (double)seq_out;
        printf("%4d  %9.2f %9.2f %+6.0f  %8.2f %8.2f %+6.0f  %9.1f %9.1f %+6.0f\n", N,
               o.ttft_s * 1e3, ttft * 1e3, 100 * (o.ttft_s - ttft) / ttft, o.tpot_s * 1e3,
               tpot * 1e3, 100 * (o.tpot_s - tpot) / tpot, ptps, tps, 100 * (ptps - tps) / tps);
        fflush(stdout);
    }
    tb_server_stop(&srv, 0, how, sizeof how);
    if (rc == 0)
        unlink(srv.log_path);
    else
        tb_logf("the server's log: %s\n", srv.log_path);
    printf("(ms; err%% = (predicted - measured) / measured)\n");
    return rc;
}
