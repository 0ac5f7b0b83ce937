/*
 * harness/model/tb_collective.h: the performance model's prediction of one collective
 * (all-reduce, all-gather, reduce-scatter, all-to-all, send/receive) of a size over a
 * number of ranks and nodes on one link, in nccl-tests' terms (time, algorithm bandwidth,
 * bus bandwidth), from the same figures the model costs a layout's collectives with
 * (pricing/efficiency.csv: link_eff, net_eff, collective_us, collective_hop_us, fabric;
 * chips.csv's interconnect and instances.csv's network), so that a measured collective
 * can be set beside it (the report) and the figures fitted to measurements
 * (tb_collective_fit, `trnbench calibrate`).
 *
 * The model, per rank: time = latency + bytes x factor / bandwidth, where factor is
 * nccl-tests' bus factor (all-reduce 2(n-1)/n; all-gather, reduce-scatter and
 * all-to-all (n-1)/n; sendrecv 1: the bytes each rank's link carries per byte of the
 * buffer), so busbw = bytes x factor / time tends to the bandwidth for large sizes.
 *
 *   bandwidth  nvlink, neuronlink: the chip's interconnect (chips.csv interconnect_gbps)
 *              x link_eff; efa: the instance's network (instances.csv network_gbps)
 *              shared by its chips x net_eff; shm: the host's memory bandwidth x the
 *              host row's link_eff; loopback, tcp (one node): the host's memory
 *              bandwidth x its net_eff (the kernel's socket copies run at memory speed);
 *              tcp across nodes: the hosts' network bandwidth as stated by the caller
 *              (--host-net-gbit-per-s: nothing in the catalogue knows a host's NIC),
 *              shared by the ranks of a node, x the host row's net_eff.
 *   latency    collective_us + collective_hop_us x the steps of the op's algorithm over
 *              the n ranks (ring fabric: all-reduce 2(n-1), all-gather and reduce-scatter
 *              n-1; switch: 2 ceil(log2 n) and ceil(log2 n); all-to-all n-1 either way;
 *              sendrecv 1), x4 on a network link (efa, tcp, loopback), as the model
 *              costs a collective between instances (tb_model_allreduce_s).
 *
 * The host's row: chip "host" (family "host") in efficiency.csv, for MPI between the
 * processes of CPU hosts; it carries only the collective figures. The host's memory
 * bandwidth is an input (a STREAM triad on one thread: what one rank's copy reaches),
 * measured by the caller (tb_perf_triad) or given.
 *
 * Thread safety: pure functions of their inputs. No allocation except in
 * tb_collective_fit's scratch.
 */
#ifndef TB_COLLECTIVE_H
#define TB_COLLECTIVE_H

#include "tb_model.h"

#include <stdbool.h>
#include <stddef.h>

enum tb_coll_op {
    TB_COLL_ALL_REDUCE,
    TB_COLL_ALL_GATHER,
    TB_COLL_REDUCE_SCATTER,
    TB_COLL_ALL_TO_ALL,
    TB_COLL_SENDRECV,
    TB_COLL_NOPS
};

enum tb_coll_link {
    TB_LINK_SHM,      /* processes of one host over shared memory (Open MPI vader) */
    TB_LINK_LOOPBACK, /* TCP through the host's loopback device */
    TB_LINK_TCP,      /* TCP: on one node, as loopback; across nodes over the stated
                         network bandwidth (net_bw) */
    TB_LINK_EFA,
    TB_LINK_NVLINK,
    TB_LINK_NEURONLINK,
    TB_LINK_NKINDS
};

#define TB_COLL_OPS   "all-reduce, all-gather, reduce-scatter, all-to-all, sendrecv"
#define TB_COLL_LINKS "shm, loopback, tcp, efa, nvlink, neuronlink"

/* Names as results.csv writes them ("all-reduce", "shm"); "unknown" outside the enums. */
const char *tb_coll_op_to_string(enum tb_coll_op op);
const char *tb_coll_link_to_string(enum tb_coll_link l);
/* 0 and *out set, or -1 for an unknown name. */
int tb_coll_op_from_string(const char *s, enum tb_coll_op *out);
int tb_coll_link_from_string(const char *s, enum tb_coll_link *out);
/* Whether the link is a host's (shm, loopback, tcp: the efficiency row "host"). */
bool tb_coll_link_is_host(enum tb_coll_link l);
/* Whether the link is a network (efa, tcp, loopback): its figure is net_eff and its
 * latency 4x; else link_eff. */
bool tb_coll_link_is_net(enum tb_coll_link l);

/* nccl-tests' bus factor of op over n ranks. */
double tb_coll_bus_factor(enum tb_coll_op op, long n);
/* Steps of op's algorithm over n ranks on a ring or switched fabric (above). */
double tb_coll_steps(enum tb_coll_op op, long n, bool fabric_switch);

/* One collective to predict. */
struct tb_coll_query {
    enum tb_coll_op op;
    enum tb_coll_link link;
    double bytes;                   /* nccl-tests' size: the whole buffer */
    long ranks;                     /* all ranks (one per chip on accelerators) */
    long nodes;                     /* hosts or instances they span (>= 1) */
    const char *chip;               /* efficiency row: "host" for host links, else a
                                       chips.csv key (NULL: inst's chip) */
    const struct tb_instance *inst; /* borrowed: efa's network; NULL elsewhere */
    double host_bw;                 /* host links: the host's memory bandwidth, bytes/s
                                       (one thread's triad) */
    double net_bw;                  /* tcp across nodes: each host's network bandwidth,
                                       bytes/s, as stated (0: not known, not modeled) */
};

/* Whether a link over that many nodes is TCP between hosts (its raw bandwidth is the
 * query's net_bw, not host_bw). */
bool tb_coll_link_is_host_net(enum tb_coll_link l, long nodes);

/* What the model predicts for it. */
struct tb_coll_pred {
    double time_s;       /* latency_s + the bandwidth term */
    double latency_s;    /* the fixed part */
    double bw;           /* bytes/s per rank the link gives (raw x efficiency) */
    double raw_bw;       /* bytes/s per rank before the efficiency */
    double eff;          /* the efficiency used (link_eff or net_eff) */
    double algbw, busbw; /* bytes/s, nccl-tests' */
    char why[384];       /* the figures used, for a report's note */
};

/* Predict q with m's efficiency rows and m->pricing's catalogue. 0, or -1 with the reason
 * (no row for the chip, a link the chip has not, tcp across nodes without net_bw, a host
 * link without the host's bandwidth). */
int tb_collective_predict(const struct tb_model *m, const struct tb_coll_query *q,
                          struct tb_coll_pred *p, char *err, size_t errlen);

/* ---- fitting the figures to measurements ---- */

/* One measured collective: the query it answers and the time measured. */
struct tb_coll_point {
    struct tb_coll_query q;
    double time_s;
    const char *group; /* borrowed: points of one group (op, ranks, nodes, placement,
                          link) are one size sweep */
};

/* What a sweep of points implies for one efficiency row (one chip, or the host). */
struct tb_coll_fit {
    double link_eff, net_eff;        /* NAN where no point of such a link */
    double collective_us, hop_us;    /* NAN where no point at all */
    int link_groups, net_groups;     /* sweeps the efficiencies were taken from */
    int lat_groups, lat_step_counts; /* sweeps and distinct step counts of the latency */
    bool hop_through_zero;           /* the floor came out negative: 0, hop_us all the latency */
};

/* Fit the points (all of one efficiency row, each with its raw bandwidth from
 * tb_collective_predict) with m's row as the starting figures: per sweep, the bandwidth
 * is the median busbw of its (up to) 3 largest sizes, the efficiency the median over the
 * sweeps of that / the raw bandwidth, separately for the intra-node links (link_eff) and
 * the network ones (net_eff); the latency of a sweep is the median time of its (up to) 3
 * smallest sizes less their bandwidth term at the fitted efficiency, taken from the
 * intra-node sweeps where there are any (else the network's, divided by 4: the model
 * costs a network's latency at 4x), fitted by least squares as collective_us + hop_us x steps when
 * the sweeps have two or more step counts (hop_us < 0 clamped to 0 and collective_us the mean),
 * else collective_us alone with the row's hop_us kept; where collective_us comes out
 * negative (the hops alone longer than the latency measured), collective_us is 0 and
 * hop_us the latency per step, fitted through zero (hop_through_zero). 0, or -1 with the
 * reason. */
int tb_collective_fit(const struct tb_model *m, const struct tb_coll_point *pts, size_t n,
                      struct tb_coll_fit *fit, char *err, size_t errlen);

#endif
