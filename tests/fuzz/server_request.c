/* tests/fuzz/server_request.c: trnbench serve's request bodies (tb_server_parse_body,
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
    const char *param;
    char err[1024], *body;
    int n = 0;
    unsigned status;

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
    status = tb_server_parse_body(&o, body, size - 1, data[0] & 1, &n, &param, err, sizeof err);
    fz_note((int)status, err);
    if (status == 0 && (n < 1 || n > o.max_model_len))
        abort(); /* a prompt the checks should have refused passed them */
    free(body);
    return 0;
}
