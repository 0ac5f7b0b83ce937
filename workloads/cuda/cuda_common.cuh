/*
 * workloads/cuda/cuda_common.cuh: what every file of the CUDA plugin shares: the
 * process-wide context (device, stream, cuBLASLt handle and workspace, timing events),
 * error checks that name what failed, and the kernel launchers (kernels.cu), the matrix
 * product (gemm.cu) and the fused attention (flash.cu) the engine (llama.cu) and the
 * kernel tests (plugin.cu) use.
 *
 * Error convention (the harness's): functions return 0, or -1 with a message in
 * (err, errlen). The CU_* macros assume both names are in scope.
 *
 * Shape legend: B batch, T tokens per sequence, N = B*T rows, C hidden, NH/NKV heads,
 * G = NH/NKV, HD head dim, QD = NH*HD, KD = NKV*HD, QKV = QD + 2*KD, F FFN width,
 * V vocabulary, S rows a K/V buffer holds per (sequence, KV head) (T, or max_seq for
 * the cache). Head-major tensors are [B, heads, T, HD]; token-major ones [N, heads*HD].
 */
#ifndef TB_CUDA_COMMON_CUH
#define TB_CUDA_COMMON_CUH

#include "tb_cuda_abi.h"

/* the CUDA toolkit's, or in the CPU emulation build (TB_CUEMU) the emulator's headers of
 * the same names, which that build alone has on its include path */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef __nv_bfloat16 bf16;

/* ---- fp8 (e4m3) ----
 * OCP FP8 E4M3 ("e4m3fn", __NV_E4M3): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits;
 * no infinities, S.1111.111 is NaN, so the largest finite value is 1.75 x 2^8 = 448;
 * subnormals are m x 2^-9 (m = 1..7). Stored as plain bytes. Every conversion of the
 * plugin goes through the two helpers below, so a build that is not nvcc's (TB_CUEMU:
 * no <cuda_fp8.h>) supplies them with the same contract:
 *   fp8_from_f32(x): round to nearest, ties to even, saturating (|x| > 448 and +-inf
 *                    give +-448), NaN gives NaN (0x7f or 0xff)
 *   fp8_to_f32(b):   the exact value of the byte (every e4m3 value is a float) */
typedef uint8_t fp8;
#define TB_FP8_MAX 448.0f
#ifndef TB_CUEMU
#include <cuda_fp8.h>
static __device__ __forceinline__ fp8 fp8_from_f32(float x)
{
    return (fp8)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}
static __device__ __forceinline__ float fp8_to_f32(fp8 b)
{
    return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, __NV_E4M3)));
}
#else
static inline fp8 fp8_from_f32(float x)
{
    return (fp8)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}
static inline float fp8_to_f32(fp8 b)
{
    return cuemu_fp8_to_float((__nv_fp8_storage_t)b, __NV_E4M3);
}
#endif

/* fp8 products (cuBLASLt's and the decode GEMV's tensor-core and cvt paths) need Ada
 * or Hopper: compute capability 8.9 or later. */
#define TB_CUDA_FP8_MIN_CC 89

/* Format into err; returns -1. */
int cu_err(char *err, size_t errlen, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#define CU_CHECK(call)                                                                             \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return cu_err(err, errlen, "%s: %s", #call, cudaGetErrorString(e_));                   \
    } while (0)

/* After a kernel launch: a bad configuration shows here, a fault at the next sync. */
#define CU_LAUNCH(name, launch)                                                                    \
    do {                                                                                           \
        cudaError_t e_ = (launch);                                                                 \
        if (e_ != cudaSuccess)                                                                     \
            return cu_err(err, errlen, "kernel %s: %s", name, cudaGetErrorString(e_));             \
    } while (0)

/* Kernel launch on the plugin's stream: TB_KL(grid, block, shared_bytes, kernel)(args).
 * Every launch goes through it (no bare <<< >>>), so a build that is not nvcc's (the
 * CPU emulation of tests, TB_CUEMU) can supply its own launcher. The kernel comes last
 * so that a template's commas need no parentheses. */
#ifndef TB_CUEMU
#define TB_KL(grid, block, smem, ...) __VA_ARGS__<<<(grid), (block), (smem), g_cu.stream>>>
#else
#define TB_KL(grid, block, smem, ...) CUEMU_LAUNCH(grid, block, smem, g_cu.stream, __VA_ARGS__)
#endif

#define CU_TRY(call)                                                                               \
    do {                                                                                           \
        if ((call) != 0)                                                                           \
            return -1;                                                                             \
    } while (0)

/* ---- process-wide context ---- */

#define TB_CUDA_WORKSPACE_BYTES ((size_t)32 << 20) /* cuBLASLt workspace (32 MiB: Hopper) */

struct cu_ctx {
    bool ready;
    int device;
    cudaDeviceProp prop;
    cudaStream_t stream;
    cublasLtHandle_t lt;
    void *workspace; /* TB_CUDA_WORKSPACE_BYTES */
    cudaEvent_t ev_start, ev_stop;
};
extern struct cu_ctx g_cu;

/* Set the context up once, on g_cu.device (probe sets it; 0 until then). */
int cu_ctx_init(char *err, size_t errlen);
/* 0 when the device can run fp8 products, else -1 with "fp8 products need compute
 * capability 8.9 or later (this device: 8.0)". Needs cu_ctx_init. */
int cu_fp8_check(char *err, size_t errlen);

/* ---- device helpers of the kernel files (static inline: each file its own copy, no
 * relocatable device code) ---- */

#define WARP 32

/* Blocks for n elements at threads per block (grid-stride loops past the cap). */
static inline unsigned cu_grid(size_t n, int threads)
{
    size_t b = (n + (size_t)threads - 1) / (size_t)threads;
    return (unsigned)(b > 65535u * 16u ? 65535u * 16u : (b ? b : 1));
}

static __device__ __forceinline__ float to_f32(float x)
{
    return x;
}
static __device__ __forceinline__ float to_f32(bf16 x)
{
    return __bfloat162float(x);
}
static __device__ __forceinline__ float to_f32(fp8 x)
{
    return fp8_to_f32(x);
}

static __device__ __forceinline__ float warp_sum(float x)
{
    for (int o = WARP / 2; o > 0; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

static __device__ __forceinline__ float warp_max(float x)
{
    for (int o = WARP / 2; o > 0; o >>= 1)
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

/* Sum (max) over the block (blockDim.x a multiple of 32, at most 1024); every thread
 * gets it. Every thread of the block must call it. */
template <bool MAX> static __device__ float block_reduce(float x)
{
    __shared__ float part[WARP];
    __shared__ float total;
    int lane = threadIdx.x % WARP, w = threadIdx.x / WARP, nw = blockDim.x / WARP;
    x = MAX ? warp_max(x) : warp_sum(x);
    __syncthreads(); /* part[] may still be read by a previous call */
    if (lane == 0)
        part[w] = x;
    __syncthreads();
    if (w == 0) {
        float y = lane < nw ? part[lane] : (MAX ? -INFINITY : 0.0f);
        y = MAX ? warp_max(y) : warp_sum(y);
        if (lane == 0)
            total = y;
    }
    __syncthreads();
    return total;
}
static __device__ __forceinline__ float block_sum(float x)
{
    return block_reduce<false>(x);
}
static __device__ __forceinline__ float block_max(float x)
{
    return block_reduce<true>(x);
}

/* ---- matrix products (gemm.cu) ---- */

/* Operand types of a product: bf16 (the default, 0) or e4m3 for both A and B. */
enum cu_dtype { CU_DT_BF16 = 0, CU_DT_E4M3 };

/* D[M,N] = alpha op(A) op(B) + beta C, row-major, batched with element strides (0 for
 * one matrix); A and B bf16, C and D bf16 or fp32 (out_f32), fp32 accumulation.
 * ta: A is stored [K, M] (else [M, K]); tb: B is stored [N, K] (else [K, N]).
 * C may be NULL when beta is 0; C == D is allowed. The algorithm comes from cuBLASLt's
 * heuristic for this shape, types and the pointers' alignment, cached per shape.
 * in_type CU_DT_E4M3: A and B e4m3 with per-tensor dequantisation factors a_scale,
 * b_scale (device fp32), D = alpha a_scale b_scale sum(a8 b8) + beta C, the products
 * exact and accumulated in fp32 (no fast-accumulation mode). cuBLASLt's fp8 contract:
 * compute capability 8.9+, A [M, K] and B [N, K] (ta false, tb true: "TN" in its
 * column-major terms), K, N and the leading dimensions multiples of 16, not batched. */
struct cu_gemm {
    bool ta, tb, out_f32;
    int M, N, K, batch;
    const void *A; /* bf16 or e4m3 (in_type) */
    int lda;
    long long sa;
    const void *B;
    int ldb;
    long long sb;
    const void *C;
    void *D;
    int ldd;
    long long sd;
    float alpha, beta;
    enum cu_dtype in_type;
    const float *a_scale, *b_scale; /* device, e4m3 only */
};
int cu_gemm_run(const struct cu_gemm *g, const char *what, char *err, size_t errlen);
/* A linear layer's product as cu_gemm_run takes it: out[M, O] (fp32 or bf16, row stride
 * ldo) = (acc: out +) x[M, K] (row stride ldx) W[O, K]^T (dense rows), bf16 operands;
 * a caller may then set the e4m3 type and scales. */
static inline struct cu_gemm cu_gemm_linear(void *out, bool out_f32, int ldo, bool acc,
                                            const void *x, int ldx, const void *w, int M, int K,
                                            int O)
{
    struct cu_gemm g;
    memset(&g, 0, sizeof g);
    g.tb = true;
    g.out_f32 = out_f32;
    g.M = M;
    g.N = O;
    g.K = K;
    g.batch = 1;
    g.A = x;
    g.lda = ldx;
    g.B = w;
    g.ldb = K;
    g.C = acc ? out : NULL;
    g.D = out;
    g.ldd = ldo;
    g.alpha = 1.0f;
    g.beta = acc ? 1.0f : 0.0f;
    return g;
}

/* The operand types and cuBLASLt's fp8 contract above, checked so that a violation
 * names itself instead of surfacing as CUBLAS_STATUS_NOT_SUPPORTED (cu_gemm_run's
 * first step; any other implementation of cu_gemm_run calls it too). */
static inline int cu_gemm_check(const struct cu_gemm *g, const char *what, char *err, size_t errlen)
{
    if (g->in_type != CU_DT_BF16 && g->in_type != CU_DT_E4M3)
        return cu_err(err, errlen, "%s: unknown operand type %d", what, (int)g->in_type);
    if (g->in_type == CU_DT_BF16)
        return 0;
    CU_TRY(cu_fp8_check(err, errlen));
    if (g->ta || !g->tb)
        return cu_err(err, errlen,
                      "%s: fp8 products take A [M, K] and B [N, K] (cuBLASLt's TN layout)", what);
    if (g->batch > 1)
        return cu_err(err, errlen, "%s: fp8 products are not batched here", what);
    /* M too: on the H100 cuBLASLt 13.0 answered M = 40 with CUBLAS_STATUS_NOT_SUPPORTED
     * at cublasLtMatmul, after its heuristic had offered an algorithm */
    if (g->M % 16 || g->K % 16 || g->N % 16 || g->lda % 16 || g->ldb % 16 || g->ldd % 16)
        return cu_err(err, errlen,
                      "%s: fp8 products need M, K, N and the leading dimensions multiples of 16 "
                      "(m=%d n=%d k=%d, lda=%d ldb=%d ldd=%d)",
                      what, g->M, g->N, g->K, g->lda, g->ldb, g->ldd);
    if (!g->a_scale || !g->b_scale)
        return cu_err(err, errlen, "%s: fp8 product without its scale factors", what);
    if ((uintptr_t)g->a_scale % 16 || (uintptr_t)g->b_scale % 16)
        return cu_err(err, errlen, "%s: fp8 scale factors must be 16-byte aligned", what);
    return 0;
}
/* Free the cached descriptors. */
void cu_gemm_release(void);

/* ---- kernels (kernels.cu); each returns the launch's cudaGetLastError() ---- */

/* out[n] = emb[ids[n]] for N rows of C (fp32). */
cudaError_t k_embed(float *out, const float *emb, const int *ids, int N, int C);
/* out (bf16) = x * rstd * w for N rows: row i of x is row i*in_stride + in_offset;
 * rstd[i] = 1/rms (NULL: not kept). */
cudaError_t k_rmsnorm_fwd(bf16 *out, float *rstd, const float *x, const float *w, int N, int C,
                          float eps, int in_stride, int in_offset);
/* dx (= or +=) rstd * dy * w - rstd^3 x sum(dy w x) / C for N rows (fp32). */
cudaError_t k_rmsnorm_bwd(float *dx, const float *dy, const float *x, const float *rstd,
                          const float *w, int N, int C, bool accumulate);
/* dw[c] += sum over rows of dy * x * rstd (dw must be zeroed before the first call). */
cudaError_t k_rmsnorm_dw(float *dw, const float *dy, const float *x, const float *rstd, int N,
                         int C);
/* From token-major qkv [N, QKV] (bf16) rows at positions base + n % T, where base is
 * row_pos[b] (per sequence b = n / T, continuous batching), else *pos (decode), else 0
 * (both NULL): q rotated into head-major [B, NH, T, HD]; k rotated and v copied into
 * the cache [*, NKV, S, HD] at row base + n % T of sequence row_slot[b] (NULL: b). */
cudaError_t k_rope_split(bf16 *q, bf16 *k, bf16 *v, const bf16 *qkv, const float *cos_t,
                         const float *sin_t, const int *pos, const int *row_pos,
                         const int *row_slot, int N, int T, int S, int NH, int NKV, int HD);
/* Backward: head-major dq [B,NH,T,HD], dk, dv [B,NKV,T,HD] -> token-major dqkv [N, QKV],
 * q and k rotated back (positions n % T). */
cudaError_t k_rope_merge_bwd(bf16 *dqkv, const bf16 *dq, const bf16 *dk, const bf16 *dv,
                             const float *cos_t, const float *sin_t, int N, int T, int NH, int NKV,
                             int HD);
/* h = silu(g) * u for N rows of gu = [g | u] (bf16). */
cudaError_t k_swiglu_fwd(bf16 *h, const bf16 *gu, int N, int F);
cudaError_t k_swiglu_bwd(bf16 *dgu, const bf16 *dh, const bf16 *gu, int N, int F);
/* Cross-entropy of N rows of V logits (bf16): row_loss[n] = lse - logit[target], and
 * the logits overwritten by (softmax - onehot) * grad_scale. */
cudaError_t k_xent(bf16 *logits, float *row_loss, const int *targets, int N, int V,
                   float grad_scale);
/* *out = sum(x[0..n)) * scale (one block, double accumulation). */
cudaError_t k_sum(float *out, const float *x, int n, float scale);
/* AdamW over n parameters (the CPU engine's formula), decay on [0, n_decay); wb (bf16
 * copy of p, may be NULL) rewritten. bc1, bc2: the bias corrections 1 - beta^t. */
cudaError_t k_adamw(float *p, bf16 *wb, const float *g, float *m, float *v, size_t n,
                    size_t n_decay, struct tb_cuda_adamw o, float bc1, float bc2);
cudaError_t k_cast_bf16(bf16 *out, const float *in, size_t n);
cudaError_t k_cast_f32(float *out, const bf16 *in, size_t n);
/* dst[ids[n]] += src[n] for N rows of C (fp32, atomic). */
cudaError_t k_scatter_add(float *dst, const float *src, const int *ids, int N, int C);
/* out[b] = argmax of logits row b (first of equal maxima). */
cudaError_t k_argmax(int *out, const float *logits, int B, int V);
/* *flag = 0 when some x is not finite (set *flag = 1 before). */
cudaError_t k_finite(int *flag, const float *x, size_t n);
cudaError_t k_finite_bf16(int *flag, const bf16 *x, size_t n);
/* ++*pos (decode graphs advance their own position). */
cudaError_t k_increment(int *pos);
/* One-token attention: q [B, NH, HD] of sequence b at position p = row_pos[b] (NULL:
 * *pos for every b) over the cache k, v [*, NKV, S, HD], rows [0, p] of sequence
 * row_slot[b] (NULL: b); y [B, NH*HD] (bf16). Split over chunks of keys: ws holds
 * k_attention_decode_ws(B, NH, HD, S) floats of per-chunk partial results. The grid
 * covers S keys whatever the positions (a captured graph replays at others). HD a
 * multiple of 8, NH a multiple of NKV. */
size_t k_attention_decode_ws(int B, int NH, int HD, int S);
cudaError_t k_attention_decode_setup(int NH, int NKV, int HD); /* before any capture */
cudaError_t k_attention_decode(bf16 *y, float *ws, const bf16 *q, const bf16 *k, const bf16 *v,
                               const int *pos, const int *row_pos, const int *row_slot, int B,
                               int NH, int NKV, int HD, int S);
/* out[M, N] (= bf16, or fp32 = / +=) x[M, K] w[N, K]^T for M <= 8 rows (bf16 inputs):
 * the decode path's memory-bound product, one warp per output column. */
#define TB_CUDA_GEMV_MAX_ROWS 8
cudaError_t k_gemv(void *out, bool out_f32, bool accumulate, const bf16 *x, const bf16 *w, int M,
                   int N, int K);
/* The same product on e4m3 operands: out = x_scale w_scale sum(x8 w8), the products
 * exact in fp32 and summed in fp32; the factors are device pointers (the quantisation
 * kernels write them, a captured graph reads them at run time). Weights are read once:
 * half the bytes of k_gemv's, the point of fp8 decode. */
cudaError_t k_gemv_fp8(void *out, bool out_f32, bool accumulate, const fp8 *x, const float *x_scale,
                       const fp8 *w, const float *w_scale, int M, int N, int K);

/* Per-tensor current scaling (Transformer Engine's Float8CurrentScaling recipe: the
 * scale comes from this tensor's own amax, no history): sc[TB_FP8_AMAX] = amax = max |x|
 * over the n elements (a device reduction; NaNs ignored), sc[TB_FP8_SCALE] = scale =
 * 448 / amax (1 when amax is 0; at most FLT_MAX), sc[TB_FP8_DEQ] = 1 / scale, the
 * dequantisation factor a product takes; q[i] = fp8_from_f32(x[i] * scale) (nearest
 * even, saturating). sc: device float[TB_FP8_SCALES], 16-byte aligned. The factor
 * cuBLASLt reads comes first and each set is 16 bytes, so that an array of sets keeps
 * every factor 16-byte aligned: at index 2 of 3-float sets (8 bytes past an aligned
 * base) the H100's cuBLASLt 13.0 refused every fp8 product with
 * CUBLAS_STATUS_NOT_SUPPORTED. Three operations on the stream (memset, reduction, cast). */
#define TB_FP8_DEQ    0
#define TB_FP8_AMAX   1
#define TB_FP8_SCALE  2
#define TB_FP8_SCALES 4
cudaError_t k_fp8_quantize(fp8 *q, float *sc, const float *x, size_t n);
cudaError_t k_fp8_quantize_bf16(fp8 *q, float *sc, const bf16 *x, size_t n);
/* out[i] = fp8_to_f32(q[i]) (fp32), the kernel tests' read-back. */
cudaError_t k_fp8_to_f32(float *out, const fp8 *q, size_t n);

/* ---- fused attention (flash.cu) ---- */

/* A [batch, heads, rows, D] bf16 tensor's element strides of batch, head and row (the
 * D elements of a row are contiguous): head-major [B, H, S, D] or token-major
 * [B, S, H, D] (the engine's [N, H*D] rows) and anything between. */
struct cu_strides {
    long long b, h, s;
};
static inline struct cu_strides cu_strides_head_major(int H, int S, int D)
{
    struct cu_strides t = {(long long)H * S * D, (long long)S * D, (long long)D};
    return t;
}
static inline struct cu_strides cu_strides_token_major(int H, int S, int D)
{
    struct cu_strides t = {(long long)S * H * D, (long long)D, (long long)H * D};
    return t;
}

/* Attention of q [B, H, Sq, D] over k, v [B, HKV, Sk, D] (head h reads KV head
 * h / (H/HKV)): o = softmax(scale q k^T) v, per query row in fp32 (online softmax), the
 * probabilities rounded to bf16 before the product with v. causal: query i sees keys
 * [0, i + Sk - Sq] (the last Sq positions of a sequence of Sk; a query that sees no key
 * gets o = 0, lse = -inf); else every key. lse [B, H, Sq] (fp32, natural log of the
 * row's sum of exp(scale q.k); NULL: not kept) is what the backward pass needs. Head
 * dims 1 to 128 (computed padded to 16, 32, 64 or 128); tensors are borrowed. */
struct cu_flash_fwd {
    int B, H, HKV, Sq, Sk, D;
    bool causal;
    float scale;
    const bf16 *q, *k, *v;
    struct cu_strides sq, sk, sv;
    bf16 *o;
    struct cu_strides so;
    float *lse;
};
/* Queue the forward pass on the plugin's stream; -1 with a message naming the head dim
 * or the shape that is not supported. */
int cu_flash_fwd(const struct cu_flash_fwd *f, char *err, size_t errlen);

/* Backward of cu_flash_fwd: fwd describes q, k, v, o and lse as the forward pass left
 * them (all inputs now); dout is dL/do (strides sdo). delta [B, H, Sq] fp32 is scratch
 * (rowsum(dout * o)). Out: dq [B, H, Sq, D], dk, dv [B, HKV, Sk, D] bf16 (written, not
 * accumulated; dk and dv summed over the H/HKV query heads of their group).
 * Deterministic: no atomics. */
struct cu_flash_bwd {
    struct cu_flash_fwd fwd;
    const bf16 *dout;
    struct cu_strides sdo;
    float *delta;
    bf16 *dq, *dk, *dv;
    struct cu_strides sdq, sdk, sdv;
};
int cu_flash_bwd(const struct cu_flash_bwd *g, char *err, size_t errlen);

/* ---- kernel tests (plugin.cu, llama.cu, flash.cu) ---- */

/* Device buffers freed together (an engine's, or one kernel test's); bytes counts
 * what they hold. cu_buf_alloc_named names the buffer in its error ("cudaMalloc of
 * 512.0 MiB for the KV cache: out of memory"); CU_ALLOC(bufs, ptr, n, what) allocates n
 * elements of *ptr's type. Release synchronises the stream first. */
#define CU_BUFS_MAX 256
struct cu_bufs {
    void *p[CU_BUFS_MAX];
    int n;
    size_t bytes;
};
int cu_buf_alloc_named(struct cu_bufs *b, void **p, size_t bytes, const char *what, char *err,
                       size_t errlen);
int cu_buf_alloc(struct cu_bufs *b, void **p, size_t bytes, char *err, size_t errlen);
void cu_bufs_release(struct cu_bufs *b);
#define CU_ALLOC(bufs, ptr, n, what)                                                               \
    CU_TRY(cu_buf_alloc_named((bufs), (void **)&(ptr), (size_t)(n) * sizeof *(ptr), (what), err,   \
                              errlen))
/* Host fp32 -> device fp32 (h NULL: zeros) or bf16 (rounded on the device); device fp32
 * or bf16 -> host fp32 (synchronising). */
int cu_up_f32(struct cu_bufs *b, float **d, const float *h, size_t n, char *err, size_t errlen);
int cu_up_bf16(struct cu_bufs *b, bf16 **d, const float *h, size_t n, char *err, size_t errlen);
int cu_down_f32(float *h, const float *d, size_t n, char *err, size_t errlen);
int cu_down_bf16(struct cu_bufs *b, float *h, const bf16 *d, size_t n, char *err, size_t errlen);
/* TB_CUDA_OP_ATTENTION_FWD and _BWD through the engine's attention (llama.cu). */
int cu_attention_op(struct cu_bufs *b, struct tb_cuda_op_args *a, char *err, size_t errlen);
/* TB_CUDA_OP_FLASH: the fused attention on its own (flash.cu). */
int cu_flash_op(struct cu_bufs *b, struct tb_cuda_op_args *a, char *err, size_t errlen);

#endif
