/* harness/model/tb_model.c: see tb_model.h. */
#include "tb_model_impl.h"

#include "tb_flops.h"
#include "tb_range.h"
#include "tb_util.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- efficiency table ---- */

/* The figures of efficiency.csv and their ranges as data (README.md, "Input ranges";
 * pricing/README.md says what each means and how it was chosen). */
const struct tb_range TB_EFFICIENCY_RANGES[] = {
    {"gemm_eff", 0.01, 1, false, "share of the bf16 peak"},
    {"gemm_eff_fp8", 0.01, 1, false, "share of the fp8 peak"},
    {"gemm_eff_fp4", 0.01, 1, false, "share of the fp4 peak (empty: no fp4 peak)"},
    {"gemm_m_half", 0, 1e6, false, "rows at half the rate"},
    {"gemm_n_half", 0, 1e6, false, "columns at half the rate"},
    {"mem_eff", 0.01, 1, false, "share of the HBM bandwidth"},
    {"kv_eff", 0.01, 1, false, "share of the HBM bandwidth for the KV cache"},
    {"layer_us", 0, 1e5, false, "us per layer and decode step"},
    {"prefill_layer_us", 0, 1e5, false, "us per layer and prefill"},
    {"prefill_min_tokens", 0, 1e6, false, "tokens"},
    {"prefill_floor_us", 0, 1e6, false, "us, the least time of a prefill call"},
    {"request_us", 0, 1e5, false, "us per request and step"},
    {"train_eff", 0.01, 1, false, "share of the GEMM rate in training"},
    {"dp_overlap", 0, 1, false, "share of the gradient traffic hidden"},
    {"tp_overlap", 0, 1, false, "share of the tensor-parallel traffic hidden"},
    {"conv_eff", 0.01, 1, false, "share of the peak on convolutions"},
    {"hbm_usable", 0.1, 1, false, "share of the HBM usable"},
    {"max_batch", 1, 1e6, false, "sequences"},
    {"attn_overlap", 0, 1, false, "share of attention overlapped"},
    {"head_bytes", 0, 4, false, "bytes per LM-head weight (0: the weights')"},
    {"step_us", 0, 1e5, false, "us per decode step"},
    {"request_overlap", 0, 1, false, "share of the host cost hidden"},
    {"kv_bucket", 0, 1, false, "share of the bucket's unfilled KV read"},
    {"kv_repeat", 0, 1, false, "share of the KV read once per query head"},
    {"dit_train_eff", 0.01, 1, false, "share of train_eff a DiT's training keeps"},
    {"link_eff", 0.001, 1, false, "share of the chip-to-chip link"},
    {"net_eff", 0.001, 1, false, "share of the instance network"},
    {"collective_us", 0, 1e5, false, "us per collective"},
    {"collective_hop_us", 0, 1e4, false, "us per collective step"},
    {NULL, 0, 0, false, NULL},
};

/* Field name of row r through its range in TB_EFFICIENCY_RANGES. */
static int num_field(const struct tb_csv_table *t, size_t r, const char *name, double *out,
                     char *err, size_t errlen)
{
    char why[256];
    if (tb_range_field(TB_EFFICIENCY_RANGES, name, tb_csv_field(t, r, name), out, why,
                       sizeof why) != 0)
        return tb_err(err, errlen, "%s: line %ld: %s", t->path, t->lines[r], why);
    return 0;
}

/* The collective figures every row has (tb_collective.h). */
static int coll_fields(const struct tb_csv_table *t, size_t r, struct tb_model_eff *e,
                       const char *path, char *err, size_t errlen)
{
    double us, hus;
    const char *fabric = tb_csv_field(t, r, "fabric");
    if (num_field(t, r, "link_eff", &e->link_eff, err, errlen) ||
        num_field(t, r, "net_eff", &e->net_eff, err, errlen) ||
        num_field(t, r, "collective_us", &us, err, errlen) ||
        num_field(t, r, "collective_hop_us", &hus, err, errlen))
        return -1;
    if (strcmp(fabric, "ring") && strcmp(fabric, "switch"))
        return tb_err(err, errlen, "%s: line %ld: field 'fabric': '%s' is not ring or switch", path,
                      e->line, fabric);
    e->fabric_switch = !strcmp(fabric, "switch");
    e->collective_s = us * 1e-6;
    e->collective_hop_s = hus * 1e-6;
    return 0;
}

/* The columns of efficiency.csv. */
static const char *const EFF_COLS[] = {"chip",
                                       "family",
                                       "gemm_eff",
                                       "gemm_eff_fp8",
                                       "gemm_eff_fp4",
                                       "gemm_m_half",
                                       "gemm_n_half",
                                       "mem_eff",
                                       "kv_eff",
                                       "link_eff",
                                       "net_eff",
                                       "collective_us",
                                       "layer_us",
                                       "request_us",
                                       "train_eff",
                                       "tp_overlap",
                                       "conv_eff",
                                       "dp_overlap",
                                       "hbm_usable",
                                       "max_batch",
                                       "source",
                                       "prefill_layer_us",
                                       "prefill_min_tokens",
                                       "collective_hop_us",
                                       "fabric",
                                       "attn_overlap",
                                       "head_bytes",
                                       "step_us",
                                       "request_overlap",
                                       "kv_bucket",
                                       "dit_train_eff",
                                       "kv_repeat",
                                       "prefill_floor_us",
                                       NULL};

/* The columns of chip "host"'s row that it fills: what names it and the collective
 * figures (coll_fields). */
static const char *const HOST_COLS[] = {
    "chip",   "family", "source", "link_eff", "net_eff", "collective_us", "collective_hop_us",
    "fabric", NULL};

static bool host_col(const char *name)
{
    for (const char *const *h = HOST_COLS; *h; h++)
        if (!strcmp(*h, name))
            return true;
    return false;
}

/* The row of chip "host" (family "host"): MPI between a CPU host's processes. Only the
 * collective figures; every other column of EFF_COLS empty (the host's engine is
 * measured, never modeled), read as NAN. */
static int host_row(const struct tb_csv_table *t, size_t r, struct tb_model_eff *e,
                    const char *path, char *err, size_t errlen)
{
    if (strcmp(e->family, "host"))
        return tb_err(err, errlen,
                      "%s: line %ld: field 'family': chip 'host' is family 'host', not '%s'", path,
                      e->line, e->family);
    for (const char *const *f = EFF_COLS; *f; f++)
        if (!host_col(*f) && *tb_csv_field(t, r, *f))
            return tb_err(err, errlen,
                          "%s: line %ld: field '%s': not a figure of chip 'host' (only the "
                          "collective figures are): '%s'",
                          path, e->line, *f, tb_csv_field(t, r, *f));
    e->gemm_eff = e->gemm_eff_fp8 = e->gemm_eff_fp4 = e->mem_eff = e->kv_eff = NAN;
    e->train_eff = e->conv_eff = e->hbm_usable = NAN;
    return coll_fields(t, r, e, path, err, errlen);
}

/* Row r of t (path for messages) into *e, every field checked. 0 or -1. */
static int eff_row(const struct tb_pricing *pricing, const struct tb_csv_table *t, size_t r,
                   struct tb_model_eff *e, const char *path, char *err, size_t errlen)
{
    double lus, plus, rus, mb, sus, pfus;
    memset(e, 0, sizeof *e);
    e->chip = tb_csv_field(t, r, "chip");
    e->family = tb_csv_field(t, r, "family");
    e->source = tb_csv_field(t, r, "source");
    e->line = t->lines[r];
    if (!strcmp(e->chip, "host"))
        return host_row(t, r, e, path, err, errlen);
    if (!tb_pricing_chip(pricing, e->chip)) {
        tb_err(err, errlen, "%s: line %ld: field 'chip': '%s' is not in chips.csv", path, e->line,
               e->chip);
        return -1;
    }
    if (!*e->family) {
        tb_err(err, errlen, "%s: line %ld: field 'family': empty", path, e->line);
        return -1;
    }
    if (num_field(t, r, "gemm_eff", &e->gemm_eff, err, errlen) ||
        num_field(t, r, "gemm_eff_fp8", &e->gemm_eff_fp8, err, errlen) ||
        num_field(t, r, "gemm_m_half", &e->gemm_m_half, err, errlen) ||
        num_field(t, r, "gemm_n_half", &e->gemm_n_half, err, errlen) ||
        num_field(t, r, "mem_eff", &e->mem_eff, err, errlen) ||
        num_field(t, r, "kv_eff", &e->kv_eff, err, errlen) ||
        num_field(t, r, "layer_us", &lus, err, errlen) ||
        num_field(t, r, "prefill_layer_us", &plus, err, errlen) ||
        num_field(t, r, "prefill_min_tokens", &e->prefill_min_tokens, err, errlen) ||
        num_field(t, r, "request_us", &rus, err, errlen) ||
        num_field(t, r, "train_eff", &e->train_eff, err, errlen) ||
        num_field(t, r, "dp_overlap", &e->dp_overlap, err, errlen) ||
        num_field(t, r, "tp_overlap", &e->tp_overlap, err, errlen) ||
        num_field(t, r, "conv_eff", &e->conv_eff, err, errlen) ||
        num_field(t, r, "hbm_usable", &e->hbm_usable, err, errlen) ||
        num_field(t, r, "max_batch", &mb, err, errlen) ||
        num_field(t, r, "attn_overlap", &e->attn_overlap, err, errlen) ||
        num_field(t, r, "head_bytes", &e->head_bytes, err, errlen) ||
        num_field(t, r, "step_us", &sus, err, errlen) ||
        num_field(t, r, "request_overlap", &e->request_overlap, err, errlen) ||
        num_field(t, r, "kv_bucket", &e->kv_bucket, err, errlen) ||
        num_field(t, r, "kv_repeat", &e->kv_repeat, err, errlen) ||
        num_field(t, r, "prefill_floor_us", &pfus, err, errlen))
        return -1;
    /* fp4: empty where the chip has no fp4 peak; required where it has one */
    if (!*tb_csv_field(t, r, "gemm_eff_fp4")) {
        if (tb_pricing_chip(pricing, e->chip)->fp4_dense_tflops > 0) {
            tb_err(err, errlen,
                   "%s: line %ld: field 'gemm_eff_fp4': empty, but chips.csv gives '%s' an "
                   "fp4 peak",
                   path, e->line, e->chip);
            return -1;
        }
        e->gemm_eff_fp4 = NAN;
    } else if (num_field(t, r, "gemm_eff_fp4", &e->gemm_eff_fp4, err, errlen)) {
        return -1;
    }
    e->layer_s = lus * 1e-6;
    e->prefill_layer_s = plus * 1e-6;
    e->prefill_floor_s = pfus * 1e-6;
    e->request_s = rus * 1e-6;
    e->step_s = sus * 1e-6;
    e->max_batch = (long)mb;
    e->dit_train_eff = 1;
    if (*tb_csv_field(t, r, "dit_train_eff") &&
        num_field(t, r, "dit_train_eff", &e->dit_train_eff, err, errlen))
        return -1;
    return coll_fields(t, r, e, path, err, errlen);
}

/* The numbers of the start-up tables beside efficiency.csv (README.md, "Input ranges"):
 * checked when the model loads, so a malformed figure is an error, not a silent "no
 * published figure" at prediction. */
const struct tb_range TB_STORAGE_RANGES[] = {
    {"read_mb_per_s", 1, 1e9, false, "MB/s from storage to the host"},
    {NULL, 0, 0, false, NULL},
};
const struct tb_range TB_COMPILE_RANGES[] = {
    {"compile_s", 0, 1e7, false, "s"},
    {NULL, 0, 0, false, NULL},
};

int tb_model_load(struct tb_model *m, const struct tb_pricing *pricing, const char *dir, char *err,
                  size_t errlen)
{
    char path[PATH_MAX];

    memset(m, 0, sizeof *m);
    m->pricing = pricing;
    if ((size_t)(dir ? snprintf(path, sizeof path, "%s/efficiency.csv", dir)
                     : snprintf(path, sizeof path, "%s/pricing/efficiency.csv", tb_datadir())) >=
        sizeof path)
        return tb_err(err, errlen, "path too long");
    if (tb_csv_load(&m->csv, path, err, errlen) != 0)
        return -1;
    if (tb_csv_require(&m->csv, EFF_COLS, err, errlen) != 0)
        goto fail;
    m->eff = tb_alloc_array(m->csv.nrows ? m->csv.nrows : 1, sizeof *m->eff);
    if (!m->eff) {
        tb_err(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t r = 0; r < m->csv.nrows; r++) {
        if (eff_row(pricing, &m->csv, r, &m->eff[m->neff], path, err, errlen) != 0)
            goto fail;
        m->neff++;
    }
    if (tb_model_datasets_load(m, NULL, err, errlen) != 0)
        goto fail;
    /* the start-up tables beside efficiency.csv: optional, each with its columns when
     * present */
    {
        static const char *const scols[] = {"instance", "path",   "read_mb_per_s", "status",
                                            "as_of",    "source", "notes",         NULL};
        static const char *const ccols[] = {"chip",  "model", "phases", "compile_s", "status",
                                            "stack", "as_of", "source", "notes",     NULL};
        *strrchr(path, '/') = 0; /* the folder of efficiency.csv */
        if (tb_csv_load_optional(&m->storage, path, "storage.csv", scols, err, errlen) != 0 ||
            tb_csv_load_optional(&m->compile, path, "compile.csv", ccols, err, errlen) != 0 ||
            tb_range_check_csv(&m->storage, TB_STORAGE_RANGES, err, errlen) != 0 ||
            tb_range_check_csv(&m->compile, TB_COMPILE_RANGES, err, errlen) != 0 ||
            tb_model_stacks_load(m, path, err, errlen) != 0)
            goto fail;
    }
    return 0;
fail:
    tb_model_release(m);
    return -1;
}

int tb_model_efficiency_overlay(struct tb_model *m, const char *path, char *err, size_t errlen)
{
    struct tb_csv_table t;
    struct tb_model_eff *e = NULL;
    size_t *at = NULL;
    int rc = -1;

    if (m->user_csv.path)
        return tb_err(err, errlen, "'%s': one --efficiency file only", path);
    if (tb_csv_load(&t, path, err, errlen) != 0)
        return -1;
    if (tb_csv_require(&t, EFF_COLS, err, errlen) != 0)
        goto out;
    if (t.nrows == 0) {
        tb_err(err, errlen, "%s: no rows", path);
        goto out;
    }
    e = tb_alloc_array(t.nrows, sizeof *e);
    at = tb_alloc_array(t.nrows, sizeof *at);
    if (!e || !at) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    /* every row checked before any replaces ours: a bad file changes nothing */
    for (size_t r = 0; r < t.nrows; r++) {
        if (eff_row(m->pricing, &t, r, &e[r], path, err, errlen) != 0)
            goto out;
        for (at[r] = 0; at[r] < m->neff && strcmp(m->eff[at[r]].chip, e[r].chip); at[r]++)
            ;
        if (at[r] == m->neff) {
            tb_err(err, errlen, "%s: line %ld: field 'chip': '%s' has no row in efficiency.csv",
                   path, e[r].line, e[r].chip);
            goto out;
        }
        for (size_t q = 0; q < r; q++)
            if (at[q] == at[r]) {
                tb_err(err, errlen, "%s: line %ld: field 'chip': '%s' again (line %ld)", path,
                       e[r].line, e[r].chip, e[q].line);
                goto out;
            }
    }
    for (size_t r = 0; r < t.nrows; r++)
        m->eff[at[r]] = e[r];
    m->user_csv = t; /* the rows' strings point into it */
    memset(&t, 0, sizeof t);
    rc = 0;
out:
    free(e);
    free(at);
    tb_csv_release(&t);
    return rc;
}

void tb_model_release(struct tb_model *m)
{
    free(m->eff);
    tb_csv_release(&m->user_csv);
    tb_csv_release(&m->csv);
    tb_csv_release(&m->datasets);
    tb_csv_release(&m->limits);
    tb_csv_release(&m->storage);
    tb_csv_release(&m->compile);
    tb_csv_release(&m->stacks_csv);
    free(m->stacks);
    memset(m, 0, sizeof *m);
}

const struct tb_model_eff *tb_model_eff_of(const struct tb_model *m, const char *chip)
{
    for (size_t i = 0; i < m->neff; i++)
        if (!strcmp(m->eff[i].chip, chip))
            return &m->eff[i];
    return NULL;
}

bool tb_model_precision_known(const char *name)
{
    static const char *const names[] = {"bf16", "fp16",  "fp8",   "cfp8", "mxfp8",
                                        "fp4",  "nvfp4", "mxfp4", "int8", "fp32"};
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i]))
            return true;
    return false;
}

/* ---- one device of a layout ---- */

int tb_model_dev_init(struct dev *d, const struct tb_model *m, const struct tb_scenario *sc, long k,
                      char *err, size_t errlen)
{
    const struct tb_chip *c = tb_pricing_chip(m->pricing, sc->inst->chip);
    const char *p = sc->precision && *sc->precision ? sc->precision : "bf16";
    double tflops;

    memset(d, 0, sizeof *d);
    d->a = sc->arch; /* NULL for diffusion */
    if (!c)
        return tb_err(err, errlen, "chip '%s' of '%s' is not in chips.csv", sc->inst->chip,
                      sc->inst->instance);
    d->e = tb_model_eff_of(m, c->chip);
    if (!d->e)
        return tb_err(err, errlen, "no efficiency figures for chip '%s' (pricing/efficiency.csv)",
                      c->chip);
    d->gemm_eff = d->e->gemm_eff;
    d->lowp_frac = 1;
    d->format = p;
    /* the block-scaled formats came with the generation that added fp4 (Blackwell,
     * Trainium3): a chip without an fp4 peak has neither */
    if (tb_model_precision_known(p) && strstr(p, "fp4") && !(c->fp4_dense_tflops > 0))
        return tb_err(err, errlen, "%s has no fp4 %s (chips.csv fp4_dense_tflops empty)", c->name,
                      strcmp(d->e->family, "nvidia") ? "matrix support" : "tensor cores");
    if (!strcmp(p, "mxfp8") && !(c->fp4_dense_tflops > 0))
        return tb_err(err, errlen,
                      "%s has no MX block-scaled formats (MXFP8 and MXFP4 came with Blackwell and "
                      "Trainium3, the chips with an fp4 peak in chips.csv); say fp8",
                      c->name);
    if (!strcmp(p, "bf16") || !strcmp(p, "fp16")) {
        tflops = c->bf16_dense_tflops;
        d->wbytes = d->kvbytes = 2;
    } else if (!strcmp(p, "fp8") || !strcmp(p, "cfp8") || !strcmp(p, "mxfp8")) {
        if (!strcmp(p, "cfp8") && strncmp(d->e->family, "neuron", 6))
            return tb_err(err, errlen, "cfp8 is the Neuron SDK's fp8 (AWS chips); for %s say fp8",
                          c->name);
        tflops = c->fp8_dense_tflops;
        /* fp8 weights and fp8 KV cache, as the stacks run it; MX: one 8-bit scale per 32 */
        d->wbytes = !strcmp(p, "mxfp8") ? 1.0 + 1.0 / 32.0 : 1.0;
        d->kvbytes = 1;
        d->gemm_eff = d->e->gemm_eff_fp8;
        d->format = !strcmp(p, "mxfp8") ? "MXFP8" : "fp8";
    } else if (!strcmp(p, "fp4") || !strcmp(p, "nvfp4") || !strcmp(p, "mxfp4")) {
        bool nv = !strcmp(d->e->family, "nvidia");
        if (!strcmp(p, "nvfp4") && !nv)
            return tb_err(err, errlen, "NVFP4 is NVIDIA's format; %s's fp4 is MXFP4 (mxfp4 or fp4)",
                          c->name);
        tflops = c->fp4_dense_tflops;
        /* fp4 (e2m1) weights with their block scales: NVFP4 one e4m3 scale per 16 values
         * (its per-tensor fp32 scale is negligible), MXFP4 one 8-bit scale per 32; plain
         * fp4 is the vendor's own, NVFP4 on NVIDIA, MXFP4 on Trainium3. KV cache in fp8,
         * as TensorRT-LLM and vLLM run the fp4 checkpoints */
        d->format = !strcmp(p, "mxfp4") || !nv ? "MXFP4" : "NVFP4";
        d->wbytes = 0.5 + (strcmp(d->format, "NVFP4") ? 1.0 / 32.0 : 1.0 / 16.0);
        d->kvbytes = 1;
        d->gemm_eff = d->e->gemm_eff_fp4;
        /* training: NVIDIA's NVFP4 recipe keeps about 15% of the linear layers (the last
         * ones) in bf16 (arXiv 2509.25149); the rest of a step as in bf16/fp8 training */
        d->lowp_frac = 0.85;
    } else if (!strcmp(p, "int8")) {
        tflops = c->bf16_dense_tflops; /* weight-only int8: bf16 matmuls */
        d->wbytes = 1;
        d->kvbytes = 2;
    } else if (!strcmp(p, "fp32")) {
        tflops = c->fp32_tflops;
        d->wbytes = d->kvbytes = 4;
    } else {
        return tb_err(err, errlen, "unknown precision '%s' (%s)", p, TB_MODEL_PRECISIONS);
    }
    if (!(tflops > 0))
        return tb_err(err, errlen, "%s has no %s peak in chips.csv", c->name, p);
    if (!(d->gemm_eff > 0))
        return tb_err(err, errlen, "no %s efficiency for chip '%s' (pricing/efficiency.csv)", p,
                      c->chip);
    if (!(c->hbm_gib > 0) || !(c->hbm_tbps > 0))
        return tb_err(err, errlen, "%s has no HBM size or bandwidth in chips.csv", c->name);
    d->k = k;
    d->chip_peak = tflops * 1e12;
    d->peak = d->chip_peak / (double)k;
    d->bf16_peak = (c->bf16_dense_tflops > 0 ? c->bf16_dense_tflops : tflops) * 1e12 / (double)k;
    /* serving's attention runs at the KV cache's format, not the weights': an fp4
     * checkpoint's attention is fp8 (TensorRT-LLM's fp8 FMHA over an fp8 cache), an
     * fp8 one's fp8, a 16-bit one's bf16 */
    d->attn_peak = d->kvbytes == 1 && c->fp8_dense_tflops > 0
                       ? c->fp8_dense_tflops * 1e12 / (double)k
                   : d->kvbytes == 1 ? d->chip_peak / (double)k
                                     : d->bf16_peak;
    if (d->attn_peak > d->peak)
        d->attn_peak = d->peak; /* never faster than the precision's own products */
    /* chips.csv states GB for NVIDIA and GiB for AWS; the difference (7%) is inside
     * hbm_usable's margin, so both are read as GiB-like capacity in bytes */
    d->hbm = c->hbm_gib * 1073741824.0 / (double)k;
    d->hbm_bw = c->hbm_tbps * 1e12 / (double)k;
    d->link_bw = (c->interconnect_gbps > 0 ? c->interconnect_gbps : 512) * 1e9 / 8 / (double)k *
                 d->e->link_eff;
    d->per_node = sc->inst->accel_count * k;
    d->ep = 1; /* no expert parallelism until tb_model_expert_layout says otherwise */
    d->etp = d->eg = 0;
    d->net_bw = (sc->inst->network_gbps > 0 ? sc->inst->network_gbps : 100) * 1e9 / 8 /
                (double)d->per_node * d->e->net_eff;
    return 0;
}

int tb_model_layout_devices(const struct tb_scenario *sc, long *out, char *err, size_t errlen)
{
    long tp = sc->tp > 0 ? sc->tp : 1, pp = sc->pp > 0 ? sc->pp : 1, dp = sc->dp > 0 ? sc->dp : 1;
    long n;
    if (tb_mul_long(tp, pp, &n) != 0 || tb_mul_long(n, dp, &n) != 0)
        return tb_err(err, errlen, "tp x pp x dp = %ld x %ld x %ld overflows: not a layout", tp, pp,
                      dp);
    *out = n;
    return 0;
}

/* Efficiency of the layer GEMMs with M rows (tokens) when tensor parallelism over tp
 * devices narrows each to hidden/tp columns: small in either dimension fills the
 * matrix units poorly (a systolic array of 128 rows, or a GPU's tiles). */
double tb_model_gemm_eff(const struct dev *d, double M, long tp)
{
    double N = (double)d->a->hidden / (double)tp;
    return d->gemm_eff * M / (M + d->e->gemm_m_half) * N / (N + d->e->gemm_n_half);
}

/* Work of the attention projections grows when tp does not divide the heads: the
 * Neuron and TensorRT-LLM stacks pad the heads to a multiple of tp. Returns the factor
 * on the matrix-product parameters (1 when tp divides the heads). */
double tb_model_head_pad(const struct tb_arch *a, long tp)
{
    double padded = ceil((double)a->heads / (double)tp) * (double)tp;
    double q = (double)a->heads * a->head_dim, kv = (double)a->kv_heads * a->head_dim;
    double attn = (double)a->hidden * (2.0 * q + 2.0 * kv) * a->layers;
    if (padded <= a->heads)
        return 1.0;
    /* of the parameters a token uses: all of a dense model's, the active ones of a
     * mixture of experts */
    return 1.0 + attn * (padded / a->heads - 1.0) / tb_arch_params_active(a);
}

/* Latency of one collective over c chips: the fixed cost of starting and
 * synchronising it (collective_us, also within one chip's cores) plus one hop's
 * latency per step the algorithm takes across chips; a ring over point-to-point links
 * passes 2(c-1) steps (reduce-scatter, all-gather), a switched fabric where every chip
 * is one traversal from every other halves and doubles in 2 ceil(log2 c). */
double tb_model_collective_latency_s(const struct tb_model_eff *e, long c)
{
    double steps = c <= 1 ? 0 : e->fabric_switch ? 2.0 * ceil(log2((double)c)) : 2.0 * (c - 1);
    return e->collective_s + e->collective_hop_s * steps;
}

/* Ring all-reduce of S bytes over g devices spread over `span` devices of the
 * layout (g members at stride): intra-node when the span fits in one instance. */
double tb_model_allreduce_s(const struct dev *d, double S, long g, long span)
{
    double bw = d->link_bw;
    long c = (g + d->k - 1) / d->k; /* chips the group spans */
    if (g <= 1)
        return 0;
    if (span > d->per_node) {
        /* across instances: a ring crosses each instance boundary once, and NCCL runs
         * one ring (channel) per network card, each carrying its share of the bytes; a
         * group with m members in an instance (members every span / g devices) crosses
         * on m cards at once, the groups beside it on the others (one member per
         * instance: one card, as before). So multi-node all-reduce bus bandwidth
         * approaches the instance's network bandwidth (nccl-tests' busbw), bounded by
         * the instance's own links */
        long stride = span / g > 1 ? span / g : 1;
        long mem = d->per_node / stride > 1 ? d->per_node / stride : 1;
        bw = fmin(d->link_bw, d->net_bw * (double)(mem < g ? mem : g));
    }
    return tb_model_collective_latency_s(d->e, c < d->per_node / d->k ? c : d->per_node / d->k) *
               (span <= d->per_node ? 1 : 4) +
           2.0 * (double)(g - 1) / (double)g * S / bw;
}

double tb_model_alltoall_s(const struct dev *d, double S, long g, long span)
{
    long c = (g + d->k - 1) / d->k; /* chips the group spans */
    double bw = span > d->per_node ? fmin(d->link_bw, d->net_bw) : d->link_bw;
    if (g <= 1)
        return 0;
    /* each device exchanges with every other: (g-1)/g of its bytes leave it, over its
     * link within an instance or the instance's network card share across instances;
     * the latency as a collective's over the chips (x4 across instances, as
     * tb_model_allreduce_s) */
    return tb_model_collective_latency_s(d->e, c < d->per_node / d->k ? c : d->per_node / d->k) *
               (span <= d->per_node ? 1 : 4) +
           (double)(g - 1) / (double)g * S / bw;
}

int tb_model_expert_layout(struct dev *d, long tp, long dp, long ep, char *err, size_t errlen)
{
    const struct tb_arch *a = d->a;
    long devs = tp * dp;
    if (ep <= 0)
        ep = 1;
    d->ep = 1;
    d->etp = d->eg = tp;
    if (ep == 1)
        return 0;
    if (a->experts <= 0)
        return tb_err(err, errlen, "ep=%ld: %s is a dense model (no experts to split)", ep,
                      a->name);
    if (ep > a->experts)
        return tb_err(err, errlen, "ep=%ld: more than %s's %d experts", ep, a->name, a->experts);
    if (ep <= tp ? tp % ep != 0 : devs % ep != 0)
        return tb_err(err, errlen,
                      "ep=%ld: divides neither tp=%ld (experts within each tensor-parallel group) "
                      "nor tp x dp = %ld (one expert group over the layout)",
                      ep, tp, devs);
    d->ep = ep;
    d->eg = ep <= tp ? tp : devs;
    d->etp = d->eg / ep;
    return 0;
}

/* ---- entry points ---- */

/* The phase's own prediction of sc, with m's figures as they are. */
static int predict_phase(const struct tb_model *m, const struct tb_scenario *sc,
                         struct tb_prediction *p, char *err, size_t errlen)
{
    int rc;
    if (sc->phase == TB_PHASE_TRAIN && sc->darch) {
        rc = tb_model_predict_dtrain(m, sc, p, err, errlen);
    } else if (sc->phase == TB_PHASE_TRAIN) {
        rc = tb_model_predict_train(m, sc, p, err, errlen);
    } else if (sc->phase == TB_PHASE_DENOISE && sc->dataset && *sc->dataset) {
        /* a diffusion dataset fixes the steps and the image size (coco-2014: MLPerf's) */
        struct tb_scenario s = *sc;
        if (tb_model_dataset_diffusion(m, sc->dataset, &s.steps, &s.resolution, err, errlen) != 0)
            return -1;
        s.dataset = NULL;
        rc = tb_model_predict_denoise(m, &s, p, err, errlen);
    } else if (sc->phase == TB_PHASE_DENOISE) {
        rc = tb_model_predict_denoise(m, sc, p, err, errlen);
    } else if (sc->tp <= 0 && sc->dp <= 0 &&
               (sc->batch_max || (sc->scenario && *sc->scenario) || sc->phase == TB_PHASE_SERVE)) {
        /* serving with no layout given: replicas of tensor-parallel groups, searched; a
         * prefill or decode phase at a static batch measures its latency over the chips
         * given (tp = chips) */
        rc = tb_model_predict_serving_layout(m, sc, p, err, errlen);
    } else {
        rc = tb_model_predict_inference(m, sc, p, err, errlen);
    }
    return rc;
}

int tb_model_predict(const struct tb_model *m, const struct tb_scenario *sc,
                     struct tb_prediction *p, char *err, size_t errlen)
{
    long per_inst;

    memset(p, 0, sizeof *p);
    p->step_time_s = p->train_tokens_per_s = p->train_tokens_per_s_per_chip = p->mfu = NAN;
    p->time_to_train_s = p->usd_to_train = p->eval_s = p->bubble = NAN;
    p->ttft_ms = p->tpot_ms = p->e2e_latency_ms = NAN;
    p->output_tokens_per_s = p->output_tokens_per_s_per_chip = p->total_tokens_per_s = NAN;
    p->tokens_per_s_per_user = NAN;
    p->s_per_image = p->images_per_s = p->images_per_s_per_chip = p->ms_per_step = NAN;
    p->weight_load_s = p->compile_s = NAN;
    p->mem_per_device_gib = p->hbm_per_device_gib = NAN;
    p->ep = 1;
    p->bound = "";
    if (!sc->inst ||
        (sc->phase == TB_PHASE_DENOISE || (sc->phase == TB_PHASE_TRAIN && sc->darch) ? !sc->darch
                                                                                     : !sc->arch))
        return tb_err(err, errlen, "no model or target");
    per_inst = sc->inst->accel_count;
    if (per_inst <= 0 || sc->chips < 0 || sc->instances < 0)
        return tb_err(err, errlen, "%s: no chips to model", sc->inst->instance);
    if (sc->chips > 0) {
        p->chips = sc->chips;
        p->instances =
            sc->instances > 0 ? sc->instances : sc->chips / per_inst + (sc->chips % per_inst > 0);
    } else {
        p->instances = sc->instances > 0 ? sc->instances : 1;
        if (tb_mul_long(p->instances, per_inst, &p->chips) != 0)
            return tb_err(err, errlen, "%ld x %s overflows the chip count", p->instances,
                          sc->inst->instance);
    }
    if (p->chips / per_inst > p->instances ||
        (p->chips / per_inst == p->instances && p->chips % per_inst))
        return tb_err(err, errlen, "%ld chips do not fit in %ld x %s (%ld chips each)", p->chips,
                      p->instances, sc->inst->instance, per_inst);
    {
        /* an MLPerf server or interactive run at a given rate (its log's scheduled
         * samples per second): the scenario's token budget at that Poisson rate, one
         * regime (the latencies a run reports are at its own rate) */
        bool mlperf_rate =
            sc->request_rate > 0 && sc->scenario &&
            (!strcmp(sc->scenario, "server") || !strcmp(sc->scenario, "interactive"));
        /* MLPerf Training's time to train (its evaluations): a training run, not a
         * serving regime */
        bool mlperf_train = sc->scenario && !strcmp(sc->scenario, "training");
        bool serving_scen = sc->scenario && *sc->scenario && !mlperf_train;
        int regimes = (sc->batch > 0 || sc->batch_max) + (sc->concurrency > 0) +
                      (sc->request_rate > 0 && !mlperf_rate) + serving_scen;
        if (mlperf_train && sc->phase != TB_PHASE_TRAIN)
            return tb_err(err, errlen,
                          "scenario training is MLPerf Training's time to train (phase train)");
        if (regimes > 1)
            return tb_err(err, errlen,
                          "batch, concurrency, request_rate and scenario are different serving "
                          "regimes: give one (request_rate may go with scenario server or "
                          "interactive: the run's own rate)");
        if (regimes && (sc->concurrency > 0 || sc->request_rate > 0 || serving_scen) &&
            (sc->phase == TB_PHASE_TRAIN || sc->phase == TB_PHASE_DENOISE))
            return tb_err(err, errlen,
                          "concurrency, request_rate and scenario are serving regimes (phase "
                          "serve, prefill or decode)");
        if (sc->lora_rank != 0 && sc->phase != TB_PHASE_TRAIN)
            return tb_err(err, errlen, "lora_rank: LoRA fine-tuning is training (phase train)");
        if (sc->dataset && *sc->dataset && sc->phase == TB_PHASE_TRAIN)
            return tb_err(err, errlen, "dataset is a serving workload (phase serve or denoise)");
        /* a dataset unknown or without lengths, a model MLPerf gives no limits: said as
         * such, not once per layout */
        if (tb_model_regime_check(m, sc, err, errlen) != 0)
            return -1;
    }
    {
        int rc = sc->software && *sc->software
                     ? tb_model_predict_stack(m, sc, p, err, errlen, predict_phase)
                     : predict_phase(m, sc, p, err, errlen);
        if (rc == 0 && p->fits)
            tb_model_startup(m, sc, p);
        return rc;
    }
}

static const struct {
    const char *name;
    size_t off;
} PREDICTED[] = {
    {"train_tokens_per_s", offsetof(struct tb_prediction, train_tokens_per_s)},
    {"train_tokens_per_s_per_chip", offsetof(struct tb_prediction, train_tokens_per_s_per_chip)},
    {"step_time_s", offsetof(struct tb_prediction, step_time_s)},
    {"time_to_train_s", offsetof(struct tb_prediction, time_to_train_s)},
    {"usd_to_train", offsetof(struct tb_prediction, usd_to_train)},
    {"mfu", offsetof(struct tb_prediction, mfu)},
    {"ttft_ms", offsetof(struct tb_prediction, ttft_ms)},
    {"tpot_ms", offsetof(struct tb_prediction, tpot_ms)},
    {"e2e_latency_ms", offsetof(struct tb_prediction, e2e_latency_ms)},
    {"output_tokens_per_s", offsetof(struct tb_prediction, output_tokens_per_s)},
    {"output_tokens_per_s_per_chip", offsetof(struct tb_prediction, output_tokens_per_s_per_chip)},
    {"total_tokens_per_s", offsetof(struct tb_prediction, total_tokens_per_s)},
    {"tokens_per_s_per_user", offsetof(struct tb_prediction, tokens_per_s_per_user)},
    {"s_per_image", offsetof(struct tb_prediction, s_per_image)},
    {"images_per_s", offsetof(struct tb_prediction, images_per_s)},
    {"images_per_s_per_chip", offsetof(struct tb_prediction, images_per_s_per_chip)},
    {"ms_per_step", offsetof(struct tb_prediction, ms_per_step)},
    {"weight_load_s", offsetof(struct tb_prediction, weight_load_s)},
    {"compile_s", offsetof(struct tb_prediction, compile_s)},
};

bool tb_prediction_has_metric(const char *metric)
{
    for (size_t i = 0; i < sizeof PREDICTED / sizeof PREDICTED[0]; i++)
        if (!strcmp(metric, PREDICTED[i].name))
            return true;
    return false;
}

double tb_prediction_metric(const struct tb_prediction *p, const char *metric)
{
    if (!p->fits)
        return NAN;
    for (size_t i = 0; i < sizeof PREDICTED / sizeof PREDICTED[0]; i++)
        if (!strcmp(metric, PREDICTED[i].name)) {
            double v; /* the field at offsetof: a double */
            memcpy(&v, (const char *)p + PREDICTED[i].off, sizeof v);
            return v;
        }
    return NAN;
}
