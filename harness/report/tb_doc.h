/*
 * harness/report/tb_doc.h: one writer for two documents. Every call appends the same content to
 * a Markdown text and an HTML text, so report.md and report.html cannot say different
 * things. Tables are sortable in the HTML (class "sortable", the report's inline script)
 * and a cell may carry a tooltip (its provenance, say) in a title attribute; numbers
 * are right-aligned; a text cell of prose (a reason, a source) gets class "long", which
 * the stylesheet gives a readable width.
 *
 * Its text goes into growable buffers (base/tb_sbuf.h), with the Markdown and HTML
 * escapes here; a failed allocation shows once at the end, as there.
 */
#ifndef TB_DOC_H
#define TB_DOC_H

#include "tb_sbuf.h"
#include "tb_util.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* s escaped for HTML text and attribute values (& < > " '). */
void tb_sb_html(struct tb_sbuf *b, const char *s);
/* s escaped for Markdown table cells and paragraphs: no raw HTML ('<', '>' and '&' as
 * entities), no link, image, code span, emphasis or strike-through from the text ('[',
 * ']', '`', '*', '_', '~', '\\' backslash-escaped), no cell break ('|'), line breaks
 * as spaces. At the start of a paragraph or list item the writers also escape a
 * leading '#', '-', '+', '=' or "1." that would start a heading, list or rule. */
void tb_sb_md(struct tb_sbuf *b, const char *s);

/* How deep folds (tb_doc_fold_begin) nest. */
#define TB_DOC_MAX_FOLDS 4

/* The two documents. Zero-initialise; the caller owns md and html. */
struct tb_doc {
    struct tb_sbuf md;
    struct tb_sbuf html;
    const char *kinds;   /* per column of the open table: t text, n number, r a number that
                            may wrap (a range "-15816 to 16242", a long heading), c code, p
                            provenance */
    int list_depth;      /* lists open (tb_doc_list_begin) */
    bool item_line_open; /* a list item's Markdown line has not ended yet */
    bool md_at_start;    /* nothing written yet in the open paragraph or list item */
    int folds;           /* folds open (tb_doc_fold_begin), innermost last */
    struct {
        size_t at;     /* where in the HTML the fold's count goes (its summary line) */
        size_t rows;   /* table rows written inside it so far */
        size_t tables; /* tables opened inside it so far */
    } fold[TB_DOC_MAX_FOLDS];
};

void tb_doc_h(struct tb_doc *d, int level, const char *text);
/* A paragraph; cls "note" is a block quote in Markdown, a class in HTML. */
void tb_doc_p(struct tb_doc *d, const char *cls, const char *fmt, ...) TB_PRINTF(3, 4);
/* Open a table: kinds has one letter per column (see struct tb_doc), head its titles. */
void tb_doc_table(struct tb_doc *d, const char *kinds, const char *const *head);
void tb_doc_row(struct tb_doc *d, const char *const *cells);
/* A row whose cells may carry tooltips (tips NULL, or tips[i] NULL or "": none). The
 * tooltip is HTML only: Markdown tables carry provenance in their own columns. */
void tb_doc_row_tip(struct tb_doc *d, const char *const *cells, const char *const *tips);
/* A row whose cells may span columns: cells[i] covers span[i] columns (span NULL: one
 * each), the spans adding up to the table's columns. A spanning cell takes the kind of
 * its last column. Markdown has no spans, so the columns before the last are written
 * empty ("| |") and the text goes in the last; the HTML cell gets a colspan. */
void tb_doc_row_span(struct tb_doc *d, const char *const *cells, const char *const *tips,
                     const int *span);
void tb_doc_table_end(struct tb_doc *d);

/* A paragraph written in pieces: tb_doc_p_begin (cls as in tb_doc_p), then any number of
 * tb_doc_text, tb_doc_code and tb_doc_strong, then tb_doc_p_end. */
void tb_doc_p_begin(struct tb_doc *d, const char *cls);
void tb_doc_p_end(struct tb_doc *d);
/* Inline pieces of a paragraph or a list item: text (escaped in both documents), a code
 * span (in Markdown a backtick or pipe in it becomes "'", as in code cells), and strong
 * emphasis. */
void tb_doc_text(struct tb_doc *d, const char *fmt, ...) TB_PRINTF(2, 3);
void tb_doc_code(struct tb_doc *d, const char *text);
void tb_doc_strong(struct tb_doc *d, const char *text);
/* A bulleted list: tb_doc_list_begin, then per item tb_doc_item_begin, its inline pieces,
 * optionally a nested list, tb_doc_item_end; then tb_doc_list_end. In Markdown an item
 * is "- text" on one line, a nested list is indented two spaces per level, and a blank
 * line ends the outermost list. */
void tb_doc_list_begin(struct tb_doc *d);
void tb_doc_item_begin(struct tb_doc *d);
void tb_doc_item_end(struct tb_doc *d);
void tb_doc_list_end(struct tb_doc *d);

/* A fold: in the HTML, what is written between tb_doc_fold_begin and tb_doc_fold_end is
 * a <details> element, closed until the reader opens it, whose <summary> line is title
 * and then how many table rows the fold holds, counted as they are written ("(243
 * rows)", "(12 rows in 2 tables)"; nothing when it holds no table). The Markdown gets
 * the content only: it has no folds, and the section's own heading names it. Folds nest
 * up to TB_DOC_MAX_FOLDS deep (deeper ones are written open, without a <details>). */
void tb_doc_fold_begin(struct tb_doc *d, const char *title);
void tb_doc_fold_end(struct tb_doc *d);

/* A self-contained HTML page around the document (no external resource: it opens
 * offline): tb_doc_page_begin writes the head (title, the report's stylesheet) and
 * opens the body, tb_doc_page_end writes the script that sorts tables and closes the
 * page. The Markdown text gets nothing. */
void tb_doc_page_begin(struct tb_doc *d, const char *title);
void tb_doc_page_end(struct tb_doc *d);

/* SVG text as an inline HTML element: no XML prolog or namespaces, ids prefixed with
 * "c<which>-" so two charts' patterns cannot collide, its first <title> (the
 * document's) set to title; the series' own <title>s (gnuplot's key entries) stay. It
 * sits in a <div class="chart-scroll">: on a screen too narrow for the chart's text to
 * stay legible the chart keeps its minimum width and scrolls sideways there. */
void tb_doc_inline_svg(struct tb_sbuf *b, const char *svg, int which, const char *title);

#endif
