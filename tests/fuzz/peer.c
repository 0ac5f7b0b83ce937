/* tests/fuzz/peer.c: a peer's report on its stdout (tb_peer_parse). */
#include "fz.h"
#include "tb_peer.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tb_peer_output o;
    char err[1024];
    char *text = malloc(size ? size : 1); /* exact size: a read past it is caught */
    if (!text)
        fz_die("malloc", "out of memory");
    if (size)
        memcpy(text, data, size);
    if (fz_note(tb_peer_parse(&o, "peer output", text, size, err, sizeof err), err) == 0)
        tb_peer_output_release(&o);
    free(text);
    return 0;
}
