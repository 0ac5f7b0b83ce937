/* tests/fuzz/arch.c: Llama model files (tb_arch_load), then the parameter counts the
 * model derives from what was read. */
#include "fz.h"
#include "tb_arch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tb_arch a;
    char err[1024];
    const char *path = fz_write("x.model", data, size);
    if (fz_note(tb_arch_load(&a, path, err, sizeof err), err) == 0) {
        volatile double sink =
            tb_arch_params_total(&a) + tb_arch_params_matmul(&a) + tb_arch_params_lora(&a, 16);
        (void)sink;
        if (a.layers > 1 && tb_arch_truncate(&a, 1, err, sizeof err) == 0)
            sink = tb_arch_params_total(&a);
    }
    return 0;
}
