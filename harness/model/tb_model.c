/* harness/model/tb_model.c: see tb_model.h. */
#include "tb_model.h"

#include "tb_flops.h"
#include "tb_util.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- efficiency table ---- */

static int num_field(const struct tb_csv_table *t, size_t r, const char *name, double lo, double hi,
                     double *out, char *err, size_t errlen)
{
    const char *v = tb_csv_field(t, r, name);
    if (tb_parse_double(v, lo, hi, out) != 0)
        return tb_err(err, errlen, "%s: line %ld: field '%s': not a number in [%g, %g]: '%s'",
                      t->path, t->lines[r], name, lo, hi, v);
    return 0;
}

int tb_model_load(struct tb_model *m, const struct tb_pricing *pricing, const char *dir, char *err,
                  size_t errlen)
{
    static const char *const cols[] = {
        "chip",        "family",           "gemm_eff",   "gemm_eff_fp8", "gemm_eff_fp4",
        "gemm_m_half", "gemm_n_half",      "mem_eff",    "kv_eff",       "link_eff",
        "net_eff",     "collective_us",    "layer_us",   "request_us",   "train_eff",
        "tp_overlap",  "conv_eff",         "dp_overlap", "hbm_usable",   "max_batch",
        "source",      "prefill_layer_us", NULL};
    char path[PATH_MAX];

    memset(m, 0, sizeof *m);
    m->pricing = pricing;
    if ((size_t)(dir ? snprintf(path, sizeof path, "%s/efficiency.csv", dir)
                     : snprintf(path, sizeof path, "%s/pricing/efficiency.csv", tb_datadir())) >=
        sizeof path)
        return tb_err(err, errlen, "path too long");
    if (tb_csv_load(&m->csv, path, err, errlen) != 0)
        return -1;
    if (tb_csv_require(&m->csv, cols, err, errlen) != 0)
        goto fail;
    m->eff = tb_alloc_array(m->csv.nrows ? m->csv.nrows : 1, sizeof *m->eff);
    if (!m->eff) {
        tb_err(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t r = 0; r < m->csv.nrows; r++) {
        struct tb_model_eff *e = &m->eff[m->neff];
        double us, lus, plus, rus, mb;
        memset(e, 0, sizeof *e);
        e->chip = tb_csv_field(&m->csv, r, "chip");
        e->family = tb_csv_field(&m->csv, r, "family");
        e->source = tb_csv_field(&m->csv, r, "source");
        e->line = m->csv.lines[r];
        if (!tb_pricing_chip(pricing, e->chip)) {
            tb_err(err, errlen, "%s: line %ld: field 'chip': '%s' is not in chips.csv", path,
                   e->line, e->chip);
            goto fail;
        }
        if (!*e->family) {
            tb_err(err, errlen, "%s: line %ld: field 'family': empty", path, e->line);
            goto fail;
        }
        if (num_field(&m->csv, r, "gemm_eff", 0.01, 1, &e->gemm_eff, err, errlen) ||
            num_field(&m->csv, r, "gemm_eff_fp8", 0.01, 1, &e->gemm_eff_fp8, err, errlen) ||
            num_field(&m->csv, r, "gemm_m_half", 0, 1e6, &e->gemm_m_half, err, errlen) ||
            num_field(&m->csv, r, "gemm_n_half", 0, 1e6, &e->gemm_n_half, err, errlen) ||
            num_field(&m->csv, r, "mem_eff", 0.01, 1, &e->mem_eff, err, errlen) ||
            num_field(&m->csv, r, "kv_eff", 0.01, 1, &e->kv_eff, err, errlen) ||
            num_field(&m->csv, r, "link_eff", 0.01, 1, &e->link_eff, err, errlen) ||
            num_field(&m->csv, r, "net_eff", 0.01, 1, &e->net_eff, err, errlen) ||
            num_field(&m->csv, r, "collective_us", 0, 1e5, &us, err, errlen) ||
            num_field(&m->csv, r, "layer_us", 0, 1e5, &lus, err, errlen) ||
            num_field(&m->csv, r, "prefill_layer_us", 0, 1e5, &plus, err, errlen) ||
            num_field(&m->csv, r, "prefill_min_tokens", 0, 1e6, &e->prefill_min_tokens, err,
                      errlen) ||
            num_field(&m->csv, r, "request_us", 0, 1e5, &rus, err, errlen) ||
            num_field(&m->csv, r, "train_eff", 0.01, 1, &e->train_eff, err, errlen) ||
            num_field(&m->csv, r, "dp_overlap", 0, 1, &e->dp_overlap, err, errlen) ||
            num_field(&m->csv, r, "tp_overlap", 0, 1, &e->tp_overlap, err, errlen) ||
            num_field(&m->csv, r, "conv_eff", 0.01, 1, &e->conv_eff, err, errlen) ||
            num_field(&m->csv, r, "hbm_usable", 0.1, 1, &e->hbm_usable, err, errlen) ||
            num_field(&m->csv, r, "max_batch", 1, 1e6, &mb, err, errlen))
            goto fail;
        /* fp4: empty where the chip has no fp4 peak; required where it has one */
        if (!*tb_csv_field(&m->csv, r, "gemm_eff_fp4")) {
            if (tb_pricing_chip(pricing, e->chip)->fp4_dense_tflops > 0) {
                tb_err(err, errlen,
                       "%s: line %ld: field 'gemm_eff_fp4': empty, but chips.csv gives '%s' an "
                       "fp4 peak",
                       path, e->line, e->chip);
                goto fail;
            }
            e->gemm_eff_fp4 = NAN;
        } else if (num_field(&m->csv, r, "gemm_eff_fp4", 0.01, 1, &e->gemm_eff_fp4, err, errlen)) {
            goto fail;
        }
        e->collective_s = us * 1e-6;
        e->layer_s = lus * 1e-6;
        e->prefill_layer_s = plus * 1e-6;
        e->request_s = rus * 1e-6;
        e->max_batch = (long)mb;
        m->neff++;
    }
    return 0;
fail:
    tb_model_release(m);
    return -1;
}

void tb_model_release(struct tb_model *m)
{
    free(m->eff);
    tb_csv_release(&m->csv);
    memset(m, 0, sizeof *m);
}

const struct tb_model_eff *tb_model_eff_of(const struct tb_model *m, const char *chip)
{
    for (size_t i = 0; i < m->neff; i++)
        if (!strcmp(m->eff[i].chip, chip))
            return &m->eff[i];
    return NULL;
}

bool tb_model_precision_known(const char *name)
{
    static const char *const names[] = {"bf16", "fp16",  "fp8",   "cfp8", "mxfp8",
                                        "fp4",  "nvfp4", "mxfp4", "int8", "fp32"};
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i]))
            return true;
    return false;
}

/* ---- one device of a layout ---- */

/* What one device (a chip, or 1/k of one) offers, with the precision's byte sizes. */
struct dev {
    const struct tb_arch *a;
    const struct tb_model_eff *e;
    double peak;        /* FLOP/s of the precision, per device */
    double bf16_peak;   /* FLOP/s in bf16 per device (attention runs in 16-bit) */
    double chip_peak;   /* per chip, for MFU */
    double gemm_eff;    /* large-GEMM efficiency of the precision */
    double hbm;         /* bytes per device */
    double hbm_bw;      /* bytes/s per device */
    double link_bw;     /* effective bytes/s per device on the intra-node link */
    double net_bw;      /* effective bytes/s per device on the network (EFA) */
    double wbytes;      /* bytes per weight */
    double kvbytes;     /* bytes per K or V element */
    double lowp_frac;   /* training: fraction of the weights' products at the precision (the
                           rest in bf16): 1, or 0.85 for fp4 */
    const char *format; /* the number format, for the assumptions ("NVFP4", "bf16") */
    long per_node;      /* devices per instance */
    long k;             /* devices per chip */
};

static int dev_init(struct dev *d, const struct tb_model *m, const struct tb_scenario *sc, long k,
                    char *err, size_t errlen)
{
    const struct tb_chip *c = tb_pricing_chip(m->pricing, sc->inst->chip);
    const char *p = sc->precision && *sc->precision ? sc->precision : "bf16";
    double tflops;

    memset(d, 0, sizeof *d);
    d->a = sc->arch; /* NULL for diffusion */
    if (!c)
        return tb_err(err, errlen, "chip '%s' of '%s' is not in chips.csv", sc->inst->chip,
                      sc->inst->instance);
    d->e = tb_model_eff_of(m, c->chip);
    if (!d->e)
        return tb_err(err, errlen, "no efficiency figures for chip '%s' (pricing/efficiency.csv)",
                      c->chip);
    d->gemm_eff = d->e->gemm_eff;
    d->lowp_frac = 1;
    d->format = p;
    /* the block-scaled formats came with the generation that added fp4 (Blackwell,
     * Trainium3): a chip without an fp4 peak has neither */
    if (tb_model_precision_known(p) && strstr(p, "fp4") && !(c->fp4_dense_tflops > 0))
        return tb_err(err, errlen, "%s has no fp4 %s (chips.csv fp4_dense_tflops empty)", c->name,
                      strcmp(d->e->family, "nvidia") ? "matrix support" : "tensor cores");
    if (!strcmp(p, "mxfp8") && !(c->fp4_dense_tflops > 0))
        return tb_err(err, errlen,
                      "%s has no MX block-scaled formats (MXFP8 and MXFP4 came with Blackwell and "
                      "Trainium3, the chips with an fp4 peak in chips.csv); say fp8",
                      c->name);
    if (!strcmp(p, "bf16") || !strcmp(p, "fp16")) {
        tflops = c->bf16_dense_tflops;
        d->wbytes = d->kvbytes = 2;
    } else if (!strcmp(p, "fp8") || !strcmp(p, "cfp8") || !strcmp(p, "mxfp8")) {
        if (!strcmp(p, "cfp8") && strncmp(d->e->family, "neuron", 6))
            return tb_err(err, errlen, "cfp8 is the Neuron SDK's fp8 (AWS chips); for %s say fp8",
                          c->name);
        tflops = c->fp8_dense_tflops;
        /* fp8 weights and fp8 KV cache, as the stacks run it; MX: one 8-bit scale per 32 */
        d->wbytes = !strcmp(p, "mxfp8") ? 1.0 + 1.0 / 32.0 : 1.0;
        d->kvbytes = 1;
        d->gemm_eff = d->e->gemm_eff_fp8;
        d->format = !strcmp(p, "mxfp8") ? "MXFP8" : "fp8";
    } else if (!strcmp(p, "fp4") || !strcmp(p, "nvfp4") || !strcmp(p, "mxfp4")) {
        bool nv = !strcmp(d->e->family, "nvidia");
        if (!strcmp(p, "nvfp4") && !nv)
            return tb_err(err, errlen, "NVFP4 is NVIDIA's format; %s's fp4 is MXFP4 (mxfp4 or fp4)",
                          c->name);
        tflops = c->fp4_dense_tflops;
        /* fp4 (e2m1) weights with their block scales: NVFP4 one e4m3 scale per 16 values
         * (its per-tensor fp32 scale is negligible), MXFP4 one 8-bit scale per 32; plain
         * fp4 is the vendor's own, NVFP4 on NVIDIA, MXFP4 on Trainium3. KV cache in fp8,
         * as TensorRT-LLM and vLLM run the fp4 checkpoints */
        d->format = !strcmp(p, "mxfp4") || !nv ? "MXFP4" : "NVFP4";
        d->wbytes = 0.5 + (strcmp(d->format, "NVFP4") ? 1.0 / 32.0 : 1.0 / 16.0);
        d->kvbytes = 1;
        d->gemm_eff = d->e->gemm_eff_fp4;
        /* training: NVIDIA's NVFP4 recipe keeps about 15% of the linear layers (the last
         * ones) in bf16 (arXiv 2509.25149); the rest of a step as in bf16/fp8 training */
        d->lowp_frac = 0.85;
    } else if (!strcmp(p, "int8")) {
        tflops = c->bf16_dense_tflops; /* weight-only int8: bf16 matmuls */
        d->wbytes = 1;
        d->kvbytes = 2;
    } else if (!strcmp(p, "fp32")) {
        tflops = c->fp32_tflops;
        d->wbytes = d->kvbytes = 4;
    } else {
        return tb_err(err, errlen, "unknown precision '%s' (%s)", p, TB_MODEL_PRECISIONS);
    }
    if (!(tflops > 0))
        return tb_err(err, errlen, "%s has no %s peak in chips.csv", c->name, p);
    if (!(d->gemm_eff > 0))
        return tb_err(err, errlen, "no %s efficiency for chip '%s' (pricing/efficiency.csv)", p,
                      c->chip);
    if (!(c->hbm_gib > 0) || !(c->hbm_tbps > 0))
        return tb_err(err, errlen, "%s has no HBM size or bandwidth in chips.csv", c->name);
    d->k = k;
    d->chip_peak = tflops * 1e12;
    d->peak = d->chip_peak / (double)k;
    d->bf16_peak = (c->bf16_dense_tflops > 0 ? c->bf16_dense_tflops : tflops) * 1e12 / (double)k;
    /* chips.csv states GB for NVIDIA and GiB for AWS; the difference (7%) is inside
     * hbm_usable's margin, so both are read as GiB-like capacity in bytes */
    d->hbm = c->hbm_gib * 1073741824.0 / (double)k;
    d->hbm_bw = c->hbm_tbps * 1e12 / (double)k;
    d->link_bw = (c->interconnect_gbps > 0 ? c->interconnect_gbps : 512) * 1e9 / 8 / (double)k *
                 d->e->link_eff;
    d->per_node = sc->inst->accel_count * k;
    d->net_bw = (sc->inst->network_gbps > 0 ? sc->inst->network_gbps : 100) * 1e9 / 8 /
                (double)d->per_node * d->e->net_eff;
    return 0;
}

/* Efficiency of the layer GEMMs with M rows (tokens) when tensor parallelism over tp
 * devices narrows each to hidden/tp columns: small in either dimension fills the
 * matrix units poorly (a systolic array of 128 rows, or a GPU's tiles). */
static double gemm_eff(const struct dev *d, double M, long tp)
{
    double N = (double)d->a->hidden / (double)tp;
    return d->gemm_eff * M / (M + d->e->gemm_m_half) * N / (N + d->e->gemm_n_half);
}

/* Work of the attention projections grows when tp does not divide the heads: the
 * Neuron and TensorRT-LLM stacks pad the heads to a multiple of tp. Returns the factor
 * on the matrix-product parameters (1 when tp divides the heads). */
static double head_pad(const struct tb_arch *a, long tp)
{
    double padded = ceil((double)a->heads / (double)tp) * (double)tp;
    double q = (double)a->heads * a->head_dim, kv = (double)a->kv_heads * a->head_dim;
    double attn = (double)a->hidden * (2.0 * q + 2.0 * kv) * a->layers;
    if (padded <= a->heads)
        return 1.0;
    return 1.0 + attn * (padded / a->heads - 1.0) / tb_arch_params_matmul(a);
}

/* Ring all-reduce of S bytes over g devices spread over `span` devices of the
 * layout (g members at stride): intra-node when the span fits in one instance. */
static double allreduce_s(const struct dev *d, double S, long g, long span)
{
    double bw = span <= d->per_node ? d->link_bw : d->net_bw;
    if (g <= 1)
        return 0;
    return d->e->collective_s * (span <= d->per_node ? 1 : 4) +
           2.0 * (double)(g - 1) / (double)g * S / bw;
}

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

/* Prefill of B prompts of T tokens with tensor parallelism tp. */
static struct step prefill_step(const struct dev *d, double B, double T, long tp)
{
    const struct tb_arch *a = d->a;
    struct step s;
    double M;
    /* a compiled stack (Neuron) runs the prompt through a graph of a fixed length, the
     * smallest bucket that holds it: a shorter prompt is padded to the smallest bucket
     * (prefill_min_tokens; 0 where the kernels take the prompt's own length) */
    T = fmax(T, d->e->prefill_min_tokens);
    M = B * T;
    s.tcomp = tb_flops_prefill(a, B, T) * head_pad(a, tp) / (double)tp /
              (d->peak * gemm_eff(d, fmin(M, 16384), tp));
    s.tmem = (tb_arch_params_matmul(a) * head_pad(a, tp) * d->wbytes / (double)tp +
              kv_per_device(d, tp, M)) /
             (d->hbm_bw * d->e->mem_eff);
    s.tcomm = a->layers * 2.0 * allreduce_s(d, M * a->hidden * 2.0, tp, tp);
    /* the prefill's fixed cost per layer (prefill_layer_us): the kernels of a prompt's
     * forward that the FLOP and byte counts leave out (norms, rotary, quantisation,
     * residual adds, the attention plugin's set-up), each launched and synchronised on
     * its own because a prefill's shapes vary and are not captured in a graph; it does
     * not shrink with the prompt, so it is what a short prompt's TTFT is made of */
    s.tover = a->layers * d->e->prefill_layer_s;
    s.t = fmax(s.tcomp, s.tmem) + s.tcomm + s.tover;
    return s;
}

/* One decode step of B sequences, each attending to ctx positions. */
static struct step decode_step(const struct dev *d, double B, double ctx, long tp)
{
    const struct tb_arch *a = d->a;
    struct step s;
    s.tcomp = tb_flops_decode_step(a, B, ctx - 1) * head_pad(a, tp) / (double)tp /
              (d->peak * gemm_eff(d, B, tp));
    s.tmem = tb_arch_params_matmul(a) * head_pad(a, tp) * d->wbytes / (double)tp /
                 (d->hbm_bw * d->e->mem_eff) +
             kv_per_device(d, tp, B * ctx) / (d->hbm_bw * d->e->kv_eff);
    s.tcomm = a->layers * 2.0 * allreduce_s(d, B * a->hidden * 2.0, tp, tp);
    /* per step: the layers' fixed costs and the host's work per request (sampling,
     * scheduling, detokenising) */
    s.tover = a->layers * d->e->layer_s + B * d->e->request_s;
    s.t = fmax(s.tcomp, s.tmem) + s.tcomm + s.tover;
    return s;
}

/* Bytes per device to serve B sequences of up to ctx tokens. */
static double serve_mem(const struct dev *d, double B, double ctx, double chunk, long tp)
{
    const struct tb_arch *a = d->a;
    double weights =
        (tb_arch_params_matmul(a) + tb_arch_params_embedding(a)) * d->wbytes / (double)tp;
    double kv = kv_per_device(d, tp, B * ctx);
    /* working set of the largest forward chunk: activations and the logits */
    double work = chunk * (4.0 * a->hidden + 2.0 * a->ffn) * 2.0 / (double)tp +
                  fmin(B, chunk) * a->vocab * 4.0 / (double)tp;
    return weights + kv + work;
}

struct serve_point {
    double ttft, tpot, e2e, out_tps, total_tps;
    const char *bound;         /* of the whole request: what dominates its time */
    const char *bound_prefill; /* of the prefill alone */
    const char *bound_decode;  /* of a decode step alone */
};

/* Static batch of B requests: prefill all, then seq_out - 1 decode steps. */
static struct serve_point serve_static(const struct dev *d, double B, double Tin, double Tout,
                                       long tp)
{
    struct serve_point p;
    struct step pf = prefill_step(d, B, Tin, tp);
    /* the decode steps run at positions Tin .. Tin+Tout-2: their mean context */
    struct step dc = decode_step(d, B, Tin + Tout / 2.0, tp);
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
    double chunk = fmin(B * Tin, 8192);
    double pf = tb_flops_prefill(a, B, Tin) * head_pad(a, tp) / (double)tp /
                    (d->peak * gemm_eff(d, chunk, tp)) +
                a->layers * 2.0 * allreduce_s(d, B * Tin * a->hidden * 2.0, tp, tp);
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

static int predict_inference(const struct tb_model *m, const struct tb_scenario *sc,
                             struct tb_prediction *p, char *err, size_t errlen)
{
    struct dev d;
    long chips = p->chips, k, tp, dp;
    double Tin = (double)sc->seq_in, Tout = (double)(sc->seq_out > 0 ? sc->seq_out : 1);
    double cap, ctx = Tin + Tout;
    struct serve_point sp;

    (void)m;
    if (sc->seq_in <= 0)
        return tb_err(err, errlen, "seq_in missing: the prompt length is needed");
    if (sc->pp > 1)
        return tb_err(err, errlen, "pipeline-parallel inference is not modeled (pp=%ld)", sc->pp);
    if (sc->tp > 0) {
        long devs = sc->tp * (sc->dp > 0 ? sc->dp : 1);
        if (devs % chips)
            return tb_err(err, errlen, "tp x dp = %ld does not divide over %ld chips", devs, chips);
        k = devs / chips;
        tp = sc->tp;
        dp = sc->dp > 0 ? sc->dp : 1;
    } else {
        k = 1;
        dp = sc->dp > 0 ? sc->dp : 1;
        if (chips % dp)
            return tb_err(err, errlen, "dp=%ld does not divide %ld chips", dp, chips);
        tp = chips / dp;
    }
    if (k != 1 && k != 2 && k != 4 && k != 8)
        return tb_err(err, errlen, "tp x dp over %ld chips gives %ld devices per chip", chips, k);
    if (dev_init(&d, m, sc, k, err, errlen) != 0)
        return -1;
    p->devices = chips * k;
    p->devices_per_chip = k;
    p->tp = tp;
    p->pp = 1;
    p->dp = dp;
    p->hbm_per_device_gib = d.hbm / 1073741824.0;
    cap = d.hbm * d.e->hbm_usable;

    if (sc->batch_max) {
        double best = -1, bestB = 0, Bmem, B, lo = 1, hi = (double)d.e->max_batch;
        struct serve_point bp = {0};
        if (serve_mem(&d, 1, ctx, fmin(Tin, 8192), tp) > cap) {
            p->fits = false;
            snprintf(p->why, sizeof p->why,
                     "does not fit: weights and one request need %.1f GiB per device, %.1f GiB "
                     "usable (tp=%ld)",
                     serve_mem(&d, 1, ctx, fmin(Tin, 8192), tp) / 1073741824.0, cap / 1073741824.0,
                     tp);
            return 0;
        }
        /* the largest load that fits: lo fits, hi + 1 does not */
        while (lo < hi) {
            double mid = ceil((lo + hi) / 2);
            if (serve_mem(&d, mid, ctx, fmin(mid * Tin, 8192), tp) <= cap)
                lo = mid;
            else
                hi = mid - 1;
        }
        Bmem = lo;
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
    return 0;
}

/* Serving at the throughput-maximising load with no layout given: replicas (dp) of
 * tensor-parallel groups (tp = chips / dp), every power-of-two split, the most output
 * tokens per second wins (fewer replicas on a tie: lower latency). */
static int predict_serving_layout(const struct tb_model *m, const struct tb_scenario *sc,
                                  struct tb_prediction *p, char *err, size_t errlen)
{
    struct tb_scenario s = *sc;
    const struct tb_prediction init = *p; /* as tb_model_predict set it up */
    struct tb_prediction q;
    bool have = false;
    long layouts = 0;
    struct dev d;

    /* what no layout changes (a precision the chip lacks) is said as such */
    if (dev_init(&d, m, sc, 1, err, errlen) != 0)
        return -1;
    for (long dp = 1; dp <= p->chips; dp *= 2) {
        if (p->chips % dp)
            break;
        s.dp = dp;
        s.tp = p->chips / dp;
        s.chips = p->chips;
        s.instances = p->instances;
        q = init;
        if (predict_inference(m, &s, &q, err, errlen) != 0)
            continue; /* e.g. a tp that does not divide the heads */
        layouts++;
        if (q.fits && (!have || q.output_tokens_per_s > p->output_tokens_per_s * 1.001)) {
            *p = q;
            have = true;
        } else if (!have && !p->why[0]) {
            snprintf(p->why, sizeof p->why, "%s", q.why);
        }
    }
    p->layouts_evaluated = layouts;
    if (!have) {
        p->fits = false;
        if (!p->why[0])
            return tb_err(err, errlen, "no serving layout of %ld chips is possible", p->chips);
    }
    return 0;
}

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
        double e16 = d->e->gemm_eff / d->gemm_eff * gemm_eff(d, M, t);
        tcomp = (gemm * head_pad(a, t) / ndev *
                     (d->lowp_frac / (d->peak * gemm_eff(d, M, t)) +
                      (1.0 - d->lowp_frac) / (d->bf16_peak * e16)) +
                 attn / ndev / (d->bf16_peak * d->e->gemm_eff * M / (M + d->e->gemm_m_half)) +
                 elem / ndev / (d->hbm_bw * d->e->mem_eff)) /
                d->e->train_eff;
    }
    /* tensor parallel: 2 all-reduces forward and 2 backward per layer and micro-batch
     * (2 more when the forward is recomputed), on the critical path but for the part
     * the stacks overlap with compute */
    nar = l->recompute ? 6.0 : 4.0;
    ttp = m * Lst * nar * allreduce_s(d, M * C * 2.0, t, t) * (1.0 - d->e->tp_overlap);
    /* context parallel: each layer gathers the other devices' K and V forward and
     * reduces their gradients backward (half an all-reduce each way) */
    tcp = cp > 1 ? m * Lst * 2.0 *
                       allreduce_s(d, M * 2.0 * a->kv_heads * a->head_dim * 2.0, cp, t * cp) / 2.0
                 : 0;
    tpipe = (tcomp + ttp + tcp) * (m + (double)pp - 1.0) / m;
    tp2p = pp > 1 ? (m + (double)pp - 1.0) * 2.0 *
                        (d->e->collective_s +
                         M * C * 2.0 / (t * pp <= d->per_node ? d->link_bw : d->net_bw))
                  : 0;
    /* data parallel, ZeRO-1: reduce-scatter bf16 gradients, all-gather bf16 weights */
    tdp = dp > 1 ? allreduce_s(d, shard * 2.0, dp, t * pp * cp * dp) * (1.0 - d->e->dp_overlap) : 0;
    /* optimizer: reads gradients and fp32 state of its shard, writes state and weights */
    topt = (shard * 4.0 + shard / (double)dp * 24.0 + shard * 2.0) / (d->hbm_bw * d->e->mem_eff);
    r.step = tpipe + tp2p + tdp + topt;
    r.bound = (ttp + tcp + tdp + tp2p) > tcomp ? "communication" : "compute";
    return r;
}

static int predict_train(const struct tb_model *m, const struct tb_scenario *sc,
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
    if (dev_init(&d, m, sc, k, err, errlen) != 0)
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

/* ---- diffusion ---- */

/* One image batch of b on one device: the text encoders, steps x the denoiser (both
 * CFG halves in one batch), the VAE decode. Matrix products (convolutions included) at the
 * precision's peak and the shape's efficiency, attention in 16-bit, the weights read once per pass
 * at least, a fixed cost per block. Returns seconds; *bound says what dominates the passes. */
static double denoise_time(const struct dev *d, const struct tb_darch *a, double b, int res,
                           int steps, bool split, long g, const char **bound)
{
    const double h = (double)res / a->vae_scale;
    const double tokens = a->kind == TB_DARCH_UNET ? h * h : (h / a->patch) * (h / a->patch);
    /* one step runs the denoiser once on cfgb images (the guided and unguided halves
     * batched together with CFG); split: the two halves run on two devices side by side,
     * as the Neuron SDXL pipeline splits them over the NeuronCores of a chip */
    const double cfgb = a->cfg ? 2.0 * b : b;
    double total, attn, convf, gemm;
    const double M = cfgb * tokens;
    tb_dflops_denoiser_parts(a, cfgb, res, &total, &attn, &convf); /* one walk of the net */
    gemm = total - attn - convf;
    /* the denoiser's work below is for cfgb images; split, each device does half */
    const double share = split ? 0.5 : 1.0;
    const double eff = d->gemm_eff * M / (M + d->e->gemm_m_half);
    const double eff16 = d->e->gemm_eff * M / (M + d->e->gemm_m_half);
    const double blocks = a->kind == TB_DARCH_UNET
                              ? 4.0 * a->nlevels * (a->layers_per_block + 1) + 30.0
                              : (double)a->dit_depth + a->single_depth;
    double tcomp = share * (gemm / (d->peak * eff) + convf / (d->peak * eff * d->e->conv_eff) +
                            attn / (d->bf16_peak * eff16));
    double tmem = tb_dbytes_denoiser(a, d->wbytes) / (d->hbm_bw * d->e->mem_eff);
    /* tensor parallel over g devices: each does 1/g of the work and reads 1/g of the
     * weights; two all-reduces per block of the activations */
    double width = a->kind == TB_DARCH_UNET ? a->ch[a->nlevels - 1] : a->hidden;
    double tokens_act = a->kind == TB_DARCH_UNET ? tokens / 16.0 : tokens + a->text_tokens;
    double tcomm = g > 1 ? blocks * 2.0 * allreduce_s(d, cfgb * tokens_act * width * 2.0, g, g) : 0;
    double tpass;
    tcomp /= (double)g;
    tmem /= (double)g;
    tpass = fmax(tcomp, tmem) + tcomm + blocks * d->e->layer_s;
    /* encoders and VAE: large products at the 16-bit rate */
    double tenc = tb_dflops_encoders(a, b) / (d->bf16_peak * d->e->gemm_eff);
    double tvae =
        tb_dflops_vae_decode(a, b, res) / (d->bf16_peak * d->e->gemm_eff * d->e->conv_eff);
    *bound = tcomp >= tmem ? "compute" : "memory";
    return (double)steps * tpass + tenc + tvae;
}

/* Bytes per device for a batch of b images: the denoiser's weights (plus the text
 * encoders and VAE, resident as serving stacks keep them), activations of the largest
 * level, the attention scores of one head. */
static double denoise_mem(const struct dev *d, const struct tb_darch *a, double b, int res, long g)
{
    const double h = (double)res / a->vae_scale;
    const double cfgb = a->cfg ? 2.0 * b : b;
    double weights = (tb_darch_params_denoiser(a) + tb_darch_params_encoders(a) +
                      tb_darch_params_vae_decoder(a)) *
                     d->wbytes;
    double width = a->kind == TB_DARCH_UNET ? a->ch[0] * 8.0 : a->hidden * 6.0;
    double tokens = a->kind == TB_DARCH_UNET ? h * h : (h / a->patch) * (h / a->patch);
    double act = cfgb * tokens * width * 2.0 +
                 b * (8.0 * h) * (8.0 * h) * a->vae_ch[a->vae_levels - 1] * 4.0;
    /* tensor parallel over g devices shards the weights and the activations */
    return (weights + act) / (double)g;
}

static int predict_denoise(const struct tb_model *m, const struct tb_scenario *sc,
                           struct tb_prediction *p, char *err, size_t errlen)
{
    const struct tb_darch *a = sc->darch;
    const int steps = sc->steps > 0 ? (int)sc->steps : a->default_steps;
    const int res = sc->resolution > 0 ? (int)sc->resolution : a->resolution;
    const long chips = p->chips;
    const double imgs = (double)(sc->batch > 0 ? sc->batch : 1);
    struct dev d;
    long k = 1, devs, g, groups;
    double cap, b = 1, t = 0;
    bool split = false;
    const char *bound = "compute";

    if (res % (a->vae_scale * (a->kind == TB_DARCH_UNET ? 1 << (a->nlevels - 1) : a->patch)))
        return tb_err(err, errlen, "resolution %d does not divide into %s's latent grid", res,
                      a->name);
    if (sc->pp > 1)
        return tb_err(err, errlen, "pipeline-parallel diffusion is not modeled (pp=%ld)", sc->pp);
    /* devices: chips, or NeuronCores when dp (or tp x dp) counts more than the chips;
     * without either, a chip is one device (a Neuron chip's cores as one group, as a
     * GPU) */
    if (sc->dp > 0 || sc->tp > 0) {
        long n = (sc->dp > 0 ? sc->dp : 1) * (sc->tp > 0 ? sc->tp : 1);
        if (n > chips) {
            if (n % chips)
                return tb_err(err, errlen, "tp x dp = %ld does not divide over %ld chips", n,
                              chips);
            k = n / chips;
        }
    }
    if (k != 1 && k != 2 && k != 4 && k != 8)
        return tb_err(err, errlen, "tp x dp over %ld chips gives %ld devices per chip", chips, k);
    if (dev_init(&d, m, sc, k, err, errlen) != 0)
        return -1;
    devs = chips * k;
    cap = d.hbm * d.e->hbm_usable;
    /* tensor parallel groups of g devices: as given, else the fewest that hold the
     * model (powers of two within an instance) */
    if (sc->tp > 0) {
        g = sc->tp;
    } else {
        for (g = 1; g < d.per_node && g < devs && denoise_mem(&d, a, 1, res, g) > cap; g *= 2)
            ;
    }
    if (devs % g)
        return tb_err(err, errlen, "tp=%ld does not divide the %ld devices", g, devs);
    groups = devs / g;
    p->steps = steps;
    p->resolution = res;
    p->devices = devs;
    p->devices_per_chip = k;
    p->tp = g;
    p->pp = 1;
    p->dp = groups;
    p->hbm_per_device_gib = d.hbm / 1073741824.0;
    if (denoise_mem(&d, a, 1, res, g) > cap) {
        p->fits = false;
        snprintf(p->why, sizeof p->why,
                 "does not fit: %s needs %.1f GiB per device for one image at tp=%ld, %.1f GiB "
                 "usable",
                 a->name, denoise_mem(&d, a, 1, res, g) / 1073741824.0, g, cap / 1073741824.0);
        return 0;
    }
    if (sc->batch_max) {
        /* the throughput-maximising images per group within memory, up to 16 */
        double best = 0;
        for (double bb = 1; bb <= 16 && denoise_mem(&d, a, bb, res, g) <= cap; bb *= 2) {
            const char *bd;
            double tt = denoise_time(&d, a, bb, res, steps, false, g, &bd);
            if (bb / tt > best * 1.02) {
                best = bb / tt;
                b = bb;
                t = tt;
                bound = bd;
            }
        }
        p->images_per_s = b * (double)groups / t;
    } else {
        /* with CFG and two groups per image, the halves run side by side */
        split = a->cfg && (double)groups >= 2 * imgs;
        b = ceil(imgs / (double)groups);
        if (denoise_mem(&d, a, b, res, g) > cap) {
            p->fits = false;
            snprintf(p->why, sizeof p->why,
                     "does not fit: %.0f images per device group need %.1f GiB per device, %.1f "
                     "usable",
                     b, denoise_mem(&d, a, b, res, g) / 1073741824.0, cap / 1073741824.0);
            return 0;
        }
        t = denoise_time(&d, a, split ? 1 : b, res, steps, split, g, &bound);
        p->images_per_s = imgs / t;
    }
    p->fits = true;
    p->batch = sc->batch_max ? (long)(b * groups) : (long)imgs;
    p->mem_per_device_gib = denoise_mem(&d, a, split ? 1 : b, res, g) / 1073741824.0;
    p->s_per_image = t;
    p->images_per_s_per_chip = p->images_per_s / (double)chips;
    p->bound = bound;
    snprintf(p->assumptions, sizeof p->assumptions,
             "%d steps%s at %dx%d; %.0f image%s per group of %ld device%s (tensor parallel), %ld "
             "group%s over %ld devices (%ld per chip); gemm_eff %.2f (half at %.0f rows), "
             "conv_eff %.2f, attention 16-bit; text encoders and VAE decode included",
             steps,
             !a->cfg ? ""
             : split ? " with classifier-free guidance, the two halves on two groups side by side"
                     : " with classifier-free guidance (both halves batched)",
             res, res, split ? 1.0 : b, (split ? 1.0 : b) == 1 ? "" : "s", g, g == 1 ? "" : "s",
             groups, groups == 1 ? "" : "s", devs, k, d.gemm_eff, d.e->gemm_m_half, d.e->conv_eff);
    return 0;
}

/* ---- entry points ---- */

int tb_model_predict(const struct tb_model *m, const struct tb_scenario *sc,
                     struct tb_prediction *p, char *err, size_t errlen)
{
    long per_inst;

    memset(p, 0, sizeof *p);
    p->step_time_s = p->train_tokens_per_s = p->train_tokens_per_s_per_chip = p->mfu = NAN;
    p->time_to_train_s = p->usd_to_train = NAN;
    p->ttft_ms = p->tpot_ms = p->e2e_latency_ms = NAN;
    p->output_tokens_per_s = p->output_tokens_per_s_per_chip = p->total_tokens_per_s = NAN;
    p->tokens_per_s_per_user = NAN;
    p->s_per_image = p->images_per_s = p->images_per_s_per_chip = NAN;
    p->mem_per_device_gib = p->hbm_per_device_gib = NAN;
    p->bound = "";
    if (!sc->inst || (sc->phase == TB_PHASE_DENOISE ? !sc->darch : !sc->arch))
        return tb_err(err, errlen, "no model or target");
    per_inst = sc->inst->accel_count;
    if (sc->chips > 0) {
        p->chips = sc->chips;
        p->instances = sc->instances > 0 ? sc->instances : (sc->chips + per_inst - 1) / per_inst;
    } else {
        p->instances = sc->instances > 0 ? sc->instances : 1;
        p->chips = p->instances * per_inst;
    }
    if (p->chips > p->instances * per_inst)
        return tb_err(err, errlen, "%ld chips do not fit in %ld x %s (%ld chips each)", p->chips,
                      p->instances, sc->inst->instance, per_inst);
    if (sc->phase == TB_PHASE_TRAIN)
        return predict_train(m, sc, p, err, errlen);
    if (sc->phase == TB_PHASE_DENOISE)
        return predict_denoise(m, sc, p, err, errlen);
    if (sc->batch_max && sc->tp <= 0 && sc->dp <= 0)
        return predict_serving_layout(m, sc, p, err, errlen);
    return predict_inference(m, sc, p, err, errlen);
}

static const struct {
    const char *name;
    size_t off;
} PREDICTED[] = {
    {"train_tokens_per_s", offsetof(struct tb_prediction, train_tokens_per_s)},
    {"train_tokens_per_s_per_chip", offsetof(struct tb_prediction, train_tokens_per_s_per_chip)},
    {"step_time_s", offsetof(struct tb_prediction, step_time_s)},
    {"time_to_train_s", offsetof(struct tb_prediction, time_to_train_s)},
    {"usd_to_train", offsetof(struct tb_prediction, usd_to_train)},
    {"mfu", offsetof(struct tb_prediction, mfu)},
    {"ttft_ms", offsetof(struct tb_prediction, ttft_ms)},
    {"tpot_ms", offsetof(struct tb_prediction, tpot_ms)},
    {"e2e_latency_ms", offsetof(struct tb_prediction, e2e_latency_ms)},
    {"output_tokens_per_s", offsetof(struct tb_prediction, output_tokens_per_s)},
    {"output_tokens_per_s_per_chip", offsetof(struct tb_prediction, output_tokens_per_s_per_chip)},
    {"total_tokens_per_s", offsetof(struct tb_prediction, total_tokens_per_s)},
    {"tokens_per_s_per_user", offsetof(struct tb_prediction, tokens_per_s_per_user)},
    {"s_per_image", offsetof(struct tb_prediction, s_per_image)},
    {"images_per_s", offsetof(struct tb_prediction, images_per_s)},
    {"images_per_s_per_chip", offsetof(struct tb_prediction, images_per_s_per_chip)},
};

bool tb_prediction_has_metric(const char *metric)
{
    for (size_t i = 0; i < sizeof PREDICTED / sizeof PREDICTED[0]; i++)
        if (!strcmp(metric, PREDICTED[i].name))
            return true;
    return false;
}

double tb_prediction_metric(const struct tb_prediction *p, const char *metric)
{
    if (!p->fits)
        return NAN;
    for (size_t i = 0; i < sizeof PREDICTED / sizeof PREDICTED[0]; i++)
        if (!strcmp(metric, PREDICTED[i].name)) {
            double v; /* the field at offsetof: a double */
            memcpy(&v, (const char *)p + PREDICTED[i].off, sizeof v);
            return v;
        }
    return NAN;
}
