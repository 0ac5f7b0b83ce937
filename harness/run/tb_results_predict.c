/* harness/run/tb_results_predict.c: `trnbench predict`'s output read as results (see
 * tb_results.h). A predict output is a scenario table (one question a row: a workload on
 * a target and one metric) with the columns predicted, model_version, why, bound and
 * assumptions added; each predicted row becomes one results row of provenance modeled,
 * source the model version, its notes the scenario's id, bound and assumptions, so the
 * report prices it like a suite's predict line. The rows keep their file and line:
 * messages and the report's provenance name the predict output, not a copy. */
#include "tb_results.h"

#include "tb_suite.h"
#include "tb_util.h"
#include "tb_vocab.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool tb_results_is_predict(const struct tb_csv_table *t)
{
    return tb_csv_col(t, "predicted") >= 0 && tb_csv_col(t, "model_version") >= 0 &&
           tb_csv_col(t, "provenance") < 0;
}

/* Why rows were skipped: how many, and the first reason seen. */
struct skipped {
    size_t n;
    char first[200];
};

static void skip(struct skipped *s, const char *what)
{
    if (!s->n++)
        snprintf(s->first, sizeof s->first, "%s", what);
}

static void note(char *buf, size_t len, const char *fmt, ...) TB_PRINTF(3, 4);
static void note(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tb_lines_vadd(buf, len, fmt, ap);
    va_end(ap);
}

/* The text a converted row's cells point to beside the predict output's own. */
struct conv {
    char id[320], value[32], unit[32], notes[900], chips[24];
};

/* Predict row r of t as a results row: row's cells point into t and cv. Returns 1 when
 * converted, 0 when skipped (counted in nowhy or nometric). */
static int convert_row(const struct tb_csv_table *t, size_t r, struct conv *cv, const char **row,
                       struct skipped *nowhy, struct skipped *nometric)
{
#define G(k) tb_csv_field(t, r, k)
    const char *phase = G("phase"), *metric = G("metric"), *pred = G("predicted");
    const char *seq_out = NULL, *chips = G("chips");
    char full[1400];
    const struct tb_metric *m = tb_metric_find(metric);
    enum tb_phase ph;
    double v;
    size_t k;

    if (*G("why") || !*pred) {
        skip(nowhy, *G("why") ? G("why") : "no prediction");
        return 0;
    }
    if (tb_phase_from_string(phase, &ph) != 0 || !m || !(m->modeled & TB_PHASE_BIT(ph))) {
        skip(nometric, metric);
        return 0;
    }
    memset(row, 0, TB_RESULTS_NCOLS * sizeof *row);
    /* the number is checked again by the reader, against the line it came from */
    snprintf(cv->value, sizeof cv->value, "%s", pred);
    if (tb_parse_double(pred, -1e300, 1e300, &v) == 0)
        snprintf(cv->value, sizeof cv->value, "%.6g", v);
    snprintf(cv->unit, sizeof cv->unit, "%s", *G("unit") ? G("unit") : m->unit);
    if (ph == TB_PHASE_SERVE || ph == TB_PHASE_DECODE)
        seq_out = *G("seq_out") ? G("seq_out") : NULL;
    /* the id a suite's predict line of the same fields gets, so the report groups it the
     * same way; "/chips<N>" when the row names its chips, as a GPU run's modeled twin
     * does, before "/x<instances>" */
    tb_model_run_id(full, sizeof full, G("target"), G("model"), phase,
                    *G("batch") ? G("batch") : NULL, G("seq_in"), seq_out,
                    *G("steps") ? G("steps") : NULL, *G("resolution") ? G("resolution") : NULL,
                    *G("precision") ? G("precision") : NULL, NULL);
    k = strlen(full);
    if (*chips && k < sizeof full)
        k += (size_t)snprintf(full + k, sizeof full - k, "/chips%.64s", chips);
    tb_model_run_id_terms(full, sizeof full, G("spec_accept"), G("spec_len"), G("draft_model"),
                          G("prefix_hit"), G("software"));
    k = strlen(full);
    if (*G("instances") && k < sizeof full) /* last: the config leaves it out */
        snprintf(full + k, sizeof full - k, "/x%.64s", G("instances"));
    tb_run_id_fit(cv->id, TB_MODEL_RUN_ID_LEN, full); /* a suite's id fits as much */
    snprintf(cv->notes, sizeof cv->notes, "trnbench predict%s%s%s; %s%s%s",
             *G("id") ? ", row " : "", G("id"), *G("id") ? "" : " output",
             *G("bound") ? G("bound") : "", *G("bound") ? "-bound; " : "", G("assumptions"));
    row[TB_COL_RUN_ID] = cv->id;
    row[TB_COL_PROVENANCE] = "modeled";
    row[TB_COL_TARGET] = G("target");
    row[TB_COL_INSTANCES] = G("instances");
    row[TB_COL_EXECUTOR] = "model";
    row[TB_COL_MODEL] = G("model");
    row[TB_COL_PHASE] = phase;
    row[TB_COL_PRECISION] = *G("precision") ? G("precision") : "bf16";
    /* "max": the throughput-maximising batch, which the output states only in words */
    row[TB_COL_BATCH] = strcmp(G("batch"), "max") ? G("batch") : "";
    row[TB_COL_SEQ_IN] = G("seq_in");
    row[TB_COL_SEQ_OUT] = seq_out ? seq_out : "";
    row[TB_COL_STEPS] = G("steps");
    row[TB_COL_RESOLUTION] = G("resolution");
    row[TB_COL_METRIC] = metric;
    row[TB_COL_VALUE] = cv->value;
    row[TB_COL_UNIT] = cv->unit;
    row[TB_COL_SOURCE] = G("model_version");
    row[TB_COL_NOTES] = cv->notes;
    row[TB_COL_CHIPS_USED] = chips;
    return 1;
#undef G
}

int tb_results_from_predict(struct tb_csv_table *t, char *notes, size_t noteslen, char *err,
                            size_t errlen)
{
    struct skipped nowhy = {0}, nometric = {0};
    struct tb_csv_table nt;
    char *buf = NULL;
    size_t len = 0, n = 0;
    long *lines = tb_alloc_array(t->nrows + 1, sizeof *lines);
    FILE *mem = open_memstream(&buf, &len);
    int rc = -1, bad = 0;

    memset(&nt, 0, sizeof nt);
    if (!lines || !mem) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    for (int c = 0; c < TB_RESULTS_NCOLS; c++)
        bad |= tb_csv_put(mem, TB_RESULTS_COLUMNS[c], c + 1 < TB_RESULTS_NCOLS ? ',' : '\n');
    for (size_t r = 0; r < t->nrows && !bad; r++) {
        const char *row[TB_RESULTS_NCOLS];
        struct conv cv;
        if (!convert_row(t, r, &cv, row, &nowhy, &nometric))
            continue;
        for (int c = 0; c < TB_RESULTS_NCOLS; c++)
            bad |= tb_csv_put(mem, row[c] ? row[c] : "", c + 1 < TB_RESULTS_NCOLS ? ',' : '\n');
        lines[n++] = t->lines[r];
    }
    bad |= fclose(mem);
    mem = NULL;
    if (bad) {
        tb_err(err, errlen, "%s: cannot convert the predict output", t->path);
        goto out;
    }
    if (!n) {
        tb_err(err, errlen,
               "%s: a trnbench predict output without a predicted row (%zu rows; %zu not "
               "predicted%s%s%s, %zu of a metric results do not record%s%s%s)",
               t->path, t->nrows, nowhy.n, nowhy.n ? ", e.g. '" : "", nowhy.first,
               nowhy.n ? "'" : "", nometric.n, nometric.n ? ", e.g. '" : "", nometric.first,
               nometric.n ? "'" : "");
        goto out;
    }
    if (tb_csv_parse(&nt, t->path, buf, len, err, errlen) != 0)
        goto out;
    TB_ASSERT(nt.nrows == n);
    memcpy(nt.lines, lines, n * sizeof *lines); /* the predict output's own lines */
    if (notes) {
        char why[320] = "", what[320] = "";
        if (nowhy.n)
            snprintf(why, sizeof why, "; %zu skipped, not predicted (why set, e.g. '%s')", nowhy.n,
                     nowhy.first);
        if (nometric.n)
            snprintf(what, sizeof what, "; %zu skipped, a metric results do not record (%s)",
                     nometric.n, nometric.first);
        note(notes, noteslen, "%s: a trnbench predict output: %zu row%s read as modeled%s%s",
             t->path, n, n == 1 ? "" : "s", why, what);
    }
    tb_csv_release(t);
    *t = nt;
    memset(&nt, 0, sizeof nt);
    rc = 0;
out:
    if (mem)
        fclose(mem);
    free(buf);
    free(lines);
    tb_csv_release(&nt);
    return rc;
}
