/* tests/fuzz/assess.c: assessment inputs (tb_assess_run), then the three outputs
 * written to /dev/null. To keep an input's assessment in milliseconds, the catalogue
 * is cut to five instance types (a Trainium, an Inferentia and the NVIDIA ones the
 * examples name, with their prices) and the model's error per family comes from the first rows of
 * reports/validation/published.csv: the reader and the checks are the same. */
#include "fz.h"
#include "tb_assess.h"
#include "tb_csv.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_util.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const KEEP[] = {"trn2.48xlarge", "inf2.xlarge",  "p5.48xlarge",
                                   "p5.4xlarge",    "p4d.24xlarge", NULL};

/* Copy the shipped table rel (under the data folder) to the scratch folder's name,
 * keeping its first max_rows rows, or (max_rows 0) those whose column col is in KEEP. */
static const char *cut(const char *rel, const char *name, const char *col, size_t max_rows)
{
    static char out[8][PATH_MAX];
    static int next;
    char in[PATH_MAX], err[1024], *path = out[next++ % 8];
    struct tb_csv_table t;
    FILE *f;

    snprintf(in, sizeof in, "%s/%s", tb_datadir(), rel);
    snprintf(path, PATH_MAX, "%s/%s", fz_dir(), name);
    if (tb_csv_load(&t, in, err, sizeof err) != 0)
        fz_die(in, err);
    if (!(f = fopen(path, "w")))
        fz_die(path, "cannot write");
    for (size_t c = 0; c < t.ncols; c++)
        tb_csv_put(f, t.header[c], c + 1 < t.ncols ? ',' : '\n');
    for (size_t r = 0; r < t.nrows; r++) {
        bool keep = max_rows ? r < max_rows : false;
        for (int k = 0; !max_rows && KEEP[k]; k++)
            keep |= !strcmp(tb_csv_field(&t, r, col), KEEP[k]);
        for (size_t c = 0; keep && c < t.ncols; c++)
            tb_csv_put(f, tb_csv_get(&t, r, (int)c), c + 1 < t.ncols ? ',' : '\n');
    }
    if (fclose(f) != 0)
        fz_die(path, "cannot write");
    tb_csv_release(&t);
    return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    static struct tb_pricing p;
    static struct tb_model m;
    static const char *validation;
    struct tb_assessment as;
    struct tb_assess_opts o;
    char err[1024];
    const char *path;

    if (!null) {
        char chips[PATH_MAX], regions[PATH_MAX];
        const char *inst = cut("pricing/instances.csv", "instances.csv", "instance", 0);
        const char *prices = cut("pricing/prices.csv", "prices.csv", "instance", 0);
        snprintf(chips, sizeof chips, "%s/pricing/chips.csv", tb_datadir());
        snprintf(regions, sizeof regions, "%s/pricing/regions.csv", tb_datadir());
        if (fz_note(tb_pricing_load_files(&p, chips, inst, prices, regions, err, sizeof err),
                    err) != 0)
            fz_die("the cut catalogue", err);
        if (fz_note(tb_model_load(&m, &p, NULL, err, sizeof err), err) != 0)
            fz_die("the model over the cut catalogue", err);
        validation = cut("reports/validation/published.csv", "published.csv", NULL, 12);
        if (!(null = fopen("/dev/null", "w")))
            fz_die("/dev/null", "cannot open");
    }
    path = fz_write("assess.csv", data, size);
    tb_assess_opts_init(&o);
    o.validation = validation;
    if (fz_note(tb_assess_run(&as, path, &m, &o, err, sizeof err), err) == TB_OK) {
        tb_assess_write_csv(&as, null);
        tb_assess_write_md(&as, &o, null);
        tb_assess_write_html(&as, &o, null);
    }
    tb_assess_release(&as);
    return 0;
}
