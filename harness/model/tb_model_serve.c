/* harness/model/tb_model_serve.c: prefill, decode and serving (tb_model_impl.h). */
#include "tb_model_impl.h"

#include "tb_flops.h"
#include "tb_range.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- inference ---- */

struct step {
    double t, tcomp, tmem, tcomm, tover;
};

static const char *bound_of(const struct step *s)
{
    double m = fmax(fmax(s->tcomp, s->tmem), fmax(s->tcomm, s->tover));
    return m == s->tcomp   ? "compute"
           : m == s->tmem  ? "memory"
           : m == s->tcomm ? "communication"
                           : "overhead";
}

static double kv_per_device(const struct dev *d, long tp, double tokens)
{
    long shards = tp < d->a->kv_heads ? tp : d->a->kv_heads;
    return tokens * tb_bytes_kv_per_token(d->a, d->kvbytes) / (double)shards;
}

/* Bytes of KV cache a decode step's attention reads per device for `tokens` positions
 * (over all its sequences). A GQA kernel reads each of the device's KV heads once
 * (kv_repeat 0: what the device stores); transformers-neuronx's attention first repeats
 * the cache to the device's query heads, padded to tp as the heads are (kv_repeat 1:
 * layers/attention.py score() calls repeat_kv before Q.K and the softmax over the
 * positions, as NxD Inference's compute_for_token_gen does when its fused kernel is off),
 * so it is read once per query head: twice the stored bytes for a 70B at 2 query heads
 * per core, the same for an 8B at one. */
static double kv_read_per_device(const struct dev *d, long tp, double tokens)
{
    const struct tb_arch *a = d->a;
    double rep = d->e->kv_repeat;
    double qheads = ceil((double)a->heads / (double)tp);
    double stored = kv_per_device(d, tp, tokens);
    double repeated = tokens * 2.0 * a->layers * qheads * a->head_dim * d->kvbytes;
    return (1.0 - rep) * stored + rep * repeated;
}

/* ---- mixture of experts (tb_arch.h; the layout: struct dev's ep, etp, eg) ---- */

/* FLOPs of the routed experts for n tokens: 2 per multiply-add of the k experts each
 * token passes through in every MoE layer. */
static double expert_flops(const struct tb_arch *a, double n)
{
    return 2.0 * tb_arch_moe_layers(a) * (double)a->experts_active * tb_arch_params_expert(a) * n;
}

/* Replicas whose tokens one expert group serves: 1 when the experts sit in each
 * tensor-parallel group, dp when the group spans the layout (attention data-parallel). */
static double group_replicas(const struct dev *d, long tp)
{
    return d->eg > tp ? (double)d->eg / (double)tp : 1.0;
}

/* Efficiency of the routed experts' products when a replica runs n tokens: each expert
 * gets the rows routed to it, n x replicas x k / E (a decode step's few: a grouped GEMM
 * of small M), over columns C / etp. */
static double expert_eff(const struct dev *d, double n, long tp)
{
    const struct tb_arch *a = d->a;
    double rows = n * group_replicas(d, tp) * a->experts_active / (double)a->experts;
    return tb_model_gemm_eff(d, fmax(rows, 1.0), d->etp > 0 ? d->etp : tp);
}

/* Routed experts of a MoE layer one device holds: E / ep, rounded up on the busiest. */
static double experts_held(const struct dev *d)
{
    return ceil((double)d->a->experts / (double)d->ep);
}

/* Routed experts of a MoE layer the busiest device reads for a step of n tokens per
 * replica: the experts the group's tokens touch (tb_arch_experts_touched), all of its
 * own share when ep is 1 (each expert split over the tensor-parallel group), else an
 * equal share of them rounded up, since a step waits for the device that reads a whole
 * expert (one token routed to one expert: that device reads it, the others nothing). */
static double experts_read(const struct dev *d, double n, long tp)
{
    double hit = tb_arch_experts_touched(d->a, n * group_replicas(d, tp));
    if (d->ep <= 1)
        return hit;
    return fmin(experts_held(d), ceil(hit / (double)d->ep - 1e-9));
}

/* Bytes of a MoE layer's routed experts per device: r experts, each 1/etp of it. */
static double expert_bytes(const struct dev *d, double r, long tp)
{
    return tb_arch_moe_layers(d->a) * r * tb_arch_params_expert(d->a) * d->wbytes /
           (double)(d->etp > 0 ? d->etp : tp);
}

/* Time of the all-to-alls a step over n tokens per replica makes when the experts span
 * the replicas (ep > tp): in every MoE layer each device dispatches its 1/tp of the
 * replica's tokens to the devices of their k experts and gets the results back (two
 * all-to-alls of n/tp x k x C 16-bit values). Experts within a tensor-parallel group need
 * none: every device holds every token, and the layer's all-reduce combines. */
static double moe_alltoall_s(const struct dev *d, double n, long tp)
{
    const struct tb_arch *a = d->a;
    if (a->experts <= 0 || d->eg <= tp)
        return 0;
    return tb_arch_moe_layers(a) * 2.0 *
           tb_model_alltoall_s(d, n / (double)tp * a->experts_active * a->hidden * 2.0, d->eg,
                               d->eg);
}

/* Compute time of the prefill of B prompts of n new tokens after c cached ones (chunks
 * of M rows at a time) over tp devices: the weights' products over the n tokens at the
 * precision's peak, the attention's (QK^T, AV) of the n queries over all c + n
 * positions (causal) at the KV cache format's (attn_peak). c is 0 without a prefix
 * cache. */
static double prefill_compute_s(const struct dev *d, double B, double n, double c, double M,
                                long tp)
{
    const struct tb_arch *a = d->a;
    double dense = tb_flops_prefill(a, B, n) - tb_flops_attention(a, B, n);
    double attn = tb_flops_attention(a, B, n + c) - tb_flops_attention(a, B, c);
    double eff = tb_model_gemm_eff(d, M, tp);
    if (a->experts > 0) {
        /* the routed experts' products at the efficiency of their own rows */
        double X = expert_flops(a, B * n);
        return ((dense - X) * tb_model_head_pad(a, tp) / d->peak +
                attn * tb_model_head_pad(a, tp) / d->attn_peak) /
                   (double)tp / eff +
               X / (double)tp / (d->peak * expert_eff(d, M, tp));
    }
    return (dense * tb_model_head_pad(a, tp) / d->peak +
            attn * tb_model_head_pad(a, tp) / d->attn_peak) /
           (double)tp / eff;
}

/* The tokens of a prompt of T a prefill computes (*n) and finds cached (*c): the share
 * prefix_hit of them cached, at least one computed (the last position's logits give the
 * first token, so a server recomputes it on a full hit: vLLM's prefix cache). */
static void prefill_split(const struct dev *d, double T, double *n, double *c)
{
    *n = fmax(1.0, T - floor(d->prefix_hit * T));
    *c = T - *n;
}

/* Bytes per weight of the embedding and the LM head: 16-bit where the stack keeps them
 * out of a narrower checkpoint's quantisation (head_bytes; NVIDIA's Model Optimizer
 * leaves "*lm_head*" and the embedding lookup unquantised), else the layers' format. */
static double head_wbytes(const struct dev *d)
{
    return d->e->head_bytes > d->wbytes ? d->e->head_bytes : d->wbytes;
}

/* Bytes of the weights one step's matrix products stream per device: the layers' at the
 * format (heads padded to tp), the LM head at head_wbytes; of a mixture of experts, the
 * routed experts its n tokens (per replica) touch. */
static double stream_wbytes(const struct dev *d, long tp, double n)
{
    const struct tb_arch *a = d->a;
    if (a->experts > 0) /* the routed experts the step's n tokens touch (experts_read) */
        return ((tb_arch_params_matmul(a) - tb_arch_params_experts(a)) * tb_model_head_pad(a, tp) *
                    d->wbytes +
                tb_arch_params_embedding(a) * (head_wbytes(d) - d->wbytes)) /
                   (double)tp +
               expert_bytes(d, experts_read(d, n, tp), tp);
    return (tb_arch_params_matmul(a) * tb_model_head_pad(a, tp) * d->wbytes +
            tb_arch_params_embedding(a) * (head_wbytes(d) - d->wbytes)) /
           (double)tp;
}

/* Prefill of B prompts of T tokens with tensor parallelism tp (a share d->prefix_hit of
 * each found in the prefix cache); with speculative decoding, the draft's prefill of the
 * same prompts too. */
static struct step prefill_step(const struct dev *d, double B, double T, long tp)
{
    const struct tb_arch *a = d->a;
    struct step s;
    double M, n, c;
    /* the tokens computed: a cached prefix's are not, but are read (its KV, the same
     * bytes as writing them) and attended to */
    prefill_split(d, T, &n, &c);
    /* a compiled stack (Neuron) runs the prompt through a graph of a fixed length, the
     * smallest bucket that holds it: a shorter prompt is padded to the smallest bucket
     * (prefill_min_tokens; 0 where the kernels take the prompt's own length) */
    n = fmax(n, d->e->prefill_min_tokens);
    M = B * n;
    s.tcomp = prefill_compute_s(d, B, n, c, fmin(M, 16384), tp);
    s.tmem =
        (stream_wbytes(d, tp, M) + kv_per_device(d, tp, B * (n + c))) / (d->hbm_bw * d->e->mem_eff);
    s.tcomm = a->layers * 2.0 * tb_model_allreduce_s(d, M * a->hidden * 2.0, tp, tp) +
              moe_alltoall_s(d, M, tp);
    /* the prefill's fixed cost per layer (prefill_layer_us): the kernels of a prompt's
     * forward that the FLOP and byte counts leave out (norms, rotary, quantisation,
     * residual adds, the attention plugin's set-up), each launched and synchronised on
     * its own because a prefill's shapes vary and are not captured in a graph; it does
     * not shrink with the prompt, so it is what a short prompt's TTFT is made of */
    s.tover = a->layers * d->e->prefill_layer_s + d->e->step_s; /* and the step's (step_us) */
    s.t = fmax(s.tcomp, s.tmem) + s.tcomm + s.tover;
    /* the least time of a prefill call (prefill_floor_us): transformers-neuronx's context
     * encoding of a 128-token prompt takes as long for a 13B as for a 7B, so what bounds
     * it is the call, not the layers; the graph's work runs within it, and a prompt whose
     * work takes longer is not slowed by it */
    if (s.t < d->e->prefill_floor_s) {
        s.t = d->e->prefill_floor_s;
        s.tover = s.t;
    }
    if (d->draft) {
        /* the draft's own prefill of the prompt (a draft model's KV cache, EAGLE's head
         * over the target's hidden states): its work and its layers' fixed costs, run
         * in the same call (no second floor or step cost) */
        const struct dev *dr = d->draft;
        double tc = prefill_compute_s(dr, B, n, c, fmin(M, 16384), tp);
        double tm = (stream_wbytes(dr, tp, M) + kv_per_device(dr, tp, B * (n + c))) /
                    (dr->hbm_bw * dr->e->mem_eff);
        s.tcomp += tc;
        s.tmem += tm;
        s.t += fmax(tc, tm) +
               dr->a->layers * 2.0 * tb_model_allreduce_s(dr, M * dr->a->hidden * 2.0, tp, tp) +
               dr->a->layers * dr->e->prefill_layer_s;
    }
    return s;
}

/* One forward step of B sequences, each with q query tokens attending to ctx positions
 * (q 1: a decode step; q > 1: speculative decoding's verification of q - 1 drafted
 * tokens, their compute q times one token's, the weights and the KV cache read once);
 * host: whether the host's work per request counts (not for a draft's steps, run on the
 * device between the target's). */
static struct step decode_rows(const struct dev *d, double B, double ctx, long tp, double q,
                               bool with_host)
{
    const struct tb_arch *a = d->a;
    struct step s;
    double eff = tb_model_gemm_eff(d, B * q, tp);
    double attn = q * (tb_flops_decode_step(a, B, ctx - 1) - tb_flops_decode_step(a, B, -1));
    double tw, tkv, ta, dev, host, hidden, ov = d->e->attn_overlap;
    /* the weights' products at the precision's peak (a 16-bit LM head at bf16's), the
     * attention's at the cache's */
    double head = head_wbytes(d) > d->wbytes ? 2.0 * q * B * tb_arch_params_embedding(a) : 0;
    /* a mixture of experts' routed experts at the efficiency of their rows per expert */
    double X = a->experts > 0 ? expert_flops(a, q * B) : 0;
    s.tcomp = ((q * tb_flops_decode_step(a, B, ctx - 1) - attn - head - X) / d->peak +
               head / d->bf16_peak + attn / d->attn_peak) *
              tb_model_head_pad(a, tp) / (double)tp / eff;
    if (X > 0)
        s.tcomp += X / (double)tp / (d->peak * expert_eff(d, q * B, tp));
    tw = stream_wbytes(d, tp, q * B) / (d->hbm_bw * d->e->mem_eff);
    tkv = kv_read_per_device(d, tp, B * ctx) / (d->hbm_bw * d->e->kv_eff);
    s.tmem = tw + tkv;
    s.tcomm = a->layers * 2.0 * tb_model_allreduce_s(d, q * B * a->hidden * 2.0, tp, tp) +
              moe_alltoall_s(d, q * B, tp);
    /* the attention (reading the KV cache) and the weights' products: one roofline over
     * the step where they overlap (attn_overlap 1: a compiled graph), each kernel its
     * own where they run one after another (0: a GPU's attention kernel between the QKV
     * and output projections); ta is the attention's share of the compute */
    ta = attn * tb_model_head_pad(a, tp) / (double)tp / (d->attn_peak * eff);
    /* the device's step: the products and the attention, the all-reduces, the layers'
     * fixed costs (layer_us) and the step's own (step_us: the graph's launch, the
     * sampler, the tokens' copy back) */
    dev = ov * fmax(s.tcomp, s.tmem) + (1.0 - ov) * (fmax(s.tcomp - ta, tw) + fmax(ta, tkv)) +
          s.tcomm + a->layers * d->e->layer_s + d->e->step_s;
    /* the host's work per request (scheduling, stop checks, detokenising): the part an
     * overlap scheduler runs beside the device's step (request_overlap) costs only what
     * exceeds that step */
    host = with_host ? B * d->e->request_s : 0;
    hidden = d->e->request_overlap * fmin(host, dev);
    s.tover = a->layers * d->e->layer_s + d->e->step_s + host - hidden;
    s.t = dev + host - hidden;
    return s;
}

/* The decode time per output token of B sequences at context ctx: one step, or with
 * speculative decoding the target's verification of spec_q tokens and the draft's
 * spec_q - 1 forwards over the spec_accept tokens the step emits on average (the
 * components likewise, for what bounds it). */
static struct step decode_step(const struct dev *d, double B, double ctx, long tp)
{
    struct step s, ds;
    double k, A;
    if (d->spec_accept <= 0)
        return decode_rows(d, B, ctx, tp, 1, true);
    k = d->spec_q - 1;
    A = d->spec_accept;
    s = decode_rows(d, B, ctx, tp, d->spec_q, true);
    ds = decode_rows(d->draft, B, ctx, tp, 1, false);
    s.t = (s.t + k * ds.t) / A;
    s.tcomp = (s.tcomp + k * ds.tcomp) / A;
    s.tmem = (s.tmem + k * ds.tmem) / A;
    s.tcomm = (s.tcomm + k * ds.tcomm) / A;
    s.tover = (s.tover + k * ds.tover) / A;
    return s;
}

/* Bytes per device to serve B sequences of up to ctx tokens. */
static double serve_mem(const struct dev *d, double B, double ctx, double chunk, long tp)
{
    const struct tb_arch *a = d->a;
    double weights = (tb_arch_params_matmul(a) * d->wbytes +
                      tb_arch_params_embedding(a) * (2.0 * head_wbytes(d) - d->wbytes)) /
                     (double)tp;
    double kv = kv_per_device(d, tp, B * ctx);
    if (d->draft) /* the draft's weights and its KV cache beside the target's */
        return serve_mem(d->draft, B, ctx, 0, tp) + weights + kv +
               chunk * (4.0 * a->hidden + 2.0 * a->ffn) * 2.0 / (double)tp +
               fmin(B, chunk) * a->vocab * 4.0 / (double)tp;
    /* working set of the largest forward chunk: activations and the logits */
    double work = chunk * (4.0 * a->hidden + 2.0 * tb_arch_ffn_active(a)) * 2.0 / (double)tp +
                  fmin(B, chunk) * a->vocab * 4.0 / (double)tp;
    /* a mixture of experts: every expert held (not only those a step reads), each device
     * its share of the expert group's (E / ep experts, 1/etp of each) */
    if (a->experts > 0)
        weights += expert_bytes(d, experts_held(d), tp) -
                   tb_arch_params_experts(a) * d->wbytes / (double)tp;
    return weights + kv + work;
}

struct serve_point {
    double ttft, tpot, e2e, out_tps, total_tps;
    const char *bound;         /* of the whole request: what dominates its time */
    const char *bound_prefill; /* of the prefill alone */
    const char *bound_decode;  /* of a decode step alone */
};

/* The context a static batch's decode steps read, on average: the steps run at positions
 * Tin .. Tin+Tout-2, whose mean is Tin + Tout/2; a compiled graph's attention reads the
 * KV cache of its whole sequence-length bucket, Tin + Tout, at every step (kv_bucket 1:
 * transformers-neuronx's token-generation graph attends to its whole bucket, the
 * positions not yet written masked, and the Neuron tables ran one bucket of prompt +
 * output, so their published TPOT depends on prompt + output, not on the split) */
static double static_decode_ctx(const struct dev *d, double Tin, double Tout)
{
    return Tin + Tout * (0.5 + 0.5 * d->e->kv_bucket);
}

/* Static batch of B requests: prefill all, then seq_out - 1 decode steps. */
static struct serve_point serve_static(const struct dev *d, double B, double Tin, double Tout,
                                       long tp)
{
    struct serve_point p;
    struct step pf = prefill_step(d, B, Tin, tp);
    struct step dc = decode_step(d, B, static_decode_ctx(d, Tin, Tout), tp);
    p.ttft = pf.t;
    p.tpot = dc.t;
    p.e2e = pf.t + (Tout - 1) * dc.t;
    p.out_tps = B * Tout / p.e2e;
    p.total_tps = B * (Tin + Tout) / p.e2e;
    p.bound_prefill = bound_of(&pf);
    p.bound_decode = bound_of(&dc);
    p.bound = pf.t > (Tout - 1) * dc.t ? p.bound_prefill : p.bound_decode;
    return p;
}

/* Continuous batching at B requests in flight: each cycle of Tout decode steps also
 * prefills the B prompts that replace the finished ones, in chunks beside the decodes
 * (compute at the chunk's efficiency). */
static struct serve_point serve_continuous(const struct dev *d, double B, double Tin, double Tout,
                                           long tp)
{
    const struct tb_arch *a = d->a;
    struct serve_point p;
    struct step dc = decode_step(d, B, Tin + Tout / 2.0, tp);
    double n, c;
    prefill_split(d, Tin, &n, &c);
    double chunk = fmin(B * n, 8192);
    double pf = prefill_compute_s(d, B, n, c, chunk, tp) +
                a->layers * 2.0 * tb_model_allreduce_s(d, B * n * a->hidden * 2.0, tp, tp) +
                moe_alltoall_s(d, B * n, tp);
    if (d->draft) /* the draft's prefill of the same prompts */
        pf += prefill_compute_s(d->draft, B, n, c, chunk, tp);
    double cycle = Tout * dc.t + pf;
    p.ttft = prefill_step(d, 1, Tin, tp).t + dc.t;
    p.tpot = cycle / Tout;
    p.e2e = p.ttft + (Tout - 1) * p.tpot;
    p.out_tps = B * Tout / cycle;
    p.total_tps = B * (Tin + Tout) / cycle;
    p.bound_decode = bound_of(&dc);
    p.bound_prefill = "compute";
    p.bound = Tout * dc.t > pf ? p.bound_decode : p.bound_prefill;
    return p;
}

/* The most sequences of ctx tokens (prompts of Tin) that fit in cap bytes per device
 * beside the weights, up to the stack's max_batch; 0 when not one fits. */
static double fit_load(const struct dev *d, double Tin, double ctx, long tp, double cap)
{
    double lo = 1, hi = (double)d->e->max_batch;
    if (serve_mem(d, 1, ctx, fmin(Tin, 8192), tp) > cap)
        return 0;
    while (lo < hi) { /* lo fits, hi + 1 does not */
        double mid = ceil((lo + hi) / 2);
        if (serve_mem(d, mid, ctx, fmin(mid * Tin, 8192), tp) <= cap)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The step costs of one replica, for the serving regimes (tb_regime.h). */
struct replica {
    const struct dev *d;
    long tp;
    double cap; /* usable bytes per device */
};

static double replica_prefill(const void *ctx, double B, double T)
{
    const struct replica *r = ctx;
    return prefill_step(r->d, B, T, r->tp).t;
}

static double replica_decode(const void *ctx, double B, double len)
{
    const struct replica *r = ctx;
    return decode_step(r->d, B, len, r->tp).t;
}

static double replica_capacity(const void *ctx, double tin, double len)
{
    const struct replica *r = ctx;
    return fit_load(r->d, tin, len, r->tp, r->cap);
}

/* Set up serving's terms on d from sc: speculative decoding's draft (on *draft, over
 * the same k devices per chip; a draft model of the catalogue, or with none EAGLE's head,
 * taken as one layer of the target's shape on *head) and the prefix cache's share. 0,
 * or -1 with the reason. */
static int serve_terms(struct dev *d, struct dev *draft, struct tb_arch *head,
                       const struct tb_model *m, const struct tb_scenario *sc, long k, char *err,
                       size_t errlen)
{
    d->prefix_hit = sc->prefix_hit;
    if (sc->spec_accept <= 0)
        return 0;
    struct tb_scenario s2 = *sc;
    if (sc->draft) {
        s2.arch = sc->draft;
    } else {
        *head = *sc->arch;
        head->layers = 1;
        s2.arch = head;
    }
    d->spec_accept = sc->spec_accept;
    d->spec_q = (sc->spec_len > 0 ? (double)sc->spec_len : ceil(sc->spec_accept)) + 1;
    if (sc->spec_accept > d->spec_q)
        return tb_err(err, errlen,
                      "spec_accept %g is above spec_len + 1 = %g: a step emits at most the "
                      "drafted tokens and its own",
                      sc->spec_accept, d->spec_q);
    if (tb_model_dev_init(draft, m, &s2, k, err, errlen) != 0)
        return -1;
    d->draft = draft;
    return 0;
}

/* Put what serving's terms assume at the head of p's assumptions (the regimes' own run
 * long: said first, so that no truncation drops it). */
static void note_terms(const struct dev *d, const struct tb_scenario *sc, struct tb_prediction *p)
{
    char t[sizeof p->assumptions], buf[sizeof p->assumptions];
    size_t n = 0;
    t[0] = '\0';
    if (d->spec_accept > 0)
        n += (size_t)snprintf(t + n, sizeof t - n,
                              "assumes speculative decoding: %.0f drafted tokens per step by %s%s, "
                              "acceptance length %.3g tokens per target step (TPOT = (verify %.0f "
                              "tokens + %.0f draft steps) / %.3g); ",
                              d->spec_q - 1, sc->draft ? sc->draft->name : "a one-layer head",
                              sc->draft ? "" : " (EAGLE-style)", d->spec_accept, d->spec_q,
                              d->spec_q - 1, d->spec_accept);
    if (d->prefix_hit > 0 && n < sizeof t)
        snprintf(t + n, sizeof t - n,
                 "assumes prefix caching: %.3g%% of each prompt's tokens found cached (a prefill "
                 "computes the rest, attending over the whole prompt); ",
                 d->prefix_hit * 100);
    if (!t[0])
        return;
    snprintf(buf, sizeof buf, "%s%s", t, p->assumptions);
    snprintf(p->assumptions, sizeof p->assumptions, "%s", buf);
}

int tb_model_predict_inference(const struct tb_model *m, const struct tb_scenario *sc,
                               struct tb_prediction *p, char *err, size_t errlen)
{
    struct dev d, draft;
    struct tb_arch head;
    long chips = p->chips, k, tp, dp;
    double Tin = (double)sc->seq_in, Tout = (double)(sc->seq_out > 0 ? sc->seq_out : 1);
    double cap, ctx = Tin + Tout;
    struct serve_point sp;
    char moe[192] = ""; /* the expert layout, for the assumptions */

    (void)m;
    if (sc->seq_in <= 0 && !(sc->dataset && *sc->dataset))
        return tb_err(err, errlen, "seq_in missing: the prompt length is needed");
    if (sc->pp > 1)
        return tb_err(err, errlen, "pipeline-parallel inference is not modeled (pp=%ld)", sc->pp);
    if (sc->tp > 0) {
        long devs;
        tp = sc->tp;
        /* dp not given and tp whole groups fewer than the chips: the chips serve as
         * replicas of that group (8 GPUs at tp 1: 8 replicas), a load given shared among
         * them as when dp is given */
        dp = sc->dp > 0 ? sc->dp : tp < chips && chips % tp == 0 ? chips / tp : 1;
        if (tb_mul_long(tp, dp, &devs) != 0) /* pp is 1 here */
            return tb_err(err, errlen, "tp x dp = %ld x %ld overflows: not a layout", tp, dp);
        if (devs % chips)
            return tb_err(err, errlen, "tp x dp = %ld does not divide over %ld chips", devs, chips);
        k = devs / chips;
    } else {
        k = 1;
        dp = sc->dp > 0 ? sc->dp : 1;
        if (chips % dp)
            return tb_err(err, errlen, "dp=%ld does not divide %ld chips", dp, chips);
        tp = chips / dp;
    }
    if (k != 1 && k != 2 && k != 4 && k != 8)
        return tb_err(err, errlen, "tp x dp over %ld chips gives %ld devices per chip", chips, k);
    if (tb_model_dev_init(&d, m, sc, k, err, errlen) != 0 ||
        tb_model_expert_layout(&d, tp, dp, sc->ep, err, errlen) != 0 ||
        serve_terms(&d, &draft, &head, m, sc, k, err, errlen) != 0)
        return -1;
    p->devices = chips * k;
    p->devices_per_chip = k;
    p->tp = tp;
    p->pp = 1;
    p->dp = dp;
    p->ep = d.ep;
    p->etp = d.etp;
    if (d.a->experts > 0)
        snprintf(moe, sizeof moe,
                 "; MoE: %d experts, %d active (%d shared), ep=%ld, experts' tp=%ld%s",
                 d.a->experts, d.a->experts_active, d.a->shared_experts, d.ep, d.etp,
                 d.eg > tp ? ", attention data-parallel over the expert group" : "");
    p->hbm_per_device_gib = d.hbm / 1073741824.0;
    cap = d.hbm * d.e->hbm_usable;

    if (tb_model_regime_wanted(sc)) {
        const struct replica rep = {&d, tp, cap};
        const struct tb_regime_costs c = {
            &rep, replica_prefill, replica_decode, replica_capacity, 8192, 0};
        char layout[360];
        snprintf(layout, sizeof layout,
                 "tp=%ld dp=%ld over %ld devices (%ld per chip); gemm_eff %.2f, mem_eff %.2f, "
                 "%s weights%s",
                 tp, dp, p->devices, k, d.gemm_eff, d.e->mem_eff, d.format, moe);
        if (tb_model_regime(m, sc, &c, layout, p, err, errlen) != 0)
            return -1;
        if (p->fits)
            note_terms(&d, sc, p);
        return 0;
    }
    if (sc->batch_max) {
        double best = -1, bestB = 0, Bmem = fit_load(&d, Tin, ctx, tp, cap), B;
        struct serve_point bp = {0};
        if (Bmem < 1) {
            p->fits = false;
            snprintf(p->why, sizeof p->why,
                     "does not fit: weights and one request need %.1f GiB per device, %.1f GiB "
                     "usable (tp=%ld)",
                     serve_mem(&d, 1, ctx, fmin(Tin, 8192), tp) / 1073741824.0, cap / 1073741824.0,
                     tp);
            return 0;
        }
        /* the throughput-maximising load within memory and the latency limits: loads
         * 1, 2, 3, ... growing by a quarter, and the largest */
        for (B = 1;; B = fmin(Bmem, fmax(B + 1, floor(B * 1.25)))) {
            struct serve_point s = serve_continuous(&d, B, Tin, Tout, tp);
            bool ok = !(sc->ttft_limit_ms > 0 && s.ttft * 1e3 > sc->ttft_limit_ms) &&
                      !(sc->tpot_limit_ms > 0 && s.tpot * 1e3 > sc->tpot_limit_ms);
            if (ok && s.out_tps > best) {
                best = s.out_tps;
                bestB = B;
                bp = s;
            }
            if (B >= Bmem)
                break;
        }
        if (best < 0) {
            p->fits = false;
            snprintf(p->why, sizeof p->why,
                     "no load meets the latency limits (TTFT %g ms, TPOT %g ms)", sc->ttft_limit_ms,
                     sc->tpot_limit_ms);
            return 0;
        }
        sp = bp;
        p->batch = (long)bestB;
        p->mem_per_device_gib =
            serve_mem(&d, bestB, ctx, fmin(bestB * Tin, 8192), tp) / 1073741824.0;
    } else {
        double B = (double)(sc->batch > 0 ? sc->batch : 1);
        double need = serve_mem(&d, B, ctx, fmin(B * Tin, 8192), tp);
        p->batch = (long)B;
        p->mem_per_device_gib = need / 1073741824.0;
        if (need > cap) {
            p->fits = false;
            snprintf(p->why, sizeof p->why,
                     "does not fit: %.1f GiB per device needed (weights, KV cache of %.0f x %.0f "
                     "tokens, work space), %.1f usable (tp=%ld)",
                     need / 1073741824.0, B, ctx, cap / 1073741824.0, tp);
            return 0;
        }
        sp = serve_static(&d, B, Tin, Tout, tp);
    }
    p->fits = true;
    p->ttft_ms = sp.ttft * 1e3;
    p->tpot_ms = sp.tpot * 1e3;
    p->e2e_latency_ms = sp.e2e * 1e3;
    p->output_tokens_per_s = sp.out_tps * (double)dp;
    p->total_tokens_per_s = sp.total_tps * (double)dp;
    p->output_tokens_per_s_per_chip = p->output_tokens_per_s / (double)chips;
    p->tokens_per_s_per_user = 1.0 / sp.tpot;
    p->bound = sc->phase == TB_PHASE_PREFILL  ? sp.bound_prefill
               : sc->phase == TB_PHASE_DECODE ? sp.bound_decode
                                              : sp.bound;
    snprintf(p->assumptions, sizeof p->assumptions,
             "%s; tp=%ld dp=%ld over %ld devices (%ld per chip); batch %ld%s%s; gemm_eff %.2f "
             "(half at %.0f rows), mem_eff %.2f, layer %.0f us (prefill %.0f); weights %.4g B "
             "(%s), KV %.0f B",
             sc->batch_max ? "continuous batching" : "static batch", tp, dp, p->devices, k,
             p->batch, dp > 1 ? " per replica" : "",
             sc->batch_max ? " (throughput-maximising)" : "", d.gemm_eff, d.e->gemm_m_half,
             d.e->mem_eff, d.e->layer_s * 1e6, d.e->prefill_layer_s * 1e6, d.wbytes, d.format,
             d.kvbytes);
    {
        double rep = kv_read_per_device(&d, tp, 1.0) / kv_per_device(&d, tp, 1.0);
        size_t n = strlen(p->assumptions);
        if (rep > 1.0 + 1e-9)
            snprintf(p->assumptions + n, sizeof p->assumptions - n,
                     "; decode reads the KV cache %.3gx as stored (repeated to %.0f query heads "
                     "a device)",
                     rep, ceil((double)d.a->heads / (double)tp));
        n = strlen(p->assumptions);
        snprintf(p->assumptions + n, sizeof p->assumptions - n, "%s", moe);
        n = strlen(p->assumptions);
        if (d.e->prefill_floor_s > 0)
            snprintf(p->assumptions + n, sizeof p->assumptions - n,
                     "; a prefill call takes at least %.2f ms", d.e->prefill_floor_s * 1e3);
    }
    note_terms(&d, sc, p);
    return 0;
}

/* Whether a layout's tensor-parallel group size is looked at for `chips` chips: every
 * divisor (no chip idle) and every power of two (the group sizes the stacks build;
 * the chips left over idle). */
static bool serving_tp_candidate(long tp, long chips)
{
    return chips % tp == 0 || (tp & (tp - 1)) == 0;
}

/* Serving (phase serve, or any phase at the throughput-maximising load) with no layout
 * given (neither tp nor dp): replicas (dp) of tensor-parallel
 * groups of tp chips, dp = chips / tp rounded down (chips left over idle), for every tp
 * serving_tp_candidate takes. A static batch is the requests in flight on the whole
 * target (its instances), shared by the replicas: as many replicas as hold an equal
 * share (the largest count up to dp that divides it), the others idle, so "batch 16"
 * means 16 requests whatever the layout. The throughput-maximising load (batch max) is
 * each replica's; p->batch is then what the target holds in all (per replica x dp).
 * The layout with the most output tokens per second of the target wins (its chips,
 * idle ones included); on a tie (within 0.1%) the larger group, the lower latency.
 * Latency limits (ttft_limit_ms, tpot_limit_ms) rule layouts out. */
int tb_model_predict_serving_layout(const struct tb_model *m, const struct tb_scenario *sc,
                                    struct tb_prediction *p, char *err, size_t errlen)
{
    struct tb_scenario s = *sc;
    const struct tb_prediction init = *p; /* as tb_model_predict set it up */
    struct tb_prediction q;
    bool have = false;
    long layouts = 0;
    struct dev d;

    /* what no layout changes (a precision the chip lacks) is said as such */
    if (tb_model_dev_init(&d, m, sc, 1, err, errlen) != 0)
        return -1;
    const long want = sc->batch_max ? 0 : sc->batch; /* in flight on the target */
    /* a load given (a request rate or a concurrency): every layout that carries it costs
     * the same instance-hours, so the lowest latency wins (in a closed loop also the most
     * throughput, Little's law); and when none carries the rate, the most any sustains */
    const bool given_load = sc->request_rate > 0 || sc->concurrency > 0;
    double rate_max = 0;
    long rate_tp = 0, rate_dp = 0;
    for (long tp = init.chips; tp >= 1; tp--) {
        long dp = init.chips / tp, idle;
        if (!serving_tp_candidate(tp, init.chips))
            continue;
        while (want > 0 && dp > 1 && want % dp != 0)
            dp--; /* replicas that hold an equal share of the requests */
        idle = init.chips - tp * dp;
        s.dp = dp;
        s.tp = tp;
        s.chips = tp * dp;
        s.instances = init.instances;
        if (want > 0)
            s.batch = want / dp;
        /* a mixture of experts: the experts within each tensor-parallel group (ep 1, each
         * expert split over tp; or ep = tp, whole experts), or over the layout with the
         * attention data-parallel (ep = tp x dp); a dense model, none */
        long eps[3] = {sc->ep, 0, 0};
        int nep = 1;
        if (sc->ep <= 0 && sc->arch->experts > 0) {
            eps[0] = 1;
            if (tp > 1 && tp <= sc->arch->experts)
                eps[nep++] = tp;
            if (dp > 1 && tp * dp <= sc->arch->experts)
                eps[nep++] = tp * dp;
        }
        for (int ie = 0; ie < nep; ie++) {
            s.ep = eps[ie];
            q = init;
            q.chips = tp * dp;
            if (tb_model_predict_inference(m, &s, &q, err, errlen) != 0)
                continue; /* e.g. a group the layout cannot place */
            layouts++;
            if (dp > 1) { /* the target's requests in flight, all replicas together */
                size_t n = strlen(q.assumptions);
                snprintf(q.assumptions + n, sizeof q.assumptions - n,
                         "; %ld requests in flight on the target, %ld per replica x %ld",
                         q.batch * dp, q.batch, dp);
                q.batch *= dp;
            }
            q.chips = init.chips;
            q.output_tokens_per_s_per_chip = q.output_tokens_per_s / (double)init.chips;
            if (q.fits && !sc->batch_max &&
                ((sc->ttft_limit_ms > 0 && q.ttft_ms > sc->ttft_limit_ms) ||
                 (sc->tpot_limit_ms > 0 && q.tpot_ms > sc->tpot_limit_ms))) {
                q.fits = false;
                snprintf(q.why, sizeof q.why,
                         "no layout meets the latency limits (TTFT %g ms, TPOT %g ms) at batch %ld",
                         sc->ttft_limit_ms, sc->tpot_limit_ms, q.batch);
            }
            if (!q.fits && q.rate_max > rate_max) {
                rate_max = q.rate_max;
                rate_tp = tp;
                rate_dp = dp;
            }
            if (q.fits &&
                (!have || (given_load ? q.e2e_latency_ms < p->e2e_latency_ms * 0.999
                                      : q.output_tokens_per_s > p->output_tokens_per_s * 1.001))) {
                if (idle > 0) {
                    size_t n = strlen(q.assumptions);
                    snprintf(q.assumptions + n, sizeof q.assumptions - n, "; %ld of %ld chips idle",
                             idle, init.chips);
                }
                *p = q;
                have = true;
            } else if (!have && (!p->why[0] || (strstr(q.why, "latency limits") &&
                                                !strstr(p->why, "latency limits")))) {
                /* the first reason, or a layout that fits but is too slow: said over one
                 * that does not fit */
                snprintf(p->why, sizeof p->why, "%s", q.why);
            }
        }
    }
    p->layouts_evaluated = layouts;
    if (!have && rate_max > 0 && !strstr(p->why, "latency limits")) {
        p->rate_max = rate_max;
        snprintf(p->why, sizeof p->why,
                 "saturated: at most %.4g requests/s on any layout (tp=%ld dp=%ld sustains the "
                 "most; %.4g offered): the prefills, the decode steps or the KV cache cannot keep "
                 "up",
                 rate_max, rate_tp, rate_dp, sc->request_rate);
    }
    if (!have) {
        p->fits = false;
        if (!layouts && sc->ep > 0)
            return -1; /* the given ep fits no layout: its reason is in err */
        if (!p->why[0])
            return tb_err(err, errlen, "no serving layout of %ld chips is possible", p->chips);
    }
    return 0;
}
