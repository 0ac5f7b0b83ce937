/* harness/report/serving.c: the report's section on servers measured under load (the
 * endpoint executor's rows, executor "endpoint", and the serving runs a team measured
 * with its own tool and imported, executor "import"): one line per load level with its
 * throughput, its goodput (requests within the run's latency limits) and its latencies'
 * p50 and p99, and, where the results hold the
 * performance model's prediction of the same workload on the same target at that
 * batch, the model's figure and its error there. */
#include "report_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The row of metric among the rows of run x's run_id and file, or NULL. */
static const struct tb_result *level_row(const struct report *R, const struct tb_result *x,
                                         const char *metric)
{
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *y = &R->res.rows[i];
        if (y->t == x->t && !strcmp(F(y, "metric"), metric) &&
            !strcmp(F(y, "run_id"), F(x, "run_id")))
            return y;
    }
    return NULL;
}

/* The value (or p99 when p99 is true) of metric in the rows of run x's run_id and file;
 * NAN when the run has no such row. */
static double level_metric(const struct report *R, const struct tb_result *x, const char *metric,
                           bool p99)
{
    const struct tb_result *y = level_row(R, x, metric);
    return !y ? NAN : p99 ? y->p99 : y->value;
}

/* A level's goodput, "3.2 (80%)": requests/s completed within the run's TTFT and TPOT
 * limits and their share of all its completed requests; its row's notes (the limits)
 * into tip. "" when the run set no limit (it then records no goodput). */
static void goodput(const struct report *R, const struct tb_result *x, char *buf, size_t len,
                    char *tip, size_t tiplen)
{
    const struct tb_result *g = level_row(R, x, "goodput_requests_per_s");
    double all = level_metric(R, x, "requests_per_s", false);
    char v[32];
    buf[0] = tip[0] = '\0';
    if (!g || isnan(g->value))
        return;
    tb_report_num(g->value, v, sizeof v);
    if (!isnan(all) && all > 0)
        snprintf(buf, len, "%s (%.0f%%)", v, g->value / all * 100);
    else
        snprintf(buf, len, "%s", v);
    snprintf(tip, tiplen, "%s", F(g, "notes"));
}

/* The model's output_tokens_per_s for x's workload, target and batch; NAN without one. */
static double modeled_twin(const struct report *R, const struct tb_result *x)
{
    const char *b = F(x, "batch");
    if (!*b)
        return NAN;
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *y = &R->res.rows[i];
        if (y->prov == TB_PROV_MODELED && !strcmp(y->workload, x->workload) &&
            !strcmp(F(y, "metric"), "output_tokens_per_s") &&
            !strcmp(F(y, "target"), F(x, "target")) && !strcmp(F(y, "batch"), b))
            return y->value;
    }
    return NAN;
}

/* "p50 / p99" of a latency metric, or "" when the run has none. */
static const char *pair(const struct report *R, const struct tb_result *x, const char *metric,
                        char *buf, size_t len)
{
    char a[32], b[32];
    double p50 = level_metric(R, x, metric, false), p99 = level_metric(R, x, metric, true);
    buf[0] = '\0';
    if (!isnan(p50))
        snprintf(buf, len, "%s / %s", tb_report_num(p50, a, sizeof a),
                 isnan(p99) ? "" : tb_report_num(p99, b, sizeof b));
    return buf;
}

/* The price the cost stage found for target, or NULL. */
static const struct tb_cost_price *price_of(const struct report *R, const char *target)
{
    for (size_t k = 0; k < R->cs.ntp; k++)
        if (!strcmp(R->cs.tp[k].target, target))
            return &R->cs.tp[k];
    return NULL;
}

/* The servers' start times (server_start_s rows): cold, warm, the compile time a
 * recipe measured (cold - warm), and what a start and a compile cost at the target's
 * price for the chips the server used. */
static void write_starts(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {"Workload",     "Target",          "Server",
                                       "Cold start s", "Warm start s",    "Compile s",
                                       "USD per hour", "USD per compile", "USD per cold start"};
    bool any = false;
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *x = &R->res.rows[i];
        const struct tb_cost_price *t;
        char cold[32], warm[32], comp[32], hour[32], usd_c[32], usd_s[32];
        const char *cells[9];
        double w, c, h = NAN;
        if (x->prov != TB_PROV_MEASURED || strcmp(F(x, "metric"), "server_start_s"))
            continue;
        if (!any) {
            tb_doc_h(d, 3, "Server starts and compile time");
            tb_doc_fold_begin(d, "Cold and warm starts, compile time and its cost");
            tb_doc_p(d, NULL,
                     "From launch to the endpoint answering. A recipe's server (recipe=vllm) "
                     "started twice with the same compile cache, empty then filled: compile = "
                     "cold - warm, the cost of compiling the model for its shapes (minutes on "
                     "Neuron), priced at the target's hourly price for the chips the server "
                     "used (chips_used of the instance).");
            tb_doc_table(d, "tttnnnnnn", head);
            any = true;
        }
        w = level_metric(R, x, "server_warm_start_s", false);
        c = level_metric(R, x, "server_compile_s", false);
        t = price_of(R, F(x, "target"));
        if (t && t->c.have)
            h = t->c.usd_per_hour * tb_cost_charged(x, t);
        cells[0] = x->workload;
        cells[1] = F(x, "target");
        cells[2] = F(x, "device");
        cells[3] = tb_report_num(x->value, cold, sizeof cold);
        cells[4] = isnan(w) ? "" : tb_report_num(w, warm, sizeof warm);
        cells[5] = isnan(c) ? "" : tb_report_num(c, comp, sizeof comp);
        cells[6] = isnan(h) ? (t ? "no price" : "") : tb_report_num(h, hour, sizeof hour);
        cells[7] = isnan(h) || isnan(c) ? "" : tb_report_num(h * c / 3600.0, usd_c, sizeof usd_c);
        cells[8] = isnan(h) ? "" : tb_report_num(h * x->value / 3600.0, usd_s, sizeof usd_s);
        tb_doc_row(d, cells);
    }
    if (any) {
        tb_doc_table_end(d);
        tb_doc_fold_end(d);
    }
}

void tb_report_write_serving(struct tb_doc *d, const struct report *R)
{
    static const char *const head[] = {
        "Workload",          "Target",       "Server",           "Load",
        "Achieved",          "Output tok/s", "Goodput req/s",    "TTFT ms p50 / p99",
        "TPOT ms p50 / p99", "ITL ms p99",   "E2E ms p50 / p99", "Failed",
        "Model tok/s",       "Model error"};
    bool any = false;
    for (size_t i = 0; i < R->res.nrows; i++) {
        const struct tb_result *x = &R->res.rows[i];
        char load[64], ach[32], out[32], good[48], good_tip[600], ttft[80], tpot[80], itl[32],
            e2e[80], failed[32], model[32], err[32], tip[200], server[600];
        const char *cells[14], *tips[14] = {0};
        double v, m;
        const bool imported = tb_report_imported(x);
        if (x->prov != TB_PROV_MEASURED || (strcmp(F(x, "executor"), "endpoint") && !imported) ||
            strcmp(F(x, "phase"), "serve") || strcmp(F(x, "metric"), "output_tokens_per_s"))
            continue;
        if (!any) {
            tb_doc_h(d, 2, "Servers measured under load");
            tb_doc_fold_begin(d, "Each load level: throughput, latency percentiles, the model's "
                                 "error");
            tb_doc_p(d, NULL,
                     "Each load level of a serving run (trnbench run --endpoint, executor "
                     "endpoint): cN keeps N requests in flight, rR sends R requests/s (Poisson). "
                     "Latencies are per request (ITL per chunk gap); TPOT = (E2E - TTFT) / "
                     "(output tokens - 1), never including TTFT. Output tok/s counts output "
                     "tokens only. Goodput: requests/s completed within the run's TTFT and TPOT "
                     "limits (trnbench run --ttft-ms, --tpot-ms; the tooltip says which), and "
                     "their share of all completed requests; empty when the run set none. Model: "
                     "the performance model's output tokens/s for the same "
                     "workload on the same target at a batch of N; model error = (modeled - "
                     "measured) / measured. A level whose Server says imported was measured by "
                     "a team with its own tool (vLLM, NxD Inference, LLMPerf) and imported "
                     "(trnbench import), not run by trnbench; its row's notes say what was "
                     "converted.");
            tb_doc_table(d, "tttttnnnnnnnnn", head);
            any = true;
        }
        tb_report_shape(x, load, sizeof load);
        v = level_metric(
            R, x, *F(x, "request_rate") ? "achieved_request_rate" : "achieved_concurrency", false);
        ach[0] = '\0';
        if (!isnan(v))
            snprintf(ach, sizeof ach, "%s%s", tb_report_num(v, out, sizeof out),
                     *F(x, "request_rate") ? "/s" : "");
        tb_report_num(x->value, out, sizeof out);
        goodput(R, x, good, sizeof good, good_tip, sizeof good_tip);
        pair(R, x, "ttft_ms", ttft, sizeof ttft);
        pair(R, x, "tpot_ms", tpot, sizeof tpot);
        v = level_metric(R, x, "itl_ms", true);
        tb_report_num(v, itl, sizeof itl);
        pair(R, x, "e2e_latency_ms", e2e, sizeof e2e);
        v = level_metric(R, x, "failed_requests", false);
        failed[0] = '\0';
        if (x->n >= 0)
            snprintf(failed, sizeof failed, "%s of %ld",
                     isnan(v) ? "?" : tb_report_num(v, model, sizeof model), x->n);
        m = modeled_twin(R, x);
        model[0] = err[0] = '\0';
        if (!isnan(m)) {
            tb_report_num(m, model, sizeof model);
            snprintf(err, sizeof err, "%+.0f%%", (m - x->value) / x->value * 100);
        }
        snprintf(tip, sizeof tip, "%s; %s", F(x, "run_id"), F(x, "timestamp"));
        cells[0] = x->workload;
        cells[1] = F(x, "target");
        if (imported)
            snprintf(server, sizeof server, "imported: %s", F(x, "source"));
        cells[2] = imported ? server : F(x, "device");
        cells[3] = load;
        cells[4] = ach;
        cells[5] = out;
        cells[6] = good;
        cells[7] = ttft;
        cells[8] = tpot;
        cells[9] = isnan(level_metric(R, x, "itl_ms", true)) ? "" : itl;
        cells[10] = e2e;
        cells[11] = failed;
        cells[12] = model;
        cells[13] = err;
        tips[5] = tip;
        tips[6] = good_tip;
        tb_doc_row_tip(d, cells, tips);
    }
    if (any) {
        tb_doc_table_end(d);
        tb_doc_fold_end(d);
    }
    write_starts(d, R);
}
