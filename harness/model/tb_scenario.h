/*
 * harness/model/tb_scenario.h: scenario tables (format: pricing/README.md and the project's
 * validation/README.md), predicted row by row with the performance model (tb_model.h).
 *
 * A row that cannot be predicted (unknown model or target, a missing column, nonsense
 * numbers, a phase the model does not cover, a layout that does not fit) gets no
 * prediction and a reason; it never stops the others. Only an unreadable file is an
 * error.
 *
 * Ownership: a struct tb_scenarios owns the table and the per-row results; release
 * with tb_scenarios_release.
 */
#ifndef TB_SCENARIO_H
#define TB_SCENARIO_H

#include "tb_csv.h"
#include "tb_model.h"
#include "tb_range.h"

#include <stdbool.h>
#include <stdio.h>

struct tb_scenario_result {
    double predicted;       /* in the row's unit; NAN when not predicted */
    char why[512];          /* why not predicted; "" when predicted */
    char family[64];        /* chip name of the target ("Trainium1", "H100 SXM5"), or "" */
    bool incomplete;        /* the row's shape lacks what the phase needs (seq_in, seq_out) */
    bool moe;               /* the row's model is a mixture of experts */
    bool has_value;         /* the row carries a measured value */
    bool bad_value;         /* the row's value is not a number above 0 (why says so) */
    double value;           /* that value */
    struct tb_prediction p; /* the whole prediction (when the row got that far) */
};

struct tb_scenarios {
    struct tb_csv_table csv;        /* owned */
    struct tb_scenario_result *res; /* owned: csv.nrows results */
    size_t nrows;
};

/* The numeric fields of a scenario row (and of a suite's predict line), their ranges:
 * README "Input ranges". */
extern const struct tb_range TB_SCENARIO_RANGES[];

/* A scenario as parsed from its fields: the model's typed question. */
struct tb_scenario_in {
    struct tb_scenario sc; /* sc.arch or sc.darch point into this struct */
    struct tb_arch arch;
    struct tb_darch darch;
    struct tb_arch draft; /* sc.draft points here when the row names a draft_model */
    const char *metric;   /* borrowed from the fields: the metric asked for */
};

/* Parse the fields of one scenario (as tb_scenario_predict_one) into *in without
 * predicting: 0, or -1 with the reason in res->why (res also gets family, has_value,
 * value and incomplete). Pointers in *in borrow from get's strings. */
int tb_scenario_parse(const char *(*get)(const void *ctx, const char *name), const void *ctx,
                      const struct tb_model *m, struct tb_scenario_in *in,
                      struct tb_scenario_result *res);

/* Predict one scenario whose fields (the scenario-table columns) get(ctx, name) returns
 * (NULL for a column that is absent) into *res, with the reason in res->why when it
 * cannot be predicted. */
void tb_scenario_predict_one(const char *(*get)(const void *ctx, const char *name), const void *ctx,
                             const struct tb_model *m, struct tb_scenario_result *res);

/* Parse row r of s's table as tb_scenario_parse does (in's pointers borrow from s, which
 * must outlive it). */
int tb_scenario_parse_row(const struct tb_scenarios *s, size_t r, const struct tb_model *m,
                          struct tb_scenario_in *in, struct tb_scenario_result *res);

/* Read path and predict every row. Returns 0, or -1 with "path: ..." when the file
 * cannot be read as CSV. */
int tb_scenarios_predict(struct tb_scenarios *s, const char *path, const struct tb_model *m,
                         char *err, size_t errlen);
void tb_scenarios_release(struct tb_scenarios *s);

/* Write the table with the columns predicted, model_version, why, bound and
 * assumptions added (replacing columns of those names). Returns 0 or -1 on a write
 * error. */
int tb_scenarios_write(const struct tb_scenarios *s, FILE *f);

/* The unit a metric is stated in ("ms", "tokens/s", "fraction", ...), or NULL for a
 * metric the model does not predict. */
const char *tb_scenario_metric_unit(const char *metric);

#endif
