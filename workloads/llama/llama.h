/*
 * workloads/llama/llama.h: the CPU Llama decoder engine. Real math on random weights
 * drawn from a seed, fp32, matrix products through OpenBLAS (cblas).
 *
 * Shape legend: B batch (sequences), T tokens per sequence, C hidden, NH query heads,
 * NKV key/value heads, HD head dim, F FFN width, V vocabulary, L layers.
 *
 * Phases:
 *   prefill  tb_llama_prefill: B prompts of T tokens, fills the KV cache, last-position
 *            logits [B, V].
 *   decode   tb_llama_decode: one token per sequence at position pos using the cache,
 *            logits [B, V].
 *   slots    tb_llama_prefill_slot, tb_llama_decode_slots: each sequence in a cache
 *            slot of its own at its own position (continuous batching).
 *   train    tb_llama_train_step: forward with cross-entropy loss over all B*T
 *            positions, full backward pass, AdamW update.
 *
 * Ownership: a struct tb_llama owns every buffer it points to (one arena for the
 * parameters, one for gradients and optimizer state, one for activations, one for the
 * KV cache); tb_llama_release frees them all. The architecture is borrowed and must
 * outlive the engine. Not thread-safe (BLAS threads inside one call are fine).
 *
 * Layout and conventions (llama.c): in the parameter arena wq, wk, wv of a layer are
 * adjacent (one [NH*HD + 2*NKV*HD, C] matrix, one GEMM) and so are w_gate, w_up; the
 * norm weights come last. RoPE rotates the pairs (i, i + HD/2) of each head (Hugging
 * Face's layout). Arenas are mapped lazily, so the first call of each phase also pays
 * for first-touch page faults: warm up before timing.
 */
#ifndef TB_LLAMA_H
#define TB_LLAMA_H

#include "tb_arch.h"

#include <stddef.h>
#include <stdint.h>

/* Where one layer's weights live inside the parameter arena. Matrices are row-major
 * [out, in] (as PyTorch's nn.Linear stores them): y = x W^T. */
struct tb_llama_layer {
    float *attn_norm; /* [C] */
    float *wq;        /* [NH*HD, C] */
    float *wk;        /* [NKV*HD, C] */
    float *wv;        /* [NKV*HD, C] */
    float *wo;        /* [C, NH*HD] */
    float *mlp_norm;  /* [C] */
    float *w_gate;    /* [F, C] */
    float *w_up;      /* [F, C] */
    float *w_down;    /* [C, F] */
};

enum tb_llama_flags {
    TB_LLAMA_TRAIN = 1 << 0, /* allocate gradients, AdamW state and saved activations */
};

struct tb_llama {
    const struct tb_arch *arch; /* borrowed */
    int max_batch, max_seq;     /* capacity of activations and the KV cache */
    unsigned flags;

    float *params; /* owned arena: every parameter */
    size_t n_params;
    float *tok_emb;                /* [V, C] inside params */
    struct tb_llama_layer *layers; /* owned: [L] pointers into params */
    float *final_norm;             /* [C] */
    float *lm_head;                /* [V, C]; == tok_emb when tied */

    float *grads;           /* owned arena, same layout as params (TRAIN only) */
    float *adam_m, *adam_v; /* owned (TRAIN only) */
    long adam_t;            /* AdamW steps taken */

    float *logits; /* owned: [B, V] after prefill/decode; [B, T, V] in training */
    void *priv;    /* owned: activations, KV cache, scratch (engine's own) */
};

/* Allocate for up to max_batch sequences of max_seq tokens and draw weights from seed
 * (normal, std 0.02, norms at 1; the same seed gives the same weights). Returns 0, or
 * -1 with a message (e.g. out of memory, with the bytes asked for). */
int tb_llama_init(struct tb_llama *m, const struct tb_arch *arch, int max_batch, int max_seq,
                  unsigned flags, uint64_t seed, char *err, size_t errlen);
void tb_llama_release(struct tb_llama *m);

/* Bytes the engine allocated (parameters, state, activations, cache). */
size_t tb_llama_bytes(const struct tb_llama *m);

/* tokens: [B, T] ids in [0, V). Runs positions 0..T-1, stores K and V for them, leaves
 * logits of position T-1 in m->logits [B, V]. */
int tb_llama_prefill(struct tb_llama *m, const int *tokens, int B, int T, char *err, size_t errlen);

/* tokens: [B], one new token per sequence at position pos (pos < max_seq; positions
 * 0..pos-1 must be cached). Appends to the cache, logits in m->logits [B, V].
 * Decoding at an earlier position again is allowed: the cache then ends at pos. */
int tb_llama_decode(struct tb_llama *m, const int *tokens, int B, int pos, char *err,
                    size_t errlen);

/* ---- per-sequence slots (continuous batching, harness/serve/tb_batcher.h) ----
 * Each of the max_batch cache slots holds one sequence of its own length; the engine
 * keeps each slot's cached length. prefill/decode above use slots 0..B-1; a slot call
 * that shortens one of those slots shortens what decode may rely on as well. */

/* One prompt of T tokens (ids in [0, V)) into cache slot slot (in [0, max_batch)),
 * positions 0..T-1; the logits of position T-1 into logits_out [V] (m->logits is left
 * alone). The slot's earlier contents are dropped. Returns 0, or -1 with a message. */
int tb_llama_prefill_slot(struct tb_llama *m, const int *tokens, int T, int slot, float *logits_out,
                          char *err, size_t errlen);

/* One token for each of B sequences: tokens[i] for the sequence in cache slot slots[i]
 * (distinct) at its own position pos[i] (< max_seq; positions 0..pos[i]-1 of that slot
 * must be cached; an earlier position again rewinds the slot). One GEMM per linear layer
 * over the B rows; RoPE, the cache store and attention per row. Logits in m->logits
 * [B, V]. Returns 0, or -1 with a message naming the sequence and what was wrong. */
int tb_llama_decode_slots(struct tb_llama *m, const int *tokens, const int *slots, const int *pos,
                          int B, char *err, size_t errlen);

/* Training forward: tokens and targets [B, T]; keeps the activations the backward pass
 * needs; logits of every position in m->logits [B, T, V]. Returns the mean
 * cross-entropy loss in *loss. */
int tb_llama_forward_loss(struct tb_llama *m, const int *tokens, const int *targets, int B, int T,
                          float *loss, char *err, size_t errlen);
/* Gradients of the mean loss of the last forward_loss, written (not accumulated) into
 * m->grads. Refused when no forward_loss came since the engine was set up, or since a
 * prefill, decode or AdamW step (they overwrite activations or parameters). */
int tb_llama_backward(struct tb_llama *m, char *err, size_t errlen);

struct tb_adamw {
    float lr, beta1, beta2, eps, weight_decay;
};
/* Default AdamW settings (lr 3e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1). */
struct tb_adamw tb_adamw_default(void);
/* One AdamW step over all parameters with bias correction; weight decay skips the norm
 * weights. Decoupled decay: p -= lr * (wd * p + m_hat / (sqrt(v_hat) + eps)). One fused
 * pass. Does nothing on an engine set up without TB_LLAMA_TRAIN. */
void tb_llama_adamw(struct tb_llama *m, const struct tb_adamw *opt);

/* forward_loss + backward + adamw. */
int tb_llama_train_step(struct tb_llama *m, const int *tokens, const int *targets, int B, int T,
                        const struct tb_adamw *opt, float *loss, char *err, size_t errlen);

/* Called between backward and the AdamW update with the gradient arena (m->grads, n
 * floats, the layout of m->params): data-parallel training averages it over its ranks
 * here, in place. Returns 0, or -1 with a message (the step then stops, no update). */
typedef int (*tb_llama_grad_sync_fn)(void *ctx, float *grads, size_t n, char *err, size_t errlen);

/* tb_llama_train_step with sync (NULL: none) called on the gradients before the update. */
int tb_llama_train_step_sync(struct tb_llama *m, const int *tokens, const int *targets, int B,
                             int T, const struct tb_adamw *opt, tb_llama_grad_sync_fn sync,
                             void *ctx, float *loss, char *err, size_t errlen);

/* The RoPE tables of arch for positions [0, max_seq): cos and sin [max_seq, HD/2] of
 * the angle pos * freq_i (freq_i = theta^(-2i/HD), with Llama 3.1's scaling when the
 * model has it), computed in double and rounded. The engine's own tables; the GPU
 * engine takes them from here. */
void tb_llama_rope_table(const struct tb_arch *a, int max_seq, float *cos_out, float *sin_out);

/* Plain double-precision reference (no BLAS, no cache, straightforward loops): logits of
 * every position of B sequences of T tokens from the engine's current parameters,
 * written to out [B, T, V] (doubles). For tests. */
int tb_llama_reference_forward(const struct tb_llama *m, const int *tokens, int B, int T,
                               double *out, char *err, size_t errlen);

#endif
