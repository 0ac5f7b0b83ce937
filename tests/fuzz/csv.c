/* tests/fuzz/csv.c: the CSV reader every table goes through (tb_csv_parse), then every
 * cell looked up by its header name. */
#include "fz.h"
#include "tb_csv.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tb_csv_table t;
    char err[1024], *text = fz_strndup(data, size);
    if (fz_note(tb_csv_parse(&t, "fuzz.csv", text, size, err, sizeof err), err) == 0) {
        for (size_t r = 0; r < t.nrows; r++)
            for (size_t c = 0; c < t.ncols; c++)
                tb_csv_field(&t, r, t.header[c]);
        tb_csv_release(&t);
    }
    free(text);
    return 0;
}
