/*
 * harness/import/tb_import.c: see tb_import.h. The file is read whole, hashed, parsed by
 * jansson; each format's reader then checks every field it uses (present, a number,
 * finite, in a sane range, consistent with the file's other figures) before it makes a
 * single row, so a bad file leaves nothing behind. Rows are built as "figures" (a
 * metric with its p50, p90, p99 and spread) of a "level" (one run: a phase, a shape, a
 * load), then turned into results.csv cells in one place (push_row).
 *
 * Sources of each format's definitions are in tb_import.h; the mapping tables are in
 * README.md ("Importing a team's measurements").
 */
#include "tb_import.h"

#include "tb_flops.h"
#include "tb_suite.h"
#include "tb_util.h"
#include "tb_vocab.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- formats ---- */

static const char *const FORMAT_NAMES[TB_IMPORT_NFORMATS] = {"vllm", "nxdi", "llmperf",
                                                             "llmperf-upstream", "torchtitan"};
static const char *const FORMAT_TOOLS[TB_IMPORT_NFORMATS] = {
    "vLLM bench serve",
    "NxD Inference benchmark_sampling (inference_demo --benchmark)",
    "LLMPerf with Neuron's neuron_perf.patch",
    "LLMPerf (ray-project, unpatched)",
    "TorchTitan (its training log's metrics lines)",
};

const char *tb_import_format_to_string(enum tb_import_format f)
{
    return (unsigned)f < TB_IMPORT_NFORMATS ? FORMAT_NAMES[f] : "unknown";
}

int tb_import_format_from_string(const char *s, enum tb_import_format *f)
{
    for (int i = 0; i < TB_IMPORT_NFORMATS; i++)
        if (!strcmp(s, FORMAT_NAMES[i])) {
            *f = (enum tb_import_format)i;
            return 0;
        }
    return -1;
}

const char *tb_import_format_tool(enum tb_import_format f)
{
    return (unsigned)f < TB_IMPORT_NFORMATS ? FORMAT_TOOLS[f] : "unknown";
}

int tb_import_check_date(const char *s)
{
    static const int DAYS[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, m, d, n = 0;
    if (strlen(s) != 10 || sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &n) != 3 || n != 10 ||
        s[4] != '-' || s[7] != '-' || y < 1970 || m < 1 || m > 12 || d < 1 || d > DAYS[m - 1])
        return 0;
    if (m == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 0;
    return 1;
}

/* ---- the file: read, hashed, parsed ---- */

/* The context of one file's import: where errors go and what every row shares. */
struct ictx {
    const char *path;
    const struct tb_import_opts *o;
    enum tb_import_format f;
    char *err;
    size_t errlen;
    char timestamp[40]; /* when it was measured (results' timestamp), or "" */
    char date[80];      /* the same, for the provenance note */
    char source[700];
    char prov[900]; /* the notes' opening: who, when, with what; not run by trnbench */
    char target[64], precision[8], chips[16], layers[16];
};

/* FNV-1a, 64 bits: a content id, not a defence against anyone. */
static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The key of the nearest '"KEY":' at or before pos in text, into buf ("" if none):
 * where a parse error is, in the file's words. */
static void key_near(const char *text, size_t len, size_t pos, char *buf, size_t blen)
{
    size_t i = pos < len ? pos : len;
    buf[0] = '\0';
    while (i > 0) {
        size_t e, s;
        i--;
        if (text[i] != ':')
            continue;
        e = i;
        while (e > 0 && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\n' ||
                         text[e - 1] == '\r'))
            e--;
        if (e == 0 || text[e - 1] != '"')
            continue;
        s = e - 1;
        while (s > 0 && text[s - 1] != '"')
            s--;
        if (s == 0)
            return;
        snprintf(buf, blen, "%.*s", (int)(e - 1 - s), text + s);
        return;
    }
}

/* Read path, hash it and parse it. Returns the document (an object), or NULL with an
 * error naming the file, the line and column, and the field nearest. */
static json_t *load_json(const char *path, char hash[17], char *err, size_t errlen)
{
    char *data = NULL, key[128];
    size_t len = 0;
    json_error_t je;
    json_t *root;

    if (tb_read_file(path, &data, &len, err, errlen) != 0)
        return NULL;
    snprintf(hash, 17, "%016llx", (unsigned long long)fnv1a(data, len));
    root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        key_near(data, len, (size_t)(je.position > 0 ? je.position : 0), key, sizeof key);
        if (strstr(je.text, "'NaN'") || strstr(je.text, "Infinity") || strstr(je.text, "near '-'"))
            tb_err(err, errlen,
                   "%s: line %d, column %d: field '%s': not a number: NaN or Infinity (JSON has "
                   "no such numbers; the tool wrote a statistic it could not compute)",
                   path, je.line, je.column, key);
        else
            tb_err(err, errlen, "%s: line %d, column %d: not valid JSON (%s)%s%s%s", path, je.line,
                   je.column, je.text, key[0] ? ", after field '" : "", key, key[0] ? "'" : "");
        free(data);
        return NULL;
    }
    free(data);
    if (!json_is_object(root)) {
        json_decref(root);
        tb_err(err, errlen, "%s: not a JSON object at the top (every format imported is one)",
               path);
        return NULL;
    }
    return root;
}

/* ---- fields ---- */

/* What a number may be: within [lo, hi] (above lo when positive), whole when whole. */
struct range {
    double lo, hi;
    bool positive, whole;
    const char *unit;
};
static const struct range R_MS = {0, 1e8, false, false, "ms"};        /* 28 hours */
static const struct range R_MS_POS = {0, 1e8, true, false, "ms"};     /* a latency measured */
static const struct range R_S = {0, 1e5, false, false, "s"};          /* 28 hours */
static const struct range R_DURATION = {0, 1e7, true, false, "s"};    /* 116 days */
static const struct range R_TOKS = {0, 1e9, true, false, "tokens/s"}; /* any fleet */
static const struct range R_REQS = {0, 1e7, true, false, "requests/s"};
static const struct range R_PER_MIN = {0, 6e8, true, false, "requests/min"};
static const struct range R_COUNT = {0, 1e12, false, true, ""};
static const struct range R_COUNT1 = {0, 1e12, true, true, ""};
static const struct range R_LEN = {0, 1e7, true, false, "tokens"};   /* a mean length */
static const struct range R_SD = {0, 1e7, false, false, "tokens"};   /* a length's spread */
static const struct range R_LEN1 = {0, 1e7, true, true, "tokens"};   /* a length asked */
static const struct range R_CONC = {0, 1e6, true, true, "requests"}; /* requests in flight */

/* A JSON value's kind, for "not a number: a string" messages. */
static const char *kind_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    default:
        return "a number";
    }
}

/* The number at key of obj ("prefix.key" in messages; prefix NULL at the top) into
 * *out. Returns 1 when read, 0 when absent (or null) and not required, -1 with an
 * error: missing, not a number, out of r. */
static int num(struct ictx *c, const json_t *obj, const char *prefix, const char *key,
               bool required, const struct range *r, double *out)
{
    const json_t *v = json_object_get(obj, key);
    char name[160];
    double x;
    snprintf(name, sizeof name, "%s%s%s", prefix ? prefix : "", prefix ? "." : "", key);
    *out = NAN;
    if (!v || (json_is_null(v) && !required))
        return required ? tb_err(c->err, c->errlen, "%s: field '%s': missing (a %s file has it)",
                                 c->path, name, FORMAT_NAMES[c->f])
                        : 0;
    if (!json_is_number(v)) {
        if (json_is_string(v))
            return tb_err(c->err, c->errlen, "%s: field '%s': not a number: a string \"%.40s\"",
                          c->path, name, json_string_value(v));
        return tb_err(c->err, c->errlen, "%s: field '%s': not a number: %s", c->path, name,
                      kind_of(v));
    }
    x = json_number_value(v);
    if (!isfinite(x))
        return tb_err(c->err, c->errlen, "%s: field '%s': not finite", c->path, name);
    if (x < 0 && r->lo >= 0)
        return tb_err(c->err, c->errlen, "%s: field '%s': negative: %g", c->path, name, x);
    if (x < r->lo || (r->positive && x <= r->lo))
        return tb_err(c->err, c->errlen, "%s: field '%s': %g: must be above %g%s%s", c->path, name,
                      x, r->lo, *r->unit ? " " : "", r->unit);
    if (x > r->hi)
        return tb_err(c->err, c->errlen, "%s: field '%s': absurd: %g (more than %g%s%s)", c->path,
                      name, x, r->hi, *r->unit ? " " : "", r->unit);
    if (r->whole && x != floor(x))
        return tb_err(c->err, c->errlen, "%s: field '%s': not a whole number: %g", c->path, name,
                      x);
    *out = x;
    return 1;
}

/* The string at key of obj into buf, or "" when absent or null; -1 when not a string. */
static int str(struct ictx *c, const json_t *obj, const char *key, char *buf, size_t len)
{
    const json_t *v = json_object_get(obj, key);
    buf[0] = '\0';
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return tb_err(c->err, c->errlen, "%s: field '%s': not a string: %s", c->path, key,
                      kind_of(v));
    snprintf(buf, len, "%s", json_string_value(v));
    return 1;
}

/* Two figures of the file that must agree (its throughput against its own counts): -1
 * with an error naming the field when they differ by more than rel. */
static int agree(struct ictx *c, const char *name, double got, double want, double rel,
                 const char *how)
{
    if (fabs(got - want) <= rel * fabs(want))
        return 0;
    return tb_err(c->err, c->errlen, "%s: field '%s': %.10g disagrees with %s = %.10g", c->path,
                  name, got, how, want);
}

/* lo <= hi for two percentiles of one distribution (NAN: not given). */
static int ordered(struct ictx *c, const char *lo_name, double lo, const char *hi_name, double hi)
{
    if (isnan(lo) || isnan(hi) || lo <= hi)
        return 0;
    return tb_err(c->err, c->errlen, "%s: field '%s': %g is below %s (%g): not a distribution",
                  c->path, hi_name, hi, lo_name, lo);
}

/* ---- rows ---- */

/* One run of the file: a phase at a shape and load. */
struct level {
    const char *phase;     /* "serve", "prefill", "decode" */
    long batch;            /* 0: none (an open loop) */
    long seq_in, seq_out;  /* seq_out 0: none (prefill) */
    long concurrency;      /* results' concurrency; 0: none */
    char request_rate[32]; /* results' request_rate; "": none */
    char run_id[320], workload[200], config[200];
    char note[600]; /* the shape and load in the file's words, for every row's notes */
};

/* One metric of a level. */
struct fig {
    const char *metric;                             /* tb_vocab.h */
    double value, p90, p99, mean, min, max, stddev; /* NAN: empty */
    long n;                                         /* -1: empty */
    char notes[900];
};

static void fig_init(struct fig *g, const char *metric)
{
    memset(g, 0, sizeof *g);
    g->metric = metric;
    g->value = g->p90 = g->p99 = g->mean = g->min = g->max = g->stddev = NAN;
    g->n = -1;
}

static char *fmt_num(double v)
{
    char b[40];
    if (isnan(v))
        return NULL;
    snprintf(b, sizeof b, "%.10g", v);
    return tb_strdup(b);
}

static char *fmt_long(long v)
{
    char b[32];
    if (v <= 0)
        return NULL;
    snprintf(b, sizeof b, "%ld", v);
    return tb_strdup(b);
}

static void skip_note(struct tb_import *im, const char *fmt, ...) TB_PRINTF(2, 3);
static void skip_note(struct tb_import *im, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tb_lines_vadd(im->skipped, sizeof im->skipped, fmt, ap);
    va_end(ap);
}

/* Append the row of figure g of level lv. Returns 0 or -1 (out of memory). */
static int push_row(struct tb_import *im, struct ictx *c, const struct level *lv,
                    const struct fig *g)
{
    const struct tb_metric *m = tb_metric_find(g->metric);
    char **s, notes[2600];
    bool known = false;
    size_t used;

    TB_ASSERT(m && !isnan(g->value));
    if (im->nrows == im->cap) {
        size_t cap = im->cap ? 2 * im->cap : 16;
        struct tb_result_row *rows = realloc(im->rows, cap * sizeof *rows);
        char **strs;
        if (!rows)
            return tb_err(c->err, c->errlen, "out of memory");
        im->rows = rows;
        strs = realloc(im->strs, cap * TB_RESULTS_NCOLS * sizeof *strs);
        if (!strs)
            return tb_err(c->err, c->errlen, "out of memory");
        im->strs = strs;
        im->cap = cap;
    }
    s = &im->strs[im->nrows * TB_RESULTS_NCOLS];
    memset(s, 0, TB_RESULTS_NCOLS * sizeof *s);
    used = (size_t)snprintf(notes, sizeof notes, "%s; %s", c->prov, g->notes);
    if (lv->note[0] && used < sizeof notes)
        snprintf(notes + used, sizeof notes - used, "; %s", lv->note);
    s[TB_COL_RUN_ID] = tb_strdup(lv->run_id);
    s[TB_COL_PROVENANCE] = tb_strdup("measured");
    s[TB_COL_TARGET] = tb_strdup(c->target);
    s[TB_COL_INSTANCES] = tb_strdup("1");
    s[TB_COL_HOST] = tb_strdup("unknown (imported)");
    s[TB_COL_EXECUTOR] = tb_strdup("import");
    s[TB_COL_MODEL] = tb_strdup(c->o->arch->name);
    s[TB_COL_LAYERS] = tb_strdup(c->layers);
    s[TB_COL_PHASE] = tb_strdup(lv->phase);
    s[TB_COL_PRECISION] = tb_strdup(c->precision);
    s[TB_COL_BATCH] = fmt_long(lv->batch);
    s[TB_COL_SEQ_IN] = fmt_long(lv->seq_in);
    s[TB_COL_SEQ_OUT] = fmt_long(lv->seq_out);
    s[TB_COL_METRIC] = tb_strdup(g->metric);
    s[TB_COL_VALUE] = fmt_num(g->value);
    s[TB_COL_UNIT] = tb_strdup(m->unit);
    s[TB_COL_N] = fmt_long(g->n);
    s[TB_COL_MIN] = fmt_num(g->min);
    s[TB_COL_MAX] = fmt_num(g->max);
    s[TB_COL_MEAN] = fmt_num(g->mean);
    s[TB_COL_STDDEV] = fmt_num(g->stddev);
    s[TB_COL_TIMESTAMP] = c->timestamp[0] ? tb_strdup(c->timestamp) : NULL;
    s[TB_COL_SOURCE] = tb_strdup(c->source);
    s[TB_COL_NOTES] = tb_strdup(notes);
    s[TB_COL_CHIPS_USED] = c->chips[0] ? tb_strdup(c->chips) : NULL;
    s[TB_COL_WORKLOAD] = tb_strdup(lv->workload);
    s[TB_COL_CONFIG] = tb_strdup(lv->config);
    s[TB_COL_DEVICE] = tb_strdup("unknown (imported)");
    s[TB_COL_CONCURRENCY] = fmt_long(lv->concurrency);
    s[TB_COL_REQUEST_RATE] = lv->request_rate[0] ? tb_strdup(lv->request_rate) : NULL;
    s[TB_COL_P90] = fmt_num(g->p90);
    s[TB_COL_P99] = fmt_num(g->p99);
    for (int k = 0; k < TB_RESULTS_NCOLS; k++)
        im->rows[im->nrows].col[k] = s[k];
    im->nrows++; /* its strings are im's now, whatever follows */
    if (!s[TB_COL_RUN_ID] || !s[TB_COL_VALUE] || !s[TB_COL_NOTES] || !s[TB_COL_CONFIG])
        return tb_err(c->err, c->errlen, "out of memory");
    for (int r = 0; r < im->nruns; r++)
        known |= !strcmp(im->runs[r], lv->run_id);
    if (!known && im->nruns < (int)(sizeof im->runs / sizeof im->runs[0]))
        snprintf(im->runs[im->nruns++], sizeof im->runs[0], "%s", lv->run_id);
    return 0;
}

/* A run's id: the file's content, and the phase where a file holds several, never the
 * options (the same file imported again with another --target or --chips is the same
 * measurement, already in the results). Both LLMPerf flavours are one family: a summary
 * is imported once, whichever was named. */
static void run_id(struct level *lv, const struct ictx *c, const char *hash)
{
    const char *fam = c->f == TB_IMPORT_LLMPERF_UPSTREAM ? "llmperf" : FORMAT_NAMES[c->f];
    if (c->f == TB_IMPORT_NXDI)
        snprintf(lv->run_id, sizeof lv->run_id, "import:%s:%s/%s", fam, hash, lv->phase);
    else
        snprintf(lv->run_id, sizeof lv->run_id, "import:%s:%s", fam, hash);
}

/* A serving level's ids: workload and config as the endpoint executor's rows have them
 * (tb_serve_workload), so the report pairs them with the model's prediction of the same
 * workload on the same target. rate: 0 a closed loop of conc; INFINITY all at once. */
static void serve_level(struct level *lv, struct ictx *c, const char *hash, long conc, double rate)
{
    struct tb_run_spec spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.model, sizeof spec.model, "%s", c->o->arch->name);
    spec.phase = TB_PHASE_SERVE;
    spec.seq_in = (int)lv->seq_in;
    spec.seq_out = (int)lv->seq_out;
    snprintf(spec.precision, sizeof spec.precision, "%s", c->precision);
    spec.serve.level_concurrency = (int)conc;
    spec.serve.level_rate = rate;
    spec.serve.chips = c->o->chips;
    tb_serve_workload(&spec, lv->workload, sizeof lv->workload, lv->config, sizeof lv->config);
    run_id(lv, c, hash);
}

/* An engine phase's ids (prefill, decode) as trnbench's own runs have them
 * (tb_run_spec_id), "/chips<N>" after them when the chips are given. */
static void engine_level(struct level *lv, struct ictx *c, const char *hash, enum tb_phase ph)
{
    struct tb_run_spec spec;
    char chips[24] = "", config[200], cfg[200];
    memset(&spec, 0, sizeof spec);
    snprintf(spec.model, sizeof spec.model, "%s", c->o->arch->name);
    spec.phase = ph;
    spec.batch = (int)lv->batch;
    spec.seq_in = (int)lv->seq_in;
    spec.seq_out = (int)lv->seq_out;
    snprintf(spec.precision, sizeof spec.precision, "%s", c->precision);
    tb_run_spec_id(&spec, config, sizeof config);
    if (c->o->chips)
        snprintf(chips, sizeof chips, "/chips%d", c->o->chips);
    snprintf(lv->config, sizeof lv->config, "%s%s", config, chips);
    tb_results_config(config, c->target, c->o->arch->name, cfg, sizeof cfg, lv->workload,
                      sizeof lv->workload);
    snprintf(lv->workload + strlen(lv->workload), sizeof lv->workload - strlen(lv->workload), "%s",
             chips);
    run_id(lv, c, hash);
}

/* A latency figure from a distribution given in unit scale (1 for ms, 1000 for s):
 * value the p50, p90 and p99 beside it, the spread where the file has it. */
static void latency_fig(struct fig *g, double scale, double p50, double p90, double p99,
                        double mean, double min, double max, double stddev)
{
    g->value = p50 * scale;
    g->p90 = p90 * scale;
    g->p99 = p99 * scale;
    g->mean = mean * scale;
    g->min = min * scale;
    g->max = max * scale;
    g->stddev = stddev * scale;
}

/* ---- vLLM bench serve ---- */

/* One latency distribution of a vLLM result: median_K_ms, p90_K_ms, p99_K_ms, mean_K_ms,
 * std_K_ms (percentiles beyond the median only when the run asked for them:
 * --metric-percentiles). Returns 1 pushed, 0 left out (said), -1 error. */
static int vllm_latency(struct tb_import *im, struct ictx *c, const json_t *root,
                        const struct level *lv, const char *key, const char *metric, long n,
                        const char *what)
{
    char k[5][48];
    double v[5];
    int r;
    struct fig g;
    snprintf(k[0], sizeof k[0], "median_%s_ms", key);
    snprintf(k[1], sizeof k[1], "p90_%s_ms", key);
    snprintf(k[2], sizeof k[2], "p99_%s_ms", key);
    snprintf(k[3], sizeof k[3], "mean_%s_ms", key);
    snprintf(k[4], sizeof k[4], "std_%s_ms", key);
    r = num(c, root, NULL, k[0], false, &R_MS, &v[0]);
    if (r <= 0) {
        if (r == 0)
            skip_note(im, "%s: no %s in the file (not among the run's --percentile-metrics)",
                      metric, k[0]);
        return r;
    }
    for (int i = 1; i < 5; i++)
        if (num(c, root, NULL, k[i], false, &R_MS, &v[i]) < 0)
            return -1;
    if (v[0] == 0 && (isnan(v[3]) || v[3] == 0)) {
        skip_note(im, "%s: %s is 0, what vLLM writes when it has no sample", metric, k[0]);
        return 0;
    }
    if (ordered(c, k[0], v[0], k[1], v[1]) || ordered(c, k[1], v[1], k[2], v[2]) ||
        ordered(c, k[0], v[0], k[2], v[2]))
        return -1;
    fig_init(&g, metric);
    latency_fig(&g, 1, v[0], v[1], v[2], v[3], NAN, NAN, v[4]);
    g.n = n;
    snprintf(g.notes, sizeof g.notes, "vLLM %s (value), %s, %s, %s, %s: %s", k[0], k[1], k[2], k[3],
             k[4], what);
    return push_row(im, c, lv, &g) ? -1 : 1;
}

static int import_vllm(struct tb_import *im, struct ictx *c, const json_t *root)
{
    double completed, failed, in_tok, out_tok, dur, req_tput, out_tput, tot_tput, rate = 0, maxc,
                                                                                  burst;
    char rate_text[32] = "", backend[64], model_id[256], date[64], label[128];
    const json_t *rr = json_object_get(root, "request_rate");
    struct level lv;
    struct fig g;
    long n_all;

    if (num(c, root, NULL, "completed", true, &R_COUNT1, &completed) < 0 ||
        num(c, root, NULL, "total_input_tokens", true, &R_COUNT, &in_tok) < 0 ||
        num(c, root, NULL, "total_output_tokens", true, &R_COUNT1, &out_tok) < 0 ||
        num(c, root, NULL, "duration", true, &R_DURATION, &dur) < 0 ||
        num(c, root, NULL, "request_throughput", true, &R_REQS, &req_tput) < 0 ||
        num(c, root, NULL, "output_throughput", true, &R_TOKS, &out_tput) < 0 ||
        num(c, root, NULL, "total_token_throughput", true, &R_TOKS, &tot_tput) < 0 ||
        num(c, root, NULL, "failed", false, &R_COUNT, &failed) < 0 ||
        num(c, root, NULL, "max_concurrency", false, &R_CONC, &maxc) < 0 ||
        num(c, root, NULL, "burstiness", false, &R_REQS, &burst) < 0 ||
        str(c, root, "backend", backend, sizeof backend) < 0 ||
        str(c, root, "model_id", model_id, sizeof model_id) < 0 ||
        str(c, root, "label", label, sizeof label) < 0 ||
        str(c, root, "date", date, sizeof date) < 0)
        return -1;
    /* vLLM computes all three from the same counts over the same duration */
    if (agree(c, "output_throughput", out_tput, out_tok / dur, 1e-6,
              "total_output_tokens / duration") ||
        agree(c, "request_throughput", req_tput, completed / dur, 1e-6, "completed / duration") ||
        agree(c, "total_token_throughput", tot_tput, (in_tok + out_tok) / dur, 1e-6,
              "(total_input_tokens + total_output_tokens) / duration"))
        return -1;

    /* the load: request_rate is a number or "inf" (all at once) */
    if (rr && json_is_string(rr) && !strcmp(json_string_value(rr), "inf")) {
        rate = INFINITY;
    } else if (rr && !json_is_null(rr)) {
        if (num(c, root, NULL, "request_rate", false, &R_REQS, &rate) < 0)
            return -1;
    } else if (isnan(maxc)) {
        return tb_err(c->err, c->errlen,
                      "%s: field 'request_rate': missing, and no max_concurrency: the load the "
                      "run was measured under is unknown",
                      c->path);
    }
    memset(&lv, 0, sizeof lv);
    lv.phase = "serve";
    lv.seq_in = lround(in_tok / completed);
    lv.seq_out = lround(out_tok / completed);
    if (lv.seq_in < 1)
        return tb_err(c->err, c->errlen,
                      "%s: field 'total_input_tokens': %g over %g completed requests: no prompt",
                      c->path, in_tok, completed);
    if (!isnan(maxc) && (rate == 0 || isinf(rate))) {
        /* every request queued at once behind a semaphore of max_concurrency: that many
         * in flight as long as requests remain, trnbench's closed loop */
        lv.batch = lv.concurrency = (long)maxc;
        serve_level(&lv, c, im->hash, lv.concurrency, 0);
        snprintf(lv.note, sizeof lv.note,
                 "load: request_rate %s with max_concurrency %ld: %ld requests in flight, a "
                 "closed loop",
                 rate == 0 ? "not given" : "inf", lv.concurrency, lv.concurrency);
    } else {
        if (isinf(rate))
            snprintf(rate_text, sizeof rate_text, "inf");
        else
            snprintf(rate_text, sizeof rate_text, "%.10g", rate);
        snprintf(lv.request_rate, sizeof lv.request_rate, "%s", rate_text);
        lv.concurrency = isnan(maxc) ? 0 : (long)maxc;
        serve_level(&lv, c, im->hash, lv.concurrency, rate);
        snprintf(lv.note, sizeof lv.note, "load: request_rate %s%s%s", rate_text,
                 isinf(rate)                   ? " (every request sent at once)"
                 : !isnan(burst) && burst != 1 ? " (gamma arrivals, burstiness not 1)"
                                               : " (Poisson arrivals)",
                 isnan(maxc) ? "" : ", at most max_concurrency in flight");
    }
    {
        size_t u = strlen(lv.note);
        snprintf(lv.note + u, sizeof lv.note - u,
                 "; seq_in %ld and seq_out %ld: the completed requests' mean prompt and output "
                 "tokens (total_input_tokens / completed = %.6g, total_output_tokens / completed "
                 "= %.6g)%s%s%s",
                 lv.seq_in, lv.seq_out, in_tok / completed, out_tok / completed,
                 model_id[0] ? "; vLLM model_id '" : "", model_id, model_id[0] ? "'" : "");
        if (backend[0]) {
            u = strlen(lv.note);
            snprintf(lv.note + u, sizeof lv.note - u, ", backend %s", backend);
        }
    }

    /* latencies: the same definitions as trnbench's load client (tb_vocab.h) */
    if (vllm_latency(im, c, root, &lv, "ttft", "ttft_ms", (long)completed,
                     "per completed request, send to first streamed token: the same definition") <
            0 ||
        vllm_latency(im, c, root, &lv, "tpot", "tpot_ms", -1,
                     "per request (e2e - ttft) / (output tokens - 1), requests of one token left "
                     "out: the same definition, never including TTFT") < 0 ||
        vllm_latency(im, c, root, &lv, "itl", "itl_ms", -1,
                     "every gap between consecutive streamed chunks of the completed requests: "
                     "the same definition") < 0 ||
        vllm_latency(im, c, root, &lv, "e2el", "e2e_latency_ms", (long)completed,
                     "per completed request, send to last token: the same definition") < 0)
        return -1;

    /* totals over the run: the same counts over vLLM's benchmark duration, first send to
     * the last request's end */
    n_all = (long)completed + (isnan(failed) ? 0 : (long)failed);
    fig_init(&g, "output_tokens_per_s");
    g.value = out_tput;
    g.n = n_all;
    snprintf(g.notes, sizeof g.notes,
             "vLLM output_throughput: output tokens of the %ld completed requests / the run's "
             "duration (%.6g s, first send to last completion): the same definition",
             (long)completed, dur);
    if (push_row(im, c, &lv, &g))
        return -1;
    fig_init(&g, "total_tokens_per_s");
    g.value = tot_tput;
    g.n = n_all;
    snprintf(g.notes, sizeof g.notes,
             "vLLM total_token_throughput: prompt plus output tokens / the same duration");
    if (push_row(im, c, &lv, &g))
        return -1;
    fig_init(&g, "requests_per_s");
    g.value = req_tput;
    g.n = n_all;
    snprintf(g.notes, sizeof g.notes,
             "vLLM request_throughput: completed requests / the same duration");
    if (push_row(im, c, &lv, &g))
        return -1;
    if (!isnan(failed)) {
        fig_init(&g, "failed_requests");
        g.value = failed;
        g.n = n_all;
        snprintf(g.notes, sizeof g.notes, "vLLM failed (the reasons are not in the file)");
        if (push_row(im, c, &lv, &g))
            return -1;
    }

    /* what has no trnbench metric of the same definition */
    if (json_object_get(root, "request_goodput") &&
        !json_is_null(json_object_get(root, "request_goodput")))
        skip_note(im, "request_goodput: the --goodput limits it counts within are not in the "
                      "file (and may include an e2el limit): not goodput_requests_per_s");
    if (json_object_get(root, "max_concurrent_requests"))
        skip_note(im, "max_concurrent_requests: the peak in flight, not achieved_concurrency's "
                      "time average");
    if (json_object_get(root, "max_output_tokens_per_s"))
        skip_note(im, "max_output_tokens_per_s: the busiest second's output tokens: no trnbench "
                      "metric");
    skip_note(im, "tokens_per_s_per_user: per request 1000 / tpot_ms, whose distribution the "
                  "file's percentiles of TPOT do not give");
    return 0;
}

/* ---- NxD Inference benchmark_report.json ---- */

/* One submodel's report (generate_report): latencies of each invocation in ms, and NxDI's
 * throughput, which counts a fixed number of tokens per benchmark run. */
struct nxdi_sub {
    double p50, p90, p95, p99, p100, avg, tput;
};

/* Read submodel name; 1 read, 0 absent or null (NxDI writes null for a submodel that did
 * not run), -1 error. */
static int nxdi_sub(struct ictx *c, const json_t *root, const char *name, struct nxdi_sub *s)
{
    const json_t *o = json_object_get(root, name);
    if (!o || json_is_null(o))
        return 0;
    if (!json_is_object(o))
        return tb_err(c->err, c->errlen, "%s: field '%s': not an object: %s", c->path, name,
                      kind_of(o));
    if (num(c, o, name, "latency_ms_p50", true, &R_MS_POS, &s->p50) < 0 ||
        num(c, o, name, "latency_ms_p90", true, &R_MS_POS, &s->p90) < 0 ||
        num(c, o, name, "latency_ms_p95", true, &R_MS_POS, &s->p95) < 0 ||
        num(c, o, name, "latency_ms_p99", true, &R_MS_POS, &s->p99) < 0 ||
        num(c, o, name, "latency_ms_p100", true, &R_MS_POS, &s->p100) < 0 ||
        num(c, o, name, "latency_ms_avg", true, &R_MS_POS, &s->avg) < 0 ||
        num(c, o, name, "throughput", true, &R_TOKS, &s->tput) < 0)
        return -1;
    {
        char a[80], b[80];
        const char *k[5] = {"latency_ms_p50", "latency_ms_p90", "latency_ms_p95", "latency_ms_p99",
                            "latency_ms_p100"};
        const double v[5] = {s->p50, s->p90, s->p95, s->p99, s->p100};
        for (int i = 1; i < 5; i++) {
            snprintf(a, sizeof a, "%s.%s", name, k[i - 1]);
            snprintf(b, sizeof b, "%s.%s", name, k[i]);
            if (ordered(c, a, v[i - 1], b, v[i]))
                return -1;
        }
        snprintf(b, sizeof b, "%s.latency_ms_avg", name);
        snprintf(a, sizeof a, "%s.latency_ms_p100", name);
        if (s->avg > s->p100)
            return tb_err(c->err, c->errlen, "%s: field '%s': %g is above %s (%g), the slowest",
                          c->path, b, s->avg, a, s->p100);
    }
    return 1;
}

static int import_nxdi(struct tb_import *im, struct ictx *c, const json_t *root)
{
    static const char *const KNOWN[] = {
        "e2e_model",           "context_encoding_model",  "token_generation_model",
        "speculation_model",   "fused_speculation_model", "medusa_speculation_model",
        "vision_encoder_model"};
    const struct tb_import_opts *o = c->o;
    struct nxdi_sub e2e, ctx, tkg;
    int he, hc, ht;
    bool spec = false;
    const char *key;
    const json_t *val;
    const long B = o->batch, T = o->seq_in, N = o->seq_out;

    if (B <= 0 || T <= 0 || N <= 0)
        return tb_err(c->err, c->errlen,
                      "%s: benchmark_report.json does not say the batch and sequence lengths "
                      "it ran: give --batch, --seq-in and --seq-out (NeuronConfig batch_size, "
                      "max_context_length, max_new_tokens)",
                      c->path);
    if ((he = nxdi_sub(c, root, "e2e_model", &e2e)) < 0 ||
        (hc = nxdi_sub(c, root, "context_encoding_model", &ctx)) < 0 ||
        (ht = nxdi_sub(c, root, "token_generation_model", &tkg)) < 0)
        return -1;
    json_object_foreach((json_t *)root, key, val)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++)
            known |= !strcmp(key, KNOWN[i]);
        if (key[0] == '_')
            continue; /* an annotation (the test fixtures' _fixture_note) */
        if (!known) {
            skip_note(im, "%s: not a submodel NxD Inference's benchmark reports", key);
        } else if (!strcmp(key, "e2e_model") || !strcmp(key, "context_encoding_model") ||
                   !strcmp(key, "token_generation_model")) {
            if (json_is_null(val))
                skip_note(im, "%s: null in the file (not run)", key);
        } else if (json_is_null(val)) {
            skip_note(im, "%s: null in the file (not run)", key);
        } else {
            spec |= strstr(key, "speculation") != NULL;
            skip_note(im, "%s: no trnbench metric for a %s invocation", key,
                      strstr(key, "vision") ? "vision encoder" : "speculation model");
        }
    }

    if (he) {
        /* generate_report: throughput = runs x max_length x max_batch_size / the runs' total
         * time, and latency_ms_avg = that total / runs, so their product is the tokens NxDI
         * counts a call: it must be the shape given */
        struct level lv;
        struct fig g;
        const double per_call = e2e.tput * e2e.avg / 1e3, want = (double)B * (double)(T + N);
        if (fabs(per_call - want) > 1e-6 * want)
            return tb_err(c->err, c->errlen,
                          "%s: field 'e2e_model.throughput': %.10g tokens/s x latency_ms_avg "
                          "%.10g ms = %.10g tokens a generate() call, but --batch x (--seq-in + "
                          "--seq-out) = %.10g: NxD Inference counts max_length x max_batch_size "
                          "tokens a call; give the shape the model was compiled for",
                          c->path, e2e.tput, e2e.avg, per_call, want);
        memset(&lv, 0, sizeof lv);
        lv.phase = "serve";
        lv.batch = B;
        lv.seq_in = T;
        lv.seq_out = N;
        serve_level(&lv, c, im->hash, B, 0);
        snprintf(lv.note, sizeof lv.note,
                 "e2e_model: each of NxD Inference's generate() calls runs a static batch of %ld "
                 "prompts of %ld tokens to %ld new tokens each (shape from --batch, --seq-in, "
                 "--seq-out, checked against the file's throughput); no HTTP server",
                 B, T, N);
        fig_init(&g, "e2e_latency_ms");
        latency_fig(&g, 1, e2e.p50, e2e.p90, e2e.p99, e2e.avg, NAN, e2e.p100, NAN);
        snprintf(g.notes, sizeof g.notes,
                 "NxDI e2e_model.latency_ms_p50 (value), _p90, _p99, _avg (mean), _p100 (max): "
                 "one generate() call of the batch; every request of a static batch ends with "
                 "the call, so it is each request's end-to-end latency (tokenisation on the "
                 "host and the server's HTTP excluded)");
        if (push_row(im, c, &lv, &g))
            return -1;
        fig_init(&g, "output_tokens_per_s");
        g.value = e2e.tput * (double)N / (double)(T + N);
        snprintf(g.notes, sizeof g.notes,
                 "converted: NxDI e2e_model.throughput (%.10g tokens/s of prompt and output) x "
                 "seq_out / (seq_in + seq_out): output tokens / the calls' total time; NxDI "
                 "counts every sequence to max_length (with on-device sampling it ignores EOS, "
                 "so each call runs to the end)",
                 e2e.tput);
        if (push_row(im, c, &lv, &g))
            return -1;
        fig_init(&g, "total_tokens_per_s");
        g.value = e2e.tput;
        snprintf(g.notes, sizeof g.notes,
                 "NxDI e2e_model.throughput: max_length x batch tokens a call / the calls' "
                 "total time, max_length = seq_in + seq_out: prompt plus output tokens per "
                 "second, the same definition");
        if (push_row(im, c, &lv, &g))
            return -1;
        fig_init(&g, "requests_per_s");
        g.value = e2e.tput / (double)(T + N);
        snprintf(g.notes, sizeof g.notes,
                 "converted: NxDI e2e_model.throughput / (seq_in + seq_out): %ld requests a "
                 "call / the mean call",
                 B);
        if (push_row(im, c, &lv, &g))
            return -1;
    }

    if (hc) {
        /* one invocation per run prefills the whole batch only when NxDI's count (runs x
         * max_context_length x batch over the invocations' time) times the mean
         * invocation is batch x seq_in; with a smaller context-encoding batch, or prompts
         * padded to a larger bucket, an invocation is something else */
        const double per_inv = ctx.tput * ctx.avg / 1e3, want = (double)B * (double)T;
        if (fabs(per_inv - want) > 1e-6 * want) {
            skip_note(im,
                      "context_encoding_model: throughput x latency_ms_avg = %.6g tokens an "
                      "invocation, not batch x seq_in = %.6g (a context-encoding batch smaller "
                      "than the batch, or prompts padded to a larger bucket): an invocation is "
                      "not the batch's prefill",
                      per_inv, want);
        } else {
            struct level lv;
            struct fig g;
            memset(&lv, 0, sizeof lv);
            lv.phase = "prefill";
            lv.batch = B;
            lv.seq_in = T;
            engine_level(&lv, c, im->hash, TB_PHASE_PREFILL);
            snprintf(lv.note, sizeof lv.note,
                     "context_encoding_model: one invocation, the prefill of the batch of %ld "
                     "prompts of %ld tokens",
                     B, T);
            fig_init(&g, "ttft_ms");
            latency_fig(&g, 1, ctx.p50, ctx.p90, ctx.p99, ctx.avg, NAN, ctx.p100, NAN);
            snprintf(g.notes, sizeof g.notes,
                     "NxDI context_encoding_model.latency_ms_p50 (value), _p90, _p99, _avg "
                     "(mean), _p100 (max): the forward of the context-encoding model, the "
                     "prefill of the whole batch: an engine run's TTFT, the same definition");
            if (push_row(im, c, &lv, &g))
                return -1;
            fig_init(&g, "prefill_tokens_per_s");
            g.value = ctx.tput;
            snprintf(g.notes, sizeof g.notes,
                     "NxDI context_encoding_model.throughput: batch x seq_in tokens / the mean "
                     "prefill (trnbench's own engine rows take the median repetition)");
            if (push_row(im, c, &lv, &g))
                return -1;
        }
    }

    if (ht && spec) {
        skip_note(im, "token_generation_model: with speculative decoding an invocation may "
                      "emit several tokens a sequence: not one decode step");
    } else if (ht) {
        struct level lv;
        struct fig g;
        memset(&lv, 0, sizeof lv);
        lv.phase = "decode";
        lv.batch = B;
        lv.seq_in = T;
        lv.seq_out = N;
        engine_level(&lv, c, im->hash, TB_PHASE_DECODE);
        snprintf(lv.note, sizeof lv.note,
                 "token_generation_model: each invocation one decode step of the batch of %ld "
                 "(from --batch)",
                 B);
        fig_init(&g, "tpot_ms");
        latency_fig(&g, 1, tkg.p50, tkg.p90, tkg.p99, tkg.avg, NAN, tkg.p100, NAN);
        snprintf(g.notes, sizeof g.notes,
                 "NxDI token_generation_model.latency_ms_p50 (value), _p90, _p99, _avg (mean), "
                 "_p100 (max): one decode step: an engine run's TPOT, the same definition, "
                 "never including TTFT");
        if (push_row(im, c, &lv, &g))
            return -1;
        fig_init(&g, "decode_tokens_per_s");
        g.value = (double)B * 1e3 / tkg.avg;
        snprintf(g.notes, sizeof g.notes,
                 "converted: batch x 1000 / token_generation_model.latency_ms_avg (%.10g ms): "
                 "output tokens of the batch per second of decode; NxDI's own throughput "
                 "(%.6g) counts max_new_tokens a run over max_new_tokens - 1 steps and is not "
                 "used",
                 tkg.avg, tkg.tput);
        if (push_row(im, c, &lv, &g))
            return -1;
    }
    if (!im->nrows)
        return tb_err(c->err, c->errlen,
                      "%s: nothing to import: no e2e_model, context_encoding_model or "
                      "token_generation_model with figures of the shape given",
                      c->path);
    return 0;
}

/* ---- LLMPerf summary ---- */

/* One of metrics_summary's distributions, flattened by LLMPerfResults.to_dict:
 * results_<key>_quantiles_p50 ..., _mean, _min, _max, _stddev, in seconds. */
struct llmperf_dist {
    double p50, p90, p99, mean, min, max, stddev;
};

static int llmperf_dist(struct ictx *c, const json_t *root, const char *key, struct llmperf_dist *d)
{
    static const char *const SUF[7] = {"quantiles_p50", "quantiles_p90", "quantiles_p99", "mean",
                                       "min",           "max",           "stddev"};
    double *v[7] = {&d->p50, &d->p90, &d->p99, &d->mean, &d->min, &d->max, &d->stddev};
    char k[7][96];
    for (int i = 0; i < 7; i++) {
        snprintf(k[i], sizeof k[i], "results_%s_%s", key, SUF[i]);
        if (num(c, root, NULL, k[i], i == 0, &R_S, v[i]) < 0)
            return -1;
    }
    if (ordered(c, k[4], d->min, k[0], d->p50) || ordered(c, k[0], d->p50, k[1], d->p90) ||
        ordered(c, k[1], d->p90, k[2], d->p99) || ordered(c, k[2], d->p99, k[5], d->max))
        return -1;
    return 0;
}

static int import_llmperf(struct tb_import *im, struct ictx *c, const json_t *root)
{
    const bool neuron = c->f == TB_IMPORT_LLMPERF;
    double done, out_tput, per_min, conc, in_asked, out_asked, errors, started, in_mean, out_mean,
        in_sd, out_sd;
    struct llmperf_dist ttft, e2e, itl;
    char model[256];
    struct level lv;
    struct fig g;
    long n_all;

    if (num(c, root, NULL, "results_num_completed_requests", true, &R_COUNT1, &done) < 0 ||
        num(c, root, NULL, "results_mean_output_throughput_token_per_s", true, &R_TOKS, &out_tput) <
            0 ||
        num(c, root, NULL, "results_num_completed_requests_per_min", true, &R_PER_MIN, &per_min) <
            0 ||
        num(c, root, NULL, "num_concurrent_requests", true, &R_CONC, &conc) < 0 ||
        num(c, root, NULL, "mean_input_tokens", true, &R_LEN1, &in_asked) < 0 ||
        num(c, root, NULL, "mean_output_tokens", true, &R_LEN1, &out_asked) < 0 ||
        num(c, root, NULL, "stddev_input_tokens", false, &R_SD, &in_sd) < 0 ||
        num(c, root, NULL, "stddev_output_tokens", false, &R_SD, &out_sd) < 0 ||
        num(c, root, NULL, "results_number_errors", false, &R_COUNT, &errors) < 0 ||
        num(c, root, NULL, "results_num_requests_started", false, &R_COUNT, &started) < 0 ||
        num(c, root, NULL, "results_number_input_tokens_mean", false, &R_LEN, &in_mean) < 0 ||
        num(c, root, NULL, "results_number_output_tokens_mean", false, &R_LEN, &out_mean) < 0 ||
        str(c, root, "model", model, sizeof model) < 0 ||
        llmperf_dist(c, root, "ttft_s", &ttft) < 0 ||
        llmperf_dist(c, root, "end_to_end_latency_s", &e2e) < 0 ||
        (neuron && llmperf_dist(c, root, "inter_token_latency_s", &itl) < 0))
        return -1;
    /* metrics_summary: the output throughput is the completed requests' output tokens over
     * the test's time, and the requests per minute the same requests over the same time */
    if (!isnan(out_mean) &&
        agree(c, "results_mean_output_throughput_token_per_s", out_tput, out_mean * per_min / 60,
              1e-6,
              "results_number_output_tokens_mean x results_num_completed_requests_per_min "
              "/ 60"))
        return -1;

    memset(&lv, 0, sizeof lv);
    lv.phase = "serve";
    lv.batch = lv.concurrency = (long)conc;
    lv.seq_in = (long)in_asked;
    lv.seq_out = (long)out_asked;
    serve_level(&lv, c, im->hash, lv.concurrency, 0);
    {
        size_t u = (size_t)snprintf(
            lv.note, sizeof lv.note,
            "load: num_concurrent_requests %ld, each client sending its next request when the "
            "last returns (a closed loop); seq_in and seq_out: --mean-input-tokens and "
            "--mean-output-tokens",
            lv.concurrency);
        if (!isnan(in_sd) && u < sizeof lv.note)
            u += (size_t)snprintf(lv.note + u, sizeof lv.note - u, " (stddev %g and %g asked)",
                                  in_sd, isnan(out_sd) ? 0 : out_sd);
        if (!isnan(in_mean) && !isnan(out_mean) && u < sizeof lv.note)
            u += (size_t)snprintf(lv.note + u, sizeof lv.note - u,
                                  "; the completed requests' means %.6g and %.6g (output counted "
                                  "by the client's tokenizer)",
                                  in_mean, out_mean);
        if (model[0] && u < sizeof lv.note)
            snprintf(lv.note + u, sizeof lv.note - u, "; LLMPerf model '%s'", model);
    }

    fig_init(&g, "ttft_ms");
    latency_fig(&g, 1e3, ttft.p50, ttft.p90, ttft.p99, ttft.mean, ttft.min, ttft.max, ttft.stddev);
    g.n = (long)done;
    snprintf(g.notes, sizeof g.notes,
             "LLMPerf results_ttft_s_quantiles_p50 (value), _p90, _p99, _mean, _min, _max, "
             "_stddev: per completed request, send to the first streamed content: the same "
             "definition; converted: s to ms");
    if (push_row(im, c, &lv, &g))
        return -1;
    if (neuron) {
        fig_init(&g, "tpot_ms");
        latency_fig(&g, 1e3, itl.p50, itl.p90, itl.p99, itl.mean, itl.min, itl.max, itl.stddev);
        g.n = (long)done;
        snprintf(g.notes, sizeof g.notes,
                 "LLMPerf (neuron_perf.patch) results_inter_token_latency_s_quantiles_p50 "
                 "(value), _p90, _p99, _mean, _min, _max, _stddev: per request the gaps after "
                 "the first token / (output tokens - 1), tokens counted by the client's "
                 "tokenizer: TPOT, never including TTFT; converted: s to ms");
        if (push_row(im, c, &lv, &g))
            return -1;
    } else {
        skip_note(im, "results_inter_token_latency_s: unpatched LLMPerf's includes TTFT ((TTFT "
                      "+ gaps) / output tokens, per request): not tpot_ms, and its quantiles "
                      "cannot be converted");
    }
    skip_note(im, "itl_ms: LLMPerf keeps a mean inter-token latency per request, not every "
                  "gap between chunks");
    fig_init(&g, "e2e_latency_ms");
    latency_fig(&g, 1e3, e2e.p50, e2e.p90, e2e.p99, e2e.mean, e2e.min, e2e.max, e2e.stddev);
    g.n = (long)done;
    snprintf(g.notes, sizeof g.notes,
             "LLMPerf results_end_to_end_latency_s_quantiles_p50 (value), _p90, _p99, _mean, "
             "_min, _max, _stddev: per completed request, send to the end of the stream: the "
             "same definition; converted: s to ms");
    if (push_row(im, c, &lv, &g))
        return -1;

    n_all = isnan(started) ? (long)done : (long)started;
    fig_init(&g, "output_tokens_per_s");
    g.value = out_tput;
    g.n = n_all;
    snprintf(g.notes, sizeof g.notes,
             "LLMPerf results_mean_output_throughput_token_per_s: output tokens of the completed "
             "requests (counted by the client's tokenizer) / the test's time: the same "
             "definition, despite the 'mean' in its name");
    if (push_row(im, c, &lv, &g))
        return -1;
    if (!isnan(in_mean)) {
        fig_init(&g, "total_tokens_per_s");
        g.value = out_tput + in_mean * per_min / 60;
        g.n = n_all;
        snprintf(g.notes, sizeof g.notes,
                 "converted: results_mean_output_throughput_token_per_s + "
                 "results_number_input_tokens_mean (%.6g) x results_num_completed_requests_per_min "
                 "/ 60: prompt plus output tokens / the test's time",
                 in_mean);
        if (push_row(im, c, &lv, &g))
            return -1;
    } else {
        skip_note(im, "total_tokens_per_s: no results_number_input_tokens_mean to count the "
                      "prompt tokens");
    }
    fig_init(&g, "requests_per_s");
    g.value = per_min / 60;
    g.n = n_all;
    snprintf(g.notes, sizeof g.notes,
             "converted: results_num_completed_requests_per_min / 60: completed requests per "
             "second of the test");
    if (push_row(im, c, &lv, &g))
        return -1;
    if (!isnan(errors)) {
        fig_init(&g, "failed_requests");
        g.value = errors;
        g.n = n_all;
        snprintf(g.notes, sizeof g.notes,
                 "LLMPerf results_number_errors (codes in results_error_code_frequency)");
        if (push_row(im, c, &lv, &g))
            return -1;
    }
    skip_note(im, "results_request_output_throughput_token_per_s: per request output tokens / "
                  "end-to-end latency, TTFT included: not tokens_per_s_per_user (1000 / "
                  "tpot_ms)");
    return 0;
}

/* ---- TorchTitan's training log ---- */

/* One metrics line of a TorchTitan log: MetricsProcessor.log's console line (pytorch/
 * torchtitan torchtitan/components/metrics.py at b5bcd76c, August 2026):
 *   step: {step:2}  loss: {loss:8.5f}  grad_norm: {grad_norm:7.4f}
 *   memory: {max_reserved_gib:5.2f}GiB({max_reserved_pct:.2f}%)  tps: {round(tps):,}
 *   tflops: {tflops:,.2f}  mfu: {mfu:.2f}% (or "N/A" under FP8/MX quantization)
 * each field after a colour escape unless metrics.disable_color_printing; tps is tokens
 * per second per device (ntokens_since_last_log / (time_delta x non_data_parallel_size))
 * over the steps since the last such line. grad_norm (2025-06) and tflops (2025-02) are
 * later additions: older logs lack them. */
struct titan_line {
    long line, step, rank; /* rank: of "[rankN]:" before the line (torchrun --role rank
                              --tee, run_train.sh), -1 none */
    double loss, grad_norm, mem_gib, tps, tflops, mfu_pct; /* NAN: absent (mfu: N/A) */
    char when[20];                                         /* "YYYY-MM-DD HH:MM:SS" or "" */
};

/* Drop ANSI escape sequences (ESC [ ... letter) from s, in place. */
static void strip_ansi(char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        if (r[0] == '\033' && r[1] == '[') {
            r += 2;
            while (*r && !((*r >= 'A' && *r <= 'Z') || (*r >= 'a' && *r <= 'z')))
                r++;
            if (*r)
                r++;
            continue;
        }
        *w++ = *r++;
    }
    *w = '\0';
}

/* A number as TorchTitan prints it: digits in groups of three after commas (Python's
 * ",") where commas is true, a fraction, then exactly end (a unit: "", "GiB", "%").
 * Returns 0 with *v, or -1. */
static int titan_num(const char *s, bool commas, const char *end, double *v)
{
    char digits[64];
    size_t k = 0, run = 0;
    const char *p = s;
    bool grouped = false;
    char *stop;
    if (*p == '-' && k < sizeof digits - 1)
        digits[k++] = *p++;
    while ((*p >= '0' && *p <= '9') || (commas && *p == ',')) {
        if (*p == ',') {
            if (run == 0 || (grouped && run != 3) || (!grouped && run > 3))
                return -1;
            grouped = true;
            run = 0;
            p++;
            continue;
        }
        if (k >= sizeof digits - 1)
            return -1;
        digits[k++] = *p++;
        run++;
    }
    if (run == 0 || (grouped && run != 3))
        return -1;
    if (*p == '.') {
        if (k >= sizeof digits - 2)
            return -1;
        digits[k++] = *p++;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9' && k < sizeof digits - 1)
            digits[k++] = *p++;
    }
    digits[k] = '\0';
    if (strncmp(p, end, strlen(end)) || p[strlen(end)] != '\0')
        return -1;
    *v = strtod(digits, &stop);
    return *stop == '\0' && isfinite(*v) ? 0 : -1;
}

/* The message of one log line, after torchrun's "[rankN]:" and the "[titan] DATE -
 * NAME - LEVEL - " of torchtitan/tools/logging.py init_logger; *rank and when set from
 * them. */
static char *titan_message(char *s, long *rank, char when[20])
{
    char *m;
    *rank = -1;
    when[0] = '\0';
    if (!strncmp(s, "[rank", 5)) {
        char *e;
        long r = strtol(s + 5, &e, 10);
        if (e != s + 5 && e[0] == ']' && e[1] == ':') {
            *rank = r;
            s = e + 2;
        }
    }
    if (!strncmp(s, "[titan] ", 8) && strlen(s) >= 27 && s[12] == '-' && s[15] == '-' &&
        s[18] == ' ')
        snprintf(when, 20, "%.19s", s + 8);
    m = strstr(s, " - INFO - ");
    return m ? m + 10 : s;
}

/* Parse the metrics line msg (line L of the log) into *t. Returns 1 when it is one, 0
 * when msg is not a metrics line, -1 with "FILE: line L: field 'F': ..." */
static int titan_parse(struct ictx *c, struct tb_import *im, char *msg, struct titan_line *t)
{
    char *save = NULL, *tok;
    bool have_loss = false, have_tps = false, have_mfu = false;
    if (strncmp(msg, "step:", 5) != 0)
        return 0;
    t->loss = t->grad_norm = t->mem_gib = t->tps = t->tflops = t->mfu_pct = NAN;
    t->step = -1;
    tok = strtok_r(msg, " \t\r", &save);
    while (tok) {
        char key[32], *val;
        size_t n = strlen(tok);
        double v;
        if (n < 2 || tok[n - 1] != ':' || n > sizeof key)
            return tb_err(c->err, c->errlen,
                          "%s: line %ld: '%.40s' where a field name and its colon go", c->path,
                          t->line, tok);
        snprintf(key, sizeof key, "%.*s", (int)(n - 1), tok);
        val = strtok_r(NULL, " \t\r", &save);
        if (!val)
            return tb_err(c->err, c->errlen, "%s: line %ld: field '%s': no value", c->path, t->line,
                          key);
        if (!strcmp(key, "step")) {
            if (titan_num(val, false, "", &v) != 0 || v < 1 || v != floor(v) || v > 1e12)
                return tb_err(c->err, c->errlen,
                              "%s: line %ld: field 'step': not a step number from 1: '%.40s'",
                              c->path, t->line, val);
            t->step = (long)v;
        } else if (!strcmp(key, "loss")) {
            if (titan_num(val, false, "", &t->loss) != 0 || t->loss < 0)
                return tb_err(c->err, c->errlen,
                              "%s: line %ld: field 'loss': not a finite loss: '%.40s'", c->path,
                              t->line, val);
            have_loss = true;
        } else if (!strcmp(key, "grad_norm")) {
            if (titan_num(val, false, "", &t->grad_norm) != 0 || t->grad_norm < 0)
                return tb_err(c->err, c->errlen,
                              "%s: line %ld: field 'grad_norm': not a finite norm: '%.40s'",
                              c->path, t->line, val);
        } else if (!strcmp(key, "memory")) {
            char gib[64];
            const char *paren = strchr(val, '(');
            double pct;
            snprintf(gib, sizeof gib, "%.*s", paren ? (int)(paren - val) : 0, val);
            if (!paren || titan_num(gib, false, "GiB", &t->mem_gib) != 0 ||
                titan_num(paren + 1, false, "%)", &pct) != 0 || t->mem_gib < 0)
                return tb_err(c->err, c->errlen,
                              "%s: line %ld: field 'memory': not GIB(PCT%%): '%.40s'", c->path,
                              t->line, val);
        } else if (!strcmp(key, "tps")) {
            if (titan_num(val, true, "", &t->tps) != 0 || t->tps != floor(t->tps) || t->tps <= 0 ||
                t->tps > 1e9)
                return tb_err(c->err, c->errlen,
                              "%s: line %ld: field 'tps': not a whole number of tokens/s above "
                              "0 (TorchTitan prints round(tps) with thousands commas): '%.40s'",
                              c->path, t->line, val);
            have_tps = true;
        } else if (!strcmp(key, "tflops")) {
            if (titan_num(val, true, "", &t->tflops) != 0 || t->tflops < 0)
                return tb_err(c->err, c->errlen,
                              "%s: line %ld: field 'tflops': not a number: '%.40s'", c->path,
                              t->line, val);
        } else if (!strcmp(key, "mfu")) {
            if (strcmp(val, "N/A") && (titan_num(val, false, "%", &t->mfu_pct) != 0 ||
                                       t->mfu_pct < 0 || t->mfu_pct > 100))
                return tb_err(c->err, c->errlen,
                              "%s: line %ld: field 'mfu': not a percentage from 0 to 100 or "
                              "N/A: '%.40s'",
                              c->path, t->line, val);
            have_mfu = true;
        } else if (!strstr(im->skipped, key)) {
            skip_note(im,
                      "%s: a field of the metrics lines trnbench does not know (first on "
                      "line %ld)",
                      key, t->line);
        }
        tok = strtok_r(NULL, " \t\r", &save);
    }
    if (t->step < 0 || !have_loss || !have_tps || !have_mfu)
        return tb_err(c->err, c->errlen,
                      "%s: line %ld: field '%s': missing (every metrics line of "
                      "MetricsProcessor.log has step, loss, tps and mfu)",
                      c->path, t->line,
                      t->step < 0  ? "step"
                      : !have_loss ? "loss"
                      : !have_tps  ? "tps"
                                   : "mfu");
    return 1;
}

/* Median, min, max, mean and standard deviation of x[0..n-1] (n >= 1) into g. */
static void spread_fig(struct fig *g, double *x, size_t n)
{
    double sum = 0, ss = 0;
    for (size_t i = 1; i < n; i++) /* insertion sort: a log has few windows */
        for (size_t j = i; j > 0 && x[j - 1] > x[j]; j--) {
            double tmp = x[j];
            x[j] = x[j - 1];
            x[j - 1] = tmp;
        }
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    g->mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - g->mean) * (x[i] - g->mean);
    g->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : NAN;
    g->value = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
    g->min = x[0];
    g->max = x[n - 1];
    g->n = (long)n;
}

/* When the log says it was measured: the "[titan] YYYY-MM-DD HH:MM:SS,mmm" of its first
 * line from TorchTitan's logger (asctime: the measuring machine's local time, no zone). */
static void titan_time(struct ictx *c, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    c->timestamp[0] = c->date[0] = '\0';
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char buf[64], when[20], day[11];
        long rank;
        snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), p);
        strip_ansi(buf);
        titan_message(buf, &rank, when);
        snprintf(day, sizeof day, "%.10s", when);
        if (when[0] && tb_import_check_date(day)) {
            snprintf(c->timestamp, sizeof c->timestamp, "%sT%.8s", day, when + 11);
            snprintf(c->date, sizeof c->date,
                     "%s (the log's clock: the measuring machine's "
                     "local time)",
                     day);
            return;
        }
        p += n + (nl != NULL);
    }
}

static int import_torchtitan(struct tb_import *im, struct ictx *c, char *text, size_t len)
{
    const struct tb_import_opts *o = c->o;
    const double B = o->batch, T = o->seq_in, D = o->devices;
    struct titan_line *w = NULL, t;
    double *x = NULL, flops, step_med, mfu_titan;
    size_t nw = 0, cap = 0, others = 0;
    long line = 0, first_rank = -2;
    int rc = -1, mfu_chips;
    struct level lv;
    struct fig g;

    for (char *s = text, *end = text + len; s < end;) {
        char *nl = memchr(s, '\n', (size_t)(end - s)), *msg;
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        char buf[2048];
        int r;
        line++;
        snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), s);
        s += n + (nl != NULL);
        strip_ansi(buf);
        memset(&t, 0, sizeof t);
        t.line = line;
        msg = titan_message(buf, &t.rank, t.when);
        r = titan_parse(c, im, msg, &t);
        if (r < 0)
            goto out;
        if (r == 0)
            continue;
        if (first_rank == -2)
            first_rank = t.rank;
        if (t.rank != first_rank) { /* LOG_RANK with several ranks: the first one's */
            others++;
            continue;
        }
        if (nw && t.step <= w[nw - 1].step) {
            tb_err(c->err, c->errlen,
                   "%s: line %ld: field 'step': %ld after step %ld (line %ld): more than one "
                   "run in the log, or a restart from a checkpoint: import each run's log",
                   c->path, line, t.step, w[nw - 1].step, w[nw - 1].line);
            goto out;
        }
        if (nw == cap) {
            struct titan_line *m = realloc(w, (cap ? 2 * cap : 64) * sizeof *w);
            if (!m) {
                tb_err(c->err, c->errlen, "out of memory");
                goto out;
            }
            w = m;
            cap = cap ? 2 * cap : 64;
        }
        w[nw++] = t;
    }
    if (nw < 2) {
        tb_err(c->err, c->errlen,
               "%s: %s: TorchTitan's metrics lines ('step: N  loss: ...  tps: ...  mfu: ...') "
               "are needed after the first, whose window holds compilation and warm-up",
               c->path, nw ? "only one metrics line" : "no metrics line");
        goto out;
    }
    x = malloc(nw * sizeof *x);
    if (!x) {
        tb_err(c->err, c->errlen, "out of memory");
        goto out;
    }

    memset(&lv, 0, sizeof lv);
    lv.phase = "train";
    lv.batch = o->batch;
    lv.seq_in = o->seq_in;
    engine_level(&lv, c, im->hash, TB_PHASE_TRAIN);
    snprintf(lv.note, sizeof lv.note,
             "TorchTitan log: %zu metrics lines, steps %ld to %ld; the first (step %ld) left "
             "out: its window holds compilation and warm-up; %d devices (TorchTitan's world "
             "size), global batch %d x seq_len %d%s",
             nw, w[0].step, w[nw - 1].step, w[0].step, o->devices, o->batch, o->seq_in,
             others ? "; the lines of other ranks than the first seen left out" : "");

    /* step time of each window: global batch x seq / (tps x devices) */
    for (size_t i = 1; i < nw; i++)
        x[i - 1] = B * T / (w[i].tps * D);
    fig_init(&g, "step_time_s");
    spread_fig(&g, x, nw - 1);
    step_med = g.value;
    snprintf(g.notes, sizeof g.notes,
             "converted: global batch x seq_len / (tps x devices) per metrics line, the median "
             "over the lines (value) and their spread: TorchTitan's tps is tokens per second "
             "per device over the steps since its last metrics line (ntokens_since_last_log / "
             "(time_delta x non_data_parallel_size), MetricsProcessor.log), so this is that "
             "window's time per step; tps printed rounded to a whole token/s");
    if (push_row(im, c, &lv, &g))
        goto out;

    for (size_t i = 1; i < nw; i++)
        x[i - 1] = w[i].tps * D;
    fig_init(&g, "train_tokens_per_s");
    spread_fig(&g, x, nw - 1);
    snprintf(g.notes, sizeof g.notes,
             "converted: tps x %d devices per metrics line (all devices together; TorchTitan's "
             "tps is per device: its data-parallel ranks' tokens, each counted once over the "
             "tensor, pipeline and context parallel devices that share them), median over the "
             "lines (value) and their spread; per device the median is %.10g tokens/s",
             o->devices, g.value / D);
    if (push_row(im, c, &lv, &g))
        goto out;

    flops = tb_flops_train(o->arch, B, T);
    for (size_t i = 1; i < nw; i++)
        x[i - 1] = flops / (B * T / (w[i].tps * D)) / 1e9;
    fig_init(&g, "gflop_per_s");
    spread_fig(&g, x, nw - 1);
    snprintf(g.notes, sizeof g.notes,
             "converted: trnbench's FLOPs of a training step of %s at this shape (%.6g, "
             "tb_flops.h) / the step time; TorchTitan's own tflops (its num_flops_per_token, "
             "per device) is not used",
             o->arch->name, flops);
    if (push_row(im, c, &lv, &g))
        goto out;

    fig_init(&g, "loss");
    g.value = w[nw - 1].loss;
    g.n = 1;
    snprintf(g.notes, sizeof g.notes,
             "TorchTitan's loss of step %ld (line %ld), the last logged: global_avg_loss, the "
             "cross-entropy over all valid tokens of all ranks",
             w[nw - 1].step, w[nw - 1].line);
    if (push_row(im, c, &lv, &g))
        goto out;

    mfu_titan = NAN;
    {
        size_t k = 0;
        for (size_t i = 1; i < nw; i++)
            if (!isnan(w[i].mfu_pct))
                x[k++] = w[i].mfu_pct;
        if (k) {
            struct fig m;
            fig_init(&m, "mfu");
            spread_fig(&m, x, k);
            mfu_titan = m.value;
        }
    }
    mfu_chips = o->chips > 0 ? o->chips : o->target_chips;
    if (o->chip_peak_tflops > 0 && mfu_chips > 0) {
        fig_init(&g, "mfu");
        g.value = flops / step_med / (mfu_chips * o->chip_peak_tflops * 1e12);
        g.n = (long)(nw - 1);
        char theirs[64];
        if (isnan(mfu_titan))
            snprintf(theirs, sizeof theirs, "N/A (quantized)");
        else
            snprintf(theirs, sizeof theirs, "median %.4g%%", mfu_titan);
        snprintf(g.notes, sizeof g.notes,
                 "converted: trnbench's model FLOPs of a step / (median step time x %d chip%s "
                 "x %.1f TFLOP/s, the %s's %s peak in pricing/chips.csv)%s; TorchTitan's own "
                 "mfu, %s, counts its FLOPs per token against its peak per device "
                 "(torchtitan/tools/utils.py get_peak_flops): not trnbench's",
                 mfu_chips, mfu_chips == 1 ? "" : "s", o->chip_peak_tflops,
                 o->chip_name ? o->chip_name : "target's chip", c->precision,
                 o->chips > 0 ? "" : " (every chip of the target: --chips not given)", theirs);
        if (push_row(im, c, &lv, &g))
            goto out;
    } else {
        skip_note(im,
                  "mfu: TorchTitan's mfu (median %.4g%%) counts its own FLOPs per token "
                  "against its own peak per device, not trnbench's definition; trnbench's "
                  "needs the chip's peak: give --target (and --chips when the run used "
                  "fewer than all)",
                  isnan(mfu_titan) ? 0.0 : mfu_titan);
    }
    skip_note(im, "memory: TorchTitan's peak reserved memory of one device (its allocator's), "
                  "not trnbench's device_mem_gib");
    skip_note(im, "tflops: TorchTitan's FLOPs per token (its model's count) per device; "
                  "gflop_per_s counts trnbench's");
    skip_note(im, "grad_norm: not a metric trnbench records");
    rc = 0;
out:
    free(w);
    free(x);
    return rc;
}

/* ---- one file ---- */

/* When the file says it was measured: vLLM's "date" (YYYYMMDD-HHMMSS, the measuring
 * machine's local time, no zone), LLMPerf's "timestamp" (Unix seconds). */
static int file_time(struct ictx *c, const json_t *root)
{
    char d[64];
    double t;
    c->timestamp[0] = c->date[0] = '\0';
    if (c->f == TB_IMPORT_VLLM) {
        int Y = 0, M = 0, D = 0, h = 0, m = 0, s = 0, n = 0;
        char day[16];
        if (str(c, root, "date", d, sizeof d) < 0)
            return -1;
        if (!d[0])
            return 0;
        if (sscanf(d, "%4d%2d%2d-%2d%2d%2d%n", &Y, &M, &D, &h, &m, &s, &n) != 6 || d[n] || h > 23 ||
            m > 59 || s > 60)
            Y = 0; /* fails the date check below */
        snprintf(day, sizeof day, "%04d-%02d-%02d", Y, M, D);
        if (!Y || !tb_import_check_date(day))
            return tb_err(c->err, c->errlen,
                          "%s: field 'date': not vLLM's YYYYMMDD-HHMMSS: \"%.40s\"", c->path, d);
        snprintf(c->timestamp, sizeof c->timestamp, "%sT%02d:%02d:%02d", day, h, m, s);
        snprintf(c->date, sizeof c->date, "%s (the measuring machine's local time)", day);
    } else if (c->f == TB_IMPORT_LLMPERF || c->f == TB_IMPORT_LLMPERF_UPSTREAM) {
        static const struct range R_UNIX = {0, 4102444800.0, true, true, "s"}; /* 2100 */
        struct tm tm;
        time_t tt;
        int r = num(c, root, NULL, "timestamp", false, &R_UNIX, &t);
        if (r <= 0)
            return r;
        tt = (time_t)t;
        gmtime_r(&tt, &tm);
        strftime(c->timestamp, sizeof c->timestamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(c->date, sizeof c->date, "%.10s", c->timestamp);
    }
    return 0;
}

int tb_import_file(struct tb_import *im, const char *path, enum tb_import_format f,
                   const struct tb_import_opts *o, char *err, size_t errlen)
{
    struct ictx c;
    json_t *root = NULL;
    char version[64] = "", *text = NULL;
    size_t len = 0;
    int rc = -1;

    memset(im, 0, sizeof *im);
    im->format = f;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.o = o;
    c.f = f;
    c.err = err;
    c.errlen = errlen;
    if ((unsigned)f >= TB_IMPORT_NFORMATS)
        return tb_err(err, errlen, "%s: unknown format", path);
    if (f == TB_IMPORT_TORCHTITAN) { /* a text log, not JSON */
        if (tb_read_file(path, &text, &len, err, errlen) != 0)
            return -1;
        snprintf(im->hash, sizeof im->hash, "%016llx", (unsigned long long)fnv1a(text, len));
        titan_time(&c, text, len);
    } else {
        root = load_json(path, im->hash, err, errlen);
        if (!root)
            return -1;
        if (file_time(&c, root) != 0)
            goto out;
    }
    if ((f == TB_IMPORT_LLMPERF || f == TB_IMPORT_LLMPERF_UPSTREAM) &&
        str(&c, root, "version", version, sizeof version) < 0)
        goto out;
    if (o->measured_on) { /* the person importing knows better than a clock with no zone */
        snprintf(c.date, sizeof c.date, "%s", o->measured_on);
        if (!c.timestamp[0])
            snprintf(c.timestamp, sizeof c.timestamp, "%s", o->measured_on);
    }
    snprintf(c.target, sizeof c.target, "%s", o->target ? o->target : "unknown");
    snprintf(c.precision, sizeof c.precision, "%s", o->precision ? o->precision : "bf16");
    if (o->chips > 0)
        snprintf(c.chips, sizeof c.chips, "%d", o->chips);
    snprintf(c.layers, sizeof c.layers, "%d", o->arch->layers);
    snprintf(c.source, sizeof c.source, "%s%s%s%s: %s", FORMAT_TOOLS[f],
             version[0] ? " (results version " : "", version, version[0] ? ")" : "", path);
    snprintf(c.prov, sizeof c.prov,
             "imported: measured by %s on %s with %s; not run by trnbench (imported by "
             "trnbench %s at %s)%s%s",
             o->measured_by ? o->measured_by : "a team not named (--measured-by not given)",
             c.date[0] ? c.date : "a date the file does not record (--measured-on not given)",
             FORMAT_TOOLS[f], tb_version_commit(), o->now ? o->now : "an unrecorded time",
             o->precision ? "" : "; precision bf16 assumed (--precision not given)",
             o->target ? "" : "; target not given: not priced");
    switch (f) {
    case TB_IMPORT_VLLM:
        rc = import_vllm(im, &c, root);
        break;
    case TB_IMPORT_NXDI:
        rc = import_nxdi(im, &c, root);
        break;
    case TB_IMPORT_LLMPERF:
    case TB_IMPORT_LLMPERF_UPSTREAM:
        rc = import_llmperf(im, &c, root);
        break;
    case TB_IMPORT_TORCHTITAN:
        rc = import_torchtitan(im, &c, text, len);
        break;
    }
out:
    json_decref(root);
    free(text);
    if (rc != 0) {
        char keep[17];
        memcpy(keep, im->hash, sizeof keep);
        tb_import_release(im);
        memcpy(im->hash, keep, sizeof keep);
    }
    return rc;
}

void tb_import_release(struct tb_import *im)
{
    for (size_t i = 0; im->strs && i < im->nrows * TB_RESULTS_NCOLS; i++)
        free(im->strs[i]);
    free(im->strs);
    free(im->rows);
    memset(im, 0, sizeof *im);
}

int tb_import_sniff(const char *path, enum tb_import_format *f, char *err, size_t errlen)
{
    char hash[17], *text = NULL;
    size_t len = 0;
    json_t *root;
    int rc = 0;
    /* a text log whose lines have TorchTitan's metrics fields: no JSON to parse */
    if (tb_read_file(path, &text, &len, err, errlen) != 0)
        return -1;
    {
        size_t i = 0;
        while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
            i++;
        /* NUL-terminated (tb_read_file): a NUL inside only shortens the search */
        if (i < len && text[i] != '{' && strstr(text, "step:") && strstr(text, "tps: ") &&
            strstr(text, "mfu: ")) {
            free(text);
            *f = TB_IMPORT_TORCHTITAN;
            return 0;
        }
    }
    free(text);
    root = load_json(path, hash, err, errlen);
    if (!root)
        return -1;
    if (json_object_get(root, "results_ttft_s_quantiles_p50") ||
        json_object_get(root, "results_mean_output_throughput_token_per_s"))
        rc = tb_err(err, errlen,
                    "%s: an LLMPerf summary, but which LLMPerf cannot be told from the file: "
                    "give --format llmperf (Neuron's neuron_perf.patch: inter-token latency "
                    "without TTFT) or --format llmperf-upstream (ray-project's: with TTFT)",
                    path);
    else if (json_object_get(root, "output_throughput") && json_object_get(root, "completed"))
        *f = TB_IMPORT_VLLM;
    else if (json_object_get(root, "e2e_model") ||
             json_object_get(root, "context_encoding_model") ||
             json_object_get(root, "token_generation_model"))
        *f = TB_IMPORT_NXDI;
    else
        rc = tb_err(err, errlen,
                    "%s: not a format trnbench imports (no vLLM, NxD Inference or LLMPerf keys): "
                    "give --format",
                    path);
    json_decref(root);
    return rc;
}
