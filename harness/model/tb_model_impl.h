/*
 * harness/model/tb_model_impl.h: what the performance model's parts share (private to
 * harness/model/). tb_model.c loads the efficiency table, describes one device of a
 * layout and routes a scenario to its phase: tb_model_serve.c (prefill, decode,
 * serving regimes and their layouts), tb_model_train.c (training and its layout
 * search), tb_model_denoise.c (diffusion).
 */
#ifndef TB_MODEL_IMPL_H
#define TB_MODEL_IMPL_H

#include "tb_model.h"
#include "tb_regime.h"

#include <stdbool.h>
#include <stddef.h>

/* What one device (a chip, or 1/k of one) offers, with the precision's byte sizes. */
struct dev {
    const struct tb_arch *a;
    const struct tb_model_eff *e;
    double peak;        /* FLOP/s of the precision, per device */
    double bf16_peak;   /* FLOP/s in bf16 per device (attention runs in 16-bit) */
    double attn_peak;   /* FLOP/s per device of serving's attention products (QK^T, AV):
                           the KV cache's format, fp8 for an 8-bit cache (fp8 and fp4
                           checkpoints), else bf16 */
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
    /* serving's terms (tb_model_serve.c; zero from tb_model_dev_init): speculative
     * decoding, spec_q query tokens per sequence a decode step verifies (spec_len + 1)
     * emitting spec_accept on average, the draft's forwards on the device draft
     * describes; prefix caching, the share of a prompt's tokens found cached */
    double spec_accept; /* 0: no speculative decoding */
    double spec_q;
    const struct dev *draft; /* borrowed: the draft (a model or a one-layer head) */
    double prefix_hit;
    /* a mixture of experts' layout (tb_model_dev_init: ep 1, etp 0 = tp, eg 0 = tp):
     * the routed experts split over ep devices, each expert tensor-parallel over etp, in
     * an expert group of eg = ep x etp devices: the tensor-parallel group (ep <= tp), or
     * the whole layout tp x dp, attention data-parallel (ep > tp) */
    long ep, etp, eg;
};

/* Fill *d for scenario sc with k devices per chip: the precision's peaks, bytes and
 * efficiency, the chip's memory and links. 0, or -1 with a reason (a precision the
 * chip lacks). */
int tb_model_dev_init(struct dev *d, const struct tb_model *m, const struct tb_scenario *sc, long k,
                      char *err, size_t errlen);
/* The devices a given layout spans, tp x pp x dp (each 0 taken as 1), into *out: 0, or
 * -1 with "tp x pp x dp = ... overflows" when the product does not fit a long (a
 * layout no model question asks; the scenario parser refuses its factors first). */
int tb_model_layout_devices(const struct tb_scenario *sc, long *out, char *err, size_t errlen);
/* Efficiency of the layer GEMMs with M rows when tp narrows each to hidden/tp columns. */
double tb_model_gemm_eff(const struct dev *d, double M, long tp);
/* Factor on the matrix-product parameters when tp does not divide the heads. */
double tb_model_head_pad(const struct tb_arch *a, long tp);
/* Latency of one collective over c chips (collective_us plus collective_hop_us per step
 * of the fabric's algorithm). */
double tb_model_collective_latency_s(const struct tb_model_eff *e, long c);
/* Ring all-reduce of S bytes over g devices spread over `span` devices of the layout. */
double tb_model_allreduce_s(const struct dev *d, double S, long g, long span);
/* All-to-all where each of g devices (spread over `span`) sends S bytes in all, a share
 * to every other: a mixture of experts' dispatch of tokens to their experts' devices, or
 * the combine back; nccl-tests' bus factor (g-1)/g. */
double tb_model_alltoall_s(const struct dev *d, double S, long g, long span);
/* The expert layout of tp x dp devices with ep given (0 taken as 1) into d->ep, d->etp,
 * d->eg: ep <= tp, a divisor of tp (experts within each tensor-parallel group); ep > tp,
 * a divisor of tp x dp (one expert group over the layout, attention data-parallel).
 * ep above the experts, or ep > 1 for a dense model, is refused. 0, or -1 with why. */
int tb_model_expert_layout(struct dev *d, long tp, long dp, long ep, char *err, size_t errlen);

/* Training's activation recomputation: none, selective (the cheap element-wise
 * operations' outputs dropped and redone), full (each layer's forward redone). */
enum { RC_NONE, RC_SELECTIVE, RC_FULL, RC_KINDS };
/* Activation bytes a device keeps for the backward pass: M tokens per micro-batch, tp
 * tensor-parallel devices (sequence parallel), `layers` layers on the device, `inflight`
 * micro-batches in flight, recomputation rc; lora: LoRA fine-tuning (frozen weights keep
 * no inputs for weight gradients). */
double tb_model_train_act_bytes(const struct tb_arch *a, int rc, bool lora, double M, long tp,
                                double layers, double inflight);

/* The phases: each fills *p (set up by tb_model_predict: chips, instances, NANs). */
int tb_model_predict_inference(const struct tb_model *m, const struct tb_scenario *sc,
                               struct tb_prediction *p, char *err, size_t errlen);
int tb_model_predict_serving_layout(const struct tb_model *m, const struct tb_scenario *sc,
                                    struct tb_prediction *p, char *err, size_t errlen);
int tb_model_predict_train(const struct tb_model *m, const struct tb_scenario *sc,
                           struct tb_prediction *p, char *err, size_t errlen);
int tb_model_predict_denoise(const struct tb_model *m, const struct tb_scenario *sc,
                             struct tb_prediction *p, char *err, size_t errlen);
/* Training a diffusion model's denoiser (sc->darch; tb_model_denoise.c). */
int tb_model_predict_dtrain(const struct tb_model *m, const struct tb_scenario *sc,
                            struct tb_prediction *p, char *err, size_t errlen);
/* usd_to_train of p->time_to_train_s at the target's price (m's region and purchase
 * model): p->usd_to_train set and priced ("; usd_to_train at ...") written, or
 * p->price_why saying why not (priced ""). */
void tb_model_price_training(const struct tb_model *m, const struct tb_scenario *sc,
                             struct tb_prediction *p, char *priced, size_t len);

/* ---- serving regimes (tb_model_regime.c) ---- */

/* Whether sc asks for a serving regime (concurrency, request_rate, scenario or dataset). */
bool tb_model_regime_wanted(const struct tb_scenario *sc);
/* Predict sc's regime over one replica's step costs c (p set up by the phase with the
 * layout: chips, dp); layout names it for the assumptions. 0 (check p->fits: a
 * saturated rate is p->fits false with the reason), or -1 with a reason. */
int tb_model_regime(const struct tb_model *m, const struct tb_scenario *sc,
                    const struct tb_regime_costs *c, const char *layout, struct tb_prediction *p,
                    char *err, size_t errlen);
/* What no layout changes: the dataset is known and has its lengths, MLPerf has limits
 * for the model at the scenario. 0, or -1 with the reason. */
int tb_model_regime_check(const struct tb_model *m, const struct tb_scenario *sc, char *err,
                          size_t errlen);
/* A diffusion dataset's steps and resolution, where *steps and *res are 0. */
/* Load stacks.csv from dir (efficiency.csv's folder) into m->stacks: an absent file is
 * no stacks. Every field checked ("file: line N: field 'x': ..."). 0 or -1. */
int tb_model_stacks_load(struct tb_model *m, const char *dir, char *err, size_t errlen);
/* predict(m, sc, ...) under sc->software: the chip's efficiency scaled to the stack's
 * speed (tb_model.h, struct tb_model_stack), the stack said first in the assumptions.
 * A software with no row for the chip's family and phase is an error naming those it
 * has. */
int tb_model_predict_stack(const struct tb_model *m, const struct tb_scenario *sc,
                           struct tb_prediction *p, char *err, size_t errlen,
                           int (*predict)(const struct tb_model *m, const struct tb_scenario *sc,
                                          struct tb_prediction *p, char *err, size_t errlen));
int tb_model_dataset_diffusion(const struct tb_model *m, const char *name, long *steps, long *res,
                               char *err, size_t errlen);

/* Start-up, after any phase's prediction (p filled and fitting): weight_load_s, the
 * weights each instance's devices hold read from storage at the instance's published
 * read bandwidth (pricing/storage.csv), and compile_s, a published compile time for the
 * chip, model and phase (pricing/compile.csv). Either is NAN with its reason in
 * p->weight_load_why or p->compile_why where no figure is published. */
void tb_model_startup(const struct tb_model *m, const struct tb_scenario *sc,
                      struct tb_prediction *p);

#endif
