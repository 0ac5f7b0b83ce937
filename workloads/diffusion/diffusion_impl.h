/*
 * workloads/diffusion/diffusion_impl.h: what diffusion.c (set-up checks, dispatch, the
 * sampler) calls in the two denoiser implementations. Not for use outside
 * workloads/diffusion/.
 *
 * Contract: init is called with m->arch, m->max_batch, m->lat_h and m->lat_w set and
 * everything else zero; it fills params, n_params and priv (all its allocations) and
 * returns 0, or -1 after freeing what it allocated. release frees what init allocated.
 * forward and reference have tb_diffusion_forward's arguments, already checked
 * (1 <= B <= max_batch, no NULL but guidance).
 */
#ifndef TB_DIFFUSION_IMPL_H
#define TB_DIFFUSION_IMPL_H

#include "diffusion.h"

/* unet.c: TB_DARCH_UNET */
int tb_unet_init(struct tb_diffusion *m, uint64_t seed, char *err, size_t errlen);
void tb_unet_release(struct tb_diffusion *m);
int tb_unet_forward(struct tb_diffusion *m, const float *x, const float *t, const float *ctx,
                    const float *pooled, int B, float *out, char *err, size_t errlen);
int tb_unet_reference(const struct tb_diffusion *m, const float *x, const float *t,
                      const float *ctx, const float *pooled, int B, double *out, char *err,
                      size_t errlen);
int tb_unet_layout(const struct tb_diffusion *m, struct tb_dlayout *l, char *err, size_t errlen);

/* dit.c: TB_DARCH_MMDIT and TB_DARCH_FLUX */
int tb_dit_init(struct tb_diffusion *m, uint64_t seed, char *err, size_t errlen);
void tb_dit_release(struct tb_diffusion *m);
int tb_dit_layout(const struct tb_diffusion *m, struct tb_dlayout *l, char *err, size_t errlen);
int tb_dit_forward(struct tb_diffusion *m, const float *x, const float *t, const float *ctx,
                   const float *pooled, const float *guidance, int B, float *out, char *err,
                   size_t errlen);
int tb_dit_reference(const struct tb_diffusion *m, const float *x, const float *t, const float *ctx,
                     const float *pooled, const float *guidance, int B, double *out, char *err,
                     size_t errlen);

#endif
