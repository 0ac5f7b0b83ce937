/* harness/run/tb_run_serve.c: the plan of a serving run (phase serve, tb_run.h): its
 * server started when the run names one (endpoint=self: `trnbench serve` on this host;
 * server_cmd: the user's, split into argv, no shell) and stopped after, whatever
 * happens; each load level measured by the endpoint executor through tb_measure into
 * the recorder (tb_record_serve); and, where the target is an instance of the
 * catalogue, the performance model's prediction of each closed-loop level (serving at
 * a batch of that many requests), so the report draws the model's curve beside the
 * measured points. Levels already in results.csv are skipped (the resume key is the
 * level's run id). */
#include "tb_run.h"

#include "tb_executor.h"
#include "tb_loadgen.h"
#include "tb_log.h"
#include "tb_neuron.h"
#include "tb_recipe.h"
#include "tb_results.h"
#include "tb_safetensors.h"
#include "tb_scenario.h"
#include "tb_server_proc.h"
#include "tb_timer.h"
#include "tb_util.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The levels of spec in order: each concurrency (closed loop), then each rate. A level
 * is one repetition of the loop (its warm-up requests are the client's). */
static int levels_of(const struct tb_run_spec *spec, struct tb_run_spec *out)
{
    const struct tb_serve_opts *o = &spec->serve;
    int n = 0;
    for (int i = 0; i < o->nconcurrency + o->nrate; i++) {
        out[i] = *spec;
        out[i].reps = 1;
        out[i].warmup = 0;
    }
    for (int i = 0; i < o->nconcurrency; i++, n++) {
        out[n].serve.level_concurrency = o->concurrency[i];
        out[n].serve.level_rate = 0;
    }
    for (int i = 0; i < o->nrate; i++, n++) {
        out[n].serve.level_concurrency = o->max_concurrency;
        out[n].serve.level_rate = o->request_rate[i];
    }
    return n;
}

/* The argv of `trnbench serve` for spec on port: this same program. */
static int self_argv(const struct tb_run_spec *spec, int port, char **argv, char (*buf)[64],
                     char *exe, size_t exelen, char *err, size_t errlen)
{
    int n = 0;
    if (tb_self_exe(exe, exelen, err, errlen) != 0)
        return -1;
    argv[n++] = exe;
    argv[n++] = "serve";
    argv[n++] = "--model";
    argv[n++] = (char *)spec->model;
    argv[n++] = "--served-model-name";
    argv[n++] = (char *)spec->model;
    if (spec->layers) {
        snprintf(buf[0], 64, "%d", spec->layers);
        argv[n++] = "--layers";
        argv[n++] = buf[0];
    }
    snprintf(buf[1], 64, "%d", port);
    snprintf(buf[2], 64, "%d", spec->serve.max_num_seqs);
    snprintf(buf[3], 64, "%d", spec->seq_in + spec->seq_out);
    snprintf(buf[4], 64, "%llu", (unsigned long long)spec->seed);
    argv[n++] = "--host";
    argv[n++] = "127.0.0.1";
    argv[n++] = "--port";
    argv[n++] = buf[1];
    argv[n++] = "--max-num-seqs";
    argv[n++] = buf[2];
    argv[n++] = "--max-model-len";
    argv[n++] = buf[3];
    argv[n++] = "--seed";
    argv[n++] = buf[4];
    if (spec->serve.engine_cuda) {
        argv[n++] = "--engine";
        argv[n++] = "cuda";
    }
    argv[n] = NULL;
    return 0;
}

/* The server of a serving run, when it has one to start. */
struct served {
    struct tb_server_proc proc;
    bool started;
    char **argv_owned;           /* server_cmd's words (tb_argv_split) */
    struct tb_recipe_cmd recipe; /* a recipe's command (recipe=vllm) */
    bool is_recipe;
    struct tb_record_extra starts[3]; /* cold, warm, and a recipe's compile time */
    int nstarts;
};

/* Remove path and, for a folder, everything under it (a recipe's own compile cache:
 * links are removed, never followed); a missing path is fine. */
static int rm_tree(const char *path, char *err, size_t errlen)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0
                               : tb_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        if (!(d = opendir(path)))
            return tb_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        while ((e = readdir(d))) {
            char sub[PATH_MAX];
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            int rc = (size_t)snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= sizeof sub
                         ? tb_err(err, errlen, "'%s/%s': name too long", path, e->d_name)
                         : rm_tree(sub, err, errlen);
            if (rc != 0) {
                closedir(d);
                return -1;
            }
        }
        closedir(d);
    }
    if (remove(path) != 0)
        return tb_err(err, errlen, "cannot remove '%s': %s", path, strerror(errno));
    return 0;
}

/* "; chips used: what" into a start's notes before its "; command: ..." (the command,
 * last, is what a full buffer cuts). */
static void notes_before_command(char *notes, size_t len, const char *what)
{
    char tail[sizeof((struct tb_record_extra *)0)->notes];
    char *cmd = strstr(notes, "; command:");
    size_t at = cmd ? (size_t)(cmd - notes) : strlen(notes);
    snprintf(tail, sizeof tail, "%s", notes + at);
    snprintf(notes + at, len - at, "; chips used: %s%s", what, tail);
}

/* The chips a recipe's server of tensor-parallel degree tp uses on this machine: tp
 * GPUs, or on Neuron tp logical NeuronCores at the machine's LNC (lnc: as neuron-ls
 * states it, else guessed: 2 on Trainium2 and Trainium3, 1 elsewhere); 0 when the
 * machine has no accelerator (the rows are charged the whole instance). */
static int recipe_chips(const struct tb_platform *pl, const struct tb_neuron_lnc *lnc, int tp,
                        char *note, size_t len)
{
    if (pl->neuron_devices > 0 && pl->neuron_cores > 0) {
        int per = lnc->per_device;
        int chips = per > 0 ? (tp + per - 1) / per : 0;
        snprintf(note, len,
                 "tp=%d logical NeuronCores at LNC=%d (%s), %d a %s device: %d of %d devices", tp,
                 lnc->lnc, lnc->source, per, pl->neuron_name[0] ? pl->neuron_name : "Neuron", chips,
                 pl->neuron_devices);
        return chips > pl->neuron_devices ? pl->neuron_devices : chips;
    }
    if (pl->nvidia_gpus > 0) {
        snprintf(note, len, "tp=%d: %d of %d GPUs", tp, tp, pl->nvidia_gpus);
        return tp > pl->nvidia_gpus ? pl->nvidia_gpus : tp;
    }
    snprintf(note, len, "tp=%d on a machine without accelerators", tp);
    return 0;
}

/* The random weights of spec's recipe on Neuron (tb_safetensors.h): its seed, the
 * default shards. */
static struct tb_safetensors_opts weights_opts(const struct tb_run_spec *spec)
{
    return (struct tb_safetensors_opts){.seed = spec->seed};
}

/* The model folder of run i's recipe: out/recipe-<i+1>/model. */
static int recipe_dir(const char *out, size_t i, const char *sub, char *buf, size_t len, char *err,
                      size_t errlen)
{
    if ((size_t)snprintf(buf, len, "%s/recipe-%zu%s%s", out, i + 1, sub ? "/" : "",
                         sub ? sub : "") >= len)
        return tb_err(err, errlen, "--out: folder name too long");
    return 0;
}

int tb_plan_serve_space(const struct tb_plan *p, char *err, size_t errlen)
{
    uint64_t need = 0, free_bytes = 0;
    int runs = 0;
    char dir[PATH_MAX];

    if (p->plat.neuron_devices <= 0)
        return TB_OK; /* GPUs: --load-format dummy, nothing written */
    for (size_t i = 0; i < p->suite.nruns; i++) {
        const struct tb_run_spec *spec = &p->suite.runs[i];
        struct tb_safetensors_opts o = weights_opts(spec);
        struct tb_safetensors_info info;
        if (spec->phase != TB_PHASE_SERVE || !spec->serve.recipe[0] || spec->serve.model_path[0])
            continue;
        if (recipe_dir(p->out, i, "model", dir, sizeof dir, err, errlen) != 0)
            return TB_EINPUT;
        if (tb_safetensors_llama_present(&p->work[i].a, dir, &o))
            continue; /* written by an earlier run of this folder */
        if (tb_safetensors_llama_size(&p->work[i].a, &o, &info, err, errlen) != 0)
            return TB_EINPUT;
        need += info.need_bytes;
        runs++;
    }
    if (!runs)
        return TB_OK;
    if (tb_safetensors_free_bytes(p->out, &free_bytes, err, errlen) != 0)
        return TB_EINPUT;
    if (free_bytes < need)
        return tb_err(err, errlen,
                      "the vllm-neuron plugin loads weights from the model folder: the random "
                      "weights of %d recipe run%s need %llu bytes (%.2f GiB, with a margin of "
                      "5%% + 64 MiB), and '%s' has %llu bytes (%.2f GiB) free: free some space, "
                      "give --out on a larger disk, or serve a real checkpoint with "
                      "--model-path DIR",
                      runs, runs == 1 ? "" : "s", (unsigned long long)need,
                      (double)need / (1ULL << 30), p->out, (unsigned long long)free_bytes,
                      (double)free_bytes / (1ULL << 30)),
               TB_EINPUT;
    tb_logf("random weights for the vllm-neuron plugin: %.2f GiB to write (margin "
            "included), %.2f GiB free in '%s'\n",
            (double)need / (1ULL << 30), (double)free_bytes / (1ULL << 30), p->out);
    return TB_OK;
}

/* The command of spec's recipe into s->recipe, its model folder written (on Neuron with
 * random safetensors weights; --model-path: the user's checkpoint, nothing written)
 * and (cold start) its compile cache emptied under out/recipe-<i+1>/; on Neuron, plugin
 * says which vllm-neuron serves it (enum tb_recipe_plugin). */
static int recipe_command(struct served *s, const struct tb_run_spec *spec, const struct tb_arch *a,
                          const struct tb_platform *pl, int plugin, const char *plugin_version,
                          const char *out, size_t i, int port, char *err, size_t errlen)
{
    const struct tb_serve_opts *o = &spec->serve;
    const bool neuron = pl->neuron_devices > 0;
    struct tb_recipe_opts ro;
    struct tb_safetensors_info wi = {0};
    char dir[PATH_MAX], model[PATH_MAX + 8], cache[PATH_MAX + 16], artifacts[PATH_MAX + 32],
        weights[160];

    if (recipe_dir(out, i, NULL, dir, sizeof dir, err, errlen) != 0)
        return -1;
    snprintf(cache, sizeof cache, "%s/vllm-cache", dir);
    if (o->model_path[0]) { /* checked with the plan (tb_recipe_check_checkpoint) */
        char cwd[PATH_MAX];
        if (o->model_path[0] != '/' && !getcwd(cwd, sizeof cwd))
            return tb_err(err, errlen, "--model-path '%s': %s", o->model_path, strerror(errno));
        /* absolute: the server's working folder is not ours to assume */
        if ((size_t)snprintf(model, sizeof model, "%s%s%s", o->model_path[0] == '/' ? "" : cwd,
                             o->model_path[0] == '/' ? "" : "/", o->model_path) >= sizeof model)
            return tb_err(err, errlen, "--model-path '%s': name too long", o->model_path);
        snprintf(weights, sizeof weights, "the checkpoint's weights");
    } else {
        struct tb_safetensors_opts wo = weights_opts(spec);
        snprintf(model, sizeof model, "%s/model", dir);
        if (tb_mkdir_p(model, err, errlen) != 0 ||
            tb_recipe_write_model(a, model, err, errlen) != 0)
            return -1;
        if (neuron && tb_safetensors_write_llama(a, model, &wo, &wi, err, errlen) != 0)
            return -1;
        if (neuron)
            snprintf(weights, sizeof weights,
                     "random weights: %d tensors in %d safetensors "
                     "file%s, %.2f GiB%s",
                     wi.tensors, wi.shards, wi.shards == 1 ? "" : "s",
                     (double)wi.file_bytes / (1ULL << 30), wi.reused ? ", already there" : "");
        else
            snprintf(weights, sizeof weights, "random weights: --load-format dummy");
    }
    /* the NxDI-based plugin's compiled model: kept between the starts of the run, or
     * that plugin deletes and compiles it again on every load */
    snprintf(artifacts, sizeof artifacts, "%s/neuron-compiled-artifacts", dir);
    tb_run_spec_recipe_opts(spec, &ro);
    ro.neuron = neuron;
    ro.plugin = (enum tb_recipe_plugin)plugin;
    ro.plugin_version = plugin_version;
    if (ro.neuron && ro.plugin == TB_RECIPE_PLUGIN_NXDI)
        ro.artifacts_dir = artifacts;
    if (rm_tree(cache, err, errlen) != 0 || tb_mkdir_p(cache, err, errlen) != 0 ||
        (ro.artifacts_dir &&
         (rm_tree(artifacts, err, errlen) != 0 || tb_mkdir_p(artifacts, err, errlen) != 0)))
        return -1;
    if (!ro.neuron && (ro.nprefill || ro.ndecode))
        tb_logf("  no Neuron device: the buckets are not passed to vLLM\n");
    if (tb_recipe_vllm(&s->recipe, model, spec->model, cache, port, &ro, err, errlen) != 0)
        return -1;
    s->is_recipe = true;
    tb_logf("  recipe vllm: model folder '%s' (%s), compile cache '%s' (emptied: "
            "a cold start)\n",
            model, weights, cache);
    if (s->recipe.note[0])
        tb_logf("  recipe vllm: %s\n", s->recipe.note);
    return 0;
}

/* Start the server of spec (its command into argv) and wait for it, spec's starts
 * times (cold, then warm), recording each start's time. Returns 0, or -1 with a
 * message (the server is stopped then). */
static int start_server(struct served *s, const struct tb_run_spec *spec, const struct tb_arch *a,
                        const struct tb_platform *pl, int plugin, const char *plugin_version,
                        const char *out, size_t i, struct tb_endpoint *ep, char *err, size_t errlen)
{
    const struct tb_serve_opts *o = &spec->serve;
    char *self[24], exe[4096], buf[5][64], log[PATH_MAX], how[160];
    char *const *argv;
    const char *const *env = NULL;
    int argc;

    if (o->recipe[0]) {
        int port = tb_loopback_port(err, errlen);
        if (port < 0 ||
            recipe_command(s, spec, a, pl, plugin, plugin_version, out, i, port, err, errlen) != 0)
            return -1;
        snprintf(ep->base_url, sizeof ep->base_url, "http://127.0.0.1:%d/v1", port);
        argv = s->recipe.argv;
        env = (const char *const *)s->recipe.env;
    } else if (!strcmp(o->endpoint, "self")) {
        int port = tb_loopback_port(err, errlen);
        if (port < 0 || self_argv(spec, port, self, buf, exe, sizeof exe, err, errlen) != 0)
            return -1;
        snprintf(ep->base_url, sizeof ep->base_url, "http://127.0.0.1:%d/v1", port);
        argv = self;
    } else {
        if (tb_argv_split(o->server_cmd, &s->argv_owned, &argc, err, errlen) != 0)
            return -1;
        argv = s->argv_owned;
    }
    if ((size_t)snprintf(log, sizeof log, "%s/server-%zu.log", out, i + 1) >= sizeof log)
        return tb_err(err, errlen, "--out: folder name too long");
    for (int k = 0; k < o->server_starts; k++) {
        struct tb_record_extra *x = &s->starts[s->nstarts];
        tb_logf("  starting the server (%s start): %s ... (log '%s')\n", k ? "warm" : "cold",
                argv[0], log);
        if (tb_server_start_env(&s->proc, (const char *const *)argv, env, log, ep->base_url,
                                o->server_timeout_s, err, errlen) != 0)
            return -1;
        s->started = true;
        *x = (struct tb_record_extra){.metric = k ? "server_warm_start_s" : "server_start_s",
                                      .unit = "s",
                                      .value = s->proc.start_s,
                                      .n = 1};
        snprintf(x->notes, sizeof x->notes,
                 "launch of '%.100s' to its endpoint answering GET /models (%s); its output in "
                 "%.60s",
                 argv[0], k ? "warm start: the same server again" : "cold start",
                 strrchr(log, '/') + 1);
        if (s->is_recipe) { /* the recipe's settings, as the server got them */
            size_t nl = strlen(x->notes);
            if (s->recipe.note[0])
                nl += (size_t)snprintf(x->notes + nl, sizeof x->notes - nl, "; %.320s",
                                       s->recipe.note);
            nl += (size_t)snprintf(x->notes + nl, sizeof x->notes - nl, "; command:");
            for (int w = 0; argv[w] && nl < sizeof x->notes; w++)
                nl += (size_t)snprintf(x->notes + nl, sizeof x->notes - nl, " %s",
                                       w == 2 ? "MODEL_DIR" : argv[w]);
        }
        s->nstarts++;
        tb_logf("  server ready in %.2f s\n", s->proc.start_s);
        if (k + 1 < o->server_starts) {
            tb_server_stop(&s->proc, 0, how, sizeof how);
            s->started = false;
        }
    }
    if (s->is_recipe && s->nstarts == 2) {
        /* the same command and cache, cold then warm: what compiling cost the start */
        struct tb_record_extra *x = &s->starts[s->nstarts++];
        *x = (struct tb_record_extra){.metric = "server_compile_s",
                                      .unit = "s",
                                      .value = s->starts[0].value - s->starts[1].value,
                                      .n = 1};
        snprintf(x->notes, sizeof x->notes,
                 "server_start_s %.1f s (empty compile cache) - server_warm_start_s %.1f s "
                 "(the cache the first start filled)%s",
                 s->starts[0].value, s->starts[1].value,
                 x->value < 0 ? "; negative: the cold start was not slower (nothing compiled?)"
                              : "");
    }
    return 0;
}

static void stop_server(struct served *s)
{
    char how[160];
    if (s->started) {
        tb_server_stop(&s->proc, 0, how, sizeof how);
        tb_logf("  server stopped: %s\n", how);
    }
    s->started = false;
    tb_argv_free(s->argv_owned);
    s->argv_owned = NULL;
}

tb_neuron_monitor_t tb_plan_monitor_start(const struct tb_plan *p)
{
    struct tb_neuron_monitor_opts o = {.period_s = 1, .root = p->plat.root};
    tb_neuron_monitor_t m = NULL;
    char err[512];
    if (tb_neuron_monitor_start(&m, &o, err, sizeof err) != 0) {
        tb_logf("  no Neuron device figures: %s\n", err);
        return NULL;
    }
    return m;
}

int tb_plan_monitor_stop(tb_neuron_monitor_t m, struct tb_record_extra *x, int cap)
{
    struct tb_neuron_monitor_summary s;
    char err[512], line[700];
    int n = 0;
    if (!m)
        return 0;
    if (tb_neuron_monitor_stop(m, &s, err, sizeof err) != 0) {
        tb_logf("  no Neuron device figures: %s\n", err);
        return 0;
    }
    tb_neuron_monitor_describe(&s, line, sizeof line);
    tb_logf("  neuron-monitor: %s\n", line);
    if (!x)
        return 0;
    if (s.nc_util_n > 0 && n < cap) {
        x[n] = (struct tb_record_extra){.metric = "neuroncore_utilization_pct",
                                        .unit = "%",
                                        .value = s.nc_util_mean_pct,
                                        .n = s.runtime_samples};
        snprintf(x[n++].notes, sizeof x->notes,
                 "neuron-monitor's neuroncore_utilization, mean over %d reports and the %d "
                 "NeuronCores in use; max %.1f%%",
                 s.runtime_samples, s.cores, s.nc_util_max_pct);
    }
    if (s.device_mem_seen && n < cap) {
        x[n] = (struct tb_record_extra){.metric = "neuron_device_memory_gib",
                                        .unit = "GiB",
                                        .value = (double)s.device_mem_max_bytes / (1 << 30),
                                        .n = s.samples};
        snprintf(x[n++].notes, sizeof x->notes,
                 "neuron-monitor's memory_used: the most device memory the Neuron applications "
                 "held at once");
    }
    if (s.power_devices > 0 && n < cap) {
        x[n] = (struct tb_record_extra){.metric = "neuron_power_utilization_pct",
                                        .unit = "%",
                                        .value = s.power_util_mean_pct,
                                        .n = s.power_devices};
        snprintf(x[n++].notes, sizeof x->notes,
                 "the driver's per-minute device power as a percentage of its maximum (sysfs "
                 "stats/power/utilization), mean over %d devices, max %.1f%%; not watts: %s",
                 s.power_devices, s.power_util_max_pct, s.power);
    }
    return n;
}

/* The performance model's prediction of a closed-loop level on the target, when the
 * target is a catalogue instance. Returns 1 when recorded, 0 when not (already there,
 * nothing to model, or the model could not: said), -1 on a write error. */
static int level_twin(struct tb_plan *p, const struct tb_run_spec *lv, const struct tb_arch *a,
                      const char *target, char *err, size_t errlen)
{
    const struct tb_instance *inst;
    struct tb_scenario sc;
    char batch[24], seq_in[24], seq_out[24], id[320];
    int has;

    if (!lv->serve.level_concurrency || lv->serve.level_rate > 0 || lv->layers)
        return 0; /* the model predicts a batch of requests of a catalogue model */
    if (!p->have_model) {
        char e[512];
        if (tb_plan_load_model(p, e, sizeof e) != 0) {
            tb_logf("  not modeled: %s\n", e);
            return 0;
        }
    }
    inst = tb_pricing_instance(&p->pricing, target);
    if (!inst)
        return 0; /* "host", or an instance the catalogue lacks: nothing to model */
    memset(&sc, 0, sizeof sc);
    sc.arch = a;
    sc.inst = inst;
    sc.phase = TB_PHASE_SERVE;
    sc.precision = lv->precision;
    sc.chips = lv->serve.chips;
    sc.batch = lv->serve.level_concurrency;
    sc.seq_in = lv->seq_in;
    sc.seq_out = lv->seq_out;
    snprintf(batch, sizeof batch, "%d", lv->serve.level_concurrency);
    snprintf(seq_in, sizeof seq_in, "%d", lv->seq_in);
    snprintf(seq_out, sizeof seq_out, "%d", lv->seq_out);
    tb_model_run_id(id, sizeof id - 16, inst->instance, lv->model, "serve", batch, seq_in, seq_out,
                    NULL, NULL, lv->precision, NULL);
    if (lv->serve.chips) /* as the measured rows' workload (tb_serve_workload) */
        snprintf(id + strlen(id), 16, "/chips%d", lv->serve.chips);
    has = tb_plan_has_run(p, id, err, errlen);
    if (has != 0)
        return has < 0 ? -1 : 0;
    tb_logf("  modeled on %s: %s\n", inst->instance, id);
    return tb_plan_run_model(p, &sc, "output_tokens_per_s", id, err, errlen);
}

int tb_plan_serve_levels(const struct tb_run_spec *spec)
{
    return spec->serve.nconcurrency + spec->serve.nrate;
}

int tb_plan_serve(struct tb_plan *p, size_t i, struct tb_run_counts *n)
{
    const struct tb_run_spec *spec = &p->suite.runs[i];
    const struct tb_arch *a = &p->work[i].a;
    const bool self = !strcmp(spec->serve.endpoint, "self");
    const bool recipe = spec->serve.recipe[0] != '\0';
    /* a server on this machine's Neuron devices (no other instance named) */
    const bool neuron = p->plat.neuron_devices > 0 && !spec->serve.target[0] && !self;
    struct tb_run_spec lv[2 * TB_SERVE_MAX_LEVELS];
    bool done[2 * TB_SERVE_MAX_LEVELS] = {false}; /* already in the results */
    struct tb_endpoint ep;
    struct tb_record_ctx ctx = p->ctx;
    struct served srv;
    char ids[2 * TB_SERVE_MAX_LEVELS][320], err[2048], models[512] = "", version[128] = "";
    char where[160], chips[24], tag[48];
    int nl = levels_of(spec, lv), pending = 0, rc = 0, starts;

    memset(&srv, 0, sizeof srv);
    memset(&ep, 0, sizeof ep);
    /* each level is a measurement of its own: the levels already there take their
     * "[k/N]" first, the others theirs as they start */
    for (int k = 0; k < nl; k++) {
        int has;
        size_t off = (size_t)snprintf(ids[k], sizeof ids[k], "%s", tb_executor_endpoint.id_prefix);
        tb_run_spec_id(&lv[k], ids[k] + off, sizeof ids[k] - off);
        has = tb_plan_has_run(p, ids[k], err, sizeof err);
        if (has < 0) {
            tb_logf("%s\n", err);
            return -1;
        }
        if (has) {
            tb_plan_next(p, 1, tag, sizeof tag);
            tb_logf("[%s] %s: already in results, skipped\n", tag, ids[k]);
            n->skipped++;
        }
        done[k] = has;
        pending += !has;
    }
    if (!pending)
        return 0;

    /* the server: started here, or already running at the URL */
    if (!self && !recipe)
        snprintf(ep.base_url, sizeof ep.base_url, "%s", spec->serve.endpoint);
    if ((self || spec->serve.server_cmd[0] || recipe) &&
        start_server(&srv, spec, a, &p->plat, p->recipe_plugin, p->vllm_neuron, p->out, i, &ep, err,
                     sizeof err) != 0) {
        tb_plan_next(p, pending, tag, sizeof tag); /* the sweep's levels */
        tb_logf("[%s] %s: server not started: %s\n", tag, ids[0], err);
        stop_server(&srv);
        n->failed += pending;
        return 0;
    }
    if (tb_endpoint_probe(ep.base_url, models, sizeof models, version, sizeof version, err,
                          sizeof err) != 0) {
        tb_plan_next(p, pending, tag, sizeof tag); /* the sweep's levels */
        tb_logf("[%s] %s: %s\n", tag, ids[0], err);
        stop_server(&srv);
        n->failed += pending;
        return 0;
    }
    if (recipe && strstr(version, "trnbench")) {
        /* a 'vllm' on PATH that is trnbench serve: the tests' stand-in, never a
         * measurement of vLLM */
        const char *t = getenv("TRNBENCH_TEST");
        if (!t || strcmp(t, "1") != 0) {
            tb_plan_next(p, pending, tag, sizeof tag); /* the sweep's levels */
            tb_logf("[%s] %s: the server recipe vllm started answers as '%s': a "
                    "stand-in for tests (TRNBENCH_TEST=1), refused here\n",
                    tag, ids[0], version);
            stop_server(&srv);
            n->failed += pending;
            return 0;
        }
    }
    snprintf(ep.served_model, sizeof ep.served_model, "%s",
             spec->serve.served_model[0] ? spec->serve.served_model
             : self || recipe || !models[0] || strchr(models, ',')
                 ? spec->model
                 : models); /* the one model the server serves */
    tb_logf("  endpoint %s serves '%s'%s%s; measuring '%s'\n", ep.base_url,
            models[0] ? models : "(no model list)", version[0] ? ", version " : "", version,
            ep.served_model);

    /* the rows' facts: the server is what ran them, on its instance */
    ctx.executor = "endpoint";
    ctx.engine = !self                     ? NULL /* the server's own */
                 : spec->serve.engine_cuda ? "trnbench-cuda"
                                           : "host-cpu";
    if (spec->serve.target[0])
        snprintf(ctx.target, sizeof ctx.target, "%s", spec->serve.target);
    tb_serve_where(&spec->serve, where, sizeof where);
    if (self && spec->serve.engine_cuda) /* our GPU engine on the first GPU: one chip */
        snprintf(ctx.device, sizeof ctx.device, "trnbench serve (CUDA engine, bf16) on %.200s%s%s",
                 p->gpu.on ? p->gpu.gpu.info.name : "the first GPU", version[0] ? " " : "",
                 version);
    else if (self) /* our CPU engine: the host's rows, like the cpu executor's */
        snprintf(ctx.device, sizeof ctx.device, "trnbench serve (CPU engine, fp32) on %.200s%s%s",
                 p->ctx.device, version[0] ? " " : "", version);
    else if (recipe)
        snprintf(ctx.device, sizeof ctx.device, "%.200s%s%.100s", srv.recipe.label,
                 version[0] ? " " : "", version);
    else
        snprintf(ctx.device, sizeof ctx.device, "%s%s%s",
                 spec->serve.server_label[0] ? spec->serve.server_label : where,
                 version[0] ? " " : "", version);
    if (!self || spec->serve.engine_cuda) /* a server that may use any accelerator */
        ctx.accel_unused[0] = '\0';
    snprintf(ctx.blas, sizeof ctx.blas, "load client: %s", curl_version());
    if (spec->serve.chips) {
        snprintf(chips, sizeof chips, "%d", spec->serve.chips);
        ctx.chips_used = chips;
    } else if (self && spec->serve.engine_cuda) {
        ctx.chips_used = "1"; /* trnbench serve --engine cuda runs on one GPU */
    } else if (recipe) {
        char note[240];
        int c =
            recipe_chips(&p->plat, &p->lnc, spec->serve.tp ? spec->serve.tp : 1, note, sizeof note);
        tb_logf("  chips used: %s\n", note);
        for (int k = 0; k < srv.nstarts; k++) /* the LNC it counted in, and its source */
            notes_before_command(srv.starts[k].notes, sizeof srv.starts[k].notes, note);
        if (c > 0) {
            snprintf(chips, sizeof chips, "%d", c);
            ctx.chips_used = chips;
        }
    }
    ctx.source = "trnbench load client";

    if (neuron) { /* the SDK goes into every row of a server on this machine's devices */
        size_t hl = strlen(ctx.host);
        snprintf(ctx.host + hl, sizeof ctx.host - hl, "; %s",
                 p->neuron_sdk[0] ? p->neuron_sdk : "Neuron SDK: no package found");
    }
    starts = srv.nstarts; /* the server's start times go with the first level's rows */
    for (int k = 0; k < nl; k++) {
        const struct tb_executor ex = {&tb_executor_endpoint, &ep};
        struct tb_workload w = {.spec = &lv[k], .arch = a};
        struct tb_exec_result r;
        struct tb_record_extra extra[6];
        tb_neuron_monitor_t mon = NULL;
        char summary[1024];
        uint64_t t0;
        int twin = 0, nextra = 0;
        if (done[k])
            continue;
        tb_plan_next(p, 1, tag, sizeof tag);
        tb_logf("[%s] %s ...\n", tag, ids[k]);
        w.progress = tb_plan_progress(p, tag, ids[k]);
        if (neuron)
            mon = tb_plan_monitor_start(p);
        t0 = tb_timer_now_ns();
        if (tb_measure(&ex, &w, &r, err, sizeof err) != 0 || !r.valid) {
            tb_logf("%s: %s; nothing recorded\n", ids[k], r.valid ? err : r.note);
            tb_plan_monitor_stop(mon, NULL, 0);
            tb_exec_result_release(&r);
            n->failed++;
            continue;
        }
        for (int e = 0; e < starts; e++)
            extra[nextra++] = srv.starts[e];
        if (neuron)
            nextra += tb_plan_monitor_stop(mon, extra + nextra, 3);
        if (tb_record_serve(&ctx, &lv[k], a, &r, ids[k], extra, nextra, summary, sizeof summary,
                            err, sizeof err) != 0 ||
            (twin = level_twin(p, &lv[k], a, ctx.target, err, sizeof err)) < 0) {
            tb_logf("%s\n", err);
            tb_exec_result_release(&r);
            rc = -1;
            break;
        }
        starts = 0;
        n->twins += twin;
        tb_logf("  %s\n", summary);
        tb_logf("  %.1f s wall\n", tb_timer_seconds(t0, tb_timer_now_ns()));
        if (r.load->failed)
            n->failed++; /* recorded, with the reasons, but the run did not go cleanly */
        else
            n->measured++;
        tb_exec_result_release(&r);
    }
    stop_server(&srv);
    return rc;
}
