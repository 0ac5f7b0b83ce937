/* harness/dist/tb_nccom.c: see tb_nccom.h. */
#include "tb_nccom.h"

#include "tb_neuron.h"
#include "tb_proc.h"
#include "tb_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB_PER_GB 1.073741824 /* GiB/s x this = GB/s */

const char *tb_nccom_op(enum tb_coll_op op)
{
    switch (op) {
    case TB_COLL_ALL_REDUCE:
        return "allr";
    case TB_COLL_ALL_GATHER:
        return "allg";
    case TB_COLL_REDUCE_SCATTER:
        return "redsct";
    case TB_COLL_SENDRECV:
        return "sendrecv";
    case TB_COLL_ALL_TO_ALL:
        break;
    }
    return NULL;
}

/* Whether line (len bytes) is the table's header: its six documented columns in order. */
static bool is_header(const char *line)
{
    static const char *const cols[] = {"size(B)",  "count(elems)", "type",
                                       "time(us)", "algbw(GB/s)",  "busbw(GB/s)"};
    const char *p = line;
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        size_t n = strlen(cols[i]);
        p += strspn(p, " \t");
        if (strncmp(p, cols[i], n) != 0)
            return false;
        p += n;
    }
    return true;
}

int tb_nccom_parse(const char *name, const char *text, size_t len, enum tb_coll_op op, int nranks,
                   bool checked, struct tb_coll_result *r, bool *stand_in, char *err, size_t errlen)
{
    char *copy = NULL, *line, *save = NULL;
    size_t cap = 0;
    long lineno = 0, errors = 0;
    bool header = false, avg = false;
    int rc = TB_EINPUT;

    memset(r, 0, sizeof *r);
    r->op = op;
    r->nranks = nranks;
    r->factor = tb_coll_busbw_factor(op, nranks);
    *stand_in = false;
    if (memchr(text, '\0', len))
        return tb_err(err, errlen, "%s: a NUL byte in the output", name);
    copy = malloc(len + 1);
    if (!copy)
        return tb_err(err, errlen, "out of memory");
    memcpy(copy, text, len);
    copy[len] = '\0';
    *stand_in = strstr(copy, TB_NEURON_STAND_IN_KEY) != NULL;
    /* strtok_r would skip empty lines and lose the count: walk by hand */
    for (line = copy; line; line = save) {
        char *nl = strchr(line, '\n'), *t;
        char type[32], rest[2];
        unsigned long long size, count;
        double time_us, alg, bus;
        save = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        lineno++;
        t = tb_trim(line);
        if (!*t || strstr(t, TB_NEURON_STAND_IN_KEY))
            continue;
        if (!header) {
            header = is_header(t);
            continue; /* what comes before the table (warnings, the tool's banner) */
        }
        if (!strncmp(t, "Avg bus bandwidth", 17)) {
            avg = true;
            continue;
        }
        if (strstr(t, "errors found")) {
            errors = strtol(t, NULL, 10);
            if (errors < 1)
                errors = 1;
            continue;
        }
        if (strstr(t, "Failure")) {
            tb_err(err, errlen, "%s: line %ld: nccom-test failed: '%.300s'", name, lineno, t);
            rc = TB_EFAIL;
            goto fail;
        }
        if (avg)
            continue; /* nothing documented follows the average */
        if (sscanf(t, "%llu %llu %31s %lf %lf %lf %1s", &size, &count, type, &time_us, &alg, &bus,
                   rest) != 6) {
            tb_err(err, errlen,
                   "%s: line %ld: expected 'size(B) count(elems) type time(us) algbw(GB/s) "
                   "busbw(GB/s)', got '%.200s'",
                   name, lineno, t);
            goto fail;
        }
        if (strcmp(type, "fp32") != 0) {
            tb_err(err, errlen, "%s: line %ld: field 'type': '%s', trnbench asks for fp32", name,
                   lineno, type);
            goto fail;
        }
        if (!(time_us > 0) || !(alg >= 0) || !(bus >= 0) || size == 0 || count * 4 != size) {
            tb_err(err, errlen,
                   "%s: line %ld: not a measurement: %llu B, %llu elements, %g us, %g and %g "
                   "GiB/s",
                   name, lineno, size, count, time_us, alg, bus);
            goto fail;
        }
        if (r->nsizes && size <= r->sizes[r->nsizes - 1].bytes) {
            /* nccom-test's sizes rise (-b .. -e by -f): the same size twice would be two
             * rows of one run id, and a rerun could not tell which is recorded */
            tb_err(err, errlen, "%s: line %ld: size %llu B is not above the line before's %zu B",
                   name, lineno, size, r->sizes[r->nsizes - 1].bytes);
            goto fail;
        }
        if (r->nsizes == cap) {
            size_t nc = cap ? cap * 2 : 32;
            struct tb_coll_size *p = realloc(r->sizes, nc * sizeof *p);
            if (!p) {
                tb_err(err, errlen, "out of memory");
                goto fail;
            }
            r->sizes = p;
            cap = nc;
        }
        {
            struct tb_coll_size *z = &r->sizes[r->nsizes++];
            memset(z, 0, sizeof *z);
            z->bytes = (size_t)size;
            z->count = (size_t)count;
            z->time_us[0] = z->min_us[0] = z->max_us[0] = time_us;
            z->stddev_us[0] = 0;
            /* bandwidths from the size and the printed time: the printed GiB/s carry two
             * decimals only (0.00 at small sizes); the printed ones are checked against them */
            z->algbw_gbs[0] = (double)size / (time_us * 1e3);
            z->busbw_gbs[0] = z->algbw_gbs[0] * r->factor;
            if (alg >= 0.5 && (z->algbw_gbs[0] / GIB_PER_GB > alg * 1.05 + 0.01 ||
                               z->algbw_gbs[0] / GIB_PER_GB < alg * 0.95 - 0.01)) {
                tb_err(err, errlen,
                       "%s: line %ld: algbw %g GiB/s is not size / time (%g GiB/s): not "
                       "nccom-test's documented table",
                       name, lineno, alg, z->algbw_gbs[0] / GIB_PER_GB);
                goto fail;
            }
            z->ran[0] = true;
            z->ran[1] = false;
            z->wrong[0] = checked ? 0 : -1;
            z->wrong[1] = -1;
        }
    }
    if (errors) {
        tb_err(err, errlen, "%s: nccom-test reported %ld errors", name, errors);
        rc = TB_EFAIL;
        goto fail;
    }
    if (!header) {
        tb_err(err, errlen, "%s: no 'size(B) count(elems) type time(us) ...' header", name);
        goto fail;
    }
    if (!r->nsizes) {
        tb_err(err, errlen, "%s: the table has no rows", name);
        goto fail;
    }
    free(copy);
    return 0;
fail:
    free(copy);
    tb_coll_result_release(r);
    return rc;
}

int tb_nccom_run(const struct tb_nccom_opts *o, struct tb_coll_result *r, char *tool,
                 size_t toollen, char *err, size_t errlen)
{
    char ranks[16], nodes[16], minb[32], maxb[32], factor[32], iters[16], warmup[16], how[256];
    char last[512], e[512] = "";
    const char *argv[24];
    const char *op = tb_nccom_op(o->op);
    struct tb_proc_opts po = {0};
    struct tb_proc_result pr = {0};
    bool stand_in = false;
    int n = 0, rc;

    memset(r, 0, sizeof *r);
    if (!op)
        return tb_err(err, errlen,
                      "nccom-test has no %s (its guide lists all_reduce, all_gather, "
                      "reduce_scatter and sendrecv)",
                      tb_coll_op_name(o->op));
    if (!tb_neuron_tool_find("nccom-test", tool, toollen)) {
        tb_err(err, errlen,
               "no nccom-test on PATH or in " TB_NEURON_TOOLS_DIR
               " (it comes with the Neuron SDK's aws-neuronx-tools package)");
        return 1;
    }
    snprintf(ranks, sizeof ranks, "%d", o->ranks);
    snprintf(nodes, sizeof nodes, "%d", o->nodes);
    snprintf(minb, sizeof minb, "%zu", o->min_bytes);
    snprintf(maxb, sizeof maxb, "%zu", o->max_bytes);
    snprintf(factor, sizeof factor, "%g", o->step_factor);
    snprintf(iters, sizeof iters, "%d", o->iters);
    snprintf(warmup, sizeof warmup, "%d", o->warmup);
    argv[n++] = tool;
    argv[n++] = "-r";
    argv[n++] = ranks;
    argv[n++] = "-N";
    argv[n++] = nodes;
    argv[n++] = "-b";
    argv[n++] = minb;
    argv[n++] = "-e";
    argv[n++] = maxb;
    argv[n++] = "-f";
    argv[n++] = factor;
    argv[n++] = "-n";
    argv[n++] = iters;
    argv[n++] = "-w";
    argv[n++] = warmup;
    argv[n++] = "-d";
    argv[n++] = "fp32";
    if (o->check)
        argv[n++] = "-c";
    argv[n++] = op;
    argv[n] = NULL;
    po.timeout_s = o->timeout_s;
    po.echo = stderr;
    po.echo_prefix = "nccom-test: ";
    if (tb_proc_run(argv, &po, &pr, e, sizeof e) != 0) {
        tb_proc_result_release(&pr);
        return tb_err(err, errlen, "'%.300s': %s", tool, e);
    }
    if (pr.exec_errno || pr.timed_out || pr.term_signal) {
        tb_proc_describe(&pr, o->timeout_s, how, sizeof how);
        tb_proc_last_line(pr.err_tail, last, sizeof last);
        tb_err(err, errlen, "'%.300s' %s%s%s", tool, how, last[0] ? ": " : "", last);
        tb_proc_result_release(&pr);
        return -1;
    }
    rc = tb_nccom_parse(tool, pr.out, pr.out_len, o->op, o->ranks, o->check, r, &stand_in, e,
                        sizeof e);
    if (stand_in && !tb_neuron_stand_in_allowed()) {
        tb_coll_result_release(r);
        tb_err(err, errlen,
               "'%.300s' is a stand-in for trnbench's own tests (its output carries \"%s\"), "
               "refused outside them (no TRNBENCH_TEST=1): take it off PATH",
               tool, TB_NEURON_STAND_IN_KEY);
        rc = -1;
    } else if (rc == 0 && pr.exit_status != 0) {
        tb_coll_result_release(r);
        tb_proc_describe(&pr, o->timeout_s, how, sizeof how);
        tb_err(err, errlen, "'%.300s' %s after its table", tool, how);
        rc = -1;
    } else if (rc != 0) {
        tb_err(err, errlen, "%s", e);
    }
    tb_proc_result_release(&pr);
    return rc;
}
