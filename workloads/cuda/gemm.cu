/*
 * workloads/cuda/gemm.cu: bf16 and fp8 (e4m3) matrix products through cuBLASLt
 * (cuda_common.cuh, cu_gemm_run). The row-major product D = op(A) op(B) is cuBLASLt's
 * column-major D^T = op(B)^T op(A)^T: the operands swap and keep their transposes. Each
 * distinct shape (sizes, transposes, strides, operand and output types, beta, pointer
 * alignment) gets its descriptors and the heuristic's first algorithm once, with the
 * 32 MiB workspace; later calls reuse them (the heuristic query costs tens of
 * microseconds of CPU).
 *
 * fp8: our row-major A [M, K] and B [N, K] (ta false, tb true) are cuBLASLt's
 * transposed A (our B) and non-transposed B (our A), the "TN" layout its fp8 kernels
 * require on Hopper. The per-tensor dequantisation factors are device pointers set on
 * the (cached) descriptor before every call: A_SCALE is our b_scale, B_SCALE our
 * a_scale. Fast accumulation stays off (cuBLASLt's default, set explicitly): Hopper's
 * fp8 tensor cores then promote their partial sums to fp32 registers at intervals, so
 * long K sums keep fp32 accuracy (the fast mode trades that for speed; the choice
 * belongs to a later, measured change).
 */
#include "cuda_common.cuh"

#include <stdio.h>
#include <string.h>

static const char *lt_status(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS:
        return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
        return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
        return "CUBLAS_STATUS_UNKNOWN";
    }
}

#define LT_CHECK(call)                                                                             \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            cu_err(err, errlen, "%s (%s: m=%d n=%d k=%d batch=%d): %s", #call, what, g->M, g->N,   \
                   g->K, g->batch, lt_status(s_));                                                 \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* ---- the shape cache ---- */

struct gemm_key {
    bool ta, tb, out_f32, has_beta;
    int in_type; /* enum cu_dtype */
    int M, N, K, batch, lda, ldb, ldd;
    long long sa, sb, sd;
    int align_a, align_b, align_d; /* bytes, power of two <= 256 */
};

struct gemm_plan {
    struct gemm_key key;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld; /* la: cuBLASLt's A (our B), lb: its B (our A) */
    cublasLtMatmulAlgo_t algo;
    size_t workspace;
};

#define GEMM_CACHE 256
static struct gemm_plan g_plans[GEMM_CACHE];
static int g_nplans;

/* The largest power of two up to 256 dividing the address and every stride in bytes. */
static int alignment(const void *p, size_t elem, long long ld, long long stride)
{
    uintptr_t a = (uintptr_t)p | (uintptr_t)(ld * (long long)elem) | 256u;
    if (stride)
        a |= (uintptr_t)(stride * (long long)elem);
    return (int)(a & (~a + 1)); /* lowest set bit */
}

static void plan_free(struct gemm_plan *p)
{
    if (p->la)
        cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb)
        cublasLtMatrixLayoutDestroy(p->lb);
    if (p->ld)
        cublasLtMatrixLayoutDestroy(p->ld);
    if (p->op)
        cublasLtMatmulDescDestroy(p->op);
    memset(p, 0, sizeof *p);
}

void cu_gemm_release(void)
{
    for (int i = 0; i < g_nplans; i++)
        plan_free(&g_plans[i]);
    g_nplans = 0;
}

static int layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, int rows, int cols, int ld,
                  int batch, long long stride)
{
    int32_t b = batch;
    int64_t s = stride;
    if (cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld) !=
        CUBLAS_STATUS_SUCCESS)
        return -1;
    if (batch > 1 &&
        (cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b) !=
             CUBLAS_STATUS_SUCCESS ||
         cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s,
                                          sizeof s) != CUBLAS_STATUS_SUCCESS))
        return -1;
    return 0;
}

static int plan_make(struct gemm_plan *p, const struct cu_gemm *g, const struct gemm_key *k,
                     const char *what, char *err, size_t errlen)
{
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    cublasOperation_t opa = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLASLt's A is our B */
    cublasOperation_t opb = g->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cudaDataType_t dt = g->out_f32 ? CUDA_R_32F : CUDA_R_16BF;
    cudaDataType_t it = g->in_type == CU_DT_E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    int8_t fast = 0; /* cuBLASLt documents int8_t; a 4-byte value is CUBLAS_STATUS_INVALID_VALUE */
    uint64_t ws = TB_CUDA_WORKSPACE_BYTES;
    uint32_t al[4] = {(uint32_t)k->align_b, (uint32_t)k->align_a, (uint32_t)k->align_d,
                      (uint32_t)k->align_d};
    int returned = 0;

    memset(p, 0, sizeof *p);
    p->key = *k;
    LT_CHECK(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    if (g->in_type == CU_DT_E4M3) {
        LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                                sizeof fast));
        LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                &g->b_scale, sizeof g->b_scale));
        LT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                &g->a_scale, sizeof g->a_scale));
    }
    /* column-major: our B (stored [N,K] if tb else [K,N] row-major) is a
     * (tb ? K x N : N x K) matrix; our A a (ta ? M x K : K x M) one; D is N x M */
    if (layout(&p->la, it, g->tb ? g->K : g->N, g->tb ? g->N : g->K, g->ldb, g->batch, g->sb) !=
            0 ||
        layout(&p->lb, it, g->ta ? g->M : g->K, g->ta ? g->K : g->M, g->lda, g->batch, g->sa) !=
            0 ||
        layout(&p->ld, dt, g->N, g->M, g->ldd, g->batch, g->sd) != 0) {
        cu_err(err, errlen, "cublasLtMatrixLayoutCreate (%s: m=%d n=%d k=%d): failed", what, g->M,
               g->N, g->K);
        goto fail;
    }
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof ws));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                  &al[0], sizeof al[0]));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                  &al[1], sizeof al[1]));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                  &al[2], sizeof al[2]));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                  &al[3], sizeof al[3]));
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(g_cu.lt, p->op, p->la, p->lb, p->ld, p->ld, pref, 1,
                                            &res, &returned));
    if (returned < 1) {
        cu_err(err, errlen,
               "cuBLASLt has no algorithm for %s (m=%d n=%d k=%d batch=%d, alignment %d/%d/%d "
               "bytes)",
               what, g->M, g->N, g->K, g->batch, k->align_a, k->align_b, k->align_d);
        goto fail;
    }
    p->algo = res.algo;
    p->workspace = res.workspaceSize;
    cublasLtMatmulPreferenceDestroy(pref);
    return 0;
fail:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    plan_free(p);
    return -1;
}

int cu_gemm_run(const struct cu_gemm *g, const char *what, char *err, size_t errlen)
{
    struct gemm_key k;
    struct gemm_plan tmp, *p = NULL;
    const size_t esz_d = g->out_f32 ? 4 : 2;
    const size_t esz_in = g->in_type == CU_DT_E4M3 ? 1 : 2;
    cublasStatus_t s;

    CU_TRY(cu_gemm_check(g, what, err, errlen));
    memset(&k, 0, sizeof k);
    k.ta = g->ta;
    k.tb = g->tb;
    k.out_f32 = g->out_f32;
    k.in_type = (int)g->in_type;
    k.has_beta = g->beta != 0.0f;
    k.M = g->M;
    k.N = g->N;
    k.K = g->K;
    k.batch = g->batch < 1 ? 1 : g->batch;
    k.lda = g->lda;
    k.ldb = g->ldb;
    k.ldd = g->ldd;
    k.sa = g->sa;
    k.sb = g->sb;
    k.sd = g->sd;
    k.align_a = alignment(g->A, esz_in, g->lda, g->sa);
    k.align_b = alignment(g->B, esz_in, g->ldb, g->sb);
    k.align_d = alignment(g->D, esz_d, g->ldd, g->sd);
    if (g->C && g->C != g->D) {
        int ac = alignment(g->C, esz_d, g->ldd, g->sd);
        k.align_d = ac < k.align_d ? ac : k.align_d;
    }
    if (g->M < 1 || g->N < 1 || g->K < 1)
        return cu_err(err, errlen, "%s: empty product m=%d n=%d k=%d", what, g->M, g->N, g->K);

    for (int i = 0; i < g_nplans; i++)
        if (!memcmp(&g_plans[i].key, &k, sizeof k)) {
            p = &g_plans[i];
            break;
        }
    if (!p) {
        struct cu_gemm gg = *g;
        gg.batch = k.batch;
        p = g_nplans < GEMM_CACHE ? &g_plans[g_nplans] : &tmp;
        if (plan_make(p, &gg, &k, what, err, errlen) != 0)
            return -1;
        if (p != &tmp)
            g_nplans++;
    } else if (g->in_type == CU_DT_E4M3 &&
               (cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                               &g->b_scale,
                                               sizeof g->b_scale) != CUBLAS_STATUS_SUCCESS ||
                cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                               &g->a_scale,
                                               sizeof g->a_scale) != CUBLAS_STATUS_SUCCESS)) {
        /* a cached plan keeps the descriptor; this call's tensors bring their own factors */
        return cu_err(err, errlen, "cublasLtMatmulDescSetAttribute (%s: scale pointers) failed",
                      what);
    }
    s = cublasLtMatmul(g_cu.lt, p->op, &g->alpha, g->B, p->la, g->A, p->lb, &g->beta,
                       g->C ? g->C : g->D, p->ld, g->D, p->ld, &p->algo, g_cu.workspace,
                       p->workspace, g_cu.stream);
    if (p == &tmp)
        plan_free(&tmp);
    if (s != CUBLAS_STATUS_SUCCESS)
        return cu_err(err, errlen, "cublasLtMatmul (%s: m=%d n=%d k=%d batch=%d): %s", what, g->M,
                      g->N, g->K, k.batch, lt_status(s));
    return 0;
}
