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
 * The server's flags: --served-model-name, --load-format dummy (GPUs' random weights
 * only), --dtype bfloat16,
 * --tensor-parallel-size, --max-num-seqs, --max-model-len, --seed, the loopback host
 * and port; on a Neuron machine (the vllm-neuron plugin) the prefill and decode
 * buckets as --additional-config '{"neuron_config": {"num_batched_tokens_buckets":
 * [...], "num_seqs_buckets": [...]}}' (vllm-neuron's configuration reference). Its
 * environment: VLLM_CACHE_ROOT in the run's folder (vLLM's and vllm-neuron's compile
 * cache: $VLLM_CACHE_ROOT/neuron/compile_cache on Neuron), emptied before a cold
 * start and kept for the warm one, so server_start_s - server_warm_start_s is the
 * compile time; HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1.
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

struct tb_recipe_opts {
    int tp;                                     /* --tensor-parallel-size (>= 1) */
    int max_num_seqs;                           /* --max-num-seqs */
    int max_model_len;                          /* --max-model-len */
    int prefill_buckets[TB_RECIPE_MAX_BUCKETS]; /* Neuron: num_batched_tokens_buckets */
    int nprefill;
    int decode_buckets[TB_RECIPE_MAX_BUCKETS]; /* Neuron: num_seqs_buckets */
    int ndecode;
    bool neuron;     /* the machine has Neuron devices: vllm-neuron's options */
    bool checkpoint; /* the model folder holds real weights (--model-path): no dummy */
    uint64_t seed;
};

#define TB_RECIPE_MAX_ARGS 40
struct tb_recipe_cmd {
    char *argv[TB_RECIPE_MAX_ARGS]; /* NULL-terminated, into text */
    char *env[6];                   /* "NAME=value", NULL-terminated, into text */
    char text[8192];
    size_t used;
    char label[256]; /* "vLLM (recipe vllm: tp=8, dummy weights, Neuron)" */
};

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
 * its compile cache in cache_dir. Returns 0, or -1 with a message (a value out of
 * range, no room). */
int tb_recipe_vllm(struct tb_recipe_cmd *c, const char *model_dir, const char *served,
                   const char *cache_dir, int port, const struct tb_recipe_opts *o, char *err,
                   size_t errlen);

#endif
