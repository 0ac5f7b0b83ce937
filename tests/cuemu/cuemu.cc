/*
 * tests/cuemu/cuemu.cc: the CUDA emulator's runtime (a test tool; see cuemu.h): device
 * memory on the host, streams that run work on submission, events, graph capture and
 * replay, and the kernel executor: blocks one after another, the threads of a block as
 * fibers on this one OS thread, barriers and warp collectives as rendezvous of fibers,
 * the fibers' order shaken between barriers.
 *
 * Fibers: a hand-written context switch on x86-64 (callee-saved registers, MXCSR and
 * the x87 control word; no system call per switch, unlike swapcontext), ucontext
 * elsewhere. Under AddressSanitizer every switch is announced with
 * __sanitizer_start/finish_switch_fiber, and the stacks of fibers abandoned by a failed
 * launch are unpoisoned before reuse.
 *
 * Environment: CUEMU_ORDER = alternate (default) | forward | reverse | random;
 * CUEMU_SEED (random order's seed, default 1).
 */
#include "cuemu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include <map>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define CUEMU_ASAN 1
#else
#define CUEMU_ASAN 0
#endif

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

/* ---- errors ---- */

namespace
{

cudaError_t g_last = cudaSuccess;    /* cudaGetLastError's */
cudaError_t g_sticky = cudaSuccess;  /* a failed kernel: every later call returns it */
std::map<int, std::string> g_detail; /* code -> "<CUDA's text> (cuemu: <what happened>)" */

const char *base_string(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInitializationError:
        return "initialization error";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer:
        return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection:
        return "invalid copy direction for memcpy";
    case cudaErrorInvalidDeviceFunction:
        return "invalid device function";
    case cudaErrorNoDevice:
        return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
        return "invalid resource handle";
    case cudaErrorIllegalState:
        return "the operation cannot be performed in the present state";
    case cudaErrorNotReady:
        return "device not ready";
    case cudaErrorIllegalAddress:
        return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources:
        return "too many resources requested for launch";
    case cudaErrorAssert:
        return "device-side assert triggered";
    case cudaErrorIllegalInstruction:
        return "an illegal instruction was encountered";
    case cudaErrorLaunchFailure:
        return "unspecified launch failure";
    case cudaErrorNotSupported:
        return "operation not supported";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched:
        return "capture was not initiated in this stream";
    case cudaErrorUnknown:
        return "unknown error";
    }
    return "unrecognized error code";
}

const char *base_name(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
        return "cudaErrorInvalidConfiguration";
    case cudaErrorLaunchFailure:
        return "cudaErrorLaunchFailure";
    case cudaErrorStreamCaptureUnsupported:
        return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated:
        return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorNotSupported:
        return "cudaErrorNotSupported";
    default:
        return "cudaError";
    }
}

bool g_quiet;

cudaError_t vfail(cudaError_t code, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (!g_quiet)
        fprintf(stderr, "cuemu: %s\n", msg);
    g_detail[(int)code] = std::string(base_string(code)) + " (cuemu: " + msg + ")";
    g_last = code;
    return code;
}

cudaError_t fail(cudaError_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cudaError_t fail(cudaError_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(code, fmt, ap);
    va_end(ap);
    return code;
}

double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

} /* namespace */

namespace cuemu
{
cudaError_t fail(cudaError_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(code, fmt, ap);
    va_end(ap);
    return code;
}
} /* namespace cuemu */

bool cuemu::set_quiet(bool quiet)
{
    bool old = g_quiet;
    g_quiet = quiet;
    return old;
}

void cuemu::reset_errors(void)
{
    g_last = g_sticky = cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = g_last != cudaSuccess ? g_last : g_sticky;
    g_last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return g_last != cudaSuccess ? g_last : g_sticky;
}

const char *cudaGetErrorString(cudaError_t e)
{
    auto it = g_detail.find((int)e);
    return it != g_detail.end() ? it->second.c_str() : base_string(e);
}

const char *cudaGetErrorName(cudaError_t e)
{
    return base_name(e);
}

/* ---- the device ---- */

static const char DEVICE_NAME[] = "cuemu (CPU emulation of the CUDA kernels; not a GPU)";
enum {
    SMEM_DEFAULT = 48 * 1024, /* dynamic shared memory without cudaFuncSetAttribute */
    SMEM_OPTIN = 232448,      /* sharedMemPerBlockOptin of sm_90: 227 KiB */
    MAX_THREADS = 1024,
};

/* The devices a process sees: CUEMU_DEVICES of them (1 to 64, default 1; 8 for a
 * p5.48xlarge's), every one this same CPU, filtered by CUDA_VISIBLE_DEVICES as the CUDA
 * runtime filters: a comma-separated list of ordinals, cut at the first entry that is
 * not one (out of range, repeated, not a number: GPU UUIDs are not emulated); set but
 * empty hides them all. Read at every call, so a test may change either. */
static int visible_devices(void)
{
    const char *env = getenv("CUEMU_DEVICES"), *vis = getenv("CUDA_VISIBLE_DEVICES");
    int all = env ? atoi(env) : 1, n = 0;
    bool seen[64] = {false};
    if (all < 1 || all > 64)
        all = 1;
    if (!vis)
        return all;
    for (const char *s = vis;;) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v >= all || seen[v])
            break;
        seen[v] = true;
        n++;
        s = end + strspn(end, " ");
        if (*s++ != ',')
            break;
    }
    return n;
}

static int g_device; /* cudaSetDevice's */

static cudaError_t check_device(const char *what, int dev)
{
    int n = visible_devices();
    if (dev < 0 || dev >= n)
        return fail(cudaErrorInvalidDevice, "%s(%d): %d device%s visible", what, dev, n,
                    n == 1 ? "" : "s");
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = visible_devices();
    if (*n == 0)
        return fail(cudaErrorNoDevice, "CUDA_VISIBLE_DEVICES='%s' shows none of the %s emulated",
                    getenv("CUDA_VISIBLE_DEVICES"),
                    getenv("CUEMU_DEVICES") ? getenv("CUEMU_DEVICES") : "1");
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev)
{
    cudaError_t e = check_device("cudaSetDevice", dev);
    if (e == cudaSuccess)
        g_device = dev;
    return e;
}

cudaError_t cudaGetDevice(int *dev)
{
    *dev = g_device;
    return cudaSuccess;
}

/* The emulated device's compute capability times ten: 90 (an H100's), or CUEMU_CC
 * (80, an A100's, reaches the paths that refuse older devices). */
static int emulated_cc(void)
{
    const char *cc = getenv("CUEMU_CC");
    int v = cc ? atoi(cc) : 90;
    return v >= 50 && v <= 120 ? v : 90;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev)
{
    if (check_device("cudaGetDeviceProperties", dev) != cudaSuccess)
        return cudaErrorInvalidDevice;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", DEVICE_NAME);
    p->totalGlobalMem = (size_t)80 << 30;
    p->sharedMemPerBlock = SMEM_DEFAULT;
    p->sharedMemPerBlockOptin = SMEM_OPTIN;
    p->sharedMemPerMultiprocessor = 233472;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = MAX_THREADS;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->maxThreadsPerMultiProcessor = 2048;
    p->totalConstMem = 65536;
    p->major = emulated_cc() / 10;
    p->minor = emulated_cc() % 10;
    p->multiProcessorCount = 132;
    p->l2CacheSize = 50 << 20;
    p->memoryBusWidth = 5120;
    p->concurrentKernels = 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int dev)
{
    if (check_device("cudaDeviceGetAttribute", dev) != cudaSuccess)
        return cudaErrorInvalidDevice;
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
        *v = MAX_THREADS;
        return cudaSuccess;
    case cudaDevAttrClockRate:
        *v = 1980000;
        return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
        *v = 132;
        return cudaSuccess;
    case cudaDevAttrMemoryClockRate:
        *v = 2619000;
        return cudaSuccess;
    case cudaDevAttrL2CacheSize:
        *v = 50 << 20;
        return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
        *v = emulated_cc() / 10;
        return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
        *v = emulated_cc() % 10;
        return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
        *v = SMEM_OPTIN;
        return cudaSuccess;
    }
    return fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute: attribute %d is not emulated",
                (int)attr);
}

cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int dev)
{
    (void)dev;
    if (bus && len > 0)
        bus[0] = '\0';
    return fail(cudaErrorNotSupported, "cudaDeviceGetPCIBusId: the emulator has no PCI device");
}

cudaError_t cudaDriverGetVersion(int *v)
{
    *v = 13000; /* the API mirrored: CUDA 13.0's */
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = 13000;
    return cudaSuccess;
}

/* ---- memory ---- */

namespace
{
std::map<uintptr_t, size_t> g_allocs; /* base -> bytes */

/* The allocation holding p, or end(). */
std::map<uintptr_t, size_t>::iterator alloc_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    auto it = g_allocs.upper_bound(a);
    if (it == g_allocs.begin())
        return g_allocs.end();
    --it;
    return a < it->first + (it->second ? it->second : 1) ? it : g_allocs.end();
}
} /* namespace */

bool cuemu::is_device_range(const void *p, size_t bytes)
{
    auto it = alloc_of(p);
    return it != g_allocs.end() && (uintptr_t)p + bytes <= it->first + it->second;
}

namespace
{
struct capture_state {
    int active; /* streams capturing */
} g_capture;

/* Calls that would synchronise are not allowed while a stream captures (as with
 * cudaStreamCaptureModeGlobal and ThreadLocal on one thread). */
cudaError_t refuse_in_capture(const char *what);
} /* namespace */

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    void *m = NULL;
    *p = NULL;
    if (g_capture.active)
        return refuse_in_capture("cudaMalloc");
    if (g_sticky)
        return g_sticky;
    if (bytes > ((size_t)80 << 30))
        return fail(cudaErrorMemoryAllocation, "cudaMalloc of %zu bytes: more than 80 GiB", bytes);
    /* 256-byte aligned like the device's; not rounded up, so ASan sees the exact end */
    if (posix_memalign(&m, 256, bytes ? bytes : 1) != 0)
        return fail(cudaErrorMemoryAllocation, "cudaMalloc of %zu bytes: host memory exhausted",
                    bytes);
    memset(m, 0xff, bytes); /* never written: NaN as fp32 and bf16, -1 as int */
    g_allocs[(uintptr_t)m] = bytes;
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    if (!p)
        return cudaSuccess;
    if (g_capture.active)
        return refuse_in_capture("cudaFree");
    auto it = g_allocs.find((uintptr_t)p);
    if (it == g_allocs.end())
        return fail(cudaErrorInvalidDevicePointer,
                    "cudaFree(%p): not the start of a cudaMalloc allocation", p);
    g_allocs.erase(it);
    free(p);
    return cudaSuccess;
}

namespace
{
const char *kind_name(cudaMemcpyKind k)
{
    switch (k) {
    case cudaMemcpyHostToHost:
        return "host to host";
    case cudaMemcpyHostToDevice:
        return "host to device";
    case cudaMemcpyDeviceToHost:
        return "device to host";
    case cudaMemcpyDeviceToDevice:
        return "device to device";
    case cudaMemcpyDefault:
        return "default";
    }
    return "?";
}

/* Check a copy's two sides against the allocations (n bytes, or rows of w bytes). */
cudaError_t check_copy(const char *what, void *dst, const void *src, size_t span_d, size_t span_s,
                       cudaMemcpyKind kind)
{
    bool dd = cuemu::is_device_range(dst, span_d), sd = cuemu::is_device_range(src, span_s);
    bool d_in = alloc_of(dst) != g_allocs.end(), s_in = alloc_of(src) != g_allocs.end();
    bool want_dd, want_sd;
    switch (kind) {
    case cudaMemcpyHostToHost:
        want_dd = want_sd = false;
        break;
    case cudaMemcpyHostToDevice:
        want_dd = true, want_sd = false;
        break;
    case cudaMemcpyDeviceToHost:
        want_dd = false, want_sd = true;
        break;
    case cudaMemcpyDeviceToDevice:
        want_dd = want_sd = true;
        break;
    case cudaMemcpyDefault:
        want_dd = d_in, want_sd = s_in;
        break;
    default:
        return fail(cudaErrorInvalidMemcpyDirection, "%s: copy kind %d", what, (int)kind);
    }
    if (want_dd && !dd)
        return fail(cudaErrorInvalidValue,
                    "%s (%s) of %zu bytes: destination %p is not inside one device allocation",
                    what, kind_name(kind), span_d, dst);
    if (want_sd && !sd)
        return fail(cudaErrorInvalidValue,
                    "%s (%s) of %zu bytes: source %p is not inside one device allocation", what,
                    kind_name(kind), span_s, src);
    if (!want_dd && d_in)
        return fail(cudaErrorInvalidValue, "%s (%s): destination %p is device memory", what,
                    kind_name(kind), dst);
    if (!want_sd && s_in)
        return fail(cudaErrorInvalidValue, "%s (%s): source %p is device memory", what,
                    kind_name(kind), src);
    return cudaSuccess;
}
} /* namespace */

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s)
{
    if (bytes == 0)
        return cudaSuccess;
    return cuemu::submit(s, "cudaMemcpyAsync", [=]() {
        cudaError_t e = check_copy("cudaMemcpyAsync", dst, src, bytes, bytes, kind);
        if (e == cudaSuccess)
            memmove(dst, src, bytes);
        return e;
    });
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    if (g_capture.active)
        return refuse_in_capture("cudaMemcpy");
    return cudaMemcpyAsync(dst, src, bytes, kind, 0);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t s)
{
    if (width == 0 || height == 0)
        return cudaSuccess;
    if (width > dpitch || width > spitch)
        return fail(cudaErrorInvalidValue, "cudaMemcpy2D: width %zu over a pitch (%zu, %zu)", width,
                    dpitch, spitch);
    return cuemu::submit(s, "cudaMemcpy2DAsync", [=]() {
        cudaError_t e = check_copy("cudaMemcpy2DAsync", dst, src, dpitch * (height - 1) + width,
                                   spitch * (height - 1) + width, kind);
        for (size_t r = 0; e == cudaSuccess && r < height; r++)
            memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
        return e;
    });
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind)
{
    if (g_capture.active)
        return refuse_in_capture("cudaMemcpy2D");
    return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, 0);
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s)
{
    if (bytes == 0)
        return cudaSuccess;
    return cuemu::submit(s, "cudaMemsetAsync", [=]() {
        if (!cuemu::is_device_range(p, bytes))
            return fail(cudaErrorInvalidValue,
                        "cudaMemsetAsync of %zu bytes at %p: not inside one device allocation",
                        bytes, p);
        memset(p, value, bytes);
        return cudaSuccess;
    });
}

cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    if (g_capture.active)
        return refuse_in_capture("cudaMemset");
    return cudaMemsetAsync(p, value, bytes, 0);
}

/* ---- streams, graphs, events ---- */

struct CUgraph_st {
    struct node {
        std::string what;
        std::function<cudaError_t()> run;
    };
    std::vector<node> nodes;
};
struct CUgraphExec_st {
    std::vector<CUgraph_st::node> nodes;
};
struct CUstream_st {
    unsigned flags;
    bool capturing, invalidated;
    CUgraph_st *graph; /* owned while capturing */
};
struct CUevent_st {
    bool recorded;
    double ms;
};

namespace
{
CUstream_st g_default_stream;

CUstream_st *stream_of(cudaStream_t s)
{
    return s ? s : &g_default_stream;
}

std::vector<CUstream_st *> g_capturing; /* streams capturing now */

cudaError_t refuse_in_capture(const char *what)
{
    for (CUstream_st *s : g_capturing) /* the runtime invalidates the captures */
        s->invalidated = true;
    return fail(cudaErrorStreamCaptureUnsupported,
                "%s while a stream is capturing a graph (not allowed in capture modes global "
                "and thread-local)",
                what);
}
} /* namespace */

cudaError_t cuemu::submit(cudaStream_t s, const char *what, std::function<cudaError_t()> f)
{
    CUstream_st *st = stream_of(s);
    if (g_sticky)
        return g_sticky;
    if (st->capturing) {
        if (st->invalidated)
            return cudaErrorStreamCaptureInvalidated;
        st->graph->nodes.push_back(CUgraph_st::node{what, std::move(f)});
        return cudaSuccess;
    }
    return f();
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    *s = new CUstream_st();
    (*s)->flags = flags;
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (!s)
        return fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy of the default stream");
    if (s->capturing)
        return fail(cudaErrorStreamCaptureUnmatched, "cudaStreamDestroy of a capturing stream");
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    if (stream_of(s)->capturing) {
        stream_of(s)->invalidated = true;
        return refuse_in_capture("cudaStreamSynchronize");
    }
    return g_sticky;
}

cudaError_t cudaDeviceSynchronize(void)
{
    if (g_capture.active)
        return refuse_in_capture("cudaDeviceSynchronize");
    return g_sticky;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode)
{
    CUstream_st *st = stream_of(s);
    if (!s)
        return fail(cudaErrorStreamCaptureUnsupported,
                    "cudaStreamBeginCapture on the legacy default stream");
    if (mode == cudaStreamCaptureModeRelaxed)
        return fail(cudaErrorNotSupported, "cudaStreamBeginCapture: relaxed mode is not emulated");
    if (st->capturing)
        return fail(cudaErrorIllegalState, "cudaStreamBeginCapture: the stream already captures");
    st->capturing = true;
    st->invalidated = false;
    st->graph = new CUgraph_st();
    g_capture.active++;
    g_capturing.push_back(st);
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    CUstream_st *st = stream_of(s);
    *g = NULL;
    if (!st->capturing)
        return fail(cudaErrorIllegalState, "cudaStreamEndCapture: the stream is not capturing");
    st->capturing = false;
    g_capture.active--;
    for (size_t i = 0; i < g_capturing.size(); i++)
        if (g_capturing[i] == st)
            g_capturing.erase(g_capturing.begin() + (long)i--);
    if (st->invalidated) {
        delete st->graph;
        st->graph = NULL;
        return fail(cudaErrorStreamCaptureInvalidated,
                    "cudaStreamEndCapture: the capture was invalidated by an earlier call");
    }
    *g = st->graph;
    st->graph = NULL;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status)
{
    CUstream_st *st = stream_of(s);
    *status = !st->capturing    ? cudaStreamCaptureStatusNone
              : st->invalidated ? cudaStreamCaptureStatusInvalidated
                                : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags)
{
    *exec = NULL;
    if (!g)
        return fail(cudaErrorInvalidValue, "cudaGraphInstantiate of a null graph");
    if (flags)
        return fail(cudaErrorNotSupported, "cudaGraphInstantiate: flags 0x%llx are not emulated",
                    flags);
    *exec = new CUgraphExec_st();
    (*exec)->nodes = g->nodes;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
    if (!exec)
        return fail(cudaErrorInvalidValue, "cudaGraphLaunch of a null graph");
    if (stream_of(s)->capturing)
        return fail(cudaErrorNotSupported,
                    "cudaGraphLaunch into a capturing stream (child graphs) is not emulated");
    if (g_sticky)
        return g_sticky;
    for (auto &n : exec->nodes) {
        cudaError_t e = n.run();
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    delete g;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    delete exec;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    if (flags != cudaEventDefault)
        return fail(cudaErrorNotSupported, "cudaEventCreateWithFlags: flags 0x%x not emulated",
                    flags);
    *e = new CUevent_st();
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    return cudaEventCreateWithFlags(e, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (!e)
        return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord of a null event");
    if (stream_of(s)->capturing) {
        stream_of(s)->invalidated = true;
        return fail(cudaErrorStreamCaptureUnsupported,
                    "cudaEventRecord while capturing (event nodes) is not emulated");
    }
    if (g_sticky)
        return g_sticky;
    e->recorded = true;
    e->ms = now_ms(); /* the stream's earlier work has run: it ran on submission */
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    if (!e)
        return fail(cudaErrorInvalidResourceHandle, "cudaEventSynchronize of a null event");
    return g_sticky;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t stop)
{
    if (!start || !stop || !start->recorded || !stop->recorded)
        return fail(cudaErrorInvalidResourceHandle,
                    "cudaEventElapsedTime: an event was never recorded");
    *ms = (float)(stop->ms - start->ms);
    return cudaSuccess;
}

/* ---- kernel attributes ---- */

namespace
{
std::map<const void *, int> g_smem_limit; /* kernel -> dynamic shared memory allowed */
}

cudaError_t cuemu_func_set_attribute(const void *kernel, cudaFuncAttribute attr, int value)
{
    switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
        if (value < 0 || value > SMEM_OPTIN)
            return fail(cudaErrorInvalidValue,
                        "cudaFuncSetAttribute: %d bytes of dynamic shared memory (a block may "
                        "have at most %d)",
                        value, (int)SMEM_OPTIN);
        g_smem_limit[kernel] = value;
        return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
        return cudaSuccess; /* a hint about the L1/shared split: nothing to emulate */
    }
    return fail(cudaErrorNotSupported, "cudaFuncSetAttribute: attribute %d is not emulated",
                (int)attr);
}

/* ---- fibers ---- */

#if defined(__x86_64__)
/* cuemu_ctx_switch(save, to): push the callee-saved registers, MXCSR and the x87
 * control word, store the stack pointer in *save, continue on stack `to`. */
asm(R"(
    .text
    .p2align 4
    .hidden cuemu_ctx_switch
    .globl cuemu_ctx_switch
    .type cuemu_ctx_switch, @function
cuemu_ctx_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cuemu_ctx_switch, .-cuemu_ctx_switch
)");
extern "C" void cuemu_ctx_switch(void **save, void *to);
#endif

namespace
{

enum fstate : unsigned char { F_RUNNABLE, F_BAR, F_WARP, F_DONE };

struct fiber {
#if defined(__x86_64__)
    void *sp;
#else
    ucontext_t uc;
#endif
    char *stack; /* usable [stack, stack + STACK_BYTES) above a guard page */
    cuemu::thread_coords co;
    int warp, lane;
    fstate state;
    const char *file; /* where it waits */
    int line;
    int pred;
    void *asan_fake;
};

struct warp_state {
    unsigned exist;   /* lanes this block has in the warp */
    unsigned arrived; /* lanes waiting at the current collective */
    cuemu::coll_op op;
    unsigned mask;
    int width;
    const char *file;
    int line;
    uint64_t val[32], res[32];
    int arg[32];
};

const size_t STACK_BYTES = (size_t)256 << 10;

struct executor {
    std::vector<fiber> fibers; /* stacks kept across launches */
    std::vector<warp_state> warps;
    int nt; /* threads in the current block */
    int n_runnable, n_bar, n_warp, n_done;
    int bar_result;
    bool abort;
    std::string why;
    const std::function<void()> *body;
    const char *kernel;
    uint3 block;
    char *dyn; /* dynamic shared memory of the launch */
    size_t dyn_bytes;
    unsigned long launches;
    fiber *cur;
#if defined(__x86_64__)
    void *sched_sp;
#else
    ucontext_t sched_uc;
#endif
    void *sched_fake;
    const void *sched_bottom;
    size_t sched_size;
    int order; /* 0 alternate, 1 forward, 2 reverse, 3 random */
    uint64_t seed;
} X;

const char *op_name(cuemu::coll_op op)
{
    switch (op) {
    case cuemu::COLL_SHFL_IDX:
        return "__shfl_sync";
    case cuemu::COLL_SHFL_XOR:
        return "__shfl_xor_sync";
    case cuemu::COLL_SHFL_DOWN:
        return "__shfl_down_sync";
    case cuemu::COLL_SHFL_UP:
        return "__shfl_up_sync";
    case cuemu::COLL_BALLOT:
        return "__ballot_sync/__any_sync/__all_sync";
    case cuemu::COLL_SYNCWARP:
        return "__syncwarp";
    case cuemu::COLL_WMMA_LOAD:
        return "wmma::load_matrix_sync";
    case cuemu::COLL_WMMA_STORE:
        return "wmma::store_matrix_sync";
    case cuemu::COLL_WMMA_MMA:
        return "wmma::mma_sync";
    case cuemu::COLL_WMMA_FILL:
        return "wmma::fill_fragment";
    case cuemu::COLL_ACTIVEMASK:
        return "__activemask";
    }
    return "?";
}

void set_state(fiber *f, fstate s)
{
    int *c[4] = {&X.n_runnable, &X.n_bar, &X.n_warp, &X.n_done};
    --*c[f->state];
    ++*c[s];
    f->state = s;
}

void fiber_entry(void);

#if !defined(__x86_64__)
void fiber_entry_uc(void)
{
    fiber_entry();
}
#endif

void fiber_prepare(fiber *f)
{
#if defined(__x86_64__)
    uint64_t *sp = (uint64_t *)(((uintptr_t)(f->stack + STACK_BYTES)) & ~(uintptr_t)15);
    *--sp = 0;                      /* the entry's return address: none */
    *--sp = (uint64_t)&fiber_entry; /* where cuemu_ctx_switch's ret goes */
    for (int i = 0; i < 6; i++)     /* rbp rbx r12-r15 */
        *--sp = 0;
    *--sp = 0x1f80ull | (0x037full << 32); /* MXCSR and x87 control word defaults */
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = STACK_BYTES;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, fiber_entry_uc, 0);
#endif
}

/* scheduler -> fiber f, back when it waits or ends */
void resume(fiber *f)
{
    X.cur = f;
    cuemu::g_cur = &f->co;
#if CUEMU_ASAN
    __sanitizer_start_switch_fiber(&X.sched_fake, f->stack, STACK_BYTES);
#endif
#if defined(__x86_64__)
    cuemu_ctx_switch(&X.sched_sp, f->sp);
#else
    swapcontext(&X.sched_uc, &f->uc);
#endif
#if CUEMU_ASAN
    __sanitizer_finish_switch_fiber(X.sched_fake, NULL, NULL);
#endif
    X.cur = NULL;
    cuemu::g_cur = NULL;
}

/* fiber -> scheduler; returns when the scheduler resumes it */
void yield(fiber *f)
{
#if CUEMU_ASAN
    __sanitizer_start_switch_fiber(&f->asan_fake, X.sched_bottom, X.sched_size);
#endif
#if defined(__x86_64__)
    cuemu_ctx_switch(&f->sp, X.sched_sp);
#else
    swapcontext(&f->uc, &X.sched_uc);
#endif
#if CUEMU_ASAN
    __sanitizer_finish_switch_fiber(f->asan_fake, &X.sched_bottom, &X.sched_size);
#endif
}

void fiber_entry(void)
{
#if CUEMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &X.sched_bottom, &X.sched_size);
#endif
    (*X.body)();
    fiber *f = X.cur;
    set_state(f, F_DONE);
#if CUEMU_ASAN
    __sanitizer_start_switch_fiber(NULL, X.sched_bottom, X.sched_size); /* this stack ends */
#endif
#if defined(__x86_64__)
    cuemu_ctx_switch(&f->sp, X.sched_sp);
#else
    swapcontext(&f->uc, &X.sched_uc);
#endif
    abort(); /* never resumed */
}

/* Stop the block: what went wrong goes into X.why; the fiber never runs again. */
void abort_block(fiber *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void abort_block(fiber *f, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    X.abort = true;
    X.why = msg;
    yield(f);
    abort(); /* an aborted block's fibers are not resumed */
}

bool ensure_fibers(int n)
{
    while ((int)X.fibers.size() < n) {
        size_t page = 4096;
        char *m = (char *)mmap(NULL, STACK_BYTES + page, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return false;
        mprotect(m, page, PROT_NONE); /* overflowing a fiber's stack faults */
        fiber f = fiber();
        f.stack = m + page;
        X.fibers.push_back(f);
    }
    return true;
}

void order_init(void)
{
    static bool done;
    const char *o = getenv("CUEMU_ORDER"), *s = getenv("CUEMU_SEED");
    if (done)
        return;
    done = true;
    X.order = 0;
    if (o && !strcmp(o, "forward"))
        X.order = 1;
    else if (o && !strcmp(o, "reverse"))
        X.order = 2;
    else if (o && !strcmp(o, "random"))
        X.order = 3;
    else if (o && *o && strcmp(o, "alternate"))
        fprintf(stderr, "cuemu: CUEMU_ORDER='%s' unknown; using alternate\n", o);
    X.seed = s ? strtoull(s, NULL, 10) : 1;
}

} /* namespace */

int cuemu::set_order(int order)
{
    int old;
    order_init();
    old = X.order;
    X.order = order;
    return old;
}

namespace
{

std::string lanes_str(unsigned m)
{
    char b[16];
    snprintf(b, sizeof b, "0x%08x", m);
    return b;
}

/* Nobody can run and not everyone has finished: a barrier to release, or a hang. */
bool settle(void)
{
    char msg[768];
    if (X.n_warp > 0) {
        for (size_t w = 0; w < X.warps.size(); w++) {
            warp_state &ws = X.warps[w];
            if (!ws.arrived)
                continue;
            unsigned missing = ws.mask & ~ws.arrived;
            int exited = 0, at_bar = 0;
            const char *bf = "", *other = "";
            int bl = 0;
            for (int l = 0; l < 32; l++) {
                if (!(missing >> l & 1))
                    continue;
                fiber &f = X.fibers[w * 32 + l];
                if (f.state == F_DONE)
                    exited++;
                else if (f.state == F_BAR)
                    at_bar++, bf = f.file, bl = f.line;
                else if (f.state == F_WARP)
                    other = "; others wait at another warp collective";
            }
            snprintf(msg, sizeof msg,
                     "%s at %s:%d in warp %zu: lanes %s never arrived (%d exited, %d wait at "
                     "__syncthreads %s:%d%s)",
                     op_name(ws.op), ws.file, ws.line, w, lanes_str(missing).c_str(), exited,
                     at_bar, bf, bl, other);
            X.why = msg;
            return false;
        }
    }
    /* every thread left is at a barrier */
    const char *file = NULL;
    int line = 0, n_here = 0;
    for (int i = 0; i < X.nt; i++) {
        fiber &f = X.fibers[i];
        if (f.state != F_BAR)
            continue;
        if (!file) {
            file = f.file, line = f.line;
        } else if (f.line != line || strcmp(f.file, file)) {
            snprintf(msg, sizeof msg,
                     "threads wait at different barriers: __syncthreads at %s:%d (thread %d) "
                     "and at %s:%d",
                     f.file, f.line, i, file, line);
            X.why = msg;
            return false;
        }
        n_here++;
    }
    if (X.n_done > 0) {
        snprintf(msg, sizeof msg,
                 "__syncthreads at %s:%d reached by %d of %d threads; %d exited without reaching "
                 "it (a barrier in divergent code)",
                 file, line, n_here, X.nt, X.n_done);
        X.why = msg;
        return false;
    }
    /* release: the counting forms get their result */
    int count = 0, all = 1, any = 0;
    for (int i = 0; i < X.nt; i++) {
        count += X.fibers[i].pred;
        all &= X.fibers[i].pred;
        any |= X.fibers[i].pred;
    }
    X.bar_result = count | (all << 30) | (any << 31);
    for (int i = 0; i < X.nt; i++)
        set_state(&X.fibers[i], F_RUNNABLE);
    return true;
}

uint64_t rng_next(void)
{
    X.seed = X.seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return X.seed >> 33;
}

/* Run one block; false with X.why on a failure. */
bool run_block(uint3 bid, dim3 grid, dim3 block, unsigned long block_linear)
{
    int nt = X.nt;
    std::vector<int> perm;
    X.n_runnable = nt;
    X.n_bar = X.n_warp = X.n_done = 0;
    X.abort = false;
    X.block = bid;
    for (int i = 0; i < nt; i++) {
        fiber &f = X.fibers[i];
        f.co.tid.x = (unsigned)i % block.x;
        f.co.tid.y = (unsigned)i / block.x % block.y;
        f.co.tid.z = (unsigned)i / (block.x * block.y);
        f.co.bid = bid;
        f.co.bdim = block;
        f.co.gdim = grid;
        f.warp = i / 32;
        f.lane = i % 32;
        f.state = F_RUNNABLE;
        f.pred = 0;
        fiber_prepare(&f);
    }
    X.warps.assign((size_t)(nt + 31) / 32, warp_state());
    for (size_t w = 0; w < X.warps.size(); w++) {
        int lanes = nt - (int)w * 32 < 32 ? nt - (int)w * 32 : 32;
        X.warps[w].exist = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
    }
    /* dynamic shared memory starts undefined: no block sees an earlier one's values */
    if (X.dyn)
        memset(X.dyn, 0xff, X.dyn_bytes);
    for (int phase = 0;; phase++) {
        bool reverse = X.order == 2 ||
                       (X.order == 0 && ((unsigned long)phase + block_linear + X.launches) % 2);
        while (X.n_runnable > 0) {
            if (X.order == 3) {
                perm.resize(nt);
                for (int i = 0; i < nt; i++)
                    perm[i] = i;
                for (int i = nt - 1; i > 0; i--)
                    std::swap(perm[i], perm[rng_next() % (uint64_t)(i + 1)]);
            }
            for (int k = 0; k < nt; k++) {
                int i = X.order == 3 ? perm[k] : reverse ? nt - 1 - k : k;
                if (X.fibers[i].state != F_RUNNABLE)
                    continue;
                resume(&X.fibers[i]);
                if (X.abort)
                    return false;
            }
        }
        if (X.n_done == nt)
            return true;
        if (!settle())
            return false;
    }
}

} /* namespace */

cuemu::thread_coords *cuemu::g_cur;

/* ---- in kernels ---- */

int cuemu::block_barrier(int kind, int pred, const char *file, int line)
{
    fiber *f = X.cur;
    if (!f) {
        fail(cudaErrorInvalidDeviceFunction, "__syncthreads at %s:%d outside a kernel", file, line);
        return 0;
    }
    f->file = file;
    f->line = line;
    f->pred = pred;
    set_state(f, F_BAR);
    yield(f);
    switch (kind) {
    case 1:
        return X.bar_result & 0x3fffffff;
    case 2:
        return (X.bar_result >> 30) & 1;
    case 3:
        return (X.bar_result >> 31) & 1;
    }
    return 0;
}

uint64_t cuemu::warp_collective(coll_op op, unsigned mask, uint64_t v, int arg, int width,
                                const char *file, int line)
{
    fiber *f = X.cur;
    if (!f) {
        fail(cudaErrorInvalidDeviceFunction, "%s at %s:%d outside a kernel", op_name(op), file,
             line);
        return 0;
    }
    warp_state &w = X.warps[(size_t)f->warp];
    int lane = f->lane;
    if (op == COLL_ACTIVEMASK) {
        unsigned m = 0;
        for (int l = 0; l < 32; l++)
            if ((w.exist >> l & 1) && X.fibers[(size_t)f->warp * 32 + l].state != F_DONE)
                m |= 1u << l;
        return m;
    }
    if (!(mask >> lane & 1))
        abort_block(f, "%s at %s:%d: lane %d calls it with mask %s, which leaves it out",
                    op_name(op), file, line, lane, lanes_str(mask).c_str());
    if (mask & ~w.exist)
        abort_block(f, "%s at %s:%d: mask %s names lanes the block does not have (warp %d has %s)",
                    op_name(op), file, line, lanes_str(mask).c_str(), f->warp,
                    lanes_str(w.exist).c_str());
    if (width < 1 || width > 32 || (width & (width - 1)))
        abort_block(f, "%s at %s:%d: width %d is not a power of 2 up to 32", op_name(op), file,
                    line, width);
    if (!w.arrived) {
        w.op = op;
        w.mask = mask;
        w.width = width;
        w.file = file;
        w.line = line;
    } else if (w.op != op || w.mask != mask || w.width != width) {
        abort_block(f,
                    "divergent warp collectives in warp %d: lane %d at %s at %s:%d (mask %s) "
                    "while lanes %s wait at %s at %s:%d (mask %s)",
                    f->warp, lane, op_name(op), file, line, lanes_str(mask).c_str(),
                    lanes_str(w.arrived).c_str(), op_name(w.op), w.file, w.line,
                    lanes_str(w.mask).c_str());
    }
    w.val[lane] = v;
    w.arg[lane] = arg;
    w.arrived |= 1u << lane;
    if (w.arrived != mask) {
        f->file = file;
        f->line = line;
        set_state(f, F_WARP);
        yield(f);
        return w.res[lane];
    }
    /* the last lane: every lane's result */
    unsigned ballot = 0;
    for (int l = 0; l < 32; l++)
        if ((mask >> l & 1) && w.arg[l])
            ballot |= 1u << l;
    for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1))
            continue;
        int base = l & ~(width - 1), src = l;
        switch (op) {
        case COLL_SHFL_IDX:
            src = base + (w.arg[l] & (width - 1));
            break;
        case COLL_SHFL_XOR:
            src = l ^ w.arg[l];
            if (src < base || src >= base + width)
                src = l;
            break;
        case COLL_SHFL_DOWN:
            src = l + w.arg[l] < base + width ? l + w.arg[l] : l;
            break;
        case COLL_SHFL_UP:
            src = l - w.arg[l] >= base ? l - w.arg[l] : l;
            break;
        case COLL_WMMA_LOAD:
        case COLL_WMMA_STORE:
            if (w.val[l] != w.val[lane] || w.arg[l] != w.arg[lane])
                abort_block(f,
                            "%s in warp %d: lanes pass different pointers or leading "
                            "dimensions (lane %d: %#llx/%d, lane %d: %#llx/%d)",
                            op_name(op), f->warp, l, (unsigned long long)w.val[l], w.arg[l], lane,
                            (unsigned long long)w.val[lane], w.arg[lane]);
            break;
        default:
            break;
        }
        if (src < 0 || src > 31 || !(mask >> src & 1))
            abort_block(f, "%s at %s:%d: lane %d reads lane %d, which is not in the mask %s",
                        op_name(op), file, line, l, src, lanes_str(mask).c_str());
        w.res[l] = op == COLL_BALLOT ? ballot : w.val[src];
    }
    w.arrived = 0;
    for (int l = 0; l < 32; l++)
        if ((mask >> l & 1) && l != lane)
            set_state(&X.fibers[(size_t)f->warp * 32 + l], F_RUNNABLE);
    return w.res[lane];
}

cuemu::dyn_ptr cuemu::dynamic_shared(const char *file, int line)
{
    dyn_ptr p = {X.dyn};
    if (!X.cur)
        fail(cudaErrorInvalidDeviceFunction, "extern __shared__ at %s:%d outside a kernel", file,
             line);
    return p;
}

/* ---- launches ---- */

namespace
{
const size_t CANARY = 64; /* bytes past the dynamic shared memory checked after a block */

cudaError_t run_kernel(dim3 grid, dim3 block, size_t smem, const char *name,
                       const std::function<void()> &body)
{
    int nt = (int)(block.x * block.y * block.z);
    unsigned long nblocks = (unsigned long)grid.x * grid.y * grid.z;
    char *dyn = NULL;
    size_t extra = CUEMU_ASAN ? 0 : CANARY;
    cudaError_t rc = cudaSuccess;

    order_init();
    if (X.body)
        return fail(cudaErrorNotSupported, "kernel %s launched from device code", name);
    if (!ensure_fibers(nt))
        return g_sticky = fail(cudaErrorMemoryAllocation,
                               "kernel %s: no memory for %d fiber "
                               "stacks",
                               name, nt);
    if (posix_memalign((void **)&dyn, 128, smem + extra ? smem + extra : 1) != 0)
        return g_sticky = fail(cudaErrorMemoryAllocation,
                               "kernel %s: no memory for %zu bytes of "
                               "shared memory",
                               name, smem);
    X.dyn = dyn;
    X.dyn_bytes = smem;
    X.body = &body;
    X.kernel = name;
    X.nt = nt;
    X.launches++;
    for (unsigned long k = 0; k < nblocks; k++) {
        /* odd launches run their blocks last to first: blocks must not depend on order */
        unsigned long b = X.launches % 2 && X.order != 1 ? nblocks - 1 - k : k;
        uint3 bid = {(unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y),
                     (unsigned)(b / ((unsigned long)grid.x * grid.y))};
        memset(dyn + smem, 0xa5, extra);
        if (!run_block(bid, grid, block, b)) {
            rc = fail(cudaErrorLaunchFailure, "kernel %s, block (%u,%u,%u) of %lu, %d threads: %s",
                      name, bid.x, bid.y, bid.z, nblocks, nt, X.why.c_str());
#if CUEMU_ASAN
            /* the abandoned fibers' frames never returned: clear their poison */
            for (int i = 0; i < nt; i++)
                __asan_unpoison_memory_region(X.fibers[i].stack, STACK_BYTES);
#endif
            break;
        }
        for (size_t i = 0; i < extra; i++)
            if ((unsigned char)dyn[smem + i] != 0xa5) {
                rc = fail(cudaErrorIllegalAddress,
                          "kernel %s, block (%u,%u,%u): wrote past its %zu bytes of dynamic "
                          "shared memory (byte %zu beyond the end)",
                          name, bid.x, bid.y, bid.z, smem, i);
                break;
            }
        if (rc)
            break;
    }
    X.body = NULL;
    X.dyn = NULL;
    free(dyn);
    if (rc)
        g_sticky = rc;
    return rc;
}
} /* namespace */

cudaError_t cuemu::launch(dim3 grid, dim3 block, size_t smem, cudaStream_t s, const void *kernel,
                          const char *name, std::function<void()> body)
{
    unsigned long nt = (unsigned long)block.x * block.y * block.z;
    auto lim = g_smem_limit.find(kernel);
    size_t limit = lim != g_smem_limit.end() && lim->second > SMEM_DEFAULT ? (size_t)lim->second
                                                                           : (size_t)SMEM_DEFAULT;
    cudaError_t e;
    if (nt == 0 || nt > MAX_THREADS || block.x > 1024 || block.y > 1024 || block.z > 64 ||
        grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 ||
        grid.z > 65535)
        return ::fail(cudaErrorInvalidConfiguration,
                      "kernel %s: launch of grid (%u,%u,%u) x block (%u,%u,%u) is outside the "
                      "device's limits",
                      name, grid.x, grid.y, grid.z, block.x, block.y, block.z);
    if (smem > limit)
        return ::fail(cudaErrorInvalidValue,
                      "kernel %s: asks %zu bytes of dynamic shared memory, more than its limit "
                      "of %zu (cudaFuncSetAttribute raises it up to %d)",
                      name, smem, limit, (int)SMEM_OPTIN);
    e = submit(s, name, [grid, block, smem, name, body]() {
        return run_kernel(grid, block, smem, name, body);
    });
    if (e != cudaSuccess)
        g_last = e;
    return e;
}

/* ---- fp8 ---- */

__nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t sat,
                                         __nv_fp8_interpretation_t kind)
{
    unsigned sign = signbit(x) ? 0x80u : 0u;
    float a = fabsf(x);
    if (kind != __NV_E4M3) {
        fail(cudaErrorNotSupported, "fp8 e5m2 conversions are not emulated");
        return 0x7f;
    }
    if (isnan(x))
        return (__nv_fp8_storage_t)(sign | 0x7fu);
    if (a > 464.0f) /* 448 + half an ulp: beyond it rounds past the largest finite */
        return (__nv_fp8_storage_t)(sign | (sat == __NV_SATFINITE ? 0x7eu : 0x7fu));
    if (a < 0.015625f) { /* subnormals: multiples of 2^-9, nearest even */
        float q = nearbyintf(a * 512.0f);
        return (__nv_fp8_storage_t)(sign | (unsigned)q);
    }
    int e;
    frexpf(a, &e); /* a = m 2^e, m in [0.5, 1): exponent e - 1 */
    e -= 1;
    float q = nearbyintf(ldexpf(a, 3 - e)); /* [8, 16] steps of 2^(e-3) */
    unsigned bits = (unsigned)(e + 6) * 8u + (unsigned)q;
    if (bits > 0x7eu) /* (448, 464] rounds to 448; the tie at 464 too (even) */
        bits = 0x7eu;
    return (__nv_fp8_storage_t)(sign | bits);
}

float cuemu_fp8_to_float(__nv_fp8_storage_t x, __nv_fp8_interpretation_t kind)
{
    unsigned e = (x >> 3) & 0xfu, m = x & 7u;
    float v;
    if (kind != __NV_E4M3) {
        fail(cudaErrorNotSupported, "fp8 e5m2 conversions are not emulated");
        return NAN;
    }
    if (e == 0xf && m == 7)
        return NAN;
    v = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), (int)e - 10);
    return x & 0x80 ? -v : v;
}
