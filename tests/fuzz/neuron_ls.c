/* tests/fuzz/neuron_ls.c: neuron-ls --json-output's text (tb_neuron_ls_parse), not
 * NUL-terminated, then the description of what was read. */
#include "fz.h"
#include "tb_neuron.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tb_neuron n;
    char err[1024], buf[2048];
    /* an exact-size copy, so that a read past the end is caught */
    char *text = malloc(size ? size : 1);
    if (!text)
        fz_die("malloc", "out of memory");
    if (size)
        memcpy(text, data, size);
    if (fz_note(tb_neuron_ls_parse(&n, text, size, err, sizeof err), err) == 0)
        tb_neuron_describe(&n, buf, sizeof buf);
    free(text);
    return 0;
}
