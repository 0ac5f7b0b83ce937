/*
 * tests/cuemu/cuemu.h: a CPU emulation of the part of CUDA that trnbench's CUDA plugin
 * uses. A TEST TOOL, not a GPU: the plugin's own sources (the .cu files of
 * workloads/cuda but gemm.cu) are compiled by g++ with -DTB_CUEMU against this header
 * (cuda_common.cuh includes the CUDA headers by name; tests/cuemu/include/ has
 * stand-ins of those names that include this one, on the emulation build's path) into
 * build/lib/libtrnbench-cuemu.so, so tests/unit/gpu.c can run every kernel and the
 * engine where there is no GPU (CI). Nothing here includes a CUDA header; it builds
 * where no CUDA toolkit exists. trnbench refuses it for measurements (harness/tb_gpu.h).
 *
 * What it emulates (tests/cuemu/cuemu.cc):
 *   - execution: a launch runs its blocks one after another; the threads of a block
 *     are fibers on one OS thread. __syncthreads() is a barrier across the block's
 *     fibers and the warp collectives (shuffles, votes, __syncwarp, wmma) rendezvous
 *     the 32 lanes of a warp. The order the fibers run in between two barriers is
 *     shaken (CUEMU_ORDER: alternate (default: forward and reverse on alternate
 *     phases, blocks and launches), forward, reverse, random with CUEMU_SEED), to
 *     expose missing barriers; odd launches run their blocks last to first. A barrier
 *     that some threads never reach while others wait, threads waiting at different
 *     barriers, and a warp collective with lanes missing or lanes at different
 *     collectives are launch failures naming the kernel, the block and the source line.
 *   - memory: device memory is host memory (posix_memalign, filled with 0xff bytes,
 *     NaN as floats, so reading what was never written shows); copies and memsets
 *     check that their device range lies inside one allocation. __shared__ is static
 *     storage (blocks run one at a time). `extern __shared__ T name[];` is rewritten by
 *     the makefile (sed) into a pointer to the launch's dynamic shared memory
 *     (CUEMU_DYNAMIC_SHARED), sized as the launch asked and refilled with 0xff bytes
 *     before every block: more than 48 KiB needs cudaFuncSetAttribute as on the device,
 *     more than 227 KiB fails, a write past it is reported (under ASan any access).
 *     Static __shared__ variables keep the previous block's values: g++ cannot gather
 *     them in one section to refill (it ignores the section attribute in templates and
 *     rejects it where inline functions mix with others).
 *   - devices: CUEMU_DEVICES (default 1) identical devices, all this CPU, which
 *     CUDA_VISIBLE_DEVICES filters as the runtime does (ordinals only), so the plugin's
 *     device count and device choice are testable.
 *   - the runtime subset the plugin calls: streams (work runs on submission), events
 *     (wall clock), graph capture (launches, copies and host work recorded, replayed
 *     by cudaGraphLaunch), errors with CUDA's codes and strings plus a cuemu detail.
 *     What is not emulated fails with a message, never succeeds silently.
 *   - types: __nv_bfloat16 (round to nearest even), __nv_bfloat162, __nv_fp8_e4m3
 *     ("fn": max 448, NaN 0x7f), the vector types, dim3, nvcuda::wmma fragments
 *     (every lane holds the whole tile; the collective operations rendezvous the warp).
 *
 * What it cannot check: timing, cuBLASLt (tests/cuemu/gemm_ref.cc replaces gemm.cu by
 * plain loops), the device's memory model and races that the order shaking does not
 * reach, the bit-exact results of the device's fast math (__expf is expf here).
 *
 * Error convention: the runtime returns cudaError_t; every failure also prints one
 * line "cuemu: ..." on stderr, and cudaGetErrorString of the failing code carries it.
 */
#ifndef TB_CUEMU_H
#define TB_CUEMU_H

#ifndef TB_CUEMU
#error "tests/cuemu/cuemu.h is only for the CPU emulation build (-DTB_CUEMU)"
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

/* ---- the language: qualifiers ---- */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
/* no __noinline__: the plugin does not use it, and g++ 13's libstdc++ spells its own
 * attributes __attribute__((__noinline__)), which such a macro breaks */
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__   static
#define __constant__
#define CUEMU_DYNAMIC_SHARED (cuemu::dynamic_shared(__FILE__, __LINE__))

/* ---- vector types ---- */

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
        : x(vx), y(vy), z(vz)
    {
    }
};
struct uint3 {
    unsigned int x, y, z;
};
#define CUEMU_VEC2(T, name, al)                                                                    \
    struct alignas(al) name {                                                                      \
        T x, y;                                                                                    \
    };                                                                                             \
    static inline name make_##name(T a, T b)                                                       \
    {                                                                                              \
        name v = {a, b};                                                                           \
        return v;                                                                                  \
    }
#define CUEMU_VEC4(T, name, al)                                                                    \
    struct alignas(al) name {                                                                      \
        T x, y, z, w;                                                                              \
    };                                                                                             \
    static inline name make_##name(T a, T b, T c, T d)                                             \
    {                                                                                              \
        name v = {a, b, c, d};                                                                     \
        return v;                                                                                  \
    }
CUEMU_VEC2(float, float2, 8)
CUEMU_VEC4(float, float4, 16)
CUEMU_VEC2(int, int2, 8)
CUEMU_VEC4(int, int4, 16)
CUEMU_VEC2(unsigned int, uint2, 8)
CUEMU_VEC4(unsigned int, uint4, 16)
CUEMU_VEC2(double, double2, 16)
#undef CUEMU_VEC2
#undef CUEMU_VEC4

/* ---- the runtime's types ---- */

enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInvalidDeviceFunction = 98,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalState = 401,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorAssert = 710,
    cudaErrorIllegalInstruction = 715,
    cudaErrorLaunchFailure = 719,
    cudaErrorNotSupported = 801,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureUnmatched = 903,
    cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};
enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2,
};
enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrClockRate = 13,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrMemoryClockRate = 36,
    cudaDevAttrL2CacheSize = 38,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};
#define cudaStreamDefault     0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault      0x00

/* The fields the plugin reads, plus the usual limits (an H100 SXM's, named as a CPU). */
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    size_t sharedMemPerBlockOptin;
    size_t sharedMemPerMultiprocessor;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int maxThreadsPerMultiProcessor;
    size_t totalConstMem;
    int major, minor;
    int multiProcessorCount;
    int l2CacheSize;
    int memoryBusWidth;
    int concurrentKernels;
};

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;
/* cuBLASLt is not emulated: only the handle type, so struct cu_ctx compiles
 * (tests/cuemu/gemm_ref.cc replaces gemm.cu). */
typedef struct cuemu_no_cublaslt *cublasLtHandle_t;

/* ---- the runtime API (host) ---- */

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaGetDevice(int *dev);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev);
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int dev);
cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int dev);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);

cudaError_t cudaMalloc(void **p, size_t bytes);
template <class T> static inline cudaError_t cudaMalloc(T **p, size_t bytes)
{
    return cudaMalloc((void **)p, bytes);
}
cudaError_t cudaFree(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s = 0);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s = 0);
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t s = 0);

cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *st);

cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t stop);

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

/* Kernel attributes: only the dynamic shared memory limit is emulated. */
cudaError_t cuemu_func_set_attribute(const void *kernel, cudaFuncAttribute attr, int value);
template <class... P>
static inline cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute attr,
                                               int value)
{
    return cuemu_func_set_attribute((const void *)kernel, attr, value);
}

/* ---- the emulator's machinery (cuemu.cc) ---- */

namespace cuemu
{

/* The current fiber's coordinates (set while a kernel runs). */
struct thread_coords {
    uint3 tid, bid;
    dim3 bdim, gdim;
};
extern thread_coords *g_cur;

/* Run f on stream s now, or record it while s is capturing (what is the name in
 * messages). The device work of a runtime call or of gemm_ref.cc goes through it. */
cudaError_t submit(cudaStream_t s, const char *what, std::function<cudaError_t()> f);

/* Launch a kernel: body runs once per thread. */
cudaError_t launch(dim3 grid, dim3 block, size_t smem, cudaStream_t s, const void *kernel,
                   const char *name, std::function<void()> body);

/* Whether [p, p + bytes) lies inside one cudaMalloc allocation. */
bool is_device_range(const void *p, size_t bytes);
/* Record a failure of the emulated device work (printed; a sticky launch failure). */
cudaError_t fail(cudaError_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For the self-tests: forget every error; set the fibers' order (0 alternate,
 * 1 forward, 2 reverse, 3 random), returning the previous one. */
void reset_errors(void);
int set_order(int order);
/* Whether failures are printed on stderr (the self-tests provoke them); the old value. */
bool set_quiet(bool quiet);

/* Inside a kernel: the dynamic shared memory of this launch. */
struct dyn_ptr {
    void *p;
    template <class T> operator T *() const
    {
        return static_cast<T *>(p);
    }
};
dyn_ptr dynamic_shared(const char *file, int line);

/* Warp collectives: every lane of mask calls with the same op; v is this lane's value,
 * arg its operand (source lane, offset, predicate); the result for this lane. */
enum coll_op {
    COLL_SHFL_IDX,
    COLL_SHFL_XOR,
    COLL_SHFL_DOWN,
    COLL_SHFL_UP,
    COLL_BALLOT,
    COLL_SYNCWARP,
    COLL_WMMA_LOAD,
    COLL_WMMA_STORE,
    COLL_WMMA_MMA,
    COLL_WMMA_FILL,
    COLL_ACTIVEMASK,
};
uint64_t warp_collective(coll_op op, unsigned mask, uint64_t v, int arg, int width,
                         const char *file, int line);
/* __syncthreads and its counting forms (kind 0 plain, 1 count, 2 and, 3 or). */
int block_barrier(int kind, int pred, const char *file, int line);

template <class T> static inline uint64_t to_bits(T v)
{
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                  "warp shuffles move values of at most 8 bytes");
    uint64_t u = 0;
    memcpy(&u, &v, sizeof v);
    return u;
}
template <class T> static inline T from_bits(uint64_t u)
{
    T v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* TB_KL's launcher: the parameters converted to the kernel's types at the launch, as
 * the device does, and copied into every thread. */
template <class... P> struct kernel_launch {
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    void (*kernel)(P...);
    const char *name;
    template <class... A> void operator()(A &&...a) const
    {
        static_assert(sizeof...(A) == sizeof...(P), "kernel launched with the wrong arguments");
        auto args =
            std::make_shared<std::tuple<typename std::decay<P>::type...>>(std::forward<A>(a)...);
        void (*k)(P...) = kernel;
        launch(grid, block, smem, stream, (const void *)kernel, name,
               [k, args]() { std::apply(k, *args); });
    }
};
template <class... P>
static inline kernel_launch<P...> make_launch(dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                                              void (*kernel)(P...), const char *name)
{
    return kernel_launch<P...>{grid, block, smem, s, kernel, name};
}

} /* namespace cuemu */

#define CUEMU_LAUNCH(grid, block, smem, stream, ...)                                               \
    cuemu::make_launch((grid), (block), (smem), (stream), __VA_ARGS__, #__VA_ARGS__)

#define threadIdx (static_cast<const uint3 &>(cuemu::g_cur->tid))
#define blockIdx  (static_cast<const uint3 &>(cuemu::g_cur->bid))
#define blockDim  (static_cast<const dim3 &>(cuemu::g_cur->bdim))
#define gridDim   (static_cast<const dim3 &>(cuemu::g_cur->gdim))
static constexpr int warpSize = 32;

/* ---- synchronisation and warp collectives ---- */

#define __syncthreads()        ((void)cuemu::block_barrier(0, 0, __FILE__, __LINE__))
#define __syncthreads_count(p) cuemu::block_barrier(1, (p) != 0, __FILE__, __LINE__)
#define __syncthreads_and(p)   cuemu::block_barrier(2, (p) != 0, __FILE__, __LINE__)
#define __syncthreads_or(p)    cuemu::block_barrier(3, (p) != 0, __FILE__, __LINE__)
#define __syncwarp                                                                                 \
    cuemu::syncwarp_at                                                                             \
    {                                                                                              \
        __FILE__, __LINE__                                                                         \
    }
#define __shfl_sync(m, v, ...)                                                                     \
    cuemu::shfl_(cuemu::COLL_SHFL_IDX, m, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor_sync(m, v, ...)                                                                 \
    cuemu::shfl_(cuemu::COLL_SHFL_XOR, m, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(m, v, ...)                                                                \
    cuemu::shfl_(cuemu::COLL_SHFL_DOWN, m, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(m, v, ...)                                                                  \
    cuemu::shfl_(cuemu::COLL_SHFL_UP, m, v, __FILE__, __LINE__, __VA_ARGS__)
#define __ballot_sync(m, p)                                                                        \
    ((unsigned)cuemu::warp_collective(cuemu::COLL_BALLOT, m, 0, (p) != 0, 32, __FILE__, __LINE__))
#define __any_sync(m, p) (__ballot_sync(m, p) != 0u)
#define __all_sync(m, p) (__ballot_sync(m, p) == (unsigned)(m))
#define __activemask()                                                                             \
    ((unsigned)cuemu::warp_collective(cuemu::COLL_ACTIVEMASK, 0, 0, 0, 32, __FILE__, __LINE__))

namespace cuemu
{
/* __syncwarp(mask = all lanes), with where it was called */
struct syncwarp_at {
    const char *file;
    int line;
    void operator()(unsigned mask = 0xffffffffu) const
    {
        warp_collective(COLL_SYNCWARP, mask, 0, 0, 32, file, line);
    }
};
template <class T>
static inline T shfl_(coll_op op, unsigned mask, T v, const char *file, int line, int arg,
                      int width = 32)
{
    return from_bits<T>(warp_collective(op, mask, to_bits(v), arg, width, file, line));
}
} /* namespace cuemu */

/* ---- atomics (one OS thread: plain read-modify-write) ---- */

template <class T> static inline T atomicAdd(T *p, T v)
{
    T old = *p;
    *p = old + v;
    return old;
}
template <class T> static inline T atomicSub(T *p, T v)
{
    T old = *p;
    *p = old - v;
    return old;
}
template <class T> static inline T atomicMax(T *p, T v)
{
    T old = *p;
    *p = old > v ? old : v;
    return old;
}
template <class T> static inline T atomicMin(T *p, T v)
{
    T old = *p;
    *p = old < v ? old : v;
    return old;
}
template <class T> static inline T atomicExch(T *p, T v)
{
    T old = *p;
    *p = v;
    return old;
}
template <class T> static inline T atomicCAS(T *p, T cmp, T v)
{
    T old = *p;
    if (old == cmp)
        *p = v;
    return old;
}
template <class T> static inline T atomicOr(T *p, T v)
{
    T old = *p;
    *p = old | v;
    return old;
}
template <class T> static inline T atomicAnd(T *p, T v)
{
    T old = *p;
    *p = old & v;
    return old;
}
static inline void __threadfence(void) {}
static inline void __threadfence_block(void) {}

/* ---- math: the device's intrinsics, computed in fp32 by the host's libm ---- */

/* glibc declares these names itself (its own expf and friends): macros over ours */
#define __expf   cuemu__expf
#define __exp10f cuemu__exp10f
#define __logf   cuemu__logf
#define __log2f  cuemu__log2f
#define __sinf   cuemu__sinf
#define __cosf   cuemu__cosf
#define __tanhf  cuemu__tanhf
#define __powf   cuemu__powf

static inline float cuemu__expf(float x)
{
    return expf(x);
}
static inline float cuemu__exp10f(float x)
{
    return exp10f(x);
}
static inline float cuemu__logf(float x)
{
    return logf(x);
}
static inline float cuemu__log2f(float x)
{
    return log2f(x);
}
static inline float cuemu__sinf(float x)
{
    return sinf(x);
}
static inline float cuemu__cosf(float x)
{
    return cosf(x);
}
static inline float cuemu__tanhf(float x)
{
    return tanhf(x);
}
static inline float cuemu__powf(float x, float y)
{
    return powf(x, y);
}
static inline float __fdividef(float a, float b)
{
    return a / b;
}
static inline float __frcp_rn(float x)
{
    return 1.0f / x;
}
static inline float __fsqrt_rn(float x)
{
    return sqrtf(x);
}
static inline float __fmaf_rn(float a, float b, float c)
{
    return fmaf(a, b, c);
}
static inline float __fadd_rn(float a, float b)
{
    return a + b;
}
static inline float __fmul_rn(float a, float b)
{
    return a * b;
}
static inline float rsqrtf(float x)
{
    return 1.0f / sqrtf(x);
}
static inline double rsqrt(double x)
{
    return 1.0 / sqrt(x);
}
static inline float __saturatef(float x)
{
    return x > 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f);
}
/* bit casts (memcpy: no aliasing questions for g++) */
static inline unsigned __float_as_uint(float x)
{
    unsigned u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float __uint_as_float(unsigned u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline int __float_as_int(float x)
{
    return (int)__float_as_uint(x);
}
static inline float __int_as_float(int i)
{
    return __uint_as_float((unsigned)i);
}
static inline int __popc(unsigned x)
{
    return __builtin_popcount(x);
}
static inline int __popcll(unsigned long long x)
{
    return __builtin_popcountll(x);
}
static inline int __clz(int x)
{
    return x ? __builtin_clz((unsigned)x) : 32;
}
static inline int __ffs(int x)
{
    return __builtin_ffs(x);
}
template <class T> static inline T __ldg(const T *p)
{
    return *p;
}

/* CUDA's overloaded min/max of device code */
#define CUEMU_MINMAX(T)                                                                            \
    static inline T min(T a, T b)                                                                  \
    {                                                                                              \
        return a < b ? a : b;                                                                      \
    }                                                                                              \
    static inline T max(T a, T b)                                                                  \
    {                                                                                              \
        return a > b ? a : b;                                                                      \
    }
CUEMU_MINMAX(int)
CUEMU_MINMAX(unsigned int)
CUEMU_MINMAX(long)
CUEMU_MINMAX(unsigned long)
CUEMU_MINMAX(long long)
CUEMU_MINMAX(unsigned long long)
CUEMU_MINMAX(float)
CUEMU_MINMAX(double)
#undef CUEMU_MINMAX

/* ---- bf16 ---- */

namespace cuemu
{
static inline unsigned short f32_to_bf16_rn(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fffu; /* NaN: CUDA's canonical bf16 NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}
static inline float bf16_to_f32(unsigned short h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
} /* namespace cuemu */

struct alignas(2) __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) : __x(cuemu::f32_to_bf16_rn(f)) {}
    __nv_bfloat16(double f) : __x(cuemu::f32_to_bf16_rn((float)f)) {}
    __nv_bfloat16(int i) : __x(cuemu::f32_to_bf16_rn((float)i)) {}
    operator float() const
    {
        return cuemu::bf16_to_f32(__x);
    }
};
struct alignas(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

static inline __nv_bfloat16 __float2bfloat16(float f)
{
    return __nv_bfloat16(f);
}
static inline __nv_bfloat16 __float2bfloat16_rn(float f)
{
    return __nv_bfloat16(f);
}
static inline float __bfloat162float(__nv_bfloat16 h)
{
    return cuemu::bf16_to_f32(h.__x);
}
static inline float __low2float(__nv_bfloat162 h)
{
    return __bfloat162float(h.x);
}
static inline float __high2float(__nv_bfloat162 h)
{
    return __bfloat162float(h.y);
}
static inline float2 __bfloat1622float2(__nv_bfloat162 h)
{
    return make_float2(__bfloat162float(h.x), __bfloat162float(h.y));
}
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b)
{
    __nv_bfloat162 r = {__nv_bfloat16(a), __nv_bfloat16(b)};
    return r;
}
static inline __nv_bfloat162 __float22bfloat162_rn(float2 f)
{
    return __floats2bfloat162_rn(f.x, f.y);
}
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h)
{
    return h.__x;
}
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u)
{
    __nv_bfloat16 h;
    h.__x = u;
    return h;
}
/* bf16 arithmetic rounds its fp32 result once, as the device's bf16 instructions do */
#define CUEMU_BF16_OP(op)                                                                          \
    static inline __nv_bfloat16 operator op(__nv_bfloat16 a, __nv_bfloat16 b)                      \
    {                                                                                              \
        return __nv_bfloat16(__bfloat162float(a) op __bfloat162float(b));                          \
    }
CUEMU_BF16_OP(+)
CUEMU_BF16_OP(-)
CUEMU_BF16_OP(*)
CUEMU_BF16_OP(/)
#undef CUEMU_BF16_OP
static inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b)
{
    return a * b;
}
static inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b)
{
    return a + b;
}
static inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c)
{
    return __nv_bfloat16(fmaf(__bfloat162float(a), __bfloat162float(b), __bfloat162float(c)));
}

/* ---- fp8 e4m3 ("fn": no infinities, max 448, NaN S.1111.111) ---- */

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

/* Round to nearest even; NaN -> 0x7f with the sign; beyond 448 + half an ulp: 448
 * (SATFINITE) or NaN (NOSAT). Only e4m3 is emulated (e5m2 fails loudly in cuemu.cc). */
__nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t sat,
                                         __nv_fp8_interpretation_t kind);
float cuemu_fp8_to_float(__nv_fp8_storage_t x, __nv_fp8_interpretation_t kind);
static inline __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t sat,
                                                            __nv_fp8_interpretation_t kind)
{
    return (__nv_fp8x2_storage_t)(__nv_cvt_float_to_fp8(x.x, sat, kind) |
                                  (__nv_cvt_float_to_fp8(x.y, sat, kind) << 8));
}
static inline __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16 x, __nv_saturation_t sat,
                                                             __nv_fp8_interpretation_t kind)
{
    return __nv_cvt_float_to_fp8(__bfloat162float(x), sat, kind);
}

struct alignas(1) __nv_fp8_e4m3 {
    __nv_fp8_storage_t __x;
    __nv_fp8_e4m3() = default;
    explicit __nv_fp8_e4m3(float f) : __x(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3)) {}
    explicit __nv_fp8_e4m3(double f)
        : __x(__nv_cvt_float_to_fp8((float)f, __NV_SATFINITE, __NV_E4M3))
    {
    }
    explicit __nv_fp8_e4m3(__nv_bfloat16 f)
        : __x(__nv_cvt_float_to_fp8(__bfloat162float(f), __NV_SATFINITE, __NV_E4M3))
    {
    }
    explicit operator float() const
    {
        return cuemu_fp8_to_float(__x, __NV_E4M3);
    }
    explicit operator __nv_bfloat16() const
    {
        return __nv_bfloat16(cuemu_fp8_to_float(__x, __NV_E4M3));
    }
};

/* ---- nvcuda::wmma: every lane holds the whole tile ---- */

namespace nvcuda
{
namespace wmma
{
struct matrix_a;
struct matrix_b;
struct accumulator;
struct row_major;
struct col_major;
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K> struct tile_shape;
template <int M, int N, int K> struct tile_shape<matrix_a, M, N, K> {
    enum { rows = M, cols = K };
};
template <int M, int N, int K> struct tile_shape<matrix_b, M, N, K> {
    enum { rows = K, cols = N };
};
template <int M, int N, int K> struct tile_shape<accumulator, M, N, K> {
    enum { rows = M, cols = N };
};

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
    static_assert(M * N * K > 0, "wmma fragment shape");
    enum { rows = tile_shape<Use, M, N, K>::rows, cols = tile_shape<Use, M, N, K>::cols };
    static constexpr int num_elements = rows * cols;
    typedef T element_type;
    T x[rows * cols]; /* row-major, the whole tile, in every lane */
};

namespace detail
{
static inline bool col_layout(const row_major *)
{
    return false;
}
static inline bool col_layout(const col_major *)
{
    return true;
}
template <class F> static inline void load(F &f, const void *p, unsigned ldm, bool col)
{
    typedef typename F::element_type T;
    const T *src = static_cast<const T *>(p);
    for (int r = 0; r < F::rows; r++)
        for (int c = 0; c < F::cols; c++)
            f.x[r * F::cols + c] = col ? src[(size_t)c * ldm + r] : src[(size_t)r * ldm + c];
}
} /* namespace detail */

template <class T> struct same_type {
    typedef T type;
};
template <class Use, int M, int N, int K, class T, class L>
static inline void fill_fragment(fragment<Use, M, N, K, T, L> &f,
                                 const typename same_type<T>::type &v)
{
    cuemu::warp_collective(cuemu::COLL_WMMA_FILL, 0xffffffffu, 0, 0, 32, "wmma::fill_fragment", 0);
    for (int i = 0; i < f.num_elements; i++)
        f.x[i] = v;
}

/* matrix_a / matrix_b: the layout is the fragment's */
template <class Use, int M, int N, int K, class T, class L>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const T *p, unsigned ldm)
{
    static_assert(!std::is_void<L>::value, "an accumulator load needs a layout_t");
    cuemu::warp_collective(cuemu::COLL_WMMA_LOAD, 0xffffffffu, cuemu::to_bits(p), (int)ldm, 32,
                           "wmma::load_matrix_sync", 0);
    detail::load(f, p, ldm, detail::col_layout((L *)nullptr));
}
template <int M, int N, int K, class T>
static inline void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const T *p, unsigned ldm,
                                    layout_t layout)
{
    cuemu::warp_collective(cuemu::COLL_WMMA_LOAD, 0xffffffffu, cuemu::to_bits(p), (int)ldm, 32,
                           "wmma::load_matrix_sync", 0);
    detail::load(f, p, ldm, layout == mem_col_major);
}
template <int M, int N, int K, class T>
static inline void store_matrix_sync(T *p, const fragment<accumulator, M, N, K, T> &f, unsigned ldm,
                                     layout_t layout)
{
    typedef fragment<accumulator, M, N, K, T> F;
    cuemu::warp_collective(cuemu::COLL_WMMA_STORE, 0xffffffffu, cuemu::to_bits(p), (int)ldm, 32,
                           "wmma::store_matrix_sync", 0);
    for (int r = 0; r < F::rows; r++)
        for (int c = 0; c < F::cols; c++) {
            if (layout == mem_col_major)
                p[(size_t)c * ldm + r] = f.x[r * F::cols + c];
            else
                p[(size_t)r * ldm + c] = f.x[r * F::cols + c];
        }
}
/* d = a b + c, fp32 accumulation (d may be c) */
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC>
static inline void
mma_sync(fragment<accumulator, M, N, K, TC> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
         const fragment<matrix_b, M, N, K, TB, LB> &b, const fragment<accumulator, M, N, K, TC> &c)
{
    cuemu::warp_collective(cuemu::COLL_WMMA_MMA, 0xffffffffu, 0, 0, 32, "wmma::mma_sync", 0);
    float out[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = (float)c.x[i * N + j];
            for (int k = 0; k < K; k++)
                s += (float)a.x[i * K + k] * (float)b.x[k * N + j];
            out[i * N + j] = s;
        }
    for (int i = 0; i < M * N; i++)
        d.x[i] = (TC)out[i];
}
} /* namespace wmma */
} /* namespace nvcuda */

/* ---- self-tests of the emulator (selftest.cc), called by tests/unit/cuemu.c ---- */

extern "C" {
/* Run self-test `name`; 0 when the emulator behaved as expected, 1 when (part of) it
 * cannot run in this build (err says why), else -1 with what happened in err. Names:
 * cuemu_selftest_names() (space-separated). */
__attribute__((visibility("default"))) int cuemu_selftest(const char *name, char *err,
                                                          size_t errlen);
__attribute__((visibility("default"))) const char *cuemu_selftest_names(void);
}

#endif
