/*
 * harness/dist/tb_nccl.h: the NCCL engine of `trnbench collectives --backend nccl`
 * (tb_coll.h): one GPU per rank (the rank's local index on its host), buffers in GPU
 * memory, operations on one CUDA stream, each waited for. trnbench never links CUDA or
 * NCCL: libnccl.so.2 and the CUDA runtime (libcudart.so, .so.12, .so.11.0) are dlopen()ed
 * here, so this compiles everywhere; where they or a GPU are missing, tb_nccl_open says
 * why. Ranks and the NCCL unique id go through MPI (tb_comm.h): rank 0's id is broadcast,
 * then ncclCommInitRank.
 */
#ifndef TB_NCCL_H
#define TB_NCCL_H

#include "tb_coll.h"
#include "tb_comm.h"

#include <stddef.h>

struct tb_nccl_fns;

struct tb_nccl {
    void *nccl, *cudart;         /* owned: the dlopen handles (kept loaded until exit) */
    void *comm;                  /* owned: ncclComm_t */
    void *stream;                /* owned: cudaStream_t */
    const struct tb_comm_api *c; /* borrowed */
    int device;                  /* the CUDA device of this rank */
    char version[128];           /* "NCCL 2.21.5, CUDA runtime 12040" */
    char desc[200];              /* results' device */
    struct tb_nccl_fns *fns;     /* owned: the entry points, typed in tb_nccl.c */
};

/* Load NCCL and the CUDA runtime, pick this rank's GPU, create the communicator over
 * all ranks of c (collective: every rank calls it) and fill e. Returns 0, or -1 with why
 * ("cannot load libnccl.so.2: ...", "no CUDA device: ..."). */
int tb_nccl_open(struct tb_nccl *n, const struct tb_comm_api *c, struct tb_coll_engine *e,
                 char *why, size_t len);
/* Destroy the communicator and the stream (n may be zeroed or failed). */
void tb_nccl_close(struct tb_nccl *n);

#endif
