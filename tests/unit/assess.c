/* tests/unit/assess.c: the migration assessment (tb_assess.h) on a workload file written
 * here: the figures of the current fleet, the model error taken from tb_validate, the
 * Markdown and HTML written through tb_doc (escaping, the unpriced rows, the page), the
 * input errors; and the tb_doc pieces the assessment added (tb_doc.h). */
#include "tb_assess.h"

#include "tb_doc.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_scenario.h"
#include "tb_util.h"
#include "tb_validate.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        bail("cannot write '%s'", path);
}

static bool has(const char *hay, const char *needle)
{
    return hay && strstr(hay, needle) != NULL;
}

static bool starts(const char *s, const char *prefix)
{
    return s && !strncmp(s, prefix, strlen(prefix));
}

static bool ends(const char *s, const char *suffix)
{
    size_t n = s ? strlen(s) : 0, k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* What one of the writers puts in a file, as a malloc'ed string. */
enum which { CSV, MD, HTML, MD_AT3, HTML_AT2 };

static char *render(const struct tb_assessment *as, const struct tb_assess_opts *o, enum which w)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc;
    if (!f)
        bail("open_memstream");
    rc = w == CSV      ? tb_assess_write_csv(as, f)
         : w == MD     ? tb_assess_write_md(as, o, f)
         : w == HTML   ? tb_assess_write_html(as, o, f)
         : w == MD_AT3 ? tb_assess_write_md_at(as, o, 3, f)
                       : tb_assess_write_html_at(as, o, 2, f);
    if (fclose(f) != 0 || rc != TB_OK)
        bail("writer %d failed", (int)w);
    return buf;
}

static const struct tb_assess_row *row_of(const struct tb_assessment *as, size_t wi,
                                          const char *candidate)
{
    for (size_t i = 0; i < as->nrows; i++)
        if (as->rows[i].workload == wi && !strcmp(as->rows[i].candidate, candidate))
            return &as->rows[i];
    bail("no row for workload %zu on %s", wi, candidate);
}

static void test_doc_pieces(void)
{
    struct tb_doc d;
    static const char *const head[] = {"Name", "N", "Why"};
    static const char *const rhead[] = {"Range"};
    static const int span[] = {1, 2};
    const char *cells[] = {"x", "why"};
    const char *rcells[] = {"-1 to 2"};

    memset(&d, 0, sizeof d);
    tb_doc_p_begin(&d, NULL);
    tb_doc_text(&d, "a %d ", 1);
    tb_doc_code(&d, "x`y|z<");
    tb_doc_text(&d, " b_<");
    tb_doc_p_end(&d);
    IS_STRING("a 1 `x'y'z<` b\\_&lt;\n\n", d.md.p, "paragraph in pieces: Markdown");
    IS_STRING("<p>a 1 <code>x`y|z&lt;</code> b_&lt;</p>\n", d.html.p, "and HTML");
    tb_sb_release(&d.md);
    tb_sb_release(&d.html);

    tb_doc_list_begin(&d);
    tb_doc_item_begin(&d);
    tb_doc_strong(&d, "A*");
    tb_doc_text(&d, " (1)");
    tb_doc_list_begin(&d);
    tb_doc_item_begin(&d);
    tb_doc_text(&d, "r");
    tb_doc_item_end(&d);
    tb_doc_list_end(&d);
    tb_doc_item_end(&d);
    tb_doc_item_begin(&d);
    tb_doc_text(&d, "B");
    tb_doc_item_end(&d);
    tb_doc_list_end(&d);
    IS_STRING("- **A\\*** (1)\n  - r\n- B\n\n", d.md.p, "nested list: Markdown");
    IS_STRING(
        "<ul>\n<li><strong>A*</strong> (1)<ul>\n<li>r</li>\n</ul>\n</li>\n<li>B</li>\n</ul>\n",
        d.html.p, "and HTML");
    IS_INT(0, d.list_depth, "every list closed");
    tb_sb_release(&d.md);
    tb_sb_release(&d.html);

    tb_doc_table(&d, "tnt", head);
    tb_doc_row_span(&d, cells, NULL, span);
    tb_doc_table_end(&d);
    OK(has(d.md.p, "\n| x | | why |\n"), "a spanning cell: empty columns, then its text");
    OK(has(d.html.p, "<tr><td>x</td><td colspan=\"2\">why</td></tr>\n"), "an HTML colspan");
    tb_sb_release(&d.md);
    tb_sb_release(&d.html);

    tb_doc_table(&d, "r", rhead);
    tb_doc_row(&d, rcells);
    tb_doc_table_end(&d);
    IS_STRING("| Range |\n|---:|\n| -1 to 2 |\n\n", d.md.p, "kind r: a number in Markdown");
    OK(has(d.html.p, "<th class=\"num\" style=\"white-space:normal\">Range</th>") &&
           has(d.html.p, "<td class=\"num\" style=\"white-space:normal\">-1 to 2</td>"),
       "kind r: right-aligned, wrapping in HTML");
    tb_sb_release(&d.md);
    tb_sb_release(&d.html);

    tb_doc_page_begin(&d, "a <b>");
    tb_doc_page_end(&d);
    OK(starts(d.html.p, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"), "a page: the doctype");
    OK(has(d.html.p, "<title>a &lt;b&gt;</title>\n<style>"), "its title escaped, its stylesheet");
    OK(has(d.html.p, "</head>\n<body>\n<script>") && ends(d.html.p, "</body>\n</html>\n"),
       "the script and the end of the page");
    IS_INT(0, (long long)d.md.len, "the Markdown gets nothing of the page");
    tb_sb_release(&d.md);
    tb_sb_release(&d.html);
}

int main(void)
{
    char *src = test_src_path(".");
    char *pricing = test_src_path("pricing");
    char *published = test_src_path("reports/validation/published.csv");
    char *good = test_tmp_path("assess_good.csv");
    char *badphase = test_tmp_path("assess_badphase.csv");
    char *missing = test_tmp_path("assess_missing.csv");
    struct tb_pricing pr;
    struct tb_model m;
    struct tb_assess_opts o;
    struct tb_assessment as;
    struct tb_scenarios s;
    struct tb_validation v;
    const struct tb_assess_row *cur, *p4d, *trn2;
    const struct tb_validate_group *h100;
    char err[1024] = "", *csv, *md, *html, *md3, *html2;

    setenv("TRNBENCH_DATADIR", src, 1);
    plan_lazy();
    test_doc_pieces();

    IS_INT(1, tb_assess_risk_applies("neuron", "neuron-v2"), "a neuron risk applies to neuron-v2");
    IS_INT(1, tb_assess_risk_applies("all", "nvidia"), "an 'all' risk applies to every family");
    IS_INT(1, tb_assess_risk_applies("nvidia", "nvidia"), "a family's own risk applies");
    IS_INT(0, tb_assess_risk_applies("nvidia", "neuron-v2"), "another family's does not");
    IS_INT(0, tb_assess_risk_applies("neuron", "nvidia"), "nor neuron's to nvidia");

    if (tb_pricing_load(&pr, pricing, err, sizeof err) != 0 ||
        tb_model_load(&m, &pr, pricing, err, sizeof err) != 0)
        bail("cannot load the catalogue: %s", err);
    tb_assess_opts_init(&o);

    /* the chat example under a name that needs escaping in both documents and quoting in
     * CSV (chat <b>&"x"| y_z*), and a workload whose spend is given */
    write_text(good, "name,model,phase,precision,requests_per_s,seq_in,seq_out,ttft_ms,tpot_ms,"
                     "current_instance,current_purchase,region,engineer_weeks,"
                     "usd_per_engineer_week,current_usd_per_month\n"
                     "\"chat <b>&\"\"x\"\"| y_z*\",llama-3.1-70b,serve,bf16,12,2048,512,2000,60,"
                     "p5.48xlarge,on-demand,us-east-1,12,6000,\n"
                     "small,llama-3.1-8b,serve,bf16,1,512,128,,,inf2.xlarge,on-demand,"
                     "us-east-1,4,6000,3000\n");
    IS_INT(TB_OK, tb_assess_run(&as, good, &m, &o, err, sizeof err), "assess %s", err);
    IS_INT(2, (long long)as.csv.nrows, "two workloads");

    cur = row_of(&as, 0, "p5.48xlarge");
    OK(cur->ok && cur->current, "the current instance is sized, priced and marked current");
    OK(cur->fleet >= 1, "its fleet has at least one instance (%ld)", cur->fleet);
    IS_REL((double)cur->fleet * cur->usd_per_hour * 730, cur->monthly_usd, 1e-12,
           "monthly = fleet x USD/h x 730");
    IS_DOUBLE(cur->monthly_usd, as.current_monthly[0], 0, "and is the current monthly cost");
    IS_DOUBLE(0, cur->saving_usd, 0, "which saves nothing");
    IS_STRING("the current fleet", cur->verdict, "verdict of the current fleet");
    OK(starts(as.current_why[0], "modeled: "), "its cost is modeled (%s)", as.current_why[0]);
    IS_DOUBLE(3000, as.current_monthly[1], 0, "a spend given in the file is taken as it is");
    IS_STRING("given in the file", as.current_why[1], "and said to be given");

    /* the model error is the family's median from tb_validate, as a fraction */
    if (tb_scenarios_predict(&s, published, &m, err, sizeof err) != 0 ||
        tb_validate_compute(&v, &s, err, sizeof err) != TB_OK)
        bail("cannot validate: %s", err);
    h100 = tb_validate_family(&v, "H100 SXM5");
    OK(h100 && !isnan(h100->median), "published.csv has H100 SXM5 rows");
    IS_DOUBLE(h100 ? h100->median / 100 : NAN, cur->model_err, 0,
              "p5.48xlarge's model error is the H100 SXM5 median error");
    tb_validate_release(&v);
    tb_scenarios_release(&s);

    p4d = row_of(&as, 0, "p4d.24xlarge");
    IS_REL(as.current_monthly[0] - p4d->monthly_usd, p4d->saving_usd, 1e-12,
           "a candidate's saving = current - its cost");
    if (p4d->saving_usd > 0)
        IS_REL(12 * 6000 / p4d->saving_usd, p4d->break_even_months, 1e-12,
               "break-even = engineering cost / saving");
    else
        OK(isinf(p4d->break_even_months), "no saving: break-even never");
    trn2 = row_of(&as, 0, "trn2.48xlarge");
    OK(!trn2->ok && starts(trn2->why, "no price: "), "trn2.48xlarge has no on-demand price");

    csv = render(&as, &o, CSV);
    md = render(&as, &o, MD);
    html = render(&as, &o, HTML);
    md3 = render(&as, &o, MD_AT3);
    html2 = render(&as, &o, HTML_AT2);

    OK(starts(csv, "workload,candidate,current,fleet_instances,capacity_per_instance,"),
       "CSV header");
    OK(has(csv, "\n\"chat <b>&\"\"x\"\"| y_z*\",p5.48xlarge,yes,"), "CSV quotes the odd name");

    OK(starts(md, "# Migration assessment\n\nFor each workload of `"), "Markdown title");
    OK(has(md, "\n## chat &lt;b>&\"x\"\\| y\\_z\\*\n\n"), "Markdown escapes the name");
    OK(has(md, "llama-3.1-70b serve on p5.48xlarge (us-east-1, on-demand); load 6144 tokens/s."),
       "Markdown: model, region, purchase and load (12 requests/s x 512 tokens)");
    OK(has(md, "\n| Candidate | Fleet | Monthly USD | Saving | Break-even (months) | Saving, "
               "prices +-20% | Saving, model error | Verdict |\n|---|---:|---:|---:|---:|---:|"
               "---:|---|\n"),
       "Markdown table heading, numbers right-aligned");
    OK(has(md, "\n| p5.48xlarge (current) | "), "Markdown marks the current fleet");
    OK(has(md, "\n| trn2.48xlarge | | | | | | | no price: "),
       "Markdown: an unpriced row's reason in the verdict column");
    OK(has(md, "\n- **nvidia** (") && has(md, "\n  - capacity: "),
       "Markdown: risks by chip family");

    OK(starts(html, "<!DOCTYPE html>\n"), "HTML: a page");
    OK(has(html, "<title>trnbench migration assessment</title>"), "with its title");
    OK(has(html, "<table class=\"sortable\">") && has(html, "<script>"), "sortable tables");
    OK(!has(html, "<link") && !has(html, "src="), "nothing loaded from elsewhere");
    OK(ends(html, "</html>\n"), "the page is closed");
    OK(has(html, "\n<h1>Migration assessment</h1>\n"), "HTML title");
    OK(has(html, "\n<h2>chat &lt;b&gt;&amp;&quot;x&quot;| y_z*</h2>\n"), "HTML escapes the name");
    OK(has(html, "llama-3.1-70b serve on p5.48xlarge (us-east-1, on-demand); load 6144 tokens/s."),
       "HTML: model, region, purchase and load, as the Markdown");
    OK(has(html, "<th class=\"num\" style=\"white-space:normal\">Saving, model error</th>"),
       "HTML: the model error column");
    OK(has(html, " (+-") && has(html, "%)</td>"), "HTML: with the model error percentage");
    OK(has(html, "<td class=\"tip\" title=\"$") && has(html, "/h us-east-1 on-demand, ") &&
           has(html, "\">p5.48xlarge (current)</td>"),
       "HTML: the price used as the candidate's tooltip");
    OK(has(html, "<tr><td>trn2.48xlarge</td><td colspan=\"7\">no price: "),
       "HTML: an unpriced row's reason spans the figures");
    OK(has(html, "<li><strong>nvidia</strong> ("), "HTML: risks by chip family");

    OK(starts(md3, "### Migration assessment\n\n") && has(md3, "\n#### chat &lt;b>"),
       "a Markdown section at level 3, workloads at 4");
    OK(starts(html2, "<h2>Migration assessment</h2>\n") && has(html2, "\n<h3>chat &lt;b&gt;") &&
           !has(html2, "<!DOCTYPE") && !has(html2, "<script>"),
       "an HTML section at level 2: no page around it");
    {
        /* the section is the document without its page */
        const char *body = strstr(html, "<h1>");
        char *html1 = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&html1, &n);
        tb_assess_write_html_at(&as, &o, 1, f);
        fclose(f);
        OK(body && !strncmp(body, html1, strlen(html1)), "the page's body is the section");
        free(html1);
    }
    free(csv);
    free(md);
    free(html);
    free(md3);
    free(html2);
    tb_assess_release(&as);

    /* input errors: TB_EINPUT naming file, line and field; nothing assessed */
    write_text(badphase, "name,model,phase,current_instance\nx,llama-3.1-8b,fly,p5.48xlarge\n");
    IS_INT(TB_EINPUT, tb_assess_run(&as, badphase, &m, &o, err, sizeof err), "a bad phase");
    OK(has(err, "assess_badphase.csv: line 2: field 'phase': not serve, train or denoise"),
       "names file, line and field (%s)", err);
    IS_INT(0, (long long)as.nrows, "and leaves no rows");
    remove(missing);
    IS_INT(TB_EINPUT, tb_assess_run(&as, missing, &m, &o, err, sizeof err), "a missing file");
    OK(has(err, "assess_missing.csv"), "names it (%s)", err);

    tb_model_release(&m);
    tb_pricing_release(&pr);
    free(src);
    free(pricing);
    free(published);
    free(good);
    free(badphase);
    free(missing);
    return 0;
}
