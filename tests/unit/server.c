/* tests/unit/server.c: the server's request-body check without a socket
 * (tb_server_parse_body): good completions and chats, and bodies a hostile client sends
 * (not JSON, invalid UTF-8, wrong types, numbers out of range, a prompt over the model
 * length, a body not NUL-terminated), each refused with its status, field and reason;
 * and tb_utf8_scrub, which keeps error messages valid UTF-8. */
#include "tb_server.h"
#include "tb_utf8.h"

#include "tests/tap/basic.h"

#include <stdlib.h>
#include <string.h>

static const struct tb_server_opts OPTS = {
    .served_name = "tiny", .vocab = 256, .max_model_len = 64};

/* Check body (as a completion, or a chat when chat): status, tokens when 0, else the
 * field and a piece of the message. */
static void check(const char *body, bool chat, unsigned status, int tokens, const char *param,
                  const char *says)
{
    char err[512] = "";
    const char *p = "unset";
    int n = -1;
    unsigned st = tb_server_parse_body(&OPTS, body, strlen(body), chat, &n, &p, err, sizeof err);
    IS_INT(status, st, "%.60s: status %u (%s)", body, status, err);
    if (status == 0) {
        IS_INT(tokens, n, "%.60s: %d prompt tokens", body, tokens);
        return;
    }
    OK(param ? p && !strcmp(p, param) : p == NULL, "%.60s: param %s (got %s)", body,
       param ? param : "null", p ? p : "null");
    OK(strstr(err, says) != NULL, "%.60s: the message says '%s' ('%s')", body, says, err);
}

static void test_bodies(void)
{
    char *big;
    size_t i;

    check("{\"prompt\":[1,2,3],\"max_tokens\":4}", false, 0, 3, NULL, NULL);
    check("{\"prompt\":\"one two  three\"}", false, 0, 3, NULL, NULL);
    check("{\"messages\":[{\"role\":\"user\",\"content\":\"a b\"}],\"max_tokens\":2}", true, 0, 2,
          NULL, NULL);
    check("{\"prompt\":[1,", false, 400, 0, NULL, "not JSON");
    check("{\"prompt\":\"a\xff\"}", false, 400, 0, NULL, "invalid UTF-8");
    check("{\"prompt\":\"\\ud800\"}", false, 400, 0, NULL, "invalid Unicode");
    check("{\"prompt\":\"a\\u0000b\"}", false, 400, 0, NULL, "not JSON");
    check("{\"prompt\":[1],\"max_tokens\":1e999}", false, 400, 0, NULL, "overflow");
    check("{\"prompt\":[1],\"max_tokens\":4294967297}", false, 400, 0, "max_tokens",
          "outside [1, 64]");
    check("{\"prompt\":[1],\"max_tokens\":\"4\"}", false, 400, 0, "max_tokens", "an integer");
    check("{\"prompt\":[1],\"stream\":1}", false, 400, 0, "stream", "true or false");
    check("{\"prompt\":[256]}", false, 400, 0, "prompt", "outside the vocabulary");
    check("{\"prompt\":[1.5]}", false, 400, 0, "prompt", "not a token id");
    check("[1]", false, 400, 0, NULL, "a JSON object");
    check("{\"model\":\"other\",\"prompt\":[1]}", false, 404, 0, "model", "does not exist");
    check("{\"messages\":[]}", true, 400, 0, "messages", "non-empty list");
    check("{\"messages\":[7]}", true, 400, 0, "messages", "not an object");
    check("{\"prompt\":[1,2,3],\"max_tokens\":62}", false, 400, 0, "max_tokens",
          "over the maximum model length");

    /* a prompt of 65 ids, and of 100000 words: refused before its ids are allocated */
    big = malloc(400000);
    strcpy(big, "{\"prompt\":[");
    for (i = 0; i < 65; i++)
        strcat(big, i ? ",1" : "1");
    strcat(big, "]}");
    check(big, false, 400, 0, "prompt", "65 tokens, over the maximum model length 64");
    strcpy(big, "{\"prompt\":\"");
    for (i = 0; i < 100000; i++)
        strcat(big + 11 + 2 * i, "a ");
    strcat(big, "\"}");
    check(big, false, 400, 0, "prompt", "over 64 tokens");
    free(big);

    /* len bytes, not up to a NUL: the rest of the buffer is not read */
    {
        const char buf[] = "{\"prompt\":[1,2]}garbage";
        const char *p;
        char err[256];
        int n = 0;
        IS_INT(0, tb_server_parse_body(&OPTS, buf, 16, false, &n, &p, err, sizeof err),
               "a body of 16 bytes in a longer buffer: ok (%s)", err);
        IS_INT(2, n, "  with its 2 tokens");
    }
}

static void test_scrub(void)
{
    char s1[] = "caf\xc3\xa9 ok";
    char s2[] = "a\xff"
                "b\xc3";                        /* a stray byte, a sequence cut at the end */
    char s3[] = "\xed\xa0\x80|\xc0\xaf|\x7f\n"; /* a surrogate, an overlong '/', controls */
    char s4[] = "\xf0\x9f\x98\x80 \xf4\x90\x80\x80";
    IS_INT(0, (long long)tb_utf8_scrub(s1), "valid UTF-8 kept");
    IS_STRING("caf\xc3\xa9 ok", s1, "  unchanged");
    IS_INT(2, (long long)tb_utf8_scrub(s2), "a stray byte and a cut sequence replaced");
    IS_STRING("a?b?", s2, "  by '?'");
    IS_INT(7, (long long)tb_utf8_scrub(s3), "a surrogate, an overlong form, DEL and LF replaced");
    IS_STRING("???|??|??", s3, "  byte by byte");
    IS_INT(4, (long long)tb_utf8_scrub(s4), "U+1F600 kept, past U+10FFFF replaced");
    IS_STRING("\xf0\x9f\x98\x80 ????", s4, "  byte by byte");
}

int main(void)
{
    plan_lazy();
    test_bodies();
    test_scrub();
    return 0;
}
