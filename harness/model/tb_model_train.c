/* harness/model/tb_model_train.c: training and its layout search (tb_model_impl.h). */
#include "tb_model_impl.h"

#include "tb_flops.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- training ---- */

/* Activation recomputation: none, selective (the activations of the cheap element-wise
 * operations dropped and recomputed in the backward pass), full (each layer's forward
 * repeated from its input). */
static const char *const RC_NAME[RC_KINDS] = {"no", "selective", "full"};

struct layout {
    long tp, pp, dp, cp, mb;
    long ep; /* a mixture of experts' routed experts split over ep of the dp replicas
                (Megatron's expert parallelism: each holds E/ep experts, tensor-parallel
                as the rest; the other replicas' tokens dispatched to them); 1: none */
    long v;  /* virtual stages per device: interleaved 1F1B (Megatron), 1: plain 1F1B */
    int rc;  /* RC_NONE, RC_SELECTIVE, RC_FULL */
};

struct train_eval {
    bool fits;
    double step, mem, bubble;
    const char *bound;
};

/* Activation bytes one layer keeps per token for the backward pass (bf16, flash
 * attention, sequence parallel over tp): inputs of the two norms, their outputs (the
 * QKV and MLP inputs), Q, K and V, the attention output (the O projection's input),
 * gate, up and the SwiGLU output. Korthikanti et al. 2022 ('Reducing Activation
 * Recomputation in Large Transformer Models', arXiv 2205.05198) keep 34 h + 5 a s
 * bytes per token (GPT, with dropout); flash attention already drops their 5 a s
 * term (the softmax and its dropout) and recomputes it in its backward, which is
 * their selective recomputation. What selective recomputation drops beyond that here
 * is what is as cheap to redo: the norms' outputs and the SwiGLU output, recomputed
 * from the inputs kept (torchtitan's and Megatron-Core's selective policies keep the
 * matrix products' outputs and redo the element-wise operations). */
/* LoRA (frozen weights): a product's input is kept only for its weight gradient, so
 * the frozen MLP's inputs (the second norm's output, the SwiGLU output) are not kept;
 * the attention's projections keep theirs for their adapters (the first norm's output;
 * the attention output, kept anyway). Selective recomputation then has only the first
 * norm's output to drop, which leaves what it leaves in full training. */
static double act_bytes_per_token_layer(const struct tb_arch *a, int rc, bool lora)
{
    /* F: the FFN width a token computes (a mixture of experts: its k experts') */
    double kv = (double)a->kv_heads * a->head_dim, F = tb_arch_ffn_active(a);
    if (rc == RC_SELECTIVE)
        return 2.0 * (4.0 * a->hidden + 2.0 * kv + 2.0 * F);
    if (lora)
        return 2.0 * (5.0 * a->hidden + 2.0 * kv + 2.0 * F);
    return 2.0 * (6.0 * a->hidden + 2.0 * kv + 3.0 * F);
}

/* Bytes selective recomputation moves again per token and layer: the two RMSNorms
 * (read and write the hidden state each) and the SwiGLU (read gate and up, write); with
 * LoRA the first norm only. */
static double selective_bytes_per_token_layer(const struct tb_arch *a, bool lora)
{
    if (lora)
        return 2.0 * 2.0 * a->hidden;
    return 2.0 * (4.0 * a->hidden + 3.0 * tb_arch_ffn_active(a));
}

double tb_model_train_act_bytes(const struct tb_arch *a, int rc, bool lora, double M, long tp,
                                double layers, double inflight)
{
    if (rc == RC_FULL) /* each layer's input, and one layer's working set at a time */
        return M * a->hidden * 2.0 / (double)tp * layers * inflight +
               M * act_bytes_per_token_layer(a, RC_NONE, lora) / (double)tp;
    return M * act_bytes_per_token_layer(a, rc, lora) / (double)tp * layers * inflight;
}

/* Bytes the LoRA adapters' products move per token and layer, forward and backward:
 * each reads its projection's input and adds to its output (16-bit), the rank-r middle
 * negligible; the backward about twice the forward, as for the element-wise work. A
 * rank-16 product is bound by these bytes, not by its FLOPs. */
static double lora_bytes_per_token_layer(const struct tb_arch *a)
{
    double q = (double)a->heads * a->head_dim, kv = (double)a->kv_heads * a->head_dim;
    double fwd = 2.0 * ((double)a->hidden + (q + 2.0 * kv) + q + (double)a->hidden);
    return 3.0 * fwd;
}

static struct train_eval train_step(const struct dev *d, const struct tb_scenario *sc, double GB,
                                    const struct layout *l, double cap)
{
    const struct tb_arch *a = d->a;
    struct train_eval r = {false, 0, 0, 0, "compute"};
    const double T = (double)sc->seq_in, P = tb_arch_params_total(a);
    const double L = a->layers, C = a->hidden;
    const long t = l->tp, pp = l->pp, dp = l->dp, cp = l->cp, v = l->v;
    /* micro-batches per pipeline: the replicas split the batch, the busiest one sets
     * the step when dp does not divide it */
    const double m = ceil(GB / ((double)dp * l->mb));
    const double M = (double)l->mb * T / (double)cp; /* tokens per micro-batch and device */
    /* layers per device: v virtual stages of ceil(L / (pp v)) layers; the stages hold
     * whole layers, so the busiest device carries up to a layer more per stage */
    const double Lst = (double)v * ceil(L / (double)(pp * v));
    /* how much more than an even share the busiest device does: its replica's
     * micro-batches, its stage's layers */
    const double imbalance = m * (double)(dp * l->mb) / GB * Lst * (double)pp / L;
    /* micro-batches whose activations a device holds: 1F1B keeps up to pp in flight,
     * the interleaved schedule (1 + (pp - 1) / (pp v)) times as many (Narayanan et al.
     * 2021, 'Efficient Large-Scale Language Model Training on GPU Clusters') */
    const double inflight =
        fmin(m, (double)pp) * (v > 1 ? 1.0 + (double)(pp - 1) / (double)(pp * v) : 1.0);
    /* a device's parameters: its stage's share of the layers over tp; a mixture of
     * experts' routed experts further over ep (the same for a dense model, ep 1) */
    const double Pe = tb_arch_params_experts(a);
    double shard =
        (l->ep > 1 ? P - Pe + Pe / (double)l->ep : P) / (double)(t * pp) * Lst * (double)pp / L;
    /* LoRA: the adapters are what trains (their gradients, optimizer state and traffic);
     * the frozen weights only take part in the products */
    const bool lora = sc->lora_rank > 0;
    const double Pl = lora ? tb_arch_params_lora(a, sc->lora_rank) : 0;
    const double train_shard = lora ? Pl / (double)(t * pp) * Lst * (double)pp / L : shard;
    double mem, act, tcomp, ttp, tcp, tlayer, tpipe, tp2p, tdp, topt, nar;
    /* forward passes a micro-batch makes: 2 when full recomputation repeats it */
    const double fwd = l->rc == RC_FULL ? 2.0 : 1.0;

    /* memory per device: bf16 weights, fp32 gradients, fp32 master + Adam moments
     * sharded over the data- and context-parallel devices (ZeRO-1, Megatron's
     * distributed optimizer), activations of the micro-batches in flight, logits of
     * one micro-batch. LoRA: the frozen weights at the precision's bytes, the adapters'
     * state as full training's */
    if (lora)
        mem = shard * (d->lowp_frac * d->wbytes + (1.0 - d->lowp_frac) * 2.0) +
              train_shard * (2.0 + 4.0) + train_shard * 12.0 / (double)(dp * cp);
    else if (l->ep > 1) /* the experts' optimizer state over their dp x cp / ep replicas:
                           every parameter's state once over all devices, as without ep */
        mem = shard * (2.0 + 4.0) +
              P / (double)(t * pp) * Lst * (double)pp / L * 12.0 / (double)(dp * cp);
    else
        mem = shard * (2.0 + 4.0) + shard * 12.0 / (double)(dp * cp);
    act = tb_model_train_act_bytes(a, l->rc, lora, M, t, Lst, inflight);
    mem += act + M * a->vocab * 6.0 / (double)t;
    r.mem = mem;
    if (mem > cap)
        return r;
    r.fits = true;

    /* compute: the weights' products at the precision's peak, attention in 16-bit at
     * the bf16 peak (its backward at FlashAttention's five products, 2.5 forwards, not
     * the model FLOPs' two), element-wise work at memory speed; full recomputation repeats the
     * forward, selective the norms and the SwiGLU. All of it spread over every device,
     * at the precision's training efficiency of the kernels' speed, times the busiest
     * device's excess. LoRA: the frozen products' backward computes their input
     * gradients only (one forward's worth, not two); attention's backward is as in
     * training; the adapters' products (forward 2, backward 4 FLOPs per parameter and
     * token, recomputed with the forward) run in bf16, bound by the bytes they move */
    {
        double ndev = (double)(t * pp * dp * cp);
        double attn1 = tb_flops_attention(a, GB, T),
               attn = fwd * attn1 + tb_flops_attention_backward(a, GB, T);
        double gemm = ((lora ? 1.0 : 2.0) + fwd) * (tb_flops_forward(a, GB, T) - attn1);
        double elem = tb_bytes_train_elementwise(a, GB, T) * (2.0 + fwd) / 3.0;
        if (l->rc == RC_SELECTIVE)
            elem += selective_bytes_per_token_layer(a, lora) * L * GB * T;
        if (lora) {
            attn += (4.0 + 2.0 * fwd) * Pl * GB * T;
            elem += lora_bytes_per_token_layer(a) * (2.0 + fwd) / 3.0 * L * GB * T;
        }
        /* fp4: lowp_frac of the products at fp4, the rest at bf16 (the recipe's last layers) */
        double e16 = d->e->gemm_eff / d->gemm_eff * tb_model_gemm_eff(d, M, t);
        tcomp = (gemm * tb_model_head_pad(a, t) / ndev *
                     (d->lowp_frac / (d->peak * tb_model_gemm_eff(d, M, t)) +
                      (1.0 - d->lowp_frac) / (d->bf16_peak * e16)) +
                 attn / ndev / (d->bf16_peak * d->e->gemm_eff * M / (M + d->e->gemm_m_half)) +
                 elem / ndev / (d->hbm_bw * d->e->mem_eff)) /
                d->e->train_eff * imbalance;
    }
    /* tensor parallel: 2 all-reduces forward and 2 backward per layer and micro-batch
     * (2 more when the forward is recomputed), on the critical path but for the part
     * the stacks overlap with compute */
    nar = l->rc == RC_FULL ? 6.0 : 4.0;
    ttp = m * Lst * nar * tb_model_allreduce_s(d, M * C * 2.0, t, t) * (1.0 - d->e->tp_overlap);
    /* context parallel: each layer gathers the other cp - 1 devices' chunks of K and V
     * forward (an all-gather, the second half of an all-reduce of all cp chunks) and
     * reduce-scatters their gradients backward; overlapped with the attention as much
     * as the tensor-parallel traffic is with the products (ring attention) */
    tcp = cp > 1 ? m * Lst *
                       tb_model_allreduce_s(d, M * 2.0 * a->kv_heads * a->head_dim * 2.0 * cp, cp,
                                            t * cp) *
                       (1.0 - d->e->tp_overlap)
                 : 0;
    /* the fixed cost of a layer's kernels, per micro-batch on the device's layers: a
     * forward's is the prefill's (prefill_layer_us: the norms, rotary, residual adds and
     * casts the FLOP and byte counts leave out, each taking its minimum time however few
     * the tokens), and a training step runs the forward, the backward (its products
     * twice the forward's, its element-wise kernels likewise) and any recomputed
     * forward: 2 + fwd forwards' worth, as the products are counted. It is what a run
     * strong-scaled to a few thousand tokens per device per step is made of (MLPerf
     * Training's 512-GPU Llama 3.1 8B at 1,024 tokens per GPU) and a few percent of a
     * step of full micro-batches */
    tlayer = m * Lst * (2.0 + fwd) * d->e->prefill_layer_s;
    /* expert parallelism: each MoE layer dispatches a micro-batch's tokens (1/t of them
     * per device) to the devices of their k experts and combines the results, forward
     * (2 all-to-alls), backward (2) and again in a recomputed forward, over the ep
     * replicas (Megatron orders tp, cp, dp: ep members every t x cp devices) */
    if (l->ep > 1)
        tlayer += m * Lst / L * tb_arch_moe_layers(a) * (2.0 + 2.0 * fwd) *
                  tb_model_alltoall_s(d, M / (double)t * a->experts_active * C * 2.0, l->ep,
                                      t * cp * l->ep) *
                  (1.0 - d->e->tp_overlap);
    /* the pipeline bubble: pp - 1 micro-batch slots of a stage, shrunk v times by the
     * interleaved schedule (a device's v stages are v times shorter) */
    r.bubble = ((double)pp - 1.0) / (double)v / m;
    tpipe = (tcomp + ttp + tcp + tlayer) * (1.0 + r.bubble);
    /* point-to-point: each micro-batch's activations cross every stage boundary forward
     * and its gradients backward, each of the tp devices sending its 1/tp (Megatron's
     * scatter/gather of the pipeline's messages, Narayanan et al. 2021 section 4.1);
     * interleaving has v times as many boundaries */
    tp2p = pp > 1 ? (m * (double)v + (double)pp - 1.0) * 2.0 *
                        (d->e->collective_s +
                         M * C * 2.0 / (double)t / (t * pp <= d->per_node ? d->link_bw : d->net_bw))
                  : 0;
    /* data parallel, ZeRO-1: reduce-scatter bf16 gradients, all-gather bf16 weights,
     * over the data- and context-parallel devices (both hold a replica's gradients);
     * LoRA: the adapters' only. Megatron orders the ranks tp, cp, dp, pp (pp outermost),
     * so a stage's dp x cp group spreads over t x cp x dp consecutive devices, one
     * member every t */
    /* Overlap hides it only behind compute running at the same time: the gradients'
     * reduce-scatter behind the backward of the step's last micro-batch (the earlier
     * ones only accumulate; Megatron's overlap_grad_reduce starts the buckets as the last
     * backward makes them), the weights' all-gather behind the forward of the first
     * (overlap_param_gather). Each half hides dp_overlap of itself at most, and at most
     * that pass's time on the device: a step of one short micro-batch (a strong-scaled
     * run at a fraction of a sequence per device) pays the rest. A pipeline's warm-up
     * runs up to pp forwards before the first backward and its cool-down up to pp
     * backwards after the last forward, the stages' (and interleaved chunks') buckets
     * gathered and reduced in turn: min(m, pp) passes each */
    tdp = 0;
    if (dp * cp > 1) {
        double half = tb_model_allreduce_s(d, train_shard * 2.0, dp * cp, t * cp * dp) / 2.0;
        /* a forward's worth, times the passes beside each half */
        double pass = (tcomp + ttp + tcp + tlayer) / (m * (2.0 + fwd)) * fmin(m, (double)pp);
        /* the backward: its two forwards' worth and any recomputed forward */
        tdp = 2.0 * half - fmin(d->e->dp_overlap * half, (1.0 + fwd) * pass) -
              fmin(d->e->dp_overlap * half, pass);
    }
    /* optimizer: reads gradients and fp32 state of its shard, writes state and weights */
    topt = (train_shard * 4.0 + train_shard / (double)(dp * cp) * 24.0 + train_shard * 2.0) /
           (d->hbm_bw * d->e->mem_eff);
    r.step = tpipe + tp2p + tdp + topt;
    r.bound = (ttp + tcp + tdp + tp2p) > tcomp ? "communication" : "compute";
    return r;
}

/* The step after which NVIDIA's NVFP4 LoRA recipe trains in FP8 (HEALING_ITER). */
#define LORA_HEALING_STEP 350

/* The divisors of n, ascending, up to max and at most cap of them: the count. */
static int divisors(long n, long max, long *out, int cap)
{
    int k = 0;
    for (long x = 1; x <= n && x <= max && k < cap; x++)
        if (n % x == 0)
            out[k++] = x;
    return k;
}

/* MLPerf Training's evaluation (a scenario row of scenario "training" only: a team's
 * own job is timed without MLPerf's schedule): every `every` sequences, `seqs` sequences of the
 * validation set, none in the first `skip` intervals (the reference READMEs of
 * mlcommons/training, section 5 'Quality': small_llm_pretraining/nemo (llama31_8b) and
 * large_language_model_pretraining/nemo (llama31_405b), and the training rules'
 * 'Quality measure' table, mlcommons/training_policies training_rules.adoc). llama31_8b:
 * every 12288 sequences over 1024. llama31_405b since v5.1: every ceil(18432 / batch)
 * batches, skipping the first floor(0.0026 batch + 12) evaluations, over 5760 (v5.0
 * evaluated every 46080 from the start; the rules' 'Evaluation' note: the sparse
 * schedule cost 12-16% of a run; NVIDIA's v5.1 logs evaluate 4 times in P2048's 331776
 * sequences, from 276480). LoRA fine-tuning of Llama 2 70B (llama2_70b_lora; NVIDIA's
 * implementation README in mlcommons/training_results_v5.1, section 5 'Evaluation'):
 * every 384 sequences, as ceil(384 / batch) steps, skipping the first floor(0.125 batch +
 * 2) evaluations, over the 173 sequences of the validation subset. Other models: none. */
static void mlperf_eval(const struct tb_scenario *sc, const struct tb_arch *a, bool lora, double GB,
                        double *every, double *seqs, double *skip)
{
    *every = *seqs = *skip = 0;
    if (!sc->scenario || strcmp(sc->scenario, "training") != 0)
        return; /* a team's own job: its evaluations are its own, not MLPerf's */
    if (!lora && !strcmp(a->name, "llama-3.1-8b")) {
        *every = 12288;
        *seqs = 1024;
    } else if (!lora && !strcmp(a->name, "llama-3.1-405b")) {
        *every = ceil(18432.0 / GB) * GB;
        *seqs = 5760;
        *skip = floor(0.0026 * GB + 12.0);
    } else if (lora && !strcmp(a->name, "llama-2-70b")) {
        *every = ceil(384.0 / GB) * GB;
        *seqs = 173;
        *skip = floor(0.125 * GB + 2.0);
    }
}

void tb_model_price_training(const struct tb_model *m, const struct tb_scenario *sc,
                             struct tb_prediction *p, char *priced, size_t len)
{
    struct tb_price_choice pc;
    *priced = '\0';
    if (tb_pricing_target_price(m->pricing, sc->inst->instance, m->region, m->purchase, &pc,
                                p->price_why, sizeof p->price_why) != 0)
        return; /* the reason is in price_why */
    if (!pc.have) {
        snprintf(p->price_why, sizeof p->price_why, "%s", pc.why);
        return;
    }
    {
        /* Capacity Blocks are sold in whole days and paid up front: the days a job buys,
         * as trnbench compare and assess price them */
        struct tb_pricing_cblock cb;
        size_t n;
        p->usd_to_train =
            tb_pricing_job_usd(&pc, p->time_to_train_s / 3600.0, (double)p->instances, &cb);
        snprintf(priced, len, "; usd_to_train at %.4g USD/h (%s %s, as of %.60s, %.150s line %ld)",
                 pc.usd_per_hour, pc.region, pc.purchase, pc.as_of, m->pricing->prices_name,
                 pc.line);
        n = strlen(priced);
        if (!isnan(cb.days))
            snprintf(priced + n, len - n,
                     " as Capacity Blocks: %.0f days x %ld instance%s bought, %.0f%% used", cb.days,
                     p->instances, p->instances == 1 ? "" : "s", 100 * cb.used);
    }
}

int tb_model_predict_train(const struct tb_model *m, const struct tb_scenario *sc,
                           struct tb_prediction *p, char *err, size_t errlen)
{
    const struct tb_arch *a = sc->arch;
    const struct tb_model_eff *e;
    struct dev d;
    struct layout best = {0}, l;
    struct train_eval be = {false, 0, 0, 0, NULL};
    long chips = p->chips, k, devs, cp = 1;
    double GB, cap, tokens;
    bool given = sc->tp > 0 && sc->pp > 0 && sc->dp > 0;
    char first_why[256] = "";

    if (sc->seq_in < 2)
        return tb_err(err, errlen, "seq_in missing: the training sequence length is needed");
    if (sc->lora_rank < 0 || sc->lora_rank > a->hidden || sc->lora_rank > a->heads * a->head_dim)
        return tb_err(err, errlen, "lora_rank %ld: from 1 to %s's attention width", sc->lora_rank,
                      a->name);
    if (sc->ep > 1 && a->experts <= 0)
        return tb_err(err, errlen, "ep=%ld: %s is a dense model (no experts to split)", sc->ep,
                      a->name);
    if (sc->ep > a->experts && a->experts > 0)
        return tb_err(err, errlen, "ep=%ld: more than %s's %d experts", sc->ep, a->name,
                      a->experts);
    e = tb_model_eff_of(m, sc->inst->chip);
    if (given) {
        if (tb_model_layout_devices(sc, &devs, err, errlen) != 0)
            return -1;
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
    /* LoRA over a quantized checkpoint: every decoder layer's frozen weights quantized in
     * place, none kept in bf16 (MLPerf's llama2_70b_lora, NVIDIA's custom_callbacks.py
     * _pre_quantize_model: each te.Linear of every layer replaced by its NVFP4 copy,
     * first_last_layers_bf16 off), so all the products run at the precision */
    if (sc->lora_rank > 0)
        d.lowp_frac = 1;
    cap = d.hbm * d.e->hbm_usable;
    p->devices = devs;
    p->devices_per_chip = k;
    p->hbm_per_device_gib = d.hbm / 1073741824.0;

    /* The search: tp over the divisors of an instance's devices (up to 64 and the
     * heads; a tp that does not divide the heads pads them), cp over the divisors of
     * the rest that leave at least 2048 tokens per device (1 when the sequence is
     * shorter), pp over the divisors of what remains (any count: a stage holds
     * ceil(layers / pp) layers), dp the rest, any integer; then the interleaving v,
     * the micro-batch and the recomputation. A given tp, pp or dp is kept; a given
     * tp x pp x dp fixes cp too. */
    {
        long tps[64], cps[64], pps[256];
        int ntp, ncp, npp;
        if (given || sc->tp > 0) {
            tps[0] = sc->tp;
            ntp = 1;
        } else {
            ntp = divisors(d.per_node, a->heads < 64 ? a->heads : 64, tps, 64);
        }
        for (int i = 0; i < ntp; i++) {
            long tp = tps[i];
            if (devs % tp)
                continue;
            if (given) {
                cps[0] = cp;
                ncp = 1;
            } else {
                ncp = divisors(devs / tp, sc->seq_in >= 4096 ? sc->seq_in / 2048 : 1, cps, 64);
            }
            for (int j = 0; j < ncp; j++) {
                long c = cps[j];
                /* the sequence splits into 2 cp chunks, a device taking one from each end
                 * (causal load balancing) */
                if ((devs / tp) % c || (!given && c > 1 && sc->seq_in % (2 * c)))
                    continue;
                if (given || sc->pp > 0) {
                    pps[0] = sc->pp;
                    npp = 1;
                } else {
                    npp = divisors(devs / (tp * c), a->layers, pps, 256);
                }
                for (int k2 = 0; k2 < npp; k2++) {
                    long pp = pps[k2], dp;
                    if (pp > a->layers || devs % (tp * pp * c))
                        continue;
                    dp = devs / (tp * pp * c);
                    if (sc->dp > 0 && dp != sc->dp)
                        continue;
                    if (!given && sc->batch > 0 && dp > sc->batch)
                        continue; /* a replica without a sequence */
                    /* expert parallelism over the replicas: a given ep, or every divisor
                     * of dp up to the experts; none for a dense model */
                    long eps[16] = {1};
                    int nep = 1;
                    if (a->experts > 0 && sc->ep > 0) {
                        if (dp % sc->ep)
                            continue;
                        eps[0] = sc->ep;
                    } else if (a->experts > 0) {
                        nep = divisors(dp, a->experts, eps, 16);
                    }
                    for (long mb = 1; mb <= 8; mb *= 2) {
                        GB = sc->batch > 0 ? (double)sc->batch : (double)(dp * mb * 4 * pp);
                        if ((double)(dp * mb) > GB && !(given && mb == 1))
                            break; /* a given layout runs, its idle replicas counted */
                        for (long v = 1; v <= 8 && v * pp <= a->layers; v++) {
                            double nmb = ceil(GB / (double)(dp * mb));
                            if (v > 1 && (pp == 1 || nmb < (double)pp))
                                break;
                            for (int ie = 0; ie < nep * RC_KINDS; ie++) {
                                struct train_eval ev;
                                const int rc = ie % RC_KINDS;
                                l = (struct layout){tp, pp, dp, c, mb, eps[ie / RC_KINDS], v, rc};
                                ev = train_step(&d, sc, GB, &l, cap);
                                p->layouts_evaluated++;
                                if (!ev.fits) {
                                    if (!first_why[0])
                                        snprintf(first_why, sizeof first_why,
                                                 "tp=%ld pp=%ld dp=%ld cp=%ld mb=%ld needs %.1f "
                                                 "GiB per device",
                                                 tp, pp, dp, c, mb, ev.mem / 1073741824.0);
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
                    }
                }
            }
        }
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
    p->ep = best.ep;
    p->etp = best.tp;
    p->cp = best.cp;
    p->micro_batch = best.mb;
    p->recompute = best.rc == RC_FULL;
    p->recompute_kind = RC_NAME[best.rc];
    p->virtual_stages = best.v;
    p->bubble = be.bubble;
    p->mem_per_device_gib = be.mem / 1073741824.0;
    p->step_time_s = be.step;
    tokens = (double)p->batch * (double)sc->seq_in;
    p->train_tokens_per_s = tokens / be.step;
    p->train_tokens_per_s_per_chip = p->train_tokens_per_s / (double)chips;
    /* model FLOPs: training's 3 x forward; LoRA's forward, input gradients and
     * adapters (tb_flops.h) */
    double flops = sc->lora_rank > 0
                       ? tb_flops_train_lora(a, (double)p->batch, (double)sc->seq_in, sc->lora_rank)
                       : tb_flops_train(a, (double)p->batch, (double)sc->seq_in);
    p->mfu = flops / (be.step * (double)chips * d.chip_peak);
    char priced[400] = "", evals[300] = ""; /* usd_to_train's price; the evaluations */
    if (sc->train_tokens > 0) {
        double every, seqs, skip, n, fwd;
        /* MLPerf Training's time to train: the tokens to the target over the throughput,
         * plus the evaluations on the way, each a forward pass over the validation
         * sequences at the step's speed: the forward's share of the step's model FLOPs
         * per token (a third in training, about half in LoRA), the busiest replica's
         * share of the sequences (each replica takes ceil(seqs / dp) of them) */
        double steps = sc->train_tokens / tokens, heal = 0, step8 = be.step;
        mlperf_eval(sc, a, sc->lora_rank > 0, (double)p->batch, &every, &seqs, &skip);
        n = every > 0 ? fmax(0.0, floor(sc->train_tokens / (double)sc->seq_in / every) - skip) : 0;
        fwd = tb_flops_forward(a, (double)p->batch, (double)sc->seq_in) / flops;
        /* NVFP4 LoRA heals: NVIDIA's recipe for MLPerf's llama2_70b_lora (every fp4
         * config of mlcommons/training_results_v5.1: HEALING_ITER=350,
         * HEALING_PRECISION FP8_DS; custom_callbacks.py swaps the recipe and the FP8
         * weights in) runs the products in FP8 after step 350, the same layout */
        if (sc->lora_rank > 0 && !strcmp(d.format, "NVFP4") && steps > LORA_HEALING_STEP) {
            struct tb_scenario s8 = *sc;
            struct dev d8;
            s8.precision = "fp8";
            if (tb_model_dev_init(&d8, m, &s8, k, err, errlen) != 0)
                return -1;
            d8.lowp_frac = 1;
            step8 = train_step(&d8, &s8, (double)p->batch, &best, INFINITY).step;
            heal = steps - LORA_HEALING_STEP;
        }
        /* each evaluation at the step's speed where it falls (after healing, FP8's) */
        p->eval_s = 0;
        for (double i = 1; i <= n; i++)
            p->eval_s += ceil(seqs / (double)best.dp) * (double)best.dp * (double)sc->seq_in /
                         p->train_tokens_per_s * fwd *
                         ((skip + i) * every / (double)p->batch > LORA_HEALING_STEP && heal > 0
                              ? step8 / be.step
                              : 1.0);
        p->time_to_train_s = (steps - heal) * be.step + heal * step8 + p->eval_s;
        if (every > 0)
            snprintf(evals, sizeof evals,
                     "; time_to_train adds %.0f evaluations (MLPerf: every %.0f sequences%s, "
                     "%.0f sequences each, forward only) = %.4g s",
                     n, every, skip > 0 ? " after the first skipped" : "", seqs, p->eval_s);
        else
            snprintf(evals, sizeof evals, "; time_to_train without evaluations");
        if (heal > 0) {
            size_t used = strlen(evals);
            snprintf(evals + used, sizeof evals - used,
                     "; NVFP4 LoRA heals to FP8 after step %d: %.0f steps at %.4g s",
                     LORA_HEALING_STEP, heal, step8);
        }
        tb_model_price_training(m, sc, p, priced, sizeof priced);
    }
    p->bound = be.bound;
    char lora[360] = "";
    if (a->experts > 0)
        snprintf(lora, sizeof lora,
                 "; MoE: %d experts, %d active (%d shared), ep=%ld over the replicas, experts' "
                 "tp=%ld; FLOPs of the %.4g B active parameters, weights and optimizer state of "
                 "all %.4g B",
                 a->experts, a->experts_active, a->shared_experts, best.ep, best.tp,
                 tb_arch_params_active(a) / 1e9, tb_arch_params_total(a) / 1e9);
    if (sc->lora_rank > 0)
        snprintf(lora + strlen(lora), sizeof lora - strlen(lora),
                 "; LoRA rank %ld on QKV and O (%.4g M trained), frozen %s weights", sc->lora_rank,
                 tb_arch_params_lora(a, sc->lora_rank) / 1e6, d.format);
    snprintf(p->assumptions, sizeof p->assumptions,
             "tp=%ld pp=%ld dp=%ld cp=%ld (%s) v=%ld over %ld devices (%ld per chip), "
             "micro-batch %ld, global batch %ld, bubble %.1f%%, %s recomputation, ZeRO-1; "
             "gemm_eff %.2f x train_eff %.2f, dp overlap %.2f, a layer's fixed cost %.0f us a "
             "forward%s%s%s%s",
             best.tp, best.pp, best.dp, best.cp, given ? "given" : "searched", best.v, devs, k,
             best.mb, p->batch, 100.0 * be.bubble, RC_NAME[best.rc], d.gemm_eff, d.e->train_eff,
             d.e->dp_overlap, d.e->prefill_layer_s * 1e6,
             d.lowp_frac < 1 ? "; NVFP4 products but 15% in bf16, fp32 master weights and Adam"
                             : "",
             lora, evals, priced);
    return 0;
}
