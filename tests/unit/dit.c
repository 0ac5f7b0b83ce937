/*
 * tests/unit/dit.c: the CPU diffusion transformers (workloads/diffusion/dit.c) on
 * sd3-tiny (MMDiT: D=32, NH=4, HD=8, two joint blocks, the last one context pre-only,
 * an 8x8 position grid, CFG) and flux-tiny (FLUX: D=32, NH=2, HD=16, one double and two
 * single blocks, RoPE, guidance embedding): parameter counts, forward against the
 * double-precision reference, batching, what each input changes, the sampler and the
 * error paths. Latents of 8x12 (a 4x6 token grid, not square, so rows and columns
 * cannot be confused without the reference noticing) plus S=6 context tokens.
 *
 * Weights: the engine draws N(0, 0.02^2) weights, zero biases and unit norm weights;
 * at that scale the adaLN gates are about 1e-3 and the blocks barely touch the
 * residual stream. So most checks first "boost" the parameters (weights x10, biases
 * N(0, 0.1^2), norm weights 1 + N(0, 0.2^2)), which makes every layer, every bias and
 * every norm weight move the output by a visible amount.
 *
 * Tolerances (float engine vs double reference; float32's unit roundoff is 6e-8 and
 * the sums have at most a few hundred terms): max abs error <= 1e-4 of the largest
 * |reference| and NMSE <= 1e-8; measured errors are printed in the test names. Batch
 * vs alone: 1e-5 of the largest |output|. "Changes the output": by more than 1e-3 of
 * the largest |output|, thousands of times the rounding noise; "leaves the other image
 * alone": within 1e-6 of it (in fact bit-identical).
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

enum { B = 2, LAT_H = 8, LAT_W = 12 };

/* ---- helpers ---- */

static uint64_t rng_state = 0x5eed1234abcdULL;

static double rand_unit(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(rng_state >> 11) + 0.5) / 9007199254740992.0;
}

static double rand_normal(void)
{
    return sqrt(-2.0 * log(rand_unit())) * cos(6.283185307179586 * rand_unit());
}

static void fill_normal(float *p, size_t n, double sd)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(sd * rand_normal());
}

/* One batch of inputs and room for outputs. */
struct io {
    size_t img, nctx, npool; /* floats per image */
    float *x, *t, *ctx, *pooled, *guidance, *out;
    double *ref;
};

static void io_init(struct io *io, const struct tb_darch *a)
{
    io->img = (size_t)a->latent_channels * LAT_H * LAT_W;
    io->nctx = (size_t)a->text_tokens * a->context_dim;
    io->npool = (size_t)a->pooled_dim;
    io->x = malloc(sizeof *io->x * B * io->img);
    io->t = malloc(sizeof *io->t * B);
    io->ctx = malloc(sizeof *io->ctx * B * io->nctx);
    io->pooled = malloc(sizeof *io->pooled * B * (io->npool ? io->npool : 1));
    io->guidance = malloc(sizeof *io->guidance * B);
    io->out = malloc(sizeof *io->out * B * io->img);
    io->ref = malloc(sizeof *io->ref * B * io->img);
    if (!io->x || !io->t || !io->ctx || !io->pooled || !io->guidance || !io->out || !io->ref)
        bail("out of memory");
    fill_normal(io->x, B * io->img, 1.0);
    fill_normal(io->ctx, B * io->nctx, 1.0);
    fill_normal(io->pooled, B * io->npool, 1.0);
    io->t[0] = 0.73f;
    io->t[1] = 0.21f;
    io->guidance[0] = 3.5f;
    io->guidance[1] = 1.25f;
}

static void io_release(struct io *io)
{
    free(io->x);
    free(io->t);
    free(io->ctx);
    free(io->pooled);
    free(io->guidance);
    free(io->out);
    free(io->ref);
}

static void init_or_bail(struct tb_diffusion *m, const struct tb_darch *a, int maxB, int h, int w,
                         uint64_t seed)
{
    char err[512];
    if (tb_diffusion_init(m, a, maxB, h, w, seed, err, sizeof err) != 0)
        bail("%s: tb_diffusion_init: %s", a->name, err);
}

static void forward_or_bail(struct tb_diffusion *m, const float *x, const float *t,
                            const float *ctx, const float *pooled, const float *guidance, int nb,
                            float *out)
{
    char err[512];
    if (tb_diffusion_forward(m, x, t, ctx, pooled, guidance, nb, out, err, sizeof err) != 0)
        bail("%s: forward: %s", m->arch->name, err);
}

/* Weights x10, biases (exact zeros) N(0, 0.1^2), norm weights (exact ones)
 * 1 + N(0, 0.2^2). Returns how many norm weights there were. */
static size_t boost(struct tb_diffusion *m)
{
    size_t norms = 0;
    for (size_t i = 0; i < m->n_params; i++) {
        float *p = &m->params[i];
        if (*p == 1.0f) {
            *p = (float)(1.0 + 0.2 * rand_normal());
            norms++;
        } else if (*p == 0.0f) {
            *p = (float)(0.1 * rand_normal());
        } else {
            *p *= 10.0f;
        }
    }
    return norms;
}

/* The sampler's x_T (diffusion.c): standard normals from its 64-bit LCG, Box-Muller. */
static void sampler_noise(float *p, size_t n, uint64_t s)
{
    for (size_t i = 0; i < n; i += 2) {
        double u1, u2, r;
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        u1 = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        u2 = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
        r = sqrt(-2.0 * log(u1));
        p[i] = (float)(r * cos(6.283185307179586 * u2));
        if (i + 1 < n)
            p[i + 1] = (float)(r * sin(6.283185307179586 * u2));
    }
}

static bool err_has(const char *err, const char *what)
{
    if (strstr(err, what))
        return true;
    diag("message was: '%s'", err);
    return false;
}

/* ---- 1. set-up: parameter count and initial values ---- */

static void check_params(const struct tb_darch *a)
{
    struct tb_diffusion m, m2, m3;
    double expect = tb_darch_params_denoiser(a), s1 = 0, s2 = 0;
    size_t ones = 0, zeros = 0, nw = 0;
    size_t norms = a->qk_norm ? (size_t)a->head_dim * (4 * a->dit_depth + 2 * a->single_depth) : 0;
    char err[512];

    if (!OK(tb_diffusion_init(&m, a, B, LAT_H, LAT_W, 1, err, sizeof err) == 0, "%s: init",
            a->name))
        bail("%s", err);
    IS_DOUBLE(expect, (double)m.n_params, 0, "%s: parameter count %zu == tb_darch's %.0f", a->name,
              m.n_params, expect);
    for (size_t i = 0; i < m.n_params; i++) {
        float p = m.params[i];
        if (p == 1.0f) {
            ones++;
        } else if (p == 0.0f) {
            zeros++;
        } else {
            s1 += p;
            s2 += (double)p * p;
            nw++;
        }
    }
    IS_INT((long long)norms, (long long)ones, "%s: %zu RMSNorm weights start at 1", a->name, norms);
    OK(zeros > 0 && zeros < m.n_params / 10, "%s: zero biases (%zu of %zu parameters)", a->name,
       zeros, m.n_params);
    IS_DOUBLE(0.0, s1 / nw, 4 * 0.02 / sqrt((double)nw), "%s: weights have mean 0", a->name);
    IS_REL(0.02, sqrt(s2 / nw), 0.02, "%s: weights have standard deviation 0.02 (%.5f)", a->name,
           sqrt(s2 / nw));

    init_or_bail(&m2, a, 1, LAT_H, LAT_W, 1);
    init_or_bail(&m3, a, 1, LAT_H, LAT_W, 2);
    OK(m2.n_params == m.n_params && memcmp(m.params, m2.params, m.n_params * sizeof *m.params) == 0,
       "%s: same seed, same weights", a->name);
    OK(memcmp(m.params, m3.params, m.n_params * sizeof *m.params) != 0,
       "%s: different seed, different weights", a->name);
    tb_diffusion_release(&m);
    tb_diffusion_release(&m2);
    tb_diffusion_release(&m3);
    OK(m.params == NULL && m.priv == NULL, "%s: release clears the engine", a->name);
}

/* ---- 2. forward against the reference ---- */

static void check_reference(struct tb_diffusion *m, struct io *io, const char *what)
{
    const struct tb_darch *a = m->arch;
    char err[512];
    struct tap_cmp c;

    forward_or_bail(m, io->x, io->t, io->ctx, io->pooled, io->guidance, B, io->out);
    if (tb_diffusion_reference_forward(m, io->x, io->t, io->ctx, io->pooled, io->guidance, B,
                                       io->ref, err, sizeof err) != 0)
        bail("%s: reference: %s", a->name, err);
    c = tap_compare(io->out, io->ref, B * io->img);
    OK(c.max_ref > 0 && c.max_abs <= 1e-4 * c.max_ref && c.nmse <= 1e-8,
       "%s, %s weights: forward matches the reference for B=%d (max abs err %.2g = %.2g of "
       "max |ref| %.3g, NMSE %.2g)",
       a->name, what, B, c.max_abs, c.max_abs / c.max_ref, c.max_ref, c.nmse);
    OK(tap_all_finite(io->out, B * io->img), "%s, %s weights: output finite", a->name, what);
}

/* ---- 3. batching, inputs that must matter, determinism (boosted weights) ---- */

static void check_behaviour(struct tb_diffusion *m, struct io *io)
{
    const struct tb_darch *a = m->arch;
    size_t n = B * io->img;
    float *base = malloc(sizeof *base * n), *alt = malloc(sizeof *alt * n);
    float *x2 = malloc(sizeof *x2 * io->nctx * B), t2[B], g0[B] = {0, 0};
    struct tap_cmp c, c1;
    double worst = 0, tol;

    if (!base || !alt || !x2)
        bail("out of memory");
    forward_or_bail(m, io->x, io->t, io->ctx, io->pooled, io->guidance, B, base);
    forward_or_bail(m, io->x, io->t, io->ctx, io->pooled, io->guidance, B, alt);
    OK(memcmp(base, alt, sizeof *base * n) == 0, "%s: a repeated forward is bit-identical",
       a->name);

    /* each image alone */
    for (int b = 0; b < B; b++) {
        forward_or_bail(m, io->x + b * io->img, io->t + b, io->ctx + b * io->nctx,
                        io->pooled + b * io->npool, io->guidance + b, 1, alt);
        c = tap_compare_f(alt, base + b * io->img, io->img);
        worst = c.max_abs / c.max_ref > worst ? c.max_abs / c.max_ref : worst;
    }
    OK(worst <= 1e-5,
       "%s: each image of a batch of %d equals it run alone (max diff %.2g of "
       "max |out|)",
       a->name, B, worst);

    c = tap_compare_f(base, base, n); /* max |out| */
    tol = 1e-3 * c.max_ref;

    /* timestep */
    t2[0] = io->t[0] + 0.1f;
    t2[1] = io->t[1];
    forward_or_bail(m, io->x, t2, io->ctx, io->pooled, io->guidance, B, alt);
    c = tap_compare_f(alt, base, io->img);
    c1 = tap_compare_f(alt + io->img, base + io->img, io->img);
    OK(c.max_abs > tol && c1.max_abs <= 1e-6 * c1.max_ref,
       "%s: changing t of image 0 changes its output (by %.3g of %.3g) and not image 1's", a->name,
       c.max_abs, c.max_ref);

    /* context: one token of image 0, so the change reaches its image tokens only through
     * the joint attention */
    memcpy(x2, io->ctx, sizeof *x2 * io->nctx * B);
    for (int i = 0; i < a->context_dim; i++)
        x2[(size_t)(a->text_tokens - 1) * a->context_dim + i] += 1.0f;
    forward_or_bail(m, io->x, io->t, x2, io->pooled, io->guidance, B, alt);
    c = tap_compare_f(alt, base, io->img);
    c1 = tap_compare_f(alt + io->img, base + io->img, io->img);
    OK(c.max_abs > tol && c1.max_abs <= 1e-6 * c1.max_ref,
       "%s: changing one context token of image 0 changes its output (by %.3g) and not "
       "image 1's",
       a->name, c.max_abs);

    /* pooled text */
    memcpy(x2, io->pooled, sizeof *x2 * io->npool * B);
    x2[0] += 1.0f;
    forward_or_bail(m, io->x, io->t, io->ctx, x2, io->guidance, B, alt);
    c = tap_compare_f(alt, base, io->img);
    OK(c.max_abs > tol, "%s: changing the pooled vector changes the output (by %.3g)", a->name,
       c.max_abs);

    /* guidance */
    if (a->guidance_embed) {
        t2[0] = io->guidance[0] + 1.0f;
        t2[1] = io->guidance[1];
        forward_or_bail(m, io->x, io->t, io->ctx, io->pooled, t2, B, alt);
        c = tap_compare_f(alt, base, io->img);
        OK(c.max_abs > tol, "%s: changing the guidance changes the output (by %.3g)", a->name,
           c.max_abs);
        forward_or_bail(m, io->x, io->t, io->ctx, io->pooled, NULL, B, alt);
        forward_or_bail(m, io->x, io->t, io->ctx, io->pooled, g0, B, base);
        OK(memcmp(alt, base, sizeof *base * n) == 0, "%s: guidance NULL embeds guidance 0",
           a->name);
    } else {
        forward_or_bail(m, io->x, io->t, io->ctx, io->pooled, NULL, B, alt);
        OK(memcmp(alt, base, sizeof *base * n) == 0, "%s: guidance is ignored (NULL or not)",
           a->name);
    }
    free(base);
    free(alt);
    free(x2);
}

/* ---- 4. the sampler ---- */

static void check_sample(const struct tb_darch *a)
{
    struct tb_diffusion m;
    enum { STEPS = 3 };
    size_t img = (size_t)a->latent_channels * LAT_H * LAT_W;
    float *lat = malloc(sizeof *lat * B * img), *noise = malloc(sizeof *noise * B * img);
    float *again = malloc(sizeof *again * B * img);
    float gs = a->cfg ? 4.5f : 3.5f;
    int nimg = a->cfg ? 1 : B; /* CFG needs a batch of 2 per image */
    char err[512];
    struct tap_cmp c;

    if (!lat || !noise || !again)
        bail("out of memory");
    init_or_bail(&m, a, B, LAT_H, LAT_W, 9);
    if (!OK(tb_diffusion_sample(&m, nimg, STEPS, gs, 77, lat, err, sizeof err) == 0,
            "%s: sample %d image(s) in %d steps", a->name, nimg, STEPS))
        bail("%s: sample: %s", a->name, err);
    OK(tap_all_finite(lat, nimg * img), "%s: sampled latents finite", a->name);
    sampler_noise(noise, nimg * img, 77);
    c = tap_compare_f(lat, noise, nimg * img);
    OK(c.max_abs > 1e-3 * c.max_ref,
       "%s: the latents moved away from the initial noise (by %.3g of %.3g)", a->name, c.max_abs,
       c.max_ref);
    if (tb_diffusion_sample(&m, nimg, STEPS, gs, 77, again, err, sizeof err) != 0)
        bail("%s: sample: %s", a->name, err);
    OK(memcmp(lat, again, sizeof *lat * nimg * img) == 0, "%s: sampling is deterministic", a->name);
    if (a->cfg) {
        err[0] = '\0';
        OK(tb_diffusion_sample(&m, B, STEPS, gs, 77, lat, err, sizeof err) == -1 &&
               err_has(err, "classifier-free guidance"),
           "%s: %d images with CFG on an engine for %d are refused", a->name, B, B);
    }
    tb_diffusion_release(&m);
    free(lat);
    free(noise);
    free(again);
}

/* ---- 5. errors ---- */

static void check_errors(const struct tb_darch *a, struct io *io)
{
    struct tb_diffusion m;
    char err[512];

    init_or_bail(&m, a, B, LAT_H, LAT_W, 3);
    err[0] = '\0';
    OK(tb_diffusion_forward(&m, io->x, io->t, io->ctx, io->pooled, io->guidance, 0, io->out, err,
                            sizeof err) == -1 &&
           err_has(err, "batch 0"),
       "%s: forward with B = 0 is refused", a->name);
    err[0] = '\0';
    OK(tb_diffusion_forward(&m, io->x, io->t, io->ctx, io->pooled, io->guidance, B + 1, io->out,
                            err, sizeof err) == -1 &&
           err_has(err, "batch 3 outside 1..2"),
       "%s: forward with B above max_batch is refused", a->name);
    err[0] = '\0';
    OK(tb_diffusion_reference_forward(&m, io->x, io->t, io->ctx, io->pooled, io->guidance, B + 1,
                                      io->ref, err, sizeof err) == -1 &&
           err_has(err, "batch 3"),
       "%s: reference with B above max_batch is refused", a->name);
    tb_diffusion_release(&m);

    err[0] = '\0';
    OK(tb_diffusion_init(&m, a, 1, LAT_H, LAT_W + 1, 3, err, sizeof err) == -1 &&
           err_has(err, "multiple of 2"),
       "%s: a latent size that is not a multiple of the patch is refused", a->name);
    OK(m.params == NULL && m.priv == NULL, "%s: a failed init leaves nothing allocated", a->name);
}

static void check_pos_grid(const struct tb_darch *a)
{
    struct tb_diffusion m;
    char err[512];
    int side = a->patch * (a->pos_embed_max + 1); /* one token past the grid */

    err[0] = '\0';
    OK(tb_diffusion_init(&m, a, 1, a->patch, side, 3, err, sizeof err) == -1 &&
           err_has(err, "position grid"),
       "%s: a token grid wider than the position grid is refused", a->name);
    OK(m.params == NULL && m.priv == NULL, "%s: a failed init leaves nothing allocated", a->name);
    side = a->patch * a->pos_embed_max;
    OK(tb_diffusion_init(&m, a, 1, side, side, 3, err, sizeof err) == 0,
       "%s: the full %dx%d position grid is accepted", a->name, a->pos_embed_max, a->pos_embed_max);
    tb_diffusion_release(&m);
}

/* ---- driver ---- */

static void check_model(const char *file)
{
    struct tb_darch a;
    struct tb_diffusion m;
    struct io io;
    char err[512], *path = test_src_path(file);
    size_t norms;

    if (tb_darch_load(&a, path, err, sizeof err) != 0)
        bail("%s", err);
    free(path);
    io_init(&io, &a);
    check_params(&a);

    init_or_bail(&m, &a, B, LAT_H, LAT_W, 42);
    check_reference(&m, &io, "initial");
    norms = boost(&m);
    OK(norms > 0, "%s: boosted %zu norm weights too", a.name, norms);
    check_reference(&m, &io, "boosted");
    check_behaviour(&m, &io);
    tb_diffusion_release(&m);

    check_sample(&a);
    check_errors(&a, &io);
    if (a.pos_embed_max > 0)
        check_pos_grid(&a);
    io_release(&io);
}

int main(void)
{
    plan_lazy();
    check_model("workloads/diffusion/sd3-tiny.model");
    check_model("workloads/diffusion/flux-tiny.model");
    return 0;
}
