/*
 * harness/dist/tb_comm.h: the interface of a communication plugin, the one place
 * trnbench meets MPI. trnbench never links MPI: the makefile builds the plugin
 * build/lib/libtrnbench-mpi.so with mpicc where mpicc is found (harness/dist/tb_comm_mpi.c),
 * and tb_comm_open dlopen()s it at run time; without it the caller gets a reason and
 * `trnbench collectives --backend mpi` exits 2. The program is started under mpirun,
 * srun or another launcher of the MPI installation; each process is one rank.
 *
 * Buffers are host memory; counts are in elements of the datatype. Every call is
 * collective over all ranks (MPI_COMM_WORLD) unless it says otherwise, returns 0 or -1
 * with a message in (err, errlen), and is not thread-safe (MPI_THREAD_SINGLE).
 *
 * In-place conventions (send == NULL), MPI's:
 *   all_reduce      buf = recv holds the rank's input and gets the sum
 *   all_gather      recv (size x count) holds the rank's chunk at rank x count
 *   reduce_scatter  recv (size x count) holds the input; the rank's reduced chunk
 *                   lands at its start, recv[0 .. count)
 *   all_to_all      recv (size x count) holds the input and gets the output
 * sendrecv is never in place.
 */
#ifndef TB_COMM_H
#define TB_COMM_H

#include <stddef.h>

#define TB_COMM_ABI_VERSION     2
#define TB_COMM_PLUGIN_SYMBOL   "tb_comm_plugin"
#define TB_COMM_MPI_PLUGIN_NAME "libtrnbench-mpi.so"

enum tb_comm_dtype {
    TB_COMM_F32,
    TB_COMM_F64,
};

enum tb_comm_redop {
    TB_COMM_SUM,
    TB_COMM_MAX,
};

struct tb_comm_api {
    int abi_version;  /* TB_COMM_ABI_VERSION */
    const char *name; /* "mpi" */

    /* MPI_Init (once per process); finalize after the last call. */
    int (*init)(int *argc, char ***argv, char *err, size_t errlen);
    int (*finalize)(char *err, size_t errlen);

    /* After init, not collective: this rank, the ranks, this rank's index among those on
     * its host, the ranks on its host, and the hosts (nodes) the job spans. */
    int (*rank)(void);
    int (*size)(void);
    int (*local_rank)(void);
    int (*local_size)(void);
    int (*nodes)(void);
    /* This host's name (MPI_Get_processor_name) and the library's version line ("Open MPI
     * v4.1.4, package: ..."): not collective. */
    void (*hostname)(char *buf, size_t len);
    void (*library_version)(char *buf, size_t len);

    int (*barrier)(char *err, size_t errlen);
    /* root's len bytes to every rank. */
    int (*bcast)(void *buf, size_t len, int root, char *err, size_t errlen);
    int (*all_reduce)(const void *send, void *recv, size_t count, enum tb_comm_dtype t,
                      enum tb_comm_redop op, char *err, size_t errlen);
    /* count: elements each rank contributes; recv holds size x count. */
    int (*all_gather)(const void *send, void *recv, size_t count, enum tb_comm_dtype t, char *err,
                      size_t errlen);
    /* count: elements each rank receives (a sum); send holds size x count. */
    int (*reduce_scatter)(const void *send, void *recv, size_t count, enum tb_comm_dtype t,
                          char *err, size_t errlen);
    /* count: elements to each rank; send and recv hold size x count. */
    int (*all_to_all)(const void *send, void *recv, size_t count, enum tb_comm_dtype t, char *err,
                      size_t errlen);
    /* count elements to rank `to` and from rank `from`, together (a ring when every rank
     * passes rank+1 and rank-1). Point to point: collective only in that every rank named
     * must call it. */
    int (*sendrecv)(const void *send, int to, void *recv, int from, size_t count,
                    enum tb_comm_dtype t, char *err, size_t errlen);
    /* seconds, a monotonic wall clock (MPI_Wtime); not collective. */
    double (*wtime)(void);
    /* End every rank of the job (MPI_Abort on MPI_COMM_WORLD) with exit status code; not
     * collective, never returns. What a rank calls when it fails on its own: the others
     * would otherwise wait in their next collective for ever. The caller says why first. */
    void (*abort)(int code);
};

typedef const struct tb_comm_api *(*tb_comm_plugin_fn)(int abi_version);

/* Find and load the MPI plugin: $TRNBENCH_MPI_PLUGIN, else <exe dir>/../lib/
 * TB_COMM_MPI_PLUGIN_NAME, else the installed library folder. Returns the plugin's
 * table, or NULL with why in (why, len) ("MPI plugin not built (mpicc not found at build
 * time)", "cannot load ...: ..."). The library stays loaded until the process exits. */
const struct tb_comm_api *tb_comm_open(char *why, size_t len);

/* tb_comm_open, then init: what a command started under mpirun does first. NULL with
 * "PREFIX needs MPI: why" (*rc 2) or "PREFIX error" (*rc 1) on stderr. */
const struct tb_comm_api *tb_comm_start(const char *prefix, int *argc, char ***argv, int *rc);

#endif
