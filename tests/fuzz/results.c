/* tests/fuzz/results.c: results files (tb_results_load: results.csv, or a predict
 * output read as modeled rows), then every row's fields looked up. */
#include "fz.h"
#include "tb_results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tb_results res;
    char err[1024];
    const char *path = fz_write("results.csv", data, size);
    if (fz_note(tb_results_load(&res, &path, 1, err, sizeof err), err) == 0) {
        for (size_t i = 0; i < res.nrows; i++) {
            tb_result_field(&res.rows[i], "metric");
            tb_result_line(&res.rows[i]);
        }
        tb_results_release(&res);
    }
    return 0;
}
