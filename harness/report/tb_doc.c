/* harness/report/tb_doc.c: see tb_doc.h. */
#include "tb_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- escapes ---- */

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
        /* no raw HTML: a tag cannot open, an entity ("&lt;") stays the text it is */
        case '<':
            tb_sb_puts(b, "&lt;");
            break;
        case '>':
            tb_sb_puts(b, "&gt;");
            break;
        case '&':
            tb_sb_puts(b, "&amp;");
            break;
        /* no link, image, code span or strike-through made of input text */
        case '[':
        case ']':
        case '`':
        case '~':
            tb_sb_putn(b, "\\", 1);
            tb_sb_putn(b, s, 1);
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

/* s as tb_sb_md writes it, at the start of a paragraph or list item, where a leading
 * '#', '-', '+', '=' or "1." / "1)" would make it a heading, a list or a rule. */
static void md_block_start(struct tb_sbuf *b, const char *s)
{
    size_t n = strspn(s, "0123456789");
    if (n > 0 && n < 10 && (s[n] == '.' || s[n] == ')')) {
        tb_sb_putn(b, s, n);
        tb_sb_puts(b, "\\");
        s += n;
    } else if (*s && strchr("#-+=", *s)) {
        tb_sb_puts(b, "\\");
    }
    tb_sb_md(b, s);
}

/* Markdown code text: a code span cannot hold its own delimiter, and a pipe would end a
 * table cell, so both become "'" (as in code cells). */
static void md_code(struct tb_sbuf *b, const char *s)
{
    tb_sb_puts(b, "`");
    for (; *s; s++)
        tb_sb_putn(b, *s == '`' || *s == '|' ? "'" : s, 1);
    tb_sb_puts(b, "`");
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
    md_block_start(&d->md, t.p ? t.p : "");
    tb_sb_puts(&d->md, "\n\n");
    if (cls)
        tb_sb_printf(&d->html, "<p class=\"%s\">", cls);
    else
        tb_sb_puts(&d->html, "<p>");
    tb_sb_html(&d->html, t.p ? t.p : "");
    tb_sb_puts(&d->html, "</p>\n");
    tb_sb_release(&t);
}

/* A wrapping number column ('r') is right-aligned like a number but, cells and heading,
 * may wrap at spaces ("-15816 to" / "16242"), so that a table of wide figures leaves room
 * for its text columns. An inline style, not a class: it then needs no rule in the
 * stylesheet of whatever page the table lands in. */
#define WRAP "white-space:normal"

void tb_doc_table(struct tb_doc *d, const char *kinds, const char *const *head)
{
    size_t n = strlen(kinds);
    d->kinds = kinds;
    for (int i = 0; i < d->folds && i < TB_DOC_MAX_FOLDS; i++)
        d->fold[i].tables++;
    tb_sb_puts(&d->md, "|");
    tb_sb_puts(&d->html, "<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr>");
    for (size_t i = 0; i < n; i++) {
        tb_sb_puts(&d->md, " ");
        tb_sb_md(&d->md, head[i]);
        tb_sb_puts(&d->md, " |");
        tb_sb_puts(&d->html, kinds[i] == 'n'   ? "<th class=\"num\">"
                             : kinds[i] == 'r' ? "<th class=\"num\" style=\"" WRAP "\">"
                                               : "<th>");
        tb_sb_html(&d->html, head[i]);
        tb_sb_puts(&d->html, "</th>");
    }
    tb_sb_puts(&d->md, "\n|");
    for (size_t i = 0; i < n; i++)
        tb_sb_puts(&d->md, kinds[i] == 'n' || kinds[i] == 'r' ? "---:|" : "---|");
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

/* The opening of a cell: its class and style, the columns it spans (when more than one),
 * and its tooltip when there is one. */
static void td_open(struct tb_sbuf *h, const char *cls, const char *style, int span,
                    const char *tip)
{
    tb_sb_puts(h, "<td");
    if (cls) {
        tb_sb_puts(h, " class=\"");
        tb_sb_puts(h, cls);
        tb_sb_puts(h, "\"");
    }
    if (style) {
        tb_sb_puts(h, " style=\"");
        tb_sb_puts(h, style);
        tb_sb_puts(h, "\"");
    }
    if (span > 1)
        tb_sb_printf(h, " colspan=\"%d\"", span);
    if (tip && *tip) {
        tb_sb_puts(h, " title=\"");
        tb_sb_html(h, tip);
        tb_sb_puts(h, "\"");
    }
    tb_sb_puts(h, ">");
}

/* A text cell longer than this many bytes (with a space in it) is prose: class "long". */
#define LONG_CELL 48

/* One cell of kind k spanning span columns. Markdown has no spans: the columns before
 * the last are written empty and the text goes in the last. */
static void put_cell(struct tb_doc *d, char k, const char *v, const char *tip, int span)
{
    for (int i = 1; i < span; i++)
        tb_sb_puts(&d->md, " |");
    tb_sb_puts(&d->md, " ");
    if (k == 'c' && *v)
        md_code(&d->md, v);
    else
        tb_sb_md(&d->md, v);
    tb_sb_puts(&d->md, " |");
    if (k == 'n' || k == 'r') {
        td_open(&d->html, tip && *tip ? "num tip" : "num", k == 'r' ? WRAP : NULL, span, tip);
        tb_sb_html(&d->html, v);
    } else if (k == 'c' && *v) {
        td_open(&d->html, "code", NULL, span, tip);
        tb_sb_puts(&d->html, "<code>");
        tb_sb_html(&d->html, v);
        tb_sb_puts(&d->html, "</code>");
    } else if (k == 'p' && prov_word(v)) {
        /* a provenance badge, styled by its first word */
        td_open(&d->html, NULL, NULL, span, tip);
        tb_sb_printf(&d->html, "<span class=\"prov prov-%s\">", prov_word(v));
        tb_sb_html(&d->html, v);
        tb_sb_puts(&d->html, "</span>");
    } else {
        /* prose (a reason, a source) gets a column wide enough to read as lines of words */
        bool prose = strlen(v) > LONG_CELL && strchr(v, ' ');
        bool tipped = tip && *tip;
        td_open(&d->html,
                tipped && prose ? "tip long"
                : tipped        ? "tip"
                : prose         ? "long"
                                : NULL,
                NULL, span, tip);
        tb_sb_html(&d->html, v);
    }
    tb_sb_puts(&d->html, "</td>");
}

void tb_doc_row_tip(struct tb_doc *d, const char *const *cells, const char *const *tips)
{
    tb_doc_row_span(d, cells, tips, NULL);
}

void tb_doc_row_span(struct tb_doc *d, const char *const *cells, const char *const *tips,
                     const int *span)
{
    size_t n = strlen(d->kinds);
    for (int i = 0; i < d->folds && i < TB_DOC_MAX_FOLDS; i++)
        d->fold[i].rows++;
    tb_sb_puts(&d->md, "|");
    tb_sb_puts(&d->html, "<tr>");
    for (size_t col = 0, i = 0; col < n; i++) {
        int w = span && span[i] > 1 ? span[i] : 1;
        TB_ASSERT(col + (size_t)w <= n);
        col += (size_t)w;
        put_cell(d, d->kinds[col - 1], cells[i] ? cells[i] : "", tips ? tips[i] : NULL, w);
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

/* ---- pieces: paragraphs written in parts, lists ---- */

void tb_doc_p_begin(struct tb_doc *d, const char *cls)
{
    if (cls && !strcmp(cls, "note"))
        tb_sb_puts(&d->md, "> ");
    d->md_at_start = true;
    if (cls)
        tb_sb_printf(&d->html, "<p class=\"%s\">", cls);
    else
        tb_sb_puts(&d->html, "<p>");
}

void tb_doc_p_end(struct tb_doc *d)
{
    tb_sb_puts(&d->md, "\n\n");
    tb_sb_puts(&d->html, "</p>\n");
}

void tb_doc_text(struct tb_doc *d, const char *fmt, ...)
{
    struct tb_sbuf t = {0};
    va_list ap;
    va_start(ap, fmt);
    tb_sb_vprintf(&t, fmt, ap);
    va_end(ap);
    if (t.failed) {
        d->md.failed = d->html.failed = true;
    } else if (t.p) {
        if (d->md_at_start)
            md_block_start(&d->md, t.p);
        else
            tb_sb_md(&d->md, t.p);
        tb_sb_html(&d->html, t.p);
        d->md_at_start = d->md_at_start && !*t.p;
    }
    tb_sb_release(&t);
}

void tb_doc_code(struct tb_doc *d, const char *text)
{
    d->md_at_start = false;
    md_code(&d->md, text);
    tb_sb_puts(&d->html, "<code>");
    tb_sb_html(&d->html, text);
    tb_sb_puts(&d->html, "</code>");
}

void tb_doc_strong(struct tb_doc *d, const char *text)
{
    d->md_at_start = false;
    tb_sb_puts(&d->md, "**");
    tb_sb_md(&d->md, text);
    tb_sb_puts(&d->md, "**");
    tb_sb_puts(&d->html, "<strong>");
    tb_sb_html(&d->html, text);
    tb_sb_puts(&d->html, "</strong>");
}

void tb_doc_list_begin(struct tb_doc *d)
{
    /* a nested list starts on the line after its item's own text */
    if (d->item_line_open)
        tb_sb_puts(&d->md, "\n");
    d->item_line_open = false;
    d->list_depth++;
    tb_sb_puts(&d->html, "<ul>\n");
}

void tb_doc_item_begin(struct tb_doc *d)
{
    for (int i = 1; i < d->list_depth; i++)
        tb_sb_puts(&d->md, "  ");
    tb_sb_puts(&d->md, "- ");
    d->item_line_open = true;
    d->md_at_start = true;
    tb_sb_puts(&d->html, "<li>");
}

void tb_doc_item_end(struct tb_doc *d)
{
    if (d->item_line_open)
        tb_sb_puts(&d->md, "\n");
    d->item_line_open = false;
    tb_sb_puts(&d->html, "</li>\n");
}

void tb_doc_list_end(struct tb_doc *d)
{
    if (d->list_depth > 0)
        d->list_depth--;
    if (d->list_depth == 0)
        tb_sb_puts(&d->md, "\n");
    tb_sb_puts(&d->html, "</ul>\n");
}

/* ---- folds ---- */

/* Insert s at byte pos of b (pos <= b->len). */
static void sb_insert(struct tb_sbuf *b, size_t pos, const char *s)
{
    size_t n = strlen(s), tail;
    tb_sb_putn(b, s, n); /* room for it, at the end */
    if (b->failed)
        return;
    tail = b->len - n - pos;
    memmove(b->p + pos + n, b->p + pos, tail);
    memcpy(b->p + pos, s, n);
}

void tb_doc_fold_begin(struct tb_doc *d, const char *title)
{
    int i = d->folds++;
    if (i >= TB_DOC_MAX_FOLDS)
        return;
    tb_sb_puts(&d->html, "<details class=\"fold\"><summary>");
    tb_sb_html(&d->html, title);
    d->fold[i].at = d->html.len;
    d->fold[i].rows = d->fold[i].tables = 0;
    tb_sb_puts(&d->html, "</summary>\n");
}

void tb_doc_fold_end(struct tb_doc *d)
{
    char count[96] = "";
    int i;
    TB_ASSERT(d->folds > 0);
    i = --d->folds;
    if (i >= TB_DOC_MAX_FOLDS)
        return;
    if (d->fold[i].tables > 1)
        snprintf(count, sizeof count, " (%zu row%s in %zu tables)", d->fold[i].rows,
                 d->fold[i].rows == 1 ? "" : "s", d->fold[i].tables);
    else if (d->fold[i].tables == 1)
        snprintf(count, sizeof count, " (%zu row%s)", d->fold[i].rows,
                 d->fold[i].rows == 1 ? "" : "s");
    if (*count && d->fold[i].at <= d->html.len)
        sb_insert(&d->html, d->fold[i].at, count);
    tb_sb_puts(&d->html, "</details>\n");
}

/* ---- the HTML page ---- */

/* The narrowest a chart is drawn, in CSS pixels, on a screen narrower than that it
 * scrolls sideways in its wrapper (.chart-scroll). The charts are 800 user units wide and
 * their smallest text is 10 (a point's label; tick labels 11), so at 740 pixels that text
 * is 9.25 pixels tall: legible on a phone, where a chart scaled to the screen's 370
 * pixels had text of 4.6. */
#define CHART_MIN_PX "740"

/* The report's stylesheet. Tables scroll sideways inside their wrapper (.scroll) with the
 * first column held in place (sticky; borders on the cells' right and bottom, since a
 * collapsed border would not move with a sticky cell); no column is narrower than 8
 * characters of its text (min-width in ch of the cell's content box: Chrome otherwise
 * squeezes a column of long text, which break-word lets it break anywhere, to a letter a
 * line), and a cell of prose ("long") at least 24 (18 on a phone), so that it reads as
 * lines of words; code wraps anywhere; charts scale to the width down to CHART_MIN_PX,
 * then scroll sideways in their own wrapper; folds (tb_doc_fold_begin) are boxes with a
 * summary line; phones get smaller type and padding, and a first column of at most 9rem
 * (it wraps anywhere) so that the columns scrolling beside it keep most of the screen. */
static const char PAGE_CSS[] =
    ":root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--head:#f6f8fa;--bg:#fff}"
    "*{box-sizing:border-box}"
    "html{-webkit-text-size-adjust:100%;text-size-adjust:100%}"
    "body{margin:0 auto;max-width:75rem;padding:1rem 1.25rem;color:var(--fg);background:var(--bg);"
    "font:16px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif}"
    "h1{font-size:1.6rem;margin:.5rem 0 1rem}"
    "h2{font-size:1.25rem;margin:2rem 0 .75rem;padding-bottom:.25rem;"
    "border-bottom:1px solid var(--line)}"
    "h1,h2,h3,p,li,summary,figcaption{overflow-wrap:break-word}"
    ".scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;max-width:100%;margin:.5rem 0 1rem}"
    "table{border-collapse:separate;border-spacing:0;font-size:.9rem;"
    "border-top:1px solid var(--line);border-left:1px solid var(--line)}"
    "th,td{border:0;border-right:1px solid var(--line);border-bottom:1px solid var(--line);"
    "padding:.3rem .55rem;text-align:left;vertical-align:top;overflow-wrap:break-word;"
    "box-sizing:content-box;min-width:8ch}"
    "td.long{min-width:24ch}"
    "th{background:var(--head)}"
    ".scroll tr>:first-child:not([colspan]){position:sticky;left:0;z-index:1;"
    "background:var(--bg)}"
    ".scroll thead tr>:first-child{background:var(--head)}"
    ".num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "code{font:.85em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}"
    "td code{overflow-wrap:anywhere}td.code{min-width:14ch}"
    ".prov{display:inline-block;padding:0 .45rem;border:1px solid;border-radius:.7rem;"
    "font-size:.8rem;white-space:nowrap}"
    ".prov-measured{color:#1a7f37}.prov-modeled{color:#9a6700;border-style:dashed}"
    ".prov-published{color:#0b5cad;border-style:dotted}"
    "figure{margin:1rem 0;max-width:100%}figcaption{color:var(--muted);font-size:.9rem}"
    ".chart-scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;max-width:100%}"
    "svg.chart{display:block;width:100%;min-width:" CHART_MIN_PX "px;max-width:800px;height:auto}"
    ".note{color:var(--muted);border-left:3px solid var(--line);padding-left:.6rem}"
    ".lead{color:var(--muted)}"
    "td.tip{text-decoration:underline dotted var(--muted);text-underline-offset:3px}"
    "th{cursor:pointer}"
    "details.fold{margin:.5rem 0 1rem;border:1px solid var(--line);border-radius:.4rem;"
    "padding:.35rem .7rem}"
    "details.fold>summary{cursor:pointer;color:var(--muted)}"
    "details.fold[open]>summary{margin-bottom:.5rem}"
    "@media (max-width:40rem){body{padding:.5rem .6rem;font-size:15px}"
    "table{font-size:.8rem}th,td{padding:.2rem .35rem}td.long{min-width:18ch}h1{font-size:1.3rem}"
    "h2{font-size:1.1rem}details.fold{padding:.3rem .45rem}"
    ".scroll tr>:first-child:not([colspan]){min-width:7.5rem;max-width:9rem;"
    "overflow-wrap:anywhere}}";

/* The tables' sorting (click a heading; numbers sort as numbers) and a self-check a
 * headless browser reads back: how many charts were laid out with content (one in a
 * closed fold is measured opened), and whether the page fits the window's width. */
static const char PAGE_SCRIPT[] =
    "(function(){"
    "function key(td){if(!td)return '';var t=td.textContent.trim();"
    "var n=parseFloat(t.replace(/^[$+]/,'').replace(/,/g,''));"
    "return isNaN(n)?t.toLowerCase():n;}"
    "var hs=document.querySelectorAll('table.sortable th');"
    "for(var i=0;i<hs.length;i++){(function(th){th.tabIndex=0;th.title='Sort by this column';"
    "th.addEventListener('click',function(){var tb=th.closest('table').tBodies[0];"
    "var idx=Array.prototype.indexOf.call(th.parentNode.children,th);"
    "var asc=th.getAttribute('aria-sort')!=='ascending';"
    "var all=th.parentNode.children;for(var "
    "k=0;k<all.length;k++)all[k].removeAttribute('aria-sort');"
    "th.setAttribute('aria-sort',asc?'ascending':'descending');"
    "var rows=Array.prototype.slice.call(tb.rows);"
    "rows.sort(function(a,b){var x=key(a.cells[idx]),y=key(b.cells[idx]);"
    "var r=typeof x===typeof y?(x<y?-1:x>y?1:0):(typeof x==='number'?-1:1);return asc?r:-r;});"
    "for(var k=0;k<rows.length;k++)tb.appendChild(rows[k]);});})(hs[i]);}"
    "var cs=document.querySelectorAll('svg.chart'),n=0;"
    "for(var i=0;i<cs.length;i++){var f=cs[i].closest('details'),shut=f&&!f.open;"
    "if(shut)f.open=true;var r=cs[i].getBoundingClientRect();if(shut)f.open=false;"
    "if(r.width>100&&r.height>100&&cs[i].querySelectorAll('path,rect,polygon,polyline').length>10)"
    "n++;}"
    "document.documentElement.setAttribute('data-charts',cs.length);"
    "document.documentElement.setAttribute('data-charts-drawn',n);"
    "document.documentElement.setAttribute('data-fits',"
    "document.documentElement.scrollWidth<=window.innerWidth+1?'yes':'no');"
    "})();";

void tb_doc_page_begin(struct tb_doc *d, const char *title)
{
    tb_sb_puts(&d->html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                         "<meta name=\"viewport\" content=\"width=device-width, "
                         "initial-scale=1\">\n<title>");
    tb_sb_html(&d->html, title);
    tb_sb_printf(&d->html, "</title>\n<style>%s</style>\n</head>\n<body>\n", PAGE_CSS);
}

void tb_doc_page_end(struct tb_doc *d)
{
    tb_sb_printf(&d->html, "<script>%s</script>\n</body>\n</html>\n", PAGE_SCRIPT);
}

/* The SVG text as an inline element: no XML prolog, no namespace URLs (HTML does not
 * need them), ids prefixed per chart so two charts' patterns cannot collide. Its first
 * <title> (the document's) becomes title; the others (gnuplot titles each plotted series
 * with its key entry: a target's name) stay, so the page says which series is which. */
void tb_doc_inline_svg(struct tb_sbuf *b, const char *svg, int which, const char *title)
{
    const char *s = strstr(svg, "<svg");
    const char *tag_end;
    char prefix[16];
    bool titled = false;
    snprintf(prefix, sizeof prefix, "c%d-", which);
    if (!s)
        return;
    tag_end = strchr(s, '>');
    if (!tag_end)
        return;
    /* in its own sideways scroller: on a narrow screen it keeps CHART_MIN_PX */
    tb_sb_puts(b, "<div class=\"chart-scroll\">");
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
        if (!titled && !strncmp(p, "<title>", 7)) {
            const char *q = strstr(p, "</title>");
            if (q) {
                tb_sb_puts(b, "<title>");
                tb_sb_html(b, title);
                tb_sb_puts(b, "</title>");
                p = q + 8;
                titled = true;
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
    tb_sb_puts(b, "</div>\n");
}
