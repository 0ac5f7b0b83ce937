/* harness/dist/tb_nccl.c: see tb_nccl.h. The few NCCL and CUDA runtime types used are
 * spelled here from their public headers (nccl.h, cuda_runtime_api.h), so nothing of
 * either is needed to build. */
#include "tb_nccl.h"

#include "tb_util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nccl.h: ncclResult_t is an int enum, ncclSuccess 0; ncclFloat32 7; ncclSum 0;
 * ncclUniqueId 128 bytes. cuda_runtime_api.h: cudaError_t int, cudaSuccess 0;
 * cudaMemcpyHostToDevice 1, cudaMemcpyDeviceToHost 2. */
#define NCCL_FLOAT32         7
#define NCCL_SUM             0
#define NCCL_UNIQUE_ID_BYTES 128
#define CUDA_H2D             1
#define CUDA_D2H             2

typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} nccl_id;

struct tb_nccl_fns {
    int (*GetVersion)(int *);
    int (*GetUniqueId)(nccl_id *);
    int (*CommInitRank)(void **, int, nccl_id, int);
    int (*CommDestroy)(void *);
    int (*AllReduce)(const void *, void *, size_t, int, int, void *, void *);
    int (*AllGather)(const void *, void *, size_t, int, void *, void *);
    int (*ReduceScatter)(const void *, void *, size_t, int, int, void *, void *);
    int (*Send)(const void *, size_t, int, int, void *, void *);
    int (*Recv)(void *, size_t, int, int, void *, void *);
    int (*GroupStart)(void);
    int (*GroupEnd)(void);
    const char *(*GetErrorString)(int);
    int (*cudaGetDeviceCount)(int *);
    int (*cudaSetDevice)(int);
    int (*cudaMalloc)(void **, size_t);
    int (*cudaFree)(void *);
    int (*cudaMemcpy)(void *, const void *, size_t, int);
    int (*cudaMemset)(void *, int, size_t);
    int (*cudaStreamCreate)(void **);
    int (*cudaStreamDestroy)(void *);
    int (*cudaStreamSynchronize)(void *);
    int (*cudaRuntimeGetVersion)(int *);
    const char *(*cudaGetErrorString)(int);
};

static int sym(void *dl, const char *lib, const char *name, void *fp, char *why, size_t len)
{
    void *p = dlsym(dl, name);
    if (!p) {
        snprintf(why, len, "'%s' has no symbol '%s'", lib, name);
        return -1;
    }
    memcpy(fp, &p, sizeof p); /* POSIX: a dlsym pointer converts to a function pointer */
    return 0;
}

static void *load_any(const char *const *names, char *why, size_t len, const char **which)
{
    char errs[600] = "";
    for (const char *const *n = names; *n; n++) {
        void *dl = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
        if (dl) {
            *which = *n;
            return dl;
        }
        if (!errs[0]) {
            const char *e = dlerror();
            snprintf(errs, sizeof errs, "%s", e ? e : "unknown error");
        }
    }
    snprintf(why, len, "cannot load %s: %s", names[0], errs);
    return NULL;
}

static int cuda_fail(const struct tb_nccl *n, int rc, const char *what, char *err, size_t len)
{
    return tb_err(err, len, "%s: CUDA error %d: %s", what, rc,
                  n->fns->cudaGetErrorString ? n->fns->cudaGetErrorString(rc) : "?");
}

static int nccl_fail(const struct tb_nccl *n, int rc, const char *what, char *err, size_t len)
{
    return tb_err(err, len, "%s: NCCL error %d: %s", what, rc, n->fns->GetErrorString(rc));
}

/* ---- the engine ---- */

static int g_alloc(void *ctx, size_t bytes, void **p, char *err, size_t len)
{
    struct tb_nccl *n = ctx;
    int rc = n->fns->cudaMalloc(p, bytes ? bytes : 4);
    if (rc)
        return cuda_fail(n, rc, "cudaMalloc", err, len);
    rc = n->fns->cudaMemset(*p, 0, bytes);
    return rc ? cuda_fail(n, rc, "cudaMemset", err, len) : 0;
}

static void g_release(void *ctx, void *p)
{
    struct tb_nccl *n = ctx;
    n->fns->cudaFree(p);
}

static int g_put(void *ctx, void *dst, const void *src, size_t bytes, char *err, size_t len)
{
    struct tb_nccl *n = ctx;
    int rc = n->fns->cudaMemcpy(dst, src, bytes, CUDA_H2D);
    return rc ? cuda_fail(n, rc, "cudaMemcpy to the GPU", err, len) : 0;
}

static int g_get(void *ctx, void *dst, const void *src, size_t bytes, char *err, size_t len)
{
    struct tb_nccl *n = ctx;
    int rc = n->fns->cudaMemcpy(dst, src, bytes, CUDA_D2H);
    return rc ? cuda_fail(n, rc, "cudaMemcpy from the GPU", err, len) : 0;
}

static int g_run(void *ctx, enum tb_coll_op op, const void *send, void *recv, size_t count,
                 char *err, size_t len)
{
    struct tb_nccl *n = ctx;
    const struct tb_nccl_fns *f = n->fns;
    int r = n->c->rank(), size = n->c->size(), rc = 0;
    char *rb = recv;
    const char *sb = send;
    size_t chunk = count * sizeof(float);

    /* NCCL's in-place layouts: all-gather sends from its own chunk of recv; reduce-scatter
     * receives into its own chunk of send (tb_coll_engine.rs_inplace_at_rank) */
    switch (op) {
    case TB_COLL_ALL_REDUCE:
        rc = f->AllReduce(sb ? sb : rb, rb, count, NCCL_FLOAT32, NCCL_SUM, n->comm, n->stream);
        break;
    case TB_COLL_ALL_GATHER:
        rc = f->AllGather(sb ? sb : rb + (size_t)r * chunk, rb, count, NCCL_FLOAT32, n->comm,
                          n->stream);
        break;
    case TB_COLL_REDUCE_SCATTER:
        rc = f->ReduceScatter(sb ? sb : rb, sb ? rb : rb + (size_t)r * chunk, count, NCCL_FLOAT32,
                              NCCL_SUM, n->comm, n->stream);
        break;
    case TB_COLL_ALL_TO_ALL: /* nccl-tests' alltoall: grouped sends and receives */
        if (!sb)
            return tb_err(err, len, "NCCL has no in-place all-to-all");
        f->GroupStart();
        for (int p = 0; p < size && !rc; p++) {
            rc = f->Send(sb + (size_t)p * chunk, count, NCCL_FLOAT32, p, n->comm, n->stream);
            if (!rc)
                rc = f->Recv(rb + (size_t)p * chunk, count, NCCL_FLOAT32, p, n->comm, n->stream);
        }
        if (f->GroupEnd() && !rc)
            rc = -1;
        break;
    case TB_COLL_SENDRECV:
        f->GroupStart();
        rc = f->Send(sb, count, NCCL_FLOAT32, (r + 1) % size, n->comm, n->stream);
        if (!rc)
            rc = f->Recv(rb, count, NCCL_FLOAT32, (r + size - 1) % size, n->comm, n->stream);
        if (f->GroupEnd() && !rc)
            rc = -1;
        break;
    }
    if (rc)
        return nccl_fail(n, rc, tb_coll_op_name(op), err, len);
    rc = f->cudaStreamSynchronize(n->stream);
    return rc ? cuda_fail(n, rc, "cudaStreamSynchronize", err, len) : 0;
}

/* ---- open and close ---- */

int tb_nccl_open(struct tb_nccl *n, const struct tb_comm_api *c, struct tb_coll_engine *e,
                 char *why, size_t len)
{
    static const char *const NCCL_LIBS[] = {"libnccl.so.2", "libnccl.so", NULL};
    static const char *const CUDART_LIBS[] = {"libcudart.so", "libcudart.so.12",
                                              "libcudart.so.11.0", NULL};
    const char *nl = NULL, *cl = NULL;
    struct tb_nccl_fns *f;
    nccl_id id;
    int ndev = 0, rc, nv = 0, cv = 0;
    char err[512];

    memset(n, 0, sizeof *n);
    n->c = c;
    f = n->fns = calloc(1, sizeof *f);
    if (!f)
        return tb_err(why, len, "out of memory");
    n->cudart = load_any(CUDART_LIBS, why, len, &cl);
    if (!n->cudart)
        return -1;
    n->nccl = load_any(NCCL_LIBS, why, len, &nl);
    if (!n->nccl)
        return -1;
#define S(lib, dl, name, field)                                                                    \
    if (sym(dl, lib, name, &f->field, why, len))                                                   \
    return -1
    S(cl, n->cudart, "cudaGetErrorString", cudaGetErrorString);
    S(cl, n->cudart, "cudaGetDeviceCount", cudaGetDeviceCount);
    S(cl, n->cudart, "cudaSetDevice", cudaSetDevice);
    S(cl, n->cudart, "cudaMalloc", cudaMalloc);
    S(cl, n->cudart, "cudaFree", cudaFree);
    S(cl, n->cudart, "cudaMemcpy", cudaMemcpy);
    S(cl, n->cudart, "cudaMemset", cudaMemset);
    S(cl, n->cudart, "cudaStreamCreate", cudaStreamCreate);
    S(cl, n->cudart, "cudaStreamDestroy", cudaStreamDestroy);
    S(cl, n->cudart, "cudaStreamSynchronize", cudaStreamSynchronize);
    S(cl, n->cudart, "cudaRuntimeGetVersion", cudaRuntimeGetVersion);
    S(nl, n->nccl, "ncclGetVersion", GetVersion);
    S(nl, n->nccl, "ncclGetUniqueId", GetUniqueId);
    S(nl, n->nccl, "ncclCommInitRank", CommInitRank);
    S(nl, n->nccl, "ncclCommDestroy", CommDestroy);
    S(nl, n->nccl, "ncclAllReduce", AllReduce);
    S(nl, n->nccl, "ncclAllGather", AllGather);
    S(nl, n->nccl, "ncclReduceScatter", ReduceScatter);
    S(nl, n->nccl, "ncclSend", Send);
    S(nl, n->nccl, "ncclRecv", Recv);
    S(nl, n->nccl, "ncclGroupStart", GroupStart);
    S(nl, n->nccl, "ncclGroupEnd", GroupEnd);
    S(nl, n->nccl, "ncclGetErrorString", GetErrorString);
#undef S
    rc = f->cudaGetDeviceCount(&ndev);
    if (rc || ndev < 1)
        return tb_err(why, len, "no CUDA device (cudaGetDeviceCount: %s)",
                      rc ? f->cudaGetErrorString(rc) : "0 devices");
    n->device = c->local_rank() % ndev;
    if (c->local_size() > ndev)
        return tb_err(why, len, "%d ranks on this host and %d GPUs: one GPU per rank",
                      c->local_size(), ndev);
    rc = f->cudaSetDevice(n->device);
    if (rc)
        return cuda_fail(n, rc, "cudaSetDevice", why, len);
    rc = f->cudaStreamCreate(&n->stream);
    if (rc)
        return cuda_fail(n, rc, "cudaStreamCreate", why, len);
    f->GetVersion(&nv);
    f->cudaRuntimeGetVersion(&cv);
    snprintf(n->version, sizeof n->version, "NCCL %d.%d.%d, CUDA runtime %d", nv / 10000,
             nv / 100 % 100, nv % 100, cv);
    snprintf(n->desc, sizeof n->desc, "NVIDIA GPU (one per rank, %d on rank 0's host)", ndev);
    memset(&id, 0, sizeof id);
    if (c->rank() == 0 && (rc = f->GetUniqueId(&id)) != 0)
        return nccl_fail(n, rc, "ncclGetUniqueId", why, len);
    if (c->bcast(&id, sizeof id, 0, err, sizeof err))
        return tb_err(why, len, "%s", err);
    rc = f->CommInitRank(&n->comm, c->size(), id, c->rank());
    if (rc)
        return nccl_fail(n, rc, "ncclCommInitRank", why, len);
    memset(e, 0, sizeof *e);
    e->ctx = n;
    e->backend = "nccl";
    e->rs_inplace_at_rank = true;
    e->no_inplace_all_to_all = true;
    e->alloc = g_alloc;
    e->release = g_release;
    e->put = g_put;
    e->get = g_get;
    e->run = g_run;
    return 0;
}

void tb_nccl_close(struct tb_nccl *n)
{
    if (n->fns && n->comm)
        n->fns->CommDestroy(n->comm);
    if (n->fns && n->stream)
        n->fns->cudaStreamDestroy(n->stream);
    n->comm = n->stream = NULL;
    free(n->fns);
    n->fns = NULL;
    /* the libraries stay loaded: CUDA's exit handlers need their code */
}
