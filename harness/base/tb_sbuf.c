/* harness/base/tb_sbuf.c: see tb_sbuf.h. */
#include "tb_sbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_sb_putn(struct tb_sbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *p;
        while (cap < b->len + n + 1)
            cap *= 2;
        p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void tb_sb_puts(struct tb_sbuf *b, const char *s)
{
    tb_sb_putn(b, s, strlen(s));
}

void tb_sb_vprintf(struct tb_sbuf *b, const char *fmt, va_list ap)
{
    char small[512];
    va_list cp;
    int n;
    va_copy(cp, ap);
    n = vsnprintf(small, sizeof small, fmt, cp);
    va_end(cp);
    if (n < 0) {
        b->failed = true;
    } else if ((size_t)n < sizeof small) {
        tb_sb_putn(b, small, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1);
        if (!big) {
            b->failed = true;
            return;
        }
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        tb_sb_putn(b, big, (size_t)n);
        free(big);
    }
}

void tb_sb_printf(struct tb_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tb_sb_vprintf(b, fmt, ap);
    va_end(ap);
}

void tb_sb_release(struct tb_sbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
