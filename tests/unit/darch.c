/*
 * tests/unit/darch.c: the diffusion catalogue (harness/tb_darch.h): parameter counts
 * computed from the files against the published sizes (the UNet, the text encoders and
 * the VAE to the parameter; the DiTs against their rounded figures), the FLOP counts'
 * structure (classifier-free guidance doubles the passes, an image is encoders + passes
 * x denoiser + VAE, larger images cost more), and bad files refused with file, line and
 * field.
 */
#include "tb_darch.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tb_darch load(const char *name)
{
    struct tb_darch a;
    char err[512], rel[128];
    char *p;
    snprintf(rel, sizeof rel, "workloads/diffusion/%s.model", name);
    p = test_src_path(rel);
    if (tb_darch_load(&a, p, err, sizeof err) != 0)
        bail("%s", err);
    free(p);
    return a;
}

static void expect_error(const char *text, const char *want, const char *what)
{
    struct tb_darch a;
    char err[512] = "";
    char *p = test_tmp_path("bad-darch.model");
    FILE *f = fopen(p, "w");
    if (!f)
        bail("cannot write %s", p);
    fputs(text, f);
    fclose(f);
    OK(tb_darch_load(&a, p, err, sizeof err) == -1 && strstr(err, want),
       "%s: refused with '%s' (%s)", what, want, err);
    free(p);
}

int main(void)
{
    struct tb_darch sdxl = load("sdxl"), sd3 = load("sd3.5-large"), flux = load("flux.1-dev");
    struct tb_darch tiny = load("sdxl-tiny"), schnell = load("flux.1-schnell");

    plan(24 + 6 + 3);
    /* ---- parameters ---- */
    IS_DOUBLE(2567463684.0, tb_darch_params_denoiser(&sdxl), 0.5,
              "SDXL UNet: 2,567,463,684 parameters as published");
    IS_DOUBLE(sdxl.published_params, tb_darch_params_denoiser(&sdxl), 0.5,
              "and the file states the same");
    IS_REL(8.1e9, tb_darch_params_denoiser(&sd3), 0.01, "SD3.5 Large MMDiT: %.3fB, published 8.1B",
           tb_darch_params_denoiser(&sd3) / 1e9);
    IS_REL(11.9e9, tb_darch_params_denoiser(&flux), 0.01, "FLUX.1-dev: %.3fB, published 11.9B",
           tb_darch_params_denoiser(&flux) / 1e9);
    /* FLUX.1-schnell: dev's net less the guidance MLP (256 -> D -> D), 11.9 B as MLPerf's
     * flux1 log prints it; its prompt is 256 T5 tokens, so a pass at 256 px is 256 + 256
     * tokens and three of them (training) 20.4 TFLOP, NVIDIA's MODEL_TFLOP_PER_SAMPLE 20.3 */
    IS_DOUBLE(tb_darch_params_denoiser(&flux) - tb_darch_params_denoiser(&schnell),
              256.0 * 3072 + 3072 + 3072.0 * 3072 + 3072, 0.5,
              "FLUX.1-schnell: FLUX.1-dev less its guidance embedding (%.0f parameters)",
              tb_darch_params_denoiser(&flux) - tb_darch_params_denoiser(&schnell));
    IS_REL(11.9e9, tb_darch_params_denoiser(&schnell), 0.01, "FLUX.1-schnell: %.3fB, 11.9 B",
           tb_darch_params_denoiser(&schnell) / 1e9);
    IS_REL(20.3e12, 3 * tb_dflops_denoiser(&schnell, 1, 256), 0.01,
           "a training sample at 256 px: %.2f TFLOP, NVIDIA's count 20.3",
           3 * tb_dflops_denoiser(&schnell, 1, 256) / 1e12);
    for (int i = 0; i < sd3.nencoders; i++)
        IS_DOUBLE(sd3.enc[i].published_params, tb_darch_params_encoder(&sd3.enc[i]), 0.5,
                  "%s: %.0f parameters as published", sd3.enc[i].name, sd3.enc[i].published_params);
    /* the SDXL VAE's published count is encoder + decoder; the decoder alone is what an
     * image's generation runs: 49,490,179 of the 83,653,863 */
    IS_DOUBLE(49490179.0, tb_darch_params_vae_decoder(&sdxl), 0.5, "SDXL VAE decoder");
    OK(tb_darch_params_vae_decoder(&sdxl) < sdxl.published_vae_params,
       "the decoder is part of the published VAE");
    IS_INT(0, flux.cfg, "FLUX.1-dev is guidance-distilled (no CFG)");
    IS_INT(1, sdxl.cfg && sd3.cfg, "SDXL and SD3.5 use classifier-free guidance");

    /* ---- FLOPs ---- */
    IS_DOUBLE(2.0 * 50, tb_dpasses(&sdxl, 50), 0, "CFG: two passes per step");
    IS_DOUBLE(28, tb_dpasses(&flux, 28), 0, "FLUX: one pass per step");
    {
        double img = tb_dflops_image(&sd3, 1, 1024, 28);
        double parts = tb_dflops_encoders(&sd3, 1) + 56 * tb_dflops_denoiser(&sd3, 1, 1024) +
                       tb_dflops_vae_decode(&sd3, 1, 1024);
        IS_REL(parts, img, 1e-12, "an image = encoders + passes x denoiser + VAE decode");
    }
    {
        /* a DiT's products scale with tokens: at least 2 x per-token weights per token;
         * FLUX: 4096 image tokens + 512 text at 1024 px */
        double f = tb_dflops_denoiser(&flux, 1, 1024),
               att = tb_dflops_denoiser_attention(&flux, 1, 1024);
        OK(f > 5e13 && f < 1.2e14, "FLUX.1-dev step at 1024 px: %.1f TFLOP", f / 1e12);
        OK(att > 0.1 * f && att < 0.3 * f, "attention %.0f%% of it", 100 * att / f);
        OK(tb_dflops_denoiser(&flux, 1, 2048) > 4 * f, "2048 px costs over 4x 1024 px");
        IS_REL(2 * f, tb_dflops_denoiser(&flux, 2, 1024), 1e-12, "two images cost twice one");
    }
    {
        double f = tb_dflops_denoiser(&sdxl, 1, 1024),
               conv = tb_dflops_denoiser_conv(&sdxl, 1, 1024);
        OK(f > 4e12 && f < 1e13, "SDXL UNet pass at 1024 px: %.2f TFLOP", f / 1e12);
        OK(conv > 0.2 * f && conv < 0.7 * f, "convolutions %.0f%% of it", 100 * conv / f);
        IS_DOUBLE(0, tb_dflops_denoiser_conv(&flux, 1, 1024), 0, "a DiT has no convolutions");
    }
    {
        /* the work split the performance model times (tb_dwork): the same FLOPs as the
         * counts, FLUX's widths and unfused activations by hand (4096 + 512 tokens of
         * 3072: 19 joint blocks of 10 D, 38 single blocks of 7 D per token) */
        struct tb_dwork w;
        double T = 4096 + 512, D = 3072;
        tb_dwork_denoiser(&flux, 2, 1024, &w);
        IS_REL(tb_dflops_denoiser(&flux, 2, 1024), w.total, 1e-12, "FLUX work: its FLOPs");
        IS_REL(2 * (19 * 10 + 38 * 7) * T * D, w.act_elems, 1e-12,
               "FLUX: %.2f G activation elements through unfused kernels per pass of 2",
               w.act_elems / 1e9);
        IS_REL(tb_dflops_denoiser_attention(&flux, 2, 1024) / 128, w.attn_per_width, 1e-12,
               "attention over head dim 128");
        tb_dwork_denoiser(&sdxl, 1, 1024, &w);
        IS_REL(tb_dflops_denoiser_conv(&sdxl, 1, 1024), w.conv, 1e-12,
               "SDXL work: its convolutions");
        OK(w.conv_per_width > w.conv / 1280 && w.conv_per_width < w.conv / 320,
           "convolutions between 320 and 1280 channels wide");
        tb_dwork_vae_decode(&sdxl, 1, 1024, &w);
        IS_REL(tb_dflops_vae_decode(&sdxl, 1, 1024), w.total, 1e-12, "VAE work: its FLOPs");
    }
    OK(tb_darch_params_denoiser(&tiny) > 1000, "sdxl-tiny loads and counts");

    /* ---- bad files ---- */
    expect_error("name = x\nfamily = vit\n", "line 2: field 'family'", "unknown family");
    expect_error("name = x\nfamily = flux\nlatent_channels = 4\n", "field 'resolution': missing",
                 "missing field");
    return 0;
}
