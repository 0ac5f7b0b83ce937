/* harness/tb_gpu.c: see tb_gpu.h. */
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
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;
    if (n <= 0)
        return false;
    exe[n] = '\0';
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
        snprintf(g->why, sizeof g->why, "CUDA executor not built (nvcc not found at build time)");
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
                          double units, struct tb_gpu_energy *e)
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

/* ---- the executor ---- */

/* Queue one repetition of spec's phase. */
static int one_rep(const struct tb_cuda_api *api, void *eng, const struct tb_run_spec *spec,
                   const int *tokens, const int *targets, const int *first,
                   const struct tb_cuda_adamw *opt, char *err, size_t errlen)
{
    const int B = spec->batch, T = spec->seq_in;
    switch (spec->phase) {
    case TB_PHASE_PREFILL:
        return api->llama_prefill(eng, tokens, B, T, err, errlen);
    case TB_PHASE_DECODE:
        /* every repetition restarts at position T from the prompt's greedy tokens;
         * later steps take the greedy tokens the device picked */
        for (int s = 0; s < spec->seq_out; s++)
            if (api->llama_decode(eng, s == 0 ? first : NULL, B, T + s, err, errlen) != 0)
                return -1;
        return 0;
    case TB_PHASE_TRAIN:
        return api->llama_train_step(eng, tokens, targets, B, T, opt, err, errlen);
    case TB_PHASE_DENOISE:
    case TB_PHASE_SERVE:
        break;
    }
    return tb_err(err, errlen, "phase %s is not implemented on the GPU",
                  tb_phase_to_string(spec->phase));
}

/* Validate the repetition that just ran, outside the timed region. */
static int validate_rep(const struct tb_cuda_api *api, void *eng, const struct tb_run_spec *spec,
                        int k, struct tb_exec_result *r, char *err, size_t errlen)
{
    if (spec->phase == TB_PHASE_TRAIN) {
        float loss;
        if (api->llama_loss(eng, &loss, err, errlen) != 0)
            return -1;
        if (!isfinite(loss))
            tb_exec_invalid(r, "training loss not finite");
        if (k == -spec->warmup)
            r->loss_first = loss;
        r->loss_last = loss;
    } else {
        bool finite;
        if (api->llama_finite(eng, &finite, err, errlen) != 0)
            return -1;
        if (!finite)
            tb_exec_invalid(r, "logits not finite");
    }
    return 0;
}

bool tb_gpu_can_run(const struct tb_gpu *g, const struct tb_run_spec *spec, char *why,
                    size_t whylen)
{
    const struct tb_cuda_info *i = &g->info;
    if (strcmp(spec->precision, "fp8"))
        return true;
    if (spec->phase != TB_PHASE_PREFILL && spec->phase != TB_PHASE_DECODE) {
        snprintf(why, whylen, "precision fp8 is for inference (prefill, decode), not %s",
                 tb_phase_to_string(spec->phase));
        return false;
    }
    if (g->api && i->cc_major * 10 + i->cc_minor < 89) {
        snprintf(why, whylen,
                 "fp8 products need compute capability 8.9 or later (this device: %d.%d)",
                 i->cc_major, i->cc_minor);
        return false;
    }
    return true;
}

int tb_gpu_run(struct tb_gpu *g, const struct tb_run_spec *spec, const struct tb_arch *arch,
               struct tb_exec_result *r, struct tb_gpu_energy *e, char *err, size_t errlen)
{
    const struct tb_cuda_api *api = g->api;
    const int B = spec->batch, T = spec->seq_in, V = arch->vocab;
    const int max_seq = T + (spec->phase == TB_PHASE_DECODE ? spec->seq_out : 0);
    const bool train = spec->phase == TB_PHASE_TRAIN;
    const bool fp8 = !strcmp(spec->precision, "fp8");
    struct tb_adamw cpu_opt = tb_adamw_default();
    struct tb_cuda_adamw opt = {cpu_opt.lr, cpu_opt.beta1, cpu_opt.beta2, cpu_opt.eps,
                                cpu_opt.weight_decay};
    struct tb_cuda_llama_weights w;
    struct tb_llama cpu;
    size_t *layer_off = NULL;
    float *rope_cos = NULL, *rope_sin = NULL, *logits = NULL;
    int *tokens = NULL, *targets = NULL, *first = NULL;
    unsigned long long mj0 = 0, mj1 = 0;
    bool have_cpu = false, energy = false;
    uint64_t t0 = 0, t1 = 0;
    void *eng = NULL;
    char eerr[256] = "";
    int rc = -1;

    memset(r, 0, sizeof *r);
    tb_gpu_energy_derive(0, 0, 0, 0, e);
    if (!api)
        return tb_err(err, errlen, "no GPU: %s", g->why);
    if (spec->phase == TB_PHASE_DENOISE)
        return tb_err(err, errlen,
                      "phase denoise runs on the diffusion engine (tb_gpu_run_denoise)");
    if (!tb_gpu_can_run(g, spec, err, errlen))
        return -1;
    /* decode reads each step's weights once: fp8 holds the layers' in 1 byte, the LM
     * head stays bf16 (2 bytes); the KV cache is bf16 either way */
    if (tb_exec_result_init(r, spec, arch, fp8 ? 1 : 2, 2, err, errlen) != 0)
        return -1;
    if (fp8)
        r->bytes += r->steps * (double)arch->vocab * arch->hidden;
    if (tb_exec_inputs(spec, V, &tokens, &targets, err, errlen) != 0)
        goto out;

    /* the CPU engine draws the weights (the same seed gives the same weights on both
     * executors); it is freed once the plugin has copied them */
    if (tb_llama_init(&cpu, arch, 1, 1, 0, spec->seed, err, errlen) != 0)
        goto out;
    have_cpu = true;
    layer_off = tb_alloc_array((size_t)arch->layers * TB_CUDA_W_PER_LAYER, sizeof *layer_off);
    rope_cos = tb_alloc_array((size_t)max_seq * (size_t)(arch->head_dim / 2), sizeof *rope_cos);
    rope_sin = tb_alloc_array((size_t)max_seq * (size_t)(arch->head_dim / 2), sizeof *rope_sin);
    first = tb_alloc_array((size_t)B, sizeof *first);
    logits = tb_alloc_array((size_t)B * (size_t)V, sizeof *logits);
    if (!layer_off || !rope_cos || !rope_sin || !first || !logits) {
        tb_err(err, errlen, "out of memory for the GPU engine's inputs");
        goto out;
    }
    tb_gpu_weights_of(&cpu, layer_off, max_seq, rope_cos, rope_sin, &w);
    if (api->llama_init(&eng, arch, &w, B, max_seq,
                        train ? TB_CUDA_LLAMA_TRAIN
                        : fp8 ? TB_CUDA_LLAMA_FP8
                              : 0,
                        err, errlen) != 0)
        goto out;
    tb_llama_release(&cpu);
    have_cpu = false;
    r->engine_bytes = api->llama_bytes(eng);

    if (spec->phase == TB_PHASE_DECODE) {
        /* the prompt, once and untimed; its greedy tokens start every repetition */
        bool finite;
        if (api->llama_prefill(eng, tokens, B, T, err, errlen) != 0 ||
            api->llama_finite(eng, &finite, err, errlen) != 0 ||
            api->llama_logits(eng, logits, (size_t)B * V, err, errlen) != 0)
            goto out;
        if (!finite)
            tb_exec_invalid(r, "prefill logits not finite");
        tb_exec_argmax(logits, B, V, first);
    }

    for (int k = -spec->warmup; k < spec->reps; k++) { /* k < 0: warm-up */
        if (k == 0) {
            energy = api->energy_mj(&mj0, eerr, sizeof eerr) == 0;
            t0 = tb_timer_now_ns();
        }
        if (api->timer_start(err, errlen) != 0 ||
            one_rep(api, eng, spec, tokens, targets, first, &opt, err, errlen) != 0)
            goto out;
        if (k >= 0) {
            if (api->timer_stop(&r->secs[k], err, errlen) != 0)
                goto out;
        } else {
            double ignored;
            if (api->timer_stop(&ignored, err, errlen) != 0)
                goto out;
        }
        /* read the counter before validation copies anything back */
        if (k == spec->reps - 1 && energy) {
            t1 = tb_timer_now_ns();
            energy = api->energy_mj(&mj1, eerr, sizeof eerr) == 0;
        }
        if (validate_rep(api, eng, spec, k, r, err, errlen) != 0)
            goto out;
    }
    if (train)
        tb_exec_check_first_loss(r, V);
    if (energy)
        tb_gpu_energy_derive(mj0, mj1, tb_timer_seconds(t0, t1), r->tokens * spec->reps, e);
    else
        snprintf(e->note, sizeof e->note, "energy unavailable: %.220s",
                 eerr[0] ? eerr : g->info.nvml);
    tb_gpu_provenance(&g->info, r->counters, sizeof r->counters);
    rc = 0;
out:
    if (eng)
        api->llama_free(eng);
    if (have_cpu)
        tb_llama_release(&cpu);
    free(layer_off);
    free(rope_cos);
    free(rope_sin);
    free(first);
    free(logits);
    free(tokens);
    free(targets);
    return rc;
}

/* ---- denoise ---- */

int tb_gpu_run_denoise(struct tb_gpu *g, const struct tb_run_spec *spec, const struct tb_darch *a,
                       struct tb_exec_result *r, struct tb_gpu_energy *e, char *err, size_t errlen)
{
    const struct tb_cuda_api *api = g->api;
    const int res = spec->resolution ? spec->resolution : a->resolution;
    const int steps = spec->steps ? spec->steps : a->default_steps;
    const int B = spec->batch, lat = res / a->vae_scale, cfg = a->cfg ? 2 : 1;
    const size_t img = (size_t)a->latent_channels * lat * lat;
    const size_t nctx = (size_t)a->text_tokens * a->context_dim;
    const size_t npool = (size_t)(a->pooled_dim > 0 ? a->pooled_dim : 1);
    const float guidance = 5.0f; /* a typical scale; the work does not depend on it */
    struct tb_diffusion cpu;
    struct tb_dlayout lay;
    struct tb_cuda_diffusion_weights w;
    float *latents = NULL, *ctx = NULL, *pooled = NULL, *ts = NULL, *c_in = NULL, *dt = NULL;
    unsigned long long mj0 = 0, mj1 = 0;
    bool have_cpu = false, energy = false;
    uint64_t t0 = 0, t1 = 0, tick = tb_timer_tick_ns();
    void *eng = NULL;
    char eerr[256] = "";
    int rc = -1;

    memset(r, 0, sizeof *r);
    memset(&lay, 0, sizeof lay);
    tb_gpu_energy_derive(0, 0, 0, 0, e);
    if (!api)
        return tb_err(err, errlen, "no GPU: %s", g->why);
    if (!tb_gpu_can_run(g, spec, err, errlen))
        return -1;
    if (B < 1 || steps < 1 || lat < 1)
        return tb_err(err, errlen, "%s: batch %d, %d steps at %d px: nothing to run", a->name, B,
                      steps, res);
    /* the CPU executor's result (tb_exec_run_denoise): one repetition is one batch of
     * images generated with all the steps */
    r->reps = spec->reps;
    r->valid = true;
    r->steps = steps;
    r->tokens = B;
    r->flops = tb_dpasses(a, steps) * tb_dflops_denoiser(a, B, res);
    r->loss_first = r->loss_last = NAN;
    r->secs = tb_alloc_array((size_t)spec->reps, sizeof *r->secs);
    latents = tb_alloc_array((size_t)B * img, sizeof *latents);
    ctx = tb_alloc_array((size_t)cfg * B * nctx, sizeof *ctx);
    pooled = tb_alloc_array((size_t)cfg * B * npool, sizeof *pooled);
    ts = tb_alloc_array((size_t)steps, sizeof *ts);
    c_in = tb_alloc_array((size_t)steps, sizeof *c_in);
    dt = tb_alloc_array((size_t)steps, sizeof *dt);
    if (!r->secs || !latents || !ctx || !pooled || !ts || !c_in || !dt) {
        tb_err(err, errlen, "out of memory for %d images", B);
        goto out;
    }
    for (int s = 0; s < steps; s++)
        tb_diffusion_schedule(a, s, steps, &ts[s], &c_in[s], &dt[s]);

    /* the CPU engine draws the weights (the same seed gives the same weights on both
     * executors, whatever the batch); it is freed once the plugin has copied them */
    if (tb_diffusion_init(&cpu, a, 1, lat, lat, spec->seed, err, errlen) != 0)
        goto out;
    have_cpu = true;
    if (tb_diffusion_layout(&cpu, &lay, err, errlen) != 0)
        goto out;
    w.params = cpu.params;
    w.n_params = cpu.n_params;
    w.layout = &lay;
    if (api->diffusion_init(&eng, a, &w, cfg * B, lat, lat, err, errlen) != 0)
        goto out;
    tb_diffusion_release(&cpu);
    have_cpu = false;
    r->engine_bytes = api->diffusion_bytes(eng);

    for (int k = -spec->warmup; k < spec->reps; k++) { /* k < 0: warm-up */
        bool finite;
        double secs;
        /* the inputs of this generation (x_T and the stand-ins for the text encoders'
         * outputs, drawn as the CPU executor draws them) before the timed region: the
         * encoders are not run on either executor */
        tb_diffusion_sample_inputs(a, B, lat, lat, spec->seed + (uint64_t)(k + spec->warmup),
                                   latents, ctx, pooled);
        if (k == 0) {
            energy = api->energy_mj(&mj0, eerr, sizeof eerr) == 0;
            t0 = tb_timer_now_ns();
        }
        if (api->timer_start(err, errlen) != 0 ||
            api->diffusion_sample(eng, latents, ctx, pooled, B, steps, ts, c_in, dt, guidance, err,
                                  errlen) != 0 ||
            api->timer_stop(&secs, err, errlen) != 0)
            goto out;
        if (k == spec->reps - 1 && energy) {
            t1 = tb_timer_now_ns();
            energy = api->energy_mj(&mj1, eerr, sizeof eerr) == 0;
        }
        if (k >= 0) {
            r->secs[k] = secs;
            if (!r->note[0])
                tb_timer_check((uint64_t)(secs * 1e9), tick, r->note, sizeof r->note);
        }
        /* validation outside the timed region, as on the CPU: finite latents */
        if (api->diffusion_latents(eng, latents, (size_t)B * img, &finite, err, errlen) != 0)
            goto out;
        if (!finite) {
            tb_exec_invalid(r, "latents not finite");
            break;
        }
    }
    if (energy && r->valid)
        tb_gpu_energy_derive(mj0, mj1, tb_timer_seconds(t0, t1), (double)B * spec->reps, e);
    else
        snprintf(e->note, sizeof e->note, "energy unavailable: %.220s",
                 eerr[0]  ? eerr
                 : energy ? "the run did not validate"
                          : g->info.nvml);
    tb_gpu_provenance(&g->info, r->counters, sizeof r->counters);
    rc = 0;
out:
    if (eng)
        api->diffusion_free(eng);
    if (have_cpu)
        tb_diffusion_release(&cpu);
    tb_dlayout_release(&lay);
    free(latents);
    free(ctx);
    free(pooled);
    free(ts);
    free(c_in);
    free(dt);
    return rc;
}
