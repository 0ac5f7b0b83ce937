/* tests/fuzz/compile.c: pricing/compile.csv (read at prediction time), then predictions that read
 * it. */
#include "fz_tables.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_model_table("compile.csv", data, size);
    return 0;
}
