/* harness/model/tb_collective.c: see tb_collective.h. */
#include "tb_collective.h"

#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const OP_NAMES[TB_COLL_NOPS] = {"all-reduce", "all-gather", "reduce-scatter",
                                                   "all-to-all", "sendrecv"};
static const char *const LINK_NAMES[TB_LINK_NKINDS] = {"shm", "loopback", "tcp",
                                                       "efa", "nvlink",   "neuronlink"};

const char *tb_coll_op_to_string(enum tb_coll_op op)
{
    return op >= 0 && op < TB_COLL_NOPS ? OP_NAMES[op] : "unknown";
}

const char *tb_coll_link_to_string(enum tb_coll_link l)
{
    return l >= 0 && l < TB_LINK_NKINDS ? LINK_NAMES[l] : "unknown";
}

int tb_coll_op_from_string(const char *s, enum tb_coll_op *out)
{
    for (int i = 0; s && i < TB_COLL_NOPS; i++)
        if (!strcmp(s, OP_NAMES[i])) {
            *out = (enum tb_coll_op)i;
            return 0;
        }
    return -1;
}

int tb_coll_link_from_string(const char *s, enum tb_coll_link *out)
{
    for (int i = 0; s && i < TB_LINK_NKINDS; i++)
        if (!strcmp(s, LINK_NAMES[i])) {
            *out = (enum tb_coll_link)i;
            return 0;
        }
    return -1;
}

bool tb_coll_link_is_host(enum tb_coll_link l)
{
    return l == TB_LINK_SHM || l == TB_LINK_LOOPBACK || l == TB_LINK_TCP;
}

bool tb_coll_link_is_host_net(enum tb_coll_link l, long nodes)
{
    return l == TB_LINK_TCP && nodes > 1;
}

bool tb_coll_link_is_net(enum tb_coll_link l)
{
    return l == TB_LINK_EFA || l == TB_LINK_LOOPBACK || l == TB_LINK_TCP;
}

double tb_coll_bus_factor(enum tb_coll_op op, long n)
{
    if (n < 1)
        return NAN;
    if (op == TB_COLL_SENDRECV)
        return 1.0;
    return (op == TB_COLL_ALL_REDUCE ? 2.0 : 1.0) * (double)(n - 1) / (double)n;
}

double tb_coll_steps(enum tb_coll_op op, long n, bool fabric_switch)
{
    double lg = n > 1 ? ceil(log2((double)n)) : 0;
    if (n <= 1)
        return op == TB_COLL_SENDRECV ? 1 : 0;
    switch (op) {
    case TB_COLL_ALL_REDUCE:
        return fabric_switch ? 2.0 * lg : 2.0 * (double)(n - 1);
    case TB_COLL_ALL_GATHER:
    case TB_COLL_REDUCE_SCATTER:
        return fabric_switch ? lg : (double)(n - 1);
    case TB_COLL_ALL_TO_ALL:
        return (double)(n - 1); /* pairwise exchange: one partner a step */
    default:
        return 1;
    }
}

/* The efficiency row, the raw bandwidth per rank and its description. */
static int link_of(const struct tb_model *m, const struct tb_coll_query *q,
                   const struct tb_model_eff **e, double *raw, char *what, size_t wlen, char *err,
                   size_t errlen)
{
    const char *chip = q->chip ? q->chip : q->inst ? q->inst->chip : NULL;
    const struct tb_chip *c;

    if (tb_coll_link_is_host(q->link)) {
        *e = tb_model_eff_of(m, "host");
        if (!*e)
            return tb_err(err, errlen, "no efficiency row for chip 'host' (efficiency.csv)");
        if (tb_coll_link_is_host_net(q->link, q->nodes)) {
            double per_node = (double)q->ranks / (double)q->nodes;
            if (!(q->net_bw > 0))
                return tb_err(err, errlen,
                              "tcp across %ld nodes: the hosts' network bandwidth is not in "
                              "the catalogue; state it (--host-net-gbit-per-s)",
                              q->nodes);
            *raw = q->net_bw / per_node;
            snprintf(what, wlen, "hosts' network %.4g Gbit/s (stated) over %.3g ranks a host",
                     q->net_bw * 8 / 1e9, per_node);
            return 0;
        }
        if (!(q->host_bw > 0))
            return tb_err(err, errlen, "%s: the host's memory bandwidth is not known",
                          tb_coll_link_to_string(q->link));
        *raw = q->host_bw;
        snprintf(what, wlen, "host memory %.3g GB/s (one thread's triad)", q->host_bw / 1e9);
        return 0;
    }
    if (!chip)
        return tb_err(err, errlen, "%s: no chip or instance type to model",
                      tb_coll_link_to_string(q->link));
    *e = tb_model_eff_of(m, chip);
    c = tb_pricing_chip(m->pricing, chip);
    if (!*e || !c)
        return tb_err(err, errlen, "no efficiency figures for chip '%s' (efficiency.csv)", chip);
    if (q->link == TB_LINK_EFA) {
        if (!q->inst || !(q->inst->network_gbps > 0) || q->inst->accel_count < 1)
            return tb_err(err, errlen, "efa: no instance type with a network speed to model");
        *raw = q->inst->network_gbps * 1e9 / 8 / (double)q->inst->accel_count;
        snprintf(what, wlen, "%s network %g Gbit/s over %ld chips", q->inst->instance,
                 q->inst->network_gbps, q->inst->accel_count);
        return 0;
    }
    if ((q->link == TB_LINK_NVLINK) != !strcmp((*e)->family, "nvidia"))
        return tb_err(err, errlen, "%s has no %s", c->name, tb_coll_link_to_string(q->link));
    if (!(c->interconnect_gbps > 0))
        return tb_err(err, errlen, "%s: no interconnect bandwidth in chips.csv", c->name);
    if (q->nodes > 1)
        return tb_err(err, errlen, "%s spans one instance; %ld nodes: say efa",
                      tb_coll_link_to_string(q->link), q->nodes);
    *raw = c->interconnect_gbps * 1e9 / 8;
    snprintf(what, wlen, "%s interconnect %g Gbit/s", c->name, c->interconnect_gbps);
    return 0;
}

int tb_collective_predict(const struct tb_model *m, const struct tb_coll_query *q,
                          struct tb_coll_pred *p, char *err, size_t errlen)
{
    const struct tb_model_eff *e = NULL;
    char what[160];
    double f, steps;
    bool net = tb_coll_link_is_net(q->link);

    memset(p, 0, sizeof *p);
    p->time_s = p->latency_s = p->bw = p->raw_bw = p->eff = p->algbw = p->busbw = NAN;
    if (q->op < 0 || q->op >= TB_COLL_NOPS || q->link < 0 || q->link >= TB_LINK_NKINDS)
        return tb_err(err, errlen, "unknown collective or link");
    if (q->ranks < 2 || q->nodes < 1 || q->nodes > q->ranks || !(q->bytes > 0))
        return tb_err(err, errlen, "%ld ranks on %ld nodes, %g bytes: not a collective to model",
                      q->ranks, q->nodes, q->bytes);
    if (link_of(m, q, &e, &p->raw_bw, what, sizeof what, err, errlen) != 0)
        return -1;
    p->eff = net ? e->net_eff : e->link_eff;
    p->bw = p->raw_bw * p->eff;
    f = tb_coll_bus_factor(q->op, q->ranks);
    steps = tb_coll_steps(q->op, q->ranks, e->fabric_switch);
    p->latency_s = (e->collective_s + e->collective_hop_s * steps) * (net ? 4 : 1);
    p->time_s = p->latency_s + q->bytes * f / p->bw;
    p->algbw = q->bytes / p->time_s;
    p->busbw = p->algbw * f;
    snprintf(p->why, sizeof p->why, "%s x %s %.3g; latency %.3g us + %.3g us x %g steps%s (%s)",
             what, net ? "net_eff" : "link_eff", p->eff, e->collective_s * 1e6,
             e->collective_hop_s * 1e6, steps, net ? ", x4 on a network" : "", e->chip);
    return 0;
}

/* ---- fitting ---- */

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, size_t n)
{
    qsort(x, n, sizeof *x, by_double);
    return n == 0 ? NAN : n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

static int by_bytes(const void *a, const void *b)
{
    const struct tb_coll_point *x = *(const struct tb_coll_point *const *)a;
    const struct tb_coll_point *y = *(const struct tb_coll_point *const *)b;
    return (x->q.bytes > y->q.bytes) - (x->q.bytes < y->q.bytes);
}

/* One sweep: its points sorted by size. */
struct sweep {
    const struct tb_coll_point **p; /* borrowed points, into the caller's array */
    size_t n;
    double raw_bw; /* the link's raw bandwidth (tb_collective_predict's) */
    double busbw;  /* the median busbw of the 3 largest sizes, bytes/s */
    double steps;  /* of the algorithm at the sweep's ranks */
    bool net;      /* a network link */
    double lat_s;  /* the fitted latency, network sweeps / 4 */
};

int tb_collective_fit(const struct tb_model *m, const struct tb_coll_point *pts, size_t n,
                      struct tb_coll_fit *fit, char *err, size_t errlen)
{
    struct sweep *sw = NULL;
    const struct tb_coll_point **order = NULL;
    double *scratch = NULL;
    const struct tb_model_eff *e = NULL;
    size_t nsw = 0;
    int rc = -1;

    fit->link_eff = fit->net_eff = fit->collective_us = fit->hop_us = NAN;
    fit->link_groups = fit->net_groups = fit->lat_groups = fit->lat_step_counts = 0;
    fit->hop_through_zero = false;
    if (n == 0)
        return tb_err(err, errlen, "no measured collectives to fit");
    sw = tb_alloc_array(n, sizeof *sw);
    order = tb_alloc_array(n, sizeof *order);
    scratch = tb_alloc_array(n, sizeof *scratch);
    if (!sw || !order || !scratch) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    /* the sweeps, each a run of one group's points sorted by size */
    for (size_t i = 0; i < n; i++)
        order[i] = &pts[i];
    for (size_t i = 0; i < n;) {
        const struct tb_coll_point *x = order[i];
        struct tb_coll_pred p;
        size_t k = 0;
        if (tb_collective_predict(m, &x->q, &p, err, errlen) != 0)
            goto out;
        if (!e)
            e = tb_model_eff_of(m, tb_coll_link_is_host(x->q.link) ? "host"
                                   : x->q.chip                     ? x->q.chip
                                                                   : x->q.inst->chip);
        for (size_t j = i; j < n; j++)
            if (!strcmp(order[j]->group, x->group)) {
                const struct tb_coll_point *t = order[i + k];
                order[i + k] = order[j];
                order[j] = t;
                k++;
            }
        sw[nsw].p = order + i;
        sw[nsw].n = k;
        sw[nsw].raw_bw = p.raw_bw;
        sw[nsw].net = tb_coll_link_is_net(x->q.link);
        sw[nsw].steps = tb_coll_steps(x->q.op, x->q.ranks, e->fabric_switch);
        qsort(sw[nsw].p, k, sizeof *sw[nsw].p, by_bytes);
        nsw++;
        i += k;
    }
    /* bandwidth: each sweep's 3 largest sizes; the efficiency over sweeps by kind */
    for (int net = 0; net < 2; net++) {
        size_t ne = 0;
        for (size_t s = 0; s < nsw; s++) {
            struct sweep *w = &sw[s];
            size_t top = w->n < 3 ? w->n : 3;
            double b[3] = {0, 0, 0};
            if (w->net != net)
                continue;
            for (size_t j = 0; j < top; j++) {
                const struct tb_coll_point *x = w->p[w->n - 1 - j];
                b[j] = x->q.bytes * tb_coll_bus_factor(x->q.op, x->q.ranks) / x->time_s;
            }
            w->busbw = median(b, top);
            scratch[ne++] = w->busbw / w->raw_bw;
        }
        if (ne) {
            double eff = median(scratch, ne);
            *(net ? &fit->net_eff : &fit->link_eff) = eff;
            *(net ? &fit->net_groups : &fit->link_groups) = (int)ne;
        }
    }
    /* latency: each sweep's 3 smallest sizes less their bandwidth term */
    {
        double sx = 0, sy = 0, sxx = 0, sxy = 0, firstx = NAN, N = 0;
        /* the intra-node sweeps where there are any: a network's latency is the model's
         * 4x theirs, not a second measure of the same figures */
        bool intra = fit->link_groups > 0;
        for (size_t s = 0; s < nsw; s++) {
            struct sweep *w = &sw[s];
            double eff = w->net ? fit->net_eff : fit->link_eff;
            size_t lo = w->n < 3 ? w->n : 3;
            if (intra && w->net)
                continue;
            N++;
            for (size_t j = 0; j < lo; j++) {
                const struct tb_coll_point *x = w->p[j];
                double t = x->time_s -
                           x->q.bytes * tb_coll_bus_factor(x->q.op, x->q.ranks) / (w->raw_bw * eff);
                scratch[j] = t > 0 ? t : 0;
            }
            w->lat_s = median(scratch, lo) / (w->net ? 4 : 1);
            sx += w->steps;
            sy += w->lat_s;
            sxx += w->steps * w->steps;
            sxy += w->steps * w->lat_s;
            if (isnan(firstx))
                firstx = w->steps;
            else if (w->steps != firstx)
                fit->lat_step_counts = 2; /* at least two */
        }
        if (fit->lat_step_counts == 0)
            fit->lat_step_counts = 1;
        fit->lat_groups = (int)N;
        if (fit->lat_step_counts > 1) {
            double h = (N * sxy - sx * sy) / (N * sxx - sx * sx);
            if (!(h > 0))
                h = 0;
            fit->hop_us = h * 1e6;
            fit->collective_us = (sy - h * sx) / N * 1e6;
            if (fit->collective_us < 0 && sxx > 0) {
                /* a negative floor: the line through zero, all the latency per step */
                fit->hop_us = sxy / sxx * 1e6;
                fit->collective_us = 0;
                fit->hop_through_zero = true;
            }
        } else {
            fit->hop_us = e->collective_hop_s * 1e6;
            fit->collective_us = (sy / N - e->collective_hop_s * firstx) * 1e6;
            if (fit->collective_us < 0 && firstx > 0) {
                /* our hops alone are longer than the measured latency (a fast shared
                 * memory: 0.24 us for 2 ranks against our 0.5 us a step): the measured
                 * latency over the steps, no floor, rather than a floor clamped at 0
                 * beside hops that keep the small sizes 2x too slow */
                fit->hop_us = sy / N / firstx * 1e6;
                fit->collective_us = 0;
                fit->hop_through_zero = true;
            }
        }
        if (fit->collective_us < 0)
            fit->collective_us = 0;
    }
    rc = 0;
out:
    free(sw);
    free(order);
    free(scratch);
    return rc;
}
