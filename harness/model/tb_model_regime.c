/* harness/model/tb_model_regime.c: serving regimes (tb_regime.h), the datasets of
 * workloads/datasets.csv and MLPerf's latency limits (workloads/mlperf_limits.csv), and
 * the model's use of them (tb_model_impl.h). */
#include "tb_model_impl.h"
#include "tb_range.h"
#include "tb_regime.h"

#include "tb_util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- the solver ---- */

#define NBIN 64 /* prompts' quantile bins for the tails */

/* What one load costs, per request (tb_regime.h's symbols), averaged over the lengths
 * (index i) and, for the tails, over NBIN equal shares of the prompts (index j). */
struct rin {
    const struct tb_regime_costs *c;
    const struct tb_regime_lengths *L;
    double p, pb, tin, tout, ctx, cap;
    double pi[TB_REGIME_MAXREP], pbi[TB_REGIME_MAXREP];
    double pb2, chunk;                                /* E[pb^2]; the token budget */
    int nb;                                           /* bins (1..NBIN) */
    double bw[NBIN], bp[NBIN], btin[NBIN], bpb[NBIN]; /* weight, p, prompt, pb per bin */
};

struct rpoint {
    double X, f, rho, nd, d, tpot, rq, wait, resid, own, ttft, e2e, inflight, theta;
    double avail;                /* prefill tokens an iteration has beside the decodes */
    double nchm, kmean;          /* E[chunks], E[K - 1] at this load */
    double sg[TB_REGIME_MAXREP]; /* a prompt's share of the admission iterations */
};

static double decode_at(const struct rin *r, double nd)
{
    return r->c->decode_s(r->c->ctx, fmax(1.0, nd), r->ctx);
}

/* Prompts of tin tokens one iteration admits, and the iterations one prompt spans, with
 * avail of the budget left beside the decodes (each decoding sequence takes one token of
 * it: TensorRT-LLM's max_num_tokens and vLLM's max_num_batched_tokens count both). */
static double admit_k(const struct rin *r, double avail, double tin)
{
    double K = fmax(1, floor(avail / tin));
    return r->c->max_prompts > 0 ? fmin(K, fmax(1, r->c->max_prompts)) : K;
}

/* The state at throughput X with nd sequences decoding and an arrival seeing the share
 * f of the load: 0, or -1 when no stable state exists (prefill or decode cannot keep
 * up). nd is at_load's fixed point, or closed_loop's unknown. */
static int at_state(const struct rin *r, double X, double nd, double f, struct rpoint *s)
{
    double den, es = 0, es2 = 0, busy;
    memset(s, 0, sizeof *s);
    s->X = X;
    s->f = f;
    s->rho = X * r->pb;
    den = 1.0 - f * s->rho;
    if (den <= 1e-9)
        return -1;
    s->nd = nd;
    s->d = decode_at(r, s->nd);
    s->tpot = s->d / den;
    /* admission: a prompt holds its share sigma of the iterations that carry it; an
     * iteration with decodes in it lasts d beside the prefill, one alone does not; the
     * decodes take their tokens of the budget first */
    busy = fmin(1.0, f * s->nd);
    s->avail = r->chunk - s->nd;
    if (s->avail < 1)
        return -1;
    for (int i = 0; i < r->L->n; i++) {
        double K = admit_k(r, s->avail, r->L->tin[i]), nch = ceil(r->L->tin[i] / s->avail);
        double sg = r->pbi[i] + busy * nch * s->d / K;
        s->sg[i] = sg;
        s->nchm += r->L->w[i] * nch;
        s->kmean += r->L->w[i] * (K - 1);
        es += r->L->w[i] * sg;
        es2 += r->L->w[i] * sg * sg;
    }
    s->rq = f * X * es;
    if (s->rq >= 1.0 - 1e-9)
        return -1;
    s->wait = f * X * es2 / (2.0 * (1.0 - s->rq));
    s->resid = busy * (1.0 - s->rq) * s->tpot / 2.0;
    s->own = r->p + busy * s->nchm * s->d + fmin(s->kmean, f * X * s->tpot) * r->pb;
    s->ttft = s->wait + s->resid + s->own;
    s->e2e = s->ttft + (r->tout - 1) * s->tpot;
    s->inflight = X * s->e2e;
    /* the wait's decay rate: f X (E[exp(theta sigma)] - 1) = theta, the root > 0 */
    if (s->rq > 0) {
        double tl = 0, th = 1.0 / es;
        for (;;) {
            double g = 0;
            for (int i = 0; i < r->L->n; i++)
                g += r->L->w[i] * exp(th * s->sg[i]);
            if (f * X * (g - 1) > th || th > 1e12)
                break;
            tl = th;
            th *= 2;
        }
        for (int it = 0; it < 80; it++) {
            double m = 0.5 * (tl + th), g = 0;
            for (int i = 0; i < r->L->n; i++)
                g += r->L->w[i] * exp(m * s->sg[i]);
            if (f * X * (g - 1) < m)
                tl = m;
            else
                th = m;
        }
        s->theta = 0.5 * (tl + th);
    }
    return 0;
}

/* The state at throughput X (at_state), the decode batch its fixed point: nd = X (Tout -
 * 1) d(nd) / den, d growing with nd; h(0) > 0. */
static int at_load(const struct rin *r, double X, double f, struct rpoint *s)
{
    double lo = 0, hi = 1, den = 1.0 - f * X * r->pb;
    if (den <= 1e-9)
        return -1;
    while (X * (r->tout - 1) * decode_at(r, hi) / den > hi) {
        hi *= 2;
        if (hi > 1e9)
            return -1;
    }
    /* to a part in 1e10: no figure needs more, and the searches run this often */
    for (int i = 0; i < 80 && hi - lo > 1e-10 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (X * (r->tout - 1) * decode_at(r, mid) / den > mid)
            lo = mid;
        else
            hi = mid;
    }
    return at_state(r, X, 0.5 * (lo + hi), f, s);
}

/* P(TTFT > t): the queue's tail rq exp(-theta x) over each share of the prompts' own
 * prefill (the wait and the prompt are independent: the percentile of the sum, not the
 * sum of the percentiles). */
static double ttft_tail(const struct rin *r, const struct rpoint *s, double t)
{
    double busy = fmin(1.0, s->f * s->nd), P = 0;
    double other = s->resid + fmin(s->kmean, s->f * s->X * s->tpot) * r->pb;
    for (int j = 0; j < r->nb; j++) {
        double x = t - other - r->bp[j] - busy * ceil(r->btin[j] / s->avail) * s->d;
        P += r->bw[j] * (x < 0 ? 1.0 : s->rq > 0 && s->theta > 0 ? s->rq * exp(-s->theta * x) : 0);
    }
    return P;
}

/* The value of a decreasing tail at share 1 - q/100 (bisection over [lo, hi]). */
static double pct_of(double (*tail)(const struct rin *, const struct rpoint *, double),
                     const struct rin *r, const struct rpoint *s, double q, double lo, double hi)
{
    double want = 1.0 - q / 100.0;
    while (tail(r, s, hi) > want && hi < 1e9)
        hi *= 2;
    /* to a part in 1e10: no figure needs more, and the searches run this often */
    for (int i = 0; i < 80 && hi - lo > 1e-10 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (tail(r, s, mid) > want)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

static double ttft_pct(const struct rin *r, const struct rpoint *s, double q)
{
    return q <= 0 ? s->ttft : pct_of(ttft_tail, r, s, q, 0, 2 * s->ttft + 1e-3);
}

/* P(TPOT > t) of one request: the mean of its Tout - 1 iterations, each the decode d
 * and the prefills admitted with it; the prefill work over the request's decode, D =
 * (Tout - 1) S, is compound Poisson (rate f X, sizes pb): mean f X pb D, variance
 * f X E[pb^2] D; taken normal, per output length (short outputs vary most). */
static double tpot_tail(const struct rin *r, const struct rpoint *s, double t)
{
    double P = 0;
    for (int i = 0; i < r->L->n; i++) {
        double n = fmax(1.0, r->L->tout[i] - 1);
        double sd = sqrt(s->f * s->X * r->pb2 * n * s->tpot) / n;
        P += r->L->w[i] *
             (sd > 0 ? 0.5 * erfc((t - s->tpot) / (sd * sqrt(2.0))) : (t < s->tpot ? 1.0 : 0.0));
    }
    return P;
}

static double tpot_pct(const struct rin *r, const struct rpoint *s, double q)
{
    return q <= 0 ? s->tpot : pct_of(tpot_tail, r, s, q, s->tpot, 2 * s->tpot);
}

/* Closed loop of N in flight (N <= capacity): X with X e2e(X) = N. Solved over the
 * decode batch nd in [0, N], the throughput it implies X = nd / ((Tout - 1) d(nd) + f nd
 * pb) (at_load's equation solved for X): the batch never exceeds the requests there are.
 * Over X instead, a decode step that grows faster than the batch (a CPU engine's 0.2 ms
 * at 1 and 0.9 ms at 2) makes the fixed point jump past N at some X, the bisection stops
 * below it and the loop holds fewer than N (trnbench serve at 2 in flight: 1.4, TPOT
 * 4x too fast). With no decode phase (Tout 1), over X. */
static double x_of_nd(const struct rin *r, double nd, double f)
{
    return nd / ((r->tout - 1) * decode_at(r, nd) + f * nd * r->pb);
}

static int closed_loop(const struct rin *r, double N, struct rpoint *s)
{
    double f = (N - 1.0) / N, lo = 0, hi;
    struct rpoint t;
    if (r->tout > 1) {
        hi = N;
        for (int i = 0; i < 80; i++) {
            double nd = 0.5 * (lo + hi);
            if (at_state(r, x_of_nd(r, nd, f), nd, f, &t) == 0 && t.inflight < N)
                lo = nd;
            else
                hi = nd;
        }
        return lo > 0 ? at_state(r, x_of_nd(r, lo, f), lo, f, s) : at_load(r, 0, f, s);
    }
    if (at_load(r, 0, f, &t) != 0)
        return -1;
    hi = N / t.e2e; /* e2e grows with the load: X <= N / e2e(0) */
    /* to a part in 1e10: no figure needs more, and the searches run this often */
    for (int i = 0; i < 80 && hi - lo > 1e-10 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (at_load(r, mid, f, &t) == 0 && t.inflight < N)
            lo = mid;
        else
            hi = mid;
    }
    return at_load(r, lo, f, s);
}

/* Whether an open-loop rate X has a stable state within the capacity. */
static bool open_ok(const struct rin *r, double X, struct rpoint *s)
{
    return at_load(r, X, 1.0, s) == 0 && s->nd + X * s->ttft <= r->cap;
}

/* The largest open-loop rate within the capacity (bisection; ok(0) holds). */
static double open_max(const struct rin *r)
{
    struct rpoint s, z;
    double lo = 0, hi;
    if (at_load(r, 0, 1.0, &z) != 0)
        return 0;
    hi = (isinf(r->cap) ? 1e9 : r->cap) / z.e2e + 1.0 / r->pb;
    /* to a part in 1e10: no figure needs more, and the searches run this often */
    for (int i = 0; i < 80 && hi - lo > 1e-10 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (open_ok(r, mid, &s))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The prompt at cumulative share u of the quantiles given (linear between them; the
 * lowest below the first). */
static double quantile_at(const struct tb_regime_lengths *L, double u)
{
    if (u <= L->q[0])
        return L->qtin[0];
    for (int i = 1; i < L->nq; i++)
        if (u <= L->q[i])
            return L->qtin[i - 1] +
                   (L->qtin[i] - L->qtin[i - 1]) * (u - L->q[i - 1]) / (L->q[i] - L->q[i - 1]);
    return L->qtin[L->nq - 1];
}

/* Per-length costs: the prefill alone and shared, prompts per iteration, chunks; the
 * bins of the prompts' distribution for the tails. */
static void rin_setup(struct rin *r, const struct tb_regime_costs *c,
                      const struct tb_regime_lengths *L)
{
    double chunk = c->chunk_tokens > 0 ? c->chunk_tokens : 8192, wctx = 0, ppb = 0;
    r->chunk = chunk;
    for (int i = 0; i < L->n; i++) {
        /* prompts waiting together share an iteration's budget: per prompt, the
         * iteration's prefill over the prompts it holds (the prefills' busy time, with
         * the whole budget: the decodes' share of it is taken per load, at_load); a
         * prompt's own TTFT has its prefill alone */
        double K = admit_k(r, chunk, L->tin[i]);
        r->pi[i] = c->prefill_s(c->ctx, 1, L->tin[i]);
        r->pbi[i] = c->prefill_s(c->ctx, K, L->tin[i]) / K;
        r->p += L->w[i] * r->pi[i];
        r->pb += L->w[i] * r->pbi[i];
        r->pb2 += L->w[i] * r->pbi[i] * r->pbi[i];
        r->tin += L->w[i] * L->tin[i];
        r->tout += L->w[i] * L->tout[i];
        /* a step reads every running sequence's context: weighted by the time a request
         * spends decoding (its output length), at the middle of its output */
        wctx += L->w[i] * L->tout[i] * (L->tin[i] + L->tout[i] / 2.0);
    }
    r->ctx = wctx / r->tout;
    ppb = r->p > 0 ? r->pb / r->p : 1;
    if (L->nq > 0) {
        r->nb = NBIN;
        for (int j = 0; j < NBIN; j++) {
            double t = fmax(1, quantile_at(L, (j + 0.5) / NBIN));
            r->bw[j] = 1.0 / NBIN;
            r->bp[j] = c->prefill_s(c->ctx, 1, t);
            r->btin[j] = t;
            r->bpb[j] = r->bp[j] * ppb;
        }
    } else {
        r->nb = L->n;
        for (int i = 0; i < L->n; i++) {
            r->bw[i] = L->w[i];
            r->bp[i] = r->pi[i];
            r->btin[i] = L->tin[i];
            r->bpb[i] = r->pbi[i];
        }
    }
    /* the prefill work's second moment from the fullest description of the prompts */
    r->pb2 = 0;
    for (int j = 0; j < r->nb; j++)
        r->pb2 += r->bw[j] * r->bpb[j] * r->bpb[j];
}

int tb_regime_solve(const struct tb_regime_costs *c, const struct tb_regime_lengths *L,
                    const struct tb_regime_load *load, struct tb_regime_result *o, char *why,
                    size_t whylen)
{
    struct rin r;
    struct rpoint s;

    memset(o, 0, sizeof *o);
    memset(&r, 0, sizeof r);
    r.c = c;
    r.L = L;
    r.cap = INFINITY;
    rin_setup(&r, c, L);
    if (c->capacity)
        r.cap = floor(c->capacity(c->ctx, r.tin, r.tin + r.tout / 2.0));
    /* the decodes take a token of the budget each: at most budget - 1 run at once */
    r.cap = fmin(r.cap, r.chunk - 1);
    o->capacity = r.cap;
    o->tin_mean = r.tin;
    o->tout_mean = r.tout;
    o->ctx_mean = r.ctx;
    if (r.cap < 1)
        return tb_err(why, whylen, "does not fit: not one request's KV cache beside the weights");

    if (load->concurrency > 0 || load->max_throughput) {
        double N = load->max_throughput ? r.cap : load->concurrency;
        double run = fmin(N, r.cap);
        if (isinf(run))
            return tb_err(why, whylen, "the throughput-maximising load needs a capacity");
        if (closed_loop(&r, run, &s) != 0)
            return tb_err(why, whylen, "no steady state at %g requests in flight", run);
        o->running = run;
        o->inflight = N;
        if (N > run) { /* the rest wait for memory: Little's law on the whole loop */
            o->queued = true;
            s.ttft += N / s.X - s.e2e;
            s.wait += N / s.X - s.e2e;
            s.e2e = N / s.X;
        }
    } else if (load->rate > 0) {
        if (!open_ok(&r, load->rate, &s) && (o->rate_max = open_max(&r)) >= 0)
            return tb_err(why, whylen,
                          "saturated: at most %.4g requests/s (%.4g offered) before the prefills, "
                          "the decode steps or the KV cache (%.0f sequences) cannot keep up",
                          open_max(&r), load->rate, r.cap);
        o->running = o->inflight = s.inflight;
    } else {
        /* the largest rate meeting the limits, TTFT and TPOT each at its percentile;
         * both grow with the rate */
        double lo = 0, hi = open_max(&r), qf = load->ttft_percentile, qp = load->tpot_percentile;
        struct rpoint z;
        if (open_ok(&r, 0, &z) && (ttft_pct(&r, &z, qf) > load->ttft_limit_s ||
                                   tpot_pct(&r, &z, qp) > load->tpot_limit_s))
            return tb_err(why, whylen,
                          "no load meets the limits (TTFT %.0f ms, TPOT %.0f ms): one request "
                          "alone takes TTFT %.0f ms, TPOT %.1f ms",
                          load->ttft_limit_s * 1e3, load->tpot_limit_s * 1e3,
                          ttft_pct(&r, &z, qf) * 1e3, z.tpot * 1e3);
        for (int i = 0; i < 80; i++) {
            double mid = 0.5 * (lo + hi);
            if (open_ok(&r, mid, &s) && ttft_pct(&r, &s, qf) <= load->ttft_limit_s &&
                tpot_pct(&r, &s, qp) <= load->tpot_limit_s)
                lo = mid;
            else
                hi = mid;
        }
        if (!open_ok(&r, lo, &s))
            return tb_err(why, whylen, "no stable load meets the limits");
        o->running = o->inflight = s.inflight;
    }
    o->ttft_s = s.ttft;
    o->ttft_pct_s = ttft_pct(&r, &s, load->ttft_percentile);
    o->tpot_s = s.tpot;
    o->tpot_pct_s = tpot_pct(&r, &s, load->tpot_percentile);
    o->e2e_s = s.e2e;
    o->rate = s.X;
    o->decoding = s.nd;
    o->prefill_busy = s.rho;
    o->wait_s = s.wait + s.resid;
    return 0;
}

/* ---- datasets and limits (workloads/) ---- */

/* A numeric field: "" is NAN. */
static double ds_num(const struct tb_csv_table *t, size_t r, const char *name)
{
    double v;
    const char *s = tb_csv_field(t, r, name);
    return *s && tb_parse_double(s, 0, 1e9, &v) == 0 ? v : NAN;
}

/* The numbers of workloads/datasets.csv and mlperf_limits.csv and their ranges (README.md,
 * "Input ranges"); an empty length is "not stated". */
const struct tb_range TB_DATASETS_RANGES[] = {
    {"samples", 1, 1e9, true, "samples in the set"},
    {"in_mean", 1, 16777216, false, "prompt tokens"},
    {"in_p10", 1, 16777216, false, "prompt tokens"},
    {"in_p50", 1, 16777216, false, "prompt tokens"},
    {"in_p90", 1, 16777216, false, "prompt tokens"},
    {"in_p99", 1, 16777216, false, "prompt tokens"},
    {"in_max", 1, 16777216, false, "prompt tokens"},
    {"out_mean", 1, 16777216, false, "output tokens"},
    {"out_p10", 1, 16777216, false, "output tokens"},
    {"out_p50", 1, 16777216, false, "output tokens"},
    {"out_p90", 1, 16777216, false, "output tokens"},
    {"out_p99", 1, 16777216, false, "output tokens"},
    {"out_max", 1, 16777216, false, "output tokens"},
    {"steps", 1, 10000, true, "denoising steps"},
    {"resolution", 8, 16384, true, "pixels"},
    {NULL, 0, 0, false, NULL},
};
const struct tb_range TB_LIMITS_RANGES[] = {
    {"ttft_ms", 0.001, 1e7, false, "ms"},
    {"tpot_ms", 0.001, 1e7, false, "ms"},
    {"percentile", 1, 100, false, "percentile the limits hold at"},
    {NULL, 0, 0, false, NULL},
};

int tb_model_datasets_load(struct tb_model *m, const char *dir, char *err, size_t errlen)
{
    static const char *const dcols[] = {
        "name",   "kind",       "benchmark", "samples", "in_mean", "in_p10",  "in_p50",  "in_p90",
        "in_p99", "in_max",     "out_mean",  "out_p10", "out_p50", "out_p90", "out_p99", "out_max",
        "steps",  "resolution", "status",    "source",  "date",    "notes",   NULL};
    static const char *const lcols[] = {"benchmark",  "model",  "scenario", "ttft_ms", "tpot_ms",
                                        "percentile", "source", "date",     NULL};
    const char *d = dir ? dir : NULL;
    char def[PATH_MAX];
    if (!d) {
        if ((size_t)snprintf(def, sizeof def, "%s/workloads", tb_datadir()) >= sizeof def)
            return tb_err(err, errlen, "path too long");
        d = def;
    }
    tb_csv_release(&m->datasets);
    tb_csv_release(&m->limits);
    if (tb_csv_load_optional(&m->datasets, d, "datasets.csv", dcols, err, errlen) != 0 ||
        tb_csv_load_optional(&m->limits, d, "mlperf_limits.csv", lcols, err, errlen) != 0)
        return -1;
    if (tb_range_check_csv(&m->datasets, TB_DATASETS_RANGES, err, errlen) != 0 ||
        tb_range_check_csv(&m->limits, TB_LIMITS_RANGES, err, errlen) != 0)
        return -1;
    for (size_t r = 0; r < m->datasets.nrows; r++) {
        const struct tb_csv_table *t = &m->datasets;
        const char *kind = tb_csv_field(t, r, "kind"), *st = tb_csv_field(t, r, "status");
        if (!*tb_csv_field(t, r, "name") || !*tb_csv_field(t, r, "source"))
            return tb_err(err, errlen, "%s: line %ld: field '%s': empty", t->path, t->lines[r],
                          *tb_csv_field(t, r, "name") ? "source" : "name");
        if (strcmp(kind, "llm") && strcmp(kind, "diffusion"))
            return tb_err(err, errlen, "%s: line %ld: field 'kind': '%s' (llm or diffusion)",
                          t->path, t->lines[r], kind);
        if (strcmp(st, "ok") && strcmp(st, "none"))
            return tb_err(err, errlen, "%s: line %ld: field 'status': '%s' (ok or none)", t->path,
                          t->lines[r], st);
        if (!strcmp(st, "ok") &&
            (!strcmp(kind, "llm")
                 ? isnan(ds_num(t, r, "in_mean")) || isnan(ds_num(t, r, "out_mean"))
                 : isnan(ds_num(t, r, "steps")) || isnan(ds_num(t, r, "resolution"))))
            return tb_err(err, errlen,
                          "%s: line %ld: field 'status': ok needs %s (else none, with the reason "
                          "in notes)",
                          t->path, t->lines[r],
                          !strcmp(kind, "llm") ? "in_mean and out_mean" : "steps and resolution");
    }
    for (size_t r = 0; r < m->limits.nrows; r++) {
        const struct tb_csv_table *t = &m->limits;
        static const char *const num[] = {"ttft_ms", "tpot_ms", "percentile", NULL};
        for (int i = 0; num[i]; i++)
            if (!*tb_csv_field(t, r, num[i]))
                return tb_err(err, errlen, "%s: line %ld: field '%s': empty", t->path, t->lines[r],
                              num[i]);
    }
    return 0;
}

/* MLPerf's set of prompts for a model: the llm set of datasets.csv whose benchmark is the
 * one mlperf_limits.csv's Server row gives the model (its interactive variant runs the
 * same set); NULL when MLPerf has no LLM benchmark of it. What a row with a scenario and
 * neither lengths nor a dataset means. */
const char *tb_model_mlperf_dataset(const struct tb_model *m, const char *model)
{
    for (size_t r = 0; r < m->limits.nrows; r++) {
        const char *bench = tb_csv_field(&m->limits, r, "benchmark");
        if (strcmp(tb_csv_field(&m->limits, r, "model"), model) ||
            strcmp(tb_csv_field(&m->limits, r, "scenario"), "server"))
            continue;
        for (size_t d = 0; d < m->datasets.nrows; d++)
            if (!strcmp(tb_csv_field(&m->datasets, d, "kind"), "llm") &&
                !strcmp(tb_csv_field(&m->datasets, d, "benchmark"), bench))
                return tb_csv_field(&m->datasets, d, "name");
    }
    return NULL;
}

static long ds_row(const struct tb_model *m, const char *name)
{
    for (size_t r = 0; r < m->datasets.nrows; r++)
        if (!strcmp(tb_csv_field(&m->datasets, r, "name"), name))
            return (long)r;
    return -1;
}

int tb_model_dataset_status(const struct tb_model *m, const char *name, char *why, size_t whylen)
{
    long r = ds_row(m, name);
    const struct tb_csv_table *t = &m->datasets;
    if (r < 0) {
        char known[256] = "";
        size_t k = 0;
        for (size_t i = 0; i < t->nrows && k < sizeof known - 64; i++)
            k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "",
                                  tb_csv_field(t, i, "name"));
        tb_err(why, whylen, "unknown dataset '%.64s' (workloads/datasets.csv: %s)", name,
               t->nrows ? known : "no table");
        return -1;
    }
    if (!strcmp(tb_csv_field(t, (size_t)r, "status"), "none")) {
        tb_err(why, whylen, "dataset '%.64s' has no usable lengths (%s: line %ld): %.300s", name,
               t->path, t->lines[r], tb_csv_field(t, (size_t)r, "notes"));
        return 1;
    }
    return 0;
}

int tb_model_dataset_diffusion(const struct tb_model *m, const char *name, long *steps, long *res,
                               char *err, size_t errlen)
{
    long r;
    if (tb_model_dataset_status(m, name, err, errlen) != 0)
        return -1;
    r = ds_row(m, name);
    if (strcmp(tb_csv_field(&m->datasets, (size_t)r, "kind"), "diffusion"))
        return tb_err(err, errlen, "dataset '%s' is a set of prompts for an LLM, not images", name);
    if (*steps <= 0)
        *steps = (long)ds_num(&m->datasets, (size_t)r, "steps");
    if (*res <= 0)
        *res = (long)ds_num(&m->datasets, (size_t)r, "resolution");
    return 0;
}

/* The representative lengths of a dataset: its 10th, 50th and 90th percentiles standing
 * for the bottom fifth, the middle three fifths and the top fifth (weights 0.2, 0.6,
 * 0.2), each output paired with the prompt of the same rank (or the mean output where
 * only the prompts' percentiles are given); the mean alone where no percentiles are. The p99 prompt
 * (else the largest) is the one MLPerf's p99 TTFT meets. */
static int dataset_lengths(const struct tb_model *m, const char *name, struct tb_regime_lengths *L,
                           char *err, size_t errlen)
{
    static const char *const qi[] = {"in_p10", "in_p50", "in_p90"}, *const qo[] = {"out_p10",
                                                                                   "out_p50",
                                                                                   "out_p90"};
    static const double qw[] = {0.2, 0.6, 0.2};
    const struct tb_csv_table *t = &m->datasets;
    long r;
    bool pct = true, opct = true;
    if (tb_model_dataset_status(m, name, err, errlen) != 0)
        return -1;
    r = ds_row(m, name);
    if (strcmp(tb_csv_field(t, (size_t)r, "kind"), "llm"))
        return tb_err(err, errlen, "dataset '%s' is a set of image prompts (phase denoise)", name);
    memset(L, 0, sizeof *L);
    for (int i = 0; i < 3; i++) {
        pct = pct && !isnan(ds_num(t, (size_t)r, qi[i]));
        opct = opct && !isnan(ds_num(t, (size_t)r, qo[i]));
    }
    if (pct) {
        /* the prompts' percentiles; each paired with the output of the same rank, or with
         * the mean output where the set states no output percentiles (MLPerf's sets: what
         * the model generates is known by its mean only) */
        L->n = 3;
        for (int i = 0; i < 3; i++) {
            L->tin[i] = fmax(1, ds_num(t, (size_t)r, qi[i]));
            L->tout[i] = fmax(1, ds_num(t, (size_t)r, opct ? qo[i] : "out_mean"));
            L->w[i] = qw[i];
        }
    } else {
        L->n = 1;
        L->tin[0] = fmax(1, ds_num(t, (size_t)r, "in_mean"));
        L->tout[0] = fmax(1, ds_num(t, (size_t)r, "out_mean"));
        L->w[0] = 1;
    }
    L->tin_p99 = ds_num(t, (size_t)r, "in_p99");
    if (isnan(L->tin_p99))
        L->tin_p99 = isnan(ds_num(t, (size_t)r, "in_max")) ? 0 : ds_num(t, (size_t)r, "in_max");
    if (pct) {
        /* the prompts' distribution for the tails: the percentiles the set states */
        static const char *const qn[] = {"in_p10", "in_p50", "in_p90", "in_p99", "in_max"};
        static const double qv[] = {0.10, 0.50, 0.90, 0.99, 1.0};
        for (int i = 0; i < 5; i++)
            if (!isnan(ds_num(t, (size_t)r, qn[i]))) {
                L->q[L->nq] = qv[i];
                L->qtin[L->nq++] = fmax(1, ds_num(t, (size_t)r, qn[i]));
            }
    }
    return 0;
}

/* MLPerf's limits for the model at scenario (server, interactive). */
static int mlperf_limits(const struct tb_model *m, const char *model, const char *scenario,
                         double *ttft_ms, double *tpot_ms, double *pct, const char **bench,
                         char *err, size_t errlen)
{
    const struct tb_csv_table *t = &m->limits;
    for (size_t r = 0; r < t->nrows; r++)
        if (!strcmp(tb_csv_field(t, r, "model"), model) &&
            !strcmp(tb_csv_field(t, r, "scenario"), scenario)) {
            tb_parse_double(tb_csv_field(t, r, "ttft_ms"), 0, 1e9, ttft_ms);
            tb_parse_double(tb_csv_field(t, r, "tpot_ms"), 0, 1e9, tpot_ms);
            tb_parse_double(tb_csv_field(t, r, "percentile"), 0, 100, pct);
            *bench = tb_csv_field(t, r, "benchmark");
            return 0;
        }
    return tb_err(err, errlen,
                  "scenario '%s': MLPerf has no %s limits for model '%s' "
                  "(workloads/mlperf_limits.csv)",
                  scenario, scenario, model);
}

/* ---- the model's use ---- */

int tb_model_regime_check(const struct tb_model *m, const struct tb_scenario *sc, char *err,
                          size_t errlen)
{
    const char *scen = sc->scenario && *sc->scenario ? sc->scenario : "";
    double a, b, c;
    const char *bench;
    if (sc->dataset && *sc->dataset && tb_model_dataset_status(m, sc->dataset, err, errlen))
        return -1;
    if (sc->arch && (!strcmp(scen, "server") || !strcmp(scen, "interactive")))
        return mlperf_limits(m, sc->arch->name, scen, &a, &b, &c, &bench, err, errlen);
    return 0;
}

bool tb_model_regime_wanted(const struct tb_scenario *sc)
{
    return sc->concurrency > 0 || sc->request_rate > 0 || (sc->scenario && *sc->scenario) ||
           (sc->dataset && *sc->dataset);
}

int tb_model_regime(const struct tb_model *m, const struct tb_scenario *sc,
                    const struct tb_regime_costs *c, const char *layout, struct tb_prediction *p,
                    char *err, size_t errlen)
{
    struct tb_regime_lengths L = {0};
    struct tb_regime_load load = {0};
    struct tb_regime_result o;
    const char *scen = sc->scenario && *sc->scenario ? sc->scenario : "";
    const char *bench = "", *ds = sc->dataset && *sc->dataset ? sc->dataset : "";
    double dp = (double)(p->dp > 0 ? p->dp : 1), ttft_ms = 0, tpot_ms = 0, pct = 0;
    double budget_tpot_s = 0; /* the TPOT limit that sizes MLPerf's token budget */
    char what[160], pctname[16] = "mean";
    struct tb_regime_costs cc = *c;

    if (*ds) {
        if (dataset_lengths(m, ds, &L, err, errlen) != 0)
            return -1;
    } else {
        if (sc->seq_in <= 0)
            return tb_err(err, errlen, "seq_in missing: the prompt length is needed");
        L.n = 1;
        L.tin[0] = L.tin_p99 = (double)sc->seq_in;
        L.tout[0] = (double)(sc->seq_out > 0 ? sc->seq_out : 1);
        L.w[0] = 1;
    }
    if (sc->batch > 0)
        return tb_err(err, errlen,
                      "a dataset with a static batch: give concurrency, request_rate or scenario "
                      "(a static batch has one length)");
    if (sc->concurrency > 0) {
        load.concurrency = (double)sc->concurrency / dp;
        snprintf(what, sizeof what, "concurrency %ld (closed loop)", sc->concurrency);
    } else if (sc->request_rate > 0 && (!strcmp(scen, "server") || !strcmp(scen, "interactive"))) {
        /* an MLPerf run at its own scheduled rate: the latencies it reports are at that
         * rate, not at the largest one the limits allow; the limits still size the token
         * budget (below), as the submitters' configs do */
        if (mlperf_limits(m, sc->arch->name, scen, &ttft_ms, &tpot_ms, &pct, &bench, err, errlen) !=
            0)
            return -1;
        load.rate = sc->request_rate / dp;
        budget_tpot_s = tpot_ms * 1e-3;
        pct = 0; /* the means at that rate, not the limits' percentile */
        snprintf(what, sizeof what, "MLPerf %s (%s) at its run's rate %g/s (Poisson)", scen, bench,
                 sc->request_rate);
    } else if (sc->request_rate > 0) {
        load.rate = sc->request_rate / dp;
        snprintf(what, sizeof what, "request_rate %g/s (open loop, Poisson)", sc->request_rate);
    } else if (!strcmp(scen, "server") || !strcmp(scen, "interactive")) {
        if (mlperf_limits(m, sc->arch->name, scen, &ttft_ms, &tpot_ms, &pct, &bench, err, errlen) !=
            0)
            return -1;
        load.ttft_limit_s = ttft_ms * 1e-3;
        load.tpot_limit_s = tpot_ms * 1e-3;
        load.ttft_percentile = pct;
        load.tpot_percentile = pct;
        budget_tpot_s = load.tpot_limit_s;
        snprintf(what, sizeof what,
                 "MLPerf %s (%s: p%.0f TTFT <= %.0f ms, TPOT <= %.0f ms; Poisson)", scen, bench,
                 pct, ttft_ms, tpot_ms);
    } else if (!strcmp(scen, "offline") || sc->batch_max) {
        load.max_throughput = true;
        snprintf(what, sizeof what, "%s",
                 *scen ? "MLPerf offline (throughput-maximising)" : "throughput-maximising");
    } else {
        load.concurrency = 1; /* a dataset alone: one request at a time */
        snprintf(what, sizeof what, "one request at a time");
    }
    if (budget_tpot_s > 0) {
        /* MLPerf's token budget: the largest (at most the stack's default) whose
         * iteration of prompt tokens alone takes no longer than the TPOT limit, so one
         * iteration carrying a full budget of prompts cannot break the limit by itself;
         * at least the p99 prompt, which one iteration then admits whole. NVIDIA's
         * MLPerf v5.1 configs (README "Serving regimes") size max_num_tokens so */
        double hi0 = cc.chunk_tokens > 0 ? cc.chunk_tokens : 8192, lo = 1, hi = hi0;
        if (c->prefill_s(c->ctx, 1, hi) > budget_tpot_s) {
            for (int i = 0; i < 60; i++) {
                double mid = 0.5 * (lo + hi);
                if (c->prefill_s(c->ctx, 1, mid) <= budget_tpot_s)
                    lo = mid;
                else
                    hi = mid;
            }
            cc.chunk_tokens = floor(fmin(hi0, fmax(lo, L.tin_p99)));
        }
    }
    if (tb_regime_solve(&cc, &L, &load, &o, p->why, sizeof p->why) != 0) {
        p->fits = false;
        if (o.rate_max > 0) { /* the whole target's figures, every replica together */
            p->rate_max = o.rate_max * dp;
            snprintf(p->why, sizeof p->why,
                     "saturated: at most %.4g requests/s (%.4g offered) on %.0f replica%s: the "
                     "prefills, the decode steps or the KV cache (%.0f sequences each) cannot "
                     "keep up",
                     p->rate_max, sc->request_rate, dp, dp == 1 ? "" : "s", o.capacity);
        }
        return 0;
    }
    p->fits = true;
    if (pct > 0)
        snprintf(pctname, sizeof pctname, "p%.0f", pct);
    p->batch = lround(o.running);
    p->ttft_ms = o.ttft_s * 1e3;
    p->tpot_ms = o.tpot_s * 1e3;
    p->e2e_latency_ms = o.e2e_s * 1e3;
    p->output_tokens_per_s = o.rate * o.tout_mean * dp;
    p->total_tokens_per_s = o.rate * (o.tin_mean + o.tout_mean) * dp;
    p->output_tokens_per_s_per_chip = p->output_tokens_per_s / (double)p->chips;
    p->tokens_per_s_per_user = 1.0 / o.tpot_s;
    snprintf(p->assumptions, sizeof p->assumptions,
             "%s%s%s: %.4g req/s, %.1f in flight%s (%.1f decoding), prefill busy %.0f%%, "
             "wait for admission %.0f ms (M/G/1 and the iteration in flight)%s; %s TTFT %.0f "
             "ms, %s TPOT %.1f ms; lengths %.0f/%.0f; token budget %.0f per iteration "
             "(decodes included); %s",
             what, *ds ? " over " : "", ds, o.rate * dp, o.inflight * dp,
             dp > 1 ? " over the replicas" : "", o.decoding * dp, o.prefill_busy * 100,
             o.wait_s * 1e3, o.queued ? ", the rest wait for KV memory" : "", pctname,
             o.ttft_pct_s * 1e3, pctname, o.tpot_pct_s * 1e3, o.tin_mean, o.tout_mean,
             cc.chunk_tokens > 0 ? cc.chunk_tokens : 8192, layout);
    if (!isinf(o.capacity)) {
        size_t n = strlen(p->assumptions);
        snprintf(p->assumptions + n, sizeof p->assumptions - n,
                 "; KV cache and max batch hold %.0f per replica", o.capacity);
    }
    return 0;
}
