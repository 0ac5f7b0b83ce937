/*
 * tests/unit/model.c: the performance model (harness/tb_model.h) on the repository's
 * catalogue: predictions respect the rooflines they are built from (a decode step is
 * no faster than reading the weights at the HBM's peak, a long prefill no faster than
 * its FLOPs at the chip's peak), move the right way when the hardware or the load
 * changes, refuse what does not fit, keep the throughput-maximising load inside memory
 * and latency limits, honour a given training layout and search one when none is given.
 */
#include "tb_arch.h"
#include "tb_darch.h"
#include "tb_flops.h"
#include "tb_model.h"
#include "tb_model_impl.h"
#include "tb_pricing.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct tb_pricing pr;
static struct tb_model model;

static struct tb_arch load_arch(const char *name)
{
    struct tb_arch a;
    char err[512];
    if (tb_arch_find(&a, name, err, sizeof err) != 0)
        bail("%s", err);
    return a;
}

static struct tb_scenario scen(const struct tb_arch *a, const char *target, enum tb_phase ph,
                               const char *prec, long chips, long seq_in, long seq_out, long batch)
{
    struct tb_scenario s;
    memset(&s, 0, sizeof s);
    s.arch = a;
    s.inst = tb_pricing_instance(&pr, target);
    if (!s.inst)
        bail("no instance %s", target);
    s.phase = ph;
    s.precision = prec;
    s.chips = chips;
    s.seq_in = seq_in;
    s.seq_out = seq_out;
    s.batch = batch;
    return s;
}

static struct tb_prediction predict(const struct tb_scenario *s)
{
    struct tb_prediction p;
    char err[512] = "";
    if (tb_model_predict(&model, s, &p, err, sizeof err) != 0)
        bail("prediction refused: %s", err);
    return p;
}

int main(void)
{
    struct tb_arch a8 = load_arch("llama-3.1-8b"), a70 = load_arch("llama-3.1-70b");
    struct tb_arch a405 = load_arch("llama-3.1-405b");
    const struct tb_chip *h100;
    struct tb_scenario s;
    struct tb_prediction p, q;
    char err[512];
    char *dir = test_src_path("pricing");

    plan(43 + 27 + 22);
    if (tb_pricing_load(&pr, dir, err, sizeof err) != 0 ||
        tb_model_load(&model, &pr, dir, err, sizeof err) != 0)
        bail("%s", err);
    h100 = tb_pricing_chip(&pr, "h100-sxm");
    OK(h100 != NULL && tb_model_eff_of(&model, "h100-sxm") != NULL,
       "catalogue and efficiency load");

    /* ---- decode: no faster than the weights at the HBM's peak ---- */
    s = scen(&a8, "p5.48xlarge", TB_PHASE_DECODE, "bf16", 1, 128, 128, 1);
    p = predict(&s);
    {
        double floor_ms = tb_arch_params_matmul(&a8) * 2.0 / (h100->hbm_tbps * 1e12) * 1e3;
        OK(p.fits, "8B bf16 on one H100 fits");
        OK(p.tpot_ms > floor_ms, "TPOT %.2f ms is above the bandwidth floor %.2f ms", p.tpot_ms,
           floor_ms);
        OK(p.tpot_ms < 1.6 * floor_ms, "and within 1.6x of it (batch 1 is memory-bound)");
        IS_STRING("memory", p.bound, "batch-1 decode is memory-bound");
    }
    /* more chips: faster tokens */
    s.chips = 8;
    q = predict(&s);
    OK(q.tpot_ms < p.tpot_ms, "tp=8 TPOT %.2f ms below tp=1 %.2f ms", q.tpot_ms, p.tpot_ms);
    IS_INT(8, q.tp, "tp defaults to the chips of the run");

    /* ---- prefill: a long prompt is compute-bound, above its FLOPs at peak ---- */
    s = scen(&a70, "p5.48xlarge", TB_PHASE_PREFILL, "bf16", 8, 8192, 1, 1);
    p = predict(&s);
    {
        double floor_ms =
            tb_flops_prefill(&a70, 1, 8192) / (8 * h100->bf16_dense_tflops * 1e12) * 1e3;
        OK(p.ttft_ms > floor_ms && p.ttft_ms < 2.5 * floor_ms,
           "70B 8k prefill TTFT %.1f ms between its compute floor %.1f ms and 2.5x", p.ttft_ms,
           floor_ms);
        IS_STRING("compute", p.bound, "a long prefill is compute-bound");
    }
    s.seq_in = 2048;
    q = predict(&s);
    OK(q.ttft_ms < p.ttft_ms, "a shorter prompt comes first sooner");

    /* ---- prefill's fixed cost: a 16-token prompt on one H100 (no collectives) takes
     * the layers' prefill floor (prefill_layer_us, not decode's layer_us) plus the
     * larger of its FLOPs at the GEMM efficiency of 16 rows and its bytes (weights and
     * 16 tokens of KV) at the streaming bandwidth ---- */
    {
        const struct tb_model_eff *eh = tb_model_eff_of(&model, "h100-sxm");
        double eff = eh->gemm_eff * 16.0 / (16.0 + eh->gemm_m_half) * (double)a8.hidden /
                     ((double)a8.hidden + eh->gemm_n_half);
        double comp_s = tb_flops_prefill(&a8, 1, 16) / (h100->bf16_dense_tflops * 1e12 * eff);
        double mem_s = (tb_arch_params_matmul(&a8) * 2.0 + 16.0 * tb_bytes_kv_per_token(&a8, 2)) /
                       (h100->hbm_tbps * 1e12 * eh->mem_eff);
        double fixed_s = a8.layers * eh->prefill_layer_s;
        double want_ms = (fmax(comp_s, mem_s) + fixed_s) * 1e3;
        s = scen(&a8, "p5.48xlarge", TB_PHASE_PREFILL, "bf16", 1, 16, 1, 1);
        p = predict(&s);
        IS_REL(want_ms, p.ttft_ms, 1e-9,
               "8B, 16-token prompt on one H100: TTFT %.3f ms = %d layers x %.0f us fixed + "
               "max(compute %.3f, memory %.3f) ms",
               p.ttft_ms, (int)a8.layers, eh->prefill_layer_s * 1e6, comp_s * 1e3, mem_s * 1e3);
        OK(eh->prefill_layer_s > eh->layer_s,
           "a GPU prompt's forward costs more per layer (%.0f us) than a decode step's graph "
           "replay (%.0f us)",
           eh->prefill_layer_s * 1e6, eh->layer_s * 1e6);
        /* the published short prompt (reports/validation P196: TensorRT-LLM's first-token
         * latency of 70B fp8 on 4 H100 at 128 tokens, 26 ms): within 20% with the fixed
         * cost, and more than 2x too fast without it (what issue 18 found) */
        s = scen(&a70, "p5.48xlarge", TB_PHASE_PREFILL, "fp8", 4, 128, 1, 1);
        q = predict(&s);
        OK(fabs(q.ttft_ms / 26.0 - 1) < 0.2 &&
               (q.ttft_ms - a70.layers * eh->prefill_layer_s * 1e3) < 26.0 / 2,
           "70B fp8 tp=4, 128 tokens: %.1f ms (published 26), %.1f ms without the fixed cost",
           q.ttft_ms, q.ttft_ms - a70.layers * eh->prefill_layer_s * 1e3);
        /* Neuron runs the prompt's forward as one compiled graph: its prefill floor per
         * layer is its decode floor */
        IS_REL(tb_model_eff_of(&model, "trainium1")->layer_s,
               tb_model_eff_of(&model, "trainium1")->prefill_layer_s, 1e-12,
               "Trainium1's prefill floor per layer is its decode floor (one compiled graph)");
        /* and pads a prompt to its smallest context-encoding bucket: 16 tokens cost what
         * 128 do; 256 cost more */
        s = scen(&a70, "trn1.32xlarge", TB_PHASE_PREFILL, "bf16", 16, 16, 1, 1);
        p = predict(&s);
        s.seq_in = 128;
        q = predict(&s);
        IS_REL(q.ttft_ms, p.ttft_ms, 1e-12,
               "70B on Trainium1: a 16-token prompt runs the 128-token bucket (%.1f ms)",
               p.ttft_ms);
        s.seq_in = 256;
        OK(predict(&s).ttft_ms > 1.2 * q.ttft_ms, "and a 256-token prompt takes longer");
    }

    /* ---- precision: fp8 serves more than bf16 ---- */
    s = scen(&a70, "p5.48xlarge", TB_PHASE_SERVE, "bf16", 8, 2048, 512, 0);
    s.batch_max = true;
    p = predict(&s);
    s.precision = "fp8";
    q = predict(&s);
    OK(p.fits && q.fits, "70B serves on 8 H100 in bf16 and fp8");
    OK(q.output_tokens_per_s > p.output_tokens_per_s, "fp8 %.0f tokens/s above bf16 %.0f",
       q.output_tokens_per_s, p.output_tokens_per_s);
    OK(p.mem_per_device_gib <= p.hbm_per_device_gib * 0.9 + 1e-9,
       "the throughput-maximising load stays in memory (%.1f of %.1f GiB)", p.mem_per_device_gib,
       p.hbm_per_device_gib);
    OK(p.batch > 1, "and runs more than one request (%ld)", p.batch);
    IS_REL(p.output_tokens_per_s / 8.0, p.output_tokens_per_s_per_chip, 1e-12,
           "per-chip throughput is the total over the chips");

    /* latency limits bound the load */
    s.precision = "bf16";
    s.tpot_limit_ms = 30;
    q = predict(&s);
    OK(q.fits && q.tpot_ms <= 30, "a 30 ms TPOT limit is met (%.1f ms at batch %ld)", q.tpot_ms,
       q.batch);
    OK(q.batch < p.batch, "with a smaller load than without it (%ld < %ld)", q.batch, p.batch);
    s.tpot_limit_ms = 0.001;
    q = predict(&s);
    OK(!q.fits && strstr(q.why, "latency limits"), "an impossible limit is said so: %s", q.why);

    /* ---- what does not fit is not predicted ---- */
    s = scen(&a405, "p5.48xlarge", TB_PHASE_DECODE, "bf16", 1, 128, 128, 1);
    p = predict(&s);
    OK(!p.fits, "405B bf16 does not fit on one H100");
    OK(strstr(p.why, "does not fit") != NULL, "and says so: %s", p.why);
    OK(isnan(tb_prediction_metric(&p, "tpot_ms")), "with no value");

    /* ---- Neuron: tp over NeuronCores ---- */
    s = scen(&a70, "trn1.32xlarge", TB_PHASE_DECODE, "bf16", 16, 128, 128, 1);
    s.tp = 32;
    p = predict(&s);
    IS_INT(2, p.devices_per_chip, "tp=32 on 16 Trainium1 chips: 2 NeuronCores per chip");
    OK(p.fits && p.tpot_ms > 0, "70B decodes on trn1.32xlarge (%.1f ms)", p.tpot_ms);
    s.tp = 24;
    OK(tb_model_predict(&model, &s, &p, err, sizeof err) == -1, "tp=24 over 16 chips is refused");

    /* ---- training: a given layout is honoured, none is searched ---- */
    s = scen(&a70, "p5.48xlarge", TB_PHASE_TRAIN, "bf16", 64, 8192, 0, 256);
    s.tp = 4;
    s.pp = 8;
    s.dp = 2;
    p = predict(&s);
    OK(p.fits && p.tp == 4 && p.pp == 8 && p.dp == 2, "the given layout is used");
    OK(p.mfu > 0.2 && p.mfu < 0.8, "MFU %.2f is plausible", p.mfu);
    IS_REL(p.train_tokens_per_s, 256.0 * 8192 / p.step_time_s, 1e-9,
           "tokens/s = batch x sequence / step time");
    s.train_tokens = 1e12;
    p = predict(&s);
    IS_REL(1e12 / p.train_tokens_per_s, p.time_to_train_s, 1e-12, "time to train 1T tokens");
    {
        struct tb_price_choice pc;
        if (tb_pricing_target_price(&pr, "p5.48xlarge", NULL, NULL, &pc, err, sizeof err) != 0 ||
            !pc.have)
            bail("no p5.48xlarge price: %s", err);
        IS_REL(p.time_to_train_s / 3600 * pc.usd_per_hour * 8, p.usd_to_train, 1e-12,
               "its cost: hours x the 8 instances' on-demand price");
    }
    s.train_tokens = 0;
    s.tp = s.pp = s.dp = 0;
    q = predict(&s);
    OK(q.fits && q.tp * q.pp * q.dp * q.cp == 64, "a searched layout covers the 64 chips");
    OK(q.step_time_s <= p.step_time_s * 1.0000001, "and is no slower than the given one");
    OK(q.layouts_evaluated > 10, "after looking at %ld layouts", q.layouts_evaluated);

    s = scen(&a405, "trn2.48xlarge", TB_PHASE_TRAIN, "bf16", 1024, 8192, 0, 1024);
    s.instances = 64;
    p = predict(&s);
    OK(p.fits && p.tp * p.pp * p.dp * p.cp == p.devices,
       "405B on 1024 Trainium2: layout %ld x %ld x %ld", p.tp, p.pp, p.dp);
    IS_INT(4096, p.devices, "over 4096 logical NeuronCores");
    s.chips = 1;
    s.instances = 1;
    s.batch = 8;
    p = predict(&s);
    OK(!p.fits && strstr(p.why, "does not fit"), "405B training on one chip does not fit: %.80s",
       p.why);

    /* ---- training layouts at scale ---- */
    /* Llama 3 405B's pre-training layout (arXiv 2407.21783 Table 4: 8192 H100, tp 8, pp
     * 16, dp 64, 2048 sequences of 8192): interleaving shrinks the bubble v times, the
     * activations that do not fit without recomputation fit with selective */
    s = scen(&a405, "p5.48xlarge", TB_PHASE_TRAIN, "bf16", 8192, 8192, 0, 2048);
    s.tp = 8;
    s.pp = 16;
    s.dp = 64;
    p = predict(&s);
    OK(p.fits && p.tp == 8 && p.pp == 16 && p.dp == 64 && p.cp == 1,
       "405B on 8192 H100: the given layout is kept");
    OK(p.virtual_stages > 1, "with interleaved stages (v=%ld)", p.virtual_stages);
    IS_REL(p.bubble, 15.0 / (32.0 * (double)p.virtual_stages), 1e-12,
           "its bubble is (pp - 1) / (v x 32 micro-batches): %.3f", p.bubble);
    OK(!strcmp(p.recompute_kind, "selective") && !p.recompute,
       "selective recomputation, not full (%s)", p.recompute_kind);
    OK(fabs(p.mfu / 0.43 - 1) < 0.15, "MFU %.3f within 15%% of the paper's 0.43", p.mfu);
    {
        /* one stage of that layout: 8 layers, 16 micro-batches of 8192 tokens in flight */
        double none = tb_model_train_act_bytes(&a405, RC_NONE, 8192, 8, 8, 16);
        double sel = tb_model_train_act_bytes(&a405, RC_SELECTIVE, 8192, 8, 8, 16);
        double full = tb_model_train_act_bytes(&a405, RC_FULL, 8192, 8, 8, 16);
        OK(full < sel && sel < none, "activations: full %.1f < selective %.1f < none %.1f GiB",
           full / 1073741824.0, sel / 1073741824.0, none / 1073741824.0);
        IS_REL(none, 8192.0 * 2 * (6 * 16384 + 2 * 1024 + 3 * 53248) / 8 * 8 * 16, 1e-12,
               "none: 2 (6 h + 2 kv + 3 ffn) bytes per token and layer, over tp");
        /* interleaved: (1 + (pp - 1) / (pp v)) times the micro-batches in flight */
        double held = tb_model_train_act_bytes(&a405, RC_SELECTIVE, 8192, 8, 8,
                                               16 * (1 + 15.0 / (16.0 * p.virtual_stages)));
        IS_REL(p.mem_per_device_gib * 1073741824.0 - held,
               405.0e9 / 128 * 128 / 126 * (6 + 12.0 / 64) + 1024 * 128256 * 6.0, 0.01,
               "the device holds its weights' state, selective activations and logits");
    }
    s.tp = s.pp = s.dp = 0;
    q = predict(&s);
    OK(q.fits && q.step_time_s <= p.step_time_s, "the searched layout is no slower");
    OK(fabs(q.mfu / 0.43 - 1) < 0.2,
       "searched: MFU %.3f within 20%% of 0.43 (tp %ld pp %ld cp %ld)", q.mfu, q.tp, q.pp, q.cp);
    OK(q.layouts_evaluated > 1000 && q.layouts_evaluated < 20000,
       "the search stays bounded: %ld layouts", q.layouts_evaluated);
    /* the long-context stage: 131072 tokens, 128 sequences on 16384 H100: context
     * parallelism wins (the paper ran cp 16) */
    s = scen(&a405, "p5.48xlarge", TB_PHASE_TRAIN, "bf16", 16384, 131072, 0, 128);
    p = predict(&s);
    OK(p.fits && p.cp >= 8, "131072-token sequences are split: cp %ld (tp %ld pp %ld dp %ld)", p.cp,
       p.tp, p.pp, p.dp);
    s.seq_in = 8192;
    s.batch = 2048;
    q = predict(&s);
    OK(q.fits && q.cp < p.cp, "8192-token ones less (cp %ld)", q.cp);

    /* chip counts that are no power of two: an NVL72, a 144-chip Trainium3 UltraServer,
     * 3 and 12 p5 instances */
    s = scen(&a70, "u-p6e-gb200x72", TB_PHASE_TRAIN, "bf16", 72, 8192, 0, 1024);
    p = predict(&s);
    OK(p.fits && p.tp * p.pp * p.dp * p.cp == 72, "70B on 72 GB200: %ld x %ld x %ld x cp %ld", p.tp,
       p.pp, p.dp, p.cp);
    s = scen(&a70, "trn3-ultraserver-gen2", TB_PHASE_TRAIN, "bf16", 144, 8192, 0, 1024);
    p = predict(&s);
    OK(p.fits && p.tp * p.pp * p.dp * p.cp == 576,
       "70B on 144 Trainium3 (576 cores): %ld x %ld x %ld x cp %ld", p.tp, p.pp, p.dp, p.cp);
    s = scen(&a70, "p5.48xlarge", TB_PHASE_TRAIN, "bf16", 24, 8192, 0, 96);
    p = predict(&s);
    OK(p.fits && p.tp * p.pp * p.dp * p.cp == 24, "70B on 24 H100: %ld x %ld x %ld x cp %ld", p.tp,
       p.pp, p.dp, p.cp);
    s = scen(&a8, "p5.48xlarge", TB_PHASE_TRAIN, "bf16", 96, 8192, 0, 1000);
    p = predict(&s);
    OK(p.fits && p.tp * p.pp * p.dp * p.cp == 96 && p.batch == 1000,
       "8B on 96 H100 with 1000 sequences (dp %ld need not divide them)", p.dp);
    /* a given layout with 9 stages (NeMo's 405B recipe: tp 8 pp 9, cp 2 over 576) */
    s = scen(&a405, "p5.48xlarge", TB_PHASE_TRAIN, "bf16", 576, 8192, 0, 252);
    s.tp = 8;
    s.pp = 9;
    s.dp = 4;
    p = predict(&s);
    OK(p.fits && p.pp == 9 && p.cp == 2 && p.virtual_stages == 7,
       "tp 8 pp 9 dp 4 over 576 H100: cp 2, v %ld (126 layers = 9 x 7 x 2)", p.virtual_stages);

    /* a given layout with more replicas than sequences still runs, the idle ones counted:
     * 8 replicas, 4 sequences take as long as 8 */
    s = scen(&a8, "p5.48xlarge", TB_PHASE_TRAIN, "bf16", 8, 8192, 0, 4);
    s.tp = s.pp = 1;
    s.dp = 8;
    p = predict(&s);
    s.batch = 8;
    q = predict(&s);
    OK(p.fits && p.dp == 8 && p.batch == 4 && p.step_time_s >= q.step_time_s * 0.99,
       "dp 8 over 4 sequences: %.3f s, as long as 8 sequences (%.3f s)", p.step_time_s,
       q.step_time_s);

    /* MLPerf's time to train: the tokens over the throughput plus the evaluations, every
     * 12288 sequences 1024 sequences forward (llama31_8b) */
    s = scen(&a8, "p5.48xlarge", TB_PHASE_TRAIN, "bf16", 64, 8192, 0, 1024);
    s.train_tokens = 12288.0 * 8192 * 10;
    p = predict(&s);
    IS_REL(p.eval_s, 10 * 1024.0 * 8192 / p.train_tokens_per_s / 3, 1e-12,
           "10 evaluations of 1024 sequences at a third of a training step's time per token");
    IS_REL(p.time_to_train_s, s.train_tokens / p.train_tokens_per_s + p.eval_s, 1e-12,
           "time to train = tokens / throughput + evaluations");
    OK(strstr(p.assumptions, "10 evaluations (MLPerf: every 12288 sequences"),
       "the assumptions say so: %.60s", strstr(p.assumptions, "time_to_train"));

    /* ---- diffusion ---- */
    {
        struct tb_darch sdxl, flux;
        if (tb_darch_find(&sdxl, "sdxl", err, sizeof err) != 0 ||
            tb_darch_find(&flux, "flux.1-dev", err, sizeof err) != 0)
            bail("%s", err);
        memset(&s, 0, sizeof s);
        s.darch = &sdxl;
        s.inst = tb_pricing_instance(&pr, "p5.48xlarge");
        s.phase = TB_PHASE_DENOISE;
        s.precision = "bf16";
        s.chips = 1;
        s.batch = 1;
        s.steps = 50;
        s.resolution = 1024;
        p = predict(&s);
        {
            double floor_s = tb_dflops_image(&sdxl, 1, 1024, 50) / (h100->bf16_dense_tflops * 1e12);
            OK(p.fits && p.s_per_image > floor_s && p.s_per_image < 3 * floor_s,
               "SDXL 50 steps with CFG on one H100: %.2f s per image, compute floor %.2f s",
               p.s_per_image, floor_s);
        }
        s.steps = 25;
        q = predict(&s);
        OK(p.s_per_image / q.s_per_image > 1.8 && p.s_per_image / q.s_per_image <= 2.0,
           "half the steps, about half the time (%.2f s)", q.s_per_image);
        s.steps = 50;
        s.batch = 0;
        s.batch_max = true;
        q = predict(&s);
        OK(q.fits && q.images_per_s >= p.images_per_s, "batching images: %.2f images/s >= %.2f",
           q.images_per_s, p.images_per_s);
        s.darch = &flux;
        s.batch_max = false;
        s.batch = 1;
        s.steps = 28;
        p = predict(&s);
        {
            double floor_s = tb_dflops_image(&flux, 1, 1024, 28) / (h100->bf16_dense_tflops * 1e12);
            OK(p.fits && p.s_per_image > floor_s && p.s_per_image < 3 * floor_s,
               "FLUX.1-dev 28 steps (no CFG) on one H100: %.2f s, floor %.2f s", p.s_per_image,
               floor_s);
        }
        s.inst = tb_pricing_instance(&pr, "inf2.xlarge");
        p = predict(&s);
        OK(!p.fits && strstr(p.why, "does not fit"),
           "FLUX.1-dev does not fit one Inferentia2: %.60s", p.why);
        /* Neuron SDXL over a chip's two NeuronCores: the CFG halves side by side (the
         * published run: 12.05 s per image, reports/validation) */
        s.darch = &sdxl;
        s.steps = 50;
        s.dp = 2;
        p = predict(&s);
        OK(p.fits && fabs(p.s_per_image - 12.05) < 0.25 * 12.05,
           "SDXL, CFG halves on the two NeuronCores of inf2.xlarge: %.1f s (published 12.05 s)",
           p.s_per_image);
        s.dp = 0;
        q = predict(&s);
        IS_INT(1, q.devices_per_chip, "without dp, the chip is one device");
        OK(q.s_per_image < p.s_per_image, "and a whole chip is faster per image (%.1f s)",
           q.s_per_image);
    }

    /* ---- fp4 and the vendors' fp8 formats ---- */
    {
        const struct tb_chip *b200 = tb_pricing_chip(&pr, "b200");
        const struct tb_model_eff *eb = tb_model_eff_of(&model, "b200");
        struct tb_prediction r;
        double wfp4 = 0.5 + 1.0 / 16.0; /* NVFP4: e2m1 and one e4m3 scale per 16 values */
        if (!b200 || !eb)
            bail("no b200 in the catalogue");
        /* batch-1 decode of 70B on one B200: the weights at 0.5625 B/param and the fp8 KV
         * cache of 128 + 64 positions (the mean context) over the HBM, plus the per-layer
         * and per-request fixed costs; the products (2 FLOP/param at batch 1) stay under */
        s = scen(&a70, "p6-b200.48xlarge", TB_PHASE_DECODE, "fp4", 1, 128, 128, 1);
        p = predict(&s);
        {
            double bw = b200->hbm_tbps * 1e12;
            double w_s = tb_arch_params_matmul(&a70) * wfp4 / (bw * eb->mem_eff);
            double kv_s = 192.0 * tb_bytes_kv_per_token(&a70, 1.0) / (bw * eb->kv_eff);
            double want_ms = (w_s + kv_s + a70.layers * eb->layer_s + eb->request_s) * 1e3;
            OK(p.fits && fabs(p.tpot_ms - want_ms) < 0.01 * want_ms,
               "70B fp4 decode on one B200: TPOT %.3f ms = weights %.2f GB at %.4f B/param over "
               "%.1f TB/s x %.2f, KV, fixed costs: %.3f ms",
               p.tpot_ms, tb_arch_params_matmul(&a70) * wfp4 / 1e9, wfp4, b200->hbm_tbps,
               eb->mem_eff, want_ms);
            IS_STRING("memory", p.bound, "and memory-bound");
            OK(strstr(p.assumptions, "weights 0.5625 B (NVFP4), KV 1 B") != NULL,
               "the assumptions name the format and the bytes: %.60s",
               strstr(p.assumptions, "weights") ? strstr(p.assumptions, "weights") : "(none)");
        }
        s.precision = "fp8";
        q = predict(&s);
        OK(q.tpot_ms / p.tpot_ms > 1.5 && q.tpot_ms / p.tpot_ms < 1.0 / wfp4,
           "fp8 decode is %.2fx slower (weights 1 B vs 0.5625 B; fixed costs the same)",
           q.tpot_ms / p.tpot_ms);
        s.precision = "nvfp4";
        r = predict(&s);
        OK(r.tpot_ms == p.tpot_ms, "nvfp4 is fp4 on a B200 (%.3f ms)", r.tpot_ms);
        s.precision = "mxfp4";
        r = predict(&s);
        {
            double want = (tb_arch_params_matmul(&a70) * (wfp4 - (0.5 + 1.0 / 32.0))) /
                          (b200->hbm_tbps * 1e12 * eb->mem_eff) * 1e3;
            OK(fabs((p.tpot_ms - r.tpot_ms) - want) < 0.01 * want,
               "mxfp4 (one 8-bit scale per 32) saves the scales' bytes: %.3f ms less, %.3f by "
               "hand",
               p.tpot_ms - r.tpot_ms, want);
        }
        /* prefill 8 x 2048 on one B200: compute-bound, fp4 faster than fp8 by the peaks'
         * ratio times the efficiencies' */
        s = scen(&a70, "p6-b200.48xlarge", TB_PHASE_PREFILL, "fp8", 1, 2048, 1, 8);
        q = predict(&s);
        s.precision = "fp4";
        p = predict(&s);
        {
            double want = b200->fp4_dense_tflops / b200->fp8_dense_tflops * eb->gemm_eff_fp4 /
                          eb->gemm_eff_fp8;
            OK(p.fits && fabs(q.ttft_ms / p.ttft_ms - want) < 0.05 * want,
               "fp4 prefill %.1f ms vs fp8 %.1f ms: %.2fx, peak x efficiency ratio %.2f", p.ttft_ms,
               q.ttft_ms, q.ttft_ms / p.ttft_ms, want);
            IS_STRING("compute", p.bound, "fp4 prefill of 16k tokens is compute-bound");
        }
        /* no fp4 peak: refused with the reason, no crash */
        s = scen(&a70, "p5.48xlarge", TB_PHASE_DECODE, "fp4", 1, 128, 128, 1);
        err[0] = 0;
        OK(tb_model_predict(&model, &s, &r, err, sizeof err) == -1 &&
               !strcmp(err, "H100 SXM5 has no fp4 tensor cores (chips.csv fp4_dense_tflops empty)"),
           "fp4 on an H100 is refused: %s", err);
        s.precision = "mxfp8";
        err[0] = 0;
        OK(tb_model_predict(&model, &s, &r, err, sizeof err) == -1 && strstr(err, "H100 SXM5") &&
               strstr(err, "MX block-scaled"),
           "mxfp8 on an H100 too: %.80s", err);
        s.precision = "cfp8";
        err[0] = 0;
        OK(tb_model_predict(&model, &s, &r, err, sizeof err) == -1 && strstr(err, "Neuron"),
           "cfp8 is the Neuron SDK's name: refused on an H100 (%.60s)", err);
        s.precision = "fp6";
        err[0] = 0;
        OK(tb_model_predict(&model, &s, &r, err, sizeof err) == -1 &&
               strstr(err, "unknown precision 'fp6'"),
           "an unknown precision is refused: %.60s", err);
        OK(tb_model_precision_known("nvfp4") && tb_model_precision_known("cfp8") &&
               !tb_model_precision_known("FP4") && !tb_model_precision_known(""),
           "tb_model_precision_known: exact names only");
        s = scen(&a70, "trn2.48xlarge", TB_PHASE_DECODE, "fp8", 16, 128, 128, 1);
        p = predict(&s);
        s.precision = "cfp8";
        q = predict(&s);
        OK(p.fits && q.tpot_ms == p.tpot_ms, "cfp8 is fp8 on Trainium2 (%.2f ms)", q.tpot_ms);
        s.precision = "mxfp4";
        err[0] = 0;
        OK(tb_model_predict(&model, &s, &r, err, sizeof err) == -1 && strstr(err, "Trainium2"),
           "Trainium2 has no fp4: %.70s", err);
        /* Trainium3: fp4 is MXFP4, at the MXFP8 rate (chips.csv) */
        s = scen(&a70, "trn3-ultraserver-gen1", TB_PHASE_DECODE, "fp4", 4, 128, 128, 1);
        p = predict(&s);
        s.precision = "mxfp4";
        q = predict(&s);
        OK(p.fits && q.tpot_ms == p.tpot_ms && strstr(p.assumptions, "(MXFP4)"),
           "fp4 is mxfp4 on Trainium3 (%.2f ms)", p.tpot_ms);
        s.precision = "nvfp4";
        err[0] = 0;
        OK(tb_model_predict(&model, &s, &r, err, sizeof err) == -1 && strstr(err, "NVIDIA's"),
           "nvfp4 on Trainium3 is refused: %.70s", err);
        s.precision = "mxfp8";
        q = predict(&s);
        OK(q.fits && q.tpot_ms > p.tpot_ms, "mxfp8 there reads more bytes: %.2f ms > %.2f ms",
           q.tpot_ms, p.tpot_ms);
        /* training: NVFP4 products with 15% of them in bf16, the same layout as fp8 */
        s = scen(&a70, "p6-b200.48xlarge", TB_PHASE_TRAIN, "fp8", 8, 8192, 0, 64);
        s.tp = 8;
        s.pp = 1;
        s.dp = 1;
        q = predict(&s);
        s.precision = "fp4";
        p = predict(&s);
        OK(p.fits && q.fits && p.step_time_s < q.step_time_s &&
               q.step_time_s / p.step_time_s < 1.0 / (0.85 / 2.0 + 0.15 * 2.0),
           "fp4 training step %.2f s vs fp8 %.2f s: faster, by less than the products' bound "
           "(%.2fx)",
           p.step_time_s, q.step_time_s, 1.0 / (0.85 / 2.0 + 0.15 * 2.0));
        IS_DOUBLE(p.mem_per_device_gib, q.mem_per_device_gib, 1e-9,
                  "and the same memory (fp32 master weights and Adam, bf16 weights)");
        s = scen(&a70, "trn3-ultraserver-gen1", TB_PHASE_TRAIN, "fp4", 64, 8192, 0, 64);
        err[0] = 0;
        OK(tb_model_predict(&model, &s, &r, err, sizeof err) == -1 && strstr(err, "MXFP4"),
           "MXFP4 training is refused: %.70s", err);
    }

    tb_model_release(&model);
    tb_pricing_release(&pr);
    free(dir);
    return 0;
}
