/* tests/fuzz/pricing_regions.c: pricing/regions.csv (tb_pricing_load_files beside the shipped
 * other tables), then every instance's price lookups. */
#include "fz_tables.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_pricing_table("regions.csv", data, size);
    return 0;
}
