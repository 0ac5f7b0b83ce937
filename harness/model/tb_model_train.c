/* harness/model/tb_model_train.c: training and its layout search (tb_model_impl.h). */
#include "tb_model_impl.h"

#include "tb_flops.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- training ---- */

struct layout {
    long tp, pp, dp, cp, mb;
    bool recompute;
};

struct train_eval {
    bool fits;
    double step, mem;
    const char *bound;
};

/* Activation bytes one layer keeps per token for the backward pass (bf16, flash
 * attention, sequence parallel over tp): inputs of the norms, QKV, attention output,
 * O projection, MLP input, gate, up and SwiGLU output. */
static double act_bytes_per_token_layer(const struct tb_arch *a)
{
    double kv = (double)a->kv_heads * a->head_dim;
    return 2.0 * (6.0 * a->hidden + 2.0 * kv + 3.0 * a->ffn);
}

static struct train_eval train_step(const struct dev *d, const struct tb_scenario *sc, double GB,
                                    const struct layout *l, double cap)
{
    const struct tb_arch *a = d->a;
    struct train_eval r = {false, 0, 0, "compute"};
    const double T = (double)sc->seq_in, P = tb_arch_params_total(a);
    const double L = a->layers, C = a->hidden;
    const long t = l->tp, pp = l->pp, dp = l->dp, cp = l->cp;
    const double m = GB / ((double)dp * l->mb);      /* micro-batches per pipeline */
    const double M = (double)l->mb * T / (double)cp; /* tokens per micro-batch and device */
    const double Lst = ceil(L / (double)pp);         /* layers per stage */
    double shard = P / (double)(t * pp);
    double mem, act, tcomp, ttp, tcp, tpipe, tp2p, tdp, topt, nar;

    /* memory per device: bf16 weights, fp32 gradients, fp32 master + Adam moments
     * sharded over dp (ZeRO-1), activations of the micro-batches in flight (1F1B keeps
     * up to pp), logits of one micro-batch */
    mem = shard * (2.0 + 4.0) + shard * 12.0 / (double)dp;
    if (l->recompute)
        act = M * C * 2.0 / (double)t * Lst * (double)pp +
              M * act_bytes_per_token_layer(a) / (double)t;
    else
        act = M * act_bytes_per_token_layer(a) / (double)t * Lst * (double)pp;
    mem += act + M * a->vocab * 6.0 / (double)t;
    r.mem = mem;
    if (mem > cap)
        return r;
    r.fits = true;

    /* compute: the weights' products at the precision's peak, attention in 16-bit at
     * the bf16 peak, element-wise work at memory speed; recomputation repeats the
     * forward. All of it spread over every device, at train_eff of the kernels' speed */
    {
        double fwd = l->recompute ? 2.0 : 1.0, ndev = (double)(t * pp * dp * cp);
        double attn = (2.0 + fwd) * tb_flops_attention(a, GB, T);
        double gemm = (2.0 + fwd) * tb_flops_forward(a, GB, T) - attn;
        double elem = tb_bytes_train_elementwise(a, GB, T) * (2.0 + fwd) / 3.0;
        /* fp4: lowp_frac of the products at fp4, the rest at bf16 (the recipe's last layers) */
        double e16 = d->e->gemm_eff / d->gemm_eff * tb_model_gemm_eff(d, M, t);
        tcomp = (gemm * tb_model_head_pad(a, t) / ndev *
                     (d->lowp_frac / (d->peak * tb_model_gemm_eff(d, M, t)) +
                      (1.0 - d->lowp_frac) / (d->bf16_peak * e16)) +
                 attn / ndev / (d->bf16_peak * d->e->gemm_eff * M / (M + d->e->gemm_m_half)) +
                 elem / ndev / (d->hbm_bw * d->e->mem_eff)) /
                d->e->train_eff;
    }
    /* tensor parallel: 2 all-reduces forward and 2 backward per layer and micro-batch
     * (2 more when the forward is recomputed), on the critical path but for the part
     * the stacks overlap with compute */
    nar = l->recompute ? 6.0 : 4.0;
    ttp = m * Lst * nar * tb_model_allreduce_s(d, M * C * 2.0, t, t) * (1.0 - d->e->tp_overlap);
    /* context parallel: each layer gathers the other devices' K and V forward and
     * reduces their gradients backward (half an all-reduce each way) */
    tcp = cp > 1
              ? m * Lst * 2.0 *
                    tb_model_allreduce_s(d, M * 2.0 * a->kv_heads * a->head_dim * 2.0, cp, t * cp) /
                    2.0
              : 0;
    tpipe = (tcomp + ttp + tcp) * (m + (double)pp - 1.0) / m;
    tp2p = pp > 1 ? (m + (double)pp - 1.0) * 2.0 *
                        (d->e->collective_s +
                         M * C * 2.0 / (t * pp <= d->per_node ? d->link_bw : d->net_bw))
                  : 0;
    /* data parallel, ZeRO-1: reduce-scatter bf16 gradients, all-gather bf16 weights */
    tdp = dp > 1 ? tb_model_allreduce_s(d, shard * 2.0, dp, t * pp * cp * dp) *
                       (1.0 - d->e->dp_overlap)
                 : 0;
    /* optimizer: reads gradients and fp32 state of its shard, writes state and weights */
    topt = (shard * 4.0 + shard / (double)dp * 24.0 + shard * 2.0) / (d->hbm_bw * d->e->mem_eff);
    r.step = tpipe + tp2p + tdp + topt;
    r.bound = (ttp + tcp + tdp + tp2p) > tcomp ? "communication" : "compute";
    return r;
}

int tb_model_predict_train(const struct tb_model *m, const struct tb_scenario *sc,
                           struct tb_prediction *p, char *err, size_t errlen)
{
    const struct tb_arch *a = sc->arch;
    const struct tb_model_eff *e;
    struct dev d;
    struct layout best = {0}, l;
    struct train_eval be = {false, 0, 0, NULL};
    long chips = p->chips, k, devs, cp = 1;
    double GB, cap, tokens;
    bool given = sc->tp > 0 && sc->pp > 0 && sc->dp > 0;
    char first_why[256] = "";

    if (sc->seq_in < 2)
        return tb_err(err, errlen, "seq_in missing: the training sequence length is needed");
    e = tb_model_eff_of(m, sc->inst->chip);
    if (given) {
        devs = sc->tp * sc->pp * sc->dp;
        if (devs < chips && chips % devs == 0) {
            /* the rest of the chips split the sequences: context parallelism */
            cp = chips / devs;
            devs = chips;
        } else if (devs % chips) {
            return tb_err(err, errlen, "tp x pp x dp = %ld does not divide over %ld chips", devs,
                          chips);
        }
        k = devs / chips;
    } else {
        /* Neuron stacks lay out over logical NeuronCores: 2 per Trainium1/Inferentia2
         * chip, 4 per Trainium2/3 chip at LNC=2 */
        const struct tb_chip *c = tb_pricing_chip(m->pricing, sc->inst->chip);
        k = c && e && strncmp(e->family, "neuron", 6) == 0 ? (c->cores >= 8 ? 4 : 2) : 1;
        devs = chips * k;
    }
    if (k != 1 && k != 2 && k != 4 && k != 8)
        return tb_err(err, errlen, "tp x pp x dp over %ld chips gives %ld devices per chip", chips,
                      k);
    if (tb_model_dev_init(&d, m, sc, k, err, errlen) != 0)
        return -1;
    if (!strcmp(d.format, "MXFP4"))
        return tb_err(err, errlen,
                      "training in MXFP4 is not modeled: the published fp4 training recipe is "
                      "NVIDIA's NVFP4 (arXiv 2509.25149); train in fp8 or bf16");
    cap = d.hbm * d.e->hbm_usable;
    p->devices = devs;
    p->devices_per_chip = k;
    p->hbm_per_device_gib = d.hbm / 1073741824.0;

    for (long tp = 1; tp <= (given ? sc->tp : d.per_node); tp *= 2) {
        if (given)
            tp = sc->tp;
        else if (sc->tp > 0 && tp != sc->tp)
            continue;
        if (!given && a->heads % tp)
            continue;
        for (long pp = 1; pp <= (given ? sc->pp : 64); pp *= 2) {
            long dp;
            if (given)
                pp = sc->pp;
            else if (sc->pp > 0 && pp != sc->pp)
                continue;
            if (pp > a->layers || devs % (tp * pp * cp))
                continue;
            dp = devs / (tp * pp * cp);
            if (sc->dp > 0 && dp != sc->dp)
                continue;
            for (long mb = 1; mb <= 8; mb *= 2) {
                GB = sc->batch > 0 ? (double)sc->batch : (double)(dp * mb * 4 * pp);
                if (fmod(GB, (double)(dp * mb)) != 0)
                    continue;
                for (int rc = 0; rc < 2; rc++) {
                    struct train_eval ev;
                    l = (struct layout){tp, pp, dp, cp, mb, rc == 1};
                    ev = train_step(&d, sc, GB, &l, cap);
                    p->layouts_evaluated++;
                    if (!ev.fits) {
                        if (!first_why[0])
                            snprintf(first_why, sizeof first_why,
                                     "tp=%ld pp=%ld dp=%ld mb=%ld needs %.1f GiB per device", tp,
                                     pp, dp, mb, ev.mem / 1073741824.0);
                        continue;
                    }
                    /* throughput per sequence: compare step time per sequence */
                    if (!be.fits || ev.step / GB < be.step / (double)p->batch) {
                        be = ev;
                        best = l;
                        p->batch = (long)GB;
                    }
                }
            }
            if (given)
                break;
        }
        if (given)
            break;
    }
    if (!be.fits) {
        p->fits = false;
        snprintf(p->why, sizeof p->why,
                 "does not fit: no layout of %ld devices (%.1f GiB usable each) holds the model "
                 "state and activations%s%s",
                 devs, cap / 1073741824.0, first_why[0] ? "; e.g. " : "", first_why);
        return 0;
    }
    p->fits = true;
    p->tp = best.tp;
    p->pp = best.pp;
    p->dp = best.dp;
    p->cp = best.cp;
    p->micro_batch = best.mb;
    p->recompute = best.recompute;
    p->mem_per_device_gib = be.mem / 1073741824.0;
    p->step_time_s = be.step;
    tokens = (double)p->batch * (double)sc->seq_in;
    p->train_tokens_per_s = tokens / be.step;
    p->train_tokens_per_s_per_chip = p->train_tokens_per_s / (double)chips;
    p->mfu = tb_flops_train(a, (double)p->batch, (double)sc->seq_in) /
             (be.step * (double)chips * d.chip_peak);
    char priced[400] = ""; /* the price usd_to_train used, for the assumptions */
    if (sc->train_tokens > 0) {
        struct tb_price_choice pc;
        p->time_to_train_s = sc->train_tokens / p->train_tokens_per_s;
        if (tb_pricing_target_price(m->pricing, sc->inst->instance, m->region, m->purchase, &pc,
                                    p->price_why, sizeof p->price_why) != 0)
            ; /* the reason is in price_why */
        else if (!pc.have)
            snprintf(p->price_why, sizeof p->price_why, "%s", pc.why);
        else {
            p->usd_to_train = p->time_to_train_s / 3600.0 * pc.usd_per_hour * (double)p->instances;
            snprintf(priced, sizeof priced,
                     "; usd_to_train at %.4g USD/h (%s %s, as of %.60s, %.150s line %ld)",
                     pc.usd_per_hour, pc.region, pc.purchase, pc.as_of, m->pricing->prices_name,
                     pc.line);
        }
    }
    p->bound = be.bound;
    snprintf(p->assumptions, sizeof p->assumptions,
             "tp=%ld pp=%ld dp=%ld cp=%ld (%s) over %ld devices (%ld per chip), micro-batch %ld, "
             "global batch %ld, %s recomputation, ZeRO-1; gemm_eff %.2f x train_eff %.2f, dp "
             "overlap %.2f%s%s",
             best.tp, best.pp, best.dp, best.cp, given ? "given" : "searched", devs, k, best.mb,
             p->batch, best.recompute ? "full" : "no", d.gemm_eff, d.e->train_eff, d.e->dp_overlap,
             d.lowp_frac < 1 ? "; NVFP4 products but 15% in bf16, fp32 master weights and Adam"
                             : "",
             priced);
    return 0;
}
