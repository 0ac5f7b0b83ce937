/* tests/fuzz/price_import.c: AWS price readings (tb_price_import_file): the first byte
 * picks the format (get-products, spot-price-history, capacity-block-offerings,
 * savings-plan-rates: its value mod 4), the rest is the JSON file; then the rows
 * merged into a prices.csv of the scratch folder (tb_price_import_write). */
#include "fz.h"
#include "tb_price_import.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tb_price_import im;
    char err[1024], buf[4096], out[PATH_MAX];
    const char *path;
    size_t added;
    int rc;

    if (size < 1)
        return 0;
    path = fz_write("prices.json", data + 1, size - 1);
    memset(&im, 0, sizeof im);
    rc = tb_price_import_file(&im, fz_pricing(),
                              (enum tb_price_format)(data[0] % TB_PRICES_NFORMATS), path,
                              "2026-01-01", err, sizeof err);
    fz_note(rc, err);
    if (rc == 0 && im.nrows) {
        snprintf(out, sizeof out, "%s/out", fz_dir());
        fz_remove("out/prices.csv");
        tb_price_import_write(&im, out, &added, err, sizeof err);
    }
    tb_price_import_skipped(&im, buf, sizeof buf);
    tb_price_import_release(&im);
    return 0;
}
