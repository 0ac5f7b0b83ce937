/* tests/fuzz/common/fz_tables.c: see fz_tables.h. */
#include "fz_tables.h"
#include "fz.h"
#include "tb_arch.h"
#include "tb_csv.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_util.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const PURCHASES[] = {
    "on-demand",       "reserved-1y", "reserved-3y",    "savings-plan-1y",
    "savings-plan-3y", "spot",        "capacity-block", NULL};

void fz_pricing_table(const char *table, const uint8_t *data, size_t size)
{
    static const char *const names[] = {"chips.csv", "instances.csv", "prices.csv", "regions.csv"};
    char shipped[4][PATH_MAX], err[1024];
    const char *paths[4];
    struct tb_pricing p;

    for (int i = 0; i < 4; i++) {
        snprintf(shipped[i], sizeof shipped[i], "%s/pricing/%s", tb_datadir(), names[i]);
        paths[i] = strcmp(names[i], table) ? shipped[i] : fz_write(table, data, size);
    }
    if (fz_note(tb_pricing_load_files(&p, paths[0], paths[1], paths[2], paths[3], err, sizeof err),
                err) != 0)
        return;
    {
        const struct tb_instance *inst;
        size_t n = tb_pricing_instances(&p, &inst);
        for (size_t i = 0; i < n; i++)
            for (int k = 0; PURCHASES[k]; k++) {
                const struct tb_price *best;
                struct tb_price_choice c;
                char why[512];
                tb_pricing_best(&p, inst[i].instance, "us-east-1", PURCHASES[k], &best, why,
                                sizeof why);
                tb_pricing_target_price(&p, inst[i].instance, NULL, PURCHASES[k], &c, err,
                                        sizeof err);
            }
        for (size_t r = 0; r < p.nregions; r++)
            tb_pricing_check_choice(&p, p.regions[r].region, "spot", err, sizeof err);
    }
    tb_pricing_release(&p);
}

/* The scenarios that read storage.csv and compile.csv: a Llama served and trained on
 * a GPU and a Trainium instance. */
static void predict_some(const struct tb_model *m)
{
    static struct tb_arch arch;
    static int loaded;
    static const char *const targets[] = {"p5.48xlarge", "trn2.48xlarge", "g6e.xlarge", NULL};
    static const enum tb_phase phases[] = {TB_PHASE_SERVE, TB_PHASE_TRAIN};
    char err[1024];

    if (!loaded) {
        if (tb_arch_find(&arch, "llama-3.1-8b", err, sizeof err) != 0)
            fz_die("llama-3.1-8b", err);
        loaded = 1;
    }
    for (int t = 0; targets[t]; t++)
        for (size_t ph = 0; ph < sizeof phases / sizeof phases[0]; ph++) {
            struct tb_scenario sc;
            struct tb_prediction pr;
            memset(&sc, 0, sizeof sc);
            sc.arch = &arch;
            sc.inst = tb_pricing_instance(fz_pricing(), targets[t]);
            if (!sc.inst)
                fz_die(targets[t], "not in the shipped instances.csv");
            sc.phase = phases[ph];
            sc.precision = "bf16";
            sc.seq_in = 1024;
            sc.seq_out = 256;
            tb_model_predict(m, &sc, &pr, err, sizeof err);
        }
}

void fz_model_table(const char *table, const uint8_t *data, size_t size)
{
    static const char *const scols[] = {"instance", "path",   "read_mb_per_s", "status",
                                        "as_of",    "source", "notes",         NULL};
    static const char *const ccols[] = {"chip",  "model", "phases", "compile_s", "status",
                                        "stack", "as_of", "source", "notes",     NULL};
    struct tb_model *m = fz_model();
    char err[1024];

    if (!strcmp(table, "datasets.csv") || !strcmp(table, "mlperf_limits.csv")) {
        /* a copy of the model, so that the shared one keeps its shipped tables */
        struct tb_model copy = *m;
        char why[512];
        memset(&copy.datasets, 0, sizeof copy.datasets);
        memset(&copy.limits, 0, sizeof copy.limits);
        fz_remove(!strcmp(table, "datasets.csv") ? "mlperf_limits.csv" : "datasets.csv");
        fz_write(table, data, size);
        if (fz_note(tb_model_datasets_load(&copy, fz_dir(), err, sizeof err), err) == 0)
            for (size_t r = 0; r < copy.datasets.nrows; r++)
                tb_model_dataset_status(&copy, tb_csv_field(&copy.datasets, r, "name"), why,
                                        sizeof why);
        tb_csv_release(&copy.datasets);
        tb_csv_release(&copy.limits);
    } else {
        bool storage = !strcmp(table, "storage.csv");
        struct tb_csv_table t, saved = storage ? m->storage : m->compile;
        char *text = fz_strndup(data, size);
        if (fz_note(tb_csv_parse(&t, table, text, size, err, sizeof err), err) == 0) {
            if (tb_csv_require(&t, storage ? scols : ccols, err, sizeof err) == 0) {
                *(storage ? &m->storage : &m->compile) = t;
                predict_some(m);
                *(storage ? &m->storage : &m->compile) = saved;
            }
            tb_csv_release(&t);
        }
        free(text);
    }
}
