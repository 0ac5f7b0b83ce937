/* tests/unit/price_ratios.c: pricing/prices.csv against the ratios its sources say AWS
 * keeps (tests/data/price_ratios.csv, copied from pricing/sources/prices-found-2026-11-28.md):
 * a family's on-demand price in a region over its price in us-east-1 (section 3), and a
 * 1-year No Upfront RI over on-demand in the same region (section 2 B1). A mistyped row
 * breaks its ratio: the test then names the row, and it checks itself by altering each
 * checked row by 10% in memory and requiring the check to catch it. */
#include "tb_csv.h"
#include "tb_pricing.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ratios {
    struct tb_csv_table t; /* owned: tests/data/price_ratios.csv */
    int check, instances, region, ratio, tolerance;
};

/* Whether the space-separated list names instance. */
static bool names(const char *list, const char *instance)
{
    size_t n = strlen(instance);
    for (const char *s = list; (s = strstr(s, instance)) != NULL; s += n)
        if ((s == list || s[-1] == ' ') && (s[n] == ' ' || !s[n]))
            return true;
    return false;
}

/* The ratio row of check for (instance, region) ("*" rows hold for every region), or -1. */
static long ratio_row(const struct ratios *r, const char *check, const char *instance,
                      const char *region)
{
    for (size_t i = 0; i < r->t.nrows; i++) {
        const char *reg = tb_csv_get(&r->t, i, r->region);
        if (!strcmp(tb_csv_get(&r->t, i, r->check), check) &&
            names(tb_csv_get(&r->t, i, r->instances), instance) &&
            (!strcmp(reg, region) || !strcmp(reg, "*")))
            return (long)i;
    }
    return -1;
}

/* Whether any ratio row of check names instance. */
static bool covered(const struct ratios *r, const char *check, const char *instance)
{
    for (size_t i = 0; i < r->t.nrows; i++)
        if (!strcmp(tb_csv_get(&r->t, i, r->check), check) &&
            names(tb_csv_get(&r->t, i, r->instances), instance))
            return true;
    return false;
}

/* Whether a row is one the ratios speak for: listed, in a real region, dated after the
 * June-2025 GPU cut (the ratios are of the 2026 prices; older rows are history). */
static bool current(const struct tb_price *x, const char *purchase)
{
    return !strcmp(x->status, "listed") && !strcmp(x->purchase, purchase) &&
           strchr(x->region, '-') && strcmp(x->region, "unspecified") != 0 &&
           strcmp(x->as_of, "2025-06") >= 0;
}

/* Check every current row of prices.csv; quiet unless say. Returns the rows that fail
 * and counts those checked in *nchecked. */
static size_t check_all(const struct tb_pricing *p, const struct ratios *r, bool say,
                        size_t *nchecked)
{
    size_t bad = 0;
    char why[1024];
    *nchecked = 0;
    for (size_t i = 0; i < p->nprices; i++) {
        const struct tb_price *x = &p->prices[i], *base = NULL;
        const char *check = NULL, *base_region = NULL, *base_purchase = "on-demand";
        long k;
        double want, tol, got;
        if (current(x, "on-demand") && covered(r, "on-demand/us-east-1", x->instance)) {
            check = "on-demand/us-east-1";
            base_region = "us-east-1";
        } else if (current(x, "reserved-1y") && covered(r, "reserved-1y/on-demand", x->instance)) {
            check = "reserved-1y/on-demand";
            base_region = x->region;
        } else {
            continue;
        }
        ++*nchecked;
        k = ratio_row(r, check, x->instance, x->region);
        if (k < 0) {
            bad++;
            if (say)
                diag("prices.csv line %ld: %s %s %s: no ratio in tests/data/price_ratios.csv "
                     "(the .md's table has no such cell: a mistyped region or instance?)",
                     x->line, x->instance, x->region, x->purchase);
            continue;
        }
        if (tb_pricing_best(p, x->instance, base_region, base_purchase, &base, why, sizeof why) !=
            0) {
            bad++;
            if (say)
                diag("prices.csv line %ld: no %s price in %s to compare with: %s", x->line,
                     base_purchase, base_region, why);
            continue;
        }
        want = atof(tb_csv_get(&r->t, (size_t)k, r->ratio));
        tol = atof(tb_csv_get(&r->t, (size_t)k, r->tolerance));
        got = x->usd_per_hour / base->usd_per_hour;
        if (!(fabs(got - want) <= tol)) {
            bad++;
            if (say)
                diag("prices.csv line %ld: %s %s %s %g / %g (line %ld) = %.4f, the table says "
                     "%.3f +- %g",
                     x->line, x->instance, x->region, x->purchase, x->usd_per_hour,
                     base->usd_per_hour, base->line, got, want, tol);
        }
    }
    return bad;
}

int main(void)
{
    struct tb_pricing p;
    struct ratios r;
    char err[1024], why[1024];
    char *dir = test_src_path("pricing");
    char *path = test_src_path("tests/data/price_ratios.csv");
    size_t n, bad, missed = 0, altered = 0;

    plan_lazy();
    if (tb_pricing_load(&p, dir, err, sizeof err) != 0)
        bail("cannot load %s: %s", dir, err);
    if (tb_csv_load(&r.t, path, err, sizeof err) != 0)
        bail("%s", err);
    r.check = tb_csv_col(&r.t, "check");
    r.instances = tb_csv_col(&r.t, "instances");
    r.region = tb_csv_col(&r.t, "region");
    r.ratio = tb_csv_col(&r.t, "ratio");
    r.tolerance = tb_csv_col(&r.t, "tolerance");
    if (r.check < 0 || r.instances < 0 || r.region < 0 || r.ratio < 0 || r.tolerance < 0 ||
        tb_csv_col(&r.t, "source") < 0)
        bail("%s: a column is missing (check, instances, region, ratio, tolerance, source)", path);
    for (size_t i = 0; i < r.t.nrows; i++) {
        if (!*tb_csv_field(&r.t, i, "source"))
            bail("%s: line %ld: field 'source' is empty", path, r.t.lines[i]);
        if (!(atof(tb_csv_get(&r.t, i, r.ratio)) > 0) ||
            !(atof(tb_csv_get(&r.t, i, r.tolerance)) > 0))
            bail("%s: line %ld: field 'ratio' or 'tolerance' is not a positive number", path,
                 r.t.lines[i]);
    }

    bad = check_all(&p, &r, true, &n);
    IS_INT(0, (long long)bad,
           "every current on-demand and 1-year RI row keeps its ratio (%zu rows)", n);
    OK(n >= 150, "the check is not vacuous: %zu rows checked", n);

    /* the check catches a 10% error in any one of the rows it checks */
    for (size_t i = 0; i < p.nprices; i++) {
        struct tb_price *x = &p.prices[i];
        size_t m;
        double keep = x->usd_per_hour;
        if (!(current(x, "on-demand") && covered(&r, "on-demand/us-east-1", x->instance)) &&
            !(current(x, "reserved-1y") && covered(&r, "reserved-1y/on-demand", x->instance)))
            continue;
        altered++;
        x->usd_per_hour = keep * 1.10;
        if (check_all(&p, &r, false, &m) == 0) {
            missed++;
            diag("a 10%% error in prices.csv line %ld would pass", x->line);
        }
        x->usd_per_hour = keep;
    }
    IS_INT(0, (long long)missed, "a 10%% error in any one of the %zu checked rows fails the check",
           altered);

    /* what a lookup returns in each region of the table is a current price, not the
     * pre-cut history: e.g. p5.48xlarge in ap-northeast-1 */
    {
        const struct tb_price *x, *b;
        int rc =
            tb_pricing_best(&p, "p5.48xlarge", "ap-northeast-1", "on-demand", &x, why, sizeof why);
        OK(rc == 0 &&
               tb_pricing_best(&p, "p5.48xlarge", "us-east-1", "on-demand", &b, why, sizeof why) ==
                   0 &&
               fabs(x->usd_per_hour / b->usd_per_hour - 1.25) < 0.005,
           "p5.48xlarge in ap-northeast-1 is 1.25 x us-east-1 (%g), not the pre-cut 123.19",
           rc == 0 ? x->usd_per_hour : NAN);
        rc = tb_pricing_best(&p, "inf2.48xlarge", "eu-west-1", "reserved-1y", &x, why, sizeof why);
        IS_DOUBLE(10.22275, rc == 0 ? x->usd_per_hour : NAN, 1e-9,
                  "inf2.48xlarge 1-year RI in eu-west-1");
    }

    tb_csv_release(&r.t);
    tb_pricing_release(&p);
    free(dir);
    free(path);
    return 0;
}
