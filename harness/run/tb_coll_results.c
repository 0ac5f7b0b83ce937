/* harness/run/tb_coll_results.c: see tb_coll_results.h. */
#include "tb_coll_results.h"

#include "tb_perf.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole number of a column in [lo, hi]. */
static int count_field(const struct tb_result *x, const char *name, long lo, long hi, long *out,
                       char *err, size_t errlen)
{
    if (tb_parse_long(tb_result_field(x, name), lo, hi, out) != 0) {
        char what[64];
        snprintf(what, sizeof what, "not a whole number in [%ld, %ld]", lo, hi);
        return tb_result_bad_field(x, name, what, err, errlen);
    }
    return 0;
}

/* Row x's point: everything but its metric's value. */
static int point_of(const struct tb_result *x, struct tb_coll_meas *c, char *err, size_t errlen)
{
    const char *w = tb_result_field(x, "workload"), *cfg = tb_result_field(x, "config");
    const char *slash = strchr(cfg, '/');
    long rpn, bytes;

    memset(c, 0, sizeof *c);
    c->row = x;
    c->time_s = c->busbw = c->algbw = c->host_bw = NAN;
    c->target = tb_result_field(x, "target");
    c->executor = tb_result_field(x, "executor");
    if (strncmp(w, "collective/", 11) || tb_coll_op_from_string(w + 11, &c->op) != 0)
        return tb_result_bad_field(x, "workload", "not collective/<op> (" TB_COLL_OPS ")", err,
                                   errlen);
    if (tb_coll_link_from_string(tb_result_field(x, "link"), &c->link) != 0)
        return tb_result_bad_field(x, "link", "not one of " TB_COLL_LINKS, err, errlen);
    if (count_field(x, "bytes", 1, 1L << 50, &bytes, err, errlen) ||
        count_field(x, "nodes", 1, 1000000, &c->nodes, err, errlen) ||
        count_field(x, "ranks_per_node", 1, 1000000, &rpn, err, errlen))
        return -1;
    c->bytes = (double)bytes;
    c->ranks = c->nodes * rpn;
    if (c->ranks < 2)
        return tb_result_bad_field(x, "ranks_per_node", "one rank in all: not a collective", err,
                                   errlen);
    if (!slash || (strcmp(slash + 1, "inplace") && strcmp(slash + 1, "outofplace")))
        return tb_result_bad_field(x, "config", "not <bytes>B/inplace or <bytes>B/outofplace", err,
                                   errlen);
    c->inplace = !strcmp(slash + 1, "inplace");
    {
        char want[32];
        snprintf(want, sizeof want, "%ldB/", bytes);
        if (strncmp(cfg, want, strlen(want)))
            return tb_result_bad_field(x, "config", "its size is not the bytes column's", err,
                                       errlen);
    }
    snprintf(c->group, sizeof c->group, "%s|%s|%s|%s|%ldx%ld|%s", x->t->path, c->target,
             tb_coll_link_to_string(c->link), tb_coll_op_to_string(c->op), c->nodes, rpn,
             c->inplace ? "inplace" : "outofplace");
    return 0;
}

static int by_group_bytes(const void *a, const void *b)
{
    const struct tb_coll_meas *x = a, *y = b;
    int g = strcmp(x->group, y->group);
    return g ? g : (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

int tb_coll_meas_load(const struct tb_results *res, struct tb_coll_meas **out, size_t *n, char *err,
                      size_t errlen)
{
    struct tb_coll_meas *v = NULL;
    size_t nv = 0;

    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < res->nrows; i++) {
        const struct tb_result *x = &res->rows[i];
        const char *metric = tb_result_field(x, "metric");
        struct tb_coll_meas c;
        size_t k;
        if (x->prov != TB_PROV_MEASURED || strcmp(tb_result_field(x, "phase"), "collective"))
            continue;
        if (point_of(x, &c, err, errlen) != 0)
            goto fail;
        if (!v && !(v = tb_alloc_array(res->nrows, sizeof *v))) {
            tb_err(err, errlen, "out of memory");
            goto fail;
        }
        for (k = 0; k < nv && !(v[k].bytes == c.bytes && !strcmp(v[k].group, c.group)); k++)
            ;
        if (k == nv)
            v[nv++] = c;
        if (!(x->value > 0)) {
            tb_result_bad_field(x, "value", "not a positive number", err, errlen);
            goto fail;
        }
        if (!strcmp(metric, "latency_us"))
            v[k].time_s = x->value * 1e-6;
        else if (!strcmp(metric, "busbw_gbyte_per_s"))
            v[k].busbw = x->value * 1e9;
        else if (!strcmp(metric, "algbw_gbyte_per_s"))
            v[k].algbw = x->value * 1e9;
        else if (!strcmp(metric, "host_mem_gbyte_per_s")) {
            /* the range --host-mem-gbyte-per-s takes */
            if (x->value < 0.001 || x->value > 1e5) {
                tb_result_bad_field(
                    x, "value", "a host memory bandwidth in GB/s within [0.001, 1e5]", err, errlen);
                goto fail;
            }
            v[k].host_bw = x->value * 1e9;
        } else {
            tb_result_bad_field(x, "metric",
                                "not busbw_gbyte_per_s, algbw_gbyte_per_s, latency_us or "
                                "host_mem_gbyte_per_s",
                                err, errlen);
            goto fail;
        }
    }
    for (size_t k = 0; k < nv; k++) {
        double f = tb_coll_bus_factor(v[k].op, v[k].ranks);
        if (isnan(v[k].time_s))
            v[k].time_s = !isnan(v[k].algbw)   ? v[k].bytes / v[k].algbw
                          : !isnan(v[k].busbw) ? v[k].bytes * f / v[k].busbw
                                               : NAN;
    }
    if (nv)
        qsort(v, nv, sizeof *v, by_group_bytes);
    *out = v;
    *n = nv;
    return 0;
fail:
    free(v);
    return -1;
}

int tb_coll_host_bw(double given, double *bw, char *how, size_t howlen, char *err, size_t errlen)
{
    struct tb_perf_result r;
    if (given > 0) {
        *bw = given;
        snprintf(how, howlen, "given (--host-mem-gbyte-per-s %g)", given / 1e9);
        return 0;
    }
    if (tb_perf_host_triad(&r, err, errlen) != 0)
        return -1;
    *bw = r.rate.median;
    snprintf(how, howlen,
             "measured now: STREAM triad, 1 thread, 3 x 32 MiB, median of 5 (%.3g GB/s)",
             *bw / 1e9);
    return 0;
}

#define REC "recorded with the runs (rank 0's STREAM triad, 1 thread, before each sweep)"

int tb_coll_host_bws(const struct tb_coll_meas *m, size_t n, double given, double *bw, char *how,
                     size_t howlen, char *err, size_t errlen)
{
    double now = 0, lo = INFINITY, hi = 0;
    size_t nrec = 0, nnow = 0;
    char nowhow[256] = "";

    *how = '\0';
    for (size_t i = 0; i < n; i++) {
        bw[i] = 0;
        if (!tb_coll_link_is_host(m[i].link) || tb_coll_link_is_host_net(m[i].link, m[i].nodes))
            continue;
        if (given > 0) {
            bw[i] = given;
            snprintf(how, howlen, "given (--host-mem-gbyte-per-s %g)", given / 1e9);
        } else if (m[i].host_bw > 0) {
            bw[i] = m[i].host_bw;
            lo = fmin(lo, bw[i]);
            hi = fmax(hi, bw[i]);
            nrec++;
        } else {
            if (!(now > 0) && tb_coll_host_bw(0, &now, nowhow, sizeof nowhow, err, errlen) != 0)
                return -1;
            bw[i] = now;
            nnow++;
        }
    }
    if (nrec && hi > lo)
        snprintf(how, howlen, "%s: %.3g to %.3g GB/s", REC, lo / 1e9, hi / 1e9);
    else if (nrec)
        snprintf(how, howlen, "%s: %.3g GB/s", REC, lo / 1e9);
    if (nnow)
        snprintf(how + strlen(how), howlen - strlen(how), "%s%s",
                 nrec ? "; for the files without it, " : "", nowhow);
    return 0;
}
