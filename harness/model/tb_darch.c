/* harness/model/tb_darch.c: see tb_darch.h. The loader; parameter and FLOP counts follow. */
#include "tb_darch.h"

#include "tb_arch.h"
#include "tb_range.h"
#include "tb_util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- loading ---- */

enum key_type { K_INT, K_BOOL, K_DBL, K_LIST };

struct key {
    const char *name;
    enum key_type type;
    size_t off; /* into struct tb_darch */
    int *count; /* K_LIST: where the entry count goes (NULL: must match nlevels) */
};

/* The numeric keys of a diffusion model file (README "Input ranges"); a list's range is
 * each entry's. */
const struct tb_range TB_DARCH_RANGES[] = {
    {"latent_channels", 1, 1024, true, "channels"},
    {"vae_scale", 1, 64, true, "pixels per latent"},
    {"resolution", 8, 16384, true, "pixels"},
    {"default_steps", 1, 10000, true, "denoising steps"},
    {"text_tokens", 1, 65536, true, "tokens"},
    {"context_dim", 1, 65536, true, "width"},
    {"pooled_dim", 0, 65536, true, "width (0: none)"},
    {"channels", 1, 65536, true, "width of each level (a comma list)"},
    {"transformer_depth", 0, 1000, true, "blocks at each level (a comma list)"},
    {"layers_per_block", 1, TB_DARCH_MAX_LAYERS_PER_BLOCK, true, "ResNet layers"},
    {"head_dim", 1, 4096, true, "width"},
    {"groups", 1, 4096, true, "GroupNorm groups"},
    {"time_proj_dim", 2, 65536, true, "width"},
    {"time_embed_dim", 1, 65536, true, "width"},
    {"add_in_dim", 0, 65536, true, "width (0: none)"},
    {"hidden", 1, 65536, true, "width"},
    {"heads", 1, 4096, true, "attention heads"},
    {"depth", 1, 1000, true, "double-stream blocks"},
    {"single_depth", 0, 1000, true, "single-stream blocks"},
    {"mlp_ratio", 1, 64, true, "MLP width over hidden"},
    {"patch", 1, 64, true, "latent pixels per side"},
    {"pos_embed_max", 0, 65536, true, "positions (0: none)"},
    {"vae_channels", 1, 65536, true, "width of each VAE level (a comma list)"},
    {"vae_layers", 1, 100, true, "ResNet layers per VAE level"},
    {"published_params", 0, 1e15, false, "parameters (0: not given)"},
    {"published_vae_params", 0, 1e15, false, "parameters (0: not given)"},
    {"encoder", 1, 16777216, true,
     "each of an encoder's layers, hidden, heads, ffn, vocab, tokens"},
    {NULL, 0, 0, false, NULL},
};

#define O(f) offsetof(struct tb_darch, f)

/* "a, b, c" into out[0..max-1]; returns the count or -1. */
static int parse_list(const char *v, long lo, long hi, int *out, int max)
{
    char buf[256], *tok, *save = NULL;
    int n = 0;
    if (strlen(v) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", v);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long x;
        if (n == max || tb_parse_long(tb_trim(tok), lo, hi, &x) != 0)
            return -1;
        out[n++] = (int)x;
    }
    return n;
}

/* "name, kind, layers, hidden, heads, ffn, vocab, tokens[, published]" */
static int parse_encoder(const char *v, struct tb_dencoder *e)
{
    char buf[256], *f[9], *save = NULL;
    long x[6];
    int n = 0;
    if (strlen(v) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", v);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == 9)
            return -1;
        f[n++] = tb_trim(tok);
    }
    if (n < 8 || !*f[0] || strlen(f[0]) >= sizeof e->name)
        return -1;
    memset(e, 0, sizeof *e);
    if (!strcmp(f[1], "clip"))
        e->kind = TB_DENC_CLIP;
    else if (!strcmp(f[1], "clip-proj"))
        e->kind = TB_DENC_CLIP_PROJ;
    else if (!strcmp(f[1], "t5"))
        e->kind = TB_DENC_T5;
    else
        return -1;
    for (int i = 0; i < 6; i++)
        if (tb_range_field_long(TB_DARCH_RANGES, "encoder", f[2 + i], &x[i], NULL, 0) != 0)
            return -1;
    snprintf(e->name, sizeof e->name, "%s", f[0]);
    e->layers = (int)x[0];
    e->hidden = (int)x[1];
    e->heads = (int)x[2];
    e->ffn = (int)x[3];
    e->vocab = (int)x[4];
    e->tokens = (int)x[5];
    if (n == 9 &&
        tb_range_field(TB_DARCH_RANGES, "published_params", f[8], &e->published_params, NULL, 0))
        return -1;
    return 0;
}

int tb_darch_load(struct tb_darch *a, const char *path, char *err, size_t errlen)
{
    int nch = 0, ndepth = 0, nvae = 0;
    const struct key keys[] = {
        {"latent_channels", K_INT, O(latent_channels), NULL},
        {"vae_scale", K_INT, O(vae_scale), NULL},
        {"resolution", K_INT, O(resolution), NULL},
        {"default_steps", K_INT, O(default_steps), NULL},
        {"cfg", K_BOOL, O(cfg), NULL},
        {"text_tokens", K_INT, O(text_tokens), NULL},
        {"context_dim", K_INT, O(context_dim), NULL},
        {"pooled_dim", K_INT, O(pooled_dim), NULL},
        {"channels", K_LIST, O(ch), &nch},
        {"transformer_depth", K_LIST, O(depth), &ndepth},
        {"layers_per_block", K_INT, O(layers_per_block), NULL},
        {"head_dim", K_INT, O(head_dim), NULL},
        {"groups", K_INT, O(groups), NULL},
        {"time_proj_dim", K_INT, O(time_proj_dim), NULL},
        {"time_embed_dim", K_INT, O(time_embed_dim), NULL},
        {"add_in_dim", K_INT, O(add_in_dim), NULL},
        {"hidden", K_INT, O(hidden), NULL},
        {"heads", K_INT, O(heads), NULL},
        {"depth", K_INT, O(dit_depth), NULL},
        {"single_depth", K_INT, O(single_depth), NULL},
        {"mlp_ratio", K_INT, O(mlp_ratio), NULL},
        {"patch", K_INT, O(patch), NULL},
        {"qk_norm", K_BOOL, O(qk_norm), NULL},
        {"guidance_embed", K_BOOL, O(guidance_embed), NULL},
        {"pos_embed_max", K_INT, O(pos_embed_max), NULL},
        {"vae_channels", K_LIST, O(vae_ch), &nvae},
        {"vae_layers", K_INT, O(vae_layers), NULL},
        {"published_params", K_DBL, O(published_params), NULL},
        {"published_vae_params", K_DBL, O(published_vae_params), NULL},
    };
    FILE *f;
    char *buf = NULL;
    size_t cap = 0;
    long line = 0;
    char *key, *val;
    int kv;
    int rc = -1;

    memset(a, 0, sizeof *a);
    a->vae_scale = 8;
    a->mlp_ratio = 4;
    a->patch = 2;
    a->groups = 32;
    a->time_proj_dim = 256;
    snprintf(a->path, sizeof a->path, "%s", path);
    f = tb_text_open(path, TB_TEXT_FILE_MAX, err, errlen);
    if (!f)
        return -1;
    while ((kv = tb_kv_next(f, path, &buf, &cap, &line, &key, &val, err, errlen)) > 0) {
        const struct key *k = NULL;
        const struct tb_range *r;
        char e[256];
        if (!strcmp(key, "name")) {
            if (!*val || strlen(val) >= sizeof a->name || strpbrk(val, " \t,/\"")) {
                tb_err(err, errlen, "%s: line %ld: field 'name': bad model name '%s'", path, line,
                       val);
                goto out;
            }
            snprintf(a->name, sizeof a->name, "%s", val);
            continue;
        }
        if (!strcmp(key, "family")) {
            if (!strcmp(val, "unet"))
                a->kind = TB_DARCH_UNET;
            else if (!strcmp(val, "mmdit"))
                a->kind = TB_DARCH_MMDIT;
            else if (!strcmp(val, "flux"))
                a->kind = TB_DARCH_FLUX;
            else {
                tb_err(err, errlen,
                       "%s: line %ld: field 'family': unknown family '%s' (unet, mmdit, flux)",
                       path, line, val);
                goto out;
            }
            snprintf(a->family, sizeof a->family, "%s", val);
            continue;
        }
        if (!strcmp(key, "source")) {
            snprintf(a->source, sizeof a->source, "%s", val);
            continue;
        }
        if (!strcmp(key, "encoder")) {
            if (a->nencoders == TB_DARCH_MAX_ENCODERS ||
                parse_encoder(val, &a->enc[a->nencoders]) != 0) {
                tb_err(err, errlen,
                       "%s: line %ld: field 'encoder': expected 'name, kind (clip, clip-proj, "
                       "t5), layers, hidden, heads, ffn, vocab, tokens[, published_params]' (at "
                       "most %d), got '%s'",
                       path, line, TB_DARCH_MAX_ENCODERS, val);
                goto out;
            }
            a->nencoders++;
            continue;
        }
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (!strcmp(key, keys[i].name))
                k = &keys[i];
        if (!k) {
            tb_err(err, errlen, "%s: line %ld: field '%s': unknown key", path, line, key);
            goto out;
        }
        if (k->type == K_BOOL) {
            if (tb_parse_bool(val, (bool *)((char *)a + k->off)) != 0) {
                tb_err(err, errlen, "%s: line %ld: field '%s': expected true or false, got '%s'",
                       path, line, key, val);
                goto out;
            }
            continue;
        }
        r = tb_range_find(TB_DARCH_RANGES, key);
        if (!r) { /* a key without its range: the program's error */
            tb_assert_fail("key in TB_DARCH_RANGES", __FILE__, __LINE__);
            goto out;
        }
        if (k->type == K_INT) {
            long x;
            if (tb_range_parse_long(r, val, &x, e, sizeof e) != 0) {
                tb_err(err, errlen, "%s: line %ld: %s", path, line, e);
                goto out;
            }
            *(int *)((char *)a + k->off) = (int)x;
        } else if (k->type == K_DBL) {
            double d;
            if (tb_range_parse(r, val, &d, e, sizeof e) != 0) {
                tb_err(err, errlen, "%s: line %ld: %s", path, line, e);
                goto out;
            }
            memcpy((char *)a + k->off, &d, sizeof d); /* the field at offsetof: a double */
        } else {
            int n = parse_list(val, (long)r->lo, (long)r->hi, (int *)((char *)a + k->off),
                               TB_DARCH_MAX_LEVELS);
            if (n < 1) {
                tb_err(err, errlen,
                       "%s: line %ld: field '%s': expected 1 to %d integers in [%.0f, %.0f] "
                       "separated by commas, got '%s'",
                       path, line, key, TB_DARCH_MAX_LEVELS, r->lo, r->hi, val);
                goto out;
            }
            *k->count = n;
        }
    }
    if (kv < 0)
        goto out;
    /* what each family needs */
    {
        const char *miss = !a->name[0]           ? "name"
                           : !a->family[0]       ? "family"
                           : !a->latent_channels ? "latent_channels"
                           : !a->resolution      ? "resolution"
                           : !a->default_steps   ? "default_steps"
                           : !a->text_tokens     ? "text_tokens"
                           : !a->context_dim     ? "context_dim"
                           : !nvae               ? "vae_channels"
                           : !a->vae_layers      ? "vae_layers"
                           : !a->head_dim        ? "head_dim"
                                                 : NULL;
        if (!miss && a->kind == TB_DARCH_UNET)
            miss = !nch                   ? "channels"
                   : !ndepth              ? "transformer_depth"
                   : !a->layers_per_block ? "layers_per_block"
                   : !a->time_embed_dim   ? "time_embed_dim"
                                          : NULL;
        if (!miss && a->kind != TB_DARCH_UNET)
            miss = !a->hidden ? "hidden" : !a->heads ? "heads" : !a->dit_depth ? "depth" : NULL;
        if (!miss && a->kind == TB_DARCH_FLUX && !a->single_depth)
            miss = "single_depth";
        if (miss) {
            tb_err(err, errlen, "%s: line %ld: field '%s': missing", path, line, miss);
            goto out;
        }
    }
    if (a->kind == TB_DARCH_UNET) {
        if (nch != ndepth) {
            tb_err(err, errlen,
                   "%s: field 'transformer_depth': %d entries for %d levels of 'channels'", path,
                   ndepth, nch);
            goto out;
        }
        a->nlevels = nch;
        for (int l = 0; l < nch; l++)
            if (a->ch[l] % a->groups || (a->depth[l] && a->ch[l] % a->head_dim)) {
                tb_err(err, errlen,
                       "%s: field 'channels': %d is not a multiple of groups %d and head_dim %d",
                       path, a->ch[l], a->groups, a->head_dim);
                goto out;
            }
    } else if (a->hidden != a->heads * a->head_dim) {
        tb_err(err, errlen, "%s: field 'hidden': %d is not heads %d x head_dim %d", path, a->hidden,
               a->heads, a->head_dim);
        goto out;
    }
    if (a->resolution %
        (a->vae_scale * (a->kind == TB_DARCH_UNET ? 1 << (a->nlevels - 1) : a->patch))) {
        tb_err(err, errlen, "%s: field 'resolution': %d does not divide into the latent grid", path,
               a->resolution);
        goto out;
    }
    a->vae_levels = nvae;
    rc = 0;
out:
    free(buf);
    fclose(f);
    return rc;
}

int tb_darch_is_diffusion(const char *name)
{
    char path[PATH_MAX], err[1024];
    struct tb_darch a;
    if (tb_arch_path(name, path, sizeof path, err, sizeof err) != 0 || !tb_file_exists(path))
        return -1;
    return tb_darch_load(&a, path, err, sizeof err) == 0 ? 1 : 0;
}

int tb_darch_find(struct tb_darch *a, const char *name, char *err, size_t errlen)
{
    char path[PATH_MAX];
    if (tb_arch_path(name, path, sizeof path, err, errlen) != 0)
        return -1;
    return tb_darch_load(a, path, err, errlen);
}

/* ---- parameter counts ----
 * Every weight the checkpoint stores, layer by layer as tb_darch.h describes the
 * blocks (biases on linear and conv layers, two per norm with affine weights). */

static double lin(double in, double out)
{
    return in * out + out;
}

static double conv(double cin, double cout, double k)
{
    return cin * cout * k * k + cout;
}

static double unet_resnet(double ci, double co, double temb)
{
    double p = 2 * ci + conv(ci, co, 3) + lin(temb, co) + 2 * co + conv(co, co, 3);
    return ci != co ? p + conv(ci, co, 1) : p;
}

/* One UNet transformer block of width c with cross-attention to a ctx-wide context:
 * three LayerNorms, self-attention (q, k, v without bias, output with), cross-attention
 * (q from c, k and v from ctx), GEGLU (c -> 8c, 4c -> c). */
static double unet_tblock(double c, double ctx)
{
    return 3 * 2 * c + 3 * c * c + lin(c, c) + c * c + 2 * ctx * c + lin(c, c) + lin(c, 8 * c) +
           lin(4 * c, c);
}

static double unet_transformer(double c, int depth, double ctx)
{
    return 2 * c + lin(c, c) + depth * unet_tblock(c, ctx) + lin(c, c);
}

/* Walk the UNet as tb_darch.h describes it, calling visit for each piece with the
 * channel counts and the level (spatial size = latent / 4^level pixels). Used for both
 * parameters and FLOPs. */
enum unet_piece { UP_CONV3, UP_RESNET, UP_TRANSFORMER, UP_DOWN, UP_UP };

static void unet_walk(const struct tb_darch *a,
                      void (*visit)(void *ctx, enum unet_piece k, double ci, double co, int depth,
                                    int level),
                      void *ctx)
{
    /* conv_in, every down ResNet, every downsampler */
    int skips[1 + TB_DARCH_MAX_LEVELS * (TB_DARCH_MAX_LAYERS_PER_BLOCK + 1)];
    int ns = 0, L = a->nlevels;
    double c = a->ch[0];

    visit(ctx, UP_CONV3, a->latent_channels, c, 0, 0); /* conv_in */
    skips[ns++] = (int)c;
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < a->layers_per_block; i++) {
            visit(ctx, UP_RESNET, c, a->ch[l], 0, l);
            c = a->ch[l];
            if (a->depth[l])
                visit(ctx, UP_TRANSFORMER, c, c, a->depth[l], l);
            skips[ns++] = (int)c;
        }
        if (l < L - 1) {
            visit(ctx, UP_DOWN, c, c, 0, l);
            skips[ns++] = (int)c;
        }
    }
    visit(ctx, UP_RESNET, c, c, 0, L - 1);
    visit(ctx, UP_TRANSFORMER, c, c, a->depth[L - 1], L - 1);
    visit(ctx, UP_RESNET, c, c, 0, L - 1);
    for (int l = L - 1; l >= 0; l--) {
        for (int i = 0; i < a->layers_per_block + 1; i++) {
            visit(ctx, UP_RESNET, c + skips[--ns], a->ch[l], 0, l);
            c = a->ch[l];
            if (a->depth[l])
                visit(ctx, UP_TRANSFORMER, c, c, a->depth[l], l);
        }
        if (l > 0)
            visit(ctx, UP_UP, c, c, 0, l);
    }
    visit(ctx, UP_CONV3, c, a->latent_channels, -1, 0); /* conv_out (after GroupNorm) */
}

struct unet_count {
    const struct tb_darch *a;
    double params;
};

static void unet_params_visit(void *vctx, enum unet_piece k, double ci, double co, int depth,
                              int level)
{
    struct unet_count *u = vctx;
    (void)level;
    switch (k) {
    case UP_CONV3:
        u->params += conv(ci, co, 3) + (depth < 0 ? 2 * ci : 0);
        break;
    case UP_RESNET:
        u->params += unet_resnet(ci, co, u->a->time_embed_dim);
        break;
    case UP_TRANSFORMER:
        u->params += unet_transformer(co, depth, u->a->context_dim);
        break;
    case UP_DOWN:
    case UP_UP:
        u->params += conv(ci, co, 3);
        break;
    }
}

static double dit_params(const struct tb_darch *a)
{
    const double D = a->hidden, HD = a->head_dim, p = a->patch, Cl = a->latent_channels;
    const double qk = a->qk_norm ? HD : 0;
    double P = 0;

    /* embedders: patches (a p x p conv for MMDiT, a linear on packed patches for FLUX:
     * the same count), the learned position grid, timestep, pooled text, guidance,
     * context */
    P += lin(Cl * p * p, D) + (double)a->pos_embed_max * a->pos_embed_max * D;
    P += lin(a->time_proj_dim, D) + lin(D, D) + lin(a->pooled_dim, D) + lin(D, D);
    if (a->guidance_embed)
        P += lin(a->time_proj_dim, D) + lin(D, D);
    P += lin(a->context_dim, D);
    for (int i = 0; i < a->dit_depth; i++) {
        /* MMDiT's last joint block keeps only the image stream's output */
        bool last = a->kind == TB_DARCH_MMDIT && i == a->dit_depth - 1;
        P += lin(D, 6 * D) + (last ? lin(D, 2 * D) : lin(D, 6 * D)); /* adaLN, per stream */
        P += 6 * lin(D, D) + lin(D, D) + (last ? 0 : lin(D, D));     /* q k v x2, outs */
        P += 4 * qk;
        P += lin(D, a->mlp_ratio * D) + lin(a->mlp_ratio * D, D) +
             (last ? 0 : lin(D, a->mlp_ratio * D) + lin(a->mlp_ratio * D, D));
    }
    for (int i = 0; i < a->single_depth; i++)
        P += lin(D, 3 * D) + lin(D, 3 * D + a->mlp_ratio * D) + 2 * qk +
             lin((1.0 + a->mlp_ratio) * D, D);
    P += lin(D, 2 * D) + lin(D, p * p * Cl);
    return P;
}

double tb_darch_params_denoiser(const struct tb_darch *a)
{
    if (a->kind == TB_DARCH_UNET) {
        struct unet_count u = {a, 0};
        u.params =
            lin(a->time_proj_dim, a->time_embed_dim) + lin(a->time_embed_dim, a->time_embed_dim);
        if (a->add_in_dim)
            u.params +=
                lin(a->add_in_dim, a->time_embed_dim) + lin(a->time_embed_dim, a->time_embed_dim);
        unet_walk(a, unet_params_visit, &u);
        return u.params;
    }
    return dit_params(a);
}

static double vae_resnet(double ci, double co)
{
    double p = 2 * ci + conv(ci, co, 3) + 2 * co + conv(co, co, 3);
    return ci != co ? p + conv(ci, co, 1) : p;
}

double tb_darch_params_vae_decoder(const struct tb_darch *a)
{
    double c = a->vae_ch[0], P;
    /* conv_in; mid block: ResNet, single-head attention (GroupNorm, q k v out), ResNet */
    P = conv(a->latent_channels, c, 3) + vae_resnet(c, c) + 2 * c + 4 * lin(c, c) +
        vae_resnet(c, c);
    for (int i = 0; i < a->vae_levels; i++) {
        for (int j = 0; j < a->vae_layers + 1; j++) {
            P += vae_resnet(c, a->vae_ch[i]);
            c = a->vae_ch[i];
        }
        if (i < a->vae_levels - 1)
            P += conv(c, c, 3);
    }
    return P + 2 * c + conv(c, 3, 3);
}

double tb_darch_params_encoder(const struct tb_dencoder *e)
{
    const double D = e->hidden, F = e->ffn, L = e->layers;
    if (e->kind == TB_DENC_T5) /* shared embedding, RMSNorms, no biases, gated MLP,
                                  relative-position buckets (32 per head) */
        return e->vocab * D + L * (2 * D + 4 * D * D + 3 * D * F) + 32.0 * e->heads + D;
    return e->vocab * D + e->tokens * D + L * (4 * D + 4 * lin(D, D) + lin(D, F) + lin(F, D)) +
           2 * D + (e->kind == TB_DENC_CLIP_PROJ ? D * D : 0);
}

double tb_darch_params_encoders(const struct tb_darch *a)
{
    double P = 0;
    for (int i = 0; i < a->nencoders; i++)
        P += tb_darch_params_encoder(&a->enc[i]);
    return P;
}

/* ---- FLOPs (2 per multiply-add) ----
 * Latent side h = resolution / vae_scale. Norms, activations, adaLN modulation and
 * embeddings of one vector per image are left out (under 1%). */

struct unet_flops {
    const struct tb_darch *a;
    double hw; /* latent pixels at level 0 */
    double B;
    double total, attn, conv;
    struct tb_dwork w; /* the widths and unfused activations (tb_dwork_denoiser) */
};

static void unet_flops_visit(void *vctx, enum unet_piece k, double ci, double co, int depth,
                             int level)
{
    struct unet_flops *u = vctx;
    const double N = u->hw / pow(4.0, level), S = u->a->text_tokens, ctx = u->a->context_dim;
    const double B = u->B;
    struct tb_dwork *w = &u->w;
    double f;
    switch (k) {
    case UP_CONV3:
        f = B * 2 * ci * co * 9 * N;
        u->total += f;
        u->conv += f;
        w->conv_per_width += f / co;
        w->act_elems += depth < 0 ? B * N * 2 * ci : 0; /* GroupNorm and SiLU before conv_out */
        break;
    case UP_RESNET:
        f = B * 2 * N * (ci * co * 9 + co * co * 9 + (ci != co ? ci * co : 0));
        u->total += f;
        u->conv += f;
        w->conv_per_width += f / co;
        w->act_elems += B * N * (2 * ci + 2 * co + co); /* two GroupNorm+SiLU, the residual */
        break;
    case UP_TRANSFORMER: {
        double c = co;
        double lin_per_block = 2 * N * (4 * c * c + 2 * c * c + 12 * c * c) + 2 * S * ctx * c * 2;
        double attn = 4 * N * N * c + 4 * N * S * c;
        u->total += B * (4 * N * c * c + depth * (lin_per_block + attn));
        u->attn += B * depth * attn;
        /* per block: q k v out and cross q, out (width c), cross k v (c, on S tokens),
         * GEGLU in (8c), out (c); projections in and out (c) */
        w->gemm_per_width += B * (4 * N * c + depth * (22 * N * c + 4 * S * ctx));
        w->attn_per_width += B * depth * attn / u->a->head_dim;
        /* GroupNorm in, the projection's residual; per block three LayerNorms, three
         * residuals, GEGLU's gate */
        w->act_elems += B * N * c * (3 + 21.0 * depth);
        break;
    }
    case UP_DOWN: /* stride 2: output at a quarter of the pixels */
        f = B * 2 * ci * co * 9 * N / 4;
        u->total += f;
        u->conv += f;
        w->conv_per_width += f / co;
        break;
    case UP_UP: /* the conv after upsampling runs at the next level's size */
        f = B * 2 * ci * co * 9 * N * 4;
        u->total += f;
        u->conv += f;
        w->conv_per_width += f / co;
        w->act_elems += B * 5 * N * ci; /* nearest 2x upsampling: read 1, write 4 */
        break;
    }
}

static void dit_flops(const struct tb_darch *a, double B, int resolution, double *total,
                      double *attn)
{
    const double h = (double)resolution / a->vae_scale, p = a->patch;
    const double N = (h / p) * (h / p), S = a->text_tokens, D = a->hidden;
    const double T = N + S, Cl = a->latent_channels, r = a->mlp_ratio;
    double f = 2 * N * Cl * p * p * D + 2 * S * a->context_dim * D, at = 0;

    for (int i = 0; i < a->dit_depth; i++) {
        bool last = a->kind == TB_DARCH_MMDIT && i == a->dit_depth - 1;
        double out_tokens = last ? N : T;
        f += 2 * T * 3 * D * D + 2 * out_tokens * D * D + 2 * out_tokens * 2 * r * D * D;
        at += 4 * T * T * D;
    }
    for (int i = 0; i < a->single_depth; i++) {
        f += 2 * T * D * (3 * D + r * D) + 2 * T * (1 + r) * D * D;
        at += 4 * T * T * D;
    }
    f += 2 * N * D * p * p * Cl;
    *total = B * (f + at);
    *attn = B * at;
}

/* The DiTs' widths and unfused activations (tb_dwork), block by block as dit_flops counts
 * the FLOPs: a joint block per stream q k v fused (3D), out (D), MLP in (rD) and out (D);
 * two LayerNorm-modulations, two gated residuals and the q/k norm with rotary (10 D per
 * token). A single block: one product in (3D + rD), one out (D); one modulation, the q/k
 * norm, one gated residual (7 D per token). */
static void dit_work(const struct tb_darch *a, double B, int resolution, struct tb_dwork *w)
{
    const double h = (double)resolution / a->vae_scale, p = a->patch;
    const double N = (h / p) * (h / p), S = a->text_tokens, D = a->hidden;
    const double T = N + S, Cl = a->latent_channels, r = a->mlp_ratio;
    double g = (2 * N * Cl * p * p * D + 2 * S * a->context_dim * D) / D, act = 0;

    g += a->dit_depth * (6 + 2 * r) * T * D + a->single_depth * (4 + 2 * r) * T * D;
    act += a->dit_depth * 10 * T * D + a->single_depth * 7 * T * D;
    g += 2 * N * D * p * p * Cl / (p * p * Cl);
    w->gemm_per_width = B * g;
    w->attn_per_width = w->attn / a->head_dim;
    w->act_elems = B * act;
}

void tb_dwork_denoiser(const struct tb_darch *a, double B, int resolution, struct tb_dwork *w)
{
    double h = (double)resolution / a->vae_scale;
    memset(w, 0, sizeof *w);
    if (a->kind == TB_DARCH_UNET) {
        struct unet_flops u;
        memset(&u, 0, sizeof u);
        u.a = a;
        u.hw = h * h;
        u.B = B;
        unet_walk(a, unet_flops_visit, &u);
        *w = u.w;
        w->total = u.total;
        w->attn = u.attn;
        w->conv = u.conv;
        return;
    }
    dit_flops(a, B, resolution, &w->total, &w->attn);
    dit_work(a, B, resolution, w);
}

double tb_dflops_denoiser(const struct tb_darch *a, double B, int resolution)
{
    struct tb_dwork w; /* the one walk of the net, FLOPs with the widths */
    tb_dwork_denoiser(a, B, resolution, &w);
    return w.total;
}

double tb_dflops_denoiser_attention(const struct tb_darch *a, double B, int resolution)
{
    struct tb_dwork w; /* the one walk of the net, FLOPs with the widths */
    tb_dwork_denoiser(a, B, resolution, &w);
    return w.attn;
}

double tb_dflops_denoiser_conv(const struct tb_darch *a, double B, int resolution)
{
    struct tb_dwork w; /* the one walk of the net, FLOPs with the widths */
    tb_dwork_denoiser(a, B, resolution, &w);
    return w.conv;
}

double tb_dbytes_denoiser(const struct tb_darch *a, double wbytes)
{
    return tb_darch_params_denoiser(a) * wbytes;
}

double tb_dpasses(const struct tb_darch *a, int steps)
{
    return (double)steps * (a->cfg ? 2.0 : 1.0);
}

double tb_dflops_encoders(const struct tb_darch *a, double B)
{
    /* every encoder once per prompt; with CFG the negative prompt too */
    double f = 0;
    for (int i = 0; i < a->nencoders; i++) {
        const struct tb_dencoder *e = &a->enc[i];
        double body = tb_darch_params_encoder(e) - (double)e->vocab * e->hidden;
        f += 2 * e->tokens * body + 4.0 * e->tokens * e->tokens * e->hidden * e->layers;
    }
    return B * f * (a->cfg ? 2.0 : 1.0);
}

double tb_dflops_vae_decode(const struct tb_darch *a, double B, int resolution)
{
    const double h = (double)resolution / a->vae_scale;
    double N = h * h, c = a->vae_ch[0], f;
    /* conv_in, mid block (two ResNets, single-head attention over N positions) */
    f = 2 * a->latent_channels * c * 9 * N + 2 * 2 * (2 * c * c * 9 * N) + 2 * N * 4 * c * c +
        4 * N * N * c;
    for (int i = 0; i < a->vae_levels; i++) {
        double co = a->vae_ch[i];
        for (int j = 0; j < a->vae_layers + 1; j++) {
            f += 2 * N * (c * co * 9 + co * co * 9 + (c != co ? c * co : 0));
            c = co;
        }
        if (i < a->vae_levels - 1) {
            N *= 4;
            f += 2 * c * c * 9 * N;
        }
    }
    return B * (f + 2 * c * 3 * 9 * N);
}

void tb_dwork_vae_decode(const struct tb_darch *a, double B, int resolution, struct tb_dwork *w)
{
    const double h = (double)resolution / a->vae_scale;
    double N = h * h, c = a->vae_ch[0], Cl = a->latent_channels;

    memset(w, 0, sizeof *w);
    w->total = tb_dflops_vae_decode(a, B, resolution) / B;
    /* conv_in; the mid block: two ResNets around a single-head attention (head dim c:
     * GroupNorm, q k v out, the residual) */
    w->conv = 2 * Cl * c * 9 * N + 2 * 2 * (2 * c * c * 9 * N);
    w->conv_per_width = w->conv / c;
    w->act_elems = 2 * 5 * N * c + 3 * N * c;
    w->gemm_per_width = 2 * N * 4 * c * c / c;
    w->attn = 4 * N * N * c;
    w->attn_per_width = w->attn / c;
    for (int i = 0; i < a->vae_levels; i++) {
        double co = a->vae_ch[i];
        for (int j = 0; j < a->vae_layers + 1; j++) {
            double f = 2 * N * (c * co * 9 + co * co * 9 + (c != co ? c * co : 0));
            w->conv += f;
            w->conv_per_width += f / co;
            w->act_elems += N * (2 * c + 3 * co);
            c = co;
        }
        if (i < a->vae_levels - 1) {
            w->act_elems += 5 * N * c; /* nearest upsampling to 4N */
            N *= 4;
            w->conv += 2 * c * c * 9 * N;
            w->conv_per_width += 2 * c * c * 9 * N / c;
        }
    }
    /* GroupNorm and SiLU, then conv_out to 3 channels */
    w->act_elems += 2 * N * c;
    w->conv += 2 * c * 3 * 9 * N;
    w->conv_per_width += 2 * c * 3 * 9 * N / 3;
    w->total *= B;
    w->attn *= B;
    w->conv *= B;
    w->conv_per_width *= B;
    w->gemm_per_width *= B;
    w->attn_per_width *= B;
    w->act_elems *= B;
}

double tb_dflops_image(const struct tb_darch *a, double B, int resolution, int steps)
{
    return tb_dflops_encoders(a, B) + tb_dpasses(a, steps) * tb_dflops_denoiser(a, B, resolution) +
           tb_dflops_vae_decode(a, B, resolution);
}

void tb_dlayout_release(struct tb_dlayout *l)
{
    free(l->pieces);
    free(l->blocks);
    free(l->dbl);
    free(l->sgl);
    memset(l, 0, sizeof *l);
}
