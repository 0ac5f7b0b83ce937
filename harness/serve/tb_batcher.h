/*
 * harness/serve/tb_batcher.h: iteration-level (continuous) batching of generation
 * requests on one engine, for `trnbench serve` (harness/serve/tb_server.h).
 *
 * One engine thread runs iterations. Each iteration:
 *   1. drops cancelled sequences (a client that went away) and frees their slots;
 *   2. admits waiting requests in arrival order (FIFO, no overtaking) while fewer than
 *      max_num_seqs run and the KV budget holds: the sum over running sequences of
 *      prompt + max_tokens stays <= kv_cache_tokens (a sequence reserves its whole
 *      length on admission, so a running sequence never runs out of cache);
 *   3. prefills at most ONE admitted prompt into its sequence's cache slot and emits its
 *      first token: prefill is interleaved with decode a prompt at a time, so a burst of
 *      arrivals delays the running sequences by one prompt's prefill per token, never by
 *      the whole burst;
 *   4. runs one decode step over every running sequence that has had its prefill, each
 *      in its own slot at its own position (one batched GEMM per linear layer), and
 *      emits one token to each.
 * Sampling is greedy (argmax; the lowest id wins a tie): temperature and the like are
 * not supported. A sequence ends at max_tokens or, unless ignore_eos (or fewer than
 * min_tokens out), at the engine's EOS id; the catalogue has no EOS ids for our models
 * (tb_batcher_opts.eos_id = -1), so today only max_tokens ends a sequence.
 *
 * Engines (each behind the same two calls, prefill a slot and decode slots):
 *   TB_BATCHER_CPU      the CPU Llama engine (workloads/llama/llama.h: tb_llama_prefill_slot,
 *                       tb_llama_decode_slots); the batcher borrows it and is its only
 *                       user while it runs.
 *   TB_BATCHER_CUDA     the GPU Llama engine of the CUDA plugin (harness/measure/tb_cuda_abi.h:
 *                       llama_prefill_slot, llama_decode_slots; one CUDA graph per decode
 *                       batch size, argmax on the device), on a device the caller opened
 *                       (tb_gpu_open), with the weights of a CPU engine copied at
 *                       tb_batcher_new into an engine of max_num_seqs slots of
 *                       max_model_len positions that the batcher owns. bf16 mixed
 *                       precision (or fp8 with TB_CUDA_LLAMA_FP8): its greedy tokens can
 *                       differ from the fp32 CPU engine's where two logits are close.
 *   TB_BATCHER_INSTANT  no model: each iteration gives every running sequence the token
 *                       (prompt_len + i) % vocab for its i-th output, at once; for
 *                       measuring a load client's own overhead.
 *
 * Threads: submit, the request calls and stats are thread-safe (one mutex; a condition
 * variable per request wakes its HTTP connection when tokens arrive). A request is
 * shared by the engine and its submitter: tb_request_release drops the submitter's
 * share (cancelling the sequence if it still runs); the batcher drops its own when the
 * sequence ends.
 */
#ifndef TB_BATCHER_H
#define TB_BATCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct tb_gpu;
struct tb_llama;

enum tb_batcher_engine {
    TB_BATCHER_CPU,
    TB_BATCHER_INSTANT,
    TB_BATCHER_CUDA,
};

struct tb_batcher_opts {
    enum tb_batcher_engine engine;
    struct tb_llama *model; /* borrowed: CPU engine: must outlive the batcher; CUDA engine:
                               the weights, copied by tb_batcher_new (any capacity); NULL
                               for the instant engine */
    struct tb_gpu *gpu;     /* borrowed, opened (tb_gpu_open), must outlive the batcher
                               (CUDA engine; NULL else) */
    unsigned cuda_flags;    /* CUDA engine: tb_cuda_llama_flags (TB_CUDA_LLAMA_FP8,
                               TB_CUDA_LLAMA_NOGRAPH); 0: bf16 with graphs */
    int vocab;              /* instant engine: token ids in [0, vocab) */
    int max_num_seqs;       /* sequences running at once (<= the model's max_batch) */
    int max_model_len;      /* prompt + max_tokens limit (<= the model's max_seq) */
    long kv_cache_tokens;   /* KV budget: sum of prompt + max_tokens of running sequences */
    int eos_id;             /* -1: none (only max_tokens ends a sequence) */
    double step_s;          /* instant engine: one decode step every step_s seconds (0: back
                               to back), the pace of a batched engine, to measure a client */
};

/* Why a sequence ended. */
enum tb_finish {
    TB_FINISH_NONE = 0, /* still running */
    TB_FINISH_LENGTH,   /* max_tokens reached */
    TB_FINISH_STOP,     /* EOS */
    TB_FINISH_ABORT,    /* the batcher stopped, or the engine failed */
};
/* "length", "stop", "abort" (NULL for TB_FINISH_NONE): OpenAI's finish_reason. */
const char *tb_finish_to_string(enum tb_finish f);

struct tb_batcher;
struct tb_request;

/* Check the options, set up the engine (the CUDA engine's device memory), start the
 * engine thread. Returns 0 with *out (owned, free with tb_batcher_free), or -1 with a
 * message naming the bad option or what the engine could not do. */
int tb_batcher_new(struct tb_batcher **out, const struct tb_batcher_opts *o, char *err,
                   size_t errlen);
/* tb_batcher_stop, then free (the CUDA engine with it). Requests still held by
 * submitters stay valid until released. NULL is fine. */
void tb_batcher_free(struct tb_batcher *b);

/* Stop the engine thread after its current iteration and end every request not
 * finished with TB_FINISH_ABORT (waiters wake); later submits are refused. The batcher
 * stays valid until tb_batcher_free. Idempotent. */
void tb_batcher_stop(struct tb_batcher *b);

/* Queue a request: prompt ids [n_prompt] (copied), at most max_tokens outputs, at least
 * min_tokens before an EOS may end it. Returns 0 with *out (the submitter's share), or
 * -2 (TB_EINPUT) with the reason when it can never run: an empty prompt, an id outside
 * the vocabulary, max_tokens < 1, prompt + max_tokens over max_model_len or the KV
 * budget; -1 when the batcher is stopping or out of memory. */
int tb_batcher_submit(struct tb_batcher *b, const int *prompt, int n_prompt, int max_tokens,
                      int min_tokens, bool ignore_eos, struct tb_request **out, char *err,
                      size_t errlen);

/* Wait (at most timeout_s; < 0: no limit) until r has tokens not yet taken or has ended;
 * take up to cap of them into ids. Returns how many were taken; *finish is
 * TB_FINISH_NONE while more may come, else why it ended (set only once every token
 * has been taken, so the call that takes the last token already reports it). */
int tb_request_take(struct tb_request *r, int *ids, int cap, double timeout_s,
                    enum tb_finish *finish);
/* Prompt length and tokens produced so far. */
int tb_request_prompt_len(const struct tb_request *r);
int tb_request_produced(struct tb_request *r);
/* Drop the submitter's share; a sequence still waiting or running is cancelled (its
 * slot freed at the next iteration). NULL is fine. */
void tb_request_release(struct tb_request *r);

struct tb_batcher_stats {
    long iterations;      /* engine iterations that did work */
    long admitted;        /* requests given a slot */
    long finished;        /* sequences ended (any reason) */
    long cancelled;       /* sequences dropped because their submitter let go */
    long prefills;        /* prompts prefilled */
    long decode_steps;    /* batched decode steps */
    long decode_tokens;   /* tokens produced by decode steps (sum of their batch sizes) */
    int running;          /* sequences holding a slot now */
    int waiting;          /* requests queued now */
    int max_running;      /* most sequences ever holding a slot at once */
    long kv_reserved;     /* tokens reserved now (prompt + max_tokens of running) */
    long max_kv_reserved; /* most tokens ever reserved at once */
    double prefill_s;     /* seconds in prefill */
    double decode_s;      /* seconds in decode steps */
};
void tb_batcher_stats(struct tb_batcher *b, struct tb_batcher_stats *s);

/* The batching benchmark (not a timed test): on this CPU, llama-small (layers: 0 = all)
 * at batch B with seq_in prompt and seq_out output tokens: (a) static-batch decode
 * tokens/s with tb_llama_prefill + tb_llama_decode; (b) the batcher's decode tokens/s
 * with B requests submitted together, then with staggered arrivals (one every
 * seq_out / B tokens' time); prints each and their ratio to (a) on out (the target is
 * >= 0.70). Returns 0, or -1 with a message. In harness/cli/cmd_perf_serve.c. */
int tb_perf_batching(FILE *out, const char *model, int layers, int B, int seq_in, int seq_out,
                     char *err, size_t errlen);

#endif
