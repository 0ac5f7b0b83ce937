/* harness/run/tb_suite.c: see tb_suite.h. */
#include "tb_suite.h"

#include "tb_arch.h"
#include "tb_darch.h"
#include "tb_recipe.h"
#include "tb_model.h"
#include "tb_range.h"
#include "tb_scenario.h"
#include "tb_server_proc.h"
#include "tb_util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_run_spec_init(struct tb_run_spec *r)
{
    memset(r, 0, sizeof *r);
    r->phase = (enum tb_phase) - 1;
    r->batch = 1;
    r->seq_out = 32;
    r->reps = 5;
    r->warmup = 1;
    r->seed = 1;
    snprintf(r->precision, sizeof r->precision, "fp32");
    r->serve.warmup_requests = -1;
    r->serve.request_timeout_s = 120;
    r->serve.server_timeout_s = 1800;
    r->serve.server_starts = 1;
    r->serve.max_num_seqs = 16;
    r->torch.nproc_per_node = 1;
    r->torch.nnodes = 1;
    snprintf(r->torch.device, sizeof r->torch.device, TB_TORCH_DEVICE_AUTO);
    snprintf(r->torch.python, sizeof r->torch.python, "python3");
    r->torch.timeout_s = 3600;
}

/* The numbers of a suite's run and serve lines: their ranges as data (README.md, "Input
 * ranges"; a list's range is each entry's). A suite's predict lines take the scenario
 * tables' (TB_SCENARIO_RANGES). */
const struct tb_range TB_SUITE_RUN_RANGES[] = {
    {"layers", 1, 100000, true, "layers kept"},
    {"batch", 1, 65536, true, "sequences"},
    {"seq_in", 1, 16777216, true, "tokens (also `seq`)"},
    {"seq_out", 1, 16777216, true, "tokens"},
    {"steps", 1, 10000, true, "denoising steps"},
    {"resolution", 8, 16384, true, "pixels"},
    {"reps", 1, 100000, true, "timed repetitions"},
    {"warmup", 0, 100000, true, "untimed repetitions"},
    {"concurrency", 1, 65536, true, "requests in flight (a list)"},
    {"request_rate", 1e-3, 1e6, false, "requests/s (a list; `inf` too)"},
    {"max_concurrency", 1, 65536, true, "requests in flight"},
    {"requests", 1, 10000000, true, "requests per level"},
    {"duration", 1e-3, 86400, false, "s per level"},
    {"warmup_requests", 0, 1000000, true, "requests"},
    {"request_timeout", 1e-3, 86400, false, "s"},
    {"ttft_ms", 1e-3, 1e9, false, "ms (a limit)"},
    {"tpot_ms", 1e-3, 1e9, false, "ms (a limit)"},
    {"chips", 1, 65536, true, "accelerator chips"},
    {"server_timeout", 1e-3, 86400, false, "s"},
    {"client_threads", 1, 1024, true, "threads"},
    {"max_num_seqs", 1, 4096, true, "sequences"},
    {"tp", 1, 1024, true, "devices"},
    {"max_model_len", 2, 16777216, true, "tokens"},
    {"max_num_batched_tokens", 1, 16777216, true, "tokens"},
    {"prefill_buckets", 1, 16777216, true, "tokens (a rising list of at most 16)"},
    {"decode_buckets", 1, 4096, true, "sequences (a rising list of at most 16)"},
    {"nproc_per_node", 1, 4096, true, "processes"},
    {"train_timeout", 1e-3, 604800, false, "s"},
    {NULL, 0, 0, false, NULL},
};

/* v as key's number of TB_SUITE_RUN_RANGES (key must be there; "seq" is seq_in's). */
static int range_field(const char *where, const char *key, const char *v, double *out, char *err,
                       size_t errlen)
{
    const struct tb_range *r =
        tb_range_find(TB_SUITE_RUN_RANGES, !strcmp(key, "seq") ? "seq_in" : key);
    char why[256];
    if (!r) /* a key of the code without its range: a programmer's error, said */
        return tb_err(err, errlen, "%s: field '%s': no range recorded", where, key);
    if (tb_range_parse(r, v, out, why, sizeof why) != 0)
        return tb_err(err, errlen, "%s: %s", where, why);
    return 0;
}

static int int_field(const char *where, const char *key, const char *v, int *out, char *err,
                     size_t errlen)
{
    double x;
    if (range_field(where, key, v, &x, err, errlen) != 0)
        return -1;
    *out = (int)x;
    return 0;
}

static int num_field(const char *where, const char *key, const char *v, double *out, char *err,
                     size_t errlen)
{
    return range_field(where, key, v, out, err, errlen);
}

static int text_field(const char *where, const char *key, const char *v, char *dst, size_t len,
                      char *err, size_t errlen)
{
    if (!*v || strlen(v) >= len)
        return tb_err(err, errlen, "%s: field '%s': %s", where, key, *v ? "too long" : "empty");
    snprintf(dst, len, "%s", v);
    return 0;
}

/* A comma list of levels: concurrencies (rate false) or request rates ("inf" allowed). */
static int level_list(const char *where, const char *key, const char *v, bool rate,
                      struct tb_serve_opts *o, char *err, size_t errlen)
{
    char list[256], *item, *save = NULL;
    int n = 0;
    if (!*v || strlen(v) >= sizeof list || v[0] == ',' || v[strlen(v) - 1] == ',' ||
        strstr(v, ",,"))
        return tb_err(err, errlen, "%s: field '%s': expected a comma list, got '%s'", where, key,
                      v);
    snprintf(list, sizeof list, "%s", v);
    for (item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save), n++) {
        if (n == TB_SERVE_MAX_LEVELS)
            return tb_err(err, errlen, "%s: field '%s': more than %d levels", where, key,
                          TB_SERVE_MAX_LEVELS);
        if (rate) {
            if (!strcmp(item, "inf"))
                o->request_rate[n] = INFINITY;
            else if (num_field(where, key, item, &o->request_rate[n], err, errlen))
                return -1;
        } else if (int_field(where, key, item, &o->concurrency[n], err, errlen)) {
            return -1;
        }
    }
    *(rate ? &o->nrate : &o->nconcurrency) = n;
    return 0;
}

/* A comma list of at most 16 rising counts, each in key's range: a recipe's buckets. */
static int count_list(const char *where, const char *key, const char *v, int *out, int *n,
                      char *err, size_t errlen)
{
    char list[256], *item, *save = NULL;
    *n = 0;
    if (!*v || strlen(v) >= sizeof list || v[0] == ',' || v[strlen(v) - 1] == ',' ||
        strstr(v, ",,"))
        return tb_err(err, errlen, "%s: field '%s': expected a comma list, got '%s'", where, key,
                      v);
    snprintf(list, sizeof list, "%s", v);
    for (item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (*n == 16)
            return tb_err(err, errlen, "%s: field '%s': more than 16 values", where, key);
        if (int_field(where, key, item, &out[*n], err, errlen))
            return -1;
        if (*n && out[*n] <= out[*n - 1])
            return tb_err(err, errlen, "%s: field '%s': values must increase, got '%s'", where, key,
                          v);
        (*n)++;
    }
    return 0;
}

/* The serving run's keys of tb_run_spec_set: 1 when key is not one of them. */
static int serve_field(struct tb_serve_opts *o, const char *key, const char *v, const char *where,
                       char *err, size_t errlen)
{
    if (!strcmp(key, "endpoint")) {
        if (strcmp(v, "self") && strncmp(v, "http://", 7) && strncmp(v, "https://", 8))
            return tb_err(err, errlen,
                          "%s: field 'endpoint': '%s' is not an http:// or https:// URL or 'self'",
                          where, v);
        return text_field(where, key, v, o->endpoint, sizeof o->endpoint, err, errlen);
    }
    if (!strcmp(key, "served_model"))
        return text_field(where, key, v, o->served_model, sizeof o->served_model, err, errlen);
    if (!strcmp(key, "api")) {
        if (strcmp(v, "completions") && strcmp(v, "chat"))
            return tb_err(err, errlen, "%s: field 'api': '%s' (completions or chat)", where, v);
        o->api = v[0] == 'c' && v[1] == 'h' ? TB_SERVE_CHAT : TB_SERVE_COMPLETIONS;
        return 0;
    }
    if (!strcmp(key, "concurrency"))
        return level_list(where, key, v, false, o, err, errlen);
    if (!strcmp(key, "request_rate"))
        return level_list(where, key, v, true, o, err, errlen);
    if (!strcmp(key, "max_concurrency"))
        return int_field(where, key, v, &o->max_concurrency, err, errlen);
    if (!strcmp(key, "requests"))
        return int_field(where, key, v, &o->requests, err, errlen);
    if (!strcmp(key, "duration"))
        return num_field(where, key, v, &o->duration_s, err, errlen);
    if (!strcmp(key, "warmup_requests"))
        return int_field(where, key, v, &o->warmup_requests, err, errlen);
    if (!strcmp(key, "request_timeout"))
        return num_field(where, key, v, &o->request_timeout_s, err, errlen);
    if (!strcmp(key, "ttft_ms"))
        return num_field(where, key, v, &o->ttft_limit_ms, err, errlen);
    if (!strcmp(key, "tpot_ms"))
        return num_field(where, key, v, &o->tpot_limit_ms, err, errlen);
    if (!strcmp(key, "chips"))
        return int_field(where, key, v, &o->chips, err, errlen);
    if (!strcmp(key, "server_cmd"))
        return text_field(where, key, v, o->server_cmd, sizeof o->server_cmd, err, errlen);
    if (!strcmp(key, "server_label"))
        return text_field(where, key, v, o->server_label, sizeof o->server_label, err, errlen);
    if (!strcmp(key, "server_timeout"))
        return num_field(where, key, v, &o->server_timeout_s, err, errlen);
    if (!strcmp(key, "server_start")) {
        if (strcmp(v, "cold") && strcmp(v, "cold,warm"))
            return tb_err(err, errlen,
                          "%s: field 'server_start': '%s' (cold, or cold,warm: start the server "
                          "twice and record both)",
                          where, v);
        o->server_starts = strchr(v, ',') ? 2 : 1;
        return 0;
    }
    if (!strcmp(key, "client_threads"))
        return int_field(where, key, v, &o->client_threads, err, errlen);
    if (!strcmp(key, "target"))
        return text_field(where, key, v, o->target, sizeof o->target, err, errlen);
    if (!strcmp(key, "max_num_seqs"))
        return int_field(where, key, v, &o->max_num_seqs, err, errlen);
    if (!strcmp(key, "engine")) {
        if (strcmp(v, "cpu") && strcmp(v, "cuda"))
            return tb_err(err, errlen, "%s: field 'engine': '%s' (cpu or cuda)", where, v);
        o->engine_cuda = !strcmp(v, "cuda");
        return 0;
    }
    if (!strcmp(key, "recipe")) {
        if (strcmp(v, "vllm"))
            return tb_err(err, errlen, "%s: field 'recipe': '%s' (the recipe is vllm)", where, v);
        return text_field(where, key, v, o->recipe, sizeof o->recipe, err, errlen);
    }
    if (!strcmp(key, "tp"))
        return int_field(where, key, v, &o->tp, err, errlen);
    if (!strcmp(key, "max_model_len"))
        return int_field(where, key, v, &o->max_model_len, err, errlen);
    if (!strcmp(key, "max_num_batched_tokens"))
        return int_field(where, key, v, &o->max_batched_tokens, err, errlen);
    if (!strcmp(key, "prefix_caching")) {
        if (strcmp(v, "on") && strcmp(v, "off"))
            return tb_err(err, errlen, "%s: field 'prefix_caching': '%s' (on or off)", where, v);
        o->prefix_caching = !strcmp(v, "on");
        return 0;
    }
    if (!strcmp(key, "prefill_buckets"))
        return count_list(where, key, v, o->prefill_buckets, &o->nprefill, err, errlen);
    if (!strcmp(key, "decode_buckets"))
        return count_list(where, key, v, o->decode_buckets, &o->ndecode, err, errlen);
    if (!strcmp(key, "model_path"))
        return text_field(where, key, v, o->model_path, sizeof o->model_path, err, errlen);
    return 1;
}

/* The keys of a training run through PyTorch (executor=pytorch): 1 when key is not one
 * of them. */
static int torch_field(struct tb_torch_opts *o, const char *key, const char *v, const char *where,
                       char *err, size_t errlen)
{
    int rc;
    if (!strcmp(key, "executor")) {
        if (strcmp(v, "pytorch"))
            return tb_err(err, errlen,
                          "%s: field 'executor': '%s' (pytorch: the training script through "
                          "torchrun; without the key the CPU and GPU engines run the line)",
                          where, v);
        o->on = true;
        return 0;
    }
    if (!strcmp(key, "nproc_per_node"))
        rc = int_field(where, key, v, &o->nproc_per_node, err, errlen);
    else if (!strcmp(key, "torch_device")) {
        if (strcmp(v, "auto") && strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "neuron") &&
            strcmp(v, "xla"))
            return tb_err(err, errlen,
                          "%s: field 'torch_device': '%s' (auto, cpu, cuda, neuron: TorchNeuron, "
                          "or xla: PyTorch/XLA on Neuron SDK 2.29 and before)",
                          where, v);
        snprintf(o->device, sizeof o->device, "%s", v);
        rc = 0;
    } else if (!strcmp(key, "python"))
        rc = text_field(where, key, v, o->python, sizeof o->python, err, errlen);
    else if (!strcmp(key, "train_script"))
        rc = text_field(where, key, v, o->script, sizeof o->script, err, errlen);
    else if (!strcmp(key, "train_timeout"))
        rc = num_field(where, key, v, &o->timeout_s, err, errlen);
    else
        return 1;
    o->set = true;
    return rc;
}

int tb_run_spec_set(struct tb_run_spec *r, const char *word, const char *where, char *err,
                    size_t errlen)
{
    char key[32];
    const char *eq = strchr(word, '='), *v;
    size_t kn;
    if (!eq || eq == word)
        return tb_err(err, errlen, "%s: expected key=value, got '%s'", where, word);
    kn = (size_t)(eq - word);
    if (kn >= sizeof key)
        return tb_err(err, errlen, "%s: unknown field '%.*s'", where, (int)kn, word);
    memcpy(key, word, kn);
    key[kn] = '\0';
    v = eq + 1;
    {
        int rc = serve_field(&r->serve, key, v, where, err, errlen);
        if (rc == 1)
            rc = torch_field(&r->torch, key, v, where, err, errlen);
        if (rc != 1)
            return rc;
    }
    if (!strcmp(key, "model")) {
        if (!*v || strlen(v) >= sizeof r->model)
            return tb_err(err, errlen, "%s: field 'model': bad model name '%s'", where, v);
        snprintf(r->model, sizeof r->model, "%s", v);
    } else if (!strcmp(key, "phase")) {
        if (tb_phase_from_string(v, &r->phase) != 0)
            return tb_err(
                err, errlen,
                "%s: field 'phase': unknown phase '%s' (prefill, decode, train, denoise, serve)",
                where, v);
    } else if (!strcmp(key, "layers")) {
        return int_field(where, key, v, &r->layers, err, errlen);
    } else if (!strcmp(key, "batch")) {
        return int_field(where, key, v, &r->batch, err, errlen);
    } else if (!strcmp(key, "seq_in") || !strcmp(key, "seq")) {
        return int_field(where, key, v, &r->seq_in, err, errlen);
    } else if (!strcmp(key, "seq_out")) {
        return int_field(where, key, v, &r->seq_out, err, errlen);
    } else if (!strcmp(key, "steps")) {
        return int_field(where, key, v, &r->steps, err, errlen);
    } else if (!strcmp(key, "resolution")) {
        return int_field(where, key, v, &r->resolution, err, errlen);
    } else if (!strcmp(key, "reps")) {
        return int_field(where, key, v, &r->reps, err, errlen);
    } else if (!strcmp(key, "warmup")) {
        return int_field(where, key, v, &r->warmup, err, errlen);
    } else if (!strcmp(key, "seed")) {
        long s;
        if (tb_parse_long(v, 0, LONG_MAX, &s) != 0)
            return tb_err(err, errlen,
                          "%s: field 'seed': expected a non-negative integer, got '%s'", where, v);
        r->seed = (uint64_t)s;
    } else if (!strcmp(key, "precision")) {
        /* bf16, fp16 and int8: what a server runs (phase serve), checked with the phase */
        if (!tb_model_precision_known(v))
            return tb_err(err, errlen,
                          "%s: field 'precision': '%s' (fp32: the CPU engine, and bf16 mixed "
                          "precision on the GPU; fp8: GPU inference only; a suite's run line "
                          "takes a comma list, one run each; a serving run: what the server "
                          "runs, %s)",
                          where, v, TB_MODEL_PRECISIONS);
        snprintf(r->precision, sizeof r->precision, "%s", v);
        r->precision_set = true;
    } else {
        return tb_err(
            err, errlen,
            "%s: unknown field '%s' (model, phase, layers, batch, seq_in, seq_out, steps, "
            "resolution, reps, warmup, seed, precision; serving: endpoint, served_model, api, "
            "concurrency, request_rate, max_concurrency, requests, duration, warmup_requests, "
            "request_timeout, ttft_ms, tpot_ms, chips, server_cmd, server_label, "
            "server_timeout, server_start, max_num_seqs, target, client_threads; training "
            "through PyTorch: executor, nproc_per_node, torch_device, python, train_script, "
            "train_timeout)",
            where, key);
    }
    return 0;
}

void tb_run_spec_defaults(struct tb_run_spec *r)
{
    struct tb_serve_opts *o = &r->serve;
    if (r->phase != TB_PHASE_SERVE)
        return;
    if (o->recipe[0] && !o->endpoint[0]) { /* the recipe's server, on a port of its own */
        snprintf(o->endpoint, sizeof o->endpoint, "recipe");
        if (!o->tp)
            o->tp = 1;
        if (!o->server_label[0]) /* prefix caching measures something else: its own runs */
            snprintf(o->server_label, sizeof o->server_label, "%s-tp%d%s", o->recipe, o->tp,
                     o->prefix_caching ? "-prefix-caching" : "");
    }
    if (!r->precision_set && o->endpoint[0] && (strcmp(o->endpoint, "self") || o->engine_cuda))
        snprintf(r->precision, sizeof r->precision, "bf16");
    if (!o->nconcurrency && !o->nrate) {
        o->concurrency[0] = 1;
        o->nconcurrency = 1;
    }
}

void tb_run_spec_recipe_opts(const struct tb_run_spec *r, struct tb_recipe_opts *ro)
{
    const struct tb_serve_opts *o = &r->serve;
    memset(ro, 0, sizeof *ro);
    ro->tp = o->tp ? o->tp : 1;
    ro->max_num_seqs = o->max_num_seqs;
    ro->max_model_len = o->max_model_len ? o->max_model_len : r->seq_in + r->seq_out;
    ro->max_num_batched_tokens = o->max_batched_tokens;
    memcpy(ro->prefill_buckets, o->prefill_buckets, sizeof ro->prefill_buckets);
    ro->nprefill = o->nprefill;
    memcpy(ro->decode_buckets, o->decode_buckets, sizeof ro->decode_buckets);
    ro->ndecode = o->ndecode;
    ro->prefix_caching = o->prefix_caching;
    ro->server_timeout_s = o->server_timeout_s;
    ro->checkpoint = o->model_path[0] != '\0';
    ro->seed = r->seed;
}

/* The checks of a serving run. */
static int serve_check(const struct tb_run_spec *r, const char *where, char *err, size_t errlen)
{
    const struct tb_serve_opts *o = &r->serve;
    bool recipe = !strcmp(o->endpoint, "recipe");
    if (!o->endpoint[0])
        return tb_err(err, errlen,
                      "%s: field 'endpoint': missing (an http:// URL ending in /v1, self: "
                      "trnbench serve on this host, or a recipe=vllm that starts its server)",
                      where);
    if (o->recipe[0] && !recipe)
        return tb_err(err, errlen,
                      "%s: field 'recipe': the recipe starts its own server: no endpoint=%s", where,
                      o->endpoint);
    if (o->recipe[0] && o->server_cmd[0])
        return tb_err(err, errlen, "%s: field 'server_cmd': the recipe gives the server's command",
                      where);
    if (!o->recipe[0] && (o->tp || o->max_model_len || o->max_batched_tokens || o->prefix_caching ||
                          o->nprefill || o->ndecode || o->model_path[0]))
        return tb_err(err, errlen, "%s: field '%s': for a recipe's server (recipe=vllm) only",
                      where,
                      o->tp                   ? "tp"
                      : o->max_model_len      ? "max_model_len"
                      : o->max_batched_tokens ? "max_num_batched_tokens"
                      : o->prefix_caching     ? "prefix_caching"
                      : o->nprefill           ? "prefill_buckets"
                      : o->ndecode            ? "decode_buckets"
                                              : "model_path");
    if (o->max_model_len && o->max_model_len < r->seq_in + r->seq_out)
        return tb_err(err, errlen,
                      "%s: field 'max_model_len': %d is shorter than seq_in + seq_out (%d)", where,
                      o->max_model_len, r->seq_in + r->seq_out);
    if (o->recipe[0] && r->seq_in > 0 && (o->nprefill || o->ndecode)) {
        /* buckets are vllm-neuron's: its rules, before anything starts (the machine's
         * plugin is checked again once the platform is known: tb_plan_open) */
        struct tb_recipe_opts ro;
        char why[1024];
        tb_run_spec_recipe_opts(r, &ro);
        ro.neuron = true;
        if (tb_recipe_settle(&ro, NULL, 0, why, sizeof why) != 0)
            return tb_err(err, errlen, "%s: %s", where, why);
    }
    if (r->seq_in <= 0)
        return tb_err(err, errlen, "%s: field 'seq_in': missing", where);
    if (r->batch != 1)
        return tb_err(err, errlen,
                      "%s: field 'batch': not for a serving run (its load is concurrency or "
                      "request_rate)",
                      where);
    if (o->requests && o->duration_s > 0)
        return tb_err(err, errlen, "%s: field 'duration': give requests or duration, not both",
                      where);
    if (o->server_cmd[0] && !strcmp(o->endpoint, "self"))
        return tb_err(err, errlen,
                      "%s: field 'server_cmd': endpoint=self starts trnbench serve itself", where);
    if (o->server_starts > 1 && !o->server_cmd[0] && strcmp(o->endpoint, "self") && !recipe)
        return tb_err(err, errlen,
                      "%s: field 'server_start': cold,warm needs a server to start (server_cmd, "
                      "endpoint=self or a recipe)",
                      where);
    if (o->engine_cuda && strcmp(o->endpoint, "self"))
        return tb_err(err, errlen,
                      "%s: field 'engine': for endpoint=self (trnbench serve's engine) only",
                      where);
    if (!strcmp(o->endpoint, "self") && !o->engine_cuda && strcmp(r->precision, "fp32"))
        return tb_err(err, errlen,
                      "%s: field 'precision': trnbench serve runs the CPU engine in fp32, not %s",
                      where, r->precision);
    if (o->engine_cuda && strcmp(r->precision, "bf16"))
        return tb_err(err, errlen,
                      "%s: field 'precision': trnbench serve --engine cuda runs bf16, not %s",
                      where, r->precision);
    return 0;
}

/* The checks of a training run through PyTorch. */
static int torch_check(const struct tb_run_spec *r, const char *where, char *err, size_t errlen)
{
    const struct tb_torch_opts *o = &r->torch;
    if (r->phase != TB_PHASE_TRAIN)
        return tb_err(err, errlen,
                      "%s: field 'executor': pytorch runs the training script (phase train), not "
                      "%s",
                      where, tb_phase_to_string(r->phase));
    if (strcmp(r->precision, "fp32") && strcmp(r->precision, "bf16"))
        return tb_err(err, errlen,
                      "%s: field 'precision': the training script runs fp32 or bf16 (mixed "
                      "precision), not %s",
                      where, r->precision);
    if (r->seq_in < 2)
        return tb_err(err, errlen, "%s: field 'seq_in': %s", where,
                      r->seq_in <= 0 ? "missing" : "training needs at least 2 tokens");
    if (r->warmup < 1)
        return tb_err(err, errlen,
                      "%s: field 'warmup': executor=pytorch needs at least one warm-up step (the "
                      "first steps compile on xla and allocate everywhere: compile_s is their "
                      "time beyond a steady step)",
                      where);
    if (o->nnodes > 1 && r->batch % (o->nproc_per_node * o->nnodes))
        return tb_err(err, errlen,
                      "%s: field 'batch': %d sequences do not split evenly over %d nodes x "
                      "nproc_per_node=%d processes (batch is the global batch)",
                      where, r->batch, o->nnodes, o->nproc_per_node);
    if (r->batch % o->nproc_per_node)
        return tb_err(err, errlen,
                      "%s: field 'batch': %d sequences do not split evenly over nproc_per_node=%d "
                      "processes (batch is the global batch)",
                      where, r->batch, o->nproc_per_node);
    return 0;
}

int tb_run_spec_check(const struct tb_run_spec *r, const char *where, char *err, size_t errlen)
{
    if (!r->model[0])
        return tb_err(err, errlen, "%s: field 'model': missing", where);
    if ((unsigned)r->phase >= TB_NPHASES)
        return tb_err(err, errlen, "%s: field 'phase': missing", where);
    if (r->torch.set && !r->torch.on)
        return tb_err(err, errlen,
                      "%s: the keys nproc_per_node, torch_device, python, train_script and "
                      "train_timeout are for executor=pytorch only",
                      where);
    if (r->torch.on)
        return torch_check(r, where, err, errlen);
    if (r->phase == TB_PHASE_SERVE)
        return serve_check(r, where, err, errlen);
    if (r->serve.endpoint[0] || r->serve.nconcurrency || r->serve.nrate)
        return tb_err(err, errlen, "%s: field '%s': for a serving run (phase serve) only", where,
                      r->serve.endpoint[0]    ? "endpoint"
                      : r->serve.nconcurrency ? "concurrency"
                                              : "request_rate");
    if (strcmp(r->precision, "fp32") && strcmp(r->precision, "fp8"))
        return tb_err(err, errlen,
                      "%s: field 'precision': %s is for a serving run or executor=pytorch; the "
                      "engines run fp32 (bf16 on the GPU) or fp8",
                      where, r->precision);
    if (!strcmp(r->precision, "fp8") && r->phase != TB_PHASE_PREFILL && r->phase != TB_PHASE_DECODE)
        return tb_err(err, errlen,
                      "%s: field 'precision': fp8 is for Llama inference (phase prefill or "
                      "decode), not %s",
                      where, tb_phase_to_string(r->phase));
    if (r->phase == TB_PHASE_DENOISE)
        return 0; /* steps and resolution default to the model's */
    if (r->seq_in <= 0)
        return tb_err(err, errlen, "%s: field 'seq_in': missing", where);
    if (r->phase == TB_PHASE_TRAIN && r->seq_in < 2)
        return tb_err(err, errlen, "%s: field 'seq_in': training needs at least 2 tokens", where);
    return 0;
}

void tb_serve_where(const struct tb_serve_opts *o, char *buf, size_t len)
{
    const char *u = o->endpoint, *h;
    if (o->server_label[0] || !strcmp(u, "self") || !(h = strstr(u, "://"))) {
        snprintf(buf, len, "%s", o->server_label[0] ? o->server_label : u);
    } else {
        h += 3;
        snprintf(buf, len, "%.*s", (int)strcspn(h, "/"), h);
    }
    for (char *p = buf; *p; p++) /* one word */
        if (*p == ' ' || *p == '/' || *p == ',')
            *p = '_';
}

/* The load of a serving level as one id word: c4, r8, rinf, r8c16 (a capped open loop). */
static void serve_load(const struct tb_serve_opts *o, char *buf, size_t len)
{
    if (o->level_rate > 0) {
        char cap[24] = "";
        if (o->level_concurrency)
            snprintf(cap, sizeof cap, "c%d", o->level_concurrency);
        if (isinf(o->level_rate))
            snprintf(buf, len, "rinf%s", cap);
        else
            snprintf(buf, len, "r%g%s", o->level_rate, cap);
    } else {
        snprintf(buf, len, "c%d", o->level_concurrency);
    }
}

void tb_serve_workload(const struct tb_run_spec *r, char *workload, size_t wlen, char *config,
                       size_t clen)
{
    char layers[24] = "", load[48];
    const struct tb_serve_opts *o = &r->serve;
    if (r->layers)
        snprintf(layers, sizeof layers, "@L%d", r->layers);
    serve_load(o, load, sizeof load);
    if (load[0] == 'c')
        load[0] = 'b'; /* a closed loop's concurrency is the model's batch */
    char chips[24] = "";
    if (o->chips) /* part of the instance: as the model's twin on that many chips */
        snprintf(chips, sizeof chips, "/chips%d", o->chips);
    snprintf(workload, wlen, "%s%s/serve/in%d/out%d/%s%s", r->model, layers, r->seq_in, r->seq_out,
             r->precision, chips);
    snprintf(config, clen, "%s%s/serve/%s/in%d/out%d/%s%s", r->model, layers, load, r->seq_in,
             r->seq_out, r->precision, chips);
}

void tb_run_spec_id(const struct tb_run_spec *r, char *buf, size_t len)
{
    char layers[24] = "";
    if (r->layers)
        snprintf(layers, sizeof layers, "@L%d", r->layers);
    if (r->phase == TB_PHASE_SERVE) {
        char load[48], where[160];
        serve_load(&r->serve, load, sizeof load);
        tb_serve_where(&r->serve, where, sizeof where);
        snprintf(buf, len, "%s%s/serve/%s/in%d/out%d/%s%s@%s", r->model, layers, load, r->seq_in,
                 r->seq_out, r->precision, r->serve.api == TB_SERVE_CHAT ? "/chat" : "", where);
        return;
    }
    if (r->phase == TB_PHASE_DENOISE) {
        char res[24] = "default", steps[24] = "default";
        if (r->resolution)
            snprintf(res, sizeof res, "%d", r->resolution);
        if (r->steps)
            snprintf(steps, sizeof steps, "%d", r->steps);
        snprintf(buf, len, "%s/denoise/b%d/r%s/s%s/%s", r->model, r->batch, res, steps,
                 r->precision);
        return;
    }
    if (r->phase == TB_PHASE_DECODE)
        snprintf(buf, len, "%s%s/%s/b%d/in%d/out%d/%s", r->model, layers,
                 tb_phase_to_string(r->phase), r->batch, r->seq_in, r->seq_out, r->precision);
    else if (r->torch.on) { /* its nodes, processes, and the device when it is asked for */
        char nodes[24] = "";
        if (r->torch.nnodes > 1)
            snprintf(nodes, sizeof nodes, "/nodes%d", r->torch.nnodes);
        snprintf(buf, len, "%s%s/%s/b%d/in%d/%s%s/np%d%s%s", r->model, layers,
                 tb_phase_to_string(r->phase), r->batch, r->seq_in, r->precision, nodes,
                 r->torch.nproc_per_node, strcmp(r->torch.device, TB_TORCH_DEVICE_AUTO) ? "/" : "",
                 strcmp(r->torch.device, TB_TORCH_DEVICE_AUTO) ? r->torch.device : "");
    } else
        snprintf(buf, len, "%s%s/%s/b%d/in%d/%s", r->model, layers, tb_phase_to_string(r->phase),
                 r->batch, r->seq_in, r->precision);
}

/* ---- predict lines ---- */

const char *tb_predict_spec_get(const struct tb_predict_spec *p, const char *key)
{
    for (int i = 0; i < p->nfields; i++)
        if (!strcmp(p->keys[i], key))
            return p->values[i];
    return NULL;
}

void tb_run_id_fit(char *buf, size_t len, const char *id)
{
    uint64_t h = 14695981039346656037ULL; /* FNV-1a, 64 bits */
    size_t n = strlen(id);
    if (n < len || len < 40) {
        snprintf(buf, len, "%s", id);
        return;
    }
    /* too long for buf: cut, and end with a hash of the whole id, so that two ids that
     * differ only past the cut stay apart */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)id[i];
        h *= 1099511628211ULL;
    }
    snprintf(buf, len, "%.*s~%016llx", (int)(len - 18), id, (unsigned long long)h);
}

void tb_model_run_id(char *buf, size_t len, const char *target, const char *model,
                     const char *phase, const char *batch, const char *seq_in, const char *seq_out,
                     const char *steps, const char *resolution, const char *precision,
                     const char *instances)
{
    char o[80] = "", x[80] = "", full[1200];
    if (seq_out)
        snprintf(o, sizeof o, "/out%s", seq_out);
    if (instances)
        snprintf(x, sizeof x, "/x%s", instances);
    if (!strcmp(phase, "denoise"))
        snprintf(full, sizeof full, "model:%.200s/%.200s/denoise/b%.64s/r%.64s/s%.64s/%.64s%s",
                 target, model, batch ? batch : "1", resolution ? resolution : "default",
                 steps ? steps : "default", precision ? precision : "bf16", x);
    else if (!seq_in) /* a diffusion model's training: images at a resolution */
        snprintf(full, sizeof full, "model:%.200s/%.200s/%.64s/b%.64s/r%.64s/%.64s%s", target,
                 model, phase, batch ? batch : "1", resolution ? resolution : "default",
                 precision ? precision : "bf16", x);
    else
        snprintf(full, sizeof full, "model:%.200s/%.200s/%.64s/b%.64s/in%.64s%s/%.64s%s", target,
                 model, phase, batch ? batch : "1", seq_in, o, precision ? precision : "bf16", x);
    tb_run_id_fit(buf, len, full);
}

void tb_model_run_id_terms(char *full, size_t len, const char *spec_accept, const char *spec_len,
                           const char *draft, const char *prefix_hit, const char *software)
{
    size_t k = strlen(full);
    if (software && *software && k < len)
        k += (size_t)snprintf(full + k, len - k, "/sw-%.64s", software);
    if (spec_accept && *spec_accept && k < len)
        k += (size_t)snprintf(full + k, len - k, "/spec%.32s", spec_accept);
    if (spec_len && *spec_len && k < len)
        k += (size_t)snprintf(full + k, len - k, "/k%.32s", spec_len);
    if (draft && *draft && k < len)
        k += (size_t)snprintf(full + k, len - k, "/draft-%.64s", draft);
    if (prefix_hit && *prefix_hit && k < len)
        snprintf(full + k, len - k, "/hit%.32s", prefix_hit);
}

void tb_predict_spec_id(const struct tb_predict_spec *p, char *buf, size_t len)
{
#define G(k) tb_predict_spec_get(p, k)
    char full[1600];
    size_t k;
    tb_model_run_id(full, sizeof full, G("target"), G("model"), G("phase"), G("batch"), G("seq_in"),
                    G("seq_out"), G("steps"), G("resolution"), G("precision"), NULL);
    /* serving's terms, then the instances last (tb_results_config takes "/x" off) */
    tb_model_run_id_terms(full, sizeof full, G("spec_accept"), G("spec_len"), G("draft_model"),
                          G("prefix_hit"), G("software"));
    k = strlen(full);
    if (G("instances") && k < sizeof full)
        snprintf(full + k, sizeof full - k, "/x%s", G("instances"));
    tb_run_id_fit(buf, len, full);
#undef G
}

/* Parse the words of a predict line (after "predict") into s->predicts, one spec per
 * target and model of the comma lists. */
static int parse_predict(struct tb_suite *s, size_t *cap, char **save, const char *where, long line,
                         char *err, size_t errlen)
{
    static const char *const keys[] = {
        "target",      "model",         "phase",         "precision",    "seq_in",   "seq_out",
        "batch",       "instances",     "chips",         "tp",           "pp",       "dp",
        "ep",          "ttft_limit_ms", "tpot_limit_ms", "train_tokens", "steps",    "resolution",
        "spec_accept", "spec_len",      "draft_model",   "prefix_hit",   "software", NULL};
    struct tb_predict_spec base;
    char targets[512] = "", models[512] = "", *word, *t, *ts = NULL;

    memset(&base, 0, sizeof base);
    base.line = line;
    while ((word = strtok_r(NULL, " \t", save))) {
        const char *eq = strchr(word, '='), *v;
        char key[24], num[64];
        int known = 0;
        size_t kn = eq ? (size_t)(eq - word) : 0;
        if (!eq || !kn || !eq[1])
            return tb_err(err, errlen, "%s: expected key=value, got '%s'", where, word);
        snprintf(key, sizeof key, "%.*s", (int)kn, word);
        v = eq + 1;
        for (int i = 0; keys[i]; i++)
            known |= !strcmp(keys[i], key);
        if (!known || kn >= sizeof key)
            return tb_err(err, errlen, "%s: unknown field '%.*s' (%s)", where, (int)kn, word,
                          "target, model, phase, precision, seq_in, seq_out, batch, instances, "
                          "chips, tp, pp, dp, ep, ttft_limit_ms, tpot_limit_ms, train_tokens, "
                          "steps, resolution, spec_accept, spec_len, draft_model, prefix_hit, "
                          "software");
        if (!strcmp(key, "target") || !strcmp(key, "model")) {
            char *dst = key[0] == 't' ? targets : models;
            if (strlen(v) >= 512)
                return tb_err(err, errlen, "%s: field '%s': too long", where, key);
            snprintf(dst, 512, "%s", v);
            continue;
        }
        if (tb_predict_spec_get(&base, key))
            return tb_err(err, errlen, "%s: field '%s' given twice", where, key);
        if (base.nfields == TB_PREDICT_MAX_FIELDS || strlen(v) >= sizeof base.values[0])
            return tb_err(err, errlen, "%s: field '%s': too long", where, key);
        if (!strcmp(key, "phase")) {
            if (strcmp(v, "train") && strcmp(v, "prefill") && strcmp(v, "decode") &&
                strcmp(v, "serve") && strcmp(v, "denoise"))
                return tb_err(err, errlen,
                              "%s: field 'phase': '%s' (train, prefill, decode, serve or denoise)",
                              where, v);
        } else if (!strcmp(key, "draft_model")) {
            /* speculative decoding's draft: a catalogue name (the model reads it) */
            if (!tb_arch_name_ok(v))
                return tb_err(err, errlen, "%s: field 'draft_model': '%s' is not a model name",
                              where, v);
        } else if (!strcmp(key, "software")) {
            /* a stack of pricing/stacks.csv (the model says which it has) */
            if (!tb_model_software_name_ok(v))
                return tb_err(err, errlen,
                              "%s: field 'software': '%s' (a name of a-z, 0-9 and '-', then "
                              "optionally @version: vllm, tensorrt-llm@1)",
                              where, v);
        } else if (!strcmp(key, "precision")) {
            if (!tb_model_precision_known(v))
                return tb_err(err, errlen, "%s: field 'precision': '%s' (%s)", where, v,
                              TB_MODEL_PRECISIONS);
        } else if (!strcmp(key, "batch")) {
            /* a comma list of sizes or "max": one modeled run each (a batch sweep), kept
             * in digits as the id writes them ("08" is "8") */
            char list[64], canon[64] = "", *b, *bs = NULL;
            size_t used = 0;
            if (strlen(v) >= sizeof list)
                return tb_err(err, errlen, "%s: field 'batch': too long", where);
            if (v[0] == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
                return tb_err(err, errlen, "%s: field 'batch': empty item in '%s'", where, v);
            snprintf(list, sizeof list, "%s", v);
            for (b = strtok_r(list, ",", &bs); b; b = strtok_r(NULL, ",", &bs)) {
                long x = 0;
                char e[256];
                if (strcmp(b, "max") &&
                    tb_range_field_long(TB_SCENARIO_RANGES, "batch", b, &x, e, sizeof e) != 0)
                    return tb_err(err, errlen, "%s: %s", where, e);
                if (strcmp(b, "max"))
                    used += (size_t)snprintf(canon + used, sizeof canon - used, "%s%ld",
                                             used ? "," : "", x);
                else
                    used += (size_t)snprintf(canon + used, sizeof canon - used, "%smax",
                                             used ? "," : "");
                if (used >= sizeof canon)
                    return tb_err(err, errlen, "%s: field 'batch': too long", where);
            }
            snprintf(num, sizeof num, "%s", canon);
            v = num;
        } else {
            /* the scenario table's ranges: a number the model would refuse is refused
             * here, by line and field, not skipped when the suite runs; a whole number
             * kept in digits as the id writes it ("0004096" is "4096") */
            const struct tb_range *r = tb_range_find(TB_SCENARIO_RANGES, key);
            double x;
            char e[256];
            if (!r || tb_range_parse(r, v, &x, e, sizeof e) != 0)
                return tb_err(err, errlen, "%s: %s", where, r ? e : "field without a range");
            if (r->integer) {
                snprintf(num, sizeof num, "%ld", (long)x);
                v = num;
            }
        }
        snprintf(base.keys[base.nfields], sizeof base.keys[0], "%s", key);
        snprintf(base.values[base.nfields], sizeof base.values[0], "%s", v);
        base.nfields++;
    }
    {
        const char *ph = tb_predict_spec_get(&base, "phase");
        bool denoise = ph && !strcmp(ph, "denoise");
        if (ph && !strcmp(ph, "train") && !tb_predict_spec_get(&base, "seq_in")) {
            /* a diffusion model's training has no sequence: every model of the list one */
            char mcopy[512], *mo, *ms = NULL;
            snprintf(mcopy, sizeof mcopy, "%s", models);
            denoise = models[0] != '\0';
            for (mo = strtok_r(mcopy, ",", &ms); mo; mo = strtok_r(NULL, ",", &ms))
                denoise &= tb_darch_is_diffusion(mo) == 1;
        }
        if (!targets[0] || !models[0] || !ph || (!denoise && !tb_predict_spec_get(&base, "seq_in")))
            return tb_err(err, errlen, "%s: field '%s': missing", where,
                          !targets[0]  ? "target"
                          : !models[0] ? "model"
                          : !ph        ? "phase"
                                       : "seq_in");
    }
    if (base.nfields + 2 > TB_PREDICT_MAX_FIELDS)
        return tb_err(err, errlen, "%s: too many fields", where);
    for (t = strtok_r(targets, ",", &ts); t; t = strtok_r(NULL, ",", &ts)) {
        char mcopy[512], *mo, *ms = NULL;
        snprintf(mcopy, sizeof mcopy, "%s", models);
        for (mo = strtok_r(mcopy, ",", &ms); mo; mo = strtok_r(NULL, ",", &ms)) {
            const char *bv = tb_predict_spec_get(&base, "batch");
            char blist[64], *b, *bs = NULL;
            snprintf(blist, sizeof blist, "%s", bv ? bv : "");
            /* one spec per batch of the list (a spec without a batch: once) */
            for (b = bv ? strtok_r(blist, ",", &bs) : blist; b;
                 b = bv ? strtok_r(NULL, ",", &bs) : NULL) {
                struct tb_predict_spec p = base;
                if (bv)
                    for (int i = 0; i < p.nfields; i++)
                        if (!strcmp(p.keys[i], "batch"))
                            snprintf(p.values[i], sizeof p.values[i], "%s", b);
                if (strlen(t) >= sizeof p.values[0] || strlen(mo) >= sizeof p.values[0])
                    return tb_err(err, errlen, "%s: field 'target': name too long", where);
                snprintf(p.keys[p.nfields], sizeof p.keys[0], "target");
                snprintf(p.values[p.nfields++], sizeof p.values[0], "%s", t);
                snprintf(p.keys[p.nfields], sizeof p.keys[0], "model");
                snprintf(p.values[p.nfields++], sizeof p.values[0], "%s", mo);
                if (s->npredicts == *cap) {
                    size_t nc = *cap ? *cap * 2 : 16;
                    struct tb_predict_spec *np = realloc(s->predicts, nc * sizeof(*np));
                    if (!np)
                        return tb_err(err, errlen, "out of memory");
                    s->predicts = np;
                    *cap = nc;
                }
                for (size_t i = 0; i < s->npredicts; i++) {
                    char id0[256], id1[256];
                    tb_predict_spec_id(&s->predicts[i], id0, sizeof id0);
                    tb_predict_spec_id(&p, id1, sizeof id1);
                    if (!strcmp(id0, id1))
                        return tb_err(err, errlen, "%s: modeled run '%s' repeats line %ld", where,
                                      id1, s->predicts[i].line);
                }
                s->predicts[s->npredicts++] = p;
            }
        }
    }
    return 0;
}

int tb_suite_from_predict(struct tb_suite *s, const char *name, const char *words, char *err,
                          size_t errlen)
{
    size_t cap = 0;
    char *buf = tb_strdup(words), *save = buf;
    int rc;

    memset(s, 0, sizeof *s);
    if (!buf)
        return tb_err(err, errlen, "out of memory");
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->path, sizeof s->path, "command line");
    rc = parse_predict(s, &cap, &save, "command line", 0, err, errlen);
    free(buf);
    if (rc != 0)
        tb_suite_release(s);
    return rc;
}

/* Parse the words of a run line (after "run") into s->runs: one run, or one per
 * precision of a comma list ("precision=fp32,fp8"), each checked on its own. */
static int parse_run(struct tb_suite *s, size_t *cap, char *const *words, int nwords,
                     const char *where, long line, bool serve, char *err, size_t errlen)
{
    struct tb_run_spec base;
    char precisions[64] = "", *word, *pr, *ps = NULL;

    tb_run_spec_init(&base);
    base.line = line;
    if (serve)
        base.phase = TB_PHASE_SERVE;
    for (int wi = 0; wi < nwords && (word = words[wi]); wi++) {
        if (!strncmp(word, "precision=", 10) && strchr(word, ',')) {
            const char *v = word + 10;
            if (strlen(v) >= sizeof precisions)
                return tb_err(err, errlen, "%s: field 'precision': too long", where);
            if (v[0] == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
                return tb_err(err, errlen, "%s: field 'precision': empty item in '%s'", where, v);
            snprintf(precisions, sizeof precisions, "%s", v);
            continue;
        }
        if (tb_run_spec_set(&base, word, where, err, errlen) != 0)
            return -1;
    }
    if (!precisions[0])
        snprintf(precisions, sizeof precisions, "%s", base.precision);
    for (pr = strtok_r(precisions, ",", &ps); pr; pr = strtok_r(NULL, ",", &ps)) {
        struct tb_run_spec r = base;
        char w[80], a[256], b[256];
        snprintf(w, sizeof w, "precision=%s", pr);
        if (base.precision_set || strcmp(pr, base.precision)) /* a list's, or one given */
            if (tb_run_spec_set(&r, w, where, err, errlen) != 0)
                return -1;
        tb_run_spec_defaults(&r);
        if (tb_run_spec_check(&r, where, err, errlen) != 0)
            return -1;
        if (s->nruns == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            struct tb_run_spec *nr = realloc(s->runs, nc * sizeof(*nr));
            if (!nr)
                return tb_err(err, errlen, "out of memory");
            s->runs = nr;
            *cap = nc;
        }
        tb_run_spec_id(&r, b, sizeof b);
        for (size_t i = 0; i < s->nruns; i++) {
            tb_run_spec_id(&s->runs[i], a, sizeof a);
            if (!strcmp(a, b))
                return tb_err(err, errlen, "%s: run '%s' repeats line %ld", where, b,
                              s->runs[i].line);
        }
        s->runs[s->nruns++] = r;
    }
    return 0;
}

int tb_suite_load(struct tb_suite *s, const char *name_or_path, char *err, size_t errlen)
{
    char path[PATH_MAX];
    size_t n = strlen(name_or_path), cap = 0, pcap = 0;
    FILE *f = NULL;
    char *buf = NULL;
    size_t bcap = 0;
    ssize_t nread;
    long line = 0;
    int rc = -1;

    memset(s, 0, sizeof *s);
    if (strchr(name_or_path, '/') || (n > 6 && !strcmp(name_or_path + n - 6, ".suite")))
        snprintf(path, sizeof path, "%s", name_or_path);
    else if ((size_t)snprintf(path, sizeof path, "%s/suites/%s.suite", tb_datadir(),
                              name_or_path) >= sizeof path)
        return tb_err(err, errlen, "suite name too long");
    snprintf(s->path, sizeof s->path, "%s", path);
    f = tb_text_open(path, TB_TEXT_FILE_MAX, err, errlen);
    if (!f) {
        if (errno == ENOENT && !strchr(name_or_path, '/'))
            return tb_err(err, errlen, "unknown suite '%s' (no '%s')", name_or_path, path);
        return -1;
    }
    while ((nread = getline(&buf, &bcap, f)) > 0) {
        char where[PATH_MAX + 32], *p, *word, *save = NULL, *hash;
        line++;
        if (tb_text_line(path, line, buf, (size_t)nread, err, errlen) < 0)
            goto out;
        hash = strchr(buf, '#');
        if (hash)
            *hash = '\0';
        p = tb_trim(buf);
        if (!*p)
            continue;
        snprintf(where, sizeof where, "%s: line %ld", path, line);
        word = strtok_r(p, " \t", &save);
        if (!strcmp(word, "suite")) {
            char *v = tb_trim(save ? save : (char *)"");
            if (!*v || strlen(v) >= sizeof s->name) {
                tb_err(err, errlen, "%s: field 'suite': bad name '%s'", where, v);
                goto out;
            }
            snprintf(s->name, sizeof s->name, "%s", v);
        } else if (!strcmp(word, "description")) {
            snprintf(s->description, sizeof s->description, "%s",
                     tb_trim(save ? save : (char *)""));
        } else if (!strcmp(word, "run") || !strcmp(word, "serve")) {
            /* the words as a shell would split them, quotes grouping (server_cmd='vllm
             * serve ...'), nothing expanded */
            char **words = NULL, e[512];
            int nwords = 0, r;
            if (save && *save && tb_argv_split(save, &words, &nwords, e, sizeof e) != 0) {
                tb_err(err, errlen, "%s: %s", where, e);
                goto out;
            }
            r = parse_run(s, &cap, words, nwords, where, line, word[0] == 's', err, errlen);
            tb_argv_free(words);
            if (r != 0)
                goto out;
        } else if (!strcmp(word, "predict")) {
            if (parse_predict(s, &pcap, &save, where, line, err, errlen) != 0)
                goto out;
        } else {
            tb_err(err, errlen,
                   "%s: unknown directive '%s' (suite, description, run, serve, predict)", where,
                   word);
            goto out;
        }
    }
    if (ferror(f)) {
        tb_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        goto out;
    }
    if (!s->nruns && !s->npredicts) {
        tb_err(err, errlen, "%s: no 'run' or 'predict' lines", path);
        goto out;
    }
    if (!s->name[0]) {
        const char *base = strrchr(path, '/');
        snprintf(s->name, sizeof s->name, "%.*s", (int)strcspn(base ? base + 1 : path, "."),
                 base ? base + 1 : path);
    }
    rc = 0;
out:
    free(buf);
    fclose(f);
    if (rc != 0)
        tb_suite_release(s);
    return rc;
}

void tb_suite_release(struct tb_suite *s)
{
    free(s->runs);
    s->runs = NULL;
    s->nruns = 0;
    free(s->predicts);
    s->predicts = NULL;
    s->npredicts = 0;
}
