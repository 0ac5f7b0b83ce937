/*
 * workloads/cuda/dit.cu: the GPU diffusion transformers (TB_DARCH_FLUX's double- and
 * single-stream blocks, TB_DARCH_MMDIT's joint blocks) behind the plugin's diffusion_*
 * entries, computing what workloads/diffusion/dit.c computes, in bf16 mixed precision:
 * bf16 weights and activations into every product (cu_gemm_run, fp32 accumulation);
 * the residual stream, LayerNorm and RMSNorm statistics, adaLN modulation, RoPE, the
 * sinusoidal embeddings, GELU and the gated residual sums in fp32; attention through
 * the fused kernel (flash.cu, non-causal, queries and keys read where the projections
 * left them).
 *
 * Weights: a bf16 copy of the CPU engine's fp32 arena for the products (cast on the
 * device chunk by chunk, so the fp32 arena never sits whole on the device: FLUX.1-dev's
 * 12 billion parameters are 24 GB in bf16, 48 GB more in fp32), and in fp32 only the
 * vectors (biases, norm weights, the position grid), gathered into one small buffer.
 * Every offset comes from the CPU engine's layout (tb_dlayout's DiT part), never
 * recomputed.
 *
 * Tokens: as dit.c, one buffer [B, T, width] per activation with image b's S context
 * rows first, then its N = Hp Wp image rows, so the joint attention of an image is one
 * contiguous sequence of T rows (batch stride T width for the fused kernel). A "row
 * set" (B, T, r0, n) is rows r0 .. r0 + n - 1 of every image: a stream of a double
 * block (context r0 = 0, n = S; image r0 = S, n = N) or all tokens (r0 = 0, n = T).
 * Per-stream products run once per image on its rows (B is small: 1 or 2 with CFG).
 *
 * Block by block (shapes as dit.c's legend):
 *   conditioning  sinusoids of 1000 t (and of 1000 guidance) -> bf16 -> MLPs (product,
 *                 bias + SiLU fused, product) summed in fp32 into c; SiLU(c) in bf16
 *                 feeds every modulation product ([B, 6D] fp32 per stream)
 *   double block  per stream: modulated LayerNorm (bf16 out), q|k|v product (fp32),
 *                 k_dit_qkv (bias, per-head RMSNorm, RoPE of the image rows, bf16 out),
 *                 joint attention, output product, gated residual; then the modulated
 *                 MLP (product, bias + tanh GELU, product, gated residual)
 *   single block  modulated LayerNorm, one product to [q | k | v | MLP in], k_dit_qkv
 *                 also writes GELU of the MLP part beside the attention output, one
 *                 product of [attention | MLP] to D, gated residual
 *   final         AdaLN-Continuous (scale, shift), product to patches, unpatchify
 *
 * Memory: one cudaMalloc per buffer, recorded, sized for max_batch images at init.
 */
#include "diffusion.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIT_EPS    1e-6f
#define ROPE_THETA 10000.0

/* ---- kernels ---- */

/* Global row of entry i of a row set. */
static __device__ __forceinline__ size_t set_row(size_t i, int T, int r0, int n)
{
    return (i / n) * (size_t)T + r0 + i % n;
}

/* tanh-approximation GELU as dit.c: x / (1 + e^(-2u)), u = sqrt(2/pi)(x + 0.044715 x^3). */
static __device__ __forceinline__ float gelu_tanh(float x)
{
    float u = 0.7978845608f * (x + 0.044715f * x * x * x);
    return x / (1.0f + expf(-2.0f * u));
}

__global__ void dit_ln_mod_kernel(bf16 *out, const float *x, int T, int r0, int n, int D,
                                  const float *mod, int ms, int shift, int scale, float eps)
{
    size_t row = set_row(blockIdx.x, T, r0, n);
    const float *xr = x + row * D;
    const float *sh = mod + (size_t)(blockIdx.x / n) * ms + shift;
    const float *sc = mod + (size_t)(blockIdx.x / n) * ms + scale;
    bf16 *o = out + row * D;
    float s = 0.0f;
    for (int c = threadIdx.x; c < D; c += blockDim.x)
        s += xr[c];
    float mean = block_sum(s) / (float)D;
    float v = 0.0f;
    for (int c = threadIdx.x; c < D; c += blockDim.x)
        v += (xr[c] - mean) * (xr[c] - mean);
    float rstd = rsqrtf(block_sum(v) / (float)D + eps);
    for (int c = threadIdx.x; c < D; c += blockDim.x)
        o[c] = __float2bfloat16((xr[c] - mean) * rstd * (1.0f + sc[c]) + sh[c]);
}

cudaError_t k_dit_ln_mod(bf16 *out, const float *x, int B, int T, int r0, int n, int D,
                         const float *mod, int ms, int shift, int scale, float eps)
{
    TB_KL(B * n, 128, 0, dit_ln_mod_kernel)(out, x, T, r0, n, D, mod, ms, shift, scale, eps);
    return cudaGetLastError();
}

/* One warp per (row, head slot of the 3 NH q, k, v heads); lane l owns the pairs
 * l, l + 32 (HD <= 128). Then the block's threads write the MLP columns. */
__global__ void dit_qkv_kernel(bf16 *qkv, const float *z, int ldz, const float *bias,
                               const float *qn, const float *kn, const float *rc, const float *rs,
                               int T, int r0, int n, int S, int NH, int HD, bf16 *mlp, int ldm,
                               int F, float eps)
{
    size_t row = set_row(blockIdx.x, T, r0, n);
    int r = (int)(row % T), D = NH * HD, half = HD / 2;
    int lane = threadIdx.x % WARP, w = threadIdx.x / WARP, nw = blockDim.x / WARP;
    const float *zr = z + row * ldz;
    for (int hh = w; hh < 3 * NH; hh += nw) {
        float a[2] = {0, 0}, b[2] = {0, 0}, ss = 0.0f;
        int base = hh * HD;
        for (int i = 0; i < 2; i++) {
            int j = lane + i * WARP;
            if (j < half) {
                a[i] = zr[base + 2 * j] + (bias ? bias[base + 2 * j] : 0.0f);
                b[i] = zr[base + 2 * j + 1] + (bias ? bias[base + 2 * j + 1] : 0.0f);
                ss += a[i] * a[i] + b[i] * b[i];
            }
        }
        if (hh < 2 * NH) {
            const float *nrm = hh < NH ? qn : kn;
            if (nrm) {
                float rstd = rsqrtf(warp_sum(ss) / (float)HD + eps);
                for (int i = 0; i < 2; i++) {
                    int j = lane + i * WARP;
                    if (j < half) {
                        a[i] *= rstd * nrm[2 * j];
                        b[i] *= rstd * nrm[2 * j + 1];
                    }
                }
            }
            if (rc && r >= S)
                for (int i = 0; i < 2; i++) {
                    int j = lane + i * WARP;
                    if (j < half) {
                        float c = rc[(size_t)(r - S) * half + j];
                        float s = rs[(size_t)(r - S) * half + j];
                        float x0 = a[i], x1 = b[i];
                        a[i] = x0 * c - x1 * s;
                        b[i] = x0 * s + x1 * c;
                    }
                }
        }
        for (int i = 0; i < 2; i++) {
            int j = lane + i * WARP;
            if (j < half) {
                qkv[row * 3 * D + base + 2 * j] = __float2bfloat16(a[i]);
                qkv[row * 3 * D + base + 2 * j + 1] = __float2bfloat16(b[i]);
            }
        }
    }
    if (mlp)
        for (int j = threadIdx.x; j < F; j += blockDim.x)
            mlp[row * ldm + j] =
                __float2bfloat16(gelu_tanh(zr[3 * D + j] + (bias ? bias[3 * D + j] : 0.0f)));
}

cudaError_t k_dit_qkv(bf16 *qkv, const float *z, int ldz, const float *bias, const float *qn,
                      const float *kn, const float *rope_cos, const float *rope_sin, int B, int T,
                      int r0, int n, int S, int NH, int HD, bf16 *mlp, int ldm, int F, float eps)
{
    if (HD % 2 || HD > 128)
        return cudaErrorInvalidValue;
    TB_KL(B * n, 128, 0, dit_qkv_kernel)
    (qkv, z, ldz, bias, qn, kn, rope_cos, rope_sin, T, r0, n, S, NH, HD, mlp, ldm, F, eps);
    return cudaGetLastError();
}

__global__ void dit_rope_table_kernel(float *rc, float *rs, int Hp, int Wp, int HD)
{
    int half = HD / 2, a1 = (7 * HD / 16) & ~1, a0 = HD - 2 * a1;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < Hp * Wp * half;
         i += gridDim.x * blockDim.x) {
        int tk = i / half, j = i % half, row = tk / Wp, col = tk % Wp;
        double angle = 0;
        if (j >= a0 / 2 + a1 / 2)
            angle = col * pow(ROPE_THETA, -2.0 * (j - a0 / 2 - a1 / 2) / a1);
        else if (j >= a0 / 2)
            angle = row * pow(ROPE_THETA, -2.0 * (j - a0 / 2) / a1);
        rc[i] = (float)cos(angle);
        rs[i] = (float)sin(angle);
    }
}

cudaError_t k_dit_rope_table(float *rope_cos, float *rope_sin, int Hp, int Wp, int HD)
{
    TB_KL(cu_grid((size_t)Hp * Wp * HD / 2, 128), 128, 0, dit_rope_table_kernel)
    (rope_cos, rope_sin, Hp, Wp, HD);
    return cudaGetLastError();
}

/* x[row] += gate[b] * (o[row] + bias) (gate NULL: 1) over a row set; then, when pos,
 * + pos[(top + k / Wp) M + left + k % Wp] for the row's index k in its stream. */
__global__ void dit_residual_kernel(float *x, const float *o, const float *bias, const float *mod,
                                    int ms, int gate, const float *pos, int M, int top, int left,
                                    int Wp, int T, int r0, int n, int D, size_t total)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t e = i / D, row = set_row(e, T, r0, n);
        int c = (int)(i % D), k = (int)(e % n);
        float v = (o ? o[row * D + c] : 0.0f) + (bias ? bias[c] : 0.0f);
        if (mod)
            v *= mod[(e / n) * ms + gate + c];
        if (pos)
            v += pos[((size_t)(top + k / Wp) * M + left + k % Wp) * D + c];
        x[row * D + c] += v;
    }
}

cudaError_t k_dit_residual(float *x, const float *o, const float *bias, const float *mod, int ms,
                           int gate, const float *pos, int M, int top, int left, int Wp, int B,
                           int T, int r0, int n, int D)
{
    size_t total = (size_t)B * n * D;
    TB_KL(cu_grid(total, 256), 256, 0, dit_residual_kernel)
    (x, o, bias, mod, ms, gate, pos, M, top, left, Wp, T, r0, n, D, total);
    return cudaGetLastError();
}

/* h[row] (bf16, row width F) = GELU(z[row] + bias) over a row set of z [., F]. */
__global__ void dit_gelu_kernel(bf16 *h, const float *z, const float *bias, int T, int r0, int n,
                                int F, size_t total)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t row = set_row(i / F, T, r0, n);
        int c = (int)(i % F);
        h[row * F + c] = __float2bfloat16(gelu_tanh(z[row * F + c] + (bias ? bias[c] : 0.0f)));
    }
}

cudaError_t k_dit_gelu(bf16 *h, const float *z, const float *bias, int B, int T, int r0, int n,
                       int F)
{
    size_t total = (size_t)B * n * F;
    TB_KL(cu_grid(total, 256), 256, 0, dit_gelu_kernel)(h, z, bias, T, r0, n, F, total);
    return cudaGetLastError();
}

/* Patch vectors pt [B N, PP] (bf16) of x [B, Cl, H, W] (to_img false), or the image
 * out [B, Cl, H, W] = pf [B N, PP] + bias (to_img true). */
__global__ void dit_patch_kernel(bf16 *pt, const float *x, float *out, const float *pf,
                                 const float *bias, int Cl, int Hp, int Wp, int p, size_t total)
{
    int PP = Cl * p * p, N = Hp * Wp, W = Wp * p, H = Hp * p;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t bn = i / PP;
        int k = (int)(i % PP), b = (int)(bn / N), t = (int)(bn % N);
        int c = k / (p * p), pi = k / p % p, pj = k % p;
        size_t at = (((size_t)b * Cl + c) * H + (t / Wp) * p + pi) * W + (t % Wp) * p + pj;
        if (out)
            out[at] = pf[i] + (bias ? bias[k] : 0.0f);
        else
            pt[i] = __float2bfloat16(x[at]);
    }
}

cudaError_t k_dit_patchify(bf16 *pt, const float *x, int B, int Cl, int Hp, int Wp, int p)
{
    size_t total = (size_t)B * Hp * Wp * Cl * p * p;
    TB_KL(cu_grid(total, 256), 256, 0, dit_patch_kernel)
    (pt, x, (float *)NULL, (const float *)NULL, (const float *)NULL, Cl, Hp, Wp, p, total);
    return cudaGetLastError();
}

cudaError_t k_dit_unpatchify(float *out, const float *pf, const float *bias, int B, int Cl, int Hp,
                             int Wp, int p)
{
    size_t total = (size_t)B * Hp * Wp * Cl * p * p;
    TB_KL(cu_grid(total, 256), 256, 0, dit_patch_kernel)
    ((bf16 *)NULL, (const float *)NULL, out, pf, bias, Cl, Hp, Wp, p, total);
    return cudaGetLastError();
}

/* ---- the engine ---- */

struct xengine {
    struct tb_darch a; /* first, as struct dengine's: the entries dispatch on a.kind */
    int maxB, H, W;
    struct tb_dlayout lay; /* owned copy (dbl, sgl arrays owned); the .w offsets index
                              wb, every vector's (.b, q_norm, k_norm, pos) indexes vec */
    size_t n_params;
    int D, NH, HD, F, Cl, p, PP, Hp, Wp, N, S, T, QW, UW, ZW;
    int top, left; /* crop of the MMDiT position grid */

    float *vec; /* [nvec] the fp32 vectors, gathered (xvecs) */
    size_t nvec;
    bf16 *wb; /* [n_params] the arena in bf16 */

    float *x_in, *t_in, *g_in, *ctx_in, *pooled_in, *out, *lat;
    int lat_B;
    bf16 *ctx_b, *pooled_b, *feat_b, *th_b, *sc_b, *pt_b;
    float *th, *c, *mod_i, *mod_c, *pf;
    float *rope_cos, *rope_sin;

    float *x;  /* [BM, T, D] residual stream */
    bf16 *h;   /* [BM, T, D] modulated norm output */
    float *z;  /* [BM, T, ZW] products before their epilogue */
    bf16 *qkv; /* [BM, T, 3D] q | k | v after norms and RoPE */
    bf16 *u;   /* [BM, T, UW] attention output (| MLP activation), MLP hidden */
    float *o;  /* [BM, T, D] a projection before its gated residual */

    struct cu_bufs mem; /* every device buffer it holds */
};

static void xengine_free(struct xengine *e)
{
    if (!e)
        return;
    cu_bufs_release(&e->mem);
    free(e->lay.dbl);
    free(e->lay.sgl);
    free(e);
}

static const float *XP(const struct xengine *e, size_t off)
{
    return off == TB_DLAYOUT_NONE ? NULL : e->vec + off;
}

/* out[M, O] (fp32, row stride ldo) = (acc ? out : 0) + x[M, K] (row stride ldx) W^T,
 * W [O, K] the bf16 weights at offset w. */
static int xlin(const struct xengine *e, float *out, int ldo, bool acc, const bf16 *x, int ldx,
                size_t w, int M, int K, int O, const char *what, char *err, size_t errlen)
{
    struct cu_gemm g = cu_gemm_linear(out, true, ldo, acc, x, ldx, e->wb + w, M, K, O);
    return cu_gemm_run(&g, what, err, errlen);
}

/* The product of a row set, once per image: out rows = x rows W^T (row strides ldx, ldo
 * of buffers of T rows an image). */
static int xlin_set(const struct xengine *e, float *out, int ldo, const bf16 *x, int ldx, size_t w,
                    int B, int r0, int n, int K, int O, const char *what, char *err, size_t errlen)
{
    if (r0 == 0 && n == e->T) /* all rows: one product */
        return xlin(e, out, ldo, false, x, ldx, w, B * n, K, O, what, err, errlen);
    for (int b = 0; b < B; b++) {
        size_t row = (size_t)b * e->T + r0;
        CU_TRY(xlin(e, out + row * ldo, ldo, false, x + row * ldx, ldx, w, n, K, O, what, err,
                    errlen));
    }
    return 0;
}

/* Joint attention of every image: queries rows q0 .. T-1, all T keys, of qkv [B, T, 3D];
 * output into u (row width ldu) at the query rows. */
static int xattend(struct xengine *e, int B, int q0, int ldu, char *err, size_t errlen)
{
    struct cu_flash_fwd f;
    long long ld = 3LL * e->D;
    memset(&f, 0, sizeof f);
    f.B = B;
    f.H = f.HKV = e->NH;
    f.Sq = e->T - q0;
    f.Sk = e->T;
    f.D = e->HD;
    f.scale = 1.0f / sqrtf((float)e->HD);
    f.q = e->qkv + (size_t)q0 * ld;
    f.k = e->qkv + e->D;
    f.v = e->qkv + 2 * (size_t)e->D;
    f.sq.b = f.sk.b = f.sv.b = (long long)e->T * ld;
    f.sq.h = f.sk.h = f.sv.h = e->HD;
    f.sq.s = f.sk.s = f.sv.s = ld;
    f.o = e->u + (size_t)q0 * ldu;
    f.so.b = (long long)e->T * ldu;
    f.so.h = e->HD;
    f.so.s = ldu;
    return cu_flash_fwd(&f, err, errlen);
}

/* mod [B, nD] = SiLU(c) W^T + b (fp32). */
static int xmod(struct xengine *e, float *mod, struct tb_dparam w, int B, int nD, char *err,
                size_t errlen)
{
    CU_TRY(xlin(e, mod, nD, false, e->sc_b, e->D, w.w, B, e->D, nD, "modulation", err, errlen));
    CU_LAUNCH("modulation", k_epilogue(mod, XP(e, w.b), NULL, NULL, NULL, 1, B, nD, NULL));
    return 0;
}

/* c (+)= Linear(SiLU(Linear(in))) with in [B, K] bf16 (K 0: the first layer is its bias). */
static int xcond(struct xengine *e, const bf16 *in, int K, struct tb_dparam l1, struct tb_dparam l2,
                 int B, bool acc, const char *what, char *err, size_t errlen)
{
    const int D = e->D;
    if (K > 0)
        CU_TRY(xlin(e, e->th, D, false, in, K, l1.w, B, K, D, what, err, errlen));
    else
        CU_LAUNCH(what, k_fill(e->th, 0.0f, (size_t)B * D));
    CU_LAUNCH(what, k_epilogue(e->th, XP(e, l1.b), NULL, NULL, NULL, 1, B, D, e->th_b));
    CU_TRY(xlin(e, e->c, D, acc, e->th_b, D, l2.w, B, D, D, what, err, errlen));
    CU_LAUNCH(what, k_epilogue(e->c, XP(e, l2.b), NULL, NULL, NULL, 1, B, D, NULL));
    return 0;
}

static int xembed(struct xengine *e, int B, bool guidance, char *err, size_t errlen)
{
    const struct tb_darch *a = &e->a;
    const struct tb_dlayout *L = &e->lay;
    const int D = e->D, S = e->S, N = e->N, Dc = a->context_dim, Tp = a->time_proj_dim;
    const int Dp = a->pooled_dim;

    CU_LAUNCH("patchify", k_dit_patchify(e->pt_b, e->x_in, B, e->Cl, e->Hp, e->Wp, e->p));
    CU_LAUNCH("context", k_cast_bf16(e->ctx_b, e->ctx_in, (size_t)B * S * Dc));
    for (int b = 0; b < B; b++) {
        float *xb = e->x + (size_t)b * e->T * D;
        CU_TRY(xlin(e, xb + (size_t)S * D, D, false, e->pt_b + (size_t)b * N * e->PP, e->PP,
                    L->patch.w, N, e->PP, D, "patch embedding", err, errlen));
        CU_TRY(xlin(e, xb, D, false, e->ctx_b + (size_t)b * S * Dc, Dc, L->cemb.w, S, Dc, D,
                    "context embedding", err, errlen));
    }
    CU_LAUNCH("patch embedding",
              k_dit_residual(e->x, NULL, XP(e, L->patch.b), NULL, 0, 0, XP(e, L->pos),
                             a->pos_embed_max, e->top, e->left, e->Wp, B, e->T, S, N, D));
    CU_LAUNCH("context embedding", k_dit_residual(e->x, NULL, XP(e, L->cemb.b), NULL, 0, 0, NULL, 0,
                                                  0, 0, 1, B, e->T, 0, S, D));

    CU_LAUNCH("timestep features", k_timestep_features(e->feat_b, e->t_in, B, Tp));
    CU_TRY(xcond(e, e->feat_b, Tp, L->t1, L->t2, B, false, "timestep MLP", err, errlen));
    if (Dp > 0)
        CU_LAUNCH("pooled text", k_cast_bf16(e->pooled_b, e->pooled_in, (size_t)B * Dp));
    CU_TRY(xcond(e, e->pooled_b, Dp, L->y1, L->y2, B, true, "pooled-text MLP", err, errlen));
    if (a->guidance_embed) {
        if (!guidance)
            CU_LAUNCH("guidance", k_fill(e->g_in, 0.0f, (size_t)B));
        CU_LAUNCH("guidance features", k_timestep_features(e->feat_b, e->g_in, B, Tp));
        CU_TRY(xcond(e, e->feat_b, Tp, L->g1, L->g2, B, true, "guidance MLP", err, errlen));
    }
    CU_LAUNCH("SiLU(c)", k_epilogue(e->c, NULL, NULL, NULL, NULL, 1, B, D, e->sc_b));
    return 0;
}

/* One stream's q | k | v into e->qkv rows r0 .. r0 + n (mod: its modulation, ms its
 * row width; shift and scale offsets). */
static int xstream_qkv(struct xengine *e, const struct tb_dstream *w, const float *mod, int ms,
                       int shift, int scale, int B, int r0, int n, char *err, size_t errlen)
{
    const int D = e->D;
    CU_LAUNCH("modulated LayerNorm",
              k_dit_ln_mod(e->h, e->x, B, e->T, r0, n, D, mod, ms, shift, scale, DIT_EPS));
    CU_TRY(xlin_set(e, e->z, e->ZW, e->h, D, w->qkv.w, B, r0, n, D, 3 * D, "q|k|v", err, errlen));
    CU_LAUNCH("q|k|v norms", k_dit_qkv(e->qkv, e->z, e->ZW, XP(e, w->qkv.b), XP(e, w->q_norm),
                                       XP(e, w->k_norm), e->rope_cos, e->rope_sin, B, e->T, r0, n,
                                       e->S, e->NH, e->HD, NULL, 0, 0, DIT_EPS));
    return 0;
}

/* A stream's output projection and MLP with their gated residuals (full adaLN-Zero). */
static int xstream_out(struct xengine *e, const struct tb_dstream *w, const float *mod, int B,
                       int r0, int n, bool mlp, char *err, size_t errlen)
{
    const int D = e->D, F = e->F, ms = 6 * D;
    if (!mlp) {
        CU_TRY(xlin_set(e, e->o, D, e->u, D, w->out.w, B, r0, n, D, D, "attention output", err,
                        errlen));
        CU_LAUNCH("attention residual", k_dit_residual(e->x, e->o, XP(e, w->out.b), mod, ms, 2 * D,
                                                       NULL, 0, 0, 0, 1, B, e->T, r0, n, D));
        return 0;
    }
    CU_LAUNCH("modulated LayerNorm",
              k_dit_ln_mod(e->h, e->x, B, e->T, r0, n, D, mod, ms, 3 * D, 4 * D, DIT_EPS));
    CU_TRY(xlin_set(e, e->z, F, e->h, D, w->fc1.w, B, r0, n, D, F, "MLP in", err, errlen));
    CU_LAUNCH("MLP GELU", k_dit_gelu(e->u, e->z, XP(e, w->fc1.b), B, e->T, r0, n, F));
    CU_TRY(xlin_set(e, e->o, D, e->u, F, w->fc2.w, B, r0, n, F, D, "MLP out", err, errlen));
    CU_LAUNCH("MLP residual", k_dit_residual(e->x, e->o, XP(e, w->fc2.b), mod, ms, 5 * D, NULL, 0,
                                             0, 0, 1, B, e->T, r0, n, D));
    return 0;
}

static int xdouble(struct xengine *e, const struct tb_dditblock *w, int B, char *err, size_t errlen)
{
    const int D = e->D, S = e->S, N = e->N, nc = w->pre_only ? 2 : 6;
    CU_TRY(xmod(e, e->mod_i, w->img.mod, B, 6 * D, err, errlen));
    CU_TRY(xmod(e, e->mod_c, w->ctx.mod, B, nc * D, err, errlen));
    CU_TRY(xstream_qkv(e, &w->img, e->mod_i, 6 * D, 0, D, B, S, N, err, errlen));
    if (w->pre_only) /* (scale, shift) */
        CU_TRY(xstream_qkv(e, &w->ctx, e->mod_c, 2 * D, D, 0, B, 0, S, err, errlen));
    else
        CU_TRY(xstream_qkv(e, &w->ctx, e->mod_c, 6 * D, 0, D, B, 0, S, err, errlen));
    /* a pre-only context's outputs are never used: attend from the image rows only */
    CU_TRY(xattend(e, B, w->pre_only ? S : 0, D, err, errlen));
    CU_TRY(xstream_out(e, &w->img, e->mod_i, B, S, N, false, err, errlen));
    if (!w->pre_only)
        CU_TRY(xstream_out(e, &w->ctx, e->mod_c, B, 0, S, false, err, errlen));
    CU_TRY(xstream_out(e, &w->img, e->mod_i, B, S, N, true, err, errlen));
    if (!w->pre_only)
        CU_TRY(xstream_out(e, &w->ctx, e->mod_c, B, 0, S, true, err, errlen));
    return 0;
}

static int xsingle(struct xengine *e, const struct tb_dsingle *w, int B, char *err, size_t errlen)
{
    const int D = e->D, T = e->T, M = B * T;
    CU_TRY(xmod(e, e->mod_i, w->mod, B, 3 * D, err, errlen));
    CU_LAUNCH("modulated LayerNorm",
              k_dit_ln_mod(e->h, e->x, B, T, 0, T, D, e->mod_i, 3 * D, 0, D, DIT_EPS));
    CU_TRY(
        xlin(e, e->z, e->ZW, false, e->h, D, w->lin1.w, M, D, e->QW, "single lin1", err, errlen));
    CU_LAUNCH("q|k|v norms, MLP GELU",
              k_dit_qkv(e->qkv, e->z, e->ZW, XP(e, w->lin1.b), XP(e, w->q_norm), XP(e, w->k_norm),
                        e->rope_cos, e->rope_sin, B, T, 0, T, e->S, e->NH, e->HD, e->u + D, e->UW,
                        e->F, DIT_EPS));
    CU_TRY(xattend(e, B, 0, e->UW, err, errlen));
    CU_TRY(
        xlin(e, e->o, D, false, e->u, e->UW, w->lin2.w, M, e->UW, D, "single lin2", err, errlen));
    CU_LAUNCH("single residual", k_dit_residual(e->x, e->o, XP(e, w->lin2.b), e->mod_i, 3 * D,
                                                2 * D, NULL, 0, 0, 0, 1, B, T, 0, T, D));
    return 0;
}

static int xforward(struct xengine *e, int B, bool guidance, char *err, size_t errlen)
{
    const struct tb_dlayout *L = &e->lay;
    const int D = e->D, S = e->S, N = e->N;
    CU_TRY(xembed(e, B, guidance, err, errlen));
    for (int l = 0; l < L->ndbl; l++)
        CU_TRY(xdouble(e, &L->dbl[l], B, err, errlen));
    for (int l = 0; l < L->nsgl; l++)
        CU_TRY(xsingle(e, &L->sgl[l], B, err, errlen));
    CU_TRY(xmod(e, e->mod_i, L->fmod, B, 2 * D, err, errlen));
    CU_LAUNCH("final norm",
              k_dit_ln_mod(e->h, e->x, B, e->T, S, N, D, e->mod_i, 2 * D, D, 0, DIT_EPS));
    for (int b = 0; b < B; b++)
        CU_TRY(xlin(e, e->pf + (size_t)b * N * e->PP, e->PP, false,
                    e->h + ((size_t)b * e->T + S) * D, D, L->fout.w, N, D, e->PP,
                    "final projection", err, errlen));
    CU_LAUNCH("unpatchify",
              k_dit_unpatchify(e->out, e->pf, XP(e, L->fout.b), B, e->Cl, e->Hp, e->Wp, e->p));
    return 0;
}

/* ---- set-up ---- */

static bool xin(size_t off, size_t n, size_t np, bool may_lack)
{
    if (off == TB_DLAYOUT_NONE)
        return may_lack;
    return off <= np && n <= np - off;
}

static bool xin2(struct tb_dparam p, size_t in, size_t out, size_t np)
{
    return xin(p.w, in * out, np, false) && xin(p.b, out, np, false);
}

static int xcheck_layout(const struct xengine *e, const struct tb_dlayout *L, char *err,
                         size_t errlen)
{
    const struct tb_darch *a = &e->a;
    const size_t D = (size_t)e->D, F = (size_t)e->F, HD = (size_t)e->HD, np = L->n_params;
    const size_t M = (size_t)a->pos_embed_max;
    bool ok = L->ndbl == a->dit_depth && L->nsgl == a->single_depth && L->dbl &&
              (L->nsgl == 0 || L->sgl) && xin2(L->patch, (size_t)e->PP, D, np) &&
              xin(L->pos, M * M * D, np, M == 0) && xin2(L->t1, (size_t)a->time_proj_dim, D, np) &&
              xin2(L->t2, D, D, np) && xin2(L->y1, (size_t)a->pooled_dim, D, np) &&
              xin2(L->y2, D, D, np) && xin2(L->cemb, (size_t)a->context_dim, D, np) &&
              xin2(L->fmod, D, 2 * D, np) && xin2(L->fout, D, (size_t)e->PP, np) &&
              (!a->guidance_embed ||
               (xin2(L->g1, (size_t)a->time_proj_dim, D, np) && xin2(L->g2, D, D, np)));
    for (int l = 0; ok && l < L->ndbl; l++)
        for (int s = 0; ok && s < 2; s++) {
            const struct tb_dstream *w = s ? &L->dbl[l].ctx : &L->dbl[l].img;
            bool full = s == 0 || !L->dbl[l].pre_only;
            ok = xin2(w->mod, D, (full ? 6 : 2) * D, np) && xin2(w->qkv, D, 3 * D, np) &&
                 xin(w->q_norm, HD, np, !a->qk_norm) && xin(w->k_norm, HD, np, !a->qk_norm) &&
                 (!full ||
                  (xin2(w->out, D, D, np) && xin2(w->fc1, D, F, np) && xin2(w->fc2, F, D, np)));
        }
    for (int l = 0; ok && l < L->nsgl; l++) {
        const struct tb_dsingle *w = &L->sgl[l];
        ok = xin2(w->mod, D, 3 * D, np) && xin2(w->lin1, D, 3 * D + F, np) &&
             xin2(w->lin2, D + F, D, np) && xin(w->q_norm, HD, np, !a->qk_norm) &&
             xin(w->k_norm, HD, np, !a->qk_norm);
    }
    if (!ok)
        return cu_err(err, errlen,
                      "%s: the DiT layout's offsets lie outside the arena or its "
                      "block counts differ from the model's",
                      a->name);
    return 0;
}

/* One vector of n floats at *off in the arena (NONE: absent): with dst, copied to dst +
 * at and *off pointed there. Returns where the next one goes. */
static size_t xvec(size_t *off, size_t n, const float *params, float *dst, size_t at)
{
    if (*off == TB_DLAYOUT_NONE)
        return at;
    if (dst) {
        memcpy(dst + at, params + *off, n * sizeof *dst);
        *off = at;
    }
    return at + n;
}

/* Every fp32 vector of L (biases, norm weights, the position grid): with dst, gathered
 * into dst one after the other and L's offsets moved onto them; without, counted.
 * Returns the floats. */
static size_t xvecs(struct tb_dlayout *L, const struct xengine *e, const float *params, float *dst)
{
    const size_t D = (size_t)e->D, F = (size_t)e->F, HD = (size_t)e->HD;
    const size_t M = (size_t)e->a.pos_embed_max;
    size_t at = 0;
    at = xvec(&L->patch.b, D, params, dst, at);
    at = xvec(&L->pos, M * M * D, params, dst, at);
    at = xvec(&L->t1.b, D, params, dst, at);
    at = xvec(&L->t2.b, D, params, dst, at);
    at = xvec(&L->y1.b, D, params, dst, at);
    at = xvec(&L->y2.b, D, params, dst, at);
    at = xvec(&L->g1.b, D, params, dst, at);
    at = xvec(&L->g2.b, D, params, dst, at);
    at = xvec(&L->cemb.b, D, params, dst, at);
    at = xvec(&L->fmod.b, 2 * D, params, dst, at);
    at = xvec(&L->fout.b, (size_t)e->PP, params, dst, at);
    for (int l = 0; l < L->ndbl; l++)
        for (int s = 0; s < 2; s++) {
            struct tb_dstream *w = s ? &L->dbl[l].ctx : &L->dbl[l].img;
            bool full = s == 0 || !L->dbl[l].pre_only;
            at = xvec(&w->mod.b, (full ? 6 : 2) * D, params, dst, at);
            at = xvec(&w->qkv.b, 3 * D, params, dst, at);
            at = xvec(&w->q_norm, HD, params, dst, at);
            at = xvec(&w->k_norm, HD, params, dst, at);
            at = xvec(&w->out.b, D, params, dst, at); /* NONE in a pre-only context */
            at = xvec(&w->fc1.b, F, params, dst, at);
            at = xvec(&w->fc2.b, D, params, dst, at);
        }
    for (int l = 0; l < L->nsgl; l++) {
        struct tb_dsingle *w = &L->sgl[l];
        at = xvec(&w->mod.b, 3 * D, params, dst, at);
        at = xvec(&w->lin1.b, 3 * D + F, params, dst, at);
        at = xvec(&w->q_norm, HD, params, dst, at);
        at = xvec(&w->k_norm, HD, params, dst, at);
        at = xvec(&w->lin2.b, D, params, dst, at);
    }
    return at;
}

/* The bf16 arena, cast on the device from chunks of the fp32 one through a staging
 * buffer (freed before returning). */
static int xweights(struct xengine *e, const float *params, char *err, size_t errlen)
{
    const size_t chunk = (size_t)1 << 24; /* 64 MiB of fp32 */
    size_t n = e->n_params < chunk ? e->n_params : chunk;
    float *stage = NULL;
    int rc = -1;
    cudaError_t c = cudaMalloc((void **)&stage, (n ? n : 1) * sizeof *stage);
    if (c != cudaSuccess)
        return cu_err(err, errlen, "cudaMalloc of the weights' staging buffer: %s",
                      cudaGetErrorString(c));
    for (size_t at = 0; at < e->n_params; at += n) {
        size_t k = e->n_params - at < n ? e->n_params - at : n;
        c = cudaMemcpyAsync(stage, params + at, k * sizeof *stage, cudaMemcpyHostToDevice,
                            g_cu.stream);
        if (c == cudaSuccess)
            c = k_cast_bf16(e->wb + at, stage, k);
        if (c != cudaSuccess) {
            cu_err(err, errlen, "weights to bf16: %s", cudaGetErrorString(c));
            goto out;
        }
    }
    c = cudaStreamSynchronize(g_cu.stream);
    if (c != cudaSuccess) {
        cu_err(err, errlen, "weights to bf16: %s", cudaGetErrorString(c));
        goto out;
    }
    rc = 0;
out:
    cudaFree(stage);
    return rc;
}

static int xsetup(struct xengine *e, const float *params, char *err, size_t errlen)
{
    const struct tb_darch *a = &e->a;
    const size_t BM = (size_t)e->maxB, rows = BM * e->T, D = (size_t)e->D;
    const size_t img = (size_t)e->Cl * e->H * e->W;
    float *host;
    cudaError_t c;

    CU_ALLOC(&e->mem, e->wb, e->n_params, "bf16 parameters");
    e->nvec = xvecs(&e->lay, e, params, NULL);
    CU_ALLOC(&e->mem, e->vec, e->nvec, "fp32 vectors");
    if (!(host = (float *)malloc((e->nvec ? e->nvec : 1) * sizeof *host)))
        return cu_err(err, errlen, "out of memory for %zu fp32 vectors", e->nvec);
    xvecs(&e->lay, e, params, host);
    c = cudaMemcpyAsync(e->vec, host, e->nvec * sizeof *host, cudaMemcpyHostToDevice, g_cu.stream);
    if (c == cudaSuccess)
        c = cudaStreamSynchronize(g_cu.stream);
    free(host);
    if (c != cudaSuccess)
        return cu_err(err, errlen, "copy of the fp32 vectors: %s", cudaGetErrorString(c));
    CU_TRY(xweights(e, params, err, errlen));
    CU_ALLOC(&e->mem, e->x_in, BM * img, "input latents");
    CU_ALLOC(&e->mem, e->out, BM * img, "output");
    CU_ALLOC(&e->mem, e->lat, BM * img, "sampler latents");
    CU_ALLOC(&e->mem, e->t_in, BM, "timesteps");
    CU_ALLOC(&e->mem, e->g_in, BM, "guidance");
    CU_ALLOC(&e->mem, e->ctx_in, BM * e->S * a->context_dim, "context");
    CU_ALLOC(&e->mem, e->ctx_b, BM * e->S * a->context_dim, "bf16 context");
    CU_ALLOC(&e->mem, e->pooled_in, BM * (a->pooled_dim > 0 ? a->pooled_dim : 1), "pooled vectors");
    CU_ALLOC(&e->mem, e->pooled_b, BM * (a->pooled_dim > 0 ? a->pooled_dim : 1),
             "bf16 pooled vectors");
    CU_ALLOC(&e->mem, e->feat_b, BM * a->time_proj_dim, "sinusoidal features");
    CU_ALLOC(&e->mem, e->th, BM * D, "conditioning MLP hidden");
    CU_ALLOC(&e->mem, e->th_b, BM * D, "conditioning MLP hidden (bf16)");
    CU_ALLOC(&e->mem, e->c, BM * D, "conditioning vector");
    CU_ALLOC(&e->mem, e->sc_b, BM * D, "SiLU(c)");
    CU_ALLOC(&e->mem, e->mod_i, BM * 6 * D, "image modulation");
    CU_ALLOC(&e->mem, e->mod_c, BM * 6 * D, "context modulation");
    CU_ALLOC(&e->mem, e->pt_b, BM * e->N * e->PP, "patches");
    CU_ALLOC(&e->mem, e->pf, BM * e->N * e->PP, "output patches");
    CU_ALLOC(&e->mem, e->x, rows * D, "residual stream");
    CU_ALLOC(&e->mem, e->h, rows * D, "modulated norm output");
    CU_ALLOC(&e->mem, e->z, rows * e->ZW, "products");
    CU_ALLOC(&e->mem, e->qkv, rows * 3 * D, "q|k|v");
    CU_ALLOC(&e->mem, e->u, rows * e->UW, "attention output");
    CU_ALLOC(&e->mem, e->o, rows * D, "projection output");
    if (a->kind == TB_DARCH_FLUX) {
        CU_ALLOC(&e->mem, e->rope_cos, (size_t)e->N * e->HD / 2, "RoPE cosines");
        CU_ALLOC(&e->mem, e->rope_sin, (size_t)e->N * e->HD / 2, "RoPE sines");
        CU_LAUNCH("RoPE table", k_dit_rope_table(e->rope_cos, e->rope_sin, e->Hp, e->Wp, e->HD));
    }
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    return 0;
}

int cu_dit_init(void **eng, const struct tb_darch *a, const struct tb_cuda_diffusion_weights *w,
                int max_batch, int lat_h, int lat_w, char *err, size_t errlen)
{
    const struct tb_dlayout *L = w ? w->layout : NULL;
    struct xengine *e = NULL;
    int rc = -1;

    *eng = NULL;
    if (!L || !w->params || w->n_params != L->n_params || L->ndbl < 1)
        return cu_err(err, errlen, "%s: no DiT parameter layout handed over", a->name);
    if (a->hidden < 1 || a->heads < 1 || a->hidden != a->heads * a->head_dim || a->patch < 1 ||
        a->head_dim % 2 || a->head_dim > 128 || a->mlp_ratio < 1)
        return cu_err(err, errlen,
                      "%s: hidden %d as %d heads of %d (the GPU DiT needs an even head dim up "
                      "to 128)",
                      a->name, a->hidden, a->heads, a->head_dim);
    if (max_batch < 1 || lat_h < 1 || lat_w < 1 || lat_h % a->patch || lat_w % a->patch ||
        (a->pos_embed_max > 0 &&
         (lat_h / a->patch > a->pos_embed_max || lat_w / a->patch > a->pos_embed_max)))
        return cu_err(err, errlen, "%s: batch %d of %dx%d latents does not fit the DiT", a->name,
                      max_batch, lat_h, lat_w);
    CU_TRY(cu_ctx_init(err, errlen));
    if (!(e = (struct xengine *)calloc(1, sizeof *e)))
        return cu_err(err, errlen, "out of memory for the DiT engine");
    e->a = *a;
    e->maxB = max_batch;
    e->H = lat_h;
    e->W = lat_w;
    e->n_params = w->n_params;
    e->D = a->hidden;
    e->NH = a->heads;
    e->HD = a->head_dim;
    e->F = a->mlp_ratio * a->hidden;
    e->Cl = a->latent_channels;
    e->p = a->patch;
    e->PP = e->Cl * e->p * e->p;
    e->Hp = lat_h / e->p;
    e->Wp = lat_w / e->p;
    e->N = e->Hp * e->Wp;
    e->S = a->text_tokens;
    e->T = e->S + e->N;
    e->QW = 3 * e->D + (a->single_depth ? e->F : 0);
    e->UW = e->D + e->F;
    e->ZW = e->QW > e->F ? e->QW : e->F;
    e->top = (a->pos_embed_max - e->Hp) / 2;
    e->left = (a->pos_embed_max - e->Wp) / 2;
    e->lay = *L;
    e->lay.pieces = NULL;
    e->lay.blocks = NULL;
    e->lay.dbl = (struct tb_dditblock *)malloc((size_t)L->ndbl * sizeof *L->dbl);
    e->lay.sgl = (struct tb_dsingle *)malloc((size_t)(L->nsgl + 1) * sizeof *L->sgl);
    if (!e->lay.dbl || !e->lay.sgl) {
        cu_err(err, errlen, "out of memory for the DiT engine");
        goto out;
    }
    if (xcheck_layout(e, L, err, errlen) != 0)
        goto out;
    memcpy(e->lay.dbl, L->dbl, (size_t)L->ndbl * sizeof *L->dbl);
    if (L->nsgl > 0)
        memcpy(e->lay.sgl, L->sgl, (size_t)L->nsgl * sizeof *L->sgl);
    if (xsetup(e, w->params, err, errlen) != 0)
        goto out;
    *eng = e;
    e = NULL;
    rc = 0;
out:
    xengine_free(e);
    return rc;
}

void cu_dit_free(void *eng)
{
    xengine_free((struct xengine *)eng);
}

size_t cu_dit_bytes(void *eng)
{
    return ((struct xengine *)eng)->mem.bytes;
}

static int xupload(struct xengine *e, const float *x, const float *t, const float *ctx,
                   const float *pooled, const float *guidance, int B, char *err, size_t errlen)
{
    const struct tb_darch *a = &e->a;
    size_t img = (size_t)e->Cl * e->H * e->W, nctx = (size_t)e->S * a->context_dim;
    if (x)
        CU_CHECK(cudaMemcpyAsync(e->x_in, x, (size_t)B * img * sizeof *x, cudaMemcpyHostToDevice,
                                 g_cu.stream));
    if (t)
        CU_CHECK(cudaMemcpyAsync(e->t_in, t, (size_t)B * sizeof *t, cudaMemcpyHostToDevice,
                                 g_cu.stream));
    if (guidance)
        CU_CHECK(cudaMemcpyAsync(e->g_in, guidance, (size_t)B * sizeof *guidance,
                                 cudaMemcpyHostToDevice, g_cu.stream));
    CU_CHECK(cudaMemcpyAsync(e->ctx_in, ctx, (size_t)B * nctx * sizeof *ctx, cudaMemcpyHostToDevice,
                             g_cu.stream));
    if (a->pooled_dim > 0)
        CU_CHECK(cudaMemcpyAsync(e->pooled_in, pooled, (size_t)B * a->pooled_dim * sizeof *pooled,
                                 cudaMemcpyHostToDevice, g_cu.stream));
    return 0;
}

int cu_dit_forward(void *eng, const float *x, const float *t, const float *ctx, const float *pooled,
                   const float *guidance, int B, float *out, char *err, size_t errlen)
{
    struct xengine *e = (struct xengine *)eng;
    size_t img = (size_t)e->Cl * e->H * e->W;
    if (B < 1 || B > e->maxB)
        return cu_err(err, errlen, "batch %d outside 1..%d", B, e->maxB);
    if (!x || !t || !ctx || !pooled || !out)
        return cu_err(err, errlen, "missing input or output");
    CU_TRY(xupload(e, x, t, ctx, pooled, guidance, B, err, errlen));
    CU_TRY(xforward(e, B, guidance != NULL, err, errlen));
    CU_CHECK(cudaMemcpyAsync(out, e->out, (size_t)B * img * sizeof *out, cudaMemcpyDeviceToHost,
                             g_cu.stream));
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    return 0;
}

int cu_dit_sample(void *eng, const float *latents, const float *ctx, const float *pooled, int B,
                  int steps, const float *t, const float *c_in, const float *dt,
                  float guidance_scale, char *err, size_t errlen)
{
    struct xengine *e = (struct xengine *)eng;
    int cfg = e->a.cfg ? 2 : 1;
    size_t n;
    if (steps < 1 || B < 1 || cfg * B > e->maxB)
        return cu_err(err, errlen, "%d steps of %d images%s need a batch of %d, engine has %d",
                      steps, B, cfg == 2 ? " with classifier-free guidance" : "", cfg * B, e->maxB);
    if (!latents || !ctx || !pooled || !t || !c_in || !dt)
        return cu_err(err, errlen, "missing sampler input");
    n = (size_t)B * e->Cl * e->H * e->W;
    CU_CHECK(
        cudaMemcpyAsync(e->lat, latents, n * sizeof *latents, cudaMemcpyHostToDevice, g_cu.stream));
    CU_TRY(xupload(e, NULL, NULL, ctx, pooled, NULL, cfg * B, err, errlen));
    /* tb_diffusion_sample: the guidance embedding (FLUX) is set to guidance_scale */
    if (e->a.guidance_embed)
        CU_LAUNCH("sampler guidance", k_fill(e->g_in, guidance_scale, (size_t)cfg * B));
    e->lat_B = B;
    for (int s = 0; s < steps; s++) {
        CU_LAUNCH("sampler input", k_scale_copies(e->x_in, e->lat, c_in[s], n, cfg));
        CU_LAUNCH("sampler timesteps", k_fill(e->t_in, t[s], (size_t)cfg * B));
        CU_TRY(xforward(e, cfg * B, true, err, errlen));
        CU_LAUNCH("Euler step", k_euler(e->lat, e->out, n, dt[s], guidance_scale, cfg == 2));
    }
    return 0;
}

int cu_dit_latents(void *eng, float *out, size_t n, bool *finite, char *err, size_t errlen)
{
    struct xengine *e = (struct xengine *)eng;
    size_t have = (size_t)e->lat_B * e->Cl * e->H * e->W;
    return cu_latents_down(out, n, e->lat, have, finite, err, errlen);
}
