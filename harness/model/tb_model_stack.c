/* harness/model/tb_model_stack.c: the software stacks' figures (pricing/stacks.csv) and
 * a prediction under one (tb_model.h, "software"). */
#include "tb_model_impl.h"

#include "tb_range.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct tb_range TB_STACKS_RANGES[] = {
    {"speed", 0.05, 5, false, "times the reference stack's speed"},
    {NULL, 0, 0, false, NULL},
};

/* "serve" (prefill, decode and serve: an LLM's inference), "train" or "denoise". */
static unsigned phases_of(const char *v)
{
    if (!strcmp(v, "serve"))
        return TB_PHASE_BIT(TB_PHASE_PREFILL) | TB_PHASE_BIT(TB_PHASE_DECODE) |
               TB_PHASE_BIT(TB_PHASE_SERVE);
    if (!strcmp(v, "train"))
        return TB_PHASE_BIT(TB_PHASE_TRAIN);
    if (!strcmp(v, "denoise"))
        return TB_PHASE_BIT(TB_PHASE_DENOISE);
    return 0;
}

/* A key is a name of lower-case letters, digits and '-', then optionally '@' and a
 * version of digits, letters, '.' and '-'. */
bool tb_model_software_name_ok(const char *k)
{
    const char *p = k;
    if (!*p)
        return false;
    for (; *p && *p != '@'; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
            return false;
    if (p == k)
        return false;
    if (*p == '@') {
        if (!*++p)
            return false;
        for (; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'))
                return false;
    }
    return true;
}

int tb_model_stacks_load(struct tb_model *m, const char *dir, char *err, size_t errlen)
{
    static const char *const cols[] = {"software", "family", "phases", "speed", "status",
                                       "rows",     "source", "notes",  NULL};
    struct tb_csv_table *t = &m->stacks_csv;
    const char *path;
    if (tb_csv_load_optional(t, dir, "stacks.csv", cols, err, errlen) != 0 ||
        tb_range_check_csv(t, TB_STACKS_RANGES, err, errlen) != 0)
        return -1;
    path = t->path ? t->path : "stacks.csv";
    m->stacks = tb_alloc_array(t->nrows ? t->nrows : 1, sizeof *m->stacks);
    if (!m->stacks)
        return tb_err(err, errlen, "out of memory");
    for (size_t r = 0; r < t->nrows; r++) {
        struct tb_model_stack *s = &m->stacks[r];
        const char *status = tb_csv_field(t, r, "status");
        bool fam = false;
        memset(s, 0, sizeof *s);
        s->software = tb_csv_field(t, r, "software");
        s->family = tb_csv_field(t, r, "family");
        s->phases_name = tb_csv_field(t, r, "phases");
        s->phases = phases_of(s->phases_name);
        s->rows = tb_csv_field(t, r, "rows");
        s->chips = tb_csv_field(t, r, "chips"); /* optional column: "" when absent */
        s->line = t->lines[r];
        if (!tb_model_software_name_ok(s->software))
            return tb_err(err, errlen,
                          "%s: line %ld: field 'software': '%s' (a name of a-z, 0-9 and '-', "
                          "then optionally @version)",
                          path, s->line, s->software);
        for (size_t c = 0; c < m->neff && !fam; c++)
            fam = !strcmp(m->eff[c].family, s->family);
        if (!fam)
            return tb_err(err, errlen,
                          "%s: line %ld: field 'family': '%s' is no chip's family in "
                          "efficiency.csv",
                          path, s->line, s->family);
        {
            /* the chips the figure was measured on: chips.csv keys of the family */
            const char *c = s->chips;
            while (*c) {
                size_t n = strcspn(c, " ");
                bool ok = false;
                for (size_t e = 0; e < m->neff && !ok; e++)
                    ok = strlen(m->eff[e].chip) == n && !strncmp(m->eff[e].chip, c, n) &&
                         !strcmp(m->eff[e].family, s->family);
                if (!ok)
                    return tb_err(err, errlen,
                                  "%s: line %ld: field 'chips': '%.*s' is no %s chip of "
                                  "efficiency.csv",
                                  path, s->line, (int)n, c, s->family);
                c += n;
                while (*c == ' ')
                    c++;
            }
        }
        if (!s->phases)
            return tb_err(err, errlen,
                          "%s: line %ld: field 'phases': '%s' (serve, train or denoise)", path,
                          s->line, s->phases_name);
        if (tb_range_field(TB_STACKS_RANGES, "speed", tb_csv_field(t, r, "speed"), &s->speed, err,
                           errlen) != 0) {
            char why[256];
            snprintf(why, sizeof why, "%s", err);
            return tb_err(err, errlen, "%s: line %ld: %s", path, s->line, why);
        }
        if (!strcmp(status, "reference")) {
            s->reference = true;
            if (s->speed != 1)
                return tb_err(err, errlen,
                              "%s: line %ld: field 'speed': a reference stack's is 1 (the "
                              "efficiency figures are its), got %g",
                              path, s->line, s->speed);
        } else if (strcmp(status, "fitted") != 0) {
            return tb_err(err, errlen, "%s: line %ld: field 'status': '%s' (reference or fitted)",
                          path, s->line, status);
        }
        for (size_t q = 0; q < r; q++)
            if (!strcmp(m->stacks[q].software, s->software) &&
                !strcmp(m->stacks[q].family, s->family) && (m->stacks[q].phases & s->phases) &&
                !strcmp(m->stacks[q].chips, s->chips))
                return tb_err(err, errlen, "%s: line %ld: '%s' for %s %s again (line %ld)", path,
                              s->line, s->software, s->family, s->phases_name, m->stacks[q].line);
            else if (s->reference && m->stacks[q].reference &&
                     !strcmp(m->stacks[q].family, s->family) && (m->stacks[q].phases & s->phases))
                return tb_err(err, errlen,
                              "%s: line %ld: a second reference stack for %s %s ('%s', line "
                              "%ld)",
                              path, s->line, s->family, s->phases_name, m->stacks[q].software,
                              m->stacks[q].line);
        m->nstacks++;
    }
    return 0;
}

/* Whether a row's chips (space-separated; "" for every chip of its family) hold chip
 * (NULL: any). */
static bool on_chip(const struct tb_model_stack *s, const char *chip)
{
    size_t n = chip ? strlen(chip) : 0;
    if (!chip || !*s->chips)
        return true;
    for (const char *c = s->chips; *c;) {
        size_t k = strcspn(c, " ");
        if (k == n && !strncmp(c, chip, n))
            return true;
        c += k;
        while (*c == ' ')
            c++;
    }
    return false;
}

static const struct tb_model_stack *find(const struct tb_model *m, const char *key, size_t n,
                                         const char *family, const char *chip, enum tb_phase ph)
{
    for (size_t i = 0; i < m->nstacks; i++) {
        const struct tb_model_stack *s = &m->stacks[i];
        if (strlen(s->software) == n && !strncmp(s->software, key, n) &&
            !strcmp(s->family, family) && (s->phases & TB_PHASE_BIT(ph)) && on_chip(s, chip))
            return s;
    }
    return NULL;
}

const struct tb_model_stack *tb_model_stack_reference(const struct tb_model *m, const char *family,
                                                      enum tb_phase ph)
{
    for (size_t i = 0; i < m->nstacks; i++)
        if (m->stacks[i].reference && !strcmp(m->stacks[i].family, family) &&
            (m->stacks[i].phases & TB_PHASE_BIT(ph)))
            return &m->stacks[i];
    return NULL;
}

int tb_model_stack_find(const struct tb_model *m, const char *software, const char *family,
                        const char *chip, enum tb_phase ph, const struct tb_model_stack **out,
                        bool *by_name, char *why, size_t whylen)
{
    const char *at = strchr(software, '@');
    size_t n = 0;
    bool known = false;
    *out = find(m, software, strlen(software), family, chip, ph);
    *by_name = false;
    if (*out)
        return 0;
    /* a version without its own row: the nearest listed one it is a release of ("1.2"
     * of "1"), cutting its last ".part" at a time, then the name's own row */
    if (at) {
        for (n = strlen(software); n > (size_t)(at - software); n--) {
            if (software[n] != '.' && software[n] != '\0' && software[n] != '@')
                continue;
            if (n < strlen(software) && (*out = find(m, software, n, family, chip, ph))) {
                *by_name = true;
                return 0;
            }
        }
        if ((*out = find(m, software, (size_t)(at - software), family, chip, ph))) {
            *by_name = true;
            return 0;
        }
    }
    for (size_t i = 0; i < m->nstacks; i++) {
        size_t k = strcspn(m->stacks[i].software, "@");
        if (!strncmp(m->stacks[i].software, software, k) &&
            (software[k] == '\0' || software[k] == '@'))
            known = true;
    }
    n = (size_t)snprintf(why, whylen, "%s '%s'%s for %s %s work; stacks.csv has:",
                         known ? "software" : "unknown software", software,
                         known ? " has no figure" : "", family,
                         ph == TB_PHASE_TRAIN     ? "training"
                         : ph == TB_PHASE_DENOISE ? "diffusion"
                                                  : "serving");
    for (size_t i = 0; i < m->nstacks && n < whylen; i++)
        if (!strcmp(m->stacks[i].family, family) && (m->stacks[i].phases & TB_PHASE_BIT(ph)) &&
            on_chip(&m->stacks[i], chip))
            n += (size_t)snprintf(why + n, whylen - n, " %s%s", m->stacks[i].software,
                                  m->stacks[i].reference ? " (the reference)" : "");
    if (n < whylen && !strchr(why, '('))
        snprintf(why + n, whylen - n, " none (say no software: the efficiency figures')");
    return -1;
}

/* Efficiency scaled to a stack of speed s: the fractions of peak times s (at most 1),
 * the fixed costs over s. */
static void scale(struct tb_model_eff *e, double s)
{
    double *f[] = {&e->gemm_eff, &e->gemm_eff_fp8, &e->gemm_eff_fp4, &e->mem_eff, &e->kv_eff};
    double *t[] = {&e->layer_s, &e->prefill_layer_s, &e->prefill_floor_s, &e->request_s,
                   &e->step_s};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (isfinite(*f[i]))
            *f[i] = fmin(1.0, *f[i] * s);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        *t[i] /= s;
}

int tb_model_predict_stack(const struct tb_model *m, const struct tb_scenario *sc,
                           struct tb_prediction *p, char *err, size_t errlen,
                           int (*predict)(const struct tb_model *m, const struct tb_scenario *sc,
                                          struct tb_prediction *p, char *err, size_t errlen))
{
    const struct tb_model_eff *e = tb_model_eff_of(m, sc->inst->chip);
    const struct tb_model_stack *s;
    struct tb_model m2;
    char note[384], buf[sizeof note + sizeof p->assumptions];
    bool by_name;
    int rc;

    if (!e)
        return tb_err(err, errlen, "no efficiency figures for chip '%s' (pricing/efficiency.csv)",
                      sc->inst->chip);
    if (tb_model_stack_find(m, sc->software, e->family, e->chip, sc->phase, &s, &by_name, err,
                            errlen))
        return -1;
    if (s->reference || s->speed == 1)
        return predict(m, sc, p, err, errlen);
    m2 = *m;
    m2.eff = tb_alloc_array(m->neff, sizeof *m2.eff);
    if (!m2.eff)
        return tb_err(err, errlen, "out of memory");
    memcpy(m2.eff, m->eff, m->neff * sizeof *m2.eff);
    for (size_t i = 0; i < m->neff; i++)
        if (!strcmp(m2.eff[i].chip, e->chip))
            scale(&m2.eff[i], s->speed);
    rc = predict(&m2, sc, p, err, errlen);
    free(m2.eff);
    if (rc != 0 || !p->fits)
        return rc;
    {
        const struct tb_model_stack *ref = tb_model_stack_reference(m, e->family, sc->phase);
        snprintf(note, sizeof note,
                 "assumes software %s%s%s: %.3g x the speed of %s (stacks.csv line %ld, rows %s); ",
                 sc->software, by_name ? ", no row of its own, taken as " : "",
                 by_name ? s->software : "", s->speed,
                 ref ? ref->software : "the stack the efficiency figures were chosen on", s->line,
                 *s->rows ? s->rows : "none");
    }
    snprintf(buf, sizeof buf, "%s%s", note, p->assumptions);
    memcpy(p->assumptions, buf, sizeof p->assumptions - 1);
    p->assumptions[sizeof p->assumptions - 1] = '\0';
    return 0;
}
