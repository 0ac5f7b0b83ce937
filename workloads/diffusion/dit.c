/*
 * workloads/diffusion/dit.c: the CPU diffusion transformers of diffusion.h, for
 * TB_DARCH_MMDIT (SD3.5: joint blocks, the last one "context pre-only", a learned
 * position grid) and TB_DARCH_FLUX (double-stream blocks with 2-D RoPE, then
 * single-stream blocks, a guidance embedding). The layers are exactly those that
 * harness/tb_darch.c's dit_params counts. fp32, row-major; every linear layer and both
 * attention products go through cblas_sgemm. A plain double-precision reference with
 * its own loops and its own data layout sits at the end, for the tests.
 *
 * Shape legend (diffusion.h's, plus):
 *   D   hidden width, NH heads, HD head dim (D = NH HD), F = mlp_ratio D
 *   p   patch side; PP = Cl p p, one patch vector (index c p p + i p + j)
 *   Hp x Wp = H/p x W/p token grid; N = Hp Wp image tokens in row-major order
 *   T   = S + N joint tokens: an image's S context tokens, then its N image tokens
 *   BM  = max_batch
 *   QW  = width of a row of the projection buffer: 3D (q | k | v) in double blocks,
 *         3D + F (q | k | v | MLP input) in FLUX single blocks
 *   UW  = D + F: attention output | MLP activation (the input of a single block's
 *         second linear)
 *
 * Every token buffer is [BM, T, width], image b's rows at b T .. b T + T - 1, context
 * rows first, so the single blocks and the joint attention see one contiguous sequence
 * per image; a per-stream layer of a double block runs once per image on its rows.
 *
 * Linear layers store W as [out, in] and compute y = x W^T + b. Modulation vectors come
 * in the order of the reference models: adaLN-Zero (6 D) shift1 scale1 gate1 shift2
 * scale2 gate2; the pre-only context norm and the final norm (AdaLN-Continuous, 2 D)
 * scale shift; single blocks (3 D) shift scale gate. LayerNorms have no affine weights
 * and eps 1e-6, as do the per-head RMSNorms on q and k (weights of HD).
 *
 * FLUX's RoPE: head_dim splits into axes a0, a1, a2 with a1 = a2 = the largest even
 * number <= 7 HD / 16 and a0 = HD - 2 a1 (16, 56, 56 for HD 128); image token (row, col)
 * has ids (0, row, col), text tokens (0, 0, 0), which leaves them unrotated; within an
 * axis the pair (2i, 2i+1) turns by id theta^(-2i / a) with theta 10000.
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

#define ATT_BLOCK  256   /* query rows per block of attention scores */
#define LANES      8     /* accumulators of the vectorisable reductions */
#define NORM_EPS   1e-6f /* LayerNorm and RMSNorm */
#define ROPE_THETA 10000.0
#define WEIGHT_SD  0.02f

/* ---- engine state ---- */

/* One stream (image or context) of a double block. */
struct dit_stream {
    float *mod_w, *mod_b;   /* [6D, D], [6D]; [2D, D], [2D] for a pre-only context */
    float *qkv_w, *qkv_b;   /* [3D, D], [3D]: q, k, v projections stacked */
    float *q_norm, *k_norm; /* [HD] each; NULL without qk_norm */
    float *out_w, *out_b;   /* [D, D], [D]; NULL for a pre-only context */
    float *fc1_w, *fc1_b;   /* [F, D], [F]; NULL for a pre-only context */
    float *fc2_w, *fc2_b;   /* [D, F], [D]; NULL for a pre-only context */
};

struct dit_double {
    struct dit_stream img, ctx;
    bool pre_only; /* MMDiT's last block: the context stream only feeds q, k, v */
};

struct dit_single {
    float *mod_w, *mod_b;   /* [3D, D], [3D] */
    float *lin1_w, *lin1_b; /* [3D + F, D], [3D + F] */
    float *q_norm, *k_norm; /* [HD] each; NULL without qk_norm */
    float *lin2_w, *lin2_b; /* [D, D + F], [D] */
};

struct dit_state {
    /* weights: pointers into m->params, in this order */
    float *patch_w, *patch_b; /* [D, PP], [D] */
    float *pos;               /* [M, M, D] learned grid (M = pos_embed_max) or NULL */
    float *t1_w, *t1_b;       /* timestep MLP: [D, TP], [D] */
    float *t2_w, *t2_b;       /* [D, D], [D] */
    float *y1_w, *y1_b;       /* pooled-text MLP: [D, Dp], [D] */
    float *y2_w, *y2_b;       /* [D, D], [D] */
    float *g1_w, *g1_b;       /* guidance MLP (guidance_embed) or NULL: [D, TP], [D] */
    float *g2_w, *g2_b;       /* [D, D], [D] */
    float *ctx_w, *ctx_b;     /* context embedder: [D, Dc], [D] */
    struct dit_double *dbl;   /* owned: [dit_depth] */
    struct dit_single *sgl;   /* owned: [single_depth] (NULL when none) */
    float *fmod_w, *fmod_b;   /* final AdaLN-Continuous: [2D, D], [2D] */
    float *fout_w, *fout_b;   /* [PP, D], [PP] */

    /* shape */
    int D, NH, HD, F, Cl, p, PP, Hp, Wp, N, S, T, QW, UW;
    int pos_top, pos_left; /* the crop of the position grid */

    /* activations: one owned arena, everything below points into it */
    float *act;
    size_t act_floats;
    float *x;       /* [BM, T, D] residual stream */
    float *h;       /* [BM, T, D] modulated LayerNorm output */
    float *qkv;     /* [BM, T, QW] projections */
    float *u;       /* [BM, T, max(UW, F)] attention output (row width D or UW), MLP hidden */
    float *o;       /* [BM, T, D] output of a projection before its gated residual */
    float *scores;  /* [min(T, ATT_BLOCK), T] one block of attention probabilities */
    float *patches; /* [BM, N, PP] patch vectors in, and the final projection out */
    float *feat;    /* [BM, TP] sinusoidal features */
    float *c;       /* [BM, D] conditioning vector */
    float *sc;      /* [BM, D] SiLU(c), the input of every modulation linear */
    float *tmp;     /* [BM, D] hidden layer of the conditioning MLPs */
    float *mod_img; /* [BM, 6D] modulation of the image stream (or of all tokens) */
    float *mod_ctx; /* [BM, 6D] modulation of the context stream */
    float *rope_cos, *rope_sin; /* [N, HD/2] per image token and pair (FLUX) or NULL */
};

static struct dit_state *state(const struct tb_diffusion *m)
{
    return (struct dit_state *)m->priv;
}

/* Row r of image b in a token buffer of row width w. */
static float *tok(const struct dit_state *st, float *buf, int b, int r, int w)
{
    return buf + ((size_t)b * st->T + (size_t)r) * (size_t)w;
}

/* a1 of FLUX's RoPE axes (a0 = HD - 2 a1, a2 = a1). */
static int rope_axis(int HD)
{
    return (7 * HD / 16) & ~1;
}

/* ---- sizes and random weights ---- */

/* Saturating size arithmetic: an impossible request becomes SIZE_MAX and fails to
 * allocate with a message. */
static size_t sat_mul(size_t a, size_t b)
{
    return (b != 0 && a > SIZE_MAX / b) ? SIZE_MAX : a * b;
}

static size_t sat_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* 2 NB normal draws N(0, sd^2) from the counters ctr .. ctr + NB - 1 of stream key:
 * Box-Muller on the 64 bits of tb_dk_mix64(key + counter * golden ratio), with the libm calls
 * replaced by short series so that the loop vectorises (drawing FLUX.1-dev's 12
 * billion weights with libm's log, sqrt, cos and sin takes minutes):
 *   radius sqrt(-2 ln u), u in (0, 1] from bits 40..63: ln u = e ln2 + 2 atanh s with
 *     u = 2^e m, m in [sqrt(1/2), sqrt 2), s = (m - 1) / (m + 1), |s| < 0.172, series
 *     to s^9; the square root from Newton steps on 1/sqrt;
 *   angle q pi/2 + phi, quadrant q from bits 38..39, phi in [-pi/4, pi/4) from bits
 *     10..31, sin and cos from their Taylor series to phi^9 and phi^10.
 * The errors (about 1e-7) are far below what the 24-bit u resolves. */
#define NB 16
static void normal_block(float *restrict out, uint64_t key, uint64_t ctr, float sd)
{
    float r[NB], cs[NB], sn[NB];
    for (int j = 0; j < NB; j++) {
        uint64_t z = tb_dk_mix64(key + (ctr + (uint64_t)j) * 0x9e3779b97f4a7c15ULL);
        float u = (float)((uint32_t)(z >> 40) + 1u) * 0x1.0p-24f, m;
        uint32_t bits, mb;
        memcpy(&bits, &u, sizeof bits);
        int32_t e = (int32_t)(bits >> 23) - 127;
        mb = (bits & 0x007fffffu) | 0x3f800000u;
        memcpy(&m, &mb, sizeof m);
        int big = m > 1.41421356f;
        m = big ? 0.5f * m : m;
        e = big ? e + 1 : e;
        float s = (m - 1.0f) / (m + 1.0f), s2 = s * s, at = 1.0f / 9;
        at = at * s2 + 1.0f / 7;
        at = at * s2 + 1.0f / 5;
        at = at * s2 + 1.0f / 3;
        at = at * s2 + 1.0f;
        float r2 = -2.0f * (2.0f * s * at + (float)e * 0.693147181f), y; /* -2 ln u >= 0 */
        uint32_t yb;
        memcpy(&yb, &r2, sizeof yb);
        yb = 0x5f3759dfu - (yb >> 1); /* 1/sqrt(r2) to 4 %, then three Newton steps */
        memcpy(&y, &yb, sizeof y);
        y = y * (1.5f - 0.5f * r2 * y * y);
        y = y * (1.5f - 0.5f * r2 * y * y);
        y = y * (1.5f - 0.5f * r2 * y * y);
        r[j] = sd * r2 * y;
        uint32_t q = (uint32_t)(z >> 38) & 3u;
        float phi = ((float)((uint32_t)z >> 10) * 0x1.0p-22f - 0.5f) * 1.57079633f;
        float p2 = phi * phi, sv = 1.0f / 362880, cv = -1.0f / 3628800;
        sv = sv * p2 - 1.0f / 5040;
        sv = sv * p2 + 1.0f / 120;
        sv = sv * p2 - 1.0f / 6;
        sv = (sv * p2 + 1.0f) * phi;
        cv = cv * p2 + 1.0f / 40320;
        cv = cv * p2 - 1.0f / 720;
        cv = cv * p2 + 1.0f / 24;
        cv = cv * p2 - 0.5f;
        cv = cv * p2 + 1.0f;
        float c1 = (q & 1u) ? -sv : cv, s1 = (q & 1u) ? cv : sv; /* turn by q quarters */
        cs[j] = (q & 2u) ? -c1 : c1;
        sn[j] = (q & 2u) ? -s1 : s1;
    }
    for (int j = 0; j < NB; j++) {
        out[j] = r[j] * cs[j];
        out[NB + j] = r[j] * sn[j];
    }
}

/* p[0..n) = N(0, sd^2) draws of stream key. */
static void fill_normal(float *p, size_t n, uint64_t key, float sd)
{
    size_t i = 0;
    uint64_t ctr = 0;
    for (; i + 2 * NB <= n; i += 2 * NB, ctr += NB)
        normal_block(p + i, key, ctr, sd);
    if (i < n) {
        float tail[2 * NB];
        normal_block(tail, key, ctr, sd);
        memcpy(p + i, tail, (n - i) * sizeof *p);
    }
}

/* Hands out consecutive pieces of an arena. Pass 1 (base NULL) only counts; pass 2
 * points into base and fills parameters as it goes, each weight tensor from its own
 * stream: the seed mixed with the tensor's place in the layout. */
struct arena {
    float *base;
    size_t used;     /* floats */
    size_t align;    /* floats each piece is rounded up to (1 for parameters) */
    uint64_t seed;   /* weight draws */
    uint64_t tensor; /* weight tensors handed out so far */
};

enum fill { FILL_NONE, FILL_WEIGHT, FILL_ZERO, FILL_ONE };

static float *take(struct arena *a, size_t n, enum fill f)
{
    float *p = (a->base && a->used != SIZE_MAX) ? a->base + a->used : NULL;
    a->used = sat_add(a->used, sat_mul(sat_add(n, a->align - 1) / a->align, a->align));
    if (f == FILL_WEIGHT)
        a->tensor++;
    if (p && f == FILL_WEIGHT)
        fill_normal(p, n, tb_dk_mix64(a->seed ^ tb_dk_mix64(a->tensor)), WEIGHT_SD);
    else if (p && f != FILL_NONE)
        for (size_t i = 0; i < n; i++)
            p[i] = f == FILL_ONE ? 1.0f : 0.0f;
    return p;
}

/* A linear layer from in to out features: weight [out, in], zero bias [out]. */
static void take_linear(struct arena *a, float **w, float **b, size_t in, size_t out)
{
    *w = take(a, sat_mul(in, out), FILL_WEIGHT);
    *b = take(a, out, FILL_ZERO);
}

/* Lay out (and in pass 2 draw) the parameters, as dit_params in harness/tb_darch.c
 * counts them. Returns the float count. */
static size_t layout_params(struct dit_state *st, const struct tb_darch *a, float *base,
                            uint64_t seed)
{
    struct arena ar = {base, 0, 1, seed, 0};
    size_t D = (size_t)a->hidden, HD = (size_t)a->head_dim, F = (size_t)a->mlp_ratio * D;
    size_t PP = (size_t)a->latent_channels * a->patch * a->patch, TP = (size_t)a->time_proj_dim;
    size_t M = (size_t)a->pos_embed_max;

    take_linear(&ar, &st->patch_w, &st->patch_b, PP, D);
    st->pos = M ? take(&ar, sat_mul(M * M, D), FILL_WEIGHT) : NULL;
    take_linear(&ar, &st->t1_w, &st->t1_b, TP, D);
    take_linear(&ar, &st->t2_w, &st->t2_b, D, D);
    take_linear(&ar, &st->y1_w, &st->y1_b, (size_t)a->pooled_dim, D);
    take_linear(&ar, &st->y2_w, &st->y2_b, D, D);
    if (a->guidance_embed) {
        take_linear(&ar, &st->g1_w, &st->g1_b, TP, D);
        take_linear(&ar, &st->g2_w, &st->g2_b, D, D);
    }
    take_linear(&ar, &st->ctx_w, &st->ctx_b, (size_t)a->context_dim, D);
    for (int l = 0; l < a->dit_depth; l++) {
        struct dit_double *w = &st->dbl[l];
        w->pre_only = a->kind == TB_DARCH_MMDIT && l == a->dit_depth - 1;
        for (int s = 0; s < 2; s++) {
            struct dit_stream *ws = s == 0 ? &w->img : &w->ctx;
            bool full = s == 0 || !w->pre_only;
            take_linear(&ar, &ws->mod_w, &ws->mod_b, D, (full ? 6 : 2) * D);
            take_linear(&ar, &ws->qkv_w, &ws->qkv_b, D, 3 * D);
            ws->q_norm = a->qk_norm ? take(&ar, HD, FILL_ONE) : NULL;
            ws->k_norm = a->qk_norm ? take(&ar, HD, FILL_ONE) : NULL;
            if (full) {
                take_linear(&ar, &ws->out_w, &ws->out_b, D, D);
                take_linear(&ar, &ws->fc1_w, &ws->fc1_b, D, F);
                take_linear(&ar, &ws->fc2_w, &ws->fc2_b, F, D);
            }
        }
    }
    for (int l = 0; l < a->single_depth; l++) {
        struct dit_single *w = &st->sgl[l];
        take_linear(&ar, &w->mod_w, &w->mod_b, D, 3 * D);
        take_linear(&ar, &w->lin1_w, &w->lin1_b, D, 3 * D + F);
        w->q_norm = a->qk_norm ? take(&ar, HD, FILL_ONE) : NULL;
        w->k_norm = a->qk_norm ? take(&ar, HD, FILL_ONE) : NULL;
        take_linear(&ar, &w->lin2_w, &w->lin2_b, D + F, D);
    }
    take_linear(&ar, &st->fmod_w, &st->fmod_b, D, 2 * D);
    take_linear(&ar, &st->fout_w, &st->fout_b, D, PP);
    return ar.used;
}

/* Lay out the activation arena for BM images (base NULL: count). Pieces start on
 * 64-byte boundaries. */
static size_t layout_acts(struct dit_state *st, const struct tb_darch *a, int BM, float *base)
{
    struct arena ar = {base, 0, 16, 0, 0};
    size_t rows = sat_mul((size_t)BM, (size_t)st->T), D = (size_t)st->D;
    size_t uw = (size_t)(st->UW > st->F ? st->UW : st->F);
    size_t blk = (size_t)(st->T < ATT_BLOCK ? st->T : ATT_BLOCK), half = (size_t)st->HD / 2;

    st->x = take(&ar, sat_mul(rows, D), FILL_NONE);
    st->h = take(&ar, sat_mul(rows, D), FILL_NONE);
    st->qkv = take(&ar, sat_mul(rows, (size_t)st->QW), FILL_NONE);
    st->u = take(&ar, sat_mul(rows, uw), FILL_NONE);
    st->o = take(&ar, sat_mul(rows, D), FILL_NONE);
    st->scores = take(&ar, sat_mul(blk, (size_t)st->T), FILL_NONE);
    st->patches = take(&ar, sat_mul(sat_mul((size_t)BM, (size_t)st->N), (size_t)st->PP), FILL_NONE);
    st->feat = take(&ar, sat_mul((size_t)BM, (size_t)a->time_proj_dim), FILL_NONE);
    st->c = take(&ar, sat_mul((size_t)BM, D), FILL_NONE);
    st->sc = take(&ar, sat_mul((size_t)BM, D), FILL_NONE);
    st->tmp = take(&ar, sat_mul((size_t)BM, D), FILL_NONE);
    st->mod_img = take(&ar, sat_mul((size_t)BM, 6 * D), FILL_NONE);
    st->mod_ctx = take(&ar, sat_mul((size_t)BM, 6 * D), FILL_NONE);
    if (a->kind == TB_DARCH_FLUX) {
        st->rope_cos = take(&ar, sat_mul((size_t)st->N, half), FILL_NONE);
        st->rope_sin = take(&ar, sat_mul((size_t)st->N, half), FILL_NONE);
    } else {
        st->rope_cos = st->rope_sin = NULL;
    }
    return ar.used;
}

/* cos and sin of every image token's RoPE angle per pair of a head. */
static void rope_init(struct dit_state *st)
{
    int half = st->HD / 2, a1 = rope_axis(st->HD), a0 = st->HD - 2 * a1;
    for (int n = 0; n < st->N; n++) {
        int row = n / st->Wp, col = n % st->Wp;
        for (int j = 0; j < half; j++) {
            double angle = 0; /* axis 0: id 0 */
            if (j >= a0 / 2 + a1 / 2)
                angle = col * pow(ROPE_THETA, -2.0 * (j - a0 / 2 - a1 / 2) / a1);
            else if (j >= a0 / 2)
                angle = row * pow(ROPE_THETA, -2.0 * (j - a0 / 2) / a1);
            st->rope_cos[(size_t)n * half + j] = (float)cos(angle);
            st->rope_sin[(size_t)n * half + j] = (float)sin(angle);
        }
    }
}

/* ---- lifecycle ---- */

static int check_shape(const struct tb_diffusion *m, char *err, size_t errlen)
{
    const struct tb_darch *a = m->arch;
    int Hp, Wp;
    if (a->kind != TB_DARCH_MMDIT && a->kind != TB_DARCH_FLUX)
        return tb_err(err, errlen, "model '%s': not a diffusion transformer", a->name);
    if (a->hidden < 1 || a->heads < 1 || a->head_dim < 1 || a->hidden != a->heads * a->head_dim ||
        a->patch < 1 || a->mlp_ratio < 1 || a->time_proj_dim < 1 || a->pooled_dim < 0 ||
        a->context_dim < 1 || a->text_tokens < 1 || a->dit_depth < 1 || a->single_depth < 0)
        return tb_err(err, errlen, "model '%s': bad transformer dimensions", a->name);
    if (a->kind == TB_DARCH_FLUX && a->head_dim % 2)
        return tb_err(err, errlen, "model '%s': head_dim %d is odd (RoPE rotates pairs)", a->name,
                      a->head_dim);
    if (m->lat_h % a->patch || m->lat_w % a->patch)
        return tb_err(err, errlen, "%s: latent size %dx%d is not a multiple of patch %d", a->name,
                      m->lat_h, m->lat_w, a->patch);
    Hp = m->lat_h / a->patch;
    Wp = m->lat_w / a->patch;
    if (a->pos_embed_max > 0 && (Hp > a->pos_embed_max || Wp > a->pos_embed_max))
        return tb_err(err, errlen,
                      "%s: latent size %dx%d gives a %dx%d token grid, larger than the "
                      "position grid of %dx%d",
                      a->name, m->lat_h, m->lat_w, Hp, Wp, a->pos_embed_max, a->pos_embed_max);
    return 0;
}

int tb_dit_init(struct tb_diffusion *m, uint64_t seed, char *err, size_t errlen)
{
    const struct tb_darch *a = m->arch;
    struct dit_state *st = NULL;
    int rc = -1;

    if (check_shape(m, err, errlen) != 0)
        return -1;
    st = calloc(1, sizeof *st);
    if (!st)
        return tb_err(err, errlen, "cannot allocate the engine state");
    m->priv = st;
    st->dbl = calloc((size_t)a->dit_depth, sizeof *st->dbl);
    st->sgl = a->single_depth ? calloc((size_t)a->single_depth, sizeof *st->sgl) : NULL;
    if (!st->dbl || (a->single_depth && !st->sgl)) {
        tb_err(err, errlen, "cannot allocate the engine state");
        goto out;
    }

    st->D = a->hidden;
    st->NH = a->heads;
    st->HD = a->head_dim;
    st->F = a->mlp_ratio * a->hidden;
    st->Cl = a->latent_channels;
    st->p = a->patch;
    st->PP = st->Cl * st->p * st->p;
    st->Hp = m->lat_h / st->p;
    st->Wp = m->lat_w / st->p;
    st->N = st->Hp * st->Wp;
    st->S = a->text_tokens;
    st->T = st->S + st->N;
    st->QW = 3 * st->D + (a->single_depth ? st->F : 0);
    st->UW = st->D + st->F;
    st->pos_top = (a->pos_embed_max - st->Hp) / 2;
    st->pos_left = (a->pos_embed_max - st->Wp) / 2;

    m->n_params = layout_params(st, a, NULL, seed);
    if (m->n_params == SIZE_MAX || !(m->params = tb_alloc_array(m->n_params, sizeof *m->params))) {
        tb_err(err, errlen, "%s: cannot allocate %zu parameters", a->name, m->n_params);
        goto out;
    }
    layout_params(st, a, m->params, seed);

    st->act_floats = layout_acts(st, a, m->max_batch, NULL);
    if (st->act_floats == SIZE_MAX ||
        !(st->act = tb_alloc_array(st->act_floats, sizeof *st->act))) {
        tb_err(err, errlen, "%s: cannot allocate activations for %d images of %dx%d", a->name,
               m->max_batch, m->lat_h, m->lat_w);
        goto out;
    }
    layout_acts(st, a, m->max_batch, st->act);
    if (st->rope_cos)
        rope_init(st);
    rc = 0;
out:
    if (rc != 0)
        tb_dit_release(m);
    return rc;
}

void tb_dit_release(struct tb_diffusion *m)
{
    struct dit_state *st = state(m);
    if (st) {
        free(st->act);
        free(st->dbl);
        free(st->sgl);
        free(st);
    }
    free(m->params);
    m->params = NULL;
    m->n_params = 0;
    m->priv = NULL;
}

/* ---- the parameter layout for other executors ---- */

/* Offset of p in the arena (NULL: TB_DLAYOUT_NONE). */
static size_t off(const struct tb_diffusion *m, const float *p)
{
    return p ? (size_t)(p - m->params) : TB_DLAYOUT_NONE;
}

static struct tb_dparam off2(const struct tb_diffusion *m, const float *w, const float *b)
{
    struct tb_dparam d = {off(m, w), off(m, b)};
    return d;
}

static void stream_layout(const struct tb_diffusion *m, const struct dit_stream *w,
                          struct tb_dstream *o)
{
    o->mod = off2(m, w->mod_w, w->mod_b);
    o->qkv = off2(m, w->qkv_w, w->qkv_b);
    o->out = off2(m, w->out_w, w->out_b);
    o->fc1 = off2(m, w->fc1_w, w->fc1_b);
    o->fc2 = off2(m, w->fc2_w, w->fc2_b);
    o->q_norm = off(m, w->q_norm);
    o->k_norm = off(m, w->k_norm);
}

/* The pointers layout_params handed out, as offsets: nothing laid out twice. */
int tb_dit_layout(const struct tb_diffusion *m, struct tb_dlayout *l, char *err, size_t errlen)
{
    const struct tb_darch *a = m->arch;
    const struct dit_state *st = state(m);

    memset(l, 0, sizeof *l);
    if (!st || !m->params)
        return tb_err(err, errlen, "DiT engine not set up");
    l->dbl = calloc((size_t)a->dit_depth, sizeof *l->dbl);
    l->sgl = calloc((size_t)(a->single_depth > 0 ? a->single_depth : 1), sizeof *l->sgl);
    if (!l->dbl || !l->sgl) {
        tb_dlayout_release(l);
        return tb_err(err, errlen, "out of memory for the DiT's layout");
    }
    l->n_params = m->n_params;
    l->t1 = off2(m, st->t1_w, st->t1_b);
    l->t2 = off2(m, st->t2_w, st->t2_b);
    l->a1.w = l->a1.b = l->a2.w = l->a2.b = TB_DLAYOUT_NONE;
    l->patch = off2(m, st->patch_w, st->patch_b);
    l->pos = off(m, st->pos);
    l->y1 = off2(m, st->y1_w, st->y1_b);
    l->y2 = off2(m, st->y2_w, st->y2_b);
    l->g1 = off2(m, st->g1_w, st->g1_b);
    l->g2 = off2(m, st->g2_w, st->g2_b);
    l->cemb = off2(m, st->ctx_w, st->ctx_b);
    l->fmod = off2(m, st->fmod_w, st->fmod_b);
    l->fout = off2(m, st->fout_w, st->fout_b);
    l->ndbl = a->dit_depth;
    for (int i = 0; i < a->dit_depth; i++) {
        stream_layout(m, &st->dbl[i].img, &l->dbl[i].img);
        stream_layout(m, &st->dbl[i].ctx, &l->dbl[i].ctx);
        l->dbl[i].pre_only = st->dbl[i].pre_only;
    }
    l->nsgl = a->single_depth;
    for (int i = 0; i < a->single_depth; i++) {
        const struct dit_single *w = &st->sgl[i];
        l->sgl[i].mod = off2(m, w->mod_w, w->mod_b);
        l->sgl[i].lin1 = off2(m, w->lin1_w, w->lin1_b);
        l->sgl[i].lin2 = off2(m, w->lin2_w, w->lin2_b);
        l->sgl[i].q_norm = off(m, w->q_norm);
        l->sgl[i].k_norm = off(m, w->k_norm);
    }
    return 0;
}

/* ---- kernels ---- */

/* GELU, tanh approximation: 0.5 x (1 + tanh u) = x / (1 + e^(-2u)),
 * u = sqrt(2/pi) (x + 0.044715 x^3). */
static inline float gelu_fast(float x)
{
    float u = 0.7978845608f * (x + 0.044715f * x * x * x);
    return x / (1.0f + tb_dk_expf(-2.0f * u));
}

static void silu(float *out, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] / (1.0f + tb_dk_expf(-x[i]));
}

/* out [M, outd] (row stride ldo) = x [M, in] (row stride ldx) W^T + b, or += when acc.
 * W is [outd, in]. in = 0 (no pooled input) leaves the bias alone. */
static void linear(float *out, int ldo, const float *x, int ldx, const float *w, const float *b,
                   int M, int in, int outd, bool acc)
{
    for (int r = 0; r < M; r++) {
        float *o = out + (size_t)r * ldo;
        if (acc)
            for (int j = 0; j < outd; j++)
                o[j] += b[j];
        else
            memcpy(o, b, (size_t)outd * sizeof *o);
    }
    if (in > 0)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, outd, in, 1.0f, x, ldx, w, in, 1.0f,
                    out, ldo);
}

/* out = LN(x) (1 + scale) + shift on n rows of D (row stride D): LayerNorm without
 * affine weights, two-pass variance. */
static void ln_modulate(float *restrict out, const float *restrict x, int n, int D,
                        const float *restrict shift, const float *restrict scale)
{
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * D;
        float *o = out + (size_t)r * D;
        float acc[LANES] = {0}, mean = 0, var = 0;
        int i = 0;
        for (; i + LANES <= D; i += LANES)
            for (int j = 0; j < LANES; j++)
                acc[j] += xr[i + j];
        for (int j = 0; j < LANES; j++)
            mean += acc[j];
        for (; i < D; i++)
            mean += xr[i];
        mean /= (float)D;
        for (int j = 0; j < LANES; j++)
            acc[j] = 0;
        for (i = 0; i + LANES <= D; i += LANES)
            for (int j = 0; j < LANES; j++)
                acc[j] += (xr[i + j] - mean) * (xr[i + j] - mean);
        for (int j = 0; j < LANES; j++)
            var += acc[j];
        for (; i < D; i++)
            var += (xr[i] - mean) * (xr[i] - mean);
        float rstd = 1.0f / sqrtf(var / (float)D + NORM_EPS);
        for (i = 0; i < D; i++)
            o[i] = (xr[i] - mean) * rstd * (1.0f + scale[i]) + shift[i];
    }
}

/* x += gate * y on n rows of D (row stride D). */
static void add_gated(float *restrict x, const float *restrict y, const float *restrict gate, int n,
                      int D)
{
    for (int r = 0; r < n; r++)
        for (int i = 0; i < D; i++)
            x[(size_t)r * D + i] += gate[i] * y[(size_t)r * D + i];
}

/* RMSNorm of every q head (columns 0..D) and k head (D..2D) of n rows (stride ld). */
static void qk_rmsnorm(float *qkv, int ld, int n, int NH, int HD, const float *qw, const float *kw)
{
    for (int r = 0; r < n; r++)
        for (int hh = 0; hh < 2 * NH; hh++) {
            float *v = qkv + (size_t)r * ld + (size_t)hh * HD;
            const float *w = hh < NH ? qw : kw;
            float ss = 0;
            for (int i = 0; i < HD; i++)
                ss += v[i] * v[i];
            float rs = 1.0f / sqrtf(ss / (float)HD + NORM_EPS);
            for (int i = 0; i < HD; i++)
                v[i] *= rs * w[i];
        }
}

/* RoPE on the q and k heads of an image's N image-token rows (stride ld). */
static void rope_rows(const struct dit_state *st, float *qkv, int ld)
{
    int half = st->HD / 2;
    for (int n = 0; n < st->N; n++) {
        const float *cs = st->rope_cos + (size_t)n * half, *sn = st->rope_sin + (size_t)n * half;
        for (int hh = 0; hh < 2 * st->NH; hh++) {
            float *v = qkv + (size_t)n * ld + (size_t)hh * st->HD;
            for (int j = 0; j < half; j++) {
                float a = v[2 * j], b = v[2 * j + 1];
                v[2 * j] = a * cs[j] - b * sn[j];
                v[2 * j + 1] = a * sn[j] + b * cs[j];
            }
        }
    }
}

static void softmax_row(float *restrict row, int n)
{
    float mx[LANES], sm[LANES], m = -INFINITY, s = 0;
    int i = 0;
    for (int j = 0; j < LANES; j++) {
        mx[j] = -INFINITY;
        sm[j] = 0;
    }
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++)
            mx[j] = row[i + j] > mx[j] ? row[i + j] : mx[j];
    for (int j = 0; j < LANES; j++)
        m = mx[j] > m ? mx[j] : m;
    for (; i < n; i++)
        m = row[i] > m ? row[i] : m;
    for (i = 0; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) {
            row[i + j] = tb_dk_expf(row[i + j] - m);
            sm[j] += row[i + j];
        }
    for (int j = 0; j < LANES; j++)
        s += sm[j];
    for (; i < n; i++) {
        row[i] = tb_dk_expf(row[i] - m);
        s += row[i];
    }
    float inv = 1.0f / s;
    for (i = 0; i < n; i++)
        row[i] *= inv;
}

/* Attention of one image: queries of rows q0..T-1 against all T keys, for every head.
 * qkv holds q | k | v at columns 0, D, 2D of rows of stride ld; the output goes to out
 * (row stride ldo), head h at columns h HD. Two GEMMs per head and block of rows. */
static void attend(const struct dit_state *st, const float *qkv, int ld, int q0, float *out,
                   int ldo)
{
    const int T = st->T, HD = st->HD, D = st->D;
    const float scale = 1.0f / sqrtf((float)HD);
    for (int hh = 0; hh < st->NH; hh++) {
        const float *q = qkv + (size_t)hh * HD, *k = q + D, *v = q + 2 * D;
        for (int r0 = q0; r0 < T; r0 += ATT_BLOCK) {
            int nr = T - r0 < ATT_BLOCK ? T - r0 : ATT_BLOCK;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, T, HD, scale,
                        q + (size_t)r0 * ld, ld, k, ld, 0.0f, st->scores, T);
            for (int i = 0; i < nr; i++)
                softmax_row(st->scores + (size_t)i * T, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, HD, T, 1.0f, st->scores, T,
                        v, ld, 0.0f, out + (size_t)r0 * ldo + (size_t)hh * HD, ldo);
        }
    }
}

/* Sinusoidal features of mul v[b] (v NULL: 0) into out [B, TP]: cos of the first half,
 * sin of the second, freq_i = exp(-ln(10000) i / half); an odd TP ends with a zero. */
static void sinusoid(float *out, const float *v, double mul, int B, int TP)
{
    int half = TP / 2;
    for (int b = 0; b < B; b++) {
        double arg = mul * (v ? v[b] : 0.0);
        float *o = out + (size_t)b * TP;
        for (int i = 0; i < half; i++) {
            double f = exp(-log(10000.0) * i / half);
            o[i] = (float)cos(arg * f);
            o[half + i] = (float)sin(arg * f);
        }
        if (TP % 2)
            o[TP - 1] = 0.0f;
    }
}

/* ---- forward ---- */

/* c += MLP(in) = Linear(SiLU(Linear(in))), or c = when !acc. */
static void cond_mlp(struct dit_state *st, const float *in, int in_dim, const float *w1,
                     const float *b1, const float *w2, const float *b2, int B, bool acc)
{
    int D = st->D;
    linear(st->tmp, D, in, in_dim, w1, b1, B, in_dim, D, false);
    silu(st->tmp, st->tmp, (size_t)B * D);
    linear(st->c, D, st->tmp, D, w2, b2, B, D, D, acc);
}

/* Patch and context embedding into x; the conditioning vector into c and SiLU(c). */
static void embed(struct dit_state *st, const struct tb_darch *a, const float *x, const float *t,
                  const float *ctx, const float *pooled, const float *guidance, int B)
{
    const int D = st->D, p = st->p, PP = st->PP, S = st->S, N = st->N, Dc = a->context_dim;
    const int W = st->Wp * p, H = st->Hp * p, M = a->pos_embed_max;

    for (int b = 0; b < B; b++) {
        float *pt = st->patches + (size_t)b * N * PP;
        for (int n = 0; n < N; n++) {
            int pi = n / st->Wp, pj = n % st->Wp;
            for (int c = 0; c < st->Cl; c++)
                for (int i = 0; i < p; i++)
                    for (int j = 0; j < p; j++)
                        pt[(size_t)n * PP + (size_t)c * p * p + i * p + j] =
                            x[(((size_t)b * st->Cl + c) * H + pi * p + i) * W + pj * p + j];
        }
        linear(tok(st, st->x, b, S, D), D, pt, PP, st->patch_w, st->patch_b, N, PP, D, false);
        if (st->pos)
            for (int n = 0; n < N; n++) {
                const float *pe =
                    st->pos +
                    ((size_t)(st->pos_top + n / st->Wp) * M + st->pos_left + n % st->Wp) * D;
                float *xr = tok(st, st->x, b, S + n, D);
                for (int i = 0; i < D; i++)
                    xr[i] += pe[i];
            }
        linear(tok(st, st->x, b, 0, D), D, ctx + (size_t)b * S * Dc, Dc, st->ctx_w, st->ctx_b, S,
               Dc, D, false);
    }

    sinusoid(st->feat, t, 1000.0, B, a->time_proj_dim);
    cond_mlp(st, st->feat, a->time_proj_dim, st->t1_w, st->t1_b, st->t2_w, st->t2_b, B, false);
    cond_mlp(st, pooled, a->pooled_dim, st->y1_w, st->y1_b, st->y2_w, st->y2_b, B, true);
    if (a->guidance_embed) {
        sinusoid(st->feat, guidance, 1000.0, B, a->time_proj_dim);
        cond_mlp(st, st->feat, a->time_proj_dim, st->g1_w, st->g1_b, st->g2_w, st->g2_b, B, true);
    }
    silu(st->sc, st->c, (size_t)B * D);
}

/* The output projection and gated residual of one stream (rows r0..r0+n-1 of each
 * image), reading the attention output from u (row width D). */
static void stream_attn_out(struct dit_state *st, const struct dit_stream *w, const float *mod,
                            int B, int r0, int n)
{
    const int D = st->D;
    for (int b = 0; b < B; b++) {
        const float *gate1 = mod + (size_t)b * 6 * D + 2 * D;
        linear(tok(st, st->o, b, r0, D), D, tok(st, st->u, b, r0, D), D, w->out_w, w->out_b, n, D,
               D, false);
        add_gated(tok(st, st->x, b, r0, D), tok(st, st->o, b, r0, D), gate1, n, D);
    }
}

/* The modulated MLP and gated residual of one stream, hidden layer in u (row width F). */
static void stream_mlp(struct dit_state *st, const struct dit_stream *w, const float *mod, int B,
                       int r0, int n)
{
    const int D = st->D, F = st->F;
    for (int b = 0; b < B; b++) {
        const float *m = mod + (size_t)b * 6 * D;
        float *hid = tok(st, st->u, b, r0, F);
        ln_modulate(tok(st, st->h, b, r0, D), tok(st, st->x, b, r0, D), n, D, m + 3 * D, m + 4 * D);
        linear(hid, F, tok(st, st->h, b, r0, D), D, w->fc1_w, w->fc1_b, n, D, F, false);
        for (size_t i = 0; i < (size_t)n * F; i++)
            hid[i] = gelu_fast(hid[i]);
        linear(tok(st, st->o, b, r0, D), D, hid, F, w->fc2_w, w->fc2_b, n, F, D, false);
        add_gated(tok(st, st->x, b, r0, D), tok(st, st->o, b, r0, D), m + 5 * D, n, D);
    }
}

/* A joint (MMDiT) or double-stream (FLUX) block. */
static void double_block(struct dit_state *st, const struct dit_double *w, int B)
{
    const int D = st->D, S = st->S, N = st->N, QW = st->QW, nctx = w->pre_only ? 2 : 6;

    linear(st->mod_img, 6 * D, st->sc, D, w->img.mod_w, w->img.mod_b, B, D, 6 * D, false);
    linear(st->mod_ctx, nctx * D, st->sc, D, w->ctx.mod_w, w->ctx.mod_b, B, D, nctx * D, false);
    for (int b = 0; b < B; b++) {
        const float *mi = st->mod_img + (size_t)b * 6 * D;
        const float *mc = st->mod_ctx + (size_t)b * nctx * D;
        float *qi = tok(st, st->qkv, b, S, QW), *qc = tok(st, st->qkv, b, 0, QW);
        ln_modulate(tok(st, st->h, b, S, D), tok(st, st->x, b, S, D), N, D, mi, mi + D);
        if (w->pre_only) /* (scale, shift) */
            ln_modulate(tok(st, st->h, b, 0, D), tok(st, st->x, b, 0, D), S, D, mc + D, mc);
        else
            ln_modulate(tok(st, st->h, b, 0, D), tok(st, st->x, b, 0, D), S, D, mc, mc + D);
        linear(qi, QW, tok(st, st->h, b, S, D), D, w->img.qkv_w, w->img.qkv_b, N, D, 3 * D, false);
        linear(qc, QW, tok(st, st->h, b, 0, D), D, w->ctx.qkv_w, w->ctx.qkv_b, S, D, 3 * D, false);
        if (w->img.q_norm) {
            qk_rmsnorm(qc, QW, S, st->NH, st->HD, w->ctx.q_norm, w->ctx.k_norm);
            qk_rmsnorm(qi, QW, N, st->NH, st->HD, w->img.q_norm, w->img.k_norm);
        }
        if (st->rope_cos)
            rope_rows(st, qi, QW);
        /* a pre-only context's outputs are never used: attend from the image rows only */
        attend(st, qc, QW, w->pre_only ? S : 0, tok(st, st->u, b, 0, D), D);
    }
    /* both output projections before the MLPs, which reuse u */
    stream_attn_out(st, &w->img, st->mod_img, B, S, N);
    if (!w->pre_only)
        stream_attn_out(st, &w->ctx, st->mod_ctx, B, 0, S);
    stream_mlp(st, &w->img, st->mod_img, B, S, N);
    if (!w->pre_only)
        stream_mlp(st, &w->ctx, st->mod_ctx, B, 0, S);
}

/* A FLUX single-stream block over all T tokens of each image. */
static void single_block(struct dit_state *st, const struct dit_single *w, int B)
{
    const int D = st->D, F = st->F, T = st->T, QW = st->QW, UW = st->UW;
    const size_t rows = (size_t)B * T;

    linear(st->mod_img, 3 * D, st->sc, D, w->mod_w, w->mod_b, B, D, 3 * D, false);
    for (int b = 0; b < B; b++) {
        const float *m = st->mod_img + (size_t)b * 3 * D;
        ln_modulate(tok(st, st->h, b, 0, D), tok(st, st->x, b, 0, D), T, D, m, m + D);
    }
    linear(st->qkv, QW, st->h, D, w->lin1_w, w->lin1_b, (int)rows, D, QW, false);
    for (int b = 0; b < B; b++) {
        float *z = tok(st, st->qkv, b, 0, QW);
        if (w->q_norm)
            qk_rmsnorm(z, QW, T, st->NH, st->HD, w->q_norm, w->k_norm);
        if (st->rope_cos)
            rope_rows(st, z + (size_t)st->S * QW, QW);
        attend(st, z, QW, 0, tok(st, st->u, b, 0, UW), UW);
    }
    for (size_t r = 0; r < rows; r++) {
        const float *zr = st->qkv + r * QW + 3 * D;
        float *ur = st->u + r * UW + D;
        for (int i = 0; i < F; i++)
            ur[i] = gelu_fast(zr[i]);
    }
    linear(st->o, D, st->u, UW, w->lin2_w, w->lin2_b, (int)rows, UW, D, false);
    for (int b = 0; b < B; b++)
        add_gated(tok(st, st->x, b, 0, D), tok(st, st->o, b, 0, D),
                  st->mod_img + (size_t)b * 3 * D + 2 * D, T, D);
}

/* AdaLN-Continuous, the projection to patches and unpatchify into out. */
static void final_layer(struct dit_state *st, int B, float *out)
{
    const int D = st->D, S = st->S, N = st->N, PP = st->PP, p = st->p;
    const int W = st->Wp * p, H = st->Hp * p;

    linear(st->mod_img, 2 * D, st->sc, D, st->fmod_w, st->fmod_b, B, D, 2 * D, false);
    for (int b = 0; b < B; b++) {
        const float *m = st->mod_img + (size_t)b * 2 * D; /* (scale, shift) */
        float *pt = st->patches + (size_t)b * N * PP;
        ln_modulate(tok(st, st->h, b, S, D), tok(st, st->x, b, S, D), N, D, m + D, m);
        linear(pt, PP, tok(st, st->h, b, S, D), D, st->fout_w, st->fout_b, N, D, PP, false);
        for (int n = 0; n < N; n++) {
            int pi = n / st->Wp, pj = n % st->Wp;
            for (int c = 0; c < st->Cl; c++)
                for (int i = 0; i < p; i++)
                    for (int j = 0; j < p; j++)
                        out[(((size_t)b * st->Cl + c) * H + pi * p + i) * W + pj * p + j] =
                            pt[(size_t)n * PP + (size_t)c * p * p + i * p + j];
        }
    }
}

int tb_dit_forward(struct tb_diffusion *m, const float *x, const float *t, const float *ctx,
                   const float *pooled, const float *guidance, int B, float *out, char *err,
                   size_t errlen)
{
    const struct tb_darch *a = m->arch;
    struct dit_state *st = state(m);

    if (!st)
        return tb_err(err, errlen, "engine not set up");
    if (B < 1 || B > m->max_batch)
        return tb_err(err, errlen, "batch %d outside 1..%d", B, m->max_batch);
    embed(st, a, x, t, ctx, pooled, guidance, B);
    for (int l = 0; l < a->dit_depth; l++)
        double_block(st, &st->dbl[l], B);
    for (int l = 0; l < a->single_depth; l++)
        single_block(st, &st->sgl[l], B);
    final_layer(st, B, out);
    return 0;
}

/* ---- reference ----
 * The same network in double precision with plain loops, one image at a time, with
 * the streams in separate arrays and concatenated only where the model concatenates
 * them. It shares nothing with the code above but the parameter pointers and
 * rope_axis (the spec's split of head_dim). */

struct ref {
    int D, NH, HD, F, Cl, p, PP, Hp, Wp, N, S, T;
    double *xi;        /* [N, D] image stream */
    double *xc;        /* [S, D] context stream */
    double *xj;        /* [T, D] joint sequence of the single blocks */
    double *hn;        /* [T, D] modulated norm output */
    double *q, *k, *v; /* [T, D] */
    double *att;       /* [T, D] attention output */
    double *big;       /* [T, max(3D + F, PP)] projections, MLP hidden layers */
    double *cat;       /* [T, D + F] */
    double *y;         /* [T, D] */
    double *cv;        /* [D] conditioning */
    double *scv;       /* [D] SiLU(c) */
    double *mod;       /* [6D] */
    double *e1;        /* [max(D, TP)] */
    double *e2;        /* [D] */
    double *prob;      /* [T] */
};

/* y[r, o] = b[o] + sum_i x[r, i] W[o, i] for n rows. */
static void ref_linear(double *y, const double *x, int n, int in, const float *W, const float *b,
                       int outd)
{
    for (int r = 0; r < n; r++)
        for (int o = 0; o < outd; o++) {
            double s = b[o];
            for (int i = 0; i < in; i++)
                s += x[(size_t)r * in + i] * W[(size_t)o * in + i];
            y[(size_t)r * outd + o] = s;
        }
}

static double ref_silu(double x)
{
    return x / (1.0 + exp(-x));
}

static double ref_gelu(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

/* out = LN(x) (1 + scale) + shift, eps 1e-6, n rows of D. */
static void ref_ln_mod(double *out, const double *x, int n, int D, const double *shift,
                       const double *scale)
{
    for (int r = 0; r < n; r++) {
        double mean = 0, var = 0;
        for (int i = 0; i < D; i++)
            mean += x[(size_t)r * D + i];
        mean /= D;
        for (int i = 0; i < D; i++)
            var += (x[(size_t)r * D + i] - mean) * (x[(size_t)r * D + i] - mean);
        var /= D;
        for (int i = 0; i < D; i++)
            out[(size_t)r * D + i] =
                (x[(size_t)r * D + i] - mean) / sqrt(var + 1e-6) * (1.0 + scale[i]) + shift[i];
    }
}

/* The MLP embedding of a scalar: Linear(SiLU(Linear(sinusoid(1000 v)))) added to cv. */
static void ref_scalar_embed(struct ref *R, const struct tb_darch *a, double v, const float *w1,
                             const float *b1, const float *w2, const float *b2)
{
    int TP = a->time_proj_dim, half = TP / 2;
    for (int i = 0; i < TP; i++)
        R->e1[i] = 0;
    for (int i = 0; i < half; i++) {
        double freq = exp(-log(10000.0) * i / half);
        R->e1[i] = cos(1000.0 * v * freq);
        R->e1[half + i] = sin(1000.0 * v * freq);
    }
    ref_linear(R->e2, R->e1, 1, TP, w1, b1, R->D);
    for (int i = 0; i < R->D; i++)
        R->e2[i] = ref_silu(R->e2[i]);
    ref_linear(R->e1, R->e2, 1, R->D, w2, b2, R->D);
    for (int i = 0; i < R->D; i++)
        R->cv[i] += R->e1[i];
}

/* Per-head RMSNorm with weight w on rows [r0, r0 + n) of a [*, D] array. */
static void ref_head_norm(const struct ref *R, double *x, int r0, int n, const float *w)
{
    if (!w)
        return;
    for (int r = r0; r < r0 + n; r++)
        for (int h = 0; h < R->NH; h++) {
            double *e = x + (size_t)r * R->D + (size_t)h * R->HD, ms = 0;
            for (int i = 0; i < R->HD; i++)
                ms += e[i] * e[i];
            ms /= R->HD;
            for (int i = 0; i < R->HD; i++)
                e[i] = e[i] / sqrt(ms + 1e-6) * w[i];
        }
}

/* FLUX RoPE on the rows [r0, r0 + N) of x, the image tokens in row-major order. */
static void ref_rope(const struct ref *R, double *x, int r0)
{
    int a1 = rope_axis(R->HD), axes[3] = {R->HD - 2 * a1, a1, a1};
    for (int n = 0; n < R->N; n++) {
        int ids[3] = {0, n / R->Wp, n % R->Wp};
        for (int h = 0; h < R->NH; h++) {
            double *e = x + (size_t)(r0 + n) * R->D + (size_t)h * R->HD;
            int d0 = 0;
            for (int ax = 0; ax < 3; ax++) {
                for (int i = 0; i < axes[ax] / 2; i++) {
                    double th = ids[ax] * pow(10000.0, -2.0 * i / axes[ax]);
                    double u = e[d0 + 2 * i], w = e[d0 + 2 * i + 1];
                    e[d0 + 2 * i] = u * cos(th) - w * sin(th);
                    e[d0 + 2 * i + 1] = u * sin(th) + w * cos(th);
                }
                d0 += axes[ax];
            }
        }
    }
}

/* softmax(q k^T / sqrt(HD)) v per head, for the query rows [q0, T), into att. */
static void ref_attention(struct ref *R, int q0)
{
    for (int h = 0; h < R->NH; h++)
        for (int i = q0; i < R->T; i++) {
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < R->T; j++) {
                double s = 0;
                for (int d = 0; d < R->HD; d++)
                    s += R->q[(size_t)i * R->D + h * R->HD + d] *
                         R->k[(size_t)j * R->D + h * R->HD + d];
                R->prob[j] = s / sqrt((double)R->HD);
                mx = R->prob[j] > mx ? R->prob[j] : mx;
            }
            for (int j = 0; j < R->T; j++) {
                R->prob[j] = exp(R->prob[j] - mx);
                sum += R->prob[j];
            }
            for (int d = 0; d < R->HD; d++) {
                double s = 0;
                for (int j = 0; j < R->T; j++)
                    s += R->prob[j] * R->v[(size_t)j * R->D + h * R->HD + d];
                R->att[(size_t)i * R->D + h * R->HD + d] = s / sum;
            }
        }
}

/* Modulation vector: Linear(SiLU(c)) of nout features into R->mod. */
static void ref_mod(struct ref *R, const float *w, const float *b, int nout)
{
    ref_linear(R->mod, R->scv, 1, R->D, w, b, nout);
}

/* Stream input of a double block: modulated norm, q k v into rows r0.. of R->q, k, v. */
static void ref_stream_in(struct ref *R, const struct dit_stream *w, const double *xs, int n,
                          int r0, bool pre_only, bool rope)
{
    const int D = R->D;
    const double *shift = pre_only ? R->mod + D : R->mod, *scale = pre_only ? R->mod : R->mod + D;
    ref_ln_mod(R->hn, xs, n, D, shift, scale);
    ref_linear(R->big, R->hn, n, D, w->qkv_w, w->qkv_b, 3 * D);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < D; i++) {
            R->q[(size_t)(r0 + r) * D + i] = R->big[(size_t)r * 3 * D + i];
            R->k[(size_t)(r0 + r) * D + i] = R->big[(size_t)r * 3 * D + D + i];
            R->v[(size_t)(r0 + r) * D + i] = R->big[(size_t)r * 3 * D + 2 * D + i];
        }
    ref_head_norm(R, R->q, r0, n, w->q_norm);
    ref_head_norm(R, R->k, r0, n, w->k_norm);
    if (rope) {
        ref_rope(R, R->q, r0);
        ref_rope(R, R->k, r0);
    }
}

/* Stream output of a double block: projection, gated residual, modulated MLP. mod is
 * this stream's 6D modulation. */
static void ref_stream_out(struct ref *R, const struct dit_stream *w, double *xs, int n, int r0,
                           const double *mod)
{
    const int D = R->D, F = R->F;
    ref_linear(R->y, R->att + (size_t)r0 * D, n, D, w->out_w, w->out_b, D);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < D; i++)
            xs[(size_t)r * D + i] += mod[2 * D + i] * R->y[(size_t)r * D + i];
    ref_ln_mod(R->hn, xs, n, D, mod + 3 * D, mod + 4 * D);
    ref_linear(R->big, R->hn, n, D, w->fc1_w, w->fc1_b, F);
    for (size_t i = 0; i < (size_t)n * F; i++)
        R->big[i] = ref_gelu(R->big[i]);
    ref_linear(R->y, R->big, n, F, w->fc2_w, w->fc2_b, D);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < D; i++)
            xs[(size_t)r * D + i] += mod[5 * D + i] * R->y[(size_t)r * D + i];
}

int tb_dit_reference(const struct tb_diffusion *m, const float *x, const float *t, const float *ctx,
                     const float *pooled, const float *guidance, int B, double *out, char *err,
                     size_t errlen)
{
    const struct tb_darch *a = m->arch;
    const struct dit_state *st = state(m);
    struct ref R;
    double *buf = NULL, *modc = NULL;
    int D, S, N, T, F;
    bool rope = a->kind == TB_DARCH_FLUX;

    if (!st)
        return tb_err(err, errlen, "engine not set up");
    memset(&R, 0, sizeof R);
    R.D = D = a->hidden;
    R.NH = a->heads;
    R.HD = a->head_dim;
    R.F = F = a->mlp_ratio * D;
    R.Cl = a->latent_channels;
    R.p = a->patch;
    R.PP = R.Cl * R.p * R.p;
    R.Hp = m->lat_h / R.p;
    R.Wp = m->lat_w / R.p;
    R.N = N = R.Hp * R.Wp;
    R.S = S = a->text_tokens;
    R.T = T = S + N;
    {
        size_t TD = (size_t)T * D, wide = (size_t)(3 * D + F > R.PP ? 3 * D + F : R.PP);
        size_t e1 = (size_t)(D > a->time_proj_dim ? D : a->time_proj_dim);
        size_t sizes[] = {(size_t)N * D,
                          (size_t)S * D,
                          TD,
                          TD,
                          TD,
                          TD,
                          TD,
                          TD,
                          TD,
                          (size_t)T * wide,
                          (size_t)T * (D + F),
                          (size_t)D,
                          (size_t)D,
                          6 * (size_t)D,
                          6 * (size_t)D,
                          e1,
                          (size_t)D,
                          (size_t)T};
        double **ptrs[] = {&R.xi,  &R.xc,  &R.xj, &R.hn,  &R.q,   &R.k,  &R.v,  &R.att, &R.y,
                           &R.big, &R.cat, &R.cv, &R.scv, &R.mod, &modc, &R.e1, &R.e2,  &R.prob};
        size_t need = 0;
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            need += sizes[i];
        buf = tb_alloc_array(need, sizeof *buf);
        if (!buf)
            return tb_err(err, errlen, "cannot allocate the reference's %zu doubles", need);
        for (size_t i = 0, off = 0; i < sizeof sizes / sizeof sizes[0]; off += sizes[i++])
            *ptrs[i] = buf + off;
    }

    for (int b = 0; b < B; b++) {
        const int Hl = R.Hp * R.p, Wl = R.Wp * R.p, Dp = a->pooled_dim;
        /* patches: image token (pi, pj), feature (c, i, j) */
        for (int n = 0; n < N; n++) {
            int pi = n / R.Wp, pj = n % R.Wp;
            for (int o = 0; o < D; o++) {
                double s = st->patch_b[o];
                for (int c = 0; c < R.Cl; c++)
                    for (int i = 0; i < R.p; i++)
                        for (int j = 0; j < R.p; j++)
                            s +=
                                (double)
                                    st->patch_w[(size_t)o * R.PP + c * R.p * R.p + i * R.p + j] *
                                x[(((size_t)b * R.Cl + c) * Hl + pi * R.p + i) * Wl + pj * R.p + j];
                if (st->pos) {
                    int M = a->pos_embed_max, top = (M - R.Hp) / 2, left = (M - R.Wp) / 2;
                    s += st->pos[((size_t)(top + pi) * M + (left + pj)) * D + o];
                }
                R.xi[(size_t)n * D + o] = s;
            }
        }
        /* context tokens */
        for (int s = 0; s < S; s++)
            for (int o = 0; o < D; o++) {
                double acc = st->ctx_b[o];
                for (int i = 0; i < a->context_dim; i++)
                    acc += (double)ctx[((size_t)b * S + s) * a->context_dim + i] *
                           st->ctx_w[(size_t)o * a->context_dim + i];
                R.xc[(size_t)s * D + o] = acc;
            }
        /* conditioning: timestep + pooled text (+ guidance) */
        for (int i = 0; i < D; i++)
            R.cv[i] = 0;
        ref_scalar_embed(&R, a, t[b], st->t1_w, st->t1_b, st->t2_w, st->t2_b);
        for (int o = 0; o < D; o++) {
            double s = st->y1_b[o];
            for (int i = 0; i < Dp; i++)
                s += (double)pooled[(size_t)b * Dp + i] * st->y1_w[(size_t)o * Dp + i];
            R.e2[o] = ref_silu(s);
        }
        ref_linear(R.e1, R.e2, 1, D, st->y2_w, st->y2_b, D);
        for (int i = 0; i < D; i++)
            R.cv[i] += R.e1[i];
        if (a->guidance_embed)
            ref_scalar_embed(&R, a, guidance ? guidance[b] : 0.0, st->g1_w, st->g1_b, st->g2_w,
                             st->g2_b);
        for (int i = 0; i < D; i++)
            R.scv[i] = ref_silu(R.cv[i]);

        /* double blocks: the context's q k v take rows 0..S-1, the image's S..T-1 */
        for (int l = 0; l < a->dit_depth; l++) {
            const struct dit_double *w = &st->dbl[l];
            ref_mod(&R, w->ctx.mod_w, w->ctx.mod_b, (w->pre_only ? 2 : 6) * D);
            memcpy(modc, R.mod, 6 * (size_t)D * sizeof *modc);
            ref_stream_in(&R, &w->ctx, R.xc, S, 0, w->pre_only, false);
            ref_mod(&R, w->img.mod_w, w->img.mod_b, 6 * D);
            ref_stream_in(&R, &w->img, R.xi, N, S, false, rope);
            ref_attention(&R, w->pre_only ? S : 0);
            ref_stream_out(&R, &w->img, R.xi, N, S, R.mod);
            if (!w->pre_only)
                ref_stream_out(&R, &w->ctx, R.xc, S, 0, modc);
        }

        /* single blocks on [context; image] */
        if (a->single_depth > 0) {
            memcpy(R.xj, R.xc, (size_t)S * D * sizeof *R.xj);
            memcpy(R.xj + (size_t)S * D, R.xi, (size_t)N * D * sizeof *R.xj);
            for (int l = 0; l < a->single_depth; l++) {
                const struct dit_single *w = &st->sgl[l];
                const int Z = 3 * D + F;
                ref_mod(&R, w->mod_w, w->mod_b, 3 * D);
                ref_ln_mod(R.hn, R.xj, T, D, R.mod, R.mod + D);
                ref_linear(R.big, R.hn, T, D, w->lin1_w, w->lin1_b, Z);
                for (int r = 0; r < T; r++)
                    for (int i = 0; i < D; i++) {
                        R.q[(size_t)r * D + i] = R.big[(size_t)r * Z + i];
                        R.k[(size_t)r * D + i] = R.big[(size_t)r * Z + D + i];
                        R.v[(size_t)r * D + i] = R.big[(size_t)r * Z + 2 * D + i];
                    }
                ref_head_norm(&R, R.q, 0, T, w->q_norm);
                ref_head_norm(&R, R.k, 0, T, w->k_norm);
                if (rope) {
                    ref_rope(&R, R.q, S);
                    ref_rope(&R, R.k, S);
                }
                ref_attention(&R, 0);
                for (int r = 0; r < T; r++) {
                    for (int i = 0; i < D; i++)
                        R.cat[(size_t)r * (D + F) + i] = R.att[(size_t)r * D + i];
                    for (int i = 0; i < F; i++)
                        R.cat[(size_t)r * (D + F) + D + i] =
                            ref_gelu(R.big[(size_t)r * Z + 3 * D + i]);
                }
                ref_linear(R.y, R.cat, T, D + F, w->lin2_w, w->lin2_b, D);
                for (size_t r = 0; r < (size_t)T; r++)
                    for (int i = 0; i < D; i++)
                        R.xj[r * D + i] += R.mod[2 * D + i] * R.y[r * D + i];
            }
            memcpy(R.xi, R.xj + (size_t)S * D, (size_t)N * D * sizeof *R.xi);
        }

        /* final: AdaLN-Continuous (scale, shift), projection, unpatchify */
        ref_mod(&R, st->fmod_w, st->fmod_b, 2 * D);
        ref_ln_mod(R.hn, R.xi, N, D, R.mod + D, R.mod);
        ref_linear(R.big, R.hn, N, D, st->fout_w, st->fout_b, R.PP);
        for (int n = 0; n < N; n++)
            for (int c = 0; c < R.Cl; c++)
                for (int i = 0; i < R.p; i++)
                    for (int j = 0; j < R.p; j++)
                        out[(((size_t)b * R.Cl + c) * Hl + (n / R.Wp) * R.p + i) * Wl +
                            (n % R.Wp) * R.p + j] =
                            R.big[(size_t)n * R.PP + c * R.p * R.p + i * R.p + j];
    }
    free(buf);
    return 0;
}
