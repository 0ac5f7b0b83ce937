/* harness/measure/tb_gpu.c: see tb_gpu.h. */
#include "tb_gpu.h"

#include "tb_timer.h"
#include "tb_util.h"
#include "workloads/diffusion/diffusion.h"
#include "workloads/llama/llama.h"

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PLUGIN_NAME "libtrnbench-cuda.so"

bool tb_gpu_built(void)
{
    return tb_version_cuda_built() != 0;
}

/* ---- finding and loading the plugin ---- */

/* The plugin next to the binary: <dir of exe>/../lib/PLUGIN_NAME. */
static bool beside_binary(char *out, size_t len)
{
    char exe[3800];
    char *slash;
    if (tb_self_exe(exe, sizeof exe, NULL, 0) != 0)
        return false;
    slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = '\0';
    return (size_t)snprintf(out, len, "%s/../lib/%s", exe, PLUGIN_NAME) < len;
}

/* The first plugin file that exists, into g->path; false (g->why set) when none. */
static bool find_plugin(struct tb_gpu *g)
{
    const char *env = getenv("TRNBENCH_CUDA_PLUGIN");
    char beside[4096] = "", installed[4096];

    if (env && *env) {
        snprintf(g->path, sizeof g->path, "%s", env);
        if (tb_file_exists(g->path))
            return true;
        snprintf(g->why, sizeof g->why, "CUDA plugin '%.900s' (TRNBENCH_CUDA_PLUGIN) not found",
                 g->path);
        return false;
    }
    snprintf(installed, sizeof installed, "%.3800s/%s", tb_version_installed_libdir(), PLUGIN_NAME);
    if (beside_binary(beside, sizeof beside) && tb_file_exists(beside)) {
        snprintf(g->path, sizeof g->path, "%s", beside);
        return true;
    }
    if (tb_file_exists(installed)) {
        snprintf(g->path, sizeof g->path, "%s", installed);
        return true;
    }
    if (!tb_gpu_built())
        snprintf(g->why, sizeof g->why,
                 "CUDA executor not built (no nvcc or no NVIDIA GPU when it was built: make "
                 "CUDA_ARCHS=90 builds it)");
    else
        snprintf(g->why, sizeof g->why, "CUDA plugin not found (looked at '%.450s' and '%.450s')",
                 beside[0] ? beside : "<no /proc/self/exe>", installed);
    return false;
}

static bool nvidia_driver_seen(void)
{
    return tb_file_exists("/proc/driver/nvidia/version") || tb_file_exists("/dev/nvidiactl");
}

int tb_gpu_open(struct tb_gpu *g, int device, unsigned flags)
{
    const char *env = getenv("TRNBENCH_CUDA");
    tb_cuda_plugin_fn entry;
    char err[512] = "";
    void *sym;

    memset(g, 0, sizeof *g);
    if (env && !strcmp(env, "0")) {
        snprintf(g->why, sizeof g->why, "disabled (TRNBENCH_CUDA=0)");
        return -1;
    }
    if (!find_plugin(g))
        return -1;
    if (!(flags & TB_GPU_FORCE) && !nvidia_driver_seen()) {
        snprintf(g->why, sizeof g->why,
                 "no NVIDIA driver (no /proc/driver/nvidia/version, no /dev/nvidiactl)");
        return -1;
    }
    /* RTLD_LOCAL: the plugin's CUDA symbols stay out of the program's namespace */
    g->dl = dlopen(g->path, RTLD_NOW | RTLD_LOCAL);
    if (!g->dl) {
        const char *e = dlerror();
        snprintf(g->why, sizeof g->why, "cannot load '%.500s': %.400s", g->path,
                 e ? e : "unknown error");
        return -1;
    }
    /* POSIX: a data pointer from dlsym converts to a function pointer */
    sym = dlsym(g->dl, TB_CUDA_PLUGIN_SYMBOL);
    if (!sym) {
        snprintf(g->why, sizeof g->why, "'%.900s' has no symbol '%s'", g->path,
                 TB_CUDA_PLUGIN_SYMBOL);
        goto fail;
    }
    memcpy(&entry, &sym, sizeof entry);
    g->api = entry(TB_CUDA_ABI_VERSION);
    if (!g->api || g->api->abi_version != TB_CUDA_ABI_VERSION) {
        snprintf(g->why, sizeof g->why,
                 "'%.800s' was built for another plugin interface (this binary needs version %d): "
                 "rebuild both",
                 g->path, TB_CUDA_ABI_VERSION);
        g->api = NULL;
        goto fail;
    }
    if (g->api->probe(device, &g->info, err, sizeof err) != 0) {
        snprintf(g->why, sizeof g->why, "%s", err[0] ? err : "no CUDA device");
        g->api = NULL;
        goto fail;
    }
    if (g->info.emulated && !(flags & TB_GPU_EMULATOR_OK)) {
        snprintf(g->why, sizeof g->why,
                 "the CUDA emulator (libtrnbench-cuemu.so) is for tests, not measurements");
        g->api = NULL;
        goto fail;
    }
    return 0;
fail:
    /* the plugin stays loaded: unloading cudart after it initialised is not safe */
    return -1;
}

void tb_gpu_close(struct tb_gpu *g)
{
    /* dlclose is skipped on purpose: cudart registers exit handlers and threads that
     * must not outlive their code; the handle is released at process exit */
    memset(g, 0, sizeof *g);
}

/* ---- provenance ---- */

void tb_gpu_describe(const struct tb_cuda_info *i, char *buf, size_t len)
{
    snprintf(buf, len, "%s (sm_%d%d, %d SMs, %.1f GiB), driver %s, CUDA %d.%d", i->name,
             i->cc_major, i->cc_minor, i->sm_count, i->mem_gib,
             i->driver[0] ? i->driver : "unknown", i->runtime_version / 1000,
             i->runtime_version % 1000 / 10);
}

void tb_gpu_provenance(const struct tb_cuda_info *i, char *buf, size_t len)
{
    char sm[32] = "?", mem[32] = "?";
    if (i->sm_clock_mhz > 0)
        snprintf(sm, sizeof sm, "%d", i->sm_clock_mhz);
    if (i->mem_clock_mhz > 0)
        snprintf(mem, sizeof mem, "%d", i->mem_clock_mhz);
    snprintf(buf, len,
             "device %d of %d visible; clocks: SM %s/%d MHz, memory %s/%d MHz (current/max); cc "
             "%d.%d; L2 %.0f MiB; bus %d bit; driver API %d.%d; nvml %s; plugin %s",
             i->device, i->device_count, sm, i->sm_clock_max_mhz, mem, i->mem_clock_max_mhz,
             i->cc_major, i->cc_minor, i->l2_mib, i->mem_bus_bits, i->driver_version / 1000,
             i->driver_version % 1000 / 10, i->nvml, i->build);
}

/* ---- the catalogue's chip ---- */

const struct tb_chip *tb_gpu_chip(const struct tb_pricing *p, const struct tb_cuda_info *i,
                                  const struct tb_instance **inst, char *why, size_t whylen)
{
    const struct tb_chip *best = NULL;
    const struct tb_instance *all;
    size_t n;

    *inst = NULL;
    for (size_t k = 0; k < p->nchips; k++) {
        const struct tb_chip *c = &p->chips[k];
        char word[64];
        size_t len = strcspn(c->name, " ");
        if (strcmp(c->vendor, "NVIDIA") || len == 0 || len >= sizeof word)
            continue;
        memcpy(word, c->name, len);
        word[len] = '\0';
        if (!strstr(i->name, word))
            continue;
        if (!best || fabs(c->hbm_gib - i->mem_gib) < fabs(best->hbm_gib - i->mem_gib))
            best = c;
    }
    if (!best) {
        snprintf(why, whylen, "no NVIDIA chip in pricing/chips.csv matches '%s'", i->name);
        return NULL;
    }
    n = tb_pricing_instances(p, &all);
    for (size_t k = 0; k < n; k++)
        if (!strcmp(all[k].chip, best->chip) && !strcmp(all[k].kind, "instance") &&
            (!*inst || all[k].accel_count < (*inst)->accel_count))
            *inst = &all[k];
    if (!*inst) {
        snprintf(why, whylen, "no instance in pricing/instances.csv has chip '%s'", best->chip);
        return NULL;
    }
    return best;
}

/* ---- the share of the machine ---- */

void tb_gpu_share(const struct tb_gpu *g, const struct tb_pricing *p, const char *target,
                  const struct tb_chip *chip, struct tb_gpu_share *s)
{
    const struct tb_instance *in = p ? tb_pricing_instance(p, target) : NULL;
    memset(s, 0, sizeof *s);
    s->used = 1;
    s->visible = g->info.device_count;
    s->inst = in;
    s->twin = in && chip && !strcmp(in->chip, chip->chip) ? in : NULL;
    snprintf(s->chips_used, sizeof s->chips_used, "%d", s->used);
    if (in)
        snprintf(s->text, sizeof s->text,
                 "%d of %ld GPUs of %s (%d visible)%s: its rows are charged %d/%ld of the "
                 "instance-hour",
                 s->used, in->accel_count, in->instance, s->visible,
                 s->visible > in->accel_count ? ", more than pricing/instances.csv lists" : "",
                 s->used, in->accel_count);
    else if (p)
        snprintf(s->text, sizeof s->text,
                 "%d GPU (%d visible) on %s, not an instance type in pricing/instances.csv: "
                 "the report charges the whole price given for it (with --instance TYPE, "
                 "that type's share)",
                 s->used, s->visible, target);
    else
        snprintf(s->text, sizeof s->text,
                 "%d GPU (%d visible) on %s (no pricing tables here: the report charges the "
                 "share from its own)",
                 s->used, s->visible, target);
}

/* ---- energy ---- */

void tb_gpu_energy_derive(unsigned long long mj0, unsigned long long mj1, double seconds,
                          double units, struct tb_energy *e)
{
    memset(e, 0, sizeof *e);
    e->joules = e->avg_power_w = e->j_per_unit = NAN;
    if (mj1 <= mj0) {
        snprintf(e->note, sizeof e->note,
                 "energy counter did not advance (%llu mJ before, %llu mJ after)", mj0, mj1);
        return;
    }
    if (!(seconds > 0) || !(units > 0)) {
        snprintf(e->note, sizeof e->note, "no timed work to divide the energy by");
        return;
    }
    e->joules = (double)(mj1 - mj0) / 1e3;
    e->avg_power_w = e->joules / seconds;
    e->j_per_unit = e->joules / units;
    e->ok = true;
    snprintf(e->note, sizeof e->note,
             "NVML total energy of the whole board over the timed repetitions: %.3f J in %.4f s%s",
             e->joules, seconds,
             seconds < 1.0 ? " (under 1 s: NVML refreshes the counter every few tens of ms, so "
                             "the figure is approximate)"
                           : "");
}

/* ---- weights ---- */

void tb_gpu_weights_of(const struct tb_llama *m, size_t *layer_off, int max_seq, float *rope_cos,
                       float *rope_sin, struct tb_cuda_llama_weights *w)
{
    const struct tb_arch *a = m->arch;
    memset(w, 0, sizeof *w);
    w->params = m->params;
    w->n_params = m->n_params;
    w->tok_emb = (size_t)(m->tok_emb - m->params);
    w->lm_head = (size_t)(m->lm_head - m->params);
    w->final_norm = (size_t)(m->final_norm - m->params);
    for (int l = 0; l < a->layers; l++) {
        const struct tb_llama_layer *y = &m->layers[l];
        size_t *o = layer_off + (size_t)l * TB_CUDA_W_PER_LAYER;
        o[TB_CUDA_W_ATTN_NORM] = (size_t)(y->attn_norm - m->params);
        o[TB_CUDA_W_WQ] = (size_t)(y->wq - m->params);
        o[TB_CUDA_W_WK] = (size_t)(y->wk - m->params);
        o[TB_CUDA_W_WV] = (size_t)(y->wv - m->params);
        o[TB_CUDA_W_WO] = (size_t)(y->wo - m->params);
        o[TB_CUDA_W_MLP_NORM] = (size_t)(y->mlp_norm - m->params);
        o[TB_CUDA_W_GATE] = (size_t)(y->w_gate - m->params);
        o[TB_CUDA_W_UP] = (size_t)(y->w_up - m->params);
        o[TB_CUDA_W_DOWN] = (size_t)(y->w_down - m->params);
    }
    w->layer = layer_off;
    /* the CPU engine's decay range: the norm weights sit at the end */
    w->decay_end = (size_t)(m->layers[0].attn_norm - m->params);
    tb_llama_rope_table(a, max_seq, rope_cos, rope_sin);
    w->rope_cos = rope_cos;
    w->rope_sin = rope_sin;
}

int tb_gpu_llama_new(const struct tb_gpu *g, const struct tb_llama *m, int max_batch, int max_seq,
                     unsigned flags, void **eng, char *err, size_t errlen)
{
    const struct tb_arch *a = m->arch;
    size_t half = (size_t)(a->head_dim / 2);
    struct tb_cuda_llama_weights w;
    size_t *layer_off = NULL;
    float *rope_cos = NULL, *rope_sin = NULL;
    char why[512] = "";
    int rc = -1;

    *eng = NULL;
    if (!g->api)
        return tb_err(err, errlen, "no GPU: %s", g->why);
    if (max_batch < 1 || max_seq < 1)
        return tb_err(err, errlen, "GPU engine for %d sequences of %d tokens: must be positive",
                      max_batch, max_seq);
    layer_off = tb_alloc_array((size_t)a->layers * TB_CUDA_W_PER_LAYER, sizeof *layer_off);
    rope_cos = tb_alloc_array((size_t)max_seq * half, sizeof *rope_cos);
    rope_sin = tb_alloc_array((size_t)max_seq * half, sizeof *rope_sin);
    if (!layer_off || !rope_cos || !rope_sin) {
        tb_err(err, errlen, "out of memory for the GPU engine's RoPE tables (%d positions)",
               max_seq);
        goto out;
    }
    tb_gpu_weights_of(m, layer_off, max_seq, rope_cos, rope_sin, &w);
    if (g->api->llama_init(eng, a, &w, max_batch, max_seq, flags, why, sizeof why) != 0) {
        *eng = NULL;
        tb_err(err, errlen, "cannot set up the GPU engine for %d sequences of %d tokens: %s",
               max_batch, max_seq, why);
        goto out;
    }
    rc = 0;
out:
    free(layer_off);
    free(rope_cos);
    free(rope_sin);
    return rc;
}
