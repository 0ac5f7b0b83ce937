/* tests/unit/cost.c: the cost stage (tb_cost.h): its arithmetic on real figures, then
 * the stage on its own, without the report: the fixture's rows read back typed
 * (tb_results_load) and priced (tb_costs_build). */
#include "tb_cost.h"

#include "tb_pricing.h"
#include "tb_results.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The cost of metric on target, or NULL. */
static const struct tb_cost *find(const struct tb_costs *cs, const char *target, const char *metric)
{
    for (size_t i = 0; i < cs->ncosts; i++)
        if (!strcmp(tb_result_field(cs->costs[i].row, "target"), target) &&
            !strcmp(cs->costs[i].metric, metric))
            return &cs->costs[i];
    return NULL;
}

static void test_stage(void)
{
    struct tb_results res;
    struct tb_pricing pr;
    struct tb_costs cs;
    struct tb_cost_opts o;
    const struct tb_cost *c;
    char err[1024] = "";
    char *fixture = test_src_path("tests/data/report_results.csv");
    char *bad = test_src_path("tests/data/report_bad_results.csv");
    char *pdir = test_src_path("pricing");
    const char *files[1] = {fixture};
    bool ordered = true;

    IS_INT(0, tb_results_load(&res, files, 1, err, sizeof err), "the fixture reads %s", err);
    IS_INT(14, (long long)res.nrows, "14 rows");
    IS_INT((long long)res.nrows,
           (long long)(res.nprov[TB_PROV_MEASURED] + res.nprov[TB_PROV_MODELED] +
                       res.nprov[TB_PROV_PUBLISHED]),
           "each of a provenance");
    for (size_t i = 1; i < res.nrows; i++)
        ordered &= res.rows[i - 1].prov <= res.rows[i].prov;
    OK(ordered, "measured rows first, then modeled, then published");
    if (tb_pricing_load(&pr, pdir, err, sizeof err) != 0)
        bail("%s", err);
    memset(&o, 0, sizeof o);
    o.usd_per_hour = 0.36;
    o.baseline = "p5.48xlarge";
    o.max_price_age_days = 180;
    o.ttft_limit_ms = 2000;
    o.tpot_limit_ms = 200;
    o.train_tokens = 1e12;
    o.now = "2026-11-24T00:00:00Z";
    IS_INT(0, tb_costs_build(&cs, &res, &pr, &o, err, sizeof err), "priced %s", err);
    IS_INT(6, (long long)cs.ncosts, "a cost for each of the 6 throughput rows");
    IS_INT(5, (long long)cs.npriced, "5 with a price (trn2.48xlarge has no on-demand one)");
    c = find(&cs, "host", "usd_per_mtok_out");
    IS_DOUBLE(0.16, c ? c->usd : NAN, 1e-12, "host decode: $0.36/h at 625 tokens/s");
    OK(c && tb_costs_rank_of(&cs, c) != NULL, "and its workload is ranked");
    IS_INT(cs.nrefs, cs.btp.ref, "the baseline's price is the last footnote");
    tb_costs_release(&cs);
    o.baseline = "x9.huge";
    IS_INT(-1, tb_costs_build(&cs, &res, &pr, &o, err, sizeof err), "an unknown baseline");
    OK(strstr(err, "baseline: unknown instance type 'x9.huge'") != NULL, "%s", err);
    IS_INT(0, (long long)cs.ncosts, "leaves the table empty");
    tb_pricing_release(&pr);
    tb_results_release(&res);

    files[0] = bad;
    IS_INT(-1, tb_results_load(&res, files, 1, err, sizeof err), "a malformed file refused");
    OK(strstr(err, "report_bad_results.csv: line 6: field 'value': not a number: '6x5'") != NULL,
       "%s", err);
    IS_INT(0, (long long)res.nrows, "and nothing kept");
    IS_INT(-1, tb_results_load(&res, files, 0, err, sizeof err), "no file at all");
    IS_STRING("no results file given", err, "says so");
    free(fixture);
    free(bad);
    free(pdir);
}

/* Like for like: the baseline priced under the purchase model and region of the
 * candidates, else its on-demand price there, said so. The model's rows of one 70B
 * serving configuration on a trn2.48xlarge (3000 tokens/s) and a p5.48xlarge (2000). */
static void test_like_for_like(void)
{
    struct tb_result_row rows[2];
    struct tb_results res;
    struct tb_pricing pr;
    struct tb_costs cs;
    struct tb_cost_opts o;
    const struct tb_cost *t, *b, *b2;
    char err[1024] = "";
    char *path = test_tmp_path("cost_lfl.csv"), *pdir = test_src_path("pricing");
    const char *files[1] = {path};
    double base, cand;

    remove(path);
    memset(rows, 0, sizeof rows);
    rows[0].col[TB_COL_RUN_ID] = "model:trn2.48xlarge/llama-3.1-70b/serve/b8/in2048/out512/bf16";
    rows[0].col[TB_COL_PROVENANCE] = "modeled";
    rows[0].col[TB_COL_TARGET] = "trn2.48xlarge";
    rows[0].col[TB_COL_INSTANCES] = "1";
    rows[0].col[TB_COL_EXECUTOR] = "model";
    rows[0].col[TB_COL_MODEL] = "llama-3.1-70b";
    rows[0].col[TB_COL_PHASE] = "serve";
    rows[0].col[TB_COL_PRECISION] = "bf16";
    rows[0].col[TB_COL_BATCH] = "8";
    rows[0].col[TB_COL_SEQ_IN] = "2048";
    rows[0].col[TB_COL_SEQ_OUT] = "512";
    rows[0].col[TB_COL_METRIC] = "output_tokens_per_s";
    rows[0].col[TB_COL_VALUE] = "3000";
    rows[0].col[TB_COL_UNIT] = "tokens/s";
    rows[1] = rows[0];
    rows[1].col[TB_COL_RUN_ID] = "model:p5.48xlarge/llama-3.1-70b/serve/b8/in2048/out512/bf16";
    rows[1].col[TB_COL_TARGET] = "p5.48xlarge";
    rows[1].col[TB_COL_VALUE] = "2000";
    if (tb_results_append(path, rows, 2, err, sizeof err) != 0 ||
        tb_results_load(&res, files, 1, err, sizeof err) != 0 ||
        tb_pricing_load(&pr, pdir, err, sizeof err) != 0)
        bail("%s", err);
    memset(&o, 0, sizeof o);
    o.usd_per_hour = NAN;
    o.baseline = "p5.48xlarge";
    o.max_price_age_days = 180;
    o.now = "2026-11-24T00:00:00Z";
    o.region = "us-east-2";
    o.purchase = "capacity-block";
    IS_INT(0, tb_costs_build(&cs, &res, &pr, &o, err, sizeof err), "capacity-block: priced %s",
           err);
    OK(cs.like_for_like, "capacity-block in us-east-2: the baseline priced as the candidates");
    IS_STRING("capacity-block", cs.btp.c.purchase, "the baseline's capacity-block price");
    IS_STRING("us-east-2", cs.btp.c.region, "in us-east-2");
    IS_STRING("p5.48xlarge capacity-block in us-east-2", cs.basis, "the basis said");
    t = find(&cs, "trn2.48xlarge", "usd_per_mtok_out");
    b = find(&cs, "p5.48xlarge", "usd_per_mtok_out");
    base = cs.btp.c.usd_per_hour / (2000.0 * 3600) * 1e6;
    cand = t ? t->price->c.usd_per_hour / (3000.0 * 3600) * 1e6 : NAN;
    IS_STRING("capacity-block", t ? t->price->c.purchase : "", "the candidate's too");
    IS_DOUBLE(base, t ? t->base_usd : NAN, 1e-9, "trn2's baseline cost: p5 at capacity-block");
    IS_DOUBLE(base / cand, t ? t->perf : NAN, 1e-9, "price-performance like for like (%.3fx)",
              base / cand);
    IS_DOUBLE(base, b ? b->usd : NAN, 1e-9, "the p5 row's own cost is the baseline cost");
    tb_costs_release(&cs);

    /* --instance p5.48xlarge --usd-per-hour 30: the rate paid wins for every p5 row */
    o.instance = "p5.48xlarge";
    o.usd_per_hour = 30;
    IS_INT(0, tb_costs_build(&cs, &res, &pr, &o, err, sizeof err), "a rate paid: priced %s", err);
    b = find(&cs, "p5.48xlarge", "usd_per_mtok_out");
    IS_DOUBLE(30, b ? b->price->c.usd_per_hour : NAN, 0, "the p5 rows at the user's $30/h");
    IS_DOUBLE(30 / (2000.0 * 3600) * 1e6, b ? b->usd : NAN, 1e-9, "and their cost from it");
    t = find(&cs, "trn2.48xlarge", "usd_per_mtok_out");
    IS_STRING("capacity-block", t ? t->price->c.purchase : "", "other targets keep the table's");
    tb_costs_release(&cs);
    o.instance = NULL;
    o.usd_per_hour = NAN;

    /* reserved-3y in us-east-2: neither has a price there; each target is compared where
     * both do, the nearest purchase model first (never the baseline's on-demand price
     * against the candidate's capacity block) */
    o.purchase = "reserved-3y";
    IS_INT(0, tb_costs_build(&cs, &res, &pr, &o, err, sizeof err), "reserved-3y: priced %s", err);
    OK(!cs.like_for_like, "no reserved-3y price for the baseline there");
    OK(!cs.btp.c.have, "and none put in its place");
    IS_STRING("p5.48xlarge reserved-3y in us-east-2", cs.basis, "the basis said as chosen");
    t = find(&cs, "trn2.48xlarge", "usd_per_mtok_out");
    OK(t && isnan(t->usd), "trn2 has no reserved-3y price: no cost at the chosen prices");
    OK(t && t->price->cmp_have && !t->price->cmp_chosen, "but a comparison elsewhere");
    IS_STRING("capacity-block in us-east-2", t ? t->price->cmp_basis : "",
              "the nearest purchase model both have");
    IS_STRING("capacity-block", t ? t->price->bcmp.purchase : "", "the baseline priced alike");
    IS_DOUBLE(base / cand, t ? t->perf : NAN, 1e-9, "the same price-performance (%.3fx)",
              base / cand);
    IS_DOUBLE(cand, t ? t->cmp_usd : NAN, 1e-9, "at the comparison's cost");
    OK(t && !*t->price->cmp_flag && t->price->cmp_age >= 0,
       "the stand-in is dated and recent enough: no flag ('%s', %ld days)",
       t ? t->price->cmp_flag : "", t ? t->price->cmp_age : -1L);
    tb_costs_release(&cs);
    /* the same with a threshold the stand-in's date passes: it is flagged as the chosen
     * price would be, not shown as fresh because it stands in */
    o.max_price_age_days = 30;
    IS_INT(0, tb_costs_build(&cs, &res, &pr, &o, err, sizeof err), "threshold 30 days: %s", err);
    t = find(&cs, "trn2.48xlarge", "usd_per_mtok_out");
    OK(t && !strncmp(t->price->cmp_flag, "stale: ", 7) && t->price->cmp_age > 30,
       "a stand-in older than the threshold is flagged: '%s'", t ? t->price->cmp_flag : "");
    tb_costs_release(&cs);
    o.max_price_age_days = 180;

    /* the model's error as ranges: a hand-made validation, H100 SXM5 serve at 20% (12
     * rows), Trainium2 at 10% on 3 rows only (the overall 30% is used) */
    {
        struct tb_validation v;
        struct tb_validate_group fam[2], ph[2];
        double a[12], e3[3], all[15];
        for (int i = 0; i < 12; i++)
            a[i] = all[i] = 20;
        for (int i = 0; i < 3; i++)
            e3[i] = all[12 + i] = 10;
        memset(&v, 0, sizeof v);
        memset(fam, 0, sizeof fam);
        memset(ph, 0, sizeof ph);
        snprintf(fam[0].family, sizeof fam[0].family, "H100 SXM5");
        fam[0].ape = a;
        fam[0].rows = fam[0].complete = fam[0].n = 12;
        fam[0].median = fam[0].p90 = 20;
        ph[0] = fam[0];
        snprintf(ph[0].phase, sizeof ph[0].phase, "serve");
        snprintf(fam[1].family, sizeof fam[1].family, "Trainium2");
        fam[1].ape = e3;
        fam[1].rows = fam[1].complete = fam[1].n = 3;
        fam[1].median = fam[1].p90 = 10;
        ph[1] = fam[1];
        snprintf(ph[1].phase, sizeof ph[1].phase, "serve");
        v.groups = fam;
        v.ngroups = 2;
        v.phases = ph;
        v.nphases = 2;
        v.all.ape = all;
        v.all.rows = v.all.complete = v.all.n = 15;
        v.all.median = 20;
        v.all.p90 = 30;
        o.validation = &v;
        o.purchase = "capacity-block";
        IS_INT(0, tb_costs_build(&cs, &res, &pr, &o, err, sizeof err), "with errors: %s", err);
        t = find(&cs, "trn2.48xlarge", "usd_per_mtok_out");
        b2 = find(&cs, "p5.48xlarge", "usd_per_mtok_out");
        IS_DOUBLE(0.30, t ? t->err : NAN, 1e-12, "Trainium2 on 3 rows: the overall p90, 30%%");
        OK(t && t->err_few, "and flagged as few");
        IS_DOUBLE(0.20, b2 ? b2->err : NAN, 1e-12, "H100 serve on 12 rows: its own p90, 20%%");
        IS_STRING("p90 of 12 H100 SXM5 serve rows (in-sample)", b2 ? b2->err_basis : "", "said");
        IS_DOUBLE(0.7 * cand, t ? t->usd_lo : NAN, 1e-9, "trn2's cost range: -30%%");
        IS_DOUBLE(1.3 * cand, t ? t->usd_hi : NAN, 1e-9, "to +30%%");
        IS_DOUBLE(base / cand * exp(-hypot(log(0.8), log(1.3))), t ? t->perf_lo : NAN, 1e-9,
                  "price-performance low: both errors in quadrature (%.3f)",
                  base / cand * exp(-hypot(log(0.8), log(1.3))));
        IS_DOUBLE(base / cand * exp(hypot(log(1.2), log(0.7))), t ? t->perf_hi : NAN, 1e-9,
                  "high (%.3f)", base / cand * exp(hypot(log(1.2), log(0.7))));
        IS_DOUBLE(1.0, b2 ? b2->perf_lo : NAN, 1e-12, "the baseline against itself: no range");
        tb_costs_release(&cs);
        o.validation = NULL;
    }
    tb_costs_release(&cs);
    tb_pricing_release(&pr);
    tb_results_release(&res);
    free(path);
    free(pdir);
}

/* A mixture of experts' modeled row takes the band of the family's MoE rows ("serve+moe",
 * tb_validate_term), not the dense models' (the MoE rows of published.csv miss by several
 * times as much). */
static void test_moe_band(void)
{
    struct tb_result_row rows[1];
    struct tb_results res;
    struct tb_pricing pr;
    struct tb_costs cs;
    struct tb_cost_opts o;
    struct tb_validation v;
    struct tb_validate_group fam[1], ph[2];
    double a[12], m[12], all[24];
    const struct tb_cost *c;
    char err[1024] = "";
    char *path = test_tmp_path("cost_moe.csv"), *pdir = test_src_path("pricing");
    const char *files[1] = {path};

    remove(path);
    memset(rows, 0, sizeof rows);
    rows[0].col[TB_COL_RUN_ID] =
        "model:p5.48xlarge/llama-4-maverick-17b-128e/serve/b8/in1024/out1024/fp8";
    rows[0].col[TB_COL_PROVENANCE] = "modeled";
    rows[0].col[TB_COL_TARGET] = "p5.48xlarge";
    rows[0].col[TB_COL_INSTANCES] = "1";
    rows[0].col[TB_COL_EXECUTOR] = "model";
    rows[0].col[TB_COL_MODEL] = "llama-4-maverick-17b-128e";
    rows[0].col[TB_COL_PHASE] = "serve";
    rows[0].col[TB_COL_PRECISION] = "fp8";
    rows[0].col[TB_COL_BATCH] = "8";
    rows[0].col[TB_COL_SEQ_IN] = "1024";
    rows[0].col[TB_COL_SEQ_OUT] = "1024";
    rows[0].col[TB_COL_METRIC] = "output_tokens_per_s";
    rows[0].col[TB_COL_VALUE] = "2000";
    rows[0].col[TB_COL_UNIT] = "tokens/s";
    if (tb_results_append(path, rows, 1, err, sizeof err) != 0 ||
        tb_results_load(&res, files, 1, err, sizeof err) != 0 ||
        tb_pricing_load(&pr, pdir, err, sizeof err) != 0)
        bail("%s", err);
    for (int i = 0; i < 12; i++) {
        a[i] = all[i] = 20;
        m[i] = all[12 + i] = 60;
    }
    memset(&v, 0, sizeof v);
    memset(fam, 0, sizeof fam);
    memset(ph, 0, sizeof ph);
    snprintf(fam[0].family, sizeof fam[0].family, "H100 SXM5");
    fam[0].ape = a;
    fam[0].rows = fam[0].complete = fam[0].n = 12;
    fam[0].median = fam[0].p90 = 20;
    ph[0] = fam[0];
    snprintf(ph[0].phase, sizeof ph[0].phase, "serve");
    ph[1] = ph[0];
    ph[1].ape = m;
    ph[1].median = ph[1].p90 = 60;
    snprintf(ph[1].phase, sizeof ph[1].phase, "serve+moe");
    v.groups = fam;
    v.ngroups = 1;
    v.phases = ph;
    v.nphases = 2;
    v.all.ape = all;
    v.all.rows = v.all.complete = v.all.n = 24;
    v.all.median = 40;
    v.all.p90 = 60;
    memset(&o, 0, sizeof o);
    o.usd_per_hour = NAN;
    o.baseline = "p5.48xlarge";
    o.max_price_age_days = 180;
    o.now = "2026-11-24T00:00:00Z";
    o.validation = &v;
    IS_INT(0, tb_costs_build(&cs, &res, &pr, &o, err, sizeof err), "a MoE row priced: %s", err);
    c = find(&cs, "p5.48xlarge", "usd_per_mtok_out");
    IS_DOUBLE(0.60, c ? c->err : NAN, 1e-12, "Maverick on H100: the MoE rows' p90, 60%%");
    IS_STRING("p90 of 12 H100 SXM5 serve+moe rows (in-sample)", c ? c->err_basis : "", "said");
    tb_costs_release(&cs);
    tb_pricing_release(&pr);
    tb_results_release(&res);
    free(path);
    free(pdir);
}

int main(void)
{
    long d = 0;
    plan_lazy();

    /* dates */
    IS_INT(0, tb_cost_days("1970-01-01", &d), "epoch parses");
    IS_INT(0, d, "epoch is day 0");
    tb_cost_days("2000-03-01", &d);
    IS_INT(11017, d, "2000-03-01 is day 11017 (leap day counted)");
    IS_INT(0, tb_cost_days("2026-11-23T04:15:19Z", &d), "a timestamp parses as its date");
    IS_INT(20780, d, "2026-11-23 is day 20780 (Python datetime agrees)");
    tb_cost_days("2025", &d);
    IS_INT(20089, d, "a year stands for its first day");
    IS_INT(-1, tb_cost_days("2025-13", &d), "month 13 refused");
    IS_INT(-1, tb_cost_days("2025-02-30", &d), "Feb 30 refused");
    IS_INT(-1, tb_cost_days("pre-2025-06-01", &d), "prose refused");
    IS_INT(-1, tb_cost_days("20250", &d), "five-digit year refused");
    IS_INT(-1, tb_cost_days("", &d), "empty refused");
    IS_INT(83, tb_cost_age_days("2026-09-01", "2026-11-23T00:00:00Z"), "age of a price in days");
    IS_INT(366, tb_cost_age_days("2024-01-01", "2025-01-01"), "2024 has 366 days");
    IS_INT(-1, tb_cost_age_days("", "2026-11-23"), "undated price: no age");

    /* cost per unit: $98.32/h at 15617 tokens/s -> $1.7488 per million tokens */
    IS_DOUBLE(98.32 / (15617.0 * 3600.0) * 1e6, tb_cost_usd_per(98.32, 15617.0, 1e6), 1e-12,
              "usd per Mtok");
    IS_DOUBLE(1.0, tb_cost_usd_per(3.6, 1.0, 1e3), 1e-12, "$3.60/h at 1 image/s: $1 per kimage");
    OK(isnan(tb_cost_usd_per(0, 10, 1e6)), "no price, no cost");
    OK(isnan(tb_cost_usd_per(10, NAN, 1e6)), "no throughput, no cost");

    /* the share of an instance a run is charged */
    IS_DOUBLE(0.125, tb_cost_instance_share(1, 1, 8), 0, "1 GPU of a p5.48xlarge's 8: 1/8");
    IS_DOUBLE(1.5, tb_cost_instance_share(2, 12, 8), 0, "12 chips of 2 x 8: 1.5 instances");
    IS_DOUBLE(1.0, tb_cost_instance_share(1, 8, 8), 0, "all 8: the whole instance");
    IS_DOUBLE(4.0, tb_cost_instance_share(4, 0, 8), 0, "chips_used not recorded: all instances");
    IS_DOUBLE(1.0, tb_cost_instance_share(1, 1, 0), 0, "not a catalogued instance: all of it");

    /* training 1T tokens at 1.2M tokens/s on $800/h */
    IS_DOUBLE(1e12 / 1.2e6 / 86400.0, tb_cost_train_days(1e12, 1.2e6), 1e-9, "days to train");
    IS_DOUBLE(1e12 / 1.2e6 / 3600.0 * 800.0, tb_cost_train_usd(1e12, 1.2e6, 800.0), 1e-6,
              "cost to train");
    OK(isnan(tb_cost_train_usd(1e12, 1.2e6, NAN)), "no price: no training cost");

    /* Capacity Blocks: whole days (1..14, then weeks to 182), 64 instances a block */
    {
        struct tb_pricing_cblock b;
        IS_DOUBLE(1, tb_pricing_cblock_days(0.5), 0, "half an hour buys a day");
        IS_DOUBLE(2, tb_pricing_cblock_days(24.9), 0, "24.9 h buys 2 days");
        IS_DOUBLE(2, tb_pricing_cblock_days(48.0), 0, "exactly 48 h buys 2 days, not 3");
        IS_DOUBLE(14, tb_pricing_cblock_days(13.2 * 24), 0, "13.2 days: 14, by the day");
        IS_DOUBLE(21, tb_pricing_cblock_days(14.5 * 24), 0, "14.5 days: the next week, 21");
        IS_DOUBLE(182, tb_pricing_cblock_days(180 * 24), 0, "180 days: 182");
        IS_DOUBLE(182 + 3, tb_pricing_cblock_days(184.5 * 24), 0, "184.5 days: 182 then 3 more");
        OK(isnan(tb_pricing_cblock_days(0)), "no hours: no blocks");
        OK(tb_pricing_cblock(24.9, 1, 35.7608, &b) == 0, "one trn2 for 24.9 h");
        IS_DOUBLE(2 * 24 * 35.7608, b.usd, 1e-9, "paid for 2 whole days: $1,716.52");
        IS_DOUBLE(24.9 / 48, b.used, 1e-12, "of which the job uses 52 percent");
        IS_DOUBLE(1, b.blocks, 0, "in one block");
        OK(tb_pricing_cblock(100, 65, 10, &b) == 0 && b.blocks == 2 && !b.over_quota,
           "65 instances: two blocks");
        OK(tb_pricing_cblock(100, 300, 10, &b) == 0 && b.blocks == 5 && b.over_quota,
           "300 instances: five blocks, past an account's 256");
        OK(tb_pricing_cblock(200 * 24, 8, 10, &b) == 0 && b.blocks == 2 && b.days == 182 + 21,
           "200 days on 8: a 182-day block then a 21-day one");
        OK(tb_pricing_cblock(10, 1.5, 10, &b) < 0 && isnan(b.usd), "half an instance is refused");
        OK(tb_pricing_cblock(10, 1, NAN, &b) < 0, "no price: refused");
    }

    /* latency limits */
    OK(tb_cost_meets(450, 40, 2000, 200), "within both limits");
    OK(!tb_cost_meets(2100, 40, 2000, 200), "TTFT over");
    OK(!tb_cost_meets(450, 201, 2000, 200), "TPOT over");
    OK(tb_cost_meets(9999, 9999, 0, NAN), "no limits");
    OK(!tb_cost_meets(NAN, 10, 2000, 0), "unknown TTFT fails a TTFT limit");
    OK(tb_cost_meets(NAN, 10, 0, 200), "unknown TTFT passes without a TTFT limit");

    /* price-performance */
    IS_DOUBLE(2.0, tb_cost_price_perf(4.0, 2.0), 1e-12, "half the cost: 2x");
    IS_DOUBLE(0.5, tb_cost_price_perf(1.0, 2.0), 1e-12, "twice the cost: 0.5x");
    OK(isnan(tb_cost_price_perf(NAN, 2.0)), "no baseline: no ratio");

    /* the price at which an answer flips: cost scales with the hourly rate */
    IS_DOUBLE(45.0, tb_cost_flip_rate(30.0, 2.0, 3.0), 1e-12,
              "$30/h at 2 against 3: cheaper up to $45/h");
    IS_DOUBLE(20.0, tb_cost_flip_rate(30.0, 3.0, 2.0), 1e-12,
              "$30/h at 3 against 2: cheaper only below $20/h");
    IS_DOUBLE(30.0, tb_cost_flip_rate(30.0, 2.0, 2.0), 1e-12, "equal costs: its own price");
    {
        /* the brief's form: the target stays cheaper while its rate is under the
         * baseline's cost per token x its throughput (tokens an hour) */
        double tput = 5082.0, usd = tb_cost_usd_per(35.7608, tput, 1e6), base = 2.604;
        double flip = tb_cost_flip_rate(35.7608, usd, base);
        IS_DOUBLE(2.604e-6 * 5082.0 * 3600.0, flip, 1e-9, "trn2 vs p5 case: $%.4f/h", flip);
        IS_DOUBLE(47.6407008, flip, 1e-9, "by hand: 2.604 / 1e6 x 5082 x 3600 = 47.6407008");
        IS_DOUBLE(base, tb_cost_usd_per(flip, tput, 1e6), 1e-12,
                  "at the flip price the two cost the same");
    }
    OK(isnan(tb_cost_flip_rate(NAN, 2.0, 3.0)), "no rate: no flip price");
    OK(isnan(tb_cost_flip_rate(30.0, 0.0, 3.0)), "no cost: no flip price");
    OK(isnan(tb_cost_flip_rate(30.0, 2.0, INFINITY)), "an infinite cost: no flip price");

    /* a price-performance's range: independent errors add in quadrature (in logs) */
    {
        double lo, hi;
        tb_cost_perf_range(2.0, 0.8, 1.2, 1.0, 0.7, 1.3, &lo, &hi);
        IS_DOUBLE(2.0 * exp(-hypot(log(0.8), log(1.3))), lo, 1e-12, "low: %.4f", lo);
        IS_DOUBLE(2.0 * exp(hypot(log(1.2), log(0.7))), hi, 1e-12, "high: %.4f", hi);
        tb_cost_perf_range(2.0, 1, 1, 1.0, 1, 1, &lo, &hi);
        IS_DOUBLE(2.0, lo, 1e-12, "no error: no range");
        tb_cost_perf_range(2.0, 1.1, 1.2, 1.0, 0.7, 1.3, &lo, &hi);
        OK(isnan(lo) && isnan(hi), "a range that does not hold its figure: refused");
    }
    /* the nearest purchase model and region */
    {
        const char *ord[TB_COST_NPURCHASE];
        tb_cost_purchase_order(NULL, ord);
        IS_STRING("on-demand", ord[0], "on-demand first by default");
        IS_STRING("capacity-block", ord[1], "then capacity blocks (no long commitment)");
        IS_STRING("spot", ord[6], "spot (interruptible) last");
        tb_cost_purchase_order("reserved-3y", ord);
        IS_STRING("savings-plan-3y", ord[1], "reserved-3y: the 3-year savings plan next");
        tb_cost_purchase_order("spot", ord);
        IS_STRING("on-demand", ord[1], "spot: on-demand next");
        IS_INT(0, tb_cost_region_distance("us-east-1", "us-east-1"), "the same region");
        IS_INT(1, tb_cost_region_distance("us-east-1", "us-east-2"), "the same area");
        IS_INT(2, tb_cost_region_distance("us-east-1", "us-west-2"), "the same geography");
        IS_INT(3, tb_cost_region_distance("us-east-1", "eu-west-1"), "elsewhere");
        IS_INT(3, tb_cost_region_distance("us-east-1", "usx-east-1"),
               "a prefix is not a geography");
    }

    test_stage();
    test_like_for_like();
    test_moe_band();
    return 0;
}
