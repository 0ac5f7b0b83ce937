/* harness/model/tb_validate.c: the model's validation error per chip family (tb_validate.h),
 * between the scenario predictions (tb_scenario.c) and `trnbench validate` or the
 * migration assessment. */
#include "tb_validate.h"

#include "tb_stats.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_validate_targets_init(struct tb_validate_targets *t)
{
    t->median_max = 15;
    t->p90_max = 40;
    t->coverage_min = 80;
}

/* The group of (family, phase) in g[0..*n), added when new; phase NULL: the family's. */
static struct tb_validate_group *find_group(struct tb_validate_group *g, size_t *n,
                                            const char *family, const char *phase)
{
    phase = phase ? phase : "";
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(g[i].family, family) && !strcmp(g[i].phase, phase))
            return &g[i];
    snprintf(g[*n].family, sizeof g[*n].family, "%s", family);
    snprintf(g[*n].phase, sizeof g[*n].phase, "%s", phase);
    return &g[(*n)++];
}

static struct tb_validate_group *group_of(struct tb_validation *v, const char *family)
{
    return find_group(v->groups, &v->ngroups, family, NULL);
}

/* A scenario row's phase ("" when the table has none). */
static const char *phase_of(const struct tb_scenarios *s, size_t r)
{
    const char *ph = tb_csv_field(&s->csv, r, "phase");
    return ph ? ph : "";
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
    memset(v, 0, sizeof *v);
    v->all.median = v->all.p90 = NAN;
    v->groups = calloc(s->nrows + 1, sizeof *v->groups);
    v->phases = calloc(s->nrows + 1, sizeof *v->phases);
    v->all.ape = tb_alloc_array(s->nrows + 1, sizeof *v->all.ape);
    if (!v->groups || !v->phases || !v->all.ape)
        goto oom;
    /* the groups and their row counts first, then each group's errors */
    for (size_t r = 0; r < s->nrows; r++) {
        const struct tb_scenario_result *x = &s->res[r];
        struct tb_validate_group *g;
        if (!x->has_value)
            continue;
        g = group_of(v, x->family);
        g->rows++;
        g->complete += !x->incomplete;
        g = find_group(v->phases, &v->nphases, x->family, phase_of(s, r));
        g->rows++;
        g->complete += !x->incomplete;
        v->all.rows++;
        v->all.complete += !x->incomplete;
    }
    for (size_t i = 0; i < v->ngroups; i++) {
        v->groups[i].ape = tb_alloc_array(v->groups[i].rows + 1, sizeof *v->groups[i].ape);
        if (!v->groups[i].ape)
            goto oom;
    }
    for (size_t i = 0; i < v->nphases; i++) {
        v->phases[i].ape = tb_alloc_array(v->phases[i].rows + 1, sizeof *v->phases[i].ape);
        if (!v->phases[i].ape)
            goto oom;
    }
    for (size_t r = 0; r < s->nrows; r++) {
        const struct tb_scenario_result *x = &s->res[r];
        struct tb_validate_group *g;
        double ape;
        if (!x->has_value || isnan(x->predicted))
            continue;
        g = group_of(v, x->family);
        ape = fabs(x->predicted - x->value) / x->value * 100.0;
        g->ape[g->n++] = ape;
        g = find_group(v->phases, &v->nphases, x->family, phase_of(s, r));
        g->ape[g->n++] = ape;
        v->all.ape[v->all.n++] = ape;
    }
    for (size_t i = 0; i < v->ngroups; i++)
        if (summarise(&v->groups[i], err, errlen) != TB_OK)
            goto oom;
    for (size_t i = 0; i < v->nphases; i++)
        if (summarise(&v->phases[i], err, errlen) != TB_OK)
            goto oom;
    if (summarise(&v->all, err, errlen) != TB_OK)
        goto oom;
    v->coverage = v->all.complete ? 100.0 * (double)v->all.n / (double)v->all.complete : 0;
    return TB_OK;
oom:
    tb_validate_release(v);
    return tb_err(err, errlen, "out of memory");
}

void tb_validate_release(struct tb_validation *v)
{
    for (size_t i = 0; v->groups && i < v->ngroups; i++)
        free(v->groups[i].ape);
    for (size_t i = 0; v->phases && i < v->nphases; i++)
        free(v->phases[i].ape);
    free(v->groups);
    free(v->phases);
    free(v->all.ape);
    memset(v, 0, sizeof *v);
}

const struct tb_validate_group *tb_validate_family(const struct tb_validation *v,
                                                   const char *family)
{
    for (size_t i = 0; i < v->ngroups; i++)
        if (!strcmp(v->groups[i].family, family))
            return &v->groups[i];
    return NULL;
}

const struct tb_validate_group *tb_validate_family_phase(const struct tb_validation *v,
                                                         const char *family, const char *phase)
{
    for (size_t i = 0; i < v->nphases; i++)
        if (!strcmp(v->phases[i].family, family) && !strcmp(v->phases[i].phase, phase))
            return &v->phases[i];
    return NULL;
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
            snprintf(basis, len, "%s: validated on only %zu rows; the p90 of all %zu rows used",
                     family, f->n, v->all.n);
        else
            snprintf(basis, len, "%s: not validated; the p90 of all %zu rows used",
                     family && *family ? family : "target", v->all.n);
    }
    *pct = e > 90 ? 90 : e;
    return true;
}

bool tb_validate_met(const struct tb_validation *v, const struct tb_validate_targets *t)
{
    return v->all.n > 0 && v->all.median <= t->median_max && v->all.p90 <= t->p90_max &&
           v->coverage >= t->coverage_min;
}
