/*
 * workloads/diffusion/unet.c: the SDXL UNet denoiser of the CPU diffusion engine (see
 * diffusion.h and diffusion_impl.h): fp32, NCHW, convolutions as im2col + sgemm, every
 * linear layer and both attention products (QK^T, AV) through cblas_sgemm; and
 * tb_unet_reference, a plain double-precision forward pass with direct convolutions and
 * straightforward loops that checks it.
 *
 * Shape legend (diffusion.h's, plus):
 *   BM  max_batch; l a level, its pixels H_l x W_l = (H >> l) x (W >> l), HW = H_l * W_l
 *   c   channels of a piece; ci, co its input and output channels
 *   C   a transformer's width, NH = C / HD heads; N = HW tokens, M = B * N rows (b-major)
 *   Tp  time_proj_dim, Te time_embed_dim, Da add_in_dim
 *
 * The model is a list of pieces in the order of unet_walk in harness/tb_darch.c (conv_in,
 * ResNets, transformers, stride-2 down convs, upsample convs, conv_out; skips pushed and
 * popped the same way), and the parameter arena holds exactly tb_darch_params_denoiser()
 * floats. The layers follow diffusers' UNet2DConditionModel as SDXL configures it:
 *  - timestep features: 1000 t embedded as [cos | sin] of 1000 t * exp(-ln(1e4) i / half),
 *    i < half = Tp / 2 (flip_sin_to_cos, no frequency shift), a zero last feature when Tp
 *    is odd; temb = MLP_t(features) + MLP_add([pooled[0..Dp), 0...]), each MLP
 *    Linear, SiLU, Linear; every ResNet reads SiLU(temb);
 *  - ResNet: GroupNorm, SiLU, conv3x3, + Linear(SiLU(temb)) per channel, GroupNorm, SiLU,
 *    conv3x3, + the input (through a 1x1 conv when the channels change);
 *  - transformer: GroupNorm, proj_in Linear, blocks of [LayerNorm, self-attention (q, k, v
 *    without bias, output with), LayerNorm, cross-attention (q from the tokens, k and v
 *    from the Dc-wide context, no bias; output with), LayerNorm, GEGLU (Linear C -> 8C,
 *    value half times exact GELU of the gate half, Linear 4C -> C)], each with a residual,
 *    proj_out Linear, + the transformer's input; attention scale 1 / sqrt(HD);
 *  - up path: input channels = [current | popped skip]; nearest 2x upsampling, conv3x3;
 *  - GroupNorm eps 1e-5, LayerNorm eps 1e-5, both affine.
 * Weight layouts are PyTorch's: conv [co, ci, k, k], linear [out, in].
 *
 * Speed: q, k, v of self-attention (and k, v of cross-attention) sit next to each other
 * in the arena, so each is one GEMM. Attention runs per (image, head) in blocks of
 * ATT_BLOCK query rows. im2col runs in chunks of output rows of at most COL_FLOATS, so
 * its scratch stays bounded at SDXL's sizes. Elementwise loops run in blocks of VL floats,
 * and exp and erf are written out (fast_expf, geglu) because libm calls, which may set
 * errno, keep GCC from vectorising them at -O2: softmax, SiLU and GELU vectorise. Only
 * the BLAS calls use more than one thread. Everything is allocated once in init; the
 * reference allocates its own double buffers per call.
 */
#include "diffusion_impl.h"
#include "kernels.h"

#include "tb_util.h"

#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VL         16         /* floats per block: one AVX-512 register */
#define ATT_BLOCK  256        /* query rows per attention block */
#define COL_FLOATS (1u << 22) /* im2col chunk budget: 16 MB */
#define GN_EPS     1e-5
#define LN_EPS     1e-5

/* ---- layout ---- */

struct conv {
    float *w; /* [co, ci, k, k] */
    float *b; /* [co] */
    int ci, co, k;
};

struct lin {
    float *w; /* [out, in] */
    float *b; /* [out], NULL when the layer has no bias */
    int in, out;
};

struct norm {
    float *w, *b; /* [c] scale, shift */
    int c;
};

/* One transformer block of width C. */
struct tblock {
    struct norm ln1, ln2, ln3;
    float *wq, *wk, *wv; /* [C, C] each, adjacent: one [3C, C] matrix; no bias */
    struct lin ao;       /* self-attention output [C, C] */
    float *wq2;          /* [C, C] cross-attention q; no bias */
    float *wk2, *wv2;    /* [C, Dc] each, adjacent: one [2C, Dc] matrix; no bias */
    struct lin co;       /* cross-attention output [C, C] */
    struct lin ff1;      /* [8C, C]: value rows [0, 4C), gate rows [4C, 8C) */
    struct lin ff2;      /* [C, 4C] */
};

enum piece_kind {
    PIECE_CONV_IN,
    PIECE_RESNET,
    PIECE_TRANSFORMER,
    PIECE_DOWN,
    PIECE_UP,
    PIECE_CONV_OUT,
};

struct piece {
    enum piece_kind kind;
    int level;          /* input resolution level (DOWN outputs at level + 1, UP at level - 1) */
    int ci, co;         /* channels in (ResNets of the up path: current + skip) and out */
    int depth;          /* transformer blocks */
    bool cat;           /* input = [current | popped skip] */
    bool push;          /* the output is saved as a skip */
    struct norm n1, n2; /* ResNet norm1, norm2; transformer and conv_out GroupNorm: n1 */
    struct conv c1, c2, sc; /* ResNet conv1, conv2, 1x1 shortcut (sc.w NULL: identity);
                               conv_in, down, up, conv_out: c1 */
    struct lin temb;        /* ResNet: Te -> co */
    struct lin pin, pout;   /* transformer proj_in, proj_out [C, C] */
    struct tblock *blocks;  /* transformer: [depth], borrowed from unet_state.blocks */
    float *skip;            /* push: [BM, co, HW_out] the saved output (activation arena) */
};

struct unet_state {
    struct piece *pieces; /* owned: [npieces] in walk order */
    int npieces;
    struct tblock *blocks; /* owned: [nblocks] */
    int nblocks;
    int maxskips;        /* skips pushed by the down path */
    int *skipc;          /* owned: [maxskips] channel stack, used while planning */
    const float **stack; /* owned: [maxskips] skip stack of the forward pass */
    struct lin t1, t2;   /* time MLP: Tp -> Te -> Te */
    struct lin a1, a2;   /* additional MLP: Da -> Te -> Te (w NULL when Da = 0) */

    float *act; /* owned arena: everything below (and every piece's skip) */
    size_t act_floats;
    float *cur, *nxt; /* [BM, c, HW] current activation and the next one (swapped) */
    float *nrm;       /* [BM, c, HW] normalised (+ SiLU) input of a conv; upsampled input */
    float *hid;       /* [BM, co, HW] ResNet middle */
    float *cat;       /* [BM, ci, HW] concatenated input of an up-path ResNet */
    float *col;       /* im2col chunk, [ci k k, rows x W_out] */
    float *tok;       /* [M, C] transformer residual stream */
    float *ln;        /* [M, C] LayerNorm output */
    float *qkv;       /* [M, 3C] self-attention q | k | v; cross-attention q [M, C] */
    float *y;         /* [M, C] attention output (heads side by side) */
    float *ff;        /* [M, 8C] GEGLU input */
    float *gg;        /* [M, 4C] GEGLU output */
    float *kv;        /* [BM S, 2C] cross-attention k | v */
    float *sc;        /* [ATT_BLOCK, max(N, S)] attention scores */
    float *tfeat;     /* [BM, Tp] timestep features */
    float *addin;     /* [BM, Da] additional conditioning input */
    float *th;        /* [BM, Te] MLP hidden */
    float *temb;      /* [BM, Te] */
    float *tsilu;     /* [BM, Te] SiLU(temb) */
    float *tproj;     /* [BM, co] a ResNet's projection of it */
};

static struct unet_state *state(const struct tb_diffusion *m)
{
    return (struct unet_state *)m->priv;
}

/* Saturating size arithmetic: an impossible size becomes SIZE_MAX and the allocation
 * fails with a message. */
static size_t sat_mul(size_t a, size_t b)
{
    return (b != 0 && a > SIZE_MAX / b) ? SIZE_MAX : a * b;
}

static size_t sat_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t zmax(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* ---- planning: the pieces, as unet_walk enumerates them ---- */

struct plan {
    const struct tb_darch *a;
    struct unet_state *st; /* pieces and blocks written when st->pieces is set */
    int npieces, nblocks, ns;
};

static struct piece *plan_add(struct plan *pl, enum piece_kind kind, int level, int ci, int co,
                              int depth, bool cat)
{
    struct piece *p = NULL;
    if (pl->st->pieces) {
        p = &pl->st->pieces[pl->npieces];
        memset(p, 0, sizeof *p);
        p->kind = kind;
        p->level = level;
        p->ci = ci;
        p->co = co;
        p->depth = depth;
        p->cat = cat;
        p->blocks = kind == PIECE_TRANSFORMER ? pl->st->blocks + pl->nblocks : NULL;
    }
    pl->npieces++;
    if (kind == PIECE_TRANSFORMER)
        pl->nblocks += depth;
    return p;
}

/* The output of the last piece becomes a skip connection. */
static void plan_push(struct plan *pl, int c)
{
    if (pl->st->pieces)
        pl->st->pieces[pl->npieces - 1].push = true;
    pl->st->skipc[pl->ns++] = c;
}

/* Count (st->pieces NULL) or write the pieces. st->skipc must hold maxskips. */
static void plan_walk(struct plan *pl)
{
    const struct tb_darch *a = pl->a;
    int L = a->nlevels, c = a->ch[0];

    pl->npieces = pl->nblocks = pl->ns = 0;
    plan_add(pl, PIECE_CONV_IN, 0, a->latent_channels, c, 0, false);
    plan_push(pl, c);
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < a->layers_per_block; i++) {
            plan_add(pl, PIECE_RESNET, l, c, a->ch[l], 0, false);
            c = a->ch[l];
            if (a->depth[l])
                plan_add(pl, PIECE_TRANSFORMER, l, c, c, a->depth[l], false);
            plan_push(pl, c);
        }
        if (l < L - 1) {
            plan_add(pl, PIECE_DOWN, l, c, c, 0, false);
            plan_push(pl, c);
        }
    }
    plan_add(pl, PIECE_RESNET, L - 1, c, c, 0, false);
    plan_add(pl, PIECE_TRANSFORMER, L - 1, c, c, a->depth[L - 1], false);
    plan_add(pl, PIECE_RESNET, L - 1, c, c, 0, false);
    for (int l = L - 1; l >= 0; l--) {
        for (int i = 0; i < a->layers_per_block + 1; i++) {
            plan_add(pl, PIECE_RESNET, l, c + pl->st->skipc[--pl->ns], a->ch[l], 0, true);
            c = a->ch[l];
            if (a->depth[l])
                plan_add(pl, PIECE_TRANSFORMER, l, c, c, a->depth[l], false);
        }
        if (l > 0)
            plan_add(pl, PIECE_UP, l, c, c, 0, false);
    }
    plan_add(pl, PIECE_CONV_OUT, 0, c, a->latent_channels, 0, false);
}

/* ---- random weights ---- */

/* ln u for u in (0, 1]: u = m 2^e with m in [1, 2), ln m = 2 atanh(s) with
 * s = (m - 1) / (m + 1) in [0, 1/3], odd series to s^11 (error below 1e-7). */
static inline float ln_unit(float u)
{
    uint32_t bits, mb;
    float mant;
    memcpy(&bits, &u, sizeof bits);
    int e = (int)(bits >> 23) - 127;
    mb = (bits & 0x007fffffu) | 0x3f800000u;
    memcpy(&mant, &mb, sizeof mant);
    float s = (mant - 1.0f) / (mant + 1.0f), s2 = s * s;
    float p = 1.0f / 11;
    p = p * s2 + 1.0f / 9;
    p = p * s2 + 1.0f / 7;
    p = p * s2 + 1.0f / 5;
    p = p * s2 + 1.0f / 3;
    p = p * s2 + 1.0f;
    return 2.0f * s * p + (float)e * 0.693147181f;
}

/* sqrt(x) for x >= 0 (0 gives 0): 1/sqrt(x) from the exponent-halving guess
 * 0x5f3759df and three Newton steps, times x. Unlike sqrtf (errno), it vectorises. */
static inline float sqrt_nonneg(float x)
{
    uint32_t i;
    float y;
    memcpy(&i, &x, sizeof i);
    i = 0x5f3759dfu - (i >> 1);
    memcpy(&y, &i, sizeof y);
    y = y * (1.5f - 0.5f * x * y * y);
    y = y * (1.5f - 0.5f * x * y * y);
    y = y * (1.5f - 0.5f * x * y * y);
    return x * y;
}

/* VL pairs of N(0, sd^2) draws into out[0..2 VL): Box-Muller on counters ctr..ctr+VL-1
 * of key, each giving 24-bit uniforms u1 in (0, 1] and u2 in [0, 1). The angle 2 pi u2 is
 * a quarter turn q plus f in [0, pi/2): cos and sin of f from their Taylor series to f^12
 * and f^11 (error below 1e-7), then turned by q with selects. No calls, no branches: the
 * loop vectorises, which matters at SDXL's 2.6 billion weights. */
static void normal_pairs(float *restrict out, uint64_t key, uint64_t ctr, float sd)
{
    float rr[VL], cc[VL], ss[VL];
    for (int j = 0; j < VL; j++) {
        uint64_t z = tb_dk_mix64(key + (ctr + (uint64_t)j + 1) * 0xd1342543de82ef95ULL);
        float u1 = ((float)(uint32_t)(z >> 40) + 1.0f) * (1.0f / 16777216.0f);
        float u2 = (float)(uint32_t)((z >> 16) & 0xffffffu) * (1.0f / 16777216.0f);
        rr[j] = sd * sqrt_nonneg(-2.0f * ln_unit(u1));
        uint32_t q = (uint32_t)(u2 * 4.0f);
        float f = (u2 * 4.0f - (float)q) * 1.57079633f, f2 = f * f;
        float c = 1.0f / 479001600, s = 1.0f / 39916800;
        c = c * -f2 + 1.0f / 3628800;
        c = c * -f2 + 1.0f / 40320;
        c = c * -f2 + 1.0f / 720;
        c = c * -f2 + 1.0f / 24;
        c = c * -f2 + 1.0f / 2;
        c = c * -f2 + 1.0f;
        s = s * -f2 + 1.0f / 362880;
        s = s * -f2 + 1.0f / 5040;
        s = s * -f2 + 1.0f / 120;
        s = s * -f2 + 1.0f / 6;
        s = (s * -f2 + 1.0f) * f;
        float x = (q & 1u) ? -s : c, y = (q & 1u) ? c : s; /* a quarter turn when q odd */
        cc[j] = (q & 2u) ? -x : x;                         /* half a turn when q >= 2 */
        ss[j] = (q & 2u) ? -y : y;
    }
    for (int j = 0; j < VL; j++) {
        out[j] = rr[j] * cc[j];
        out[VL + j] = rr[j] * ss[j];
    }
}

/* p[0..n) = N(0, sd^2) draws of stream (seed, id). */
static void fill_normal(float *p, size_t n, uint64_t seed, uint64_t id, float sd)
{
    uint64_t key =
        tb_dk_mix64(seed ^ tb_dk_mix64(0x756e6574ULL + (id + 1) * 0x9e3779b97f4a7c15ULL));
    size_t i = 0;
    uint64_t ctr = 0;
    for (; i + 2 * VL <= n; i += 2 * VL, ctr += VL)
        normal_pairs(p + i, key, ctr, sd);
    if (i < n) {
        float tail[2 * VL];
        normal_pairs(tail, key, ctr, sd);
        memcpy(p + i, tail, (n - i) * sizeof *p);
    }
}

/* ---- the parameter arena ---- */

enum fill { FILL_NORMAL, FILL_ZERO, FILL_ONE };

/* Bump allocator over the parameter arena; base NULL only counts. Filling as it goes
 * makes every tensor's values depend on (seed, its index in the walk) alone. */
struct take {
    float *base;
    size_t used; /* floats */
    uint64_t seed, id;
};

static float *take(struct take *t, size_t n, enum fill f)
{
    float *p = NULL;
    if (t->base) {
        p = t->base + t->used;
        if (f == FILL_NORMAL)
            fill_normal(p, n, t->seed, t->id, 0.02f);
        else
            for (size_t i = 0; i < n; i++)
                p[i] = f == FILL_ONE ? 1.0f : 0.0f;
    }
    t->id++;
    t->used = sat_add(t->used, n);
    return p;
}

static void take_lin(struct take *t, struct lin *l, int in, int out, bool bias)
{
    l->in = in;
    l->out = out;
    l->w = take(t, sat_mul((size_t)in, (size_t)out), FILL_NORMAL);
    l->b = bias ? take(t, (size_t)out, FILL_ZERO) : NULL;
}

static void take_conv(struct take *t, struct conv *cv, int ci, int co, int k)
{
    cv->ci = ci;
    cv->co = co;
    cv->k = k;
    cv->w = take(t, sat_mul(sat_mul((size_t)ci, (size_t)co), (size_t)k * k), FILL_NORMAL);
    cv->b = take(t, (size_t)co, FILL_ZERO);
}

static void take_norm(struct take *t, struct norm *n, int c)
{
    n->c = c;
    n->w = take(t, (size_t)c, FILL_ONE);
    n->b = take(t, (size_t)c, FILL_ZERO);
}

static void take_tblock(struct take *t, struct tblock *k, int C, int Dc)
{
    size_t CC = (size_t)C * C;
    take_norm(t, &k->ln1, C);
    k->wq = take(t, CC, FILL_NORMAL);
    k->wk = take(t, CC, FILL_NORMAL);
    k->wv = take(t, CC, FILL_NORMAL);
    take_lin(t, &k->ao, C, C, true);
    take_norm(t, &k->ln2, C);
    k->wq2 = take(t, CC, FILL_NORMAL);
    k->wk2 = take(t, (size_t)C * Dc, FILL_NORMAL);
    k->wv2 = take(t, (size_t)C * Dc, FILL_NORMAL);
    take_lin(t, &k->co, C, C, true);
    take_norm(t, &k->ln3, C);
    take_lin(t, &k->ff1, C, 8 * C, true);
    take_lin(t, &k->ff2, 4 * C, C, true);
}

/* Lay out (t->base NULL: count) every parameter; returns the float count. The pieces
 * must be planned. */
static size_t layout_params(struct unet_state *st, const struct tb_darch *a, struct take *t)
{
    int Te = a->time_embed_dim;
    take_lin(t, &st->t1, a->time_proj_dim, Te, true);
    take_lin(t, &st->t2, Te, Te, true);
    if (a->add_in_dim > 0) {
        take_lin(t, &st->a1, a->add_in_dim, Te, true);
        take_lin(t, &st->a2, Te, Te, true);
    }
    for (int i = 0; i < st->npieces; i++) {
        struct piece *p = &st->pieces[i];
        switch (p->kind) {
        case PIECE_CONV_IN:
        case PIECE_DOWN:
        case PIECE_UP:
            take_conv(t, &p->c1, p->ci, p->co, 3);
            break;
        case PIECE_CONV_OUT:
            take_norm(t, &p->n1, p->ci);
            take_conv(t, &p->c1, p->ci, p->co, 3);
            break;
        case PIECE_RESNET:
            take_norm(t, &p->n1, p->ci);
            take_conv(t, &p->c1, p->ci, p->co, 3);
            take_lin(t, &p->temb, Te, p->co, true);
            take_norm(t, &p->n2, p->co);
            take_conv(t, &p->c2, p->co, p->co, 3);
            if (p->ci != p->co)
                take_conv(t, &p->sc, p->ci, p->co, 1);
            break;
        case PIECE_TRANSFORMER:
            take_norm(t, &p->n1, p->co);
            take_lin(t, &p->pin, p->co, p->co, true);
            for (int d = 0; d < p->depth; d++)
                take_tblock(t, &p->blocks[d], p->co, a->context_dim);
            take_lin(t, &p->pout, p->co, p->co, true);
            break;
        }
    }
    return t->used;
}

/* ---- the activation arena ---- */

struct bump {
    float *base;
    size_t used; /* floats, each block rounded up to VL (64 bytes) */
};

static float *bump_take(struct bump *b, size_t n)
{
    float *p = (b->base && b->used != SIZE_MAX) ? b->base + b->used : NULL;
    b->used = sat_add(b->used, sat_mul(sat_add(n, VL - 1) / VL, VL));
    return p;
}

/* Output rows of a conv per im2col chunk: at most COL_FLOATS floats, at least one row. */
static int col_rows(size_t K, int Wo, int Ho)
{
    size_t rows = COL_FLOATS / sat_mul(K, (size_t)Wo);
    return rows < 1 ? 1 : rows > (size_t)Ho ? Ho : (int)rows;
}

static size_t level_hw(const struct tb_diffusion *m, int level)
{
    return (size_t)(m->lat_h >> level) * (size_t)(m->lat_w >> level);
}

/* Lay out (base NULL: count) the activation arena for BM images. */
static size_t layout_acts(struct unet_state *st, const struct tb_diffusion *m, float *base)
{
    const struct tb_darch *a = m->arch;
    struct bump b = {base, 0};
    size_t BM = (size_t)m->max_batch, S = (size_t)a->text_tokens;
    size_t act = 0, col = 0, tokc = 0, ffc = 0, kvc = 0, scc = 0, maxco = 0;

    for (int i = 0; i < st->npieces; i++) {
        const struct piece *p = &st->pieces[i];
        size_t hw = level_hw(m, p->level), c = (size_t)(p->ci > p->co ? p->ci : p->co);
        int H = m->lat_h >> p->level, W = m->lat_w >> p->level;
        act = zmax(act, hw * c);
        maxco = zmax(maxco, (size_t)p->co);
        if (p->kind == PIECE_UP) { /* the conv runs on the upsampled input */
            act = zmax(act, 4 * hw * c);
            H *= 2;
            W *= 2;
        }
        if (p->kind != PIECE_TRANSFORMER) { /* 3x3 convs (1x1 shortcuts need no im2col) */
            int s = p->kind == PIECE_DOWN ? 2 : 1, Ho = (H - 1) / s + 1, Wo = (W - 1) / s + 1;
            size_t K = (size_t)p->ci * 9;
            col = zmax(col, sat_mul(K, (size_t)col_rows(K, Wo, Ho) * (size_t)Wo));
            if (p->kind == PIECE_RESNET) { /* conv2: co in */
                K = (size_t)p->co * 9;
                col = zmax(col, sat_mul(K, (size_t)col_rows(K, Wo, Ho) * (size_t)Wo));
            }
        } else {
            tokc = zmax(tokc, hw * c);
            ffc = zmax(ffc, hw * c * 8);
            kvc = zmax(kvc, S * 2 * c);
            scc = zmax(scc, ATT_BLOCK * zmax(hw, S));
        }
    }
    act = sat_mul(BM, act);
    st->cur = bump_take(&b, act);
    st->nxt = bump_take(&b, act);
    st->nrm = bump_take(&b, act);
    st->hid = bump_take(&b, act);
    st->cat = bump_take(&b, act);
    st->col = bump_take(&b, col);
    st->tok = bump_take(&b, sat_mul(BM, tokc));
    st->ln = bump_take(&b, sat_mul(BM, tokc));
    st->qkv = bump_take(&b, sat_mul(BM, 3 * tokc));
    st->y = bump_take(&b, sat_mul(BM, tokc));
    st->ff = bump_take(&b, sat_mul(BM, ffc));
    st->gg = bump_take(&b, sat_mul(BM, ffc / 2));
    st->kv = bump_take(&b, sat_mul(BM, kvc));
    st->sc = bump_take(&b, scc);
    st->tfeat = bump_take(&b, BM * (size_t)a->time_proj_dim);
    st->addin = bump_take(&b, BM * (size_t)(a->add_in_dim > 0 ? a->add_in_dim : 1));
    st->th = bump_take(&b, BM * (size_t)a->time_embed_dim);
    st->temb = bump_take(&b, BM * (size_t)a->time_embed_dim);
    st->tsilu = bump_take(&b, BM * (size_t)a->time_embed_dim);
    st->tproj = bump_take(&b, BM * maxco);
    for (int i = 0; i < st->npieces; i++) {
        struct piece *p = &st->pieces[i];
        int lo = p->kind == PIECE_DOWN ? p->level + 1
                 : p->kind == PIECE_UP ? p->level - 1
                                       : p->level;
        p->skip = p->push ? bump_take(&b, sat_mul(BM * (size_t)p->co, level_hw(m, lo))) : NULL;
    }
    return b.used;
}

static float *arena_alloc(size_t n, const char *what, char *err, size_t errlen)
{
    void *p = NULL;
    size_t bytes = sat_mul(n, sizeof(float));
    if (bytes == SIZE_MAX || posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
        tb_err(err, errlen, "cannot allocate %zu bytes for the %s", bytes, what);
        return NULL;
    }
    return p;
}

/* ---- lifecycle ---- */

static int check_arch(const struct tb_diffusion *m, char *err, size_t errlen)
{
    const struct tb_darch *a = m->arch;
    int L = a->nlevels;
    if (a->kind != TB_DARCH_UNET)
        return tb_err(err, errlen, "model '%s': not a UNet", a->name);
    if (L < 1 || L > TB_DARCH_MAX_LEVELS || a->layers_per_block < 1 || a->groups < 1 ||
        a->latent_channels < 1 || a->time_proj_dim < 2 || a->time_embed_dim < 1 ||
        a->text_tokens < 1 || a->context_dim < 1 || a->pooled_dim < 0 || a->add_in_dim < 0)
        return tb_err(err, errlen, "model '%s': UNet dimensions out of range", a->name);
    for (int l = 0; l < L; l++) {
        bool attn = a->depth[l] > 0;
        if (a->ch[l] < 1 || a->ch[l] % a->groups || a->depth[l] < 0 ||
            (attn && (a->head_dim < 1 || a->ch[l] % a->head_dim)))
            return tb_err(err, errlen,
                          "model '%s': level %d: %d channels do not split into %d groups "
                          "and heads of %d",
                          a->name, l, a->ch[l], a->groups, a->head_dim);
    }
    if (m->lat_h % (1 << (L - 1)) || m->lat_w % (1 << (L - 1)))
        return tb_err(err, errlen, "model '%s': latent size %dx%d is not a multiple of %d", a->name,
                      m->lat_h, m->lat_w, 1 << (L - 1));
    return 0;
}

int tb_unet_init(struct tb_diffusion *m, uint64_t seed, char *err, size_t errlen)
{
    const struct tb_darch *a = m->arch;
    struct unet_state *st = NULL;
    struct plan pl;
    struct take t = {NULL, 0, seed, 0};
    int rc = -1;

    if (check_arch(m, err, errlen) != 0)
        return -1;
    if (!(st = calloc(1, sizeof *st))) {
        tb_err(err, errlen, "cannot allocate the UNet state");
        goto out;
    }
    m->priv = st;

    /* the pieces: count, then write */
    st->maxskips = 1 + a->nlevels * a->layers_per_block + a->nlevels - 1;
    st->skipc = calloc((size_t)st->maxskips, sizeof *st->skipc);
    st->stack = calloc((size_t)st->maxskips, sizeof *st->stack);
    if (!st->skipc || !st->stack) {
        tb_err(err, errlen, "cannot allocate the UNet state");
        goto out;
    }
    pl = (struct plan){a, st, 0, 0, 0};
    plan_walk(&pl);
    st->npieces = pl.npieces;
    st->nblocks = pl.nblocks;
    st->pieces = calloc((size_t)st->npieces, sizeof *st->pieces);
    st->blocks = calloc((size_t)(st->nblocks > 0 ? st->nblocks : 1), sizeof *st->blocks);
    if (!st->pieces || !st->blocks) {
        tb_err(err, errlen, "cannot allocate the UNet state");
        goto out;
    }
    plan_walk(&pl);

    /* parameters */
    m->n_params = layout_params(st, a, &t);
    if (!(m->params = arena_alloc(m->n_params, "parameters", err, errlen)))
        goto out;
    t = (struct take){m->params, 0, seed, 0};
    layout_params(st, a, &t);

    /* activations */
    st->act_floats = layout_acts(st, m, NULL);
    if (!(st->act = arena_alloc(st->act_floats, "activations", err, errlen)))
        goto out;
    layout_acts(st, m, st->act);
    rc = 0;
out:
    if (rc != 0)
        tb_unet_release(m);
    return rc;
}

void tb_unet_release(struct tb_diffusion *m)
{
    struct unet_state *st = state(m);
    if (st) {
        free(st->pieces);
        free(st->blocks);
        free(st->skipc);
        free(st->stack);
        free(st->act);
        free(st);
    }
    free(m->params);
    m->params = NULL;
    m->n_params = 0;
    m->priv = NULL;
}

/* ---- the layout for other executors ---- */

static size_t off_of(const struct tb_diffusion *m, const float *p)
{
    return p ? (size_t)(p - m->params) : TB_DLAYOUT_NONE;
}

static struct tb_dparam par(const struct tb_diffusion *m, const float *w, const float *b)
{
    return (struct tb_dparam){off_of(m, w), off_of(m, b)};
}

int tb_unet_layout(const struct tb_diffusion *m, struct tb_dlayout *l, char *err, size_t errlen)
{
    static const enum tb_dpiece_kind kinds[] = {
        [PIECE_CONV_IN] = TB_DPIECE_CONV_IN,
        [PIECE_RESNET] = TB_DPIECE_RESNET,
        [PIECE_TRANSFORMER] = TB_DPIECE_TRANSFORMER,
        [PIECE_DOWN] = TB_DPIECE_DOWN,
        [PIECE_UP] = TB_DPIECE_UP,
        [PIECE_CONV_OUT] = TB_DPIECE_CONV_OUT,
    };
    const struct unet_state *st = state(m);

    memset(l, 0, sizeof *l);
    if (!st)
        return tb_err(err, errlen, "UNet engine not set up");
    l->pieces = calloc((size_t)st->npieces, sizeof *l->pieces);
    l->blocks = calloc((size_t)(st->nblocks > 0 ? st->nblocks : 1), sizeof *l->blocks);
    if (!l->pieces || !l->blocks) {
        tb_dlayout_release(l);
        return tb_err(err, errlen, "out of memory for the UNet's layout");
    }
    l->n_params = m->n_params;
    l->npieces = st->npieces;
    l->nblocks = st->nblocks;
    l->t1 = par(m, st->t1.w, st->t1.b);
    l->t2 = par(m, st->t2.w, st->t2.b);
    l->a1 = par(m, st->a1.w, st->a1.b);
    l->a2 = par(m, st->a2.w, st->a2.b);
    for (int i = 0; i < st->npieces; i++) {
        const struct piece *p = &st->pieces[i];
        struct tb_dpiece *q = &l->pieces[i];
        q->kind = kinds[p->kind];
        q->level = p->level;
        q->ci = p->ci;
        q->co = p->co;
        q->depth = p->depth;
        q->cat = p->cat;
        q->push = p->push;
        q->n1 = par(m, p->n1.w, p->n1.b);
        q->n2 = par(m, p->n2.w, p->n2.b);
        q->c1 = par(m, p->c1.w, p->c1.b);
        q->c2 = par(m, p->c2.w, p->c2.b);
        q->sc = par(m, p->sc.w, p->sc.b);
        q->temb = par(m, p->temb.w, p->temb.b);
        q->pin = par(m, p->pin.w, p->pin.b);
        q->pout = par(m, p->pout.w, p->pout.b);
        q->block = p->blocks ? (int)(p->blocks - st->blocks) : -1;
    }
    for (int i = 0; i < st->nblocks; i++) {
        const struct tblock *k = &st->blocks[i];
        struct tb_dblock *q = &l->blocks[i];
        q->ln1 = par(m, k->ln1.w, k->ln1.b);
        q->ln2 = par(m, k->ln2.w, k->ln2.b);
        q->ln3 = par(m, k->ln3.w, k->ln3.b);
        q->ao = par(m, k->ao.w, k->ao.b);
        q->co = par(m, k->co.w, k->co.b);
        q->ff1 = par(m, k->ff1.w, k->ff1.b);
        q->ff2 = par(m, k->ff2.w, k->ff2.b);
        q->wqkv = off_of(m, k->wq);
        q->wq2 = off_of(m, k->wq2);
        q->wkv2 = off_of(m, k->wk2);
    }
    return 0;
}

/* ---- kernels ---- */

static inline float silu(float v)
{
    return v / (1.0f + tb_dk_expf(-v));
}

/* v GELU(g) = v g (1 + erf(g / sqrt 2)) / 2, the exact GELU with erf from Abramowitz and
 * Stegun 7.1.26 (absolute error below 1.5e-7): erf(z) = 1 - poly(1 / (1 + p z)) e^-z^2
 * for z >= 0, odd. Call-free, unlike erff. */
static inline float geglu(float v, float g)
{
    float z = g * 0.70710678f, az = z < 0 ? -z : z, k = 1.0f / (1.0f + 0.3275911f * az);
    float poly = 1.061405429f;
    poly = poly * k - 1.453152027f;
    poly = poly * k + 1.421413741f;
    poly = poly * k - 0.284496736f;
    poly = poly * k + 0.254829592f;
    float e = 1.0f - poly * k * tb_dk_expf(-az * az);
    return v * 0.5f * g * (1.0f + (z < 0 ? -e : e));
}

/* Elementwise loops run in blocks of VL with a scalar tail: GCC's -O2 vectoriser
 * takes fixed-length inner loops, not loops that would need an epilogue. */

/* x[0..n) += v */
static void add_const(float *restrict x, size_t n, float v)
{
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            x[i + j] += v;
    for (; i < n; i++)
        x[i] += v;
}

/* x[0..n) += y[0..n) */
static void add_vec(float *restrict x, const float *restrict y, size_t n)
{
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            x[i + j] += y[i + j];
    for (; i < n; i++)
        x[i] += y[i];
}

/* o[0..n) = x * sc + sh, then SiLU when act. */
static void affine(float *restrict o, const float *restrict x, size_t n, float sc, float sh,
                   bool act)
{
    size_t i = 0;
    if (act) {
        for (; i + VL <= n; i += VL)
            for (int j = 0; j < VL; j++)
                o[i + j] = silu(x[i + j] * sc + sh);
        for (; i < n; i++)
            o[i] = silu(x[i] * sc + sh);
    } else {
        for (; i + VL <= n; i += VL)
            for (int j = 0; j < VL; j++)
                o[i + j] = x[i + j] * sc + sh;
        for (; i < n; i++)
            o[i] = x[i] * sc + sh;
    }
}

/* o[0..n) = v GELU(g) */
static void geglu_row(float *restrict o, const float *restrict v, const float *restrict g, size_t n)
{
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            o[i + j] = geglu(v[i + j], g[i + j]);
    for (; i < n; i++)
        o[i] = geglu(v[i], g[i]);
}

/* Sum of x[0..n) in double, VL partial sums (a vectorisable reduction). */
static double sum_d(const float *restrict x, size_t n)
{
    double acc[VL] = {0}, s = 0;
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            acc[j] += x[i + j];
    for (; i < n; i++)
        s += x[i];
    for (int j = 0; j < VL; j++)
        s += acc[j];
    return s;
}

/* Sum of (x - mean)^2 over x[0..n), likewise. */
static double sum_sq_d(const float *restrict x, size_t n, float mean)
{
    double acc[VL] = {0}, s = 0;
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++) {
            float d = x[i + j] - mean;
            acc[j] += d * d;
        }
    for (; i < n; i++)
        s += (double)(x[i] - mean) * (x[i] - mean);
    for (int j = 0; j < VL; j++)
        s += acc[j];
    return s;
}

/* out [B, C, HW] = GroupNorm(in) with G groups (then SiLU when act). */
static void group_norm(float *restrict out, const float *restrict in, const struct norm *n, int B,
                       int C, size_t HW, int G, bool act)
{
    int cpg = C / G;
    size_t len = (size_t)cpg * HW;
    for (int b = 0; b < B; b++)
        for (int g = 0; g < G; g++) {
            size_t off = ((size_t)b * C + (size_t)g * cpg) * HW;
            const float *x = in + off;
            float *o = out + off;
            float mean = (float)(sum_d(x, len) / (double)len);
            float rstd = (float)(1.0 / sqrt(sum_sq_d(x, len, mean) / (double)len + GN_EPS));
            for (int j = 0; j < cpg; j++) {
                int c = g * cpg + j;
                float sc = n->w[c] * rstd, sh = n->b[c] - mean * sc;
                affine(o + (size_t)j * HW, x + (size_t)j * HW, HW, sc, sh, act);
            }
        }
}

/* out [M, C] = LayerNorm(x) row by row. */
static void layer_norm(float *restrict out, const float *restrict x, const struct norm *n, int M,
                       int C)
{
    for (int r = 0; r < M; r++) {
        const float *xr = x + (size_t)r * C;
        float *o = out + (size_t)r * C;
        float mean = (float)(sum_d(xr, (size_t)C) / C);
        float rstd = (float)(1.0 / sqrt(sum_sq_d(xr, (size_t)C, mean) / C + LN_EPS));
        const float *restrict w = n->w, *restrict b = n->b;
        int c = 0;
        for (; c + VL <= C; c += VL)
            for (int j = 0; j < VL; j++)
                o[c + j] = (xr[c + j] - mean) * rstd * w[c + j] + b[c + j];
        for (; c < C; c++)
            o[c] = (xr[c] - mean) * rstd * w[c] + b[c];
    }
}

/* out [M, out] = x [M, in] W^T (+ beta out) + bias. */
static void linear(float *out, const float *x, const struct lin *l, int M, float beta)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, l->out, l->in, 1.0f, x, l->in, l->w,
                l->in, beta, out, l->out);
    if (l->b)
        for (int r = 0; r < M; r++)
            add_vec(out + (size_t)r * l->out, l->b, (size_t)l->out);
}

/* One chunk of im2col: col [ci k k, (y1 - y0) Wo], row (c k + ky) k + kx holding the
 * input pixel under tap (ky, kx) of each output pixel of rows [y0, y1); zero padding. */
static void im2col(float *restrict col, const float *restrict in, int C, int H, int W, int k, int s,
                   int pad, int y0, int y1, int Wo)
{
    size_t np = (size_t)(y1 - y0) * Wo;
    for (int c = 0; c < C; c++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                float *row = col + ((size_t)(c * k + ky) * k + kx) * np;
                for (int oy = y0; oy < y1; oy++) {
                    float *dst = row + (size_t)(oy - y0) * Wo;
                    int iy = oy * s + ky - pad;
                    if (iy < 0 || iy >= H) {
                        memset(dst, 0, (size_t)Wo * sizeof *dst);
                        continue;
                    }
                    const float *src = in + ((size_t)c * H + iy) * W;
                    if (s == 1) { /* ix = ox + kx - pad: zeros, a copied run, zeros */
                        int lo = pad - kx > 0 ? pad - kx : 0;
                        int hi = W + pad - kx < Wo ? W + pad - kx : Wo;
                        if (hi < lo)
                            hi = lo;
                        for (int ox = 0; ox < lo; ox++)
                            dst[ox] = 0;
                        memcpy(dst + lo, src + lo + kx - pad, (size_t)(hi - lo) * sizeof *dst);
                        for (int ox = hi; ox < Wo; ox++)
                            dst[ox] = 0;
                    } else {
                        for (int ox = 0; ox < Wo; ox++) {
                            int ix = ox * s + kx - pad;
                            dst[ox] = (ix >= 0 && ix < W) ? src[ix] : 0.0f;
                        }
                    }
                }
            }
}

/* out [B, co, Ho, Wo] = conv(in [B, ci, H, W]) + bias (+ extra [B, co] per image and
 * channel when not NULL); padding k / 2, stride s. 1x1 convs multiply directly. */
static void conv2d(struct unet_state *st, float *out, const float *in, const struct conv *cv, int B,
                   int H, int W, int s, const float *extra)
{
    int k = cv->k, pad = k / 2, Ho = (H + 2 * pad - k) / s + 1, Wo = (W + 2 * pad - k) / s + 1;
    size_t HWi = (size_t)H * W, HWo = (size_t)Ho * Wo, K = (size_t)cv->ci * k * k;
    for (int b = 0; b < B; b++) {
        const float *ib = in + (size_t)b * cv->ci * HWi;
        float *ob = out + (size_t)b * cv->co * HWo;
        if (k == 1 && s == 1) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cv->co, (int)HWo, cv->ci, 1.0f,
                        cv->w, cv->ci, ib, (int)HWo, 0.0f, ob, (int)HWo);
        } else {
            int rows = col_rows(K, Wo, Ho);
            for (int y0 = 0; y0 < Ho; y0 += rows) {
                int y1 = y0 + rows < Ho ? y0 + rows : Ho, np = (y1 - y0) * Wo;
                im2col(st->col, ib, cv->ci, H, W, k, s, pad, y0, y1, Wo);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cv->co, np, (int)K, 1.0f,
                            cv->w, (int)K, st->col, np, 0.0f, ob + (size_t)y0 * Wo, (int)HWo);
            }
        }
        for (int c = 0; c < cv->co; c++) {
            float add = cv->b[c] + (extra ? extra[(size_t)b * cv->co + c] : 0.0f);
            add_const(ob + (size_t)c * HWo, HWo, add);
        }
    }
}

/* In-place softmax of row[0..n). */
static void softmax_row(float *restrict row, int n)
{
    float acc[VL], mx = row[0], sum = 0;
    int i = 0;
    for (int j = 0; j < VL; j++)
        acc[j] = row[0];
    for (; i + VL <= n; i += VL) /* partial maxima and sums: vectorisable reductions */
        for (int j = 0; j < VL; j++)
            acc[j] = row[i + j] > acc[j] ? row[i + j] : acc[j];
    for (; i < n; i++)
        mx = row[i] > mx ? row[i] : mx;
    for (int j = 0; j < VL; j++)
        mx = acc[j] > mx ? acc[j] : mx;
    for (i = 0; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            row[i + j] = tb_dk_expf(row[i + j] - mx);
    for (; i < n; i++)
        row[i] = tb_dk_expf(row[i] - mx);
    for (int j = 0; j < VL; j++)
        acc[j] = 0;
    for (i = 0; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            acc[j] += row[i + j];
    for (; i < n; i++)
        sum += row[i];
    for (int j = 0; j < VL; j++)
        sum += acc[j];
    float inv = 1.0f / sum;
    for (i = 0; i + VL <= n; i += VL)
        for (int j = 0; j < VL; j++)
            row[i + j] *= inv;
    for (; i < n; i++)
        row[i] *= inv;
}

/* Multi-head attention of B images: y [B Nq, NH HD] (row stride ldy) from q [B Nq, .]
 * and k, v [B Nk, .] (row strides ldq, ldk, ldv; head h at column h HD). */
static void attention(float *sc, float *y, int ldy, const float *q, int ldq, const float *k,
                      int ldk, const float *v, int ldv, int B, int Nq, int Nk, int NH, int HD)
{
    float scale = 1.0f / sqrtf((float)HD);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *kb = k + (size_t)b * Nk * ldk + (size_t)h * HD;
            const float *vb = v + (size_t)b * Nk * ldv + (size_t)h * HD;
            for (int r0 = 0; r0 < Nq; r0 += ATT_BLOCK) {
                int rb = Nq - r0 < ATT_BLOCK ? Nq - r0 : ATT_BLOCK;
                size_t row = (size_t)b * Nq + r0;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rb, Nk, HD, scale,
                            q + row * ldq + (size_t)h * HD, ldq, kb, ldk, 0.0f, sc, Nk);
                for (int r = 0; r < rb; r++)
                    softmax_row(sc + (size_t)r * Nk, Nk);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rb, HD, Nk, 1.0f, sc, Nk, vb,
                            ldv, 0.0f, y + row * ldy + (size_t)h * HD, ldy);
            }
        }
}

/* ---- forward ---- */

/* temb for B images into st->tsilu = SiLU(temb). */
static void time_embedding(struct unet_state *st, const struct tb_darch *a, const float *t,
                           const float *pooled, int B)
{
    int Tp = a->time_proj_dim, half = Tp / 2, Te = a->time_embed_dim, Da = a->add_in_dim;
    for (int b = 0; b < B; b++) {
        float *f = st->tfeat + (size_t)b * Tp;
        for (int i = 0; i < half; i++) {
            double arg = 1000.0 * t[b] * exp(-log(10000.0) * i / half);
            f[i] = (float)cos(arg);
            f[half + i] = (float)sin(arg);
        }
        if (Tp % 2)
            f[Tp - 1] = 0;
    }
    linear(st->th, st->tfeat, &st->t1, B, 0.0f);
    for (size_t i = 0; i < (size_t)B * Te; i++)
        st->th[i] = silu(st->th[i]);
    linear(st->temb, st->th, &st->t2, B, 0.0f);
    if (Da > 0) {
        int np = a->pooled_dim < Da ? a->pooled_dim : Da;
        for (int b = 0; b < B; b++) {
            float *ai = st->addin + (size_t)b * Da;
            memset(ai, 0, (size_t)Da * sizeof *ai);
            if (np > 0)
                memcpy(ai, pooled + (size_t)b * a->pooled_dim, (size_t)np * sizeof *ai);
        }
        linear(st->th, st->addin, &st->a1, B, 0.0f);
        for (size_t i = 0; i < (size_t)B * Te; i++)
            st->th[i] = silu(st->th[i]);
        linear(st->temb, st->th, &st->a2, B, 1.0f); /* added to the time MLP's output */
    }
    for (size_t i = 0; i < (size_t)B * Te; i++)
        st->tsilu[i] = silu(st->temb[i]);
}

/* out [B, co, H, W] = ResNet(in [B, ci, H, W]). */
static void resnet_fwd(struct unet_state *st, const struct piece *p, float *out, const float *in,
                       int B, int H, int W, int G)
{
    size_t HW = (size_t)H * W;
    group_norm(st->nrm, in, &p->n1, B, p->ci, HW, G, true);
    linear(st->tproj, st->tsilu, &p->temb, B, 0.0f);
    conv2d(st, st->hid, st->nrm, &p->c1, B, H, W, 1, st->tproj);
    group_norm(st->nrm, st->hid, &p->n2, B, p->co, HW, G, true);
    conv2d(st, out, st->nrm, &p->c2, B, H, W, 1, NULL);
    if (p->sc.w) {
        for (int b = 0; b < B; b++) {
            float *ob = out + (size_t)b * p->co * HW;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->co, (int)HW, p->ci, 1.0f,
                        p->sc.w, p->ci, in + (size_t)b * p->ci * HW, (int)HW, 1.0f, ob, (int)HW);
            for (int c = 0; c < p->co; c++)
                add_const(ob + (size_t)c * HW, HW, p->sc.b[c]);
        }
    } else {
        add_vec(out, in, (size_t)B * p->co * HW);
    }
}

/* x [B, C, H, W] += transformer(x), with ctx [B, S, Dc]. */
static void transformer_fwd(struct unet_state *st, const struct tb_darch *a, const struct piece *p,
                            float *x, const float *ctx, int B, int N)
{
    int C = p->co, M = B * N, S = a->text_tokens, Dc = a->context_dim;
    int HD = a->head_dim, NH = p->depth > 0 ? C / HD : 0;

    group_norm(st->nrm, x, &p->n1, B, C, (size_t)N, a->groups, false);
    for (int b = 0; b < B; b++) /* tokens [N, C] = (norm [C, N])^T W^T */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasTrans, N, C, C, 1.0f,
                    st->nrm + (size_t)b * C * N, N, p->pin.w, C, 0.0f, st->tok + (size_t)b * N * C,
                    C);
    for (int r = 0; r < M; r++)
        add_vec(st->tok + (size_t)r * C, p->pin.b, (size_t)C);

    for (int d = 0; d < p->depth; d++) {
        const struct tblock *k = &p->blocks[d];
        /* self-attention */
        layer_norm(st->ln, st->tok, &k->ln1, M, C);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, 3 * C, C, 1.0f, st->ln, C, k->wq, C,
                    0.0f, st->qkv, 3 * C);
        attention(st->sc, st->y, C, st->qkv, 3 * C, st->qkv + C, 3 * C, st->qkv + 2 * C, 3 * C, B,
                  N, N, NH, HD);
        linear(st->tok, st->y, &k->ao, M, 1.0f);
        /* cross-attention to the text context */
        layer_norm(st->ln, st->tok, &k->ln2, M, C);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, C, C, 1.0f, st->ln, C, k->wq2, C,
                    0.0f, st->qkv, C);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B * S, 2 * C, Dc, 1.0f, ctx, Dc,
                    k->wk2, Dc, 0.0f, st->kv, 2 * C);
        attention(st->sc, st->y, C, st->qkv, C, st->kv, 2 * C, st->kv + C, 2 * C, B, N, S, NH, HD);
        linear(st->tok, st->y, &k->co, M, 1.0f);
        /* GEGLU feed-forward */
        layer_norm(st->ln, st->tok, &k->ln3, M, C);
        linear(st->ff, st->ln, &k->ff1, M, 0.0f);
        for (int r = 0; r < M; r++) {
            const float *fr = st->ff + (size_t)r * 8 * C;
            geglu_row(st->gg + (size_t)r * 4 * C, fr, fr + (size_t)4 * C, (size_t)4 * C);
        }
        linear(st->tok, st->gg, &k->ff2, M, 1.0f);
    }

    for (int b = 0; b < B; b++) { /* x [C, N] += W (tokens [N, C])^T + bias */
        float *xb = x + (size_t)b * C * N;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, C, N, C, 1.0f, p->pout.w, C,
                    st->tok + (size_t)b * N * C, C, 1.0f, xb, N);
        for (int c = 0; c < C; c++)
            add_const(xb + (size_t)c * N, (size_t)N, p->pout.b[c]);
    }
}

/* out [B, C, 2H, 2W] = nearest-neighbour upsampling of in [B, C, H, W]. */
static void upsample2(float *restrict out, const float *restrict in, size_t BC, int H, int W)
{
    for (size_t i = 0; i < BC; i++)
        for (int y = 0; y < 2 * H; y++) {
            const float *src = in + (i * H + (size_t)(y / 2)) * W;
            float *dst = out + (i * 2 * H + (size_t)y) * 2 * W;
            for (int xx = 0; xx < 2 * W; xx++)
                dst[xx] = src[xx / 2];
        }
}

int tb_unet_forward(struct tb_diffusion *m, const float *x, const float *t, const float *ctx,
                    const float *pooled, int B, float *out, char *err, size_t errlen)
{
    const struct tb_darch *a = m->arch;
    struct unet_state *st = state(m);
    float *cur, *nxt;
    int c = a->latent_channels, ns = 0, G = a->groups;

    if (!st)
        return tb_err(err, errlen, "UNet engine not set up");
    if (B < 1 || B > m->max_batch)
        return tb_err(err, errlen, "batch %d outside 1..%d", B, m->max_batch);
    cur = st->cur;
    nxt = st->nxt;
    time_embedding(st, a, t, pooled, B);
    for (int i = 0; i < st->npieces; i++) {
        const struct piece *p = &st->pieces[i];
        int H = m->lat_h >> p->level, W = m->lat_w >> p->level, lo = p->level;
        size_t HW = (size_t)H * W;
        switch (p->kind) {
        case PIECE_CONV_IN:
            conv2d(st, cur, x, &p->c1, B, H, W, 1, NULL);
            break;
        case PIECE_RESNET: {
            const float *in = cur;
            if (p->cat) { /* [current | skip] per image */
                const float *skip = st->stack[--ns];
                size_t n1 = (size_t)c * HW, n2 = (size_t)(p->ci - c) * HW;
                for (int b = 0; b < B; b++) {
                    memcpy(st->cat + b * (n1 + n2), cur + b * n1, n1 * sizeof *cur);
                    memcpy(st->cat + b * (n1 + n2) + n1, skip + b * n2, n2 * sizeof *cur);
                }
                in = st->cat;
            }
            resnet_fwd(st, p, nxt, in, B, H, W, G);
            break;
        }
        case PIECE_TRANSFORMER:
            transformer_fwd(st, a, p, cur, ctx, B, (int)HW);
            break;
        case PIECE_DOWN:
            conv2d(st, nxt, cur, &p->c1, B, H, W, 2, NULL);
            lo = p->level + 1;
            break;
        case PIECE_UP:
            upsample2(st->nrm, cur, (size_t)B * c, H, W);
            conv2d(st, nxt, st->nrm, &p->c1, B, 2 * H, 2 * W, 1, NULL);
            lo = p->level - 1;
            break;
        case PIECE_CONV_OUT:
            group_norm(st->nrm, cur, &p->n1, B, c, HW, G, true);
            conv2d(st, out, st->nrm, &p->c1, B, H, W, 1, NULL);
            break;
        }
        if (p->kind == PIECE_RESNET || p->kind == PIECE_DOWN || p->kind == PIECE_UP) {
            float *tmp = cur;
            cur = nxt;
            nxt = tmp;
        }
        c = p->co;
        if (p->push) {
            memcpy(p->skip, cur, (size_t)B * c * level_hw(m, lo) * sizeof *cur);
            st->stack[ns++] = p->skip;
        }
    }
    return 0;
}

/* ---- reference ----
 * Double precision, one image at a time, direct convolutions, one output at a time. It
 * walks the architecture with its own loops (as harness/tb_darch.h describes it) and
 * takes each piece's parameters in turn, checking that the piece is the one it expects,
 * so a layout that disagrees with the structure fails here rather than matching itself. */

struct ref_cursor {
    const struct unet_state *st;
    int next;
    bool bad;
};

static const struct piece *ref_take(struct ref_cursor *cu, enum piece_kind kind, int ci, int co,
                                    int depth)
{
    const struct piece *p = cu->next < cu->st->npieces ? &cu->st->pieces[cu->next++] : NULL;
    if (!p || p->kind != kind || p->ci != ci || p->co != co || p->depth != depth) {
        cu->bad = true;
        return NULL;
    }
    return p;
}

static double ref_silu(double v)
{
    return v / (1.0 + exp(-v));
}

/* out[o] = sum_i w[o, i] x[i] + b[o] */
static void ref_lin(double *out, const float *w, const float *b, const double *x, int in, int outd)
{
    for (int o = 0; o < outd; o++) {
        double s = b ? b[o] : 0.0;
        for (int i = 0; i < in; i++)
            s += (double)w[(size_t)o * in + i] * x[i];
        out[o] = s;
    }
}

/* Direct convolution, padding k / 2: out [co, Ho, Wo] from in [ci, H, W]. */
static double *ref_conv(const double *in, int H, int W, const struct conv *cv, int s)
{
    int k = cv->k, pad = k / 2, Ho = (H + 2 * pad - k) / s + 1, Wo = (W + 2 * pad - k) / s + 1;
    double *out = tb_alloc_array((size_t)cv->co * Ho * Wo, sizeof *out);
    if (!out)
        return NULL;
    for (int o = 0; o < cv->co; o++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++) {
                double sum = cv->b[o];
                for (int c = 0; c < cv->ci; c++)
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            int iy = oy * s + ky - pad, ix = ox * s + kx - pad;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                continue;
                            sum += (double)cv->w[(((size_t)o * cv->ci + c) * k + ky) * k + kx] *
                                   in[((size_t)c * H + iy) * W + ix];
                        }
                out[((size_t)o * Ho + oy) * Wo + ox] = sum;
            }
    return out;
}

/* out [C, HW] = GroupNorm(x) (then SiLU when act); out may be x. */
static void ref_group_norm(double *out, const double *x, const struct norm *n, int C, size_t HW,
                           int G, bool act)
{
    int cpg = C / G;
    for (int g = 0; g < G; g++) {
        double mean = 0, var = 0;
        size_t cnt = (size_t)cpg * HW;
        for (int c = g * cpg; c < (g + 1) * cpg; c++)
            for (size_t i = 0; i < HW; i++)
                mean += x[(size_t)c * HW + i];
        mean /= (double)cnt;
        for (int c = g * cpg; c < (g + 1) * cpg; c++)
            for (size_t i = 0; i < HW; i++)
                var += (x[(size_t)c * HW + i] - mean) * (x[(size_t)c * HW + i] - mean);
        var /= (double)cnt;
        for (int c = g * cpg; c < (g + 1) * cpg; c++)
            for (size_t i = 0; i < HW; i++) {
                double v = (x[(size_t)c * HW + i] - mean) / sqrt(var + GN_EPS) * n->w[c] + n->b[c];
                out[(size_t)c * HW + i] = act ? ref_silu(v) : v;
            }
    }
}

static void ref_layer_norm(double *out, const double *x, const struct norm *n, int C)
{
    double mean = 0, var = 0;
    for (int c = 0; c < C; c++)
        mean += x[c];
    mean /= C;
    for (int c = 0; c < C; c++)
        var += (x[c] - mean) * (x[c] - mean);
    var /= C;
    for (int c = 0; c < C; c++)
        out[c] = (x[c] - mean) / sqrt(var + LN_EPS) * n->w[c] + n->b[c];
}

/* ResNet of one image: a new [co, H, W] from in [ci, H, W], or NULL (out of memory). */
static double *ref_resnet(const double *in, int H, int W, const struct piece *p,
                          const double *tsilu, int G, int Te)
{
    size_t HW = (size_t)H * W;
    double *n1 = tb_alloc_array((size_t)p->ci * HW, sizeof *n1), *h = NULL, *out = NULL;
    double *tp = tb_alloc_array((size_t)p->co, sizeof *tp);
    if (!n1 || !tp)
        goto out;
    ref_group_norm(n1, in, &p->n1, p->ci, HW, G, true);
    if (!(h = ref_conv(n1, H, W, &p->c1, 1)))
        goto out;
    ref_lin(tp, p->temb.w, p->temb.b, tsilu, Te, p->co);
    for (int c = 0; c < p->co; c++)
        for (size_t i = 0; i < HW; i++)
            h[(size_t)c * HW + i] += tp[c];
    ref_group_norm(h, h, &p->n2, p->co, HW, G, true);
    if (!(out = ref_conv(h, H, W, &p->c2, 1)))
        goto out;
    for (int o = 0; o < p->co; o++)
        for (size_t i = 0; i < HW; i++) {
            double r;
            if (p->ci == p->co) {
                r = in[(size_t)o * HW + i];
            } else {
                r = p->sc.b[o];
                for (int c = 0; c < p->ci; c++)
                    r += (double)p->sc.w[(size_t)o * p->ci + c] * in[(size_t)c * HW + i];
            }
            out[(size_t)o * HW + i] += r;
        }
out:
    free(n1);
    free(tp);
    free(h);
    return out;
}

/* Attention of one image, head by head: y [Nq, C] from q [Nq, C], k and v [Nk, C]. */
/* tok[n] += o(y[n]) for the N tokens: an attention output projection and its residual. */
static void ref_project_add(double *tok, double *tmp, const struct lin *o, const double *y, int N,
                            int C)
{
    for (int n = 0; n < N; n++) {
        ref_lin(tmp, o->w, o->b, y + (size_t)n * C, C, C);
        for (int c = 0; c < C; c++)
            tok[(size_t)n * C + c] += tmp[c];
    }
}

static void ref_attention(double *y, const double *q, const double *k, const double *v, int Nq,
                          int Nk, int C, int HD, double *sc)
{
    for (int h = 0; h < C / HD; h++)
        for (int i = 0; i < Nq; i++) {
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < Nk; j++) {
                double d = 0;
                for (int e = 0; e < HD; e++)
                    d += q[(size_t)i * C + h * HD + e] * k[(size_t)j * C + h * HD + e];
                sc[j] = d / sqrt((double)HD);
                mx = sc[j] > mx ? sc[j] : mx;
            }
            for (int j = 0; j < Nk; j++) {
                sc[j] = exp(sc[j] - mx);
                sum += sc[j];
            }
            for (int e = 0; e < HD; e++) {
                double o = 0;
                for (int j = 0; j < Nk; j++)
                    o += sc[j] / sum * v[(size_t)j * C + h * HD + e];
                y[(size_t)i * C + h * HD + e] = o;
            }
        }
}

/* x [C, N] += transformer(x) for one image with context ctx [S, Dc]. Returns 0 or -1
 * (out of memory). */
static int ref_transformer(double *x, int N, const struct piece *p, const struct tb_darch *a,
                           const double *ctx)
{
    int C = p->co, S = a->text_tokens, Dc = a->context_dim, HD = a->head_dim;
    int F = 4 * C, mx = N > S ? N : S;
    size_t NC = (size_t)N * C;
    double *hn = tb_alloc_array(NC, sizeof *hn), *tok = tb_alloc_array(NC, sizeof *tok);
    double *ln = tb_alloc_array(NC, sizeof *ln), *q = tb_alloc_array(NC, sizeof *q);
    double *k = tb_alloc_array((size_t)mx * C, sizeof *k);
    double *v = tb_alloc_array((size_t)mx * C, sizeof *v);
    double *y = tb_alloc_array(NC, sizeof *y), *tmp = tb_alloc_array((size_t)2 * F, sizeof *tmp);
    double *sc = tb_alloc_array((size_t)mx, sizeof *sc),
           *col = tb_alloc_array((size_t)C, sizeof *col);
    int rc = -1;

    if (!hn || !tok || !ln || !q || !k || !v || !y || !tmp || !sc || !col)
        goto out;
    ref_group_norm(hn, x, &p->n1, C, (size_t)N, a->groups, false);
    for (int n = 0; n < N; n++) { /* token n: channel column n of the norm */
        for (int c = 0; c < C; c++)
            col[c] = hn[(size_t)c * N + n];
        ref_lin(tok + (size_t)n * C, p->pin.w, p->pin.b, col, C, C);
    }
    for (int d = 0; d < p->depth; d++) {
        const struct tblock *bk = &p->blocks[d];
        for (int n = 0; n < N; n++) {
            ref_layer_norm(ln + (size_t)n * C, tok + (size_t)n * C, &bk->ln1, C);
            ref_lin(q + (size_t)n * C, bk->wq, NULL, ln + (size_t)n * C, C, C);
            ref_lin(k + (size_t)n * C, bk->wk, NULL, ln + (size_t)n * C, C, C);
            ref_lin(v + (size_t)n * C, bk->wv, NULL, ln + (size_t)n * C, C, C);
        }
        ref_attention(y, q, k, v, N, N, C, HD, sc);
        ref_project_add(tok, tmp, &bk->ao, y, N, C);
        for (int n = 0; n < N; n++) {
            ref_layer_norm(ln + (size_t)n * C, tok + (size_t)n * C, &bk->ln2, C);
            ref_lin(q + (size_t)n * C, bk->wq2, NULL, ln + (size_t)n * C, C, C);
        }
        for (int s = 0; s < S; s++) {
            ref_lin(k + (size_t)s * C, bk->wk2, NULL, ctx + (size_t)s * Dc, Dc, C);
            ref_lin(v + (size_t)s * C, bk->wv2, NULL, ctx + (size_t)s * Dc, Dc, C);
        }
        ref_attention(y, q, k, v, N, S, C, HD, sc);
        ref_project_add(tok, tmp, &bk->co, y, N, C);
        for (int n = 0; n < N; n++) {
            double *tn = tok + (size_t)n * C;
            ref_layer_norm(ln + (size_t)n * C, tn, &bk->ln3, C);
            ref_lin(tmp, bk->ff1.w, bk->ff1.b, ln + (size_t)n * C, C, 2 * F);
            for (int j = 0; j < F; j++) { /* value * GELU(gate) */
                double g = tmp[F + j];
                tmp[j] *= 0.5 * g * (1.0 + erf(g / sqrt(2.0)));
            }
            for (int c = 0; c < C; c++) {
                double s = bk->ff2.b[c];
                for (int j = 0; j < F; j++)
                    s += (double)bk->ff2.w[(size_t)c * F + j] * tmp[j];
                tn[c] += s;
            }
        }
    }
    for (int n = 0; n < N; n++) {
        ref_lin(col, p->pout.w, p->pout.b, tok + (size_t)n * C, C, C);
        for (int c = 0; c < C; c++)
            x[(size_t)c * N + n] += col[c];
    }
    rc = 0;
out:
    free(hn);
    free(tok);
    free(ln);
    free(q);
    free(k);
    free(v);
    free(y);
    free(tmp);
    free(sc);
    free(col);
    return rc;
}

/* SiLU(temb) of one image. */
static int ref_temb(const struct unet_state *st, const struct tb_darch *a, double t,
                    const float *pooled, double *tsilu)
{
    int Tp = a->time_proj_dim, half = Tp / 2, Te = a->time_embed_dim, Da = a->add_in_dim;
    int n = Tp > Da ? Tp : Da;
    double *f = calloc((size_t)n, sizeof *f), *h = tb_alloc_array((size_t)Te, sizeof *h);
    double *e = tb_alloc_array((size_t)Te, sizeof *e), *e2 = tb_alloc_array((size_t)Te, sizeof *e2);
    int rc = -1;
    if (!f || !h || !e || !e2)
        goto out;
    for (int i = 0; i < half; i++) {
        double freq = exp(-log(10000.0) * i / half);
        f[i] = cos(1000.0 * t * freq);
        f[half + i] = sin(1000.0 * t * freq);
    }
    ref_lin(h, st->t1.w, st->t1.b, f, Tp, Te);
    for (int i = 0; i < Te; i++)
        h[i] = ref_silu(h[i]);
    ref_lin(e, st->t2.w, st->t2.b, h, Te, Te);
    if (Da > 0) {
        for (int i = 0; i < Da; i++)
            f[i] = i < a->pooled_dim ? pooled[i] : 0.0;
        ref_lin(h, st->a1.w, st->a1.b, f, Da, Te);
        for (int i = 0; i < Te; i++)
            h[i] = ref_silu(h[i]);
        ref_lin(e2, st->a2.w, st->a2.b, h, Te, Te);
        for (int i = 0; i < Te; i++)
            e[i] += e2[i];
    }
    for (int i = 0; i < Te; i++)
        tsilu[i] = ref_silu(e[i]);
    rc = 0;
out:
    free(f);
    free(h);
    free(e);
    free(e2);
    return rc;
}

int tb_unet_reference(const struct tb_diffusion *m, const float *x, const float *t,
                      const float *ctx, const float *pooled, int B, double *out, char *err,
                      size_t errlen)
{
    const struct tb_darch *a = m->arch;
    const struct unet_state *st = state(m);
    int L, Cl, S, Dc, Te, G, nskip = 0;
    double **skips = NULL, *cur = NULL, *nx = NULL, *tsilu = NULL, *cx = NULL;
    int *skipc = NULL;
    int rc = -1;

    if (!st)
        return tb_err(err, errlen, "reference: UNet engine not set up");
    if (B < 1 || B > m->max_batch)
        return tb_err(err, errlen, "reference: batch %d outside 1..%d", B, m->max_batch);
    L = a->nlevels;
    Cl = a->latent_channels;
    S = a->text_tokens;
    Dc = a->context_dim;
    Te = a->time_embed_dim;
    G = a->groups;
    skips = calloc((size_t)st->maxskips, sizeof *skips);
    skipc = calloc((size_t)st->maxskips, sizeof *skipc);
    tsilu = tb_alloc_array((size_t)Te, sizeof *tsilu);
    cx = tb_alloc_array((size_t)S * Dc, sizeof *cx);
    if (!skips || !skipc || !tsilu || !cx)
        goto oom;

    for (int b = 0; b < B; b++) {
        struct ref_cursor cu = {st, 0, false};
        const struct piece *p;
        int H = m->lat_h, W = m->lat_w, c = a->ch[0];
        size_t img = (size_t)Cl * H * W;
        double *in;

        if (!(p = ref_take(&cu, PIECE_CONV_IN, Cl, c, 0)))
            goto bad;
        if (ref_temb(st, a, t[b], pooled + (size_t)b * a->pooled_dim, tsilu) != 0)
            goto oom;
        for (size_t i = 0; i < (size_t)S * Dc; i++)
            cx[i] = ctx[(size_t)b * S * Dc + i];
        if (!(in = tb_alloc_array(img, sizeof *in)))
            goto oom;
        for (size_t i = 0; i < img; i++)
            in[i] = x[(size_t)b * img + i];

/* the current activation becomes nx (when nx is set) */
#define REF_NEXT()                                                                                 \
    do {                                                                                           \
        if (!nx)                                                                                   \
            goto oom;                                                                              \
        free(cur);                                                                                 \
        cur = nx;                                                                                  \
        nx = NULL;                                                                                 \
    } while (0)
#define REF_PIECE(kind, ci, co, depth)                                                             \
    do {                                                                                           \
        if (!(p = ref_take(&cu, kind, ci, co, depth)))                                             \
            goto bad;                                                                              \
    } while (0)
#define REF_PUSH()                                                                                 \
    do {                                                                                           \
        size_t n_ = (size_t)c * H * W;                                                             \
        if (!(skips[nskip] = tb_alloc_array(n_, sizeof *cur)))                                     \
            goto oom;                                                                              \
        memcpy(skips[nskip], cur, n_ * sizeof *cur);                                               \
        skipc[nskip++] = c;                                                                        \
    } while (0)

        nx = ref_conv(in, H, W, &p->c1, 1);
        free(in);
        REF_NEXT();
        REF_PUSH();
        for (int l = 0; l < L; l++) { /* down */
            for (int i = 0; i < a->layers_per_block; i++) {
                REF_PIECE(PIECE_RESNET, c, a->ch[l], 0);
                nx = ref_resnet(cur, H, W, p, tsilu, G, Te);
                REF_NEXT();
                c = a->ch[l];
                if (a->depth[l] > 0) {
                    REF_PIECE(PIECE_TRANSFORMER, c, c, a->depth[l]);
                    if (ref_transformer(cur, H * W, p, a, cx) != 0)
                        goto oom;
                }
                REF_PUSH();
            }
            if (l < L - 1) {
                REF_PIECE(PIECE_DOWN, c, c, 0);
                nx = ref_conv(cur, H, W, &p->c1, 2);
                REF_NEXT();
                H /= 2;
                W /= 2;
                REF_PUSH();
            }
        }
        REF_PIECE(PIECE_RESNET, c, c, 0); /* mid */
        nx = ref_resnet(cur, H, W, p, tsilu, G, Te);
        REF_NEXT();
        REF_PIECE(PIECE_TRANSFORMER, c, c, a->depth[L - 1]);
        if (ref_transformer(cur, H * W, p, a, cx) != 0)
            goto oom;
        REF_PIECE(PIECE_RESNET, c, c, 0);
        nx = ref_resnet(cur, H, W, p, tsilu, G, Te);
        REF_NEXT();
        for (int l = L - 1; l >= 0; l--) { /* up */
            for (int i = 0; i < a->layers_per_block + 1; i++) {
                size_t HW = (size_t)H * W;
                int cs = skipc[--nskip];
                double *cat = tb_alloc_array((size_t)(c + cs) * HW, sizeof *cat);
                if (!cat)
                    goto oom;
                memcpy(cat, cur, (size_t)c * HW * sizeof *cat);
                memcpy(cat + (size_t)c * HW, skips[nskip], (size_t)cs * HW * sizeof *cat);
                free(skips[nskip]);
                skips[nskip] = NULL;
                free(cur);
                cur = cat;
                REF_PIECE(PIECE_RESNET, c + cs, a->ch[l], 0);
                nx = ref_resnet(cur, H, W, p, tsilu, G, Te);
                REF_NEXT();
                c = a->ch[l];
                if (a->depth[l] > 0) {
                    REF_PIECE(PIECE_TRANSFORMER, c, c, a->depth[l]);
                    if (ref_transformer(cur, H * W, p, a, cx) != 0)
                        goto oom;
                }
            }
            if (l > 0) {
                double *up;
                REF_PIECE(PIECE_UP, c, c, 0);
                if (!(up = tb_alloc_array((size_t)c * 4 * H * W, sizeof *up)))
                    goto oom;
                for (int ch = 0; ch < c; ch++)
                    for (int yy = 0; yy < 2 * H; yy++)
                        for (int xx = 0; xx < 2 * W; xx++)
                            up[((size_t)ch * 2 * H + yy) * 2 * W + xx] =
                                cur[((size_t)ch * H + yy / 2) * W + xx / 2];
                H *= 2;
                W *= 2;
                nx = ref_conv(up, H, W, &p->c1, 1);
                free(up);
                REF_NEXT();
            }
        }
        REF_PIECE(PIECE_CONV_OUT, c, Cl, 0);
        ref_group_norm(cur, cur, &p->n1, c, (size_t)H * W, G, true);
        nx = ref_conv(cur, H, W, &p->c1, 1);
        REF_NEXT();
        if (cu.next != st->npieces || nskip != 0)
            goto bad;
        memcpy(out + (size_t)b * img, cur, img * sizeof *out);
        free(cur);
        cur = NULL;
#undef REF_NEXT
#undef REF_PIECE
#undef REF_PUSH
    }
    rc = 0;
    goto out;
bad:
    tb_err(err, errlen, "reference: the UNet's parameter layout disagrees with '%s'", a->name);
    goto out;
oom:
    tb_err(err, errlen, "reference: out of memory");
out:
    for (int i = 0; skips && i < st->maxskips; i++)
        free(skips[i]);
    free(skips);
    free(skipc);
    free(cur);
    free(nx);
    free(tsilu);
    free(cx);
    return rc;
}
