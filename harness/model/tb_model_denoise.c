/* harness/model/tb_model_denoise.c: diffusion (tb_model_impl.h). */
#include "tb_model_impl.h"

#include "tb_flops.h"
#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- diffusion ---- */

/* The denoiser's blocks, each with its fixed cost (layer_us): the UNet's ResNets,
 * transformers and resamplers, a DiT's joint and single-stream blocks. */
static double diff_blocks(const struct tb_darch *a)
{
    return a->kind == TB_DARCH_UNET ? 4.0 * a->nlevels * (a->layers_per_block + 1) + 30.0
                                    : (double)a->dit_depth + a->single_depth;
}

/* The parts of one image batch's time (denoise_time). */
struct dtime {
    double pass; /* one denoising step: the denoiser's pass over both CFG halves */
    double enc;  /* the text encoders, once per prompt */
    double vae;  /* the VAE decode */
    double act;  /* of pass: the unfused kernels' activation traffic */
};

/* Seconds of work w at the rates of d on one device, the products split over g devices
 * (tensor parallel; the activations too): each kind at the precision's peak (attention in
 * 16-bit) times gemm_eff's large-M efficiency, the convolutions times conv_eff, and each
 * product's narrow dimension n costing (n + gemm_n_half) / n, the same term as a layer
 * GEMM narrowed by tensor parallelism (tb_model_gemm_eff): the output width of a linear
 * layer or convolution (320 channels at SDXL's first level, 128 in the VAE's last), the
 * head dim of attention (QK^T and AV are products of inner or outer width head_dim: 64 in
 * SDXL, 128 in FLUX). M, the rows, is the tokens of the batch. */
static double work_s(const struct dev *d, const struct tb_dwork *w, double M, double peak,
                     double eff, long g, double *comp)
{
    const double h = d->e->gemm_n_half, gg = (double)g;
    const double em = eff * M / (M + d->e->gemm_m_half);
    const double em16 = d->e->gemm_eff * M / (M + d->e->gemm_m_half);
    const double gemm = w->total - w->attn - w->conv;
    /* activations in 16-bit between the kernels, fp32 in an fp32 run */
    const double abytes = d->wbytes > 2 ? d->wbytes : 2;
    double t = (gemm + h * gg * w->gemm_per_width) / (peak * em) +
               (w->conv + h * gg * w->conv_per_width) / (peak * em * d->e->conv_eff) +
               (w->attn + h * w->attn_per_width) / (d->bf16_peak * em16);
    *comp = t / gg;
    return w->act_elems * abytes / (d->hbm_bw * d->e->mem_eff) / gg;
}

/* One image batch of b on one device group of g: the text encoders, steps x the denoiser
 * (both CFG halves in one batch), the VAE decode (work_s). Per pass, the products and the
 * weight reads overlap (the larger counts), the unfused kernels' activation traffic runs
 * between them and adds, as do the collectives and a fixed cost per block. Returns the
 * image batch's seconds; *t its parts; *bound what dominates the passes. */
static double denoise_time(const struct dev *d, const struct tb_darch *a, double b, int res,
                           int steps, bool split, long g, struct dtime *t, const char **bound)
{
    const double h = (double)res / a->vae_scale;
    const double tokens = a->kind == TB_DARCH_UNET ? h * h : (h / a->patch) * (h / a->patch);
    /* one step runs the denoiser once on cfgb images (the guided and unguided halves
     * batched together with CFG); split: the two halves run on two devices side by side,
     * as the Neuron SDXL pipeline splits them over the NeuronCores of a chip */
    const double cfgb = a->cfg ? 2.0 * b : b;
    /* the denoiser's work below is for cfgb images; split, each device does half */
    const double share = split ? 0.5 : 1.0;
    const double blocks = diff_blocks(a);
    struct tb_dwork w, vw;
    double tcomp, tact, tvc;
    tb_dwork_denoiser(a, cfgb, res, &w); /* one walk of the net */
    tact = share * work_s(d, &w, cfgb * tokens, d->peak, d->gemm_eff, g, &tcomp);
    tcomp *= share;
    double tmem = tb_dbytes_denoiser(a, d->wbytes) / (d->hbm_bw * d->e->mem_eff) / (double)g;
    /* tensor parallel over g devices: each does 1/g of the work and reads 1/g of the
     * weights; two all-reduces per block of the activations */
    double width = a->kind == TB_DARCH_UNET ? a->ch[a->nlevels - 1] : a->hidden;
    double tokens_act = a->kind == TB_DARCH_UNET ? tokens / 16.0 : tokens + a->text_tokens;
    double tcomm =
        g > 1 ? blocks * 2.0 * tb_model_allreduce_s(d, cfgb * tokens_act * width * 2.0, g, g) : 0;
    /* a GPU runs the unfused kernels between the products; a NeuronCore runs them on its
     * Vector and Scalar engines beside the Tensor engine, so they overlap */
    if (!strncmp(d->e->family, "neuron", 6))
        t->pass = fmax(fmax(tcomp, tmem), tact) + tcomm + blocks * d->e->layer_s;
    else
        t->pass = fmax(tcomp, tmem) + tact + tcomm + blocks * d->e->layer_s;
    t->act = tact;
    /* encoders: large products at the 16-bit rate; the VAE decode on one device, in
     * 16-bit, at (8h)^2 pixels */
    t->enc = tb_dflops_encoders(a, b) / (d->bf16_peak * d->e->gemm_eff);
    tb_dwork_vae_decode(a, b, res, &vw);
    t->vae = work_s(d, &vw, b * 64.0 * h * h, d->bf16_peak, d->e->gemm_eff, 1, &tvc);
    t->vae += tvc;
    *bound = tcomp >= tmem ? "compute" : "memory";
    return (double)steps * t->pass + t->enc + t->vae;
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

/* The devices of a diffusion layout into *d and *k (devices per chip): chips, or
 * NeuronCores when dp (or tp x dp) counts more than the chips; without either, a chip is
 * one device (a Neuron chip's cores as one group, as a GPU). 0 or -1 with a reason. */
static int diff_devices(const struct tb_model *m, const struct tb_scenario *sc, long chips,
                        struct dev *d, long *k, char *err, size_t errlen)
{
    *k = 1;
    if (sc->dp > 0 || sc->tp > 0) {
        long n;
        if (tb_model_layout_devices(sc, &n, err, errlen) != 0)
            return -1;
        if (n > chips) {
            if (n % chips)
                return tb_err(err, errlen, "tp x dp = %ld does not divide over %ld chips", n,
                              chips);
            *k = n / chips;
        }
    }
    if (*k != 1 && *k != 2 && *k != 4 && *k != 8)
        return tb_err(err, errlen, "tp x dp over %ld chips gives %ld devices per chip", chips, *k);
    return tb_model_dev_init(d, m, sc, *k, err, errlen);
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
    struct dtime parts = {0, 0, 0, 0};

    if (res % (a->vae_scale * (a->kind == TB_DARCH_UNET ? 1 << (a->nlevels - 1) : a->patch)))
        return tb_err(err, errlen, "resolution %d does not divide into %s's latent grid", res,
                      a->name);
    if (sc->pp > 1)
        return tb_err(err, errlen, "pipeline-parallel diffusion is not modeled (pp=%ld)", sc->pp);
    /* devices: chips, or NeuronCores when dp (or tp x dp) counts more than the chips;
     * without either, a chip is one device (a Neuron chip's cores as one group, as a
     * GPU) */
    if (diff_devices(m, sc, chips, &d, &k, err, errlen) != 0)
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
            struct dtime pt;
            double tt = denoise_time(&d, a, bb, res, steps, false, g, &pt, &bd);
            if (bb / tt > best * 1.02) {
                best = bb / tt;
                b = bb;
                t = tt;
                parts = pt;
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
        t = denoise_time(&d, a, split ? 1 : b, res, steps, split, g, &parts, &bound);
        p->images_per_s = imgs / t;
    }
    p->fits = true;
    p->batch = sc->batch_max ? (long)(b * groups) : (long)imgs;
    p->mem_per_device_gib = denoise_mem(&d, a, split ? 1 : b, res, g) / 1073741824.0;
    p->s_per_image = t;
    p->ms_per_step = parts.pass * 1e3;
    p->images_per_s_per_chip = p->images_per_s / (double)chips;
    p->bound = bound;
    snprintf(p->assumptions, sizeof p->assumptions,
             "%d steps%s%s at %dx%d, %.1f ms a step; %.0f image%s per group of %ld device%s "
             "(tensor parallel), %ld group%s over %ld devices (%ld per chip); gemm_eff %.2f (half "
             "at %.0f rows, %.0f columns or head dim), conv_eff %.2f, attention 16-bit; unfused "
             "norms and gates %s; text encoders and VAE decode included",
             steps,
             sc->steps > 0 ? ""
                           : " (steps not given: the model's default_steps, the "
                             "diffusers pipeline default)",
             !a->cfg ? ""
             : split ? " with classifier-free guidance, the two halves on two groups side by side"
                     : " with classifier-free guidance (both halves batched)",
             res, res, p->ms_per_step, split ? 1.0 : b, (split ? 1.0 : b) == 1 ? "" : "s", g,
             g == 1 ? "" : "s", groups, groups == 1 ? "" : "s", devs, k, d.gemm_eff,
             d.e->gemm_m_half, d.e->gemm_n_half, d.e->conv_eff,
             !strncmp(d.e->family, "neuron", 6) ? "overlapped (Vector and Scalar engines)"
                                                : "added to each pass");
    return 0;
}

/* ---- training a diffusion model's denoiser ---- */

/* The tokens of one training sample the denoiser processes: the latent image's (a DiT's
 * patches, a UNet's latent pixels) and, for a DiT, the text context's, which runs
 * through every joint and single-stream block beside them. */
static double dtrain_tokens(const struct tb_darch *a, int res, double *img)
{
    const double h = (double)res / a->vae_scale;
    *img = a->kind == TB_DARCH_UNET ? h * h : (h / a->patch) * (h / a->patch);
    return *img + (a->kind == TB_DARCH_UNET ? 0 : (double)a->text_tokens);
}

/* Bytes per device to train with b images per replica over g devices: bf16 weights and
 * gradients, fp32 master weights and Adam's two moments sharded over the dp replicas (the
 * distributed optimizer), and the activations kept for the backward pass: per block and
 * token about 34 D bytes of a transformer block without recomputation (Korthikanti et
 * al. 2022, 34 s b h per layer; a joint block's two streams are one stream over image
 * plus text tokens), 2 D with full recomputation (each block's input alone); the text
 * encoders and VAE are not resident (the samples' encodings are precomputed, as MLPerf's
 * flux1 does). */
static double dtrain_mem(const struct tb_darch *a, double b, int res, long g, long dp,
                         bool recompute)
{
    double img, tok = dtrain_tokens(a, res, &img);
    const double params = tb_darch_params_denoiser(a);
    const double width = a->kind == TB_DARCH_UNET ? a->ch[0] * 8.0 : a->hidden;
    const double blocks = diff_blocks(a);
    double state = params * (2.0 + 2.0) + params * 12.0 / (double)dp;
    double act = b * tok * width * blocks * (recompute ? 2.0 : 34.0);
    return (state + act) / (double)g;
}

int tb_model_predict_dtrain(const struct tb_model *m, const struct tb_scenario *sc,
                            struct tb_prediction *p, char *err, size_t errlen)
{
    const struct tb_darch *a = sc->darch;
    const int res = sc->resolution > 0 ? (int)sc->resolution : a->resolution;
    const long chips = p->chips;
    const double blocks = diff_blocks(a);
    const double params = tb_darch_params_denoiser(a);
    struct dev d;
    struct tb_dwork w;
    long k = 1, devs, g, dp;
    double cap, need, GB, b, img, tok, tcomp, tact, tkern, ttp = 0, tdp, topt, tfix, step;
    bool rc = false;
    char priced[400] = "", evals[160] = "; time_to_train without evaluations";

    if (res % (a->vae_scale * (a->kind == TB_DARCH_UNET ? 1 << (a->nlevels - 1) : a->patch)))
        return tb_err(err, errlen, "resolution %d does not divide into %s's latent grid", res,
                      a->name);
    if (sc->pp > 1)
        return tb_err(err, errlen, "pipeline-parallel diffusion training is not modeled (pp=%ld)",
                      sc->pp);
    if (sc->lora_rank > 0)
        return tb_err(err, errlen, "LoRA on a diffusion model is not modeled");
    if (sc->batch <= 0)
        return tb_err(err, errlen,
                      "batch: the global batch (images per step) is needed to train %s", a->name);
    if (diff_devices(m, sc, chips, &d, &k, err, errlen) != 0)
        return -1;
    if (!strcmp(d.format, "MXFP4") || !strcmp(d.format, "NVFP4"))
        return tb_err(err, errlen, "training %s in fp4 is not modeled: train in fp8 or bf16",
                      a->name);
    devs = chips * k;
    g = sc->tp > 0 ? sc->tp : 1;
    if (devs % g)
        return tb_err(err, errlen, "tp=%ld does not divide the %ld devices", g, devs);
    dp = sc->dp > 0 ? sc->dp : devs / g;
    if (dp * g != devs)
        return tb_err(err, errlen, "tp x dp = %ld x %ld is not the %ld devices", g, dp, devs);
    GB = (double)sc->batch;
    /* each replica's share of the global batch; a replica without an image is idle */
    b = ceil(GB / (double)dp);
    cap = d.hbm * d.e->hbm_usable;
    p->devices = devs;
    p->devices_per_chip = k;
    p->tp = g;
    p->pp = 1;
    p->dp = dp;
    p->resolution = res;
    p->batch = sc->batch;
    p->hbm_per_device_gib = d.hbm / 1073741824.0;
    need = dtrain_mem(a, b, res, g, dp, false);
    if (need > cap) {
        rc = true; /* full recomputation: each block's forward again in the backward */
        need = dtrain_mem(a, b, res, g, dp, true);
        if (need > cap) {
            p->fits = false;
            snprintf(p->why, sizeof p->why,
                     "does not fit: %.0f images per replica at tp=%ld need %.1f GiB per device "
                     "even with full recomputation, %.1f usable",
                     b, g, need / 1073741824.0, cap / 1073741824.0);
            return 0;
        }
    }
    tok = dtrain_tokens(a, res, &img);
    /* one training step of a replica: the forward pass's work (tb_dwork_denoiser) three
     * times over for the products (forward, and the backward's input and weight
     * gradients), the attention's 3.5 times (its backward recomputes QK^T: 2.5 forwards,
     * as the LLM model counts it), the unfused kernels' traffic three times; four times
     * and 4.5 with full recomputation. At the precision's peak and gemm_eff (the attention
     * in 16-bit), the step keeping train_eff of the kernels' speed, as an LLM's does */
    tb_dwork_denoiser(a, b, res, &w);
    {
        const double f = rc ? 4.0 : 3.0, fa = rc ? 4.5 : 3.5;
        struct tb_dwork w3 = w;
        w3.attn = fa * w.attn;
        w3.conv = f * w.conv;
        w3.total = f * (w.total - w.attn) + w3.attn;
        w3.gemm_per_width = f * w.gemm_per_width;
        w3.conv_per_width = f * w.conv_per_width;
        w3.attn_per_width = fa * w.attn_per_width;
        w3.act_elems = f * w.act_elems;
        tact = work_s(&d, &w3, b * tok, d.peak, d.gemm_eff, g, &tcomp);
    }
    tkern = (tcomp + tact) / (d.e->train_eff * d.e->dit_train_eff);
    /* tensor parallel: two all-reduces per block forward and two backward, of the
     * replica's activations, tp_overlap of them hidden (as an LLM's) */
    if (g > 1) {
        const double width = a->kind == TB_DARCH_UNET ? a->ch[a->nlevels - 1] : a->hidden;
        const double act_tok = a->kind == TB_DARCH_UNET ? img / 16.0 : tok;
        ttp = blocks * 4.0 * tb_model_allreduce_s(&d, b * act_tok * width * 2.0, g, g) *
              (1.0 - d.e->tp_overlap);
    }
    /* data parallel: the bf16 gradients reduced (the distributed optimizer's
     * reduce-scatter and the parameters' all-gather move an all-reduce's bytes), the
     * dp group every g-th device of the job, dp_overlap of it behind the backward */
    tdp = dp > 1 ? tb_model_allreduce_s(&d, params * 2.0 / (double)g, dp, devs) *
                       (1.0 - d.e->dp_overlap)
                 : 0;
    /* Adam on the replica's shard: fp32 master, two moments and the bf16 weight and
     * gradient read and written, about 18 bytes a parameter */
    topt = params * 18.0 / (double)(g * dp) / (d.hbm_bw * d.e->mem_eff);
    tfix = 3.0 * blocks * d.e->layer_s + d.e->step_s;
    step = tkern + ttp + tdp + topt + tfix;
    p->fits = true;
    p->recompute = rc;
    p->recompute_kind = rc ? "full" : "none";
    p->mem_per_device_gib = need / 1073741824.0;
    p->step_time_s = step;
    p->train_tokens_per_s = GB * tok / step;
    p->train_tokens_per_s_per_chip = p->train_tokens_per_s / (double)chips;
    /* model FLOPs: 3 x the forward's (no recomputation counted) */
    p->mfu = 3.0 * tb_dflops_denoiser(a, GB, res) / (step * (double)chips * d.chip_peak);
    p->bound = tcomp >= tact ? "compute" : "memory";
    if (sc->train_tokens > 0) {
        /* MLPerf Training's flux1 (FLUX.1-schnell from scratch at 256 px): an evaluation
         * every 262,144 samples (rounded up to whole global batches), each the validation
         * loss over 29,696 samples, forward only (training_rules.adoc 'Quality measure';
         * the v5.1 NVIDIA implementation's README: "Evaluation thoroughness: 29,696
         * samples"): at the forward's third of a sample's training cost, the busiest
         * replica's share of the samples */
        const double samples = sc->train_tokens / tok;
        p->time_to_train_s = samples / GB * step;
        if (!strcmp(a->name, "flux.1-schnell") && res == 256) {
            const double every = ceil(262144.0 / GB) * GB, n = floor(samples / every);
            p->eval_s = n * ceil(29696.0 / (double)dp) * (double)dp / GB * step / 3.0;
            p->time_to_train_s += p->eval_s;
            snprintf(evals, sizeof evals,
                     "; time_to_train adds %.0f evaluations (MLPerf flux1: every %.0f samples, "
                     "29696 each, forward only) = %.4g s",
                     n, every, p->eval_s);
        }
        tb_model_price_training(m, sc, p, priced, sizeof priced);
    }
    snprintf(p->assumptions, sizeof p->assumptions,
             "%s training at %dpx: %.0f tokens a sample (%.0f image, the rest text), batch %ld "
             "(%.0f a replica); tp=%ld dp=%ld over %ld devices (%ld per chip), %s "
             "recomputation; gemm_eff %.2f x train_eff %.2f x dit_train_eff %.2f; step %.4g s "
             "(kernels %.4g, tp %.3g, "
             "dp %.3g, optimizer %.3g); train_tokens = samples x %.0f%s%s",
             a->name, res, tok, img, sc->batch, b, g, dp, devs, k, rc ? "full" : "no", d.gemm_eff,
             d.e->train_eff, d.e->dit_train_eff, step, tkern, ttp, tdp, topt, tok, evals, priced);
    return 0;
}
