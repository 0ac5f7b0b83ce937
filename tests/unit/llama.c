/*
 * tests/unit/llama.c: the CPU Llama engine on llama-tiny (L=2, C=64, NH=4, NKV=2, F=160,
 * V=256) against the double-precision reference, finite differences, its own KV
 * cache, an overfit run, determinism and error paths.
 *
 * Tolerances (float engine vs double reference; float32 has a 6e-8 unit roundoff and the
 * logits come from sums of a few hundred products; measured errors are about 100 times
 * smaller): logits max abs error <= 1e-5 of the largest |logit| and NMSE <= 1e-10;
 * gradients vs central differences (step 1e-3) of the reference loss: relative error
 * <= 2e-2 for entries above 1% of the tensor's largest gradient (measured <= 3e-5);
 * decode vs prefill of the whole sequence: max abs error <= 1e-4 of the largest |logit|.
 */
#include "tb_arch.h"
#include "workloads/llama/llama.h"

#include "tests/tap/basic.h"
#include "tests/tap/float.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static uint64_t rng_state = 0x1234abcdULL;

static int rand_below(int n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng_state >> 33) % (uint64_t)n);
}

static void rand_tokens(int *t, int n, int V)
{
    for (int i = 0; i < n; i++)
        t[i] = rand_below(V);
}

static bool cmp_ok(struct tap_cmp c, double rel, double nmse)
{
    return c.max_ref > 0 && c.max_abs <= rel * c.max_ref && c.nmse <= nmse;
}

static void init_or_bail(struct tb_llama *m, const struct tb_arch *a, int maxB, int maxS,
                         unsigned flags, uint64_t seed)
{
    char err[512];
    if (tb_llama_init(m, a, maxB, maxS, flags, seed, err, sizeof err) != 0)
        bail("tb_llama_init: %s", err);
}

/* Mean cross-entropy of the reference logits. */
static double ref_loss(const struct tb_llama *m, const int *tok, const int *tgt, int B, int T,
                       double *buf)
{
    char err[512];
    int V = m->arch->vocab;
    double loss = 0;
    if (tb_llama_reference_forward(m, tok, B, T, buf, err, sizeof err) != 0)
        bail("reference: %s", err);
    for (int n = 0; n < B * T; n++) {
        const double *row = buf + (size_t)n * V;
        double mx = row[0];
        for (int v = 1; v < V; v++)
            mx = row[v] > mx ? row[v] : mx;
        double s = exp(row[0] - mx);
        for (int v = 1; v < V; v++)
            s += exp(row[v] - mx);
        loss += mx + log(s) - row[tgt[n]];
    }
    return loss / (B * T);
}

/* ---- 1. prefill and training-forward logits vs the reference ---- */

static void check_logits(const struct tb_arch *a, const char *what)
{
    enum { B = 2, T = 12 };
    struct tb_llama m;
    int tok[B * T], tgt[B * T], V = a->vocab;
    double *ref = malloc(sizeof *ref * B * T * V), *last = malloc(sizeof *last * B * V);
    float loss;
    char err[512];
    struct tap_cmp c;

    rand_tokens(tok, B * T, V);
    rand_tokens(tgt, B * T, V);
    init_or_bail(&m, a, B, T, TB_LLAMA_TRAIN, 7);
    if (tb_llama_reference_forward(&m, tok, B, T, ref, err, sizeof err) != 0)
        bail("reference: %s", err);

    OK(tb_llama_forward_loss(&m, tok, tgt, B, T, &loss, err, sizeof err) == 0, "%s: forward_loss",
       what);
    c = tap_compare(m.logits, ref, (size_t)B * T * V);
    OK(cmp_ok(c, 1e-5, 1e-10),
       "%s: all-position logits match the reference (max abs err %.2g, "
       "max |logit| %.2g, NMSE %.2g)",
       what, c.max_abs, c.max_ref, c.nmse);

    for (int b = 0; b < B; b++)
        memcpy(last + (size_t)b * V, ref + ((size_t)b * T + T - 1) * V, sizeof *last * V);
    OK(tb_llama_prefill(&m, tok, B, T, err, sizeof err) == 0, "%s: prefill", what);
    c = tap_compare(m.logits, last, (size_t)B * V);
    OK(cmp_ok(c, 1e-5, 1e-10),
       "%s: prefill last-position logits match the reference (max abs "
       "err %.2g, NMSE %.2g)",
       what, c.max_abs, c.nmse);

    tb_llama_release(&m);
    free(ref);
    free(last);
}

/* RoPE scaling must change the result (else the check above proves nothing about it). */
static void check_rope_scaling_matters(const struct tb_arch *plain, const struct tb_arch *scaled)
{
    enum { T = 12 };
    struct tb_llama m1, m2;
    int tok[T];
    char err[512];
    struct tap_cmp c;
    double *ref = malloc(sizeof *ref * plain->vocab);

    rand_tokens(tok, T, plain->vocab);
    init_or_bail(&m1, plain, 1, T, 0, 7);
    init_or_bail(&m2, scaled, 1, T, 0, 7);
    if (tb_llama_prefill(&m1, tok, 1, T, err, sizeof err) != 0 ||
        tb_llama_prefill(&m2, tok, 1, T, err, sizeof err) != 0)
        bail("prefill: %s", err);
    for (int v = 0; v < plain->vocab; v++)
        ref[v] = m1.logits[v];
    c = tap_compare(m2.logits, ref, (size_t)plain->vocab);
    OK(c.max_abs > 1e-3 * c.max_ref, "rope scaling changes the logits (by %.3g of %.3g)", c.max_abs,
       c.max_ref);
    tb_llama_release(&m1);
    tb_llama_release(&m2);
    free(ref);
}

/* ---- 2. backward vs central differences of the reference loss ---- */

struct family {
    const char *name;
    float *p;
    size_t n;
};

static void check_gradients(const struct tb_arch *a, const char *what)
{
    enum { B = 2, T = 6, PER = 4 };
    struct tb_llama m;
    int tok[B * T], tgt[B * T];
    size_t C = (size_t)a->hidden, F = (size_t)a->ffn, HD = (size_t)a->head_dim;
    size_t QD = (size_t)a->heads * HD, KD = (size_t)a->kv_heads * HD, V = (size_t)a->vocab;
    double *buf = malloc(sizeof *buf * B * T * V);
    float loss;
    char err[512];

    rand_tokens(tok, B * T, a->vocab);
    rand_tokens(tgt, B * T, a->vocab);
    init_or_bail(&m, a, B, T, TB_LLAMA_TRAIN, 11);
    /* norm weights at 1 make their gradients special; move them off 1 */
    for (int l = 0; l < a->layers; l++)
        for (size_t c = 0; c < C; c++) {
            m.layers[l].attn_norm[c] = 1.0f + 0.1f * (float)((c * 7 + l) % 5) / 5;
            m.layers[l].mlp_norm[c] = 1.0f - 0.1f * (float)((c * 3 + l) % 7) / 7;
        }
    if (tb_llama_forward_loss(&m, tok, tgt, B, T, &loss, err, sizeof err) != 0 ||
        tb_llama_backward(&m, err, sizeof err) != 0)
        bail("%s: %s", what, err);
    IS_REL(ref_loss(&m, tok, tgt, B, T, buf), loss, 1e-5, "%s: loss matches the reference", what);

    int last = a->layers - 1;
    struct family fams[] = {
        {"tok_emb", m.tok_emb, V * C},
        {"wq[0]", m.layers[0].wq, QD * C},
        {"wk[0]", m.layers[0].wk, KD * C},
        {"wv[0]", m.layers[0].wv, KD * C},
        {"wo[0]", m.layers[0].wo, C * QD},
        {"w_gate[0]", m.layers[0].w_gate, F * C},
        {"w_up[0]", m.layers[0].w_up, F * C},
        {"w_down[0]", m.layers[0].w_down, C * F},
        {"attn_norm[0]", m.layers[0].attn_norm, C},
        {"mlp_norm[0]", m.layers[0].mlp_norm, C},
        {"wq[last]", m.layers[last].wq, QD * C},
        {"wk[last]", m.layers[last].wk, KD * C},
        {"w_down[last]", m.layers[last].w_down, C * F},
        {"mlp_norm[last]", m.layers[last].mlp_norm, C},
        {"final_norm", m.final_norm, C},
        {"lm_head", m.lm_head, V * C},
    };
    int nf = (int)(sizeof fams / sizeof fams[0]) - (a->tied_embeddings ? 1 : 0);
    for (int f = 0; f < nf; f++) {
        const float *g = m.grads + (fams[f].p - m.params);
        size_t n = fams[f].n, idx[PER];
        double gmax = 0, worst = 0;
        int checked = 0;
        /* the two largest gradients and two random entries among the significant ones */
        for (size_t i = 0; i < n; i++)
            gmax = fabs(g[i]) > gmax ? fabs(g[i]) : gmax;
        idx[0] = idx[1] = 0;
        for (size_t i = 0; i < n; i++)
            if (fabs(g[i]) > fabs(g[idx[0]])) {
                idx[1] = idx[0];
                idx[0] = i;
            } else if (i != idx[0] && fabs(g[i]) > fabs(g[idx[1]])) {
                idx[1] = i;
            }
        for (int k = 2; k < PER; k++) {
            size_t i;
            int tries = 0;
            do {
                i = (size_t)rand_below((int)n);
            } while (fabs(g[i]) < 0.01 * gmax && ++tries < 1000);
            idx[k] = i;
        }
        for (int k = 0; k < PER; k++) {
            float *p = fams[f].p + idx[k], orig = *p;
            float up = orig + 1e-3f, dn = orig - 1e-3f; /* the quotient uses up - dn */
            *p = up;
            double lu = ref_loss(&m, tok, tgt, B, T, buf);
            *p = dn;
            double ld = ref_loss(&m, tok, tgt, B, T, buf);
            *p = orig;
            double fd = (lu - ld) / ((double)up - (double)dn);
            double e = fabs(g[idx[k]] - fd) / fmax(fabs(fd), 0.01 * gmax);
            worst = e > worst ? e : worst;
            checked++;
        }
        if (!OK(gmax > 0 && worst <= 2e-2,
                "%s: d loss/d %s matches central differences at %d "
                "entries (worst rel err %.2g)",
                what, fams[f].name, checked, worst))
            diag("largest |grad| %.3g", gmax);
    }
    tb_llama_release(&m);
    free(buf);
}

/* ---- 3. decode with the cache equals prefill of the whole sequence ---- */

static void check_decode(const struct tb_arch *a)
{
    enum { B = 2, T = 7, K = 4, S = T + K };
    struct tb_llama inc, full;
    int tok[B * S], step[B], prefix[B * S], V = a->vocab;
    double *want = malloc(sizeof *want * B * V), worst = 0;
    char err[512];
    bool all = true;

    rand_tokens(tok, B * S, V);
    init_or_bail(&inc, a, B, S, 0, 5);
    init_or_bail(&full, a, B, S, 0, 5);
    for (int b = 0; b < B; b++)
        memcpy(prefix + b * T, tok + b * S, sizeof *tok * T);
    if (tb_llama_prefill(&inc, prefix, B, T, err, sizeof err) != 0)
        bail("prefill: %s", err);
    for (int k = 0; k < K; k++) {
        int len = T + k + 1;
        for (int b = 0; b < B; b++) {
            step[b] = tok[b * S + T + k];
            memcpy(prefix + b * len, tok + b * S, sizeof *tok * len);
        }
        if (tb_llama_decode(&inc, step, B, T + k, err, sizeof err) != 0 ||
            tb_llama_prefill(&full, prefix, B, len, err, sizeof err) != 0)
            bail("decode step %d: %s", k, err);
        for (int i = 0; i < B * V; i++)
            want[i] = full.logits[i];
        struct tap_cmp c = tap_compare(inc.logits, want, (size_t)B * V);
        double e = c.max_abs / c.max_ref;
        worst = e > worst ? e : worst;
        all = all && c.max_ref > 0 && e <= 1e-4;
    }
    OK(all,
       "decode of %d tokens after a %d-token prefill matches prefill of the whole "
       "sequence (worst max abs err %.2g of max |logit|)",
       K, T, worst);

    /* and against the reference, last step */
    double *ref = malloc(sizeof *ref * B * S * V);
    if (tb_llama_reference_forward(&inc, tok, B, S, ref, err, sizeof err) != 0)
        bail("reference: %s", err);
    for (int b = 0; b < B; b++)
        memcpy(want + (size_t)b * V, ref + ((size_t)b * S + S - 1) * V, sizeof *want * V);
    struct tap_cmp c = tap_compare(inc.logits, want, (size_t)B * V);
    OK(cmp_ok(c, 1e-5, 1e-10), "last decode step matches the reference (max abs err %.2g)",
       c.max_abs);

    /* repeating the last position (as a timing loop does) gives the same logits */
    float *again = malloc(sizeof *again * B * V);
    memcpy(again, inc.logits, sizeof *again * B * V);
    OK(tb_llama_decode(&inc, step, B, S - 1, err, sizeof err) == 0 &&
           memcmp(again, inc.logits, sizeof *again * B * V) == 0,
       "decode may repeat the last position, bit-identically");
    free(again);
    tb_llama_release(&inc);
    tb_llama_release(&full);
    free(want);
    free(ref);
}

/* ---- 4. a tiny overfit run ---- */

static void check_overfit(const struct tb_arch *a)
{
    enum { B = 2, T = 16, STEPS = 60 };
    struct tb_llama m;
    int tok[B * T], tgt[B * T];
    struct tb_adamw opt = tb_adamw_default();
    float loss0 = 0, loss = 0;
    char err[512];
    int s;

    rand_tokens(tok, B * T, a->vocab);
    for (int i = 0; i < B * T; i++) /* next-token targets */
        tgt[i] = (i + 1 < B * T) ? tok[i + 1] : tok[0];
    init_or_bail(&m, a, B, T, TB_LLAMA_TRAIN, 3);
    opt.lr = 1e-2f;
    for (s = 0; s < STEPS; s++) {
        if (tb_llama_train_step(&m, tok, tgt, B, T, &opt, &loss, err, sizeof err) != 0)
            bail("train step %d: %s", s, err);
        if (s == 0)
            loss0 = loss;
        if (loss < loss0 / 8)
            break;
    }
    /* random logits of standard deviation 0.02 * sqrt(C) = 0.16 add about 0.013 to ln V;
     * the mean over 32 targets varies by about 0.16 / sqrt(32) = 0.03 */
    IS_DOUBLE(log((double)a->vocab), loss0, 0.15, "loss at step 0 is about ln V = %.3f (got %.3f)",
              log((double)a->vocab), loss0);
    OK(loss < loss0 / 4, "overfitting one batch: loss %.3f -> %.3f in %d steps", loss0, loss,
       s + (s < STEPS));
    IS_INT(s + (s < STEPS), m.adam_t, "AdamW counted its steps");
    tb_llama_release(&m);
}

/* One AdamW step by hand: at t = 1 the bias-corrected moments are g and g^2, so
 * p' = p (1 - lr wd) - lr g / (|g| + eps), with wd = 0 for the norm weights. */
static void check_adamw(const struct tb_arch *a)
{
    enum { T = 5 };
    struct tb_llama m;
    struct tb_adamw opt = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
    int tok[T], tgt[T];
    char err[512];
    float loss;

    rand_tokens(tok, T, a->vocab);
    rand_tokens(tgt, T, a->vocab);
    init_or_bail(&m, a, 1, T, TB_LLAMA_TRAIN, 9);
    if (tb_llama_forward_loss(&m, tok, tgt, 1, T, &loss, err, sizeof err) != 0 ||
        tb_llama_backward(&m, err, sizeof err) != 0)
        bail("adamw: %s", err);
    float *w = m.layers[1].w_up + 17, *nw = m.layers[0].mlp_norm + 3;
    float w0 = *w, n0 = *nw, gw = m.grads[w - m.params], gn = m.grads[nw - m.params];
    tb_llama_adamw(&m, &opt);
    IS_DOUBLE(w0 * (1 - 1e-3 * 0.1) - 1e-3 * gw / (fabs(gw) + 1e-8), *w, 1e-7,
              "AdamW step 1 on a weight: decayed, moved by lr against its gradient");
    IS_DOUBLE(n0 - 1e-3 * gn / (fabs(gn) + 1e-8), *nw, 1e-7,
              "AdamW step 1 on a norm weight: no weight decay");
    IS_INT(1, m.adam_t, "one step counted");
    OK(tb_llama_backward(&m, err, sizeof err) == -1,
       "backward after AdamW (stale activations) is refused");
    tb_llama_release(&m);
}

/* ---- 5. determinism ---- */

static void check_determinism(const struct tb_arch *a)
{
    enum { B = 2, T = 9 };
    struct tb_llama m1, m2, m3;
    int tok[B * T];
    size_t nl = (size_t)B * a->vocab;
    float *first = malloc(sizeof *first * nl);
    char err[512];

    rand_tokens(tok, B * T, a->vocab);
    init_or_bail(&m1, a, B, T, 0, 42);
    init_or_bail(&m2, a, B, T, 0, 42);
    init_or_bail(&m3, a, B, T, 0, 43);
    OK(memcmp(m1.params, m2.params, m1.n_params * sizeof *m1.params) == 0,
       "same seed, same weights");
    if (tb_llama_prefill(&m1, tok, B, T, err, sizeof err) != 0)
        bail("prefill: %s", err);
    memcpy(first, m1.logits, sizeof *first * nl);
    if (tb_llama_prefill(&m1, tok, B, T, err, sizeof err) != 0 ||
        tb_llama_prefill(&m2, tok, B, T, err, sizeof err) != 0 ||
        tb_llama_prefill(&m3, tok, B, T, err, sizeof err) != 0)
        bail("prefill: %s", err);
    OK(memcmp(first, m1.logits, sizeof *first * nl) == 0, "a repeated prefill is bit-identical");
    OK(memcmp(m1.logits, m2.logits, sizeof *first * nl) == 0, "same seed, bit-identical logits");
    OK(memcmp(m1.logits, m3.logits, sizeof *first * nl) != 0, "different seed, different logits");

    /* the weights are N(0, 0.02^2): check the first two moments of the embedding */
    double s1 = 0, s2 = 0;
    size_t n = (size_t)a->vocab * a->hidden;
    for (size_t i = 0; i < n; i++) {
        s1 += m1.tok_emb[i];
        s2 += (double)m1.tok_emb[i] * m1.tok_emb[i];
    }
    IS_DOUBLE(0.0, s1 / n, 3 * 0.02 / sqrt((double)n), "weights have mean 0");
    IS_REL(0.02, sqrt(s2 / n), 0.02, "weights have standard deviation 0.02");
    IS_DOUBLE(1.0, m1.final_norm[0], 0, "norm weights start at 1");
    tb_llama_release(&m1);
    tb_llama_release(&m2);
    tb_llama_release(&m3);
    free(first);
}

/* ---- 6. errors ---- */

static bool err_has(const char *err, const char *what)
{
    if (strstr(err, what))
        return true;
    diag("message was: '%s'", err);
    return false;
}

/* ---- per-sequence slots ---- */

/* Three sequences in slots 2, 0, 3 of a 4-slot engine at different positions: each step
 * of decode_slots must give the logits of that sequence run alone on a fresh engine
 * (prefill + decode at batch 1); prefill_slot must give prefill's logits. */
static void check_slots(const struct tb_arch *a)
{
    enum { NS = 3, S = 16, K = 4 };
    static const int slot_of[NS] = {2, 0, 3}, plen[NS] = {3, 7, 5};
    struct tb_llama eng, lone;
    int tok[NS][S], V = a->vocab, slots[NS], pos[NS], step[NS];
    float *want = malloc(sizeof *want * NS * K * V), *pl = malloc(sizeof *pl * V);
    double worst = 0, worst_pre = 0;
    char err[512];
    bool all = true, pre_ok = true;

    for (int i = 0; i < NS; i++)
        rand_tokens(tok[i], S, V);
    /* alone: prefill of the prompt, then K decode steps at batch 1 */
    for (int i = 0; i < NS; i++) {
        init_or_bail(&lone, a, 1, S, 0, 9);
        if (tb_llama_prefill(&lone, tok[i], 1, plen[i], err, sizeof err) != 0)
            bail("prefill: %s", err);
        for (int k = 0; k < K; k++) {
            if (tb_llama_decode(&lone, &tok[i][plen[i] + k], 1, plen[i] + k, err, sizeof err))
                bail("decode: %s", err);
            memcpy(want + ((size_t)k * NS + i) * V, lone.logits, sizeof *want * V);
        }
        tb_llama_release(&lone);
    }
    init_or_bail(&eng, a, 4, S, 0, 9);
    init_or_bail(&lone, a, 1, S, 0, 9);
    for (int i = 0; i < NS; i++) {
        if (tb_llama_prefill_slot(&eng, tok[i], plen[i], slot_of[i], pl, err, sizeof err) != 0 ||
            tb_llama_prefill(&lone, tok[i], 1, plen[i], err, sizeof err) != 0)
            bail("prefill_slot: %s", err);
        struct tap_cmp c = tap_compare_f(pl, lone.logits, (size_t)V);
        double e = c.max_abs / c.max_ref;
        worst_pre = e > worst_pre ? e : worst_pre;
        pre_ok = pre_ok && c.max_ref > 0 && e <= 1e-4;
    }
    OK(pre_ok, "prefill_slot gives prefill's logits (worst max abs err %.2g of max |logit|)",
       worst_pre);
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < NS; i++) {
            slots[i] = slot_of[i];
            pos[i] = plen[i] + k;
            step[i] = tok[i][plen[i] + k];
        }
        if (tb_llama_decode_slots(&eng, step, slots, pos, NS, err, sizeof err) != 0)
            bail("decode_slots step %d: %s", k, err);
        struct tap_cmp c = tap_compare_f(eng.logits, want + (size_t)k * NS * V, (size_t)NS * V);
        double e = c.max_abs / c.max_ref;
        worst = e > worst ? e : worst;
        all = all && c.max_ref > 0 && e <= 1e-4;
    }
    OK(all,
       "decode_slots of 3 sequences at positions 3, 7, 5 in slots 2, 0, 3 matches each "
       "sequence alone (worst max abs err %.2g of max |logit|)",
       worst);

    /* a sequence may leave and another join a slot mid-way: slot 0 gets a new prompt */
    {
        int s2[2] = {0, 2}, p2[2] = {plen[2], plen[0] + K}, t2[2] = {tok[2][plen[2]], 1};
        if (tb_llama_prefill_slot(&eng, tok[2], plen[2], 0, pl, err, sizeof err) != 0 ||
            tb_llama_decode_slots(&eng, t2, s2, p2, 2, err, sizeof err) != 0)
            bail("rejoin: %s", err);
        struct tap_cmp c = tap_compare_f(eng.logits, want + (size_t)2 * V, (size_t)V);
        OK(c.max_ref > 0 && c.max_abs <= 1e-4 * c.max_ref,
           "a new prompt in a freed slot decodes as if alone (max abs err %.2g)", c.max_abs);
    }

    /* bad slots and positions */
    err[0] = '\0';
    OK(tb_llama_prefill_slot(&eng, tok[0], 3, 4, pl, err, sizeof err) == -1 &&
           err_has(err, "slot 4"),
       "prefill_slot: slot past capacity refused (%s)", err);
    OK(tb_llama_prefill_slot(&eng, tok[0], S + 1, 0, pl, err, sizeof err) == -1 &&
           err_has(err, "sequence 17"),
       "prefill_slot: prompt past capacity refused (%s)", err);
    slots[0] = 1, pos[0] = 1;
    OK(tb_llama_decode_slots(&eng, step, slots, pos, 1, err, sizeof err) == -1 &&
           err_has(err, "slot 1 caches only positions [0, 0)"),
       "decode_slots: position past the slot's cache refused (%s)", err);
    slots[0] = 3, pos[0] = S;
    OK(tb_llama_decode_slots(&eng, step, slots, pos, 1, err, sizeof err) == -1 &&
           err_has(err, "position 16"),
       "decode_slots: position at capacity refused (%s)", err);
    slots[0] = -1, pos[0] = 0;
    OK(tb_llama_decode_slots(&eng, step, slots, pos, 1, err, sizeof err) == -1 &&
           err_has(err, "slot -1"),
       "decode_slots: negative slot refused (%s)", err);
    slots[0] = 2, slots[1] = 2, pos[0] = pos[1] = 1;
    OK(tb_llama_decode_slots(&eng, step, slots, pos, 2, err, sizeof err) == -1 &&
           err_has(err, "both in slot 2"),
       "decode_slots: one slot twice refused (%s)", err);
    /* prefill/decode still work after slot calls, and decode sees slot 0's shorter cache */
    OK(tb_llama_prefill(&eng, tok[0], 2, 4, err, sizeof err) == 0 &&
           tb_llama_prefill_slot(&eng, tok[0], 2, 1, pl, err, sizeof err) == 0 &&
           tb_llama_decode(&eng, step, 2, 3, err, sizeof err) == -1 && err_has(err, "cached") &&
           tb_llama_decode(&eng, step, 2, 2, err, sizeof err) == 0,
       "decode after a slot call refuses positions the slot no longer holds");
    tb_llama_release(&eng);
    tb_llama_release(&lone);
    free(want);
    free(pl);
}

static void check_errors(const struct tb_arch *a)
{
    struct tb_llama m, t;
    struct tb_arch bad = *a;
    int tok[4 * 8] = {0}, tgt[4 * 8] = {0};
    float loss;
    char err[512];

    init_or_bail(&m, a, 2, 8, 0, 1);
    err[0] = '\0';
    OK(tb_llama_prefill(&m, tok, 3, 8, err, sizeof err) == -1 && err_has(err, "batch 3"),
       "prefill: batch above capacity is refused");
    OK(tb_llama_prefill(&m, tok, 1, 9, err, sizeof err) == -1 && err_has(err, "sequence 9"),
       "prefill: sequence above capacity is refused");
    tok[5] = a->vocab;
    OK(tb_llama_prefill(&m, tok, 2, 4, err, sizeof err) == -1 &&
           err_has(err, "tokens[1][1] = 256 out of range"),
       "prefill: token id out of range is refused with its place");
    tok[5] = -1;
    OK(tb_llama_prefill(&m, tok, 2, 4, err, sizeof err) == -1, "prefill: negative token refused");
    tok[5] = 0;
    OK(tb_llama_prefill(&m, tok, 2, 4, err, sizeof err) == 0, "prefill in range works");
    OK(tb_llama_decode(&m, tok, 2, 8, err, sizeof err) == -1 && err_has(err, "position 8"),
       "decode: position at capacity is refused");
    OK(tb_llama_decode(&m, tok, 2, 5, err, sizeof err) == -1 && err_has(err, "cached"),
       "decode: position past the cache is refused");
    OK(tb_llama_decode(&m, tok, 3, 4, err, sizeof err) == -1, "decode: batch above capacity");
    OK(tb_llama_forward_loss(&m, tok, tgt, 1, 4, &loss, err, sizeof err) == -1 &&
           err_has(err, "TB_LLAMA_TRAIN"),
       "forward_loss needs a training engine");
    OK(tb_llama_backward(&m, err, sizeof err) == -1, "backward needs a training engine");
    tb_llama_release(&m);

    init_or_bail(&t, a, 1, 4, TB_LLAMA_TRAIN, 1);
    OK(tb_llama_backward(&t, err, sizeof err) == -1 && err_has(err, "no forward"),
       "backward without a forward pass is refused");
    tgt[2] = 999;
    OK(tb_llama_forward_loss(&t, tok, tgt, 1, 4, &loss, err, sizeof err) == -1 &&
           err_has(err, "targets[0][2] = 999"),
       "forward_loss: target out of range is refused");
    tb_llama_release(&t);

    bad.kv_heads = 3;
    OK(tb_llama_init(&m, &bad, 1, 4, 0, 1, err, sizeof err) == -1 && err_has(err, "kv_heads"),
       "init: heads not a multiple of kv_heads is refused");
    OK(tb_llama_init(&m, a, INT_MAX, INT_MAX, TB_LLAMA_TRAIN, 1, err, sizeof err) == -1 &&
           err_has(err, "cannot allocate"),
       "init: an impossible capacity fails with a message");
    OK(m.params == NULL && m.priv == NULL, "a failed init leaves nothing allocated");
}

int main(void)
{
    struct tb_arch a, tied, scaled;
    struct tb_llama m;
    char err[512];

    plan_lazy();
    setenv("TRNBENCH_DATADIR", getenv("TB_SRCDIR") ? getenv("TB_SRCDIR") : ".", 1);
    if (tb_arch_find(&a, "llama-tiny", err, sizeof err) != 0)
        bail("%s", err);
    tied = a;
    tied.tied_embeddings = true;
    scaled = a;
    /* Llama 3.1's factors with a short original context, so that every regime (kept,
     * blended, stretched) occurs among llama-tiny's 8 frequencies */
    scaled.rope_scale_factor = 8;
    scaled.rope_low_freq_factor = 1;
    scaled.rope_high_freq_factor = 4;
    scaled.rope_original_context = 64;

    init_or_bail(&m, &a, 1, 8, TB_LLAMA_TRAIN, 1);
    IS_DOUBLE(tb_arch_params_total(&a), (double)m.n_params, 0, "parameter count");
    OK(tb_llama_bytes(&m) > 4 * m.n_params * sizeof(float), "bytes cover params, grads, moments");
    tb_llama_release(&m);
    init_or_bail(&m, &tied, 1, 8, 0, 1);
    IS_DOUBLE(tb_arch_params_total(&tied), (double)m.n_params, 0, "parameter count (tied)");
    OK(m.lm_head == m.tok_emb, "tied LM head is the embedding");
    tb_llama_release(&m);

    check_logits(&a, "untied");
    check_logits(&tied, "tied");
    check_logits(&scaled, "rope-scaled");
    check_rope_scaling_matters(&a, &scaled);

    check_gradients(&a, "untied");
    scaled.tied_embeddings = true;
    check_gradients(&scaled, "tied+scaled");

    check_decode(&a);
    check_adamw(&a);
    check_overfit(&a);
    check_determinism(&a);
    check_slots(&a);
    check_errors(&a);
    return 0;
}
