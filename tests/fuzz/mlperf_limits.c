/* tests/fuzz/mlperf_limits.c: workloads/mlperf_limits.csv (tb_model_datasets_load), then each
 * dataset's status. */
#include "fz_tables.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_model_table("mlperf_limits.csv", data, size);
    return 0;
}
