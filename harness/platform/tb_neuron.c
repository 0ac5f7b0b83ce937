/* harness/platform/tb_neuron.c: see tb_neuron.h. */
#include "tb_neuron.h"

#include "tb_platform.h"
#include "tb_proc.h"
#include "tb_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the tools ---- */

/* Whether dir/name is an executable regular file; its path into buf. */
static bool executable_in(const char *dir, size_t dlen, const char *name, char *buf, size_t len)
{
    struct stat st;
    if (dlen == 0) /* an empty PATH entry is the current folder: not looked in */
        return false;
    if ((size_t)snprintf(buf, len, "%.*s/%s", (int)dlen, dir, name) >= len)
        return false;
    return stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0;
}

bool tb_neuron_tool_find(const char *name, char *buf, size_t len)
{
    const char *path = getenv("PATH");
    const char *dir = TB_NEURON_TOOLS_DIR;

    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (executable_in(path, n, name, buf, len))
            return true;
        path += n + (path[n] == ':');
    }
    if (executable_in(dir, strlen(dir), name, buf, len))
        return true;
    if (len)
        buf[0] = '\0';
    return false;
}

int tb_neuron_logical_per_device(const struct tb_platform *p, int *lnc)
{
    const char *env = getenv("NEURON_LOGICAL_NC_CONFIG");
    int l = strstr(p->neuron_name, "Trainium2") || strstr(p->neuron_name, "Trainium3") ? 2 : 1;
    if (env && (!strcmp(env, "1") || !strcmp(env, "2")))
        l = env[0] - '0';
    if (lnc)
        *lnc = l;
    if (p->neuron_devices <= 0 || p->neuron_cores <= 0)
        return 0;
    return p->neuron_cores / p->neuron_devices / l;
}

void tb_neuron_lnc_resolve(const struct tb_neuron *n, const struct tb_platform *p,
                           struct tb_neuron_lnc *out)
{
    const char *env = getenv("NEURON_LOGICAL_NC_CONFIG");
    bool env_ok = env && (!strcmp(env, "1") || !strcmp(env, "2"));
    int devices = p->neuron_devices;

    memset(out, 0, sizeof *out);
    if (n && !strcmp(n->source, "neuron-ls") && n->logical_nc_config > 0) {
        out->lnc = n->logical_nc_config;
        out->per_device = n->ndevices > 0 ? n->ncores / n->ndevices : 0;
        snprintf(out->source, sizeof out->source, "neuron-ls");
        snprintf(out->how, sizeof out->how,
                 "LNC %d as neuron-ls states it (logical_neuroncore_config)%s%s%s", out->lnc,
                 env_ok && env[0] - '0' != out->lnc ? "; NEURON_LOGICAL_NC_CONFIG=" : "",
                 env_ok && env[0] - '0' != out->lnc ? env : "",
                 env_ok && env[0] - '0' != out->lnc ? " here differs" : "");
        return;
    }
    if (devices <= 0 && n && n->ndevices > 0)
        devices = n->ndevices;
    if (devices <= 0) {
        snprintf(out->source, sizeof out->source, "none");
        snprintf(out->how, sizeof out->how, "no LNC: no Neuron device seen");
        return;
    }
    out->per_device = tb_neuron_logical_per_device(p, &out->lnc);
    if (env_ok) {
        snprintf(out->source, sizeof out->source, "NEURON_LOGICAL_NC_CONFIG");
        snprintf(out->how, sizeof out->how,
                 "LNC %d guessed from NEURON_LOGICAL_NC_CONFIG (neuron-ls stated none)", out->lnc);
    } else {
        snprintf(out->source, sizeof out->source, "default");
        snprintf(out->how, sizeof out->how,
                 "LNC %d guessed: the Neuron SDK's default on %s (neuron-ls stated none, "
                 "NEURON_LOGICAL_NC_CONFIG unset)",
                 out->lnc, p->neuron_name[0] ? p->neuron_name : "this Neuron device");
    }
}

bool tb_neuron_stand_in_allowed(void)
{
    const char *test = getenv("TRNBENCH_TEST");
    return test && strcmp(test, "1") == 0;
}

void tb_neuron_unused_reason(const char *what, const char *sdk, char *buf, size_t len)
{
    char tool[1024];
    bool tools = tb_neuron_tool_find("neuron-ls", tool, sizeof tool);

    if (!tools && (!sdk || !*sdk))
        snprintf(buf, len,
                 "%s: no Neuron SDK found (no neuron-ls on PATH or in " TB_NEURON_TOOLS_DIR
                 ", no Neuron package in the Python environments or dpkg's status); use the "
                 "Neuron DLAMI's virtual environment, or install aws-neuronx-dkms, "
                 "aws-neuronx-runtime-lib and aws-neuronx-tools from AWS's apt repository "
                 "(https://apt.repos.neuron.amazonaws.com)",
                 what);
    else {
        static const char prefix[] = "Neuron SDK: ";
        const char *parts = sdk && *sdk ? sdk : "";
        if (!strncmp(parts, prefix, sizeof prefix - 1))
            parts += sizeof prefix - 1;
        snprintf(buf, len,
                 "%s: the Neuron SDK is installed (%.300s%s%.300s), but trnbench's own engines "
                 "do not run on Neuron devices: serve on them with trnbench run --recipe vllm "
                 "(vLLM with vllm-neuron), or measure a Neuron server with --endpoint",
                 what, *parts ? parts : "no Python package", tools ? "; neuron-ls " : "",
                 tools ? tool : "");
    }
}

/* ---- neuron-ls --json-output ---- */

/* An integer member of o in [lo, hi] into *out: 1 found, 0 absent or null, -1 another
 * type or out of range. */
static int get_int(const json_t *o, const char *key, json_int_t lo, json_int_t hi, json_int_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = json_integer_value(v);
    return 1;
}

/* A string member of o into buf ("" when absent or not a string). */
static void get_str(const json_t *o, const char *key, char *buf, size_t len)
{
    const json_t *v = json_object_get(o, key);
    snprintf(buf, len, "%s", json_is_string(v) ? json_string_value(v) : "");
}

static int parse_device(struct tb_neuron *n, const json_t *o, size_t i, char *err, size_t errlen)
{
    struct tb_neuron_device *d = &n->dev[n->ndevices];
    const json_t *links, *procs;
    json_int_t v = 0;
    size_t k;

    if (!json_is_object(o))
        return tb_err(err, errlen, "entry %zu: not a JSON object", i);
    if (json_object_get(o, TB_NEURON_STAND_IN_KEY))
        n->stand_in = true;
    memset(d, 0, sizeof *d);
    if (get_int(o, "neuron_device", 0, 1 << 20, &v) != 1)
        return tb_err(err, errlen, "entry %zu: no integer 'neuron_device'", i);
    d->index = (int)v;
    if (get_int(o, "nc_count", 0, 4096, &v) != 1)
        return tb_err(err, errlen, "device %d: no integer 'nc_count'", d->index);
    d->nc_count = (int)v;
    v = 0;
    if (get_int(o, "memory_size", 0, INT64_MAX, &v) < 0)
        return tb_err(err, errlen, "device %d: 'memory_size' is not a byte count", d->index);
    d->memory_bytes = (uint64_t)v;
    v = 0;
    if (get_int(o, "logical_neuroncore_config", 0, 64, &v) < 0)
        return tb_err(err, errlen, "device %d: 'logical_neuroncore_config' is not a small integer",
                      d->index);
    if (v > 0)
        n->logical_nc_config = (int)v;
    get_str(o, "bdf", d->bdf, sizeof d->bdf);
    if (!n->instance_type[0])
        get_str(o, "instance_type", n->instance_type, sizeof n->instance_type);
    if (!n->instance_id[0])
        get_str(o, "instance_id", n->instance_id, sizeof n->instance_id);

    links = json_object_get(o, "connected_to");
    if (links && !json_is_null(links) && !json_is_array(links))
        return tb_err(err, errlen, "device %d: 'connected_to' is not a list", d->index);
    for (k = 0; json_is_array(links) && k < json_array_size(links); k++) {
        const json_t *l = json_array_get(links, k);
        if (!json_is_integer(l))
            return tb_err(err, errlen, "device %d: 'connected_to' holds a non-integer", d->index);
        if (d->nlinks < TB_NEURON_MAX_LINKS)
            d->links[d->nlinks++] = (int)json_integer_value(l);
    }

    procs = json_object_get(o, "neuron_processes");
    for (k = 0; json_is_array(procs) && k < json_array_size(procs); k++) {
        const json_t *p = json_array_get(procs, k);
        d->nprocesses++;
        if (!d->runtime_version[0] && json_is_object(p))
            get_str(p, "neuron_runtime_version", d->runtime_version, sizeof d->runtime_version);
    }

    for (int j = 0; j < n->ndevices; j++)
        if (n->dev[j].index == d->index)
            return tb_err(err, errlen, "device %d is listed twice", d->index);
    n->ndevices++;
    n->ncores += d->nc_count;
    n->memory_bytes += d->memory_bytes;
    return 0;
}

int tb_neuron_ls_parse(struct tb_neuron *n, const char *json, size_t len, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root;
    int rc = -1;

    memset(n, 0, sizeof *n);
    snprintf(n->source, sizeof n->source, "neuron-ls");
    root = json_loadb(json, len, 0, &jerr);
    if (!root)
        return tb_err(err, errlen, "not JSON: line %d column %d: %s", jerr.line, jerr.column,
                      jerr.text);
    if (!json_is_array(root)) {
        tb_err(err, errlen, "not a JSON array of devices (a JSON %s)",
               json_is_object(root) ? "object" : "value");
        goto out;
    }
    if (json_array_size(root) > TB_NEURON_MAX_DEVICES) {
        tb_err(err, errlen, "%zu devices, more than the %d trnbench reads", json_array_size(root),
               TB_NEURON_MAX_DEVICES);
        goto out;
    }
    for (size_t i = 0; i < json_array_size(root); i++)
        if (parse_device(n, json_array_get(root, i), i, err, errlen) != 0)
            goto out;
    /* by index: neuron-ls's order is its own business */
    for (int i = 1; i < n->ndevices; i++) {
        struct tb_neuron_device d = n->dev[i];
        int j = i;
        for (; j > 0 && n->dev[j - 1].index > d.index; j--)
            n->dev[j] = n->dev[j - 1];
        n->dev[j] = d;
    }
    rc = 0;
out:
    json_decref(root);
    if (rc != 0) {
        bool stand_in = n->stand_in;
        memset(n, 0, sizeof *n);
        n->stand_in = stand_in;
    }
    return rc;
}

/* n from the sysfs facts of p. */
static void from_sysfs(struct tb_neuron *n, const struct tb_platform *p)
{
    memset(n, 0, sizeof *n);
    n->ndevices = p->neuron_devices;
    n->ncores = p->neuron_cores;
    snprintf(n->device_name, sizeof n->device_name, "%s", p->neuron_name);
    snprintf(n->source, sizeof n->source, "%s", n->ndevices > 0 ? "sysfs" : "none");
}

int tb_neuron_detect(struct tb_neuron *n, const struct tb_platform *p, double timeout_s, char *err,
                     size_t errlen)
{
    struct tb_neuron ls;
    struct tb_proc_opts o = {0};
    struct tb_proc_result r;
    char tool[512], e[256] = "", how[160], last[200];
    const char *argv[3];
    int rc = 0, parsed;

    from_sysfs(n, p);
    if (p->root[0] && !p->simulated) {
        snprintf(n->why, sizeof n->why,
                 "not run: the facts come from the tree '%.300s', and neuron-ls would "
                 "describe this machine",
                 p->root);
        return 0;
    }
    if (!tb_neuron_tool_find("neuron-ls", tool, sizeof tool)) {
        snprintf(n->why, sizeof n->why, "no neuron-ls on PATH or in " TB_NEURON_TOOLS_DIR);
        return 0;
    }
    o.timeout_s = timeout_s > 0 ? timeout_s : TB_NEURON_LS_TIMEOUT_S;
    o.grace_s = 1.0;
    argv[0] = tool;
    argv[1] = "--json-output";
    argv[2] = NULL;
    if (tb_proc_run(argv, &o, &r, e, sizeof e) != 0) {
        snprintf(n->why, sizeof n->why, "'%.300s --json-output': %s", tool, e);
        tb_proc_result_release(&r);
        return 0;
    }
    tb_proc_last_line(r.err_tail, last, sizeof last);
    if (r.exec_errno || r.timed_out || r.term_signal || r.exit_status != 0) {
        tb_proc_describe(&r, o.timeout_s, how, sizeof how);
        snprintf(n->why, sizeof n->why, "'%.300s --json-output' %s%s%s", tool, how,
                 last[0] ? ": " : "", last);
        goto out;
    }
    parsed = tb_neuron_ls_parse(&ls, r.out, r.out_len, e, sizeof e);
    if (ls.stand_in && !tb_neuron_stand_in_allowed()) {
        snprintf(n->why, sizeof n->why,
                 "'%.300s' is a stand-in for trnbench's own tests (its output carries \"%s\"), "
                 "refused outside them (no TRNBENCH_TEST=1): take it off PATH",
                 tool, TB_NEURON_STAND_IN_KEY);
        rc = tb_err(err, errlen, "%s", n->why);
    } else if (parsed != 0) {
        snprintf(n->why, sizeof n->why, "'%.300s --json-output' printed no device list: %s", tool,
                 e);
    } else if (ls.ndevices == 0) {
        snprintf(n->why, sizeof n->why, "'%.300s --json-output' listed no Neuron device", tool);
    } else {
        snprintf(ls.device_name, sizeof ls.device_name, "%s", n->device_name);
        snprintf(ls.neuron_ls, sizeof ls.neuron_ls, "%s", tool);
        *n = ls;
    }
out:
    tb_proc_result_release(&r);
    return rc;
}

/* ---- descriptions ---- */

static void gib(uint64_t bytes, char *buf, size_t len)
{
    double g = (double)bytes / (1024.0 * 1024.0 * 1024.0);
    if (g == (double)(uint64_t)g)
        snprintf(buf, len, "%.0f GiB", g);
    else
        snprintf(buf, len, "%.1f GiB", g);
}

void tb_neuron_describe(const struct tb_neuron *n, char *buf, size_t len)
{
    char cores[80] = "", mem[64] = "";
    const char *name = n->device_name[0] ? n->device_name : "Neuron";

    if (n->ndevices == 0) {
        snprintf(buf, len, "none");
        return;
    }
    if (n->ncores > 0 && strcmp(n->source, "neuron-ls") == 0 && n->logical_nc_config > 0)
        snprintf(cores, sizeof cores, ", %d NeuronCores (logical, LNC %d)", n->ncores,
                 n->logical_nc_config);
    else if (n->ncores > 0)
        snprintf(cores, sizeof cores, ", %d NeuronCores", n->ncores);
    if (n->memory_bytes) {
        char g[32];
        gib(n->memory_bytes, g, sizeof g);
        snprintf(mem, sizeof mem, ", %s device memory", g);
    }
    snprintf(buf, len, "%d %s device%s%s%s (%s)", n->ndevices, name, n->ndevices == 1 ? "" : "s",
             cores, mem, n->source);
}

void tb_neuron_device_describe(const struct tb_neuron_device *d, char *buf, size_t len)
{
    size_t used;

    snprintf(buf, len, "%d NeuronCore%s", d->nc_count, d->nc_count == 1 ? "" : "s");
#define TB_APPEND(...)                                                                             \
    do {                                                                                           \
        used = strlen(buf);                                                                        \
        if (used < len)                                                                            \
            snprintf(buf + used, len - used, __VA_ARGS__);                                         \
    } while (0)
    if (d->memory_bytes) {
        char g[32];
        gib(d->memory_bytes, g, sizeof g);
        TB_APPEND(", %s", g);
    }
    if (d->bdf[0])
        TB_APPEND(", PCI %s", d->bdf);
    for (int i = 0; i < d->nlinks; i++)
        TB_APPEND("%s%d", i == 0 ? ", linked to " : " ", d->links[i]);
    if (d->nprocesses)
        TB_APPEND(", %d process%s", d->nprocesses, d->nprocesses == 1 ? "" : "es");
    if (d->runtime_version[0])
        TB_APPEND(" (runtime %s)", d->runtime_version);
#undef TB_APPEND
}

void tb_neuron_each(const struct tb_neuron *n,
                    void (*fn)(const char *key, const char *value, void *ctx), void *ctx)
{
    char v[700], key[48];

    if (n->neuron_ls[0])
        snprintf(v, sizeof v, "neuron-ls (%.500s)%s", n->neuron_ls,
                 n->stand_in ? ", a test stand-in" : "");
    else
        snprintf(v, sizeof v, "%s", n->source);
    fn("neuron_source", v, ctx);
    if (n->why[0])
        fn("neuron_ls_not_used", n->why, ctx);
    tb_neuron_describe(n, v, sizeof v);
    fn("neuron", v, ctx);
    if (n->instance_type[0])
        fn("neuron_instance_type", n->instance_type, ctx);
    if (n->logical_nc_config > 0) {
        snprintf(v, sizeof v, "%d", n->logical_nc_config);
        fn("neuron_lnc_config", v, ctx);
    }
    if (strcmp(n->source, "neuron-ls") != 0)
        return;
    for (int i = 0; i < n->ndevices; i++) {
        snprintf(key, sizeof key, "neuron_device_%d", n->dev[i].index);
        tb_neuron_device_describe(&n->dev[i], v, sizeof v);
        fn(key, v, ctx);
    }
}
