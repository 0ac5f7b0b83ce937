/*
 * tests/unit/batcher.c: continuous batching (harness/serve/tb_batcher.h) on llama-tiny.
 * Six requests of different prompt lengths and output lengths through a batcher of 3
 * sequences, arriving staggered so that sequences join a running batch, must produce
 * exactly the tokens a lone prefill + greedy decode loop gives on a fresh engine. Also:
 * the sequence and KV-token budgets hold, a released request frees its slot for the
 * next one, requests that can never run are refused with the reason, and the instant
 * engine's token pattern.
 *
 * The CUDA engine (on a GPU, else on the CPU emulation of the plugin,
 * build/lib/libtrnbench-cuemu.so; skipped with the reason when neither is there): three
 * requests through a batcher of 2 sequences (the third joins a running batch) get
 * exactly the greedy tokens of their prompts decoded alone on the GPU engine (batch 1,
 * llama_prefill and llama_decode): the slot path is bit for bit the single-sequence
 * path (tests/unit/gpu.c). Not the CPU engine's tokens: the GPU's products are bf16.
 */
#include "tb_arch.h"
#include "tb_batcher.h"
#include "tb_gpu.h"
#include "tb_util.h"
#include "tb_executor.h"
#include "workloads/llama/llama.h"

#include "tests/tap/basic.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { NREQ = 6, MAXLEN = 64 };

static uint64_t rng_state = 0x5eedULL;

static int rand_below(int n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng_state >> 33) % (uint64_t)n);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Greedy generation of one prompt alone on a fresh engine: prefill, then decode. */
static void lone_greedy(const struct tb_arch *a, const int *prompt, int n, int max_tokens, int *out)
{
    struct tb_llama m;
    char err[512];
    int V = a->vocab, tok;
    if (tb_llama_init(&m, a, 1, MAXLEN, 0, 7, err, sizeof err) != 0 ||
        tb_llama_prefill(&m, prompt, 1, n, err, sizeof err) != 0)
        bail("lone engine: %s", err);
    for (int i = 0; i < max_tokens; i++) {
        tok = 0;
        for (int v = 1; v < V; v++)
            if (m.logits[v] > m.logits[tok])
                tok = v;
        out[i] = tok;
        if (i + 1 < max_tokens && tb_llama_decode(&m, &tok, 1, n + i, err, sizeof err) != 0)
            bail("lone decode: %s", err);
    }
    tb_llama_release(&m);
}

/* Take every token of r until it ends; returns the count. */
static int drain(struct tb_request *r, int *out, int cap, enum tb_finish *fin)
{
    int n = 0;
    *fin = TB_FINISH_NONE;
    while (*fin == TB_FINISH_NONE) {
        int k = tb_request_take(r, out + n, cap - n, 10.0, fin);
        if (k == 0 && *fin == TB_FINISH_NONE)
            break; /* 10 s without a token: the test fails below */
        n += k;
    }
    return n;
}

static void wait_produced(struct tb_request *r, int n)
{
    for (int i = 0; i < 10000 && tb_request_produced(r) < n; i++)
        sleep_ms(1);
}

static struct tb_batcher *new_or_bail(struct tb_llama *m, int V, enum tb_batcher_engine e, int seqs,
                                      long kv)
{
    struct tb_batcher_opts o = {.engine = e,
                                .model = e == TB_BATCHER_CPU ? m : NULL,
                                .vocab = V,
                                .max_num_seqs = seqs,
                                .max_model_len = MAXLEN,
                                .kv_cache_tokens = kv,
                                .eos_id = -1};
    struct tb_batcher *b;
    char err[512];
    if (tb_batcher_new(&b, &o, err, sizeof err) != 0)
        bail("tb_batcher_new: %s", err);
    return b;
}

static void check_matches_lone(const struct tb_arch *a)
{
    static const int plen[NREQ] = {5, 9, 3, 12, 7, 4}, ntok[NREQ] = {8, 5, 12, 6, 10, 7};
    int prompt[NREQ][MAXLEN], got[NREQ][MAXLEN], want[MAXLEN], n[NREQ];
    struct tb_request *r[NREQ];
    enum tb_finish fin[NREQ];
    struct tb_batcher_stats st;
    struct tb_llama m;
    struct tb_batcher *b;
    char err[512];

    for (int i = 0; i < NREQ; i++)
        for (int t = 0; t < plen[i]; t++)
            prompt[i][t] = rand_below(a->vocab);
    if (tb_llama_init(&m, a, 3, MAXLEN, 0, 7, err, sizeof err) != 0)
        bail("engine: %s", err);
    b = new_or_bail(&m, a->vocab, TB_BATCHER_CPU, 3, 3L * MAXLEN);
    /* staggered: 0 and 1 run, 2 joins after 0's second token, 3..5 queue after 1's */
    for (int i = 0; i < NREQ; i++) {
        if (i == 2)
            wait_produced(r[0], 2);
        if (i == 3)
            wait_produced(r[1], 2);
        if (tb_batcher_submit(b, prompt[i], plen[i], ntok[i], 0, true, &r[i], err, sizeof err))
            bail("submit %d: %s", i, err);
    }
    for (int i = 0; i < NREQ; i++)
        n[i] = drain(r[i], got[i], MAXLEN, &fin[i]);
    /* a reader sees its last token before the engine thread books the sequence's end */
    for (int i = 0; i < 10000; i++) {
        tb_batcher_stats(b, &st);
        if (st.finished == NREQ)
            break;
        sleep_ms(1);
    }
    for (int i = 0; i < NREQ; i++) {
        lone_greedy(a, prompt[i], plen[i], ntok[i], want);
        bool same = n[i] == ntok[i] && memcmp(want, got[i], sizeof *want * ntok[i]) == 0;
        if (!same)
            for (int k = 0; k < n[i] && k < ntok[i]; k++)
                if (want[k] != got[i][k]) {
                    diag("request %d token %d: %d, alone %d", i, k, got[i][k], want[k]);
                    break;
                }
        OK(same && fin[i] == TB_FINISH_LENGTH,
           "request %d (prompt %d, max_tokens %d): %d tokens, those of a lone greedy decode", i,
           plen[i], ntok[i], n[i]);
    }
    IS_INT(3, st.max_running, "never more than max_num_seqs 3 running, and 3 reached");
    IS_INT(NREQ, st.admitted, "every request admitted once");
    IS_INT(NREQ, st.finished, "every sequence finished");
    IS_INT(NREQ, st.prefills, "one prefill per request");
    OK(st.decode_steps > 0 && st.decode_tokens > st.decode_steps,
       "decode steps batched several sequences (%ld tokens in %ld steps)", st.decode_tokens,
       st.decode_steps);
    IS_INT(0, st.running + st.waiting + st.kv_reserved, "nothing left running or reserved");
    for (int i = 0; i < NREQ; i++)
        tb_request_release(r[i]);
    tb_batcher_free(b);
    tb_llama_release(&m);
}

static void check_budgets(const struct tb_arch *a)
{
    int prompt[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, out[MAXLEN], total = 0;
    struct tb_request *r[4];
    struct tb_batcher_stats st;
    enum tb_finish fin;
    struct tb_llama m;
    struct tb_batcher *b;
    char err[512];

    /* each needs 10 + 10 tokens; a budget of 45 fits two of the four slots */
    if (tb_llama_init(&m, a, 4, MAXLEN, 0, 7, err, sizeof err) != 0)
        bail("engine: %s", err);
    b = new_or_bail(&m, a->vocab, TB_BATCHER_CPU, 4, 45);
    for (int i = 0; i < 4; i++)
        if (tb_batcher_submit(b, prompt, 10, 10, 0, true, &r[i], err, sizeof err))
            bail("submit: %s", err);
    for (int i = 0; i < 4; i++)
        total += drain(r[i], out, MAXLEN, &fin);
    tb_batcher_stats(b, &st);
    IS_INT(40, total, "four requests of 10 tokens under a tight KV budget all complete");
    OK(st.max_kv_reserved <= 45 && st.max_running <= 2,
       "KV budget held: at most %ld of 45 tokens reserved, %d sequences running",
       st.max_kv_reserved, st.max_running);
    for (int i = 0; i < 4; i++)
        tb_request_release(r[i]);

    /* refusals */
    int bad[3] = {1, a->vocab, 2};
    err[0] = '\0';
    IS_INT(TB_EINPUT, tb_batcher_submit(b, prompt, 10, 40, 0, true, &r[0], err, sizeof err),
           "prompt + max_tokens over the KV budget refused: %s", err);
    IS_INT(TB_EINPUT, tb_batcher_submit(b, bad, 3, 4, 0, true, &r[0], err, sizeof err),
           "id outside the vocabulary refused: %s", err);
    IS_INT(TB_EINPUT, tb_batcher_submit(b, prompt, 0, 4, 0, true, &r[0], err, sizeof err),
           "empty prompt refused: %s", err);
    IS_INT(TB_EINPUT, tb_batcher_submit(b, prompt, 3, 0, 0, true, &r[0], err, sizeof err),
           "max_tokens 0 refused: %s", err);
    OK(r[0] == NULL, "a refused request hands back nothing");
    tb_batcher_free(b);

    b = new_or_bail(&m, a->vocab, TB_BATCHER_CPU, 4, 4L * MAXLEN);
    {
        int longp[MAXLEN] = {0};
        int rc = tb_batcher_submit(b, longp, MAXLEN - 3, 4, 0, true, &r[0], err, sizeof err);
        OK(rc == TB_EINPUT && strstr(err, "maximum model length 64"),
           "prompt + max_tokens over max_model_len refused: %s", err);
    }
    tb_batcher_free(b);
    tb_llama_release(&m);
}

static void check_cancel(const struct tb_arch *a)
{
    enum { LONG = 1000 };
    int prompt[4] = {5, 6, 7, 8}, out[16];
    struct tb_batcher_stats st;
    struct tb_request *ra, *rb;
    enum tb_finish fin;
    struct tb_llama m;
    struct tb_batcher_opts o = {.engine = TB_BATCHER_CPU,
                                .model = &m,
                                .vocab = a->vocab,
                                .max_num_seqs = 1,
                                .max_model_len = LONG + 8,
                                .kv_cache_tokens = LONG + 8,
                                .eos_id = -1};
    struct tb_batcher *b;
    char err[512];

    if (tb_llama_init(&m, a, 1, LONG + 8, 0, 7, err, sizeof err) != 0 ||
        tb_batcher_new(&b, &o, err, sizeof err) != 0)
        bail("cancel setup: %s", err);
    if (tb_batcher_submit(b, prompt, 4, LONG, 0, true, &ra, err, sizeof err) != 0)
        bail("submit: %s", err);
    wait_produced(ra, 1);
    if (tb_batcher_submit(b, prompt, 4, 3, 0, true, &rb, err, sizeof err) != 0)
        bail("submit: %s", err);
    sleep_ms(5);
    tb_batcher_stats(b, &st);
    IS_INT(1, st.waiting, "the second request waits while the only slot is taken");
    tb_request_release(ra); /* the client went away */
    int n = drain(rb, out, 16, &fin);
    for (int i = 0; i < 10000; i++) {
        tb_batcher_stats(b, &st);
        if (st.finished == 2)
            break;
        sleep_ms(1);
    }
    OK(n == 3 && fin == TB_FINISH_LENGTH, "a released request frees its slot: the next ran (%d)",
       n);
    IS_INT(1, st.cancelled, "one sequence counted as cancelled");
    tb_request_release(rb);
    tb_batcher_free(b);
    tb_llama_release(&m);
}

static void check_instant(void)
{
    int prompt[5] = {1, 2, 3, 4, 5}, out[16];
    struct tb_request *r[2];
    enum tb_finish fin;
    struct tb_batcher *b = new_or_bail(NULL, 7, TB_BATCHER_INSTANT, 2, 64);
    char err[512];
    bool good = true;

    for (int i = 0; i < 2; i++)
        if (tb_batcher_submit(b, prompt, 5 - i, 9, 0, true, &r[i], err, sizeof err) != 0)
            bail("submit: %s", err);
    for (int i = 0; i < 2; i++) {
        int n = drain(r[i], out, 16, &fin);
        good = good && n == 9 && fin == TB_FINISH_LENGTH;
        for (int k = 0; k < n; k++)
            good = good && out[k] == (5 - i + k) % 7;
        tb_request_release(r[i]);
    }
    OK(good, "instant engine: token i of a prompt of n is (n + i) %% vocab");
    tb_batcher_free(b);

    struct tb_batcher_opts o = {.engine = TB_BATCHER_CPU, .vocab = 7, .max_num_seqs = 1};
    err[0] = '\0';
    OK(tb_batcher_new(&b, &o, err, sizeof err) == -1 && strstr(err, "model"),
       "engine cpu without a model refused: %s", err);
    o.engine = TB_BATCHER_CUDA;
    OK(tb_batcher_new(&b, &o, err, sizeof err) == -1 && strstr(err, "needs an opened GPU"),
       "engine cuda without a GPU refused: %s", err);
    o.engine = TB_BATCHER_INSTANT;
    o.max_num_seqs = 0;
    OK(tb_batcher_new(&b, &o, err, sizeof err) == -1 && strstr(err, "max_num_seqs 0"),
       "max_num_seqs 0 refused: %s", err);
}

/* Greedy generation of one prompt alone on the GPU engine: batch 1, llama_prefill, then
 * llama_decode fed the host's argmax. */
static void gpu_alone_greedy(const struct tb_gpu *g, const struct tb_llama *m, const int *prompt,
                             int n, int max_tokens, int *out)
{
    const struct tb_cuda_api *api = g->api;
    int V = m->arch->vocab;
    float *lg = calloc((size_t)V, sizeof *lg);
    void *eng = NULL;
    char err[512];
    if (!lg)
        bail("out of memory");
    if (tb_gpu_llama_new(g, m, 1, MAXLEN, 0, &eng, err, sizeof err) != 0 ||
        api->llama_prefill(eng, prompt, 1, n, err, sizeof err) != 0 ||
        api->llama_logits(eng, lg, (size_t)V, err, sizeof err) != 0)
        bail("GPU alone: %s", err);
    for (int i = 0; i < max_tokens; i++) {
        tb_exec_argmax(lg, 1, V, &out[i]);
        if (i + 1 < max_tokens &&
            (api->llama_decode(eng, &out[i], 1, n + i, err, sizeof err) != 0 ||
             api->llama_logits(eng, lg, (size_t)V, err, sizeof err) != 0))
            bail("GPU alone decode: %s", err);
    }
    api->llama_free(eng);
    free(lg);
}

enum { CUDA_NREQ = 3, CUDA_TESTS = CUDA_NREQ + 1 };

static void check_cuda(const struct tb_arch *a)
{
    static const int plen[CUDA_NREQ] = {5, 9, 3}, ntok[CUDA_NREQ] = {4, 3, 4};
    int prompt[CUDA_NREQ][MAXLEN], got[CUDA_NREQ][MAXLEN], want[MAXLEN], n[CUDA_NREQ];
    char *emu = test_tmp_path("../../lib/libtrnbench-cuemu.so");
    struct tb_request *r[CUDA_NREQ];
    enum tb_finish fin[CUDA_NREQ];
    struct tb_batcher_stats st;
    struct tb_batcher *b;
    struct tb_llama m;
    struct tb_gpu g;
    char err[512], why[1024];

    if (tb_gpu_open(&g, 0, 0) != 0) {
        snprintf(why, sizeof why, "%s", g.why);
        tb_gpu_close(&g);
        if (!tb_file_exists(emu)) {
            skip_block(CUDA_TESTS, "no GPU (%s) and no CUDA emulator at %s", why, emu);
            free(emu);
            return;
        }
        setenv("TRNBENCH_CUDA_PLUGIN", emu, 1);
        if (tb_gpu_open(&g, 0, TB_GPU_FORCE | TB_GPU_EMULATOR_OK) != 0)
            bail("the CUDA emulator: %s", g.why);
        tap_suffix(" (cuemu)");
    }
    free(emu);
    for (int i = 0; i < CUDA_NREQ; i++)
        for (int t = 0; t < plen[i]; t++)
            prompt[i][t] = rand_below(a->vocab);
    /* the weights the GPU engine copies: a CPU engine of one slot of one position */
    if (tb_llama_init(&m, a, 1, 1, 0, 7, err, sizeof err) != 0)
        bail("engine: %s", err);
    struct tb_batcher_opts o = {.engine = TB_BATCHER_CUDA,
                                .model = &m,
                                .gpu = &g,
                                .vocab = a->vocab,
                                .max_num_seqs = 2,
                                .max_model_len = MAXLEN,
                                .kv_cache_tokens = 2L * MAXLEN,
                                .eos_id = -1};
    if (tb_batcher_new(&b, &o, err, sizeof err) != 0)
        bail("tb_batcher_new (cuda): %s", err);
    for (int i = 0; i < CUDA_NREQ; i++)
        if (tb_batcher_submit(b, prompt[i], plen[i], ntok[i], 0, true, &r[i], err, sizeof err))
            bail("submit %d: %s", i, err);
    for (int i = 0; i < CUDA_NREQ; i++)
        n[i] = drain(r[i], got[i], MAXLEN, &fin[i]);
    for (int i = 0; i < 10000; i++) {
        tb_batcher_stats(b, &st);
        if (st.finished == CUDA_NREQ)
            break;
        sleep_ms(1);
    }
    for (int i = 0; i < CUDA_NREQ; i++) {
        gpu_alone_greedy(&g, &m, prompt[i], plen[i], ntok[i], want);
        bool same = n[i] == ntok[i] && memcmp(want, got[i], sizeof *want * ntok[i]) == 0;
        for (int k = 0; !same && k < n[i] && k < ntok[i]; k++)
            if (want[k] != got[i][k]) {
                diag("request %d token %d: %d, alone %d", i, k, got[i][k], want[k]);
                break;
            }
        OK(same && fin[i] == TB_FINISH_LENGTH,
           "engine cuda: request %d (prompt %d, max_tokens %d): %d tokens, those of a lone "
           "greedy decode on the GPU engine",
           i, plen[i], ntok[i], n[i]);
    }
    OK(st.max_running == 2 && st.decode_tokens > st.decode_steps && st.finished == CUDA_NREQ,
       "engine cuda: 2 sequences ran at once, decode steps batched them (%ld tokens in %ld "
       "steps)",
       st.decode_tokens, st.decode_steps);
    for (int i = 0; i < CUDA_NREQ; i++)
        tb_request_release(r[i]);
    tb_batcher_free(b);
    tb_llama_release(&m);
    tb_gpu_close(&g);
    tap_suffix("");
}

int main(void)
{
    struct tb_arch a;
    char err[512];

    plan_lazy();
    setenv("TRNBENCH_DATADIR", getenv("TB_SRCDIR") ? getenv("TB_SRCDIR") : ".", 1);
    if (tb_arch_find(&a, "llama-tiny", err, sizeof err) != 0)
        bail("%s", err);
    check_matches_lone(&a);
    check_budgets(&a);
    check_cancel(&a);
    check_instant();
    check_cuda(&a);
    return 0;
}
