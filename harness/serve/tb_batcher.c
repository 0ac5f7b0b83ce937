/*
 * harness/serve/tb_batcher.c: continuous batching (tb_batcher.h): the request queue,
 * the engine thread's iterations, greedy sampling, and the per-request token queues
 * the HTTP connections read.
 *
 * Locks: b->mu guards the waiting queue, the stop flag and the stats; r->mu guards a
 * request's tokens, finish and reference count. Order: b->mu before r->mu. The running
 * set (struct seq) and the engine belong to the engine thread alone (the CUDA engine is
 * made before the thread starts and freed after it ends).
 */
#include "tb_batcher.h"
#include "tb_executor.h"
#include "tb_gpu.h"
#include "tb_timer.h"
#include "tb_util.h"

#include "workloads/llama/llama.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tb_request {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled when tokens arrive or the request ends */
    int refs;          /* the submitter's share and the batcher's */
    bool cancelled;    /* the submitter let go before the end */
    int *prompt;       /* owned: [n_prompt] */
    int n_prompt;
    int max_tokens, min_tokens;
    bool ignore_eos;
    int *out;                /* owned: [max_tokens] tokens produced */
    int produced, taken;     /* tokens in out; tokens the reader took */
    enum tb_finish finish;   /* TB_FINISH_NONE while running */
    struct tb_request *next; /* waiting queue */
};

/* A running sequence (engine thread only). */
struct seq {
    struct tb_request *r; /* the batcher's share */
    int slot;             /* KV cache slot */
    int pos;              /* position of the next decode step */
    int last;             /* last token produced (input of the next step) */
    int produced;         /* tokens produced */
    bool prefilled;
};

/* What the iterations need of an engine: a prompt into a cache slot -> its first token,
 * one step over n sequences (each in its own slot at its own position) -> their next
 * tokens; greedy. ctx is the engine's own. */
struct engine {
    void *ctx;
    int (*prefill_slot)(void *ctx, const int *prompt, int n_prompt, int slot, int *first, char *err,
                        size_t errlen);
    int (*decode_slots)(void *ctx, const int *tokens, const int *slots, const int *pos, int n,
                        int *next, char *err, size_t errlen);
    void (*release)(void *ctx); /* NULL: nothing to release */
    bool prefill_all;           /* every admitted prompt in one iteration, not one */
};

struct tb_batcher {
    struct tb_batcher_opts o;
    struct engine eng; /* owned: the engine behind o.engine */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* wakes the engine thread: a submit, a release, stop */
    pthread_t thread;
    bool started, stop;
    struct tb_request *head, *tail; /* waiting, FIFO */
    struct tb_batcher_stats st;
    /* engine thread only */
    struct seq *run; /* [max_num_seqs] */
    int nrun;
    bool *slot_used;        /* [max_num_seqs] */
    float *logits;          /* [V] the CPU engine's prefill output */
    int *tok, *slots, *pos; /* [max_num_seqs] decode step inputs */
    int *next;              /* [max_num_seqs] decode step outputs */
    int *rowseq;            /* [max_num_seqs] the seq index of each decode row */
    bool *ended;            /* [max_num_seqs] the rows whose sequence ended */
    char err[256];          /* the engine's last failure */
};

const char *tb_finish_to_string(enum tb_finish f)
{
    switch (f) {
    case TB_FINISH_LENGTH:
        return "length";
    case TB_FINISH_STOP:
        return "stop";
    case TB_FINISH_ABORT:
        return "abort";
    case TB_FINISH_NONE:
        break;
    }
    return NULL;
}

/* ---- requests ---- */

static void req_unref(struct tb_request *r)
{
    int left;
    pthread_mutex_lock(&r->mu);
    left = --r->refs;
    pthread_mutex_unlock(&r->mu);
    if (left > 0)
        return;
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r->prompt);
    free(r->out);
    free(r);
}

/* End r (if not ended) and wake its reader. */
static void req_end(struct tb_request *r, enum tb_finish f)
{
    pthread_mutex_lock(&r->mu);
    if (r->finish == TB_FINISH_NONE)
        r->finish = f;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static bool req_cancelled(struct tb_request *r)
{
    bool c;
    pthread_mutex_lock(&r->mu);
    c = r->cancelled;
    pthread_mutex_unlock(&r->mu);
    return c;
}

int tb_request_take(struct tb_request *r, int *ids, int cap, double timeout_s,
                    enum tb_finish *finish)
{
    struct timespec until;
    int n = 0;

    if (timeout_s >= 0) {
        clock_gettime(CLOCK_REALTIME, &until);
        double t = (double)until.tv_nsec / 1e9 + timeout_s;
        until.tv_sec += (time_t)t;
        until.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
    }
    pthread_mutex_lock(&r->mu);
    while (r->taken == r->produced && r->finish == TB_FINISH_NONE) {
        if (timeout_s < 0)
            pthread_cond_wait(&r->cv, &r->mu);
        else if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
            break;
    }
    while (n < cap && r->taken < r->produced)
        ids[n++] = r->out[r->taken++];
    *finish = r->taken == r->produced ? r->finish : TB_FINISH_NONE;
    pthread_mutex_unlock(&r->mu);
    return n;
}

int tb_request_prompt_len(const struct tb_request *r)
{
    return r->n_prompt; /* immutable after submit */
}

int tb_request_produced(struct tb_request *r)
{
    int n;
    pthread_mutex_lock(&r->mu);
    n = r->produced;
    pthread_mutex_unlock(&r->mu);
    return n;
}

void tb_request_release(struct tb_request *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->finish == TB_FINISH_NONE)
        r->cancelled = true;
    pthread_mutex_unlock(&r->mu);
    req_unref(r);
}

/* ---- the engines ---- */

/* Greedy: the index of the largest logit (tb_exec_argmax, for one row). */
static int argmax(const float *x, int n)
{
    int best;
    tb_exec_argmax(x, 1, n, &best);
    return best;
}

/* CPU (ctx: the batcher): the Llama engine's slot calls, argmax on the host. */
static int cpu_prefill_slot(void *ctx, const int *prompt, int n_prompt, int slot, int *first,
                            char *err, size_t errlen)
{
    struct tb_batcher *b = ctx;
    if (tb_llama_prefill_slot(b->o.model, prompt, n_prompt, slot, b->logits, err, errlen) != 0)
        return -1;
    *first = argmax(b->logits, b->o.vocab);
    return 0;
}

static int cpu_decode_slots(void *ctx, const int *tokens, const int *slots, const int *pos, int n,
                            int *next, char *err, size_t errlen)
{
    struct tb_batcher *b = ctx;
    int V = b->o.vocab;
    if (tb_llama_decode_slots(b->o.model, tokens, slots, pos, n, err, errlen) != 0)
        return -1;
    for (int k = 0; k < n; k++)
        next[k] = argmax(b->o.model->logits + (size_t)k * V, V);
    return 0;
}

/* Instant (ctx: the batcher): output i of a prompt of n tokens is (n + i) % vocab; a
 * sequence at position pos has produced pos - n + 1, so its next is (pos + 1) % vocab. */
static int instant_prefill_slot(void *ctx, const int *prompt, int n_prompt, int slot, int *first,
                                char *err, size_t errlen)
{
    const struct tb_batcher *b = ctx;
    (void)prompt, (void)slot, (void)err, (void)errlen;
    *first = n_prompt % b->o.vocab;
    return 0;
}

static int instant_decode_slots(void *ctx, const int *tokens, const int *slots, const int *pos,
                                int n, int *next, char *err, size_t errlen)
{
    const struct tb_batcher *b = ctx;
    (void)tokens, (void)slots, (void)err, (void)errlen;
    for (int k = 0; k < n; k++)
        next[k] = (pos[k] + 1) % b->o.vocab;
    return 0;
}

/* CUDA: the plugin's engine (owned) on a device the caller opened; argmax on the device. */
struct cuda_engine {
    const struct tb_cuda_api *api; /* borrowed: the caller's struct tb_gpu's */
    void *eng;                     /* owned: api->llama_init's */
};

static int cuda_prefill_slot(void *ctx, const int *prompt, int n_prompt, int slot, int *first,
                             char *err, size_t errlen)
{
    struct cuda_engine *c = ctx;
    return c->api->llama_prefill_slot(c->eng, prompt, n_prompt, slot, first, err, errlen);
}

static int cuda_decode_slots(void *ctx, const int *tokens, const int *slots, const int *pos, int n,
                             int *next, char *err, size_t errlen)
{
    struct cuda_engine *c = ctx;
    return c->api->llama_decode_slots(c->eng, tokens, slots, pos, n, next, err, errlen);
}

static void cuda_release(void *ctx)
{
    struct cuda_engine *c = ctx;
    if (!c)
        return;
    if (c->eng)
        c->api->llama_free(c->eng);
    free(c);
}

/* b->eng for b->o.engine (the options checked). Returns 0, or -1 with a message (the
 * CUDA engine could not be set up). */
static int engine_init(struct tb_batcher *b, char *err, size_t errlen)
{
    const struct tb_batcher_opts *o = &b->o;
    struct cuda_engine *c;
    memset(&b->eng, 0, sizeof b->eng);
    switch (o->engine) {
    case TB_BATCHER_CPU:
        b->eng = (struct engine){b, cpu_prefill_slot, cpu_decode_slots, NULL, false};
        return 0;
    case TB_BATCHER_INSTANT:
        b->eng = (struct engine){b, instant_prefill_slot, instant_decode_slots, NULL, true};
        return 0;
    case TB_BATCHER_CUDA:
        c = calloc(1, sizeof *c);
        if (!c)
            return tb_err(err, errlen, "cannot allocate the CUDA engine");
        c->api = o->gpu->api;
        if (tb_gpu_llama_new(o->gpu, o->model, o->max_num_seqs, o->max_model_len, o->cuda_flags,
                             &c->eng, err, errlen) != 0) {
            free(c);
            return -1;
        }
        b->o.model = NULL; /* the device holds its own copy: the caller may free it */
        b->eng = (struct engine){c, cuda_prefill_slot, cuda_decode_slots, cuda_release, false};
        return 0;
    }
    return tb_err(err, errlen, "unknown engine %d", (int)o->engine);
}

/* ---- the engine thread ---- */

/* Append tok to sequence i's output; true when that ended it. */
static bool emit(struct tb_batcher *b, struct seq *s, int tok)
{
    struct tb_request *r = s->r;
    bool done;
    s->produced++;
    s->last = tok;
    pthread_mutex_lock(&r->mu);
    r->out[r->produced++] = tok;
    if (r->produced >= r->max_tokens)
        r->finish = TB_FINISH_LENGTH;
    else if (b->o.eos_id >= 0 && tok == b->o.eos_id && !r->ignore_eos &&
             r->produced >= r->min_tokens)
        r->finish = TB_FINISH_STOP;
    done = r->finish != TB_FINISH_NONE;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return done;
}

/* Remove running sequence i (ending its request with f if not ended), free its slot. */
static void drop_seq(struct tb_batcher *b, int i, enum tb_finish f, bool cancelled)
{
    struct seq *s = &b->run[i];
    long need = (long)s->r->n_prompt + s->r->max_tokens;
    req_end(s->r, f);
    req_unref(s->r);
    b->slot_used[s->slot] = false;
    memmove(&b->run[i], &b->run[i + 1], (size_t)(b->nrun - i - 1) * sizeof *b->run);
    b->nrun--;
    pthread_mutex_lock(&b->mu);
    b->st.running = b->nrun;
    b->st.kv_reserved -= need;
    b->st.finished++;
    if (cancelled)
        b->st.cancelled++;
    pthread_mutex_unlock(&b->mu);
}

/* Admit waiting requests (b->mu held). */
static void admit(struct tb_batcher *b)
{
    while (b->head && b->nrun < b->o.max_num_seqs) {
        struct tb_request *r = b->head;
        long need = (long)r->n_prompt + r->max_tokens;
        if (req_cancelled(r)) {
            b->head = r->next;
            if (!b->head)
                b->tail = NULL;
            b->st.waiting--;
            b->st.cancelled++;
            req_end(r, TB_FINISH_ABORT);
            req_unref(r);
            continue;
        }
        if (b->st.kv_reserved + need > b->o.kv_cache_tokens)
            break; /* FIFO: nobody overtakes the head */
        b->head = r->next;
        if (!b->head)
            b->tail = NULL;
        b->st.waiting--;
        int slot = 0;
        while (b->slot_used[slot])
            slot++;
        b->slot_used[slot] = true;
        b->run[b->nrun++] = (struct seq){.r = r, .slot = slot};
        b->st.kv_reserved += need;
        if (b->st.kv_reserved > b->st.max_kv_reserved)
            b->st.max_kv_reserved = b->st.kv_reserved;
        b->st.admitted++;
    }
    b->st.running = b->nrun;
    if (b->nrun > b->st.max_running)
        b->st.max_running = b->nrun;
}

/* Prefill sequence i: its first token. Returns false when the engine failed. */
static bool prefill(struct tb_batcher *b, int i)
{
    struct seq *s = &b->run[i];
    const struct tb_request *r = s->r;
    int tok;
    if (b->eng.prefill_slot(b->eng.ctx, r->prompt, r->n_prompt, s->slot, &tok, b->err,
                            sizeof b->err) != 0)
        return false;
    s->prefilled = true;
    s->pos = r->n_prompt;
    if (emit(b, s, tok))
        drop_seq(b, i, TB_FINISH_LENGTH, false);
    return true;
}

/* One decode step over the prefilled sequences. */
static bool decode(struct tb_batcher *b)
{
    int n = 0;
    for (int i = 0; i < b->nrun; i++) {
        struct seq *s = &b->run[i];
        if (!s->prefilled)
            continue;
        b->tok[n] = s->last;
        b->slots[n] = s->slot;
        b->pos[n] = s->pos;
        b->rowseq[n] = i;
        n++;
    }
    if (n == 0)
        return true;
    if (b->eng.decode_slots(b->eng.ctx, b->tok, b->slots, b->pos, n, b->next, b->err,
                            sizeof b->err) != 0)
        return false;
    /* emit in row order; drop the ended ones afterwards, last first, so indices hold */
    bool *ended = b->ended;
    for (int k = 0; k < n; k++) {
        struct seq *s = &b->run[b->rowseq[k]];
        s->pos++;
        ended[k] = emit(b, s, b->next[k]);
    }
    for (int k = n - 1; k >= 0; k--)
        if (ended[k])
            drop_seq(b, b->rowseq[k], TB_FINISH_LENGTH, false);
    pthread_mutex_lock(&b->mu);
    b->st.decode_steps++;
    b->st.decode_tokens += n;
    pthread_mutex_unlock(&b->mu);
    return true;
}

static void *engine_main(void *arg)
{
    struct tb_batcher *b = arg;
    for (;;) {
        pthread_mutex_lock(&b->mu);
        while (!b->stop && b->nrun == 0 && !b->head)
            pthread_cond_wait(&b->cv, &b->mu);
        if (b->stop) {
            pthread_mutex_unlock(&b->mu);
            break;
        }
        pthread_mutex_unlock(&b->mu);

        /* 1. cancelled sequences give their slots back */
        for (int i = b->nrun - 1; i >= 0; i--)
            if (req_cancelled(b->run[i].r))
                drop_seq(b, i, TB_FINISH_ABORT, true);
        /* 2. admission */
        pthread_mutex_lock(&b->mu);
        admit(b);
        b->st.iterations++;
        pthread_mutex_unlock(&b->mu);
        /* 3. prefill: one prompt per iteration (every one for the instant engine) */
        uint64_t t0 = tb_timer_now_ns();
        int nprefill = 0;
        for (int i = 0; i < b->nrun; i++) {
            if (b->run[i].prefilled)
                continue;
            int before = b->nrun;
            if (!prefill(b, i)) {
                drop_seq(b, i, TB_FINISH_ABORT, false);
                i--;
                continue;
            }
            if (b->nrun < before)
                i--; /* it ended at its first token */
            nprefill++;
            if (!b->eng.prefill_all)
                break;
        }
        uint64_t t1 = tb_timer_now_ns();
        /* 4. one decode step over every prefilled sequence */
        if (!decode(b)) {
            while (b->nrun > 0)
                drop_seq(b, b->nrun - 1, TB_FINISH_ABORT, false);
        }
        uint64_t t2 = tb_timer_now_ns();
        if (b->o.engine == TB_BATCHER_INSTANT && b->o.step_s > 0) {
            /* the next step at t0 + step_s (absolute: the pace does not drift) */
            struct timespec until;
            uint64_t next = t0 + (uint64_t)(b->o.step_s * 1e9);
            until.tv_sec = (time_t)(next / 1000000000u);
            until.tv_nsec = (long)(next % 1000000000u);
            if (next > t2)
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
        }
        pthread_mutex_lock(&b->mu);
        b->st.prefills += nprefill;
        b->st.prefill_s += tb_timer_seconds(t0, t1);
        b->st.decode_s += tb_timer_seconds(t1, t2);
        pthread_mutex_unlock(&b->mu);
    }
    return NULL;
}

/* ---- lifecycle ---- */

int tb_batcher_new(struct tb_batcher **out, const struct tb_batcher_opts *o, char *err,
                   size_t errlen)
{
    struct tb_batcher *b = NULL;
    int n = o->max_num_seqs;

    *out = NULL;
    if (o->engine == TB_BATCHER_CUDA) {
        if (!o->gpu || !o->gpu->api)
            return tb_err(err, errlen, "engine cuda needs an opened GPU");
        if (!o->model)
            return tb_err(err, errlen, "engine cuda needs a model (its weights)");
        if (o->vocab != o->model->arch->vocab)
            return tb_err(err, errlen, "vocab %d is not the model's %d", o->vocab,
                          o->model->arch->vocab);
        if (o->cuda_flags & TB_CUDA_LLAMA_TRAIN)
            return tb_err(err, errlen, "engine cuda serves: TB_CUDA_LLAMA_TRAIN is for training");
    }
    if (o->engine == TB_BATCHER_CPU) {
        if (!o->model)
            return tb_err(err, errlen, "engine cpu needs a model");
        if (n > o->model->max_batch)
            return tb_err(err, errlen, "max_num_seqs %d over the engine's %d slots", n,
                          o->model->max_batch);
        if (o->max_model_len > o->model->max_seq)
            return tb_err(err, errlen, "max_model_len %d over the engine's %d positions",
                          o->max_model_len, o->model->max_seq);
        if (o->vocab != o->model->arch->vocab)
            return tb_err(err, errlen, "vocab %d is not the model's %d", o->vocab,
                          o->model->arch->vocab);
    }
    if (o->vocab < 1)
        return tb_err(err, errlen, "vocab %d: must be positive", o->vocab);
    if (n < 1)
        return tb_err(err, errlen, "max_num_seqs %d: must be positive", n);
    if (o->max_model_len < 2)
        return tb_err(err, errlen, "max_model_len %d: must be at least 2", o->max_model_len);
    if (o->kv_cache_tokens < 2)
        return tb_err(err, errlen, "kv_cache_tokens %ld: must be at least 2", o->kv_cache_tokens);

    b = calloc(1, sizeof *b);
    if (!b)
        return tb_err(err, errlen, "cannot allocate the batcher");
    b->o = *o;
    b->run = calloc((size_t)n, sizeof *b->run);
    b->slot_used = calloc((size_t)n, sizeof *b->slot_used);
    b->logits = calloc((size_t)o->vocab, sizeof *b->logits);
    b->tok = calloc((size_t)n, sizeof *b->tok);
    b->slots = calloc((size_t)n, sizeof *b->slots);
    b->pos = calloc((size_t)n, sizeof *b->pos);
    b->next = calloc((size_t)n, sizeof *b->next);
    b->ended = calloc((size_t)n, sizeof *b->ended);
    b->rowseq = calloc((size_t)n, sizeof *b->rowseq);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    if (!b->run || !b->slot_used || !b->logits || !b->tok || !b->slots || !b->pos || !b->next ||
        !b->rowseq || !b->ended) {
        tb_batcher_free(b);
        return tb_err(err, errlen, "cannot allocate the batcher's tables for %d sequences", n);
    }
    if (engine_init(b, err, errlen) != 0) {
        tb_batcher_free(b);
        return -1;
    }
    if (pthread_create(&b->thread, NULL, engine_main, b) != 0) {
        tb_batcher_free(b);
        return tb_err(err, errlen, "cannot start the engine thread");
    }
    b->started = true;
    *out = b;
    return 0;
}

void tb_batcher_stop(struct tb_batcher *b)
{
    pthread_mutex_lock(&b->mu);
    b->stop = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (b->started)
        pthread_join(b->thread, NULL);
    b->started = false;
    while (b->nrun > 0)
        drop_seq(b, b->nrun - 1, TB_FINISH_ABORT, false);
    pthread_mutex_lock(&b->mu);
    while (b->head) {
        struct tb_request *r = b->head;
        b->head = r->next;
        b->st.waiting--;
        req_end(r, TB_FINISH_ABORT);
        req_unref(r);
    }
    b->tail = NULL;
    pthread_mutex_unlock(&b->mu);
}

void tb_batcher_free(struct tb_batcher *b)
{
    if (!b)
        return;
    tb_batcher_stop(b);
    if (b->eng.release)
        b->eng.release(b->eng.ctx);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b->run);
    free(b->slot_used);
    free(b->logits);
    free(b->tok);
    free(b->slots);
    free(b->pos);
    free(b->next);
    free(b->rowseq);
    free(b->ended);
    free(b);
}

int tb_batcher_submit(struct tb_batcher *b, const int *prompt, int n_prompt, int max_tokens,
                      int min_tokens, bool ignore_eos, struct tb_request **out, char *err,
                      size_t errlen)
{
    struct tb_request *r;
    long need = (long)n_prompt + max_tokens;

    *out = NULL;
    if (n_prompt < 1) {
        tb_err(err, errlen, "the prompt is empty");
        return TB_EINPUT;
    }
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= b->o.vocab) {
            tb_err(err, errlen, "prompt token %d is %d, outside the vocabulary [0, %d)", i,
                   prompt[i], b->o.vocab);
            return TB_EINPUT;
        }
    if (max_tokens < 1) {
        tb_err(err, errlen, "max_tokens %d: must be at least 1", max_tokens);
        return TB_EINPUT;
    }
    if (need > b->o.max_model_len) {
        tb_err(err, errlen,
               "the prompt's %d tokens plus max_tokens %d make %ld, over the maximum model "
               "length %d",
               n_prompt, max_tokens, need, b->o.max_model_len);
        return TB_EINPUT;
    }
    if (need > b->o.kv_cache_tokens) {
        tb_err(err, errlen,
               "the prompt's %d tokens plus max_tokens %d make %ld, over the KV cache's %ld "
               "tokens",
               n_prompt, max_tokens, need, b->o.kv_cache_tokens);
        return TB_EINPUT;
    }
    r = calloc(1, sizeof *r);
    if (!r)
        return tb_err(err, errlen, "cannot allocate a request");
    r->prompt = tb_alloc_array((size_t)n_prompt, sizeof *r->prompt);
    r->out = tb_alloc_array((size_t)max_tokens, sizeof *r->out);
    if (!r->prompt || !r->out) {
        free(r->prompt);
        free(r->out);
        free(r);
        return tb_err(err, errlen, "cannot allocate a request of %d + %d tokens", n_prompt,
                      max_tokens);
    }
    memcpy(r->prompt, prompt, (size_t)n_prompt * sizeof *r->prompt);
    r->n_prompt = n_prompt;
    r->max_tokens = max_tokens;
    r->min_tokens = min_tokens;
    r->ignore_eos = ignore_eos;
    r->refs = 2;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);

    pthread_mutex_lock(&b->mu);
    if (b->stop) {
        pthread_mutex_unlock(&b->mu);
        r->refs = 1;
        req_unref(r);
        return tb_err(err, errlen, "the server is stopping");
    }
    if (b->tail)
        b->tail->next = r;
    else
        b->head = r;
    b->tail = r;
    b->st.waiting++;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    *out = r;
    return 0;
}

void tb_batcher_stats(struct tb_batcher *b, struct tb_batcher_stats *s)
{
    pthread_mutex_lock(&b->mu);
    *s = b->st;
    pthread_mutex_unlock(&b->mu);
}
