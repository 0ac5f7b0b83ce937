/*
 * harness/endpoint/tb_recipe.h: built-in recipes that start a vendor's server for a
 * catalogue model, so that a serving run measures the same server software on
 * Trainium and on GPUs with the same client (`serve ... recipe=vllm`).
 *
 * Recipe vllm: `vllm serve` on a model folder written from the .model file, with
 * random weights, so nothing is downloaded (on GPUs vLLM's --load-format dummy; on
 * Neuron, where the vllm-neuron plugin ignores it and loads the folder's safetensors,
 * model*.safetensors drawn from the seed: tb_safetensors.h), or on a real checkpoint
 * (--model-path DIR, tb_recipe_check_checkpoint):
 *   config.json             a Hugging Face LlamaConfig of the catalogue dimensions
 *                           (layers, widths, heads, vocabulary, RoPE and its llama3
 *                           scaling, tied embeddings), bf16
 *   tokenizer.json          a synthetic word-level tokenizer of exactly the model's
 *   tokenizer_config.json   vocabulary ("t0" .. "t<V-1>"), so token-id prompts map
 *                           one to one and a text prompt of N words is N tokens
 * The server's flags: --served-model-name, --load-format dummy (GPUs' random
 * weights only), --dtype bfloat16,
 * --tensor-parallel-size, --max-num-seqs, --max-model-len, --max-num-batched-tokens
 * (always: tb_recipe_settle), --no-enable-prefix-caching (or --enable-prefix-caching
 * when asked: vLLM and vllm-neuron cache prefixes by default, and a benchmark of
 * random prompts should measure the same thing on every vendor), --seed, the
 * loopback host and port.
 *
 * On a Neuron machine, by the plugin installed (tb_recipe_plugin_of):
 *   current   vllm-neuron 0.21+ (Neuron 2.31+; Trn2 and Trn3 only): the prefill and
 *             decode buckets as --additional-config '{"neuron_config":
 *             {"num_batched_tokens_buckets": [...], "num_seqs_buckets": [...]}}',
 *             completed or refused by the plugin's own rules first (tb_recipe_settle);
 *             the inherited NEURON_COMPILED_ARTIFACTS and NEURON_LIBTORCH_REMOTE_CACHE
 *             removed from its environment, so a cold start compiles.
 *   nxdi      vllm-neuron 0.x on NxD Inference (Neuron SDK <= 2.29; Inf2, Trn1, Trn2):
 *             the prefill buckets as '{"override_neuron_config": {"enable_bucketing":
 *             true, "context_encoding_buckets": [...]}}' and NEURON_COMPILED_ARTIFACTS
 *             a folder of the run (that plugin deletes its artifacts before every load
 *             unless the variable is set, so a warm start would compile again).
 * Both get the compile and execute timeouts from the server's readiness timeout:
 * VLLM_NEURON_COMPILATION_TIMEOUT, NEURON_LIBTORCH_COMPILATION_TIMEOUT (the compile
 * cache's lock wait, 600 s by default) and VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS, so a
 * long cold compile is not cut short inside vLLM while trnbench still waits.
 * Its environment: VLLM_CACHE_ROOT in the run's folder (vLLM's and vllm-neuron's
 * compile cache: $VLLM_CACHE_ROOT/neuron/compile_cache on Neuron), emptied before a
 * cold start and kept for the warm one, so server_start_s - server_warm_start_s is the
 * compile time; HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1.
 *
 * Sources (aws-neuron-sdk at 81ce03ae, August 2026): vllm-neuron/docs/guides/
 * reference-configuration.md, docs/design/vllm/neuron-scheduler.md,
 * docs/design/compilation/compilation_cache.md, docs/model-recipes/
 * qwen3-embedding-8b.md, docs/getting-started/quickstart-online-serving.md,
 * libraries/vllm-neuron/neuron-inference-overview.rst and libraries/nxd-inference/
 * developer_guides/vllm-user-guide-v1.rst; the plugin's vllm_neuron/utils/
 * bucket_utils.py (validate_num_batched_tokens_buckets, validate_num_seqs_buckets,
 * resolve_segmented_prefill_config, validate_kv_segment_size_buckets) and
 * vllm_neuron/vllm/worker/neuron_model_runner.py (vllm-project/vllm-neuron 9fc042ea;
 * bucket_utils.py read in the fork AWShtokoyo/vllm-neuron 01c89e38); the NxDI-based
 * plugin's vllm_neuron/worker/neuronx_distributed_model_loader.py
 * (vllm-project/vllm-neuron a5ef7c88, release 0.2).
 *
 * Ownership: a struct tb_recipe_cmd holds its argv and env strings itself; nothing to
 * release.
 */
#ifndef TB_RECIPE_H
#define TB_RECIPE_H

#include "tb_arch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TB_RECIPE_MAX_BUCKETS 16

/* Which vLLM plugin serves on a Neuron machine. */
enum tb_recipe_plugin {
    TB_RECIPE_PLUGIN_CURRENT, /* vllm-neuron 0.21+: neuron_config (also: not found) */
    TB_RECIPE_PLUGIN_NXDI,    /* vllm-neuron 0.x on NxD Inference: override_neuron_config */
};

/* The largest max_model_len the current plugin prefills in one shot; above it,
 * max_num_batched_tokens must be a segment size (bucket_utils.py
 * MAX_MODEL_LEN_SINGLE_SHOT). */
#define TB_RECIPE_SINGLE_SHOT_MAX 16384

struct tb_recipe_opts {
    int tp;                                     /* --tensor-parallel-size (>= 1) */
    int max_num_seqs;                           /* --max-num-seqs */
    int max_model_len;                          /* --max-model-len */
    int max_num_batched_tokens;                 /* --max-num-batched-tokens; 0: the default */
    int prefill_buckets[TB_RECIPE_MAX_BUCKETS]; /* Neuron: num_batched_tokens_buckets */
    int nprefill;
    int decode_buckets[TB_RECIPE_MAX_BUCKETS]; /* Neuron: num_seqs_buckets */
    int ndecode;
    bool prefix_caching;          /* --enable-prefix-caching; false: --no-enable-... */
    bool neuron;                  /* the machine has Neuron devices: vllm-neuron's options */
    enum tb_recipe_plugin plugin; /* on Neuron: which one */
    const char *plugin_version;   /* borrowed; its installed version for the label; "" or
                                     NULL: not found */
    double server_timeout_s;      /* Neuron: the compile and execute timeouts; 0: unset */
    const char *artifacts_dir;    /* borrowed; plugin nxdi: NEURON_COMPILED_ARTIFACTS */
    bool checkpoint;              /* the model folder holds real weights (--model-path) */
    uint64_t seed;
};

#define TB_RECIPE_MAX_ARGS 40
#define TB_RECIPE_MAX_ENV  12
struct tb_recipe_cmd {
    char *argv[TB_RECIPE_MAX_ARGS]; /* NULL-terminated, into text */
    char *env[TB_RECIPE_MAX_ENV];   /* "NAME=value" (or "NAME": removed), NULL-terminated,
                                       into text */
    char text[8192];
    size_t used;
    char label[256]; /* "vLLM (recipe vllm: tp=8, dummy weights, Neuron)" */
    char note[768];  /* what tb_recipe_settle chose or completed, and the environment
                        set and cleared, for the run's notes; "" none */
};

/* The plugin of an installed vllm-neuron version ("0.24.0.1.1.0": current; "0.5.3":
 * the NxDI-based one, whose versions are 0.1 to 0.9). NULL or "" (not found): current. */
enum tb_recipe_plugin tb_recipe_plugin_of(const char *vllm_neuron_version);

/* The plugin for this machine: from the installed vllm-neuron version (NULL or "": not
 * found) and the Neuron device's sysfs name ("Trainium", "Inferentia2", "Trainium2").
 * The current plugin serves Trainium2 and Trainium3 only: with it installed on another
 * device returns -1 with a message saying which stack to pin and how (the NxDI-based
 * plugin 0.5.3, vLLM 0.16, Neuron SDK 2.29); with none found there, the NxDI-based
 * plugin's settings and that advice in note. Otherwise 0, *plugin set and note (may be
 * NULL) saying which. */
int tb_recipe_plugin_choose(const char *version, const char *device_name,
                            enum tb_recipe_plugin *plugin, char *note, size_t notelen, char *err,
                            size_t errlen);

/* Settle o's scheduler settings as the server will get them, or refuse them with the
 * plugin's rule named. max_num_batched_tokens 0 becomes the default: max_model_len up
 * to TB_RECIPE_SINGLE_SHOT_MAX (one-shot prefill), else 8192; with prefix caching on
 * Neuron the largest segment size below max_model_len (the plugin caches prefixes only
 * with segmented prefill). On Neuron with the current plugin (o->neuron):
 *   - max_num_batched_tokens below max_model_len (segmented prefill) must be 512, 1024,
 *     2048, 4096 or 8192, and the prefill buckets then exactly that one size; at or
 *     above it, max_model_len must be at most TB_RECIPE_SINGLE_SHOT_MAX;
 *   - the largest prefill bucket must equal min(max_num_batched_tokens, max_model_len)
 *     and the largest decode bucket max_num_seqs: a list whose largest is smaller is
 *     completed with it (said in note), one whose largest is larger refused;
 *   - prefix caching needs segmented prefill.
 * With the NxDI-based plugin decode buckets (batch sizes) and prefix caching are
 * refused (it buckets token generation by length). Without Neuron nothing is checked
 * beyond the ranges. err gets "field 'NAME': why (vllm-neuron: the rule)". note (may
 * be NULL) gets what was chosen or completed. Returns 0, or -1. */
int tb_recipe_settle(struct tb_recipe_opts *o, char *note, size_t notelen, char *err,
                     size_t errlen);

/* Write dir/config.json, dir/tokenizer.json and dir/tokenizer_config.json for a (the
 * folder must exist). Each file is written whole to a temporary name and renamed.
 * Returns 0, or -1 with a message. */
int tb_recipe_write_model(const struct tb_arch *a, const char *dir, char *err, size_t errlen);

/* Check that dir is a Hugging Face checkpoint of a for --model-path: its config.json
 * (num_hidden_layers, hidden_size and vocab_size those of a) and its weights as
 * safetensors (model.safetensors.index.json and every file its weight_map names, or
 * else at least one *.safetensors file). Returns 0, or -1 with a message naming the
 * file and field. */
int tb_recipe_check_checkpoint(const struct tb_arch *a, const char *dir, char *err, size_t errlen);

/* The command of recipe vllm: `vllm serve MODEL_DIR` as served, on 127.0.0.1:port,
 * its compile cache in cache_dir, o settled first (tb_recipe_settle, what it did in
 * c->note, with the inherited variables cleared: read with getenv). Returns 0, or -1
 * with a message (a value out of range, a setting the plugin refuses, no room). */
int tb_recipe_vllm(struct tb_recipe_cmd *c, const char *model_dir, const char *served,
                   const char *cache_dir, int port, const struct tb_recipe_opts *o, char *err,
                   size_t errlen);

#endif
