/* harness/tb_doc.c: see tb_doc.h. */
#include "tb_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- growable text ---- */

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

void tb_sb_html(struct tb_sbuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            tb_sb_puts(b, "&amp;");
            break;
        case '<':
            tb_sb_puts(b, "&lt;");
            break;
        case '>':
            tb_sb_puts(b, "&gt;");
            break;
        case '"':
            tb_sb_puts(b, "&quot;");
            break;
        case '\'':
            tb_sb_puts(b, "&#39;");
            break;
        default:
            tb_sb_putn(b, s, 1);
        }
    }
}

/* Markdown table cells and text: no line breaks, no bare pipes, no raw HTML. */
void tb_sb_md(struct tb_sbuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '|':
            tb_sb_puts(b, "\\|");
            break;
        case '\\':
            tb_sb_puts(b, "\\\\");
            break;
        case '<':
            tb_sb_puts(b, "&lt;");
            break;
        case '*':
            tb_sb_puts(b, "\\*");
            break;
        case '_':
            tb_sb_puts(b, "\\_");
            break;
        case '\n':
        case '\r':
            tb_sb_puts(b, " ");
            break;
        default:
            tb_sb_putn(b, s, 1);
        }
    }
}

void tb_sb_release(struct tb_sbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- one writer for Markdown and HTML ---- */

void tb_doc_h(struct tb_doc *d, int level, const char *text)
{
    for (int i = 0; i < level; i++)
        tb_sb_puts(&d->md, "#");
    tb_sb_puts(&d->md, " ");
    tb_sb_md(&d->md, text);
    tb_sb_puts(&d->md, "\n\n");
    tb_sb_printf(&d->html, "<h%d>", level);
    tb_sb_html(&d->html, text);
    tb_sb_printf(&d->html, "</h%d>\n", level);
}

void tb_doc_p(struct tb_doc *d, const char *cls, const char *fmt, ...)
{
    struct tb_sbuf t = {0};
    va_list ap;
    va_start(ap, fmt);
    tb_sb_vprintf(&t, fmt, ap);
    va_end(ap);
    if (t.failed) {
        d->md.failed = d->html.failed = true;
        tb_sb_release(&t);
        return;
    }
    if (cls && !strcmp(cls, "note"))
        tb_sb_puts(&d->md, "> ");
    tb_sb_md(&d->md, t.p ? t.p : "");
    tb_sb_puts(&d->md, "\n\n");
    if (cls)
        tb_sb_printf(&d->html, "<p class=\"%s\">", cls);
    else
        tb_sb_puts(&d->html, "<p>");
    tb_sb_html(&d->html, t.p ? t.p : "");
    tb_sb_puts(&d->html, "</p>\n");
    tb_sb_release(&t);
}

void tb_doc_table(struct tb_doc *d, const char *kinds, const char *const *head)
{
    size_t n = strlen(kinds);
    d->kinds = kinds;
    tb_sb_puts(&d->md, "|");
    tb_sb_puts(&d->html, "<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr>");
    for (size_t i = 0; i < n; i++) {
        tb_sb_puts(&d->md, " ");
        tb_sb_md(&d->md, head[i]);
        tb_sb_puts(&d->md, " |");
        tb_sb_puts(&d->html, kinds[i] == 'n' ? "<th class=\"num\">" : "<th>");
        tb_sb_html(&d->html, head[i]);
        tb_sb_puts(&d->html, "</th>");
    }
    tb_sb_puts(&d->md, "\n|");
    for (size_t i = 0; i < n; i++)
        tb_sb_puts(&d->md, kinds[i] == 'n' ? "---:|" : "---|");
    tb_sb_puts(&d->md, "\n");
    tb_sb_puts(&d->html, "</tr></thead>\n<tbody>\n");
}

void tb_doc_row(struct tb_doc *d, const char *const *cells)
{
    tb_doc_row_tip(d, cells, NULL);
}

/* The provenance a cell's text starts with ("modeled, price [3]" -> "modeled"), or NULL. */
static const char *prov_word(const char *v)
{
    static const char *const words[] = {"measured", "modeled", "published"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i]);
        if (!strncmp(v, words[i], n) && (v[n] == '\0' || v[n] == ',' || v[n] == ' '))
            return words[i];
    }
    return NULL;
}

/* The opening of a cell: its class, and its tooltip when there is one. */
static void td_open(struct tb_sbuf *h, const char *cls, const char *tip)
{
    tb_sb_puts(h, "<td");
    if (cls) {
        tb_sb_puts(h, " class=\"");
        tb_sb_puts(h, cls);
        tb_sb_puts(h, "\"");
    }
    if (tip && *tip) {
        tb_sb_puts(h, " title=\"");
        tb_sb_html(h, tip);
        tb_sb_puts(h, "\"");
    }
    tb_sb_puts(h, ">");
}

void tb_doc_row_tip(struct tb_doc *d, const char *const *cells, const char *const *tips)
{
    size_t n = strlen(d->kinds);
    tb_sb_puts(&d->md, "|");
    tb_sb_puts(&d->html, "<tr>");
    for (size_t i = 0; i < n; i++) {
        const char *v = cells[i] ? cells[i] : "";
        const char *tip = tips ? tips[i] : NULL;
        char k = d->kinds[i];
        tb_sb_puts(&d->md, " ");
        if (k == 'c' && *v) {
            tb_sb_puts(&d->md, "`");
            for (const char *s = v; *s; s++)
                tb_sb_putn(&d->md, *s == '`' || *s == '|' ? "'" : s, 1);
            tb_sb_puts(&d->md, "`");
        } else {
            tb_sb_md(&d->md, v);
        }
        tb_sb_puts(&d->md, " |");
        if (k == 'n') {
            td_open(&d->html, tip && *tip ? "num tip" : "num", tip);
            tb_sb_html(&d->html, v);
        } else if (k == 'c' && *v) {
            td_open(&d->html, NULL, tip);
            tb_sb_puts(&d->html, "<code>");
            tb_sb_html(&d->html, v);
            tb_sb_puts(&d->html, "</code>");
        } else if (k == 'p' && prov_word(v)) {
            /* a provenance badge, styled by its first word */
            td_open(&d->html, NULL, tip);
            tb_sb_printf(&d->html, "<span class=\"prov prov-%s\">", prov_word(v));
            tb_sb_html(&d->html, v);
            tb_sb_puts(&d->html, "</span>");
        } else {
            td_open(&d->html, tip && *tip ? "tip" : NULL, tip);
            tb_sb_html(&d->html, v);
        }
        tb_sb_puts(&d->html, "</td>");
    }
    tb_sb_puts(&d->md, "\n");
    tb_sb_puts(&d->html, "</tr>\n");
}

void tb_doc_table_end(struct tb_doc *d)
{
    tb_sb_puts(&d->md, "\n");
    tb_sb_puts(&d->html, "</tbody></table></div>\n");
    d->kinds = NULL;
}

/* The SVG text as an inline element: no XML prolog, no namespace URLs (HTML does not
 * need them), ids prefixed per chart so two charts' patterns cannot collide. */
void tb_doc_inline_svg(struct tb_sbuf *b, const char *svg, int which, const char *title)
{
    const char *s = strstr(svg, "<svg");
    const char *tag_end;
    char prefix[16];
    snprintf(prefix, sizeof prefix, "c%d-", which);
    if (!s)
        return;
    tag_end = strchr(s, '>');
    if (!tag_end)
        return;
    /* the start tag, dropping xmlns attributes */
    for (const char *p = s; p < tag_end;) {
        if (!strncmp(p, "xmlns", 5)) {
            const char *q = strchr(p, '"');
            q = q && q < tag_end ? strchr(q + 1, '"') : NULL;
            if (q && q < tag_end) {
                p = q + 1;
                continue;
            }
        }
        tb_sb_putn(b, p, 1);
        p++;
    }
    tb_sb_puts(b, " class=\"chart\" role=\"img\" aria-label=\"");
    tb_sb_html(b, title);
    tb_sb_puts(b, "\">");
    for (const char *p = tag_end + 1; *p;) {
        static const char *const refs[] = {" id='", " id=\"", "url(#", "href='#", "href=\"#"};
        bool done = false;
        if (!strncmp(p, "<title>", 7)) {
            const char *q = strstr(p, "</title>");
            if (q) {
                tb_sb_puts(b, "<title>");
                tb_sb_html(b, title);
                tb_sb_puts(b, "</title>");
                p = q + 8;
                continue;
            }
        }
        for (size_t i = 0; i < sizeof refs / sizeof refs[0] && !done; i++) {
            size_t n = strlen(refs[i]);
            if (!strncmp(p, refs[i], n)) {
                tb_sb_putn(b, p, n);
                tb_sb_puts(b, prefix);
                p += n;
                done = true;
            }
        }
        if (!done) {
            tb_sb_putn(b, p, 1);
            p++;
        }
    }
    tb_sb_puts(b, "\n");
}
