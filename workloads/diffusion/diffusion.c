/* workloads/diffusion/diffusion.c: set-up checks, dispatch to the UNet (unet.c) or the
 * DiTs (dit.c), and the sampler loop. See diffusion.h. */
#include "diffusion.h"

#include "diffusion_impl.h"
#include "tb_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TB_PI 3.14159265358979323846

/* UNet (epsilon prediction, k-diffusion form): sigma = t / (1 - t), clamped to the
 * largest sigma SDXL was trained with */
static float unet_sigma(float t)
{
    return t >= 0.93585f ? 14.6146f : t / (1.0f - t);
}

int tb_diffusion_init(struct tb_diffusion *m, const struct tb_darch *arch, int max_batch, int lat_h,
                      int lat_w, uint64_t seed, char *err, size_t errlen)
{
    int mult = arch->kind == TB_DARCH_UNET ? 1 << (arch->nlevels - 1) : arch->patch;

    memset(m, 0, sizeof *m);
    if (max_batch < 1 || lat_h < 1 || lat_w < 1)
        return tb_err(err, errlen, "batch and latent size must be positive");
    if (lat_h % mult || lat_w % mult)
        return tb_err(err, errlen, "%s: latent size %dx%d is not a multiple of %d", arch->name,
                      lat_h, lat_w, mult);
    m->arch = arch;
    m->max_batch = max_batch;
    m->lat_h = lat_h;
    m->lat_w = lat_w;
    if (arch->kind == TB_DARCH_UNET ? tb_unet_init(m, seed, err, errlen)
                                    : tb_dit_init(m, seed, err, errlen)) {
        memset(m, 0, sizeof *m);
        return -1;
    }
    return 0;
}

void tb_diffusion_release(struct tb_diffusion *m)
{
    if (!m->arch)
        return;
    if (m->arch->kind == TB_DARCH_UNET)
        tb_unet_release(m);
    else
        tb_dit_release(m);
    memset(m, 0, sizeof *m);
}

static int check_args(const struct tb_diffusion *m, const void *x, const void *t, const void *ctx,
                      const void *pooled, int B, const void *out, char *err, size_t errlen)
{
    if (!m->arch)
        return tb_err(err, errlen, "engine not set up");
    if (B < 1 || B > m->max_batch)
        return tb_err(err, errlen, "batch %d outside 1..%d", B, m->max_batch);
    if (!x || !t || !ctx || !pooled || !out)
        return tb_err(err, errlen, "missing input or output");
    return 0;
}

int tb_diffusion_forward(struct tb_diffusion *m, const float *x, const float *t, const float *ctx,
                         const float *pooled, const float *guidance, int B, float *out, char *err,
                         size_t errlen)
{
    if (check_args(m, x, t, ctx, pooled, B, out, err, errlen))
        return -1;
    return m->arch->kind == TB_DARCH_UNET
               ? tb_unet_forward(m, x, t, ctx, pooled, B, out, err, errlen)
               : tb_dit_forward(m, x, t, ctx, pooled, guidance, B, out, err, errlen);
}

int tb_diffusion_reference_forward(const struct tb_diffusion *m, const float *x, const float *t,
                                   const float *ctx, const float *pooled, const float *guidance,
                                   int B, double *out, char *err, size_t errlen)
{
    if (check_args(m, x, t, ctx, pooled, B, out, err, errlen))
        return -1;
    return m->arch->kind == TB_DARCH_UNET
               ? tb_unet_reference(m, x, t, ctx, pooled, B, out, err, errlen)
               : tb_dit_reference(m, x, t, ctx, pooled, guidance, B, out, err, errlen);
}

/* Standard normal draws from a 64-bit LCG (Box-Muller). */
static void draw_normal(float *p, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i += 2) {
        double u1, u2, r;
        *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
        u1 = ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
        *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
        u2 = ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
        r = sqrt(-2.0 * log(u1));
        p[i] = (float)(r * cos(2.0 * TB_PI * u2));
        if (i + 1 < n)
            p[i + 1] = (float)(r * sin(2.0 * TB_PI * u2));
    }
}

void tb_diffusion_sample_inputs(const struct tb_darch *a, int B, int lat_h, int lat_w,
                                uint64_t seed, float *latents, float *ctx, float *pooled)
{
    const int cfg = a->cfg ? 2 : 1;
    size_t img = (size_t)a->latent_channels * lat_h * lat_w;
    size_t nctx = (size_t)a->text_tokens * a->context_dim;
    size_t npool = (size_t)(a->pooled_dim > 0 ? a->pooled_dim : 1);

    /* the prompt: stand-ins for the text encoders' outputs; with CFG the second half
     * of the batch keeps a zero context, the unconditional prompt */
    draw_normal(latents, (size_t)B * img, &seed);
    if (a->kind == TB_DARCH_UNET) /* x_T = sigma_max * noise */
        for (size_t i = 0; i < (size_t)B * img; i++)
            latents[i] *= unet_sigma(1.0f);
    memset(ctx, 0, (size_t)cfg * B * nctx * sizeof *ctx);
    memset(pooled, 0, (size_t)cfg * B * npool * sizeof *pooled);
    draw_normal(ctx, (size_t)B * nctx, &seed);
    draw_normal(pooled, (size_t)B * npool, &seed);
}

void tb_diffusion_schedule(const struct tb_darch *a, int s, int steps, float *t, float *c_in,
                           float *dt)
{
    /* t from 1 to 0 in equal steps (flow matching); the UNet's epsilon-prediction Euler
     * step runs on sigma(t), its input scaled by 1 / sqrt(sigma^2 + 1) */
    float t0 = 1.0f - (float)s / steps, t1 = 1.0f - (float)(s + 1) / steps;
    *t = t0;
    if (a->kind == TB_DARCH_UNET) {
        *c_in = 1.0f / sqrtf(unet_sigma(t0) * unet_sigma(t0) + 1.0f);
        *dt = unet_sigma(t1) - unet_sigma(t0);
    } else {
        *c_in = 1.0f;
        *dt = t1 - t0;
    }
}

int tb_diffusion_sample(struct tb_diffusion *m, int B, int steps, float guidance_scale,
                        uint64_t seed, float *latents, char *err, size_t errlen)
{
    const struct tb_darch *a = m->arch;
    const int cfg = a && a->cfg ? 2 : 1;
    size_t img, nctx, npool;
    float *x2 = NULL, *ctx = NULL, *pooled = NULL, *t = NULL, *g = NULL, *out = NULL;
    int rc = -1;

    if (!a)
        return tb_err(err, errlen, "engine not set up");
    if (steps < 1 || B < 1 || cfg * B > m->max_batch)
        return tb_err(err, errlen, "%d steps of %d images%s need a batch of %d, engine has %d",
                      steps, B, cfg == 2 ? " with classifier-free guidance" : "", cfg * B,
                      m->max_batch);
    img = (size_t)a->latent_channels * m->lat_h * m->lat_w;
    nctx = (size_t)a->text_tokens * a->context_dim;
    npool = (size_t)(a->pooled_dim > 0 ? a->pooled_dim : 1);
    x2 = tb_alloc_array((size_t)cfg * B * img, sizeof *x2);
    out = tb_alloc_array((size_t)cfg * B * img, sizeof *out);
    ctx = tb_alloc_array((size_t)cfg * B * nctx, sizeof *ctx);
    pooled = tb_alloc_array((size_t)cfg * B * npool, sizeof *pooled);
    t = tb_alloc_array((size_t)cfg * B, sizeof *t);
    g = tb_alloc_array((size_t)cfg * B, sizeof *g);
    if (!x2 || !out || !ctx || !pooled || !t || !g) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    tb_diffusion_sample_inputs(a, B, m->lat_h, m->lat_w, seed, latents, ctx, pooled);
    for (int i = 0; i < cfg * B; i++)
        g[i] = guidance_scale;
    for (int s = 0; s < steps; s++) {
        float t0, c_in, dt;
        tb_diffusion_schedule(a, s, steps, &t0, &c_in, &dt);
        for (int h = 0; h < cfg; h++)
            for (size_t i = 0; i < (size_t)B * img; i++)
                x2[(size_t)h * B * img + i] = latents[i] * c_in;
        for (int i = 0; i < cfg * B; i++)
            t[i] = t0;
        if (tb_diffusion_forward(m, x2, t, ctx, pooled, a->guidance_embed ? g : NULL, cfg * B, out,
                                 err, errlen) != 0)
            goto out;
        for (size_t i = 0; i < (size_t)B * img; i++) {
            float pred = out[i];
            if (cfg == 2) /* uncond + scale (cond - uncond) */
                pred =
                    out[(size_t)B * img + i] + guidance_scale * (out[i] - out[(size_t)B * img + i]);
            latents[i] += dt * pred;
        }
    }
    for (size_t i = 0; i < (size_t)B * img; i++)
        if (!isfinite(latents[i])) {
            tb_err(err, errlen, "latents not finite after %d steps", steps);
            goto out;
        }
    rc = 0;
out:
    free(x2);
    free(out);
    free(ctx);
    free(pooled);
    free(t);
    free(g);
    return rc;
}

int tb_diffusion_layout(const struct tb_diffusion *m, struct tb_dlayout *l, char *err,
                        size_t errlen)
{
    memset(l, 0, sizeof *l);
    if (!m->arch)
        return tb_err(err, errlen, "engine not set up");
    if (m->arch->kind != TB_DARCH_UNET)
        return tb_dit_layout(m, l, err, errlen);
    return tb_unet_layout(m, l, err, errlen);
}
