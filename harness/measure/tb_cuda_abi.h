/*
 * harness/measure/tb_cuda_abi.h: the plain-C interface between trnbench and its CUDA plugin
 * (build/lib/libtrnbench-cuda.so, sources under workloads/cuda/). The program never
 * links CUDA: harness/tb_gpu.c dlopen()s the plugin and calls
 *
 *     const struct tb_cuda_api *tb_cuda_plugin(int abi_version);
 *
 * which returns NULL when the plugin was built for another TB_CUDA_ABI_VERSION. Every
 * entry returns 0 on success or -1 with a message in (err, errlen) naming what failed
 * ("cublasLtMatmul (m=2048 n=512 k=2048): CUBLAS_STATUS_NOT_SUPPORTED").
 *
 * Precision (what the frameworks' bf16 mixed precision does): fp32 master weights,
 * gradients and AdamW moments; bf16 copies of the weights and bf16 activations feed
 * every matrix product (cuBLASLt, fp32 accumulation); the residual stream, norms,
 * softmax, RoPE tables and the loss are fp32.
 *
 * Precision fp8 (TB_CUDA_LLAMA_FP8, inference only; compute capability 8.9+): the
 * weights of the layers' linear products (wq|wk|wv, wo, w_gate|w_up, w_down) are
 * quantised once at init to e4m3 with one fp32 scale per (fused) tensor, and every
 * input of those products is quantised to e4m3 with its own current scale (448 /
 * amax of that tensor, Transformer Engine's current-scaling recipe) just before the
 * product (cuBLASLt fp8, or the fp8 decode GEMV for up to 8 rows), fp32 accumulation.
 * Embeddings, norms, attention, the KV cache and the LM head stay as in bf16 (as fp8
 * inference checkpoints of TensorRT-LLM and vLLM keep lm_head in 16 bits).
 *
 * Devices: the plugin works on one device per process, the CUDA ordinal that probe was
 * given (the first call sets up the process-wide context on it); every engine, timer,
 * copy and kernel test then runs there. Several devices take one process each.
 *
 * Engines: opaque handles. Work is queued on the plugin's one stream; a call returns
 * once it is queued, and an error inside queued work surfaces at the next
 * synchronising call (timer_stop, llama_logits, llama_loss, llama_finite,
 * llama_prefill_slot, llama_decode_slots). Not thread-safe: one caller at a time (any
 * thread).
 *
 * Shape legend (workloads/llama/llama.h): B batch, T tokens, C hidden, NH/NKV heads,
 * HD head dim, F FFN width, V vocabulary, L layers, N = B*T rows. Diffusion
 * (workloads/diffusion/diffusion.h): B images, Cl latent channels, H x W latents, S
 * text tokens, Dc context width, Dp pooled width; the GPU keeps images channel-last
 * ([B, H, W, C], a transformer's tokens without a transpose).
 */
#ifndef TB_CUDA_ABI_H
#define TB_CUDA_ABI_H

#include "tb_arch.h"
#include "tb_darch.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TB_CUDA_ABI_VERSION   4
#define TB_CUDA_PLUGIN_SYMBOL "tb_cuda_plugin"

/* What the device and its software are. Strings always terminated. */
struct tb_cuda_info {
    char name[256];         /* "NVIDIA H100 80GB HBM3" */
    int device;             /* CUDA ordinal used (the one probed) */
    int device_count;       /* devices this process sees (cudaGetDeviceCount: the runtime
                               applies CUDA_VISIBLE_DEVICES) */
    int cc_major, cc_minor; /* compute capability */
    int sm_count;
    double mem_gib; /* total device memory */
    double l2_mib;
    int mem_bus_bits;
    int sm_clock_max_mhz;  /* cudaDevAttrClockRate */
    int mem_clock_max_mhz; /* cudaDevAttrMemoryClockRate */
    int driver_version;    /* cudaDriverGetVersion: 13000 = 13.0 */
    int runtime_version;   /* cudaRuntimeGetVersion */
    char driver[64];       /* NVML's driver version "580.65.06", or "" */
    int sm_clock_mhz;      /* NVML current SM and memory clocks (0: unknown) */
    int mem_clock_mhz;
    bool energy;     /* NVML's total-energy counter works */
    char nvml[256];  /* "ok" or "unavailable: <reason>" */
    char build[256]; /* the plugin's build: "nvcc 13.0, sm_80 sm_90 sm_100 + PTX" */
    bool emulated;   /* the CPU emulation of tests (libtrnbench-cuemu.so), not a GPU */
};

/* Offsets (in floats) of the tensors inside the engine's parameter arena, the CPU
 * engine's layout (workloads/llama/llama.h): wq|wk|wv adjacent, w_gate|w_up adjacent,
 * the parameters before decay_end get AdamW weight decay. */
enum {
    TB_CUDA_W_ATTN_NORM,
    TB_CUDA_W_WQ,
    TB_CUDA_W_WK,
    TB_CUDA_W_WV,
    TB_CUDA_W_WO,
    TB_CUDA_W_MLP_NORM,
    TB_CUDA_W_GATE,
    TB_CUDA_W_UP,
    TB_CUDA_W_DOWN,
    TB_CUDA_W_PER_LAYER
};
struct tb_cuda_llama_weights {
    const float *params; /* borrowed, host: [n_params] fp32, copied at init */
    size_t n_params;
    size_t tok_emb, lm_head, final_norm; /* offsets; lm_head == tok_emb when tied */
    const size_t *layer;                 /* borrowed: [L][TB_CUDA_W_PER_LAYER] offsets */
    size_t decay_end;
    const float *rope_cos; /* borrowed, host: [max_seq, HD/2] (tb_llama_rope_table) */
    const float *rope_sin;
};

enum tb_cuda_llama_flags {
    TB_CUDA_LLAMA_TRAIN = 1 << 0,   /* gradients, AdamW state, saved activations */
    TB_CUDA_LLAMA_NOGRAPH = 1 << 1, /* decode without CUDA graphs */
    TB_CUDA_LLAMA_FP8 = 1 << 2,     /* precision fp8 (see above): inference only, not with
                                       TB_CUDA_LLAMA_TRAIN; cc 8.9+, else llama_init fails
                                       with the reason */
};

/* The CPU diffusion engine's parameters: its fp32 arena and where each tensor lies in
 * it (tb_diffusion_layout). Both borrowed for the call; the arena is copied at init. */
struct tb_cuda_diffusion_weights {
    const float *params; /* host: [n_params] */
    size_t n_params;
    const struct tb_dlayout *layout;
};

struct tb_cuda_adamw {
    float lr, beta1, beta2, eps, weight_decay;
};

/* Kernel tests: one operation on host arrays (copied in and out), against which the
 * tests hold the CPU reference. Inputs are fp32 and rounded to bf16 where the engine
 * keeps them in bf16 (stated per op); outputs come back as fp32. */
enum tb_cuda_op {
    TB_CUDA_OP_RMSNORM_FWD,   /* x[N,C], w[C] -> out[N,C] (bf16), rstd[N]; eps */
    TB_CUDA_OP_RMSNORM_BWD,   /* dy[N,C], x[N,C], rstd[N], w[C] -> dx[N,C] (+= into
                                 out's input, accumulate), dw[C] */
    TB_CUDA_OP_ROPE,          /* qkv[N, QKV] (bf16), cos/sin [T, HD/2] -> q [B,NH,T,HD],
                                 k, v [B,NKV,T,HD] head-major (bf16), rotated */
    TB_CUDA_OP_SWIGLU_FWD,    /* gu[N, 2F] (bf16) -> h[N, F] (bf16) */
    TB_CUDA_OP_SWIGLU_BWD,    /* dh[N,F], gu[N,2F] (bf16) -> dgu[N,2F] (bf16) */
    TB_CUDA_OP_ATTENTION_FWD, /* q[B,NH,T,HD], k, v[B,NKV,T,HD] (bf16) -> y[N, NH*HD]
                                 (the engine's causal attention: the fused kernel) */
    TB_CUDA_OP_ATTENTION_BWD, /* + dy[N, NH*HD] -> dq, dk, dv head-major (fp32 out) */
    TB_CUDA_OP_XENT,          /* logits[N, V] (bf16), targets[N] -> loss (mean), dlogits */
    TB_CUDA_OP_ADAMW,         /* p, g, m, v [n], decay on [0, n_decay) -> p, m, v; step t */
    TB_CUDA_OP_GEMM_BF16,     /* a[M,K], b[N,K] (bf16) -> c[M,N] = a b^T (fp32 out) */
    TB_CUDA_OP_GEMV_BF16,     /* x[M,K], w[N,K] (bf16), M <= 8 -> c[M,N] = x w^T (the decode
                                 kernel) */
    /* fp8 (e4m3), compute capability 8.9+ (else the op fails with the reason): */
    TB_CUDA_OP_QUANT_FP8, /* x[n] (fp32; rounded to bf16 first when in_bf16) -> q[n]
                             (the e4m3 values, unscaled, as fp32); amax, scale = 448 /
                             amax, scale_inv out */
    TB_CUDA_OP_GEMM_FP8,  /* a[M,K], b[N,K]: e4m3 values as fp32, each tensor's max |x|
                             448 (a quantised tensor's) -> c[M,N] = scale_a scale_b a b^T
                             through cuBLASLt (fp32 out, or bf16 when out_bf16) */
    TB_CUDA_OP_GEMV_FP8,  /* the same with M <= 8 through the fp8 decode kernel */
    TB_CUDA_OP_FLASH,     /* the fused attention alone: q [B,NH,T,HD], k, v [B,NKV,Sk,HD]
                             (bf16; token_major: [B,T,NH,HD], [B,Sk,NKV,HD]), causal,
                             softmax_scale -> o (q's layout), lse [B,NH,T]; with dout
                             in[3] (o's layout) also dq (q's layout), dk | dv (two of
                             k's layout, one after the other) */
    /* diffusion (channel-last images [B, H, W, C]; HW = H*W) */
    TB_CUDA_OP_GROUPNORM,    /* x[B, HW, C] fp32, w[C], b[C] -> out[B, HW, C] (bf16), G
                                groups, eps, then SiLU when silu */
    TB_CUDA_OP_CONV2D,       /* x[B, H, W, ci] (bf16), w[co, ci, k, k], bias[co] -> out
                                [B, Ho, Wo, co] fp32; k = ksize, padding k/2, stride;
                                upsample: nearest 2x of x first (H, W are x's) */
    TB_CUDA_OP_LAYERNORM,    /* x[N, C] fp32, w[C], b[C] -> out[N, C] (bf16); eps */
    TB_CUDA_OP_GEGLU,        /* ff[N, 2F] fp32 (value | gate), bias[2F] -> h[N, F] (bf16) =
                                (value + b) GELU(gate + b), the exact (erf) GELU */
    TB_CUDA_OP_ATTENTION_NC, /* q[B*T, NH*HD], k, v[B*S, NH*HD] (bf16, token-major) ->
                                y[B*T, NH*HD] (fp32 of bf16): non-causal softmax
                                attention, scale 1/sqrt(HD) */
    TB_CUDA_OP_DIT_LN_MOD,   /* x[B*T, C] fp32, mod[B, 2C] (shift | scale) -> out[B*T, C]
                                (bf16) = LayerNorm(x) (1 + scale) + shift, no affine
                                weights, eps */
    TB_CUDA_OP_DIT_QKV,      /* z[B*T, 3 NH HD + F] fp32, bias[3 NH HD + F], q_norm[HD],
                                k_norm[HD] (RMSNorm weights, NULL: none) -> out[0]
                                [B*T, 3 NH HD] (bf16): q, k RMSNorm'ed, rows r >= S of
                                an image (the H x W image tokens, T = S + H W) rotated
                                by FLUX's 2-D RoPE (H 0: none), v as is; out[1] [B*T, F]
                                (bf16, F > 0) = GELU_tanh of the last F columns; eps */
    TB_CUDA_OP_COUNT
};
struct tb_cuda_op_args {
    enum tb_cuda_op op;
    int B, T, N, C, M, K, NH, NKV, HD, F, V;
    float eps;
    bool accumulate;
    long step; /* AdamW step number (1-based) */
    size_t n, n_decay;
    struct tb_cuda_adamw opt;
    const float *in[6]; /* inputs, per op as listed above, in that order */
    const int *ids;     /* targets (XENT) */
    float *out[4];      /* outputs, in order */
    float loss;         /* XENT */
    /* fp8 ops */
    bool in_bf16;                 /* QUANT_FP8: round x to bf16 first (the engine's path) */
    bool out_bf16;                /* GEMM_FP8, GEMV_FP8: bf16 output */
    float scale_a, scale_b;       /* GEMM_FP8, GEMV_FP8: dequantisation factors (inputs) */
    float amax, scale, scale_inv; /* QUANT_FP8: outputs */
    /* FLASH: keys per sequence (T is the queries'), the mask, the layout, the softmax
     * scale (0: 1/sqrt(HD)) */
    int Sk;
    bool causal, token_major;
    float softmax_scale;
    /* diffusion ops */
    int H, W, G, S, ci, co, ksize, stride;
    bool silu, upsample;
};

struct tb_cuda_api {
    int abi_version;

    /* Set the process up on CUDA ordinal `device` (0 <= device < the devices visible),
     * read its facts and open NVML for it (a machine without the driver's
     * libnvidia-ml.so.1 records "unavailable: <reason>" in info->nvml). Returns -1 with
     * "no CUDA device: <cudaGetErrorString>" when there is none, "no CUDA device 3 (2
     * visible)", or, once the process runs on one device, for any other. */
    int (*probe)(int device, struct tb_cuda_info *info, char *err, size_t errlen);

    /* Engine on the probed device for up to max_batch sequences of max_seq tokens, the
     * parameters copied from w. flags: tb_cuda_llama_flags. */
    int (*llama_init)(void **eng, const struct tb_arch *a, const struct tb_cuda_llama_weights *w,
                      int max_batch, int max_seq, unsigned flags, char *err, size_t errlen);
    void (*llama_free)(void *eng);
    size_t (*llama_bytes)(void *eng); /* device memory the engine holds */
    /* Prefill B prompts (tokens [B, T], host), logits of the last position [B, V]. */
    int (*llama_prefill)(void *eng, const int *tokens, int B, int T, char *err, size_t errlen);
    /* One decode step at position pos: tokens [B] from the host, or NULL for the greedy
     * tokens of the previous step's logits (argmax on the device). Logits [B, V]. */
    int (*llama_decode)(void *eng, const int *tokens, int B, int pos, char *err, size_t errlen);
    /* Forward with mean cross-entropy, backward, AdamW (opt NULL: forward and loss only). */
    int (*llama_train_step)(void *eng, const int *tokens, const int *targets, int B, int T,
                            const struct tb_cuda_adamw *opt, char *err, size_t errlen);
    /* Synchronise, then: the loss of the last train step; the last logits [B, V] (n
     * floats at most); whether every logit of the last step is finite. */
    int (*llama_loss)(void *eng, float *loss, char *err, size_t errlen);
    int (*llama_logits)(void *eng, float *out, size_t n, char *err, size_t errlen);
    int (*llama_finite)(void *eng, bool *finite, char *err, size_t errlen);

    /* CUDA events on the plugin's stream: start, then stop synchronises and returns the
     * seconds between them. */
    int (*timer_start)(char *err, size_t errlen);
    int (*timer_stop)(double *secs, char *err, size_t errlen);
    /* NVML's total energy since the driver loaded, millijoules. */
    int (*energy_mj)(unsigned long long *mj, char *err, size_t errlen);

    /* Device-to-device copy of bytes per repetition, reps timed after one warm-up; the
     * median seconds per copy into *secs. */
    int (*copy_bench)(size_t bytes, int reps, double *secs, char *err, size_t errlen);

    /* One kernel test (see enum tb_cuda_op). */
    int (*op)(struct tb_cuda_op_args *a, char *err, size_t errlen);

    /* ---- the diffusion denoiser (tb_diffusion_forward's math: the UNet, and the DiTs,
     * FLUX and SD3's MMDiT, from the DiT part of the layout) ---- */

    /* Engine on the probed device for up to max_batch images of lat_h x lat_w latents, the
     * parameters copied from w (layout as a->kind describes). */
    int (*diffusion_init)(void **eng, const struct tb_darch *a,
                          const struct tb_cuda_diffusion_weights *w, int max_batch, int lat_h,
                          int lat_w, char *err, size_t errlen);
    void (*diffusion_free)(void *eng);
    size_t (*diffusion_bytes)(void *eng); /* device memory the engine holds */
    /* One denoiser pass, host in and out (synchronising), tb_diffusion_forward's
     * arguments: x [B, Cl, H, W], t [B], ctx [B, S, Dc], pooled [B, Dp], guidance [B] or
     * NULL -> out [B, Cl, H, W]. */
    int (*diffusion_forward)(void *eng, const float *x, const float *t, const float *ctx,
                             const float *pooled, const float *guidance, int B, float *out,
                             char *err, size_t errlen);
    /* tb_diffusion_sample's loop on the device for B images from x_T = latents [B, Cl,
     * H, W], with ctx [cfg B, S, Dc] and pooled [cfg B, max(Dp, 1)] (cfg = 2 with
     * classifier-free guidance, a->cfg) and the schedule of each step s (t[s], c_in[s],
     * dt[s]; tb_diffusion_schedule): the pass on latents * c_in over the cfg B images,
     * prediction = uncond + guidance_scale (cond - uncond) with CFG, latents += dt
     * prediction; FLUX's guidance embedding gets guidance_scale. Queued; the latents
     * stay on the device (diffusion_latents). */
    int (*diffusion_sample)(void *eng, const float *latents, const float *ctx, const float *pooled,
                            int B, int steps, const float *t, const float *c_in, const float *dt,
                            float guidance_scale, char *err, size_t errlen);
    /* Synchronise, then the last sample's latents [B, Cl, H, W] (n floats at most) and
     * whether every one is finite. */
    int (*diffusion_latents)(void *eng, float *out, size_t n, bool *finite, char *err,
                             size_t errlen);

    /* ---- Llama cache slots (continuous batching; since version 4) ----
     * Each of the engine's max_batch cache rows ("slots") holds one sequence of its own
     * length, as the CPU engine's tb_llama_prefill_slot and tb_llama_decode_slots keep
     * them. Both calls synchronise and return greedy tokens (argmax of the logits, the
     * lowest id on a tie) on the host; llama_logits then gives the call's logits (1 row,
     * or n). They may shorten the cache rows llama_prefill and llama_decode use (rows
     * 0..B-1): llama_decode then accepts only positions every one of its rows still
     * caches, and a greedy (NULL tokens) llama_decode needs a llama_decode step first.
     * Everything is checked on the host before any work is queued; a refused call
     * changes nothing. */

    /* One prompt of T tokens (ids in [0, V)) into cache row slot (in [0, max_batch)),
     * positions 0..T-1 (the row's earlier contents dropped); the greedy next token into
     * *next_token. */
    int (*llama_prefill_slot)(void *eng, const int *tokens, int T, int slot, int *next_token,
                              char *err, size_t errlen);
    /* One decode step of n rows (1 <= n <= max_batch): row i feeds tokens[i] into cache
     * row slots[i] (distinct) at position pos[i] (1 <= pos[i] < max_seq; positions
     * 0..pos[i]-1 of that row cached; an earlier position rewinds the row); the n greedy
     * next tokens into next_tokens. Runs as one CUDA graph per n (unless
     * TB_CUDA_LLAMA_NOGRAPH), apart from llama_decode's. */
    int (*llama_decode_slots)(void *eng, const int *tokens, const int *slots, const int *pos, int n,
                              int *next_tokens, char *err, size_t errlen);
};

typedef const struct tb_cuda_api *(*tb_cuda_plugin_fn)(int abi_version);

#ifdef __cplusplus
}
#endif

#endif
