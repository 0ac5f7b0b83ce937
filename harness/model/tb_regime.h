/*
 * harness/model/tb_regime.h: serving regimes over per-step costs. A server that batches
 * continuously (each step decodes one token of every running sequence and may carry a
 * chunk of a new prompt) is described by three functions: the time to prefill B prompts
 * of T tokens, the time of one decode step of B sequences at context len, and how many
 * sequences fit at once. The regimes below turn them into the steady state at a load:
 * a closed loop of N requests in flight, an open loop of Poisson arrivals at a rate, or
 * the largest rate that meets latency limits. The performance model feeds them its
 * roofline step costs (tb_model_serve.c); a measurement can feed measured ones.
 *
 * The server modelled is an iteration-level scheduler that admits prompts first
 * (TensorRT-LLM's in-flight batching, vLLM's chunked prefill): each iteration runs one
 * decode token of every running sequence plus the prompts that waited, up to a token
 * budget (max_num_tokens) and, where the server says so, up to max_prompts prompts.
 * The equations (README "Serving regimes"), per replica, at throughput X requests/s,
 * an arrival seeing the share f of the load ((N-1)/N closed loop, 1 open loop):
 *   p, pb  prefill of one prompt alone; per prompt when K prompts share an iteration
 *          (K = (budget - Nd) / Tin, at most max_prompts, at least 1: each decoding
 *          sequence takes one token of the budget; at most budget - 1 decode at once)
 *   d      = decode_s(max(1, Nd), ctx), Nd the sequences decoding (fixed point below)
 *   TPOT   = S = d / (1 - f X pb): the mean iteration, decode stretched by the prefills
 *   Nd     = X (Tout - 1) TPOT (Little's law on the decode phase)
 *   sigma  = pb + ceil(Tin / budget) d / K: a prompt's share of the admission iterations
 *   rq     = f X E[sigma];  Wq = f X E[sigma^2] / (2 (1 - rq))  (M/G/1, Pollaczek-Khinchine)
 *   R      = (1 - rq) S / 2: the iteration in flight when it arrives
 *   own    = p + ceil(Tin / budget) d + min(K - 1, f X S) pb: the iteration(s) that carry
 *            its prompt, with the others admitted beside it
 *   TTFT   = Wq + R + own;  e2e = TTFT + (Tout - 1) TPOT;  in flight = X e2e (Little)
 * Percentiles: P(Wq > t) = rq exp(-theta t), theta the M/G/1 decay rate
 * (f X (E[exp(theta sigma)] - 1) = theta), convolved with the prompts' own lengths; a
 * request's TPOT is the mean of its Tout - 1 iterations, whose prefill work is compound
 * Poisson: variance f X E[pb^2] / (Tout - 1) S, normal.
 * Closed loop: X solves X e2e(X) = N (over the decode batch Nd in [0, N], X the
 * throughput it implies); beyond the capacity C the server runs C and the
 * other N - C wait (their wait is added to TTFT). Open loop: X = rate, refused as
 * saturated when it has no stable state within the capacity.
 */
#ifndef TB_REGIME_H
#define TB_REGIME_H

#include <stdbool.h>
#include <stddef.h>

/* Per-step costs of one replica (seconds), as functions of the load. */
struct tb_regime_costs {
    const void *ctx;                                             /* passed to each */
    double (*prefill_s)(const void *ctx, double B, double T);    /* B prompts of T tokens */
    double (*decode_s)(const void *ctx, double B, double len);   /* one step, context len */
    double (*capacity)(const void *ctx, double tin, double len); /* sequences that fit at
                                                                   mean context len (0: none;
                                                                   NULL: no limit) */
    double chunk_tokens; /* prefill tokens one step carries (0: 8192) */
    double max_prompts;  /* prompts one iteration admits (0: as many as chunk_tokens holds;
                            trnbench serve: 1) */
};

/* The lengths the requests have: n representative (prompt, output) points with weights
 * summing to 1, and the prompt whose prefill MLPerf's p99 TTFT meets. */
#define TB_REGIME_MAXREP 3
#define TB_REGIME_MAXQ   6
struct tb_regime_lengths {
    int n;
    double tin[TB_REGIME_MAXREP], tout[TB_REGIME_MAXREP], w[TB_REGIME_MAXREP];
    double tin_p99;
    /* the prompts' quantiles for the tails (nq 0: the n points above are the whole
     * distribution): prompt qtin[i] at cumulative share q[i] (0 < q <= 1, increasing) */
    int nq;
    double q[TB_REGIME_MAXQ], qtin[TB_REGIME_MAXQ];
};

/* Which load. Exactly one of concurrency, rate and the limits is set. */
struct tb_regime_load {
    double concurrency;     /* closed loop: requests in flight (per replica) */
    double rate;            /* open loop: requests/s (per replica) */
    double ttft_limit_s;    /* with tpot_limit_s: the largest rate meeting both */
    double tpot_limit_s;    /* (each at its percentile: tb_regime_solve) */
    double ttft_percentile; /* of the TTFT limit (MLPerf: 99); 0: the mean */
    double tpot_percentile; /* of the TPOT limit (MLPerf: 99, per request); 0: the mean */
    bool max_throughput;    /* closed loop at the capacity (MLPerf Offline) */
};

/* The steady state, per replica. */
struct tb_regime_result {
    double ttft_s, ttft_pct_s, tpot_s, e2e_s; /* ttft_pct_s: at the load's percentile */
    double tpot_pct_s;                        /* a request's TPOT at the load's percentile */
    double rate;                              /* requests/s completed */
    double inflight;                          /* requests in the server, queue included */
    double running;                           /* requests the server runs (<= capacity) */
    double decoding;                          /* of them in the decode phase */
    double prefill_busy;                      /* rho */
    double wait_s;                            /* queueing before the prefill, mean */
    double capacity;                          /* sequences that fit (INFINITY: no limit) */
    double tin_mean, tout_mean, ctx_mean;
    bool queued;     /* the closed loop exceeds the capacity: requests wait for memory */
    double rate_max; /* an open loop refused as saturated: the most requests/s it sustains;
                        0 otherwise */
};

/* Solve the load. Returns 0, or -1 with the reason in why: saturated (an open-loop rate
 * beyond the most the server sustains: "saturated: at most X requests/s ..."), no load
 * meets the limits, or nothing fits. */
int tb_regime_solve(const struct tb_regime_costs *c, const struct tb_regime_lengths *len,
                    const struct tb_regime_load *load, struct tb_regime_result *out, char *why,
                    size_t whylen);

#endif
