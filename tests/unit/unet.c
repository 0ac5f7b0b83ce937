/*
 * tests/unit/unet.c: the CPU SDXL UNet (workloads/diffusion/unet.c) on sdxl-tiny (two
 * levels of 16 and 32 channels, one transformer in the second) and on an SDXL-shaped
 * trim of the real sdxl (three levels, two ResNets per level, transformers of depth 2 and
 * 10, an additional embedding wider than the pooled vector, at toy widths): parameter
 * counts, the float engine against the double-precision reference, batching, the
 * conditioning inputs, the sampler and error paths.
 *
 * Tolerances (float engine vs double reference, outputs from sums of up to a few
 * thousand products through a few dozen layers): max abs error <= 1e-4 of the largest
 * |reference| and NMSE <= 1e-8; one image alone vs in a batch: 1e-5 of the largest
 * |output|. The latents are not square (8 x 12 for sdxl-tiny, 4 x 8 for the trim) so
 * that a swapped height and width fails. The real sdxl's 2.6 billion parameters are not
 * allocated here: its count is checked in tb_darch, and the trim checks that the layout
 * follows the same structure.
 */
#include "tb_darch.h"
#include "workloads/diffusion/diffusion.h"

#include "tests/tap/basic.h"
#include "tests/tap/float.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAT_H 8
#define LAT_W 12

/* ---- helpers ---- */

static uint64_t rng_state = 0x5eed0123ULL;

static double rand_unit(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(rng_state >> 11) + 0.5) / 9007199254740992.0;
}

static void rand_normal(float *p, size_t n, float sd)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(sd * sqrt(-2.0 * log(rand_unit())) * cos(6.283185307179586 * rand_unit()));
}

static void init_or_bail(struct tb_diffusion *m, const struct tb_darch *a, int maxB, int h, int w,
                         uint64_t seed)
{
    char err[512];
    if (tb_diffusion_init(m, a, maxB, h, w, seed, err, sizeof err) != 0)
        bail("tb_diffusion_init '%s': %s", a->name, err);
}

/* Inputs of B images. */
struct inputs {
    int B;
    size_t img, nctx, npool;
    float *x, *t, *ctx, *pooled;
};

static struct inputs inputs_new(const struct tb_darch *a, int B, int h, int w)
{
    struct inputs in;
    in.B = B;
    in.img = (size_t)a->latent_channels * h * w;
    in.nctx = (size_t)a->text_tokens * a->context_dim;
    in.npool = (size_t)a->pooled_dim;
    in.x = malloc(B * in.img * sizeof *in.x);
    in.t = malloc(B * sizeof *in.t);
    in.ctx = malloc(B * in.nctx * sizeof *in.ctx);
    in.pooled = malloc((B * in.npool + 1) * sizeof *in.pooled);
    if (!in.x || !in.t || !in.ctx || !in.pooled)
        bail("out of memory");
    rand_normal(in.x, B * in.img, 1.0f);
    rand_normal(in.ctx, B * in.nctx, 1.0f);
    rand_normal(in.pooled, B * in.npool, 1.0f);
    for (int b = 0; b < B; b++)
        in.t[b] = 0.2f + 0.6f * (float)b / (float)(B > 1 ? B - 1 : 1);
    return in;
}

static void inputs_free(struct inputs *in)
{
    free(in->x);
    free(in->t);
    free(in->ctx);
    free(in->pooled);
}

static void forward_or_bail(struct tb_diffusion *m, const struct inputs *in, float *out)
{
    char err[512];
    if (tb_diffusion_forward(m, in->x, in->t, in->ctx, in->pooled, NULL, in->B, out, err,
                             sizeof err) != 0)
        bail("forward: %s", err);
}

/* ---- 1. the float engine against the double reference ---- */

static void check_reference(struct tb_diffusion *m, const char *what)
{
    const struct tb_darch *a = m->arch;
    struct inputs in = inputs_new(a, 2, m->lat_h, m->lat_w);
    float *out = malloc(2 * in.img * sizeof *out);
    double *ref = malloc(2 * in.img * sizeof *ref);
    char err[512];
    struct tap_cmp c;

    if (!out || !ref)
        bail("out of memory");
    OK(tb_diffusion_forward(m, in.x, in.t, in.ctx, in.pooled, NULL, 2, out, err, sizeof err) == 0,
       "%s: forward of 2 images", what);
    if (tb_diffusion_reference_forward(m, in.x, in.t, in.ctx, in.pooled, NULL, 2, ref, err,
                                       sizeof err) != 0)
        bail("%s: reference: %s", what, err);
    c = tap_compare(out, ref, 2 * in.img);
    OK(c.max_ref > 0 && c.max_abs <= 1e-4 * c.max_ref && c.nmse <= 1e-8,
       "%s: forward matches the double reference (max abs err %.2g, max |ref| %.2g, "
       "NMSE %.2g)",
       what, c.max_abs, c.max_ref, c.nmse);
    OK(tap_all_finite(out, 2 * in.img), "%s: output finite", what);
    inputs_free(&in);
    free(out);
    free(ref);
}

/* ---- 2. batching and the conditioning inputs ---- */

static void check_batch_and_conditioning(struct tb_diffusion *m)
{
    const struct tb_darch *a = m->arch;
    struct inputs in = inputs_new(a, 2, m->lat_h, m->lat_w), one;
    size_t img = in.img;
    float *both = malloc(2 * img * sizeof *both), *alone = malloc(img * sizeof *alone);
    float *alt = malloc(2 * img * sizeof *alt);
    double worst = 0;
    struct tap_cmp c;

    if (!both || !alone || !alt)
        bail("out of memory");
    forward_or_bail(m, &in, both);
    for (int b = 0; b < 2; b++) {
        one = in;
        one.B = 1;
        one.x = in.x + b * img;
        one.t = in.t + b;
        one.ctx = in.ctx + b * in.nctx;
        one.pooled = in.pooled + b * in.npool;
        forward_or_bail(m, &one, alone);
        c = tap_compare_f(alone, both + b * img, img);
        worst = fmax(worst, c.max_abs / c.max_ref);
    }
    OK(worst <= 1e-5, "each image alone gives its output in the batch (worst %.2g of max)", worst);

    /* the timestep */
    in.t[0] += 0.1f;
    forward_or_bail(m, &in, alt);
    in.t[0] -= 0.1f;
    c = tap_compare_f(alt, both, img);
    OK(c.max_abs > 1e-4 * c.max_ref, "t 0.2 -> 0.3 changes image 0 (by %.3g of %.3g)", c.max_abs,
       c.max_ref);
    c = tap_compare_f(alt + img, both + img, img);
    OK(c.max_abs == 0, "and leaves image 1 alone (by %.3g)", c.max_abs);

    /* the text context (cross-attention) */
    for (size_t i = 0; i < in.nctx; i++)
        in.ctx[i] = -in.ctx[i];
    forward_or_bail(m, &in, alt);
    c = tap_compare_f(alt, both, img);
    OK(c.max_abs > 1e-3 * c.max_ref, "a different context changes the output (by %.3g of %.3g)",
       c.max_abs, c.max_ref);
    for (size_t i = 0; i < in.nctx; i++)
        in.ctx[i] = -in.ctx[i];

    /* the pooled vector (additional embedding) */
    for (size_t i = 0; i < in.npool; i++)
        in.pooled[i] += 1.0f;
    forward_or_bail(m, &in, alt);
    c = tap_compare_f(alt, both, img);
    OK(c.max_abs > 1e-5 * c.max_ref,
       "a different pooled vector changes the output (by %.3g of %.3g)", c.max_abs, c.max_ref);

    inputs_free(&in);
    free(both);
    free(alone);
    free(alt);
}

/* ---- 3. the sampler ---- */

/* x_T as tb_diffusion_sample draws it (diffusion.c): a 64-bit LCG, Box-Muller in
 * pairs, times SDXL's largest sigma. */
static void sampler_noise(float *p, size_t n, uint64_t s)
{
    for (size_t i = 0; i < n; i += 2) {
        double u1, u2, r;
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        u1 = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        u2 = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
        r = sqrt(-2.0 * log(u1));
        p[i] = (float)(r * cos(6.283185307179586 * u2)) * 14.6146f;
        if (i + 1 < n)
            p[i + 1] = (float)(r * sin(6.283185307179586 * u2)) * 14.6146f;
    }
}

static void check_sample(const struct tb_darch *a)
{
    struct tb_diffusion m;
    size_t img = (size_t)a->latent_channels * LAT_H * LAT_W;
    float *lat = malloc(2 * img * sizeof *lat), *noise = malloc(img * sizeof *noise);
    double dd = 0, nn = 0;
    char err[512];

    if (!lat || !noise)
        bail("out of memory");
    init_or_bail(&m, a, 2, LAT_H, LAT_W, 3);
    OK(tb_diffusion_sample(&m, 1, 3, 5.0f, 42, lat, err, sizeof err) == 0,
       "sample: 3 steps with classifier-free guidance");
    OK(tap_all_finite(lat, img), "sample: latents finite");
    sampler_noise(noise, img, 42);
    for (size_t i = 0; i < img; i++) {
        dd += ((double)lat[i] - noise[i]) * ((double)lat[i] - noise[i]);
        nn += (double)noise[i] * noise[i];
    }
    /* the steps move x_T by about sigma_max times the predicted noise: visibly, but
     * much less than x_T itself (so x_T is the noise reproduced above) */
    OK(dd > 1e-6 * nn && dd < 0.25 * nn,
       "sample: latents moved from x_T (rms change %.3g of rms x_T %.3g)", sqrt(dd / img),
       sqrt(nn / img));
    err[0] = '\0';
    OK(tb_diffusion_sample(&m, 2, 3, 5.0f, 42, lat, err, sizeof err) == -1 && err[0],
       "sample: 2 images with CFG refused on a batch of 2 (%s)", err);
    tb_diffusion_release(&m);
    free(lat);
    free(noise);
}

/* ---- 4. errors ---- */

static void check_errors(const struct tb_darch *a)
{
    struct tb_diffusion m;
    struct inputs in = inputs_new(a, 3, LAT_H, LAT_W);
    float *out = malloc(3 * in.img * sizeof *out);
    double *ref = malloc(3 * in.img * sizeof *ref);
    struct tb_darch bad = *a;
    char err[512];

    if (!out || !ref)
        bail("out of memory");
    init_or_bail(&m, a, 2, LAT_H, LAT_W, 1);
    err[0] = '\0';
    OK(tb_diffusion_forward(&m, in.x, in.t, in.ctx, in.pooled, NULL, 0, out, err, sizeof err) ==
               -1 &&
           strstr(err, "batch"),
       "forward of 0 images refused (%s)", err);
    err[0] = '\0';
    OK(tb_diffusion_forward(&m, in.x, in.t, in.ctx, in.pooled, NULL, 3, out, err, sizeof err) ==
               -1 &&
           strstr(err, "batch"),
       "forward of 3 images on a batch of 2 refused (%s)", err);
    err[0] = '\0';
    OK(tb_diffusion_reference_forward(&m, in.x, in.t, in.ctx, in.pooled, NULL, 3, ref, err,
                                      sizeof err) == -1 &&
           strstr(err, "batch"),
       "reference of 3 images on a batch of 2 refused (%s)", err);
    tb_diffusion_release(&m);

    bad.head_dim = 12; /* 32 channels of a transformer level do not split into heads of 12 */
    err[0] = '\0';
    OK(tb_diffusion_init(&m, &bad, 1, LAT_H, LAT_W, 1, err, sizeof err) == -1 && err[0] &&
           m.params == NULL && m.priv == NULL,
       "init refuses channels that do not split into heads (%s)", err);
    err[0] = '\0';
    OK(tb_diffusion_init(&m, a, 1, 7, LAT_W, 1, err, sizeof err) == -1 && err[0],
       "init refuses a latent height that does not halve (%s)", err);
    inputs_free(&in);
    free(out);
    free(ref);
}

/* ---- 5. SDXL's structure at toy width ---- */

/* sdxl with its levels, depths, ResNets per level and add_in_dim > pooled_dim kept and
 * every width divided by 20 or more. */
static struct tb_darch sdxl_trim(const struct tb_darch *sdxl)
{
    struct tb_darch t = *sdxl;
    snprintf(t.name, sizeof t.name, "sdxl-trim");
    t.ch[0] = 16, t.ch[1] = 32, t.ch[2] = 64;
    t.head_dim = 8;
    t.groups = 4;
    t.text_tokens = 5;
    t.context_dim = 48;
    t.pooled_dim = 32;
    t.time_proj_dim = 32;
    t.time_embed_dim = 64;
    t.add_in_dim = 70; /* 2816 = 1280 pooled + 6 x 256 time ids: here 32 + 38 */
    return t;
}

int main(void)
{
    struct tb_darch a, sdxl, trim;
    struct tb_diffusion m, m2;
    char err[512], *path;
    float *o1, *o2;
    size_t img;

    plan_lazy();
    path = test_src_path("workloads/diffusion/sdxl-tiny.model");
    if (tb_darch_load(&a, path, err, sizeof err) != 0)
        bail("%s", err);
    free(path);
    path = test_src_path("workloads/diffusion/sdxl.model");
    if (tb_darch_load(&sdxl, path, err, sizeof err) != 0)
        bail("%s", err);
    free(path);

    err[0] = '\0';
    if (!OK(tb_diffusion_init(&m, &a, 2, LAT_H, LAT_W, 1, err, sizeof err) == 0,
            "init sdxl-tiny for 2 images of %dx%d latents", LAT_H, LAT_W))
        bail("%s", err);
    IS_DOUBLE(tb_darch_params_denoiser(&a), (double)m.n_params, 0,
              "sdxl-tiny: the arena holds tb_darch_params_denoiser() parameters (%zu)", m.n_params);
    check_reference(&m, "sdxl-tiny");
    check_batch_and_conditioning(&m);

    /* every parameter off its initial value: nonzero biases, norms away from 1 */
    init_or_bail(&m2, &a, 2, LAT_H, LAT_W, 1);
    {
        float *noise = malloc(m2.n_params * sizeof *noise);
        if (!noise)
            bail("out of memory");
        rand_normal(noise, m2.n_params, 0.05f);
        for (size_t i = 0; i < m2.n_params; i++)
            m2.params[i] += noise[i];
        free(noise);
    }
    check_reference(&m2, "sdxl-tiny, every parameter perturbed");
    tb_diffusion_release(&m2);

    /* the same seed gives the same weights; another seed others */
    img = (size_t)a.latent_channels * LAT_H * LAT_W;
    o1 = malloc(img * sizeof *o1);
    o2 = malloc(img * sizeof *o2);
    if (!o1 || !o2)
        bail("out of memory");
    {
        struct inputs in = inputs_new(&a, 1, LAT_H, LAT_W);
        init_or_bail(&m2, &a, 1, LAT_H, LAT_W, 1);
        forward_or_bail(&m, &in, o1);
        forward_or_bail(&m2, &in, o2);
        OK(memcmp(o1, o2, img * sizeof *o1) == 0, "seed 1 twice: identical outputs");
        tb_diffusion_release(&m2);
        init_or_bail(&m2, &a, 1, LAT_H, LAT_W, 2);
        forward_or_bail(&m2, &in, o2);
        OK(memcmp(o1, o2, img * sizeof *o1) != 0, "seed 2: other outputs");
        tb_diffusion_release(&m2);
        inputs_free(&in);
    }
    free(o1);
    free(o2);
    tb_diffusion_release(&m);

    check_sample(&a);
    check_errors(&a);

    IS_DOUBLE(2567463684.0, tb_darch_params_denoiser(&sdxl), 0,
              "sdxl: tb_darch_params_denoiser is the published 2,567,463,684");
    trim = sdxl_trim(&sdxl);
    init_or_bail(&m, &trim, 2, 4, 8, 5); /* levels of 4 x 8, 2 x 4 and 1 x 2 pixels */
    IS_DOUBLE(tb_darch_params_denoiser(&trim), (double)m.n_params, 0,
              "sdxl-trim (sdxl's structure at toy width): the arena holds "
              "tb_darch_params_denoiser() parameters (%zu)",
              m.n_params);
    check_reference(&m, "sdxl-trim");
    tb_diffusion_release(&m);
    return 0;
}
