/* tests/unit/cost.c: the report's cost arithmetic (tb_cost.h) on real figures. */
#include "tb_cost.h"

#include "tests/tap/basic.h"

#include <math.h>

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
    return 0;
}
