/*
 * workloads/cuda/diffusion.cuh: the kernels of the GPU diffusion denoiser (dkernels.cu)
 * and the entries of its engine (diffusion.cu), shared with the plugin's table and
 * kernel tests (plugin.cu).
 *
 * Layout: images are channel-last on the device, [B, H, W, C] (HW = H*W pixels per
 * image, rows = B*HW), so a transformer's tokens are the image itself and a 3x3
 * convolution is one product of the im2col matrix [rows, k*k*ci] with the weights
 * reordered to [co, k, k, ci] (k_conv_weight). The CPU engine's NCHW input and output
 * are read and written at the two ends (k_im2col's nchw flag, k_nhwc_to_nchw).
 *
 * Precision: as harness/tb_cuda_abi.h states: bf16 into every product (fp32
 * accumulation), the activations between pieces, norms' statistics, softmax, the
 * timestep features' arithmetic and every residual sum in fp32.
 *
 * Each launcher returns the launch's cudaGetLastError().
 */
#ifndef TB_CUDA_DIFFUSION_CUH
#define TB_CUDA_DIFFUSION_CUH

#include "cuda_common.cuh"

/* out[b, p, c] (bf16) = GroupNorm over the G groups of C/G channels of image b, scale
 * w[c] and shift b[c] (then SiLU when silu); x [B, HW, C] fp32. */
cudaError_t k_groupnorm(bf16 *out, const float *x, const float *w, const float *b, int B,
                        long long HW, int C, int G, float eps, bool silu);
/* out[n] (bf16) = LayerNorm of row n of x [N, C] with scale w and shift b. */
cudaError_t k_layernorm(bf16 *out, const float *x, const float *w, const float *b, int N, int C,
                        float eps);
/* im2col for a k x k convolution with padding k/2 and stride s of images of H x W
 * (up: the input is H/2 x W/2, upsampled 2x nearest first): col [B*Ho*Wo, k*k*C]
 * (bf16), column (ky*k + kx)*C + c. in: channel-last [B, H', W', C], or NCHW when nchw. */
cudaError_t k_im2col_f32(bf16 *col, const float *in, int B, int C, int H, int W, int k, int s,
                         bool up, bool nchw);
cudaError_t k_im2col_bf16(bf16 *col, const bf16 *in, int B, int C, int H, int W, int k, int s,
                          bool up, bool nchw);
/* out [co, k, k, ci] (bf16) from PyTorch's w [co, ci, k, k] (fp32). */
cudaError_t k_conv_weight(bf16 *out, const float *w, int co, int ci, int k);
/* y[b, r, c] += b1[c] + b2[c] + per_img[b, c] + res[b, r, c] over B images of R rows of
 * C (each addend skipped when NULL); then silu_out (bf16, when not NULL) = SiLU(y). */
cudaError_t k_epilogue(float *y, const float *b1, const float *b2, const float *per_img,
                       const float *res, int B, long long R, int C, bf16 *silu_out);
/* h[n, j] (bf16) = (ff[n, j] + bias[j]) GELU(ff[n, F + j] + bias[F + j]) for N rows of
 * ff [N, 2F] fp32 (bias NULL: none); the exact (erf) GELU. */
cudaError_t k_geglu(bf16 *h, const float *ff, const float *bias, int N, int F);
/* out[r] = [a[r] (ca floats) | b[r] (cb floats)] for R rows. */
cudaError_t k_concat(float *out, const float *a, int ca, const float *b, int cb, long long R);
/* out [B, C, HW] = in [B, HW, C] + bias[c] (bias NULL: none). */
cudaError_t k_nhwc_to_nchw(float *out, const float *in, const float *bias, int B, long long HW,
                           int C);
/* The UNet's timestep features (diffusers' flip_sin_to_cos, no shift): f[b] (bf16) =
 * [cos | sin] of 1000 t[b] exp(-ln(1e4) i / half), i < half = Tp / 2, computed in double;
 * 0 last when Tp is odd. */
cudaError_t k_timestep_features(bf16 *f, const float *t, int B, int Tp);
/* The additional conditioning input: ai[b] (bf16) = [pooled[b, 0..min(Dp, Da)), 0...]. */
cudaError_t k_add_input(bf16 *ai, const float *pooled, int B, int Dp, int Da);
/* The sampler: dst[h n + i] = src[i] * c for h < copies; x[i] = v for n floats; the
 * Euler step lat[i] += dt * pred, pred = out[i], or with CFG (cfg) out[n + i] +
 * g (out[i] - out[n + i]). */
cudaError_t k_scale_copies(float *dst, const float *src, float c, size_t n, int copies);
cudaError_t k_fill(float *x, float v, size_t n);
cudaError_t k_euler(float *lat, const float *out, size_t n, float dt, float g, bool cfg);

/* ---- the DiT kernels (dit.cu) ----
 * A row set (B, T, r0, n): rows r0 .. r0 + n - 1 of each of B images of T token rows
 * (row b T + r of a buffer). mod: per-image modulation vectors, row width ms, the
 * shift, scale or gate vector at column offset shift, scale, gate. */

/* out[row] (bf16) = LN(x[row]) (1 + scale[b]) + shift[b]: LayerNorm without affine
 * weights over D, eps, fp32 statistics (adaLN modulation). */
cudaError_t k_dit_ln_mod(bf16 *out, const float *x, int B, int T, int r0, int n, int D,
                         const float *mod, int ms, int shift, int scale, float eps);
/* qkv[row] [3D] (bf16, D = NH HD) from z[row] (fp32, row stride ldz) + bias: the q and
 * k heads RMSNorm'ed (weights qn, kn [HD]; NULL: none) then, for rows r >= S of an
 * image, RoPE-rotated by the table of image token r - S (rope_cos, rope_sin [N, HD/2];
 * NULL: none); v as is. mlp (NULL: none): mlp[row, j] (row stride ldm) = GELU_tanh(
 * z[row, 3D + j] + bias[3D + j]) for j < F. HD even, at most 128. */
cudaError_t k_dit_qkv(bf16 *qkv, const float *z, int ldz, const float *bias, const float *qn,
                      const float *kn, const float *rope_cos, const float *rope_sin, int B, int T,
                      int r0, int n, int S, int NH, int HD, bf16 *mlp, int ldm, int F, float eps);
/* FLUX's RoPE table of an Hp x Wp token grid (ids (0, row, col), axes as dit.c),
 * computed in double: [Hp Wp, HD/2] cosines and sines. */
cudaError_t k_dit_rope_table(float *rope_cos, float *rope_sin, int Hp, int Wp, int HD);
/* x[row] += gate[b] (o[row] + bias) over a row set of [., D] buffers (o, bias, mod
 * each NULL: none/1); then + pos[(top + k / Wp) M + left + k % Wp] (pos [M, M, D],
 * NULL: none) for the row's index k in the set. */
cudaError_t k_dit_residual(float *x, const float *o, const float *bias, const float *mod, int ms,
                           int gate, const float *pos, int M, int top, int left, int Wp, int B,
                           int T, int r0, int n, int D);
/* h[row] (bf16) = GELU_tanh(z[row] + bias) over a row set of [., F] buffers. */
cudaError_t k_dit_gelu(bf16 *h, const float *z, const float *bias, int B, int T, int r0, int n,
                       int F);
/* pt [B Hp Wp, PP] (bf16) = the p x p patches of x [B, Cl, Hp p, Wp p] (index c p p +
 * i p + j), and the inverse: out [B, Cl, H, W] = pf [B N, PP] + bias[PP]. */
cudaError_t k_dit_patchify(bf16 *pt, const float *x, int B, int Cl, int Hp, int Wp, int p);
cudaError_t k_dit_unpatchify(float *out, const float *pf, const float *bias, int B, int Cl, int Hp,
                             int Wp, int p);

/* The DiT engine (dit.cu): the diffusion entries' work for TB_DARCH_FLUX and
 * TB_DARCH_MMDIT (diffusion.cu's entries dispatch on the engine's tb_darch kind, the
 * first member of both engines). */
int cu_dit_init(void **eng, const struct tb_darch *a, const struct tb_cuda_diffusion_weights *w,
                int max_batch, int lat_h, int lat_w, char *err, size_t errlen);
void cu_dit_free(void *eng);
size_t cu_dit_bytes(void *eng);
int cu_dit_forward(void *eng, const float *x, const float *t, const float *ctx, const float *pooled,
                   const float *guidance, int B, float *out, char *err, size_t errlen);
int cu_dit_sample(void *eng, const float *latents, const float *ctx, const float *pooled, int B,
                  int steps, const float *t, const float *c_in, const float *dt,
                  float guidance_scale, char *err, size_t errlen);
int cu_dit_latents(void *eng, float *out, size_t n, bool *finite, char *err, size_t errlen);
/* The first n (at most have) latents of the device buffer lat into out (synchronising),
 * and whether all are finite: both engines' diffusion_latents. */
int cu_latents_down(float *out, size_t n, const float *lat, size_t have, bool *finite, char *err,
                    size_t errlen);

/* ---- the engine (diffusion.cu) and its kernel tests ---- */

extern "C" {
int tb_cu_diffusion_init(void **eng, const struct tb_darch *a,
                         const struct tb_cuda_diffusion_weights *w, int max_batch, int lat_h,
                         int lat_w, char *err, size_t errlen);
void tb_cu_diffusion_free(void *eng);
size_t tb_cu_diffusion_bytes(void *eng);
int tb_cu_diffusion_forward(void *eng, const float *x, const float *t, const float *ctx,
                            const float *pooled, const float *guidance, int B, float *out,
                            char *err, size_t errlen);
int tb_cu_diffusion_sample(void *eng, const float *latents, const float *ctx, const float *pooled,
                           int B, int steps, const float *t, const float *c_in, const float *dt,
                           float guidance_scale, char *err, size_t errlen);
int tb_cu_diffusion_latents(void *eng, float *out, size_t n, bool *finite, char *err,
                            size_t errlen);
}

/* TB_CUDA_OP_GROUPNORM .. TB_CUDA_OP_ATTENTION_NC, TB_CUDA_OP_DIT_LN_MOD and
 * TB_CUDA_OP_DIT_QKV (plugin.cu's op dispatches here). */
int cu_diffusion_op(struct cu_bufs *b, struct tb_cuda_op_args *a, char *err, size_t errlen);

#endif
