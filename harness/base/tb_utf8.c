/* harness/base/tb_utf8.c: see tb_utf8.h. */
#include "tb_utf8.h"

/* The length of the valid UTF-8 sequence at p (1 to 4), or 0 when there is none. */
static size_t seq_len(const unsigned char *p)
{
    unsigned c = p[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (c < 0x80)
        return 1;
    if (c < 0xc2 || c > 0xf4)
        return 0; /* a continuation byte, an overlong lead, or past U+10FFFF */
    n = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    if (c == 0xe0)
        lo = 0xa0; /* overlong */
    else if (c == 0xed)
        hi = 0x9f; /* surrogates */
    else if (c == 0xf0)
        lo = 0x90; /* overlong */
    else if (c == 0xf4)
        hi = 0x8f; /* past U+10FFFF */
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0; /* a NUL ends the check here too */
    return n;
}

size_t tb_utf8_scrub(char *s)
{
    unsigned char *p = (unsigned char *)s;
    size_t bad = 0;
    while (*p) {
        size_t n = seq_len(p);
        if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7f))) {
            *p++ = '?';
            bad++;
        } else {
            p += n;
        }
    }
    return bad;
}
