/*
 * harness/model/tb_validate.h: the performance model's error against measured values, per
 * chip family, per family and phase, per family, phase and precision, and overall. A scenario table
 * whose rows carry a measured value (reports/validation/published.csv) is predicted first
 * (tb_scenario.h); this module turns those predictions into absolute percentage errors (APE, in
 * percent), their median and 90th percentile per family and overall, the coverage (the share of
 * rows with a complete shape that the model predicted) and the pass/fail verdict against targets.
 * `trnbench validate` prints them (harness/cmd_predict.c); the migration assessment (tb_assess.h)
 * takes each family's median as the model's error there. A row that assumes a serving
 * term (speculative decoding, prefix caching: its spec_accept, spec_len, draft_model or a
 * prefix_hit above 0) counts overall and in a phase group of its own ("decode+spec",
 * "prefill+prefix"), not in its family's, so that a plain workload's error band comes
 * from plain rows.
 *
 * Ownership: a struct tb_validation owns its groups and their error arrays and borrows
 * nothing from the scenarios it was computed from; tb_validate_release frees it.
 */
#ifndef TB_VALIDATE_H
#define TB_VALIDATE_H

#include "tb_scenario.h"
#include "tb_util.h"

#include <stdbool.h>
#include <stddef.h>

/* The rows of one chip family (or all of them). */
struct tb_validate_group {
    char family[64];    /* the targets' chip name ("Trainium1", "H100 SXM5"); "" for rows
                           whose target is unknown, and for the overall group */
    char phase[16];     /* the rows' phase ("serve", "train") in a per-phase group; "" in a
                           family's group and the overall one */
    char precision[16]; /* the rows' precision ("bf16", "fp8") in a per-precision group; ""
                           in the other groups (and for rows that leave it empty) */
    double *ape;        /* owned: n absolute percentage errors, in row order */
    size_t rows;        /* rows with a measured value */
    size_t complete;    /* of those, rows whose shape has what the phase needs */
    size_t n;           /* of those, rows the model predicted */
    double median;      /* median of ape, percent; NAN when n is 0 or an error is not finite */
    double p90;         /* 90th percentile of ape, percent; NAN likewise */
};

struct tb_validation {
    struct tb_validate_group *groups; /* owned: ngroups, in the order families first appear */
    size_t ngroups;
    struct tb_validate_group *phases; /* owned: nphases (family, phase) groups */
    size_t nphases;
    struct tb_validate_group *precisions; /* owned: nprecisions (family, phase, precision)
                                             groups, in the order they first appear */
    size_t nprecisions;
    struct tb_validate_group all;   /* every row with a measured value */
    struct tb_validate_group plain; /* of those, the rows without a term (tb_validate_term):
                                       the rows efficiency figures are chosen on */
    double coverage;                /* percent: all.n of all.complete (0 when none is complete) */
    char basis[64];      /* how the errors were obtained: "" in-sample (the rows the figures
                            were chosen on), "held out, one source at a time" from
                            cross-validation (tb_cross_apply) */
    char cross_why[256]; /* tb_validate_file of the project's table: why its errors are
                            held out or are not ("reports/validation/cross.csv: row 'P001'
                            was predicted ... : the model or its figures changed") */
};

/* Pass/fail targets, in percent. */
struct tb_validate_targets {
    double median_max;   /* the overall median error at most this (default 10) */
    double p90_max;      /* the overall p90 error at most this (default 25) */
    double coverage_min; /* the coverage at least this (default 80) */
};

void tb_validate_targets_init(struct tb_validate_targets *t);

/* The errors of every row of s that has a measured value: rows without one are left
 * out; a row not predicted counts in rows (and complete) but has no error. Returns
 * TB_OK; TB_EINPUT with "path: line N: field 'value': ..." when a row's value is not a
 * number above 0 (NaN, inf, 0, negative); TB_EFAIL with "out of memory" in err (v is
 * then empty unless TB_OK). */
int tb_validate_compute(struct tb_validation *v, const struct tb_scenarios *s, char *err,
                        size_t errlen);
void tb_validate_release(struct tb_validation *v);

/* The term row r of s assumes: "moe" (its model is a mixture of experts), "spec"
 * (speculative decoding: spec_accept, spec_len or draft_model given), "prefix" (a
 * prefix-cache hit above 0), NULL for a plain row (a dense model, no serving term). Such a row
 * counts in a phase group of its own ("decode+spec"), not in its family's, and no efficiency figure
 * is chosen on it (tb_cross.h). */
const char *tb_validate_term(const struct tb_scenarios *s, size_t r);

/* The errors of the validation file path (NULL: the data folder's
 * reports/validation/published.csv, whose errors are then the held-out ones of
 * reports/validation/cross.csv when that file was computed from the same predictions:
 * tb_cross_apply; cross_why says which) predicted with m. Returns TB_OK; TB_EINPUT with the
 * reason when the file is missing or cannot be read as a scenario table; TB_EFAIL for
 * memory. v is empty unless TB_OK. */
int tb_validate_file(struct tb_validation *v, const char *path, const struct tb_model *m, char *err,
                     size_t errlen);

/* The group of a chip family, or NULL when no row with a measured value has it. */
const struct tb_validate_group *tb_validate_family(const struct tb_validation *v,
                                                   const char *family);
/* The group of a chip family in one phase, or NULL likewise. */
const struct tb_validate_group *tb_validate_family_phase(const struct tb_validation *v,
                                                         const char *family, const char *phase);

/* The group of a chip family in one phase and precision ("" for rows without one), or
 * NULL likewise. */
const struct tb_validate_group *tb_validate_family_phase_precision(const struct tb_validation *v,
                                                                   const char *family,
                                                                   const char *phase,
                                                                   const char *precision);

/* The rows a family and phase need before their own error is trusted alone. */
#define TB_VALIDATE_MIN_ROWS 10

/* The error band the model's figures for a chip family in a phase carry: the 90th
 * percentile of the absolute percentage errors of
 *   - the family's rows of that phase, when at least TB_VALIDATE_MIN_ROWS were predicted;
 *   - else the family's rows of every phase, when that many, or the larger of that and
 *     the phase's own p90;
 *   - else the larger of every row's p90 and the family's own (few = true: the family is
 *     validated on fewer rows than that, or none).
 * Sets *pct (percent, at most 90) and basis ("p90 of 41 H100 SXM5 rows", "Trainium2:
 * validated on only 3 rows; the larger of their p90 (31.2%) and that of all 104 rows (24.0%)").
 * Returns false (and *pct NAN) when v has no predicted row at all. */
bool tb_validate_error(const struct tb_validation *v, const char *family, const char *phase,
                       double *pct, bool *few, char *basis, size_t len);

/* Whether the targets are met: at least one row predicted, the overall median and p90
 * within their maxima and the coverage at least its minimum. */
bool tb_validate_met(const struct tb_validation *v, const struct tb_validate_targets *t);

#endif
