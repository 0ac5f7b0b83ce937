/* tests/fuzz/scenario.c: scenario tables: the input read as CSV (tb_csv_parse), each
 * row parsed into the model's question (tb_scenario_parse) over the shipped model.
 * The prediction itself is not run here (see README.md). */
#include "fz.h"
#include "tb_csv.h"
#include "tb_scenario.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct row {
    const struct tb_csv_table *t;
    size_t r;
};

static const char *get(const void *ctx, const char *name)
{
    const struct row *x = ctx;
    int c = tb_csv_col(x->t, name);
    return c < 0 ? NULL : tb_csv_get(x->t, x->r, c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct tb_model *m = fz_model();
    struct tb_csv_table t;
    char err[1024], *text = fz_strndup(data, size);

    if (fz_note(tb_csv_parse(&t, "scenarios.csv", text, size, err, sizeof err), err) == 0) {
        for (size_t r = 0; r < t.nrows; r++) {
            struct row x = {&t, r};
            struct tb_scenario_in in;
            static struct tb_scenario_result res;
            fz_note(tb_scenario_parse(get, &x, m, &in, &res), res.why);
        }
        tb_csv_release(&t);
    }
    free(text);
    return 0;
}
