/*
 * harness/dist/tb_coll.h: collective benchmarks with nccl-tests' conventions
 * (github.com/NVIDIA/nccl-tests, doc/PERFORMANCE.md), over any engine that can run the
 * five operations on its own buffers: MPI on host memory (tb_comm.h), NCCL on GPU
 * memory (tb_coll_nccl.c).
 *
 * Per size: `warmup` untimed then `iters` timed operations, out of place and then in
 * place; each operation timed on every rank, the per-iteration times reduced to the
 * slowest rank's (MPI_MAX), and the time is their mean over the iterations. algbw =
 * bytes / time, busbw = algbw x the operation's factor (tb_coll_busbw_factor), in GB/s
 * (1e9 bytes). bytes is nccl-tests' size: the buffer of all-reduce and sendrecv, the
 * gathered buffer of all-gather, the input of reduce-scatter, the send buffer of
 * all-to-all; for the last three it is rounded down to a whole element per rank.
 *
 * The check (unless off): after the timing, the buffers are filled with rank-dependent
 * whole numbers below 61 (so every sum over up to 2^18 ranks is exact in f32), one
 * operation runs, and every element of the result is compared with the exact value;
 * the wrong ones are counted over all ranks.
 *
 * Ownership: a tb_coll_result's sizes array is owned (tb_coll_result_release); the
 * engine and the comm table are borrowed.
 */
#ifndef TB_COLL_H
#define TB_COLL_H

#include "tb_comm.h"
#include "tb_results.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum tb_coll_op {
    TB_COLL_ALL_REDUCE,
    TB_COLL_ALL_GATHER,
    TB_COLL_REDUCE_SCATTER,
    TB_COLL_ALL_TO_ALL,
    TB_COLL_SENDRECV,
};
#define TB_COLL_NOPS 5

/* "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "sendrecv". */
const char *tb_coll_op_name(enum tb_coll_op op);
/* Parse one of those names. Returns 0, or -1 for an unknown name. */
int tb_coll_op_parse(const char *s, enum tb_coll_op *op);
/* nccl-tests' bus bandwidth factor for n ranks: all-reduce 2(n-1)/n, all-gather,
 * reduce-scatter and all-to-all (n-1)/n, sendrecv 1. */
double tb_coll_busbw_factor(enum tb_coll_op op, int nranks);

/* "8", "64K", "1M", "1G" (binary multiples; K/M/G/KB/MB/GB/KiB/MiB/GiB any case) into
 * bytes. Returns 0, or -1 when not such a size or above 2^40. */
int tb_coll_parse_bytes(const char *s, size_t *bytes);

/* What runs the operations. Buffers come from alloc; host memory engines leave put and
 * get NULL and the driver reads and writes the buffers directly. */
struct tb_coll_engine {
    void *ctx;           /* borrowed: passed to every call */
    const char *backend; /* "mpi", "nccl": results' executor */
    /* NCCL's in-place reduce-scatter leaves the rank's chunk at rank x count, MPI's at 0 */
    bool rs_inplace_at_rank;
    bool no_inplace_all_to_all; /* NCCL has none: the in-place column stays empty */
    int (*alloc)(void *ctx, size_t bytes, void **p, char *err, size_t errlen);
    void (*release)(void *ctx, void *p);
    int (*put)(void *ctx, void *dst, const void *src, size_t bytes, char *err, size_t errlen);
    int (*get)(void *ctx, void *dst, const void *src, size_t bytes, char *err, size_t errlen);
    /* One operation with tb_comm.h's conventions (send NULL: in place; count as there;
     * sendrecv to rank+1 from rank-1), f32, sum. Returns when it completed. */
    int (*run)(void *ctx, enum tb_coll_op op, const void *send, void *recv, size_t count, char *err,
               size_t errlen);
};

/* The engine that runs each operation through c (MPI) on host memory. */
void tb_coll_host_engine(struct tb_coll_engine *e, const struct tb_comm_api *c);

struct tb_coll_result;

struct tb_coll_opts {
    enum tb_coll_op op;
    size_t min_bytes, max_bytes; /* inclusive */
    double step_factor;          /* > 1 */
    int iters, warmup;
    bool check;
    /* TRNBENCH_TEST=1 only: rank 0's input is off by one in its first element before the
     * check's operation, so the check must find wrong values (tests/cli/collectives.t) */
    bool break_check;
    /* TRNBENCH_TEST=1 only (TRNBENCH_TEST_RANK_FAIL): rank fail_rank fails on its own (an
     * error no other rank sees) when it comes to the fail_at-th size it measures (1 is
     * the first); 0: never */
    int fail_rank;
    long fail_at;
    /* May be NULL. Rank 0 only, after each size measured: record it (the rows of r's
     * size k); 0, or -1 with a message. Its outcome is broadcast, so on a failure every
     * rank stops after that size and tb_coll_run returns -1 on all of them. */
    int (*size_done)(void *ctx, const struct tb_coll_result *r, size_t k, char *err, size_t errlen);
    void *ctx;
};

/* One size, out of place [0] and in place [1]. */
struct tb_coll_size {
    size_t bytes, count;         /* count: bytes / 4 (f32 elements), as nccl-tests prints it */
    double time_us[2];           /* the time per operation: its statistic is the result's time_stat
                                    (trnbench's engines: the mean over iterations of the slowest
                                    rank's time) */
    double min_us[2], max_us[2]; /* <= 0: not known (nccom-test prints neither) */
    double stddev_us[2];         /* NaN: not known */
    double p90_us[2], p99_us[2]; /* percentiles when the tool printed them; <= 0: not */
    double algbw_gbs[2], busbw_gbs[2];
    long wrong[2];    /* -1: not checked */
    bool ran[2];      /* false: no such placement (sendrecv in place), or recorded */
    bool recorded[2]; /* already in the results file (tb_coll_mark_recorded): not run */
};

/* What a size's time_us is. trnbench's own engines time every iteration and record the
 * mean; nccom-test prints the statistics it computes (tb_nccom.h). */
enum tb_coll_stat {
    TB_COLL_STAT_MEAN,       /* the mean over the timed iterations (0: the engines') */
    TB_COLL_STAT_PERCENTILE, /* a percentile of them: time_pct */
    TB_COLL_STAT_UNLABELLED, /* a time whose statistic the tool does not say */
};

struct tb_coll_result {
    enum tb_coll_op op;
    int nranks;
    double factor;
    enum tb_coll_stat time_stat; /* what the sizes' time_us is */
    int time_pct;                /* TB_COLL_STAT_PERCENTILE: which (50: the median) */
    /* how the time was taken, for the rows' notes ("time: ..."); "": the engines' mean
     * over the iterations of the slowest rank's time */
    char time_how[256];
    struct tb_coll_size *sizes; /* owned: nsizes, rising */
    size_t nsizes;
    long wrong; /* over all sizes and placements; 0 when not checked */
};

/* The sizes of o for nranks ranks into r (r->sizes, nothing measured yet): min, min x
 * step, ... up to max, each rounded down to a whole element per rank, a size that
 * rounds to nothing or to the one before left out. Returns 0, or -1 with a message (no
 * size holds an element per rank, bad options, memory). */
int tb_coll_sizes(const struct tb_coll_opts *o, int nranks, struct tb_coll_result *r, char *err,
                  size_t errlen);

/* Run o on engine e, ranks and reductions of times through comm. r: empty (memset 0),
 * then its sizes are o's (tb_coll_sizes); or planned already by tb_coll_sizes, with the
 * placements to leave out marked recorded (the same on every rank: rank 0 marks them,
 * the flags broadcast). Every rank calls it; every rank gets the same result. Returns 0
 * (wrong values are in r->wrong, not a failure of the call), or -1 with a message:
 * memory, an operation failed, o->size_done failed (on rank 0; the others say so). A
 * failure on one rank alone (memory, an operation) leaves the others waiting in their
 * next collective: the caller ends the job (tb_comm_api abort). */
int tb_coll_run(const struct tb_comm_api *comm, const struct tb_coll_engine *e,
                const struct tb_coll_opts *o, struct tb_coll_result *r, char *err, size_t errlen);
void tb_coll_result_release(struct tb_coll_result *r);

/* nccl-tests' table of r: a header, one line per size, the out-of-bounds count and the
 * average bus bandwidth. */
void tb_coll_print(FILE *f, const struct tb_coll_result *r);

/* Facts of every row (tb_coll_rows). */
struct tb_coll_prov {
    const char *executor;      /* "mpi", "nccl", "neuron" */
    const char *target;        /* "host" or the EC2 instance type */
    const char *host;          /* the machine's description */
    const char *device;        /* results' device ("AMD EPYC (host CPU) x4 ranks") */
    const char *software;      /* the library: "Open MPI v4.1.4, ..." (results' blas column) */
    const char *link;          /* loopback, shm, tcp, efa, nvlink, neuronlink */
    const char *link_how;      /* "detected: ..." or "stated (--link)" */
    int nodes, ranks_per_node; /* ranks_per_node 0: not the same on every node */
    int nranks;
    int iters, warmup;
    const char *source;  /* NULL: "trnbench" */
    const char *notes;   /* added to every row's notes; NULL: none */
    const char *checked; /* the notes of a checked row; NULL: "check: every element exact" */
    /* host links (shm, loopback, tcp): rank 0's STREAM triad before the sweep, bytes/s
     * (median, min and max of host_bw_n repetitions), recorded as the metric
     * host_mem_gbyte_per_s beside each size's, so that the model's comparison and fit
     * (report, calibrate) use the bandwidth of the run's host at the run's time, not of
     * the machine that reads the file later; 0: not measured (another link) */
    double host_bw, host_bw_min, host_bw_max;
    int host_bw_n;
};

/* The run id of placement pl (0 out of place, 1 in place) of a size of op under p:
 * collective/<op>/<bytes>B/<outofplace|inplace>/<executor>/<link>/n<nodes>x<ranks per
 * node> (n<nodes>r<ranks> when the nodes hold unequal shares). The resume key of a
 * collective row: op, bytes, placement, backend, link, nodes and ranks. */
void tb_coll_run_id(char *buf, size_t len, enum tb_coll_op op, size_t bytes, int pl,
                    const struct tb_coll_prov *p);

/* Mark r's placements whose run id (tb_coll_run_id) path already holds as recorded (and
 * not run); a missing file holds none. Returns how many were marked, or -1 with a
 * message (a file that cannot be read). */
long tb_coll_mark_recorded(const char *path, struct tb_coll_result *r, const struct tb_coll_prov *p,
                           char *err, size_t errlen);

/* Append r's rows to path (results.csv) atomically: per size whose check found nothing
 * wrong (or not checked), per placement run and not recorded, busbw_gbyte_per_s,
 * algbw_gbyte_per_s and latency_us. latency_us's value is time_us; its mean column is
 * filled only when that is a mean (r->time_stat), min, max, stddev, p90 and p99 only
 * when known; the notes say which statistic the time is. The caller holds the folder's lock.
 * Returns the rows written, or -1 with a message. With p->host_bw > 0 each also gets the metric
 * host_mem_gbyte_per_s (the host's triad measured before the sweep). */
long tb_coll_rows(const char *path, const struct tb_coll_result *r, const struct tb_coll_prov *p,
                  char *err, size_t errlen);

#endif
