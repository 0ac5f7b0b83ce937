/*
 * workloads/cuda/kernels.cu: the element-wise, normalisation, attention-softmax, loss
 * and optimizer kernels of the GPU Llama engine (contracts in cuda_common.cuh; shape
 * legend there). Each mirrors a CPU kernel of workloads/llama/llama.c, with fp32
 * arithmetic on bf16 or fp32 storage; tests/unit/gpu.c holds them to double-precision
 * references.
 *
 * Launch shapes: row kernels take one block (or one warp) per row and loop over the
 * row; element-wise kernels a grid-stride loop. Reductions: warp shuffles, then one
 * shared-memory pass across the warps of a block.
 */
#include "cuda_common.cuh"

#include <math.h>

/* ---- embedding, norms ---- */

__global__ void embed_kernel(float *out, const float *emb, const int *ids, int C)
{
    const float *src = emb + (size_t)ids[blockIdx.x] * C;
    float *dst = out + (size_t)blockIdx.x * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        dst[c] = src[c];
}

cudaError_t k_embed(float *out, const float *emb, const int *ids, int N, int C)
{
    TB_KL(N, 256, 0, embed_kernel)(out, emb, ids, C);
    return cudaGetLastError();
}

__global__ void rmsnorm_fwd_kernel(bf16 *out, float *rstd, const float *x, const float *w, int C,
                                   float eps, int in_stride, int in_offset)
{
    const float *xr = x + ((size_t)blockIdx.x * in_stride + in_offset) * C;
    bf16 *o = out + (size_t)blockIdx.x * C;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        ss += xr[c] * xr[c];
    ss = block_sum(ss);
    float r = rsqrtf(ss / (float)C + eps);
    if (rstd && threadIdx.x == 0)
        rstd[blockIdx.x] = r;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        o[c] = __float2bfloat16(xr[c] * r * w[c]);
}

cudaError_t k_rmsnorm_fwd(bf16 *out, float *rstd, const float *x, const float *w, int N, int C,
                          float eps, int in_stride, int in_offset)
{
    /* decode's few rows: more threads a row, fewer loads each in the latency chain */
    TB_KL(N, N < 64 ? 1024 : 256, 0, rmsnorm_fwd_kernel)
    (out, rstd, x, w, C, eps, in_stride, in_offset);
    return cudaGetLastError();
}

__global__ void rmsnorm_bwd_kernel(float *dx, const float *dy, const float *x, const float *rstd,
                                   const float *w, int C, bool accumulate)
{
    size_t row = (size_t)blockIdx.x * C;
    const float *xr = x + row, *dyr = dy + row;
    float *dxr = dx + row;
    float r = rstd[blockIdx.x], dot = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        dot += dyr[c] * w[c] * xr[c];
    dot = block_sum(dot);
    float k = r * r * r * dot / (float)C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float d = r * dyr[c] * w[c] - k * xr[c];
        dxr[c] = accumulate ? dxr[c] + d : d;
    }
}

cudaError_t k_rmsnorm_bwd(float *dx, const float *dy, const float *x, const float *rstd,
                          const float *w, int N, int C, bool accumulate)
{
    TB_KL(N, 256, 0, rmsnorm_bwd_kernel)(dx, dy, x, rstd, w, C, accumulate);
    return cudaGetLastError();
}

#define DW_ROWS 64 /* rows per block of the weight-gradient sum */

__global__ void rmsnorm_dw_kernel(float *dw, const float *dy, const float *x, const float *rstd,
                                  int N, int C)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r0 = blockIdx.y * DW_ROWS, r1 = min(N, r0 + DW_ROWS);
    if (c >= C)
        return;
    float acc = 0.0f;
    for (int r = r0; r < r1; r++)
        acc += dy[(size_t)r * C + c] * x[(size_t)r * C + c] * rstd[r];
    atomicAdd(&dw[c], acc);
}

cudaError_t k_rmsnorm_dw(float *dw, const float *dy, const float *x, const float *rstd, int N,
                         int C)
{
    dim3 grid((C + 255) / 256, (N + DW_ROWS - 1) / DW_ROWS);
    TB_KL(grid, 256, 0, rmsnorm_dw_kernel)(dw, dy, x, rstd, N, C);
    return cudaGetLastError();
}

/* ---- RoPE and head layouts ---- */

__global__ void rope_split_kernel(bf16 *q, bf16 *k, bf16 *v, const bf16 *qkv, const float *cos_t,
                                  const float *sin_t, const int *pos, const int *row_pos,
                                  const int *row_slot, int T, int S, int NH, int NKV, int HD)
{
    int n = blockIdx.x, b = n / T, t = n % T, half = HD / 2;
    int p = (row_pos ? row_pos[b] : pos ? *pos : 0) + t;
    int cb = row_slot ? row_slot[b] : b; /* the sequence's row of k and v */
    int QD = NH * HD, KD = NKV * HD;
    const bf16 *row = qkv + (size_t)n * (QD + 2 * KD);
    const float *cs = cos_t + (size_t)p * half, *sn = sin_t + (size_t)p * half;
    /* rotated pairs of the q and k heads */
    for (int i = threadIdx.x; i < (NH + NKV) * half; i += blockDim.x) {
        int h = i / half, j = i % half;
        const bf16 *src = row + h * HD; /* k heads follow the q heads */
        float x1 = __bfloat162float(src[j]), x2 = __bfloat162float(src[j + half]);
        float c = cs[j], s = sn[j];
        bf16 *dst;
        if (h < NH)
            dst = q + (((size_t)b * NH + h) * T + t) * HD;
        else
            dst = k + (((size_t)cb * NKV + (h - NH)) * S + p) * HD;
        dst[j] = __float2bfloat16(x1 * c - x2 * s);
        dst[j + half] = __float2bfloat16(x1 * s + x2 * c);
    }
    for (int i = threadIdx.x; i < KD; i += blockDim.x) {
        int h = i / HD, d = i % HD;
        v[(((size_t)cb * NKV + h) * S + p) * HD + d] = row[QD + KD + i];
    }
}

cudaError_t k_rope_split(bf16 *q, bf16 *k, bf16 *v, const bf16 *qkv, const float *cos_t,
                         const float *sin_t, const int *pos, const int *row_pos,
                         const int *row_slot, int N, int T, int S, int NH, int NKV, int HD)
{
    TB_KL(N, N < 64 ? 512 : 128, 0, rope_split_kernel)
    (q, k, v, qkv, cos_t, sin_t, pos, row_pos, row_slot, T, S, NH, NKV, HD);
    return cudaGetLastError();
}

__global__ void rope_merge_bwd_kernel(bf16 *dqkv, const bf16 *dq, const bf16 *dk, const bf16 *dv,
                                      const float *cos_t, const float *sin_t, int T, int NH,
                                      int NKV, int HD)
{
    int n = blockIdx.x, b = n / T, t = n % T, half = HD / 2;
    int QD = NH * HD, KD = NKV * HD;
    bf16 *row = dqkv + (size_t)n * (QD + 2 * KD);
    const float *cs = cos_t + (size_t)t * half, *sn = sin_t + (size_t)t * half;
    for (int i = threadIdx.x; i < (NH + NKV) * half; i += blockDim.x) {
        int h = i / half, j = i % half;
        const bf16 *src = h < NH ? dq + (((size_t)b * NH + h) * T + t) * HD
                                 : dk + (((size_t)b * NKV + (h - NH)) * T + t) * HD;
        float x1 = __bfloat162float(src[j]), x2 = __bfloat162float(src[j + half]);
        float c = cs[j], s = -sn[j]; /* the transpose of the rotation */
        row[h * HD + j] = __float2bfloat16(x1 * c - x2 * s);
        row[h * HD + j + half] = __float2bfloat16(x1 * s + x2 * c);
    }
    for (int i = threadIdx.x; i < KD; i += blockDim.x) {
        int h = i / HD, d = i % HD;
        row[QD + KD + i] = dv[(((size_t)b * NKV + h) * T + t) * HD + d];
    }
}

cudaError_t k_rope_merge_bwd(bf16 *dqkv, const bf16 *dq, const bf16 *dk, const bf16 *dv,
                             const float *cos_t, const float *sin_t, int N, int T, int NH, int NKV,
                             int HD)
{
    TB_KL(N, 128, 0, rope_merge_bwd_kernel)(dqkv, dq, dk, dv, cos_t, sin_t, T, NH, NKV, HD);
    return cudaGetLastError();
}

/* ---- SwiGLU ---- */

__global__ void swiglu_fwd_kernel(bf16 *h, const bf16 *gu, int N, int F)
{
    size_t total = (size_t)N * F;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t n = i / F, f = i % F;
        float g = __bfloat162float(gu[n * 2 * F + f]), u = __bfloat162float(gu[n * 2 * F + F + f]);
        h[i] = __float2bfloat16(g / (1.0f + __expf(-g)) * u);
    }
}

cudaError_t k_swiglu_fwd(bf16 *h, const bf16 *gu, int N, int F)
{
    TB_KL(cu_grid((size_t)N * F, 256), 256, 0, swiglu_fwd_kernel)(h, gu, N, F);
    return cudaGetLastError();
}

__global__ void swiglu_bwd_kernel(bf16 *dgu, const bf16 *dh, const bf16 *gu, int N, int F)
{
    size_t total = (size_t)N * F;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t n = i / F, f = i % F;
        float g = __bfloat162float(gu[n * 2 * F + f]), u = __bfloat162float(gu[n * 2 * F + F + f]);
        float d = __bfloat162float(dh[i]), s = 1.0f / (1.0f + __expf(-g));
        dgu[n * 2 * F + f] = __float2bfloat16(d * u * s * (1.0f + g * (1.0f - s)));
        dgu[n * 2 * F + F + f] = __float2bfloat16(d * g * s);
    }
}

cudaError_t k_swiglu_bwd(bf16 *dgu, const bf16 *dh, const bf16 *gu, int N, int F)
{
    TB_KL(cu_grid((size_t)N * F, 256), 256, 0, swiglu_bwd_kernel)(dgu, dh, gu, N, F);
    return cudaGetLastError();
}

/* ---- loss ---- */

/* One block per row: an online max and sum of e^(x - max) per thread, combined across
 * the block, then the gradient written over the logits. */
__global__ void xent_kernel(bf16 *logits, float *row_loss, const int *targets, int V,
                            float grad_scale)
{
    bf16 *row = logits + (size_t)blockIdx.x * V;
    int tgt = targets[blockIdx.x];
    float mx = -INFINITY, sum = 0.0f;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float x = __bfloat162float(row[j]);
        if (x > mx) {
            sum = sum * __expf(mx - x) + 1.0f;
            mx = x;
        } else {
            sum += __expf(x - mx);
        }
    }
    float gmx = block_max(mx);
    sum = block_sum(mx == -INFINITY ? 0.0f : sum * __expf(mx - gmx));
    float lse = gmx + logf(sum);
    float xt = __bfloat162float(row[tgt]);
    __syncthreads(); /* every thread read row[tgt] before it is overwritten */
    if (threadIdx.x == 0)
        row_loss[blockIdx.x] = lse - xt;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float pj = __expf(__bfloat162float(row[j]) - lse);
        row[j] = __float2bfloat16((pj - (j == tgt ? 1.0f : 0.0f)) * grad_scale);
    }
}

cudaError_t k_xent(bf16 *logits, float *row_loss, const int *targets, int N, int V,
                   float grad_scale)
{
    TB_KL(N, 512, 0, xent_kernel)(logits, row_loss, targets, V, grad_scale);
    return cudaGetLastError();
}

__global__ void sum_kernel(float *out, const float *x, int n, float scale)
{
    __shared__ double part[1024];
    double acc = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        acc += x[i];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s)
            part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *out = (float)(part[0] * scale);
}

cudaError_t k_sum(float *out, const float *x, int n, float scale)
{
    TB_KL(1, 1024, 0, sum_kernel)(out, x, n, scale);
    return cudaGetLastError();
}

/* ---- optimizer and casts ---- */

__global__ void adamw_kernel(float *p, bf16 *wb, const float *g, float *m, float *v, size_t n,
                             size_t n_decay, struct tb_cuda_adamw o, float ib1, float ib2)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float decay = 1.0f - o.lr * (i < n_decay ? o.weight_decay : 0.0f);
        float gi = g[i];
        float m1 = o.beta1 * m[i] + (1.0f - o.beta1) * gi;
        float v1 = o.beta2 * v[i] + (1.0f - o.beta2) * gi * gi;
        m[i] = m1;
        v[i] = v1;
        float pi = decay * p[i] - o.lr * (m1 * ib1) / (sqrtf(v1 * ib2) + o.eps);
        p[i] = pi;
        if (wb)
            wb[i] = __float2bfloat16(pi);
    }
}

cudaError_t k_adamw(float *p, bf16 *wb, const float *g, float *m, float *v, size_t n,
                    size_t n_decay, struct tb_cuda_adamw o, float bc1, float bc2)
{
    TB_KL(cu_grid(n, 256), 256, 0, adamw_kernel)
    (p, wb, g, m, v, n, n_decay, o, 1.0f / bc1, 1.0f / bc2);
    return cudaGetLastError();
}

static __device__ __forceinline__ void put(float *o, float x)
{
    *o = x;
}
static __device__ __forceinline__ void put(bf16 *o, float x)
{
    *o = __float2bfloat16(x);
}

template <typename O, typename I> __global__ void cast_kernel(O *out, const I *in, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        put(&out[i], to_f32(in[i]));
}

cudaError_t k_cast_bf16(bf16 *out, const float *in, size_t n)
{
    TB_KL(cu_grid(n, 256), 256, 0, cast_kernel<bf16, float>)(out, in, n);
    return cudaGetLastError();
}

cudaError_t k_cast_f32(float *out, const bf16 *in, size_t n)
{
    TB_KL(cu_grid(n, 256), 256, 0, cast_kernel<float, bf16>)(out, in, n);
    return cudaGetLastError();
}

__global__ void scatter_add_kernel(float *dst, const float *src, const int *ids, int C)
{
    float *d = dst + (size_t)ids[blockIdx.x] * C;
    const float *s = src + (size_t)blockIdx.x * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        atomicAdd(&d[c], s[c]);
}

cudaError_t k_scatter_add(float *dst, const float *src, const int *ids, int N, int C)
{
    TB_KL(N, 256, 0, scatter_add_kernel)(dst, src, ids, C);
    return cudaGetLastError();
}

/* ---- decode helpers ---- */

/* Argmax of each row over a grid of blocks: every thread keeps its best (value, index),
 * packed into one 64-bit key whose unsigned order is the value's order, then the lower
 * index (the first of equal maxima), and the block's best goes to the row's key with
 * one atomicMax; a second kernel unpacks the keys and clears them for the next call.
 * NaNs never win (a row of NaNs gives 0, as before). One block of 1,024 threads a row
 * took 53 us of each llama-3.2-1b decode step on an H100 (128,256 logits). */
#define ARGMAX_MAX_ROWS 1024
__device__ unsigned long long g_argmax_key[ARGMAX_MAX_ROWS]; /* zero between calls */

static __device__ __forceinline__ unsigned long long argmax_pack(float v, int j)
{
    unsigned u = __float_as_uint(v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)u << 32) | (unsigned)(0xFFFFFFFFu - (unsigned)j);
}

__global__ void argmax_part_kernel(const float *logits, int V)
{
    __shared__ unsigned long long best;
    const float *row = logits + (size_t)blockIdx.y * V;
    unsigned long long key = 0;
    if (threadIdx.x == 0)
        best = 0;
    __syncthreads();
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < V; j += gridDim.x * blockDim.x) {
        float v = row[j];
        unsigned long long k = isnan(v) ? 0 : argmax_pack(v, j);
        key = k > key ? k : key;
    }
    atomicMax(&best, key);
    __syncthreads();
    if (threadIdx.x == 0)
        atomicMax(&g_argmax_key[blockIdx.y], best);
}

__global__ void argmax_out_kernel(int *out, int B)
{
    for (int b = threadIdx.x; b < B; b += blockDim.x) {
        unsigned long long k = g_argmax_key[b];
        out[b] = k ? (int)(0xFFFFFFFFu - (unsigned)(k & 0xFFFFFFFFu)) : 0;
        g_argmax_key[b] = 0;
    }
}

cudaError_t k_argmax(int *out, const float *logits, int B, int V)
{
    int blocks = (V + 256 * 8 - 1) / (256 * 8);
    if (B < 1 || B > ARGMAX_MAX_ROWS)
        return cudaErrorInvalidValue;
    TB_KL(dim3(blocks > 64 ? 64 : blocks, B), 256, 0, argmax_part_kernel)(logits, V);
    TB_KL(1, 256, 0, argmax_out_kernel)(out, B);
    return cudaGetLastError();
}

template <typename T> __global__ void finite_kernel(int *flag, const T *x, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (!isfinite(to_f32(x[i])))
            *flag = 0;
}

cudaError_t k_finite(int *flag, const float *x, size_t n)
{
    TB_KL(cu_grid(n, 256), 256, 0, finite_kernel<float>)(flag, x, n);
    return cudaGetLastError();
}

cudaError_t k_finite_bf16(int *flag, const bf16 *x, size_t n)
{
    TB_KL(cu_grid(n, 256), 256, 0, finite_kernel<bf16>)(flag, x, n);
    return cudaGetLastError();
}

__global__ void increment_kernel(int *pos)
{
    *pos += 1;
}

cudaError_t k_increment(int *pos)
{
    TB_KL(1, 1, 0, increment_kernel)(pos);
    return cudaGetLastError();
}

/* One-token attention split over the keys (flash-decoding): the first kernel gives
 * each (sequence, KV head, chunk of DEC_CHUNK keys) one block, which stages the chunk's
 * K and V rows in shared memory with 16-byte loads and, for the G query heads that
 * share the KV head, writes the chunk's unnormalised output, its score maximum and its
 * sum of exponentials to the workspace; the second combines the chunks of each (sequence,
 * head). The grid is sized for the cache's capacity S, so that a graph captured at one
 * position replays at the next (or, with per-row positions, at any positions): blocks
 * past their sequence's position exit. One block per (sequence, head)
 * over all keys, as before, left 32 blocks of llama-3.2-1b's decode on 132 SMs, each
 * walking 2,049 keys one warp-reduction at a time: 0.3 ms a layer on an H100. */
#define DEC_THREADS 256
#define DEC_CHUNK   64
#define DEC_KPAD    8 /* bf16 of padding per staged K row: 16-byte reads without conflicts */

static inline __host__ __device__ int dec_chunks(int S)
{
    return (S + DEC_CHUNK - 1) / DEC_CHUNK;
}

static inline __host__ __device__ size_t dec_smem(int G, int HD)
{
    return (size_t)G * (HD + DEC_CHUNK) * sizeof(float) +
           (size_t)DEC_CHUNK * (2 * HD + DEC_KPAD) * sizeof(bf16);
}

__global__ void attention_decode_part_kernel(float *ws, const bf16 *q, const bf16 *k, const bf16 *v,
                                             const int *pos, const int *row_pos,
                                             const int *row_slot, int B, int NH, int NKV, int HD,
                                             int S)
{
    extern __shared__ float sh[]; /* q [G, HD], p [G, DEC_CHUNK], then K and V rows (bf16) */
    int NC = dec_chunks(S), G = NH / NKV;
    int c = blockIdx.x % NC, bk = blockIdx.x / NC, b = bk / NKV, kvh = bk % NKV;
    int nk = (row_pos ? row_pos[b] : *pos) + 1, j0 = c * DEC_CHUNK;
    if (j0 >= nk)
        return; /* the whole block: no barrier is skipped by some threads only */
    int n = min(DEC_CHUNK, nk - j0), KS = HD + DEC_KPAD, V8 = HD / 8;
    float *qs = sh, *ps = sh + (size_t)G * HD;
    bf16 *ks = (bf16 *)(ps + (size_t)G * DEC_CHUNK), *vs = ks + (size_t)DEC_CHUNK * KS;
    size_t ck = (size_t)(row_slot ? row_slot[b] : b) * NKV + kvh; /* the cache's (row, head) */
    const bf16 *kh = k + (ck * S + j0) * HD, *vh = v + (ck * S + j0) * HD;
    const bf16 *qh = q + ((size_t)b * NH + (size_t)kvh * G) * HD; /* G heads, contiguous */
    float scale = rsqrtf((float)HD);
    float *o = ws + (((size_t)b * NH + (size_t)kvh * G) * NC + c) * HD;
    float *ml =
        ws + (size_t)B * NH * NC * HD + ((size_t)b * NH + (size_t)kvh * G) * NC * 2 + (size_t)c * 2;

    for (int t = threadIdx.x; t < n * V8; t += blockDim.x) {
        int r = t / V8, c8 = t % V8;
        *(uint4 *)(ks + (size_t)r * KS + c8 * 8) = *(const uint4 *)(kh + (size_t)t * 8);
        *(uint4 *)(vs + (size_t)t * 8) = *(const uint4 *)(vh + (size_t)t * 8);
    }
    for (int t = threadIdx.x; t < G * HD; t += blockDim.x)
        qs[t] = __bfloat162float(qh[t]);
    __syncthreads();
    for (int t = threadIdx.x; t < G * DEC_CHUNK; t += blockDim.x) {
        int g = t / DEC_CHUNK, j = t % DEC_CHUNK;
        if (j >= n)
            continue;
        const bf16 *kr = ks + (size_t)j * KS;
        const float *qg = qs + (size_t)g * HD;
        float d = 0.0f;
        for (int i = 0; i < HD; i += 8) {
            uint4 kv = *(const uint4 *)(kr + i);
            const bf16 *ke = (const bf16 *)&kv;
#pragma unroll
            for (int e = 0; e < 8; e++)
                d += qg[i + e] * __bfloat162float(ke[e]);
        }
        ps[t] = d * scale;
    }
    __syncthreads();
    /* one warp per query head: maximum, exponentials in place, their sum */
    for (int g = threadIdx.x / WARP; g < G; g += blockDim.x / WARP) {
        int lane = threadIdx.x % WARP;
        float *pg = ps + (size_t)g * DEC_CHUNK, mx = -INFINITY, sum = 0.0f;
        for (int j = lane; j < n; j += WARP)
            mx = fmaxf(mx, pg[j]);
        mx = warp_max(mx);
        for (int j = lane; j < n; j += WARP) {
            float e = __expf(pg[j] - mx);
            pg[j] = e;
            sum += e;
        }
        sum = warp_sum(sum);
        if (lane == 0) {
            ml[(size_t)g * NC * 2] = mx;
            ml[(size_t)g * NC * 2 + 1] = sum;
        }
    }
    __syncthreads();
    for (int t = threadIdx.x; t < G * HD; t += blockDim.x) {
        int g = t / HD, d = t % HD;
        const float *pg = ps + (size_t)g * DEC_CHUNK;
        float acc = 0.0f;
        for (int j = 0; j < n; j++)
            acc += pg[j] * __bfloat162float(vs[(size_t)j * HD + d]);
        o[(size_t)g * NC * HD + d] = acc;
    }
}

__global__ void attention_decode_combine_kernel(bf16 *y, const float *ws, const int *pos,
                                                const int *row_pos, int B, int NH, int HD, int S)
{
    int bh = blockIdx.x, p = row_pos ? row_pos[bh / NH] : *pos;
    int NC = dec_chunks(S), nc = dec_chunks(p + 1);
    const float *o = ws + (size_t)bh * NC * HD;
    const float *ml = ws + (size_t)B * NH * NC * HD + (size_t)bh * NC * 2;
    float mx = -INFINITY;
    for (int c = 0; c < nc; c++)
        mx = fmaxf(mx, ml[2 * c]);
    for (int d = threadIdx.x; d < HD; d += blockDim.x) {
        float num = 0.0f, den = 0.0f;
#pragma unroll 8
        for (int c = 0; c < nc; c++) {
            float w = __expf(ml[2 * c] - mx);
            num += w * o[(size_t)c * HD + d];
            den += w * ml[2 * c + 1];
        }
        y[(size_t)bh * HD + d] = __float2bfloat16(num / den);
    }
}

size_t k_attention_decode_ws(int B, int NH, int HD, int S)
{
    return (size_t)B * NH * dec_chunks(S) * (HD + 2);
}

cudaError_t k_attention_decode_setup(int NH, int NKV, int HD)
{
    size_t smem = dec_smem(NH / NKV, HD);
    if (HD % 8 != 0 || NKV < 1 || NH % NKV != 0)
        return cudaErrorInvalidValue;
    if (smem > 48 * 1024)
        return cudaFuncSetAttribute(attention_decode_part_kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    return cudaSuccess;
}

cudaError_t k_attention_decode(bf16 *y, float *ws, const bf16 *q, const bf16 *k, const bf16 *v,
                               const int *pos, const int *row_pos, const int *row_slot, int B,
                               int NH, int NKV, int HD, int S)
{
    if (HD % 8 != 0 || NKV < 1 || NH % NKV != 0 || (!pos && !row_pos))
        return cudaErrorInvalidValue;
    TB_KL(B * NKV * dec_chunks(S), DEC_THREADS, dec_smem(NH / NKV, HD),
          attention_decode_part_kernel)
    (ws, q, k, v, pos, row_pos, row_slot, B, NH, NKV, HD, S);
    TB_KL(B * NH, HD < 128 ? HD : 128, 0, attention_decode_combine_kernel)
    (y, ws, pos, row_pos, B, NH, HD, S);
    return cudaGetLastError();
}

/* ---- fp8 (e4m3): current scaling ---- */

/* max |x| of the grid's share into *amax (zeroed before): block maximum, then one
 * atomic per block. |x| >= 0, so the float's bits order as unsigned integers do;
 * fmaxf drops NaNs (a NaN input still reaches the output through its cast). */
template <typename T> __global__ void amax_kernel(float *amax, const T *x, size_t n)
{
    float m = 0.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        m = fmaxf(m, fabsf(to_f32(x[i])));
    m = block_max(m);
    if (threadIdx.x == 0)
        atomicMax((unsigned int *)amax, __float_as_uint(m));
}

/* The current-scaling factor of amax: 448 / amax, 1 for an all-zero tensor, capped so
 * that a tiny amax cannot make it infinite. */
static __device__ __forceinline__ float fp8_scale_of(float amax)
{
    float s = amax > 0.0f ? TB_FP8_MAX / amax : 1.0f;
    return fminf(s, 3.4028234e38f);
}

template <typename T> __global__ void fp8_cast_kernel(fp8 *q, float *sc, const T *x, size_t n)
{
    float s = fp8_scale_of(sc[TB_FP8_AMAX]);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        sc[TB_FP8_SCALE] = s;
        sc[TB_FP8_DEQ] = 1.0f / s;
    }
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        q[i] = fp8_from_f32(to_f32(x[i]) * s);
}

template <typename T> static cudaError_t fp8_quantize(fp8 *q, float *sc, const T *x, size_t n)
{
    unsigned b = cu_grid(n, 256);
    cudaError_t e = cudaMemsetAsync(sc + TB_FP8_AMAX, 0, sizeof *sc, g_cu.stream);
    if (e != cudaSuccess)
        return e;
    /* the reduction needs no more blocks than the SMs can hold at once */
    unsigned cap = (unsigned)g_cu.prop.multiProcessorCount * 8u;
    TB_KL(b < cap ? b : cap, 256, 0, amax_kernel<T>)(sc + TB_FP8_AMAX, x, n);
    TB_KL(b, 256, 0, fp8_cast_kernel<T>)(q, sc, x, n);
    return cudaGetLastError();
}

cudaError_t k_fp8_quantize(fp8 *q, float *sc, const float *x, size_t n)
{
    return fp8_quantize(q, sc, x, n);
}

cudaError_t k_fp8_quantize_bf16(fp8 *q, float *sc, const bf16 *x, size_t n)
{
    return fp8_quantize(q, sc, x, n);
}

__global__ void fp8_to_f32_kernel(float *out, const fp8 *q, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = fp8_to_f32(q[i]);
}

cudaError_t k_fp8_to_f32(float *out, const fp8 *q, size_t n)
{
    TB_KL(cu_grid(n, 256), 256, 0, fp8_to_f32_kernel)(out, q, n);
    return cudaGetLastError();
}

/* ---- the decode product (bf16 or fp8) ---- */

#define GEMV_WARPS 8

/* WPR warps per output column j (1, 2, 4 or 8; the block's GEMV_WARPS warps cover
 * GEMV_WARPS / WPR columns at a time): the dot products of w[j] with the M rows of x,
 * with 16-byte loads (8 bf16 or 16 e4m3 values) when K and the rows allow, else element
 * by element; the WPR warps of a column split K and add their sums in shared memory.
 * Several warps a column keep enough loads in flight for the few columns of decode's
 * small projections (one warp a column left llama-3.2-1b's q|k|v product, 3,072
 * columns, at 1.35 TB/s on an H100; the 128,256-column LM head ran at 2.6). T is bf16
 * or fp8 (e4m3, the weights read once at half bf16's bytes: the point of fp8 decode);
 * with fp8 the dequantisation factors x_scale and w_scale multiply the sum once (a
 * product of two e4m3 values has at most 8 significant bits, so it is exact in fp32;
 * the sums are fp32). */
template <typename T, bool OUT_F32>
__global__ void gemv_kernel(void *out, bool accumulate, const T *x, const float *x_scale,
                            const T *w, const float *w_scale, int M, int N, int K, bool vec,
                            int WPR)
{
    constexpr int VW = 16 / sizeof(T); /* values per 16-byte load */
    __shared__ float part[GEMV_WARPS][TB_CUDA_GEMV_MAX_ROWS];
    int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    int cols = GEMV_WARPS / WPR, sub = warp % WPR; /* columns a block, K slice of this warp */
    float f = x_scale ? *x_scale * *w_scale : 1.0f;
    /* a loop uniform over the block (its barriers), columns past N idle */
    for (int base = blockIdx.x * cols; base < N; base += gridDim.x * cols) {
        int j = base + warp / WPR;
        float acc[TB_CUDA_GEMV_MAX_ROWS];
#pragma unroll
        for (int r = 0; r < TB_CUDA_GEMV_MAX_ROWS; r++)
            acc[r] = 0.0f;
        if (j < N) {
            const T *wr = w + (size_t)j * K;
            if (vec) {
                /* unrolled so that several 16-byte weight loads are in flight per lane */
#pragma unroll 4
                for (int i = (sub * WARP + lane) * VW; i < K; i += WPR * WARP * VW) {
                    uint4 wv = *(const uint4 *)(wr + i);
                    const T *we = (const T *)&wv;
                    float wf[VW];
#pragma unroll
                    for (int e = 0; e < VW; e++)
                        wf[e] = to_f32(we[e]);
#pragma unroll
                    for (int r = 0; r < TB_CUDA_GEMV_MAX_ROWS; r++) {
                        if (r >= M)
                            break;
                        uint4 xv = *(const uint4 *)(x + (size_t)r * K + i);
                        const T *xe = (const T *)&xv;
#pragma unroll
                        for (int e = 0; e < VW; e++)
                            acc[r] += to_f32(xe[e]) * wf[e];
                    }
                }
            } else {
                for (int i = sub * WARP + lane; i < K; i += WPR * WARP) {
                    float wf = to_f32(wr[i]);
                    for (int r = 0; r < M; r++)
                        acc[r] += to_f32(x[(size_t)r * K + i]) * wf;
                }
            }
        }
#pragma unroll
        for (int r = 0; r < TB_CUDA_GEMV_MAX_ROWS; r++) {
            if (r >= M)
                break;
            float s = warp_sum(acc[r]);
            if (lane == 0)
                part[warp][r] = s;
        }
        __syncthreads();
        if (j < N && sub == 0 && lane < M) {
            float s = 0.0f;
            for (int q = 0; q < WPR; q++)
                s += part[warp + q][lane];
            s *= f;
            size_t o = (size_t)lane * N + j;
            if (OUT_F32) {
                float *of = (float *)out;
                of[o] = accumulate ? of[o] + s : s;
            } else {
                ((bf16 *)out)[o] = __float2bfloat16(s);
            }
        }
        __syncthreads(); /* part[] is rewritten by the next columns */
    }
}

template <typename T>
static cudaError_t gemv(void *out, bool out_f32, bool accumulate, const T *x, const float *x_scale,
                        const T *w, const float *w_scale, int M, int N, int K)
{
    bool vec = K % (16 / sizeof(T)) == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)w % 16 == 0;
    int sms = g_cu.prop.multiProcessorCount, cap = sms * 16, wpr = 1;
    if (M < 1 || M > TB_CUDA_GEMV_MAX_ROWS)
        return cudaErrorInvalidValue;
    /* aim at 32 warps an SM: columns times warps a column */
    while (wpr < GEMV_WARPS && (long)N * wpr < (long)sms * 32)
        wpr *= 2;
    int cols = GEMV_WARPS / wpr, blocks = (N + cols - 1) / cols;
    blocks = blocks > cap ? cap : blocks;
    if (out_f32)
        TB_KL(blocks, GEMV_WARPS * WARP, 0, gemv_kernel<T, true>)
    (out, accumulate, x, x_scale, w, w_scale, M, N, K, vec, wpr);
    else TB_KL(blocks, GEMV_WARPS * WARP, 0, gemv_kernel<T, false>)(out, accumulate, x, x_scale, w,
                                                                    w_scale, M, N, K, vec, wpr);
    return cudaGetLastError();
}

cudaError_t k_gemv(void *out, bool out_f32, bool accumulate, const bf16 *x, const bf16 *w, int M,
                   int N, int K)
{
    return gemv(out, out_f32, accumulate, x, NULL, w, NULL, M, N, K);
}

cudaError_t k_gemv_fp8(void *out, bool out_f32, bool accumulate, const fp8 *x, const float *x_scale,
                       const fp8 *w, const float *w_scale, int M, int N, int K)
{
    return gemv(out, out_f32, accumulate, x, x_scale, w, w_scale, M, N, K);
}
