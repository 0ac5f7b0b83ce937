/* tests/unit/sse.c: the server-sent-events parser (tb_sse): a stream fed in two parts
 * split at every byte position, and byte by byte, gives the same events; LF, CRLF and
 * CR line ends; comments and other fields ignored; multi-line data joined by '\n'; an
 * event without data not passed on; a line or an event past the bound is an error; a
 * callback's return stops the feed. */
#include "tb_sse.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <string.h>

/* What the callback saw: the events joined by '|'. */
struct seen {
    char text[1024];
    size_t n;
    int stop_at; /* return 7 at this event (1-based); 0: never */
};

static int on_event(void *ctx, const char *data, size_t len)
{
    struct seen *s = ctx;
    size_t used = strlen(s->text);
    if (strlen(data) != len)
        return 99; /* not NUL-terminated at len */
    snprintf(s->text + used, sizeof s->text - used, "%s%s", s->n ? "|" : "", data);
    s->n++;
    return s->stop_at && (int)s->n == s->stop_at ? 7 : 0;
}

/* Feed text whole, split at every position, and byte by byte; every way must give
 * expect. Returns whether all did. */
static bool same_every_split(const char *text, const char *expect, size_t expect_n)
{
    size_t n = strlen(text);
    bool all = true;
    for (size_t cut = 0; cut <= n + 1; cut++) {
        struct tb_sse p;
        struct seen s = {{0}, 0, 0};
        int rc = 0;
        tb_sse_init(&p, 0);
        if (cut <= n) {
            rc = tb_sse_feed(&p, text, cut, on_event, &s);
            if (rc == 0)
                rc = tb_sse_feed(&p, text + cut, n - cut, on_event, &s);
        } else { /* byte by byte */
            for (size_t i = 0; i < n && rc == 0; i++)
                rc = tb_sse_feed(&p, text + i, 1, on_event, &s);
        }
        if (rc != 0 || strcmp(s.text, expect) != 0 || s.n != expect_n || p.events != expect_n) {
            diag("split at %zu: rc %d, %zu events '%s', expected %zu '%s'", cut, rc, s.n, s.text,
                 expect_n, expect);
            all = false;
        }
        tb_sse_release(&p);
    }
    return all;
}

int main(void)
{
    struct tb_sse p;
    struct seen s;
    char big[200];
    int rc;
    plan_lazy();

    OK(same_every_split("data: {\"a\":1}\n\ndata: [DONE]\n\n", "{\"a\":1}|[DONE]", 2),
       "two events, LF, every split");
    OK(same_every_split("data: x\r\n\r\ndata: y\r\n\r\n", "x|y", 2), "CRLF line ends");
    OK(same_every_split("data: x\r\rdata: y\r\r", "x|y", 2), "CR line ends");
    OK(same_every_split(": keep-alive\n\ndata: a\n: comment inside\n\n", "a", 1),
       "comments ignored, a comment-only event not passed on");
    OK(same_every_split("data: one\ndata: two\ndata:three\n\n", "one\ntwo\nthree", 1),
       "multi-line data joined by newlines, one leading space dropped");
    OK(same_every_split("event: message\nid: 4\nretry: 10\ndata: z\n\n", "z", 1),
       "other fields ignored");
    OK(same_every_split("data\n\ndata:\n\n", "|", 2), "a data field without value is empty");
    OK(same_every_split("data:  two spaces\n\n", " two spaces", 1), "only one space dropped");
    OK(same_every_split("data: unfinished\n", "", 0), "an event without its blank line waits");
    OK(same_every_split("\n\n\r\n", "", 0), "blank lines alone are no events");

    /* the bound on a line: a never-ending line fails without growing past it */
    tb_sse_init(&p, 64);
    memset(&s, 0, sizeof s);
    memset(big, 'x', sizeof big);
    rc = 0;
    for (int i = 0; i < 10 && rc == 0; i++)
        rc = tb_sse_feed(&p, big, 30, on_event, &s);
    IS_INT(-1, rc, "a line longer than the bound is an error");
    OK(strstr(p.err, "longer than 64 bytes") != NULL, "the error says why: '%s'", p.err);
    OK(p.line_cap <= 256, "the line buffer stayed at its first size (%zu bytes)", p.line_cap);
    tb_sse_release(&p);

    /* a line of exactly the bound is fine */
    tb_sse_init(&p, 64);
    memset(&s, 0, sizeof s);
    rc = tb_sse_feed(&p, "data: ", 6, on_event, &s);
    rc |= tb_sse_feed(&p, big, 58, on_event, &s);
    rc |= tb_sse_feed(&p, "\n\n", 2, on_event, &s);
    IS_INT(0, rc, "a line of exactly the bound is accepted");
    IS_INT(58, (long long)strlen(s.text), "and its data came through whole");
    tb_sse_release(&p);

    /* the bound on an event's data over many lines */
    tb_sse_init(&p, 64);
    memset(&s, 0, sizeof s);
    rc = 0;
    for (int i = 0; i < 10 && rc == 0; i++)
        rc = tb_sse_feed(&p, "data: 0123456789\n", 17, on_event, &s);
    IS_INT(-1, rc, "an event's data past the bound is an error");
    OK(strstr(p.err, "event's data") != NULL, "the error says why: '%s'", p.err);
    tb_sse_release(&p);

    /* the callback stops the feed with its own value */
    tb_sse_init(&p, 0);
    memset(&s, 0, sizeof s);
    s.stop_at = 1;
    rc = tb_sse_feed(&p, "data: a\n\ndata: b\n\n", 18, on_event, &s);
    IS_INT(7, rc, "the callback's return stops the feed");
    IS_STRING("a", s.text, "and the events after it were not passed on");
    tb_sse_release(&p);
    return 0;
}
