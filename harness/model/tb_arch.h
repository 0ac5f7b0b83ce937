/*
 * harness/model/tb_arch.h: a model architecture read from its catalogue file
 * (workloads/<family>/<name>.model). The file format is documented in
 * workloads/README.md: one "key = value" per line, '#' starts a comment.
 *
 * Shape legend used across the engine and the FLOP counts:
 *   L layers, C hidden (d_model), NH query heads, NKV key/value heads, HD = C/NH head
 *   dim, F FFN width, V vocabulary.
 * A mixture of experts (experts > 0): E routed experts of SwiGLU width FE per MoE layer,
 * k of them active per token, S shared experts of width FS every token passes through,
 * and a router (C x E); Lm = floor(L / moe_layer_step) MoE layers (every
 * moe_layer_step-th layer, counting from 1: Llama 4 Maverick's odd layers), the other
 * L - Lm layers dense with width F.
 */
#ifndef TB_ARCH_H
#define TB_ARCH_H

#include "tb_range.h"

#include <stdbool.h>
#include <stddef.h>

/* The numeric keys of a Llama model file and their ranges (README "Input ranges"). */
extern const struct tb_range TB_ARCH_RANGES[];

struct tb_arch {
    char name[64];        /* canonical name, e.g. "llama-3.1-8b" */
    char family[32];      /* "llama" */
    char source[512];     /* where the dimensions come from */
    char path[512];       /* file it was read from */
    int layers;           /* L */
    int hidden;           /* C */
    int heads;            /* NH */
    int kv_heads;         /* NKV; NH % NKV == 0 */
    int head_dim;         /* HD; C / NH unless the file says otherwise */
    int ffn;              /* F (SwiGLU inner width) */
    int vocab;            /* V */
    double rope_theta;    /* RoPE base */
    int max_context;      /* longest sequence the model was trained for */
    bool tied_embeddings; /* LM head shares the token embedding */
    double norm_eps;      /* RMSNorm epsilon */
    /* Llama 3.1 RoPE scaling ("llama3" type); factor 0 = none */
    double rope_scale_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_context;
    double published_params; /* parameter count the publisher states (0 = not given) */
    int full_layers;         /* layers before any tb_arch_truncate() */
    /* mixture of experts (README "The .model format"); experts 0: a dense model */
    int experts;           /* E, routed experts per MoE layer */
    int experts_active;    /* k, routed experts per token */
    int expert_ffn;        /* FE, a routed expert's SwiGLU width */
    int shared_experts;    /* S, experts every token passes through (0: none) */
    int shared_expert_ffn; /* FS, their width (default FE) */
    int moe_layer_step;    /* every moe_layer_step-th layer is MoE (default 1: all) */
};

/* Read one model file. Unknown keys, missing required keys and bad values fail with
 * "file: line N: field 'key': ..." in err. */
int tb_arch_load(struct tb_arch *a, const char *path, char *err, size_t errlen);

/* Find and load the model called name: a path when it ends in ".model", else
 * <datadir>/workloads/<any>/<name>.model (tb_arch_path). */
int tb_arch_find(struct tb_arch *a, const char *name, char *err, size_t errlen);

/* Whether name is a catalogue name: a letter or digit, then letters, digits and
 * . _ + @ - (no '/', no white space, shorter than struct tb_arch's name). */
bool tb_arch_name_ok(const char *name);
/* The catalogue file of name into out: name itself when it ends in ".model" (a file the
 * user gave; the loaders open only a regular file of at most TB_TEXT_FILE_MAX bytes),
 * else <datadir>/workloads/<any>/<name>.model, Llama or diffusion, for a name that
 * tb_arch_name_ok accepts ("bad model name '/etc/passwd' ..." otherwise). */
int tb_arch_path(const char *name, char *out, size_t len, char *err, size_t errlen);

/* Keep only the first n layers (a quick run of a big model's real layer shapes). The
 * name gets a suffix "@Ln" so results never pass for the full model. */
int tb_arch_truncate(struct tb_arch *a, int n, char *err, size_t errlen);

/* Parameter counts (in parameters, as doubles to avoid overflow at 405B). Per layer: a
 * dense layer's (attention, FFN of width F, two norms); a mixture of experts' layers
 * differ (tb_arch_params_total counts them). */
double tb_arch_params_per_layer(const struct tb_arch *a);
double tb_arch_params_embedding(const struct tb_arch *a); /* token embedding V*C */
double tb_arch_params_lm_head(const struct tb_arch *a);   /* 0 when tied */
double tb_arch_params_total(const struct tb_arch *a);
/* Parameters that take part in matrix products: every layer's weight matrices (all
 * experts of a mixture of experts, and its router) plus the LM head (tied or not);
 * embeddings lookups and norms excluded. */
double tb_arch_params_matmul(const struct tb_arch *a);
/* Parameters of LoRA adapters of rank r (Hu et al. 2021, arXiv 2106.09685) on the
 * attention's projections, as MLPerf's llama2_70b_lora trains them (NeMo's
 * target_modules linear_qkv and linear_proj): per layer, A (r x in) and B (out x r) on
 * the fused QKV projection (in C, out (NH + 2 NKV) HD) and on the output projection (in
 * NH HD, out C), r (in + out) each. */
double tb_arch_params_lora(const struct tb_arch *a, long r);

/* ---- mixture of experts (all 0, or the dense counts, for a dense model) ---- */

/* Lm: the layers whose FFN is a mixture of experts. */
int tb_arch_moe_layers(const struct tb_arch *a);
/* One routed expert of one layer: 3 C FE. */
double tb_arch_params_expert(const struct tb_arch *a);
/* All routed experts' parameters: Lm E 3 C FE (0 for a dense model). */
double tb_arch_params_experts(const struct tb_arch *a);
/* The matrix-product parameters one token uses (tb_arch_params_matmul's, with k of the E
 * routed experts of each MoE layer): what FLOPs count. A dense model: params_matmul. */
double tb_arch_params_active(const struct tb_arch *a);
/* Routed experts a layer's batch of n tokens touches, each choosing k of E at random:
 * E (1 - (1 - k/E)^n), the expected number of distinct experts hit (k at n = 1, all E
 * as n grows); 0 for a dense model. */
double tb_arch_experts_touched(const struct tb_arch *a, double n);
/* The matrix-product parameters a step over n tokens reads: tb_arch_params_active with
 * the routed experts the n tokens touch in place of k. A dense model: params_matmul. */
double tb_arch_params_touched(const struct tb_arch *a, double n);
/* The SwiGLU width a token's FFN computes, averaged over the layers: F for a dense
 * model; k FE + S FS in the MoE layers. */
double tb_arch_ffn_active(const struct tb_arch *a);

/* List the catalogue: calls fn(path, ctx) for every *.model under
 * <datadir>/workloads, in sorted order. Returns the number found or -1. */
int tb_arch_list(void (*fn)(const char *path, void *ctx), void *ctx, char *err, size_t errlen);

#endif
