/*
 * harness/model/tb_arch.h: a model architecture read from its catalogue file
 * (workloads/<family>/<name>.model). The file format is documented in
 * workloads/README.md: one "key = value" per line, '#' starts a comment.
 *
 * Shape legend used across the engine and the FLOP counts:
 *   L layers, C hidden (d_model), NH query heads, NKV key/value heads, HD = C/NH head
 *   dim, F FFN width, V vocabulary.
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

/* Parameter counts (in parameters, as doubles to avoid overflow at 405B). */
double tb_arch_params_per_layer(const struct tb_arch *a);
double tb_arch_params_embedding(const struct tb_arch *a); /* token embedding V*C */
double tb_arch_params_lm_head(const struct tb_arch *a);   /* 0 when tied */
double tb_arch_params_total(const struct tb_arch *a);
/* Parameters that take part in matrix products per token: every layer's weight
 * matrices plus the LM head (tied or not); embeddings lookups and norms excluded. */
double tb_arch_params_matmul(const struct tb_arch *a);
/* Parameters of LoRA adapters of rank r (Hu et al. 2021, arXiv 2106.09685) on the
 * attention's projections, as MLPerf's llama2_70b_lora trains them (NeMo's
 * target_modules linear_qkv and linear_proj): per layer, A (r x in) and B (out x r) on
 * the fused QKV projection (in C, out (NH + 2 NKV) HD) and on the output projection (in
 * NH HD, out C), r (in + out) each. */
double tb_arch_params_lora(const struct tb_arch *a, long r);

/* List the catalogue: calls fn(path, ctx) for every *.model under
 * <datadir>/workloads, in sorted order. Returns the number found or -1. */
int tb_arch_list(void (*fn)(const char *path, void *ctx), void *ctx, char *err, size_t errlen);

#endif
