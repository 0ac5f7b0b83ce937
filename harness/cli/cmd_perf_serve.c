/*
 * harness/cli/cmd_perf_serve.c: what continuous batching costs on this CPU
 * (tb_perf_batching, declared in harness/serve/tb_batcher.h): static-batch decode with
 * tb_llama_prefill + tb_llama_decode against the batcher's decode steps over the same
 * requests, submitted together and then arriving staggered; and `trnbench perf
 * --serve`, which prints it beside the load client's own cost (tb_perf_client against
 * `trnbench serve --engine instant`, a server that answers at once). Printed figures,
 * not a timed test.
 *
 * Figures (medians of REPS repetitions after one warm-up):
 * Staggered: request i arrives when request i-1 has produced seq_out / B tokens.
 *   decode tokens/s      tokens produced by decode steps / seconds in decode steps
 *                        (static: B * (seq_out - 1) / the decode loop's time; batcher:
 *                        its decode_tokens / decode_s counters)
 *   end-to-end tokens/s  B * seq_out / (prefill + decode) for the static batch; for the
 *                        batcher B * seq_out / (first submit to last token)
 * The ratio is the batcher's decode tokens/s over the static batch's (target >= 0.70).
 */
#include "tb_arch.h"
#include "cli.h"
#include "cli_opt.h"
#include "tb_log.h"
#include "tb_batcher.h"
#include "tb_executor.h"
#include "tb_loadgen.h"
#include "tb_server_proc.h"
#include "tb_stats.h"
#include "tb_timer.h"
#include "tb_util.h"

#include "workloads/llama/llama.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#define REPS 5

/* The median of v[0..n-1] (tb_stats). */
static double median(const double *v, int n)
{
    static const double P50 = 50;
    double m = NAN;
    tb_stats_percentiles(v, (size_t)n, &P50, 1, &m, NULL, 0);
    return m;
}

/* Greedy: the index of the largest logit (tb_exec_argmax, for one row). */
static int argmax(const float *x, int n)
{
    int best;
    tb_exec_argmax(x, 1, n, &best);
    return best;
}

/* One static batch: prefill B prompts, then seq_out - 1 greedy decode steps. */
static int run_static(struct tb_llama *m, const int *prompts, int B, int seq_in, int seq_out,
                      double *prefill_s, double *decode_s, char *err, size_t errlen)
{
    int V = m->arch->vocab, *tok = malloc((size_t)B * sizeof *tok);
    if (!tok)
        return tb_err(err, errlen, "out of memory");
    uint64_t t0 = tb_timer_now_ns();
    if (tb_llama_prefill(m, prompts, B, seq_in, err, errlen) != 0) {
        free(tok);
        return -1;
    }
    uint64_t t1 = tb_timer_now_ns();
    for (int k = 0; k < seq_out - 1; k++) {
        for (int b = 0; b < B; b++)
            tok[b] = argmax(m->logits + (size_t)b * V, V);
        if (tb_llama_decode(m, tok, B, seq_in + k, err, errlen) != 0) {
            free(tok);
            return -1;
        }
    }
    uint64_t t2 = tb_timer_now_ns();
    *prefill_s = tb_timer_seconds(t0, t1);
    *decode_s = tb_timer_seconds(t1, t2);
    free(tok);
    return 0;
}

/* B requests through a fresh batcher: all together, or (stagger) each one when the one
 * before it has produced seq_out / B tokens, so that sequences join a running batch
 * whatever this machine's speed. */
static int run_batcher(struct tb_llama *m, const int *prompts, int B, int seq_in, int seq_out,
                       bool stagger, double *decode_tps, double *e2e_tps, int *max_running,
                       char *err, size_t errlen)
{
    struct tb_batcher_opts o = {.engine = TB_BATCHER_CPU,
                                .model = m,
                                .vocab = m->arch->vocab,
                                .max_num_seqs = B,
                                .max_model_len = seq_in + seq_out,
                                .kv_cache_tokens = (long)B * (seq_in + seq_out),
                                .eos_id = -1};
    struct tb_request **r = calloc((size_t)B, sizeof *r);
    int *ids = malloc((size_t)seq_out * sizeof *ids), rc = -1, got = 0;
    struct tb_batcher *b = NULL;
    struct tb_batcher_stats st;
    enum tb_finish fin;

    if (!r || !ids) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    if (tb_batcher_new(&b, &o, err, errlen) != 0)
        goto out;
    uint64_t t0 = tb_timer_now_ns();
    for (int i = 0; i < B; i++) {
        /* wait on the request's condition variable: polling would take a core from
         * the engine */
        for (int k = 0; stagger && i > 0 && k < seq_out / B;) {
            int n = tb_request_take(r[i - 1], ids, seq_out / B - k, -1, &fin);
            k += n;
            got += n;
            if (fin != TB_FINISH_NONE)
                break;
        }
        if (tb_batcher_submit(b, prompts + (size_t)i * seq_in, seq_in, seq_out, 0, true, &r[i], err,
                              errlen) != 0)
            goto out;
    }
    for (int i = 0; i < B; i++) {
        fin = TB_FINISH_NONE;
        while (fin == TB_FINISH_NONE)
            got += tb_request_take(r[i], ids, seq_out, -1, &fin);
        if (fin != TB_FINISH_LENGTH) {
            tb_err(err, errlen, "request %d ended early (%s)", i, tb_finish_to_string(fin));
            goto out;
        }
    }
    uint64_t t1 = tb_timer_now_ns();
    tb_batcher_stats(b, &st);
    if (got != B * seq_out) {
        tb_err(err, errlen, "%d tokens, expected %d", got, B * seq_out);
        goto out;
    }
    *decode_tps = st.decode_s > 0 ? (double)st.decode_tokens / st.decode_s : 0;
    *e2e_tps = (double)got / tb_timer_seconds(t0, t1);
    *max_running = st.max_running;
    rc = 0;
out:
    for (int i = 0; r && i < B; i++)
        tb_request_release(r[i]);
    tb_batcher_free(b);
    free(r);
    free(ids);
    return rc;
}

int tb_perf_batching(FILE *out, const char *model, int layers, int B, int seq_in, int seq_out,
                     char *err, size_t errlen)
{
    struct tb_arch a;
    struct tb_llama m;
    double s_pre[REPS], s_dec[REPS], s_tps[REPS], s_e2e[REPS];
    double t_tps[REPS], t_e2e[REPS], g_tps[REPS], g_e2e[REPS];
    int *prompts = NULL, rc = -1, maxrun_t = 0, maxrun_g = 0;
    uint64_t rng = 0x9e3779b97f4a7c15ULL;

    memset(&m, 0, sizeof m);
    if (B < 1 || seq_in < 1 || seq_out < 2)
        return tb_err(err, errlen,
                      "batch %d, seq_in %d, seq_out %d: need B, seq_in >= 1 and "
                      "seq_out >= 2",
                      B, seq_in, seq_out);
    if (tb_arch_find(&a, model, err, errlen) != 0 ||
        (layers > 0 && tb_arch_truncate(&a, layers, err, errlen) != 0))
        return -1;
    if (tb_llama_init(&m, &a, B, seq_in + seq_out, 0, 1, err, errlen) != 0)
        return -1;
    prompts = tb_alloc_array((size_t)B * seq_in, sizeof *prompts);
    if (!prompts) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    tb_exec_tokens(prompts, (size_t)B * seq_in, a.vocab, &rng);

    /* (a) static batch; one warm-up first (first-touch page faults) */
    for (int i = -1; i < REPS; i++) {
        double p = 0, d = 0;
        if (run_static(&m, prompts, B, seq_in, seq_out, &p, &d, err, errlen) != 0)
            goto out;
        if (i < 0)
            continue;
        s_pre[i] = p;
        s_dec[i] = d;
        s_tps[i] = (double)B * (seq_out - 1) / d;
        s_e2e[i] = (double)B * seq_out / (p + d);
    }
    double step_s = median(s_dec, REPS) / (seq_out - 1);
    /* (b) the batcher: all at once, then staggered */
    for (int i = -1; i < REPS; i++) {
        double tps, e2e;
        if (run_batcher(&m, prompts, B, seq_in, seq_out, false, &tps, &e2e, &maxrun_t, err, errlen))
            goto out;
        if (i >= 0)
            t_tps[i] = tps, t_e2e[i] = e2e;
    }
    for (int i = 0; i < REPS; i++)
        if (run_batcher(&m, prompts, B, seq_in, seq_out, true, &g_tps[i], &g_e2e[i], &maxrun_g, err,
                        errlen))
            goto out;

    double st = median(s_tps, REPS), ste = median(s_e2e, REPS);
    double bt = median(t_tps, REPS), bte = median(t_e2e, REPS);
    double bg = median(g_tps, REPS), bge = median(g_e2e, REPS);
    fprintf(out,
            "batching: %s, B %d, seq_in %d, seq_out %d (medians of %d repetitions after a "
            "warm-up)\n",
            a.name, B, seq_in, seq_out, REPS);
    fprintf(out, "  %-28s %10s %14s %8s\n", "", "decode", "end-to-end", "ratio");
    fprintf(out, "  %-28s %10s %14s %8s\n", "", "tokens/s", "tokens/s", "(decode)");
    fprintf(out, "  %-28s %10.0f %14.0f %8s   (prefill %.1f ms, decode step %.2f ms)\n",
            "static batch", st, ste, "1.00", 1e3 * median(s_pre, REPS), 1e3 * step_s);
    fprintf(out, "  %-28s %10.0f %14.0f %8.2f   (at most %d running)\n",
            "batcher, submitted together", bt, bte, bt / st, maxrun_t);
    fprintf(out, "  %-28s %10.0f %14.0f %8.2f   (one per %d tokens; at most %d running)\n",
            "batcher, staggered arrivals", bg, bge, bg / st, seq_out / B, maxrun_g);
    fprintf(out, "  target: ratio >= 0.70\n");
    rc = 0;
out:
    free(prompts);
    tb_llama_release(&m);
    return rc;
}

/* ---- trnbench perf-serve (also trnbench perf --serve) ---- */

/* The name it was called by, for its usage and headings: "perf-serve", or "perf --serve" when
 * the alias `trnbench perf --serve` called it (argv[0] "perf"). */
static const char *self = "perf-serve";

static void serve_usage(FILE *f)
{
    fprintf(f,
            "usage: trnbench %s [--concurrency C] [--requests N] [--seq-out N]\n%*s[--threads T]\n",
            self, 16 + (int)strlen(self) + 1, "");
    fputs("\n"
          "Serving's own costs on this machine, printed (a benchmark, not a test):\n"
          "  the load client: C concurrent streams (default 256) of N requests (default\n"
          "    2048) of --seq-out chunks (default 64) against `trnbench serve --engine\n"
          "    instant` (a server that answers at once, stamping each chunk with its send\n"
          "    time) on the loopback: chunks per second, chunks per client CPU-second and\n"
          "    the per-chunk lag (arrival - send) the client adds; targets >= 20,000\n"
          "    chunks/s on one core and p99 lag < 1 ms; --threads T client threads (default:\n"
          "    one per 64 streams, at most one per core but one);\n"
          "  continuous batching: the batcher's decode tokens/s against the engine's static\n"
          "    batch at the same batch (llama-small, B 8, 128 in, 64 out); target >= 0.70.\n"
          "`trnbench perf-serve` and `trnbench perf --serve` are the same command.\n",
          f);
}

int tb_cmd_perf_serve(int argc, char **argv)
{
    long conc = 256, reqs = 2048, seq_out = 64, threads = 0;
    const struct tb_opt opts[] = {
        TB_OPT_LONG("concurrency", &conc, 1, 4096),
        TB_OPT_LONG("requests", &reqs, 1, 10000000),
        TB_OPT_LONG("seq-out", &seq_out, 1, 4096),
        TB_OPT_LONG("threads", &threads, 1, 4096),
        TB_OPT_END,
    };
    char url[64], how[160];
    char err[1024];
    struct tb_server_proc srv;
    int rc;

    self = strcmp(argv[0], "perf") ? "perf-serve" : "perf --serve";
    rc = tb_cli_parse(argv[0], argc, argv, opts, serve_usage);

    if (rc != TB_CLI_GO)
        return rc;
    rc = 0;
    if (optind < argc) {
        tb_logf("unknown argument '%s'\n", argv[optind]);
        return 2;
    }

    /* the load client against a server that answers at once: back to back (how many
     * chunks a CPU-second of the client takes), then paced like a batched engine (a token
     * to every stream each step, 25,600 chunks/s at 256 streams: the lag it adds) */
    for (int paced = 0; paced < 2; paced++) {
        const char *step = paced ? "10000" : "0";
        printf("load client, %s: %ld streams, %ld requests of %ld chunks against trnbench "
               "serve --engine instant --step-us %s\n",
               paced ? "paced (a step every 10 ms)" : "back to back", conc, reqs, seq_out, step);
        fflush(stdout);
        if (tb_server_start_self(&srv, "perf-serve", "llama-small", "instant", step, conc,
                                 16 + seq_out, 30, url, sizeof url, err, sizeof err) != 0 ||
            tb_perf_client(stdout, url, "llama-small", (int)conc, (int)reqs, (int)seq_out,
                           (int)threads, err, sizeof err) != 0) {
            tb_logf("%s\n", err);
            rc = 1;
        }
        tb_server_stop(&srv, 0, how, sizeof how);
        if (rc == 0)
            unlink(srv.log_path);
    }
    printf("  targets: >= 20000 chunks per client CPU-second (one core, back to back); p99 "
           "lag < 1 ms (paced: the lag of a saturated server is its own queue)\n\n");
    fflush(stdout);

    if (tb_perf_batching(stdout, "llama-small", 0, 8, 128, 64, err, sizeof err) != 0) {
        tb_logf("%s\n", err);
        rc = 1;
    }
    return rc;
}
