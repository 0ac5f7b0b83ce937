/* tests/fuzz/sse.c: server-sent event streams (tb_sse_feed): the first byte sets the
 * bound on a line and an event (64 + 16 x its value, so the limit is reached), the
 * second the size of the pieces the rest arrives in (1 + its value), as a network
 * would split it. */
#include "fz.h"
#include "tb_sse.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(void *ctx, const char *data, size_t len)
{
    size_t *bytes = ctx;
    /* the event's data is NUL-terminated at len: touch both ends */
    if (data[len] != '\0')
        abort();
    *bytes += len;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tb_sse p;
    size_t piece, bytes = 0;

    if (size < 2)
        return 0;
    tb_sse_init(&p, 64 + 16 * (size_t)data[0]);
    piece = 1 + (size_t)data[1];
    data += 2;
    size -= 2;
    for (size_t at = 0; at < size; at += piece) {
        size_t n = size - at < piece ? size - at : piece;
        char *chunk = malloc(n); /* exact size: a read past it is caught */
        int rc;
        if (!chunk)
            fz_die("malloc", "out of memory");
        memcpy(chunk, data + at, n);
        rc = tb_sse_feed(&p, chunk, n, on_event, &bytes);
        free(chunk);
        if (rc != 0)
            break;
    }
    tb_sse_release(&p);
    return 0;
}
