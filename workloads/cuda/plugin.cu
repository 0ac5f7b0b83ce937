/*
 * workloads/cuda/plugin.cu: the plugin's entry point (tb_cuda_plugin, the table of
 * harness/tb_cuda_abi.h), the process-wide context, the device probe, NVML (opened
 * with dlopen, so a machine without libnvidia-ml.so.1 gets "unavailable: <reason>"),
 * CUDA-event timing, the device-to-device copy benchmark and the kernel tests.
 */
#include "cuda_common.cuh"
#include "diffusion.cuh"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TB_CUDA_ARCHS
#define TB_CUDA_ARCHS "?"
#endif

struct cu_ctx g_cu;

int cu_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err && errlen) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The devices this process sees (*n; the runtime applies CUDA_VISIBLE_DEVICES), and
 * whether `device` is one of them. */
static int cu_visible(int device, int *n, char *err, size_t errlen)
{
    cudaError_t e = cudaGetDeviceCount(n);
    if (e != cudaSuccess)
        return cu_err(err, errlen, "no CUDA device: %s", cudaGetErrorString(e));
    if (*n < 1)
        return cu_err(err, errlen, "no CUDA device: the driver reports none");
    if (device < 0 || device >= *n)
        return cu_err(err, errlen, "no CUDA device %d (%d visible)", device, *n);
    return 0;
}

int cu_ctx_init(char *err, size_t errlen)
{
    int n = 0;
    if (g_cu.ready)
        return 0;
    CU_TRY(cu_visible(g_cu.device, &n, err, errlen));
    CU_CHECK(cudaSetDevice(g_cu.device));
    CU_CHECK(cudaGetDeviceProperties(&g_cu.prop, g_cu.device));
    CU_CHECK(cudaStreamCreateWithFlags(&g_cu.stream, cudaStreamNonBlocking));
    CU_CHECK(cudaEventCreate(&g_cu.ev_start));
    CU_CHECK(cudaEventCreate(&g_cu.ev_stop));
    CU_CHECK(cudaMalloc(&g_cu.workspace, TB_CUDA_WORKSPACE_BYTES));
#ifndef TB_CUEMU /* the emulator's products (tests/cuemu/gemm_ref.cc) need no handle */
    if (cublasLtCreate(&g_cu.lt) != CUBLAS_STATUS_SUCCESS)
        return cu_err(err, errlen, "cublasLtCreate failed");
#endif
    g_cu.ready = true;
    return 0;
}

int cu_fp8_check(char *err, size_t errlen)
{
    int cc = g_cu.prop.major * 10 + g_cu.prop.minor;
    if (cc < TB_CUDA_FP8_MIN_CC)
        return cu_err(err, errlen,
                      "fp8 products need compute capability 8.9 or later (this device: %d.%d)",
                      g_cu.prop.major, g_cu.prop.minor);
    return 0;
}

/* ---- NVML through dlopen ---- */

typedef int nvml_ret;
typedef struct nvml_device_st *nvml_device;
enum { NVML_OK = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

static struct {
    bool tried, ok;
    char why[200];
    void *dl;
    nvml_device dev;
    nvml_ret (*init)(void);
    const char *(*error_string)(nvml_ret);
    nvml_ret (*by_pci)(const char *, nvml_device *);
    nvml_ret (*energy)(nvml_device, unsigned long long *);
    nvml_ret (*driver)(char *, unsigned int);
    nvml_ret (*clock)(nvml_device, int, unsigned int *);
} g_nvml;

static void *nvml_sym(const char *name)
{
    void *p = dlsym(g_nvml.dl, name);
    if (!p && !g_nvml.why[0])
        snprintf(g_nvml.why, sizeof g_nvml.why, "libnvidia-ml.so.1 has no '%s'", name);
    return p;
}

/* Open NVML once and find the device's handle by its PCI bus id. */
static bool nvml_open(void)
{
    char bus[64];
    nvml_ret r;
    if (g_nvml.tried)
        return g_nvml.ok;
    g_nvml.tried = true;
#ifdef TB_CUEMU
    /* a real driver's NVML would describe a real GPU, not this emulation */
    snprintf(g_nvml.why, sizeof g_nvml.why, "the CUDA emulator has no NVML device");
    return false;
#endif
    g_nvml.dl = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g_nvml.dl) {
        const char *e = dlerror();
        snprintf(g_nvml.why, sizeof g_nvml.why, "cannot load libnvidia-ml.so.1: %s",
                 e ? e : "unknown error");
        return false;
    }
    *(void **)&g_nvml.init = nvml_sym("nvmlInit_v2");
    *(void **)&g_nvml.error_string = nvml_sym("nvmlErrorString");
    *(void **)&g_nvml.by_pci = nvml_sym("nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&g_nvml.energy = nvml_sym("nvmlDeviceGetTotalEnergyConsumption");
    *(void **)&g_nvml.driver = nvml_sym("nvmlSystemGetDriverVersion");
    *(void **)&g_nvml.clock = nvml_sym("nvmlDeviceGetClockInfo");
    if (g_nvml.why[0])
        return false;
    if ((r = g_nvml.init()) != NVML_OK) {
        snprintf(g_nvml.why, sizeof g_nvml.why, "nvmlInit: %s", g_nvml.error_string(r));
        return false;
    }
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, g_cu.device) != cudaSuccess) {
        snprintf(g_nvml.why, sizeof g_nvml.why, "cudaDeviceGetPCIBusId failed");
        return false;
    }
    if ((r = g_nvml.by_pci(bus, &g_nvml.dev)) != NVML_OK) {
        snprintf(g_nvml.why, sizeof g_nvml.why, "nvmlDeviceGetHandleByPciBusId '%s': %s", bus,
                 g_nvml.error_string(r));
        return false;
    }
    g_nvml.ok = true;
    return true;
}

static int energy_mj(unsigned long long *mj, char *err, size_t errlen)
{
    nvml_ret r;
    if (!nvml_open())
        return cu_err(err, errlen, "unavailable: %s", g_nvml.why);
    if ((r = g_nvml.energy(g_nvml.dev, mj)) != NVML_OK)
        return cu_err(err, errlen, "unavailable: nvmlDeviceGetTotalEnergyConsumption: %s",
                      g_nvml.error_string(r));
    return 0;
}

/* ---- probe ---- */

static int probe(int device, struct tb_cuda_info *info, char *err, size_t errlen)
{
    const cudaDeviceProp *p;
    int v = 0, n = 0;
    unsigned long long mj;
    char eerr[256];

    memset(info, 0, sizeof *info);
#ifdef TB_CUEMU
    /* tb_gpu_open refuses this plugin for measurements (tests only) */
    info->emulated = true;
    snprintf(info->build, sizeof info->build, "cuemu: g++ %d.%d CPU emulation, not a GPU", __GNUC__,
             __GNUC_MINOR__);
#else
    snprintf(info->build, sizeof info->build, "nvcc %d.%d, sm %s + PTX", __CUDACC_VER_MAJOR__,
             __CUDACC_VER_MINOR__, TB_CUDA_ARCHS);
#endif
    CU_TRY(cu_visible(device, &n, err, errlen));
    /* one device per process: the context, its stream and NVML's handle are its */
    if (g_cu.ready && device != g_cu.device)
        return cu_err(err, errlen,
                      "this process runs on CUDA device %d; device %d needs a process of its own",
                      g_cu.device, device);
    g_cu.device = device;
    CU_TRY(cu_ctx_init(err, errlen));
    p = &g_cu.prop;
    snprintf(info->name, sizeof info->name, "%s", p->name);
    info->device = g_cu.device;
    info->device_count = n;
    info->cc_major = p->major;
    info->cc_minor = p->minor;
    info->sm_count = p->multiProcessorCount;
    info->mem_gib = (double)p->totalGlobalMem / (1024.0 * 1024.0 * 1024.0);
    info->l2_mib = p->l2CacheSize / (1024.0 * 1024.0);
    info->mem_bus_bits = p->memoryBusWidth;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, g_cu.device) == cudaSuccess)
        info->sm_clock_max_mhz = v / 1000;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, g_cu.device) == cudaSuccess)
        info->mem_clock_max_mhz = v / 1000;
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
    if (nvml_open()) {
        unsigned int mhz = 0;
        g_nvml.driver(info->driver, sizeof info->driver);
        if (g_nvml.clock(g_nvml.dev, NVML_CLOCK_SM, &mhz) == NVML_OK)
            info->sm_clock_mhz = (int)mhz;
        if (g_nvml.clock(g_nvml.dev, NVML_CLOCK_MEM, &mhz) == NVML_OK)
            info->mem_clock_mhz = (int)mhz;
        info->energy = energy_mj(&mj, eerr, sizeof eerr) == 0;
        snprintf(info->nvml, sizeof info->nvml, "%s", info->energy ? "ok" : eerr);
    } else {
        snprintf(info->nvml, sizeof info->nvml, "unavailable: %s", g_nvml.why);
    }
    return 0;
}

/* ---- timing ---- */

static int timer_start(char *err, size_t errlen)
{
    CU_TRY(cu_ctx_init(err, errlen));
    CU_CHECK(cudaEventRecord(g_cu.ev_start, g_cu.stream));
    return 0;
}

static int timer_stop(double *secs, char *err, size_t errlen)
{
    float ms = 0;
    CU_CHECK(cudaEventRecord(g_cu.ev_stop, g_cu.stream));
    CU_CHECK(cudaEventSynchronize(g_cu.ev_stop));
    CU_CHECK(cudaEventElapsedTime(&ms, g_cu.ev_start, g_cu.ev_stop));
    *secs = ms / 1e3;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int copy_bench(size_t bytes, int reps, double *secs, char *err, size_t errlen)
{
    void *a = NULL, *b = NULL;
    double *t = NULL;
    int rc = -1;
    cudaError_t e;
    CU_TRY(cu_ctx_init(err, errlen));
    if (reps < 1)
        return cu_err(err, errlen, "copy benchmark: reps %d must be positive", reps);
    t = (double *)malloc((size_t)reps * sizeof *t);
    if (!t)
        return cu_err(err, errlen, "out of host memory");
    if ((e = cudaMalloc(&a, bytes)) != cudaSuccess || (e = cudaMalloc(&b, bytes)) != cudaSuccess) {
        cu_err(err, errlen, "cudaMalloc of 2 x %.0f MiB for the copy benchmark: %s",
               bytes / 1048576.0, cudaGetErrorString(e));
        goto out;
    }
    if ((e = cudaMemsetAsync(a, 1, bytes, g_cu.stream)) != cudaSuccess ||
        (e = cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, g_cu.stream)) != cudaSuccess) {
        cu_err(err, errlen, "copy benchmark warm-up: %s", cudaGetErrorString(e));
        goto out;
    }
    for (int k = 0; k < reps; k++) {
        if (timer_start(err, errlen) != 0)
            goto out;
        if ((e = cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, g_cu.stream)) !=
            cudaSuccess) {
            cu_err(err, errlen, "cudaMemcpyAsync device to device: %s", cudaGetErrorString(e));
            goto out;
        }
        if (timer_stop(&t[k], err, errlen) != 0)
            goto out;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    *secs = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    rc = 0;
out:
    cudaStreamSynchronize(g_cu.stream);
    cudaFree(a);
    cudaFree(b);
    free(t);
    return rc;
}

/* ---- kernel tests ---- */

int cu_buf_alloc_named(struct cu_bufs *b, void **p, size_t bytes, const char *what, char *err,
                       size_t errlen)
{
    cudaError_t e;
    *p = NULL;
    if (bytes == 0)
        bytes = 256;
    if (b->n >= CU_BUFS_MAX)
        return cu_err(err, errlen, "more than %d device buffers (at the %s)", CU_BUFS_MAX, what);
    e = cudaMalloc(p, bytes);
    if (e != cudaSuccess)
        return cu_err(err, errlen, "cudaMalloc of %.1f MiB for the %s: %s", bytes / 1048576.0, what,
                      cudaGetErrorString(e));
    b->p[b->n++] = *p;
    b->bytes += bytes;
    return 0;
}

int cu_buf_alloc(struct cu_bufs *b, void **p, size_t bytes, char *err, size_t errlen)
{
    return cu_buf_alloc_named(b, p, bytes, "test buffer", err, errlen);
}

void cu_bufs_release(struct cu_bufs *b)
{
    cudaStreamSynchronize(g_cu.stream);
    for (int i = 0; i < b->n; i++)
        cudaFree(b->p[i]);
    b->n = 0;
    b->bytes = 0;
}

int cu_up_f32(struct cu_bufs *b, float **d, const float *h, size_t n, char *err, size_t errlen)
{
    CU_TRY(cu_buf_alloc(b, (void **)d, n * sizeof **d, err, errlen));
    if (h)
        CU_CHECK(cudaMemcpyAsync(*d, h, n * sizeof **d, cudaMemcpyHostToDevice, g_cu.stream));
    else
        CU_CHECK(cudaMemsetAsync(*d, 0, n * sizeof **d, g_cu.stream));
    return 0;
}

int cu_up_bf16(struct cu_bufs *b, bf16 **d, const float *h, size_t n, char *err, size_t errlen)
{
    float *tmp;
    CU_TRY(cu_up_f32(b, &tmp, h, n, err, errlen));
    CU_TRY(cu_buf_alloc(b, (void **)d, n * sizeof **d, err, errlen));
    CU_LAUNCH("cast_bf16", k_cast_bf16(*d, tmp, n));
    return 0;
}

int cu_down_f32(float *h, const float *d, size_t n, char *err, size_t errlen)
{
    CU_CHECK(cudaMemcpyAsync(h, d, n * sizeof *h, cudaMemcpyDeviceToHost, g_cu.stream));
    CU_CHECK(cudaStreamSynchronize(g_cu.stream));
    return 0;
}

int cu_down_bf16(struct cu_bufs *b, float *h, const bf16 *d, size_t n, char *err, size_t errlen)
{
    float *tmp;
    CU_TRY(cu_buf_alloc(b, (void **)&tmp, n * sizeof *tmp, err, errlen));
    CU_LAUNCH("cast_f32", k_cast_f32(tmp, d, n));
    return cu_down_f32(h, tmp, n, err, errlen);
}

/* The kernel tests' product: out[M, N] = x[M, K] w[N, K]^T, dense rows. */
static struct cu_gemm test_product(const struct tb_cuda_op_args *a, const void *x, const void *w,
                                   void *out, bool out_f32)
{
    return cu_gemm_linear(out, out_f32, a->N, false, x, a->K, w, a->M, a->K, a->N);
}

static int run_op(struct cu_bufs *b, struct tb_cuda_op_args *a, char *err, size_t errlen)
{
    size_t N = (size_t)a->N, C = (size_t)a->C, F = (size_t)a->F, HD = (size_t)a->HD;
    size_t QD = (size_t)a->NH * HD, KD = (size_t)a->NKV * HD;
    switch (a->op) {
    case TB_CUDA_OP_RMSNORM_FWD: {
        float *x, *w, *rstd;
        bf16 *out;
        CU_TRY(cu_up_f32(b, &x, a->in[0], N * C, err, errlen));
        CU_TRY(cu_up_f32(b, &w, a->in[1], C, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&out, N * C * sizeof *out, err, errlen));
        CU_TRY(cu_up_f32(b, &rstd, NULL, N, err, errlen));
        CU_LAUNCH("rmsnorm_fwd", k_rmsnorm_fwd(out, rstd, x, w, a->N, a->C, a->eps, 1, 0));
        CU_TRY(cu_down_bf16(b, a->out[0], out, N * C, err, errlen));
        return cu_down_f32(a->out[1], rstd, N, err, errlen);
    }
    case TB_CUDA_OP_RMSNORM_BWD: {
        float *dy, *x, *rstd, *w, *dx, *dw;
        CU_TRY(cu_up_f32(b, &dy, a->in[0], N * C, err, errlen));
        CU_TRY(cu_up_f32(b, &x, a->in[1], N * C, err, errlen));
        CU_TRY(cu_up_f32(b, &rstd, a->in[2], N, err, errlen));
        CU_TRY(cu_up_f32(b, &w, a->in[3], C, err, errlen));
        CU_TRY(cu_up_f32(b, &dx, a->in[4], N * C, err, errlen));
        CU_TRY(cu_up_f32(b, &dw, NULL, C, err, errlen));
        CU_LAUNCH("rmsnorm_bwd", k_rmsnorm_bwd(dx, dy, x, rstd, w, a->N, a->C, a->accumulate));
        CU_LAUNCH("rmsnorm_dw", k_rmsnorm_dw(dw, dy, x, rstd, a->N, a->C));
        CU_TRY(cu_down_f32(a->out[0], dx, N * C, err, errlen));
        return cu_down_f32(a->out[1], dw, C, err, errlen);
    }
    case TB_CUDA_OP_ROPE: {
        bf16 *qkv, *q, *k, *v;
        float *cs, *sn;
        CU_TRY(cu_up_bf16(b, &qkv, a->in[0], N * (QD + 2 * KD), err, errlen));
        CU_TRY(cu_up_f32(b, &cs, a->in[1], (size_t)a->T * HD / 2, err, errlen));
        CU_TRY(cu_up_f32(b, &sn, a->in[2], (size_t)a->T * HD / 2, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&q, N * QD * sizeof *q, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&k, N * KD * sizeof *k, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&v, N * KD * sizeof *v, err, errlen));
        CU_LAUNCH("rope_split", k_rope_split(q, k, v, qkv, cs, sn, NULL, NULL, NULL, a->N, a->T,
                                             a->T, a->NH, a->NKV, a->HD));
        CU_TRY(cu_down_bf16(b, a->out[0], q, N * QD, err, errlen));
        CU_TRY(cu_down_bf16(b, a->out[1], k, N * KD, err, errlen));
        return cu_down_bf16(b, a->out[2], v, N * KD, err, errlen);
    }
    case TB_CUDA_OP_SWIGLU_FWD: {
        bf16 *gu, *h;
        CU_TRY(cu_up_bf16(b, &gu, a->in[0], N * 2 * F, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&h, N * F * sizeof *h, err, errlen));
        CU_LAUNCH("swiglu_fwd", k_swiglu_fwd(h, gu, a->N, a->F));
        return cu_down_bf16(b, a->out[0], h, N * F, err, errlen);
    }
    case TB_CUDA_OP_SWIGLU_BWD: {
        bf16 *dh, *gu, *dgu;
        CU_TRY(cu_up_bf16(b, &dh, a->in[0], N * F, err, errlen));
        CU_TRY(cu_up_bf16(b, &gu, a->in[1], N * 2 * F, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&dgu, N * 2 * F * sizeof *dgu, err, errlen));
        CU_LAUNCH("swiglu_bwd", k_swiglu_bwd(dgu, dh, gu, a->N, a->F));
        return cu_down_bf16(b, a->out[0], dgu, N * 2 * F, err, errlen);
    }
    case TB_CUDA_OP_ATTENTION_FWD:
    case TB_CUDA_OP_ATTENTION_BWD:
        return cu_attention_op(b, a, err, errlen);
    case TB_CUDA_OP_XENT: {
        bf16 *logits;
        float *rows, *loss;
        int *ids;
        size_t NV = N * (size_t)a->V;
        CU_TRY(cu_up_bf16(b, &logits, a->in[0], NV, err, errlen));
        CU_TRY(cu_up_f32(b, &rows, NULL, N, err, errlen));
        CU_TRY(cu_up_f32(b, &loss, NULL, 1, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&ids, N * sizeof *ids, err, errlen));
        CU_CHECK(
            cudaMemcpyAsync(ids, a->ids, N * sizeof *ids, cudaMemcpyHostToDevice, g_cu.stream));
        CU_LAUNCH("xent", k_xent(logits, rows, ids, a->N, a->V, 1.0f / (float)a->N));
        CU_LAUNCH("sum", k_sum(loss, rows, a->N, 1.0f / (float)a->N));
        CU_TRY(cu_down_f32(&a->loss, loss, 1, err, errlen));
        return cu_down_bf16(b, a->out[0], logits, NV, err, errlen);
    }
    case TB_CUDA_OP_ADAMW: {
        float *p, *g, *m, *v;
        bf16 *wb;
        float bc1 = 1.0f - powf(a->opt.beta1, (float)a->step);
        float bc2 = 1.0f - powf(a->opt.beta2, (float)a->step);
        CU_TRY(cu_up_f32(b, &p, a->in[0], a->n, err, errlen));
        CU_TRY(cu_up_f32(b, &g, a->in[1], a->n, err, errlen));
        CU_TRY(cu_up_f32(b, &m, a->in[2], a->n, err, errlen));
        CU_TRY(cu_up_f32(b, &v, a->in[3], a->n, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&wb, a->n * sizeof *wb, err, errlen));
        CU_LAUNCH("adamw", k_adamw(p, wb, g, m, v, a->n, a->n_decay, a->opt, bc1, bc2));
        CU_TRY(cu_down_f32(a->out[0], p, a->n, err, errlen));
        CU_TRY(cu_down_f32(a->out[1], m, a->n, err, errlen));
        CU_TRY(cu_down_f32(a->out[2], v, a->n, err, errlen));
        return cu_down_bf16(b, a->out[3], wb, a->n, err, errlen);
    }
    case TB_CUDA_OP_GEMM_BF16:
    case TB_CUDA_OP_GEMV_BF16: {
        bf16 *x, *w;
        float *c;
        size_t M = (size_t)a->M, K = (size_t)a->K, Nn = (size_t)a->N;
        CU_TRY(cu_up_bf16(b, &x, a->in[0], M * K, err, errlen));
        CU_TRY(cu_up_bf16(b, &w, a->in[1], Nn * K, err, errlen));
        CU_TRY(cu_up_f32(b, &c, NULL, M * Nn, err, errlen));
        if (a->op == TB_CUDA_OP_GEMV_BF16) {
            CU_LAUNCH("gemv", k_gemv(c, true, false, x, w, a->M, a->N, a->K));
        } else {
            struct cu_gemm g = test_product(a, x, w, c, true);
            CU_TRY(cu_gemm_run(&g, "test product", err, errlen));
        }
        return cu_down_f32(a->out[0], c, M * Nn, err, errlen);
    }
    case TB_CUDA_OP_QUANT_FP8: {
        float *x, *sc, *qf, hs[TB_FP8_SCALES];
        bf16 *xb;
        fp8 *q;
        CU_TRY(cu_fp8_check(err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&q, a->n, err, errlen));
        CU_TRY(cu_up_f32(b, &sc, NULL, TB_FP8_SCALES, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&qf, a->n * sizeof *qf, err, errlen));
        if (a->in_bf16) {
            CU_TRY(cu_up_bf16(b, &xb, a->in[0], a->n, err, errlen));
            CU_LAUNCH("fp8_quantize_bf16", k_fp8_quantize_bf16(q, sc, xb, a->n));
        } else {
            CU_TRY(cu_up_f32(b, &x, a->in[0], a->n, err, errlen));
            CU_LAUNCH("fp8_quantize", k_fp8_quantize(q, sc, x, a->n));
        }
        CU_LAUNCH("fp8_to_f32", k_fp8_to_f32(qf, q, a->n));
        CU_TRY(cu_down_f32(hs, sc, TB_FP8_SCALES, err, errlen));
        a->amax = hs[TB_FP8_AMAX];
        a->scale = hs[TB_FP8_SCALE];
        a->scale_inv = hs[TB_FP8_DEQ];
        return cu_down_f32(a->out[0], qf, a->n, err, errlen);
    }
    case TB_CUDA_OP_GEMM_FP8:
    case TB_CUDA_OP_GEMV_FP8: {
        size_t M = (size_t)a->M, K = (size_t)a->K, Nn = (size_t)a->N;
        float *xs, *ws, *xf, *wf, *c, s1[TB_FP8_SCALES];
        fp8 *x, *w;
        void *out;
        CU_TRY(cu_fp8_check(err, errlen));
        /* the inputs hold e4m3 values: quantising them with scale 1 is exact when their
         * amax is 448 or less, which the test guarantees (checked on the way back) */
        CU_TRY(cu_up_f32(b, &xf, a->in[0], M * K, err, errlen));
        CU_TRY(cu_up_f32(b, &wf, a->in[1], Nn * K, err, errlen));
        CU_TRY(cu_up_f32(b, &xs, NULL, TB_FP8_SCALES, err, errlen));
        CU_TRY(cu_up_f32(b, &ws, NULL, TB_FP8_SCALES, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&x, M * K, err, errlen));
        CU_TRY(cu_buf_alloc(b, (void **)&w, Nn * K, err, errlen));
        CU_LAUNCH("fp8_quantize", k_fp8_quantize(x, xs, xf, M * K));
        CU_LAUNCH("fp8_quantize", k_fp8_quantize(w, ws, wf, Nn * K));
        CU_CHECK(cudaMemcpyAsync(xs + TB_FP8_DEQ, &a->scale_a, sizeof(float),
                                 cudaMemcpyHostToDevice, g_cu.stream));
        CU_CHECK(cudaMemcpyAsync(ws + TB_FP8_DEQ, &a->scale_b, sizeof(float),
                                 cudaMemcpyHostToDevice, g_cu.stream));
        CU_TRY(cu_buf_alloc(b, &out, M * Nn * (a->out_bf16 ? 2 : 4), err, errlen));
        if (a->op == TB_CUDA_OP_GEMV_FP8) {
            CU_LAUNCH("gemv_fp8", k_gemv_fp8(out, !a->out_bf16, false, x, xs + TB_FP8_DEQ, w,
                                             ws + TB_FP8_DEQ, a->M, a->N, a->K));
        } else {
            struct cu_gemm g = test_product(a, x, w, out, !a->out_bf16);
            g.in_type = CU_DT_E4M3;
            g.a_scale = xs + TB_FP8_DEQ;
            g.b_scale = ws + TB_FP8_DEQ;
            CU_TRY(cu_gemm_run(&g, "test fp8 product", err, errlen));
        }
        /* the quantisation above must have been the identity (scale 1 <=> amax 448) */
        CU_TRY(cu_down_f32(s1, xs, TB_FP8_SCALES, err, errlen));
        if (s1[TB_FP8_SCALE] != 1.0f)
            return cu_err(err, errlen, "fp8 test inputs: amax of a is %g, not 448",
                          s1[TB_FP8_AMAX]);
        CU_TRY(cu_down_f32(s1, ws, TB_FP8_SCALES, err, errlen));
        if (s1[TB_FP8_SCALE] != 1.0f)
            return cu_err(err, errlen, "fp8 test inputs: amax of b is %g, not 448",
                          s1[TB_FP8_AMAX]);
        if (a->out_bf16)
            return cu_down_bf16(b, a->out[0], (const bf16 *)out, M * Nn, err, errlen);
        c = (float *)out;
        return cu_down_f32(a->out[0], c, M * Nn, err, errlen);
    }
    case TB_CUDA_OP_FLASH:
        return cu_flash_op(b, a, err, errlen);
    case TB_CUDA_OP_GROUPNORM:
    case TB_CUDA_OP_CONV2D:
    case TB_CUDA_OP_LAYERNORM:
    case TB_CUDA_OP_GEGLU:
    case TB_CUDA_OP_ATTENTION_NC:
    case TB_CUDA_OP_DIT_LN_MOD:
    case TB_CUDA_OP_DIT_QKV:
        return cu_diffusion_op(b, a, err, errlen);
    case TB_CUDA_OP_COUNT:
        break;
    }
    return cu_err(err, errlen, "unknown kernel test %d", (int)a->op);
}

static int op(struct tb_cuda_op_args *a, char *err, size_t errlen)
{
    struct cu_bufs b;
    int rc;
    b.n = 0;
    CU_TRY(cu_ctx_init(err, errlen));
    rc = run_op(&b, a, err, errlen);
    if (rc == 0) {
        cudaError_t e = cudaStreamSynchronize(g_cu.stream);
        if (e != cudaSuccess)
            rc = cu_err(err, errlen, "kernel test %d: %s", (int)a->op, cudaGetErrorString(e));
    }
    cu_bufs_release(&b);
    return rc;
}

/* ---- the table ---- */

extern "C" {
int tb_cu_llama_init(void **eng, const struct tb_arch *a, const struct tb_cuda_llama_weights *w,
                     int max_batch, int max_seq, unsigned flags, char *err, size_t errlen);
void tb_cu_llama_free(void *eng);
size_t tb_cu_llama_bytes(void *eng);
int tb_cu_llama_prefill(void *eng, const int *tokens, int B, int T, char *err, size_t errlen);
int tb_cu_llama_decode(void *eng, const int *tokens, int B, int pos, char *err, size_t errlen);
int tb_cu_llama_train_step(void *eng, const int *tokens, const int *targets, int B, int T,
                           const struct tb_cuda_adamw *opt, char *err, size_t errlen);
int tb_cu_llama_loss(void *eng, float *loss, char *err, size_t errlen);
int tb_cu_llama_logits(void *eng, float *out, size_t n, char *err, size_t errlen);
int tb_cu_llama_finite(void *eng, bool *finite, char *err, size_t errlen);
int tb_cu_llama_prefill_slot(void *eng, const int *tokens, int T, int slot, int *next_token,
                             char *err, size_t errlen);
int tb_cu_llama_decode_slots(void *eng, const int *tokens, const int *slots, const int *pos, int n,
                             int *next_tokens, char *err, size_t errlen);

__attribute__((visibility("default"))) const struct tb_cuda_api *tb_cuda_plugin(int abi_version)
{
    static const struct tb_cuda_api api = {
        TB_CUDA_ABI_VERSION,
        probe,
        tb_cu_llama_init,
        tb_cu_llama_free,
        tb_cu_llama_bytes,
        tb_cu_llama_prefill,
        tb_cu_llama_decode,
        tb_cu_llama_train_step,
        tb_cu_llama_loss,
        tb_cu_llama_logits,
        tb_cu_llama_finite,
        timer_start,
        timer_stop,
        energy_mj,
        copy_bench,
        op,
        tb_cu_diffusion_init,
        tb_cu_diffusion_free,
        tb_cu_diffusion_bytes,
        tb_cu_diffusion_forward,
        tb_cu_diffusion_sample,
        tb_cu_diffusion_latents,
        tb_cu_llama_prefill_slot,
        tb_cu_llama_decode_slots,
    };
    return abi_version == TB_CUDA_ABI_VERSION ? &api : NULL;
}
}
