/* harness/model/tb_model_startup.c: start-up time, any phase (tb_model_impl.h). */
#include "tb_model_impl.h"

#include "tb_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Bytes of weights one device of p's layout holds, and what they are (for the
 * assumptions). Serving holds the weights at the precision's bytes; training starts from
 * a 16-bit checkpoint (the optimizer state is built on the device, or read only on a
 * resume, which is not counted); diffusion holds the denoiser, the text encoders and the
 * VAE, resident as the pipelines keep them. Sharded over tp x pp devices. */
static double device_weight_bytes(const struct dev *d, const struct tb_scenario *sc,
                                  const struct tb_prediction *p)
{
    double shards = (double)(p->tp > 0 ? p->tp : 1) * (double)(p->pp > 0 ? p->pp : 1);
    if (sc->darch) {
        const struct tb_darch *a = sc->darch;
        return (tb_darch_params_denoiser(a) + tb_darch_params_encoders(a) +
                tb_darch_params_vae_decoder(a)) *
               d->wbytes / shards;
    }
    return tb_arch_params_total(sc->arch) * (sc->phase == TB_PHASE_TRAIN ? 2.0 : d->wbytes) /
           shards;
}

/* The row of t whose field col is key, or -1. */
static long find_row(const struct tb_csv_table *t, const char *col, const char *key)
{
    for (size_t r = 0; r < t->nrows; r++)
        if (!strcmp(tb_csv_field(t, r, col), key))
            return (long)r;
    return -1;
}

/* Whether the space-separated list has word, or is "*". */
static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    if (!strcmp(list, "*"))
        return true;
    for (const char *s = list; (s = strstr(s, word)) != NULL; s += n)
        if ((s == list || s[-1] == ' ') && (s[n] == ' ' || s[n] == '\0'))
            return true;
    return false;
}

static void weight_load(const struct tb_model *m, const struct tb_scenario *sc,
                        struct tb_prediction *p)
{
    const struct tb_csv_table *t = &m->storage;
    const char *inst = sc->inst->instance;
    long r = find_row(t, "instance", inst);
    struct dev d;
    char err[256];
    double bw, per_inst, devs_per_inst;

    if (r < 0) {
        snprintf(p->weight_load_why, sizeof p->weight_load_why,
                 "no storage read bandwidth for %s (pricing/storage.csv)", inst);
        return;
    }
    if (strcmp(tb_csv_field(t, (size_t)r, "status"), "published") ||
        tb_parse_double(tb_csv_field(t, (size_t)r, "read_mb_per_s"), 1, 1e9, &bw) != 0) {
        snprintf(p->weight_load_why, sizeof p->weight_load_why,
                 "no published storage bandwidth for %s: %.180s", inst,
                 tb_csv_field(t, (size_t)r, "notes"));
        return;
    }
    if (tb_model_dev_init(&d, m, sc, p->devices_per_chip > 0 ? p->devices_per_chip : 1, err,
                          sizeof err) != 0) {
        snprintf(p->weight_load_why, sizeof p->weight_load_why, "%s", err);
        return;
    }
    /* every device's shard read by its own instance; replicas (dp) read their own copy;
     * the instances read side by side */
    devs_per_inst = ceil((double)p->devices / (double)(p->instances > 0 ? p->instances : 1));
    per_inst = device_weight_bytes(&d, sc, p) * devs_per_inst;
    p->weight_load_s = per_inst / (bw * 1e6);
}

static void compile_time(const struct tb_model *m, const struct tb_scenario *sc,
                         struct tb_prediction *p)
{
    const struct tb_csv_table *t = &m->compile;
    const char *chip = sc->inst->chip, *phase = tb_phase_to_string(sc->phase);
    const char *model = sc->darch ? sc->darch->name : sc->arch->name;

    for (size_t r = 0; r < t->nrows; r++) {
        const char *c = tb_csv_field(t, r, "chip"), *mo = tb_csv_field(t, r, "model");
        double v;
        if ((strcmp(c, "*") && strcmp(c, chip)) || (strcmp(mo, "*") && strcmp(mo, model)) ||
            !has_word(tb_csv_field(t, r, "phases"), phase))
            continue;
        if (!strcmp(tb_csv_field(t, r, "status"), "published") &&
            tb_parse_double(tb_csv_field(t, r, "compile_s"), 0, 1e7, &v) == 0) {
            p->compile_s = v;
            return;
        }
        snprintf(p->compile_why, sizeof p->compile_why, "%s on %s, %s: %.150s", model, chip, phase,
                 tb_csv_field(t, r, "notes"));
        return;
    }
    snprintf(p->compile_why, sizeof p->compile_why,
             "no compile time for %s on %s, %s (pricing/compile.csv)", model, chip, phase);
}

void tb_model_startup(const struct tb_model *m, const struct tb_scenario *sc,
                      struct tb_prediction *p)
{
    weight_load(m, sc, p);
    compile_time(m, sc, p);
}
