/* tests/unit/plot.c: the report's layout pieces and its charts. Where a chart's point
 * labels go (none overlapping another or a point, inside the plot area, the ones with
 * no room left out); folds (tb_doc_fold_begin: closed <details> whose summary counts the
 * rows, nothing in Markdown); an inlined SVG keeping its series' titles. Then gnuplot
 * charts through fork/exec: a real chart, byte-identical reruns, bars and lines in
 * their target's colour with the targets in the key, labels where they were placed,
 * the stale output removed, a script error, a missing data file, gnuplot missing, and
 * PNG where pngcairo exists. */
#include "report_impl.h"
#include "tb_doc.h"
#include "tb_plot.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void write_file(const char *path, const char *text)
{
    char err[512];
    if (tb_write_file_atomic(path, text, strlen(text), err, sizeof err) != 0)
        bail("%s", err);
}

static char *slurp(const char *path, size_t *len)
{
    char err[512], *data = NULL;
    if (tb_read_file(path, &data, len, err, sizeof err) != 0)
        return NULL;
    return data;
}

/* Whether two label boxes (or a box and a marker) share any area. */
static bool meet(double ax0, double ay0, double ax1, double ay1, double bx0, double by0, double bx1,
                 double by1)
{
    return ax0 < bx1 && bx0 < ax1 && ay0 < by1 && by0 < ay1;
}

/* The placed labels of l: how many pairs overlap, how many cover a marker or leave the
 * area. */
static int placement_faults(const struct tb_label *l, size_t n, double marker,
                            struct tb_label_box area)
{
    int faults = 0;
    for (size_t i = 0; i < n; i++) {
        double x0 = l[i].x, y0 = l[i].y - l[i].h / 2, x1 = l[i].x + l[i].w,
               y1 = l[i].y + l[i].h / 2;
        if (!l[i].placed)
            continue;
        faults += x0 < area.x0 || x1 > area.x1 || y0 < area.y0 || y1 > area.y1;
        for (size_t k = 0; k < n; k++) {
            faults += meet(x0, y0, x1, y1, l[k].ax - marker, l[k].ay - marker, l[k].ax + marker,
                           l[k].ay + marker);
            if (k > i && l[k].placed)
                faults += meet(x0, y0, x1, y1, l[k].x, l[k].y - l[k].h / 2, l[k].x + l[k].w,
                               l[k].y + l[k].h / 2);
        }
    }
    return faults;
}

static void test_labels(void)
{
    const struct tb_label_box area = {0, 0, 400, 300};
    struct tb_label l[48];
    size_t n = 0, placed;
    char text[16];

    /* one point: right of it and above, just clear of its marker */
    memset(l, 0, sizeof l);
    l[0].ax = 100;
    l[0].ay = 150;
    l[0].w = tb_report_text_width("$1.23", 10);
    l[0].h = 12.5;
    IS_INT(1, (int)tb_report_place_labels(l, 1, 6, 2, area), "a lone label is placed");
    IS_DOUBLE(108, l[0].x, 1e-9, "its left edge clears the marker and the pad");
    IS_DOUBLE(150 - 6.25 - 1, l[0].y, 1e-9, "its centre is above the point");
    OK(l[0].w > 25 && l[0].w < 40, "\"$1.23\" at 10 px is %.1f px wide", l[0].w);
    OK(tb_report_text_width("%", 10) > tb_report_text_width(".", 10), "\"%%\" is wider than \".\"");

    /* at the right edge: it goes left of the point */
    l[0].ax = 395;
    IS_INT(1, (int)tb_report_place_labels(l, 1, 6, 2, area), "placed at the right edge too");
    OK(l[0].x + l[0].w <= 395 - 6, "on the left of the point (%.1f + %.1f)", l[0].x, l[0].w);

    /* a crowded sweep: 8 curves of 4 points, close together, and 12 measured levels on
     * one spot */
    memset(l, 0, sizeof l);
    for (int c = 0; c < 8; c++)
        for (int p = 0; p < 4; p++, n++) {
            l[n].ax = 40 + p * 60 + c * 3;
            l[n].ay = 40 + c * 22 + p * 8;
            snprintf(text, sizeof text, "$%d.%02d", c + 1, p * 7);
            l[n].w = tb_report_text_width(text, 10);
            l[n].h = 12.5;
        }
    for (int p = 0; p < 12; p++, n++) {
        l[n].ax = 300;
        l[n].ay = 250;
        l[n].w = tb_report_text_width("$20.5 c16 model +12%", 10);
        l[n].h = 12.5;
    }
    l[n].ax = 200; /* a point without a label: its marker is kept clear all the same */
    l[n].ay = 100;
    n++;
    placed = tb_report_place_labels(l, n, 6, 2, area);
    IS_INT(0, placement_faults(l, n, 6, area),
           "no label overlaps another or a marker, or leaves the area (%zu of %zu placed)", placed,
           n - 1);
    OK(placed >= 32 && placed < n - 1, "most are placed, and some on the shared spot left out");
    OK(!l[n - 1].placed, "a point without a label gets none");

    /* no room at all: every label left out */
    {
        const struct tb_label_box tiny = {95, 145, 105, 155};
        l[0].ax = 100;
        l[0].ay = 150;
        IS_INT(0, (int)tb_report_place_labels(l, 1, 6, 2, tiny), "no room: left out");
    }
}

static void test_folds(void)
{
    static const char *const head[] = {"a", "b"};
    const char *row[] = {"1", "x"};
    struct tb_doc d;
    memset(&d, 0, sizeof d);
    tb_doc_h(&d, 2, "Prices");
    tb_doc_fold_begin(&d, "Each price & its source");
    tb_doc_table(&d, "nt", head);
    for (int i = 0; i < 3; i++)
        tb_doc_row(&d, row);
    tb_doc_table_end(&d);
    tb_doc_fold_end(&d);
    OK(strstr(d.html.p, "<details class=\"fold\"><summary>Each price &amp; its source (3 "
                        "rows)</summary>\n<div class=\"scroll\">") != NULL,
       "a closed fold whose summary counts its rows");
    OK(strstr(d.html.p, "</table></div>\n</details>\n") != NULL, "it closes after the table");
    OK(!strstr(d.md.p, "details") && !strstr(d.md.p, "Each price") && strstr(d.md.p, "| 1 | x |"),
       "Markdown keeps the rows and gets no fold");

    tb_doc_fold_begin(&d, "Outer");
    tb_doc_table(&d, "nt", head);
    tb_doc_row(&d, row);
    tb_doc_table_end(&d);
    tb_doc_fold_begin(&d, "Inner");
    tb_doc_table(&d, "nt", head);
    tb_doc_row(&d, row);
    tb_doc_row(&d, row);
    tb_doc_table_end(&d);
    tb_doc_fold_end(&d);
    tb_doc_fold_end(&d);
    tb_doc_fold_begin(&d, "Words only");
    tb_doc_p(&d, NULL, "no table");
    tb_doc_fold_end(&d);
    OK(strstr(d.html.p, "<summary>Outer (3 rows in 2 tables)</summary>") != NULL,
       "an outer fold counts the rows of the folds inside it");
    OK(strstr(d.html.p, "<summary>Inner (2 rows)</summary>") != NULL, "the inner its own");
    OK(strstr(d.html.p, "<summary>Words only</summary>") != NULL, "no table: no count");
    IS_INT(0, d.folds, "every fold closed");
    tb_sb_release(&d.md);
    tb_sb_release(&d.html);

    {
        struct tb_sbuf b = {0};
        tb_doc_inline_svg(&b,
                          "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
                          "width=\"10\"><title>Gnuplot</title><g id=\"gnuplot_plot_1\" "
                          "><title>trn2.48xlarge</title></g></svg>",
                          3, "Cost <chart>");
        OK(b.p && strstr(b.p, "<title>Cost &lt;chart&gt;</title>") && !strstr(b.p, "Gnuplot"),
           "the SVG's own title becomes the caption");
        OK(b.p && strstr(b.p, "<g id=\"c3-gnuplot_plot_1\" ><title>trn2.48xlarge</title>"),
           "a series keeps its title (the target), its id prefixed");
        OK(b.p && !strncmp(b.p, "<div class=\"chart-scroll\"><svg ", 31) &&
               strstr(b.p, "</svg></div>\n"),
           "the chart sits in its own sideways scroller (a phone keeps its text legible)");
        tb_sb_release(&b);
    }
}

/* Markdown from inputs (issue 19): no raw HTML, link or image, and no heading or list
 * made by a paragraph's or item's first characters; the HTML escaped as ever */
/* A cell of prose (a reason why a target has no price) is marked "long", which the
 * stylesheet gives a readable width; a short one and a number are not. */
static void test_long_cells(void)
{
    static const char *const head[] = {"Target", "Cost", "Provenance"};
    const char *why[] = {"inf2.48xlarge", "",
                         "no capacity-block price for 'inf2.48xlarge' in 'us-east-2' in "
                         "pricing/prices.csv"};
    const char *tips[] = {NULL, NULL, "a tooltip"};
    struct tb_doc d;
    memset(&d, 0, sizeof d);
    tb_doc_table(&d, "tnp", head);
    tb_doc_row(&d, why);
    tb_doc_row_tip(&d, why, tips);
    tb_doc_table_end(&d);
    OK(d.html.p && strstr(d.html.p, "<td class=\"long\">no capacity-block price"),
       "a reason of 80 characters is a long cell");
    OK(d.html.p && strstr(d.html.p, "<td class=\"tip long\" title=\"a tooltip\">no capacity"),
       "with a tooltip too");
    OK(d.html.p && strstr(d.html.p, "<tr><td>inf2.48xlarge</td><td class=\"num\"></td>"),
       "a short text cell and a number are not");
    tb_sb_release(&d.md);
    tb_sb_release(&d.html);
    memset(&d, 0, sizeof d);
    tb_doc_page_begin(&d, "t");
    OK(d.html.p && strstr(d.html.p, "box-sizing:content-box;min-width:8ch") &&
           strstr(d.html.p, "td.long{min-width:24ch}"),
       "the stylesheet: no column under 8 characters, prose at least 24");
    tb_sb_release(&d.html);
}

static void test_md_escape(void)
{
    struct tb_doc d;
    memset(&d, 0, sizeof d);
    tb_doc_p(&d, NULL, "%s", "# not a heading <b>&amp; [x](javascript:y) `c` ~s~");
    tb_doc_p(&d, NULL, "%s", "1. not a list");
    tb_doc_list_begin(&d);
    tb_doc_item_begin(&d);
    tb_doc_text(&d, "%s", "- not a nested list");
    tb_doc_item_end(&d);
    tb_doc_list_end(&d);
    tb_doc_p_begin(&d, NULL);
    tb_doc_text(&d, "%s", "+ ");
    tb_doc_text(&d, "%s", "# mid-paragraph stays");
    tb_doc_p_end(&d);
    IS_STRING("\\# not a heading &lt;b&gt;&amp;amp; \\[x\\](javascript:y) \\`c\\` \\~s\\~\n\n"
              "1\\. not a list\n\n"
              "- \\- not a nested list\n\n"
              "\\+ # mid-paragraph stays\n\n",
              d.md.p, "Markdown: markup from text is inert");
    OK(strstr(d.html.p, "<p># not a heading &lt;b&gt;&amp;amp; [x](javascript:y) `c` ~s~</p>") !=
           NULL,
       "HTML: the same text, escaped for HTML only");
    tb_sb_release(&d.md);
    tb_sb_release(&d.html);
}

int main(void)
{
    char err[1024] = "", why[512] = "";
    char *src = test_src_path(".");
    char *data = test_tmp_path("plot_data.tsv");
    char *svg = test_tmp_path("plot_chart.svg");
    char *png = test_tmp_path("plot_chart.png");
    char *badgp = test_tmp_path("plot_bad.gp");
    char *ia = test_tmp_path("plot_ia.tsv");
    const char *title = "Throughput by run: llama-tiny (plot test)";
    const char *args[] = {"svg", title, "prefill decode", "", "linear"};
    char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;

    /* the scripts come from this source tree */
    setenv("TRNBENCH_DATADIR", src, 1);
    plan_lazy();
    test_labels();
    test_folds();
    test_md_escape();
    test_long_cells();
    if (!tb_plot_has_terminal("svg", why, sizeof why)) {
        skip("the charts: gnuplot with the svg terminal is needed: %s", why);
        goto done;
    }

    write_file(data,
               "llama-tiny prefill b1 in64\tprefill\t2048.5\t1990\t2101\thost, measured\n"
               "llama-tiny decode b1 in64 out16\tdecode\t410\t395.2\t418\thost, measured\n"
               "llama-tiny decode b4 in64 out16\tdecode\t1280\tNaN\tNaN\ttrn1.32xlarge, modeled\n");
    IS_INT(TB_PLOT_OK, tb_plot_run("throughput", data, svg, args, 5, err, sizeof err),
           "throughput chart drawn %s", err);
    a = slurp(svg, &alen);
    OK(a && alen > 1000, "SVG exists and is not empty (%zu bytes)", alen);
    OK(a && strstr(a, "<svg") != NULL, "it is an SVG");
    OK(a && strstr(a, title) != NULL, "it carries the title");
    OK(a && strstr(a, "trn1.32xlarge, modeled") != NULL, "second label line drawn");
    OK(a && strstr(a, "prefill") && strstr(a, "decode"), "legend names the phases");
    OK(a && !strstr(a, "scale(0"), "no zero-size point markers (some renderers reject them)");

    IS_INT(TB_PLOT_OK, tb_plot_run("throughput", data, svg, args, 5, err, sizeof err),
           "drawn again");
    b = slurp(svg, &blen);
    OK(a && b && alen == blen && !memcmp(a, b, alen), "byte-identical on a rerun");
    free(b);

    {
        const char *cargs[] = {"svg", "Cost per million tokens: plot test",
                               "usd_per_mtok_in usd_per_mtok_out", "", "log"};
        write_file(
            data,
            "llama-tiny prefill b1 in64\tusd_per_mtok_in\t0.0136\t0.0132\t0.014\thost, measured\n"
            "llama-tiny decode b1 in64 out16\tusd_per_mtok_out\t2.5\t2.45\t2.61\thost, measured\n");
        IS_INT(TB_PLOT_OK, tb_plot_run("cost", data, svg, cargs, 5, err, sizeof err),
               "cost chart drawn on a log scale %s", err);
        b = slurp(svg, &blen);
        OK(b && strstr(b, "log scale") && strstr(b, "USD per million tokens"),
           "cost axis says USD and log scale");
        free(b);
    }

    /* bars in their target's colour, the targets in the key beside the groups' patterns */
    {
        const char *targs[] = {"svg",    "Price-performance: plot test", "llama-3.1-8b/serve", "",
                               "linear", "p5.48xlarge trn2.48xlarge",    "#E69F00 #009E73"};
        const char *bad[] = {"svg",
                             "Price-performance: plot test",
                             "llama-3.1-8b/serve",
                             "",
                             "linear",
                             "p5.48xlarge trn2.48xlarge",
                             "#E69F00"};
        const char *at;
        write_file(data, "llama-3.1-8b serve b64\tllama-3.1-8b/serve\t1.2\tNaN\tNaN\ttrn2."
                         "48xlarge, modeled\ttrn2.48xlarge\n"
                         "llama-3.1-8b serve b64\tllama-3.1-8b/serve\t1\tNaN\tNaN\tp5.48xlarge, "
                         "modeled\tp5.48xlarge\n");
        IS_INT(TB_PLOT_OK, tb_plot_run("priceperf", data, svg, targs, 7, err, sizeof err),
               "bars drawn with targets and colours %s", err);
        b = slurp(svg, &blen);
        at = b ? strstr(b, "<title>trn2.48xlarge</title>") : NULL;
        OK(at && strstr(at, "rgb(  0, 158, 115)") && strstr(at, "rgb(  0, 158, 115)") - at < 700,
           "the key's trn2.48xlarge entry is its colour");
        at = b ? strstr(b, "<title>p5.48xlarge</title>") : NULL;
        OK(at && strstr(at, "rgb(230, 159,   0)") && strstr(at, "rgb(230, 159,   0)") - at < 700,
           "the key's p5.48xlarge entry is its colour");
        OK(b && strstr(b, "stroke:rgb(0,158,115)"), "a bar's pattern is drawn in its target's "
                                                    "colour");
        OK(b && strstr(b, "<title>llama-3.1-8b/serve</title>"), "the key names the group too");
        free(b);
        IS_INT(TB_PLOT_FAILED, tb_plot_run("priceperf", data, svg, bad, 7, err, sizeof err),
               "a colour missing for a target fails");
        OK(strstr(err, "one colour per target") != NULL, "%s", err);
    }

    /* lines in their target's colour, labels where the report placed them */
    {
        const char *iargs[] = {"svg",
                               "Throughput vs interactivity: plot test",
                               "trn2.48xlarge p5.48xlarge(measured)",
                               "#009E73 #E69F00",
                               "560",
                               "78 780 48 468",
                               "1 3 1 4"};
        write_file(ia, "20\t5000\t$0.5\t1\t25\t6000\n"
                       "200\t800\t$1.5\t64\t250\t900\n\n\n"
                       "30\t3000\t$0.7 c1\t1\t36\t3300\n"
                       "300\t300\t$9.9 c64\t64\tNaN\tNaN\n");
        IS_INT(TB_PLOT_OK, tb_plot_run("interactivity", ia, svg, iargs, 7, err, sizeof err),
               "interactivity chart drawn %s", err);
        b = slurp(svg, &blen);
        OK(b && strstr(b, "<title>trn2.48xlarge</title>") &&
               strstr(b, "<title>p5.48xlarge(measured)</title>"),
           "the key names each line");
        OK(b && strstr(b, "$1.5") && strstr(b, "$0.7 c1"), "placed labels are drawn");
        OK(b && !strstr(b, "$9.9"), "a label left out (NaN) is not");
        /* the frame given: the left border at x = 78 pixels */
        OK(b && strstr(b, "M78.00,468.0") != NULL, "the plot area is where the report put it");
        free(b);
    }

    /* failures */
    write_file(svg, "stale");
    write_file(badgp, "set terminal svg\nset output ARG2\nplot ARG1 using 1:2 with nosuchstyle\n");
    IS_INT(TB_PLOT_FAILED, tb_plot_run(badgp, data, svg, NULL, 0, err, sizeof err),
           "a script error fails");
    OK(strstr(err, "plot_bad.gp") && strstr(err, "exit status"), "message names the script: %s",
       err);
    b = slurp(svg, &blen);
    OK(!b || !strstr(b, "stale"), "the stale output was removed first");
    free(b);
    IS_INT(TB_PLOT_FAILED,
           tb_plot_run("throughput", "/nonexistent/data.tsv", svg, args, 5, err, sizeof err),
           "a missing data file fails before gnuplot runs");
    OK(strstr(err, "no data file '/nonexistent/data.tsv'") != NULL, "%s", err);
    IS_INT(TB_PLOT_FAILED, tb_plot_run("no_such_chart", data, svg, args, 5, err, sizeof err),
           "a missing script fails");
    OK(strstr(err, "no_such_chart.gp") != NULL, "%s", err);
    {
        const char *few[] = {"svg"};
        IS_INT(TB_PLOT_FAILED, tb_plot_run("throughput", data, svg, few, 1, err, sizeof err),
               "too few arguments: the script's usage check fails it");
        OK(strstr(err, "usage") != NULL, "gnuplot's message is passed on: %s", err);
    }
    OK(!tb_plot_has_terminal("nosuchterminal", why, sizeof why), "an unknown terminal is absent");
    OK(strstr(why, "no 'nosuchterminal' terminal") != NULL, "%s", why);

    setenv("TRNBENCH_GNUPLOT", "/nonexistent/gnuplot", 1);
    IS_INT(TB_PLOT_MISSING, tb_plot_run("throughput", data, svg, args, 5, err, sizeof err),
           "gnuplot missing is told apart");
    OK(strstr(err, "cannot run '/nonexistent/gnuplot'") != NULL, "%s", err);
    OK(!tb_plot_has_terminal("svg", why, sizeof why), "and has no terminals");
    unsetenv("TRNBENCH_GNUPLOT");

    if (!tb_plot_has_terminal("pngcairo", why, sizeof why)) {
        skip("no PNG: %s", why);
    } else {
        const char *pargs[] = {"png", title, "usd_per_mtok_in usd_per_mtok_out"};
        IS_INT(TB_PLOT_OK, tb_plot_run("throughput", data, png, pargs, 3, err, sizeof err),
               "PNG drawn with pngcairo %s", err);
        b = slurp(png, &blen);
        OK(b && blen > 8 && !memcmp(b, "\x89PNG", 4), "it is a PNG (%zu bytes)", blen);
        free(b);
    }

done:
    free(a);
    free(src);
    free(data);
    free(svg);
    free(png);
    free(badgp);
    free(ia);
    return 0;
}
