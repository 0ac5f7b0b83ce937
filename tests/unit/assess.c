/* tests/unit/assess.c: the migration assessment (tb_assess.h): its arithmetic on stated
 * figures (Little's law, cluster-hours, reserved against hourly, counts past 2^53, the
 * closest column name), then workload files written here: the figures of the current
 * fleet, serving fleets from Little's law against the performance model's own figures,
 * training as cluster-hours that scale with the tokens and agree with the report's
 * arithmetic (tb_cost.h), the baseline priced like for like, the model error taken from
 * tb_validate, the Markdown and HTML written through tb_doc (escaping, the unpriced rows,
 * the page), the input errors (a misspelt column, a load too large to count); and the
 * tb_doc pieces the assessment added (tb_doc.h). */
#include "tb_assess.h"
#include "tb_cross.h"

#include "tb_cost.h"
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

/* The current instance's row bought as purchase (a rebuy row), or NULL. */
static const struct tb_assess_row *rebuy_of(const struct tb_assessment *as, size_t wi,
                                            const char *purchase)
{
    for (size_t i = 0; i < as->nrows; i++)
        if (as->rows[i].workload == wi && as->rows[i].rebuy && as->rows[i].ok &&
            !strcmp(as->rows[i].purchase, purchase))
            return &as->rows[i];
    return NULL;
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

/* The arithmetic on stated figures. */
static void test_arithmetic(void)
{
    struct tb_assess_fleet fl;
    struct tb_assess_train_cost a, b, c;
    static const char *const known[] = {"ttft_limit_ms", "tpot_limit_ms", "requests_per_s",
                                        "region",        "ttft_ms",       NULL};

    /* Little's law: 12 requests/s x 20 s = 240 in flight; 64 a replica: 3.75, so 4 */
    IS_INT(0, tb_assess_serve_fleet(12, 20, 64, 6144, 2000, &fl), "a serving fleet");
    IS_DOUBLE(240, fl.in_flight, 1e-9, "in flight = 12 requests/s x 20 s");
    IS_DOUBLE(4, fl.by_latency, 0, "ceil(240 / 64) = 4 replicas by latency");
    IS_DOUBLE(4, fl.by_throughput, 0, "ceil(6144 / 2000) = 4 by throughput");
    IS_STRING("latency", fl.bound, "a tie is Little's law's");
    IS_INT(0, tb_assess_serve_fleet(12, 10, 64, 6144, 2000, &fl), "half the latency");
    IS_DOUBLE(2, fl.by_latency, 0, "120 in flight: 2 replicas by latency");
    IS_DOUBLE(4, fl.replicas, 0, "but 4 for the throughput");
    IS_STRING("throughput", fl.bound, "and the bound says so");
    IS_INT(0, tb_assess_serve_fleet(16, 16, 64, 1, 1e9, &fl), "256 in flight");
    IS_DOUBLE(4, fl.replicas, 0, "256 / 64 is 4 replicas, not 5 (no rounding up of exact counts)");
    IS_INT(0, tb_assess_serve_fleet(0.1, 2, 64, 1, 1e9, &fl), "a trickle");
    IS_DOUBLE(1, fl.replicas, 0, "still one replica");
    IS_INT(-1, tb_assess_serve_fleet(1e18, 20, 64, 5e20, 2000, &fl),
           "1e18 requests/s: past 2^53 in flight, refused");
    IS_INT(-1, tb_assess_serve_fleet(12, NAN, 64, 6144, 2000, &fl), "a NAN latency refused");
    IS_INT(-1, tb_assess_serve_fleet(12, 20, 0, 6144, 2000, &fl), "no concurrency refused");

    /* training: 2e9 and 2e10 tokens at 33910.8 tokens/s on 4 x $55.04/h */
    IS_INT(0, tb_assess_train_cost(2e9, 33910.8, 4, 55.04, 23.777, 730, &a), "2e9 tokens");
    IS_INT(0, tb_assess_train_cost(2e10, 33910.8, 4, 55.04, 23.777, 730, &b), "2e10 tokens");
    IS_DOUBLE(2e9 / 33910.8 / 3600, a.cluster_hours, 1e-9, "cluster-hours = tokens / tokens/s");
    IS_DOUBLE(a.cluster_hours * 4 * 55.04, a.usd, 1e-6, "cost = cluster-hours x 4 x $55.04");
    IS_DOUBLE(tb_cost_train_usd(2e9, 33910.8, 4 * 55.04), a.usd, 0,
              "which is the report's arithmetic (tb_cost_train_usd)");
    IS_INT(0, a.committed, "16 cluster-hours: paid by the hour");
    IS_DOUBLE(10, b.usd / a.usd, 1e-9, "ten times the tokens, ten times the cost");
    IS_DOUBLE(23.777 / 55.04, a.break_even, 1e-12, "reserved pays above 43%% of the month");
    IS_INT(0, tb_assess_train_cost(2e11, 33910.8, 4, 55.04, 23.777, 730, &c), "2e11 tokens");
    IS_DOUBLE(3, c.clusters, 0, "1638 cluster-hours: 3 clusters at once");
    IS_INT(1, c.committed, "reserved clusters win at 75%% use");
    IS_DOUBLE(3 * 730 * 4 * 23.777, c.usd, 1e-6, "3 clusters x 730 h x 4 x $23.777");
    IS_INT(0, tb_assess_train_cost(2e9, 33910.8, 4, NAN, 23.777, 730, &a), "no hourly price");
    IS_INT(1, a.committed, "the commitment then");
    OK(isnan(a.break_even), "and no break-even to say");
    IS_INT(-1, tb_assess_train_cost(2e9, 33910.8, 4, NAN, NAN, 730, &a), "no price at all");
    IS_INT(-1, tb_assess_train_cost(1e18, 1e-3, 4, 55.04, NAN, 730, &a),
           "cluster-hours past 2^53 refused");

    IS_STRING("ttft_limit_ms", tb_assess_closest("ttft_ms_limt", known),
              "'ttft_ms_limt' is closest to ttft_limit_ms (its words sorted)");
    IS_STRING("requests_per_s", tb_assess_closest("requests_per_sec", known), "a suffix");
    IS_STRING("region", tb_assess_closest("Region", known), "a capital");
    OK(!tb_assess_closest("owner", known), "nothing close to 'owner'");
}

int main(void)
{
    char *src = test_src_path(".");
    char *pricing = test_src_path("pricing");
    char *published = test_src_path("reports/validation/published.csv");
    char *good = test_tmp_path("assess_good.csv");
    char *badphase = test_tmp_path("assess_badphase.csv");
    char *missing = test_tmp_path("assess_missing.csv");
    char *finetune = test_src_path("reports/examples/assess-finetune.csv");
    char *pretrain = test_tmp_path("assess_pretrain.csv");
    char *cblock = test_tmp_path("assess_cblock.csv");
    char *badcol = test_tmp_path("assess_badcol.csv");
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
    test_arithmetic();

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
    IS_STRING("what it costs now", cur->compare, "the current fleet is what it costs now");
    OK(starts(as.current_why[0], "modeled: "), "its cost is modeled (%s)", as.current_why[0]);
    IS_DOUBLE(3000, as.current_monthly[1], 0, "a spend given in the file is taken as it is");
    IS_STRING("given in the file", as.current_why[1], "and said to be given");
    {
        /* Little's law against the model's own figures for one p5.48xlarge at the targets */
        struct tb_arch arch;
        struct tb_scenario sc;
        struct tb_prediction p;
        double conc, e2e;
        memset(&sc, 0, sizeof sc);
        if (tb_arch_find(&arch, "llama-3.1-70b", err, sizeof err) != 0)
            bail("%s", err);
        sc.arch = &arch;
        sc.inst = tb_pricing_instance(&pr, "p5.48xlarge");
        sc.phase = TB_PHASE_SERVE;
        sc.precision = "bf16";
        sc.instances = 1;
        sc.seq_in = 2048;
        sc.seq_out = 512;
        sc.batch_max = true;
        sc.ttft_limit_ms = 2000;
        sc.tpot_limit_ms = 60;
        if (tb_model_predict(&m, &sc, &p, err, sizeof err) != 0 || !p.fits)
            bail("the model cannot serve the 70B on a p5.48xlarge: %s %s", err, p.why);
        conc = (double)(p.batch * p.dp);
        e2e = p.e2e_latency_ms / 1e3;
        IS_INT(1, cur->instances, "one p5.48xlarge holds the 70B within the targets");
        IS_DOUBLE(conc, cur->concurrency, 0,
                  "a replica holds the model's load within the "
                  "targets (%g requests)",
                  conc);
        IS_DOUBLE(e2e, cur->e2e_s, 1e-12, "at the model's end-to-end latency (%g s)", e2e);
        IS_DOUBLE(12 * e2e, cur->in_flight, 1e-9, "in flight = 12 requests/s x %g s", e2e);
        IS_DOUBLE(fmax(ceil(12 * e2e / conc), ceil(6144 / p.output_tokens_per_s)),
                  (double)cur->fleet, 0,
                  "fleet = max(ceil(in flight / requests a replica holds), ceil(tokens/s needed "
                  "/ a replica's)) = %ld",
                  cur->fleet);
        IS_STRING(ceil(12 * e2e / conc) >= ceil(6144 / p.output_tokens_per_s) ? "latency"
                                                                              : "throughput",
                  cur->bound, "the bound that applied is named");
    }

    /* the model error is the report's band (cost.csv model_error_pct): tb_validate_error's
     * p90 for the family and phase, as a fraction, not the family's median */
    if (tb_scenarios_predict(&s, published, &m, err, sizeof err) != 0 ||
        tb_validate_compute(&v, &s, err, sizeof err) != TB_OK)
        bail("cannot validate: %s", err);
    /* the held-out errors of reports/validation/cross.csv, as tb_validate_file takes them */
    IS_INT(1, tb_cross_apply(&v, &s, NULL, err, sizeof err), "cross.csv is current: %s", err);
    h100 = tb_validate_family(&v, "H100 SXM5");
    OK(h100 && !isnan(h100->median), "published.csv has H100 SXM5 rows");
    {
        double pct = NAN;
        bool few;
        char basis[256] = "";
        tb_validate_error(&v, "H100 SXM5", "serve", &pct, &few, basis, sizeof basis);
        IS_DOUBLE(pct / 100, cur->model_err, 0,
                  "p5.48xlarge's model error is the report's band for H100 SXM5 serving (%s)",
                  basis);
        IS_STRING(basis, cur->model_err_basis, "and says what it is");
        OK(h100 && cur->model_err > h100->median / 100, "a p90, above the median (%.3f)",
           h100 ? h100->median / 100 : NAN);
    }
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
    OK(!trn2->ok && starts(trn2->why, "no price: ") &&
           has(trn2->why, "capacity-block and spot are no basis for an always-on fleet"),
       "trn2.48xlarge, with only capacity-block and spot prices, is not priced as an always-on "
       "fleet, and says why (%s)",
       trn2->why);
    {
        const struct tb_assess_row *t3 = row_of(&as, 0, "trn3-ultraserver-gen1");
        OK(t3 && !t3->ok && starts(t3->why, "no price: "),
           "trn3, with no price anywhere, says so (%s)", t3 ? t3->why : "");
    }

    csv = render(&as, &o, CSV);
    md = render(&as, &o, MD);
    html = render(&as, &o, HTML);
    md3 = render(&as, &o, MD_AT3);
    html2 = render(&as, &o, HTML_AT2);

    OK(starts(csv, "workload,phase,candidate,current,rebuy,instances_per_replica,replicas,"
                   "fleet_instances,"),
       "CSV header");
    OK(has(csv, ",cluster_hours,utilisation_pct,cblock_days,spot_on_demand_replicas,"
                "pricing_basis,purchase,usd_per_hour,"
                "break_even_utilisation_pct,") &&
           has(csv, ",bound,") && has(csv, ",baseline_usd,baseline,like_for_like,"),
       "CSV: cluster-hours, pricing basis, bound, the baseline");
    OK(has(csv, "\n\"chat <b>&\"\"x\"\"| y_z*\",serve,p5.48xlarge,yes,"),
       "CSV quotes the odd name");

    OK(starts(md, "# Migration assessment\n\nFor each workload of `"), "Markdown title");
    OK(has(md, "\n## chat &lt;b&gt;&amp;\"x\"\\| y\\_z\\*\n\n"), "Markdown escapes the name");
    OK(has(md, "llama-3.1-70b serve on p5.48xlarge (us-east-1, on-demand). Current monthly "),
       "Markdown: model, region, purchase");
    OK(has(md, "Load: 12 requests/s x 512 output tokens = 6144 tokens/s; targets: TTFT 2000 ms, "
               "TPOT 60 ms."),
       "Markdown: the load and the targets");
    OK(has(md,
           "\n| Candidate | Instances | Cluster-hours a month | Pricing basis | Bound | Monthly "
           "USD | Against now | Like for like | Break-even (months) | Saving, prices +-20% | "
           "Saving, model error |\n|---|---:|---:|---|---|---:|---:|---|---:|---:|---|\n"),
       "Markdown table heading, numbers right-aligned");
    OK(has(md, " | always on | on-demand, always on | latency: "),
       "serving: always on, Little's law");
    OK(has(md, "\n| p5.48xlarge (current) | "), "Markdown marks the current fleet");
    OK(has(md, "\n| trn3-ultraserver-gen1 | | | | | | | | | | no price: "),
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
    OK(has(html, "Load: 12 requests/s x 512 output tokens = 6144 tokens/s"),
       "HTML: the load, as the Markdown");
    OK(has(html, "<th>Saving, model error</th>"), "HTML: the model error column");
    OK(has(html, " (+-") && has(html, "%)</td>"), "HTML: with the model error percentage");
    OK(has(html, "<td class=\"tip\" title=\"$") && has(html, "/h us-east-1 on-demand, ") &&
           has(html, "\">p5.48xlarge (current)</td>"),
       "HTML: the price used as the candidate's tooltip");
    OK(has(html, "<tr><td>trn3-ultraserver-gen1</td><td class=\"long\" colspan=\"10\">no price: "),
       "HTML: an unpriced row's reason spans the figures");
    OK(has(html, "<li><strong>nvidia</strong> ("), "HTML: risks by chip family");

    OK(starts(md3, "### Migration assessment\n\n") && has(md3, "\n#### chat &lt;b&gt;"),
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

    /* training: the example's 70B fine-tune at 2e9 and 2e10 tokens a month */
    IS_INT(TB_OK, tb_assess_run(&as, finetune, &m, &o, err, sizeof err), "the fine-tune example %s",
           err);
    {
        const struct tb_assess_row *a = row_of(&as, 0, "p5.48xlarge");
        const struct tb_assess_row *b = row_of(&as, 1, "p5.48xlarge");
        const struct tb_assess_row *g = row_of(&as, 0, "g6e.xlarge");
        struct tb_price_choice rsv;
        struct tb_arch arch;
        struct tb_scenario sc;
        struct tb_prediction p, half;
        double usd_per_mtok;
        OK(a->ok && b->ok && g->ok, "p5.48xlarge and g6e.xlarge sized and priced");
        IS_REL(10, b->monthly_usd / a->monthly_usd, 1e-9,
               "ten times the tokens cost ten times as much ($%.2f, $%.2f)", a->monthly_usd,
               b->monthly_usd);
        IS_STRING("on-demand hours", a->basis, "paid by the hour");
        IS_STRING("on-demand", a->purchase, "on-demand");
        /* the smallest layout that holds the model: a->instances, and half of it does not */
        memset(&sc, 0, sizeof sc);
        if (tb_arch_find(&arch, "llama-3.1-70b", err, sizeof err) != 0)
            bail("%s", err);
        sc.arch = &arch;
        sc.inst = tb_pricing_instance(&pr, "p5.48xlarge");
        sc.phase = TB_PHASE_TRAIN;
        sc.precision = "bf16";
        sc.seq_in = 8192;
        sc.instances = a->instances;
        if (tb_model_predict(&m, &sc, &p, err, sizeof err) != 0)
            bail("%s", err);
        sc.instances = a->instances / 2;
        if (a->instances > 1 && tb_model_predict(&m, &sc, &half, err, sizeof err) != 0)
            bail("%s", err);
        OK(a->instances > 1 && p.fits && !half.fits,
           "the cluster is the smallest that holds the model: %ld p5.48xlarge, not %ld",
           a->instances, a->instances / 2);
        IS_INT(a->instances, a->fleet, "and the fleet is that cluster, never fewer instances");
        IS_DOUBLE(p.train_tokens_per_s, a->capacity, 0, "the cluster's tokens/s from the model");
        IS_REL(2e9 / p.train_tokens_per_s / 3600, a->cluster_hours, 1e-12,
               "cluster-hours = 2e9 tokens / its tokens/s (%.2f)", a->cluster_hours);
        IS_REL(a->cluster_hours * (double)a->instances * a->usd_per_hour, a->monthly_usd, 1e-9,
               "cost = cluster-hours x instances x USD/h ($%.2f)", a->monthly_usd);
        /* what the report computes for the same run: usd_per_mtok_train x tokens */
        usd_per_mtok =
            tb_cost_usd_per(a->usd_per_hour * (double)a->instances, p.train_tokens_per_s, 1e6);
        IS_REL(usd_per_mtok * 2e9 / 1e6, a->monthly_usd, 1e-9,
               "the report's usd per Mtok train x tokens agrees ($%.4f/Mtok)", usd_per_mtok);
        IS_REL(as.current_monthly[0], a->monthly_usd, 1e-12, "and is what it costs now");
        if (tb_pricing_target_price(&pr, "p5.48xlarge", "us-east-1", "reserved-3y", &rsv, err,
                                    sizeof err) != 0 ||
            !rsv.have)
            bail("no reserved-3y price for p5.48xlarge: %s", err);
        {
            const struct tb_assess_row *r3 = rebuy_of(&as, 0, "reserved-3y");
            IS_REL(730 * (double)a->instances * rsv.usd_per_hour, r3 ? r3->monthly_usd : NAN, 1e-12,
                   "kept, bought reserved-3y: 730 h x %ld x $%.4g", a->instances, rsv.usd_per_hour);
            OK(starts(as.verdict[0], "keep p5.48xlarge: the spend, $3,527 a month, is under the "
                                     "$10,000 threshold"),
               "under the threshold, said with the figure (%s)", as.verdict[0]);
        }
        OK(g->instances >= 2 && g->fleet == g->instances * (long)g->replicas,
           "g6e.xlarge: a cluster of %ld, never one instance", g->instances);
        IS_REL(g->cluster_hours * (double)g->instances * g->usd_per_hour, g->monthly_usd, 1e-9,
               "priced for all of its instances ($%.2f)", g->monthly_usd);
    }
    tb_assess_release(&as);

    /* reserved clusters where they are cheaper; the baseline bought the same way */
    write_text(pretrain, "name,model,phase,tokens_per_month,seq_in,current_instance\n"
                         "pretrain,llama-3.1-8b,train,200000000000,8192,p5.48xlarge\n");
    IS_INT(TB_OK, tb_assess_run(&as, pretrain, &m, &o, err, sizeof err), "pre-training %s", err);
    {
        const struct tb_assess_row *p5 = row_of(&as, 0, "p5.48xlarge");
        const struct tb_assess_row *r3 = rebuy_of(&as, 0, "reserved-3y");
        const struct tb_assess_row *rp4d = row_of(&as, 0, "p4d.24xlarge");
        const struct tb_assess_row *b200 = row_of(&as, 0, "p6-b200.48xlarge");
        const struct tb_assess_row *t2 = row_of(&as, 0, "trn2.48xlarge");
        double now = tb_cost_train_usd(2e11, p5->capacity, 55.04 * (double)p5->instances);
        char want[256];
        IS_STRING("on-demand hours", p5->basis, "the current row is bought as now: on-demand");
        IS_REL(now, p5->monthly_usd, 1e-12, "and costs what it costs now");
        IS_REL(now, as.current_monthly[0], 1e-12, "what it costs now: on-demand hours ($%.0f)",
               now);
        OK(r3 && r3->committed, "the current instance bought reserved-3y: a row of its own");
        IS_STRING("reserved-3y, 1 cluster always on", r3 ? r3->basis : "", "the basis says so");
        IS_REL(730 * 23.777 * (double)p5->instances, r3 ? r3->monthly_usd : NAN, 1e-12,
               "730 h x $23.777 for the month");
        /* trn2 by Capacity Blocks: whole days, 7-day steps past 14 (tb_pricing_cblock) */
        {
            double h = t2->cluster_hours, days = ceil(h / 24);
            days = days > 14 ? 7 * ceil(days / 7) : days;
            OK(t2->ok && !strcmp(t2->purchase, "capacity-block"),
               "trn2.48xlarge is bought as Capacity Blocks (%s)", t2->basis);
            IS_DOUBLE(days, t2->cblock_days, 0, "%.1f cluster-hours buy %.0f whole days", h, days);
            IS_REL(days * 24 * 35.7608 * (double)t2->instances, t2->monthly_usd, 1e-12,
                   "paid up front: %.0f days x 24 h x %ld x $35.7608 = $%.2f", days, t2->instances,
                   t2->monthly_usd);
            IS_REL(h / (days * 24), t2->utilisation, 1e-12, "and uses %.0f%% of them",
                   100 * t2->utilisation);
            OK(has(t2->basis, "days x 1 instance bought up front, ") && has(t2->basis, "% used"),
               "the basis says the days bought and the share used (%s)", t2->basis);
            /* issue 1: p5 reserved-3y ($17,357) is cheaper than trn2 (~$18,023), which is
             * cheaper than p5 on-demand: keep p5, bought differently, said first */
            OK(r3 && r3->monthly_usd < t2->monthly_usd && t2->monthly_usd < p5->monthly_usd,
               "the case: p5 reserved-3y < trn2 < p5 on-demand");
            snprintf(want, sizeof want, "keep p5.48xlarge, buy it as reserved-3y: $%s a month",
                     "17,357");
            OK(starts(as.verdict[0], want), "the verdict keeps p5 bought as reserved-3y (%s)",
               as.verdict[0]);
            OK(has(as.verdict[0], "below trn2.48xlarge's $18,023, the cheapest move") &&
                   !has(as.verdict[0], "worth a pilot"),
               "below trn2's figure, and no pilot");
        }
        OK(rp4d->ok && rp4d->committed && !strcmp(rp4d->purchase, "reserved-3y"),
           "p4d.24xlarge is bought reserved-3y (%s)", rp4d->basis);
        IS_STRING("p5.48xlarge reserved-3y in us-east-1", rp4d->base_basis,
                  "its baseline: the current fleet under reserved-3y");
        IS_DOUBLE(r3 ? r3->monthly_usd : NAN, rp4d->base_usd, 1e-6,
                  "bought the same way, reserved");
        OK(rp4d->like_for_like, "like for like");
        IS_STRING("on-demand hours", b200->basis, "p6-b200 has no commitment price: by the hour");
        IS_DOUBLE(now, b200->base_usd, 1e-6, "and is compared with the on-demand hours");
        IS_DOUBLE(b200->base_usd - b200->monthly_usd, b200->like_saving_usd, 1e-9,
                  "its saving against that baseline, like for like");
        IS_DOUBLE(now - b200->monthly_usd, b200->saving_usd, 1e-9, "and against now");
        /* the model's error moves an hourly training cost: never a zero-width range */
        OK(b200->saving_lo_model < b200->saving_usd && b200->saving_usd < b200->saving_hi_model,
           "the model-error range has width: %.0f to %.0f", b200->saving_lo_model,
           b200->saving_hi_model);
    }
    tb_assess_release(&as);

    /* images on p4d on-demand: never compared at spot or Capacity Blocks (issue 1) */
    write_text(cblock, "name,model,phase,images_per_month,steps,resolution,current_instance\n"
                       "images,sdxl,denoise,2000000,30,1024,p4d.24xlarge\n");
    IS_INT(TB_OK, tb_assess_run(&as, cblock, &m, &o, err, sizeof err), "images %s", err);
    {
        const struct tb_assess_row *t2 = row_of(&as, 0, "trn2.48xlarge");
        size_t bad_rows = 0, flat = 0;
        for (size_t i = 0; i < as.nrows; i++) {
            const struct tb_assess_row *r = &as.rows[i];
            if (r->ok && (!strcmp(r->purchase, "spot") || !strcmp(r->purchase, "capacity-block")))
                bad_rows++;
            if (r->ok && !r->current && r->model_err > 0 &&
                !(r->saving_lo_model < r->saving_hi_model) && !starts(r->model_note, "no change: "))
                flat++;
        }
        IS_INT(0, (long long)bad_rows, "no always-on row is priced at spot or capacity-block");
        OK(!t2->ok && has(t2->why, "capacity-block and spot are no basis for an always-on fleet"),
           "trn2.48xlarge is not compared at spot, and says why (%s)", t2->why);
        IS_INT(0, (long long)flat, "a zero-width model-error range always says why");
        OK(!has(as.verdict[0], "-1") && !has(as.verdict[0], "%)"), "no negative percentage (%s)",
           as.verdict[0]);
    }
    tb_assess_release(&as);

    /* an always-on fleet as Capacity Blocks, or on spot without a reserve: input errors */
    write_text(cblock,
               "name,model,phase,requests_per_s,seq_in,seq_out,current_instance,"
               "current_purchase,region\n"
               "bot,llama-3.1-8b,serve,30,1024,256,g6e.48xlarge,capacity-block,us-east-2\n");
    IS_INT(TB_EINPUT, tb_assess_run(&as, cblock, &m, &o, err, sizeof err),
           "serving bought as Capacity Blocks");
    OK(has(err, "line 2: field 'current_purchase': Capacity Blocks end"), "said (%s)", err);
    write_text(cblock, "name,model,phase,requests_per_s,seq_in,seq_out,current_instance,"
                       "current_purchase\n"
                       "bot,llama-3.1-8b,serve,30,1024,256,p5.48xlarge,spot\n");
    IS_INT(TB_EINPUT, tb_assess_run(&as, cblock, &m, &o, err, sizeof err), "spot, no reserve");
    OK(has(err, "line 2: field 'spot_reserve': missing: spot capacity is reclaimed"), "said (%s)",
       err);
    write_text(cblock, "name,model,phase,requests_per_s,seq_in,seq_out,current_instance,"
                       "current_purchase,spot_reserve\n"
                       "bot,llama-3.1-8b,serve,30,1024,256,p5.48xlarge,on-demand,0.5\n");
    IS_INT(TB_EINPUT, tb_assess_run(&as, cblock, &m, &o, err, sizeof err), "a reserve, no spot");
    OK(has(err, "field 'spot_reserve': only with current_purchase spot"), "said (%s)", err);
    write_text(cblock, "name,model,phase,requests_per_s,seq_in,seq_out,current_instance,"
                       "current_purchase,spot_reserve\n"
                       "bot,llama-3.1-8b,serve,30,1024,256,p5.48xlarge,spot,1.5\n");
    IS_INT(TB_EINPUT, tb_assess_run(&as, cblock, &m, &o, err, sizeof err), "a reserve over 1");
    OK(has(err, "field 'spot_reserve': expected a number in [0, 1]"), "said (%s)", err);
    write_text(cblock, "name,model,phase,requests_per_s,seq_in,seq_out,current_instance,"
                       "current_purchase,spot_reserve\n"
                       "bot,llama-3.1-8b,serve,300,1024,256,g6e.xlarge,spot,0.25\n");
    IS_INT(TB_OK, tb_assess_run(&as, cblock, &m, &o, err, sizeof err), "spot with a reserve %s",
           err);
    {
        const struct tb_assess_row *g = row_of(&as, 0, "g6e.xlarge");
        struct tb_price_choice sp, od;
        double odr;
        if (tb_pricing_target_price(&pr, "g6e.xlarge", "us-east-1", "spot", &sp, err, sizeof err) !=
                0 ||
            tb_pricing_target_price(&pr, "g6e.xlarge", "us-east-1", "on-demand", &od, err,
                                    sizeof err) != 0 ||
            !sp.have || !od.have)
            bail("no spot or on-demand price for g6e.xlarge: %s", err);
        odr = ceil(0.25 * g->replicas - 1e-9);
        OK(g->ok && g->replicas >= 2, "g6e.xlarge: %.0f replicas", g->replicas);
        IS_DOUBLE(odr, g->od_replicas, 0, "ceil(0.25 x %.0f) = %.0f of them on on-demand",
                  g->replicas, odr);
        IS_REL(730 * (double)g->instances *
                   (odr * od.usd_per_hour + (g->replicas - odr) * sp.usd_per_hour),
               g->monthly_usd, 1e-12, "priced %.0f on-demand + the rest at spot ($%.2f)", odr,
               g->monthly_usd);
        OK(has(g->basis, "replicas on on-demand (spot_reserve 0.25)"), "said (%s)", g->basis);
    }
    tb_assess_release(&as);

    /* input errors: TB_EINPUT naming file, line and field; nothing assessed */
    write_text(
        badcol,
        "name,model,phase,current_instance,ttft_ms_limt\nx,llama-3.1-8b,serve,p5.48xlarge,1\n");
    IS_INT(TB_EINPUT, tb_assess_run(&as, badcol, &m, &o, err, sizeof err), "a misspelt column");
    OK(has(err, "assess_badcol.csv: line 1: unknown column 'ttft_ms_limt' (did you mean "
                "'ttft_limit_ms'?)"),
       "names file, line 1, the column and the closest known (%s)", err);
    write_text(badcol, "name,model,phase,current_instance,ttft_ms,ttft_limit_ms\nx,llama-3.1-8b,"
                       "serve,p5.48xlarge,1,1\n");
    IS_INT(TB_EINPUT, tb_assess_run(&as, badcol, &m, &o, err, sizeof err), "old and new names");
    OK(has(err, "line 1: columns 'ttft_ms' and 'ttft_limit_ms' both given"), "said (%s)", err);
    write_text(badcol, "name,model,phase,current_instance,region,region\nx,llama-3.1-8b,"
                       "serve,p5.48xlarge,us-east-1,us-east-1\n");
    IS_INT(TB_EINPUT, tb_assess_run(&as, badcol, &m, &o, err, sizeof err), "a column twice");
    OK(has(err, "line 1: column 'region' given twice"), "said (%s)", err);
    write_text(badcol, "name,model,phase,requests_per_s,seq_in,seq_out,current_instance\n"
                       "x,llama-3.1-8b,serve,1e18,512,128,p5.48xlarge\n");
    IS_INT(TB_EINPUT, tb_assess_run(&as, badcol, &m, &o, err, sizeof err), "1e18 requests/s");
    OK(has(err, "assess_badcol.csv: line 2: field 'requests_per_s': expected a number in [0, "
                "1e9] (requests/s), got '1e18'"),
       "refused, naming the field and its range (%s)", err);
    IS_INT(0, (long long)as.nrows, "and no rows");
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
    free(finetune);
    free(pretrain);
    free(cblock);
    free(badcol);
    return 0;
}
