/* tests/fuzz/datasets.c: workloads/datasets.csv (tb_model_datasets_load), then each dataset's
 * status. */
#include "fz_tables.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_model_table("datasets.csv", data, size);
    return 0;
}
