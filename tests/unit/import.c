/* tests/unit/import.c: `trnbench import`'s readers (tb_import.h) on the fixtures of
 * tests/data/import/ (written from each tool's source, README.md there): every row each
 * format gives, its value, percentiles and spread exactly as the file has them or as the
 * conversion makes them, the shape, load and provenance columns; what is left out and
 * why; the bad inputs each refused with the file and the field named; and the rows read
 * back (tb_results_load) and priced (tb_costs_build) like any measured row. TorchTitan's
 * log (torchtitan): its metrics lines read through colour escapes and torchrun's rank
 * prefix, the figures converted with the shape and devices given, each malformed line
 * refused with its line and field. */
#include "tb_import.h"

#include "tb_cost.h"
#include "tb_flops.h"
#include "tb_pricing.h"
#include "tb_results.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tb_arch arch;

static void opts_init(struct tb_import_opts *o)
{
    memset(o, 0, sizeof *o);
    o->arch = &arch;
    o->now = "2026-11-24T00:00:00Z";
}

/* The row of im with metric m (in phase ph, NULL: any), or NULL. */
static const struct tb_result_row *row_of(const struct tb_import *im, const char *m, const char *ph)
{
    for (size_t i = 0; i < im->nrows; i++)
        if (!strcmp(im->rows[i].col[TB_COL_METRIC], m) &&
            (!ph || !strcmp(im->rows[i].col[TB_COL_PHASE], ph)))
            return &im->rows[i];
    return NULL;
}

static double num_of(const struct tb_result_row *r, int col)
{
    return r && r->col[col] ? strtod(r->col[col], NULL) : NAN;
}

static const char *cell(const struct tb_result_row *r, int col)
{
    return r ? r->col[col] : "(no row)";
}

static bool has(const char *s, const char *sub)
{
    return s && strstr(s, sub) != NULL;
}

/* A latency row: value (p50), p90, p99 and mean as expected (NAN: empty). */
static void check_latency(const struct tb_result_row *r, const char *what, double p50, double p90,
                          double p99, double mean)
{
    IS_DOUBLE(p50, num_of(r, TB_COL_VALUE), 1e-9, "%s: value is the p50", what);
    IS_DOUBLE(p90, num_of(r, TB_COL_P90), 1e-9, "%s: p90", what);
    IS_DOUBLE(p99, num_of(r, TB_COL_P99), 1e-9, "%s: p99", what);
    IS_DOUBLE(mean, num_of(r, TB_COL_MEAN), 1e-9, "%s: mean", what);
}

static void test_names(void)
{
    enum tb_import_format f;
    for (int i = 0; i < TB_IMPORT_NFORMATS; i++)
        OK(tb_import_format_from_string(tb_import_format_to_string(i), &f) == 0 && (int)f == i,
           "format %s reads back", tb_import_format_to_string(i));
    OK(tb_import_format_from_string("tgi", &f) != 0, "an unknown format is refused");
    OK(tb_import_check_date("2026-03-10") && tb_import_check_date("2024-02-29"),
       "real dates are dates");
    OK(!tb_import_check_date("2026-02-29") && !tb_import_check_date("2026-13-01") &&
           !tb_import_check_date("2026-3-10") && !tb_import_check_date("20260310"),
       "a 29 February of a common year, month 13 and other spellings are not");
}

static void test_sniff(void)
{
    enum tb_import_format f = TB_IMPORT_NXDI;
    char err[1024] = "";
    char *v = test_src_path("tests/data/import/vllm-bench-serve.json");
    char *n = test_src_path("tests/data/import/nxdi-benchmark-report.json");
    char *l = test_src_path("tests/data/import/llmperf-summary.json");
    OK(tb_import_sniff(v, &f, err, sizeof err) == 0 && f == TB_IMPORT_VLLM, "a vLLM result %s",
       err);
    OK(tb_import_sniff(n, &f, err, sizeof err) == 0 && f == TB_IMPORT_NXDI,
       "an NxD Inference report %s", err);
    OK(tb_import_sniff(l, &f, err, sizeof err) != 0 && has(err, "llmperf-upstream"),
       "an LLMPerf summary must be named, which LLMPerf made it cannot be told: %s", err);
    free(v);
    free(n);
    free(l);
}

static void test_vllm(void)
{
    struct tb_import im;
    struct tb_import_opts o;
    const struct tb_result_row *r;
    char err[1024] = "";
    char *path = test_src_path("tests/data/import/vllm-bench-serve.json");

    opts_init(&o);
    o.target = "p5.48xlarge";
    o.chips = 1;
    o.measured_by = "Team A";
    IS_INT(0, tb_import_file(&im, path, TB_IMPORT_VLLM, &o, err, sizeof err), "vLLM: read %s", err);
    IS_INT(8, (long long)im.nrows, "vLLM closed loop: 4 latencies, 3 rates, failed requests");
    IS_INT(1, im.nruns, "one run");
    OK(!strncmp(im.runs[0], "import:vllm:", 12) && strlen(im.runs[0]) == 12 + 16,
       "its id: the format and the content's hash (%s)", im.runs[0]);
    r = row_of(&im, "ttft_ms", NULL);
    check_latency(r, "vLLM ttft_ms", 130.25, 190, 260.5, 142.5);
    IS_DOUBLE(40, num_of(r, TB_COL_STDDEV), 1e-9, "vLLM ttft_ms: std_ttft_ms is the stddev");
    IS_STRING("200", cell(r, TB_COL_N), "vLLM ttft_ms: n, the completed requests");
    IS_STRING("ms", cell(r, TB_COL_UNIT), "vLLM ttft_ms: in ms, as vLLM's (nothing converted)");
    check_latency(row_of(&im, "tpot_ms", NULL), "vLLM tpot_ms", 34.75, 38.5, 44, 35.2);
    IS_STRING(NULL, cell(row_of(&im, "tpot_ms", NULL), TB_COL_N),
              "vLLM tpot_ms: n left empty (requests of one token are not counted)");
    check_latency(row_of(&im, "itl_ms", NULL), "vLLM itl_ms", 33.9, 41, 58.25, 35);
    check_latency(row_of(&im, "e2e_latency_ms", NULL), "vLLM e2e_latency_ms", 4550, 5100, 5600,
                  4613.9);
    IS_DOUBLE(400, num_of(row_of(&im, "output_tokens_per_s", NULL), TB_COL_VALUE), 1e-9,
              "vLLM output_tokens_per_s = output_throughput");
    IS_DOUBLE(3600, num_of(row_of(&im, "total_tokens_per_s", NULL), TB_COL_VALUE), 1e-9,
              "vLLM total_tokens_per_s = total_token_throughput");
    IS_DOUBLE(3.125, num_of(row_of(&im, "requests_per_s", NULL), TB_COL_VALUE), 1e-9,
              "vLLM requests_per_s = request_throughput");
    IS_DOUBLE(0, num_of(row_of(&im, "failed_requests", NULL), TB_COL_VALUE), 1e-9,
              "vLLM failed_requests = failed");
    r = row_of(&im, "output_tokens_per_s", NULL);
    IS_STRING("measured", cell(r, TB_COL_PROVENANCE), "provenance measured: real hardware");
    IS_STRING("import", cell(r, TB_COL_EXECUTOR), "executor import: not run by trnbench");
    IS_STRING("p5.48xlarge", cell(r, TB_COL_TARGET), "target as given");
    IS_STRING("1", cell(r, TB_COL_CHIPS_USED), "chips_used as given");
    IS_STRING("16", cell(r, TB_COL_CONCURRENCY), "inf rate, max_concurrency 16: concurrency 16");
    IS_STRING("16", cell(r, TB_COL_BATCH), "and batch 16, the model's twin");
    IS_STRING(NULL, cell(r, TB_COL_REQUEST_RATE), "a closed loop: no request_rate");
    IS_STRING("1024", cell(r, TB_COL_SEQ_IN), "seq_in: total_input_tokens / completed");
    IS_STRING("128", cell(r, TB_COL_SEQ_OUT), "seq_out: total_output_tokens / completed");
    IS_STRING("bf16", cell(r, TB_COL_PRECISION), "precision bf16 when not given");
    IS_STRING("2026-03-15T10:15:00", cell(r, TB_COL_TIMESTAMP), "timestamp from vLLM's date");
    IS_STRING("unknown (imported)", cell(r, TB_COL_HOST), "host: the file does not say");
    IS_STRING("llama-3.1-8b/serve/b16/in1024/out128/bf16/chips1", cell(r, TB_COL_CONFIG),
              "config as the endpoint executor's");
    IS_STRING("llama-3.1-8b/serve/in1024/out128/bf16/chips1", cell(r, TB_COL_WORKLOAD),
              "workload likewise");
    OK(has(cell(r, TB_COL_SOURCE), "vLLM bench serve") &&
           has(cell(r, TB_COL_SOURCE), "vllm-bench-serve.json"),
       "source: the tool and the file (%s)", cell(r, TB_COL_SOURCE));
    static const char opening[] = "imported: measured by Team A on 2026-03-15 (the measuring "
                                  "machine's local time) with vLLM bench serve; not run by "
                                  "trnbench";
    OK(!strncmp(cell(r, TB_COL_NOTES), opening, sizeof opening - 1),
       "notes: who, when, with what, not run by trnbench");
    OK(has(cell(r, TB_COL_NOTES), "precision bf16 assumed"), "and the precision assumed");
    OK(has(im.skipped, "max_concurrent_requests") && has(im.skipped, "max_output_tokens_per_s") &&
           has(im.skipped, "tokens_per_s_per_user") && !has(im.skipped, "request_goodput"),
       "left out, with reasons: the peak figures and per-user rate (goodput is null)");
    OK(!row_of(&im, "achieved_concurrency", NULL) && !row_of(&im, "goodput_requests_per_s", NULL),
       "never relabelled: no achieved_concurrency from the peak, no goodput");
    tb_import_release(&im);
    free(path);

    path = test_src_path("tests/data/import/vllm-rate.json");
    opts_init(&o);
    IS_INT(0, tb_import_file(&im, path, TB_IMPORT_VLLM, &o, err, sizeof err), "vLLM rate: read %s",
           err);
    IS_INT(6, (long long)im.nrows, "vLLM open loop, no e2el, no failed: 6 rows");
    r = row_of(&im, "ttft_ms", NULL);
    check_latency(r, "vLLM rate ttft_ms", 80, NAN, 150, 85);
    IS_STRING("4", cell(r, TB_COL_REQUEST_RATE), "request_rate 4");
    IS_STRING(NULL, cell(r, TB_COL_CONCURRENCY), "no cap: no concurrency");
    IS_STRING(NULL, cell(r, TB_COL_BATCH), "and no batch");
    IS_STRING("llama-3.1-8b/serve/r4/in512/out128/bf16", cell(r, TB_COL_CONFIG), "config r4");
    IS_STRING("unknown", cell(r, TB_COL_TARGET), "no --target: unknown");
    OK(has(cell(r, TB_COL_NOTES), "target not given: not priced"), "and says so");
    OK(has(im.skipped, "median_e2el_ms"), "e2e_latency_ms left out: not in the file");
    tb_import_release(&im);
    free(path);
}

static void test_nxdi(void)
{
    struct tb_import im;
    struct tb_import_opts o;
    const struct tb_result_row *r;
    char err[1024] = "";
    char *path = test_src_path("tests/data/import/nxdi-benchmark-report.json");

    opts_init(&o);
    o.target = "trn1.32xlarge";
    o.chips = 2;
    o.batch = 4;
    o.seq_in = 1024;
    o.seq_out = 256;
    o.measured_on = "2026-03-10";
    o.precision = "bf16";
    IS_INT(0, tb_import_file(&im, path, TB_IMPORT_NXDI, &o, err, sizeof err), "NxDI: read %s", err);
    IS_INT(8, (long long)im.nrows, "NxDI: e2e 4 rows, context encoding 2, token generation 2");
    IS_INT(3, im.nruns, "three runs: serve, prefill, decode");
    r = row_of(&im, "e2e_latency_ms", "serve");
    check_latency(r, "NxDI e2e_latency_ms", 6380, 6450, 6490, 6400);
    IS_DOUBLE(6500, num_of(r, TB_COL_MAX), 1e-9, "NxDI e2e: latency_ms_p100 is the max");
    IS_STRING("4", cell(r, TB_COL_BATCH), "serve at batch 4");
    IS_STRING(NULL, cell(r, TB_COL_CONCURRENCY), "a static batch, not a load generator's");
    IS_STRING("2026-03-10", cell(r, TB_COL_TIMESTAMP), "timestamp: --measured-on");
    IS_STRING("llama-3.1-8b/serve/b4/in1024/out256/bf16/chips2", cell(r, TB_COL_CONFIG), "config");
    /* 800 tokens/s of 1280-token sequences, 256 of them output */
    r = row_of(&im, "output_tokens_per_s", "serve");
    IS_DOUBLE(160, num_of(r, TB_COL_VALUE), 1e-9, "output_tokens_per_s = 800 x 256 / 1280");
    OK(has(cell(r, TB_COL_NOTES), "converted:"), "and its notes say converted");
    IS_DOUBLE(800, num_of(row_of(&im, "total_tokens_per_s", "serve"), TB_COL_VALUE), 1e-9,
              "total_tokens_per_s = NxDI's e2e throughput");
    IS_DOUBLE(0.625, num_of(row_of(&im, "requests_per_s", "serve"), TB_COL_VALUE), 1e-12,
              "requests_per_s = 800 / 1280 (4 requests a 6.4 s call)");
    r = row_of(&im, "ttft_ms", "prefill");
    check_latency(r, "NxDI context encoding ttft_ms", 198, 205, 210, 200);
    IS_STRING("llama-3.1-8b/prefill/b4/in1024/bf16/chips2", cell(r, TB_COL_CONFIG),
              "prefill config as trnbench's engine runs");
    IS_STRING("llama-3.1-8b/prefill/in1024/bf16/chips2", cell(r, TB_COL_WORKLOAD),
              "prefill workload");
    IS_DOUBLE(20480, num_of(row_of(&im, "prefill_tokens_per_s", "prefill"), TB_COL_VALUE), 1e-9,
              "prefill_tokens_per_s = 4 x 1024 / 0.2 s");
    check_latency(row_of(&im, "tpot_ms", "decode"), "NxDI token generation tpot_ms", 23.8, 24.6,
                  25.5, 24);
    r = row_of(&im, "decode_tokens_per_s", "decode");
    IS_DOUBLE(4000.0 / 24.0, num_of(r, TB_COL_VALUE), 1e-6,
              "decode_tokens_per_s = 4 x 1000 / latency_ms_avg, not NxDI's 167.3");
    OK(has(cell(r, TB_COL_NOTES), "converted:"), "converted, and said");
    OK(has(im.skipped, "vision_encoder_model"), "the null vision encoder left out, said");
    OK(!strncmp(cell(r, TB_COL_NOTES), "imported: measured by a team not named", 38),
       "no --measured-by: said so");
    tb_import_release(&im);

    /* the shape must be what NxDI counted: 8 x 1280 tokens a call is not 5120 */
    o.batch = 8;
    OK(tb_import_file(&im, path, TB_IMPORT_NXDI, &o, err, sizeof err) != 0 &&
           has(err, "e2e_model.throughput") && has(err, "nxdi-benchmark-report.json"),
       "a shape the file's throughput contradicts is refused: %s", err);
    IS_INT(0, (long long)im.nrows, "and nothing kept");
    /* a shape with the e2e count right (2 x 2560) but a context encoding of 4 x 1024 tokens
     * an invocation, not 2 x 2304: that latency is not this batch's prefill: left out */
    o.batch = 2;
    o.seq_in = 2304;
    IS_INT(0, tb_import_file(&im, path, TB_IMPORT_NXDI, &o, err, sizeof err),
           "NxDI: a context encoding of another shape %s", err);
    OK(!row_of(&im, "ttft_ms", "prefill") && has(im.skipped, "context_encoding_model"),
       "its TTFT is left out with the reason, not relabelled");
    tb_import_release(&im);
    o.batch = 0;
    OK(tb_import_file(&im, path, TB_IMPORT_NXDI, &o, err, sizeof err) != 0 && has(err, "--batch"),
       "no shape given: refused, asking for --batch, --seq-in, --seq-out");
    free(path);
}

static void test_llmperf(void)
{
    struct tb_import im;
    struct tb_import_opts o;
    const struct tb_result_row *r;
    char err[1024] = "";
    char *path = test_src_path("tests/data/import/llmperf-summary.json");

    opts_init(&o);
    o.target = "inf2.48xlarge";
    IS_INT(0, tb_import_file(&im, path, TB_IMPORT_LLMPERF, &o, err, sizeof err),
           "LLMPerf (Neuron): read %s", err);
    IS_INT(7, (long long)im.nrows, "LLMPerf (Neuron): 3 latencies, 3 rates, failed requests");
    r = row_of(&im, "ttft_ms", NULL);
    check_latency(r, "LLMPerf ttft_ms (s to ms)", 125, 160, 220, 131);
    IS_DOUBLE(95, num_of(r, TB_COL_MIN), 1e-9, "LLMPerf ttft_ms: min");
    IS_DOUBLE(240, num_of(r, TB_COL_MAX), 1e-9, "LLMPerf ttft_ms: max");
    IS_DOUBLE(25, num_of(r, TB_COL_STDDEV), 1e-9, "LLMPerf ttft_ms: stddev");
    OK(has(cell(r, TB_COL_NOTES), "converted: s to ms"), "the unit conversion is said");
    IS_STRING("8", cell(r, TB_COL_CONCURRENCY), "num_concurrent_requests: concurrency 8");
    IS_STRING("1024", cell(r, TB_COL_SEQ_IN), "seq_in: --mean-input-tokens");
    IS_STRING("128", cell(r, TB_COL_SEQ_OUT), "seq_out: --mean-output-tokens");
    IS_STRING("2026-03-15T10:20:00Z", cell(r, TB_COL_TIMESTAMP), "timestamp from Unix seconds");
    OK(has(cell(r, TB_COL_SOURCE), "results version 2023-08-31"),
       "source with LLMPerf's results version");
    r = row_of(&im, "tpot_ms", NULL);
    check_latency(r, "LLMPerf (Neuron) inter-token latency as tpot_ms", 31.5, 34.5, 36.8, 31.8);
    check_latency(row_of(&im, "e2e_latency_ms", NULL), "LLMPerf e2e_latency_ms", 4125, 4300, 4500,
                  4140);
    IS_DOUBLE(240.35, num_of(row_of(&im, "output_tokens_per_s", NULL), TB_COL_VALUE), 1e-9,
              "output_tokens_per_s = results_mean_output_throughput_token_per_s");
    IS_DOUBLE(240.35 + 1024 * 114.0 / 60,
              num_of(row_of(&im, "total_tokens_per_s", NULL), TB_COL_VALUE), 1e-6,
              "total_tokens_per_s = output + mean input tokens x requests/s (2185.95)");
    IS_DOUBLE(1.9, num_of(row_of(&im, "requests_per_s", NULL), TB_COL_VALUE), 1e-12,
              "requests_per_s = 114 per minute / 60");
    IS_STRING("200", cell(row_of(&im, "requests_per_s", NULL), TB_COL_N),
              "n: the requests started");
    OK(!row_of(&im, "itl_ms", NULL) && !row_of(&im, "tokens_per_s_per_user", NULL) &&
           has(im.skipped, "itl_ms") &&
           has(im.skipped, "results_request_output_throughput_token_per_s"),
       "no itl_ms and no per-user rate: different definitions, left out with reasons");
    tb_import_release(&im);

    IS_INT(0, tb_import_file(&im, path, TB_IMPORT_LLMPERF_UPSTREAM, &o, err, sizeof err),
           "LLMPerf (upstream): read %s", err);
    IS_INT(6, (long long)im.nrows, "LLMPerf (upstream): no tpot_ms");
    OK(!row_of(&im, "tpot_ms", NULL) && has(im.skipped, "includes TTFT"),
       "its inter-token latency includes TTFT: left out, never relabelled TPOT");
    OK(!strncmp(im.runs[0], "import:llmperf:", 15),
       "one run-id family for both LLMPerf flavours (a summary imports once)");
    tb_import_release(&im);
    free(path);
}

/* Write text to the scratch file name; returns its path (malloc'ed). */
static char *scratch(const char *name, const char *text)
{
    char *p = test_tmp_path(name), err[512];
    if (tb_write_file_atomic(p, text, strlen(text), err, sizeof err) != 0)
        bail("%s", err);
    return p;
}

/* One bad input: refused, with the file and the field named. */
static void refused(const char *name, const char *text, enum tb_import_format f, const char *field,
                    const char *why)
{
    struct tb_import im;
    struct tb_import_opts o;
    char err[1024] = "", *p = scratch(name, text);
    opts_init(&o);
    o.batch = 4;
    o.seq_in = 1024;
    o.seq_out = 256;
    OK(tb_import_file(&im, p, f, &o, err, sizeof err) != 0 && has(err, name) && has(err, field) &&
           has(err, why) && im.nrows == 0,
       "%s: refused naming '%s' and '%s': %s", name, field, why, err);
    free(p);
}

static void test_bad(void)
{
    static const char vllm_ok[] =
        "{\"completed\": 10, \"total_input_tokens\": 1000, \"total_output_tokens\": 500,"
        " \"duration\": 5.0, \"request_throughput\": 2.0, \"output_throughput\": 100.0,"
        " \"total_token_throughput\": 300.0, \"request_rate\": \"inf\", \"max_concurrency\": 2,"
        " \"median_ttft_ms\": 12.5}";
    char text[1024];
    struct tb_import im;
    struct tb_import_opts o;
    char err[1024] = "", *p;

    p = scratch("import-ok.json", vllm_ok);
    opts_init(&o);
    IS_INT(0, tb_import_file(&im, p, TB_IMPORT_VLLM, &o, err, sizeof err),
           "the smallest vLLM result reads %s", err);
    IS_INT(4, (long long)im.nrows, "ttft and three rates");
    tb_import_release(&im);
    free(p);

    snprintf(text, sizeof text, "%.*s", (int)(strchr(vllm_ok, '5') - vllm_ok + 2), vllm_ok);
    refused("import-truncated.json", text, TB_IMPORT_VLLM, "after field 'total_output_tokens'",
            "not valid JSON");
    refused("import-string.json",
            "{\"completed\": 10, \"total_input_tokens\": 1000, \"total_output_tokens\": 500,"
            " \"duration\": 5.0, \"request_throughput\": 2.0, \"output_throughput\": \"100.0\"}",
            TB_IMPORT_VLLM, "'output_throughput'", "not a number: a string");
    refused("import-missing.json",
            "{\"total_input_tokens\": 1000, \"total_output_tokens\": 500, \"duration\": 5.0}",
            TB_IMPORT_VLLM, "'completed'", "missing");
    refused("import-nan.json",
            "{\"completed\": 10,\n \"median_ttft_ms\": NaN,\n \"duration\": 5.0}", TB_IMPORT_VLLM,
            "'median_ttft_ms'", "NaN");
    snprintf(text, sizeof text, "%s", vllm_ok);
    memcpy(strstr(text, "12.5"), "-1.5", 4);
    refused("import-negative.json", text, TB_IMPORT_VLLM, "'median_ttft_ms'", "negative");
    snprintf(text, sizeof text, "%s", vllm_ok);
    memcpy(strstr(text, "100.0"), "900.0", 5);
    refused("import-inconsistent.json", text, TB_IMPORT_VLLM, "'output_throughput'",
            "total_output_tokens / duration");
    refused("import-nxdi-null.json",
            "{\"e2e_model\": {\"latency_ms_p50\": null, \"latency_ms_p90\": 2, \"latency_ms_p95\":"
            " 3, \"latency_ms_p99\": 4, \"latency_ms_p100\": 5, \"latency_ms_avg\": 2,"
            " \"throughput\": 1}}",
            TB_IMPORT_NXDI, "'e2e_model.latency_ms_p50'", "not a number: null");
    refused("import-nxdi-absurd.json",
            "{\"token_generation_model\": {\"latency_ms_p50\": 20, \"latency_ms_p90\": 21,"
            " \"latency_ms_p95\": 22, \"latency_ms_p99\": 1e12, \"latency_ms_p100\": 2e12,"
            " \"latency_ms_avg\": 20, \"throughput\": 100}}",
            TB_IMPORT_NXDI, "'token_generation_model.latency_ms_p99'", "absurd");
    refused("import-llmperf-order.json",
            "{\"results_num_completed_requests\": 10,"
            " \"results_mean_output_throughput_token_per_s\": 50,"
            " \"results_num_completed_requests_per_min\": 60, \"num_concurrent_requests\": 1,"
            " \"mean_input_tokens\": 100, \"mean_output_tokens\": 50,"
            " \"results_ttft_s_quantiles_p50\": 0.5, \"results_ttft_s_quantiles_p90\": 0.2}",
            TB_IMPORT_LLMPERF, "'results_ttft_s_quantiles_p90'", "not a distribution");
    refused("import-array.json", "[1, 2, 3]", TB_IMPORT_VLLM, "import-array.json",
            "not a JSON object");
}

/* The rows read back as results and priced like any measured row: a GPU of a
 * p5.48xlarge charged 1/8 of its hour. */
/* ---- TorchTitan's training log ---- */

static void titan_opts(struct tb_import_opts *o, bool priced)
{
    opts_init(o);
    o->batch = 64;
    o->seq_in = 8192;
    o->devices = 64; /* a trn2.48xlarge: 16 Trainium2 x 4 logical NeuronCores */
    if (priced) {
        o->target = "trn2.48xlarge";
        o->target_chips = 16;
        o->chip_peak_tflops = 667;
        o->chip_name = "Trainium2";
    }
}

/* A log of TorchTitan's metrics lines without colour (metrics.disable_color_printing),
 * its steps as given, each "step: S  loss: L  ...  tps: TPS  ...  mfu: M". */
static const char TITAN_PLAIN[] =
    "[titan] 2026-09-20 17:00:00,001 - root - INFO - Training starts at step 1\n"
    "[titan] 2026-09-20 17:02:00,001 - root - INFO - step:  1  loss: 12.00000  grad_norm: "
    " 9.0000  memory: 20.00GiB(83.33%)  tps: 100  tflops: 2.58  mfu: 1.63%\n"
    "[titan] 2026-09-20 17:02:40,001 - root - INFO - step: 10  loss:  9.50000  grad_norm: "
    " 3.0000  memory: 20.00GiB(83.33%)  tps: 1,024  tflops: 26.40  mfu: 16.71%\n"
    "[titan] 2026-09-20 17:03:20,001 - root - INFO - step: 20  loss:  8.25000  grad_norm: "
    " 2.0000  memory: 20.00GiB(83.33%)  tps: 1,024  tflops: 26.40  mfu: 16.71%\n";

static void titan_refused(const char *name, const char *from, const char *to, const char *field,
                          const char *why)
{
    struct tb_import im;
    struct tb_import_opts o;
    char text[2048], err[1024] = "", *p;
    const char *at = strstr(TITAN_PLAIN, from);
    if (!at)
        bail("'%s' is not in the log", from);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - TITAN_PLAIN), TITAN_PLAIN, to,
             at + strlen(from));
    p = scratch(name, text);
    titan_opts(&o, false);
    OK(tb_import_file(&im, p, TB_IMPORT_TORCHTITAN, &o, err, sizeof err) != 0 && has(err, name) &&
           has(err, field) && has(err, why) && im.nrows == 0,
       "%s: refused naming '%s' and '%s': %s", name, field, why, err);
    tb_import_release(&im);
    free(p);
}

static void test_torchtitan(void)
{
    struct tb_import im;
    struct tb_import_opts o;
    const struct tb_result_row *r;
    enum tb_import_format f = TB_IMPORT_VLLM;
    char err[1024] = "", *p = test_src_path("tests/data/import/torchtitan-trn2.log"), *q;
    const double flops = tb_flops_train(&arch, 64, 8192);
    const double steps[3] = {64.0 * 8192 / (2048.0 * 64), 64.0 * 8192 / (2000.0 * 64),
                             64.0 * 8192 / (2100.0 * 64)};
    double mean = (steps[0] + steps[1] + steps[2]) / 3;

    OK(tb_import_sniff(p, &f, err, sizeof err) == 0 && f == TB_IMPORT_TORCHTITAN,
       "a TorchTitan log is told by its lines (%s)", err);
    titan_opts(&o, true);
    OK(tb_import_file(&im, p, TB_IMPORT_TORCHTITAN, &o, err, sizeof err) == 0,
       "the TorchTitan log (colour escapes, torchrun's [rank0]: prefix) imported: %s", err);
    IS_INT(5, (int)im.nrows, "  5 rows: step_time_s, train_tokens_per_s, gflop_per_s, loss, mfu");
    r = row_of(&im, "step_time_s", NULL);
    IS_DOUBLE(4.0, num_of(r, TB_COL_VALUE), 1e-12,
              "  step_time_s: the median window, 64 x 8192 / (2,048 tps x 64 devices)");
    IS_DOUBLE(steps[2], num_of(r, TB_COL_MIN), 1e-9, "  its min: the window at 2,100 tps");
    IS_DOUBLE(steps[1], num_of(r, TB_COL_MAX), 1e-9, "  its max: the window at 2,000 tps");
    IS_DOUBLE(mean, num_of(r, TB_COL_MEAN), 1e-9, "  its mean");
    IS_STRING("3", cell(r, TB_COL_N), "  n: the 3 windows after the first (step 1 left out)");
    IS_STRING("train", cell(r, TB_COL_PHASE), "  phase train");
    IS_STRING("64", cell(r, TB_COL_BATCH), "  batch: the global batch given");
    IS_STRING("8192", cell(r, TB_COL_SEQ_IN), "  seq_in: the seq_len given");
    IS_STRING("measured", cell(r, TB_COL_PROVENANCE), "  provenance measured");
    IS_STRING("trn2.48xlarge", cell(r, TB_COL_TARGET), "  the target given");
    OK(has(cell(r, TB_COL_RUN_ID), "import:torchtitan:"), "  run id %s", cell(r, TB_COL_RUN_ID));
    IS_STRING("2026-09-14T09:12:01", cell(r, TB_COL_TIMESTAMP), "  timestamp: the log's clock");
    OK(has(cell(r, TB_COL_NOTES), "measured by a team not named (--measured-by not given) on "
                                  "2026-09-14 (the log's clock") &&
           has(cell(r, TB_COL_NOTES), "tokens per second per device"),
       "  notes: when, by whom, and what tps is: %s", cell(r, TB_COL_NOTES));
    r = row_of(&im, "train_tokens_per_s", NULL);
    IS_DOUBLE(2048.0 * 64, num_of(r, TB_COL_VALUE), 1e-9, "  train_tokens_per_s: tps x 64");
    r = row_of(&im, "gflop_per_s", NULL);
    IS_DOUBLE(flops / 4.0 / 1e9, num_of(r, TB_COL_VALUE), 1e-3,
              "  gflop_per_s: trnbench's FLOPs of the step / 4 s");
    r = row_of(&im, "loss", NULL);
    IS_DOUBLE(7.8321, num_of(r, TB_COL_VALUE), 1e-12, "  loss: the last metrics line's (step 30)");
    r = row_of(&im, "mfu", NULL);
    IS_DOUBLE(flops / 4.0 / (16 * 667e12), num_of(r, TB_COL_VALUE), 1e-9,
              "  mfu: trnbench's, over 16 Trainium2 chips at 667 TFLOP/s");
    OK(has(cell(r, TB_COL_NOTES), "TorchTitan's own mfu, median 33.41%"),
       "  TorchTitan's own mfu only in the notes: %s", cell(r, TB_COL_NOTES));
    OK(has(im.skipped, "memory:") && has(im.skipped, "tflops:") && has(im.skipped, "grad_norm:"),
       "  memory, tflops and grad_norm left out, said: %s", im.skipped);
    tb_import_release(&im);

    titan_opts(&o, false);
    OK(tb_import_file(&im, p, TB_IMPORT_TORCHTITAN, &o, err, sizeof err) == 0 && im.nrows == 4 &&
           !row_of(&im, "mfu", NULL) && has(im.skipped, "mfu: TorchTitan's mfu (median 33.41%)"),
       "no target: 4 rows, mfu left out and why (%s)", err);
    tb_import_release(&im);

    q = scratch("titan-plain.log", TITAN_PLAIN);
    titan_opts(&o, false);
    OK(tb_import_file(&im, q, TB_IMPORT_TORCHTITAN, &o, err, sizeof err) == 0,
       "a log without colour, no rank prefix: imported (%s)", err);
    r = row_of(&im, "step_time_s", NULL);
    IS_DOUBLE(64.0 * 8192 / (1024.0 * 64), num_of(r, TB_COL_VALUE), 1e-12,
              "  step_time_s from tps 1,024");
    IS_STRING("2", cell(r, TB_COL_N), "  2 windows after the first");
    tb_import_release(&im);
    free(q);

    titan_refused("titan-tps.log",
                  "tps: 1,024  tflops: 26.40  mfu: 16.71%\n[titan] 2026-09-20 17:03",
                  "tps: 1,02  tflops: 26.40  mfu: 16.71%\n[titan] 2026-09-20 17:03",
                  "line 3: field 'tps'", "thousands commas");
    titan_refused("titan-loss.log", "loss:  9.50000", "loss: nan", "line 3: field 'loss'",
                  "not a finite loss");
    titan_refused("titan-mfu.log", "mfu: 16.71%\n[titan] 2026-09-20 17:03",
                  "\n[titan] 2026-09-20 17:03", "line 3: field 'mfu'", "missing");
    titan_refused("titan-pct.log", "mfu: 1.63%", "mfu: 163%", "line 2: field 'mfu'",
                  "percentage from 0 to 100");
    titan_refused("titan-back.log", "step: 20", "step:  5", "line 4: field 'step'",
                  "5 after step 10");
    {
        char *one = scratch("titan-one.log",
                            "[titan] 2026-09-20 17:02:00,001 - root - INFO - step:  1  loss: "
                            "12.00000  memory: 20.00GiB(83.33%)  tps: 100  mfu: 1.63%\n");
        titan_opts(&o, false);
        OK(tb_import_file(&im, one, TB_IMPORT_TORCHTITAN, &o, err, sizeof err) != 0 &&
               has(err, "titan-one.log: only one metrics line") && im.nrows == 0,
           "a log of the first window only: refused (%s)", err);
        tb_import_release(&im);
        free(one);
    }
    titan_refused("titan-mem.log", "memory: 20.00GiB(83.33%)  tps: 100", "memory: 20.00 tps: 100",
                  "line 2: field 'memory'", "not GIB(PCT%)");
    free(p);
}

static void test_results_and_cost(void)
{
    struct tb_import im;
    struct tb_import_opts o;
    struct tb_results res;
    struct tb_pricing pr;
    struct tb_costs cs;
    struct tb_cost_opts co;
    const struct tb_cost *c = NULL;
    char err[1024] = "";
    char *path = test_src_path("tests/data/import/vllm-bench-serve.json");
    char *out = test_tmp_path("import-results.csv");
    char *pdir = test_src_path("pricing");
    const char *files[1] = {out};

    remove(out);
    opts_init(&o);
    o.target = "p5.48xlarge";
    o.chips = 1;
    if (tb_import_file(&im, path, TB_IMPORT_VLLM, &o, err, sizeof err) != 0 ||
        tb_results_append(out, im.rows, im.nrows, err, sizeof err) != 0)
        bail("%s", err);
    tb_import_release(&im);
    IS_INT(0, tb_results_load(&res, files, 1, err, sizeof err), "the rows read back %s", err);
    IS_INT(8, (long long)res.nprov[TB_PROV_MEASURED], "8 measured rows");
    if (tb_pricing_load(&pr, pdir, err, sizeof err) != 0)
        bail("%s", err);
    memset(&co, 0, sizeof co);
    co.usd_per_hour = NAN;
    co.baseline = "p5.48xlarge";
    co.max_price_age_days = 180;
    co.train_tokens = 1e12;
    co.now = "2026-11-24T00:00:00Z";
    IS_INT(0, tb_costs_build(&cs, &res, &pr, &co, err, sizeof err), "priced %s", err);
    for (size_t i = 0; i < cs.ncosts; i++)
        if (!strcmp(cs.costs[i].metric, "usd_per_mtok_out"))
            c = &cs.costs[i];
    OK(c && c->price->c.have, "the output rate has a price");
    if (c && c->price->c.have)
        IS_REL(c->price->c.usd_per_hour / 8 / (400.0 * 3600) * 1e6, c->usd, 1e-9,
               "usd_per_mtok_out: one of 8 GPUs' share of the hour / (400 tokens/s x 3600)");
    else
        skip("no price");
    tb_costs_release(&cs);
    tb_pricing_release(&pr);
    tb_results_release(&res);
    free(path);
    free(out);
    free(pdir);
}

int main(void)
{
    char err[512];
    setenv("TRNBENCH_DATADIR", getenv("TB_SRCDIR") ? getenv("TB_SRCDIR") : ".", 1);
    if (tb_arch_find(&arch, "llama-3.1-8b", err, sizeof err) != 0)
        bail("%s", err);
    plan_lazy();
    test_names();
    test_sniff();
    test_vllm();
    test_nxdi();
    test_llmperf();
    test_bad();
    test_torchtitan();
    test_results_and_cost();
    return 0;
}
