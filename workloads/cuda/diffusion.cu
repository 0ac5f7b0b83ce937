/*
 * workloads/cuda/diffusion.cu: the GPU diffusion denoiser (the plugin's diffusion_*
 * entries in harness/tb_cuda_abi.h): the SDXL UNet of the CPU engine
 * (workloads/diffusion/unet.c, tb_diffusion_forward) in bf16 mixed precision, and the
 * sampler loop of tb_diffusion_sample on the device. The DiTs (SD3's MMDiT, FLUX) are
 * dit.cu's engine: these entries hand their engines over to it.
 *
 * Weights: the CPU engine's fp32 arena copied whole (norm scales and shifts, biases
 * read from it), a bf16 copy of it for the products in which every 3x3 convolution's
 * weights are reordered to [co, ky, kx, ci] (the im2col column order of channel-last
 * images). Offsets come from the CPU engine's own layout (struct tb_dlayout), never
 * recomputed here.
 *
 * Pieces (as unet.c, on channel-last [B, H, W, C] images, see diffusion.cuh):
 *   conv      im2col (bf16) -> one product [B Ho Wo, 9 ci] x [co, 9 ci]^T (fp32 out) ->
 *             bias (+ the ResNet's time projection per image, + a residual) in one pass
 *   ResNet    GroupNorm+SiLU (bf16 out), conv, GroupNorm+SiLU, conv, + input (or its 1x1
 *             shortcut product accumulated onto the output)
 *   transf.   GroupNorm, proj_in; blocks of LayerNorm, q|k|v in one product (bf16 out),
 *             attention, output projection accumulated onto the fp32 token stream (+ bias),
 *             cross-attention likewise with k|v of the context in one product, GEGLU
 *             (product to fp32, bias and the erf GELU fused, bf16 out), proj_out
 *             accumulated onto the image
 *   up/down   nearest 2x upsampling folded into im2col; stride 2 likewise
 * Attention: the fused kernel (flash.cu, non-causal) over all (image, head) pairs at
 * once, reading q, k, v where the projections wrote them (heads are column blocks of
 * the token rows) and writing token-major y: no [HW, HW] score matrix is stored.
 *
 * Memory: every buffer is one cudaMalloc recorded in the engine, sized at init for
 * max_batch images, freed by diffusion_free. Not thread-safe; work is queued on the
 * plugin's stream.
 */
#include "diffusion.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GN_EPS 1e-5f
#define LN_EPS 1e-5f

struct dengine {
    struct tb_darch a;     /* first, as dit.cu's engine: the entries dispatch on a.kind */
    int maxB, H, W;        /* latent size */
    struct tb_dlayout lay; /* owned copy of the CPU engine's layout */
    size_t n_params;

    float *p; /* [n_params] fp32 master copy */
    bf16 *wb; /* [n_params] bf16, 3x3 conv weights reordered */

    /* inputs and outputs of one pass */
    float *x_in;      /* [maxB, Cl, H, W] NCHW */
    float *t_in;      /* [maxB] */
    float *ctx_in;    /* [maxB, S, Dc] */
    float *pooled_in; /* [maxB, max(Dp, 1)] */
    float *out;       /* [maxB, Cl, H, W] NCHW */
    bf16 *ctx_b;      /* [maxB S, Dc] */
    float *lat;       /* [maxB, Cl, H, W] the sampler's latents */
    int lat_B;        /* images in lat (0: none yet) */

    /* conditioning */
    bf16 *feat_b;  /* [maxB, Tp] timestep features */
    bf16 *add_b;   /* [maxB, max(Da, 1)] additional input */
    float *th;     /* [maxB, Te] MLP hidden */
    bf16 *th_b;    /* [maxB, Te] SiLU of it */
    float *temb;   /* [maxB, Te] */
    bf16 *tsilu_b; /* [maxB, Te] SiLU(temb) */
    float *tproj;  /* [maxB, max co] a ResNet's projection of it */

    /* activations (channel-last) */
    float *cur, *nxt, *hid, *cat; /* [act] fp32 */
    bf16 *nb;                     /* [act] normalised input of a conv or a projection */
    bf16 *col;                    /* [col] im2col */
    float **skip;                 /* owned host: [npieces], the pushed pieces' device buffers */
    const float **stack;          /* owned host: [npieces] skip stack of a pass */
    float *tok;                   /* [M, C] transformer token stream */
    bf16 *ln, *y;                 /* [M, C] */
    bf16 *qkv;                    /* [M, 3C] */
    bf16 *kv;                     /* [maxB S, 2C] */
    float *ff;                    /* [M, 8C] */
    bf16 *gg;                     /* [M, 4C] */

    struct cu_bufs mem; /* every device buffer it holds */
};

static void engine_free(struct dengine *e)
{
    if (!e)
        return;
    cu_bufs_release(&e->mem);
    free(e->lay.pieces);
    free(e->lay.blocks);
    free(e->skip);
    free(e->stack);
    free(e);
}

/* fp32 parameters at an offset of the arena (NULL when absent). */
static const float *P(const struct dengine *e, size_t off)
{
    return off == TB_DLAYOUT_NONE ? NULL : e->p + off;
}

static size_t zmax(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* ---- products ---- */

/* out[M, O] (fp32, or bf16 when !f32) = (acc ? out : 0) + x[M, K] W[O, K]^T with W the
 * bf16 weights at offset w. */
static int lin(const struct dengine *e, void *out, bool f32, bool acc, const bf16 *x, size_t w,
               int M, int K, int O, const char *what, char *err, size_t errlen)
{
    struct cu_gemm g = cu_gemm_linear(out, f32, O, acc, x, K, e->wb + w, M, K, O);
    return cu_gemm_run(&g, what, err, errlen);
}

/* Multi-head non-causal attention of B images: y [B Nq, NH HD] (bf16, row stride ldy)
 * from q [B Nq, .], k and v [B Nk, .] (bf16, row strides ldq, ldk, ldv; head h at
 * column h HD), scale 1/sqrt(HD): one call of the fused kernel (flash.cu) over all
 * (image, head) pairs, token-major strides, so no [Nq, Nk] score matrix is stored. */
static int attention(bf16 *y, int ldy, const bf16 *q, int ldq, const bf16 *k, int ldk,
                     const bf16 *v, int ldv, int B, int Nq, int Nk, int NH, int HD, char *err,
                     size_t errlen)
{
    struct cu_flash_fwd f;
    memset(&f, 0, sizeof f);
    f.B = B;
    f.H = f.HKV = NH;
    f.Sq = Nq;
    f.Sk = Nk;
    f.D = HD;
    f.causal = false;
    f.scale = 1.0f / sqrtf((float)HD);
    f.q = q;
    f.k = k;
    f.v = v;
    f.o = y;
    f.sq.b = (long long)Nq * ldq;
    f.sq.h = HD;
    f.sq.s = ldq;
    f.sk.b = (long long)Nk * ldk;
    f.sk.h = HD;
    f.sk.s = ldk;
    f.sv.b = (long long)Nk * ldv;
    f.sv.h = HD;
    f.sv.s = ldv;
    f.so.b = (long long)Nq * ldy;
    f.so.h = HD;
    f.so.s = ldy;
    f.lse = NULL;
    return cu_flash_fwd(&f, err, errlen);
}

/* ---- pieces ---- */

/* out [B, Ho, Wo, co] (fp32) = 3x3 conv (padding 1, stride s) of in [B, H', W', ci]
 * (bf16 or fp32; NCHW when nchw; up: H' = H/2, upsampled first) + bias, + per_img [B, co]
 * and + res [B, Ho, Wo, co] when not NULL. H x W: the (upsampled) input's size. */
static int conv3(struct dengine *e, float *out, const void *in, bool in_bf16, bool nchw,
                 struct tb_dparam cp, int ci, int co, int B, int H, int W, int s, bool up,
                 const float *per_img, const float *res, const char *what, char *err, size_t errlen)
{
    int Ho = (H - 1) / s + 1, Wo = (W - 1) / s + 1;
    if (in_bf16)
        CU_LAUNCH(what, k_im2col_bf16(e->col, (const bf16 *)in, B, ci, H, W, 3, s, up, nchw));
    else
        CU_LAUNCH(what, k_im2col_f32(e->col, (const float *)in, B, ci, H, W, 3, s, up, nchw));
    CU_TRY(lin(e, out, true, false, e->col, cp.w, B * Ho * Wo, 9 * ci, co, what, err, errlen));
    CU_LAUNCH(what,
              k_epilogue(out, P(e, cp.b), NULL, per_img, res, B, (long long)Ho * Wo, co, NULL));
    return 0;
}

/* out [B, H, W, co] = ResNet(in [B, H, W, ci]). */
static int resnet(struct dengine *e, const struct tb_dpiece *p, float *out, const float *in, int B,
                  int H, int W, char *err, size_t errlen)
{
    const int G = e->a.groups, Te = e->a.time_embed_dim;
    long long HW = (long long)H * W;

    CU_LAUNCH("ResNet norm1",
              k_groupnorm(e->nb, in, P(e, p->n1.w), P(e, p->n1.b), B, HW, p->ci, G, GN_EPS, true));
    CU_TRY(lin(e, e->tproj, true, false, e->tsilu_b, p->temb.w, B, Te, p->co,
               "ResNet time projection", err, errlen));
    CU_LAUNCH("ResNet time projection",
              k_epilogue(e->tproj, P(e, p->temb.b), NULL, NULL, NULL, 1, B, p->co, NULL));
    CU_TRY(conv3(e, e->hid, e->nb, true, false, p->c1, p->ci, p->co, B, H, W, 1, false, e->tproj,
                 NULL, "ResNet conv1", err, errlen));
    CU_LAUNCH("ResNet norm2", k_groupnorm(e->nb, e->hid, P(e, p->n2.w), P(e, p->n2.b), B, HW, p->co,
                                          G, GN_EPS, true));
    if (p->sc.w == TB_DLAYOUT_NONE)
        return conv3(e, out, e->nb, true, false, p->c2, p->co, p->co, B, H, W, 1, false, NULL, in,
                     "ResNet conv2", err, errlen);
    CU_TRY(conv3(e, out, e->nb, true, false, p->c2, p->co, p->co, B, H, W, 1, false, NULL, NULL,
                 "ResNet conv2", err, errlen));
    /* the 1x1 shortcut of the input, accumulated onto the output (nb is free again) */
    CU_LAUNCH("ResNet shortcut", k_cast_bf16(e->nb, in, (size_t)B * HW * p->ci));
    CU_TRY(lin(e, out, true, true, e->nb, p->sc.w, (int)(B * HW), p->ci, p->co, "ResNet shortcut",
               err, errlen));
    CU_LAUNCH("ResNet shortcut",
              k_epilogue(out, P(e, p->sc.b), NULL, NULL, NULL, B, HW, p->co, NULL));
    return 0;
}

/* x [B, N, C] += transformer(x), cross-attending to e->ctx_b. */
static int transformer(struct dengine *e, const struct tb_dpiece *p, float *x, int B, int N,
                       char *err, size_t errlen)
{
    const struct tb_darch *a = &e->a;
    const int C = p->co, M = B * N, S = a->text_tokens, Dc = a->context_dim, HD = a->head_dim;
    const int NH = HD > 0 ? C / HD : 0; /* head_dim may be 0 when no level has attention */

    CU_LAUNCH("transformer norm", k_groupnorm(e->nb, x, P(e, p->n1.w), P(e, p->n1.b), B, N, C,
                                              a->groups, GN_EPS, false));
    CU_TRY(lin(e, e->tok, true, false, e->nb, p->pin.w, M, C, C, "proj_in", err, errlen));
    CU_LAUNCH("proj_in", k_epilogue(e->tok, P(e, p->pin.b), NULL, NULL, NULL, 1, M, C, NULL));
    for (int d = 0; d < p->depth; d++) {
        const struct tb_dblock *k = &e->lay.blocks[p->block + d];
        /* self-attention */
        CU_LAUNCH("LayerNorm 1",
                  k_layernorm(e->ln, e->tok, P(e, k->ln1.w), P(e, k->ln1.b), M, C, LN_EPS));
        CU_TRY(lin(e, e->qkv, false, false, e->ln, k->wqkv, M, C, 3 * C, "q|k|v", err, errlen));
        CU_TRY(attention(e->y, C, e->qkv, 3 * C, e->qkv + C, 3 * C, e->qkv + 2 * C, 3 * C, B, N, N,
                         NH, HD, err, errlen));
        CU_TRY(lin(e, e->tok, true, true, e->y, k->ao.w, M, C, C, "attention output", err, errlen));
        CU_LAUNCH("attention output",
                  k_epilogue(e->tok, P(e, k->ao.b), NULL, NULL, NULL, 1, M, C, NULL));
        /* cross-attention to the text context */
        CU_LAUNCH("LayerNorm 2",
                  k_layernorm(e->ln, e->tok, P(e, k->ln2.w), P(e, k->ln2.b), M, C, LN_EPS));
        CU_TRY(lin(e, e->qkv, false, false, e->ln, k->wq2, M, C, C, "cross q", err, errlen));
        CU_TRY(lin(e, e->kv, false, false, e->ctx_b, k->wkv2, B * S, Dc, 2 * C, "cross k|v", err,
                   errlen));
        CU_TRY(attention(e->y, C, e->qkv, C, e->kv, 2 * C, e->kv + C, 2 * C, B, N, S, NH, HD, err,
                         errlen));
        CU_TRY(lin(e, e->tok, true, true, e->y, k->co.w, M, C, C, "cross-attention output", err,
                   errlen));
        CU_LAUNCH("cross-attention output",
                  k_epilogue(e->tok, P(e, k->co.b), NULL, NULL, NULL, 1, M, C, NULL));
        /* GEGLU feed-forward */
        CU_LAUNCH("LayerNorm 3",
                  k_layernorm(e->ln, e->tok, P(e, k->ln3.w), P(e, k->ln3.b), M, C, LN_EPS));
        CU_TRY(lin(e, e->ff, true, false, e->ln, k->ff1.w, M, C, 8 * C, "GEGLU in", err, errlen));
        CU_LAUNCH("GEGLU", k_geglu(e->gg, e->ff, P(e, k->ff1.b), M, 4 * C));
        CU_TRY(lin(e, e->tok, true, true, e->gg, k->ff2.w, M, 4 * C, C, "GEGLU out", err, errlen));
        CU_LAUNCH("GEGLU out", k_epilogue(e->tok, P(e, k->ff2.b), NULL, NULL, NULL, 1, M, C, NULL));
    }
    CU_LAUNCH("proj_out", k_cast_bf16(e->ln, e->tok, (size_t)M * C));
    CU_TRY(lin(e, x, true, true, e->ln, p->pout.w, M, C, C, "proj_out", err, errlen));
    CU_LAUNCH("proj_out", k_epilogue(x, P(e, p->pout.b), NULL, NULL, NULL, 1, M, C, NULL));
    return 0;
}

/* SiLU(temb) of B images into e->tsilu_b, from e->t_in and e->pooled_in. */
static int time_embedding(struct dengine *e, int B, char *err, size_t errlen)
{
    const struct tb_darch *a = &e->a;
    const struct tb_dlayout *L = &e->lay;
    const int Tp = a->time_proj_dim, Te = a->time_embed_dim, Da = a->add_in_dim;
    const float *b2 = NULL;

    CU_LAUNCH("timestep features", k_timestep_features(e->feat_b, e->t_in, B, Tp));
    CU_TRY(lin(e, e->th, true, false, e->feat_b, L->t1.w, B, Tp, Te, "time MLP 1", err, errlen));
    CU_LAUNCH("time MLP 1", k_epilogue(e->th, P(e, L->t1.b), NULL, NULL, NULL, 1, B, Te, e->th_b));
    CU_TRY(lin(e, e->temb, true, false, e->th_b, L->t2.w, B, Te, Te, "time MLP 2", err, errlen));
    if (Da > 0) { /* added to the time MLP's output */
        CU_LAUNCH("additional input", k_add_input(e->add_b, e->pooled_in, B, a->pooled_dim, Da));
        CU_TRY(lin(e, e->th, true, false, e->add_b, L->a1.w, B, Da, Te, "additional MLP 1", err,
                   errlen));
        CU_LAUNCH("additional MLP 1",
                  k_epilogue(e->th, P(e, L->a1.b), NULL, NULL, NULL, 1, B, Te, e->th_b));
        CU_TRY(lin(e, e->temb, true, true, e->th_b, L->a2.w, B, Te, Te, "additional MLP 2", err,
                   errlen));
        b2 = P(e, L->a2.b);
    }
    CU_LAUNCH("time embedding",
              k_epilogue(e->temb, P(e, L->t2.b), b2, NULL, NULL, 1, B, Te, e->tsilu_b));
    return 0;
}

/* One pass over B images: e->out from e->x_in, t_in, ctx_in, pooled_in (queued). */
static int forward_dev(struct dengine *e, int B, char *err, size_t errlen)
{
    const struct tb_darch *a = &e->a;
    const struct tb_dlayout *L = &e->lay;
    float *cur = e->cur, *nxt = e->nxt;
    int c = a->latent_channels, ns = 0;

    CU_LAUNCH("context",
              k_cast_bf16(e->ctx_b, e->ctx_in, (size_t)B * a->text_tokens * a->context_dim));
    CU_TRY(time_embedding(e, B, err, errlen));
    for (int i = 0; i < L->npieces; i++) {
        const struct tb_dpiece *p = &L->pieces[i];
        int H = e->H >> p->level, W = e->W >> p->level, lo = p->level;
        long long HW = (long long)H * W;
        switch (p->kind) {
        case TB_DPIECE_CONV_IN:
            CU_TRY(conv3(e, cur, e->x_in, false, true, p->c1, p->ci, p->co, B, H, W, 1, false, NULL,
                         NULL, "conv_in", err, errlen));
            break;
        case TB_DPIECE_RESNET: {
            const float *in = cur;
            if (p->cat) { /* [current | skip] per pixel */
                if (ns < 1)
                    return cu_err(err, errlen, "UNet piece %d: no skip to concatenate", i);
                CU_LAUNCH("skip concatenation",
                          k_concat(e->cat, cur, c, e->stack[--ns], p->ci - c, B * HW));
                in = e->cat;
            }
            CU_TRY(resnet(e, p, nxt, in, B, H, W, err, errlen));
            break;
        }
        case TB_DPIECE_TRANSFORMER:
            CU_TRY(transformer(e, p, cur, B, (int)HW, err, errlen));
            break;
        case TB_DPIECE_DOWN:
            CU_TRY(conv3(e, nxt, cur, false, false, p->c1, p->ci, p->co, B, H, W, 2, false, NULL,
                         NULL, "downsample conv", err, errlen));
            lo = p->level + 1;
            break;
        case TB_DPIECE_UP:
            CU_TRY(conv3(e, nxt, cur, false, false, p->c1, p->ci, p->co, B, 2 * H, 2 * W, 1, true,
                         NULL, NULL, "upsample conv", err, errlen));
            lo = p->level - 1;
            break;
        case TB_DPIECE_CONV_OUT:
            CU_LAUNCH("conv_out norm", k_groupnorm(e->nb, cur, P(e, p->n1.w), P(e, p->n1.b), B, HW,
                                                   c, a->groups, GN_EPS, true));
            CU_TRY(conv3(e, e->hid, e->nb, true, false, p->c1, p->ci, p->co, B, H, W, 1, false,
                         NULL, NULL, "conv_out", err, errlen));
            CU_LAUNCH("output", k_nhwc_to_nchw(e->out, e->hid, NULL, B, HW, p->co));
            break;
        }
        if (p->kind == TB_DPIECE_RESNET || p->kind == TB_DPIECE_DOWN || p->kind == TB_DPIECE_UP) {
            float *tmp = cur;
            cur = nxt;
            nxt = tmp;
        }
        c = p->co;
        if (p->push) {
            size_t n = (size_t)B * c * (size_t)(e->H >> lo) * (size_t)(e->W >> lo);
            CU_CHECK(cudaMemcpyAsync(e->skip[i], cur, n * sizeof *cur, cudaMemcpyDeviceToDevice,
                                     g_cu.stream));
            e->stack[ns++] = e->skip[i];
        }
    }
    if (ns != 0)
        return cu_err(err, errlen, "UNet: %d skips left after the pass", ns);
    return 0;
}

/* ---- set-up ---- */

/* Whether [off, off + n) lies in the arena (off NONE: absent, fine when may_lack). */
static bool in_arena(size_t off, size_t n, size_t n_params, bool may_lack)
{
    if (off == TB_DLAYOUT_NONE)
        return may_lack;
    return off <= n_params && n <= n_params - off;
}

static int check_layout(const struct tb_darch *a, const struct tb_dlayout *L, size_t np, char *err,
                        size_t errlen)
{
    const size_t Te = (size_t)a->time_embed_dim, Dc = (size_t)a->context_dim;
    bool ok = in_arena(L->t1.w, (size_t)a->time_proj_dim * Te, np, false) &&
              in_arena(L->t1.b, Te, np, false) && in_arena(L->t2.w, Te * Te, np, false) &&
              in_arena(L->t2.b, Te, np, false) &&
              (a->add_in_dim == 0 ||
               (in_arena(L->a1.w, (size_t)a->add_in_dim * Te, np, false) &&
                in_arena(L->a1.b, Te, np, false) && in_arena(L->a2.w, Te * Te, np, false) &&
                in_arena(L->a2.b, Te, np, false)));
    if (!ok)
        return cu_err(err, errlen, "%s: the time embedding's offsets lie outside the arena",
                      a->name);
    for (int i = 0; i < L->npieces; i++) {
        const struct tb_dpiece *p = &L->pieces[i];
        size_t ci = (size_t)p->ci, co = (size_t)p->co;
        if (p->level < 0 || p->level >= a->nlevels || p->ci < 1 || p->co < 1)
            return cu_err(err, errlen, "%s: UNet piece %d has level %d, %d -> %d channels", a->name,
                          i, p->level, p->ci, p->co);
        switch (p->kind) {
        case TB_DPIECE_CONV_OUT:
            ok = in_arena(p->n1.w, ci, np, false) && in_arena(p->n1.b, ci, np, false);
            /* fall through */
        case TB_DPIECE_CONV_IN:
        case TB_DPIECE_DOWN:
        case TB_DPIECE_UP:
            ok =
                ok && in_arena(p->c1.w, co * ci * 9, np, false) && in_arena(p->c1.b, co, np, false);
            break;
        case TB_DPIECE_RESNET:
            ok = in_arena(p->n1.w, ci, np, false) && in_arena(p->n1.b, ci, np, false) &&
                 in_arena(p->c1.w, co * ci * 9, np, false) && in_arena(p->c1.b, co, np, false) &&
                 in_arena(p->temb.w, co * Te, np, false) && in_arena(p->temb.b, co, np, false) &&
                 in_arena(p->n2.w, co, np, false) && in_arena(p->n2.b, co, np, false) &&
                 in_arena(p->c2.w, co * co * 9, np, false) && in_arena(p->c2.b, co, np, false) &&
                 (ci == co ||
                  (in_arena(p->sc.w, co * ci, np, false) && in_arena(p->sc.b, co, np, false)));
            break;
        case TB_DPIECE_TRANSFORMER:
            ok = ci == co && (p->depth == 0 || co % (size_t)a->head_dim == 0) &&
                 in_arena(p->n1.w, co, np, false) && in_arena(p->n1.b, co, np, false) &&
                 in_arena(p->pin.w, co * co, np, false) && in_arena(p->pin.b, co, np, false) &&
                 in_arena(p->pout.w, co * co, np, false) && in_arena(p->pout.b, co, np, false) &&
                 p->block >= 0 && p->block + p->depth <= L->nblocks;
            for (int d = 0; ok && d < p->depth; d++) {
                const struct tb_dblock *k = &L->blocks[p->block + d];
                size_t C = co;
                ok = in_arena(k->ln1.w, C, np, false) && in_arena(k->ln1.b, C, np, false) &&
                     in_arena(k->wqkv, 3 * C * C, np, false) &&
                     in_arena(k->ao.w, C * C, np, false) && in_arena(k->ao.b, C, np, false) &&
                     in_arena(k->ln2.w, C, np, false) && in_arena(k->ln2.b, C, np, false) &&
                     in_arena(k->wq2, C * C, np, false) &&
                     in_arena(k->wkv2, 2 * C * Dc, np, false) &&
                     in_arena(k->co.w, C * C, np, false) && in_arena(k->co.b, C, np, false) &&
                     in_arena(k->ln3.w, C, np, false) && in_arena(k->ln3.b, C, np, false) &&
                     in_arena(k->ff1.w, 8 * C * C, np, false) &&
                     in_arena(k->ff1.b, 8 * C, np, false) &&
                     in_arena(k->ff2.w, 4 * C * C, np, false) && in_arena(k->ff2.b, C, np, false);
            }
            break;
        }
        if (!ok)
            return cu_err(err, errlen,
                          "%s: UNet piece %d: offsets outside the arena or shapes "
                          "that do not fit",
                          a->name, i);
    }
    return 0;
}

/* Allocate e's buffers for e->maxB images and copy the weights in (e->a, maxB, H, W and
 * lay set). On failure the caller frees e. */
static int engine_setup(struct dengine *e, const float *params, char *err, size_t errlen)
{
    const struct tb_darch *a = &e->a;
    const struct tb_dlayout *L = &e->lay;
    const int lat_h = e->H, lat_w = e->W;
    size_t BM = (size_t)e->maxB, S = (size_t)a->text_tokens, Dc = (size_t)a->context_dim;
    size_t act = 0, col = 0, tok = 0, kv = 0, maxco = 1;
    size_t img = (size_t)a->latent_channels * lat_h * lat_w;
    size_t Tp = (size_t)a->time_proj_dim, Te = (size_t)a->time_embed_dim;
    size_t Da = (size_t)(a->add_in_dim > 0 ? a->add_in_dim : 1);
    size_t Dp = (size_t)(a->pooled_dim > 0 ? a->pooled_dim : 1);

    /* sizes: the largest of each buffer over the pieces, per image */
    for (int i = 0; i < L->npieces; i++) {
        const struct tb_dpiece *p = &L->pieces[i];
        size_t hw = (size_t)(lat_h >> p->level) * (size_t)(lat_w >> p->level);
        size_t ci = (size_t)p->ci, co = (size_t)p->co;
        act = zmax(act, hw * zmax(ci, co));
        maxco = zmax(maxco, co);
        switch (p->kind) {
        case TB_DPIECE_UP: /* the conv runs on the upsampled input */
            act = zmax(act, 4 * hw * co);
            col = zmax(col, 4 * hw * 9 * ci);
            break;
        case TB_DPIECE_DOWN:
            col = zmax(col, hw / 4 * 9 * ci);
            break;
        case TB_DPIECE_RESNET:
            col = zmax(col, hw * 9 * zmax(ci, co));
            break;
        case TB_DPIECE_CONV_IN:
        case TB_DPIECE_CONV_OUT:
            col = zmax(col, hw * 9 * ci);
            break;
        case TB_DPIECE_TRANSFORMER:
            tok = zmax(tok, hw * co);
            kv = zmax(kv, S * 2 * co);
            break;
        }
    }
    CU_ALLOC(&e->mem, e->p, e->n_params, "parameters");
    CU_ALLOC(&e->mem, e->wb, e->n_params, "bf16 parameters");
    CU_ALLOC(&e->mem, e->x_in, BM * img, "input latents");
    CU_ALLOC(&e->mem, e->out, BM * img, "output");
    CU_ALLOC(&e->mem, e->lat, BM * img, "sampler latents");
    CU_ALLOC(&e->mem, e->t_in, BM, "timesteps");
    CU_ALLOC(&e->mem, e->ctx_in, BM * S * Dc, "context");
    CU_ALLOC(&e->mem, e->ctx_b, BM * S * Dc, "bf16 context");
    CU_ALLOC(&e->mem, e->pooled_in, BM * Dp, "pooled vectors");
    CU_ALLOC(&e->mem, e->feat_b, BM * Tp, "timestep features");
    CU_ALLOC(&e->mem, e->add_b, BM * Da, "additional input");
    CU_ALLOC(&e->mem, e->th, BM * Te, "embedding MLP hidden");
    CU_ALLOC(&e->mem, e->th_b, BM * Te, "embedding MLP hidden (bf16)");
    CU_ALLOC(&e->mem, e->temb, BM * Te, "time embedding");
    CU_ALLOC(&e->mem, e->tsilu_b, BM * Te, "SiLU(time embedding)");
    CU_ALLOC(&e->mem, e->tproj, BM * maxco, "time projection");
    CU_ALLOC(&e->mem, e->cur, BM * act, "activations");
    CU_ALLOC(&e->mem, e->nxt, BM * act, "activations");
    CU_ALLOC(&e->mem, e->hid, BM * act, "ResNet middle");
    CU_ALLOC(&e->mem, e->cat, BM * act, "concatenated input");
    CU_ALLOC(&e->mem, e->nb, BM * act, "normalised activations");
    CU_ALLOC(&e->mem, e->col, BM * col, "im2col matrix");
    CU_ALLOC(&e->mem, e->tok, BM * tok, "token stream");
    CU_ALLOC(&e->mem, e->ln, BM * tok, "LayerNorm output");
    CU_ALLOC(&e->mem, e->y, BM * tok, "attention output");
    CU_ALLOC(&e->mem, e->qkv, BM * tok * 3, "q|k|v");
    CU_ALLOC(&e->mem, e->kv, BM * kv, "cross-attention k|v");
    CU_ALLOC(&e->mem, e->ff, BM * tok * 8, "GEGLU input");
    CU_ALLOC(&e->mem, e->gg, BM * tok * 4, "GEGLU output");
    for (int i = 0; i < L->npieces; i++) {
        const struct tb_dpiece *p = &L->pieces[i];
        int lo = p->kind == TB_DPIECE_DOWN ? p->level + 1
                 : p->kind == TB_DPIECE_UP ? p->level - 1
                                           : p->level;
        if (p->push)
            CU_ALLOC(&e->mem, e->skip[i],
                     BM * (size_t)p->co * (size_t)(lat_h >> lo) * (size_t)(lat_w >> lo),
                     "skip connection");
    }

    /* weights: the fp32 arena, its bf16 copy, the 3x3 convs reordered in the copy */
    CU_CHECK(cudaMemcpyAsync(e->p, params, e->n_params * sizeof *e->p, cudaMemcpyHostToDevice,
                             g_cu.stream));
    CU_LAUNCH("weights to bf16", k_cast_bf16(e->wb, e->p, e->n_params));
    for (int i = 0; i < L->npieces; i++) {
        const struct tb_dpiece *p = &L->pieces[i];
        if (p->kind == TB_DPIECE_TRANSFORMER) /* no convolutions */
            continue;
        CU_LAUNCH("conv weights", k_conv_weight(e->wb + p->c1.w, e->p + p->c1.w, p->co, p->ci, 3));
        if (p->kind == TB_DPIECE_RESNET)
            CU_LAUNCH("conv weights",
                      k_conv_weight(e->wb + p->c2.w, e->p + p->c2.w, p->co, p->co, 3));
    }
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    return 0;
}

extern "C" int tb_cu_diffusion_init(void **eng, const struct tb_darch *a,
                                    const struct tb_cuda_diffusion_weights *w, int max_batch,
                                    int lat_h, int lat_w, char *err, size_t errlen)
{
    struct dengine *e = NULL;
    const struct tb_dlayout *L = w ? w->layout : NULL;
    int rc = -1;

    *eng = NULL;
    if (a->kind != TB_DARCH_UNET)
        return cu_dit_init(eng, a, w, max_batch, lat_h, lat_w, err, errlen);
    if (!L || !w->params || w->n_params != L->n_params || L->npieces < 1)
        return cu_err(err, errlen, "%s: no parameter layout handed over", a->name);
    if (max_batch < 1 || lat_h < 1 || lat_w < 1 || a->nlevels < 1 ||
        lat_h % (1 << (a->nlevels - 1)) || lat_w % (1 << (a->nlevels - 1)))
        return cu_err(err, errlen, "%s: batch %d of %dx%d latents does not fit the UNet", a->name,
                      max_batch, lat_h, lat_w);
    if (check_layout(a, L, w->n_params, err, errlen) != 0)
        return -1;
    CU_TRY(cu_ctx_init(err, errlen));
    if (!(e = (struct dengine *)calloc(1, sizeof *e)))
        return cu_err(err, errlen, "out of memory for the diffusion engine");
    e->a = *a;
    e->maxB = max_batch;
    e->H = lat_h;
    e->W = lat_w;
    e->n_params = w->n_params;
    e->lay = *L;
    e->lay.pieces = (struct tb_dpiece *)malloc((size_t)L->npieces * sizeof *L->pieces);
    e->lay.blocks = (struct tb_dblock *)malloc((size_t)(L->nblocks + 1) * sizeof *L->blocks);
    e->skip = (float **)calloc((size_t)L->npieces, sizeof *e->skip);
    e->stack = (const float **)calloc((size_t)L->npieces, sizeof *e->stack);
    if (!e->lay.pieces || !e->lay.blocks || !e->skip || !e->stack) {
        cu_err(err, errlen, "out of memory for the diffusion engine");
        goto out;
    }
    memcpy(e->lay.pieces, L->pieces, (size_t)L->npieces * sizeof *L->pieces);
    if (L->nblocks > 0)
        memcpy(e->lay.blocks, L->blocks, (size_t)L->nblocks * sizeof *L->blocks);
    if (engine_setup(e, w->params, err, errlen) != 0)
        goto out;
    *eng = e;
    e = NULL;
    rc = 0;
out:
    engine_free(e);
    return rc;
}

/* Whether eng is dit.cu's engine (both start with their struct tb_darch). */
static bool is_dit(const void *eng)
{
    return eng && ((const struct tb_darch *)eng)->kind != TB_DARCH_UNET;
}

extern "C" void tb_cu_diffusion_free(void *eng)
{
    if (is_dit(eng))
        cu_dit_free(eng);
    else
        engine_free((struct dengine *)eng);
}

extern "C" size_t tb_cu_diffusion_bytes(void *eng)
{
    if (is_dit(eng))
        return cu_dit_bytes(eng);
    return eng ? ((struct dengine *)eng)->mem.bytes : 0;
}

/* Copy one pass's inputs to the device (n floats each, pooled may be absent). */
static int upload(struct dengine *e, const float *x, const float *t, const float *ctx,
                  const float *pooled, int B, char *err, size_t errlen)
{
    const struct tb_darch *a = &e->a;
    size_t img = (size_t)a->latent_channels * e->H * e->W;
    size_t nctx = (size_t)a->text_tokens * a->context_dim;
    if (x)
        CU_CHECK(cudaMemcpyAsync(e->x_in, x, (size_t)B * img * sizeof *x, cudaMemcpyHostToDevice,
                                 g_cu.stream));
    if (t)
        CU_CHECK(cudaMemcpyAsync(e->t_in, t, (size_t)B * sizeof *t, cudaMemcpyHostToDevice,
                                 g_cu.stream));
    CU_CHECK(cudaMemcpyAsync(e->ctx_in, ctx, (size_t)B * nctx * sizeof *ctx, cudaMemcpyHostToDevice,
                             g_cu.stream));
    if (a->pooled_dim > 0)
        CU_CHECK(cudaMemcpyAsync(e->pooled_in, pooled, (size_t)B * a->pooled_dim * sizeof *pooled,
                                 cudaMemcpyHostToDevice, g_cu.stream));
    return 0;
}

extern "C" int tb_cu_diffusion_forward(void *eng, const float *x, const float *t, const float *ctx,
                                       const float *pooled, const float *guidance, int B,
                                       float *out, char *err, size_t errlen)
{
    struct dengine *e = (struct dengine *)eng;
    size_t img;
    if (!e)
        return cu_err(err, errlen, "diffusion engine not set up");
    if (is_dit(eng))
        return cu_dit_forward(eng, x, t, ctx, pooled, guidance, B, out, err, errlen);
    /* the UNet has no guidance embedding: guidance is not read */
    if (B < 1 || B > e->maxB)
        return cu_err(err, errlen, "batch %d outside 1..%d", B, e->maxB);
    if (!x || !t || !ctx || !pooled || !out)
        return cu_err(err, errlen, "missing input or output");
    img = (size_t)e->a.latent_channels * e->H * e->W;
    CU_TRY(upload(e, x, t, ctx, pooled, B, err, errlen));
    CU_TRY(forward_dev(e, B, err, errlen));
    CU_CHECK(cudaMemcpyAsync(out, e->out, (size_t)B * img * sizeof *out, cudaMemcpyDeviceToHost,
                             g_cu.stream));
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    return 0;
}

extern "C" int tb_cu_diffusion_sample(void *eng, const float *latents, const float *ctx,
                                      const float *pooled, int B, int steps, const float *t,
                                      const float *c_in, const float *dt, float guidance_scale,
                                      char *err, size_t errlen)
{
    struct dengine *e = (struct dengine *)eng;
    int cfg;
    size_t n;
    if (!e)
        return cu_err(err, errlen, "diffusion engine not set up");
    if (is_dit(eng))
        return cu_dit_sample(eng, latents, ctx, pooled, B, steps, t, c_in, dt, guidance_scale, err,
                             errlen);
    cfg = e->a.cfg ? 2 : 1;
    if (steps < 1 || B < 1 || cfg * B > e->maxB)
        return cu_err(err, errlen, "%d steps of %d images%s need a batch of %d, engine has %d",
                      steps, B, cfg == 2 ? " with classifier-free guidance" : "", cfg * B, e->maxB);
    if (!latents || !ctx || !pooled || !t || !c_in || !dt)
        return cu_err(err, errlen, "missing sampler input");
    n = (size_t)B * e->a.latent_channels * e->H * e->W;
    CU_CHECK(
        cudaMemcpyAsync(e->lat, latents, n * sizeof *latents, cudaMemcpyHostToDevice, g_cu.stream));
    CU_TRY(upload(e, NULL, NULL, ctx, pooled, cfg * B, err, errlen));
    e->lat_B = B;
    for (int s = 0; s < steps; s++) {
        CU_LAUNCH("sampler input", k_scale_copies(e->x_in, e->lat, c_in[s], n, cfg));
        CU_LAUNCH("sampler timesteps", k_fill(e->t_in, t[s], (size_t)cfg * B));
        CU_TRY(forward_dev(e, cfg * B, err, errlen));
        CU_LAUNCH("Euler step", k_euler(e->lat, e->out, n, dt[s], guidance_scale, cfg == 2));
    }
    return 0;
}

extern "C" int tb_cu_diffusion_latents(void *eng, float *out, size_t n, bool *finite, char *err,
                                       size_t errlen)
{
    struct dengine *e = (struct dengine *)eng;
    size_t have;
    if (!e)
        return cu_err(err, errlen, "diffusion engine not set up");
    if (is_dit(eng))
        return cu_dit_latents(eng, out, n, finite, err, errlen);
    have = (size_t)e->lat_B * e->a.latent_channels * e->H * e->W;
    return cu_latents_down(out, n, e->lat, have, finite, err, errlen);
}

int cu_latents_down(float *out, size_t n, const float *lat, size_t have, bool *finite, char *err,
                    size_t errlen)
{
    if (have == 0)
        return cu_err(err, errlen, "no latents: no sample has run");
    if (n > have)
        n = have;
    CU_CHECK(cudaMemcpyAsync(out, lat, n * sizeof *out, cudaMemcpyDeviceToHost, g_cu.stream));
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    *finite = true;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(out[i])) {
            *finite = false;
            break;
        }
    return 0;
}

/* ---- kernel tests ---- */

int cu_diffusion_op(struct cu_bufs *b, struct tb_cuda_op_args *a, char *err, size_t errlen)
{
    switch (a->op) {
    case TB_CUDA_OP_GROUPNORM: {
        size_t n = (size_t)a->B * a->H * a->W * a->C;
        float *x, *w, *bb;
        bf16 *o;
        CU_TRY(cu_up_f32(b, &x, a->in[0], n, err, errlen));
        CU_TRY(cu_up_f32(b, &w, a->in[1], (size_t)a->C, err, errlen));
        CU_TRY(cu_up_f32(b, &bb, a->in[2], (size_t)a->C, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&o, n * sizeof *o, err, errlen));
        CU_LAUNCH("groupnorm", k_groupnorm(o, x, w, bb, a->B, (long long)a->H * a->W, a->C, a->G,
                                           a->eps, a->silu));
        return cu_down_bf16(b, a->out[0], o, n, err, errlen);
    }
    case TB_CUDA_OP_CONV2D: {
        int k = a->ksize, s = a->stride < 1 ? 1 : a->stride;
        int H = a->upsample ? 2 * a->H : a->H, W = a->upsample ? 2 * a->W : a->W;
        int Ho = (H + 2 * (k / 2) - k) / s + 1, Wo = (W + 2 * (k / 2) - k) / s + 1;
        size_t nx = (size_t)a->B * a->H * a->W * a->ci, nw = (size_t)a->co * a->ci * k * k;
        size_t rows = (size_t)a->B * Ho * Wo, no = rows * a->co;
        bf16 *x, *wr, *col;
        float *w, *bias, *o;
        struct cu_gemm g;
        if (k < 1 || k % 2 == 0)
            return cu_err(err, errlen, "conv2d test: kernel size %d is not odd", k);
        CU_TRY(cu_up_bf16(b, &x, a->in[0], nx, err, errlen));
        CU_TRY(cu_up_f32(b, &w, a->in[1], nw, err, errlen));
        CU_TRY(cu_up_f32(b, &bias, a->in[2], (size_t)a->co, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&wr, nw * sizeof *wr, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&col, rows * k * k * a->ci * sizeof *col, err, errlen));
        CU_TRY(cu_up_f32(b, &o, NULL, no, err, errlen));
        CU_LAUNCH("conv weights", k_conv_weight(wr, w, a->co, a->ci, k));
        CU_LAUNCH("im2col", k_im2col_bf16(col, x, a->B, a->ci, H, W, k, s, a->upsample, false));
        memset(&g, 0, sizeof g);
        g.tb = true;
        g.out_f32 = true;
        g.M = (int)rows;
        g.N = a->co;
        g.K = k * k * a->ci;
        g.A = col;
        g.lda = g.K;
        g.B = wr;
        g.ldb = g.K;
        g.D = o;
        g.ldd = a->co;
        g.alpha = 1.0f;
        CU_TRY(cu_gemm_run(&g, "conv2d test", err, errlen));
        CU_LAUNCH("conv bias",
                  k_epilogue(o, bias, NULL, NULL, NULL, 1, (long long)rows, a->co, NULL));
        return cu_down_f32(a->out[0], o, no, err, errlen);
    }
    case TB_CUDA_OP_LAYERNORM: {
        size_t n = (size_t)a->N * a->C;
        float *x, *w, *bb;
        bf16 *o;
        CU_TRY(cu_up_f32(b, &x, a->in[0], n, err, errlen));
        CU_TRY(cu_up_f32(b, &w, a->in[1], (size_t)a->C, err, errlen));
        CU_TRY(cu_up_f32(b, &bb, a->in[2], (size_t)a->C, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&o, n * sizeof *o, err, errlen));
        CU_LAUNCH("layernorm", k_layernorm(o, x, w, bb, a->N, a->C, a->eps));
        return cu_down_bf16(b, a->out[0], o, n, err, errlen);
    }
    case TB_CUDA_OP_GEGLU: {
        size_t n = (size_t)a->N * a->F;
        float *ff, *bias;
        bf16 *h;
        CU_TRY(cu_up_f32(b, &ff, a->in[0], 2 * n, err, errlen));
        CU_TRY(cu_up_f32(b, &bias, a->in[1], 2 * (size_t)a->F, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&h, n * sizeof *h, err, errlen));
        CU_LAUNCH("geglu", k_geglu(h, ff, bias, a->N, a->F));
        return cu_down_bf16(b, a->out[0], h, n, err, errlen);
    }
    case TB_CUDA_OP_ATTENTION_NC: {
        int D = a->NH * a->HD;
        size_t nq = (size_t)a->B * a->T * D, nk = (size_t)a->B * a->S * D;
        bf16 *q, *k, *v, *y;
        CU_TRY(cu_up_bf16(b, &q, a->in[0], nq, err, errlen));
        CU_TRY(cu_up_bf16(b, &k, a->in[1], nk, err, errlen));
        CU_TRY(cu_up_bf16(b, &v, a->in[2], nk, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&y, nq * sizeof *y, err, errlen));
        CU_TRY(attention(y, D, q, D, k, D, v, D, a->B, a->T, a->S, a->NH, a->HD, err, errlen));
        return cu_down_bf16(b, a->out[0], y, nq, err, errlen);
    }
    case TB_CUDA_OP_DIT_LN_MOD: {
        size_t n = (size_t)a->B * a->T * a->C;
        float *x, *mod;
        bf16 *o;
        CU_TRY(cu_up_f32(b, &x, a->in[0], n, err, errlen));
        CU_TRY(cu_up_f32(b, &mod, a->in[1], (size_t)a->B * 2 * a->C, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&o, n * sizeof *o, err, errlen));
        CU_LAUNCH("dit_ln_mod",
                  k_dit_ln_mod(o, x, a->B, a->T, 0, a->T, a->C, mod, 2 * a->C, 0, a->C, a->eps));
        return cu_down_bf16(b, a->out[0], o, n, err, errlen);
    }
    case TB_CUDA_OP_DIT_QKV: {
        int D = a->NH * a->HD, half = a->HD / 2, N = a->H * a->W;
        size_t rows = (size_t)a->B * a->T, zw = (size_t)3 * D + a->F;
        float *z, *bias, *qn = NULL, *kn = NULL, *rc = NULL, *rs = NULL;
        bf16 *qkv, *mlp = NULL;
        if (a->HD % 2 || a->HD > 128 || (N > 0 && a->S + N != a->T))
            return cu_err(err, errlen, "dit_qkv test: head dim %d, %d + %dx%d tokens of %d", a->HD,
                          a->S, a->H, a->W, a->T);
        CU_TRY(cu_up_f32(b, &z, a->in[0], rows * zw, err, errlen));
        CU_TRY(cu_up_f32(b, &bias, a->in[1], zw, err, errlen));
        if (a->in[2])
            CU_TRY(cu_up_f32(b, &qn, a->in[2], (size_t)a->HD, err, errlen));
        if (a->in[3])
            CU_TRY(cu_up_f32(b, &kn, a->in[3], (size_t)a->HD, err, errlen));
        if (N > 0) {
            CU_TRY(cu_up_f32(b, &rc, NULL, (size_t)N * half, err, errlen));
            CU_TRY(cu_up_f32(b, &rs, NULL, (size_t)N * half, err, errlen));
            CU_LAUNCH("RoPE table", k_dit_rope_table(rc, rs, a->H, a->W, a->HD));
        }
        CU_TRY(cu_buf_alloc(b, (void **)&qkv, rows * 3 * D * sizeof *qkv, err, errlen));
        if (a->F > 0)
            CU_TRY(cu_buf_alloc(b, (void **)&mlp, rows * a->F * sizeof *mlp, err, errlen));
        CU_LAUNCH("dit_qkv", k_dit_qkv(qkv, z, (int)zw, bias, qn, kn, rc, rs, a->B, a->T, 0, a->T,
                                       a->S, a->NH, a->HD, mlp, a->F, a->F, a->eps));
        CU_TRY(cu_down_bf16(b, a->out[0], qkv, rows * 3 * D, err, errlen));
        return mlp ? cu_down_bf16(b, a->out[1], mlp, rows * a->F, err, errlen) : 0;
    }
    default:
        break;
    }
    return cu_err(err, errlen, "not a diffusion kernel test: %d", (int)a->op);
}
