/* harness/report/assess_doc.c: the migration assessment's outputs, after tb_assess.c has
 * computed it: assessment.csv, and the Markdown and HTML documents written once through
 * tb_doc (one writer, two documents, so they cannot drift apart), standalone or as the
 * report's section. */
#include "tb_assess.h"

#include "tb_csv.h"
#include "tb_doc.h"
#include "tb_util.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers as text ---- */

/* v with prec decimals ("%.*f"), or with 6 significant digits when prec < 0; "" for
 * NAN, "never" for infinity; a "$" in front when dollar. */
static const char *fmtn_(double v, char *buf, size_t len, int prec, bool dollar)
{
    if (isnan(v))
        buf[0] = '\0';
    else if (isinf(v))
        snprintf(buf, len, "never");
    else if (prec < 0)
        snprintf(buf, len, "%s%.6g", dollar ? "$" : "", v);
    else
        snprintf(buf, len, "%s%.*f", dollar ? "$" : "", prec, v);
    return buf;
}

/* ---- CSV ---- */

int tb_assess_write_csv(const struct tb_assessment *as, FILE *f)
{
    static const char *const cols[] = {"workload",
                                       "candidate",
                                       "current",
                                       "fleet_instances",
                                       "capacity_per_instance",
                                       "need",
                                       "unit",
                                       "usd_per_hour",
                                       "monthly_usd",
                                       "current_monthly_usd",
                                       "saving_usd",
                                       "saving_pct",
                                       "break_even_months",
                                       "saving_usd_price_low",
                                       "saving_usd_price_high",
                                       "model_error_pct",
                                       "saving_usd_model_low",
                                       "saving_usd_model_high",
                                       "verdict",
                                       "price",
                                       "layout",
                                       "why",
                                       "risks",
                                       NULL};
    int rc = 0;
    for (int i = 0; cols[i]; i++)
        rc |= tb_csv_put(f, cols[i], cols[i + 1] ? ',' : '\n');
    for (size_t i = 0; i < as->nrows; i++) {
        const struct tb_assess_row *r = &as->rows[i];
        char b[16][48];
        const char *v[23];
        int k = 0;
        v[k++] = tb_csv_field(&as->csv, r->workload, "name");
        v[k++] = r->candidate;
        v[k++] = r->current ? "yes" : "no";
        v[k++] = r->ok ? fmtn_((double)r->fleet, b[0], 48, 0, false) : "";
        v[k++] = r->ok ? fmtn_(r->capacity, b[1], 48, -1, false) : "";
        v[k++] = fmtn_(r->need, b[2], 48, -1, false);
        v[k++] = r->unit;
        v[k++] = r->ok ? fmtn_(r->usd_per_hour, b[3], 48, -1, false) : "";
        v[k++] = fmtn_(r->monthly_usd, b[4], 48, 2, false);
        v[k++] = fmtn_(as->current_monthly[r->workload], b[5], 48, 2, false);
        v[k++] = fmtn_(r->saving_usd, b[6], 48, 2, false);
        v[k++] = fmtn_(100 * r->saving_frac, b[7], 48, 1, false);
        v[k++] = fmtn_(r->break_even_months, b[8], 48, 2, false);
        v[k++] = fmtn_(r->saving_lo_price, b[9], 48, 2, false);
        v[k++] = fmtn_(r->saving_hi_price, b[10], 48, 2, false);
        v[k++] = fmtn_(100 * r->model_err, b[11], 48, 1, false);
        v[k++] = fmtn_(r->saving_lo_model, b[12], 48, 2, false);
        v[k++] = fmtn_(r->saving_hi_model, b[13], 48, 2, false);
        v[k++] = r->verdict;
        v[k++] = r->price;
        v[k++] = r->layout;
        v[k++] = r->why;
        v[k++] = r->risks;
        for (int j = 0; j < k; j++)
            rc |= tb_csv_put(f, v[j], j + 1 < k ? ',' : '\n');
    }
    return rc || ferror(f) ? TB_EFAIL : TB_OK;
}

/* ---- the document ---- */

/* Rows of one workload, priced ones by monthly cost. */
static size_t sorted_rows(const struct tb_assessment *as, size_t wi,
                          const struct tb_assess_row **out)
{
    size_t n = 0;
    for (size_t i = 0; i < as->nrows; i++)
        if (as->rows[i].workload == wi)
            out[n++] = &as->rows[i];
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0; j--) {
            const struct tb_assess_row *a = out[j - 1], *b = out[j];
            double x = a->ok ? a->monthly_usd : INFINITY, y = b->ok ? b->monthly_usd : INFINITY;
            if (x <= y)
                break;
            out[j - 1] = b;
            out[j] = a;
        }
    return n;
}

/* Whether rows[i] is a candidate (not the current fleet) whose chip family no earlier
 * row has: the place to list that family's risks once. */
static bool first_of_family(const struct tb_assess_row *const *rows, size_t i)
{
    if (!rows[i]->family || rows[i]->current)
        return false;
    for (size_t j = 0; j < i; j++)
        if (rows[j]->family && !strcmp(rows[j]->family, rows[i]->family))
            return false;
    return true;
}

/* The risks of the chip families among rows[0..n-1] (pricing/risks.csv), each family
 * once with its candidates, each risk with its source. */
static void write_risks(struct tb_doc *d, const struct tb_assessment *as,
                        const struct tb_assess_row *const *rows, size_t n)
{
    tb_doc_p(d, NULL, "Risks to check before moving (pricing/risks.csv), by chip family:");
    tb_doc_list_begin(d);
    for (size_t i = 0; i < n; i++) {
        size_t nrisks = 0;
        if (!first_of_family(rows, i))
            continue;
        tb_doc_item_begin(d);
        tb_doc_strong(d, rows[i]->family);
        tb_doc_text(d, " (");
        for (size_t j = i, k = 0; j < n; j++)
            if (rows[j]->family && !strcmp(rows[j]->family, rows[i]->family))
                tb_doc_text(d, "%s%s", k++ ? ", " : "", rows[j]->candidate);
        tb_doc_text(d, ")");
        for (size_t r = 0; as->have_risks && r < as->risks.nrows; r++) {
            if (!tb_assess_risk_applies(tb_csv_field(&as->risks, r, "family"), rows[i]->family))
                continue;
            if (nrisks++ == 0)
                tb_doc_list_begin(d);
            tb_doc_item_begin(d);
            tb_doc_text(d, "%s: %s (source: %s)", tb_csv_field(&as->risks, r, "topic"),
                        tb_csv_field(&as->risks, r, "risk"), tb_csv_field(&as->risks, r, "source"));
            tb_doc_item_end(d);
        }
        if (nrisks)
            tb_doc_list_end(d);
        tb_doc_item_end(d);
    }
    tb_doc_list_end(d);
}

/* One workload: what it is and costs now, its candidates by monthly cost, the risks. */
static void write_workload(struct tb_doc *d, const struct tb_assessment *as,
                           const struct tb_assess_opts *o, int level, size_t wi,
                           const struct tb_assess_row **rows)
{
    size_t n = sorted_rows(as, wi, rows);
    const char *region = tb_csv_field(&as->csv, wi, "region");
    const char *purchase = tb_csv_field(&as->csv, wi, "current_purchase");
    char swing[64], b[10][48];
    const char *head[] = {"Candidate",           "Fleet", "Monthly USD",         "Saving",
                          "Break-even (months)", swing,   "Saving, model error", "Verdict"};

    tb_doc_h(d, level, tb_csv_field(&as->csv, wi, "name"));
    tb_doc_p(d, NULL, "%s %s on %s (%s, %s); load %s %s. Current monthly cost: %s (%s).",
             tb_csv_field(&as->csv, wi, "model"), tb_csv_field(&as->csv, wi, "phase"),
             tb_csv_field(&as->csv, wi, "current_instance"), *region ? region : "us-east-1",
             *purchase ? purchase : "on-demand",
             fmtn_(n ? rows[0]->need : NAN, b[0], 48, -1, false), n ? rows[0]->unit : "",
             fmtn_(as->current_monthly[wi], b[1], 48, 0, true), as->current_why[wi]);
    snprintf(swing, sizeof swing, "Saving, prices +-%.0f%%", 100 * o->price_swing);
    tb_doc_table(d, "tnnrrrrt", head);
    for (size_t i = 0; i < n; i++) {
        const struct tb_assess_row *r = rows[i];
        char cand[128], saving[112], price[112], model[176];
        if (!r->ok) {
            /* the reason spans the numbers it stands in for */
            static const int span[] = {1, 7};
            const char *cells[] = {r->candidate, r->why};
            tb_doc_row_span(d, cells, NULL, span);
            continue;
        }
        snprintf(cand, sizeof cand, "%s%s", r->candidate, r->current ? " (current)" : "");
        snprintf(saving, sizeof saving, "%s (%s%%)", fmtn_(r->saving_usd, b[0], 48, 0, false),
                 fmtn_(100 * r->saving_frac, b[1], 48, 0, false));
        snprintf(price, sizeof price, "%s to %s", fmtn_(r->saving_lo_price, b[2], 48, 0, false),
                 fmtn_(r->saving_hi_price, b[3], 48, 0, false));
        snprintf(model, sizeof model, "%s to %s (+-%s%%)",
                 fmtn_(r->saving_lo_model, b[4], 48, 0, false),
                 fmtn_(r->saving_hi_model, b[5], 48, 0, false),
                 fmtn_(100 * r->model_err, b[6], 48, 0, false));
        {
            const char *cells[] = {cand,
                                   fmtn_((double)r->fleet, b[7], 48, 0, false),
                                   fmtn_(r->monthly_usd, b[8], 48, 0, false),
                                   saving,
                                   fmtn_(r->break_even_months, b[9], 48, 1, false),
                                   price,
                                   model,
                                   r->verdict};
            /* the price row used, as the candidate's tooltip */
            const char *tips[] = {r->price, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
            tb_doc_row_tip(d, cells, tips);
        }
    }
    tb_doc_table_end(d);
    write_risks(d, as, rows, n);
}

int tb_assess_doc(const struct tb_assessment *as, const struct tb_assess_opts *o, int level,
                  struct tb_doc *d)
{
    const struct tb_assess_row **rows = tb_alloc_array(as->nrows + 1, sizeof *rows);
    if (!rows)
        return TB_EFAIL;
    tb_doc_h(d, level, "Migration assessment");
    tb_doc_p_begin(d, NULL);
    tb_doc_text(d, "For each workload of ");
    tb_doc_code(d, as->csv.path);
    tb_doc_text(d,
                ", every catalogued instance type with a price is sized to carry the load within "
                "the latency targets (performance model, modeled), priced from "
                "pricing/prices.csv, and compared with the current fleet. Thresholds: a spend "
                "under $%.0f/month rarely repays a migration; %.0f-%.0f%% savings are the usual "
                "claims to test. Sensitivity: prices +-%.0f%%, and the capacity within the "
                "model's median validation error for the chip family.",
                o->min_monthly_usd, 100 * o->claim_low, 100 * o->claim_high, 100 * o->price_swing);
    tb_doc_p_end(d);
    for (size_t wi = 0; wi < as->csv.nrows; wi++)
        write_workload(d, as, o, level + 1, wi, rows);
    free(rows);
    return d->md.failed || d->html.failed ? TB_EFAIL : TB_OK;
}

/* ---- the documents as files ---- */

/* Render into a tb_doc and write the Markdown (html false) or the HTML text to f: a
 * section at level, or (page) a whole HTML page. */
static int write_doc(const struct tb_assessment *as, const struct tb_assess_opts *o, int level,
                     bool html, bool page, FILE *f)
{
    struct tb_doc d;
    const struct tb_sbuf *b;
    int rc;

    memset(&d, 0, sizeof d);
    if (page)
        tb_doc_page_begin(&d, "trnbench migration assessment");
    rc = tb_assess_doc(as, o, level, &d);
    if (page)
        tb_doc_page_end(&d);
    b = html ? &d.html : &d.md;
    if (rc == TB_OK && (b->failed || fwrite(b->p, 1, b->len, f) != b->len || ferror(f)))
        rc = TB_EFAIL;
    tb_sb_release(&d.md);
    tb_sb_release(&d.html);
    return rc;
}

int tb_assess_write_md(const struct tb_assessment *as, const struct tb_assess_opts *o, FILE *f)
{
    return write_doc(as, o, 1, false, false, f);
}

int tb_assess_write_html(const struct tb_assessment *as, const struct tb_assess_opts *o, FILE *f)
{
    return write_doc(as, o, 1, true, true, f);
}

int tb_assess_write_md_at(const struct tb_assessment *as, const struct tb_assess_opts *o, int level,
                          FILE *f)
{
    return write_doc(as, o, level, false, false, f);
}

int tb_assess_write_html_at(const struct tb_assessment *as, const struct tb_assess_opts *o,
                            int level, FILE *f)
{
    return write_doc(as, o, level, true, false, f);
}
