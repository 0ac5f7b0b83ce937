/*
 * workloads/llama/llama_ref.c: tb_llama_reference_forward, the plain reference the
 * engine is checked against. Double precision, straightforward loops, no BLAS, no KV
 * cache, one position at a time; it reads only the public parameter pointers of struct
 * tb_llama, so it shares no code with the fast path. Same conventions as llama.c: RoPE
 * pairs element i with i + HD/2, Llama 3.1 frequency scaling when rope_scale_factor > 0.
 */
#include "llama.h"

#include "tb_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REF_PI 3.14159265358979323846

/* out[o] = sum_i w[o, i] x[i] (W row-major [outd, in]), accumulated in double. */
static void ref_matvec(double *out, const float *w, const double *x, int outd, int in)
{
    for (int o = 0; o < outd; o++) {
        double s = 0;
        for (int i = 0; i < in; i++)
            s += (double)w[(size_t)o * in + i] * x[i];
        out[o] = s;
    }
}

static void ref_rmsnorm(double *out, const double *x, const float *w, int C, double eps)
{
    double ss = 0;
    for (int c = 0; c < C; c++)
        ss += x[c] * x[c];
    double r = 1.0 / sqrt(ss / C + eps);
    for (int c = 0; c < C; c++)
        out[c] = x[c] * r * w[c];
}

/* The rotation frequency of pair i, with the "llama3" scaling written out again. */
static double ref_rope_freq(const struct tb_arch *a, int i)
{
    double freq = 1.0 / pow(a->rope_theta, 2.0 * i / a->head_dim);
    if (a->rope_scale_factor > 0) {
        double wavelen = 2.0 * REF_PI / freq;
        double lo_wavelen = a->rope_original_context / a->rope_low_freq_factor;
        double hi_wavelen = a->rope_original_context / a->rope_high_freq_factor;
        if (wavelen > lo_wavelen) {
            freq = freq / a->rope_scale_factor;
        } else if (wavelen >= hi_wavelen) {
            double smooth = (a->rope_original_context / wavelen - a->rope_low_freq_factor) /
                            (a->rope_high_freq_factor - a->rope_low_freq_factor);
            freq = smooth * freq + (1.0 - smooth) * freq / a->rope_scale_factor;
        }
    }
    return freq;
}

static void ref_rope(double *v, const struct tb_arch *a, int pos)
{
    int half = a->head_dim / 2;
    for (int i = 0; i < half; i++) {
        double ang = pos * ref_rope_freq(a, i), c = cos(ang), s = sin(ang);
        double x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c - x2 * s;
        v[i + half] = x1 * s + x2 * c;
    }
}

int tb_llama_reference_forward(const struct tb_llama *m, const int *tokens, int B, int T,
                               double *out, char *err, size_t errlen)
{
    const struct tb_arch *a = m->arch;
    int C = a->hidden, F = a->ffn, V = a->vocab, HD = a->head_dim, NH = a->heads;
    int NKV = a->kv_heads, G = NH / NKV, QD = NH * HD, KD = NKV * HD;
    double *x = NULL, *xn = NULL, *q = NULL, *k = NULL, *v = NULL, *att = NULL;
    double *tmp = NULL, *g = NULL, *u = NULL, *sc = NULL;
    int rc = -1;

    if (B < 1 || T < 1)
        return tb_err(err, errlen, "reference: batch %d and sequence %d must be positive", B, T);
    for (int i = 0; i < B * T; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return tb_err(err, errlen, "reference: token %d at %d out of range [0, %d)", tokens[i],
                          i, V);
    x = tb_alloc_array((size_t)T * C, sizeof *x);
    xn = tb_alloc_array((size_t)C, sizeof *xn);
    q = tb_alloc_array((size_t)T * QD, sizeof *q);
    k = tb_alloc_array((size_t)T * KD, sizeof *k);
    v = tb_alloc_array((size_t)T * KD, sizeof *v);
    att = tb_alloc_array((size_t)QD, sizeof *att);
    tmp = tb_alloc_array((size_t)(C > F ? C : F), sizeof *tmp);
    g = tb_alloc_array((size_t)F, sizeof *g);
    u = tb_alloc_array((size_t)F, sizeof *u);
    sc = tb_alloc_array((size_t)T, sizeof *sc);
    if (!x || !xn || !q || !k || !v || !att || !tmp || !g || !u || !sc) {
        tb_err(err, errlen, "reference: out of memory for %d tokens", T);
        goto out;
    }

    for (int b = 0; b < B; b++) {
        const int *tok = tokens + (size_t)b * T;
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++)
                x[(size_t)t * C + c] = m->tok_emb[(size_t)tok[t] * C + c];
        for (int l = 0; l < a->layers; l++) {
            const struct tb_llama_layer *w = &m->layers[l];
            /* q, k, v of every position, rotated */
            for (int t = 0; t < T; t++) {
                ref_rmsnorm(xn, x + (size_t)t * C, w->attn_norm, C, a->norm_eps);
                ref_matvec(q + (size_t)t * QD, w->wq, xn, QD, C);
                ref_matvec(k + (size_t)t * KD, w->wk, xn, KD, C);
                ref_matvec(v + (size_t)t * KD, w->wv, xn, KD, C);
                for (int h = 0; h < NH; h++)
                    ref_rope(q + (size_t)t * QD + h * HD, a, t);
                for (int h = 0; h < NKV; h++)
                    ref_rope(k + (size_t)t * KD + h * HD, a, t);
            }
            /* attention (position t sees 0..t), output projection and MLP, position by
             * position (k and v above already hold every position's layer input) */
            for (int t = 0; t < T; t++) {
                double *xt = x + (size_t)t * C;
                for (int h = 0; h < NH; h++) {
                    const double *qh = q + (size_t)t * QD + h * HD;
                    int kvh = h / G;
                    double mx = -INFINITY, sum = 0;
                    for (int s = 0; s <= t; s++) {
                        double d = 0;
                        for (int i = 0; i < HD; i++)
                            d += qh[i] * k[(size_t)s * KD + kvh * HD + i];
                        sc[s] = d / sqrt((double)HD);
                        if (sc[s] > mx)
                            mx = sc[s];
                    }
                    for (int s = 0; s <= t; s++) {
                        sc[s] = exp(sc[s] - mx);
                        sum += sc[s];
                    }
                    for (int i = 0; i < HD; i++) {
                        double o = 0;
                        for (int s = 0; s <= t; s++)
                            o += sc[s] / sum * v[(size_t)s * KD + kvh * HD + i];
                        att[h * HD + i] = o;
                    }
                }
                ref_matvec(tmp, w->wo, att, C, QD);
                for (int c = 0; c < C; c++)
                    xt[c] += tmp[c];
                ref_rmsnorm(xn, xt, w->mlp_norm, C, a->norm_eps);
                ref_matvec(g, w->w_gate, xn, F, C);
                ref_matvec(u, w->w_up, xn, F, C);
                for (int i = 0; i < F; i++)
                    g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
                ref_matvec(tmp, w->w_down, g, C, F);
                for (int c = 0; c < C; c++)
                    xt[c] += tmp[c];
            }
        }
        for (int t = 0; t < T; t++) {
            ref_rmsnorm(xn, x + (size_t)t * C, m->final_norm, C, a->norm_eps);
            ref_matvec(out + ((size_t)b * T + t) * V, m->lm_head, xn, V, C);
        }
    }
    rc = 0;
out:
    free(x);
    free(xn);
    free(q);
    free(k);
    free(v);
    free(att);
    free(tmp);
    free(g);
    free(u);
    free(sc);
    return rc;
}
