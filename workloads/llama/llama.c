/*
 * workloads/llama/llama.c: the CPU Llama decoder engine (see llama.h): prefill, decode
 * with a KV cache, and a training step (forward, cross-entropy, full backward, AdamW),
 * fp32, row-major, every matrix product through cblas.
 *
 * Shape legend (llama.h's, plus):
 *   N   = B*T rows of activations (token positions of all sequences, b-major)
 *   G   = NH/NKV query heads per KV head (head h reads KV head h/G)
 *   QD  = NH*HD, KD = NKV*HD, QKV = QD + 2*KD (one row of the fused q|k|v projection)
 *   S   = max_seq, BM = max_batch
 *
 * Speed: the weights wq|wk|wv and w_gate|w_up sit next to each other in the parameter
 * arena, so each pair is one GEMM. Attention is two GEMMs per (sequence, head) and row
 * block, reading q, k, v in place from the fused projection (strided lda). Everything
 * else (RMSNorm, RoPE, softmax, SwiGLU, cross-entropy, AdamW) is one vectorisable pass:
 * loops run in blocks of VL floats with restrict pointers, and exp and sqrt are
 * written out (fast_expf, fast_sqrtf) because libm calls, which may set errno, keep GCC
 * from vectorising at -O2.
 *
 * RoPE pairs element i with element i + HD/2 of each head (the "rotate half" layout of
 * Hugging Face's Llama; Meta's reference pairs neighbours, which is the same model with
 * the rows of wq and wk permuted).
 */
/* The arenas use mmap's MAP_ANONYMOUS and madvise(MADV_HUGEPAGE), outside POSIX 2008:
 * with 4 KB pages the first touch of a 1 GB arena costs seconds of page faults on a
 * virtual machine; with 2 MB pages, a tenth of that. */
#define _DEFAULT_SOURCE
#include "llama.h"

#include "tb_util.h"

#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define VL        16  /* floats per vector block: one AVX-512 register, two AVX2 ones */
#define ATT_BLOCK 128 /* query rows per attention block: causal work wasted <= 1/nblocks */
#define HUGE_PAGE ((size_t)2 << 20)

/* ---- engine state ---- */

/* One layer's forward activations. With TB_LLAMA_TRAIN every layer keeps its own (the
 * backward pass reads them); otherwise all layers share one set. */
struct llama_acts {
    float *xn1;   /* [N, C] attention RMSNorm output (input of wq|wk|wv) */
    float *rstd1; /* [N] its 1/rms */
    float *qkv;   /* [N, QKV] q | k | v, q and k after RoPE */
    float *probs; /* train: [B, NH, T, T] softmax rows; else [max(ATT_BLOCK, G), S] scratch */
    float *y;     /* [N, QD] attention output (input of wo) */
    float *xn2;   /* [N, C] MLP RMSNorm output (input of w_gate|w_up) */
    float *rstd2; /* [N] */
    float *gu;    /* [N, 2F] gate | up pre-activations */
    float *h;     /* [N, F] silu(gate) * up (input of w_down) */
};

struct llama_state {
    float *act; /* owned arena: everything below but the KV cache */
    size_t act_floats;
    float *kv; /* owned arena: K then V cache, [L][BM][NKV][S][HD] each */
    size_t kv_floats;
    int *tokens, *targets; /* owned: [N] of the last forward_loss */
    struct llama_acts *la; /* owned: [L] (train) or [1] */
    float **res;           /* owned: [L+1] residual stream into layer l (res[L]: output) */
    float **mid;           /* owned: [L] residual after attention; all == res[0] unless train */
    float *rope_cos, *rope_sin; /* [S, HD/2] */
    float *xf;                  /* [N, C] final RMSNorm output (train); [BM, C] otherwise */
    float *rstdf;               /* [N] */
    float *lse;                 /* [N] log-sum-exp of each logits row (train) */
    float *scores;              /* [max(ATT_BLOCK, G), S] decode/prefill scratch */
    /* backward (train only) */
    float *dlogits;       /* [N, V] */
    float *dres;          /* [N, C] gradient of the residual stream */
    float *dxn;           /* [N, C] */
    float *dy;            /* [N, QD] */
    float *dqkv;          /* [N, QKV] */
    float *dh;            /* [N, F] */
    float *dgu;           /* [N, 2F] */
    float *dprobs;        /* [ATT_BLOCK, S] */
    int B, T;             /* shape of the last forward_loss */
    bool have_fwd;        /* saved activations match the parameters */
    int kv_len, kv_batch; /* positions and sequences the cache holds (prefill/decode) */
    int *slot_len;        /* owned: [max_batch] positions cached in each slot */
};

static struct llama_state *state(const struct tb_llama *m)
{
    return (struct llama_state *)m->priv;
}

/* Gradient (or AdamW moment) of the parameter tensor p: same offset in the other arena. */
static float *grad_of(const struct tb_llama *m, const float *p)
{
    return m->grads + (p - m->params);
}

/* ---- vectorisable scalar math ---- */

/* e^x, clamped to x in [-87, 88] (finite, normal results), relative error about 2e-7:
 * x = n ln2 + r with |r| <= ln2/2, e^r from its Taylor series to degree 7, 2^n built in
 * the exponent bits. Branch-free and call-free so that loops using it vectorise. */
static inline float fast_expf(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float t = x * 1.44269504f + 12582912.0f; /* + 1.5 * 2^23 rounds x/ln2 to an integer */
    float n = t - 12582912.0f;
    float r = x - n * 0.693145751953125f - n * 1.4286068202862268e-06f; /* ln2 in 2 parts */
    float p = 1.0f / 5040; /* e^r = sum of r^k / k! for k <= 7, Horner's scheme */
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 1.0f / 2;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t ti;
    memcpy(&ti, &t, sizeof ti);
    uint32_t sb = (uint32_t)(ti - 0x4B400000 + 127) << 23; /* n sits in t's low bits */
    float s;
    memcpy(&s, &sb, sizeof s);
    return p * s;
}

/* sqrt(x) for x >= 0 (0 gives 0): 1/sqrt(x) from the exponent-halving first guess with
 * the constant 0x5f3759df, three Newton steps (full float precision for normal x), times
 * x. Vectorises where sqrtf (errno) does not. */
static inline float fast_sqrtf(float x)
{
    uint32_t i;
    memcpy(&i, &x, sizeof i);
    i = 0x5f3759dfu - (i >> 1);
    float y;
    memcpy(&y, &i, sizeof y);
    y = y * (1.5f - 0.5f * x * y * y);
    y = y * (1.5f - 0.5f * x * y * y);
    y = y * (1.5f - 0.5f * x * y * y);
    return x * y;
}

/* ---- random weights ---- */

/* splitmix64's output function: a bijective 64-bit mix. Counter-based use (mix of
 * key + i * golden) makes element i of a tensor independent of the others, so tensors
 * fill in vector blocks and in any order. */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* 2*VL normal draws (mean 0, standard deviation sd) from counters ctr .. ctr+VL-1 of key:
 * Box-Muller, r = sqrt(-2 ln u1) and angle 2 pi u2, with ln from
 * ln m = 2 atanh((m-1)/(m+1)) (odd series to s^9, |s| <= 0.172) and sin/cos from their
 * Taylor series on [-pi/4, pi/4) plus a quadrant taken from two more random bits. */
static void normal_block(float *restrict out, uint64_t key, uint64_t ctr, float sd)
{
    float r[VL], c[VL], s[VL];
    for (int j = 0; j < VL; j++) {
        uint64_t z = mix64(key + (ctr + (uint64_t)j + 1) * 0x9e3779b97f4a7c15ULL);
        float u1 = (float)((uint32_t)(z >> 40) + 1u) * (1.0f / 16777216.0f); /* (0, 1] */
        uint32_t bits;
        memcpy(&bits, &u1, sizeof bits);
        int32_t e = (int32_t)(bits >> 23) - 127;
        uint32_t mb = (bits & 0x007fffffu) | 0x3f800000u;
        float mant;
        memcpy(&mant, &mb, sizeof mant);
        if (mant > 1.41421356f) {
            mant *= 0.5f;
            e += 1;
        }
        float t = (mant - 1.0f) / (mant + 1.0f), t2 = t * t;
        float at = 1.0f / 9; /* atanh(t) / t = sum of t^2k / (2k + 1) for k <= 4 */
        at = at * t2 + 1.0f / 7;
        at = at * t2 + 1.0f / 5;
        at = at * t2 + 1.0f / 3;
        at = at * t2 + 1.0f;
        float ln = 2.0f * t * at + (float)e * 0.69314718f;
        r[j] = sd * fast_sqrtf(-2.0f * ln);
        uint32_t q = (uint32_t)(z >> 32) & 3u; /* quadrant */
        float f = ((float)((uint32_t)z & 0xffffffu) * (1.0f / 16777216.0f) - 0.5f) * 1.57079633f;
        float f2 = f * f;
        float sn = 1.0f / 362880, cs = 1.0f / 3628800; /* Taylor series to f^9, f^10 */
        sn = sn * -f2 + 1.0f / 5040;
        sn = sn * -f2 + 1.0f / 120;
        sn = sn * -f2 + 1.0f / 6;
        sn = (sn * -f2 + 1.0f) * f;
        cs = cs * -f2 + 1.0f / 40320;
        cs = cs * -f2 + 1.0f / 720;
        cs = cs * -f2 + 1.0f / 24;
        cs = cs * -f2 + 1.0f / 2;
        cs = cs * -f2 + 1.0f;
        float x = (q & 1u) ? -sn : cs, y = (q & 1u) ? cs : sn; /* rotate by q quarter turns */
        c[j] = (q & 2u) ? -x : x;
        s[j] = (q & 2u) ? -y : y;
    }
    for (int j = 0; j < VL; j++) {
        out[j] = r[j] * c[j];
        out[VL + j] = r[j] * s[j];
    }
}

/* Fill p[0..n) with N(0, sd^2) draws of the stream (seed, id). */
static void fill_normal(float *p, size_t n, uint64_t seed, uint64_t id, float sd)
{
    uint64_t key = mix64(seed ^ mix64(0x6c6c616d61ULL + id)); /* per-tensor stream */
    size_t i = 0;
    uint64_t ctr = 0;
    for (; i + 2 * VL <= n; i += 2 * VL, ctr += VL)
        normal_block(p + i, key, ctr, sd);
    if (i < n) {
        float tail[2 * VL];
        normal_block(tail, key, ctr, sd);
        memcpy(p + i, tail, (n - i) * sizeof *p);
    }
}

static void fill_value(float *p, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        p[i] = v;
}

/* ---- arenas ---- */

/* Saturating size arithmetic: an impossible request becomes SIZE_MAX, which the
 * allocator refuses with the byte count in the message. */
static size_t sat_mul(size_t a, size_t b)
{
    return (b != 0 && a > SIZE_MAX / b) ? SIZE_MAX : a * b;
}

static size_t sat_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* Bump allocator over a float arena: run once with base NULL to size it, then again to
 * hand out the pointers. Every block starts on a 64-byte boundary. */
struct bump {
    float *base;
    size_t used; /* floats */
};

static float *bump_take(struct bump *b, size_t n)
{
    float *p = (b->base && b->used != SIZE_MAX) ? b->base + b->used : NULL;
    b->used = sat_add(b->used, sat_mul((sat_add(n, VL - 1)) / VL, VL));
    return p;
}

/* n zeroed floats, 2 MB-aligned and advised to use huge pages, mapped lazily (the
 * kernel zeroes a page when first touched, so nothing is written here). */
static float *arena_alloc(size_t n, const char *what, char *err, size_t errlen)
{
    size_t bytes = sat_mul(n, sizeof(float));
    size_t len = sat_add(sat_mul(sat_add(bytes, HUGE_PAGE - 1) / HUGE_PAGE, HUGE_PAGE), HUGE_PAGE);
    if (bytes == SIZE_MAX || len == SIZE_MAX) {
        tb_err(err, errlen, "cannot allocate the %s: size overflows", what);
        return NULL;
    }
    char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        tb_err(err, errlen, "cannot allocate %zu bytes for the %s", bytes, what);
        return NULL;
    }
    /* trim to a 2 MB boundary: one spare huge page was mapped for the slack */
    size_t lead = (HUGE_PAGE - (uintptr_t)raw % HUGE_PAGE) % HUGE_PAGE;
    if (lead)
        munmap(raw, lead);
    munmap(raw + lead + (len - HUGE_PAGE), HUGE_PAGE - lead);
#ifdef MADV_HUGEPAGE
    madvise(raw + lead, len - HUGE_PAGE, MADV_HUGEPAGE); /* advice only: failure is harmless */
#endif
    void *base = raw + lead;
    return base;
}

static void arena_free(float *p, size_t n)
{
    if (p)
        munmap(p, sat_mul(sat_add(n * sizeof(float), HUGE_PAGE - 1) / HUGE_PAGE, HUGE_PAGE));
}

/* Lay out (base NULL: count) the activation arena. */
static size_t layout_acts(struct llama_state *st, const struct tb_arch *a, int maxB, int maxS,
                          bool train, float *base)
{
    struct bump b = {base, 0};
    size_t L = (size_t)a->layers, C = (size_t)a->hidden, HD = (size_t)a->head_dim;
    size_t NH = (size_t)a->heads, G = (size_t)(a->heads / a->kv_heads);
    size_t QD = NH * HD, QKV = QD + 2 * (size_t)a->kv_heads * HD, F = (size_t)a->ffn;
    size_t V = (size_t)a->vocab, S = (size_t)maxS, N = sat_mul((size_t)maxB, S);
    size_t nla = train ? L : 1, blk = G > ATT_BLOCK ? G : ATT_BLOCK;

    st->rope_cos = bump_take(&b, S * HD / 2);
    st->rope_sin = bump_take(&b, S * HD / 2);
    for (size_t l = 0; l <= L; l++) {
        float *r = (train || l == 0) ? bump_take(&b, sat_mul(N, C)) : st->res[0];
        st->res[l] = r;
        if (l < L)
            st->mid[l] = train ? bump_take(&b, sat_mul(N, C)) : st->res[0];
    }
    for (size_t l = 0; l < nla; l++) {
        struct llama_acts *x = &st->la[l];
        x->xn1 = bump_take(&b, sat_mul(N, C));
        x->rstd1 = bump_take(&b, N);
        x->qkv = bump_take(&b, sat_mul(N, QKV));
        x->probs = train ? bump_take(&b, sat_mul(sat_mul(N, NH), S)) : NULL;
        x->y = bump_take(&b, sat_mul(N, QD));
        x->xn2 = bump_take(&b, sat_mul(N, C));
        x->rstd2 = bump_take(&b, N);
        x->gu = bump_take(&b, sat_mul(N, 2 * F));
        x->h = bump_take(&b, sat_mul(N, F));
    }
    st->scores = bump_take(&b, sat_mul(blk, S));
    st->xf = bump_take(&b, sat_mul(train ? N : (size_t)maxB, C));
    st->rstdf = bump_take(&b, N);
    st->lse = bump_take(&b, N);
    if (train) {
        st->dlogits = bump_take(&b, sat_mul(N, V));
        st->dres = bump_take(&b, sat_mul(N, C));
        st->dxn = bump_take(&b, sat_mul(N, C));
        st->dy = bump_take(&b, sat_mul(N, QD));
        st->dqkv = bump_take(&b, sat_mul(N, QKV));
        st->dh = bump_take(&b, sat_mul(N, F));
        st->dgu = bump_take(&b, sat_mul(N, 2 * F));
        st->dprobs = bump_take(&b, sat_mul(ATT_BLOCK, S));
    }
    return b.used;
}

/* Point the parameter tensors into the arena (base NULL: count). The norm weights come
 * last, so weight decay is one range [0, decay_end). */
static size_t layout_params(struct tb_llama *m, float *base, size_t *decay_end)
{
    const struct tb_arch *a = m->arch;
    size_t C = (size_t)a->hidden, HD = (size_t)a->head_dim, F = (size_t)a->ffn;
    size_t QD = (size_t)a->heads * HD, KD = (size_t)a->kv_heads * HD, V = (size_t)a->vocab;
    size_t off = 0;
#define TAKE(ptr, n) ((ptr) = base ? base + off : NULL, off = sat_add(off, (n)))
    TAKE(m->tok_emb, sat_mul(V, C));
    for (int l = 0; l < a->layers; l++) {
        struct tb_llama_layer *w = &m->layers[l];
        TAKE(w->wq, QD * C); /* wq, wk, wv adjacent: one [QKV, C] matrix */
        TAKE(w->wk, KD * C);
        TAKE(w->wv, KD * C);
        TAKE(w->wo, C * QD);
        TAKE(w->w_gate, F * C); /* w_gate, w_up adjacent: one [2F, C] matrix */
        TAKE(w->w_up, F * C);
        TAKE(w->w_down, C * F);
    }
    if (a->tied_embeddings)
        m->lm_head = m->tok_emb;
    else
        TAKE(m->lm_head, sat_mul(V, C));
    *decay_end = off;
    for (int l = 0; l < a->layers; l++) {
        TAKE(m->layers[l].attn_norm, C);
        TAKE(m->layers[l].mlp_norm, C);
    }
    TAKE(m->final_norm, C);
#undef TAKE
    return off;
}

/* Llama 3.1's RoPE frequency scaling ("llama3"): wavelengths above
 * original_context/low_freq_factor are stretched by factor, those below
 * original_context/high_freq_factor kept, and a linear blend in 1/wavelength between. */
static double rope_scaled_freq(const struct tb_arch *a, double freq)
{
    if (a->rope_scale_factor <= 0)
        return freq;
    double octx = a->rope_original_context, lo = a->rope_low_freq_factor;
    double hi = a->rope_high_freq_factor, wavelen = 2.0 * M_PI / freq;
    if (wavelen < octx / hi)
        return freq;
    if (wavelen > octx / lo)
        return freq / a->rope_scale_factor;
    double smooth = (octx / wavelen - lo) / (hi - lo);
    return (1.0 - smooth) * freq / a->rope_scale_factor + smooth * freq;
}

void tb_llama_rope_table(const struct tb_arch *a, int max_seq, float *cos_out, float *sin_out)
{
    int half = a->head_dim / 2;
    for (int i = 0; i < half; i++) {
        double freq = rope_scaled_freq(a, pow(a->rope_theta, -2.0 * i / a->head_dim));
        for (int pos = 0; pos < max_seq; pos++) {
            cos_out[(size_t)pos * half + i] = (float)cos(pos * freq);
            sin_out[(size_t)pos * half + i] = (float)sin(pos * freq);
        }
    }
}

static int check_arch(const struct tb_arch *a, int maxB, int maxS, char *err, size_t errlen)
{
    if (a->layers < 1 || a->hidden < 1 || a->heads < 1 || a->kv_heads < 1 || a->head_dim < 2 ||
        a->ffn < 1 || a->vocab < 1)
        return tb_err(err, errlen, "model '%s': dimensions must be positive", a->name);
    if (a->experts > 0)
        return tb_err(err, errlen,
                      "model '%s': a mixture of experts (%d experts) is not run by the CPU "
                      "engine; its performance is predicted (trnbench predict)",
                      a->name, a->experts);
    if (a->heads % a->kv_heads != 0)
        return tb_err(err, errlen, "model '%s': heads %d not a multiple of kv_heads %d", a->name,
                      a->heads, a->kv_heads);
    if (a->head_dim % 2 != 0)
        return tb_err(err, errlen, "model '%s': head_dim %d is odd (RoPE rotates pairs)", a->name,
                      a->head_dim);
    if (a->rope_theta <= 1.0)
        return tb_err(err, errlen, "model '%s': rope_theta %g must exceed 1", a->name,
                      a->rope_theta);
    if (a->rope_scale_factor > 0 && (a->rope_original_context < 1 || a->rope_low_freq_factor <= 0 ||
                                     a->rope_high_freq_factor <= a->rope_low_freq_factor))
        return tb_err(err, errlen, "model '%s': bad llama3 RoPE scaling parameters", a->name);
    if (maxB < 1 || maxS < 1)
        return tb_err(err, errlen, "capacity %d x %d: batch and sequence must be positive", maxB,
                      maxS);
    return 0;
}

/* ---- lifecycle ---- */

int tb_llama_init(struct tb_llama *m, const struct tb_arch *arch, int max_batch, int max_seq,
                  unsigned flags, uint64_t seed, char *err, size_t errlen)
{
    struct llama_state *st = NULL;
    bool train = (flags & TB_LLAMA_TRAIN) != 0;
    size_t decay_end, nla;
    int rc = -1;

    memset(m, 0, sizeof *m);
    if (check_arch(arch, max_batch, max_seq, err, errlen) != 0)
        return -1;
    m->arch = arch;
    m->max_batch = max_batch;
    m->max_seq = max_seq;
    m->flags = flags;

    st = calloc(1, sizeof *st);
    m->layers = calloc((size_t)arch->layers, sizeof *m->layers);
    if (!st || !m->layers) {
        tb_err(err, errlen, "cannot allocate the engine state");
        goto out;
    }
    m->priv = st;
    nla = train ? (size_t)arch->layers : 1;
    st->la = calloc(nla, sizeof *st->la);
    st->res = calloc((size_t)arch->layers + 1, sizeof *st->res);
    st->mid = calloc((size_t)arch->layers, sizeof *st->mid);
    st->slot_len = calloc((size_t)max_batch, sizeof *st->slot_len);
    if (!st->la || !st->res || !st->mid || !st->slot_len) {
        tb_err(err, errlen, "cannot allocate the engine state");
        goto out;
    }

    /* parameters */
    m->n_params = layout_params(m, NULL, &decay_end);
    if (!(m->params = arena_alloc(m->n_params, "parameters", err, errlen)))
        goto out;
    layout_params(m, m->params, &decay_end);
    {
        float sd = 0.02f;
        size_t C = (size_t)arch->hidden, V = (size_t)arch->vocab;
        size_t F = (size_t)arch->ffn, HD = (size_t)arch->head_dim;
        size_t QD = (size_t)arch->heads * HD, KD = (size_t)arch->kv_heads * HD;
        fill_normal(m->tok_emb, V * C, seed, 0, sd);
        if (!arch->tied_embeddings)
            fill_normal(m->lm_head, V * C, seed, 1, sd);
        for (int l = 0; l < arch->layers; l++) {
            struct tb_llama_layer *w = &m->layers[l];
            uint64_t id = 16 + 16 * (uint64_t)l;
            fill_normal(w->wq, QD * C, seed, id + 0, sd);
            fill_normal(w->wk, KD * C, seed, id + 1, sd);
            fill_normal(w->wv, KD * C, seed, id + 2, sd);
            fill_normal(w->wo, C * QD, seed, id + 3, sd);
            fill_normal(w->w_gate, F * C, seed, id + 4, sd);
            fill_normal(w->w_up, F * C, seed, id + 5, sd);
            fill_normal(w->w_down, C * F, seed, id + 6, sd);
        }
        fill_value(m->params + decay_end, m->n_params - decay_end, 1.0f);
    }

    /* gradients and AdamW moments */
    if (train) {
        if (!(m->grads = arena_alloc(m->n_params, "gradients", err, errlen)) ||
            !(m->adam_m = arena_alloc(m->n_params, "AdamW first moments", err, errlen)) ||
            !(m->adam_v = arena_alloc(m->n_params, "AdamW second moments", err, errlen)))
            goto out; /* all three start at zero */
    }

    /* activations and logits */
    st->act_floats = layout_acts(st, arch, max_batch, max_seq, train, NULL);
    {
        size_t nlog =
            sat_mul(train ? sat_mul((size_t)max_batch, (size_t)max_seq) : (size_t)max_batch,
                    (size_t)arch->vocab);
        size_t logits_at = st->act_floats;
        st->act_floats = sat_add(st->act_floats, nlog);
        if (!(st->act = arena_alloc(st->act_floats, "activations", err, errlen)))
            goto out;
        layout_acts(st, arch, max_batch, max_seq, train, st->act);
        m->logits = st->act + logits_at;
    }
    if (!train) {
        st->la[0].probs = st->scores; /* prefill attention reuses one block of scratch */
    }
    tb_llama_rope_table(arch, max_seq, st->rope_cos, st->rope_sin);

    /* KV cache */
    st->kv_floats = sat_mul(sat_mul(sat_mul(2 * (size_t)arch->layers, (size_t)max_batch),
                                    sat_mul((size_t)arch->kv_heads, (size_t)max_seq)),
                            (size_t)arch->head_dim);
    if (!(st->kv = arena_alloc(st->kv_floats, "KV cache", err, errlen)))
        goto out;

    if (train) {
        size_t N = (size_t)max_batch * (size_t)max_seq;
        st->tokens = calloc(N, sizeof *st->tokens);
        st->targets = calloc(N, sizeof *st->targets);
        if (!st->tokens || !st->targets) {
            tb_err(err, errlen, "cannot allocate %zu token ids", 2 * N);
            goto out;
        }
    }
    rc = 0;
out:
    if (rc != 0)
        tb_llama_release(m);
    return rc;
}

void tb_llama_release(struct tb_llama *m)
{
    struct llama_state *st = state(m);
    if (st) {
        arena_free(st->act, st->act_floats);
        arena_free(st->kv, st->kv_floats);
        free(st->tokens);
        free(st->targets);
        free(st->la);
        free(st->res);
        free(st->mid);
        free(st->slot_len);
        free(st);
    }
    arena_free(m->params, m->n_params);
    arena_free(m->grads, m->n_params);
    arena_free(m->adam_m, m->n_params);
    arena_free(m->adam_v, m->n_params);
    free(m->layers);
    memset(m, 0, sizeof *m);
}

size_t tb_llama_bytes(const struct tb_llama *m)
{
    const struct llama_state *st = state(m);
    size_t n = m->n_params * ((m->flags & TB_LLAMA_TRAIN) ? 4 : 1);
    if (st)
        n += st->act_floats + st->kv_floats;
    return n * sizeof(float);
}

/* ---- kernels ---- */

/* out = x W^T for N rows, plus beta * out: x [N, in] (row stride ldx), W [out, in],
 * out [N, outd] (row stride ldo). One row goes through sgemv. */
static void linear(float *out, int ldo, const float *x, int ldx, const float *w, int N, int in,
                   int outd, float beta)
{
    if (N == 1)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, outd, in, 1.0f, w, in, x, 1, beta, out, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, outd, in, 1.0f, x, ldx, w, in, beta,
                    out, ldo);
}

/* Backward of linear: dx [N, in] (+)= dout [N, outd] W, and dW [outd, in] = dout^T x. */
static void linear_bwd_x(float *dx, const float *dout, const float *w, int N, int in, int outd,
                         float beta)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, in, outd, 1.0f, dout, outd, w, in,
                beta, dx, in);
}

static void linear_bwd_w(float *dw, const float *dout, const float *x, int N, int in, int outd)
{
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, outd, in, N, 1.0f, dout, outd, x, in, 0.0f,
                dw, in);
}

static float sum_squares(const float *restrict x, int n)
{
    float acc[VL] = {0}, s = 0;
    int i = 0;
    for (; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            acc[j] += x[i + j] * x[i + j];
    for (int j = 0; j < VL; j++)
        s += acc[j];
    for (; i < n; i++)
        s += x[i] * x[i];
    return s;
}

/* out[n] = x[n] / rms(x[n]) * w for N rows of C; rstd[n] = 1/rms. */
static void rmsnorm_fwd(float *restrict out, float *restrict rstd, const float *restrict x,
                        const float *restrict w, int N, int C, float eps)
{
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * C;
        float *o = out + (size_t)n * C;
        float r = 1.0f / sqrtf(sum_squares(xr, C) / (float)C + eps);
        rstd[n] = r;
        int c = 0;
        for (; c + VL <= C; c += VL)
            for (int j = 0; j < VL; j++)
                o[c + j] = xr[c + j] * r * w[c + j];
        for (; c < C; c++)
            o[c] = xr[c] * r * w[c];
    }
}

/* Backward of rmsnorm_fwd given dy: dx = (or +=, when accumulate) the input gradient,
 * dw = the weight gradient (written). With g = dy * w:
 * dx = rstd * g - rstd^3 * x * sum(g * x) / C, dw = sum over rows of dy * x * rstd. */
static void rmsnorm_bwd(float *restrict dx, float *restrict dw, const float *restrict dy,
                        const float *restrict x, const float *restrict rstd,
                        const float *restrict w, int N, int C, bool accumulate)
{
    memset(dw, 0, (size_t)C * sizeof *dw);
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * C, *dyr = dy + (size_t)n * C;
        float *dxr = dx + (size_t)n * C;
        float r = rstd[n], acc[VL] = {0}, dot = 0;
        int c = 0;
        for (; c + VL <= C; c += VL)
            for (int j = 0; j < VL; j++)
                acc[j] += dyr[c + j] * w[c + j] * xr[c + j];
        for (int j = 0; j < VL; j++)
            dot += acc[j];
        for (; c < C; c++)
            dot += dyr[c] * w[c] * xr[c];
        float k = r * r * r * dot / (float)C;
        if (!accumulate)
            memset(dxr, 0, (size_t)C * sizeof *dxr);
        for (c = 0; c + VL <= C; c += VL)
            for (int j = 0; j < VL; j++) {
                dxr[c + j] += r * dyr[c + j] * w[c + j] - k * xr[c + j];
                dw[c + j] += dyr[c + j] * xr[c + j] * r;
            }
        for (; c < C; c++) {
            dxr[c] += r * dyr[c] * w[c] - k * xr[c];
            dw[c] += dyr[c] * xr[c] * r;
        }
    }
}

/* Rotate the pairs (x1[i], x2[i]) by the angles whose cos and sin are given; sign -1
 * rotates backwards (the transpose, for the backward pass). */
static void rotate_pairs(float *restrict x1, float *restrict x2, const float *restrict cs,
                         const float *restrict sn, int half, float sign)
{
    int i = 0;
    for (; i + VL <= half; i += VL)
        for (int j = 0; j < VL; j++) {
            float a = x1[i + j], b = x2[i + j], c = cs[i + j], s = sign * sn[i + j];
            x1[i + j] = a * c - b * s;
            x2[i + j] = a * s + b * c;
        }
    for (; i < half; i++) {
        float a = x1[i], b = x2[i], c = cs[i], s = sign * sn[i];
        x1[i] = a * c - b * s;
        x2[i] = a * s + b * c;
    }
}

/* RoPE on the q and k heads (the first NH + NKV heads of each row of x, row stride ld):
 * row n of the N rows is at position pos0 + n % T (T = 0: every row at pos0). */
static void rope(const struct llama_state *st, const struct tb_arch *a, float *x, int ld, int N,
                 int T, int pos0, float sign)
{
    int HD = a->head_dim, half = HD / 2, nheads = a->heads + a->kv_heads;
    for (int n = 0; n < N; n++) {
        int pos = pos0 + (T > 0 ? n % T : 0);
        const float *cs = st->rope_cos + (size_t)pos * half,
                    *sn = st->rope_sin + (size_t)pos * half;
        float *row = x + (size_t)n * ld;
        for (int h = 0; h < nheads; h++)
            rotate_pairs(row + h * HD, row + h * HD + half, cs, sn, half, sign);
    }
}

/* In-place softmax of row[0..nv); row[nv..n) set to 0 (the causal mask). */
static void softmax_row(float *restrict row, int nv, int n)
{
    float acc[VL], mx = -INFINITY, sum = 0;
    int i = 0;
    for (int j = 0; j < VL; j++)
        acc[j] = -INFINITY;
    for (; i + VL <= nv; i += VL)
        for (int j = 0; j < VL; j++)
            acc[j] = row[i + j] > acc[j] ? row[i + j] : acc[j];
    for (int j = 0; j < VL; j++)
        mx = acc[j] > mx ? acc[j] : mx;
    for (; i < nv; i++)
        mx = row[i] > mx ? row[i] : mx;
    for (int j = 0; j < VL; j++)
        acc[j] = 0;
    for (i = 0; i + VL <= nv; i += VL)
        for (int j = 0; j < VL; j++) {
            float e = fast_expf(row[i + j] - mx);
            row[i + j] = e;
            acc[j] += e;
        }
    for (int j = 0; j < VL; j++)
        sum += acc[j];
    for (; i < nv; i++) {
        row[i] = fast_expf(row[i] - mx);
        sum += row[i];
    }
    float inv = 1.0f / sum;
    for (i = 0; i + VL <= nv; i += VL)
        for (int j = 0; j < VL; j++)
            row[i + j] *= inv;
    for (; i < nv; i++)
        row[i] *= inv;
    if (n > nv)
        memset(row + nv, 0, (size_t)(n - nv) * sizeof *row);
}

/* Backward of softmax_row scaled: ds = scale * p * (dp - sum(p * dp)) over [0, nv), zero
 * beyond up to n. dp is overwritten with ds. */
static void softmax_row_bwd(float *restrict dp, const float *restrict p, int nv, int n, float scale)
{
    float acc[VL] = {0}, dot = 0;
    int i = 0;
    for (; i + VL <= nv; i += VL)
        for (int j = 0; j < VL; j++)
            acc[j] += p[i + j] * dp[i + j];
    for (int j = 0; j < VL; j++)
        dot += acc[j];
    for (; i < nv; i++)
        dot += p[i] * dp[i];
    for (i = 0; i + VL <= nv; i += VL)
        for (int j = 0; j < VL; j++)
            dp[i + j] = scale * p[i + j] * (dp[i + j] - dot);
    for (; i < nv; i++)
        dp[i] = scale * p[i] * (dp[i] - dot);
    if (n > nv)
        memset(dp + nv, 0, (size_t)(n - nv) * sizeof *dp);
}

/* One row of SwiGLU: o = silu(g) * u = g / (1 + e^-g) * u. */
static void swiglu_row(float *restrict o, const float *restrict g, const float *restrict u, int F)
{
    int i = 0;
    for (; i + VL <= F; i += VL)
        for (int j = 0; j < VL; j++) {
            float x = g[i + j];
            o[i + j] = x / (1.0f + fast_expf(-x)) * u[i + j];
        }
    for (; i < F; i++)
        o[i] = g[i] / (1.0f + fast_expf(-g[i])) * u[i];
}

/* SwiGLU: h = silu(g) * u for N rows of gu = [g | u] (2F wide), h [N, F]. */
static void swiglu_fwd(float *h, const float *gu, int N, int F)
{
    for (int n = 0; n < N; n++) {
        const float *g = gu + (size_t)n * 2 * F;
        swiglu_row(h + (size_t)n * F, g, g + F, F);
    }
}

/* One row of the SwiGLU backward: with s = sigmoid(g), dg = dh * u * s * (1 + g (1 - s))
 * and du = dh * g * s. */
static void swiglu_bwd_row(float *restrict dg, float *restrict du, const float *restrict d,
                           const float *restrict g, const float *restrict u, int F)
{
    int i = 0;
    for (; i + VL <= F; i += VL)
        for (int j = 0; j < VL; j++) {
            float x = g[i + j], s = 1.0f / (1.0f + fast_expf(-x));
            dg[i + j] = d[i + j] * u[i + j] * s * (1.0f + x * (1.0f - s));
            du[i + j] = d[i + j] * x * s;
        }
    for (; i < F; i++) {
        float x = g[i], s = 1.0f / (1.0f + fast_expf(-x));
        dg[i] = d[i] * u[i] * s * (1.0f + x * (1.0f - s));
        du[i] = d[i] * x * s;
    }
}

/* Backward of swiglu_fwd: dh [N, F] in, dgu = [dg | du] [N, 2F] out. */
static void swiglu_bwd(float *dgu, const float *dh, const float *gu, int N, int F)
{
    for (int n = 0; n < N; n++) {
        const float *g = gu + (size_t)n * 2 * F;
        float *dg = dgu + (size_t)n * 2 * F;
        swiglu_bwd_row(dg, dg + F, dh + (size_t)n * F, g, g + F, F);
    }
}

/* Row max and sum of e^(x - max): the log-sum-exp is max + log(sum). */
static float logsumexp_row(const float *restrict row, int n)
{
    float acc[VL], mx = -INFINITY, sum = 0;
    int i = 0;
    for (int j = 0; j < VL; j++)
        acc[j] = -INFINITY;
    for (; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            acc[j] = row[i + j] > acc[j] ? row[i + j] : acc[j];
    for (int j = 0; j < VL; j++)
        mx = acc[j] > mx ? acc[j] : mx;
    for (; i < n; i++)
        mx = row[i] > mx ? row[i] : mx;
    for (int j = 0; j < VL; j++)
        acc[j] = 0;
    for (i = 0; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            acc[j] += fast_expf(row[i + j] - mx);
    for (int j = 0; j < VL; j++)
        sum += acc[j];
    for (; i < n; i++)
        sum += fast_expf(row[i] - mx);
    return mx + logf(sum);
}

/* d = e^(row - lse) * scale: softmax of a logits row, scaled. */
static void softmax_scaled_row(float *restrict d, const float *restrict row, float lse, float scale,
                               int n)
{
    int i = 0;
    for (; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            d[i + j] = fast_expf(row[i + j] - lse) * scale;
    for (; i < n; i++)
        d[i] = fast_expf(row[i] - lse) * scale;
}

static void add_row(float *restrict dst, const float *restrict src, int n)
{
    int i = 0;
    for (; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            dst[i + j] += src[i + j];
    for (; i < n; i++)
        dst[i] += src[i];
}

/* Causal self-attention of B sequences of T tokens. q, k, v are read in place from
 * qkv [N, QKV] (after RoPE); y [N, QD] gets each head's output in its columns. Per
 * (sequence, head) and block of ATT_BLOCK query rows [r0, r1): S = scale * Q K^T over
 * keys [0, r1), softmax with the causal mask, Y = P V: two GEMMs. keep: probs holds
 * [B, NH, T, T] for the backward pass; else probs is one [ATT_BLOCK, T] scratch. */
static void attention_fwd(const struct tb_arch *a, const float *qkv, float *y, float *probs,
                          bool keep, int B, int T)
{
    int HD = a->head_dim, NH = a->heads, G = a->heads / a->kv_heads;
    int QD = NH * HD, KD = a->kv_heads * HD, QKV = QD + 2 * KD;
    float scale = 1.0f / sqrtf((float)HD);
    for (int b = 0; b < B; b++) {
        const float *seq = qkv + (size_t)b * T * QKV;
        for (int h = 0; h < NH; h++) {
            const float *q = seq + h * HD, *k = seq + QD + (h / G) * HD, *v = k + KD;
            float *o = y + (size_t)b * T * QD + h * HD;
            float *p = keep ? probs + ((size_t)b * NH + h) * T * T : probs;
            for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
                int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, mr = r1 - r0;
                float *pb = keep ? p + (size_t)r0 * T : p;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mr, r1, HD, scale,
                            q + (size_t)r0 * QKV, QKV, k, QKV, 0.0f, pb, T);
                for (int t = r0; t < r1; t++)
                    softmax_row(pb + (size_t)(t - r0) * T, t + 1, r1);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mr, HD, r1, 1.0f, pb, T, v,
                            QKV, 0.0f, o + (size_t)r0 * QD, QD);
            }
        }
    }
}

/* Backward of attention_fwd (keep mode): dy [N, QD] in, dqkv [N, QKV] out (q, k and v
 * columns; must be zeroed by the caller, k and v accumulate over the G heads sharing
 * them). Per block: dP = dY V^T, dV += P^T dY, dS = softmax backward, dQ = dS K,
 * dK += dS^T Q. */
static void attention_bwd(const struct tb_arch *a, const float *qkv, const float *probs,
                          const float *dy, float *dqkv, float *dprobs, int B, int T)
{
    int HD = a->head_dim, NH = a->heads, G = a->heads / a->kv_heads;
    int QD = NH * HD, KD = a->kv_heads * HD, QKV = QD + 2 * KD;
    float scale = 1.0f / sqrtf((float)HD);
    for (int b = 0; b < B; b++) {
        const float *seq = qkv + (size_t)b * T * QKV;
        float *dseq = dqkv + (size_t)b * T * QKV;
        for (int h = 0; h < NH; h++) {
            const float *q = seq + h * HD, *k = seq + QD + (h / G) * HD, *v = k + KD;
            float *dq = dseq + h * HD, *dk = dseq + QD + (h / G) * HD, *dv = dk + KD;
            const float *p = probs + ((size_t)b * NH + h) * T * T;
            const float *dout = dy + (size_t)b * T * QD + h * HD;
            for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
                int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, mr = r1 - r0;
                const float *pb = p + (size_t)r0 * T, *db = dout + (size_t)r0 * QD;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mr, r1, HD, 1.0f, db, QD, v,
                            QKV, 0.0f, dprobs, T);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r1, HD, mr, 1.0f, pb, T, db,
                            QD, 1.0f, dv, QKV);
                for (int t = r0; t < r1; t++)
                    softmax_row_bwd(dprobs + (size_t)(t - r0) * T, pb + (size_t)(t - r0) * T, t + 1,
                                    r1, scale);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mr, HD, r1, 1.0f, dprobs, T,
                            k, QKV, 0.0f, dq + (size_t)r0 * QKV, QKV);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r1, HD, mr, 1.0f, dprobs, T,
                            q + (size_t)r0 * QKV, QKV, 1.0f, dk, QKV);
            }
        }
    }
}

/* KV cache slot of (layer, sequence, KV head): [S, HD]; V follows all of K. */
static float *kv_at(const struct tb_llama *m, int v, int l, int b, int kvh)
{
    const struct llama_state *st = state(m);
    size_t S = (size_t)m->max_seq, HD = (size_t)m->arch->head_dim;
    size_t slot = ((size_t)l * m->max_batch + (size_t)b) * m->arch->kv_heads + (size_t)kvh;
    return st->kv + (size_t)v * (st->kv_floats / 2) + slot * S * HD;
}

/* Copy the k and v of rows [0, B*T) (sequence b in cache slot slot0 + b, positions
 * pos0 + t) into the cache. */
static void kv_store(struct tb_llama *m, int l, const float *qkv, int B, int T, int pos0, int slot0)
{
    const struct tb_arch *a = m->arch;
    int HD = a->head_dim, QD = a->heads * HD, KD = a->kv_heads * HD, QKV = QD + 2 * KD;
    for (int b = 0; b < B; b++)
        for (int kvh = 0; kvh < a->kv_heads; kvh++) {
            float *kc = kv_at(m, 0, l, slot0 + b, kvh) + (size_t)pos0 * HD;
            float *vc = kv_at(m, 1, l, slot0 + b, kvh) + (size_t)pos0 * HD;
            for (int t = 0; t < T; t++) {
                const float *row = qkv + ((size_t)b * T + t) * QKV + QD + kvh * HD;
                memcpy(kc + (size_t)t * HD, row, (size_t)HD * sizeof *kc);
                memcpy(vc + (size_t)t * HD, row + KD, (size_t)HD * sizeof *vc);
            }
        }
}

/* One-token attention of one sequence (q row [QKV], output row y [QD]) in cache slot
 * slot at position pos over the cache [0, pos]: per KV head the G query heads sharing it
 * form one [G, HD] block, so K and V stream once: S = scale * Q K^T [G, pos+1],
 * softmax, Y = P V. */
static void attention_decode_row(struct tb_llama *m, int l, const float *qkv, float *y, int slot,
                                 int pos)
{
    const struct tb_arch *a = m->arch;
    float *s = state(m)->scores;
    int HD = a->head_dim, G = a->heads / a->kv_heads, nk = pos + 1;
    float scale = 1.0f / sqrtf((float)HD);
    for (int kvh = 0; kvh < a->kv_heads; kvh++) {
        const float *q = qkv + kvh * G * HD;
        const float *kc = kv_at(m, 0, l, slot, kvh), *vc = kv_at(m, 1, l, slot, kvh);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, G, nk, HD, scale, q, HD, kc, HD, 0.0f,
                    s, nk);
        for (int g = 0; g < G; g++)
            softmax_row(s + (size_t)g * nk, nk, nk);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, G, HD, nk, 1.0f, s, nk, vc, HD, 0.0f,
                    y + kvh * G * HD, HD);
    }
}

/* ---- forward ---- */

static int check_tokens(const struct tb_llama *m, const int *tokens, int B, int T, const char *what,
                        char *err, size_t errlen)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int id = tokens[(size_t)b * T + t];
            if (id < 0 || id >= m->arch->vocab)
                return tb_err(err, errlen, "%s[%d][%d] = %d out of range [0, %d)", what, b, t, id,
                              m->arch->vocab);
        }
    return 0;
}

static int check_shape(const struct tb_llama *m, int B, int T, char *err, size_t errlen)
{
    if (B < 1 || B > m->max_batch)
        return tb_err(err, errlen, "batch %d outside the engine's capacity [1, %d]", B,
                      m->max_batch);
    if (T < 1 || T > m->max_seq)
        return tb_err(err, errlen, "sequence %d outside the engine's capacity [1, %d]", T,
                      m->max_seq);
    return 0;
}

static void embed(const struct tb_llama *m, float *x, const int *tokens, int N)
{
    size_t C = (size_t)m->arch->hidden;
    for (int n = 0; n < N; n++)
        memcpy(x + (size_t)n * C, m->tok_emb + (size_t)tokens[n] * C, C * sizeof *x);
}

/* The decoder layers over B sequences of T tokens at positions 0..T-1, from the
 * embeddings in res[0] to res[L]. save: every layer keeps its activations (training);
 * otherwise the residual stream is updated in place and the KV cache filled. */
static void forward_layers(struct tb_llama *m, int B, int T, bool save, int slot0)
{
    const struct tb_arch *a = m->arch;
    struct llama_state *st = state(m);
    int N = B * T, C = a->hidden, F = a->ffn, HD = a->head_dim;
    int QD = a->heads * HD, QKV = QD + 2 * a->kv_heads * HD;
    float eps = (float)a->norm_eps;
    for (int l = 0; l < a->layers; l++) {
        const struct tb_llama_layer *w = &m->layers[l];
        struct llama_acts *x = &st->la[save ? l : 0];
        float *rin = st->res[save ? l : 0], *rmid = st->mid[save ? l : 0];
        float *rout = st->res[save ? l + 1 : 0];

        rmsnorm_fwd(x->xn1, x->rstd1, rin, w->attn_norm, N, C, eps);
        linear(x->qkv, QKV, x->xn1, C, w->wq, N, C, QKV, 0.0f);
        rope(st, a, x->qkv, QKV, N, T, 0, 1.0f);
        if (!save)
            kv_store(m, l, x->qkv, B, T, 0, slot0);
        attention_fwd(a, x->qkv, x->y, x->probs, save, B, T);
        if (rmid != rin)
            memcpy(rmid, rin, (size_t)N * C * sizeof *rmid);
        linear(rmid, C, x->y, QD, w->wo, N, QD, C, 1.0f);

        rmsnorm_fwd(x->xn2, x->rstd2, rmid, w->mlp_norm, N, C, eps);
        linear(x->gu, 2 * F, x->xn2, C, w->w_gate, N, C, 2 * F, 0.0f);
        swiglu_fwd(x->h, x->gu, N, F);
        if (rout != rmid)
            memcpy(rout, rmid, (size_t)N * C * sizeof *rout);
        linear(rout, C, x->h, F, w->w_down, N, F, C, 1.0f);
    }
}

int tb_llama_prefill(struct tb_llama *m, const int *tokens, int B, int T, char *err, size_t errlen)
{
    const struct tb_arch *a = m->arch;
    struct llama_state *st = state(m);
    int C = a->hidden;
    if (check_shape(m, B, T, err, errlen) != 0 ||
        check_tokens(m, tokens, B, T, "tokens", err, errlen) != 0)
        return -1;
    st->have_fwd = false;
    embed(m, st->res[0], tokens, B * T);
    forward_layers(m, B, T, false, 0);
    for (int b = 0; b < B; b++) /* the LM head only for each prompt's last position */
        rmsnorm_fwd(st->xf + (size_t)b * C, st->rstdf + b, st->res[0] + ((size_t)b * T + T - 1) * C,
                    m->final_norm, 1, C, (float)a->norm_eps);
    linear(m->logits, a->vocab, st->xf, C, m->lm_head, B, C, a->vocab, 0.0f);
    st->kv_len = T;
    st->kv_batch = B;
    for (int b = 0; b < B; b++)
        st->slot_len[b] = T;
    return 0;
}

/* One token for each of B sequences: row b in cache slot slots[b] (NULL: b) at
 * position pos[b] (NULL: pos0). Every matrix product is one GEMM over the B rows; RoPE,
 * the cache store and attention go row by row with the row's own slot and position.
 * Arguments are checked by the callers; logits in m->logits [B, V]. */
static void decode_rows(struct tb_llama *m, const int *tokens, int B, const int *slots,
                        const int *pos, int pos0)
{
    const struct tb_arch *a = m->arch;
    struct llama_state *st = state(m);
    int C = a->hidden, F = a->ffn, HD = a->head_dim;
    int QD = a->heads * HD, QKV = QD + 2 * a->kv_heads * HD;
    float eps = (float)a->norm_eps;
    float *x = st->res[0];
    struct llama_acts *ac = &st->la[0];

    st->have_fwd = false;
    embed(m, x, tokens, B);
    for (int l = 0; l < a->layers; l++) {
        const struct tb_llama_layer *w = &m->layers[l];
        rmsnorm_fwd(ac->xn1, ac->rstd1, x, w->attn_norm, B, C, eps);
        linear(ac->qkv, QKV, ac->xn1, C, w->wq, B, C, QKV, 0.0f);
        for (int b = 0; b < B; b++) {
            int s = slots ? slots[b] : b, p = pos ? pos[b] : pos0;
            float *row = ac->qkv + (size_t)b * QKV;
            rope(st, a, row, QKV, 1, 0, p, 1.0f);
            kv_store(m, l, row, 1, 1, p, s);
        }
        for (int b = 0; b < B; b++)
            attention_decode_row(m, l, ac->qkv + (size_t)b * QKV, ac->y + (size_t)b * QD,
                                 slots ? slots[b] : b, pos ? pos[b] : pos0);
        linear(x, C, ac->y, QD, w->wo, B, QD, C, 1.0f);
        rmsnorm_fwd(ac->xn2, ac->rstd2, x, w->mlp_norm, B, C, eps);
        linear(ac->gu, 2 * F, ac->xn2, C, w->w_gate, B, C, 2 * F, 0.0f);
        swiglu_fwd(ac->h, ac->gu, B, F);
        linear(x, C, ac->h, F, w->w_down, B, F, C, 1.0f);
    }
    rmsnorm_fwd(st->xf, st->rstdf, x, m->final_norm, B, C, eps);
    linear(m->logits, a->vocab, st->xf, C, m->lm_head, B, C, a->vocab, 0.0f);
}

int tb_llama_decode(struct tb_llama *m, const int *tokens, int B, int pos, char *err, size_t errlen)
{
    struct llama_state *st = state(m);

    if (B < 1 || B > m->max_batch)
        return tb_err(err, errlen, "batch %d outside the engine's capacity [1, %d]", B,
                      m->max_batch);
    if (pos < 0 || pos >= m->max_seq)
        return tb_err(err, errlen, "position %d outside the engine's capacity [0, %d)", pos,
                      m->max_seq);
    if (pos > st->kv_len)
        return tb_err(err, errlen, "position %d: only positions [0, %d) are cached", pos,
                      st->kv_len);
    if (pos > 0 && B > st->kv_batch)
        return tb_err(err, errlen, "batch %d: the cache holds %d sequences", B, st->kv_batch);
    if (check_tokens(m, tokens, B, 1, "tokens", err, errlen) != 0)
        return -1;
    decode_rows(m, tokens, B, NULL, NULL, pos);
    st->kv_len = pos + 1;
    if (pos == 0)
        st->kv_batch = B;
    for (int b = 0; b < B; b++)
        st->slot_len[b] = pos + 1;
    return 0;
}

/* A slot API changed slot s: the cache that prefill/decode see (kv_batch sequences of
 * kv_len positions) ends where that slot's valid positions end. */
static void slot_changed(struct llama_state *st, int s)
{
    if (s < st->kv_batch && st->slot_len[s] < st->kv_len)
        st->kv_len = st->slot_len[s];
}

int tb_llama_prefill_slot(struct tb_llama *m, const int *tokens, int T, int slot, float *logits_out,
                          char *err, size_t errlen)
{
    const struct tb_arch *a = m->arch;
    struct llama_state *st = state(m);
    int C = a->hidden;
    if (slot < 0 || slot >= m->max_batch)
        return tb_err(err, errlen, "slot %d outside the engine's capacity [0, %d)", slot,
                      m->max_batch);
    if (check_shape(m, 1, T, err, errlen) != 0 ||
        check_tokens(m, tokens, 1, T, "tokens", err, errlen) != 0)
        return -1;
    st->have_fwd = false;
    embed(m, st->res[0], tokens, T);
    forward_layers(m, 1, T, false, slot);
    rmsnorm_fwd(st->xf, st->rstdf, st->res[0] + (size_t)(T - 1) * C, m->final_norm, 1, C,
                (float)a->norm_eps);
    linear(logits_out, a->vocab, st->xf, C, m->lm_head, 1, C, a->vocab, 0.0f);
    st->slot_len[slot] = T;
    slot_changed(st, slot);
    return 0;
}

int tb_llama_decode_slots(struct tb_llama *m, const int *tokens, const int *slots, const int *pos,
                          int B, char *err, size_t errlen)
{
    struct llama_state *st = state(m);
    if (B < 1 || B > m->max_batch)
        return tb_err(err, errlen, "batch %d outside the engine's capacity [1, %d]", B,
                      m->max_batch);
    for (int b = 0; b < B; b++) {
        int s = slots[b], p = pos[b];
        if (s < 0 || s >= m->max_batch)
            return tb_err(err, errlen, "sequence %d: slot %d outside the engine's capacity [0, %d)",
                          b, s, m->max_batch);
        for (int c = 0; c < b; c++)
            if (slots[c] == s)
                return tb_err(err, errlen, "sequences %d and %d both in slot %d", c, b, s);
        if (p < 0 || p >= m->max_seq)
            return tb_err(err, errlen,
                          "sequence %d: position %d outside the engine's capacity [0, %d)", b, p,
                          m->max_seq);
        if (p > st->slot_len[s])
            return tb_err(err, errlen,
                          "sequence %d: position %d: slot %d caches only positions [0, %d)", b, p,
                          s, st->slot_len[s]);
    }
    if (check_tokens(m, tokens, B, 1, "tokens", err, errlen) != 0)
        return -1;
    decode_rows(m, tokens, B, slots, pos, 0);
    for (int b = 0; b < B; b++) {
        st->slot_len[slots[b]] = pos[b] + 1;
        slot_changed(st, slots[b]);
    }
    return 0;
}

int tb_llama_forward_loss(struct tb_llama *m, const int *tokens, const int *targets, int B, int T,
                          float *loss, char *err, size_t errlen)
{
    const struct tb_arch *a = m->arch;
    struct llama_state *st = state(m);
    int N = B * T, C = a->hidden, V = a->vocab;
    double total = 0;

    if (!(m->flags & TB_LLAMA_TRAIN))
        return tb_err(err, errlen, "engine for '%s' was set up without TB_LLAMA_TRAIN", a->name);
    if (check_shape(m, B, T, err, errlen) != 0 ||
        check_tokens(m, tokens, B, T, "tokens", err, errlen) != 0 ||
        check_tokens(m, targets, B, T, "targets", err, errlen) != 0)
        return -1;
    memcpy(st->tokens, tokens, (size_t)N * sizeof *tokens);
    memcpy(st->targets, targets, (size_t)N * sizeof *targets);
    st->B = B;
    st->T = T;

    embed(m, st->res[0], tokens, N);
    forward_layers(m, B, T, true, 0);
    rmsnorm_fwd(st->xf, st->rstdf, st->res[a->layers], m->final_norm, N, C, (float)a->norm_eps);
    linear(m->logits, V, st->xf, C, m->lm_head, N, C, V, 0.0f);

    /* mean cross-entropy: per row, log-sum-exp minus the target's logit */
    for (int n = 0; n < N; n++) {
        const float *row = m->logits + (size_t)n * V;
        st->lse[n] = logsumexp_row(row, V);
        total += (double)st->lse[n] - row[targets[n]];
    }
    *loss = (float)(total / N);
    st->have_fwd = true;
    return 0;
}

/* ---- backward ---- */

int tb_llama_backward(struct tb_llama *m, char *err, size_t errlen)
{
    const struct tb_arch *a = m->arch;
    struct llama_state *st = state(m);
    int B = st ? st->B : 0, T = st ? st->T : 0, N = B * T;
    int C = a->hidden, F = a->ffn, V = a->vocab, HD = a->head_dim;
    int QD = a->heads * HD, QKV = QD + 2 * a->kv_heads * HD;

    if (!(m->flags & TB_LLAMA_TRAIN))
        return tb_err(err, errlen, "engine for '%s' was set up without TB_LLAMA_TRAIN", a->name);
    if (!st->have_fwd)
        return tb_err(err, errlen, "no forward_loss to differentiate (or parameters changed)");

    /* cross-entropy: dlogits = (softmax - onehot(target)) / N */
    float invN = 1.0f / (float)N;
    for (int n = 0; n < N; n++) {
        float *d = st->dlogits + (size_t)n * V;
        softmax_scaled_row(d, m->logits + (size_t)n * V, st->lse[n], invN, V);
        d[st->targets[n]] -= invN;
    }
    /* LM head (when tied this writes the embedding's gradient; lookups add below) */
    linear_bwd_w(grad_of(m, m->lm_head), st->dlogits, st->xf, N, C, V);
    linear_bwd_x(st->dxn, st->dlogits, m->lm_head, N, C, V, 0.0f);
    rmsnorm_bwd(st->dres, grad_of(m, m->final_norm), st->dxn, st->res[a->layers], st->rstdf,
                m->final_norm, N, C, false);

    for (int l = a->layers - 1; l >= 0; l--) {
        const struct tb_llama_layer *w = &m->layers[l];
        const struct llama_acts *x = &st->la[l];
        /* MLP: res[l+1] = mid + swiglu(rmsnorm(mid) Wgu^T) Wd^T */
        linear_bwd_x(st->dh, st->dres, w->w_down, N, F, C, 0.0f);
        linear_bwd_w(grad_of(m, w->w_down), st->dres, x->h, N, F, C);
        swiglu_bwd(st->dgu, st->dh, x->gu, N, F);
        linear_bwd_w(grad_of(m, w->w_gate), st->dgu, x->xn2, N, C, 2 * F);
        linear_bwd_x(st->dxn, st->dgu, w->w_gate, N, C, 2 * F, 0.0f);
        rmsnorm_bwd(st->dres, grad_of(m, w->mlp_norm), st->dxn, st->mid[l], x->rstd2, w->mlp_norm,
                    N, C, true);
        /* attention: mid = res[l] + attn(rmsnorm(res[l])) Wo^T */
        linear_bwd_x(st->dy, st->dres, w->wo, N, QD, C, 0.0f);
        linear_bwd_w(grad_of(m, w->wo), st->dres, x->y, N, QD, C);
        memset(st->dqkv, 0, (size_t)N * QKV * sizeof *st->dqkv);
        attention_bwd(a, x->qkv, x->probs, st->dy, st->dqkv, st->dprobs, B, T);
        rope(st, a, st->dqkv, QKV, N, T, 0, -1.0f);
        linear_bwd_w(grad_of(m, w->wq), st->dqkv, x->xn1, N, C, QKV);
        linear_bwd_x(st->dxn, st->dqkv, w->wq, N, C, QKV, 0.0f);
        rmsnorm_bwd(st->dres, grad_of(m, w->attn_norm), st->dxn, st->res[l], x->rstd1, w->attn_norm,
                    N, C, true);
    }

    /* token embedding: scatter-add the rows of the residual gradient */
    float *demb = grad_of(m, m->tok_emb);
    if (!a->tied_embeddings)
        memset(demb, 0, (size_t)V * C * sizeof *demb);
    for (int n = 0; n < N; n++)
        add_row(demb + (size_t)st->tokens[n] * C, st->dres + (size_t)n * C, C);
    return 0;
}

/* ---- optimizer ---- */

struct tb_adamw tb_adamw_default(void)
{
    struct tb_adamw o = {3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};
    return o;
}

/* AdamW over p[i0, i1) with decay factor (1 - lr * wd) applied before the step. */
static void adamw_range(float *restrict p, const float *restrict g, float *restrict mm,
                        float *restrict vv, size_t i0, size_t i1, const struct tb_adamw *o,
                        float bc1, float bc2, float wd)
{
    float b1 = o->beta1, b2 = o->beta2, lr = o->lr, eps = o->eps, decay = 1.0f - lr * wd;
    float ib1 = 1.0f / bc1, ib2 = 1.0f / bc2;
    size_t i = i0;
    for (; i + VL <= i1; i += VL)
        for (int j = 0; j < VL; j++) {
            size_t k = i + (size_t)j;
            float gk = g[k], m1 = b1 * mm[k] + (1.0f - b1) * gk;
            float v1 = b2 * vv[k] + (1.0f - b2) * gk * gk;
            mm[k] = m1;
            vv[k] = v1;
            p[k] = decay * p[k] - lr * (m1 * ib1) / (fast_sqrtf(v1 * ib2) + eps);
        }
    for (; i < i1; i++) {
        float gk = g[i], m1 = b1 * mm[i] + (1.0f - b1) * gk;
        float v1 = b2 * vv[i] + (1.0f - b2) * gk * gk;
        mm[i] = m1;
        vv[i] = v1;
        p[i] = decay * p[i] - lr * (m1 * ib1) / (fast_sqrtf(v1 * ib2) + eps);
    }
}

void tb_llama_adamw(struct tb_llama *m, const struct tb_adamw *opt)
{
    struct llama_state *st = state(m);
    size_t decay_end;
    if (!(m->flags & TB_LLAMA_TRAIN))
        return;
    m->adam_t++;
    float bc1 = 1.0f - (float)pow(opt->beta1, (double)m->adam_t);
    float bc2 = 1.0f - (float)pow(opt->beta2, (double)m->adam_t);
    /* the norm weights sit at the end of the arena: [decay_end, n_params) */
    decay_end = (size_t)(m->layers[0].attn_norm - m->params);
    adamw_range(m->params, m->grads, m->adam_m, m->adam_v, 0, decay_end, opt, bc1, bc2,
                opt->weight_decay);
    adamw_range(m->params, m->grads, m->adam_m, m->adam_v, decay_end, m->n_params, opt, bc1, bc2,
                0.0f);
    st->have_fwd = false;
}

int tb_llama_train_step_sync(struct tb_llama *m, const int *tokens, const int *targets, int B,
                             int T, const struct tb_adamw *opt, tb_llama_grad_sync_fn sync,
                             void *ctx, float *loss, char *err, size_t errlen)
{
    if (tb_llama_forward_loss(m, tokens, targets, B, T, loss, err, errlen) != 0 ||
        tb_llama_backward(m, err, errlen) != 0)
        return -1;
    if (sync && sync(ctx, m->grads, m->n_params, err, errlen) != 0)
        return -1;
    tb_llama_adamw(m, opt);
    return 0;
}

int tb_llama_train_step(struct tb_llama *m, const int *tokens, const int *targets, int B, int T,
                        const struct tb_adamw *opt, float *loss, char *err, size_t errlen)
{
    return tb_llama_train_step_sync(m, tokens, targets, B, T, opt, NULL, NULL, loss, err, errlen);
}
