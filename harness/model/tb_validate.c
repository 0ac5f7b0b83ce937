/* harness/model/tb_validate.c: the model's validation error per chip family (tb_validate.h),
 * between the scenario predictions (tb_scenario.c) and `trnbench validate` or the
 * migration assessment. */
#include "tb_validate.h"

#include "tb_cross.h"

#include "tb_stats.h"
#include "tb_util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_validate_targets_init(struct tb_validate_targets *t)
{
    /* the model's targets (issue 18): a median within 10%, 90% of rows within 25% */
    t->median_max = 10;
    t->p90_max = 25;
    t->coverage_min = 80;
}

/* The group of (family, phase, precision) in g[0..n), or NULL; NULL phase or precision:
 * "". */
static struct tb_validate_group *lookup(struct tb_validate_group *g, size_t n, const char *family,
                                        const char *phase, const char *precision)
{
    phase = phase ? phase : "";
    precision = precision ? precision : "";
    for (size_t i = 0; i < n; i++)
        if (!strcmp(g[i].family, family) && !strcmp(g[i].phase, phase) &&
            !strcmp(g[i].precision, precision))
            return &g[i];
    return NULL;
}

/* The group of (family, phase, precision) in g[0..*n), added when new. */
static struct tb_validate_group *find_group(struct tb_validate_group *g, size_t *n,
                                            const char *family, const char *phase,
                                            const char *precision)
{
    struct tb_validate_group *x = lookup(g, *n, family, phase, precision);
    if (x)
        return x;
    snprintf(g[*n].family, sizeof g[*n].family, "%s", family);
    snprintf(g[*n].phase, sizeof g[*n].phase, "%s", phase ? phase : "");
    snprintf(g[*n].precision, sizeof g[*n].precision, "%s", precision ? precision : "");
    return &g[(*n)++];
}

/* A scenario row's field ("" when the table has no such column). */
static const char *field_of(const struct tb_scenarios *s, size_t r, const char *name)
{
    const char *f = tb_csv_field(&s->csv, r, name);
    return f ? f : "";
}

const char *tb_validate_term(const struct tb_scenarios *s, size_t r)
{
    const char *hit = field_of(s, r, "prefix_hit");
    if (s->res[r].moe)
        return "moe";
    return *field_of(s, r, "spec_accept") || *field_of(s, r, "spec_len") ||
                   *field_of(s, r, "draft_model")
               ? "spec"
           : *hit && strtod(hit, NULL) > 0 ? "prefix"
                                           : NULL;
}

/* The groups row r of s counts in: its family's, its (family, phase)'s and its (family,
 * phase, precision)'s. */
static void groups_of(struct tb_validation *v, const struct tb_scenarios *s, size_t r,
                      struct tb_validate_group *g[3])
{
    const char *family = s->res[r].family, *phase = field_of(s, r, "phase");
    const char *term = tb_validate_term(s, r);
    char ph[16];
    /* a row that assumes a serving term (speculative decoding, prefix caching) says how
     * well the model does the term: it counts in the overall figures and in a phase group
     * of its own ("decode+spec", "prefill+prefix"), not in its family's, so that a plain
     * workload's error range (tb_validate_error: the report's, cost.csv's) comes from
     * plain rows */
    if (term)
        snprintf(ph, sizeof ph, "%.8s+%s", phase, term);
    g[0] = term ? NULL : find_group(v->groups, &v->ngroups, family, NULL, NULL);
    g[1] = find_group(v->phases, &v->nphases, family, term ? ph : phase, NULL);
    g[2] = find_group(v->precisions, &v->nprecisions, family, term ? ph : phase,
                      field_of(s, r, "precision"));
}

/* Room for each of n groups' errors; fails only for memory. */
static int alloc_errors(struct tb_validate_group *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(g[i].ape = tb_alloc_array(g[i].rows + 1, sizeof *g[i].ape)))
            return TB_EFAIL;
    return TB_OK;
}

/* Median and p90 of g's errors; NAN when there are none or one is not finite (a value
 * so small that the error overflows). Fails only for memory. */
static int summarise(struct tb_validate_group *g, char *err, size_t errlen)
{
    double p[2] = {50, 90}, q[2];
    g->median = g->p90 = NAN;
    for (size_t i = 0; i < g->n; i++)
        if (!isfinite(g->ape[i]))
            return TB_OK;
    if (g->n == 0)
        return TB_OK;
    if (tb_stats_percentiles(g->ape, g->n, p, 2, q, err, errlen) != 0)
        return TB_EFAIL;
    g->median = q[0];
    g->p90 = q[1];
    return TB_OK;
}

int tb_validate_compute(struct tb_validation *v, const struct tb_scenarios *s, char *err,
                        size_t errlen)
{
    struct tb_validate_group *lists[3];
    size_t counts[3];
    memset(v, 0, sizeof *v);
    v->all.median = v->all.p90 = NAN;
    v->plain.median = v->plain.p90 = NAN;
    /* a measured value that is NaN, infinite, zero or negative is a broken row, refused
     * by name, never a row quietly left out of the error */
    for (size_t r = 0; r < s->nrows; r++)
        if (s->res[r].bad_value) {
            tb_err(err, errlen, "%s: line %ld: %s", s->csv.path, s->csv.lines[r], s->res[r].why);
            return TB_EINPUT;
        }
    v->groups = calloc(s->nrows + 1, sizeof *v->groups);
    v->phases = calloc(s->nrows + 1, sizeof *v->phases);
    v->precisions = calloc(s->nrows + 1, sizeof *v->precisions);
    v->all.ape = tb_alloc_array(s->nrows + 1, sizeof *v->all.ape);
    v->plain.ape = tb_alloc_array(s->nrows + 1, sizeof *v->plain.ape);
    if (!v->groups || !v->phases || !v->precisions || !v->all.ape || !v->plain.ape)
        goto oom;
    /* the groups and their row counts first, then each group's errors */
    for (size_t r = 0; r < s->nrows; r++) {
        const struct tb_scenario_result *x = &s->res[r];
        struct tb_validate_group *g[3];
        if (!x->has_value)
            continue;
        groups_of(v, s, r, g);
        for (int k = 0; k < 3; k++) {
            if (!g[k])
                continue;
            g[k]->rows++;
            g[k]->complete += !x->incomplete;
        }
        v->all.rows++;
        v->all.complete += !x->incomplete;
        if (!tb_validate_term(s, r)) {
            v->plain.rows++;
            v->plain.complete += !x->incomplete;
        }
    }
    lists[0] = v->groups, counts[0] = v->ngroups;
    lists[1] = v->phases, counts[1] = v->nphases;
    lists[2] = v->precisions, counts[2] = v->nprecisions;
    for (int k = 0; k < 3; k++)
        if (alloc_errors(lists[k], counts[k]) != TB_OK)
            goto oom;
    for (size_t r = 0; r < s->nrows; r++) {
        const struct tb_scenario_result *x = &s->res[r];
        struct tb_validate_group *g[3];
        double ape;
        if (!x->has_value || isnan(x->predicted))
            continue;
        groups_of(v, s, r, g);
        ape = fabs(x->predicted - x->value) / x->value * 100.0;
        for (int k = 0; k < 3; k++)
            if (g[k])
                g[k]->ape[g[k]->n++] = ape;
        v->all.ape[v->all.n++] = ape;
        if (!tb_validate_term(s, r))
            v->plain.ape[v->plain.n++] = ape;
    }
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < counts[k]; i++)
            if (summarise(&lists[k][i], err, errlen) != TB_OK)
                goto oom;
    if (summarise(&v->all, err, errlen) != TB_OK || summarise(&v->plain, err, errlen) != TB_OK)
        goto oom;
    v->coverage = v->all.complete ? 100.0 * (double)v->all.n / (double)v->all.complete : 0;
    return TB_OK;
oom:
    tb_validate_release(v);
    return tb_err(err, errlen, "out of memory");
}

int tb_validate_file(struct tb_validation *v, const char *path, const struct tb_model *m, char *err,
                     size_t errlen)
{
    struct tb_scenarios s;
    char def[PATH_MAX];
    const char *name = path; /* as messages name it: no machine's path for the default */
    int rc;
    memset(v, 0, sizeof *v);
    if (!path) {
        snprintf(def, sizeof def, "%s/reports/validation/published.csv", tb_datadir());
        path = def;
        name = "reports/validation/published.csv";
    }
    if (!tb_file_exists(path)) {
        tb_err(err, errlen, "%s not found", name);
        return TB_EINPUT;
    }
    if (tb_scenarios_predict(&s, path, m, err, errlen) != 0)
        return TB_EINPUT;
    rc = tb_validate_compute(v, &s, err, errlen);
    /* the project's own table: its held-out errors (cross.csv beside it) when they were
     * computed from these very predictions; else the in-sample ones, said so */
    if (rc == TB_OK && name != path &&
        tb_cross_apply(v, &s, NULL, v->cross_why, sizeof v->cross_why) < 0) {
        tb_err(err, errlen, "out of memory");
        rc = TB_EFAIL;
    }
    tb_scenarios_release(&s);
    return rc;
}

void tb_validate_release(struct tb_validation *v)
{
    for (size_t i = 0; v->groups && i < v->ngroups; i++)
        free(v->groups[i].ape);
    for (size_t i = 0; v->phases && i < v->nphases; i++)
        free(v->phases[i].ape);
    for (size_t i = 0; v->precisions && i < v->nprecisions; i++)
        free(v->precisions[i].ape);
    free(v->groups);
    free(v->phases);
    free(v->precisions);
    free(v->all.ape);
    free(v->plain.ape);
    memset(v, 0, sizeof *v);
}

const struct tb_validate_group *tb_validate_family(const struct tb_validation *v,
                                                   const char *family)
{
    return lookup(v->groups, v->ngroups, family, NULL, NULL);
}

const struct tb_validate_group *tb_validate_family_phase(const struct tb_validation *v,
                                                         const char *family, const char *phase)
{
    return lookup(v->phases, v->nphases, family, phase, NULL);
}

const struct tb_validate_group *tb_validate_family_phase_precision(const struct tb_validation *v,
                                                                   const char *family,
                                                                   const char *phase,
                                                                   const char *precision)
{
    return lookup(v->precisions, v->nprecisions, family, phase, precision);
}

/* Whether g has an error to use: predicted rows and a finite p90. */
static bool usable(const struct tb_validate_group *g, size_t min_rows)
{
    return g && g->n >= min_rows && g->n > 0 && isfinite(g->p90);
}

bool tb_validate_error(const struct tb_validation *v, const char *family, const char *phase,
                       double *pct, bool *few, char *basis, size_t len)
{
    const struct tb_validate_group *f = family ? tb_validate_family(v, family) : NULL;
    const struct tb_validate_group *fp =
        family && phase ? tb_validate_family_phase(v, family, phase) : NULL;
    double e;
    *pct = NAN;
    *few = true;
    if (!usable(&v->all, 1)) {
        snprintf(basis, len, "no validation rows");
        return false;
    }
    if (usable(fp, TB_VALIDATE_MIN_ROWS)) {
        e = fp->p90;
        *few = false;
        snprintf(basis, len, "p90 of %zu %s %s rows", fp->n, family, phase);
    } else if (usable(f, TB_VALIDATE_MIN_ROWS)) {
        e = f->p90;
        if (usable(fp, 1) && fp->p90 > e)
            e = fp->p90;
        *few = false;
        snprintf(basis, len, "p90 of %zu %s rows (%zu of them %s)", f->n, family,
                 usable(fp, 1) ? fp->n : 0, phase ? phase : "");
    } else {
        e = v->all.p90;
        if (usable(f, 1) && f->p90 > e)
            e = f->p90;
        if (usable(f, 1))
            snprintf(basis, len,
                     "%s: validated on only %zu rows; the larger of their p90 (%.1f%%) and that "
                     "of all %zu rows (%.1f%%)",
                     family, f->n, f->p90, v->all.n, v->all.p90);
        else
            snprintf(basis, len, "%s: not validated; the p90 of all %zu rows used",
                     family && *family ? family : "target", v->all.n);
    }
    if (v->basis[0]) {
        size_t k = strlen(basis);
        snprintf(basis + k, len > k ? len - k : 0, " (%s)", v->basis);
    } else {
        size_t k = strlen(basis);
        snprintf(basis + k, len > k ? len - k : 0, " (in-sample)");
    }
    *pct = e > 90 ? 90 : e;
    return true;
}

bool tb_validate_met(const struct tb_validation *v, const struct tb_validate_targets *t)
{
    return v->all.n > 0 && v->all.median <= t->median_max && v->all.p90 <= t->p90_max &&
           v->coverage >= t->coverage_min;
}
