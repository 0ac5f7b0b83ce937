/* harness/report/report.c: the report stage (see tb_report.h): results, prices and
 * costs in, report.md, report.html and cost.csv out. Reads and checks every input first
 * (tb_results_load, tb_pricing_load, tb_costs_build), then draws the charts (charts.c)
 * and writes the documents into a scratch folder, then renames (publish.c). The Markdown
 * and HTML come from the same calls (struct tb_doc writes both), so they always say the
 * same thing. The assessment section renders what the caller assessed (tb_assess.h); the
 * report calls the performance model only for its validation error (the ranges of the
 * modeled figures). */
#include "tb_report.h"

#include "report_impl.h"
#include "tb_assess.h"
#include "tb_cost.h"
#include "tb_doc.h"
#include "tb_pricing.h"
#include "tb_results.h"
#include "tb_scenario.h"
#include "tb_util.h"
#include "tb_vocab.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the report text ---- */

/* A chart in both documents: a link to its SVG (and PNG) in Markdown, the SVG itself in
 * the HTML (which = its index, so the charts' element ids stay apart). */
static void doc_figure(struct tb_doc *d, const struct tb_report_chart *ch, int which)
{
    tb_sb_puts(&d->md, "![");
    tb_sb_md(&d->md, ch->caption);
    tb_sb_printf(&d->md, "](%s.svg)", ch->name);
    if (ch->png)
        tb_sb_printf(&d->md, " (PNG: [%s.png](%s.png))", ch->name, ch->name);
    tb_sb_puts(&d->md, "\n\n");
    tb_sb_puts(&d->html, "<figure>\n");
    tb_doc_inline_svg(&d->html, ch->svg, which, ch->caption);
    tb_sb_puts(&d->html, "<figcaption>");
    tb_sb_html(&d->html, ch->caption);
    tb_sb_printf(&d->html, " (files: %s.svg", ch->name);
    if (ch->png)
        tb_sb_printf(&d->html, ", %s.png", ch->name);
    tb_sb_puts(&d->html, ")</figcaption>\n</figure>\n");
}

/* Dollars as the table has them, with at least cents: 21.50, 1.34375, 63.296. */
static const char *fmt_usd(double v, char *buf, size_t len)
{
    if (fabs(v * 100 - round(v * 100)) < 1e-9)
        snprintf(buf, len, "%.2f", v);
    else
        snprintf(buf, len, "%.10g", v);
    return buf;
}

static void price_text(const struct tb_price_choice *c, char *buf, size_t len)
{
    char h[32];
    if (!c->have) {
        snprintf(buf, len, "no price: %s", c->why);
        return;
    }
    if (c->line)
        snprintf(buf, len, "$%s/h: %s, %s, %s, as of %s (prices.csv line %ld); source: %s",
                 fmt_usd(c->usd_per_hour, h, sizeof h), c->instance, c->region, c->purchase,
                 c->as_of, c->line, c->source);
    else
        snprintf(buf, len, "$%s/h: %s%s%s%s%s, %s, given %s", fmt_usd(c->usd_per_hour, h, sizeof h),
                 c->instance, *c->region ? ", " : "", c->region, *c->purchase ? ", " : "",
                 c->purchase, c->source, c->as_of);
}

static void write_context(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"What", "Value"};
    char v[1024], w[1024], price[1200];
    const char *cells[2];
    size_t nm = tb_report_count(R, TB_PROV_MEASURED), ni = tb_report_count(R, TB_REPORT_IMPORTED);

    tb_doc_h(d, 2, "Where, when, what");
    tb_doc_fold_begin(d, "The models, the hosts, the build, the compiler and the price of the "
                         "host");
    tb_doc_table(d, "tt", head);
#define ROW(k, val)                                                                                \
    do {                                                                                           \
        cells[0] = (k);                                                                            \
        cells[1] = (val);                                                                          \
        tb_doc_row(d, cells);                                                                      \
    } while (0)
    tb_report_distinct(R, -1, "model", v, sizeof v);
    ROW("Models", v);
    snprintf(w, sizeof w,
             "%zu measured here, %zu measured elsewhere and imported, %zu modeled, %zu "
             "published",
             nm, ni, R->res.nprov[TB_PROV_MODELED], R->res.nprov[TB_PROV_PUBLISHED]);
    ROW("Result rows", w);
    if (ni) {
        tb_report_distinct(R, TB_REPORT_IMPORTED, "source", v, sizeof v);
        ROW("Imported (measured by teams with their own tools, not run by trnbench)", v);
        tb_report_time_span(R, TB_REPORT_IMPORTED, v, sizeof v);
        ROW("Imported rows measured", v);
    }
    if (nm) {
        tb_report_distinct(R, TB_PROV_MEASURED, "host", v, sizeof v);
        ROW("Host (measured rows)", *v ? v : "not recorded");
        tb_report_time_span(R, TB_PROV_MEASURED, v, sizeof v);
        ROW("Measured", v);
        tb_report_distinct(R, TB_PROV_MEASURED, "commit", v, sizeof v);
        ROW("trnbench commit", *v ? v : "not recorded");
        tb_report_distinct(R, TB_PROV_MEASURED, "compiler", v, sizeof v);
        ROW("Compiler", *v ? v : "not recorded");
        tb_report_distinct(R, TB_PROV_MEASURED, "cflags", v, sizeof v);
        ROW("Compiler flags", *v ? v : "not recorded");
        tb_report_distinct(R, TB_PROV_MEASURED, "blas", v, sizeof v);
        ROW("BLAS", *v ? v : "not recorded");
        tb_report_counters(R, v, sizeof v);
        ROW("Hardware counters", v);
    }
    price_text(&R->cs.host, price, sizeof price);
    ROW("Price of the host", price);
    snprintf(w, sizeof w, "%s by trnbench %s", R->now, tb_version_commit());
    ROW("Report written", w);
#undef ROW
    tb_doc_table_end(d);
    tb_doc_fold_end(d);
}

static void write_runs(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"Provenance", "Target", "Model", "Phase", "Precision",
                                       "Shape",      "Metric", "Value", "Unit",  "Spread (min-max)",
                                       "n"};
    tb_doc_h(d, 2, "Runs");
    tb_doc_fold_begin(d, "Every result row: its provenance, target, model, shape, metric, "
                         "value and spread");
    tb_doc_p(d, NULL,
             "One row per metric. Measured values are the median of n timed repetitions; "
             "the spread is the fastest to the slowest of them. Rows that were not "
             "measured here say so in the Provenance column.");
    tb_doc_table(d, "ptttttcntnn", head);
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *x = &R->res.rows[i];
        char shape[96], val[32], lo[32], hi[32], spread[80], n[24];
        const char *cells[11];
        tb_report_shape(x, shape, sizeof shape);
        tb_report_num(x->value, val, sizeof val);
        spread[0] = '\0';
        if (!isnan(x->min) && !isnan(x->max))
            snprintf(spread, sizeof spread, "%s - %s", tb_report_num(x->min, lo, sizeof lo),
                     tb_report_num(x->max, hi, sizeof hi));
        n[0] = '\0';
        if (x->n >= 0)
            snprintf(n, sizeof n, "%ld", x->n);
        cells[0] = tb_report_prov_label(x);
        cells[1] = F(x, "target");
        cells[2] = F(x, "model");
        cells[3] = F(x, "phase");
        cells[4] = F(x, "precision");
        cells[5] = shape;
        cells[6] = F(x, "metric");
        cells[7] = val;
        cells[8] = F(x, "unit");
        cells[9] = spread;
        cells[10] = n;
        tb_doc_row(d, cells);
    }
    tb_doc_table_end(d);
    tb_doc_fold_end(d);
}

/* Where a row's number comes from, for a tooltip: provenance, where, when, what. */
static void prov_tip(const struct tb_result *x, char *buf, size_t len)
{
    if (tb_report_imported(x))
        snprintf(buf, len,
                 "measured elsewhere and imported, not run by trnbench: %s; %.500s; %s line %ld",
                 F(x, "source"), F(x, "notes"), x->t->path, tb_result_line(x));
    else if (x->prov == TB_PROV_MEASURED)
        snprintf(buf, len,
                 "measured on %s (%s executor) at %s by trnbench %s; median of %ld timed "
                 "repetitions after %ld warm-up; %s line %ld",
                 F(x, "host"), F(x, "executor"), F(x, "timestamp"), F(x, "commit"), x->n,
                 x->warmup < 0 ? 0 : x->warmup, x->t->path, tb_result_line(x));
    else
        snprintf(buf, len, "%s: %s%s%.300s; %s line %ld", tb_provenance_to_string(x->prov),
                 F(x, "source"), *F(x, "notes") ? "; " : "", F(x, "notes"), x->t->path,
                 tb_result_line(x));
}

/* A cost cell's tooltip: the row's provenance and the price used. */
static void cost_tip(const struct tb_cost *c, char *buf, size_t len)
{
    char prov[900], price[1200], used[64], share[160] = "";
    double h = tb_cost_charged(c->row, c->price);
    prov_tip(c->row, prov, sizeof prov);
    price_text(tb_cost_shown_price(c) ? tb_cost_shown_price(c) : &c->price->c, price, sizeof price);
    tb_cost_charged_text(c->row, c->price, used, sizeof used);
    if (h != (double)c->row->instances)
        snprintf(share, sizeof share, "; charged %.4g of the instance-hour (%s)", h, used);
    if (snprintf(buf, len, "%s. Price [%d]%s%s: %s%s%s%s", prov, c->price->ref,
                 tb_cost_stand_in(c) ? ", its nearest comparable (none at the chosen prices): "
                                     : "",
                 tb_cost_stand_in(c) ? c->price->cmp_basis : "", price, share,
                 *c->price->flag ? "; " : "", c->price->flag) >= (int)len)
        buf[len - 1] = '\0'; /* a tooltip cut short is still one */
}

/* A cost as the tables show it: at the chosen price, or "1.955 *" at the nearest
 * comparable price (tb_cost_shown); "" without either. */
static const char *shown_text(const struct tb_cost *c, double usd, char *buf, size_t len)
{
    char n[32];
    if (!tb_cost_positive(usd))
        buf[0] = '\0';
    else
        snprintf(buf, len, "%s%s", tb_report_num(usd, n, sizeof n),
                 tb_cost_stand_in(c) ? "\u00a0*" : "");
    return buf;
}

/* "modeled, price [3]" (Markdown and HTML cells both). */
static void prov_cell(const struct tb_cost *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s, price [%d]%s%s%s", tb_report_prov_label(c->row), c->price->ref,
             *c->price->flag ? " (flagged)" : "", tb_cost_stand_in(c) ? " * " : "",
             tb_cost_stand_in(c) ? c->price->cmp_basis : "");
}

static const char *unit_of(const char *metric)
{
    return !strcmp(metric, "usd_per_kimage")       ? "USD per 1000 images"
           : !strcmp(metric, "usd_per_mtok_out")   ? "USD per 1M output tokens"
           : !strcmp(metric, "usd_per_mtok_train") ? "USD per 1M training tokens"
                                                   : "USD per 1M tokens";
}

/* ---- the summary: one sentence per workload, then savings like for like ---- */

/* Whether the range of v spans no saving: the model cannot tell the two apart. */
static bool within_error(const struct tb_cost_versus *v)
{
    return v->plo <= 1 && v->phi >= 1 && v->plo < v->phi;
}

/* "saves 23%" (less than the baseline) or "43% more"; over twice the baseline's cost, the
 * multiple ("2.9x the cost", "31x the cost"), not "-185%" or "-3003%". */
static const char *saving_text(double perf, char *buf, size_t len)
{
    if (perf > 0 && perf < 0.5)
        snprintf(buf, len, 1 / perf < 9.95 ? "%.1fx the cost" : "%.0fx the cost", 1 / perf);
    else if (perf >= 1)
        snprintf(buf, len, "saves %.0f%%", (1 - 1 / perf) * 100);
    else
        snprintf(buf, len, "%.0f%% more", (1 / perf - 1) * 100);
    return buf;
}

/* "saves 10% (1.11x; 0.62x to 1.80x: within the model's error)" or "costs 77% more (0.56x;
 * ...)": price-performance against the baseline in words, with its range. */
static void verdict_text(const struct tb_cost_versus *v, char *buf, size_t len)
{
    int n;
    if (v->perf >= 1)
        n = snprintf(buf, len, "saves %.0f%% (%.2fx", (1 - 1 / v->perf) * 100, v->perf);
    else
        n = snprintf(buf, len, "costs %.0f%% more (%.2fx", (1 / v->perf - 1) * 100, v->perf);
    if (n < 0 || (size_t)n >= len)
        return;
    if (tb_cost_positive(v->plo) && v->plo < v->phi)
        snprintf(buf + n, len - (size_t)n, "; %.2f-%.2fx%s)", v->plo, v->phi,
                 within_error(v) ? ": within the model's error" : "");
    else
        snprintf(buf + n, len - (size_t)n, ")");
}

/* Whether a target's chips are AWS's own (Trainium, Inferentia). */
static bool aws_silicon(const struct report *R, const char *target)
{
    const struct tb_instance *in = tb_pricing_instance(&R->pricing, target);
    const struct tb_chip *chip = in ? tb_pricing_chip(&R->pricing, in->chip) : NULL;
    return chip && !strcmp(chip->vendor, "AWS");
}

/* The distinct targets of the compared rows, in results order (at most max). */
static size_t compared_targets(const struct report *R, const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < R->cs.ncosts; i++) {
        const struct tb_cost *c = &R->cs.costs[i];
        const char *t = F(c->row, "target");
        bool seen = false;
        if (c->host_cpu || c->led || !strcmp(c->metric, "usd_per_mtok_total"))
            continue;
        for (size_t k = 0; k < n && !seen; k++)
            seen = !strcmp(out[k], t);
        if (!seen && n < max)
            out[n++] = t;
    }
    return n;
}

/* Whether w has a row that is compared (not only the host CPU's). */
static bool compared_workload(const struct report *R, const struct tb_cost_rank *w)
{
    for (size_t i = 0; i < R->cs.ncosts; i++)
        if (tb_cost_of_workload(&R->cs.costs[i], w->workload, w->metric) &&
            !R->cs.costs[i].host_cpu)
            return true;
    return false;
}

/* Where a saving rests on a weak price (prices.csv status secondary: known only through a
 * secondary summary), say so beside it with the price at which the answer flips
 * (tb_cost_flip_rate), so a team can hold its own quote against it: "; trn2.48xlarge's
 * price here, $35.7608/h (capacity-block in us-east-2, prices.csv line 31), rests on a
 * secondary source: it stays cheaper than p5.48xlarge up to $47.65/h ($27.80/h at the low
 * end of the model's error); p5.48xlarge's, $41.528/h (line 88), too: trn2.48xlarge stays
 * cheaper while that is above $31.17/h". Nothing when both prices are strong (listed, or
 * the user's own). */
static void say_weak_price(struct tb_doc *d, const char *target, const char *base,
                           const struct tb_cost_versus *v)
{
    const struct tb_price_choice *tp = &v->c->price->cmp, *bp = &v->c->price->bcmp;
    double flip = tb_cost_flip_rate(tp->usd_per_hour, v->usd, v->base);
    double bflip = tb_cost_flip_rate(bp->usd_per_hour, v->base, v->usd);
    bool cheaper = v->perf >= 1;
    char h[32];
    if (tp->secondary && tb_cost_positive(flip)) {
        tb_doc_text(d, "; ");
        tb_doc_code(d, target);
        tb_doc_text(d,
                    "'s price here, $%s/h (%s in %s, prices.csv line %ld), rests on a secondary "
                    "source: it %s ",
                    fmt_usd(tp->usd_per_hour, h, sizeof h), tp->purchase, tp->region, tp->line,
                    cheaper ? "stays cheaper than" : "would be cheaper than");
        tb_doc_code(d, base);
        tb_doc_text(d, "%s$%.2f/h", cheaper ? " up to " : " below ", flip);
        /* the price-performance at the low end of its range: rate x plo */
        if (tb_cost_positive(v->plo) && v->plo < v->phi)
            tb_doc_text(d, " ($%.2f/h at the low end of the model's error)",
                        tb_cost_flip_rate(tp->usd_per_hour, v->usd, v->usd * v->plo));
    }
    if (bp->secondary && tb_cost_positive(bflip)) {
        tb_doc_text(d, "; ");
        tb_doc_code(d, base);
        if (tp->secondary && tb_cost_positive(flip))
            tb_doc_text(d, "'s, $%s/h (line %ld), too: ", fmt_usd(bp->usd_per_hour, h, sizeof h),
                        bp->line);
        else
            tb_doc_text(d,
                        "'s price here, $%s/h (%s in %s, prices.csv line %ld), rests on a "
                        "secondary source: ",
                        fmt_usd(bp->usd_per_hour, h, sizeof h), bp->purchase, bp->region, bp->line);
        tb_doc_code(d, target);
        tb_doc_text(d, "%s$%.2f/h",
                    cheaper ? " stays cheaper while that is above "
                            : " would be cheaper were that above ",
                    bflip);
    }
}

/* One target's figures in a sentence: "trn2.48xlarge 2.33 at capacity-block in us-east-2
 * (no on-demand price in us-east-1), saves 10% against p5.48xlarge there (1.11x; 0.62x to
 * 1.80x: within the model's error)"; a measured row says so and what the model said. */
static void say_versus(struct tb_doc *d, const struct report *R, const char *target,
                       const struct tb_cost_versus *v)
{
    char n1[32], n2[32], verdict[160];
    const struct tb_cost *c = v->c;
    tb_doc_code(d, target);
    tb_doc_text(d, " %s", tb_report_num(v->usd, n1, sizeof n1));
    if (c->row->prov == TB_PROV_MEASURED)
        tb_doc_text(d, " (%s%s%s)", tb_report_prov_label(c->row),
                    c->twin ? "; the model said " : "",
                    c->twin ? tb_report_num(c->twin->cmp_usd, n2, sizeof n2) : "");
    if (!c->price->cmp_chosen) {
        tb_doc_text(d, " at ");
        tb_doc_strong(d, c->price->cmp_basis);
        if (c->price->c.have)
            tb_doc_text(d, " (the baseline has none at the chosen prices)");
        else
            tb_doc_text(d, " (no %s in %s)", R->o->purchase ? R->o->purchase : "on-demand",
                        R->o->region ? R->o->region : "us-east-1");
    }
    if (v->b == c) {
        tb_doc_text(d, ", the baseline");
        return;
    }
    if (!c->price->cmp_have) {
        tb_doc_text(d, " (%s)", c->price->cmp_basis);
        return;
    }
    if (!tb_cost_positive(v->perf)) {
        tb_doc_text(d, ", no baseline row to compare");
        return;
    }
    verdict_text(v, verdict, sizeof verdict);
    tb_doc_text(d, ", against %s's %s there: %s", R->cs.o.baseline,
                tb_report_num(v->base, n2, sizeof n2), verdict);
    say_weak_price(d, target, R->cs.o.baseline, v);
}

/* The targets with rows but no price to compare, at the chosen prices or any comparable
 * (costs of the host CPU aside): "trn3-ultraserver-gen1 (no listed price under any
 * ...)", once for the summary. */
static void say_unpriced(struct tb_doc *d, const struct report *R)
{
    size_t n = 0;
    for (size_t i = 0; i < R->cs.ntp; i++) {
        const struct tb_cost_price *p = &R->cs.tp[i];
        bool used = false;
        for (size_t k = 0; k < R->cs.ncosts && !used; k++)
            used = R->cs.costs[k].price == p && !R->cs.costs[k].host_cpu;
        if (!used || p->cmp_have || p->c.have)
            continue;
        if (!n++)
            tb_doc_p_begin(d, NULL);
        tb_doc_text(d, n > 1 ? "; " : "No price to compare: ");
        tb_doc_code(d, p->target);
        tb_doc_text(d, " (%s)",
                    tb_pricing_instance(&R->pricing, p->target) ? p->cmp_basis : p->c.why);
    }
    if (n) {
        tb_doc_text(d, ".");
        tb_doc_p_end(d);
    }
}

/* Savings plans, said once: AWS publishes no machine-readable rate for them, so a
 * savings-plan price here is the user's own discount (--discount) or a table row a user
 * imported; each discount given is named as the user's. Nothing when the compared
 * targets have a table savings-plan price and no discount was given. */
static void say_savings_plans(struct tb_doc *d, const struct report *R, const char **targets,
                              size_t nt)
{
    static const char *const sp[] = {"savings-plan-1y", "savings-plan-3y"};
    const struct tb_pricing_discounts *ds = &R->pricing.discounts;
    bool table = false;
    char label[96];
    for (size_t i = 0; i < nt && !table; i++)
        for (size_t k = 0; k < 2 && !table; k++) {
            struct tb_price_choice pc;
            char e[256];
            table = tb_costs_nearest_price(&R->cs, targets[i], sp[k], &pc, e, sizeof e) == 0 &&
                    pc.have && pc.line && !(pc.discount > 0);
        }
    if (table && ds->n == 0)
        return;
    tb_doc_p_begin(d, NULL);
    if (!table)
        tb_doc_text(d, "AWS publishes no machine-readable savings-plan rate for these instances");
    for (size_t i = 0; i < ds->n; i++) {
        tb_pricing_discount_text(&ds->d[i], label, sizeof label);
        tb_doc_text(d, "%s%s prices here are the ", i || !table ? "; " : "", ds->d[i].purchase);
        tb_doc_strong(d, label);
        tb_doc_text(d, " (--discount %s=%g), not a published rate", ds->d[i].purchase,
                    ds->d[i].fraction);
    }
    if (!table && !tb_pricing_discount_of(ds, sp[0]) && !tb_pricing_discount_of(ds, sp[1]))
        tb_doc_text(d, "; enter yours with --discount savings-plan-1y=FRACTION (the fraction "
                       "off on-demand) or --usd-per-hour");
    tb_doc_text(d, ".");
    tb_doc_p_end(d);
}

/* The baseline bought each way it is sold (the chosen region, else the nearest with a
 * price): " Bought otherwise, p5.48xlarge is cheapest as reserved-3y (us-east-1): 1.491
 * (spot 0.9016, interruptible)." Said when a way other than the chosen one is cheaper;
 * spot is never the cheapest way, only named beside it. */
static void say_baseline_bought(struct tb_doc *d, const struct report *R,
                                const struct tb_cost_rank *w, bool ok)
{
    const char *order[TB_COST_NPURCHASE], *want = R->o->purchase ? R->o->purchase : "on-demand";
    struct tb_price_choice best = {0}, spot = {0};
    double best_usd = NAN, spot_usd = NAN, chosen_usd = NAN;
    char err[256], n1[32], n2[32];
    tb_cost_purchase_order(want, order);
    for (size_t k = 0; k < TB_COST_NPURCHASE; k++) {
        struct tb_price_choice pc;
        double u, lo, hi;
        if (tb_costs_nearest_price(&R->cs, R->cs.o.baseline, order[k], &pc, err, sizeof err) != 0 ||
            !pc.have ||
            !tb_costs_base_at(&R->cs, w->workload, w->metric, pc.usd_per_hour, ok, &u, &lo, &hi) ||
            !tb_cost_positive(u))
            continue;
        if (!strcmp(order[k], want) &&
            !strcmp(pc.region, R->o->region ? R->o->region : "us-east-1"))
            chosen_usd = u;
        if (!strcmp(order[k], "spot")) {
            spot = pc;
            spot_usd = u;
        } else if (isnan(best_usd) || u < best_usd) {
            best = pc;
            best_usd = u;
        }
    }
    if (isnan(best_usd) || (!isnan(chosen_usd) && best_usd >= chosen_usd))
        return;
    tb_doc_text(d, " Bought otherwise, ");
    tb_doc_code(d, R->cs.o.baseline);
    tb_doc_text(d, " is cheapest as %s in %s: %s%s", best.purchase, best.region,
                tb_report_num(best_usd, n1, sizeof n1),
                !strcmp(best.purchase, "capacity-block")
                    ? " (Capacity Blocks: fixed dates, paid up front, not an always-on fleet)"
                    : "");
    if (!isnan(spot_usd))
        tb_doc_text(d, "; spot in %s %s, interruptible", spot.region,
                    tb_report_num(spot_usd, n2, sizeof n2));
    tb_doc_text(d, ".");
}

/* Where the model cannot tell (v's range spans no saving): the cheapest measurement that
 * would settle it, on the side with the wider error band: which instance, which command,
 * for about how long and what that costs at its shown price. */
static void say_settle(struct tb_doc *d, const struct tb_cost_versus *v)
{
    const struct tb_cost *m = v->b && v->b->err > v->c->err ? v->b : v->c;
    const struct tb_price_choice *p = tb_cost_shown_price(m);
    const char *phase = F(m->row, "phase"), *fam = m->price->family;
    bool neuron = strstr(fam, "Trainium") || strstr(fam, "Inferentia");
    double hours = neuron ? 2 : 1; /* a sweep of loads, plus Neuron's compile */
    char cmd[400], n1[32];
    if (!within_error(v) || m->row->prov != TB_PROV_MODELED || !p)
        return;
    cmd[0] = '\0'; /* none: no trnbench executor runs this phase on Neuron devices yet */
    if (!strcmp(phase, "serve"))
        snprintf(cmd, sizeof cmd,
                 "trnbench run --recipe vllm --model %s --seq-in %s --seq-out %s "
                 "--concurrency 1,8,64 --out DIR",
                 F(m->row, "model"), F(m->row, "seq_in"), F(m->row, "seq_out"));
    else if (!strcmp(phase, "train"))
        snprintf(cmd, sizeof cmd,
                 "trnbench run --executor pytorch --model %s --phase train --seq-in %s --out DIR",
                 F(m->row, "model"), F(m->row, "seq_in"));
    else if (!neuron)
        snprintf(cmd, sizeof cmd, "trnbench run --executor cuda --model %s --phase %s --out DIR",
                 F(m->row, "model"), phase);
    tb_doc_text(d, " The model alone cannot tell which is cheaper; a measurement would settle it: "
                   "the same workload on one ");
    tb_doc_code(d, F(m->row, "target"));
    if (*cmd) {
        tb_doc_text(d, " (");
        tb_doc_code(d, cmd);
        tb_doc_text(d, ", then --results DIR/results.csv here)");
    } else {
        tb_doc_text(d,
                    " with the vendor's own stack (trnbench runs no %s on Neuron devices yet), "
                    "its figures added as a measured results.csv row with ",
                    phase);
        tb_doc_code(d, "--results FILE");
    }
    tb_doc_text(d, ", about %.0f hour%s%s, about %s USD at %s in %s.", hours, hours == 1 ? "" : "s",
                neuron ? " with the Neuron compile" : "",
                tb_report_num(hours * p->usd_per_hour, n1, sizeof n1), p->purchase, p->region);
}

/* The summary's sentence for one workload: the cheapest target at the prices chosen
 * (within the latency limits for serving), AWS's best chip when the cheapest is not
 * one, and the targets with no price at the chosen ones, at their nearest comparable. */
static void say_workload(struct tb_doc *d, const struct report *R, const struct tb_cost_rank *w,
                         const char **targets, size_t nt)
{
    bool ok = tb_costs_limits_apply(&R->cs, w);
    const struct tb_cost *best = ok ? w->best_ok : w->best;
    struct tb_cost_versus v, a = {0};
    const char *aws = NULL;
    size_t nunpriced = 0;
    /* cheapest like for like: the best price-performance against the baseline, each
     * target compared at a price both have (not the cheapest figure at mixed prices) */
    for (size_t i = 0; i < nt; i++) {
        struct tb_cost_versus t;
        tb_costs_versus(&R->cs, w->workload, w->metric, targets[i], ok, &t);
        if (t.c && tb_cost_positive(t.perf) && (!a.c || t.perf > a.perf))
            a = t;
    }
    if (a.c)
        best = a.c;
    memset(&a, 0, sizeof a);
    tb_doc_item_begin(d);
    tb_doc_code(d, w->workload);
    tb_doc_text(d, " (%s%s): ", unit_of(w->metric),
                w->serve ? (ok ? ", within latency limits" : ", none within latency limits") : "");
    if (best) {
        tb_doc_text(d, "cheapest like for like ");
        tb_costs_versus(&R->cs, w->workload, w->metric, F(best->row, "target"), ok, &v);
        if (v.c)
            say_versus(d, R, F(best->row, "target"), &v);
        else
            tb_doc_code(d, F(best->row, "target"));
        tb_doc_text(d, ".");
        if (v.c && v.b && v.c != v.b)
            say_settle(d, &v);
    } else {
        tb_doc_text(d, "no target with a price at the chosen prices.");
    }
    /* AWS's best when the cheapest is not AWS's */
    for (size_t i = 0; i < nt && (!best || !aws_silicon(R, F(best->row, "target"))); i++) {
        struct tb_cost_versus t;
        if (!aws_silicon(R, targets[i]))
            continue;
        tb_costs_versus(&R->cs, w->workload, w->metric, targets[i], ok, &t);
        if (t.c && tb_cost_positive(t.perf) && (!aws || t.perf > a.perf)) {
            aws = targets[i];
            a = t;
        }
    }
    if (aws) {
        tb_doc_text(d, " Best on AWS's own chips (Trainium, Inferentia): ");
        say_versus(d, R, aws, &a);
        tb_doc_text(d, ".");
    }
    /* the others priced only at a comparable basis, and those with no price at all */
    for (size_t i = 0; i < nt; i++) {
        struct tb_cost_versus t;
        if ((aws && !strcmp(targets[i], aws)) ||
            (best && !strcmp(targets[i], F(best->row, "target"))))
            continue;
        tb_costs_versus(&R->cs, w->workload, w->metric, targets[i], ok, &t);
        if (!t.c || t.c->price->cmp_chosen)
            continue;
        tb_doc_text(d, nunpriced++ ? "; " : " Also ");
        say_versus(d, R, targets[i], &t);
    }
    if (nunpriced)
        tb_doc_text(d, ".");
    say_baseline_bought(d, R, w, ok);
    tb_doc_item_end(d);
}

/* The families whose error band is borrowed (validated on few rows or none). */
static void few_rows_families(const struct report *R, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < R->cs.ntp; i++) {
        const struct tb_cost_price *t = &R->cs.tp[i];
        bool few = false, seen = false;
        for (size_t k = 0; k < R->cs.ncosts && !few; k++)
            few = R->cs.costs[k].price == t && R->cs.costs[k].err_few && !R->cs.costs[k].host_cpu;
        for (size_t k = 0; k < i && !seen; k++)
            seen = !strcmp(R->cs.tp[k].family, t->family);
        if (few && !seen && *t->family && strlen(buf) + strlen(t->family) + 3 < len)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", n++ ? ", " : "", t->family);
    }
}

static void write_summary(struct tb_doc *d, const struct report *R)
{
    const char *targets[64];
    size_t nt = compared_targets(R, targets, sizeof targets / sizeof targets[0]), nw = 0;
    char few[512];
    tb_doc_h(d, 2, "Summary");
    for (size_t i = 0; i < R->cs.nranks; i++)
        nw += compared_workload(R, &R->cs.ranks[i]);
    if (nw == 0) {
        tb_doc_p(d, "note",
                 "No throughput rows of an instance to compare: nothing to rank (host CPU runs "
                 "are listed below).");
        return;
    }
    few_rows_families(R, few, sizeof few);
    tb_doc_p(d, NULL,
             "Savings against %s, like for like (in bold: a target's nearest comparable price "
             "where it has none at %s %s); in brackets the price-performance and its range: the "
             "model's error (p90 of its validation per chip family and phase, %s) or the "
             "measured repetitions.%s%s%s",
             R->cs.basis, R->o->region ? R->o->region : "us-east-1",
             R->o->purchase ? R->o->purchase : "on-demand",
             R->have_val && R->val.basis[0]
                 ? "held out: each source's rows predicted with the figures chosen without them"
                 : "in sample: the rows the figures were chosen on",
             *few ? " Validated on few rows or none, so given the larger of their own p90 and "
                    "every validated row's: "
                  : "",
             few, *few ? "." : "");
    tb_doc_list_begin(d);
    for (size_t i = 0; i < R->cs.nranks; i++)
        if (compared_workload(R, &R->cs.ranks[i]))
            say_workload(d, R, &R->cs.ranks[i], targets, nt);
    tb_doc_list_end(d);
    say_unpriced(d, R);
    say_savings_plans(d, R, targets, nt);
}

/* A matrix's head: first, then n column names, each column a number that may wrap
 * (kinds "c" then n "r"); head and kinds have room for n + 1 (kinds n + 2). */
static void matrix_head(const char *first, const char *const *names, size_t n, const char **head,
                        char *kinds)
{
    head[0] = first;
    kinds[0] = 'c';
    for (size_t i = 0; i < n; i++) {
        head[i + 1] = names[i];
        kinds[i + 1] = 'r';
    }
    kinds[n + 1] = '\0';
}

/* Savings against the baseline, one row per workload and one column per target, each
 * like for like (the target's comparison price), with the range. */
static void write_matrix(struct tb_doc *d, const struct report *R)
{
    const char *targets[64], *head[66];
    char kinds[67];
    size_t nt = compared_targets(R, targets, 64);
    if (nt == 0)
        return;
    matrix_head("Workload", targets, nt, head, kinds);
    tb_doc_h(d, 3, "Saving against the baseline, target by target");
    tb_doc_p(d, NULL,
             "Each cell: the saving of the target's cheapest configuration (within the latency "
             "limits for serving) against %s's, both under one purchase model in one region, "
             "and the range of the price-performance. * at its nearest comparable price, not "
             "the chosen one; m measured; = within the model's error; a target over twice the "
             "baseline's cost shows the multiple. Hover for the figures.",
             R->cs.o.baseline);
    tb_doc_table(d, kinds, head);
    for (size_t i = 0; i < R->cs.nranks; i++) {
        const struct tb_cost_rank *w = &R->cs.ranks[i];
        char cell[64][64], tip[64][600];
        const char *cells[66], *tips[66] = {0};
        bool ok = tb_costs_limits_apply(&R->cs, w);
        if (!compared_workload(R, w))
            continue;
        cells[0] = w->workload;
        for (size_t k = 0; k < nt; k++) {
            struct tb_cost_versus v;
            char s1[32], n1[32], n2[32];
            tb_costs_versus(&R->cs, w->workload, w->metric, targets[k], ok, &v);
            cells[k + 1] = cell[k];
            tips[k + 1] = tip[k];
            tip[k][0] = '\0';
            if (!v.c || !tb_cost_positive(v.perf)) {
                const struct tb_cost_price *p = NULL;
                for (size_t j = 0; j < R->cs.ncosts && !p; j++)
                    if (!R->cs.costs[j].host_cpu &&
                        tb_cost_of_workload(&R->cs.costs[j], w->workload, w->metric) &&
                        !strcmp(F(R->cs.costs[j].row, "target"), targets[k]))
                        p = R->cs.costs[j].price;
                snprintf(cell[k], sizeof cell[k], "%s",
                         !p                           ? ""
                         : v.c                        ? "no baseline"
                         : !p->c.have && !p->cmp_have ? "no price"
                         : ok                         ? "none within limits"
                                                      : "no price");
                snprintf(tip[k], sizeof tip[k], "%s", p ? p->cmp_basis : "");
                continue;
            }
            if (v.b == v.c)
                snprintf(cell[k], sizeof cell[k], "baseline");
            else if (tb_cost_positive(v.plo) && v.plo < v.phi)
                /* the saving on one line, its range and marks on the next: the range's
                 * hyphen does not break (U+2011) and the marks stay with it (U+00A0) */
                snprintf(cell[k], sizeof cell[k], "%s (%.2f\u2011%.2fx)%s%s%s",
                         saving_text(v.perf, s1, sizeof s1), v.plo, v.phi,
                         v.c->price->cmp_chosen ? "" : "\u00a0*",
                         v.c->row->prov == TB_PROV_MEASURED ? "\u00a0m" : "",
                         within_error(&v) ? "\u00a0=" : "");
            else
                snprintf(cell[k], sizeof cell[k], "%s%s%s", saving_text(v.perf, s1, sizeof s1),
                         v.c->price->cmp_chosen ? "" : "\u00a0*",
                         v.c->row->prov == TB_PROV_MEASURED ? "\u00a0m" : "");
            snprintf(tip[k], sizeof tip[k],
                     "%s batch %s: %s against %s at %s (%s, %s); model error band: %s", targets[k],
                     F(v.c->row, "batch"), tb_report_num(v.usd, n1, sizeof n1),
                     tb_report_num(v.base, n2, sizeof n2), v.c->price->cmp_basis,
                     tb_report_prov_label(v.c->row), unit_of(w->metric),
                     *v.c->err_basis ? v.c->err_basis : "none (measured)");
        }
        tb_doc_row_tip(d, cells, tips);
    }
    tb_doc_table_end(d);
}

/* The host CPU's runs (our CPU engines, on this machine or an instance's host): priced
 * at the machine they ran on when it has a price, never ranked against instances. One
 * row per workload and machine: its cheapest configuration. */
static void write_host_cpu(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"Workload", "Machine",    "Throughput",
                                       "Cost",     "Provenance", "Accelerators present, not used"};
    size_t shown = 0;
    for (size_t i = 0; i < R->cs.ncosts; i++) {
        const struct tb_cost *c = &R->cs.costs[i], *best = c;
        const char *t = F(c->row, "target");
        char thr[64], usd[32], prov[900], where[300];
        const char *cells[6], *tips[6] = {0};
        bool seen = false;
        if (!c->host_cpu || !strcmp(c->metric, "usd_per_mtok_total"))
            continue;
        for (size_t k = 0; k < R->cs.ncosts; k++) {
            const struct tb_cost *o = &R->cs.costs[k];
            if (!o->host_cpu || !tb_cost_of_workload(o, c->workload, c->metric) ||
                strcmp(F(o->row, "target"), t))
                continue;
            if (k < i) {
                seen = true;
                break;
            }
            if (o->row->value > best->row->value)
                best = o;
        }
        if (seen)
            continue;
        if (!shown++) {
            tb_doc_h(d, 3, "Host CPU runs");
            tb_doc_p(d, NULL,
                     "These rows ran trnbench's CPU engines on the host CPU. They are priced at "
                     "the machine they ran on when it has a price, but they are the host's "
                     "throughput of small or shortened models, not an instance's: the summary, "
                     "the rankings and the cost charts leave them out (the throughput and "
                     "interactivity charts show them, named host).");
            tb_doc_fold_begin(d, "The host's runs: throughput, cost, unused accelerators");
            tb_doc_table(d, "ttnnpt", head);
        }
        snprintf(where, sizeof where, "%s%s%s", t, *F(best->row, "device") ? ": " : "",
                 F(best->row, "device"));
        snprintf(thr, sizeof thr, "%s %s", tb_report_num(best->row->value, usd, sizeof usd),
                 F(best->row, "unit"));
        prov_tip(best->row, prov, sizeof prov);
        cells[0] = best->workload;
        cells[1] = where;
        cells[2] = thr;
        cells[3] =
            tb_cost_positive(best->usd) ? tb_report_num(best->usd, usd, sizeof usd) : "no price";
        cells[4] = tb_report_prov_label(best->row);
        cells[5] = *F(best->row, "accelerators_unused") ? F(best->row, "accelerators_unused")
                   : best->price->chips > 0 ? "not recorded (a row of an older trnbench)"
                                            : "";
        tips[3] = tb_cost_positive(best->usd) ? NULL : best->price->c.why;
        tips[4] = prov;
        tb_doc_row_tip(d, cells, tips);
    }
    if (shown) {
        tb_doc_table_end(d);
        tb_doc_fold_end(d);
    }
}

/* Per serving workload and target: the cheapest configuration within the limits. */
static void write_limits(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {
        "Workload", "Target",  "Configurations",    "Meeting limits", "Batch",
        "TTFT ms",  "TPOT ms", "Tokens/s per user", "Cost",           "Provenance"};
    bool any = false;
    for (size_t i = 0; i < R->cs.nranks && !any; i++)
        any = R->cs.ranks[i].serve;
    if (!any)
        return;
    tb_doc_h(d, 2, "Cost under latency limits");
    tb_doc_fold_begin(d, "Each serving target's cheapest configuration within the latency "
                         "limits");
    tb_doc_p(d, NULL,
             "Every serving target's cheapest configuration with TTFT at most %g ms and TPOT at "
             "most %g ms (cost in USD per million output tokens; * at the target's nearest "
             "comparable price where it has none at the chosen one, named in the Provenance "
             "column): the configuration the summary, the charts and the rankings use. "
             "Configurations are the batches of the results (a suite's batch sweep).",
             R->o->ttft_limit_ms, R->o->tpot_limit_ms);
    tb_doc_table(d, "ttnntnnnnp", head);
    for (size_t i = 0; i < R->cs.nranks; i++) {
        const struct tb_cost_rank *w = &R->cs.ranks[i];
        if (!w->serve)
            continue;
        for (size_t j = 0; j < R->cs.ncosts; j++) {
            const struct tb_cost *c = &R->cs.costs[j], *best = NULL;
            const char *t = F(c->row, "target");
            char nc[16], nok[16], t1[32], t2[32], t3[32], usd[32], prov[200], tip[2400];
            const char *cells[10], *tips[10] = {0};
            int nconf = 0, ok = 0;
            if (!tb_costs_first_of_target(&R->cs, j, w->workload, w->metric))
                continue;
            for (size_t k = j; k < R->cs.ncosts; k++) {
                const struct tb_cost *o = &R->cs.costs[k];
                if (!tb_cost_of_workload(o, w->workload, w->metric) ||
                    strcmp(F(o->row, "target"), t))
                    continue;
                nconf++;
                if (!tb_cost_meets(o->ttft, o->tpot, R->o->ttft_limit_ms, R->o->tpot_limit_ms))
                    continue;
                ok++;
                /* the host CPU's own cheapest (never compared with the instances) */
                if (c->host_cpu && tb_cost_positive(o->usd) && (!best || o->usd < best->usd))
                    best = o;
            }
            /* an instance's: the row every table and chart shows, the summary's */
            if (!c->host_cpu && ok)
                best = tb_costs_target_best(&R->cs, w->workload, w->metric, t, true);
            snprintf(nc, sizeof nc, "%d", nconf);
            snprintf(nok, sizeof nok, "%d", ok);
            cells[0] = w->workload;
            cells[1] = t;
            cells[2] = nc;
            cells[3] = nok;
            if (!best) {
                cells[4] = cells[5] = cells[6] = cells[7] = "";
                cells[8] = ok ? "no price" : "none meets";
                cells[9] = ok ? c->price->cmp_basis : "";
                tb_doc_row(d, cells);
                continue;
            }
            cost_tip(best, tip, sizeof tip);
            prov_cell(best, prov, sizeof prov);
            cells[4] = F(best->row, "batch");
            cells[5] = tb_report_num(best->ttft, t1, sizeof t1);
            cells[6] = tb_report_num(best->tpot, t2, sizeof t2);
            cells[7] = tb_report_num(best->per_user, t3, sizeof t3);
            cells[8] = shown_text(best, tb_cost_shown(best), usd, sizeof usd);
            cells[9] = prov;
            tips[8] = tips[9] = tip;
            tb_doc_row_tip(d, cells, tips);
        }
    }
    tb_doc_table_end(d);
    tb_doc_fold_end(d);
}

static void write_training(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"Model",      "Target",   "Instances",
                                       "Chips",      "Tokens/s", "Days",
                                       "Cost (USD)", "Paid for", "Baseline, bought the same way",
                                       "Provenance"};
    bool any = false;
    char tok[48];
    for (size_t i = 0; i < R->cs.ncosts && !any; i++)
        any = !strcmp(R->cs.costs[i].metric, "usd_per_mtok_train");
    if (!any)
        return;
    tb_doc_h(d, 2, "Time and cost to train");
    tb_doc_fold_begin(d, "Days and dollars to train, per training run");
    tb_doc_p(d, NULL,
             "Training on %s tokens (--train-tokens) at each training run's throughput, "
             "with what the run used (its instances, or its share of one): days = tokens / "
             "train_tokens_per_s / 86400; at an hourly price (on-demand, reserved, savings "
             "plans, spot) cost = usd_per_mtok_train x tokens / 10^6. Capacity Blocks are "
             "sold in whole days (1 to 14 days, then 7-day steps up to 182 days), at most 64 "
             "instances a block, paid up front (EC2 User Guide, \"Find and purchase Capacity "
             "Blocks\"): a job at capacity-block prices pays for the days it must buy, and "
             "Paid for says how much of them it uses. * at the target's nearest comparable "
             "price where it has none at the chosen one. The baseline's column prices the same "
             "job on %s the way the row's target is bought (the same purchase model and "
             "region: like for like, blocks by the day where they are), and the saving.",
             tb_report_tokens_text(R->o->train_tokens, tok, sizeof tok), R->cs.o.baseline);
    tb_doc_table(d, "ttnnnnnttp", head);
    for (size_t i = 0; i < R->cs.ncosts; i++) {
        const struct tb_cost *c = &R->cs.costs[i];
        char inst[64], chips[24], tps[32], days[32], usd[32], prov[200], tip[2400], paid[160],
            base[96] = "", n1[32], s1[32];
        const char *cells[10], *tips[10] = {0};
        struct tb_cost_train tr, tb;
        const struct tb_cost *b;
        if (strcmp(c->metric, "usd_per_mtok_train"))
            continue;
        tb_costs_train(&R->cs, c, &tr);
        if (tr.cblock)
            snprintf(paid, sizeof paid,
                     "%.0f day%s x %.0f instance%s in %.0f block%s, %.0f%% used%s", tr.cb.days,
                     tr.cb.days == 1 ? "" : "s", tr.instances, tr.instances == 1 ? "" : "s",
                     tr.cb.blocks, tr.cb.blocks == 1 ? "" : "s", 100 * tr.cb.used,
                     tr.cb.over_quota ? "; over the 256 instances an account may hold" : "");
        else
            snprintf(paid, sizeof paid, "%s", isnan(tr.usd) ? "" : "by the hour");
        /* the baseline's same job at this row's price basis (its comparison's) */
        b = c->host_cpu
                ? NULL
                : tb_costs_target_best(&R->cs, c->workload, c->metric, R->cs.o.baseline, false);
        if (b && b != c && c->price->cmp_have && tb_cost_positive(tr.usd)) {
            tb_costs_train_at(&R->cs, b, &c->price->bcmp, &tb);
            if (tb_cost_positive(tb.usd))
                snprintf(base, sizeof base, "%s%s: %s", tb_report_num(tb.usd, n1, sizeof n1),
                         tb.cblock ? " (blocks)" : "", saving_text(tb.usd / tr.usd, s1, sizeof s1));
        } else if (b == c) {
            snprintf(base, sizeof base, "baseline");
        }
        tb_cost_charged_text(c->row, c->price, inst, sizeof inst);
        snprintf(chips, sizeof chips, "%ld", c->chips);
        cost_tip(c, tip, sizeof tip);
        prov_cell(c, prov, sizeof prov);
        cells[0] = F(c->row, "model");
        cells[1] = F(c->row, "target");
        cells[2] = inst;
        cells[3] = c->chips ? chips : "";
        cells[4] = tb_report_num(c->row->value, tps, sizeof tps);
        cells[5] = tb_report_num(tr.days, days, sizeof days);
        cells[6] = tb_cost_positive(tr.usd) ? shown_text(c, tr.usd, usd, sizeof usd) : "no price";
        cells[7] = paid;
        cells[8] = base;
        cells[9] = prov;
        tips[4] = tips[5] = tips[6] = tips[7] = tips[9] = tip;
        tb_doc_row_tip(d, cells, tips);
    }
    tb_doc_table_end(d);
    tb_doc_fold_end(d);
}

/* A run's configuration as the GPU executor names both sides: "cuda:CONFIG" for the
 * measured run, "model:INSTANCE/CONFIG/chips1" for the model's prediction of it. */
static bool gpu_pair_key(const struct tb_result *x, char *buf, size_t len)
{
    /* config (tb_results.h): a GPU run's "cuda:<config>", its modeled twin's
     * "<config>/chips1" (one chip of the instance) */
    const char *cf = x->config;
    size_t n = strlen(cf);
    if (x->prov == TB_PROV_MEASURED && !strcmp(F(x, "executor"), "cuda") &&
        !strncmp(cf, "cuda:", 5)) {
        snprintf(buf, len, "%s", cf + 5);
        return true;
    }
    if (x->prov == TB_PROV_MODELED && n > 7 && !strcmp(cf + n - 7, "/chips1")) {
        snprintf(buf, len, "%.*s", (int)(n - 7), cf);
        return true;
    }
    return false;
}

/* Measured GPU rows beside the model's prediction of the same run on the same chip. */
static void write_model_check(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"Model", "Phase",   "Shape",      "Metric",     "Measured",
                                       "GPU",   "Modeled", "Modeled on", "Model error"};
    bool any = false;
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *x = &R->res.rows[i];
        char key[256], k2[256];
        if (!gpu_pair_key(x, key, sizeof key) || x->prov != TB_PROV_MEASURED)
            continue;
        for (size_t j = 0; j < R->res.nrows; j++) {
            const struct tb_result *y = &R->res.rows[j];
            char shape[96], mv[32], pv[32], e[32], tip[900], ytip[900];
            const char *cells[9], *tips[9] = {0};
            if (y->prov != TB_PROV_MODELED || strcmp(F(y, "metric"), F(x, "metric")) ||
                !gpu_pair_key(y, k2, sizeof k2) || strcmp(key, k2))
                continue;
            if (!any) {
                tb_doc_h(d, 2, "Measured GPU runs against the model");
                tb_doc_fold_begin(d, "Each measured GPU metric beside the model's prediction "
                                     "and its error");
                tb_doc_p(d, NULL,
                         "Each metric of a run measured on this machine's GPU (executor cuda) "
                         "beside the performance model's prediction of the same run on one "
                         "chip of the same kind; model error = (modeled - measured) / "
                         "measured.");
                tb_doc_table(d, "tttcntntn", head);
                any = true;
            }
            tb_report_shape(x, shape, sizeof shape);
            snprintf(e, sizeof e, "%+.1f%%", (y->value - x->value) / x->value * 100.0);
            prov_tip(x, tip, sizeof tip);
            prov_tip(y, ytip, sizeof ytip);
            cells[0] = F(x, "model");
            cells[1] = F(x, "phase");
            cells[2] = shape;
            cells[3] = F(x, "metric");
            cells[4] = tb_report_num(x->value, mv, sizeof mv);
            cells[5] = F(x, "host");
            cells[6] = tb_report_num(y->value, pv, sizeof pv);
            cells[7] = F(y, "target");
            cells[8] = x->value != 0 ? e : "";
            tips[4] = tip;
            tips[6] = ytip;
            tb_doc_row_tip(d, cells, tips);
        }
    }
    if (any) {
        tb_doc_table_end(d);
        tb_doc_fold_end(d);
    }
}

static void write_cost(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {
        "Provenance",       "Target",     "Model",    "Phase",  "Shape",
        "Throughput (run)", "Instances",  "Per chip", "Metric", "USD per unit",
        "Spread (min-max)", "Price-perf", "Price"};
    tb_doc_h(d, 2, "Cost per million tokens and per thousand images");
    tb_doc_fold_begin(d, "Every throughput row's cost, throughput per chip, price-performance "
                         "and price, and how they are computed");
    tb_doc_p(d, NULL,
             "usd_per_mtok = usd_per_hour / (tokens_per_s x 3600) x 10^6; usd_per_kimage = "
             "usd_per_hour / (images_per_s x 3600) x 10^3 (the unit is in the metric's name: "
             "Mtok, a million tokens, or kimage, a thousand images). A run is charged "
             "the hourly price of what it used: for rows measured on the host, the whole "
             "price of the host; for rows of an instance type, every instance of the run "
             "(all its chips), or, for a run that used only some of the chips (chips_used: "
             "the GPU executor runs on one GPU of the machine), that share of the "
             "instance-hour, which the Instances column states (1 of 8 GPUs: 1/8 of a "
             "p5.48xlarge's hourly price). Throughput (run) is the whole run's; Per chip "
             "divides it by the chips it used (instances x chips per instance, or "
             "chips_used; a trn2.48xlarge has 16 Trainium2 chips, a p5.48xlarge 8 H100s). "
             "Price-perf is "
             "the baseline's cost (%s) of the same configuration over this cost. "
             "The Price column points to the price used, listed under the table.",
             R->cs.basis);
    if (R->cs.ncosts == 0) {
        tb_doc_p(d, "note",
                 "No throughput rows (*_tokens_per_s, images_per_s) in the results: "
                 "nothing to cost.");
        tb_doc_fold_end(d);
        return;
    }
    tb_doc_table(d, "pttttnnncnnnt", head);
    for (size_t i = 0; i < R->cs.ncosts; i++) {
        const struct tb_cost *c = &R->cs.costs[i];
        char shape[96], tps[40], usd[40], lo[32], hi[32], spread[80], ref[600], inst[64], pc[40],
            pp[32], tip[2400];
        const char *cells[13], *tips[13] = {0};
        tb_report_shape(c->row, shape, sizeof shape);
        tb_report_num(c->row->value, tps, sizeof tps);
        strncat(tps, c->images ? " images/s" : " tokens/s", sizeof tps - strlen(tps) - 1);
        tb_cost_charged_text(c->row, c->price, inst, sizeof inst);
        tb_report_num(c->per_chip, pc, sizeof pc);
        pp[0] = spread[0] = usd[0] = '\0';
        if (tb_cost_positive(c->perf))
            snprintf(pp, sizeof pp, "%.3gx", c->perf);
        if (tb_cost_positive(tb_cost_shown(c))) {
            double smin, smax;
            shown_text(c, tb_cost_shown(c), usd, sizeof usd);
            tb_cost_shown_spread(c, &smin, &smax);
            if (!isnan(smin) && !isnan(smax))
                snprintf(spread, sizeof spread, "%s - %s", tb_report_num(smin, lo, sizeof lo),
                         tb_report_num(smax, hi, sizeof hi));
            snprintf(ref, sizeof ref, "[%d]%s%s%s", c->price->ref,
                     *c->price->flag ? " flagged" : "", tb_cost_stand_in(c) ? " * " : "",
                     tb_cost_stand_in(c) ? c->price->cmp_basis : "");
        } else {
            snprintf(ref, sizeof ref, "[%d] no price", c->price->ref);
        }
        cost_tip(c, tip, sizeof tip);
        cells[0] = tb_report_prov_label(c->row);
        cells[1] = F(c->row, "target");
        cells[2] = F(c->row, "model");
        cells[3] = F(c->row, "phase");
        cells[4] = shape;
        cells[5] = tps;
        cells[6] = inst;
        cells[7] = pc;
        cells[8] = c->metric;
        cells[9] = usd;
        cells[10] = spread;
        cells[11] = pp;
        cells[12] = ref;
        tips[0] = tips[5] = tips[9] = tips[12] = tip;
        tb_doc_row_tip(d, cells, tips);
    }
    tb_doc_table_end(d);
    tb_doc_fold_end(d);
}

/* The prices used: one row per footnote number, with per-instance and per-chip rates
 * (never mixed in one column), the date, the age flag and the source. */
static void write_prices(struct tb_doc *d, const struct report *R)
{
    static const char *const ph[] = {"Price",
                                     "Target",
                                     "USD per instance-hour",
                                     "Chips",
                                     "USD per chip-hour",
                                     "Region",
                                     "Purchase",
                                     "As of",
                                     "Flag",
                                     "Source"};
    tb_doc_h(d, 2, "Prices used");
    tb_doc_fold_begin(d, "Each price: per instance-hour and per chip-hour, region, purchase "
                         "model, date and source");
    tb_doc_p(d, NULL,
             "USD per instance-hour from %s unless given on the command line: the newest row "
             "for the instance, region and purchase model. Prices older than %g days "
             "(--max-price-age), undated, or weak (status secondary: known only through a "
             "secondary summary) are flagged; a missing price is reported as "
             "missing, never estimated.",
             R->pricing.prices_name, R->o->max_price_age_days);
    tb_doc_table(d, "ttntnttttt", ph);
    for (int ref = 1; ref <= R->cs.nrefs; ref++)
        for (size_t i = 0; i < R->cs.ntp + 1; i++) {
            const struct tb_cost_price *t = i < R->cs.ntp ? &R->cs.tp[i] : &R->cs.btp;
            char num[32], h[32], chips[24], pch[32], src[700], flag[400];
            const char *cells[10], *fl;
            struct tb_price_choice pc;
            if (t->ref != ref)
                continue;
            /* a target without the chosen price is shown at its nearest comparable one */
            pc = !t->c.have && t->cmp_have ? t->cmp : t->c;
            /* the flag of the price shown: the stand-in's own age when it stands in */
            fl = pc.have && !t->c.have ? t->cmp_flag : t->flag;
            snprintf(flag, sizeof flag, "%s%s%s%s%s", fl,
                     pc.have && !t->c.have ? (*fl ? "; * nearest comparable: none at "
                                                  : "* nearest comparable: none at ")
                                           : "",
                     pc.have && !t->c.have ? (R->o->purchase ? R->o->purchase : "on-demand") : "",
                     pc.have && !t->c.have ? " in " : "",
                     pc.have && !t->c.have ? (R->o->region ? R->o->region : "us-east-1") : "");
            if (pc.have && pc.secondary) /* a weak price (tb_pricing.h) */
                snprintf(flag + strlen(flag), sizeof flag - strlen(flag), "%s%s", *flag ? "; " : "",
                         "weak: a secondary source");
            snprintf(num, sizeof num, "[%d]%s", ref, t == &R->cs.btp ? " baseline" : "");
            snprintf(chips, sizeof chips, "%ld", t->chips);
            h[0] = pch[0] = '\0';
            if (pc.have) {
                fmt_usd(pc.usd_per_hour, h, sizeof h);
                if (t->chips > 0)
                    snprintf(pch, sizeof pch, "%.4g", pc.usd_per_hour / (double)t->chips);
            }
            if (pc.have && pc.line)
                snprintf(src, sizeof src, "%s (prices.csv line %ld)", pc.source, pc.line);
            else
                snprintf(src, sizeof src, "%s", pc.have ? pc.source : pc.why);
            cells[0] = num;
            cells[1] = t->target;
            cells[2] = pc.have ? h : "missing";
            cells[3] = t->chips > 0 ? chips : "";
            cells[4] = pch;
            cells[5] = pc.region;
            cells[6] = pc.purchase;
            cells[7] = pc.as_of;
            cells[8] = flag;
            cells[9] = src;
            tb_doc_row(d, cells);
        }
    tb_doc_table_end(d);
    tb_doc_fold_end(d);
}

/* The purchase-model matrix: each compared target's price under every purchase model
 * (the chosen region, else the nearest that has one, named), then what each workload's
 * cheapest configuration costs under each. */
static void write_purchase_matrix(struct tb_doc *d, const struct report *R)
{
    const char *targets[64], *order[TB_COST_NPURCHASE], *head[TB_COST_NPURCHASE + 2];
    struct tb_price_choice pc[64][TB_COST_NPURCHASE];
    const char *region = R->o->region ? R->o->region : "us-east-1";
    size_t nt = compared_targets(R, targets, 64);
    char kinds[TB_COST_NPURCHASE + 3];
    if (nt == 0)
        return;
    tb_cost_purchase_order("on-demand", order);
    for (size_t i = 0; i < nt; i++)
        for (int k = 0; k < TB_COST_NPURCHASE; k++) {
            char e[256];
            if (tb_costs_nearest_price(&R->cs, targets[i], order[k], &pc[i][k], e, sizeof e) != 0) {
                memset(&pc[i][k], 0, sizeof pc[i][k]);
                snprintf(pc[i][k].why, sizeof pc[i][k].why, "%s", e);
            }
        }
    tb_doc_h(d, 2, "What each purchase model costs");
    tb_doc_fold_begin(d, "Each target's price under every purchase model, and each workload's "
                         "cost at each");
    tb_doc_p(d, NULL,
             "Each target's price per instance-hour under every purchase model in %s, or in "
             "the nearest region that has one (named); none listed where no source gives one "
             "(hover for why). Then each workload's cheapest configuration at each of those "
             "prices. Reserved and savings-plan prices are the no-upfront hourly rates where "
             "the source says so. Spot prices are dated snapshots of an interruptible price: "
             "no basis for an always-on fleet without capacity held in reserve. Capacity "
             "Blocks are bought ahead for fixed dates, in whole days (1 to 14, then weeks up "
             "to 182), at most 64 instances a block, paid up front (EC2 User Guide, \"Find and "
             "purchase Capacity Blocks\"): a fleet on them ends with the block.",
             region);
    matrix_head("Target", order, TB_COST_NPURCHASE, head, kinds);
    tb_doc_table(d, kinds, head);
    for (size_t i = 0; i < nt; i++) {
        char cell[TB_COST_NPURCHASE][96], tip[TB_COST_NPURCHASE][1200];
        const char *cells[TB_COST_NPURCHASE + 1], *tips[TB_COST_NPURCHASE + 1] = {0};
        cells[0] = targets[i];
        for (int k = 0; k < TB_COST_NPURCHASE; k++) {
            const struct tb_price_choice *c = &pc[i][k];
            char h[32];
            cells[k + 1] = cell[k];
            tips[k + 1] = tip[k];
            if (!c->have) {
                snprintf(cell[k], sizeof cell[k], "none listed");
                snprintf(tip[k], sizeof tip[k], "%s", c->why);
                continue;
            }
            snprintf(cell[k], sizeof cell[k], "%s%s%s%s", fmt_usd(c->usd_per_hour, h, sizeof h),
                     strcmp(c->region, region) ? " (" : "",
                     strcmp(c->region, region) ? c->region : "",
                     strcmp(c->region, region) ? ")" : "");
            price_text(c, tip[k], sizeof tip[k]);
        }
        tb_doc_row_tip(d, cells, tips);
    }
    tb_doc_table_end(d);

    head[0] = "Workload and target";
    tb_doc_table(d, kinds, head);
    for (size_t w = 0; w < R->cs.nranks; w++) {
        const struct tb_cost_rank *rk = &R->cs.ranks[w];
        bool ok = tb_costs_limits_apply(&R->cs, rk);
        if (!compared_workload(R, rk))
            continue;
        for (size_t i = 0; i < nt; i++) {
            const struct tb_cost *c =
                tb_costs_target_best(&R->cs, rk->workload, rk->metric, targets[i], ok);
            char name[400], cell[TB_COST_NPURCHASE][32];
            const char *cells[TB_COST_NPURCHASE + 1];
            if (!c)
                continue;
            snprintf(name, sizeof name, "%s on %s (batch %s; %s)", rk->workload, targets[i],
                     F(c->row, "batch"), unit_of(rk->metric));
            cells[0] = name;
            for (int k = 0; k < TB_COST_NPURCHASE; k++) {
                cells[k + 1] = cell[k];
                if (pc[i][k].have)
                    tb_report_num(tb_cost_at(c, pc[i][k].usd_per_hour), cell[k], sizeof cell[k]);
                else
                    snprintf(cell[k], sizeof cell[k], "none listed");
            }
            tb_doc_row(d, cells);
        }
    }
    tb_doc_table_end(d);
    tb_doc_fold_end(d);
}

static void write_charts(struct tb_doc *d, const struct report *R)
{
    tb_doc_h(d, 2, "Charts");
    for (int i = 0; i < R->ncharts; i++) {
        if (*R->charts[i].fold)
            tb_doc_fold_begin(d, R->charts[i].fold);
        doc_figure(d, &R->charts[i], i);
        if (*R->charts[i].fold)
            tb_doc_fold_end(d);
    }
    if (*R->notes) {
        char line[1024];
        for (const char *s = R->notes; *s;) {
            size_t n = strcspn(s, "\n");
            snprintf(line, sizeof line, "%.*s", (int)n, s);
            tb_doc_p(d, "note", "Note: %s", line);
            s += n;
            if (*s)
                s++;
        }
    }
}

static void write_definitions(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"Metric", "Unit", "Definition"};
    const char *seen[64];
    size_t nseen = 0;
    tb_doc_h(d, 2, "Metric definitions");
    tb_doc_fold_begin(d, "What each metric measures, and its unit");
    tb_doc_table(d, "ctt", head);
    /* the results' metrics in order of first appearance, then the cost metrics used */
    for (size_t pass = 0; pass < 2; pass++) {
        size_t n = pass ? R->cs.ncosts : R->res.nrows;
        for (size_t i = 0; i < n && nseen < 64; i++) {
            const char *m = pass ? R->cs.costs[i].metric : F(&R->res.rows[i], "metric");
            const struct tb_metric *def = tb_metric_find(m);
            const char *cells[3];
            bool dup = false;
            for (size_t k = 0; k < nseen && !dup; k++)
                dup = !strcmp(seen[k], m);
            if (dup)
                continue;
            seen[nseen++] = m;
            cells[0] = m;
            cells[1] = def ? def->unit : (pass ? "USD" : F(&R->res.rows[i], "unit"));
            cells[2] =
                def && def->definition ? def->definition : "no definition recorded for this metric";
            tb_doc_row(d, cells);
        }
    }
    tb_doc_table_end(d);
    tb_doc_fold_end(d);
}

/* The modeled rows that assume speculative decoding or prefix caching (their notes carry
 * the model's assumptions, which say so first: tb_model_serve.c), named by run id, so
 * that a reader knows which figures hold only at the acceptance length or hit rate they
 * state; nothing when none does. */
static void report_terms(const struct report *R, struct tb_doc *d)
{
    static const struct {
        const char *mark, *what;
    } T[] = {{"assumes speculative decoding", "speculative decoding (their TPOT and throughput "
                                              "hold at the acceptance length each states)"},
             {"assumes prefix caching", "prefix caching (their TTFT holds at the share of "
                                        "the prompt each finds cached)"},
             {"assumes software", "a software stack other than their chip family's reference "
                                  "(the reference's figures at the stack's speed, "
                                  "pricing/stacks.csv)"}};
    for (size_t t = 0; t < sizeof T / sizeof T[0]; t++) {
        char ids[768] = "";
        size_t n = 0, used = 0;
        for (size_t i = 0; i < R->res.nrows; i++) {
            const struct tb_result *x = &R->res.rows[i];
            bool seen = false;
            if (!tb_report_selects(x, TB_PROV_MODELED) || !strstr(F(x, "notes"), T[t].mark))
                continue;
            for (size_t j = 0; j < i && !seen; j++) /* a run's metrics: one run */
                seen = tb_report_selects(&R->res.rows[j], TB_PROV_MODELED) &&
                       !strcmp(F(&R->res.rows[j], "run_id"), F(x, "run_id"));
            if (seen)
                continue;
            if (n < 8 && used < sizeof ids)
                used += (size_t)snprintf(ids + used, sizeof ids - used, "%s%s", n ? ", " : "",
                                         F(x, "run_id"));
            n++;
        }
        if (n)
            tb_doc_p(d, NULL, "%zu modeled run%s assume%s %s: %s%s.", n, n == 1 ? "" : "s",
                     n == 1 ? "s" : "", T[t].what, ids, n > 8 ? ", ..." : "");
    }
}

static void write_provenance(struct tb_doc *d, const struct report *R)
{
    char a[1024], b[1024], c[1024], e[1024], f[512];
    const size_t nm = tb_report_count(R, TB_PROV_MEASURED);
    const size_t ni = tb_report_count(R, TB_REPORT_IMPORTED);
    tb_doc_h(d, 2, "Provenance");
    tb_doc_fold_begin(d, "Where the measured, imported, modeled and published rows come from, "
                         "and the files read");
    if (nm) {
        long nmin = -1, nmax = -1, wmin = -1, wmax = -1;
        for (size_t i = 0; i < R->res.nrows; i++) {
            const struct tb_result *x = &R->res.rows[i];
            if (!tb_report_selects(x, TB_PROV_MEASURED))
                continue;
            if (x->n >= 0) {
                nmin = nmin < 0 || x->n < nmin ? x->n : nmin;
                nmax = x->n > nmax ? x->n : nmax;
            }
            if (x->warmup >= 0) {
                wmin = wmin < 0 || x->warmup < wmin ? x->warmup : wmin;
                wmax = x->warmup > wmax ? x->warmup : wmax;
            }
        }
        tb_report_distinct(R, TB_PROV_MEASURED, "host", a, sizeof a);
        tb_report_time_span(R, TB_PROV_MEASURED, b, sizeof b);
        tb_report_distinct(R, TB_PROV_MEASURED, "commit", c, sizeof c);
        tb_report_distinct(R, TB_PROV_MEASURED, "executor", e, sizeof e);
        if (nmin < 0)
            snprintf(f, sizeof f, "repetitions not recorded");
        else
            snprintf(f, sizeof f, "%ld-%ld timed repetitions after %ld-%ld warm-up ones", nmin,
                     nmax, wmin < 0 ? 0 : wmin, wmax < 0 ? 0 : wmax);
        tb_doc_p(d, NULL,
                 "measured (%zu row%s): run on %s (%s executor), %s, by trnbench %s; each "
                 "value the median of %s.",
                 nm, nm == 1 ? "" : "s", *a ? a : "an unrecorded host", *e ? e : "unrecorded", b,
                 *c ? c : "(commit not recorded)", f);
    }
    if (ni) {
        tb_report_distinct(R, TB_REPORT_IMPORTED, "source", a, sizeof a);
        tb_report_time_span(R, TB_REPORT_IMPORTED, b, sizeof b);
        tb_doc_p(d, NULL,
                 "measured (imported) (%zu row%s): measured on real hardware by a team with "
                 "its own tool, not run by trnbench, and not a published figure "
                 "(trnbench import): %s, %s. Each row's notes say who measured, when, and "
                 "what was converted to trnbench's definitions.",
                 ni, ni == 1 ? "" : "s", *a ? a : "source not recorded", b);
    }
    if (R->res.nprov[TB_PROV_MODELED]) {
        tb_report_distinct(R, TB_PROV_MODELED, "source", a, sizeof a);
        tb_doc_p(d, NULL, "modeled (%zu row%s): predicted by a performance model, not run: %s.",
                 R->res.nprov[TB_PROV_MODELED], R->res.nprov[TB_PROV_MODELED] == 1 ? "" : "s",
                 *a ? a : "model version not recorded");
        tb_doc_p(d, NULL,
                 "A modeled run that names no software stack is predicted for its chip "
                 "family's reference stack, the one the efficiency figures were chosen on "
                 "(pricing/stacks.csv).");
        report_terms(R, d);
    }
    if (R->res.nprov[TB_PROV_PUBLISHED]) {
        tb_report_distinct(R, TB_PROV_PUBLISHED, "source", a, sizeof a);
        tb_doc_p(d, NULL,
                 "published (%zu row%s): reference figures from elsewhere, not run here: %s.",
                 R->res.nprov[TB_PROV_PUBLISHED], R->res.nprov[TB_PROV_PUBLISHED] == 1 ? "" : "s",
                 *a ? a : "source not recorded");
    }
    {
        size_t used = 0;
        a[0] = '\0';
        for (size_t i = 0; i < R->res.ntables && used < sizeof a; i++)
            used += (size_t)snprintf(a + used, sizeof a - used, "%s%s", i ? ", " : "",
                                     R->res.tables[i].path);
        tb_doc_p(d, NULL,
                 "Results files: %s. Prices: %s (columns and sources in pricing/README.md).", a,
                 R->pricing.prices_name);
    }
    tb_doc_fold_end(d);
}

static void write_assessment(struct tb_doc *d, const struct report *R)
{
    if (R->assess_md) {
        /* its heading stays in view, the rest folds */
        const char *h = strstr(R->assess_html, "</h2>\n");
        size_t at = h ? (size_t)(h + 6 - R->assess_html) : 0;
        char title[160];
        snprintf(title, sizeof title, "The assessment of %zu workload%s, one table each",
                 R->o->assessment->csv.nrows, R->o->assessment->csv.nrows == 1 ? "" : "s");
        tb_sb_puts(&d->md, R->assess_md);
        tb_sb_puts(&d->md, "\n");
        tb_sb_puts(&d->html, "<section id=\"assessment\">\n");
        tb_sb_putn(&d->html, R->assess_html, at);
        tb_doc_fold_begin(d, title);
        tb_sb_puts(&d->html, R->assess_html + at);
        tb_doc_fold_end(d);
        tb_sb_puts(&d->html, "</section>\n");
    } else {
        tb_doc_h(d, 2, "Migration assessment");
        tb_doc_p(d, "note", "%s", R->assess_why);
    }
}

/* The summary's answers as plain text for a terminal, from its Markdown (md from
 * offset from): each list item on a line of its own, without Markdown's marks (code
 * spans, bold, backslash escapes). */
static void plain_answers(const struct tb_sbuf *md, size_t from, char *buf, size_t len)
{
    size_t k = 0;
    bool item = false, bol = true;
    buf[0] = '\0';
    for (size_t i = from; md->p && i < md->len && k + 1 < len; i++) {
        char ch = md->p[i];
        if (bol)
            item = !strncmp(md->p + i, "- ", 2);
        bol = ch == '\n';
        if (!item || ch == '`' || (ch == '*' && i + 1 < md->len && md->p[i + 1] == '*') ||
            (ch == '*' && i > 0 && md->p[i - 1] == '*'))
            continue;
        if (ch == '\\' && i + 1 < md->len && md->p[i + 1] != '\n')
            ch = md->p[++i];
        buf[k++] = ch;
    }
    buf[k] = '\0';
}

static int build_docs(const struct report *R, struct tb_sbuf *md, struct tb_sbuf *html,
                      char *answers, size_t alen)
{
    size_t from;
    struct tb_doc d;
    char models[256], title[400], stand_ins[96] = "";
    size_t nstand = 0;
    memset(&d, 0, sizeof d);
    tb_report_models(R, models, sizeof models);
    snprintf(title, sizeof title, "trnbench report: %s", models);
    for (size_t i = 0; i < R->cs.ncosts; i++)
        nstand += tb_cost_stand_in(&R->cs.costs[i]);
    if (nstand)
        snprintf(stand_ins, sizeof stand_ins,
                 ", %zu more at their target's nearest comparable price (marked *)", nstand);

    tb_doc_page_begin(&d, title); /* the page, its stylesheet: the assessment's too */
    tb_doc_h(&d, 1, title);
    tb_doc_p(&d, "lead",
             "%zu result rows (%zu measured, %zu of them imported, %zu modeled, %zu "
             "published); %zu of %zu throughput rows priced at %s %s%s. Every number says "
             "where it comes from (hover over it).",
             R->res.nrows, R->res.nprov[TB_PROV_MEASURED], tb_report_count(R, TB_REPORT_IMPORTED),
             R->res.nprov[TB_PROV_MODELED], R->res.nprov[TB_PROV_PUBLISHED], R->cs.npriced,
             R->cs.ncosts, R->o->region ? R->o->region : "us-east-1",
             R->o->purchase ? R->o->purchase : "on-demand", stand_ins);
    from = d.md.len;
    write_summary(&d, R);
    plain_answers(&d.md, from, answers, alen);
    write_matrix(&d, R);
    write_host_cpu(&d, R);
    write_charts(&d, R);
    write_limits(&d, R);
    write_training(&d, R);
    write_model_check(&d, R);
    tb_report_write_collectives(&d, R);
    tb_report_write_serving(&d, R);
    write_cost(&d, R);
    write_purchase_matrix(&d, R);
    write_prices(&d, R);
    write_assessment(&d, R);
    write_context(&d, R);
    write_definitions(&d, R);
    write_provenance(&d, R);
    write_runs(&d, R);
    tb_doc_page_end(&d);
    *md = d.md;
    *html = d.html;
    return md->failed || html->failed ? -1 : 0;
}

/* The assessment section: the caller's assessment (cmd_report.c runs it) rendered as
 * Markdown and HTML for the documents, and assessment.csv into the scratch folder. */
static int render_assessment(struct report *R, char *err, size_t errlen)
{
    const struct tb_report_opts *o = R->o;
    struct tb_assess_opts defaults;
    const struct tb_assess_opts *ao = o->assess_opts;
    FILE *f[3] = {NULL, NULL, NULL};
    char *text[3] = {NULL, NULL, NULL};
    size_t len[3];
    int rc = TB_EFAIL;
    if (!o->assessment) {
        R->assess_why = o->assess_why
                            ? o->assess_why
                            : "No assessment: give a workload file with --assess FILE (format and "
                              "examples in reports/examples/; make bench BENCH_ASSESS=FILE).";
        return TB_OK;
    }
    if (!ao) {
        tb_assess_opts_init(&defaults);
        ao = &defaults;
    }
    for (int i = 0; i < 3; i++) {
        f[i] = open_memstream(&text[i], &len[i]);
        if (!f[i]) {
            tb_err(err, errlen, "out of memory");
            goto out;
        }
    }
    if (tb_assess_write_md_at(o->assessment, ao, 2, f[0]) != 0 ||
        tb_assess_write_html_at(o->assessment, ao, 2, f[1]) != 0 ||
        tb_assess_write_csv(o->assessment, f[2]) != 0) {
        tb_err(err, errlen, "cannot write the assessment section");
        goto out;
    }
    rc = TB_OK;
out:
    for (int i = 0; i < 3; i++)
        if (f[i] && fclose(f[i]) != 0 && rc == TB_OK) {
            tb_err(err, errlen, "out of memory");
            rc = TB_EFAIL;
        }
    if (rc == TB_OK) {
        char p[4400];
        R->assess_md = text[0];
        R->assess_html = text[1];
        text[0] = text[1] = NULL;
        if (tb_report_path_in(p, sizeof p, R->dir.tmpdir, "assessment.csv") != 0 ||
            tb_write_file_atomic(p, text[2], len[2], err, errlen) != 0)
            rc = TB_EFAIL;
    }
    for (int i = 0; i < 3; i++)
        free(text[i]);
    return rc;
}

void tb_report_opts_init(struct tb_report_opts *o)
{
    memset(o, 0, sizeof *o);
    o->usd_per_hour = NAN;
    o->max_price_age_days = 180;
    o->ttft_limit_ms = 2000;
    o->tpot_limit_ms = 200;
    o->train_tokens = 1e12;
}

/* The model's error per chip family and phase: the validation file (the data folder's
 * reports/validation/published.csv) predicted by the model of the price folder. Without
 * either the modeled figures carry no range, said in a note. */
static void load_validation(struct report *R)
{
    char e[1024];
    if (R->o->catalog_model)
        R->model = *R->o->catalog_model; /* the caller's, not released here */
    else if (tb_model_load(&R->model, &R->pricing, R->o->pricing_dir, e, sizeof e) != 0) {
        tb_report_note(R, "no model error ranges: %s", e);
        return;
    }
    if (tb_validate_file(&R->val, NULL, &R->model, e, sizeof e) != TB_OK) {
        tb_report_note(R, "no model error ranges: %s", e);
        if (!R->o->catalog_model)
            tb_model_release(&R->model);
        return;
    }
    R->have_val = true;
    /* the ranges are held-out errors (cross-validation) unless the stored ones do not
     * belong to this model: then the in-sample ones, which are too narrow, said so */
    if (!R->val.basis[0])
        tb_report_note(R, "model error ranges are in-sample, not held out: %s", R->val.cross_why);
}

/* R's price tables: o's catalogue (a shallow copy, not released), or loaded from
 * o's folder. */
static int report_pricing(struct report *R, char *err, size_t errlen)
{
    const struct tb_report_opts *o = R->o;
    if (o->catalog_pricing) {
        R->pricing = *o->catalog_pricing;
        R->borrowed = true;
    } else if (tb_pricing_load(&R->pricing, o->pricing_dir, err, errlen) != 0) {
        return -1;
    }
    R->have_pricing = true;
    if (o->discounts)
        R->pricing.discounts = *o->discounts;
    return 0;
}

/* The cost stage's options: the report's, its baseline resolved. */
static void cost_opts(const struct report *R, struct tb_cost_opts *co)
{
    const struct tb_report_opts *o = R->o;
    memset(co, 0, sizeof *co);
    co->instance = o->instance;
    co->region = o->region;
    co->purchase = o->purchase;
    co->usd_per_hour = o->usd_per_hour;
    co->baseline = o->baseline ? o->baseline : TB_REPORT_BASELINE;
    co->max_price_age_days = o->max_price_age_days;
    co->ttft_limit_ms = o->ttft_limit_ms;
    co->tpot_limit_ms = o->tpot_limit_ms;
    co->train_tokens = o->train_tokens;
    co->now = R->now;
    co->validation = R->have_val ? &R->val : NULL;
}

int tb_report_check(const struct tb_report_opts *o, char *err, size_t errlen)
{
    struct report R;
    struct tb_cost_opts co;
    struct tb_price_choice host;
    int rc;
    memset(&R, 0, sizeof R);
    R.o = o;
    tb_utc_now(R.now, sizeof R.now);
    if (report_pricing(&R, err, errlen) != 0)
        return TB_EINPUT;
    cost_opts(&R, &co);
    rc = tb_cost_opts_check(&R.pricing, &co, &host, err, errlen) != 0 ? TB_EINPUT : TB_OK;
    if (rc == TB_OK && o->nresults) /* and the results' rows, as the cost stage takes them */
        rc = tb_results_load(&R.res, o->results, o->nresults, err, errlen) != 0 ||
                     tb_costs_build(&R.cs, &R.res, &R.pricing, &co, err, errlen) != 0
                 ? TB_EINPUT
                 : TB_OK;
    tb_costs_release(&R.cs);
    tb_results_release(&R.res);
    if (!R.borrowed)
        tb_pricing_release(&R.pricing);
    return rc;
}

int tb_report_write(const struct tb_report_opts *o, struct tb_report_info *info, char *err,
                    size_t errlen)
{
    struct report R;
    struct tb_sbuf md = {0}, html = {0};
    char p[4400], outdir[4096], answers[4096] = "";
    struct tb_cost_opts co;
    int rc = TB_EINPUT;

    memset(&R, 0, sizeof R);
    R.o = o;
    tb_utc_now(R.now, sizeof R.now);

    /* 1. inputs: every check before anything is written */
    if (tb_results_load(&R.res, o->results, o->nresults, err, errlen) != 0)
        goto out;
    snprintf(R.notes, sizeof R.notes, "%s", R.res.notes); /* a predict output read, say */
    if (report_pricing(&R, err, errlen) != 0)
        goto out;
    load_validation(&R);
    if (tb_report_coll_load(&R, err, errlen) != 0)
        goto out;
    /* prices, costs and the ranking: the region, purchase model, host price, baseline
     * and chips_used are checked there */
    cost_opts(&R, &co);
    if (tb_costs_build(&R.cs, &R.res, &R.pricing, &co, err, errlen) != 0)
        goto out;

    /* 2. the output folder and a scratch folder inside it (same file system: renames) */
    rc = TB_EFAIL;
    if (o->out_dir) {
        snprintf(outdir, sizeof outdir, "%s", o->out_dir);
    } else {
        const char *slash = strrchr(o->results[0], '/');
        if (!slash)
            snprintf(outdir, sizeof outdir, ".");
        else if (slash == o->results[0])
            snprintf(outdir, sizeof outdir, "/");
        else
            snprintf(outdir, sizeof outdir, "%.*s", (int)(slash - o->results[0]), o->results[0]);
    }
    if (tb_report_scratch_open(&R.dir, outdir, err, errlen) != 0)
        goto out;

    /* 3. the assessment section, charts, cost table, documents, then publish */
    if (render_assessment(&R, err, errlen) != TB_OK)
        goto out;
    if (tb_report_draw_charts(&R, err, errlen) != 0)
        goto out;
    if (tb_report_path_in(p, sizeof p, R.dir.tmpdir, "cost.csv") != 0 ||
        tb_costs_write_csv(&R.cs, p, err, errlen) != 0)
        goto out;
    tb_report_short_paths(&R);
    if (build_docs(&R, &md, &html, answers, sizeof answers) != 0) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    if (tb_report_scratch_write(&R.dir, "report.md", &md, err, errlen) != 0 ||
        tb_report_scratch_write(&R.dir, "report.html", &html, err, errlen) != 0)
        goto out;
    if (tb_report_scratch_publish(&R.dir, err, errlen) != 0)
        goto out;
    if (info) {
        memset(info, 0, sizeof *info);
        snprintf(info->out_dir, sizeof info->out_dir, "%s", R.dir.outdir);
        info->ncharts = R.ncharts;
        info->png = R.ncharts > 0 && R.charts[0].png;
        info->nrows = R.res.nrows;
        info->ncosted = R.cs.npriced;
        for (size_t i = 0; i < R.cs.ncosts; i++)
            info->nstand_in += tb_cost_stand_in(&R.cs.costs[i]);
        snprintf(info->notes, sizeof info->notes, "%s", R.notes);
        snprintf(info->answers, sizeof info->answers, "%s", answers);
    }
    rc = TB_OK;
out:
    tb_report_scratch_remove(&R.dir);
    tb_sb_release(&md);
    tb_sb_release(&html);
    for (int i = 0; i < R.ncharts; i++)
        free(R.charts[i].svg);
    free(R.assess_md);
    free(R.assess_html);
    tb_costs_release(&R.cs);
    tb_report_coll_release(&R);
    if (R.have_val) {
        tb_validate_release(&R.val);
        if (!o->catalog_model)
            tb_model_release(&R.model);
    }
    if (R.have_pricing && !R.borrowed)
        tb_pricing_release(&R.pricing);
    tb_results_release(&R.res);
    return rc;
}
