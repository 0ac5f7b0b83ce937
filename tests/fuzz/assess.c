/* tests/fuzz/assess.c: assessment inputs (tb_assess_run over the shipped model and
 * prices), then the three outputs written to /dev/null. */
#include "fz.h"
#include "tb_assess.h"
#include "tb_util.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    struct tb_assessment as;
    struct tb_assess_opts o;
    char err[1024];
    const char *path = fz_write("assess.csv", data, size);

    if (!null && !(null = fopen("/dev/null", "w")))
        fz_die("/dev/null", "cannot open");
    tb_assess_opts_init(&o);
    if (tb_assess_run(&as, path, fz_model(), &o, err, sizeof err) == TB_OK) {
        tb_assess_write_csv(&as, null);
        tb_assess_write_md(&as, &o, null);
        tb_assess_write_html(&as, &o, null);
    }
    tb_assess_release(&as);
    return 0;
}
