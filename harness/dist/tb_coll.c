/* harness/dist/tb_coll.c: see tb_coll.h. */
#include "tb_coll.h"

#include "tb_csv.h"
#include "tb_results.h"
#include "tb_stats.h"
#include "tb_util.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- operations ---- */

static const char *const OP_NAMES[TB_COLL_NOPS] = {"all-reduce", "all-gather", "reduce-scatter",
                                                   "all-to-all", "sendrecv"};

const char *tb_coll_op_name(enum tb_coll_op op)
{
    return (unsigned)op < TB_COLL_NOPS ? OP_NAMES[op] : "?";
}

int tb_coll_op_parse(const char *s, enum tb_coll_op *op)
{
    for (int i = 0; i < TB_COLL_NOPS; i++)
        if (!strcmp(s, OP_NAMES[i])) {
            *op = (enum tb_coll_op)i;
            return 0;
        }
    return -1;
}

double tb_coll_busbw_factor(enum tb_coll_op op, int n)
{
    if (n < 1)
        return 0;
    switch (op) {
    case TB_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case TB_COLL_ALL_GATHER:
    case TB_COLL_REDUCE_SCATTER:
    case TB_COLL_ALL_TO_ALL:
        return (double)(n - 1) / n;
    case TB_COLL_SENDRECV:
        return 1.0;
    }
    return 0;
}

int tb_coll_parse_bytes(const char *s, size_t *bytes)
{
    char *end;
    unsigned long long v, mul = 1;

    if (!s || !isdigit((unsigned char)s[0]))
        return -1;
    v = strtoull(s, &end, 10);
    if (*end) {
        if (!strcasecmp(end, "k") || !strcasecmp(end, "kb") || !strcasecmp(end, "kib"))
            mul = 1ULL << 10;
        else if (!strcasecmp(end, "m") || !strcasecmp(end, "mb") || !strcasecmp(end, "mib"))
            mul = 1ULL << 20;
        else if (!strcasecmp(end, "g") || !strcasecmp(end, "gb") || !strcasecmp(end, "gib"))
            mul = 1ULL << 30;
        else
            return -1;
    }
    if (v > (1ULL << 40) / mul)
        return -1;
    *bytes = (size_t)(v * mul);
    return 0;
}

/* ---- buffers and values ---- */

/* The value rank r puts at element i of its input: a whole number in [0, 60]. */
static float val(int r, size_t i)
{
    return (float)(((uint64_t)r * 7 + i * 3 + (i >> 12)) % 61);
}

/* Elements per buffer of one size: the send and receive counts, and the count the
 * engine's run takes. */
struct shape {
    size_t send, recv, run; /* elements */
};

static struct shape shape_of(enum tb_coll_op op, size_t elems, int n)
{
    struct shape s = {elems, elems, elems};
    size_t c = elems / (size_t)n;
    switch (op) {
    case TB_COLL_ALL_GATHER:
        s = (struct shape){c, c * (size_t)n, c};
        break;
    case TB_COLL_REDUCE_SCATTER:
        s = (struct shape){c * (size_t)n, c, c};
        break;
    case TB_COLL_ALL_TO_ALL:
        s = (struct shape){c * (size_t)n, c * (size_t)n, c};
        break;
    default:
        break;
    }
    return s;
}

/* nccl-tests' bytes of a shape: see tb_coll.h. */
static size_t shape_bytes(enum tb_coll_op op, struct shape s)
{
    switch (op) {
    case TB_COLL_ALL_GATHER:
    case TB_COLL_ALL_TO_ALL:
        return s.recv * sizeof(float);
    case TB_COLL_REDUCE_SCATTER:
        return s.send * sizeof(float);
    default:
        return s.send * sizeof(float);
    }
}

struct bufs {
    const struct tb_coll_engine *e;
    void *send, *recv; /* the engine's */
    float *host;       /* staging for engines with put/get: the larger of the two */
};

static int buf_put(const struct bufs *b, void *dst, const float *src, size_t n, char *err,
                   size_t errlen)
{
    if (!b->e->put) {
        if (dst != (const void *)src)
            memcpy(dst, src, n * sizeof *src);
        return 0;
    }
    return b->e->put(b->e->ctx, dst, src, n * sizeof *src, err, errlen);
}

/* The input of rank r for an operation: send elements (in place: laid out in the receive
 * buffer as tb_comm.h says). */
static void fill(enum tb_coll_op op, int r, int n, struct shape s, bool in_place, float *x)
{
    if (in_place && op == TB_COLL_ALL_GATHER) {
        for (size_t i = 0; i < s.send; i++)
            x[(size_t)r * s.send + i] = val(r, i);
        (void)n;
        return;
    }
    for (size_t i = 0; i < s.send; i++)
        x[i] = val(r, i);
}

/* The exact value of element i of rank r's result. */
static float expect(enum tb_coll_op op, int r, int n, struct shape s, size_t i)
{
    double sum = 0;
    switch (op) {
    case TB_COLL_ALL_REDUCE:
        for (int k = 0; k < n; k++)
            sum += val(k, i);
        return (float)sum;
    case TB_COLL_ALL_GATHER:
        return val((int)(i / s.run), i % s.run);
    case TB_COLL_REDUCE_SCATTER:
        for (int k = 0; k < n; k++)
            sum += val(k, (size_t)r * s.run + i);
        return (float)sum;
    case TB_COLL_ALL_TO_ALL: /* chunk j came from rank j, which sent it chunk r */
        return val((int)(i / s.run), (size_t)r * s.run + i % s.run);
    case TB_COLL_SENDRECV:
        return val((r + n - 1) % n, i);
    }
    return NAN;
}

/* Count the wrong elements of rank r's result res (host memory). */
static long count_wrong(enum tb_coll_op op, int r, int n, struct shape s, bool in_place,
                        bool rs_at_rank, const float *res)
{
    size_t len = s.recv, off = 0;
    long wrong = 0;
    if (op == TB_COLL_REDUCE_SCATTER) {
        len = s.run;
        if (in_place && rs_at_rank)
            off = (size_t)r * s.run;
    }
    for (size_t i = 0; i < len; i++)
        if (res[off + i] != expect(op, r, n, s, i))
            wrong++;
    return wrong;
}

/* ---- the run ---- */

static int run_once(const struct tb_coll_engine *e, enum tb_coll_op op, const struct bufs *b,
                    bool in_place, struct shape s, char *err, size_t errlen)
{
    return e->run(e->ctx, op, in_place ? NULL : b->send, b->recv, s.run, err, errlen);
}

/* One placement of one size: timing, then the check. */
static int measure(const struct tb_comm_api *c, const struct tb_coll_engine *e,
                   const struct tb_coll_opts *o, const struct bufs *b, struct shape s,
                   bool in_place, double *t, struct tb_coll_size *z, int pl, char *err,
                   size_t errlen)
{
    int r = c->rank(), n = c->size();
    float *x = b->e->put ? b->host : (float *)(in_place ? b->recv : b->send);
    struct tb_stats st;
    double wrong = 0;

    fill(o->op, r, n, s, in_place, x);
    if (buf_put(b, in_place ? b->recv : b->send, x, in_place ? s.recv : s.send, err, errlen))
        return -1;
    for (int i = 0; i < o->warmup; i++)
        if (run_once(e, o->op, b, in_place, s, err, errlen))
            return -1;
    if (c->barrier(err, errlen))
        return -1;
    for (int i = 0; i < o->iters; i++) {
        double t0 = c->wtime();
        if (run_once(e, o->op, b, in_place, s, err, errlen))
            return -1;
        t[i] = c->wtime() - t0;
    }
    /* the slowest rank's time of each iteration */
    if (c->all_reduce(NULL, t, (size_t)o->iters, TB_COMM_F64, TB_COMM_MAX, err, errlen))
        return -1;
    if (tb_stats_compute(&st, t, (size_t)o->iters, err, errlen))
        return -1;
    z->time_us[pl] = st.mean * 1e6;
    z->min_us[pl] = st.min * 1e6;
    z->max_us[pl] = st.max * 1e6;
    z->stddev_us[pl] = st.stddev * 1e6;
    z->algbw_gbs[pl] = st.mean > 0 ? (double)z->bytes / st.mean / 1e9 : 0;
    z->wrong[pl] = -1;
    if (!o->check)
        return 0;

    fill(o->op, r, n, s, in_place, x);
    if (o->break_check && r == 0)
        x[0] += 1.0f; /* in place too: rank 0's chunk of an all-gather is first */
    if (buf_put(b, in_place ? b->recv : b->send, x, in_place ? s.recv : s.send, err, errlen))
        return -1;
    if (run_once(e, o->op, b, in_place, s, err, errlen))
        return -1;
    if (b->e->get) {
        if (b->e->get(b->e->ctx, b->host, b->recv, s.recv * sizeof(float), err, errlen))
            return -1;
        x = b->host;
    } else {
        x = b->recv;
    }
    wrong = (double)count_wrong(o->op, r, n, s, in_place, e->rs_inplace_at_rank, x);
    if (c->all_reduce(NULL, &wrong, 1, TB_COMM_F64, TB_COMM_SUM, err, errlen))
        return -1;
    z->wrong[pl] = (long)wrong;
    return 0;
}

int tb_coll_sizes(const struct tb_coll_opts *o, int n, struct tb_coll_result *res, char *err,
                  size_t errlen)
{
    size_t cap = 0;

    memset(res, 0, sizeof *res);
    res->op = o->op;
    res->nranks = n;
    res->factor = tb_coll_busbw_factor(o->op, n);
    if (n < 1 || o->iters < 1 || o->warmup < 0 || !(o->step_factor > 1) || o->min_bytes < 1 ||
        o->min_bytes > o->max_bytes)
        return tb_err(err, errlen,
                      "bad options: %d ranks, iters %d, warmup %d, step factor %g, %zu..%zu B", n,
                      o->iters, o->warmup, o->step_factor, o->min_bytes, o->max_bytes);
    for (double v = (double)o->min_bytes; v <= (double)o->max_bytes * (1 + 1e-12);
         v *= o->step_factor) {
        size_t elems = (size_t)v / sizeof(float);
        struct shape s;
        size_t bytes;
        if (o->op != TB_COLL_ALL_REDUCE && o->op != TB_COLL_SENDRECV)
            elems -= elems % (size_t)n;
        s = shape_of(o->op, elems, n);
        bytes = shape_bytes(o->op, s);
        if (s.run == 0 || (res->nsizes && res->sizes[res->nsizes - 1].bytes == bytes))
            continue;
        if (res->nsizes == cap) {
            size_t nc = cap ? cap * 2 : 32;
            struct tb_coll_size *q = realloc(res->sizes, nc * sizeof *q);
            if (!q) {
                tb_coll_result_release(res);
                return tb_err(err, errlen, "out of memory");
            }
            res->sizes = q;
            cap = nc;
        }
        memset(&res->sizes[res->nsizes], 0, sizeof res->sizes[0]);
        res->sizes[res->nsizes].bytes = bytes;
        res->sizes[res->nsizes].count = bytes / sizeof(float);
        res->sizes[res->nsizes].wrong[0] = res->sizes[res->nsizes].wrong[1] = -1;
        res->nsizes++;
        if (o->step_factor * v > (double)(SIZE_MAX / 4))
            break;
    }
    if (!res->nsizes)
        return tb_err(err, errlen,
                      "no size between %zu and %zu bytes holds one 4-byte element per rank (%d "
                      "ranks)",
                      o->min_bytes, o->max_bytes, n);
    return 0;
}

/* Whether placement pl of z is left out: no such placement, or recorded. */
static bool left_out(const struct tb_coll_engine *e, enum tb_coll_op op,
                     const struct tb_coll_size *z, int pl)
{
    /* MPI_Sendrecv may not alias its buffers: sendrecv has no in-place column (nor NCCL's
     * all-to-all) */
    if (pl == 1 &&
        (op == TB_COLL_SENDRECV || (op == TB_COLL_ALL_TO_ALL && e->no_inplace_all_to_all)))
        return true;
    return z->recorded[pl];
}

int tb_coll_run(const struct tb_comm_api *c, const struct tb_coll_engine *e,
                const struct tb_coll_opts *o, struct tb_coll_result *res, char *err, size_t errlen)
{
    int n = c->size(), rc = -1;
    size_t maxe = 0;
    long measured = 0;
    struct bufs b = {e, NULL, NULL, NULL};
    double *t = NULL;

    if (!res->nsizes && tb_coll_sizes(o, n, res, err, errlen) != 0)
        return -1;
    /* the buffers: for the largest size still to run */
    for (size_t k = 0; k < res->nsizes; k++) {
        struct shape s = shape_of(o->op, res->sizes[k].bytes / sizeof(float), n);
        if (left_out(e, o->op, &res->sizes[k], 0) && left_out(e, o->op, &res->sizes[k], 1))
            continue;
        maxe = s.send > maxe ? s.send : maxe;
        maxe = s.recv > maxe ? s.recv : maxe;
    }
    if (maxe == 0) { /* everything recorded */
        rc = 0;
        goto out;
    }
    if (e->alloc(e->ctx, maxe * sizeof(float), &b.send, err, errlen) ||
        e->alloc(e->ctx, maxe * sizeof(float), &b.recv, err, errlen))
        goto out;
    if (e->put) {
        b.host = tb_alloc_array(maxe, sizeof(float));
        if (!b.host) {
            tb_err(err, errlen, "out of memory for %zu bytes of staging", maxe * sizeof(float));
            goto out;
        }
    }
    t = tb_alloc_array((size_t)o->iters, sizeof *t);
    if (!t) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < res->nsizes; k++) {
        struct tb_coll_size *z = &res->sizes[k];
        /* back from bytes to the shape: all-gather's bytes are its receive buffer, and
         * so on (shape_bytes) */
        struct shape s = shape_of(o->op, z->bytes / sizeof(float), n);
        char berr[256] = "";
        int done = 1;
        if (left_out(e, o->op, z, 0) && left_out(e, o->op, z, 1))
            continue;
        if (o->fail_at > 0 && ++measured == o->fail_at && c->rank() == o->fail_rank) {
            tb_err(err, errlen,
                   "TRNBENCH_TEST_RANK_FAIL: rank %d fails on its own at its size %ld (%zu B), "
                   "as a test asked",
                   o->fail_rank, o->fail_at, z->bytes);
            goto out;
        }
        for (int pl = 0; pl < 2; pl++) {
            if (left_out(e, o->op, z, pl)) {
                z->ran[pl] = false;
                z->wrong[pl] = -1;
                continue;
            }
            if (measure(c, e, o, &b, s, pl == 1, t, z, pl, err, errlen))
                goto out;
            z->ran[pl] = true;
        }
        for (int pl = 0; pl < 2; pl++) {
            z->busbw_gbs[pl] = z->algbw_gbs[pl] * res->factor;
            if (z->wrong[pl] > 0)
                res->wrong += z->wrong[pl];
        }
        if (!o->size_done)
            continue;
        /* rank 0 records the size; every rank learns whether it could */
        if (c->rank() == 0 && o->size_done(o->ctx, res, k, err, errlen) != 0)
            done = 0;
        if (c->bcast(&done, sizeof done, 0, berr, sizeof berr) != 0) {
            if (done)
                tb_err(err, errlen, "%s", berr);
            goto out;
        }
        if (!done) {
            if (c->rank() != 0)
                tb_err(err, errlen, "rank 0 could not record the %zu-byte size: stopped there",
                       z->bytes);
            goto out;
        }
    }
    rc = 0;
out:
    if (b.send)
        e->release(e->ctx, b.send);
    if (b.recv)
        e->release(e->ctx, b.recv);
    free(b.host);
    free(t);
    if (rc)
        tb_coll_result_release(res);
    return rc;
}

void tb_coll_result_release(struct tb_coll_result *r)
{
    free(r->sizes);
    r->sizes = NULL;
    r->nsizes = 0;
}

/* ---- nccl-tests' table ---- */

static void print_wrong(FILE *f, long w)
{
    if (w < 0)
        fprintf(f, " %6s", "N/A");
    else
        fprintf(f, " %6ld", w);
}

void tb_coll_print(FILE *f, const struct tb_coll_result *r)
{
    double sum = 0;
    int nsum = 0;
    size_t nrec = 0;
    const char *redop =
        r->op == TB_COLL_ALL_REDUCE || r->op == TB_COLL_REDUCE_SCATTER ? "sum" : "none";
    fprintf(f, "# %s, %d ranks, busbw factor %.4f\n#\n", tb_coll_op_name(r->op), r->nranks,
            r->factor);
    fprintf(f, "#%64s%35s\n", "out-of-place", "in-place");
    fprintf(f, "#%11s %13s %9s %7s %6s %8s %7s %7s %6s %8s %7s %7s %6s\n", "size", "count", "type",
            "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
            "#wrong");
    fprintf(f, "#%11s %13s %9s %7s %6s %8s %7s %7s %6s %8s %7s %7s %6s\n", "(B)", "(elements)", "",
            "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    for (size_t k = 0; k < r->nsizes; k++) {
        const struct tb_coll_size *z = &r->sizes[k];
        if (z->recorded[0] || z->recorded[1])
            nrec++;
        if (!z->ran[0] && !z->ran[1])
            continue; /* recorded before: not measured again */
        fprintf(f, "%12zu %13zu %9s %7s %6d", z->bytes, z->count, "float", redop, -1);
        for (int pl = 0; pl < 2; pl++) {
            if (!z->ran[pl]) {
                fprintf(f, " %8s %7s %7s %6s", "N/A", "N/A", "N/A", "N/A");
                continue;
            }
            fprintf(f, " %8.2f %7.2f %7.2f", z->time_us[pl], z->algbw_gbs[pl], z->busbw_gbs[pl]);
            print_wrong(f, z->wrong[pl]);
            sum += z->busbw_gbs[pl];
            nsum++;
        }
        fputc('\n', f);
    }
    if (nrec)
        fprintf(f, "# Already recorded     : %zu of %zu sizes (not measured again)\n", nrec,
                r->nsizes);
    fprintf(f, "# Out of bounds values : %ld %s\n", r->wrong, r->wrong ? "FAILED" : "OK");
    fprintf(f, "# Avg bus bandwidth    : %g\n#\n", nsum ? sum / nsum : 0);
}

/* ---- results.csv ---- */

static const char *const PLACEMENT[2] = {"outofplace", "inplace"};

void tb_coll_run_id(char *buf, size_t len, enum tb_coll_op op, size_t bytes, int pl,
                    const struct tb_coll_prov *p)
{
    if (p->ranks_per_node > 0)
        snprintf(buf, len, "collective/%s/%zuB/%s/%s/%s/n%dx%d", tb_coll_op_name(op), bytes,
                 PLACEMENT[pl & 1], p->executor, p->link, p->nodes, p->ranks_per_node);
    else
        snprintf(buf, len, "collective/%s/%zuB/%s/%s/%s/n%dr%d", tb_coll_op_name(op), bytes,
                 PLACEMENT[pl & 1], p->executor, p->link, p->nodes, p->nranks);
}

long tb_coll_mark_recorded(const char *path, struct tb_coll_result *r, const struct tb_coll_prov *p,
                           char *err, size_t errlen)
{
    struct tb_csv_table t;
    long marked = 0;
    int col;

    if (!tb_file_exists(path))
        return 0;
    if (tb_csv_load(&t, path, err, errlen) != 0)
        return -1;
    col = tb_csv_col(&t, "run_id");
    if (col < 0) {
        tb_csv_release(&t);
        return tb_err(err, errlen, "%s: no run_id column", path);
    }
    for (size_t k = 0; k < r->nsizes; k++)
        for (int pl = 0; pl < 2; pl++) {
            char id[512];
            tb_coll_run_id(id, sizeof id, r->op, r->sizes[k].bytes, pl, p);
            for (size_t row = 0; row < t.nrows && !r->sizes[k].recorded[pl]; row++)
                r->sizes[k].recorded[pl] = !strcmp(tb_csv_get(&t, row, col), id);
            marked += r->sizes[k].recorded[pl];
        }
    tb_csv_release(&t);
    return marked;
}

long tb_coll_rows(const char *path, const struct tb_coll_result *r, const struct tb_coll_prov *p,
                  char *err, size_t errlen)
{
    enum { NMETRIC = 4, CELL = 512 };
    struct tb_result_row *rows = NULL;
    char(*cells)[12][CELL] = NULL; /* per row: the numbers and the names built for it */
    char(*notes)[1536] = NULL;
    char now[32], nodes[16], rpn[16], nranks[16], n[16], w[16], instances[16], hn[16];
    int nmetric = p->host_bw > 0 ? 4 : 3;
    const char *op = tb_coll_op_name(r->op);
    char workload[64], precision[8] = "fp32", how[300];
    size_t nrows = 0, cap = r->nsizes * 2 * NMETRIC;
    long rc = -1;

    if (!cap)
        return 0;
    rows = calloc(cap, sizeof *rows);
    cells = calloc(cap, sizeof *cells);
    notes = calloc(cap, sizeof *notes);
    if (!rows || !cells || !notes) {
        tb_err(err, errlen, "out of memory for %zu rows", cap);
        goto out;
    }
    tb_utc_now(now, sizeof now);
    snprintf(nodes, sizeof nodes, "%d", p->nodes);
    snprintf(instances, sizeof instances, "%d", p->nodes > 0 ? p->nodes : 1);
    snprintf(rpn, sizeof rpn, "%d", p->ranks_per_node);
    snprintf(nranks, sizeof nranks, "%d", p->nranks);
    snprintf(n, sizeof n, "%d", p->iters);
    snprintf(w, sizeof w, "%d", p->warmup);
    snprintf(hn, sizeof hn, "%d", p->host_bw_n);
    snprintf(workload, sizeof workload, "collective/%s", op);
    if (r->time_how[0])
        snprintf(how, sizeof how, "%s", r->time_how);
    else
        snprintf(how, sizeof how, "mean over %d iterations of the slowest of %d ranks' time",
                 p->iters, p->nranks);
    for (size_t k = 0; k < r->nsizes; k++) {
        const struct tb_coll_size *z = &r->sizes[k];
        for (int pl = 0; pl < 2; pl++) {
            if (!z->ran[pl] || z->recorded[pl] || z->wrong[pl] > 0)
                continue; /* not run, recorded before, or a failed check: nothing to add */
            for (int m = 0; m < nmetric; m++) {
                struct tb_result_row *row = &rows[nrows];
                char(*c)[CELL] = cells[nrows];
                char *note = notes[nrows];
                double value, lo, hi, mean = NAN, sd = NAN, p90 = NAN, p99 = NAN;
                const char *metric, *unit = m == 2 ? "us" : "GB/s";
                double f = m == 0 ? r->factor : 1.0;
                if (m < 2) {
                    metric = m == 0 ? "busbw_gbyte_per_s" : "algbw_gbyte_per_s";
                    value = (m == 0 ? z->busbw_gbs : z->algbw_gbs)[pl];
                    /* the spread of a bandwidth from the spread of the times */
                    lo = z->max_us[pl] > 0 ? (double)z->bytes / (z->max_us[pl] * 1e3) * f : NAN;
                    hi = z->min_us[pl] > 0 ? (double)z->bytes / (z->min_us[pl] * 1e3) * f : NAN;
                } else if (m == 3) {
                    metric = "host_mem_gbyte_per_s";
                    value = p->host_bw / 1e9;
                    lo = p->host_bw_min / 1e9;
                    hi = p->host_bw_max / 1e9;
                } else {
                    metric = "latency_us";
                    value = z->time_us[pl];
                    lo = z->min_us[pl] > 0 ? z->min_us[pl] : NAN;
                    hi = z->max_us[pl] > 0 ? z->max_us[pl] : NAN;
                    /* the mean column holds a mean only: a percentile or a time whose
                     * statistic is not known stays in value, said in the notes */
                    if (r->time_stat == TB_COLL_STAT_MEAN) {
                        mean = z->time_us[pl];
                        sd = z->stddev_us[pl];
                    }
                    p90 = z->p90_us[pl] > 0 ? z->p90_us[pl] : NAN;
                    p99 = z->p99_us[pl] > 0 ? z->p99_us[pl] : NAN;
                }
                tb_coll_run_id(c[0], CELL, r->op, z->bytes, pl, p);
                snprintf(c[1], CELL, "%.6g", value);
                snprintf(c[2], CELL, "%.6g", lo);
                snprintf(c[3], CELL, "%.6g", hi);
                snprintf(c[4], CELL, "%.6g", mean);
                snprintf(c[5], CELL, "%.6g", sd);
                snprintf(c[6], CELL, "%zuB/%s", z->bytes, PLACEMENT[pl]);
                snprintf(c[7], CELL, "%zu", z->bytes);
                snprintf(c[8], CELL, "%.6g", p90);
                snprintf(c[9], CELL, "%.6g", p99);
                if (m == 3)
                    snprintf(note, sizeof notes[0],
                             "the host's memory bandwidth before the sweep: rank 0's STREAM "
                             "triad, 1 thread, 3 x 32 MiB, median of %d (the model's raw "
                             "bandwidth for link %s)",
                             p->host_bw_n, p->link);
                else
                    snprintf(note, sizeof notes[0],
                             "%s; time: %s; busbw factor %.4f; link %s (%s)%s%s",
                             z->wrong[pl] != 0 ? "not checked (--no-check)"
                             : p->checked      ? p->checked
                                               : "check: every element exact",
                             how, r->factor, p->link, p->link_how, p->notes ? "; " : "",
                             p->notes ? p->notes : "");
                row->col[TB_COL_RUN_ID] = c[0];
                row->col[TB_COL_PROVENANCE] = "measured";
                row->col[TB_COL_TARGET] = p->target;
                row->col[TB_COL_INSTANCES] = instances;
                row->col[TB_COL_HOST] = p->host;
                row->col[TB_COL_EXECUTOR] = p->executor;
                row->col[TB_COL_MODEL] = op;
                row->col[TB_COL_PHASE] = "collective";
                row->col[TB_COL_PRECISION] = precision;
                row->col[TB_COL_METRIC] = metric;
                row->col[TB_COL_VALUE] = c[1];
                row->col[TB_COL_UNIT] = unit;
                row->col[TB_COL_N] = m == 3 ? hn : n;
                row->col[TB_COL_WARMUP] = m == 3 ? "1" : w;
                row->col[TB_COL_MIN] = isnan(lo) ? NULL : c[2];
                row->col[TB_COL_MAX] = isnan(hi) ? NULL : c[3];
                row->col[TB_COL_MEAN] = isnan(mean) ? NULL : c[4];
                row->col[TB_COL_STDDEV] = isnan(sd) ? NULL : c[5];
                row->col[TB_COL_P90] = isnan(p90) ? NULL : c[8];
                row->col[TB_COL_P99] = isnan(p99) ? NULL : c[9];
                row->col[TB_COL_TIMESTAMP] = now;
                row->col[TB_COL_COMMIT] = tb_version_commit();
                row->col[TB_COL_COMPILER] = tb_version_compiler();
                row->col[TB_COL_CFLAGS] = tb_version_cflags();
                row->col[TB_COL_BLAS] = p->software;
                row->col[TB_COL_COUNTERS] = "unavailable: collectives record no counters";
                row->col[TB_COL_SOURCE] = p->source ? p->source : "trnbench";
                row->col[TB_COL_NOTES] = note;
                row->col[TB_COL_WORKLOAD] = workload;
                row->col[TB_COL_CONFIG] = c[6];
                row->col[TB_COL_DEVICE] = p->device;
                row->col[TB_COL_NODES] = nodes;
                row->col[TB_COL_RANKS_PER_NODE] = p->ranks_per_node > 0 ? rpn : NULL;
                row->col[TB_COL_LINK] = p->link;
                row->col[TB_COL_BYTES] = c[7];
                nrows++;
            }
        }
    }
    if (nrows && tb_results_append(path, rows, nrows, err, errlen) != 0)
        goto out;
    rc = (long)nrows;
out:
    free(rows);
    free(cells);
    free(notes);
    return rc;
}

/* ---- the host engine: MPI on host memory ---- */

static int host_alloc(void *ctx, size_t bytes, void **p, char *err, size_t errlen)
{
    (void)ctx;
    *p = NULL;
    /* page-aligned, and touched once so that first-touch page faults stay out of the timing */
    if (posix_memalign(p, 4096, bytes ? bytes : 1) != 0)
        return tb_err(err, errlen, "out of memory for a %zu-byte buffer", bytes);
    memset(*p, 0, bytes);
    return 0;
}

static void host_release(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static int host_run(void *ctx, enum tb_coll_op op, const void *send, void *recv, size_t count,
                    char *err, size_t errlen)
{
    const struct tb_comm_api *c = ctx;
    int r = c->rank(), n = c->size();
    switch (op) {
    case TB_COLL_ALL_REDUCE:
        return c->all_reduce(send, recv, count, TB_COMM_F32, TB_COMM_SUM, err, errlen);
    case TB_COLL_ALL_GATHER:
        return c->all_gather(send, recv, count, TB_COMM_F32, err, errlen);
    case TB_COLL_REDUCE_SCATTER:
        return c->reduce_scatter(send, recv, count, TB_COMM_F32, err, errlen);
    case TB_COLL_ALL_TO_ALL:
        return c->all_to_all(send, recv, count, TB_COMM_F32, err, errlen);
    case TB_COLL_SENDRECV:
        return c->sendrecv(send, (r + 1) % n, recv, (r + n - 1) % n, count, TB_COMM_F32, err,
                           errlen);
    }
    return tb_err(err, errlen, "unknown operation %d", (int)op);
}

void tb_coll_host_engine(struct tb_coll_engine *e, const struct tb_comm_api *c)
{
    memset(e, 0, sizeof *e);
    e->ctx = (void *)c; /* the table is const; host_run only reads through it */
    e->backend = c->name;
    e->alloc = host_alloc;
    e->release = host_release;
    e->run = host_run;
}
