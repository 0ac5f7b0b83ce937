/*
 * workloads/diffusion/diffusion.h: the CPU diffusion engine. Real denoiser math in fp32
 * on random weights drawn from a seed, matrix products and convolutions (im2col)
 * through OpenBLAS: the SDXL UNet (unet.c), the SD3.5 MMDiT and the FLUX DiT (dit.c),
 * described by a struct tb_darch (harness/tb_darch.h, which states the block structure
 * both follow). The text encoders and the VAE are not run: their outputs are stand-ins
 * drawn from the seed (the performance model counts their cost).
 *
 * Shape legend: B images, Cl latent channels, H x W latent size, S text tokens, Dc
 * context width (arch->context_dim), Dp pooled width (arch->pooled_dim).
 *
 * Timesteps: t in [0, 1]. The UNet embeds 1000 t (its training timesteps); the DiTs
 * embed 1000 t as SD3 and FLUX do. Guidance: FLUX embeds the guidance strength; the
 * others ignore it.
 *
 * Ownership: a struct tb_diffusion owns its parameter arena and scratch; release frees
 * them. The architecture is borrowed and must outlive it. Not thread-safe.
 */
#ifndef TB_DIFFUSION_H
#define TB_DIFFUSION_H

#include "tb_darch.h"

#include <stddef.h>
#include <stdint.h>

struct tb_diffusion {
    const struct tb_darch *arch; /* borrowed */
    int max_batch;               /* largest B forward accepts */
    int lat_h, lat_w;            /* latent size the engine was set up for */
    float *params;               /* owned arena: every parameter */
    size_t n_params;
    void *priv; /* owned: the engine's own layout, activations, scratch */
};

/* Allocate for up to max_batch images of lat_h x lat_w latents (multiples of the
 * patch size, and of 2^(nlevels-1) for the UNet) and draw the weights from seed (normal,
 * std 0.02 for linear and conv weights, zero biases, norms at 1; adaLN modulation
 * weights small but nonzero so they matter). Returns 0 or -1 with a message. */
int tb_diffusion_init(struct tb_diffusion *m, const struct tb_darch *arch, int max_batch, int lat_h,
                      int lat_w, uint64_t seed, char *err, size_t errlen);
void tb_diffusion_release(struct tb_diffusion *m);

/* One denoiser forward pass.
 *   x        [B, Cl, H, W] latents
 *   t        [B] timesteps in [0, 1]
 *   ctx      [B, S, Dc] text context
 *   pooled   [B, Dp] pooled text vector (UNet: the first Dp of the additional
 *            conditioning; the rest is zero time ids)
 *   guidance [B] guidance strengths (FLUX) or NULL
 *   out      [B, Cl, H, W]: the prediction (noise for the UNet, velocity for the DiTs)
 * Returns 0, or -1 with a message (B out of range, an unset argument). */
int tb_diffusion_forward(struct tb_diffusion *m, const float *x, const float *t, const float *ctx,
                         const float *pooled, const float *guidance, int B, float *out, char *err,
                         size_t errlen);

/* Plain double-precision reference of tb_diffusion_forward (straightforward loops, no
 * BLAS) from the engine's current parameters, into out [B, Cl, H, W] doubles. For
 * tests. */
int tb_diffusion_reference_forward(const struct tb_diffusion *m, const float *x, const float *t,
                                   const float *ctx, const float *pooled, const float *guidance,
                                   int B, double *out, char *err, size_t errlen);

/* Generate B images' latents: x_T drawn from seed, stand-in text context and pooled
 * vectors drawn from seed, then `steps` Euler steps of the sampler over t from 1 to 0
 * (flow matching for the DiTs: x <- x + (t_next - t) v; for the UNet the
 * epsilon-prediction Euler step of k-diffusion on sigma = t / (1 - t), clamped to
 * SDXL's largest sigma 14.6, with x_T scaled by it and the input by
 * 1 / sqrt(sigma^2 + 1)), with classifier-free guidance (a zero context as the unconditional
 * prompt, both halves in one 2B batch, guidance_scale mixing them) when arch->cfg, and the guidance
 * embedding set to guidance_scale for FLUX. Needs max_batch >= 2B with CFG. latents:
 * [B, Cl, H, W] out. Returns 0 or -1. */
int tb_diffusion_sample(struct tb_diffusion *m, int B, int steps, float guidance_scale,
                        uint64_t seed, float *latents, char *err, size_t errlen);

/* The inputs tb_diffusion_sample draws from seed, for executors that run its loop
 * themselves: x_T into latents [B, Cl, H, W] (scaled by the UNet's largest sigma), the
 * stand-in text context into ctx [cfg B, S, Dc] and pooled vectors into pooled
 * [cfg B, max(Dp, 1)], where cfg = 2 with classifier-free guidance (arch->cfg), the
 * second half zero (the unconditional prompt), else 1. */
void tb_diffusion_sample_inputs(const struct tb_darch *a, int B, int lat_h, int lat_w,
                                uint64_t seed, float *latents, float *ctx, float *pooled);

/* Step s (0-based) of `steps` of the sampler: the timestep *t of the denoiser pass, the
 * scale *c_in of its input (latents * c_in) and the coefficient *dt of the Euler update
 * latents += dt * prediction. */
void tb_diffusion_schedule(const struct tb_darch *a, int s, int steps, float *t, float *c_in,
                           float *dt);

/* Where every parameter lives in m->params (harness/tb_darch.h), for executors that
 * mirror the engine. The caller releases l with tb_dlayout_release. Returns 0, or -1
 * with a message (out of memory). */
int tb_diffusion_layout(const struct tb_diffusion *m, struct tb_dlayout *l, char *err,
                        size_t errlen);

#endif
