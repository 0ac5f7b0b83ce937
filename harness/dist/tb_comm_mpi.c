/*
 * harness/dist/tb_comm_mpi.c: the MPI plugin (tb_comm.h), built by mpicc into
 * build/lib/libtrnbench-mpi.so and never into libtrnbench.a (the makefile leaves this
 * file out of the library's sources). Everything runs on MPI_COMM_WORLD.
 */
#include "tb_comm.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int g_rank, g_size, g_local_rank, g_local_size, g_nodes;

/* An MPI error code as "MPI_Allreduce: MPI_ERR_...: message". */
static int fail(int rc, const char *what, char *err, size_t errlen)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int n = 0;
    MPI_Error_string(rc, msg, &n);
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", what, msg);
    return -1;
}

static MPI_Datatype dt(enum tb_comm_dtype t)
{
    return t == TB_COMM_F64 ? MPI_DOUBLE : MPI_FLOAT;
}

/* MPI counts are int: a larger count is refused, not truncated. */
static int count_ok(size_t count, const char *what, char *err, size_t errlen)
{
    if (count <= (size_t)INT_MAX)
        return 0;
    if (err && errlen)
        snprintf(err, errlen, "%s: %zu elements is more than MPI's int count", what, count);
    return -1;
}

static int init(int *argc, char ***argv, char *err, size_t errlen)
{
    MPI_Comm local;
    int one, rc;

    rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS)
        return fail(rc, "MPI_Init", err, errlen);
    /* errors come back as codes, not as an abort of the job */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    if (rc != MPI_SUCCESS)
        return fail(rc, "MPI_Comm_split_type", err, errlen);
    MPI_Comm_rank(local, &g_local_rank);
    MPI_Comm_size(local, &g_local_size);
    MPI_Comm_free(&local);
    /* a node is a shared-memory domain: count the ranks that lead one */
    one = g_local_rank == 0;
    rc = MPI_Allreduce(&one, &g_nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        return fail(rc, "MPI_Allreduce", err, errlen);
    return 0;
}

static int finalize(char *err, size_t errlen)
{
    int rc = MPI_Finalize();
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Finalize", err, errlen);
}

static int rank(void)
{
    return g_rank;
}
static int size(void)
{
    return g_size;
}
static int local_rank(void)
{
    return g_local_rank;
}
static int local_size(void)
{
    return g_local_size;
}
static int nodes(void)
{
    return g_nodes;
}

static void hostname(char *buf, size_t len)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    int n = 0;
    MPI_Get_processor_name(name, &n);
    snprintf(buf, len, "%s", name);
}

static void library_version(char *buf, size_t len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int n = 0;
    MPI_Get_library_version(v, &n);
    v[strcspn(v, "\r\n")] = '\0'; /* the first line: "Open MPI v4.1.4, package: ..." */
    snprintf(buf, len, "%s", v);
}

static int barrier(char *err, size_t errlen)
{
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Barrier", err, errlen);
}

static int bcast(void *buf, size_t len, int root, char *err, size_t errlen)
{
    int rc;
    if (count_ok(len, "MPI_Bcast", err, errlen))
        return -1;
    rc = MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Bcast", err, errlen);
}

static int all_reduce(const void *send, void *recv, size_t count, enum tb_comm_dtype t,
                      enum tb_comm_redop op, char *err, size_t errlen)
{
    int rc;
    if (count_ok(count, "MPI_Allreduce", err, errlen))
        return -1;
    rc = MPI_Allreduce(send ? send : MPI_IN_PLACE, recv, (int)count, dt(t),
                       op == TB_COMM_MAX ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Allreduce", err, errlen);
}

static int all_gather(const void *send, void *recv, size_t count, enum tb_comm_dtype t, char *err,
                      size_t errlen)
{
    int rc;
    if (count_ok(count, "MPI_Allgather", err, errlen))
        return -1;
    rc = send ? MPI_Allgather(send, (int)count, dt(t), recv, (int)count, dt(t), MPI_COMM_WORLD)
              : MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)count, dt(t),
                              MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Allgather", err, errlen);
}

static int reduce_scatter(const void *send, void *recv, size_t count, enum tb_comm_dtype t,
                          char *err, size_t errlen)
{
    int rc;
    if (count_ok(count, "MPI_Reduce_scatter_block", err, errlen))
        return -1;
    rc = MPI_Reduce_scatter_block(send ? send : MPI_IN_PLACE, recv, (int)count, dt(t), MPI_SUM,
                                  MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Reduce_scatter_block", err, errlen);
}

static int all_to_all(const void *send, void *recv, size_t count, enum tb_comm_dtype t, char *err,
                      size_t errlen)
{
    int rc;
    if (count_ok(count, "MPI_Alltoall", err, errlen))
        return -1;
    rc = send ? MPI_Alltoall(send, (int)count, dt(t), recv, (int)count, dt(t), MPI_COMM_WORLD)
              : MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)count, dt(t),
                             MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Alltoall", err, errlen);
}

static int sendrecv(const void *send, int to, void *recv, int from, size_t count,
                    enum tb_comm_dtype t, char *err, size_t errlen)
{
    int rc;
    if (count_ok(count, "MPI_Sendrecv", err, errlen))
        return -1;
    rc = MPI_Sendrecv(send, (int)count, dt(t), to, 0, recv, (int)count, dt(t), from, 0,
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Sendrecv", err, errlen);
}

static double wtime(void)
{
    return MPI_Wtime();
}

static void abort_job(int code)
{
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code); /* MPI_Abort does not return; should a library's do, this rank still ends */
}

static const struct tb_comm_api API = {
    .abi_version = TB_COMM_ABI_VERSION,
    .name = "mpi",
    .init = init,
    .finalize = finalize,
    .rank = rank,
    .size = size,
    .local_rank = local_rank,
    .local_size = local_size,
    .nodes = nodes,
    .hostname = hostname,
    .library_version = library_version,
    .barrier = barrier,
    .bcast = bcast,
    .all_reduce = all_reduce,
    .all_gather = all_gather,
    .reduce_scatter = reduce_scatter,
    .all_to_all = all_to_all,
    .sendrecv = sendrecv,
    .wtime = wtime,
    .abort = abort_job,
};

__attribute__((visibility("default"))) const struct tb_comm_api *tb_comm_plugin(int abi_version)
{
    return abi_version == TB_COMM_ABI_VERSION ? &API : NULL;
}
