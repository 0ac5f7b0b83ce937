/*
 * harness/report/collectives.c: the section "Collectives: measured against the model":
 * each measured collective (rows of phase collective) beside the performance model's
 * prediction for the same op, size, ranks and link (tb_collective.h), with the error, one
 * table per sweep and a chart per link (charts.c draws it from R->coll). Nothing when the
 * results hold no collective rows.
 */
#include "report_impl.h"

#include "tb_coll_results.h"
#include "tb_collective.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tb_report_coll_load(struct report *R, char *err, size_t errlen)
{
    const struct tb_report_opts *o = R->o;

    if (tb_coll_meas_load(&R->res, &R->coll, &R->ncoll, err, errlen) != 0)
        return -1;
    if (R->ncoll == 0)
        return 0;
    R->coll_busbw = tb_alloc_array(R->ncoll, sizeof *R->coll_busbw);
    if (!R->coll_busbw)
        return tb_err(err, errlen, "out of memory");
    if (tb_model_load(&R->cmodel, &R->pricing, o->pricing_dir, err, errlen) != 0)
        return -1;
    R->have_cmodel = true;
    if (o->efficiency && tb_model_efficiency_overlay(&R->cmodel, o->efficiency, err, errlen) != 0)
        return -1;
    R->coll_host_bw = tb_alloc_array(R->ncoll, sizeof *R->coll_host_bw);
    if (!R->coll_host_bw)
        return tb_err(err, errlen, "out of memory");
    if (tb_coll_host_bws(R->coll, R->ncoll, o->host_bw, R->coll_host_bw, R->coll_host,
                         sizeof R->coll_host, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < R->ncoll; i++) {
        const struct tb_coll_meas *c = &R->coll[i];
        struct tb_coll_query q = {.op = c->op,
                                  .link = c->link,
                                  .bytes = c->bytes,
                                  .ranks = c->ranks,
                                  .nodes = c->nodes,
                                  .host_bw = R->coll_host_bw[i],
                                  .net_bw = o->net_bw};
        struct tb_coll_pred p;
        char why[512];
        if (!tb_coll_link_is_host(c->link))
            q.inst = tb_pricing_instance(&R->pricing, c->target);
        if (!tb_coll_link_is_host(c->link) && !q.inst) {
            snprintf(why, sizeof why, "'%s' is not a catalogued instance type", c->target);
            p.busbw = NAN;
        } else if (tb_collective_predict(&R->cmodel, &q, &p, why, sizeof why) != 0) {
            p.busbw = NAN;
        }
        R->coll_busbw[i] = p.busbw;
        if (isnan(p.busbw) && !R->coll_nwhy++)
            snprintf(R->coll_why, sizeof R->coll_why, "%s %s: %s", tb_coll_op_to_string(c->op),
                     tb_coll_link_to_string(c->link), why);
    }
    return 0;
}

void tb_report_coll_release(struct report *R)
{
    free(R->coll);
    free(R->coll_busbw);
    free(R->coll_host_bw);
    R->coll_host_bw = NULL;
    if (R->have_cmodel)
        tb_model_release(&R->cmodel);
    R->coll = NULL;
    R->coll_busbw = NULL;
    R->have_cmodel = false;
}

const char *tb_report_coll_size(double bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && fmod(bytes, 1024) == 0 && u < 4) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, len, "%.0f %s", bytes, unit[u]);
    return buf;
}

/* Whether i starts a sweep table: its file, target, link, op and ranks differ from the
 * point before (placements share one table). */
static bool new_table(const struct report *R, size_t i)
{
    const char *a, *b;
    if (i == 0)
        return true;
    a = R->coll[i - 1].group;
    b = R->coll[i].group;
    return strncmp(a, b, (size_t)(strrchr(a, '|') - a)) ||
           strrchr(a, '|') - a != strrchr(b, '|') - b;
}

static double err_pct(const struct report *R, size_t i)
{
    double meas = !isnan(R->coll[i].busbw)
                      ? R->coll[i].busbw
                      : R->coll[i].bytes * tb_coll_bus_factor(R->coll[i].op, R->coll[i].ranks) /
                            R->coll[i].time_s;
    return (R->coll_busbw[i] - meas) / meas * 100.0;
}

static int by_abs(const void *a, const void *b)
{
    double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
    return (x > y) - (x < y);
}

void tb_report_write_collectives(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {
        "Size", "Placement", "Measured busbw (GB/s)", "Modeled busbw (GB/s)", "Error %", NULL};
    static const char *const shead[] = {
        "Link",   "Collective",          "Ranks",
        "Points", "Median abs. error %", "Error % at the largest size",
        NULL};
    double *e;

    if (R->ncoll == 0)
        return;
    tb_doc_h(d, 2, "Collectives: measured against the model");
    tb_doc_p_begin(d, NULL);
    tb_doc_text(d,
                "%zu measured collectives (sizes and placements), each beside the performance "
                "model's prediction for the same op, size, ranks and link: time = latency + "
                "bytes x bus factor / (the link's raw bandwidth x its efficiency), busbw = bytes "
                "x bus factor / time (nccl-tests' conventions; README \"Collectives: measured "
                "against the model\"). Efficiency figures: ",
                R->ncoll);
    tb_doc_code(d, "efficiency.csv");
    if (R->o->efficiency) {
        tb_doc_text(d, " with the rows of ");
        tb_doc_code(d, R->o->efficiency);
        tb_doc_text(d, " in place of ours");
    }
    tb_doc_text(d, ". Error = (modeled - measured) / measured.");
    if (*R->coll_host)
        tb_doc_text(d, " The host's memory bandwidth (shm, loopback, tcp): %s.", R->coll_host);
    tb_doc_p_end(d);
    if (R->coll_nwhy)
        tb_doc_p(d, "note", "%zu point%s not modeled, e.g. %s", R->coll_nwhy,
                 R->coll_nwhy == 1 ? "" : "s", R->coll_why);

    /* the summary: one line per sweep table */
    e = tb_alloc_array(R->ncoll, sizeof *e);
    tb_doc_table(d, "ttnnnn", shead);
    for (size_t i = 0; e && i < R->ncoll;) {
        size_t j = i, n = 0;
        double last = NAN;
        char ranks[48], pts[16], med[32], lst[32];
        do {
            if (!isnan(R->coll_busbw[j]))
                e[n++] = err_pct(R, j);
            if (!R->coll[j].inplace)
                last = isnan(R->coll_busbw[j]) ? NAN : err_pct(R, j);
            j++;
        } while (j < R->ncoll && !new_table(R, j));
        snprintf(ranks, sizeof ranks, "%ld on %ld node%s", R->coll[i].ranks, R->coll[i].nodes,
                 R->coll[i].nodes == 1 ? "" : "s");
        snprintf(pts, sizeof pts, "%zu", j - i);
        if (n) {
            qsort(e, n, sizeof *e, by_abs);
            snprintf(med, sizeof med, "%.1f",
                     n % 2 ? fabs(e[n / 2]) : (fabs(e[n / 2 - 1]) + fabs(e[n / 2])) / 2);
        } else {
            snprintf(med, sizeof med, "not modeled");
        }
        snprintf(lst, sizeof lst, "%+.1f", last);
        {
            const char *cells[] = {tb_coll_link_to_string(R->coll[i].link),
                                   tb_coll_op_to_string(R->coll[i].op),
                                   ranks,
                                   pts,
                                   med,
                                   isnan(last) ? "" : lst,
                                   NULL};
            tb_doc_row(d, cells);
        }
        i = j;
    }
    tb_doc_table_end(d);
    free(e);

    /* one table per sweep: every size and placement */
    tb_doc_fold_begin(d, "Every size: measured and modeled busbw");
    for (size_t i = 0; i < R->ncoll; i++) {
        const struct tb_coll_meas *c = &R->coll[i];
        char size[32], meas[32], mod[32], ep[32], title[256];
        double mb = !isnan(c->busbw) ? c->busbw
                                     : c->bytes * tb_coll_bus_factor(c->op, c->ranks) / c->time_s;
        if (new_table(R, i)) {
            if (i)
                tb_doc_table_end(d);
            snprintf(title, sizeof title, "%s over %s: %ld ranks on %ld node%s (%s, %s)",
                     tb_coll_op_to_string(c->op), tb_coll_link_to_string(c->link), c->ranks,
                     c->nodes, c->nodes == 1 ? "" : "s", c->executor, c->target);
            tb_doc_h(d, 3, title);
            tb_doc_table(d, "ttnnn", head);
        }
        tb_report_num(mb / 1e9, meas, sizeof meas);
        tb_report_num(R->coll_busbw[i] / 1e9, mod, sizeof mod);
        if (isnan(R->coll_busbw[i]))
            snprintf(ep, sizeof ep, "not modeled");
        else
            snprintf(ep, sizeof ep, "%+.1f", err_pct(R, i));
        {
            const char *cells[] = {tb_report_coll_size(c->bytes, size, sizeof size),
                                   c->inplace ? "inplace" : "outofplace",
                                   meas,
                                   mod,
                                   ep,
                                   NULL};
            tb_doc_row(d, cells);
        }
    }
    tb_doc_table_end(d);
    tb_doc_fold_end(d);
}
