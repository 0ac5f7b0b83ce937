/* tests/fuzz/server_request.c: trnbench serve's request bodies (tb_server_parse_request,
 * the parsing and checks of POST /v1/completions and /v1/chat/completions without a
 * socket): the first byte's low bit picks chat, the rest is the body, not
 * NUL-terminated. */
#include "fz.h"
#include "tb_server.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tb_server_opts o;
    char err[1024], *body;
    int *ids = NULL, n = 0;

    if (size < 1)
        return 0;
    memset(&o, 0, sizeof o);
    o.served_name = "llama-tiny";
    o.vocab = 32000;
    o.max_model_len = 4096;
    body = malloc(size - 1 ? size - 1 : 1); /* exact size: a read past it is caught */
    if (!body)
        fz_die("malloc", "out of memory");
    memcpy(body, data + 1, size - 1);
    if (fz_note(tb_server_parse_request(&o, data[0] & 1, body, size - 1, &ids, &n, err, sizeof err),
                err) == 0)
        for (int i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= o.vocab)
                abort(); /* a token id outside the vocabulary passed the checks */
    free(ids);
    free(body);
    return 0;
}
