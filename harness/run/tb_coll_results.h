/*
 * harness/run/tb_coll_results.h: the measured collectives of a results file, read back
 * for the model's comparison and fit (tb_collective.h): rows of phase `collective`
 * (README "Collectives: measured against the model"; written by `trnbench collectives`),
 * workload `collective/<op>`, config `<bytes>B/<inplace|outofplace>`, the columns nodes,
 * ranks_per_node, link and bytes, metrics busbw_gbyte_per_s, algbw_gbyte_per_s and
 * latency_us; one record per sweep point (its three metrics joined).
 *
 * Ownership: the records borrow the rows of the tb_results they were read from (it must
 * outlive them) and are owned by the caller (free(*out)).
 */
#ifndef TB_COLL_RESULTS_H
#define TB_COLL_RESULTS_H

#include "tb_collective.h"
#include "tb_results.h"

#include <stdbool.h>
#include <stddef.h>

/* One measured collective at one size. */
struct tb_coll_meas {
    const struct tb_result *row; /* borrowed: its first row (file and line) */
    enum tb_coll_op op;
    enum tb_coll_link link;
    double bytes;
    long ranks, nodes; /* ranks: nodes x ranks_per_node */
    bool inplace;
    const char *target;   /* borrowed: "host" or the instance type */
    const char *executor; /* borrowed: mpi, nccl, neuron */
    double time_s;        /* latency_us, or bytes / algbw; NAN when neither */
    double busbw, algbw;  /* bytes/s, as measured; NAN when not (then from time_s) */
    double host_bw;       /* bytes/s: the host's triad recorded with the run (metric
                             host_mem_gbyte_per_s, host links); NAN when not recorded */
    char group[192];      /* one sweep: file, target, link, op, nodes, ranks, placement */
};

/* The measured collective rows of res into *out (n records, sorted by group then bytes;
 * *out NULL and n 0 when there are none). A collective row with a bad field is an error
 * naming its file, line and field ("r.csv: line 7: field 'bytes': not a size: 'x'").
 * Returns 0 or -1 with a message. */
int tb_coll_meas_load(const struct tb_results *res, struct tb_coll_meas **out, size_t *n, char *err,
                      size_t errlen);

/* The host's memory bandwidth for the host links' model: given (> 0) is taken as it is;
 * else measured now, a STREAM triad (tb_perf_triad) on one thread over 3 x 32 MiB, the
 * median of 5 repetitions: what one rank's copy reaches. how says which ("given",
 * "measured now: STREAM triad, 1 thread, ..."). 0 or -1 with a message. */
int tb_coll_host_bw(double given, double *bw, char *how, size_t howlen, char *err, size_t errlen);

/* The host's memory bandwidth for each of the n measurements m that is on a host link
 * within one node (shm, loopback, tcp: tb_coll_link_is_host and not
 * tb_coll_link_is_host_net), into bw[i] (bytes/s; 0 for the others): given (> 0) for
 * all of them; else the one recorded with the run (host_mem_gbyte_per_s, the run's host
 * at the run's time); else, for older files, measured now, once (tb_coll_host_bw). how
 * says which, with the range recorded ("recorded with the runs: rank 0's STREAM triad
 * before each sweep, 14.2 GB/s", "... for 3 sweeps; measured now for 1: ..."); "" when
 * no measurement needs it. 0, or -1 with a message. */
int tb_coll_host_bws(const struct tb_coll_meas *m, size_t n, double given, double *bw, char *how,
                     size_t howlen, char *err, size_t errlen);

/* The option that states the hosts' network bandwidth for tcp across nodes (predict,
 * report, calibrate: nothing in the catalogue knows a host's NIC), and its help line. */
#define TB_COLL_NET_OPT "host-net-gbit-per-s"
#define TB_COLL_NET_HELP                                                                           \
    "  --host-net-gbit-per-s X   each host's network bandwidth in Gbit/s (tcp across\n"            \
    "                            nodes: the model's raw bandwidth, shared by a host's\n"           \
    "                            ranks; without it tcp across nodes is not modeled)\n"
/* Its value's range, Gbit/s (the commands take it into bytes/s: x 1e9 / 8). */
#define TB_COLL_NET_GBIT_MIN 1e-6
#define TB_COLL_NET_GBIT_MAX 1e6

#endif
