/*
 * harness/model/tb_darch.h: a diffusion architecture read from its catalogue file
 * (workloads/diffusion/<name>.model, format in workloads/README.md): the denoiser (a
 * UNet as in SDXL, an MMDiT as in SD3.5, or a FLUX DiT with double- and single-stream
 * blocks), its text encoders and its VAE decoder, so an image's whole cost can be
 * counted.
 *
 * Shape legend: B batch (images), Cl latent channels, H x W latent size (pixels /
 * vae_scale), N image tokens (H/p x W/p for a DiT with patch p), S text tokens, D
 * hidden width, NH heads, HD head dim.
 *
 * Conventions the engine and the FLOP counts share:
 *  - UNet (SDXL): levels l = 0..nlevels-1 with channels ch[l]; each down level has
 *    layers_per_block ResNet blocks, each followed by a transformer of depth[l] blocks
 *    when depth[l] > 0; every level but the last ends with a stride-2 3x3 conv. The mid
 *    block is ResNet, transformer of depth[nlevels-1], ResNet. Each up level (reversed)
 *    has layers_per_block + 1 ResNet blocks taking the skip connection concatenated on
 *    channels, each followed by a transformer when depth > 0, and every up level but
 *    the last ends with nearest 2x upsampling and a 3x3 conv. GroupNorm of `groups`
 *    groups, SiLU, heads = channels / head_dim. Transformer blocks: LayerNorm,
 *    self-attention, LayerNorm, cross-attention to the text context, LayerNorm, GEGLU
 *    feed-forward of inner width 4 x channels; linear projections in and out. The time
 *    embedding (sinusoidal time_proj_dim -> time_embed_dim -> time_embed_dim) plus the
 *    additional embedding (add_in_dim -> time_embed_dim -> time_embed_dim) feeds every
 *    ResNet block.
 *  - MMDiT (SD3.5): patchify (p x p conv = linear on Cl*p*p), depth joint blocks over
 *    image and text streams, each stream with adaLN-Zero (6 D modulation from the
 *    conditioning vector), q/k/v per stream, joint attention over N + S tokens, RMS
 *    q/k norm when qk_norm, GELU MLP of mlp_ratio x D per stream; the last block keeps
 *    only the image stream's output. Final adaLN (2 D) and a linear unpatchify.
 *  - FLUX: as MMDiT for double_depth blocks (with rotary positions instead of a
 *    learned grid: 2-D over image rows and columns, text tokens at id zero, unrotated), then
 * single_depth single-stream blocks over the concatenated tokens: adaLN (3 D), one linear to q, k,
 * v and the MLP input (3 D + mlp_ratio x D), attention and GELU in parallel, one linear back to D.
 *    Guidance-distilled: a guidance embedding replaces classifier-free guidance.
 */
#ifndef TB_DARCH_H
#define TB_DARCH_H

#include "tb_range.h"

#include <stdbool.h>
#include <stddef.h>

enum tb_darch_kind {
    TB_DARCH_UNET,
    TB_DARCH_MMDIT,
    TB_DARCH_FLUX,
};

#define TB_DARCH_MAX_LEVELS           4
#define TB_DARCH_MAX_ENCODERS         3
#define TB_DARCH_MAX_LAYERS_PER_BLOCK 8

/* The numeric keys of a diffusion model file and their ranges (README "Input ranges"). */
extern const struct tb_range TB_DARCH_RANGES[];

/* A text encoder, counted for cost only: "clip" (GELU MLP, learned positions, biases,
 * LayerNorm), "clip-proj" (the same with a hidden x hidden text projection, as OpenCLIP
 * bigG in SDXL), "t5" (T5 v1.1 encoder: gated-GELU MLP, no biases, RMSNorm, relative
 * position buckets). */
enum tb_dencoder_kind {
    TB_DENC_CLIP,
    TB_DENC_CLIP_PROJ,
    TB_DENC_T5,
};

struct tb_dencoder {
    char name[32]; /* "clip-l", "openclip-bigg", "t5-xxl" */
    enum tb_dencoder_kind kind;
    int layers, hidden, heads, ffn, vocab, tokens;
    double published_params; /* 0 = not given */
};

struct tb_darch {
    char name[64];   /* canonical name, e.g. "sdxl" */
    char family[32]; /* "unet", "mmdit", "flux" */
    char source[512];
    char path[512];
    enum tb_darch_kind kind;

    int latent_channels; /* Cl */
    int vae_scale;       /* pixels per latent pixel, 8 */
    int resolution;      /* native square resolution in pixels, 1024 */
    int default_steps;
    bool cfg;        /* classifier-free guidance: two denoiser passes per step */
    int text_tokens; /* S: context tokens the denoiser attends to */
    int context_dim; /* width of the text context */
    int pooled_dim;  /* width of the pooled text vector */

    /* UNet */
    int nlevels;
    int ch[TB_DARCH_MAX_LEVELS];
    int depth[TB_DARCH_MAX_LEVELS]; /* transformer blocks per transformer, 0 = none */
    int layers_per_block;
    int head_dim;       /* also the DiTs' HD */
    int groups;         /* GroupNorm groups */
    int time_proj_dim;  /* sinusoidal timestep features: 320 (UNet), 256 (DiT) */
    int time_embed_dim; /* 1280 */
    int add_in_dim;     /* UNet additional conditioning input (SDXL: 2816), 0 = none */

    /* DiT (MMDiT and FLUX) */
    int hidden;          /* D */
    int heads;           /* NH = D / HD */
    int dit_depth;       /* MMDiT joint blocks, FLUX double-stream blocks */
    int single_depth;    /* FLUX single-stream blocks */
    int mlp_ratio;       /* 4 */
    int patch;           /* p: 2 */
    bool qk_norm;        /* RMSNorm on q and k per head */
    bool guidance_embed; /* FLUX-dev: a guidance-strength embedding */
    int pos_embed_max;   /* MMDiT: side of the learned position grid, 0 = none */

    /* VAE decoder (latents -> pixels): channels per level, from the deepest, ResNet
     * blocks per level (layers + 1), one attention block in the middle */
    int vae_levels;
    int vae_ch[TB_DARCH_MAX_LEVELS];
    int vae_layers;

    int nencoders;
    struct tb_dencoder enc[TB_DARCH_MAX_ENCODERS];

    double published_params;     /* the denoiser's published parameter count */
    double published_vae_params; /* the VAE's (encoder + decoder), 0 = not given */
};

/* Read one diffusion model file; errors name file, line and field. */
int tb_darch_load(struct tb_darch *a, const char *path, char *err, size_t errlen);
/* Find by name under <datadir>/workloads/<any>/<name>.model, or a path. Fails when
 * the file is not a diffusion model (family unet, mmdit or flux). */
int tb_darch_find(struct tb_darch *a, const char *name, char *err, size_t errlen);
/* Whether the catalogue file for name describes a diffusion model (1), a Llama (0),
 * or cannot be found (-1). */
int tb_darch_is_diffusion(const char *name);

/* Parameter counts. */
double tb_darch_params_denoiser(const struct tb_darch *a);
double tb_darch_params_vae_decoder(const struct tb_darch *a);
double tb_darch_params_encoder(const struct tb_dencoder *e);
double tb_darch_params_encoders(const struct tb_darch *a);

/* ---- the work of one image (shared by the CPU engine and the performance model) ----
 * Latent side h = resolution / vae_scale; all counts for B images. */

/* FLOPs of one denoiser forward pass (one pass; CFG makes it two per step). */
double tb_dflops_denoiser(const struct tb_darch *a, double B, int resolution);
/* The part of it that is attention (QK^T and AV): runs in 16-bit, memory-heavy. */
double tb_dflops_denoiser_attention(const struct tb_darch *a, double B, int resolution);
/* The part of it that is convolutions (the UNet's; 0 for the DiTs). */
double tb_dflops_denoiser_conv(const struct tb_darch *a, double B, int resolution);
/* What the performance model times apart in one denoiser pass of B images (and in one VAE
 * decode): the FLOPs of each kind, each kind's FLOPs divided by the narrow dimension of its
 * products (the output width of a linear layer or convolution, the head dim of attention),
 * and the activations the kernels a stack does not fuse into a matrix product's epilogue
 * stream through memory. Those kernels, counted as elements read plus written: every
 * GroupNorm and LayerNorm with its activation or modulation (a reduction over the channels,
 * so a kernel of its own: read and write the tensor, 2 per element), the residual or gated
 * add a product's epilogue reads (1), GEGLU's gate (read 8c, write 4c: 12 per token of
 * width c), the nearest upsampling (read 1, write 4), FLUX's and MMDiT's RMS q/k norm with
 * the rotary embedding (read and write q and k: 4 per token of width D). GELU and SiLU
 * after a product, the timestep and bias adds and the flash attention's own reads are in
 * their kernels. */
struct tb_dwork {
    double total, attn, conv; /* FLOPs: everything, the attention (QK^T, AV), convolutions */
    double gemm_per_width;    /* sum of linear-layer FLOPs / output width of each */
    double conv_per_width;    /* sum of convolution FLOPs / output channels of each */
    double attn_per_width;    /* attention FLOPs / head dim */
    double act_elems;         /* activation elements read and written by unfused kernels */
};
void tb_dwork_denoiser(const struct tb_darch *a, double B, int resolution, struct tb_dwork *w);
void tb_dwork_vae_decode(const struct tb_darch *a, double B, int resolution, struct tb_dwork *w);
/* Bytes one denoiser pass must read at least: every weight once, wbytes each. */
double tb_dbytes_denoiser(const struct tb_darch *a, double wbytes);
/* Denoiser passes per image: steps x (2 with CFG, else 1). */
double tb_dpasses(const struct tb_darch *a, int steps);
/* The text encoders (once per prompt) and the VAE decode (once per image). */
double tb_dflops_encoders(const struct tb_darch *a, double B);
double tb_dflops_vae_decode(const struct tb_darch *a, double B, int resolution);
/* FLOPs of a whole image: encoders + passes x denoiser + VAE decode. */
double tb_dflops_image(const struct tb_darch *a, double B, int resolution, int steps);

/* ---- the CPU engine's parameter layout (UNet, and below the DiTs') ----
 * Where each tensor of the UNet lives in the CPU engine's parameter arena (struct
 * tb_diffusion's params, workloads/diffusion/diffusion.h), as offsets in floats, piece by
 * piece in forward order (the walk above: conv_in, ResNets, transformers, down convs,
 * up convs, conv_out). Other executors (the CUDA plugin) mirror the arena from it
 * instead of repeating the layout. Shapes are PyTorch's: conv [co, ci, k, k], linear
 * [out, in]; norms: scale then shift, [c] each. TB_DLAYOUT_NONE: absent. The engine
 * fills it (tb_diffusion_layout); tb_dlayout_release frees the arrays. */

#define TB_DLAYOUT_NONE ((size_t)-1)

enum tb_dpiece_kind {
    TB_DPIECE_CONV_IN,     /* 3x3 conv Cl -> ch[0] (c1) */
    TB_DPIECE_RESNET,      /* n1, c1 (3x3), temb (Te -> co), n2, c2 (3x3), sc (1x1, ci != co) */
    TB_DPIECE_TRANSFORMER, /* n1 (GroupNorm), pin, blocks, pout */
    TB_DPIECE_DOWN,        /* stride-2 3x3 conv (c1), output at level + 1 */
    TB_DPIECE_UP,          /* nearest 2x upsampling then 3x3 conv (c1), output at level - 1 */
    TB_DPIECE_CONV_OUT,    /* GroupNorm n1, SiLU, 3x3 conv ch[0] -> Cl (c1) */
};

/* Weight and bias offsets of one layer. */
struct tb_dparam {
    size_t w, b;
};

struct tb_dpiece {
    enum tb_dpiece_kind kind;
    int level;  /* input resolution level */
    int ci, co; /* channels in (up-path ResNets: current + skip) and out */
    int depth;  /* transformer blocks */
    bool cat;   /* input = [current | popped skip] on channels */
    bool push;  /* the output is saved as a skip */
    struct tb_dparam n1, n2, c1, c2, sc, temb, pin, pout;
    int block; /* transformer: index of its first block in tb_dlayout.blocks */
};

/* One transformer block of width C. wqkv: q, k, v [C, C] each, adjacent; wkv2: the
 * cross-attention k, v [C, Dc] each, adjacent; no biases on q, k, v. ff1 [8C, C]: value
 * rows [0, 4C), gate rows [4C, 8C). */
struct tb_dblock {
    struct tb_dparam ln1, ln2, ln3, ao, co, ff1, ff2;
    size_t wqkv, wq2, wkv2;
};

/* The DiTs' (MMDiT, FLUX; workloads/diffusion/dit.c) blocks. D hidden, HD head dim,
 * F = mlp_ratio D. One stream of a double-stream (joint) block: mod [6D, D] (adaLN-Zero:
 * shift1 scale1 gate1 shift2 scale2 gate2; [2D, D] scale shift for MMDiT's pre-only
 * context), qkv [3D, D] (q, k, v stacked), q_norm, k_norm [HD] RMSNorm weights (NONE
 * without qk_norm), out [D, D], fc1 [F, D], fc2 [D, F] (NONE in a pre-only context). */
struct tb_dstream {
    struct tb_dparam mod, qkv, out, fc1, fc2;
    size_t q_norm, k_norm;
};

struct tb_dditblock {
    struct tb_dstream img, ctx;
    bool pre_only; /* MMDiT's last block: the context stream only feeds k and v */
};

/* A FLUX single-stream block: mod [3D, D] (shift scale gate), lin1 [3D + F, D]
 * (q | k | v | MLP input), lin2 [D, D + F]. */
struct tb_dsingle {
    struct tb_dparam mod, lin1, lin2;
    size_t q_norm, k_norm;
};

struct tb_dlayout {
    size_t n_params;          /* floats in the arena */
    struct tb_dparam t1, t2;  /* time MLP: Tp -> Te -> Te (DiT: Tp -> D -> D) */
    struct tb_dparam a1, a2;  /* additional MLP: Da -> Te -> Te (NONE when Da = 0) */
    struct tb_dpiece *pieces; /* owned: [npieces] (UNet) */
    int npieces;
    struct tb_dblock *blocks; /* owned: [nblocks] (UNet) */
    int nblocks;
    /* the DiTs (tb_darch kind MMDIT or FLUX; all zero for the UNet): patch [D, PP]
     * (PP = Cl p p, index c p p + i p + j), pos [M, M, D] the learned position grid
     * (NONE: none), y1 [D, Dp], y2 [D, D] the pooled-text MLP, g1 [D, Tp], g2 [D, D]
     * the guidance MLP (NONE without guidance_embed), cemb [D, Dc] the context
     * embedder, fmod [2D, D] the final AdaLN-Continuous (scale, shift), fout [PP, D] */
    struct tb_dparam patch, y1, y2, g1, g2, cemb, fmod, fout;
    size_t pos;
    struct tb_dditblock *dbl; /* owned: [ndbl] double-stream / joint blocks */
    int ndbl;
    struct tb_dsingle *sgl; /* owned: [nsgl] single-stream blocks (FLUX) */
    int nsgl;
};

void tb_dlayout_release(struct tb_dlayout *l);

#endif
