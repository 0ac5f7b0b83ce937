/* harness/model/tb_cross.c: cross-validation of the performance model (tb_cross.h). */
#include "tb_cross.h"

#include "tb_csv.h"
#include "tb_stats.h"
#include "tb_util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The figures the published rows choose (pricing/README.md, "efficiency.csv": "set from
 * the data, by family"), each with the grid it is chosen on, in the table's unit (µs for
 * the times, scale 1e-6 to the model's seconds). Every grid holds the table's value for
 * each family, so that the full table is one of the choices; the others span what the
 * README calls physically plausible. gemm_eff_fp4 (set from published GEMM benchmarks),
 * hbm_usable, max_batch, dp_overlap and the structural columns (fabric, attn_overlap,
 * kv_bucket, kv_repeat, head_bytes) are not chosen on rows and stay. */
struct fit_def {
    const char *col;
    size_t off;
    double scale;
    double grid[10];
    int ngrid;
};

#define EFF(f) offsetof(struct tb_model_eff, f)
static const struct fit_def FITS[] = {
    {"gemm_eff", EFF(gemm_eff), 1, {0.5, 0.6, 0.7, 0.8, 0.9}, 5},
    {"gemm_eff_fp8", EFF(gemm_eff_fp8), 1, {0.45, 0.53, 0.6, 0.61, 0.7, 0.8}, 6},
    {"gemm_m_half", EFF(gemm_m_half), 1, {40, 80, 128, 192, 256}, 5},
    {"gemm_n_half", EFF(gemm_n_half), 1, {32, 64, 128, 256}, 4},
    {"mem_eff", EFF(mem_eff), 1, {0.5, 0.57, 0.65, 0.7, 0.8, 0.9}, 6},
    {"kv_eff", EFF(kv_eff), 1, {0.4, 0.5, 0.57, 0.65, 0.75}, 5},
    {"link_eff", EFF(link_eff), 1, {0.15, 0.25, 0.3, 0.35, 0.5}, 5},
    {"collective_us", EFF(collective_s), 1e-6, {2, 5, 10, 20}, 4},
    {"layer_us", EFF(layer_s), 1e-6, {15, 25, 35, 55, 75, 95}, 6},
    {"prefill_layer_us", EFF(prefill_layer_s), 1e-6, {35, 75, 150, 175, 250}, 5},
    {"prefill_floor_us", EFF(prefill_floor_s), 1e-6, {0, 10000, 14750, 20000, 27600, 35000}, 6},
    {"request_us", EFF(request_s), 1e-6, {0, 5, 10, 15}, 4},
    {"step_us", EFF(step_s), 1e-6, {0, 100, 200, 400}, 4},
    {"train_eff", EFF(train_eff), 1, {0.7, 0.78, 0.85, 0.92, 1.0}, 5},
    {"tp_overlap", EFF(tp_overlap), 1, {0, 0.25, 0.5, 0.75}, 4},
    {"conv_eff", EFF(conv_eff), 1, {0.15, 0.25, 0.4, 0.6, 0.8}, 5},
    {"dit_train_eff", EFF(dit_train_eff), 1, {0.4, 0.55, 0.7, 0.85}, 4},
};
#define NFITS (sizeof FITS / sizeof FITS[0])
/* A software stack's speed (pricing/stacks.csv, status fitted), chosen on its rows as
 * the efficiency figures are; a stack whose rows are all left out is taken at the
 * reference's speed, 1, as a stack without a row would be. */
static const struct fit_def STACK_FIT = {
    "speed", 0, 1, {0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3}, 10};
#define PASSES 4

/* One figure chosen on rows: a column of FITS over a set of chips (all the chips of an
 * efficiency family that agree on it, or one chip where the family's chips differ). */
struct unit {
    const struct fit_def *d;
    int family; /* index into the families */
    size_t chip[32], nchip;
    long stack;   /* a stack's speed: its index in the model's stacks; else -1 */
    double table; /* the table's value (table unit) */
    size_t *dep;  /* rows (indices into the family's fit rows) whose prediction it moves */
    size_t ndep;
};

/* The work: every row parsed once, with its family. */
struct work {
    const struct tb_scenarios *s;
    struct tb_model *m;
    struct tb_scenario_in *in; /* nrows, parsed (valid where ok[r]) */
    bool *ok;
    int *fam;   /* efficiency family of each row, -1: none */
    long *fold; /* fold of each row, -1: no value */
    char (*fam_name)[32];
    int nfam;
    struct unit *units;
    size_t nunits;
};

int tb_cross_by_parse(const char *name)
{
    if (!strcmp(name, "source"))
        return TB_CROSS_SOURCE;
    if (!strcmp(name, "round"))
        return TB_CROSS_ROUND;
    if (!strcmp(name, "family"))
        return TB_CROSS_FAMILY;
    return -1;
}

const char *tb_cross_by_name(enum tb_cross_by by)
{
    return by == TB_CROSS_ROUND ? "round" : by == TB_CROSS_FAMILY ? "family" : "source";
}

static const char *field(const struct tb_scenarios *s, size_t r, const char *name)
{
    const char *f = tb_csv_field(&s->csv, r, name);
    return f ? f : "";
}

/* The document a source names: its text without commits ("@1db4d74e ..." up to the next
 * space) and without what follows " (", "," or ";". */
static void source_key(const char *src, char *out, size_t len)
{
    size_t n = 0;
    for (const char *p = src; *p && n + 1 < len; p++) {
        if (*p == '@') {
            while (p[1] && p[1] != ' ')
                p++;
            continue;
        }
        if (*p == ',' || *p == ';' || (*p == ' ' && p[1] == '('))
            break;
        out[n++] = *p;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

/* The round of a row: the source's first word (its repository or site) and the first
 * version in its stack ("2.18.0", "v5.1"). */
static void round_key(const char *src, const char *stack, char *out, size_t len)
{
    char doc[96];
    const char *v = NULL;
    size_t n = 0;
    source_key(src, doc, sizeof doc);
    while (doc[n] && doc[n] != ' ')
        n++;
    doc[n] = '\0';
    for (const char *p = stack; *p; p++)
        if (p[0] >= '0' && p[0] <= '9' && p[1] == '.' && p[2] >= '0' && p[2] <= '9') {
            v = p;
            while (v > stack && v[-1] >= '0' && v[-1] <= '9')
                v--;
            break;
        }
    if (v) {
        size_t k = strspn(v, "0123456789.");
        snprintf(out, len, "%.64s %.*s", doc, (int)(k > 16 ? 16 : k), v);
    } else {
        snprintf(out, len, "%.64s", doc);
    }
}

static void fold_key(const struct tb_scenarios *s, size_t r, enum tb_cross_by by, char *out,
                     size_t len)
{
    if (by == TB_CROSS_FAMILY)
        snprintf(out, len, "%s", s->res[r].family[0] ? s->res[r].family : "(unknown target)");
    else if (by == TB_CROSS_ROUND)
        round_key(field(s, r, "source"), field(s, r, "stack"), out, len);
    else
        source_key(field(s, r, "source"), out, len);
    if (!out[0])
        snprintf(out, len, "(no source)");
}

static double *slot(struct tb_model *m, size_t chip, const struct fit_def *d)
{
    return (double *)(void *)((char *)&m->eff[chip] + d->off);
}

/* A unit's value as the model holds it (table unit). */
static double unit_value(const struct work *w, const struct unit *u)
{
    if (u->stack >= 0)
        return w->m->stacks[u->stack].speed;
    return *slot(w->m, u->chip[0], u->d) / u->d->scale;
}

static void set_unit(struct work *w, const struct unit *u, double table_value)
{
    if (u->stack >= 0) {
        w->m->stacks[u->stack].speed = table_value;
        return;
    }
    for (size_t i = 0; i < u->nchip; i++)
        *slot(w->m, u->chip[i], u->d) = table_value * u->d->scale;
}

/* Predict row r with the model as it stands: the row's metric, NAN when not predicted. */
static double predict(const struct work *w, size_t r)
{
    struct tb_prediction p;
    char e[512];
    if (!w->ok[r] || tb_model_predict(w->m, &w->in[r].sc, &p, e, sizeof e) != 0 || !p.fits)
        return NAN;
    return tb_prediction_metric(&p, w->in[r].metric);
}

static double ape(double pred, double value)
{
    /* a row the figures leave without a prediction counts as a miss of 100% */
    return isfinite(pred) ? fabs(pred - value) / value * 100.0 : 100.0;
}

/* The family rule's objective over n errors: median + p90 / 2. */
static double objective(double *e, size_t n)
{
    double p[2] = {50, 90}, q[2];
    char err[64];
    if (n == 0 || tb_stats_percentiles(e, n, p, 2, q, err, sizeof err) != 0)
        return INFINITY;
    return q[0] + 0.5 * q[1];
}

/* Find the chips of efficiency family f and the units over them, then the fitted
 * stacks of each family (after them: a pass moves the units in this order). */
static int build_units(struct work *w)
{
    w->units = calloc(NFITS * (w->m->neff + 1) + w->m->nstacks + 1, sizeof *w->units);
    if (!w->units)
        return -1;
    for (int f = 0; f < w->nfam; f++)
        for (size_t d = 0; d < NFITS; d++) {
            const struct fit_def *def = &FITS[d];
            size_t first = w->nunits;
            for (size_t c = 0; c < w->m->neff; c++) {
                double v;
                bool placed = false;
                if (strcmp(w->m->eff[c].family, w->fam_name[f]))
                    continue;
                v = *slot(w->m, c, def) / def->scale;
                if (!isfinite(v))
                    continue;
                for (size_t u = first; u < w->nunits; u++)
                    if (fabs(w->units[u].table - v) <= 1e-9 * fmax(1, fabs(v)) &&
                        w->units[u].nchip < 32) {
                        w->units[u].chip[w->units[u].nchip++] = c;
                        placed = true;
                        break;
                    }
                if (!placed) {
                    struct unit *u = &w->units[w->nunits++];
                    u->stack = -1;
                    u->d = def;
                    u->family = f;
                    u->table = v;
                    u->chip[u->nchip++] = c;
                }
            }
        }
    /* the stacks last: each family's figures move first, a stack's speed then takes
     * what its own rows still say */
    for (size_t i = 0; i < w->m->nstacks; i++)
        for (int f = 0; f < w->nfam; f++)
            if (!w->m->stacks[i].reference && !strcmp(w->m->stacks[i].family, w->fam_name[f])) {
                struct unit *u = &w->units[w->nunits++];
                u->d = &STACK_FIT;
                u->family = f;
                u->stack = (long)i;
                u->table = w->m->stacks[i].speed;
            }
    return 0;
}

/* Which rows each unit of family f moves: every row of the family with a value,
 * predicted at the unit's grid ends against its table value. Once, before the folds:
 * a fold's fit looks only at the rows a figure moves. */
static int find_deps(struct work *w, int f)
{
    const struct tb_scenarios *s = w->s;
    double *base = malloc((s->nrows + 1) * sizeof *base);
    if (!base)
        return -1;
    for (size_t r = 0; r < s->nrows; r++)
        base[r] = w->fam[r] == f && w->fold[r] >= 0 ? predict(w, r) : NAN;
    for (size_t u = 0; u < w->nunits; u++) {
        struct unit *x = &w->units[u];
        if (x->family != f)
            continue;
        if (!(x->dep = malloc((s->nrows + 1) * sizeof *x->dep))) {
            free(base);
            return -1;
        }
        for (size_t r = 0; r < s->nrows; r++) {
            bool moved = false;
            if (w->fam[r] != f || w->fold[r] < 0)
                continue;
            for (int end = 0; end < 2 && !moved; end++) {
                double p;
                set_unit(w, x, x->d->grid[end ? x->d->ngrid - 1 : 0]);
                p = predict(w, r);
                moved = !(p == base[r] || (isnan(p) && isnan(base[r])));
            }
            set_unit(w, x, x->table);
            if (moved)
                x->dep[x->ndep++] = r;
        }
    }
    free(base);
    return 0;
}

/* The grid index of a unit's current value (the nearest grid value). */
static int grid_at(const struct unit *x, double v)
{
    int best = 0;
    for (int g = 1; g < x->d->ngrid; g++)
        if (fabs(x->d->grid[g] - v) < fabs(x->d->grid[best] - v))
            best = g;
    return best;
}

/* Choose the units of family f on the rows in fit (at[r]: the row's index there, -1 for a
 * row left out) from the table's values: coordinate by coordinate, each figure moved to
 * the next grid value below or above while that lowers the objective, until a pass moves
 * none. The model keeps the choice. */
static int fit_family(struct work *w, int f, const size_t *fit, const double *val, size_t n,
                      const long *at)
{
    double *pred = malloc((n + 1) * sizeof *pred), *e = malloc((n + 1) * sizeof *e),
           *trial = malloc((n + 1) * sizeof *trial);
    double best;
    int rc = -1;
    if (!pred || !e || !trial)
        goto out;
    for (size_t i = 0; i < n; i++)
        pred[i] = predict(w, fit[i]);
    for (size_t i = 0; i < n; i++)
        e[i] = ape(pred[i], val[i]);
    best = objective(e, n);
    for (int pass = 0; pass < PASSES; pass++) {
        bool changed = false;
        for (size_t u = 0; u < w->nunits; u++) {
            struct unit *x = &w->units[u];
            int g0, keep;
            if (x->family != f || x->ndep == 0)
                continue;
            g0 = keep = grid_at(x, unit_value(w, x));
            for (int step = -1; step <= 1; step += 2)
                for (int g = g0 + step; g >= 0 && g < x->d->ngrid; g += step) {
                    double o;
                    set_unit(w, x, x->d->grid[g]);
                    memcpy(trial, pred, n * sizeof *trial);
                    for (size_t k = 0; k < x->ndep; k++)
                        if (at[x->dep[k]] >= 0)
                            trial[at[x->dep[k]]] = predict(w, x->dep[k]);
                    for (size_t i = 0; i < n; i++)
                        e[i] = ape(trial[i], val[i]);
                    o = objective(e, n);
                    if (!(o < best - 1e-9))
                        break; /* no better this way: stop walking */
                    best = o;
                    keep = g;
                    memcpy(pred, trial, n * sizeof *pred);
                }
            set_unit(w, x, x->d->grid[keep]);
            if (keep != g0)
                changed = true;
        }
        if (!changed)
            break;
    }
    rc = 0;
out:
    free(pred);
    free(e);
    free(trial);
    return rc;
}

/* A record a fold's process sends back. */
struct rec {
    int kind; /* 0: a held-out prediction (i: row); 1: a unit's choice (i: unit) */
    int refit;
    long fold;
    size_t i;
    double v;
};

static int send(int fd, const struct rec *r)
{
    const char *p = (const char *)r;
    size_t left = sizeof *r;
    while (left > 0) {
        ssize_t k = write(fd, p, left);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        left -= (size_t)k;
    }
    return 0;
}

/* Run fold k: for each family its rows touch, choose the family's units on the others'
 * rows and predict the fold's; the records go to out(ctx). The model is restored. */
static int run_fold(struct work *w, long k, int (*out)(void *ctx, const struct rec *r), void *ctx)
{
    const struct tb_scenarios *s = w->s;
    size_t *fit = malloc((s->nrows + 1) * sizeof *fit);
    double *val = malloc((s->nrows + 1) * sizeof *val);
    long *at = malloc((s->nrows + 1) * sizeof *at);
    struct tb_model_eff *saved = malloc((w->m->neff + 1) * sizeof *saved);
    double *speed = malloc((w->m->nstacks + 1) * sizeof *speed);
    int rc = -1;
    if (!fit || !val || !saved || !at || !speed)
        goto done;
    memcpy(saved, w->m->eff, w->m->neff * sizeof *saved);
    for (size_t i = 0; i < w->m->nstacks; i++)
        speed[i] = w->m->stacks[i].speed;
    for (int f = 0; f < w->nfam; f++) {
        size_t n = 0;
        bool touched = false;
        for (size_t r = 0; r < s->nrows; r++) {
            at[r] = -1;
            if (w->fam[r] != f || w->fold[r] < 0)
                continue;
            if (w->fold[r] == k)
                touched = true;
            else if (w->ok[r] && !isnan(s->res[r].predicted) && !tb_validate_term(s, r)) {
                at[r] = (long)n;
                fit[n] = r;
                val[n++] = s->res[r].value;
            }
        }
        if (!touched)
            continue;
        /* a stack none of whose rows is left in: the reference's speed */
        for (size_t u = 0; u < w->nunits; u++) {
            const struct unit *x = &w->units[u];
            size_t in = 0;
            if (x->family != f || x->stack < 0)
                continue;
            for (size_t d = 0; d < x->ndep; d++)
                in += at[x->dep[d]] >= 0;
            if (in == 0)
                set_unit(w, x, 1.0);
        }
        if (n > 0 && fit_family(w, f, fit, val, n, at) != 0)
            goto done;
        for (size_t r = 0; r < s->nrows; r++) {
            struct rec x = {0, n > 0, k, r, NAN};
            if (w->fam[r] != f || w->fold[r] != k)
                continue;
            x.v = predict(w, r);
            if (out(ctx, &x) != 0)
                goto done;
        }
        for (size_t u = 0; n > 0 && u < w->nunits; u++) {
            struct rec x = {1, 1, k, u, NAN};
            if (w->units[u].family != f)
                continue;
            x.v = unit_value(w, &w->units[u]);
            if (out(ctx, &x) != 0)
                goto done;
        }
        memcpy(w->m->eff, saved, w->m->neff * sizeof *saved);
        for (size_t i = 0; i < w->m->nstacks; i++)
            w->m->stacks[i].speed = speed[i];
    }
    {
        struct rec x = {2, 0, k, 0, NAN};
        if (out(ctx, &x) != 0)
            goto done;
    }
    rc = 0;
done:
    if (saved)
        memcpy(w->m->eff, saved, w->m->neff * sizeof *saved);
    for (size_t i = 0; speed && i < w->m->nstacks; i++)
        w->m->stacks[i].speed = speed[i];
    free(speed);
    free(fit);
    free(val);
    free(at);
    free(saved);
    return rc;
}

static int out_pipe(void *ctx, const struct rec *r)
{
    return send(*(int *)ctx, r);
}

static int out_direct(void *ctx, const struct rec *r);

struct collect {
    struct tb_cross *x;
    void (*progress)(void *ctx, size_t done, size_t total);
    void *ctx;
    size_t done;
};

static void take(struct collect *c, const struct rec *r)
{
    struct tb_cross *x = c->x;
    if (r->kind == 2) {
        c->done++;
        if (c->progress)
            c->progress(c->ctx, c->done, x->nfolds);
    } else if (r->kind == 0 && r->i < x->nrows) {
        x->row[r->i].held_out = r->v;
        x->row[r->i].refit = r->refit != 0;
    } else if (r->kind == 1 && r->i < x->nparams) {
        struct tb_cross_param *p = &x->param[r->i];
        if (p->folds_refit == 0 || r->v < p->lo)
            p->lo = r->v;
        if (p->folds_refit == 0 || r->v > p->hi)
            p->hi = r->v;
        p->folds_refit++;
        p->folds_moved += fabs(r->v - p->table) > 1e-9 * fmax(1, fabs(p->table));
    }
}

static int out_direct(void *ctx, const struct rec *r)
{
    take(ctx, r);
    return 0;
}

/* Run the folds in jobs processes, each taking every jobs-th fold; their records come
 * back on pipes. */
static int run_parallel(struct work *w, struct collect *c, int jobs, char *err, size_t errlen)
{
    struct tb_cross *x = c->x;
    pid_t pid[64];
    int fd[64], started = 0, rc = 0;
    if (jobs > 64)
        jobs = 64;
    fflush(NULL);
    for (int j = 0; j < jobs; j++) {
        int p[2];
        if (pipe(p) != 0)
            break;
        pid[j] = fork();
        if (pid[j] < 0) {
            close(p[0]);
            close(p[1]);
            break;
        }
        if (pid[j] == 0) {
            int ok = 0;
            close(p[0]);
            for (int i = 0; i < started; i++)
                close(fd[i]);
            for (long k = j; k < (long)x->nfolds && ok == 0; k += jobs)
                ok = run_fold(w, k, out_pipe, &p[1]);
            close(p[1]);
            _exit(ok == 0 ? 0 : 1);
        }
        close(p[1]);
        fd[j] = p[0];
        started++;
    }
    if (started < jobs) {
        rc = tb_err(err, errlen, "cross-validation: could not start %d processes: %s", jobs,
                    strerror(errno));
    }
    /* the records as they come, from whichever process has one */
    for (int open_fds = started; open_fds > 0;) {
        struct pollfd pf[64];
        int np = 0;
        for (int j = 0; j < started; j++)
            if (fd[j] >= 0)
                pf[np++] = (struct pollfd){.fd = fd[j], .events = POLLIN};
        if (poll(pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < np; i++) {
            struct rec r;
            size_t got = 0;
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            while (got < sizeof r) {
                ssize_t k = read(pf[i].fd, (char *)&r + got, sizeof r - got);
                if (k < 0 && errno == EINTR)
                    continue;
                if (k <= 0)
                    break;
                got += (size_t)k;
            }
            if (got == sizeof r) {
                take(c, &r);
                continue;
            }
            for (int j = 0; j < started; j++)
                if (fd[j] == pf[i].fd) {
                    close(fd[j]);
                    fd[j] = -1;
                }
            open_fds--;
        }
    }
    for (int j = 0; j < started; j++) {
        int st;
        while (waitpid(pid[j], &st, 0) < 0 && errno == EINTR)
            ;
        if (rc == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
            rc = tb_err(err, errlen, "cross-validation: a fold's process failed");
    }
    return rc == 0 ? TB_OK : TB_EFAIL;
}

/* The held-out validation: s's results with each refit row's held-out prediction. */
static int held_out_validation(struct tb_validation *v, const struct tb_scenarios *s,
                               const struct tb_cross_row *row, char *err, size_t errlen)
{
    struct tb_scenarios t = *s;
    int rc;
    t.res = malloc((s->nrows + 1) * sizeof *t.res);
    if (!t.res)
        return tb_err(err, errlen, "out of memory");
    memcpy(t.res, s->res, s->nrows * sizeof *t.res);
    for (size_t r = 0; r < s->nrows; r++)
        t.res[r].predicted = row[r].refit ? row[r].held_out : NAN;
    rc = tb_validate_compute(v, &t, err, errlen);
    free(t.res);
    return rc;
}

int tb_cross_run(struct tb_cross *x, const struct tb_scenarios *s, struct tb_model *m,
                 enum tb_cross_by by, int jobs,
                 void (*progress)(void *ctx, size_t done, size_t total), void *ctx, char *err,
                 size_t errlen)
{
    struct work w;
    struct tb_scenario_result scratch;
    int rc = TB_EFAIL;
    memset(x, 0, sizeof *x);
    memset(&w, 0, sizeof w);
    x->by = by;
    x->nrows = s->nrows;
    w.s = s;
    w.m = m;
    x->row = calloc(s->nrows + 1, sizeof *x->row);
    x->fold = calloc(s->nrows + 1, sizeof *x->fold);
    w.in = calloc(s->nrows + 1, sizeof *w.in);
    w.ok = calloc(s->nrows + 1, sizeof *w.ok);
    w.fam = calloc(s->nrows + 1, sizeof *w.fam);
    w.fold = calloc(s->nrows + 1, sizeof *w.fold);
    w.fam_name = calloc(m->neff + 1, sizeof *w.fam_name);
    if (!x->row || !x->fold || !w.in || !w.ok || !w.fam || !w.fold || !w.fam_name)
        goto oom;
    if ((rc = tb_validate_compute(&x->in, s, err, errlen)) != TB_OK)
        goto fail;
    rc = TB_EFAIL;
    for (size_t r = 0; r < s->nrows; r++) {
        const struct tb_scenario_result *res = &s->res[r];
        const struct tb_instance *inst;
        const struct tb_model_eff *e;
        char key[96];
        x->row[r].in_sample = res->predicted;
        x->row[r].held_out = NAN;
        x->row[r].fold = w.fold[r] = -1;
        w.fam[r] = -1;
        if (!res->has_value)
            continue;
        fold_key(s, r, by, key, sizeof key);
        for (size_t k = 0; k < x->nfolds && w.fold[r] < 0; k++)
            if (!strcmp(x->fold[k], key))
                w.fold[r] = (long)k;
        if (w.fold[r] < 0) {
            snprintf(x->fold[x->nfolds], sizeof x->fold[0], "%s", key);
            w.fold[r] = (long)x->nfolds++;
        }
        x->row[r].fold = w.fold[r];
        inst = tb_pricing_instance(m->pricing, field(s, r, "target"));
        e = inst ? tb_model_eff_of(m, inst->chip) : NULL;
        if (e) {
            int f = 0;
            while (f < w.nfam && strcmp(w.fam_name[f], e->family))
                f++;
            if (f == w.nfam)
                snprintf(w.fam_name[w.nfam++], sizeof w.fam_name[0], "%s", e->family);
            w.fam[r] = f;
        }
        w.ok[r] = tb_scenario_parse_row(s, r, m, &w.in[r], &scratch) == 0;
    }
    if (build_units(&w) != 0)
        goto oom;
    for (int f = 0; f < w.nfam; f++)
        if (find_deps(&w, f) != 0)
            goto oom;
    x->param = calloc(w.nunits + 1, sizeof *x->param);
    if (!x->param)
        goto oom;
    x->nparams = w.nunits;
    for (size_t u = 0; u < w.nunits; u++) {
        struct tb_cross_param *p = &x->param[u];
        const struct unit *un = &w.units[u];
        if (un->stack >= 0) {
            snprintf(p->name, sizeof p->name, "%s %s speed", w.fam_name[un->family],
                     m->stacks[un->stack].software);
            goto named;
        }
        if (un->nchip == 1 && w.nfam > 0) {
            size_t same = 0;
            for (size_t c = 0; c < m->neff; c++)
                same += !strcmp(m->eff[c].family, w.fam_name[un->family]);
            if (same > 1) {
                snprintf(p->name, sizeof p->name, "%s %s", m->eff[un->chip[0]].chip, un->d->col);
                goto named;
            }
        }
        snprintf(p->name, sizeof p->name, "%s %s", w.fam_name[un->family], un->d->col);
    named:
        p->table = un->table;
        p->lo = p->hi = un->table;
        p->rows = un->ndep;
    }
    {
        struct collect c = {x, progress, ctx, 0};
        if (jobs > 1 && run_parallel(&w, &c, jobs, err, errlen) != TB_OK)
            goto fail;
        for (long k = 0; jobs <= 1 && k < (long)x->nfolds; k++)
            if (run_fold(&w, k, out_direct, &c) != 0)
                goto oom;
    }
    for (size_t r = 0; r < s->nrows; r++) {
        if (!s->res[r].has_value)
            continue;
        if (x->row[r].refit && !isnan(x->row[r].held_out))
            x->held_out++;
        else if (!x->row[r].refit)
            x->not_refit++;
    }
    if ((rc = held_out_validation(&x->out, s, x->row, err, errlen)) != TB_OK)
        goto fail;
    rc = TB_OK;
    goto done;
oom:
    tb_err(err, errlen, "out of memory");
    rc = TB_EFAIL;
fail:
    tb_cross_release(x);
done:
    for (size_t u = 0; u < w.nunits; u++)
        free(w.units[u].dep);
    free(w.units);
    free(w.in);
    free(w.ok);
    free(w.fam);
    free(w.fold);
    free(w.fam_name);
    return rc;
}

void tb_cross_release(struct tb_cross *x)
{
    free(x->row);
    free(x->fold);
    free(x->param);
    tb_validate_release(&x->in);
    tb_validate_release(&x->out);
    memset(x, 0, sizeof *x);
}

static void put_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.10g", v);
}

int tb_cross_write(const struct tb_cross *x, const struct tb_scenarios *s, FILE *f)
{
    fputs("id,family,phase,precision,metric,value,in_sample,held_out,fold,refit,by\n", f);
    for (size_t r = 0; r < s->nrows; r++) {
        const struct tb_cross_row *c = &x->row[r];
        const char *cells[5] = {field(s, r, "id"), s->res[r].family, field(s, r, "phase"),
                                field(s, r, "precision"), field(s, r, "metric")};
        if (!s->res[r].has_value)
            continue;
        for (int i = 0; i < 5; i++)
            tb_csv_put_text(f, cells[i], ',');
        put_num(f, s->res[r].value);
        fputc(',', f);
        put_num(f, c->in_sample);
        fputc(',', f);
        put_num(f, c->refit ? c->held_out : NAN);
        fputc(',', f);
        tb_csv_put_text(f, c->fold >= 0 ? x->fold[c->fold] : "", ',');
        fprintf(f, "%s,%s\n", c->refit ? "yes" : "no", tb_cross_by_name(x->by));
    }
    return ferror(f) ? -1 : 0;
}

bool tb_cross_met(const struct tb_cross *x, const struct tb_validate_targets *t,
                  double family_p90_max, char *why, size_t len)
{
    const struct tb_validation *v = &x->out;
    size_t complete = x->in.all.complete;
    double cov = complete ? 100.0 * (double)v->all.n / (double)complete : 0;
    why[0] = '\0';
    if (v->all.n == 0) {
        snprintf(why, len, "no row predicted held out");
        return false;
    }
    if (!(v->all.median <= t->median_max)) {
        snprintf(why, len, "median %.1f%% > %g%%", v->all.median, t->median_max);
        return false;
    }
    if (!(v->all.p90 <= t->p90_max)) {
        snprintf(why, len, "p90 %.1f%% > %g%%", v->all.p90, t->p90_max);
        return false;
    }
    for (size_t i = 0; i < v->ngroups; i++)
        if (v->groups[i].n >= TB_VALIDATE_MIN_ROWS && !(v->groups[i].p90 <= family_p90_max)) {
            snprintf(why, len, "%s: p90 %.1f%% > %g%% over %zu rows", v->groups[i].family,
                     v->groups[i].p90, family_p90_max, v->groups[i].n);
            return false;
        }
    if (cov < t->coverage_min) {
        snprintf(why, len, "%.0f%% of the complete rows predicted held out < %g%%", cov,
                 t->coverage_min);
        return false;
    }
    return true;
}

int tb_cross_apply(struct tb_validation *v, const struct tb_scenarios *s, const char *path,
                   char *why, size_t len)
{
    struct tb_csv_table t;
    struct tb_cross_row *row;
    struct tb_validation h;
    char def[PATH_MAX], e[512];
    const char *name = path, *by = NULL;
    int ci, cin, cout, crefit, cby;
    if (!path) {
        snprintf(def, sizeof def, "%s/reports/validation/cross.csv", tb_datadir());
        path = def;
        name = "reports/validation/cross.csv";
    }
    if (!tb_file_exists(path)) {
        snprintf(why, len, "%s not found", name);
        return 0;
    }
    if (tb_csv_load(&t, path, e, sizeof e) != 0) {
        snprintf(why, len, "%s", e);
        return 0;
    }
    ci = tb_csv_col(&t, "id");
    cin = tb_csv_col(&t, "in_sample");
    cout = tb_csv_col(&t, "held_out");
    crefit = tb_csv_col(&t, "refit");
    cby = tb_csv_col(&t, "by");
    if (ci < 0 || cin < 0 || cout < 0 || crefit < 0 || cby < 0) {
        snprintf(why, len, "%s: not a cross-validation table (trnbench validate --cross)", name);
        tb_csv_release(&t);
        return 0;
    }
    if (!(row = calloc(s->nrows + 1, sizeof *row))) {
        tb_csv_release(&t);
        return -1;
    }
    for (size_t r = 0; r < s->nrows; r++) {
        const char *id = field(s, r, "id");
        size_t k = 0;
        double in = NAN, out = NAN, p = s->res[r].predicted;
        if (!s->res[r].has_value)
            continue;
        while (k < t.nrows && strcmp(tb_csv_get(&t, k, ci), id))
            k++;
        if (k == t.nrows) {
            snprintf(why, len, "%s: no row '%s': written from another table", name, id);
            goto stale;
        }
        tb_parse_double(tb_csv_get(&t, k, cin), -1e300, 1e300, &in);
        tb_parse_double(tb_csv_get(&t, k, cout), -1e300, 1e300, &out);
        if (!((isnan(in) && isnan(p)) ||
              (isfinite(in) && isfinite(p) && fabs(in - p) <= 1e-6 * fmax(fabs(p), 1e-300)))) {
            snprintf(why, len,
                     "%s: row '%s' was predicted %.6g there and %.6g now: the model or its "
                     "figures changed since (run trnbench validate --cross --write)",
                     name, id, in, p);
            goto stale;
        }
        row[r].in_sample = in;
        row[r].held_out = out;
        row[r].refit = !strcmp(tb_csv_get(&t, k, crefit), "yes");
        if (!by)
            by = tb_csv_get(&t, k, cby);
    }
    if (held_out_validation(&h, s, row, e, sizeof e) != TB_OK) {
        snprintf(why, len, "%s", e);
        goto stale;
    }
    snprintf(h.basis, sizeof h.basis, "held out, one %s at a time", by ? by : "source");
    tb_validate_release(v);
    *v = h;
    free(row);
    tb_csv_release(&t);
    snprintf(why, len, "%s", v->basis);
    return 1;
stale:
    free(row);
    tb_csv_release(&t);
    return 0;
}
