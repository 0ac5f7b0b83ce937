/* harness/measure/tb_torch.c: see tb_torch.h. */
#include "tb_torch.h"

#include "tb_flops.h"
#include "tb_proc.h"
#include "tb_util.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define REL_TOL 1e-6 /* agreement asked of the script's derived figures and FLOPs */

/* ---- reading the output ---- */

/* One line of the output being read: where errors point. */
struct line_ctx {
    const char *name;
    long line;
    json_t *o; /* borrowed: the line's object */
    char *err;
    size_t errlen;
};

static int bad(const struct line_ctx *c, const char *key, const char *what)
{
    json_t *v = json_object_get(c->o, key);
    char *text = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    int rc = tb_err(c->err, c->errlen, "%s: line %ld: field '%s': %s%s%.80s", c->name, c->line, key,
                    v ? what : "missing", v ? ": " : "", text ? text : "");
    free(text);
    return rc;
}

/* A number in [lo, hi] (an integer is a number too). */
static int get_num(const struct line_ctx *c, const char *key, double lo, double hi, double *out)
{
    json_t *v = json_object_get(c->o, key);
    if (!json_is_number(v) || !(json_number_value(v) >= lo && json_number_value(v) <= hi)) {
        char what[96];
        snprintf(what, sizeof what, "expected a number in [%g, %g]", lo, hi);
        return bad(c, key, what);
    }
    *out = json_number_value(v);
    return 0;
}

/* An optional number >= 0: NAN when absent or null. */
static int opt_num(const struct line_ctx *c, const char *key, double *out)
{
    json_t *v = json_object_get(c->o, key);
    *out = NAN;
    if (!v || json_is_null(v))
        return 0;
    return get_num(c, key, 0, HUGE_VAL, out);
}

static int get_int(const struct line_ctx *c, const char *key, long lo, long hi, long *out)
{
    json_t *v = json_object_get(c->o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char what[96];
        snprintf(what, sizeof what, "expected an integer in [%ld, %ld]", lo, hi);
        return bad(c, key, what);
    }
    *out = (long)json_integer_value(v);
    return 0;
}

static int get_int32(const struct line_ctx *c, const char *key, long lo, int *out)
{
    long v;
    if (get_int(c, key, lo, 1L << 30, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* A string (need: non-empty); absent or null leaves "" when not needed. */
static int get_text(const struct line_ctx *c, const char *key, char *out, size_t len, bool need)
{
    json_t *v = json_object_get(c->o, key);
    out[0] = '\0';
    if (!need && (!v || json_is_null(v)))
        return 0;
    if (!json_is_string(v) || (need && !json_string_value(v)[0]))
        return bad(c, key, need ? "expected a non-empty string" : "expected a string");
    if (strlen(json_string_value(v)) >= len)
        return bad(c, key, "too long");
    snprintf(out, len, "%s", json_string_value(v));
    return 0;
}

static bool close_to(double want, double got)
{
    return fabs(want - got) <= REL_TOL * fabs(want);
}

static int parse_start(struct tb_train_report *t, const struct line_ctx *c)
{
    long protocol, batch, seq;
    int total;
    if (t->have_start)
        return tb_err(c->err, c->errlen, "%s: line %ld: a second start line", c->name, c->line);
    if (get_int(c, "protocol", 0, 1L << 30, &protocol) != 0)
        return -1;
    if (protocol != TB_TORCH_PROTOCOL)
        return tb_err(c->err, c->errlen,
                      "%s: line %ld: field 'protocol': %ld, but trnbench reads protocol %d",
                      c->name, c->line, protocol, TB_TORCH_PROTOCOL);
    if (get_text(c, "model", t->model, sizeof t->model, true) ||
        get_int32(c, "layers", 1, &t->layers) || get_int32(c, "world_size", 1, &t->world_size) ||
        get_int(c, "global_batch", 1, 1L << 30, &batch) || get_int(c, "seq", 1, 1L << 30, &seq) ||
        get_int32(c, "steps", 1, &t->steps) || get_int32(c, "warmup_steps", 0, &t->warmup_steps) ||
        get_int32(c, "distinct_batches", 1, &t->distinct_batches) ||
        get_text(c, "precision", t->precision, sizeof t->precision, true) ||
        get_text(c, "device", t->device, sizeof t->device, true) ||
        get_text(c, "device_name", t->device_name, sizeof t->device_name, true) ||
        get_text(c, "backend", t->backend, sizeof t->backend, true) ||
        get_text(c, "torch", t->torch, sizeof t->torch, true) ||
        get_num(c, "tokens_per_step", 1, HUGE_VAL, &t->tokens_per_step) ||
        get_num(c, "flops_per_step", 1, HUGE_VAL, &t->flops_per_step) ||
        opt_num(c, "device_mem_gib", &t->device_mem_gib) ||
        get_text(c, "python", t->python, sizeof t->python, false) ||
        get_text(c, "cuda", t->cuda, sizeof t->cuda, false) ||
        get_text(c, "torch_xla", t->torch_xla, sizeof t->torch_xla, false) ||
        get_text(c, "torch_neuronx", t->torch_neuronx, sizeof t->torch_neuronx, false) ||
        get_text(c, "neuronx_cc", t->neuronx_cc, sizeof t->neuronx_cc, false) ||
        get_text(c, "blas", t->blas, sizeof t->blas, false) ||
        get_text(c, "attention", t->attention, sizeof t->attention, false) ||
        get_text(c, "compile", t->compile_how, sizeof t->compile_how, false) ||
        get_text(c, "parallelism", t->parallelism, sizeof t->parallelism, false))
        return -1;
    if (strcmp(t->device, "cpu") && strcmp(t->device, "cuda") && strcmp(t->device, "neuron") &&
        strcmp(t->device, "xla"))
        return bad(c, "device", "not cpu, cuda, neuron or xla");
    if (strcmp(t->precision, "fp32") && strcmp(t->precision, "bf16"))
        return bad(c, "precision", "not fp32 or bf16");
    t->global_batch = batch;
    t->seq = seq;
    total = t->warmup_steps + t->steps;
    t->loss = tb_alloc_array((size_t)total, sizeof *t->loss);
    t->secs = tb_alloc_array((size_t)total, sizeof *t->secs);
    if (!t->loss || !t->secs)
        return tb_err(c->err, c->errlen, "out of memory for %d steps", total);
    t->have_start = true;
    return 0;
}

static int parse_step(struct tb_train_report *t, const struct line_ctx *c)
{
    const int total = t->warmup_steps + t->steps;
    long step, world;
    double secs, tokens, rate;
    json_t *loss = json_object_get(c->o, "loss"), *warm = json_object_get(c->o, "warmup");

    if (!t->have_start || t->have_end)
        return tb_err(c->err, c->errlen, "%s: line %ld: a step line %s the start line", c->name,
                      c->line, t->have_end ? "after the end line, not before" : "before");
    if (get_int(c, "step", 0, 1L << 30, &step) != 0)
        return -1;
    if (step != t->nsteps)
        return tb_err(c->err, c->errlen, "%s: line %ld: field 'step': %ld, but step %d was next",
                      c->name, c->line, step, t->nsteps);
    if (t->nsteps == total)
        return tb_err(c->err, c->errlen,
                      "%s: line %ld: field 'step': %ld, more than the %d steps announced", c->name,
                      c->line, step, total);
    if (!json_is_boolean(warm) || json_is_true(warm) != (step < t->warmup_steps))
        return bad(c, "warmup",
                   step < t->warmup_steps ? "expected true (a warm-up step)"
                                          : "expected false (a timed step)");
    if (get_num(c, "step_time_s", 1e-9, 1e9, &secs) || get_num(c, "tokens", 1, HUGE_VAL, &tokens) ||
        get_num(c, "tokens_per_s", 0, HUGE_VAL, &rate) ||
        get_int(c, "world_size", 1, 1L << 30, &world))
        return -1;
    if (world != t->world_size)
        return tb_err(c->err, c->errlen,
                      "%s: line %ld: field 'world_size': %ld, but the start line said %d", c->name,
                      c->line, world, t->world_size);
    if (!close_to(t->tokens_per_step, tokens))
        return tb_err(c->err, c->errlen,
                      "%s: line %ld: field 'tokens': %.17g, but the start line said %.17g a step",
                      c->name, c->line, tokens, t->tokens_per_step);
    if (!close_to(tokens / secs, rate))
        return tb_err(c->err, c->errlen,
                      "%s: line %ld: field 'tokens_per_s': %.17g, but tokens / step_time_s is "
                      "%.17g",
                      c->name, c->line, rate, tokens / secs);
    if (json_is_number(loss)) {
        t->loss[t->nsteps] = json_number_value(loss);
    } else if (json_is_null(loss)) { /* not finite: JSON has no NaN */
        char text[32];
        if (get_text(c, "loss_text", text, sizeof text, false) != 0)
            return -1;
        t->loss[t->nsteps] = NAN;
        if (t->bad_step < 0) {
            t->bad_step = t->nsteps;
            snprintf(t->bad_loss, sizeof t->bad_loss, "%s", text[0] ? text : "null");
        }
    } else {
        return bad(c, "loss", "expected a number, or null when it is not finite");
    }
    t->secs[t->nsteps++] = secs;
    return 0;
}

static int parse_end(struct tb_train_report *t, const struct line_ctx *c)
{
    long compiles = 0;
    if (!t->have_start || t->have_end)
        return tb_err(c->err, c->errlen, "%s: line %ld: an end line %s", c->name, c->line,
                      t->have_end ? "twice" : "before the start line");
    if (get_num(c, "compile_s", 0, HUGE_VAL, &t->compile_s) ||
        opt_num(c, "peak_mem_gib", &t->peak_mem_gib) ||
        opt_num(c, "xla_compile_s", &t->xla_compile_s) || opt_num(c, "wall_s", &t->wall_s))
        return -1;
    if (json_object_get(c->o, "xla_compiles") &&
        get_int(c, "xla_compiles", 0, 1L << 40, &compiles) != 0)
        return -1;
    t->xla_compiles = compiles;
    t->have_end = true;
    return 0;
}

/* One protocol line (text[0..n-1], starting with '{'): 0, 1 unavailable, -1 failed. */
static int parse_line(struct tb_train_report *t, struct line_ctx *c, const char *text, size_t n)
{
    json_error_t je;
    char ev[32], reason[512];
    int rc = -1;
    const int shown = n < 80 ? (int)n : 80; /* of the line, in messages */

    c->o = json_loadb(text, n, 0, &je);
    if (!c->o)
        return tb_err(c->err, c->errlen, "%s: line %ld: malformed JSON (%s): %.*s", c->name,
                      c->line, je.text, shown, text);
    if (!json_is_object(c->o)) {
        tb_err(c->err, c->errlen, "%s: line %ld: not a JSON object: %.*s", c->name, c->line, shown,
               text);
        goto out;
    }
    if (get_text(c, "event", ev, sizeof ev, true) != 0)
        goto out;
    if (!strcmp(ev, "start"))
        rc = parse_start(t, c);
    else if (!strcmp(ev, "step"))
        rc = parse_step(t, c);
    else if (!strcmp(ev, "end"))
        rc = parse_end(t, c);
    else if (!strcmp(ev, "unavailable") || !strcmp(ev, "error")) {
        if (get_text(c, "reason", reason, sizeof reason, true) != 0)
            goto out;
        if (ev[0] == 'u') {
            tb_err(c->err, c->errlen, "%s", reason);
            rc = 1;
        } else {
            tb_err(c->err, c->errlen, "the script failed: %s", reason);
        }
    } else {
        bad(c, "event", "not start, step, end, unavailable or error");
    }
out:
    json_decref(c->o);
    c->o = NULL;
    return rc;
}

int tb_train_parse(struct tb_train_report *t, const char *name, const char *text, size_t len,
                   char *err, size_t errlen)
{
    struct line_ctx c = {.name = name, .err = err, .errlen = errlen};
    const char *p = text, *end = text + len;

    memset(t, 0, sizeof *t);
    t->bad_step = -1;
    t->device_mem_gib = t->peak_mem_gib = t->xla_compile_s = t->wall_s = t->compile_s = NAN;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end, *s = p;
        c.line++;
        p = nl ? nl + 1 : end;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (s == e || *s != '{')
            continue; /* not the protocol's: torchrun, the compiler, libraries */
        {
            int rc = parse_line(t, &c, s, (size_t)(e - s));
            if (rc != 0)
                return rc > 0 ? TB_TRAIN_UNAVAILABLE : TB_TRAIN_FAILED;
        }
    }
    return TB_TRAIN_OK;
}

void tb_train_report_release(struct tb_train_report *t)
{
    free(t->loss);
    free(t->secs);
    memset(t, 0, sizeof *t);
}

/* ---- checking it against the request ---- */

static int mismatch(const char *name, const char *field, long got, long want, const char *what,
                    char *err, size_t errlen)
{
    return tb_err(err, errlen, "%s: field '%s': %ld, but %ld %s asked", name, field, got, want,
                  what);
}

int tb_train_check(const struct tb_train_report *t, const char *name,
                   const struct tb_run_spec *spec, const struct tb_arch *arch, char *err,
                   size_t errlen)
{
    const struct tb_torch_opts *o = &spec->torch;
    const int total = spec->warmup + spec->reps;
    double flops;

    if (!t->have_start)
        return tb_err(err, errlen, "%s: no start line (no JSON line with \"event\": \"start\")",
                      name);
    if (strcmp(t->model, arch->name))
        return tb_err(err, errlen, "%s: field 'model': '%s', but '%s' was asked", name, t->model,
                      arch->name);
    if (t->layers != arch->layers)
        return mismatch(name, "layers", t->layers, arch->layers, "were", err, errlen);
    if (t->world_size != tb_train_world(spec))
        return mismatch(name, "world_size", t->world_size, tb_train_world(spec),
                        o->nnodes > 1 ? "processes (nnodes x nproc_per_node) were"
                                      : "processes (nproc_per_node) were",
                        err, errlen);
    if (t->global_batch != spec->batch)
        return mismatch(name, "global_batch", t->global_batch, spec->batch, "was", err, errlen);
    if (t->seq != spec->seq_in)
        return mismatch(name, "seq", t->seq, spec->seq_in, "was", err, errlen);
    if (t->steps != spec->reps)
        return mismatch(name, "steps", t->steps, spec->reps, "timed steps were", err, errlen);
    if (t->warmup_steps != spec->warmup)
        return mismatch(name, "warmup_steps", t->warmup_steps, spec->warmup, "were", err, errlen);
    if (strcmp(t->precision, spec->precision))
        return tb_err(err, errlen, "%s: field 'precision': %s, but %s was asked", name,
                      t->precision, spec->precision);
    if (strcmp(o->device, TB_TORCH_DEVICE_AUTO) && strcmp(o->device, t->device))
        return tb_err(err, errlen, "%s: field 'device': %s, but %s was asked", name, t->device,
                      o->device);
    if (!close_to((double)spec->batch * spec->seq_in, t->tokens_per_step))
        return tb_err(err, errlen, "%s: field 'tokens_per_step': %.17g, but batch x seq is %ld",
                      name, t->tokens_per_step, (long)spec->batch * spec->seq_in);
    flops = tb_flops_train(arch, spec->batch, spec->seq_in);
    if (!close_to(flops, t->flops_per_step))
        return tb_err(err, errlen,
                      "%s: field 'flops_per_step': %.6g, but trnbench counts %.6g for a training "
                      "step of %s (the script read the model differently)",
                      name, t->flops_per_step, flops, arch->name);
    if (t->nsteps != total)
        return tb_err(err, errlen, "%s: %d of the %d steps reported", name, t->nsteps, total);
    if (!t->have_end)
        return tb_err(err, errlen, "%s: no end line after the last step", name);
    return 0;
}

int tb_train_loss_fell(const struct tb_train_report *t, double *before, double *after)
{
    const int K = t->distinct_batches;
    double a = 0, b = 0;
    *before = *after = NAN;
    if (K < 1 || t->nsteps < 2 * K)
        return -1;
    for (int i = 0; i < K; i++) {
        a += t->loss[i];
        b += t->loss[t->nsteps - K + i];
    }
    /* the last window starts at a multiple of K when nsteps is one; otherwise it holds
     * the same K batches in another order: their mean compares either way */
    *before = a / K;
    *after = b / K;
    return *after < *before;
}

/* ---- running it ---- */

/* MAJOR.MINOR at the start of version; 0, or -1 when it does not start so. */
static int major_minor(const char *version, long *major, long *minor)
{
    char *end;
    if (!version || version[0] < '0' || version[0] > '9')
        return -1;
    *major = strtol(version, &end, 10);
    if (*end != '.' || end[1] < '0' || end[1] > '9')
        return -1;
    *minor = strtol(end + 1, NULL, 10);
    return 0;
}

const char *tb_torch_neuron_device(const char *torch_neuronx, const char *neuronx_cc, char *why,
                                   size_t whylen)
{
    long tmaj = 0, tmin = 0, cmaj = 0, cmin = 0;
    const bool have_t = major_minor(torch_neuronx, &tmaj, &tmin) == 0;
    const bool have_c = major_minor(neuronx_cc, &cmaj, &cmin) == 0;
    const bool native = have_t && (tmaj > 2 || (tmaj == 2 && tmin >= 10));
    const bool sdk230 = have_c && (cmaj > 2 || (cmaj == 2 && cmin >= 25));

    if (native) {
        snprintf(why, whylen,
                 "torch-neuronx %.40s is TorchNeuron (PyTorch %ld.%ld), the native device that "
                 "Neuron trains on from 2.30",
                 torch_neuronx, tmaj, tmin);
        return "neuron";
    }
    if (sdk230) {
        snprintf(why, whylen,
                 "neuronx-cc %.40s is Neuron 2.30 or later, which trains on TorchNeuron's native "
                 "device; %s%.40s%s",
                 neuronx_cc, have_t ? "torch-neuronx " : "no torch-neuronx found",
                 have_t ? torch_neuronx : "",
                 have_t ? " is PyTorch/XLA, no longer supported for training there "
                          "(torch_device=xla runs it anyway)"
                        : "");
        return "neuron";
    }
    if (have_t) {
        snprintf(why, whylen, "torch-neuronx %.40s is PyTorch/XLA (PyTorch %ld.%ld) %s%.40s%s",
                 torch_neuronx, tmaj, tmin, have_c ? "with neuronx-cc " : "",
                 have_c ? neuronx_cc : "",
                 have_c ? ", Neuron 2.29 or before: the XLA path"
                        : "and no neuronx-cc was found to date the SDK: the XLA path");
        return "xla";
    }
    snprintf(why, whylen, "neither torch-neuronx (%.40s) nor neuronx-cc (%.40s) says which SDK",
             torch_neuronx && *torch_neuronx ? torch_neuronx : "not found",
             neuronx_cc && *neuronx_cc ? neuronx_cc : "not found");
    return NULL;
}

int tb_train_world(const struct tb_run_spec *spec)
{
    return spec->torch.nproc_per_node * (spec->torch.nnodes > 1 ? spec->torch.nnodes : 1);
}

int tb_train_script(const struct tb_run_spec *spec, char *path, size_t len, char *err,
                    size_t errlen)
{
    int n = spec->torch.script[0]
                ? snprintf(path, len, "%s", spec->torch.script)
                : snprintf(path, len, "%s/workloads/train/llama_train.py", tb_datadir());
    if (n < 0 || (size_t)n >= len)
        return tb_err(err, errlen, "training script name too long");
    return 0;
}

/* The last line of stderr that says something: the script's own ("llama_train: why",
 * its prefix dropped) when there is one, else the last line with a letter in it (not
 * torchrun's "=====" rules). */
static void reason_of(const char *tail, const char *script, char *out, size_t len)
{
    const char *base = strrchr(script, '/'), *p = tail, *mine = NULL, *any = NULL;
    size_t n, mine_len = 0, any_len = 0;
    base = base ? base + 1 : script;
    n = strcspn(base, ".");
    while (*p) {
        size_t l = strcspn(p, "\n");
        bool letter = false;
        for (size_t i = 0; i < l && !letter; i++)
            letter = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z');
        if (l > n + 2 && !strncmp(p, base, n) && !strncmp(p + n, ": ", 2)) {
            mine = p + n + 2;
            mine_len = l - n - 2;
        }
        if (letter) {
            any = p;
            any_len = l;
        }
        p += l + (p[l] == '\n');
    }
    if (mine)
        snprintf(out, len, "%.*s", (int)mine_len, mine);
    else if (any)
        snprintf(out, len, "%.*s", (int)any_len, any);
    else
        snprintf(out, len, "no message");
}

int tb_train_run(const struct tb_run_spec *spec, const struct tb_arch *arch, FILE *echo,
                 struct tb_train_report *t, char *msg, size_t msglen)
{
    const struct tb_torch_opts *o = &spec->torch;
    char script[PATH_MAX], launcher[PATH_MAX], name[96], how[160], reason[512], err[1024];
    char num[9][32];
    const char *argv[48], *base;
    struct tb_proc_opts po = {
        .timeout_s = o->timeout_s, .echo = echo, .echo_prefix = "  pytorch: "};
    struct tb_proc_result pr;
    int k = 0, rc = TB_TRAIN_FAILED, st;

    memset(t, 0, sizeof *t);
    memset(&pr, 0, sizeof pr);
    if (tb_train_script(spec, script, sizeof script, msg, msglen) != 0)
        return TB_TRAIN_FAILED;
    if ((size_t)snprintf(launcher, sizeof launcher, "%s/workloads/train/torchrun_compat.py",
                         tb_datadir()) >= sizeof launcher)
        return tb_err(msg, msglen, "data folder name too long"), TB_TRAIN_FAILED;
    if (!tb_file_exists(script))
        return tb_err(msg, msglen, "no training script '%s'", script), TB_TRAIN_FAILED;
    snprintf(num[0], sizeof num[0], "%d", o->nproc_per_node);
    snprintf(num[1], sizeof num[1], "%d", arch->layers);
    snprintf(num[2], sizeof num[2], "%d", spec->batch / tb_train_world(spec));
    snprintf(num[3], sizeof num[3], "%d", spec->seq_in);
    snprintf(num[4], sizeof num[4], "%d", spec->reps);
    snprintf(num[5], sizeof num[5], "%d", spec->warmup);
    snprintf(num[6], sizeof num[6], "%llu", (unsigned long long)spec->seed);
    argv[k++] = o->python;
    argv[k++] = launcher;
    if (o->rdzv_endpoint[0]) {
        /* one node of several: the c10d rendezvous at the endpoint, the job's id */
        snprintf(num[7], sizeof num[7], "%d", o->nnodes > 1 ? o->nnodes : 1);
        snprintf(num[8], sizeof num[8], "%d", o->node_rank);
        argv[k++] = "--nnodes";
        argv[k++] = num[7];
        argv[k++] = "--node_rank";
        argv[k++] = num[8];
        argv[k++] = "--rdzv_backend";
        argv[k++] = "c10d";
        argv[k++] = "--rdzv_endpoint";
        argv[k++] = o->rdzv_endpoint;
        argv[k++] = "--rdzv_id";
        argv[k++] = o->rdzv_id;
    } else {
        argv[k++] = "--standalone";
    }
    argv[k++] = "--nproc_per_node";
    argv[k++] = num[0];
    argv[k++] = script;
    argv[k++] = "--model";
    argv[k++] = arch->path;
    if (arch->layers != arch->full_layers) {
        argv[k++] = "--layers";
        argv[k++] = num[1];
    }
    argv[k++] = "--batch";
    argv[k++] = num[2];
    argv[k++] = "--seq";
    argv[k++] = num[3];
    argv[k++] = "--steps";
    argv[k++] = num[4];
    argv[k++] = "--warmup-steps";
    argv[k++] = num[5];
    argv[k++] = "--precision";
    argv[k++] = spec->precision;
    argv[k++] = "--device";
    argv[k++] = o->device;
    argv[k++] = "--seed";
    argv[k++] = num[6];
    argv[k] = NULL;

    if (tb_proc_run(argv, &po, &pr, err, sizeof err) != 0) {
        tb_err(msg, msglen, "pytorch: %s", err);
        goto out;
    }
    base = strrchr(script, '/');
    snprintf(name, sizeof name, "%.80s output", base ? base + 1 : script);
    reason_of(pr.err_tail, script, reason, sizeof reason);
    if (pr.exec_errno) {
        tb_err(msg, msglen, "cannot run '%s': %s", o->python, strerror(pr.exec_errno));
        rc = TB_TRAIN_UNAVAILABLE;
        goto out;
    }
    st = tb_train_parse(t, name, pr.out ? pr.out : "", pr.out_len, err, sizeof err);
    if (pr.timed_out) {
        tb_proc_describe(&pr, o->timeout_s, how, sizeof how);
        tb_err(msg, msglen, "'%s %s' %s, %d of %d steps reported (train_timeout)", o->python,
               script, how, t->nsteps, spec->warmup + spec->reps);
        goto out;
    }
    if (st == TB_TRAIN_UNAVAILABLE) {
        tb_err(msg, msglen, "%s", err);
        rc = TB_TRAIN_UNAVAILABLE;
        goto out;
    }
    if (pr.exit_status != 0 || pr.term_signal) {
        /* torch itself missing: the launcher's import fails before the script runs */
        if (strstr(pr.err_tail, "No module named 'torch'") ||
            strstr(pr.err_tail, "No module named torch")) {
            tb_err(msg, msglen,
                   "torch does not import in '%s' (install it: Debian's "
                   "python3-torch, pip's torch, or torch-neuronx on Neuron)",
                   o->python);
            rc = TB_TRAIN_UNAVAILABLE;
        } else if (st == TB_TRAIN_FAILED) {
            tb_err(msg, msglen, "%s", err);
        } else {
            tb_proc_describe(&pr, o->timeout_s, how, sizeof how);
            tb_err(msg, msglen, "'%s %s' %s: %s", o->python, script, how, reason);
        }
        goto out;
    }
    if (st != TB_TRAIN_OK) {
        tb_err(msg, msglen, "%s", err);
        goto out;
    }
    if (o->rdzv_endpoint[0] && !t->have_start && t->nsteps == 0 && !t->have_end) {
        /* a node without the script's rank 0: it trained, another node reports */
        tb_err(msg, msglen,
               "this node's %d process%s trained; the script's rank 0 ran on another node, "
               "whose launch records the rows",
               o->nproc_per_node, o->nproc_per_node == 1 ? "" : "es");
        rc = TB_TRAIN_ELSEWHERE;
        goto out;
    }
    if (tb_train_check(t, name, spec, arch, msg, msglen) != 0)
        goto out;
    rc = TB_TRAIN_OK;
out:
    if (rc != TB_TRAIN_OK)
        tb_train_report_release(t);
    tb_proc_result_release(&pr);
    return rc;
}
