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

/* TB_CUDA_OP_GROUPNORM .. TB_CUDA_OP_ATTENTION_NC (plugin.cu's op dispatches here). */
int cu_diffusion_op(struct cu_bufs *b, struct tb_cuda_op_args *a, char *err, size_t errlen);

#endif
