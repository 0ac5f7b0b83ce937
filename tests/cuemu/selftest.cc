/*
 * tests/cuemu/selftest.cc: the CUDA emulator's self-tests (a test tool, built into
 * libtrnbench-cuemu.so; tests/unit/cuemu.c runs each through cuemu_selftest): that the
 * emulator finds what it claims to find (a missing __syncthreads exposed by the order
 * shaking, a barrier in divergent code, a shuffle with lanes missing, writes past the
 * dynamic shared memory, copies outside an allocation) and computes what it claims to
 * compute (shuffle reductions, votes, graph capture and replay, bf16 and fp8 e4m3
 * rounding, wmma products, the shared memory limits).
 */
#include "cuemu.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

namespace
{

int say(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int say(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return say(err, errlen, __VA_ARGS__);                                                  \
    } while (0)

#define RUN(grid, block, smem, ...) CUEMU_LAUNCH(grid, block, smem, (cudaStream_t)0, __VA_ARGS__)

/* Device buffer of n T, freed at scope exit. */
template <class T> struct dbuf {
    T *p = nullptr;
    explicit dbuf(size_t n)
    {
        if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess)
            p = nullptr;
    }
    ~dbuf()
    {
        cudaFree(p);
    }
};

/* A failure the emulator must report: the launch's error and its detail. */
bool failed_with(const char *needle, char *seen, size_t seenlen)
{
    cudaError_t e = cudaGetLastError();
    const char *s = cudaGetErrorString(e);
    snprintf(seen, seenlen, "%s", s);
    cuemu::reset_errors();
    return e != cudaSuccess && strstr(s, needle) != nullptr;
}

/* ---- barriers ---- */

/* out[t] = sh[t - 1] + 1 - base after every thread wrote sh[t] = t + base: right only
 * with the barrier, or by luck when thread t - 1 ran before thread t (base differs
 * between launches, so the static shared array's values from the last launch are
 * wrong too). */
__global__ void neighbour_kernel(int *out, int base)
{
    __shared__ int sh[128];
    int t = threadIdx.x;
    sh[t] = t + base;
    out[t] = t > 0 ? sh[t - 1] + 1 - base : 0;
}

__global__ void neighbour_synced_kernel(int *out, int base)
{
    __shared__ int sh[128];
    int t = threadIdx.x;
    sh[t] = t + base;
    __syncthreads();
    out[t] = t > 0 ? sh[t - 1] + 1 - base : 0;
}

int wrong_neighbours(bool sync, int *d, int *h)
{
    int wrong = 0;
    for (int rep = 0; rep < 2; rep++) {
        cudaMemset(d, 0, 128 * sizeof(int));
        if (sync)
            RUN(1, 128, 0, neighbour_synced_kernel)(d, 1000 * rep);
        else
            RUN(1, 128, 0, neighbour_kernel)(d, 1000 * rep);
        cudaMemcpy(h, d, 128 * sizeof(int), cudaMemcpyDeviceToHost);
        for (int i = 0; i < 128; i++)
            wrong += h[i] != i;
    }
    return wrong;
}

int test_missing_barrier(char *err, size_t errlen)
{
    dbuf<int> d(128);
    int h[128];
    int old = cuemu::set_order(1);
    int forward = wrong_neighbours(false, d.p, h);
    cuemu::set_order(0);
    int shaken = wrong_neighbours(false, d.p, h);
    int synced = wrong_neighbours(true, d.p, h);
    cuemu::set_order(2);
    int synced_rev = wrong_neighbours(true, d.p, h);
    cuemu::set_order(old);
    CHECK(forward == 0, "forward order should hide the race (it gave %d wrong)", forward);
    CHECK(shaken > 0, "the alternate order did not expose the missing __syncthreads");
    CHECK(synced == 0 && synced_rev == 0, "with the barrier: %d and %d wrong", synced, synced_rev);
    return 0;
}

__global__ void divergent_barrier_kernel(int *out)
{
    if (threadIdx.x < 16)
        __syncthreads();
    out[threadIdx.x] = 1;
}

__global__ void two_barriers_kernel(int *out)
{
    if (threadIdx.x < 32)
        __syncthreads();
    else
        __syncthreads();
    out[threadIdx.x] = 1;
}

int test_divergent_barrier(char *err, size_t errlen)
{
    dbuf<int> d(64);
    char seen[1024];
    RUN(1, 64, 0, divergent_barrier_kernel)(d.p);
    CHECK(failed_with("reached by 16 of 64 threads; 48 exited", seen, sizeof seen),
          "a barrier only 16 threads reach: %s", seen);
    RUN(1, 64, 0, two_barriers_kernel)(d.p);
    CHECK(failed_with("threads wait at different barriers", seen, sizeof seen), "two barriers: %s",
          seen);
    RUN(1, 64, 0, divergent_barrier_kernel)(d.p);
    CHECK(failed_with("kernel divergent_barrier_kernel", seen, sizeof seen),
          "the message names the kernel: %s", seen);
    return 0;
}

/* ---- warp collectives ---- */

__device__ float warp_sum(float x)
{
    for (int o = 16; o > 0; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

__global__ void reductions_kernel(float *out, int *votes)
{
    __shared__ float part[32];
    int lane = threadIdx.x % 32, w = threadIdx.x / 32;
    float x = (float)threadIdx.x;
    float s = warp_sum(x);
    /* down-shuffle tree: lane 0 holds the warp's sum */
    float d = x;
    for (int o = 16; o > 0; o >>= 1)
        d += __shfl_down_sync(0xffffffffu, d, o);
    d = __shfl_sync(0xffffffffu, d, 0); /* broadcast lane 0 */
    if (lane == 0)
        part[w] = s;
    __syncthreads();
    if (w == 0) {
        float y = lane < (int)(blockDim.x / 32) ? part[lane] : 0.0f;
        y = warp_sum(y);
        if (lane == 0)
            out[0] = y;
    }
    if (threadIdx.x == 37)
        out[1] = d;
    unsigned b = __ballot_sync(0xffffffffu, lane % 3 == 0);
    int c = __syncthreads_count(threadIdx.x % 2 == 0);
    int all = __all_sync(0xffffffffu, lane < 32), any = __any_sync(0xffffffffu, lane == 40);
    /* width 16: lane 3 of each half-warp */
    int sub = __shfl_sync(0xffffffffu, (int)threadIdx.x, 3, 16);
    __syncwarp();
    __syncwarp(0xffffffffu);
    if (threadIdx.x == 52)
        votes[4] = sub;
    if (threadIdx.x == 0) {
        votes[0] = __popc(b);
        votes[1] = c;
        votes[2] = all;
        votes[3] = any;
    }
}

int test_shuffle_sum(char *err, size_t errlen)
{
    dbuf<float> d(2);
    dbuf<int> v(5);
    float h[2];
    int hv[5];
    RUN(1, 256, 0, reductions_kernel)(d.p, v.p);
    CHECK(cudaMemcpy(h, d.p, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess &&
              cudaMemcpy(hv, v.p, sizeof hv, cudaMemcpyDeviceToHost) == cudaSuccess,
          "copies failed: %s", cudaGetErrorString(cudaGetLastError()));
    CHECK(h[0] == 32640.0f, "block sum of 0..255 by shuffles: %g, not 32640", h[0]);
    /* warp 1 holds 32..63: sum 1520 */
    CHECK(h[1] == 1520.0f, "down-shuffle sum of warp 1 broadcast from lane 0: %g, not 1520", h[1]);
    CHECK(hv[0] == 11 && hv[1] == 128 && hv[2] == 1 && hv[3] == 0,
          "ballot %d (11), syncthreads_count %d (128), all %d (1), any %d (0)", hv[0], hv[1], hv[2],
          hv[3]);
    return 0;
}

__global__ void missing_lanes_kernel(float *out)
{
    if (threadIdx.x % 32 >= 16)
        return;
    out[threadIdx.x] = warp_sum(1.0f);
}

__global__ void divergent_shuffles_kernel(float *out)
{
    float x = 1.0f;
    if (threadIdx.x % 2)
        x = __shfl_xor_sync(0xffffffffu, x, 1);
    else
        x = __shfl_down_sync(0xffffffffu, x, 1);
    out[threadIdx.x] = x;
}

int test_shuffle_missing_lanes(char *err, size_t errlen)
{
    dbuf<float> d(64);
    char seen[1024];
    RUN(1, 64, 0, missing_lanes_kernel)(d.p);
    CHECK(failed_with("lanes 0xffff0000 never arrived (16 exited", seen, sizeof seen),
          "a shuffle half the warp skips: %s", seen);
    RUN(1, 64, 0, divergent_shuffles_kernel)(d.p);
    CHECK(failed_with("divergent warp collectives", seen, sizeof seen),
          "different shuffles in one warp: %s", seen);
    return 0;
}

/* ---- graphs ---- */

__global__ void add_kernel(int *p, int v)
{
    p[threadIdx.x] += v;
}

int test_graph_replay(char *err, size_t errlen)
{
    dbuf<int> d(4);
    int h[4] = {5, 5, 5, 5}, z[4] = {0, 0, 0, 0}, *tmp = nullptr;
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ex;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
    cudaMemcpy(d.p, z, sizeof z, cudaMemcpyHostToDevice);
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess,
          "begin capture");
    CUEMU_LAUNCH(1, 4, 0, s, add_kernel)(d.p, 1);
    CUEMU_LAUNCH(1, 4, 0, s, add_kernel)(d.p, 2);
    cudaMemcpyAsync(h, d.p, sizeof h, cudaMemcpyDeviceToHost, s);
    CHECK(h[0] == 5, "a captured copy ran during the capture");
    CHECK(cudaStreamEndCapture(s, &g) == cudaSuccess && g, "end capture");
    CHECK(cudaGraphInstantiate(&ex, g, 0) == cudaSuccess, "instantiate");
    cudaGraphDestroy(g);
    CHECK(cudaGraphLaunch(ex, s) == cudaSuccess && h[0] == 3 && h[3] == 3,
          "first replay: %d, not 3", h[0]);
    CHECK(cudaGraphLaunch(ex, s) == cudaSuccess && h[0] == 6, "second replay: %d, not 6", h[0]);
    cudaGraphExecDestroy(ex);
    /* cudaMalloc may not run while capturing; the capture is then invalidated */
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    CHECK(cudaMalloc(&tmp, 16) == cudaErrorStreamCaptureUnsupported, "cudaMalloc in capture");
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated && !g,
          "an invalidated capture gives no graph");
    cuemu::reset_errors();
    cudaStreamDestroy(s);
    return 0;
}

/* ---- memory ---- */

__global__ void dyn_kernel(float *out, int n)
{
    float *sh = CUEMU_DYNAMIC_SHARED;
    sh[threadIdx.x] = 1.0f; /* thread n (past the end) writes outside */
    __syncthreads();
    out[threadIdx.x] = threadIdx.x < (unsigned)n ? sh[threadIdx.x] : 0.0f;
}

int test_shared_memory_limits(char *err, size_t errlen)
{
    dbuf<float> d(64);
    char seen[1024];
    RUN(1, 32, 64 * 1024, dyn_kernel)(d.p, 32);
    CHECK(failed_with("more than its limit of 49152", seen, sizeof seen),
          "64 KiB without cudaFuncSetAttribute: %s", seen);
    CHECK(cudaFuncSetAttribute(dyn_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               64 * 1024) == cudaSuccess,
          "cudaFuncSetAttribute 64 KiB");
    RUN(1, 32, 64 * 1024, dyn_kernel)(d.p, 32);
    CHECK(cudaGetLastError() == cudaSuccess, "64 KiB after cudaFuncSetAttribute: %s",
          cudaGetErrorString(cudaGetLastError()));
    CHECK(cudaFuncSetAttribute(dyn_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               229 * 1024) == cudaErrorInvalidValue,
          "229 KiB is more than a block may have");
    cuemu::reset_errors();
#if defined(__SANITIZE_ADDRESS__)
    return say(err, errlen, "SKIP the overflow half: AddressSanitizer reports it and stops");
#else
    RUN(1, 33, 32 * sizeof(float), dyn_kernel)(d.p, 32);
    CHECK(failed_with("wrote past its 128 bytes of dynamic shared memory", seen, sizeof seen),
          "a write one float past the dynamic shared memory: %s", seen);
    return 0;
#endif
}

int test_memory_checks(char *err, size_t errlen)
{
    dbuf<float> d(10);
    float h[16];
    char seen[1024];
    CHECK(cudaMemcpy(h, d.p, 10 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess,
          "copy of a whole allocation");
    CHECK(isnan(h[0]) && isnan(h[9]), "fresh device memory reads NaN (%g)", h[0]);
    CHECK(cudaMemcpy(h, d.p, 11 * sizeof(float), cudaMemcpyDeviceToHost) == cudaErrorInvalidValue,
          "a copy one float past the allocation fails");
    CHECK(failed_with("not inside one device allocation", seen, sizeof seen), "%s", seen);
    CHECK(cudaMemset(h, 0, 4) == cudaErrorInvalidValue, "memset of host memory fails");
    CHECK(cudaFree(d.p + 1) == cudaErrorInvalidDevicePointer, "cudaFree inside an allocation");
    cuemu::reset_errors();
    return 0;
}

/* ---- devices ---- */

/* CUEMU_DEVICES and CUDA_VISIBLE_DEVICES give the count the runtime would. */
int test_devices(char *err, size_t errlen)
{
    static const struct {
        const char *devices, *visible; /* NULL: unset */
        int count;
    } cases[] = {
        {NULL, NULL, 1}, {"8", NULL, 8},   {"8", "3", 1},        {"8", "3,5", 2}, {"8", "2,9,1", 1},
        {"8", "1,1", 1}, {"8", "0, 7", 2}, {"8", "GPU-1234", 0}, {"8", "", 0},
    }; /* "2,9,1": cut at 9, no such ordinal; "1,1": cut at the repeat */
    int n = -1, rc = 0;
    cudaError_t e;
    bool quiet = cuemu::set_quiet(true);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0] && rc == 0; i++) {
        if (cases[i].devices)
            setenv("CUEMU_DEVICES", cases[i].devices, 1);
        else
            unsetenv("CUEMU_DEVICES");
        if (cases[i].visible)
            setenv("CUDA_VISIBLE_DEVICES", cases[i].visible, 1);
        else
            unsetenv("CUDA_VISIBLE_DEVICES");
        e = cudaGetDeviceCount(&n);
        if (n != cases[i].count || (e == cudaSuccess) != (cases[i].count > 0))
            rc = say(err, errlen,
                     "CUEMU_DEVICES=%s CUDA_VISIBLE_DEVICES=%s: %d devices (%s), "
                     "expected %d",
                     cases[i].devices ? cases[i].devices : "(unset)",
                     cases[i].visible ? cases[i].visible : "(unset)", n, cudaGetErrorName(e),
                     cases[i].count);
    }
    if (rc == 0) {
        setenv("CUEMU_DEVICES", "8", 1);
        setenv("CUDA_VISIBLE_DEVICES", "4,6", 1);
        if (cudaSetDevice(1) != cudaSuccess || cudaSetDevice(2) != cudaErrorInvalidDevice)
            rc = say(err, errlen, "with 2 visible, device 1 is valid and device 2 is not");
        else if (cudaSetDevice(0) != cudaSuccess)
            rc = say(err, errlen, "device 0 after device 1");
    }
    unsetenv("CUEMU_DEVICES");
    unsetenv("CUDA_VISIBLE_DEVICES");
    cudaSetDevice(0);
    cuemu::reset_errors();
    cuemu::set_quiet(quiet);
    return rc;
}

/* ---- number formats ---- */

int test_bf16(char *err, size_t errlen)
{
    const float one = 1.0f;
    CHECK(__bfloat162float(__float2bfloat16(one + ldexpf(1, -8))) == 1.0f,
          "1 + 2^-8 (a tie) rounds to even 1");
    CHECK(__bfloat162float(__float2bfloat16(one + 3 * ldexpf(1, -8))) == one + ldexpf(1, -6),
          "1 + 3 2^-8 (a tie) rounds to even 1 + 2^-6");
    CHECK(__bfloat162float(__float2bfloat16(one + 1.5f * ldexpf(1, -8))) == one + ldexpf(1, -7),
          "above the tie rounds up");
    CHECK(__bfloat16_as_ushort(__float2bfloat16(NAN)) == 0x7fff, "NaN is 0x7fff");
    CHECK(isinf(__bfloat162float(__float2bfloat16(3.4e38f))), "overflow rounds to infinity");
    return 0;
}

int test_fp8_e4m3(char *err, size_t errlen)
{
    struct {
        float x;
        __nv_saturation_t sat;
        unsigned bits;
    } cases[] = {
        {448.0f, __NV_SATFINITE, 0x7e},
        {464.0f, __NV_SATFINITE, 0x7e},
        {465.0f, __NV_SATFINITE, 0x7e},
        {465.0f, __NV_NOSAT, 0x7f},
        {-1e9f, __NV_SATFINITE, 0xfe},
        {INFINITY, __NV_NOSAT, 0x7f},
        {NAN, __NV_SATFINITE, 0x7f},
        {1.0f, __NV_SATFINITE, 0x38},
        {ldexpf(1, -9), __NV_NOSAT, 0x01},
        {ldexpf(1, -10), __NV_NOSAT, 0x00},
        {3 * ldexpf(1, -10), __NV_NOSAT, 0x02},
        {1.0625f, __NV_NOSAT, 0x38},
        {1.1875f, __NV_NOSAT, 0x3a},
        {-0.0f, __NV_NOSAT, 0x80},
    };
    for (auto &c : cases) {
        unsigned got = __nv_cvt_float_to_fp8(c.x, c.sat, __NV_E4M3);
        CHECK(got == c.bits, "e4m3(%g, %s) = 0x%02x, not 0x%02x", c.x,
              c.sat == __NV_SATFINITE ? "satfinite" : "nosat", got, c.bits);
    }
    for (unsigned b = 0; b < 256; b++) {
        float v = cuemu_fp8_to_float((__nv_fp8_storage_t)b, __NV_E4M3);
        if ((b & 0x7f) == 0x7f) {
            CHECK(isnan(v), "0x%02x is NaN", b);
            continue;
        }
        CHECK(__nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E4M3) == b, "0x%02x -> %g round trip", b,
              v);
    }
    CHECK((float)__nv_fp8_e4m3(1000.0f) == 448.0f, "the constructor saturates to 448");
    return 0;
}

/* ---- wmma ---- */

using namespace nvcuda;

__global__ void wmma_kernel(const __nv_bfloat16 *a, const __nv_bfloat16 *b, float *c)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 1.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16); /* b stored [N][K]: column-major K x N */
    wmma::mma_sync(acc, fa, fb, acc);
    for (int i = 0; i < acc.num_elements; i++)
        acc.x[i] *= 2.0f;
    wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}

int test_wmma(char *err, size_t errlen)
{
    dbuf<__nv_bfloat16> a(256), b(256);
    dbuf<float> c(256);
    __nv_bfloat16 ha[256], hb[256];
    float hc[256];
    for (int i = 0; i < 256; i++) {
        ha[i] = __float2bfloat16((float)(i % 7) - 3.0f);
        hb[i] = __float2bfloat16((float)(i % 5) * 0.5f);
    }
    cudaMemcpy(a.p, ha, sizeof ha, cudaMemcpyHostToDevice);
    cudaMemcpy(b.p, hb, sizeof hb, cudaMemcpyHostToDevice);
    RUN(1, 32, 0, wmma_kernel)(a.p, b.p, c.p);
    CHECK(cudaMemcpy(hc, c.p, sizeof hc, cudaMemcpyDeviceToHost) == cudaSuccess, "%s",
          cudaGetErrorString(cudaGetLastError()));
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            float s = 1.0f;
            for (int k = 0; k < 16; k++)
                s += (float)ha[m * 16 + k] * (float)hb[n * 16 + k];
            CHECK(hc[m * 16 + n] == 2.0f * s, "wmma (%d, %d): %g, not %g", m, n, hc[m * 16 + n],
                  2.0f * s);
        }
    return 0;
}

struct selftest {
    const char *name;
    int (*run)(char *err, size_t errlen);
};
const selftest TESTS[] = {
    {"missing_barrier", test_missing_barrier},
    {"divergent_barrier", test_divergent_barrier},
    {"shuffle_sum", test_shuffle_sum},
    {"shuffle_missing_lanes", test_shuffle_missing_lanes},
    {"graph_replay", test_graph_replay},
    {"shared_memory_limits", test_shared_memory_limits},
    {"memory_checks", test_memory_checks},
    {"devices", test_devices},
    {"bf16", test_bf16},
    {"fp8_e4m3", test_fp8_e4m3},
    {"wmma", test_wmma},
};

} /* namespace */

extern "C" const char *cuemu_selftest_names(void)
{
    static char names[512];
    if (!names[0])
        for (const selftest &t : TESTS) {
            if (names[0])
                strncat(names, " ", sizeof names - strlen(names) - 1);
            strncat(names, t.name, sizeof names - strlen(names) - 1);
        }
    return names;
}

extern "C" int cuemu_selftest(const char *name, char *err, size_t errlen)
{
    for (const selftest &t : TESTS)
        if (!strcmp(t.name, name)) {
            int rc;
            bool quiet = cuemu::set_quiet(true); /* the failures they provoke */
            err[0] = '\0';
            rc = t.run(err, errlen);
            cuemu::set_quiet(quiet);
            cuemu::reset_errors();
            if (rc != 0 && !strncmp(err, "SKIP ", 5))
                return 1;
            return rc;
        }
    snprintf(err, errlen, "no self-test '%s'", name);
    return -1;
}
