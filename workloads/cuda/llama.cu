/*
 * workloads/cuda/llama.cu: the GPU Llama engine (the plugin's llama_* entries in
 * harness/tb_cuda_abi.h): prefill, decode with a KV cache and a training step
 * (forward, cross-entropy, backward, AdamW), the CPU engine's math
 * (workloads/llama/llama.c) in bf16 mixed precision.
 *
 * Precision: the parameter arena is fp32 (the master weights) with the CPU engine's
 * layout; a bf16 copy of the whole arena feeds the matrix products (refreshed by the
 * fused AdamW kernel). Activations that enter a product are bf16; the residual stream,
 * RMSNorm statistics, attention scores, softmax arithmetic, the loss and every weight
 * gradient are fp32 (products write fp32 outputs where the consumer needs them).
 * Inference logits are fp32; training logits bf16 (overwritten in place by their
 * gradient, as llm.c does), the loss computed from them in fp32.
 *
 * Precision fp8 (TB_CUDA_LLAMA_FP8, inference only): the four linear products of each
 * layer take e4m3 operands. Their weights are quantised once at init from the fp32
 * arena, one scale per fused tensor (wq|wk|wv as one, w_gate|w_up as one: the product
 * runs on the fused tensor, so its shards share the largest shard's range, as vLLM
 * requantises fused fp8 shards to their maximum scale); each product's bf16 input is
 * quantised just before it with its own current scale (448 / amax: Transformer
 * Engine's current-scaling recipe, no amax history, so no scale can go stale between
 * steps). Products run through cuBLASLt's fp8 path, or the fp8 GEMV for decode's few
 * rows. The embeddings, norms, attention, the KV cache (bf16) and the LM head (bf16,
 * as fp8 checkpoints of TensorRT-LLM and vLLM keep lm_head in 16 bits: its errors
 * land directly on the logits) are as in bf16; the bf16 copy of the layers' weights
 * is not kept.
 *
 * Attention (prefill and training): fused (flash.cu): the [T, T] scores never reach
 * device memory. The forward reads head-major q and k, v (the KV cache in inference)
 * and writes y token-major, keeping only each query's log-sum-exp per layer for the
 * backward pass, which recomputes the probabilities and writes head-major dq, dk, dv
 * (dk, dv summed over the G query heads of each KV head) for the RoPE backward. Head
 * dims up to 128 (every Llama); the engine refuses larger ones. Decode: one kernel per
 * step over the cache. Decode steps run as one CUDA graph per batch size (launch
 * overhead dominates small-batch decode otherwise); the position lives in device
 * memory and the graph advances it.
 *
 * Slots (continuous batching, llama_prefill_slot and llama_decode_slots): each cache
 * row holds a sequence of its own length. A prompt is prefilled into one row (the
 * layers run on the cache pointers offset by that row); a decode step takes n rows,
 * row i at its own position in its own cache row, both uploaded each step into device
 * arrays that the RoPE and decode-attention kernels read per row. The step's graph
 * (one per n, apart from the shared-position graph) therefore replays for any
 * positions and slots. The host keeps each cache row's cached length to refuse a
 * position that would read uncached keys.
 *
 * Memory: every buffer is one cudaMalloc recorded in the engine, freed by llama_free.
 */
#include "cuda_common.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One layer's forward activations (training keeps one set per layer). */
struct acts {
    bf16 *xn1;    /* [N, C] */
    float *rstd1; /* [N] */
    bf16 *q;      /* [B, NH, T, HD] after RoPE */
    bf16 *k, *v;  /* [B, NKV, T, HD] (training); inference uses the cache */
    float *lse;   /* [B, NH, T] log-sum-exp of each query's scores (training) */
    bf16 *y;      /* [N, QD] attention output, token-major */
    bf16 *xn2;    /* [N, C] */
    float *rstd2; /* [N] */
    bf16 *gu;     /* [N, 2F] gate | up */
    bf16 *h;      /* [N, F] */
};

struct engine {
    struct tb_arch a;
    int maxB, maxS;
    unsigned flags;
    bool train;
    size_t n_params, decay_end, off_tok, off_head, off_fnorm;
    size_t *loff; /* owned host: [L][TB_CUDA_W_PER_LAYER] */

    float *p;         /* master weights [n_params] */
    bf16 *wb;         /* bf16 copy */
    float *g, *m, *v; /* gradients and AdamW moments (train) */
    long adam_t;
    float *rope_cos, *rope_sin; /* [maxS, HD/2] */
    bf16 *kc, *vc;              /* cache [L][maxB][NKV][maxS][HD] (inference) */
    float *dec_ws;              /* decode attention's per-chunk partials (inference) */

    struct acts *la;    /* owned host: [L] (train) or [1] */
    float **res, **mid; /* owned host: [L+1], [L]; inference: all the same buffer */
    bf16 *qkv;          /* [N, QKV] */
    bf16 *xf;           /* [N, C] (train) or [maxB, C] */
    float *rstdf;       /* [N] */
    float *logits;      /* [maxB, V] fp32 (inference) */
    bf16 *logits_b;     /* [N, V] (train) */
    float *row_loss, *loss;
    /* backward */
    float *dres, *dxn;
    float *delta; /* [B, NH, T] rowsum(dY * Y), the attention backward's scratch */
    bf16 *dres_b, *dh, *dgu, *dy, *dq, *dk, *dv, *dqkv;

    int *tok, *tgt, *pos, *flag;  /* device */
    int dev_pos;                  /* what *pos holds (-1: unknown) */
    int kv_len, kv_batch, last_B; /* the shared-position path's cache: rows [0, kv_batch)
                                     hold positions [0, kv_len) */
    bool have_logits, have_loss;
    bool tok_greedy; /* e->tok holds the last decode step's argmax */

    /* slots (inference) */
    int *sl_io;     /* device [4][maxB]: a slot step's tokens | cache rows | positions (the
                       inputs, uploaded together) | greedy tokens (out) */
    int *sl_prompt; /* device [maxS]: llama_prefill_slot's prompt */
    int *sl_host;   /* owned host: [3][maxB] the inputs of sl_io, staged */
    int *sl_seen;   /* owned host: [maxB] scratch of the distinct-slots check */
    int *slot_len;  /* owned host: [maxB] positions [0, slot_len[r]) of cache row r cached */

    cudaGraphExec_t graph; /* shared-position decode, for graph_B rows */
    int graph_B;
    cudaGraphExec_t sgraph; /* slot decode, for sgraph_B rows */
    int sgraph_B;
    bool graph_broken;

    struct cu_bufs mem; /* every device buffer it holds */

    /* precision fp8 (TB_CUDA_LLAMA_FP8) */
    bool use_fp8;
    const bf16 *head_b; /* the LM head's bf16 weights [V, C] (inside wb, or its own copy) */
    fp8 *w8;            /* [L][w8_layer bytes]: the W8_* tensors of each layer, e4m3 */
    size_t w8_off[4];   /* byte offsets of the W8_* tensors inside a layer's block */
    size_t w8_layer;
    float *w8_sc; /* [L][W8_COUNT][TB_FP8_SCALES] */
    fp8 *x8;      /* [N, max(C, QD, F)]: the quantised input of the current product */
    float *x8_sc; /* [TB_FP8_SCALES] */
};

/* The layers' linear products, by their (fused) weights. */
enum { W8_QKV, W8_O, W8_GU, W8_DOWN, W8_COUNT };

static void engine_free(struct engine *e)
{
    if (!e)
        return;
    if (e->graph)
        cudaGraphExecDestroy(e->graph);
    if (e->sgraph)
        cudaGraphExecDestroy(e->sgraph);
    cu_bufs_release(&e->mem);
    free(e->sl_host);
    free(e->sl_seen);
    free(e->slot_len);
    free(e->loff);
    free(e->la);
    free(e->res);
    free(e->mid);
    free(e);
}

/* ---- weights ---- */

static const float *W32(const struct engine *e, size_t off)
{
    return e->p + off;
}
static const bf16 *W16(const struct engine *e, size_t off)
{
    return e->wb + off;
}
static size_t LW(const struct engine *e, int l, int which)
{
    return e->loff[(size_t)l * TB_CUDA_W_PER_LAYER + which];
}

/* ---- products ---- */

/* D[M,N] = alpha op(A) op(B) + beta C over batch matrices (strides in elements; 0 and
 * batch 1 for one product), row-major with leading dimensions (cuda_common.cuh). */
static int product(bool ta, bool tb, bool out_f32, int M, int N, int K, const bf16 *A, int lda,
                   long long sa, const bf16 *Bm, int ldb, long long sb, const void *C, void *D,
                   int ldd, long long sd, int batch, float alpha, float beta, const char *what,
                   char *err, size_t errlen)
{
    struct cu_gemm g;
    memset(&g, 0, sizeof g);
    g.ta = ta;
    g.tb = tb;
    g.out_f32 = out_f32;
    g.M = M;
    g.N = N;
    g.K = K;
    g.batch = batch;
    g.A = A;
    g.lda = lda;
    g.sa = sa;
    g.B = Bm;
    g.ldb = ldb;
    g.sb = sb;
    g.C = C;
    g.D = D;
    g.ldd = ldd;
    g.sd = sd;
    g.alpha = alpha;
    g.beta = beta;
    return cu_gemm_run(&g, what, err, errlen);
}

/* out[N, O] (= or, with acc_in, acc_in +) x[N, K] W[O, K]^T: the decode path's
 * small-row kernel for N <= 8 rows (in place only), cuBLASLt otherwise. */
static int linear(void *out, bool out_f32, const float *acc_in, const bf16 *x, const bf16 *w, int N,
                  int K, int O, const char *what, char *err, size_t errlen)
{
    if (N <= TB_CUDA_GEMV_MAX_ROWS && (!acc_in || acc_in == out)) {
        CU_LAUNCH(what, k_gemv(out, out_f32, acc_in != NULL, x, w, N, O, K));
        return 0;
    }
    return product(false, true, out_f32, N, O, K, x, K, 0, w, K, 0, acc_in, out, O, 0, 1, 1.0f,
                   acc_in ? 1.0f : 0.0f, what, err, errlen);
}

/* The same product on e4m3 operands: x (bf16 [N, K]) quantised into e->x8 with its own
 * current scale, then cuBLASLt's fp8 product or, for N <= 8 rows, the fp8 GEMV.
 * w [O, K] e4m3 with its scales w_sc (device, TB_FP8_SCALES). */
static int linear_fp8(struct engine *e, void *out, bool out_f32, const float *acc_in, const bf16 *x,
                      const fp8 *w, const float *w_sc, int N, int K, int O, const char *what,
                      char *err, size_t errlen)
{
    struct cu_gemm g;
    CU_LAUNCH("fp8_quantize", k_fp8_quantize_bf16(e->x8, e->x8_sc, x, (size_t)N * K));
    if (N <= TB_CUDA_GEMV_MAX_ROWS && (!acc_in || acc_in == out)) {
        CU_LAUNCH(what, k_gemv_fp8(out, out_f32, acc_in != NULL, e->x8, e->x8_sc + TB_FP8_DEQ, w,
                                   w_sc + TB_FP8_DEQ, N, O, K));
        return 0;
    }
    /* cuBLASLt's fp8 products take rows in multiples of 16: the rest, fewer than 16, go
     * through the GEMV, 8 at a time, accumulating in place (acc_in's rows copied first) */
    int N16 = N / 16 * 16, rem = N - N16;
    size_t esz = out_f32 ? sizeof(float) : sizeof(bf16);
    if (N16 > 0) {
        g = cu_gemm_linear(out, out_f32, O, false, e->x8, K, w, N16, K, O);
        g.C = acc_in; /* out = acc_in + x W^T */
        g.beta = acc_in ? 1.0f : 0.0f;
        g.in_type = CU_DT_E4M3;
        g.a_scale = e->x8_sc + TB_FP8_DEQ;
        g.b_scale = w_sc + TB_FP8_DEQ;
        CU_TRY(cu_gemm_run(&g, what, err, errlen));
    }
    if (rem > 0) {
        char *o = (char *)out + (size_t)N16 * O * esz;
        if (acc_in && acc_in != out)
            CU_CHECK(cudaMemcpyAsync(o, acc_in + (size_t)N16 * O, (size_t)rem * O * sizeof(float),
                                     cudaMemcpyDeviceToDevice, g_cu.stream));
        for (int r = 0; r < rem; r += TB_CUDA_GEMV_MAX_ROWS) {
            int m = rem - r < TB_CUDA_GEMV_MAX_ROWS ? rem - r : TB_CUDA_GEMV_MAX_ROWS;
            CU_LAUNCH(what, k_gemv_fp8(o + (size_t)r * O * esz, out_f32, acc_in != NULL,
                                       e->x8 + (size_t)(N16 + r) * K, e->x8_sc + TB_FP8_DEQ, w,
                                       w_sc + TB_FP8_DEQ, m, O, K));
        }
    }
    return 0;
}

/* Layer l's linear product `which` (W8_*) on N rows of x: linear() on the bf16 weights,
 * or linear_fp8() on their e4m3 copy in precision fp8. */
static int layer_linear(struct engine *e, int l, int which, void *out, bool out_f32,
                        const float *acc_in, const bf16 *x, int N, int K, int O, const char *what,
                        char *err, size_t errlen)
{
    static const int arena[W8_COUNT] = {TB_CUDA_W_WQ, TB_CUDA_W_WO, TB_CUDA_W_GATE, TB_CUDA_W_DOWN};
    if (e->use_fp8)
        return linear_fp8(
            e, out, out_f32, acc_in, x, e->w8 + (size_t)l * e->w8_layer + e->w8_off[which],
            e->w8_sc + ((size_t)l * W8_COUNT + which) * TB_FP8_SCALES, N, K, O, what, err, errlen);
    return linear(out, out_f32, acc_in, x, W16(e, LW(e, l, arena[which])), N, K, O, what, err,
                  errlen);
}

/* dx[N, K] = dout[N, O] W[O, K] (fp32 or bf16 out). */
static int linear_bwd_x(void *dx, bool out_f32, const bf16 *dout, const bf16 *w, int N, int K,
                        int O, const char *what, char *err, size_t errlen)
{
    return product(false, false, out_f32, N, K, O, dout, O, 0, w, K, 0, NULL, dx, K, 0, 1, 1.0f,
                   0.0f, what, err, errlen);
}

/* dW[O, K] (fp32) = dout[N, O]^T x[N, K]. */
static int linear_bwd_w(float *dw, const bf16 *dout, const bf16 *x, int N, int K, int O,
                        const char *what, char *err, size_t errlen)
{
    return product(true, false, true, O, K, N, dout, O, 0, x, K, 0, NULL, dw, K, 0, 1, 1.0f, 0.0f,
                   what, err, errlen);
}

/* ---- attention ---- */

/* The fused attention's description of the engine's causal attention over B
 * sequences of T tokens: q [B,NH,T,HD] head-major; k, v [B,NKV,S,HD] (rows 0..T-1
 * used); y [N, QD] token-major; lse [B,NH,T] (NULL: not kept). */
static struct cu_flash_fwd attention_args(const struct engine *e, const bf16 *q, const bf16 *k,
                                          const bf16 *v, int S, float *lse, bf16 *y, int B, int T)
{
    const struct tb_arch *a = &e->a;
    struct cu_flash_fwd f;
    memset(&f, 0, sizeof f);
    f.B = B;
    f.H = a->heads;
    f.HKV = a->kv_heads;
    f.Sq = T;
    f.Sk = T;
    f.D = a->head_dim;
    f.causal = true;
    f.scale = 1.0f / sqrtf((float)a->head_dim);
    f.q = q;
    f.k = k;
    f.v = v;
    f.sq = cu_strides_head_major(a->heads, T, a->head_dim);
    f.sk = f.sv = cu_strides_head_major(a->kv_heads, S, a->head_dim);
    f.o = y;
    f.so = cu_strides_token_major(a->heads, T, a->head_dim);
    f.lse = lse;
    return f;
}

static int attention_fwd(struct engine *e, const bf16 *q, const bf16 *k, const bf16 *v, int S,
                         float *lse, bf16 *y, int B, int T, char *err, size_t errlen)
{
    struct cu_flash_fwd f = attention_args(e, q, k, v, S, lse, y, B, T);
    return cu_flash_fwd(&f, err, errlen);
}

/* Backward of attention_fwd (k, v with S = T, lse kept): dy [N, QD] in; dq [B,NH,T,HD],
 * dk, dv [B,NKV,T,HD] out (bf16). */
static int attention_bwd(struct engine *e, const struct acts *x, const bf16 *dy, int B, int T,
                         char *err, size_t errlen)
{
    const struct tb_arch *a = &e->a;
    struct cu_flash_bwd g;
    memset(&g, 0, sizeof g);
    g.fwd = attention_args(e, x->q, x->k, x->v, T, x->lse, x->y, B, T);
    g.dout = dy;
    g.sdo = g.fwd.so;
    g.delta = e->delta;
    g.dq = e->dq;
    g.dk = e->dk;
    g.dv = e->dv;
    g.sdq = g.fwd.sq;
    g.sdk = g.sdv = cu_strides_head_major(a->kv_heads, T, a->head_dim);
    return cu_flash_bwd(&g, err, errlen);
}

/* ---- set-up ---- */

static int alloc_acts(struct engine *e, struct acts *x, size_t N, char *err, size_t errlen)
{
    const struct tb_arch *a = &e->a;
    size_t C = a->hidden, HD = a->head_dim, QD = (size_t)a->heads * HD;
    size_t KD = (size_t)a->kv_heads * HD, F = a->ffn;
    CU_ALLOC(&e->mem, x->xn1, N * C, "normed activations");
    CU_ALLOC(&e->mem, x->rstd1, N, "norm statistics");
    CU_ALLOC(&e->mem, x->q, N * QD, "queries");
    if (e->train) {
        CU_ALLOC(&e->mem, x->k, N * KD, "keys");
        CU_ALLOC(&e->mem, x->v, N * KD, "values");
        CU_ALLOC(&e->mem, x->lse, N * a->heads, "attention log-sum-exps");
    }
    CU_ALLOC(&e->mem, x->y, N * QD, "attention outputs");
    CU_ALLOC(&e->mem, x->xn2, N * C, "normed activations");
    CU_ALLOC(&e->mem, x->rstd2, N, "norm statistics");
    CU_ALLOC(&e->mem, x->gu, N * 2 * F, "gate and up projections");
    CU_ALLOC(&e->mem, x->h, N * F, "SwiGLU outputs");
    return 0;
}

static int check_layout(const struct tb_arch *a, const struct tb_cuda_llama_weights *w, char *err,
                        size_t errlen)
{
    size_t C = a->hidden, HD = a->head_dim, QD = (size_t)a->heads * HD;
    size_t KD = (size_t)a->kv_heads * HD, F = a->ffn;
    for (int l = 0; l < a->layers; l++) {
        const size_t *o = w->layer + (size_t)l * TB_CUDA_W_PER_LAYER;
        if (o[TB_CUDA_W_WK] != o[TB_CUDA_W_WQ] + QD * C ||
            o[TB_CUDA_W_WV] != o[TB_CUDA_W_WK] + KD * C ||
            o[TB_CUDA_W_UP] != o[TB_CUDA_W_GATE] + F * C)
            return cu_err(err, errlen,
                          "layer %d: wq|wk|wv or w_gate|w_up are not adjacent in the parameter "
                          "arena (the GPU engine fuses them)",
                          l);
        for (int i = 0; i < TB_CUDA_W_PER_LAYER; i++)
            if (o[i] >= w->n_params)
                return cu_err(err, errlen, "layer %d: weight %d outside the arena", l, i);
    }
    if (a->head_dim % 2 || a->heads % a->kv_heads)
        return cu_err(err, errlen, "model '%s': odd head_dim or heads not a multiple of kv_heads",
                      a->name);
    if (a->head_dim > 128)
        return cu_err(err, errlen,
                      "model '%s': head_dim %d (the fused attention supports up to 128)", a->name,
                      a->head_dim);
    return 0;
}

/* Precision fp8: the e4m3 copies of the layers' linear weights (one current scale per
 * fused tensor, from the fp32 arena e->p), and the buffers of the quantised inputs for
 * up to N rows. */
static int init_fp8(struct engine *e, size_t N, char *err, size_t errlen)
{
    const struct tb_arch *a = &e->a;
    size_t C = a->hidden, HD = a->head_dim, QD = (size_t)a->heads * HD;
    size_t KD = (size_t)a->kv_heads * HD, QKV = QD + 2 * KD, F = a->ffn, L = a->layers;
    const size_t rows[W8_COUNT] = {QKV, C, 2 * F, C}, cols[W8_COUNT] = {C, QD, C, F};
    const int arena[W8_COUNT] = {TB_CUDA_W_WQ, TB_CUDA_W_WO, TB_CUDA_W_GATE, TB_CUDA_W_DOWN};
    size_t kmax = C > QD ? C : QD;

    CU_TRY(cu_fp8_check(err, errlen));
    kmax = kmax > F ? kmax : F;
    /* cuBLASLt's fp8 products want K and N multiples of 16 (cuda_common.cuh) */
    if (C % 16 || QD % 16 || KD % 16 || F % 16)
        return cu_err(err, errlen,
                      "model '%s': fp8 products need hidden (%zu), heads x head_dim (%zu), "
                      "kv_heads x head_dim (%zu) and ffn (%zu) multiples of 16",
                      a->name, C, QD, KD, F);
    e->w8_layer = 0;
    for (int i = 0; i < W8_COUNT; i++) {
        e->w8_off[i] = e->w8_layer;
        e->w8_layer += (rows[i] * cols[i] + 255) / 256 * 256; /* 256-byte aligned tensors */
    }
    CU_ALLOC(&e->mem, e->w8, L * e->w8_layer, "fp8 weights");
    CU_ALLOC(&e->mem, e->w8_sc, L * W8_COUNT * TB_FP8_SCALES, "fp8 weight scales");
    for (size_t l = 0; l < L; l++)
        for (int i = 0; i < W8_COUNT; i++)
            CU_LAUNCH("fp8_quantize",
                      k_fp8_quantize(e->w8 + l * e->w8_layer + e->w8_off[i],
                                     e->w8_sc + (l * W8_COUNT + i) * TB_FP8_SCALES,
                                     W32(e, LW(e, (int)l, arena[i])), rows[i] * cols[i]));
    CU_ALLOC(&e->mem, e->x8, N * kmax, "fp8 activations");
    CU_ALLOC(&e->mem, e->x8_sc, TB_FP8_SCALES, "fp8 activation scales");
    return 0;
}

static int init(struct engine *e, const struct tb_arch *a, const struct tb_cuda_llama_weights *w,
                int maxB, int maxS, unsigned flags, char *err, size_t errlen)
{
    size_t L = a->layers, C = a->hidden, HD = a->head_dim, QD = (size_t)a->heads * HD;
    size_t KD = (size_t)a->kv_heads * HD, QKV = QD + 2 * KD, F = a->ffn, V = a->vocab;
    size_t N = (size_t)maxB * maxS, half = HD / 2, nla;

    e->a = *a;
    e->maxB = maxB;
    e->maxS = maxS;
    e->flags = flags;
    e->train = (flags & TB_CUDA_LLAMA_TRAIN) != 0;
    e->use_fp8 = (flags & TB_CUDA_LLAMA_FP8) != 0;
    e->n_params = w->n_params;
    e->decay_end = w->decay_end;
    e->off_tok = w->tok_emb;
    e->off_head = w->lm_head;
    e->off_fnorm = w->final_norm;
    e->dev_pos = -1;
    nla = e->train ? L : 1;
    e->loff = (size_t *)malloc(L * TB_CUDA_W_PER_LAYER * sizeof *e->loff);
    e->la = (struct acts *)calloc(nla, sizeof *e->la);
    e->res = (float **)calloc(L + 1, sizeof *e->res);
    e->mid = (float **)calloc(L, sizeof *e->mid);
    e->sl_host = (int *)calloc(3 * (size_t)maxB, sizeof *e->sl_host);
    e->sl_seen = (int *)calloc((size_t)maxB, sizeof *e->sl_seen);
    e->slot_len = (int *)calloc((size_t)maxB, sizeof *e->slot_len);
    if (!e->loff || !e->la || !e->res || !e->mid || !e->sl_host || !e->sl_seen || !e->slot_len)
        return cu_err(err, errlen, "out of host memory for the engine");
    memcpy(e->loff, w->layer, L * TB_CUDA_W_PER_LAYER * sizeof *e->loff);

    CU_ALLOC(&e->mem, e->p, w->n_params, "master weights (fp32)");
    CU_CHECK(cudaMemcpyAsync(e->p, w->params, w->n_params * sizeof(float), cudaMemcpyHostToDevice,
                             g_cu.stream));
    if (e->use_fp8) {
        bf16 *head;
        CU_ALLOC(&e->mem, head, V * C, "LM head (bf16)");
        CU_LAUNCH("cast_bf16", k_cast_bf16(head, e->p + e->off_head, V * C));
        e->head_b = head;
        CU_TRY(init_fp8(e, N, err, errlen));
    } else {
        CU_ALLOC(&e->mem, e->wb, w->n_params, "bf16 weights");
        CU_LAUNCH("cast_bf16", k_cast_bf16(e->wb, e->p, w->n_params));
        e->head_b = W16(e, e->off_head);
    }
    CU_ALLOC(&e->mem, e->rope_cos, (size_t)maxS * half, "RoPE table");
    CU_ALLOC(&e->mem, e->rope_sin, (size_t)maxS * half, "RoPE table");
    CU_CHECK(cudaMemcpyAsync(e->rope_cos, w->rope_cos, (size_t)maxS * half * sizeof(float),
                             cudaMemcpyHostToDevice, g_cu.stream));
    CU_CHECK(cudaMemcpyAsync(e->rope_sin, w->rope_sin, (size_t)maxS * half * sizeof(float),
                             cudaMemcpyHostToDevice, g_cu.stream));
    if (e->train) {
        CU_ALLOC(&e->mem, e->g, w->n_params, "gradients");
        CU_ALLOC(&e->mem, e->m, w->n_params, "AdamW first moments");
        CU_ALLOC(&e->mem, e->v, w->n_params, "AdamW second moments");
        CU_CHECK(cudaMemsetAsync(e->m, 0, w->n_params * sizeof(float), g_cu.stream));
        CU_CHECK(cudaMemsetAsync(e->v, 0, w->n_params * sizeof(float), g_cu.stream));
    } else {
        CU_ALLOC(&e->mem, e->kc, L * maxB * KD * (size_t)maxS, "K cache");
        CU_ALLOC(&e->mem, e->vc, L * maxB * KD * (size_t)maxS, "V cache");
        /* before any graph capture: the decode kernel's shared memory limit */
        CU_ALLOC(&e->mem, e->dec_ws, k_attention_decode_ws(maxB, a->heads, (int)HD, maxS),
                 "decode attention partials");
        CU_LAUNCH("attention_decode setup",
                  k_attention_decode_setup(a->heads, a->kv_heads, (int)HD));
    }
    for (size_t l = 0; l <= L; l++) {
        if (e->train || l == 0)
            CU_ALLOC(&e->mem, e->res[l], N * C, "residual stream");
        else
            e->res[l] = e->res[0];
        if (l < L) {
            if (e->train)
                CU_ALLOC(&e->mem, e->mid[l], N * C, "residual stream");
            else
                e->mid[l] = e->res[0];
        }
    }
    for (size_t l = 0; l < nla; l++)
        CU_TRY(alloc_acts(e, &e->la[l], N, err, errlen));
    CU_ALLOC(&e->mem, e->qkv, N * QKV, "q|k|v projections");
    CU_ALLOC(&e->mem, e->xf, (e->train ? N : (size_t)maxB) * C, "final norm output");
    CU_ALLOC(&e->mem, e->rstdf, N, "final norm statistics");
    if (e->train) {
        CU_ALLOC(&e->mem, e->logits_b, N * V, "logits (bf16)");
        CU_ALLOC(&e->mem, e->row_loss, N, "per-token losses");
        CU_ALLOC(&e->mem, e->dres, N * C, "residual gradient");
        CU_ALLOC(&e->mem, e->dxn, N * C, "norm gradient");
        CU_ALLOC(&e->mem, e->dres_b, N * C, "residual gradient (bf16)");
        CU_ALLOC(&e->mem, e->dh, N * F, "SwiGLU gradient");
        CU_ALLOC(&e->mem, e->dgu, N * 2 * F, "gate and up gradient");
        CU_ALLOC(&e->mem, e->dy, N * QD, "attention output gradient");
        CU_ALLOC(&e->mem, e->delta, N * a->heads, "attention backward scratch");
        CU_ALLOC(&e->mem, e->dq, N * QD, "query gradient");
        CU_ALLOC(&e->mem, e->dk, N * KD, "key gradient");
        CU_ALLOC(&e->mem, e->dv, N * KD, "value gradient");
        CU_ALLOC(&e->mem, e->dqkv, N * QKV, "q|k|v gradient");
    } else {
        CU_ALLOC(&e->mem, e->logits, (size_t)maxB * V, "logits");
        CU_ALLOC(&e->mem, e->sl_io, 4 * (size_t)maxB, "slot step inputs and outputs");
        CU_ALLOC(&e->mem, e->sl_prompt, (size_t)maxS, "slot prompt");
    }
    CU_ALLOC(&e->mem, e->loss, 1, "loss");
    CU_ALLOC(&e->mem, e->tok, N, "token ids");
    CU_ALLOC(&e->mem, e->tgt, N, "target ids");
    CU_ALLOC(&e->mem, e->pos, 1, "decode position");
    CU_ALLOC(&e->mem, e->flag, 1, "finite flag");
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    return 0;
}

/* ---- forward ---- */

/* The MLP half of layer l on N rows: rout = rmid + swiglu(rmsnorm(rmid) Wgu^T) Wd^T
 * (rout == rmid: in place); rstd NULL: the norm statistics are not kept. */
static int mlp(struct engine *e, int l, struct acts *x, float *rmid, float *rout, float *rstd,
               int N, char *err, size_t errlen)
{
    int C = e->a.hidden, F = e->a.ffn;
    CU_LAUNCH("rmsnorm_fwd", k_rmsnorm_fwd(x->xn2, rstd, rmid, W32(e, LW(e, l, TB_CUDA_W_MLP_NORM)),
                                           N, C, (float)e->a.norm_eps, 1, 0));
    CU_TRY(layer_linear(e, l, W8_GU, x->gu, false, NULL, x->xn2, N, C, 2 * F, "gate|up projection",
                        err, errlen));
    CU_LAUNCH("swiglu_fwd", k_swiglu_fwd(x->h, x->gu, N, F));
    return layer_linear(e, l, W8_DOWN, rout, true, rmid, x->h, N, F, C, "down projection", err,
                        errlen);
}

/* The decoder layers over B sequences of T tokens from res[0] to res[L]; save keeps
 * every layer's activations (training), else the cache rows [slot, slot + B) are
 * filled. */
static int forward_layers(struct engine *e, int B, int T, bool save, int slot, char *err,
                          size_t errlen)
{
    const struct tb_arch *a = &e->a;
    int N = B * T, C = a->hidden, HD = a->head_dim;
    int QD = a->heads * HD, KD = a->kv_heads * HD, QKV = QD + 2 * KD;
    float eps = (float)a->norm_eps;
    size_t cache_layer = (size_t)e->maxB * KD * e->maxS, cache_row = (size_t)KD * e->maxS;
    for (int l = 0; l < a->layers; l++) {
        struct acts *x = &e->la[save ? l : 0];
        float *rin = e->res[save ? l : 0], *rmid = e->mid[save ? l : 0];
        float *rout = e->res[save ? l + 1 : 0];
        size_t at = l * cache_layer + (size_t)slot * cache_row;
        bf16 *k = save ? x->k : e->kc + at, *v = save ? x->v : e->vc + at;
        int S = save ? T : e->maxS;

        CU_LAUNCH("rmsnorm_fwd",
                  k_rmsnorm_fwd(x->xn1, x->rstd1, rin, W32(e, LW(e, l, TB_CUDA_W_ATTN_NORM)), N, C,
                                eps, 1, 0));
        CU_TRY(layer_linear(e, l, W8_QKV, e->qkv, false, NULL, x->xn1, N, C, QKV,
                            "q|k|v projection", err, errlen));
        CU_LAUNCH("rope_split", k_rope_split(x->q, k, v, e->qkv, e->rope_cos, e->rope_sin, NULL,
                                             NULL, NULL, N, T, S, a->heads, a->kv_heads, HD));
        CU_TRY(attention_fwd(e, x->q, k, v, S, save ? x->lse : NULL, x->y, B, T, err, errlen));
        CU_TRY(layer_linear(e, l, W8_O, rmid, true, rin, x->y, N, QD, C, "output projection", err,
                            errlen));
        CU_TRY(mlp(e, l, x, rmid, rout, x->rstd2, N, err, errlen));
    }
    return 0;
}

static int check_shape(const struct engine *e, int B, int T, char *err, size_t errlen)
{
    if (B < 1 || B > e->maxB)
        return cu_err(err, errlen, "batch %d outside the engine's capacity [1, %d]", B, e->maxB);
    if (T < 1 || T > e->maxS)
        return cu_err(err, errlen, "sequence %d outside the engine's capacity [1, %d]", T, e->maxS);
    return 0;
}

static int check_ids(const int *ids, size_t n, int V, const char *what, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return cu_err(err, errlen, "%s[%zu] = %d out of range [0, %d)", what, i, ids[i], V);
    return 0;
}

static int prefill(struct engine *e, const int *tokens, int B, int T, char *err, size_t errlen)
{
    const struct tb_arch *a = &e->a;
    int C = a->hidden, V = a->vocab;
    if (e->train)
        return cu_err(err, errlen, "engine set up for training: no KV cache for prefill");
    CU_TRY(check_shape(e, B, T, err, errlen));
    CU_TRY(check_ids(tokens, (size_t)B * T, V, "tokens", err, errlen));
    CU_CHECK(cudaMemcpyAsync(e->tok, tokens, (size_t)B * T * sizeof(int), cudaMemcpyHostToDevice,
                             g_cu.stream));
    CU_LAUNCH("embed", k_embed(e->res[0], W32(e, e->off_tok), e->tok, B * T, C));
    CU_TRY(forward_layers(e, B, T, false, 0, err, errlen));
    /* the LM head for each prompt's last position only */
    CU_LAUNCH("rmsnorm_fwd", k_rmsnorm_fwd(e->xf, NULL, e->res[0], W32(e, e->off_fnorm), B, C,
                                           (float)a->norm_eps, T, T - 1));
    CU_TRY(linear(e->logits, true, NULL, e->xf, e->head_b, B, C, V, "LM head", err, errlen));
    e->kv_len = T;
    e->kv_batch = B;
    for (int b = 0; b < B; b++)
        e->slot_len[b] = T;
    e->last_B = B;
    e->tok_greedy = false;
    e->have_logits = true;
    return 0;
}

/* The work of one decode step for B rows, capturable. Shared position (slots false):
 * tokens in e->tok, every row b at the device position *e->pos in cache row b; leaves
 * the greedy tokens in e->tok and advances *e->pos. Slots: the step's inputs in e->sl_io
 * (row b: token, cache row, position), the greedy tokens into its last quarter. */
static int decode_body(struct engine *e, int B, bool slots, char *err, size_t errlen)
{
    const struct tb_arch *a = &e->a;
    int C = a->hidden, HD = a->head_dim, V = a->vocab;
    int QD = a->heads * HD, KD = a->kv_heads * HD, QKV = QD + 2 * KD;
    float eps = (float)a->norm_eps;
    size_t cache_layer = (size_t)e->maxB * KD * e->maxS;
    struct acts *x = &e->la[0];
    float *res = e->res[0];
    const int *tok = slots ? e->sl_io : e->tok;
    const int *pos = slots ? NULL : e->pos;
    const int *row_slot = slots ? e->sl_io + e->maxB : NULL;
    const int *row_pos = slots ? e->sl_io + 2 * (size_t)e->maxB : NULL;
    int *next = slots ? e->sl_io + 3 * (size_t)e->maxB : e->tok;

    CU_LAUNCH("embed", k_embed(res, W32(e, e->off_tok), tok, B, C));
    for (int l = 0; l < a->layers; l++) {
        bf16 *k = e->kc + l * cache_layer, *v = e->vc + l * cache_layer;
        CU_LAUNCH("rmsnorm_fwd",
                  k_rmsnorm_fwd(x->xn1, NULL, res, W32(e, LW(e, l, TB_CUDA_W_ATTN_NORM)), B, C, eps,
                                1, 0));
        CU_TRY(layer_linear(e, l, W8_QKV, e->qkv, false, NULL, x->xn1, B, C, QKV,
                            "q|k|v projection", err, errlen));
        CU_LAUNCH("rope_split",
                  k_rope_split(x->q, k, v, e->qkv, e->rope_cos, e->rope_sin, pos, row_pos, row_slot,
                               B, 1, e->maxS, a->heads, a->kv_heads, HD));
        CU_LAUNCH("attention_decode",
                  k_attention_decode(x->y, e->dec_ws, x->q, k, v, pos, row_pos, row_slot, B,
                                     a->heads, a->kv_heads, HD, e->maxS));
        CU_TRY(layer_linear(e, l, W8_O, res, true, res, x->y, B, QD, C, "output projection", err,
                            errlen));
        CU_TRY(mlp(e, l, x, res, res, NULL, B, err, errlen));
    }
    CU_LAUNCH("rmsnorm_fwd",
              k_rmsnorm_fwd(e->xf, NULL, res, W32(e, e->off_fnorm), B, C, eps, 1, 0));
    CU_TRY(linear(e->logits, true, NULL, e->xf, e->head_b, B, C, V, "LM head", err, errlen));
    CU_LAUNCH("argmax", k_argmax(next, e->logits, B, V));
    if (!slots)
        CU_LAUNCH("increment", k_increment(e->pos));
    return 0;
}

/* Capture decode_body for B rows into the shared-position graph (e->graph) or the
 * slot graph (e->sgraph), replacing the one held. On failure graphs are off for good
 * and steps run directly. */
static void capture(struct engine *e, int B, bool slots)
{
    cudaGraphExec_t *exec = slots ? &e->sgraph : &e->graph;
    int *exec_B = slots ? &e->sgraph_B : &e->graph_B;
    cudaGraph_t g = NULL;
    char ignored[256];
    if (*exec) {
        cudaGraphExecDestroy(*exec);
        *exec = NULL;
        *exec_B = 0;
    }
    if (cudaStreamBeginCapture(g_cu.stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        e->graph_broken = true;
        return;
    }
    int rc = decode_body(e, B, slots, ignored, sizeof ignored);
    cudaError_t ce = cudaStreamEndCapture(g_cu.stream, &g);
    if (rc != 0 || ce != cudaSuccess || !g || cudaGraphInstantiate(exec, g, 0) != cudaSuccess) {
        *exec = NULL;
        e->graph_broken = true;
    } else {
        *exec_B = B;
    }
    if (g)
        cudaGraphDestroy(g);
    cudaGetLastError(); /* a failed capture leaves an error behind; the direct path follows */
}

/* Run decode_body for B rows: through its graph (captured for B first when needed)
 * unless graphs are off (TB_CUDA_LLAMA_NOGRAPH, or a capture failed). */
static int run_step(struct engine *e, int B, bool slots, char *err, size_t errlen)
{
    cudaGraphExec_t *exec = slots ? &e->sgraph : &e->graph;
    const int *exec_B = slots ? &e->sgraph_B : &e->graph_B;
    if (!(e->flags & TB_CUDA_LLAMA_NOGRAPH) && !e->graph_broken && *exec_B != B)
        capture(e, B, slots);
    if (*exec && *exec_B == B && !e->graph_broken)
        CU_CHECK(cudaGraphLaunch(*exec, g_cu.stream));
    else
        CU_TRY(decode_body(e, B, slots, err, errlen));
    return 0;
}

static int decode(struct engine *e, const int *tokens, int B, int pos, char *err, size_t errlen)
{
    if (e->train)
        return cu_err(err, errlen, "engine set up for training: no KV cache for decode");
    if (B < 1 || B > e->maxB)
        return cu_err(err, errlen, "batch %d outside the engine's capacity [1, %d]", B, e->maxB);
    if (pos < 0 || pos >= e->maxS)
        return cu_err(err, errlen, "position %d outside the engine's capacity [0, %d)", pos,
                      e->maxS);
    if (pos > e->kv_len)
        return cu_err(err, errlen, "position %d: only positions [0, %d) are cached", pos,
                      e->kv_len);
    if (pos > 0 && B > e->kv_batch)
        return cu_err(err, errlen, "batch %d: the cache holds %d sequences", B, e->kv_batch);
    if (!tokens && (!e->tok_greedy || e->last_B != B))
        return cu_err(err, errlen,
                      "greedy decode of batch %d needs a previous decode step of that batch", B);
    if (tokens) {
        CU_TRY(check_ids(tokens, (size_t)B, e->a.vocab, "tokens", err, errlen));
        CU_CHECK(cudaMemcpyAsync(e->tok, tokens, (size_t)B * sizeof(int), cudaMemcpyHostToDevice,
                                 g_cu.stream));
    }
    if (e->dev_pos != pos) {
        CU_CHECK(cudaMemcpyAsync(e->pos, &pos, sizeof pos, cudaMemcpyHostToDevice, g_cu.stream));
        /* a pageable copy returns once staged: pos may change after this call */
        CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    }
    CU_TRY(run_step(e, B, false, err, errlen));
    e->dev_pos = pos + 1;
    e->tok_greedy = true;
    e->kv_len = pos + 1;
    if (pos == 0)
        e->kv_batch = B;
    for (int b = 0; b < B; b++)
        e->slot_len[b] = pos + 1;
    e->last_B = B;
    e->have_logits = true;
    return 0;
}

/* ---- slots ---- */

/* After a slot call changed cache rows: the shared-position path may rely only on the
 * positions every one of its rows still caches, and its greedy tokens are gone (the
 * logits are the slot call's). */
static void slots_changed(struct engine *e)
{
    int len = e->kv_len;
    for (int b = 0; b < e->kv_batch; b++)
        len = e->slot_len[b] < len ? e->slot_len[b] : len;
    e->kv_len = len;
    e->tok_greedy = false;
    e->have_logits = true;
}

static int prefill_slot(struct engine *e, const int *tokens, int T, int slot, int *next_token,
                        char *err, size_t errlen)
{
    const struct tb_arch *a = &e->a;
    int C = a->hidden, V = a->vocab;
    if (e->train)
        return cu_err(err, errlen, "engine set up for training: no KV cache for prefill");
    if (slot < 0 || slot >= e->maxB)
        return cu_err(err, errlen, "slot %d outside the engine's capacity [0, %d)", slot, e->maxB);
    CU_TRY(check_shape(e, 1, T, err, errlen));
    CU_TRY(check_ids(tokens, (size_t)T, V, "tokens", err, errlen));
    CU_CHECK(cudaMemcpyAsync(e->sl_prompt, tokens, (size_t)T * sizeof(int), cudaMemcpyHostToDevice,
                             g_cu.stream));
    CU_LAUNCH("embed", k_embed(e->res[0], W32(e, e->off_tok), e->sl_prompt, T, C));
    CU_TRY(forward_layers(e, 1, T, false, slot, err, errlen));
    /* the LM head for the last position only, its argmax back to the host */
    CU_LAUNCH("rmsnorm_fwd", k_rmsnorm_fwd(e->xf, NULL, e->res[0], W32(e, e->off_fnorm), 1, C,
                                           (float)a->norm_eps, T, T - 1));
    CU_TRY(linear(e->logits, true, NULL, e->xf, e->head_b, 1, C, V, "LM head", err, errlen));
    CU_LAUNCH("argmax", k_argmax(e->sl_io + 3 * (size_t)e->maxB, e->logits, 1, V));
    CU_CHECK(cudaMemcpyAsync(next_token, e->sl_io + 3 * (size_t)e->maxB, sizeof *next_token,
                             cudaMemcpyDeviceToHost, g_cu.stream));
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    e->slot_len[slot] = T;
    e->last_B = 1;
    slots_changed(e);
    return 0;
}

static int decode_slots(struct engine *e, const int *tokens, const int *slots, const int *pos,
                        int n, int *next_tokens, char *err, size_t errlen)
{
    int maxB = e->maxB;
    if (e->train)
        return cu_err(err, errlen, "engine set up for training: no KV cache for decode");
    if (n < 1 || n > maxB)
        return cu_err(err, errlen, "batch %d outside the engine's capacity [1, %d]", n, maxB);
    for (int i = 0; i < n; i++)
        if (slots[i] < 0 || slots[i] >= maxB)
            return cu_err(err, errlen, "sequence %d: slot %d outside the engine's capacity [0, %d)",
                          i, slots[i], maxB);
    for (int i = 0; i < n; i++)
        e->sl_seen[slots[i]] = -1;
    for (int i = 0; i < n; i++) {
        int s = slots[i], p = pos[i];
        if (e->sl_seen[s] >= 0)
            return cu_err(err, errlen, "sequences %d and %d both in slot %d", e->sl_seen[s], i, s);
        e->sl_seen[s] = i;
        if (p < 1 || p >= e->maxS)
            return cu_err(err, errlen,
                          "sequence %d: position %d outside [1, %d) (a slot's position 0 is its "
                          "prompt's: llama_prefill_slot)",
                          i, p, e->maxS);
        if (p > e->slot_len[s])
            return cu_err(err, errlen,
                          "sequence %d: position %d: slot %d caches only positions [0, %d)", i, p,
                          s, e->slot_len[s]);
    }
    CU_TRY(check_ids(tokens, (size_t)n, e->a.vocab, "tokens", err, errlen));
    /* one upload of the three inputs (a pageable copy is staged before it returns) */
    memcpy(e->sl_host, tokens, (size_t)n * sizeof *tokens);
    memcpy(e->sl_host + maxB, slots, (size_t)n * sizeof *slots);
    memcpy(e->sl_host + 2 * (size_t)maxB, pos, (size_t)n * sizeof *pos);
    CU_CHECK(cudaMemcpyAsync(e->sl_io, e->sl_host, 3 * (size_t)maxB * sizeof *e->sl_host,
                             cudaMemcpyHostToDevice, g_cu.stream));
    CU_TRY(run_step(e, n, true, err, errlen));
    CU_CHECK(cudaMemcpyAsync(next_tokens, e->sl_io + 3 * (size_t)maxB,
                             (size_t)n * sizeof *next_tokens, cudaMemcpyDeviceToHost, g_cu.stream));
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    for (int i = 0; i < n; i++)
        e->slot_len[slots[i]] = pos[i] + 1;
    e->last_B = n;
    slots_changed(e);
    return 0;
}

/* ---- training ---- */

static int train_step(struct engine *e, const int *tokens, const int *targets, int B, int T,
                      const struct tb_cuda_adamw *opt, char *err, size_t errlen)
{
    const struct tb_arch *a = &e->a;
    int N = B * T, C = a->hidden, F = a->ffn, V = a->vocab, HD = a->head_dim, L = a->layers;
    int QD = a->heads * HD, KD = a->kv_heads * HD, QKV = QD + 2 * KD;
    float eps = (float)a->norm_eps;

    if (!e->train)
        return cu_err(err, errlen, "engine for '%s' was set up without TB_CUDA_LLAMA_TRAIN",
                      a->name);
    CU_TRY(check_shape(e, B, T, err, errlen));
    CU_TRY(check_ids(tokens, (size_t)N, V, "tokens", err, errlen));
    CU_TRY(check_ids(targets, (size_t)N, V, "targets", err, errlen));
    CU_CHECK(cudaMemcpyAsync(e->tok, tokens, (size_t)N * sizeof(int), cudaMemcpyHostToDevice,
                             g_cu.stream));
    CU_CHECK(cudaMemcpyAsync(e->tgt, targets, (size_t)N * sizeof(int), cudaMemcpyHostToDevice,
                             g_cu.stream));
    /* pageable copies are staged before returning; the host arrays may change after */

    /* ---- forward and loss ---- */
    CU_LAUNCH("embed", k_embed(e->res[0], W32(e, e->off_tok), e->tok, N, C));
    CU_TRY(forward_layers(e, B, T, true, 0, err, errlen));
    CU_LAUNCH("rmsnorm_fwd",
              k_rmsnorm_fwd(e->xf, e->rstdf, e->res[L], W32(e, e->off_fnorm), N, C, eps, 1, 0));
    CU_TRY(linear(e->logits_b, false, NULL, e->xf, W16(e, e->off_head), N, C, V, "LM head", err,
                  errlen));
    CU_LAUNCH("xent", k_xent(e->logits_b, e->row_loss, e->tgt, N, V, 1.0f / (float)N));
    CU_LAUNCH("sum", k_sum(e->loss, e->row_loss, N, 1.0f / (float)N));
    e->have_loss = true;
    if (!opt)
        return 0;

    /* ---- backward ---- */
    /* the norm weights (after decay_end) get their gradients by atomic sums */
    CU_CHECK(cudaMemsetAsync(e->g + e->decay_end, 0, (e->n_params - e->decay_end) * sizeof(float),
                             g_cu.stream));
    /* LM head: written here; with tied embeddings the lookups add to it below */
    CU_TRY(
        linear_bwd_w(e->g + e->off_head, e->logits_b, e->xf, N, C, V, "LM head dW", err, errlen));
    CU_TRY(linear_bwd_x(e->dxn, true, e->logits_b, W16(e, e->off_head), N, C, V, "LM head dX", err,
                        errlen));
    CU_LAUNCH("rmsnorm_bwd", k_rmsnorm_bwd(e->dres, e->dxn, e->res[L], e->rstdf,
                                           W32(e, e->off_fnorm), N, C, false));
    CU_LAUNCH("rmsnorm_dw", k_rmsnorm_dw(e->g + e->off_fnorm, e->dxn, e->res[L], e->rstdf, N, C));
    for (int l = L - 1; l >= 0; l--) {
        const struct acts *x = &e->la[l];
        /* MLP: res[l+1] = mid + swiglu(rmsnorm(mid) Wgu^T) Wd^T */
        CU_LAUNCH("cast_bf16", k_cast_bf16(e->dres_b, e->dres, (size_t)N * C));
        CU_TRY(linear_bwd_x(e->dh, false, e->dres_b, W16(e, LW(e, l, TB_CUDA_W_DOWN)), N, F, C,
                            "down dX", err, errlen));
        CU_TRY(linear_bwd_w(e->g + LW(e, l, TB_CUDA_W_DOWN), e->dres_b, x->h, N, F, C, "down dW",
                            err, errlen));
        CU_LAUNCH("swiglu_bwd", k_swiglu_bwd(e->dgu, e->dh, x->gu, N, F));
        CU_TRY(linear_bwd_w(e->g + LW(e, l, TB_CUDA_W_GATE), e->dgu, x->xn2, N, C, 2 * F,
                            "gate|up dW", err, errlen));
        CU_TRY(linear_bwd_x(e->dxn, true, e->dgu, W16(e, LW(e, l, TB_CUDA_W_GATE)), N, C, 2 * F,
                            "gate|up dX", err, errlen));
        CU_LAUNCH("rmsnorm_bwd", k_rmsnorm_bwd(e->dres, e->dxn, e->mid[l], x->rstd2,
                                               W32(e, LW(e, l, TB_CUDA_W_MLP_NORM)), N, C, true));
        CU_LAUNCH("rmsnorm_dw", k_rmsnorm_dw(e->g + LW(e, l, TB_CUDA_W_MLP_NORM), e->dxn, e->mid[l],
                                             x->rstd2, N, C));
        /* attention: mid = res[l] + attn(rmsnorm(res[l])) Wo^T */
        CU_LAUNCH("cast_bf16", k_cast_bf16(e->dres_b, e->dres, (size_t)N * C));
        CU_TRY(linear_bwd_x(e->dy, false, e->dres_b, W16(e, LW(e, l, TB_CUDA_W_WO)), N, QD, C,
                            "output projection dX", err, errlen));
        CU_TRY(linear_bwd_w(e->g + LW(e, l, TB_CUDA_W_WO), e->dres_b, x->y, N, QD, C,
                            "output projection dW", err, errlen));
        CU_TRY(attention_bwd(e, x, e->dy, B, T, err, errlen));
        CU_LAUNCH("rope_merge_bwd", k_rope_merge_bwd(e->dqkv, e->dq, e->dk, e->dv, e->rope_cos,
                                                     e->rope_sin, N, T, a->heads, a->kv_heads, HD));
        CU_TRY(linear_bwd_w(e->g + LW(e, l, TB_CUDA_W_WQ), e->dqkv, x->xn1, N, C, QKV, "q|k|v dW",
                            err, errlen));
        CU_TRY(linear_bwd_x(e->dxn, true, e->dqkv, W16(e, LW(e, l, TB_CUDA_W_WQ)), N, C, QKV,
                            "q|k|v dX", err, errlen));
        CU_LAUNCH("rmsnorm_bwd", k_rmsnorm_bwd(e->dres, e->dxn, e->res[l], x->rstd1,
                                               W32(e, LW(e, l, TB_CUDA_W_ATTN_NORM)), N, C, true));
        CU_LAUNCH("rmsnorm_dw", k_rmsnorm_dw(e->g + LW(e, l, TB_CUDA_W_ATTN_NORM), e->dxn,
                                             e->res[l], x->rstd1, N, C));
    }
    /* token embedding: scatter-add the residual gradient's rows */
    if (!a->tied_embeddings)
        CU_CHECK(cudaMemsetAsync(e->g + e->off_tok, 0, (size_t)V * C * sizeof(float), g_cu.stream));
    CU_LAUNCH("scatter_add", k_scatter_add(e->g + e->off_tok, e->dres, e->tok, N, C));

    /* ---- AdamW on the fp32 master weights, refreshing the bf16 copy ---- */
    e->adam_t++;
    float bc1 = 1.0f - (float)pow(opt->beta1, (double)e->adam_t);
    float bc2 = 1.0f - (float)pow(opt->beta2, (double)e->adam_t);
    CU_LAUNCH("adamw",
              k_adamw(e->p, e->wb, e->g, e->m, e->v, e->n_params, e->decay_end, *opt, bc1, bc2));
    return 0;
}

/* ---- kernel test of the attention ---- */

int cu_attention_op(struct cu_bufs *b, struct tb_cuda_op_args *a, char *err, size_t errlen)
{
    struct engine e;
    struct acts x;
    size_t N = (size_t)a->B * a->T, HD = a->HD, QD = (size_t)a->NH * HD, KD = (size_t)a->NKV * HD;
    bf16 *dy;
    memset(&e, 0, sizeof e);
    memset(&x, 0, sizeof x);
    e.a.heads = a->NH;
    e.a.kv_heads = a->NKV;
    e.a.head_dim = a->HD;
    if (a->NH % a->NKV)
        return cu_err(err, errlen, "heads %d not a multiple of kv_heads %d", a->NH, a->NKV);
    CU_TRY(cu_up_bf16(b, &x.q, a->in[0], N * QD, err, errlen));
    CU_TRY(cu_up_bf16(b, &x.k, a->in[1], N * KD, err, errlen));
    CU_TRY(cu_up_bf16(b, &x.v, a->in[2], N * KD, err, errlen));
    CU_TRY(cu_buf_alloc(b, (void **)&x.lse, N * a->NH * sizeof *x.lse, err, errlen));
    CU_TRY(cu_buf_alloc(b, (void **)&x.y, N * QD * sizeof *x.y, err, errlen));
    CU_TRY(attention_fwd(&e, x.q, x.k, x.v, a->T, x.lse, x.y, a->B, a->T, err, errlen));
    if (a->op == TB_CUDA_OP_ATTENTION_FWD)
        return cu_down_bf16(b, a->out[0], x.y, N * QD, err, errlen);
    CU_TRY(cu_up_bf16(b, &dy, a->in[3], N * QD, err, errlen));
    CU_TRY(cu_buf_alloc(b, (void **)&e.delta, N * a->NH * sizeof *e.delta, err, errlen));
    CU_TRY(cu_buf_alloc(b, (void **)&e.dq, N * QD * sizeof *e.dq, err, errlen));
    CU_TRY(cu_buf_alloc(b, (void **)&e.dk, N * KD * sizeof *e.dk, err, errlen));
    CU_TRY(cu_buf_alloc(b, (void **)&e.dv, N * KD * sizeof *e.dv, err, errlen));
    CU_TRY(attention_bwd(&e, &x, dy, a->B, a->T, err, errlen));
    CU_TRY(cu_down_bf16(b, a->out[0], e.dq, N * QD, err, errlen));
    CU_TRY(cu_down_bf16(b, a->out[1], e.dk, N * KD, err, errlen));
    return cu_down_bf16(b, a->out[2], e.dv, N * KD, err, errlen);
}

/* ---- the plugin's entries ---- */

extern "C" {

int tb_cu_llama_init(void **eng, const struct tb_arch *a, const struct tb_cuda_llama_weights *w,
                     int max_batch, int max_seq, unsigned flags, char *err, size_t errlen)
{
    struct engine *e;
    *eng = NULL;
    CU_TRY(cu_ctx_init(err, errlen));
    if (max_batch < 1 || max_seq < 1)
        return cu_err(err, errlen, "capacity %d x %d: batch and sequence must be positive",
                      max_batch, max_seq);
    CU_TRY(check_layout(a, w, err, errlen));
    if ((flags & TB_CUDA_LLAMA_FP8) && (flags & TB_CUDA_LLAMA_TRAIN))
        return cu_err(err, errlen,
                      "precision fp8 is for inference: training runs bf16 (TB_CUDA_LLAMA_FP8 "
                      "with TB_CUDA_LLAMA_TRAIN)");
    e = (struct engine *)calloc(1, sizeof *e);
    if (!e)
        return cu_err(err, errlen, "out of host memory for the engine");
    if (init(e, a, w, max_batch, max_seq, flags, err, errlen) != 0) {
        cudaStreamSynchronize(g_cu.stream);
        engine_free(e);
        return -1;
    }
    *eng = e;
    return 0;
}

void tb_cu_llama_free(void *eng)
{
    cudaStreamSynchronize(g_cu.stream);
    engine_free((struct engine *)eng);
}

size_t tb_cu_llama_bytes(void *eng)
{
    return ((struct engine *)eng)->mem.bytes;
}

int tb_cu_llama_prefill(void *eng, const int *tokens, int B, int T, char *err, size_t errlen)
{
    return prefill((struct engine *)eng, tokens, B, T, err, errlen);
}

int tb_cu_llama_decode(void *eng, const int *tokens, int B, int pos, char *err, size_t errlen)
{
    return decode((struct engine *)eng, tokens, B, pos, err, errlen);
}

int tb_cu_llama_prefill_slot(void *eng, const int *tokens, int T, int slot, int *next_token,
                             char *err, size_t errlen)
{
    return prefill_slot((struct engine *)eng, tokens, T, slot, next_token, err, errlen);
}

int tb_cu_llama_decode_slots(void *eng, const int *tokens, const int *slots, const int *pos, int n,
                             int *next_tokens, char *err, size_t errlen)
{
    return decode_slots((struct engine *)eng, tokens, slots, pos, n, next_tokens, err, errlen);
}

int tb_cu_llama_train_step(void *eng, const int *tokens, const int *targets, int B, int T,
                           const struct tb_cuda_adamw *opt, char *err, size_t errlen)
{
    return train_step((struct engine *)eng, tokens, targets, B, T, opt, err, errlen);
}

int tb_cu_llama_loss(void *eng, float *loss, char *err, size_t errlen)
{
    struct engine *e = (struct engine *)eng;
    if (!e->have_loss)
        return cu_err(err, errlen, "no training step has run");
    CU_CHECK(cudaMemcpyAsync(loss, e->loss, sizeof *loss, cudaMemcpyDeviceToHost, g_cu.stream));
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    return 0;
}

int tb_cu_llama_logits(void *eng, float *out, size_t n, char *err, size_t errlen)
{
    struct engine *e = (struct engine *)eng;
    size_t have = (size_t)e->last_B * e->a.vocab;
    if (e->train || !e->have_logits)
        return cu_err(err, errlen, "no prefill or decode step has run");
    CU_CHECK(cudaMemcpyAsync(out, e->logits, (n < have ? n : have) * sizeof *out,
                             cudaMemcpyDeviceToHost, g_cu.stream));
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    return 0;
}

int tb_cu_llama_finite(void *eng, bool *finite, char *err, size_t errlen)
{
    struct engine *e = (struct engine *)eng;
    int one = 1, flag = 0;
    if (e->train) {
        float loss;
        CU_TRY(tb_cu_llama_loss(eng, &loss, err, errlen));
        *finite = isfinite(loss);
        return 0;
    }
    if (!e->have_logits)
        return cu_err(err, errlen, "no prefill or decode step has run");
    CU_CHECK(cudaMemcpyAsync(e->flag, &one, sizeof one, cudaMemcpyHostToDevice, g_cu.stream));
    CU_LAUNCH("finite", k_finite(e->flag, e->logits, (size_t)e->last_B * e->a.vocab));
    CU_CHECK(cudaMemcpyAsync(&flag, e->flag, sizeof flag, cudaMemcpyDeviceToHost, g_cu.stream));
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    *finite = flag != 0;
    return 0;
}

} /* extern "C" */
