/*
 * harness/model/tb_model.h: the analytic performance model. Predicts Llama training and
 * inference on any catalogued target (pricing/instances.csv, pricing/chips.csv) from
 * the workload's shapes (tb_arch.h, FLOPs and bytes from tb_flops.h), a roofline per
 * device with shape-dependent efficiency, the collectives a parallel layout implies,
 * and a memory-capacity check. The efficiency figures are data, one row per chip in
 * pricing/efficiency.csv, each with how it was chosen (docs: pricing/README.md).
 *
 * Devices: the unit of parallelism. A scenario's tp x pp x dp counts either chips or,
 * on Trainium and Inferentia, NeuronCores (logical cores: 2 per Trainium1/Inferentia2
 * chip, 4 per Trainium2/3 chip at LNC=2) as the Neuron tools count them. When the
 * product is k times the chips, each device is 1/k of a chip: 1/k of its peak FLOP/s,
 * HBM capacity and bandwidth.
 *
 * Units inside: seconds, bytes, FLOP and FLOP/s. Ownership: a struct tb_model owns its
 * efficiency table and borrows the pricing tables (they must outlive it). Predictions
 * are pure functions of their inputs: thread-safe after load.
 */
#ifndef TB_MODEL_H
#define TB_MODEL_H

#include "tb_arch.h"
#include "tb_csv.h"
#include "tb_darch.h"
#include "tb_pricing.h"
#include "tb_range.h"
#include "tb_vocab.h"

#include <stdbool.h>
#include <stddef.h>

#define TB_MODEL_VERSION "trnbench-model 1.0"

/* Efficiency figures of one chip (pricing/efficiency.csv). */
struct tb_model_eff {
    const char *chip;    /* key into chips.csv */
    const char *family;  /* "neuron-v2", "neuron-v3", "nvidia" */
    double gemm_eff;     /* fraction of dense peak a large GEMM reaches */
    double gemm_eff_fp8; /* the same for fp8 (fp8 kernels reach less of their peak) */
    double gemm_eff_fp4; /* the same for fp4 (NVFP4, MXFP4); NAN where the chip has no
                            fp4 peak in chips.csv (the column is empty there) */
    double gemm_m_half;  /* tokens (rows) at which a GEMM reaches half of gemm_eff */
    double gemm_n_half;  /* columns per device (hidden / tp) at which it reaches half */
    double mem_eff;      /* fraction of HBM bandwidth streaming the weights reaches */
    double kv_eff;       /* fraction of HBM bandwidth decode attention reaches reading
                            the KV cache (paged, per-sequence gathers) */
    double link_eff;     /* fraction of the chip-to-chip link a collective reaches */
    double net_eff;      /* fraction of the instance network (EFA) a collective reaches */
    double collective_s; /* latency of one collective on the intra-node link */
    double layer_s;      /* fixed cost per layer per forward pass (launch, sync) */
    double request_s;    /* host work per request per decode step (sampling, scheduling) */
    double train_eff;    /* training: fraction of gemm_eff a full step keeps (non-GEMM
                            ops, recomputation, framework) */
    double dp_overlap;   /* fraction of data-parallel traffic hidden behind backward */
    double tp_overlap;   /* training: fraction of tensor-parallel traffic hidden */
    double conv_eff;     /* convolutions (UNet, VAE) run at this fraction of gemm_eff */
    double hbm_usable;   /* fraction of HBM usable for weights, state and cache */
    long max_batch;      /* largest decode batch the serving stacks run */
    const char *source;  /* how the figures were chosen */
    long line;

    /* fixed cost per layer of a prompt's forward (prefill_layer_us): kernels launched one
     * by one, not replayed from a captured graph as a decode step's are */
    double prefill_layer_s;
    /* the shortest prompt a prefill runs (prefill_min_tokens): a shorter one is padded to
     * it (the Neuron stacks' smallest context-encoding bucket); 0: no padding */
    double prefill_min_tokens;
    /* the least time a prefill call takes (prefill_floor_us): a short prompt's TTFT does
     * not fall below it however small the model, the graph's work running within it
     * (transformers-neuronx's context encoding: 25-30 ms on Inferentia2 and 13-17 ms on
     * Trainium1 for a 128-token prompt of a 7B, 8B or 13B alike); 0: no floor */
    double prefill_floor_s;
    /* a collective's latency beyond collective_s, per step across chips
     * (collective_hop_us), and the steps a group of c chips takes (fabric): "ring",
     * 2(c-1) (point-to-point links, Trainium1/2's torus), or "switch", 2 ceil(log2 c)
     * (every chip one switch away: recursive halving and doubling; NVSwitch, Trainium3's
     * NeuronSwitch) */
    double collective_hop_s;
    bool fabric_switch;
    /* the fraction of a decode step's attention (reading the KV cache) that overlaps the
     * weights' matrix products (attn_overlap): 1, one roofline over the whole step (a
     * compiled graph); 0, the attention kernels and the GEMMs one after another, each at
     * its own roofline (a GPU's launched kernels) */
    double attn_overlap;
    /* bytes per weight of the embedding and the LM head in a narrower (fp8, fp4)
     * checkpoint (head_bytes): 2 where the stack leaves them 16-bit, 0 where they take
     * the layers' format */
    double head_bytes;
    /* fixed cost of one forward step, independent of its layers and its batch
     * (step_us): the captured graph's launch, the sampler's kernels over the vocabulary,
     * the sampled tokens' copy to the host and the synchronisation on it */
    double step_s;
    /* the fraction of the host's work per request (request_us) that runs while the device
     * computes the step (request_overlap): 1, an overlap scheduler prepares step n+1 and
     * processes step n-1's tokens while step n runs, so only host work beyond the device's
     * step costs time; 0, the host's work and the device's step one after another */
    double request_overlap;
    /* the share of a static batch's output positions its decode attention reads beyond
     * the ones filled (kv_bucket): 1, a compiled graph's attention spans the KV cache of
     * the whole sequence-length bucket (prompt + output) at every step, so a step costs
     * the same at position 200 as at 8000; 0, it reads the positions filled (a paged
     * cache), on average the prompt and half the output */
    double kv_bucket;
    /* how a decode step's attention reads the KV cache (kv_repeat): 0, once per KV head
     * the device stores (a GQA kernel: TensorRT-LLM's XQA, FlashInfer); 1, once per query
     * head on the device (the cache repeated to the query heads before Q.K:
     * transformers-neuronx's repeat_kv, as NxD Inference's plain path; its fused
     * token-generation kernel reads per KV head), the heads padded to tp */
    double kv_repeat;
    /* training a diffusion transformer (tb_model_predict_dtrain): the share of train_eff
     * its step keeps (adaLN modulation, gates, q/k norms, rotary and the FP8 casts
     * between short products); 1 where the column is empty */
    double dit_train_eff;
};

/* A software stack's figure (pricing/stacks.csv; README "Software stacks"): how fast
 * the stack runs a family's work of some phases against the family's reference stack,
 * the one its efficiency figures were chosen on (speed 1). A prediction under a stack
 * of speed s has the chip's fractions of peak times s (at most 1) and its fixed costs
 * over s; links and networks are the hardware's and stay. */
struct tb_model_stack {
    const char *software;    /* "vllm", "tensorrt-llm@1.0": a name, optionally @version */
    const char *family;      /* efficiency family ("nvidia", "neuron-v3") */
    const char *phases_name; /* "serve" (prefill, decode, serve), "train", "denoise" */
    unsigned phases;         /* TB_PHASE_BIT of each */
    double speed;            /* times the reference stack's; 1 for the reference */
    bool reference;          /* status reference: the stack the figures were chosen on */
    const char *rows;        /* the published rows it was chosen on ("" for a reference) */
    const char *chips;       /* the family's chips it holds for, space-separated chips.csv
                                keys (the chips its rows ran on); "": every chip */
    long line;
};

struct tb_model {
    const struct tb_pricing *pricing; /* borrowed */
    const char *region;               /* borrowed: usd_to_train's prices are this region's
                                         (NULL, as after tb_model_load: us-east-1) */
    const char *purchase;             /* borrowed: and this purchase model's (NULL:
                                         on-demand); tb_pricing_check_choice checks both */
    struct tb_csv_table csv;          /* owned */
    struct tb_model_eff *eff;         /* owned: neff rows */
    size_t neff;
    struct tb_csv_table datasets; /* owned: workloads/datasets.csv (empty if absent) */
    struct tb_csv_table limits;   /* owned: workloads/mlperf_limits.csv (likewise) */
    /* start-up figures (tb_model_startup.c), each optional (an empty table when the
     * prices folder has no such file): storage.csv, the storage-to-host read bandwidth
     * per instance type; compile.csv, published compile times per chip, model and phase */
    struct tb_csv_table storage, compile; /* owned */
    struct tb_csv_table user_csv;         /* owned: the --efficiency file whose rows
                                             replaced ours (empty when none) */
    struct tb_csv_table stacks_csv;       /* owned: stacks.csv beside efficiency.csv
                                             (empty if absent) */
    struct tb_model_stack *stacks;        /* owned: nstacks rows of it */
    size_t nstacks;
};

/* The figures of efficiency.csv and their ranges (README.md, "Input ranges"). */
extern const struct tb_range TB_EFFICIENCY_RANGES[];
/* ... of storage.csv, compile.csv, workloads/datasets.csv and mlperf_limits.csv */
extern const struct tb_range TB_STORAGE_RANGES[];
extern const struct tb_range TB_COMPILE_RANGES[];
extern const struct tb_range TB_DATASETS_RANGES[];
extern const struct tb_range TB_LIMITS_RANGES[];
extern const struct tb_range TB_STACKS_RANGES[];

/* Load dir/efficiency.csv (dir NULL: the data folder's pricing/) for the chips of
 * pricing. Every field checked; a chip not in chips.csv is an error ("file: line N:
 * field 'chip': ..."). Returns 0 or -1 with a message. */
int tb_model_load(struct tb_model *m, const struct tb_pricing *pricing, const char *dir, char *err,
                  size_t errlen);
void tb_model_release(struct tb_model *m);
/* Replace m's efficiency rows by those of a user's file in the same format
 * (`--efficiency FILE`, e.g. `trnbench calibrate`'s output): each of its rows, checked as
 * tb_model_load checks ours, takes the place of ours for the same chip; the others stay.
 * A chip without a row of ours, or twice, is an error ("file: line N: field 'chip':
 * ..."), and nothing is replaced. Once per model. 0, or -1 with a message. */
int tb_model_efficiency_overlay(struct tb_model *m, const char *path, char *err, size_t errlen);

/* One question to the model. Zero means "not given" for the integers. */
struct tb_scenario {
    const struct tb_arch *arch;     /* borrowed: a Llama (NULL for denoise) */
    const struct tb_darch *darch;   /* borrowed: a diffusion model (denoise only) */
    long steps, resolution;         /* denoise: 0 = the model's default */
    const struct tb_instance *inst; /* borrowed: the target */
    enum tb_phase phase;
    const char *precision; /* one of TB_MODEL_PRECISIONS (NULL or "": bf16) */
    long instances;        /* 0: 1, or what chips needs */
    long chips;            /* 0: all chips of the instances */
    long seq_in, seq_out;  /* train: seq_in is the sequence length */
    long batch;            /* train: global batch (sequences; 0: chosen);
                              inference: requests in flight; 0 with
                              batch_max: the throughput-maximising load */
    bool batch_max;
    long tp, pp, dp;                     /* 0: chosen; when tp x pp x dp is a divisor of the
                                            devices, the rest is context parallelism */
    long ep;                             /* expert parallelism (a mixture of experts): the
                                            routed experts split over ep devices, each
                                            expert tensor-parallel over the rest of its
                                            group (README "The performance model"); 0:
                                            chosen (1 for a dense model) */
    double ttft_limit_ms, tpot_limit_ms; /* 0: none (batch_max only) */
    double train_tokens;                 /* time and cost to train this many tokens; 0: none */
    long lora_rank; /* train: LoRA fine-tuning, adapters of this rank on the attention's
                       projections over frozen weights (tb_arch_params_lora); 0: full
                       training */
    /* serving regimes (README "The performance model"; at most one of batch, concurrency,
     * request_rate and scenario) */
    long concurrency;     /* closed loop: N requests in flight, continuous batching, each
                             replaced as it finishes (steady state); 0: none */
    double request_rate;  /* open loop: requests per second arriving (Poisson); 0: none */
    const char *scenario; /* MLPerf: "offline", "server", "interactive"; NULL or "": none */
    const char *dataset;  /* a named distribution of prompt and output lengths in place of
                             seq_in and seq_out; NULL or "": the fixed lengths */
    /* speculative decoding (README "The performance model"): each decode step of the
     * target verifies spec_len drafted tokens and its own (spec_len + 1 query tokens per
     * sequence: their compute, the weights and the KV cache read once) and emits
     * spec_accept tokens on average (the acceptance length vendors publish, 1 to
     * spec_len + 1); the draft proposes them by spec_len forwards of draft (a catalogue
     * model on the same devices) or, with draft NULL, of a head one layer of the
     * target's shape (EAGLE's) */
    double spec_accept;          /* 0: no speculative decoding */
    long spec_len;               /* 0: ceil(spec_accept) */
    const struct tb_arch *draft; /* borrowed: the draft model; NULL: a one-layer head */
    /* prefix caching: the share of each prompt's tokens whose KV cache is found cached
     * (0 to 1); a prefill computes the others only, their attention over the whole
     * prompt, the cached prefix's KV read; 0: none */
    double prefix_hit;
    /* the software stack that runs it (pricing/stacks.csv's key, "vllm" or
     * "tensorrt-llm@1.0"; a version without a row of its own takes its name's row); NULL
     * or "": the family's reference stack, the one the efficiency figures were chosen
     * on */
    const char *software;
};

/* What the model predicts; fields that do not apply are NAN. */
struct tb_prediction {
    bool fits; /* false: does not fit (why says so), nothing predicted */
    char why[512];
    long devices, devices_per_chip, chips, instances;
    long tp, pp, dp, cp, micro_batch, batch; /* the layout and load used (cp: context
                                                parallel, sequences split over cp devices) */
    long ep, etp;                            /* expert parallel and the experts' own tensor
                                                parallel (1, tp for a dense model) */
    bool recompute;                          /* training: full activation recomputation */
    const char *recompute_kind;              /* training: "no", "selective" or "full" */
    long virtual_stages;                     /* training: interleaved stages per device (1:
                                                plain 1F1B) */
    double bubble;                           /* training: the pipeline bubble, a fraction of
                                                the step's compute */
    double mem_per_device_gib, hbm_per_device_gib;
    /* training */
    double step_time_s, train_tokens_per_s, train_tokens_per_s_per_chip, mfu;
    double time_to_train_s; /* train_tokens / train_tokens_per_s + eval_s */
    double eval_s;          /* the evaluations time_to_train_s includes (MLPerf's
                               convention for its Llama benchmarks; 0 for other models) */
    double usd_to_train;    /* time_to_train_s x the price of the instances (the model's
                               region and purchase model; us-east-1 on-demand unless set),
                               when the price table has one; else NAN */
    char price_why[512];    /* why usd_to_train is NAN ("" when it is not) */
    /* inference */
    double ttft_ms, tpot_ms, e2e_latency_ms;
    double output_tokens_per_s, output_tokens_per_s_per_chip, total_tokens_per_s;
    double tokens_per_s_per_user;
    /* diffusion */
    double s_per_image, images_per_s, images_per_s_per_chip;
    double ms_per_step; /* one denoising step (the denoiser's passes of one step) */
    /* start-up, any phase: reading the weights from storage into device memory, and
     * compiling the graphs (Neuron, torch.compile, TensorRT engines) */
    double weight_load_s, compile_s;
    char weight_load_why[256], compile_why[256]; /* why each is NAN ("" when it is not) */
    long steps, resolution;                      /* denoise: the steps and image size used */
    /* what bounds it: "compute", "memory", "communication", "overhead" */
    const char *bound;
    char assumptions[1024]; /* efficiency figures and choices, for the report */
    long layouts_evaluated; /* training search: layouts looked at */
    double rate_max;        /* an open loop refused as saturated: the most requests/s the
                               target sustains (the serving search: on its best layout); 0
                               otherwise */
};

/* The precisions a scenario takes, the vendors' names beside the generic ones: fp8
 * (e4m3 with per-tensor scales) and cfp8 (the Neuron SDK's name for it, AWS chips only);
 * mxfp8 (OCP MX: one 8-bit power-of-two scale per 32 values); fp4 (NVFP4 on NVIDIA,
 * MXFP4 on Trainium3), nvfp4 (e2m1, one e4m3 scale per 16 values) and mxfp4 (e2m1, one
 * 8-bit scale per 32); int8 weight-only. Which chip has which: tb_model_predict refuses
 * the rest with the reason. */
#define TB_MODEL_PRECISIONS "bf16, fp16, fp8, cfp8, mxfp8, fp4, nvfp4, mxfp4, int8, fp32"

/* Whether name is one of TB_MODEL_PRECISIONS (exact, lower case). */
bool tb_model_precision_known(const char *name);

/* Predict sc. Returns 0 when the scenario could be evaluated (check p->fits), or -1
 * with a reason in err when it is malformed (e.g. chips more than the instances hold,
 * a precision the chip has no peak for, a layout that does not divide the chips). */
int tb_model_predict(const struct tb_model *m, const struct tb_scenario *sc,
                     struct tb_prediction *p, char *err, size_t errlen);

/* The value of a metric (scenario names: ttft_ms, output_tokens_per_s, mfu, ...) from
 * a prediction, or NAN when the prediction has no such value. */
double tb_prediction_metric(const struct tb_prediction *p, const char *metric);
/* Whether a prediction has the metric at all (its unit: tb_vocab.h). */
bool tb_prediction_has_metric(const char *metric);

/* Load datasets.csv and mlperf_limits.csv from dir (NULL: the data folder's
 * workloads/) in place of those tb_model_load read; a file that is absent leaves its table
 * empty. Every field checked ("file: line N: field 'x': ..."). 0 or -1 with a message. */
int tb_model_datasets_load(struct tb_model *m, const char *dir, char *err, size_t errlen);
/* Whether dataset name can be predicted at: 0 yes, 1 it lacks lengths (status none: why
 * gives the file, line and the notes' reason), -1 unknown (why lists the known names). */
int tb_model_dataset_status(const struct tb_model *m, const char *name, char *why, size_t whylen);
/* MLPerf's set of prompts for a catalogue model (openorca for llama-2-70b, cnn-dailymail
 * for llama-3.1-8b, mlperf-llama3.1-405b for llama-3.1-405b), NULL when MLPerf has no
 * LLM benchmark of it: a scenario row with neither lengths nor a dataset runs it. */
const char *tb_model_mlperf_dataset(const struct tb_model *m, const char *model);

/* The stack software names for efficiency family `family`, chip (a chips.csv key; NULL:
 * any) and phase ph: 0 and *out (*by_name: software's version has no row for them and
 * its nearest listed release's, or its name's, stands in), or -1 with why ("unknown
 * software 'x' ...; stacks.csv has: a (the reference) b"). */
int tb_model_stack_find(const struct tb_model *m, const char *software, const char *family,
                        const char *chip, enum tb_phase ph, const struct tb_model_stack **out,
                        bool *by_name, char *why, size_t whylen);
/* Whether k has a stack key's form: a-z, 0-9 and '-', then optionally '@' and a
 * version of a-z, 0-9, '.' and '-'. */
bool tb_model_software_name_ok(const char *k);
/* The reference stack of family and phase, or NULL when stacks.csv names none. */
const struct tb_model_stack *tb_model_stack_reference(const struct tb_model *m, const char *family,
                                                      enum tb_phase ph);

/* Efficiency row of a chip, or NULL. */
const struct tb_model_eff *tb_model_eff_of(const struct tb_model *m, const char *chip);

#endif
