/* tests/unit/validate.c: the model's validation statistics (tb_validate.h) on a small
 * hand-made table of predictions whose errors, medians and percentiles are worked out
 * by hand in the comments. */
#include "tb_validate.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One row of predictions: family, measured value (0: none), prediction (NAN: none). */
static void row(struct tb_scenario_result *r, const char *family, double value, double predicted,
                bool incomplete)
{
    memset(r, 0, sizeof *r);
    snprintf(r->family, sizeof r->family, "%s", family);
    r->has_value = value > 0;
    r->value = value;
    r->predicted = predicted;
    r->incomplete = incomplete;
}

int main(void)
{
    struct tb_scenario_result res[8];
    struct tb_scenarios s;
    struct tb_validation v;
    struct tb_validate_targets t;
    const struct tb_validate_group *a, *b, *u;
    char err[256];

    plan_lazy();
    memset(&s, 0, sizeof s);
    row(&res[0], "A", 100, 110, false);   /* 10% */
    row(&res[1], "A", 200, 150, false);   /* 25% */
    row(&res[2], "B", 1000, 1000, false); /* 0% */
    row(&res[3], "A", 50, NAN, false);    /* complete, not predicted */
    row(&res[4], "A", 10, NAN, true);     /* incomplete, not predicted */
    row(&res[5], "", 5, NAN, false);      /* unknown target */
    row(&res[6], "B", 0, 123, false);     /* no measured value: left out */
    s.res = res;
    s.nrows = 7;

    IS_INT(TB_OK, tb_validate_compute(&v, &s, err, sizeof err), "compute");
    IS_INT(3, (long long)v.ngroups,
           "three families with a measured value (B's valueless row "
           "adds none)");
    IS_STRING("A", v.groups[0].family, "in the order they first appear: A");
    IS_STRING("B", v.groups[1].family, "then B");
    IS_STRING("", v.groups[2].family, "then the unknown target");

    a = tb_validate_family(&v, "A");
    OK(a == &v.groups[0], "tb_validate_family finds A");
    IS_INT(4, (long long)a->rows, "A: 4 rows with a value");
    IS_INT(3, (long long)a->complete, "A: 3 with a complete shape");
    IS_INT(2, (long long)a->n, "A: 2 predicted");
    IS_DOUBLE(10, a->ape[0], 1e-12, "A: |110 - 100| / 100 = 10%%");
    IS_DOUBLE(25, a->ape[1], 1e-12, "A: |150 - 200| / 200 = 25%%");
    IS_DOUBLE(17.5, a->median, 1e-12, "A: median of {10, 25} is 17.5");
    IS_DOUBLE(23.5, a->p90, 1e-12, "A: p90 = 10 + 0.9 x 15 = 23.5");

    b = tb_validate_family(&v, "B");
    IS_INT(1, (long long)b->rows, "B: the valueless row is not counted");
    IS_DOUBLE(0, b->median, 0, "B: an exact prediction, 0%%");

    u = tb_validate_family(&v, "");
    IS_INT(1, (long long)u->rows, "unknown target: 1 row");
    IS_INT(0, (long long)u->n, "none predicted");
    OK(isnan(u->median) && isnan(u->p90), "so no median or p90 (NAN)");
    OK(tb_validate_family(&v, "C") == NULL, "a family without rows: NULL");

    IS_INT(6, (long long)v.all.rows, "overall: 6 rows with a value");
    IS_INT(5, (long long)v.all.complete, "5 complete");
    IS_INT(3, (long long)v.all.n, "3 predicted");
    IS_DOUBLE(10, v.all.median, 1e-12, "overall median of {0, 10, 25} is 10");
    IS_DOUBLE(22, v.all.p90, 1e-12, "overall p90 = 10 + 0.8 x 15 = 22");
    IS_DOUBLE(60, v.coverage, 1e-12, "coverage 3 of 5 complete rows = 60%%");

    tb_validate_targets_init(&t);
    IS_DOUBLE(10, t.median_max, 0, "default median target 10%%");
    IS_DOUBLE(25, t.p90_max, 0, "default p90 target 25%%");
    IS_DOUBLE(80, t.coverage_min, 0, "default coverage target 80%%");
    OK(!tb_validate_met(&v, &t), "60%% coverage misses the 80%% target");
    t.coverage_min = 60;
    OK(tb_validate_met(&v, &t), "a coverage of exactly the minimum meets it");
    t.p90_max = 21.9;
    OK(!tb_validate_met(&v, &t), "a p90 of 22 misses a 21.9 target");
    t.p90_max = 22;
    t.median_max = 9.9;
    OK(!tb_validate_met(&v, &t), "a median of 10 misses a 9.9 target");
    tb_validate_release(&v);
    OK(v.groups == NULL && v.ngroups == 0 && v.all.ape == NULL, "release empties it");

    /* an error that overflows: no statistics for its family, never a wrong number */
    row(&res[0], "A", 1e-300, 1e10, false);
    s.nrows = 1;
    IS_INT(TB_OK, tb_validate_compute(&v, &s, err, sizeof err), "compute with an overflow");
    OK(isinf(v.groups[0].ape[0]), "the error is infinite");
    OK(isnan(v.groups[0].median) && isnan(v.all.median), "so the median is NAN");
    tb_validate_targets_init(&t);
    OK(!tb_validate_met(&v, &t), "and the targets are not met");
    tb_validate_release(&v);

    /* no rows with a value at all */
    s.nrows = 0;
    IS_INT(TB_OK, tb_validate_compute(&v, &s, err, sizeof err), "compute on no rows");
    IS_INT(0, (long long)v.ngroups, "no families");
    IS_DOUBLE(0, v.coverage, 0, "coverage 0 when no row is complete");
    OK(!tb_validate_met(&v, &t), "nothing predicted: not met");
    tb_validate_release(&v);

    /* the error band per family and phase (tb_validate_error): F has 12 train rows at 10%
     * and 2 serve rows at 40%, G 2 serve rows at 5% */
    {
        struct tb_scenario_result r2[16];
        char text[512] = "phase\n", basis[160];
        double pct;
        bool few;
        for (int i = 0; i < 16; i++) {
            const char *ph = i < 12 ? "train" : "serve";
            row(&r2[i], i < 14 ? "F" : "G", 100, i < 12 ? 110 : i < 14 ? 140 : 105, false);
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s\n", ph);
        }
        memset(&s, 0, sizeof s);
        if (tb_csv_parse(&s.csv, "phases.csv", text, strlen(text), err, sizeof err) != 0)
            bail("%s", err);
        s.res = r2;
        s.nrows = 16;
        IS_INT(TB_OK, tb_validate_compute(&v, &s, err, sizeof err), "compute with phases");
        IS_INT(3, (long long)v.nphases, "three (family, phase) groups");
        OK(tb_validate_error(&v, "F", "train", &pct, &few, basis, sizeof basis), "F train");
        IS_DOUBLE(10, pct, 1e-9, "12 rows of its own: their p90, 10%%");
        OK(!few, "not few");
        IS_STRING("p90 of 12 F train rows (in-sample)", basis, "said");
        tb_validate_error(&v, "F", "serve", &pct, &few, basis, sizeof basis);
        IS_DOUBLE(40, pct, 1e-9, "2 serve rows: the larger of F's p90 (31%%) and their own (40%%)");
        IS_STRING("p90 of 14 F rows (2 of them serve) (in-sample)", basis, "said");
        tb_validate_error(&v, "G", "serve", &pct, &few, basis, sizeof basis);
        IS_DOUBLE(25, pct, 1e-9, "G on 2 rows: every row's p90, 25%%, over its own 5%%");
        OK(few, "few");
        IS_STRING("G: validated on only 2 rows; the larger of their p90 (5.0%) and that of all 16 "
                  "rows (25.0%) (in-sample)",
                  basis, "said");
        tb_validate_error(&v, "H", "train", &pct, &few, basis, sizeof basis);
        IS_DOUBLE(25, pct, 1e-9, "H, never validated: every row's p90");
        IS_STRING("H: not validated; the p90 of all 16 rows used (in-sample)", basis, "said");
        tb_validate_release(&v);
        tb_csv_release(&s.csv);
        memset(&s, 0, sizeof s);
        IS_INT(TB_OK, tb_validate_compute(&v, &s, err, sizeof err), "no rows");
        IS_INT(0, (long long)v.nprecisions, "no rows: no precision groups");
        OK(!tb_validate_error(&v, "F", "train", &pct, &few, basis, sizeof basis) && isnan(pct),
           "no rows: no band");
        tb_validate_release(&v);
    }

    /* per (family, phase, precision): K serve fp8 rows at 10%, 20% and 40% (one more
     * incomplete and not predicted), K serve bf16 at 5%, K train fp8 at 30%, K serve with
     * no precision at 50%; L serve fp8 at 0% and one valueless L row */
    {
        static const struct {
            const char *family, *phase, *prec;
            double value, predicted;
            bool incomplete;
        } rows[] = {
            {"K", "serve", "fp8", 100, 110, false},  {"K", "serve", "fp8", 100, 80, false},
            {"K", "serve", "bf16", 200, 210, false}, {"K", "serve", "fp8", 50, 70, false},
            {"K", "train", "fp8", 10, 13, false},    {"K", "serve", "fp8", 100, NAN, true},
            {"K", "serve", "", 2, 3, false},         {"L", "serve", "fp8", 7, 7, false},
            {"L", "serve", "fp8", 0, 9, false},
        };
        enum { NR = sizeof rows / sizeof rows[0] };
        struct tb_scenario_result r3[NR];
        char text[512] = "phase,precision\n";
        const struct tb_validate_group *g;
        for (size_t i = 0; i < NR; i++) {
            row(&r3[i], rows[i].family, rows[i].value, rows[i].predicted, rows[i].incomplete);
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s,%s\n", rows[i].phase,
                     rows[i].prec);
        }
        memset(&s, 0, sizeof s);
        if (tb_csv_parse(&s.csv, "precisions.csv", text, strlen(text), err, sizeof err) != 0)
            bail("%s", err);
        s.res = r3;
        s.nrows = NR;
        IS_INT(TB_OK, tb_validate_compute(&v, &s, err, sizeof err), "compute with precisions");
        IS_INT(5, (long long)v.nprecisions,
               "five (family, phase, precision) groups: K serve fp8, bf16 and none, K train "
               "fp8, L serve fp8");
        IS_STRING("K", v.precisions[0].family, "in the order they first appear: K");
        IS_STRING("serve", v.precisions[0].phase, "serve");
        IS_STRING("fp8", v.precisions[0].precision, "fp8");
        IS_STRING("bf16", v.precisions[1].precision, "then K serve bf16");
        IS_STRING("train", v.precisions[2].phase, "then K train fp8");
        g = tb_validate_family_phase_precision(&v, "K", "serve", "fp8");
        OK(g == &v.precisions[0], "found by family, phase and precision");
        IS_INT(4, (long long)g->rows, "K serve fp8: 4 rows with a value");
        IS_INT(3, (long long)g->complete, "3 complete");
        IS_INT(3, (long long)g->n, "3 predicted");
        IS_DOUBLE(20, g->median, 1e-12, "median of {10, 20, 40} is 20");
        IS_DOUBLE(36, g->p90, 1e-12, "p90 = 20 + 0.8 x 20 = 36");
        g = tb_validate_family_phase_precision(&v, "K", "serve", "bf16");
        IS_DOUBLE(5, g ? g->median : NAN, 1e-12, "K serve bf16: |210 - 200| / 200 = 5%%");
        g = tb_validate_family_phase_precision(&v, "K", "train", "fp8");
        IS_DOUBLE(30, g ? g->p90 : NAN, 1e-9, "K train fp8: 30%%");
        g = tb_validate_family_phase_precision(&v, "K", "serve", "");
        IS_DOUBLE(50, g ? g->median : NAN, 1e-12, "K serve with no precision: its own group, 50%%");
        g = tb_validate_family_phase_precision(&v, "L", "serve", "fp8");
        IS_INT(1, (long long)(g ? g->rows : 0), "L serve fp8: the valueless row not counted");
        IS_DOUBLE(0, g ? g->median : NAN, 0, "L: an exact prediction, 0%%");
        OK(tb_validate_family_phase_precision(&v, "L", "serve", "bf16") == NULL,
           "a precision without rows: NULL");
        OK(tb_validate_family_phase_precision(&v, "K", "decode", "fp8") == NULL,
           "a phase without rows: NULL");
        g = tb_validate_family_phase(&v, "K", "serve");
        IS_INT(6, (long long)(g ? g->rows : 0),
               "the (family, phase) group still counts every "
               "precision: K serve 6 rows");
        IS_DOUBLE(20, g ? g->median : NAN, 1e-12, "K serve: median of {5, 10, 20, 40, 50} is 20");
        tb_validate_release(&v);
        OK(v.precisions == NULL && v.nprecisions == 0, "release empties the precision groups");
        tb_csv_release(&s.csv);
    }
    return 0;
}
