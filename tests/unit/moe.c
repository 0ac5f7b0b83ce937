/* tests/unit/moe.c: a mixture of experts in the catalogue and the performance model:
 * parameter counts (all for memory, active for FLOPs, the experts a batch touches for a
 * decode step's bytes) by hand and against the publishers' sizes, expert parallelism's
 * memory per device, and a dense model left as it was. */
#include "tb_arch.h"
#include "tb_flops.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_scenario.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
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

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        bail("cannot write %s", path);
}

static void expect_error(const char *text, const char *want, const char *what)
{
    struct tb_arch a;
    char err[512] = "";
    char *p = test_tmp_path("moe_bad.model");
    write_file(p, text);
    IS_INT(-1, tb_arch_load(&a, p, err, sizeof err), "%s is refused", what);
    OK(strstr(err, want) != NULL, "%s: message names it: %s", what, err);
    free(p);
}

/* A serving scenario of a on target's chips. */
static struct tb_scenario scen(const struct tb_arch *a, const char *target, enum tb_phase ph,
                               const char *prec, long chips, long batch)
{
    struct tb_scenario s;
    memset(&s, 0, sizeof s);
    s.inst = tb_pricing_instance(&pr, target);
    if (!s.inst)
        bail("no instance %s", target);
    s.arch = a;
    s.phase = ph;
    s.precision = prec;
    s.chips = chips;
    s.batch = batch;
    s.seq_in = 1000;
    s.seq_out = 1000;
    return s;
}

/* A scenario row as name=value pairs, for tb_scenario_predict_one. */
static const char *kv_get(const void *ctx, const char *name)
{
    const char *const *kv = ctx;
    for (int i = 0; kv[i]; i += 2)
        if (!strcmp(kv[i], name))
            return kv[i + 1];
    return NULL;
}

int main(void)
{
    char err[512];
    char *dir;
    struct tb_arch t, a;
    struct tb_scenario s;
    struct tb_prediction p, q;

    plan_lazy();
    setenv("TRNBENCH_DATADIR", getenv("TB_SRCDIR") ? getenv("TB_SRCDIR") : ".", 1);

    /* ---- a hand-made mixture of experts ---- */
    /* L=2, C=8, NH=2, NKV=1, HD=4, F=16, V=10 untied; 4 experts of width 6, 1 active, one
     * shared expert of width 6, every 2nd layer MoE: layer 0 dense, layer 1 MoE */
    memset(&t, 0, sizeof t);
    t.layers = 2, t.hidden = 8, t.heads = 2, t.kv_heads = 1, t.head_dim = 4, t.ffn = 16;
    t.vocab = 10;
    t.experts = 4, t.experts_active = 1, t.expert_ffn = 6, t.shared_experts = 1;
    t.shared_expert_ffn = 6, t.moe_layer_step = 2;
    /* attention 8*8 + 8*4 + 8*4 + 8*8 = 192 a layer; dense FFN 3*8*16 = 384; an expert
     * 3*8*6 = 144; router 8*4 = 32; LM head 80 */
    IS_INT(1, tb_arch_moe_layers(&t), "one MoE layer of two");
    IS_DOUBLE(144, tb_arch_params_expert(&t), 0, "an expert: 3 C FE");
    IS_DOUBLE(576 + (192 + 4 * 144 + 144 + 32) + 80, tb_arch_params_matmul(&t), 0,
              "matmul parameters: every expert");
    IS_DOUBLE(576 + (192 + 144 + 144 + 32) + 80, tb_arch_params_active(&t), 0,
              "active parameters: one routed expert, the shared one, the router");
    IS_DOUBLE(1600 + 2 * 2 * 8 + 80 + 8, tb_arch_params_total(&t), 0,
              "total: matmul, norms, embedding, final norm");
    IS_DOUBLE(1.0, tb_arch_experts_touched(&t, 1), 1e-12, "one token touches k experts");
    IS_DOUBLE(4.0 * (1.0 - 0.75 * 0.75), tb_arch_experts_touched(&t, 2), 1e-12,
              "two tokens: E(1 - (1 - k/E)^2) distinct experts");
    OK(fabs(tb_arch_experts_touched(&t, 1000) - 4.0) < 1e-9, "many tokens touch all E");
    IS_DOUBLE(1168 + 0.75 * 144, tb_arch_params_touched(&t, 2), 1e-9,
              "a 2-token step reads the experts it touches");
    IS_DOUBLE(1168 + 0.75 * 144, tb_bytes_decode_step(&t, 2, 0, 1, 0), 1e-9,
              "decode step's weight bytes: the touched experts (KV 0)");
    IS_DOUBLE((16.0 + 6 + 6) / 2, tb_arch_ffn_active(&t), 0, "FFN width a token computes");
    /* forward of 3 tokens: 2 x active x 3 + attention as a dense model's (384) */
    IS_DOUBLE(2 * 1168 * 3 + 384, tb_flops_forward(&t, 1, 3), 0,
              "forward FLOPs count the active parameters");

    /* ---- the catalogue against the publishers' sizes ---- */
    static const struct {
        const char *name;
        double total, active, tol; /* tol: relative, the published sizes are rounded
                                      and Llama 4's include the vision encoder */
    } pub[] = {
        {"llama-4-scout-17b-16e", 109e9, 17e9, 0.02},
        {"llama-4-maverick-17b-128e", 400e9, 17e9, 0.02},
        {"qwen3-30b-a3b", 30.5e9, 3.3e9, 0.02},
        {"qwen3-235b-a22b", 235e9, 22e9, 0.02},
    };
    for (size_t i = 0; i < sizeof pub / sizeof pub[0]; i++) {
        a = load_arch(pub[i].name);
        double tot = tb_arch_params_total(&a);
        /* active as the publishers count it: the embedding lookup included */
        double act = tb_arch_params_active(&a) +
                     tb_arch_params_embedding(&a) * (a.tied_embeddings ? 0.0 : 1.0);
        OK(fabs(tot / pub[i].total - 1) < pub[i].tol, "%s: %.4g B parameters, published %.4g B",
           pub[i].name, tot / 1e9, pub[i].total / 1e9);
        OK(fabs(act / pub[i].active - 1) < 0.05, "%s: %.4g B active, published %.4g B", pub[i].name,
           act / 1e9, pub[i].active / 1e9);
        IS_DOUBLE(pub[i].total, a.published_params, 0, "%s: the file states the published size",
                  pub[i].name);
    }
    a = load_arch("llama-4-maverick-17b-128e");
    IS_INT(24, tb_arch_moe_layers(&a), "Maverick: every other layer of 48 is MoE");
    IS_INT(128, a.experts, "Maverick: 128 experts");
    {
        /* prefill FLOPs per token: about 2 x 17B; Meta's 17B counts the embedding lookup
         * and the LM head (1.03B each), which a prefill token does not multiply (the LM
         * head runs for the last one): 2 x 15.1B and the attention */
        double per_tok = tb_flops_prefill(&a, 1, 1024) / 1024;
        OK(per_tok > 2 * 15e9 && per_tok < 2 * 17.5e9,
           "Maverick prefill: %.4g GFLOP a token, about 2 x 17B", per_tok / 1e9);
        OK(per_tok < 0.1 * 2 * tb_arch_params_total(&a), "and far below 2 x its 400B");
    }

    /* ---- a dense model is unchanged ---- */
    {
        struct tb_arch d = load_arch("llama-3.1-8b");
        IS_INT(0, d.experts, "llama-3.1-8b is dense");
        IS_DOUBLE(tb_arch_params_matmul(&d), tb_arch_params_active(&d), 0, "active = all");
        IS_DOUBLE(tb_arch_params_matmul(&d), tb_arch_params_touched(&d, 64), 0,
                  "a step reads all its weights");
        IS_DOUBLE(14336, tb_arch_ffn_active(&d), 0, "its FFN width");
        IS_DOUBLE(8030261248.0, tb_arch_params_total(&d), 0.5, "its published count");
    }

    /* ---- bad model files ---- */
    expect_error("name = x\nfamily = llama\nlayers = 2\nhidden = 64\nheads = 4\nffn = 10\n"
                 "vocab = 10\nexperts = 4\nexperts_active = 5\nexpert_ffn = 8\n",
                 "field 'experts_active'", "more active experts than experts");
    expect_error("name = x\nfamily = llama\nlayers = 2\nhidden = 64\nheads = 4\nffn = 10\n"
                 "vocab = 10\nexperts = 4\nexperts_active = 1\n",
                 "field 'expert_ffn'", "experts without a width");
    expect_error("name = x\nfamily = llama\nlayers = 2\nhidden = 64\nheads = 4\nffn = 10\n"
                 "vocab = 10\nexpert_ffn = 8\n",
                 "field 'expert_ffn'", "an expert width on a dense model");
    expect_error("name = x\nfamily = llama\nlayers = 2\nhidden = 64\nheads = 4\nffn = 10\n"
                 "vocab = 10\nexperts = -1\n",
                 "line 8: field 'experts'", "negative experts");
    expect_error("name = x\nfamily = llama\nlayers = 2\nhidden = 64\nheads = 4\nffn = 10\n"
                 "vocab = 10\nexperts = 4\nexperts_active = 1\nexpert_ffn = 8\n"
                 "moe_layer_step = 3\n",
                 "field 'moe_layer_step'", "no MoE layer");

    /* ---- the performance model ---- */
    dir = test_src_path("pricing");
    if (tb_pricing_load(&pr, dir, err, sizeof err) != 0 ||
        tb_model_load(&model, &pr, dir, err, sizeof err) != 0)
        bail("%s", err);
    /* memory holds all 400B: fp8 over 8 H200s in one tensor-parallel group (ep 1) */
    s = scen(&a, "p5en.48xlarge", TB_PHASE_DECODE, "fp8", 8, 1);
    s.tp = 8;
    if (tb_model_predict(&model, &s, &p, err, sizeof err) != 0)
        bail("%s", err);
    OK(p.fits, "Maverick fp8 on 8 H200 at tp 8 fits: %s", p.why);
    OK(p.mem_per_device_gib * 1073741824.0 > tb_arch_params_total(&a) / 8,
       "memory per device %.1f GiB holds 1/8 of all %.4g B parameters", p.mem_per_device_gib,
       tb_arch_params_total(&a) / 1e9);
    OK(strstr(p.assumptions, "MoE: 128 experts, 1 active") != NULL, "assumptions say MoE: %s",
       p.assumptions);
    IS_INT(1, p.ep, "ep 1: each expert split over the tensor-parallel group");
    /* a batch-1 decode step reads the active experts, not all 400B: faster than all the
     * weights at the HBM's peak */
    {
        const struct tb_chip *h200 = tb_pricing_chip(&pr, "h200-sxm");
        double all_ms = tb_arch_params_matmul(&a) / 8 / (h200->hbm_tbps * 1e12) * 1e3;
        OK(p.tpot_ms < all_ms, "batch-1 TPOT %.2f ms below reading all experts (%.2f ms)",
           p.tpot_ms, all_ms);
    }
    /* expert parallelism changes the memory per device: attention data-parallel over the
     * 8 GPUs (tp 1, dp 8) holds all experts on each GPU without ep, 1/8 of them with ep 8 */
    s.tp = 1;
    s.dp = 8;
    s.ep = 1;
    if (tb_model_predict(&model, &s, &q, err, sizeof err) != 0)
        bail("%s", err);
    OK(!q.fits, "tp 1 dp 8 without ep: every GPU holds all 400B, does not fit: %s", q.why);
    s.ep = 8;
    if (tb_model_predict(&model, &s, &q, err, sizeof err) != 0)
        bail("%s", err);
    OK(q.fits, "with ep 8 it fits (%.1f GiB per device)", q.mem_per_device_gib);
    IS_INT(8, q.ep, "ep 8 used");
    IS_INT(1, q.etp, "each expert whole on one device");
    OK(q.mem_per_device_gib < p.mem_per_device_gib + tb_arch_params_total(&a) / 8 / 1073741824.0,
       "ep 8: the experts spread over the 8 GPUs");
    OK(strstr(q.assumptions, "ep=8") != NULL, "assumptions name the layout: %s", q.assumptions);
    /* ep on a dense model, or above the experts, is refused */
    {
        struct tb_arch d = load_arch("llama-3.1-8b");
        struct tb_scenario ds = scen(&d, "p5en.48xlarge", TB_PHASE_DECODE, "fp8", 8, 1);
        ds.tp = 8;
        ds.ep = 2;
        err[0] = 0;
        IS_INT(-1, tb_model_predict(&model, &ds, &q, err, sizeof err), "ep on a dense model");
        OK(strstr(err, "dense") != NULL, "refused as dense: %s", err);
    }
    /* the serving search may choose ep: Maverick fp8 on 8 H200 at the throughput-maximising
     * load has a layout */
    s = scen(&a, "p5en.48xlarge", TB_PHASE_SERVE, "fp8", 8, 0);
    s.batch_max = true;
    if (tb_model_predict(&model, &s, &q, err, sizeof err) != 0)
        bail("%s", err);
    OK(q.fits && q.ep >= 1 && q.layouts_evaluated > 4,
       "the serving search looks at expert layouts (%ld), picks tp=%ld dp=%ld ep=%ld",
       q.layouts_evaluated, q.tp, q.dp, q.ep);

    /* training: FLOPs of the active parameters, state of all */
    {
        struct tb_arch qa = load_arch("qwen3-30b-a3b");
        struct tb_scenario ts = scen(&qa, "p5.48xlarge", TB_PHASE_TRAIN, "bf16", 8, 64);
        ts.seq_in = 4096;
        if (tb_model_predict(&model, &ts, &q, err, sizeof err) != 0)
            bail("%s", err);
        OK(q.fits, "Qwen3-30B-A3B trains on 8 H100: %s", q.why);
        OK(strstr(q.assumptions, "MoE: 128 experts, 8 active") != NULL, "assumptions: %s",
           q.assumptions);
        /* MFU from active FLOPs: the step's tokens x 6 x active params over the time */
        double flops = tb_flops_train(&qa, (double)q.batch, 4096);
        OK(flops < 6.0 * tb_arch_params_total(&qa) * q.batch * 4096 / 4,
           "training FLOPs count the active parameters, not all");
        IS_DOUBLE(flops / (q.step_time_s * 8 * tb_pricing_chip(&pr, "h100-sxm")->bf16_dense_tflops *
                           1e12),
                  q.mfu, 1e-9, "MFU is the active FLOPs over the time at the bf16 peak");
    }

    /* the scenario table's ep column: checked, refused with the field named */
    {
        struct tb_scenario_result res;
        const char *row[] = {"target",  "p5en.48xlarge",
                             "model",   "llama-3.1-8b",
                             "phase",   "decode",
                             "metric",  "tpot_ms",
                             "seq_in",  "100",
                             "seq_out", "10",
                             "tp",      "8",
                             "ep",      "2",
                             NULL};
        tb_scenario_predict_one(kv_get, row, &model, &res);
        OK(strstr(res.why, "field 'ep'") != NULL, "ep on a dense model: %s", res.why);
        row[15] = "0";
        tb_scenario_predict_one(kv_get, row, &model, &res);
        OK(strstr(res.why, "field 'ep'") != NULL, "ep 0 is out of range: %s", res.why);
        row[3] = "llama-4-maverick-17b-128e";
        row[15] = "256";
        tb_scenario_predict_one(kv_get, row, &model, &res);
        OK(strstr(res.why, "field 'ep'") != NULL && strstr(res.why, "128"),
           "ep above the experts: %s", res.why);
        row[15] = "8";
        tb_scenario_predict_one(kv_get, row, &model, &res);
        OK(!isnan(res.predicted), "Maverick tp 8 ep 8 predicted (%g ms) %s", res.predicted,
           res.why);
    }
    tb_model_release(&model);
    tb_pricing_release(&pr);
    free(dir);
    return 0;
}
