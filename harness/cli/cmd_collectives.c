/*
 * harness/cli/cmd_collectives.c: `trnbench collectives`, collective bandwidth with
 * nccl-tests' conventions (harness/dist/tb_coll.h) through MPI on the CPUs, NCCL on
 * GPUs, or Neuron's nccom-test; rank 0 prints the table and writes the rows.
 */
#include "cli.h"
#include "cli_opt.h"

#include "tb_coll.h"
#include "tb_comm.h"
#include "tb_nccl.h"
#include "tb_nccom.h"
#include "tb_neuron.h"
#include "tb_perf.h"
#include "tb_platform.h"
#include "tb_results.h"
#include "tb_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench collectives --backend mpi|nccl|neuron --op OP --out DIR [options]\n"
          "\n"
          "Collective bandwidth as nccl-tests measures it: per message size, warmup then\n"
          "timed operations out of place and in place; time is the mean over iterations\n"
          "of the slowest rank's time, algbw = bytes / time, busbw = algbw x the\n"
          "operation's factor (all-reduce 2(n-1)/n; all-gather, reduce-scatter and\n"
          "all-to-all (n-1)/n; sendrecv 1); every element of the result is checked.\n"
          "Start it under the MPI launcher, one process per rank, like nccl-tests:\n"
          "  mpirun -np 4 trnbench collectives --backend mpi --op all-reduce --out DIR\n"
          "  srun -N 2 --ntasks-per-node 8 trnbench collectives --backend nccl ...\n"
          "The neuron backend is one process: it runs nccom-test, which starts the ranks.\n"
          "Rank 0 prints the table and appends the rows to DIR/results.csv (phase\n"
          "collective; busbw_gbyte_per_s, algbw_gbyte_per_s, latency_us per size and\n"
          "placement; on shm, loopback and tcp in one host also host_mem_gbyte_per_s,\n"
          "rank 0's memory bandwidth taken before the sweep, which report and\n"
          "calibrate model the run with).\n"
          "\n"
          "Options:\n"
          "  --backend B        mpi (host memory, the MPI plugin libtrnbench-mpi.so), nccl\n"
          "                     (GPU memory; libnccl.so.2 and libcudart loaded at run time;\n"
          "                     ranks and the NCCL id through MPI) or neuron (nccom-test)\n"
          "  --op OP            all-reduce, all-gather, reduce-scatter, all-to-all or sendrecv\n"
          "  --min-bytes N      smallest size (default 8); K, M, G suffixes (binary)\n"
          "  --max-bytes N      largest size (default 1G)\n"
          "  --step-factor F    each size F times the last (default 2)\n"
          "  --iters N          timed operations per size and placement (default 20)\n"
          "  --warmup N         untimed operations before them (default 5)\n"
          "  --no-check         skip the check of the results\n"
          "  --link L           the link to record (loopback, shm, tcp, efa, nvlink,\n"
          "                     neuronlink) instead of the detected one\n"
          "  --ranks N          neuron: nccom-test's workers (-r); required there\n"
          "  --nodes N          neuron: nccom-test's instances (-N, default 1)\n"
          "  --out DIR          results folder (required)\n"
          "  -h, --help         this text\n"
          "\n"
          "Exit status: 0 ok, 1 a wrong value (the size fails and writes no rows) or a\n"
          "failed run, 2 usage, or a backend that cannot run here (the reason said).\n",
          f);
}

static const char *const LINKS[] = {"loopback", "shm", "tcp", "efa", "nvlink", "neuronlink", NULL};

struct args {
    const char *backend, *out, *link;
    struct tb_coll_opts o;
    int ranks, nodes;
};

/* The link of an MPI run, detected (see README "Collectives"). */
static void detect_link(const char *backend, int nodes, char *link, size_t len, char *how,
                        size_t hlen)
{
    const char *btl = getenv("OMPI_MCA_btl"), *mtl = getenv("OMPI_MCA_mtl");
    const char *pml = getenv("OMPI_MCA_pml"), *fi = getenv("FI_PROVIDER");
    if (!strcmp(backend, "nccl")) {
        const char *net = getenv("NCCL_NET");
        if (nodes > 1 && ((fi && strstr(fi, "efa")) || (net && strstr(net, "OFI")))) {
            snprintf(link, len, "efa");
            snprintf(how, hlen, "detected: %d nodes, FI_PROVIDER/NCCL_NET name EFA", nodes);
        } else if (nodes > 1) {
            snprintf(link, len, "tcp");
            snprintf(how, hlen, "detected: %d nodes, no EFA provider named (FI_PROVIDER)", nodes);
        } else {
            snprintf(link, len, "nvlink");
            snprintf(how, hlen, "assumed: one node's GPUs (NVLink or PCIe: not detected)");
        }
        return;
    }
    if (nodes <= 1) {
        if (btl && strstr(btl, "tcp") && !strstr(btl, "vader") && !strstr(btl, "sm")) {
            snprintf(link, len, "loopback");
            snprintf(how, hlen, "detected: one host, Open MPI btl '%.60s' (TCP over loopback)",
                     btl);
        } else {
            snprintf(link, len, "shm");
            snprintf(how, hlen, "detected: one host, Open MPI shared memory (btl %.60s)",
                     btl ? btl : "default: vader");
        }
        return;
    }
    if ((mtl && strstr(mtl, "ofi")) || (pml && strstr(pml, "cm")) || (fi && strstr(fi, "efa"))) {
        snprintf(link, len, "efa");
        snprintf(how, hlen,
                 "detected: %d hosts, Open MPI mtl %.40s / pml %.40s / FI_PROVIDER %.40s", nodes,
                 mtl ? mtl : "-", pml ? pml : "-", fi ? fi : "-");
    } else {
        snprintf(link, len, "tcp");
        snprintf(how, hlen, "detected: %d hosts, Open MPI btl %.60s", nodes,
                 btl ? btl : "default (tcp between hosts)");
    }
}

/* What every row of a run says (rank 0's): p's strings point into x. */
struct prov_buf {
    struct tb_platform plat;
    char host[512], device[512];
};

static void fill_prov(const struct args *a, struct tb_coll_prov *p, struct prov_buf *x, int nodes,
                      int nranks, int rpn, const char *software, const char *link,
                      const char *link_how, const char *device_extra, const char *notes)
{
    char err[1024] = "";
    if (tb_platform_detect(&x->plat, err, sizeof err) != 0)
        memset(&x->plat, 0, sizeof x->plat);
    tb_platform_describe(&x->plat, x->host, sizeof x->host);
    snprintf(x->device, sizeof x->device, "%.200s x%d ranks%s", device_extra, nranks,
             nodes > 1 ? " (rank 0's host)" : "");
    memset(p, 0, sizeof *p);
    p->executor = a->backend;
    p->target = tb_platform_target(&x->plat);
    p->host = x->host;
    p->device = x->device;
    p->software = software;
    p->link = link;
    p->link_how = link_how;
    p->nodes = nodes;
    p->ranks_per_node = rpn;
    p->nranks = nranks;
    p->iters = a->o.iters;
    p->warmup = a->o.warmup;
    p->notes = notes;
    if (!strcmp(a->backend, "neuron"))
        p->checked = "check: nccom-test --check reported no error";
}

/* A host link's raw bandwidth, measured on rank 0 before the sweep (the other ranks wait
 * for it in the first broadcast) and recorded with the rows (tb_coll_prov.host_bw): the
 * model's comparison and fit then use the run's host and time, not the machine that
 * reads the file. A failed triad is said and leaves it unrecorded (report and calibrate
 * then measure their own host, and say so). */
static void host_triad(const char *link, int nodes, struct tb_coll_prov *p)
{
    struct tb_perf_result r;
    char err[512] = "";
    /* the links the model costs with the host's memory bandwidth (tb_collective.h:
     * tcp across nodes takes the hosts' network instead) */
    if (strcmp(link, "shm") && strcmp(link, "loopback") && (strcmp(link, "tcp") || nodes > 1))
        return;
    if (tb_perf_host_triad(&r, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench collectives: the host's memory bandwidth was not recorded: %s\n",
                err);
        return;
    }
    p->host_bw = r.rate.median;
    p->host_bw_min = r.rate.min;
    p->host_bw_max = r.rate.max;
    p->host_bw_n = (int)r.rate.n;
}

/* DIR/results.csv into path, the folder made and its lock taken (held until the last
 * row is appended, so a second run on the folder waits, then skips what this one
 * recorded). Returns 0, or the exit status with the reason said. */
static int open_out(const struct args *a, struct tb_lock *lock, char *path, size_t len)
{
    char err[1024] = "";
    if (strlen(a->out) > 4000) {
        fprintf(stderr, "trnbench collectives: --out too long\n");
        return 2;
    }
    snprintf(path, len, "%s/results.csv", a->out);
    if (tb_mkdir_p(a->out, err, sizeof err) != 0 ||
        tb_results_lock(lock, a->out, "trnbench collectives", true, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench collectives: %s\n", err);
        tb_lock_release(lock);
        return 1;
    }
    return 0;
}

/* Rank 0, after each size (tb_coll_opts.size_done): that size's rows appended. */
struct recorder {
    const char *path;
    const struct tb_coll_prov *p;
    long rows;
};

static int record_size(void *ctx, const struct tb_coll_result *r, size_t k, char *err,
                       size_t errlen)
{
    struct recorder *w = ctx;
    struct tb_coll_result one = *r;
    long n;
    one.sizes = &r->sizes[k];
    one.nsizes = 1;
    n = tb_coll_rows(w->path, &one, w->p, err, errlen);
    if (n < 0)
        return -1;
    w->rows += n;
    return 0;
}

/* ---- mpi and nccl: every process a rank ---- */

/* Rank 0 marks the sizes recorded in path; every rank gets the marks (and whether rank 0
 * could read the file). Returns 0, or -1 with a message. */
static int share_recorded(const struct tb_comm_api *c, const char *path, struct tb_coll_result *res,
                          const struct tb_coll_prov *p, char *err, size_t errlen)
{
    size_t n = res->nsizes * 2 + 1;
    unsigned char *flags = calloc(n, 1);
    char berr[256] = "";
    int rc = 0;

    if (!flags)
        return tb_err(err, errlen, "out of memory");
    if (c->rank() == 0) {
        if (tb_coll_mark_recorded(path, res, p, err, errlen) < 0)
            flags[n - 1] = 1;
        for (size_t k = 0; k < res->nsizes; k++)
            for (int pl = 0; pl < 2; pl++)
                flags[k * 2 + (size_t)pl] = res->sizes[k].recorded[pl];
    }
    if (c->bcast(flags, n, 0, berr, sizeof berr) != 0) {
        rc = tb_err(err, errlen, "%s", berr);
    } else if (flags[n - 1]) {
        if (c->rank() != 0)
            tb_err(err, errlen, "rank 0 could not read '%.900s'", path);
        rc = -1;
    } else {
        for (size_t k = 0; k < res->nsizes; k++)
            for (int pl = 0; pl < 2; pl++)
                res->sizes[k].recorded[pl] = flags[k * 2 + (size_t)pl] != 0;
    }
    free(flags);
    return rc;
}

static int run_ranks(const struct args *a, int argc, char **argv)
{
    char why[1200] = "", err[1024] = "", sw[512] = "", ver[256] = "", link[32], how[300];
    char cpu[200], path[4200] = "";
    const struct tb_comm_api *c;
    struct tb_coll_engine e;
    struct tb_coll_result res = {0};
    struct tb_coll_opts o = a->o;
    struct tb_coll_prov p;
    struct prov_buf pb;
    struct recorder w = {path, &p, 0};
    struct tb_lock lock = {0};
    struct tb_nccl nccl;
    struct tb_platform plat;
    int rc = 0, rank, nodes, size, rpn;

    memset(&nccl, 0, sizeof nccl);
    snprintf(why, sizeof why, "trnbench collectives: --backend %s", a->backend);
    if (!(c = tb_comm_start(why, &argc, &argv, &rc)))
        return rc;
    rank = c->rank();
    size = c->size();
    nodes = c->nodes();
    c->library_version(ver, sizeof ver);
    if (!strcmp(a->backend, "nccl")) {
        if (tb_nccl_open(&nccl, c, &e, why, sizeof why) != 0) {
            if (rank == 0)
                fprintf(stderr, "trnbench collectives: --backend nccl: %s\n", why);
            c->finalize(err, sizeof err);
            return 2;
        }
        snprintf(sw, sizeof sw, "%s; %s", nccl.version, ver);
        snprintf(cpu, sizeof cpu, "%s", nccl.desc);
    } else {
        tb_coll_host_engine(&e, c);
        snprintf(sw, sizeof sw, "%s", ver);
        if (rank == 0 && tb_platform_detect(&plat, err, sizeof err) == 0 && plat.cpu_model[0])
            snprintf(cpu, sizeof cpu, "%.150s (host CPU)", plat.cpu_model);
        else
            snprintf(cpu, sizeof cpu, "host CPU");
    }
    if (a->link) {
        snprintf(link, sizeof link, "%s", a->link);
        snprintf(how, sizeof how, "stated (--link)");
    } else {
        detect_link(a->backend, nodes, link, sizeof link, how, sizeof how);
    }
    rpn = size % nodes == 0 ? size / nodes : 0;
    fill_prov(a, &p, &pb, nodes, size, rpn, sw, link, how, cpu,
              a->o.break_check ? "TRNBENCH_TEST_COLL_BREAK: a broken input on purpose" : NULL);
    if (rank == 0)
        host_triad(link, nodes, &p);
    /* rank 0 holds the folder's lock from before it reads what is recorded until the
     * last size is appended; the sizes recorded are left out on every rank */
    if (rank == 0)
        rc = open_out(a, &lock, path, sizeof path);
    if (c->bcast(&rc, sizeof rc, 0, err, sizeof err) != 0 || rc != 0) {
        rc = rc ? rc : 1;
        goto out;
    }
    if (tb_coll_sizes(&o, size, &res, err, sizeof err) != 0 ||
        share_recorded(c, path, &res, &p, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench collectives: rank %d: %s\n", rank, err);
        rc = rank == 0 ? 2 : 1;
        goto out;
    }
    o.size_done = record_size;
    o.ctx = &w;
    if (tb_coll_run(c, &e, &o, &res, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench collectives: rank %d: %s\n", rank, err);
        if (size > 1) {
            /* the other ranks may be waiting in a collective this one never joins:
             * end the job (the sizes appended so far stay; a rerun resumes) */
            fprintf(stderr, "trnbench collectives: rank %d ends the job (MPI_Abort)\n", rank);
            c->abort(1);
        }
        rc = 1;
        goto out;
    }
    if (rank == 0) {
        tb_coll_print(stdout, &res);
        fflush(stdout);
        fprintf(stderr, "trnbench collectives: %ld rows in '%s'\n", w.rows, path);
    }
    if (res.wrong > 0) {
        if (rank == 0)
            fprintf(stderr,
                    "trnbench collectives: %ld wrong values: the sizes that hold them failed\n",
                    res.wrong);
        rc = 1;
    }
out:
    tb_lock_release(&lock);
    tb_coll_result_release(&res);
    tb_nccl_close(&nccl);
    c->finalize(err, sizeof err);
    return rc;
}

/* ---- neuron: nccom-test as a child ---- */

static int run_neuron(const struct args *a)
{
    struct tb_nccom_opts o = {0};
    struct tb_coll_result res = {0};
    struct tb_nccom_format fmt;
    char err[1400] = "", tool[1024] = "", sw[1200], link[32], how[300], path[4200];
    char notes[1024], unit[96];
    struct tb_coll_prov p;
    struct prov_buf pb;
    static struct tb_neuron neuron; /* large: not on the stack */
    struct tb_neuron_lnc lnc;
    struct tb_lock lock = {0};
    long n = 0, marked = 0;
    int rc;

    if (a->ranks < 1) {
        fprintf(stderr, "trnbench collectives: --backend neuron needs --ranks N (nccom-test -r)\n");
        return 2;
    }
    o.op = a->o.op;
    o.ranks = a->ranks;
    o.nodes = a->nodes;
    o.min_bytes = a->o.min_bytes;
    o.max_bytes = a->o.max_bytes;
    o.step_factor = a->o.step_factor;
    o.iters = a->o.iters;
    o.warmup = a->o.warmup;
    o.check = a->o.check;
    if (!tb_nccom_op(o.op)) {
        fprintf(stderr, "trnbench collectives: --backend neuron: nccom-test has no %s\n",
                tb_coll_op_name(o.op));
        return 2;
    }
    rc = tb_nccom_run(&o, &res, &fmt, tool, sizeof tool, err, sizeof err);
    if (rc == 1) {
        fprintf(stderr, "trnbench collectives: --backend neuron: %s\n", err);
        return 2;
    }
    if (rc != 0) {
        fprintf(stderr, "trnbench collectives: %s\n", err);
        return 1; /* bad input or not, the measurement failed */
    }
    if (a->link) {
        snprintf(link, sizeof link, "%s", a->link);
        snprintf(how, sizeof how, "stated (--link)");
    } else if (a->nodes > 1) {
        snprintf(link, sizeof link, "efa");
        snprintf(how, sizeof how, "assumed: %d Trainium instances, EFA between them (not detected)",
                 a->nodes);
    } else {
        snprintf(link, sizeof link, "neuronlink");
        snprintf(how, sizeof how, "assumed: one instance's devices over NeuronLink (not detected)");
    }
    snprintf(sw, sizeof sw, "nccom-test (%.1000s)", tool);
    fill_prov(a, &p, &pb, a->nodes, a->ranks, a->ranks % a->nodes == 0 ? a->ranks / a->nodes : 0,
              sw, link, how, "Neuron cores", NULL);
    /* nccom-test's ranks are logical NeuronCores: the LNC they were counted at, and
     * whether neuron-ls stated it or it is guessed */
    if (tb_neuron_detect(&neuron, &pb.plat, 0, err, sizeof err) != 0)
        fprintf(stderr, "trnbench collectives: %s\n", err);
    tb_neuron_lnc_resolve(&neuron, &pb.plat, &lnc);
    if (fmt.unit[0])
        snprintf(unit, sizeof unit, "its algbw printed in %s%s", fmt.unit,
                 strcmp(fmt.unit, "GB/s") ? "" : " (10^9 B/s)");
    else
        snprintf(unit, sizeof unit, "the unit of its algbw not told (every one below 0.5)");
    snprintf(notes, sizeof notes,
             "nccom-test's %s (time column %s; %s; bandwidths recomputed as size / time in "
             "GB/s); out of place only%s%s",
             fmt.json ? "JSON report" : "table", fmt.time_col, unit,
             lnc.lnc > 0 ? "; ranks are logical NeuronCores at " : "", lnc.lnc > 0 ? lnc.how : "");
    p.notes = notes;
    tb_coll_print(stdout, &res);
    fflush(stdout);
    /* nccom-test measured every size; the ones recorded before are not added again */
    if ((rc = open_out(a, &lock, path, sizeof path)) == 0) {
        if ((marked = tb_coll_mark_recorded(path, &res, &p, err, sizeof err)) < 0 ||
            (n = tb_coll_rows(path, &res, &p, err, sizeof err)) < 0) {
            fprintf(stderr, "trnbench collectives: %s\n", err);
            rc = 1;
        } else {
            fprintf(stderr, "trnbench collectives: %ld rows in '%s'", n, path);
            if (marked)
                fprintf(stderr, " (%ld placements recorded before: not added again)", marked);
            fputc('\n', stderr);
        }
        tb_lock_release(&lock);
    }
    tb_coll_result_release(&res);
    return rc;
}

/* ---- the command ---- */

/* --min-bytes, --max-bytes: *(size_t *)dst = a size of at least 1 byte. 0 is refused:
 * the sizes double from --min-bytes, and 0 doubled stays 0 (a run of --min-bytes 0 used
 * to loop for ever). */
static int take_bytes(const struct tb_opt *o, const char *v, char *err, size_t errlen)
{
    size_t n;
    if (tb_coll_parse_bytes(v, &n) != 0 || n == 0)
        return tb_err(err, errlen, "'%s' is not a size in bytes of at least 1 (8, 64K, 1M, 1G)", v);
    *(size_t *)o->dst = n;
    return 0;
}

int tb_cmd_collectives(int argc, char **argv)
{
    struct args a;
    const char *op = NULL;
    long iters = 20, warmup = 5, ranks = 0, nodes = 1;
    bool no_check = false;
    int link_k = -1, rc;
    const struct tb_opt opts[] = {
        TB_OPT_STR("backend", &a.backend),
        TB_OPT_STR("op", &op),
        TB_OPT_FN("min-bytes", take_bytes, &a.o.min_bytes),
        TB_OPT_FN("max-bytes", take_bytes, &a.o.max_bytes),
        TB_OPT_DOUBLE("step-factor", &a.o.step_factor, 1.0001, 1024),
        TB_OPT_LONG("iters", &iters, 1, 1000000),
        TB_OPT_LONG("warmup", &warmup, 0, 1000000),
        TB_OPT_FLAG("no-check", &no_check),
        TB_OPT_CHOICE("link", &link_k, LINKS),
        TB_OPT_LONG("ranks", &ranks, 1, 1000000),
        TB_OPT_LONG("nodes", &nodes, 1, 1000000),
        TB_OPT_STR("out", &a.out),
        TB_OPT_END,
    };

    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--calibrate") || !strncmp(argv[i], "--calibrate=", 12))
            return tb_cmd_calibrate(argc, argv);
    memset(&a, 0, sizeof a);
    a.o.min_bytes = 8;
    a.o.max_bytes = (size_t)1 << 30;
    a.o.step_factor = 2;
    if ((rc = tb_cli_parse("collectives", argc, argv, opts, usage)) != TB_CLI_GO)
        return rc;
    a.o.iters = (int)iters;
    a.o.warmup = (int)warmup;
    a.o.check = !no_check;
    a.ranks = (int)ranks;
    a.nodes = (int)nodes;
    a.link = link_k >= 0 ? LINKS[link_k] : NULL;
    if (optind < argc) {
        fprintf(stderr, "trnbench collectives: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!a.backend ||
        (strcmp(a.backend, "mpi") && strcmp(a.backend, "nccl") && strcmp(a.backend, "neuron"))) {
        fprintf(stderr, "trnbench collectives: --backend: %s%s%s (mpi, nccl or neuron)\n",
                a.backend ? "unknown backend '" : "missing", a.backend ? a.backend : "",
                a.backend ? "'" : "");
        return 2;
    }
    if (!op || tb_coll_op_parse(op, &a.o.op) != 0) {
        fprintf(stderr,
                "trnbench collectives: --op: %s%s%s (all-reduce, all-gather, reduce-scatter, "
                "all-to-all, sendrecv)\n",
                op ? "unknown operation '" : "missing", op ? op : "", op ? "'" : "");
        return 2;
    }
    if (!a.out || !*a.out) {
        fprintf(stderr, "trnbench collectives: --out DIR is required\n");
        return 2;
    }
    if (a.o.min_bytes > a.o.max_bytes) {
        fprintf(stderr, "trnbench collectives: --min-bytes %zu is above --max-bytes %zu\n",
                a.o.min_bytes, a.o.max_bytes);
        return 2;
    }
    a.o.break_check = tb_cli_test_switch("collectives", "TRNBENCH_TEST_COLL_BREAK", true);
    a.o.fail_at = tb_cli_test_step("collectives", "TRNBENCH_TEST_RANK_FAIL", true);
    a.o.fail_rank = 1;
    if (!strcmp(a.backend, "neuron"))
        return run_neuron(&a);
    return run_ranks(&a, argc, argv);
}
