/* tests/fuzz/suite.c: suite files (tb_suite_load) from the input as a .suite file. */
#include "fz.h"
#include "tb_suite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tb_suite s;
    char err[1024];
    const char *path = fz_write("x.suite", data, size);
    if (fz_note(tb_suite_load(&s, path, err, sizeof err), err) == 0)
        tb_suite_release(&s);
    return 0;
}
