/*
 * tests/cuemu/gemm_ref.cc: the CUDA emulator's matrix product (a test tool, built into
 * libtrnbench-cuemu.so in place of workloads/cuda/gemm.cu, since cuBLASLt is not
 * emulated): cu_gemm_run's contract (cuda_common.cuh) with plain loops. Row-major
 * D[M,N] = alpha op(A) op(B) + beta C per batch matrix, fp32 accumulation over k in
 * order, then the output rounded once to bf16 (or kept fp32 with out_f32); C is not
 * read when beta is 0 and may be D. Before any arithmetic, every operand's extent
 * (rows, leading dimension, batch stride) must lie inside one device allocation and the
 * leading dimensions must hold a row, as cuBLASLt requires: an engine that passes a
 * wrong stride fails here with a message instead of reading its neighbour's memory.
 *
 * Operand types: each operand is read through struct operand, whose type says how an
 * element becomes fp32: bf16, fp32 (C and D) or e4m3 (in_type CU_DT_E4M3), whose
 * per-tensor factors a_scale and b_scale are device values read when the product runs
 * (as cuBLASLt reads its scale pointers, so a replayed graph sees the current ones).
 * cu_gemm_check (cuda_common.cuh) runs first, as in the real plugin: the fp8 layout
 * and compute-capability refusals are the same.
 */
#include "workloads/cuda/cuda_common.cuh"

#include <stdio.h>
#include <string.h>

#include <string>

namespace
{

enum operand_type { OPERAND_BF16, OPERAND_F32, OPERAND_E4M3 };

size_t type_bytes(operand_type t)
{
    return t == OPERAND_F32 ? 4 : t == OPERAND_E4M3 ? 1 : 2;
}

/* One operand as stored: rows x cols row-major with leading dimension ld, batch
 * matrices stride elements apart; scale multiplies every element (1 for bf16). */
struct operand {
    const void *p;
    operand_type type;
    int rows, cols, ld;
    long long stride;
    float scale;

    float get(int b, int r, int c) const
    {
        size_t i = (size_t)((long long)b * stride + (long long)r * ld + c);
        switch (type) {
        case OPERAND_BF16:
            return __bfloat162float(static_cast<const bf16 *>(p)[i]) * scale;
        case OPERAND_F32:
            return static_cast<const float *>(p)[i] * scale;
        case OPERAND_E4M3:
            return fp8_to_f32(static_cast<const fp8 *>(p)[i]) * scale;
        }
        return NAN;
    }
};

/* The operand's extent inside one device allocation, and a leading dimension that
 * holds a row. */
int check_operand(const operand &o, int batch, const char *name, const char *what, char *err,
                  size_t errlen)
{
    size_t last;
    if (o.ld < o.cols)
        return cu_err(err, errlen,
                      "%s: %s stored %d x %d row-major has leading dimension %d < %d "
                      "(CUBLAS_STATUS_INVALID_VALUE on the device)",
                      what, name, o.rows, o.cols, o.ld, o.cols);
    if (batch > 1 && o.stride < 0)
        return cu_err(err, errlen, "%s: %s has a negative batch stride %lld", what, name, o.stride);
    last = (size_t)((long long)(batch - 1) * o.stride + (long long)(o.rows - 1) * o.ld + o.cols);
    if (!cuemu::is_device_range(o.p, last * type_bytes(o.type)))
        return cu_err(err, errlen,
                      "%s: %s (%d x %d, ld %d, batch %d, stride %lld) at %p reaches %zu bytes, "
                      "past its device allocation",
                      what, name, o.rows, o.cols, o.ld, batch, o.stride, o.p,
                      last * type_bytes(o.type));
    return 0;
}

void product(const cu_gemm &g, const operand &A, const operand &B, const operand &C, int batch)
{
    /* e4m3: the exact products summed in fp32, then the dequantisation factors */
    float dq = g.in_type == CU_DT_E4M3 ? *g.a_scale * *g.b_scale : 1.0f;
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < g.M; i++)
            for (int j = 0; j < g.N; j++) {
                float acc = 0.0f;
                for (int k = 0; k < g.K; k++)
                    acc += (g.ta ? A.get(b, k, i) : A.get(b, i, k)) *
                           (g.tb ? B.get(b, j, k) : B.get(b, k, j));
                float d = g.alpha * dq * acc;
                if (g.beta != 0.0f)
                    d += g.beta * C.get(b, i, j); /* read before D is written: C may be D */
                size_t o = (size_t)((long long)b * g.sd + (long long)i * g.ldd + j);
                if (g.out_f32)
                    static_cast<float *>(g.D)[o] = d;
                else
                    static_cast<bf16 *>(g.D)[o] = __float2bfloat16(d);
            }
}

} /* namespace */

int cu_gemm_run(const struct cu_gemm *g, const char *what, char *err, size_t errlen)
{
    int batch = g->batch < 1 ? 1 : g->batch;
    operand_type td = g->out_f32 ? OPERAND_F32 : OPERAND_BF16;
    operand_type ti = g->in_type == CU_DT_E4M3 ? OPERAND_E4M3 : OPERAND_BF16;
    operand A = {g->A, ti, g->ta ? g->K : g->M, g->ta ? g->M : g->K, g->lda, g->sa, 1};
    operand B = {g->B, ti, g->tb ? g->N : g->K, g->tb ? g->K : g->N, g->ldb, g->sb, 1};
    operand C = {g->C ? g->C : g->D, td, g->M, g->N, g->ldd, g->sd, 1};
    operand D = {g->D, td, g->M, g->N, g->ldd, g->sd, 1};
    cudaError_t e;

    if (cu_gemm_check(g, what, err, errlen) != 0)
        return -1;
    if (g->M < 1 || g->N < 1 || g->K < 1)
        return cu_err(err, errlen, "%s: empty product m=%d n=%d k=%d", what, g->M, g->N, g->K);
    if (check_operand(A, batch, "A", what, err, errlen) != 0 ||
        check_operand(B, batch, "B", what, err, errlen) != 0 ||
        check_operand(D, batch, "D", what, err, errlen) != 0 ||
        (g->beta != 0.0f && check_operand(C, batch, "C", what, err, errlen) != 0))
        return -1;
    if (g->in_type == CU_DT_E4M3 && (!cuemu::is_device_range(g->a_scale, sizeof(float)) ||
                                     !cuemu::is_device_range(g->b_scale, sizeof(float))))
        return cu_err(err, errlen, "%s: fp8 scale factors not in device memory", what);
    cu_gemm gc = *g;
    std::string name = std::string("product '") + what + "'";
    e = cuemu::submit(g_cu.stream, "cu_gemm_run", [gc, A, B, C, batch]() {
        product(gc, A, B, C, batch);
        return cudaSuccess;
    });
    if (e != cudaSuccess)
        return cu_err(err, errlen, "%s (m=%d n=%d k=%d batch=%d): %s", name.c_str(), g->M, g->N,
                      g->K, batch, cudaGetErrorString(e));
    return 0;
}

void cu_gemm_release(void)
{
    /* nothing cached: no descriptors without cuBLASLt */
}
