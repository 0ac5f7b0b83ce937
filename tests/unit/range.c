/*
 * tests/unit/range.c: ranges as data (harness/base/tb_range.h). The checked product
 * refuses what overflows a long; a field out of its range is refused by name with its
 * range; the model refuses a layout whose tp x pp x dp or instances x chips overflows
 * instead of dividing by the wrapped product (issue 19 item 1: SIGFPE); and every
 * format's table of ranges is the one docs/results.md ("Input ranges") documents.
 */
#include "tb_range.h"

#include "tb_arch.h"
#include "tb_assess.h"
#include "tb_darch.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_scenario.h"
#include "tb_suite.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every format's table, as docs/results.md lists them. */
static const struct {
    const char *format;
    const struct tb_range *table;
} TABLES[] = {
    {"scenario tables and predict lines", TB_SCENARIO_RANGES},
    {"Llama model files", TB_ARCH_RANGES},
    {"diffusion model files", TB_DARCH_RANGES},
    {"assessment inputs", TB_ASSESS_RANGES},
    {"suite run and serve lines", TB_SUITE_RUN_RANGES},
    {"pricing/chips.csv", TB_CHIPS_RANGES},
    {"pricing/instances.csv", TB_INSTANCES_RANGES},
    {"pricing/prices.csv", TB_PRICES_RANGES},
    {"pricing/efficiency.csv", TB_EFFICIENCY_RANGES},
    {"pricing/storage.csv", TB_STORAGE_RANGES},
    {"pricing/compile.csv", TB_COMPILE_RANGES},
    {"pricing/stacks.csv", TB_STACKS_RANGES},
    {"workloads/datasets.csv", TB_DATASETS_RANGES},
    {"workloads/mlperf_limits.csv", TB_LIMITS_RANGES},
};
#define NTABLES (sizeof TABLES / sizeof TABLES[0])

static void products(void)
{
    long x = 7;
    OK(tb_mul_long(3, 4, &x) == 0 && x == 12, "3 x 4 = 12");
    OK(tb_mul_long(LONG_MAX / 2 + 1, 2, &x) == -1 && x == 12, "LONG_MAX/2+1 x 2 overflows");
    OK(tb_mul_long(1099511627776L, 16777216L, &x) == -1,
       "2^40 x 2^24 overflows (the issue's tp x dp)");
    OK(tb_mul_long(-(1L << 40), 1L << 23, &x) == 0 && x == LONG_MIN,
       "-2^40 x 2^23 = LONG_MIN fits");
}

static void parsing(void)
{
    const struct tb_range *tp = tb_range_find(TB_SCENARIO_RANGES, "tp");
    char err[256] = "";
    long v = 0;
    double d = 0;
    OK(tp && tp->integer && tp->lo == 1, "the scenario table has tp, an integer from 1");
    OK(tb_range_parse_long(tp, "64", &v, err, sizeof err) == 0 && v == 64, "tp=64 taken");
    OK(tb_range_parse_long(tp, "1099511627776", &v, err, sizeof err) == -1, "tp=2^40 refused");
    IS_STRING("field 'tp': expected an integer in [1, 65536] (devices), got '1099511627776'", err,
              "the message names the field, its range and the value");
    OK(tb_range_parse_long(tp, "1e3", &v, err, sizeof err) == -1, "an integer field refuses 1e3");
    OK(tb_range_field(TB_SCENARIO_RANGES, "value", "nan", &d, err, sizeof err) == -1 &&
           tb_range_field(TB_SCENARIO_RANGES, "value", "inf", &d, err, sizeof err) == -1 &&
           tb_range_field(TB_SCENARIO_RANGES, "value", "-3", &d, err, sizeof err) == -1 &&
           tb_range_field(TB_SCENARIO_RANGES, "value", "0", &d, err, sizeof err) == -1,
       "a measured value of nan, inf, -3 or 0 is refused");
    OK(tb_range_field(TB_SCENARIO_RANGES, "value", "12.5", &d, err, sizeof err) == 0 && d == 12.5,
       "a measured value of 12.5 is taken");
    OK(tb_range_find(TB_SCENARIO_RANGES, "no_such_field") == NULL, "an unknown field is not found");
}

/* The model on layouts whose products overflow a long: refused, never a division by
 * the wrapped product. */
static void model_products(void)
{
    struct tb_pricing pr;
    struct tb_model m;
    struct tb_arch a;
    struct tb_darch da;
    struct tb_scenario s;
    struct tb_prediction p;
    char err[512];
    char *dir = test_src_path("pricing");

    if (tb_pricing_load(&pr, dir, err, sizeof err) != 0 ||
        tb_model_load(&m, &pr, dir, err, sizeof err) != 0)
        bail("%s", err);
    if (tb_arch_find(&a, "llama-3.1-8b", err, sizeof err) != 0 ||
        tb_darch_find(&da, "sdxl", err, sizeof err) != 0)
        bail("%s", err);
    memset(&s, 0, sizeof s);
    s.arch = &a;
    s.inst = tb_pricing_instance(&pr, "p5.48xlarge");
    s.phase = TB_PHASE_TRAIN;
    s.precision = "bf16";
    s.chips = 8;
    s.seq_in = 4096;
    s.batch = 8;
    s.tp = 1099511627776L;
    s.pp = 1;
    s.dp = 16777216L;
    err[0] = '\0';
    OK(tb_model_predict(&m, &s, &p, err, sizeof err) == -1 && strstr(err, "overflows"),
       "train: tp=2^40 pp=1 dp=2^24 refused as an overflow (%s)", err);
    s.phase = TB_PHASE_SERVE;
    s.pp = 0;
    s.seq_out = 128;
    err[0] = '\0';
    OK(tb_model_predict(&m, &s, &p, err, sizeof err) == -1 && strstr(err, "overflows"),
       "serve: tp=2^40 dp=2^24 refused as an overflow (%s)", err);
    s.phase = TB_PHASE_DENOISE;
    s.arch = NULL;
    s.darch = &da;
    err[0] = '\0';
    OK(tb_model_predict(&m, &s, &p, err, sizeof err) == -1 && strstr(err, "overflows"),
       "denoise: tp=2^40 dp=2^24 refused as an overflow (%s)", err);
    memset(&s, 0, sizeof s);
    s.arch = &a;
    s.inst = tb_pricing_instance(&pr, "p5.48xlarge");
    s.phase = TB_PHASE_SERVE;
    s.seq_in = 128;
    s.seq_out = 128;
    s.batch = 1;
    s.instances = LONG_MAX / 4;
    err[0] = '\0';
    OK(tb_model_predict(&m, &s, &p, err, sizeof err) == -1 && strstr(err, "overflows"),
       "instances x 8 chips past a long refused as an overflow (%s)", err);
    tb_model_release(&m);
    tb_pricing_release(&pr);
    free(dir);
}

/* Modeled run ids past TB_MODEL_RUN_ID_LEN - 1 characters: cut, with a hash of the
 * whole id, so that ids differing past the cut stay apart (issue 19 item 15). */
static void run_ids(void)
{
    char a[600], b[600], fa[TB_MODEL_RUN_ID_LEN], fb[TB_MODEL_RUN_ID_LEN], fs[TB_MODEL_RUN_ID_LEN];
    memset(a, 'x', sizeof a - 1);
    a[sizeof a - 1] = '\0';
    memcpy(b, a, sizeof a);
    b[400] = 'y';
    tb_run_id_fit(fa, sizeof fa, a);
    tb_run_id_fit(fb, sizeof fb, b);
    tb_run_id_fit(fs, sizeof fs, "model:p5.48xlarge/llama-3.1-8b/serve/b8/in2048/out128/bf16");
    IS_INT(TB_MODEL_RUN_ID_LEN - 1, (long long)strlen(fa), "a long id is fitted to %d characters",
           TB_MODEL_RUN_ID_LEN - 1);
    OK(strcmp(fa, fb) != 0, "two ids differing at character 400 stay apart once fitted");
    OK(fa[TB_MODEL_RUN_ID_LEN - 18] == '~' && !strncmp(fa, a, TB_MODEL_RUN_ID_LEN - 18),
       "the fitted id keeps the start and ends in '~' and 16 hex digits");
    IS_STRING("model:p5.48xlarge/llama-3.1-8b/serve/b8/in2048/out128/bf16", fs,
              "an id that fits is kept as it is");
}

/* Each table's rows, as tb_range_markdown writes them, are in docs/results.md. */
static void documented(void)
{
    char *path = test_src_path("docs/results.md"), *text = NULL, err[256];
    size_t len;
    if (tb_read_file(path, &text, &len, err, sizeof err) != 0)
        bail("%s", err);
    for (size_t i = 0; i < NTABLES; i++) {
        char md[8192], *line, *save = NULL;
        size_t missing = 0, rows = 0;
        tb_range_markdown(TABLES[i].table, md, sizeof md);
        for (line = strtok_r(md, "\n", &save); line; line = strtok_r(NULL, "\n", &save), rows++)
            if (!strstr(text, line)) {
                if (!missing++)
                    diag("docs/results.md lacks the row: %s", line);
            }
        OK(rows > 0 && missing == 0, "docs/results.md lists the %zu ranges of the %s (%zu missing)",
           rows, TABLES[i].format, missing);
    }
    free(text);
    free(path);
}

int main(void)
{
    /* TB_PRINT_RANGES=1: the tables as docs/results.md's "Input ranges" shows them, to paste */
    if (getenv("TB_PRINT_RANGES")) {
        for (size_t i = 0; i < NTABLES; i++) {
            char md[8192];
            tb_range_markdown(TABLES[i].table, md, sizeof md);
            printf("%s:\n\n| field | kind | from | to | what |\n| --- | --- | --- | --- | --- "
                   "|\n%s\n",
                   TABLES[i].format, md);
        }
        return 0;
    }
    plan(4 + 8 + 4 + 4 + (int)NTABLES);
    products();
    parsing();
    model_products();
    run_ids();
    documented();
    return 0;
}
