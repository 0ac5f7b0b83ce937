/*
 * harness/cli/cmd_calibrate.c: `trnbench calibrate` (also `trnbench collectives
 * --calibrate`): the link efficiencies and latencies measured collectives imply, fitted
 * (tb_collective_fit) and written as a user's own efficiency file in the format of
 * pricing/efficiency.csv, which `predict --efficiency` and `report --efficiency` take in
 * place of the matching rows of ours. Ours is never written.
 */
#include "cli.h"
#include "cli_opt.h"
#include "tb_coll_results.h"
#include "tb_collective.h"
#include "tb_csv.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_results.h"
#include "tb_util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench calibrate RESULTS.csv... --out FILE.csv [--prices DIR]\n"
          "                          [--host-mem-gbyte-per-s X] [--host-net-gbit-per-s X]\n"
          "       trnbench collectives --calibrate RESULTS.csv --out FILE.csv [...]\n"
          "Fit the efficiency figures the measured collectives of RESULTS imply (rows of\n"
          "phase collective, as `trnbench collectives` writes them) and write them as FILE, in\n"
          "the format of pricing/efficiency.csv: one row per chip measured (\"host\" for MPI\n"
          "between a host's processes over shm, loopback or tcp), our row with link_eff,\n"
          "net_eff, collective_us and collective_hop_us replaced by the fit and source saying\n"
          "how. Give it to `trnbench predict --efficiency FILE` or `trnbench report\n"
          "--efficiency FILE`: its rows replace the matching rows of ours.\n"
          "  --out FILE.csv            the file to write (never our pricing/efficiency.csv)\n"
          "  --prices DIR              the catalogue and efficiency tables to start from\n"
          "  --host-mem-gbyte-per-s X  the host's memory bandwidth for shm/loopback/tcp (one\n"
          "                            thread's STREAM triad, GB/s); default: measured "
          "now\n" TB_COLL_NET_HELP
          "How: per sweep (op, ranks, placement, link), the bandwidth is the median busbw of\n"
          "its 3 largest sizes; link_eff (net_eff for efa, loopback, tcp) the median over the\n"
          "sweeps of that / the link's raw bandwidth; each sweep's latency the median time of\n"
          "its 3 smallest sizes less their bandwidth term, fitted as collective_us +\n"
          "collective_hop_us x the algorithm's steps (README \"Collectives: measured against\n"
          "the model\").\n"
          "Exit status: 0 written, 2 usage or input error (file, line and field).\n",
          f);
}

/* One efficiency row being fitted: its key and its points. */
struct key {
    const char *chip; /* borrowed: "host" or a chips.csv key */
    struct tb_coll_point *pts;
    size_t n;
};

/* The efficiency row a measurement speaks for: "host" for host links, else the chip of
 * its target instance type. */
static int key_of(const struct tb_model *m, const struct tb_coll_meas *c,
                  const struct tb_instance **inst, const char **chip, char *err, size_t errlen)
{
    *inst = NULL;
    if (tb_coll_link_is_host(c->link)) {
        *chip = "host";
        return 0;
    }
    *inst = tb_pricing_instance(m->pricing, c->target);
    if (!*inst)
        return tb_result_bad_field(c->row, "target",
                                   "not an instance type of instances.csv (an accelerator "
                                   "link's row needs its chip)",
                                   err, errlen);
    *chip = (*inst)->chip;
    return 0;
}

/* Write the fitted rows (ours with the collective figures replaced) as CSV text. */
static int write_rows(const struct tb_model *m, const struct key *keys, size_t nkeys,
                      const struct tb_coll_fit *fits, const char *source_fmt_files,
                      const char *host_how, const char *out, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    const struct tb_csv_table *t = &m->csv;
    int rc = -1;

    if (!f)
        return tb_err(err, errlen, "out of memory");
    for (size_t c = 0; c < t->ncols; c++)
        tb_csv_put(f, t->header[c], c + 1 < t->ncols ? ',' : '\n');
    for (size_t k = 0; k < nkeys; k++) {
        const struct tb_coll_fit *x = &fits[k];
        size_t r;
        char now[32], src[1024], v[4][32];
        time_t tt = time(NULL);
        for (r = 0; r < t->nrows && strcmp(tb_csv_field(t, r, "chip"), keys[k].chip); r++)
            ;
        if (r == t->nrows) {
            tb_err(err, errlen, "no row of ours for chip '%s'", keys[k].chip);
            goto out;
        }
        strftime(now, sizeof now, "%Y-%m-%d", gmtime(&tt));
        snprintf(v[0], sizeof v[0], "%.4g",
                 isnan(x->link_eff) ? atof(tb_csv_field(t, r, "link_eff")) : x->link_eff);
        snprintf(v[1], sizeof v[1], "%.4g",
                 isnan(x->net_eff) ? atof(tb_csv_field(t, r, "net_eff")) : x->net_eff);
        snprintf(v[2], sizeof v[2], "%.4g", x->collective_us);
        snprintf(v[3], sizeof v[3], "%.4g", x->hop_us);
        snprintf(src, sizeof src,
                 "calibrated %s by trnbench calibrate from %s: link_eff %s (%d sweeps), "
                 "net_eff %s (%d sweeps), collective_us and collective_hop_us from %d sweeps "
                 "at %d step counts%s%s; the other figures ours",
                 now, source_fmt_files, isnan(x->link_eff) ? "ours" : "fitted", x->link_groups,
                 isnan(x->net_eff) ? "ours" : "fitted", x->net_groups, x->lat_groups,
                 x->lat_step_counts,
                 x->hop_through_zero      ? " (hop fitted through zero: a floor would be negative)"
                 : x->lat_step_counts < 2 ? " (hop ours)"
                                          : "",
                 strcmp(keys[k].chip, "host") ? "" : host_how);
        for (size_t c = 0; c < t->ncols; c++) {
            const char *h = t->header[c], *val = tb_csv_get(t, r, (int)c);
            if (!strcmp(h, "link_eff"))
                val = v[0];
            else if (!strcmp(h, "net_eff"))
                val = v[1];
            else if (!strcmp(h, "collective_us"))
                val = v[2];
            else if (!strcmp(h, "collective_hop_us"))
                val = v[3];
            else if (!strcmp(h, "source"))
                val = src;
            tb_csv_put(f, val, c + 1 < t->ncols ? ',' : '\n');
        }
    }
    if (fclose(f) != 0) {
        f = NULL;
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    f = NULL;
    rc = tb_write_file_atomic(out, buf, len, err, errlen);
out:
    if (f)
        fclose(f);
    free(buf);
    return rc;
}

int tb_cmd_calibrate(int argc, char **argv)
{
    const char *out = NULL, *dir = NULL, *files[64];
    struct tb_opt_list fl = {files, 0, sizeof files / sizeof files[0]};
    size_t nmeas = 0, nkeys = 0;
    double host_given = 0, net_gbit = 0, net_bw, *hbw = NULL;
    struct stat sa, sb;
    struct tb_pricing pr;
    struct tb_model m;
    struct tb_results res;
    struct tb_coll_meas *meas = NULL;
    struct key *keys = NULL;
    struct tb_coll_fit *fits = NULL;
    char err[1024], how[900] = "", hostwhat[512] = "", ours[PATH_MAX], names[512] = "";
    int rc;
    bool have_pr = false, have_m = false, have_res = false;

    const struct tb_opt opts[] = {
        TB_OPT_STR("out", &out),
        TB_OPT_STR("prices", &dir),
        TB_OPT_DOUBLE("host-mem-gbyte-per-s", &host_given, 0.001, 1e5),
        TB_OPT_DOUBLE(TB_COLL_NET_OPT, &net_gbit, TB_COLL_NET_GBIT_MIN, TB_COLL_NET_GBIT_MAX),
        TB_OPT_LIST("calibrate", &fl),
        TB_OPT_END,
    };

    if ((rc = tb_cli_parse(argv[0], argc, argv, opts, usage)) != TB_CLI_GO)
        return rc;
    rc = 2;
    host_given *= 1e9;           /* GB/s */
    net_bw = net_gbit * 1e9 / 8; /* Gbit/s */
    for (int i = optind; i < argc && fl.n < fl.cap; i++)
        files[fl.n++] = argv[i];
    if (fl.n == 0 || !out) {
        fprintf(stderr, "trnbench %s: %s\n", argv[0],
                fl.n ? "--out FILE.csv is required" : "no results file given");
        usage(stderr);
        return 2;
    }
    /* never ours: the output may not be the efficiency table it starts from */
    if ((size_t)(dir ? snprintf(ours, sizeof ours, "%s/efficiency.csv", dir)
                     : snprintf(ours, sizeof ours, "%s/pricing/efficiency.csv", tb_datadir())) >=
        sizeof ours) {
        fprintf(stderr, "trnbench %s: path too long\n", argv[0]);
        return 2;
    }
    if (stat(ours, &sa) == 0 && stat(out, &sb) == 0 && sa.st_dev == sb.st_dev &&
        sa.st_ino == sb.st_ino) {
        fprintf(stderr,
                "trnbench %s: --out '%s' is the efficiency table it starts from: write your "
                "own file and give it with --efficiency\n",
                argv[0], out);
        return 2;
    }
    if (tb_pricing_load(&pr, dir, err, sizeof err) != 0)
        goto fail;
    have_pr = true;
    if (tb_model_load(&m, &pr, dir, err, sizeof err) != 0)
        goto fail;
    have_m = true;
    if (tb_results_load(&res, files, fl.n, err, sizeof err) != 0)
        goto fail;
    have_res = true;
    if (tb_coll_meas_load(&res, &meas, &nmeas, err, sizeof err) != 0)
        goto fail;
    if (nmeas == 0) {
        snprintf(err, sizeof err, "%s: no measured collective rows (phase collective)", files[0]);
        goto fail;
    }
    keys = tb_alloc_array(nmeas, sizeof *keys);
    fits = tb_alloc_array(nmeas, sizeof *fits);
    hbw = tb_alloc_array(nmeas, sizeof *hbw);
    if (!keys || !fits || !hbw) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    /* the host links' raw bandwidth: given, else as recorded with each run */
    if (tb_coll_host_bws(meas, nmeas, host_given, hbw, hostwhat, sizeof hostwhat, err,
                         sizeof err) != 0)
        goto fail;
    if (*hostwhat)
        snprintf(how + strlen(how), sizeof how - strlen(how), "; host memory bandwidth %s",
                 hostwhat);
    /* the points of each efficiency row */
    for (size_t i = 0; i < nmeas; i++) {
        const struct tb_instance *inst;
        const char *chip = NULL;
        size_t k;
        if (key_of(&m, &meas[i], &inst, &chip, err, sizeof err) != 0)
            goto fail;
        if (!strcmp(chip, "host") && tb_coll_link_is_host_net(meas[i].link, meas[i].nodes)) {
            if (!strstr(how, "network"))
                snprintf(how + strlen(how), sizeof how - strlen(how),
                         "; hosts' network %.4g Gbit/s (%s)", net_bw * 8 / 1e9,
                         net_bw > 0 ? "stated: --" TB_COLL_NET_OPT : "not stated");
        }
        if (isnan(meas[i].time_s)) {
            tb_result_bad_field(meas[i].row, "metric", "no latency_us or bandwidth for the size",
                                err, sizeof err);
            goto fail;
        }
        for (k = 0; k < nkeys && strcmp(keys[k].chip, chip); k++)
            ;
        if (k == nkeys) {
            keys[nkeys].chip = chip;
            keys[nkeys].pts = tb_alloc_array(nmeas, sizeof *keys[nkeys].pts);
            keys[nkeys].n = 0;
            if (!keys[nkeys++].pts) {
                snprintf(err, sizeof err, "out of memory");
                goto fail;
            }
        }
        keys[k].pts[keys[k].n++] = (struct tb_coll_point){
            .q = {.op = meas[i].op,
                  .link = meas[i].link,
                  .bytes = meas[i].bytes,
                  .ranks = meas[i].ranks,
                  .nodes = meas[i].nodes,
                  .chip = chip,
                  .inst = inst,
                  .host_bw = hbw[i],
                  .net_bw = net_bw},
            .time_s = meas[i].time_s,
            .group = meas[i].group,
        };
    }
    for (size_t k = 0; k < nkeys; k++)
        if (tb_collective_fit(&m, keys[k].pts, keys[k].n, &fits[k], err, sizeof err) != 0)
            goto fail;
    for (size_t i = 0; i < fl.n; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 files[i]);
    if (write_rows(&m, keys, nkeys, fits, names, how, out, err, sizeof err) != 0)
        goto fail;
    for (size_t k = 0; k < nkeys; k++) {
        const struct tb_model_eff *e = tb_model_eff_of(&m, keys[k].chip);
        printf("%s: link_eff %.4g (ours %.4g), net_eff %.4g (ours %.4g), collective_us %.4g "
               "(ours %.4g), collective_hop_us %.4g (ours %.4g)\n",
               keys[k].chip, isnan(fits[k].link_eff) ? e->link_eff : fits[k].link_eff, e->link_eff,
               isnan(fits[k].net_eff) ? e->net_eff : fits[k].net_eff, e->net_eff,
               fits[k].collective_us, e->collective_s * 1e6, fits[k].hop_us,
               e->collective_hop_s * 1e6);
    }
    if (*hostwhat)
        printf("host memory bandwidth: %s\n", hostwhat);
    printf("wrote %s (%zu rows): give it to predict or report with --efficiency\n", out, nkeys);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "trnbench %s: %s\n", argv[0], err);
out:
    for (size_t k = 0; keys && k < nkeys; k++)
        free(keys[k].pts);
    free(keys);
    free(fits);
    free(hbw);
    free(meas);
    if (have_res)
        tb_results_release(&res);
    if (have_m)
        tb_model_release(&m);
    if (have_pr)
        tb_pricing_release(&pr);
    return rc;
}
