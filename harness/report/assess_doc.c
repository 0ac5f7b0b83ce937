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

static const char *phase_name(enum tb_phase p)
{
    return p == TB_PHASE_TRAIN ? "train" : p == TB_PHASE_DENOISE ? "denoise" : "serve";
}

int tb_assess_write_csv(const struct tb_assessment *as, FILE *f)
{
    static const char *const cols[] = {"workload",
                                       "phase",
                                       "candidate",
                                       "current",
                                       "rebuy",
                                       "instances_per_replica",
                                       "replicas",
                                       "fleet_instances",
                                       "capacity_per_replica",
                                       "capacity_unit",
                                       "need",
                                       "need_unit",
                                       "requests_per_s",
                                       "e2e_latency_s",
                                       "in_flight",
                                       "concurrency_per_replica",
                                       "bound",
                                       "cluster_hours",
                                       "utilisation_pct",
                                       "cblock_days",
                                       "spot_on_demand_replicas",
                                       "pricing_basis",
                                       "purchase",
                                       "usd_per_hour",
                                       "break_even_utilisation_pct",
                                       "break_even_purchase",
                                       "monthly_usd",
                                       "current_monthly_usd",
                                       "baseline_usd",
                                       "baseline",
                                       "like_for_like",
                                       "like_for_like_saving_usd",
                                       "like_for_like_saving_pct",
                                       "saving_usd",
                                       "saving_pct",
                                       "comparison",
                                       "break_even_months",
                                       "saving_usd_price_low",
                                       "saving_usd_price_high",
                                       "model_error_pct",
                                       "model_error_basis",
                                       "saving_usd_model_low",
                                       "saving_usd_model_high",
                                       "model_range_note",
                                       "verdict",
                                       "price",
                                       "price_note",
                                       "layout",
                                       "why",
                                       "risks",
                                       NULL};
    int rc = 0;
    for (int i = 0; cols[i]; i++)
        rc |= tb_csv_put(f, cols[i], cols[i + 1] ? ',' : '\n');
    for (size_t i = 0; i < as->nrows; i++) {
        const struct tb_assess_row *r = &as->rows[i];
        char b[32][48];
        const char *v[sizeof cols / sizeof cols[0]];
        int k = 0;
        v[k++] = tb_csv_field(&as->csv, r->workload, "name");
        v[k++] = phase_name(as->phase[r->workload]);
        v[k++] = r->candidate;
        v[k++] = r->current ? "yes" : "no";
        v[k++] = r->rebuy ? "yes" : "no";
        v[k++] = r->instances ? fmtn_((double)r->instances, b[0], 48, 0, false) : "";
        v[k++] = r->ok ? fmtn_(r->replicas, b[1], 48, 0, false) : "";
        v[k++] = r->ok ? fmtn_((double)r->fleet, b[2], 48, 0, false) : "";
        v[k++] = r->instances ? fmtn_(r->capacity, b[3], 48, -1, false) : "";
        v[k++] = r->cap_unit;
        v[k++] = fmtn_(r->need, b[4], 48, -1, false);
        v[k++] = r->need_unit;
        v[k++] = fmtn_(r->rps, b[5], 48, -1, false);
        v[k++] = fmtn_(r->e2e_s, b[6], 48, -1, false);
        v[k++] = fmtn_(r->in_flight, b[7], 48, -1, false);
        v[k++] = fmtn_(r->concurrency, b[8], 48, 0, false);
        v[k++] = r->ok ? r->bound : "";
        v[k++] = fmtn_(r->cluster_hours, b[9], 48, 2, false);
        v[k++] = fmtn_(100 * r->utilisation, b[10], 48, 1, false);
        v[k++] = fmtn_(r->cblock_days, b[24], 48, 0, false);
        v[k++] = fmtn_(r->od_replicas, b[25], 48, 0, false);
        v[k++] = r->basis;
        v[k++] = r->purchase;
        v[k++] = r->ok ? fmtn_(r->usd_per_hour, b[11], 48, -1, false) : "";
        v[k++] = fmtn_(100 * r->break_even_util, b[12], 48, 1, false);
        v[k++] = r->break_even_purchase;
        v[k++] = fmtn_(r->monthly_usd, b[13], 48, 2, false);
        v[k++] = fmtn_(as->current_monthly[r->workload], b[14], 48, 2, false);
        v[k++] = fmtn_(r->base_usd, b[15], 48, 2, false);
        v[k++] = r->base_basis;
        v[k++] = r->ok ? (r->like_for_like ? "yes" : "no") : "";
        v[k++] = fmtn_(r->like_saving_usd, b[26], 48, 2, false);
        v[k++] = fmtn_(100 * r->like_saving_frac, b[27], 48, 1, false);
        v[k++] = fmtn_(r->saving_usd, b[16], 48, 2, false);
        v[k++] = fmtn_(100 * r->saving_frac, b[17], 48, 1, false);
        v[k++] = r->compare;
        v[k++] = fmtn_(r->break_even_months, b[18], 48, 2, false);
        v[k++] = fmtn_(r->saving_lo_price, b[19], 48, 2, false);
        v[k++] = fmtn_(r->saving_hi_price, b[20], 48, 2, false);
        v[k++] = fmtn_(100 * r->model_err, b[21], 48, 1, false);
        v[k++] = r->model_err_basis;
        v[k++] = fmtn_(r->saving_lo_model, b[22], 48, 2, false);
        v[k++] = fmtn_(r->saving_hi_model, b[23], 48, 2, false);
        v[k++] = r->model_note;
        v[k++] = as->verdict[r->workload];
        v[k++] = r->price;
        v[k++] = r->price_note;
        v[k++] = r->layout;
        v[k++] = r->why;
        v[k++] = r->risks;
        for (int j = 0; j < k; j++)
            rc |= tb_csv_put_text(f, v[j], j + 1 < k ? ',' : '\n');
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

/* The instances of a row: "3", or "6 (3 x 2)" for replicas or clusters of several. */
static const char *instances_text(const struct tb_assess_row *r, char *buf, size_t len)
{
    if (r->instances > 1)
        snprintf(buf, len, "%ld (%.0f x %ld)", r->fleet, r->replicas, r->instances);
    else
        snprintf(buf, len, "%ld", r->fleet);
    return buf;
}

/* How a row is paid: its basis and, for training, where the commitment pays. */
static const char *basis_text(const struct tb_assess_row *r, bool train, char *buf, size_t len)
{
    char u[48];
    if (!train || r->current)
        snprintf(buf, len, "%s", r->basis);
    else if (!isnan(r->break_even_util) && r->committed)
        snprintf(buf, len, "%s (pays above %s%% use)", r->basis,
                 fmtn_(100 * r->break_even_util, u, sizeof u, 0, false));
    else if (!isnan(r->break_even_util))
        snprintf(buf, len, "%s (%s pays above %s%% use)", r->basis, r->break_even_purchase,
                 fmtn_(100 * r->break_even_util, u, sizeof u, 0, false));
    else if (r->committed)
        snprintf(buf, len, "%s (no pay-by-the-hour price)", r->basis);
    else
        snprintf(buf, len, "%s (no reserved or savings-plan price)", r->basis);
    return buf;
}

/* What bounds a row's fleet: Little's law or the throughput. */
static const char *bound_text(const struct tb_assess_row *r, enum tb_phase phase, char *buf,
                              size_t len)
{
    char a[48], b[48];
    if (phase == TB_PHASE_SERVE && !strcmp(r->bound, "latency"))
        snprintf(buf, len, "latency: %s in flight / %s per replica",
                 fmtn_(r->in_flight, a, sizeof a, 1, false),
                 fmtn_(r->concurrency, b, sizeof b, 0, false));
    else if (phase == TB_PHASE_TRAIN)
        snprintf(buf, len, "throughput: %s %s per cluster",
                 fmtn_(r->capacity, a, sizeof a, 0, false), r->cap_unit);
    else
        snprintf(buf, len, "throughput: %s of %s %s per replica",
                 fmtn_(r->need, a, sizeof a, phase == TB_PHASE_DENOISE ? 3 : 0, false),
                 fmtn_(r->capacity, b, sizeof b, phase == TB_PHASE_DENOISE ? 3 : 0, false),
                 r->cap_unit);
    return buf;
}

/* The workload's load and how its candidates are sized, as one paragraph. */
static void write_load(struct tb_doc *d, const struct tb_assessment *as,
                       const struct tb_assess_opts *o, size_t wi, const struct tb_assess_row *r0)
{
    const struct tb_csv_table *t = &as->csv;
    const char *ttft =
        tb_csv_field(t, wi, tb_csv_col(t, "ttft_limit_ms") >= 0 ? "ttft_limit_ms" : "ttft_ms");
    const char *tpot =
        tb_csv_field(t, wi, tb_csv_col(t, "tpot_limit_ms") >= 0 ? "tpot_limit_ms" : "tpot_ms");
    char b[3][48];
    if (!r0)
        return;
    if (as->phase[wi] == TB_PHASE_SERVE)
        tb_doc_p(d, NULL,
                 "Load: %s requests/s x %s output tokens = %s tokens/s; targets: TTFT %s ms, "
                 "TPOT %s ms. Each candidate is an always-on fleet of replicas, a replica the "
                 "smallest layout of 1 to 64 instances that holds the model within the targets. "
                 "Requests in flight = request rate x end-to-end latency (Little's law); "
                 "replicas = in flight / the requests one replica holds within the targets, "
                 "rounded up, and no fewer than its token throughput needs: the bound says "
                 "which applied.",
                 fmtn_(r0->rps, b[0], 48, -1, false), tb_csv_field(t, wi, "seq_out"),
                 fmtn_(r0->need, b[1], 48, -1, false), *ttft ? ttft : "(none)",
                 *tpot ? tpot : "(none)");
    else if (as->phase[wi] == TB_PHASE_TRAIN)
        tb_doc_p(d, NULL,
                 "Load: %s training tokens a month (sequence length %s). Each candidate is a "
                 "cluster, the smallest of 1 to 64 instances that holds the model, running "
                 "cluster-hours = tokens a month / its tokens per second: paid by the hour "
                 "(cluster-hours x instances x the hourly price), or as Capacity Blocks of whole "
                 "days (1 to 14 days, then 7-day steps up to 182; at most 64 instances a block; "
                 "paid up front: days x 24 h x instances x the price; the table says how much of "
                 "the days bought the job uses), or bought as reserved clusters for the month "
                 "(clusters x %.0f h x instances x the committed price) where that is cheaper; "
                 "the pricing basis says which, and the utilisation above which the commitment "
                 "pays.",
                 fmtn_(r0->need, b[0], 48, -1, false), tb_csv_field(t, wi, "seq_in"),
                 o->hours_per_month);
    else
        tb_doc_p(d, NULL,
                 "Load: %s images a month = %s images/s. Each candidate is an always-on fleet "
                 "for that throughput, bought on-demand, reserved or on a savings plan.",
                 tb_csv_field(t, wi, "images_per_month"), fmtn_(r0->need, b[0], 48, -1, false));
}

/* One workload: what it is and costs now, its one verdict, its candidates by monthly cost,
 * the risks. */
static void write_workload(struct tb_doc *d, const struct tb_assessment *as,
                           const struct tb_assess_opts *o, int level, size_t wi,
                           const struct tb_assess_row **rows)
{
    size_t n = sorted_rows(as, wi, rows);
    enum tb_phase phase = as->phase[wi];
    const char *region = tb_csv_field(&as->csv, wi, "region");
    const char *purchase = tb_csv_field(&as->csv, wi, "current_purchase");
    const char *reserve = tb_csv_field(&as->csv, wi, "spot_reserve");
    char swing[64], b[10][48];
    const char *head[] = {"Candidate",
                          "Instances",
                          "Cluster-hours a month",
                          "Pricing basis",
                          "Bound",
                          "Monthly USD",
                          "Against now",
                          "Like for like",
                          "Break-even (months)",
                          swing,
                          "Saving, model error"};

    tb_doc_h(d, level, tb_csv_field(&as->csv, wi, "name"));
    tb_doc_p(d, NULL, "%s %s on %s (%s, %s%s%s). Current monthly cost: %s (%s).",
             tb_csv_field(&as->csv, wi, "model"), tb_csv_field(&as->csv, wi, "phase"),
             tb_csv_field(&as->csv, wi, "current_instance"), *region ? region : "us-east-1",
             *purchase ? purchase : "on-demand", *reserve ? ", spot_reserve " : "", reserve,
             fmtn_(as->current_monthly[wi], b[1], 48, 0, true), as->current_why[wi]);
    tb_doc_p_begin(d, NULL);
    tb_doc_strong(d, "Verdict:");
    tb_doc_text(d, " %s.", as->verdict[wi]);
    tb_doc_p_end(d);
    write_load(d, as, o, wi, n ? rows[0] : NULL);
    tb_doc_p(d, NULL,
             "Against now: the saving against what the team pays now (its purchase model and "
             "region), the figure the break-even and the sensitivities use. Like for like: the "
             "current fleet bought as the candidate is (the same purchase model and region; "
             "where the current instance has no such price, its on-demand price, said so), and "
             "the candidate against it. The rows marked 'bought as' are the current instance "
             "bought another way it is sold: what keeping it would cost.");
    snprintf(swing, sizeof swing, "Saving, prices +-%.0f%%", 100 * o->price_swing);
    tb_doc_table(d, "tnnttnrtrrt", head);
    for (size_t i = 0; i < n; i++) {
        const struct tb_assess_row *r = rows[i];
        char cand[160], now[256], like[400], price[112], model[400], inst[64], basis[200],
            bound[160], w[64];
        if (!r->ok) {
            /* the reason spans the numbers it stands in for */
            static const int span[] = {1, 10};
            const char *cells[] = {r->candidate, r->why};
            tb_doc_row_span(d, cells, NULL, span);
            continue;
        }
        if (r->rebuy)
            snprintf(cand, sizeof cand, "%s (current, bought as %s)", r->candidate, r->purchase);
        else
            snprintf(cand, sizeof cand, "%s%s", r->candidate, r->current ? " (current)" : "");
        if (isnan(r->saving_usd))
            snprintf(now, sizeof now, "%s", r->compare);
        else if (r->current && !r->rebuy)
            snprintf(now, sizeof now, "%s", r->compare);
        else
            snprintf(now, sizeof now, "%s (%s)", fmtn_(r->saving_usd, b[0], 48, 0, false),
                     tb_assess_versus(r->monthly_usd, as->current_monthly[wi], w, sizeof w));
        if (r->current)
            snprintf(like, sizeof like, "itself");
        else if (isnan(r->base_usd))
            snprintf(like, sizeof like, "%s", r->base_basis);
        else
            snprintf(like, sizeof like, "%s: %s (%s)", r->base_basis,
                     fmtn_(r->base_usd, b[1], 48, 0, true),
                     tb_assess_versus(r->monthly_usd, r->base_usd, w, sizeof w));
        snprintf(price, sizeof price, "%s to %s", fmtn_(r->saving_lo_price, b[2], 48, 0, false),
                 fmtn_(r->saving_hi_price, b[3], 48, 0, false));
        if (isnan(r->saving_lo_model))
            snprintf(model, sizeof model, "%s", r->model_note);
        else
            snprintf(model, sizeof model, "%s to %s (+-%s%%)%s%s",
                     fmtn_(r->saving_lo_model, b[4], 48, 0, false),
                     fmtn_(r->saving_hi_model, b[5], 48, 0, false),
                     fmtn_(100 * r->model_err, b[6], 48, 0, false), r->model_note[0] ? ": " : "",
                     r->model_note);
        if (phase == TB_PHASE_TRAIN)
            snprintf(b[7], 48, "%s (%s%%)", fmtn_(r->cluster_hours, b[8], 48, 1, false),
                     fmtn_(100 * r->utilisation, b[9], 48, 0, false));
        else
            snprintf(b[7], 48, "always on");
        {
            const char *cells[] = {cand,
                                   instances_text(r, inst, sizeof inst),
                                   b[7],
                                   basis_text(r, phase == TB_PHASE_TRAIN, basis, sizeof basis),
                                   bound_text(r, phase, bound, sizeof bound),
                                   fmtn_(r->monthly_usd, b[8], 48, 0, false),
                                   now,
                                   like,
                                   fmtn_(r->break_even_months, b[9], 48, 1, false),
                                   price,
                                   model};
            /* the price row used, as the candidate's tooltip */
            const char *tips[] = {r->price, NULL, NULL, NULL, NULL, NULL,
                                  NULL,     NULL, NULL, NULL, NULL};
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
                ", every catalogued instance type is sized to carry the load within "
                "the latency targets (performance model, modeled), priced from "
                "pricing/prices.csv, and compared with what the team pays now and, apart, with "
                "the current fleet bought the same way (like for like). Each workload has one "
                "verdict: where buying the current hardware another way costs less than any "
                "move, it says so first. Thresholds: a spend "
                "under $%.0f/month rarely repays a migration; %.0f-%.0f%% savings are the usual "
                "claims to test. Sensitivity: prices +-%.0f%%, and the capacity within the "
                "model's error band for the chip family and phase, the one the report's "
                "cost.csv carries (the 90th percentile of its validation errors; whole "
                "replicas, clusters "
                "or days are bought, so a range can be one figure: the cell then says what room "
                "the fleet has).",
                o->min_monthly_usd, 100 * o->claim_low, 100 * o->claim_high, 100 * o->price_swing);
    tb_doc_p_end(d);
    tb_doc_p(d, NULL,
             "Purchase models as AWS sells them: an always-on fleet (serving, images) is priced "
             "on-demand, reserved or on a savings plan; never as Capacity Blocks, which end "
             "(bought ahead for 1 to 14 days or in 7-day steps up to 182, at most 64 instances "
             "a block, paid up front: EC2 User Guide, 'Find and purchase Capacity Blocks', "
             "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html), "
             "and on spot only where the file keeps a share of the fleet on on-demand "
             "(spot_reserve), because spot capacity is reclaimed at two minutes' notice (EC2 "
             "User Guide, 'Spot Instance interruptions', "
             "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-interruptions.html). A "
             "training job may be bought by the hour, as Capacity Blocks of whole days, or as "
             "reserved clusters for the month.");
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
