/*
 * harness/base/tb_sbuf.h: growable text, appended to (as git's strbuf, SQLite's
 * StrAccum); the report's Markdown and HTML escapes sit above it (report/tb_doc.h).
 *
 * Ownership: a tb_sbuf owns its text; tb_sb_release frees it. An allocation failure
 * sets `failed` and later appends are ignored, so callers check once at the end.
 */
#ifndef TB_SBUF_H
#define TB_SBUF_H

#include "tb_util.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Growable text. Zero-initialise. */
struct tb_sbuf {
    char *p; /* owned, NUL-terminated once anything was added */
    size_t len;
    size_t cap;
    bool failed; /* an allocation failed: the text is incomplete */
};

void tb_sb_putn(struct tb_sbuf *b, const char *s, size_t n);
void tb_sb_puts(struct tb_sbuf *b, const char *s);
void tb_sb_vprintf(struct tb_sbuf *b, const char *fmt, va_list ap);
void tb_sb_printf(struct tb_sbuf *b, const char *fmt, ...) TB_PRINTF(2, 3);
void tb_sb_release(struct tb_sbuf *b);

#endif
