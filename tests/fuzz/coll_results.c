/* tests/fuzz/coll_results.c: the measured collectives of a results file read back as
 * `trnbench calibrate` and the report read them (tb_results_load, tb_coll_meas_load),
 * then each one predicted by the model and the host links' points fitted
 * (tb_collective_predict, tb_collective_fit) over the shipped efficiency table. The
 * input is the results.csv. */
#include "fz.h"
#include "tb_coll_results.h"
#include "tb_collective.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_results.h"

#include <math.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tb_model *m = fz_model();
    struct tb_results res;
    struct tb_coll_meas *meas = NULL;
    struct tb_coll_point *pts = NULL;
    double *hbw = NULL;
    struct tb_coll_fit fit;
    size_t n = 0, npts = 0;
    char err[1024];
    const char *path = fz_write("results.csv", data, size);

    if (fz_note(tb_results_load(&res, &path, 1, err, sizeof err), err) != 0)
        return 0;
    if (fz_note(tb_coll_meas_load(&res, &meas, &n, err, sizeof err), err) == 0 && n) {
        bool all = true;
        char how[512];
        pts = calloc(n, sizeof *pts);
        hbw = calloc(n, sizeof *hbw);
        if (!pts || !hbw)
            fz_die("calloc", "out of memory");
        /* the recorded host bandwidths where every host sweep has one (else given: a
         * triad measured now would take a second an input) */
        for (size_t i = 0; i < n; i++)
            all &= !tb_coll_link_is_host(meas[i].link) || meas[i].host_bw > 0;
        if (fz_note(
                tb_coll_host_bws(meas, n, all ? 0 : 10e9, hbw, how, sizeof how, err, sizeof err),
                err) != 0)
            goto out;
        for (size_t i = 0; i < n; i++) {
            struct tb_coll_query q = {0};
            struct tb_coll_pred pr;
            q.op = meas[i].op;
            q.link = meas[i].link;
            q.bytes = meas[i].bytes;
            q.ranks = meas[i].ranks;
            q.nodes = meas[i].nodes;
            if (tb_coll_link_is_host(q.link)) {
                q.chip = "host";
                q.host_bw = hbw[i] > 0 ? hbw[i] : 10e9;
            } else {
                q.inst = tb_pricing_instance(m->pricing, meas[i].target);
                q.chip = q.inst ? q.inst->chip : NULL;
                if (!q.inst)
                    continue;
            }
            if (fz_note(tb_collective_predict(m, &q, &pr, err, sizeof err), err) != 0)
                continue;
            if (tb_coll_link_is_host(q.link) && isfinite(meas[i].time_s)) {
                pts[npts].q = q;
                pts[npts].time_s = meas[i].time_s;
                pts[npts].group = meas[i].group;
                npts++;
            }
        }
        if (npts)
            fz_note(tb_collective_fit(m, pts, npts, &fit, err, sizeof err), err);
    }
out:
    free(pts);
    free(hbw);
    free(meas);
    tb_results_release(&res);
    return 0;
}
