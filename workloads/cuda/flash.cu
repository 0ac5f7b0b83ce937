/*
 * workloads/cuda/flash.cu: fused ("flash") attention, forward and backward, over
 * strided bf16 tensors (contracts: cu_flash_fwd, cu_flash_bwd in cuda_common.cuh). The
 * [Sq, Sk] score matrix never reaches device memory: each block keeps a tile of it in
 * shared memory and registers, and the softmax is computed online (the algorithm of
 * the FlashAttention papers, Dao et al. 2022 and 2023; this code is our own).
 *
 * Shape legend: B batch, H query heads, HKV key/value heads, G = H/HKV, Sq queries and
 * Sk keys per (batch, head), D the head dim, DP the head dim the kernels are compiled
 * for (16, 32, 64 or 128: D rounded up, the padding columns zero in shared memory).
 *
 * Only CUDA C++ and nvcuda::wmma (bf16 16x16x16 fragments, fp32 accumulators), so the
 * CPU emulation of the tests (TB_CUEMU) runs the same source: no inline PTX, no
 * asynchronous copies, and no use of which fragment element a lane holds. Wherever a
 * row-wise operation is needed (softmax, the rescaling of the output), the warp stores
 * its accumulator fragment to a per-warp fp32 scratch tile in shared memory and lanes
 * work on rows there; elementwise uniform operations (the final scale) act on frag.x.
 *
 * Blocks: 4 warps (128 threads). Tiles are 64 queries by 64 keys; each warp owns 16
 * rows of its block's tile (queries in the forward and dq kernels, keys in the dk/dv
 * kernel). In a warp's row-wise phases lane l works on row l/2, columns 2i + l%2.
 *
 * Forward (flash_fwd_kernel), one block per (64 queries, head, batch): Q tile to shared
 * memory, then to registers as fragments; per 64-key tile: K and V tiles staged in
 * shared memory by the whole block, S = Q K^T per warp (wmma), stored to the warp's
 * scratch, online softmax in fp32 (running max m and sum l per row; exp2 of scores
 * pre-multiplied by scale*log2(e)), P rounded to bf16 into shared memory, P V (wmma)
 * into the scratch, and O = alpha O + P V in registers (lane-owned, D/2 floats a lane).
 * Causal: key tiles beyond the block's last query are never loaded, and a warp skips
 * the 16-key blocks beyond its own last query; query tiles run longest first.
 *
 * Backward, three kernels, no atomics (deterministic, so two runs of a training step
 * give the same loss bit for bit):
 *   flash_delta_kernel: delta_i = sum_d dO[i,d] O[i,d] (one warp per row);
 *   flash_dkv_kernel: one block per (64 keys, KV head, batch); K and V tiles stay in
 *     shared memory, and the block loops over the G query heads of its group and their
 *     query tiles: S^T = K Q^T, P^T = exp(S^T - lse) (recomputed from the saved lse),
 *     dP^T = V dO^T, dS^T = P^T (dP^T - delta), dV += P^T dO, dK += dS^T Q, with dK and
 *     dV in wmma accumulators for the whole loop: the sum over the G heads is a plain
 *     accumulation, no atomics;
 *   flash_dq_kernel: one block per (64 queries, head, batch), looping over key tiles
 *     like the forward: S, P, dP and dS again, dQ += dS K in accumulators.
 * dq in a second pass rather than by fp32 atomics from the dk/dv kernel: it recomputes
 * S and dP (7 tile products per tile pair instead of 5, +40% of the backward's attention
 * FLOPs), but it is deterministic, needs no fp32 [B, H, Sq, D] accumulation buffer and
 * no conversion pass, and its loop is the forward's. Attention is ~6% of the FLOPs of a
 * Llama 3.2 1B training step at 2048 tokens, so the recomputation costs ~2% of the
 * step at most.
 *
 * Shared memory per block (bytes; each region rounded to 128; 64-row bf16 tiles padded
 * to DP+8 columns and fp32 scratch rows to max(64, DP)+4, which keeps wmma's 32-byte
 * alignment and spreads rows over banks):
 *     DP    forward          dq               dk/dv
 *     16    35,840           38,912           48,640
 *     32    41,984           47,104           56,832
 *     64    54,272           63,488           73,216
 *     128   95,232           112,640          122,368
 * All fit sm_80 (163 KiB per block) and sm_90 (227 KiB); above 48 KiB the kernels opt in
 * with cudaFuncAttributeMaxDynamicSharedMemorySize. Registers a thread (ptxas for sm_90,
 * nvcc 13.0, no spills; sm_80 within a few, 8-16 bytes of spill in two kernels):
 * forward 168/128/128/198 for DP 16/32/64/128, dk/dv 128/118/166/254, dq
 * 128/162/168/250. Blocks an H100 SM holds (shared memory and
 * registers): at DP 64 (Llama 3.2 1B) forward 4, dq 3, dk/dv 3; at DP 128 forward 2,
 * dq 2, dk/dv 1 (its weak spot: 4 warps an SM to hide latency).
 *
 * Expected throughput (not measured: written without a GPU). wmma compiles to the
 * mma.sync tensor-core path, which on an H100 peaks well below the wgmma path (FA2,
 * mma.sync-based, reports ~330 TFLOP/s forward at D 128; FA3 with wgmma and TMA twice
 * that). This kernel also round-trips S and P V through shared memory and stages K/V
 * without overlapping the copy with the products (only other resident blocks hide it),
 * so expect something like 100-200 TFLOP/s forward at D 128 and long sequences, less at
 * D 64 and for the backward. Next steps if the profile asks: register prefetch of the
 * next K/V tile, then sm_90 wgmma/TMA kernels (which the emulator could not run).
 */
#include "cuda_common.cuh"

#ifndef TB_CUEMU
#include <mma.h>
#define FL_BOUNDS __launch_bounds__(128)
#else
#define FL_BOUNDS
#endif
#ifndef __align__
#define __align__(n) __attribute__((aligned(n)))
#endif

#include <math.h>
#include <stdint.h>
#include <string.h>

namespace wmma = nvcuda::wmma;

#define FL_WARPS   4
#define FL_THREADS (FL_WARPS * 32)
#define FL_BQ      64 /* queries per tile (16 per warp) */
#define FL_BK      64 /* keys per tile */
#define FL_LOG2E   1.4426950408889634f
#define FL_LN2     0.6931471805599453f

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fl_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> fl_b_row;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fl_b_col;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> fl_acc;

static __host__ __device__ constexpr int fl_round128(int n)
{
    return (n + 127) / 128 * 128;
}

/* The shared-memory layout of the three tiled kernels for head dim DP. */
template <int DP> struct fl_smem {
    static constexpr int LDH = DP + 8;                        /* bf16 row stride, Q/K/V/dO */
    static constexpr int LDP = FL_BK + 8;                     /* bf16 row stride, P and dS */
    static constexpr int LDF = (DP > FL_BK ? DP : FL_BK) + 4; /* fp32 scratch row stride */
    static constexpr int TILE = fl_round128(64 * LDH * 2);    /* one [64, LDH] bf16 tile */
    static constexpr int WP = fl_round128(16 * LDP * 2);      /* a warp's P (or dS) rows */
    static constexpr int WF = fl_round128(16 * LDF * 4);      /* a warp's fp32 scratch */
    static constexpr int FWD = 3 * TILE + FL_WARPS * (WP + WF);
    static constexpr int DQ = 4 * TILE + FL_WARPS * (WP + WF);
    static constexpr int DKV = 4 * TILE + FL_WARPS * (2 * WP + WF) + 2 * FL_BQ * 4;
};

static_assert(FL_BQ == FL_BK && FL_BQ == 16 * FL_WARPS,
              "one tile shape for queries and keys, 16 rows a warp");

/* Rows [0, nrows) of a [rows, D] slice with row stride rs (elements) into a [64, LDH]
 * tile, zeros in the rows beyond nrows and the columns beyond D. vec: 16-byte loads
 * (the caller checked that every address, stride and D are multiples of 8 elements). */
template <int DP>
static __device__ void fl_load(bf16 *dst, const bf16 *src, long long rs, int nrows, int D, bool vec)
{
    const int LDH = fl_smem<DP>::LDH;
    if (vec) {
        const int CH = DP / 8;
        for (int i = threadIdx.x; i < 64 * CH; i += FL_THREADS) {
            int r = i / CH, c = i % CH * 8;
            uint4 x = make_uint4(0u, 0u, 0u, 0u);
            if (r < nrows && c < D)
                x = *(const uint4 *)(src + r * rs + c);
            *(uint4 *)(dst + r * LDH + c) = x;
        }
    } else {
        for (int i = threadIdx.x; i < 64 * DP; i += FL_THREADS) {
            int r = i / DP, c = i % DP;
            dst[r * LDH + c] = r < nrows && c < D ? src[r * rs + c] : __float2bfloat16(0.0f);
        }
    }
}

/* A warp's 16 rows of fp32 scratch (stride LDF) to bf16 rows row0 + r of dst (row
 * stride rs), rows below nrows, columns below D. */
static __device__ void fl_store_rows(bf16 *dst, long long rs, const float *sf, int ldf, int row0,
                                     int nrows, int D)
{
    int lane = threadIdx.x % 32;
    for (int i = lane; i < 16 * D; i += 32) {
        int r = i / D, c = i % D;
        if (row0 + r < nrows)
            dst[(row0 + r) * rs + c] = __float2bfloat16(sf[r * ldf + c]);
    }
}

static __device__ __forceinline__ int fl_min(int a, int b)
{
    return a < b ? a : b;
}

/* ---- forward ---- */

template <int DP> __global__ void FL_BOUNDS flash_fwd_kernel(struct cu_flash_fwd f, bool vec)
{
    typedef fl_smem<DP> L;
    extern __shared__ __align__(128) unsigned char fl_sh[];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane >> 1, hc = lane & 1;
    bf16 *sq = (bf16 *)fl_sh, *sk = (bf16 *)(fl_sh + L::TILE), *sv = (bf16 *)(fl_sh + 2 * L::TILE);
    bf16 *sp = (bf16 *)(fl_sh + 3 * L::TILE + warp * L::WP);
    float *sf = (float *)(fl_sh + 3 * L::TILE + FL_WARPS * L::WP + warp * L::WF);
    int nqt = (f.Sq + FL_BQ - 1) / FL_BQ, qt = blockIdx.x / (f.H * f.B);
    int h = blockIdx.x % f.H, b = blockIdx.x / f.H % f.B, hk = h / (f.H / f.HKV);
    if (f.causal)
        qt = nqt - 1 - qt; /* the longest rows first */
    int q0 = qt * FL_BQ, off = f.Sk - f.Sq, qi = q0 + 16 * warp + r;
    const bf16 *kb = f.k + b * f.sk.b + hk * f.sk.h, *vb = f.v + b * f.sv.b + hk * f.sv.h;
    float sl2 = f.scale * FL_LOG2E;

    fl_load<DP>(sq, f.q + b * f.sq.b + h * f.sq.h + q0 * f.sq.s, f.sq.s, f.Sq - q0, f.D, vec);
    __syncthreads();
    fl_a qa[DP / 16];
#pragma unroll
    for (int kk = 0; kk < DP / 16; kk++)
        wmma::load_matrix_sync(qa[kk], sq + 16 * warp * L::LDH + 16 * kk, L::LDH);

    int nkt = (f.Sk + FL_BK - 1) / FL_BK;
    if (f.causal) {
        int last = q0 + FL_BQ - 1 + off; /* the last key the block's last query sees */
        nkt = last < 0 ? 0 : fl_min(nkt, last / FL_BK + 1);
    }
    int wlast = q0 + 16 * warp + 15 + off; /* the last key the warp's last query sees */
    float m = -INFINITY, l = 0.0f, acc[DP / 2];
#pragma unroll
    for (int i = 0; i < DP / 2; i++)
        acc[i] = 0.0f;

    for (int kt = 0; kt < nkt; kt++) {
        int k0 = kt * FL_BK;
        __syncthreads(); /* the previous K and V tiles are consumed */
        fl_load<DP>(sk, kb + k0 * f.sk.s, f.sk.s, f.Sk - k0, f.D, vec);
        fl_load<DP>(sv, vb + k0 * f.sv.s, f.sv.s, f.Sk - k0, f.D, vec);
        __syncthreads();
        /* the 16-key blocks any row of this warp sees */
        int ncol = f.causal ? fl_min(FL_BK, wlast - k0 + 1) : FL_BK;
        int nb = ncol > 0 ? (ncol + 15) / 16 : 0;
        if (nb == 0)
            continue; /* so are the later tiles: the loop only keeps the barriers */

        /* S = Q K^T, the warp's 16 rows */
        for (int n = 0; n < nb; n++) {
            fl_acc s;
            wmma::fill_fragment(s, 0.0f);
#pragma unroll
            for (int kk = 0; kk < DP / 16; kk++) {
                fl_b_col kf;
                wmma::load_matrix_sync(kf, sk + 16 * n * L::LDH + 16 * kk, L::LDH);
                wmma::mma_sync(s, qa[kk], kf, s);
            }
            wmma::store_matrix_sync(sf + 16 * n, s, L::LDF, wmma::mem_row_major);
        }
        __syncwarp(0xffffffffu);

        /* online softmax of row r: visible columns [0, lim) */
        int lim = fl_min(f.Sk, f.causal ? qi + off + 1 : f.Sk) - k0;
        float sc[FL_BK / 2], mx = -INFINITY;
#pragma unroll
        for (int i = 0; i < FL_BK / 2; i++) {
            int c = 2 * i + hc;
            sc[i] = c < lim ? sf[r * L::LDF + c] * sl2 : -INFINITY;
            mx = fmaxf(mx, sc[i]);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        float mnew = fmaxf(m, mx);
        float base = mnew == -INFINITY ? 0.0f : mnew; /* a row that has seen no key yet */
        float alpha = exp2f(m - base), sum = 0.0f;
#pragma unroll
        for (int i = 0; i < FL_BK / 2; i++) {
            float p = exp2f(sc[i] - base);
            sp[r * L::LDP + 2 * i + hc] = __float2bfloat16(p);
            sum += p;
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        l = l * alpha + sum;
        m = mnew;
        __syncwarp(0xffffffffu);

        /* P V into the scratch, then O = alpha O + P V */
        fl_a pa[FL_BK / 16]; /* constant indices only (unrolled), so registers */
#pragma unroll
        for (int kk = 0; kk < FL_BK / 16; kk++)
            if (kk < nb)
                wmma::load_matrix_sync(pa[kk], sp + 16 * kk, L::LDP);
#pragma unroll
        for (int n = 0; n < DP / 16; n++) {
            fl_acc o;
            wmma::fill_fragment(o, 0.0f);
#pragma unroll
            for (int kk = 0; kk < FL_BK / 16; kk++) {
                if (kk >= nb)
                    break;
                fl_b_row vf;
                wmma::load_matrix_sync(vf, sv + 16 * kk * L::LDH + 16 * n, L::LDH);
                wmma::mma_sync(o, pa[kk], vf, o);
            }
            wmma::store_matrix_sync(sf + 16 * n, o, L::LDF, wmma::mem_row_major);
        }
        __syncwarp(0xffffffffu);
#pragma unroll
        for (int i = 0; i < DP / 2; i++)
            acc[i] = acc[i] * alpha + sf[r * L::LDF + 2 * i + hc];
    }

    float inv = l > 0.0f ? 1.0f / l : 0.0f;
    __syncwarp(0xffffffffu); /* every lane has read the last P V */
#pragma unroll
    for (int i = 0; i < DP / 2; i++)
        sf[r * L::LDF + 2 * i + hc] = acc[i] * inv;
    __syncwarp(0xffffffffu);
    fl_store_rows(f.o + b * f.so.b + h * f.so.h, f.so.s, sf, L::LDF, q0 + 16 * warp, f.Sq, f.D);
    if (f.lse && hc == 0 && qi < f.Sq)
        f.lse[((long long)b * f.H + h) * f.Sq + qi] =
            l > 0.0f ? (m + log2f(l)) * FL_LN2 : -INFINITY;
}

/* ---- backward ---- */

/* delta[b, h, i] = sum_d dout[i, d] o[i, d]: one warp per row, 8 rows a block. */
__global__ void flash_delta_kernel(struct cu_flash_bwd g)
{
    const struct cu_flash_fwd &f = g.fwd;
    long long row = (long long)blockIdx.x * 8 + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= (long long)f.B * f.H * f.Sq)
        return;
    int i = (int)(row % f.Sq), h = (int)(row / f.Sq % f.H), b = (int)(row / f.Sq / f.H);
    const bf16 *o = f.o + b * f.so.b + h * f.so.h + i * f.so.s;
    const bf16 *d = g.dout + b * g.sdo.b + h * g.sdo.h + i * g.sdo.s;
    float s = 0.0f;
    for (int c = lane; c < f.D; c += 32)
        s += __bfloat162float(o[c]) * __bfloat162float(d[c]);
    for (int w = 16; w > 0; w >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, w);
    if (lane == 0)
        g.delta[row] = s;
}

/* dk, dv for 64 keys of one KV head: loops over the G query heads and their query
 * tiles. Warp w owns keys k0 + 16w .. +15; lane rows are keys, columns queries. */
template <int DP> __global__ void FL_BOUNDS flash_dkv_kernel(struct cu_flash_bwd g, bool vec)
{
    typedef fl_smem<DP> L;
    const struct cu_flash_fwd &f = g.fwd;
    extern __shared__ __align__(128) unsigned char fl_sh[];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane >> 1, hc = lane & 1;
    bf16 *sk = (bf16 *)fl_sh, *sv = (bf16 *)(fl_sh + L::TILE);
    bf16 *sq = (bf16 *)(fl_sh + 2 * L::TILE), *sdo = (bf16 *)(fl_sh + 3 * L::TILE);
    bf16 *spt = (bf16 *)(fl_sh + 4 * L::TILE + warp * L::WP);
    bf16 *sdst = (bf16 *)(fl_sh + 4 * L::TILE + (FL_WARPS + warp) * L::WP);
    float *sf = (float *)(fl_sh + 4 * L::TILE + 2 * FL_WARPS * L::WP + warp * L::WF);
    float *slse = (float *)(fl_sh + 4 * L::TILE + FL_WARPS * (2 * L::WP + L::WF));
    float *sdlt = slse + FL_BQ;
    int kt = blockIdx.x / (f.HKV * f.B), hk = blockIdx.x % f.HKV, b = blockIdx.x / f.HKV % f.B;
    int G = f.H / f.HKV, k0 = kt * FL_BK, off = f.Sk - f.Sq, kj = k0 + 16 * warp + r;
    int nqt = (f.Sq + FL_BQ - 1) / FL_BQ, qt0 = 0;
    int wfirst = k0 + 16 * warp - off; /* the first query that sees one of the warp's keys */
    float sl2 = f.scale * FL_LOG2E;

    fl_load<DP>(sk, f.k + b * f.sk.b + hk * f.sk.h + k0 * f.sk.s, f.sk.s, f.Sk - k0, f.D, vec);
    fl_load<DP>(sv, f.v + b * f.sv.b + hk * f.sv.h + k0 * f.sv.s, f.sv.s, f.Sk - k0, f.D, vec);
    if (f.causal && k0 - off > 0)
        qt0 = (k0 - off) / FL_BQ; /* earlier query tiles see none of these keys */
    fl_acc dkf[DP / 16], dvf[DP / 16];
#pragma unroll
    for (int n = 0; n < DP / 16; n++) {
        wmma::fill_fragment(dkf[n], 0.0f);
        wmma::fill_fragment(dvf[n], 0.0f);
    }

    for (int gi = 0; gi < G; gi++) {
        int h = hk * G + gi;
        const float *lse = f.lse + ((long long)b * f.H + h) * f.Sq;
        const float *dlt = g.delta + ((long long)b * f.H + h) * f.Sq;
        for (int qt = qt0; qt < nqt; qt++) {
            int q0 = qt * FL_BQ;
            __syncthreads(); /* the previous query tile is consumed */
            fl_load<DP>(sq, f.q + b * f.sq.b + h * f.sq.h + q0 * f.sq.s, f.sq.s, f.Sq - q0, f.D,
                        vec);
            fl_load<DP>(sdo, g.dout + b * g.sdo.b + h * g.sdo.h + q0 * g.sdo.s, g.sdo.s, f.Sq - q0,
                        f.D, vec);
            if (threadIdx.x < FL_BQ) {
                int qi = q0 + threadIdx.x;
                slse[threadIdx.x] = qi < f.Sq ? lse[qi] * FL_LOG2E : 0.0f;
                sdlt[threadIdx.x] = qi < f.Sq ? dlt[qi] : 0.0f;
            }
            __syncthreads();
            /* the 16-query blocks that see some key of this warp start at nb0 */
            int nb0 = 0;
            if (f.causal && wfirst > q0)
                nb0 = fl_min(FL_BQ / 16, (wfirst - q0) / 16);
            if (nb0 == FL_BQ / 16)
                continue;

            /* S^T = K Q^T: rows the warp's keys, columns the tile's queries */
            for (int n = nb0; n < FL_BQ / 16; n++) {
                fl_acc s;
                wmma::fill_fragment(s, 0.0f);
#pragma unroll
                for (int kk = 0; kk < DP / 16; kk++) {
                    fl_a ka;
                    fl_b_col qb;
                    wmma::load_matrix_sync(ka, sk + 16 * warp * L::LDH + 16 * kk, L::LDH);
                    wmma::load_matrix_sync(qb, sq + 16 * n * L::LDH + 16 * kk, L::LDH);
                    wmma::mma_sync(s, ka, qb, s);
                }
                wmma::store_matrix_sync(sf + 16 * n, s, L::LDF, wmma::mem_row_major);
            }
            __syncwarp(0xffffffffu);
            float pv[FL_BQ / 2];
#pragma unroll
            for (int i = 0; i < FL_BQ / 2; i++) {
                int c = 2 * i + hc, qi = q0 + c;
                bool vis = qi < f.Sq && kj < f.Sk && (!f.causal || kj <= qi + off);
                pv[i] = vis ? exp2f(sf[r * L::LDF + c] * sl2 - slse[c]) : 0.0f;
                spt[r * L::LDP + c] = __float2bfloat16(pv[i]);
            }
            __syncwarp(0xffffffffu);

            /* dP^T = V dO^T */
            for (int n = nb0; n < FL_BQ / 16; n++) {
                fl_acc s;
                wmma::fill_fragment(s, 0.0f);
#pragma unroll
                for (int kk = 0; kk < DP / 16; kk++) {
                    fl_a va;
                    fl_b_col db;
                    wmma::load_matrix_sync(va, sv + 16 * warp * L::LDH + 16 * kk, L::LDH);
                    wmma::load_matrix_sync(db, sdo + 16 * n * L::LDH + 16 * kk, L::LDH);
                    wmma::mma_sync(s, va, db, s);
                }
                wmma::store_matrix_sync(sf + 16 * n, s, L::LDF, wmma::mem_row_major);
            }
            __syncwarp(0xffffffffu);
            /* dS^T = P^T (dP^T - delta); the scale is applied to dK at the end. A column
             * outside [nb0 * 16, 64) holds stale scratch, but its P is 0. */
#pragma unroll
            for (int i = 0; i < FL_BQ / 2; i++) {
                int c = 2 * i + hc;
                float ds = pv[i] != 0.0f ? pv[i] * (sf[r * L::LDF + c] - sdlt[c]) : 0.0f;
                sdst[r * L::LDP + c] = __float2bfloat16(ds);
            }
            __syncwarp(0xffffffffu);

            /* dV += P^T dO, dK += dS^T Q */
            for (int kk = nb0; kk < FL_BQ / 16; kk++) {
                fl_a pa, da;
                wmma::load_matrix_sync(pa, spt + 16 * kk, L::LDP);
                wmma::load_matrix_sync(da, sdst + 16 * kk, L::LDP);
#pragma unroll
                for (int n = 0; n < DP / 16; n++) {
                    fl_b_row ob, qb;
                    wmma::load_matrix_sync(ob, sdo + 16 * kk * L::LDH + 16 * n, L::LDH);
                    wmma::mma_sync(dvf[n], pa, ob, dvf[n]);
                    wmma::load_matrix_sync(qb, sq + 16 * kk * L::LDH + 16 * n, L::LDH);
                    wmma::mma_sync(dkf[n], da, qb, dkf[n]);
                }
            }
        }
    }

    __syncwarp(0xffffffffu);
#pragma unroll
    for (int n = 0; n < DP / 16; n++) {
        for (int i = 0; i < dkf[n].num_elements; i++)
            dkf[n].x[i] *= f.scale;
        wmma::store_matrix_sync(sf + 16 * n, dkf[n], L::LDF, wmma::mem_row_major);
    }
    __syncwarp(0xffffffffu);
    fl_store_rows(g.dk + b * g.sdk.b + hk * g.sdk.h, g.sdk.s, sf, L::LDF, k0 + 16 * warp, f.Sk,
                  f.D);
    __syncwarp(0xffffffffu);
#pragma unroll
    for (int n = 0; n < DP / 16; n++)
        wmma::store_matrix_sync(sf + 16 * n, dvf[n], L::LDF, wmma::mem_row_major);
    __syncwarp(0xffffffffu);
    fl_store_rows(g.dv + b * g.sdv.b + hk * g.sdv.h, g.sdv.s, sf, L::LDF, k0 + 16 * warp, f.Sk,
                  f.D);
}

/* dq for 64 queries of one head: the forward's loop over key tiles, recomputing S, P,
 * dP and dS. */
template <int DP> __global__ void FL_BOUNDS flash_dq_kernel(struct cu_flash_bwd g, bool vec)
{
    typedef fl_smem<DP> L;
    const struct cu_flash_fwd &f = g.fwd;
    extern __shared__ __align__(128) unsigned char fl_sh[];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane >> 1, hc = lane & 1;
    bf16 *sq = (bf16 *)fl_sh, *sdo = (bf16 *)(fl_sh + L::TILE);
    bf16 *sk = (bf16 *)(fl_sh + 2 * L::TILE), *sv = (bf16 *)(fl_sh + 3 * L::TILE);
    bf16 *sds = (bf16 *)(fl_sh + 4 * L::TILE + warp * L::WP);
    float *sf = (float *)(fl_sh + 4 * L::TILE + FL_WARPS * L::WP + warp * L::WF);
    int nqt = (f.Sq + FL_BQ - 1) / FL_BQ, qt = blockIdx.x / (f.H * f.B);
    int h = blockIdx.x % f.H, b = blockIdx.x / f.H % f.B, hk = h / (f.H / f.HKV);
    if (f.causal)
        qt = nqt - 1 - qt;
    int q0 = qt * FL_BQ, off = f.Sk - f.Sq, qi = q0 + 16 * warp + r;
    const bf16 *kb = f.k + b * f.sk.b + hk * f.sk.h, *vb = f.v + b * f.sv.b + hk * f.sv.h;
    float sl2 = f.scale * FL_LOG2E, lse2 = 0.0f, dlt = 0.0f;
    if (qi < f.Sq) {
        lse2 = f.lse[((long long)b * f.H + h) * f.Sq + qi] * FL_LOG2E;
        dlt = g.delta[((long long)b * f.H + h) * f.Sq + qi];
    }

    fl_load<DP>(sq, f.q + b * f.sq.b + h * f.sq.h + q0 * f.sq.s, f.sq.s, f.Sq - q0, f.D, vec);
    fl_load<DP>(sdo, g.dout + b * g.sdo.b + h * g.sdo.h + q0 * g.sdo.s, g.sdo.s, f.Sq - q0, f.D,
                vec);
    __syncthreads();
    fl_a qa[DP / 16], da[DP / 16];
    fl_acc dqf[DP / 16];
#pragma unroll
    for (int kk = 0; kk < DP / 16; kk++) {
        wmma::load_matrix_sync(qa[kk], sq + 16 * warp * L::LDH + 16 * kk, L::LDH);
        wmma::load_matrix_sync(da[kk], sdo + 16 * warp * L::LDH + 16 * kk, L::LDH);
        wmma::fill_fragment(dqf[kk], 0.0f);
    }

    int nkt = (f.Sk + FL_BK - 1) / FL_BK;
    if (f.causal) {
        int last = q0 + FL_BQ - 1 + off;
        nkt = last < 0 ? 0 : fl_min(nkt, last / FL_BK + 1);
    }
    int wlast = q0 + 16 * warp + 15 + off;
    for (int kt = 0; kt < nkt; kt++) {
        int k0 = kt * FL_BK;
        __syncthreads();
        fl_load<DP>(sk, kb + k0 * f.sk.s, f.sk.s, f.Sk - k0, f.D, vec);
        fl_load<DP>(sv, vb + k0 * f.sv.s, f.sv.s, f.Sk - k0, f.D, vec);
        __syncthreads();
        int ncol = f.causal ? fl_min(FL_BK, wlast - k0 + 1) : FL_BK;
        int nb = ncol > 0 ? (ncol + 15) / 16 : 0;
        if (nb == 0)
            continue;

        /* S = Q K^T, then P in registers */
        for (int n = 0; n < nb; n++) {
            fl_acc s;
            wmma::fill_fragment(s, 0.0f);
#pragma unroll
            for (int kk = 0; kk < DP / 16; kk++) {
                fl_b_col kf;
                wmma::load_matrix_sync(kf, sk + 16 * n * L::LDH + 16 * kk, L::LDH);
                wmma::mma_sync(s, qa[kk], kf, s);
            }
            wmma::store_matrix_sync(sf + 16 * n, s, L::LDF, wmma::mem_row_major);
        }
        __syncwarp(0xffffffffu);
        int lim = fl_min(f.Sk, f.causal ? qi + off + 1 : f.Sk) - k0;
        float pv[FL_BK / 2];
#pragma unroll
        for (int i = 0; i < FL_BK / 2; i++) {
            int c = 2 * i + hc;
            pv[i] = c < lim && qi < f.Sq ? exp2f(sf[r * L::LDF + c] * sl2 - lse2) : 0.0f;
        }
        __syncwarp(0xffffffffu);

        /* dP = dO V^T, then dS = P (dP - delta) */
        for (int n = 0; n < nb; n++) {
            fl_acc s;
            wmma::fill_fragment(s, 0.0f);
#pragma unroll
            for (int kk = 0; kk < DP / 16; kk++) {
                fl_b_col vf;
                wmma::load_matrix_sync(vf, sv + 16 * n * L::LDH + 16 * kk, L::LDH);
                wmma::mma_sync(s, da[kk], vf, s);
            }
            wmma::store_matrix_sync(sf + 16 * n, s, L::LDF, wmma::mem_row_major);
        }
        __syncwarp(0xffffffffu);
#pragma unroll
        for (int i = 0; i < FL_BK / 2; i++) {
            int c = 2 * i + hc;
            float ds = pv[i] != 0.0f ? pv[i] * (sf[r * L::LDF + c] - dlt) : 0.0f;
            sds[r * L::LDP + c] = __float2bfloat16(ds);
        }
        __syncwarp(0xffffffffu);

        /* dQ += dS K */
        for (int kk = 0; kk < nb; kk++) {
            fl_a sa;
            wmma::load_matrix_sync(sa, sds + 16 * kk, L::LDP);
#pragma unroll
            for (int n = 0; n < DP / 16; n++) {
                fl_b_row kf;
                wmma::load_matrix_sync(kf, sk + 16 * kk * L::LDH + 16 * n, L::LDH);
                wmma::mma_sync(dqf[n], sa, kf, dqf[n]);
            }
        }
    }

    __syncwarp(0xffffffffu);
#pragma unroll
    for (int n = 0; n < DP / 16; n++) {
        for (int i = 0; i < dqf[n].num_elements; i++)
            dqf[n].x[i] *= f.scale;
        wmma::store_matrix_sync(sf + 16 * n, dqf[n], L::LDF, wmma::mem_row_major);
    }
    __syncwarp(0xffffffffu);
    fl_store_rows(g.dq + b * g.sdq.b + h * g.sdq.h, g.sdq.s, sf, L::LDF, q0 + 16 * warp, f.Sq, f.D);
}

/* ---- launchers ---- */

/* The compiled head dim for D (0: none). */
static int fl_dp(int D)
{
    return D < 1 ? 0 : D <= 16 ? 16 : D <= 32 ? 32 : D <= 64 ? 64 : D <= 128 ? 128 : 0;
}

static bool fl_vec_ok(const void *p, struct cu_strides s, int D)
{
    return ((uintptr_t)p & 15u) == 0 && s.b % 8 == 0 && s.h % 8 == 0 && s.s % 8 == 0 && D % 8 == 0;
}

static int fl_check(const struct cu_flash_fwd *f, const char *what, char *err, size_t errlen)
{
    if (f->B < 1 || f->H < 1 || f->HKV < 1 || f->Sq < 1 || f->Sk < 1)
        return cu_err(err, errlen, "%s: empty shape (B %d, H %d, HKV %d, Sq %d, Sk %d)", what, f->B,
                      f->H, f->HKV, f->Sq, f->Sk);
    if (f->H % f->HKV)
        return cu_err(err, errlen, "%s: %d query heads not a multiple of %d KV heads", what, f->H,
                      f->HKV);
    if (!fl_dp(f->D))
        return cu_err(err, errlen, "%s: head dim %d not supported (1 to 128)", what, f->D);
    if ((long long)(f->Sq + FL_BQ - 1) / FL_BQ * f->H * f->B > 0x7fffffffLL ||
        (long long)(f->Sk + FL_BK - 1) / FL_BK * f->HKV * f->B > 0x7fffffffLL)
        return cu_err(err, errlen, "%s: too many tiles for one grid", what);
    return 0;
}

/* Opt in to more than 48 KiB of shared memory once per kernel, after checking the
 * device's limit. */
template <typename K>
static int fl_smem_setup(K *kernel, int bytes, bool *done, const char *what, int D, char *err,
                         size_t errlen)
{
    size_t most = g_cu.prop.sharedMemPerBlockOptin;
    if (*done || bytes <= 48 * 1024)
        return 0;
    if (most > 0 && (size_t)bytes > most)
        return cu_err(err, errlen,
                      "%s (head dim %d): %d bytes of shared memory per block, the device allows "
                      "%zu",
                      what, D, bytes, most);
    CU_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    *done = true;
    return 0;
}

template <int DP> static int fl_fwd(const struct cu_flash_fwd *f, char *err, size_t errlen)
{
    static bool ready;
    bool vec = fl_vec_ok(f->q, f->sq, f->D) && fl_vec_ok(f->k, f->sk, f->D) &&
               fl_vec_ok(f->v, f->sv, f->D);
    unsigned grid = (unsigned)((f->Sq + FL_BQ - 1) / FL_BQ * f->H * f->B);
    CU_TRY(fl_smem_setup(flash_fwd_kernel<DP>, fl_smem<DP>::FWD, &ready, "flash forward", f->D, err,
                         errlen));
    TB_KL(grid, FL_THREADS, fl_smem<DP>::FWD, flash_fwd_kernel<DP>)(*f, vec);
    CU_LAUNCH("flash_fwd", cudaGetLastError());
    return 0;
}

template <int DP> static int fl_bwd(const struct cu_flash_bwd *g, char *err, size_t errlen)
{
    static bool ready_dkv, ready_dq;
    const struct cu_flash_fwd *f = &g->fwd;
    bool vec = fl_vec_ok(f->q, f->sq, f->D) && fl_vec_ok(f->k, f->sk, f->D) &&
               fl_vec_ok(f->v, f->sv, f->D) && fl_vec_ok(g->dout, g->sdo, f->D);
    long long rows = (long long)f->B * f->H * f->Sq;
    unsigned gkv = (unsigned)((f->Sk + FL_BK - 1) / FL_BK * f->HKV * f->B);
    unsigned gq = (unsigned)((f->Sq + FL_BQ - 1) / FL_BQ * f->H * f->B);
    if ((rows + 7) / 8 > 0x7fffffffLL)
        return cu_err(err, errlen, "flash backward: %lld rows for one grid", rows);
    CU_TRY(fl_smem_setup(flash_dkv_kernel<DP>, fl_smem<DP>::DKV, &ready_dkv, "flash dk/dv", f->D,
                         err, errlen));
    CU_TRY(fl_smem_setup(flash_dq_kernel<DP>, fl_smem<DP>::DQ, &ready_dq, "flash dq", f->D, err,
                         errlen));
    TB_KL((unsigned)((rows + 7) / 8), 256, 0, flash_delta_kernel)(*g);
    CU_LAUNCH("flash_delta", cudaGetLastError());
    TB_KL(gkv, FL_THREADS, fl_smem<DP>::DKV, flash_dkv_kernel<DP>)(*g, vec);
    CU_LAUNCH("flash_dkv", cudaGetLastError());
    TB_KL(gq, FL_THREADS, fl_smem<DP>::DQ, flash_dq_kernel<DP>)(*g, vec);
    CU_LAUNCH("flash_dq", cudaGetLastError());
    return 0;
}

int cu_flash_fwd(const struct cu_flash_fwd *f, char *err, size_t errlen)
{
    CU_TRY(fl_check(f, "flash forward", err, errlen));
    switch (fl_dp(f->D)) {
    case 16:
        return fl_fwd<16>(f, err, errlen);
    case 32:
        return fl_fwd<32>(f, err, errlen);
    case 64:
        return fl_fwd<64>(f, err, errlen);
    default:
        return fl_fwd<128>(f, err, errlen);
    }
}

int cu_flash_bwd(const struct cu_flash_bwd *g, char *err, size_t errlen)
{
    CU_TRY(fl_check(&g->fwd, "flash backward", err, errlen));
    if (!g->fwd.lse || !g->delta)
        return cu_err(err, errlen, "flash backward: no lse or delta buffer");
    switch (fl_dp(g->fwd.D)) {
    case 16:
        return fl_bwd<16>(g, err, errlen);
    case 32:
        return fl_bwd<32>(g, err, errlen);
    case 64:
        return fl_bwd<64>(g, err, errlen);
    default:
        return fl_bwd<128>(g, err, errlen);
    }
}

/* ---- kernel test ---- */

int cu_flash_op(struct cu_bufs *bufs, struct tb_cuda_op_args *a, char *err, size_t errlen)
{
    struct cu_flash_bwd g;
    struct cu_flash_fwd *f = &g.fwd;
    size_t nq, nk, rows;
    bf16 *q, *k, *v, *dout;
    memset(&g, 0, sizeof g);
    f->B = a->B;
    f->H = a->NH;
    f->HKV = a->NKV;
    f->Sq = a->T;
    f->Sk = a->Sk;
    f->D = a->HD;
    f->causal = a->causal;
    f->scale = a->softmax_scale != 0.0f ? a->softmax_scale : 1.0f / sqrtf((float)a->HD);
    CU_TRY(fl_check(f, "flash test", err, errlen));
    nq = (size_t)f->B * f->H * f->Sq * f->D;
    nk = (size_t)f->B * f->HKV * f->Sk * f->D;
    rows = (size_t)f->B * f->H * f->Sq;
    if (a->token_major) {
        f->sq = cu_strides_token_major(f->H, f->Sq, f->D);
        f->sk = cu_strides_token_major(f->HKV, f->Sk, f->D);
    } else {
        f->sq = cu_strides_head_major(f->H, f->Sq, f->D);
        f->sk = cu_strides_head_major(f->HKV, f->Sk, f->D);
    }
    f->sv = f->sk;
    f->so = g.sdo = g.sdq = f->sq;
    g.sdk = g.sdv = f->sk;
    CU_TRY(cu_up_bf16(bufs, &q, a->in[0], nq, err, errlen));
    CU_TRY(cu_up_bf16(bufs, &k, a->in[1], nk, err, errlen));
    CU_TRY(cu_up_bf16(bufs, &v, a->in[2], nk, err, errlen));
    CU_TRY(cu_buf_alloc(bufs, (void **)&f->o, nq * sizeof *f->o, err, errlen));
    CU_TRY(cu_up_f32(bufs, &f->lse, NULL, rows, err, errlen));
    f->q = q;
    f->k = k;
    f->v = v;
    CU_TRY(cu_flash_fwd(f, err, errlen));
    CU_TRY(cu_down_bf16(bufs, a->out[0], f->o, nq, err, errlen));
    CU_TRY(cu_down_f32(a->out[1], f->lse, rows, err, errlen));
    if (!a->in[3])
        return 0;
    CU_TRY(cu_up_bf16(bufs, &dout, a->in[3], nq, err, errlen));
    g.dout = dout;
    CU_TRY(cu_up_f32(bufs, &g.delta, NULL, rows, err, errlen));
    CU_TRY(cu_buf_alloc(bufs, (void **)&g.dq, nq * sizeof *g.dq, err, errlen));
    CU_TRY(cu_buf_alloc(bufs, (void **)&g.dk, nk * sizeof *g.dk, err, errlen));
    CU_TRY(cu_buf_alloc(bufs, (void **)&g.dv, nk * sizeof *g.dv, err, errlen));
    CU_TRY(cu_flash_bwd(&g, err, errlen));
    CU_TRY(cu_down_bf16(bufs, a->out[2], g.dq, nq, err, errlen));
    CU_TRY(cu_down_bf16(bufs, a->out[3], g.dk, nk, err, errlen));
    return cu_down_bf16(bufs, a->out[3] + nk, g.dv, nk, err, errlen);
}
