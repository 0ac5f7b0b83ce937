/* harness/model/tb_model_denoise.c: diffusion (tb_model_impl.h). */
#include "tb_model_impl.h"

#include "tb_flops.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- diffusion ---- */

/* One image batch of b on one device: the text encoders, steps x the denoiser (both
 * CFG halves in one batch), the VAE decode. Matrix products (convolutions included) at the
 * precision's peak and the shape's efficiency, attention in 16-bit, the weights read once per pass
 * at least, a fixed cost per block. Returns seconds; *bound says what dominates the passes. */
static double denoise_time(const struct dev *d, const struct tb_darch *a, double b, int res,
                           int steps, bool split, long g, const char **bound)
{
    const double h = (double)res / a->vae_scale;
    const double tokens = a->kind == TB_DARCH_UNET ? h * h : (h / a->patch) * (h / a->patch);
    /* one step runs the denoiser once on cfgb images (the guided and unguided halves
     * batched together with CFG); split: the two halves run on two devices side by side,
     * as the Neuron SDXL pipeline splits them over the NeuronCores of a chip */
    const double cfgb = a->cfg ? 2.0 * b : b;
    double total, attn, convf, gemm;
    const double M = cfgb * tokens;
    tb_dflops_denoiser_parts(a, cfgb, res, &total, &attn, &convf); /* one walk of the net */
    gemm = total - attn - convf;
    /* the denoiser's work below is for cfgb images; split, each device does half */
    const double share = split ? 0.5 : 1.0;
    const double eff = d->gemm_eff * M / (M + d->e->gemm_m_half);
    const double eff16 = d->e->gemm_eff * M / (M + d->e->gemm_m_half);
    const double blocks = a->kind == TB_DARCH_UNET
                              ? 4.0 * a->nlevels * (a->layers_per_block + 1) + 30.0
                              : (double)a->dit_depth + a->single_depth;
    double tcomp = share * (gemm / (d->peak * eff) + convf / (d->peak * eff * d->e->conv_eff) +
                            attn / (d->bf16_peak * eff16));
    double tmem = tb_dbytes_denoiser(a, d->wbytes) / (d->hbm_bw * d->e->mem_eff);
    /* tensor parallel over g devices: each does 1/g of the work and reads 1/g of the
     * weights; two all-reduces per block of the activations */
    double width = a->kind == TB_DARCH_UNET ? a->ch[a->nlevels - 1] : a->hidden;
    double tokens_act = a->kind == TB_DARCH_UNET ? tokens / 16.0 : tokens + a->text_tokens;
    double tcomm =
        g > 1 ? blocks * 2.0 * tb_model_allreduce_s(d, cfgb * tokens_act * width * 2.0, g, g) : 0;
    double tpass;
    tcomp /= (double)g;
    tmem /= (double)g;
    tpass = fmax(tcomp, tmem) + tcomm + blocks * d->e->layer_s;
    /* encoders and VAE: large products at the 16-bit rate */
    double tenc = tb_dflops_encoders(a, b) / (d->bf16_peak * d->e->gemm_eff);
    double tvae =
        tb_dflops_vae_decode(a, b, res) / (d->bf16_peak * d->e->gemm_eff * d->e->conv_eff);
    *bound = tcomp >= tmem ? "compute" : "memory";
    return (double)steps * tpass + tenc + tvae;
}

/* Bytes per device for a batch of b images: the denoiser's weights (plus the text
 * encoders and VAE, resident as serving stacks keep them), activations of the largest
 * level, the attention scores of one head. */
static double denoise_mem(const struct dev *d, const struct tb_darch *a, double b, int res, long g)
{
    const double h = (double)res / a->vae_scale;
    const double cfgb = a->cfg ? 2.0 * b : b;
    double weights = (tb_darch_params_denoiser(a) + tb_darch_params_encoders(a) +
                      tb_darch_params_vae_decoder(a)) *
                     d->wbytes;
    double width = a->kind == TB_DARCH_UNET ? a->ch[0] * 8.0 : a->hidden * 6.0;
    double tokens = a->kind == TB_DARCH_UNET ? h * h : (h / a->patch) * (h / a->patch);
    double act = cfgb * tokens * width * 2.0 +
                 b * (8.0 * h) * (8.0 * h) * a->vae_ch[a->vae_levels - 1] * 4.0;
    /* tensor parallel over g devices shards the weights and the activations */
    return (weights + act) / (double)g;
}

int tb_model_predict_denoise(const struct tb_model *m, const struct tb_scenario *sc,
                             struct tb_prediction *p, char *err, size_t errlen)
{
    const struct tb_darch *a = sc->darch;
    const int steps = sc->steps > 0 ? (int)sc->steps : a->default_steps;
    const int res = sc->resolution > 0 ? (int)sc->resolution : a->resolution;
    const long chips = p->chips;
    const double imgs = (double)(sc->batch > 0 ? sc->batch : 1);
    struct dev d;
    long k = 1, devs, g, groups;
    double cap, b = 1, t = 0;
    bool split = false;
    const char *bound = "compute";

    if (res % (a->vae_scale * (a->kind == TB_DARCH_UNET ? 1 << (a->nlevels - 1) : a->patch)))
        return tb_err(err, errlen, "resolution %d does not divide into %s's latent grid", res,
                      a->name);
    if (sc->pp > 1)
        return tb_err(err, errlen, "pipeline-parallel diffusion is not modeled (pp=%ld)", sc->pp);
    /* devices: chips, or NeuronCores when dp (or tp x dp) counts more than the chips;
     * without either, a chip is one device (a Neuron chip's cores as one group, as a
     * GPU) */
    if (sc->dp > 0 || sc->tp > 0) {
        long n = (sc->dp > 0 ? sc->dp : 1) * (sc->tp > 0 ? sc->tp : 1);
        if (n > chips) {
            if (n % chips)
                return tb_err(err, errlen, "tp x dp = %ld does not divide over %ld chips", n,
                              chips);
            k = n / chips;
        }
    }
    if (k != 1 && k != 2 && k != 4 && k != 8)
        return tb_err(err, errlen, "tp x dp over %ld chips gives %ld devices per chip", chips, k);
    if (tb_model_dev_init(&d, m, sc, k, err, errlen) != 0)
        return -1;
    devs = chips * k;
    cap = d.hbm * d.e->hbm_usable;
    /* tensor parallel groups of g devices: as given, else the fewest that hold the
     * model (powers of two within an instance) */
    if (sc->tp > 0) {
        g = sc->tp;
    } else {
        for (g = 1; g < d.per_node && g < devs && denoise_mem(&d, a, 1, res, g) > cap; g *= 2)
            ;
    }
    if (devs % g)
        return tb_err(err, errlen, "tp=%ld does not divide the %ld devices", g, devs);
    groups = devs / g;
    p->steps = steps;
    p->resolution = res;
    p->devices = devs;
    p->devices_per_chip = k;
    p->tp = g;
    p->pp = 1;
    p->dp = groups;
    p->hbm_per_device_gib = d.hbm / 1073741824.0;
    if (denoise_mem(&d, a, 1, res, g) > cap) {
        p->fits = false;
        snprintf(p->why, sizeof p->why,
                 "does not fit: %s needs %.1f GiB per device for one image at tp=%ld, %.1f GiB "
                 "usable",
                 a->name, denoise_mem(&d, a, 1, res, g) / 1073741824.0, g, cap / 1073741824.0);
        return 0;
    }
    if (sc->batch_max) {
        /* the throughput-maximising images per group within memory, up to 16 */
        double best = 0;
        for (double bb = 1; bb <= 16 && denoise_mem(&d, a, bb, res, g) <= cap; bb *= 2) {
            const char *bd;
            double tt = denoise_time(&d, a, bb, res, steps, false, g, &bd);
            if (bb / tt > best * 1.02) {
                best = bb / tt;
                b = bb;
                t = tt;
                bound = bd;
            }
        }
        p->images_per_s = b * (double)groups / t;
    } else {
        /* with CFG and two groups per image, the halves run side by side */
        split = a->cfg && (double)groups >= 2 * imgs;
        b = ceil(imgs / (double)groups);
        if (denoise_mem(&d, a, b, res, g) > cap) {
            p->fits = false;
            snprintf(p->why, sizeof p->why,
                     "does not fit: %.0f images per device group need %.1f GiB per device, %.1f "
                     "usable",
                     b, denoise_mem(&d, a, b, res, g) / 1073741824.0, cap / 1073741824.0);
            return 0;
        }
        t = denoise_time(&d, a, split ? 1 : b, res, steps, split, g, &bound);
        p->images_per_s = imgs / t;
    }
    p->fits = true;
    p->batch = sc->batch_max ? (long)(b * groups) : (long)imgs;
    p->mem_per_device_gib = denoise_mem(&d, a, split ? 1 : b, res, g) / 1073741824.0;
    p->s_per_image = t;
    p->images_per_s_per_chip = p->images_per_s / (double)chips;
    p->bound = bound;
    snprintf(p->assumptions, sizeof p->assumptions,
             "%d steps%s at %dx%d; %.0f image%s per group of %ld device%s (tensor parallel), %ld "
             "group%s over %ld devices (%ld per chip); gemm_eff %.2f (half at %.0f rows), "
             "conv_eff %.2f, attention 16-bit; text encoders and VAE decode included",
             steps,
             !a->cfg ? ""
             : split ? " with classifier-free guidance, the two halves on two groups side by side"
                     : " with classifier-free guidance (both halves batched)",
             res, res, split ? 1.0 : b, (split ? 1.0 : b) == 1 ? "" : "s", g, g == 1 ? "" : "s",
             groups, groups == 1 ? "" : "s", devs, k, d.gemm_eff, d.e->gemm_m_half, d.e->conv_eff);
    return 0;
}
