/*
 * harness/model/tb_cross.h: the performance model's error on rows it was not fitted on.
 * Cross-validation over a scenario table with measured values (reports/validation/
 * published.csv): the rows are split into folds (one source, one benchmark round or one
 * chip each), and for every fold the efficiency figures that the data chooses
 * (tb_cross_params: gemm_eff, kv_eff, layer_us, ...) are chosen again on the other folds'
 * rows, by the rule pricing/README.md gives for them (per efficiency family, the values
 * of a fixed grid that minimise the median plus half the 90th percentile of the family's
 * absolute percentage errors, one figure at a time until none moves), and the fold's
 * rows are predicted with those figures. The held-out error is the error of those
 * predictions; `trnbench validate --cross` prints it beside the in-sample one and writes
 * the per-row figures (reports/validation/cross.csv) that the report, cost.csv and the
 * assessment take their error bands from (tb_validate_file).
 *
 * Ownership: a struct tb_cross owns its arrays and borrows nothing; tb_cross_release
 * frees it. The model passed to tb_cross_run is changed while it runs and restored
 * before it returns.
 */
#ifndef TB_CROSS_H
#define TB_CROSS_H

#include "tb_model.h"
#include "tb_scenario.h"
#include "tb_validate.h"

#include <stdbool.h>
#include <stddef.h>

/* What a fold holds. */
enum tb_cross_by {
    TB_CROSS_SOURCE, /* one published source (a document, a results repository) */
    TB_CROSS_ROUND,  /* one source's repository at one software version (a benchmark round,
                        an SDK release) */
    TB_CROSS_FAMILY  /* one chip ("H200 SXM", "Trainium2") */
};

/* Parse "source", "round" or "family"; -1 for anything else. */
int tb_cross_by_parse(const char *name);
const char *tb_cross_by_name(enum tb_cross_by by);

/* One row of the table. */
struct tb_cross_row {
    double in_sample; /* the prediction with the efficiency table as it is; NAN: none */
    double held_out;  /* with the figures chosen without the row's fold; NAN: none */
    long fold;        /* the row's fold (index into fold), -1: the row has no value */
    bool refit;       /* false: no other fold's row constrains the row's efficiency family,
                         so its figures could not be chosen without it (held_out is then
                         the in-sample prediction, and the row is not counted as held out) */
};

/* A fitted figure's values over the folds. */
struct tb_cross_param {
    char name[64];    /* "nvidia gemm_eff_fp8", "trainium1 prefill_floor_us" */
    double table;     /* its value in the efficiency table (the table's unit) */
    double lo, hi;    /* the least and the most chosen over the folds that refit it */
    long folds_refit; /* folds in which it was chosen again */
    long folds_moved; /* of those, folds where the choice differs from the table */
    size_t rows;      /* the rows whose prediction it moves (0: none constrains it; it keeps
                         the table's value) */
};

struct tb_cross {
    enum tb_cross_by by;
    struct tb_cross_row *row; /* owned: nrows, one per scenario row */
    size_t nrows;
    char (*fold)[96]; /* owned: nfolds fold keys */
    size_t nfolds;
    struct tb_cross_param *param; /* owned: nparams */
    size_t nparams;
    size_t held_out;          /* rows predicted held out (refit) */
    size_t not_refit;         /* rows with a value whose family nothing else constrains */
    struct tb_validation in;  /* the in-sample errors (tb_validate_compute) */
    struct tb_validation out; /* the held-out errors: rows not refit carry none */
};

/* Cross-validate s (predicted with m by tb_scenarios_predict) over folds by `by`, with up
 * to jobs processes (<= 1: this one); progress (NULL: none) is called with ctx as each
 * fold ends. m's efficiency rows are changed while it runs and restored. TB_OK, TB_EINPUT (a bad
 * row: tb_validate_compute's message), or TB_EFAIL (memory, a process that could not be started)
 * with the reason in err. */
int tb_cross_run(struct tb_cross *x, const struct tb_scenarios *s, struct tb_model *m,
                 enum tb_cross_by by, int jobs,
                 void (*progress)(void *ctx, size_t done, size_t total), void *ctx, char *err,
                 size_t errlen);
void tb_cross_release(struct tb_cross *x);

/* Write the per-row figures as CSV: id, family, phase, precision, metric, value,
 * in_sample, held_out, fold, refit, by. 0, or -1 on a write error. */
int tb_cross_write(const struct tb_cross *x, const struct tb_scenarios *s, FILE *f);

/* The targets of held-out errors (issue 33): the overall median and p90 within t's, no
 * chip family with at least TB_VALIDATE_MIN_ROWS held-out rows above a p90 of
 * family_p90_max, at least coverage_min percent of the complete rows predicted held out.
 * Fills why with the first target missed ("" when met). */
bool tb_cross_met(const struct tb_cross *x, const struct tb_validate_targets *t,
                  double family_p90_max, char *why, size_t len);

/* Replace v's errors (tb_validate_file's, in-sample) by the held-out ones that the
 * file path (reports/validation/cross.csv; NULL: the data folder's) records for s's rows,
 * when that file was written from the same rows and the same predictions (each row's
 * in_sample within 1e-6 of s's prediction); else v stays as it was. Returns 1 when
 * replaced, 0 when not (why says so: absent, stale, unreadable), -1 for memory. */
int tb_cross_apply(struct tb_validation *v, const struct tb_scenarios *s, const char *path,
                   char *why, size_t len);

#endif
