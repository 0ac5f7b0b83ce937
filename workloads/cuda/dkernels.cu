/*
 * workloads/cuda/dkernels.cu: the kernels of the GPU diffusion denoiser (contracts in
 * diffusion.cuh). Each mirrors a loop of the CPU engine (workloads/diffusion/unet.c)
 * with fp32 arithmetic on bf16 or fp32 storage; tests/unit/gpu.c holds them to
 * double-precision references.
 *
 * Launch shapes: GroupNorm one block per (image, group), LayerNorm one block per row,
 * element-wise kernels (im2col, epilogues, casts) a
 * grid-stride loop over the output with 64-bit indices (SDXL's im2col matrices reach
 * 10^8 elements). Reductions: warp shuffles, then one shared-memory pass across the
 * warps of a block.
 */
#include "diffusion.cuh"

#include <math.h>

static __device__ __forceinline__ float silu(float v)
{
    return v / (1.0f + expf(-v));
}

/* ---- norms ---- */

#define GN_THREADS 512

/* Two passes for the statistics (mean, then the squared deviations: no cancellation),
 * a third writes. Element i of the group is pixel i / cpg, channel g cpg + i % cpg. */
__global__ void groupnorm_kernel(bf16 *out, const float *x, const float *w, const float *b,
                                 long long HW, int C, int G, float eps, bool act)
{
    int img = blockIdx.x / G, g = blockIdx.x % G, cpg = C / G;
    long long n = HW * cpg;
    const float *xb = x + (size_t)img * HW * C + (size_t)g * cpg;
    bf16 *ob = out + (size_t)img * HW * C + (size_t)g * cpg;
    float s = 0.0f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x)
        s += xb[(size_t)(i / cpg) * C + i % cpg];
    float mean = block_sum(s) / (float)n;
    float v = 0.0f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        float d = xb[(size_t)(i / cpg) * C + i % cpg] - mean;
        v += d * d;
    }
    float rstd = rsqrtf(block_sum(v) / (float)n + eps);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        size_t at = (size_t)(i / cpg) * C + i % cpg;
        int c = g * cpg + (int)(i % cpg);
        float y = (xb[at] - mean) * rstd * w[c] + b[c];
        ob[at] = __float2bfloat16(act ? silu(y) : y);
    }
}

cudaError_t k_groupnorm(bf16 *out, const float *x, const float *w, const float *b, int B,
                        long long HW, int C, int G, float eps, bool silu_after)
{
    if (G < 1 || C % G)
        return cudaErrorInvalidValue;
    TB_KL(B * G, GN_THREADS, 0, groupnorm_kernel)(out, x, w, b, HW, C, G, eps, silu_after);
    return cudaGetLastError();
}

__global__ void layernorm_kernel(bf16 *out, const float *x, const float *w, const float *b, int C,
                                 float eps)
{
    const float *xr = x + (size_t)blockIdx.x * C;
    bf16 *o = out + (size_t)blockIdx.x * C;
    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        s += xr[c];
    float mean = block_sum(s) / (float)C;
    float v = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        v += (xr[c] - mean) * (xr[c] - mean);
    float rstd = rsqrtf(block_sum(v) / (float)C + eps);
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        o[c] = __float2bfloat16((xr[c] - mean) * rstd * (w ? w[c] : 1.0f) + (b ? b[c] : 0.0f));
}

cudaError_t k_layernorm(bf16 *out, const float *x, const float *w, const float *b, int N, int C,
                        float eps)
{
    TB_KL(N, 128, 0, layernorm_kernel)(out, x, w, b, C, eps);
    return cudaGetLastError();
}

/* ---- convolution pieces ---- */

template <typename T>
__global__ void im2col_kernel(bf16 *col, const T *in, int B, int C, int H, int W, int k, int s,
                              bool up, bool nchw, int Ho, int Wo)
{
    size_t KK = (size_t)k * k * C, total = (size_t)B * Ho * Wo * KK;
    int pad = k / 2, Hp = up ? H / 2 : H, Wp = up ? W / 2 : W;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / KK;
        int j = (int)(i % KK), c = j % C, tap = j / C, kx = tap % k, ky = tap / k;
        int ox = (int)(r % Wo), oy = (int)(r / Wo % Ho), b = (int)(r / ((size_t)Wo * Ho));
        int iy = oy * s + ky - pad, ix = ox * s + kx - pad;
        float v = 0.0f;
        if (iy >= 0 && iy < H && ix >= 0 && ix < W) {
            int py = up ? iy / 2 : iy, px = up ? ix / 2 : ix;
            size_t at = nchw ? (((size_t)b * C + c) * Hp + py) * Wp + px
                             : (((size_t)b * Hp + py) * Wp + px) * C + c;
            v = to_f32(in[at]);
        }
        col[i] = __float2bfloat16(v);
    }
}

template <typename T>
static cudaError_t im2col(bf16 *col, const T *in, int B, int C, int H, int W, int k, int s, bool up,
                          bool nchw)
{
    int pad = k / 2, Ho = (H + 2 * pad - k) / s + 1, Wo = (W + 2 * pad - k) / s + 1;
    size_t total = (size_t)B * Ho * Wo * k * k * C;
    TB_KL(cu_grid(total, 256), 256, 0, im2col_kernel<T>)
    (col, in, B, C, H, W, k, s, up, nchw, Ho, Wo);
    return cudaGetLastError();
}

cudaError_t k_im2col_f32(bf16 *col, const float *in, int B, int C, int H, int W, int k, int s,
                         bool up, bool nchw)
{
    return im2col<float>(col, in, B, C, H, W, k, s, up, nchw);
}

cudaError_t k_im2col_bf16(bf16 *col, const bf16 *in, int B, int C, int H, int W, int k, int s,
                          bool up, bool nchw)
{
    return im2col<bf16>(col, in, B, C, H, W, k, s, up, nchw);
}

__global__ void conv_weight_kernel(bf16 *out, const float *w, int co, int ci, int k)
{
    size_t kk = (size_t)k * k, total = (size_t)co * ci * kk;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        /* i indexes the output [o, tap, c] */
        size_t o = i / (kk * ci), rest = i % (kk * ci), tap = rest / ci, c = rest % ci;
        out[i] = __float2bfloat16(w[(o * ci + c) * kk + tap]);
    }
}

cudaError_t k_conv_weight(bf16 *out, const float *w, int co, int ci, int k)
{
    size_t total = (size_t)co * ci * k * k;
    TB_KL(cu_grid(total, 256), 256, 0, conv_weight_kernel)(out, w, co, ci, k);
    return cudaGetLastError();
}

__global__ void epilogue_kernel(float *y, const float *b1, const float *b2, const float *per_img,
                                const float *res, long long R, int C, size_t total, bf16 *silu_out)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(i % C);
        float v = y[i];
        if (b1)
            v += b1[c];
        if (b2)
            v += b2[c];
        if (per_img)
            v += per_img[i / ((size_t)R * C) * C + c];
        if (res)
            v += res[i];
        y[i] = v;
        if (silu_out)
            silu_out[i] = __float2bfloat16(silu(v));
    }
}

cudaError_t k_epilogue(float *y, const float *b1, const float *b2, const float *per_img,
                       const float *res, int B, long long R, int C, bf16 *silu_out)
{
    size_t total = (size_t)B * R * C;
    TB_KL(cu_grid(total, 256), 256, 0, epilogue_kernel)
    (y, b1, b2, per_img, res, R, C, total, silu_out);
    return cudaGetLastError();
}

/* ---- transformer pieces ---- */

__global__ void geglu_kernel(bf16 *h, const float *ff, const float *bias, int N, int F)
{
    size_t total = (size_t)N * F;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t n = i / F;
        int j = (int)(i % F);
        float v = ff[n * 2 * F + j], g = ff[n * 2 * F + F + j];
        if (bias) {
            v += bias[j];
            g += bias[F + j];
        }
        h[i] = __float2bfloat16(v * 0.5f * g * (1.0f + erff(g * 0.70710678f)));
    }
}

cudaError_t k_geglu(bf16 *h, const float *ff, const float *bias, int N, int F)
{
    TB_KL(cu_grid((size_t)N * F, 256), 256, 0, geglu_kernel)(h, ff, bias, N, F);
    return cudaGetLastError();
}

/* ---- layout and conditioning ---- */

__global__ void concat_kernel(float *out, const float *a, int ca, const float *b, int cb,
                              size_t total)
{
    int c = ca + cb;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / c;
        int j = (int)(i % c);
        out[i] = j < ca ? a[r * ca + j] : b[r * cb + (j - ca)];
    }
}

cudaError_t k_concat(float *out, const float *a, int ca, const float *b, int cb, long long R)
{
    size_t total = (size_t)R * (ca + cb);
    TB_KL(cu_grid(total, 256), 256, 0, concat_kernel)(out, a, ca, b, cb, total);
    return cudaGetLastError();
}

__global__ void nhwc_to_nchw_kernel(float *out, const float *in, const float *bias, long long HW,
                                    int C, size_t total)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        /* i indexes the output [b, c, p] */
        size_t p = i % HW, bc = i / HW, b = bc / C;
        int c = (int)(bc % C);
        out[i] = in[(b * HW + p) * C + c] + (bias ? bias[c] : 0.0f);
    }
}

cudaError_t k_nhwc_to_nchw(float *out, const float *in, const float *bias, int B, long long HW,
                           int C)
{
    size_t total = (size_t)B * HW * C;
    TB_KL(cu_grid(total, 256), 256, 0, nhwc_to_nchw_kernel)(out, in, bias, HW, C, total);
    return cudaGetLastError();
}

__global__ void timestep_features_kernel(bf16 *f, const float *t, int B, int Tp)
{
    int half = Tp / 2;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < B * Tp; i += gridDim.x * blockDim.x) {
        int b = i / Tp, j = i % Tp;
        double v = 0.0;
        if (j < 2 * half) {
            int k = j < half ? j : j - half;
            double arg = 1000.0 * (double)t[b] * exp(-log(10000.0) * k / half);
            v = j < half ? cos(arg) : sin(arg);
        }
        f[i] = __float2bfloat16((float)v);
    }
}

cudaError_t k_timestep_features(bf16 *f, const float *t, int B, int Tp)
{
    TB_KL(cu_grid((size_t)B * Tp, 128), 128, 0, timestep_features_kernel)(f, t, B, Tp);
    return cudaGetLastError();
}

__global__ void add_input_kernel(bf16 *ai, const float *pooled, int B, int Dp, int Da)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < B * Da; i += gridDim.x * blockDim.x) {
        int b = i / Da, j = i % Da;
        ai[i] = __float2bfloat16(j < Dp ? pooled[(size_t)b * Dp + j] : 0.0f);
    }
}

cudaError_t k_add_input(bf16 *ai, const float *pooled, int B, int Dp, int Da)
{
    TB_KL(cu_grid((size_t)B * Da, 128), 128, 0, add_input_kernel)(ai, pooled, B, Dp, Da);
    return cudaGetLastError();
}

/* ---- the sampler ---- */

__global__ void scale_copies_kernel(float *dst, const float *src, float c, size_t n, int copies)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = src[i] * c;
        for (int h = 0; h < copies; h++)
            dst[(size_t)h * n + i] = v;
    }
}

cudaError_t k_scale_copies(float *dst, const float *src, float c, size_t n, int copies)
{
    TB_KL(cu_grid(n, 256), 256, 0, scale_copies_kernel)(dst, src, c, n, copies);
    return cudaGetLastError();
}

__global__ void fill_kernel(float *x, float v, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = v;
}

cudaError_t k_fill(float *x, float v, size_t n)
{
    TB_KL(cu_grid(n, 256), 256, 0, fill_kernel)(x, v, n);
    return cudaGetLastError();
}

__global__ void euler_kernel(float *lat, const float *out, size_t n, float dt, float g, bool cfg)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float pred = cfg ? out[n + i] + g * (out[i] - out[n + i]) : out[i];
        lat[i] += dt * pred;
    }
}

cudaError_t k_euler(float *lat, const float *out, size_t n, float dt, float g, bool cfg)
{
    TB_KL(cu_grid(n, 256), 256, 0, euler_kernel)(lat, out, n, dt, g, cfg);
    return cudaGetLastError();
}
