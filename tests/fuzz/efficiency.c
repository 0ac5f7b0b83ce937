/* tests/fuzz/efficiency.c: pricing/efficiency.csv (tb_model_load over the shipped price
 * tables), then each chip's row looked up. */
#include "fz.h"
#include "tb_model.h"
#include "tb_pricing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct tb_pricing *p = fz_pricing();
    struct tb_model m;
    char err[1024];
    fz_write("efficiency.csv", data, size);
    if (fz_note(tb_model_load(&m, p, fz_dir(), err, sizeof err), err) == 0) {
        for (size_t i = 0; i < p->nchips; i++)
            tb_model_eff_of(&m, p->chips[i].chip);
        tb_model_release(&m);
    }
    return 0;
}
