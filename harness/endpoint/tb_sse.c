/* harness/endpoint/tb_sse.c: see tb_sse.h. Bytes are scanned for the next line end and
 * copied once into the line buffer; a whole line is then interpreted in place. */
#include "tb_sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_sse_init(struct tb_sse *p, size_t max_bytes)
{
    memset(p, 0, sizeof *p);
    p->max_bytes = max_bytes ? max_bytes : TB_SSE_MAX_BYTES;
}

void tb_sse_release(struct tb_sse *p)
{
    free(p->line);
    free(p->data);
    tb_sse_init(p, p->max_bytes);
}

/* Make room for need bytes (plus a NUL) in *buf. */
static int reserve(char **buf, size_t *cap, size_t need)
{
    size_t c = *cap ? *cap : 256;
    char *q;
    if (need + 1 <= *cap)
        return 0;
    while (c < need + 1)
        c *= 2;
    q = realloc(*buf, c);
    if (!q)
        return -1;
    *buf = q;
    *cap = c;
    return 0;
}

/* One whole line (without its end): a field, a comment, or the blank line that ends
 * an event. */
static int take_line(struct tb_sse *p, tb_sse_event_fn fn, void *ctx)
{
    const char *line = p->line, *value;
    size_t len = p->line_len, name_len, value_len;
    const char *colon;

    if (len == 0) {
        int rc = 0;
        if (p->has_data) {
            size_t dlen = p->data_len;
            if (dlen && p->data[dlen - 1] == '\n')
                dlen--;
            if (reserve(&p->data, &p->data_cap, dlen) != 0)
                goto oom;
            p->data[dlen] = '\0';
            p->events++;
            rc = fn(ctx, p->data, dlen);
        }
        p->data_len = 0;
        p->has_data = false;
        return rc;
    }
    if (line[0] == ':')
        return 0; /* a comment (a keep-alive) */
    colon = memchr(line, ':', len);
    name_len = colon ? (size_t)(colon - line) : len;
    if (name_len != 4 || memcmp(line, "data", 4) != 0)
        return 0; /* event, id, retry and unknown fields: nothing we need */
    value = colon ? colon + 1 : line + len;
    value_len = (size_t)(line + len - value);
    if (value_len && *value == ' ') {
        value++;
        value_len--;
    }
    if (p->data_len + value_len + 1 > p->max_bytes) {
        snprintf(p->err, sizeof p->err, "an event's data longer than %zu bytes", p->max_bytes);
        return -1;
    }
    if (reserve(&p->data, &p->data_cap, p->data_len + value_len + 1) != 0)
        goto oom;
    memcpy(p->data + p->data_len, value, value_len);
    p->data_len += value_len;
    p->data[p->data_len++] = '\n';
    p->has_data = true;
    return 0;
oom:
    snprintf(p->err, sizeof p->err, "out of memory for an event");
    return -1;
}

int tb_sse_feed(struct tb_sse *p, const char *buf, size_t n, tb_sse_event_fn fn, void *ctx)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        int rc;
        if (p->after_cr) {
            p->after_cr = false;
            if (buf[i] == '\n') { /* the LF of a CRLF */
                i++;
                continue;
            }
        }
        while (j < n && buf[j] != '\n' && buf[j] != '\r')
            j++;
        if (p->line_len + (j - i) > p->max_bytes) {
            snprintf(p->err, sizeof p->err, "a line longer than %zu bytes", p->max_bytes);
            return -1;
        }
        if (j > i) {
            if (reserve(&p->line, &p->line_cap, p->line_len + (j - i)) != 0) {
                snprintf(p->err, sizeof p->err, "out of memory for a line");
                return -1;
            }
            memcpy(p->line + p->line_len, buf + i, j - i);
            p->line_len += j - i;
        }
        if (j == n)
            break; /* the line goes on in the next bytes */
        p->after_cr = buf[j] == '\r';
        i = j + 1;
        rc = take_line(p, fn, ctx);
        p->line_len = 0;
        if (rc != 0)
            return rc;
    }
    return 0;
}
