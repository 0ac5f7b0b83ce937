/*
 * harness/base/tb_utf8.h: text from a peer (an HTTP server's error message, a request's
 * model name) made safe to print, record in a CSV note or put in a JSON string.
 */
#ifndef TB_UTF8_H
#define TB_UTF8_H

#include <stddef.h>

/* In place: every byte that is not part of a whole, valid UTF-8 sequence (RFC 3629: no
 * overlong forms, no surrogates, nothing over U+10FFFF), and every control character
 * (below 0x20, and 0x7f), becomes '?'. A sequence cut by a truncating snprintf at the end
 * of s becomes '?' too. Returns how many bytes it replaced. */
size_t tb_utf8_scrub(char *s);

#endif
