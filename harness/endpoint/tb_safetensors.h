/*
 * harness/endpoint/tb_safetensors.h: a random-weight checkpoint of a catalogue Llama in
 * the safetensors format, for servers that read weights from the model folder and have
 * no "dummy" loader (the vllm-neuron plugin: it replaces vLLM's loader, ignores
 * --load-format dummy and reads the folder's .safetensors files; vllm-project/vllm-neuron
 * vllm_neuron/vllm/worker/neuron_model_runner.py load_model at 9fc042ea, aws-neuron-sdk
 * vllm-neuron/docs/design/framework/model_bringup.md).
 *
 * The format (huggingface/safetensors README.md, and safetensors/src/tensor.rs at
 * 24b0b285 for the padding): 8 bytes, the header's length N as a little-endian u64;
 * N bytes of UTF-8 JSON {"__metadata__": {string: string}, NAME: {"dtype": "BF16",
 * "shape": [..], "data_offsets": [BEGIN, END]}, ...}, space-padded to a multiple of 8;
 * then the tensors' bytes, row-major, little-endian, offsets relative to the end of the
 * header, contiguous. Sharding as huggingface_hub's split_state_dict_into_shards_factory
 * (src/huggingface_hub/serialization/_base.py at 122aa5cc): tensors in order, a new
 * shard when the next would pass the limit, a tensor bigger than the limit alone in
 * its own; one shard is "model.safetensors", n are "model-0000k-of-0000n.safetensors"
 * with "model.safetensors.index.json" = {"metadata": {"total_size": tensor bytes},
 * "weight_map": {NAME: file}}.
 *
 * Tensor names and shapes: Hugging Face transformers' LlamaForCausalLM
 * (src/transformers/models/llama/modeling_llama.py at 00227283; a Linear's weight is
 * [out, in]), legend of tb_arch.h:
 *   model.embed_tokens.weight                        [V, C]
 *   model.layers.N.input_layernorm.weight            [C]
 *   model.layers.N.self_attn.q_proj.weight           [NH HD, C]
 *   model.layers.N.self_attn.k_proj.weight           [NKV HD, C]
 *   model.layers.N.self_attn.v_proj.weight           [NKV HD, C]
 *   model.layers.N.self_attn.o_proj.weight           [C, NH HD]
 *   model.layers.N.post_attention_layernorm.weight   [C]
 *   model.layers.N.mlp.gate_proj.weight              [F, C]
 *   model.layers.N.mlp.up_proj.weight                [F, C]
 *   model.layers.N.mlp.down_proj.weight              [C, F]
 *   model.norm.weight                                [C]
 *   lm_head.weight                                   [V, C]   (absent when tied)
 *
 * Values, all bf16: the RMSNorm weights 1.0 (their initial value); every other weight
 * uniform in [-0.02, 0.02] (LlamaConfig's initializer_range) and never 0: a zero
 * tensor can run faster than real weights on hardware that throttles on current
 * swings. Each tensor is drawn from its own stream (splitmix64 from the seed and the
 * tensor's name), so a tensor's bytes depend on the seed and its name only, not on the
 * sharding; the bf16 value is the fp32 draw truncated toward zero, so it stays within
 * the bound and non-zero.
 *
 * Writing streams through a 1 MiB buffer (memory stays small for a 70B model); each
 * shard is written to "FILE.tmp.PID", synced and renamed, the index last, so a reader
 * sees a whole checkpoint or none. The free space is checked first (statvfs of the
 * folder, or its nearest existing parent): the files' bytes plus a margin (5% + 64 MiB);
 * TRNBENCH_TEST_DISK_FREE=BYTES with TRNBENCH_TEST=1 stands for statvfs's answer (tests
 * only). A folder that already holds the same checkpoint (same files, sizes and
 * headers: model, shapes and seed) is kept as it is.
 *
 * Ownership: nothing is allocated that outlives a call.
 */
#ifndef TB_SAFETENSORS_H
#define TB_SAFETENSORS_H

#include "tb_arch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most tensor bytes a shard holds by default: 4 GiB (huggingface_hub's is 5e9). */
#define TB_SAFETENSORS_SHARD_BYTES (4ULL << 30)
/* The bound of the random weights' magnitude. */
#define TB_SAFETENSORS_WEIGHT_MAX 0.02f
#define TB_SAFETENSORS_INDEX      "model.safetensors.index.json"

struct tb_safetensors_opts {
    uint64_t seed;        /* the weights' seed */
    uint64_t shard_bytes; /* tensor bytes a shard holds at most (0: SHARD_BYTES) */
    bool quiet;           /* no progress lines on stderr */
};

/* What a checkpoint takes, or what writing it did. */
struct tb_safetensors_info {
    uint64_t file_bytes;   /* every file's bytes: shards (headers included) and index */
    uint64_t tensor_bytes; /* the tensors' bytes (the index's total_size) */
    uint64_t need_bytes;   /* file_bytes plus the margin the space check asks for */
    uint64_t free_bytes;   /* what the space check found free (tb_safetensors_write_llama) */
    int tensors;
    int shards;
    bool reused; /* the folder already held this checkpoint: nothing written */
};

/* The sizes of a's checkpoint with opts' shard limit into info (free_bytes 0, reused
 * false). Returns 0, or -1 with a message (a mixture of experts: no Llama tensors). */
int tb_safetensors_llama_size(const struct tb_arch *a, const struct tb_safetensors_opts *o,
                              struct tb_safetensors_info *info, char *err, size_t errlen);

/* Whether dir already holds a's checkpoint for opts: 1 yes, 0 no. */
int tb_safetensors_llama_present(const struct tb_arch *a, const char *dir,
                                 const struct tb_safetensors_opts *o);

/* The bytes free to this user on the file system of path (its nearest existing parent
 * when it does not exist yet), or TRNBENCH_TEST_DISK_FREE under TRNBENCH_TEST=1.
 * Returns 0, or -1 with a message. */
int tb_safetensors_free_bytes(const char *path, uint64_t *free_bytes, char *err, size_t errlen);

/* Write a's checkpoint into dir (which must exist), unless it is already there. Its
 * model*.safetensors and index files are replaced. Returns 0 with info filled;
 * TB_EINPUT (-2) when the file system has less free than info->need_bytes ("... needs
 * N bytes (... GiB) with its margin, 'dir' has M free"), nothing written; -1 on any
 * other failure (the files this call wrote removed). */
int tb_safetensors_write_llama(const struct tb_arch *a, const char *dir,
                               const struct tb_safetensors_opts *o,
                               struct tb_safetensors_info *info, char *err, size_t errlen);

/* A bf16 value (its 16 bits) as a float. */
float tb_bf16_to_float(uint16_t h);

#endif
